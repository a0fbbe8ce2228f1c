// SPDX-License-Identifier: MIT
/* rdmabrokerctl dm [list | show ID | free ID | revoke ID] */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"

static const char *const dm_state_names[] = {
	[IBC_DM_LIVE] = "live",
	[IBC_DM_FREE_PENDING] = "free pending",
	[IBC_DM_FREE_BLOCKED] = "free blocked",
	[IBC_DM_REVOKED] = "revoked",
};

/* "persistent" is a state of its own while the DM is live. */
static const char *dm_state(const struct ibc_dm_info *d)
{
	if (d->state == IBC_DM_LIVE && d->persistent)
		return "persistent";
	return (unsigned int)d->state < sizeof(dm_state_names) /
						sizeof(dm_state_names[0]) ?
		       dm_state_names[d->state] :
		       "?";
}

static int dm_usage(const char *why, const char *arg)
{
	fprintf(stderr, "rdmabrokerctl: dm: %s%s%s\n", why, arg ? ": " : "",
		arg ? arg : "");
	return CTL_USAGE;
}

static int dm_parse_id(const char *v, uint64_t *ret)
{
	char *end;

	errno = 0;
	*ret = strtoull(v, &end, 10);
	return errno || end == v || *end || *v == '-' || !*ret ? -EINVAL : 0;
}

static void dm_json_one(const struct ibc_dm_info *d)
{
	printf("{\"id\":%" PRIu64 ",\"domain\":", d->id);
	json_string(stdout, d->domain);
	printf(",\"device\":");
	json_string(stdout, d->device);
	printf(",\"handle\":%u,\"length\":%" PRIu64 ",\"pages\":%u,"
	       "\"log_align\":%u,\"allocator\":%" PRIu64
	       ",\"allocator_pid\":%u,"
	       "\"allocator_gone\":%s,\"importers\":[",
	       d->handle, d->length, d->pages, d->log_align, d->allocator,
	       d->allocator_pid, d->allocator_gone ? "true" : "false");
	for (uint32_t k = 0; k < d->n_importers && k < IBC_DM_INFO_IMPORTERS;
	     k++)
		printf("%s%" PRIu64, k ? "," : "", d->importers[k]);
	printf("],\"mrs\":%u,\"mr_list\":[", d->mrs);
	for (uint32_t k = 0; k < d->mrs && k < IBC_DM_INFO_MRS; k++)
		printf("%s{\"object_id\":%" PRIu64 ",\"client_id\":%" PRIu64
		       ",\"pid\":%u,\"gone\":%s}",
		       k ? "," : "", d->mr_list[k].object_id,
		       d->mr_list[k].client_id, d->mr_list[k].pid,
		       d->mr_list[k].gone ? "true" : "false");
	printf("],\"persistent\":%s,\"state\":",
	       d->persistent ? "true" : "false");
	json_string(stdout, dm_state(d));
	printf(",\"blocked_by\":");
	json_string(stdout, d->blocked_by);
	printf("}");
}

/* A list is an array: the devices' DM figures are in `devices --json`. */
static void dm_json(const struct ibc_dm_info *d, size_t n)
{
	printf("[");
	for (size_t i = 0; i < n; i++) {
		printf("%s", i ? "," : "");
		dm_json_one(&d[i]);
	}
	printf("]\n");
}

static void dm_importers_text(char *buf, size_t size,
			      const struct ibc_dm_info *d)
{
	size_t off = 0;

	buf[0] = '\0';
	for (uint32_t k = 0; k < d->n_importers && k < IBC_DM_INFO_IMPORTERS;
	     k++) {
		int w = snprintf(buf + off, size - off, "%s%" PRIu64,
				 k ? "," : "", d->importers[k]);

		if (w < 0 || (size_t)w >= size - off)
			break;
		off += (size_t)w;
	}
	if (!d->n_importers)
		snprintf(buf, size, "-");
}

