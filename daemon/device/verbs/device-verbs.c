// SPDX-License-Identifier: MIT
/*
 * The verbs device: real libibverbs. Each device keeps a context of the
 * daemon's own (queries, device events), and one more for the XRCDs once
 * one is held; each domain gets
 * a context and PD of its own, opened with an empty effective capability
 * set, whose cmd_fd clients import.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include "common/verbs/verbs-err.h"
#include "common/verbs/verbs-import.h"
#include "common/verbs/wc-flush.h"
#include "daemon/device/caps.h"
#include "daemon/device/device.h"
#include "daemon/util/log.h"
#include "daemon/util/array.h"
#include "daemon/families/rss/rss-verbs.h"
#include "daemon/device/verbs/uverbs.h"

struct verbs_dev {
	struct ibv_device *ibdev;
	struct ibv_context *own;
	/* The XRC domains' own context, opened at the first hold: it holds
	 * nothing else, so that the fd store keeping its cmd_fd across a
	 * restart (xrcd_ctx_fd) keeps the kernel's XRC domains alive and
	 * nothing more. */
	struct ibv_context *xrcd;
};

/* A set of pointers, in no order. */
struct verbs_ptrs {
	void **p;
	size_t n, cap;
};

struct verbs_ctx {
	struct device_ctx base;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	/* The DMs allocated here and not freed: an ibv_dm maps its MEMIC on
	 * cmd_fd, and a mapping keeps the kernel context (and the MEMIC)
	 * alive, so the close lets go of those a free could not end. */
	struct verbs_ptrs dms;
	/* The RSS QPs made here: the only objects of this context whose
	 * async events are the broker's to acknowledge. */
	struct verbs_ptrs qps;
	/* Events of objects the broker did not make, dropped (logged once
	 * per context). */
	unsigned int foreign_events;
};

static struct verbs_ctx *verbs_ctx_of(const struct device_ctx *ctx)
{
	return (struct verbs_ctx *)ctx;
}

/* libibverbs wants the list alive while its devices are used. */
static struct ibv_device **verbs_list;
static unsigned int verbs_users;

/* Async events are read only to be acknowledged, from the event loop: a
 * blocking read would stall it. */
static int verbs_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static int verbs_ctx_open(struct device *dev, uint64_t ctx_id,
			  const char *domain, struct device_ctx **ret_ctx)
{
	struct verbs_dev *vd = dev->priv;
	struct verbs_ctx *c;
	struct caps_saved saved;
	int ret;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->base.dev = dev;
	ret = caps_effective_clear(&saved);
	if (ret < 0) {
		free(c);
		return ret;
	}
	c->ctx = verbs_try(ibv_open_device(vd->ibdev));
	ret = c->ctx ? 0 : verbs_err(ENODEV);
	if (caps_effective_restore(&saved) < 0) {
		log_err("%s: cannot restore the effective capabilities after "
			"opening a context: %s",
			dev->name, strerror(errno));
		ret = ret < 0 ? ret : -EPERM;
	}
	if (ret < 0)
		goto fail;
	c->pd = verbs_try(ibv_alloc_pd(c->ctx));
	if (!c->pd) {
		ret = verbs_err(ENOMEM);
		goto fail;
	}
	ret = verbs_set_nonblock(c->ctx->async_fd);
	if (ret < 0)
		goto fail;
	*ret_ctx = &c->base;
	return 0;

fail:
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->ctx)
		ibv_close_device(c->ctx);
	free(c);
	return ret;
}

/* A restart: the domain's context again, by ibv_import_device() of its
 * stored cmd_fd and ibv_import_pd() of its PD (mlx5 only: other providers
 * answer EOPNOTSUPP, and the context is not adopted). Unverified on
 * hardware. */
