// SPDX-License-Identifier: MIT
/*
 * RSS across processes (DESIGN §3): an indirection table over WQs of any
 * clients of a domain, the RSS QP hashing by Toeplitz over it, and the flow
 * rule that steers the traffic a domain may claim to it. The broker makes
 * them because the QP and the rule need CAP_NET_RAW.
 *
 * Each RSS object is three registry records of its owner (flow, QP, table:
 * the cleanup destroys them in that order through rss_destroy_part) and a
 * struct rss that names the WQs by their records. A WQ leaves every table
 * that uses it before it goes, whoever destroys it: the owner
 * (before_owner_destroy) or the cleanup of a dead owner (before_destroy).
 * The table is then rebuilt make-before-break over the WQs that remain,
 * the new flow rule at the other of two priorities, or destroyed when none
 * remain; packets hashed to the leaving WQ in between are lost. Every WQ of
 * a dead process leaves with it: one rebuild, and one Event to the owner
 * naming the WQs that left, however many a dying process had.
 *
 * This file keeps the objects: make, destroy by part, journal, adopt,
 * rekey and the family's hooks. The rules are rss-rules.c's, a WQ leaving
 * (the rebuild) rss-rebuild.c's, the requests rss-requests.c's
 * (rss.h).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/registry/charge.h"
#include "daemon/registry/client.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/domain.h"
#include "daemon/util/fault.h"
#include "daemon/util/log.h"
#include "daemon/registry/objects.h"
#include "daemon/restart/restart.h"
#include "daemon/families/rss/rss.h"
#include "proto/state.pb-c.h"
#include "daemon/registry/core.h"

struct rss_table *rss_state(const struct core *core)
{
	return core->family_state[FAMILY_RSS];
}

const enum ibc_obj_kind rss_part_kind[RSS_PARTS] = {
	[RSS_FLOW] = IBC_OBJ_FLOW,
	[RSS_QP] = IBC_OBJ_QP,
	[RSS_TBL] = IBC_OBJ_RWQ_IND_TBL,
};

uint32_t rss_made_handle(const struct rss_made *m, unsigned int p)
{
	return p == RSS_FLOW ? m->flow_handle :
	       p == RSS_QP   ? m->qp_handle :
			       m->tbl_handle;
}

static unsigned int rss_part_of(enum ibc_obj_kind kind)
{
	return kind == IBC_OBJ_FLOW ? RSS_FLOW :
	       kind == IBC_OBJ_QP   ? RSS_QP :
				      RSS_TBL;
}

/* The record's object id of part @o, 0 once it went or while it goes. */
static uint64_t rss_named(const struct rss *r, const struct obj *o,
			  unsigned int p)
{
	return o && !(r->going & 1u << p) ? o->id : 0;
}

/* Restart: @r's record as it is now (rss-state.c). */
void rss_journal_now(struct rss *r)
{
	struct rss_rec rec = {
		.id = r->id,
		.ctx_id = r->x->id,
		.flow_object = rss_named(r, r->flow, RSS_FLOW),
		.qp_object = rss_named(r, r->qp, RSS_QP),
		.tbl_object = rss_named(r, r->tbl, RSS_TBL),
		.owner = r->tbl	 ? r->tbl->owner->client_id :
			 r->qp	 ? r->qp->owner->client_id :
			 r->flow ? r->flow->owner->client_id :
				   0,
		.port_num = r->port_num,
		.log_size = r->log_size,
		.priority = r->priority,
		.rebuilds = r->rebuilds,
		.key = r->key,
		.hash_fields = r->hash_fields,
		.match = r->match,
		.n_wqs = r->n_wqs,
		.made = r->made,
		.retiring = r->retiring,
	};

	if (!restart_journal(r->x->core))
		return;
	rec.wqs = r->wq_ids;
	rss_journal(r->x->core, &rec);
}

