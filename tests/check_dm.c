// SPDX-License-Identifier: MIT
/*
 * Device memory against the real daemon on the soft device: one process
 * writes and another reads the same bytes; new DMs read as zeroes; handles
 * of another domain or of a DM whose free is pending answer exactly as a
 * missing one; mlx5's error order with offsets near 2^64; the dm_bytes
 * quota by pages and the device's exhaustion; every combination of the
 * allocator and an importer exiting or being killed frees the DM exactly
 * once and returns the quota; an allocator whose session ends while its
 * process lives keeps its DM until it dies; unimports queued behind a cut
 * session are applied at its end.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cklib.h"
#include "tests/objlib.h"
#include "tests/testlib.h"

static struct tl_daemon D;
static struct ibc_client *C;
static struct ibc_ctx *X;

static void start(const char *conf)
{
	int ret = tl_fixture_start(&D, conf, &C, &X);

	ck_assert_msg(ret == 0, "cannot start the daemon and a client: %s",
		      strerror(-ret));
}

static void setup(void)
{
	/* The whole device for the one domain: these tests are about the
	 * DMs, not the shares (tests/check_limits.c). */
	start("[defaults]\ndm_bytes = 100%\n");
}

static void setup_small(void)
{
	/* A device of 16 KiB, a quota that would let the domain take more. */
	start("[soft]\nmax_dm_size = 16384\n[defaults]\ndm_bytes = 1048576\n");
}

static void setup_quota(void)
{
	start("[defaults]\ndm_bytes = 16384\n");
}

static void setup_revoke(void)
{
	/* Revoked DMs stay charged for their grace: room for 20 of them. */
	start("[broker]\ndm_revoke_grace = 300ms\n"
	      "[defaults]\ndm_bytes = 100%\n");
}

static void teardown(void)
{
	ibc_disconnect(C);
	C = NULL;
	X = NULL;
	tl_daemon_stop(&D);
}

static struct ibc_dm *alloc_dm(size_t length)
{
	struct ibc_dm *dm = NULL;
	int err = ibc_dm_alloc(X, length, 0, &dm);

	ck_assert_msg(err == 0, "ibc_dm_alloc(%zu): %d (%s)", length, err,
		      ibc_last_error());
	return dm;
}

static void pattern(uint32_t *w, size_t words, uint32_t seed)
{
	for (size_t i = 0; i < words; i++)
		w[i] = seed * 2654435761u + (uint32_t)i;
}

/* The domain's dm_bytes in use, the device's reserved bytes (the broker's
 * own accounting) and the number of DMs listed. */
static void usage(uint64_t *ret_used, uint64_t *ret_reserved, size_t *ret_n)
{
	struct ibc_domain_info *d;
	struct ibc_device_info *dev;
	struct ibc_dm_info *dms;
	size_t n;

	ck_assert_int_eq(ibc_list_domains(C, &d, sizeof(*d), &n), 0);
	ck_assert_uint_ge(n, 1);
	*ret_used = d[0].used.dm_bytes;
	ibc_list_free(d);
	ck_assert_int_eq(ibc_list_devices(C, &dev, sizeof(*dev), &n), 0);
	ck_assert_uint_eq(n, 1);
	*ret_reserved = dev[0].dm_reserved;
	ibc_list_free(dev);
	ck_assert_int_eq(ibc_list_dms(C, &dms, sizeof(*dms), &n), 0);
	*ret_n = n;
	ibc_list_free(dms);
}

/* Wait until the broker holds no DM and every byte is back. */
static void wait_all_free(int timeout_ms)
{
	int64_t end = tl_now_ms() + timeout_ms;
	uint64_t used, reserved;
	size_t n;

	for (;;) {
		usage(&used, &reserved, &n);
		if ((n == 0 && used == 0 && reserved == 0) ||
		    tl_now_ms() >= end)
			break;
		tl_sleep_ms(10);
	}
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(used, 0);
	/* A second free would have wrapped this below zero. */
	ck_assert_uint_eq(reserved, 0);
}

static struct ibc_dm_info dm_info(uint64_t id)
{
	struct ibc_dm_info *dms, e;
	size_t n;

	ck_assert_int_eq(ibc_list_dms(C, &dms, sizeof(*dms), &n), 0);
	for (size_t i = 0; i < n; i++)
		if (dms[i].id == id) {
			e = dms[i];
			ibc_list_free(dms);
			return e;
		}
	ibc_list_free(dms);
	ck_abort_msg("DM %llu is not listed", (unsigned long long)id);
	return e;
}

/* Wait until DM @id has @n holders. */
static void wait_importers(uint64_t id, uint32_t n)
{
	int64_t end = tl_now_ms() + 5000;

	while (dm_info(id).n_importers != n && tl_now_ms() < end)
		tl_sleep_ms(10);
	ck_assert_uint_eq(dm_info(id).n_importers, n);
}

/* --- child processes ---------------------------------------------------- */

enum child_role {
	/* Import @handle, check @seed's pattern, write @seed + 1's. */
	CHILD_READ,
	/* Allocate @length (persistent when @seed is 1), write @seed's
	 * pattern, report, then hold until told to go or killed. */
	CHILD_ALLOC,
	/* Import @handle, report, hold. */
	CHILD_IMPORT,
};

struct child {
	pid_t pid;
	int report; /* its reports */
	int go;	    /* closed to let it exit */
	uint32_t handle;
	uint64_t id;
};

static int child_main(enum child_role role, uint32_t handle, size_t length,
		      uint32_t seed, int report, int go)
{
	static uint32_t want[4096], got[4096];
	struct ibc_client *cl;
	struct ibc_ctx *ctx;
	struct ibc_dm *dm;
	struct ibc_dm_attr a = { .length = length };
	uint64_t msg[2];
	char c;

	if (tl_connect(D.sock, 20000, &cl) || ibc_open(cl, NULL, &ctx))
		return 10;
	switch (role) {
	case CHILD_READ:
		if (ibc_dm_import(ctx, handle, &dm))
			return 11;
		length = ibc_dm_length(dm);
		if (length > sizeof(want))
			return 12;
		pattern(want, length / 4, seed);
		if (ibc_dm_read(dm, got, 0, length) ||
		    memcmp(want, got, length))
			return 13;
		pattern(want, length / 4, seed + 1);
		if (ibc_dm_write(dm, 0, want, length))
			return 14;
		break;
	case CHILD_ALLOC:
		a.flags = seed == 1 ? IBC_DM_PERSISTENT : 0;
		if (ibc_dm_alloc_ex(ctx, &a, &dm))
			return 15;
		pattern(want, ibc_dm_length(dm) / 4, seed);
		if (ibc_dm_write(dm, 0, want, ibc_dm_length(dm)))
			return 16;
		break;
	case CHILD_IMPORT:
		if (ibc_dm_import(ctx, handle, &dm))
			return 17;
		break;
	}
	msg[0] = ibc_dm_handle(dm);
	msg[1] = ibc_dm_id(dm);
	if (write(report, msg, sizeof(msg)) != sizeof(msg))
		return 18;
	if (role == CHILD_READ)
		return 0;
	/* Held until the parent closes @go (or kills it); then the
	 * disconnect releases what the library holds. */
	while (read(go, &c, 1) > 0)
		;
	ibc_disconnect(cl);
	return 0;
}

/* The write ends of the children's go pipes: a later child must not keep
 * an earlier one's open. */
static int go_fds[8];
static unsigned int n_go;

static void child_start(struct child *ch, enum child_role role, uint32_t handle,
			size_t length, uint32_t seed)
{
	uint64_t msg[2];
	int rp[2], gp[2];

	ck_assert_int_eq(pipe(rp), 0);
	ck_assert_int_eq(pipe(gp), 0);
	ch->pid = fork();
	ck_assert_int_ge(ch->pid, 0);
	if (ch->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(rp[0]);
		close(gp[1]);
		for (unsigned int i = 0; i < n_go; i++)
			close(go_fds[i]);
		_exit(child_main(role, handle, length, seed, rp[1], gp[0]));
	}
	close(rp[1]);
	close(gp[0]);
	ch->report = rp[0];
	ch->go = gp[1];
	ck_assert_uint_lt(n_go, 8);
	go_fds[n_go++] = gp[1];
	ck_assert_msg(read(ch->report, msg, sizeof(msg)) == sizeof(msg),
		      "the child (role %d) did not report", role);
	ch->handle = (uint32_t)msg[0];
	ch->id = msg[1];
}

