/* SPDX-License-Identifier: MIT */
/*
 * A fake systemd for the restart tests (issue 25 item 5): the service
 * manager's side of the notify protocol (READY, STOPPING, STATUS, WATCHDOG,
 * MAINPID, BARRIER, FDSTORE, FDSTOREREMOVE, FDNAME, FDPOLL) and of passing
 * descriptors (LISTEN_FDS, LISTEN_FDNAMES, LISTEN_PID), the way systemd 252
 * does them as tests/vm/suite.sh's fdstore section measured: a bounded store
 * (FileDescriptorStoreMax=) that refuses what is over the bound one fd at a
 * time, drops duplicates and sockets that hang up, names an fd "stored" when
 * its FDNAME is missing or invalid, accepts messages from the main process
 * only (NotifyAccess=main), and hands the store back last, after the socket
 * unit's listener. Whether a restart keeps the store is the test's choice:
 * fakesd_discard() is what `systemctl stop` does.
 *
 * A thread serves the notify socket and watches the stored fds, as PID 1
 * would, so the service never blocks in sd_notify(); a fork() of the test's
 * waits until that thread is out of its locked section, so that a child
 * never inherits a lock (the allocator's under ASan) the thread held.
 * Test code only: on a broken invariant it returns -errno and says why on
 * stderr.
 */
#ifndef RDMAB_FAKESD_H
#define RDMAB_FAKESD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct fakesd;

struct fakesd_opts {
	/* Where the notify socket goes (a directory of the test's). */
	const char *dir;
	/* FileDescriptorStoreMax=; 0 refuses every FDSTORE=1 as systemd
	 * does. */
	unsigned int store_max;
	/* A socket unit's listener, passed first as fd 3 with
	 * @listen_name (systemd names it after the socket unit); -1 for
	 * none. Borrowed: the caller keeps and closes it. */
	int listen_fd;
	const char *listen_name;
	/* Nonzero: pass the store in an order shuffled with this seed
	 * (sd_listen_fds(3): "in arbitrary order") instead of systemd 252's
	 * order, so a daemon cannot depend on it. */
	unsigned int shuffle_seed;
	/* WatchdogSec= in microseconds, 0 for none (WATCHDOG_USEC). */
	unsigned long long watchdog_usec;
	/* A fault hook: the thread stays this long (ms) inside its locked
	 * section after each message, a window for a fork() to land in
	 * (check_fakesd's fork_waits_for_the_thread). 0: none. */
	unsigned int test_hold_ms;
};

int fakesd_new(const struct fakesd_opts *opts, struct fakesd **ret);
/* SIGKILL the service if it runs, close the store and the socket. */
void fakesd_free(struct fakesd *sd);

/*
 * Start @argv (argv[0] a path) as the service's main process, with the
 * listener and the store as fds 3... and the environment systemd gives
 * (NOTIFY_SOCKET, LISTEN_*, WATCHDOG_*): the store stays in the manager,
 * the service gets its own copies. Its stdout/stderr are the caller's, or
 * appended to @log_path when not NULL. -EBUSY while one runs.
 */
int fakesd_start(struct fakesd *sd, char *const argv[], const char *log_path);
/* Wait for READY=1 from the main process: 0, -ECHILD when it exited
 * first, -ETIMEDOUT. */
int fakesd_wait_ready(struct fakesd *sd, int timeout_ms);
/* Forget the last READY=1, before asking for a reload or re-exec whose
 * READY=1 the test waits for. */
void fakesd_reset_ready(struct fakesd *sd);
/* The main process (MAINPID= may have moved it), 0 when none runs. */
pid_t fakesd_main_pid(const struct fakesd *sd);
int fakesd_kill(struct fakesd *sd, int sig);
/* Wait for the main process to end: its wait status (or 0 when it was not
 * our child and so cannot be waited for), -ETIMEDOUT. */
int fakesd_wait_exit(struct fakesd *sd, int timeout_ms);
/* Close every stored fd: what systemd does when the service stops. */
void fakesd_discard(struct fakesd *sd);

/* The store: how many fds (named @name, or all when NULL). */
size_t fakesd_store_count(struct fakesd *sd, const char *name);
/* The @i-th stored fd's name into @name and a CLOEXEC dup of it into
 * *@ret_fd; -ENOENT past the end. */
int fakesd_store_get(struct fakesd *sd, size_t i, char *name, size_t len,
		     int *ret_fd);
/* Put a dup of @fd in the store under @name as if the service had sent
 * it (bound and duplicates as for FDSTORE=1, no polling): what a test
 * hands the next start that the daemon never stored. 0 or -errno. */
int fakesd_plant(struct fakesd *sd, const char *name, int fd);
/* Closes and forgets every stored fd named @name, as if it had never
 * been stored (a store that lost it); returns how many. */
int fakesd_drop(struct fakesd *sd, const char *name);
/* Counters since fakesd_new(). */
struct fakesd_stats {
	unsigned int refused;  /* fds closed: over the bound, no FDSTORE=1,
				* not from the main process */
	unsigned int dups;     /* fds already stored */
	unsigned int hangups;  /* dropped on POLLHUP/POLLERR */
	unsigned int removed;  /* by FDSTOREREMOVE=1 */
	unsigned int foreign;  /* messages from another pid */
	unsigned int watchdog; /* WATCHDOG=1 */
	unsigned int starts;
	bool ready, stopping;
	char status[256]; /* the last STATUS= */
};
void fakesd_stats(struct fakesd *sd, struct fakesd_stats *ret);
/* What the service did to the store, in the order the manager saw it:
 * how many events so far, and event @i's op ('s' stored, 'd' a
 * duplicate dropped, 'r' refused, 'x' removed by FDSTOREREMOVE=1) and
 * FDNAME (its first 63 bytes) into @name: 0, or -ENOENT past the end or
 * before the last FAKESD_EVENTS. */
#define FAKESD_EVENTS 1024
size_t fakesd_events(struct fakesd *sd);
int fakesd_event(struct fakesd *sd, size_t i, char *ret_op, char *name,
		 size_t len);
/* Is the thread inside its locked section? Read without the lock: in a
 * child, what it was when the parent forked. */
bool fakesd_busy(const struct fakesd *sd);

#endif
