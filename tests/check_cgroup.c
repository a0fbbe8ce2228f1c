// SPDX-License-Identifier: MIT
/*
 * daemon/registry/cgroup.c without a daemon: the globs of cgroups = and
 * cgroup_pattern (a cgroup or an ancestor, '*' across '/'), the key of
 * per = cgroup, and the cgroup of a process read through its pidfd (this
 * process's, and a dead child's refused). The configuration's keys are
 * check_config's.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/registry/cgroup.h"
#include "daemon/config/conf.h"
#include "tests/cklib.h"
#include "tests/testlib.h"

struct glob_case {
	const char *glob;
	const char *path;
	/* What cgroup_glob_prefix() gives: the prefix's length. */
	size_t want;
};

static const struct glob_case globs[] = {
	/* The cgroup itself, or an ancestor: never a part of a name. */
	{ "/a", "/a", 2 },
	{ "/a", "/a/b", 2 },
	{ "/a", "/ab", 0 },
	{ "/a/b", "/a", 0 },
	{ "/pod1", "/pod12/c", 0 },
	{ "/pod1*", "/pod12/c", 6 },
	/* '*' crosses '/': the shortest ancestor that matches. */
	{ "*/kubepods*/*pod[0-9a-f]*",
	  "/kubepods.slice/kubepods-besteffort.slice/"
	  "kubepods-besteffort-pod3f2a.slice/cri-containerd-77.scope",
	  sizeof("/kubepods.slice/kubepods-besteffort.slice/"
		 "kubepods-besteffort-pod3f2a.slice") -
		  1 },
	{ "*/kubepods*/*pod[0-9a-f]*", "/kubepods/pod3f2a/c1",
	  sizeof("/kubepods/pod3f2a") - 1 },
	{ "*/kubepods*/*pod[0-9a-f]*", "/kubepods/burstable", 0 },
	{ "*", "/x/y", 2 },
	{ "/*", "/", 1 },
	{ "?", "/", 1 },
	{ "/?", "/ab", 0 },
	/* Classes: ranges, negation, ']' first, escapes. */
	{ "/[a-c]x", "/bx", 3 },
	{ "/[!a-c]x", "/bx", 0 },
	{ "/[^a-c]x", "/dx", 3 },
	{ "/[]]", "/]", 2 },
	{ "/\\*", "/*", 2 },
	{ "/\\*", "/a", 0 },
	{ "/[\\]]", "/]", 2 },
	/* Any byte, a newline or an escape in a name too. */
	{ "/a?b", "/a\nb", 4 },
	{ "/*", "/\x1b[31m\xff", 7 },
	/* A glob that does not parse matches nothing. */
	{ "/[a", "/[a", 0 },
	{ "", "/", 0 },
};

START_TEST(test_glob_prefix)
{
	for (size_t i = 0; i < sizeof(globs) / sizeof(globs[0]); i++) {
		const struct glob_case *g = &globs[i];
		size_t got = cgroup_glob_prefix(g->glob, g->path);

		ck_assert_msg(got == g->want,
			      "glob %zu \"%s\" on \"%s\": %zu, expected %zu", i,
			      g->glob, g->path, got, g->want);
	}
}
END_TEST

START_TEST(test_glob_check)
{
	char why[128];

	ck_assert_int_eq(cgroup_glob_check("/a/*", why, sizeof(why)), 0);
	ck_assert_int_eq(cgroup_glob_check("*pod*", why, sizeof(why)), 0);
	ck_assert_int_eq(cgroup_glob_check("[/]x", why, sizeof(why)), 0);
	ck_assert_int_eq(cgroup_glob_check("a/b", why, sizeof(why)), -EINVAL);
	ck_assert_msg(strstr(why, "matches no cgroup"), "%s", why);
	ck_assert_int_eq(cgroup_glob_check("/a[", why, sizeof(why)), -EINVAL);
	ck_assert_msg(strstr(why, "not closed"), "%s", why);
	ck_assert_int_eq(cgroup_glob_check("/a\\", why, sizeof(why)), -EINVAL);
	ck_assert_int_eq(cgroup_glob_check("", why, sizeof(why)), -EINVAL);
}
END_TEST

/*
 * The path is the peer's to choose: the match reads each byte once per
 * token, where backtracking over eight '*' would not end on it within the
 * test's timeout.
 */
