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
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/server/conn.h"
#include "daemon/registry/ctx.h"
#include "daemon/server/dispatch.h"
#include "daemon/registry/domain-join.h"
#include "daemon/registry/domain.h"
#include "daemon/families/family.h"
#include "daemon/util/keysort.h"
#include "daemon/util/log.h"
#include "daemon/registry/objects.h"
#include "daemon/registry/user.h"
#include "daemon/restart/restart-int.h"
#include "daemon/restart/restart.h"
#include "daemon/restart/restart-srv.h"
#include "daemon/restart/restore-domain.h"
#include "daemon/restart/restore-object.h"
#include "daemon/server/server.h"
#include "proto/wire.h"
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

/* --- the objects, read by the check ------------------------------------ */

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

static void robjs_free(struct robjs *ro)
{
	free(ro->v);
	ro->v = NULL;
	ro->n = ro->cap = 0;
}

/* restart_state_check()'s keeper of the objects it read: they come back
 * after the sessions, from these. */
struct rkeep {
	struct restore *rs;
	struct robjs *ro;
};

static int robj_keep(void *arg, const struct journal_rec *r,
		     const struct state_obj *m)
{
	struct rkeep *k = arg;
	struct restore *rs = k->rs;
	struct robjs *ro = k->ro;

	if (ro->n == ro->cap) {
		size_t cap = ro->cap ? ro->cap * 2 : 256;
		struct robj *p = realloc(ro->v, cap * sizeof(*p));

		if (!p)
			return restore_fail(rs, -ENOMEM, "out of memory");
		ro->v = p;
		ro->cap = cap;
	}
	ro->v[ro->n++] = (struct robj){
		.id = r->key, .m = *m, .data = r->data, .len = r->len
	};
	return 0;
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

/* --- sessions and their contexts ---------------------------------------- */

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
	if (rc->n_holds == rc->cap_holds) {
		size_t cap = rc->cap_holds ? rc->cap_holds * 2 : 64;
		struct rhold *p = realloc(rc->holds, cap * sizeof(*p));

		if (!p) {
			rdmab__state__session_hold__free_unpacked(m, NULL);
			return restore_fail(rc->rs, -ENOMEM, "out of memory");
		}
		rc->holds = p;
		rc->cap_holds = cap;
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

	if (rc->n_holds == rc->cap_holds) {
		size_t cap = rc->cap_holds ? rc->cap_holds * 2 : 64;
		struct rhold *p = realloc(rc->holds, cap * sizeof(*p));

		if (!p)
			return restore_fail(rc->rs, -ENOMEM, "out of memory");
		rc->holds = p;
		rc->cap_holds = cap;
	}
	rc->holds[rc->n_holds++] =
		(struct rhold){ sl->id[0], sl->id[1], sl->n, sl->id[2] };
	return 0;
}

static int hold_cmp(const void *a, const void *b)
{
	const struct rhold *x = a, *y = b;

	return x->client_id < y->client_id ? -1 : x->client_id > y->client_id;
}

/* Collect every hold, sorted by session: 0 or -ENOMEM. A state of
 * format 2 has them as records, a newer one as slots. */
static int restore_holds(struct rctx *rc)
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

	if (rc->n_reqs == rc->cap_reqs) {
		size_t cap = rc->cap_reqs ? rc->cap_reqs * 2 : 16;
		struct pending_req *p = realloc(rc->reqs, cap * sizeof(*p));

		/* Without memory that client waits for its reply: its
		 * timeout answers. */
		if (!p)
			return;
		rc->reqs = p;
		rc->cap_reqs = cap;
	}
	rc->reqs[rc->n_reqs++] = (struct pending_req){ conn_id, serial };
}

/* Each stored in-flight table: the requests it holds (the newest and any
 * older one alike: a slot set is a request nobody answered). */
static int pending_scan(void *arg, const char *name, int fd)
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

static struct conn *rctx_conn(const struct rctx *rc, uint64_t id)
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

