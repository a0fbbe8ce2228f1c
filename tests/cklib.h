/* SPDX-License-Identifier: MIT */
/* The main() of every Check suite. */
#ifndef RDMAB_CKLIB_H
#define RDMAB_CKLIB_H

#include <stdlib.h>

#include <check.h>

#include "tests/testlib.h"

/* Run @s inside the suite's own temporary directory (tl_init); returns
 * main()'s exit status. */
static inline int ck_run(const char *name, Suite *s)
{
	SRunner *sr;
	int failed;

	if (tl_init(name) < 0)
		return 99;
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	tl_fini();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
