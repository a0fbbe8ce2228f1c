// SPDX-License-Identifier: MIT
/*
 * The import path on real mlx5 hardware; exits 77 (skipped) without it.
 * Unverified until someone runs it on a ConnectX-5 or newer: see README.md.
 */
#include <errno.h>
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

static char dir[] = "/tmp/rdmab-hw-XXXXXX";
static char sock[256];
static pid_t daemon_pid = -1;

static const char *find_mlx5(void)
{
	static char name[64];
	struct ibv_device **list;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	name[0] = '\0';
	for (int i = 0; i < n && !name[0]; i++)
		if (strncmp(ibv_get_device_name(list[i]), "mlx5", 4) == 0)
			snprintf(name, sizeof(name), "%s",
				 ibv_get_device_name(list[i]));
	ibv_free_device_list(list);
	return name[0] ? name : NULL;
}

static int start_daemon(const char *bin)
{
	struct stat st;

	daemon_pid = fork();
	if (daemon_pid == 0) {
		execl(bin, bin, "--device", "verbs", "--socket", sock,
		      "--runtime-dir", dir, "--socket-mode", "0666",
		      (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 100; i++) {
		if (stat(sock, &st) == 0)
			return 0;
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
	rmdir(dir);
}

#define CHECK(cond, ...)                                                  \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr, "hw_import: " __VA_ARGS__);       \
			fprintf(stderr, " (%s)\n", ibc_last_error());     \
			return 1;                                         \
		}                                                         \
	} while (0)

/* One client: open the device, report the context id and PD handle. */
static int client(const char *dev, int out_fd)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET,
		.socket_path = sock,
	};
	struct ibc_client *c;
	struct ibc_caps caps;
	struct ibc_ctx *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	static char buf[4096];
	char line[128];

	CHECK(ibc_connect(&attr, &c) == 0, "connect");
	CHECK(ibc_open(c, dev, &ctx) == 0, "ibc_open %s", dev);
	CHECK(ibc_query(ctx, &caps) == 0, "ibc_query");
	CHECK(caps.shared, "%s: context not shared", dev);
	CHECK(ibc_verbs_context(ctx), "no verbs context");
	pd = ibc_verbs_pd(ctx);
	CHECK(pd, "no shared PD");
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr, "ibv_reg_mr on the shared PD: %s", strerror(errno));
	snprintf(line, sizeof(line), "%llu %u\n",
		 (unsigned long long)caps.context_id, pd->handle);
	CHECK(write(out_fd, line, strlen(line)) > 0, "write");
	ibv_dereg_mr(mr);
	ibc_close(ctx);
	ibc_disconnect(c);
	return 0;
}

int main(int argc, char **argv)
{
	const char *bin = getenv("RDMABROKERD");
	const char *dev = find_mlx5();
	char buf[256] = "", a[128] = "", b[128] = "";
	int p[2], ret = 0;

	if (!dev) {
		printf("hw_import: no mlx5 device; skipped\n");
		return SKIP;
	}
	if (!bin || !mkdtemp(dir) || pipe(p) < 0)
		return 99;
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	if (start_daemon(bin) < 0) {
		stop_daemon();
		return 99;
	}
	for (int i = 0; i < 2; i++) {
		pid_t pid = fork();
		int st;

		if (pid == 0)
			_exit(client(dev, p[1]));
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			ret = 1;
	}
	close(p[1]);
	/* Both clients closed their write end: one read gets both lines. */
	if (read(p[0], buf, sizeof(buf) - 1) <= 0)
		ret = 1;
	stop_daemon();
	if (sscanf(buf, "%127[^\n]\n%127[^\n]", a, b) != 2 || strcmp(a, b))
		ret = 1;
	printf("hw_import: %s: %s\n", dev, ret ? "FAIL" : "PASS");
	return ret;
}
