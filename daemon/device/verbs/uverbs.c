// SPDX-License-Identifier: MIT
/*
 * Destroy-by-handle through RDMA_VERBS_IOCTL. One table names, for each
 * kind, the uverbs object, its destroy method, the handle attribute and,
 * for the objects that report how many events they delivered (QP, CQ, SRQ,
 * WQ), the mandatory response attribute and its size. Every identifier and
 * struct comes from the kernel's installed uAPI headers.
 *
 * The kernel refuses (EINVAL, before looking at anything else) an ioctl
 * whose header does not carry the driver id of the device (enum
 * rdma_driver_id), which libibverbs keeps in its private context. The id is
 * learnt here from the kernel itself, with the read-only
 * UVERBS_METHOD_INFO_HANDLES, cached per uverbs character device (st_rdev),
 * and learnt again when a cached id stops working (a device gone and
 * another one at its minor).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h> /* includes <rdma/ib_user_verbs.h> */
#include <rdma/mlx5_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl.h>

#include "daemon/device/device.h"
#include "daemon/device/verbs/uverbs.h"

#define UVERBS_NO_RESP 0xffff

struct uverbs_destroy_spec {
	/* Not a uverbs object when false. */
	bool valid;
	uint16_t object;
	uint16_t method;
	uint16_t handle_attr;
	/* UVERBS_NO_RESP when the method has no response attribute. */
	uint16_t resp_attr;
	uint16_t resp_len;
};

#define RESP_LEN(type, member) ((uint16_t)sizeof(((type *)0)->member))

static const struct uverbs_destroy_spec uverbs_specs[OBJ_KIND_COUNT] = {
	[IBC_OBJ_QP] = {
		true, UVERBS_OBJECT_QP, UVERBS_METHOD_QP_DESTROY,
		UVERBS_ATTR_DESTROY_QP_HANDLE, UVERBS_ATTR_DESTROY_QP_RESP,
		sizeof(struct ib_uverbs_destroy_qp_resp),
	},
	[IBC_OBJ_CQ] = {
		true, UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_DESTROY,
		UVERBS_ATTR_DESTROY_CQ_HANDLE, UVERBS_ATTR_DESTROY_CQ_RESP,
		sizeof(struct ib_uverbs_destroy_cq_resp),
	},
	[IBC_OBJ_SRQ] = {
		true, UVERBS_OBJECT_SRQ, UVERBS_METHOD_SRQ_DESTROY,
		UVERBS_ATTR_DESTROY_SRQ_HANDLE, UVERBS_ATTR_DESTROY_SRQ_RESP,
		sizeof(struct ib_uverbs_destroy_srq_resp),
	},
	/* The kernel answers a WQ destroy with events_reported alone. */
	[IBC_OBJ_WQ] = {
		true, UVERBS_OBJECT_WQ, UVERBS_METHOD_WQ_DESTROY,
		UVERBS_ATTR_DESTROY_WQ_HANDLE, UVERBS_ATTR_DESTROY_WQ_RESP,
		RESP_LEN(struct ib_uverbs_ex_destroy_wq_resp, events_reported),
	},
	[IBC_OBJ_MR] = {
		true, UVERBS_OBJECT_MR, UVERBS_METHOD_MR_DESTROY,
		UVERBS_ATTR_DESTROY_MR_HANDLE, UVERBS_NO_RESP, 0,
	},
	[IBC_OBJ_PD] = {
		true, UVERBS_OBJECT_PD, UVERBS_METHOD_PD_DESTROY,
		UVERBS_ATTR_DESTROY_PD_HANDLE, UVERBS_NO_RESP, 0,
	},
	[IBC_OBJ_RWQ_IND_TBL] = {
		true, UVERBS_OBJECT_RWQ_IND_TBL,
		UVERBS_METHOD_RWQ_IND_TBL_DESTROY,
		UVERBS_ATTR_DESTROY_RWQ_IND_TBL_HANDLE, UVERBS_NO_RESP, 0,
	},
	[IBC_OBJ_FLOW] = {
		true, UVERBS_OBJECT_FLOW, UVERBS_METHOD_FLOW_DESTROY,
		UVERBS_ATTR_DESTROY_FLOW_HANDLE, UVERBS_NO_RESP, 0,
	},
	[IBC_OBJ_DM] = {
		true, UVERBS_OBJECT_DM, UVERBS_METHOD_DM_FREE,
		UVERBS_ATTR_FREE_DM_HANDLE, UVERBS_NO_RESP, 0,
	},
	[IBC_OBJ_XRCD] = {
		true, UVERBS_OBJECT_XRCD, UVERBS_METHOD_XRCD_DESTROY,
		UVERBS_ATTR_DESTROY_XRCD_HANDLE, UVERBS_NO_RESP, 0,
	},
	[IBC_OBJ_MW] = {
		true, UVERBS_OBJECT_MW, UVERBS_METHOD_MW_DESTROY,
		UVERBS_ATTR_DESTROY_MW_HANDLE, UVERBS_NO_RESP, 0,
	},
	[IBC_OBJ_AH] = {
		true, UVERBS_OBJECT_AH, UVERBS_METHOD_AH_DESTROY,
		UVERBS_ATTR_DESTROY_AH_HANDLE, UVERBS_NO_RESP, 0,
	},
};

