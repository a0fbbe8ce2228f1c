// SPDX-License-Identifier: MIT
/* The DM requests: alloc, import, unimport, free (dm.c does the work),
 * and their replies. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>

#include "daemon/registry/client.h"
#include "daemon/registry/ctx.h"
#include "daemon/server/handler.h"
#include "daemon/families/dm/dm.h"
#include "daemon/families/family.h"
#include "daemon/registry/objects.h"

/* The reply to an alloc (@alloc) or an import of @dm, held by @h; with the
 * session's status page when it was never sent or @want_status. */
static int dm_reply(struct dm *dm, struct dm_hold *h, struct reply *r,
		    bool alloc, bool want_status)
{
	Rdmab__DmReply *out = reply_alloc(r, sizeof(*out));

	if (!out)
		return reply_error(r, -ENOMEM, "out of memory");
	rdmab__dm_reply__init(out);
	out->dm_id = dm->id;
	out->handle = dm->dd.handle;
	out->length = dm->length;
	out->persistent = dm->persistent;
	out->allocator = dm->allocator_id;
	out->object_id = h->o->id;
	out->status_slot = h->slot;
	if (!h->s->sent || want_status) {
		/* The library maps it once; it goes with this reply, or
		 * again when the reply that took it was lost. */
		out->has_status = true;
		out->status_fd_index = r->nfds;
		r->fds[r->nfds++] = h->s->fd;
		if (!h->s->sent) {
			h->s->sent = true;
			dm_journal_session_sent(dm->ctx->core, h->s);
		}
	}
	if (dm->dd.fd >= 0) {
		out->has_fd = true;
		out->fd_index = r->nfds;
		r->fds[r->nfds++] = dm->dd.fd;
	}
	if (alloc) {
		r->msg.body_case = RDMAB__REPLY__BODY_DM_ALLOC;
		r->msg.dm_alloc = out;
	} else {
		r->msg.body_case = RDMAB__REPLY__BODY_DM_IMPORT;
		r->msg.dm_import = out;
	}
	return 0;
}

static int h_dm_alloc(struct client *c, const Rdmab__Request *req,
		      struct wire_fds *fds, struct reply *r)
{
	struct dm_hold *h;
	struct dm *dm;
	int ret;

	ret = dm_alloc(c, req->dm_alloc, &r->why, &dm, &h);
	if (ret < 0)
		return ret;
	return dm_reply(dm, h, r, true, req->dm_alloc->want_status);
}

static int h_dm_import(struct client *c, const Rdmab__Request *req,
		       struct wire_fds *fds, struct reply *r)
{
	const Rdmab__DmImportRequest *q = req->dm_import;
	struct dm_hold *h;
	struct dm *dm;
	int ret;

	ret = dm_import(c, q->context_id, q->handle, &r->why, &dm, &h);
	if (ret < 0)
		return ret;
	return dm_reply(dm, h, r, false, q->want_status);
}

static int h_dm_unimport(struct client *c, const Rdmab__Request *req,
			 struct wire_fds *fds, struct reply *r)
{
	uint64_t id = req->dm_unimport->dm_id;
	Rdmab__DmEmptyReply *out = reply_alloc(r, sizeof(*out));

	if (!out)
		return reply_error(r, -ENOMEM, "out of memory");
	if (dm_unimport(c, id, req->dm_unimport->object_id) < 0)
		return reply_error(r, -ENOENT,
				   "this session holds no DM %" PRIu64, id);
	rdmab__dm_empty_reply__init(out);
	r->msg.body_case = RDMAB__REPLY__BODY_DM_UNIMPORT;
	r->msg.dm_unimport = out;
	return 0;
}

/* The allocator's free, a member's of a persistent DM, or (dm_admin_free,
 * H_ADMIN) an administrator's of any DM. */
static int h_dm_free(struct client *c, const Rdmab__Request *req,
		     struct wire_fds *fds, struct reply *r)
{
	bool admin = req->body_case == RDMAB__REQUEST__BODY_DM_ADMIN_FREE;
	uint64_t id = admin ? req->dm_admin_free->dm_id : req->dm_free->dm_id;
	Rdmab__DmEmptyReply *out = reply_alloc(r, sizeof(*out));
	bool ended = false;
	int ret;

	if (!out)
		return reply_error(r, -ENOMEM, "out of memory");
	ret = dm_free_request(c, id, admin, admin ? 0 : req->dm_free->object_id,
			      &r->why, &ended);
	if (ret < 0)
		return ret;
	rdmab__dm_empty_reply__init(out);
	if (admin) {
		r->msg.body_case = RDMAB__REPLY__BODY_DM_ADMIN_FREE;
		r->msg.dm_admin_free = out;
	} else {
		r->msg.body_case = RDMAB__REPLY__BODY_DM_FREE;
		r->msg.dm_free = out;
		out->import_ended = ended;
	}
	return 0;
}

/* An administrator's revoke (H_ADMIN). */
static int h_dm_revoke(struct client *c, const Rdmab__Request *req,
		       struct wire_fds *fds, struct reply *r)
{
	Rdmab__DmEmptyReply *out = reply_alloc(r, sizeof(*out));
	int ret;

	if (!out)
		return reply_error(r, -ENOMEM, "out of memory");
	ret = dm_revoke(c->core, req->dm_revoke->dm_id, c->id, c->cred.uid,
			&r->why);
	if (ret < 0)
		return ret;
	rdmab__dm_empty_reply__init(out);
	r->msg.body_case = RDMAB__REPLY__BODY_DM_REVOKE;
	r->msg.dm_revoke = out;
	return 0;
}

static const struct handler dm_h_alloc = { "dm-alloc", h_dm_alloc, H_SESSION };
static const struct handler dm_h_import = { "dm-import", h_dm_import,
					    H_SESSION };
static const struct handler dm_h_unimport = { "dm-unimport", h_dm_unimport,
					      H_SESSION | H_DRAIN };
static const struct handler dm_h_free = { "dm-free", h_dm_free, H_SESSION };
static const struct handler dm_h_admin_free = { "dm-admin-free", h_dm_free,
						H_SESSION | H_ADMIN };
static const struct handler dm_h_revoke = { "dm-revoke", h_dm_revoke,
					    H_SESSION | H_ADMIN };

const struct family_request dm_requests[] = {
	{ RDMAB__REQUEST__BODY_DM_ALLOC, &dm_h_alloc },
	{ RDMAB__REQUEST__BODY_DM_IMPORT, &dm_h_import },
	{ RDMAB__REQUEST__BODY_DM_UNIMPORT, &dm_h_unimport },
	{ RDMAB__REQUEST__BODY_DM_FREE, &dm_h_free },
	{ RDMAB__REQUEST__BODY_LIST_DMS, &dm_h_list },
	{ RDMAB__REQUEST__BODY_DM_ADMIN_FREE, &dm_h_admin_free },
	{ RDMAB__REQUEST__BODY_DM_REVOKE, &dm_h_revoke },
	{ 0, NULL },
};
