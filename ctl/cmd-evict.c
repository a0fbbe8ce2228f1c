// SPDX-License-Identifier: MIT
/* rdmabrokerctl evict [--rekey [--force]] CLIENT */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"

int cmd_evict(struct ctl *ctl, int argc, char **argv)
{
	uint32_t flags = 0;
	const char *arg;
	uint64_t id;
	char *end;
	int ret;

	/* Options first: a client id is never negative. */
	while (argc > 2 && argv[1][0] == '-') {
		if (strcmp(argv[1], "--rekey") == 0)
			flags |= IBC_EVICT_REKEY;
		else if (strcmp(argv[1], "--force") == 0)
			flags |= IBC_EVICT_FORCE;
		else
			break;
		argc--;
		argv++;
	}
	if (argc != 2 ||
	    ((flags & IBC_EVICT_FORCE) && !(flags & IBC_EVICT_REKEY))) {
		fprintf(stderr, "rdmabrokerctl: evict takes one client id "
				"(--force only with --rekey)\n");
		return CTL_USAGE;
	}
	arg = argv[1];
	errno = 0;
	id = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || !id) {
		fprintf(stderr, "rdmabrokerctl: evict: not a client id: %s\n",
			arg);
		return CTL_USAGE;
	}
	ret = ctl_connect(ctl);
	if (ret)
		return ret;
	ret = flags ? ibc_admin_evict_ex(ctl->client, id, flags) :
		      ibc_admin_evict(ctl->client, id);
	if (ret < 0) {
		char what[48];

		snprintf(what, sizeof(what), "evict %" PRIu64, id);
		return ctl_fail(what, ret);
	}
	if (ctl->json)
		printf("{\"evicted\":%" PRIu64 "%s}\n", id,
		       flags ? ",\"rekeyed\":true" : "");
	else if (flags)
		printf("client %" PRIu64 " evicted and its domain rekeyed: "
		       "the process is shut out of the domain's context\n",
		       id);
	else
		printf("client %" PRIu64 " evicted: its objects go when its "
		       "process exits\n",
		       id);
	return CTL_OK;
}
