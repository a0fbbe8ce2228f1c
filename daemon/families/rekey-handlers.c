// SPDX-License-Identifier: MIT
/* The rekey request of an administrator (rekey.c does the work). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "daemon/registry/client.h"
#include "daemon/server/handler.h"
#include "daemon/registry/domain.h"
#include "daemon/families/rekey.h"
#include "daemon/registry/core.h"

/* Private domains have a context of their own: nobody else shares it, so
 * there is nothing to shut out; they answer like a missing one. */
static struct domain *rekey_find(struct core *core, const char *name)
{
	struct domain *d;

	TAILQ_FOREACH(d, &core->domains, link)
		if (d->kind != DOMAIN_PRIVATE && strcmp(d->name, name) == 0)
			return d;
	return NULL;
}

int h_domain_rekey(struct client *c, const Rdmab__Request *req,
		   struct wire_fds *fds, struct reply *r)
{
	const Rdmab__DomainRekeyRequest *q = req->domain_rekey;
	Rdmab__DomainRekeyReply *out = reply_alloc(r, sizeof(*out));
	char who[80];
	struct domain *d;
	int err;

	(void)fds;
	if (!out)
		return reply_error(r, -ENOMEM, "out of memory");
	/* Administrators only: H_ADMIN. */
	d = rekey_find(c->core, q->domain);
	if (!d)
		return reply_error(r, -ENOENT,
				   "no domain \"%.64s\" to rekey (see "
				   "rdmabrokerctl domains; a private domain "
				   "shares its context with nobody)",
				   q->domain);
	rdmab__domain_rekey_reply__init(out);
	snprintf(who, sizeof(who), "by client %" PRIu64 ", uid %u", c->id,
		 c->cred.uid);
	/* Room for every context the rekey may replace. */
	out->old_context_ids =
		reply_alloc(r, REKEY_MAX_CTXS * sizeof(uint64_t));
	if (!out->old_context_ids)
		return reply_error(r, -ENOMEM, "out of memory");
	err = rekey_domain(c->core, d, q->force, who, &r->why, out);
	if (err < 0)
		return err;
	r->msg.body_case = RDMAB__REPLY__BODY_DOMAIN_REKEY;
	r->msg.domain_rekey = out;
	return 0;
}
