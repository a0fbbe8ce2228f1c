// SPDX-License-Identifier: MIT
/*
 * caps_effective_clear() / caps_effective_restore(), which the verbs device
 * wraps around ibv_open_device: the effective set must really be empty in
 * between (uid 0 cannot chown or open a mode 000 file) and come back whole,
 * the other sets untouched. Needs root with capabilities; otherwise it exits
 * 77 (SKIP).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include "daemon/device/caps.h"
#include "tests/cklib.h"
#include "tests/testlib.h"

static void capget2(struct __user_cap_data_struct data[2])
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};

	ck_assert_int_eq(syscall(SYS_capget, &hdr, data), 0);
}

START_TEST(test_caps_clear_restore)
{
	struct __user_cap_data_struct before[2], during[2], after[2];
	struct caps_saved saved, nested;
	char *dir, *file;
	int fd;

	dir = tl_mkdtemp();
	ck_assert_ptr_nonnull(dir);
	ck_assert_int_ge(asprintf(&file, "%s/f", dir), 0);
	fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	close(fd);

	capget2(before);
	ck_assert_int_eq(caps_effective_empty(), 0);
	ck_assert_int_eq(caps_effective_clear(&saved), 0);
	ck_assert(saved.valid);
	ck_assert_int_eq(caps_effective_empty(), 1);
	capget2(during);
	ck_assert_uint_eq(during[0].effective, 0);
	ck_assert_uint_eq(during[1].effective, 0);
	/* Only the effective set: the rest stays, so it can come back. */
	ck_assert_uint_eq(during[0].permitted, before[0].permitted);
	ck_assert_uint_eq(during[1].permitted, before[1].permitted);
	ck_assert_uint_eq(during[0].inheritable, before[0].inheritable);
	ck_assert_uint_eq(during[1].inheritable, before[1].inheritable);

	/* Really empty: uid 0 without CAP_CHOWN and CAP_DAC_OVERRIDE. */
	errno = 0;
	ck_assert_int_eq(chown(file, 4242, 4242), -1);
	ck_assert_int_eq(errno, EPERM);
	errno = 0;
	ck_assert_int_eq(open(file, O_RDONLY | O_CLOEXEC), -1);
	ck_assert_int_eq(errno, EACCES);

	/* Clearing an empty set remembers nothing; restoring that is a
	 * no-op. */
	ck_assert_int_eq(caps_effective_clear(&nested), 0);
	ck_assert(!nested.valid);
	ck_assert_int_eq(caps_effective_restore(&nested), 0);
	ck_assert_int_eq(caps_effective_empty(), 1);

	ck_assert_int_eq(caps_effective_restore(&saved), 0);
	ck_assert_int_eq(caps_effective_empty(), 0);
	capget2(after);
	ck_assert_uint_eq(after[0].effective, before[0].effective);
	ck_assert_uint_eq(after[1].effective, before[1].effective);
	ck_assert_uint_eq(after[0].permitted, before[0].permitted);
	ck_assert_uint_eq(after[1].permitted, before[1].permitted);

	/* And they work again. */
	ck_assert_int_eq(chown(file, 4242, 4242), 0);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	close(fd);

	/* Restoring twice changes nothing. */
	ck_assert_int_eq(caps_effective_restore(&saved), 0);
	capget2(after);
	ck_assert_uint_eq(after[0].effective, before[0].effective);
	ck_assert_uint_eq(after[1].effective, before[1].effective);
	tl_rmtree(dir);
	free(file);
	free(dir);
}
END_TEST

/* CAP_NET_RAW: dropped from the effective set at start-up, kept
 * permitted, raised only around RSS QP and flow creation. A raw socket
 * shows the kernel's own check. */
static int raw_socket_errno(void)
{
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return errno;
}

START_TEST(test_net_raw)
{
	struct caps_saved saved;

	ck_assert_int_eq(caps_net_raw_lower(), 0);
	ck_assert_int_eq(caps_net_raw_effective(), 0);
	ck_assert_int_eq(caps_net_raw_permitted(), 1);
	ck_assert_int_eq(raw_socket_errno(), EPERM);
	/* Lowering twice is fine. */
	ck_assert_int_eq(caps_net_raw_lower(), 0);
	ck_assert_int_eq(caps_net_raw_raise(&saved), 0);
	ck_assert(saved.valid);
	ck_assert_int_eq(caps_net_raw_effective(), 1);
	ck_assert_int_eq(raw_socket_errno(), 0);
	ck_assert_int_eq(caps_effective_restore(&saved), 0);
	ck_assert_int_eq(caps_net_raw_effective(), 0);
	ck_assert_int_eq(raw_socket_errno(), EPERM);
	/* Not permitted: the raise says so. */
	{
		struct __user_cap_data_struct d[2];

		capget2(d);
		d[CAP_NET_RAW / 32].permitted &= ~(1u << (CAP_NET_RAW % 32));
		d[CAP_NET_RAW / 32].effective &= ~(1u << (CAP_NET_RAW % 32));
		{
			struct __user_cap_header_struct hdr = {
				.version = _LINUX_CAPABILITY_VERSION_3,
			};

			ck_assert_int_eq(syscall(SYS_capset, &hdr, d), 0);
		}
		ck_assert_int_eq(caps_net_raw_raise(&saved), -EPERM);
	}
}
END_TEST

static Suite *caps_suite(void)
{
	Suite *s = suite_create("caps");
	TCase *tc = tcase_create("effective");

	tcase_add_test(tc, test_caps_clear_restore);
	tcase_add_test(tc, test_net_raw);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	ck_require_root("check_caps");
	if (caps_effective_empty() != 0) {
		fprintf(stderr, "check_caps: root without effective "
				"capabilities; skipped\n");
		return CK_EXIT_SKIP;
	}
	return ck_run("caps", caps_suite());
}
