// SPDX-License-Identifier: MIT
/*
 * Device memory: the records, the quota, the holds, the free and its
 * coordination, and the requests but the listing (dm-list.c) and the
 * revoke (dm-revoke.c); dm.h.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
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
#include "daemon/families/dm/dm-conf.h"
#include "daemon/families/dm/dm.h"
#include "daemon/registry/domain.h"
#include "daemon/util/log.h"
#include "daemon/util/array.h"
#include "daemon/registry/objects.h"
#include "daemon/registry/core.h"
#include "daemon/restart/restart.h"
#include "daemon/restart/restore-object.h"
#include "daemon/registry/user.h"
#include "proto/state.pb-c.h"

static uint64_t dm_page_size(void)
{
	long p = sysconf(_SC_PAGESIZE);

	return p > 0 ? (uint64_t)p : 4096;
}

static int dm_release(struct core *core, struct obj *o, void *data);

static void dm_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct core *core = arg;
	struct dm *dm, *tmp;

	(void)fd;
	(void)what;
	TAILQ_FOREACH_SAFE(dm, &dm_state(core)->dms, link, tmp)
		if (dm->blocked)
			dm_try_free(core, dm);
	if (dm_state(core)->n_blocked)
		dm_retry_later(core);
}

static struct dm_mr *dm_mr_of(const struct obj *o)
{
	return o->slot[FAMILY_DM].p;
}

uint64_t dm_import_id(const struct obj *o)
{
	return o->slot[FAMILY_DM].id;
}

/* An MR record goes: off its DM's list, and what the family kept of it
 * with it. */
static void dm_mr_removed(struct core *core, struct obj *o, void *data)
{
	struct dm_mr *mr = dm_mr_of(o);

	(void)core;
	if (!mr)
		return;
	if (mr->dm) {
		TAILQ_REMOVE(&mr->dm->mrs, mr, link);
		mr->dm->n_mrs--;
	} else {
		TAILQ_REMOVE(&((struct dm_table *)data)->loose, mr, link);
	}
	o->slot[FAMILY_DM].p = NULL;
	free(mr);
}

/* A loose MR of DM @dm_id for record @o (-ENOMEM). */
static int dm_mr_new(struct dm_table *t, struct obj *o, uint64_t dm_id,
		     struct dm_mr **ret)
{
	struct dm_mr *mr = calloc(1, sizeof(*mr));

	if (!mr)
		return -ENOMEM;
	mr->o = o;
	mr->dm_id = dm_id;
	TAILQ_INSERT_TAIL(&t->loose, mr, link);
	o->slot[FAMILY_DM].p = mr;
	*ret = mr;
	return 0;
}

void dm_mr_attach(struct core *core, struct dm_mr *mr)
{
	struct dm *dm = dm_find_id(core, mr->dm_id);

	if (!dm || mr->dm)
		return;
	TAILQ_REMOVE(&dm_state(core)->loose, mr, link);
	TAILQ_INSERT_TAIL(&dm->mrs, mr, link);
	dm->n_mrs++;
	mr->dm = dm;
}

void dm_mrs_loosen(struct core *core, struct dm *dm)
{
	struct dm_mr *mr;

	while ((mr = TAILQ_FIRST(&dm->mrs))) {
		TAILQ_REMOVE(&dm->mrs, mr, link);
		TAILQ_INSERT_TAIL(&dm_state(core)->loose, mr, link);
		mr->dm = NULL;
	}
	dm->n_mrs = 0;
}

/* A new MR uses an import of a DM (the library names it, so that the
 * DM's listing counts the MR and names it when it blocks a free). */
static int dm_mr_uses(struct core *core, struct obj *o, struct obj *const *uses,
		      size_t n, void *data, struct why *why)
{
	struct dm_mr *mr;

	for (size_t i = 0; i < n; i++) {
		if (!uses[i] || uses[i]->kind != IBC_OBJ_DM ||
		    !dm_import_id(uses[i]))
			continue;
		if (dm_mr_new(data, o, dm_import_id(uses[i]), &mr) < 0)
			return why_set(why, -ENOMEM, "out of memory");
		dm_mr_attach(core, mr);
		return 0;
	}
	return 0;
}

/* A DM import's record, an MR on a DM: the DM's id, in the record's
 * field DM_OBJECT_FIELD. */
static void dm_obj_save(const struct obj *o, struct rec_fields *f, void *data)
{
	const struct dm_mr *mr;
	uint64_t id;

	(void)data;
	if (o->kind == IBC_OBJ_DM) {
		id = dm_import_id(o);
	} else {
		mr = dm_mr_of(o);
		id = mr ? mr->dm_id : 0;
	}
	/* The family's one field: within REC_FIELDS_MAX. */
	(void)rec_field_set(f, DM_OBJECT_FIELD, id);
}

/* An MR's record comes back once the DMs did (restore_objects_later()):
 * loose until dm_restore() puts it on its DM's list. */
static int dm_mr_restore(struct core *core, struct obj *o,
			 const struct state_obj *m, void *data)
{
	uint64_t id = rec_field_get(&m->family, DM_OBJECT_FIELD);
	struct dm_mr *mr;

	(void)core;
	return id ? dm_mr_new(data, o, id, &mr) : 0;
}

