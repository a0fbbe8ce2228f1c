// SPDX-License-Identifier: MIT
/*
 * The daemon's one log writer (log.h): levels, the journald priority
 * prefix, escaping of what a client sent, and rate limits. Everything that
 * logs goes through it, so no client byte reaches a log line raw.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "daemon/util/log.h"

int log_max_priority = LOG_INFO;

static const char *const log_names[] = {
	"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug",
};

int log_parse_level(const char *s)
{
	char *end;
	long v;

	for (int i = 0; i < 8; i++)
		if (strcasecmp(s, log_names[i]) == 0)
			return i;
	if (strcasecmp(s, "error") == 0)
		return LOG_ERR;
	if (strcasecmp(s, "warn") == 0)
		return LOG_WARNING;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > 7)
		return -EINVAL;
	return (int)v;
}

const char *log_escape(char *buf, size_t size, const char *s)
{
	return text_escape(buf, size, s);
}

void log_msg(int priority, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	if (priority > log_max_priority)
		return;
	n = snprintf(line, sizeof(line), "<%d>", priority);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* A control character gets here only from a site that forgot
	 * log_escape(): the line stays one line, with its own priority. */
	for (char *p = line; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	/* One write per line, so that lines of concurrent writers (tests
	 * share stderr) are never interleaved. */
	fprintf(stderr, "%s\n", line);
}

bool log_ratelimit(struct log_ratelimit *rl, unsigned int *ret_suppressed)
{
	struct timespec ts;
	int64_t now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	if (rl->next_ms && now < rl->next_ms) {
		rl->suppressed++;
		return false;
	}
	rl->next_ms = now + rl->interval_ms;
	*ret_suppressed = rl->suppressed;
	rl->suppressed = 0;
	return true;
}
