// SPDX-License-Identifier: MIT
/*
 * Device memory across a restart (issue 25; restart.h's contract): each
 * DM is one journal record (proto/state.proto's Dm, its holds inside),
 * rewritten whole as it changes, and each session's status page one
 * (DmSession); a soft DM's memfd and every status page go to the fd store
 * as they are made. The restore makes the records again, takes their
 * descriptors back (a verbs DM through ibv_import_dm(), in the device's
 * dm_adopt) and charges each DM again as its alloc did: the charges are
 * never records, so they cannot disagree with the DMs.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/registry/charge.h"
#include "daemon/registry/client.h"
#include "daemon/registry/ctx.h"
#include "daemon/families/dm/dm.h"
#include "daemon/registry/domain.h"
#include "daemon/families/family-state.h"
#include "daemon/util/log.h"
#include "daemon/util/array.h"
#include "daemon/registry/objects.h"
#include "daemon/restart/restart.h"
#include "daemon/registry/core.h"
#include "daemon/registry/user.h"
#include "proto/state.pb-c.h"

enum {
	JOURNAL_DM = DM_JOURNAL_FIRST,
	JOURNAL_DM_SESSION = DM_JOURNAL_FIRST + 1,
};

/* Each kind's message, in the order above (family.h's journal_msgs). */
const struct ProtobufCMessageDescriptor
	*const dm_journal_msgs[DM_JOURNAL_MSGS] = {
		&rdmab__state__dm__descriptor,
		&rdmab__state__dm_session__descriptor,
	};

/* The session of a hold, by its connection's client id; 0 detached. */
static uint64_t dm_hold_session(const struct dm_hold *h)
{
	return h->s ? h->s->conn->id : 0;
}

/* Write @dm's record into @j: 0 or journal_put()'s -errno. */
static int dm_put(struct journal *j, const struct dm *dm)
{
	Rdmab__State__Dm m = RDMAB__STATE__DM__INIT;
	Rdmab__State__DmHold *holds = NULL, **hp = NULL;
	int ret;

	if (dm->n_holds) {
		holds = calloc(dm->n_holds, sizeof(*holds));
		hp = calloc(dm->n_holds, sizeof(*hp));
		if (!holds || !hp) {
			free(holds);
			free(hp);
			return -ENOMEM;
		}
	}
	for (unsigned int i = 0; i < dm->n_holds; i++) {
		rdmab__state__dm_hold__init(&holds[i]);
		holds[i].object_id = dm->holds[i].o->id;
		holds[i].session = dm_hold_session(&dm->holds[i]);
		holds[i].slot = dm->holds[i].slot;
		holds[i].owner = dm->holds[i].o->owner->client_id;
		hp[i] = &holds[i];
	}
	m.ctx_id = dm->ctx->id;
	m.handle = dm->dd.handle;
	m.length = dm->length;
	m.pages = dm->pages;
	m.log_align = dm->log_align;
	m.born_usec = dm->born_usec;
	m.allocator_id = dm->allocator_id;
	m.allocator_live = dm->allocator != NULL;
	m.allocator_pid = (uint32_t)dm->allocator_pid;
	m.uid = (uint32_t)dm->uid;
	m.charged = dm->charged;
	m.persistent = dm->persistent;
	m.owner_charged = dm->owner != NULL;
	m.free_asked = dm->free_asked;
	m.blocked = dm->blocked;
	m.revoked = dm->revoked;
	m.blocked_by = (char *)dm->blocked_by;
	m.claim_object = dm->claim ? dm->claim->id : 0;
	m.n_holds = dm->n_holds;
	m.holds = hp;
	ret = journal_put(j, JOURNAL_DM, dm->id, &m.base);
	free(holds);
	free(hp);
	return ret;
}

static int dm_session_put(struct journal *j, const struct dm_session *s)
{
	Rdmab__State__DmSession m = RDMAB__STATE__DM_SESSION__INIT;

	m.sent = s->sent;
	return journal_put(j, JOURNAL_DM_SESSION, s->conn->id, &m.base);
}

