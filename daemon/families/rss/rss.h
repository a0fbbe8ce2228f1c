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

/* An RSS object's parts, in the order the kernel's use counts want them
 * destroyed (the flow holds the QP, the QP the table). */
enum { RSS_FLOW, RSS_QP, RSS_TBL, RSS_PARTS };
extern const enum ibc_obj_kind rss_part_kind[RSS_PARTS];
/* Part @p's handle in @m. */
uint32_t rss_made_handle(const struct rss_made *m, unsigned int p);

/*
 * Parts that may still be in the kernel but belong to the object no more
 * (state.proto's Rss retiring fields): a rebuild's old parts, journaled
 * with the new ones before their destroys, and a teardown's part,
 * journaled as going before its destroy; each bit cleared once its
 * destroy returned. The restore destroys one only if the kernel lists it
 * as its kind.
 */
struct rss_retiring {
	uint32_t handle[RSS_PARTS];
	/* 1u << RSS_FLOW and so on: which handles are set (0 is valid). */
	uint32_t mask;
};

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
	struct rss_retiring retiring;
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

/* rss-state.c's restore of a record @m of RSS @id on @x's device, what a
 * verbs kernel may still hold of it (the soft device's parts died with the
 * previous daemon: nothing to do there). Each part goes by handle only if
 * the kernel lists that handle as its kind (tests/check_rss_retiring.c).
 * Not adopted: the parts it names, if the kernel lists them all, and each
 * retiring one it lists. Adopted: the retiring ones it lists. */
struct Rdmab__State__Rss;
void rss_drop_named(struct dctx *x, const struct Rdmab__State__Rss *m,
		    uint64_t id);
void rss_retire_adopted(struct dctx *x, const struct Rdmab__State__Rss *m,
			uint64_t id);

#endif
