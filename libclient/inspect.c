// SPDX-License-Identifier: MIT
/* Inspection: devices, domains, clients, objects, fetched a page at a
 * time. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libclient/client.h"
#include "common/device/caps-fields.h"

/* The public structures and the wire keep each limit written out (ABI,
 * wire); each must have every limit of the list, with the list's type. */
#define CAPS_LIMIT_IS(ptr_type, name, type)                                    \
	_Static_assert(_Generic(((ptr_type)0)->name, type : 1, default : 0),   \
		       #ptr_type "'s " #name " is not the list's " #type);
#define CAPS_LIMIT_CHECK(name, type, fmt)                                      \
	CAPS_LIMIT_IS(struct ibc_device_info *, name, type)                    \
	CAPS_LIMIT_IS(struct ibc_caps *, name, type)                           \
	CAPS_LIMIT_IS(Rdmab__DeviceCaps *, name, type)
CAPS_LIMITS(CAPS_LIMIT_CHECK)
#undef CAPS_LIMIT_CHECK
#undef CAPS_LIMIT_IS

/* Grow *list to hold @n entries of @size bytes. */
static int ibc_list_grow(void **list, size_t n, size_t size)
{
	void *p = realloc(*list, (n ? n : 1) * size);

	if (!p)
		return ibc_set_error(-ENOMEM, "out of memory");
	*list = p;
	return 0;
}

/* One page starting at @offset; the reply's body is checked against
 * @body_case. @filter: the objects' listing's. */
static int ibc_list_page(struct ibc_client *client,
			 Rdmab__Request__BodyCase body_case, uint32_t offset,
			 const struct ibc_object_filter *filter,
			 struct ibc_reply *r)
{
	Rdmab__ListObjectsRequest lo = RDMAB__LIST_OBJECTS_REQUEST__INIT;
	Rdmab__ListRequest lr = RDMAB__LIST_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	int err;

	lr.offset = offset;
	req.body_case = body_case;
	/* The other list requests share a body type. */
	switch (body_case) {
	case RDMAB__REQUEST__BODY_LIST_DEVICES:
		req.list_devices = &lr;
		break;
	case RDMAB__REQUEST__BODY_LIST_DOMAINS:
		req.list_domains = &lr;
		break;
	case RDMAB__REQUEST__BODY_LIST_OBJECTS:
		lo.offset = offset;
		if (filter && (filter->comp_mask & IBC_OBJECT_FILTER_CLIENT))
			lo.client_id = filter->client_id;
		if (filter && (filter->comp_mask & IBC_OBJECT_FILTER_DOMAIN) &&
		    filter->domain)
			lo.domain = (char *)filter->domain;
		req.list_objects = &lo;
		break;
	case RDMAB__REQUEST__BODY_LIST_DMS:
		req.list_dms = &lr;
		break;
	default:
		req.list_clients = &lr;
		break;
	}
	err = ibc_call(client, &req, 0, r);
	if (err < 0)
		return err;
	/* Request and reply cases are numbered alike. */
	if ((int)r->reply->body_case != (int)body_case) {
		ibc_reply_free(r);
		return ibc_set_error(-EPROTO,
				     "the broker answered a listing with "
				     "something else");
	}
	return 0;
}

static void ibc_copy_quota(struct ibc_quota *q, const Rdmab__QuotaInfo *qi)
{
	if (!qi)
		return;
	q->dm_bytes = qi->dm_bytes;
	q->xrcds = qi->xrcds;
	q->rss_tables = qi->rss_tables;
	q->objects = qi->objects;
	q->clients = qi->clients;
}

/* A listing's cgroup: what fits of it, and whether anything was left
 * out, by the broker or here. */
static void ibc_copy_cgroup(char *buf, size_t size, bool *ret_truncated,
			    const char *wire, bool wire_truncated)
{
	if (!wire)
		wire = "";
	*ret_truncated = wire_truncated || strlen(wire) >= size;
	snprintf(buf, size, "%s", wire);
}

void ibc_device_info_from(struct ibc_device_info *e, const Rdmab__DeviceInfo *d)
{
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", d->name);
	snprintf(e->kind, sizeof(e->kind), "%s", d->kind);
	snprintf(e->transport, sizeof(e->transport), "%s", d->transport);
	e->removed = d->removed;
	if (d->caps) {
		e->import = d->caps->import;
		e->xrc = d->caps->xrc;
		e->ports = d->caps->ports;
		e->max_dm_size = d->caps->max_dm_size;
		e->max_rss_table_size = d->caps->max_rss_table_size;
		e->rss_hash_fields = d->caps->rss_hash_fields;
		e->rss_hash_functions = d->caps->rss_hash_functions;
		e->rss_qp_types = d->caps->rss_qp_types;
#define ENTRY_CAPS_LIMIT(name, type, fmt) e->name = d->caps->name;
		CAPS_LIMITS(ENTRY_CAPS_LIMIT)
#undef ENTRY_CAPS_LIMIT
		/* Device memory. */
		e->dm_shared = d->caps->dm_shared;
		snprintf(e->dm_reason, sizeof(e->dm_reason), "%s",
			 d->caps->dm_reason ? d->caps->dm_reason : "");
		e->dm_reserved = d->caps->dm_reserved;
		e->dm_device_wide = d->caps->dm_device_wide;
		e->dm_domain_used = d->caps->dm_domain_used;
		e->dm_domain_limit = d->caps->dm_domain_limit;
		e->dm_room = d->caps->dm_room;
	}
}

/* Room for any entry the library fills, in its own version. */
union ibc_any_entry {
	struct ibc_device_info device;
	struct ibc_domain_info domain;
	struct ibc_client_entry client;
	struct ibc_object_info object;
	struct ibc_dm_info dm;
};

/* A family of listing: how many entries a page holds, and how one is
 * copied out. */
struct ibc_lister {
	Rdmab__Request__BodyCase body_case;
	const char *name;
	/* The library's size of an entry, its first version's, and its
	 * alignment. */
	size_t entry_size, entry_v0, entry_align;
	size_t (*count)(const Rdmab__Reply *reply, uint32_t *ret_total);
	void (*fill)(void *entry, const Rdmab__Reply *reply, size_t i);
};

/* The caller's entries must be sized and aligned as an array of its
 * version of the structure. */
static int ibc_check_entry_size(const struct ibc_lister *l, size_t size)
{
	int err = ibc_check_size(l->name, size, l->entry_v0);

	if (err == 0 && size % l->entry_align)
		err = ibc_set_error(-EINVAL,
				    "entries of %zu bytes are not aligned as "
				    "struct %s (%zu): pass sizeof the "
				    "structure",
				    size, l->name, l->entry_align);
	return err;
}

static int ibc_list_all(struct ibc_client *client, const struct ibc_lister *l,
			const struct ibc_object_filter *filter, void **ret_list,
			size_t size, size_t *ret_count)
{
	union ibc_any_entry e;
	uint8_t *list = NULL;
	size_t n = 0, bytes;
	int err;

	if (!client || !ret_list || !ret_count)
		return ibc_set_error(-EINVAL, "NULL argument");
	err = ibc_check_entry_size(l, size);
	if (err < 0)
		return err;
	for (;;) {
		struct ibc_reply r;
		uint32_t total = 0;
		size_t k;

		err = ibc_list_page(client, l->body_case, (uint32_t)n, filter,
				    &r);
		if (err < 0)
			goto fail;
		k = l->count(r.reply, &total);
		if (__builtin_mul_overflow(n + k, size, &bytes))
			err = ibc_set_error(-ENOMEM, "the list is too long");
		else
			err = ibc_list_grow((void **)&list, n + k, size);
		for (size_t i = 0; err == 0 && i < k; i++) {
			memset(&e, 0, sizeof(e));
			l->fill(&e, r.reply, i);
			ibc_copy_out(list + (n + i) * size, size, &e,
				     l->entry_size);
		}
		ibc_reply_free(&r);
		if (err < 0)
			goto fail;
		n += k;
		/* An empty page ends it too: the list shrank meanwhile. */
		if (n >= total || k == 0)
			break;
	}
	if (!list && ibc_list_grow((void **)&list, 0, size) < 0)
		return -ENOMEM;
	ibc_clear_error();
	*ret_list = list;
	*ret_count = n;
	return 0;
fail:
	free(list);
	return err;
}

static size_t ibc_devices_count(const Rdmab__Reply *reply, uint32_t *total)
{
	*total = reply->list_devices->total;
	return reply->list_devices->n_devices;
}

static void ibc_devices_fill(void *entry, const Rdmab__Reply *reply, size_t i)
{
	ibc_device_info_from(entry, reply->list_devices->devices[i]);
}

static size_t ibc_domains_count(const Rdmab__Reply *reply, uint32_t *total)
{
	*total = reply->list_domains->total;
	return reply->list_domains->n_domains;
}

static void ibc_domains_fill(void *entry, const Rdmab__Reply *reply, size_t i)
{
	const Rdmab__DomainInfo *d = reply->list_domains->domains[i];
	struct ibc_domain_info *e = entry;

	snprintf(e->name, sizeof(e->name), "%s", d->name);
	snprintf(e->kind, sizeof(e->kind), "%s", d->kind);
	e->members = d->members;
	e->contexts = d->contexts;
	e->retired = d->retired;
	ibc_copy_quota(&e->used, d->used);
	ibc_copy_quota(&e->limit, d->limit);
	e->unaccounted = d->unaccounted;
	e->kernel_objects = d->kernel_objects;
	e->registry_objects = d->registry_objects;
	e->broker_objects = d->broker_objects;
	e->live_intents = d->live_intents;
	e->internal_objects = d->internal_objects;
	e->internal_left = d->internal_left;
	e->xrcd_orphans = d->xrcd_orphans;
	e->old_contexts = d->old_contexts;
	e->rekeys = d->rekeys;
	ibc_copy_cgroup(e->cgroup, sizeof(e->cgroup), &e->cgroup_truncated,
			d->cgroup, d->cgroup_truncated);
}

static size_t ibc_clients_count(const Rdmab__Reply *reply, uint32_t *total)
{
	*total = reply->list_clients->total;
	return reply->list_clients->n_clients;
}

static void ibc_clients_fill(void *entry, const Rdmab__Reply *reply, size_t i)
{
	const Rdmab__ClientInfo *c = reply->list_clients->clients[i];
	struct ibc_client_entry *e = entry;

	e->id = c->id;
	e->pid = c->pid;
	e->uid = c->uid;
	e->gid = c->gid;
	snprintf(e->comm, sizeof(e->comm), "%s", c->comm);
	snprintf(e->domain, sizeof(e->domain), "%s", c->domain);
	e->contexts = c->contexts;
	e->objects = c->objects;
	e->requests = c->requests;
	e->fork_state = (enum ibc_fork_state)c->fork_state;
	snprintf(e->library_version, sizeof(e->library_version), "%s",
		 c->library_version);
	e->unaccounted = c->unaccounted;
	e->parent_id = c->parent_id;
	e->children = c->children;
	ibc_copy_cgroup(e->cgroup, sizeof(e->cgroup), &e->cgroup_truncated,
			c->cgroup, c->cgroup_truncated);
}

IBC_EXPORT int ibc_list_devices(struct ibc_client *client,
				struct ibc_device_info **ret_list,
				size_t entry_size, size_t *ret_count)
{
	static const struct ibc_lister l = {
		.body_case = RDMAB__REQUEST__BODY_LIST_DEVICES,
		.name = "ibc_device_info",
		.entry_size = sizeof(struct ibc_device_info),
		.entry_v0 = IBC_SIZE_V0(struct ibc_device_info, max_mr_size),
		.entry_align = __alignof__(struct ibc_device_info),
		.count = ibc_devices_count,
		.fill = ibc_devices_fill,
	};

	return ibc_list_all(client, &l, NULL, (void **)ret_list, entry_size,
			    ret_count);
}

IBC_EXPORT int ibc_list_domains(struct ibc_client *client,
				struct ibc_domain_info **ret_list,
				size_t entry_size, size_t *ret_count)
{
	static const struct ibc_lister l = {
		.body_case = RDMAB__REQUEST__BODY_LIST_DOMAINS,
		.name = "ibc_domain_info",
		.entry_size = sizeof(struct ibc_domain_info),
		.entry_v0 = IBC_SIZE_V0(struct ibc_domain_info, unaccounted),
		.entry_align = __alignof__(struct ibc_domain_info),
		.count = ibc_domains_count,
		.fill = ibc_domains_fill,
	};

	return ibc_list_all(client, &l, NULL, (void **)ret_list, entry_size,
			    ret_count);
}

IBC_EXPORT int ibc_list_clients(struct ibc_client *client,
				struct ibc_client_entry **ret_list,
				size_t entry_size, size_t *ret_count)
{
	static const struct ibc_lister l = {
		.body_case = RDMAB__REQUEST__BODY_LIST_CLIENTS,
		.name = "ibc_client_entry",
		.entry_size = sizeof(struct ibc_client_entry),
		.entry_v0 = IBC_SIZE_V0(struct ibc_client_entry, unaccounted),
		.entry_align = __alignof__(struct ibc_client_entry),
		.count = ibc_clients_count,
		.fill = ibc_clients_fill,
	};

	return ibc_list_all(client, &l, NULL, (void **)ret_list, entry_size,
			    ret_count);
}

static size_t ibc_objects_count(const Rdmab__Reply *reply, uint32_t *total)
{
	*total = reply->list_objects->total;
	return reply->list_objects->n_objects;
}

static void ibc_objects_fill(void *entry, const Rdmab__Reply *reply, size_t i)
{
	const Rdmab__ObjectInfo *o = reply->list_objects->objects[i];
	struct ibc_object_info *e = entry;

	e->id = o->id;
	e->kind = (enum ibc_obj_kind)o->kind;
	e->handle = o->handle;
	e->client_id = o->client_id;
	e->pid = o->pid;
	e->context_id = o->context_id;
	snprintf(e->domain, sizeof(e->domain), "%s", o->domain);
	snprintf(e->device, sizeof(e->device), "%s", o->device);
	e->state = (enum ibc_object_state)o->state;
	e->age_usec = o->age_usec;
	ibc_copy_cgroup(e->cgroup, sizeof(e->cgroup), &e->cgroup_truncated,
			o->cgroup, o->cgroup_truncated);
}

IBC_EXPORT int ibc_list_objects(struct ibc_client *client,
				const struct ibc_object_filter *filter,
				struct ibc_object_info **ret_list,
				size_t entry_size, size_t *ret_count)
{
	static const struct ibc_lister l = {
		.body_case = RDMAB__REQUEST__BODY_LIST_OBJECTS,
		.name = "ibc_object_info",
		.entry_size = sizeof(struct ibc_object_info),
		.entry_v0 = IBC_SIZE_V0(struct ibc_object_info, age_usec),
		.entry_align = __alignof__(struct ibc_object_info),
		.count = ibc_objects_count,
		.fill = ibc_objects_fill,
	};

	const uint32_t known =
		IBC_OBJECT_FILTER_CLIENT | IBC_OBJECT_FILTER_DOMAIN;

	if (filter && (filter->comp_mask & ~known))
		return ibc_set_error(-EOPNOTSUPP,
				     "unknown bits 0x%x in the filter's "
				     "comp_mask",
				     filter->comp_mask);
	if (filter && (filter->comp_mask & IBC_OBJECT_FILTER_DOMAIN) &&
	    filter->domain && strlen(filter->domain) >= IBC_NAME_MAX)
		return ibc_set_error(-EINVAL,
				     "domain name is longer than %d bytes",
				     IBC_NAME_MAX - 1);
	return ibc_list_all(client, &l, filter, (void **)ret_list, entry_size,
			    ret_count);
}

IBC_EXPORT void ibc_list_free(void *list)
{
	free(list);
}

/* --- device memory ------------------------------------------------------ */

static size_t ibc_dms_count(const Rdmab__Reply *reply, uint32_t *total)
{
	*total = reply->list_dms->total;
	return reply->list_dms->n_dms;
}

static void ibc_dms_fill(void *entry, const Rdmab__Reply *reply, size_t i)
{
	const Rdmab__DmInfo *d = reply->list_dms->dms[i];
	struct ibc_dm_info *e = entry;

	e->id = d->id;
	snprintf(e->domain, sizeof(e->domain), "%s", d->domain);
	snprintf(e->device, sizeof(e->device), "%s", d->device);
	e->handle = d->handle;
	e->length = d->length;
	e->pages = d->pages;
	e->log_align = d->log_align;
	e->allocator = d->allocator;
	e->allocator_pid = d->allocator_pid;
	e->allocator_gone = d->allocator_gone;
	e->n_importers = (uint32_t)d->n_importers;
	for (size_t k = 0; k < d->n_importers && k < IBC_DM_INFO_IMPORTERS; k++)
		e->importers[k] = d->importers[k];
	e->state = d->state <= 3 ? (enum ibc_dm_state)d->state : IBC_DM_LIVE;
	e->persistent = d->persistent;
	snprintf(e->blocked_by, sizeof(e->blocked_by), "%s", d->blocked_by);
	e->mrs = d->mrs;
	for (size_t k = 0; k < d->n_mr_list && k < IBC_DM_INFO_MRS; k++) {
		e->mr_list[k].object_id = d->mr_list[k]->object_id;
		e->mr_list[k].client_id = d->mr_list[k]->client_id;
		e->mr_list[k].pid = d->mr_list[k]->pid;
		e->mr_list[k].gone = d->mr_list[k]->gone;
	}
}

IBC_EXPORT int ibc_list_dms(struct ibc_client *client,
			    struct ibc_dm_info **ret_list, size_t entry_size,
			    size_t *ret_count)
{
	static const struct ibc_lister l = {
		.body_case = RDMAB__REQUEST__BODY_LIST_DMS,
		.name = "ibc_dm_info",
		.entry_size = sizeof(struct ibc_dm_info),
		.entry_v0 = IBC_SIZE_V0(struct ibc_dm_info, mrs),
		.entry_align = __alignof__(struct ibc_dm_info),
		.count = ibc_dms_count,
		.fill = ibc_dms_fill,
	};

	return ibc_list_all(client, &l, NULL, (void **)ret_list, entry_size,
			    ret_count);
}
