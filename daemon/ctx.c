// SPDX-License-Identifier: MIT
/* The context family: open and close a domain's context on a device. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/charge.h"
#include "daemon/conn.h"
#include "daemon/ctx.h"
#include "daemon/dispatch.h"
#include "daemon/domain.h"
#include "daemon/log.h"
#include "daemon/notify.h"
#include "daemon/objects.h"
#include "daemon/rekey.h"
#include "daemon/restart.h"
#include "daemon/server.h"
#include "daemon/unaccounted.h"
#include "daemon/user.h"

static void dctx_close_device(struct dctx *x)
{
	if (x->ev) {
		event_free(x->ev);
		x->ev = NULL;
	}
	if (x->dc) {
		x->dev->ctx_ops->close(x->dc);
		x->dc = NULL;
	}
}

static void dctx_uncharge_user(struct server *srv, struct dctx *x)
{
	if (!x->user)
		return;
	user_uncharge_private_ctx(x->user);
	user_unref(srv, x->user);
	x->user = NULL;
}

static void dctx_free(struct server *srv, struct dctx *x)
{
	struct domain *d = x->domain;

	if (x->rekeyed)
		log_info("context %" PRIu64 " (%s on %s), replaced by a "
			 "rekey, closed; %u objects went with it",
			 x->id, d->name, x->dev->name, x->unaccounted);
	else
		log_debug("context %" PRIu64 " (%s on %s) closed", x->id,
			  d->name, x->dev->name);
	restart_ctx_closed(srv, x);
	/* What lives only as long as the kernel context goes with it. */
	families_ctx_closed(srv, x);
	dctx_close_device(x);
	dctx_uncharge_user(srv, x);
	TAILQ_REMOVE(&d->ctxs, x, link);
	d->n_ctxs--;
	/* The context's PD was the domain's object; what dead clients'
	 * intents may have made goes with the context. */
	domain_uncharge_objects(d, 1 + x->unaccounted);
	charge_sub(d, CHARGE_DM_BYTES, x->dm_bytes_left);
	charge_sub_u64(&x->dev->dm_reserved, x->dm_bytes_left,
		       "reserved DM bytes", x->dev->name);
	free(x);
	domain_release(srv, d);
}

static void dctx_event_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dctx *x = arg;

	if (x->dc && x->dev->ctx_ops->handle_event(x->dc) == 1)
		notify_device_gone(x->srv, x->dev,
				   "the device reported a fatal error");
}

static struct dctx *dctx_find(struct domain *d, struct device *dev)
{
	struct dctx *x = NULL;

	/* A rekeyed one stays for the sessions that hold it, no others. */
	TAILQ_FOREACH(x, &d->ctxs, link)
		if (x->dev == dev && !x->rekeyed)
			return x;
	return NULL;
}

/* A private domain's contexts are the uid's: at most
 * private_contexts_per_uid of them. */
static int dctx_charge(struct server *srv, struct domain *d, struct user *u,
		       struct dctx *x, struct reply *r)
{
	if (d->kind != DOMAIN_PRIVATE)
		return 0;
	if (user_charge_private_ctx(srv, u) < 0)
		return reply_error(r, -EDQUOT,
				   "uid %u holds %u contexts of private "
				   "domains, the most one user may have "
				   "(private_contexts_per_uid)",
				   u->uid, u->private_ctxs);
	x->user = user_ref(u);
	return 0;
}

/* A new context of @d on @dev: id @id and descriptor @adopt_fd (taken)
 * when a restore adopts one, else a new id and a new device context. */
