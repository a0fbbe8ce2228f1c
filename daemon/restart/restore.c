// SPDX-License-Identifier: MIT
/*
 * The restore (restart.h): a daemon started with a state re-adopts, in
 * order, the counters, the sessions with their domains and contexts, the
 * registry's objects, then each family's records (an object whose
 * remake needs one of those, an MR on a DM, again once they are back).
 * The state is checked whole before anything is adopted, so that a state
 * that cannot be read is refused whole: a clean start, never half a
 * registry.
 *
 * The new generation's journal starts empty and gets what is adopted, by
 * the same hooks that journal a running daemon's changes: what the old
 * state held and nobody adopted (a session whose socket the store no
 * longer had) is not carried on.
 *
 * This file runs the phases, checks the state and restores the counters
 * and the families; the sessions are restore-session.c's, their
 * contexts restore-ctx.c's, the registry's objects restore-registry.c's
 * (restore-int.h).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/server/conn.h"
#include "daemon/families/family.h"
#include "daemon/util/log.h"
#include "daemon/registry/objects.h"
#include "daemon/restart/restart-int.h"
#include "daemon/restart/restart.h"
#include "daemon/restart/restart-srv.h"
#include "daemon/restart/restore-int.h"
#include "daemon/server/server.h"
#include "proto/state.pb-c.h"

static uint64_t now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Where a restore's time goes (logged at info): each phase's time since
 * the last one ended. */
enum restore_phase_id {
	RESTORE_CHECK,
	RESTORE_REQUESTS,
	RESTORE_SESSIONS,
	RESTORE_OBJECTS,
	RESTORE_FAMILIES,
	RESTORE_TELL,
	RESTORE_STORE,
	RESTORE_PHASES,
};

struct restore_phases {
	uint64_t at, t[RESTORE_PHASES];
};

static void restore_phase(struct restore_phases *ph, enum restore_phase_id p)
{
	uint64_t now = now_usec();

	ph->t[p] += now - ph->at;
	ph->at = now;
}

/* --- counters ------------------------------------------------------------ */

static void id_restore(struct id_space *s, const Rdmab__State__IdSpace *m)
{
	if (!m)
		return;
	s->count = m->count;
	s->key[0] = m->key0;
	s->key[1] = m->key1;
}

/* The IdSpace field of @c at @offset (a family's counters_field). */
static const Rdmab__State__IdSpace *
counters_ids(const Rdmab__State__Counters *c, size_t offset)
{
	const Rdmab__State__IdSpace *s;

	memcpy(&s, (const char *)c + offset, sizeof(s));
	return s;
}

static int restore_counters(struct restore *rs)
{
	struct server *srv = server_of(rs->core);
	struct restart *r = srv->core.restart;
	Rdmab__State__Counters *c;
	struct journal_rec rec;

	if (journal_find(rs->view, JOURNAL_COUNTERS, 0, &rec) < 0)
		return restore_fail(rs, -EBADMSG, "the state has no counters");
	c = rdmab__state__counters__unpack(NULL, rec.len, rec.data);
	if (!c)
		return restore_fail(rs, -EBADMSG, "the counters do not unpack");
	id_restore(&srv->core.ids.clients, c->clients);
	id_restore(&srv->core.ids.contexts, c->contexts);
	id_restore(&srv->core.ids.objects, c->objects);
	/* Each family's, where its description says the record keeps it. */
	for (unsigned int f = 0; f < FAMILY_COUNT; f++)
		if (families[f]->ids)
			id_restore(
				families[f]->ids(&srv->core),
				counters_ids(c, families[f]->counters_field));
	restart_serials_adopt(rs->core, c);
	r->generation = c->generation + 1;
	r->restarts = c->restarts + 1;
	srv->core.requests_served = c->requests_served;
	rdmab__state__counters__free_unpacked(c, NULL);
	rs->generation = r->generation;
	return 0;
}

/* --- the whole ----------------------------------------------------------- */

struct family_check {
	struct restore *rs;
	const struct family *f;
	const ProtobufCMessageDescriptor *d;
};

static int family_check_one(void *arg, const struct journal_rec *r)
{
	struct family_check *ck = arg;
	ProtobufCMessage *m;

	m = protobuf_c_message_unpack(ck->d, NULL, r->len, r->data);
	if (!m)
		return restore_fail(
			ck->rs, -EBADMSG,
			"%s record %u/%" PRIu64 " does not unpack as a %s",
			ck->f->name, r->kind, r->key, ck->d->short_name);
	protobuf_c_message_free_unpacked(m, NULL);
	return 0;
}

/* Every family record decodes (restart_state_check() reads the
 * registry's): checked before anything is adopted, since a family that
 * fails after the sessions came back can only end them. */
