/* SPDX-License-Identifier: MIT */
/* RSS across processes (rss.c). */
#ifndef RDMAB_RSS_H
#define RDMAB_RSS_H

#include <stdbool.h>

#include "daemon/conf.h"
#include "daemon/device.h"
#include "daemon/family.h"
#include "proto/wire.h"

struct core;
struct client;
struct why;

/* Does rule @u allow match @m (with the family and L4 the hash implies)?
 * Inside its prefix, its protocol if it names one, and covering its port
 * bits if it names a port. */
bool rss_rule_allows(const struct rss_rule *u, const struct rss_match *m);

/*
 * The RSS family (family.h): its state lists every RSS object; it
 * forgets them when their device goes, before the registry drops their
 * records (and perhaps their context); its object hooks destroy the RSS
 * kinds and take a WQ out of its tables; rekey counts and names the RSS
 * objects of a context, or destroys them, their owners told
 * (RssRebuiltEvent, no WQs); its fini forgets them (destroys nothing).
 */
extern const struct family rss_family;
/* The requests it serves (rss-handlers.c), up to { 0, NULL }. */
extern const struct family_request rss_requests[];

/* The requests (rss-handlers.c turns them into replies), 0 or -errno
 * naming what was wrong in @why; what the replies carry is allocated in
 * @a. A create fills @out (its match, ids and priority). */
int rss_create(struct client *c, const Rdmab__RssCreateRequest *q,
	       struct wire_arena *a, struct why *why,
	       Rdmab__RssCreateReply *out);
/* The destroy of @c's RSS @id. */
int rss_destroy_request(struct client *c, uint64_t id, struct why *why);
/* The RSS objects @c may see, a page of them from q->offset. */
int rss_list(struct client *c, const Rdmab__ListRequest *q,
	     struct wire_arena *a, struct why *why, Rdmab__ListRssReply *out);

#endif
