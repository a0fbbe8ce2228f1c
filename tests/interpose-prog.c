// SPDX-License-Identifier: MIT
/*
 * An unmodified verbs program for tests/interpose.sh: plain libibverbs, no
 * libibclient, run under the interposer. It opens the first device and
 * makes a PD, two CQs, an SRQ, an RC QP on them and an MR, then:
 *   hold    prints "READY" and waits for SIGKILL;
 *   order   destroys a CQ the QP uses (libibverbs' answer: EBUSY), then
 *           everything in order, and prints "OK";
 *   dlopen  as hold, with every verb resolved by dlvsym(..., "IBVERBS_1.1")
 *           from dlopen("libibverbs.so.1"), as NCCL does;
 *   dm      allocates device memory, writes and reads it back, frees it,
 *           allocates it again, prints "READY DM" and waits;
 *   xrcd FILE  opens an XRC domain on FILE (O_CREAT), prints "READY XRCD"
 *           and waits.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	ibv_close_device, ibv_alloc_pd, ibv_dealloc_pd, ibv_create_cq,
	ibv_destroy_cq, ibv_create_srq, ibv_destroy_srq, ibv_create_qp,
	ibv_destroy_qp, ibv_reg_mr, ibv_dereg_mr,
};

static void die(const char *what, int err)
{
	printf("FAIL %s: %s\n", what, strerror(err));
	exit(1);
}

#define RESOLVE(h, f)                                                        \
	do {                                                                  \
		v.f = dlvsym(h, "ibv_" #f, "IBVERBS_1.1");                    \
		if (!v.f)                                                     \
			die("dlvsym ibv_" #f, ENOENT);                        \
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

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "hold";
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16,
						  .max_sge = 1 } };
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 0,
			 .max_send_sge = 1, .max_recv_sge = 1 },
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
	printf("READY %s qp_num %u\n", ibv_get_device_name(ctx->device),
	       qp->qp_num);
	if (strcmp(mode, "order")) {
		for (;;)
			pause();
	}
	/* A CQ in use by a QP: the kernel's EBUSY, the CQ left as it was. */
	ret = v.destroy_cq(scq);
	if (ret != EBUSY)
		die("ibv_destroy_cq of a CQ in use did not answer EBUSY",
		    ret);
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
