// SPDX-License-Identifier: MIT
/*
 * The registry's cleanup of a dead client on a real kernel:
 *
 *   vm-cleanup DEV
 *
 * The daemon runs in this process (libdaemon: server_init on DEV, its event
 * loop turned here) and opens the domain's context on DEV. rxe cannot
 * import a context, but a forked child shares its parent's: a child
 * connects to that daemon like any client and, on the daemon's own
 * ibv_context and PD, makes an MR, a CQ, an SRQ and an RC QP with raw
 * libibverbs, registering each the verbs way (intent, kernel call,
 * register without waiting). A process of its own (forked by the child,
 * so it outlives it) makes a QP on the child's CQ: a dependency outside
 * the order. The child is killed with SIGKILL; the cleanup destroys its
 * QP, SRQ and MR and meets EBUSY on the CQ; once the other process has
 * destroyed its QP, a later round destroys the CQ. `rdma resource`
 * confirms each step. Then a child registers 1,000 objects and the
 * cleanup's time is printed beside the time raw verbs took to make them.
 * Prints CHECK lines; exits 0 when all passed.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <infiniband/verbs.h>

#include "daemon/server/conn.h"
#include "daemon/registry/ctx.h"
#include "daemon/util/log.h"
#include "daemon/registry/objects.h"
#include "daemon/server/server.h"
#include "tests/objlib.h"
#include "tests/testlib.h"
#include "tests/vm/vmsrv.h"
#include "tests/vm/vmutil.h"

#define BULK 250 /* CQ, MR, SRQ and QP each: 1,000 objects */

static const char *dev_name;
static struct ibv_context *vctx;
static struct ibv_pd *vpd;

/* What the cleanup asked the kernel, in order. */
static int (*verbs_destroy)(struct device_ctx *, enum ibc_obj_kind, uint32_t,
			    struct why *);
static struct {
	enum ibc_obj_kind kind;
	int ret;
} seen[4096];
static size_t n_seen;

static int seen_destroy(struct device_ctx *ctx, enum ibc_obj_kind kind,
			uint32_t handle, struct why *why)
{
	int ret = verbs_destroy(ctx, kind, handle, why);

	if (n_seen < sizeof(seen) / sizeof(seen[0])) {
		seen[n_seen].kind = kind;
		seen[n_seen].ret = ret;
		n_seen++;
	}
	return ret;
}

/* User objects of @type on the device (`rdma resource show`): a dead
 * process's are listed without pid, the kernel's own with "comm [...]".
 * -1 when the command fails. */
static int kernel_count(const char *type)
{
	char cmd[128], line[1024];
	int n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "rdma resource show %s 2>&1", type);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "error") || strstr(line, "Unknown")) {
			fprintf(stderr, "vm-cleanup: %s: %s", cmd, line);
			n = -1;
			break;
		}
		if (strstr(line, dev_name) && !strstr(line, "comm ["))
			n++;
	}
	pclose(f);
	return n;
}

/* Turn the loop, then rest a millisecond: timers are what is awaited. */
static void pump_wait(void)
{
	vs_pump();
	poll(NULL, 0, 1);
}

/* --- the child's side ------------------------------------------------- */

/* Declare, make, register without waiting: the library's way. */
static int reg(struct ol_client *c, uint32_t handle, uint64_t id)
{
	Rdmab__ObjRegisterRequest rq = RDMAB__OBJ_REGISTER_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	rq.object_id = id;
	rq.handle = handle;
	req.body_case = RDMAB__REQUEST__BODY_OBJ_REGISTER;
	req.obj_register = &rq;
	return ol_send(c, &req);
}

static int intent(struct ol_client *c, uint32_t kind, uint64_t *ret_id)
{
	struct ol_obj o;
	int ret = ol_create_mode(c, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
				 kind, NULL, 0, NULL, 0, &o);

	if (ret == 0)
		*ret_id = o.id;
	return ret;
}

struct made {
	uint64_t client_id;
	uint32_t mr, cq, srq, qp, other_qp;
	int64_t raw_us;
};

static struct ibv_qp *make_qp(struct ibv_cq *cq, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = cq,
		.recv_cq = cq,
		.srq = srq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4,
			 .max_recv_wr = srq ? 0 : 4,
			 .max_send_sge = 1,
			 .max_recv_sge = srq ? 0 : 1 },
	};

	return ibv_create_qp(vpd, &qa);
}