/* A header and at most three attributes, 8-byte aligned. */
union uverbs_cmd {
	struct ib_uverbs_ioctl_hdr hdr;
	unsigned char bytes[sizeof(struct ib_uverbs_ioctl_hdr) +
			    3 * sizeof(struct ib_uverbs_attr)];
};

static int uverbs_ioctl(int fd, union uverbs_cmd *cmd, uint16_t object,
			uint16_t method, uint16_t nattrs, uint32_t driver_id)
{
	cmd->hdr.length = (uint16_t)(sizeof(cmd->hdr) +
				     nattrs * sizeof(struct ib_uverbs_attr));
	cmd->hdr.object_id = object;
	cmd->hdr.method_id = method;
	cmd->hdr.num_attrs = nattrs;
	cmd->hdr.driver_id = driver_id;
	if (ioctl(fd, RDMA_VERBS_IOCTL, cmd) < 0)
		return -errno;
	return 0;
}

/*
 * Does the kernel take @driver_id on @fd? Asks for the context's PD handles,
 * which changes nothing. The kernel compares the driver id before anything
 * else and answers EINVAL when it differs; any other answer means it
 * matched (EIO included: a disassociated device).
 */
static int uverbs_try_driver_id(int fd, uint32_t driver_id)
{
	union uverbs_cmd cmd;
	uint32_t total = 0, handles[16];
	struct ib_uverbs_attr *attr = cmd.hdr.attrs;

	memset(&cmd, 0, sizeof(cmd));
	/* A const attribute travels inline in data, as a u64. */
	attr[0].attr_id = UVERBS_ATTR_INFO_OBJECT_ID;
	attr[0].flags = UVERBS_ATTR_F_MANDATORY;
	attr[0].len = sizeof(uint64_t);
	attr[0].data = UVERBS_OBJECT_PD;
	attr[1].attr_id = UVERBS_ATTR_INFO_TOTAL_HANDLES;
	attr[1].len = sizeof(total);
	attr[1].data = (uint64_t)(uintptr_t)&total;
	/* The kernel wants room for at least one handle. */
	attr[2].attr_id = UVERBS_ATTR_INFO_HANDLES_LIST;
	attr[2].len = sizeof(handles);
	attr[2].data = (uint64_t)(uintptr_t)handles;
	return uverbs_ioctl(fd, &cmd, UVERBS_OBJECT_DEVICE,
			    UVERBS_METHOD_INFO_HANDLES, 3, driver_id);
}

/* enum rdma_driver_id has some 25 values; room for the ones to come. */
#define UVERBS_DRIVER_ID_MAX 64
#define UVERBS_CACHE_SIZE 16

static struct {
	dev_t rdev;
	uint32_t driver_id;
	bool used;
} uverbs_cache[UVERBS_CACHE_SIZE];
static unsigned int uverbs_cache_next;

