/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the in-VM test programs (tests/vm/suite.sh runs them on rxe0):
 * CHECK lines the suite counts, files in a directory as a barrier between
 * a program and the suite, and an RC QP with its CQ, completion channel and
 * MR on a libibverbs context.
 */
#ifndef RDMAB_VMUTIL_H
#define RDMAB_VMUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

/* Print "CHECK PASS name: detail" or "CHECK FAIL name: detail" on stdout
 * (the suite counts these) and return @ok. */
bool vm_check(bool ok, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* How many vm_check() calls failed so far. */
int vm_failures(void);

/* Create @dir/@name (empty). */
int vm_sync_touch(const char *dir, const char *name);
/* Wait until @dir/@name exists; -ETIMEDOUT after @timeout_ms. */
int vm_sync_wait(const char *dir, const char *name, int timeout_ms);

/* What one side of an RC connection tells the other. */
struct vm_rc_addr {
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint32_t lid; /* an InfiniBand port's; 0 on RoCE */
	uint64_t addr;
	uint8_t gid[16];
};

struct vm_rc {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	bool own_pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	void *buf;
	size_t len;
	uint8_t port;
	int gid_index;
	enum ibv_mtu mtu;
	struct vm_rc_addr local;
	/* vm_rc_adopt(): the objects are the caller's, never destroyed
	 * here. */
	bool borrowed;
};

/*
 * Create a CQ (with a completion channel), an RC QP in INIT and an MR over
 * @len bytes on @ctx; @pd NULL allocates a PD of its own. Picks port 1 and
 * its first RoCE v2 GID. Returns 0 or -errno, with a message on stderr.
 */
int vm_rc_create(struct vm_rc *rc, struct ibv_context *ctx, struct ibv_pd *pd,
		 size_t len);
/*
 * The same for an RC QP, its MR over @buf (@len bytes) and their context
 * that the caller made (with ibclient's constructors, say): port, GID,
 * INIT, the local address. vm_rc_destroy() then only forgets them. Returns
 * 0 or -errno, with a message on stderr.
 */
int vm_rc_adopt(struct vm_rc *rc, struct ibv_context *ctx, struct ibv_qp *qp,
		struct ibv_mr *mr, void *buf, size_t len);
/* RTR towards @remote, then RTS. */
int vm_rc_connect(struct vm_rc *rc, const struct vm_rc_addr *remote);
int vm_rc_post_recv(struct vm_rc *rc, size_t off, size_t len, uint64_t id);
int vm_rc_post_send(struct vm_rc *rc, size_t off, size_t len, uint64_t id);
/* One completion, sleeping on the channel; -ETIMEDOUT after @timeout_ms,
 * -EIO for a completion with an error status. */
int vm_rc_wait(struct vm_rc *rc, struct ibv_wc *wc, int timeout_ms);
void vm_rc_destroy(struct vm_rc *rc);

/* How many objects of @type (qp, cq, mr, pd ...) `rdma resource show`
 * lists for this process; -1 when the command fails. */
int vm_kernel_count(const char *type);

/* Write and read exactly @len bytes. */
int vm_write_all(int fd, const void *buf, size_t len);
int vm_read_all(int fd, void *buf, size_t len);

#endif
