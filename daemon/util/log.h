/* SPDX-License-Identifier: MIT */
/*
 * Logging for the daemon only (libraries never log): one line per call,
 * with a journald priority, client bytes escaped, and rate limits for
 * what a client can trigger repeatedly.
 */
#ifndef RDMAB_LOG_H
#define RDMAB_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <syslog.h>

#include "common/text/text.h"

/* Messages at or below this syslog priority are written; LOG_INFO by
 * default. */
extern int log_max_priority;

/* Parse "err", "warning", "notice", "info", "debug" or 0-7; -EINVAL. */
int log_parse_level(const char *s);

/* One line on stderr with a "<N>" prefix that journald turns into the
 * priority. A control character that reaches it anyway (a newline would
 * start a line of its own, with a priority of its choosing) becomes '?'. */
void log_msg(int priority, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Room for log_escape() of a char array @field. */
#define LOG_ESCAPED_SIZE(field) TEXT_ESCAPED_SIZE(sizeof(field))

/*
 * Bytes that came from a client (its process name, library version, the
 * names it asked for) as they go into a log line: text_escape()
 * (common/text/text.h) into @buf of @size bytes; returns @buf. Every log site
 * that prints such bytes passes them through this.
 */
const char *log_escape(char *buf, size_t size, const char *s);

/*
 * A message that a client or a saturated system can make the daemon repeat:
 * the first goes out, the next ones within @interval_ms are only counted,
 * and the first after that says how many were left out.
 */
struct log_ratelimit {
	unsigned int interval_ms;
	int64_t next_ms;
	unsigned int suppressed;
};

/* True when the caller may log now; then *ret_suppressed is how many were
 * held back since the last message, and the count restarts. */
bool log_ratelimit(struct log_ratelimit *rl, unsigned int *ret_suppressed);

#define log_crit(...) log_msg(LOG_CRIT, __VA_ARGS__)
#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