/* End the child: @kill with SIGKILL, else let it exit. Its status. */
static int child_end(struct child *ch, bool kill_it)
{
	int status;

	if (kill_it)
		ck_assert_int_eq(kill(ch->pid, SIGKILL), 0);
	for (unsigned int i = 0; i < n_go; i++)
		if (go_fds[i] == ch->go)
			go_fds[i] = go_fds[--n_go];
	close(ch->go);
	ck_assert_int_eq(waitpid(ch->pid, &status, 0), ch->pid);
	close(ch->report);
	return status;
}

/* rdmabrokerctl's output for @args, of at most @size - 1 bytes; its exit
 * status. */
static int ctl_run(const char *args, char *out, size_t size)
{
	const char *ctl = getenv("RDMABROKERCTL");
	char cmd[1024];
	size_t n = 0;
	FILE *p;

	ck_assert_ptr_nonnull(ctl);
	snprintf(cmd, sizeof(cmd), "'%s' --socket '%s' %s 2>&1", ctl, D.sock,
		 args);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (n + 1 < size && !feof(p))
		n += fread(out + n, 1, size - 1 - n, p);
	out[n] = '\0';
	return pclose(p);
}

/* --- tests -------------------------------------------------------------- */

START_TEST(test_write_read_two_processes)
{
	static uint32_t buf[2048], back[2048];
	struct child ch;
	struct ibc_dm *dm = alloc_dm(5000);
	size_t len;

	/* Rounded to whole pages, everywhere. */
	len = ibc_dm_length(dm);
	ck_assert_uint_eq(len, 8192);
	ck_assert_uint_eq(dm_info(ibc_dm_id(dm)).length, 8192);
	ck_assert_uint_eq(dm_info(ibc_dm_id(dm)).pages, 2);
	pattern(buf, len / 4, 7);
	ck_assert_int_eq(ibc_dm_write(dm, 0, buf, len), 0);
	child_start(&ch, CHILD_READ, ibc_dm_handle(dm), 0, 7);
	ck_assert_int_eq(child_end(&ch, false), 0);
	/* And what the child wrote is here. */
	pattern(buf, len / 4, 8);
	ck_assert_int_eq(ibc_dm_read(dm, back, 0, len), 0);
	ck_assert_mem_eq(back, buf, len);
	ck_assert_int_eq(ibc_dm_free(dm), 0);
	wait_all_free(5000);
}
END_TEST

/* Requests the broker served since its start; counts itself. */
static uint64_t served(void)
{
	struct ibc_status st;

	ck_assert_int_eq(ibc_status(C, &st, sizeof(st)), 0);
	return st.requests_served;
}

/*
 * The free ends the freeing process's own import in the same request: one
 * round trip, and a DM nobody else holds is gone, its bytes back, when
 * ibc_dm_free() returns (no waiting).
 */
START_TEST(test_free_one_round_trip)
{
	struct ibc_dm *dm = alloc_dm(4096);
	uint64_t used, reserved, before, idle;
	size_t n;

	before = served();
	idle = served() - before;
	before = served();
	ck_assert_int_eq(ibc_dm_free(dm), 0);
	ck_assert_uint_eq(served() - before, idle + 1);
	usage(&used, &reserved, &n);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(used, 0);
	ck_assert_uint_eq(reserved, 0);
}
END_TEST

/*
 * Imported twice in this process, freed through the later import: that
 * import ends, not the first one, which keeps the DM free pending, its
 * registry record (an MR on it) and its status byte (the revoke of a DM
 * made since leaves it alone). In the revoke case: its grace period is
 * short.
 */
START_TEST(test_free_names_the_import)
{
	static const uint32_t word[1] = { 0x5eed };
	unsigned int acc = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE;
	struct ibc_dm *dm = alloc_dm(4096), *imp, *other;
	struct ibc_mr *mr;

	ck_assert_int_eq(ibc_dm_import(X, ibc_dm_handle(dm), &imp), 0);
	ck_assert_int_eq(ibc_dm_free(imp), 0);
	ck_assert_int_eq(dm_info(ibc_dm_id(dm)).state, IBC_DM_FREE_PENDING);
	ck_assert_uint_eq(dm_info(ibc_dm_id(dm)).n_importers, 1);
	ck_assert_int_eq(ibc_reg_dm_mr(dm, 0, 4096, acc, &mr), 0);
	other = alloc_dm(4096);
	ck_assert_int_eq(ibc_admin_dm_revoke(C, ibc_dm_id(other)), 0);
	ck_assert_int_eq(ibc_dm_write(dm, 0, word, sizeof(word)), 0);
	ck_assert_int_eq(ibc_dereg_mr(mr), 0);
	ck_assert_int_eq(ibc_dm_unimport(dm), 0);
	ck_assert_int_eq(ibc_dm_unimport(other), 0);
	wait_all_free(5000);
}
END_TEST

START_TEST(test_new_dm_zeroed)
{
	static uint8_t buf[8192], zero[8192];
	struct ibc_dm *dm = alloc_dm(8192);

	ck_assert_int_eq(ibc_dm_read(dm, buf, 0, sizeof(buf)), 0);
	ck_assert_mem_eq(buf, zero, sizeof(buf));
	memset(buf, 0xa5, sizeof(buf));
	ck_assert_int_eq(ibc_dm_write(dm, 0, buf, sizeof(buf)), 0);
	ck_assert_int_eq(ibc_dm_free(dm), 0);
	/* The next DM never shows the last one's bytes (the tail past the
	 * length asked for included). */
	dm = alloc_dm(100);
	ck_assert_uint_eq(ibc_dm_length(dm), 4096);
	ck_assert_int_eq(ibc_dm_read(dm, buf, 0, 4096), 0);
	ck_assert_mem_eq(buf, zero, 4096);
	ck_assert_int_eq(ibc_dm_free(dm), 0);
}
END_TEST

/* A handle of another domain, of a DM whose free is pending, and a handle
 * that names nothing: one errno, one sentence. */
START_TEST(test_missing_handles_identical)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_FLAGS,
		.socket_path = D.sock,
		.flags = IBC_CONNECT_PRIVATE_DOMAIN,
	};
	char missing[256], other[256];
	struct ibc_client *p;
	struct ibc_ctx *px;
	struct ibc_dm *dm, *imp, *pdm;
	struct child ch;
	uint32_t h;

	ck_assert_int_eq(ibc_connect(&attr, &p), 0);
	ck_assert_int_eq(ibc_open(p, NULL, &px), 0);
	/* The first DM of each context gets the same handle. */
	ck_assert_int_eq(ibc_dm_import(px, 1, &pdm), -ENOENT);
	snprintf(missing, sizeof(missing), "%s", ibc_last_error());
	dm = alloc_dm(4096);
	h = ibc_dm_handle(dm);
	ck_assert_uint_eq(h, 1);
	ck_assert_int_eq(ibc_dm_import(px, h, &pdm), -ENOENT);
	ck_assert_str_eq(ibc_last_error(), missing);

	/* Free pending: the child holds it, the allocator freed it. */
	child_start(&ch, CHILD_IMPORT, h, 0, 0);
	ck_assert_int_eq(ibc_dm_import(X, 99, &imp), -ENOENT);
	snprintf(missing, sizeof(missing), "%s", ibc_last_error());
	ck_assert_int_eq(ibc_dm_free(dm), 0);
	ck_assert_int_eq(dm_info(ch.id).state, IBC_DM_FREE_PENDING);
	ck_assert_int_eq(ibc_dm_import(X, h, &imp), -ENOENT);
	snprintf(other, sizeof(other), "%s", ibc_last_error());
	/* The sentences differ only in the handle they quote. */
	{
		char want[256];
		char *at = strstr(missing, "99");

		ck_assert_ptr_nonnull(at);
		snprintf(want, sizeof(want), "%.*s%u%s", (int)(at - missing),
			 missing, h, at + 2);
		ck_assert_str_eq(other, want);
	}
	ck_assert_int_eq(child_end(&ch, false), 0);
	wait_all_free(5000);
	ibc_disconnect(p);
}
END_TEST

/* mlx5's order: past the end (checked without wrapping) before the 4-byte
 * alignment. */
