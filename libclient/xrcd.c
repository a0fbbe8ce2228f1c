// SPDX-License-Identifier: MIT
/*
 * XRC domains by name. The broker decides O_CREAT and O_EXCL by its own
 * name table and sends the name's inode file; on a verbs device this
 * process opens the kernel XRCD on it (the kernel keys XRCDs by inode,
 * across contexts, so a context of this process's own works too) and
 * closes the file.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libclient/objects.h"

#define IBC_XRCD_NAME_MAX 64

/* The session's own-context open @id goes; without waiting: the broker
 * drops it with the session anyway. */
static void xrcd_close_request(struct ibc_client *cl, uint64_t id)
{
	Rdmab__XrcdCloseRequest xc = RDMAB__XRCD_CLOSE_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	xc.object_id = id;
	req.body_case = RDMAB__REQUEST__BODY_XRCD_CLOSE;
	req.xrcd_close = &xc;
	ibc_send_nowait(cl, &req);
}

void ibc_xrcd_own_closed(struct ibc_obj *o)
{
	struct ibc_xrcd *x = (struct ibc_xrcd *)o;

	xrcd_close_request(o->ctx->client, x->open_id);
}

/* Undo the broker's side of an open this process could not complete. */
static void xrcd_cancel(struct ibc_xrcd *x, bool own)
{
	if (own)
		xrcd_close_request(x->o.ctx->client, x->open_id);
	else
		ibc_obj_destroy_request(&x->o, false);
}

/* The file must be the inode the broker named: anything else is a broken
 * broker, not a different XRCD. */
static int xrcd_check_fd(struct ibc_ctx *ctx, int fd, uint64_t ino)
{
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_ino != ino)
		return ibc_set_error(-EPROTO,
				     "%s: the broker sent a descriptor that is "
				     "not its XRCD file",
				     ctx->caps.device);
	return 0;
}

IBC_EXPORT int ibc_xrcd_open(struct ibc_ctx *ctx, const char *name,
			     int oflags, struct ibc_xrcd **ret_xrcd)
{
	Rdmab__XrcdOpenRequest xo = RDMAB__XRCD_OPEN_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	const Rdmab__XrcdOpenReply *rep;
	bool own, soft;
	struct ibc_xrcd *x;
	struct ibc_reply r;
	int err, fd;

	if (!ctx || !name || !ret_xrcd)
		return ibc_set_error(-EINVAL, "ctx, name or ret_xrcd is NULL");
	/* The broker checks the rest; this keeps the packet small. */
	if (strnlen(name, IBC_XRCD_NAME_MAX + 1) > IBC_XRCD_NAME_MAX)
		return ibc_set_error(-EINVAL,
				     "an XRCD name is at most %d bytes",
				     IBC_XRCD_NAME_MAX);
	if (ibc_ctx_removed(ctx))
		return ibc_set_error(-ENODEV, "%s was removed: close the "
					      "context",
				     ctx->caps.device);
	x = calloc(1, sizeof(*x));
	if (!x)
		return ibc_set_error(-ENOMEM, "out of memory");
	x->o.ctx = ctx;
	x->o.kind = IBC_OBJ_XRCD;
	own = ctx->ops == &ibc_own_ops;
	soft = ctx->ops == &ibc_soft_ops;
	xo.context_id = ctx->caps.context_id;
	xo.name = (char *)name;
	xo.oflags = (uint32_t)oflags;
	xo.own = own;
	req.body_case = RDMAB__REQUEST__BODY_XRCD_OPEN;
	req.xrcd_open = &xo;
	err = ibc_call(ctx->client, &req, NULL, 0, &r);
	if (err < 0) {
		free(x);
		return err;
	}
	rep = r.reply->xrcd_open;
	if (r.reply->body_case != RDMAB__REPLY__BODY_XRCD_OPEN ||
	    !rep->object_id) {
		ibc_reply_free(&r);
		free(x);
		return ibc_set_error(-EPROTO, "the broker answered an XRCD open "
					      "without an open");
	}
	x->open_id = rep->object_id;
	x->o.id = own ? 0 : rep->object_id;
	x->o.handle = rep->handle;
	x->ino = rep->inode;
	x->persistent = rep->persistent;
	fd = wire_fds_steal(&r.fds, rep->fd_index);
	ibc_reply_free(&r);
	err = fd < 0 ? ibc_set_error(-EPROTO,
				     "the broker opened an XRCD without "
				     "sending its file") :
		       xrcd_check_fd(ctx, fd, x->ino);
	/* The soft device's XRCD is the broker's record: the file only
	 * proves the inode. */
	if (err == 0 && !soft)
		err = ibc_verbs_open_xrcd(&x->o, fd);
	if (fd >= 0)
		close(fd);
	if (err < 0) {
		char why[256];

		/* The kernel's sentence stays, its errno as it is. */
		snprintf(why, sizeof(why), "%s", ibc_last_error());
		xrcd_cancel(x, own);
		free(x);
		return ibc_set_error(err, "%s", why);
	}
	ibc_obj_link(&x->o);
	ibc_clear_error();
	*ret_xrcd = x;
	return 0;
}

