// SPDX-License-Identifier: MIT
/*
 * A WQ leaves every RSS table that uses it before it goes, whoever
 * destroys it (rss.h): the table is rebuilt make-before-break over
 * the WQs that remain, the new flow rule at the other of two priorities,
 * the new parts journaled with the old ones as retiring before those are
 * destroyed, or the table is destroyed when none remain; the owner hears
 * of it in one Event.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "daemon/registry/client.h"
#include "daemon/registry/core.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/objects.h"
#include "daemon/util/fault.h"
#include "daemon/util/log.h"
#include "daemon/families/rss/rss.h"

/*
 * Does @o stay in a table that @wq leaves? Not @wq, nor a WQ whose
 * process is gone: the cleanup destroys each of those next, and one
 * rebuild without all of them spares the device a rebuild, and the owner
 * an Event, for each of a dead process's thousands of WQs.
 */
static bool rss_wq_stays(const struct obj *o, const struct obj *wq)
{
	return o != wq && o->owner->state != OWNER_DEAD;
}

/*
 * A rebuild's old parts go, journaled as retiring with the new parts
 * already: each bit is cleared once its destroy returned (or found the
 * part gone), so that a SIGKILL leaves the record naming as retiring only
 * a part whose destroy may not have run, never a handle the kernel may
 * have given to another object since. A destroy that failed keeps its
 * bit: the part is still the object's, named for the restore and tried
 * again before the slots are reused (rss_retire_left).
 */
static void rss_retire_at(struct rss *r, const char *const *point)
{
	for (unsigned int p = 0; p < RSS_PARTS; p++) {
		struct why w;
		int err;

		if (!(r->retiring.mask & 1u << p))
			continue;
		err = r->x->dev->ctx_ops->rss_destroy(r->x->dc, &r->retired,
						      rss_part_kind[p], &w);
		if (point)
			fault_point(point[p]);
		if (err < 0 && err != -ENOENT && err != -EIO) {
			log_warn("RSS %" PRIu64 ": the old %s stays: %s", r->id,
				 obj_kind_name(rss_part_kind[p]), w.text);
			continue;
		}
		r->retiring.mask &= ~(1u << p);
		rss_journal_now(r);
	}
}

void rss_retire(struct rss *r)
{
	static const char *const point[RSS_PARTS] = { "rss-leave-flow",
						      "rss-leave-qp",
						      "rss-leave-tbl" };

	rss_retire_at(r, point);
}

void rss_retire_quiet(struct rss *r)
{
	rss_retire_at(r, NULL);
}

void rss_retire_left(struct rss *r)
{
	if (!r->retiring.mask)
		return;
	rss_retire(r);
	if (!r->retiring.mask)
		return;
	log_warn("RSS %" PRIu64 ": its old%s%s%s could not be destroyed, "
		 "left in the context, named by nothing",
		 r->id, r->retiring.mask & 1u << RSS_FLOW ? " flow" : "",
		 r->retiring.mask & 1u << RSS_QP ? " QP" : "",
		 r->retiring.mask & 1u << RSS_TBL ? " table" : "");
	r->retiring.mask = 0;
	rss_journal_now(r);
}

/* @wq leaves @r, with every dead process's WQ: rebuild over the rest, or
 * destroy @r when none is left. */