START_TEST(test_error_order)
{
	static uint8_t buf[64];
	struct ibc_dm *dm = alloc_dm(4096);

	ck_assert_int_eq(ibc_dm_write(dm, 0, buf, 64), 0);
	ck_assert_int_eq(ibc_dm_write(dm, 4096 - 64, buf, 64), 0);
	ck_assert_int_eq(ibc_dm_write(dm, 4096, buf, 0), 0);
	/* offset + length wraps to 4: mlx5's own check would pass it. */
	ck_assert_int_eq(ibc_dm_write(dm, UINT64_MAX - 3, buf, 8), -EFAULT);
	ck_assert_int_eq(ibc_dm_read(dm, buf, UINT64_MAX - 3, 8), -EFAULT);
	ck_assert_int_eq(ibc_dm_write(dm, UINT64_MAX, buf, 0), -EFAULT);
	ck_assert_int_eq(ibc_dm_write(dm, 0, buf, SIZE_MAX), -EFAULT);
	ck_assert_int_eq(ibc_dm_write(dm, 4, buf, SIZE_MAX - 3), -EFAULT);
	/* Unaligned and past the end: the end first. */
	ck_assert_int_eq(ibc_dm_write(dm, 4094, buf, 4), -EFAULT);
	ck_assert_int_eq(ibc_dm_read(dm, buf, 4094, 3), -EFAULT);
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "pass the end"));
	/* Unaligned inside. */
	ck_assert_int_eq(ibc_dm_write(dm, 2, buf, 4), -EINVAL);
	ck_assert_int_eq(ibc_dm_read(dm, buf, 0, 3), -EINVAL);
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "multiples of 4"));
	ck_assert_int_eq(ibc_dm_write(NULL, 0, buf, 4), -EINVAL);
	ck_assert_int_eq(ibc_dm_free(dm), 0);
}
END_TEST

START_TEST(test_length_errors)
{
	struct ibc_dm_attr a = { .length = 4096, .flags = 1u << 7 };
	struct ibc_dm *dm;

	ck_assert_int_eq(ibc_dm_alloc(X, 0, 0, &dm), -EINVAL);
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "length"));
	ck_assert_int_eq(ibc_dm_alloc(X, 16385, 0, &dm), -EINVAL);
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "max_dm_size"));
	ck_assert_int_eq(ibc_dm_alloc(X, 4096, 13, &dm), -EINVAL);
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "2^12"));
	ck_assert_int_eq(ibc_dm_alloc_ex(X, &a, &dm), -EINVAL);
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "flags"));
	a.flags = 0;
	a.comp_mask = 1;
	ck_assert_int_eq(ibc_dm_alloc_ex(X, &a, &dm), -EINVAL);
}
END_TEST

/* The device's 16 KiB run out: ENOSPC, and each free gives its pages
 * back. */
START_TEST(test_device_exhausted)
{
	struct ibc_dm *a = alloc_dm(8192), *b = alloc_dm(5000), *c;
	uint64_t used, reserved;
	size_t n;

	ck_assert_int_eq(ibc_dm_alloc(X, 1, 0, &c), -ENOSPC);
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "out of device "
						       "memory"));
	usage(&used, &reserved, &n);
	ck_assert_uint_eq(reserved, 16384);
	ck_assert_uint_eq(used, 16384);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(ibc_dm_free(a), 0);
	c = alloc_dm(8192);
	ck_assert_int_eq(ibc_dm_free(b), 0);
	ck_assert_int_eq(ibc_dm_free(c), 0);
	wait_all_free(5000);
}
END_TEST

/* dm_bytes counts pages: 100 bytes take 4096. */
START_TEST(test_quota_pages)
{
	struct ibc_dm *a = alloc_dm(8192), *b = alloc_dm(100), *c;
	uint64_t used, reserved;
	size_t n;

	usage(&used, &reserved, &n);
	ck_assert_uint_eq(used, 12288);
	ck_assert_int_eq(ibc_dm_alloc(X, 4097, 0, &c), -EDQUOT);
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "dm_bytes"));
	c = alloc_dm(4096);
	ck_assert_int_eq(ibc_dm_alloc(X, 1, 0, &c), -EDQUOT);
	ck_assert_int_eq(ibc_dm_free(a), 0);
	ck_assert_int_eq(ibc_dm_free(b), 0);
	usage(&used, &reserved, &n);
	ck_assert_uint_eq(used, 4096);
	ck_assert_int_eq(ibc_dm_free(c), 0);
	wait_all_free(5000);
}
END_TEST

/* Only the allocator frees a DM that is not persistent. */
START_TEST(test_free_eperm)
{
	static uint32_t w[1024], r[1024];
	struct ibc_dm *dm;
	struct child ch;

	child_start(&ch, CHILD_ALLOC, 0, 4096, 5);
	ck_assert_int_eq(ibc_dm_import(X, ch.handle, &dm), 0);
	ck_assert_int_eq(ibc_dm_free(dm), -EPERM);
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "allocator"));
	/* Still usable. */
	pattern(w, 1024, 5);
	ck_assert_int_eq(ibc_dm_read(dm, r, 0, 4096), 0);
	ck_assert_mem_eq(r, w, 4096);
	ck_assert_int_eq(ibc_dm_unimport(dm), 0);
	ck_assert_int_eq(dm_info(ch.id).n_importers, 1);
	ck_assert_int_eq(child_end(&ch, false), 0);
	wait_all_free(5000);
}
END_TEST

/* A persistent DM outlives its allocator, which the listing still names,
 * gone; any member frees it. */
START_TEST(test_persistent)
{
	static uint32_t w[1024], r[1024];
	static char out[8192];
	struct ibc_dm_info info;
	char want[128], args[64];
	struct ibc_dm *dm;
	struct child ch;
	uint64_t alloc;
	pid_t pid;

	child_start(&ch, CHILD_ALLOC, 0, 4096, 1);
	pid = ch.pid;
	info = dm_info(ch.id);
	alloc = info.allocator;
	ck_assert_uint_ne(alloc, 0);
	ck_assert_uint_eq(info.allocator_pid, (uint32_t)pid);
	ck_assert(!info.allocator_gone);
	ck_assert_int_eq(child_end(&ch, true), SIGKILL);
	tl_sleep_ms(50);
	info = dm_info(ch.id);
	ck_assert(info.persistent);
	ck_assert_int_eq(info.state, IBC_DM_LIVE);
	ck_assert_uint_eq(info.allocator, alloc);
	ck_assert_uint_eq(info.allocator_pid, (uint32_t)pid);
	ck_assert(info.allocator_gone);
	snprintf(args, sizeof(args), "dm show %llu", (unsigned long long)ch.id);
	ck_assert_int_eq(ctl_run(args, out, sizeof(out)), 0);
	snprintf(want, sizeof(want),
		 "allocator:  client %llu (gone: its session ended; it was "
		 "pid %d)",
		 (unsigned long long)alloc, (int)pid);
	ck_assert_msg(strstr(out, want), "%s", out);
	ck_assert_int_eq(ctl_run("dm", out, sizeof(out)), 0);
	snprintf(want, sizeof(want), " %llu (gone) ",
		 (unsigned long long)alloc);
	ck_assert_msg(strstr(out, want), "%s", out);
	ck_assert_int_eq(ctl_run("--json dm", out, sizeof(out)), 0);
	snprintf(want, sizeof(want),
		 "\"allocator\":%llu,\"allocator_pid\":%d,"
		 "\"allocator_gone\":true,",
		 (unsigned long long)alloc, (int)pid);
	ck_assert_msg(strstr(out, want), "%s", out);
	ck_assert_int_eq(ibc_dm_import(X, ch.handle, &dm), 0);
	pattern(w, 1024, 1);
	ck_assert_int_eq(ibc_dm_read(dm, r, 0, 4096), 0);
	ck_assert_mem_eq(r, w, 4096);
	ck_assert_int_eq(ibc_dm_free(dm), 0);
	wait_all_free(5000);
}
END_TEST

struct seen {
	int type;
	uint64_t id;
	enum ibc_obj_kind kind;
	int n;
};

static void on_event(struct ibc_client *cl, const struct ibc_event *ev,
		     void *arg)
{
	struct seen *s = arg;

	(void)cl;
	s->type = ev->type;
	s->id = ev->object_id;
	s->kind = ev->object_kind;
	s->n++;
}

