// SPDX-License-Identifier: MIT
/* The exact count of unaccounted objects (unaccounted.h). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/registry/charge.h"
#include "daemon/registry/ctx.h"
#include "daemon/device/device.h"
#include "daemon/families/family.h"
#include "daemon/registry/domain.h"
#include "daemon/util/array.h"
#include "daemon/util/log.h"
#include "daemon/registry/objects.h"
#include "daemon/registry/core.h"
#include "daemon/registry/journal-sink.h"
#include "daemon/registry/unaccounted.h"

/* The kinds a handle list is asked for: every uverbs object the broker
 * knows by kind, the device layer's enum ibc_obj_kind from the first to
 * the last before IBC_OBJ_CONTEXT (the context is no handle of its own). */
#define UNACC_KIND_FIRST (IBC_OBJ_NONE + 1)
#define UNACC_KIND_END IBC_OBJ_CONTEXT
#define UNACC_LIST_MIN 256
/* uverbs' attribute length is 16 bits (UVERBS_HANDLES_MAX). */
#define UNACC_LIST_MAX 16383

/* One kind's kernel handles, sorted, each marked when someone names it. */
struct unacc_list {
	uint32_t *handles;
	uint8_t *named;
	uint32_t n;
	/* How many the kernel was last asked for; each array's room. */
	uint32_t cap;
	size_t cap_handles, cap_named;
	/* The kernel stopped at UNACC_LIST_MAX: there may be more. */
	bool cut;
};

enum { NAMED_NONE, NAMED_REGISTRY, NAMED_BROKER };

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The kernel's handles of @type in @x, growing the room until they fit. */
static int unacc_list_fill(struct dctx *x, unsigned int type,
			   struct unacc_list *l)
{
	uint32_t cap = l->cap ? l->cap : UNACC_LIST_MIN;

	for (;;) {
		int n;

		if (array_grow(&l->handles, &l->cap_handles, cap,
			       sizeof(*l->handles), cap) < 0 ||
		    array_grow(&l->named, &l->cap_named, cap, sizeof(*l->named),
			       cap) < 0)
			return -ENOMEM;
		l->cap = cap;
		n = x->dev->ctx_ops->handle_list(x->dc, type, l->handles, cap);
		if (n < 0)
			return n;
		/* A full list may have been cut short. */
		if ((uint32_t)n < cap || cap >= UNACC_LIST_MAX) {
			l->n = (uint32_t)n;
			l->cut = (uint32_t)n == UNACC_LIST_MAX;
			break;
		}
		cap = cap * 2 > UNACC_LIST_MAX ? UNACC_LIST_MAX : cap * 2;
	}
	qsort(l->handles, l->n, sizeof(*l->handles), cmp_u32);
	memset(l->named, NAMED_NONE, l->n);
	return 0;
}

/* Mark @handle as named by @who, if the kernel lists it; false when not
 * listed. Several records may name one handle (DM imports, a handle's
 * unregister not read yet while another client registered it again):
 * the first one counts. */
static bool unacc_name(struct unacc_list *l, uint32_t handle, uint8_t who)
{
	uint32_t *p =
		bsearch(&handle, l->handles, l->n, sizeof(handle), cmp_u32);

	if (!p)
		return false;
	if (l->named[p - l->handles] == NAMED_NONE)
		l->named[p - l->handles] = who;
	return true;
}

struct unacc_walk {
	struct unacc_list lists[OBJ_KIND_COUNT];
	/* Registry records without a handle (verbs XRCDs) and open
	 * intents, per kind. */
	uint32_t by_count[OBJ_KIND_COUNT];
	uint32_t intents[OBJ_KIND_COUNT];
};

static void unacc_walk_free(struct unacc_walk *w)
{
	for (unsigned int k = 0; k < OBJ_KIND_COUNT; k++) {
		free(w->lists[k].handles);
		free(w->lists[k].named);
	}
}

/* A family names @handle of @kind as the broker's own (ctx_handles). */
static void unacc_name_broker(void *arg, enum ibc_obj_kind kind,
			      uint32_t handle)
{
	struct unacc_walk *w = arg;

	if (kind > IBC_OBJ_NONE && kind < OBJ_KIND_COUNT)
		unacc_name(&w->lists[kind], handle, NAMED_BROKER);
}

/* What the registry and the broker name in @x: its own records and what
 * the families hold in it, never the rest of the broker's. */
static void unacc_name_known(struct dctx *x, struct unacc_walk *w)
{
	struct core *core = x->core;
	struct obj *o;

	unacc_name(&w->lists[IBC_OBJ_PD], x->dev->ctx_ops->pd_handle(x->dc),
		   NAMED_BROKER);
	for (unsigned int f = 0; f < FAMILY_COUNT; f++)
		if (families[f]->ctx_handles)
			families[f]->ctx_handles(core, x, unacc_name_broker, w);
	TAILQ_FOREACH(o, &x->objs, ctx_link) {
		core->list_visits++;
		if (o->kind >= OBJ_KIND_COUNT)
			continue;
		if (o->intent)
			w->intents[o->kind]++;
		/* A record of a kind whose handle libibverbs hides (an
		 * XRCD) names one of the context's, which one is unknown. */
		else if (!o->made_here && obj_kind_handle_hidden(o->kind))
			w->by_count[o->kind]++;
		else
			unacc_name(&w->lists[o->kind], o->handle,
				   o->family_owned ? NAMED_BROKER :
						     NAMED_REGISTRY);
	}
}

static uint32_t sub0(uint32_t a, uint32_t b)
{
	return a > b ? a - b : 0;
}

