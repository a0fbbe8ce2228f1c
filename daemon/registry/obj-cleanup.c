// SPDX-License-Identifier: MIT
/*
 * The end of a session and the death of its process (objects.h). A session
 * that holds objects ends once the transport read what its client still
 * sent and applied the registers and unregisters in it (dispatch_drain()).
 * The objects then stay, detached, until the process is gone
 * (obj-watch.c).
 * Then they are destroyed by handle in rounds in the registry's cleanup
 * order (the device's destroy ranks), at most reg->slice per event-loop
 * turn; -EBUSY is retried in later rounds, further apart each time, and
 * what is still there after reg->rounds is kept, stuck, and logged once
 * with the reason and the errno. Only -ENOENT means the object is gone;
 * -EINVAL (a handle of another kind) keeps the record stuck at once.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/registry/client.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/domain.h"
#include "daemon/util/log.h"
#include "daemon/registry/objects.h"
#include "daemon/registry/core.h"
#include "daemon/registry/journal-sink.h"
#include "daemon/registry/unaccounted.h"

/* A dead client with more stuck objects gets one line for the rest. */
#define OBJ_STUCK_LOGGED 8

/* --- detached owners -------------------------------------------------- */

bool objects_client_holds(const struct client *c)
{
	return c->owner && (c->owner->n_objs || c->owner->n_intents);
}

/* @c's owner leaves its session, detached (its record is the caller's
 * to write, once it knows the watch); NULL when it had nothing left and
 * went. */
static struct obj_owner *owner_detach(struct client *c)
{
	struct obj_owner *ow = c->owner;

	if (!ow)
		return NULL;
	c->owner = NULL;
	ow->conn = NULL;
	ow->state = OWNER_DETACHED;
	if (!ow->n_objs && !ow->n_intents) {
		objects_owner_put(ow);
		return NULL;
	}
	/* Who the process is, for a restore: read before the watch checks
	 * the session's pidfd, whose process it then was if still there
	 * (a failure keeps 0, a restore trusts the pid as before). */
	(void)obj_proc_start(ow->pid, &ow->start_time);
	return ow;
}

void objects_conn_closing(struct client *c)
{
	struct obj_owner *ow = owner_detach(c);
	int pidfd, err;

	if (!ow)
		return;
	/* The watch takes the session's pidfd, unless the process is
	 * watched already: the same process, for longer. */
	pidfd = c->core->ops->take_pidfd(c);
	log_debug("client %" PRIu64 " (pid %d): session ended; %u objects "
		  "and %u intents kept until the process exits",
		  ow->client_id, (int)ow->pid, ow->n_objs, ow->n_intents);
	err = obj_watch_join(ow, c->user, c->cred.uid, pidfd);
	if (err == -ESRCH) {
		objects_owner_dead(ow);
		return;
	}
	/* Its record names where the watch keeps the pidfd: written
	 * once, after the join. */
	sink_owner_saved(c->core, ow);
	if (err < 0) {
		/* Nothing to watch with: its objects stay, shown as
		 * detached, until the daemon stops. */
		log_err("client %" PRIu64 " (pid %d): cannot watch the "
			"process; its %u objects stay until the broker stops",
			ow->client_id, (int)ow->pid, ow->n_objs);
	}
}

void objects_conn_end(struct client *c)
{
	struct obj_owner *ow = owner_detach(c);

	if (ow)
		objects_owner_dead(ow);
}

/* --- the cleanup ------------------------------------------------------ */

const uint64_t obj_cleanup_le_usec[OBJ_CLEANUP_BUCKETS] = {
	100, 1000, 10000, 50000, 100000, 500000, 1000000, 5000000, 30000000,
};

static void cleanup_ended(struct registry *reg, uint64_t usec)
{
	for (unsigned int i = 0; i < OBJ_CLEANUP_BUCKETS; i++)
		reg->cleanups.le[i] += usec <= obj_cleanup_le_usec[i];
	reg->cleanups.count++;
	reg->cleanups.usec += usec;
}

