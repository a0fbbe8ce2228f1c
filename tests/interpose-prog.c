// SPDX-License-Identifier: MIT
/*
 * An unmodified verbs program for tests/interpose.sh: plain libibverbs, no
 * libibclient, run under the interposer. It opens the first device and
 * makes a PD, two CQs, an SRQ, an RC QP on them and an MR, then:
 *   hold    prints "READY ..." and waits for SIGKILL; a line "dereg" on
 *           stdin deregisters the MR first and prints "dereg ERR";
 *   order   destroys a CQ the QP uses (libibverbs' answer: EBUSY), then
 *           everything in order, and prints "OK";
 *   dlopen  as hold, with every verb resolved by dlvsym(..., "IBVERBS_1.1")
 *           from dlopen("libibverbs.so.1"), as NCCL does;
 *   dm      allocates device memory, writes and reads it back, frees it,
 *           allocates it again, prints "READY DM" and waits;
 *   xrcd FILE  opens an XRC domain on FILE (O_CREAT), prints "READY XRCD"
 *           and waits;
 *   twice   destroys every object twice, closes the context twice, and
 *           prints each second answer ("twice qp EINVAL ...") and "OK";
 *   pd      allocates two PDs and deallocates one a QP uses, printing
 *           "PD same=S busy=ERR extra=ERR" (extra: one dealloc more than
 *           the allocs), then "OK";
 *   rss     two WQs, an indirection table over them, an RSS QP over it
 *           and a UDP flow to 10.0.0.1:4791 on port 1, as a program without
 *           CAP_NET_RAW makes them; destroying the table and the QP while
 *           used answers EBUSY ("rss busy EBUSY EBUSY"); prints
 *           "READY RSS", waits for a line on stdin (or SIGKILL), then
 *           destroys everything in order and prints "OK" (a line "close":
 *           closes the context holding them, prints "closed");
 *   fork    forks while another thread allocates and frees PDs; each
 *           child tries a CQ on the inherited context ("child inherited
 *           ERR"), then opens the device anew and makes one there
 *           ("child fresh OK"); prints "OK" once every child is done.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#undef ibv_reg_mr

static struct {
	__typeof__(&ibv_get_device_list) get_device_list;
	__typeof__(&ibv_free_device_list) free_device_list;
	__typeof__(&ibv_open_device) open_device;
	__typeof__(&ibv_close_device) close_device;
	__typeof__(&ibv_alloc_pd) alloc_pd;
	__typeof__(&ibv_dealloc_pd) dealloc_pd;
	__typeof__(&ibv_create_cq) create_cq;
	__typeof__(&ibv_destroy_cq) destroy_cq;
	__typeof__(&ibv_create_srq) create_srq;
	__typeof__(&ibv_destroy_srq) destroy_srq;
	__typeof__(&ibv_create_qp) create_qp;
	__typeof__(&ibv_destroy_qp) destroy_qp;
	__typeof__(&ibv_reg_mr) reg_mr;
	__typeof__(&ibv_dereg_mr) dereg_mr;
} v = {
	ibv_get_device_list, ibv_free_device_list, ibv_open_device,
	ibv_close_device,    ibv_alloc_pd,	   ibv_dealloc_pd,
	ibv_create_cq,	     ibv_destroy_cq,	   ibv_create_srq,
	ibv_destroy_srq,     ibv_create_qp,	   ibv_destroy_qp,
	ibv_reg_mr,	     ibv_dereg_mr,
};

static __attribute__((noreturn)) void die(const char *what, int err)
{
	printf("FAIL %s: %s\n", what, strerror(err));
	exit(1);
}

#define RESOLVE(h, f)                                                          \
	do {                                                                   \
		v.f = dlvsym(h, "ibv_" #f, "IBVERBS_1.1");                     \
		if (!v.f)                                                      \
			die("dlvsym ibv_" #f, ENOENT);                         \
	} while (0)

static void resolve(void)
{
	void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h)
		die(dlerror(), ENOENT);
	RESOLVE(h, get_device_list);
	RESOLVE(h, free_device_list);
	RESOLVE(h, open_device);
	RESOLVE(h, close_device);
	RESOLVE(h, alloc_pd);
	RESOLVE(h, dealloc_pd);
	RESOLVE(h, create_cq);
	RESOLVE(h, destroy_cq);
	RESOLVE(h, create_srq);
	RESOLVE(h, destroy_srq);
	RESOLVE(h, create_qp);
	RESOLVE(h, destroy_qp);
	RESOLVE(h, reg_mr);
	RESOLVE(h, dereg_mr);
}

/* Device memory: ibv_alloc_dm, ibv_memcpy_to_dm/from_dm, ibv_free_dm. */
static void dm_mode(struct ibv_context *ctx)
{
	struct ibv_alloc_dm_attr a = { .length = 4096 };
	uint32_t out[64], in[64];
	struct ibv_dm *dm;
	int ret;

	for (unsigned int i = 0; i < 64; i++)
		out[i] = 0xc0de0000u + i;
	if (!(dm = ibv_alloc_dm(ctx, &a)))
		die("ibv_alloc_dm", errno);
	if ((ret = ibv_memcpy_to_dm(dm, 0, out, sizeof(out))))
		die("ibv_memcpy_to_dm", ret);
	if ((ret = ibv_memcpy_from_dm(in, dm, 0, sizeof(in))))
		die("ibv_memcpy_from_dm", ret);
	if (memcmp(in, out, sizeof(in)))
		die("the DM read back other bytes", EIO);
	if ((ret = ibv_free_dm(dm)))
		die("ibv_free_dm", ret);
	if (!(dm = ibv_alloc_dm(ctx, &a)))
		die("ibv_alloc_dm (again)", errno);
	printf("READY DM\n");
	for (;;)
		pause();
}

