// SPDX-License-Identifier: MIT
/*
 * The device layer as far as it runs without RDMA hardware: device_probe()
 * in every mode (verbs with no device is an error with a reason, auto falls
 * back to the soft device and says why), the soft device's limits and
 * operations, verbs_import_device()'s ownership of its descriptor, and the
 * verbs device's error paths, with a fake device played by
 * tests/verbs-shim.h. The capability helpers, which need root, are
 * tests/check_caps.c.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "common/verbs-import.h"
#include "daemon/device.h"
#include "daemon/log.h"
#include "tests/cklib.h"
#include "tests/testlib.h"
#include "tests/verbs-shim.h"

/* --- modes and names -------------------------------------------------- */

START_TEST(test_parse_mode)
{
	static const char *const bad[] = { "", "Soft", "AUTO", "mlx5",
					   "soft ", "verbs0" };
	enum device_mode m;

	ck_assert_int_eq(device_parse_mode("auto", &m), 0);
	ck_assert_int_eq(m, DEVICE_MODE_AUTO);
	ck_assert_int_eq(device_parse_mode("verbs", &m), 0);
	ck_assert_int_eq(m, DEVICE_MODE_VERBS);
	ck_assert_int_eq(device_parse_mode("soft", &m), 0);
	ck_assert_int_eq(m, DEVICE_MODE_SOFT);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m = DEVICE_MODE_SOFT;
		ck_assert_msg(device_parse_mode(bad[i], &m) == -EINVAL,
			      "\"%s\" accepted", bad[i]);
		ck_assert_int_eq(m, DEVICE_MODE_SOFT);
	}
	ck_assert_str_eq(device_kind_name(DEVICE_KIND_VERBS), "verbs");
	ck_assert_str_eq(device_kind_name(DEVICE_KIND_SOFT), "soft");
}
END_TEST

/* --- the soft device ---------------------------------------------------- */

static void assert_soft0(const struct device_list *l, uint64_t max_dm)
{
	const struct device *d = &l->dev[0];

	ck_assert_int_eq(l->kind, DEVICE_KIND_SOFT);
	ck_assert_uint_eq(l->n, 1);
	ck_assert_str_eq(d->name, "soft0");
	ck_assert_int_eq(d->kind, DEVICE_KIND_SOFT);
	ck_assert(!d->removed);
	ck_assert_int_eq(d->event_fd, -1);
	ck_assert_uint_eq(d->caps.max_dm_size, max_dm);
	ck_assert(d->caps.xrc);
	ck_assert_uint_eq(d->caps.max_rss_table_size, 65536);
	ck_assert_uint_eq(d->caps.rss_hash_functions,
			  IBV_RX_HASH_FUNC_TOEPLITZ);
	ck_assert_uint_eq(d->caps.rss_hash_fields,
			  IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
				  IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 |
				  IBV_RX_HASH_SRC_PORT_TCP |
				  IBV_RX_HASH_DST_PORT_TCP |
				  IBV_RX_HASH_SRC_PORT_UDP |
				  IBV_RX_HASH_DST_PORT_UDP);
	ck_assert(d->caps.import);
	ck_assert_uint_eq(d->caps.ports, 1);
	ck_assert_str_eq(d->caps.transport, "software");
}

