// SPDX-License-Identifier: MIT
/*
 * The object family's requests: create (soft: the broker makes it; verbs:
 * an intent, or the track of an object made with raw verbs), register,
 * destroy (soft) or unregister (verbs), and the listing.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "daemon/registry/cgroup.h"
#include "daemon/registry/client.h"
#include "daemon/registry/core.h"
#include "daemon/registry/ctx.h"
#include "daemon/server/handler.h"
#include "daemon/registry/domain.h"
#include "daemon/util/log.h"
#include "daemon/registry/objects.h"
#include "daemon/registry/journal-sink.h"

/* An ObjectInfo is under 200 bytes with the longest names, its owner's
 * cgroup aside: a page carries at most this many bytes of cgroups and ends
 * early rather than outgrow a packet. */
#define OBJ_LIST_PAGE 128
#define OBJ_LIST_CGROUP_BYTES (16 * 1024)

void obj_attr_from_wire(struct obj_attr *a, const Rdmab__ObjAttr *w)
{
	memset(a, 0, sizeof(*a));
	if (!w)
		return;
	a->cqe = w->cqe;
	a->comp_vector = w->comp_vector;
	a->qp_type = w->qp_type;
	a->max_send_wr = w->max_send_wr;
	a->max_recv_wr = w->max_recv_wr;
	a->max_send_sge = w->max_send_sge;
	a->max_recv_sge = w->max_recv_sge;
	a->max_inline_data = w->max_inline_data;
	a->max_wr = w->max_wr;
	a->max_sge = w->max_sge;
	a->srq_limit = w->srq_limit;
	a->mr_addr = w->mr_addr;
	a->mr_length = w->mr_length;
	a->mr_access = w->mr_access;
	a->sq_sig_all = w->sq_sig_all;
	a->xrc_qp_num = w->xrc_qp_num;
}

static void attr_to_wire(Rdmab__ObjAttr *w, const struct obj_attr *a)
{
	rdmab__obj_attr__init(w);
	w->cqe = a->cqe;
	w->comp_vector = a->comp_vector;
	w->qp_type = a->qp_type;
	w->max_send_wr = a->max_send_wr;
	w->max_recv_wr = a->max_recv_wr;
	w->max_send_sge = a->max_send_sge;
	w->max_recv_sge = a->max_recv_sge;
	w->max_inline_data = a->max_inline_data;
	w->max_wr = a->max_wr;
	w->max_sge = a->max_sge;
	w->srq_limit = a->srq_limit;
	w->mr_addr = a->mr_addr;
	w->mr_length = a->mr_length;
	w->mr_access = a->mr_access;
	w->sq_sig_all = a->sq_sig_all;
	w->xrc_qp_num = a->xrc_qp_num;
}

/* What a create's reply says of @o, which the device made as @made:
 * @given (the reply's attributes) takes the attributes it got. */
static void made_to_wire(Rdmab__ObjCreateReply *out, const struct obj *o,
			 const struct obj_made *made, Rdmab__ObjAttr *given)
{
	attr_to_wire(given, &made->attr);
	out->object_id = o->id;
	out->handle = made->handle;
	out->qp_num = made->num;
	out->lkey = made->lkey;
	out->rkey = made->rkey;
	out->attr = given;
}

/* The handles of the objects a new one uses: registered objects of this
 * session in the same context. */
static int resolve_uses(struct client *c, struct dctx *x, const uint64_t *uses,
			size_t n_uses, struct obj_spec *spec, struct reply *r)
{
	for (size_t i = 0; i < n_uses; i++) {
		struct obj *u;

		if (!uses[i])
			continue;
		u = objects_find(c, uses[i]);
		if (!u)
			return reply_error(r, -ENOENT,
					   "object %" PRIu64 ", which the new "
					   "%s would use, is not one of this "
					   "session's",
					   uses[i], obj_kind_name(spec->kind));
		if (u->ctx != x)
			return reply_error(r, -EINVAL,
					   "object %" PRIu64 " is in context "
					   "%" PRIu64 ", not %" PRIu64,
					   u->id, u->ctx->id, x->id);
		if (u->intent)
			return reply_error(r, -EINVAL,
					   "object %" PRIu64 " has no handle "
					   "yet",
					   u->id);
		spec->uses[i] = u->handle;
		spec->used |= 1u << i;
	}
	return 0;
}

/* The families watching @o's kind note what it uses (the records of
 * @q's uses, which resolve_uses() checked); a refusal removes @o. */