static int dctx_make(struct server *srv, struct domain *d, struct device *dev,
		     struct user *u, uint64_t id, int adopt_fd,
		     uint32_t pd_handle, struct reply *r, struct dctx **ret)
{
	struct dctx *x;
	int ret_err, fd;

	x = calloc(1, sizeof(*x));
	if (!x)
		return reply_error(r, -ENOMEM, "out of memory");
	TAILQ_INIT(&x->objs);
	ret_err = domain_charge_objects(d, 1, r);
	if (ret_err < 0) {
		free(x);
		return ret_err;
	}
	ret_err = dctx_charge(srv, d, u, x, r);
	if (ret_err < 0)
		goto fail;
	x->id = id;
	ret_err = id ? 0 : id_next(&srv->ids.contexts, &x->id);
	if (ret_err < 0) {
		ret_err = reply_error(r, ret_err, "the broker has no context "
					      "ids left");
		goto fail;
	}
	x->srv = srv;
	x->domain = d;
	x->dev = dev;
	if (adopt_fd >= 0) {
		ret_err = dev->ops->ctx_adopt(dev, x->id, adopt_fd, pd_handle,
					      &x->dc);
		adopt_fd = -1;
	} else {
		ret_err = dev->ops->ctx_open(dev, x->id, d->name, &x->dc);
	}
	if (ret_err < 0) {
		log_warn("%s: cannot open a context for domain %s: %s",
			 dev->name, d->name, strerror(-ret_err));
		ret_err = reply_error(r, ret_err,
				      "%s: the broker cannot open a context: "
				      "%s",
				      dev->name, strerror(-ret_err));
		goto fail;
	}
	fd = dev->ctx_ops->event_fd(x->dc);
	if (fd >= 0) {
		/* Unwatched, a fatal error of the device would go unseen. */
		x->ev = event_new(srv->base, fd, EV_READ | EV_PERSIST,
				  dctx_event_cb, x);
		if (!x->ev || event_add(x->ev, NULL) < 0) {
			dctx_close_device(x);
			ret_err = reply_error(r, -ENOMEM,
					      "%s: the broker cannot watch "
					      "the context's events",
					      dev->name);
			goto fail;
		}
	}
	unaccounted_ctx_opened(x);
	TAILQ_INSERT_TAIL(&d->ctxs, x, link);
	d->n_ctxs++;
	log_debug("context %" PRIu64 " (%s on %s) opened", x->id, d->name,
		  dev->name);
	restart_ctx_opened(srv, x);
	*ret = x;
	return 0;

fail:
	if (adopt_fd >= 0)
		close(adopt_fd);
	dctx_uncharge_user(srv, x);
	domain_uncharge_objects(d, 1);
	free(x);
	return ret_err;
}

static int dctx_open(struct server *srv, struct domain *d, struct device *dev,
		     struct user *u, struct reply *r, struct dctx **ret)
{
	struct dctx *x = dctx_find(d, dev);

	if (x) {
		*ret = x;
		return 0;
	}
	return dctx_make(srv, d, dev, u, 0, -1, 0, r, ret);
}

int dctx_adopt(struct server *srv, struct domain *d, struct device *dev,
	       struct user *u, uint64_t id, int fd, uint32_t pd_handle,
	       struct reply *r, struct dctx **ret)
{
	return dctx_make(srv, d, dev, u, id, fd, pd_handle, r, ret);
}

int dctx_conn_adopt(struct conn *c, struct dctx *x, unsigned int opens)
{
	struct conn_ctx *cc = calloc(1, sizeof(*cc));

	if (!cc)
		return -ENOMEM;
	cc->ctx = x;
	cc->opens = opens;
	x->refs++;
	TAILQ_INSERT_TAIL(&c->ctxs, cc, link);
	c->n_ctxs++;
	return 0;
}

struct dctx *dctx_find_id(struct domain *d, uint64_t id)
{
	struct dctx *x;

	TAILQ_FOREACH(x, &d->ctxs, link)
		if (x->id == id)
			return x;
	return NULL;
}

static void dctx_unref(struct server *srv, struct dctx *x)
{
	if (--x->refs == 0 && x->objects == 0)
		dctx_free(srv, x);
}

/* A context no session took: closed again when nothing holds it. */
static void dctx_unref_open(struct server *srv, struct dctx *x)
{
	if (x->refs == 0 && x->objects == 0)
		dctx_free(srv, x);
}

/* Session @c lets go of its last open of @x. */
static void dctx_conn_let_go(struct server *srv, struct conn *c,
			     struct dctx *x)
{
	/* Its copy of a rekeyed context is closed or will be: what it
	 * made there goes with the context, not by handle. */
	if (x->rekeyed)
		objects_ctx_let_go(srv, x, c->id);
	dctx_unref(srv, x);
}

void dctx_retire(struct server *srv, struct dctx *x)
{
	x->rekeyed = true;
	/* Sessions that ended already let go of it. */
	x->refs++;
	objects_ctx_let_go(srv, x, 0);
	dctx_unref(srv, x);
}

static struct conn_ctx *conn_ctx_find(struct conn *c, uint64_t id)
{
	struct conn_ctx *cc;

