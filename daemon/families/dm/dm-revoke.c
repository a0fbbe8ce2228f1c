// SPDX-License-Identifier: MIT
/*
 * The revoke of a DM by an administrator (dm.h): the holders' status pages
 * say it at once (their libraries check without a round trip), they get an
 * Event, and after the grace period the free is asked; a holder that did
 * not let go keeps the DM until its process is gone.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include <event2/event.h>

#include "daemon/registry/client.h"
#include "daemon/registry/ctx.h"
#include "daemon/families/dm/dm-conf.h"
#include "daemon/families/dm/dm.h"
#include "daemon/registry/domain.h"
#include "daemon/util/log.h"
#include "daemon/registry/objects.h"
#include "daemon/registry/core.h"

/* The grace period is over: free what nothing holds; a holder that did not
 * let go keeps the DM until its process is gone. */
static void dm_revoke_grace_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dm *dm = arg;
	struct core *core = dm->ctx->core;
	uint64_t id = dm->id;

	(void)fd;
	(void)what;
	dm_set_free_asked(dm);
	if (dm_try_free(core, dm))
		return;
	if (dm->n_holds)
		snprintf(dm->blocked_by, sizeof(dm->blocked_by),
			 "revoke blocked by client %" PRIu64
			 "%s (the DM goes when it unimports or dies)",
			 dm->holds[0].o->owner->client_id,
			 dm->n_holds > 1 ? " and others" : "");
	dm_journal(core, dm);
	log_notice("DM %" PRIu64 ": revoke grace period over; %s", id,
		   dm->n_holds ? dm->blocked_by : "free blocked by an MR");
}

int dm_revoke_arm(struct core *core, struct dm *dm)
{
	uint32_t grace = dm_conf(&core->config)->dm_revoke_grace_ms;
	struct timeval tv = {
		.tv_sec = grace / 1000,
		.tv_usec = (suseconds_t)(grace % 1000) * 1000,
	};

	dm->revoke_ev = evtimer_new(core->base, dm_revoke_grace_cb, dm);
	if (!dm->revoke_ev || event_add(dm->revoke_ev, &tv) < 0) {
		/* A later revoke makes its own. */
		if (dm->revoke_ev)
			event_free(dm->revoke_ev);
		dm->revoke_ev = NULL;
		return -ENOMEM;
	}
	return 0;
}

int dm_revoke(struct core *core, uint64_t id, uint64_t client_id, uid_t uid,
	      struct why *why)
{
	uint32_t grace = dm_conf(&core->config)->dm_revoke_grace_ms;
	struct dm *dm = dm_find_id(core, id);
	char reason[160];

	if (!dm)
		return why_set(why, -ENOENT, "no DM %" PRIu64 " in the broker",
			       id);
	if (dm->revoked)
		return why_set(why, -EALREADY,
			       "DM %" PRIu64 " was revoked already", id);
	if (dm_revoke_arm(core, dm) < 0)
		return why_set(why, -ENOMEM, "out of memory");
	dm_mark_revoked(dm);
	log_notice("DM %" PRIu64 " of domain %s revoked by client %" PRIu64
		   " (uid %u); %u imports, grace %u ms",
		   id, dm->domain->name, client_id, uid, dm->n_holds, grace);
	snprintf(reason, sizeof(reason),
		 "DM %" PRIu64 " was revoked by an administrator: deregister "
		 "its MRs and unimport it",
		 id);
	dm_tell(core, dm, NULL, RDMAB__EVENT__BODY_DM_REVOKED, reason);
	return 0;
}
