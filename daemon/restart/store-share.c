// SPDX-License-Identifier: MIT
/*
 * Each uid's share of the fd store (store-share.h): a table of the uids
 * holding places, a uid leaving it with its last place. Few uids hold
 * places at once, and a place is taken at a name's or a DM's making, not
 * per request: a walk of the table is enough.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon/registry/charge.h"
#include "daemon/restart/store-share.h"
#include "daemon/util/array.h"

struct share_uid {
	uint32_t uid;
	unsigned int store_places;
};

struct store_share {
	struct share_uid *uids;
	unsigned int n, share;
	size_t cap;
};

int store_share_new(unsigned int share, struct store_share **ret)
{
	struct store_share *sh = calloc(1, sizeof(*sh));

	if (!sh)
		return -ENOMEM;
	sh->share = share;
	*ret = sh;
	return 0;
}

void store_share_free(struct store_share *sh)
{
	if (!sh)
		return;
	free(sh->uids);
	free(sh);
}

static struct share_uid *share_find(const struct store_share *sh, uint32_t uid)
{
	for (unsigned int i = 0; i < sh->n; i++)
		if (sh->uids[i].uid == uid)
			return &sh->uids[i];
	return NULL;
}

unsigned int store_share_places(const struct store_share *sh, uint32_t uid)
{
	const struct share_uid *u = sh ? share_find(sh, uid) : NULL;

	return u ? u->store_places : 0;
}

int store_share_room(const struct store_share *sh, uint32_t uid)
{
	if (sh && store_share_places(sh, uid) >= sh->share)
		return -EDQUOT;
	return 0;
}

/* fdstore_books take: one more place for @uid, over its share too when
 * charged @over it (fdstore_put_for()). */
static int share_take(void *arg, uint32_t uid, bool over)
{
	struct store_share *sh = arg;
	struct share_uid *u;

	if (!over && store_share_room(sh, uid) < 0)
		return -EDQUOT;
	u = share_find(sh, uid);
	if (!u) {
		if (array_grow(&sh->uids, &sh->cap, (size_t)sh->n + 1,
			       sizeof(*sh->uids), 16) < 0)
			return -ENOMEM;
		u = &sh->uids[sh->n++];
		*u = (struct share_uid){ .uid = uid };
	}
	charge_add_uint(&u->store_places, 1, "a uid's places in the fd store");
	return 0;
}

static void share_give(void *arg, uint32_t uid)
{
	struct store_share *sh = arg;
	struct share_uid *u = share_find(sh, uid);
	unsigned int none = 0;
	char whose[24];

	snprintf(whose, sizeof(whose), "uid %u", (unsigned int)uid);
	/* A place nobody charged: logged and counted as a bug. */
	if (!u) {
		charge_sub_uint(&none, 1, "places in the fd store", whose);
		return;
	}
	charge_sub_uint(&u->store_places, 1, "places in the fd store", whose);
	if (!u->store_places)
		*u = sh->uids[--sh->n];
}

struct fdstore_books store_share_books(struct store_share *sh)
{
	return (struct fdstore_books){ .take = share_take,
				       .give = share_give,
				       .arg = sh };
}
