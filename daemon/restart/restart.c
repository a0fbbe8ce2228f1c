// SPDX-License-Identifier: MIT
/*
 * Restart (restart.h), below the handlers: the state memfd's compaction,
 * the counters, the hooks through which the registry's changes reach the
 * journal, and what a family's restore calls. struct restart's life, the
 * sessions and the restore itself are the transport's (restart-srv.c,
 * restore.c).
 */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/registry/charge.h"
#include "daemon/registry/core.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/domain.h"
#include "daemon/registry/journal-sink.h"
#include "daemon/util/log.h"
#include "daemon/registry/objects.h"
#include "daemon/util/queue.h"
#include "daemon/util/why.h"
#include "daemon/registry/user.h"
#include "daemon/restart/restart-int.h"
#include "daemon/restart/restart.h"
#include "daemon/restart/store-share.h"
#include "daemon/restart/restore-object.h"
#include "proto/rdmabroker.pb-c.h"
#include "proto/state.pb-c.h"

/* Ids handed out between two Counters records: a restart skips what is
 * left of the block, never reuses one. */
#define ID_BLOCK 4096

struct journal *restart_journal(const struct core *core)
{
	return core->restart && !core->restart->handoff ? core->restart->j :
							  NULL;
}

struct fdstore *restart_fdstore(const struct core *core)
{
	return core->restart && !core->restart->handoff ? core->restart->store :
							  NULL;
}

int restart_store_room(const struct core *core, uint32_t uid, const char *what,
		       struct why *why)
{
	const struct fdstore *st = restart_fdstore(core);
	const struct store_share *sh =
		core->restart ? core->restart->share : NULL;

	if (!st)
		return 0;
	if (store_share_room(sh, uid) < 0)
		return why_set(why, -EDQUOT,
			       "uid %u holds %u places in the broker's fd "
			       "store (XRCD names and DMs), its limit "
			       "([broker] fd_store_per_uid = %u): %s is not "
			       "made",
			       (unsigned int)uid, store_share_places(sh, uid),
			       core->config.limits.fd_store_per_uid, what);
	if (fdstore_count(st) >= fdstore_max(st))
		return why_set(why, -ENOSPC,
			       "the broker's fd store is full (%u "
			       "descriptors): %s is not made",
			       fdstore_max(st), what);
	return 0;
}

static void state_name(char *buf, size_t size, uint64_t gen)
{
	snprintf(buf, size, FDSTORE_PREFIX "state.%" PRIu64, gen);
}

void restart_fd_name(char *buf, size_t size, const char *what, uint64_t id)
{
	size_t pre = strlen(FDSTORE_PREFIX), len = strlen(what), n = 0, at;
	char digits[24];

	/* By hand: a connection's and a context's names are made at every
	 * open and close, and snprintf() is most of their cost. */
	do
		digits[n++] = (char)('0' + id % 10);
	while ((id /= 10) && n < sizeof(digits));
	if (pre + len + 1 + n >= size) {
		*buf = '\0';
		return;
	}
	memcpy(buf, FDSTORE_PREFIX, pre);
	memcpy(buf + pre, what, len);
	at = pre + len;
	buf[at++] = '.';
	while (n)
		buf[at++] = digits[--n];
	buf[at] = '\0';
}

static void id_save(Rdmab__State__IdSpace *out, const struct id_space *s,
		    uint64_t mark)
{
	out->count = mark;
	out->key0 = s->key[0];
	out->key1 = s->key[1];
}

/* Each id space (rs->ids), with the field of @c that keeps it (@at): the
 * registry's, then each family's (family.h's ids). */
static unsigned int ids_collect(struct core *core, Rdmab__State__Counters *c,
				Rdmab__State__IdSpace **at[RESTART_IDS])
{
	struct restart *rs = core->restart;
	unsigned int n = 0;

	rs->ids[n] = &core->ids.clients;
	at[n++] = &c->clients;
	rs->ids[n] = &core->ids.contexts;
	at[n++] = &c->contexts;
	rs->ids[n] = &core->ids.objects;
	at[n++] = &c->objects;
	for (unsigned int f = 0; f < FAMILY_COUNT; f++) {
		if (!families[f]->ids)
			continue;
		rs->ids[n] = families[f]->ids(core);
		at[n++] =
			(Rdmab__State__IdSpace **)((char *)c +
						   families[f]->counters_field);
	}
	rs->n_ids = n;
	return n;
}

