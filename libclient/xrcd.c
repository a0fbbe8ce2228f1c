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
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/xrcd/xrcd-name.h"
#include "libclient/events.h"
#include "libclient/family.h"
#include "libclient/xrcd.h"

/* The name rule (common/xrcd/xrcd-name.h), before anything is sent: the
 * broker checks it again. */
static int xrcd_check_name(const char *name)
{
	char why[XRCD_NAME_WHY_SIZE];

	if (xrcd_name_check(name, strnlen(name, XRCD_NAME_MAX + 1), why,
			    sizeof(why)) < 0)
		return ibc_set_error(-EINVAL, "%s", why);
	return 0;
}

/* The session's own-context open @id goes; without waiting: the broker
 * drops it with the session anyway. */
static void xrcd_close_request(struct ibc_client *cl, uint64_t id)
{
	Rdmab__XrcdCloseRequest xc = RDMAB__XRCD_CLOSE_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	xc.object_id = id;
	req.body_case = RDMAB__REQUEST__BODY_XRCD_CLOSE;
	req.xrcd_close = &xc;
	ibc_send_kept(cl, &req);
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

IBC_EXPORT int ibc_xrcd_open(struct ibc_ctx *ctx, const char *name, int oflags,
			     struct ibc_xrcd **ret_xrcd)
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
	err = xrcd_check_name(name);
	if (err < 0)
		return err;
	/* A rekey or removal closes the context only once the XRCD is
	 * listed in it, so that it goes with the context (and, on verbs,
	 * is not opened in a closed one). */
	err = ibc_ctx_enter(ctx, true);
	if (err < 0)
		return err;
	x = calloc(1, sizeof(*x));
	if (!x) {
		err = ibc_set_error(-ENOMEM, "out of memory");
		goto out;
	}
	x->o.ctx = ctx;
	x->o.kind = IBC_OBJ_XRCD;
	own = ctx->ops == &ibc_own_ops;
	soft = ctx->ops == &ibc_soft_ops;
	xo.context_id = ctx->caps.context_id;
	xo.name.data = (uint8_t *)name;
	xo.name.len = strlen(name);
	xo.oflags = (uint32_t)oflags;
	xo.own = own;
	req.body_case = RDMAB__REQUEST__BODY_XRCD_OPEN;
	req.xrcd_open = &xo;
	err = ibc_call(ctx->client, &req, IBC_CALL_FDS, &r);
	if (err < 0)
		goto out;
	rep = r.reply->xrcd_open;
	if (r.reply->body_case != RDMAB__REPLY__BODY_XRCD_OPEN ||
	    !rep->object_id) {
		ibc_reply_free(&r);
		err = ibc_set_error(-EPROTO, "the broker answered an XRCD open "
					     "without an open");
		goto out;
	}
	x->open_id = rep->object_id;
	x->o.id = own ? 0 : rep->object_id;
	x->o.handle = rep->handle;
	x->ino = rep->inode;
	x->persistent = rep->persistent;
	fd = wire_fds_steal(&r.fds, rep->fd_index);
	ibc_reply_free(&r);
	/* The soft device's XRCD is the broker's record, which names the
	 * inode: the file is not used, so it is not looked at either. On
	 * verbs the kernel opens the XRCD of the file's inode, which must
	 * be the one the broker named. */
	if (fd < 0)
		err = ibc_set_error(-EPROTO, "the broker opened an XRCD "
					     "without sending its file");
	else if (soft)
		err = 0;
	else
		err = xrcd_check_fd(ctx, fd, x->ino);
	if (err == 0 && !soft)
		err = ibc_verbs_open_xrcd(&x->o, fd);
	if (fd >= 0)
		close(fd);
	if (err < 0) {
		char why[256];

		/* The kernel's sentence stays, its errno as it is. */
		snprintf(why, sizeof(why), "%s", ibc_last_error());
		xrcd_cancel(x, own);
		err = ibc_set_error(err, "%s", why);
		goto out;
	}
	ibc_obj_link(&x->o);
	ibc_clear_error();
	*ret_xrcd = x;
	x = NULL;
out:
	ibc_ctx_leave(ctx);
	free(x);
	return err;
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

IBC_EXPORT uint64_t ibc_xrcd_id(const struct ibc_xrcd *xrcd)
{
	return xrcd ? xrcd->open_id : 0;
}

/* --- what holds an XRCD open: XRC SRQs and target QPs ----------------- */

/* @xrcd is open and alive; @cq (if given) is of its context. */
static int xrcd_check(const struct ibc_xrcd *xrcd, const struct ibc_cq *cq)
{
	int err;

	if (xrcd->o.dead)
		return ibc_set_error(-ENODEV,
				     "the XRCD's device %s was removed",
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
	a.cq = cq->o.vobj;
	a.parent = xrcd->o.vobj;
	err = ibc_srq_make(srq, attr, &a, true);
	if (err < 0)
		return err;
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
	a.parent = xrcd->o.vobj;
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

/* --- inspection --------------------------------------------------------- */

/* "a, b, c" into @buf, cut at its end. */
static void join_names(char *buf, size_t size, char **names, size_t n)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && off + 1 < size; i++) {
		int w = snprintf(buf + off, size - off, "%s%s", i ? ", " : "",
				 names[i]);

		if (w < 0)
			break;
		off += (size_t)w;
	}
}

static void xrcd_info_from(struct ibc_xrcd_info *e, const Rdmab__XrcdInfo *x)
{
	memset(e, 0, sizeof(*e));
	ibc_copy_name(e->name, sizeof(e->name), x->name);
	ibc_copy_name(e->owner_domain, sizeof(e->owner_domain),
		      x->owner_domain);
	join_names(e->domains, sizeof(e->domains), x->domains, x->n_domains);
	join_names(e->devices, sizeof(e->devices), x->devices, x->n_devices);
	e->ino = x->inode;
	e->persistent = x->persistent;
	e->n_opens = x->open_count;
	e->n_orphaned = x->orphaned_opens;
	for (size_t i = 0; i < x->n_opens && i < IBC_XRCD_OPENS_SHOWN; i++) {
		const Rdmab__XrcdOpenInfo *o = x->opens[i];
		struct ibc_xrcd_open_objs *u = &e->open_objs[e->n_opens_shown];
		struct ibc_xrcd_open_info *d = &e->opens[e->n_opens_shown++];

		u->srqs = o->srqs;
		u->qps = o->qps;
		u->own = o->own;
		d->client_id = o->client_id;
		d->pid = o->pid;
		d->object_id = o->object_id;
		ibc_copy_name(d->domain, sizeof(d->domain), o->domain);
	}
}

IBC_EXPORT int ibc_list_xrcds(struct ibc_client *client, const char *name,
			      struct ibc_xrcd_info **ret_list,
			      size_t entry_size, size_t *ret_count)
{
	const size_t v0 = IBC_SIZE_V0(struct ibc_xrcd_info, opens);
	uint8_t *list = NULL;
	size_t n = 0;
	int err;

	if (!client || !ret_list || !ret_count)
		return ibc_set_error(-EINVAL, "NULL argument");
	/* NULL or "": every name. */
	if (name && *name) {
		err = xrcd_check_name(name);
		if (err < 0)
			return err;
	}
	err = ibc_check_size("ibc_xrcd_info", entry_size, v0);
	if (err == 0 && entry_size % __alignof__(struct ibc_xrcd_info))
		err = ibc_set_error(-EINVAL,
				    "entries of %zu bytes are not aligned as "
				    "struct ibc_xrcd_info: pass sizeof the "
				    "structure",
				    entry_size);
	if (err < 0)
		return err;
	for (;;) {
		Rdmab__ListXrcdsRequest lx = RDMAB__LIST_XRCDS_REQUEST__INIT;
		Rdmab__Request req = RDMAB__REQUEST__INIT;
		const Rdmab__ListXrcdsReply *rep;
		struct ibc_reply r;
		uint8_t *grown;
		size_t k;

		lx.offset = (uint32_t)n;
		if (name) {
			lx.name.data = (uint8_t *)name;
			lx.name.len = strlen(name);
		}
		req.body_case = RDMAB__REQUEST__BODY_LIST_XRCDS;
		req.list_xrcds = &lx;
		err = ibc_call(client, &req, 0, &r);
		if (err < 0)
			goto fail;
		rep = r.reply->list_xrcds;
		if (r.reply->body_case != RDMAB__REPLY__BODY_LIST_XRCDS) {
			ibc_reply_free(&r);
			err = ibc_set_error(-EPROTO, "the broker answered the "
						     "XRCD listing with "
						     "something else");
			goto fail;
		}
		k = rep->n_xrcds;
		grown = realloc(list, (n + k + 1) * entry_size);
		if (!grown) {
			ibc_reply_free(&r);
			err = ibc_set_error(-ENOMEM, "out of memory");
			goto fail;
		}
		list = grown;
		for (size_t i = 0; i < k; i++) {
			struct ibc_xrcd_info e;

			xrcd_info_from(&e, rep->xrcds[i]);
			ibc_copy_out(list + (n + i) * entry_size, entry_size,
				     &e, sizeof(e));
		}
		n += k;
		/* An empty page ends it too: the list shrank meanwhile. */
		if (n >= rep->total || k == 0) {
			ibc_reply_free(&r);
			break;
		}
		ibc_reply_free(&r);
	}
	if (!list) {
		list = calloc(1, entry_size);
		if (!list)
			return ibc_set_error(-ENOMEM, "out of memory");
	}
	ibc_clear_error();
	*ret_list = (struct ibc_xrcd_info *)list;
	*ret_count = n;
	return 0;
fail:
	free(list);
	return err;
}

IBC_EXPORT int ibc_admin_xrcd_remove(struct ibc_client *client,
				     const char *name)
{
	Rdmab__XrcdRemoveRequest xr = RDMAB__XRCD_REMOVE_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct ibc_reply r;
	int err;

	if (!client || !name)
		return ibc_set_error(-EINVAL, "client or name is NULL");
	err = xrcd_check_name(name);
	if (err < 0)
		return err;
	xr.name.data = (uint8_t *)name;
	xr.name.len = strlen(name);
	req.body_case = RDMAB__REQUEST__BODY_XRCD_REMOVE;
	req.xrcd_remove = &xr;
	err = ibc_call(client, &req, 0, &r);
	if (err < 0)
		return err;
	if (r.reply->body_case != RDMAB__REPLY__BODY_XRCD_REMOVE ||
	    !r.reply->xrcd_remove)
		err = ibc_set_error(-EPROTO, "the broker answered the XRCD "
					     "removal with something else");
	else if (r.reply->xrcd_remove->orphaned_opens > INT_MAX)
		err = ibc_set_error(-EPROTO, "the broker's count of orphaned "
					     "XRCD opens is out of range");
	else
		err = (int)r.reply->xrcd_remove->orphaned_opens;
	ibc_reply_free(&r);
	return err;
}

/* A domain's figures: the opens of dead clients whose kernel XRCD stays
 * in its contexts. */
static const struct ibc_family_field ibc_xrcd_domain_fields[] = {
	IBC_FAMILY_FIELD(Rdmab__DomainInfo, xrcd_orphans,
			 struct ibc_domain_info, xrcd_orphans),
	{ 0 },
};

/* The broker refused the open's name at a restart: the application
 * closes the open (nothing the library can do for it: on a verbs device
 * its ibv_xrcd may hold XRC SRQs and QPs of the application's). */
static struct ibc_queued_event *ibc_xrcd_lost_read(struct ibc_client *cl,
						   const Rdmab__Event *ev)
{
	return ibc_queue_event(cl, IBC_EVENT_XRCD_LOST, ev->xrcd_lost->reason,
			       NULL);
}

static const struct ibc_event_handler ibc_xrcd_lost_event = {
	.body = RDMAB__EVENT__BODY_XRCD_LOST,
	.read = ibc_xrcd_lost_read,
};

static const struct ibc_event_handler *const ibc_xrcd_events[] = {
	&ibc_xrcd_lost_event,
	NULL,
};

/* An XRCD open is an object of its context's list (kind_listed:
 * objects.c destroys it with the others, after the XRC SRQs and target
 * QPs on it): the family has no hook of its own to run. */
const struct ibc_family ibc_xrcd_family = {
	.name = "xrcd",
	.kind = IBC_OBJ_XRCD,
	.kind_name = "XRCD",
	.kind_listed = true,
	.kind_users = "XRC SRQs or QPs",
	.quota = IBC_FAMILY_FIELD(Rdmab__QuotaInfo, xrcds, struct ibc_quota,
				  xrcds),
	.domain_fields = ibc_xrcd_domain_fields,
	.events = ibc_xrcd_events,
};
