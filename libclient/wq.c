// SPDX-License-Identifier: MIT
/* Receive work queues, the members of RSS tables. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "libclient/objects.h"

/* ibc_wq_create(3) with NULL attributes. */
#define IBC_WQ_DEFAULT_WR 256
#define IBC_WQ_DEFAULT_SGE 1

IBC_EXPORT int ibc_wq_create(struct ibc_ctx *ctx, struct ibc_cq *cq,
			     const struct ibc_wq_attr *attr,
			     struct ibc_wq **ret_wq)
{
	struct ibc_obj_args a = { .attr = RDMAB__OBJ_ATTR__INIT };
	struct ibc_obj_result res = { .attr = RDMAB__OBJ_ATTR__INIT };
	struct ibc_wq *wq;
	int err;

	if (!ctx || !cq || !ret_wq)
		return ibc_set_error(-EINVAL, "ctx, cq or ret_wq is NULL");
	if (attr && attr->comp_mask)
		return ibc_set_error(-EOPNOTSUPP,
				     "unknown bits 0x%x in the WQ's comp_mask",
				     attr->comp_mask);
	err = ibc_obj_check_use(ctx, &cq->o, IBC_OBJ_CQ, "cq");
	if (err < 0)
		return err;
	wq = calloc(1, sizeof(*wq));
	if (!wq)
		return ibc_set_error(-ENOMEM, "out of memory");
	wq->o.ctx = ctx;
	wq->o.kind = IBC_OBJ_WQ;
	wq->o.uses[wq->o.n_uses++] = &cq->o;
	a.attr.max_wr = attr ? attr->max_wr : IBC_WQ_DEFAULT_WR;
	a.attr.max_sge = attr ? attr->max_sge : IBC_WQ_DEFAULT_SGE;
	a.cq = cq->o.vobj;
	err = ibc_obj_create(&wq->o, &a, &res);
	if (err < 0) {
		free(wq);
		return err;
	}
	wq->max_wr = res.attr.max_wr ? res.attr.max_wr : a.attr.max_wr;
	wq->max_sge = res.attr.max_sge ? res.attr.max_sge : a.attr.max_sge;
	*ret_wq = wq;
	return 0;
}

IBC_EXPORT int ibc_wq_destroy(struct ibc_wq *wq)
{
	if (!wq)
		return ibc_set_error(-EINVAL, "wq is NULL");
	return ibc_obj_destroy(&wq->o);
}

IBC_EXPORT uint64_t ibc_wq_id(const struct ibc_wq *wq)
{
	return wq ? wq->o.id : 0;
}

IBC_EXPORT struct ibv_wq *ibc_verbs_wq(struct ibc_wq *wq)
{
	return ibc_obj_verbs(wq ? &wq->o : NULL, IBC_OBJ_WQ);
}
