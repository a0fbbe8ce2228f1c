// SPDX-License-Identifier: MIT
/*
 * Restart (restart-srv.h), the transport's part: struct restart's life
 * (the store read, the state picked, the successor journal started), the
 * sessions' records and sockets in the store, the requests in flight, and
 * what status shows. The restore itself is restore.c's.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/registry/core.h"
#include "daemon/server/conn.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/domain.h"
#include "daemon/util/log.h"
#include "daemon/restart/restart-int.h"
#include "daemon/restart/restart-srv.h"
#include "daemon/restart/store-share.h"
#include "proto/rdmabroker.pb-c.h"
#include "proto/state.pb-c.h"

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

int restart_init(struct core *core, bool off)
{
	struct restart *rs;
	struct state_pick pick = { 0 };
	struct fdstore_books books;
	const char *notify;
	uint64_t jgen = 1;
	int ret;

	if (off)
		return 0;
	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return -ENOMEM;
	core->restart = rs;
	core->sink = &restart_sink;
	/* Without systemd the journal is kept all the same: a SIGUSR2
	 * hands it to the new binary. A re-exec's notify socket is the
	 * old daemon's, gone once it exits: no store there. */
	notify = getenv("NOTIFY_SOCKET");
	rs->systemd = notify && strncmp(notify, REEXEC_NOTIFY_PREFIX,
					strlen(REEXEC_NOTIFY_PREFIX)) != 0;
	ret = fdstore_open(restart_store_max(core), rs->systemd, &rs->store);
	if (ret < 0)
		return ret;
	ret = store_share_new(core->config.limits.fd_store_per_uid, &rs->share);
	if (ret < 0)
		return ret;
	books = store_share_books(rs->share);
	fdstore_set_books(rs->store, &books);
	log_info("the fd store holds at most %u descriptors: %u + 2 x %zu "
		 "devices + %u clients x (3 + %zu devices + "
		 "private_contexts_per_uid %u + fd_store_per_uid %u)",
		 restart_store_max(core), RESTART_STORE_OWN, core->devices.n,
		 core->max_conns, core->devices.n,
		 core->config.limits.private_contexts_per_uid,
		 core->config.limits.fd_store_per_uid);
	pick.rs = rs;
	fdstore_each_passed(rs->store, FDSTORE_PREFIX "state.", state_pick_one,
			    &pick);
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
	if (ret < 0) {
		/* A memfd that cannot be made or grow (RLIMIT_FSIZE,
		 * RLIMIT_NOFILE, memory): no state this run, as after a
		 * journal write that fails, rather than no daemon. What was
		 * handed over is adopted all the same; the restore stores
		 * no state, so only a next start is clean. */
		log_err("the state journal cannot be made (%s): serving "
			"without one; a restart from here starts clean",
			strerror(-ret));
		rs->j = NULL;
		rs->j_err = ret;
	}
	rs->compact_ev = event_new(core->base, -1, 0, restart_compact_cb, core);
	if (!rs->compact_ev)
		return -ENOMEM;
	if (rs->j)
		journal_on_full(rs->j, restart_journal_full, core);
	return inflight_create(core->max_conns + RESTART_INFLIGHT_EXTRA,
			       &rs->inflight);
}

int restart_first_name(void *arg, const char *name, int fd)
{
	snprintf(arg, FDSTORE_NAME_MAX + 1, "%s", name);
	return 1;
}

unsigned int restart_store_max(const struct core *core)
{
	const struct broker_limits *l = &core->config.limits;
	uint64_t per_conn;

	/* Each of --max-clients connections may be a uid of its own: its
	 * socket and DM status page, its domain's context on each device,
	 * its private contexts, and its share of XRCD names and DMs
	 * (charged: fdstore_put_for()); and the pidfd of a process whose
	 * ended sessions left objects, as many as the watches hold
	 * (obj-watch.c: --max-clients in all). */
	per_conn = 3 + (uint64_t)core->devices.n + l->private_contexts_per_uid +
		   l->fd_store_per_uid;
	/* And each device's context that holds the XRC domains, with the
	 * previous daemon's until the restore closes it. */
	per_conn = per_conn * core->max_conns + RESTART_STORE_OWN +
		   2 * (uint64_t)core->devices.n;
	return per_conn > UINT32_MAX / 2 ? UINT32_MAX / 2 :
					   (unsigned int)per_conn;
}

