// SPDX-License-Identifier: MIT
/* rdmabrokerctl evict CLIENT */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl/ctl.h"

int cmd_evict(struct ctl *ctl, int argc, char **argv)
{
	uint64_t id;
	char *end;
	int ret;

	if (argc != 2) {
		fprintf(stderr, "rdmabrokerctl: evict takes one client id\n"
				"Usage: rdmabrokerctl evict CLIENT\n");
		return CTL_USAGE;
	}
	errno = 0;
	id = strtoull(argv[1], &end, 10);
	if (errno || end == argv[1] || *end || argv[1][0] == '-' || !id) {
		fprintf(stderr, "rdmabrokerctl: evict: not a client id: %s\n",
			argv[1]);
		return CTL_USAGE;
	}
	ret = ctl_connect(ctl);
	if (ret)
		return ret;
	ret = ibc_admin_evict(ctl->client, id);
	if (ret < 0) {
		char what[48];

		snprintf(what, sizeof(what), "evict %" PRIu64, id);
		return ctl_fail(what, ret);
	}
	if (ctl->json)
		printf("{\"evicted\":%" PRIu64 "}\n", id);
	else
		printf("client %" PRIu64 " evicted: its objects go when its "
		       "process exits\n",
		       id);
	return CTL_OK;
}
