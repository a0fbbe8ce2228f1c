// SPDX-License-Identifier: MIT
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/vm/vmutil.h"

static int vm_failed;

bool vm_check(bool ok, const char *name, const char *fmt, ...)
{
	char detail[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	printf("CHECK %s %s: %s\n", ok ? "PASS" : "FAIL", name, detail);
	fflush(stdout);
	if (!ok)
		vm_failed++;
	return ok;
}

int vm_failures(void)
{
	return vm_failed;
}

int vm_sync_touch(const char *dir, const char *name)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static long vm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int vm_sync_wait(const char *dir, const char *name, int timeout_ms)
{
	long end = vm_now_ms() + timeout_ms;
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	while (access(path, F_OK) != 0) {
		if (vm_now_ms() > end)
			return -ETIMEDOUT;
		usleep(20000);
	}
	return 0;
}

int vm_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int vm_read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The first RoCE v2 GID of the port, else the first non-zero one. */
static int vm_pick_gid(struct vm_rc *rc, const struct ibv_port_attr *pa)
{
	int fallback = -1;

	for (int i = 0; i < pa->gid_tbl_len; i++) {
		struct ibv_gid_entry e;
		static const uint8_t zero[16];

		if (ibv_query_gid_ex(rc->ctx, rc->port, (uint32_t)i, &e, 0))
			continue;
		if (!memcmp(e.gid.raw, zero, sizeof(zero)))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2) {
			rc->gid_index = i;
			memcpy(rc->local.gid, e.gid.raw, 16);
			return 0;
		}
		if (fallback < 0)
			fallback = i;
	}
	if (fallback < 0) {
		fprintf(stderr, "vmutil: port %u has no GID\n", rc->port);
		return -ENODEV;
	}
	rc->gid_index = fallback;
	{
		union ibv_gid g;

		if (ibv_query_gid(rc->ctx, rc->port, fallback, &g))
			return -errno;
		memcpy(rc->local.gid, g.raw, 16);
	}
	return 0;
}

/* Port 1's MTU and GID. */
static int vm_rc_port(struct vm_rc *rc)
{
	struct ibv_port_attr pa;
	int ret;

	rc->port = 1;
	if (ibv_query_port(rc->ctx, rc->port, &pa)) {
		ret = -errno;
		fprintf(stderr, "vmutil: ibv_query_port: %s\n", strerror(-ret));
		return ret;
	}
	rc->mtu = pa.active_mtu < IBV_MTU_1024 ? pa.active_mtu : IBV_MTU_1024;
	rc->local.lid = pa.link_layer == IBV_LINK_LAYER_INFINIBAND ? pa.lid : 0;
	return vm_pick_gid(rc, &pa);
}

/* INIT now, so that receive buffers can be posted, and the address the
 * peer needs. */
static int vm_rc_init(struct vm_rc *rc)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = rc->port;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ;
	if (ibv_modify_qp(rc->qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
		return errno ? -errno : -EINVAL;
	rc->local.qpn = rc->qp->qp_num;
	rc->local.psn =
		(uint32_t)(getpid() * 7919u + rc->qp->qp_num) & 0xffffff;
	rc->local.rkey = rc->mr->rkey;
	rc->local.addr = (uint64_t)(uintptr_t)rc->buf;
	return 0;
}

int vm_rc_create(struct vm_rc *rc, struct ibv_context *ctx, struct ibv_pd *pd,
		 size_t len)
{
	struct ibv_qp_init_attr qa;
	int ret;

	memset(rc, 0, sizeof(*rc));
	rc->ctx = ctx;
	rc->len = len;
	ret = vm_rc_port(rc);
	if (ret < 0)
		return ret;
	rc->pd = pd;
	if (!rc->pd) {
		rc->pd = ibv_alloc_pd(ctx);
		if (!rc->pd)
			goto fail_errno;
		rc->own_pd = true;
	}
	rc->buf = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
	if (!rc->buf) {
		errno = ENOMEM;
		goto fail_errno;
	}
	memset(rc->buf, 0, len);
	rc->mr = ibv_reg_mr(rc->pd, rc->buf, len,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ);
	if (!rc->mr)
		goto fail_errno;
	rc->ch = ibv_create_comp_channel(ctx);
	if (!rc->ch)
		goto fail_errno;
	fcntl(rc->ch->fd, F_SETFL, fcntl(rc->ch->fd, F_GETFL) | O_NONBLOCK);
	rc->cq = ibv_create_cq(ctx, 64, rc, rc->ch, 0);
	if (!rc->cq)
		goto fail_errno;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = rc->cq;
	qa.recv_cq = rc->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	rc->qp = ibv_create_qp(rc->pd, &qa);
	if (!rc->qp)
		goto fail_errno;
	ret = vm_rc_init(rc);
	if (ret < 0) {
		errno = -ret;
		goto fail_errno;
	}
	return 0;

fail_errno:
	ret = errno ? -errno : -ENOMEM;
	fprintf(stderr, "vmutil: creating the RC resources: %s\n",
		strerror(-ret));
	vm_rc_destroy(rc);
	return ret;
}

int vm_rc_adopt(struct vm_rc *rc, struct ibv_context *ctx, struct ibv_qp *qp,
		struct ibv_mr *mr, void *buf, size_t len)
{
	int ret;

	memset(rc, 0, sizeof(*rc));
	rc->ctx = ctx;
	rc->qp = qp;
	rc->mr = mr;
	rc->buf = buf;
	rc->len = len;
	rc->borrowed = true;
	ret = vm_rc_port(rc);
	if (ret == 0)
		ret = vm_rc_init(rc);
	if (ret < 0)
		fprintf(stderr, "vmutil: the RC QP %u to INIT: %s\n",
			qp->qp_num, strerror(-ret));
	return ret;
}

int vm_rc_connect(struct vm_rc *rc, const struct vm_rc_addr *remote)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = rc->mtu;
	a.dest_qp_num = remote->qpn;
	a.rq_psn = remote->psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	/* The mlx5 suite may meet an InfiniBand port: its LID, with the
	 * GRH. */
	a.ah_attr.dlid = (uint16_t)remote->lid;
	a.ah_attr.is_global = 1;
	memcpy(a.ah_attr.grh.dgid.raw, remote->gid, 16);
	a.ah_attr.grh.sgid_index = (uint8_t)rc->gid_index;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = rc->port;
	/*
	 * The move to RTR resolves the peer's MAC for RoCE, and the kernel
	 * gives that neighbour lookup one second (rdma_addr_find_l2_eth_by_grh
	 * in drivers/infiniband/core/addr.c): ETIMEDOUT when ARP is slower,
	 * as it can be under TCG on a loaded host. The QP stays in INIT and
	 * the lookup goes on, so the move is tried again.
	 */
	for (int tries = 0;; tries++) {
		/* libibverbs answers a positive errno. */
		int err = ibv_modify_qp(
			rc->qp, &a,
			IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER);

		if (!err)
			break;
		errno = err;
		if (err != ETIMEDOUT || tries == 4)
			goto fail;
		fprintf(stderr, "vmutil: RTR: the neighbour lookup timed out; "
				"trying again\n");
	}

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	/* About 1 s: under TCG, shorter ones retransmit for nothing. */
	a.timeout = 18;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = rc->local.psn;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(rc->qp, &a,
			  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				  IBV_QP_MAX_QP_RD_ATOMIC))
		goto fail;
	return 0;
