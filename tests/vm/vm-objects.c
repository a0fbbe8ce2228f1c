// SPDX-License-Identifier: MIT
/*
 * The constructors of libibclient on a context of this process's own (rxe
 * cannot be imported), run by tests/vm/suite.sh inside the VM:
 *
 *   vm-objects DEV
 *	CQ, SRQ, RC QP and MR made with ibc_* on the own context, the
 *	libibverbs objects behind them, EBUSY for a CQ or SRQ in use, the
 *	device's answer for a WQ, ibc_track of a raw PD (the
 *	own context registers nothing), nothing in the broker's registry;
 *	then everything is left to ibc_disconnect
 *
 * Prints CHECK lines (vmutil.h); exits 0 when all passed.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "ibclient.h"
#include "tests/vm/vmutil.h"

static struct ibc_client *connect_own(void)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_FLAGS | IBC_CONNECT_ATTR_TIMEOUT,
		.flags = IBC_CONNECT_ALLOW_OWN_CONTEXT,
		.timeout_ms = 20000,
	};
	struct ibc_client *cl = NULL;
	int err = ibc_connect(&attr, &cl);

	vm_check(err == 0, "objects-connect", "ibc_connect: %d (%s)", err,
		 err < 0 ? ibc_last_error() : "success");
	return err == 0 ? cl : NULL;
}

/* Nothing of this client is in the registry: an own context registers
 * nothing. */
static void check_registry_empty(struct ibc_client *cl)
{
	struct ibc_object_filter f = {
		.comp_mask = IBC_OBJECT_FILTER_CLIENT,
	};
	struct ibc_client_info info;
	struct ibc_object_info *o = NULL;
	size_t n = 0;
	int err;

	ibc_client_info(cl, &info, sizeof(info));
	f.client_id = info.client_id;
	err = ibc_list_objects(cl, &f, &o, sizeof(*o), &n);
	vm_check(err == 0 && n == 0, "objects-own-unregistered",
		 "ibc_list_objects of client %llu: %d (%s), %zu objects",
		 (unsigned long long)info.client_id, err,
		 err < 0 ? ibc_last_error() : "success", n);
	if (err == 0)
		ibc_list_free(o);
}

static void check_qp(struct ibc_ctx *ctx, struct ibc_cq *cq,
		     struct ibc_srq *srq)
{
	struct ibc_qp_attr qa = {
		.qp_type = IBV_QPT_RC,
		.send_cq = cq,
		.recv_cq = cq,
		.srq = srq,
		.cap = { .max_send_wr = 16, .max_send_sge = 1 },
	};
	struct ibv_qp_cap cap;
	struct ibc_qp *qp;
	struct ibv_qp *vqp;
	int err;

	err = ibc_qp_create(ctx, &qa, &qp);
	if (!vm_check(err == 0, "objects-qp", "ibc_qp_create RC: %d (%s)", err,
		      err < 0 ? ibc_last_error() : "success"))
		return;
	vqp = ibc_verbs_qp(qp);
	ibc_qp_cap(qp, &cap);
	vm_check(vqp && vqp->qp_num == ibc_qp_num(qp) &&
			 vqp->qp_type == IBV_QPT_RC && vqp->srq &&
			 cap.max_send_wr >= 16,
		 "objects-qp-verbs",
		 "ibv_qp %p, qp_num %u (ibc_qp_num %u), max_send_wr %u",
		 (void *)vqp, vqp ? vqp->qp_num : 0, ibc_qp_num(qp),
		 cap.max_send_wr);
	err = ibc_cq_destroy(cq);
	vm_check(err == -EBUSY, "objects-cq-busy",
		 "ibc_cq_destroy of the QP's CQ: %d (%s)", err,
		 ibc_last_error());
	err = ibc_srq_destroy(srq);
	vm_check(err == -EBUSY, "objects-srq-busy",
		 "ibc_srq_destroy of the QP's SRQ: %d (%s)", err,
		 ibc_last_error());
	/* The QP stays for ibc_disconnect. */
}

