// SPDX-License-Identifier: MIT
/*
 * RSS objects across a restart (issue 25; restart.h's contract): each is
 * one journal record (proto/state.proto's Rss) rewritten whole when it is
 * made, rebuilt or loses a part; its parts and WQs are the registry's
 * records, named by id. rss.c hands the values over (struct rss_rec,
 * rss.h) and makes the objects again at the restore; the kernel objects
 * themselves live on in the context, whose descriptor is in the store.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/registry/client.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/domain.h"
#include "daemon/families/family-state.h"
#include "daemon/util/array.h"
#include "daemon/util/log.h"
#include "daemon/registry/objects.h"
#include "daemon/restart/restart.h"
#include "daemon/families/rss/rss.h"
#include "daemon/registry/core.h"
#include "proto/state.pb-c.h"

enum {
	JOURNAL_RSS = RSS_JOURNAL_FIRST,
};

/* Each kind's message, in the order above (family.h's journal_msgs). */
const struct ProtobufCMessageDescriptor
	*const rss_journal_msgs[RSS_JOURNAL_MSGS] = {
		&rdmab__state__rss__descriptor,
	};

void rss_journal(struct core *core, const struct rss_rec *r)
{
	Rdmab__State__Rss m = RDMAB__STATE__RSS__INIT;
	struct journal *j = restart_journal(core);

	if (!j)
		return;
	m.ctx_id = r->ctx_id;
	m.flow_object = r->flow_object;
	m.qp_object = r->qp_object;
	m.tbl_object = r->tbl_object;
	m.port_num = r->port_num;
	m.log_size = r->log_size;
	m.key.data = (uint8_t *)r->key;
	m.key.len = RSS_KEY_LEN;
	m.hash_fields = r->hash_fields;
	m.af = r->match.af;
	m.l4 = r->match.l4;
	m.prefix_len = r->match.prefix_len;
	m.addr.data = (uint8_t *)r->match.addr;
	m.addr.len = sizeof(r->match.addr);
	m.port = r->match.port;
	m.port_mask = r->match.port_mask;
	m.priority = r->priority;
	m.n_wqs = r->n_wqs;
	m.wqs = (uint64_t *)r->wqs;
	m.tbl_handle = r->made.tbl_handle;
	m.qp_handle = r->made.qp_handle;
	m.flow_handle = r->made.flow_handle;
	m.qp_num = r->made.qp_num;
	m.rebuilds = r->rebuilds;
	m.owner = r->owner;
	m.retiring = r->retiring.mask;
	m.retiring_flow_handle = r->retiring.handle[RSS_FLOW];
	m.retiring_qp_handle = r->retiring.handle[RSS_QP];
	m.retiring_tbl_handle = r->retiring.handle[RSS_TBL];
	/* A failure marks the journal broken: the next start refuses the
	 * whole state. */
	journal_put(j, JOURNAL_RSS, r->id, &m.base);
}

void rss_journal_gone(struct core *core, uint64_t id)
{
	journal_del(restart_journal(core), JOURNAL_RSS, id);
}

/* A part's registry record, made again under @id for @c, or for @ow
 * when its session had ended before the restart while its process lived
 * (the registry journals no RSS part: the RSS record names them). */
static int rss_part(struct restore *rs, struct client *c, struct obj_owner *ow,
		    struct dctx *x, enum ibc_obj_kind kind, uint32_t handle,
		    uint64_t id, struct obj **ret)
{
	struct why why = { 0 };
	int ret_add;

	if (c)
		ret_add = objects_add_id(c, x, kind, false, true, handle, id,
					 &why, ret);
	else
		ret_add = objects_add_detached(ow, x, kind, false, true, handle,
					       id, &why, ret);
	if (ret_add < 0)
		return restore_fail(rs, -ENOMEM,
				    "RSS part %" PRIu64 " (%s): %s", id,
				    obj_kind_name(kind), why.text);
	rs->adopted_objects++;
	return 0;
}

/* The most handles one kind's list gives: uverbs' attribute length is 16
 * bits (UVERBS_HANDLES_MAX); a list this long may have been cut. */
#define RSS_LIST_MAX 16383