/* A device without import: no client shared the broker's context of @id,
 * each opened the device itself, so a new one under the same id keeps the
 * sessions' holds and leaves their own contexts alone (a device-removed
 * event would make the library drop them). NULL when it cannot be opened
 * (logged). */
static struct dctx *restore_ctx_reopen(struct restore *rs, struct conn *c,
				       struct device *dev, uint64_t id)
{
	struct why why = { 0 };
	struct dctx *x;
	int ret;

	ret = dctx_adopt(rs->core, c->cl.domain, dev, c->cl.user, id, -1, 0,
			 &why, &x);
	if (ret < 0) {
		log_warn("context %" PRIu64 " on %s cannot be opened again: "
			 "%s",
			 id, dev->name, why.text);
		return NULL;
	}
	x->reopened = true;
	log_info("context %" PRIu64 " on %s: %s cannot import it, opened "
		 "again under the same id",
		 id, dev->name, dev->name);
	return x;
}

/* Context @id's record, and its device, present under the same name;
 * NULL when either is not (logged). The record is the caller's to free. */
static Rdmab__State__Context *
restore_ctx_record(struct restore *rs, uint64_t id, struct device **ret_dev)
{
	Rdmab__State__Context *m;
	struct journal_rec rec;
	struct device *dev;

	if (journal_find(rs->view, JOURNAL_CONTEXT, id, &rec) < 0)
		return NULL;
	m = rdmab__state__context__unpack(NULL, rec.len, rec.data);
	if (!m)
		return NULL;
	dev = device_find(&rs->core->devices, m->device);
	if (!dev || strcmp(dev->name, m->device) != 0) {
		log_warn("context %" PRIu64 " (%s on %s): no such device any "
			 "more, not adopted",
			 id, m->domain, m->device);
		rdmab__state__context__free_unpacked(m, NULL);
		return NULL;
	}
	*ret_dev = dev;
	return m;
}

/* Context @id's stored descriptor, in *@ret_fd: 0, or -ENOENT (logged). */
static int restore_ctx_take(struct restore *rs, uint64_t id, int *ret_fd)
{
	char name[FDSTORE_NAME_MAX + 1];

	restart_fd_name(name, sizeof(name), "ctx", id);
	if (restore_take_fd(rs, name, ret_fd) == 0)
		return 0;
	log_warn("context %" PRIu64 ": its descriptor is not in the store, "
		 "not adopted",
		 id);
	return -ENOENT;
}

/* Context @id of @d on @dev, of record @m, over its stored descriptor @fd
 * (taken), with the record's books; a private domain's charged to @u.
 * 0, or a negative errno with the sentence in @why: the descriptor is
 * then out of the store too (systemd's copy would keep the old context,
 * and its PD, alive until the next start). */
static int restore_ctx_fd(struct restore *rs, struct domain *d,
			  struct device *dev, struct user *u, uint64_t id,
			  int fd, const Rdmab__State__Context *m,
			  struct why *why, struct dctx **ret)
{
	char name[FDSTORE_NAME_MAX + 1];
	struct dctx *x;
	int err;

	err = dctx_adopt(rs->core, d, dev, u, id, fd, m->pd_handle, why, &x);
	if (err < 0) {
		restart_fd_name(name, sizeof(name), "ctx", id);
		fdstore_remove(rs->store, name);
		return err;
	}
	restart_ctx_books(rs->core, x, m);
	rs->adopted_contexts++;
	*ret = x;
	return 0;
}

/* Context @id that @c's session held: the one its domain has already, or
 * adopted from the store. NULL when it cannot be (logged): the session
 * goes on without it, as after a device removal. */
static struct dctx *restore_ctx(struct restore *rs, struct conn *c, uint64_t id)
{
	Rdmab__State__Context *m;
	struct why why = { 0 };
	struct device *dev;
	struct dctx *x;
	int fd, ret;

