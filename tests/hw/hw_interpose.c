// SPDX-License-Identifier: MIT
/*
 * Unmodified verbs programs under the interposer (libibclient-verbs.so,
 * issue 28) on real mlx5 hardware; exits 77 (skipped) without it.
 * Unverified until someone runs it on a ConnectX-5 or newer: see
 * README.md.
 *
 * Two programs, A and B (tests/interpose-prog hold: plain libibverbs, no
 * libibclient), run preloaded, as nobody when the caller is root (no
 * CAP_NET_RAW, another uid than the broker's). Each opens the device: the
 * interposer imports the domain's context, so their cmd_fds are one open
 * file (kcmp); each makes a PD, two CQs, an SRQ, an RC QP and an MR in
 * it, and the registry lists each of those handles as the program's, of
 * the right kind. The kernel lists A's QP; A is SIGKILLed: the broker
 * destroys its objects (the kernel no longer lists the QP, the registry
 * nothing of A's), B's stay. Before that this process, in the domain's
 * context, destroys A's MR by handle with a raw ioctl: the kernel does
 * (one context), A's ibv_dereg_mr answers ENOENT and the registry drops
 * it. A third program (interpose-prog rss) makes
 * two WQs, an indirection table, an RSS QP and a UDP flow without
 * CAP_NET_RAW (the domain's rss_allow lists the flow): the broker's RSS
 * object over its two WQs is listed, and goes with its SIGKILL.
 *
 * --soft: the same against the soft device (make check, tests/hw/soft.sh):
 * the registry's side; the kernel's (kcmp, rdma resource) on SKIP lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/kcmp.h>

#define HW_NAME "hw_interpose"
#include "daemon/device/verbs/uverbs.h"
#include "tests/hw/hwlib.h"

#define N_HANDLES 6

/* A program under the interposer, and what its READY line said. */
struct prog {
	pid_t pid;
	int out; /* its stdout */
	int in;	 /* its stdin, kept open: the rss mode waits on it */
	uint32_t qpn;
	int cmd_fd;
	/* PD, CQ, CQ, SRQ, QP, MR */
	unsigned int handles[N_HANDLES];
};

static const enum ibc_obj_kind handle_kinds[N_HANDLES] = {
	IBC_OBJ_PD, IBC_OBJ_CQ, IBC_OBJ_CQ, IBC_OBJ_SRQ, IBC_OBJ_QP, IBC_OBJ_MR,
};

/* One line of @fd into @buf within 20 s; 0, or -1 at its end. */
static int read_line(int fd, char *buf, size_t size)
{
	size_t n = 0;

	while (n + 1 < size) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char ch;

		if (poll(&p, 1, 20000) != 1 || read(fd, &ch, 1) != 1)
			return -1;
		if (ch == '\n')
			break;
		buf[n++] = ch;
	}
	buf[n] = '\0';
	return 0;
}

/* Start interpose-prog @mode preloaded, as nobody when root; wait for
 * the line starting with @ready, copied to @line. */
static int spawn(struct prog *p, const char *mode, const char *ready,
		 char *line, size_t size)
{
	const char *top = getenv("abs_top_builddir");
	char interp[512], prog[512];
	int out[2], in[2];

	snprintf(interp, sizeof(interp),
		 "%s/interpose/.libs/libibclient-verbs.so", top ? top : ".");
	snprintf(prog, sizeof(prog), "%s/tests/interpose-prog",
		 top ? top : ".");
	CHECK(pipe2(out, O_CLOEXEC) == 0 && pipe2(in, O_CLOEXEC) == 0, "pipe2");
	p->pid = fork();
	CHECK(p->pid >= 0, "fork");
	if (p->pid == 0) {
		if (dup2(out[1], 1) < 0 || dup2(in[0], 0) < 0)
			_exit(98);
		/* No CAP_NET_RAW, and another uid than the broker's. */
		if (geteuid() == 0 && hw_become(NOBODY) < 0)
			_exit(97);
		setenv("LD_PRELOAD", interp, 1);
		setenv("RDMABROKER_SOCKET", hw_sock, 1);
		execl(prog, prog, mode, (char *)NULL);
		_exit(96);
	}
	close(out[1]);
	close(in[0]);
	p->out = out[0];
	p->in = in[1];
	line[0] = '\0';
	for (;;) {
		char last[256];

		snprintf(last, sizeof(last), "%s", line);
		CHECK(read_line(p->out, line, size) == 0,
		      "%s: no \"%s\" line (exit or timeout) after \"%s\"", mode,
		      ready, last);
		if (!strncmp(line, ready, strlen(ready)))
			return 0;
	}
}

