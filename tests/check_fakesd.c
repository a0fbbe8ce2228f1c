// SPDX-License-Identifier: MIT
/*
 * The fake systemd (tests/fakesd.h) against the probe the VM runs under the
 * real systemd 252 (tests/vm/vm-fdprobe.c, built here as tests/fdprobe):
 * the same steps and the same facts as tests/vm/suite.sh's fdstore section,
 * so that what the restart tests learn from the harness is what systemd
 * does. Also what only a test can send: a foreign sender, a disabled store,
 * a shuffled hand-over.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "tests/cklib.h"
#include "tests/fakesd.h"
#include "tests/testlib.h"

static const char *probe_path(void)
{
	static const char *const cands[] = { "tests/fdprobe", "./fdprobe",
					     "../fdprobe" };

	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++)
		if (access(cands[i], X_OK) == 0)
			return cands[i];
	return "tests/fdprobe";
}

/* Line @n (from 1) of @path into @buf; false when there is none. */
static bool line_of(const char *path, int n, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	bool ok = false;

	if (!f)
		return false;
	for (int i = 1; fgets(buf, (int)len, f); i++) {
		if (i == n) {
			ok = true;
			break;
		}
	}
	fclose(f);
	return ok;
}

static int count_of(const char *hay, const char *needle)
{
	int c = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		c++;
	return c;
}

struct probe {
	struct fakesd *sd;
	char *dir;
	char log[256];
	char *argv[3];
};

/* The probe under a fake systemd of options @o, in a directory of its
 * own (@o's dir). */
static void probe_new_opts(struct probe *p, struct fakesd_opts *o)
{
	p->dir = tl_mkdtemp();
	ck_assert_ptr_nonnull(p->dir);
	o->dir = p->dir;
	ck_assert_int_eq(fakesd_new(o, &p->sd), 0);
	snprintf(p->log, sizeof(p->log), "%s/probe.log", p->dir);
	p->argv[0] = (char *)probe_path();
	p->argv[1] = p->log;
	p->argv[2] = NULL;
}

static void probe_new(struct probe *p, unsigned int max, unsigned int seed)
{
	struct fakesd_opts o = { .store_max = max,
				 .listen_fd = -1,
				 .shuffle_seed = seed };

	probe_new_opts(p, &o);
}

/* Start the probe, wait for READY=1 and for its notifications to settle
 * (a hung-up socket leaves the store a moment after it arrived). */
static void probe_start(struct probe *p)
{
	ck_assert_int_eq(fakesd_start(p->sd, p->argv, NULL), 0);
	ck_assert_int_eq(fakesd_wait_ready(p->sd, TL_WAIT_MS), 0);
	tl_sleep_ms(100);
}

static void probe_kill(struct probe *p, int sig)
{
	int st;

	ck_assert_int_eq(fakesd_kill(p->sd, sig), 0);
	st = fakesd_wait_exit(p->sd, TL_WAIT_MS);
	ck_assert_int_ge(st, 0);
}

START_TEST(same_facts_as_systemd)
{
	struct fakesd_stats st;
	struct probe p;
	char l[4096];

	probe_new(&p, 16, 0);
	probe_start(&p);
	/* fdstore-bound */
	ck_assert_uint_eq(fakesd_store_count(p.sd, NULL), 16);
	fakesd_stats(p.sd, &st);
	ck_assert_uint_eq(st.dups, 1);
	ck_assert_uint_eq(st.hangups, 1);
	ck_assert_uint_eq(st.removed, 1);
	ck_assert_uint_eq(st.refused, 5);

	probe_kill(&p, SIGKILL);
	probe_start(&p);
	ck_assert(line_of(p.log, 2, l, sizeof(l)));
	ck_assert_msg(strstr(l, "g1=g1"), "fdstore-sigkill: %s", l);
	ck_assert_int_eq(count_of(l, "dup=dup"), 1);
	ck_assert_msg(strstr(l, "stored=badname"), "fdstore-badname: %s", l);
	ck_assert_msg(!strstr(l, "hup=sock"), "fdstore-hup: %s", l);
	ck_assert_msg(strstr(l, "nopoll=sock"), "fdstore-nopoll: %s", l);
	ck_assert_msg(strstr(l, "pidfd=exited"), "fdstore-pidfd: %s", l);
	ck_assert_msg(!strstr(l, "rm=rm"), "fdstore-remove: %s", l);
	ck_assert_int_eq(count_of(l, "fill=fill"), 11);
	ck_assert_msg(strstr(l, "passed=16 "), "%s", l);

	/* systemctl stop empties the store. */
	probe_kill(&p, SIGTERM);
	fakesd_discard(p.sd);
	probe_start(&p);
	ck_assert(line_of(p.log, 3, l, sizeof(l)));
	ck_assert_msg(strstr(l, "passed=0 "), "fdstore-stop: %s", l);
	fakesd_free(p.sd);
	free(p.dir);
}
END_TEST

/* The order systemd 252 hands the store back in (the VM's fdstore lines):
 * the newest first. */
START_TEST(order_newest_first)
{
	struct probe p;
	char l[4096];

	probe_new(&p, 16, 0);
	probe_start(&p);
	probe_kill(&p, SIGKILL);
	probe_start(&p);
	ck_assert(line_of(p.log, 2, l, sizeof(l)));
	ck_assert_msg(strstr(l, "fds=fill=fill"), "%s", l);
	ck_assert_msg(strstr(l, "pidfd=exited,nopoll=sock,stored=badname,dup="
				"dup,g1=g1\n"),
		      "%s", l);
	fakesd_free(p.sd);
	free(p.dir);
}
END_TEST