	x = dctx_find_id(c->cl.domain, id);
	if (x)
		return x;
	m = restore_ctx_record(rs, id, &dev);
	if (!m)
		return NULL;
	if (strcmp(c->cl.domain->name, m->domain) != 0) {
		log_warn("context %" PRIu64 " (%s on %s): no such domain any "
			 "more, not adopted",
			 id, m->domain, m->device);
		rdmab__state__context__free_unpacked(m, NULL);
		return NULL;
	}
	if (restore_ctx_take(rs, id, &fd) < 0) {
		rdmab__state__context__free_unpacked(m, NULL);
		return NULL;
	}
	ret = restore_ctx_fd(rs, c->cl.domain, dev, c->cl.user, id, fd, m, &why,
			     &x);
	rdmab__state__context__free_unpacked(m, NULL);
	if (ret < 0) {
		if (!dev->caps.import)
			return restore_ctx_reopen(rs, c, dev, id);
		log_warn("context %" PRIu64 " on %s cannot be adopted: %s%s%s",
			 id, dev->name, strerror(-ret), *why.text ? ": " : "",
			 why.text);
		return NULL;
	}
	return x;
}

/* Was context @id tried for objects of ended sessions? Else noted: 0,
 * or -ENOMEM. */
static int orphan_ctx_tried(struct rctx *rc, uint64_t id, bool *tried)
{
	uint64_t *p;

	for (size_t i = 0; i < rc->n_orphan_ctxs; i++)
		if (rc->orphan_ctxs[i] == id) {
			*tried = true;
			return 0;
		}
	if (rc->n_orphan_ctxs == rc->cap_orphan_ctxs) {
		size_t cap = rc->cap_orphan_ctxs ? rc->cap_orphan_ctxs * 2 : 8;

		p = realloc(rc->orphan_ctxs, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		rc->orphan_ctxs = p;
		rc->cap_orphan_ctxs = cap;
	}
	rc->orphan_ctxs[rc->n_orphan_ctxs++] = id;
	*tried = false;
	return 0;
}

/*
 * Context @id of records of @ow, whose session ended before the restart:
 * the one a session brought back, or else adopted from the store all the
 * same, in its domain (made again when no session of it came back
 * either). The kernel's objects, or the soft device's, live in it: left
 * in the store, they would be off the books. Held by the owner's records
 * from then on, it closes when they are gone (the process's exit and
 * cleanup), as before the restart. NULL when it cannot be (logged once).
 */
static struct dctx *restore_ctx_orphan(struct rctx *rc, struct obj_owner *ow,
				       uint64_t id)
{
	struct restore *rs = rc->rs;
	Rdmab__State__Context *m;
	struct why why = { 0 };
	struct device *dev;
	struct domain *d;
	struct user *u;
	struct dctx *x = restart_ctx_find(rs->core, id);
	bool tried;
	int fd, ret;

	if (x)
		return x;
	if (orphan_ctx_tried(rc, id, &tried) < 0 || tried)
		return NULL;
	m = restore_ctx_record(rs, id, &dev);
	if (!m)
		return NULL;
	d = restore_domain_adopt(rs->core, ow, m, &rc->cgroup_logged);
	u = user_get(rs->core, ow->uid);
	if (!d || !u) {
		log_warn("context %" PRIu64 " (%s on %s) of client %" PRIu64
			 ", whose session ended: %s, not adopted",
			 id, m->domain, m->device, ow->client_id,
			 u ? "its domain cannot be made again" :
			     "out of memory");
		ret = -ENOENT;
		goto out;
	}
	/* On a device without import the adopt fails, and nothing is
	 * opened again: the records were of the clients' own contexts. */
	ret = restore_ctx_take(rs, id, &fd);
	if (ret == 0)
		ret = restore_ctx_fd(rs, d, dev, u, id, fd, m, &why, &x);
	if (ret < 0 && ret != -ENOENT)
		log_warn("context %" PRIu64 " on %s of client %" PRIu64
			 ", whose session ended, cannot be adopted: %s",
			 id, dev->name, ow->client_id, why.text);
out:
	/* A domain made for it and left empty goes. */
	if (ret < 0 && d)
		domain_release(rs->core, d);
	if (u)
		user_unref(rs->core, u);
	rdmab__state__context__free_unpacked(m, NULL);
	return ret < 0 ? NULL : x;
}

struct dctx *restore_ctx_detached(struct restore *rs, struct obj_owner *ow,
				  uint64_t ctx_id)
{
	return rs->rc ? restore_ctx_orphan(rs->rc, ow, ctx_id) : NULL;
}

/* The contexts adopted for ended sessions' records that none of them
 * came to hold (each failed to be made again), closed again. */
static void restore_orphans_close(struct rctx *rc)
{
	for (size_t i = 0; i < rc->n_orphan_ctxs; i++) {
		struct dctx *x =
			restart_ctx_find(rc->rs->core, rc->orphan_ctxs[i]);

		if (x)
			dctx_close_unheld(rc->rs->core, x);
	}
}

/* A context the session held that could not be adopted: told as a
 * device removal is, so that the library closes its copy. */
static void restore_ctx_lost(struct conn *c, uint64_t id)
{
	Rdmab__DeviceRemovedEvent rev = RDMAB__DEVICE_REMOVED_EVENT__INIT;
	Rdmab__Event ev = RDMAB__EVENT__INIT;
	char reason[128];
	Rdmab__State__Context *m = NULL;
	struct journal_rec rec;

	if (journal_find(c->cl.core->restart->view, JOURNAL_CONTEXT, id,
			 &rec) == 0)
		m = rdmab__state__context__unpack(NULL, rec.len, rec.data);
	snprintf(reason, sizeof(reason),
		 "the broker restarted and could not adopt context %" PRIu64,
		 id);
	rev.device = m ? m->device : "";
	rev.reason = reason;
	ev.body_case = RDMAB__EVENT__BODY_DEVICE_REMOVED;
	ev.device_removed = &rev;
	ev.object_kind = IBC_OBJ_CONTEXT;
	ev.object_id = id;
	conn_send_event(c, &ev);
	if (m)
		rdmab__state__context__free_unpacked(m, NULL);
}

/* Session @c held context @ctx_id @opens times: 0, also when the context
 * could not come back (the session is told), or -ENOMEM. */
static int restore_hold(struct restore *rs, struct conn *c, uint64_t ctx_id,
			uint32_t opens, uint64_t import)
{
	struct dctx *x = restore_ctx(rs, c, ctx_id);

	if (!x) {
		restore_ctx_lost(c, ctx_id);
		return 0;
	}
	return dctx_client_adopt(&c->cl, x, opens, import);
}

static int restore_session(void *arg, const struct journal_rec *rec)
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
	if (rc->n == rc->cap) {
		size_t cap = rc->cap ? rc->cap * 2 : 64;
		struct conn **p = realloc(rc->conns, cap * sizeof(*p));

		if (!p) {
			conn_kill(c, "out of memory");
			goto out;
		}
		rc->conns = p;
		rc->cap = cap;
	}
	rc->conns[rc->n++] = c;

out:
	rdmab__state__session__free_unpacked(m, NULL);
	return 0;
}