static int obj_note_uses(struct client *c, const Rdmab__ObjCreateRequest *q,
			 struct obj *o, struct reply *r)
{
	struct obj *used[OBJ_MAX_USES] = { NULL };
	int ret;

	for (size_t i = 0; i < q->n_uses; i++)
		used[i] = q->uses[i] ? objects_find(c, q->uses[i]) : NULL;
	ret = objects_hook_uses(c->core->registry, o, used, q->n_uses, &r->why);
	if (ret < 0)
		objects_remove(o);
	return ret;
}

/* A QP made with an import on a device that makes records per QP
 * ([soft] internal_objects_per_qp, as mlx5 its BF UARs): the import's
 * records grew, which the context's books say for a restart. */
static void obj_import_grew(struct core *core, const struct dctx *x,
			    const struct obj_spec *spec)
{
	if (spec->import && spec->kind == IBC_OBJ_QP && x->dev->internal_per_qp)
		sink_ctx_saved(core, x);
}

/* The broker is the device's kernel: make the object and register it. */
static int obj_make(struct client *c, struct dctx *x,
		    const Rdmab__ObjCreateRequest *q, struct reply *r,
		    Rdmab__ObjCreateReply *out)
{
	struct obj_spec spec = { .kind = (enum ibc_obj_kind)q->kind };
	Rdmab__ObjAttr *given = reply_alloc(r, sizeof(*given));
	struct why why = { 0, "" };
	struct obj_made made;
	struct obj *o;
	int ret;

	if (!given)
		return reply_error(r, -ENOMEM, "out of memory");
	obj_attr_from_wire(&spec.attr, q->attr);
	spec.import = dctx_conn_import(c, x);
	ret = resolve_uses(c, x, q->uses, q->n_uses, &spec, r);
	if (ret < 0)
		return ret;
	/* Charged before the device is asked. */
	ret = objects_add(c, x, spec.kind, false, true, 0, &r->why, &o);
	if (ret < 0)
		return ret;
	if (q->n_uses) {
		ret = obj_note_uses(c, q, o, r);
		if (ret < 0)
			return ret;
	}
	ret = x->dev->ctx_ops->obj_create(x->dc, &spec, &made, &why);
	if (ret < 0) {
		objects_remove(o);
		return reply_error(r, ret, "%s", why.text);
	}
	o->handle = made.handle;
	sink_obj_made(c->core, o, &spec, &made, q->attr);
	obj_import_grew(c->core, x, &spec);
	made_to_wire(out, o, &made, given);
	return 0;
}

int h_obj_create(struct client *c, const Rdmab__Request *req,
		 struct wire_fds *fds, struct reply *r)
{
	const Rdmab__ObjCreateRequest *q = req->obj_create;
	Rdmab__ObjCreateReply *out = reply_alloc(r, sizeof(*out));
	bool intent = q->mode == RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT;
	struct dctx *x;
	struct obj *o;
	int ret;

	if (!out)
		return reply_error(r, -ENOMEM, "out of memory");
	ret = dctx_conn_usable(c, q->context_id, &r->why, &x);
	if (ret < 0)
		return ret;
	if (q->kind == IBC_OBJ_NONE || q->kind >= IBC_OBJ_CONTEXT)
		return reply_error(r, -EINVAL,
				   "object kind %u is not one the broker "
				   "registers",
				   q->kind);
	if (q->n_uses > OBJ_MAX_USES)
		return reply_error(r, -EINVAL,
				   "an object uses at most %d others, not %zu",
				   OBJ_MAX_USES, q->n_uses);
	rdmab__obj_create_reply__init(out);
	switch (q->mode) {
	case RDMAB__OBJ_CREATE_REQUEST__MODE__CREATE:
		ret = obj_make(c, x, q, r, out);
		break;
	case RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT:
	case RDMAB__OBJ_CREATE_REQUEST__MODE__TRACK:
		if (x->dev->broker_objects &&
		    !(intent && x->dev->intent_window))
			return reply_error(r, -EINVAL,
					   "%s: the broker makes this device's "
					   "objects; create them with mode "
					   "CREATE",
					   x->dev->name);
		/* The library names what the object uses here too (a QP's
		 * CQs, an XRC SRQ's CQ and XRCD, an MR's DM): checked as for
		 * CREATE, and kept for the listings. */
		if (q->n_uses) {
			struct obj_spec spec = { 0 };

			spec.kind = (enum ibc_obj_kind)q->kind;
			ret = resolve_uses(c, x, q->uses, q->n_uses, &spec, r);
			if (ret < 0)
				return ret;
		}
		/* A soft intent ([soft] intent_window): the broker's kernel
		 * call makes it, so destroying it stays the broker's. */
		ret = objects_add(c, x, (enum ibc_obj_kind)q->kind, intent,
				  x->dev->broker_objects, q->handle, &r->why,
				  &o);
		if (ret < 0)
			return ret;
		if (q->n_uses) {
			ret = obj_note_uses(c, q, o, r);
			if (ret < 0)
				return ret;
		}
		sink_obj_saved(c->core, o);
		out->object_id = o->id;
		out->handle = o->handle;
		break;
	default:
		return reply_error(r, -EINVAL,
				   "creation mode %d is not CREATE, INTENT or "
				   "TRACK",
				   (int)q->mode);
	}
	if (ret < 0)
		return ret;
	r->msg.body_case = RDMAB__REPLY__BODY_OBJ_CREATE;
	r->msg.obj_create = out;
	return 0;
}