/* --- as it changes ---------------------------------------------------- */

void dm_journal(struct core *core, const struct dm *dm)
{
	struct journal *j = restart_journal(core);

	/* A failure marks the journal broken (journal.h): the next start
	 * refuses the whole state rather than adopt a DM half known. */
	if (j)
		dm_put(j, dm);
}

void dm_journal_forget(struct core *core, const struct dm *dm)
{
	state_forget(core, JOURNAL_DM, dm->id, "dm");
}

int dm_journal_store_fd(struct core *core, const struct dm *dm, bool over)
{
	struct fdstore *st = restart_fdstore(core);
	char name[FDSTORE_NAME_MAX];

	if (!st || dm->dd.fd < 0)
		return 0;
	state_fd_name(name, sizeof(name), "dm", dm->id);
	return fdstore_put_for(st, name, dm->dd.fd, (uint32_t)dm->uid, over);
}

int dm_journal_session(struct core *core, const struct dm_session *s)
{
	struct fdstore *st = restart_fdstore(core);
	char name[FDSTORE_NAME_MAX];
	int ret;

	if (!st)
		return 0;
	state_fd_name(name, sizeof(name), "dmst", s->conn->id);
	ret = fdstore_put(st, name, s->fd);
	if (ret < 0)
		return ret;
	dm_session_put(restart_journal(core), s);
	return 0;
}

void dm_journal_session_sent(struct core *core, const struct dm_session *s)
{
	struct journal *j = restart_journal(core);

	if (j)
		dm_session_put(j, s);
}

void dm_journal_session_gone(struct core *core, const struct dm_session *s)
{
	/* Restart off: s->conn may be gone already at exit. */
	if (!restart_journal(core) && !restart_fdstore(core))
		return;
	state_forget(core, JOURNAL_DM_SESSION, s->conn->id, "dmst");
}

/* --- leave: the daemon exits, the next one takes over ------------------- */

void dm_state_leave(struct core *core)
{
	struct dm_table *t = dm_state(core);
	struct dm_session *s;
	struct dm *dm;

	/* Nothing is freed on the device, nothing leaves the journal or
	 * the store: the records stay the next daemon's. This process's
	 * copies of the descriptors and its memory go. */
	while ((dm = TAILQ_FIRST(&t->dms))) {
		TAILQ_REMOVE(&t->dms, dm, link);
		TAILQ_REMOVE(&dm_domain_of(dm->domain)->dms, dm, domain_link);
		t->n--;
		dm_mrs_loosen(core, dm);
		if (dm->revoke_ev)
			event_free(dm->revoke_ev);
		if (dm->dd.fd >= 0)
			close(dm->dd.fd);
		if (dm->owner)
			user_unref(core, dm->owner);
		dctx_obj_release(core, dm->ctx);
		free(dm->holds);
		free(dm);
	}
	t->n_blocked = 0;
	while ((s = TAILQ_FIRST(&t->sessions))) {
		TAILQ_REMOVE(&t->sessions, s, link);
		munmap(s->page, DM_STATUS_SLOTS);
		close(s->fd);
		dm_user_uncharge_page(s->user);
		user_unref(core, s->user);
		free(s);
	}
}

/* --- restore ------------------------------------------------------------- */

/* The family's restore: the sessions whose status page the store lost
 * (by client id, in key order), whose DMs are revoked. */
struct dm_restoring {
	struct restore *rs;
	uint64_t *lost;
	size_t n_lost, cap_lost;
};

static bool dm_page_lost(const struct dm_restoring *dr, uint64_t session)
{
	for (size_t i = 0; i < dr->n_lost; i++)
		if (dr->lost[i] == session)
			return true;
	return false;
}

/* Session @id's page is not in the store: noted, with the sentence
 * logged once per session. 0 or -ENOMEM (restore_fail()). */
