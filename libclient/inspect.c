// SPDX-License-Identifier: MIT
/* Inspection: devices, domains, clients, objects, fetched a page at a
 * time. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libclient/client.h"
#include "libclient/family.h"
#include "libclient/inspect.h"
#include "common/device/caps-fields.h"

/* The public structures and the wire keep each limit written out (ABI,
 * wire); each must have every limit of the lists, with the list's type
 * (a flag is protobuf's boolean on the wire). */
#define CAPS_LIMIT_IS(ptr_type, name, type)                                    \
	_Static_assert(_Generic(((ptr_type)0)->name, type : 1, default : 0),   \
		       #ptr_type "'s " #name " is not the list's " #type);
#define CAPS_LIMIT_CHECK(name, type, fmt)                                      \
	CAPS_LIMIT_IS(struct ibc_device_info *, name, type)                    \
	CAPS_LIMIT_IS(struct ibc_caps *, name, type)                           \
	CAPS_LIMIT_IS(Rdmab__DeviceCaps *, name, type)
#define CAPS_FLAG_CHECK(name)                                                  \
	CAPS_LIMIT_IS(struct ibc_device_info *, name, bool)                    \
	CAPS_LIMIT_IS(struct ibc_caps *, name, bool)                           \
	CAPS_LIMIT_IS(Rdmab__DeviceCaps *, name, protobuf_c_boolean)
CAPS_NUMBERS(CAPS_LIMIT_CHECK)
CAPS_FLAGS(CAPS_FLAG_CHECK)
#undef CAPS_FLAG_CHECK
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
	/* The other list requests (the families' among them) share a
	 * body type: one member of the union serves them all. */
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
	ibc_families_quota(q, qi);
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
		e->ports = d->caps->ports;
#define ENTRY_CAPS_COPY(name, ...) e->name = d->caps->name;
		CAPS_NUMBERS(ENTRY_CAPS_COPY)
		CAPS_FLAGS(ENTRY_CAPS_COPY)
#undef ENTRY_CAPS_COPY
		ibc_families_device_info(e, d->caps);
	}
}

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

int ibc_list_all(struct ibc_client *client, const struct ibc_lister *l,
		 const struct ibc_object_filter *filter, void **ret_list,
		 size_t size, size_t *ret_count)
{
	uint8_t *list = NULL;
	size_t n = 0, bytes;
	void *e;
	int err;

	if (!client || !ret_list || !ret_count)
		return ibc_set_error(-EINVAL, "NULL argument");
	err = ibc_check_entry_size(l, size);
	if (err < 0)
		return err;
	/* One entry in the library's version, filled and copied out. */
	e = malloc(l->entry_size);
	if (!e)
		return ibc_set_error(-ENOMEM, "out of memory");
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
			memset(e, 0, l->entry_size);
			l->fill(e, r.reply, i);
			ibc_copy_out(list + (n + i) * size, size, e,
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
	if (!list && ibc_list_grow((void **)&list, 0, size) < 0) {
		err = -ENOMEM;
		goto fail;
	}
	free(e);
	ibc_clear_error();
	*ret_list = list;
	*ret_count = n;
	return 0;
fail:
	free(e);
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
	ibc_families_domain(e, d);
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
