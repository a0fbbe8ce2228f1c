// SPDX-License-Identifier: MIT
/* The context requests: open and close a device (ctx.c does the work). */
#include "config.h"

#include <errno.h>

#include "daemon/registry/client.h"
#include "daemon/registry/core.h"
#include "daemon/registry/ctx.h"
#include "daemon/server/handler.h"

int h_ctx_open(struct client *c, const Rdmab__Request *req,
	       struct wire_fds *fds, struct reply *r)
{
	const char *name = req->open_context->device;
	Rdmab__OpenContextReply *out;
	struct device *dev;
	struct dctx *x;
	int ret;

	dev = device_find(&c->core->devices, name);
	if (!dev)
		return *name ? reply_error(r, -ENODEV,
					   "no device \"%.64s\" (see "
					   "rdmabrokerctl devices)",
					   name) :
			       reply_error(r, -ENODEV,
					   "the broker has no device left");
	if (dev->removed)
		return reply_error(r, -ENODEV, "device %s was removed",
				   dev->name);
	out = reply_alloc(r, sizeof(*out));
	if (!out)
		return reply_error(r, -ENOMEM, "out of memory");
	ret = dctx_conn_open(c, dev, &r->why, &x);
	if (ret < 0)
		return ret;
	rdmab__open_context_reply__init(out);
	out->context_id = x->id;
	out->device = dev->name;
	out->pd_handle = dev->ctx_ops->pd_handle(x->dc);
	out->fd_index = 0;
	r->fds[0] = dev->ctx_ops->fd(x->dc);
	r->nfds = 1;
	r->msg.body_case = RDMAB__REPLY__BODY_OPEN_CONTEXT;
	r->msg.open_context = out;
	return 0;
}

int h_ctx_close(struct client *c, const Rdmab__Request *req,
		struct wire_fds *fds, struct reply *r)
{
	Rdmab__CloseContextReply *out = reply_alloc(r, sizeof(*out));
	int ret;

	if (!out)
		return reply_error(r, -ENOMEM, "out of memory");
	ret = dctx_conn_close(c, req->close_context->context_id, &r->why);
	if (ret < 0)
		return ret;
	rdmab__close_context_reply__init(out);
	r->msg.body_case = RDMAB__REPLY__BODY_CLOSE_CONTEXT;
	r->msg.close_context = out;
	return 0;
}
