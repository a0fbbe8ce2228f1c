// SPDX-License-Identifier: MIT
/*
 * RSS across processes: one indirection table over receive WQs of two
 * processes, and where a few UDP flows go.
 *   rss --wqs N          make N WQs, print their ids, wait until killed
 *   rss --table ID...    make 2 WQs of its own, build a table over them and
 *                        the WQs ID... (another process's), print where a
 *                        few flows go; then wait for the broker's event that
 *                        the table was rebuilt (the other process died),
 *                        and print where the flows go now
 * Build: cc rss.c $(pkg-config --cflags --libs libibclient)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ibclient.h>

#define MAX_WQS 16

/* The standard key of Microsoft's RSS specification. */
static const uint8_t key[IBC_RSS_KEY_LEN] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
	0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
	0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
	0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

static uint64_t ids[MAX_WQS];
static int n_own, n_ids, rebuilt;

static int fail(const char *what, struct ibc_client *client)
{
	fprintf(stderr, "rss: %s: %s\n", what, ibc_last_error());
	ibc_disconnect(client);
	return 1;
}

static void show_flows(const struct ibc_rss *rss)
{
	/* Chosen to land on the four entries 0 to 3 of this key. */
	static const char *const src[] = { "198.51.100.2", "198.51.100.1",
					   "198.51.100.16", "198.51.100.17" };

	for (int i = 0; i < 4; i++) {
		struct ibc_flow f = { .af = AF_INET,
				      .src_port = 40000,
				      .dst_port = 9999,
				      .l4_proto = IPPROTO_UDP };
		uint64_t wq;
		uint32_t h;
		int own = 0;

		inet_pton(AF_INET, src[i], f.src_addr);
		inet_pton(AF_INET, "192.0.2.1", f.dst_addr);
		if (ibc_rss_lookup(rss, &f, &h, &wq) < 0) {
			printf("  %s:%u -> (table gone: %s)\n", src[i],
			       f.src_port, ibc_last_error());
			continue;
		}
		for (int k = 0; k < n_own; k++)
			own |= ids[k] == wq;
		printf("  udp %s:%u -> 192.0.2.1:9999  hash %08x  WQ %llu "
		       "(%s)\n",
		       src[i], f.src_port, h, (unsigned long long)wq,
		       own ? "this process" : "the other process");
	}
	fflush(stdout);
}

static void on_event(struct ibc_client *client, const struct ibc_event *ev,
		     void *arg)
{
	if (ev->type == IBC_EVENT_RSS_REBUILT ||
	    ev->type == IBC_EVENT_RSS_DESTROYED) {
		printf("event: RSS %llu %s: %s\n",
		       (unsigned long long)ev->object_id,
		       ev->type == IBC_EVENT_RSS_REBUILT ? "rebuilt" :
							   "destroyed",
		       ev->message);
		rebuilt = 1;
	}
}

int main(int argc, char **argv)
{
	struct ibc_connect_attr ca = { .comp_mask = IBC_CONNECT_ATTR_EVENT_CB,
				       .event_cb = on_event };
	struct ibc_rss_attr a = { .port_num = 1, .log_ind_tbl_size = 4 };
	int want =
		argc > 2 && strcmp(argv[1], "--wqs") == 0 ? atoi(argv[2]) : 2;
	struct ibc_client *client;
	struct ibc_ctx *ctx;
	struct ibc_rss *rss;
	struct ibc_cq *cq;

	if (argc < 3 || want < 1 || want > MAX_WQS / 2 ||
	    (strcmp(argv[1], "--wqs") && strcmp(argv[1], "--table"))) {
		fprintf(stderr, "Usage: rss --wqs N | rss --table ID...\n");
		return 2;
	}
	if (ibc_connect(&ca, &client) < 0) {
		fprintf(stderr, "rss: connect: %s\n", ibc_last_error());
		return 1;
	}
	if (ibc_open(client, NULL, &ctx) < 0 || ibc_cq_create(ctx, 64, &cq) < 0)
		return fail("open", client);
	for (n_own = 0; n_own < want; n_own++) {
		struct ibc_wq *wq;

		if (ibc_wq_create(ctx, cq, NULL, &wq) < 0)
			return fail("ibc_wq_create", client);
		ids[n_own] = ibc_wq_id(wq);
	}
	n_ids = n_own;
	if (strcmp(argv[1], "--wqs") == 0) {
		for (int i = 0; i < n_own; i++)
			printf("wq %llu\n", (unsigned long long)ids[i]);
		printf("holding them until killed (pid %d)\n", (int)getpid());
		fflush(stdout);
		for (;;)
			pause();
	}
	for (int i = 2; i < argc && n_ids < MAX_WQS; i++)
		ids[n_ids++] = strtoull(argv[i], NULL, 10);
	a.num_wqs = (uint32_t)n_ids;
	a.wq_ids = ids;
	memcpy(a.hash_key, key, sizeof(key));
	a.hash_fields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
			IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;
	a.match.af = AF_INET;
	inet_pton(AF_INET, "192.0.2.0", a.match.dst_addr);
	a.match.prefix_len = 24;
	a.match.l4_proto = IPPROTO_UDP;
	a.match.dst_port = 9999;
	a.match.port_mask = 0xffff;
	if (ibc_rss_create(ctx, &a, &rss) < 0)
		return fail("ibc_rss_create", client);
	printf("RSS %llu: a table of 16 entries over %d WQs (%d of this "
	       "process, %d of the other)\n",
	       (unsigned long long)ibc_rss_id(rss), n_ids, n_own,
	       n_ids - n_own);
	show_flows(rss);
	printf("waiting for the table to change (pid %d)\n", (int)getpid());
	fflush(stdout);
	while (!rebuilt) {
		struct pollfd p = { .fd = ibc_get_fd(client),
				    .events = POLLIN };

		if (p.fd < 0 || poll(&p, 1, 30000) <= 0 ||
		    ibc_dispatch(client) < 0)
			return fail("waiting for the event", client);
	}
	show_flows(rss);
	ibc_rss_destroy(rss);
	ibc_disconnect(client);
	return 0;
}
