// SPDX-License-Identifier: MIT
/*
 * A declared XRC domain nobody opens keeps its kernel XRCD across a
 * SIGKILL of the daemon, on real mlx5 hardware (issue 25 item 1); exits
 * 77 (skipped) without it. Unverified until someone runs it on a ConnectX-5
 * or newer: see README.md.
 *
 * The daemon runs under the fake systemd (tests/fakesd.h), which keeps its
 * fd store as systemd does. A client opens the declared name "keep" and
 * closes it: only the daemon's hold is left, in the context of its own
 * that it keeps for XRC domains, whose cmd_fd the store keeps as
 * rb.xrcd-ctx.<device>.<n>. Then, three times: SIGKILL; while no daemon
 * runs, this program opens the name's file with ibv_open_xrcd without
 * O_CREAT, which the kernel answers EAGAIN when no XRCD of that inode
 * exists (ib_uverbs_open_xrcd), so it succeeds only if the stored context
 * still holds it; start again; the store holds one such context, under a
 * new name (the old one closed and removed once the new daemon holds the
 * XRCD), and the listing shows the name held on the device.
 *
 * Then restores killed in the middle, again and again (a seeded delay
 * after each start): a restore stores its new context only once it holds
 * every name, and keeps the newest stored one alone, so the store never
 * holds more than two such contexts, and the kernel XRCD outlives every
 * kill; each whole restore after leaves one.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define HW_NAME "hw_xrcd_restart"
#include "tests/fakesd.h"
#include "tests/hw/hwlib.h"

#define RESTARTS 3
#define WAIT_MS 20000
/* Restores killed in the middle, at up to KILL_MS after the start. */
#define KILLS 10
#define KILL_MS 60

/* The one rb.xrcd-ctx.<dev>. name in the store into @name: the count. */
static int stored_ctx(struct fakesd *sd, const char *dev, char *name,
		      size_t size)
{
	char got[256], prefix[128];
	int n = 0, fd;

	snprintf(prefix, sizeof(prefix), "rb.xrcd-ctx.%s.", dev);
	for (size_t i = 0; fakesd_store_get(sd, i, got, sizeof(got), &fd) == 0;
	     i++) {
		close(fd);
		if (strncmp(got, prefix, strlen(prefix)) == 0) {
			snprintf(name, size, "%s", got);
			n++;
		}
	}
	return n;
}

/* With no daemon running: does the kernel still hold the XRCD of the
 * file @path on @dev? 0 yes, else the kernel's errno. */
static int xrcd_alive(const char *dev, const char *path)
{
	struct ibv_xrcd_init_attr ia = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.oflags = 0,
	};
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	struct ibv_xrcd *x;
	int err = ENODEV;

	for (int i = 0; list && list[i]; i++)
		if (strcmp(ibv_get_device_name(list[i]), dev) == 0)
			ctx = ibv_open_device(list[i]);
	ia.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (ctx && ia.fd >= 0) {
		errno = 0;
		x = ibv_open_xrcd(ctx, &ia);
		err = x ? 0 : (errno ? errno : EIO);
		if (x)
			ibv_close_xrcd(x);
	}
	if (ia.fd >= 0)
		close(ia.fd);
	if (ctx)
		ibv_close_device(ctx);
	if (list)
		ibv_free_device_list(list);
	return err;
}

