// SPDX-License-Identifier: MIT
/*
 * The soft device: a software RDMA device with ConnectX-6-like limits, for
 * machines without RDMA hardware. A context is a sealed memfd that every
 * client of the domain receives (as every importer of a verbs context
 * receives the same cmd_fd); its objects are records kept by the daemon
 * (soft-objects.c), which is this device's kernel.
 *
 * The limits are what `ibv_devinfo -v` prints for a ConnectX-6 (MT28908,
 * vendor_part_id 4123, firmware 20.x; mlx5 devices of that generation
 * agree): max_qp 262144, max_qp_wr 32768, max_sge 30, max_cq 16777216,
 * max_cqe 4194303, max_mr 16777216, max_mr_size 2^64-1, max_pd 16777216,
 * max_mw 16777216, max_ah 2147483647, max_srq 8388608, max_srq_wr 32767,
 * max_srq_sge 31, max_wq_type_rq 8388608. What an object is given is
 * rounded as mlx5 rounds it: a CQ gets 2^n - 1 entries, an SRQ 2^n - 1
 * work requests, QP and WQ queues 2^n.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "daemon/device/device.h"
#include "daemon/util/log.h"
#include "daemon/device/soft/soft-objects.h"
#include "daemon/device/soft/soft.h"

/* ConnectX-6: 2^16 entries per indirection table (reported as the 2^13
 * that uverbs takes, see device_probe). */
#define SOFT_MAX_RSS_TABLE_SIZE (1u << 16)
/* The kernel numbers a context's objects from 0; the PD comes first. */
#define SOFT_PD_HANDLE 0
/* Every soft DM is whole pages of a memfd of its own. */
#define SOFT_DM_MAX_LOG_ALIGN 12

struct soft_ctx {
	struct device_ctx base;
	int fd;
	struct soft_objs objs;
};

static struct soft_ctx *soft_ctx_of(const struct device_ctx *ctx)
{
	return (struct soft_ctx *)ctx;
}

