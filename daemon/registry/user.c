// SPDX-License-Identifier: MIT
/*
 * Per-uid accounting (user.h): the user records, made at a uid's first
 * connection and freed with its last reference, and their charges. Apart
 * from domain.c: a uid's charges hold across the domains it joins.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon/registry/charge.h"
#include "daemon/registry/core.h"
#include "daemon/registry/user.h"

/* The families let go of what they count of @u, in reverse order. */
static void user_families_fini(struct user *u, unsigned int n)
{
	while (n-- > 0)
		if (families[n]->user_fini)
			families[n]->user_fini(u);
}

/* Free @u, out of the list. */
static void user_free(struct core *core, struct user *u)
{
	TAILQ_REMOVE(&core->users, u, link);
	user_families_fini(u, FAMILY_COUNT);
	free(u);
}

struct user *user_get(struct core *core, uid_t uid)
{
	struct user *u;

	TAILQ_FOREACH(u, &core->users, link)
		if (u->uid == uid)
			return user_ref(u);
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	for (unsigned int i = 0; i < FAMILY_COUNT; i++)
		if (families[i]->user_init && families[i]->user_init(u) < 0) {
			user_families_fini(u, i);
			free(u);
			return NULL;
		}
	u->uid = uid;
	u->refs = 1;
	TAILQ_INIT(&u->conns);
	TAILQ_INSERT_TAIL(&core->users, u, link);
	return u;
}

struct user *user_ref(struct user *u)
{
	u->refs++;
	return u;
}

void user_unref(struct core *core, struct user *u)
{
	if (--u->refs)
		return;
	/* Whoever still holds a charge holds a reference too. */
	user_free(core, u);
}

const char *user_whose(const struct user *u, char *buf, size_t len)
{
	snprintf(buf, len, "uid %u", (unsigned int)u->uid);
	return buf;
}

/* Give back @n of @u's count @held: whose it is written only for an
 * underflow's log line, not on every uncharge. */
static void user_sub(const struct user *u, unsigned int *held, unsigned int n,
		     const char *what)
{
	char whose[24] = "";

	if (n > *held)
		user_whose(u, whose, sizeof(whose));
	charge_sub_uint(held, n, what, whose);
}

void user_charge_conn(struct user *u)
{
	charge_add_uint(&u->n_conns, 1, "a uid's connections");
}

void user_uncharge_conn(struct user *u)
{
	user_sub(u, &u->n_conns, 1, "connections");
}

int user_charge_private_ctx(struct core *core, struct user *u)
{
	if (u->private_ctxs >= core->config.limits.private_contexts_per_uid)
		return -EDQUOT;
	charge_add_uint(&u->private_ctxs, 1, "a uid's private contexts");
	return 0;
}

void user_uncharge_private_ctx(struct user *u)
{
	user_sub(u, &u->private_ctxs, 1, "private contexts");
}

void user_pin_fds(struct user *u, unsigned int n, bool pin)
{
	if (pin)
		charge_add_uint(&u->pinned_fds, n,
				"a uid's unread descriptors");
	else
		user_sub(u, &u->pinned_fds, n, "unread descriptors");
}

void user_charge_watch(struct user *u)
{
	charge_add_uint(&u->watches, 1, "a uid's process watches");
}

void user_uncharge_watch(struct user *u)
{
	user_sub(u, &u->watches, 1, "process watches");
}

bool user_fds_full(const struct core *core, const struct user *u)
{
	return u->pinned_fds >= core->config.limits.queued_fds_per_uid;
}

void users_free(struct core *core)
{
	struct user *u;

	while ((u = TAILQ_FIRST(&core->users)))
		user_free(core, u);
}
