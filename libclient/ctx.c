// SPDX-License-Identifier: MIT
/*
 * Contexts: the broker sends the domain's context descriptor; on a verbs
 * device this process imports it (ibv_import_device + ibv_import_pd), on
 * the soft device it checks the sealed context memfd.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "common/verbs-err.h"
#include "common/verbs-import.h"
#include "libclient/client.h"
#include "proto/soft.h"

struct ibc_ctx {
	struct ibc_client *client;
	struct ibc_ctx *next;
	struct ibc_caps caps;
	uint32_t pd_handle;
	/* verbs */
	struct ibv_context *vctx;
	struct ibv_pd *vpd;
	/* soft: the context memfd */
	int soft_fd;
	/* The device is gone: this process's descriptors are closed. */
	bool removed;
};

static int ibc_ctx_soft(struct ibc_ctx *ctx, int fd)
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
	return 0;
}

/* Open the device in this process (IBC_CONNECT_ALLOW_OWN_CONTEXT). */
static int ibc_ctx_own(struct ibc_ctx *ctx)
{
	struct ibv_device **list;
	int n = 0, err = -ENODEV;

	list = verbs_try(ibv_get_device_list(&n));
	if (!list)
		return verbs_err(ENODEV);
	for (int i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), ctx->caps.device))
			continue;
		ctx->vctx = verbs_try(ibv_open_device(list[i]));
		err = ctx->vctx ? 0 : verbs_err(ENODEV);
		break;
	}
	ibv_free_device_list(list);
	return err;
}

static int ibc_ctx_verbs(struct ibc_ctx *ctx, int fd)
{
	const char *dev = ctx->caps.device;
	int err;

	/* Consumes fd on every path (libibverbs does not, always). */
	err = verbs_import_device(fd, &ctx->vctx);
	if (err == 0) {
		ctx->vpd = verbs_try(ibv_import_pd(ctx->vctx, ctx->pd_handle));
		if (ctx->vpd) {
			ctx->caps.shared = true;
			return 0;
		}
		err = verbs_err(EIO);
		ibv_close_device(ctx->vctx);
		ctx->vctx = NULL;
		return ibc_set_error(err,
				     "%s: ibv_import_pd of the domain's PD "
				     "(handle %u) failed: %s",
				     dev, ctx->pd_handle, strerror(-err));
	}
	if (err == -ENODEV)
		/* Not an import problem: this process's libibverbs does not
		 * see the device (no provider installed, sysfs hidden, an
		 * exclusive RDMA network namespace); its own open would fail
		 * the same way. */
		return ibc_set_error(err,
				     "%s: libibverbs in this process does "
				     "not see the device (is ibverbs-providers "
				     "installed, /sys visible?)",
				     dev);
	if ((ctx->client->flags & IBC_CONNECT_ALLOW_OWN_CONTEXT) &&
	    (err == -EOPNOTSUPP || err == -EINVAL ||
	     err == -EPROTONOSUPPORT)) {
		int own = ibc_ctx_own(ctx);

		if (own < 0)
			return ibc_set_error(own,
					     "%s: the context cannot be "
					     "imported (%s) and opening the "
					     "device here failed: %s",
					     dev, strerror(-err),
					     strerror(-own));
		ctx->caps.shared = false;
		return 0;
	}
	return ibc_set_error(err,
			     "%s: ibv_import_device failed: %s; only mlx5 "
			     "devices with dynamic UARs can share a context "
			     "(connect with IBC_CONNECT_ALLOW_OWN_CONTEXT to "
			     "open the device in this process instead)",
			     dev, strerror(-err));
}

/* Tell the broker this process no longer uses the context. */
static void ibc_ctx_release(struct ibc_client *client, uint64_t id)
{
	Rdmab__CloseContextRequest cr = RDMAB__CLOSE_CONTEXT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct ibc_reply r;

	cr.context_id = id;
	req.body_case = RDMAB__REQUEST__BODY_CLOSE_CONTEXT;
	req.close_context = &cr;
	/* A broker that is gone has released it already. */
	if (ibc_call(client, &req, NULL, 0, &r) == 0)
		ibc_reply_free(&r);
}

