// SPDX-License-Identifier: MIT
/* The object registry's records, owners, quota and lookups (objects.h). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/registry/charge.h"
#include "daemon/registry/client.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/domain.h"
#include "daemon/util/log.h"
#include "daemon/registry/objects.h"
#include "daemon/registry/core.h"
#include "daemon/registry/journal-sink.h"

#define OBJ_HASH_MIN 256

uint64_t objects_now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* --- ids ------------------------------------------------------------------ */

/* Ids are handed out in order, so the low bits spread them evenly. */
static struct obj **hash_slot(struct registry *reg, uint64_t id)
{
	return &reg->hash[id & (reg->hash_size - 1)];
}

static int hash_grow(struct registry *reg)
{
	size_t size = reg->hash_size * 2;
	struct obj **h = calloc(size, sizeof(*h));
	struct obj *o;

	if (!h)
		return -ENOMEM;
	for (size_t i = 0; i < reg->hash_size; i++)
		while ((o = reg->hash[i])) {
			reg->hash[i] = o->hash_next;
			o->hash_next = h[o->id & (size - 1)];
			h[o->id & (size - 1)] = o;
		}
	free(reg->hash);
	reg->hash = h;
	reg->hash_size = size;
	return 0;
}

static struct obj *hash_find(struct registry *reg, uint64_t id)
{
	struct obj *o = *hash_slot(reg, id);

	while (o && o->id != id)
		o = o->hash_next;
	return o;
}

static void hash_remove(struct registry *reg, struct obj *o)
{
	struct obj **p = hash_slot(reg, o->id);

	while (*p != o)
		p = &(*p)->hash_next;
	*p = o->hash_next;
}

/* --- owners --------------------------------------------------------------- */

static struct obj_owner *owner_new(struct registry *reg, uint64_t client_id,
				   pid_t pid, uid_t uid, enum owner_state state)
{
	struct obj_owner *ow = calloc(1, sizeof(*ow));

	if (!ow)
		return NULL;
	ow->reg = reg;
	ow->client_id = client_id;
	ow->pid = pid;
	ow->uid = uid;
	ow->state = state;
	for (unsigned int k = 0; k < OBJ_KIND_COUNT; k++)
		TAILQ_INIT(&ow->kinds[k]);
	TAILQ_INSERT_TAIL(&reg->owners, ow, link);
	return ow;
}

static struct obj_owner *owner_of(struct client *c)
{
	struct obj_owner *ow = c->owner;

	if (ow)
		return ow;
	ow = owner_new(c->core->registry, c->id, c->cred.pid, c->cred.uid,
		       OWNER_LIVE);
	if (!ow)
		return NULL;
	ow->conn = c;
	c->owner = ow;
	return ow;
}

struct obj_owner *objects_owner_adopt(struct core *core, uint64_t client_id,
				      pid_t pid, uint64_t start_time, uid_t uid,
				      enum owner_state state)
{
	struct registry *reg = core->registry;
	struct obj_owner *ow;

	TAILQ_FOREACH(ow, &reg->owners, link)
		if (ow->client_id == client_id)
			return ow->state == OWNER_LIVE ? NULL : ow;
	ow = owner_new(reg, client_id, pid, uid, state);
	if (ow) {
		ow->start_time = start_time;
		sink_owner_saved(core, ow);
	}
	return ow;
}

void objects_owner_put(struct obj_owner *ow)
{
	if (ow->state == OWNER_LIVE || ow->n_objs || ow->n_intents)
		return;
	sink_owner_gone(ow->reg->core, ow);
	TAILQ_REMOVE(&ow->reg->owners, ow, link);
	obj_watch_leave(ow);
	if (ow->ev)
		event_free(ow->ev);
	free(ow);
}

/* --- records -------------------------------------------------------------- */

/* A zeroed record: a spare one, or a new one. */
static struct obj *obj_alloc(struct registry *reg)
{
	struct obj *o = reg->spare;

	if (!o)
		return calloc(1, sizeof(*o));
	reg->spare = o->hash_next;
	reg->n_spare--;
	memset(o, 0, sizeof(*o));
	return o;
}

static void obj_free(struct registry *reg, struct obj *o)
{
	if (reg->n_spare >= OBJ_SPARE_MAX) {
		free(o);
		return;
	}
	o->hash_next = reg->spare;
	reg->spare = o;
	reg->n_spare++;
}