/* An XRC domain on a file, as ibv_xsrq_pingpong opens /tmp/xrc_domain. */
static void xrcd_mode(struct ibv_context *ctx, const char *file)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.oflags = O_CREAT,
	};

	a.fd = open(file, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
	if (a.fd < 0)
		die(file, errno);
	if (!ibv_open_xrcd(ctx, &a))
		die("ibv_open_xrcd", errno);
	printf("READY XRCD\n");
	for (;;)
		pause();
}

static const char *err_name(int err)
{
	switch (err) {
	case 0:
		return "0";
	case EINVAL:
		return "EINVAL";
	case EBUSY:
		return "EBUSY";
	case ESTALE:
		return "ESTALE";
	case ENOENT:
		return "ENOENT";
	default:
		return strerror(err);
	}
}

/* Two PDs, one deallocated while a QP uses it. */
static void pd_mode(struct ibv_context *ctx)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4,
			 .max_recv_wr = 4,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_pd *pd1, *pd2;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int busy, extra, ret;

	if (!(pd1 = ibv_alloc_pd(ctx)) || !(pd2 = ibv_alloc_pd(ctx)))
		die("ibv_alloc_pd", errno);
	if (!(cq = ibv_create_cq(ctx, 4, NULL, NULL, 0)))
		die("ibv_create_cq", errno);
	qa.send_cq = qa.recv_cq = cq;
	if (!(qp = ibv_create_qp(pd1, &qa)))
		die("ibv_create_qp", errno);
	busy = ibv_dealloc_pd(pd1);
	if ((ret = ibv_destroy_qp(qp)) || (ret = ibv_destroy_cq(cq)))
		die("destroying the QP and CQ", ret);
	if (busy && (ret = ibv_dealloc_pd(pd1)))
		die("ibv_dealloc_pd once unused", ret);
	if ((ret = ibv_dealloc_pd(pd2)))
		die("ibv_dealloc_pd", ret);
	/* One more than allocated: the domain's PD refuses it; a PD of the
	 * process's own was freed, and its memory is not read again. */
	extra = pd1 == pd2 ? ibv_dealloc_pd(pd1) : EINVAL;
	printf("PD same=%d busy=%s extra=%s\n", pd1 == pd2, err_name(busy),
	       err_name(extra));
	if ((ret = ibv_close_device(ctx)))
		die("ibv_close_device", errno);
	printf("OK\n");
	exit(0);
}

static volatile int fork_stop;

