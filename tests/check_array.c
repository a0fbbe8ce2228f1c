// SPDX-License-Identifier: MIT
/*
 * daemon/util/array.c: the room doubles from its minimum until it holds
 * what is wanted, the new elements zeroed, the old ones kept; a room
 * whose bytes would overflow a size_t is refused, and a refusal leaves
 * the array and its room as they were.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "daemon/util/array.h"
#include "tests/cklib.h"

/* ASan reports a refused allocation (a warning at least, which
 * check-asan counts as a failure): the memory not there is tried
 * without it. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

struct elem {
	uint64_t a;
	uint32_t b;
};

START_TEST(test_grow)
{
	struct elem *v = NULL;
	size_t cap = 0;

	/* Room enough already: nothing is made. */
	ck_assert_int_eq(array_grow(&v, &cap, 0, sizeof(*v), 8), 0);
	ck_assert_ptr_null(v);
	ck_assert_uint_eq(cap, 0);
	ck_assert_int_eq(array_grow(&v, &cap, 1, sizeof(*v), 8), 0);
	ck_assert_ptr_nonnull(v);
	ck_assert_uint_eq(cap, 8);
	for (size_t i = 0; i < cap; i++)
		ck_assert_uint_eq(v[i].a | v[i].b, 0);
	for (size_t i = 0; i < 8; i++)
		v[i] = (struct elem){ i + 1, (uint32_t)i };
	ck_assert_int_eq(array_grow(&v, &cap, 8, sizeof(*v), 8), 0);
	ck_assert_uint_eq(cap, 8);
	/* Doubled as often as @want needs, the old elements kept, the
	 * new zeroed. */
	ck_assert_int_eq(array_grow(&v, &cap, 9, sizeof(*v), 8), 0);
	ck_assert_uint_eq(cap, 16);
	ck_assert_int_eq(array_grow(&v, &cap, 100, sizeof(*v), 8), 0);
	ck_assert_uint_eq(cap, 128);
	for (size_t i = 0; i < 8; i++) {
		ck_assert_uint_eq(v[i].a, i + 1);
		ck_assert_uint_eq(v[i].b, i);
	}
	for (size_t i = 8; i < cap; i++)
		ck_assert_uint_eq(v[i].a | v[i].b, 0);
	free(v);
}
END_TEST

/* No minimum: the room starts at one element. */
START_TEST(test_grow_min_zero)
{
	uint8_t *v = NULL;
	size_t cap = 0;

	ck_assert_int_eq(array_grow(&v, &cap, 1, 1, 0), 0);
	ck_assert_uint_eq(cap, 1);
	ck_assert_int_eq(array_grow(&v, &cap, 3, 1, 0), 0);
	ck_assert_uint_eq(cap, 4);
	free(v);
}
END_TEST

/* count * size past SIZE_MAX, and a doubling past SIZE_MAX: refused,
 * the array as it was. */
START_TEST(test_grow_overflow)
{
	uint64_t *v = NULL, *was;
	size_t cap = 0;

	ck_assert_int_eq(array_grow(&v, &cap, 4, sizeof(*v), 4), 0);
	v[3] = 42;
	was = v;
	ck_assert_int_eq(array_grow(&v, &cap, SIZE_MAX / 8 + 1, sizeof(*v), 4),
			 -ENOMEM);
	ck_assert_int_eq(array_grow(&v, &cap, SIZE_MAX, sizeof(*v), 4),
			 -ENOMEM);
	ck_assert_int_eq(array_grow(&v, &cap, SIZE_MAX, 1, 4), -ENOMEM);
	ck_assert_ptr_eq(v, was);
	ck_assert_uint_eq(cap, 4);
	ck_assert_uint_eq(v[3], 42);
	ck_assert_int_eq(array_grow(&v, &cap, 5, 0, 4), -EINVAL);
	ck_assert_uint_eq(cap, 4);
	free(v);
}
END_TEST

#ifndef UNDER_ASAN
/* The memory not there (a room of a quarter of the address space):
 * refused, the array as it was. */
START_TEST(test_grow_nomem)
{
	uint8_t *v = NULL, *was;
	size_t cap = 0;

	ck_assert_int_eq(array_grow(&v, &cap, 16, 1, 16), 0);
	v[15] = 7;
	was = v;
	ck_assert_int_eq(array_grow(&v, &cap, SIZE_MAX / 4, 1, 16), -ENOMEM);
	ck_assert_ptr_eq(v, was);
	ck_assert_uint_eq(cap, 16);
	ck_assert_uint_eq(v[15], 7);
	free(v);
}
END_TEST
#endif

static Suite *array_suite(void)
{
	Suite *s = suite_create("array");
	TCase *tc = tcase_create("array");

	tcase_add_test(tc, test_grow);
	tcase_add_test(tc, test_grow_min_zero);
	tcase_add_test(tc, test_grow_overflow);
#ifndef UNDER_ASAN
	tcase_add_test(tc, test_grow_nomem);
#endif
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("array", array_suite());
}
