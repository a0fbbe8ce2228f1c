// SPDX-License-Identifier: MIT
/* The RSS requests: create, destroy, list (rss.c does the work), and
 * their replies. */
#include "config.h"

#include <errno.h>

#include "daemon/registry/client.h"
#include "daemon/server/handler.h"
#include "daemon/families/rss/rss.h"

static int h_rss_create(struct client *c, const Rdmab__Request *req,
			struct wire_fds *fds, struct reply *r)
{
	Rdmab__RssCreateReply *out = reply_alloc(r, sizeof(*out));
	int ret;

	if (!out)
		return reply_error(r, -ENOMEM, "out of memory");
	ret = rss_create(c, req->rss_create, r->arena, &r->why, out);
	if (ret < 0)
		return ret;
	r->msg.body_case = RDMAB__REPLY__BODY_RSS_CREATE;
	r->msg.rss_create = out;
	return 0;
}

static int h_rss_destroy(struct client *c, const Rdmab__Request *req,
			 struct wire_fds *fds, struct reply *r)
{
	Rdmab__RssDestroyReply *out = reply_alloc(r, sizeof(*out));
	int ret;

	if (!out)
		return reply_error(r, -ENOMEM, "out of memory");
	ret = rss_destroy_request(c, req->rss_destroy->rss_id, &r->why);
	if (ret < 0)
		return ret;
	rdmab__rss_destroy_reply__init(out);
	r->msg.body_case = RDMAB__REPLY__BODY_RSS_DESTROY;
	r->msg.rss_destroy = out;
	return 0;
}

static int h_list_rss(struct client *c, const Rdmab__Request *req,
		      struct wire_fds *fds, struct reply *r)
{
	Rdmab__ListRssReply *out = reply_alloc(r, sizeof(*out));
	int ret;

	ret = rss_list(c, req->list_rss, r->arena, &r->why, out);
	if (ret < 0)
		return ret;
	r->msg.body_case = RDMAB__REPLY__BODY_LIST_RSS;
	r->msg.list_rss = out;
	return 0;
}

static const struct handler rss_h_create = { "rss-create", h_rss_create,
					     H_SESSION };
static const struct handler rss_h_destroy = { "rss-destroy", h_rss_destroy,
					      H_SESSION };
static const struct handler rss_h_list = { "list-rss", h_list_rss, H_SESSION };

const struct family_request rss_requests[] = {
	{ RDMAB__REQUEST__BODY_RSS_CREATE, &rss_h_create },
	{ RDMAB__REQUEST__BODY_RSS_DESTROY, &rss_h_destroy },
	{ RDMAB__REQUEST__BODY_LIST_RSS, &rss_h_list },
	{ 0, NULL },
};
