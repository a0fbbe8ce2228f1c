// SPDX-License-Identifier: MIT
/* The context family: open and close a domain's context on a device. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/registry/charge.h"
#include "daemon/registry/client.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/domain.h"
#include "daemon/util/log.h"
#include "daemon/registry/core.h"
#include "daemon/registry/journal-sink.h"
#include "daemon/registry/user.h"

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

static void dctx_uncharge_user(struct core *core, struct dctx *x)
{
	if (!x->user)
		return;
	user_uncharge_private_ctx(x->user);
	user_unref(core, x->user);
	x->user = NULL;
}

static void dctx_free(struct core *core, struct dctx *x)
{
	struct domain *d = x->domain;

	if (x->rekeyed)
		log_info("context %" PRIu64 " (%s on %s), replaced by a "
			 "rekey, closed; %u objects went with it",
			 x->id, d->name, x->dev->name, x->unaccounted);
	else
		log_debug("context %" PRIu64 " (%s on %s) closed", x->id,
			  d->name, x->dev->name);
	sink_ctx_closed(core, x);
	/* What lives only as long as the kernel context goes with it. */
	families_ctx_closed(core, x);
	dctx_close_device(x);
	dctx_uncharge_user(core, x);
	TAILQ_REMOVE(&d->ctxs, x, link);
	d->n_ctxs--;
	/* The context's PD was the domain's object; what dead clients'
	 * intents may have made goes with the context. */
	charge_sub(d, CHARGE_OBJECTS, 1 + x->unaccounted);
	free(x->unnamed);
	free(x);
	domain_release(core, d);
}

static void dctx_event_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dctx *x = arg;

	if (x->dc && x->dev->ctx_ops->handle_event(x->dc) == 1)
		x->core->ops->device_gone(x->core, x->dev,
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
static int dctx_charge(struct core *core, struct domain *d, struct user *u,
		       struct dctx *x, struct why *why)
{
	if (d->kind != DOMAIN_PRIVATE)
		return 0;
	if (user_charge_private_ctx(core, u) < 0)
		return why_set(why, -EDQUOT,
			       "uid %u holds %u contexts of private "
			       "domains, the most one user may have "
			       "(private_contexts_per_uid)",
			       u->uid, u->private_ctxs);
	x->user = user_ref(u);
	return 0;
}

/* A new context of @d on @dev: id @id and descriptor @adopt_fd (taken)
 * when a restore adopts one, else a new id and a new device context. */
static int dctx_make(struct core *core, struct domain *d, struct device *dev,
		     struct user *u, uint64_t id, int adopt_fd,
		     uint32_t pd_handle, struct why *why, struct dctx **ret)
{
	struct dctx *x;
	int ret_err, fd;

	x = calloc(1, sizeof(*x));
	if (!x)
		return why_set(why, -ENOMEM, "out of memory");
	TAILQ_INIT(&x->objs);
	ret_err = charge_add_room(d, CHARGE_OBJECTS, 1, "", why);
	if (ret_err < 0) {
		free(x);
		return ret_err;
	}
	ret_err = dctx_charge(core, d, u, x, why);
	if (ret_err < 0)
		goto fail;
	x->id = id;
	ret_err = id ? 0 : id_next(&core->ids.contexts, &x->id);
	if (ret_err < 0) {
		ret_err = why_set(why, ret_err,
				  "the broker has no context ids left");
		goto fail;
	}
	x->core = core;
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
		ret_err = why_set(why, ret_err,
				  "%s: the broker cannot open a context: "
				  "%s",
				  dev->name, strerror(-ret_err));
		goto fail;
	}
	fd = dev->ctx_ops->event_fd(x->dc);
	if (fd >= 0) {
		/* Unwatched, a fatal error of the device would go unseen. */
		x->ev = event_new(core->base, fd, EV_READ | EV_PERSIST,
				  dctx_event_cb, x);
		if (!x->ev || event_add(x->ev, NULL) < 0) {
			dctx_close_device(x);
			ret_err = why_set(why, -ENOMEM,
					  "%s: the broker cannot watch "
					  "the context's events",
					  dev->name);
			goto fail;
		}
	}
	core->ctx_hooks->opened(x);
	TAILQ_INSERT_TAIL(&d->ctxs, x, link);
	d->n_ctxs++;
	log_debug("context %" PRIu64 " (%s on %s) opened", x->id, d->name,
		  dev->name);
	sink_ctx_opened(core, x);
	*ret = x;
	return 0;

fail:
	if (adopt_fd >= 0)
		close(adopt_fd);
	dctx_uncharge_user(core, x);
	charge_sub(d, CHARGE_OBJECTS, 1);
	free(x);
	return ret_err;
}

static int dctx_open(struct core *core, struct domain *d, struct device *dev,
		     struct user *u, struct why *why, struct dctx **ret)
{
	struct dctx *x = dctx_find(d, dev);

	if (x) {
		*ret = x;
		return 0;
	}
	return dctx_make(core, d, dev, u, 0, -1, 0, why, ret);
}

