// SPDX-License-Identifier: MIT
/*
 * XRC domains by name on real mlx5 hardware; exits 77 (skipped) without
 * it. Unverified until someone runs it on a ConnectX-5 or newer: see
 * README.md.
 *
 * The daemon (rdmabrokerd --device verbs) runs as the caller; two clients
 * open one XRCD by name, declared for their domains: the same inode, their
 * ibv_open_xrcd on the broker's file. As root the first client becomes
 * nobody and the second stays root, so that they are of two domains with
 * two kernel contexts (and the second may kill the first). The first makes
 * an XRC SRQ and a target QP, the second opens that target QP by number
 * (ibv_open_qp) and finds close EBUSY while it holds it, from the library
 * and from the kernel. Then the first is killed: the broker destroys its
 * CQ, SRQ and QP by handle and drops its open. The kernel is asked, not
 * the broker (`rdma resource`, by count and by QP number: the dead
 * creator's pid is no longer listed): one CQ and one SRQ fewer, and the
 * target QP still there while the second holds it open (the kernel keeps
 * an XRC target QP until its last open goes), gone once the second
 * destroys it. The XRCD listing shows the dead client's open dropped too.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define HW_NAME "hw_xrcd"
#include "tests/hw/hwlib.h"

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

	CHECK(geteuid() != 0 || hw_become(NOBODY) == 0, "cannot become nobody");
	CHECK(hw_connect(&c) == 0, "connect");
	CHECK(ibc_open(c, dev, &ctx) == 0, "ibc_open %s", dev);
	CHECK(ibc_xrcd_open(ctx, "hw", O_CREAT, &x) == 0, "ibc_xrcd_open");
	CHECK(ibc_verbs_xrcd(x), "no ibv_xrcd");
	CHECK(ibc_cq_create(ctx, 16, &cq) == 0, "ibc_cq_create");
	CHECK(ibc_srq_create_xrc(x, cq, &sa, &srq) == 0, "ibc_srq_create_xrc");
	CHECK(ibc_srq_num(srq), "SRQ number 0");
	CHECK(ibc_qp_create_xrc_tgt(x, &qp) == 0, "ibc_qp_create_xrc_tgt");
	CHECK(ibc_xrcd_close(x) == -EBUSY, "close with an SRQ and a QP");
	/* The kernel's rule too: mlx5_close_xrcd keeps it when refused. */
	CHECK(ibv_close_xrcd(ibc_verbs_xrcd(x)) == EBUSY,
	      "ibv_close_xrcd with an SRQ and a QP");
	snprintf(line, sizeof(line), "%llu %u\n",
		 (unsigned long long)ibc_xrcd_ino(x), ibc_qp_num(qp));
	CHECK(write(out_fd, line, strlen(line)) > 0, "write");
	for (;;)
		pause();
}

/* The second client, in a child of its own as the caller (the first is
 * nobody when that is root: another domain, another kernel context): the
 * first one's inode, its target QP by number, close EBUSY by the library's
 * count and by the kernel's own; then it kills the first and waits for the
 * broker to drop the dead client's open. */
