// SPDX-License-Identifier: MIT
/*
 * Device memory on the soft device (ibc_soft_dm_ops): the DM is a memfd
 * the broker sends, mapped here and copied with memcpy.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libclient/dm.h"

/* Give the soft DM's pages back at once, though another thread may be
 * past its check and inside a copy: private zero pages take its access
 * instead of a fault, until the structure is freed, and the copy sees gone
 * after it (ibc_dm_copied()). A counter in every copy, as on verbs, took
 * 4 KiB copies from 0.95-0.97 of memcpy to 0.90-0.93. Out of line and
 * alone: the
 * ThreadSanitizer suppression (tests/tsan.supp) names it, and nothing else
 * that this function does. */
static __attribute__((noinline)) void ibc_dm_map_zeroes(struct ibc_dm *dm)
{
	if (mmap(dm->map, dm->length, PROT_READ | PROT_WRITE,
		 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1,
		 0) == MAP_FAILED) {
		munmap(dm->map, dm->length);
		dm->map = NULL;
	}
}

static void ibc_dm_soft_drop(struct ibc_dm *dm)
{
	if (dm->map)
		ibc_dm_map_zeroes(dm);
}

static void ibc_dm_soft_release(struct ibc_dm *dm)
{
	if (dm->map)
		munmap(dm->map, dm->length);
}

/* soft: map the DM's memfd @fd and list @dm. */
static int ibc_dm_soft_attach(struct ibc_dm *dm, int fd)
{
	struct ibc_ctx *ctx = dm->ctx;
	off_t size;
	void *p;

	/* The memfd's size (the broker sealed it against shrinking): less
	 * than the length would fault where the length says there is
	 * memory. lseek answers it at the cost of the bare system call. */
	size = fd < 0 ? -1 : lseek(fd, 0, SEEK_END);
	if (size < 0 || (uint64_t)size < dm->length)
		return ibc_set_error(-EPROTO,
				     "the broker sent DM %llu without memory "
				     "of its length",
				     (unsigned long long)dm->id);
	/* A forked child must not keep the broker's memory (ibc_fork_init(3)):
	 * the fork handlers mark every listed mapping MADV_DONTFORK under
	 * this lock, so the mapping is listed before a fork can see it. */
	pthread_mutex_lock(&ctx->lock);
	p = mmap(NULL, dm->length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p != MAP_FAILED) {
		dm->map = p;
		ibc_dm_link_locked(dm);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (p == MAP_FAILED)
		return ibc_set_error(-errno, "cannot map DM %llu: %s",
				     (unsigned long long)dm->id,
				     strerror(errno));
	return 0;
}

static void ibc_dm_soft_fork_prepare(struct ibc_ctx *ctx)
{
	/* A failure leaves the mapping copied, as without the library. */
	for (struct ibc_dm *dm = ibc_dm_first(ctx); dm; dm = dm->next)
		if (dm->map)
			madvise(dm->map, dm->length, MADV_DONTFORK);
}

/* soft: did the copy just made reach the DM? The zero pages that replace
 * the mapping come after gone is stored (ibc_dm_drop_local()), and a copy
 * reaches them only past the TLB shootdown that installs them, which
 * serializes its CPU: a copy that touched any of them sees gone here. The
 * caller's fence keeps the copy's own accesses before this load. */
static inline __attribute__((always_inline)) int
ibc_dm_copied(const struct ibc_dm *dm)
{
	int gone;

	gone = __atomic_load_n(&dm->gone, __ATOMIC_ACQUIRE);
	if (__builtin_expect(gone, 0))
		return ibc_set_error(-gone,
				     "%s (the copy may not have reached it)",
				     dm->gone_why);
	return 0;
}

static int ibc_dm_soft_write(struct ibc_dm *dm, uint64_t dm_offset,
			     const void *src, size_t length)
{
	memcpy(dm->map + dm_offset, src, length);
	/* Ordinary memory: ordered for another process as a verbs DM is,
	 * without the write-combining drain. */
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_sfence();
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
	return ibc_dm_copied(dm);
}

static int ibc_dm_soft_read(struct ibc_dm *dm, void *dst, uint64_t dm_offset,
			    size_t length)
{
	memcpy(dst, dm->map + dm_offset, length);
	/* x86 keeps loads in order: the compiler's fence is enough. */
#if defined(__x86_64__) || defined(__i386__)
	__atomic_signal_fence(__ATOMIC_ACQUIRE);
#else
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
#endif
	return ibc_dm_copied(dm);
}

const struct ibc_dm_ops ibc_soft_dm_ops = {
	.attach = ibc_dm_soft_attach,
	.drop = ibc_dm_soft_drop,
	.release = ibc_dm_soft_release,
	.write = ibc_dm_soft_write,
	.read = ibc_dm_soft_read,
	.fork_prepare = ibc_dm_soft_fork_prepare,
};