int objects_add(struct client *c, struct dctx *x, enum ibc_obj_kind kind,
		bool intent, bool made_here, uint32_t handle, struct why *why,
		struct obj **ret)
{
	return objects_add_id(c, x, kind, intent, made_here, handle, 0, why,
			      ret);
}

/* A record of @ow's (NULL: out of memory) in @x. */
static int obj_add(struct registry *reg, struct obj_owner *ow, struct dctx *x,
		   enum ibc_obj_kind kind, bool intent, bool made_here,
		   uint32_t handle, uint64_t id, struct why *why,
		   struct obj **ret)
{
	struct obj *o;
	int err;

	if (reg->n_objs >= reg->hash_size && hash_grow(reg) < 0)
		return why_set(why, -ENOMEM, "out of memory");
	o = obj_alloc(reg);
	if (!ow || !o) {
		if (o)
			obj_free(reg, o);
		return why_set(why, -ENOMEM, "out of memory");
	}
	o->id = id;
	err = id ? 0 : id_next(&reg->core->ids.objects, &o->id);
	if (err < 0) {
		obj_free(reg, o);
		return why_set(why, err, "the broker has no object ids left");
	}
	err = charge_add_room(x->domain, CHARGE_OBJECTS, 1, "", why);
	if (err < 0) {
		obj_free(reg, o);
		return err;
	}
	o->owner = ow;
	o->ctx = x;
	o->born_usec = objects_now_usec();
	o->kind = kind;
	o->handle = intent ? 0 : handle;
	o->intent = intent;
	o->made_here = made_here;
	TAILQ_INSERT_TAIL(&reg->objs, o, link);
	TAILQ_INSERT_TAIL(&ow->kinds[kind], o, kind_link);
	TAILQ_INSERT_TAIL(&x->objs, o, ctx_link);
	o->hash_next = *hash_slot(reg, o->id);
	*hash_slot(reg, o->id) = o;
	reg->n_objs++;
	if (intent)
		ow->n_intents++;
	else
		ow->n_objs++;
	dctx_obj_hold(x);
	*ret = o;
	return 0;
}

int objects_add_id(struct client *c, struct dctx *x, enum ibc_obj_kind kind,
		   bool intent, bool made_here, uint32_t handle, uint64_t id,
		   struct why *why, struct obj **ret)
{
	return obj_add(c->core->registry, owner_of(c), x, kind, intent,
		       made_here, handle, id, why, ret);
}

int objects_add_detached(struct obj_owner *ow, struct dctx *x,
			 enum ibc_obj_kind kind, bool intent, bool made_here,
			 uint32_t handle, uint64_t id, struct why *why,
			 struct obj **ret)
{
	return obj_add(ow->reg, ow, x, kind, intent, made_here, handle, id, why,
		       ret);
}

struct obj *objects_find(struct client *c, uint64_t id)
{
	struct obj *o;

	if (!c->owner)
		return NULL;
	o = hash_find(c->core->registry, id);
	return o && o->owner == c->owner ? o : NULL;
}

struct obj *objects_find_id(struct core *core, uint64_t id)
{
	return hash_find(core->registry, id);
}

struct obj *objects_find_in_domain(struct client *c, uint64_t id)
{
	struct obj *o = hash_find(c->core->registry, id);

	return o && o->ctx->domain == c->domain ? o : NULL;
}

void objects_set_handle(struct obj *o, uint32_t handle)
{
	o->handle = handle;
	o->intent = false;
	o->owner->n_intents--;
	o->owner->n_objs++;
	sink_obj_saved(o->owner->reg->core, o);
}

/* Take @o out of the registry; its charge is the caller's. @unnamed: its
 * object stays in the device, in no record's name (obj_unlink_kept()). */
static void obj_unlink(struct obj *o, bool unnamed)
{
	struct obj_owner *ow = o->owner;
	struct registry *reg = ow->reg;
	struct dctx *x = o->ctx;
	const struct obj_watcher *w = reg->watchers[o->kind];

	for (unsigned int i = 0; i < reg->n_watchers[o->kind]; i++)
		if (w[i].fam->removed)
			w[i].fam->removed(reg->core, o, *w[i].data);
	if (unnamed)
		sink_obj_unnamed(reg->core, o);
	else
		sink_obj_gone(reg->core, o);
	TAILQ_REMOVE(&reg->objs, o, link);
	TAILQ_REMOVE(&ow->kinds[o->kind], o, kind_link);
	TAILQ_REMOVE(&x->objs, o, ctx_link);
	hash_remove(reg, o);
	reg->n_objs--;
	if (o->intent)
		ow->n_intents--;
	else
		ow->n_objs--;
	if (o->stuck)
		ow->stuck--;
	obj_free(reg, o);
	dctx_obj_release(reg->core, x);
}