/* --- the registry's objects --------------------------------------------- */

/* What an object uses first: the cleanup's order backwards. */
struct robj_order {
	/* The rank, reversed, above the handle. */
	uint64_t key;
	/* The record's index. */
	size_t i;
};

/* The spec of @m's create (its soft part), as restart_obj_made() was
 * given it; its attributes are the caller's. */
static void robj_spec(const struct state_obj *m, struct obj_spec *spec)
{
	*spec = (struct obj_spec){ .kind = (enum ibc_obj_kind)m->kind };
	for (size_t i = 0; i < m->soft.n_uses && i < OBJ_MAX_USES; i++)
		spec->uses[i] = m->soft.uses[i];
	spec->used = m->soft.used_mask;
	obj_spec_fields_load(spec, &m->soft.device);
}

/* Make a soft object again at its handle, as its create asked. */
static int robj_remake(struct dctx *x, const struct state_obj *m,
		       struct obj_made *made, struct why *why)
{
	struct obj_spec spec;

	if (!m->has_soft)
		return why_set(why, -EBADMSG, "its record has no spec");
	robj_spec(m, &spec);
	spec.used &= (1u << OBJ_MAX_USES) - 1;
	obj_attr_from_wire(&spec.attr, m->soft.has_attr ? &m->soft.attr : NULL);
	spec.num = m->soft.num;
	spec.key = m->soft.key;
	/* Provider-internal records per QP are not made again. */
	spec.import = 0;
	return x->dev->ctx_ops->obj_restore(x->dc, &spec, m->handle, made, why);
}