static int soft_ctx_open(struct device *dev, uint64_t ctx_id,
			 const char *domain, struct device_ctx **ret_ctx)
{
	struct soft_ctx_header h = {
		.magic = SOFT_CTX_MAGIC,
		.version = SOFT_CTX_VERSION,
		.pd_handle = SOFT_PD_HANDLE,
		.context_id = ctx_id,
		.flags = (dev->intent_window ? SOFT_CTX_INTENT_WINDOW : 0) |
			 (dev->internal_per_import || dev->internal_per_qp ?
				  SOFT_CTX_IMPORT_OBJECTS :
				  0),
	};
	struct soft_ctx *ctx;
	int ret;

	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->base.dev = dev;
	ctx->fd = -1;
	ret = soft_objs_init(&ctx->objs, dev->priv, dev);
	if (ret < 0)
		goto fail;
	snprintf(h.device, sizeof(h.device), "%s", dev->name);
	snprintf(h.domain, sizeof(h.domain), "%s", domain);
	ctx->fd = memfd_create("rdmabroker-soft-context",
			       MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (ctx->fd < 0) {
		ret = -errno;
		goto fail;
	}
	/* A short write sets no errno. */
	errno = 0;
	if (pwrite(ctx->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    fcntl(ctx->fd, F_ADD_SEALS,
		  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) <
		    0) {
		ret = errno ? -errno : -EIO;
		goto fail;
	}
	*ret_ctx = &ctx->base;
	return 0;

fail:
	if (ctx->fd >= 0)
		close(ctx->fd);
	soft_objs_fini(&ctx->objs);
	free(ctx);
	return ret;
}

/* The memfd a previous daemon made for context @ctx_id: its header must
 * say so, and its seals be the ones soft_ctx_open() set. */
static int soft_ctx_adopt(struct device *dev, uint64_t ctx_id, int fd,
			  uint32_t pd_handle, struct device_ctx **ret_ctx)
{
	const int seals =
		F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL;
	struct soft_ctx_header h;
	struct soft_ctx *ctx;
	int ret;

	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    h.magic != SOFT_CTX_MAGIC || h.version != SOFT_CTX_VERSION ||
	    h.context_id != ctx_id || h.pd_handle != pd_handle ||
	    strncmp(h.device, dev->name, sizeof(h.device)) != 0 ||
	    fcntl(fd, F_GET_SEALS) != seals) {
		close(fd);
		return -EBADMSG;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		close(fd);
		return -ENOMEM;
	}
	ctx->base.dev = dev;
	ret = soft_objs_init(&ctx->objs, dev->priv, dev);
	if (ret < 0) {
		close(fd);
		free(ctx);
		return ret;
	}
	ctx->fd = fd;
	*ret_ctx = &ctx->base;
	return 0;
}

static void soft_ctx_close(struct device_ctx *base)
{
	struct soft_ctx *ctx = soft_ctx_of(base);

	soft_objs_fini(&ctx->objs);
	close(ctx->fd);
	free(ctx);
}

static int soft_ctx_fd(const struct device_ctx *base)
{
	return soft_ctx_of(base)->fd;
}

static uint32_t soft_ctx_pd_handle(const struct device_ctx *base)
{
	return SOFT_PD_HANDLE;
}

static int soft_obj_create(struct device_ctx *base, const struct obj_spec *spec,
			   struct obj_made *ret, struct why *why)
{
	return soft_objs_create(&soft_ctx_of(base)->objs, spec, ret, why);
}

static int soft_obj_restore(struct device_ctx *base,
			    const struct obj_spec *spec, uint32_t handle,
			    struct obj_made *ret, struct why *why)
{
	return soft_objs_create_at(&soft_ctx_of(base)->objs, spec, handle, ret,
				   why);
}

static int soft_obj_destroy(struct device_ctx *base, enum ibc_obj_kind kind,
			    uint32_t handle, struct why *why)
{
	return soft_objs_destroy(&soft_ctx_of(base)->objs, kind, handle, why);
}

static int soft_handle_list(struct device_ctx *base, unsigned int type,
			    uint32_t *handles, uint32_t max)
{
	return soft_objs_handles(&soft_ctx_of(base)->objs, type, handles, max);
}

static int soft_import_open(struct device_ctx *base, uint64_t *ret)
{
	return soft_objs_import_open(&soft_ctx_of(base)->objs,
				     base->dev->internal_per_import, ret);
}

static void soft_import_close(struct device_ctx *base, uint64_t import)
{
	soft_objs_import_close(&soft_ctx_of(base)->objs, import);
}

static int soft_import_adopt(struct device_ctx *base, uint64_t import)
{
	return soft_objs_import_adopt(&soft_ctx_of(base)->objs,
				      base->dev->internal_per_import, import);
}

static uint32_t soft_import_records(struct device_ctx *base, uint64_t import)
{
	return soft_objs_import_records(&soft_ctx_of(base)->objs, import);
}

static int soft_import_left(struct device_ctx *base, uint64_t import,
			    uint32_t n)
{
	struct soft_objs *o = &soft_ctx_of(base)->objs;

	return soft_objs_import_adopt(o, n,
				      import ? import : o->next_import + 1);
}

/*
 * Device memory: one sealed memfd per DM, never reused, so that a process
 * that keeps a mapping of a freed DM never sees a later DM's bytes. The
 * memfd is new, hence zero; only its size is sealed, since the daemon
 * punches it to zeroes again at free for whoever still maps it.
 */
static int soft_dm_alloc(struct device_ctx *base, uint64_t length,
			 uint32_t log_align, struct device_dm *ret,
			 struct why *why)
{
	struct soft_ctx *ctx = soft_ctx_of(base);
	struct soft_dev *sd = ctx->objs.sd;
	const struct device *dev = base->dev;
	uint32_t handle;
	int fd, err;

	if (log_align > SOFT_DM_MAX_LOG_ALIGN)
		return why_set(why, -EINVAL,
			       "%s aligns device memory to at most 2^%u "
			       "bytes (every DM starts on a page), not "
			       "2^%u",
			       dev->name, SOFT_DM_MAX_LOG_ALIGN, log_align);
	if (length > dev->caps.max_dm_size - sd->dm_reserved)
		return why_set(why, -ENOMEM,
			       "%s: out of device memory: %llu of %llu "
			       "bytes are reserved",
			       dev->name, (unsigned long long)sd->dm_reserved,
			       (unsigned long long)dev->caps.max_dm_size);
	fd = memfd_create("rdmabroker-dm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return why_set(why, -errno, "%s: memfd_create: %s", dev->name,
			       strerror(errno));
	if (ftruncate(fd, (off_t)length) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) <
		    0) {
		err = -errno;
		close(fd);
		return why_set(why, err, "%s: cannot size the DM: %s",
			       dev->name, strerror(-err));
	}
	err = soft_objs_add_dm(&ctx->objs, length, &handle);
	if (err < 0) {
		close(fd);
		return why_set(why, err, "%s: out of memory", dev->name);
	}
	sd->dm_reserved += length;
	ret->handle = handle;
	ret->length = length;
	ret->fd = fd;
	return 0;
}

