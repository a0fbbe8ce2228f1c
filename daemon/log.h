/* SPDX-License-Identifier: MIT */
#ifndef RDMAB_LOG_H
#define RDMAB_LOG_H

#include <syslog.h>

/* Messages at or below this syslog priority are written; LOG_INFO by
 * default. */
extern int log_max_priority;

/* Parse "err", "warning", "notice", "info", "debug" or 0-7; -EINVAL. */
int log_parse_level(const char *s);

/* One line on stderr with a "<N>" prefix that journald turns into the
 * priority. */
void log_msg(int priority, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
