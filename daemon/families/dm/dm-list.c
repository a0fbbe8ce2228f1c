// SPDX-License-Identifier: MIT
/*
 * The DM listing (dm.h): each DM with its holders and the MRs on it (its
 * list of them, struct dm_mr), and what blocks its free; per device what the
 * caller may know of its memory (dm_view()). A member's listing walks its
 * domain's DMs only.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "daemon/registry/client.h"
#include "daemon/registry/ctx.h"
#include "daemon/server/handler.h"
#include "daemon/families/dm/dm.h"
#include "daemon/registry/domain.h"
#include "daemon/registry/objects.h"
#include "daemon/registry/core.h"

/* A DmInfo is under 700 bytes with the longest names, 16 importers and 8
 * MRs. */
#define DM_LIST_PAGE 64
#define DM_LIST_IMPORTERS 16
#define DM_LIST_MRS 8

/* Add "MR 12 of client 3 (pid 456)" to @text at @off, only whole: the
 * new offset (@size once full). */
static size_t dm_mr_text(char *text, size_t size, size_t off,
			 const struct obj *o)
{
	const struct obj_owner *ow = o->owner;
	char pid[24];
	int w;

	if (off >= size)
		return size;
	if (ow->state == OWNER_DEAD)
		snprintf(pid, sizeof(pid), "gone");
	else
		snprintf(pid, sizeof(pid), "pid %d", (int)ow->pid);
	w = snprintf(text + off, size - off,
		     "%sMR %" PRIu64 " of client %" PRIu64 " (%s)",
		     off ? ", " : "", o->id, ow->client_id, pid);
	if (w < 0 || (size_t)w >= size - off) {
		text[off] = '\0';
		return size;
	}
	return off + (size_t)w;
}

unsigned int dm_mrs(struct core *core, const struct dm *dm,
		    Rdmab__DmMrInfo *list, unsigned int max, char *text,
		    size_t size)
{
	const struct dm_mr *mr;
	unsigned int n = 0;
	size_t off = 0;

	if (text)
		text[0] = '\0';
	TAILQ_FOREACH(mr, &dm->mrs, link) {
		const struct obj *o = mr->o;
		const struct obj_owner *ow = o->owner;

		core->list_visits++;
		if (n < max) {
			rdmab__dm_mr_info__init(&list[n]);
			list[n].object_id = o->id;
			list[n].client_id = ow->client_id;
			list[n].pid = (uint32_t)ow->pid;
			list[n].gone = ow->state == OWNER_DEAD;
		}
		n++;
		if (text)
			off = dm_mr_text(text, size, off, o);
	}
	return n;
}

static const char *dm_domain_name(const struct dm *dm)
{
	return dm->domain->name;
}

struct dm_page {
	Rdmab__DmInfo info;
	uint64_t importers[DM_LIST_IMPORTERS];
	Rdmab__DmMrInfo mrs[DM_LIST_MRS];
	Rdmab__DmMrInfo *mr_ptrs[DM_LIST_MRS];
	/* As long as struct ibc_dm_info's, so that no entry is cut. */
	char blocked_by[160];
};

static void dm_info(struct core *core, struct dm_page *p, const struct dm *dm)
{
	Rdmab__DmInfo *di = &p->info;
	uint64_t *importers = p->importers;
	unsigned int shown;

	rdmab__dm_info__init(di);
	di->id = dm->id;
	di->domain = (char *)dm_domain_name(dm);
	di->device = dm->ctx->dev->name;
	di->handle = dm->dd.handle;
	di->length = dm->length;
	di->pages = dm->pages;
	di->log_align = dm->log_align;
	/* Recorded at the alloc: the DM may outlive the session. */
	di->allocator = dm->allocator_id;
	di->allocator_pid = (uint32_t)dm->allocator_pid;
	di->allocator_gone = !dm->allocator;
	di->persistent = dm->persistent;
	if (dm->revoked)
		di->state = RDMAB__DM_INFO__STATE__REVOKED;
	else if (dm->blocked)
		di->state = RDMAB__DM_INFO__STATE__FREE_BLOCKED;
	else if (dm->free_asked)
		di->state = RDMAB__DM_INFO__STATE__FREE_PENDING;
	else
		di->state = RDMAB__DM_INFO__STATE__LIVE;
	di->blocked_by = (char *)dm->blocked_by;
	for (unsigned int i = 0; i < dm->n_holds && i < DM_LIST_IMPORTERS; i++)
		importers[di->n_importers++] = dm->holds[i].o->owner->client_id;
	di->importers = importers;
	di->mrs = dm_mrs(core, dm, p->mrs, DM_LIST_MRS, p->blocked_by,
			 sizeof(p->blocked_by));
	shown = di->mrs < DM_LIST_MRS ? di->mrs : DM_LIST_MRS;
	for (unsigned int i = 0; i < shown; i++)
		p->mr_ptrs[i] = &p->mrs[i];
	di->mr_list = p->mr_ptrs;
	di->n_mr_list = shown;
	/* Blocked: who blocks it, rather than the device's sentence (an MR
	 * made behind the broker's back has no record: the sentence it
	 * is). */
	if (dm->blocked && di->mrs)
		di->blocked_by = p->blocked_by;
}

