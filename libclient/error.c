// SPDX-License-Identifier: MIT
/*
 * The library's error sentence: a per-thread buffer ibc_set_error() fills
 * and ibc_last_error(3) returns, and the caller-size check of versioned
 * structures. The library never logs; this is how it explains a failure.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "libclient/client.h"

/* initial-exec: no __tls_get_addr call on every request; 256 bytes fit in
 * the static TLS surplus even when the library is dlopen()ed. */
static __thread char ibc_error_text[256]
	__attribute__((tls_model("initial-exec")));

int ibc_set_error(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ibc_error_text, sizeof(ibc_error_text), fmt, ap);
	va_end(ap);
	return err;
}

void ibc_clear_error(void)
{
	ibc_error_text[0] = '\0';
}

IBC_EXPORT const char *ibc_last_error(void)
{
	return ibc_error_text;
}

int ibc_check_size(const char *name, size_t size, size_t min)
{
	if (size >= min)
		return 0;
	return ibc_set_error(-EINVAL,
			     "struct %s of %zu bytes is smaller than its first "
			     "version (%zu bytes): pass sizeof the structure",
			     name, size, min);
}
