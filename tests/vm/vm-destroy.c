// SPDX-License-Identifier: MIT
/*
 * The daemon's destroy-by-handle helper (daemon/device/verbs/uverbs.c) on a
 * real kernel:
 *
 *   vm-destroy DEV
 *
 * Opens DEV with libibverbs, as the daemon opens its own contexts, creates
 * a PD, an MR, a CQ and an RC QP, then destroys each of them by its handle
 * with uverbs_destroy() on the context's cmd_fd (never with ibv_destroy_*),
 * and asks the kernel (`rdma resource show TYPE pid PID`) whether it is
 * gone. Also: the PD answers EBUSY while the MR and QP use it, and a handle
 * already destroyed is an error. Prints CHECK lines; exits 0 when all
 * passed.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include "daemon/device/device.h"
#include "daemon/device/verbs/uverbs.h"
#include "tests/vm/vmutil.h"

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n = 0;

	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n; i++)
		if (strcmp(ibv_get_device_name(list[i]), name) == 0)
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

struct victim {
	enum ibc_obj_kind kind;
	const char *rdma_type;
	uint32_t handle;
};

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr qa = { 0 };
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	static char buf[8192];
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2) {
		fprintf(stderr, "usage: vm-destroy DEV\n");
		return 2;
	}
	ctx = open_dev(argv[1]);
	if (!vm_check(ctx != NULL, "destroy-open", "ibv_open_device(%s): %s",
		      argv[1], ctx ? "ok" : strerror(errno)))
		return 1;
	{
		uint32_t id = 0;

		ret = uverbs_driver_id(ctx->cmd_fd, &id);
		vm_check(ret == 0 && (strncmp(argv[1], "rxe", 3) ||
				      id == RDMA_DRIVER_RXE),
			 "destroy-driver-id",
			 "the kernel's driver id for %s: %d (%s), %u "
			 "(RDMA_DRIVER_RXE is %d)",
			 argv[1], ret, ret ? strerror(-ret) : "ok", id,
			 (int)RDMA_DRIVER_RXE);
	}
	pd = ibv_alloc_pd(ctx);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) :
		  NULL;
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qp = pd && cq ? ibv_create_qp(pd, &qa) : NULL;
	if (!vm_check(pd && mr && cq && qp, "destroy-create",
		      "libibverbs PD %u, MR %u, CQ %u, QP %u (qpn %u) on %s",
		      pd ? pd->handle : 0, mr ? mr->handle : 0,
		      cq ? cq->handle : 0, qp ? qp->handle : 0,
		      qp ? qp->qp_num : 0, argv[1]))
		return 1;

	{
		struct victim v[] = {
			{ IBC_OBJ_QP, "qp", qp->handle },
			{ IBC_OBJ_CQ, "cq", cq->handle },
			{ IBC_OBJ_MR, "mr", mr->handle },
			{ IBC_OBJ_PD, "pd", pd->handle },
		};
		int before[4];

		for (int i = 0; i < 4; i++)
			before[i] = vm_kernel_count(v[i].rdma_type);
		vm_check(before[0] == 1 && before[1] == 1 && before[2] == 1 &&
				 before[3] == 1,
			 "destroy-kernel-lists",
			 "rdma resource lists for this pid: qp %d, cq %d, mr "
			 "%d, pd %d (want 1 each)",
			 before[0], before[1], before[2], before[3]);

		/* The kernel keeps the dependency order. */
		ret = uverbs_destroy(ctx->cmd_fd, IBC_OBJ_PD, pd->handle);
		vm_check(ret == -EBUSY, "destroy-pd-busy",
			 "PD %u while its MR and QP exist: %d (%s)", pd->handle,
			 ret, strerror(-ret));

		for (int i = 0; i < 4; i++) {
			char name[32];
			int after;

			ret = uverbs_destroy(ctx->cmd_fd, v[i].kind,
					     v[i].handle);
			after = vm_kernel_count(v[i].rdma_type);
			snprintf(name, sizeof(name), "destroy-%s",
				 v[i].rdma_type);
			vm_check(ret == 0 && after == 0, name,
				 "uverbs_destroy(%s handle %u): %d (%s); "
				 "rdma resource now lists %d",
				 obj_kind_name(v[i].kind), v[i].handle, ret,
				 strerror(-ret), after);
		}

		ret = uverbs_destroy(ctx->cmd_fd, IBC_OBJ_QP, qp->handle);
		vm_check(ret < 0, "destroy-twice",
			 "QP %u destroyed again: %d (%s)", qp->handle, ret,
			 strerror(-ret));
		ret = uverbs_destroy(ctx->cmd_fd, IBC_OBJ_CONTEXT, 0);
		vm_check(ret == -EINVAL, "destroy-bad-kind",
			 "an unknown kind: %d (%s)", ret, strerror(-ret));
	}
	/* libibverbs' own structs are leaked on purpose: their kernel
	 * objects are gone, and destroying them again would fail. */
	ibv_close_device(ctx);
	return vm_failures() ? 1 : 0;
}
