// SPDX-License-Identifier: MIT
/*
 * Verbs devices: the broker's context imported into this process
 * (ibv_import_device + ibv_import_pd), or, where it cannot be imported and
 * the client allows it, the device opened here (a context of its own).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "common/verbs/verbs-err.h"
#include "common/verbs/verbs-import.h"
#include "libclient/dm.h"
#include "libclient/objects.h"
#include "libclient/xrcd.h"

/* Open the device in this process (IBC_CONNECT_ALLOW_OWN_CONTEXT). */
static int own_open(struct ibc_ctx *ctx)
{
	struct ibv_device **list;
	int n = 0, err = -ENODEV;

	list = verbs_try(ibv_get_device_list(&n));
	if (!list)
		return verbs_err(ENODEV);
	for (int i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), ctx->caps.device))
			continue;
		ctx->vctx = verbs_try(ibv_open_device(list[i]));
		err = ctx->vctx ? 0 : verbs_err(ENODEV);
		break;
	}
	ibv_free_device_list(list);
	return err;
}

/* The import failed with @err: open the device here if that is allowed
 * and the failure is one of import's own. */
static int verbs_fall_back(struct ibc_ctx *ctx, int err)
{
	const char *dev = ctx->caps.device;
	int own;

	if (!(ctx->client->flags & IBC_CONNECT_ALLOW_OWN_CONTEXT) ||
	    (err != -EOPNOTSUPP && err != -EINVAL && err != -EPROTONOSUPPORT))
		return ibc_set_error(err,
				     "%s: ibv_import_device failed: %s; only "
				     "mlx5 devices with dynamic UARs can share "
				     "a context (connect with "
				     "IBC_CONNECT_ALLOW_OWN_CONTEXT to open "
				     "the device in this process instead)",
				     dev, strerror(-err));
	own = own_open(ctx);
	if (own < 0)
		return ibc_set_error(own,
				     "%s: the context cannot be imported (%s) "
				     "and opening the device here failed: %s",
				     dev, strerror(-err), strerror(-own));
	/* The constructors' PD: this process's, like the context. */
	ctx->own_pd = verbs_try(ibv_alloc_pd(ctx->vctx));
	if (!ctx->own_pd) {
		own = verbs_err(ENOMEM);
		ibv_close_device(ctx->vctx);
		ctx->vctx = NULL;
		return ibc_set_error(own,
				     "%s: ibv_alloc_pd on this process's own "
				     "context failed: %s",
				     dev, strerror(-own));
	}
	ctx->pd = ctx->own_pd;
	ctx->ops = &ibc_own_ops;
	ctx->caps.shared = false;
	ctx->caps.dm_shared = false;
	return 0;
}

static int verbs_attach(struct ibc_ctx *ctx, int fd)
{
	const char *dev = ctx->caps.device;
	int err;

	/* Before the provider maps anything: a fork during the import
	 * marks its mappings too, though the context is not listed yet. */
	ibc_fork_note_device();
	/* Consumes fd on every path (libibverbs does not, always). */
	err = verbs_import_device(fd, &ctx->vctx);
	if (err < 0) {
		if (err == -ENODEV)
			/* Not an import problem: this process's libibverbs
			 * does not see the device (no provider installed,
			 * sysfs hidden, an exclusive RDMA network
			 * namespace); its own open would fail the same
			 * way. */
			return ibc_set_error(err,
					     "%s: libibverbs in this process "
					     "does not see the device (is "
					     "ibverbs-providers installed, "
					     "/sys visible?)",
					     dev);
		return verbs_fall_back(ctx, err);
	}
	ctx->vpd = verbs_try(ibv_import_pd(ctx->vctx, ctx->pd_handle));
	if (!ctx->vpd) {
		err = verbs_err(EIO);
		ibv_close_device(ctx->vctx);
		ctx->vctx = NULL;
		return ibc_set_error(err,
				     "%s: ibv_import_pd of the domain's PD "
				     "(handle %u) failed: %s",
				     dev, ctx->pd_handle, strerror(-err));
	}
	ctx->pd = ctx->vpd;
	ctx->caps.shared = true;
	return 0;
}

