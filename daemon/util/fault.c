// SPDX-License-Identifier: MIT
/* Test-only fault points (fault.h). */
#include "config.h"

#include <ctype.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/util/fault.h"
#include "common/text/text.h"
#include "daemon/util/log.h"

#ifdef RDMAB_FAULT_POINTS

static struct {
	bool read;
	/* The armed point, empty for none. */
	char name[64];
	unsigned long left;
} fault;

/* A positive decimal, digits only (strtoul alone takes " 2" and "-1",
 * the latter as ULONG_MAX: a point that never fires). */
static bool fault_count(const char *s, unsigned long *ret)
{
	unsigned long n = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s) || n > (ULONG_MAX - 9) / 10)
			return false;
		n = n * 10 + (unsigned long)(*s - '0');
	}
	if (!n)
		return false;
	*ret = n;
	return true;
}

/* RDMABROKERD_FAULT, once: a malformed one arms nothing, said with the
 * value. A name is what fault_point() callers use: lower case, digits,
 * '-' and '_'. */
static void fault_read(void)
{
	const char *env = getenv(FAULT_ENV), *at;
	char shown[TEXT_ESCAPED_SIZE(64)];
	size_t len;
	bool ok;

	fault.read = true;
	if (!env || !*env) {
		log_notice("a test build: fault points compiled in, none armed "
			   "(%s unset)",
			   FAULT_ENV);
		return;
	}
	at = strchr(env, '@');
	len = at ? (size_t)(at - env) : strlen(env);
	fault.left = 1;
	ok = len && len < sizeof(fault.name) &&
	     (!at || fault_count(at + 1, &fault.left));
	for (size_t i = 0; ok && i < len; i++)
		ok = islower((unsigned char)env[i]) ||
		     isdigit((unsigned char)env[i]) || env[i] == '-' ||
		     env[i] == '_';
	if (!ok) {
		text_escape_n(shown, sizeof(shown), env,
			      strnlen(env, sizeof(fault.name)));
		log_warn("%s=\"%s\" is not <point>[@<n>] (a point's name, n a "
			 "positive decimal): no fault armed",
			 FAULT_ENV, shown);
		return;
	}
	memcpy(fault.name, env, len);
	fault.name[len] = '\0';
	log_notice("a test build: fault point %s armed (pass %lu)", fault.name,
		   fault.left);
}

void fault_init(void)
{
	if (!fault.read)
		fault_read();
}

void fault_point(const char *name)
{
	if (!fault.read)
		fault_read();
	if (!*fault.name || strcmp(name, fault.name) != 0 || --fault.left)
		return;
	log_notice("fault point %s: SIGKILL", name);
	raise(SIGKILL);
}

#endif
