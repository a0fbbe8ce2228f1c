// SPDX-License-Identifier: MIT
/*
 * The import path on real mlx5 hardware; exits 77 (skipped) without it.
 * Unverified until someone runs it on a ConnectX-5 or newer: see README.md.
 *
 * The daemon (rdmabrokerd --device verbs) runs as the caller; two clients
 * run at once, as nobody when the caller is root (the deployment case: the
 * importer is another process and uid than the opener), each importing the
 * domain's context and PD and registering an MR on it. They share the
 * context when the broker gives both the same context id and their cmd_fds
 * are the same open file (kcmp).
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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/kcmp.h>

#include <infiniband/verbs.h>

#include "include/ibclient.h"

#define SKIP 77
#define NOBODY 65534

static char dir[] = "/tmp/rdmab-hw-XXXXXX";
static char sock[256], conf[256];
static pid_t daemon_pid = -1;

#define CHECK(cond, ...)                                                  \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr, "hw_import: " __VA_ARGS__);       \
			fprintf(stderr, " (%s)\n", ibc_last_error());     \
			return 1;                                         \
		}                                                         \
	} while (0)

/* An mlx5 device, found by its kernel driver: udev's persistent naming
 * renames them (roce..., ib...), so the name says nothing. */
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

/* Start the daemon and wait until it serves a client (or died). */
static int start_daemon(const char *bin)
{
	struct ibc_client *c;
	int fd = open(conf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	/* An empty configuration: never the machine's own. */
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
			fprintf(stderr, "hw_import: rdmabrokerd exited at "
					"start\n");
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
	if (daemon_pid > 0) {
		kill(daemon_pid, SIGTERM);
		waitpid(daemon_pid, NULL, 0);
	}
	unlink(conf);
	unlink(sock);
	rmdir(dir);
}

/* The broker lists @dev as importable. */
static int check_listed(const char *dev)
{
	struct ibc_device_info *d;
	struct ibc_client *c;
	int found = 0;
	size_t n;

	CHECK(connect_client(&c) == 0, "connect");
	CHECK(ibc_list_devices(c, &d, sizeof(*d), &n) == 0, "ibc_list_devices");
	for (size_t i = 0; i < n; i++)
		if (strcmp(d[i].name, dev) == 0 && d[i].import)
			found = 1;
	ibc_list_free(d);
	ibc_disconnect(c);
	CHECK(found, "%s is not listed as importable", dev);
	return 0;
}

/* One client: import, register an MR on the shared PD, report, then hold
 * everything until the parent closes @hold. */
static int client(const char *dev, int out_fd, int hold)
{
	static char buf[4096];
	struct ibc_client *c;
	struct ibc_caps caps;
	struct ibc_ctx *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	char line[128], x;

	if (geteuid() == 0)
		CHECK(setgroups(0, NULL) == 0 && setresgid(NOBODY, NOBODY,
							   NOBODY) == 0 &&
			      setresuid(NOBODY, NOBODY, NOBODY) == 0,
		      "cannot become uid %d", NOBODY);
	CHECK(connect_client(&c) == 0, "connect");
	CHECK(ibc_open(c, dev, &ctx) == 0, "ibc_open %s", dev);
	CHECK(ibc_query(ctx, &caps, sizeof(caps)) == 0, "ibc_query");
	CHECK(caps.shared, "%s: context not shared", dev);
	CHECK(ibc_verbs_context(ctx), "no verbs context");
	pd = ibc_verbs_pd(ctx);
	CHECK(pd, "no shared PD");
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr, "ibv_reg_mr on the shared PD: %s", strerror(errno));
	snprintf(line, sizeof(line), "%llu %d %d\n",
		 (unsigned long long)caps.context_id, (int)getpid(),
		 ibc_verbs_context(ctx)->cmd_fd);
	CHECK(write(out_fd, line, strlen(line)) > 0, "write");
	close(out_fd);
	while (read(hold, &x, 1) > 0)
		;
	ibv_dereg_mr(mr);
	ibc_close(ctx);
	ibc_disconnect(c);
	return 0;
}

int main(int argc, char **argv)
{
	const char *bin = getenv("RDMABROKERD");
	const char *dev = find_mlx5();
	unsigned long long id[2] = { 0 };
	int pid[2] = { 0 }, cfd[2] = { 0 };
	int out[2], hold[2], ret = 0;
	pid_t child[2];
	FILE *f;

	if (!dev) {
		printf("hw_import: no device driven by mlx5_core; skipped\n");
		return SKIP;
	}
	if (!bin || !mkdtemp(dir) || pipe(out) < 0 || pipe(hold) < 0)
		return 99;
	chmod(dir, 0755);
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	snprintf(conf, sizeof(conf), "%s/rdmabroker.conf", dir);
	if (start_daemon(bin) < 0 || check_listed(dev)) {
		stop_daemon();
		return 1;
	}
	for (int i = 0; i < 2; i++) {
		child[i] = fork();
		if (child[i] == 0) {
			close(out[0]);
			close(hold[1]);
			_exit(client(dev, out[1], hold[0]));
		}
	}
	close(out[1]);
	close(hold[0]);
	/* Both clients hold their context while the lines are compared. */
	f = fdopen(out[0], "r");
	for (int i = 0; i < 2; i++)
		if (!f || fscanf(f, "%llu %d %d", &id[i], &pid[i], &cfd[i]) != 3)
			ret = 1;
	if (!ret && id[0] != id[1]) {
		fprintf(stderr, "hw_import: context ids differ: %llu, %llu\n",
			id[0], id[1]);
		ret = 1;
	}
	if (!ret && syscall(SYS_kcmp, pid[0], pid[1], KCMP_FILE, cfd[0],
			    cfd[1]) != 0) {
		fprintf(stderr, "hw_import: the clients' cmd_fds are not the "
				"same open file\n");
		ret = 1;
	}
	close(hold[1]);
	for (int i = 0; i < 2; i++) {
		int st;

		waitpid(child[i], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			ret = 1;
	}
	if (f)
		fclose(f);
	stop_daemon();
	printf("hw_import: %s: %s\n", dev, ret ? "FAIL" : "PASS");
	return ret;
}