static void verbs_detach(struct ibc_ctx *ctx)
{
	/*
	 * Imported objects are local: unimporting frees nothing of the
	 * domain's. mlx5_unimport_pd() ends in assert(false) while a parent
	 * domain the application built on this PD still holds it (the PD's
	 * refcount, private to mlx5): an rdma-core built with assertions
	 * aborts here, one built with NDEBUG leaks the structure. Nothing
	 * public tells whether one is left (ibv_dealloc_pd, the only call
	 * that would answer EBUSY, frees the domain's PD in the kernel when
	 * nothing else holds it), so ibc_open(3) states the rule instead:
	 * deallocate them before ibc_close. Unverified on hardware.
	 */
	if (ctx->vpd)
		ibv_unimport_pd(ctx->vpd);
	if (ctx->own_pd)
		ibv_dealloc_pd(ctx->own_pd);
	if (ctx->vctx)
		ibv_close_device(ctx->vctx);
	ctx->vpd = ctx->own_pd = ctx->pd = NULL;
	ctx->vctx = NULL;
}

/* --- the kernel calls ------------------------------------------------- */

/* After a call that failed with NULL: its errno, with a sentence. */
static int verbs_fail(const struct ibc_obj *o, const char *call)
{
	int err = verbs_err(EIO);

	return ibc_set_error(err, "%s: %s failed: %s", o->ctx->caps.device,
			     call, strerror(-err));
}

static int verbs_create_cq(struct ibc_obj *o, const struct ibc_obj_args *a,
			   struct ibc_obj_result *res)
{
	struct ibv_cq *cq;

	cq = verbs_try(ibv_create_cq(o->ctx->vctx, (int)a->attr.cqe, NULL,
				     a->channel, (int)a->attr.comp_vector));
	if (!cq)
		return verbs_fail(o, "ibv_create_cq");
	o->vobj = cq;
	o->handle = cq->handle;
	res->attr.cqe = (uint32_t)cq->cqe;
	return 0;
}

/* An XRC target QP: made on the XRCD, or opened by its number
 * (ibv_open_qp). It has no PD, CQs or work queues of its own. */
static int verbs_create_tgt_qp(struct ibc_obj *o, const struct ibc_obj_args *a,
			       struct ibc_obj_result *res)
{
	struct ibv_qp_init_attr_ex ia = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = a->parent,
	};
	struct ibv_qp_open_attr oa = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			     IBV_QP_OPEN_ATTR_TYPE,
		.qp_num = a->attr.xrc_qp_num,
		.xrcd = a->parent,
		.qp_type = IBV_QPT_XRC_RECV,
	};
	struct ibv_qp *qp;

	if (a->attr.xrc_qp_num) {
		qp = verbs_try(ibv_open_qp(o->ctx->vctx, &oa));
		if (!qp)
			return verbs_fail(o, "ibv_open_qp");
	} else {
		qp = verbs_try(ibv_create_qp_ex(o->ctx->vctx, &ia));
		if (!qp)
			return verbs_fail(o, "ibv_create_qp_ex (XRC_RECV)");
	}
	o->vobj = qp;
	o->handle = qp->handle;
	res->qp_num = qp->qp_num;
	return 0;
}

static int verbs_create_qp(struct ibc_obj *o, const struct ibc_obj_args *a,
			   struct ibc_obj_result *res)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = a->send_cq,
		.recv_cq = a->recv_cq,
		.srq = a->srq,
		.cap = {
			.max_send_wr = a->attr.max_send_wr,
			.max_recv_wr = a->attr.max_recv_wr,
			.max_send_sge = a->attr.max_send_sge,
			.max_recv_sge = a->attr.max_recv_sge,
			.max_inline_data = a->attr.max_inline_data,
		},
		.qp_type = (enum ibv_qp_type)a->attr.qp_type,
		.sq_sig_all = (int)a->attr.sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = o->ctx->pd,
	};
	struct ibv_qp *qp;

	if (ia.qp_type == IBV_QPT_XRC_RECV)
		return verbs_create_tgt_qp(o, a, res);
	qp = verbs_try(ibv_create_qp_ex(o->ctx->vctx, &ia));
	if (!qp)
		return verbs_fail(o, "ibv_create_qp_ex");
	o->vobj = qp;
	o->handle = qp->handle;
	res->qp_num = qp->qp_num;
	/* libibverbs writes back what the device gave. */
	res->attr.max_send_wr = ia.cap.max_send_wr;
	res->attr.max_recv_wr = ia.cap.max_recv_wr;
	res->attr.max_send_sge = ia.cap.max_send_sge;
	res->attr.max_recv_sge = ia.cap.max_recv_sge;
	res->attr.max_inline_data = ia.cap.max_inline_data;
	return 0;
}

