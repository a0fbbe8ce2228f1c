// SPDX-License-Identifier: MIT
/*
 * The device layer's common part (device.h): the defaults a device
 * implementation may leave NULL, the probe of every device kind, the kind
 * names and why_set(). The implementations (device-verbs.c,
 * device-soft.c) say only what differs.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rdma/ib_user_verbs.h>

#include "daemon/device/device.h"

/*
 * Each kind's name, and its destroy rank: where an owner's objects of the
 * kind go when the broker destroys them by handle (1 first; 0: never by
 * handle). What uses another object goes before it, as the kernel
 * requires: a flow and a QP before the indirection table, SRQ, WQ and CQ
 * they use, an MW before its MR, an MR before its DM, an XRC SRQ before
 * its XRCD, and the PD last.
 */
static const struct {
	const char *name;
	unsigned int destroy_rank;
	/* libibverbs shows its user no handle of it (struct ibv_xrcd has
	 * none): a record the client made names one of its context's. */
	bool handle_hidden;
} obj_kinds[OBJ_KIND_COUNT] = {
	[IBC_OBJ_NONE] = { "object", 0 },
	[IBC_OBJ_FLOW] = { "flow", 1 },
	[IBC_OBJ_QP] = { "QP", 2 },
	[IBC_OBJ_RWQ_IND_TBL] = { "indirection table", 3 },
	[IBC_OBJ_SRQ] = { "SRQ", 4 },
	[IBC_OBJ_WQ] = { "WQ", 5 },
	[IBC_OBJ_CQ] = { "CQ", 6 },
	[IBC_OBJ_MW] = { "MW", 7 },
	[IBC_OBJ_MR] = { "MR", 8 },
	[IBC_OBJ_AH] = { "AH", 9 },
	[IBC_OBJ_DM] = { "DM", 10 },
	[IBC_OBJ_XRCD] = { "XRCD", 11, true },
	[IBC_OBJ_PD] = { "PD", OBJ_DESTROY_RANKS },
	[IBC_OBJ_CONTEXT] = { "context", 0 },
};

/*
 * Every kind, and no default: with -Wswitch an error here, a kind added to
 * enum ibc_obj_kind stops the build until it is named below, and
 * OBJ_KIND_COUNT (device.h) and the tables it sizes are moved with it.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"
static __attribute__((unused)) unsigned int
obj_kind_check_all(enum ibc_obj_kind kind)
{
	switch (kind) {
	case IBC_OBJ_NONE:
	case IBC_OBJ_QP:
	case IBC_OBJ_CQ:
	case IBC_OBJ_SRQ:
	case IBC_OBJ_WQ:
	case IBC_OBJ_MR:
	case IBC_OBJ_PD:
	case IBC_OBJ_RWQ_IND_TBL:
	case IBC_OBJ_FLOW:
	case IBC_OBJ_DM:
	case IBC_OBJ_XRCD:
	case IBC_OBJ_MW:
	case IBC_OBJ_AH:
		break;
	case IBC_OBJ_CONTEXT: /* the last: OBJ_KIND_COUNT moves with it */
		break;
	}
	return (unsigned int)kind;
}
#pragma GCC diagnostic pop

const char *obj_kind_name(uint32_t kind)
{
	return kind < OBJ_KIND_COUNT ? obj_kinds[kind].name : "object";
}

unsigned int obj_kind_destroy_rank(uint32_t kind)
{
	return kind < OBJ_KIND_COUNT ? obj_kinds[kind].destroy_rank : 0;
}

bool obj_kind_handle_hidden(uint32_t kind)
{
	return kind < OBJ_KIND_COUNT && obj_kinds[kind].handle_hidden;
}

/* --- defaults for what an implementation leaves NULL ------------------ */

static int default_handle_event(struct device *dev)
{
	return 0;
}

static bool default_present(struct device *dev)
{
	return true;
}

static void default_shutdown(struct device *dev)
{
}

static int default_ctx_event_fd(const struct device_ctx *ctx)
{
	return -1;
}

static int default_ctx_handle_event(struct device_ctx *ctx)
{
	return 0;
}

static int default_obj_create(struct device_ctx *ctx,
			      const struct obj_spec *spec, struct obj_made *ret,
			      struct why *why)
{
	return why_set(why, -EOPNOTSUPP,
		       "%s: the broker does not create objects on this "
		       "device; the client makes its %s itself",
		       ctx->dev->name, obj_kind_name(spec->kind));
}

static int default_obj_destroy(struct device_ctx *ctx, enum ibc_obj_kind kind,
			       uint32_t handle, struct why *why)
{
	return why_set(why, -EOPNOTSUPP, "%s cannot destroy objects by handle",
		       ctx->dev->name);
}