	TAILQ_FOREACH(cc, &c->ctxs, link)
		if (cc->ctx->id == id)
			return cc;
	return NULL;
}

struct dctx *dctx_conn_find(struct conn *c, uint64_t id)
{
	struct conn_ctx *cc = conn_ctx_find(c, id);

	return cc ? cc->ctx : NULL;
}

int dctx_reply_stale(const struct dctx *x, struct reply *r)
{
	return reply_error(r, -ESTALE,
			   "context %" PRIu64 " of domain %s was replaced by "
			   "a rekey: close it and open the device again",
			   x->id, x->domain->name);
}

int dctx_conn_usable(struct conn *c, uint64_t id, struct reply *r,
		     struct dctx **ret)
{
	struct dctx *x = dctx_conn_find(c, id);
	int err;

	if (!x)
		return reply_error(r, -ENOENT,
				   "context %" PRIu64 " is not open in this "
				   "session",
				   id);
	err = dctx_usable(x, r);
	if (err < 0)
		return err;
	*ret = x;
	return 0;
}

int dctx_usable(const struct dctx *x, struct reply *r)
{
	if (!x->dc)
		return reply_error(r, -ENODEV, "device %s was removed",
				   x->dev->name);
	if (x->rekeyed)
		return dctx_reply_stale(x, r);
	return 0;
}

void dctx_obj_hold(struct dctx *x)
{
	x->objects++;
}

void dctx_obj_release(struct server *srv, struct dctx *x)
{
	if (--x->objects == 0 && x->refs == 0)
		dctx_free(srv, x);
}

static struct conn_ctx *conn_ctx_find_dev(struct conn *c,
					  const struct device *dev)
{
	struct conn_ctx *cc;

	TAILQ_FOREACH(cc, &c->ctxs, link)
		if (cc->ctx->dev == dev && !cc->ctx->rekeyed)
			return cc;
	return NULL;
}

/* An import that dies holding the context leaves what the provider made
 * for it (mlx5: UARs from a device-wide pool), charged then, over the
 * limit if need be: refuse the import that could not be charged, so that
 * connect, open and kill in a loop cannot grow it without bound. */
static int ctx_import_check(struct domain *d, const struct device *dev,
			    struct reply *r)
{
	char why[DEVICE_NAME_MAX + 96];

	if (!dev->internal_per_import)
		return 0;
	snprintf(why, sizeof(why),
		 ", and an import of %s makes %u of the provider's own",
		 dev->name, dev->internal_per_import);
	return domain_room_objects(d, dev->internal_per_import, why, r);
}

int h_ctx_open(struct conn *c, const Rdmab__Request *req,
	       struct wire_fds *fds, struct reply *r)
{
	struct server *srv = c->srv;
	const char *name = req->open_context->device;
	Rdmab__OpenContextReply *out;
	struct conn_ctx *cc;
	struct device *dev;
	struct dctx *x = NULL;
	int ret;

	dev = device_find(&srv->devices, name);
	if (!dev)
		return *name ? reply_error(r, -ENODEV,
					   "no device \"%.64s\" (see "
					   "rdmabrokerctl devices)",
					   name) :
			       reply_error(r, -ENODEV,
					   "the broker has no device left");
	if (dev->removed)
		return reply_error(r, -ENODEV, "device %s was removed",
				   dev->name);
	out = reply_alloc(r, sizeof(*out));
	if (!out)
		return reply_error(r, -ENOMEM, "out of memory");
	cc = conn_ctx_find_dev(c, dev);
	if (!cc) {
		cc = calloc(1, sizeof(*cc));
		if (!cc)
			return reply_error(r, -ENOMEM, "out of memory");
		ret = dctx_open(srv, c->domain, dev, c->user, r, &x);
		if (ret < 0) {
			free(cc);
			return ret;
		}
		ret = ctx_import_check(c->domain, dev, r);
		if (ret < 0) {
			free(cc);
			dctx_unref_open(srv, x);
			return ret;
		}
		/* What the provider makes per import (soft: [soft]
		 * internal_objects_per_import records). */
		ret = dev->ctx_ops->import_open(x->dc, &cc->import);
		if (ret < 0) {
			free(cc);
			dctx_unref_open(srv, x);
			return reply_error(r, ret, "%s: cannot import the "
					   "context: %s",
					   dev->name, strerror(-ret));
		}
		cc->ctx = x;
		x->refs++;
		TAILQ_INSERT_TAIL(&c->ctxs, cc, link);
		c->n_ctxs++;
	}
	cc->opens++;
	x = cc->ctx;