/*
 * The other process: a QP on the child's CQ; its handle goes to @to_child,
 * and when the test says so it destroys the QP and tells the test on
 * @report. It inherits the child's socket to the daemon too, so the
 * daemon learns of the child's death from its pidfd alone.
 */
static void other_process(struct ibv_cq *cq, int to_child, int report, int cmd)
{
	struct ibv_qp *qp = make_qp(cq, NULL);
	uint32_t h = qp ? qp->handle : UINT32_MAX;
	char c;

	if (vm_write_all(to_child, &h, sizeof(h)) < 0 || !qp)
		_exit(2);
	/* The test is gone when the pipe closes. */
	if (vm_read_all(cmd, &c, 1) < 0)
		_exit(3);
	h = ibv_destroy_qp(qp) == 0 ? 0 : (uint32_t)errno;
	vm_write_all(report, &h, sizeof(h));
	_exit(0);
}

static void child_small(int report, int cmd)
{
	static char buf[4096];
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16,
						  .max_sge = 1 } };
	struct ol_client c;
	struct made m = { 0 };
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	uint64_t id[4] = { 0 };
	int op[2];
	pid_t pid;

	if (ol_connect(&c, vs_sock, NULL) < 0)
		_exit(10);
	m.client_id = c.client_id;
	if (intent(&c, IBC_OBJ_MR, &id[0]) < 0 ||
	    !(mr = ibv_reg_mr(vpd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE)) ||
	    reg(&c, mr->handle, id[0]) < 0)
		_exit(11);
	if (intent(&c, IBC_OBJ_CQ, &id[1]) < 0 ||
	    !(cq = ibv_create_cq(vctx, 16, NULL, NULL, 0)) ||
	    reg(&c, cq->handle, id[1]) < 0)
		_exit(12);
	if (intent(&c, IBC_OBJ_SRQ, &id[2]) < 0 ||
	    !(srq = ibv_create_srq(vpd, &sa)) ||
	    reg(&c, srq->handle, id[2]) < 0)
		_exit(13);
	if (intent(&c, IBC_OBJ_QP, &id[3]) < 0 || !(qp = make_qp(cq, srq)) ||
	    reg(&c, qp->handle, id[3]) < 0)
		_exit(14);
	m.mr = mr->handle;
	m.cq = cq->handle;
	m.srq = srq->handle;
	m.qp = qp->handle;
	if (pipe(op) < 0)
		_exit(15);
	pid = fork();
	if (pid == 0) {
		close(op[0]);
		other_process(cq, op[1], report, cmd);
	}
	close(op[1]);
	if (pid < 0 || vm_read_all(op[0], &m.other_qp, sizeof(m.other_qp)) < 0)
		_exit(16);
	/* A round trip: the registers before it have been read. */
	if (ol_list(&c, c.client_id, NULL, NULL, 0) != 4)
		_exit(17);
	vm_write_all(report, &m, sizeof(m));
	for (;;)
		pause();
}

static void child_bulk(int report)
{
	static char buf[BULK][64];
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ol_client c;
	struct made m = { 0 };

	if (ol_connect(&c, vs_sock, NULL) < 0)
		_exit(20);
	m.client_id = c.client_id;
	for (int i = 0; i < BULK; i++) {
		struct ibv_cq *cq;
		struct ibv_mr *mr;
		struct ibv_srq *srq;
		struct ibv_qp *qp;
		uint64_t id[4] = { 0 };

		struct timespec a, b;

		if (intent(&c, IBC_OBJ_CQ, &id[0]) < 0 ||
		    intent(&c, IBC_OBJ_MR, &id[1]) < 0 ||
		    intent(&c, IBC_OBJ_SRQ, &id[2]) < 0 ||
		    intent(&c, IBC_OBJ_QP, &id[3]) < 0)
			_exit(21);
		/* The kernel's share: the raw verbs calls alone. */
		clock_gettime(CLOCK_MONOTONIC, &a);
		cq = ibv_create_cq(vctx, 4, NULL, NULL, 0);
		mr = ibv_reg_mr(vpd, buf[i], sizeof(buf[i]),
				IBV_ACCESS_LOCAL_WRITE);
		srq = ibv_create_srq(vpd, &sa);
		qp = cq && srq ? make_qp(cq, srq) : NULL;
		clock_gettime(CLOCK_MONOTONIC, &b);
		m.raw_us += (b.tv_sec - a.tv_sec) * 1000000 +
			    (b.tv_nsec - a.tv_nsec) / 1000;
		if (!cq || !mr || !srq || !qp)
			_exit(22);
		if (reg(&c, cq->handle, id[0]) < 0 ||
		    reg(&c, mr->handle, id[1]) < 0 ||
		    reg(&c, srq->handle, id[2]) < 0 ||
		    reg(&c, qp->handle, id[3]) < 0)
			_exit(23);
	}
	if (ol_list(&c, c.client_id, NULL, NULL, 0) != 4 * BULK)
		_exit(24);
	vm_write_all(report, &m, sizeof(m));
	for (;;)
		pause();
}