static void dm_mrs_fini(struct dm_table *t)
{
	struct dm_mr *mr;

	while ((mr = TAILQ_FIRST(&t->loose))) {
		TAILQ_REMOVE(&t->loose, mr, link);
		mr->o->slot[FAMILY_DM].p = NULL;
		free(mr);
	}
}

struct dm_table *dm_state(const struct core *core)
{
	return core->family_state[FAMILY_DM];
}

static int dm_init(struct core *core)
{
	struct dm_table *t = calloc(1, sizeof(*t));
	int ret;

	if (!t)
		return -ENOMEM;
	TAILQ_INIT(&t->dms);
	TAILQ_INIT(&t->sessions);
	TAILQ_INIT(&t->loose);
	core->family_state[FAMILY_DM] = t;
	t->retry_ev = evtimer_new(core->base, dm_retry_cb, core);
	if (!t->retry_ev)
		return -ENOMEM;
	ret = id_space_init(&t->ids);
	if (ret < 0)
		log_err("cannot draw the DM ids' key: %s", strerror(-ret));
	return ret;
}

void dm_view(const struct core *core, const struct client *c,
	     const struct device *dev, struct dm_view *ret)
{
	struct dm_view v = { 0 };

	v.device_wide = policy_is_admin(core, c);
	if (v.device_wide)
		v.reserved = dev->dm_reserved;
	if (c->domain) {
		struct domain *pool = domain_pool(c->domain);

		v.domain_used = charge_used(pool, CHARGE_OF(FAMILY_DM));
		v.domain_limit = dm_quota_limit(pool, dev);
		v.room = dm_quota_free(pool, c->cred.uid, dev);
	}
	*ret = v;
}

/* --- holds ---------------------------------------------------------------- */

/*
 * Each import (the allocator's own included) is a record of the registry,
 * of kind DM and owned by the DM family: it stays, detached, while a
 * session that ended has its process alive, and the cleanup releases it
 * once the process is dead (dm_release), in the registry's order: after the
 * process's MRs, before its XRCD opens and PD references.
 */

/* The index of @c's import of @dm that is registry object @object_id (0:
 * any of its imports), or -1. */
static int dm_hold_of(const struct dm *dm, const struct client *c,
		      uint64_t object_id)
{
	if (!c->owner)
		return -1;
	for (unsigned int i = 0; i < dm->n_holds; i++)
		if (dm->holds[i].o->owner == c->owner &&
		    (!object_id || dm->holds[i].o->id == object_id))
			return (int)i;
	return -1;
}

/* @c's status page, made on its first DM. */
static int dm_session_of(struct core *core, struct client *c, struct why *why,
			 struct dm_session **ret)
{
	struct dm_session *s;
	int err;

