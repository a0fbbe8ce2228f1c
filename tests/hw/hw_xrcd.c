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

#include "include/ibclient.h"

#define SKIP 77
#define NOBODY 65534

static char dir[] = "/tmp/rdmab-hwx-XXXXXX";
static char sock[256], conf[256];
static pid_t daemon_pid = -1;

#define CHECK(cond, ...)                                                  \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr, "hw_xrcd: " __VA_ARGS__);         \
			fprintf(stderr, " (%s)\n", ibc_last_error());     \
			return 1;                                         \
		}                                                         \
	} while (0)

static const char *find_mlx5(void)
{
	static char name[64];
	struct ibv_device **list;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	name[0] = '\0';
	for (int i = 0; i < n && !name[0]; i++) {
		char path[IBV_SYSFS_PATH_MAX + 32], link[256];
		ssize_t len;

		snprintf(path, sizeof(path), "%s/device/driver",
			 list[i]->ibdev_path);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		if (strcmp(basename(link), "mlx5_core") == 0)
			snprintf(name, sizeof(name), "%s",
				 ibv_get_device_name(list[i]));
	}
	ibv_free_device_list(list);
	return name[0] ? name : NULL;
}

static int connect_client(struct ibc_client **ret)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET,
		.socket_path = sock,
	};

	return ibc_connect(&attr, ret);
}

static int start_daemon(const char *bin)
{
	struct ibc_client *c;
	int fd = open(conf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		return -1;
	close(fd);
	daemon_pid = fork();
	if (daemon_pid == 0) {
		execl(bin, bin, "--device", "verbs", "--socket", sock,
		      "--runtime-dir", dir, "--config", conf, "--socket-mode",
		      "0666", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) {
		if (waitpid(daemon_pid, NULL, WNOHANG) == daemon_pid) {
			daemon_pid = -1;
			return -1;
		}
		if (connect_client(&c) == 0) {
			ibc_disconnect(c);
			return 0;
		}
		usleep(50000);
	}
	return -1;
}

static void stop_daemon(void)
{
	char path[300];

	if (daemon_pid > 0) {
		kill(daemon_pid, SIGTERM);
		waitpid(daemon_pid, NULL, 0);
	}
	unlink(conf);
	unlink(sock);
	snprintf(path, sizeof(path), "%s/xrcd", dir);
	rmdir(path);
	rmdir(dir);
}

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
	CHECK(connect_client(&c) == 0, "connect");
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
	const char *dev = find_mlx5();
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
	if (!bin || !mkdtemp(dir) || pipe(out) < 0)
		return 99;
	chmod(dir, 0755);
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	snprintf(conf, sizeof(conf), "%s/rdmabroker.conf", dir);
	if (start_daemon(bin) < 0) {
		stop_daemon();
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
	if (become_nobody() < 0 || connect_client(&c) < 0 ||
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
	stop_daemon();
	printf("hw_xrcd: %s: %s\n", dev, ret ? "FAIL" : "PASS");
	return ret;
}