/* Whether the context's kernel lists @handle among its objects of @kind:
 * 1, 0, or -errno when it cannot say: no list (the destroy's own kind
 * check is then all there is), or -E2BIG for a full list without it (the
 * kernel stops at RSS_LIST_MAX, newest first, so an older part may be
 * past the cut: a cut list is never "not there"). */
static int rss_handle_listed(struct dctx *x, enum ibc_obj_kind kind,
			     uint32_t handle)
{
	uint32_t *h = malloc(RSS_LIST_MAX * sizeof(*h));
	int n, ret = 0;

	if (!h)
		return -ENOMEM;
	n = x->dev->ctx_ops->handle_list(x->dc, kind, h, RSS_LIST_MAX);
	if (n < 0)
		ret = n;
	for (int i = 0; i < n && ret == 0; i++)
		ret = h[i] == handle;
	if (ret == 0 && n >= RSS_LIST_MAX)
		ret = -E2BIG;
	free(h);
	return ret;
}

/*
 * Whether every part @m still names is listed by the context's kernel as
 * an object of its kind: 1, 0, or -errno when the kernel cannot say. A
 * part destroyed just before a SIGKILL by a daemon that journaled it
 * after (the previous one) leaves a freed handle here, which the kernel
 * gives to the next object made in the context (lowest free first): a
 * record naming a handle the kernel does not list is stale, and none of
 * its handles is to be trusted. Members cannot make flows (CAP_NET_RAW),
 * so a listed flow is the RSS object's own.
 */
static int rss_parts_listed(struct dctx *x, const Rdmab__State__Rss *m)
{
	const uint64_t named[RSS_PARTS] = { m->flow_object, m->qp_object,
					    m->tbl_object };
	const uint32_t handle[RSS_PARTS] = { m->flow_handle, m->qp_handle,
					     m->tbl_handle };
	int ret = 1;

	/* One part not listed makes the record stale, whatever the kernel
	 * could not say of the others. */
	for (int i = 0; i < RSS_PARTS && ret != 0; i++) {
		int one = named[i] ? rss_handle_listed(x, rss_part_kind[i],
						       handle[i]) :
				     1;

		if (one <= 0)
			ret = one;
	}
	return ret;
}

/* The parts @m names as retiring (rss.h), their handles by part. */
static struct rss_retiring rss_retiring_of(const Rdmab__State__Rss *m)
{
	return (struct rss_retiring){
		.handle = { m->retiring_flow_handle, m->retiring_qp_handle,
			    m->retiring_tbl_handle },
		.mask = m->retiring & ((1u << RSS_PARTS) - 1),
	};
}

/* A QP listed at @handle that answers a query: no RSS QP (mlx5 refuses
 * the query of one), so another's since the kill. */
static void rss_qp_kept(uint64_t id, uint32_t handle)
{
	log_warn("RSS %" PRIu64 ": the QP at handle %u is no RSS QP (it "
		 "answers a query), another object since: not destroyed",
		 id, handle);
}

/* One line for the retiring parts in @parts (bits) and why none of them
 * is destroyed by its handle. */
static void rss_retiring_log(uint64_t id, uint32_t parts, const char *why)
{
	log_info("RSS %" PRIu64 ": retiring%s%s%s %s: nothing destroyed by %s",
		 id, parts & 1u << RSS_FLOW ? " flow" : "",
		 parts & 1u << RSS_QP ? " QP" : "",
		 parts & 1u << RSS_TBL ? " table" : "", why,
		 parts & (parts - 1) ? "their handles" : "its handle");
}

/*
 * Which retiring parts the kernel still lists as their kind: those are
 * destroyed (rss_destroy_handle()). Each bit was cleared once its destroy
 * returned, so a listed one is the part itself (for a flow, proof:
 * members cannot make one) but when the SIGKILL came between a destroy's
 * return and that clear and a member made an object of the same kind in
 * the context before the restore. A part not listed went: recorded as
 * gone, never destroyed by its handle; nor one the kernel cannot say of
 * (no list). One log line says which.
 */