/* The allocator dies while this process holds the DM: an Event through
 * ibc_dispatch, after which the library unimports and the DM goes. */
START_TEST(test_free_pending_event)
{
	struct ibc_connect_attr attr = {
		.comp_mask =
			IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_EVENT_CB,
		.socket_path = D.sock,
		.event_cb = on_event,
	};
	struct seen seen = { 0 };
	struct ibc_client *cl;
	struct ibc_ctx *cx;
	struct ibc_dm *dm;
	struct child ch;
	struct pollfd pfd;
	uint8_t buf[4];
	int64_t end;

	attr.event_arg = &seen;
	ck_assert_int_eq(ibc_connect(&attr, &cl), 0);
	ck_assert_int_eq(ibc_open(cl, NULL, &cx), 0);
	pfd.fd = ibc_get_fd(cl);
	pfd.events = POLLIN;
	ck_assert_int_ge(pfd.fd, 0);
	child_start(&ch, CHILD_ALLOC, 0, 4096, 3);
	ck_assert_int_eq(ibc_dm_import(cx, ch.handle, &dm), 0);
	ck_assert_int_eq(child_end(&ch, true), SIGKILL);
	end = tl_now_ms() + 5000;
	while (!seen.n && tl_now_ms() < end) {
		poll(&pfd, 1, 100);
		ck_assert_int_ge(ibc_dispatch(cl), 0);
	}
	ck_assert_int_eq(seen.n, 1);
	ck_assert_int_eq(seen.type, IBC_EVENT_DM_FREE_PENDING);
	ck_assert_int_eq(seen.kind, IBC_OBJ_DM);
	ck_assert_uint_eq(seen.id, ch.id);
	/* The library let go after the callback. */
	ck_assert_int_eq(ibc_dm_read(dm, buf, 0, 4), -ENODEV);
	wait_all_free(5000);
	ck_assert_int_eq(ibc_dm_unimport(dm), 0);
	ibc_disconnect(cl);
}
END_TEST

struct racer {
	struct ibc_client *cl;
	int events; /* atomic */
	bool stop;  /* atomic */
};

static void racer_event(struct ibc_client *cl, const struct ibc_event *ev,
			void *arg)
{
	struct racer *r = arg;

	(void)cl;
	(void)ev;
	__atomic_add_fetch(&r->events, 1, __ATOMIC_RELAXED);
}

static void *racer_dispatch(void *arg)
{
	struct racer *r = arg;
	struct pollfd pfd = { .fd = ibc_get_fd(r->cl), .events = POLLIN };

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		poll(&pfd, 1, 5);
		if (ibc_dispatch(r->cl) < 0)
			break;
	}
	return NULL;
}

/* A second client of this domain whose events another thread dispatches. */
static void racer_start(struct racer *r, struct ibc_ctx **ret_ctx,
			pthread_t *ret_thread)
{
	struct ibc_connect_attr attr = {
		.comp_mask =
			IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_EVENT_CB,
		.socket_path = D.sock,
		.event_cb = racer_event,
		.event_arg = r,
	};

	ck_assert_int_eq(ibc_connect(&attr, &r->cl), 0);
	ck_assert_int_eq(ibc_open(r->cl, NULL, ret_ctx), 0);
	ck_assert_int_eq(pthread_create(ret_thread, NULL, racer_dispatch, r),
			 0);
}

/* Every byte back, the dispatching thread gone, the session usable. */
static void racer_stop(struct racer *r, pthread_t thread)
{
	wait_all_free(5000);
	__atomic_store_n(&r->stop, true, __ATOMIC_RELEASE);
	pthread_join(thread, NULL);
	ck_assert_int_eq(ibc_ping(r->cl, "x", 1), 0);
}

/* The application unimports while another of its threads handles the
 * DM's free-pending event for the same import: whichever comes first, the
 * broker hears one unimport and every byte comes back. The narrow case
 * where the unimport falls inside the handler (which then frees the
 * structure) is too narrow for a test to hit on purpose: a sanitizer run
 * of these two is its only witness. */
START_TEST(test_unimport_races_event)
{
	struct racer r = { 0 };
	struct ibc_ctx *cx;
	pthread_t t;
	int rounds = 200;

	racer_start(&r, &cx, &t);
	for (int i = 0; i < rounds; i++) {
		struct ibc_dm *dm = alloc_dm(4096), *imp;
		int before;
		int64_t end;

		ck_assert_int_eq(ibc_dm_import(cx, ibc_dm_handle(dm), &imp), 0);
		before = __atomic_load_n(&r.events, __ATOMIC_RELAXED);
		/* Pending: the event goes to the importer's session. */
		ck_assert_int_eq(ibc_dm_free(dm), 0);
		/* Mostly the unimport starts as the callback returns, where
		 * the library goes on to end the import itself; every
		 * fourth round it goes first. */
		end = tl_now_ms() + 2000;
		while (i % 4 != 3 &&
		       __atomic_load_n(&r.events, __ATOMIC_RELAXED) == before &&
		       tl_now_ms() < end)
			;
		ck_assert_int_eq(ibc_dm_unimport(imp), 0);
	}
	racer_stop(&r, t);
	/* Each round's event came, or the unimport went before it was
	 * sent; none came twice. */
	ck_assert_int_le(__atomic_load_n(&r.events, __ATOMIC_RELAXED), rounds);
	ibc_disconnect(r.cl);
}
END_TEST

/* The same with a revoke, whose handler first deregisters the import's MR
 * through the broker: the application's unimport, retried while the MR
 * keeps it -EBUSY, lands in the middle of the handler. */
START_TEST(test_unimport_races_revoke)
{
	unsigned int acc = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE;
	struct racer r = { 0 };
	struct ibc_ctx *cx;
	pthread_t t;
	int rounds = 20;

	racer_start(&r, &cx, &t);
	for (int i = 0; i < rounds; i++) {
		struct ibc_dm *dm = alloc_dm(4096), *imp;
		struct ibc_mr *mr;
		int ret;

		ck_assert_int_eq(ibc_dm_import(cx, ibc_dm_handle(dm), &imp), 0);
		ck_assert_int_eq(ibc_reg_dm_mr(imp, 0, 4096, acc, &mr), 0);
		ck_assert_int_eq(ibc_admin_dm_revoke(C, ibc_dm_id(dm)), 0);
		while ((ret = ibc_dm_unimport(imp)) == -EBUSY)
			;
		ck_assert_int_eq(ret, 0);
		ck_assert_int_eq(ibc_dereg_mr(mr), 0);
		ck_assert_int_eq(ibc_dm_unimport(dm), 0);
	}
	racer_stop(&r, t);
	ck_assert_int_eq(__atomic_load_n(&r.events, __ATOMIC_RELAXED), rounds);
	ibc_disconnect(r.cl);
}
END_TEST

/* The application closes the context while another of its threads
 * handles a DM event on an import in it: the close waits for the handler,
 * and the import goes with the context. */
START_TEST(test_close_races_event)
{
	int rounds = 50;

	for (int i = 0; i < rounds; i++) {
		struct racer r = { 0 };
		struct ibc_dm *dm = alloc_dm(4096), *imp;
		struct ibc_ctx *cx;
		pthread_t t;
		int64_t end = tl_now_ms() + 2000;

		racer_start(&r, &cx, &t);
		ck_assert_int_eq(ibc_dm_import(cx, ibc_dm_handle(dm), &imp), 0);
		ck_assert_int_eq(ibc_dm_free(dm), 0);
		while (!__atomic_load_n(&r.events, __ATOMIC_RELAXED) &&
		       tl_now_ms() < end)
			;
		ibc_close(cx);
		racer_stop(&r, t);
		ibc_disconnect(r.cl);
	}
}
END_TEST

struct freer {
	struct ibc_dm *dm;
	int ret;
};

/* The allocator's free, as soon as the broker counts the other import. */
static void *freer_main(void *arg)
{
	struct freer *f = arg;
	uint64_t id = ibc_dm_id(f->dm);
	int64_t end = tl_now_ms() + 5000;
	struct ibc_dm_info *dms;
	bool two = false;
	size_t n;

	while (!two && tl_now_ms() < end) {
		if (ibc_list_dms(C, &dms, sizeof(*dms), &n) < 0)
			break;
		for (size_t i = 0; i < n; i++)
			two |= dms[i].id == id && dms[i].n_importers == 2;
		ibc_list_free(dms);
	}
	f->ret = two ? ibc_dm_free(f->dm) : -ETIMEDOUT;
	return NULL;
}

