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

/*
 * The RSS family (family.h): its state lists every RSS object; it
 * forgets them when their device goes, before the registry drops their
 * records (and perhaps their context); its object hooks destroy the RSS
 * kinds and take a WQ out of its tables; rekey counts and names the RSS
 * objects of a context, or destroys them, their owners told
 * (RssRebuiltEvent, no WQs); its fini forgets them (destroys nothing).
 */
struct family;
extern const struct family rss_family;

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
void rss_journal(struct server *srv, const struct rss_rec *r);
void rss_journal_gone(struct server *srv, uint64_t id);
/* The family's restore slot (family.h). */
int rss_restore(struct server *srv, struct restore *rs);
/* rss.c, for the restore: the RSS object @r on @x over the registry's
 * records @flow, @qp, @tbl (NULL for a part that went) and @wqs, its
 * charge taken again. 0 or -errno. */
int rss_adopt(struct server *srv, const struct rss_rec *r, struct dctx *x,
	      struct obj *flow, struct obj *qp, struct obj *tbl,
	      struct obj **wqs);
/* Forget every RSS object the restore made (a record it could not use). */
void rss_adopt_undo(struct server *srv);

#endif
