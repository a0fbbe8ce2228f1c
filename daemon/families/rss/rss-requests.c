// SPDX-License-Identifier: MIT
/*
 * The RSS family's requests (rss.h; rss-handlers.c turns them into
 * replies): a create checks the WQs, the rules and the domain's room, has
 * the device make the parts and journals them; a destroy tears the object
 * down; a listing pages the objects a session may see.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/registry/charge.h"
#include "daemon/registry/client.h"
#include "daemon/registry/core.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/domain.h"
#include "daemon/registry/objects.h"
#include "daemon/util/fault.h"
#include "daemon/families/rss/rss.h"

/* An RSS listing entry is under 300 bytes plus 20 per WQ. */
#define RSS_LIST_PAGE 32

/* WQ @id of a create: a live registry WQ of the domain in @x. */
static int rss_find_wq(struct client *c, struct dctx *x, uint64_t id,
		       struct obj **ret, struct why *why)
{
	struct obj *o = objects_find_in_domain(c, id);

	if (!o || o->kind != IBC_OBJ_WQ)
		return why_set(why, -EINVAL,
			       "object %" PRIu64 " is not a WQ of domain %s",
			       id, c->domain->name);
	if (o->ctx != x)
		return why_set(why, -EINVAL,
			       "WQ %" PRIu64 " is in context %" PRIu64
			       ", not %" PRIu64,
			       o->id, o->ctx->id, x->id);
	if (o->intent || o->owner->state != OWNER_LIVE)
		return why_set(why, -EINVAL, "WQ %" PRIu64 " is not live (%s)",
			       o->id,
			       o->intent ? "not registered yet" :
					   "its owner's session ended");
	*ret = o;
	return 0;
}

/*
 * Add @id to @seen, an open-addressing set of @size slots (a power of
 * two, at least twice the ids) where 0 is free: no object id is 0.
 * false when it was there already.
 */
static bool rss_id_add(uint64_t *seen, size_t size, uint64_t id)
{
	size_t h = (size_t)((id * 0x9e3779b97f4a7c15ull) >> 32) & (size - 1);

	while (seen[h]) {
		if (seen[h] == id)
			return false;
		h = (h + 1) & (size - 1);
	}
	seen[h] = id;
	return true;
}

/* The WQs, each once: a set of the ids seen keeps the check linear in
 * their number (4096 pairwise compares took ~5 ms a request). */
static int rss_find_wqs(struct client *c, struct dctx *x,
			const Rdmab__RssCreateRequest *q, struct obj **wqs,
			struct why *why)
{
	size_t size = 2;
	uint64_t *seen;
	int err = 0;

	while (size < 2 * q->n_wq_ids)
		size *= 2;
	seen = calloc(size, sizeof(*seen));
	if (!seen)
		return why_set(why, -ENOMEM, "out of memory");
	for (size_t i = 0; i < q->n_wq_ids && err == 0; i++) {
		err = rss_find_wq(c, x, q->wq_ids[i], &wqs[i], why);
		if (err == 0 && !rss_id_add(seen, size, wqs[i]->id))
			err = why_set(why, -EINVAL,
				      "WQ %" PRIu64 " is listed twice",
				      wqs[i]->id);
	}
	free(seen);
	return err;
}

static int rss_check_sizes(const struct device *dev,
			   const Rdmab__RssCreateRequest *q, struct why *why)
{
	uint32_t max = dev->caps.max_rss_table_size;

	if (max > 1u << IBC_RSS_MAX_LOG_TABLE)
		max = 1u << IBC_RSS_MAX_LOG_TABLE;
	if (q->log_ind_tbl_size > IBC_RSS_MAX_LOG_TABLE ||
	    (1u << q->log_ind_tbl_size) > max)
		return why_set(why, -EINVAL,
			       "a table of 2^%u entries is over %s's "
			       "maximum of %u (min of its rss_caps and "
			       "the uverbs limit 2^13)",
			       q->log_ind_tbl_size, dev->name, max);
	if (!q->n_wq_ids || q->n_wq_ids > IBC_RSS_MAX_WQS ||
	    q->n_wq_ids > (1u << q->log_ind_tbl_size))
		return why_set(why, -EINVAL,
			       "%zu WQs for a table of %u entries (1 to "
			       "the table size, at most %d)",
			       q->n_wq_ids, 1u << q->log_ind_tbl_size,
			       IBC_RSS_MAX_WQS);
	if (q->hash_key.len != RSS_KEY_LEN)
		return why_set(why, -EINVAL,
			       "the hash key is %zu bytes, not %d",
			       q->hash_key.len, RSS_KEY_LEN);
	if (!q->port_num || q->port_num > dev->caps.ports)
		return why_set(why, -EINVAL, "%s has no port %u", dev->name,
			       q->port_num);
	/* RAW_PACKET needs an Ethernet port: the device's rss_create asks
	 * the port (the soft device's counts as Ethernet). */
	return 0;
}

