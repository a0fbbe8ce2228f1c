// SPDX-License-Identifier: MIT
/*
 * The import path on real mlx5 hardware; exits 77 (skipped) without it.
 * Unverified until someone runs it on a ConnectX-5 or newer: see README.md.
 *
 * The daemon (rdmabrokerd --device verbs) runs as the caller; two clients,
 * A and B, run at once in one domain, as nobody when the caller is root
 * (the deployment case: the importer is another process and uid than the
 * opener). Each imports the domain's context and PD, and makes a CQ, an RC
 * QP, an MR and a receive WQ with the library's constructors (intent, the
 * kernel call in the imported context, register), which the broker's
 * registry lists as the client's. They share the context when the broker
 * gives both the same context id and their cmd_fds are the same open file
 * (kcmp). A and B connect their QPs: A writes a pattern into B's MR (RDMA
 * write) and sends a message, each completion polled, and B checks both
 * byte for byte. Then B is killed with SIGKILL while it holds everything:
 * the kernel (`rdma resource`, by QP number and by count, never by the
 * dead pid) and the registry no longer list its objects once the broker
 * destroyed them, and A's are untouched.
 *
 * --soft: the same against the soft device, whose constructors register
 * as on mlx5; it has no data path or kernel objects, so the connection,
 * the transfer and `rdma resource` are skipped on SKIP lines.
 * --own DEV (rxe under tests/vm, which cannot import): the clients connect
 * with IBC_CONNECT_ALLOW_OWN_CONTEXT and the same constructors run on
 * contexts of their own, registering nothing; the transfer and the kill
 * run as on mlx5, the kernel freeing B's objects with its context.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/kcmp.h>

#include <infiniband/verbs.h>

#define HW_NAME "hw_import"
#include "tests/hw/hwlib.h"
#include "tests/vm/vmutil.h"

#define BUF_LEN 8192
#define MSG_OFF 4096 /* the send lands here, the RDMA write at 0 */
#define WRITE_LEN 1024
#define MSG_LEN 256

/* What each client tells the parent once it holds everything. */
struct report {
	uint64_t client_id;
	uint64_t context_id;
	int pid;
	int cmd_fd; /* -1: no verbs context (the soft device) */
	uint32_t qpn;
	int registered; /* of CQ, QP, MR, WQ: how many the registry lists */
	int wq;		/* 1: made; 0: the device has none (said) */
	int data_ok;	/* 1: the transfer checked; 0: skipped (said) */
};

static void pattern(uint8_t *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 131u + i * 7u);
}

/* One completion of @cq within @ms; -EIO for an error status. */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	for (int waited = 0; waited < ms; waited++) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			return -EIO;
		if (n == 1) {
			if (wc->status == IBV_WC_SUCCESS)
				return 0;
			fprintf(stderr, "hw_import: completion %llu: %s\n",
				(unsigned long long)wc->wr_id,
				ibv_wc_status_str(wc->status));
			return -EIO;
		}
		usleep(1000);
	}
	return -ETIMEDOUT;
}

