// SPDX-License-Identifier: MIT
/*
 * Joining a domain (domain-join.h): at hello a client joins a configured
 * domain, its uid's own (or its uid's in its cgroup) or a private one, and
 * leaves it with its session. A member is a charge on the domain's clients
 * quota, so this sits above the charges, which sit above the domains.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/registry/cgroup.h"
#include "daemon/registry/charge.h"
#include "daemon/registry/client.h"
#include "daemon/registry/core.h"
#include "daemon/registry/domain-join.h"
#include "daemon/registry/domain.h"
#include "daemon/util/why.h"

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

/* A new cgroup domain @name of @uid for the @len bytes of @key; NULL
 * without memory. */
static struct domain *domain_cgroup_new(struct core *core, const char *name,
					uid_t uid, const char *key, size_t len)
{
	struct domain *d = domain_new(core, name, DOMAIN_CGROUP, NULL);

	if (d)
		d->cgroup = strndup(key, len);
	if (!d || !d->cgroup) {
		if (d)
			domain_release(core, d);
		return NULL;
	}
	d->uid = uid;
	return d;
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
	d = domain_cgroup_new(core, name, c->cred.uid, c->cgroup, len);
	if (!d)
		return why_set(why, -ENOMEM, "out of memory");
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

/* A private domain @name of @uid drawing on @pool's quotas; NULL without
 * memory (@pool released then). */
static struct domain *domain_private_new(struct core *core, const char *name,
					 uid_t uid, struct domain *pool)
{
	struct domain *d = domain_new(core, name, DOMAIN_PRIVATE, NULL);

	if (!d) {
		domain_release(core, pool);
		return NULL;
	}
	d->uid = uid;
	d->pool = pool;
	pool->pooled++;
	return d;
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
		d = domain_private_new(core, name, c->cred.uid, pool);
		if (!d)
			return why_set(why, -ENOMEM, "out of memory");
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

int domain_rejoin(struct core *core, struct client *c, const char *name,
		  enum domain_kind kind, const char *pool_name, struct why *why)
{
	/* With per = cgroup: the cgroup's own, a private domain's pool. */
	const char *own = kind == DOMAIN_CGROUP ? name : pool_name;
	struct domain *d = NULL;
	size_t len;
	int ret;

	if ((kind == DOMAIN_CGROUP || kind == DOMAIN_PRIVATE) &&
	    core->config.per_cgroup && c->cgroup) {
		len = domain_cgroup_key_len(core, c->cgroup);
		d = domain_find_cgroup(core, c->cred.uid, c->cgroup, len);
		if (!d && *own && !domain_find(core, own)) {
			d = domain_cgroup_new(core, own, c->cred.uid, c->cgroup,
					      len);
			if (!d)
				return why_set(why, -ENOMEM, "out of memory");
		}
	}
	/* A private one is made again on its pool, found by its cgroup
	 * now (a failed join releases the pool made for it). */
	if (!d || kind == DOMAIN_PRIVATE)
		return domain_join(core, c, kind == DOMAIN_PRIVATE ? "" : name,
				   kind == DOMAIN_PRIVATE, why);
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

/* Restore: the cgroup domain @name of @uid for cgroup @key (its own, not
 * cut), as domain_adopt() finds or makes it; NULL when it cannot be. */
static struct domain *domain_adopt_cgroup(struct core *core, const char *name,
					  uid_t uid, const char *key)
{
	struct domain *d;

	if (!*key || strncmp(name, "cgroup-", 7) != 0)
		return NULL;
	d = domain_find(core, name);
	if (d)
		return d->kind == DOMAIN_CGROUP && d->uid == uid ? d : NULL;
	d = domain_find_cgroup(core, uid, key, strlen(key));
	return d ? d : domain_cgroup_new(core, name, uid, key, strlen(key));
}

struct domain *domain_adopt(struct core *core, const char *name,
			    enum domain_kind kind, uid_t uid,
			    const char *cgroup, const char *pool_name)
{
	struct domain *d = domain_find(core, name), *pool;
	char own[64];

	/* A name the record's kind and uid would not have made is not
	 * this owner's domain. */
	if (d)
		return d->kind == kind && (kind == DOMAIN_CONFIGURED ||
					   d->uid == uid) ?
			       d :
			       NULL;
	switch (kind) {
	case DOMAIN_UID:
		snprintf(own, sizeof(own), "uid-%u", uid);
		return strcmp(name, own) == 0 ? domain_own_uid(core, uid) :
						NULL;
	case DOMAIN_CGROUP:
		return core->config.per_cgroup ?
			       domain_adopt_cgroup(core, name, uid, cgroup) :
			       NULL;
	case DOMAIN_PRIVATE:
		if (strncmp(name, "private-", 8) != 0)
			return NULL;
		/* Its pool: its uid's own, or with per = cgroup its uid's
		 * in the cgroup. */
		pool = core->config.per_cgroup ?
			       domain_adopt_cgroup(core, pool_name, uid,
						   cgroup) :
			       domain_own_uid(core, uid);
		return pool ? domain_private_new(core, name, uid, pool) : NULL;
	default:
		/* A configured one exists while the file names it. */
		return NULL;
	}
}