/* The device's kind and caps come from the hello reply. */
static int ibc_ctx_fill(struct ibc_ctx *ctx, const Rdmab__OpenContextReply *o)
{
	const struct ibc_client *cl = ctx->client;
	const struct ibc_device_info *d = NULL;
	struct ibc_caps *c = &ctx->caps;

	for (uint32_t i = 0; i < cl->info.num_devices && !d; i++)
		if (strcmp(cl->devices[i].name, o->device) == 0)
			d = &cl->devices[i];
	if (!d)
		return ibc_set_error(-EPROTO,
				     "the broker opened device \"%.64s\", "
				     "which it did not announce",
				     o->device);
	c->kind = strcmp(d->kind, "soft") == 0 ? IBC_DEVICE_SOFT :
						 IBC_DEVICE_VERBS;
	ibc_copy_name(c->device, sizeof(c->device), d->name);
	ibc_copy_name(c->domain, sizeof(c->domain), cl->info.domain);
	c->context_id = o->context_id;
	c->xrc = d->xrc;
	c->max_dm_size = d->max_dm_size;
	c->max_rss_table_size = d->max_rss_table_size;
	c->rss_hash_fields = d->rss_hash_fields;
	c->rss_hash_functions = d->rss_hash_functions;
	ctx->pd_handle = o->pd_handle;
	return 0;
}

IBC_EXPORT int ibc_open(struct ibc_client *client, const char *device,
			struct ibc_ctx **ret_ctx)
{
	Rdmab__OpenContextRequest oc = RDMAB__OPEN_CONTEXT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	const Rdmab__OpenContextReply *o;
	struct ibc_ctx *ctx;
	struct ibc_reply r;
	int err, fd;

	if (!client || !ret_ctx)
		return ibc_set_error(-EINVAL, "client or ret_ctx is NULL");
	if (device && strlen(device) >= IBC_NAME_MAX)
		return ibc_set_error(-EINVAL, "device name is too long");
	oc.device = (char *)(device ? device : "");
	req.body_case = RDMAB__REQUEST__BODY_OPEN_CONTEXT;
	req.open_context = &oc;
	err = ibc_call(client, &req, NULL, 0, &r);
	if (err < 0)
		return err;
	o = r.reply->open_context;
	if (r.reply->body_case != RDMAB__REPLY__BODY_OPEN_CONTEXT) {
		err = ibc_set_error(-EPROTO, "the broker answered open "
					     "without a context");
		goto out;
	}
	fd = wire_fds_steal(&r.fds, o->fd_index);
	ctx = calloc(1, sizeof(*ctx));
	if (fd < 0 || !ctx) {
		if (fd >= 0)
			close(fd);
		free(ctx);
		/* Releasing talks to the broker, which resets the error. */
		ibc_ctx_release(client, o->context_id);
		if (fd < 0)
			err = ibc_set_error(-EPROTO,
					    "the broker opened context %llu "
					    "without sending its descriptor",
					    (unsigned long long)o->context_id);
		else
			err = ibc_set_error(-ENOMEM, "out of memory");
		goto out;
	}
	ctx->client = client;
	ctx->soft_fd = -1;
	err = ibc_ctx_fill(ctx, o);
	if (err < 0) {
		close(fd);
	} else if (ctx->caps.kind == IBC_DEVICE_SOFT) {
		ctx->caps.shared = true;
		err = ibc_ctx_soft(ctx, fd);
	} else {
		err = ibc_ctx_verbs(ctx, fd);
	}
	if (err < 0) {
		char why[256];

		/* Releasing talks to the broker, which resets the error. */
		snprintf(why, sizeof(why), "%s", ibc_last_error());
		ibc_ctx_release(client, o->context_id);
		ibc_set_error(err, "%s", why);
		free(ctx);
		goto out;
	}
	pthread_mutex_lock(&client->lock);
	ctx->next = client->ctxs;
	client->ctxs = ctx;
	pthread_mutex_unlock(&client->lock);
	ibc_clear_error();
	*ret_ctx = ctx;
out:
	ibc_reply_free(&r);
	return err;
}

/* Close this process's descriptors of @ctx, keeping @ctx for ibc_close. */
static void ibc_ctx_drop_local(struct ibc_ctx *ctx)
{
	if (ctx->vpd)
		ibv_unimport_pd(ctx->vpd);
	if (ctx->vctx)
		ibv_close_device(ctx->vctx);
	if (ctx->soft_fd >= 0)
		close(ctx->soft_fd);
	ctx->vpd = NULL;
	ctx->vctx = NULL;
	ctx->soft_fd = -1;
	ctx->removed = true;
}

