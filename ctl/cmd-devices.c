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
		printf(",\"removed\":%s,\"import\":%s,\"xrc\":%s,\"ports\":%u",
		       d[i].removed ? "true" : "false",
		       d[i].import ? "true" : "false",
		       d[i].xrc ? "true" : "false", d[i].ports);
#define CTL_CAPS_NUMBER(name, type, fmt)                                       \
	printf(",\"" #name "\":" fmt, d[i].name);
		CAPS_NUMBERS(CTL_CAPS_NUMBER)
#undef CTL_CAPS_NUMBER
		/* What the families make of the device for the caller. */
		for (size_t k = 0; k < ctl_n_family_commands; k++) {
			const struct ctl_family_listing *l =
				ctl_family_commands[k]->listing;

			if (l && l->device_json)
				l->device_json(&d[i]);
		}
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
		printf("%-12s %-6s %-10s %-6s %-4s ", "NAME", "KIND",
		       "TRANSPORT", "IMPORT", "XRC");
#define CTL_CAPS_HEADER(name, header, width) printf("%-" #width "s ", header);
		CAPS_COLUMNS(CTL_CAPS_HEADER)
#undef CTL_CAPS_HEADER
		printf("STATE\n");
		for (size_t i = 0; i < n; i++) {
			char name[CTL_TEXT_SIZE(d[i].name)];
			char kind[CTL_TEXT_SIZE(d[i].kind)];
			char transport[CTL_TEXT_SIZE(d[i].transport)];

			printf("%-12s %-6s %-10s %-6s %-4s ",
			       text_escape(name, sizeof(name), d[i].name),
			       text_escape(kind, sizeof(kind), d[i].kind),
			       text_escape(transport, sizeof(transport),
					   d[i].transport),
			       d[i].import ? "yes" : "no",
			       d[i].xrc ? "yes" : "no");
#define CTL_CAPS_CELL(name, header, width)                                     \
	printf("%-" #width PRIu64 " ", (uint64_t)d[i].name);
			CAPS_COLUMNS(CTL_CAPS_CELL)
#undef CTL_CAPS_CELL
			printf("%s\n", d[i].removed ? "removed" : "present");
		}
	}
	ibc_list_free(d);
	return CTL_OK;
}
