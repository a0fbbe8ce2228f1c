// SPDX-License-Identifier: MIT
/*
 * XRC domains by name: open the XRCD NAME (creating it if it does not
 * exist), make an XRC SRQ on it, print the inode the kernel keys the XRCD
 * by and the SRQ's number, then hold both until standard input ends. Two
 * processes that open one name share one inode: one XRC domain.
 * Build: cc xrcd.c $(pkg-config --cflags --libs libibclient)
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include <ibclient.h>

static int fail(const char *what, struct ibc_client *client)
{
	fprintf(stderr, "xrcd: %s: %s\n", what, ibc_last_error());
	ibc_disconnect(client);
	return 1;
}

int main(int argc, char **argv)
{
	struct ibv_srq_attr sa = { .max_wr = 16, .max_sge = 1 };
	const char *name = argc > 1 ? argv[1] : "demo";
	struct ibc_client *client;
	struct ibc_xrcd *xrcd;
	struct ibc_ctx *ctx;
	struct ibc_srq *srq;
	struct ibc_cq *cq;
	char c;

	if (ibc_connect(NULL, &client) < 0) {
		fprintf(stderr, "xrcd: connect: %s\n", ibc_last_error());
		return 1;
	}
	if (ibc_open(client, NULL, &ctx) < 0)
		return fail("open", client);
	if (ibc_xrcd_open(ctx, name, O_CREAT, &xrcd) < 0)
		return fail("ibc_xrcd_open", client);
	if (ibc_cq_create(ctx, 16, &cq) < 0)
		return fail("ibc_cq_create", client);
	if (ibc_srq_create_xrc(xrcd, cq, &sa, &srq) < 0)
		return fail("ibc_srq_create_xrc", client);
	printf("pid %d: XRCD \"%s\" inode %" PRIu64 ", XRC SRQ number %u\n",
	       (int)getpid(), name, ibc_xrcd_ino(xrcd), ibc_srq_num(srq));
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	/* The SRQ first: the XRCD's close is EBUSY while it exists. */
	if (ibc_srq_destroy(srq) < 0 || ibc_xrcd_close(xrcd) < 0 ||
	    ibc_cq_destroy(cq) < 0)
		return fail("destroy", client);
	ibc_disconnect(client);
	return 0;
}
