// SPDX-License-Identifier: MIT
/*
 * The soft device's side of the library: the context is the domain's sealed
 * memfd; the daemon is the device's kernel.
 */
#include "config.h"

#include <errno.h>
#include <unistd.h>

#include "libclient/ctx.h"
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

const struct ibc_ops ibc_soft_ops = {
	.name = "soft",
	.attach = soft_attach,
	.detach = soft_detach,
};