static void dm_table(const struct ibc_dm_info *d, size_t n,
		     const struct ibc_device_info *dev, size_t nd)
{
	/* Ids have up to 15 digits (rdmabrokerd(8), Ids); the client ids
	 * are named so, not to read as counts. */
	printf("%-15s %-16s %-10s %-6s %-8s %-5s %-22s %-14s %s\n", "ID",
	       "DOMAIN", "DEVICE", "HANDLE", "SIZE", "PAGES", "ALLOC_CLIENT",
	       "IMPORT_CLIENTS", "STATE");
	for (size_t i = 0; i < n; i++) {
		char device[CTL_TEXT_SIZE(d[i].device)];
		char domain[CTL_TEXT_SIZE(d[i].domain)];
		char imp[IBC_DM_INFO_IMPORTERS * 21 + 1];
		char alloc[32];

		dm_importers_text(imp, sizeof(imp), &d[i]);
		snprintf(alloc, sizeof(alloc), "%" PRIu64 "%s", d[i].allocator,
			 d[i].allocator_gone ? " (gone)" : "");
		printf("%-15" PRIu64 " %-16s %-10s %-6u %-8" PRIu64
		       " %-5u %-22s %-14s %s\n",
		       d[i].id,
		       text_escape(domain, sizeof(domain), d[i].domain),
		       text_escape(device, sizeof(device), d[i].device),
		       d[i].handle, d[i].length, d[i].pages, alloc, imp,
		       dm_state(&d[i]));
	}
	/* The broker's own count: the kernel does not show the MEMIC map,
	 * and other users of the device are not in it. Only an
	 * administrator gets it: it moves with every domain's DMs. */
	for (size_t i = 0; i < nd; i++) {
		char device[CTL_TEXT_SIZE(dev[i].name)];
		char why[CTL_TEXT_SIZE(dev[i].dm_reason)];

		text_escape(device, sizeof(device), dev[i].name);
		if (dev[i].dm_device_wide)
			printf("%s: the broker has reserved %" PRIu64
			       " of %" PRIu64 " bytes of device memory\n",
			       device, dev[i].dm_reserved, dev[i].max_dm_size);
		printf("%s: this domain uses %" PRIu64 " of its %" PRIu64
		       " bytes; a DM of up to %" PRIu64 " bytes fits its "
		       "quotas",
		       device, dev[i].dm_domain_used, dev[i].dm_domain_limit,
		       dev[i].dm_room);
		if (dev[i].dm_shared)
			printf("\n");
		else
			printf("; not shareable: %s\n",
			       text_escape(why, sizeof(why), dev[i].dm_reason));
	}
}

static void dm_show(const struct ibc_dm_info *d)
{
	char device[CTL_TEXT_SIZE(d->device)];
	char domain[CTL_TEXT_SIZE(d->domain)];
	char why[CTL_TEXT_SIZE(d->blocked_by)];
	char imp[IBC_DM_INFO_IMPORTERS * 21 + 1];

	dm_importers_text(imp, sizeof(imp), d);
	printf("id:         %" PRIu64 "\n", d->id);
	printf("domain:     %s\n",
	       text_escape(domain, sizeof(domain), d->domain));
	printf("device:     %s\n",
	       text_escape(device, sizeof(device), d->device));
	printf("handle:     %u\n", d->handle);
	printf("size:       %" PRIu64 " bytes (%u pages)\n", d->length,
	       d->pages);
	printf("alignment:  2^%u\n", d->log_align);
	if (d->allocator_gone)
		printf("allocator:  client %" PRIu64
		       " (gone: its session ended; it was pid %u)\n",
		       d->allocator, d->allocator_pid);
	else
		printf("allocator:  client %" PRIu64 " (pid %u)\n",
		       d->allocator, d->allocator_pid);
	printf("importers:  %s\n", imp);
	printf("MRs:        %u\n", d->mrs);
	/* Whose they are: what keeps a blocked free from happening. */
	for (uint32_t k = 0; k < d->mrs && k < IBC_DM_INFO_MRS; k++) {
		const struct ibc_dm_mr_info *m = &d->mr_list[k];

		if (m->gone)
			printf("  MR %" PRIu64 " of client %" PRIu64
			       " (gone: its process is dead)\n",
			       m->object_id, m->client_id);
		else
			printf("  MR %" PRIu64 " of client %" PRIu64
			       " (pid %u)\n",
			       m->object_id, m->client_id, m->pid);
	}
	if (d->mrs > IBC_DM_INFO_MRS)
		printf("  and %u more\n", d->mrs - IBC_DM_INFO_MRS);
	printf("state:      %s\n", dm_state(d));
	if (d->blocked_by[0])
		printf("blocked by: %s\n",
		       text_escape(why, sizeof(why), d->blocked_by));
}

