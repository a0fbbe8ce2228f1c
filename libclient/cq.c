// SPDX-License-Identifier: MIT
/* Completion queues. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "libclient/objects.h"

IBC_EXPORT int ibc_cq_create_ex(struct ibc_ctx *ctx,
				const struct ibc_cq_attr *attr,
				struct ibc_cq **ret_cq)
{
	struct ibc_obj_args a = { .attr = RDMAB__OBJ_ATTR__INIT };
	struct ibc_obj_result res = { .attr = RDMAB__OBJ_ATTR__INIT };
	struct ibc_cq *cq;
	int err;

	if (!ctx || !attr || !ret_cq)
		return ibc_set_error(-EINVAL, "ctx, attr or ret_cq is NULL");
	if (attr->comp_mask)
		return ibc_set_error(-EOPNOTSUPP,
				     "unknown bits 0x%x in the CQ's comp_mask",
				     attr->comp_mask);
	if (attr->cqe < 1)
		return ibc_set_error(-EINVAL,
				     "cqe %d: a CQ needs at least "
				     "one entry",
				     attr->cqe);
	if (attr->comp_vector < 0)
		return ibc_set_error(-EINVAL, "comp_vector %d is negative",
				     attr->comp_vector);
	if (attr->channel && !ctx->vctx)
		return ibc_set_error(-EOPNOTSUPP,
				     "%s has no completion channels: it is "
				     "not a verbs device",
				     ctx->caps.device);
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return ibc_set_error(-ENOMEM, "out of memory");
	cq->o.ctx = ctx;
	cq->o.kind = IBC_OBJ_CQ;
	a.attr.cqe = (uint32_t)attr->cqe;
	a.attr.comp_vector = (uint32_t)attr->comp_vector;
	a.channel = attr->channel;
	err = ibc_obj_create(&cq->o, &a, &res);
	if (err < 0) {
		free(cq);
		return err;
	}
	/* A device that reports nothing gave what was asked. */
	cq->cqe = res.attr.cqe ? (int)res.attr.cqe : attr->cqe;
	*ret_cq = cq;
	return 0;
}

IBC_EXPORT int ibc_cq_create(struct ibc_ctx *ctx, int cqe,
			     struct ibc_cq **ret_cq)
{
	struct ibc_cq_attr attr = { .cqe = cqe };

	return ibc_cq_create_ex(ctx, &attr, ret_cq);
}

IBC_EXPORT int ibc_cq_destroy(struct ibc_cq *cq)
{
	if (!cq)
		return ibc_set_error(-EINVAL, "cq is NULL");
	return ibc_obj_destroy(&cq->o);
}

IBC_EXPORT int ibc_cq_cqe(const struct ibc_cq *cq)
{
	return cq ? cq->cqe : 0;
}

IBC_EXPORT struct ibv_cq *ibc_verbs_cq(struct ibc_cq *cq)
{
	return ibc_obj_verbs(cq ? &cq->o : NULL, IBC_OBJ_CQ);
}
