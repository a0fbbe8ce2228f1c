// SPDX-License-Identifier: MIT
/*
 * Domains (domain.h): made and found by name, released with their last
 * member, and set to the configuration's quotas. Joining and leaving are
 * domain-join.c's (a member is a charge, and the charges sit above the
 * domains); the quotas' counts are charge.c's.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/registry/client.h"
#include "daemon/registry/domain.h"
#include "daemon/util/log.h"
#include "daemon/registry/core.h"
#include "daemon/registry/journal-sink.h"

const char *domain_kind_name(enum domain_kind kind)
{
	switch (kind) {
	case DOMAIN_UID:
		return "uid";
	case DOMAIN_CONFIGURED:
		return "configured";
	case DOMAIN_CGROUP:
		return "cgroup";
	default:
		return "private";
	}
}

struct domain *domain_find(struct core *core, const char *name)
{
	struct domain *d;

	TAILQ_FOREACH(d, &core->domains, link)
		if (strcmp(d->name, name) == 0)
			return d;
	return NULL;
}

/* @d's limits from the configuration: @cd's keys (a configured domain),
 * or [defaults]' for @cd NULL; the families set theirs. */
static void domain_set_limit(const struct core *core, struct domain *d,
			     const struct config_domain *cd)
{
	const struct config_quota *q = cd ? &cd->quota : &core->config.defaults;

	d->limit.objects = q->objects;
	d->limit.clients = q->clients;
	d->limit.auto_rekey_unaccounted = q->auto_rekey_unaccounted;
	for (unsigned int id = 0; id < FAMILY_COUNT; id++)
		if (families[id]->domain_limit)
			families[id]->domain_limit(&core->config, cd,
						   &d->limit);
}

/* The families let go of what they keep of @d, in reverse order. */
static void domain_families_fini(struct domain *d, unsigned int n)
{
	while (n-- > 0)
		if (families[n]->domain_fini)
			families[n]->domain_fini(d);
}

struct domain *domain_new(struct core *core, const char *name,
			  enum domain_kind kind, const struct config_domain *cd)
{
	struct domain *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	for (unsigned int i = 0; i < FAMILY_COUNT; i++)
		if (families[i]->domain_init &&
		    families[i]->domain_init(d) < 0) {
			domain_families_fini(d, i);
			free(d);
			return NULL;
		}
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->kind = kind;
	domain_set_limit(core, d, cd);
	d->pool = d;
	TAILQ_INIT(&d->ctxs);
	TAILQ_INIT(&d->members);
	TAILQ_INSERT_TAIL(&core->domains, d, link);
	return d;
}

/* Free @d, out of every list. */
static void domain_free(struct core *core, struct domain *d)
{
	TAILQ_REMOVE(&core->domains, d, link);
	domain_families_fini(d, FAMILY_COUNT);
	free(d->cgroup);
	free(d);
}

void domain_release(struct core *core, struct domain *d)
{
	struct domain *pool = d->pool;

	if (d->used.clients || d->n_ctxs || d->pooled)
		return;
	/* A configured domain stays listed while the file names it. */
	if (d->kind == DOMAIN_CONFIGURED && !d->retired)
		return;
	sink_domain_gone(core, d);
	domain_free(core, d);
	if (pool != d) {
		pool->pooled--;
		domain_release(core, pool);
	}
}
void domains_configure(struct core *core)
{
	struct domain *d, *tmp;

	TAILQ_FOREACH_SAFE(d, &core->domains, link, tmp) {
		const struct config_domain *cd;

		if (d->kind != DOMAIN_CONFIGURED) {
			domain_set_limit(core, d, NULL);
			continue;
		}
		cd = config_find_domain(&core->config, d->name);
		if (cd) {
			domain_set_limit(core, d, cd);
			d->retired = false;
			continue;
		}
		if (!d->retired)
			log_notice("domain %s was removed from the "
				   "configuration; it keeps its %u clients "
				   "until they leave",
				   d->name, d->used.clients);
		d->retired = true;
		domain_release(core, d);
	}
	for (size_t i = 0; i < core->config.n_domains; i++) {
		const struct config_domain *cd = &core->config.domains[i];

		if (!domain_find(core, cd->name) &&
		    !domain_new(core, cd->name, DOMAIN_CONFIGURED, cd))
			log_err("domain %s: out of memory", cd->name);
	}
}

void domains_free(struct core *core)
{
	struct domain *d;

	while ((d = TAILQ_FIRST(&core->domains)))
		domain_free(core, d);
}