static uint32_t rss_retiring_listed(struct dctx *x, uint64_t id,
				    const struct rss_retiring *t)
{
	uint32_t listed = 0, gone = 0, unsure = 0;
	int ret, why_unsure = 0;

	for (unsigned int p = 0; p < RSS_PARTS; p++) {
		if (!(t->mask & 1u << p))
			continue;
		ret = rss_handle_listed(x, rss_part_kind[p], t->handle[p]);
		if (ret == 1 && p == RSS_QP &&
		    x->dev->ctx_ops->qp_is_rss(x->dc, t->handle[p]) == 0) {
			rss_qp_kept(id, t->handle[p]);
		} else if (ret == 1) {
			listed |= 1u << p;
		} else if (ret == 0) {
			gone |= 1u << p;
		} else {
			unsure |= 1u << p;
			why_unsure = ret;
		}
	}
	if (gone)
		rss_retiring_log(id, gone, "not listed by the kernel, gone");
	if (unsure)
		rss_retiring_log(id, unsure,
				 why_unsure == -E2BIG ?
					 "unverified (the kernel's list was "
					 "cut)" :
					 "unverified (the kernel lists no "
					 "handles)");
	return listed;
}

/*
 * Part @p at @handle goes by handle; -ENOENT and -EIO are gone already. A
 * QP that the device says is no RSS QP (mlx5: it answers a query, which
 * an RSS QP refuses with ENOSYS) is a member's, made at a handle freed
 * just before the kill: kept. A device that cannot say leaves the kernel's
 * list (the caller's check) all there is.
 */
static void rss_destroy_handle(struct dctx *x, uint64_t id, unsigned int p,
			       uint32_t handle)
{
	struct why why = { 0 };
	int ret;

	if (p == RSS_QP && x->dev->ctx_ops->qp_is_rss(x->dc, handle) == 0) {
		rss_qp_kept(id, handle);
		return;
	}
	ret = x->dev->ctx_ops->obj_destroy(x->dc, rss_part_kind[p], handle,
					   &why);
	if (ret < 0 && ret != -ENOENT && ret != -EIO)
		log_warn("RSS %" PRIu64 ": its %s stays in the context: %s", id,
			 obj_kind_name(rss_part_kind[p]), why.text);
}

/*
 * Part @p of RSS @id at @handle goes by handle once the restore's state is
 * stored (rss_restored): the stored state is the previous daemon's until
 * then, still naming the part, and a kill between a destroy here and that
 * store would leave it naming a freed handle that members' new objects
 * may take. Killed after the store, before the destroy: nothing names the
 * part, which stays in the context, counted unaccounted. Without room,
 * it goes now, as before.
 */
static void rss_put_off(struct dctx *x, uint64_t id, unsigned int p,
			uint32_t handle)
{
	struct rss_table *t = rss_state(x->core);

	if (!t || array_grow(&t->put_off, &t->cap_put_off, t->n_put_off + 1,
			     sizeof(*t->put_off), 16) < 0) {
		rss_destroy_handle(x, id, p, handle);
		return;
	}
	t->put_off[t->n_put_off++] = (struct rss_put_off){
		.id = id, .ctx_id = x->id, .part = p, .handle = handle
	};
}

void rss_restored(struct core *core)
{
	struct rss_table *t = rss_state(core);
	struct rss *r;

	if (!t)
		return;
	for (size_t i = 0; i < t->n_put_off; i++) {
		const struct rss_put_off *o = &t->put_off[i];
		struct dctx *x = restart_ctx_find(core, o->ctx_id);

		if (x && x->dc)
			rss_destroy_handle(x, o->id, o->part, o->handle);
	}
	free(t->put_off);
	t->put_off = NULL;
	t->n_put_off = t->cap_put_off = 0;
	TAILQ_FOREACH(r, &t->all, link)
		if (r->retiring.mask)
			rss_retire_quiet(r);
}

void rss_ctx_closed(struct core *core, const struct dctx *x)
{
	struct rss_table *t = rss_state(core);
	size_t n = 0;

	/* Its kernel objects go with it: nothing left to destroy. */
	for (size_t i = 0; t && i < t->n_put_off; i++)
		if (t->put_off[i].ctx_id != x->id)
			t->put_off[n++] = t->put_off[i];
	if (t)
		t->n_put_off = n;
}

