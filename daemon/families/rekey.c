// SPDX-License-Identifier: MIT
/*
 * Domain rekey (rekey.h): by an administrator (DomainRekeyRequest, evict
 * --rekey), or by the broker when a context's unaccounted objects reach
 * auto_rekey_unaccounted.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "daemon/registry/client.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/domain.h"
#include "daemon/util/log.h"
#include "daemon/families/rekey.h"
#include "daemon/registry/core.h"
#include "daemon/registry/journal-sink.h"
#include "daemon/registry/unaccounted.h"

/* The sessions that hold context arg open, and not on their way out. */
static bool rekey_event_filter(struct client *c, Rdmab__Event *ev, void *arg)
{
	const struct dctx *x = arg;

	return c->core->ops->is_open(c) && dctx_conn_find(c, x->id) != NULL;
}

static void rekey_notify(struct core *core, struct dctx *x, const char *who)
{
	Rdmab__DomainRekeyedEvent body = RDMAB__DOMAIN_REKEYED_EVENT__INIT;
	Rdmab__Event ev = RDMAB__EVENT__INIT;
	char reason[400];

	snprintf(reason, sizeof(reason),
		 "domain %s was rekeyed (%s): context %" PRIu64 " on %s is "
		 "replaced; close it and open the device again",
		 x->domain->name, who, x->id, x->dev->name);
	body.domain = x->domain->name;
	body.reason = reason;
	ev.object_kind = IBC_OBJ_CONTEXT;
	ev.object_id = x->id;
	ev.body_case = RDMAB__EVENT__BODY_DOMAIN_REKEYED;
	ev.domain_rekeyed = &body;
	core->ops->broadcast(core, &ev, rekey_event_filter, x);
}

/* "2 DMs and 1 RSS tables": what each family's rekey_force destroyed. */
static const char *rekey_forced_text(const unsigned int *forced, char *buf,
				     size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (unsigned int f = 0; f < FAMILY_COUNT; f++) {
		int k;

		if (!families[f]->rekey_force)
			continue;
		k = snprintf(buf + at, len - at, "%s%u %s", at ? " and " : "",
			     forced[f], families[f]->rekey_noun);
		if (k < 0 || (size_t)k >= len - at)
			break;
		at += (size_t)k;
	}
	return buf;
}

int rekey_domain(struct core *core, struct domain *d, bool force,
		 const char *who, struct why *why, Rdmab__DomainRekeyReply *out)
{
	struct dctx *olds[REKEY_MAX_CTXS];
	unsigned int n = 0, busy = 0, forced[FAMILY_COUNT] = { 0 };
	/* With the rest of the sentence, it fits a reply's 256 bytes. */
	char names[112] = "";
	char tally[128];
	struct dctx *x;

	TAILQ_FOREACH(x, &d->ctxs, link)
		if (!x->rekeyed && n < REKEY_MAX_CTXS)
			olds[n++] = x;
	for (unsigned int i = 0; i < n; i++)
		for (unsigned int f = 0; f < FAMILY_COUNT; f++)
			if (families[f]->rekey_busy)
				busy += families[f]->rekey_busy(
					core, olds[i], names, sizeof(names));
	if (busy && !force)
		return why_set(why, -EBUSY,
			       "domain %s holds %u objects the broker "
			       "made, which cannot move to a new context "
			       "(--force destroys them): %s",
			       d->name, busy, names);
	/* Held: the forced destroys and the retire let go of records, and
	 * the last would free a context that no session holds, and the
	 * domain with it, before its members are told. */
	for (unsigned int i = 0; i < n; i++)
		dctx_obj_hold(olds[i]);
	for (unsigned int i = 0; i < n; i++) {
		char reason[160];

		snprintf(reason, sizeof(reason),
			 "domain %s was rekeyed with --force (%s)", d->name,
			 who);
		for (unsigned int f = 0; busy && f < FAMILY_COUNT; f++)
			if (families[f]->rekey_force)
				forced[f] += families[f]->rekey_force(
					core, olds[i], reason);
		dctx_retire(core, olds[i]);
		if (out)
			out->old_context_ids[out->n_old_context_ids++] =
				olds[i]->id;
	}
	d->rekeys++;
	sink_domain_saved(core, d);
	if (busy)
		log_notice("domain %s rekeyed (%s): %u contexts replaced; "
			   "forced: %s destroyed",
			   d->name, who, n,
			   rekey_forced_text(forced, tally, sizeof(tally)));
	else
		log_notice("domain %s rekeyed (%s): %u contexts replaced",
			   d->name, who, n);
	for (unsigned int f = 0; out && f < FAMILY_COUNT; f++)
		if (families[f]->rekey_force)
			*(uint32_t *)((char *)out +
				      families[f]->rekey_reply_field) =
				forced[f];
	for (unsigned int i = 0; i < n; i++)
		rekey_notify(core, olds[i], who);
	for (unsigned int i = 0; i < n; i++)
		dctx_obj_release(core, olds[i]);
	return 0;
}

/* --- automatic ------------------------------------------------------------ */

/* A context of @d at or past its threshold; NULL when none. */
static struct dctx *rekey_due(struct domain *d)
{
	uint32_t at = d->limit.auto_rekey_unaccounted;
	struct dctx *x;

	if (!at)
		return NULL;
	TAILQ_FOREACH(x, &d->ctxs, link)
		if (!x->rekeyed && x->unaccounted >= at)
			return x;
	return NULL;
}

static void rekey_auto_cb(evutil_socket_t fd, short what, void *arg)
{
	struct core *core = arg;
	struct domain *d;
	struct dctx *x;

	(void)fd;
	(void)what;
	/* Counts left to refresh: a verbs importer's session ended. */
	unaccounted_refresh_stale(core);
	/* A rekey may free a domain (its last context closes): look again
	 * from the start after each (a rekeyed context is not due). A
	 * refusal changes nothing. */
again:
	TAILQ_FOREACH(d, &core->domains, link) {
		struct why why = { 0, "" };
		char who[96];

		x = rekey_due(d);
		if (!x)
			continue;
		snprintf(who, sizeof(who),
			 "automatic: %u unaccounted objects in context "
			 "%" PRIu64,
			 x->unaccounted, x->id);
		if (rekey_domain(core, d, false, who, &why, NULL) == 0)
			goto again;
		if (!x->auto_rekey_refused)
			log_warn("domain %s: no automatic rekey: %s", d->name,
				 why.text);
		x->auto_rekey_refused = true;
	}
}

int rekey_init(struct core *core)
{
	core->rekey_ev = evtimer_new(core->base, rekey_auto_cb, core);
	return core->rekey_ev ? 0 : -ENOMEM;
}

void rekey_fini(struct core *core)
{
	if (core->rekey_ev)
		event_free(core->rekey_ev);
	core->rekey_ev = NULL;
}
