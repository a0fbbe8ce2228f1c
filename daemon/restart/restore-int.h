/* SPDX-License-Identifier: MIT */
/*
 * The restore's own (restore.c), shared by its phases' files: the object
 * records the check kept, the restore's context of sessions, holds and
 * requests (struct rctx), and what each phase's file does for the
 * others. restore.c runs the phases: the check, the counters, the
 * requests and holds and sessions (restore-session.c) with their
 * contexts (restore-ctx.c), the registry's objects (restore-registry.c),
 * the families, the telling.
 */
#ifndef RDMAB_RESTORE_INT_H
#define RDMAB_RESTORE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/restart/journal.h"
#include "daemon/restart/restart.h"
#include "daemon/restart/restore-object.h"

struct conn;
struct dctx;
struct obj_owner;

/* An object record, read once by the check and kept for the restore:
 * its bytes too, which the new journal takes as they are when the object
 * comes back as its record says. */
struct robj {
	uint64_t id;
	/* Its remake failed before the families' restore: tried again
	 * once, after (it may use what a family makes again: a DM). */
	bool later;
	struct state_obj m;
	const uint8_t *data;
	size_t len;
};

struct robjs {
	struct robj *v;
	size_t n, cap;
};

/* restart_state_check()'s keeper of the objects it read: they come back
 * after the sessions, from these. */
struct rkeep {
	struct restore *rs;
	struct robjs *ro;
};

/* A request the old daemon read and did not answer. */
struct pending_req {
	uint64_t conn_id, serial;
};

/* A session's hold on a context (a SessionHold record). */
struct rhold {
	uint64_t client_id, ctx_id;
	uint32_t opens;
	uint64_t import;
};

/* The restore's own: the sessions adopted, by id, for the objects; the
 * requests to answer -EAGAIN; the holds, by client id. */
struct rctx {
	struct restore *rs;
	struct conn **conns;
	size_t n, cap;
	struct pending_req *reqs;
	size_t n_reqs, cap_reqs;
	struct rhold *holds;
	size_t n_holds, cap_holds;
	/* The registry's object records, kept past restore_objects() for
	 * those to make again later (restore_objects_later()). */
	struct robjs *ro;
	/* The contexts no session brought back that objects of ended
	 * sessions are in, by id: each tried once; closed again at the
	 * end if nothing came to hold it. */
	uint64_t *orphan_ctxs;
	size_t n_orphan_ctxs, cap_orphan_ctxs;
	/* The ids of the object records marked unnamed (JOURNAL_UNNAMED),
	 * sorted. */
	uint64_t *unnamed;
	size_t n_unnamed, cap_unnamed;
	/* A cgroup an older state does not name could not be read: said
	 * once (restore_domain_adopt()). */
	bool cgroup_logged;
};

/* --- restore-session.c ------------------------------------------------- */

/* Collect every hold, sorted by session: 0 or -ENOMEM. A state of
 * format 2 has them as records, a newer one as slots. */
int restore_holds(struct rctx *rc);
/* Each stored in-flight table (fdstore_each_passed() over its names,
 * @arg the struct rctx): the requests it holds (the newest and any older
 * one alike: a slot set is a request nobody answered). */
int restore_requests_scan(void *arg, const char *name, int fd);
/* Session record @rec adopted (journal_each(), @arg the struct rctx)
 * with its socket from the store and its holds; 0 whatever became of
 * it. */
int restore_session(void *arg, const struct journal_rec *rec);
/* The adopted sessions in id order, for restore_conn_find(). */
void restore_sessions_sort(struct rctx *rc);
/* The adopted session of client @id, NULL for none. */
struct conn *restore_conn_find(const struct rctx *rc, uint64_t id);
void restore_tell(struct rctx *rc);
int restore_refuse_conn(void *arg, const char *name, int fd);

/* --- restore-ctx.c ----------------------------------------------------- */

/* Session @c held context @ctx_id @opens times: 0, also when the context
 * could not come back (the session is told), or -ENOMEM. */
int restore_hold(struct restore *rs, struct conn *c, uint64_t ctx_id,
		 uint32_t opens, uint64_t import);
struct dctx *restore_ctx_orphan(struct rctx *rc, struct obj_owner *ow,
				uint64_t id);
/* The contexts adopted for ended sessions' records that none of them
 * came to hold (each failed to be made again), closed again. */
void restore_orphans_close(struct rctx *rc);

/* --- restore-registry.c ------------------------------------------------ */

void restore_objs_free(struct robjs *ro);
/* restart_state_check()'s callback, @arg a struct rkeep. */
int restore_obj_keep(void *arg, const struct journal_rec *r,
		     const struct state_obj *m);
/* The records marked unnamed (journal_each(), @arg the struct rctx). */
int restore_unnamed_collect(void *arg, const struct journal_rec *r);
/* The objects the check kept (@ro), what each uses first. */
void restore_objects(struct rctx *rc, struct robjs *ro);

#endif
