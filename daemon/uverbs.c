// SPDX-License-Identifier: MIT
/*
 * Destroy-by-handle through RDMA_VERBS_IOCTL. One table names, for each
 * kind, the uverbs object, its destroy method, the handle attribute and,
 * for the objects that report how many events they delivered (QP, CQ, SRQ,
 * WQ), the mandatory response attribute and its size. Every identifier and
 * struct comes from the kernel's installed uAPI headers.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h> /* includes <rdma/ib_user_verbs.h> */
#include <rdma/rdma_user_ioctl.h>

#include "daemon/uverbs.h"

#define UVERBS_NO_RESP 0xffff

struct uverbs_destroy_spec {
	const char *name;
	uint16_t object;
	uint16_t method;
	uint16_t handle_attr;
	/* UVERBS_NO_RESP when the method has no response attribute. */
	uint16_t resp_attr;
	uint16_t resp_len;
};

#define RESP_LEN(type, member) ((uint16_t)sizeof(((type *)0)->member))

static const struct uverbs_destroy_spec uverbs_specs[UVERBS_OBJ_COUNT] = {
	[UVERBS_OBJ_QP] = {
		"QP", UVERBS_OBJECT_QP, UVERBS_METHOD_QP_DESTROY,
		UVERBS_ATTR_DESTROY_QP_HANDLE, UVERBS_ATTR_DESTROY_QP_RESP,
		sizeof(struct ib_uverbs_destroy_qp_resp),
	},
	[UVERBS_OBJ_CQ] = {
		"CQ", UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_DESTROY,
		UVERBS_ATTR_DESTROY_CQ_HANDLE, UVERBS_ATTR_DESTROY_CQ_RESP,
		sizeof(struct ib_uverbs_destroy_cq_resp),
	},
	[UVERBS_OBJ_SRQ] = {
		"SRQ", UVERBS_OBJECT_SRQ, UVERBS_METHOD_SRQ_DESTROY,
		UVERBS_ATTR_DESTROY_SRQ_HANDLE, UVERBS_ATTR_DESTROY_SRQ_RESP,
		sizeof(struct ib_uverbs_destroy_srq_resp),
	},
	/* The kernel answers a WQ destroy with events_reported alone. */
	[UVERBS_OBJ_WQ] = {
		"WQ", UVERBS_OBJECT_WQ, UVERBS_METHOD_WQ_DESTROY,
		UVERBS_ATTR_DESTROY_WQ_HANDLE, UVERBS_ATTR_DESTROY_WQ_RESP,
		RESP_LEN(struct ib_uverbs_ex_destroy_wq_resp, events_reported),
	},
	[UVERBS_OBJ_MR] = {
		"MR", UVERBS_OBJECT_MR, UVERBS_METHOD_MR_DESTROY,
		UVERBS_ATTR_DESTROY_MR_HANDLE, UVERBS_NO_RESP, 0,
	},
	[UVERBS_OBJ_PD] = {
		"PD", UVERBS_OBJECT_PD, UVERBS_METHOD_PD_DESTROY,
		UVERBS_ATTR_DESTROY_PD_HANDLE, UVERBS_NO_RESP, 0,
	},
	[UVERBS_OBJ_RWQ_IND_TBL] = {
		"RWQ_IND_TBL", UVERBS_OBJECT_RWQ_IND_TBL,
		UVERBS_METHOD_RWQ_IND_TBL_DESTROY,
		UVERBS_ATTR_DESTROY_RWQ_IND_TBL_HANDLE, UVERBS_NO_RESP, 0,
	},
	[UVERBS_OBJ_FLOW] = {
		"flow", UVERBS_OBJECT_FLOW, UVERBS_METHOD_FLOW_DESTROY,
		UVERBS_ATTR_DESTROY_FLOW_HANDLE, UVERBS_NO_RESP, 0,
	},
	[UVERBS_OBJ_DM] = {
		"DM", UVERBS_OBJECT_DM, UVERBS_METHOD_DM_FREE,
		UVERBS_ATTR_FREE_DM_HANDLE, UVERBS_NO_RESP, 0,
	},
	[UVERBS_OBJ_XRCD] = {
		"XRCD", UVERBS_OBJECT_XRCD, UVERBS_METHOD_XRCD_DESTROY,
		UVERBS_ATTR_DESTROY_XRCD_HANDLE, UVERBS_NO_RESP, 0,
	},
	[UVERBS_OBJ_MW] = {
		"MW", UVERBS_OBJECT_MW, UVERBS_METHOD_MW_DESTROY,
		UVERBS_ATTR_DESTROY_MW_HANDLE, UVERBS_NO_RESP, 0,
	},
	[UVERBS_OBJ_AH] = {
		"AH", UVERBS_OBJECT_AH, UVERBS_METHOD_AH_DESTROY,
		UVERBS_ATTR_DESTROY_AH_HANDLE, UVERBS_NO_RESP, 0,
	},
};

const char *uverbs_obj_name(enum uverbs_obj kind)
{
	if ((unsigned int)kind >= UVERBS_OBJ_COUNT)
		return "?";
	return uverbs_specs[kind].name;
}

int uverbs_destroy(int cmd_fd, enum uverbs_obj kind, uint32_t handle)
{
	const struct uverbs_destroy_spec *spec;
	/* Big enough for every destroy response above. */
	union {
		struct ib_uverbs_destroy_qp_resp qp;
		struct ib_uverbs_destroy_cq_resp cq;
		struct ib_uverbs_destroy_srq_resp srq;
		struct ib_uverbs_ex_destroy_wq_resp wq;
	} resp;
	/* The header and at most two attributes, 8-byte aligned. */
	union {
		struct ib_uverbs_ioctl_hdr hdr;
		unsigned char bytes[sizeof(struct ib_uverbs_ioctl_hdr) +
				    2 * sizeof(struct ib_uverbs_attr)];
	} cmd;
	struct ib_uverbs_attr *attr;
	uint16_t n = 0;

	if ((unsigned int)kind >= UVERBS_OBJ_COUNT || cmd_fd < 0)
		return -EINVAL;
	spec = &uverbs_specs[kind];
	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	attr = cmd.hdr.attrs;

	/* An IDR attribute carries the handle in data. */
	attr[n].attr_id = spec->handle_attr;
	attr[n].flags = UVERBS_ATTR_F_MANDATORY;
	attr[n].data = handle;
	n++;
	if (spec->resp_attr != UVERBS_NO_RESP) {
		attr[n].attr_id = spec->resp_attr;
		attr[n].flags = UVERBS_ATTR_F_MANDATORY;
		attr[n].len = spec->resp_len;
		attr[n].data = (uint64_t)(uintptr_t)&resp;
		n++;
	}
	cmd.hdr.length = (uint16_t)(sizeof(cmd.hdr) +
				    n * sizeof(struct ib_uverbs_attr));
	cmd.hdr.object_id = spec->object;
	cmd.hdr.method_id = spec->method;
	cmd.hdr.num_attrs = n;
	/* driver_id is read only by driver-specific methods; these are the
	 * core's. */
	if (ioctl(cmd_fd, RDMA_VERBS_IOCTL, &cmd) < 0)
		return -errno;
	return 0;
}