START_TEST(test_probe_soft)
{
	struct device_config cfg = { .soft_max_dm_size = 128 * 1024 };
	struct device_list l;
	struct device_ctx *c1 = NULL, *c2 = NULL;
	struct device *d;
	const char *why = NULL;
	int fds, fd, seals;

	ck_assert_int_eq(device_probe(DEVICE_MODE_SOFT, &cfg, &l, &why), 0);
	ck_assert_ptr_nonnull(why);
	ck_assert_str_eq(why, "--device soft");
	assert_soft0(&l, 128 * 1024);

	ck_assert_ptr_eq(device_find(&l, NULL), &l.dev[0]);
	ck_assert_ptr_eq(device_find(&l, ""), &l.dev[0]);
	ck_assert_ptr_eq(device_find(&l, "soft0"), &l.dev[0]);
	ck_assert_ptr_null(device_find(&l, "soft1"));
	ck_assert_ptr_null(device_find(&l, "soft"));

	/* Each context is its own sealed memfd with the PD first. */
	d = &l.dev[0];
	fds = tl_count_fds(0);
	ck_assert_int_eq(d->ops->ctx_open(d, 7, "uid-1", &c1), 0);
	ck_assert_int_eq(d->ops->ctx_open(d, 8, "uid-2", &c2), 0);
	ck_assert_int_eq(tl_count_fds(0), fds + 2);
	fd = d->ops->ctx_fd(c1);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_ne(fd, d->ops->ctx_fd(c2));
	seals = fcntl(fd, F_GET_SEALS);
	ck_assert_int_ge(seals, 0);
	ck_assert_int_eq(seals & (F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK),
			 F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK);
	ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
	ck_assert_uint_eq(d->ops->ctx_pd_handle(c1), 0);
	ck_assert_int_eq(d->ops->ctx_event_fd(c1), -1);
	ck_assert_int_eq(d->ops->ctx_handle_event(c1), 0);
	ck_assert_int_eq(d->ops->handle_event(d), 0);
	ck_assert(d->ops->present(d));
	d->ops->ctx_close(c1);
	d->ops->ctx_close(c2);
	ck_assert_int_eq(tl_count_fds(0), fds);

	device_list_close(&l);
	ck_assert_uint_eq(l.n, 0);
	ck_assert_ptr_null(device_find(&l, NULL));
}
END_TEST

/* --- verbs without hardware ---------------------------------------------- */

START_TEST(test_probe_verbs)
{
	struct device_config cfg = { .soft_max_dm_size = 256 * 1024 };
	struct device_list l;
	const char *why = NULL;
	int ret, fds;

	fds = tl_count_fds(0);
	ret = device_probe(DEVICE_MODE_VERBS, &cfg, &l, &why);
	ck_assert_ptr_nonnull(why);
	if (ret == 0) {
		/* A machine with RDMA devices: the other branch of the
		 * contract. */
		fprintf(stderr, "check_device: libibverbs found %zu device(s); "
				"the no-device error is not testable here\n",
			l.n);
		ck_assert_int_eq(l.kind, DEVICE_KIND_VERBS);
		ck_assert_uint_gt(l.n, 0);
		ck_assert_str_eq(why, "--device verbs");
		device_list_close(&l);
		return;
	}
	ck_assert_msg(ret < 0, "device_probe(verbs) returned %d", ret);
	ck_assert_msg(ret == -ENODEV || ret == -ENOSYS || ret == -EACCES ||
			      ret == -EPERM || ret == -ENOENT,
		      "device_probe(verbs): unexpected %d (%s)", ret,
		      strerror(-ret));
	ck_assert_msg(strstr(why, "RDMA"), "the reason \"%s\" does not say "
					   "what is missing",
		      why);
	ck_assert_uint_eq(l.n, 0);
	ck_assert_ptr_null(device_find(&l, NULL));
	/* A failed probe leaves nothing open, however often it runs. */
	for (int i = 0; i < 3; i++) {
		ck_assert_int_lt(device_probe(DEVICE_MODE_VERBS, &cfg, &l, &why),
				 0);
		device_list_close(&l);
	}
	ck_assert_int_eq(tl_count_fds(0), fds);
}
END_TEST