static int soft_dm_free(struct device_ctx *base, struct device_dm *dm,
			struct why *why)
{
	struct soft_ctx *ctx = soft_ctx_of(base);
	uint64_t length = dm->length;
	int err;

	err = soft_objs_destroy(&ctx->objs, IBC_OBJ_DM, dm->handle, why);
	if (err < 0)
		return err;
	/* Zero what a process that still maps it would read. */
	if (fallocate(dm->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
		      (off_t)length) < 0)
		log_warn("%s: cannot zero DM handle %u before freeing it: %s",
			 base->dev->name, dm->handle, strerror(errno));
	close(dm->fd);
	dm->fd = -1;
	ctx->objs.sd->dm_reserved -= length;
	return 0;
}

/* Restart: the DM record is made again at its handle (the soft device's
 * kernel is the daemon, which died), unless this context has it already;
 * its memfd must be one of its length, sealed as soft_dm_alloc() sealed
 * it. */
static int soft_dm_adopt(struct device_ctx *base, uint32_t handle,
			 uint64_t length, int fd, struct device_dm *ret,
			 struct why *why)
{
	struct soft_ctx *ctx = soft_ctx_of(base);
	struct stat st;
	int seals, err;

	seals = fcntl(fd, F_GET_SEALS);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != length || seals < 0 ||
	    !(seals & F_SEAL_GROW) || !(seals & F_SEAL_SHRINK))
		return why_set(why, -EINVAL,
			       "%s: the descriptor of DM handle %u is not "
			       "its sealed memfd of %llu bytes",
			       base->dev->name, handle,
			       (unsigned long long)length);
	/* Its record may be back already (the context's, restored first);
	 * a lookup, not a walk: a restore adopts every DM of the context. */
	if (soft_objs_kind(&ctx->objs, handle) != IBC_OBJ_DM) {
		err = soft_objs_add_dm_at(&ctx->objs, length, handle, why);
		if (err < 0)
			return err;
	}
	ctx->objs.sd->dm_reserved += length;
	ret->handle = handle;
	ret->length = length;
	ret->fd = fd;
	ret->priv = NULL;
	return 0;
}

static int soft_rss_adopt(struct device_ctx *base, const struct rss_spec *spec,
			  const struct rss_made *at, struct rss_made *ret,
			  struct why *why)
{
	return soft_objs_rss_create_at(&soft_ctx_of(base)->objs, spec, at, ret,
				       why);
}

/* The kernel's rule: one XRC domain per inode, across contexts; it
 * holds the inode while it lives. */
static int soft_xrcd_hold(struct device *dev, int fd, uint64_t ino,
			  uint32_t *io_id, void **ret, struct why *why)
{
	int err;

	if (soft_xrcd_open(dev->priv, ino, *io_id, io_id) < 0)
		return why_set(why, -ENOMEM, "%s: out of memory", dev->name);
	err = soft_xrcd_file(dev->priv, ino, fd);
	if (err < 0) {
		soft_xrcd_close(dev->priv, ino);
		return why_set(why, err, "%s: %s", dev->name, strerror(-err));
	}
	*ret = (void *)(uintptr_t)ino;
	return 0;
}

static void soft_xrcd_drop(struct device *dev, void *xrcd)
{
	soft_xrcd_close(dev->priv, (uint64_t)(uintptr_t)xrcd);
}

static int soft_rss_create(struct device_ctx *base, const struct rss_spec *spec,
			   struct rss_made *ret, struct why *why)
{
	return soft_objs_rss_create(&soft_ctx_of(base)->objs, spec, ret, why);
}

static int soft_rss_destroy(struct device_ctx *base, struct rss_made *made,
			    enum ibc_obj_kind part, struct why *why)
{
	return soft_objs_rss_destroy(&soft_ctx_of(base)->objs, made, part, why);
}

static void soft_shutdown(struct device *dev)
{
	if (dev->priv)
		soft_dev_fini(dev->priv);
	free(dev->priv);
	dev->priv = NULL;
}

static void soft_serials_get(const struct device *dev,
			     struct device_serials *ret)
{
	const struct soft_dev *sd = dev->priv;

	ret->num = sd->next_num;
	ret->key = sd->next_key;
	ret->xrc_num = sd->next_xrcd;
}

/* Out of range, soft_objs_create() starts them over as at the first
 * start. */
