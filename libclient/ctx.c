// SPDX-License-Identifier: MIT
/*
 * Contexts: the broker sends the domain's context descriptor, which the
 * device kind's operations make this process's own (verbs.c, soft.c).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libclient/family.h"
#include "libclient/objects.h"
#include "libclient/events.h"
#include "daemon/device/soft/soft.h"
#include "common/device/caps-fields.h"

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
	if (ibc_call(client, &req, 0, &r) == 0)
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
	if (strcmp(d->kind, "soft") == 0) {
		c->kind = IBC_DEVICE_SOFT;
		ctx->ops = &ibc_soft_ops;
	} else {
		c->kind = IBC_DEVICE_VERBS;
		ctx->ops = &ibc_verbs_ops;
	}
	ibc_copy_name(c->device, sizeof(c->device), d->name);
	ibc_copy_name(c->domain, sizeof(c->domain), cl->info.domain);
	c->context_id = o->context_id;
#define CTX_CAPS_COPY(name, ...) c->name = d->name;
	CAPS_NUMBERS(CTX_CAPS_COPY)
	CAPS_FLAGS(CTX_CAPS_COPY)
#undef CTX_CAPS_COPY
	ctx->pd_handle = o->pd_handle;
	return 0;
}

static void ibc_ctx_unlink_locked(struct ibc_ctx *ctx)
{
	for (struct ibc_ctx **p = &ctx->client->ctxs; *p; p = &(*p)->next) {
		if (*p == ctx) {
			*p = ctx->next;
			break;
		}
	}
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
	err = ibc_call(client, &req, IBC_CALL_FDS, &r);
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
	pthread_mutex_init(&ctx->lock, NULL);
	err = ibc_ctx_fill(ctx, o);
	if (err < 0) {
		close(fd);
	} else {
		/* Listed while it attaches: a rekey Event dispatched
		 * meanwhile finds it and waits for the attach. */
		ctx->busy = 1;
		pthread_mutex_lock(&client->lock);
		ctx->next = client->ctxs;
		client->ctxs = ctx;
		pthread_mutex_unlock(&client->lock);
		err = ctx->ops->attach(ctx, fd);
		pthread_mutex_lock(&client->lock);
		if (err < 0)
			ibc_ctx_unlink_locked(ctx);
		else
			ctx->attached = true;
		pthread_mutex_unlock(&client->lock);
		ibc_ctx_leave(ctx);
	}
	if (err < 0) {
		char why[256];

		/* Releasing talks to the broker, which resets the error. */
		snprintf(why, sizeof(why), "%s", ibc_last_error());
		ibc_ctx_release(client, o->context_id);
		ibc_set_error(err, "%s", why);
		pthread_mutex_destroy(&ctx->lock);
		free(ctx);
		goto out;
	}
	ibc_clear_error();
	*ret_ctx = ctx;
out:
	ibc_reply_free(&r);
	return err;
}

int ibc_ctx_enter(struct ibc_ctx *ctx, bool create)
{
	struct ibc_client *cl = ctx->client;
	bool refuse;

	pthread_mutex_lock(&cl->lock);
	refuse = create && (ctx->closing || ctx->removed);
	if (!refuse)
		ctx->busy++;
	pthread_mutex_unlock(&cl->lock);
	return refuse ? ibc_ctx_gone(ctx) : 0;
}

void ibc_ctx_leave(struct ibc_ctx *ctx)
{
	struct ibc_client *cl = ctx->client;

	pthread_mutex_lock(&cl->lock);
	/* The waiters of replies wake too, and wait again. */
	if (--ctx->busy == 0 && ctx->closing)
		pthread_cond_broadcast(&cl->cond);
	pthread_mutex_unlock(&cl->lock);
}

void ibc_ctx_wait_idle(struct ibc_client *cl)
{
	for (;;) {
		bool busy = false;

		for (struct ibc_ctx *ctx = cl->ctxs; ctx; ctx = ctx->next)
			if (ctx->closing && !ctx->removed && ctx->busy)
				busy = true;
		if (!busy)
			return;
		pthread_cond_wait(&cl->cond, &cl->lock);
	}
}