START_TEST(shuffled_same_set)
{
	struct probe p;
	char l[4096];

	probe_new(&p, 16, 7);
	probe_start(&p);
	probe_kill(&p, SIGKILL);
	probe_start(&p);
	ck_assert(line_of(p.log, 2, l, sizeof(l)));
	ck_assert_msg(strstr(l, "passed=16 "), "%s", l);
	ck_assert_int_eq(count_of(l, "fill=fill"), 11);
	ck_assert_msg(strstr(l, "g1=g1") && strstr(l, "nopoll=sock") &&
			      strstr(l, "stored=badname") &&
			      strstr(l, "dup=dup"),
		      "%s", l);
	ck_assert_msg(!strstr(l, "nopoll=sock,stored=badname,dup=dup,g1=g1\n"),
		      "seed 7 kept systemd's order: %s", l);
	fakesd_free(p.sd);
	free(p.dir);
}
END_TEST

/* FileDescriptorStoreMax=0, systemd's default: nothing is kept. */
START_TEST(store_disabled)
{
	struct fakesd_stats st;
	struct probe p;

	probe_new(&p, 0, 0);
	probe_start(&p);
	ck_assert_uint_eq(fakesd_store_count(p.sd, NULL), 0);
	fakesd_stats(p.sd, &st);
	ck_assert_uint_ge(st.refused, 20);
	fakesd_free(p.sd);
	free(p.dir);
}
END_TEST

/* Only the main process stores (NotifyAccess=main): another process's
 * FDSTORE=1, even with the socket's path, is refused and its fds closed. */
START_TEST(foreign_sender)
{
	struct fakesd_stats st;
	char sock[256];
	struct probe p;
	pid_t pid;
	int status;

	probe_new(&p, 16, 0);
	probe_start(&p);
	snprintf(sock, sizeof(sock), "%s/notify", p.dir);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = memfd_create("planted", MFD_CLOEXEC);

		setenv("NOTIFY_SOCKET", sock, 1);
		_exit(sd_pid_notify_with_fds(0, 0, "FDSTORE=1\nFDNAME=planted",
					     &fd, 1) > 0 ?
			      0 :
			      1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(status, 0);
	tl_sleep_ms(100);
	ck_assert_uint_eq(fakesd_store_count(p.sd, "planted"), 0);
	fakesd_stats(p.sd, &st);
	ck_assert_uint_eq(st.foreign, 1);
	fakesd_free(p.sd);
	free(p.dir);
}
END_TEST

/* A socket unit's listener comes first, named, the store after it. */
START_TEST(listener_first)
{
	struct fakesd_opts o = { .store_max = 16, .listen_name = "lsn" };
	struct probe p;
	char l[4096];
	int sv[2];

	ck_assert_int_eq(
		socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	o.listen_fd = sv[0];
	probe_new_opts(&p, &o);
	probe_start(&p);
	ck_assert(line_of(p.log, 1, l, sizeof(l)));
	ck_assert_msg(strstr(l, "passed=1 fds=lsn=sock\n"), "%s", l);
	fakesd_free(p.sd);
	free(p.dir);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/*
 * A fork() never lands while the thread is inside its locked section: it
 * may hold a lock of the allocator there (the store grows), and the child
 * would keep it held by a thread it does not have. glibc's malloc takes
 * its locks around fork(), clang 14's AddressSanitizer does not, so under
 * make check-asan such a child hung in its first allocation of that size
 * (the restart storm's client that never answered). The thread stays 100
 * ms inside after each message (test_hold_ms), the probe's watchdog pings
 * bring one every 500 ms, and each fork made while it is inside must wait
 * until it is out: the child sees what the thread was doing at its fork.
 */
START_TEST(fork_waits_for_the_thread)
{
	struct fakesd_opts o = { .store_max = 16,
				 .listen_fd = -1,
				 .watchdog_usec = 1000000,
				 .test_hold_ms = 100 };
	struct probe p;

	probe_new_opts(&p, &o);
	probe_start(&p);
	for (int i = 0; i < 3; i++) {
		int64_t end = tl_now_ms() + TL_WAIT_MS;
		int status;
		pid_t pid;

		while (!fakesd_busy(p.sd) && tl_now_ms() < end)
			usleep(200);
		ck_assert_msg(fakesd_busy(p.sd), "no watchdog ping in %d ms",
			      TL_WAIT_MS);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0)
			_exit(fakesd_busy(p.sd) ? 1 : 0);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "fork %d landed while the fake systemd's thread "
			      "was inside its locked section",
			      i);
	}
	fakesd_free(p.sd);
	free(p.dir);
}
END_TEST

static Suite *fakesd_suite(void)
{
	Suite *s = suite_create("fakesd");
	TCase *tc = tcase_create("store");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, same_facts_as_systemd);
	tcase_add_test(tc, order_newest_first);
	tcase_add_test(tc, shuffled_same_set);
	tcase_add_test(tc, store_disabled);
	tcase_add_test(tc, foreign_sender);
	tcase_add_test(tc, listener_first);
	tcase_add_test(tc, fork_waits_for_the_thread);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("check_fakesd", fakesd_suite());
}