/* How many of this client's CQ, QP, MR and WQ the registry lists. */
static int registered(struct ibc_client *c, uint64_t id)
{
	struct ibc_object_filter f = { .comp_mask = IBC_OBJECT_FILTER_CLIENT,
				       .client_id = id };
	struct ibc_object_info *o;
	size_t n = 0;
	int found = 0;

	if (ibc_list_objects(c, &f, &o, sizeof(*o), &n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (o[i].client_id == id &&
		    (o[i].kind == IBC_OBJ_CQ || o[i].kind == IBC_OBJ_QP ||
		     o[i].kind == IBC_OBJ_MR || o[i].kind == IBC_OBJ_WQ))
			found++;
	ibc_list_free(o);
	return found;
}

/* The client's objects, made with the library's constructors. */
struct objs {
	struct ibc_cq *cq;
	struct ibc_qp *qp;
	struct ibc_mr *mr;
	struct ibc_wq *wq;
	uint8_t *buf;
};

static int make_objs(struct ibc_ctx *ctx, struct objs *o, int *ret_wq)
{
	struct ibc_qp_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4,
			 .max_recv_wr = 4,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	int err;

	o->buf = aligned_alloc(4096, BUF_LEN);
	CHECK(o->buf, "out of memory");
	memset(o->buf, 0, BUF_LEN);
	CHECK(ibc_cq_create(ctx, 16, &o->cq) == 0, "ibc_cq_create");
	qa.send_cq = o->cq;
	qa.recv_cq = o->cq;
	CHECK(ibc_qp_create(ctx, &qa, &o->qp) == 0, "ibc_qp_create (RC)");
	CHECK(ibc_reg_mr(ctx, o->buf, BUF_LEN,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
			 &o->mr) == 0,
	      "ibc_reg_mr");
	err = ibc_wq_create(ctx, o->cq, NULL, &o->wq);
	*ret_wq = err == 0;
	if (err == -EOPNOTSUPP && hw_mode == HW_OWN)
		HW_SKIP("the WQ", ibc_last_error());
	else
		CHECK(err == 0, "ibc_wq_create");
	return 0;
}

/* A writes and sends to B over @peer (a socketpair end); B checks. */
static int transfer(struct ibc_ctx *ctx, struct objs *o, int peer, bool is_a)
{
	struct vm_rc_addr remote;
	struct vm_rc rc;
	struct ibv_wc wc;
	uint8_t want[WRITE_LEN];
	char x = 'x';

	CHECK(vm_rc_adopt(&rc, ibc_verbs_context(ctx), ibc_verbs_qp(o->qp),
			  ibc_verbs_mr(o->mr), o->buf, BUF_LEN) == 0,
	      "the RC QP to INIT");
	if (!is_a) {
		struct ibv_sge sge = { .addr = (uintptr_t)o->buf + MSG_OFF,
				       .length = MSG_LEN,
				       .lkey = ibc_mr_lkey(o->mr) };
		struct ibv_recv_wr wr = { .wr_id = 1,
					  .sg_list = &sge,
					  .num_sge = 1 },
				   *bad;

		CHECK(ibv_post_recv(ibc_verbs_qp(o->qp), &wr, &bad) == 0,
		      "ibv_post_recv");
	}
	CHECK(vm_write_all(peer, &rc.local, sizeof(rc.local)) == 0 &&
		      vm_read_all(peer, &remote, sizeof(remote)) == 0,
	      "the peer's address");
	CHECK(vm_rc_connect(&rc, &remote) == 0, "the RC QP to RTR and RTS");
	/* Both at RTS before the first work request. */
	CHECK(vm_write_all(peer, &x, 1) == 0 && vm_read_all(peer, &x, 1) == 0,
	      "the peer");
	if (is_a) {
		struct ibv_sge ws = { .addr = (uintptr_t)o->buf,
				      .length = WRITE_LEN,
				      .lkey = ibc_mr_lkey(o->mr) };
		struct ibv_sge ss = { .addr = (uintptr_t)o->buf + MSG_OFF,
				      .length = MSG_LEN,
				      .lkey = ibc_mr_lkey(o->mr) };
		struct ibv_send_wr send = { .wr_id = 2,
					    .sg_list = &ss,
					    .num_sge = 1,
					    .opcode = IBV_WR_SEND,
					    .send_flags = IBV_SEND_SIGNALED };
		struct ibv_send_wr write = {
			.wr_id = 1,
			.next = &send,
			.sg_list = &ws,
			.num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = remote.addr,
				     .rkey = remote.rkey },
		},
				   *bad;

		pattern(o->buf, WRITE_LEN, 1);
		pattern(o->buf + MSG_OFF, MSG_LEN, 2);
		CHECK(ibv_post_send(ibc_verbs_qp(o->qp), &write, &bad) == 0,
		      "ibv_post_send");
		for (int i = 0; i < 2; i++)
			CHECK(poll_one(ibc_verbs_cq(o->cq), &wc, 15000) == 0,
			      "completion %d of the write and the send", i);
		return 0;
	}
	/* RC keeps the order: the write is in place when the send lands. */
	CHECK(poll_one(ibc_verbs_cq(o->cq), &wc, 15000) == 0 &&
		      wc.opcode == IBV_WC_RECV && wc.byte_len == MSG_LEN,
	      "the send's completion");
	pattern(want, WRITE_LEN, 1);
	CHECK(memcmp(o->buf, want, WRITE_LEN) == 0,
	      "the RDMA write's bytes differ");
	pattern(want, MSG_LEN, 2);
	CHECK(memcmp(o->buf + MSG_OFF, want, MSG_LEN) == 0,
	      "the send's bytes differ");
	printf("hw_import: B found A's RDMA write (%d bytes) and send (%d "
	       "bytes) byte for byte\n",
	       WRITE_LEN, MSG_LEN);
	return 0;
}

/* One client: import, objects, transfer, report; then hold everything
 * until the parent closes @hold (A) or kills it (B). */
static int client(const char *dev, bool is_a, int peer, int out_fd, int hold)
{
	struct ibc_client_info ci;
	struct report rep = { .cmd_fd = -1 };
	struct ibc_client *c;
	struct ibc_caps caps;
	struct ibc_ctx *ctx;
	struct objs o;
	char x;

	CHECK(geteuid() != 0 || hw_become(NOBODY) == 0, "cannot become uid %d",
	      NOBODY);
	CHECK(hw_connect(&c) == 0, "connect");
	CHECK(ibc_client_info(c, &ci, sizeof(ci)) == 0, "ibc_client_info");
	CHECK(ibc_open(c, dev, &ctx) == 0, "ibc_open %s", dev);
	CHECK(ibc_query(ctx, &caps, sizeof(caps)) == 0, "ibc_query");
	if (hw_mode == HW_OWN) {
		CHECK(!caps.shared, "%s: an own context says it is shared",
		      dev);
	} else {
		CHECK(caps.shared, "%s: context not shared", dev);
	}
	if (hw_mode != HW_SOFT) {
		CHECK(ibc_verbs_context(ctx), "no verbs context");
		rep.cmd_fd = ibc_verbs_context(ctx)->cmd_fd;
	}
	if (hw_mode == HW_MLX5)
		CHECK(ibc_verbs_pd(ctx), "no shared PD");
	if (make_objs(ctx, &o, &rep.wq))
		return 1;
	rep.client_id = ci.client_id;
	rep.context_id = caps.context_id;
	rep.pid = (int)getpid();
	rep.qpn = ibc_qp_num(o.qp);
	rep.registered = registered(c, ci.client_id);
	if (hw_mode == HW_SOFT) {
		if (is_a)
			HW_SKIP("the RC transfer",
				"the soft device has no data path");
	} else {
		if (transfer(ctx, &o, peer, is_a))
			return 1;
		rep.data_ok = 1;
	}
	CHECK(vm_write_all(out_fd, &rep, sizeof(rep)) == 0, "report");
	close(out_fd);
	while (read(hold, &x, 1) > 0)
		;
	/* Still all there after B's death, and the destructors work. */
	CHECK(hw_mode == HW_OWN ||
		      registered(c, ci.client_id) == rep.registered,
	      "A's objects changed when B died");
	if (o.wq)
		CHECK(ibc_wq_destroy(o.wq) == 0, "ibc_wq_destroy");
	CHECK(ibc_qp_destroy(o.qp) == 0 && ibc_dereg_mr(o.mr) == 0 &&
		      ibc_cq_destroy(o.cq) == 0,
	      "the destructors");
	ibc_close(ctx);
	ibc_disconnect(c);
	return 0;
}

/* The broker lists @dev as importable. */
static int check_listed(const char *dev)
{
	struct ibc_device_info *d;
	struct ibc_client *c;
	int found = 0;
	size_t n;

	CHECK(hw_connect(&c) == 0, "connect");
	CHECK(ibc_list_devices(c, &d, sizeof(*d), &n) == 0, "ibc_list_devices");
	for (size_t i = 0; i < n; i++)
		if (strcmp(d[i].name, dev) == 0 && d[i].import)
			found = 1;
	ibc_list_free(d);
	ibc_disconnect(c);
	CHECK(found, "%s is not listed as importable", dev);
	return 0;
}

/* The two clients' reports: made, registered, shared, transferred. */
static int check_reports(const struct report r[2])
{
	/* An own context registers nothing; an imported one all four (three
	 * where the device has no WQ). */
	for (int i = 0; i < 2; i++) {
		int want = hw_mode == HW_OWN ? 0 : 3 + r[i].wq;

		CHECK(r[i].registered == want,
		      "client %c: the registry lists %d of its objects, not "
		      "%d",
		      'A' + i, r[i].registered, want);
	}
	printf("hw_import: A and B made a CQ, an RC QP, an MR%s with the "
	       "constructors; the registry lists %d and %d of them\n",
	       r[0].wq ? " and a WQ" : "", r[0].registered, r[1].registered);
	if (hw_mode == HW_OWN) {
		HW_SKIP("one shared context", "own contexts (no import)");
	} else {
		CHECK(r[0].context_id == r[1].context_id,
		      "context ids differ: %llu, %llu",
		      (unsigned long long)r[0].context_id,
		      (unsigned long long)r[1].context_id);
	}
	if (hw_mode == HW_MLX5)
		CHECK(syscall(SYS_kcmp, r[0].pid, r[1].pid, KCMP_FILE,
			      r[0].cmd_fd, r[1].cmd_fd) == 0,
		      "the clients' cmd_fds are not the same open file");
	if (hw_mode != HW_SOFT)
		CHECK(r[1].data_ok, "no transfer");
	return 0;
}

/* B (@b) is killed holding its objects: gone from the kernel and the
 * registry, by count and by QP number. */
static int kill_b(const struct report *b, pid_t pid)
{
	static const char *const types[] = { "qp", "cq", "mr" };
	int before[3] = { 0 }, after[3] = { 0 }, listed = 0, left = -1;
	struct ibc_client *c;

	if (hw_mode == HW_SOFT) {
		HW_SKIP("rdma resource", "the soft device has no kernel "
					 "objects");
	} else {
		for (int i = 0; i < 3; i++)
			before[i] = hw_rdma_count(types[i]);
		listed = hw_rdma_qp_listed(b->qpn);
		CHECK(listed == 1 && before[0] > 0 && before[1] > 0 &&
			      before[2] > 0,
		      "rdma resource before the kill: QP %u %s; qp %d, cq "
		      "%d, mr %d",
		      b->qpn, listed == 1 ? "listed" : "not listed", before[0],
		      before[1], before[2]);
	}
	CHECK(kill(pid, SIGKILL) == 0, "kill B");
	waitpid(pid, NULL, 0);
	if (hw_mode != HW_SOFT) {
		/* B's QP, CQ and MR (its WQ has no rdma resource type). */
		for (int i = 0; i < 3; i++)
			after[i] = hw_wait_count(types[i], before[i] - 1, 5000);
		listed = hw_rdma_qp_listed(b->qpn);
		printf("hw_import: rdma resource, all processes: qp %d -> %d, "
		       "cq %d -> %d, mr %d -> %d; B's QP %u %s\n",
		       before[0], after[0], before[1], after[1], before[2],
		       after[2], b->qpn, listed ? "still listed" : "gone");
		CHECK(listed == 0 && after[0] == before[0] - 1 &&
			      after[1] == before[1] - 1 &&
			      after[2] == before[2] - 1,
		      "B's objects stayed in the kernel after its SIGKILL");
	}
	CHECK(hw_connect(&c) == 0, "connect");
	for (int i = 0; i < 50 && (left = registered(c, b->client_id)); i++)
		usleep(100000);
	ibc_disconnect(c);
	CHECK(left == 0, "the registry still lists %d of B's objects", left);
	return 0;
}

int main(int argc, char **argv)
{
	const char *bin = getenv("RDMABROKERD");
	struct report rep[2];
	int sv[2], out[2], hold[2], ret;
	pid_t child[2] = { -1, -1 };
	const char *dev;

	ret = hw_init(argc, argv, hw_find_mlx5, &dev);
	if (ret)
		return ret;
	if (!bin || hw_mkdir("rdmab-hw") < 0 || pipe2(out, O_CLOEXEC) < 0 ||
	    pipe2(hold, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return 99;
	ret = 1;
	if (hw_start_daemon(bin, NULL) < 0)
		goto out;
	if (hw_mode == HW_OWN)
		HW_SKIP("import", "the device cannot import: the constructors "
				  "run on own contexts");
	else if (check_listed(dev))
		goto out;
	for (int i = 0; i < 2; i++) {
		child[i] = fork();
		if (child[i] == 0) {
			close(out[0]);
			close(hold[1]);
			close(sv[!i]);
			_exit(client(dev, i == 0, sv[i], out[1], hold[0]));
		}
	}
	/* Only the clients hold these: one that fails ends the other's
	 * wait, and the reports' pipe ends with both. */
	close(sv[0]);
	close(sv[1]);
	close(out[1]);
	close(hold[0]);
	/* In either order (each report is one atomic pipe write). */
	for (int i = 0; i < 2; i++)
		if (vm_read_all(out[0], &rep[i], sizeof(rep[i])) < 0)
			goto out;
	if (rep[0].pid != child[0]) {
		struct report t = rep[0];

		rep[0] = rep[1];
		rep[1] = t;
	}
	if (check_reports(rep) || kill_b(&rep[1], child[1]))
		goto out;
	child[1] = -1;
	ret = 0;
out:
	close(hold[1]);
	for (int i = 0; i < 2; i++) {
		int st;

		if (child[i] <= 0)
			continue;
		if (ret)
			kill(child[i], SIGKILL);
		waitpid(child[i], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			ret = 1;
	}
	hw_stop_daemon(NULL);
	printf("hw_import: %s: %s\n", dev, ret ? "FAIL" : "PASS");
	return ret;
}