/*
 * Another thread at work in the interposer while the main one forks. On
 * the soft device (whose objects the interposer knows, so that an unknown
 * one is EINVAL, unread) only the dealloc of a PD that never was: it takes
 * the interposer's locks and never malloc's, which fork() takes after the
 * prepare handlers, so that a thread stopped in malloc would hold none of
 * the interposer's and the test could not fail. Elsewhere PDs made and
 * freed.
 */
static void *pd_churn(void *arg)
{
	struct ibv_context *ctx = arg;
	bool soft = ctx->device->node_type == IBV_NODE_UNSPECIFIED;
	struct ibv_pd never = { .context = ctx };

	while (!fork_stop) {
		struct ibv_pd *pd;

		if (soft) {
			if (ibv_dealloc_pd(&never) != EINVAL)
				die("ibv_dealloc_pd of no PD", EIO);
			continue;
		}
		pd = ibv_alloc_pd(ctx);
		if (!pd || ibv_dealloc_pd(pd))
			die("ibv_alloc_pd/ibv_dealloc_pd (churn)", EIO);
	}
	return NULL;
}

/* In the child: the inherited context, then a context of its own. */
static void fork_child(struct ibv_context *ctx)
{
	struct ibv_device **list;
	struct ibv_context *own;
	struct ibv_cq *cq;
	int n = 0;

	errno = 0;
	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	printf("child inherited %s\n", cq ? "made" : err_name(errno));
	list = ibv_get_device_list(&n);
	if (!list || n < 1)
		_exit(2);
	own = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!own || !(cq = ibv_create_cq(own, 4, NULL, NULL, 0)))
		_exit(3);
	if (ibv_destroy_cq(cq) || ibv_close_device(own))
		_exit(4);
	printf("child fresh OK\n");
	fflush(stdout);
	_exit(0);
}