/* Does @m say what @o is, as restart_obj_made() or restart_obj_saved()
 * would write it (a record without a spec for what is not made again;
 * one made again with the number and key @made it was given)? Then its
 * bytes are the new journal's record as they are: packing 100,000
 * objects again was a third of a restore. */
static bool robj_is_record(struct core *core, const struct obj *o,
			   const struct state_obj *m,
			   const struct obj_made *made)
{
	struct rec_fields fam;

	/* The families' fields, as their save hooks write them. */
	fam.n = 0;
	objects_hook_save(core->registry, o, &fam);
	if (!rec_fields_same(&fam, &m->family))
		return false;
	if (o->owner->client_id != m->owner || o->ctx->id != m->ctx_id ||
	    o->kind != m->kind || o->handle != m->handle ||
	    o->intent != m->intent || o->made_here != m->made_here ||
	    o->window_made != m->window_made || o->stuck != m->stuck ||
	    o->family_owned != m->family_owned ||
	    o->born_usec != m->born_usec || !made != !m->has_soft)
		return false;
	/* A record that names no number or key where the object has one
	 * (a create that gave none): it was given new ones, which its
	 * record must say. */
	return !made || (made->num == m->soft.num && made->lkey == m->soft.key);
}

static int unnamed_collect(void *arg, const struct journal_rec *r)
{
	struct rctx *rc = arg;

	if (rc->n_unnamed == rc->cap_unnamed) {
		size_t cap = rc->cap_unnamed ? rc->cap_unnamed * 2 : 64;
		uint64_t *p = realloc(rc->unnamed, cap * sizeof(*p));

		if (!p)
			return restore_fail(rc->rs, -ENOMEM, "out of memory");
		rc->unnamed = p;
		rc->cap_unnamed = cap;
	}
	/* In key order (journal_each()): sorted. */
	rc->unnamed[rc->n_unnamed++] = r->key;
	return 0;
}