static int verbs_ctx_adopt(struct device *dev, uint64_t ctx_id, int fd,
			   uint32_t pd_handle, struct device_ctx **ret_ctx)
{
	struct verbs_ctx *c = calloc(1, sizeof(*c));
	int ret;

	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->base.dev = dev;
	c->ctx = verbs_try(ibv_import_device(fd));
	if (!c->ctx) {
		ret = verbs_err(EOPNOTSUPP);
		close(fd);
		free(c);
		return ret;
	}
	c->pd = verbs_try(ibv_import_pd(c->ctx, pd_handle));
	if (!c->pd) {
		ret = verbs_err(ENOENT);
		goto fail;
	}
	ret = c->ctx->async_fd >= 0 ? verbs_set_nonblock(c->ctx->async_fd) : 0;
	if (ret < 0)
		goto fail;
	*ret_ctx = &c->base;
	return 0;

fail:
	if (c->pd)
		ibv_unimport_pd(c->pd);
	/* Closes the descriptor too. */
	ibv_close_device(c->ctx);
	free(c);
	return ret;
}

static void verbs_ctx_close(struct device_ctx *base)
{
	struct verbs_ctx *c = verbs_ctx_of(base);

	/* Clients hold dups of cmd_fd: the kernel context lives on until the
	 * last of them is closed. The PD goes only if nobody else uses it;
	 * otherwise (EBUSY) this process just stops using it, which on mlx5
	 * frees its memory. */
	if (ibv_dealloc_pd(c->pd))
		ibv_unimport_pd(c->pd);
	/* An MR kept their free from succeeding (a rekey gave up on them, or
	 * the device went): on mlx5 the unimport only unmaps and frees the
	 * structure, and the kernel destroys the DMs with the context. */
	for (size_t i = 0; i < c->dms.n; i++)
		ibv_unimport_dm(c->dms.p[i]);
	free(c->dms.p);
	free(c->qps.p);
	ibv_close_device(c->ctx);
	free(c);
}

static int verbs_ctx_fd(const struct device_ctx *base)
{
	return verbs_ctx_of(base)->ctx->cmd_fd;
}

static uint32_t verbs_ctx_pd_handle(const struct device_ctx *base)
{
	return verbs_ctx_of(base)->pd->handle;
}

/* Drain the device's own context's async events; 1 when one says the
 * device is gone. Only the broker holds that context's cmd_fd, so every
 * element an event names is one of its own objects, which libibverbs may
 * dereference. */
static int verbs_drain_events(struct ibv_context *ctx, const char *name)
{
	struct ibv_async_event ev;
	int gone = 0;

	while (ibv_get_async_event(ctx, &ev) == 0) {
		if (ev.event_type == IBV_EVENT_DEVICE_FATAL)
			gone = 1;
		else if (name)
			log_info("%s: %s", name,
				 ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
	}
	return gone;
}

static int verbs_ctx_event_fd(const struct device_ctx *base)
{
	return verbs_ctx_of(base)->ctx->async_fd;
}

/* What an async event's element is, by its type (libibverbs'
 * ibv_get_async_event makes the same choice). */
enum verbs_element { ELEM_PORT, ELEM_QP, ELEM_CQ, ELEM_SRQ, ELEM_WQ };

static enum verbs_element verbs_event_element(uint32_t type)
{
	switch (type) {
	case IBV_EVENT_CQ_ERR:
		return ELEM_CQ;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return ELEM_QP;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return ELEM_SRQ;
	case IBV_EVENT_WQ_FATAL:
		return ELEM_WQ;
	default:
		return ELEM_PORT;
	}
}

/*
 * A domain's context is every member's: an object a member makes without
 * naming an event file (the write path, IB_USER_VERBS_CMD_CREATE_*, or an
 * ioctl create without its EVENT_FD attribute) reports to the context's
 * default async file, the broker's, with the element the member chose (its
 * user_handle). libibverbs' ibv_get_async_event/ibv_ack_async_event would
 * take that for a pointer of this process and lock and increment through
 * it, so the events are read raw from the descriptor here: an element is
 * compared with the broker's own QPs and dereferenced only when it is one.
 * The rest cannot be routed: the event carries no QP number, and a target
 * QP opened by number (ibv_open_qp) gets no event file at all, so its
 * events never reach any descriptor (ibc_srq_create_xrc(3)). Unverified on
 * hardware.
 */
int device_verbs_drain(struct ibv_context *ctx, void *const *own_qps,
		       size_t n_own, unsigned int *ret_foreign)
{
	struct ib_uverbs_async_event_desc d;
	unsigned int foreign = 0;
	int gone = 0;

	for (;;) {
		struct ibv_async_event ev = { .event_type = 0 };
		ssize_t n = read(ctx->async_fd, &d, sizeof(d));
		size_t i;

		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(d))
			break;
		ev.event_type = (enum ibv_event_type)d.event_type;
		switch (verbs_event_element(d.event_type)) {
		case ELEM_QP:
			for (i = 0; i < n_own; i++)
				if ((uintptr_t)own_qps[i] == d.element)
					break;
			if (i == n_own) {
				foreign++;
				break;
			}
			/* The broker's own RSS QP: libibverbs counts the
			 * acknowledgement its destroy waits for. A member
			 * that guessed this heap address as its own QP's
			 * element could have one event too many acknowledged
			 * and the destroy wait for good; nothing the broker
			 * sends reveals the address (ASLR). */
			ev.element.qp = own_qps[i];
			log_notice("an RSS QP of the broker's: %s",
				   ibv_event_type_str(ev.event_type));
			ibv_ack_async_event(&ev);
			break;
		case ELEM_CQ:
		case ELEM_SRQ:
		case ELEM_WQ:
			foreign++;
			break;
		default:
			gone |= d.event_type == IBV_EVENT_DEVICE_FATAL;
			break;
		}
	}
	*ret_foreign = foreign;
	return gone;
}