START_TEST(test_glob_hostile_path)
{
	char path[CGROUP_PATH_MAX];

	path[0] = '/';
	memset(path + 1, 'a', sizeof(path) - 2);
	path[sizeof(path) - 1] = '\0';
	for (size_t i = 64; i < sizeof(path) - 1; i += 64)
		path[i] = '/';
	ck_assert_uint_eq(cgroup_glob_prefix("*a*a*a*a*a*a*a*a*b", path), 0);
	ck_assert_uint_eq(cgroup_glob_prefix("*a*a*a*a*a*a*a*a*a", path), 64);
}
END_TEST

/* The configuration's keys, as domain.c passes them. */
static size_t key_len(const struct config *cfg, const char *path)
{
	return cgroup_key_len(cfg->cgroup_pattern, cfg->cgroup_depth, path);
}

START_TEST(test_key_len)
{
	struct config cfg;
	const char *p = "/kubepods/burstable/pod9/ctr";

	config_init(&cfg);
	ck_assert_uint_eq(key_len(&cfg, p), strlen(p));
	cfg.cgroup_depth = 2;
	ck_assert_uint_eq(key_len(&cfg, p), strlen("/kubepods/burstable"));
	cfg.cgroup_depth = 9;
	ck_assert_uint_eq(key_len(&cfg, p), strlen(p));
	/* The pattern first; the depth for what it does not match. */
	cfg.cgroup_depth = 1;
	snprintf(cfg.cgroup_pattern, sizeof(cfg.cgroup_pattern), "%s",
		 "*/pod[0-9]*");
	ck_assert_uint_eq(key_len(&cfg, p), strlen("/kubepods/burstable/pod9"));
	ck_assert_uint_eq(key_len(&cfg, "/system.slice/x.service"),
			  strlen("/system.slice"));
	ck_assert_uint_eq(key_len(&cfg, "/"), 1);
}
END_TEST

static int pidfd_of(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* This process's v2 line, as /proc/self/cgroup has it; NULL: none. */
static char *own_cgroup(void)
{
	char *buf = NULL, *line = NULL;
	size_t cap = 0;
	FILE *f = fopen("/proc/self/cgroup", "re");

	ck_assert_ptr_nonnull(f);
	while (getline(&line, &cap, f) > 0)
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			buf = strdup(line + 3);
		}
	free(line);
	fclose(f);
	return buf;
}

START_TEST(test_of_pid)
{
	char *want = own_cgroup(), *got = NULL;
	int pidfd = pidfd_of(getpid());
	int ret;

	ck_assert_int_ge(pidfd, 0);
	ret = cgroup_of_pid(getpid(), pidfd, &got);
	if (!want) {
		/* cgroup v1 only: no v2 line. */
		ck_assert_int_eq(ret, -ENOENT);
	} else {
		ck_assert_msg(ret == 0, "cgroup_of_pid: %s", strerror(-ret));
		ck_assert_str_eq(got, want);
	}
	free(got);
	free(want);
	close(pidfd);
	ck_assert_int_eq(cgroup_of_pid(getpid(), -1, &got), -ENOSYS);
}
END_TEST

/* A process that exited is refused even while its number names it (a
 * zombie): once reaped, the number could be another's. */
START_TEST(test_of_pid_exited)
{
	char *got = NULL;
	pid_t pid = fork();
	int pidfd, ret;

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(0);
	pidfd = pidfd_of(pid);
	ck_assert_int_ge(pidfd, 0);
	/* Exited, not reaped: /proc still has it. */
	ck_assert_int_eq(waitid(P_PID, (id_t)pid, NULL, WEXITED | WNOWAIT), 0);
	ret = cgroup_of_pid(pid, pidfd, &got);
	ck_assert_msg(ret == -ESRCH || ret == -ENOENT,
		      "a dead process's cgroup: %d (%s)", ret, got ? got : "");
	ck_assert_ptr_null(got);
	waitpid(pid, NULL, 0);
	ret = cgroup_of_pid(pid, pidfd, &got);
	ck_assert_int_eq(ret, -ESRCH);
	close(pidfd);
}
END_TEST

static Suite *cgroup_suite(void)
{
	Suite *s = suite_create("cgroup");
	TCase *tc = tcase_create("cgroup");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_glob_prefix);
	tcase_add_test(tc, test_glob_check);
	tcase_add_test(tc, test_glob_hostile_path);
	tcase_add_test(tc, test_key_len);
	tcase_add_test(tc, test_of_pid);
	tcase_add_test(tc, test_of_pid_exited);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("cgroup", cgroup_suite());
}