static int h_list_dms(struct client *c, const Rdmab__Request *req,
		      struct wire_fds *fds, struct reply *r)
{
	struct core *core = c->core;
	bool admin = policy_is_admin(core, c);
	uint32_t off = req->list_dms->offset, idx = 0;
	Rdmab__ListDmsReply *out = reply_alloc(r, sizeof(*out));
	struct dm_page *pages = reply_alloc(r, sizeof(*pages) * DM_LIST_PAGE);
	Rdmab__DmInfo **ptrs = reply_alloc(r, sizeof(*ptrs) * DM_LIST_PAGE);
	size_t nd = core->devices.n;
	Rdmab__DmDeviceInfo *devs = reply_alloc(r, sizeof(*devs) * (nd + 1));
	Rdmab__DmDeviceInfo **dptrs = reply_alloc(r, sizeof(*dptrs) * (nd + 1));
	struct dm *dm;
	size_t n = 0;

	if (!out || !pages || !ptrs || !devs || !dptrs)
		return reply_error(r, -ENOMEM, "out of memory");
	rdmab__list_dms_reply__init(out);
	/* A member walks its domain's DMs only: what other domains hold
	 * costs it nothing (and so shows in no timing). */
	dm = admin ? TAILQ_FIRST(&dm_state(core)->dms) :
		     TAILQ_FIRST(&dm_domain_of(c->domain)->dms);
	for (; dm;
	     dm = admin ? TAILQ_NEXT(dm, link) : TAILQ_NEXT(dm, domain_link)) {
		core->list_visits++;
		if (idx++ < off || n == DM_LIST_PAGE)
			continue;
		dm_info(core, &pages[n], dm);
		ptrs[n] = &pages[n].info;
		n++;
	}
	for (size_t i = 0; i < nd; i++) {
		const struct device *dev = &core->devices.dev[i];
		struct dm_view v;

		dm_view(core, c, dev, &v);
		rdmab__dm_device_info__init(&devs[i]);
		devs[i].device = (char *)dev->name;
		devs[i].reserved_bytes = v.reserved;
		devs[i].device_wide = v.device_wide;
		devs[i].domain_used = v.domain_used;
		devs[i].domain_limit = v.domain_limit;
		devs[i].room = v.room;
		devs[i].max_dm_size = dev->caps.max_dm_size;
		dptrs[i] = &devs[i];
	}
	out->dms = ptrs;
	out->n_dms = n;
	out->total = idx;
	out->devices = dptrs;
	out->n_devices = nd;
	r->msg.body_case = RDMAB__REPLY__BODY_LIST_DMS;
	r->msg.list_dms = out;
	return 0;
}

void dm_device_caps(const struct client *c, const struct device *dev,
		    Rdmab__DeviceCaps *caps)
{
	struct dm_view v;

	caps->dm_reason = (char *)dev->caps.dm_reason;
	dm_view(c->core, c, dev, &v);
	caps->dm_reserved = v.reserved;
	caps->dm_device_wide = v.device_wide;
	caps->dm_domain_used = v.domain_used;
	caps->dm_domain_limit = v.domain_limit;
	caps->dm_room = v.room;
}

const char *dm_metric_state_name(enum dm_metric_state s)
{
	static const char *const names[DM_METRIC_STATES] = {
		[DM_METRIC_IN_USE] = "in_use",
		[DM_METRIC_FREE_PENDING] = "free_pending",
		[DM_METRIC_BLOCKED] = "free_blocked",
		[DM_METRIC_REVOKED] = "revoked",
	};

	return s < DM_METRIC_STATES ? names[s] : "?";
}

void dm_domain_figures(const struct core *core, const struct domain *d,
		       struct dm_figures *ret)
{
	struct dm_figures f = { 0 };
	const struct dm *dm;

	TAILQ_FOREACH(dm, &dm_domain_of(d)->dms, domain_link) {
		size_t dev = (size_t)(dm->ctx->dev - core->devices.dev);

		f.dms[dm->revoked    ? DM_METRIC_REVOKED :
		      dm->blocked    ? DM_METRIC_BLOCKED :
		      dm->free_asked ? DM_METRIC_FREE_PENDING :
				       DM_METRIC_IN_USE]++;
		if (dev < DEVICE_MAX)
			f.bytes[dev] += dm->length;
	}
	*ret = f;
}

const struct handler dm_h_list = { "list-dms", h_list_dms, H_NEEDS_HELLO };
