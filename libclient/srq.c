// SPDX-License-Identifier: MIT
/* Shared receive queues. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "libclient/objects.h"

IBC_EXPORT int ibc_srq_create(struct ibc_ctx *ctx,
			      const struct ibv_srq_attr *attr,
			      struct ibc_srq **ret_srq)
{
	struct ibc_obj_args a = { .attr = RDMAB__OBJ_ATTR__INIT };
	struct ibc_srq *srq;
	int err;

	if (!ctx || !attr || !ret_srq)
		return ibc_set_error(-EINVAL, "ctx, attr or ret_srq is NULL");
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return ibc_set_error(-ENOMEM, "out of memory");
	srq->o.ctx = ctx;
	srq->o.kind = IBC_OBJ_SRQ;
	err = ibc_srq_make(srq, attr, &a, false);
	if (err < 0)
		return err;
	*ret_srq = srq;
	return 0;
}

int ibc_srq_make(struct ibc_srq *srq, const struct ibv_srq_attr *attr,
		 struct ibc_obj_args *a, bool xrc)
{
	struct ibc_obj_result res = { .attr = RDMAB__OBJ_ATTR__INIT };
	int err;

	a->attr.max_wr = attr->max_wr;
	a->attr.max_sge = attr->max_sge;
	a->attr.srq_limit = attr->srq_limit;
	err = ibc_obj_create(&srq->o, a, &res);
	if (err < 0) {
		free(srq);
		return err;
	}
	srq->attr = *attr;
	if (res.attr.max_wr)
		srq->attr.max_wr = res.attr.max_wr;
	if (res.attr.max_sge)
		srq->attr.max_sge = res.attr.max_sge;
	if (xrc)
		srq->srq_num = res.qp_num;
	return 0;
}

IBC_EXPORT int ibc_srq_destroy(struct ibc_srq *srq)
{
	if (!srq)
		return ibc_set_error(-EINVAL, "srq is NULL");
	return ibc_obj_destroy(&srq->o);
}

IBC_EXPORT struct ibv_srq *ibc_verbs_srq(struct ibc_srq *srq)
{
	return ibc_obj_verbs(srq ? &srq->o : NULL, IBC_OBJ_SRQ);
}