static void fork_mode(struct ibv_context *ctx)
{
	pthread_t t;
	int status;

	if (pthread_create(&t, NULL, pd_churn, ctx))
		die("pthread_create", EAGAIN);
	for (int i = 0; i < 8; i++) {
		pid_t pid;

		usleep(20000);
		fflush(stdout);
		pid = fork();
		if (pid < 0)
			die("fork", errno);
		if (pid == 0)
			fork_child(ctx);
		/* A child that inherited a lock held hangs: 10 s at most. */
		for (int w = 0; w < 1000; w++) {
			if (waitpid(pid, &status, WNOHANG) == pid)
				break;
			if (w == 999) {
				kill(pid, SIGKILL);
				waitpid(pid, &status, 0);
				die("a child hung", ETIMEDOUT);
			}
			usleep(10000);
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			die("a child failed", ECHILD);
	}
	fork_stop = 1;
	pthread_join(t, NULL);
	if (ibv_close_device(ctx))
		die("ibv_close_device", errno);
	printf("OK\n");
	exit(0);
}

static void rss_mode(struct ibv_context *ctx)
{
	struct ibv_wq_init_attr wa = {
		.wq_type = IBV_WQT_RQ,
		.max_wr = 16,
		.max_sge = 1,
	};
	struct ibv_wq_attr rdy = {
		.attr_mask = IBV_WQ_ATTR_STATE,
		.wq_state = IBV_WQS_RDY,
	};
	static uint8_t key[40] = { 0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b };
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE |
			     IBV_QP_INIT_ATTR_RX_HASH,
		.rx_hash_conf = {
			.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ,
			.rx_hash_key_len = sizeof(key),
			.rx_hash_key = key,
			.rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4 |
					       IBV_RX_HASH_DST_IPV4 |
					       IBV_RX_HASH_SRC_PORT_UDP |
					       IBV_RX_HASH_DST_PORT_UDP,
		},
	};
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_ipv4 ip;
		struct ibv_flow_spec_tcp_udp udp;
	} fa = {
		.attr = { .type = IBV_FLOW_ATTR_NORMAL,
			  .size = sizeof(fa),
			  .num_of_specs = 2,
			  .port = 1 },
		.ip = { .type = IBV_FLOW_SPEC_IPV4, .size = sizeof(fa.ip) },
		.udp = { .type = IBV_FLOW_SPEC_UDP, .size = sizeof(fa.udp) },
	};
	struct ibv_rwq_ind_table_init_attr ta = { .log_ind_tbl_size = 1 };
	struct ibv_rwq_ind_table *tbl;
	struct ibv_wq *wq[2];
	struct ibv_flow *flow;
	struct ibv_cq *cq;
	struct ibv_pd *pd, *qp_pd;
	struct ibv_qp *qp;
	int busy_tbl, busy_qp, busy_pd, ret;
	char line[8];

	fa.ip.val.dst_ip = htonl(0x0a000001);
	fa.ip.mask.dst_ip = 0xffffffff;
	fa.udp.val.dst_port = htons(4791);
	fa.udp.mask.dst_port = 0xffff;
	if (!(pd = ibv_alloc_pd(ctx)))
		die("ibv_alloc_pd", errno);
	if (!(cq = ibv_create_cq(ctx, 16, NULL, NULL, 0)))
		die("ibv_create_cq", errno);
	wa.pd = pd;
	wa.cq = cq;
	for (int i = 0; i < 2; i++) {
		if (!(wq[i] = ibv_create_wq(ctx, &wa)))
			die("ibv_create_wq", errno);
		if ((ret = ibv_modify_wq(wq[i], &rdy)))
			die("ibv_modify_wq", ret);
	}
	ta.ind_tbl = wq;
	if (!(tbl = ibv_create_rwq_ind_table(ctx, &ta)))
		die("ibv_create_rwq_ind_table", errno);
	/* A PD the RSS QP alone uses: its dealloc is EBUSY while the QP
	 * lives, as the kernel answers. */
	if (!(qp_pd = ibv_alloc_pd(ctx)))
		die("ibv_alloc_pd", errno);
	qa.pd = qp_pd;
	qa.rwq_ind_tbl = tbl;
	if (!(qp = ibv_create_qp_ex(ctx, &qa)))
		die("ibv_create_qp_ex (RSS)", errno);
	if (!(flow = ibv_create_flow(qp, &fa.attr)))
		die("ibv_create_flow", errno);
	busy_tbl = ibv_destroy_rwq_ind_table(tbl);
	busy_qp = ibv_destroy_qp(qp);
	busy_pd = ibv_dealloc_pd(qp_pd);
	printf("rss busy %s %s %s\n", err_name(busy_tbl), err_name(busy_qp),
	       err_name(busy_pd));
	printf("READY RSS\n");
	if (!fgets(line, sizeof(line), stdin))
		for (;;)
			pause();
	/* The context closed with them all: they go with it. */
	if (!strcmp(line, "close\n")) {
		if (ibv_close_device(ctx))
			die("ibv_close_device", errno);
		printf("closed\n");
		exit(0);
	}
	if ((ret = ibv_destroy_flow(flow)))
		die("ibv_destroy_flow", ret);
	if ((ret = ibv_destroy_qp(qp)))
		die("ibv_destroy_qp (RSS)", ret);
	if ((ret = ibv_dealloc_pd(qp_pd)))
		die("ibv_dealloc_pd (the RSS QP's, once it is gone)", ret);
	if ((ret = ibv_destroy_rwq_ind_table(tbl)))
		die("ibv_destroy_rwq_ind_table", ret);
	for (int i = 0; i < 2; i++)
		if ((ret = ibv_destroy_wq(wq[i])))
			die("ibv_destroy_wq", ret);
	if ((ret = ibv_destroy_cq(cq)) || (ret = ibv_dealloc_pd(pd)))
		die("ibv_destroy_cq/ibv_dealloc_pd", ret);
	if (ibv_close_device(ctx))
		die("ibv_close_device", errno);
	printf("OK\n");
	exit(0);
}

/* Every object destroyed twice: the second answer of each. */
static void twice_mode(struct ibv_context *ctx, struct ibv_pd *pd,
		       struct ibv_cq *scq, struct ibv_cq *rcq,
		       struct ibv_srq *srq, struct ibv_qp *qp,
		       struct ibv_mr *mr)
{
	int r[2];

#define TWICE(what, call)                                                      \
	do {                                                                   \
		r[0] = (call);                                                 \
		r[1] = (call);                                                 \
		if (r[0])                                                      \
			die("the first " what, r[0]);                          \
		printf("twice " what " %s\n", err_name(r[1]));                 \
	} while (0)