static int dm_page_lose(struct dm_restoring *dr, uint64_t id)
{
	if (array_grow(&dr->lost, &dr->cap_lost, dr->n_lost + 1,
		       sizeof(*dr->lost), 8) < 0)
		return restore_fail(dr->rs, -ENOMEM, "out of memory");
	dr->lost[dr->n_lost++] = id;
	log_warn("client %" PRIu64 ": its DM status page is not in the fd "
		 "store: the DMs it holds are revoked",
		 id);
	return 0;
}

static struct dm_session *dm_session_by_id(struct core *core, uint64_t id)
{
	struct dm_session *s;

	TAILQ_FOREACH(s, &dm_state(core)->sessions, link)
		if (s->conn->id == id)
			return s;
	return NULL;
}

static int dm_restore_session(void *arg, const struct journal_rec *r)
{
	struct dm_restoring *dr = arg;
	struct restore *rs = dr->rs;
	struct core *core = rs->core;
	Rdmab__State__DmSession *m;
	char name[FDSTORE_NAME_MAX];
	struct dm_session *s;
	struct client *c;
	int fd, ret;

	m = rdmab__state__dm_session__unpack(NULL, r->len, r->data);
	if (!m)
		return restore_fail(rs, -EBADMSG,
				    "the DM status page of client %" PRIu64
				    " does not decode",
				    r->key);
	c = state_client(core, r->key);
	state_fd_name(name, sizeof(name), "dmst", r->key);
	if (!c) {
		/* The session did not come back (it hung up while no daemon
		 * ran): its page goes with it, closed with what nobody
		 * took. */
		rdmab__state__dm_session__free_unpacked(m, NULL);
		return 0;
	}
	ret = restore_take_fd(rs, name, &fd);
	if (ret < 0) {
		/* Its slots cannot be read nor written any more: the DMs it
		 * held go (dm_restore_one()), not the whole state. The
		 * session's next DM makes it a new page. */
		rdmab__state__dm_session__free_unpacked(m, NULL);
		return dm_page_lose(dr, r->key);
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		close(fd);
		rdmab__state__dm_session__free_unpacked(m, NULL);
		return restore_fail(rs, -ENOMEM, "out of memory");
	}
	s->fd = fd;
	s->conn = c;
	s->sent = m->sent;
	rdmab__state__dm_session__free_unpacked(m, NULL);
	s->page = mmap(NULL, DM_STATUS_SLOTS, PROT_READ | PROT_WRITE,
		       MAP_SHARED, fd, 0);
	if (s->page == MAP_FAILED) {
		ret = -errno;
		close(fd);
		free(s);
		return restore_fail(rs, ret,
				    "the DM status page of client %" PRIu64
				    " cannot be mapped: %s",
				    r->key, strerror(-ret));
	}
	/* Exempt: it was charged when made, whatever a reload did since. */
	dm_user_charge_page(core, c->user, true);
	s->user = user_ref(c->user);
	TAILQ_INSERT_TAIL(&dm_state(core)->sessions, s, link);
	/* The new generation's journal and store hold what was adopted. */
	ret = dm_journal_session(core, s);
	if (ret < 0)
		return restore_fail(rs, ret,
				    "the DM status page of client %" PRIu64
				    " cannot be kept: %s",
				    r->key, strerror(-ret));
	return 0;
}

/*
 * A DM import's registry record, made again under @id for the session of
 * @owner (the registry journals no DM import: the DM's record names them),
 * or, when that session had ended before the restart while its process
 * lived, for its detached owner: the import stays until the process
 * exits, as before the restart. NULL when neither came back: the import
 * went with its session.
 */
