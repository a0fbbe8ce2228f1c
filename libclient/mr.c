// SPDX-License-Identifier: MIT
/* Memory regions. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "libclient/objects.h"

IBC_EXPORT int ibc_reg_mr(struct ibc_ctx *ctx, void *addr, size_t length,
			  int access, struct ibc_mr **ret_mr)
{
	struct ibc_obj_args a = { .attr = RDMAB__OBJ_ATTR__INIT };
	struct ibc_obj_result res = { .attr = RDMAB__OBJ_ATTR__INIT };
	struct ibc_mr *mr;
	int err;

	if (!ctx || !ret_mr)
		return ibc_set_error(-EINVAL, "ctx or ret_mr is NULL");
	if (!addr || !length)
		return ibc_set_error(-EINVAL, "an MR needs an address and a "
					      "length");
	/* The access bits are the device's to judge: the kernel on verbs
	 * devices, the daemon on the soft one. */
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return ibc_set_error(-ENOMEM, "out of memory");
	mr->o.ctx = ctx;
	mr->o.kind = IBC_OBJ_MR;
	a.attr.mr_addr = (uint64_t)(uintptr_t)addr;
	a.attr.mr_length = (uint64_t)length;
	a.attr.mr_access = (uint32_t)access;
	a.mr_addr = addr;
	err = ibc_obj_create(&mr->o, &a, &res);
	if (err < 0) {
		free(mr);
		return err;
	}
	mr->lkey = res.lkey;
	mr->rkey = res.rkey;
	*ret_mr = mr;
	return 0;
}

/* An MR on device memory: its family is told by ibc_obj_destroy(). */
IBC_EXPORT int ibc_dereg_mr(struct ibc_mr *mr)
{
	if (!mr)
		return ibc_set_error(-EINVAL, "mr is NULL");
	return ibc_obj_destroy(&mr->o);
}

IBC_EXPORT uint32_t ibc_mr_lkey(const struct ibc_mr *mr)
{
	return mr ? mr->lkey : 0;
}

IBC_EXPORT uint32_t ibc_mr_rkey(const struct ibc_mr *mr)
{
	return mr ? mr->rkey : 0;
}

IBC_EXPORT struct ibv_mr *ibc_verbs_mr(struct ibc_mr *mr)
{
	return ibc_obj_verbs(mr ? &mr->o : NULL, IBC_OBJ_MR);
}