/* Release what this process holds of @ctx, without the broker. */
static void ibc_ctx_free_local(struct ibc_ctx *ctx)
{
	if (!ctx->removed)
		ibc_ctx_drop_local(ctx);
	free(ctx);
}

void ibc_ctx_device_removed(struct ibc_client *cl, const char *device)
{
	pthread_mutex_lock(&cl->lock);
	for (struct ibc_ctx *ctx = cl->ctxs; ctx; ctx = ctx->next)
		if (!ctx->removed && strcmp(ctx->caps.device, device) == 0)
			ibc_ctx_drop_local(ctx);
	pthread_mutex_unlock(&cl->lock);
}

void ibc_ctx_free_all(struct ibc_client *cl)
{
	while (cl->ctxs) {
		struct ibc_ctx *ctx = cl->ctxs;

		cl->ctxs = ctx->next;
		ibc_ctx_free_local(ctx);
	}
}

IBC_EXPORT void ibc_close(struct ibc_ctx *ctx)
{
	struct ibc_client *client;
	uint64_t id;

	if (!ctx)
		return;
	client = ctx->client;
	id = ctx->caps.context_id;
	pthread_mutex_lock(&client->lock);
	for (struct ibc_ctx **p = &client->ctxs; *p; p = &(*p)->next) {
		if (*p == ctx) {
			*p = ctx->next;
			break;
		}
	}
	pthread_mutex_unlock(&client->lock);
	ibc_ctx_free_local(ctx);
	ibc_ctx_release(client, id);
}

IBC_EXPORT int ibc_query(struct ibc_ctx *ctx, struct ibc_caps *ret)
{
	if (!ctx || !ret)
		return ibc_set_error(-EINVAL, "ctx or ret is NULL");
	*ret = ctx->caps;
	ret->fork_state = ibc_fork_state();
	return 0;
}

/*
 * What ibc_verbs_context() and ibc_verbs_pd() return, read under the lock:
 * ibc_dispatch() may be closing them in another thread, on device removal.
 * Returns 0, or -ENODEV with the sentence set.
 */
static int ibc_ctx_verbs_objs(struct ibc_ctx *ctx,
			      struct ibv_context **ret_vctx,
			      struct ibv_pd **ret_vpd)
{
	struct ibc_client *cl = ctx->client;
	struct ibv_context *vctx;
	struct ibv_pd *vpd;
	bool removed;

	pthread_mutex_lock(&cl->lock);
	removed = ctx->removed;
	vctx = ctx->vctx;
	vpd = ctx->vpd;
	pthread_mutex_unlock(&cl->lock);
	if (removed) {
		errno = ENODEV;
		return ibc_set_error(-ENODEV,
				     "%s was removed: close the context",
				     ctx->caps.device);
	}
	*ret_vctx = vctx;
	*ret_vpd = vpd;
	return 0;
}

IBC_EXPORT struct ibv_context *ibc_verbs_context(struct ibc_ctx *ctx)
{
	struct ibv_context *vctx = NULL;
	struct ibv_pd *vpd = NULL;

	if (!ctx) {
		ibc_set_error(-EINVAL, "ctx is NULL");
		errno = EINVAL;
		return NULL;
	}
	if (ibc_ctx_verbs_objs(ctx, &vctx, &vpd) < 0)
		return NULL;
	if (!vctx) {
		ibc_set_error(-EOPNOTSUPP,
			      "%s is the soft device: it has no libibverbs "
			      "context",
			      ctx->caps.device);
		errno = EOPNOTSUPP;
	}
	return vctx;
}

IBC_EXPORT struct ibv_pd *ibc_verbs_pd(struct ibc_ctx *ctx)
{
	struct ibv_context *vctx = NULL;
	struct ibv_pd *vpd = NULL;

	if (!ctx) {
		ibc_set_error(-EINVAL, "ctx is NULL");
		errno = EINVAL;
		return NULL;
	}
	if (ibc_ctx_verbs_objs(ctx, &vctx, &vpd) < 0)
		return NULL;
	if (vpd)
		return vpd;
	if (vctx)
		ibc_set_error(-EOPNOTSUPP,
			      "%s: no shared PD: the broker's context could "
			      "not be imported, so this process opened the "
			      "device itself",
			      ctx->caps.device);
	else
		ibc_set_error(-EOPNOTSUPP,
			      "%s is the soft device: it has no libibverbs "
			      "PD",
			      ctx->caps.device);
	errno = EOPNOTSUPP;
	return NULL;
}