static void cleanup_cb(evutil_socket_t fd, short what, void *arg);

static void cleanup_later(struct obj_owner *ow, unsigned int ms)
{
	struct timeval tv = {
		.tv_sec = ms / 1000,
		.tv_usec = (suseconds_t)(ms % 1000) * 1000,
	};

	event_add(ow->ev, &tv);
}

void objects_owner_dead(struct obj_owner *ow)
{
	struct core *ow_srv = ow->reg->core;
	struct event_base *base = ow_srv->base;
	unsigned int intents = ow->n_intents;

	obj_watch_leave(ow);
	if (ow->ev)
		event_free(ow->ev);
	ow->ev = NULL;
	ow->state = OWNER_DEAD;
	sink_owner_saved(ow_srv, ow);
	for (unsigned int k = 0; k < OBJ_KIND_COUNT; k++) {
		struct obj *o, *tmp;

		TAILQ_FOREACH_SAFE(o, &ow->kinds[k], kind_link, tmp) {
			/* Counted again once the cleanup is done. */
			o->ctx->unacc_stale = true;
			if (o->intent)
				objects_drop_intent(o);
		}
	}
	/* Unaccounted objects grew: [defaults] auto_rekey_unaccounted. */
	if (intents)
		core_rekey_due(ow->reg->core, 0);
	if (ow->n_objs || intents)
		log_info("client %" PRIu64 " (pid %d) is gone: destroying its "
			 "%u objects; %u intents left unaccounted",
			 ow->client_id, (int)ow->pid, ow->n_objs, intents);
	ow->round = 0;
	ow->rank = 0;
	ow->dead_usec = objects_now_usec();
	ow->n_at_death = ow->n_objs;
	ow->ev = evtimer_new(base, cleanup_cb, ow);
	if (!ow->ev) {
		log_err("client %" PRIu64 ": out of memory; its objects stay",
			ow->client_id);
		return;
	}
	if (ow->n_objs) {
		cleanup_later(ow, 0);
		return;
	}
	objects_owner_put(ow);
	unaccounted_refresh_stale(ow_srv);
}

/* The next object to try in this round, or NULL at its end. An object
 * tried in this round went to the end of its list. */
static struct obj *cleanup_next(struct obj_owner *ow)
{
	const struct registry *reg = ow->reg;

	for (; ow->rank < reg->cleanup_kinds; ow->rank++) {
		struct obj *o =
			TAILQ_FIRST(&ow->kinds[reg->cleanup_order[ow->rank]]);

		if (o && !o->stuck && o->tried != ow->round + 1)
			return o;
	}
	return NULL;
}

/* Once per record, when it becomes stuck: the last answer, errno
 * included (the device's sentence need not name it). */
static void log_stuck(struct obj_owner *ow, struct obj *o, int err,
		      const char *reason)
{
	if (ow->stuck > OBJ_STUCK_LOGGED)
		return;
	log_warn("client %" PRIu64 " (pid %d): %s handle %u in context "
		 "%" PRIu64 " (%s on %s) is kept: %s (errno %d)%s",
		 ow->client_id, (int)ow->pid, obj_kind_name(o->kind), o->handle,
		 o->ctx->id, o->ctx->domain->name, o->ctx->dev->name, reason,
		 -err,
		 ow->stuck == OBJ_STUCK_LOGGED ? " (the rest of its stuck "
						 "objects are not logged)" :
						 "");
}

