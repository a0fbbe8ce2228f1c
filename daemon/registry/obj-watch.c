// SPDX-License-Identifier: MIT
/*
 * The processes of detached owners (objects.h). An owner whose session
 * ended keeps its objects until its process exits; every detached owner of
 * one process shares one watch of it, so that a live process that connects,
 * creates and hangs up over and over costs the daemon one descriptor, not
 * one a session. A watch holds the process's pidfd, charged to its uid: at
 * most connections_per_uid of them per uid, as many as its sessions could
 * hold while connected, and --max-clients (max_conns) in all. Past that,
 * and where the kernel has no pidfds, a timer asks kill(pid, 0) every
 * OBJ_WATCH_POLL_MS, one timer a process.
 *
 * A watch's pidfd is kept in the fd store (the journal sink's pidfd_kept)
 * under the id of the owner that brought it, which its owners' records
 * name: the next daemon asks that pidfd whether the process exited, which
 * no reused pid can fool. Its place is bounded as the watch is, not by
 * the uid's fd_store_per_uid.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <stdlib.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/registry/charge.h"
#include "daemon/registry/client.h"
#include "daemon/util/log.h"
#include "daemon/registry/objects.h"
#include "daemon/registry/core.h"
#include "daemon/registry/journal-sink.h"
#include "daemon/registry/user.h"

int obj_pidfd_open(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	errno = ENOSYS;
	return -1;
#endif
}

static bool obj_watch_exited(int pidfd);

int obj_proc_start(pid_t pid, uint64_t *ret)
{
	char path[64], buf[1024];
	unsigned long long start;
	const char *p;
	ssize_t n;
	int fd, ret_err = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		ret_err = errno == ESRCH ? -ESRCH : -errno;
	close(fd);
	if (ret_err)
		return ret_err;
	buf[n] = '\0';
	/* The command name (field 2) may hold spaces and parentheses: the
	 * fields after it start past its last ')', with field 3. */
	p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	for (int field = 2; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EINVAL;
	}
	if (sscanf(p + 1, "%llu", &start) != 1)
		return -EINVAL;
	*ret = start;
	return 0;
}

int obj_pidfd_open_as(pid_t pid, uint64_t start_time, int *ret_pidfd)
{
	uint64_t now;
	int pidfd, err;

	errno = 0;
	pidfd = obj_pidfd_open(pid);
	if (pidfd < 0 && errno == ESRCH)
		return -ESRCH;
	if (start_time) {
		/* Read while the pidfd holds the process: if it has not
		 * exited after the read, the read was its. */
		err = obj_proc_start(pid, &now);
		if (err == -ESRCH || (err == 0 && now != start_time) ||
		    (err == 0 && obj_watch_exited(pidfd))) {
			if (pidfd >= 0)
				close(pidfd);
			return -ESRCH;
		}
	}
	*ret_pidfd = pidfd;
	return 0;
}

int obj_pidfd_check(int pidfd, pid_t pid)
{
	char path[64], buf[512];
	long long nr = (long long)pid;
	const char *p;
	ssize_t n;
	int fd;

	/* A pidfd's fdinfo names its process ("Pid:\t-1" once reaped,
	 * since pidfs): anything else polled readable would pass for an
	 * exit. Without /proc, the poll alone. */
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n < 0)
			return -EINVAL;
		buf[n] = '\0';
		p = strstr(buf, "\nPid:\t");
		if (!p || sscanf(p + 6, "%lld", &nr) != 1)
			return -EINVAL;
	}
	if (nr == -1 || obj_watch_exited(pidfd))
		return -ESRCH;
	return nr == (long long)pid ? 0 : -EINVAL;
}

/* How often a process watched without a pidfd is looked for. */
#define OBJ_WATCH_POLL_MS 1000

static void obj_watch_cb(evutil_socket_t fd, short what, void *arg);

/* Has the process of @pidfd exited? A pidfd polls readable then. */
static bool obj_watch_exited(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return pidfd >= 0 && poll(&p, 1, 0) == 1;
}