static struct obj *dm_restore_record(struct restore *rs, struct dm *dm,
				     uint64_t owner, uint64_t id)
{
	struct client *c = state_client(rs->core, owner);
	struct obj_owner *ow = c ? NULL : restart_owner_find(rs, owner);
	struct why why = { 0 };
	struct obj *o;
	int ret;

	if (c && !dctx_conn_find(c, dm->ctx->id))
		return NULL;
	if (c)
		ret = objects_add_id(c, dm->ctx, IBC_OBJ_DM, false, true,
				     dm->dd.handle, id, &why, &o);
	else if (ow)
		ret = objects_add_detached(ow, dm->ctx, IBC_OBJ_DM, false, true,
					   dm->dd.handle, id, &why, &o);
	else
		return NULL;
	if (ret < 0) {
		log_warn("DM %" PRIu64 ": the import %" PRIu64 " of client "
			 "%" PRIu64 " is not adopted: %s",
			 dm->id, id, owner, why.text);
		return NULL;
	}
	o->family_owned = true;
	o->slot[FAMILY_DM].id = dm->id;
	rs->adopted_objects++;
	return o;
}

/* @m's holds into @dm: the registry's records and the sessions' slots;
 * *@lost when one's is on a page the store lost (that hold has none). */
static int dm_restore_holds(struct dm_restoring *dr, struct dm *dm,
			    const Rdmab__State__Dm *m, bool *lost)
{
	struct restore *rs = dr->rs;
	struct core *core = rs->core;

	dm->holds = calloc(m->n_holds ? m->n_holds : 1, sizeof(*dm->holds));
	if (!dm->holds)
		return restore_fail(rs, -ENOMEM, "out of memory");
	dm->cap_holds = m->n_holds ? (size_t)m->n_holds : 1;
	for (size_t i = 0; i < m->n_holds; i++) {
		const Rdmab__State__DmHold *hm = m->holds[i];
		struct dm_session *s = NULL;
		struct obj *o;

		o = dm_restore_record(rs, dm, hm->owner, hm->object_id);
		if (!o)
			continue;
		if (hm->session && dm_page_lost(dr, hm->session)) {
			*lost = true;
		} else if (hm->session) {
			s = dm_session_by_id(core, hm->session);
			if (!s || hm->slot >= DM_STATUS_SLOTS ||
			    s->used[hm->slot]) {
				objects_remove(o);
				return restore_fail(
					rs, -EINVAL,
					"DM %" PRIu64 ": its import %" PRIu64
					" names slot %u of client %" PRIu64
					"'s status page, which is not there "
					"or taken",
					dm->id, hm->object_id, hm->slot,
					hm->session);
			}
			s->used[hm->slot] = 1;
			s->page[hm->slot] = dm->revoked;
		}
		dm->holds[dm->n_holds++] =
			(struct dm_hold){ .o = o, .s = s, .slot = hm->slot };
	}
	return 0;
}

/* @m's context when no session brought it back: the one adopted for its
 * allocator's claim or its first import whose session had ended while
 * the process lived (detached), as the registry's records of such
 * sessions get theirs; NULL for none. */
static struct dctx *dm_restore_ctx(struct restore *rs,
				   const Rdmab__State__Dm *m)
{
	struct obj_owner *ow;
	struct dctx *x = NULL;

	if (m->claim_object) {
		ow = restart_owner_find(rs, m->allocator_id);
		if (ow)
			x = restore_ctx_detached(rs, ow, m->ctx_id);
	}
	for (size_t i = 0; !x && i < m->n_holds; i++) {
		ow = restart_owner_find(rs, m->holds[i]->owner);
		if (ow)
			x = restore_ctx_detached(rs, ow, m->ctx_id);
	}
	return x;
}

/* The sessions told that a DM did not come back: its holders'. */
static bool dm_lost_filter(struct client *c, Rdmab__Event *ev, void *arg)
{
	const Rdmab__State__Dm *m = arg;

	(void)ev;
	if (m->allocator_live && c->id == m->allocator_id)
		return true;
	for (size_t i = 0; i < m->n_holds; i++)
		if (m->holds[i]->owner == c->id)
			return true;
	return false;
}

/*
 * DM @id (record @m) cannot be adopted (a soft DM's memfd is not in the
 * store, or the device refused its handle): that DM alone is dropped, as
 * a device removal would, rather than the whole state, which would end
 * every session for one DM. Nothing of it was charged or recorded yet;
 * its live holders are told it is revoked, and their later requests on
 * it find no such DM.
 */