/* Write the counters with each id space's count moved to the end of its
 * block: what a restart starts from. */
int restart_counters_save(struct core *core)
{
	struct restart *rs = core->restart;
	Rdmab__State__Counters c = RDMAB__STATE__COUNTERS__INIT;
	Rdmab__State__IdSpace ids[RESTART_IDS], **at[RESTART_IDS];
	Rdmab__State__DeviceSerials ser[DEVICE_MAX], *serp[DEVICE_MAX];
	unsigned int n;

	if (!restart_journal(core))
		return 0;
	n = ids_collect(core, &c, at);
	for (unsigned int i = 0; i < n; i++) {
		rdmab__state__id_space__init(&ids[i]);
		rs->id_mark[i] = rs->ids[i]->count + ID_BLOCK;
		id_save(&ids[i], rs->ids[i], rs->id_mark[i]);
		*at[i] = &ids[i];
	}
	for (size_t i = 0; i < core->devices.n; i++) {
		struct device *dev = &core->devices.dev[i];
		struct device_serials *mark = &rs->serial_mark[i];

		dev->ops->serials_get(dev, mark);
		mark->num += ID_BLOCK;
		mark->key += ID_BLOCK;
		mark->xrc_num += ID_BLOCK;
		rdmab__state__device_serials__init(&ser[i]);
		ser[i].device = dev->name;
		ser[i].num = mark->num;
		ser[i].key = mark->key;
		ser[i].xrc_num = mark->xrc_num;
		serp[i] = &ser[i];
	}
	c.n_devices = core->devices.n;
	c.devices = serp;
	c.generation = rs->generation;
	c.restarts = rs->restarts;
	c.last_restore_usec = rs->last_restore_usec;
	c.requests_served = core->requests_served;
	return journal_put(rs->j, JOURNAL_COUNTERS, 0, &c.base);
}

/* Has a device handed out the serials up to its saved mark? A serial
 * wraps (24 bits on soft): one below its mark by more than the margin
 * passed it too. */
static bool serials_passed(struct core *core)
{
	const struct restart *rs = core->restart;

	for (size_t i = 0; i < core->devices.n; i++) {
		const struct device *dev = &core->devices.dev[i];
		const struct device_serials *mark = &rs->serial_mark[i];
		struct device_serials now;

		dev->ops->serials_get(dev, &now);
		if (now.num - mark->num < UINT32_MAX - ID_BLOCK ||
		    now.key - mark->key < UINT32_MAX - ID_BLOCK ||
		    now.xrc_num - mark->xrc_num < UINT32_MAX - ID_BLOCK)
			return true;
	}
	return false;
}

/* Have the registry's id spaces passed their saved marks? By name: every
 * create asks (make bench-ir), and a family checks its own spaces after
 * it takes an id (restart_ids_check()). */
static bool core_ids_passed(const struct core *core)
{
	const struct restart *rs = core->restart;

	return core->ids.clients.count >= rs->id_mark[0] ||
	       core->ids.contexts.count >= rs->id_mark[1] ||
	       core->ids.objects.count >= rs->id_mark[2];
}

void restart_ids_check(struct core *core)
{
	struct restart *rs = core->restart;

	if (!rs || !rs->j)
		return;
	if (core_ids_passed(core)) {
		restart_counters_save(core);
		return;
	}
	/* The families', from RESTART_CORE_IDS on: none before the first
	 * save (the restore's), which collects them. */
	for (unsigned int i = RESTART_CORE_IDS; i < rs->n_ids; i++)
		if (rs->ids[i]->count >= rs->id_mark[i]) {
			restart_counters_save(core);
			return;
		}
}

void restart_serials_adopt(struct core *core, const Rdmab__State__Counters *c)
{
	for (size_t i = 0; i < c->n_devices; i++) {
		const Rdmab__State__DeviceSerials *m = c->devices[i];
		struct device *dev = device_find(&core->devices, m->device);
		struct device_serials v = { m->num, m->key, m->xrc_num };

		if (dev && strcmp(dev->name, m->device) == 0)
			dev->ops->serials_set(dev, &v);
	}
}

