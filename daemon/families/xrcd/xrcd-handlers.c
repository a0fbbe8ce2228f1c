// SPDX-License-Identifier: MIT
/* The XRCD requests: open, close, list, remove (xrcd.c does the work),
 * and their replies. */
#include "config.h"

#include <errno.h>

#include "daemon/registry/client.h"
#include "daemon/server/handler.h"
#include "daemon/families/xrcd/xrcd.h"

static int h_xrcd_open(struct client *c, const Rdmab__Request *req,
		       struct wire_fds *fds, struct reply *r)
{
	Rdmab__XrcdOpenReply *out = reply_alloc(r, sizeof(*out));
	int fd, ret;

	if (!out)
		return reply_error(r, -ENOMEM, "out of memory");
	rdmab__xrcd_open_reply__init(out);
	ret = xrcd_open(c, req->xrcd_open, &r->why, out, &fd);
	if (ret < 0)
		return ret;
	r->fds[0] = fd;
	r->nfds = 1;
	r->msg.body_case = RDMAB__REPLY__BODY_XRCD_OPEN;
	r->msg.xrcd_open = out;
	return 0;
}

static int h_xrcd_close(struct client *c, const Rdmab__Request *req,
			struct wire_fds *fds, struct reply *r)
{
	Rdmab__XrcdCloseReply *out = reply_alloc(r, sizeof(*out));
	int ret;

	if (!out)
		return reply_error(r, -ENOMEM, "out of memory");
	ret = xrcd_close(c, req->xrcd_close->object_id, &r->why);
	if (ret < 0)
		return ret;
	rdmab__xrcd_close_reply__init(out);
	r->msg.body_case = RDMAB__REPLY__BODY_XRCD_CLOSE;
	r->msg.xrcd_close = out;
	return 0;
}

static int h_list_xrcds(struct client *c, const Rdmab__Request *req,
			struct wire_fds *fds, struct reply *r)
{
	Rdmab__ListXrcdsReply *out = reply_alloc(r, sizeof(*out));
	int ret;

	ret = xrcd_list(c, req->list_xrcds, r->arena, &r->why, out);
	if (ret < 0)
		return ret;
	r->msg.body_case = RDMAB__REPLY__BODY_LIST_XRCDS;
	r->msg.list_xrcds = out;
	return 0;
}

static int h_xrcd_remove(struct client *c, const Rdmab__Request *req,
			 struct wire_fds *fds, struct reply *r)
{
	Rdmab__XrcdRemoveReply *out = reply_alloc(r, sizeof(*out));
	uint32_t orphans = 0;
	int ret;

	/* Administrators only: H_ADMIN. */
	if (!out)
		return reply_error(r, -ENOMEM, "out of memory");
	ret = xrcd_remove(c, &req->xrcd_remove->name, &r->why, &orphans);
	if (ret < 0)
		return ret;
	rdmab__xrcd_remove_reply__init(out);
	out->orphaned_opens = orphans;
	r->msg.body_case = RDMAB__REPLY__BODY_XRCD_REMOVE;
	r->msg.xrcd_remove = out;
	return 0;
}

static const struct handler xrcd_h_open = { "xrcd-open", h_xrcd_open,
					    H_SESSION };
static const struct handler xrcd_h_close = { "xrcd-close", h_xrcd_close,
					     H_SESSION };
static const struct handler xrcd_h_list = { "list-xrcds", h_list_xrcds,
					    H_NEEDS_HELLO };
static const struct handler xrcd_h_remove = { "xrcd-remove", h_xrcd_remove,
					      H_SESSION | H_ADMIN };

const struct family_request xrcd_requests[] = {
	{ RDMAB__REQUEST__BODY_XRCD_OPEN, &xrcd_h_open },
	{ RDMAB__REQUEST__BODY_XRCD_CLOSE, &xrcd_h_close },
	{ RDMAB__REQUEST__BODY_LIST_XRCDS, &xrcd_h_list },
	{ RDMAB__REQUEST__BODY_XRCD_REMOVE, &xrcd_h_remove },
	{ 0, NULL },
};