static int cmd_dm(struct ctl *ctl, int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : "list";
	struct ibc_device_info *dev = NULL;
	struct ibc_dm_info *d;
	size_t n, nd = 0;
	uint64_t id = 0;
	int ret;

	if (strcmp(sub, "list") == 0) {
		if (argc > 2)
			return dm_usage("unknown argument", argv[2]);
	} else if (strcmp(sub, "show") == 0 || strcmp(sub, "free") == 0 ||
		   strcmp(sub, "revoke") == 0) {
		if (argc != 3)
			return dm_usage("needs one DM id", NULL);
		if (dm_parse_id(argv[2], &id) < 0)
			return dm_usage("not a DM id", argv[2]);
	} else {
		return dm_usage("unknown subcommand", sub);
	}
	ret = ctl_connect(ctl);
	if (ret)
		return ret;
	if (strcmp(sub, "revoke") == 0) {
		ret = ibc_admin_dm_revoke(ctl->client, id);
		if (ret < 0)
			return ctl_fail("dm revoke", ret);
		if (ctl->json)
			printf("{\"revoked\":%" PRIu64 "}\n", id);
		else
			printf("DM %" PRIu64 " revoked: its holders lose it\n",
			       id);
		return CTL_OK;
	}
	if (strcmp(sub, "free") == 0) {
		ret = ibc_admin_dm_free(ctl->client, id);
		if (ret < 0)
			return ctl_fail("dm free", ret);
		if (ctl->json)
			printf("{\"freed\":%" PRIu64 "}\n", id);
		else
			printf("DM %" PRIu64 " freed\n", id);
		return CTL_OK;
	}
	ret = ibc_list_dms(ctl->client, &d, sizeof(*d), &n);
	if (ret < 0)
		return ctl_fail("dm", ret);
	if (strcmp(sub, "show") == 0) {
		size_t i;

		for (i = 0; i < n && d[i].id != id; i++)
			;
		if (i == n) {
			ibc_list_free(d);
			fprintf(stderr,
				"rdmabrokerctl: dm show: no DM %" PRIu64
				" that this client may see\n",
				id);
			return CTL_ERROR;
		}
		if (ctl->json) {
			dm_json_one(&d[i]);
			printf("\n");
		} else {
			dm_show(&d[i]);
		}
		ibc_list_free(d);
		return CTL_OK;
	}
	if (ctl->json) {
		dm_json(d, n);
		ibc_list_free(d);
		return CTL_OK;
	}
	ret = ibc_list_devices(ctl->client, &dev, sizeof(*dev), &nd);
	if (ret < 0) {
		ibc_list_free(d);
		return ctl_fail("dm", ret);
	}
	dm_table(d, n, dev, nd);
	ibc_list_free(dev);
	ibc_list_free(d);
	return CTL_OK;
}

/* Its entry in the command table (ctl/main.c). */
/* `devices --json`: the caller's domain's device memory on @d, and
 * whether a DM can be shared there; the device-wide figure is an
 * administrator's. */
static void dm_device_json(const struct ibc_device_info *d)
{
	if (d->dm_device_wide)
		printf(",\"dm_reserved\":%" PRIu64, d->dm_reserved);
	printf(",\"dm_domain_used\":%" PRIu64 ",\"dm_domain_limit\":%" PRIu64
	       ",\"dm_room\":%" PRIu64 ",\"dm_shared\":%s,\"dm_reason\":",
	       d->dm_domain_used, d->dm_domain_limit, d->dm_room,
	       d->dm_shared ? "true" : "false");
	json_string(stdout, d->dm_reason);
}

static const struct ctl_family_listing dm_listing = {
	.quota_field = offsetof(struct ibc_quota, dm_bytes),
	.quota_size = sizeof(((struct ibc_quota *)0)->dm_bytes),
	.quota_key = "dm_bytes",
	.quota_header = "DM_BYTES",
	.quota_width = 17,
	.device_json = dm_device_json,
};

const struct ctl_command ctl_cmd_dm = {
	"dm",
	"[list | show ID | free ID | revoke ID]",
	"device memory: DMs, holders, state; free, revoke (admin)",
	"  list       the DMs the caller may see (the default)\n"
	"  show ID    one DM: holders, MRs, state\n"
	"  free ID    free DM ID for its holders (administrators)\n"
	"  revoke ID  take DM ID from its holders (administrators)\n",
	cmd_dm,
	&dm_listing,
};