void restart_compact_cb(evutil_socket_t fd, short what, void *arg)
{
	struct core *core = arg;
	struct restart *rs = core->restart;
	struct journal *fresh;
	char name[FDSTORE_NAME_MAX + 1], old[FDSTORE_NAME_MAX + 1];
	int ret;

	if (!journal_wants_compaction(rs->j))
		return;
	ret = journal_compact(rs->j, &fresh);
	if (ret == 0) {
		state_name(name, sizeof(name), journal_gen(fresh));
		ret = fdstore_put(rs->store, name, journal_fd(fresh));
		if (ret < 0)
			journal_free(fresh);
	}
	if (ret < 0) {
		log_warn("cannot compact the state journal (%zu bytes): %s",
			 journal_used(rs->j), strerror(-ret));
		return;
	}
	/* Stored first: a kill between the two leaves both, and the next
	 * daemon takes the newer. */
	state_name(old, sizeof(old), journal_gen(rs->j));
	fdstore_remove(rs->store, old);
	log_debug("state journal compacted from %zu to %zu bytes",
		  journal_used(rs->j), journal_used(fresh));
	journal_free(rs->j);
	rs->j = fresh;
}

void restart_after_write(struct core *core, int ret)
{
	struct restart *rs = core->restart;

	if (ret < 0 && !rs->warned) {
		rs->warned = true;
		log_err("the state journal failed (%s): a restart from here "
			"starts clean",
			strerror(-ret));
	}
}

/* The log grew past its bound: compact from the loop, where no change is
 * half made. */
void restart_journal_full(void *arg)
{
	struct core *core = arg;

	event_active(core->restart->compact_ev, EV_TIMEOUT, 0);
}

bool restart_handing_off(const struct core *core)
{
	return core->restart && core->restart->handoff;
}

void restart_ctx_saved(struct core *core, const struct dctx *x)
{
	Rdmab__State__Context m = RDMAB__STATE__CONTEXT__INIT;
	Rdmab__State__ImportRecords *imp, **imp_ptrs;

	/* A context whose device went is never adopted: it keeps the
	 * record it had. */
	if (!restart_journal(core) || !x->dc)
		return;
	m.domain = x->domain->name;
	m.domain_kind = x->domain->kind;
	if (x->domain->pool->cgroup)
		m.domain_cgroup = x->domain->pool->cgroup;
	if (x->domain->pool != x->domain)
		m.domain_pool = x->domain->pool->name;
	m.device = x->dev->name;
	m.pd_handle = x->dev->ctx_ops->pd_handle(x->dc);
	m.unaccounted = x->unaccounted;
	m.dead_imports = x->dead_imports;
	m.dead_internal = x->dead_internal;
	m.own_internal = x->own_internal;
	m.rekeyed = x->rekeyed;
	families_ctx_save(x, &m);
	/* Without memory, the record says what a bare import makes: the
	 * restore makes that much again. */
	restart_ctx_imports_save(x, &m, &imp, &imp_ptrs);
	restart_after_write(core, journal_put(core->restart->j, JOURNAL_CONTEXT,
					      x->id, &m.base));
	free(imp_ptrs);
	free(imp);
}

void restart_ctx_opened(struct core *core, const struct dctx *x)
{
	struct fdstore *st = restart_fdstore(core);
	char name[FDSTORE_NAME_MAX + 1];
	int ret;

	if (!st)
		return;
	restart_fd_name(name, sizeof(name), "ctx", x->id);
	ret = fdstore_put(st, name, x->dev->ctx_ops->fd(x->dc));
	if (ret < 0 && ret != -EEXIST)
		log_warn("context %" PRIu64 ": not kept in the fd store (%s)",
			 x->id, strerror(-ret));
	restart_ctx_saved(core, x);
	restart_ids_check(core);
}

void restart_ctx_books(struct core *core, struct dctx *x,
		       const Rdmab__State__Context *m)
{
	struct domain *d = x->domain;

	/* What the kernel still holds in the context: charged as when it
	 * was counted, over the limit too (it exists), given back at the
	 * context's close as ever. */
	x->unaccounted = m->unaccounted;
	charge_add(d, CHARGE_OBJECTS, x->unaccounted);
	/* The families' books of it, and their charges. */
	families_ctx_restore(core, x, m);
	x->dead_imports = m->dead_imports;
	x->dead_internal = m->dead_internal;
	/* Adopted, the context's internal objects are not all the
	 * broker's (unaccounted_ctx_opened() counted every one). */
	x->own_internal = m->own_internal;
	x->rekeyed = m->rekeyed;
	restart_ctx_saved(core, x);
}

