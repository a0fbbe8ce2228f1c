/* SPDX-License-Identifier: MIT */
/*
 * The library's family seam: what the client, its contexts, rekey, fork
 * and the event reader know of a resource family. Each family fills one
 * struct ibc_family in its own file (ibc_dm_family in dm.c...);
 * common/families.def lists them, and the walks below are the only
 * callers of the hooks, so that no other file names a family.
 * Every hook may be NULL: the family has nothing to do there.
 */
#ifndef IBC_FAMILY_H
#define IBC_FAMILY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "include/ibclient.h"
#include "proto/rdmabroker.pb-c.h"

struct ibc_client;
struct ibc_ctx;
struct ibc_device_info;
struct ibc_domain_info;
struct ibc_event_handler;
struct ibc_quota;

/* A figure a family adds to a listing's entry: the wire message's field
 * at offset @wire copied into the entry's at @entry, @size bytes (the
 * same width on both sides: IBC_FAMILY_FIELD() checks it). */
struct ibc_family_field {
	size_t wire;
	size_t entry;
	size_t size;
};

/* 0, or a build error when @a and @b differ in width. */
#define IBC_SAME_WIDTH(a, b) (0 * sizeof(char[sizeof(a) == sizeof(b) ? 1 : -1]))
/* The ibc_family_field of wire message @W's field @wf and entry @E's
 * field @ef. */
#define IBC_FAMILY_FIELD(W, wf, E, ef)                                         \
	{                                                                      \
		offsetof(W, wf), offsetof(E, ef),                              \
			sizeof(((E *)0)->ef) +                                 \
				IBC_SAME_WIDTH(((W *)0)->wf, ((E *)0)->ef)     \
	}

/* Index into the library's family array and into the per-family slots
 * (struct ibc_client's and struct ibc_ctx's family_slot[], struct
 * ibc_ops' family_ops[]): common/families.def's order. Only the family
 * reads its slot, through its own accessors. */
enum ibc_family_id {
#define FAMILY(f, F) IBC_FAMILY_##F,
#include "common/families.def"
	IBC_FAMILY_COUNT,
};

/* A family's resource that core objects are made on (device memory, which
 * MRs are registered on), embedded in the family's structure: those
 * objects point to it (struct ibc_obj's on, objects.h). */
struct ibc_family_res {
	/* Its family, enum ibc_family_id: whose on_gone hook hears when such
	 * an object goes. */
	unsigned int family;
	/* Its record in the broker's registry, which an object's create
	 * names among the uses. */
	uint64_t id;
};

struct ibc_family {
	const char *name;
	/* The object kind that is the family's (IBC_OBJ_NONE: none): its
	 * name for ibc_obj_kind_str() and the sentences. */
	enum ibc_obj_kind kind;
	const char *kind_name;
	/* The family's objects of that kind are in the context's list
	 * (struct ibc_obj, objects.h): core objects use them, so they are
	 * destroyed at close after the core's; @kind_users names those
	 * users, plural, in the sentence of a destroy refused while they
	 * are there. */
	bool kind_listed;
	const char *kind_users;
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
	/* The listings (inspect.c): the family's quota, QuotaInfo's field
	 * into struct ibc_quota's (size 0: none); its other figures of a
	 * domain, DomainInfo's into struct ibc_domain_info's, up to one of
	 * size 0 (NULL: none); and what it adds to a device's entry from
	 * DeviceCaps (its figures for the caller; the device's limits are
	 * common/device/caps-fields.h's). */
	struct ibc_family_field quota;
	const struct ibc_family_field *domain_fields;
	void (*device_info)(struct ibc_device_info *e,
			    const Rdmab__DeviceCaps *caps);
	/* An object made on the family's resource @res (struct ibc_obj's
	 * on: an MR on device memory) was destroyed by the application;
	 * not called at close, when the resource goes too. */
	void (*on_gone)(struct ibc_family_res *res);
};

/* Every hook above that the walks below call, for the lists. One hook a
 * line: clang-format cannot lay out an X-list. */
/* clang-format off */
#define IBC_FAMILY_HOOKS(X) \
	X(hello) \
	X(client_free) \
	X(ctx_drop) \
	X(ctx_closing) \
	X(ctx_teardown) \
	X(ctx_free) \
	X(fork_prepare) \
	X(fork_lock) \
	X(fork_unlock) \
	X(fork_stale) \
	X(fork_child)