int h_obj_register(struct client *c, const Rdmab__Request *req,
		   struct wire_fds *fds, struct reply *r)
{
	const Rdmab__ObjRegisterRequest *q = req->obj_register;
	Rdmab__ObjRegisterReply *out = reply_alloc(r, sizeof(*out));
	struct why why;
	int ret;

	if (!out)
		return reply_error(r, -ENOMEM, "out of memory");
	ret = objects_register_request(c, q->object_id, q->handle, &why);
	if (ret < 0)
		return reply_error(r, ret, "%s", why.text);
	rdmab__obj_register_reply__init(out);
	r->msg.body_case = RDMAB__REPLY__BODY_OBJ_REGISTER;
	r->msg.obj_register = out;
	return 0;
}

int h_obj_destroy(struct client *c, const Rdmab__Request *req,
		  struct wire_fds *fds, struct reply *r)
{
	Rdmab__ObjDestroyReply *out = reply_alloc(r, sizeof(*out));
	struct why why;
	int ret;

	if (!out)
		return reply_error(r, -ENOMEM, "out of memory");
	ret = objects_destroy_request(c, req->obj_destroy->object_id, &why);
	if (ret < 0)
		return reply_error(r, ret, "%s", why.text);
	rdmab__obj_destroy_reply__init(out);
	r->msg.body_case = RDMAB__REPLY__BODY_OBJ_DESTROY;
	r->msg.obj_destroy = out;
	return 0;
}

static bool obj_listed(const struct obj *o, const struct client *c, bool admin,
		       const Rdmab__ListObjectsRequest *q)
{
	const struct domain *d = o->ctx->domain;

	if (!admin && d != c->domain)
		return false;
	if (q->client_id && o->owner->client_id != q->client_id)
		return false;
	return !*q->domain || strcmp(q->domain, d->name) == 0;
}

/* The first record of context *@x or of the contexts after it, *@x
 * moving on; NULL past the last. */
static struct obj *obj_first_of(struct dctx **x)
{
	for (; *x; *x = TAILQ_NEXT(*x, link))
		if (!TAILQ_EMPTY(&(*x)->objs))
			return TAILQ_FIRST(&(*x)->objs);
	return NULL;
}

static struct obj *obj_next_of(struct obj *o, struct dctx **x)
{
	struct obj *next = TAILQ_NEXT(o, ctx_link);

	if (next)
		return next;
	*x = TAILQ_NEXT(*x, link);
	return obj_first_of(x);
}

int h_list_objects(struct client *c, const Rdmab__Request *req,
		   struct wire_fds *fds, struct reply *r)
{
	const Rdmab__ListObjectsRequest *q = req->list_objects;
	struct registry *reg = c->core->registry;
	bool admin = policy_is_admin(c->core, c);
	Rdmab__ListObjectsReply *out = reply_alloc(r, sizeof(*out));
	Rdmab__ObjectInfo *infos, **ptrs;
	char(*cgroups)[CGROUP_SHOWN_MAX];
	uint64_t now = objects_now_usec();
	size_t n = 0, cgroup_bytes = 0;
	bool full = false;
	uint32_t idx = 0;
	struct dctx *x;
	struct obj *o;

