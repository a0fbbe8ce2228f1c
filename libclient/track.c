// SPDX-License-Identifier: MIT
/*
 * ibc_track and ibc_untrack: objects the application made with raw
 * libibverbs on a shared context, handed to the broker's registry so that
 * they are destroyed when the process dies, and handed back before the
 * application destroys them.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "common/verbs/verbs-err.h"
#include "libclient/objects.h"

/* The context and handle libibverbs keeps in each kind's structure. */
static int ibc_track_fields(enum ibc_obj_kind kind, void *obj,
			    struct ibv_context **ret_ctx, uint32_t *ret_handle)
{
	switch (kind) {
	case IBC_OBJ_PD:
		*ret_ctx = ((struct ibv_pd *)obj)->context;
		*ret_handle = ((struct ibv_pd *)obj)->handle;
		return 0;
	case IBC_OBJ_MR:
		*ret_ctx = ((struct ibv_mr *)obj)->context;
		*ret_handle = ((struct ibv_mr *)obj)->handle;
		return 0;
	case IBC_OBJ_MW:
		*ret_ctx = ((struct ibv_mw *)obj)->context;
		*ret_handle = ((struct ibv_mw *)obj)->handle;
		return 0;
	case IBC_OBJ_CQ:
		*ret_ctx = ((struct ibv_cq *)obj)->context;
		*ret_handle = ((struct ibv_cq *)obj)->handle;
		return 0;
	case IBC_OBJ_QP:
		*ret_ctx = ((struct ibv_qp *)obj)->context;
		*ret_handle = ((struct ibv_qp *)obj)->handle;
		return 0;
	case IBC_OBJ_SRQ:
		*ret_ctx = ((struct ibv_srq *)obj)->context;
		*ret_handle = ((struct ibv_srq *)obj)->handle;
		return 0;
	case IBC_OBJ_WQ:
		*ret_ctx = ((struct ibv_wq *)obj)->context;
		*ret_handle = ((struct ibv_wq *)obj)->handle;
		return 0;
	case IBC_OBJ_AH:
		*ret_ctx = ((struct ibv_ah *)obj)->context;
		*ret_handle = ((struct ibv_ah *)obj)->handle;
		return 0;
	default:
		return ibc_set_error(-EINVAL,
				     "objects of kind %u cannot be tracked: "
				     "PD, MR, MW, CQ, QP, SRQ, WQ and AH can",
				     (unsigned int)kind);
	}
}

/* Under ctx->lock: is @vobj known to the library already? */
static int ibc_track_known(struct ibc_ctx *ctx, enum ibc_obj_kind kind,
			   void *vobj)
{
	for (struct ibc_obj *o = ctx->objs; o; o = o->next) {
		if (o->vobj != vobj || o->kind != kind)
			continue;
		if (o->tracked)
			return ibc_set_error(-EEXIST,
					     "this %s is tracked "
					     "already",
					     ibc_obj_kind_name(kind));
		return ibc_set_error(-EINVAL,
				     "this %s was made by the library, which "
				     "registered it already",
				     ibc_obj_kind_name(kind));
	}
	return 0;
}

IBC_EXPORT int ibc_track(struct ibc_ctx *ctx, enum ibc_obj_kind kind, void *obj)
{
	struct ibv_context *vctx = NULL;
	struct ibc_obj *o;
	uint32_t handle = 0;
	int err;

	if (!ctx || !obj)
		return ibc_set_error(-EINVAL, "ctx or obj is NULL");
	if (ibc_stale(ctx->client))
		return ibc_stale_error(ctx->client);
	err = ibc_track_fields(kind, obj, &vctx, &handle);
	if (err < 0)
		return err;
	if (ibc_ctx_removed(ctx))
		return ibc_ctx_gone(ctx);
	if (!ctx->vctx) {
		/* The soft device's answer, without reading @obj. */
		struct ibc_obj probe = { .ctx = ctx, .kind = kind };

		return ctx->ops->track(&probe);
	}
	if (vctx != ctx->vctx)
		return ibc_set_error(-EINVAL,
				     "the %s belongs to another libibverbs "
				     "context than %s's (ibc_verbs_context)",
				     ibc_obj_kind_name(kind), ctx->caps.device);
	if (kind == IBC_OBJ_PD && obj == ctx->vpd)
		return ibc_set_error(-EINVAL, "the domain's PD is the "
					      "broker's: it cannot be tracked");
	o = calloc(1, sizeof(*o));
	if (!o)
		return ibc_set_error(-ENOMEM, "out of memory");
	o->ctx = ctx;
	o->kind = kind;
	o->handle = handle;
	o->vobj = obj;
	o->tracked = true;
	/* Linked before the broker is asked, so that a concurrent
	 * ibc_track of the same object is refused. */
	pthread_mutex_lock(&ctx->lock);
	err = ibc_track_known(ctx, kind, obj);
	if (err == 0)
		ibc_obj_link_locked(o);
	pthread_mutex_unlock(&ctx->lock);
	if (err < 0) {
		free(o);
		return err;
	}
	err = ctx->ops->track(o);
	if (err < 0) {
		free(ibc_obj_unlink_tracked(ctx, kind, obj));
		return err;
	}
	ibc_clear_error();
	return 0;
}

