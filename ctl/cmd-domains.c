// SPDX-License-Identifier: MIT
/* rdmabrokerctl domains */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ctl/ctl.h"

/* The family quota after @prev (NULL: the first), in the order of their
 * fields in struct ibc_quota; NULL after the last. */
static const struct ctl_family_listing *
quota_next(const struct ctl_family_listing *prev)
{
	const struct ctl_family_listing *best = NULL;

	for (size_t i = 0; i < ctl_n_family_commands; i++) {
		const struct ctl_family_listing *l =
			ctl_family_commands[i]->listing;

		if (!l || !l->quota_size ||
		    (prev && l->quota_field <= prev->quota_field))
			continue;
		if (!best || l->quota_field < best->quota_field)
			best = l;
	}
	return best;
}

/* Family quota @l's figure in @q. */
static uint64_t quota_value(const struct ctl_family_listing *l,
			    const struct ibc_quota *q)
{
	const unsigned char *p = (const unsigned char *)q + l->quota_field;
	uint32_t v32;
	uint64_t v64;

	if (l->quota_size == sizeof(v64)) {
		memcpy(&v64, p, sizeof(v64));
		return v64;
	}
	memcpy(&v32, p, sizeof(v32));
	return v32;
}

static void quota_json(const char *name, const struct ibc_quota *q)
{
	const struct ctl_family_listing *l;

	printf(",\"%s\":{", name);
	for (l = quota_next(NULL); l; l = quota_next(l))
		printf("\"%s\":%" PRIu64 ",", l->quota_key, quota_value(l, q));
	printf("\"objects\":%u,\"clients\":%u}", q->objects, q->clients);
}

int cmd_domains(struct ctl *ctl, int argc, char **argv)
{
	const struct ctl_family_listing *l;
	struct ibc_domain_info *d;
	size_t n;
	int ret;

	if (argc != 1) {
		fprintf(stderr, "rdmabrokerctl: domains takes no arguments\n");
		return CTL_USAGE;
	}
	ret = ctl_connect(ctl);
	if (ret)
		return ret;
	ret = ibc_list_domains(ctl->client, &d, sizeof(*d), &n);
	if (ret < 0)
		return ctl_fail("domains", ret);
	if (ctl->json) {
		printf("[");
		for (size_t i = 0; i < n; i++) {
			printf("%s{\"name\":", i ? "," : "");
			json_string(stdout, d[i].name);
			printf(",\"kind\":");
			json_string(stdout, d[i].kind);
			printf(",\"members\":%u,\"contexts\":%u,\"retired\":%s,"
			       "\"unaccounted\":%u",
			       d[i].members, d[i].contexts,
			       d[i].retired ? "true" : "false",
			       d[i].unaccounted);
			printf(",\"kernel_objects\":%u,\"registry_objects\":%u,"
			       "\"broker_objects\":%u,\"live_intents\":%u,"
			       "\"internal_objects\":%u,\"internal_left\":%u",
			       d[i].kernel_objects, d[i].registry_objects,
			       d[i].broker_objects, d[i].live_intents,
			       d[i].internal_objects, d[i].internal_left);
			for (size_t k = 0; k < ctl_n_family_commands; k++) {
				l = ctl_family_commands[k]->listing;
				if (l && l->domain_json)
					l->domain_json(&d[i]);
			}
			printf(",\"old_contexts\":%u,\"rekeys\":%" PRIu64,
			       d[i].old_contexts, d[i].rekeys);
			quota_json("used", &d[i].used);
			quota_json("limit", &d[i].limit);
			json_cgroup(stdout, d[i].cgroup, d[i].cgroup_truncated);
			printf("}");
		}
		printf("]\n");
		goto out;
	}
	/* UNACCOUNTED: objects the kernel holds that no registry entry
	 * explains; then the count's parts, spelled out. */
	printf("%-20s %-10s %-7s %-8s ", "NAME", "KIND", "MEMBERS", "CONTEXTS");
	for (l = quota_next(NULL); l; l = quota_next(l))
		printf("%-*s ", l->quota_width, l->quota_header);
	printf("%-11s %-11s %-22s %-10s %-9s %s\n", "OBJECTS", "UNACCOUNTED",
	       "KERNEL:REG:OWN:INTENT", "REKEYS", "CLIENTS", "CGROUP");
	for (size_t i = 0; i < n; i++) {
		char name[CTL_TEXT_SIZE(d[i].name)];
		char kind[CTL_TEXT_SIZE(d[i].kind)];
		char quota[48], obj[24], cl[16], krbi[48];
		char rk[40], cgroup[CTL_CGROUP_SIZE];

		printf("%-20s %-10s %-7u %-8u ",
		       text_escape(name, sizeof(name), d[i].name),
		       text_escape(kind, sizeof(kind), d[i].kind), d[i].members,
		       d[i].contexts);
		/* Each family's quota: used/limit. */
		for (l = quota_next(NULL); l; l = quota_next(l)) {
			snprintf(quota, sizeof(quota), "%" PRIu64 "/%" PRIu64,
				 quota_value(l, &d[i].used),
				 quota_value(l, &d[i].limit));
			printf("%-*s ", l->quota_width, quota);
		}
		snprintf(obj, sizeof(obj), "%u/%u", d[i].used.objects,
			 d[i].limit.objects);
		snprintf(cl, sizeof(cl), "%u/%u", d[i].used.clients,
			 d[i].limit.clients);
		/* The count's parts: kernel handles, the registry's, the
		 * broker's own, live intents. */
		snprintf(krbi, sizeof(krbi), "%u:%u:%u:%u", d[i].kernel_objects,
			 d[i].registry_objects, d[i].broker_objects,
			 d[i].live_intents);
		/* Rekeys so far, and the replaced contexts a member still
		 * holds (counted in CONTEXTS). */
		if (d[i].old_contexts)
			snprintf(rk, sizeof(rk), "%" PRIu64 "(%u old)",
				 d[i].rekeys, d[i].old_contexts);
		else
			snprintf(rk, sizeof(rk), "%" PRIu64, d[i].rekeys);
		printf("%-11s %-11u %-22s %-10s %-9s %s%s\n", obj,
		       d[i].unaccounted, krbi, rk, cl,
		       ctl_cgroup_text(cgroup, sizeof(cgroup), d[i].cgroup,
				       d[i].cgroup_truncated),
		       d[i].retired ? " (retired)" : "");
	}
out:
	ibc_list_free(d);
	return CTL_OK;
}