START_TEST(test_probe_auto)
{
	struct device_config cfg = { .soft_max_dm_size = 64 * 1024 };
	struct device_list l;
	const char *why = NULL;
	int ret;

	ret = device_probe(DEVICE_MODE_AUTO, &cfg, &l, &why);
	ck_assert_msg(ret == 0, "device_probe(auto): %d (%s)", ret,
		      strerror(-ret));
	ck_assert_ptr_nonnull(why);
	if (l.kind == DEVICE_KIND_VERBS) {
		ck_assert_str_eq(why, "libibverbs found a device");
		ck_assert_uint_gt(l.n, 0);
		device_list_close(&l);
		return;
	}
	assert_soft0(&l, 64 * 1024);
	ck_assert_msg(strcmp(why, "libibverbs found no RDMA device") == 0 ||
			      strcmp(why, "this kernel has no RDMA support") ==
				      0 ||
			      strcmp(why, "libibverbs could not open any RDMA "
					  "device") == 0,
		      "auto chose soft because \"%s\"", why);
	device_list_close(&l);
}
END_TEST

/* verbs_import_device() consumes its descriptor on every path: a
 * character device libibverbs does not know (ENODEV, descriptor left to the
 * caller by libibverbs) and a regular file (EINVAL) leave no descriptor. */
START_TEST(test_import_consumes_fd)
{
	static const char *const paths[] = { "/dev/null", "/proc/self/stat" };
	int before = tl_count_fds(0);

	for (size_t i = 0; i < 2; i++) {
		int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
		struct ibv_context *ctx = NULL;

		ck_assert_int_ge(fd, 0);
		ck_assert_int_lt(verbs_import_device(fd, &ctx), 0);
		ck_assert_ptr_null(ctx);
		ck_assert_msg(fcntl(fd, F_GETFD) < 0 && errno == EBADF,
			      "%s: the descriptor is still open", paths[i]);
		ck_assert_int_eq(tl_count_fds(0), before);
	}
}
END_TEST


/* --- the verbs boundary, through tests/verbs-shim.h ---------------------- */

/* A device that fails to open without setting errno is reported with the
 * fallback (ENODEV), not with what an earlier call left in errno. */
START_TEST(test_verbs_stale_errno)
{
	static const int stale[] = { EACCES, EOPNOTSUPP };

	for (size_t i = 0; i < 2; i++) {
		struct device_list l;
		int ret;

		verbs_shim_mode = VERBS_SHIM_SILENT;
		verbs_shim_calls = 0;
		errno = stale[i];
		ret = device_verbs_probe(&l);
		verbs_shim_mode = VERBS_SHIM_REAL;
		if (ret > 0)
			device_list_close(&l);
		/* The list and the open of fake0. */
		ck_assert_uint_eq(verbs_shim_calls, 2);
		ck_assert_msg(ret == -ENODEV, "stale %s: %d (%s)",
			      strerror(stale[i]), ret,
			      ret < 0 ? strerror(-ret) : "");
	}
}
END_TEST

/* The async event descriptor must become non-blocking, or the event loop
 * could block on it: a device whose descriptor refuses is not used. */
START_TEST(test_verbs_async_fd_checked)
{
	struct device_list l;
	int ret;

	verbs_shim_mode = VERBS_SHIM_NO_FDS;
	ret = device_verbs_probe(&l);
	verbs_shim_mode = VERBS_SHIM_REAL;
	if (ret > 0)
		device_list_close(&l);
	ck_assert_msg(ret == -EBADF, "device_verbs_probe: %d (%s)", ret,
		      ret < 0 ? strerror(-ret) : "a device");
}
END_TEST

static Suite *device_suite(void)
{
	Suite *s = suite_create("device");
	TCase *tc;

	tc = tcase_create("probe");
	tcase_add_test(tc, test_parse_mode);
	tcase_add_test(tc, test_probe_soft);
	tcase_add_test(tc, test_probe_verbs);
	tcase_add_test(tc, test_probe_auto);
	tcase_add_test(tc, test_import_consumes_fd);
	suite_add_tcase(s, tc);

	tc = tcase_create("shim");
	tcase_add_test(tc, test_verbs_stale_errno);
	tcase_add_test(tc, test_verbs_async_fd_checked);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	/* Only errors from the code under test. */
	log_max_priority = LOG_ERR;
	return ck_run("device", device_suite());
}