void restart_ctx_fd_drop(struct core *core, const struct dctx *x)
{
	char name[FDSTORE_NAME_MAX + 1];

	if (!restart_fdstore(core))
		return;
	restart_fd_name(name, sizeof(name), "ctx", x->id);
	fdstore_remove(core->restart->store, name);
}

void restart_ctx_closed(struct core *core, const struct dctx *x)
{
	if (!restart_fdstore(core))
		return;
	restart_ctx_fd_drop(core, x);
	restart_unnamed_closed(core, x);
	restart_after_write(
		core, journal_del(core->restart->j, JOURNAL_CONTEXT, x->id));
}

/* A session's hold is a slot (journal.h), not a record: a record was
 * most of what the journal cost an open and close (P2, J1): a slot is
 * written by a few stores, and freed by one. */
void restart_hold_saved(struct core *core, uint64_t client_id,
			struct conn_ctx *cc)
{
	/* restart_journal(), inline: the sink is set only with restart. */
	struct journal *j = core->restart->handoff ? NULL : core->restart->j;
	int ret;

	if (!j)
		return;
	/* Its context and import are the hold's for its life: only the
	 * count changes. */
	if (cc->hold_slot)
		ret = journal_slot_count(j, cc->hold_slot, cc->opens);
	else
		ret = journal_slot_add(j, client_id, cc->ctx->id, cc->import,
				       cc->opens, &cc->hold_slot);
	if (ret < 0)
		restart_after_write(core, ret);
}

void restart_hold_gone(struct core *core, struct conn_ctx *cc)
{
	if (!core->restart->handoff)
		journal_slot_free(core->restart->j, cc->hold_slot);
	cc->hold_slot = 0;
}

/* After an object's record: the registry's id spaces (the families
 * check theirs when they take an id), and, only for a create on a device
 * that numbers its objects (@made), its serials. */
static void obj_ids_check(struct core *core, const struct obj_made *made)
{
	if ((made && serials_passed(core)) || core_ids_passed(core))
		restart_counters_save(core);
}

/* Others' fields of @o's record (its families', its spec's): written in
 * @m by number. A number @m has no uint64 field of is a family's or the
 * device's bug: logged, and the record written without them. */
static void obj_fields_put(ProtobufCMessage *m, const struct rec_fields *f,
			   const struct obj *o)
{
	if (state_fields_put(m, f) < 0)
		log_err("object %" PRIu64 ": a field of its %s record is "
			"none of the record's: the record goes without it",
			o->id, m->descriptor->short_name);
}

/* The registry's record of @o, and, for an object the broker made on a
 * device it is the kernel of, what makes it again (@spec, @attr). */
static void obj_put(struct core *core, const struct obj *o,
		    const struct obj_spec *spec, const struct obj_made *made,
		    const Rdmab__ObjAttr *attr)
{
	Rdmab__State__Object m = RDMAB__STATE__OBJECT__INIT;
	Rdmab__State__SoftObject so = RDMAB__STATE__SOFT_OBJECT__INIT;
	struct rec_fields fam, dev;
	uint32_t uses[OBJ_MAX_USES];

	/* Only their counts zeroed: this runs at every create. */
	fam.n = 0;
	dev.n = 0;
	m.owner = o->owner->client_id;
	m.ctx_id = o->ctx->id;
	m.kind = o->kind;
	m.handle = o->handle;
	m.intent = o->intent;
	m.made_here = o->made_here;
	m.window_made = o->window_made;
	m.stuck = o->stuck;
	m.family_owned = o->family_owned;
	m.born_usec = o->born_usec;
	objects_hook_save(core->registry, o, &fam);
	if (fam.n)
		obj_fields_put(&m.base, &fam, o);
	if (spec) {
		for (unsigned int i = 0; i < OBJ_MAX_USES; i++)
			uses[i] = spec->uses[i];
		so.n_uses = OBJ_MAX_USES;
		so.uses = uses;
		so.used_mask = spec->used;
		so.attr = (Rdmab__ObjAttr *)attr;
		obj_spec_fields_save(spec, &dev);
		if (dev.n)
			obj_fields_put(&so.base, &dev, o);
		if (made) {
			so.num = made->num;
			so.key = made->lkey;
		}
		m.soft = &so;
	}
	restart_after_write(core, journal_put(core->restart->j, JOURNAL_OBJECT,
					      o->id, &m.base));
	obj_ids_check(core, made);
}

