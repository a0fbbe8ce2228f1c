// SPDX-License-Identifier: MIT
/*
 * Restart (restart.h), below the handlers: the state memfd's compaction,
 * the counters, the hooks through which the registry's changes reach the
 * journal, and what a family's restore calls. struct restart's life, the
 * sessions and the restore itself are the transport's (restart-srv.c,
 * restore.c).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/core.h"
#include "daemon/ctx.h"
#include "daemon/domain.h"
#include "daemon/log.h"
#include "daemon/objects.h"
#include "daemon/restart-int.h"
#include "daemon/restart.h"
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

/* Write the counters with each id space's count moved to the end of its
 * block: what a restart starts from. */
int restart_counters_save(struct core *core)
{
	struct restart *rs = core->restart;
	Rdmab__State__Counters c = RDMAB__STATE__COUNTERS__INIT;
	Rdmab__State__IdSpace ids[4];
	const struct id_space *sp[4] = { &core->ids.clients,
					 &core->ids.contexts,
					 &core->ids.objects, &core->ids.dms };

	if (!restart_journal(core))
		return 0;
	for (int i = 0; i < 4; i++) {
		rdmab__state__id_space__init(&ids[i]);
		rs->id_mark[i] = sp[i]->count + ID_BLOCK;
		id_save(&ids[i], sp[i], rs->id_mark[i]);
	}
	c.generation = rs->generation;
	c.restarts = rs->restarts;
	c.clients = &ids[0];
	c.contexts = &ids[1];
	c.objects = &ids[2];
	c.dms = &ids[3];
	c.last_restore_usec = rs->last_restore_usec;
	c.requests_served = core->requests_served;
	return journal_put(rs->j, JOURNAL_COUNTERS, 0, &c.base);
}