/* An XRC SRQ on the XRCD, its CQ and the PD. */
static int verbs_create_xrc_srq(struct ibc_obj *o, const struct ibc_obj_args *a,
				struct ibc_obj_result *res)
{
	struct ibv_srq_init_attr_ex sa = {
		.attr = {
			.max_wr = a->attr.max_wr,
			.max_sge = a->attr.max_sge,
			.srq_limit = a->attr.srq_limit,
		},
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC,
		.pd = o->ctx->pd,
		.xrcd = a->parent,
		.cq = a->cq,
	};
	struct ibv_srq *srq;
	uint32_t num = 0;
	int ret;

	srq = verbs_try(ibv_create_srq_ex(o->ctx->vctx, &sa));
	if (!srq)
		return verbs_fail(o, "ibv_create_srq_ex");
	ret = verbs_ret(verbs_try(ibv_get_srq_num(srq, &num)), EIO);
	if (ret < 0) {
		ibv_destroy_srq(srq);
		return ibc_set_error(ret, "%s: ibv_get_srq_num failed: %s",
				     o->ctx->caps.device, strerror(-ret));
	}
	o->vobj = srq;
	o->handle = srq->handle;
	res->qp_num = num;
	res->attr.max_wr = sa.attr.max_wr;
	res->attr.max_sge = sa.attr.max_sge;
	res->attr.srq_limit = sa.attr.srq_limit;
	return 0;
}

static int verbs_create_srq(struct ibc_obj *o, const struct ibc_obj_args *a,
			    struct ibc_obj_result *res)
{
	struct ibv_srq_init_attr sa = {
		.attr = {
			.max_wr = a->attr.max_wr,
			.max_sge = a->attr.max_sge,
			.srq_limit = a->attr.srq_limit,
		},
	};
	struct ibv_srq *srq;

	if (a->parent)
		return verbs_create_xrc_srq(o, a, res);
	srq = verbs_try(ibv_create_srq(o->ctx->pd, &sa));
	if (!srq)
		return verbs_fail(o, "ibv_create_srq");
	o->vobj = srq;
	o->handle = srq->handle;
	res->attr.max_wr = sa.attr.max_wr;
	res->attr.max_sge = sa.attr.max_sge;
	res->attr.srq_limit = sa.attr.srq_limit;
	return 0;
}

static int verbs_create_wq(struct ibc_obj *o, const struct ibc_obj_args *a,
			   struct ibc_obj_result *res)
{
	struct ibv_wq_init_attr wa = {
		.wq_type = IBV_WQT_RQ,
		.max_wr = a->attr.max_wr,
		.max_sge = a->attr.max_sge,
		.pd = o->ctx->pd,
		.cq = a->cq,
	};
	struct ibv_wq_attr ready = {
		.attr_mask = IBV_WQ_ATTR_STATE,
		.wq_state = IBV_WQS_RDY,
	};
	struct ibv_wq *wq;
	int ret;

	wq = verbs_try(ibv_create_wq(o->ctx->vctx, &wa));
	if (!wq)
		return verbs_fail(o, "ibv_create_wq");
	/* RSS tables take WQs that are ready; one the caller cannot use
	 * is not made. */
	ret = verbs_ret(verbs_try(ibv_modify_wq(wq, &ready)), EIO);
	if (ret < 0) {
		ibv_destroy_wq(wq);
		return ibc_set_error(ret,
				     "%s: ibv_modify_wq to IBV_WQS_RDY failed: "
				     "%s",
				     o->ctx->caps.device, strerror(-ret));
	}
	o->vobj = wq;
	o->handle = wq->handle;
	res->qp_num = wq->wq_num;
	res->attr.max_wr = wa.max_wr;
	res->attr.max_sge = wa.max_sge;
	return 0;
}

static int verbs_reg_mr(struct ibc_obj *o, const struct ibc_obj_args *a,
			struct ibc_obj_result *res)
{
	struct ibv_mr *mr;

