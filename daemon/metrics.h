/* SPDX-License-Identifier: MIT */
/*
 * Metrics (issue 26 item 4): the Prometheus text exposition (format 0.0.4)
 * of what the broker knows, per domain and device, never per client, so
 * that the number of series stays bounded by what the operator configures
 * and the connection limit. metrics.c keeps the counters the rest of the
 * daemon bumps and renders the text; metrics-req.c serves it over the
 * broker's socket (rdmabrokerctl metrics), a page at a time;
 * metrics-http.c over HTTP ([metrics] listen), with libevent's evhttp.
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

struct server;
struct domain;
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
	bool all;
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

struct metrics {
	struct metrics_req_counts requests[METRICS_TYPES];
	uint64_t undecodable;
	uint64_t evictions;
	uint64_t dm_revokes;
	/* When the daemon started, for rdmabroker_start_time_seconds. */
	int64_t start_time;
	/* The last whole text rendered (all = true): what scrapes within
	 * METRICS_CACHE_MS share. */
	struct metrics_text *cache;
	/* The pages being read over the broker's socket (metrics-req.c). */
	struct metrics_snap *snaps;
	unsigned int n_snaps;
	struct metrics_http *http;
};

/* 0 or -ENOMEM; metrics_fini() undoes whatever it did. */
int metrics_init(struct server *srv);
void metrics_fini(struct server *srv);

/* A request of @body_case was answered with @err (0 or a negative
 * errno); @name is its handler's (NULL: none knew the case). */
void metrics_request(struct server *srv, unsigned int body_case,
		     const char *name, int err);
void metrics_undecodable(struct server *srv);

/*
 * Render the exposition: every domain and the broker-wide figures when
 * @only is NULL, else @only's figures alone (what a member may know).
 * 0 with a new text (one reference, the caller's) in *@ret, or -ENOMEM,
 * or -EFBIG past METRICS_TEXT_MAX.
 */
int metrics_render(struct server *srv, const struct domain *only,
		   struct metrics_text **ret);
/* The broker-wide text no older than METRICS_CACHE_MS, rendered anew if
 * needed: a reference the caller puts. */
int metrics_render_all(struct server *srv, struct metrics_text **ret);
void metrics_text_put(struct metrics_text *t);
uint64_t metrics_now_ms(void);

/*
 * Write @raw as a label value into @buf (@size > 0): text_escape()d, then
 * '\\', '"' and newline escaped as the text format asks. Cut (whole
 * escapes only) when it does not fit. Returns @buf.
 */
const char *metrics_label(char *buf, size_t size, const char *raw);

/* The listener of [metrics] listen (metrics-http.c): 0 when none is
 * configured or it listens, else a negative errno, logged. */
int metrics_http_start(struct server *srv);
void metrics_http_stop(struct server *srv);
/* HTTP connections open now (tests). */
unsigned int metrics_http_conns(const struct server *srv);

/* Snapshots of metrics-req.c, freed at exit. */
void metrics_snaps_free(struct metrics *m);

#endif