static int verbs_ctx_handle_event(struct device_ctx *base)
{
	struct verbs_ctx *c = verbs_ctx_of(base);
	unsigned int foreign;
	/* Port events are logged once, from the device's own context. */
	int gone = device_verbs_drain(c->ctx, c->qps.p, c->qps.n, &foreign);

	if (foreign && !c->foreign_events)
		log_info("%s: a domain context got async events of objects a "
			 "member made without an event file of its own; they "
			 "are dropped (logged once per context)",
			 base->dev->name);
	c->foreign_events += foreign;
	return gone;
}

/* The objects dead clients leave: by handle, through the kernel's ioctl
 * interface (daemon/device/verbs/uverbs.c), since libibverbs never saw them. */
static int verbs_obj_destroy(struct device_ctx *base, enum ibc_obj_kind kind,
			     uint32_t handle, struct why *why)
{
	int ret = uverbs_destroy(verbs_ctx_of(base)->ctx->cmd_fd, kind, handle);

	if (ret < 0)
		why_set(why, ret, "%s: destroying %s handle %u: %s",
			base->dev->name, obj_kind_name(kind), handle,
			strerror(-ret));
	return ret;
}

/* The kernel's handle list, for the unaccounted count. */
static int verbs_handle_list(struct device_ctx *base, unsigned int type,
			     uint32_t *handles, uint32_t max)
{
	return uverbs_handles(verbs_ctx_of(base)->ctx->cmd_fd, type, handles,
			      max);
}

/* An RSS QP answers a query with -ENOSYS (uverbs_qp_query): 1; a QP
 * that answers, 0; else the kernel's -errno (cannot say). */
static int verbs_qp_is_rss(struct device_ctx *base, uint32_t handle)
{
	int ret = uverbs_qp_query(verbs_ctx_of(base)->ctx->cmd_fd, handle);

	if (ret == -ENOSYS)
		return 1;
	return ret;
}

/*
 * Device memory (mlx5 MEMIC) in the domain's context. MEMIC is reserved in
 * whole pages and may hold a previous user's bytes: zeroed here, in
 * 4-byte words as mlx5 requires, before anyone sees it, and again before
 * the free.
 */
static int verbs_dm_zero(struct ibv_dm *dm, uint64_t length)
{
	static const uint8_t zero[4096];

	for (uint64_t off = 0; off < length; off += sizeof(zero)) {
		size_t n = length - off < sizeof(zero) ? length - off :
							 sizeof(zero);
		int ret = ibv_memcpy_to_dm(dm, off, zero, n);

		if (ret)
			return -ret;
	}
	/* Drained before the DM is handed out or freed: an importer must
	 * not read the previous user's bytes. */
	wc_flush_writes();
	return 0;
}

static int verbs_ptrs_add(struct verbs_ptrs *s, void *p)
{
	if (array_grow(&s->p, &s->cap, s->n + 1, sizeof(*s->p), 8) < 0)
		return -ENOMEM;
	s->p[s->n++] = p;
	return 0;
}

