// SPDX-License-Identifier: MIT
/* The DM listings: ibc_list_dms(3), the broker's DMs the caller may see
 * with their holders and MRs, through the listings' paging (inspect.h);
 * and the family's figures in ibc_list_devices(3)'s entries. */
#include "config.h"

#include <stdio.h>

#include "libclient/dm.h"
#include "libclient/inspect.h"

void ibc_dm_device_info(struct ibc_device_info *e,
			const Rdmab__DeviceCaps *caps)
{
	snprintf(e->dm_reason, sizeof(e->dm_reason), "%s",
		 caps->dm_reason ? caps->dm_reason : "");
	e->dm_reserved = caps->dm_reserved;
	e->dm_device_wide = caps->dm_device_wide;
	e->dm_domain_used = caps->dm_domain_used;
	e->dm_domain_limit = caps->dm_domain_limit;
	e->dm_room = caps->dm_room;
}

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