static int uverbs_probe_driver_id(int fd, dev_t rdev, uint32_t *ret)
{
	for (uint32_t id = 0; id < UVERBS_DRIVER_ID_MAX; id++) {
		int err = uverbs_try_driver_id(fd, id);
		unsigned int slot;

		if (err == -EINVAL)
			continue;
		/* Not a uverbs descriptor at all. */
		if (err == -ENOTTY || err == -EBADF || err == -EFAULT)
			return err;
		for (slot = 0; slot < UVERBS_CACHE_SIZE; slot++)
			if (uverbs_cache[slot].used &&
			    uverbs_cache[slot].rdev == rdev)
				break;
		if (slot == UVERBS_CACHE_SIZE)
			slot = uverbs_cache_next++ % UVERBS_CACHE_SIZE;
		uverbs_cache[slot].rdev = rdev;
		uverbs_cache[slot].driver_id = id;
		uverbs_cache[slot].used = true;
		*ret = id;
		return 0;
	}
	return -EPROTONOSUPPORT;
}

/* The driver id for @fd: cached, else probed. @fresh skips the cache. */
static int uverbs_driver_id_of(int fd, bool fresh, uint32_t *ret)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISCHR(st.st_mode))
		return -ENOTTY;
	if (!fresh)
		for (unsigned int i = 0; i < UVERBS_CACHE_SIZE; i++)
			if (uverbs_cache[i].used &&
			    uverbs_cache[i].rdev == st.st_rdev) {
				*ret = uverbs_cache[i].driver_id;
				return 0;
			}
	return uverbs_probe_driver_id(fd, st.st_rdev, ret);
}

int uverbs_driver_id(int cmd_fd, uint32_t *ret_driver_id)
{
	if (cmd_fd < 0 || !ret_driver_id)
		return -EINVAL;
	return uverbs_driver_id_of(cmd_fd, false, ret_driver_id);
}

static int uverbs_destroy_once(int cmd_fd,
			       const struct uverbs_destroy_spec *spec,
			       uint32_t handle, uint32_t driver_id)
{
	/* Big enough for every destroy response above. */
	union {
		struct ib_uverbs_destroy_qp_resp qp;
		struct ib_uverbs_destroy_cq_resp cq;
		struct ib_uverbs_destroy_srq_resp srq;
		struct ib_uverbs_ex_destroy_wq_resp wq;
	} resp;
	union uverbs_cmd cmd;
	struct ib_uverbs_attr *attr = cmd.hdr.attrs;
	uint16_t n = 0;

	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
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
	return uverbs_ioctl(cmd_fd, &cmd, spec->object, spec->method, n,
			    driver_id);
}

int uverbs_destroy(int cmd_fd, enum ibc_obj_kind kind, uint32_t handle)
{
	const struct uverbs_destroy_spec *spec;
	uint32_t driver_id, again;
	int ret;

	if ((unsigned int)kind >= OBJ_KIND_COUNT || !uverbs_specs[kind].valid ||
	    cmd_fd < 0)
		return -EINVAL;
	spec = &uverbs_specs[kind];
	ret = uverbs_driver_id_of(cmd_fd, false, &driver_id);
	if (ret < 0)
		return ret;
	ret = uverbs_destroy_once(cmd_fd, spec, handle, driver_id);
	/* A cached id that no longer fits: learn it again, once. */
	if (ret == -EINVAL && uverbs_driver_id_of(cmd_fd, true, &again) == 0 &&
	    again != driver_id)
		ret = uverbs_destroy_once(cmd_fd, spec, handle, again);
	return ret;
}

/* UVERBS_METHOD_INFO_HANDLES for @object, into @handles (room for @max). */
static int uverbs_handles_once(int fd, uint16_t object, uint32_t *handles,
			       uint32_t max, uint32_t driver_id,
			       uint32_t *ret_total)
{
	union uverbs_cmd cmd;
	/* UVERBS_ATTR_TYPE(u32): a longer attribute is EINVAL. */
	uint32_t total = 0;
	struct ib_uverbs_attr *attr = cmd.hdr.attrs;
	int ret;

	memset(&cmd, 0, sizeof(cmd));
	attr[0].attr_id = UVERBS_ATTR_INFO_OBJECT_ID;
	attr[0].flags = UVERBS_ATTR_F_MANDATORY;
	attr[0].len = sizeof(uint64_t);
	attr[0].data = object;
	/* Mandatory, so that a kernel that does not know an attribute
	 * says EPROTONOSUPPORT instead of dropping it, and ENOENT can only
	 * be the object type's (uverbs_handles). */
	attr[1].attr_id = UVERBS_ATTR_INFO_TOTAL_HANDLES;
	attr[1].flags = UVERBS_ATTR_F_MANDATORY;
	attr[1].len = sizeof(total);
	attr[1].data = (uint64_t)(uintptr_t)&total;
	attr[2].attr_id = UVERBS_ATTR_INFO_HANDLES_LIST;
	attr[2].flags = UVERBS_ATTR_F_MANDATORY;
	attr[2].len = (uint16_t)(max * sizeof(uint32_t));
	attr[2].data = (uint64_t)(uintptr_t)handles;
	ret = uverbs_ioctl(fd, &cmd, UVERBS_OBJECT_DEVICE,
			   UVERBS_METHOD_INFO_HANDLES, 3, driver_id);
	if (ret == 0)
		*ret_total = total;
	return ret;
}