void rss_set_wqs(struct rss *r, struct obj **wqs, uint64_t *ids, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		ids[i] = wqs[i]->id;
	if (r->wqs != wqs)
		free(r->wqs);
	if (r->wq_ids != ids)
		free(r->wq_ids);
	r->wqs = wqs;
	r->wq_ids = ids;
	r->n_wqs = n;
}

void rss_free(struct rss *r)
{
	rss_journal_gone(r->x->core, r->id);
	TAILQ_REMOVE(&rss_state(r->x->core)->all, r, link);
	charge_release(&r->charge);
	free(r->wqs);
	free(r->wq_ids);
	free(r);
}

/* --- making and destroying ---------------------------------------------- */

static int rss_handles(const struct rss *r, struct obj *const *wqs, uint32_t n,
		       uint32_t **ret)
{
	uint32_t *h = malloc((n ? n : 1) * sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		h[i] = wqs[i]->handle;
	*ret = h;
	return 0;
}

int rss_make(struct rss *r, struct obj *const *wqs, uint32_t n,
	     uint32_t priority, struct rss_made *ret, struct why *why)
{
	struct rss_spec spec = {
		.port_num = r->port_num,
		.log_size = r->log_size,
		.n_wqs = n,
		.hash_fields = r->hash_fields,
		.match = r->match,
		.priority = priority,
	};
	uint32_t *h;
	int err;

	if (rss_handles(r, wqs, n, &h) < 0)
		return why_set(why, -ENOMEM, "out of memory");
	spec.wqs = h;
	memcpy(spec.key, r->key, sizeof(spec.key));
	err = r->x->dev->ctx_ops->rss_create(r->x->dc, &spec, ret, why);
	free(h);
	return err;
}

/* Part @p of @r is journaled as going (its object 0, its handle
 * retiring), or as staying again. */
static void rss_going(struct rss *r, unsigned int p, bool going)
{
	if (going) {
		r->going |= 1u << p;
		r->retiring.mask |= 1u << p;
		r->retiring.handle[p] = rss_made_handle(&r->made, p);
	} else {
		r->going &= ~(1u << p);
		r->retiring.mask &= ~(1u << p);
	}
	rss_journal_now(r);
}

/*
 * The registry's destroy of one part (flow, QP, table), in that order;
 * the record's removal (rss_part_removed) then updates @r. The part is
 * journaled as going first: a SIGKILL after the destroy must not leave
 * the record naming a freed handle, which the kernel gives to the next
 * object made in the context (lowest free first).
 */
static int rss_destroy_part(struct core *core, struct obj *o, void *data,
			    struct why *why)
{
	static const char *const point[RSS_PARTS] = { "rss-teardown-flow",
						      "rss-teardown-qp",
						      "rss-teardown-tbl" };
	struct rss *r = o->slot[FAMILY_RSS].p;
	unsigned int p = rss_part_of(o->kind);
	int err;

	rss_going(r, p, true);
	err = r->x->dev->ctx_ops->rss_destroy(r->x->dc, &r->made, o->kind, why);
	fault_point(point[p]);
	/* -ENOENT, -EIO: gone all the same, the record goes next. */
	if (err < 0 && err != -ENOENT && err != -EIO)
		rss_going(r, p, false);
	return err;
}

/*
 * A part's record goes, whatever the path: the cleanup after a destroy,
 * or after ENOENT for a part destroyed behind the broker's back (with
 * raw verbs on the shared context). @r forgets it, so that no walk of the
 * RSS objects meets a freed record, and goes with its last part.
 */
static void rss_part_removed(struct core *core, struct obj *o, void *data)
{
	struct rss *r = o->slot[FAMILY_RSS].p;

	if (!r)
		return;
	o->slot[FAMILY_RSS].p = NULL;
	if (o == r->flow)
		r->flow = NULL;
	else if (o == r->qp)
		r->qp = NULL;
	else if (o == r->tbl)
		r->tbl = NULL;
	r->going &= ~(1u << rss_part_of(o->kind));
	r->retiring.mask &= ~(1u << rss_part_of(o->kind));
	if (!r->flow && !r->qp && !r->tbl)
		rss_free(r);
	else
		rss_journal_now(r);
}

/* Destroy every part of @r that is left; frees @r when all went. */
int rss_teardown(struct rss *r, struct why *why)
{
	struct obj *parts[3] = { r->flow, r->qp, r->tbl };

	/* A going part takes its retiring slot. */
	rss_retire_left(r);
	for (unsigned int i = 0; i < 3; i++) {
		int err;

		if (!parts[i])
			continue;
		err = rss_destroy_part(NULL, parts[i], NULL, why);
		/* -ENOENT: the part is gone already. */
		if (err < 0 && err != -EIO && err != -ENOENT)
			return err;
		objects_remove(parts[i]);
	}
	return 0;
}

/* Undo a create whose reply failed: the device's parts, the records that
 * were added, the struct. */
void rss_unmake(struct rss *r)
{
	static const enum ibc_obj_kind part[3] = { IBC_OBJ_FLOW, IBC_OBJ_QP,
						   IBC_OBJ_RWQ_IND_TBL };
	struct obj *rec[3] = { r->flow, r->qp, r->tbl };
	struct why why;

	for (int i = 0; i < 3; i++) {
		r->x->dev->ctx_ops->rss_destroy(r->x->dc, &r->made, part[i],
						&why);
		if (!rec[i])
			continue;
		/* Freed below, whether or not every record was added. */
		rec[i]->slot[FAMILY_RSS].p = NULL;
		objects_remove(rec[i]);
	}
	rss_free(r);
}

static void rss_device_gone(struct core *core, struct device *dev,
			    const char *reason)
{
	struct rss *r, *tmp;

	(void)reason;
	/* Before the registry drops the records (it hears last): the
	 * kernel frees the objects with the contexts. */
	TAILQ_FOREACH_SAFE(r, &rss_state(core)->all, link, tmp) {
		if (r->x->dev != dev)
			continue;
		/* The implementation's handles died with it; the records
		 * go next, without it. */
		if (r->flow)
			r->flow->slot[FAMILY_RSS].p = NULL;
		if (r->qp)
			r->qp->slot[FAMILY_RSS].p = NULL;
		if (r->tbl)
			r->tbl->slot[FAMILY_RSS].p = NULL;
		free(r->made.priv);
		rss_free(r);
	}
}

int rss_adopt(struct core *core, const struct rss_rec *rec, struct dctx *x,
	      struct obj *flow, struct obj *qp, struct obj *tbl,
	      struct obj **wqs)
{
	struct rss *r = calloc(1, sizeof(*r));
	size_t n = rec->n_wqs ? rec->n_wqs : 1;
	struct obj **own = calloc(n, sizeof(*own));
	uint64_t *ids = calloc(n, sizeof(*ids));

	if (!r || !own || !ids) {
		free(ids);
		free(own);
		free(r);
		return -ENOMEM;
	}
	memcpy(own, wqs, rec->n_wqs * sizeof(*wqs));
	rss_set_wqs(r, own, ids, rec->n_wqs);
	r->x = x;
	r->flow = flow;
	r->qp = qp;
	r->tbl = tbl;
	r->id = rec->id;
	r->port_num = rec->port_num;
	r->log_size = rec->log_size;
	memcpy(r->key, rec->key, RSS_KEY_LEN);
	r->hash_fields = rec->hash_fields;
	r->match = rec->match;
	r->priority = rec->priority;
	r->rebuilds = rec->rebuilds;
	/* The kernel's handles; the implementation's own objects are not
	 * this process's (verbs destroys the parts by handle). */
	r->made = rec->made;
	r->made.priv = NULL;
	/* Old parts the restore found listed: carried into the new journal
	 * and destroyed by handle once it is stored (rss_restored). */
	r->retiring = rec->retiring;
	r->retired.flow_handle = rec->retiring.handle[RSS_FLOW];
	r->retired.qp_handle = rec->retiring.handle[RSS_QP];
	r->retired.tbl_handle = rec->retiring.handle[RSS_TBL];
	r->retired.adopted = true;
	if (flow)
		flow->slot[FAMILY_RSS].p = r;
	if (qp)
		qp->slot[FAMILY_RSS].p = r;
	if (tbl)
		tbl->slot[FAMILY_RSS].p = r;
	charge_take(&r->charge, domain_pool(x->domain), CHARGE_OF(FAMILY_RSS),
		    1);
	TAILQ_INSERT_TAIL(&rss_state(core)->all, r, link);
	rss_journal_now(r);
	return 0;
}

void rss_adopt_undo(struct core *core)
{
	static const enum ibc_obj_kind kinds[3] = { IBC_OBJ_FLOW, IBC_OBJ_QP,
						    IBC_OBJ_RWQ_IND_TBL };
	struct why why;
	struct rss *r;

	/* The parts the restore made, on the device and in the registry. */
	while ((r = TAILQ_FIRST(&rss_state(core)->all))) {
		struct obj *parts[3] = { r->flow, r->qp, r->tbl };

		for (int i = 0; i < 3; i++) {
			r->x->dev->ctx_ops->rss_destroy(r->x->dc, &r->made,
							kinds[i], &why);
			if (parts[i]) {
				parts[i]->slot[FAMILY_RSS].p = NULL;
				objects_remove(parts[i]);
			}
		}
		rss_free(r);
	}
}

static int rss_init(struct core *core)
{
	struct rss_table *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	TAILQ_INIT(&t->all);
	core->family_state[FAMILY_RSS] = t;
	return 0;
}

static void rss_fini(struct core *core)
{
	struct rss_table *t = rss_state(core);
	struct rss *r;

	if (!t)
		return;
	/* The registry's fini forgets the records; the kernel frees the
	 * rest. */
	while ((r = TAILQ_FIRST(&t->all))) {
		TAILQ_REMOVE(&t->all, r, link);
		free(r->wqs);
		free(r->wq_ids);
		free(r);
	}
	free(t->put_off);
	free(t);
	core->family_state[FAMILY_RSS] = NULL;
}

/* --- rekey -------------------------------------------------------------- */

static unsigned int rss_ctx_busy(const struct core *core, const struct dctx *x,
				 char *buf, size_t len)
{
	const struct rss *r;
	unsigned int n = 0;

	TAILQ_FOREACH(r, &rss_state(core)->all, link) {
		char item[64];

		if (r->x != x)
			continue;
		n++;
		if (r->tbl)
			snprintf(item, sizeof(item),
				 "RSS table %" PRIu64 " (client %" PRIu64 "'s)",
				 r->id, r->tbl->owner->client_id);
		else
			snprintf(item, sizeof(item), "RSS table %" PRIu64,
				 r->id);
		rekey_name_add(buf, len, item);
	}
	return n;
}

/* What a teardown could not destroy stays in the rekeyed context, which
 * closes as a whole: the parts' records become unaccounted and @r goes,
 * so that no record or listing names it after the context is freed. */
static void rss_leave_to_ctx(struct rss *r)
{
	struct obj *parts[3] = { r->flow, r->qp, r->tbl };

	/* A going part takes its retiring slot. */
	rss_retire_left(r);
	for (unsigned int i = 0; i < 3; i++) {
		if (!parts[i])
			continue;
		parts[i]->slot[FAMILY_RSS].p = NULL;
		objects_drop_intent(parts[i]);
	}
	/* The implementation's objects go with the context. */
	free(r->made.priv);
	rss_free(r);
}

static unsigned int rss_ctx_force(struct core *core, struct dctx *x,
				  const char *reason)
{
	struct rss *r, *tmp;
	unsigned int n = 0;

	TAILQ_FOREACH_SAFE(r, &rss_state(core)->all, link, tmp) {
		struct why why = { 0, "" };
		uint64_t id = r->id;

		if (r->x != x)
			continue;
		n++;
		/* Sending closes no RSS object: an ended session keeps its
		 * records. */
		rss_event(r, reason, true, NULL, 0);
		if (rss_teardown(r, &why) < 0) {
			log_warn("RSS %" PRIu64 ": left to its old context: %s",
				 id, why.text);
			rss_leave_to_ctx(r);
		}
	}
	return n;
}

static const struct obj_family rss_parts = {
	.destroy = rss_destroy_part,
	.removed = rss_part_removed,
};
static const struct obj_family rss_wqs = {
	.before_destroy = rss_wq_cleanup,
	.before_owner_destroy = rss_wq_going,
};

/* A session whose hello asked for Events that carry the change alone
 * (family_slot[FAMILY_RSS]: 1; 0 for the whole table). */
static void rss_hello(struct client *c, const Rdmab__HelloRequest *hr)
{
	c->family_slot[FAMILY_RSS] = hr->rss_delta_events;
}

static void rss_session_save(const struct client *c, Rdmab__State__Session *m)
{
	m->rss_delta = c->family_slot[FAMILY_RSS] != 0;
}

static void rss_session_restore(struct client *c,
				const Rdmab__State__Session *m)
{
	c->family_slot[FAMILY_RSS] = m->rss_delta;
}

/* A domain's quota of RSS tables: its key, or [defaults]'. */
static void rss_domain_limit(const struct config *cfg,
			     const struct config_domain *cd,
			     struct quota *limit)
{
	limit->family[FAMILY_RSS][0] = rss_conf_domain(cfg, cd)->rss_tables;
}

static uint64_t rss_quota_limit(const struct domain *d)
{
	return d->limit.family[FAMILY_RSS][0];
}

static int rss_quota_refuse(const char *domain, uint64_t used, uint64_t limit,
			    const char *clause, struct why *why)
{
	return why_set(why, -EDQUOT,
		       "domain %s holds %" PRIu64 " of its %" PRIu64
		       " RSS tables%s",
		       domain, used, limit, clause);
}

const struct family rss_family = {
	/* Its quota: RSS tables, charged to the domain's pool. */
	.quota_name = "rss_tables",
	.quota_info_field = offsetof(Rdmab__QuotaInfo, rss_tables),
	.quota_info_size = sizeof(((Rdmab__QuotaInfo *)0)->rss_tables),
	.quota_counted = true,
	.quota_metric = "rdmabroker_rss_tables",
	.quota_metric_help = "RSS indirection tables the domain holds.",
	.quota_limit = rss_quota_limit,
	.quota_refuse = rss_quota_refuse,
	.name = "RSS",
	.conf = &rss_conf_family,
	.domain_limit = rss_domain_limit,
	.journal_first = RSS_JOURNAL_FIRST,
	.journal_msgs = rss_journal_msgs,
	.n_journal_msgs = RSS_JOURNAL_MSGS,
	.hello = rss_hello,
	.session_save = rss_session_save,
	.session_restore = rss_session_restore,
	.init = rss_init,
	.fini = rss_fini,
	.device_gone = rss_device_gone,
	.rekey_busy = rss_ctx_busy,
	.rekey_force = rss_ctx_force,
	.rekey_noun = "RSS tables",
	.requests = rss_requests,
	.rekey_reply_field = offsetof(Rdmab__DomainRekeyReply, destroyed_rss),
	.obj_hooks =
		{
			[IBC_OBJ_FLOW] = &rss_parts,
			[IBC_OBJ_QP] = &rss_parts,
			[IBC_OBJ_RWQ_IND_TBL] = &rss_parts,
			[IBC_OBJ_WQ] = &rss_wqs,
		},
	.restore = rss_restore,
	.restored = rss_restored,
	.ctx_closed = rss_ctx_closed,
};