static int run(struct fakesd *sd, char **argv, const char *dev)
{
	char name[256], before[256], file[300], log[300];
	struct ibc_xrcd_info *xl;
	struct ibc_client *c;
	struct ibc_ctx *ctx;
	struct ibc_xrcd *x;
	size_t n;
	int err;

	snprintf(file, sizeof(file), "%s/xrcd/d.keep", hw_dir);
	snprintf(log, sizeof(log), "%s/daemon.log", hw_dir);
	CHECK(fakesd_start(sd, argv, log) == 0, "start");
	CHECK(fakesd_wait_ready(sd, WAIT_MS) == 0, "not ready (see %s)", log);
	CHECK(hw_connect(&c) == 0, "connect");
	CHECK(ibc_open(c, dev, &ctx) == 0, "ibc_open %s", dev);
	CHECK(ibc_xrcd_open(ctx, "keep", O_CREAT, &x) == 0, "ibc_xrcd_open");
	CHECK(ibc_xrcd_close(x) == 0, "ibc_xrcd_close");
	ibc_disconnect(c);
	CHECK(stored_ctx(sd, dev, before, sizeof(before)) == 1,
	      "the store does not hold one context for the XRC domains");
	for (int i = 0; i < RESTARTS; i++) {
		CHECK(fakesd_kill(sd, SIGKILL) == 0, "kill");
		CHECK(fakesd_wait_exit(sd, WAIT_MS) >= 0, "wait");
		err = xrcd_alive(dev, file);
		CHECK(err == 0,
		      "restart %d: with no daemon, ibv_open_xrcd without "
		      "O_CREAT: %s (the kernel XRCD is gone)",
		      i, strerror(err));
		CHECK(fakesd_start(sd, argv, log) == 0, "start again");
		CHECK(fakesd_wait_ready(sd, WAIT_MS) == 0, "not ready again");
		CHECK(stored_ctx(sd, dev, name, sizeof(name)) == 1,
		      "restart %d: not one context for the XRC domains "
		      "stored",
		      i);
		CHECK(strcmp(name, before) != 0,
		      "restart %d: the context stored is still %s", i, name);
		snprintf(before, sizeof(before), "%s", name);
	}
	for (int i = 0; i < KILLS; i++) {
		unsigned int seed = 25 + (unsigned int)i;

		CHECK(fakesd_kill(sd, SIGKILL) == 0, "kill");
		CHECK(fakesd_wait_exit(sd, WAIT_MS) >= 0, "wait");
		CHECK(fakesd_start(sd, argv, log) == 0, "start (kill %d)", i);
		usleep(1000 * (useconds_t)(rand_r(&seed) % KILL_MS));
		CHECK(fakesd_kill(sd, SIGKILL) == 0, "kill in the restore");
		CHECK(fakesd_wait_exit(sd, WAIT_MS) >= 0, "wait");
		CHECK(stored_ctx(sd, dev, name, sizeof(name)) <= 2,
		      "kill %d in the restore: more than two contexts for the "
		      "XRC domains stored",
		      i);
		err = xrcd_alive(dev, file);
		CHECK(err == 0,
		      "kill %d in the restore: the kernel XRCD is gone: %s", i,
		      strerror(err));
		CHECK(fakesd_start(sd, argv, log) == 0, "start after kill %d",
		      i);
		CHECK(fakesd_wait_ready(sd, WAIT_MS) == 0, "not ready after");
		CHECK(stored_ctx(sd, dev, name, sizeof(name)) == 1,
		      "kill %d: not one context stored after a whole restore",
		      i);
	}
	CHECK(hw_connect(&c) == 0, "connect after");
	CHECK(ibc_list_xrcds(c, "keep", &xl, sizeof(*xl), &n) == 0 && n == 1,
	      "list");
	err = strcmp(xl[0].devices, dev);
	ibc_list_free(xl);
	ibc_disconnect(c);
	CHECK(err == 0, "\"keep\" is not held on %s after the restarts", dev);
	return 0;
}

int main(int argc, char **argv)
{
	struct fakesd_opts o = { .store_max = 4096, .listen_fd = -1 };
	const char *bin = getenv("RDMABROKERD");
	char conf[160], *dargv[16];
	struct fakesd *sd = NULL;
	const char *dev;
	FILE *f;
	int ret;

	ret = hw_init(argc, argv, hw_find_mlx5, &dev);
	if (ret)
		return ret;
	if (hw_mode != HW_MLX5) {
		/* The kernel's XRCD is what it checks (check_restart's
		 * xrcd_hold_kept has the soft device's side). */
		fprintf(stderr, HW_NAME ": mlx5 only\n");
		return 2;
	}
	if (!bin || hw_mkdir("rdmab-hwxr") < 0)
		return 99;
	snprintf(conf, sizeof(conf),
		 "[domain a]\nusers = %u\n[xrcd keep]\ndomains = a\n",
		 (unsigned int)getuid());
	f = fopen(hw_conf, "we");
	if (!f || fputs(conf, f) < 0 || fclose(f) != 0)
		return 99;
	o.dir = hw_dir;
	if (fakesd_new(&o, &sd) < 0)
		return 99;
	dargv[0] = (char *)bin;
	dargv[1] = "--foreground";
	dargv[2] = "--device";
	dargv[3] = "verbs";
	dargv[4] = "--socket";
	dargv[5] = hw_sock;
	dargv[6] = "--runtime-dir";
	dargv[7] = hw_dir;
	dargv[8] = "--config";
	dargv[9] = hw_conf;
	dargv[10] = NULL;
	ret = run(sd, dargv, dev);
	fakesd_free(sd);
	snprintf(conf, sizeof(conf), "%s/daemon.log", hw_dir);
	if (ret == 0)
		unlink(conf);
	hw_stop_daemon("xrcd");
	printf(HW_NAME ": %s: %s\n", dev, ret ? "FAIL" : "PASS");
	return ret;
}
