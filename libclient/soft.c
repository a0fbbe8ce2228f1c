// SPDX-License-Identifier: MIT
/*
 * The soft device's side of the library: the context is the domain's sealed
 * memfd; the daemon is the device's kernel.
 */
#include "config.h"

#include <errno.h>
#include <unistd.h>

#include "libclient/objects.h"
#include "proto/soft.h"

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
static int soft_create(struct ibc_obj *o, const struct ibc_obj_args *a,
		       struct ibc_obj_result *res)
{
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
};