/* The free comes while the other client's import is in flight, its event
 * dispatched by another thread before the import lists its DM: the
 * import still ends, once listed, as the event would have ended it. */
START_TEST(test_import_in_flight_event)
{
	struct racer r = { 0 };
	struct ibc_ctx *cx;
	pthread_t t, ft;
	int rounds = 50;

	racer_start(&r, &cx, &t);
	for (int i = 0; i < rounds; i++) {
		struct freer f = { .dm = alloc_dm(4096) };
		struct ibc_dm *imp;
		uint8_t buf[4];
		int64_t end;

		ck_assert_int_eq(pthread_create(&ft, NULL, freer_main, &f), 0);
		ck_assert_int_eq(ibc_dm_import(cx, ibc_dm_handle(f.dm), &imp),
				 0);
		pthread_join(ft, NULL);
		ck_assert_int_eq(f.ret, 0);
		end = tl_now_ms() + 2000;
		while (ibc_dm_read(imp, buf, 0, 4) == 0 && tl_now_ms() < end)
			tl_sleep_ms(1);
		ck_assert_int_eq(ibc_dm_read(imp, buf, 0, 4), -ENODEV);
		ck_assert_int_eq(ibc_dm_unimport(imp), 0);
	}
	racer_stop(&r, t);
	ibc_disconnect(r.cl);
}
END_TEST

struct copier {
	struct ibc_dm *dm;
	const uint32_t *want;
	size_t words;
	int ended; /* what the last copy answered */
	unsigned int copies, wrong;
};

/* Read the whole DM until a read fails; count the reads that answered 0
 * with bytes that are not the DM's. */
static void *copier_main(void *arg)
{
	struct copier *c = arg;
	size_t len = c->words * sizeof(uint32_t);
	uint32_t *buf = malloc(len);
	int ret;

	ck_assert_ptr_nonnull(buf);
	while ((ret = ibc_dm_read(c->dm, buf, 0, len)) == 0) {
		__atomic_add_fetch(&c->copies, 1, __ATOMIC_RELAXED);
		c->wrong += memcmp(buf, c->want, len) != 0;
	}
	c->ended = ret;
	free(buf);
	return NULL;
}

/* Another thread copies out of an import without pause while the free's
 * event ends it: each read either answers 0 with the DM's bytes or
 * -ENODEV, never 0 with the zero pages that took the mapping's place. */
START_TEST(test_copy_races_end)
{
	enum { LEN = 65536, WORDS = LEN / 4 };
	static uint32_t want[WORDS];
	struct racer r = { 0 };
	unsigned int copies = 0;
	struct ibc_ctx *cx;
	pthread_t t, ct;
	int rounds = 40;

	pattern(want, WORDS, 7);
	racer_start(&r, &cx, &t);
	for (int i = 0; i < rounds; i++) {
		struct ibc_dm *dm = alloc_dm(LEN);
		struct copier c = { .want = want, .words = WORDS };

		ck_assert_int_eq(ibc_dm_write(dm, 0, want, LEN), 0);
		ck_assert_int_eq(ibc_dm_import(cx, ibc_dm_handle(dm), &c.dm),
				 0);
		ck_assert_int_eq(pthread_create(&ct, NULL, copier_main, &c), 0);
		/* Some copies first, so that the end falls among them. */
		while (!__atomic_load_n(&c.copies, __ATOMIC_RELAXED))
			sched_yield();
		ck_assert_int_eq(ibc_dm_free(dm), 0);
		pthread_join(ct, NULL);
		ck_assert_int_eq(c.ended, -ENODEV);
		ck_assert_msg(!c.wrong,
			      "round %d: %u of %u reads answered 0 "
			      "with bytes not the DM's",
			      i, c.wrong, c.copies);
		copies += c.copies;
		ck_assert_int_eq(ibc_dm_unimport(c.dm), 0);
	}
	racer_stop(&r, t);
	ck_assert_uint_ge(copies, rounds);
	ibc_disconnect(r.cl);
}
END_TEST

/* Allocator and importer, each exiting or killed, in both orders: the DM
 * is freed exactly once, when both are gone, and the quota comes back. */
START_TEST(test_exit_kill_matrix)
{
	for (int combo = 0; combo < 8; combo++) {
		bool kill_alloc = combo & 1, kill_imp = combo & 2;
		bool alloc_first = combo & 4;
		struct child a, b;
		struct ibc_dm_info info;
		uint64_t used, reserved;
		size_t n;

		child_start(&a, CHILD_ALLOC, 0, 8192, 9);
		child_start(&b, CHILD_IMPORT, a.handle, 0, 0);
		ck_assert_uint_eq(b.id, a.id);
		usage(&used, &reserved, &n);
		ck_assert_uint_eq(used, 8192);
		child_end(alloc_first ? &a : &b,
			  alloc_first ? kill_alloc : kill_imp);
		tl_sleep_ms(50);
		info = dm_info(a.id);
		ck_assert_uint_eq(info.n_importers, 1);
		ck_assert_int_eq(info.state, alloc_first ? IBC_DM_FREE_PENDING :
							   IBC_DM_LIVE);
		usage(&used, &reserved, &n);
		ck_assert_uint_eq(used, 8192);
		ck_assert_uint_eq(reserved, 8192);
		child_end(alloc_first ? &b : &a,
			  alloc_first ? kill_imp : kill_alloc);
		wait_all_free(5000);
	}
}
END_TEST

START_TEST(test_no_dm_on_null)
{
	struct ibc_dm *dm;

	ck_assert_int_eq(ibc_dm_alloc(NULL, 4096, 0, &dm), -EINVAL);
	ck_assert_int_eq(ibc_dm_import(NULL, 1, &dm), -EINVAL);
	ck_assert_int_eq(ibc_dm_unimport(NULL), -EINVAL);
	ck_assert_int_eq(ibc_dm_free(NULL), -EINVAL);
	ck_assert_uint_eq(ibc_dm_length(NULL), 0);
	ck_assert_ptr_null(ibc_verbs_dm(NULL));
	dm = alloc_dm(4096);
	/* The soft device has no struct ibv_dm. */
	errno = 0;
	ck_assert_ptr_null(ibc_verbs_dm(dm));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_int_eq(ibc_dm_free(dm), 0);
}
END_TEST

/* MRs on device memory: ibv_reg_dm_mr's rules, registry objects, and the
 * DM cannot go while one is on it. */
START_TEST(test_dm_mr)
{
	unsigned int acc = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE;
	struct ibc_object_info *o;
	struct ibc_dm *dm = alloc_dm(8192);
	struct ibc_client_info ci;
	struct ibc_dm_info info;
	struct ibc_mr *mr, *mr2;
	size_t n, mrs = 0, dms = 0;

	ck_assert_int_eq(
		ibc_reg_dm_mr(dm, 0, 4096, IBV_ACCESS_LOCAL_WRITE, &mr),
		-EINVAL);
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "ZERO_BASED"));
	ck_assert_int_eq(ibc_reg_dm_mr(dm, 4096, 4097, acc, &mr), -EINVAL);
	ck_assert_int_eq(ibc_reg_dm_mr(dm, UINT64_MAX - 7, 16, acc, &mr),
			 -EINVAL);
	ck_assert_int_eq(ibc_reg_dm_mr(dm, 0, 0, acc, &mr), -EINVAL);
	ck_assert_int_eq(ibc_reg_dm_mr(dm, 4096, 4096, acc, &mr), 0);
	ck_assert_uint_ne(ibc_mr_lkey(mr), 0);
	ck_assert_int_eq(ibc_reg_dm_mr(dm, 0, 8192, acc, &mr2), 0);
	/* Both MRs and the import are registry objects. */
	ck_assert_int_eq(ibc_list_objects(C, NULL, &o, sizeof(*o), &n), 0);
	for (size_t i = 0; i < n; i++) {
		mrs += o[i].kind == IBC_OBJ_MR;
		dms += o[i].kind == IBC_OBJ_DM;
	}
	ibc_list_free(o);
	ck_assert_uint_eq(mrs, 2);
	ck_assert_uint_eq(dms, 1);
	/* The listing counts them, and names whose they are. */
	info = dm_info(ibc_dm_id(dm));
	ck_assert_uint_eq(info.mrs, 2);
	ck_assert_int_eq(ibc_client_info(C, &ci, sizeof(ci)), 0);
	for (unsigned int i = 0; i < 2; i++) {
		ck_assert_uint_eq(info.mr_list[i].client_id, ci.client_id);
		ck_assert_uint_eq(info.mr_list[i].pid, (uint32_t)getpid());
		ck_assert(!info.mr_list[i].gone);
	}
	ck_assert_uint_ne(info.mr_list[0].object_id, info.mr_list[1].object_id);
	ck_assert_int_eq(ibc_dm_unimport(dm), -EBUSY);
	ck_assert_int_eq(ibc_dm_free(dm), -EBUSY);
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "2 MRs"));
	ck_assert_int_eq(ibc_dereg_mr(mr), 0);
	ck_assert_uint_eq(dm_info(ibc_dm_id(dm)).mrs, 1);
	ck_assert_int_eq(ibc_dm_free(dm), -EBUSY);
	ck_assert_int_eq(ibc_dereg_mr(mr2), 0);
	ck_assert_uint_eq(dm_info(ibc_dm_id(dm)).mrs, 0);
	ck_assert_int_eq(ibc_dm_free(dm), 0);
	wait_all_free(5000);
}
END_TEST