	TWICE("qp", v.destroy_qp(qp));
	TWICE("srq", v.destroy_srq(srq));
	TWICE("cq", v.destroy_cq(scq));
	TWICE("mr", v.dereg_mr(mr));
	TWICE("pd", v.dealloc_pd(pd));
	if ((r[0] = v.destroy_cq(rcq)))
		die("ibv_destroy_cq", r[0]);
	r[0] = v.close_device(ctx);
	errno = 0;
	r[1] = v.close_device(ctx);
	if (r[0])
		die("the first close", errno);
	printf("twice context %s\n", r[1] ? err_name(errno) : "0");
#undef TWICE
	printf("OK\n");
	exit(0);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "hold";
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16,
						  .max_sge = 1 } };
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 16,
			 .max_recv_wr = 0,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	static char buf[8192];
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_cq *scq, *rcq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	int n = 0, ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "dlopen"))
		resolve();
	list = v.get_device_list(&n);
	if (!list || n < 1)
		die("ibv_get_device_list", list ? ENODEV : errno);
	ctx = v.open_device(list[0]);
	if (!ctx)
		die("ibv_open_device", errno);
	v.free_device_list(list);
	if (!strcmp(mode, "dm"))
		dm_mode(ctx);
	if (!strcmp(mode, "xrcd") && argc > 2)
		xrcd_mode(ctx, argv[2]);
	if (!strcmp(mode, "pd"))
		pd_mode(ctx);
	if (!strcmp(mode, "rss"))
		rss_mode(ctx);
	if (!strcmp(mode, "fork"))
		fork_mode(ctx);
	if (!(pd = v.alloc_pd(ctx)))
		die("ibv_alloc_pd", errno);
	if (!(scq = v.create_cq(ctx, 16, NULL, NULL, 0)))
		die("ibv_create_cq", errno);
	if (!(rcq = v.create_cq(ctx, 16, NULL, NULL, 0)))
		die("ibv_create_cq", errno);
	if (!(srq = v.create_srq(pd, &sa)))
		die("ibv_create_srq", errno);
	qa.send_cq = scq;
	qa.recv_cq = rcq;
	qa.srq = srq;
	if (!(qp = v.create_qp(pd, &qa)))
		die("ibv_create_qp", errno);
	if (!(mr = v.reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE)))
		die("ibv_reg_mr", errno);
	/* What tests/hw/hw_interpose compares with the broker's registry
	 * and the kernel. */
	printf("READY %s qp_num %u cmd_fd %d handles %u %u %u %u %u %u\n",
	       ibv_get_device_name(ctx->device), qp->qp_num, ctx->cmd_fd,
	       pd->handle, scq->handle, rcq->handle, srq->handle, qp->handle,
	       mr->handle);
	if (!strcmp(mode, "twice"))
		twice_mode(ctx, pd, scq, rcq, srq, qp, mr);
	if (strcmp(mode, "order")) {
		char line[16];

		if (fgets(line, sizeof(line), stdin) &&
		    !strcmp(line, "dereg\n"))
			printf("dereg %s\n", err_name(v.dereg_mr(mr)));
		for (;;)
			pause();
	}
	/* A CQ in use by a QP: the kernel's EBUSY, the CQ left as it was. */
	ret = v.destroy_cq(scq);
	if (ret != EBUSY)
		die("ibv_destroy_cq of a CQ in use did not answer EBUSY", ret);
	/* A PD the QP, SRQ and MR use: EBUSY too. */
	ret = v.dealloc_pd(pd);
	if (ret != EBUSY)
		die("ibv_dealloc_pd of a PD in use did not answer EBUSY", ret);
	if ((ret = v.destroy_qp(qp)))
		die("ibv_destroy_qp", ret);
	if ((ret = v.destroy_srq(srq)))
		die("ibv_destroy_srq", ret);
	if ((ret = v.destroy_cq(scq)) || (ret = v.destroy_cq(rcq)))
		die("ibv_destroy_cq", ret);
	if ((ret = v.dereg_mr(mr)))
		die("ibv_dereg_mr", ret);
	if ((ret = v.dealloc_pd(pd)))
		die("ibv_dealloc_pd", ret);
	if ((ret = v.close_device(ctx)))
		die("ibv_close_device", ret);
	printf("OK\n");
	return 0;
}
