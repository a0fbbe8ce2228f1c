// SPDX-License-Identifier: MIT
/*
 * The processes of detached owners (objects.h). An owner whose session
 * ended keeps its objects until its process exits; every detached owner of
 * one process shares one watch of it, so that a live process that connects,
 * creates and hangs up over and over costs the daemon one descriptor, not
 * one a session. A watch holds the process's pidfd, charged to its uid: at
 * most connections_per_uid of them per uid, as many as its sessions could
 * hold while connected. Past that, and where the kernel has no pidfds, a
 * timer asks kill(pid, 0) every OBJ_WATCH_POLL_MS, one timer a process.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/conn.h"
#include "daemon/log.h"
#include "daemon/objects.h"
#include "daemon/server.h"
#include "daemon/user.h"

/* How often a process watched without a pidfd is looked for. */
#define OBJ_WATCH_POLL_MS 1000

static int obj_watch_pidfd_open(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	errno = ENOSYS;
	return -1;
#endif
}

/* Has the process of @w's pidfd exited? A pidfd polls readable then. */
static bool obj_watch_exited(const struct obj_watch *w)
{
	struct pollfd p = { .fd = w->pidfd, .events = POLLIN };

	return w->pidfd >= 0 && poll(&p, 1, 0) == 1;
}

static void obj_watch_free(struct obj_watch *w)
{
	TAILQ_REMOVE(&w->reg->watches, w, link);
	if (w->ev)
		event_free(w->ev);
	if (w->pidfd >= 0)
		close(w->pidfd);
	if (w->user) {
		w->user->watches--;
		user_unref(w->reg->srv, w->user);
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

/* A live watch of @pid: not one whose process has exited with its
 * callback still to run (the pid may be another process's now). */
static struct obj_watch *obj_watch_find(struct registry *reg, pid_t pid)
{
	struct obj_watch *w;

	TAILQ_FOREACH(w, &reg->watches, link)
		if (w->pid == pid && !w->firing && !obj_watch_exited(w))
			return w;
	return NULL;
}

/* A new watch of @pid with @pidfd (taken; -1: a timer); NULL without
 * memory, @pidfd closed. */
static struct obj_watch *obj_watch_new(struct registry *reg, struct user *u,
				       pid_t pid, int pidfd)
{
	const struct broker_limits *l = &reg->srv->config.limits;
	struct timeval poll_tv = { .tv_sec = OBJ_WATCH_POLL_MS / 1000 };
	struct obj_watch *w = calloc(1, sizeof(*w));

	if (!w) {
		if (pidfd >= 0)
			close(pidfd);
		return NULL;
	}
	w->reg = reg;
	w->pid = pid;
	TAILQ_INIT(&w->owners);
	TAILQ_INSERT_TAIL(&reg->watches, w, link);
	/* A uid's pidfds: as many as its connections could hold. */
	if (pidfd >= 0 && (!u || u->watches >= l->connections_per_uid)) {
		close(pidfd);
		pidfd = -1;
	}
	w->pidfd = pidfd;
	if (pidfd >= 0) {
		w->user = user_ref(u);
		u->watches++;
		w->ev = event_new(reg->srv->base, pidfd, EV_READ, obj_watch_cb,
				  w);
	} else {
		w->ev = event_new(reg->srv->base, -1, EV_PERSIST, obj_watch_cb,
				  w);
	}
	if (!w->ev || event_add(w->ev, pidfd >= 0 ? NULL : &poll_tv) < 0)
		log_err("pid %d: cannot watch the process; the objects of its "
			"ended sessions stay until the broker stops",
			(int)pid);
	return w;
}

int obj_watch_join(struct obj_owner *ow, struct user *u, int pidfd)
{
	struct registry *reg = ow->reg;
	struct obj_watch *w = obj_watch_find(reg, ow->pid);

	if (w) {
		if (pidfd >= 0)
			close(pidfd);
	} else {
		if (pidfd < 0) {
			errno = 0;
			pidfd = obj_watch_pidfd_open(ow->pid);
			if (pidfd < 0 && errno == ESRCH)
				return -ESRCH;
		}
		w = obj_watch_new(reg, u, ow->pid, pidfd);
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