IBC_EXPORT int ibc_untrack(struct ibc_ctx *ctx, enum ibc_obj_kind kind,
			   void *obj)
{
	struct ibc_obj *o;
	int err;

	if (!ctx || !obj)
		return ibc_set_error(-EINVAL, "ctx or obj is NULL");
	if (ibc_stale(ctx->client))
		return ibc_stale_error(ctx->client);
	o = ibc_obj_unlink_tracked(ctx, kind, obj);
	if (!o)
		return ibc_set_error(-ENOENT, "this %s is not tracked in %s",
				     ibc_obj_kind_name(kind), ctx->caps.device);
	err = ibc_ctx_removed(ctx) ? 0 : ctx->ops->untrack(o);
	if (err < 0) {
		/* Still the broker's: the application must not destroy it,
		 * and the broker will when this process exits. */
		ibc_obj_link(o);
		return err;
	}
	free(o);
	ibc_clear_error();
	return 0;
}

/* --- the interposer's registration (interpose/) ------------------------ */

/*
 * What ibc_track does, in the constructors' order instead: the intent is
 * declared before @make calls the kernel, so that a process killed inside
 * the call leaves an intent the broker counts (unaccounted), never a
 * handle nobody names. On a context of this process's own nothing is
 * registered: the kernel frees it with the process.
 */
int ibc_track_make(struct ibc_ctx *ctx, enum ibc_obj_kind kind,
		   void *(*make)(void *arg), void *arg, void **ret_obj)
{
	struct ibv_context *vctx = NULL;
	struct ibc_obj *o;
	uint32_t handle = 0;
	void *obj;
	int err;

	/* As the constructors do (objects.c): an ibv_fork_init() from now
	 * on is too late, whatever the context. */
	if (kind == IBC_OBJ_MR || kind == IBC_OBJ_CQ || kind == IBC_OBJ_QP ||
	    kind == IBC_OBJ_SRQ || kind == IBC_OBJ_WQ)
		ibc_fork_note_pin();
	if (!ctx->caps.shared || !ctx->vctx) {
		obj = verbs_try(make(arg));
		if (!obj)
			return verbs_err(EIO);
		*ret_obj = obj;
		return 0;
	}
	o = calloc(1, sizeof(*o));
	if (!o)
		return ibc_set_error(-ENOMEM, "out of memory");
	o->ctx = ctx;
	o->kind = kind;
	o->tracked = true;
	err = ibc_obj_request(o, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT, NULL,
			      NULL);
	if (err < 0) {
		free(o);
		return err;
	}
	obj = verbs_try(make(arg));
	if (!obj) {
		err = verbs_err(EIO);
		/* Cancel the intent. */
		ibc_obj_destroy_request(o, false);
		free(o);
		return ibc_set_error(err, "%s: creating a %s failed: %s",
				     ctx->caps.device, ibc_obj_kind_name(kind),
				     strerror(-err));
	}
	/* The kinds the interposer makes all have their fields. */
	ibc_track_fields(kind, obj, &vctx, &handle);
	o->handle = handle;
	o->vobj = obj;
	ibc_obj_link(o);
	ibc_obj_register_nowait(o);
	*ret_obj = obj;
	return 0;
}

/*
 * Unregister @obj without waiting, then @kill it; a kill that fails hands
 * it back to the registry (TRACK), as the library's own destructors do,
 * except for ENOENT: the kernel has no such handle any more (another
 * process of the domain destroyed it by handle in the shared context), and
 * a registration of it would have the broker destroy, once this process
 * exits, whatever object the kernel gives that handle next.
 * Returns @kill's answer (0 or an errno value, as libibverbs' destroys).
 */
int ibc_track_kill(struct ibc_ctx *ctx, enum ibc_obj_kind kind, void *obj,
		   int (*kill)(void *obj))
{
	struct ibc_obj *o = NULL;
	int ret;

	if (ctx->caps.shared && ctx->vctx)
		o = ibc_obj_unlink_tracked(ctx, kind, obj);
	if (o && o->id)
		ibc_obj_destroy_request(o, false);
	ret = kill(obj);
	if (!o)
		return ret;
	if (ret == 0 || ret == ENOENT) {
		free(o);
		return ret;
	}
	o->id = 0;
	if (ibc_obj_request(o, RDMAB__OBJ_CREATE_REQUEST__MODE__TRACK, NULL,
			    NULL) == 0)
		ibc_obj_link(o);
	else
		free(o);
	return ret;
}