static int spawn_hold(struct prog *p)
{
	char line[256], dev[64];
	unsigned int *h = p->handles;

	if (spawn(p, "hold", "READY", line, sizeof(line)))
		return 1;
	CHECK(sscanf(line,
		     "READY %63s qp_num %u cmd_fd %d handles %u %u %u %u %u %u",
		     dev, &p->qpn, &p->cmd_fd, &h[0], &h[1], &h[2], &h[3],
		     &h[4], &h[5]) == 9,
	      "hold: \"%s\"", line);
	return 0;
}

static void stop(struct prog *p)
{
	kill(p->pid, SIGKILL);
	waitpid(p->pid, NULL, 0);
	close(p->out);
	close(p->in);
}

/* How many of @p's handles the registry lists as its, of their kind;
 * and how many objects it lists of @p's pid at all. */
static int listed(struct ibc_client *c, const struct prog *p, int *ret_all)
{
	struct ibc_object_info *o;
	size_t n = 0;
	int found = 0;

	if (ibc_list_objects(c, NULL, &o, sizeof(*o), &n) < 0)
		return -1;
	*ret_all = 0;
	for (size_t i = 0; i < n; i++) {
		if (o[i].pid != (uint32_t)p->pid)
			continue;
		(*ret_all)++;
		for (int k = 0; k < N_HANDLES; k++)
			if (o[i].handle == p->handles[k] &&
			    o[i].kind == handle_kinds[k]) {
				found++;
				break;
			}
	}
	ibc_list_free(o);
	return found;
}

/* Wait until the registry lists nothing of @p's. */
static int gone(struct ibc_client *c, const struct prog *p)
{
	int all = -1;

	for (int i = 0; i < 50; i++) {
		if (listed(c, p, &all) >= 0 && all == 0)
			break;
		usleep(100000);
	}
	CHECK(all == 0,
	      "the registry still lists %d objects of the killed pid %d", all,
	      (int)p->pid);
	return 0;
}

static int check_held(struct ibc_client *c, const struct prog *p, char who)
{
	/* The soft device makes every object on the domain's PD. */
	int want = hw_mode == HW_SOFT ? N_HANDLES - 1 : N_HANDLES, all = 0;
	int found = listed(c, p, &all);

	CHECK(found == want && all == want,
	      "%c: the registry lists %d of its %d handles (%d objects)", who,
	      found, want, all);
	printf(HW_NAME ": %c's PD, CQs, SRQ, QP and MR are in the registry "
		       "by their handles (%d)\n",
	       who, found);
	return 0;
}