void objects_remove(struct obj *o)
{
	charge_sub(o->ctx->domain, CHARGE_OBJECTS, 1);
	obj_unlink(o, false);
}

/* @o leaves the registry, its object left to the kernel (unaccounted):
 * on a device whose kernel is the broker, the object it made stays in the
 * context, so a restart must make it again (the journal keeps what
 * does). */
static void obj_unlink_kept(struct obj *o)
{
	obj_unlink(o, o->made_here && o->ctx->dc &&
			      (!o->intent || o->window_made));
}

void objects_drop_intent(struct obj *o)
{
	struct dctx *x = o->ctx;

	charge_add_uint(&x->unaccounted, 1, "a context's unaccounted objects");
	obj_unlink_kept(o);
	sink_ctx_saved(x->core, x);
}

/* Drop @ow's records in @x, and put only @ow: this can run nested in
 * another owner's cleanup (a DM's last release notifies, a send fails,
 * a session closes), which must find its own owner still there. */
static void ctx_let_go_owner(struct dctx *x, struct obj_owner *ow)
{
	struct obj *o, *tmp;

	for (unsigned int k = 0; k < OBJ_KIND_COUNT; k++) {
		TAILQ_FOREACH_SAFE(o, &ow->kinds[k], kind_link, tmp) {
			if (o->ctx != x || o->family_owned ||
			    objects_hook_destroys(ow->reg, o))
				continue;
			charge_add_uint(&x->unaccounted, 1,
					"a context's unaccounted objects");
			obj_unlink_kept(o);
		}
	}
	sink_ctx_saved(x->core, x);
	objects_owner_put(ow);
}

void objects_ctx_let_go(struct core *core, struct dctx *x, uint64_t client_id)
{
	struct registry *reg = core->registry;
	struct obj_owner *ow;
	struct obj *o, *tmp;

	/* The last record must not free @x under the walk. */
	dctx_obj_hold(x);
	if (client_id) {
		TAILQ_FOREACH(ow, &reg->owners, link) {
			if (ow->client_id == client_id) {
				ctx_let_go_owner(x, ow);
				break;
			}
		}
		dctx_obj_release(core, x);
		return;
	}
	TAILQ_FOREACH_SAFE(o, &reg->objs, link, tmp) {
		if (o->ctx != x || o->family_owned ||
		    o->owner->state == OWNER_LIVE ||
		    objects_hook_destroys(reg, o))
			continue;
		ow = o->owner;
		charge_add_uint(&x->unaccounted, 1,
				"a context's unaccounted objects");
		obj_unlink_kept(o);
		objects_owner_put(ow);
	}
	sink_ctx_saved(core, x);
	dctx_obj_release(core, x);
}

int obj_state(const struct obj *o)
{
	if (o->intent)
		return RDMAB__OBJECT_INFO__STATE__INTENT;
	if (o->stuck)
		return RDMAB__OBJECT_INFO__STATE__STUCK;
	switch (o->owner->state) {
	case OWNER_LIVE:
		return RDMAB__OBJECT_INFO__STATE__LIVE;
	case OWNER_DETACHED:
		return RDMAB__OBJECT_INFO__STATE__DETACHED;
	default:
		return RDMAB__OBJECT_INFO__STATE__DESTROYING;
	}
}

/* --- what requests do ----------------------------------------------------- */

