// SPDX-License-Identifier: MIT
/*
 * Device memory: alloc, import, unimport and free go through the broker;
 * reads and writes go straight to the device (libclient/dm.h).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libclient/dm.h"
#include "libclient/objects.h"
#include "libclient/events.h"
#include "libclient/family.h"

/* No DM is larger: mlx5's MEMIC is 128-256 KiB, the soft device's at most
 * 64 MiB. A broker's length above it is a protocol error. */
#define IBC_DM_MAX_LENGTH (1ull << 32)

/* What the family keeps of a session, in its slot of struct ibc_client:
 * made by the session's first alloc or import (ibc_dm_get()), freed with
 * the client; under the client's lock. */
struct ibc_dm_session {
	/* The session's status page, read-only; NULL until a get maps
	 * it. Its file, to know another: a restarted broker that lost it
	 * sends a new one with the session's next DM. */
	const uint8_t *status;
	dev_t status_dev;
	ino_t status_ino;
	/* Pages so replaced: the DMs of the lost one may still point into
	 * it (the broker revoked them); unmapped with the client. */
	const uint8_t **replaced;
	size_t n_replaced;
	/* Allocs and imports in flight, and the DM events that found no
	 * import here meanwhile, which such an import (its reply read, its
	 * DM not listed yet) takes up; emptied when none is in flight. */
	unsigned int gets;
	struct ibc_dm_unmatched {
		uint64_t dm_id;
		unsigned int events; /* 1 << enum ibc_event_type */
	} * unmatched;
	size_t n_unmatched, cap_unmatched;
};

/* @cl's, NULL before its first alloc or import; under the client's
 * lock. */
static struct ibc_dm_session *ibc_dm_session(const struct ibc_client *cl)
{
	return (struct ibc_dm_session *)cl->family_slot[IBC_FAMILY_DM];
}

/* Did the broker's answer to a free end the import it named? A broker
 * that does not say so wants the unimport. */
static bool ibc_dm_import_ended(const struct ibc_reply *r)
{
	return r->reply->body_case == RDMAB__REPLY__BODY_DM_FREE &&
	       r->reply->dm_free && r->reply->dm_free->import_ended;
}

/* Tell the broker of the free or unimport of DM @id, import @object_id.
 * True when it answered that the import ended with the free. */
static bool ibc_dm_tell(struct ibc_client *cl, unsigned int body_case,
			uint64_t id, uint64_t object_id, bool wait)
{
	Rdmab__DmIdRequest q = RDMAB__DM_ID_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct ibc_reply r;
	bool ended;

	q.dm_id = id;
	q.object_id = object_id;
	req.body_case = body_case;
	if (body_case == RDMAB__REQUEST__BODY_DM_FREE)
		req.dm_free = &q;
	else
		req.dm_unimport = &q;
	if (!wait) {
		/* Sent again if a restart loses it: only with the import's
		 * id, without which the broker takes any of the session's
		 * imports of the DM, a second one too. */
		if (object_id)
			ibc_send_kept(cl, &req);
		else
			ibc_send_nowait(cl, &req);
		return false;
	}
	if (ibc_call(cl, &req, 0, &r) < 0)
		return false;
	ended = ibc_dm_import_ended(&r);
	ibc_reply_free(&r);
	return ended;
}

/* Stop using @dm in this process, later calls failing with -@err; the
 * broker is told by the caller. */
static void ibc_dm_drop_local(struct ibc_dm *dm, int err, const char *why)
{
	if (dm->gone)
		return;
	snprintf(dm->gone_why, sizeof(dm->gone_why), "%s", why);
	__atomic_store_n(&dm->gone, err, __ATOMIC_SEQ_CST);
	dm->ops->drop(dm);
}

/* An event ends this process's use of @dm, unless MRs of this process
 * are still on it (their holder deregisters them, then unimports). True
 * when it did, and the broker is to be told; with ctx->lock held. */
static bool ibc_dm_end_locked(struct ibc_dm *dm, const char *why)
{
	if (dm->gone || dm->mrs)
		return false;
	ibc_dm_drop_local(dm, ENODEV, why);
	return true;
}

static void ibc_dm_release(struct ibc_dm *dm)
{
	if (dm->ops->release)
		dm->ops->release(dm);
	free(dm);
}

static const uint8_t ibc_dm_no_status;

/* The broker sent another page than @s's (it restarted and lost the
 * one this process maps): the old one is kept mapped, since DMs may
 * still point into it, until the client goes. 0 or -ENOMEM. */
