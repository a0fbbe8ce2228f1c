/* SPDX-License-Identifier: MIT */
/* The main() of every Check suite. */
#ifndef RDMAB_CKLIB_H
#define RDMAB_CKLIB_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <check.h>

#include "tests/testlib.h"

/* automake's exit status for a test program that did not run: SKIP. */
#define CK_EXIT_SKIP 77

/*
 * Check has no per-test skip, and a test that returns early passes. So the
 * tests that need root (clients of other uids, capabilities) are programs
 * of their own, and some are built from the same source as the unprivileged
 * program of their suite, with -DCK_ROOT_PROGRAM=1 (tests/Makefile.inc):
 * main() then runs the root-only suite instead.
 */
#ifndef CK_ROOT_PROGRAM
#define CK_ROOT_PROGRAM 0
#endif

/* For a program of root-only tests: when not run as root, say so on stderr
 * and exit CK_EXIT_SKIP, so that the summary counts it as skipped. */
static inline void ck_require_root(const char *name)
{
	if (geteuid() == 0)
		return;
	fprintf(stderr,
		"%s: these tests need root (running as uid %u); "
		"skipped\n",
		name, (unsigned int)geteuid());
	exit(CK_EXIT_SKIP);
}

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