IBC_EXPORT int ibc_xrcd_close(struct ibc_xrcd *xrcd)
{
	if (!xrcd)
		return ibc_set_error(-EINVAL, "xrcd is NULL");
	return ibc_obj_destroy(&xrcd->o);
}

IBC_EXPORT struct ibv_xrcd *ibc_verbs_xrcd(struct ibc_xrcd *xrcd)
{
	return ibc_obj_verbs(xrcd ? &xrcd->o : NULL, IBC_OBJ_XRCD);
}

IBC_EXPORT uint64_t ibc_xrcd_ino(const struct ibc_xrcd *xrcd)
{
	return xrcd ? xrcd->ino : 0;
}

/* --- what holds an XRCD open: XRC SRQs and target QPs ----------------- */

/* @xrcd is open and alive; @cq (if given) is of its context. */
static int xrcd_check(const struct ibc_xrcd *xrcd, const struct ibc_cq *cq)
{
	int err;

	if (xrcd->o.dead)
		return ibc_set_error(-ENODEV, "the XRCD's device %s was removed",
				     xrcd->o.ctx->caps.device);
	if (!cq)
		return 0;
	err = ibc_obj_check_use(xrcd->o.ctx, &cq->o, IBC_OBJ_CQ, "cq");
	return err;
}

IBC_EXPORT int ibc_srq_create_xrc(struct ibc_xrcd *xrcd, struct ibc_cq *cq,
				  const struct ibv_srq_attr *attr,
				  struct ibc_srq **ret_srq)
{
	struct ibc_obj_args a = { .attr = RDMAB__OBJ_ATTR__INIT };
	struct ibc_obj_result res = { .attr = RDMAB__OBJ_ATTR__INIT };
	struct ibc_srq *srq;
	int err;

	if (!xrcd || !cq || !attr || !ret_srq)
		return ibc_set_error(-EINVAL,
				     "xrcd, cq, attr or ret_srq is NULL");
	err = xrcd_check(xrcd, cq);
	if (err < 0)
		return err;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return ibc_set_error(-ENOMEM, "out of memory");
	srq->o.ctx = xrcd->o.ctx;
	srq->o.kind = IBC_OBJ_SRQ;
	/* In the order ObjCreateRequest.uses names them: CQ, XRCD. */
	srq->o.uses[srq->o.n_uses++] = &cq->o;
	srq->o.uses[srq->o.n_uses++] = &xrcd->o;
	a.attr.max_wr = attr->max_wr;
	a.attr.max_sge = attr->max_sge;
	a.attr.srq_limit = attr->srq_limit;
	a.cq = cq->o.vobj;
	a.xrcd = xrcd->o.vobj;
	err = ibc_obj_create(&srq->o, &a, &res);
	if (err < 0) {
		free(srq);
		return err;
	}
	srq->attr = *attr;
	if (res.attr.max_wr)
		srq->attr.max_wr = res.attr.max_wr;
	if (res.attr.max_sge)
		srq->attr.max_sge = res.attr.max_sge;
	srq->srq_num = res.qp_num;
	*ret_srq = srq;
	return 0;
}

IBC_EXPORT uint32_t ibc_srq_num(const struct ibc_srq *srq)
{
	return srq ? srq->srq_num : 0;
}

/* A target QP on @xrcd: created (@qp_num 0) or opened by number. */
static int xrcd_tgt(struct ibc_xrcd *xrcd, uint32_t qp_num,
		    struct ibc_qp **ret_qp)
{
	struct ibc_obj_args a = { .attr = RDMAB__OBJ_ATTR__INIT };
	struct ibc_obj_result res = { .attr = RDMAB__OBJ_ATTR__INIT };
	struct ibc_qp *qp;
	int err;

	if (!xrcd || !ret_qp)
		return ibc_set_error(-EINVAL, "xrcd or ret_qp is NULL");
	err = xrcd_check(xrcd, NULL);
	if (err < 0)
		return err;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return ibc_set_error(-ENOMEM, "out of memory");
	qp->o.ctx = xrcd->o.ctx;
	qp->o.kind = IBC_OBJ_QP;
	qp->o.uses[qp->o.n_uses++] = &xrcd->o;
	a.attr.qp_type = IBV_QPT_XRC_RECV;
	a.attr.xrc_qp_num = qp_num;
	a.xrcd = xrcd->o.vobj;
	err = ibc_obj_create(&qp->o, &a, &res);
	if (err < 0) {
		free(qp);
		return err;
	}
	qp->qp_num = res.qp_num;
	*ret_qp = qp;
	return 0;
}

IBC_EXPORT int ibc_qp_create_xrc_tgt(struct ibc_xrcd *xrcd,
				     struct ibc_qp **ret_qp)
{
	return xrcd_tgt(xrcd, 0, ret_qp);
}

IBC_EXPORT int ibc_qp_open_xrc_tgt(struct ibc_xrcd *xrcd, uint32_t qp_num,
				   struct ibc_qp **ret_qp)
{
	if (!qp_num)
		return ibc_set_error(-EINVAL, "qp_num 0 names no target QP");
	return xrcd_tgt(xrcd, qp_num, ret_qp);
}
