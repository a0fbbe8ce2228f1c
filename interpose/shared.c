// SPDX-License-Identifier: MIT
/*
 * Device memory and XRC domains under the interposer: the broker's. An
 * ibv_alloc_dm on a shared context is ibc_dm_alloc (the domain's quota,
 * zeroed pages, free pending while importers remain) and ibv_free_dm its
 * ibc_dm_free; ibv_open_xrcd on a file is ibc_xrcd_open of a name made
 * from the file's path, private to the domain (ibcv_xrcd_name). Both verbs
 * are inline in <infiniband/verbs.h> and call the context's ops, wrapped
 * here; the soft device's context has them as its own ops.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/xrcd/xrcd-name.h"
#include "interpose/interpose.h"
#include "libclient/dm.h"

/* --- names --------------------------------------------------------------- */

int ibcv_xrcd_name(int fd, char *name, size_t size)
{
	char link[64], path[4096];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return -EBADF;
	path[n] = '\0';
	/* The path, each '/' written ':': one file, one name, readable in
	 * rdmabrokerctl xrcd. */
	if ((size_t)n >= size || (size_t)n > XRCD_NAME_MAX)
		return -ENAMETOOLONG;
	for (ssize_t i = 0; i <= n; i++)
		name[i] = path[i] == '/' ? ':' : path[i];
	return xrcd_name_check(name, strlen(name), NULL, 0) < 0 ? -EINVAL : 0;
}

/* --- verbs: the ops of a shared context --------------------------------- */

/* The broker's DM whose import is @vdm in @c's context; NULL if none. */
static struct ibc_dm *ibcv_dm_of(struct ibcv_ctx *c, const struct ibv_dm *vdm)
{
	struct ibc_dm *dm;

	pthread_mutex_lock(&c->ctx->lock);
	for (dm = ibc_dm_first(c->ctx); dm; dm = dm->next)
		if (dm->vdm == vdm)
			break;
	pthread_mutex_unlock(&c->ctx->lock);
	return dm;
}

static struct ibv_dm *wrap_alloc_dm(struct ibv_context *context,
				    struct ibv_alloc_dm_attr *attr)
{
	struct ibcv_ctx *c = ibcv_ctx_find(context);
	struct ibc_dm *dm;
	struct ibv_dm *vdm;
	int err;

	if (ibcv_inside || !c->ctx->caps.shared)
		return c->saved.alloc_dm(context, attr);
	if (attr->comp_mask)
		return ibcv_fail_null(-EINVAL);
	ibcv_inside++;
	err = ibc_dm_alloc(c->ctx, attr->length, attr->log_align_req, &dm);
	vdm = err < 0 ? NULL : ibc_verbs_dm(dm);
	ibcv_inside--;
	if (err < 0)
		return ibcv_fail_null(err);
	return vdm;
}

static int wrap_free_dm(struct ibv_dm *vdm)
{
	struct ibcv_ctx *c = ibcv_ctx_find(vdm->context);
	struct ibc_dm *dm = ibcv_inside ? NULL : ibcv_dm_of(c, vdm);
	int err;

	if (!dm)
		return c->saved.free_dm(vdm);
	ibcv_inside++;
	err = ibc_dm_free(dm);
	ibcv_inside--;
	return -err;
}

static struct ibv_mr *wrap_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *vdm,
				     uint64_t offset, size_t length,
				     unsigned int access)
{
	struct ibcv_ctx *c = ibcv_ctx_find(pd->context);
	struct ibc_dm *dm = ibcv_inside ? NULL : ibcv_dm_of(c, vdm);
	struct ibc_mr *mr;
	struct ibv_mr *vmr;
	int err;

	if (!dm)
		return c->saved.reg_dm_mr(pd, vdm, offset, length, access);
	/* The library's MR (on the domain's PD), counted on the DM. */
	ibcv_inside++;
	err = ibc_reg_dm_mr(dm, offset, length, access, &mr);
	ibcv_inside--;
	if (err < 0)
		return ibcv_fail_null(err);
	/* ibv_dereg_mr() asks the objects the application holds. */
	vmr = ibc_verbs_mr(mr);
	if (vmr)
		ibcv_live_add(vmr);
	return vmr;
}

static struct ibv_xrcd *wrap_open_xrcd(struct ibv_context *context,
				       struct ibv_xrcd_init_attr *attr)
{
	struct ibcv_ctx *c = ibcv_ctx_find(context);
	char name[XRCD_NAME_MAX + 1];
	struct ibc_xrcd *x;
	struct ibv_xrcd *vx;
	int err;

	/* Without a file the kernel's XRCD is the process's alone. */
	if (ibcv_inside || !(attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) ||
	    attr->fd < 0)
		return c->saved.open_xrcd(context, attr);
	err = ibcv_xrcd_name(attr->fd, name, sizeof(name));
	if (err < 0)
		return ibcv_fail_null(err);
	ibcv_inside++;
	err = ibc_xrcd_open(c->ctx, name,
			    (attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS) ?
				    attr->oflags & (O_CREAT | O_EXCL) :
				    0,
			    &x);
	vx = err < 0 ? NULL : ibc_verbs_xrcd(x);
	ibcv_inside--;
	return err < 0 ? ibcv_fail_null(err) : vx;
}