static void dm_restore_lost(struct restore *rs, uint64_t id,
			    const Rdmab__State__Dm *m, const char *why)
{
	Rdmab__Event ev = RDMAB__EVENT__INIT;
	Rdmab__DmEvent de = RDMAB__DM_EVENT__INIT;
	char reason[320];

	log_warn("DM %" PRIu64 ": not adopted, dropped: %s", id, why);
	snprintf(reason, sizeof(reason),
		 "the broker restarted and could not bring this DM back: %s",
		 why);
	de.dm_id = id;
	de.reason = reason;
	ev.object_kind = IBC_OBJ_DM;
	ev.object_id = id;
	ev.body_case = RDMAB__EVENT__BODY_DM_REVOKED;
	ev.dm_revoked = &de;
	rs->core->ops->broadcast(rs->core, &ev, dm_lost_filter, (void *)m);
}

/*
 * @dm is held through a slot of a status page the store lost: what the
 * page said cannot be read, nor can the broker say anything there any
 * more. The DM goes alone, by a revoke: its holders are told with the
 * reason, and after the grace period its free is asked (on a verbs
 * device the memory is then freed, not left in the context uncharged).
 * One already revoked was told before: its grace starts again.
 */
static void dm_restore_page_lost(struct core *core, struct dm *dm)
{
	char reason[200];

	if (dm->revoked)
		return;
	log_warn("DM %" PRIu64 ": revoked, a status page of one of its "
		 "holders is lost",
		 dm->id);
	dm_mark_revoked(dm);
	snprintf(reason, sizeof(reason),
		 "the broker restarted and lost the DM status page of a "
		 "session that held DM %" PRIu64
		 ": it is revoked, deregister its MRs and unimport it",
		 dm->id);
	dm_tell(core, dm, NULL, RDMAB__EVENT__BODY_DM_REVOKED, reason);
}

/*
 * @dm, adopted by its device, has no place in the fd store: the daemon's
 * bound is lower than the state's (--max-clients, fd_store_per_uid or
 * private_contexts_per_uid lowered across the restart). Kept unstored,
 * the next restart would lose it anyway, and refusing the state would
 * end every session for it: that DM alone is dropped, before anything
 * of it is charged or recorded. The device frees it (zeroed: its holders
 * are told it is revoked), and systemd drops its copy of the memfd.
 */
static void dm_restore_unplaced(struct restore *rs, struct dctx *x,
				struct dm *dm, const Rdmab__State__Dm *m,
				int err)
{
	struct why why = { 0 };
	char name[FDSTORE_NAME_MAX];
	char what[160];

	if (x->dev->ctx_ops->dm_free(x->dc, &dm->dd, &why) < 0) {
		log_warn("DM %" PRIu64 ": cannot be freed on %s: %s", dm->id,
			 x->dev->name, why.text);
		if (dm->dd.fd >= 0)
			close(dm->dd.fd);
	}
	state_fd_name(name, sizeof(name), "dm", dm->id);
	fdstore_remove(rs->store, name);
	rs->adopted_fds--;
	snprintf(what, sizeof(what),
		 "the fd store has no place for it (%s): the broker's bound "
		 "is lower than before the restart",
		 strerror(-err));
	dm_restore_lost(rs, dm->id, m, what);
	free(dm);
}