static int rss_leave(struct rss *r, struct obj *wq, struct why *why)
{
	struct rss_made made;
	struct obj **rest;
	uint64_t *gone, *ids;
	uint32_t n = 0, n_gone = 0;
	int err;

	if (!r->flow || !r->qp || !r->tbl)
		return why_set(why, -EBUSY,
			       "RSS %" PRIu64 " is being destroyed", r->id);
	/* Its retiring slots are about to name the parts of now. */
	rss_retire_left(r);
	rest = malloc(r->n_wqs * sizeof(*rest));
	gone = malloc(r->n_wqs * sizeof(*gone));
	/* The new record's ids, taken now: nothing is allocated between
	 * the make and the journal put that comes before the destroys. */
	ids = malloc(r->n_wqs * sizeof(*ids));
	if (!rest || !gone || !ids) {
		free(rest);
		free(gone);
		free(ids);
		return why_set(why, -ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < r->n_wqs; i++) {
		if (rss_wq_stays(r->wqs[i], wq))
			rest[n++] = r->wqs[i];
		else
			gone[n_gone++] = r->wqs[i]->id;
	}
	if (!n) {
		free(rest);
		free(ids);
		log_info("RSS %" PRIu64 ": its last %u WQs (%" PRIu64 " among "
			 "them) go; destroyed",
			 r->id, n_gone, wq->id);
		rss_event(r, "the last WQ of the table went", true, gone,
			  n_gone);
		free(gone);
		return rss_teardown(r, why);
	}
	/* Make before break: the new rule at the other priority takes the
	 * traffic before the old one goes. */
	err = rss_make(r, rest, n, r->priority ^ 1, &made, why);
	if (err < 0) {
		free(rest);
		free(gone);
		free(ids);
		return err;
	}
	/* The one window left: killed before the journal put below, the new
	 * parts are named by nothing; a verbs kernel keeps them in the
	 * context, counted unaccounted after the restart, and the soft
	 * device's went with the daemon. */
	fault_point("rss-leave-made");
	for (unsigned int p = 0; p < RSS_PARTS; p++)
		r->retiring.handle[p] = rss_made_handle(&r->made, p);
	r->retiring.mask = (1u << RSS_PARTS) - 1;
	r->retired = r->made;
	r->made = made;
	r->flow->handle = made.flow_handle;
	r->qp->handle = made.qp_handle;
	r->tbl->handle = made.tbl_handle;
	rss_set_wqs(r, rest, ids, n);
	r->priority ^= 1;
	r->rebuilds++;
	rss_journal_now(r);
	fault_point("rss-leave-journaled");
	rss_retire(r);
	log_info("RSS %" PRIu64 ": rebuilt over %u WQs without %u (WQ "
		 "%" PRIu64 " among them)",
		 r->id, n, n_gone, wq->id);
	rss_event(r,
		  n_gone > 1 ? "WQs of the table went" :
			       "a WQ of the table went",
		  false, gone, n_gone);
	free(gone);
	return 0;
}

/* Before a WQ goes, by its owner or the cleanup: out of every table. */
int rss_wq_going(struct core *core, struct obj *o, void *data, struct why *why)
{
	struct rss *r, *tmp;

	TAILQ_FOREACH_SAFE(r, &rss_state(core)->all, link, tmp) {
		for (uint32_t i = 0; i < r->n_wqs; i++) {
			int err;

			if (r->wqs[i] != o)
				continue;
			err = rss_leave(r, o, why);
			if (err < 0)
				return err;
			break;
		}
	}
	return 0;
}

int rss_wq_cleanup(struct core *core, struct obj *o, void *data)
{
	struct why why;
	int err = rss_wq_going(core, o, data, &why);

	if (err < 0)
		log_warn("WQ %" PRIu64 " stays in its RSS table for now: %s",
			 o->id, why.text);
	return err;
}

static bool rss_event_filter(struct client *c, Rdmab__Event *ev, void *arg)
{
	return c == arg;
}

/*
 * Tell @r's owner: the WQs that left (@removed), and, to a session whose
 * hello did not ask for the change alone, the whole new list (empty:
 * destroyed). At most IBC_RSS_MAX_WQS ids in all, since the two lists
 * share the old one: the Event fits a packet.
 */
void rss_event(struct rss *r, const char *reason, bool destroyed,
	       const uint64_t *removed, uint32_t n_removed)
{
	Rdmab__RssRebuiltEvent body = RDMAB__RSS_REBUILT_EVENT__INIT;
	Rdmab__Event ev = RDMAB__EVENT__INIT;
	struct client *owner = r->tbl ? r->tbl->owner->conn : NULL;
	uint64_t *ids = NULL;
	uint32_t n = 0;

	if (!owner)
		return;
	ids = calloc(r->n_wqs ? r->n_wqs : 1, sizeof(*ids));
	if (!ids)
		return;
	/* A rebuild has changed r->wqs already; a destroy sends none. */
	if (!destroyed && !owner->family_slot[FAMILY_RSS])
		for (; n < r->n_wqs; n++)
			ids[n] = r->wqs[n]->id;
	body.wq_ids = ids;
	body.n_wq_ids = n;
	body.removed_wq_ids = (uint64_t *)removed;
	body.n_removed_wq_ids = n_removed;
	body.delta = owner->family_slot[FAMILY_RSS] != 0;
	body.destroyed = destroyed;
	body.priority = r->priority;
	body.reason = (char *)reason;
	ev.object_kind = IBC_OBJ_RWQ_IND_TBL;
	ev.object_id = r->id;
	ev.body_case = RDMAB__EVENT__BODY_RSS_REBUILT;
	ev.rss_rebuilt = &body;
	owner->core->ops->broadcast(owner->core, &ev, rss_event_filter, owner);
	free(ids);
}
