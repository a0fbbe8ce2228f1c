/* SPDX-License-Identifier: MIT */
/*
 * Unaccounted objects (DESIGN §5): what the kernel holds in a domain's
 * context that nobody can name. Counted exactly from the kernel's own
 * handle list (the device's handle_list: UVERBS_METHOD_INFO_HANDLES on
 * verbs, the records on soft), kind by kind:
 *
 *   the kernel's handles
 *   - those the registry names (records with their handle; verbs XRCD
 *     records, which have none, by count)
 *   - the broker's own (the context's PD, its DMs)
 *   - the open intents of live clients (their kernel call may have run)
 *
 * plus what dead importers left of the provider-internal objects (mlx5:
 * its UARs; soft: [soft] internal_objects_per_import and _per_qp
 * records), which are counted by their type, apart: the kernel does not
 * say which import holds which, and a live importer holds more than a bare
 * import makes (mlx5 allocates BF UARs as its QPs come and frees them only
 * when the import closes), so the dead ones' share is a lower bound: what
 * a bare import makes, per session that ended without closing its import,
 * at most what exists beyond the live imports' least. A dead client's
 * intent whose kernel call made nothing counts 0, one that made an object
 * counts 1.
 *
 * The walk costs a syscall per kind on verbs: it runs when a dead client's
 * cleanup is done, when a session that held the context ends on the soft
 * device, and for every listing of domains, never per request.
 */
#ifndef RDMAB_UNACCOUNTED_H
#define RDMAB_UNACCOUNTED_H

#include <stdint.h>

struct dctx;
struct core;

struct unacc_counts {
	/* Handles the kernel lists, internal objects included. */
	uint32_t kernel;
	/* Of those: named by the registry; the broker's own. */
	uint32_t registry;
	uint32_t broker;
	/* Open intents of live clients (all of them, made or not). */
	uint32_t intents;
	/* Provider-internal objects (mlx5 UARs) beyond the broker's own,
	 * counted apart: live importers' and dead ones'. */
	uint32_t internal;
	/* Of those, what dead importers left as far as it is known (a
	 * lower bound): counted in unaccounted. */
	uint32_t internal_left;
	uint32_t unaccounted;
	/* Kinds whose list the kernel cut at its most (16383 handles, the
	 * ioctl's 16-bit length): the count is a lower bound then. */
	uint32_t cut;
};

/*
 * Walk the kernel's handle lists of @x and count. 0 with @ret filled
 * (zeroes for a context whose device is gone), or -errno: -EOPNOTSUPP for
 * a device that lists no handles, the kernel's error, -ENOMEM.
 */
int unaccounted_count(struct dctx *x, struct unacc_counts *ret);

/*
 * Count, and make x->unaccounted the exact figure: the domain's objects
 * quota follows it (what exists stays charged, over the limit too; what
 * does not is uncharged), so that the context's close uncharges exactly
 * 1 + x->unaccounted. Returns the figure, or -errno with x->unaccounted
 * (the open intents of dead clients, a bound) left as it was. @ret, when
 * not NULL, gets the counts.
 */
int unaccounted_refresh(struct dctx *x);
int unaccounted_refresh_counts(struct dctx *x, struct unacc_counts *ret);

/* Refresh every context marked stale (x->unacc_stale): after a dead
 * client's cleanup. */
void unaccounted_refresh_stale(struct core *core);

/* @x was just opened: what the kernel holds now is the broker's own
 * (mlx5: the UARs of its open). */
void unaccounted_ctx_opened(struct dctx *x);

#endif