/* Arm @w: on its pidfd, else a timer. */
static int obj_watch_arm(struct obj_watch *w)
{
	struct timeval poll_tv = { .tv_sec = OBJ_WATCH_POLL_MS / 1000 };
	struct event_base *base = w->reg->core->base;

	if (w->pidfd >= 0)
		w->ev = event_new(base, w->pidfd, EV_READ, obj_watch_cb, w);
	else
		w->ev = event_new(base, -1, EV_PERSIST, obj_watch_cb, w);
	if (!w->ev || event_add(w->ev, w->pidfd >= 0 ? NULL : &poll_tv) < 0)
		return -ENOMEM;
	return 0;
}

/* May @u's processes be watched with one more pidfd? */
static bool obj_watch_may_pidfd(const struct registry *reg,
				const struct user *u)
{
	return u && u->watches < reg->core->config.limits.connections_per_uid &&
	       reg->n_watch_pidfds < reg->core->max_conns;
}

/* @w watches with @pidfd (taken) from now on, charged to @u, kept in
 * the fd store under @key. */
static void obj_watch_take_pidfd(struct obj_watch *w, struct user *u, int pidfd,
				 uint64_t key)
{
	w->pidfd = pidfd;
	w->user = user_ref(u);
	user_charge_watch(u);
	charge_add_uint(&w->reg->n_watch_pidfds, 1, "the broker's watches");
	if (sink_pidfd_kept(w->reg->core, key, pidfd) == 0)
		w->key = key;
}

static void obj_watch_free(struct obj_watch *w)
{
	TAILQ_REMOVE(&w->reg->watches, w, link);
	if (w->ev)
		event_free(w->ev);
	if (w->key)
		sink_pidfd_gone(w->reg->core, w->key);
	if (w->pidfd >= 0)
		close(w->pidfd);
	if (w->user) {
		user_uncharge_watch(w->user);
		charge_sub_uint(&w->reg->n_watch_pidfds, 1, "process watches",
				"the broker");
		user_unref(w->reg->core, w->user);
	}
	free(w);
}

/*
 * The process is gone: each owner starts its cleanup. One may free
 * another meanwhile (it leaves the list then); @w goes last.
 */
static void obj_watch_fire(struct obj_watch *w)
{
	struct obj_owner *ow;

	w->firing = true;
	while ((ow = TAILQ_FIRST(&w->owners))) {
		TAILQ_REMOVE(&w->owners, ow, watch_link);
		ow->watch = NULL;
		objects_owner_dead(ow);
	}
	obj_watch_free(w);
}

static void obj_watch_cb(evutil_socket_t fd, short what, void *arg)
{
	struct obj_watch *w = arg;

	/* A timer: is the process still there? A reused pid only makes
	 * the wait longer. */
	if (w->pidfd < 0 && (kill(w->pid, 0) == 0 || errno != ESRCH))
		return;
	obj_watch_fire(w);
}

/* A live watch of @pid of @uid: not one whose process has exited with
 * its callback still to run (the pid may be another process's now). */
static struct obj_watch *obj_watch_find(struct registry *reg, pid_t pid,
					uid_t uid)
{
	struct obj_watch *w;

	TAILQ_FOREACH(w, &reg->watches, link)
		if (w->pid == pid && w->uid == uid && !w->firing &&
		    !obj_watch_exited(w->pidfd))
			return w;
	return NULL;
}

/* A new watch of @pid with @pidfd (taken; -1: a timer) kept under
 * @key; NULL without memory, @pidfd closed. */
static struct obj_watch *obj_watch_new(struct registry *reg, struct user *u,
				       pid_t pid, uid_t uid, int pidfd,
				       uint64_t key)
{
	struct obj_watch *w = calloc(1, sizeof(*w));

	if (!w) {
		if (pidfd >= 0)
			close(pidfd);
		return NULL;
	}
	w->reg = reg;
	w->pid = pid;
	w->uid = uid;
	w->pidfd = -1;
	TAILQ_INIT(&w->owners);
	TAILQ_INSERT_TAIL(&reg->watches, w, link);
	/* A uid's pidfds: as many as its connections could hold. */
	if (pidfd >= 0 && obj_watch_may_pidfd(reg, u))
		obj_watch_take_pidfd(w, u, pidfd, key);
	else if (pidfd >= 0)
		close(pidfd);
	if (obj_watch_arm(w) < 0)
		log_err("pid %d: cannot watch the process; the objects of its "
			"ended sessions stay until the broker stops",
			(int)pid);
	return w;
}

