// SPDX-License-Identifier: MIT
/*
 * What the daemon makes and takes at start, against the real daemon: the
 * socket it binds itself (its mode and group set before its name exists,
 * never by a path someone could swap; a socket directory others could
 * write refused; --socket-group), and the runtime directory (made when
 * missing, refused when others may write it, locked against a second
 * daemon, which must not touch the first one's XRCD files).
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cklib.h"
#include "tests/testlib.h"

/* A daemon of the test's own: its directory, and what it is given. */
static struct tl_daemon D = { .pid = -1 };
static char sock_path[PATH_MAX], rt_path[PATH_MAX], log_path[PATH_MAX];

static void setup(void)
{
	memset(&D, 0, sizeof(D));
	D.pid = -1;
	D.baseline_fds = -1;
	D.dir = tl_mkdtemp();
	ck_assert_ptr_nonnull(D.dir);
	snprintf(log_path, sizeof(log_path), "%s/log", D.dir);
	snprintf(rt_path, sizeof(rt_path), "%s/rt", D.dir);
	snprintf(sock_path, sizeof(sock_path), "%s/sock", D.dir);
}

static void teardown(void)
{
	tl_daemon_stop(&D);
}

/* A subdirectory of the test's directory with @mode (umask aside). */
static void make_dir(char *buf, size_t size, const char *name, mode_t mode)
{
	snprintf(buf, size, "%s/%s", D.dir, name);
	ck_assert_int_eq(mkdir(buf, 0700), 0);
	ck_assert_int_eq(chmod(buf, mode), 0);
}

/* Spawn the daemon on sock_path and rt_path, stderr to log_path. */
static pid_t spawn(const char *const *args)
{
	pid_t pid = tl_daemon_spawn_logged(rt_path, sock_path, args, log_path);

	ck_assert_int_gt(pid, 0);
	return pid;
}

/* The daemon @pid refuses to start: it exits 1 and says @needle. */
static void assert_refused(pid_t pid, const char *needle)
{
	int status = 0, ret = tl_wait_pid(pid, TL_WAIT_MS, &status);

	if (ret == -ETIMEDOUT) {
		kill(pid, SIGKILL);
		tl_wait_pid(pid, TL_WAIT_MS, &status);
		ck_abort_msg("the daemon started; expected it to refuse: %s",
			     needle);
	}
	ck_assert_int_ge(ret, 0);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1,
		      "wait status 0x%x", status);
	ck_assert_msg(tl_count_in_file(log_path, needle) == 1,
		      "the daemon's log does not say \"%s\"", needle);
}

/* Spawn the daemon into D and wait until it serves. */
static void start(const char *const *args)
{
	D.pid = spawn(args);
	ck_assert_int_eq(tl_wait_socket(D.pid, sock_path, 10000), 0);
}

/* Entries of @dir whose names start with @prefix. */
static int count_entries(const char *dir, const char *prefix)
{
	struct dirent *e;
	int n = 0;
	DIR *d = opendir(dir);

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
			n++;
	closedir(d);
	return n;
}

/* --- the socket ----------------------------------------------------------- */

/* A socket directory that someone else could rename a symlink into; the
 * last one only for root, who alone can give a directory away. */
static const struct {
	mode_t mode;
	bool chown_away;
	const char *says;
} unsafe_dirs[] = {
	{ 0777, false, "is writable by everyone and has no sticky bit" },
	{ 0770, false, "is writable by its group and has no sticky bit" },
	{ 0755, true, "belongs to uid 65534" },
};

START_TEST(test_socket_dir_unsafe)
{
	char dir[512];

	make_dir(dir, sizeof(dir), "open", unsafe_dirs[_i].mode);
	if (unsafe_dirs[_i].chown_away)
		ck_assert_int_eq(chown(dir, 65534, 65534), 0);
	snprintf(sock_path, sizeof(sock_path), "%s/sock", dir);
	assert_refused(spawn(NULL), unsafe_dirs[_i].says);
	/* Nothing but "." and "..": not even a private directory. */
	ck_assert_int_eq(count_entries(dir, ""), 2);
}
END_TEST

/* The sticky bit keeps others' hands off the daemon's names (/tmp). */
START_TEST(test_socket_dir_sticky)
{
	char dir[512];
	struct stat st;

	make_dir(dir, sizeof(dir), "sticky", 01777);
	snprintf(sock_path, sizeof(sock_path), "%s/sock", dir);
	start(NULL);
	ck_assert_int_eq(lstat(sock_path, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0660);
}
END_TEST

/*
 * From the moment the socket's name exists it has its mode and group: the
 * directory's inotify watch sees the name arrive and never sees its
 * attributes change (a chmod or chown by path after bind() would show as
 * IN_ATTRIB, and is the window in which a symlink renamed over the fresh
 * socket gets followed). The private directory is gone afterwards.
 */
START_TEST(test_socket_made_whole)
{
	char gid_arg[32], buf[16384];
	const char *args[8] = { "--socket-mode", "0640", NULL };
	gid_t want_gid = getegid();
	bool arrived = false, changed = false;
	struct stat st;
	ssize_t n;
	int in;

	/* _i == 1: --socket-group too; another group as root. */
	if (_i == 1) {
		if (geteuid() == 0)
			want_gid = 65534;
		snprintf(gid_arg, sizeof(gid_arg), "%u",
			 (unsigned int)want_gid);
		args[2] = "--socket-group";
		args[3] = gid_arg;
		args[4] = NULL;
	}
	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	ck_assert_int_ge(in, 0);
	ck_assert_int_ge(inotify_add_watch(in, D.dir,
					   IN_CREATE | IN_MOVED_TO | IN_ATTRIB),
			 0);
	start(args);
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *e = (const void *)p;

			if (e->len && strcmp(e->name, "sock") == 0) {
				if (e->mask & (IN_CREATE | IN_MOVED_TO))
					arrived = true;
				if (e->mask & IN_ATTRIB)
					changed = true;
			}
			p += sizeof(*e) + e->len;
		}
	}
	close(in);
	ck_assert_msg(arrived, "no inotify event for the socket's name");
	ck_assert_msg(!changed, "the socket was chmod'ed or chown'ed by path "
				"after its name existed");
	ck_assert_int_eq(lstat(sock_path, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0640);
	ck_assert_uint_eq(st.st_gid, want_gid);
	ck_assert_int_eq(count_entries(D.dir, ".rdmabrokerd."), 0);
}
END_TEST