/* A soft object made in the intent window ([soft] intent_window) is
 * registered: its record, written at the kernel call with its spec, says
 * so from now on; otherwise a restore would make it an intent again,
 * which the client's death leaves unaccounted instead of destroying. */
static void obj_registered(struct core *core, const struct obj *o)
{
	struct journal *j = core->restart->j;
	Rdmab__State__Object *m;
	struct journal_rec rec;

	if (journal_get(j, JOURNAL_OBJECT, o->id, &rec) < 0)
		return;
	m = rdmab__state__object__unpack(NULL, rec.len, rec.data);
	if (!m) {
		restart_after_write(core, -ENOMEM);
		return;
	}
	m->intent = false;
	m->handle = o->handle;
	restart_after_write(core,
			    journal_put(j, JOURNAL_OBJECT, o->id, &m->base));
	rdmab__state__object__free_unpacked(m, NULL);
}

void restart_obj_saved(struct core *core, const struct obj *o)
{
	if (!restart_journal(core))
		return;
	/* A soft object's record carries its spec (restart_obj_made()):
	 * rewritten whole, it would lose it. */
	if (o->made_here && !o->intent) {
		if (o->window_made)
			obj_registered(core, o);
		return;
	}
	obj_put(core, o, NULL, NULL, NULL);
}

void restart_obj_made(struct core *core, const struct obj *o,
		      const struct obj_spec *spec, const struct obj_made *made,
		      const Rdmab__ObjAttr *attr)
{
	if (restart_journal(core))
		obj_put(core, o, spec, made, attr);
}

void restart_obj_packed(struct core *core, const struct obj *o,
			const struct obj_made *made, const uint8_t *data,
			size_t len)
{
	if (!restart_journal(core))
		return;
	restart_after_write(core,
			    journal_put_packed(core->restart->j, JOURNAL_OBJECT,
					       o->id, data, len));
	obj_ids_check(core, made);
}

void restart_obj_gone(struct core *core, const struct obj *o)
{
	if (restart_journal(core))
		restart_after_write(core, journal_del(core->restart->j,
						      JOURNAL_OBJECT, o->id));
}

/* restart_state_check()'s walk: where it words its refusal, and who
 * keeps the objects. */
struct check_arg {
	char *why;
	size_t why_len;
	int (*obj)(void *arg, const struct journal_rec *r,
		   const struct state_obj *m);
	void *obj_arg;
};

/* An object's record: read as the restore reads it (most of a state:
 * protobuf-c's unpack was half of a restore), then kept when asked. */
static int check_obj(struct check_arg *ck, const struct journal_rec *r)
{
	struct state_obj m;

	if (state_obj_decode(r->data, r->len, &m) < 0) {
		snprintf(ck->why, ck->why_len,
			 "record %u/%" PRIu64 " does not unpack as a "
			 "StateObject",
			 r->kind, r->key);
		return -EBADMSG;
	}
	return ck->obj ? ck->obj(ck->obj_arg, r, &m) : 0;
}

/* Whether every record the registry reads unpacks: the restore refuses
 * a state whole before it adopts anything, never half of it. */
static int check_one(void *arg, const struct journal_rec *r)
{
	struct check_arg *ck = arg;
	const ProtobufCMessageDescriptor *d;
	ProtobufCMessage *m;

	switch (r->kind) {
	case JOURNAL_COUNTERS:
		d = &rdmab__state__counters__descriptor;
		break;
	case JOURNAL_CONTEXT:
		d = &rdmab__state__context__descriptor;
		break;
	case JOURNAL_SESSION:
		d = &rdmab__state__session__descriptor;
		break;
	case JOURNAL_OBJECT:
		return check_obj(ck, r);
	case JOURNAL_SESSION_HOLD:
		d = &rdmab__state__session_hold__descriptor;
		break;
	case JOURNAL_OWNER:
		d = &rdmab__state__owner__descriptor;
		break;
	case JOURNAL_DOMAIN:
		d = &rdmab__state__domain__descriptor;
		break;
	case JOURNAL_UNNAMED:
		d = &rdmab__state__unnamed__descriptor;
		break;
	default:
		return 0;
	}
	m = protobuf_c_message_unpack(d, NULL, r->len, r->data);
	if (!m) {
		snprintf(ck->why, ck->why_len,
			 "record %u/%" PRIu64 " does not unpack as a %s",
			 r->kind, r->key, d->short_name);
		return -EBADMSG;
	}
	protobuf_c_message_free_unpacked(m, NULL);
	return 0;
}

