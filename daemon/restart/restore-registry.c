// SPDX-License-Identifier: MIT
/*
 * The restore's registry objects (restore-int.h): the records the check
 * read, kept; each object adopted under its id by its session or its
 * ended session's owner, in the order the cleanup's ranks give backwards,
 * made again at its handle where the daemon is the device (the soft
 * device); the unnamed ones made again for nobody; and those whose remake
 * waits for a family, once more after it.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/registry/core.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/objects.h"
#include "daemon/restart/restart-int.h"
#include "daemon/restart/restore-int.h"
#include "daemon/server/conn.h"
#include "daemon/util/array.h"
#include "daemon/util/keysort.h"
#include "daemon/util/log.h"
#include "daemon/util/why.h"

void restore_objs_free(struct robjs *ro)
{
	free(ro->v);
	ro->v = NULL;
	ro->n = ro->cap = 0;
}

int restore_obj_keep(void *arg, const struct journal_rec *r,
		     const struct state_obj *m)
{
	struct rkeep *k = arg;
	struct restore *rs = k->rs;
	struct robjs *ro = k->ro;

	if (array_grow(&ro->v, &ro->cap, ro->n + 1, sizeof(*ro->v), 256) < 0)
		return restore_fail(rs, -ENOMEM, "out of memory");
	ro->v[ro->n++] = (struct robj){
		.id = r->key, .m = *m, .data = r->data, .len = r->len
	};
	return 0;
}

/* What an object uses first: the cleanup's order backwards. */
struct robj_order {
	/* The rank, reversed, above the handle. */
	uint64_t key;
	/* The record's index. */
	size_t i;
};

/* The spec of @m's create (its soft part), as restart_obj_made() was
 * given it; its attributes are the caller's. */
static void robj_spec(const struct state_obj *m, struct obj_spec *spec)
{
	*spec = (struct obj_spec){ .kind = (enum ibc_obj_kind)m->kind };
	for (size_t i = 0; i < m->soft.n_uses && i < OBJ_MAX_USES; i++)
		spec->uses[i] = m->soft.uses[i];
	spec->used = m->soft.used_mask;
	obj_spec_fields_load(spec, &m->soft.device);
}

/* Make a soft object again at its handle, as its create asked. */
static int robj_remake(struct dctx *x, const struct state_obj *m,
		       struct obj_made *made, struct why *why)
{
	struct obj_spec spec;

	if (!m->has_soft)
		return why_set(why, -EBADMSG, "its record has no spec");
	robj_spec(m, &spec);
	spec.used &= (1u << OBJ_MAX_USES) - 1;
	obj_attr_from_wire(&spec.attr, m->soft.has_attr ? &m->soft.attr : NULL);
	spec.num = m->soft.num;
	spec.key = m->soft.key;
	/* Provider-internal records per QP are not made again. */
	spec.import = 0;
	return x->dev->ctx_ops->obj_restore(x->dc, &spec, m->handle, made, why);
}

/* Does @m say what @o is, as restart_obj_made() or restart_obj_saved()
 * would write it (a record without a spec for what is not made again;
 * one made again with the number and key @made it was given)? Then its
 * bytes are the new journal's record as they are: packing 100,000
 * objects again was a third of a restore. */
static bool robj_is_record(struct core *core, const struct obj *o,
			   const struct state_obj *m,
			   const struct obj_made *made)
{
	struct rec_fields fam;

	/* The families' fields, as their save hooks write them. */
	fam.n = 0;
	objects_hook_save(core->registry, o, &fam);
	if (!rec_fields_same(&fam, &m->family))
		return false;
	if (o->owner->client_id != m->owner || o->ctx->id != m->ctx_id ||
	    o->kind != m->kind || o->handle != m->handle ||
	    o->intent != m->intent || o->made_here != m->made_here ||
	    o->window_made != m->window_made || o->stuck != m->stuck ||
	    o->family_owned != m->family_owned ||
	    o->born_usec != m->born_usec || !made != !m->has_soft)
		return false;
	/* A record that names no number or key where the object has one
	 * (a create that gave none): it was given new ones, which its
	 * record must say. */
	return !made || (made->num == m->soft.num && made->lkey == m->soft.key);
}

int restore_unnamed_collect(void *arg, const struct journal_rec *r)
{
	struct rctx *rc = arg;

	if (array_grow(&rc->unnamed, &rc->cap_unnamed, rc->n_unnamed + 1,
		       sizeof(*rc->unnamed), 64) < 0)
		return restore_fail(rc->rs, -ENOMEM, "out of memory");
	/* In key order (journal_each()): sorted. */
	rc->unnamed[rc->n_unnamed++] = r->key;
	return 0;
}

