// SPDX-License-Identifier: MIT
/*
 * Device memory on a verbs device (ibc_verbs_dm_ops): the DM is imported
 * with ibv_import_dm() and copied by the provider.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "common/verbs/wc-flush.h"
#include "libclient/dm.h"

static void ibc_dm_verbs_drop(struct ibc_dm *dm)
{
	if (dm->vdm) {
		/* A thread past its check may be inside the provider's copy,
		 * whose structure and mapping the unimport frees: it is out
		 * within one copy of at most the DM's length, and a thread
		 * that comes later sees gone (ibc_dm_verbs_enter()). */
		while (__atomic_load_n(&dm->vusers, __ATOMIC_SEQ_CST))
			sched_yield();
		ibv_unimport_dm(dm->vdm);
		dm->vdm = NULL;
	}
}

/* verbs: import the DM the broker answered and list @dm. */
static int ibc_dm_verbs_attach(struct ibc_dm *dm, int fd)
{
	struct ibc_ctx *ctx = dm->ctx;

	(void)fd;
	errno = 0;
	dm->vdm = ibv_import_dm(ctx->vctx, dm->handle);
	if (!dm->vdm)
		return ibc_set_error(errno ? -errno : -EOPNOTSUPP,
				     "%s: ibv_import_dm of handle %u: %s",
				     ctx->caps.device, dm->handle,
				     strerror(errno ? errno : EOPNOTSUPP));
	pthread_mutex_lock(&ctx->lock);
	ibc_dm_link_locked(dm);
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

/* verbs: the soft device's mapping is replaced by zero pages when the DM
 * goes, but the import is freed: a copy counts itself in first. Paired
 * with ibc_dm_drop_local() in one order (Dekker's): either this sees gone
 * or the unimport sees this thread. */
static int ibc_dm_verbs_enter(struct ibc_dm *dm)
{
	int gone;

	__atomic_add_fetch(&dm->vusers, 1, __ATOMIC_SEQ_CST);
	gone = __atomic_load_n(&dm->gone, __ATOMIC_SEQ_CST);
	if (gone) {
		__atomic_sub_fetch(&dm->vusers, 1, __ATOMIC_RELEASE);
		return ibc_set_error(-gone, "%s", dm->gone_why);
	}
	return 0;
}

static void ibc_dm_verbs_leave(struct ibc_dm *dm)
{
	__atomic_sub_fetch(&dm->vusers, 1, __ATOMIC_RELEASE);
}

static int ibc_dm_verbs_write(struct ibc_dm *dm, uint64_t dm_offset,
			      const void *src, size_t length)
{
	int err = ibc_dm_verbs_enter(dm);

	if (err < 0)
		return err;
	err = ibv_memcpy_to_dm(dm->vdm, dm_offset, src, length);
	/* mlx5 maps MEMIC write-combining and stores without a fence:
	 * without one here another process may not see what was written. */
	wc_flush_writes();
	ibc_dm_verbs_leave(dm);
	if (err)
		return ibc_set_error(-err, "ibv_memcpy_to_dm: %s",
				     strerror(err));
	return 0;
}

static int ibc_dm_verbs_read(struct ibc_dm *dm, void *dst, uint64_t dm_offset,
			     size_t length)
{
	int err = ibc_dm_verbs_enter(dm);

	if (err < 0)
		return err;
	err = ibv_memcpy_from_dm(dst, dm->vdm, dm_offset, length);
	ibc_dm_verbs_leave(dm);
	if (err)
		return ibc_set_error(-err, "ibv_memcpy_from_dm: %s",
				     strerror(err));
	return 0;
}

const struct ibc_dm_ops ibc_verbs_dm_ops = {
	.attach = ibc_dm_verbs_attach,
	.drop = ibc_dm_verbs_drop,
	.write = ibc_dm_verbs_write,
	.read = ibc_dm_verbs_read,
};