static void verbs_ptrs_del(struct verbs_ptrs *s, const void *p)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->p[i] == p) {
			s->p[i] = s->p[--s->n];
			return;
		}
}

static int verbs_dm_alloc(struct device_ctx *base, uint64_t length,
			  uint32_t log_align, struct device_dm *ret,
			  struct why *why)
{
	struct ibv_alloc_dm_attr attr = {
		.length = length,
		.log_align_req = log_align,
	};
	struct ibv_dm *dm;
	int err;

	errno = 0;
	dm = ibv_alloc_dm(verbs_ctx_of(base)->ctx, &attr);
	if (!dm) {
		err = errno ? -errno : -ENOMEM;
		/* mlx5: ENOMEM when MEMIC is exhausted; EINVAL for a length
		 * or an alignment it cannot give. */
		return why_set(why, err,
			       "%s: ibv_alloc_dm of %llu bytes "
			       "aligned to 2^%u: %s",
			       base->dev->name, (unsigned long long)length,
			       log_align,
			       err == -ENOMEM ? "out of device memory" :
						strerror(-err));
	}
	/* Listed from the start: a member may register an MR on the new
	 * handle through its shared cmd_fd, and a free that fails must
	 * leave the DM to the close. */
	err = verbs_ptrs_add(&verbs_ctx_of(base)->dms, dm);
	if (err < 0) {
		ibv_free_dm(dm);
		return why_set(why, err, "out of memory");
	}
	err = verbs_dm_zero(dm, length);
	if (err < 0) {
		if (ibv_free_dm(dm) == 0)
			verbs_ptrs_del(&verbs_ctx_of(base)->dms, dm);
		return why_set(why, err, "%s: cannot zero a new DM: %s",
			       base->dev->name, strerror(-err));
	}
	ret->handle = dm->handle;
	ret->length = length;
	ret->fd = -1;
	ret->priv = dm;
	return 0;
}

/* Restart: the DM outlived the daemon in the context's kernel state (its
 * cmd_fd was in the store); ibv_import_dm() gives a struct ibv_dm for it
 * again. mlx5 only (rxe has no DM): unverified on hardware. */
static int verbs_dm_adopt(struct device_ctx *base, uint32_t handle,
			  uint64_t length, int fd, struct device_dm *ret,
			  struct why *why)
{
	struct ibv_dm *dm;
	int err;

	(void)fd;
	errno = 0;
	dm = ibv_import_dm(verbs_ctx_of(base)->ctx, handle);
	if (!dm) {
		err = errno ? -errno : -EOPNOTSUPP;
		return why_set(why, err,
			       "%s: ibv_import_dm of DM handle %u: %s",
			       base->dev->name, handle, strerror(-err));
	}
	err = verbs_ptrs_add(&verbs_ctx_of(base)->dms, dm);
	if (err < 0) {
		ibv_unimport_dm(dm);
		return why_set(why, err, "out of memory");
	}
	ret->handle = handle;
	ret->length = length;
	ret->fd = -1;
	ret->priv = dm;
	return 0;
}

static int verbs_dm_free(struct device_ctx *base, struct device_dm *d,
			 struct why *why)
{
	struct ibv_dm *dm = d->priv;
	int err;

	/* A process that still maps it (mlx5 releases MEMIC with the last
	 * mapping) reads zeroes from here on. */
	err = verbs_dm_zero(dm, d->length);
	if (err < 0)
		log_warn("%s: cannot zero DM handle %u before freeing it: %s",
			 base->dev->name, d->handle, strerror(-err));
	err = ibv_free_dm(dm);
	if (err)
		return why_set(why, -err,
			       "%s: ibv_free_dm of DM handle %u: %s%s",
			       base->dev->name, d->handle, strerror(err),
			       err == EBUSY ? " (an MR uses it)" : "");
	verbs_ptrs_del(&verbs_ctx_of(base)->dms, dm);
	return 0;
}

static int verbs_handle_event(struct device *dev)
{
	struct verbs_dev *vd = dev->priv;

	return verbs_drain_events(vd->own, dev->name);
}

/*
 * The uverbs character device is the first thing the kernel removes: on
 * drivers without disassociate_ucontext (rxe, siw) the ib device stays in
 * /sys/class/infiniband until every uverbs descriptor is closed, so that is
 * what to watch. The minor may be reused by another device at once: its
 * ibdev attribute must still name this one.
 */
