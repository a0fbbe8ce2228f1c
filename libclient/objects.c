// SPDX-License-Identifier: MIT
/*
 * The common path of every constructor and destructor: the context's list
 * of objects, which of them use which (a CQ in use by a QP cannot go), the
 * teardown at close, disconnect and device removal, and the broker
 * requests that keep the registry exact (proto/README.md, "The registry
 * invariant").
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "libclient/family.h"
#include "libclient/objects.h"

IBC_EXPORT const char *ibc_obj_kind_str(enum ibc_obj_kind kind)
{
	/* The core's; a family names its own kind (family.h). */
	static const char *const names[] = {
		[IBC_OBJ_NONE] = "none", [IBC_OBJ_QP] = "QP",
		[IBC_OBJ_CQ] = "CQ",	 [IBC_OBJ_SRQ] = "SRQ",
		[IBC_OBJ_WQ] = "WQ",	 [IBC_OBJ_MR] = "MR",
		[IBC_OBJ_PD] = "PD",	 [IBC_OBJ_RWQ_IND_TBL] = "IND_TBL",
		[IBC_OBJ_FLOW] = "FLOW", [IBC_OBJ_MW] = "MW",
		[IBC_OBJ_AH] = "AH",	 [IBC_OBJ_CONTEXT] = "context",
	};
	const struct ibc_family *f;

	if ((unsigned int)kind < sizeof(names) / sizeof(names[0]) &&
	    names[kind])
		return names[kind];
	f = ibc_families_of_kind(kind);
	return f ? f->kind_name : "unknown";
}

const char *ibc_obj_kind_name(enum ibc_obj_kind kind)
{
	return kind == IBC_OBJ_NONE ? "object" : ibc_obj_kind_str(kind);
}

void ibc_obj_link_locked(struct ibc_obj *o)
{
	struct ibc_ctx *ctx = o->ctx;

	o->prev = NULL;
	o->next = ctx->objs;
	if (ctx->objs)
		ctx->objs->prev = o;
	ctx->objs = o;
}

static void ibc_obj_unlink_locked(struct ibc_obj *o)
{
	if (o->prev)
		o->prev->next = o->next;
	else
		o->ctx->objs = o->next;
	if (o->next)
		o->next->prev = o->prev;
	o->prev = o->next = NULL;
}

void ibc_obj_link(struct ibc_obj *o)
{
	pthread_mutex_lock(&o->ctx->lock);
	ibc_obj_link_locked(o);
	pthread_mutex_unlock(&o->ctx->lock);
}

struct ibc_obj *ibc_obj_unlink_tracked(struct ibc_ctx *ctx,
				       enum ibc_obj_kind kind, void *vobj)
{
	struct ibc_obj *o;

	pthread_mutex_lock(&ctx->lock);
	for (o = ctx->objs; o; o = o->next)
		if (o->tracked && o->kind == kind && o->vobj == vobj)
			break;
	if (o)
		ibc_obj_unlink_locked(o);
	pthread_mutex_unlock(&ctx->lock);
	return o;
}

int ibc_obj_check_use(struct ibc_ctx *ctx, const struct ibc_obj *user,
		      enum ibc_obj_kind kind, const char *what)
{
	if (user->ctx != ctx)
		return ibc_set_error(-EINVAL,
				     "%s is a %s of another context (%" PRIu64
				     ", not %" PRIu64 ")",
				     what, ibc_obj_kind_name(kind),
				     user->ctx->caps.context_id,
				     ctx->caps.context_id);
	/* A rekey's -ESTALE or a removal's -ENODEV. */
	if (user->dead && ibc_ctx_removed(user->ctx))
		return ibc_ctx_gone(user->ctx);
	if (user->dead)
		return ibc_set_error(-ENODEV,
				     "%s: the %s's device %s was removed", what,
				     ibc_obj_kind_name(kind), ctx->caps.device);
	return 0;
}

/* Take or drop @o's uses; ctx->lock held. Taking fails when one of them
 * is being destroyed. */
static int ibc_obj_take_uses(struct ibc_obj *o)
{
	for (unsigned int i = 0; i < o->n_uses; i++) {
		const struct ibc_obj *u = o->uses[i];

		if (u->destroying)
			return ibc_set_error(-EBUSY,
					     "the %s it would use is being "
					     "destroyed",
					     ibc_obj_kind_name(u->kind));
	}
	for (unsigned int i = 0; i < o->n_uses; i++)
		o->uses[i]->users++;
	return 0;
}