static int ol_dm(struct ol_client *c, unsigned int body, uint64_t arg,
		 uint64_t *ret_id, uint64_t *ret_obj)
{
	Rdmab__DmImportRequest im = RDMAB__DM_IMPORT_REQUEST__INIT;
	Rdmab__DmIdRequest q = RDMAB__DM_ID_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	int err;

	req.body_case = body;
	if (body == RDMAB__REQUEST__BODY_DM_IMPORT) {
		im.context_id = c->ctx_id;
		im.handle = (uint32_t)arg;
		req.dm_import = &im;
	} else {
		q.dm_id = arg;
		req.dm_unimport = &q;
	}
	err = ol_call(c, &req, &m);
	if (err < 0)
		return err;
	if (body == RDMAB__REQUEST__BODY_DM_IMPORT) {
		*ret_id = m->reply->dm_import->dm_id;
		*ret_obj = m->reply->dm_import->object_id;
	}
	ol_free(m);
	return 0;
}

/* Import @handle in @c's context, asking for the status page or not, and
 * unimport it: 1 when the import's reply carried the page, 0 when not. */
static int import_status(struct ol_client *c, uint32_t handle, bool want)
{
	Rdmab__DmImportRequest im = RDMAB__DM_IMPORT_REQUEST__INIT;
	Rdmab__DmIdRequest q = RDMAB__DM_ID_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	int has;

	im.context_id = c->ctx_id;
	im.handle = handle;
	im.want_status = want;
	req.body_case = RDMAB__REQUEST__BODY_DM_IMPORT;
	req.dm_import = &im;
	OK(ol_call(c, &req, &m));
	has = m->reply->dm_import->has_status;
	q.dm_id = m->reply->dm_import->dm_id;
	q.object_id = m->reply->dm_import->object_id;
	ol_free(m);
	req = (Rdmab__Request)RDMAB__REQUEST__INIT;
	req.body_case = RDMAB__REQUEST__BODY_DM_UNIMPORT;
	req.dm_unimport = &q;
	OK(ol_request(c, &req));
	return has;
}

/* The status page goes with a session's first DM, and again whenever a
 * request asks: a library whose first call timed out lost it with the
 * reply, and asks until it has it. */
START_TEST(test_status_page_resent)
{
	struct ibc_dm *dm = alloc_dm(4096);
	uint32_t handle = ibc_dm_handle(dm);
	struct ol_client raw;

	ck_assert_int_eq(ol_connect(&raw, D.sock, NULL), 0);
	ck_assert_int_eq(import_status(&raw, handle, false), 1);
	ck_assert_int_eq(import_status(&raw, handle, false), 0);
	ck_assert_int_eq(import_status(&raw, handle, true), 1);
	ck_assert_int_eq(import_status(&raw, handle, false), 0);
	ol_close(&raw);
	ck_assert_int_eq(ibc_dm_free(dm), 0);
	wait_all_free(5000);
}
END_TEST

/* A client that unimports with its MR still on the DM (the library would
 * refuse; the protocol cannot): the free is blocked, the quota stays
 * charged, the listing names why, and the DM goes when the MR does (its
 * owner's destroy, or the cleanup after its death). */
START_TEST(test_free_blocked)
{
	for (int killed = 0; killed < 2; killed++) {
		struct ibc_dm *dm = alloc_dm(4096);
		struct ibc_dm_info info;
		struct ol_client raw;
		uint64_t id, obj, used, reserved, ids[2];
		char want[128], args[64], out[4096];
		uint64_t uses[1];
		struct ol_obj mr;
		Rdmab__ObjAttr a = RDMAB__OBJ_ATTR__INIT;
		pid_t pid = 0;
		int p[2];
		size_t n;

		ck_assert_int_eq(pipe(p), 0);
		if (killed) {
			/* The raw client in a process of its own. */
			pid = fork();
			ck_assert_int_ge(pid, 0);
		}
		if (pid == 0) {
			if (killed) {
				prctl(PR_SET_PDEATHSIG, SIGKILL);
				close(p[0]);
			}
			ck_assert_int_eq(ol_connect(&raw, D.sock, NULL), 0);
			ck_assert_int_eq(ol_dm(&raw,
					       RDMAB__REQUEST__BODY_DM_IMPORT,
					       ibc_dm_handle(dm), &id, &obj),
					 0);
			uses[0] = obj;
			a.mr_addr = 0;
			a.mr_length = 4096;
			a.mr_access = IBV_ACCESS_ZERO_BASED;
			ck_assert_int_eq(
				ol_create(&raw, IBC_OBJ_MR, uses, 1, &a, &mr),
				0);
			ck_assert_int_eq(ol_dm(&raw,
					       RDMAB__REQUEST__BODY_DM_UNIMPORT,
					       id, NULL, NULL),
					 0);
			/* The MR's id and its owner's, for the listing. */
			ids[0] = mr.id;
			ids[1] = raw.client_id;
			if (write(p[1], ids, sizeof(ids)) != sizeof(ids))
				_exit(1);
			if (killed)
				for (;;)
					pause();
		}
		if (killed)
			close(p[1]);
		ck_assert_int_eq(read(p[0], ids, sizeof(ids)), sizeof(ids));
		close(p[0]);
		if (!killed)
			close(p[1]);
		id = ibc_dm_id(dm);
		ck_assert_uint_eq(dm_info(id).mrs, 1);
		ck_assert_int_eq(ibc_dm_free(dm), 0);
		info = dm_info(id);
		ck_assert_int_eq(info.state, IBC_DM_FREE_BLOCKED);
		/* The listing names the MR and its owner, not only the
		 * device's sentence. */
		ck_assert_uint_eq(info.mrs, 1);
		ck_assert_uint_eq(info.mr_list[0].object_id, ids[0]);
		ck_assert_uint_eq(info.mr_list[0].client_id, ids[1]);
		ck_assert_uint_eq(info.mr_list[0].pid,
				  (uint32_t)(killed ? pid : getpid()));
		ck_assert(!info.mr_list[0].gone);
		snprintf(want, sizeof(want), "MR %llu of client %llu (pid %d)",
			 (unsigned long long)ids[0], (unsigned long long)ids[1],
			 (int)(killed ? pid : getpid()));
		ck_assert_msg(strstr(info.blocked_by, want), "%s",
			      info.blocked_by);
		snprintf(args, sizeof(args), "dm show %llu",
			 (unsigned long long)id);
		ck_assert_int_eq(ctl_run(args, out, sizeof(out)), 0);
		ck_assert_msg(strstr(out, want), "%s", out);
		usage(&used, &reserved, &n);
		ck_assert_uint_eq(used, 4096);
		ck_assert_uint_eq(reserved, 4096);
		if (killed) {
			ck_assert_int_eq(kill(pid, SIGKILL), 0);
			ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
		} else {
			ck_assert_int_eq(ol_destroy(&raw, mr.id), 0);
		}
		wait_all_free(5000);
		if (!killed)
			ol_close(&raw);
	}
}
END_TEST

