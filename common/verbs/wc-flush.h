/* SPDX-License-Identifier: MIT */
/*
 * Stores to a write-combining mapping (mlx5 maps MEMIC so) sit in the
 * CPU's write-combining buffers until something drains them; a thread
 * fence does not on every architecture. What drains them, as rdma-core's
 * mmio_flush_writes() (util/udma_barrier.h) does it on x86, aarch64,
 * POWER and RISC-V; elsewhere a full thread fence, which is not known to
 * be enough (rdma-core has an instruction of each architecture's).
 */
#ifndef RDMAB_WC_FLUSH_H
#define RDMAB_WC_FLUSH_H

static inline void wc_flush_writes(void)
{
#if defined(__x86_64__)
	__asm__ volatile("sfence" ::: "memory");
#elif defined(__i386__)
	/* sfence needs SSE, which i686 does not promise. */
	__asm__ volatile("lock; addl $0,0(%%esp)" ::: "memory");
#elif defined(__riscv)
	__asm__ volatile("fence ow,ow" ::: "memory");
#elif defined(__aarch64__)
	__asm__ volatile("dsb st" ::: "memory");
#elif defined(__powerpc__) || defined(__powerpc64__)
	__asm__ volatile("sync" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

#endif
