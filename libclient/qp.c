// SPDX-License-Identifier: MIT
/* Queue pairs: RC, UC, UD and XRC send QPs on the domain's PD. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "libclient/objects.h"

/* The QP's CQs and SRQ belong to its context and live. */
static int ibc_qp_check(struct ibc_ctx *ctx, const struct ibc_qp_attr *attr)
{
	int err;

	switch (attr->qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
		if (!attr->send_cq || !attr->recv_cq)
			return ibc_set_error(-EINVAL,
					     "an RC, UC or UD QP needs a "
					     "send_cq and a recv_cq");
		break;
	case IBV_QPT_XRC_SEND:
		if (!attr->send_cq)
			return ibc_set_error(-EINVAL,
					     "an XRC send QP needs a send_cq");
		if (attr->recv_cq || attr->srq)
			return ibc_set_error(-EINVAL,
					     "an XRC send QP receives nothing: "
					     "recv_cq and srq must be NULL");
		break;
	default:
		return ibc_set_error(-EINVAL,
				     "qp_type %d: ibc_qp_create makes RC, UC, "
				     "UD and XRC send QPs",
				     (int)attr->qp_type);
	}
	err = ibc_obj_check_use(ctx, &attr->send_cq->o, IBC_OBJ_CQ, "send_cq");
	if (err == 0 && attr->recv_cq)
		err = ibc_obj_check_use(ctx, &attr->recv_cq->o, IBC_OBJ_CQ,
					"recv_cq");
	if (err == 0 && attr->srq)
		err = ibc_obj_check_use(ctx, &attr->srq->o, IBC_OBJ_SRQ, "srq");
	return err;
}

IBC_EXPORT int ibc_qp_create(struct ibc_ctx *ctx,
			     const struct ibc_qp_attr *attr,
			     struct ibc_qp **ret_qp)
{
	struct ibc_obj_args a = { .attr = RDMAB__OBJ_ATTR__INIT };
	struct ibc_obj_result res = { .attr = RDMAB__OBJ_ATTR__INIT };
	struct ibc_qp *qp;
	int err;

	if (!ctx || !attr || !ret_qp)
		return ibc_set_error(-EINVAL, "ctx, attr or ret_qp is NULL");
	if (attr->comp_mask)
		return ibc_set_error(-EOPNOTSUPP,
				     "unknown bits 0x%x in the QP's comp_mask",
				     attr->comp_mask);
	err = ibc_qp_check(ctx, attr);
	if (err < 0)
		return err;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return ibc_set_error(-ENOMEM, "out of memory");
	qp->o.ctx = ctx;
	qp->o.kind = IBC_OBJ_QP;
	/* In the order ObjCreateRequest.uses names them. */
	qp->o.uses[qp->o.n_uses++] = &attr->send_cq->o;
	if (attr->recv_cq)
		qp->o.uses[qp->o.n_uses++] = &attr->recv_cq->o;
	if (attr->srq)
		qp->o.uses[qp->o.n_uses++] = &attr->srq->o;
	a.attr.qp_type = (uint32_t)attr->qp_type;
	a.attr.max_send_wr = attr->cap.max_send_wr;
	a.attr.max_recv_wr = attr->cap.max_recv_wr;
	a.attr.max_send_sge = attr->cap.max_send_sge;
	a.attr.max_recv_sge = attr->cap.max_recv_sge;
	a.attr.max_inline_data = attr->cap.max_inline_data;
	a.attr.sq_sig_all = attr->sq_sig_all ? 1 : 0;
	a.send_cq = attr->send_cq->o.vobj;
	a.recv_cq = attr->recv_cq ? attr->recv_cq->o.vobj : NULL;
	a.srq = attr->srq ? attr->srq->o.vobj : NULL;
	err = ibc_obj_create(&qp->o, &a, &res);
	if (err < 0) {
		free(qp);
		return err;
	}
	qp->qp_num = res.qp_num;
	qp->cap = attr->cap;
	/* What the device gave, where it says (at least what was asked). */
	if (res.attr.max_send_wr)
		qp->cap.max_send_wr = res.attr.max_send_wr;
	if (res.attr.max_recv_wr)
		qp->cap.max_recv_wr = res.attr.max_recv_wr;
	if (res.attr.max_send_sge)
		qp->cap.max_send_sge = res.attr.max_send_sge;
	if (res.attr.max_recv_sge)
		qp->cap.max_recv_sge = res.attr.max_recv_sge;
	if (res.attr.max_inline_data)
		qp->cap.max_inline_data = res.attr.max_inline_data;
	*ret_qp = qp;
	return 0;
}

IBC_EXPORT int ibc_qp_destroy(struct ibc_qp *qp)
{
	if (!qp)
		return ibc_set_error(-EINVAL, "qp is NULL");
	return ibc_obj_destroy(&qp->o);
}

IBC_EXPORT uint32_t ibc_qp_num(const struct ibc_qp *qp)
{
	return qp ? qp->qp_num : 0;
}

IBC_EXPORT void ibc_qp_cap(const struct ibc_qp *qp, struct ibv_qp_cap *ret_cap)
{
	if (qp && ret_cap)
		*ret_cap = qp->cap;
}

IBC_EXPORT struct ibv_qp *ibc_verbs_qp(struct ibc_qp *qp)
{
	return ibc_obj_verbs(qp ? &qp->o : NULL, IBC_OBJ_QP);
}
