// SPDX-License-Identifier: MIT
/*
 * The ABI growth rule (libibclient(3)) against the real daemon: calls that
 * fill a structure take the caller's size of it. A caller built against an
 * older header (a smaller structure) gets what it knows and nothing is
 * written past it; a caller built against a newer one (a bigger structure)
 * gets its unknown tail zeroed; a size below a structure's first version is
 * EINVAL and writes nothing. Listings take the size of one entry.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "tests/cklib.h"
#include "tests/testlib.h"

static struct tl_daemon D;
static struct ibc_client *C;

#define TAIL 64
#define POISON 0xa5

static void setup(void)
{
	int ret = tl_daemon_start(&D, NULL);

	ck_assert_msg(ret == 0, "cannot start %s: %s", tl_daemon_path(),
		      strerror(-ret));
	ret = tl_connect(D.sock, 20000, &C);
	ck_assert_msg(ret == 0, "connect: %s", ibc_last_error());
}

static void teardown(void)
{
	ibc_disconnect(C);
	C = NULL;
	tl_daemon_stop(&D);
}

static bool all_bytes(const void *p, size_t len, unsigned char v)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++)
		if (b[i] != v)
			return false;
	return true;
}

START_TEST(test_query_sizes)
{
	struct {
		struct ibc_caps caps;
		unsigned char tail[TAIL];
	} big;
	struct ibc_caps caps, small;
	struct ibc_ctx *ctx;
	size_t v0 = offsetof(struct ibc_caps, max_mr_size) + sizeof(uint64_t);

	ck_assert_int_eq(ibc_open(C, NULL, &ctx), 0);
	ck_assert_int_eq(ibc_query(ctx, &caps, sizeof(caps)), 0);
	ck_assert_int_eq(caps.kind, IBC_DEVICE_SOFT);

	/* A newer caller: everything this library knows, then zeroes. */
	memset(&big, POISON, sizeof(big));
	ck_assert_int_eq(ibc_query(ctx, &big.caps, sizeof(big)), 0);
	ck_assert_mem_eq(&big.caps, &caps, v0);
	ck_assert_msg(all_bytes(big.tail, TAIL, 0),
		      "the tail of a bigger structure is not zeroed");

	/* The first version exactly: nothing written past it. */
	memset(&small, POISON, sizeof(small));
	ck_assert_int_eq(ibc_query(ctx, &small, v0), 0);
	ck_assert_mem_eq(&small, &caps, v0);
	ck_assert(all_bytes((char *)&small + v0, sizeof(small) - v0, POISON));

	/* Smaller than the first version: EINVAL, nothing written. */
	memset(&small, POISON, sizeof(small));
	ck_assert_int_eq(ibc_query(ctx, &small, v0 - 1), -EINVAL);
	ck_assert_msg(strstr(ibc_last_error(), "ibc_caps"), "%s",
		      ibc_last_error());
	ck_assert(all_bytes(&small, sizeof(small), POISON));
	ck_assert_int_eq(ibc_query(ctx, &small, 0), -EINVAL);
	ibc_close(ctx);
}
END_TEST

START_TEST(test_info_and_status_sizes)
{
	struct {
		struct ibc_client_info info;
		unsigned char tail[TAIL];
	} big;
	struct {
		struct ibc_status st;
		unsigned char tail[TAIL];
	} bigst;
	struct ibc_client_info info;
	struct ibc_status st;

	ck_assert_int_eq(ibc_client_info(C, &info, sizeof(info)), 0);
	ck_assert_uint_ne(info.client_id, 0);
	memset(&big, POISON, sizeof(big));
	ck_assert_int_eq(ibc_client_info(C, &big.info, sizeof(big)), 0);
	ck_assert_uint_eq(big.info.client_id, info.client_id);
	ck_assert_str_eq(big.info.domain, info.domain);
	ck_assert(all_bytes(big.tail, TAIL, 0));
	memset(&info, POISON, sizeof(info));
	ck_assert_int_eq(ibc_client_info(C, &info, sizeof(uint32_t)), -EINVAL);
	ck_assert(all_bytes(&info, sizeof(info), POISON));

	memset(&bigst, POISON, sizeof(bigst));
	ck_assert_int_eq(ibc_status(C, &bigst.st, sizeof(bigst)), 0);
	ck_assert_str_eq(bigst.st.device_kind, "soft");
	ck_assert(all_bytes(bigst.tail, TAIL, 0));
	ck_assert_int_eq(
		ibc_status(C, &st, offsetof(struct ibc_status, clients)),
		-EINVAL);
}
END_TEST

/* Entries of a caller's bigger structure: the same contents at its
 * stride, each tail zeroed. */
START_TEST(test_list_entry_size)
{
	struct big_client {
		struct ibc_client_entry e;
		uint64_t tail[TAIL / 8];
	};
	struct ibc_client_entry *plain;
	struct big_client *big;
	struct ibc_device_info *devs;
	struct ibc_client *other;
	size_t n, nbig;

	ck_assert_int_eq(tl_connect(D.sock, 20000, &other), 0);
	ck_assert_int_eq(ibc_list_clients(C, &plain, sizeof(*plain), &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(ibc_list_clients(C, (struct ibc_client_entry **)&big,
					  sizeof(*big), &nbig),
			 0);
	ck_assert_uint_eq(nbig, n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(big[i].e.id, plain[i].id);
		ck_assert_uint_eq(big[i].e.pid, plain[i].pid);
		ck_assert_str_eq(big[i].e.domain, plain[i].domain);
		ck_assert_uint_eq(big[i].e.unaccounted, plain[i].unaccounted);
		ck_assert(all_bytes(big[i].tail, TAIL, 0));
	}
	ibc_list_free(big);
	ibc_list_free(plain);

	/* Below the first version, or not a structure's stride. */
	devs = NULL;
	ck_assert_int_eq(ibc_list_devices(C, &devs, 8, &n), -EINVAL);
	ck_assert_ptr_null(devs);
	ck_assert_int_eq(ibc_list_devices(C, &devs, sizeof(*devs) + 1, &n),
			 -EINVAL);
	ck_assert_msg(strstr(ibc_last_error(), "aligned"), "%s",
		      ibc_last_error());
	ck_assert_int_eq(ibc_list_devices(C, &devs, sizeof(*devs), &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(devs[0].name, "soft0");
	ibc_list_free(devs);
	ibc_disconnect(other);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("abi");
	TCase *tc = tcase_create("growth");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_query_sizes);
	tcase_add_test(tc, test_info_and_status_sizes);
	tcase_add_test(tc, test_list_entry_size);
	suite_add_tcase(s, tc);
	return ck_run("check_abi", s);
}