/*
 * A record not adopted whose context came back: on verbs the parts it
 * still names or retires live on in the context's kernel state (the store
 * and the members keep its descriptor open), the table pinning its WQs and
 * the flow rule steering traffic, so they go by handle here, flows, QPs
 * then tables as the kernel's use counts want. The named parts only when
 * the kernel lists them all (rss_parts_listed), each retiring one only
 * when it is listed (rss_retiring_listed). The soft device's parts died
 * with the previous daemon, their kernel.
 */
void rss_drop_named(struct dctx *x, const Rdmab__State__Rss *m, uint64_t id)
{
	const uint64_t named[RSS_PARTS] = { m->flow_object, m->qp_object,
					    m->tbl_object };
	const uint32_t handle[RSS_PARTS] = { m->flow_handle, m->qp_handle,
					     m->tbl_handle };
	struct rss_retiring t = rss_retiring_of(m);
	uint32_t retiring;
	int listed;

	if (x->dev->broker_objects)
		return;
	retiring = rss_retiring_listed(x, id, &t);
	listed = rss_parts_listed(x, m);
	if (listed == 0)
		log_warn("RSS %" PRIu64 ": the kernel does not list every "
			 "part its record names, nothing destroyed by its "
			 "handles",
			 id);
	for (unsigned int p = 0; p < RSS_PARTS; p++) {
		if (retiring & 1u << p)
			rss_put_off(x, id, p, t.handle[p]);
		if (named[p] && listed != 0)
			rss_put_off(x, id, p, handle[p]);
	}
}

/* An adopted record's retiring parts (a rebuild killed before their
 * destroys all returned) that the kernel lists: carried by rss_adopt into
 * the new journal, and destroyed once it is stored (rss_restored), so
 * that a kill during the restore leaves them named by the state the next
 * daemon reads. */
struct rss_retiring rss_retire_adopted(struct dctx *x,
				       const Rdmab__State__Rss *m, uint64_t id)
{
	struct rss_retiring t = rss_retiring_of(m);

	if (x->dev->broker_objects || !t.mask)
		return (struct rss_retiring){ 0 };
	t.mask = rss_retiring_listed(x, id, &t);
	return t;
}