/* A session that ends while its process lives (evicted) keeps its imports
 * until the process dies: the broker cannot see its mappings. */
START_TEST(test_evicted_importer_keeps_hold)
{
	struct ibc_client *c2;
	struct ibc_ctx *x2;
	struct ibc_dm *dm = alloc_dm(4096), *d2;
	struct ibc_client_info ci;
	struct ibc_dm_info info;
	uint64_t id = ibc_dm_id(dm);

	ck_assert_int_eq(tl_connect(D.sock, 20000, &c2), 0);
	ck_assert_int_eq(ibc_client_info(c2, &ci, sizeof(ci)), 0);
	ck_assert_int_eq(ibc_open(c2, NULL, &x2), 0);
	ck_assert_int_eq(ibc_dm_import(x2, ibc_dm_handle(dm), &d2), 0);
	ck_assert_int_eq(ibc_admin_evict(C, ci.client_id), 0);
	ck_assert_int_eq(ibc_dm_free(dm), 0);
	tl_sleep_ms(100);
	info = dm_info(id);
	ck_assert_int_eq(info.state, IBC_DM_FREE_PENDING);
	ck_assert_uint_eq(info.n_importers, 1);
	ck_assert_uint_eq(info.importers[0], ci.client_id);
	/* Its library answers locally; the broker still counts the hold. */
	ck_assert_int_eq(ibc_dm_unimport(d2), 0);
	ibc_disconnect(c2);
	ck_assert_int_eq(dm_info(id).state, IBC_DM_FREE_PENDING);
}
END_TEST

/* An allocator whose session ends while its process lives (evicted) has
 * not died: its DM stays live and importable, nobody is told to let go;
 * its death asks the free. */
START_TEST(test_evicted_allocator_keeps_dm)
{
	struct ibc_dm *d1, *d2;
	struct ibc_dm_info info;
	struct child a;
	uint64_t alloc;

	child_start(&a, CHILD_ALLOC, 0, 4096, 7);
	ck_assert_int_eq(ibc_dm_import(X, a.handle, &d1), 0);
	info = dm_info(a.id);
	alloc = info.allocator;
	ck_assert_uint_ne(alloc, 0);
	ck_assert(!info.allocator_gone);
	ck_assert_int_eq(ibc_admin_evict(C, alloc), 0);
	tl_sleep_ms(100);
	info = dm_info(a.id);
	ck_assert_uint_eq(info.allocator, alloc);
	ck_assert_uint_eq(info.allocator_pid, (uint32_t)a.pid);
	ck_assert(info.allocator_gone);
	ck_assert_int_eq(info.state, IBC_DM_LIVE);
	ck_assert_int_eq(ibc_dm_import(X, a.handle, &d2), 0);
	ck_assert_int_eq(ibc_dm_unimport(d2), 0);
	/* Its death is the allocator's free. */
	ck_assert_int_eq(child_end(&a, true), SIGKILL);
	wait_importers(a.id, 1);
	ck_assert_int_eq(dm_info(a.id).state, IBC_DM_FREE_PENDING);
	ck_assert_int_eq(ibc_dm_unimport(d1), 0);
	wait_all_free(5000);
}
END_TEST

/* An allocator that closes its context (its library unimports) and its
 * session but lives on keeps its claim: the DM stays until it dies. */
START_TEST(test_disconnected_allocator_keeps_dm)
{
	struct ibc_client *c2;
	struct ibc_ctx *x2;
	struct ibc_dm *dm, *imp;
	uint64_t id, used, reserved;
	size_t n;
	pid_t pid;
	int p[2], status;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[0]);
		if (tl_connect(D.sock, 20000, &c2) || ibc_open(c2, NULL, &x2) ||
		    ibc_dm_alloc(x2, 4096, 0, &dm))
			_exit(1);
		id = ibc_dm_id(dm);
		ibc_disconnect(c2);
		if (write(p[1], &id, sizeof(id)) != sizeof(id))
			_exit(2);
		for (;;)
			pause();
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], &id, sizeof(id)), sizeof(id));
	close(p[0]);
	/* Its unimport and its session's end are read. */
	wait_importers(id, 0);
	tl_sleep_ms(100);
	ck_assert_int_eq(dm_info(id).state, IBC_DM_LIVE);
	usage(&used, &reserved, &n);
	ck_assert_uint_eq(used, 4096);
	ck_assert_int_eq(ibc_dm_import(X, dm_info(id).handle, &imp), 0);
	ck_assert_int_eq(ibc_dm_unimport(imp), 0);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	wait_all_free(5000);
}
END_TEST

/* A session cut (here by a protocol error) with an unimport still queued
 * behind the cut: the unimport is applied when the session ends, as the
 * registry's unregisters are, not when the process dies (it lives). */
START_TEST(test_unimport_behind_cut)
{
	static const char garbage[] = "\xff\xff\xff\xff";
	Rdmab__DmIdRequest q = RDMAB__DM_ID_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct ibc_dm *dm = alloc_dm(4096);
	struct ol_client raw;
	uint64_t id, obj;
	int err, err2;

	ck_assert_int_eq(ol_connect(&raw, D.sock, NULL), 0);
	ck_assert_int_eq(ol_dm(&raw, RDMAB__REQUEST__BODY_DM_IMPORT,
			       ibc_dm_handle(dm), &id, &obj),
			 0);
	ck_assert_int_eq(ibc_dm_free(dm), 0);
	ck_assert_int_eq(dm_info(id).state, IBC_DM_FREE_PENDING);
	/* Both packets wait in the socket while the daemon is stopped: it
	 * reads the bad one, ends the session, then finds the unimport. */
	q.dm_id = id;
	req.body_case = RDMAB__REQUEST__BODY_DM_UNIMPORT;
	req.dm_unimport = &q;
	ck_assert_int_eq(kill(D.pid, SIGSTOP), 0);
	err = tl_raw_send(raw.fd, garbage, 4, NULL, 0, 0);
	err2 = ol_send(&raw, &req);
	/* Before any assertion: a stopped daemon would not stop. */
	ck_assert_int_eq(kill(D.pid, SIGCONT), 0);
	ck_assert_int_eq(err, 0);
	ck_assert_int_eq(err2, 0);
	wait_all_free(5000);
	ol_close(&raw);
}
END_TEST

static void dispatch_until(struct ibc_client *cl, const struct seen *s, int n)
{
	struct pollfd pfd = { .fd = ibc_get_fd(cl), .events = POLLIN };
	int64_t end = tl_now_ms() + 5000;

	ck_assert_int_ge(pfd.fd, 0);
	while (s->n < n && tl_now_ms() < end) {
		poll(&pfd, 1, 100);
		ck_assert_int_ge(ibc_dispatch(cl), 0);
	}
	ck_assert_int_eq(s->n, n);
}

/* Revoke with a cooperating importer: every holder's next call fails
 * with ENODEV without asking the broker (the status page), the handle
 * answers as a missing one, the importer's library deregisters its MR and
 * unimports after its callback, and after the grace period the DM goes. */
