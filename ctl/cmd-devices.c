// SPDX-License-Identifier: MIT
/* rdmabrokerctl devices */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>

#include "ctl/ctl.h"
#include "common/device/caps-fields.h"

static void devices_json(const struct ibc_device_info *d, size_t n)
{
	printf("[");
	for (size_t i = 0; i < n; i++) {
		printf("%s{\"name\":", i ? "," : "");
		json_string(stdout, d[i].name);
		printf(",\"kind\":");
		json_string(stdout, d[i].kind);
		printf(",\"transport\":");
		json_string(stdout, d[i].transport);
		printf(",\"removed\":%s,\"import\":%s,\"xrc\":%s,\"ports\":%u,"
		       "\"max_dm_size\":%" PRIu64 ",\"max_rss_table_size\":%u,"
		       "\"rss_hash_fields\":%" PRIu64
		       ",\"rss_hash_functions\":%u",
		       d[i].removed ? "true" : "false",
		       d[i].import ? "true" : "false",
		       d[i].xrc ? "true" : "false", d[i].ports,
		       d[i].max_dm_size, d[i].max_rss_table_size,
		       d[i].rss_hash_fields, d[i].rss_hash_functions);
#define CTL_CAPS_LIMIT(name, type, fmt)                                        \
	printf(",\"" #name "\":" fmt, d[i].name);
		CAPS_LIMITS(CTL_CAPS_LIMIT)
#undef CTL_CAPS_LIMIT
		printf(",\"rss_qp_types\":%u", d[i].rss_qp_types);
		/* What `dm` prints under its table; the device-wide figure
		 * is an administrator's. */
		if (d[i].dm_device_wide)
			printf(",\"dm_reserved\":%" PRIu64, d[i].dm_reserved);
		printf(",\"dm_domain_used\":%" PRIu64
		       ",\"dm_domain_limit\":%" PRIu64 ",\"dm_room\":%" PRIu64
		       ",\"dm_shared\":%s,\"dm_reason\":",
		       d[i].dm_domain_used, d[i].dm_domain_limit, d[i].dm_room,
		       d[i].dm_shared ? "true" : "false");
		json_string(stdout, d[i].dm_reason);
		printf("}");
	}
	printf("]\n");
}

int cmd_devices(struct ctl *ctl, int argc, char **argv)
{
	struct ibc_device_info *d;
	size_t n;
	int ret;

	if (argc != 1) {
		fprintf(stderr, "rdmabrokerctl: devices takes no arguments\n");
		return CTL_USAGE;
	}
	ret = ctl_connect(ctl);
	if (ret)
		return ret;
	ret = ibc_list_devices(ctl->client, &d, sizeof(*d), &n);
	if (ret < 0)
		return ctl_fail("devices", ret);
	if (ctl->json) {
		devices_json(d, n);
	} else {
		printf("%-12s %-6s %-10s %-6s %-4s %-12s %-10s %s\n", "NAME",
		       "KIND", "TRANSPORT", "IMPORT", "XRC", "MAX_DM_SIZE",
		       "RSS_TABLE", "STATE");
		for (size_t i = 0; i < n; i++) {
			char name[CTL_TEXT_SIZE(d[i].name)];
			char kind[CTL_TEXT_SIZE(d[i].kind)];
			char transport[CTL_TEXT_SIZE(d[i].transport)];

			printf("%-12s %-6s %-10s %-6s %-4s %-12" PRIu64
			       " %-10u %s\n",
			       text_escape(name, sizeof(name), d[i].name),
			       text_escape(kind, sizeof(kind), d[i].kind),
			       text_escape(transport, sizeof(transport),
					   d[i].transport),
			       d[i].import ? "yes" : "no",
			       d[i].xrc ? "yes" : "no", d[i].max_dm_size,
			       d[i].max_rss_table_size,
			       d[i].removed ? "removed" : "present");
		}
	}
	ibc_list_free(d);
	return CTL_OK;
}
