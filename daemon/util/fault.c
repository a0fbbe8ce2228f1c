// SPDX-License-Identifier: MIT
/* Test-only fault points (fault.h). */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/util/fault.h"
#include "daemon/util/log.h"

#ifdef RDMAB_FAULT_POINTS

static struct {
	bool read;
	/* The armed point, empty for none. */
	char name[64];
	unsigned long left;
} fault;

/* RDMABROKERD_FAULT, once: a malformed one arms nothing, said once. */
static void fault_read(void)
{
	const char *env = getenv(FAULT_ENV), *at;
	size_t len;
	char *end;

	fault.read = true;
	if (!env || !*env)
		return;
	at = strchr(env, '@');
	len = at ? (size_t)(at - env) : strlen(env);
	fault.left = 1;
	if (at) {
		errno = 0;
		fault.left = strtoul(at + 1, &end, 10);
		if (errno || *end || end == at + 1 || !fault.left)
			len = 0;
	}
	if (!len || len >= sizeof(fault.name)) {
		log_msg(LOG_WARNING, "%s is not <point>[@<n>]: no fault armed",
			FAULT_ENV);
		return;
	}
	memcpy(fault.name, env, len);
	fault.name[len] = '\0';
	log_msg(LOG_NOTICE, "fault point %s armed (pass %lu; a test build)",
		fault.name, fault.left);
}

void fault_point(const char *name)
{
	if (!fault.read)
		fault_read();
	if (!*fault.name || strcmp(name, fault.name) != 0 || --fault.left)
		return;
	log_msg(LOG_NOTICE, "fault point %s: SIGKILL", name);
	raise(SIGKILL);
}

#endif