static void ibc_obj_drop_uses(struct ibc_obj *o)
{
	for (unsigned int i = 0; i < o->n_uses; i++)
		o->uses[i]->users--;
}

/* Does @o hold host memory pinned for the device? An MR on host memory,
 * and on verbs devices the queues, whose buffers mlx5 pins (the library
 * does not ask which provider it has). An MR on a family's resource
 * (device memory) pins nothing. */
static bool ibc_obj_pins(const struct ibc_obj *o, const struct ibc_obj_args *a)
{
	switch (o->kind) {
	case IBC_OBJ_MR:
		return a->mr_addr != NULL;
	case IBC_OBJ_CQ:
	case IBC_OBJ_QP:
	case IBC_OBJ_WQ:
	case IBC_OBJ_SRQ:
		return o->ctx->caps.kind == IBC_DEVICE_VERBS;
	default:
		return false;
	}
}

int ibc_obj_create(struct ibc_obj *o, const struct ibc_obj_args *a,
		   struct ibc_obj_result *res)
{
	struct ibc_ctx *ctx = o->ctx;
	int err;

	if (ibc_stale(ctx->client))
		return ibc_stale_error(ctx->client);
	/* A rekey or removal closes the context only once this is done. */
	err = ibc_ctx_enter(ctx, true);
	if (err < 0)
		return err;
	/* The uses are taken before the device call, so that a concurrent
	 * destroy of one of them is refused instead of racing it. */
	if (o->n_uses) {
		pthread_mutex_lock(&ctx->lock);
		err = ibc_obj_take_uses(o);
		pthread_mutex_unlock(&ctx->lock);
		if (err < 0)
			goto out;
	}
	/* Before the pin exists: an ibc_fork_init() in another thread then
	 * refuses instead of enabling fork safety too late. */
	if (ibc_obj_pins(o, a))
		ibc_fork_note_pin();
	err = ctx->ops->create(o, a, res);
	pthread_mutex_lock(&ctx->lock);
	if (err < 0)
		ibc_obj_drop_uses(o);
	else
		ibc_obj_link_locked(o);
	pthread_mutex_unlock(&ctx->lock);
	if (err == 0)
		ibc_clear_error();
out:
	ibc_ctx_leave(ctx);
	return err;
}

/* What uses an object of @kind, plural, for a sentence. */
static const char *ibc_obj_users_name(enum ibc_obj_kind kind)
{
	const struct ibc_family *f;

	if (kind == IBC_OBJ_SRQ)
		return "QPs";
	f = ibc_families_of_kind(kind);
	return f && f->kind_users ? f->kind_users : "QPs or WQs";
}

/* Refuse to destroy @o while this process's objects use it, and keep new
 * users away while it goes. */
static int ibc_obj_begin_destroy(struct ibc_obj *o)
{
	struct ibc_ctx *ctx = o->ctx;
	int err = 0;

	pthread_mutex_lock(&ctx->lock);
	if (o->destroying)
		err = ibc_set_error(-EBUSY,
				    "the %s is being destroyed by "
				    "another thread",
				    ibc_obj_kind_name(o->kind));
	else if (o->users)
		err = ibc_set_error(-EBUSY,
				    "the %s (handle %u) is in use by this "
				    "process's %s (uses: %u): destroy them "
				    "first",
				    ibc_obj_kind_name(o->kind), o->handle,
				    ibc_obj_users_name(o->kind), o->users);
	else
		o->destroying = true;
	pthread_mutex_unlock(&ctx->lock);
	return err;
}

int ibc_obj_destroy(struct ibc_obj *o)
{
	struct ibc_ctx *ctx = o->ctx;
	struct ibc_family_res *on = NULL;
	bool gone = false;
	int err = 0;

	if (ibc_stale(ctx->client))
		return ibc_stale_error(ctx->client);
	/* Entered before the mark: a teardown past its wait holds the
	 * client's lock until the object is dead. */
	ibc_ctx_enter(ctx, false);
	err = ibc_obj_begin_destroy(o);
	if (err < 0)
		goto out;
	/* A dead object's kernel side went with its device. */
	if (!o->dead)
		err = ctx->ops->destroy(o);
	/* -ENOENT: the device no longer had it (destroyed by handle
	 * against the rules) and the broker dropped its record. Kept, it
	 * would be destroyed by handle again at ibc_close, when the handle
	 * may name another object of the domain. */
	gone = err == 0 || err == -ENOENT;
	pthread_mutex_lock(&ctx->lock);
	o->destroying = false;
	if (gone) {
		ibc_obj_drop_uses(o);
		ibc_obj_unlink_locked(o);
		on = o->on;
	}
	pthread_mutex_unlock(&ctx->lock);
out:
	ibc_ctx_leave(ctx);
	if (!gone)
		return err;
	if (on)
		ibc_families_on_gone(on);
	if (err == 0)
		ibc_clear_error();
	free(o);
	return err;
}

