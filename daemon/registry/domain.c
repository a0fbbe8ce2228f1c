// SPDX-License-Identifier: MIT
/*
 * Domains (domain.h): made and found by name, joined at hello (a
 * configured one, the uid's own, or a private one), released with their
 * last member, and their quotas on objects and device memory, per member
 * uid inside configured domains.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/families/dm/dm-conf.h"
#include "daemon/registry/cgroup.h"
#include "daemon/registry/charge.h"
#include "daemon/registry/client.h"
#include "daemon/registry/domain.h"
#include "daemon/util/log.h"
#include "daemon/registry/core.h"

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

static struct domain *domain_find(struct core *core, const char *name)
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

static struct domain *domain_new(struct core *core, const char *name,
				 enum domain_kind kind,
				 const struct config_domain *cd)
{
	struct domain *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->kind = kind;
	domain_set_limit(core, d, cd);
	d->pool = d;
	TAILQ_INIT(&d->ctxs);
	TAILQ_INIT(&d->dms);
	TAILQ_INIT(&d->members);
	TAILQ_INIT(&d->usages);
	TAILQ_INSERT_TAIL(&core->domains, d, link);
	return d;
}

void domain_release(struct core *core, struct domain *d)
{
	struct domain *pool = d->pool;

	if (d->used.clients || d->n_ctxs || d->pooled)
		return;
	/* A configured domain stays listed while the file names it. */
	if (d->kind == DOMAIN_CONFIGURED && !d->retired)
		return;
	TAILQ_REMOVE(&core->domains, d, link);
	free(d->cgroup);
	free(d);
	if (pool != d) {
		pool->pooled--;
		domain_release(core, pool);
	}
}

/* @uid's own domain, made if need be; NULL without memory. */
static struct domain *domain_own_uid(struct core *core, uid_t uid)
{
	struct domain *d;
	char own[64];

	snprintf(own, sizeof(own), "uid-%u", uid);
	d = domain_find(core, own);
	if (d)
		return d;
	d = domain_new(core, own, DOMAIN_UID, NULL);
	if (d)
		d->uid = uid;
	return d;
}

/* The cgroup domain of uid @uid for the @len bytes of @key; NULL when
 * there is none. */
/* How much of @path names its own domain (cgroup_key_len()). */
static size_t domain_cgroup_key_len(const struct core *core, const char *path)
{
	return cgroup_key_len(core->config.cgroup_pattern,
			      core->config.cgroup_depth, path);
}

static struct domain *domain_find_cgroup(struct core *core, uid_t uid,
					 const char *key, size_t len)
{
	struct domain *d;

	TAILQ_FOREACH(d, &core->domains, link)
		if (d->kind == DOMAIN_CGROUP && d->uid == uid &&
		    strlen(d->cgroup) == len &&
		    memcmp(d->cgroup, key, len) == 0)
			return d;
	return NULL;
}

/* With per = cgroup: @c's uid's domain in @c's cgroup, made if need be,
 * named after the session that made it, as a private domain is. */
static int domain_own_cgroup(struct core *core, struct client *c,
			     struct domain **ret, struct why *why)
{
	size_t len;
	struct domain *d;
	char name[64];

	if (!c->cgroup)
		return why_set(why, -EACCES,
			       "the broker gives each cgroup its own "
			       "domains (per = cgroup) and could not read "
			       "this process's cgroup v2 at connect: %s",
			       cgroup_strerror(c->cgroup_err));
	len = domain_cgroup_key_len(core, c->cgroup);
	d = domain_find_cgroup(core, c->cred.uid, c->cgroup, len);
	if (d) {
		*ret = d;
		return 0;
	}
	snprintf(name, sizeof(name), "cgroup-%u-%" PRIu64, c->cred.uid, c->id);
	d = domain_new(core, name, DOMAIN_CGROUP, NULL);
	if (d)
		d->cgroup = strndup(c->cgroup, len);
	if (!d || !d->cgroup) {
		if (d)
			domain_release(core, d);
		return why_set(why, -ENOMEM, "out of memory");
	}
	d->uid = c->cred.uid;
	*ret = d;
	return 0;
}

/* @c's own domain: its uid's, or with per = cgroup its uid's in its
 * cgroup. */
static int domain_own(struct core *core, struct client *c, struct domain **ret,
		      struct why *why)
{
	struct domain *d;

	if (core->config.per_cgroup)
		return domain_own_cgroup(core, c, ret, why);
	d = domain_own_uid(core, c->cred.uid);
	if (!d)
		return why_set(why, -ENOMEM, "out of memory");
	*ret = d;
	return 0;
}

/* Does @want name @c's own domain? With per = cgroup only the one that
 * exists does: a name cannot tell an absent one from another's. */
