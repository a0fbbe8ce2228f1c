/* SPDX-License-Identifier: MIT */
/* RSS across processes (rss.c). */
#ifndef RDMAB_RSS_H
#define RDMAB_RSS_H

#include <stdbool.h>

#include "daemon/config/conf.h"
#include "daemon/families/rss/rss-conf.h"
#include "daemon/device/device.h"
#include "daemon/families/family.h"
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
/* Its journal record kinds start here (family.h's journal_first). */
#define RSS_JOURNAL_FIRST 48
/* Its record kinds' messages (rss-state.c), for the restore's check. */
#define RSS_JOURNAL_MSGS 1
extern const struct ProtobufCMessageDescriptor
	*const rss_journal_msgs[RSS_JOURNAL_MSGS];
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

/* --- within the RSS family: rss.c, rss-state.c ---------------------------- */

#include <stdint.h>

struct restore;
struct obj;
struct dctx;

/* Restart (rss-state.c): an RSS object as plain values, so that the
 * journal's code needs none of rss.c's structures. */
struct rss_rec {
	uint64_t id, ctx_id, flow_object, qp_object, tbl_object, owner;
	uint32_t port_num, log_size, priority, rebuilds;
	const uint8_t *key;
	uint64_t hash_fields;
	struct rss_match match;
	uint32_t n_wqs;
	/* The WQs' object ids, in the table's order. */
	const uint64_t *wqs;
	struct rss_made made;
};

/* Its record as it is now, and its end; no-ops with restart off. */
void rss_journal(struct core *core, const struct rss_rec *r);
void rss_journal_gone(struct core *core, uint64_t id);
/* The family's restore slot (family.h). */
int rss_restore(struct core *core, struct restore *rs);
/* rss.c, for the restore: the RSS object @r on @x over the registry's
 * records @flow, @qp, @tbl (NULL for a part that went) and @wqs, its
 * charge taken again. 0 or -errno. */
int rss_adopt(struct core *core, const struct rss_rec *r, struct dctx *x,
	      struct obj *flow, struct obj *qp, struct obj *tbl,
	      struct obj **wqs);
/* Forget every RSS object the restore made (a record it could not use). */
void rss_adopt_undo(struct core *core);

#endif
