// SPDX-License-Identifier: MIT
/*
 * The restore's sessions (restore-int.h): the holds and the requests in
 * flight collected first, each session adopted with its socket from the
 * store and its holds, then told the new generation and its unanswered
 * requests; and a session no state adopts, told why.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/families/family.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/domain-join.h"
#include "daemon/restart/inflight.h"
#include "daemon/restart/restart-int.h"
#include "daemon/restart/restart-srv.h"
#include "daemon/restart/restore-int.h"
#include "daemon/server/conn.h"
#include "daemon/server/dispatch.h"
#include "daemon/server/server.h"
#include "daemon/util/array.h"
#include "daemon/util/log.h"
#include "proto/state.pb-c.h"
#include "proto/wire.h"

/* Room for one more hold, whichever format recorded it. */
static int hold_room(struct rctx *rc)
{
	return array_grow(&rc->holds, &rc->cap_holds, rc->n_holds + 1,
			  sizeof(*rc->holds), 64);
}

static int hold_collect(void *arg, const struct journal_rec *r)
{
	struct rctx *rc = arg;
	Rdmab__State__SessionHold *m;

	/* Checked whole before (restart_state_check()). */
	m = rdmab__state__session_hold__unpack(NULL, r->len, r->data);
	/* No open is no hold (a slot's count is never 0: a bad record). */
	if (!m || !m->opens) {
		if (m)
			rdmab__state__session_hold__free_unpacked(m, NULL);
		return 0;
	}
	if (hold_room(rc) < 0) {
		rdmab__state__session_hold__free_unpacked(m, NULL);
		return restore_fail(rc->rs, -ENOMEM, "out of memory");
	}
	rc->holds[rc->n_holds++] =
		(struct rhold){ m->client_id, m->ctx_id, m->opens, m->import };
	rdmab__state__session_hold__free_unpacked(m, NULL);
	return 0;
}

/* A hold as a slot (format 3 on): ids client, context, import. */
static int hold_slot_collect(void *arg, const struct journal_slot *sl)
{
	struct rctx *rc = arg;

	if (hold_room(rc) < 0)
		return restore_fail(rc->rs, -ENOMEM, "out of memory");
	rc->holds[rc->n_holds++] =
		(struct rhold){ sl->id[0], sl->id[1], sl->n, sl->id[2] };
	return 0;
}

static int hold_cmp(const void *a, const void *b)
{
	const struct rhold *x = a, *y = b;

	return x->client_id < y->client_id ? -1 : x->client_id > y->client_id;
}

int restore_holds(struct rctx *rc)
{
	int ret = journal_each(rc->rs->view, JOURNAL_SESSION_HOLD, hold_collect,
			       rc);

	if (ret == 0)
		ret = journal_each_slot(rc->rs->view, hold_slot_collect, rc);

	if (ret == 0 && rc->n_holds)
		qsort(rc->holds, rc->n_holds, sizeof(*rc->holds), hold_cmp);
	return ret;
}