	infos = reply_alloc(r, sizeof(*infos) * OBJ_LIST_PAGE);
	ptrs = reply_alloc(r, sizeof(*ptrs) * OBJ_LIST_PAGE);
	cgroups = reply_alloc(r, sizeof(*cgroups) * OBJ_LIST_PAGE);
	if (!out || !infos || !ptrs || !cgroups)
		return reply_error(r, -ENOMEM, "out of memory");
	rdmab__list_objects_reply__init(out);
	/* A member walks its domain's contexts only: what other domains
	 * hold costs it nothing. */
	x = admin ? NULL : TAILQ_FIRST(&c->domain->ctxs);
	o = admin ? TAILQ_FIRST(&reg->objs) : obj_first_of(&x);
	for (; o; o = admin ? TAILQ_NEXT(o, link) : obj_next_of(o, &x)) {
		Rdmab__ObjectInfo *oi = &infos[n];
		const struct client *oc = o->owner->conn;

		c->core->list_visits++;
		if (!obj_listed(o, c, admin, q))
			continue;
		if (idx++ < q->offset || full)
			continue;
		rdmab__object_info__init(oi);
		if (oc && oc->cgroup) {
			oi->cgroup_truncated =
				cgroup_show(cgroups[n], oc->cgroup);
			cgroup_bytes += strlen(cgroups[n]);
			/* The next page starts with it. */
			if (cgroup_bytes > OBJ_LIST_CGROUP_BYTES) {
				full = true;
				continue;
			}
			oi->cgroup = cgroups[n];
		}
		oi->id = o->id;
		oi->kind = o->kind;
		oi->handle = o->handle;
		oi->client_id = o->owner->client_id;
		oi->pid = (uint32_t)o->owner->pid;
		oi->context_id = o->ctx->id;
		oi->domain = o->ctx->domain->name;
		oi->device = o->ctx->dev->name;
		oi->state = (Rdmab__ObjectInfo__State)obj_state(o);
		oi->age_usec = now - o->born_usec;
		ptrs[n++] = oi;
		full = n == OBJ_LIST_PAGE;
	}
	out->objects = ptrs;
	out->n_objects = n;
	out->total = idx;
	r->msg.body_case = RDMAB__REPLY__BODY_LIST_OBJECTS;
	r->msg.list_objects = out;
	return 0;
}

/* --- the soft device's intent window ([soft] intent_window) ----------- */

/*
 * The kernel call of a soft intent: make the object as a verbs client's
 * kernel call would, without registering it. Until the client's
 * ObjRegisterRequest is read the object exists and the registry knows
 * only the intent: a death in between leaves it unaccounted
 * (daemon/registry/unaccounted.c), as on a verbs device.
 */
int h_obj_kernel_call(struct client *c, const Rdmab__Request *req,
		      struct wire_fds *fds, struct reply *r)
{
	const Rdmab__ObjKernelCallRequest *q = req->obj_kernel_call;
	Rdmab__ObjCreateReply *out = reply_alloc(r, sizeof(*out));
	Rdmab__ObjAttr *given = reply_alloc(r, sizeof(*given));
	struct obj *o = objects_find(c, q->object_id);
	struct why why = { 0, "" };
	struct obj_spec spec = { 0 };
	struct obj_made made;
	int ret;

	if (!out || !given)
		return reply_error(r, -ENOMEM, "out of memory");
	if (!o)
		return reply_error(r, -ENOENT,
				   "object %" PRIu64 " is not one of this "
				   "session's",
				   q->object_id);
	if (!o->intent || !o->made_here || o->window_made)
		return reply_error(r, -EINVAL,
				   "object %" PRIu64 " is not an intent "
				   "waiting for its kernel call on a soft "
				   "device",
				   q->object_id);
	ret = dctx_usable(o->ctx, &r->why);
	if (ret < 0)
		return ret;
	if (q->n_uses > OBJ_MAX_USES)
		return reply_error(r, -EINVAL,
				   "an object uses at most %d others, not %zu",
				   OBJ_MAX_USES, q->n_uses);
	spec.kind = o->kind;
	obj_attr_from_wire(&spec.attr, q->attr);
	spec.import = dctx_conn_import(c, o->ctx);
	ret = resolve_uses(c, o->ctx, q->uses, q->n_uses, &spec, r);
	if (ret < 0)
		return ret;
	ret = o->ctx->dev->ctx_ops->obj_create(o->ctx->dc, &spec, &made, &why);
	if (ret < 0)
		return reply_error(r, ret, "%s", why.text);
	o->handle = made.handle;
	o->window_made = true;
	sink_obj_made(c->core, o, &spec, &made, q->attr);
	obj_import_grew(c->core, o->ctx, &spec);
	rdmab__obj_create_reply__init(out);
	made_to_wire(out, o, &made, given);
	r->msg.body_case = RDMAB__REPLY__BODY_OBJ_KERNEL_CALL;
	r->msg.obj_kernel_call = out;
	return 0;
}
