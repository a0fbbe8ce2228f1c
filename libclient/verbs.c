// SPDX-License-Identifier: MIT
/*
 * Verbs devices: the broker's context imported into this process
 * (ibv_import_device + ibv_import_pd), or, where it cannot be imported and
 * the client allows it, the device opened here (a context of its own).
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "common/verbs-import.h"
#include "libclient/ctx.h"

/* errno after a libibverbs call, or @fallback where it left none. */
static int verbs_errno(int fallback)
{
	return errno ? -errno : fallback;
}

/* Open the device in this process (IBC_CONNECT_ALLOW_OWN_CONTEXT). */
static int own_open(struct ibc_ctx *ctx)
{
	struct ibv_device **list;
	int n = 0, err = -ENODEV;

	errno = 0;
	list = ibv_get_device_list(&n);
	if (!list)
		return verbs_errno(-ENODEV);
	for (int i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), ctx->caps.device))
			continue;
		errno = 0;
		ctx->vctx = ibv_open_device(list[i]);
		/* Some provider paths fail without setting errno. */
		err = ctx->vctx ? 0 : verbs_errno(-ENODEV);
		break;
	}
	ibv_free_device_list(list);
	return err;
}

/* The import failed with @err: open the device here if that is allowed
 * and the failure is one of import's own. */
static int verbs_fall_back(struct ibc_ctx *ctx, int err)
{
	const char *dev = ctx->caps.device;
	int own;

	if (!(ctx->client->flags & IBC_CONNECT_ALLOW_OWN_CONTEXT) ||
	    (err != -EOPNOTSUPP && err != -EINVAL && err != -EPROTONOSUPPORT))
		return ibc_set_error(err,
				     "%s: ibv_import_device failed: %s; only "
				     "mlx5 devices with dynamic UARs can share "
				     "a context (connect with "
				     "IBC_CONNECT_ALLOW_OWN_CONTEXT to open "
				     "the device in this process instead)",
				     dev, strerror(-err));
	own = own_open(ctx);
	if (own < 0)
		return ibc_set_error(own,
				     "%s: the context cannot be imported (%s) "
				     "and opening the device here failed: %s",
				     dev, strerror(-err), strerror(-own));
	ctx->ops = &ibc_own_ops;
	ctx->caps.shared = false;
	return 0;
}

static int verbs_attach(struct ibc_ctx *ctx, int fd)
{
	const char *dev = ctx->caps.device;
	int err;

	/* Consumes fd on every path (libibverbs does not, always). */
	errno = 0;
	ctx->vctx = verbs_import_device(fd);
	if (!ctx->vctx) {
		err = verbs_errno(-EIO);
		if (err == -ENODEV)
			/* Not an import problem: this process's libibverbs
			 * does not see the device (no provider installed,
			 * sysfs hidden, an exclusive RDMA network
			 * namespace); its own open would fail the same
			 * way. */
			return ibc_set_error(err,
					     "%s: libibverbs in this process "
					     "does not see the device (is "
					     "ibverbs-providers installed, "
					     "/sys visible?)",
					     dev);
		return verbs_fall_back(ctx, err);
	}
	errno = 0;
	ctx->vpd = ibv_import_pd(ctx->vctx, ctx->pd_handle);
	if (!ctx->vpd) {
		err = verbs_errno(-EIO);
		ibv_close_device(ctx->vctx);
		ctx->vctx = NULL;
		return ibc_set_error(err,
				     "%s: ibv_import_pd of the domain's PD "
				     "(handle %u) failed: %s",
				     dev, ctx->pd_handle, strerror(-err));
	}
	ctx->caps.shared = true;
	return 0;
}

static void verbs_detach(struct ibc_ctx *ctx)
{
	/* Imported objects are local: unimporting frees nothing of the
	 * domain's. */
	if (ctx->vpd)
		ibv_unimport_pd(ctx->vpd);
	if (ctx->vctx)
		ibv_close_device(ctx->vctx);
	ctx->vpd = NULL;
	ctx->vctx = NULL;
}

const struct ibc_ops ibc_verbs_ops = {
	.name = "verbs",
	.attach = verbs_attach,
	.detach = verbs_detach,
};

/* Reached only through verbs_attach's fall-back: the descriptor is
 * gone by then. */
const struct ibc_ops ibc_own_ops = {
	.name = "own",
	.attach = verbs_attach,
	.detach = verbs_detach,
};
