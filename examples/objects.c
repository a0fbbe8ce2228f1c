// SPDX-License-Identifier: MIT
/*
 * Objects in a shared context: make a CQ, an RC QP on it and an MR with the
 * library's constructors, which register them with the broker; print them;
 * then either destroy them (the default) or, with --hold, wait until the
 * process is killed: the broker then destroys them itself
 * (`rdmabrokerctl objects` shows them until it has).
 * Build: cc objects.c $(pkg-config --cflags --libs libibclient)
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <ibclient.h>

static int fail(const char *what, struct ibc_client *client)
{
	fprintf(stderr, "objects: %s: %s\n", what, ibc_last_error());
	ibc_disconnect(client);
	return 1;
}

int main(int argc, char **argv)
{
	static char buf[4096];
	struct ibc_qp_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16,
			 .max_recv_wr = 16,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	int hold = argc > 1 && strcmp(argv[1], "--hold") == 0;
	struct ibc_client *client;
	struct ibc_ctx *ctx;
	struct ibc_cq *cq;
	struct ibc_qp *qp;
	struct ibc_mr *mr;

	if (ibc_connect(NULL, &client) < 0) {
		fprintf(stderr, "objects: connect: %s\n", ibc_last_error());
		return 1;
	}
	if (ibc_open(client, NULL, &ctx) < 0)
		return fail("open", client);
	if (ibc_cq_create(ctx, 64, &cq) < 0)
		return fail("ibc_cq_create", client);
	qa.send_cq = qa.recv_cq = cq;
	if (ibc_qp_create(ctx, &qa, &qp) < 0)
		return fail("ibc_qp_create", client);
	if (ibc_reg_mr(ctx, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE, &mr) < 0)
		return fail("ibc_reg_mr", client);
	printf("made a CQ of %d entries, RC QP %u, an MR with lkey %#x\n",
	       ibc_cq_cqe(cq), ibc_qp_num(qp), ibc_mr_lkey(mr));
	if (hold) {
		printf("holding them until killed (pid %d)\n", (int)getpid());
		fflush(stdout);
		for (;;)
			pause();
	}
	/* In dependency order: the CQ cannot go while the QP uses it. */
	if (ibc_dereg_mr(mr) < 0 || ibc_qp_destroy(qp) < 0 ||
	    ibc_cq_destroy(cq) < 0)
		return fail("destroy", client);
	printf("destroyed them\n");
	ibc_close(ctx);
	ibc_disconnect(client);
	return 0;
}