static int restore_families_check(struct restore *rs)
{
	for (unsigned int i = 0; i < FAMILY_COUNT; i++) {
		const struct family *f = families[i];

		for (unsigned int k = 0; k < f->n_journal_msgs; k++) {
			struct family_check ck = { rs, f, f->journal_msgs[k] };
			int ret = journal_each(rs->view, f->journal_first + k,
					       family_check_one, &ck);

			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

static int restore_families(struct restore *rs)
{
	for (unsigned int i = 0; i < FAMILY_COUNT; i++) {
		int ret;

		if (!families[i]->restore)
			continue;
		ret = families[i]->restore(rs->core, rs);
		if (ret < 0) {
			if (!*rs->why)
				restore_fail(rs, ret, "%s: %s",
					     families[i]->name, strerror(-ret));
			/* The failed one undid its own; those before it
			 * keep nothing either (no half registry). */
			while (i-- > 0)
				if (families[i]->restore_undo)
					families[i]->restore_undo(rs->core);
			return ret;
		}
	}
	return 0;
}

/*
 * A write of the restore's journal failed (its memfd could not grow:
 * RLIMIT_FSIZE, memory): the journal is broken, and the state stored
 * says so in its header. The daemon goes on with what it adopted, whole
 * in memory whatever the journal missed, as after a write failing at any
 * other time (restart_after_write()): only the next restart's state is
 * lost, and that restart starts clean, its clients told. Exiting instead
 * would end every session now, and the service manager would start a
 * daemon on the same state, to fail the same way.
 */
static void restore_journal_failed(struct restart *r, const struct restore *rs)
{
	int err = journal_error(r->j);

	/* Quiet until here (restart_restore()): said once, decided. */
	r->warned = err != 0;
	if (!err)
		return;
	log_err("the state journal failed during the restore (%s): going on "
		"with the %" PRIu64 " sessions and %" PRIu64 " objects "
		"adopted; the stored state is marked abandoned, so a restart "
		"from here starts clean",
		strerror(-err), rs->adopted_sessions, rs->adopted_objects);
}

int restart_restore(struct server *srv)
{
	struct restart *r = srv->core.restart;
	struct restore rs = { 0 };
	struct robjs ro = { 0 };
	char name[FDSTORE_NAME_MAX + 1];
	uint64_t start = now_usec();
	struct restore_phases ph = { .at = start };
	unsigned int closed;
	int ret = 0, fd;

	if (!r)
		return 0;
	rs.core = &srv->core;
	rs.view = r->view;
	rs.store = r->store;
	r->generation = 1;
	/* A write that fails is told by restore_journal_failed(), with
	 * what the daemon does about it. */
	r->warned = true;
	/* The new journal gets each adopted record once, as a compaction
	 * would: its index sized for all of them at once (a failure only
	 * lets it grow as they come), and no compaction asked for on the
	 * way (one per record) nor just after (a copy of the whole). */
	if (r->j) {
		journal_on_full(r->j, NULL, NULL);
		(void)journal_reserve(r->j, journal_view_size(r->view));
	}
	if (r->view) {
		struct rkeep keep = { &rs, &ro };
		size_t n_objs = journal_view_count(rs.view, JOURNAL_OBJECT);

		/* Room for every object at once: growing by doubling moved
		 * 25 MB of records about (100,000 of them). Without it,
		 * robj_keep() grows the array as before. */
		ro.v = n_objs ? malloc(n_objs * sizeof(*ro.v)) : NULL;
		if (ro.v)
			ro.cap = n_objs;

		ret = restart_state_check(rs.view, restore_obj_keep, &keep,
					  rs.why, sizeof(rs.why));
		if (ret == 0)
			ret = restore_families_check(&rs);
		restore_phase(&ph, RESTORE_CHECK);
		if (ret == 0)
			ret = restore_counters(&rs);
		if (ret < 0) {
			snprintf(r->refused, sizeof(r->refused), "%s", rs.why);
			log_err("starting clean, closing the %u descriptors "
				"handed over: the state cannot be used: %s",
				fdstore_n_passed(r->store), rs.why);
			r->generation = 1;
		} else {
			struct rctx rc = { .rs = &rs, .ro = &ro };

			/* While taking one, the callback must not see the
			 * walk move: one name at a time. */
			while (fdstore_each_passed(
				       r->store, FDSTORE_PREFIX "inflight.",
				       restart_first_name, name) == 1)
				restore_requests_scan(&rc, name, -1);
			restore_phase(&ph, RESTORE_REQUESTS);
			ret = restore_holds(&rc);
			if (ret == 0)
				journal_each(r->view, JOURNAL_SESSION,
					     restore_session, &rc);
			restore_phase(&ph, RESTORE_SESSIONS);
			if (ret == 0)
				ret = journal_each(r->view, JOURNAL_UNNAMED,
						   restore_unnamed_collect,
						   &rc);
			if (ret == 0)
				restore_objects(&rc, &ro);
			restore_phase(&ph, RESTORE_OBJECTS);
			rs.rc = &rc;
			if (ret == 0)
				ret = restore_families(&rs);
			/* Those no family asked for: their last try. */
			if (ret == 0)
				restore_objects_later(&rs);
			/* Every domain is back (sessions, contexts,
			 * detached owners): their own books. */
			if (ret == 0)
				restart_domains_restore(&rs);
			if (ret == 0)
				restart_imports_left(&rs);
			rs.rc = NULL;
			restore_orphans_close(&rc);
			/* Every record is back (a family's, an MR on a DM
			 * made late): only now is each ended session's
			 * process watched, or, when the state is not kept,
			 * its objects destroyed as its sessions' are. */
			restart_owners_watch(&rs, ret < 0);
			restore_phase(&ph, RESTORE_FAMILIES);
			if (ret == 0)
				restore_tell(&rc);
			if (ret < 0) {
				/* Half a registry is worse than none: the
				 * sessions end, their objects go as a
				 * death's do. */
				log_err("a family's state cannot be used, "
					"ending the %zu sessions and the ended "
					"sessions' objects adopted: %s",
					rc.n, rs.why);
				snprintf(r->refused, sizeof(r->refused), "%s",
					 rs.why);
				for (size_t i = 0; i < rc.n; i++) {
					objects_conn_end(&rc.conns[i]->cl);
					conn_kill(rc.conns[i], NULL);
				}
			}
			free(rc.conns);
			free(rc.reqs);
			free(rc.holds);
			free(rc.orphan_ctxs);
			free(rc.unnamed);
		}
		restore_objs_free(&ro);
		restore_phase(&ph, RESTORE_TELL);
	}
	/* No journal (restart_init() could not make one): nothing is
	 * stored, and a next daemon starts clean. */
	if (r->j) {
		journal_rebase(r->j);
		journal_on_full(r->j, restart_journal_full, &srv->core);
		/* A failure here breaks the journal like any write of the
		 * restore did: restore_journal_failed() decides for all. */
		restart_counters_save(&srv->core);
		/* Stored now, when it holds the adopted state: a kill during
		 * the restore left the old one the newest. */
		restart_fd_name(name, sizeof(name), "state", journal_gen(r->j));
		ret = fdstore_put(r->store, name, journal_fd(r->j));
		if (ret < 0) {
			log_err("cannot keep the state in the fd store: %s",
				strerror(-ret));
			return ret;
		}
	}
	/* Out even when the journal failed or is missing: the newest state
	 * a next daemon could read would be one of these, which this one
	 * has left. */
	while (fdstore_each_passed(r->store, FDSTORE_PREFIX "state.",
				   restart_first_name, name) == 1) {
		if (fdstore_take(r->store, name, &fd) == 0)
			close(fd);
		fdstore_remove(r->store, name);
	}
	/* The stored state is this restore's now (or none is): a family's
	 * destroys put off until then may run. */
	for (unsigned int i = 0; i < FAMILY_COUNT; i++)
		if (families[i]->restored)
			families[i]->restored(&srv->core);
	if (r->j) {
		restart_fd_name(name, sizeof(name), "inflight",
				journal_gen(r->j));
		ret = fdstore_put(r->store, name, inflight_fd(r->inflight));
		if (ret < 0)
			log_warn("requests in flight at a restart will not be "
				 "answered: the table is not in the fd store: "
				 "%s",
				 strerror(-ret));
	}
	fdstore_each_passed(r->store, FDSTORE_PREFIX "conn.",
			    restore_refuse_conn,
			    "the broker restarted and could not adopt this "
			    "session");
	closed = fdstore_close_untaken(r->store);
	journal_view_free(r->view);
	restore_phase(&ph, RESTORE_STORE);
	r->view = NULL;
	/* A clean start restored nothing: no duration to show. */
	r->last_restore_usec = rs.view && !*r->refused ? now_usec() - start : 0;
	r->adopted_sessions = rs.adopted_sessions;
	r->adopted_contexts = rs.adopted_contexts;
	r->adopted_objects = rs.adopted_objects;
	r->adopted_fds = rs.adopted_fds;
	if (rs.view && !*r->refused) {
		log_info("restore's phases, in us: check %" PRIu64
			 ", requests %" PRIu64 ", sessions %" PRIu64
			 ", objects %" PRIu64 ", families %" PRIu64
			 ", tell %" PRIu64 ", store %" PRIu64,
			 ph.t[RESTORE_CHECK], ph.t[RESTORE_REQUESTS],
			 ph.t[RESTORE_SESSIONS], ph.t[RESTORE_OBJECTS],
			 ph.t[RESTORE_FAMILIES], ph.t[RESTORE_TELL],
			 ph.t[RESTORE_STORE]);
		log_notice("restart %" PRIu64 ": generation %" PRIu64
			   " restored in %" PRIu64 " us: %" PRIu64
			   " sessions, %" PRIu64 " contexts, %" PRIu64
			   " objects, %" PRIu64 " descriptors adopted, %u "
			   "closed",
			   r->restarts, r->generation, r->last_restore_usec,
			   rs.adopted_sessions, rs.adopted_contexts,
			   rs.adopted_objects, rs.adopted_fds, closed);
	}
	restart_counters_save(&srv->core);
	restore_journal_failed(r, &rs);
	return 0;
}
