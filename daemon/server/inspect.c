// SPDX-License-Identifier: MIT
/*
 * The inspection family: devices, domains and clients, a page at a time so
 * that every reply fits in a packet. Who is not an administrator sees only
 * its own domain and its members.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "daemon/registry/cgroup.h"
#include "daemon/registry/client.h"
#include "daemon/registry/core.h"
#include "daemon/registry/ctx.h"
#include "daemon/server/handler.h"
#include "daemon/registry/domain.h"
#include "daemon/registry/objects.h"
#include "daemon/registry/unaccounted.h"
#include "daemon/families/family.h"

/* Entries per reply: a ClientInfo is ~120 bytes, a DomainInfo with a few
 * context ids ~200: well inside 64 KiB. */
#define LIST_PAGE 64

/* The daemon's description of a device has each of the lists' fields,
 * with the list's type (the wire's may be wider: protobuf's bool). */
#define INSPECT_CAPS_IS(name, type)                                            \
	_Static_assert(_Generic(((struct device_caps *)0)->name, type : 1,     \
				default : 0),                                  \
		       "struct device_caps's " #name                           \
		       " is not the list's " #type);
#define INSPECT_CAPS_NUMBER_IS(name, type, fmt) INSPECT_CAPS_IS(name, type)
#define INSPECT_CAPS_FLAG_IS(name) INSPECT_CAPS_IS(name, bool)
CAPS_NUMBERS(INSPECT_CAPS_NUMBER_IS)
CAPS_FLAGS(INSPECT_CAPS_FLAG_IS)
#undef INSPECT_CAPS_FLAG_IS
#undef INSPECT_CAPS_NUMBER_IS
#undef INSPECT_CAPS_IS

void inspect_device_info(const struct client *c, const struct device *dev,
			 Rdmab__DeviceInfo *info, Rdmab__DeviceCaps *caps)
{
	rdmab__device_info__init(info);
	rdmab__device_caps__init(caps);
	info->name = (char *)dev->name;
	info->kind = (char *)device_kind_name(dev->kind);
	info->removed = dev->removed;
	info->transport = (char *)dev->caps.transport;
	caps->import = dev->caps.import;
	caps->ports = dev->caps.ports;
#define INSPECT_CAPS_COPY(name, ...) caps->name = dev->caps.name;
	CAPS_NUMBERS(INSPECT_CAPS_COPY)
	CAPS_FLAGS(INSPECT_CAPS_COPY)
#undef INSPECT_CAPS_COPY
	families_device_caps(c, dev, caps);
	info->caps = caps;
}

int h_list_devices(struct client *c, const Rdmab__Request *req,
		   struct wire_fds *fds, struct reply *r)
{
	struct device_list *list = &c->core->devices;
	uint32_t off = req->list_devices->offset;
	Rdmab__ListDevicesReply *out = reply_alloc(r, sizeof(*out));
	Rdmab__DeviceInfo *infos, **ptrs;
	Rdmab__DeviceCaps *caps;
	size_t n = off < list->n ? list->n - off : 0;

	infos = reply_alloc(r, sizeof(*infos) * (n + 1));
	caps = reply_alloc(r, sizeof(*caps) * (n + 1));
	ptrs = reply_alloc(r, sizeof(*ptrs) * (n + 1));
	if (!out || !infos || !caps || !ptrs)
		return reply_error(r, -ENOMEM, "out of memory");
	rdmab__list_devices_reply__init(out);
	for (size_t i = 0; i < n; i++) {
		inspect_device_info(c, &list->dev[off + i], &infos[i],
				    &caps[i]);
		ptrs[i] = &infos[i];
	}
	out->devices = ptrs;
	out->n_devices = n;
	out->total = (uint32_t)list->n;
	r->msg.body_case = RDMAB__REPLY__BODY_LIST_DEVICES;
	r->msg.list_devices = out;
	return 0;
}

/* A QuotaInfo of the core's quotas; the families' are quota_family()'s. */
static void quota_info(Rdmab__QuotaInfo *qi, uint32_t objects, uint32_t clients)
{
	rdmab__quota_info__init(qi);
	qi->objects = objects;
	qi->clients = clients;
}

/* Family @f's quota into @qi: @n in the field it names. */
static void quota_family(Rdmab__QuotaInfo *qi, const struct family *f,
			 uint64_t n)
{
	char *field = (char *)qi + f->quota_info_field;

	if (f->quota_info_size == sizeof(uint64_t))
		*(uint64_t *)field = n;
	else
		*(uint32_t *)field = (uint32_t)n;
}

/* What @d itself holds of each family's quota (a private domain's
 * charges go to its pool, whose listing shows them) and its limit. */
static void quota_families(const struct domain *d, Rdmab__QuotaInfo *used,
			   Rdmab__QuotaInfo *limit)
{
	for (unsigned int i = 0; i < FAMILY_COUNT; i++) {
		const struct family *f = families[i];

		if (!f->quota_name)
			continue;
		quota_family(used, f, d->used.family[i]);
		if (f->quota_limit)
			quota_family(limit, f, f->quota_limit(d));
	}
}

struct domain_page {
	Rdmab__DomainInfo info;
	Rdmab__QuotaInfo used, limit;
	uint64_t ctx_ids[8];
	char cgroup[CGROUP_SHOWN_MAX];
};

int h_list_domains(struct client *c, const Rdmab__Request *req,
		   struct wire_fds *fds, struct reply *r)
{
	struct core *core = c->core;
	bool admin = policy_is_admin(core, c);
	uint32_t off = req->list_domains->offset, idx = 0;
	Rdmab__ListDomainsReply *out = reply_alloc(r, sizeof(*out));
	struct domain_page *pages;
	Rdmab__DomainInfo **ptrs;
	struct domain *d;
	size_t n = 0;

	pages = reply_alloc(r, sizeof(*pages) * LIST_PAGE);
	ptrs = reply_alloc(r, sizeof(*ptrs) * LIST_PAGE);
	if (!out || !pages || !ptrs)
		return reply_error(r, -ENOMEM, "out of memory");
	rdmab__list_domains_reply__init(out);
	/* A member sees its own domain only, and walks nothing else: what
	 * other domains hold costs it nothing. */
	d = admin ? TAILQ_FIRST(&core->domains) : c->domain;
	for (; d; d = admin ? TAILQ_NEXT(d, link) : NULL) {
		struct domain_page *pg = &pages[n];
		struct dctx *x;
		size_t k = 0;

		core->list_visits++;
		if (idx++ < off || n == LIST_PAGE)
			continue;
		rdmab__domain_info__init(&pg->info);
		pg->info.name = d->name;
		pg->info.kind = (char *)domain_kind_name(d->kind);
		pg->info.members = d->used.clients;
		pg->info.contexts = d->n_ctxs;
		pg->info.retired = d->retired;
		/* A private domain draws on its cgroup's own. */
		if (domain_pool(d)->cgroup) {
			pg->info.cgroup_truncated =
				cgroup_show(pg->cgroup, domain_pool(d)->cgroup);
			pg->info.cgroup = pg->cgroup;
		}
		/* One context per device, at most DEVICE_MAX; the first 8
		 * are listed. */
		TAILQ_FOREACH(x, &d->ctxs, link) {
			struct unacc_counts uc = { 0 };

			core->list_visits++;
			if (k < 8)
				pg->ctx_ids[k++] = x->id;
			/* A listing shows what the kernel holds now. */
			unaccounted_refresh_counts(x, &uc);
			pg->info.unaccounted += x->unaccounted;
			pg->info.kernel_objects += uc.kernel;
			pg->info.registry_objects += uc.registry;
			pg->info.broker_objects += uc.broker;
			pg->info.live_intents += uc.intents;
			pg->info.internal_objects += uc.internal;
			pg->info.internal_left += uc.internal_left;
			pg->info.old_contexts += x->rekeyed;
		}
		pg->info.rekeys = d->rekeys;
		/* After the walk, which may have moved the charge. */
		quota_info(&pg->used, d->used.objects, d->used.clients);
		quota_info(&pg->limit, d->limit.objects, d->limit.clients);
		quota_families(d, &pg->used, &pg->limit);
		pg->info.used = &pg->used;
		pg->info.limit = &pg->limit;
		for (unsigned int i = 0; i < FAMILY_COUNT; i++)
			if (families[i]->domain_info)
				families[i]->domain_info(core, d, &pg->info);
		pg->info.context_ids = pg->ctx_ids;
		pg->info.n_context_ids = k;
		ptrs[n++] = &pg->info;
	}
	out->domains = ptrs;
	out->n_domains = n;
	out->total = idx;
	r->msg.body_case = RDMAB__REPLY__BODY_LIST_DOMAINS;
	r->msg.list_domains = out;
	return 0;
}

/* The first client @c may list and the next: a member walks its own
 * domain's clients only, so that other domains' cost it nothing. */
static struct client *inspect_first(struct client *c, bool admin)
{
	return admin ? c->core->ops->next(c->core, NULL) :
		       TAILQ_FIRST(&c->domain->members);
}

static struct client *inspect_next(struct client *c, struct client *o,
				   bool admin)
{
	return admin ? c->core->ops->next(c->core, o) :
		       TAILQ_NEXT(o, domain_link);
}

/* Live sessions linked to @id that @c may see: a page's worth of walks,
 * bounded by the connection limit. */
static uint32_t inspect_children(struct client *c, bool admin, uint64_t id)
{
	struct client *o;
	uint32_t n = 0;

	for (o = inspect_first(c, admin); o; o = inspect_next(c, o, admin)) {
		c->core->list_visits++;
		n += o->hello_done && o->parent_id == id;
	}
	return n;
}

int h_list_clients(struct client *c, const Rdmab__Request *req,
		   struct wire_fds *fds, struct reply *r)
{
	struct core *core = c->core;
	bool admin = policy_is_admin(core, c);
	uint32_t off = req->list_clients->offset, idx = 0;
	Rdmab__ListClientsReply *out = reply_alloc(r, sizeof(*out));
	Rdmab__ClientInfo *infos, **ptrs;
	char(*cgroups)[CGROUP_SHOWN_MAX];
	struct client *o;
	size_t n = 0;

	infos = reply_alloc(r, sizeof(*infos) * LIST_PAGE);
	ptrs = reply_alloc(r, sizeof(*ptrs) * LIST_PAGE);
	cgroups = reply_alloc(r, sizeof(*cgroups) * LIST_PAGE);
	if (!out || !infos || !ptrs || !cgroups)
		return reply_error(r, -ENOMEM, "out of memory");
	rdmab__list_clients_reply__init(out);
	for (o = inspect_first(c, admin); o; o = inspect_next(c, o, admin)) {
		Rdmab__ClientInfo *ci = &infos[n];

		core->list_visits++;
		if (!o->hello_done || (!admin && o->domain != c->domain))
			continue;
		if (idx++ < off || n == LIST_PAGE)
			continue;
		rdmab__client_info__init(ci);
		ci->id = o->id;
		ci->pid = (uint32_t)o->cred.pid;
		ci->uid = o->cred.uid;
		ci->gid = o->cred.gid;
		ci->comm = o->comm;
		ci->domain = o->domain->name;
		ci->contexts = o->n_ctxs;
		ci->objects = o->owner ? o->owner->n_objs : 0;
		ci->unaccounted = o->owner ? o->owner->n_intents : 0;
		ci->requests = o->requests;
		ci->fork_state = (Rdmab__ForkState)o->fork_state;
		ci->library_version = o->library_version;
		ci->parent_id = o->parent_id;
		ci->children = inspect_children(c, admin, o->id);
		if (o->cgroup) {
			ci->cgroup_truncated =
				cgroup_show(cgroups[n], o->cgroup);
			ci->cgroup = cgroups[n];
		}
		ptrs[n++] = ci;
	}
	out->clients = ptrs;
	out->n_clients = n;
	out->total = idx;
	r->msg.body_case = RDMAB__REPLY__BODY_LIST_CLIENTS;
	r->msg.list_clients = out;
	return 0;
}
