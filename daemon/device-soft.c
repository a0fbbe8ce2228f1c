// SPDX-License-Identifier: MIT
/*
 * The soft device: a software RDMA device with ConnectX-6-like limits, for
 * machines without RDMA hardware. A context is a sealed memfd that every
 * client of the domain receives (as every importer of a verbs context
 * receives the same cmd_fd); its objects are records kept by the daemon.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "daemon/device.h"
#include "proto/soft.h"

/* ConnectX-6: 2^16 entries per indirection table (reported as the 2^13
 * that uverbs takes, see device_probe). */
#define SOFT_MAX_RSS_TABLE_SIZE (1u << 16)
/* The kernel numbers a context's objects from 0; the PD comes first. */
#define SOFT_PD_HANDLE 0

struct soft_ctx {
	struct device_ctx base;
	int fd;
};

static struct soft_ctx *soft_ctx_of(const struct device_ctx *ctx)
{
	return (struct soft_ctx *)ctx;
}

static int soft_ctx_open(struct device *dev, uint64_t ctx_id,
			 const char *domain, struct device_ctx **ret_ctx)
{
	struct soft_ctx_header h = {
		.magic = SOFT_CTX_MAGIC,
		.version = SOFT_CTX_VERSION,
		.pd_handle = SOFT_PD_HANDLE,
		.context_id = ctx_id,
	};
	struct soft_ctx *ctx;
	int ret;

	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->base.dev = dev;
	snprintf(h.device, sizeof(h.device), "%s", dev->name);
	snprintf(h.domain, sizeof(h.domain), "%s", domain);
	ctx->fd = memfd_create("rdmabroker-soft-context",
			       MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (ctx->fd < 0) {
		ret = -errno;
		goto fail;
	}
	if (pwrite(ctx->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    fcntl(ctx->fd, F_ADD_SEALS,
		  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) <
		    0) {
		ret = errno ? -errno : -EIO;
		goto fail;
	}
	*ret_ctx = &ctx->base;
	return 0;

fail:
	if (ctx->fd >= 0)
		close(ctx->fd);
	free(ctx);
	return ret;
}

static void soft_ctx_close(struct device_ctx *base)
{
	struct soft_ctx *ctx = soft_ctx_of(base);

	close(ctx->fd);
	free(ctx);
}

static int soft_ctx_fd(const struct device_ctx *base)
{
	return soft_ctx_of(base)->fd;
}

static uint32_t soft_ctx_pd_handle(const struct device_ctx *base)
{
	return SOFT_PD_HANDLE;
}

/* No events, always present, nothing to shut down: the defaults. */
static const struct device_ops soft_ops = {
	.ctx_open = soft_ctx_open,
};

static const struct device_ctx_ops soft_ctx_ops = {
	.close = soft_ctx_close,
	.fd = soft_ctx_fd,
	.pd_handle = soft_ctx_pd_handle,
};

int device_soft_probe(const struct device_config *cfg,
		      struct device_list *list)
{
	struct device *d = &list->dev[0];

	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), SOFT_DEVICE_NAME);
	d->kind = DEVICE_KIND_SOFT;
	device_set_ops(d, &soft_ops, &soft_ctx_ops);
	d->event_fd = -1;
	d->caps.max_dm_size = cfg->soft_max_dm_size;
	d->caps.xrc = true;
	d->caps.max_rss_table_size = SOFT_MAX_RSS_TABLE_SIZE;
	d->caps.rss_hash_fields =
		IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
		IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 |
		IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP |
		IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;
	d->caps.rss_hash_functions = IBV_RX_HASH_FUNC_TOEPLITZ;
	d->caps.import = true;
	d->caps.ports = 1;
	snprintf(d->caps.transport, sizeof(d->caps.transport), "software");
	list->kind = DEVICE_KIND_SOFT;
	list->n = 1;
	return 0;
}