bool restart_keeps_sessions(const struct core *core)
{
	return core->restart && core->restart->systemd && core->restart->j &&
	       !journal_broken(core->restart->j);
}

void restart_handoff(struct core *core)
{
	if (core->restart)
		core->restart->handoff = true;
}

void restart_fini(struct core *core)
{
	struct restart *rs = core->restart;

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
	store_share_free(rs->share);
	free(rs);
	core->restart = NULL;
	core->sink = NULL;
}

/* --- hooks --------------------------------------------------------------- */

void restart_conn_opened(struct conn *c)
{
	struct fdstore *st = restart_fdstore(c->cl.core);
	char name[FDSTORE_NAME_MAX + 1];
	int ret;

	if (!st)
		return;
	c->inflight_slot =
		inflight_take(c->cl.core->restart->inflight, c->cl.id);
	if (c->inflight_slot >= 0)
		c->inflight = c->cl.core->restart->inflight;
	restart_fd_name(name, sizeof(name), "conn", c->cl.id);
	ret = fdstore_put(st, name, c->fd);
	if (ret < 0) {
		log_warn("client %" PRIu64 ": not kept in the fd store (%s): "
			 "its hello is refused",
			 c->cl.id, strerror(-ret));
		c->cl.store_err = ret;
	}
	restart_ids_check(c->cl.core);
}

void restart_conn_closed(struct conn *c)
{
	struct core *core = c->cl.core;
	char name[FDSTORE_NAME_MAX + 1];

	if (!restart_fdstore(core))
		return;
	inflight_put(core->restart->inflight, c->inflight_slot);
	c->inflight_slot = -1;
	c->inflight = NULL;
	restart_fd_name(name, sizeof(name), "conn", c->cl.id);
	fdstore_remove(core->restart->store, name);
	restart_after_write(
		core, journal_del(core->restart->j, JOURNAL_SESSION, c->cl.id));
}

void restart_session_save(struct conn *c)
{
	struct core *core = c->cl.core;
	Rdmab__State__Session s = RDMAB__STATE__SESSION__INIT;
	uint32_t groups[64];

	if (!restart_journal(core) || !c->cl.hello_done || !c->cl.domain)
		return;
	s.pid = (uint32_t)c->cl.cred.pid;
	s.uid = c->cl.cred.uid;
	s.gid = c->cl.cred.gid;
	for (size_t i = 0; i < c->cl.n_groups && i < 64; i++)
		groups[i] = c->cl.groups[i];
	s.n_groups = c->cl.n_groups < 64 ? c->cl.n_groups : 64;
	s.groups = groups;
	s.comm = c->cl.comm;
	s.hello_done = true;
	s.client_pid = c->cl.client_pid;
	s.fork_state = (uint32_t)c->cl.fork_state;
	s.secret.data = c->cl.secret;
	s.secret.len = sizeof(c->cl.secret);
	s.parent_id = c->cl.parent_id;
	s.library_version = c->cl.library_version;
	families_session_save(&c->cl, &s);
	s.domain = c->cl.domain->name;
	s.domain_kind = c->cl.domain->kind;
	if (c->cl.domain->pool != c->cl.domain)
		s.domain_pool = c->cl.domain->pool->name;
	s.requests = c->cl.requests;
	restart_after_write(core, journal_put(core->restart->j, JOURNAL_SESSION,
					      c->cl.id, &s.base));
}

void restart_reply_sent(struct conn *c)
{
	conn_inflight_sent(c);
}

void restart_request_done(struct conn *c, unsigned int body_case)
{
	switch (body_case) {
	/* Its holds on contexts are slots of their own
	 * (restart_hold_saved()): an open or a close of a context writes
	 * a few words in place, not the whole session. */
	case RDMAB__REQUEST__BODY_HELLO:
		restart_session_save(c);
		break;
	default:
		break;
	}
}