int main(int argc, char **argv)
{
	static char buf[65536];
	struct ibv_srq_attr sa = { .max_wr = 64, .max_sge = 1 };
	struct ibc_client *cl;
	struct ibc_ctx *ctx;
	struct ibc_cq *cq, *cq2;
	struct ibc_srq *srq;
	struct ibc_wq *wq;
	struct ibc_mr *mr;
	struct ibv_mr *vmr;
	struct ibv_pd *raw;
	int err;

	if (argc != 2) {
		fprintf(stderr, "usage: vm-objects DEV\n");
		return 2;
	}
	cl = connect_own();
	if (!cl)
		return 1;
	err = ibc_open(cl, argv[1], &ctx);
	if (!vm_check(err == 0, "objects-open", "ibc_open(%s): %d (%s)",
		      argv[1], err, err < 0 ? ibc_last_error() : "success"))
		return 1;

	err = ibc_cq_create(ctx, 100, &cq);
	if (!vm_check(err == 0 && ibc_cq_cqe(cq) >= 100 && ibc_verbs_cq(cq),
		      "objects-cq", "ibc_cq_create(100): %d (%s), cqe %d", err,
		      err < 0 ? ibc_last_error() : "success",
		      err == 0 ? ibc_cq_cqe(cq) : 0))
		return 1;
	err = ibc_cq_create(ctx, 0, &cq2);
	vm_check(err == -EINVAL, "objects-cq-zero", "ibc_cq_create(0): %d (%s)",
		 err, ibc_last_error());

	err = ibc_srq_create(ctx, &sa, &srq);
	if (vm_check(err == 0 && ibc_verbs_srq(srq), "objects-srq",
		     "ibc_srq_create: %d (%s)", err,
		     err < 0 ? ibc_last_error() : "success"))
		check_qp(ctx, cq, srq);

	err = ibc_reg_mr(ctx, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE, &mr);
	vmr = err == 0 ? ibc_verbs_mr(mr) : NULL;
	vm_check(err == 0 && vmr && vmr->lkey == ibc_mr_lkey(mr) &&
			 vmr->rkey == ibc_mr_rkey(mr) && vmr->addr == buf,
		 "objects-mr", "ibc_reg_mr: %d (%s), lkey %#x", err,
		 err < 0 ? ibc_last_error() : "success",
		 err == 0 ? ibc_mr_lkey(mr) : 0);
	if (err == 0) {
		err = ibc_dereg_mr(mr);
		vm_check(err == 0, "objects-dereg-mr", "ibc_dereg_mr: %d (%s)",
			 err, ibc_last_error());
	}

	/* rxe has no receive WQs: the kernel's answer, and nothing left. */
	err = ibc_wq_create(ctx, cq, NULL, &wq);
	vm_check(err == -EOPNOTSUPP || err == -ENOSYS, "objects-wq-rxe",
		 "ibc_wq_create on rxe: %d (%s)", err, ibc_last_error());
	if (err == 0)
		ibc_wq_destroy(wq);

	/* A raw object on the own context: tracked for nothing. */
	raw = ibv_alloc_pd(ibc_verbs_context(ctx));
	if (raw) {
		err = ibc_track(ctx, IBC_OBJ_PD, raw);
		vm_check(err == 0, "objects-track-own",
			 "ibc_track of a raw PD: %d (%s)", err,
			 ibc_last_error());
		err = ibc_track(ctx, IBC_OBJ_PD, raw);
		vm_check(err == -EEXIST, "objects-track-twice",
			 "ibc_track again: %d (%s)", err, ibc_last_error());
		err = ibc_untrack(ctx, IBC_OBJ_PD, raw);
		vm_check(err == 0, "objects-untrack-own",
			 "ibc_untrack: %d (%s)", err, ibc_last_error());
		ibv_dealloc_pd(raw);
	}
	check_registry_empty(cl);
	/* The QP, SRQ and CQ go with the client, in their order. */
	ibc_disconnect(cl);
	return vm_failures() ? 1 : 0;
}
