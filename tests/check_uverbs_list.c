// SPDX-License-Identifier: MIT
/*
 * The kernel's handle list as daemon/device/verbs/uverbs.c reads it
 * (UVERBS_METHOD_INFO_HANDLES), against a fake kernel: this program's
 * ioctl() stands for the kernel's, which keeps its count in a u64 and
 * copies the 4 bytes the u32 attribute has room for. On a big-endian
 * host those are the count's high half, 0 (review-r1 F11): the list's
 * length must come from the list itself. The fake writes the count as
 * either byte order would.
 */
#include "config.h"

#include <check.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl.h>

#include "daemon/device/device.h"
#include "daemon/device/verbs/uverbs.h"
#include "tests/cklib.h"

/* The context's QP handles, as the fake kernel lists them. */
static const uint32_t qps[] = { 0, 1, 5 };
/* Write the u64 count's first 4 bytes as a big-endian host holds them. */
static bool big_endian;

/* Copy the first @len bytes of the u64 @v as a host of the chosen byte
 * order holds it in memory (the kernel's uverbs_copy_to of a u64). */
static void copy_u64_prefix(void *to, size_t len, uint64_t v)
{
	uint64_t mem = big_endian ? htobe64(v) : htole64(v);

	memcpy(to, &mem, len < sizeof(mem) ? len : sizeof(mem));
}

int ioctl(int fd, unsigned long request, ...)
{
	struct ib_uverbs_ioctl_hdr *hdr;
	struct ib_uverbs_attr *list = NULL, *total = NULL;
	uint64_t n = 0;
	va_list ap;

	va_start(ap, request);
	hdr = va_arg(ap, struct ib_uverbs_ioctl_hdr *);
	va_end(ap);
	if (request != RDMA_VERBS_IOCTL ||
	    hdr->object_id != UVERBS_OBJECT_DEVICE ||
	    hdr->method_id != UVERBS_METHOD_INFO_HANDLES) {
		errno = ENOTTY;
		return -1;
	}
	for (unsigned int i = 0; i < hdr->num_attrs; i++) {
		if (hdr->attrs[i].attr_id == UVERBS_ATTR_INFO_HANDLES_LIST)
			list = &hdr->attrs[i];
		if (hdr->attrs[i].attr_id == UVERBS_ATTR_INFO_TOTAL_HANDLES)
			total = &hdr->attrs[i];
	}
	if (!list || !total) {
		errno = EINVAL;
		return -1;
	}
	/* The probe of the driver id asks for PDs: none. */
	if (hdr->attrs[0].data == UVERBS_OBJECT_QP) {
		uint32_t *to = (uint32_t *)(uintptr_t)list->data;

		for (; n < sizeof(qps) / sizeof(qps[0]) &&
		       n < list->len / sizeof(uint32_t);
		     n++)
			to[n] = qps[n];
	}
	copy_u64_prefix((void *)(uintptr_t)total->data, total->len, n);
	return 0;
}

static void lists_three(void)
{
	uint32_t h[64];
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int n;

	ck_assert_int_ge(fd, 0);
	n = uverbs_handles(fd, IBC_OBJ_QP, h, 64);
	close(fd);
	ck_assert_int_eq(n, 3);
	ck_assert_uint_eq(h[0], 0);
	ck_assert_uint_eq(h[1], 1);
	ck_assert_uint_eq(h[2], 5);
}

START_TEST(count_little_endian)
{
	big_endian = false;
	lists_three();
}
END_TEST

START_TEST(count_big_endian)
{
	big_endian = true;
	lists_three();
}
END_TEST

static Suite *uverbs_list_suite(void)
{
	Suite *s = suite_create("uverbs_list");
	TCase *tc = tcase_create("info_handles");

	tcase_add_test(tc, count_little_endian);
	tcase_add_test(tc, count_big_endian);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("uverbs_list", uverbs_list_suite());
}
