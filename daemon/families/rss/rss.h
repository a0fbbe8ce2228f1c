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

/* --- within the RSS family: rss.c, rss-state.c, rss-rules.c,
 * rss-rebuild.c, rss-requests.c -------------------------------------------- */

#include <stdint.h>

#include "daemon/registry/charge.h"
#include "daemon/util/queue.h"

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
struct rss_retiring rss_retire_adopted(struct dctx *x,
				       const struct Rdmab__State__Rss *m,
				       uint64_t id);
/* The family's restored hook: the destroys put off during the restore
 * (rss_drop_named's, and each adopted object's retiring parts, which the
 * new journal carries) run now that its state is stored. */
void rss_restored(struct core *core);
/* The family's ctx_closed hook: what was put off for @x goes with it. */
void rss_ctx_closed(struct core *core, const struct dctx *x);

/* rss.c keeps the objects (make, destroy by part, journal, adopt, rekey,
 * the family's hooks); rss-rules.c the match, hash and rss_allow rules;
 * rss-rebuild.c a WQ leaving its tables and the owner's Event;
 * rss-requests.c the create, destroy and listing requests. */
struct rss {
	TAILQ_ENTRY(rss) link;
	struct dctx *x;
	/* One of its domain's rss_tables, until it is freed. */
	struct charge charge;
	/* The owner's records; NULL once that part is destroyed. */
	struct obj *flow, *qp, *tbl;
	uint64_t id;
	uint32_t port_num;
	uint32_t log_size;
	uint8_t key[RSS_KEY_LEN];
	uint64_t hash_fields;
	struct rss_match match;
	uint32_t priority;
	uint32_t n_wqs;
	struct obj **wqs;
	/* @wqs' object ids, kept with them so that a journal write, which
	 * comes before a destroy, has nothing to allocate (and so cannot
	 * be skipped). */
	uint64_t *wq_ids;
	struct rss_made made;
	unsigned int rebuilds;
	/* Restart: parts whose kernel objects may outlive their place here
	 * (struct rss_retiring); @going, those of a teardown, whose record
	 * is journaled as gone (object 0) while their destroy runs. */
	struct rss_retiring retiring;
	uint32_t going;
	/* A rebuild's old parts while their retiring bits are set: a
	 * destroy that failed is tried again from here (rss_retire). */
	struct rss_made retired;
};

/* The family's state (core->family_state[FAMILY_RSS]). */
struct rss_table {
	TAILQ_HEAD(, rss) all;
	/* The restore's destroys by handle of records not adopted, put off
	 * until its state is stored (rss_restored). */
	struct rss_put_off *put_off;
	size_t n_put_off, cap_put_off;
};

/* One part of a record the restore did not adopt, to go by its handle. */
struct rss_put_off {
	uint64_t id, ctx_id;
	unsigned int part;
	uint32_t handle;
};

struct rss_table *rss_state(const struct core *core);

/* rss.c. Restart: @r's record as it is now (rss-state.c). */
void rss_journal_now(struct rss *r);
/* @r's WQs become the @n of @wqs, their ids written into @ids (room for
 * @n); both taken (or @r's own), the previous arrays freed. */
void rss_set_wqs(struct rss *r, struct obj **wqs, uint64_t *ids, uint32_t n);
/* @r goes: its record, its charge, the struct. */
void rss_free(struct rss *r);
/* The device's table, QP and flow rule over @wqs at @priority. */
int rss_make(struct rss *r, struct obj *const *wqs, uint32_t n,
	     uint32_t priority, struct rss_made *ret, struct why *why);
/* Destroy every part of @r that is left; frees @r when all went. */
int rss_teardown(struct rss *r, struct why *why);
/* Undo a create whose reply failed. */
void rss_unmake(struct rss *r);

/* rss-rules.c: the hash's family and L4, the match from and to the wire
 * and the domain's rss_allow rules; 0 or -errno naming what was wrong in
 * @why. */
int rss_check_hash(const struct device *dev, uint64_t fields, uint32_t log_size,
		   struct rss_match *m, struct why *why);
int rss_match_from_wire(const Rdmab__FlowMatch *w, struct rss_match *m,
			bool *empty, struct why *why);
int rss_check_policy(struct client *c, const struct rss_match *m, bool empty,
		     uint32_t flags, struct why *why);
Rdmab__FlowMatch *rss_match_to_wire(struct wire_arena *a,
				    const struct rss_match *m);

/* rss-rebuild.c: tell @r's owner (RssRebuiltEvent); a WQ leaves every
 * table, by its owner's destroy or the cleanup of a dead owner. */
void rss_event(struct rss *r, const char *reason, bool destroyed,
	       const uint64_t *removed, uint32_t n_removed);
int rss_wq_going(struct core *core, struct obj *o, void *data, struct why *why);
/* @r's retiring old parts (@r->retired) go, each bit cleared once its
 * destroy returned or found it gone, the record journaled after each; a
 * failed destroy keeps its bit for the next try. */
void rss_retire(struct rss *r);
/* The same without the live rebuild's fault points (the restore's). */
void rss_retire_quiet(struct rss *r);
/* Before @r's retiring slots are written again (a rebuild, a teardown):
 * the old parts left are tried once more, and what still stays is let
 * go, named by nothing (counted unaccounted after a restart). */
void rss_retire_left(struct rss *r);
int rss_wq_cleanup(struct core *core, struct obj *o, void *data);

#endif