static int dm_restore_one(void *arg, const struct journal_rec *r)
{
	struct dm_restoring *dr = arg;
	struct restore *rs = dr->rs;
	struct core *core = rs->core;
	struct why why = { 0 };
	char name[FDSTORE_NAME_MAX];
	Rdmab__State__Dm *m;
	struct dm *dm = NULL;
	struct dctx *x;
	bool page_lost = false;
	int fd = -1, ret;

	m = rdmab__state__dm__unpack(NULL, r->len, r->data);
	if (!m)
		return restore_fail(rs, -EBADMSG,
				    "DM %" PRIu64 " does not decode", r->key);
	x = state_ctx(core, m->ctx_id);
	if (!x)
		x = dm_restore_ctx(rs, m);
	if (!x || !x->dc) {
		/* Nobody holds its context any more (no session, no record
		 * of an ended one's): the DM went with it, as with a device
		 * removal (its memfd is closed with what nobody took). */
		log_info("DM %" PRIu64 ": its context %" PRIu64 " did not come "
			 "back, not adopted",
			 r->key, m->ctx_id);
		ret = 0;
		goto out;
	}
	dm = calloc(1, sizeof(*dm));
	if (!dm) {
		ret = restore_fail(rs, -ENOMEM, "out of memory");
		goto out;
	}
	dm->id = r->key;
	dm->dd.fd = -1;
	TAILQ_INIT(&dm->mrs);
	state_fd_name(name, sizeof(name), "dm", dm->id);
	/* Soft DMs have a memfd in the store, verbs DMs none. */
	if (restore_take_fd(rs, name, &fd) < 0)
		fd = -1;
	ret = x->dev->ctx_ops->dm_adopt(x->dc, m->handle, m->length, fd,
					&dm->dd, &why);
	if (ret < 0) {
		if (fd >= 0)
			close(fd);
		free(dm);
		dm = NULL;
		dm_restore_lost(rs, r->key, m, why.text);
		ret = 0;
		goto out;
	}
	/* Its place in the store before anything of it is charged: one
	 * that does not fit is dropped alone (dm_restore_unplaced()). */
	dm->uid = (uid_t)m->uid;
	ret = dm->dd.fd < 0 ?
		      0 :
		      restore_keep_fd(rs, name, dm->dd.fd, (uint32_t)dm->uid);
	if (ret < 0) {
		dm_restore_unplaced(rs, x, dm, m, ret);
		dm = NULL;
		ret = 0;
		goto out;
	}
	dm->ctx = x;
	dm->domain = x->domain;
	dm->length = m->length;
	dm->pages = m->pages;
	dm->log_align = m->log_align;
	dm->born_usec = m->born_usec;
	dm->allocator_id = m->allocator_id;
	dm->allocator =
		m->allocator_live ? state_client(core, m->allocator_id) : NULL;
	dm->allocator_pid = (pid_t)m->allocator_pid;
	dm->persistent = m->persistent;
	dm->free_asked = m->free_asked;
	dm->revoked = m->revoked;
	snprintf(dm->blocked_by, sizeof(dm->blocked_by), "%s",
		 m->blocked_by ? m->blocked_by : "");
	/* In the lists first: from here on dm_forget() undoes it all. */
	TAILQ_INSERT_TAIL(&dm_state(core)->dms, dm, link);
	TAILQ_INSERT_TAIL(&dm_domain_of(dm->domain)->dms, dm, domain_link);
	dm_state(core)->n++;
	dctx_obj_hold(x);
	charge_add_u64(&x->dev->dm_reserved, dm->length, "reserved DM bytes");
	ret = dm_quota_charge(dm->domain, dm->uid, m->charged);
	if (ret < 0) {
		ret = restore_fail(rs, ret, "out of memory");
		goto out;
	}
	dm->charged = m->charged;
	if (m->owner_charged) {
		struct user *u = user_get(core, dm->uid);

		if (!u) {
			ret = restore_fail(rs, -ENOMEM, "out of memory");
			goto out;
		}
		dm->owner = u;
		dm_user_charge_persistent(u, dm->charged);
		user_unref(core, u);
	}
	if (m->claim_object)
		dm->claim = dm_restore_record(rs, dm, m->allocator_id,
					      m->claim_object);
	ret = dm_restore_holds(dr, dm, m, &page_lost);
	if (ret < 0)
		goto out;
	if (page_lost)
		dm_restore_page_lost(core, dm);
	/* A claim or imports whose sessions did not come back: as after
	 * their deaths, the free is asked of a DM nobody can ask it of any
	 * more, and a DM nobody holds goes. */
	if (m->claim_object && !dm->claim && !dm->persistent && !dm->free_asked)
		dm->free_asked = true;
	if (m->blocked) {
		dm->blocked = true;
		dm_state(core)->n_blocked++;
	}
	/* A revoke's grace period starts again, whole. */
	if (dm->revoked && !dm->free_asked) {
		ret = dm_revoke_arm(core, dm);
		if (ret < 0) {
			ret = restore_fail(rs, ret, "out of memory");
			goto out;
		}
	}
	/* The new generation's journal holds what was adopted (its store
	 * the memfd already). */
	dm_journal(core, dm);
	ret = 0;
out:
	rdmab__state__dm__free_unpacked(m, NULL);
	return ret;
}

