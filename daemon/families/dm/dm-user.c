// SPDX-License-Identifier: MIT
/*
 * What the DM family counts of each uid (dm.h's struct dm_user, the user
 * record's family slot): its sessions' DM status pages and its persistent
 * DMs, charged and given back exactly once, across the domains it joins.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "daemon/families/dm/dm.h"
#include "daemon/registry/charge.h"
#include "daemon/registry/core.h"
#include "daemon/registry/user.h"

struct dm_user *dm_user_of(const struct user *u)
{
	return u->family_slot[FAMILY_DM];
}

int dm_user_init(struct user *u)
{
	struct dm_user *du = calloc(1, sizeof(*du));

	if (!du)
		return -ENOMEM;
	u->family_slot[FAMILY_DM] = du;
	return 0;
}

/* A persistent DM holds a reference to its uid, a page its session's: by
 * the last reference nothing is counted here. */
void dm_user_fini(struct user *u)
{
	free(u->family_slot[FAMILY_DM]);
	u->family_slot[FAMILY_DM] = NULL;
}

int dm_user_charge_page(struct core *core, struct user *u, bool exempt)
{
	struct dm_user *du = dm_user_of(u);

	if (!exempt && du->dm_pages >= core->config.limits.connections_per_uid)
		return -EDQUOT;
	charge_add_uint(&du->dm_pages, 1, "a uid's DM pages");
	return 0;
}

void dm_user_uncharge_page(struct user *u)
{
	struct dm_user *du = dm_user_of(u);
	char whose[24] = "";

	/* Whose it is is written for an underflow's log line only. */
	if (!du->dm_pages)
		user_whose(u, whose, sizeof(whose));
	charge_sub_uint(&du->dm_pages, 1, "DM pages", whose);
}

void dm_user_charge_persistent(struct user *u, uint64_t bytes)
{
	struct dm_user *du = dm_user_of(user_ref(u));

	charge_add_uint(&du->dm_persistent, 1, "a uid's persistent DMs");
	charge_add_u64(&du->dm_persistent_bytes, bytes,
		       "a uid's persistent DM bytes");
}

void dm_user_uncharge_persistent(struct core *core, struct user *u,
				 uint64_t bytes)
{
	struct dm_user *du = dm_user_of(u);
	char whose[24];

	user_whose(u, whose, sizeof(whose));
	charge_sub_uint(&du->dm_persistent, 1, "persistent DMs", whose);
	charge_sub_u64(&du->dm_persistent_bytes, bytes, "persistent DM bytes",
		       whose);
	user_unref(core, u);
}