static int default_dm_alloc(struct device_ctx *ctx, uint64_t length,
			    uint32_t log_align, struct device_dm *ret,
			    struct why *why)
{
	return why_set(why, -EOPNOTSUPP,
		       "%s has no device memory the broker can allocate",
		       ctx->dev->name);
}

static int default_dm_free(struct device_ctx *ctx, struct device_dm *dm,
			   struct why *why)
{
	return why_set(why, -EOPNOTSUPP, "%s cannot free device memory",
		       ctx->dev->name);
}

static int default_dm_adopt(struct device_ctx *ctx, uint32_t handle,
			    uint64_t length, int fd, struct device_dm *ret,
			    struct why *why)
{
	return why_set(why, -EOPNOTSUPP,
		       "%s cannot take back device memory after a restart",
		       ctx->dev->name);
}

static int default_rss_adopt(struct device_ctx *ctx,
			     const struct rss_spec *spec,
			     const struct rss_made *at, struct rss_made *ret,
			     struct why *why)
{
	return why_set(why, -EOPNOTSUPP,
		       "%s cannot take back an RSS object after a restart",
		       ctx->dev->name);
}

static int default_xrcd_hold(struct device *dev, int fd, uint64_t ino,
			     uint32_t *io_id, void **ret, struct why *why)
{
	return why_set(why, -EOPNOTSUPP,
		       "%s has no XRC domains (the device does not report "
		       "IBV_DEVICE_XRC)",
		       dev->name);
}

static void default_xrcd_drop(struct device *dev, void *xrcd)
{
}

static int default_xrcd_ctx_fd(struct device *dev)
{
	return -1;
}

static int default_ctx_adopt(struct device *dev, uint64_t ctx_id, int fd,
			     uint32_t pd_handle, struct device_ctx **ret_ctx)
{
	close(fd);
	return -EOPNOTSUPP;
}

static void default_serials_get(const struct device *dev,
				struct device_serials *ret)
{
	ret->num = ret->key = ret->xrc_num = 0;
}

static void default_serials_set(struct device *dev,
				const struct device_serials *v)
{
}

static int default_rss_create(struct device_ctx *ctx,
			      const struct rss_spec *spec, struct rss_made *ret,
			      struct why *why)
{
	const struct device *d = ctx->dev;

	return why_set(why, -EOPNOTSUPP, "%s makes no RSS tables: %s", d->name,
		       *d->rss_why ? d->rss_why :
				     "the device reports no RSS support");
}

static int default_rss_destroy(struct device_ctx *ctx, struct rss_made *made,
			       enum ibc_obj_kind part, struct why *why)
{
	return why_set(why, -EOPNOTSUPP, "%s makes no RSS tables",
		       ctx->dev->name);
}

static int default_obj_restore(struct device_ctx *ctx,
			       const struct obj_spec *spec, uint32_t handle,
			       struct obj_made *ret, struct why *why)
{
	return why_set(why, -EOPNOTSUPP,
		       "%s: the broker makes none of "
		       "its objects",
		       ctx->dev->name);
}

static int default_handle_list(struct device_ctx *ctx, unsigned int type,
			       uint32_t *handles, uint32_t max)
{
	return -EOPNOTSUPP;
}

static int default_qp_is_rss(struct device_ctx *ctx, uint32_t handle)
{
	return -EOPNOTSUPP;
}

static int default_import_open(struct device_ctx *ctx, uint64_t *ret)
{
	*ret = 0;
	return 0;
}

static void default_import_close(struct device_ctx *ctx, uint64_t import)
{
}

static int default_import_adopt(struct device_ctx *ctx, uint64_t import)
{
	return 0;
}

static uint32_t default_import_records(struct device_ctx *ctx, uint64_t import)
{
	return 0;
}

static int default_import_left(struct device_ctx *ctx, uint64_t import,
			       uint32_t n)
{
	return 0;
}

#define FILL(dst, src, field, def)                                             \
	((dst)->field = (src)->field ? (src)->field : (def))