static bool domain_is_own(struct core *core, struct client *c, const char *want)
{
	char own[64];

	if (core->config.per_cgroup) {
		struct domain *d;

		if (!c->cgroup)
			return false;
		d = domain_find_cgroup(core, c->cred.uid, c->cgroup,
				       domain_cgroup_key_len(core, c->cgroup));
		return d && strcmp(d->name, want) == 0;
	}
	snprintf(own, sizeof(own), "uid-%u", c->cred.uid);
	return strcmp(want, own) == 0;
}

/* The domain @c gets when it names none: the first configured one it may
 * join, in file order, else its uid's own. */
static const struct config_domain *domain_pick(struct core *core,
					       struct client *c)
{
	for (size_t i = 0; i < core->config.n_domains; i++)
		if (policy_may_join(&core->config.domains[i], c))
			return &core->config.domains[i];
	return NULL;
}

static int domain_admit(struct domain *d, struct client *c, struct why *why)
{
	int err = charge_add_room(d, CHARGE_CLIENTS, 1, "", why);

	if (err < 0)
		return err;
	c->domain = d;
	TAILQ_INSERT_TAIL(&d->members, c, domain_link);
	return 0;
}

int domain_join(struct core *core, struct client *c, const char *want,
		bool private, struct why *why)
{
	const struct config_domain *cd = NULL;
	struct domain *d, *pool;
	int ret;

	if (private) {
		char name[64];

		if (*want)
			return why_set(why, -EINVAL,
				       "a private domain cannot also be "
				       "named (\"%.48s\")",
				       want);
		snprintf(name, sizeof(name), "private-%" PRIu64, c->id);
		ret = domain_own(core, c, &pool, why);
		if (ret < 0)
			return ret;
		d = domain_new(core, name, DOMAIN_PRIVATE, NULL);
		if (!d) {
			domain_release(core, pool);
			return why_set(why, -ENOMEM, "out of memory");
		}
		d->uid = c->cred.uid;
		d->pool = pool;
		pool->pooled++;
		ret = domain_admit(d, c, why);
		if (ret < 0)
			domain_release(core, d);
		return ret;
	}
	if (*want && !domain_is_own(core, c, want)) {
		/* Either answer holds whether such a domain exists or not. */
		if (core->config.per_cgroup && strncmp(want, "uid-", 4) == 0)
			return why_set(why, -EACCES,
				       "domain %.48s is a uid's own, and "
				       "this broker gives each cgroup its "
				       "own domains (per = cgroup)",
				       want);
		if (strncmp(want, "uid-", 4) == 0)
			return why_set(why, -EACCES,
				       "domain %.48s is another uid's own; "
				       "uid %u may not join it",
				       want, c->cred.uid);
		if (strncmp(want, "cgroup-", 7) == 0)
			return why_set(why, -EACCES,
				       "domain %.48s is not this process's "
				       "cgroup's own; uid %u may not join "
				       "it",
				       want, c->cred.uid);
		cd = config_find_domain(&core->config, want);
		if (!cd)
			return why_set(why, -ENOENT,
				       "domain \"%.48s\" does not exist", want);
		if (!policy_may_join(cd, c))
			return why_set(why, -EACCES,
				       "uid %u%s may not join domain %s",
				       c->cred.uid,
				       cd->n_cgroups ? " in its cgroup" : "",
				       cd->name);
	} else if (!*want) {
		cd = domain_pick(core, c);
	}
	if (cd) {
		d = domain_find(core, cd->name);
		if (!d)
			return why_set(why, -EIO,
				       "domain %s is configured but not "
				       "set up",
				       cd->name);
		return domain_admit(d, c, why);
	}
	ret = domain_own(core, c, &d, why);
	if (ret < 0)
		return ret;
	ret = domain_admit(d, c, why);
	if (ret < 0)
		domain_release(core, d);
	return ret;
}

void domain_leave(struct core *core, struct client *c)
{
	struct domain *d = c->domain;

	if (!d)
		return;
	charge_sub(d, CHARGE_CLIENTS, 1);
	TAILQ_REMOVE(&d->members, c, domain_link);
	c->domain = NULL;
	domain_release(core, d);
}

int domain_room_objects(struct domain *d, uint32_t n, const char *clause,
			struct why *why)
{
	return charge_room(d, CHARGE_OBJECTS, n, clause, why);
}

int domain_charge_objects(struct domain *d, uint32_t n, struct why *why)
{
	return charge_add_room(d, CHARGE_OBJECTS, n, "", why);
}

void domain_uncharge_objects(struct domain *d, uint32_t n)
{
	charge_sub(d, CHARGE_OBJECTS, n);
}

uint64_t domain_dm_limit(const struct domain *d, const struct device *dev)
{
	const struct quota *q = &domain_pool((struct domain *)d)->limit;

	return dm_conf_bytes(q->dm_bytes, q->dm_pct, dev->caps.max_dm_size);
}

