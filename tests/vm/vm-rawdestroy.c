// SPDX-License-Identifier: MIT
/*
 * Issue 28's bad input "destroys an object of another process of its
 * domain by handle through raw ioctls", on rxe, as an unmodified verbs
 * program under the interposer (tests/vm/interpose.sh runs it with
 * rdmabroker-run). rxe cannot import a context: each process gets a context
 * of its own, whose handles are its own uverbs file's. So there the case
 * becomes two:
 *
 *   vm-rawdestroy hold DEV
 *	a CQ and an MR destroyed by handle with a raw ioctl on the process's
 *	own command descriptor: ibv_destroy_cq and ibv_dereg_mr then answer
 *	ENOENT (libibverbs' answer); a new CQ takes the freed handle (the
 *	kernel gives the lowest free one). Prints "HANDLE N" (that CQ's) and
 *	READY, then reads a line: "check" checks the new CQ is still in the
 *	kernel (after another process tried its handle) and destroys
 *	everything in order; EOF leaves it to a SIGKILL.
 *   vm-rawdestroy attack DEV HANDLE
 *	another process of the domain destroys CQ HANDLE with a raw ioctl on
 *	its own command descriptor: the number names nothing of its own
 *	(ENOENT) or an object of another kind (EINVAL), never the holder's.
 *
 * Prints CHECK lines; exits 0 when all passed.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "daemon/device/verbs/uverbs.h"
#include "tests/vm/vmutil.h"

/* DEV opened through the interposer; @check names the CHECK line. */
static struct ibv_context *open_dev(const char *name, const char *check)
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
	vm_check(ctx != NULL, check, "ibv_open_device(%s): %s", name,
		 ctx ? "ok" : strerror(errno));
	return ctx;
}

static int mode_hold(const char *dev)
{
	static char buf[4096];
	struct ibv_context *ctx = open_dev(dev, "rawdestroy-open");
	struct ibv_cq *cq, *cq2;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint32_t h;
	char line[16];
	int ret, ret2;

	if (!ctx)
		return 1;
	/* The CQ before the MR: of the two handles freed below, the CQ's
	 * is then the lowest, which the next CQ takes. */
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) :
		  NULL;
	if (!vm_check(pd && mr && cq, "rawdestroy-create",
		      "PD, MR, CQ through the interposer: %s",
		      pd && mr && cq ? "made" : strerror(errno)))
		return 1;
	h = cq->handle;
	ret = uverbs_destroy(ctx->cmd_fd, IBC_OBJ_CQ, h);
	ret2 = uverbs_destroy(ctx->cmd_fd, IBC_OBJ_MR, mr->handle);
	vm_check(ret == 0 && ret2 == 0, "rawdestroy-raw",
		 "CQ %u and MR %u destroyed by handle on the own command "
		 "descriptor: %d, %d",
		 h, mr->handle, ret, ret2);
	/* The structures stay: libibverbs keeps what the kernel refused. */
	ret = ibv_destroy_cq(cq);
	ret2 = ibv_dereg_mr(mr);
	vm_check(ret == ENOENT && ret2 == ENOENT, "rawdestroy-enoent",
		 "ibv_destroy_cq then ibv_dereg_mr of the objects already "
		 "gone: %s, %s (want ENOENT, as libibverbs answers)",
		 strerror(ret), strerror(ret2));
	cq2 = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!vm_check(cq2 && cq2->handle == h, "rawdestroy-reused",
		      "a new CQ: handle %d (the destroyed one's was %u)",
		      cq2 ? (int)cq2->handle : -1, h))
		return 1;
	vm_check(vm_kernel_count("cq") == 1 && vm_kernel_count("mr") == 0,
		 "rawdestroy-kernel", "rdma resource lists cq %d, mr %d",
		 vm_kernel_count("cq"), vm_kernel_count("mr"));
	printf("HANDLE %u\nREADY\n", h);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return vm_failures() ? 1 : 0;
	vm_check(vm_kernel_count("cq") == 1, "rawdestroy-survives",
		 "after another process's raw destroy of handle %u, rdma "
		 "resource lists %d CQ of this process (want 1)",
		 h, vm_kernel_count("cq"));
	ret = ibv_destroy_cq(cq2);
	ret2 = ibv_dealloc_pd(pd);
	vm_check(ret == 0 && ret2 == 0 && ibv_close_device(ctx) == 0 &&
			 vm_kernel_count("cq") == 0,
		 "rawdestroy-close",
		 "the new CQ, the PD, the context: %s, %s; cq %d left",
		 strerror(ret), strerror(ret2), vm_kernel_count("cq"));
	return vm_failures() ? 1 : 0;
}

static int mode_attack(const char *dev, const char *handle)
{
	struct ibv_context *ctx = open_dev(dev, "rawdestroy-attack-open");
	uint32_t h = (uint32_t)strtoul(handle, NULL, 10);
	int ret;

	if (!ctx)
		return 1;
	ret = uverbs_destroy(ctx->cmd_fd, IBC_OBJ_CQ, h);
	vm_check(ret == -ENOENT || ret == -EINVAL, "rawdestroy-other",
		 "another process's CQ handle %u on this process's own "
		 "command descriptor: %d (%s; want ENOENT or EINVAL: the "
		 "number is this file's)",
		 h, ret, strerror(-ret));
	ibv_close_device(ctx);
	return vm_failures() ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "hold"))
		return mode_hold(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "attack"))
		return mode_attack(argv[2], argv[3]);
	fprintf(stderr, "usage: vm-rawdestroy hold DEV | attack DEV HANDLE\n");
	return 2;
}
