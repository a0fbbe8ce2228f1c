/* SPDX-License-Identifier: MIT */
/*
 * Per-uid accounting, after dbus-broker's users: every connection refers to
 * the user of its peer's uid, and what the connection holds on the daemon's
 * side (the connection itself, descriptors sent and not yet read, contexts
 * of private domains, and what the families count per uid in their slot)
 * is charged there and uncharged exactly once, so that one uid cannot take
 * what the others need.
 */
#ifndef RDMAB_USER_H
#define RDMAB_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/families/family.h"
#include "daemon/util/queue.h"

struct core;
struct client;

struct user {
	TAILQ_ENTRY(user) link;
	uid_t uid;
	/* Connections, and contexts charged below, that refer to it. */
	unsigned int refs;
	/* Its connections being served (not the lingering ones). */
	TAILQ_HEAD(, conn) conns;
	unsigned int n_conns;
	/* Descriptors its connections were sent and have not read. */
	unsigned int pinned_fds;
	unsigned int private_ctxs;
	/* pidfds watching its processes for detached owners
	 * (obj-watch.c). */
	unsigned int watches;
	/* What each family counts of the uid, by enum family_id: made by
	 * its user_init hook with the user, freed by its user_fini
	 * (family.h); NULL for a family that keeps nothing. */
	void *family_slot[FAMILY_COUNT];
	/* pinned_fds crossed queued_fds_per_uid: its connections are to be
	 * stopped, or may be read again (conn.c). */
	bool wake;
	bool waking;
};

/* The user of @uid, created on first use; a reference. NULL without
 * memory. */
struct user *user_get(struct core *core, uid_t uid);
struct user *user_ref(struct user *u);
void user_unref(struct core *core, struct user *u);

/* A context of a private domain: -EDQUOT over private_contexts_per_uid. */
int user_charge_private_ctx(struct core *core, struct user *u);
void user_uncharge_private_ctx(struct user *u);

/* One of @u's connections began, or ended (n_conns, checked against
 * connections_per_uid by server_admit()). */
void user_charge_conn(struct user *u);
void user_uncharge_conn(struct user *u);
/* @n descriptors sent to one of @u's connections and not read yet
 * (@pin), or read now (queued_fds_per_uid: user_fds_full()). */
void user_pin_fds(struct user *u, unsigned int n, bool pin);
/* A pidfd watching a process of @u's for detached owners
 * (obj-watch.c), or its end. */
void user_charge_watch(struct user *u);
void user_uncharge_watch(struct user *u);
/* "uid N" in @buf: whose a charge given back is, for its log line. */
const char *user_whose(const struct user *u, char *buf, size_t len);

/* Has @u as many descriptors unread as queued_fds_per_uid allows? */
bool user_fds_full(const struct core *core, const struct user *u);

/* Free every user (daemon exit); nothing may refer to them any more. */
void users_free(struct core *core);

#endif