uint64_t domain_dm_limit_shown(const struct core *core, const struct domain *d)
{
	uint64_t max = 0;

	if (!d->limit.dm_pct)
		return d->limit.dm_bytes;
	for (size_t i = 0; i < core->devices.n; i++) {
		const struct device *dev = &core->devices.dev[i];

		if (!dev->removed && domain_dm_limit(d, dev) > max)
			max = domain_dm_limit(d, dev);
	}
	return max;
}

static struct domain_usage *domain_usage_of(struct domain *d, uid_t uid)
{
	struct domain_usage *u;

	TAILQ_FOREACH(u, &d->usages, link)
		if (u->uid == uid)
			return u;
	return NULL;
}

/* What uid @uid holds of @pool's device memory, and the most it may:
 * its share of @limit, the pool's quota on the device. */
static uint64_t domain_dm_share(struct domain *pool, uid_t uid, uint64_t limit,
				uint64_t *ret_held)
{
	struct domain_usage *u = domain_usage_of(pool, uid);

	*ret_held = u ? u->dm_bytes : 0;
	return dm_conf_bytes(0, pool->limit.dm_member_share, limit);
}

int domain_dm_room(struct domain *d, uid_t uid, const struct device *dev,
		   uint64_t length, uint64_t rounded, struct why *why)
{
	struct domain *pool = domain_pool(d);
	uint64_t limit = domain_dm_limit(pool, dev), share, held;

	if (rounded > limit || pool->used.dm_bytes > limit - rounded)
		return why_set(why, -EDQUOT,
			       "domain %s: a DM of %" PRIu64 " bytes "
			       "reserves %" PRIu64 " (whole pages); %" PRIu64
			       " of its dm_bytes quota of %" PRIu64
			       " on %s are in "
			       "use",
			       pool->name, length, rounded, pool->used.dm_bytes,
			       limit, dev->name);
	/* A uid's own domain is its alone; a named one is shared. */
	if (pool->kind != DOMAIN_CONFIGURED)
		return 0;
	share = domain_dm_share(pool, uid, limit, &held);
	if (rounded <= share && held <= share - rounded)
		return 0;
	return why_set(why, -EDQUOT,
		       "domain %s: uid %u holds %" PRIu64 " bytes of its "
		       "device memory, persistent DMs included, and one "
		       "member may hold %u%% of its dm_bytes quota on %s, "
		       "%" PRIu64 " bytes (dm_member_share): a DM of %" PRIu64
		       " bytes does not fit",
		       pool->name, uid, held, pool->limit.dm_member_share,
		       dev->name, share, length);
}

uint64_t domain_dm_free(struct domain *d, uid_t uid, const struct device *dev)
{
	struct domain *pool = domain_pool(d);
	uint64_t limit = domain_dm_limit(pool, dev), share, held, room;

	room = limit > pool->used.dm_bytes ? limit - pool->used.dm_bytes : 0;
	if (pool->kind != DOMAIN_CONFIGURED)
		return room;
	share = domain_dm_share(pool, uid, limit, &held);
	share = share > held ? share - held : 0;
	return share < room ? share : room;
}

int domain_charge_dm(struct domain *d, uid_t uid, uint64_t bytes)
{
	struct domain *pool = domain_pool(d);
	struct domain_usage *u = NULL;

	if (pool->kind == DOMAIN_CONFIGURED) {
		u = domain_usage_of(pool, uid);
		if (!u) {
			u = calloc(1, sizeof(*u));
			if (!u)
				return -ENOMEM;
			u->uid = uid;
			TAILQ_INSERT_TAIL(&pool->usages, u, link);
		}
		charge_add_u64(&u->dm_bytes, bytes, "a member's dm_bytes");
	}
	charge_add(pool, CHARGE_DM_BYTES, bytes);
	return 0;
}

void domain_uncharge_dm(struct domain *d, uid_t uid, uint64_t bytes,
			uint64_t pool_bytes)
{
	struct domain *pool = domain_pool(d);
	struct domain_usage *u = domain_usage_of(pool, uid);
	uint64_t none = 0;

	charge_sub(pool, CHARGE_DM_BYTES, pool_bytes);
	if (!u) {
		/* Only a configured domain keeps usages: there, none is
		 * one given back that was never charged. */
		if (pool->kind == DOMAIN_CONFIGURED)
			charge_sub_u64(&none, bytes, "a member's dm_bytes",
				       pool->name);
		return;
	}
	charge_sub_u64(&u->dm_bytes, bytes, "a member's dm_bytes", pool->name);
	if (!u->dm_bytes) {
		TAILQ_REMOVE(&pool->usages, u, link);
		free(u);
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

	while ((d = TAILQ_FIRST(&core->domains))) {
		TAILQ_REMOVE(&core->domains, d, link);
		free(d->cgroup);
		free(d);
	}
}
