// SPDX-License-Identifier: MIT
/*
 * XRC domains by name on real mlx5 hardware; exits 77 (skipped) without
 * it. Unverified until someone runs it on a ConnectX-5 or newer: see
 * README.md.
 *
 * The daemon (rdmabrokerd --device verbs) runs as the caller; two clients
 * (as nobody when the caller is root) open one XRCD by name: the same
 * inode, their ibv_open_xrcd on the broker's file. The first makes an XRC
 * SRQ and a target QP, the second opens that target QP by number
 * (ibv_open_qp) and finds close EBUSY while it holds it. Then the first is
 * killed: the broker destroys its SRQ and QP by handle and drops its open,
 * which the XRCD listing shows.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define HW_NAME "hw_xrcd"
#include "tests/hw/hwlib.h"

static int become_nobody(void)
{
	if (geteuid() != 0)
		return 0;
	return setgroups(0, NULL) == 0 &&
			       setresgid(NOBODY, NOBODY, NOBODY) == 0 &&
			       setresuid(NOBODY, NOBODY, NOBODY) == 0 ?
		       0 :
		       -1;
}

/* The first client: XRCD, CQ, XRC SRQ, target QP; reports, then holds
 * them until killed. */
static int first(const char *dev, int out_fd)
{
	struct ibv_srq_attr sa = { .max_wr = 16, .max_sge = 1 };
	struct ibc_client *c;
	struct ibc_ctx *ctx;
	struct ibc_xrcd *x;
	struct ibc_cq *cq;
	struct ibc_srq *srq;
	struct ibc_qp *qp;
	char line[128];

	CHECK(become_nobody() == 0, "cannot become nobody");
	CHECK(hw_connect(&c) == 0, "connect");
	CHECK(ibc_open(c, dev, &ctx) == 0, "ibc_open %s", dev);
	CHECK(ibc_xrcd_open(ctx, "hw", O_CREAT | O_EXCL, &x) == 0,
	      "ibc_xrcd_open");
	CHECK(ibc_verbs_xrcd(x), "no ibv_xrcd");
	CHECK(ibc_cq_create(ctx, 16, &cq) == 0, "ibc_cq_create");
	CHECK(ibc_srq_create_xrc(x, cq, &sa, &srq) == 0, "ibc_srq_create_xrc");
	CHECK(ibc_srq_num(srq), "SRQ number 0");
	CHECK(ibc_qp_create_xrc_tgt(x, &qp) == 0, "ibc_qp_create_xrc_tgt");
	CHECK(ibc_xrcd_close(x) == -EBUSY, "close with an SRQ and a QP");
	snprintf(line, sizeof(line), "%llu %u\n",
		 (unsigned long long)ibc_xrcd_ino(x), ibc_qp_num(qp));
	CHECK(write(out_fd, line, strlen(line)) > 0, "write");
	for (;;)
		pause();
}

int main(void)
{
	const char *bin = getenv("RDMABROKERD");
	const char *dev = hw_find_mlx5();
	unsigned long long ino = 0;
	unsigned int qpn = 0;
	struct ibc_xrcd_info *info;
	struct ibc_client *c;
	struct ibc_ctx *ctx;
	struct ibc_xrcd *x;
	struct ibc_qp *qp;
	int out[2], st, ret = 1;
	size_t n = 0;
	pid_t child;
	FILE *f;

	if (!dev) {
		printf("hw_xrcd: no device driven by mlx5_core; skipped\n");
		return SKIP;
	}
	if (!bin || hw_mkdir("/tmp/rdmab-hwx-XXXXXX") < 0 || pipe(out) < 0)
		return 99;
	if (hw_start_daemon(bin, NULL) < 0) {
		hw_stop_daemon("xrcd");
		return 1;
	}
	child = fork();
	if (child == 0) {
		close(out[0]);
		_exit(first(dev, out[1]));
	}
	close(out[1]);
	f = fdopen(out[0], "r");
	if (!f || fscanf(f, "%llu %u", &ino, &qpn) != 2)
		goto out;
	/* The second client: the same inode, the target QP by number. */
	if (become_nobody() < 0 || hw_connect(&c) < 0 ||
	    ibc_open(c, dev, &ctx) < 0 || ibc_xrcd_open(ctx, "hw", 0, &x) < 0)
		goto out;
	if (ibc_xrcd_ino(x) != ino ||
	    ibc_qp_open_xrc_tgt(x, qpn, &qp) < 0 || ibc_qp_num(qp) != qpn ||
	    ibc_xrcd_close(x) != -EBUSY) {
		fprintf(stderr, "hw_xrcd: second client: %s\n",
			ibc_last_error());
		goto out;
	}
	kill(child, SIGKILL);
	waitpid(child, &st, 0);
	/* The broker drops the dead client's open once its SRQ and QP are
	 * destroyed. */
	for (int i = 0; i < 100; i++) {
		if (ibc_list_xrcds(c, "hw", &info, sizeof(*info), &n) < 0)
			goto out;
		if (n == 1 && info[0].n_opens == 1) {
			ibc_list_free(info);
			ret = 0;
			break;
		}
		ibc_list_free(info);
		usleep(50000);
	}
	if (ret)
		fprintf(stderr, "hw_xrcd: the killed client's open stayed\n");
	if (!ret && (ibc_qp_destroy(qp) < 0 || ibc_xrcd_close(x) < 0)) {
		fprintf(stderr, "hw_xrcd: teardown: %s\n", ibc_last_error());
		ret = 1;
	}
	ibc_disconnect(c);
out:
	if (f)
		fclose(f);
	hw_stop_daemon("xrcd");
	printf("hw_xrcd: %s: %s\n", dev, ret ? "FAIL" : "PASS");
	return ret;
}