	TAILQ_FOREACH(s, &dm_state(core)->sessions, link)
		if (s->conn == c) {
			*ret = s;
			return 0;
		}
	s = calloc(1, sizeof(*s));
	if (!s)
		return why_set(why, -ENOMEM, "out of memory");
	/* A descriptor the daemon holds for the session: the uid's. */
	err = dm_user_charge_page(core, c->user, policy_is_admin(core, c));
	if (err < 0) {
		free(s);
		return why_set(why, err,
			       "uid %u's sessions hold %u DM status pages, "
			       "one per session up to connections_per_uid "
			       "(%u)",
			       c->cred.uid, dm_user_of(c->user)->dm_pages,
			       core->config.limits.connections_per_uid);
	}
	s->user = user_ref(c->user);
	s->conn = c;
	s->fd = memfd_create("rdmabroker-dm-status",
			     MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (s->fd < 0 || ftruncate(s->fd, DM_STATUS_SLOTS) < 0 ||
	    fcntl(s->fd, F_ADD_SEALS,
		  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto fail;
	s->page = mmap(NULL, DM_STATUS_SLOTS, PROT_READ | PROT_WRITE,
		       MAP_SHARED, s->fd, 0);
	if (s->page == MAP_FAILED)
		goto fail;
	/* Restart: the page outlives the daemon, or nothing is made. */
	err = dm_journal_session(core, s);
	if (err < 0) {
		munmap(s->page, DM_STATUS_SLOTS);
		close(s->fd);
		dm_user_uncharge_page(s->user);
		user_unref(core, s->user);
		free(s);
		return why_set(why, err,
			       "the fd store cannot keep the DM status "
			       "page: %s",
			       strerror(-err));
	}
	TAILQ_INSERT_TAIL(&dm_state(core)->sessions, s, link);
	*ret = s;
	return 0;
fail:
	err = -errno;
	if (s->fd >= 0)
		close(s->fd);
	dm_user_uncharge_page(s->user);
	user_unref(core, s->user);
	free(s);
	return why_set(why, err, "cannot make the DM status page: %s",
		       strerror(-err));
}

static void dm_session_free(struct core *core, struct dm_session *s)
{
	dm_journal_session_gone(core, s);
	TAILQ_REMOVE(&dm_state(core)->sessions, s, link);
	munmap(s->page, DM_STATUS_SLOTS);
	close(s->fd);
	dm_user_uncharge_page(s->user);
	user_unref(core, s->user);
	free(s);
}

static int dm_hold_add(struct dm *dm, struct client *c, struct why *why,
		       struct dm_hold **ret)
{
	struct dm_session *s = NULL;
	uint32_t slot = 0;
	struct obj *o;
	int err;

	err = dm_session_of(c->core, c, why, &s);
	if (err < 0)
		return err;
	while (slot < DM_STATUS_SLOTS && s->used[slot])
		slot++;
	if (slot == DM_STATUS_SLOTS)
		return why_set(why, -EMFILE,
			       "this session holds %d DM imports, the "
			       "most one session may",
			       DM_STATUS_SLOTS);
	if (array_grow(&dm->holds, &dm->cap_holds, dm->n_holds + 1,
		       sizeof(*dm->holds), 4) < 0)
		return why_set(why, -ENOMEM, "out of memory");
	/* Charged to the domain's objects quota, as any import is. */
	err = objects_add(c, dm->ctx, IBC_OBJ_DM, false, true, dm->dd.handle,
			  why, &o);
	if (err < 0)
		return err;
	o->family_owned = true;
	o->slot[FAMILY_DM].id = dm->id;
	s->used[slot] = 1;
	s->page[slot] = dm->revoked;
	dm->holds[dm->n_holds] =
		(struct dm_hold){ .o = o, .s = s, .slot = slot };
	*ret = &dm->holds[dm->n_holds++];
	return 0;
}

/* Is @o a record of @dm's allocator? */
static bool dm_is_allocator(const struct dm *dm, const struct obj *o)
{
	return o->owner->client_id == dm->allocator_id;
}

static void dm_hold_drop(struct dm *dm, unsigned int i)
{
	struct dm_hold *h = &dm->holds[i];
	struct obj *o = h->o;
	bool last;

	if (h->s) {
		h->s->used[h->slot] = 0;
		h->s->page[h->slot] = 0;
	}
	*h = dm->holds[--dm->n_holds];
	last = true;
	for (unsigned int k = 0; k < dm->n_holds; k++)
		if (dm->holds[k].o->owner == o->owner)
			last = false;
	/* The allocator's last import of a DM that is still its: the
	 * record stays, so that the death of its process, not the end of
	 * this import or of its session, asks the free. */
	if (last && !dm->claim && !dm->persistent && !dm->free_asked &&
	    o->owner->state != OWNER_DEAD && dm_is_allocator(dm, o)) {
		dm->claim = o;
		dm_journal(dm->ctx->core, dm);
		return;
	}
	objects_remove(o);
	dm_journal(dm->ctx->core, dm);
}

/* The free is asked: the allocator's claim has done its work. */
void dm_set_free_asked(struct dm *dm)
{
	dm->free_asked = true;
	if (dm->claim) {
		objects_remove(dm->claim);
		dm->claim = NULL;
	}
	dm_journal(dm->ctx->core, dm);
}

/* --- records -------------------------------------------------------------- */

void dm_retry_later(struct core *core)
{
	struct timeval tv = { .tv_usec = DM_RETRY_MS * 1000 };

	if (dm_state(core)->retry_ev)
		event_add(dm_state(core)->retry_ev, &tv);
}

void dm_forget(struct core *core, struct dm *dm)
{
	struct dm_table *t = dm_state(core);

	dm_journal_forget(core, dm);
	if (dm->blocked)
		t->n_blocked--;
	if (dm->revoke_ev)
		event_free(dm->revoke_ev);
	if (dm->claim)
		objects_remove(dm->claim);
	dm_quota_uncharge(dm->domain, dm->uid, dm->charged, dm->length);
	if (dm->owner)
		dm_user_uncharge_persistent(core, dm->owner, dm->charged);
	charge_sub_u64(&dm->ctx->dev->dm_reserved, dm->length,
		       "reserved DM bytes", dm->ctx->dev->name);
	TAILQ_REMOVE(&t->dms, dm, link);
	TAILQ_REMOVE(&dm_domain_of(dm->domain)->dms, dm, domain_link);
	t->n--;
	/* MRs left on it (the device freed it with a context, or the
	 * registry no longer agrees): they keep its id in the journal. */
	dm_mrs_loosen(core, dm);
	dctx_obj_release(core, dm->ctx);
	free(dm->holds);
	free(dm);
}

/*
 * Free @dm if its free was asked and nobody holds it. True when it is gone
 * (the caller must not touch it). The device's EBUSY (an MR on it) leaves
 * it free blocked, its quota charged.
 */
bool dm_try_free(struct core *core, struct dm *dm)
{
	struct why why = { 0, "" };
	int ret;

	if (!dm->free_asked || dm->n_holds)
		return false;
	if (!dm->ctx->dc) {
		/* The device is gone, and the kernel freed it with the
		 * context. */
		if (dm->dd.fd >= 0)
			close(dm->dd.fd);
		dm_forget(core, dm);
		return true;
	}
	ret = dm->ctx->dev->ctx_ops->dm_free(dm->ctx->dc, &dm->dd, &why);
	if (ret == -EBUSY) {
		if (!dm->blocked) {
			char mrs[160];

			dm_mrs(core, dm, NULL, 0, mrs, sizeof(mrs));
			log_notice("DM %" PRIu64 " of domain %s: free blocked: "
				   "%s%s%s",
				   dm->id, dm->domain->name, why.text,
				   mrs[0] ? "; by " : "", mrs);
			dm->blocked = true;
			if (dm_state(core)->n_blocked++ == 0)
				dm_retry_later(core);
		}
		snprintf(dm->blocked_by, sizeof(dm->blocked_by), "%s",
			 why.text);
		dm_journal(core, dm);
		return false;
	}
	if (ret < 0)
		log_warn("DM %" PRIu64 " of domain %s: the device failed to "
			 "free it (%s); its record goes",
			 dm->id, dm->domain->name, why.text);
	log_debug("DM %" PRIu64 " (handle %u, %" PRIu64 " bytes) of domain %s "
		  "freed",
		  dm->id, dm->dd.handle, dm->length, dm->domain->name);
	dm_forget(core, dm);
	return true;
}

/* The sessions an event about a DM goes to. */
struct dm_event_target {
	struct dm *dm;
	const struct client *except;
};

static bool dm_event_filter(struct client *c, Rdmab__Event *ev, void *arg)
{
	const struct dm_event_target *t = arg;

	(void)ev;
	return c != t->except && dm_hold_of(t->dm, c, 0) >= 0;
}

/* Send @ev to the live sessions that hold @dm, but @except. A client that
 * cannot take it is only killed (notify_clients()): @dm and its holds stay
 * as they are for the whole walk. */
void dm_notify(struct core *core, struct dm *dm, const struct client *except,
	       Rdmab__Event *ev)
{
	struct dm_event_target t = { .dm = dm, .except = except };

	if (dm->n_holds)
		core->ops->broadcast(core, ev, dm_event_filter, &t);
}

void dm_tell(struct core *core, struct dm *dm, const struct client *except,
	     Rdmab__Event__BodyCase body, const char *reason)
{
	Rdmab__Event ev = RDMAB__EVENT__INIT;
	Rdmab__DmEvent de = RDMAB__DM_EVENT__INIT;

	de.dm_id = dm->id;
	de.reason = (char *)reason;
	ev.object_kind = IBC_OBJ_DM;
	ev.object_id = dm->id;
	ev.body_case = body;
	if (body == RDMAB__EVENT__BODY_DM_REVOKED)
		ev.dm_revoked = &de;
	else
		ev.dm_free_pending = &de;
	dm_notify(core, dm, except, &ev);
}

void dm_mark_revoked(struct dm *dm)
{
	dm->revoked = true;
	for (unsigned int i = 0; i < dm->n_holds; i++)
		if (dm->holds[i].s)
			dm->holds[i].s->page[dm->holds[i].slot] = 1;
	dm_journal(dm->ctx->core, dm);
}

/*
 * The free of @dm is asked (by @by, NULL for the allocator's death): free
 * it now, or tell the holders other than @by that it is free pending. @dm
 * may be gone on return.
 */
static void dm_ask_free(struct core *core, struct dm *dm,
			const struct client *by, const char *who)
{
	char reason[160];
	uint64_t id = dm->id;

	dm_set_free_asked(dm);
	if (dm_try_free(core, dm) || dm->blocked)
		return;
	snprintf(reason, sizeof(reason),
		 "the free of DM %" PRIu64 " was asked (%s): unimport it", id,
		 who);
	dm_tell(core, dm, by, RDMAB__EVENT__BODY_DM_FREE_PENDING, reason);
}

void dm_conn_closing(struct client *c)
{
	struct core *core = c->core;
	struct dm_session *sess, *stmp;
	struct dm *dm;

	if (!dm_state(core))
		return;
	/* Its imports outlive the session; its status page does not. */
	TAILQ_FOREACH_SAFE(sess, &dm_state(core)->sessions, link, stmp) {
		if (sess->conn != c)
			continue;
		TAILQ_FOREACH(dm, &dm_state(core)->dms, link)
			for (unsigned int i = 0; i < dm->n_holds; i++)
				if (dm->holds[i].s == sess)
					dm->holds[i].s = NULL;
		dm_session_free(core, sess);
		TAILQ_FOREACH(dm, &dm_state(core)->dms, link)
			dm_journal(core, dm);
	}
	/* It can ask nothing more; but its process may still use its DMs
	 * (detached, as the registry's objects are): their free is asked
	 * when it dies (dm_release), not now. */
	TAILQ_FOREACH(dm, &dm_state(core)->dms, link) {
		if (dm->allocator == c) {
			dm->allocator = NULL;
			dm_journal(core, dm);
		}
	}
}

/* The allocator's process is gone: it has asked the free of @dm unless
 * the DM is the domain's. @dm may be gone on return. */
static void dm_allocator_dead(struct core *core, struct dm *dm)
{
	if (!dm->persistent && !dm->free_asked)
		dm_ask_free(core, dm, NULL, "its allocator died");
	else
		dm_try_free(core, dm);
}

/* The cleanup of a dead process reaches one of its imports, or its claim
 * as an allocator. */
static int dm_release(struct core *core, struct obj *o, void *data)
{
	struct dm *dm;

	(void)data;
	TAILQ_FOREACH(dm, &dm_state(core)->dms, link) {
		if (dm->claim == o) {
			dm->claim = NULL;
			objects_remove(o);
			dm_journal(core, dm);
			dm_allocator_dead(core, dm);
			return 0;
		}
		for (unsigned int i = 0; i < dm->n_holds; i++) {
			bool allocator;

			if (dm->holds[i].o != o)
				continue;
			allocator = dm_is_allocator(dm, o);
			dm_hold_drop(dm, i);
			if (allocator)
				dm_allocator_dead(core, dm);
			else
				dm_try_free(core, dm);
			return 0;
		}
	}
	objects_remove(o);
	return 0;
}

/* The device is gone: the kernel freed its DMs with the contexts, and the
 * registry dropped the imports (whichever of the two heard first). */
static void dm_device_gone(struct core *core, struct device *dev,
			   const char *reason)
{
	struct dm *dm, *tmp;

	(void)reason;
	TAILQ_FOREACH_SAFE(dm, &dm_state(core)->dms, link, tmp) {
		if (dm->ctx->dev != dev)
			continue;
		/* Not looked at: the registry may have freed them. */
		dm->n_holds = 0;
		dm->claim = NULL;
		if (dm->dd.fd >= 0)
			close(dm->dd.fd);
		dm->dd.fd = -1;
		dm_forget(core, dm);
	}
}

static void dm_fini(struct core *core)
{
	struct dm *dm;

	if (!dm_state(core))
		return;
	/* Handing off to the next daemon: the DMs, their bytes and their
	 * stored fds are its; only this process's copies go. */
	if (restart_handing_off(core))
		dm_state_leave(core);
	while ((dm = TAILQ_FIRST(&dm_state(core)->dms))) {
		dm->n_holds = 0;
		dm->claim = NULL;
		dm->free_asked = true;
		if (!dm_try_free(core, dm)) {
			/* Blocked: the kernel frees it with the context. */
			if (dm->dd.fd >= 0)
				close(dm->dd.fd);
			dm_forget(core, dm);
		}
	}
	if (dm_state(core)->retry_ev)
		event_free(dm_state(core)->retry_ev);
	while (!TAILQ_EMPTY(&dm_state(core)->sessions))
		dm_session_free(core, TAILQ_FIRST(&dm_state(core)->sessions));
	dm_mrs_fini(dm_state(core));
	free(dm_state(core));
	core->family_state[FAMILY_DM] = NULL;
}

/* --- requests ------------------------------------------------------------- */

static const char *const dm_missing =
	"no DM with handle %u in context %" PRIu64 " of this domain";

struct dm *dm_find_id(struct core *core, uint64_t id)
{
	struct dm *dm;

	TAILQ_FOREACH(dm, &dm_state(core)->dms, link)
		if (dm->id == id)
			return dm;
	return NULL;
}

/* The context of a DM request: open in this session, its device present
 * and able to share DMs. */
static int dm_ctx(struct client *c, uint64_t ctx_id, struct why *why,
		  struct dctx **ret)
{
	struct dctx *x;
	int err = dctx_conn_usable(c, ctx_id, why, &x);

	if (err < 0)
		return err;
	if (!x->dev->caps.dm_shared)
		return why_set(
			why, -EOPNOTSUPP, "%s cannot share device memory: %s",
			x->dev->name,
			x->dev->caps.dm_reason[0] ? x->dev->caps.dm_reason :
						    "it has none");
	*ret = x;
	return 0;
}

/* The length checks, in the device's order: length 0, past max_dm_size;
 * the length in whole pages, which the quotas are charged. */
static int dm_check_length(struct dctx *x, uint64_t length,
			   uint64_t *ret_rounded, struct why *why)
{
	const struct device *dev = x->dev;
	uint64_t page = dm_page_size();

	if (!length)
		return why_set(why, -EINVAL, "a DM needs a length above 0");
	if (length > dev->caps.max_dm_size)
		return why_set(why, -EINVAL,
			       "%s gives DMs of at most %" PRIu64
			       " bytes (max_dm_size), not %" PRIu64,
			       dev->name, dev->caps.max_dm_size, length);
	/* max_dm_size is far below 2^64: no overflow. */
	*ret_rounded = (length + page - 1) / page * page;
	return 0;
}

/*
 * What @c may take of the device memory, by the figures it may know: its
 * domain's quota (and its uid's share of a named one), its uid's bound on
 * persistent DMs, and the device's memory but the administrators' reserve.
 * Administrators have the reserve and no persistent bound.
 */
static int dm_check_room(struct client *c, struct dctx *x, uint64_t length,
			 uint64_t rounded, bool persistent, struct why *why)
{
	const struct dm_conf *l = dm_conf(&c->core->config);
	const struct device *dev = x->dev;
	uint64_t max = dev->caps.max_dm_size, bound, reserve;
	const struct dm_user *u = dm_user_of(c->user);
	int err;

	err = dm_quota_room(x->domain, c->cred.uid, dev, length, rounded, why);
	if (err < 0)
		return err;
	if (policy_is_admin(c->core, c))
		return 0;
	bound = dm_conf_bytes(l->dm_persistent_bytes_per_uid,
			      l->dm_persistent_bytes_pct, max);
	if (persistent && u->dm_persistent >= l->dm_persistent_per_uid)
		return why_set(why, -EDQUOT,
			       "uid %u has %u persistent DMs, the most one "
			       "user may (dm_persistent_per_uid): free one "
			       "first",
			       c->cred.uid, u->dm_persistent);
	if (persistent &&
	    (rounded > bound || u->dm_persistent_bytes > bound - rounded))
		return why_set(why, -EDQUOT,
			       "uid %u holds %" PRIu64 " bytes in persistent "
			       "DMs, and one user may hold %" PRIu64
			       " on %s (dm_persistent_bytes_per_uid): a "
			       "persistent DM of %" PRIu64 " bytes does not "
			       "fit",
			       c->cred.uid, u->dm_persistent_bytes, bound,
			       dev->name, length);
	reserve = dm_conf_bytes(l->dm_admin_reserve, l->dm_admin_reserve_pct,
				max);
	/* No figure: the device's memory in use is every domain's. */
	if (reserve && (reserve >= max || rounded > max - reserve ||
			dev->dm_reserved > max - reserve - rounded))
		return why_set(why, -ENOSPC,
			       "%s: no device memory is free for a DM of "
			       "%" PRIu64 " bytes outside what is kept for "
			       "administrators (dm_admin_reserve)",
			       dev->name, length);
	return 0;
}

int dm_alloc(struct client *c, const Rdmab__DmAllocRequest *q, struct why *why,
	     struct dm **ret_dm, struct dm_hold **ret_hold)
{
	struct core *core = c->core;
	struct why dev_why = { 0, "" };
	uint64_t rounded = 0;
	bool persistent, admin;
	struct dctx *x;
	struct dm_hold *h;
	struct dm *dm;
	int ret;

	ret = dm_ctx(c, q->context_id, why, &x);
	if (ret < 0)
		return ret;
	if (q->flags & ~DM_PERSISTENT_FLAG)
		return why_set(why, -EINVAL,
			       "DM flags 0x%x are unknown (known: "
			       "IBC_DM_PERSISTENT 0x%x)",
			       q->flags & ~DM_PERSISTENT_FLAG,
			       DM_PERSISTENT_FLAG);
	/* Nobody can join a private domain: a persistent DM there would
	 * outlive its process with no member left to free it. */
	if ((q->flags & DM_PERSISTENT_FLAG) &&
	    x->domain->kind == DOMAIN_PRIVATE)
		return why_set(why, -EINVAL,
			       "IBC_DM_PERSISTENT makes a DM its domain's, "
			       "and %s is this session's private domain, "
			       "which ends with it: join a shared domain "
			       "to keep a DM",
			       x->domain->name);
	persistent = !!(q->flags & DM_PERSISTENT_FLAG);
	ret = dm_check_length(x, q->length, &rounded, why);
	if (ret < 0)
		return ret;
	ret = dm_check_room(c, x, q->length, rounded, persistent, why);
	if (ret < 0)
		return ret;
	dm = calloc(1, sizeof(*dm));
	if (!dm)
		return why_set(why, -ENOMEM, "out of memory");
	if (id_next(&dm_state(core)->ids, &dm->id) < 0) {
		free(dm);
		return why_set(why, -ENOSPC, "the broker has no DM ids left");
	}
	dm->dd.fd = -1;
	ret = x->dev->ctx_ops->dm_alloc(x->dc, rounded, q->log_align_req,
					&dm->dd, &dev_why);
	if (ret < 0) {
		free(dm);
		if (ret != -ENOMEM)
			return why_set(why, ret, "%s", dev_why.text);
		/* The device's figures are every domain's. */
		if (!policy_is_admin(core, c))
			return why_set(why, -ENOSPC,
				       "%s: out of device memory for a DM "
				       "of %" PRIu64 " bytes",
				       x->dev->name, q->length);
		return why_set(why, -ENOSPC,
			       "%s (the broker has reserved %" PRIu64
			       " bytes of it)",
			       dev_why.text, x->dev->dm_reserved);
	}
	/* A soft DM's memfd takes a place in the fd store, its maker's:
	 * refused over the uid's share, the memory given back.
	 * Administrators are exempt, as from the other per-uid limits. */
	dm->uid = c->cred.uid;
	admin = policy_is_admin(core, c);
	ret = dm->dd.fd >= 0 && !admin ?
		      restart_store_room(core, (uint32_t)dm->uid, "a DM", why) :
		      0;
	if (ret >= 0) {
		ret = dm_journal_store_fd(core, dm, admin);
		if (ret < 0)
			why_set(why, ret, "the fd store cannot keep the DM: %s",
				strerror(-ret));
	}
	if (ret < 0) {
		x->dev->ctx_ops->dm_free(x->dc, &dm->dd, &dev_why);
		free(dm);
		return ret;
	}
	dm->ctx = x;
	dm->domain = x->domain;
	dm->length = rounded;
	dm->pages = (uint32_t)(rounded / dm_page_size());
	dm->log_align = q->log_align_req;
	dm->born_usec = objects_now_usec();
	dm->allocator = c;
	dm->allocator_id = c->id;
	dm->allocator_pid = c->cred.pid;
	dm->persistent = persistent;
	dm->uid = c->cred.uid;
	ret = dm_quota_charge(x->domain, dm->uid, rounded);
	if (ret < 0) {
		why_set(why, ret, "out of memory");
		goto fail;
	}
	ret = dm_hold_add(dm, c, why, &h);
	if (ret < 0) {
		dm_quota_uncharge(x->domain, dm->uid, rounded, rounded);
		goto fail;
	}
	dm->charged = rounded;
	if (persistent && !policy_is_admin(core, c)) {
		dm->owner = c->user;
		dm_user_charge_persistent(dm->owner, rounded);
	}
	charge_add_u64(&x->dev->dm_reserved, rounded, "reserved DM bytes");
	dctx_obj_hold(x);
	TAILQ_INIT(&dm->mrs);
	TAILQ_INSERT_TAIL(&dm_state(core)->dms, dm, link);
	TAILQ_INSERT_TAIL(&dm_domain_of(dm->domain)->dms, dm, domain_link);
	dm_state(core)->n++;
	dm_journal(core, dm);
	/* Its id past the saved mark: the counters again (restart.h). */
	restart_ids_check(core);
	*ret_dm = dm;
	*ret_hold = h;
	return 0;
fail:
	dm_journal_forget(core, dm);
	x->dev->ctx_ops->dm_free(x->dc, &dm->dd, &dev_why);
	free(dm->holds);
	free(dm);
	return ret;
}

int dm_import(struct client *c, uint64_t ctx_id, uint32_t handle,
	      struct why *why, struct dm **ret_dm, struct dm_hold **ret_hold)
{
	struct dctx *x;
	struct dm *dm;
	int ret;

	ret = dm_ctx(c, ctx_id, why, &x);
	if (ret < 0)
		return ret;
	/* Another domain's, a free pending or a revoked DM: as missing. */
	TAILQ_FOREACH(dm, &dm_domain_of(x->domain)->dms, domain_link)
		if (dm->ctx == x && dm->dd.handle == handle &&
		    !dm->free_asked && !dm->revoked)
			break;
	if (!dm)
		return why_set(why, -ENOENT, dm_missing, handle, ctx_id);
	ret = dm_hold_add(dm, c, why, ret_hold);
	if (ret < 0)
		return ret;
	dm_journal(c->core, dm);
	*ret_dm = dm;
	return 0;
}

int dm_unimport(struct client *c, uint64_t dm_id, uint64_t object_id)
{
	struct dm *dm = dm_state(c->core) ? dm_find_id(c->core, dm_id) : NULL;
	int i = dm ? dm_hold_of(dm, c, object_id) : -1;

	if (i < 0)
		return -ENOENT;
	dm_hold_drop(dm, (unsigned int)i);
	dm_try_free(c->core, dm);
	return 0;
}

int dm_free_request(struct client *c, uint64_t id, bool admin,
		    uint64_t object_id, struct why *why, bool *ret_ended)
{
	struct dm *dm = dm_find_id(c->core, id);
	char who[64];
	int i;

	if (!dm || (!admin && dm->domain != c->domain))
		return why_set(why, -ENOENT, "no DM %" PRIu64 " in %s", id,
			       admin ? "the broker" : "this domain");
	if (!admin && dm->allocator != c && !dm->persistent)
		return why_set(why, -EPERM,
			       "DM %" PRIu64 " is client %" PRIu64 "'s: "
			       "only its allocator frees it (or any member "
			       "once it is persistent, or an administrator "
			       "with rdmabrokerctl dm free)",
			       id, dm->allocator_id);
	if (dm->free_asked)
		return why_set(why, -EALREADY,
			       "the free of DM %" PRIu64 " was asked "
			       "already",
			       id);
	*ret_ended = false;
	if (admin) {
		snprintf(who, sizeof(who),
			 "by an administrator, client %" PRIu64, c->id);
	} else {
		snprintf(who, sizeof(who), "by client %" PRIu64, c->id);
		/* The free ends the import it was asked on (ibc_dm_free(3)):
		 * no second round trip to unimport, and a DM nobody else
		 * holds is freed before the reply. */
		i = object_id ? dm_hold_of(dm, c, object_id) : -1;
		if (i >= 0) {
			dm_hold_drop(dm, (unsigned int)i);
			*ret_ended = true;
		}
	}
	dm_ask_free(c->core, dm, c, who);
	return 0;
}

/* --- rekey ---------------------------------------------------------------- */

unsigned int dm_ctx_busy(const struct core *core, const struct dctx *x,
			 char *buf, size_t len)
{
	const struct dm *dm;
	unsigned int n = 0;

	TAILQ_FOREACH(dm, &dm_state(core)->dms, link) {
		char item[64];

		if (dm->ctx != x)
			continue;
		n++;
		if (dm->persistent)
			snprintf(item, sizeof(item),
				 "DM %" PRIu64 " (persistent)", dm->id);
		else
			snprintf(item, sizeof(item),
				 "DM %" PRIu64 " (client %" PRIu64 "'s)",
				 dm->id, dm->allocator_id);
		rekey_name_add(buf, len, item);
	}
	return n;
}

static struct dm *dm_next_of_ctx(struct core *core, const struct dctx *x)
{
	struct dm *dm;

	TAILQ_FOREACH(dm, &dm_state(core)->dms, link)
		if (dm->ctx == x)
			return dm;
	return NULL;
}

unsigned int dm_ctx_force(struct core *core, struct dctx *x, const char *reason)
{
	unsigned int n = 0;
	struct dm *dm;

	/* One at a time from the start: a DM freed here leaves the list.
	 * Its holders are told first; the Event frees nothing (a client
	 * that cannot take it is only killed). */
	while ((dm = dm_next_of_ctx(core, x))) {
		char text[200];
		uint64_t id = dm->id;

		if (!dm->revoked) {
			dm_mark_revoked(dm);
			snprintf(text, sizeof(text),
				 "DM %" PRIu64 " was destroyed: %s", id,
				 reason);
			dm_tell(core, dm, NULL, RDMAB__EVENT__BODY_DM_REVOKED,
				text);
		}
		while (dm->n_holds)
			dm_hold_drop(dm, 0);
		dm->free_asked = true;
		n++;
		if (dm_try_free(core, dm))
			continue;
		/* An MR still pins it: the kernel frees it with the old
		 * context, which nothing new can reach. */
		log_notice("DM %" PRIu64 " of domain %s is left to its old "
			   "context: %s",
			   id, dm->domain->name, dm->blocked_by);
		if (dm->dd.fd >= 0)
			close(dm->dd.fd);
		dm->dd.fd = -1;
		/* Its bytes stay allocated until then: the context keeps
		 * their charge, dm_forget() gives back none. On verbs the
		 * device's close lets go of the struct ibv_dm and its
		 * mapping (ibv_free_dm() would answer EBUSY again), and the
		 * kernel frees the DM with the context. */
		charge_add_u64(&x->family_slot[FAMILY_DM], dm->length,
			       "DM bytes left to a context");
		restart_ctx_saved(core, x);
		dm->length = 0;
		dm_forget(core, dm);
	}
	return n;
}

/* Context @x closes: the bytes a forced rekey left in it (its slot,
 * dm_ctx_force()) were freed by the kernel with it, and go back to the
 * domain and the device. */
static void dm_ctx_closed(struct core *core, const struct dctx *x)
{
	uint64_t left = x->family_slot[FAMILY_DM];

	charge_sub(x->domain, CHARGE_OF(FAMILY_DM), left);
	charge_sub_u64(&x->dev->dm_reserved, left, "reserved DM bytes",
		       x->dev->name);
}

/* The DMs of @x's domain allocated in @x: the broker's own objects
 * there (unaccounted.c's walk). */
static void dm_ctx_handles(struct core *core, const struct dctx *x,
			   void (*name)(void *arg, enum ibc_obj_kind kind,
					uint32_t handle),
			   void *arg)
{
	struct dm *dm;

	TAILQ_FOREACH(dm, &dm_domain_of(x->domain)->dms, domain_link) {
		core->list_visits++;
		if (dm->ctx == x)
			name(arg, IBC_OBJ_DM, dm->dd.handle);
	}
}

static const struct obj_family dm_imports = {
	.release = dm_release,
	.save = dm_obj_save,
};
static const struct obj_family dm_mr_hooks = {
	.removed = dm_mr_removed,
	.uses = dm_mr_uses,
	.save = dm_obj_save,
	.restore = dm_mr_restore,
};

/* A domain's DM quota: its keys, or [defaults]'. */
static void dm_domain_limit(const struct config *cfg,
			    const struct config_domain *cd, struct quota *limit)
{
	const struct dm_conf_quota *q = dm_conf_quota(cfg, cd);

	limit->family[FAMILY_DM][DM_LIMIT_BYTES] = q->dm_bytes;
	limit->family[FAMILY_DM][DM_LIMIT_PCT] = q->dm_pct;
	limit->family[FAMILY_DM][DM_LIMIT_MEMBER_SHARE] = q->dm_member_share;
}

const struct family dm_family = {
	/* Its quota: bytes of device memory, a share of each device's
	 * (dm-quota.c), so no one limit: its own metrics and listing. */
	.quota_name = "dm_bytes",
	.quota_info_field = offsetof(Rdmab__QuotaInfo, dm_bytes),
	.quota_info_size = sizeof(((Rdmab__QuotaInfo *)0)->dm_bytes),
	.domain_info = dm_domain_info,
	.metrics_devices = dm_metrics_devices,
	.metrics_domains = dm_metrics_domains,
	.request_metrics = dm_request_metrics,
	.name = "DM",
	.conf = &dm_conf_family,
	.domain_limit = dm_domain_limit,
	.journal_first = DM_JOURNAL_FIRST,
	.journal_msgs = dm_journal_msgs,
	.n_journal_msgs = DM_JOURNAL_MSGS,
	.init = dm_init,
	.fini = dm_fini,
	.session_closing = dm_conn_closing,
	.device_gone = dm_device_gone,
	.ctx_closed = dm_ctx_closed,
	.ctx_handles = dm_ctx_handles,
	.domain_init = dm_domain_init,
	.domain_fini = dm_domain_fini,
	.user_init = dm_user_init,
	.user_fini = dm_user_fini,
	.rekey_busy = dm_ctx_busy,
	.rekey_force = dm_ctx_force,
	.rekey_noun = "DMs",
	.requests = dm_requests,
	.rekey_reply_field = offsetof(Rdmab__DomainRekeyReply, destroyed_dms),
	.restore = dm_restore,
	.restore_undo = dm_restore_undo,
	.ids = dm_ids,
	.counters_field = offsetof(Rdmab__State__Counters, dms),
	.ctx_save = dm_ctx_save,
	.ctx_restore = dm_ctx_restore,
	.device_caps = dm_device_caps,
	.obj_hooks =
		{
			[IBC_OBJ_DM] = &dm_imports,
			[IBC_OBJ_MR] = &dm_mr_hooks,
		},
};
