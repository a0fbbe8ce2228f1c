// SPDX-License-Identifier: MIT
/*
 * Restart (restart.h): struct restart's life, the state memfd in the
 * store and its compaction, the counters, and the hooks through which the
 * registry's changes reach the journal. The restore itself is restore.c's.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/conn.h"
#include "daemon/ctx.h"
#include "daemon/domain.h"
#include "daemon/log.h"
#include "daemon/objects.h"
#include "daemon/restart-int.h"
#include "daemon/server.h"
#include "proto/rdmabroker.pb-c.h"
#include "proto/state.pb-c.h"

/* Ids handed out between two Counters records: a restart skips what is
 * left of the block, never reuses one. */
#define ID_BLOCK 4096

struct journal *restart_journal(const struct server *srv)
{
	return srv->restart && !srv->restart->handoff ? srv->restart->j :
							 NULL;
}

struct fdstore *restart_fdstore(const struct server *srv)
{
	return srv->restart && !srv->restart->handoff ? srv->restart->store :
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
int restart_counters_save(struct server *srv)
{
	struct restart *rs = srv->restart;
	Rdmab__State__Counters c = RDMAB__STATE__COUNTERS__INIT;
	Rdmab__State__IdSpace ids[4];
	const struct id_space *sp[4] = { &srv->ids.clients, &srv->ids.contexts,
					 &srv->ids.objects, &srv->ids.dms };

	if (!restart_journal(srv))
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
	c.requests_served = srv->requests_served;
	return journal_put(rs->j, JOURNAL_COUNTERS, 0, &c.base);
}

void restart_ids_check(struct server *srv)
{
	struct restart *rs = srv->restart;

	if (!rs || !rs->j)
		return;
	if (srv->ids.clients.count >= rs->id_mark[0] ||
	    srv->ids.contexts.count >= rs->id_mark[1] ||
	    srv->ids.objects.count >= rs->id_mark[2] ||
	    srv->ids.dms.count >= rs->id_mark[3])
		restart_counters_save(srv);
}

static void restart_compact_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;
	struct restart *rs = srv->restart;
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
static void restart_after_write(struct server *srv, int ret)
{
	struct restart *rs = srv->restart;

	if (ret < 0 && !rs->warned) {
		rs->warned = true;
		log_err("the state journal failed (%s): a restart from here "
			"starts clean",
			strerror(-ret));
	}
	if (rs->compact_ev && journal_wants_compaction(rs->j))
		event_active(rs->compact_ev, EV_TIMEOUT, 0);
}

/* Open the state @fd (taken) names: the newest readable one wins. */
struct state_pick {
	struct restart *rs;
	int fd;
	uint64_t gen;
	char name[FDSTORE_NAME_MAX + 1];
	char why[FDSTORE_NAME_MAX + 300];
	unsigned int seen;
};

static int state_pick_one(void *arg, const char *name, int fd)
{
	struct state_pick *p = arg;
	struct journal_view *v = NULL;
	char why[256];
	int ret;

	p->seen++;
	ret = journal_read_fd(fd, &v, why, sizeof(why));
	if (ret < 0) {
		snprintf(p->why, sizeof(p->why), "%s: %s", name,
			 ret == -EBADMSG ? why : strerror(-ret));
		return 0;
	}
	if (p->rs->view && journal_view_gen(v) <= p->gen) {
		journal_view_free(v);
		return 0;
	}
	journal_view_free(p->rs->view);
	p->rs->view = v;
	p->gen = journal_view_gen(v);
	snprintf(p->name, sizeof(p->name), "%s", name);
	return 0;
}

int restart_init(struct server *srv)
{
	struct restart *rs;
	struct state_pick pick = { 0 };
	const char *notify;
	uint64_t jgen = 1;
	int ret;

	if (srv->opt.no_restart)
		return 0;
	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return -ENOMEM;
	srv->restart = rs;
	/* Without systemd the journal is kept all the same: a SIGUSR2
	 * hands it to the new binary. A re-exec's notify socket is the
	 * old daemon's, gone once it exits: no store there. */
	notify = getenv("NOTIFY_SOCKET");
	rs->systemd = notify && strncmp(notify, REEXEC_NOTIFY_PREFIX,
					strlen(REEXEC_NOTIFY_PREFIX)) != 0;
	ret = fdstore_open(restart_store_max(srv), rs->systemd, &rs->store);
	if (ret < 0)
		return ret;
	pick.rs = rs;
	fdstore_each_passed(rs->store, FDSTORE_PREFIX "state.",
			    state_pick_one, &pick);
	if (rs->view) {
		jgen = journal_view_gen(rs->view) + 1;
	} else if (fdstore_n_passed(rs->store)) {
		snprintf(rs->refused, sizeof(rs->refused), "%.255s",
			 pick.seen ? pick.why :
				     "descriptors were handed over without "
				     "a state");
		log_err("starting clean, closing the %u descriptors handed "
			"over: %s",
			fdstore_n_passed(rs->store), rs->refused);
	}
	/* Empty: the restore journals what it adopts, and stores it. */
	ret = journal_from_view(NULL, jgen, &rs->j);
	if (ret < 0)
		return ret;
	rs->compact_ev = event_new(srv->base, -1, 0, restart_compact_cb, srv);
	if (!rs->compact_ev)
		return -ENOMEM;
	ret = inflight_create(srv->opt.max_conns + RESTART_INFLIGHT_EXTRA,
			      &rs->inflight);
	if (ret < 0)
		return ret;
	return reexec_init(srv);
}

int restart_first_name(void *arg, const char *name, int fd)
{
	snprintf(arg, FDSTORE_NAME_MAX + 1, "%s", name);
	return 1;
}

unsigned int restart_store_max(const struct server *srv)
{
	/* Every connection, a context per (domain, device), the DMs and
	 * XRCD files the families keep, two states during a compaction. */
	return srv->opt.max_conns * 2 + RESTART_STORE_EXTRA;
}

bool restart_keeps_sessions(const struct server *srv)
{
	return srv->restart && srv->restart->systemd && srv->restart->j &&
	       !journal_broken(srv->restart->j);
}

void restart_handoff(struct server *srv)
{
	if (srv->restart)
		srv->restart->handoff = true;
}

bool restart_handing_off(const struct server *srv)
{
	return srv->restart && srv->restart->handoff;
}

void restart_fini(struct server *srv)
{
	struct restart *rs = srv->restart;

	if (!rs)
		return;
	if (rs->compact_ev)
		event_free(rs->compact_ev);
	if (rs->usr2_ev)
		event_free(rs->usr2_ev);
	journal_view_free(rs->view);
	journal_free(rs->j);
	inflight_free(rs->inflight);
	fdstore_free(rs->store);
	free(rs);
	srv->restart = NULL;
}

/* --- hooks --------------------------------------------------------------- */

void restart_conn_opened(struct conn *c)
{
	struct fdstore *st = restart_fdstore(c->srv);
	char name[FDSTORE_NAME_MAX + 1];
	int ret;

	if (!st)
		return;
	c->inflight_slot = inflight_take(c->srv->restart->inflight, c->id);
	restart_fd_name(name, sizeof(name), "conn", c->id);
	ret = fdstore_put(st, name, c->fd);
	if (ret < 0)
		log_warn("client %" PRIu64 ": not kept in the fd store (%s): "
			 "a restart ends its session",
			 c->id, strerror(-ret));
	restart_ids_check(c->srv);
}

void restart_conn_closed(struct conn *c)
{
	struct server *srv = c->srv;
	char name[FDSTORE_NAME_MAX + 1];

	if (!restart_fdstore(srv))
		return;
	inflight_put(srv->restart->inflight, c->inflight_slot);
	c->inflight_slot = -1;
	restart_fd_name(name, sizeof(name), "conn", c->id);
	fdstore_remove(srv->restart->store, name);
	restart_after_write(srv, journal_del(srv->restart->j,
					     JOURNAL_SESSION, c->id));
}

void restart_session_save(struct conn *c)
{
	struct server *srv = c->srv;
	Rdmab__State__Session s = RDMAB__STATE__SESSION__INIT;
	Rdmab__State__SessionCtx ctxs[DEVICE_MAX * 2], *ctxp[DEVICE_MAX * 2];
	uint32_t groups[64];
	struct conn_ctx *cc;
	size_t n = 0;

	if (!restart_journal(srv) || !c->hello_done || !c->domain)
		return;
	s.pid = (uint32_t)c->cred.pid;
	s.uid = c->cred.uid;
	s.gid = c->cred.gid;
	for (size_t i = 0; i < c->n_groups && i < 64; i++)
		groups[i] = c->groups[i];
	s.n_groups = c->n_groups < 64 ? c->n_groups : 64;
	s.groups = groups;
	s.comm = c->comm;
	s.hello_done = true;
	s.client_pid = c->client_pid;
	s.fork_state = (uint32_t)c->fork_state;
	s.secret.data = c->secret;
	s.secret.len = sizeof(c->secret);
	s.parent_id = c->parent_id;
	s.library_version = c->library_version;
	s.rss_delta = c->rss_delta;
	s.domain = c->domain->name;
	s.domain_kind = c->domain->kind;
	TAILQ_FOREACH(cc, &c->ctxs, link) {
		if (n == DEVICE_MAX * 2)
			break;
		rdmab__state__session_ctx__init(&ctxs[n]);
		ctxs[n].ctx_id = cc->ctx->id;
		ctxs[n].opens = cc->opens;
		ctxs[n].import = cc->import;
		ctxp[n] = &ctxs[n];
		n++;
	}
	s.n_ctxs = n;
	s.ctxs = ctxp;
	s.requests = c->requests;
	restart_after_write(srv, journal_put(srv->restart->j, JOURNAL_SESSION,
					     c->id, &s.base));
}

void restart_ctx_opened(struct server *srv, const struct dctx *x)
{
	struct fdstore *st = restart_fdstore(srv);
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
	restart_after_write(srv, journal_put(srv->restart->j, JOURNAL_CONTEXT,
					     x->id, &m.base));
	restart_ids_check(srv);
}

void restart_ctx_closed(struct server *srv, const struct dctx *x)
{
	char name[FDSTORE_NAME_MAX + 1];

	if (!restart_fdstore(srv))
		return;
	restart_fd_name(name, sizeof(name), "ctx", x->id);
	fdstore_remove(srv->restart->store, name);
	restart_after_write(srv, journal_del(srv->restart->j, JOURNAL_CONTEXT,
					     x->id));
}

void restart_request_read(struct conn *c, uint64_t serial)
{
	if (c->inflight_slot >= 0)
		inflight_read(c->srv->restart->inflight, c->inflight_slot,
			      serial);
}

void restart_reply_sent(struct conn *c)
{
	if (c->inflight_slot >= 0 && TAILQ_EMPTY(&c->outq))
		inflight_answered(c->srv->restart->inflight, c->inflight_slot);
}

void restart_request_done(struct conn *c, unsigned int body_case)
{
	switch (body_case) {
	case RDMAB__REQUEST__BODY_HELLO:
	case RDMAB__REQUEST__BODY_OPEN_CONTEXT:
	case RDMAB__REQUEST__BODY_CLOSE_CONTEXT:
		restart_session_save(c);
		break;
	default:
		break;
	}
}

/* The registry's record of @o, and, for an object the broker made on a
 * device it is the kernel of, what makes it again (@spec, @attr). */
static void obj_put(struct server *srv, const struct obj *o,
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
	restart_after_write(srv, journal_put(srv->restart->j, JOURNAL_OBJECT,
					     o->id, &m.base));
	restart_ids_check(srv);
}

void restart_obj_saved(struct server *srv, const struct obj *o)
{
	/* A soft object's record carries its spec (restart_obj_made()):
	 * rewritten whole, it would lose it. */
	if (!restart_journal(srv) || (o->made_here && !o->intent))
		return;
	obj_put(srv, o, NULL, NULL);
}

void restart_obj_made(struct server *srv, const struct obj *o,
		      const struct obj_spec *spec, const Rdmab__ObjAttr *attr)
{
	if (restart_journal(srv))
		obj_put(srv, o, spec, attr);
}

void restart_obj_gone(struct server *srv, const struct obj *o)
{
	if (restart_journal(srv))
		restart_after_write(srv, journal_del(srv->restart->j,
						     JOURNAL_OBJECT, o->id));
}

void restart_status(const struct server *srv, bool full, uint64_t *gen,
		    uint64_t *restarts, uint64_t *usec, char *what,
		    size_t size)
{
	const struct restart *rs = srv->restart;

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
