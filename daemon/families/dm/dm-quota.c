// SPDX-License-Identifier: MIT
/*
 * The DM family's quota (dm.h): a domain's dm_bytes on each device (a
 * percent of its memory, or bytes), and in a configured domain each member
 * uid's share of it, persistent DMs of its dead processes included. The
 * counts are charges (charge.c): the pool's under the family's quota, a
 * member's in its usage.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "daemon/families/dm/dm-conf.h"
#include "daemon/families/dm/dm.h"
#include "daemon/registry/charge.h"
#include "daemon/registry/core.h"
#include "daemon/registry/domain.h"
#include "daemon/util/why.h"

struct dm_domain *dm_domain_of(const struct domain *d)
{
	return d->family_slot[FAMILY_DM];
}

int dm_domain_init(struct domain *d)
{
	struct dm_domain *dd = calloc(1, sizeof(*dd));

	if (!dd)
		return -ENOMEM;
	TAILQ_INIT(&dd->dms);
	TAILQ_INIT(&dd->usages);
	d->family_slot[FAMILY_DM] = dd;
	return 0;
}

/* The domain goes with its last member and context, so with its DMs and
 * their charges: nothing is left to free but the lists' heads. */
void dm_domain_fini(struct domain *d)
{
	free(d->family_slot[FAMILY_DM]);
	d->family_slot[FAMILY_DM] = NULL;
}

uint64_t dm_quota_limit(const struct domain *d, const struct device *dev)
{
	const struct quota *q = &domain_pool((struct domain *)d)->limit;

	return dm_conf_bytes(q->family[FAMILY_DM][DM_LIMIT_BYTES],
			     (uint32_t)q->family[FAMILY_DM][DM_LIMIT_PCT],
			     dev->caps.max_dm_size);
}

uint64_t dm_quota_limit_shown(const struct core *core, const struct domain *d)
{
	uint64_t max = 0;

	if (!d->limit.family[FAMILY_DM][DM_LIMIT_PCT])
		return d->limit.family[FAMILY_DM][DM_LIMIT_BYTES];
	for (size_t i = 0; i < core->devices.n; i++) {
		const struct device *dev = &core->devices.dev[i];

		if (!dev->removed && dm_quota_limit(d, dev) > max)
			max = dm_quota_limit(d, dev);
	}
	return max;
}

static struct dm_usage *dm_usage_of(struct domain *d, uid_t uid)
{
	struct dm_usage *u;

	TAILQ_FOREACH(u, &dm_domain_of(d)->usages, link)
		if (u->uid == uid)
			return u;
	return NULL;
}

/* What uid @uid holds of @pool's device memory, and the most it may:
 * its share of @limit, the pool's quota on the device. */
static uint64_t dm_quota_share(struct domain *pool, uid_t uid, uint64_t limit,
			       uint64_t *ret_held)
{
	struct dm_usage *u = dm_usage_of(pool, uid);

	*ret_held = u ? u->dm_bytes : 0;
	return dm_conf_bytes(
		0,
		(uint32_t)pool->limit.family[FAMILY_DM][DM_LIMIT_MEMBER_SHARE],
		limit);
}

int dm_quota_room(struct domain *d, uid_t uid, const struct device *dev,
		  uint64_t length, uint64_t rounded, struct why *why)
{
	struct domain *pool = domain_pool(d);
	uint64_t limit = dm_quota_limit(pool, dev), share, held;
	uint64_t used = charge_used(pool, CHARGE_OF(FAMILY_DM));

	if (rounded > limit || used > limit - rounded)
		return why_set(
			why, -EDQUOT,
			"domain %s: a DM of %" PRIu64 " bytes "
			"reserves %" PRIu64 " (whole pages); %" PRIu64
			" of its dm_bytes quota of %" PRIu64 " on %s are in "
			"use",
			pool->name, length, rounded, used, limit, dev->name);
	/* A uid's own domain is its alone; a named one is shared. */
	if (pool->kind != DOMAIN_CONFIGURED)
		return 0;
	share = dm_quota_share(pool, uid, limit, &held);
	if (rounded <= share && held <= share - rounded)
		return 0;
	return why_set(
		why, -EDQUOT,
		"domain %s: uid %u holds %" PRIu64 " bytes of its "
		"device memory, persistent DMs included, and one "
		"member may hold %u%% of its dm_bytes quota on %s, "
		"%" PRIu64 " bytes (dm_member_share): a DM of %" PRIu64
		" bytes does not fit",
		pool->name, uid, held,
		(uint32_t)pool->limit.family[FAMILY_DM][DM_LIMIT_MEMBER_SHARE],
		dev->name, share, length);
}

uint64_t dm_quota_free(struct domain *d, uid_t uid, const struct device *dev)
{
	struct domain *pool = domain_pool(d);
	uint64_t limit = dm_quota_limit(pool, dev), share, held, room;
	uint64_t used = charge_used(pool, CHARGE_OF(FAMILY_DM));

	room = limit > used ? limit - used : 0;
	if (pool->kind != DOMAIN_CONFIGURED)
		return room;
	share = dm_quota_share(pool, uid, limit, &held);
	share = share > held ? share - held : 0;
	return share < room ? share : room;
}

int dm_quota_charge(struct domain *d, uid_t uid, uint64_t bytes)
{
	struct domain *pool = domain_pool(d);
	struct dm_usage *u = NULL;

	if (pool->kind == DOMAIN_CONFIGURED) {
		u = dm_usage_of(pool, uid);
		if (!u) {
			u = calloc(1, sizeof(*u));
			if (!u)
				return -ENOMEM;
			u->uid = uid;
			TAILQ_INSERT_TAIL(&dm_domain_of(pool)->usages, u, link);
		}
		charge_add_u64(&u->dm_bytes, bytes, "a member's dm_bytes");
	}
	charge_add(pool, CHARGE_OF(FAMILY_DM), bytes);
	return 0;
}

void dm_quota_uncharge(struct domain *d, uid_t uid, uint64_t bytes,
		       uint64_t pool_bytes)
{
	struct domain *pool = domain_pool(d);
	struct dm_usage *u = dm_usage_of(pool, uid);
	uint64_t none = 0;

	charge_sub(pool, CHARGE_OF(FAMILY_DM), pool_bytes);
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
		TAILQ_REMOVE(&dm_domain_of(pool)->usages, u, link);
		free(u);
	}
}