static int restore_one(void *arg, const struct journal_rec *rec)
{
	struct restore *rs = arg;
	struct obj *part[3] = { NULL, NULL, NULL }, **wqs = NULL;
	struct rss_rec r = { .id = rec->key };
	struct rss_spec spec = { 0 };
	struct why why = { 0 };
	struct rss_made at = { 0 };
	uint32_t *wqh = NULL;
	Rdmab__State__Rss *m;
	struct obj_owner *ow = NULL;
	struct client *c;
	struct dctx *x;
	int listed, ret = 0;

	m = rdmab__state__rss__unpack(NULL, rec->len, rec->data);
	if (!m)
		return restore_fail(rs, -EBADMSG,
				    "RSS %" PRIu64 " does not decode",
				    rec->key);
	c = state_client(rs->core, m->owner);
	/* A session that had ended before the restart while its process
	 * lived (detached): the object stays its owner's until that process
	 * is gone, as the registry's records of such owners do. */
	if (!c)
		ow = restart_owner_find(rs, m->owner);
	/* Its context came back with its WQs' records (a table has at
	 * least one, in its context), whoever owns them; with none, the
	 * object is not adopted below. */
	x = state_ctx(rs->core, m->ctx_id);
	/* Its owner is neither, or a part was going: it goes, as with its
	 * owner's death, with what the kernel still holds of it. */
	if ((!c && !ow) || !x || !x->dc || (c && !dctx_conn_find(c, x->id)) ||
	    !m->flow_object || !m->qp_object || !m->tbl_object) {
		log_info("RSS %" PRIu64 ": its owner's session or context did "
			 "not come back, not adopted",
			 rec->key);
		if (x && x->dc)
			rss_drop_named(x, m, rec->key);
		goto out;
	}
	if (m->key.len != RSS_KEY_LEN || m->addr.len != sizeof(r.match.addr)) {
		ret = restore_fail(rs, -EINVAL,
				   "RSS %" PRIu64 ": its key or address is "
				   "not whole",
				   rec->key);
		goto out;
	}
	wqs = calloc(m->n_wqs ? m->n_wqs : 1, sizeof(*wqs));
	wqh = calloc(m->n_wqs ? m->n_wqs : 1, sizeof(*wqh));
	if (!wqs || !wqh) {
		ret = restore_fail(rs, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < m->n_wqs; i++) {
		wqs[i] = objects_find_id(rs->core, m->wqs[i]);
		if (!wqs[i] || wqs[i]->kind != IBC_OBJ_WQ || wqs[i]->ctx != x) {
			log_info("RSS %" PRIu64 ": its WQ %" PRIu64 " did not "
				 "come back, not adopted",
				 rec->key, m->wqs[i]);
			rss_drop_named(x, m, rec->key);
			goto out;
		}
		wqh[i] = wqs[i]->handle;
	}
	r.ctx_id = m->ctx_id;
	r.owner = m->owner;
	r.port_num = m->port_num;
	r.log_size = m->log_size;
	r.priority = m->priority;
	r.rebuilds = m->rebuilds;
	r.key = m->key.data;
	r.hash_fields = m->hash_fields;
	r.match.af = (uint8_t)m->af;
	r.match.l4 = (uint8_t)m->l4;
	r.match.prefix_len = (uint8_t)m->prefix_len;
	memcpy(r.match.addr, m->addr.data, sizeof(r.match.addr));
	r.match.port = (uint16_t)m->port;
	r.match.port_mask = (uint16_t)m->port_mask;
	r.n_wqs = (uint32_t)m->n_wqs;
	spec.port_num = r.port_num;
	spec.log_size = r.log_size;
	spec.n_wqs = r.n_wqs;
	spec.wqs = wqh;
	spec.hash_fields = r.hash_fields;
	spec.match = r.match;
	spec.priority = r.priority;
	memcpy(spec.key, r.key, RSS_KEY_LEN);
	at.tbl_handle = m->tbl_handle;
	at.qp_handle = m->qp_handle;
	at.flow_handle = m->flow_handle;
	at.qp_num = m->qp_num;
	listed = x->dev->broker_objects ? 1 : rss_parts_listed(x, m);
	if (listed == 0) {
		/* A state of a daemon that journaled a destroy after it. */
		log_info("RSS %" PRIu64 ": not adopted", rec->key);
		rss_drop_named(x, m, rec->key);
		goto out;
	}
	if (listed == -E2BIG)
		log_info("RSS %" PRIu64 ": adopted unverified, the kernel's "
			 "handle list was cut",
			 rec->key);
	r.retiring = rss_retire_adopted(x, m, rec->key);
	ret = x->dev->ctx_ops->rss_adopt(x->dc, &spec, &at, &r.made, &why);
	if (ret < 0) {
		ret = restore_fail(rs, ret, "RSS %" PRIu64 ": %s", r.id,
				   why.text);
		goto out;
	}
	ret = rss_part(rs, c, ow, x, IBC_OBJ_RWQ_IND_TBL, r.made.tbl_handle,
		       m->tbl_object, &part[2]);
	if (ret == 0)
		ret = rss_part(rs, c, ow, x, IBC_OBJ_QP, r.made.qp_handle,
			       m->qp_object, &part[1]);
	if (ret == 0)
		ret = rss_part(rs, c, ow, x, IBC_OBJ_FLOW, r.made.flow_handle,
			       m->flow_object, &part[0]);
	if (ret == 0)
		ret = rss_adopt(rs->core, &r, x, part[0], part[1], part[2],
				wqs);
	if (ret < 0) {
		for (int i = 0; i < RSS_PARTS; i++) {
			x->dev->ctx_ops->rss_destroy(x->dc, &r.made,
						     rss_part_kind[i], &why);
			if (part[i])
				objects_remove(part[i]);
		}
		if (!*rs->why)
			restore_fail(rs, ret, "RSS %" PRIu64 ": out of memory",
				     r.id);
	}
out:
	free(wqs);
	free(wqh);
	rdmab__state__rss__free_unpacked(m, NULL);
	return ret;
}

int rss_restore(struct core *core, struct restore *rs)
{
	int ret = restore_each(rs, JOURNAL_RSS, restore_one, rs);

	if (ret < 0)
		rss_adopt_undo(core);
	return ret;
}