int dctx_adopt(struct core *core, struct domain *d, struct device *dev,
	       struct user *u, uint64_t id, int fd, uint32_t pd_handle,
	       struct why *why, struct dctx **ret)
{
	return dctx_make(core, d, dev, u, id, fd, pd_handle, why, ret);
}

int dctx_client_adopt(struct client *c, struct dctx *x, unsigned int opens,
		      uint64_t import)
{
	struct conn_ctx *cc = calloc(1, sizeof(*cc));

	if (!cc)
		return -ENOMEM;
	cc->ctx = x;
	cc->opens = opens;
	cc->import = import;
	x->refs++;
	TAILQ_INSERT_TAIL(&c->ctxs, cc, link);
	c->n_ctxs++;
	/* The new generation's journal starts empty. */
	sink_hold_saved(c->core, c->id, cc);
	return 0;
}

void dctx_imports_adopt(struct domain *d)
{
	struct client *c;
	struct conn_ctx *cc;

	TAILQ_FOREACH(c, &d->members, domain_link)
		TAILQ_FOREACH(cc, &c->ctxs, link) {
			struct dctx *x = cc->ctx;
			int err;

			if (!cc->import || !x->dc)
				continue;
			/* Without its records, the import's close frees
			 * nothing: counted as the books then say. */
			err = x->dev->ctx_ops->import_adopt(x->dc, cc->import);
			if (err < 0)
				log_warn("context %" PRIu64 ": client %" PRIu64
					 "'s import not made again: %s",
					 x->id, c->id, strerror(-err));
		}
}

struct dctx *dctx_find_id(struct domain *d, uint64_t id)
{
	struct dctx *x;

	TAILQ_FOREACH(x, &d->ctxs, link)
		if (x->id == id)
			return x;
	return NULL;
}

static void dctx_unref(struct core *core, struct dctx *x)
{
	if (--x->refs == 0 && x->objects == 0)
		dctx_free(core, x);
}

/* A context no session took: closed again when nothing holds it. */
static void dctx_unref_open(struct core *core, struct dctx *x)
{
	if (x->refs == 0 && x->objects == 0)
		dctx_free(core, x);
}

void dctx_close_unheld(struct core *core, struct dctx *x)
{
	dctx_unref_open(core, x);
}

/* Session @c lets go of its last open of @x. */
static void dctx_conn_let_go(struct core *core, struct client *c,
			     struct dctx *x)
{
	/* Its copy of a rekeyed context is closed or will be: what it
	 * made there goes with the context, not by handle. */
	if (x->rekeyed)
		core->ctx_hooks->let_go(core, x, c->id);
	dctx_unref(core, x);
}

void dctx_retire(struct core *core, struct dctx *x)
{
	x->rekeyed = true;
	sink_ctx_saved(core, x);
	/* Sessions that ended already let go of it. */
	x->refs++;
	core->ctx_hooks->let_go(core, x, 0);
	dctx_unref(core, x);
}

static struct conn_ctx *conn_ctx_find(struct client *c, uint64_t id)
{
	struct conn_ctx *cc;

	TAILQ_FOREACH(cc, &c->ctxs, link)
		if (cc->ctx->id == id)
			return cc;
	return NULL;
}

struct dctx *dctx_conn_find(struct client *c, uint64_t id)
{
	struct conn_ctx *cc = conn_ctx_find(c, id);

	return cc ? cc->ctx : NULL;
}

int dctx_why_stale(const struct dctx *x, struct why *why)
{
	return why_set(why, -ESTALE,
		       "context %" PRIu64 " of domain %s was replaced by "
		       "a rekey: close it and open the device again",
		       x->id, x->domain->name);
}

int dctx_conn_usable(struct client *c, uint64_t id, struct why *why,
		     struct dctx **ret)
{
	struct dctx *x = dctx_conn_find(c, id);
	int err;

	if (!x)
		return why_set(why, -ENOENT,
			       "context %" PRIu64 " is not open in this "
			       "session",
			       id);
	err = dctx_usable(x, why);
	if (err < 0)
		return err;
	*ret = x;
	return 0;
}

int dctx_usable(const struct dctx *x, struct why *why)
{
	if (!x->dc)
		return why_set(why, -ENODEV, "device %s was removed",
			       x->dev->name);
	if (x->rekeyed)
		return dctx_why_stale(x, why);
	return 0;
}

void dctx_obj_hold(struct dctx *x)
{
	x->objects++;
}

void dctx_obj_release(struct core *core, struct dctx *x)
{
	if (--x->objects == 0 && x->refs == 0)
		dctx_free(core, x);
}

static struct conn_ctx *conn_ctx_find_dev(struct client *c,
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
			    struct why *why)
{
	char clause[DEVICE_NAME_MAX + 96];

	if (!dev->internal_per_import)
		return 0;
	snprintf(clause, sizeof(clause),
		 ", and an import of %s makes %u of the provider's own",
		 dev->name, dev->internal_per_import);
	return charge_room(d, CHARGE_OBJECTS, dev->internal_per_import, clause,
			   why);
}

int dctx_conn_open(struct client *c, struct device *dev, struct why *why,
		   struct dctx **ret)
{
	struct core *core = c->core;
	struct conn_ctx *cc;
	struct dctx *x = NULL;
	int ret_err;