/* clang-format on */

/* The hooks the families have, by hook, in common/families.def's order,
 * each list up to a NULL: filled once at load (families.c), read by the
 * walks below. */
#define IBC_MAX_FAMILIES 8
#define IBC_HOOK_LIST(hook)                                                    \
	__typeof__(((struct ibc_family *)0)->hook) hook[IBC_MAX_FAMILIES + 1];
struct ibc_family_hooks {
	IBC_FAMILY_HOOKS(IBC_HOOK_LIST)
	/* The kinds of the families' listed objects (kind_listed), up to
	 * IBC_OBJ_NONE: the teardown's after the core's. */
	enum ibc_obj_kind listed[IBC_MAX_FAMILIES + 1];
};
#undef IBC_HOOK_LIST
extern struct ibc_family_hooks ibc_family_hooks;

/*
 * The walks. Inline over the hooks that exist rather than over the
 * families: the close path runs five, and testing every family's every
 * hook would cost each ibc_close() tens of instructions (make bench's
 * open+close).
 */
#define IBC_FAMILIES_EACH(hook, args)                                          \
	do {                                                                   \
		for (__typeof__(ibc_family_hooks.hook[0]) *h_ =                \
			     ibc_family_hooks.hook;                            \
		     *h_; h_++)                                                \
			(*h_) args;                                            \
	} while (0)

static inline void ibc_families_hello(Rdmab__HelloRequest *hello)
{
	IBC_FAMILIES_EACH(hello, (hello));
}

static inline void ibc_families_client_free(struct ibc_client *cl)
{
	IBC_FAMILIES_EACH(client_free, (cl));
}

static inline void ibc_families_ctx_drop(struct ibc_ctx *ctx, int err,
					 const char *why)
{
	IBC_FAMILIES_EACH(ctx_drop, (ctx, err, why));
}

static inline void ibc_families_ctx_closing(struct ibc_ctx *ctx, bool broker)
{
	IBC_FAMILIES_EACH(ctx_closing, (ctx, broker));
}

static inline void ibc_families_ctx_teardown(struct ibc_ctx *ctx)
{
	IBC_FAMILIES_EACH(ctx_teardown, (ctx));
}

static inline void ibc_families_ctx_free(struct ibc_ctx *ctx)
{
	IBC_FAMILIES_EACH(ctx_free, (ctx));
}

static inline void ibc_families_fork_prepare(struct ibc_ctx *ctx)
{
	IBC_FAMILIES_EACH(fork_prepare, (ctx));
}

static inline void ibc_families_fork_lock(void)
{
	IBC_FAMILIES_EACH(fork_lock, ());
}

/* Backwards: the locks are given back in the reverse order. */
static inline void ibc_families_fork_unlock(void)
{
	unsigned int n = 0;

	while (ibc_family_hooks.fork_unlock[n])
		n++;
	while (n-- > 0)
		ibc_family_hooks.fork_unlock[n]();
}

static inline void ibc_families_fork_stale(struct ibc_client *cl)
{
	IBC_FAMILIES_EACH(fork_stale, (cl));
}

static inline void ibc_families_fork_child(struct ibc_client *cl)
{
	IBC_FAMILIES_EACH(fork_child, (cl));
}

/* The handler of Event body @body a family registered; NULL for none. */
const struct ibc_event_handler *ibc_families_event(int body);

/* The listings: every family's quota of @qi into @q, its figures of
 * domain @d into @e, its part of device caps @caps into @e. */
void ibc_families_quota(struct ibc_quota *q, const Rdmab__QuotaInfo *qi);
void ibc_families_domain(struct ibc_domain_info *e, const Rdmab__DomainInfo *d);
void ibc_families_device_info(struct ibc_device_info *e,
			      const Rdmab__DeviceCaps *caps);
/* The family whose kind is @kind; NULL for none (a core kind). */
const struct ibc_family *ibc_families_of_kind(enum ibc_obj_kind kind);

/* Tell @res's family that an object made on @res went. */
void ibc_families_on_gone(struct ibc_family_res *res);

#endif
