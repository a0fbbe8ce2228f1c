// SPDX-License-Identifier: MIT
/*
 * The test-only fault points (daemon/util/fault.c): a malformed
 * RDMABROKERD_FAULT arms nothing and is logged with its value, a test
 * build says so at start whether a point is armed or not, and an armed
 * point SIGKILLs on its n-th pass. Each test runs in its own process
 * (check's fork mode): the variable is read once per process.
 */
#include "config.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/util/fault.h"
#include "daemon/util/log.h"
#include "tests/cklib.h"

#ifdef RDMAB_FAULT_POINTS

/* The log lines fault_init() wrote for @value (NULL: unset). */
static const char *init_log(const char *value)
{
	static char text[1024];
	FILE *f = tmpfile();
	size_t n;

	ck_assert_ptr_nonnull(f);
	if (value)
		ck_assert_int_eq(setenv(FAULT_ENV, value, 1), 0);
	else
		ck_assert_int_eq(unsetenv(FAULT_ENV), 0);
	fflush(stderr);
	ck_assert_int_ne(dup2(fileno(f), STDERR_FILENO), -1);
	fault_init();
	fflush(stderr);
	rewind(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

static void refused(const char *value, const char *shown)
{
	const char *log = init_log(value);
	char want[256];

	snprintf(want, sizeof(want), FAULT_ENV "=\"%s\" is not <point>", shown);
	ck_assert_msg(strstr(log, want), "%s: no refusal in \"%s\"", value,
		      log);
	/* Nothing armed: the point, passed many times, never fires. */
	for (int i = 0; i < 3; i++)
		fault_point("rss-leave-flow");
}

START_TEST(bad_count_refused)
{
	static const char *const bad[] = {
		"rss-leave-flow@-1", "rss-leave-flow@ 2", "rss-leave-flow@+2",
		"rss-leave-flow@",   "rss-leave-flow@0",  "rss-leave-flow@2x",
	};

	refused(bad[_i], bad[_i]);
}
END_TEST

/* A name's characters; a control character is shown escaped. */
START_TEST(bad_name_refused)
{
	static const char *const bad[][2] = {
		{ "@2", "@2" },
		{ "Rss-leave-flow", "Rss-leave-flow" },
		{ "rss-leave\n", "rss-leave\\x0a" },
	};

	refused(bad[_i][0], bad[_i][1]);
}
END_TEST

START_TEST(unset_said_at_start)
{
	ck_assert_ptr_nonnull(strstr(init_log(NULL), "fault points compiled "
						     "in, none armed"));
}
END_TEST

/* Armed at its second pass: the first goes by, the second kills. */
START_TEST(armed_fires_on_its_pass)
{
	ck_assert_ptr_nonnull(strstr(init_log("rss-leave-flow@2"),
				     "fault point rss-leave-flow armed "
				     "(pass 2)"));
	fault_point("rss-leave-qp");
	fault_point("rss-leave-flow");
	fault_point("rss-leave-flow");
	ck_abort_msg("not killed at the second pass");
}
END_TEST

static Suite *fault_suite(void)
{
	Suite *s = suite_create("fault");
	TCase *tc = tcase_create("env");

	tcase_add_loop_test(tc, bad_count_refused, 0, 6);
	tcase_add_loop_test(tc, bad_name_refused, 0, 3);
	tcase_add_test(tc, unset_said_at_start);
	tcase_add_test_raise_signal(tc, armed_fires_on_its_pass, SIGKILL);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("fault", fault_suite());
}

#else

/* A build without --enable-fault-points has none to check. */
int main(void)
{
	return CK_EXIT_SKIP;
}

#endif