/* Teardown order: what uses others goes first. The core's kinds; the
 * families' objects of the list come after them (family.h). */
static const enum ibc_obj_kind ibc_teardown_order[] = {
	IBC_OBJ_QP, IBC_OBJ_SRQ, IBC_OBJ_WQ, IBC_OBJ_CQ, IBC_OBJ_MR,
};

#define IBC_TEARDOWN_CORE                                                      \
	(sizeof(ibc_teardown_order) / sizeof(ibc_teardown_order[0]))

/* The kind the teardown destroys @k-th; IBC_OBJ_NONE past the last. */
static inline enum ibc_obj_kind ibc_teardown_kind(size_t k)
{
	return k < IBC_TEARDOWN_CORE ?
		       ibc_teardown_order[k] :
		       ibc_family_hooks.listed[k - IBC_TEARDOWN_CORE];
}

void ibc_ctx_destroy_objects(struct ibc_ctx *ctx, bool broker)
{
	enum ibc_obj_kind kind;

	/* The families' objects first: RSS tables use the context's WQs. */
	ibc_families_ctx_closing(ctx, broker);
	/* Called when no other thread uses the context (ibc_close,
	 * ibc_disconnect) or from the event dispatch: the list is walked
	 * again after every destroy, which may call the broker. The lock is
	 * kept from one kind to the next while nothing is found: a context
	 * without objects (every ibc_close of one) takes it once, and walks
	 * no kind. */
	pthread_mutex_lock(&ctx->lock);
	for (size_t k = 0;
	     ctx->objs && (kind = ibc_teardown_kind(k)) != IBC_OBJ_NONE; k++) {
		struct ibc_obj *o;

		for (;;) {
			for (o = ctx->objs; o; o = o->next)
				if (o->kind == kind && !o->tracked &&
				    !o->dead && !o->destroying)
					break;
			if (!o)
				break;
			/* Also on removal and rekey: an ibc_*_destroy in
			 * another thread must not destroy it too. */
			o->destroying = true;
			pthread_mutex_unlock(&ctx->lock);
			if (broker && ibc_stale(ctx->client)) {
				/* Inherited through fork(): the parent's
				 * object, of which only the memory here is
				 * this process's. */
				pthread_mutex_lock(&ctx->lock);
				ibc_obj_drop_uses(o);
				ibc_obj_unlink_locked(o);
				pthread_mutex_unlock(&ctx->lock);
				free(o);
			} else if (broker) {
				/* At close the broker's failure changes
				 * nothing: the object is released either
				 * way, and what the broker still holds goes
				 * when this process does. */
				ctx->ops->destroy(o);
				pthread_mutex_lock(&ctx->lock);
				ibc_obj_drop_uses(o);
				ibc_obj_unlink_locked(o);
				pthread_mutex_unlock(&ctx->lock);
				free(o);
			} else {
				ctx->ops->destroy_removed(o);
				/* ibc_obj_verbs() reads them in other
				 * threads. */
				pthread_mutex_lock(&ctx->lock);
				o->dead = true;
				o->vobj = NULL;
				o->destroying = false;
				pthread_mutex_unlock(&ctx->lock);
			}
			pthread_mutex_lock(&ctx->lock);
		}
	}
	pthread_mutex_unlock(&ctx->lock);
}

void ibc_ctx_free_objects(struct ibc_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	while (ctx->objs) {
		struct ibc_obj *o = ctx->objs;

		ibc_obj_unlink_locked(o);
		free(o);
	}
	pthread_mutex_unlock(&ctx->lock);
}