int restart_state_check(const struct journal_view *v,
			int (*obj)(void *arg, const struct journal_rec *r,
				   const struct state_obj *m),
			void *arg, char *why, size_t why_len)
{
	static const uint32_t kinds[] = {
		JOURNAL_COUNTERS, JOURNAL_CONTEXT,	JOURNAL_SESSION,
		JOURNAL_OBJECT,	  JOURNAL_SESSION_HOLD, JOURNAL_OWNER,
		JOURNAL_DOMAIN,	  JOURNAL_UNNAMED
	};
	struct check_arg ck = { why, why_len, obj, arg };
	int ret;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		ret = journal_each(v, kinds[i], check_one, &ck);
		if (ret < 0)
			return ret;
	}
	return 0;
}

void restart_owner_saved(struct core *core, struct obj_owner *ow)
{
	Rdmab__State__Owner m = RDMAB__STATE__OWNER__INIT;

	if (!restart_journal(core))
		return;
	ow->journaled = true;
	m.pid = (uint32_t)ow->pid;
	m.start_time = ow->start_time;
	m.pidfd = ow->watch ? ow->watch->key : 0;
	m.uid = (uint32_t)ow->uid;
	m.state = ow->state;
	restart_after_write(core, journal_put(core->restart->j, JOURNAL_OWNER,
					      ow->client_id, &m.base));
}

void restart_owner_gone(struct core *core, const struct obj_owner *ow)
{
	/* A live owner's session is its record; a session that ended
	 * holding nothing left none. */
	if (restart_journal(core) && ow->journaled)
		restart_after_write(core,
				    journal_del(core->restart->j, JOURNAL_OWNER,
						ow->client_id));
}

struct obj_owner *restart_owner_find(struct restore *rs, uint64_t client_id)
{
	Rdmab__State__Owner *m;
	struct journal_rec rec;
	struct obj_owner *ow = NULL;

	if (journal_find(rs->view, JOURNAL_OWNER, client_id, &rec) < 0)
		return NULL;
	m = rdmab__state__owner__unpack(NULL, rec.len, rec.data);
	if (!m)
		return NULL;
	if (m->state == OWNER_DETACHED || m->state == OWNER_DEAD)
		ow = objects_owner_adopt(rs->core, client_id, (pid_t)m->pid,
					 m->start_time, (uid_t)m->uid,
					 (enum owner_state)m->state);
	if (ow)
		ow->pidfd_key = m->pidfd;
	rdmab__state__owner__free_unpacked(m, NULL);
	return ow;
}

struct dctx *restart_ctx_find(struct core *core, uint64_t ctx_id)
{
	struct domain *d;
	struct dctx *x;

	TAILQ_FOREACH(d, &core->domains, link) {
		x = dctx_find_id(d, ctx_id);
		if (x)
			return x;
	}
	return NULL;
}

void restart_owners_watch(struct restore *rs, bool end)
{
	struct core *core = rs->core;
	struct registry *reg = core->registry;
	struct obj_owner *ow, *tmp;
	int err;

	TAILQ_FOREACH_SAFE(ow, &reg->owners, link, tmp) {
		if (ow->state == OWNER_LIVE || ow->watch || ow->ev)
			continue;
		if (!ow->n_objs && !ow->n_intents) {
			objects_owner_put(ow);
			continue;
		}
		if (end) {
			objects_owner_dead(ow);
			continue;
		}
		/* The pidfd kept of its process says whether it exited.
		 * Without one: one of the pid, whose process may be gone
		 * (-ESRCH) or another's by now; a process that started at
		 * another time than the record's is another, and the
		 * owner's is taken as exited (an older daemon's record has
		 * no start time: its pid is trusted). */
		if (ow->state == OWNER_DEAD) {
			err = -ESRCH;
		} else {
			struct user *u = user_get(core, ow->uid);
			int pidfd;

			err = restart_owner_watch_kept(rs, ow, u);
			if (err == -ENOENT) {
				err = obj_pidfd_open_as(ow->pid, ow->start_time,
							&pidfd);
				if (err == 0)
					err = obj_watch_join(ow, u, ow->uid,
							     pidfd);
			}
			/* Its record names the watch's pidfd again. */
			if (err == 0 && ow->watch->key)
				restart_owner_saved(core, ow);
			if (u)
				user_unref(core, u);
		}
		if (err == -ESRCH)
			objects_owner_dead(ow);
		else if (err < 0)
			log_err("client %" PRIu64 " (pid %d): cannot watch the "
				"process; its %u objects stay until the broker "
				"stops",
				ow->client_id, (int)ow->pid, ow->n_objs);
	}
}