static bool verbs_present(struct device *dev)
{
	struct verbs_dev *vd = dev->priv;
	char path[IBV_SYSFS_PATH_MAX + 8], name[DEVICE_NAME_MAX];
	bool ok = false;
	FILE *f;

	if (!vd)
		return false;
	snprintf(path, sizeof(path), "%s/ibdev", vd->ibdev->dev_path);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fgets(name, sizeof(name), f)) {
		name[strcspn(name, "\n")] = '\0';
		ok = strcmp(name, dev->name) == 0;
	}
	fclose(f);
	return ok;
}

static void verbs_shutdown(struct device *dev)
{
	struct verbs_dev *vd = dev->priv;

	if (!vd)
		return;
	if (vd->xrcd)
		ibv_close_device(vd->xrcd);
	ibv_close_device(vd->own);
	free(vd);
	dev->priv = NULL;
	dev->event_fd = -1;
	if (--verbs_users == 0) {
		ibv_free_device_list(verbs_list);
		verbs_list = NULL;
	}
}

/*
 * A context of the daemon's own holds the XRCDs: it is never handed to a
 * client, so an XRCD outlives every domain's context. O_CREAT and never
 * O_EXCL: the kernel's error is passed on as it is. The kernel keys an
 * XRCD per uverbs device by inode (ib_uverbs_open_xrcd: find_xrcd), so
 * a restart's hold, made while the previous daemon's context (kept in
 * the fd store) still holds it, opens the same kernel XRCD: @io_id has
 * nothing to name (struct ibv_xrcd shows no identity, and there is no
 * ibv_import_xrcd).
 */
static int verbs_xrcd_hold(struct device *dev, int fd, uint64_t ino,
			   uint32_t *io_id, void **ret, struct why *why)
{
	struct verbs_dev *vd = dev->priv;
	struct ibv_xrcd_init_attr ia = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = fd,
		.oflags = O_CREAT,
	};
	struct ibv_xrcd *x;
	int err;

	(void)ino;
	*io_id = 0;
	if (!vd)
		return why_set(why, -ENODEV, "%s was removed", dev->name);
	if (!vd->xrcd) {
		vd->xrcd = verbs_try(ibv_open_device(vd->ibdev));
		if (!vd->xrcd) {
			err = verbs_err(ENODEV);
			return why_set(why, err,
				       "%s: cannot open a context for the "
				       "XRC domains: %s",
				       dev->name, strerror(-err));
		}
	}
	x = verbs_try(ibv_open_xrcd(vd->xrcd, &ia));
	if (!x) {
		err = verbs_err(EIO);
		return why_set(why, err, "%s: ibv_open_xrcd failed: %s",
			       dev->name, strerror(-err));
	}
	*ret = x;
	return 0;
}

static void verbs_xrcd_drop(struct device *dev, void *xrcd)
{
	/* Only EBUSY could fail it, and the daemon's open has no users. */
	if (xrcd && dev->priv)
		ibv_close_xrcd(xrcd);
}

static int verbs_xrcd_ctx_fd(struct device *dev)
{
	const struct verbs_dev *vd = dev->priv;

	return vd && vd->xrcd ? vd->xrcd->cmd_fd : -1;
}

static const struct device_ops verbs_ops = {
	.ctx_open = verbs_ctx_open,
	.ctx_adopt = verbs_ctx_adopt,
	.handle_event = verbs_handle_event,
	.present = verbs_present,
	.shutdown = verbs_shutdown,
	.xrcd_hold = verbs_xrcd_hold,
	.xrcd_drop = verbs_xrcd_drop,
	.xrcd_ctx_fd = verbs_xrcd_ctx_fd,
};

/* Clients make their objects in their imported contexts: no obj_create. */
static int verbs_rss_create(struct device_ctx *base,
			    const struct rss_spec *spec, struct rss_made *ret,
			    struct why *why)
{
	struct verbs_ctx *c = verbs_ctx_of(base);
	int ret_err;