/* The broker's RSS object of interpose-prog rss: 2 WQs, UDP port 4791. */
static int rss_listed(struct ibc_client *c)
{
	struct ibc_rss_info *r;
	size_t n = 0;
	int found = 0;

	if (ibc_list_rss(c, &r, sizeof(*r), &n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (r[i].num_wqs == 2 && r[i].log_ind_tbl_size == 1 &&
		    r[i].match.dst_port == 4791)
			found++;
	ibc_list_free(r);
	return found;
}

static int check_rss(struct ibc_client *c)
{
	struct prog p;
	char line[256];
	int n = -1;

	if (spawn(&p, "rss", "rss busy", line, sizeof(line)))
		return 1;
	CHECK(!strcmp(line, "rss busy EBUSY EBUSY EBUSY"),
	      "rss: the table, QP and QP's PD in use: \"%s\"", line);
	CHECK(read_line(p.out, line, sizeof(line)) == 0 &&
		      !strcmp(line, "READY RSS"),
	      "rss: \"%s\"", line);
	CHECK(rss_listed(c) == 1, "rss: the broker lists no RSS object of "
				  "the program's flow");
	printf(HW_NAME ": WQs, table, RSS QP and flow of a program without "
		       "CAP_NET_RAW are the broker's RSS object\n");
	stop(&p);
	for (int i = 0; i < 50 && (n = rss_listed(c)); i++)
		usleep(100000);
	CHECK(n == 0, "rss: the killed program's RSS object remains");
	return 0;
}

/*
 * Another process of the domain (this one, in the domain's context)
 * destroys A's MR by its handle with a raw ioctl: one ufile, so the handle
 * is valid here and the kernel destroys it (the domain is the trust
 * boundary, DESIGN §4; in a context of one's own the number would name
 * this process's own object, or nothing). A's ibv_dereg_mr then gets the
 * kernel's ENOENT, as without the broker, and the registry drops the MR
 * instead of registering a handle the kernel may give to the next object.
 */
static int raw_destroy(struct ibc_client *c, struct prog *a)
{
	struct ibv_context *vctx;
	struct ibc_ctx *ctx;
	char line[64];
	int all = 0, err;

	CHECK(ibc_open(c, NULL, &ctx) == 0, "ibc_open");
	vctx = ibc_verbs_context(ctx);
	CHECK(vctx, "no verbs context");
	err = uverbs_destroy(vctx->cmd_fd, IBC_OBJ_MR, a->handles[5]);
	CHECK(err == 0, "destroying A's MR %u by handle: %s", a->handles[5],
	      strerror(-err));
	CHECK(write(a->in, "dereg\n", 6) == 6 &&
		      read_line(a->out, line, sizeof(line)) == 0,
	      "A's dereg");
	CHECK(!strcmp(line, "dereg ENOENT"), "A: \"%s\"", line);
	for (int i = 0; i < 50 && listed(c, a, &all) >= 0 && all != 5; i++)
		usleep(100000);
	CHECK(all == 5,
	      "the registry lists %d of A's objects, not 5 (its MR "
	      "handed back)",
	      all);
	printf(HW_NAME ": A's MR destroyed by handle from another process of "
		       "the domain; A's dereg answers ENOENT and the registry "
		       "drops it\n");
	ibc_close(ctx);
	return 0;
}

static int run(void)
{
	struct prog a, b;
	struct ibc_client *c;
	int all = 0;

	CHECK(hw_connect(&c) == 0, "connect");
	if (spawn_hold(&a) || spawn_hold(&b))
		return 1;
	if (check_held(c, &a, 'A') || check_held(c, &b, 'B'))
		return 1;
	if (hw_mode == HW_SOFT) {
		HW_SKIP("kcmp and rdma resource", "the soft device has no "
						  "kernel objects");
	} else {
		CHECK(syscall(SYS_kcmp, a.pid, b.pid, KCMP_FILE, a.cmd_fd,
			      b.cmd_fd) == 0,
		      "A's and B's cmd_fds are not one open file: the "
		      "domain's context was not imported");
		CHECK(hw_rdma_qp_listed(a.qpn) == 1, "A's QP %u: not listed",
		      a.qpn);
	}
	if (hw_mode == HW_SOFT)
		HW_SKIP("a destroy by handle", "the soft device has no uverbs "
					       "descriptor");
	else if (raw_destroy(c, &a))
		return 1;
	stop(&a);
	if (gone(c, &a))
		return 1;
	if (hw_mode != HW_SOFT) {
		int l = 1;

		for (int i = 0; i < 50 && (l = hw_rdma_qp_listed(a.qpn)); i++)
			usleep(100000);
		CHECK(l == 0, "A's QP %u stayed in the kernel", a.qpn);
	}
	CHECK(listed(c, &b, &all) == (hw_mode == HW_SOFT ? 5 : 6),
	      "B's objects changed when A died");
	printf(HW_NAME ": A's SIGKILL: its objects destroyed by the broker, "
		       "B's untouched\n");
	stop(&b);
	if (gone(c, &b) || check_rss(c))
		return 1;
	ibc_disconnect(c);
	return 0;
}

int main(int argc, char **argv)
{
	const char *bin = getenv("RDMABROKERD");
	const char *dev;
	char conf[256];
	int ret;

	ret = hw_init(argc, argv, hw_find_mlx5, &dev);
	if (ret)
		return ret;
	if (hw_mode == HW_OWN) {
		/* tests/vm/interpose.sh runs it on rxe's own contexts. */
		HW_SKIP("everything", "the interposer on own contexts is "
				      "check-vm's");
		return SKIP;
	}
	if (!bin || hw_mkdir("rdmab-hwi") < 0)
		return 99;
	/* The programs (nobody, or the caller) join the caller's domain,
	 * which may claim the rss mode's flow. */
	snprintf(conf, sizeof(conf),
		 "[domain hw]\nusers = %u, %d\n"
		 "rss_allow = ipv4/udp 10.0.0.1/32 4791\n",
		 (unsigned int)getuid(), NOBODY);
	hw_domain = "hw";
	ret = hw_start_daemon(bin, conf) < 0 ? 1 : run();
	hw_stop_daemon(NULL);
	if (ret == 0)
		printf(HW_NAME ": %s: all passed\n", dev);
	return ret;
}
