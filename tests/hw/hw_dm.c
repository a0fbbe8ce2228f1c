// SPDX-License-Identifier: MIT
/*
 * Device memory on real mlx5 hardware (MEMIC); exits 77 (skipped) without
 * it. Unverified until someone runs it on a ConnectX-5 or newer: see
 * README.md.
 *
 * The daemon (rdmabrokerd --device verbs) must report the device's DM as
 * shareable (its start-up self-test). This process allocates a DM and
 * writes it; a second process of the same uid (the same domain) imports it
 * by handle, reads the same bytes and writes others back, which this
 * process reads; an MR registers on the DM (ibc_reg_dm_mr) and keeps it
 * from being freed (EBUSY); allocating until the device has no MEMIC left
 * gives ENOSPC, and freeing everything gives it all back.
 */
#include <errno.h>
#include <fcntl.h>
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
#define DM_LEN 4096
#define MAX_DMS 1024

static char dir[] = "/tmp/rdmab-hwdm-XXXXXX";
static char sock[256], conf[256];
static pid_t daemon_pid = -1;

#define CHECK(cond, ...)                                                  \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr, "hw_dm: " __VA_ARGS__);           \
			fprintf(stderr, " (%s)\n", ibc_last_error());    \
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

	/* Never the machine's own configuration; a quota above any MEMIC,
	 * so that the device runs out first. */
	static const char text[] = "[defaults]\ndm_bytes = 16777216\n";

	if (fd < 0)
		return -1;
	if (write(fd, text, sizeof(text) - 1) != (ssize_t)(sizeof(text) - 1)) {
		close(fd);
		return -1;
	}
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
			fprintf(stderr, "hw_dm: rdmabrokerd exited at "
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

static void pattern(uint32_t *w, size_t words, uint32_t seed)
{
	for (size_t i = 0; i < words; i++)
		w[i] = seed * 2654435761u + (uint32_t)i;
}

/* The second process: import @handle, check seed 1's bytes, write seed
 * 2's. */
static int reader(const char *dev, uint32_t handle)
{
	static uint32_t want[DM_LEN / 4], got[DM_LEN / 4];
	struct ibc_client *c;
	struct ibc_ctx *ctx;
	struct ibc_dm *dm;

	CHECK(connect_client(&c) == 0, "connect");
	CHECK(ibc_open(c, dev, &ctx) == 0, "ibc_open %s", dev);
	CHECK(ibc_dm_import(ctx, handle, &dm) == 0, "ibc_dm_import %u",
	      handle);
	CHECK(ibc_verbs_dm(dm), "no struct ibv_dm");
	pattern(want, DM_LEN / 4, 1);
	CHECK(ibc_dm_read(dm, got, 0, DM_LEN) == 0, "ibc_dm_read");
	CHECK(memcmp(want, got, DM_LEN) == 0,
	      "the second process reads other bytes than were written");
	pattern(want, DM_LEN / 4, 2);
	CHECK(ibc_dm_write(dm, 0, want, DM_LEN) == 0, "ibc_dm_write");
	CHECK(ibc_dm_unimport(dm) == 0, "ibc_dm_unimport");
	ibc_disconnect(c);
	return 0;
}

static int run(const char *dev)
{
	static uint32_t buf[DM_LEN / 4], want[DM_LEN / 4];
	unsigned int acc = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE;
	struct ibc_dm *dm, *many[MAX_DMS];
	struct ibc_device_info *d;
	struct ibc_client *c;
	struct ibc_ctx *ctx;
	struct ibc_mr *mr;
	int n = 0, err = 0, st;
	size_t nd;
	pid_t pid;

	CHECK(connect_client(&c) == 0, "connect");
	CHECK(ibc_list_devices(c, &d, sizeof(*d), &nd) == 0, "list");
	for (size_t i = 0; i < nd; i++)
		if (strcmp(d[i].name, dev) == 0 && !d[i].dm_shared) {
			fprintf(stderr, "hw_dm: %s: DM not shareable: %s\n",
				dev, d[i].dm_reason);
			ibc_list_free(d);
			return 1;
		}
	ibc_list_free(d);
	CHECK(ibc_open(c, dev, &ctx) == 0, "ibc_open %s", dev);
	CHECK(ibc_dm_alloc(ctx, 100, 0, &dm) == 0, "ibc_dm_alloc");
	CHECK(ibc_dm_length(dm) == DM_LEN, "length %zu", ibc_dm_length(dm));
	CHECK(ibc_dm_read(dm, buf, 0, DM_LEN) == 0, "ibc_dm_read");
	memset(want, 0, sizeof(want));
	CHECK(memcmp(buf, want, DM_LEN) == 0, "a new DM is not zeroed");
	pattern(want, DM_LEN / 4, 1);
	CHECK(ibc_dm_write(dm, 0, want, DM_LEN) == 0, "ibc_dm_write");
	pid = fork();
	if (pid == 0)
		_exit(reader(dev, ibc_dm_handle(dm)));
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		      WEXITSTATUS(st) == 0,
	      "the second process failed");
	pattern(want, DM_LEN / 4, 2);
	CHECK(ibc_dm_read(dm, buf, 0, DM_LEN) == 0, "ibc_dm_read");
	CHECK(memcmp(buf, want, DM_LEN) == 0,
	      "this process does not read what the second one wrote");
	CHECK(ibc_dm_write(dm, UINT64_MAX - 3, buf, 8) == -EFAULT,
	      "no EFAULT for a wrapping offset");
	CHECK(ibc_dm_write(dm, 2, buf, 4) == -EINVAL, "no EINVAL");
	CHECK(ibc_reg_dm_mr(dm, 0, DM_LEN, acc, &mr) == 0, "ibc_reg_dm_mr");
	CHECK(ibc_dm_free(dm) == -EBUSY, "free with an MR on the DM");
	CHECK(ibc_dereg_mr(mr) == 0, "ibc_dereg_mr");
	CHECK(ibc_dm_free(dm) == 0, "ibc_dm_free");
	/* Until the device has no MEMIC left. */
	while (n < MAX_DMS &&
	       (err = ibc_dm_alloc(ctx, DM_LEN, 0, &many[n])) == 0)
		n++;
	CHECK(err == -ENOSPC, "after %d DMs: %d instead of ENOSPC", n, err);
	for (int i = 0; i < n; i++)
		CHECK(ibc_dm_free(many[i]) == 0, "ibc_dm_free");
	CHECK(ibc_dm_alloc(ctx, DM_LEN, 0, &dm) == 0 && ibc_dm_free(dm) == 0,
	      "the memory did not come back");
	printf("hw_dm: %s: %d DMs of %d bytes until ENOSPC\n", dev, n,
	       DM_LEN);
	ibc_disconnect(c);
	return 0;
}

int main(void)
{
	const char *bin = getenv("RDMABROKERD");
	const char *dev = find_mlx5();
	int ret;

	if (!dev) {
		printf("hw_dm: no device driven by mlx5_core; skipped\n");
		return SKIP;
	}
	if (!bin || !mkdtemp(dir))
		return 99;
	chmod(dir, 0755);
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	snprintf(conf, sizeof(conf), "%s/rdmabroker.conf", dir);
	if (start_daemon(bin) < 0) {
		stop_daemon();
		return 1;
	}
	ret = run(dev);
	stop_daemon();
	printf("hw_dm: %s: %s\n", dev, ret ? "FAIL" : "PASS");
	return ret;
}
