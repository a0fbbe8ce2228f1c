/* SPDX-License-Identifier: MIT */
/*
 * A context and the table of operations behind it. Each device kind has its
 * implementation (verbs.c, soft.c); generic code calls through ctx->ops and
 * never asks which kind it has.
 */
#ifndef IBC_CTX_H
#define IBC_CTX_H

#include "libclient/client.h"

struct ibv_context;
struct ibv_pd;

struct ibc_ops {
	/* For sentences: "soft", "verbs", "own". */
	const char *name;
	/*
	 * Make the context descriptor the broker sent this process's own;
	 * consumes @fd on every path. May switch ctx->ops (a verbs context
	 * that cannot be imported is opened here instead).
	 */
	int (*attach)(struct ibc_ctx *ctx, int fd);
	/* Close this process's descriptors of the context. */
	void (*detach)(struct ibc_ctx *ctx);
};

extern const struct ibc_ops ibc_soft_ops;
extern const struct ibc_ops ibc_verbs_ops;
extern const struct ibc_ops ibc_own_ops;

struct ibc_ctx {
	struct ibc_client *client;
	struct ibc_ctx *next;
	const struct ibc_ops *ops;
	struct ibc_caps caps;
	uint32_t pd_handle;
	/* verbs: the imported or own context, and the domain's PD */
	struct ibv_context *vctx;
	struct ibv_pd *vpd;
	/* soft: the context memfd */
	int soft_fd;
	/* The device is gone: this process's descriptors are closed. */
	bool removed;
};

#endif