void device_set_ops(struct device *dev, const struct device_ops *ops,
		    const struct device_ctx_ops *ctx_ops)
{
	struct device_ops *o = &dev->ops_table;
	struct device_ctx_ops *c = &dev->ctx_ops_table;

	o->ctx_open = ops->ctx_open;
	FILL(o, ops, handle_event, default_handle_event);
	FILL(o, ops, present, default_present);
	FILL(o, ops, shutdown, default_shutdown);
	FILL(o, ops, xrcd_hold, default_xrcd_hold);
	FILL(o, ops, xrcd_drop, default_xrcd_drop);
	FILL(o, ops, xrcd_ctx_fd, default_xrcd_ctx_fd);
	FILL(o, ops, ctx_adopt, default_ctx_adopt);
	FILL(o, ops, serials_get, default_serials_get);
	FILL(o, ops, serials_set, default_serials_set);
	c->close = ctx_ops->close;
	c->fd = ctx_ops->fd;
	c->pd_handle = ctx_ops->pd_handle;
	FILL(c, ctx_ops, event_fd, default_ctx_event_fd);
	FILL(c, ctx_ops, handle_event, default_ctx_handle_event);
	FILL(c, ctx_ops, obj_create, default_obj_create);
	FILL(c, ctx_ops, obj_restore, default_obj_restore);
	FILL(c, ctx_ops, obj_destroy, default_obj_destroy);
	FILL(c, ctx_ops, dm_alloc, default_dm_alloc);
	FILL(c, ctx_ops, dm_free, default_dm_free);
	FILL(c, ctx_ops, dm_adopt, default_dm_adopt);
	FILL(c, ctx_ops, rss_create, default_rss_create);
	FILL(c, ctx_ops, rss_destroy, default_rss_destroy);
	FILL(c, ctx_ops, rss_adopt, default_rss_adopt);
	FILL(c, ctx_ops, handle_list, default_handle_list);
	FILL(c, ctx_ops, qp_is_rss, default_qp_is_rss);
	FILL(c, ctx_ops, import_open, default_import_open);
	FILL(c, ctx_ops, import_close, default_import_close);
	FILL(c, ctx_ops, import_adopt, default_import_adopt);
	FILL(c, ctx_ops, import_records, default_import_records);
	FILL(c, ctx_ops, import_left, default_import_left);
	dev->ops = o;
	dev->ctx_ops = c;
}

/* What every device reports the same way, whatever its implementation
 * said. */
static void device_fix_caps(struct device_list *list)
{
	for (size_t i = 0; i < list->n; i++) {
		struct device_caps *caps = &list->dev[i].caps;

		/* uverbs takes no larger indirection table, whatever the
		 * device could hold. */
		if (caps->max_rss_table_size >
		    1u << IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE)
			caps->max_rss_table_size =
				1u << IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE;
	}
}

int device_parse_mode(const char *s, enum device_mode *ret_mode)
{
	if (strcmp(s, "auto") == 0)
		*ret_mode = DEVICE_MODE_AUTO;
	else if (strcmp(s, "verbs") == 0)
		*ret_mode = DEVICE_MODE_VERBS;
	else if (strcmp(s, "soft") == 0)
		*ret_mode = DEVICE_MODE_SOFT;
	else
		return -EINVAL;
	return 0;
}

const char *device_kind_name(enum device_kind kind)
{
	return kind == DEVICE_KIND_VERBS ? "verbs" : "soft";
}

int device_probe(enum device_mode mode, const struct device_config *cfg,
		 struct device_list *ret_list, const char **ret_why)
{
	int ret;

	memset(ret_list, 0, sizeof(*ret_list));
	if (mode == DEVICE_MODE_SOFT) {
		*ret_why = "--device soft";
		ret = device_soft_probe(cfg, ret_list);
		goto done;
	}
	ret = device_verbs_probe(ret_list);
	if (ret > 0) {
		*ret_why = mode == DEVICE_MODE_AUTO ?
				   "libibverbs found a device" :
				   "--device verbs";
		ret = 0;
		goto done;
	}
	if (ret == 0)
		*ret_why = "libibverbs found no RDMA device";
	else if (ret == -ENOSYS)
		*ret_why = "this kernel has no RDMA support";
	else
		*ret_why = "libibverbs could not open any RDMA device";
	if (mode == DEVICE_MODE_VERBS)
		return ret < 0 ? ret : -ENODEV;
	ret = device_soft_probe(cfg, ret_list);
done:
	if (ret == 0)
		device_fix_caps(ret_list);
	return ret;
}

void device_list_close(struct device_list *list)
{
	for (size_t i = 0; i < list->n; i++)
		if (!list->dev[i].removed)
			list->dev[i].ops->shutdown(&list->dev[i]);
	list->n = 0;
}

struct device *device_find(struct device_list *list, const char *name)
{
	for (size_t i = 0; i < list->n; i++) {
		struct device *d = &list->dev[i];

		if (name && *name) {
			if (strcmp(d->name, name) == 0)
				return d;
		} else if (!d->removed) {
			return d;
		}
	}
	return NULL;
}

void device_caps_text(const struct device *dev, char *buf, size_t len)
{
	const struct device_caps *c = &dev->caps;

	snprintf(buf, len,
		 "%s, max_dm_size %" PRIu64 ", xrc %s, rss table %" PRIu32
		 ", import %s",
		 c->transport, c->max_dm_size, c->xrc ? "yes" : "no",
		 c->max_rss_table_size, c->import ? "yes" : "no");
}