fail:
	fprintf(stderr, "vmutil: ibv_modify_qp: %s\n", strerror(errno));
	return errno ? -errno : -EINVAL;
}

int vm_rc_post_recv(struct vm_rc *rc, size_t off, size_t len, uint64_t id)
{
	struct ibv_sge sge = {
		.addr = (uint64_t)(uintptr_t)rc->buf + off,
		.length = (uint32_t)len,
		.lkey = rc->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int ret = ibv_post_recv(rc->qp, &wr, &bad);

	return ret ? -ret : 0;
}

int vm_rc_post_send(struct vm_rc *rc, size_t off, size_t len, uint64_t id)
{
	struct ibv_sge sge = {
		.addr = (uint64_t)(uintptr_t)rc->buf + off,
		.length = (uint32_t)len,
		.lkey = rc->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;
	int ret = ibv_post_send(rc->qp, &wr, &bad);

	return ret ? -ret : 0;
}

int vm_rc_wait(struct vm_rc *rc, struct ibv_wc *wc, int timeout_ms)
{
	long end = vm_now_ms() + timeout_ms;

	for (;;) {
		struct pollfd pfd = { .fd = rc->ch->fd, .events = POLLIN };
		struct ibv_cq *ev_cq;
		void *ev_ctx;
		long left;
		int n = ibv_poll_cq(rc->cq, 1, wc);

		if (n < 0)
			return -EIO;
		if (n == 0) {
			if (ibv_req_notify_cq(rc->cq, 0))
				return -EIO;
			n = ibv_poll_cq(rc->cq, 1, wc);
			if (n < 0)
				return -EIO;
		}
		if (n > 0) {
			if (wc->status != IBV_WC_SUCCESS) {
				fprintf(stderr, "vmutil: completion %llu: %s\n",
					(unsigned long long)wc->wr_id,
					ibv_wc_status_str(wc->status));
				return -EIO;
			}
			return 0;
		}
		left = end - vm_now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, (int)left);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0 && ibv_get_cq_event(rc->ch, &ev_cq, &ev_ctx) == 0)
			ibv_ack_cq_events(ev_cq, 1);
	}
}

void vm_rc_destroy(struct vm_rc *rc)
{
	if (rc->borrowed) {
		memset(rc, 0, sizeof(*rc));
		return;
	}
	if (rc->qp)
		ibv_destroy_qp(rc->qp);
	if (rc->cq)
		ibv_destroy_cq(rc->cq);
	if (rc->ch)
		ibv_destroy_comp_channel(rc->ch);
	if (rc->mr)
		ibv_dereg_mr(rc->mr);
	if (rc->pd && rc->own_pd)
		ibv_dealloc_pd(rc->pd);
	free(rc->buf);
	rc->qp = NULL;
	rc->cq = NULL;
	rc->ch = NULL;
	rc->mr = NULL;
	rc->pd = NULL;
	rc->buf = NULL;
}

/* How many objects of @type `rdma resource show` lists for this process;
 * -1 when the command fails. */
int vm_kernel_count(const char *type)
{
	char cmd[128], line[1024];
	int n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "rdma resource show %s pid %d 2>&1", type,
		 (int)getpid());
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "error") || strstr(line, "Unknown") ||
		    strstr(line, "not supported")) {
			fprintf(stderr, "%s: %s", cmd, line);
			n = -1;
			break;
		}
		if (strstr(line, " pid "))
			n++;
	}
	if (pclose(f) != 0 && n == 0)
		return -1;
	return n;
}
