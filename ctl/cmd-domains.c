// SPDX-License-Identifier: MIT
/* rdmabrokerctl domains */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>

#include "ctl/ctl.h"

static void quota_json(const char *name, const struct ibc_quota *q)
{
	printf(",\"%s\":{\"dm_bytes\":%" PRIu64 ",\"xrcds\":%u,"
	       "\"rss_tables\":%u,\"objects\":%u,\"clients\":%u}",
	       name, q->dm_bytes, q->xrcds, q->rss_tables, q->objects,
	       q->clients);
}

int cmd_domains(struct ctl *ctl, int argc, char **argv)
{
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
			       "\"internal_objects\":%u,\"internal_left\":%u,"
			       "\"xrcd_orphans\":%u",
			       d[i].kernel_objects, d[i].registry_objects,
			       d[i].broker_objects, d[i].live_intents,
			       d[i].internal_objects, d[i].internal_left,
			       d[i].xrcd_orphans);
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
	printf("%-20s %-10s %-7s %-8s %-17s %-9s %-9s %-11s %-11s %-22s "
	       "%-10s %-9s %s\n",
	       "NAME", "KIND", "MEMBERS", "CONTEXTS", "DM_BYTES", "XRCDS",
	       "RSS", "OBJECTS", "UNACCOUNTED", "KERNEL:REG:OWN:INTENT",
	       "REKEYS", "CLIENTS", "CGROUP");
	for (size_t i = 0; i < n; i++) {
		char name[CTL_TEXT_SIZE(d[i].name)];
		char kind[CTL_TEXT_SIZE(d[i].kind)];
		char dm[32], x[16], rss[16], obj[24], cl[16], krbi[48];
		char rk[40], cgroup[CTL_CGROUP_SIZE];

		snprintf(dm, sizeof(dm), "%" PRIu64 "/%" PRIu64,
			 d[i].used.dm_bytes, d[i].limit.dm_bytes);
		snprintf(x, sizeof(x), "%u/%u", d[i].used.xrcds,
			 d[i].limit.xrcds);
		snprintf(rss, sizeof(rss), "%u/%u", d[i].used.rss_tables,
			 d[i].limit.rss_tables);
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
		printf("%-20s %-10s %-7u %-8u %-17s %-9s %-9s %-11s %-11u "
		       "%-22s %-10s %-9s %s%s\n",
		       text_escape(name, sizeof(name), d[i].name),
		       text_escape(kind, sizeof(kind), d[i].kind), d[i].members,
		       d[i].contexts, dm, x, rss, obj, d[i].unaccounted, krbi,
		       rk, cl,
		       ctl_cgroup_text(cgroup, sizeof(cgroup), d[i].cgroup,
				       d[i].cgroup_truncated),
		       d[i].retired ? " (retired)" : "");
	}
out:
	ibc_list_free(d);
	return CTL_OK;
}
