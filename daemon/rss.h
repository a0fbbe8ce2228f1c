/* SPDX-License-Identifier: MIT */
/* RSS across processes (rss.c). */
#ifndef RDMAB_RSS_H
#define RDMAB_RSS_H

#include <stdbool.h>

#include "daemon/conf.h"
#include "daemon/device.h"

struct server;

/* Does rule @u allow match @m (with the family and L4 the hash implies)?
 * Inside its prefix, its protocol if it names one, and covering its port
 * bits if it names a port. */
bool rss_rule_allows(const struct rss_rule *u, const struct rss_match *m);

/* Follow device removals: called before objects_init(), so that RSS
 * objects are forgotten before the registry drops their records (and
 * perhaps their context). 0 or -errno. */
int rss_subscribe(struct server *srv);
/* Register the RSS kinds' destroy and the WQs' leave hooks with the
 * registry (after objects_init()). 0. */
int rss_init(struct server *srv);
/* Rekey (rekey.c): the RSS objects of @x, counted and named after what
 * @buf holds; destroyed, their owners told (RssRebuiltEvent, no WQs). */
struct dctx;
unsigned int rss_ctx_busy(const struct dctx *x, char *buf, size_t len);
unsigned int rss_ctx_force(struct dctx *x, const char *reason);

/* Daemon exit: forget every RSS object (destroys nothing). */
void rss_fini(struct server *srv);

#endif
