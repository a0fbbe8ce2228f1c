// SPDX-License-Identifier: MIT
/* rdmabrokerctl domain rekey NAME [--force] */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "ctl/ctl.h"

int cmd_domain(struct ctl *ctl, int argc, char **argv)
{
	const char *name = NULL;
	uint32_t flags = 0;
	int ret;

	if (argc < 2 || strcmp(argv[1], "rekey") != 0) {
		fprintf(stderr,
			"rdmabrokerctl: domain: unknown subcommand%s%s\n",
			argc < 2 ? "" : ": ", argc < 2 ? "" : argv[1]);
		return CTL_USAGE;
	}
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--force") == 0)
			flags |= IBC_REKEY_FORCE;
		else if (!name && argv[i][0] != '-')
			name = argv[i];
		else
			name = NULL, i = argc;
	}
	if (!name) {
		fprintf(stderr, "rdmabrokerctl: domain rekey takes one domain "
				"name\n");
		return CTL_USAGE;
	}
	ret = ctl_connect(ctl);
	if (ret)
		return ret;
	ret = ibc_admin_domain_rekey(ctl->client, name, flags);
	if (ret < 0)
		return ctl_fail("domain rekey", ret);
	if (ctl->json) {
		printf("{\"rekeyed\":");
		json_string(stdout, name);
		printf("}\n");
	} else {
		char esc[TEXT_ESCAPED_SIZE(64)];

		printf("domain %s rekeyed: its members open new contexts; "
		       "the old ones close when their last holder lets go\n",
		       text_escape(esc, sizeof(esc), name));
	}
	return CTL_OK;
}