START_TEST(test_socket_group_unknown)
{
	static const char *const args[] = { "--socket-group",
					    "rdmab-no-such-group", NULL };

	assert_refused(spawn(args),
		       "--socket-group rdmab-no-such-group: no such group");
	ck_assert_int_eq(count_entries(D.dir, "sock"), 0);
}
END_TEST

/* --- the runtime directory ------------------------------------------------ */

/*
 * A second daemon on the same runtime directory (another socket) refuses
 * to start, naming the first one's pid, and leaves its XRCD files alone;
 * the lock goes with the process that held it, however it ended.
 */
START_TEST(test_runtime_dir_locked)
{
	char file[PATH_MAX + 16], says[PATH_MAX + 64];
	struct ibc_client *cl;
	struct ibc_ctx *ctx;
	struct ibc_xrcd *x;
	struct stat st;
	pid_t second;
	int status;

	ck_assert_int_eq(mkdir(rt_path, 0700), 0);
	start(NULL);
	ck_assert_int_eq(tl_connect(sock_path, TL_WAIT_MS, &cl), 0);
	ck_assert_int_eq(ibc_open(cl, NULL, &ctx), 0);
	ck_assert_int_eq(ibc_xrcd_open(ctx, "kept", O_CREAT, &x), 0);
	snprintf(file, sizeof(file), "%s/xrcd/p.1", rt_path);
	ck_assert_int_eq(lstat(file, &st), 0);

	snprintf(sock_path, sizeof(sock_path), "%s/sock2", D.dir);
	second = spawn(NULL);
	snprintf(says, sizeof(says),
		 "the runtime directory %s is in use by rdmabrokerd pid %d",
		 rt_path, (int)D.pid);
	assert_refused(second, says);
	ck_assert_int_eq(lstat(file, &st), 0);
	ck_assert_int_eq(lstat(sock_path, &st), -1);
	ck_assert_int_eq(ibc_ping(cl, "still", 5), 0);
	ck_assert_int_eq(ibc_xrcd_close(x), 0);
	ibc_disconnect(cl);

	/* Killed, the first one leaves its lock file, not its lock. */
	ck_assert_int_eq(kill(D.pid, SIGKILL), 0);
	ck_assert_int_ge(tl_wait_pid(D.pid, TL_WAIT_MS, &status), 0);
	D.pid = spawn(NULL);
	ck_assert_int_eq(tl_wait_socket(D.pid, sock_path, 10000), 0);
}
END_TEST

/* A missing runtime directory is made, 0700, and XRCDs work in it. */
START_TEST(test_runtime_dir_missing)
{
	struct ibc_client *cl;
	struct ibc_ctx *ctx;
	struct ibc_xrcd *x;
	struct stat st;

	ck_assert_int_eq(lstat(rt_path, &st), -1);
	start(NULL);
	ck_assert_int_eq(lstat(rt_path, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	ck_assert_uint_eq(st.st_uid, geteuid());
	ck_assert_int_eq(tl_connect(sock_path, TL_WAIT_MS, &cl), 0);
	ck_assert_int_eq(ibc_open(cl, NULL, &ctx), 0);
	ck_assert_msg(ibc_xrcd_open(ctx, "x", O_CREAT, &x) == 0,
		      "ibc_xrcd_open: %s", ibc_last_error());
	ck_assert_int_eq(ibc_xrcd_close(x), 0);
	ibc_disconnect(cl);
}
END_TEST

/* What the daemon cannot make its own, it refuses to start on. */
START_TEST(test_runtime_dir_refused)
{
	snprintf(rt_path, sizeof(rt_path), "%s/no/rt", D.dir);
	assert_refused(spawn(NULL), "cannot make the runtime directory");
	ck_assert_int_eq(tl_count_in_file(log_path, "(its parent must exist)"),
			 1);
	make_dir(rt_path, sizeof(rt_path), "open", 0777);
	assert_refused(spawn(NULL), "writable by its owner only");
	/* Nothing but "." and "..". */
	ck_assert_int_eq(count_entries(rt_path, ""), 2);
	ck_assert_int_eq(count_entries(D.dir, "sock"), 0);
}
END_TEST

static Suite *startup_suite(void)
{
	Suite *s = suite_create("startup");
	TCase *tc;

	tc = tcase_create("socket");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_socket_dir_unsafe, 0,
			    sizeof(unsafe_dirs) / sizeof(unsafe_dirs[0]) -
				    (geteuid() != 0));
	tcase_add_test(tc, test_socket_dir_sticky);
	tcase_add_loop_test(tc, test_socket_made_whole, 0, 2);
	tcase_add_test(tc, test_socket_group_unknown);
	suite_add_tcase(s, tc);

	tc = tcase_create("runtime directory");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_runtime_dir_locked);
	tcase_add_test(tc, test_runtime_dir_missing);
	tcase_add_test(tc, test_runtime_dir_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("startup", startup_suite());
}
