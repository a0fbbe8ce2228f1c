/* SPDX-License-Identifier: MIT */
/*
 * Domains: sets of clients that trust each other and share one context per
 * device. Every uid has its own by default; rdmabroker.conf defines named
 * ones; a client may ask for a private one.
 */
#ifndef RDMAB_DOMAIN_H
#define RDMAB_DOMAIN_H

#include <stdbool.h>
#include <stdint.h>
#include "daemon/util/queue.h"
#include <sys/types.h>

#include "daemon/config/conf.h"
#include "daemon/families/family.h"

struct core;
struct client;
struct dctx;
struct why;

enum domain_kind {
	DOMAIN_UID,
	DOMAIN_CONFIGURED,
	DOMAIN_PRIVATE,
	/* [defaults] per = cgroup: a uid's own domain in one cgroup (or
	 * the ancestor cgroup_depth or cgroup_pattern names). */
	DOMAIN_CGROUP,
};

/* A domain's quotas: its limits and what it uses of them (charge.c). */
/* The most numbers one family's limits take in a domain. */
#define QUOTA_FAMILY_WORDS 3

struct quota {
	/* Each family's limits, filled by its domain_limit hook from its
	 * keys and read by that family alone: what each word means is the
	 * family's (its header names them). */
	uint64_t family[FAMILY_COUNT][QUOTA_FAMILY_WORDS];
	uint32_t objects;
	uint32_t clients;
	/* Not a quota: rekey the domain once one of its contexts counts
	 * this many unaccounted objects; 0 is off (rekey.c). */
	uint32_t auto_rekey_unaccounted;
};

struct domain {
	TAILQ_ENTRY(domain) link;
	char name[64];
	enum domain_kind kind;
	uid_t uid;
	/* DOMAIN_CGROUP: the cgroup (a path) whose clients of uid it
	 * holds. NULL for the other kinds. */
	char *cgroup;
	struct quota limit;
	/* What it holds of each quota (charge.c's counts): used.clients
	 * counts members; used.family[id] each family's quota
	 * (CHARGE_OF(id)). */
	struct {
		uint32_t objects, clients;
		uint64_t family[FAMILY_COUNT];
	} used;
	/* Requests its members made. */
	uint64_t requests;
	/* Removed from the configuration: keeps its clients until they
	 * leave, takes no new ones. */
	bool retired;
	/* Whose objects and family quotas this domain draws on: its own, or for
	 * a private domain those of its uid's own domain, so that a uid's
	 * private domains do not multiply them. pooled: the private domains
	 * drawing on this one. */
	struct domain *pool;
	unsigned int pooled;
	TAILQ_HEAD(, dctx) ctxs;
	unsigned int n_ctxs;
	/* Its clients (conn.domain_link). */
	TAILQ_HEAD(, client) members;
	/* What each family keeps of the domain, by enum family_id: made by
	 * its domain_init hook with the domain, freed by its domain_fini
	 * (family.h); NULL for a family that keeps nothing. */
	void *family_slot[FAMILY_COUNT];
	/* Rekey (rekey.c): rekeys so far. */
	uint64_t rekeys;
};

const char *domain_kind_name(enum domain_kind kind);

/* The domain named @name; NULL when there is none. */
struct domain *domain_find(struct core *core, const char *name);
/* A new domain of @kind with the limits of @cd (a configured domain's
 * keys; NULL: [defaults]'), listed in @core; NULL without memory. Its
 * own pool. */
struct domain *domain_new(struct core *core, const char *name,
			  enum domain_kind kind,
			  const struct config_domain *cd);
/* Free @d if it has no members, no contexts and nothing keeps it. */
void domain_release(struct core *core, struct domain *d);

/* Apply core->config: create configured domains, update quotas, retire the
 * removed ones. */
void domains_configure(struct core *core);
/* Free every domain (daemon exit): their contexts are gone
 * (dctx_close_all()). */
void domains_free(struct core *core);

/* The domain whose resource quotas @d's members spend (domain.pool). */
static inline struct domain *domain_pool(struct domain *d)
{
	return d->pool;
}

/* Policy (policy.c). */
bool policy_may_join(const struct config_domain *d, const struct client *c);
bool policy_is_admin(const struct core *core, const struct client *c);

#endif
