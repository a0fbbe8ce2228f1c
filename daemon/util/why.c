// SPDX-License-Identifier: MIT
/* struct why (why.h): a failure's errno and sentence. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "daemon/util/why.h"

int why_set(struct why *why, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why->text, sizeof(why->text), fmt, ap);
	va_end(ap);
	why->err = err;
	return err;
}