	if (*base->dev->rss_why)
		return why_set(why, -EOPNOTSUPP, "%s makes no RSS tables: %s",
			       base->dev->name, base->dev->rss_why);
	/* Room first: a QP the drain would not know could not be
	 * destroyed once it reported an event. */
	ret_err = verbs_ptrs_add(&c->qps, NULL);
	if (ret_err < 0)
		return why_set(why, ret_err, "out of memory");
	c->qps.n--;
	ret_err = rss_verbs_create(c->ctx, c->pd, spec, ret, why->text,
				   sizeof(why->text));
	if (ret_err == 0)
		c->qps.p[c->qps.n++] = rss_verbs_qp(ret);
	return ret_err;
}

static int verbs_rss_destroy(struct device_ctx *base, struct rss_made *made,
			     enum ibc_obj_kind part, struct why *why)
{
	void *qp = rss_verbs_qp(made);
	int ret;

	/* Adopted after a restart (rss-state.c): libibverbs never saw the
	 * parts, the kernel's handles name them. mlx5 only (rxe has no
	 * RSS): unverified on hardware. */
	if (made->adopted)
		return verbs_obj_destroy(base, part,
					 part == IBC_OBJ_FLOW ?
						 made->flow_handle :
					 part == IBC_OBJ_QP ? made->qp_handle :
							      made->tbl_handle,
					 why);
	ret = rss_verbs_destroy(made, part, why->text, sizeof(why->text));

	if (ret == 0 && part == IBC_OBJ_QP && qp)
		verbs_ptrs_del(&verbs_ctx_of(base)->qps, qp);
	return ret;
}

/* Restart: the parts live on in the context's kernel state (its cmd_fd
 * was in the store), a live session's or a detached one's alike; nothing
 * to make, they go by handle (verbs_rss_destroy): libibverbs imports a
 * context, a PD, an MR and a DM, but no WQ, indirection table, QP or
 * flow, so no libibverbs object can stand for them. mlx5 only:
 * unverified on hardware. */
static int verbs_rss_adopt(struct device_ctx *base, const struct rss_spec *spec,
			   const struct rss_made *at, struct rss_made *ret,
			   struct why *why)
{
	(void)base;
	(void)spec;
	(void)why;
	*ret = *at;
	ret->priv = NULL;
	ret->adopted = true;
	return 0;
}

static const struct device_ctx_ops verbs_ctx_ops = {
	.close = verbs_ctx_close,
	.fd = verbs_ctx_fd,
	.pd_handle = verbs_ctx_pd_handle,
	.event_fd = verbs_ctx_event_fd,
	.handle_event = verbs_ctx_handle_event,
	.obj_destroy = verbs_obj_destroy,
	.dm_alloc = verbs_dm_alloc,
	.dm_free = verbs_dm_free,
	.dm_adopt = verbs_dm_adopt,
	.rss_create = verbs_rss_create,
	.rss_destroy = verbs_rss_destroy,
	.rss_adopt = verbs_rss_adopt,
	.handle_list = verbs_handle_list,
	.qp_is_rss = verbs_qp_is_rss,
};

/* Can another process import this device's contexts? Asking the provider
 * is the only reliable test: only mlx5 with dynamic UARs can. */
/* How many provider-internal objects (mlx5: UARs) @ctx holds. */
static int verbs_internal_count(struct ibv_context *ctx)
{
	static uint32_t handles[256];

	return uverbs_handles(ctx->cmd_fd, DEVICE_INTERNAL, handles,
			      sizeof(handles) / sizeof(handles[0]));
}

static bool verbs_can_import(struct device *dev, struct ibv_context *own)
{
	struct ibv_context *imp;
	int fd = fcntl(own->cmd_fd, F_DUPFD_CLOEXEC, 3);
	int before = verbs_internal_count(own), after;
	int ret;

	if (fd < 0) {
		log_info("%s: contexts cannot be imported: cannot duplicate "
			 "the command descriptor: %s",
			 dev->name, strerror(errno));
		return false;
	}
	ret = verbs_import_device(fd, &imp);
	if (ret < 0) {
		/* EOPNOTSUPP: not mlx5; EINVAL: static UARs (old firmware
		 * or kernel); EPROTONOSUPPORT: a kernel before 5.9, without
		 * UVERBS_METHOD_QUERY_CONTEXT. */
		log_info("%s: contexts cannot be imported: %s", dev->name,
			 strerror(-ret));
		return false;
	}
	/* What an import makes in the kernel and a dead importer leaves
	 * (mlx5: its non-cached UAR), for the unaccounted count. */
	after = verbs_internal_count(own);
	if (before >= 0 && after > before) {
		dev->internal_per_import = (uint32_t)(after - before);
		log_info("%s: an import makes %u provider objects (UARs)",
			 dev->name, dev->internal_per_import);
	}
	ibv_close_device(imp);
	return true;
}