START_TEST(test_revoke_cooperating)
{
	struct ibc_connect_attr attr = {
		.comp_mask =
			IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_EVENT_CB,
		.socket_path = D.sock,
		.event_cb = on_event,
	};
	unsigned int acc = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE;
	struct seen seen = { 0 };
	char missing[256], want[256];
	struct ibc_dm *dm = alloc_dm(4096), *imp, *imp2, *x;
	struct ibc_client *cl;
	struct ibc_ctx *cx;
	struct ibc_mr *mr;
	uint64_t id = ibc_dm_id(dm);
	uint32_t h = ibc_dm_handle(dm);
	uint8_t buf[4] = { 0 };
	char *at;

	attr.event_arg = &seen;
	ck_assert_int_eq(ibc_connect(&attr, &cl), 0);
	ck_assert_int_eq(ibc_open(cl, NULL, &cx), 0);
	ck_assert_int_eq(ibc_dm_import(cx, h, &imp), 0);
	ck_assert_int_eq(ibc_reg_dm_mr(imp, 0, 4096, acc, &mr), 0);
	/* A second import in the same session: the one event ends both. */
	ck_assert_int_eq(ibc_dm_import(cx, h, &imp2), 0);
	ck_assert_int_eq(ibc_dm_import(X, 77, &x), -ENOENT);
	snprintf(missing, sizeof(missing), "%s", ibc_last_error());
	ck_assert_int_eq(ibc_admin_dm_revoke(C, id), 0);
	ck_assert_int_eq(ibc_admin_dm_revoke(C, id), -EALREADY);
	/* No dispatch yet, no round trip: the status page says it. */
	ck_assert_int_eq(ibc_dm_read(imp, buf, 0, 4), -ENODEV);
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "revoked"));
	ck_assert_int_eq(ibc_dm_write(dm, 0, buf, 4), -ENODEV);
	ck_assert_int_eq(ibc_dm_free(dm), -ENODEV);
	ck_assert_int_eq(dm_info(id).state, IBC_DM_REVOKED);
	ck_assert_int_eq(ibc_dm_import(X, h, &x), -ENOENT);
	at = strstr(missing, "77");
	ck_assert_ptr_nonnull(at);
	snprintf(want, sizeof(want), "%.*s%u%s", (int)(at - missing), missing,
		 h, at + 2);
	ck_assert_str_eq(ibc_last_error(), want);
	dispatch_until(cl, &seen, 1);
	ck_assert_int_eq(seen.type, IBC_EVENT_DM_REVOKED);
	ck_assert_uint_eq(seen.id, id);
	/* The library deregistered the MR and unimported: what is left are
	 * the structures, and the allocator's hold. */
	wait_importers(id, 1);
	ck_assert_ptr_null(ibc_verbs_mr(mr));
	ck_assert_int_eq(ibc_dereg_mr(mr), 0);
	ck_assert_int_eq(ibc_dm_read(imp2, buf, 0, 4), -ENODEV);
	ck_assert_int_eq(ibc_dm_unimport(imp2), 0);
	ck_assert_int_eq(ibc_dm_unimport(imp), 0);
	/* The allocator lets go too; the grace period ends, the DM goes. */
	ck_assert_int_eq(ibc_dm_unimport(dm), 0);
	wait_all_free(5000);
	ibc_disconnect(cl);
}
END_TEST

/* Revoke with importers that do not cooperate: one killed (its death
 * releases it), one alive that never dispatches: after the grace period
 * the listing says who blocks the revoke, and the DM goes when that
 * process dies. */
START_TEST(test_revoke_dead_and_stubborn)
{
	struct ibc_dm *dm = alloc_dm(4096);
	struct ibc_dm_info info;
	struct child dead, stubborn;
	uint64_t id = ibc_dm_id(dm);

	child_start(&dead, CHILD_IMPORT, ibc_dm_handle(dm), 0, 0);
	child_start(&stubborn, CHILD_IMPORT, ibc_dm_handle(dm), 0, 0);
	ck_assert_int_eq(ibc_admin_dm_revoke(C, id), 0);
	ck_assert_int_eq(child_end(&dead, true), SIGKILL);
	ck_assert_int_eq(ibc_dm_unimport(dm), 0);
	tl_sleep_ms(600);
	info = dm_info(id);
	ck_assert_int_eq(info.state, IBC_DM_REVOKED);
	ck_assert_uint_eq(info.n_importers, 1);
	ck_assert_ptr_nonnull(strstr(info.blocked_by, "revoke blocked by "
						      "client"));
	child_end(&stubborn, true);
	wait_all_free(5000);
}
END_TEST

/* rdmabrokerctl dm: list, show, --json, and the administrator's free. */
START_TEST(test_ctl_dm)
{
	static char out[8192];
	char want[256], args[64];
	struct ibc_dm *dm = alloc_dm(5000);
	uint64_t id = ibc_dm_id(dm);

	ck_assert_int_eq(ctl_run("dm", out, sizeof(out)), 0);
	ck_assert_ptr_nonnull(strstr(out, "IMPORT_CLIENTS"));
	ck_assert_ptr_nonnull(strstr(out, "8192     2     "));
	ck_assert_ptr_nonnull(strstr(out, "reserved 8192 of 262144 bytes"));
	ck_assert_int_eq(ctl_run("--json dm", out, sizeof(out)), 0);
	snprintf(want, sizeof(want),
		 "[{\"id\":%llu,\"domain\":\"uid-0\","
		 "\"device\":\"soft0\",\"handle\":1,\"length\":8192,"
		 "\"pages\":2,",
		 (unsigned long long)id);
	ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%s", out);
	ck_assert_int_eq(ctl_run("--json devices", out, sizeof(out)), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"dm_reserved\":8192"));
	snprintf(args, sizeof(args), "dm show %llu", (unsigned long long)id);
	ck_assert_int_eq(ctl_run(args, out, sizeof(out)), 0);
	ck_assert_ptr_nonnull(strstr(out, "state:      live"));
	ck_assert_int_ne(ctl_run("dm show 999", out, sizeof(out)), 0);
	ck_assert_int_ne(ctl_run("dm show x", out, sizeof(out)), 0);
	/* The free as an administrator: this process still holds it. */
	snprintf(args, sizeof(args), "dm free %llu", (unsigned long long)id);
	ck_assert_int_eq(ctl_run(args, out, sizeof(out)), 0);
	ck_assert_int_eq(dm_info(id).state, IBC_DM_FREE_PENDING);
	ck_assert_int_ne(ctl_run(args, out, sizeof(out)), 0);
	ck_assert_ptr_nonnull(strstr(out, "already"));
	ck_assert_int_eq(ibc_dm_unimport(dm), 0);
	wait_all_free(5000);
	dm = alloc_dm(4096);
	snprintf(args, sizeof(args), "--json dm revoke %llu",
		 (unsigned long long)ibc_dm_id(dm));
	ck_assert_int_eq(ctl_run(args, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "{\"revoked\":%llu}\n",
		 (unsigned long long)ibc_dm_id(dm));
	ck_assert_str_eq(out, want);
	ck_assert_int_eq(ibc_dm_unimport(dm), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dm");
	TCase *tc = tcase_create("soft");
	TCase *small = tcase_create("small device");
	TCase *quota = tcase_create("quota");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_write_read_two_processes);
	tcase_add_test(tc, test_new_dm_zeroed);
	tcase_add_test(tc, test_free_one_round_trip);
	tcase_add_test(tc, test_missing_handles_identical);
	tcase_add_test(tc, test_error_order);
	tcase_add_test(tc, test_free_eperm);
	tcase_add_test(tc, test_persistent);
	tcase_add_test(tc, test_free_pending_event);
	tcase_add_test(tc, test_unimport_races_event);
	tcase_add_test(tc, test_import_in_flight_event);
	tcase_add_test(tc, test_copy_races_end);
	tcase_add_test(tc, test_close_races_event);
	tcase_add_test(tc, test_exit_kill_matrix);
	tcase_add_test(tc, test_no_dm_on_null);
	tcase_add_test(tc, test_ctl_dm);
	tcase_add_test(tc, test_dm_mr);
	tcase_add_test(tc, test_free_blocked);
	tcase_add_test(tc, test_evicted_importer_keeps_hold);
	tcase_add_test(tc, test_evicted_allocator_keeps_dm);
	tcase_add_test(tc, test_disconnected_allocator_keeps_dm);
	tcase_add_test(tc, test_unimport_behind_cut);
	tcase_add_test(tc, test_status_page_resent);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(small, setup_small, teardown);
	tcase_set_timeout(small, 60);
	tcase_add_test(small, test_length_errors);
	tcase_add_test(small, test_device_exhausted);
	suite_add_tcase(s, small);
	tcase_add_checked_fixture(quota, setup_quota, teardown);
	tcase_set_timeout(quota, 60);
	tcase_add_test(quota, test_quota_pages);
	suite_add_tcase(s, quota);
	{
		TCase *rv = tcase_create("revoke");

		tcase_add_checked_fixture(rv, setup_revoke, teardown);
		tcase_set_timeout(rv, 60);
		tcase_add_test(rv, test_revoke_cooperating);
		tcase_add_test(rv, test_unimport_races_revoke);
		tcase_add_test(rv, test_free_names_the_import);
		tcase_add_test(rv, test_revoke_dead_and_stubborn);
		suite_add_tcase(s, rv);
	}
	return ck_run("check_dm", s);
}