	cc = conn_ctx_find_dev(c, dev);
	if (!cc) {
		cc = calloc(1, sizeof(*cc));
		if (!cc)
			return why_set(why, -ENOMEM, "out of memory");
		ret_err = dctx_open(core, c->domain, dev, c->user, why, &x);
		if (ret_err < 0) {
			free(cc);
			return ret_err;
		}
		ret_err = ctx_import_check(c->domain, dev, why);
		if (ret_err < 0) {
			free(cc);
			dctx_unref_open(core, x);
			return ret_err;
		}
		/* What the provider makes per import (soft: [soft]
		 * internal_objects_per_import records). */
		ret_err = dev->ctx_ops->import_open(x->dc, &cc->import);
		if (ret_err < 0) {
			free(cc);
			dctx_unref_open(core, x);
			return why_set(why, ret_err,
				       "%s: cannot import the context: %s",
				       dev->name, strerror(-ret_err));
		}
		cc->ctx = x;
		x->refs++;
		TAILQ_INSERT_TAIL(&c->ctxs, cc, link);
		c->n_ctxs++;
	}
	cc->opens++;
	sink_hold_saved(core, c->id, cc);
	*ret = cc->ctx;
	return 0;
}

int dctx_conn_close(struct client *c, uint64_t id, struct why *why)
{
	struct conn_ctx *cc = conn_ctx_find(c, id);

	if (!cc)
		return why_set(why, -ENOENT,
			       "context %" PRIu64 " is not open in this "
			       "session",
			       id);
	if (--cc->opens == 0) {
		sink_hold_gone(c->core, cc);
		TAILQ_REMOVE(&c->ctxs, cc, link);
		c->n_ctxs--;
		/* A clean close: the provider frees what the import made. */
		if (cc->ctx->dc)
			cc->ctx->dev->ctx_ops->import_close(cc->ctx->dc,
							    cc->import);
		dctx_conn_let_go(c->core, c, cc->ctx);
		free(cc);
	} else {
		sink_hold_saved(c->core, c->id, cc);
	}
	return 0;
}

void dctx_conn_release(struct core *core, struct client *c)
{
	struct conn_ctx *cc;

	while ((cc = TAILQ_FIRST(&c->ctxs))) {
		struct dctx *x = cc->ctx;
		bool stays;

		sink_hold_gone(core, cc);
		TAILQ_REMOVE(&c->ctxs, cc, link);
		/* As dctx_conn_let_go(), with the count refreshed after:
		 * whether @x stays is known only once its records left. */
		if (x->rekeyed)
			core->ctx_hooks->let_go(core, x, c->id);
		stays = x->refs > 1 || x->objects;
		/* No close: what the import made stays in the kernel (a
		 * dead mlx5 importer's UARs). The soft device's kernel is
		 * this process, so its count is right at once; a verbs
		 * client may still be closing its import. */
		if (x->dead_imports < UINT32_MAX)
			x->dead_imports++;
		if (cc->import && x->dc)
			x->dead_internal += x->dev->ctx_ops->import_records(
				x->dc, cc->import);
		if (stays)
			sink_ctx_saved(core, x);
		dctx_unref(core, x);
		if (stays && x->dev->internal_per_import) {
			if (x->dev->broker_objects)
				core->ctx_hooks->recount(x);
			else
				x->unacc_stale = true;
		}
		/* Later: time for the process to finish closing its
		 * import, which frees what the provider made for it. */
		if (stays && x->unacc_stale)
			core_rekey_due(core, 100);
		free(cc);
	}
	c->n_ctxs = 0;
}

uint64_t dctx_conn_import(struct client *c, const struct dctx *x)
{
	struct conn_ctx *cc = conn_ctx_find(c, x->id);

	return cc && cc->ctx == x ? cc->import : 0;
}

uint64_t dctx_conn_ctx_id(struct client *c, const struct device *dev)
{
	struct conn_ctx *cc = conn_ctx_find_dev(c, dev);

	return cc ? cc->ctx->id : 0;
}

void dctx_device_gone(struct core *core, struct device *dev)
{
	struct domain *d;
	struct dctx *x;

	TAILQ_FOREACH(d, &core->domains, link)
		TAILQ_FOREACH(x, &d->ctxs, link)
			if (x->dev == dev) {
				/* rxe blocks `rdma link delete` while any
				 * descriptor of it is open, systemd's too. */
				sink_ctx_fd_drop(core, x);
				dctx_close_device(x);
				/* The kernel frees them with the context. */
				charge_sub(d, CHARGE_OBJECTS, x->unaccounted);
				x->unaccounted = 0;
			}
}

void dctx_close_all(struct core *core)
{
	struct domain *d;
	struct dctx *x;

	TAILQ_FOREACH(d, &core->domains, link) {
		while ((x = TAILQ_FIRST(&d->ctxs))) {
			dctx_close_device(x);
			dctx_uncharge_user(core, x);
			TAILQ_REMOVE(&d->ctxs, x, link);
			free(x);
		}
		d->n_ctxs = 0;
	}
}