static int wrap_close_xrcd(struct ibv_xrcd *vx)
{
	struct ibcv_ctx *c = ibcv_ctx_find(vx->context);
	struct ibc_obj *o = ibcv_inside ? NULL : ibcv_made(c, IBC_OBJ_XRCD, vx);
	int err;

	if (!o)
		return c->saved.close_xrcd(vx);
	ibcv_inside++;
	err = ibc_xrcd_close((struct ibc_xrcd *)o);
	ibcv_inside--;
	return -err;
}

void ibcv_wrap_shared_ops(struct ibcv_ctx *c, struct verbs_context *vc)
{
	c->saved.alloc_dm = vc->alloc_dm;
	c->saved.free_dm = vc->free_dm;
	c->saved.reg_dm_mr = vc->reg_dm_mr;
	c->saved.open_xrcd = vc->open_xrcd;
	c->saved.close_xrcd = vc->close_xrcd;
	if (vc->alloc_dm && vc->free_dm) {
		vc->alloc_dm = wrap_alloc_dm;
		vc->free_dm = wrap_free_dm;
	}
	if (vc->reg_dm_mr)
		vc->reg_dm_mr = wrap_reg_dm_mr;
	if (vc->open_xrcd && vc->close_xrcd) {
		vc->open_xrcd = wrap_open_xrcd;
		vc->close_xrcd = wrap_close_xrcd;
	}
}

void ibcv_unwrap_shared_ops(struct ibcv_ctx *c, struct verbs_context *vc)
{
	vc->alloc_dm = c->saved.alloc_dm;
	vc->free_dm = c->saved.free_dm;
	vc->reg_dm_mr = c->saved.reg_dm_mr;
	vc->open_xrcd = c->saved.open_xrcd;
	vc->close_xrcd = c->saved.close_xrcd;
}

/* --- the soft device's ops ------------------------------------------------ */

struct soft_dm {
	struct ibv_dm dm;
	struct ibc_dm *idm;
};

static int soft_dm_write(struct ibv_dm *vdm, uint64_t offset, const void *src,
			 size_t length)
{
	int err;

	ibcv_inside++;
	err = ibc_dm_write(((struct soft_dm *)vdm)->idm, offset, src, length);
	ibcv_inside--;
	return -err;
}

static int soft_dm_read(void *dst, struct ibv_dm *vdm, uint64_t offset,
			size_t length)
{
	int err;

	ibcv_inside++;
	err = ibc_dm_read(((struct soft_dm *)vdm)->idm, dst, offset, length);
	ibcv_inside--;
	return -err;
}

static struct ibv_dm *soft_alloc_dm(struct ibv_context *context,
				    struct ibv_alloc_dm_attr *attr)
{
	struct ibcv_soft *s = (struct ibcv_soft *)verbs_get_ctx(context);
	struct soft_dm *d;
	int err;

	if (attr->comp_mask)
		return ibcv_fail_null(-EINVAL);
	d = calloc(1, sizeof(*d));
	if (!d)
		return ibcv_fail_null(-ENOMEM);
	ibcv_inside++;
	err = ibc_dm_alloc(s->owner->ctx, attr->length, attr->log_align_req,
			   &d->idm);
	ibcv_inside--;
	if (err < 0) {
		free(d);
		return ibcv_fail_null(err);
	}
	d->dm.context = context;
	d->dm.memcpy_to_dm = soft_dm_write;
	d->dm.memcpy_from_dm = soft_dm_read;
	d->dm.handle = ibc_dm_handle(d->idm);
	return &d->dm;
}

static int soft_free_dm(struct ibv_dm *vdm)
{
	struct soft_dm *d = (struct soft_dm *)vdm;
	int err;

	ibcv_inside++;
	err = ibc_dm_free(d->idm);
	ibcv_inside--;
	if (err < 0)
		return -err;
	free(d);
	return 0;
}

struct soft_xrcd {
	struct ibv_xrcd xrcd;
	struct ibc_xrcd *ix;
};

static struct ibv_xrcd *soft_open_xrcd(struct ibv_context *context,
				       struct ibv_xrcd_init_attr *attr)
{
	struct ibcv_soft *s = (struct ibcv_soft *)verbs_get_ctx(context);
	char name[XRCD_NAME_MAX + 1];
	struct soft_xrcd *x;
	int err;

	/* The soft device keys XRCDs by the broker's names only. */
	if (!(attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) || attr->fd < 0)
		return ibcv_fail_null(-EOPNOTSUPP);
	err = ibcv_xrcd_name(attr->fd, name, sizeof(name));
	if (err < 0)
		return ibcv_fail_null(err);
	x = calloc(1, sizeof(*x));
	if (!x)
		return ibcv_fail_null(-ENOMEM);
	ibcv_inside++;
	err = ibc_xrcd_open(s->owner->ctx, name,
			    (attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS) ?
				    attr->oflags & (O_CREAT | O_EXCL) :
				    0,
			    &x->ix);
	ibcv_inside--;
	if (err < 0) {
		free(x);
		return ibcv_fail_null(err);
	}
	x->xrcd.context = context;
	return &x->xrcd;
}

static int soft_close_xrcd(struct ibv_xrcd *vx)
{
	struct soft_xrcd *x = (struct soft_xrcd *)vx;
	int err;

	ibcv_inside++;
	err = ibc_xrcd_close(x->ix);
	ibcv_inside--;
	if (err < 0)
		return -err;
	free(x);
	return 0;
}

void ibcv_soft_shared_ops(struct verbs_context *vc)
{
	vc->alloc_dm = soft_alloc_dm;
	vc->free_dm = soft_free_dm;
	vc->open_xrcd = soft_open_xrcd;
	vc->close_xrcd = soft_close_xrcd;
}
