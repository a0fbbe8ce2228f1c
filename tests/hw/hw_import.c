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

#define HW_NAME "hw_import"
#include "tests/hw/hwlib.h"

/* The daemon, saying so when it died at start. */
static int start_daemon(const char *bin)
{
	int ret = hw_start_daemon(bin, NULL);

	if (ret == -ECHILD)
		fprintf(stderr, "hw_import: rdmabrokerd exited at start\n");
	return ret;
}

/* The broker lists @dev as importable. */
static int check_listed(const char *dev)
{
	struct ibc_device_info *d;
	struct ibc_client *c;
	int found = 0;
	size_t n;

	CHECK(hw_connect(&c) == 0, "connect");
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
	CHECK(hw_connect(&c) == 0, "connect");
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
	const char *dev = hw_find_mlx5();
	unsigned long long id[2] = { 0 };
	int pid[2] = { 0 }, cfd[2] = { 0 };
	int out[2], hold[2], ret = 0;
	pid_t child[2];
	FILE *f;

	if (!dev) {
		printf("hw_import: no device driven by mlx5_core; skipped\n");
		return SKIP;
	}
	if (!bin || hw_mkdir("/tmp/rdmab-hw-XXXXXX") < 0 || pipe(out) < 0 || pipe(hold) < 0)
		return 99;
	if (start_daemon(bin) < 0 || check_listed(dev)) {
		hw_stop_daemon(NULL);
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
	hw_stop_daemon(NULL);
	printf("hw_import: %s: %s\n", dev, ret ? "FAIL" : "PASS");
	return ret;
}
