// SPDX-License-Identifier: MIT
/*
 * The smallest libibclient program: connect, print what the broker said,
 * ping it, disconnect. Build: cc hello.c $(pkg-config --cflags --libs
 * libibclient)
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <ibclient.h>

int main(void)
{
	struct ibc_device_info devs[8];
	struct ibc_client_info info;
	struct ibc_client *client;
	int n, ret;

	ret = ibc_connect(NULL, &client);
	if (ret < 0) {
		fprintf(stderr, "hello: %s\n", ibc_last_error());
		return 1;
	}
	ibc_client_info(client, &info);
	printf("connected to rdmabrokerd %s (protocol %u)\n",
	       info.daemon_version, info.protocol_version);
	printf("  client id  %llu\n", (unsigned long long)info.client_id);
	printf("  domain     %s\n", info.domain);
	n = ibc_list_devices(client, devs, 8);
	for (int i = 0; i < n; i++)
		printf("  device     %s (%s)\n", devs[i].name, devs[i].kind);
	ret = ibc_ping(client, "hello", 5);
	if (ret < 0) {
		fprintf(stderr, "hello: ping: %s\n", ibc_last_error());
		ibc_disconnect(client);
		return 1;
	}
	printf("  ping       ok\n");
	ibc_disconnect(client);
	return 0;
}