/* One destroy; what fails stays for a later round. */
static void cleanup_one(struct obj_owner *ow, struct obj *o)
{
	struct registry *reg = ow->reg;
	struct why why = { 0, "" };
	bool stuck_at_once = false;
	int ret = 0;

	/* A family's record (a DM import): the family lets it go, never
	 * a destroy by handle. */
	if (o->family_owned) {
		ret = objects_hook_release(reg, o);
		if (ret == 0)
			return;
		why_set(&why, ret, "the %s family could not release it: %s",
			obj_kind_name(o->kind), strerror(-ret));
		goto failed;
	}
	/* A rekeyed context closes as a whole: nothing in it is destroyed
	 * by handle (the handle may be another holder's by now); the
	 * record's charge stays with the context. */
	if (o->ctx->rekeyed) {
		objects_drop_intent(o);
		return;
	}
	/* The device is gone, and the kernel frees the object with the
	 * context. */
	if (!o->ctx->dc) {
		objects_remove(o);
		return;
	}
	ret = objects_hook_before_destroy(reg, o);
	/* The family took the record away itself: nothing to destroy. */
	if (ret > 0)
		return;
	if (ret == 0 && objects_hook_destroys(reg, o))
		ret = objects_hook_destroy(reg, o, &why);
	else if (ret == 0)
		ret = o->ctx->dev->ctx_ops->obj_destroy(o->ctx->dc, o->kind,
							o->handle, &why);
	else
		why_set(&why, ret, "the %s family is not ready: %s",
			obj_kind_name(o->kind), strerror(-ret));
	switch (ret) {
	case 0:
	case -EIO: /* disassociated: the kernel freed it */
		objects_remove(o);
		return;
	case -ENOENT:
		/* The handle names no object: destroyed with raw verbs,
		 * against the rules. Only this answer means gone. */
		/* As many lines as a dead client had records, else. */
		if (++ow->gone <= OBJ_STUCK_LOGGED)
			log_notice("client %" PRIu64 " (pid %d): %s handle %u "
				   "was already gone: %s%s",
				   ow->client_id, (int)ow->pid,
				   obj_kind_name(o->kind), o->handle, why.text,
				   ow->gone == OBJ_STUCK_LOGGED ?
					   " (the rest of such handles are "
					   "not logged)" :
					   "");
		objects_remove(o);
		return;
	case -EINVAL:
		/* The handle names an object of another kind (or the
		 * kernel refused the call): not proof that the record's
		 * object is gone, and a later round would get the same
		 * answer. Kept, never destroyed by this record again. */
		stuck_at_once = true;
		break;
	default:
		break;
	}
failed:
	o->tried = ow->round + 1;
	TAILQ_REMOVE(&ow->kinds[o->kind], o, kind_link);
	TAILQ_INSERT_TAIL(&ow->kinds[o->kind], o, kind_link);
	if (stuck_at_once || ow->round + 1 >= reg->rounds) {
		o->stuck = true;
		ow->stuck++;
		log_stuck(ow, o, ret, why.text);
	}
}

static void cleanup_cb(evutil_socket_t fd, short what, void *arg)
{
	struct obj_owner *ow = arg;
	struct registry *reg = ow->reg;
	unsigned int budget = reg->slice;
	struct obj *o;

	while ((o = cleanup_next(ow))) {
		if (budget-- == 0) {
			/* The loop's other clients first. */
			cleanup_later(ow, 0);
			return;
		}
		cleanup_one(ow, o);
	}
	if (ow->n_objs == ow->stuck) {
		cleanup_ended(reg, objects_now_usec() - ow->dead_usec);
		if (ow->stuck)
			log_warn("client %" PRIu64 " (pid %d): %u objects "
				 "could not be destroyed; they are kept, and "
				 "so is their context",
				 ow->client_id, (int)ow->pid, ow->stuck);
		else
			log_info("client %" PRIu64 " (pid %d): %u objects "
				 "destroyed in %" PRIu64 " us",
				 ow->client_id, (int)ow->pid, ow->n_at_death,
				 objects_now_usec() - ow->dead_usec);
		objects_owner_put(ow);
		/* What its intents made, if anything, is known now. */
		unaccounted_refresh_stale(reg->core);
		return;
	}
	/* Something else still uses what is left: wait, longer each
	 * round. */
	ow->round++;
	ow->rank = 0;
	cleanup_later(ow, reg->backoff_ms << (ow->round - 1));
}
