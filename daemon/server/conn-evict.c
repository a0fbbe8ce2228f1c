// SPDX-License-Identifier: MIT
/*
 * Eviction (rdmabrokerctl evict): an administrator ends another session,
 * or its own, after an optional rekey of the session's domain. A handler
 * of the transport's: it closes a connection, which the layers below the
 * transport never do.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "daemon/server/conn.h"
#include "daemon/server/dispatch.h"
#include "daemon/server/handler.h"
#include "daemon/util/log.h"
#include "daemon/families/rekey.h"
#include "daemon/server/server.h"

int h_admin_evict(struct client *cl, const Rdmab__Request *req,
		  struct wire_fds *fds, struct reply *r)
{
	struct conn *c = conn_of(cl);
	uint64_t id = req->evict->client_id;
	Rdmab__EvictReply *out = reply_alloc(r, sizeof(*out));
	struct conn *t;
	int err;

	if (!out)
		return reply_error(r, -ENOMEM, "out of memory");
	/* Administrators only: H_ADMIN. */
	TAILQ_FOREACH(t, &c->tab->conns, link)
		if (t->cl.id == id && t->cl.hello_done)
			break;
	if (!t)
		return reply_error(r, -ENOENT,
				   "client %" PRIu64 " is not "
				   "connected",
				   id);
	/* Rekey first: a refusal (EBUSY) leaves the session alone. */
	if (req->evict->rekey && t->cl.domain) {
		enum conn_state was = t->state;
		char who[96];

		snprintf(who, sizeof(who),
			 "evict --rekey of client %" PRIu64 " by client "
			 "%" PRIu64,
			 t->cl.id, c->cl.id);
		/* Not told: it is on its way out. */
		conn_set_closing(t);
		/* Its Events close no session here (notify_clients()): @t
		 * is still there, at most marked dead. */
		err = rekey_domain(c->cl.core, t->cl.domain, req->evict->force,
				   who, &r->why, NULL);
		/* Unless an Event it could not take killed it meanwhile. */
		if (t->state == CONN_CLOSING)
			t->state = was;
		if (err < 0)
			return err;
	}
	log_notice("client %" PRIu64 " (pid %d, uid %u) evicted by client "
		   "%" PRIu64 " (uid %u)",
		   t->cl.id, (int)t->cl.cred.pid, t->cl.cred.uid, c->cl.id,
		   c->cl.cred.uid);
	rdmab__evict_reply__init(out);
	r->msg.body_case = RDMAB__REPLY__BODY_EVICT;
	r->msg.evict = out;
	if (t == c) {
		/* The reply first: dispatch closes after sending it. */
		conn_set_closing(c);
		return 0;
	}
	dispatch_error(t, 0, ECONNRESET,
		       "an administrator ended this session (rdmabrokerctl "
		       "evict)");
	conn_close_after_flush(t);
	return 0;
}