static int rss_add_records(struct client *c, struct rss *s, struct why *why)
{
	struct obj **slot[3] = { &s->flow, &s->qp, &s->tbl };
	static const enum ibc_obj_kind kind[3] = { IBC_OBJ_RWQ_IND_TBL,
						   IBC_OBJ_QP, IBC_OBJ_FLOW };
	uint32_t h[3] = { s->made.tbl_handle, s->made.qp_handle,
			  s->made.flow_handle };

	/* Table first, so that its id, the RSS id, is the lowest. */
	for (int i = 0; i < 3; i++) {
		struct obj *o;
		int err = objects_add(c, s->x, kind[i], false, true, h[i], why,
				      &o);

		if (err < 0)
			return err;
		o->slot[FAMILY_RSS].p = s;
		*slot[2 - i] = o;
	}
	return 0;
}

int rss_create(struct client *c, const Rdmab__RssCreateRequest *q,
	       struct wire_arena *a, struct why *why,
	       Rdmab__RssCreateReply *out)
{
	struct why dev_why = { 0, "" };
	struct domain *pool = domain_pool(c->domain);
	struct dctx *x;
	uint64_t *ids;
	struct rss *s;
	bool empty;
	int err;

	err = dctx_conn_usable(c, q->context_id, why, &x);
	if (err < 0)
		return err;
	/* A device that makes none says why before any rule is checked. */
	if (*x->dev->rss_why)
		return why_set(why, -EOPNOTSUPP, "%s makes no RSS tables: %s",
			       x->dev->name, x->dev->rss_why);
	if (q->flags & ~(uint32_t)IBC_RSS_MATCH_ALL)
		return why_set(why, -EINVAL, "unknown RSS flags 0x%x",
			       q->flags & ~(uint32_t)IBC_RSS_MATCH_ALL);
	err = rss_check_sizes(x->dev, q, why);
	if (err < 0)
		return err;
	s = calloc(1, sizeof(*s));
	if (s) {
		s->wqs = calloc(q->n_wq_ids, sizeof(*s->wqs));
		s->wq_ids = calloc(q->n_wq_ids, sizeof(*s->wq_ids));
	}
	if (!s || !s->wqs || !s->wq_ids) {
		if (s) {
			free(s->wqs);
			free(s->wq_ids);
			free(s);
		}
		return why_set(why, -ENOMEM, "out of memory");
	}
	s->x = x;
	s->port_num = q->port_num;
	s->log_size = q->log_ind_tbl_size;
	s->hash_fields = q->hash_fields;
	s->n_wqs = (uint32_t)q->n_wq_ids;
	memcpy(s->key, q->hash_key.data, RSS_KEY_LEN);
	err = rss_match_from_wire(q->match, &s->match, &empty, why);
	if (err == 0)
		err = rss_check_hash(x->dev, q->hash_fields,
				     q->log_ind_tbl_size, &s->match, why);
	if (err == 0)
		err = rss_check_policy(c, &s->match, empty, q->flags, why);
	if (err == 0)
		err = rss_find_wqs(c, x, q, s->wqs, why);
	if (err == 0) {
		rss_set_wqs(s, s->wqs, s->wq_ids, s->n_wqs);
		err = charge_room(pool, CHARGE_OF(FAMILY_RSS), 1, "", why);
	}
	if (err == 0)
		err = charge_room(pool, CHARGE_OBJECTS, 3,
				  " (an RSS object takes 3)", why);
	if (err == 0) {
		err = rss_make(s, s->wqs, s->n_wqs, 0, &s->made, &dev_why);
		if (err < 0)
			why_set(why, err, "%s", dev_why.text);
	}
	if (err < 0) {
		free(s->wqs);
		free(s->wq_ids);
		free(s);
		return err;
	}
	/* As a rebuild's (rss-rebuild.c): killed before the journal put
	 * below, the parts are named by nothing; a verbs kernel keeps them,
	 * counted unaccounted after the restart. */
	fault_point("rss-create-made");
	charge_take(&s->charge, pool, CHARGE_OF(FAMILY_RSS), 1);
	TAILQ_INSERT_TAIL(&rss_state(c->core)->all, s, link);
	err = rss_add_records(c, s, why);
	if (err == 0) {
		s->id = s->tbl->id;
		ids = wire_arena_alloc(a, s->n_wqs * sizeof(*ids));
		out->match = rss_match_to_wire(a, &s->match);
		if (!ids || !out->match)
			err = why_set(why, -ENOMEM, "out of memory");
	}
	if (err < 0) {
		rss_unmake(s);
		return err;
	}
	rss_journal_now(s);
	rdmab__rss_create_reply__init(out);
	out->match = rss_match_to_wire(a, &s->match);
	for (uint32_t i = 0; i < s->n_wqs; i++)
		ids[i] = s->wqs[i]->id;
	out->rss_id = s->id;
	out->wq_ids = ids;
	out->n_wq_ids = s->n_wqs;
	out->priority = s->priority;
	return 0;
}

