// SPDX-License-Identifier: MIT
/* The library's array of families, made from the one list of them,
 * common/families.def, indexed by enum ibc_family_id: the event reader's
 * lookup, the families' object kinds, and each hook's list that the
 * walks of family.h go through. */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include "libclient/events.h"
#include "libclient/family.h"

#define FAMILY(f, F) extern const struct ibc_family ibc_##f##_family;
#include "common/families.def"

static const struct ibc_family *const ibc_families[] = {
#define FAMILY(f, F) &ibc_##f##_family,
#include "common/families.def"
};

#define N_FAMILIES (sizeof(ibc_families) / sizeof(ibc_families[0]))

const struct ibc_event_handler *ibc_families_event(int body)
{
	for (size_t i = 0; i < N_FAMILIES; i++) {
		const struct ibc_event_handler *const *e;

		for (e = ibc_families[i]->events; e && *e; e++)
			if ((*e)->body == body)
				return *e;
	}
	return NULL;
}

const struct ibc_family *ibc_families_of_kind(enum ibc_obj_kind kind)
{
	if (kind == IBC_OBJ_NONE)
		return NULL;
	for (size_t i = 0; i < N_FAMILIES; i++)
		if (ibc_families[i]->kind == kind)
			return ibc_families[i];
	return NULL;
}

void ibc_families_on_gone(struct ibc_family_res *res)
{
	if (res->family < N_FAMILIES && ibc_families[res->family]->on_gone)
		ibc_families[res->family]->on_gone(res);
}

struct ibc_family_hooks ibc_family_hooks;

/* At load, before any call of the library: each hook's list and the
 * listed kinds, in the families' order. */
__attribute__((constructor)) static void ibc_families_collect(void)
{
	struct ibc_family_hooks *h = &ibc_family_hooks;
	size_t n_listed = 0;

	_Static_assert(N_FAMILIES <= IBC_MAX_FAMILIES, "IBC_MAX_FAMILIES");
	/* The array is indexed by enum ibc_family_id. */
	_Static_assert(N_FAMILIES == IBC_FAMILY_COUNT, "IBC_FAMILY_COUNT");
	for (size_t i = 0; i < N_FAMILIES; i++) {
		const struct ibc_family *f = ibc_families[i];

		if (f->kind_listed)
			h->listed[n_listed++] = f->kind;
#define IBC_COLLECT(hook)                                                      \
	if (f->hook) {                                                         \
		size_t k = 0;                                                  \
                                                                               \
		while (h->hook[k])                                             \
			k++;                                                   \
		h->hook[k] = f->hook;                                          \
	}
		IBC_FAMILY_HOOKS(IBC_COLLECT)
#undef IBC_COLLECT
	}
}

/* Copy @f from the wire message @wire into the entry @entry. */
static void ibc_family_field_copy(void *entry, const void *wire,
				  const struct ibc_family_field *f)
{
	memcpy((char *)entry + f->entry, (const char *)wire + f->wire, f->size);
}

void ibc_families_quota(struct ibc_quota *q, const Rdmab__QuotaInfo *qi)
{
	for (size_t i = 0; i < N_FAMILIES; i++)
		if (ibc_families[i]->quota.size)
			ibc_family_field_copy(q, qi, &ibc_families[i]->quota);
}

void ibc_families_domain(struct ibc_domain_info *e, const Rdmab__DomainInfo *d)
{
	for (size_t i = 0; i < N_FAMILIES; i++) {
		const struct ibc_family_field *f =
			ibc_families[i]->domain_fields;

		for (; f && f->size; f++)
			ibc_family_field_copy(e, d, f);
	}
}

void ibc_families_device_info(struct ibc_device_info *e,
			      const Rdmab__DeviceCaps *caps)
{
	for (size_t i = 0; i < N_FAMILIES; i++)
		if (ibc_families[i]->device_info)
			ibc_families[i]->device_info(e, caps);
}