/* The registry's MRs on a DM (loose since their records came back) go
 * on its list again. */
static void dm_restore_mrs(struct core *core)
{
	struct dm_mr *mr, *tmp;

	TAILQ_FOREACH_SAFE(mr, &dm_state(core)->loose, link, tmp)
		dm_mr_attach(core, mr);
}

/*
 * A record could not be used, here or in a family restored after this
 * one: none of the family's state is kept (never half of it). The DMs
 * adopted so far go as a device removal's do: their records, charges and
 * descriptors, their places in the store, not their bytes on the device,
 * which the contexts hold (they close with the sessions that end).
 */
void dm_restore_undo(struct core *core)
{
	struct dm_table *t = dm_state(core);
	struct dm *dm;

	while ((dm = TAILQ_FIRST(&t->dms))) {
		/* The import records the restore made go with it. */
		for (unsigned int i = 0; i < dm->n_holds; i++)
			objects_remove(dm->holds[i].o);
		if (dm->claim)
			objects_remove(dm->claim);
		dm->n_holds = 0;
		dm->claim = NULL;
		if (dm->dd.fd >= 0)
			close(dm->dd.fd);
		dm->dd.fd = -1;
		dm_forget(core, dm);
	}
	while (!TAILQ_EMPTY(&t->sessions)) {
		struct dm_session *s = TAILQ_FIRST(&t->sessions);

		dm_journal_session_gone(core, s);
		TAILQ_REMOVE(&t->sessions, s, link);
		munmap(s->page, DM_STATUS_SLOTS);
		close(s->fd);
		dm_user_uncharge_page(s->user);
		user_unref(core, s->user);
		free(s);
	}
}

int dm_restore(struct core *core, struct restore *rs)
{
	struct dm_restoring dr = { .rs = rs };
	int ret;

	ret = restore_each(rs, JOURNAL_DM_SESSION, dm_restore_session, &dr);
	if (ret == 0)
		ret = restore_each(rs, JOURNAL_DM, dm_restore_one, &dr);
	free(dr.lost);
	if (ret < 0) {
		dm_restore_undo(core);
		return ret;
	}
	/* The MRs on the DMs, which block their frees. */
	restore_objects_later(rs);
	dm_restore_mrs(core);
	{
		struct dm *dm, *tmp;

		TAILQ_FOREACH_SAFE(dm, &dm_state(core)->dms, link, tmp)
			dm_try_free(core, dm);
	}
	if (dm_state(core)->n_blocked)
		dm_retry_later(core);
	return 0;
}

struct id_space *dm_ids(struct core *core)
{
	return &dm_state(core)->ids;
}

void dm_ctx_save(const struct dctx *x, Rdmab__State__Context *m)
{
	m->dm_bytes_left = x->family_slot[FAMILY_DM];
}

void dm_ctx_restore(struct core *core, struct dctx *x,
		    const Rdmab__State__Context *m)
{
	(void)core;
	/* What the kernel still holds in the context: charged as when it
	 * was left, over the limit too (it exists), given back at the
	 * context's close as ever. */
	x->family_slot[FAMILY_DM] = m->dm_bytes_left;
	charge_add(x->domain, CHARGE_OF(FAMILY_DM), x->family_slot[FAMILY_DM]);
	charge_add_u64(&x->dev->dm_reserved, x->family_slot[FAMILY_DM],
		       "reserved DM bytes");
}
