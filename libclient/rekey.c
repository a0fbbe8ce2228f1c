// SPDX-License-Identifier: MIT
/*
 * Domain rekey: the administrator's calls, and what the library does with
 * IBC_EVENT_DOMAIN_REKEYED once the callback ran (ibc_dispatch).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libclient/family.h"
#include "libclient/objects.h"
#include "libclient/events.h"

IBC_EXPORT int ibc_admin_domain_rekey(struct ibc_client *client,
				      const char *domain, uint32_t flags)
{
	Rdmab__DomainRekeyRequest dr = RDMAB__DOMAIN_REKEY_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct ibc_reply r;
	int err;

	if (!client || !domain)
		return ibc_set_error(-EINVAL, "client or domain is NULL");
	if (!*domain || strlen(domain) >= IBC_NAME_MAX)
		return ibc_set_error(-EINVAL,
				     "a domain name is 1 to %d bytes long",
				     IBC_NAME_MAX - 1);
	if (flags & ~(uint32_t)IBC_REKEY_FORCE)
		return ibc_set_error(-EINVAL,
				     "unknown rekey flags 0x%x (known: "
				     "IBC_REKEY_FORCE)",
				     flags & ~(uint32_t)IBC_REKEY_FORCE);
	dr.domain = (char *)domain;
	dr.force = flags & IBC_REKEY_FORCE;
	req.body_case = RDMAB__REQUEST__BODY_DOMAIN_REKEY;
	req.domain_rekey = &dr;
	err = ibc_call(client, &req, 0, &r);
	if (err < 0)
		return err;
	if (r.reply->body_case != RDMAB__REPLY__BODY_DOMAIN_REKEY)
		err = ibc_set_error(-EPROTO, "the broker answered rekey with "
					     "something else");
	ibc_reply_free(&r);
	return err;
}

IBC_EXPORT int ibc_admin_evict_ex(struct ibc_client *client, uint64_t client_id,
				  uint32_t flags)
{
	const uint32_t known = IBC_EVICT_REKEY | IBC_EVICT_FORCE;
	Rdmab__EvictRequest er = RDMAB__EVICT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct ibc_reply r;
	int err;

	if (!client)
		return ibc_set_error(-EINVAL, "client is NULL");
	if (!client_id)
		return ibc_set_error(-EINVAL, "client id 0 names no client");
	if (flags & ~known)
		return ibc_set_error(-EINVAL,
				     "unknown evict flags 0x%x (known: "
				     "IBC_EVICT_REKEY, IBC_EVICT_FORCE)",
				     flags & ~known);
	if ((flags & IBC_EVICT_FORCE) && !(flags & IBC_EVICT_REKEY))
		return ibc_set_error(-EINVAL, "IBC_EVICT_FORCE forces a rekey: "
					      "it needs IBC_EVICT_REKEY");
	er.client_id = client_id;
	er.rekey = flags & IBC_EVICT_REKEY;
	er.force = (flags & IBC_EVICT_FORCE) != 0;
	req.body_case = RDMAB__REQUEST__BODY_EVICT;
	req.evict = &er;
	err = ibc_call(client, &req, 0, &r);
	if (err < 0)
		return err;
	if (r.reply->body_case != RDMAB__REPLY__BODY_EVICT)
		err = ibc_set_error(-EPROTO, "the broker answered evict with "
					     "something else");
	ibc_reply_free(&r);
	return err;
}

/* Tell the broker, without waiting, that this process let go of @id. */
static void ibc_rekey_release(struct ibc_client *cl, uint64_t id)
{
	Rdmab__CloseContextRequest cr = RDMAB__CLOSE_CONTEXT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	cr.context_id = id;
	req.body_case = RDMAB__REQUEST__BODY_CLOSE_CONTEXT;
	req.close_context = &cr;
	/* A broker that is gone has released it already. */
	ibc_send_nowait(cl, &req);
}

void ibc_ctx_rekeyed(struct ibc_client *cl, uint64_t id)
{
	unsigned int n = 0;

	pthread_mutex_lock(&cl->lock);
	/* New creates are refused with ESTALE; those in flight, and an
	 * attach (which decides whether it is shared), finish first. */
	for (struct ibc_ctx *ctx = cl->ctxs; ctx; ctx = ctx->next) {
		if (ctx->removed || ctx->closed || ctx->caps.context_id != id ||
		    (ctx->attached && !ctx->caps.shared))
			continue;
		ctx->rekeyed = true;
		ctx->closing = true;
	}
	ibc_ctx_wait_idle(cl);
	for (struct ibc_ctx *ctx = cl->ctxs; ctx; ctx = ctx->next) {
		if (!ctx->closing || ctx->removed || ctx->closed ||
		    ctx->caps.context_id != id)
			continue;
		/* A context of this process's own shares nothing with the
		 * domain: there is nothing to shut out of it. */
		if (!ctx->caps.shared) {
			ctx->rekeyed = false;
			ctx->closing = false;
			continue;
		}
		/* The whole context goes once every holder let go: what
		 * this process made in it goes with it, not one by one
		 * with the broker (its records leave with the release). */
		ibc_ctx_destroy_objects(ctx, false);
		ibc_families_ctx_drop(ctx, ESTALE,
				      "the DM's context was replaced by a "
				      "rekey");
		ibc_ctx_drop_local(ctx);
		n++;
	}
	pthread_mutex_unlock(&cl->lock);
	/* One release per ibc_open of it. */
	while (n--)
		ibc_rekey_release(cl, id);
}

/* --- the event ---------------------------------------------------------- */

static struct ibc_queued_event *ibc_domain_rekeyed_read(struct ibc_client *cl,
							const Rdmab__Event *ev)
{
	return ibc_queue_event(cl, IBC_EVENT_DOMAIN_REKEYED,
			       ev->domain_rekeyed->reason, NULL);
}

static void ibc_domain_rekeyed_after(struct ibc_client *cl,
				     const struct ibc_event *ev)
{
	ibc_ctx_rekeyed(cl, ev->object_id);
}

const struct ibc_event_handler ibc_domain_rekeyed_event = {
	.body = RDMAB__EVENT__BODY_DOMAIN_REKEYED,
	.read = ibc_domain_rekeyed_read,
	.after = ibc_domain_rekeyed_after,
};
