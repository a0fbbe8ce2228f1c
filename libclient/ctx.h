/* SPDX-License-Identifier: MIT */
/*
 * A context and the table of operations behind it. Each device kind has its
 * implementation (verbs.c, soft.c); generic code calls through ctx->ops and
 * never asks which kind it has.
 */
#ifndef IBC_CTX_H
#define IBC_CTX_H

#include "libclient/client.h"

struct ibv_context;
struct ibv_pd;
struct ibc_obj;
struct ibc_obj_args;
struct ibc_obj_result;

struct ibc_ops {
	/* For sentences: "soft", "verbs", "own". */
	const char *name;
	/*
	 * Make the context descriptor the broker sent this process's own;
	 * consumes @fd on every path. May switch ctx->ops (a verbs context
	 * that cannot be imported is opened here instead).
	 */
	int (*attach)(struct ibc_ctx *ctx, int fd);
	/* Close this process's descriptors of the context. */
	void (*detach)(struct ibc_ctx *ctx);
	/*
	 * Make @o (objects.h) on the device and register it with the broker
	 * where the context is shared: the soft device's create is one
	 * request; a verbs one declares an intent, calls the kernel and
	 * registers the handle without waiting.
	 */
	int (*create)(struct ibc_obj *o, const struct ibc_obj_args *a,
		      struct ibc_obj_result *res);
	/* Unregister @o and destroy it on the device. */
	int (*destroy)(struct ibc_obj *o);
	/* The device is gone, and the broker's records with it: destroy
	 * what this process holds of @o. */
	void (*destroy_removed)(struct ibc_obj *o);
	/* ibc_track and ibc_untrack of a raw libibverbs object. */
	int (*track)(struct ibc_obj *o);
	int (*untrack)(struct ibc_obj *o);
	/* What a family does differently on this kind of device, by enum
	 * ibc_family_id: the family's own table of operations, which only
	 * it reads; NULL where nothing differs. */
	const void *family_ops[IBC_FAMILY_COUNT];
};

extern const struct ibc_ops ibc_soft_ops;
extern const struct ibc_ops ibc_verbs_ops;
extern const struct ibc_ops ibc_own_ops;

struct ibc_ctx {
	struct ibc_client *client;
	struct ibc_ctx *next;
	const struct ibc_ops *ops;
	struct ibc_caps caps;
	uint32_t pd_handle;
	/* verbs: the imported or own context, and the domain's PD */
	struct ibv_context *vctx;
	struct ibv_pd *vpd;
	/* The PD constructors use: the domain's, or on a context of this
	 * process's own, own_pd. */
	struct ibv_pd *pd;
	struct ibv_pd *own_pd;
	/* The objects made or tracked in this context, newest first; the
	 * lock is the lock order's 3 (client.h). */
	pthread_mutex_t lock;
	struct ibc_obj *objs;
	/* soft: the context memfd, and its header's SOFT_CTX_* flags */
	int soft_fd;
	uint32_t soft_flags;
	/* The device is gone: this process's descriptors are closed. Set
	 * once with an atomic release (ibc_ctx_removed() reads it). */
	bool removed;
	/* Rekey (rekey.c): removed because the domain got a new context;
	 * the broker was told already. */
	bool rekeyed;
	/* ibc_close() is tearing it down: rekey and removal leave it
	 * alone. Under the client's lock. */
	bool closed;
	/* Under the client's lock: creates, destroys and the attach in
	 * flight; a rekey or removal began (new creates are refused, and
	 * it waits for busy to reach 0); the attach is done. */
	unsigned int busy;
	bool closing;
	bool attached;
	/* Each family's state in the context, by enum ibc_family_id
	 * (family.h), NULL for none: the family's own, read through its
	 * accessors only, under lock unless the family says otherwise. */
	void *family_slot[IBC_FAMILY_COUNT];
	/* Under the client's lock: a family's event handlers (DM's) using
	 * the context in another thread, which ibc_close() waits for. */
	unsigned int event_handlers;
};

/* Whether @ctx's device was removed (its descriptors are closed): an
 * atomic read of a flag set once, with a release, after they are. */
bool ibc_ctx_removed(struct ibc_ctx *ctx);
/* Why calls on a removed @ctx fail: -ESTALE once its domain was rekeyed,
 * -ENODEV once its device was removed; the sentence says which. */
int ibc_ctx_gone(struct ibc_ctx *ctx);
/* Close this process's descriptors of @ctx (its DM imports first) and
 * mark it removed; under the client's lock. */
void ibc_ctx_drop_local(struct ibc_ctx *ctx);
/* Count a create (refused once @ctx is closing or removed: 0 or the
 * ibc_ctx_gone() error) or a destroy (never refused) in flight in @ctx;
 * ibc_ctx_leave() ends it. Without the client's lock. */
int ibc_ctx_enter(struct ibc_ctx *ctx, bool create);
void ibc_ctx_leave(struct ibc_ctx *ctx);
/* Wait, the client's lock (held) dropped meanwhile, until no context
 * marked closing has anything in flight. The list may change meanwhile. */
void ibc_ctx_wait_idle(struct ibc_client *cl);

#endif
