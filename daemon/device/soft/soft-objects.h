/* SPDX-License-Identifier: MIT */
/*
 * The soft device's objects: the daemon is this device's kernel, so it
 * keeps them as records under the kernel's rules.
 *
 * - One handle space per context, shared by every kind, lowest free first
 *   (uverbs allocates from one xarray per file): a destroyed handle is
 *   reused at once, by anyone in the domain. The context's PD is handle 0.
 * - A QP needs a send CQ and (but XRC_SEND) a receive CQ of its context, a
 *   WQ a CQ; QPs, SRQs, WQs and MRs use the PD. An object in use cannot be
 *   destroyed: -EBUSY, as ib_destroy_cq_user() and friends answer.
 * - An XRCD record is an open of the device-wide XRC domain of an inode;
 *   the domain lives while any open remains. An XRC SRQ uses a CQ, the
 *   XRCD and the PD; an XRC target QP (XRC_RECV) uses only the XRCD, and
 *   opening one by number (ibv_open_qp) needs an XRCD of the same inode,
 *   else -EINVAL (ib_open_qp finds it in the XRCD's list). An XRCD in use
 *   cannot be closed: -EBUSY.
 * - Destroying a handle that names no object is -ENOENT; one that names an
 *   object of another kind is -EINVAL (rdma_lookup_get_uobject()).
 * - The device's limits (struct device_caps) are a ConnectX-6's; what an
 *   object is given is rounded as mlx5 rounds it (device-soft.c documents
 *   both).
 */
#ifndef RDMAB_SOFT_OBJECTS_H
#define RDMAB_SOFT_OBJECTS_H

#include <stdint.h>

#include "daemon/device/device.h"

/* Soft-only limits: the soft device carries no data, so these are its own
 * figures. */
#define SOFT_MAX_INLINE_DATA 512
#define SOFT_COMP_VECTORS 64

/* An XRC domain of the device, keyed by its file's inode as the kernel
 * keys it (ib_uverbs_open_xrcd): one per inode, whatever the context. */
struct soft_xrcd {
	uint64_t ino;
	/* Opens: the daemon's hold and the contexts' XRCD records. */
	uint32_t refs;
	/* Its number, device-wide, 24 bits as mlx5's xrcdn: what tells one
	 * XRC domain of an inode from the next one made for it. */
	uint32_t num;
	/* A copy of its file (-1 until a hold gives one): the kernel's XRC
	 * domain holds its inode, so that the inode's number is not reused
	 * by a new file while the domain lives. */
	int fd;
};

/* An XRC target QP: shared by every context that opened it
 * (ibv_open_qp), its creator's included; it lives while one remains. */
struct soft_tgt {
	uint32_t num;
	uint64_t ino; /* its XRCD's */
	uint32_t refs;
};

/* What the device holds across its contexts. */
struct soft_dev {
	uint32_t count[OBJ_KIND_COUNT];
	struct soft_xrcd *xrcds;
	uint32_t n_xrcds;
	size_t cap_xrcds;
	struct soft_tgt *tgts;
	uint32_t n_tgts;
	size_t cap_tgts;
	/* QP and SRQ numbers, MR key indexes, XRC domain numbers:
	 * device-wide. */
	uint32_t next_num;
	uint32_t next_key;
	uint32_t next_xrcd;
	/* Device memory reserved, in bytes (whole pages), against
	 * caps.max_dm_size: the soft MEMIC. */
	uint64_t dm_reserved;
};

struct soft_rec;

/* One context's records. */
struct soft_objs {
	struct soft_dev *sd;
	const struct device *dev;
	struct soft_rec *recs;
	size_t cap;
	/* Every handle below is taken; none from top up is. */
	uint32_t low;
	uint32_t top;
	/* Records per kind (an enum ibc_obj_kind; DEVICE_INTERNAL's in
	 * the last slot). */
	uint32_t n_type[OBJ_KIND_COUNT + 1];
	/* The last import's number (soft_objs_import_open). */
	uint64_t next_import;
};

/* Records for a new context of @dev; its PD takes handle 0. 0 or
 * -ENOMEM. */
int soft_objs_init(struct soft_objs *o, struct soft_dev *sd,
		   const struct device *dev);
/* The context closes: its objects go with it, as the kernel frees a
 * ucontext's. */
void soft_objs_fini(struct soft_objs *o);

/*
 * Make the object @spec asks for. Returns 0 with @ret filled (the handle,
 * QP or SRQ number, keys, and the attributes it was given), or -errno with
 * a sentence in @why: -EINVAL for attributes beyond the device's limits
 * or objects of the wrong kind in @spec->uses, -ENOMEM when the device
 * holds its maximum of that kind, -EOPNOTSUPP for what it does not make.
 */