void *ibc_obj_verbs(struct ibc_obj *o, enum ibc_obj_kind kind)
{
	const char *name = ibc_obj_kind_name(kind);
	void *vobj;
	bool dead;

	if (!o) {
		ibc_set_error(-EINVAL, "the %s is NULL", name);
		errno = EINVAL;
		return NULL;
	}
	if (ibc_stale(o->ctx->client)) {
		ibc_stale_error(o->ctx->client);
		errno = ESTALE;
		return NULL;
	}
	/* ibc_dispatch() may be destroying it in another thread, on device
	 * removal. */
	pthread_mutex_lock(&o->ctx->lock);
	dead = o->dead;
	vobj = o->vobj;
	pthread_mutex_unlock(&o->ctx->lock);
	if (dead && ibc_ctx_removed(o->ctx)) {
		errno = -ibc_ctx_gone(o->ctx);
		return NULL;
	}
	if (dead) {
		ibc_set_error(-ENODEV, "the %s's device %s was removed", name,
			      o->ctx->caps.device);
		errno = ENODEV;
		return NULL;
	}
	if (!vobj) {
		ibc_set_error(-EOPNOTSUPP,
			      "%s is the soft device: its %s has no "
			      "libibverbs object",
			      o->ctx->caps.device, name);
		errno = EOPNOTSUPP;
		return NULL;
	}
	return vobj;
}

/* --- broker requests -------------------------------------------------- */

int ibc_obj_request(struct ibc_obj *o, Rdmab__ObjCreateRequest__Mode mode,
		    const Rdmab__ObjAttr *attr, struct ibc_obj_result *res)
{
	Rdmab__ObjCreateRequest cr = RDMAB__OBJ_CREATE_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	uint64_t uses[IBC_OBJ_MAX_USES + 1];
	const Rdmab__ObjCreateReply *oc;
	struct ibc_reply r;
	int err;

	cr.context_id = o->ctx->caps.context_id;
	cr.kind = (uint32_t)o->kind;
	cr.mode = mode;
	cr.handle =
		mode == RDMAB__OBJ_CREATE_REQUEST__MODE__TRACK ? o->handle : 0;
	for (unsigned int i = 0; i < o->n_uses; i++)
		uses[i] = o->uses[i]->id;
	cr.n_uses = o->n_uses;
	/* A family's resource it is made on (the broker's DM listing
	 * counts the MRs on a DM). */
	if (o->on && mode != RDMAB__OBJ_CREATE_REQUEST__MODE__TRACK)
		uses[cr.n_uses++] = o->on->id;
	cr.uses = uses;
	/* Packing only reads it. */
	cr.attr = (Rdmab__ObjAttr *)attr;
	req.body_case = RDMAB__REQUEST__BODY_OBJ_CREATE;
	req.obj_create = &cr;
	err = ibc_call(o->ctx->client, &req, 0, &r);
	if (err < 0)
		return err;
	oc = r.reply->obj_create;
	if (r.reply->body_case != RDMAB__REPLY__BODY_OBJ_CREATE ||
	    !oc->object_id) {
		err = ibc_set_error(-EPROTO, "the broker answered a create "
					     "without an object id");
		goto out;
	}
	o->id = oc->object_id;
	if (res) {
		o->handle = oc->handle;
		res->qp_num = oc->qp_num;
		res->lkey = oc->lkey;
		res->rkey = oc->rkey;
		if (oc->attr)
			res->attr = *oc->attr;
	}
out:
	ibc_reply_free(&r);
	return err;
}

void ibc_obj_register_nowait(struct ibc_obj *o)
{
	Rdmab__ObjRegisterRequest rr = RDMAB__OBJ_REGISTER_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	rr.object_id = o->id;
	rr.handle = o->handle;
	req.body_case = RDMAB__REQUEST__BODY_OBJ_REGISTER;
	req.obj_register = &rr;
	/* A broker that is gone counts the intent as unaccounted; the object
	 * works here all the same. */
	ibc_send_kept(o->ctx->client, &req);
}

int ibc_obj_destroy_request(struct ibc_obj *o, bool wait)
{
	Rdmab__ObjDestroyRequest dr = RDMAB__OBJ_DESTROY_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct ibc_reply r;
	int err;

	dr.object_id = o->id;
	req.body_case = RDMAB__REQUEST__BODY_OBJ_DESTROY;
	req.obj_destroy = &dr;
	if (!wait)
		return ibc_send_kept(o->ctx->client, &req);
	err = ibc_call(o->ctx->client, &req, 0, &r);
	if (err == 0)
		ibc_reply_free(&r);
	return err;
}
