// SPDX-License-Identifier: MIT
/*
 * The restore's contexts (restore-int.h): a context a session held, the
 * one its domain has already or adopted from its stored descriptor (or,
 * on a device without import, opened again under its id); one that
 * objects of ended sessions are in, adopted for them; one that could not
 * come back, told to its session as a device removal.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/registry/core.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/domain.h"
#include "daemon/registry/objects.h"
#include "daemon/registry/user.h"
#include "daemon/restart/restart-int.h"
#include "daemon/restart/restore-domain.h"
#include "daemon/restart/restore-int.h"
#include "daemon/server/conn.h"
#include "daemon/util/array.h"
#include "daemon/util/log.h"
#include "daemon/util/why.h"
#include "proto/state.pb-c.h"

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
	for (size_t i = 0; i < rc->n_orphan_ctxs; i++)
		if (rc->orphan_ctxs[i] == id) {
			*tried = true;
			return 0;
		}
	if (array_grow(&rc->orphan_ctxs, &rc->cap_orphan_ctxs,
		       rc->n_orphan_ctxs + 1, sizeof(*rc->orphan_ctxs), 8) < 0)
		return -ENOMEM;
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
struct dctx *restore_ctx_orphan(struct rctx *rc, struct obj_owner *ow,
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

void restore_orphans_close(struct rctx *rc)
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

int restore_hold(struct restore *rs, struct conn *c, uint64_t ctx_id,
		 uint32_t opens, uint64_t import)
{
	struct dctx *x = restore_ctx(rs, c, ctx_id);

	if (!x) {
		restore_ctx_lost(c, ctx_id);
		return 0;
	}
	return dctx_client_adopt(&c->cl, x, opens, import);
}