static int ibc_dm_status_retire(struct ibc_dm_session *s)
{
	const uint8_t **p;

	p = realloc(s->replaced, (s->n_replaced + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	s->replaced = p;
	s->replaced[s->n_replaced++] = s->status;
	s->status = NULL;
	return 0;
}

/* Map the session's status page, which comes with its first DM. Takes
 * @fd. */
static int ibc_dm_status_map(struct ibc_client *cl, int fd)
{
	struct ibc_dm_session *s;
	struct stat st;
	void *p;

	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size < IBC_DM_STATUS_SLOTS) {
		if (fd >= 0)
			close(fd);
		return ibc_set_error(-EPROTO, "the broker sent no DM status "
					      "page");
	}
	/* Mapped and marked under the lock the fork handlers take, so that
	 * no fork falls between. */
	pthread_mutex_lock(&cl->lock);
	/* Made by the get in flight. */
	s = ibc_dm_session(cl);
	p = mmap(NULL, IBC_DM_STATUS_SLOTS, PROT_READ, MAP_SHARED, fd, 0);
	if (p != MAP_FAILED) {
		madvise(p, IBC_DM_STATUS_SLOTS, MADV_DONTFORK);
		if (s->status && s->status_dev == st.st_dev &&
		    s->status_ino == st.st_ino) {
			/* The same page again (a get whose reply was lost
			 * asked for it). */
			munmap(p, IBC_DM_STATUS_SLOTS);
		} else if (s->status && ibc_dm_status_retire(s) < 0) {
			munmap(p, IBC_DM_STATUS_SLOTS);
			p = MAP_FAILED;
			errno = ENOMEM;
		} else {
			s->status = p;
			s->status_dev = st.st_dev;
			s->status_ino = st.st_ino;
		}
	}
	pthread_mutex_unlock(&cl->lock);
	close(fd);
	if (p == MAP_FAILED)
		return ibc_set_error(-errno,
				     "cannot map the DM status page: %s",
				     strerror(errno));
	return 0;
}

static void ibc_dm_client_free(struct ibc_client *cl)
{
	struct ibc_dm_session *s = ibc_dm_session(cl);

	if (!s)
		return;
	if (s->status)
		munmap((void *)s->status, IBC_DM_STATUS_SLOTS);
	for (size_t i = 0; i < s->n_replaced; i++)
		munmap((void *)s->replaced[i], IBC_DM_STATUS_SLOTS);
	free(s->replaced);
	free(s->unmatched);
	free(s);
	cl->family_slot[IBC_FAMILY_DM] = NULL;
}

/* Make @dm (NULL for none) the first of @ctx's list; ctx->lock held. */
static void ibc_dm_set_first(struct ibc_ctx *ctx, struct ibc_dm *dm)
{
	ctx->family_slot[IBC_FAMILY_DM] = dm;
}

void ibc_dm_link_locked(struct ibc_dm *dm)
{
	struct ibc_ctx *ctx = dm->ctx;
	struct ibc_dm *first = ibc_dm_first(ctx);

	dm->prev = NULL;
	dm->next = first;
	if (first)
		first->prev = dm;
	ibc_dm_set_first(ctx, dm);
}

/* Map or import (the context's kind's DM operations) what the broker
 * answered and list @dm in its context. Takes @fd. */
static int ibc_dm_attach(struct ibc_dm *dm, int fd)
{
	int err;

	if (!dm->length || dm->length > IBC_DM_MAX_LENGTH || dm->length & 3) {
		err = ibc_set_error(-EPROTO,
				    "the broker gave DM %llu a length of %llu "
				    "bytes",
				    (unsigned long long)dm->id,
				    (unsigned long long)dm->length);
		goto out;
	}
	err = dm->ops->attach(dm, fd);
out:
	if (fd >= 0)
		close(fd);
	return err;
}

static void ibc_dm_fork_prepare(struct ibc_ctx *ctx)
{
	const struct ibc_dm_ops *ops = ibc_dm_ops_of(ctx);

	if (ops->fork_prepare)
		ops->fork_prepare(ctx);
}

static void ibc_dm_fork_stale(struct ibc_client *cl)
{
	struct ibc_dm_session *s = ibc_dm_session(cl);

	/* Their mappings did not come along (MADV_DONTFORK): nothing may
	 * touch or unmap what is now absent, or maybe someone else's. */
	for (struct ibc_ctx *ctx = cl->ctxs; ctx; ctx = ctx->next)
		for (struct ibc_dm *dm = ibc_dm_first(ctx); dm; dm = dm->next) {
			ibc_copy_name(dm->gone_why, sizeof(dm->gone_why),
				      cl->dead_message);
			dm->gone = ESTALE;
			dm->map = NULL;
			dm->vdm = NULL;
			dm->status = &ibc_dm_no_status;
		}
	if (s) {
		s->status = NULL;
		s->n_replaced = 0;
	}
}

static void ibc_dm_fork_child(struct ibc_client *cl)
{
	struct ibc_dm_session *s = ibc_dm_session(cl);

	/* No thread handles a DM event or gets a DM here: ibc_close()
	 * would wait for them forever. */
	if (s) {
		s->gets = 0;
		s->n_unmatched = 0;
	}
	for (struct ibc_ctx *ctx = cl->ctxs; ctx; ctx = ctx->next) {
		ctx->event_handlers = 0;
		for (struct ibc_dm *dm = ibc_dm_first(ctx); dm; dm = dm->next)
			dm->event_refs = 0;
	}
}

static int ibc_dm_ctx_check(struct ibc_ctx *ctx)
{
	if (ibc_stale(ctx->client))
		return ibc_stale_error(ctx->client);
	if (ibc_ctx_removed(ctx))
		return ibc_ctx_gone(ctx);
	if (!ctx->caps.shared)
		return ibc_set_error(-EOPNOTSUPP,
				     "%s: this process opened the device "
				     "itself, so it shares no device memory",
				     ctx->caps.device);
	if (!ctx->caps.dm_shared)
		return ibc_set_error(-EOPNOTSUPP,
				     "%s cannot share device memory "
				     "(ibc_list_devices gives the reason)",
				     ctx->caps.device);
	return 0;
}

/*
 * @dm was just listed: the events for its DM that came while its import
 * was in flight found nothing, and are handled now as the event would
 * have been (an event's sentence is the broker's; this one says what the
 * status says). Read under the client's lock after the listing: an event
 * whose search missed the DM recorded it in the same hold of that lock,
 * so before this. Broker-wide DM ids are never reused, so an entry names
 * no later DM.
 */
static void ibc_dm_catch_up(struct ibc_dm *dm)
{
	struct ibc_client *cl = dm->ctx->client;
	const struct ibc_dm_session *s;
	unsigned int missed = 0;
	const char *why;
	bool drop;

	pthread_mutex_lock(&cl->lock);
	/* Made by the get in flight. */
	s = ibc_dm_session(cl);
	for (size_t i = 0; i < s->n_unmatched; i++)
		if (s->unmatched[i].dm_id == dm->id)
			missed |= s->unmatched[i].events;
	pthread_mutex_unlock(&cl->lock);
	if (!missed)
		return;
	why = missed & (1u << IBC_EVENT_DM_REVOKED) ?
		      "the DM was revoked by an administrator while this "
		      "process imported it: unimport it" :
		      "the DM's free was asked for while this process "
		      "imported it: unimport it";
	pthread_mutex_lock(&dm->ctx->lock);
	dm->events_seen |= missed;
	drop = ibc_dm_end_locked(dm, why);
	pthread_mutex_unlock(&dm->ctx->lock);
	if (drop)
		ibc_dm_tell(cl, RDMAB__REQUEST__BODY_DM_UNIMPORT, dm->id,
			    dm->res.id, false);
}

/* Send @req (an alloc or an import) and make its DM this process's; in
 * @ctx's count of calls in flight (ibc_dm_get). */
static int ibc_dm_get_entered(struct ibc_ctx *ctx, Rdmab__Request *req,
			      bool alloc, struct ibc_dm **ret_dm)
{
	struct ibc_client *cl = ctx->client;
	const Rdmab__DmReply *o;
	const uint8_t *page;
	struct ibc_dm *dm;
	struct ibc_reply r;
	int err, fd = -1;
	char why[256];

	err = ibc_call(cl, req, IBC_CALL_FDS, &r);
	if (err < 0)
		return err;
	o = alloc ? r.reply->dm_alloc : r.reply->dm_import;
	if ((unsigned int)r.reply->body_case != (unsigned int)req->body_case ||
	    !o || !o->dm_id) {
		ibc_reply_free(&r);
		return ibc_set_error(-EPROTO, "the broker answered without a "
					      "DM");
	}
	if (o->has_fd)
		fd = wire_fds_steal(&r.fds, o->fd_index);
	err = 0;
	if (o->has_status)
		err = ibc_dm_status_map(
			cl, wire_fds_steal(&r.fds, o->status_fd_index));
	dm = err < 0 ? NULL : calloc(1, sizeof(*dm));
	if (!dm) {
		if (fd >= 0)
			close(fd);
		if (err == 0)
			err = ibc_set_error(-ENOMEM, "out of memory");
	} else {
		dm->ctx = ctx;
		dm->ops = ibc_dm_ops_of(ctx);
		dm->id = o->dm_id;
		dm->handle = o->handle;
		dm->length = o->length;
		dm->persistent = o->persistent;
		dm->allocator = o->allocator;
		dm->res.family = IBC_FAMILY_DM;
		dm->res.id = o->object_id;
		/* Another thread's get may be mapping the page. */
		pthread_mutex_lock(&cl->lock);
		page = ibc_dm_session(cl)->status;
		dm->status = page && o->status_slot < IBC_DM_STATUS_SLOTS ?
				     page + o->status_slot :
				     &ibc_dm_no_status;
		pthread_mutex_unlock(&cl->lock);
		err = ibc_dm_attach(dm, fd);
	}
	if (err < 0) {
		uint64_t id = o->dm_id, oid = o->object_id;

		/* Telling the broker resets the sentence. */
		snprintf(why, sizeof(why), "%s", ibc_last_error());
		ibc_reply_free(&r);
		if (!alloc || !ibc_dm_tell(cl, RDMAB__REQUEST__BODY_DM_FREE, id,
					   oid, true))
			ibc_dm_tell(cl, RDMAB__REQUEST__BODY_DM_UNIMPORT, id,
				    oid, true);
		free(dm);
		return ibc_set_error(err, "%s", why);
	}
	ibc_reply_free(&r);
	ibc_dm_catch_up(dm);
	ibc_clear_error();
	*ret_dm = dm;
	return 0;
}

static int ibc_dm_get(struct ibc_ctx *ctx, Rdmab__Request *req, bool alloc,
		      struct ibc_dm **ret_dm)
{
	struct ibc_client *cl = ctx->client;
	struct ibc_dm_session *s;
	int err;

	/* A rekey or removal closes the context only once the DM is listed
	 * in it, so that the DM goes with the context instead of living on
	 * in a closed one (or, on verbs, being imported into it). */
	err = ibc_ctx_enter(ctx, true);
	if (err < 0)
		return err;
	pthread_mutex_lock(&cl->lock);
	s = ibc_dm_session(cl);
	if (!s) {
		s = calloc(1, sizeof(*s));
		cl->family_slot[IBC_FAMILY_DM] = s;
	}
	if (s) {
		s->gets++;
		/* The reply that carried the status page may have been
		 * lost (its call timed out): ask for it again until one
		 * has mapped it. */
		if (alloc)
			req->dm_alloc->want_status = !s->status;
		else
			req->dm_import->want_status = !s->status;
	}
	pthread_mutex_unlock(&cl->lock);
	if (!s) {
		err = ibc_set_error(-ENOMEM, "out of memory");
		goto out;
	}
	err = ibc_dm_get_entered(ctx, req, alloc, ret_dm);
	pthread_mutex_lock(&cl->lock);
	/* The records were for the gets in flight: none is left. */
	if (--s->gets == 0)
		s->n_unmatched = 0;
	pthread_mutex_unlock(&cl->lock);
out:
	ibc_ctx_leave(ctx);
	return err;
}

IBC_EXPORT int ibc_dm_alloc_ex(struct ibc_ctx *ctx,
			       const struct ibc_dm_attr *attr,
			       struct ibc_dm **ret_dm)
{
	Rdmab__DmAllocRequest q = RDMAB__DM_ALLOC_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	int err;

	if (!ctx || !attr || !ret_dm)
		return ibc_set_error(-EINVAL, "ctx, attr or ret_dm is NULL");
	if (attr->comp_mask)
		return ibc_set_error(-EINVAL,
				     "ibc_dm_attr.comp_mask 0x%x: no bits "
				     "are known in this version",
				     attr->comp_mask);
	err = ibc_dm_ctx_check(ctx);
	if (err < 0)
		return err;
	/* Lengths, alignment and flags are the broker's and the device's
	 * to judge, with the sentence that names the limit. */
	q.context_id = ctx->caps.context_id;
	q.length = attr->length;
	q.log_align_req = attr->log_align_req;
	q.flags = attr->flags;
	req.body_case = RDMAB__REQUEST__BODY_DM_ALLOC;
	req.dm_alloc = &q;
	return ibc_dm_get(ctx, &req, true, ret_dm);
}

IBC_EXPORT int ibc_dm_alloc(struct ibc_ctx *ctx, size_t length,
			    uint32_t log_align_req, struct ibc_dm **ret_dm)
{
	struct ibc_dm_attr attr = {
		.length = length,
		.log_align_req = log_align_req,
	};

	return ibc_dm_alloc_ex(ctx, &attr, ret_dm);
}

IBC_EXPORT int ibc_dm_import(struct ibc_ctx *ctx, uint32_t handle,
			     struct ibc_dm **ret_dm)
{
	Rdmab__DmImportRequest q = RDMAB__DM_IMPORT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	int err;

	if (!ctx || !ret_dm)
		return ibc_set_error(-EINVAL, "ctx or ret_dm is NULL");
	err = ibc_dm_ctx_check(ctx);
	if (err < 0)
		return err;
	q.context_id = ctx->caps.context_id;
	q.handle = handle;
	req.body_case = RDMAB__REQUEST__BODY_DM_IMPORT;
	req.dm_import = &q;
	return ibc_dm_get(ctx, &req, false, ret_dm);
}

static int ibc_dm_check_mrs(struct ibc_dm *dm, const char *what)
{
	unsigned int mrs;

	/* An event's handler may be deregistering them meanwhile. */
	pthread_mutex_lock(&dm->ctx->lock);
	mrs = dm->mrs;
	pthread_mutex_unlock(&dm->ctx->lock);
	if (mrs)
		return ibc_set_error(-EBUSY,
				     "DM %llu has %u MR%s of this process on "
				     "it: deregister them before the %s",
				     (unsigned long long)dm->id, mrs,
				     mrs == 1 ? "" : "s", what);
	return 0;
}

/* Local cleanup first, then the broker is told, unless it knows already
 * (@told: the free's reply; or after an event, which told it). */
static void ibc_dm_put(struct ibc_dm *dm, bool told)
{
	struct ibc_ctx *ctx = dm->ctx;
	uint64_t id = dm->id, oid = dm->res.id;
	bool owner;

	pthread_mutex_lock(&ctx->lock);
	told = told || dm->gone;
	ibc_dm_drop_local(dm, ENODEV, "the DM was unimported");
	if (dm->prev)
		dm->prev->next = dm->next;
	else
		ibc_dm_set_first(ctx, dm->next);
	if (dm->next)
		dm->next->prev = dm->prev;
	/* An event being handled on @dm frees it once done with it. */
	dm->unlisted = true;
	owner = !dm->event_refs;
	pthread_mutex_unlock(&ctx->lock);
	if (!told)
		ibc_dm_tell(ctx->client, RDMAB__REQUEST__BODY_DM_UNIMPORT, id,
			    oid, true);
	if (owner)
		ibc_dm_release(dm);
}

IBC_EXPORT int ibc_dm_unimport(struct ibc_dm *dm)
{
	int err;

	if (!dm)
		return ibc_set_error(-EINVAL, "dm is NULL");
	if (ibc_stale(dm->ctx->client))
		return ibc_stale_error(dm->ctx->client);
	err = ibc_dm_check_mrs(dm, "unimport");
	if (err < 0)
		return err;
	ibc_dm_put(dm, false);
	ibc_clear_error();
	return 0;
}

IBC_EXPORT int ibc_dm_free(struct ibc_dm *dm)
{
	Rdmab__DmIdRequest q = RDMAB__DM_ID_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct ibc_reply r;
	bool told;
	int err, gone;

	if (!dm)
		return ibc_set_error(-EINVAL, "dm is NULL");
	/* Inherited through fork(): the parent's DM, whatever its MRs. */
	if (ibc_stale(dm->ctx->client))
		return ibc_stale_error(dm->ctx->client);
	err = ibc_dm_check_mrs(dm, "free");
	if (err < 0)
		return err;
	gone = __atomic_load_n(&dm->gone, __ATOMIC_ACQUIRE);
	if (gone == ESTALE)
		return ibc_set_error(-ESTALE, "%s", dm->gone_why);
	if (gone)
		return ibc_set_error(-ENODEV, "%s: unimport it", dm->gone_why);
	if (*dm->status)
		return ibc_set_error(-ENODEV,
				     "DM %llu was revoked by an administrator: "
				     "unimport it",
				     (unsigned long long)dm->id);
	/* The broker decides (EPERM leaves the DM as it was); its yes ends
	 * this import too, and the DM goes once every other holder lets
	 * go. */
	q.dm_id = dm->id;
	q.object_id = dm->res.id;
	req.body_case = RDMAB__REQUEST__BODY_DM_FREE;
	req.dm_free = &q;
	err = ibc_call(dm->ctx->client, &req, 0, &r);
	if (err < 0)
		return err;
	told = ibc_dm_import_ended(&r);
	ibc_reply_free(&r);
	ibc_dm_put(dm, told);
	ibc_clear_error();
	return 0;
}

static int ibc_dm_admin(struct ibc_client *client, unsigned int body,
			uint64_t dm_id)
{
	Rdmab__DmIdRequest q = RDMAB__DM_ID_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct ibc_reply r;
	int err;

	if (!client)
		return ibc_set_error(-EINVAL, "client is NULL");
	q.dm_id = dm_id;
	req.body_case = body;
	/* One body type for both. */
	req.dm_admin_free = &q;
	err = ibc_call(client, &req, 0, &r);
	if (err < 0)
		return err;
	ibc_reply_free(&r);
	ibc_clear_error();
	return 0;
}

IBC_EXPORT int ibc_admin_dm_free(struct ibc_client *client, uint64_t dm_id)
{
	return ibc_dm_admin(client, RDMAB__REQUEST__BODY_DM_ADMIN_FREE, dm_id);
}

IBC_EXPORT int ibc_admin_dm_revoke(struct ibc_client *client, uint64_t dm_id)
{
	return ibc_dm_admin(client, RDMAB__REQUEST__BODY_DM_REVOKE, dm_id);
}

IBC_EXPORT uint32_t ibc_dm_handle(const struct ibc_dm *dm)
{
	return dm ? dm->handle : 0;
}

IBC_EXPORT uint64_t ibc_dm_id(const struct ibc_dm *dm)
{
	return dm ? dm->id : 0;
}

IBC_EXPORT size_t ibc_dm_length(const struct ibc_dm *dm)
{
	return dm ? (size_t)dm->length : 0;
}

/* The sentence of a failed check, off the data path. */
static __attribute__((noinline, cold)) int
ibc_dm_check_fail(const struct ibc_dm *dm, uint64_t off, size_t len)
{
	int gone;

	if (!dm)
		return ibc_set_error(-EINVAL, "dm is NULL");
	gone = __atomic_load_n(&dm->gone, __ATOMIC_ACQUIRE);
	if (gone)
		return ibc_set_error(-gone, "%s", dm->gone_why);
	if (*dm->status)
		return ibc_set_error(-ENODEV,
				     "DM %llu was revoked by an administrator: "
				     "unimport it",
				     (unsigned long long)dm->id);
	if (off > dm->length || len > dm->length - off)
		return ibc_set_error(-EFAULT,
				     "%zu bytes at offset %llu pass the end "
				     "of DM %llu (%llu bytes)",
				     len, (unsigned long long)off,
				     (unsigned long long)dm->id,
				     (unsigned long long)dm->length);
	return ibc_set_error(-EINVAL,
			     "device memory is accessed in 4-byte words: "
			     "offset %llu and length %zu must be multiples "
			     "of 4",
			     (unsigned long long)off, len);
}

/* mlx5's checks in mlx5's order, the bounds first and without the wrap
 * mlx5's own offset + length can make. */
static inline __attribute__((always_inline)) int
ibc_dm_check(const struct ibc_dm *dm, uint64_t off, size_t len)
{
	if (__builtin_expect(
		    !dm || __atomic_load_n(&dm->gone, __ATOMIC_ACQUIRE) ||
			    *dm->status || off > dm->length ||
			    len > dm->length - off || ((off | len) & 3),
		    0))
		return ibc_dm_check_fail(dm, off, len);
	return 0;
}

IBC_EXPORT int ibc_dm_write(struct ibc_dm *dm, uint64_t dm_offset,
			    const void *src, size_t length)
{
	int err = ibc_dm_check(dm, dm_offset, length);

	if (err < 0)
		return err;
	return dm->ops->write(dm, dm_offset, src, length);
}

IBC_EXPORT int ibc_dm_read(struct ibc_dm *dm, void *dst, uint64_t dm_offset,
			   size_t length)
{
	int err = ibc_dm_check(dm, dm_offset, length);

	if (err < 0)
		return err;
	return dm->ops->read(dm, dst, dm_offset, length);
}

IBC_EXPORT struct ibv_dm *ibc_verbs_dm(struct ibc_dm *dm)
{
	struct ibv_dm *vdm;
	int gone;

	if (!dm) {
		ibc_set_error(-EINVAL, "dm is NULL");
		errno = EINVAL;
		return NULL;
	}
	/* Under the lock every unimport holds: gone and the import agree. */
	pthread_mutex_lock(&dm->ctx->lock);
	gone = __atomic_load_n(&dm->gone, __ATOMIC_ACQUIRE);
	vdm = dm->vdm;
	pthread_mutex_unlock(&dm->ctx->lock);
	if (gone) {
		ibc_set_error(-gone, "%s", dm->gone_why);
		errno = gone;
		return NULL;
	}
	if (!vdm) {
		ibc_set_error(-EOPNOTSUPP,
			      "%s is the soft device: it has no struct "
			      "ibv_dm",
			      dm->ctx->caps.device);
		errno = EOPNOTSUPP;
	}
	return vdm;
}

/* An MR on the DM whose resource is @res went: a failed ibc_reg_dm_mr(),
 * or the family's on_gone hook (the application's ibc_dereg_mr()). */
static void ibc_dm_mr_gone(struct ibc_family_res *res)
{
	struct ibc_dm *dm =
		(struct ibc_dm *)((char *)res - offsetof(struct ibc_dm, res));

	pthread_mutex_lock(&dm->ctx->lock);
	dm->mrs--;
	pthread_mutex_unlock(&dm->ctx->lock);
}

IBC_EXPORT int ibc_reg_dm_mr(struct ibc_dm *dm, uint64_t dm_offset,
			     size_t length, unsigned int access,
			     struct ibc_mr **ret_mr)
{
	struct ibc_obj_args a = { .attr = RDMAB__OBJ_ATTR__INIT };
	struct ibc_obj_result res = { .attr = RDMAB__OBJ_ATTR__INIT };
	struct ibc_ctx *ctx;
	struct ibc_mr *mr;
	int err, gone;

	if (!dm || !ret_mr)
		return ibc_set_error(-EINVAL, "dm or ret_mr is NULL");
	gone = __atomic_load_n(&dm->gone, __ATOMIC_ACQUIRE);
	if (gone)
		return ibc_set_error(-gone, "%s", dm->gone_why);
	/* ibv_reg_dm_mr's rules; the device checks them again. */
	if (!(access & IBV_ACCESS_ZERO_BASED))
		return ibc_set_error(-EINVAL, "an MR on device memory needs "
					      "IBV_ACCESS_ZERO_BASED");
	if (!length || dm_offset > dm->length ||
	    length > dm->length - dm_offset)
		return ibc_set_error(-EINVAL,
				     "%zu bytes at offset %llu are not inside "
				     "DM %llu (%llu bytes)",
				     length, (unsigned long long)dm_offset,
				     (unsigned long long)dm->id,
				     (unsigned long long)dm->length);
	ctx = dm->ctx;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return ibc_set_error(-ENOMEM, "out of memory");
	mr->o.ctx = ctx;
	mr->o.kind = IBC_OBJ_MR;
	/* The MR is on @dm: ibc_dm_mr_gone() when it goes. */
	mr->o.on = &dm->res;
	a.attr.mr_addr = dm_offset;
	a.attr.mr_length = (uint64_t)length;
	a.attr.mr_access = access;
	/* Counted first, under the lock an event's unimport takes
	 * (ibc_dm_end_locked()): an unimport meanwhile is EBUSY, an event
	 * waits for the MR, and the import read here stays. */
	pthread_mutex_lock(&ctx->lock);
	err = __atomic_load_n(&dm->gone, __ATOMIC_ACQUIRE);
	if (!err) {
		dm->mrs++;
		a.parent = dm->vdm;
	}
	pthread_mutex_unlock(&ctx->lock);
	if (err) {
		free(mr);
		return ibc_set_error(-err, "%s", dm->gone_why);
	}
	err = ibc_obj_create(&mr->o, &a, &res);
	if (err < 0) {
		ibc_dm_mr_gone(&dm->res);
		free(mr);
		return err;
	}
	mr->lkey = res.lkey;
	mr->rkey = res.rkey;
	*ret_mr = mr;
	return 0;
}

/* --- events and teardown ------------------------------------------------ */

/* Revoked: this process's MRs on @dm go (their structures stay for the
 * application's ibc_dereg_mr, which then only frees them). */
static void ibc_dm_revoke_mrs(struct ibc_ctx *ctx, struct ibc_dm *dm)
{
	for (;;) {
		struct ibc_obj *o;

		pthread_mutex_lock(&ctx->lock);
		for (o = ctx->objs; o; o = o->next)
			if (o->kind == IBC_OBJ_MR && o->on == &dm->res &&
			    !o->dead && !o->destroying)
				break;
		if (o)
			o->destroying = true;
		pthread_mutex_unlock(&ctx->lock);
		if (!o)
			return;
		/* The broker's answer changes nothing: the MR is this
		 * process's no more either way. Counted as a destroy in
		 * flight, so that a removal or rekey dispatched meanwhile
		 * waits before it closes the device. */
		ibc_ctx_enter(ctx, false);
		ctx->ops->destroy(o);
		ibc_ctx_leave(ctx);
		pthread_mutex_lock(&ctx->lock);
		o->destroying = false;
		o->dead = true;
		o->vobj = NULL;
		o->on = NULL;
		dm->mrs--;
		pthread_mutex_unlock(&ctx->lock);
	}
}

#define IBC_DM_UNMATCHED_MAX 256

/* Record event @seen for DM @id, which found no import, in the session's
 * @s; with the client's lock held. An entry is never wrong: the broker
 * takes no new import of a DM after either event. Out of memory, the
 * import in flight lives on as if the event had come before this fix-up
 * existed: until unimported. */
static void ibc_dm_note_unmatched(struct ibc_dm_session *s, uint64_t id,
				  unsigned int seen)
{
	struct ibc_dm_unmatched *u;

	for (size_t i = 0; i < s->n_unmatched; i++)
		if (s->unmatched[i].dm_id == id) {
			s->unmatched[i].events |= seen;
			return;
		}
	/* Gets that overlap without end never empty it: the oldest goes,
	 * IBC_DM_UNMATCHED_MAX events after it came, which no get in
	 * flight waits out. */
	if (s->n_unmatched == IBC_DM_UNMATCHED_MAX) {
		memmove(s->unmatched, s->unmatched + 1,
			(s->n_unmatched - 1) * sizeof(*s->unmatched));
		s->n_unmatched--;
	}
	if (s->n_unmatched == s->cap_unmatched) {
		size_t cap = s->cap_unmatched ? 2 * s->cap_unmatched : 8;

		u = realloc(s->unmatched, cap * sizeof(*u));
		if (!u)
			return;
		s->unmatched = u;
		s->cap_unmatched = cap;
	}
	u = &s->unmatched[s->n_unmatched++];
	u->dm_id = id;
	u->events = seen;
}

/* The next of @cl's imports of DM @id that the event @seen was not handled
 * for yet, marked handled, and its context; NULL when none is left. The
 * import is held (event_refs): another thread's unimport leaves its
 * structure to the event's handler. */
static struct ibc_dm *ibc_dm_next_for_event(struct ibc_client *cl, uint64_t id,
					    unsigned int seen,
					    struct ibc_ctx **ret_ctx)
{
	struct ibc_dm_session *s;
	struct ibc_dm *dm = NULL;
	struct ibc_ctx *ctx;

	pthread_mutex_lock(&cl->lock);
	for (ctx = cl->ctxs; ctx && !dm; ctx = dm ? ctx : ctx->next) {
		/* Being closed: its DMs go with it (ibc_close() waits for
		 * the handlers that picked one before). */
		if (ctx->closed)
			continue;
		pthread_mutex_lock(&ctx->lock);
		for (dm = ibc_dm_first(ctx); dm; dm = dm->next)
			if (dm->id == id && !(dm->events_seen & seen))
				break;
		if (dm) {
			dm->events_seen |= seen;
			dm->event_refs++;
			ctx->event_handlers++;
		}
		pthread_mutex_unlock(&ctx->lock);
	}
	/* No import of it left here: one in flight in another thread looks
	 * here once its DM is listed (ibc_dm_catch_up). */
	s = ibc_dm_session(cl);
	if (!dm && s && s->gets)
		ibc_dm_note_unmatched(s, id, seen);
	pthread_mutex_unlock(&cl->lock);
	*ret_ctx = ctx;
	return dm;
}

/* The handler is done with @ctx: ibc_close() may free it. */
static void ibc_dm_handler_done(struct ibc_client *cl, struct ibc_ctx *ctx)
{
	pthread_mutex_lock(&cl->lock);
	if (--ctx->event_handlers == 0 && ctx->closed)
		pthread_cond_broadcast(&cl->cond);
	pthread_mutex_unlock(&cl->lock);
}

/* Every import of the DM in this session is told, each ending on its own
 * (the broker sends a session one event a DM). */
void ibc_dm_after_event(struct ibc_client *cl, enum ibc_event_type type,
			uint64_t id, const char *why)
{
	unsigned int seen = 1u << (type & 31);
	struct ibc_ctx *ctx;
	struct ibc_dm *dm;

	while ((dm = ibc_dm_next_for_event(cl, id, seen, &ctx))) {
		uint64_t oid = dm->res.id;
		bool drop, release;

		/* Revoked: the MRs go too. Free pending: MRs of this
		 * process keep it. */
		if (type == IBC_EVENT_DM_REVOKED)
			ibc_dm_revoke_mrs(ctx, dm);
		pthread_mutex_lock(&ctx->lock);
		drop = ibc_dm_end_locked(dm, why);
		release = --dm->event_refs == 0 && dm->unlisted;
		pthread_mutex_unlock(&ctx->lock);
		if (drop)
			ibc_dm_tell(cl, RDMAB__REQUEST__BODY_DM_UNIMPORT, id,
				    oid, false);
		if (release)
			ibc_dm_release(dm);
		ibc_dm_handler_done(cl, ctx);
	}
}

static void ibc_dm_ctx_drop(struct ibc_ctx *ctx, int err, const char *why)
{
	pthread_mutex_lock(&ctx->lock);
	for (struct ibc_dm *dm = ibc_dm_first(ctx); dm; dm = dm->next)
		ibc_dm_drop_local(dm, err, why);
	pthread_mutex_unlock(&ctx->lock);
}

static void ibc_dm_ctx_teardown(struct ibc_ctx *ctx)
{
	struct ibc_client *cl = ctx->client;

	/* The broker is told without ctx->lock: sending takes the client's
	 * lock, which the event dispatch takes before ctx->lock. */
	for (;;) {
		struct ibc_dm *dm;
		uint64_t id = 0, oid = 0;

		pthread_mutex_lock(&ctx->lock);
		for (dm = ibc_dm_first(ctx); dm && dm->gone; dm = dm->next)
			;
		if (dm) {
			id = dm->id;
			oid = dm->res.id;
			ibc_dm_drop_local(dm, ENODEV, "the context was closed");
		}
		pthread_mutex_unlock(&ctx->lock);
		if (!id)
			break;
		ibc_dm_tell(cl, RDMAB__REQUEST__BODY_DM_UNIMPORT, id, oid,
			    false);
	}
}

static void ibc_dm_ctx_free(struct ibc_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	while (ibc_dm_first(ctx)) {
		struct ibc_dm *dm = ibc_dm_first(ctx);

		ibc_dm_set_first(ctx, dm->next);
		ibc_dm_drop_local(dm, ENODEV, "the context was closed");
		ibc_dm_release(dm);
	}
	pthread_mutex_unlock(&ctx->lock);
}

/* --- the events ---------------------------------------------------------- */

static struct ibc_queued_event *ibc_dm_free_pending_read(struct ibc_client *cl,
							 const Rdmab__Event *ev)
{
	return ibc_queue_event(cl, IBC_EVENT_DM_FREE_PENDING,
			       ev->dm_free_pending->reason, NULL);
}

static struct ibc_queued_event *ibc_dm_revoked_read(struct ibc_client *cl,
						    const Rdmab__Event *ev)
{
	return ibc_queue_event(cl, IBC_EVENT_DM_REVOKED, ev->dm_revoked->reason,
			       NULL);
}

static void ibc_dm_event_after(struct ibc_client *cl,
			       const struct ibc_event *ev)
{
	ibc_dm_after_event(cl, ev->type, ev->object_id, ev->message);
}

static const struct ibc_event_handler ibc_dm_free_pending_event = {
	.body = RDMAB__EVENT__BODY_DM_FREE_PENDING,
	.read = ibc_dm_free_pending_read,
	.after = ibc_dm_event_after,
};

static const struct ibc_event_handler ibc_dm_revoked_event = {
	.body = RDMAB__EVENT__BODY_DM_REVOKED,
	.read = ibc_dm_revoked_read,
	.after = ibc_dm_event_after,
};

static const struct ibc_event_handler *const ibc_dm_events[] = {
	&ibc_dm_free_pending_event,
	&ibc_dm_revoked_event,
	NULL,
};

const struct ibc_family ibc_dm_family = {
	.name = "dm",
	.kind = IBC_OBJ_DM,
	.kind_name = "DM",
	.events = ibc_dm_events,
	.client_free = ibc_dm_client_free,
	.ctx_drop = ibc_dm_ctx_drop,
	.ctx_teardown = ibc_dm_ctx_teardown,
	.ctx_free = ibc_dm_ctx_free,
	.fork_prepare = ibc_dm_fork_prepare,
	.fork_stale = ibc_dm_fork_stale,
	.fork_child = ibc_dm_fork_child,
	.quota = IBC_FAMILY_FIELD(Rdmab__QuotaInfo, dm_bytes, struct ibc_quota,
				  dm_bytes),
	.device_info = ibc_dm_device_info,
	.on_gone = ibc_dm_mr_gone,
};