int uverbs_handles(int cmd_fd, unsigned int type, uint32_t *handles,
		   uint32_t max)
{
	uint32_t driver_id, total = 0;
	uint16_t object;
	int ret;

	if (cmd_fd < 0 || !handles || max == 0)
		return -EINVAL;
	/* The attribute's length is 16 bits. */
	if (max > UVERBS_HANDLES_MAX)
		max = UVERBS_HANDLES_MAX;
	if (type == DEVICE_INTERNAL)
		object = MLX5_IB_OBJECT_UAR;
	else if (type < OBJ_KIND_COUNT && uverbs_specs[type].valid)
		object = uverbs_specs[type].object;
	else
		return -EINVAL;
	ret = uverbs_driver_id_of(cmd_fd, false, &driver_id);
	if (ret < 0)
		return ret;
	/* Driver object ids are per driver: another driver's id 0x1008 is
	 * another object, or none. */
	if (type == DEVICE_INTERNAL && driver_id != RDMA_DRIVER_MLX5)
		return 0;
	ret = uverbs_handles_once(cmd_fd, object, handles, max, driver_id,
				  &total);
	/*
	 * ENOENT: the device has no such object type, so none of them. The
	 * core removes the objects whose destroy the driver lacks (rxe: WQ,
	 * RWQ_IND_TBL, FLOW, DM, XRCD; mlx5 without MEMIC: DM) and
	 * uapi_get_object() answers ENOENT for an id not in the tree. With
	 * every attribute mandatory nothing else in this method gives
	 * ENOENT. Older kernels, whose handler tested that lookup for NULL,
	 * list none instead. Any other error is the caller's to see.
	 */
	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return ret;
	return total < max ? (int)total : (int)max;
}

int uverbs_qp_query(int cmd_fd, uint32_t handle)
{
	struct ib_uverbs_query_qp q;
	struct ib_uverbs_query_qp_resp resp;
	union uverbs_cmd cmd;
	struct ib_uverbs_attr *attr = cmd.hdr.attrs;
	uint32_t driver_id;
	int ret;

	if (cmd_fd < 0)
		return -EINVAL;
	ret = uverbs_driver_id_of(cmd_fd, false, &driver_id);
	if (ret < 0)
		return ret;
	memset(&cmd, 0, sizeof(cmd));
	memset(&q, 0, sizeof(q));
	memset(&resp, 0, sizeof(resp));
	/* The write command's own struct, without the write header: the
	 * kernel reads it from CORE_IN and answers into CORE_OUT (its
	 * response field is the write path's, unused here). */
	q.qp_handle = handle;
	q.attr_mask = 0;
	attr[0].attr_id = UVERBS_ATTR_WRITE_CMD;
	attr[0].flags = UVERBS_ATTR_F_MANDATORY;
	attr[0].len = sizeof(uint64_t);
	attr[0].data = IB_USER_VERBS_CMD_QUERY_QP;
	attr[1].attr_id = UVERBS_ATTR_CORE_IN;
	attr[1].flags = UVERBS_ATTR_F_MANDATORY;
	attr[1].len = sizeof(q);
	attr[1].data = (uint64_t)(uintptr_t)&q;
	attr[2].attr_id = UVERBS_ATTR_CORE_OUT;
	attr[2].flags = UVERBS_ATTR_F_MANDATORY;
	attr[2].len = sizeof(resp);
	attr[2].data = (uint64_t)(uintptr_t)&resp;
	return uverbs_ioctl(cmd_fd, &cmd, UVERBS_OBJECT_DEVICE,
			    UVERBS_METHOD_INVOKE_WRITE, 3, driver_id);
}
