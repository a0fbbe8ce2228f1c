// SPDX-License-Identifier: MIT
/*
 * The smallest libibclient program: connect, print what the broker said,
 * open the first device's shared context, print its capabilities.
 * Build: cc hello.c $(pkg-config --cflags --libs libibclient)
 */
#include <stdio.h>

#include <ibclient.h>

static const char *const fork_names[] = { "disabled", "enabled", "unneeded" };

int main(void)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_FLAGS,
		.flags = IBC_CONNECT_ALLOW_OWN_CONTEXT,
	};
	struct ibc_device_info *devs;
	struct ibc_client_info info;
	struct ibc_client *client;
	struct ibc_caps caps;
	struct ibc_ctx *ctx;
	size_t n;
	int ret;

	ret = ibc_connect(&attr, &client);
	if (ret < 0) {
		fprintf(stderr, "hello: %s\n", ibc_last_error());
		return 1;
	}
	ibc_client_info(client, &info, sizeof(info));
	printf("connected to rdmabrokerd %s (protocol %u)\n",
	       info.daemon_version, info.protocol_version);
	printf("  client id   %llu\n", (unsigned long long)info.client_id);
	printf("  domain      %s\n", info.domain);
	if (ibc_list_devices(client, &devs, sizeof(*devs), &n) == 0) {
		for (size_t i = 0; i < n; i++)
			printf("  device      %s (%s, %s)\n", devs[i].name,
			       devs[i].kind, devs[i].transport);
		ibc_list_free(devs);
	}
	ret = ibc_open(client, NULL, &ctx);
	if (ret < 0) {
		fprintf(stderr, "hello: open: %s\n", ibc_last_error());
		ibc_disconnect(client);
		return 1;
	}
	ibc_query(ctx, &caps, sizeof(caps));
	printf("  context     %llu on %s, %s\n",
	       (unsigned long long)caps.context_id, caps.device,
	       caps.shared ? "shared with the domain" :
			     "opened in this process");
	printf("  max_dm_size %llu bytes\n",
	       (unsigned long long)caps.max_dm_size);
	printf("  xrc         %s\n", caps.xrc ? "yes" : "no");
	printf("  rss table   %u entries\n", caps.max_rss_table_size);
	printf("  fork        %s\n", fork_names[caps.fork_state]);
	ibc_close(ctx);
	ret = ibc_ping(client, "hello", 5);
	printf("  ping        %s\n", ret == 0 ? "ok" : ibc_last_error());
	ibc_disconnect(client);
	return ret < 0;
}