/* Fork a child that runs @fn; it dies with us. */
static pid_t fork_child(void (*fn)(int, int), int *ret_report, int *ret_cmd)
{
	int rp[2], cp[2];
	pid_t pid;

	if (pipe(rp) < 0 || pipe(cp) < 0)
		return -1;
	pid = vs_fork();
	if (pid == 0) {
		close(rp[0]);
		close(cp[1]);
		fn(rp[1], cp[0]);
		_exit(0);
	}
	close(rp[1]);
	close(cp[0]);
	*ret_report = rp[0];
	*ret_cmd = cp[1];
	return pid;
}

static void bulk_wrap(int report, int cmd)
{
	(void)cmd;
	child_bulk(report);
}

/* --- the parent's side -------------------------------------------------- */

static bool read_made(int fd, struct made *m, int ms)
{
	return vs_pump_until_readable(fd, ms) &&
	       vm_read_all(fd, m, sizeof(*m)) == 0;
}

static void test_small(void)
{
	static const enum ibc_obj_kind order[] = { IBC_OBJ_QP, IBC_OBJ_SRQ,
						   IBC_OBJ_CQ, IBC_OBJ_MR };
	struct obj_owner *ow;
	struct made m;
	int report, cmd, status, i;
	uint32_t other_ret = 1;
	int64_t deadline;
	pid_t pid;
	bool ok;

	pid = fork_child(child_small, &report, &cmd);
	ok = pid > 0 && read_made(report, &m, 30000);
	if (!vm_check(ok, "cleanup-made",
		      "a child made and registered MR %u, CQ %u, SRQ %u, QP "
		      "%u; another process QP %u on its CQ",
		      ok ? m.mr : 0, ok ? m.cq : 0, ok ? m.srq : 0,
		      ok ? m.qp : 0, ok ? m.other_qp : 0))
		return;
	vm_check(kernel_count("qp") == 2 && kernel_count("cq") == 1 &&
			 kernel_count("srq") == 1 && kernel_count("mr") == 1,
		 "cleanup-kernel-before",
		 "rdma resource: qp %d, cq %d, srq %d, mr %d (want 2 1 1 1)",
		 kernel_count("qp"), kernel_count("cq"), kernel_count("srq"),
		 kernel_count("mr"));
	n_seen = 0;
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	/* The first rounds: everything but the CQ the other QP uses. */
	deadline = tl_now_ms() + 20000;
	while ((ow = vs_owner_of(m.client_id)) &&
	       !(ow->state == OWNER_DEAD && ow->round >= 1) &&
	       tl_now_ms() < deadline)
		pump_wait();
	ok = ow && ow->n_objs == 1 && TAILQ_FIRST(&ow->kinds[IBC_OBJ_CQ]);
	vm_check(ok, "cleanup-busy",
		 "after round %u the child's CQ is kept (%u objects left)",
		 ow ? ow->round : 0, ow ? ow->n_objs : 0);
	vm_check(kernel_count("qp") == 1 && kernel_count("cq") == 1 &&
			 kernel_count("srq") == 0 && kernel_count("mr") == 0,
		 "cleanup-kernel-busy",
		 "rdma resource: qp %d, cq %d, srq %d, mr %d (want 1 1 0 0)",
		 kernel_count("qp"), kernel_count("cq"), kernel_count("srq"),
		 kernel_count("mr"));
	/* The other process lets go; a later round destroys the CQ. */
	if (write(cmd, "x", 1) != 1 || !vs_pump_until_readable(report, 10000) ||
	    vm_read_all(report, &other_ret, sizeof(other_ret)) < 0)
		other_ret = 1;
	vm_check(other_ret == 0, "cleanup-other-qp",
		 "the other process destroyed its QP: %u", other_ret);
	deadline = tl_now_ms() + 40000;
	while (vs_owner_of(m.client_id) && tl_now_ms() < deadline)
		pump_wait();
	vm_check(!vs_owner_of(m.client_id) && kernel_count("qp") == 0 &&
			 kernel_count("cq") == 0,
		 "cleanup-done",
		 "the registry %s the child; rdma resource: qp %d, cq %d",
		 vs_owner_of(m.client_id) ? "still has" : "forgot",
		 kernel_count("qp"), kernel_count("cq"));
	/* Order: QP, SRQ, CQ (busy), MR, then the CQ again. */
	ok = n_seen >= 5;
	for (i = 0; ok && i < 4; i++)
		ok = seen[i].kind == order[i] &&
		     seen[i].ret == (i == 2 ? -EBUSY : 0);
	ok = ok && seen[n_seen - 1].kind == IBC_OBJ_CQ &&
	     seen[n_seen - 1].ret == 0;
	vm_check(ok, "cleanup-order",
		 "%zu destroys: %s %d, %s %d, %s %d, %s %d, ... last %s %d",
		 n_seen, obj_kind_name(seen[0].kind), seen[0].ret,
		 obj_kind_name(seen[1].kind), seen[1].ret,
		 obj_kind_name(seen[2].kind), seen[2].ret,
		 obj_kind_name(seen[3].kind), seen[3].ret,
		 n_seen ? obj_kind_name(seen[n_seen - 1].kind) : "-",
		 n_seen ? seen[n_seen - 1].ret : 0);
	close(report);
	close(cmd);
}