/*
 * Can a DM be shared? Allocate one in the device's own context, import it
 * in a scratch import of that context, free both: what clients will do.
 * The answer and the reason go to the caps.
 */
static void verbs_dm_selftest(struct device *dev, struct ibv_context *own)
{
	struct ibv_alloc_dm_attr attr = { .length = 4096 };
	struct device_caps *caps = &dev->caps;
	struct ibv_context *imp = NULL;
	struct ibv_dm *dm, *idm;
	int fd, ret;

	caps->dm_shared = false;
	if (!caps->max_dm_size) {
		snprintf(caps->dm_reason, sizeof(caps->dm_reason),
			 "the device reports no device memory "
			 "(max_dm_size 0)");
		return;
	}
	if (!caps->import) {
		snprintf(caps->dm_reason, sizeof(caps->dm_reason),
			 "its contexts cannot be imported, so neither can "
			 "its DMs");
		return;
	}
	errno = 0;
	dm = ibv_alloc_dm(own, &attr);
	if (!dm) {
		snprintf(caps->dm_reason, sizeof(caps->dm_reason),
			 "the start-up self-test could not allocate a DM: %s",
			 strerror(errno ? errno : ENOMEM));
		return;
	}
	fd = fcntl(own->cmd_fd, F_DUPFD_CLOEXEC, 3);
	ret = fd < 0 ? -errno : verbs_import_device(fd, &imp);
	if (ret < 0) {
		snprintf(caps->dm_reason, sizeof(caps->dm_reason),
			 "the start-up self-test could not import the "
			 "context: %s",
			 strerror(-ret));
		goto out;
	}
	errno = 0;
	idm = ibv_import_dm(imp, dm->handle);
	if (!idm) {
		int err = errno ? errno : EOPNOTSUPP;

		/* The kernel answers a method it lacks so: contexts import
		 * from Linux 5.9 (UVERBS_METHOD_QUERY_CONTEXT, which
		 * ibv_import_device needs), DMs only from 5.13
		 * (MLX5_IB_METHOD_DM_QUERY, which ibv_import_dm needs). */
		snprintf(caps->dm_reason, sizeof(caps->dm_reason),
			 "the start-up self-test could not import a DM "
			 "(ibv_import_dm: %s%s)",
			 strerror(err),
			 err == EPROTONOSUPPORT ?
				 "; a kernel before 5.13 has no "
				 "MLX5_IB_METHOD_DM_QUERY" :
				 "");
		goto out;
	}
	ibv_unimport_dm(idm);
	caps->dm_shared = true;
out:
	if (imp)
		ibv_close_device(imp);
	ibv_free_dm(dm);
	if (!caps->dm_shared)
		log_info("%s: device memory cannot be shared: %s", dev->name,
			 caps->dm_reason);
}

static uint32_t verbs_limit(int v)
{
	return v > 0 ? (uint32_t)v : 0;
}

static void verbs_copy_limits(struct device_caps *caps,
			      const struct ibv_device_attr_ex *attr)
{
	const struct ibv_device_attr *a = &attr->orig_attr;

	caps->max_qp = verbs_limit(a->max_qp);
	caps->max_qp_wr = verbs_limit(a->max_qp_wr);
	caps->max_sge = verbs_limit(a->max_sge);
	caps->max_cq = verbs_limit(a->max_cq);
	caps->max_cqe = verbs_limit(a->max_cqe);
	caps->max_mr = verbs_limit(a->max_mr);
	caps->max_mr_size = a->max_mr_size;
	caps->max_pd = verbs_limit(a->max_pd);
	caps->max_mw = verbs_limit(a->max_mw);
	caps->max_ah = verbs_limit(a->max_ah);
	caps->max_srq = verbs_limit(a->max_srq);
	caps->max_srq_wr = verbs_limit(a->max_srq_wr);
	caps->max_srq_sge = verbs_limit(a->max_srq_sge);
	caps->max_wq = attr->max_wq_type_rq;
}

