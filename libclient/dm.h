/* SPDX-License-Identifier: MIT */
/*
 * Device memory on the client side (ibc_dm_alloc(3)): the broker allocates
 * and frees; this process maps (soft) or imports (verbs) the DM, and reads
 * and writes it without the broker.
 */
#ifndef IBC_DM_H
#define IBC_DM_H

#include "libclient/ctx.h"

/*
 * What differs between device kinds for a DM: how this process maps or
 * imports it, stops using it and reads and writes it. Generic code (dm.c)
 * calls through dm->ops and never asks which kind it has.
 */
struct ibc_dm_ops {
	/* Map or import @dm, whose fields the broker's answer filled, and
	 * list it in its context (ibc_dm_link_locked()). @fd, the DM's
	 * descriptor where the broker sent one, is the caller's. */
	int (*attach)(struct ibc_dm *dm, int fd);
	/* Stop using @dm here, gone already stored: a thread past its check
	 * may still be inside a copy. With ctx->lock held. */
	void (*drop)(struct ibc_dm *dm);
	/* Before the structure is freed, no copy inside; NULL: nothing. */
	void (*release)(struct ibc_dm *dm);
	/* The copies, bounds and gone checked: 0 or -errno with the
	 * sentence. */
	int (*write)(struct ibc_dm *dm, uint64_t dm_offset, const void *src,
		     size_t length);
	int (*read)(struct ibc_dm *dm, void *dst, uint64_t dm_offset,
		    size_t length);
	/* Before fork(), ctx->lock held: keep @ctx's DMs out of the child.
	 * NULL: nothing to do. */
	void (*fork_prepare)(struct ibc_ctx *ctx);
};

extern const struct ibc_dm_ops ibc_soft_dm_ops;
extern const struct ibc_dm_ops ibc_verbs_dm_ops;

/* @ctx's device kind's DM operations: its slot of ibc_ops' family_ops. */
static inline const struct ibc_dm_ops *ibc_dm_ops_of(const struct ibc_ctx *ctx)
{
	return (const struct ibc_dm_ops *)ctx->ops->family_ops[IBC_FAMILY_DM];
}

struct ibc_dm {
	struct ibc_ctx *ctx;
	/* The context kind's (ibc_dm_ops_of() when it was made). */
	const struct ibc_dm_ops *ops;
	/* The context's list (ibc_dm_first()), under ctx->lock */
	struct ibc_dm *prev, *next;
	uint64_t id;
	uint32_t handle;
	uint64_t length;
	bool persistent;
	uint64_t allocator;
	/* This import as a resource MRs are made on: res.id is its record
	 * in the broker's registry. */
	struct ibc_family_res res;
	/* The DM events handled for this import (1 << type), under
	 * ctx->lock. */
	unsigned int events_seen;
	/* Event handlers using this structure, and whether the application
	 * unimported it meanwhile (the last handler frees it), under
	 * ctx->lock. */
	unsigned int event_refs;
	bool unlisted;
	/* soft: the mapping of the DM's memfd; verbs: the import. */
	uint8_t *map;
	struct ibv_dm *vdm;
	/* verbs: threads inside the provider's copy on vdm, which the
	 * unimport waits out (ibc_dm_drop_local()). */
	unsigned int vusers;
	/* This process's MRs on it: unimport is -EBUSY until they go. */
	unsigned int mrs;
	/* Its byte in the session's status page (non-zero once revoked), or
	 * a zero byte of the library's. */
	const volatile uint8_t *status;
	/* Set once this process stopped using the DM (free pending,
	 * revoked, device removed, context closed): calls answer -ENODEV
	 * with the sentence below; inherited through fork(), -ESTALE. The
	 * errno value, read without a lock on the data path. */
	int gone;
	char gone_why[160];
};

/* The newest of the DMs this process holds in @ctx (its slot of the
 * context), the others after it through ->next; with ctx->lock held. */
static inline struct ibc_dm *ibc_dm_first(const struct ibc_ctx *ctx)
{
	return (struct ibc_dm *)ctx->family_slot[IBC_FAMILY_DM];
}

/* Put @dm on its context's list; with ctx->lock held. */
void ibc_dm_link_locked(struct ibc_dm *dm);

/* The size of the status page the broker sends. */
#define IBC_DM_STATUS_SLOTS 4096

/* After the application's callback for an event about DM @id: unimport it
 * where nothing of this process still uses it. */
void ibc_dm_after_event(struct ibc_client *cl, enum ibc_event_type type,
			uint64_t id, const char *why);

/* The family's part of a device's entry (struct ibc_family's
 * device_info, dm-list.c): why a DM cannot be shared there, and the
 * caller's domain's device memory. */
void ibc_dm_device_info(struct ibc_device_info *e,
			const Rdmab__DeviceCaps *caps);

#endif