int soft_objs_create(struct soft_objs *o, const struct obj_spec *spec,
		     struct obj_made *ret, struct why *why);
/* The same at @handle (a restore: the handle its clients know): -EEXIST
 * when it is taken. */
int soft_objs_create_at(struct soft_objs *o, const struct obj_spec *spec,
			uint32_t handle, struct obj_made *ret, struct why *why);
/* Destroy by handle: 0, -ENOENT, -EINVAL or -EBUSY (see above). */
int soft_objs_destroy(struct soft_objs *o, enum ibc_obj_kind kind,
		      uint32_t handle, struct why *why);

/* Take the lowest free handle for a DM (device-soft.c keeps its memory):
 * 0 or -ENOMEM. It goes with soft_objs_destroy(), -EBUSY while an MR uses
 * it. */
int soft_objs_add_dm(struct soft_objs *o, uint64_t length,
		     uint32_t *ret_handle);
/* Restart: the DM record @handle of @length made again (dm_adopt); 0,
 * -EEXIST for a handle taken, -ENOMEM. */
int soft_objs_add_dm_at(struct soft_objs *o, uint64_t length, uint32_t handle,
			struct why *why);
/* Open the XRC domain of inode @ino (made on the first open, as
 * ibv_open_xrcd with O_CREAT does), and let one open go. 0 or -ENOMEM.
 * @num: the number it takes (0: its own, or a new one when made); a
 * restart's hold gives the number its XRC domain had, which the records
 * made again before it (opened with a new number nobody was shown yet)
 * take too. Its number goes to *@ret_num (may be NULL). */
int soft_xrcd_open(struct soft_dev *sd, uint64_t ino, uint32_t num,
		   uint32_t *ret_num);
void soft_xrcd_close(struct soft_dev *sd, uint64_t ino);
/* The open XRC domain of inode @ino keeps a copy of its file @fd, unless
 * it has one: 0 or -errno. */
int soft_xrcd_file(struct soft_dev *sd, uint64_t ino, int fd);
/* Free the device's XRC domains (the device goes). */
void soft_dev_fini(struct soft_dev *sd);
/* RSS (device.h): the table uses its WQs (destroying one is -EBUSY
 * while the table lives), the QP the table, the flow rule the QP. */
int soft_objs_rss_create(struct soft_objs *o, const struct rss_spec *spec,
			 struct rss_made *ret, struct why *why);
/* Restart: the RSS parts made again at @at's handles (rss_adopt); -EEXIST
 * when one is taken. */
int soft_objs_rss_create_at(struct soft_objs *o, const struct rss_spec *spec,
			    const struct rss_made *at, struct rss_made *ret,
			    struct why *why);
int soft_objs_rss_destroy(struct soft_objs *o, struct rss_made *made,
			  enum ibc_obj_kind part, struct why *why);

/*
 * The kernel's handle list: the handles of the records of @type (an enum
 * ibc_obj_kind, or DEVICE_INTERNAL), at most @max, in handle order.
 * Returns the count, or -EINVAL for a type that is no object.
 */
int soft_objs_handles(const struct soft_objs *o, unsigned int type,
		      uint32_t *handles, uint32_t max);
/* The kind of the record at @handle (an enum ibc_obj_kind, or
 * DEVICE_INTERNAL), IBC_OBJ_NONE when the handle is free. */
unsigned int soft_objs_kind(const struct soft_objs *o, uint32_t handle);
/*
 * An import of the context: @n provider-internal records (kind
 * DEVICE_INTERNAL), as mlx5 makes a UAR per import, named by what goes to
 * @ret; soft_objs_create() adds the device's internal_per_qp more for each
 * QP made with spec->import set to it (mlx5's BF UARs). The records stay
 * when the QP goes; soft_objs_import_close() frees them all (a clean
 * close), a dead importer leaves them until the context closes. 0 or
 * -ENOMEM (none made).
 */
int soft_objs_import_open(struct soft_objs *o, uint32_t n, uint64_t *ret);
void soft_objs_import_close(struct soft_objs *o, uint64_t import);
/* Restart: import @import's @n records made again (its QPs' are not);
 * later imports are named after it. 0 or -ENOMEM. */
int soft_objs_import_adopt(struct soft_objs *o, uint32_t n, uint64_t import);
/* The records of import @import now (its QPs' included). */
uint32_t soft_objs_import_records(const struct soft_objs *o, uint64_t import);

#endif