static void soft_serials_set(struct device *dev, const struct device_serials *v)
{
	struct soft_dev *sd = dev->priv;

	sd->next_num = v->num;
	sd->next_key = v->key;
	sd->next_xrcd = v->xrc_num;
}

/* No events and always present: the defaults. */
static const struct device_ops soft_ops = {
	.ctx_open = soft_ctx_open,
	.ctx_adopt = soft_ctx_adopt,
	.shutdown = soft_shutdown,
	.xrcd_hold = soft_xrcd_hold,
	.xrcd_drop = soft_xrcd_drop,
	.serials_get = soft_serials_get,
	.serials_set = soft_serials_set,
};

static const struct device_ctx_ops soft_ctx_ops = {
	.close = soft_ctx_close,
	.fd = soft_ctx_fd,
	.pd_handle = soft_ctx_pd_handle,
	.obj_create = soft_obj_create,
	.obj_restore = soft_obj_restore,
	.obj_destroy = soft_obj_destroy,
	.dm_alloc = soft_dm_alloc,
	.dm_free = soft_dm_free,
	.dm_adopt = soft_dm_adopt,
	.rss_adopt = soft_rss_adopt,
	.rss_create = soft_rss_create,
	.rss_destroy = soft_rss_destroy,
	.handle_list = soft_handle_list,
	.import_open = soft_import_open,
	.import_close = soft_import_close,
	.import_adopt = soft_import_adopt,
	.import_records = soft_import_records,
	.import_left = soft_import_left,
};

static void soft_limits(struct device_caps *caps)
{
	caps->max_qp = 262144;
	caps->max_qp_wr = 32768;
	caps->max_sge = 30;
	caps->max_cq = 16777216;
	caps->max_cqe = 4194303;
	caps->max_mr = 16777216;
	caps->max_mr_size = UINT64_MAX;
	caps->max_pd = 16777216;
	caps->max_mw = 16777216;
	caps->max_ah = 2147483647;
	caps->max_srq = 8388608;
	caps->max_srq_wr = 32767;
	caps->max_srq_sge = 31;
	caps->max_wq = 8388608;
	/* Not in ibv_devinfo: mlx5's XRCD numbers are 24 bits. */
	caps->max_xrcd = 16777216;
}

/* Soft device @i: each one a kernel of its own (its contexts, objects,
 * XRCDs by inode, target QP numbers), as two uverbs devices are. */
static int soft_device_init(const struct device_config *cfg, unsigned int i,
			    struct device *d)
{
	memset(d, 0, sizeof(*d));
	d->priv = calloc(1, sizeof(struct soft_dev));
	if (!d->priv)
		return -ENOMEM;
	if (i == 0)
		snprintf(d->name, sizeof(d->name), SOFT_DEVICE_NAME);
	else
		snprintf(d->name, sizeof(d->name), "soft%u", i);
	d->kind = DEVICE_KIND_SOFT;
	d->broker_objects = true;
	device_set_ops(d, &soft_ops, &soft_ctx_ops);
	d->event_fd = -1;
	d->caps.max_dm_size = cfg->soft_max_dm_size;
	d->intent_window = cfg->soft_intent_window;
	d->internal_per_import = cfg->soft_internal_per_import;
	d->internal_per_qp = cfg->soft_internal_per_qp;
	d->caps.xrc = true;
	d->caps.max_rss_table_size = SOFT_MAX_RSS_TABLE_SIZE;
	d->caps.rss_hash_fields =
		IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
		IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 |
		IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP |
		IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;
	d->caps.rss_hash_functions = IBV_RX_HASH_FUNC_TOEPLITZ;
	d->caps.rss_qp_types = 1u << IBV_QPT_RAW_PACKET;
	d->caps.import = true;
	d->caps.dm_shared = true;
	d->caps.ports = 1;
	snprintf(d->caps.transport, sizeof(d->caps.transport), "software");
	soft_limits(&d->caps);
	return 0;
}

int device_soft_probe(const struct device_config *cfg, struct device_list *list)
{
	unsigned int n = cfg->soft_devices ? cfg->soft_devices : 1;
	int ret = 0;

	if (n > DEVICE_MAX)
		return -EINVAL;
	list->kind = DEVICE_KIND_SOFT;
	list->n = 0;
	for (unsigned int i = 0; i < n; i++) {
		ret = soft_device_init(cfg, i, &list->dev[i]);
		if (ret < 0)
			goto fail;
		list->n++;
	}
	return 0;
fail:
	for (size_t i = 0; i < list->n; i++)
		soft_shutdown(&list->dev[i]);
	list->n = 0;
	return ret;
}