void restart_ids_check(struct core *core)
{
	struct restart *rs = core->restart;

	if (!rs || !rs->j)
		return;
	if (core->ids.clients.count >= rs->id_mark[0] ||
	    core->ids.contexts.count >= rs->id_mark[1] ||
	    core->ids.objects.count >= rs->id_mark[2] ||
	    core->ids.dms.count >= rs->id_mark[3])
		restart_counters_save(core);
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

/* After a write: a compaction when the log grew past its bound, run
 * from the loop where no change is half made. */
void restart_after_write(struct core *core, int ret)
{
	struct restart *rs = core->restart;

	if (ret < 0 && !rs->warned) {
		rs->warned = true;
		log_err("the state journal failed (%s): a restart from here "
			"starts clean",
			strerror(-ret));
	}
	if (rs->compact_ev && journal_wants_compaction(rs->j))
		event_active(rs->compact_ev, EV_TIMEOUT, 0);
}

bool restart_handing_off(const struct core *core)
{
	return core->restart && core->restart->handoff;
}

void restart_ctx_opened(struct core *core, const struct dctx *x)
{
	struct fdstore *st = restart_fdstore(core);
	Rdmab__State__Context m = RDMAB__STATE__CONTEXT__INIT;
	char name[FDSTORE_NAME_MAX + 1];
	int ret;

	if (!st)
		return;
	restart_fd_name(name, sizeof(name), "ctx", x->id);
	ret = fdstore_put(st, name, x->dev->ctx_ops->fd(x->dc));
	if (ret < 0 && ret != -EEXIST)
		log_warn("context %" PRIu64 ": not kept in the fd store (%s)",
			 x->id, strerror(-ret));
	m.domain = x->domain->name;
	m.domain_kind = x->domain->kind;
	m.device = x->dev->name;
	m.pd_handle = x->dev->ctx_ops->pd_handle(x->dc);
	restart_after_write(core, journal_put(core->restart->j, JOURNAL_CONTEXT,
					     x->id, &m.base));
	restart_ids_check(core);
}

void restart_ctx_closed(struct core *core, const struct dctx *x)
{
	char name[FDSTORE_NAME_MAX + 1];

	if (!restart_fdstore(core))
		return;
	restart_fd_name(name, sizeof(name), "ctx", x->id);
	fdstore_remove(core->restart->store, name);
	restart_after_write(core, journal_del(core->restart->j, JOURNAL_CONTEXT,
					     x->id));
}

/* SessionHold's fields as protobuf's wire format has them, each left out
 * when 0 as proto3 does: a fixed64 (wire type 1, little-endian) and a
 * varint (wire type 0). */
static size_t hold_fixed64(uint8_t *p, unsigned int field, uint64_t v)
{
	if (!v)
		return 0;
	p[0] = (uint8_t)(field << 3 | 1);
	for (int i = 0; i < 8; i++)
		p[1 + i] = (uint8_t)(v >> (8 * i));
	return 9;
}

static size_t hold_varint(uint8_t *p, unsigned int field, uint64_t v)
{
	size_t n = 0;

	if (!v)
		return 0;
	p[n++] = (uint8_t)(field << 3);
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

size_t restart_hold_encode(uint8_t *buf, uint64_t client_id, uint64_t ctx_id,
			   uint32_t opens, uint64_t import)
{
	size_t n = hold_fixed64(buf, 1, client_id);

	n += hold_fixed64(buf + n, 2, ctx_id);
	n += hold_varint(buf + n, 3, opens);
	n += hold_varint(buf + n, 4, import);
	return n;
}

void restart_hold_saved(struct core *core, uint64_t client_id,
			struct conn_ctx *cc)
{
	struct journal *j = restart_journal(core);
	uint8_t buf[RESTART_HOLD_MAX];
	size_t len;

	if (!j)
		return;
	if (!cc->hold_key)
		cc->hold_key = ++core->restart->hold_keys;
	len = restart_hold_encode(buf, client_id, cc->ctx->id, cc->opens,
				  cc->import);
	restart_after_write(core, journal_put_packed(j, JOURNAL_SESSION_HOLD,
						     cc->hold_key, buf, len));
}

void restart_hold_gone(struct core *core, struct conn_ctx *cc)
{
	struct journal *j = restart_journal(core);

	if (j && cc->hold_key)
		restart_after_write(core, journal_del(j, JOURNAL_SESSION_HOLD,
						      cc->hold_key));
}

/* The registry's record of @o, and, for an object the broker made on a
 * device it is the kernel of, what makes it again (@spec, @attr). */
static void obj_put(struct core *core, const struct obj *o,
		    const struct obj_spec *spec, const Rdmab__ObjAttr *attr)
{
	Rdmab__State__Object m = RDMAB__STATE__OBJECT__INIT;
	Rdmab__State__SoftObject so = RDMAB__STATE__SOFT_OBJECT__INIT;
	uint32_t uses[OBJ_MAX_USES];

	m.owner = o->owner->client_id;
	m.ctx_id = o->ctx->id;
	m.kind = o->kind;
	m.handle = o->handle;
	m.intent = o->intent;
	m.made_here = o->made_here;
	m.window_made = o->window_made;
	m.stuck = o->stuck;
	m.family_owned = o->family_owned;
	m.dm_id = o->dm_id;
	m.xrcd_obj = o->xrcd_obj;
	m.born_usec = o->born_usec;
	if (spec) {
		for (unsigned int i = 0; i < OBJ_MAX_USES; i++)
			uses[i] = spec->uses[i];
		so.n_uses = OBJ_MAX_USES;
		so.uses = uses;
		so.used_mask = spec->used;
		so.attr = (Rdmab__ObjAttr *)attr;
		so.xrcd_ino = spec->xrcd_ino;
		m.soft = &so;
	}
	restart_after_write(core, journal_put(core->restart->j, JOURNAL_OBJECT,
					     o->id, &m.base));
	restart_ids_check(core);
}

void restart_obj_saved(struct core *core, const struct obj *o)
{
	/* A soft object's record carries its spec (restart_obj_made()):
	 * rewritten whole, it would lose it. */
	if (!restart_journal(core) || (o->made_here && !o->intent))
		return;
	obj_put(core, o, NULL, NULL);
}

void restart_obj_made(struct core *core, const struct obj *o,
		      const struct obj_spec *spec, const Rdmab__ObjAttr *attr)
{
	if (restart_journal(core))
		obj_put(core, o, spec, attr);
}

void restart_obj_packed(struct core *core, const struct obj *o,
			const uint8_t *data, size_t len)
{
	if (!restart_journal(core))
		return;
	restart_after_write(core, journal_put_packed(core->restart->j,
						     JOURNAL_OBJECT, o->id,
						     data, len));
	restart_ids_check(core);
}

void restart_obj_gone(struct core *core, const struct obj *o)
{
	if (restart_journal(core))
		restart_after_write(core, journal_del(core->restart->j,
						     JOURNAL_OBJECT, o->id));
}

void restart_status(const struct core *core, bool full, uint64_t *gen,
		    uint64_t *restarts, uint64_t *usec, char *what,
		    size_t size)
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

int restore_fail(struct restore *rs, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rs->why, sizeof(rs->why), fmt, ap);
	va_end(ap);
	return err;
}
