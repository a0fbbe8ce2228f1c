/* SPDX-License-Identifier: MIT */
/*
 * Destroy a uverbs object by its handle alone, without the libibverbs
 * struct that made it: the objects dead clients leave in a shared context
 * (DESIGN §3 and §5). Only the kernel's ioctl interface through the
 * installed uAPI headers: no <infiniband/driver.h>, no ibv_cmd_*, no
 * hand-copied structs.
 */
#ifndef RDMAB_UVERBS_H
#define RDMAB_UVERBS_H

#include <stdint.h>

#include "daemon/device/device.h"
#include "include/ibclient.h"

/*
 * Destroy the object @handle of @kind in the context whose command
 * descriptor is @cmd_fd (RDMA_VERBS_IOCTL, UVERBS_METHOD_<OBJ>_DESTROY).
 * Returns 0, or the kernel's -errno: -EBUSY while other objects still use
 * it (retry after those), -ENOENT for a handle that names no object,
 * -EINVAL for one that names an object of another kind (the kernel checks
 * the kind before it destroys anything), -EIO once the device was
 * disassociated; -EINVAL for a @kind that is no uverbs object
 * (IBC_OBJ_NONE, IBC_OBJ_CONTEXT, out of range); -ENOTTY when @cmd_fd is
 * not a uverbs descriptor.
 */
int uverbs_destroy(int cmd_fd, enum ibc_obj_kind kind, uint32_t handle);

/*
 * The kernel's driver id (enum rdma_driver_id) of the device behind
 * @cmd_fd, which every RDMA_VERBS_IOCTL header must carry: learnt from the
 * kernel with a read-only ioctl and cached per uverbs device. Returns 0, or
 * -errno (-ENOTTY: not a uverbs descriptor, -EPROTONOSUPPORT: no id fits).
 * uverbs_destroy() calls it; not thread-safe (the daemon has one thread).
 */
int uverbs_driver_id(int cmd_fd, uint32_t *ret_driver_id);

/*
 * The kernel's handle list of the context behind @cmd_fd
 * (UVERBS_METHOD_INFO_HANDLES): the handles of every object of @type, an
 * enum ibc_obj_kind or DEVICE_INTERNAL (mlx5's UAR objects,
 * MLX5_IB_OBJECT_UAR), at most @max (capped at UVERBS_HANDLES_MAX) in
 * @handles. The kernel stops at the room it is given: a return of @max
 * means there may be more. Returns the count; 0 for a type the device
 * does not have (the kernel's ENOENT) and for DEVICE_INTERNAL on a device
 * that is not mlx5; -EIO once the device was
 * disassociated, -ENOTTY for a descriptor that is not uverbs, -EINVAL for
 * a @type that is no uverbs object, or the kernel's other errors.
 */
#define UVERBS_HANDLES_MAX 16383

/*
 * The kernel's answer to a query of the QP at @handle in the context
 * behind @cmd_fd (IB_USER_VERBS_CMD_QUERY_QP through
 * UVERBS_METHOD_INVOKE_WRITE): 0 when the QP answered, or the -errno the
 * kernel gave. mlx5 answers -ENOSYS for an RSS QP (mlx5_ib_query_qp: a QP
 * over an indirection table), which no member can make (RAW_PACKET needs
 * CAP_NET_RAW). Reads only. mlx5 only: unverified on hardware.
 */
int uverbs_qp_query(int cmd_fd, uint32_t handle);
int uverbs_handles(int cmd_fd, unsigned int type, uint32_t *handles,
		   uint32_t max);

#endif