static bool robj_unnamed(const struct rctx *rc, uint64_t id)
{
	size_t lo = 0, hi = rc->n_unnamed;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rc->unnamed[mid] == id)
			return true;
		if (rc->unnamed[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* An object the broker made that stayed in its context in no record's
 * name (kept.c): made again at its handle, for no one, so that the
 * context holds what it held and its count (unaccounted, from the
 * context's record) stays as it was. Its context comes back with the
 * sessions that hold it, or not at all (then it closed, and the object
 * went with it). */
static void restore_unnamed(struct rctx *rc, struct robj *ro, bool last)
{
	const struct state_obj *m = &ro->m;
	struct dctx *x = restart_ctx_find(rc->rs->core, m->ctx_id);
	struct obj_made made = { 0 };
	struct why why = { 0 };
	int ret;

	if (!x || !x->dc || x->reopened) {
		/* A context adopted for a detached owner's record may come
		 * after it (the records' order): once more, last. */
		if (!last) {
			ro->later = true;
			return;
		}
		log_debug("object %" PRIu64 " (unnamed): its context was not "
			  "adopted",
			  ro->id);
		return;
	}
	ret = robj_remake(x, m, &made, &why);
	if (ret < 0 && !last) {
		ro->later = true;
		return;
	}
	if (ret < 0) {
		log_warn("object %" PRIu64 " (%s %u, unnamed) cannot be made "
			 "again: %s",
			 ro->id, obj_kind_name(m->kind), m->handle, why.text);
		return;
	}
	restart_unnamed_adopted(rc->rs->core, x, ro->id, ro->data, ro->len);
}

static void restore_obj(struct rctx *rc, struct robj *ro, bool last)
{
	const struct state_obj *m = &ro->m;
	struct why why = { 0 };
	struct obj_made made = { 0 };
	struct conn *c;
	struct obj_owner *ow;
	struct dctx *x;
	bool remake;
	struct obj *o;
	int ret;

	/* A family's record (a DM import) is the family's to restore. */
	if (m->family_owned)
		return;
	if (rc->n_unnamed && robj_unnamed(rc, ro->id)) {
		restore_unnamed(rc, ro, last);
		return;
	}
	c = restore_conn_find(rc, m->owner);
	/* A session that ended before the restart: its owner's record. */
	ow = c ? NULL : restart_owner_find(rc->rs, m->owner);
	x = c  ? dctx_conn_find(&c->cl, m->ctx_id) :
	    ow ? restore_ctx_orphan(rc, ow, m->ctx_id) :
		 NULL;
	if (!x || !x->dc || x->reopened) {
		log_debug("object %" PRIu64 ": its session or context was not "
			  "adopted",
			  ro->id);
		return;
	}
	remake = m->made_here && (!m->intent || m->window_made);
	if (remake) {
		ret = robj_remake(x, m, &made, &why);
		if (ret < 0 && !last) {
			ro->later = true;
			return;
		}
		if (ret < 0) {
			log_warn("object %" PRIu64 " (%s %u) cannot be made "
				 "again: %s",
				 ro->id, obj_kind_name(m->kind), m->handle,
				 why.text);
			return;
		}
	}
	if (c)
		ret = objects_add_id(&c->cl, x, (enum ibc_obj_kind)m->kind,
				     m->intent, m->made_here, m->handle, ro->id,
				     &why, &o);
	else
		ret = objects_add_detached(ow, x, (enum ibc_obj_kind)m->kind,
					   m->intent, m->made_here, m->handle,
					   ro->id, &why, &o);
	if (ret < 0) {
		log_warn("object %" PRIu64 ": not adopted: %s", ro->id,
			 why.text);
		if (remake)
			x->dev->ctx_ops->obj_destroy(x->dc, m->kind, m->handle,
						     &why);
		return;
	}
	o->handle = m->handle;
	o->window_made = m->window_made;
	o->born_usec = m->born_usec;
	ret = objects_hook_restore(rc->rs->core->registry, o, m);
	if (ret < 0) {
		log_warn("object %" PRIu64 ": not adopted: %s", ro->id,
			 strerror(-ret));
		objects_remove(o);
		if (remake)
			x->dev->ctx_ops->obj_destroy(x->dc, m->kind, m->handle,
						     &why);
		return;
	}
	if (robj_is_record(rc->rs->core, o, m, remake ? &made : NULL)) {
		restart_obj_packed(rc->rs->core, o, remake ? &made : NULL,
				   ro->data, ro->len);
	} else if (remake && m->has_soft) {
		struct obj_spec spec;

		robj_spec(m, &spec);
		restart_obj_made(rc->rs->core, o, &spec, &made,
				 m->soft.has_attr ? &m->soft.attr : NULL);
	} else {
		restart_obj_saved(rc->rs->core, o);
	}
	rc->rs->adopted_objects++;
}

void restore_objects(struct rctx *rc, struct robjs *ro)
{
	struct robj_order *order;
	size_t n = 0;

	restore_sessions_sort(rc);
	/* Sorted by a key of their own: the records are a few hundred
	 * bytes, which qsort() would move about. */
	order = calloc(ro->n ? ro->n : 1, sizeof(*order));
	if (!order) {
		log_err("out of memory: the %zu objects are not adopted",
			ro->n);
		return;
	}
	for (size_t i = 0; i < ro->n; i++) {
		const struct robj *r = &ro->v[i];

		if (r->m.kind == IBC_OBJ_NONE || r->m.kind >= OBJ_KIND_COUNT) {
			log_warn("object %" PRIu64 ": its record names no "
				 "kind, not adopted",
				 r->id);
			continue;
		}
		order[n].key = (uint64_t)(UINT32_MAX -
					  obj_kind_destroy_rank(r->m.kind))
				       << 32 |
			       r->m.handle;
		order[n++].i = i;
	}
	/* Stable: ties (a handle in two contexts) keep the id order. */
	if (keysort(order, n, sizeof(*order),
		    offsetof(struct robj_order, key)) < 0) {
		log_err("out of memory: the %zu objects are not adopted", n);
		n = 0;
	}
	for (size_t i = 0; i < n; i++)
		restore_obj(rc, &ro->v[order[i].i], false);
	free(order);
}

void restore_objects_later(struct restore *rs)
{
	struct robjs *ro = rs->rc ? rs->rc->ro : NULL;

	for (size_t i = 0; ro && i < ro->n; i++)
		if (ro->v[i].later) {
			ro->v[i].later = false;
			restore_obj(rs->rc, &ro->v[i], true);
		}
}
