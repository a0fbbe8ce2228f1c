/* SPDX-License-Identifier: MIT */
/*
 * The text exposition of the server's state (metrics.h): what a render
 * reads is the server's, so this is of the transport's layer, and only the
 * two servers of the text include it.
 */
#ifndef RDMAB_METRICS_TEXT_H
#define RDMAB_METRICS_TEXT_H

#include "daemon/server/metrics.h"

struct server;
struct domain;

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

#endif