int objects_destroy_request(struct client *c, uint64_t id, struct why *why)
{
	struct obj *o = objects_find(c, id);
	struct registry *reg = c->core->registry;
	int ret;

	if (!o)
		return why_set(why, -ENOENT,
			       "object %" PRIu64 " is not one of this "
			       "session's",
			       id);
	if (o->family_owned)
		return why_set(why, -EINVAL,
			       "object %" PRIu64 " is a %s import: "
			       "ibc_dm_unimport releases it",
			       id, obj_kind_name(o->kind));
	/* Most kinds have no watcher: no call for them (make bench-ir). */
	if (reg->n_watchers[o->kind] && objects_hook_destroys(reg, o))
		return why_set(why, -EINVAL,
			       "%s %" PRIu64 " belongs to an RSS object: "
			       "destroy it with ibc_rss_destroy",
			       obj_kind_name(o->kind), id);
	if (reg->n_watchers[o->kind] && !o->intent) {
		ret = objects_hook_before_owner_destroy(reg, o, why);
		if (ret < 0)
			return ret;
	}
	/* A verbs client destroys its objects itself, after this
	 * unregister; a soft object is the broker's to destroy. */
	if (o->made_here && o->ctx->dc && (!o->intent || o->window_made)) {
		ret = o->ctx->dev->ctx_ops->obj_destroy(o->ctx->dc, o->kind,
							o->handle, why);
		/* -ENOENT: the handle names no object any more (destroyed
		 * against the rules): nothing was destroyed, and the record
		 * goes, as in the cleanup; kept, the owner's cleanup would
		 * destroy whatever object the device gives that handle
		 * next. */
		if (ret < 0 && ret != -ENOENT)
			return ret;
		objects_remove(o);
		return ret;
	}
	objects_remove(o);
	return 0;
}

int objects_register_request(struct client *c, uint64_t id, uint32_t handle,
			     struct why *why)
{
	struct obj *o = objects_find(c, id);

	if (!o)
		return why_set(why, -ENOENT,
			       "object %" PRIu64 " is not one of this "
			       "session's",
			       id);
	if (!o->intent)
		return why_set(why, -EINVAL,
			       "object %" PRIu64 " is registered already "
			       "(handle %u)",
			       id, o->handle);
	/* A soft intent: the broker's kernel call gave the handle. */
	if (o->made_here && (!o->window_made || handle != o->handle))
		return why_set(why, -EINVAL, "object %" PRIu64 " %s", id,
			       o->window_made ?
				       "has another handle" :
				       "was not made yet (no kernel call)");
	objects_set_handle(o, handle);
	return 0;
}

/* --- the registry --------------------------------------------------------- */

/* The kernel frees a removed device's objects with its contexts: the
 * records go, whatever their state. */
static void objects_device_gone(struct core *core, struct device *dev,
				const char *reason)
{
	struct registry *reg = core->registry;
	struct obj_owner *ow, *otmp;
	struct obj *o, *tmp;
	unsigned int n = 0;

	(void)reason;
	TAILQ_FOREACH_SAFE(o, &reg->objs, link, tmp)
		if (o->ctx->dev == dev) {
			objects_remove(o);
			n++;
		}
	TAILQ_FOREACH_SAFE(ow, &reg->owners, link, otmp)
		objects_owner_put(ow);
	if (n)
		log_info("%s: %u objects of its contexts left the registry",
			 dev->name, n);
}

static int objects_init(struct core *core)
{
	struct registry *reg = calloc(1, sizeof(*reg));

	if (!reg)
		return -ENOMEM;
	reg->hash = calloc(OBJ_HASH_MIN, sizeof(*reg->hash));
	if (!reg->hash) {
		free(reg);
		return -ENOMEM;
	}
	reg->hash_size = OBJ_HASH_MIN;
	reg->core = core;
	reg->slice = OBJ_SLICE;
	reg->rounds = OBJ_ROUNDS;
	reg->backoff_ms = OBJ_BACKOFF_MS;
	/* The kinds by the device's destroy ranks: the kernel's order is
	 * the object kinds', whatever families make them. */
	for (unsigned int k = 0; k < OBJ_KIND_COUNT; k++) {
		unsigned int rank = obj_kind_destroy_rank(k);

		if (rank) {
			reg->cleanup_order[rank - 1] = (enum ibc_obj_kind)k;
			reg->cleanup_kinds++;
		}
	}
	TAILQ_INIT(&reg->objs);
	TAILQ_INIT(&reg->owners);
	TAILQ_INIT(&reg->watches);
	for (unsigned int f = 0; f < FAMILY_COUNT; f++)
		for (unsigned int k = 0; k < OBJ_KIND_COUNT; k++)
			if (families[f]->obj_hooks[k])
				objects_watch(reg, (enum ibc_obj_kind)k,
					      families[f]->obj_hooks[k],
					      &core->family_state[f], f);
	core->registry = reg;
	return 0;
}