/* Close this process's descriptors of @ctx, keeping @ctx for ibc_close. */
void ibc_ctx_drop_local(struct ibc_ctx *ctx)
{
	/* DM imports live in the context: they go first. */
	ibc_families_ctx_drop(ctx, ENODEV, "the context was closed");
	ctx->ops->detach(ctx);
	/* Read without the lock by ibc_ctx_removed(). */
	__atomic_store_n(&ctx->removed, true, __ATOMIC_RELEASE);
}

/* Release what this process holds of @ctx, without the broker: the
 * objects the library made are destroyed already (ibc_ctx_teardown). */
static void ibc_ctx_free_local(struct ibc_ctx *ctx)
{
	/* Inherited through fork(): the descriptors are placeholders and
	 * the mappings absent; closing the device would unmap ranges that
	 * are no longer its own. Its libibverbs structures stay. */
	if (!ctx->removed && !ibc_stale(ctx->client))
		ibc_ctx_drop_local(ctx);
	else if (!ctx->removed)
		ibc_fork_ctx_close(ctx);
	ibc_ctx_free_objects(ctx);
	ibc_families_ctx_free(ctx);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
}

/* Destroy the objects the library made in @ctx, with the broker. */
static void ibc_ctx_teardown(struct ibc_ctx *ctx)
{
	if (!ibc_ctx_removed(ctx)) {
		ibc_ctx_destroy_objects(ctx, true);
		/* After the MRs that may be on them. */
		ibc_families_ctx_teardown(ctx);
	}
}

int ibc_ctx_gone(struct ibc_ctx *ctx)
{
	bool rekeyed;

	pthread_mutex_lock(&ctx->client->lock);
	rekeyed = ctx->rekeyed;
	pthread_mutex_unlock(&ctx->client->lock);
	if (rekeyed)
		return ibc_set_error(-ESTALE,
				     "context %llu of domain %s was replaced "
				     "by a rekey: close it and open the device "
				     "again",
				     (unsigned long long)ctx->caps.context_id,
				     ctx->caps.domain);
	return ibc_set_error(-ENODEV, "%s was removed: close the context",
			     ctx->caps.device);
}

bool ibc_ctx_removed(struct ibc_ctx *ctx)
{
	/* One flag, set once (with its descriptors closed before): every
	 * create checks it, and needs no lock for it. */
	return __atomic_load_n(&ctx->removed, __ATOMIC_ACQUIRE);
}

void ibc_ctx_device_removed(struct ibc_client *cl, const char *device)
{
	pthread_mutex_lock(&cl->lock);
	/* New creates are refused, those in flight finish first. */
	for (struct ibc_ctx *ctx = cl->ctxs; ctx; ctx = ctx->next)
		if (!ctx->removed && !ctx->closed &&
		    !strcmp(ctx->caps.device, device))
			ctx->closing = true;
	ibc_ctx_wait_idle(cl);
	for (struct ibc_ctx *ctx = cl->ctxs; ctx; ctx = ctx->next) {
		if (!ctx->closing || ctx->removed || ctx->closed ||
		    strcmp(ctx->caps.device, device))
			continue;
		/* The kernel objects first: a context's descriptors close
		 * only once nothing of this process uses them. */
		ibc_ctx_destroy_objects(ctx, false);
		ibc_families_ctx_drop(ctx, ENODEV,
				      "the DM's device was removed");
		ibc_ctx_drop_local(ctx);
	}
	pthread_mutex_unlock(&cl->lock);
}