int rss_destroy_request(struct client *c, uint64_t id, struct why *why)
{
	struct obj *o = objects_find(c, id);
	struct why dev_why = { 0, "" };
	int err;

	if (!o || o->kind != IBC_OBJ_RWQ_IND_TBL || !o->slot[FAMILY_RSS].p)
		return why_set(why, -ENOENT,
			       "RSS %" PRIu64 " is not one of this "
			       "session's",
			       id);
	err = rss_teardown(o->slot[FAMILY_RSS].p, &dev_why);
	if (err < 0)
		return why_set(why, err, "%s", dev_why.text);
	return 0;
}

static int rss_info(struct wire_arena *a, const struct rss *s,
		    Rdmab__RssInfo *ri)
{
	uint64_t *ids = wire_arena_alloc(a, s->n_wqs * sizeof(*ids));
	uint64_t *owners = wire_arena_alloc(a, s->n_wqs * sizeof(*owners));

	if (!ids || !owners)
		return -ENOMEM;
	rdmab__rss_info__init(ri);
	ri->id = s->id;
	ri->domain = s->x->domain->name;
	ri->device = s->x->dev->name;
	ri->client_id = s->tbl ? s->tbl->owner->client_id : 0;
	ri->port_num = s->port_num;
	ri->log_ind_tbl_size = s->log_size;
	ri->hash_key.data = (uint8_t *)s->key;
	ri->hash_key.len = RSS_KEY_LEN;
	ri->hash_fields = s->hash_fields;
	ri->match = rss_match_to_wire(a, &s->match);
	ri->priority = s->priority;
	for (uint32_t i = 0; i < s->n_wqs; i++) {
		ids[i] = s->wqs[i]->id;
		owners[i] = s->wqs[i]->owner->client_id;
	}
	ri->wq_ids = ids;
	ri->n_wq_ids = s->n_wqs;
	ri->wq_owners = owners;
	ri->n_wq_owners = s->n_wqs;
	ri->qp_num = s->made.qp_num;
	ri->rebuilds = s->rebuilds;
	return ri->match ? 0 : -ENOMEM;
}

int rss_list(struct client *c, const Rdmab__ListRequest *q,
	     struct wire_arena *a, struct why *why, Rdmab__ListRssReply *out)
{
	bool admin = policy_is_admin(c->core, c);
	Rdmab__RssInfo *infos, **ptrs;
	uint32_t idx = 0;
	size_t n = 0, bytes = 0;
	bool full = false;
	struct rss *s;

	infos = wire_arena_alloc(a, sizeof(*infos) * RSS_LIST_PAGE);
	ptrs = wire_arena_alloc(a, sizeof(*ptrs) * RSS_LIST_PAGE);
	if (!out || !infos || !ptrs)
		return why_set(why, -ENOMEM, "out of memory");
	rdmab__list_rss_reply__init(out);
	TAILQ_FOREACH(s, &rss_state(c->core)->all, link) {
		if (!admin && s->x->domain != c->domain)
			continue;
		if (idx++ < q->offset || full)
			continue;
		/* Keep the page under the packet limit: the next page
		 * starts where this one stopped. */
		bytes += 300 + 22 * (size_t)s->n_wqs;
		if (n == RSS_LIST_PAGE || (n && bytes > 48000)) {
			full = true;
			continue;
		}
		if (rss_info(a, s, &infos[n]) < 0)
			return why_set(why, -ENOMEM, "out of memory");
		ptrs[n] = &infos[n];
		n++;
	}
	out->rss = ptrs;
	out->n_rss = n;
	out->total = idx;
	return 0;
}
