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
#include "daemon/queue.h"
#include <sys/types.h>

#include "daemon/conf.h"

struct server;
struct conn;
struct dctx;
struct reply;

enum domain_kind {
	DOMAIN_UID,
	DOMAIN_CONFIGURED,
	DOMAIN_PRIVATE,
};

struct domain {
	TAILQ_ENTRY(domain) link;
	char name[64];
	enum domain_kind kind;
	uid_t uid;
	struct quota limit;
	/* used.clients counts members. */
	struct quota used;
	/* Requests its members made. */
	uint64_t requests;
	/* Removed from the configuration: keeps its clients until they
	 * leave, takes no new ones. */
	bool retired;
	/* Whose dm_bytes, xrcds, rss_tables and objects quotas this domain
	 * draws on: its own, or for a private domain those of its uid's own
	 * domain, so that a uid's private domains do not multiply them.
	 * pooled: the private domains drawing on this one. */
	struct domain *pool;
	unsigned int pooled;
	TAILQ_HEAD(, dctx) ctxs;
	unsigned int n_ctxs;
	/* Its DMs (dm.domain_link) and its clients (conn.domain_link). */
	TAILQ_HEAD(, dm) dms;
	TAILQ_HEAD(, conn) members;
	/* Rekey (rekey.c): rekeys so far. */
	uint64_t rekeys;
};

TAILQ_HEAD(domain_list, domain);

const char *domain_kind_name(enum domain_kind kind);

/*
 * Put @c in a domain: @want names one (or is empty), @private asks for a
 * context of its own. On refusal the reply says why.
 */
int domain_join(struct server *srv, struct conn *c, const char *want,
		bool private, struct reply *r);
/* Take @c out of its domain; frees the domain when nothing is left. */
void domain_leave(struct server *srv, struct conn *c);
/* Free @d if it has no members, no contexts and nothing keeps it. */
void domain_release(struct server *srv, struct domain *d);

/* Apply srv->config: create configured domains, update quotas, retire the
 * removed ones. */
void domains_configure(struct server *srv);
void domains_free(struct server *srv);

/* The domain whose resource quotas @d's members spend (domain.pool). */
static inline struct domain *domain_pool(struct domain *d)
{
	return d->pool;
}

/* Whether @d's pool has room for @n more objects: -EDQUOT otherwise, with
 * a sentence in @r that ends with @why (a clause of the caller's, or ""). */
int domain_room_objects(struct domain *d, uint32_t n, const char *why,
			struct reply *r);
/* Charge @n objects to @d; -EDQUOT with a sentence in @r when over. */
int domain_charge_objects(struct domain *d, uint32_t n, struct reply *r);
void domain_uncharge_objects(struct domain *d, uint32_t n);

/* Policy (policy.c). */
bool policy_may_join(const struct config_domain *d, const struct conn *c);
bool policy_is_admin(const struct server *srv, const struct conn *c);

#endif