static void test_bulk(void)
{
	int report, cmd, status;
	int64_t t0, gone_ms, deadline;
	struct made m;
	pid_t pid;
	bool ok;

	pid = fork_child(bulk_wrap, &report, &cmd);
	ok = pid > 0 && read_made(report, &m, 120000);
	if (!vm_check(ok, "cleanup-bulk-made",
		      "a child made and registered %d objects with raw verbs "
		      "in %lld ms of kernel calls",
		      4 * BULK, ok ? (long long)m.raw_us / 1000 : 0LL))
		return;
	t0 = tl_now_ms();
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	deadline = t0 + 120000;
	while (vs_owner_of(m.client_id) && tl_now_ms() < deadline)
		vs_pump();
	gone_ms = tl_now_ms() - t0;
	vm_check(!vs_owner_of(m.client_id) && kernel_count("qp") == 0 &&
			 kernel_count("cq") == 0 && kernel_count("mr") == 0 &&
			 kernel_count("srq") == 0,
		 "cleanup-bulk",
		 "%d objects destroyed %lld ms after the kill; raw verbs "
		 "took %lld ms to make them (%.2fx)",
		 4 * BULK, (long long)gone_ms, (long long)m.raw_us / 1000,
		 m.raw_us ? (double)gone_ms * 1000 / (double)m.raw_us : 0);
	close(report);
	close(cmd);
}

int main(int argc, char **argv)
{
	struct ol_client parent;
	struct device *dev;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc != 2) {
		fprintf(stderr, "usage: vm-cleanup DEV\n");
		return 2;
	}
	dev_name = argv[1];
	dev = vs_start("cleanup", dev_name);
	if (!dev)
		return 1;
	/* Later rounds far enough apart for the other process to act. */
	vs_srv.core.registry->backoff_ms = 200;
	verbs_destroy = dev->ctx_ops_table.obj_destroy;
	dev->ctx_ops_table.obj_destroy = seen_destroy;
	/* This process's session opens the domain's context; the children
	 * inherit its libibverbs context. */
	if (!vs_open("cleanup", &parent, &vctx, &vpd))
		return 1;

	test_small();
	test_bulk();
	ol_close(&parent);
	vs_stop();
	return vm_failures() ? 1 : 0;
}