/*
 * The provider's own objects, counted by their type (mlx5:
 * MLX5_IB_OBJECT_UAR), apart from the uverbs objects: the broker's open
 * made own_internal of them, importers the rest, and nothing says which
 * import holds which. A live import holds at least what a bare import
 * makes (internal_per_import) and, on mlx5, a BF UAR page more for its
 * QPs as they come, kept until the import closes; so only the dead
 * imports' share is unaccounted, and only as far as it is known: at least
 * internal_per_import each, at most what the live imports cannot hold.
 */
static int unacc_internal(struct dctx *x, struct unacc_counts *c)
{
	struct unacc_list l = { 0 };
	uint32_t own, beyond, live, dead;
	int ret = unacc_list_fill(x, DEVICE_INTERNAL, &l);

	if (ret < 0) {
		free(l.handles);
		free(l.named);
		return ret;
	}
	own = l.n < x->own_internal ? l.n : x->own_internal;
	beyond = l.n - own;
	live = x->refs * x->dev->internal_per_import;
	dead = x->dead_imports * x->dev->internal_per_import;
	if (x->dev->internal_per_import &&
	    dead / x->dev->internal_per_import != x->dead_imports)
		dead = UINT32_MAX;
	c->kernel += l.n;
	c->broker += own;
	c->internal = beyond;
	c->internal_left =
		dead < sub0(beyond, live) ? dead : sub0(beyond, live);
	c->unaccounted += c->internal_left;
	free(l.handles);
	free(l.named);
	return 0;
}

int unaccounted_count(struct dctx *x, struct unacc_counts *ret)
{
	struct unacc_walk *w;
	struct unacc_counts c;
	int err = 0;

	memset(&c, 0, sizeof(c));
	if (!x->dc) {
		*ret = c;
		return 0;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	for (unsigned int k = UNACC_KIND_FIRST; k < UNACC_KIND_END && err == 0;
	     k++)
		err = unacc_list_fill(x, k, &w->lists[k]);
	if (err < 0)
		goto out;
	unacc_name_known(x, w);
	for (unsigned int k = UNACC_KIND_FIRST; k < UNACC_KIND_END; k++) {
		const struct unacc_list *l = &w->lists[k];
		uint32_t reg = 0, own = 0, unknown, by_count;

		for (uint32_t j = 0; j < l->n; j++) {
			reg += l->named[j] == NAMED_REGISTRY;
			own += l->named[j] == NAMED_BROKER;
		}
		unknown = l->n - reg - own;
		by_count = unknown < w->by_count[k] ? unknown : w->by_count[k];
		unknown -= by_count;
		c.cut += l->cut;
		c.kernel += l->n;
		c.registry += reg + by_count;
		c.broker += own;
		c.intents += w->intents[k];
		/* A live client's intent may have made its object already:
		 * it is that client's, not unaccounted. */
		c.unaccounted += sub0(unknown, w->intents[k]);
	}
	err = unacc_internal(x, &c);
out:
	unacc_walk_free(w);
	free(w);
	if (err == 0)
		*ret = c;
	return err;
}

int unaccounted_refresh_counts(struct dctx *x, struct unacc_counts *ret)
{
	struct domain *d = x->domain;
	struct unacc_counts c;
	int err = unaccounted_count(x, &c);

	if (err < 0) {
		/* Once per context: listings would repeat it. */
		if (err != -EOPNOTSUPP && !x->unacc_warned)
			log_warn("context %" PRIu64 " (%s on %s): cannot list "
				 "the kernel's handles: %s; its unaccounted "
				 "count stays the intents of dead clients (%u)",
				 x->id, d->name, x->dev->name, strerror(-err),
				 x->unaccounted);
		x->unacc_warned = true;
		return err;
	}
	/* What exists stays charged, even over the limit (which refuses
	 * new objects only); what does not is given back. */
	if (c.unaccounted > x->unaccounted)
		charge_add(d, CHARGE_OBJECTS, c.unaccounted - x->unaccounted);
	else
		charge_sub(d, CHARGE_OBJECTS, x->unaccounted - c.unaccounted);
	if (c.cut && !x->unacc_warned)
		log_notice("context %" PRIu64 " (%s on %s): over %u objects "
			   "of one kind, more than the kernel lists at once: "
			   "its unaccounted count is a lower bound",
			   x->id, d->name, x->dev->name, UNACC_LIST_MAX);
	x->unacc_warned |= c.cut > 0;
	if (c.unaccounted != x->unaccounted)
		log_info("context %" PRIu64 " (%s on %s): %u unaccounted "
			 "objects (%u provider-internal left by dead "
			 "importers), %u before",
			 x->id, d->name, x->dev->name, c.unaccounted,
			 c.internal_left, x->unaccounted);
	/* Grown: [defaults] auto_rekey_unaccounted may be due. */
	if (c.unaccounted > x->unaccounted)
		core_rekey_due(x->core, 0);
	if (x->unaccounted != c.unaccounted) {
		x->unaccounted = c.unaccounted;
		sink_ctx_saved(x->core, x);
	}
	x->unacc_stale = false;
	if (ret)
		*ret = c;
	return (int)c.unaccounted;
}

int unaccounted_refresh(struct dctx *x)
{
	return unaccounted_refresh_counts(x, NULL);
}

void unaccounted_refresh_stale(struct core *core)
{
	struct domain *d;
	struct dctx *x;

	TAILQ_FOREACH(d, &core->domains, link)
		TAILQ_FOREACH(x, &d->ctxs, link)
			if (x->unacc_stale)
				unaccounted_refresh(x);
}

void unaccounted_ctx_opened(struct dctx *x)
{
	struct unacc_list l = { 0 };

	x->own_internal = 0;
	if (unacc_list_fill(x, DEVICE_INTERNAL, &l) == 0)
		x->own_internal = l.n;
	free(l.handles);
	free(l.named);
}
