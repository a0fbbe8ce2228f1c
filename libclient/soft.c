// SPDX-License-Identifier: MIT
/*
 * The soft device's side of the library: the context is the domain's sealed
 * memfd; the daemon is the device's kernel.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>

#include "libclient/dm.h"
#include "libclient/objects.h"
#include "daemon/device/soft/soft.h"

static int soft_attach(struct ibc_ctx *ctx, int fd)
{
	struct soft_ctx_header h;

	/* The broker seals it; its header names this very context. */
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    h.magic != SOFT_CTX_MAGIC || h.version != SOFT_CTX_VERSION ||
	    h.context_id != ctx->caps.context_id) {
		close(fd);
		return ibc_set_error(-EPROTO,
				     "%s: the broker sent a descriptor that "
				     "is not a soft context",
				     ctx->caps.device);
	}
	ctx->soft_fd = fd;
	ctx->soft_flags = h.flags;
	ctx->caps.shared = true;
	return 0;
}

static void soft_detach(struct ibc_ctx *ctx)
{
	if (ctx->soft_fd >= 0)
		close(ctx->soft_fd);
	ctx->soft_fd = -1;
}

/* The daemon is the soft device's kernel: it creates and registers at
 * once, and answers with what it gave. */
/*
 * A test hook for the intent window: IBC_TEST_SOFT_STOP=intent stops this
 * process (SIGSTOP) once the intent is declared, =kernel once the kernel
 * call made the object, so that a test can kill it exactly there. Read
 * only where the broker opened the window ([soft] intent_window, off by
 * default), which only a test configuration does.
 */
static void soft_test_stop(const char *where)
{
	const char *stop = getenv("IBC_TEST_SOFT_STOP");

	if (stop && strcmp(stop, where) == 0)
		raise(SIGSTOP);
}

/* Declare the intent: no uses yet, they go with the kernel call. */
static int soft_intent(struct ibc_obj *o)
{
	Rdmab__ObjCreateRequest cr = RDMAB__OBJ_CREATE_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct ibc_reply r;
	int err;

	cr.context_id = o->ctx->caps.context_id;
	cr.kind = (uint32_t)o->kind;
	cr.mode = RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT;
	req.body_case = RDMAB__REQUEST__BODY_OBJ_CREATE;
	req.obj_create = &cr;
	err = ibc_call(o->ctx->client, &req, 0, &r);
	if (err < 0)
		return err;
	if (r.reply->body_case != RDMAB__REPLY__BODY_OBJ_CREATE ||
	    !r.reply->obj_create->object_id)
		err = ibc_set_error(-EPROTO, "the broker answered an intent "
					     "without an object id");
	else
		o->id = r.reply->obj_create->object_id;
	ibc_reply_free(&r);
	return err;
}

/* The soft device's kernel call: the broker makes the object of intent
 * o->id and answers as a create does. */
static int soft_kernel_call(struct ibc_obj *o, const struct ibc_obj_args *a,
			    struct ibc_obj_result *res)
{
	Rdmab__ObjKernelCallRequest kc = RDMAB__OBJ_KERNEL_CALL_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	uint64_t uses[IBC_OBJ_MAX_USES + 1];
	const Rdmab__ObjCreateReply *oc;
	struct ibc_reply r;
	int err;

	kc.object_id = o->id;
	for (unsigned int i = 0; i < o->n_uses; i++)
		uses[i] = o->uses[i]->id;
	kc.n_uses = o->n_uses;
	if (o->on)
		uses[kc.n_uses++] = o->on->id;
	kc.uses = uses;
	/* Packing only reads it. */
	kc.attr = (Rdmab__ObjAttr *)&a->attr;
	req.body_case = RDMAB__REQUEST__BODY_OBJ_KERNEL_CALL;
	req.obj_kernel_call = &kc;
	err = ibc_call(o->ctx->client, &req, 0, &r);
	if (err < 0)
		return err;
	oc = r.reply->obj_kernel_call;
	if (r.reply->body_case != RDMAB__REPLY__BODY_OBJ_KERNEL_CALL) {
		err = ibc_set_error(-EPROTO, "the broker answered a kernel "
					     "call with another reply");
	} else {
		o->handle = oc->handle;
		if (res) {
			res->qp_num = oc->qp_num;
			res->lkey = oc->lkey;
			res->rkey = oc->rkey;
			if (oc->attr)
				res->attr = *oc->attr;
		}
	}
	ibc_reply_free(&r);
	return err;
}

/*
 * The verbs path's window, on the soft device ([soft] intent_window):
 * intent, kernel call, register without waiting. A death between the
 * kernel call and the register leaves an object the registry cannot name
 * (an unaccounted object, daemon/registry/unaccounted.c).
 */
static int soft_create_window(struct ibc_obj *o, const struct ibc_obj_args *a,
			      struct ibc_obj_result *res)
{
	char why[256];
	int err = soft_intent(o);

	if (err < 0)
		return err;
	soft_test_stop("intent");
	err = soft_kernel_call(o, a, res);
	if (err < 0) {
		/* Cancel the intent; the device's sentence stays. */
		snprintf(why, sizeof(why), "%s", ibc_last_error());
		ibc_obj_destroy_request(o, false);
		o->id = 0;
		return ibc_set_error(err, "%s", why);
	}
	soft_test_stop("kernel");
	ibc_obj_register_nowait(o);
	return 0;
}

static int soft_create(struct ibc_obj *o, const struct ibc_obj_args *a,
		       struct ibc_obj_result *res)
{
	if (o->ctx->soft_flags & SOFT_CTX_INTENT_WINDOW)
		return soft_create_window(o, a, res);
	return ibc_obj_request(o, RDMAB__OBJ_CREATE_REQUEST__MODE__CREATE,
			       &a->attr, res);
}

/* Waits: the device's refusal (EBUSY, ENOENT) is the answer. */
static int soft_destroy(struct ibc_obj *o)
{
	return ibc_obj_destroy_request(o, true);
}

/* The broker dropped the records with the device. */
static void soft_destroy_removed(struct ibc_obj *o)
{
	(void)o;
}

static int soft_track(struct ibc_obj *o)
{
	return ibc_set_error(-EOPNOTSUPP,
			     "%s is the soft device: it has no libibverbs "
			     "objects to track",
			     o->ctx->caps.device);
}

const struct ibc_ops ibc_soft_ops = {
	.name = "soft",
	.attach = soft_attach,
	.detach = soft_detach,
	.create = soft_create,
	.destroy = soft_destroy,
	.destroy_removed = soft_destroy_removed,
	.track = soft_track,
	.untrack = soft_track,
	.family_ops = { [IBC_FAMILY_DM] = &ibc_soft_dm_ops },
};