	rdmab__open_context_reply__init(out);
	out->context_id = x->id;
	out->device = dev->name;
	out->pd_handle = dev->ctx_ops->pd_handle(x->dc);
	out->fd_index = 0;
	r->fds[0] = dev->ctx_ops->fd(x->dc);
	r->nfds = 1;
	r->msg.body_case = RDMAB__REPLY__BODY_OPEN_CONTEXT;
	r->msg.open_context = out;
	return 0;
}

int h_ctx_close(struct conn *c, const Rdmab__Request *req,
		struct wire_fds *fds, struct reply *r)
{
	uint64_t id = req->close_context->context_id;
	Rdmab__CloseContextReply *out = reply_alloc(r, sizeof(*out));
	struct conn_ctx *cc = conn_ctx_find(c, id);

	if (!out)
		return reply_error(r, -ENOMEM, "out of memory");
	if (!cc)
		return reply_error(r, -ENOENT,
				   "context %" PRIu64 " is not open in this "
				   "session",
				   id);
	if (--cc->opens == 0) {
		TAILQ_REMOVE(&c->ctxs, cc, link);
		c->n_ctxs--;
		/* A clean close: the provider frees what the import made. */
		if (cc->ctx->dc)
			cc->ctx->dev->ctx_ops->import_close(cc->ctx->dc,
							    cc->import);
		dctx_conn_let_go(c->srv, c, cc->ctx);
		free(cc);
	}
	rdmab__close_context_reply__init(out);
	r->msg.body_case = RDMAB__REPLY__BODY_CLOSE_CONTEXT;
	r->msg.close_context = out;
	return 0;
}

void dctx_conn_release(struct server *srv, struct conn *c)
{
	struct conn_ctx *cc;

	while ((cc = TAILQ_FIRST(&c->ctxs))) {
		struct dctx *x = cc->ctx;
		bool stays;

		TAILQ_REMOVE(&c->ctxs, cc, link);
		/* As dctx_conn_let_go(), with the count refreshed after:
		 * whether @x stays is known only once its records left. */
		if (x->rekeyed)
			objects_ctx_let_go(srv, x, c->id);
		stays = x->refs > 1 || x->objects;
		/* No close: what the import made stays in the kernel (a
		 * dead mlx5 importer's UARs). The soft device's kernel is
		 * this process, so its count is right at once; a verbs
		 * client may still be closing its import. */
		if (x->dead_imports < UINT32_MAX)
			x->dead_imports++;
		dctx_unref(srv, x);
		if (stays && x->dev->internal_per_import) {
			if (x->dev->broker_objects)
				unaccounted_refresh(x);
			else
				x->unacc_stale = true;
		}
		if (stays && x->unacc_stale)
			rekey_auto_check_stale(srv);
		free(cc);
	}
	c->n_ctxs = 0;
}

uint64_t dctx_conn_import(struct conn *c, const struct dctx *x)
{
	struct conn_ctx *cc = conn_ctx_find(c, x->id);

	return cc && cc->ctx == x ? cc->import : 0;
}

uint64_t dctx_conn_ctx_id(struct conn *c, const struct device *dev)
{
	struct conn_ctx *cc = conn_ctx_find_dev(c, dev);

	return cc ? cc->ctx->id : 0;
}

void dctx_device_gone(struct server *srv, struct device *dev)
{
	struct domain *d;
	struct dctx *x;

	TAILQ_FOREACH(d, &srv->domains, link)
		TAILQ_FOREACH(x, &d->ctxs, link)
			if (x->dev == dev) {
				dctx_close_device(x);
				/* The kernel frees them with the context. */
				domain_uncharge_objects(d, x->unaccounted);
				x->unaccounted = 0;
			}
}

void dctx_close_all(struct server *srv, struct domain *d)
{
	struct dctx *x;

	while ((x = TAILQ_FIRST(&d->ctxs))) {
		dctx_close_device(x);
		dctx_uncharge_user(srv, x);
		TAILQ_REMOVE(&d->ctxs, x, link);
		free(x);
	}
	d->n_ctxs = 0;
}