static bool robj_unnamed(const struct rctx *rc, uint64_t id)
{
	size_t lo = 0, hi = rc->n_unnamed;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rc->unnamed[mid] == id)
			return true;
		if (rc->unnamed[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* An object the broker made that stayed in its context in no record's
 * name (kept.c): made again at its handle, for no one, so that the
 * context holds what it held and its count (unaccounted, from the
 * context's record) stays as it was. Its context comes back with the
 * sessions that hold it, or not at all (then it closed, and the object
 * went with it). */
static void restore_unnamed(struct rctx *rc, struct robj *ro, bool last)
{
	const struct state_obj *m = &ro->m;
	struct dctx *x = restart_ctx_find(rc->rs->core, m->ctx_id);
	struct obj_made made = { 0 };
	struct why why = { 0 };
	int ret;

	if (!x || !x->dc || x->reopened) {
		/* A context adopted for a detached owner's record may come
		 * after it (the records' order): once more, last. */
		if (!last) {
			ro->later = true;
			return;
		}
		log_debug("object %" PRIu64 " (unnamed): its context was not "
			  "adopted",
			  ro->id);
		return;
	}
	ret = robj_remake(x, m, &made, &why);
	if (ret < 0 && !last) {
		ro->later = true;
		return;
	}
	if (ret < 0) {
		log_warn("object %" PRIu64 " (%s %u, unnamed) cannot be made "
			 "again: %s",
			 ro->id, obj_kind_name(m->kind), m->handle, why.text);
		return;
	}
	restart_unnamed_adopted(rc->rs->core, x, ro->id, ro->data, ro->len);
}

static void restore_obj(struct rctx *rc, struct robj *ro, bool last)
{
	const struct state_obj *m = &ro->m;
	struct why why = { 0 };
	struct obj_made made = { 0 };
	struct conn *c;
	struct obj_owner *ow;
	struct dctx *x;
	bool remake;
	struct obj *o;
	int ret;

	/* A family's record (a DM import) is the family's to restore. */
	if (m->family_owned)
		return;
	if (rc->n_unnamed && robj_unnamed(rc, ro->id)) {
		restore_unnamed(rc, ro, last);
		return;
	}
	c = rctx_conn(rc, m->owner);
	/* A session that ended before the restart: its owner's record. */
	ow = c ? NULL : restart_owner_find(rc->rs, m->owner);
	x = c  ? dctx_conn_find(&c->cl, m->ctx_id) :
	    ow ? restore_ctx_orphan(rc, ow, m->ctx_id) :
		 NULL;
	if (!x || !x->dc || x->reopened) {
		log_debug("object %" PRIu64 ": its session or context was not "
			  "adopted",
			  ro->id);
		return;
	}
	remake = m->made_here && (!m->intent || m->window_made);
	if (remake) {
		ret = robj_remake(x, m, &made, &why);
		if (ret < 0 && !last) {
			ro->later = true;
			return;
		}
		if (ret < 0) {
			log_warn("object %" PRIu64 " (%s %u) cannot be made "
				 "again: %s",
				 ro->id, obj_kind_name(m->kind), m->handle,
				 why.text);
			return;
		}
	}
	if (c)
		ret = objects_add_id(&c->cl, x, (enum ibc_obj_kind)m->kind,
				     m->intent, m->made_here, m->handle, ro->id,
				     &why, &o);
	else
		ret = objects_add_detached(ow, x, (enum ibc_obj_kind)m->kind,
					   m->intent, m->made_here, m->handle,
					   ro->id, &why, &o);
	if (ret < 0) {
		log_warn("object %" PRIu64 ": not adopted: %s", ro->id,
			 why.text);
		if (remake)
			x->dev->ctx_ops->obj_destroy(x->dc, m->kind, m->handle,
						     &why);
		return;
	}
	o->handle = m->handle;
	o->window_made = m->window_made;
	o->born_usec = m->born_usec;
	ret = objects_hook_restore(rc->rs->core->registry, o, m);
	if (ret < 0) {
		log_warn("object %" PRIu64 ": not adopted: %s", ro->id,
			 strerror(-ret));
		objects_remove(o);
		if (remake)
			x->dev->ctx_ops->obj_destroy(x->dc, m->kind, m->handle,
						     &why);
		return;
	}
	if (robj_is_record(rc->rs->core, o, m, remake ? &made : NULL)) {
		restart_obj_packed(rc->rs->core, o, remake ? &made : NULL,
				   ro->data, ro->len);
	} else if (remake && m->has_soft) {
		struct obj_spec spec;

		robj_spec(m, &spec);
		restart_obj_made(rc->rs->core, o, &spec, &made,
				 m->soft.has_attr ? &m->soft.attr : NULL);
	} else {
		restart_obj_saved(rc->rs->core, o);
	}
	rc->rs->adopted_objects++;
}

/* The objects the check kept (@ro), what each uses first. */
static void restore_objects(struct rctx *rc, struct robjs *ro)
{
	struct robj_order *order;
	size_t n = 0;

	/* qsort() of nothing must not be given NULL (UBSan). */
	if (rc->n)
		qsort(rc->conns, rc->n, sizeof(*rc->conns), conn_cmp);
	/* Sorted by a key of their own: the records are a few hundred
	 * bytes, which qsort() would move about. */
	order = calloc(ro->n ? ro->n : 1, sizeof(*order));
	if (!order) {
		log_err("out of memory: the %zu objects are not adopted",
			ro->n);
		return;
	}
	for (size_t i = 0; i < ro->n; i++) {
		const struct robj *r = &ro->v[i];

		if (r->m.kind == IBC_OBJ_NONE || r->m.kind >= OBJ_KIND_COUNT) {
			log_warn("object %" PRIu64 ": its record names no "
				 "kind, not adopted",
				 r->id);
			continue;
		}
		order[n].key = (uint64_t)(UINT32_MAX -
					  obj_kind_destroy_rank(r->m.kind))
				       << 32 |
			       r->m.handle;
		order[n++].i = i;
	}
	/* Stable: ties (a handle in two contexts) keep the id order. */
	if (keysort(order, n, sizeof(*order),
		    offsetof(struct robj_order, key)) < 0) {
		log_err("out of memory: the %zu objects are not adopted", n);
		n = 0;
	}
	for (size_t i = 0; i < n; i++)
		restore_obj(rc, &ro->v[order[i].i], false);
	free(order);
}

void restore_objects_later(struct restore *rs)
{
	struct robjs *ro = rs->rc ? rs->rc->ro : NULL;

	for (size_t i = 0; ro && i < ro->n; i++)
		if (ro->v[i].later) {
			ro->v[i].later = false;
			restore_obj(rs->rc, &ro->v[i], true);
		}
}

/* Each adopted session learns the new generation (a best effort, as
 * every Event). */
static void restore_tell(struct rctx *rc)
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
		struct conn *c = rctx_conn(rc, rc->reqs[i].conn_id);

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
static int restore_refuse_conn(void *arg, const char *name, int fd)
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
	journal_on_full(r->j, NULL, NULL);
	(void)journal_reserve(r->j, journal_view_size(r->view));
	if (r->view) {
		struct rkeep keep = { &rs, &ro };
		size_t n_objs = journal_view_count(rs.view, JOURNAL_OBJECT);

		/* Room for every object at once: growing by doubling moved
		 * 25 MB of records about (100,000 of them). Without it,
		 * robj_keep() grows the array as before. */
		ro.v = n_objs ? malloc(n_objs * sizeof(*ro.v)) : NULL;
		if (ro.v)
			ro.cap = n_objs;

		ret = restart_state_check(rs.view, robj_keep, &keep, rs.why,
					  sizeof(rs.why));
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
				pending_scan(&rc, name, -1);
			restore_phase(&ph, RESTORE_REQUESTS);
			ret = restore_holds(&rc);
			if (ret == 0)
				journal_each(r->view, JOURNAL_SESSION,
					     restore_session, &rc);
			restore_phase(&ph, RESTORE_SESSIONS);
			if (ret == 0)
				ret = journal_each(r->view, JOURNAL_UNNAMED,
						   unnamed_collect, &rc);
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
		robjs_free(&ro);
		restore_phase(&ph, RESTORE_TELL);
	}
	journal_rebase(r->j);
	journal_on_full(r->j, restart_journal_full, &srv->core);
	/* A failure here breaks the journal like any write of the restore
	 * did: restore_journal_failed() decides for all of them. */
	restart_counters_save(&srv->core);
	/* Stored now, when it holds the adopted state: a kill during the
	 * restore left the old one the newest. */
	restart_fd_name(name, sizeof(name), "state", journal_gen(r->j));
	ret = fdstore_put(r->store, name, journal_fd(r->j));
	if (ret < 0) {
		log_err("cannot keep the state in the fd store: %s",
			strerror(-ret));
		return ret;
	}
	/* Out even when the journal failed: the newest state a next daemon
	 * could read would be one of these, which this one has left. */
	while (fdstore_each_passed(r->store, FDSTORE_PREFIX "state.",
				   restart_first_name, name) == 1) {
		if (fdstore_take(r->store, name, &fd) == 0)
			close(fd);
		fdstore_remove(r->store, name);
	}
	restart_fd_name(name, sizeof(name), "inflight", journal_gen(r->j));
	ret = fdstore_put(r->store, name, inflight_fd(r->inflight));
	if (ret < 0)
		log_warn("requests in flight at a restart will not be "
			 "answered: the table is not in the fd store: %s",
			 strerror(-ret));
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