static int second(const char *dev, unsigned long long ino, unsigned int qpn,
		  pid_t first_pid)
{
	struct ibc_xrcd_info *info;
	struct ibc_client *c;
	struct ibc_ctx *ctx;
	struct ibc_xrcd *x;
	int srq0, srq1, cq0, cq1, listed;
	struct ibc_qp *qp;
	size_t n = 0;
	bool dropped;

	CHECK(hw_connect(&c) == 0, "second client: connect");
	CHECK(ibc_open(c, dev, &ctx) == 0, "second client: ibc_open %s", dev);
	CHECK(ibc_xrcd_open(ctx, "hw", 0, &x) == 0,
	      "second client: ibc_xrcd_open");
	CHECK(ibc_xrcd_ino(x) == ino, "inode %llu, the first client's %llu",
	      (unsigned long long)ibc_xrcd_ino(x), ino);
	/* ib_open_qp finds the number in the kernel XRCD's own list: another
	 * context reaches it only if the inode keyed one XRCD for both. */
	CHECK(ibc_qp_open_xrc_tgt(x, qpn, &qp) == 0,
	      "ibc_qp_open_xrc_tgt of QP %u", qpn);
	CHECK(ibc_qp_num(qp) == qpn, "opened QP %u, not %u", ibc_qp_num(qp),
	      qpn);
	CHECK(ibc_xrcd_close(x) == -EBUSY, "ibc_xrcd_close while the QP is "
					   "open");
	CHECK(ibv_close_xrcd(ibc_verbs_xrcd(x)) == EBUSY,
	      "ibv_close_xrcd while the QP is open");
	srq0 = hw_rdma_count("srq");
	cq0 = hw_rdma_count("cq");
	listed = hw_rdma_qp_listed(qpn);
	CHECK(srq0 > 0 && cq0 > 0 && listed == 1,
	      "rdma resource before the kill: srq %d, cq %d, QP %u %s", srq0,
	      cq0, qpn, listed == 1 ? "listed" : "not listed");
	CHECK(kill(first_pid, SIGKILL) == 0, "cannot kill the first client");
	srq1 = hw_wait_count("srq", srq0 - 1, 5000);
	cq1 = hw_wait_count("cq", cq0 - 1, 5000);
	listed = hw_rdma_qp_listed(qpn);
	printf("hw_xrcd: rdma resource after the first client's SIGKILL: srq "
	       "%d -> %d, cq %d -> %d, target QP %u %s\n",
	       srq0, srq1, cq0, cq1, qpn,
	       listed == 1 ? "listed" :
	       listed	   ? "unknown" :
			     "gone");
	CHECK(srq1 == srq0 - 1 && cq1 == cq0 - 1,
	      "the killed client's SRQ or CQ stayed in the kernel");
	CHECK(listed == 1, "the target QP went while this client holds it");
	for (int i = 0;; i++) {
		CHECK(i < 100, "the killed client's open stayed");
		CHECK(ibc_list_xrcds(c, "hw", &info, sizeof(*info), &n) == 0,
		      "ibc_list_xrcds");
		dropped = n == 1 && info[0].n_opens == 1;
		ibc_list_free(info);
		if (dropped)
			break;
		usleep(50000);
	}
	CHECK(ibc_qp_destroy(qp) == 0, "ibc_qp_destroy");
	for (int i = 0; (listed = hw_rdma_qp_listed(qpn)) != 0; i++) {
		CHECK(i < 50,
		      "target QP %u stayed in the kernel after its last "
		      "open went",
		      qpn);
		usleep(100000);
	}
	CHECK(ibc_xrcd_close(x) == 0, "ibc_xrcd_close");
	ibc_disconnect(c);
	return 0;
}

int main(int argc, char **argv)
{
	const char *bin = getenv("RDMABROKERD");
	const char *dev;
	unsigned int uid = (unsigned int)getuid();
	pid_t first_pid = -1, second_pid = -1;
	unsigned long long ino = 0;
	unsigned int qpn = 0;
	int out[2], st, ret;
	char conf[256];
	FILE *f = NULL;

	ret = hw_init(argc, argv, hw_find_mlx5, &dev);
	if (ret)
		return ret;
	if (hw_mode != HW_MLX5) {
		/* Its checks are the kernel's: ibv_close_xrcd, ibv_open_qp
		 * across contexts, rdma resource (tests/check_xrcd.c has the
		 * broker's side on the soft device). */
		fprintf(stderr, "hw_xrcd: mlx5 only\n");
		return 2;
	}
	ret = 1;
	if (!bin || hw_mkdir("rdmab-hwx") < 0 || pipe2(out, O_CLOEXEC) < 0)
		return 99;
	/* As root, the clients are of two domains that share the declared
	 * XRCD (a: the second, root; b: the first, nobody); otherwise both
	 * are the caller, in one. */
	if (uid == 0)
		snprintf(conf, sizeof(conf),
			 "[domain a]\nusers = 0\n[domain b]\nusers = %d\n"
			 "[xrcd hw]\ndomains = a, b\n",
			 NOBODY);
	else
		snprintf(conf, sizeof(conf),
			 "[domain a]\nusers = %u\n[xrcd hw]\ndomains = a\n",
			 uid);
	if (hw_start_daemon(bin, conf) < 0)
		goto out;
	first_pid = fork();
	if (first_pid == 0) {
		close(out[0]);
		_exit(first(dev, out[1]));
	}
	close(out[1]);
	f = fdopen(out[0], "r");
	if (first_pid < 0 || !f || fscanf(f, "%llu %u", &ino, &qpn) != 2)
		goto out;
	second_pid = fork();
	if (second_pid == 0)
		_exit(second(dev, ino, qpn, first_pid));
	if (second_pid > 0 && waitpid(second_pid, &st, 0) == second_pid &&
	    WIFEXITED(st) && WEXITSTATUS(st) == 0)
		ret = 0;
out:
	/* Whatever failed, the first client goes (it holds its objects until
	 * killed) before the daemon. */
	if (first_pid > 0) {
		kill(first_pid, SIGKILL);
		waitpid(first_pid, NULL, 0);
	}
	if (f)
		fclose(f);
	hw_stop_daemon("xrcd");
	printf("hw_xrcd: %s: %s%s\n", dev, ret ? "FAIL" : "PASS",
	       uid ? " (one domain: run as root for two)" : "");
	return ret;
}
