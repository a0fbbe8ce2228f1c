/* SPDX-License-Identifier: MIT */
/*
 * Contexts: one per (domain, device), opened on the first client's request
 * and closed when the last client has closed it and its objects are gone.
 */
#ifndef RDMAB_CTX_H
#define RDMAB_CTX_H

#include <stdbool.h>
#include <stdint.h>
#include "daemon/families/family.h"
#include "daemon/util/queue.h"

struct core;
struct domain;
struct device;
struct device_ctx;
struct event;
struct client;
struct why;
struct user;
struct obj;

struct dctx {
	TAILQ_ENTRY(dctx) link;
	uint64_t id;
	struct core *core;
	struct domain *domain;
	struct device *dev;
	/* NULL once the device is gone. */
	struct device_ctx *dc;
	struct event *ev;
	/* A private domain's context is charged to the uid that opened it. */
	struct user *user;
	/* Opens by clients, and records of the registry in the context. */
	unsigned int refs;
	unsigned int objects;
	/* The registry's records in the context (obj.ctx_link). */
	TAILQ_HEAD(, obj) objs;
	/* Objects the kernel holds that nobody can name (unaccounted.h):
	 * exact after unaccounted_refresh(), which runs after a dead
	 * client's cleanup and for listings; in between, a dead client's
	 * intent counts 1 until the walk says whether it made anything.
	 * Charged to the domain until the context closes. */
	unsigned int unaccounted;
	/* What each family keeps of the context, by enum family_id
	 * (family.h), given back by its ctx_closed hook. */
	uint64_t family_slot[FAMILY_COUNT];
	/* A death may have changed it since the last walk; a failed walk
	 * was logged. */
	bool unacc_stale;
	bool unacc_warned;
	/* Provider-internal objects of the broker's own open (mlx5 UARs). */
	uint32_t own_internal;
	/* Sessions that let go of the context without closing their import
	 * (a death): each left at least what a bare import makes. */
	uint32_t dead_imports;
	/* What those left on a device whose kernel is the broker (its
	 * import_records at each death): what a restart makes again. */
	uint32_t dead_internal;
	/* Replaced by a rekey (rekey.c): no new session gets it; it closes
	 * as a whole once every session let go. */
	bool rekeyed;
	/* Opened again by a restore under the old one's id (a device
	 * without import): records made in the old one are not its. */
	bool reopened;
	/* An automatic rekey was refused for it: logged once, tried again
	 * when its unaccounted count grows. */
	bool auto_rekey_refused;
	/* The state journal's records of its unnamed objects (objects the
	 * broker made that stay in it, in no record's name), by object id:
	 * restart's (kept.c), which deletes them when the context closes. */
	uint64_t *unnamed;
	uint32_t n_unnamed;
	size_t cap_unnamed;
};

/*
 * What the modules above the contexts do at a context's turns: the
 * registry's records (objects.h) and the unaccounted count
 * (unaccounted.h) know a struct dctx, so ctx.c reaches them through this
 * table, core->ctx_hooks (server_init() sets it: ctx-hooks.c), and names
 * neither.
 */
struct dctx_hooks {
	/* @x was just opened, before any import: what the kernel holds of
	 * the provider's own now is the broker's (unaccounted_ctx_opened()). */
	void (*opened)(struct dctx *x);
	/* Session @client_id let go of rekeyed @x (0: the rekey itself, for
	 * the sessions that ended): its records there leave the registry and
	 * count as unaccounted (objects_ctx_let_go()). */
	void (*let_go)(struct core *core, struct dctx *x, uint64_t client_id);
	/* A session that ended let go of @x, which stays, on a device
	 * whose kernel is the broker: counted again now
	 * (unaccounted_refresh()). */
	int (*recount)(struct dctx *x);
};

/* A client's hold on a context. */
struct conn_ctx {
	TAILQ_ENTRY(conn_ctx) link;
	struct dctx *ctx;
	unsigned int opens;
	/* The device's name for this session's import (import_open). */
	uint64_t import;
	/* Its slot in the state journal (restart_hold_saved()); 0: none. */
	uint32_t hold_slot;
};

/* The context @id that @c's session has open; NULL otherwise. */
struct dctx *dctx_conn_find(struct client *c, uint64_t id);
/* The context @id of @c's session for a request that adds to it: open
 * in the session (-ENOENT), its device present (-ENODEV) and not replaced
 * by a rekey (-ESTALE), the error in @why. */
int dctx_conn_usable(struct client *c, uint64_t id, struct why *why,
		     struct dctx **ret);
/* The last two of those checks, for a context reached otherwise. */
int dctx_usable(const struct dctx *x, struct why *why);
/* The -ESTALE for a request that would add to @x, which a rekey
 * replaced: one sentence for every family. */
int dctx_why_stale(const struct dctx *x, struct why *why);
/* @c opens @dev (present): its domain's context, opened for it if need
 * be, and the session's import of it; another open of one it holds
 * counts. -EDQUOT, -ENOMEM or the device's error, in @why. */
int dctx_conn_open(struct client *c, struct device *dev, struct why *why,
		   struct dctx **ret);
/* @c closes one open of its context @id (-ENOENT: none); the last lets
 * go of it. */
int dctx_conn_close(struct client *c, uint64_t id, struct why *why);
/* A record of the registry keeps @x open, and lets it go. */
void dctx_obj_hold(struct dctx *x);
void dctx_obj_release(struct core *core, struct dctx *x);

/* Drop every context @c holds (the connection is closing). */
void dctx_conn_release(struct core *core, struct client *c);
/* The device's name for @c's import of @x (import_open); 0 for none. */
uint64_t dctx_conn_import(struct client *c, const struct dctx *x);
/* The id of the context @c holds on @dev; 0 when it holds none. */
uint64_t dctx_conn_ctx_id(struct client *c, const struct device *dev);
/* Close the device side of every context of @dev (device removal). */
void dctx_device_gone(struct core *core, struct device *dev);
/* Rekey (rekey.c): @x no longer goes to new sessions; the records of a
 * session that lets go of it leave the registry, their charges staying
 * with @x until it closes. */
void dctx_retire(struct core *core, struct dctx *x);
/* Restore (restore-ctx.c): context @id of @d on @dev over the stored
 * descriptor @fd (taken, also on failure) with its PD @pd_handle; the
 * sentence in @why. */
int dctx_adopt(struct core *core, struct domain *d, struct device *dev,
	       struct user *u, uint64_t id, int fd, uint32_t pd_handle,
	       struct why *why, struct dctx **ret);
/* Restore: @x, adopted for records whose session ended before the
 * restart, is closed again if nothing came to hold it (none of them could
 * be made again). */
void dctx_close_unheld(struct core *core, struct dctx *x);
/* Restore: @c's session holds @x, @opens times, with its import @import
 * (made again by dctx_imports_adopt()). 0 or -ENOMEM. */
int dctx_client_adopt(struct client *c, struct dctx *x, unsigned int opens,
		      uint64_t import);
/* Restore, after every record that names a handle came back (the
 * families' too): the imports of @d's members' holds, made again on the
 * device at free handles. */
void dctx_imports_adopt(struct domain *d);
/* @d's context @id; NULL for none. */
struct dctx *dctx_find_id(struct domain *d, uint64_t id);
/* Close every context of every domain (daemon exit, before
 * domains_free()). */
void dctx_close_all(struct core *core);

#endif