static void verbs_query_caps(struct device *dev, struct ibv_context *own)
{
	struct ibv_device_attr_ex attr;
	struct ibv_port_attr port;

	memset(&attr, 0, sizeof(attr));
	if (ibv_query_device_ex(own, NULL, &attr) == 0) {
		dev->caps.max_dm_size = attr.max_dm_size;
		dev->caps.xrc =
			!!(attr.orig_attr.device_cap_flags & IBV_DEVICE_XRC);
		dev->caps.max_rss_table_size =
			attr.rss_caps.max_rwq_indirection_table_size;
		dev->caps.rss_hash_fields = attr.rss_caps.rx_hash_fields_mask;
		dev->caps.rss_hash_functions = attr.rss_caps.rx_hash_function;
		dev->caps.rss_qp_types = attr.rss_caps.supported_qpts;
		dev->caps.ports = attr.orig_attr.phys_port_cnt;
		verbs_copy_limits(&dev->caps, &attr);
	}
	dev->caps.import = verbs_can_import(dev, own);
	verbs_dm_selftest(dev, own);
	/* RSS over clients' WQs: the self-test decides (rss-verbs.c). */
	if (rss_verbs_selftest(own, dev->rss_why, sizeof(dev->rss_why)) == 0)
		dev->rss_why[0] = '\0';
	else
		log_notice("%s: RSS objects unavailable: %s", dev->name,
			   dev->rss_why);
	snprintf(dev->caps.transport, sizeof(dev->caps.transport), "%s",
		 "unknown");
	if (ibv_query_port(own, 1, &port) == 0)
		snprintf(dev->caps.transport, sizeof(dev->caps.transport), "%s",
			 port.link_layer == IBV_LINK_LAYER_ETHERNET ?
				 "RoCE" :
				 "InfiniBand");
}

static int verbs_open_one(struct device *dev, struct ibv_device *ibdev)
{
	struct verbs_dev *vd = calloc(1, sizeof(*vd));
	int ret;

	if (!vd)
		return -ENOMEM;
	vd->ibdev = ibdev;
	vd->own = verbs_try(ibv_open_device(ibdev));
	if (!vd->own) {
		ret = verbs_err(ENODEV);
		goto fail;
	}
	ret = verbs_set_nonblock(vd->own->async_fd);
	if (ret < 0)
		goto fail;
	memset(dev, 0, sizeof(*dev));
	snprintf(dev->name, sizeof(dev->name), "%s",
		 ibv_get_device_name(ibdev));
	dev->kind = DEVICE_KIND_VERBS;
	device_set_ops(dev, &verbs_ops, &verbs_ctx_ops);
	dev->priv = vd;
	dev->event_fd = vd->own->async_fd;
	verbs_query_caps(dev, vd->own);
	return 0;

fail:
	if (vd->own)
		ibv_close_device(vd->own);
	free(vd);
	return ret;
}

int device_verbs_probe(struct device_list *list)
{
	int n = 0, ret = 0;

	verbs_list = verbs_try(ibv_get_device_list(&n));
	if (!verbs_list)
		return verbs_err(ENODEV);
	list->kind = DEVICE_KIND_VERBS;
	list->n = 0;
	for (int i = 0; i < n && list->n < DEVICE_MAX; i++) {
		ret = verbs_open_one(&list->dev[list->n], verbs_list[i]);
		if (ret < 0) {
			log_warn("%s: cannot open: %s",
				 ibv_get_device_name(verbs_list[i]),
				 strerror(-ret));
			continue;
		}
		list->n++;
		verbs_users++;
	}
	if (list->n == 0) {
		ibv_free_device_list(verbs_list);
		verbs_list = NULL;
		return n > 0 ? ret : 0;
	}
	return (int)list->n;
}

int device_verbs_context(const struct device_ctx *ctx,
			 struct ibv_context **ret_ctx, struct ibv_pd **ret_pd)
{
	if (!ctx || ctx->dev->kind != DEVICE_KIND_VERBS)
		return -EINVAL;
	*ret_ctx = verbs_ctx_of(ctx)->ctx;
	*ret_pd = verbs_ctx_of(ctx)->pd;
	return 0;
}
