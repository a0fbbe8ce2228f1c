/* SPDX-License-Identifier: MIT */
/*
 * The library's family seam: what the client, its contexts, rekey, fork
 * and the event reader know of a resource family. Each family fills one
 * struct ibc_family in its own file (ibc_dm_family in dm.c...);
 * families.c lists them from common/families.def, and the walks below are
 * the only callers of the hooks, so that no other file names a family.
 * Every hook may be NULL: the family has nothing to do there.
 */
#ifndef IBC_FAMILY_H
#define IBC_FAMILY_H

#include <stdbool.h>

#include "proto/rdmabroker.pb-c.h"

struct ibc_client;
struct ibc_ctx;
struct ibc_event_handler;

struct ibc_family {
	const char *name;
	/* The family's event handlers, up to a NULL (events.h). */
	const struct ibc_event_handler *const *events;
	/* Hello: announce what the family's reader handles. */
	void (*hello)(Rdmab__HelloRequest *hello);
	/* The client is freed, its contexts already. */
	void (*client_free)(struct ibc_client *cl);
	/* The context's descriptors are about to close: its objects of the
	 * family answer -@err from then on. Client's lock held, or the
	 * context out of the client's list. */
	void (*ctx_drop)(struct ibc_ctx *ctx, int err, const char *why);
	/* With the client's lock held: a handler of the family in another
	 * thread uses @ctx, whose close waits on the client's condition. */
	bool (*ctx_busy)(const struct ibc_ctx *ctx);
	/* @ctx closes (@broker: with the broker) or its device is gone:
	 * before its other objects are destroyed. */
	void (*ctx_closing)(struct ibc_ctx *ctx, bool broker);
	/* The context is torn down with the broker, after its objects. */
	void (*ctx_teardown)(struct ibc_ctx *ctx);
	/* The context's structures are freed (ibc_close). */
	void (*ctx_free)(struct ibc_ctx *ctx);
	/* Before fork(), @ctx's lock held. */
	void (*fork_prepare)(struct ibc_ctx *ctx);
	/* fork(): the family's own locks, taken after every client's and
	 * context's, given back first. */
	void (*fork_lock)(void);
	void (*fork_unlock)(void);
	/* In the child, every lock held: for the session @cl inherited
	 * (stale), and for every client (child). */
	void (*fork_stale)(struct ibc_client *cl);
	void (*fork_child)(struct ibc_client *cl);
};

/* The walks, in common/families.def's order (fork_unlock: backwards). */
const struct ibc_event_handler *ibc_families_event(int body);
void ibc_families_hello(Rdmab__HelloRequest *hello);
void ibc_families_client_free(struct ibc_client *cl);
void ibc_families_ctx_drop(struct ibc_ctx *ctx, int err, const char *why);
bool ibc_families_ctx_busy(const struct ibc_ctx *ctx);
void ibc_families_ctx_closing(struct ibc_ctx *ctx, bool broker);
void ibc_families_ctx_teardown(struct ibc_ctx *ctx);
void ibc_families_ctx_free(struct ibc_ctx *ctx);
void ibc_families_fork_prepare(struct ibc_ctx *ctx);
void ibc_families_fork_lock(void);
void ibc_families_fork_unlock(void);
void ibc_families_fork_stale(struct ibc_client *cl);
void ibc_families_fork_child(struct ibc_client *cl);

#endif