	if (a->parent)
		mr = verbs_try(ibv_reg_dm_mr(
			o->ctx->pd, a->parent, a->attr.mr_addr,
			(size_t)a->attr.mr_length, a->attr.mr_access));
	else
		mr = verbs_try(ibv_reg_mr(o->ctx->pd, a->mr_addr,
					  (size_t)a->attr.mr_length,
					  (int)a->attr.mr_access));
	if (!mr)
		return verbs_fail(o,
				  a->parent ? "ibv_reg_dm_mr" : "ibv_reg_mr");
	o->vobj = mr;
	o->handle = mr->handle;
	res->lkey = mr->lkey;
	res->rkey = mr->rkey;
	return 0;
}

static int verbs_kernel_create(struct ibc_obj *o, const struct ibc_obj_args *a,
			       struct ibc_obj_result *res)
{
	switch (o->kind) {
	case IBC_OBJ_CQ:
		return verbs_create_cq(o, a, res);
	case IBC_OBJ_QP:
		return verbs_create_qp(o, a, res);
	case IBC_OBJ_SRQ:
		return verbs_create_srq(o, a, res);
	case IBC_OBJ_WQ:
		return verbs_create_wq(o, a, res);
	case IBC_OBJ_MR:
		return verbs_reg_mr(o, a, res);
	default:
		return ibc_set_error(-EOPNOTSUPP, "no constructor for a %s",
				     ibc_obj_kind_name(o->kind));
	}
}

static int verbs_kernel_destroy(struct ibc_obj *o)
{
	int ret;

	/* ibv_destroy_*() answer an errno value (some providers -1 and
	 * errno). */
	switch (o->kind) {
	case IBC_OBJ_CQ:
		ret = verbs_try(ibv_destroy_cq(o->vobj));
		break;
	case IBC_OBJ_QP:
		ret = verbs_try(ibv_destroy_qp(o->vobj));
		break;
	case IBC_OBJ_SRQ:
		ret = verbs_try(ibv_destroy_srq(o->vobj));
		break;
	case IBC_OBJ_WQ:
		ret = verbs_try(ibv_destroy_wq(o->vobj));
		break;
	case IBC_OBJ_MR:
		ret = verbs_try(ibv_dereg_mr(o->vobj));
		break;
	case IBC_OBJ_XRCD:
		ret = verbs_try(ibv_close_xrcd(o->vobj));
		break;
	default:
		return -EOPNOTSUPP;
	}
	ret = verbs_ret(ret, EIO);
	if (ret < 0)
		return ibc_set_error(ret, "%s: destroying %s %u failed: %s",
				     o->ctx->caps.device,
				     ibc_obj_kind_name(o->kind), o->handle,
				     strerror(-ret));
	return 0;
}

/*
 * The broker holds the first open of every XRCD, so the kernel always finds
 * one: O_CREAT, never O_EXCL (which it would refuse), and its EINVAL is the
 * caller's as it is.
 */
int ibc_verbs_open_xrcd(struct ibc_obj *o, int fd)
{
	struct ibv_xrcd_init_attr ia = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = fd,
		.oflags = O_CREAT,
	};
	struct ibv_xrcd *x;

	x = verbs_try(ibv_open_xrcd(o->ctx->vctx, &ia));
	if (!x)
		return verbs_fail(o, "ibv_open_xrcd");
	/* struct ibv_xrcd shows no handle (verbs_xrcd is rdma-core's
	 * private driver.h): the broker never destroys it by handle. */
	o->vobj = x;
	return 0;
}

/* --- a shared context: the registry's flows -------------------------- */

/*
 * Declare the intent (a round trip: the quota is checked before the kernel
 * is asked), call the kernel, then register the handle without waiting:
 * the broker reads the registration before anything else this process
 * sends, its hang-up included (proto/README.md, "The registry invariant").
 */
static int verbs_create(struct ibc_obj *o, const struct ibc_obj_args *a,
			struct ibc_obj_result *res)
{
	/* The broker keeps of a verbs object only what its listing shows. */
	Rdmab__ObjAttr shown = RDMAB__OBJ_ATTR__INIT;
	char why[256];
	int err;

	shown.cqe = a->attr.cqe;
	shown.qp_type = a->attr.qp_type;
	shown.xrc_qp_num = a->attr.xrc_qp_num;
	shown.mr_length = a->attr.mr_length;
	err = ibc_obj_request(o, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
			      &shown, NULL);
	if (err < 0)
		return err;
	err = verbs_kernel_create(o, a, res);
	if (err < 0) {
		/* Cancel the intent; the kernel's sentence stays. */
		snprintf(why, sizeof(why), "%s", ibc_last_error());
		ibc_obj_destroy_request(o, false);
		o->id = 0;
		return ibc_set_error(err, "%s", why);
	}
	ibc_obj_register_nowait(o);
	return 0;
}

