// SPDX-License-Identifier: MIT
/*
 * The counters the daemon bumps for metrics (metrics.h), the texts'
 * references and the label escaping: nothing of the daemon's state.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/text/text.h"
#include "daemon/server/metrics.h"

struct metrics *metrics_new(void)
{
	struct metrics *m = calloc(1, sizeof(*m));

	if (m)
		m->start_time = (int64_t)time(NULL);
	return m;
}

void metrics_snap_drop(struct metrics *m, unsigned int i)
{
	metrics_text_put(m->snaps[i].t);
	m->snaps[i] = m->snaps[--m->n_snaps];
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	while (m->n_snaps)
		metrics_snap_drop(m, 0);
	free(m->snaps);
	metrics_text_put(m->cache);
	free(m);
}

void metrics_text_put(struct metrics_text *t)
{
	if (t && --t->refs == 0)
		free(t);
}

uint64_t metrics_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void metrics_request_other(struct metrics *m, unsigned int body_case,
			   bool known, int err)
{
	struct metrics_req_counts *rc;
	unsigned int i;

	if (!m)
		return;
	/* Case 0 is no body: what no handler knows counts there. */
	rc = &m->requests[known && body_case < METRICS_TYPES ? body_case : 0];
	if (!err) {
		rc->n[0]++;
		return;
	}
	for (i = 0; i < METRICS_ERRS; i++) {
		if (!rc->errs[i])
			rc->errs[i] = (uint16_t)-err;
		if (rc->errs[i] == -err)
			break;
	}
	rc->n[i + 1]++;
}

void metrics_undecodable(struct metrics *m)
{
	if (m)
		m->undecodable++;
}

const char *metrics_label(char *buf, size_t size, const char *raw)
{
	char shown[TEXT_ESCAPED_SIZE(256)];
	size_t o = 0;

	text_escape(shown, sizeof(shown), raw);
	for (const char *s = shown; *s; s++) {
		/* text_escape() left no newline: it is a control. */
		size_t need = *s == '\\' || *s == '"' ? 2 : 1;

		if (o + need >= size)
			break;
		if (need == 2)
			buf[o++] = '\\';
		buf[o++] = *s;
	}
	buf[o] = '\0';
	return buf;
}
