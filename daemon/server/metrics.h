/* SPDX-License-Identifier: MIT */
/*
 * Metrics (issue 26 item 4): the Prometheus text exposition (format 0.0.4)
 * of what the broker knows, per domain and device, never per client, so
 * that the number of series stays bounded by what the operator configures
 * and the connection limit. metrics.c keeps the counters the rest of the
 * daemon bumps, and includes nothing of the daemon's, so that anyone may
 * bump them; metrics-text.c renders the text from the server's state;
 * metrics-req.c serves it over the broker's socket (rdmabrokerctl
 * metrics), a page at a time; metrics-http.c over HTTP ([metrics]
 * listen), with libevent's evhttp.
 *
 * Every label value is a name (domain, device, kind, quota, request
 * type, errno name): text_escape()d like every client string, then
 * escaped as the text format asks, so that no byte reaches a scraper raw.
 */
#ifndef RDMAB_METRICS_H
#define RDMAB_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct metrics_http;

/* Request types counted by body case; a case past this (or none) counts
 * as "unknown", an undecodable packet as "undecodable". */
#define METRICS_TYPES 128
/* Distinct errors counted per request type; the rest as "other". */
#define METRICS_ERRS 6
/* The most a rendered text may take: far above what DEVICE_MAX devices
 * and the connection limit's domains make; past it the render fails. */
#define METRICS_TEXT_MAX (16u << 20)
/* The figures a scrape sees are at most this old: a flood of scrapes
 * renders once per interval, and shares that text. */
#define METRICS_CACHE_MS 1000

/* One rendered text, shared by the HTTP responses and the pages that read
 * it; freed with its last reference. */
struct metrics_text {
	unsigned int refs;
	uint64_t born_ms;
	size_t len;
	char data[];
};

struct metrics_req_counts {
	/* errs[i] is the errno counted in n[i + 1]; n[0] is the
	 * successes, n[METRICS_ERRS + 1] the rest. */
	uint16_t errs[METRICS_ERRS];
	uint64_t n[METRICS_ERRS + 2];
};

/* A text being read a page at a time by session @client_id
 * (metrics-req.c). */
struct metrics_snap {
	uint64_t client_id;
	uint64_t used_ms;
	struct metrics_text *t;
};

struct metrics {
	struct metrics_req_counts requests[METRICS_TYPES];
	uint64_t undecodable;
	/* When the daemon started, for rdmabroker_start_time_seconds. */
	int64_t start_time;
	/* The last broker-wide text rendered: what scrapes within
	 * METRICS_CACHE_MS share; how many were rendered. */
	struct metrics_text *cache;
	uint64_t renders;
	/* The pages being read over the broker's socket (metrics-req.c). */
	struct metrics_snap *snaps;
	unsigned int n_snaps;
	struct metrics_http *http;
};

/* The counters, zero, and the start time; NULL without memory. */
struct metrics *metrics_new(void);
/* The counters, the cached text and the snapshots (their texts go with
 * their last reference). The HTTP listener must be stopped first. */
void metrics_free(struct metrics *m);

/* metrics_request()'s failures and unknown cases. */
void metrics_request_other(struct metrics *m, unsigned int body_case,
			   bool known, int err);

/* A request of @body_case was answered with @err (0 or a negative
 * errno); @known: a handler serves the case (else it counts as
 * "unknown"). Every request passes here: a success costs an increment. */
static inline void metrics_request(struct metrics *m, unsigned int body_case,
				   bool known, int err)
{
	if (m && known && !err && body_case < METRICS_TYPES)
		m->requests[body_case].n[0]++;
	else
		metrics_request_other(m, body_case, known, err);
}
void metrics_undecodable(struct metrics *m);

void metrics_text_put(struct metrics_text *t);
uint64_t metrics_now_ms(void);
/* Drop snapshot @i of @m. */
void metrics_snap_drop(struct metrics *m, unsigned int i);

/*
 * Write @raw as a label value into @buf (@size > 0): text_escape()d, then
 * '\\', '"' and newline escaped as the text format asks. Cut (whole
 * escapes only) when it does not fit. Returns @buf.
 */
const char *metrics_label(char *buf, size_t size, const char *raw);

#endif
