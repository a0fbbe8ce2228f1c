// SPDX-License-Identifier: MIT
/* rdmabrokerctl clients */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>

#include "ctl/ctl.h"

static const char *const fork_names[] = { "disabled", "enabled",
					  "unneeded" };

static const char *fork_name(enum ibc_fork_state s)
{
	return (unsigned int)s < 3 ? fork_names[s] : "?";
}

int cmd_clients(struct ctl *ctl, int argc, char **argv)
{
	struct ibc_client_entry *c;
	size_t n;
	int ret;

	if (argc != 1) {
		fprintf(stderr, "rdmabrokerctl: clients takes no arguments\n");
		return CTL_USAGE;
	}
	ret = ctl_connect(ctl);
	if (ret)
		return ret;
	ret = ibc_list_clients(ctl->client, &c, sizeof(*c), &n);
	if (ret < 0)
		return ctl_fail("clients", ret);
	if (ctl->json) {
		printf("[");
		for (size_t i = 0; i < n; i++) {
			printf("%s{\"id\":%" PRIu64 ",\"pid\":%u,\"uid\":%u,"
			       "\"gid\":%u,\"comm\":",
			       i ? "," : "", c[i].id, c[i].pid, c[i].uid,
			       c[i].gid);
			json_string(stdout, c[i].comm);
			printf(",\"domain\":");
			json_string(stdout, c[i].domain);
			printf(",\"contexts\":%u,\"objects\":%u,"
			       "\"requests\":%" PRIu64 ",\"fork\":",
			       c[i].contexts, c[i].objects, c[i].requests);
			json_string(stdout, fork_name(c[i].fork_state));
			printf(",\"library_version\":");
			json_string(stdout, c[i].library_version);
			printf(",\"unaccounted\":%u}", c[i].unaccounted);
		}
		printf("]\n");
		goto out;
	}
	printf("%-6s %-8s %-6s %-16s %-20s %-8s %-7s %-6s %-9s %s\n", "ID",
	       "PID", "UID", "COMMAND", "DOMAIN", "CONTEXTS", "OBJECTS",
	       "UNACCT", "REQUESTS", "FORK");
	for (size_t i = 0; i < n; i++) {
		char comm[CTL_TEXT_SIZE(c[i].comm)];
		char domain[CTL_TEXT_SIZE(c[i].domain)];

		printf("%-6" PRIu64 " %-8u %-6u %-16s %-20s %-8u %-7u %-6u "
		       "%-9" PRIu64 " %s\n",
		       c[i].id, c[i].pid, c[i].uid,
		       text_escape(comm, sizeof(comm), c[i].comm),
		       text_escape(domain, sizeof(domain), c[i].domain),
		       c[i].contexts, c[i].objects, c[i].unaccounted,
		       c[i].requests, fork_name(c[i].fork_state));
	}
out:
	ibc_list_free(c);
	return CTL_OK;
}
