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

#define HW_NAME "hw_dm"
#include "tests/hw/hwlib.h"

#define DM_LEN 4096
#define MAX_DMS 1024

/* Never the machine's own configuration; a quota above any MEMIC, so that
 * the device runs out first. */
static const char dm_conf[] = "[defaults]\ndm_bytes = 16777216\n";

/* The daemon, saying so when it died at start. */
static int start_daemon(const char *bin)
{
	int ret = hw_start_daemon(bin, dm_conf);

	if (ret == -ECHILD)
		fprintf(stderr, "hw_dm: rdmabrokerd exited at start\n");
	return ret;
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

	CHECK(hw_connect(&c) == 0, "connect");
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

	CHECK(hw_connect(&c) == 0, "connect");
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
	const char *dev = hw_find_mlx5();
	int ret;

	if (!dev) {
		printf("hw_dm: no device driven by mlx5_core; skipped\n");
		return SKIP;
	}
	if (!bin || hw_mkdir("/tmp/rdmab-hwdm-XXXXXX") < 0)
		return 99;
	if (start_daemon(bin) < 0) {
		hw_stop_daemon(NULL);
		return 1;
	}
	ret = run(dev);
	hw_stop_daemon(NULL);
	printf("hw_dm: %s: %s\n", dev, ret ? "FAIL" : "PASS");
	return ret;
}