/* The first hold of session @id (its holds follow it), or n_holds. */
static size_t hold_first(const struct rctx *rc, uint64_t id)
{
	size_t lo = 0, hi = rc->n_holds;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rc->holds[mid].client_id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void pending_add(void *arg, uint64_t conn_id, uint64_t serial)
{
	struct rctx *rc = arg;

	/* Without memory that client waits for its reply: its timeout
	 * answers. */
	if (array_grow(&rc->reqs, &rc->cap_reqs, rc->n_reqs + 1,
		       sizeof(*rc->reqs), 16) < 0)
		return;
	rc->reqs[rc->n_reqs++] = (struct pending_req){ conn_id, serial };
}

int restore_requests_scan(void *arg, const char *name, int fd)
{
	struct rctx *rc = arg;
	int taken;

	/* Read and closed: not a descriptor the restore adopts. */
	if (fdstore_take(rc->rs->store, name, &taken) < 0)
		return 0;
	if (inflight_scan(taken, pending_add, rc) < 0)
		log_warn("%s is no in-flight table: ignored", name);
	close(taken);
	fdstore_remove(rc->rs->store, name);
	return 0;
}

static int conn_cmp(const void *a, const void *b)
{
	const struct conn *x = *(struct conn *const *)a;
	const struct conn *y = *(struct conn *const *)b;

	return x->cl.id < y->cl.id ? -1 : x->cl.id > y->cl.id;
}

void restore_sessions_sort(struct rctx *rc)
{
	/* qsort() of nothing must not be given NULL (UBSan). */
	if (rc->n)
		qsort(rc->conns, rc->n, sizeof(*rc->conns), conn_cmp);
}

struct conn *restore_conn_find(const struct rctx *rc, uint64_t id)
{
	size_t lo = 0, hi = rc->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rc->conns[mid]->cl.id == id)
			return rc->conns[mid];
		if (rc->conns[mid]->cl.id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int restore_session(void *arg, const struct journal_rec *rec)
{
	struct rctx *rc = arg;
	struct restore *rs = rc->rs;
	struct server *srv = server_of(rs->core);
	Rdmab__State__Session *m;
	char name[FDSTORE_NAME_MAX + 1];
	struct why why = { 0 };
	struct conn *c;
	int fd, ret;

	restart_fd_name(name, sizeof(name), "conn", rec->key);
	if (restore_take_fd(rs, name, &fd) < 0) {
		log_debug("client %" PRIu64 ": its socket is not in the "
			  "store (it hung up): session not adopted",
			  rec->key);
		return 0;
	}
	m = rdmab__state__session__unpack(NULL, rec->len, rec->data);
	if (!m) {
		close(fd);
		return 0;
	}
	ret = conn_new_as(&srv->tab, fd, rec->key, &c);
	if (ret < 0) {
		log_warn("client %" PRIu64 ": session not adopted: %s",
			 rec->key, strerror(-ret));
		goto out;
	}
	/* The socket's peer is the one the state names, or it is not
	 * this session's. */
	if ((uint32_t)c->cl.cred.uid != m->uid ||
	    (uint32_t)c->cl.cred.pid != m->pid) {
		conn_kill(c, "its socket's peer is not the saved session's");
		goto out;
	}
	c->cl.client_pid = m->client_pid;
	c->cl.fork_state = (int)m->fork_state;
	if (m->secret.len == sizeof(c->cl.secret))
		memcpy(c->cl.secret, m->secret.data, sizeof(c->cl.secret));
	c->cl.parent_id = m->parent_id;
	snprintf(c->cl.library_version, sizeof(c->cl.library_version), "%s",
		 m->library_version);
	families_session_restore(&c->cl, m);
	c->cl.requests = m->requests;
	ret = domain_rejoin(&srv->core, &c->cl, m->domain,
			    (enum domain_kind)m->domain_kind, m->domain_pool,
			    &why);
	if (ret < 0) {
		log_warn("client %" PRIu64 ": cannot join domain %s again: %s",
			 c->cl.id, m->domain, why.text);
		conn_kill(c, NULL);
		goto out;
	}
	conn_hello_done(c);
	/* An older daemon's holds are in the session's record. */
	for (size_t i = 0; i < m->n_ctxs && ret == 0; i++)
		ret = restore_hold(rs, c, m->ctxs[i]->ctx_id, m->ctxs[i]->opens,
				   m->ctxs[i]->import);
	for (size_t i = hold_first(rc, rec->key);
	     i < rc->n_holds && rc->holds[i].client_id == rec->key && ret == 0;
	     i++)
		ret = restore_hold(rs, c, rc->holds[i].ctx_id,
				   rc->holds[i].opens, rc->holds[i].import);
	if (ret < 0) {
		conn_kill(c, "out of memory");
		goto out;
	}
	restart_session_save(c);
	rs->adopted_sessions++;
	if (array_grow(&rc->conns, &rc->cap, rc->n + 1, sizeof(*rc->conns),
		       64) < 0) {
		conn_kill(c, "out of memory");
		goto out;
	}
	rc->conns[rc->n++] = c;

out:
	rdmab__state__session__free_unpacked(m, NULL);
	return 0;
}

/* Each adopted session learns the new generation (a best effort, as
 * every Event). */
void restore_tell(struct rctx *rc)
{
	Rdmab__RestartEvent rev = RDMAB__RESTART_EVENT__INIT;
	Rdmab__Event ev = RDMAB__EVENT__INIT;
	char reason[96];

	snprintf(reason, sizeof(reason),
		 "the broker restarted (generation %" PRIu64 ")",
		 rc->rs->generation);
	rev.generation = rc->rs->generation;
	rev.restarts = rc->rs->core->restart->restarts;
	rev.reason = reason;
	ev.object_kind = IBC_OBJ_NONE;
	ev.object_id = rc->rs->generation;
	ev.body_case = RDMAB__EVENT__BODY_RESTARTED;
	ev.restarted = &rev;
	for (size_t i = 0; i < rc->n_reqs; i++) {
		struct conn *c = restore_conn_find(rc, rc->reqs[i].conn_id);

		if (c)
			dispatch_error(c, rc->reqs[i].serial, EAGAIN,
				       "the broker restarted while serving "
				       "this request");
	}
	for (size_t i = 0; i < rc->n; i++)
		conn_send_event(rc->conns[i], &ev);
}

/* A session handed over that no state adopts: told why (a ShutdownEvent,
 * without blocking) before its socket is closed. */
int restore_refuse_conn(void *arg, const char *name, int fd)
{
	Rdmab__DaemonMessage msg = RDMAB__DAEMON_MESSAGE__INIT;
	Rdmab__ShutdownEvent sev = RDMAB__SHUTDOWN_EVENT__INIT;
	Rdmab__Event ev = RDMAB__EVENT__INIT;
	static uint8_t buf[WIRE_MAX_PACKET];

	sev.reason = arg;
	ev.object_kind = IBC_OBJ_NONE;
	ev.body_case = RDMAB__EVENT__BODY_SHUTDOWN;
	ev.shutdown = &sev;
	msg.kind_case = RDMAB__DAEMON_MESSAGE__KIND_EVENT;
	msg.event = &ev;
	wire_send_msg(fd, &msg.base, buf, NULL, 0, MSG_DONTWAIT);
	return 0;
}