static void objects_fini(struct core *core)
{
	struct registry *reg = core->registry;
	struct obj_owner *ow;
	struct obj *o;

	if (!reg)
		return;
	while ((o = TAILQ_FIRST(&reg->objs))) {
		TAILQ_REMOVE(&reg->objs, o, link);
		free(o);
	}
	while ((o = reg->spare)) {
		reg->spare = o->hash_next;
		free(o);
	}
	obj_watches_fini(reg);
	while ((ow = TAILQ_FIRST(&reg->owners))) {
		TAILQ_REMOVE(&reg->owners, ow, link);
		if (ow->conn)
			ow->conn->owner = NULL;
		if (ow->ev)
			event_free(ow->ev);
		free(ow);
	}
	free(reg->hash);
	free(reg);
	core->registry = NULL;
}

int objects_watch(struct registry *reg, enum ibc_obj_kind kind,
		  const struct obj_family *fam, void *const *data,
		  unsigned int slot)
{
	unsigned int n = reg->n_watchers[kind];

	if (slot >= FAMILY_COUNT)
		return -EINVAL;
	if (n == OBJ_WATCHERS_MAX)
		return -ENOSPC;
	reg->watchers[kind][n].fam = fam;
	reg->watchers[kind][n].data = data;
	reg->watchers[kind][n].slot = slot;
	reg->n_watchers[kind]++;
	return 0;
}

int objects_hook_release(struct registry *reg, struct obj *o)
{
	const struct obj_watcher *w = reg->watchers[o->kind];

	for (unsigned int i = 0; i < reg->n_watchers[o->kind]; i++)
		if (w[i].fam->release)
			return w[i].fam->release(reg->core, o, *w[i].data);
	return -EOPNOTSUPP;
}

int objects_hook_before_destroy(struct registry *reg, struct obj *o)
{
	const struct obj_watcher *w = reg->watchers[o->kind];
	int ret = 0;

	for (unsigned int i = 0; i < reg->n_watchers[o->kind] && !ret; i++)
		if (w[i].fam->before_destroy)
			ret = w[i].fam->before_destroy(reg->core, o,
						       *w[i].data);
	return ret;
}

static const struct obj_watcher *obj_destroyer(const struct registry *reg,
					       const struct obj *o)
{
	const struct obj_watcher *w = reg->watchers[o->kind];

	for (unsigned int i = 0; i < reg->n_watchers[o->kind]; i++)
		if (w[i].fam->destroy && o->slot[w[i].slot].p)
			return &w[i];
	return NULL;
}

bool objects_hook_destroys(const struct registry *reg, const struct obj *o)
{
	return obj_destroyer(reg, o) != NULL;
}

int objects_hook_destroy(struct registry *reg, struct obj *o, struct why *why)
{
	const struct obj_watcher *w = obj_destroyer(reg, o);

	return w->fam->destroy(reg->core, o, *w->data, why);
}

int objects_hook_before_owner_destroy(struct registry *reg, struct obj *o,
				      struct why *why)
{
	const struct obj_watcher *w = reg->watchers[o->kind];
	int ret = 0;

	for (unsigned int i = 0; i < reg->n_watchers[o->kind] && !ret; i++)
		if (w[i].fam->before_owner_destroy)
			ret = w[i].fam->before_owner_destroy(reg->core, o,
							     *w[i].data, why);
	return ret;
}

int objects_hook_uses(struct registry *reg, struct obj *o,
		      struct obj *const *uses, size_t n, struct why *why)
{
	const struct obj_watcher *w = reg->watchers[o->kind];
	int ret = 0;

	for (unsigned int i = 0; i < reg->n_watchers[o->kind] && !ret; i++)
		if (w[i].fam->uses)
			ret = w[i].fam->uses(reg->core, o, uses, n, *w[i].data,
					     why);
	return ret;
}

int objects_hook_restore(struct registry *reg, struct obj *o,
			 const struct state_obj *m)
{
	const struct obj_watcher *w = reg->watchers[o->kind];
	int ret = 0;

	for (unsigned int i = 0; i < reg->n_watchers[o->kind] && !ret; i++)
		if (w[i].fam->restore)
			ret = w[i].fam->restore(reg->core, o, m, *w[i].data);
	return ret;
}

const struct family objects_family = {
	.name = "objects",
	.init = objects_init,
	.fini = objects_fini,
	.session_closing = objects_conn_closing,
	.device_gone = objects_device_gone,
};
