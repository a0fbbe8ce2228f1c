// SPDX-License-Identifier: MIT
/*
 * What the DM family shows of itself (dm.h): its part of a domain's
 * listing (the dm_bytes limit, a share of each device's memory) and its
 * metrics, written through the family seam (family.h's struct
 * family_metrics), so that the listings and the exposition name no DM.
 */
#include "config.h"

#include <inttypes.h>

#include "daemon/families/dm/dm.h"
#include "daemon/registry/charge.h"
#include "daemon/registry/core.h"
#include "daemon/registry/domain.h"

void dm_domain_info(const struct core *core, const struct domain *d,
		    Rdmab__DomainInfo *info)
{
	/* A percent of each device's memory: the most it makes. */
	info->limit->dm_bytes = dm_quota_limit_shown(core, d);
}

void dm_metrics_devices(const struct core *core, struct family_metrics *fm)
{
	const struct device_list *devs = &core->devices;

	fm->family(fm, "rdmabroker_device_dm_size_bytes", "gauge",
		   "The device's memory (max_dm_size): the DM pool.");
	for (size_t k = 0; k < devs->n; k++)
		fm->printf(fm,
			   "rdmabroker_device_dm_size_bytes{device=\"%s\"} "
			   "%" PRIu64 "\n",
			   fm->device_label(fm, k),
			   devs->dev[k].caps.max_dm_size);
	fm->family(fm, "rdmabroker_device_dm_reserved_bytes", "gauge",
		   "Device memory the broker reserved on the device, in whole "
		   "pages.");
	for (size_t k = 0; k < devs->n; k++)
		fm->printf(fm,
			   "rdmabroker_device_dm_reserved_bytes{device=\"%s\"} "
			   "%" PRIu64 "\n",
			   fm->device_label(fm, k), devs->dev[k].dm_reserved);
}

void dm_metrics_domains(const struct core *core, struct family_metrics *fm)
{
	const struct device_list *devs = &core->devices;
	struct dm_figures dmf;
	struct domain *d;

	fm->family(fm, "rdmabroker_quota_dm_used_bytes", "gauge",
		   "Device memory the domain holds, on all devices.");
	for (d = fm->next_domain(fm, NULL); d; d = fm->next_domain(fm, d))
		if (domain_pool(d) == d)
			fm->printf(
				fm,
				"rdmabroker_quota_dm_used_bytes{domain=\"%s\"}"
				" %" PRIu64 "\n",
				fm->domain_label(fm),
				charge_used(d, CHARGE_OF(FAMILY_DM)));
	fm->family(fm, "rdmabroker_quota_dm_limit_bytes", "gauge",
		   "The domain's device memory quota on a device.");
	for (d = fm->next_domain(fm, NULL); d; d = fm->next_domain(fm, d))
		for (size_t k = 0; k < devs->n; k++)
			if (domain_pool(d) == d && !devs->dev[k].removed)
				fm->printf(fm,
					   "rdmabroker_quota_dm_limit_bytes{"
					   "domain=\"%s\",device=\"%s\"} "
					   "%" PRIu64 "\n",
					   fm->domain_label(fm),
					   fm->device_label(fm, k),
					   dm_quota_limit(d, &devs->dev[k]));
	fm->family(fm, "rdmabroker_dms", "gauge",
		   "The domain's device memory allocations, by state.");
	for (d = fm->next_domain(fm, NULL); d; d = fm->next_domain(fm, d)) {
		dm_domain_figures(core, d, &dmf);
		for (unsigned int s = 0; s < DM_METRIC_STATES; s++)
			fm->printf(fm,
				   "rdmabroker_dms{domain=\"%s\",state=\"%s\"} "
				   "%u\n",
				   fm->domain_label(fm),
				   dm_metric_state_name(s), dmf.dms[s]);
	}
	fm->family(fm, "rdmabroker_dm_bytes", "gauge",
		   "Bytes the domain's device memory allocations span, by "
		   "device.");
	for (d = fm->next_domain(fm, NULL); d; d = fm->next_domain(fm, d)) {
		dm_domain_figures(core, d, &dmf);
		for (size_t k = 0; k < devs->n; k++)
			if (dmf.bytes[k])
				fm->printf(fm,
					   "rdmabroker_dm_bytes{domain=\"%s\","
					   "device=\"%s\"} %" PRIu64 "\n",
					   fm->domain_label(fm),
					   fm->device_label(fm, k),
					   dmf.bytes[k]);
	}
}

const struct family_request_metric dm_request_metrics[] = {
	{ RDMAB__REQUEST__BODY_DM_REVOKE, "rdmabroker_dm_revokes_total",
	  "Device memory allocations revoked by an administrator." },
	{ 0 },
};