/*
 * Unregister first, without waiting, then destroy: once the kernel has
 * freed the handle anyone in the domain may get it, and the broker must
 * not hold it as this process's by then.
 */
static int verbs_destroy(struct ibc_obj *o)
{
	char why[256];
	int err;

	/* A registration that cannot be withdrawn keeps the object: freed
	 * now, its handle could be someone else's when the broker destroys
	 * it after this process exits. */
	if (o->id) {
		/* A WQ waits for the reply: the broker first rebuilds the
		 * RSS tables that use it without it, and the kernel refuses
		 * (EBUSY) to destroy a WQ a table still holds. */
		err = ibc_obj_destroy_request(o, o->kind == IBC_OBJ_WQ);
		if (err < 0) {
			snprintf(why, sizeof(why), "%s", ibc_last_error());
			return ibc_set_error(err,
					     "%s: the broker cannot be told "
					     "(%s): the %s stays until this "
					     "process exits, when the broker "
					     "destroys it",
					     o->ctx->caps.device, why,
					     ibc_obj_kind_name(o->kind));
		}
	}
	err = verbs_kernel_destroy(o);
	if (err == 0)
		return 0;
	/* The kernel has no such handle any more: another process of the
	 * domain destroyed it by handle in the shared context. The
	 * unregister above dropped the record; handed back, it would have
	 * the broker destroy, once this process exits, whatever object the
	 * kernel gives that handle next. */
	if (err == -ENOENT)
		return err;
	/* Still alive: hand it back to the registry. */
	snprintf(why, sizeof(why), "%s", ibc_last_error());
	o->id = 0;
	ibc_obj_request(o, RDMAB__OBJ_CREATE_REQUEST__MODE__TRACK, NULL, NULL);
	return ibc_set_error(err, "%s", why);
}

static void verbs_destroy_removed(struct ibc_obj *o)
{
	/* libibverbs counts EIO from a disassociated device as destroyed. */
	verbs_kernel_destroy(o);
}

static int verbs_track(struct ibc_obj *o)
{
	return ibc_obj_request(o, RDMAB__OBJ_CREATE_REQUEST__MODE__TRACK, NULL,
			       NULL);
}

static int verbs_untrack(struct ibc_obj *o)
{
	return ibc_obj_destroy_request(o, false);
}

const struct ibc_ops ibc_verbs_ops = {
	.name = "verbs",
	.attach = verbs_attach,
	.detach = verbs_detach,
	.create = verbs_create,
	.destroy = verbs_destroy,
	.destroy_removed = verbs_destroy_removed,
	.track = verbs_track,
	.untrack = verbs_untrack,
	.family_ops = { [IBC_FAMILY_DM] = &ibc_verbs_dm_ops },
};

/* --- a context of this process's own: nothing to register ------------ */

static int own_create(struct ibc_obj *o, const struct ibc_obj_args *a,
		      struct ibc_obj_result *res)
{
	return verbs_kernel_create(o, a, res);
}

static int own_destroy(struct ibc_obj *o)
{
	int err = verbs_kernel_destroy(o);

	/* The broker counts the name's opens, own ones too. -ENOENT: the
	 * process closed the handle behind the library's back (a raw
	 * ioctl on its own command descriptor); ibc_obj_destroy frees the
	 * object all the same, and untold, the broker would count the open,
	 * and charge it to the domain, until the session ends. */
	if ((err == 0 || err == -ENOENT) && o->kind == IBC_OBJ_XRCD)
		ibc_xrcd_own_closed(o);
	return err;
}

/* The kernel cleans this context up when the process exits. */
static int own_track(struct ibc_obj *o)
{
	(void)o;
	return 0;
}

/* Reached only through verbs_attach's fall-back: the descriptor is
 * gone by then. */
const struct ibc_ops ibc_own_ops = {
	.name = "own",
	.attach = verbs_attach,
	.detach = verbs_detach,
	.create = own_create,
	.destroy = own_destroy,
	.destroy_removed = verbs_destroy_removed,
	.track = own_track,
	.untrack = own_track,
	/* Never reached: a context of this process's own shares no DM
	 * (ibc_dm_alloc_ex() refuses first). */
	.family_ops = { [IBC_FAMILY_DM] = &ibc_verbs_dm_ops },
};
