/* SPDX-License-Identifier: MIT */
/*
 * Stores to a write-combining mapping (mlx5 maps MEMIC so) sit in the
 * CPU's write-combining buffers until something drains them; a thread
 * fence does not on every architecture. What drains them, per
 * architecture, as rdma-core's mmio_flush_writes() (util/udma_barrier.h)
 * does it.
 */
#ifndef RDMAB_WC_FLUSH_H
#define RDMAB_WC_FLUSH_H

static inline void wc_flush_writes(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("sfence" ::: "memory");
#elif defined(__aarch64__)
	__asm__ volatile("dsb st" ::: "memory");
#elif defined(__powerpc__) || defined(__powerpc64__)
	__asm__ volatile("sync" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

#endif