void restart_status(const struct core *core, bool full, uint64_t *gen,
		    uint64_t *restarts, uint64_t *usec, char *what, size_t size)
{
	const struct restart *rs = core->restart;

	*what = '\0';
	if (!rs) {
		*gen = 1;
		*restarts = *usec = 0;
		if (full)
			snprintf(what, size, "off (no fd store)");
		return;
	}
	*gen = rs->generation;
	*restarts = rs->restarts;
	*usec = rs->last_restore_usec;
	if (!full)
		return;
	if (*rs->refused)
		snprintf(what, size, "state refused: %s", rs->refused);
	else if (rs->restarts)
		snprintf(what, size,
			 "%" PRIu64 " sessions, %" PRIu64 " contexts, %" PRIu64
			 " objects, %" PRIu64 " descriptors",
			 rs->adopted_sessions, rs->adopted_contexts,
			 rs->adopted_objects, rs->adopted_fds);
}

enum restart_journal_state restart_journal_status(const struct core *core,
						  char *what, size_t size)
{
	const struct restart *rs = core->restart;

	if (!rs) {
		snprintf(what, size, "none: restart is off (--no-restart)");
		return RESTART_JOURNAL_NONE;
	}
	if (!rs->j) {
		snprintf(what, size,
			 "none: it could not be made at start (%s), the next "
			 "restart starts clean",
			 strerror(-rs->j_err));
		return RESTART_JOURNAL_NONE;
	}
	if (journal_broken(rs->j)) {
		snprintf(what, size,
			 "abandoned after a write failed (%s), the next "
			 "restart starts clean",
			 strerror(-journal_error(rs->j)));
		return RESTART_JOURNAL_ABANDONED;
	}
	snprintf(what, size, "ok");
	return RESTART_JOURNAL_OK;
}

void restart_exit(void)
{
	log_notice("exiting; the next daemon goes on from here");
	_exit(0);
}

int restore_each(struct restore *rs, uint32_t kind,
		 int (*fn)(void *arg, const struct journal_rec *r), void *arg)
{
	return journal_each(rs->view, kind, fn, arg);
}

int restore_take_fd(struct restore *rs, const char *name, int *ret_fd)
{
	int ret = fdstore_take(rs->store, name, ret_fd);

	if (ret == 0)
		rs->adopted_fds++;
	return ret;
}

int restore_keep_fd(struct restore *rs, const char *name, int fd, uint32_t uid)
{
	if (fdstore_count(rs->store) + RESTART_STORE_OWN >=
	    fdstore_max(rs->store))
		return -ENOSPC;
	return fdstore_put_for(rs->store, name, fd, uid, true);
}

int restore_fail(struct restore *rs, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rs->why, sizeof(rs->why), fmt, ap);
	va_end(ap);
	return err;
}

const struct journal_sink restart_sink = {
	.ctx_opened = restart_ctx_opened,
	.ctx_closed = restart_ctx_closed,
	.ctx_saved = restart_ctx_saved,
	.ctx_fd_drop = restart_ctx_fd_drop,
	.hold_saved = restart_hold_saved,
	.hold_gone = restart_hold_gone,
	.obj_saved = restart_obj_saved,
	.obj_made = restart_obj_made,
	.obj_gone = restart_obj_gone,
	.owner_saved = restart_owner_saved,
	.owner_gone = restart_owner_gone,
	.obj_unnamed = restart_obj_unnamed,
	.domain_saved = restart_domain_saved,
	.domain_gone = restart_domain_gone,
	.pidfd_kept = restart_pidfd_kept,
	.pidfd_gone = restart_pidfd_gone,
};