void ibc_ctx_teardown_all(struct ibc_client *cl)
{
	for (struct ibc_ctx *ctx = cl->ctxs; ctx; ctx = ctx->next) {
		bool verbs = ctx->caps.kind == IBC_DEVICE_VERBS;

		ibc_ctx_teardown(ctx);
		/* A clean end closes the import, as ibv_close_device does
		 * on a verbs device: the soft device's kernel (the broker)
		 * frees what the import made only when told, and on a
		 * verbs device the broker counts a session that ends
		 * without it as an importer that left its UARs. */
		if ((ctx->soft_flags & SOFT_CTX_IMPORT_OBJECTS ||
		     (verbs && ctx->caps.shared)) &&
		    !ibc_ctx_removed(ctx))
			ibc_ctx_release(cl, ctx->caps.context_id);
	}
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
	bool rekeyed;
	uint64_t id;

	if (!ctx)
		return;
	client = ctx->client;
	id = ctx->caps.context_id;
	/* A rekey or removal dispatched meanwhile must not release and
	 * drop it under this teardown: it skips a closed context. It stays
	 * in the list until freed, so that fork() still covers it. */
	pthread_mutex_lock(&client->lock);
	ctx->closed = true;
	/* Marked by a rekey still waiting for creates, it is not released
	 * yet: that is this close's to do. */
	rekeyed = ctx->rekeyed && ctx->removed;
	/* A family's event handler in another thread may be using it (DM's,
	 * dm.c); closed, no new one picks it. */
	while (ctx->event_handlers)
		pthread_cond_wait(&client->cond, &client->lock);
	pthread_mutex_unlock(&client->lock);
	ibc_ctx_teardown(ctx);
	pthread_mutex_lock(&client->lock);
	ibc_ctx_unlink_locked(ctx);
	pthread_mutex_unlock(&client->lock);
	ibc_ctx_free_local(ctx);
	/* A rekeyed context was released when its Event was dispatched. */
	if (!rekeyed)
		ibc_ctx_release(client, id);
}

IBC_EXPORT int ibc_query(struct ibc_ctx *ctx, struct ibc_caps *ret, size_t size)
{
	struct ibc_caps caps;
	int err;

	if (!ctx || !ret)
		return ibc_set_error(-EINVAL, "ctx or ret is NULL");
	if (ibc_stale(ctx->client))
		return ibc_stale_error(ctx->client);
	err = ibc_check_size("ibc_caps", size,
			     IBC_SIZE_V0(struct ibc_caps, max_mr_size));
	if (err < 0)
		return err;
	caps = ctx->caps;
	caps.fork_state = ibc_fork_state();
	ibc_copy_out(ret, size, &caps, sizeof(caps));
	return 0;
}

/*
 * What ibc_verbs_context() and ibc_verbs_pd() return, read under the lock:
 * ibc_dispatch() may be closing them in another thread, on device removal.
 * Returns 0, or -ENODEV (-ESTALE after a rekey) with the sentence set.
 */
static int ibc_ctx_verbs_objs(struct ibc_ctx *ctx,
			      struct ibv_context **ret_vctx,
			      struct ibv_pd **ret_vpd)
{
	struct ibc_client *cl = ctx->client;
	struct ibv_context *vctx;
	struct ibv_pd *vpd;
	bool removed;

	if (ibc_stale(cl)) {
		errno = ESTALE;
		return ibc_stale_error(cl);
	}
	pthread_mutex_lock(&cl->lock);
	removed = ctx->removed;
	vctx = ctx->vctx;
	vpd = ctx->vpd;
	pthread_mutex_unlock(&cl->lock);
	if (removed) {
		int err = ibc_ctx_gone(ctx);

		errno = -err;
		return err;
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

/* --- the device-removed event ------------------------------------------ */

static struct ibc_queued_event *ibc_device_removed_read(struct ibc_client *cl,
							const Rdmab__Event *ev)
{
	return ibc_queue_event(cl, IBC_EVENT_DEVICE_REMOVED,
			       ev->device_removed->reason,
			       ev->device_removed->device);
}

static void ibc_device_removed_after(struct ibc_client *cl,
				     const struct ibc_event *ev)
{
	ibc_ctx_device_removed(cl, ev->device);
}

const struct ibc_event_handler ibc_device_removed_event = {
	.body = RDMAB__EVENT__BODY_DEVICE_REMOVED,
	.read = ibc_device_removed_read,
	.after = ibc_device_removed_after,
};