/* A timer watch gets the pidfd a new session of its process brings: the
 * exit is then seen at once, and a pid reused after that cannot mislead
 * it. The timer stays unless the pidfd's event is armed. Its owners'
 * records name the pidfd's place (@key) from then on. */
static void obj_watch_upgrade(struct obj_watch *w, struct user *u, int pidfd,
			      uint64_t key)
{
	struct obj_owner *ow;
	struct event *ev;

	if (w->pidfd >= 0 || !obj_watch_may_pidfd(w->reg, u)) {
		close(pidfd);
		return;
	}
	ev = event_new(w->reg->core->base, pidfd, EV_READ, obj_watch_cb, w);
	if (!ev || event_add(ev, NULL) < 0) {
		if (ev)
			event_free(ev);
		close(pidfd);
		return;
	}
	if (w->ev)
		event_free(w->ev);
	w->ev = ev;
	obj_watch_take_pidfd(w, u, pidfd, key);
	if (w->key)
		TAILQ_FOREACH(ow, &w->owners, watch_link)
			sink_owner_saved(w->reg->core, ow);
}

int obj_watch_join(struct obj_owner *ow, struct user *u, uid_t uid, int pidfd)
{
	struct registry *reg = ow->reg;
	struct obj_watch *w;

	/* The session's process is gone already: the pid may be another
	 * process's by now, whose watch it must not join. */
	if (obj_watch_exited(pidfd)) {
		close(pidfd);
		return -ESRCH;
	}
	w = obj_watch_find(reg, ow->pid, uid);
	if (w) {
		if (pidfd >= 0)
			obj_watch_upgrade(w, u, pidfd, ow->client_id);
	} else {
		if (pidfd < 0) {
			errno = 0;
			pidfd = obj_pidfd_open(ow->pid);
			if (pidfd < 0 && errno == ESRCH)
				return -ESRCH;
		}
		w = obj_watch_new(reg, u, ow->pid, uid, pidfd, ow->client_id);
		if (!w)
			return -ENOMEM;
	}
	TAILQ_INSERT_TAIL(&w->owners, ow, watch_link);
	ow->watch = w;
	return 0;
}

int obj_watch_join_kept(struct obj_owner *ow, uint64_t key)
{
	struct obj_watch *w;

	TAILQ_FOREACH(w, &ow->reg->watches, link) {
		if (w->key != key || w->firing)
			continue;
		TAILQ_INSERT_TAIL(&w->owners, ow, watch_link);
		ow->watch = w;
		return 0;
	}
	return -ENOENT;
}

int obj_watch_adopt(struct obj_owner *ow, struct user *u, int pidfd,
		    uint64_t key)
{
	struct obj_watch *w = obj_watch_find(ow->reg, ow->pid, ow->uid);

	if (w) {
		obj_watch_upgrade(w, u, pidfd, key);
	} else {
		w = obj_watch_new(ow->reg, u, ow->pid, ow->uid, pidfd, key);
		if (!w)
			return -ENOMEM;
	}
	TAILQ_INSERT_TAIL(&w->owners, ow, watch_link);
	ow->watch = w;
	return 0;
}

void obj_watch_leave(struct obj_owner *ow)
{
	struct obj_watch *w = ow->watch;

	if (!w)
		return;
	TAILQ_REMOVE(&w->owners, ow, watch_link);
	ow->watch = NULL;
	if (TAILQ_EMPTY(&w->owners) && !w->firing)
		obj_watch_free(w);
}

void obj_watches_fini(struct registry *reg)
{
	struct obj_watch *w;

	while ((w = TAILQ_FIRST(&reg->watches))) {
		struct obj_owner *ow;

		while ((ow = TAILQ_FIRST(&w->owners))) {
			TAILQ_REMOVE(&w->owners, ow, watch_link);
			ow->watch = NULL;
		}
		obj_watch_free(w);
	}
}
