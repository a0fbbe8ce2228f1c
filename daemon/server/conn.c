// SPDX-License-Identifier: MIT
/*
 * One client connection (conn.h) over its life: the socket's reads and
 * writes, the out queue and the descriptors in flight charged to its uid,
 * the hello deadline, the unread-reply stall, the pidfd that sees the peer
 * die, and the close (now, deferred to the loop, or a socket lingering
 * until the peer reads the descriptors sent to it). What a request means
 * is dispatch.c's.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/sockios.h>

#include <event2/event.h>

#include "daemon/registry/cgroup.h"
#include "daemon/registry/charge.h"
#include "daemon/registry/core.h"
#include "daemon/server/conn.h"
#include "daemon/registry/domain-join.h"
#include "daemon/registry/domain.h"
#include "daemon/util/log.h"
#include "daemon/registry/objects.h"
#include "daemon/registry/user.h"

/* Unread replies beyond outq_max stop the reading of requests; events may
 * still be queued up to this multiple before the client is dropped. */
#define OUTQ_HARD_FACTOR 4
/* A connection stopped for descriptors its peer has not read asks the
 * socket whether the peer caught up: after 2 ms, then twice as long each
 * time up to 128 ms. */
#define POLL_MIN_MS 2
#define POLL_MAX_MS 128
/* How often a lingering socket is asked. */
#define LINGER_POLL_MS 500
/* Reading on after a request (conn_read_cb()): at most this many requests
 * of one connection in a row, and at most this many requests served before
 * trying again after a read that found nothing. */
#define READ_BURST 16
#define READ_BACKOFF_MAX 64
/* A send this many times slower than the quickest let the peer run. */
#define SEND_PEER_RAN_FACTOR 3
/* Refused and timed out clients: one line a minute at most. */
#define REFUSE_QUIET_MS (60 * 1000)

struct outmsg {
	TAILQ_ENTRY(outmsg) link;
	uint8_t *buf;
	size_t len;
	unsigned int nfds;
	int fds[WIRE_MAX_FDS];
};

static void outmsg_free(struct outmsg *m)
{
	for (unsigned int i = 0; i < m->nfds; i++)
		close(m->fds[i]);
	free(m->buf);
	free(m);
}

static int64_t conn_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t conn_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void conn_arm(struct event *ev, unsigned int ms, struct conn *c);

/* The loop can no longer watch @c: killed, closed by the loop where
 * nothing else holds it; a lingering socket is released by its own
 * check (conn_linger_check()), being off tab->conns. */
static void conn_doom(struct conn *c)
{
	if (c->doomed)
		return;
	c->doomed = true;
	if (c->state == CONN_LINGERING) {
		event_active(c->stall_ev, EV_TIMEOUT, 1);
		return;
	}
	if (c->state >= CONN_DEAD)
		return;
	log_err("client %" PRIu64 ": its socket can no longer be watched; "
		"disconnecting",
		c->cl.id);
	conn_kill(c, NULL);
}

static void conn_arm(struct event *ev, unsigned int ms, struct conn *c)
{
	struct timeval tv = {
		.tv_sec = ms / 1000,
		.tv_usec = (suseconds_t)(ms % 1000) * 1000,
	};

	if (evtimer_add(ev, &tv) < 0)
		conn_doom(c);
}

/* Descriptors sent or queued to the connections of @u and not read yet;
 * crossing queued_fds_per_uid, either way, concerns all of them. */
static void conn_pin_user(const struct conn_table *t, struct user *u,
			  unsigned int n, bool pin)
{
	bool was_full = user_fds_full(t->core, u);

	user_pin_fds(u, n, pin);
	if (user_fds_full(t->core, u) != was_full)
		u->wake = true;
}

/*
 * Descriptors @c was sent are pinned until its peer reads them; the peer
 * has read everything once the socket's send queue is empty. Returns
 * whether that released anything. Where the socket cannot tell, the
 * descriptors count as read: the daemon's own queue stays bounded.
 */
static bool conn_peer_caught_up(struct conn *c)
{
	int queued = 0;

	if (!c->sent_fds)
		return false;
	if (ioctl(c->fd, SIOCOUTQ, &queued) == 0 && queued > 0)
		return false;
	conn_pin_user(c->tab, c->cl.user, c->sent_fds, false);
	c->sent_fds = 0;
	return true;
}

static bool conn_fds_full(const struct conn *c)
{
	return c->queued_fds + c->sent_fds >=
		       c->tab->core->config.limits.queued_fds ||
	       user_fds_full(c->tab->core, c->cl.user);
}

/* May the requests of @c be read? Not while it leaves too many bytes or
 * descriptors unread, on its own or with the other connections of its
 * uid. */
static bool conn_may_read(struct conn *c)
{
	struct conn *s;

	if (c->state >= CONN_CLOSING || c->outq_bytes >= c->tab->outq_max)
		return false;
	if (!conn_fds_full(c))
		return true;
	/* Before stopping, ask whether the peers read what they were sent. */
	if (!user_fds_full(c->tab->core, c->cl.user)) {
		conn_peer_caught_up(c);
		return !conn_fds_full(c);
	}
	TAILQ_FOREACH(s, &c->cl.user->conns, user_link)
		conn_peer_caught_up(s);
	return !conn_fds_full(c);
}

/*
 * Should the loop watch @c for requests? A client that reads each reply
 * before it sends its next request has read every descriptor it was sent
 * by then, but the count reaches its limit when the last reply has just
 * been sent, before the client ran to read it: stopping there made such a
 * client wait for the first poll (2 ms) every queued_fds replies. So the
 * loop goes on watching, and conn_read_cb() asks the socket before it
 * reads the next request; only a client that sends without reading stops
 * being read (fds_hint_spent) until it catches up.
 */
static bool conn_want_read(struct conn *c)
{
	if (conn_may_read(c)) {
		c->fds_hint = false;
		c->fds_hint_spent = false;
		return true;
	}
	if (c->state >= CONN_CLOSING || c->outq_bytes >= c->tab->outq_max ||
	    c->fds_hint_spent)
		return false;
	c->fds_hint = true;
	return true;
}

/* Stalled: not read from, with replies of its own unread. */
static void conn_set_stalled(struct conn *c, bool on)
{
	if (on == c->stalled)
		return;
	c->stalled = on;
	if (!on) {
		event_del(c->stall_ev);
		return;
	}
	c->stalled_since_ms = conn_now_ms();
	c->poll_ms = POLL_MIN_MS;
	conn_arm(c->stall_ev, c->poll_ms, c);
}

static void conn_apply_events(struct conn *c)
{
	bool want_read;

	if (c->doomed)
		return;
	want_read = conn_want_read(c);
	if (want_read != c->reading) {
		if (want_read && event_add(c->read_ev, NULL) < 0) {
			conn_doom(c);
			return;
		}
		if (!want_read)
			event_del(c->read_ev);
		if (!want_read && c->state < CONN_CLOSING &&
		    c->outq_bytes < c->tab->outq_max)
			log_debug("client %" PRIu64 ": not read while the "
				  "descriptors it was sent are unread (%u to "
				  "it, %u to its uid)",
				  c->cl.id, c->queued_fds + c->sent_fds,
				  c->cl.user->pinned_fds);
		c->reading = want_read;
	}
	if (TAILQ_EMPTY(&c->outq)) {
		event_del(c->write_ev);
	} else if (event_add(c->write_ev, NULL) < 0) {
		conn_doom(c);
		return;
	}
	/* A hint keeps the unread deadline and the polls running. */
	conn_set_stalled(c, (!c->reading || c->fds_hint) &&
				    (!TAILQ_EMPTY(&c->outq) || c->sent_fds));
}

/* The uid of @c reached its descriptor limit, or fell below it: its
 * connections stop being read, or may be read again. */
static void conn_wake_user(struct user *u)
{
	struct conn *s;

	if (u->waking)
		return;
	u->waking = true;
	while (u->wake) {
		u->wake = false;
		TAILQ_FOREACH(s, &u->conns, user_link)
			conn_apply_events(s);
	}
	u->waking = false;
}

static void conn_update_events(struct conn *c)
{
	conn_apply_events(c);
	if (c->cl.user->wake)
		conn_wake_user(c->cl.user);
}

/* Send what the socket takes; -EAGAIN when it is full, 0 when empty. */
static int conn_flush(struct conn *c)
{
	struct outmsg *m;

	while ((m = TAILQ_FIRST(&c->outq))) {
		int ret = wire_send(c->fd, m->buf, m->len, m->fds, m->nfds,
				    MSG_DONTWAIT);

		if (ret < 0)
			return ret;
		TAILQ_REMOVE(&c->outq, m, link);
		c->outq_bytes -= m->len;
		/* Still pinned, now in the socket. */
		c->queued_fds -= m->nfds;
		c->sent_fds += m->nfds;
		outmsg_free(m);
	}
	c->tab->ops->reply_sent(c);
	return 0;
}

static void conn_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	int ret = conn_flush(c);

	if (ret < 0 && ret != -EAGAIN) {
		log_debug("client %" PRIu64 ": send: %s", c->cl.id,
			  strerror(-ret));
		conn_close(c);
		return;
	}
	if (c->state >= CONN_CLOSING && ret == 0) {
		conn_close(c);
		return;
	}
	conn_update_events(c);
}

/*
 * @ns: how long a send to @c took, 0 when it did not go out. The quickest
 * is forgotten by 1/1024 of the difference a send, so that it follows a
 * machine that became slower.
 */
static void conn_note_send(struct conn *c, int64_t ns)
{
	struct conn_table *t = c->tab;

	c->send_ns = ns;
	if (ns <= 0)
		return;
	if (!t->send_quick_ns || ns < t->send_quick_ns)
		t->send_quick_ns = ns;
	else
		t->send_quick_ns += (ns - t->send_quick_ns) / 1024;
}

/* Did the peer run during the send of the reply (conn_read_cb())? */
static bool conn_peer_ran(const struct conn *c)
{
	return c->send_ns > SEND_PEER_RAN_FACTOR * c->tab->send_quick_ns;
}

/*
 * Read and serve one request. @again: the read comes right after serving
 * the one before, unasked by the loop, and may find nothing. Returns true
 * when a request was served and @c stays open.
 */
static bool conn_read_one(struct conn *c, bool again)
{
	static uint8_t buf[WIRE_MAX_PACKET];
	struct wire_fds fds;
	int n;

	/* No request takes descriptors (proto/README.md): recv(2), cheaper
	 * than recvmsg(2), and what a client attaches the kernel closes
	 * unread, so that none ever enters this process. */
	wire_fds_init(&fds);
	n = wire_recv_bare(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n == -EAGAIN) {
		if (again) {
			c->read_backoff =
				c->read_backoff ? 2 * c->read_backoff : 1;
			if (c->read_backoff > READ_BACKOFF_MAX)
				c->read_backoff = READ_BACKOFF_MAX;
			c->read_skip = c->read_backoff;
		}
		return false;
	}
	if (n == 0) {
		conn_close(c);
		return false;
	}
	if (n == -EMSGSIZE) {
		conn_log_drop(c, "packet larger than 64 KiB");
		c->tab->ops->error(c, 0, EMSGSIZE,
				   "packet larger than the 64 KiB limit");
		conn_close_after_flush(c);
		return false;
	}
	if (n < 0) {
		log_debug("client %" PRIu64 ": recv: %s", c->cl.id,
			  strerror(-n));
		conn_close(c);
		return false;
	}
	if (again)
		c->read_backoff = 0;
	/* The packet handler (dispatch_packet()) owns the descriptors; a
	 * close it asks for is the loop's (conn_kill()). */
	return c->tab->ops->packet(c, buf, (size_t)n, &fds);
}

/*
 * A client that waits for each reply before its next request, on the CPU
 * the daemon runs on, often runs and sends that request while the daemon
 * is still in the reply's send: the wakeup preempts the daemon. Such a send
 * takes the client's turn too, several times the quickest send. Reading on
 * at once then saves the epoll_wait that would only report the request, a
 * third of the system calls a request costs; after a quick send the request
 * is not there (a client on another CPU, or not yet run), and the loop asks
 * epoll as before. A read that finds nothing anyway costs a recv, so a
 * connection that had nothing waits twice as many requests before the next
 * try, up to READ_BACKOFF_MAX; and READ_BURST requests of one connection in
 * a row at most, so that it cannot starve the others.
 */
static void conn_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	enum read_on when = c->tab->read_on;

	/* Killed (by another connection's wakeup in this loop pass that
	 * failed to arm its events, or an Event it could not take), with
	 * this read already reported. */
	if (c->state >= CONN_DEAD)
		return;
	if (conn_fds_full(c)) {
		if (!conn_may_read(c)) {
			c->fds_hint_spent = true;
			conn_update_events(c);
			return;
		}
		/* A failure to arm an event kills @c: nothing more is read,
		 * here and below. */
		conn_update_events(c);
		if (c->state >= CONN_DEAD)
			return;
	}
	for (unsigned int k = 0; k < READ_BURST; k++) {
		if (!conn_read_one(c, k > 0) || when == READ_ON_NEVER)
			return;
		if (when == READ_ON_AUTO) {
			if (c->read_skip) {
				c->read_skip--;
				return;
			}
			if (!conn_peer_ran(c))
				return;
		}
		if (c->tab->stopping || c->state >= CONN_DEAD || !c->reading ||
		    !conn_may_read(c))
			return;
		/* The check released what the hint waited for. */
		if (c->fds_hint)
			conn_update_events(c);
		if (c->state >= CONN_DEAD)
			return;
	}
}

static void conn_pidfd_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	log_debug("client %" PRIu64 ": process %d exited", c->cl.id,
		  (int)c->cl.cred.pid);
	conn_close(c);
}

static void conn_read_comm(struct conn *c)
{
	/* The name and the newline the kernel appends. */
	char path[64], buf[sizeof(c->cl.comm) + 1];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)c->cl.cred.pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0)
		return;
	/* Only that newline: one inside the name (PR_SET_NAME takes any
	 * bytes but NUL) is shown escaped, not cut there. */
	if (buf[n - 1] == '\n')
		n--;
	if ((size_t)n >= sizeof(c->cl.comm))
		n = sizeof(c->cl.comm) - 1;
	memcpy(c->cl.comm, buf, (size_t)n);
	c->cl.comm[n] = '\0';
}

/* The peer's supplementary groups, as they were at connect. */
static int conn_read_groups(struct conn *c)
{
	socklen_t len = 64 * sizeof(gid_t);

	for (int tries = 0; tries < 2; tries++) {
		gid_t *g = realloc(c->cl.groups, len ? len : sizeof(gid_t));

		if (!g)
			return -ENOMEM;
		c->cl.groups = g;
		if (getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) ==
		    0) {
			c->cl.n_groups = len / sizeof(gid_t);
			return 0;
		}
		if (errno != ERANGE)
			return -errno;
	}
	return -ERANGE;
}

/* SO_PEERPIDFD (Linux 6.5) where the C library's headers predate it: its
 * number on the architectures of asm-generic/socket.h. */
#if !defined(SO_PEERPIDFD) &&                                                  \
	(defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) ||   \
	 defined(__arm__) || defined(__riscv) || defined(__s390__))
#define SO_PEERPIDFD 77
#endif

/*
 * A pidfd of the process that connected @fd. The kernel's own
 * (SO_PEERPIDFD) is of that process even when it exited and its pid went
 * to another; pidfd_open() of the pid SO_PEERCRED gave is the fallback on
 * older kernels, where a pid freed between the connect and here names
 * whoever took it. -1 with errno: ESRCH when the process is gone.
 */
static int conn_peer_pidfd(int fd, pid_t pid)
{
#ifdef SO_PEERPIDFD
	socklen_t len = sizeof(int);
	int pidfd = -1;

	errno = 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0)
		return pidfd;
	/* Gone: its pid may be another's already. */
	if (errno != ENOPROTOOPT && errno != EINVAL)
		return -1;
#endif
	return obj_pidfd_open(pid);
}

void conn_log_drop(struct conn *c, const char *why)
{
	unsigned int quiet;

	if (!log_ratelimit(&c->tab->refuse_rl, &quiet))
		return;
	if (quiet)
		log_notice("client %" PRIu64 " (pid %d, uid %u): %s; "
			   "disconnecting (%u refusals and disconnects not "
			   "logged before it)",
			   c->cl.id, (int)c->cl.cred.pid, c->cl.cred.uid, why,
			   quiet);
	else
		log_notice("client %" PRIu64 " (pid %d, uid %u): %s; "
			   "disconnecting",
			   c->cl.id, (int)c->cl.cred.pid, c->cl.cred.uid, why);
}

static void conn_log_refused(struct conn *c, const char *why)
{
	unsigned int quiet;

	if (!log_ratelimit(&c->tab->refuse_rl, &quiet))
		return;
	if (quiet)
		log_notice("refused a client (pid %d, uid %u): %s (%u "
			   "refusals and disconnects not logged before it)",
			   (int)c->cl.cred.pid, c->cl.cred.uid, why, quiet);
	else
		log_notice("refused a client (pid %d, uid %u): %s",
			   (int)c->cl.cred.pid, c->cl.cred.uid, why);
}

static void conn_hello_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	unsigned int ms = c->tab->core->config.limits.hello_timeout_ms;
	char text[96];

	snprintf(text, sizeof(text), "no hello within %u ms of connecting", ms);
	conn_log_drop(c, text);
	event_free(c->hello_ev);
	c->hello_ev = NULL;
	c->tab->ops->error(c, 0, ETIMEDOUT, text);
	conn_close_after_flush(c);
}

/* The socket is gone from the daemon's view: what it held goes. */
static void conn_release(struct conn *c)
{
	struct conn_table *t = c->tab;
	struct user *u = c->cl.user;

	conn_pin_user(t, u, c->sent_fds, false);
	c->sent_fds = 0;
	if (c->stall_ev)
		event_free(c->stall_ev);
	close(c->fd);
	conn_wake_user(u);
	user_unref(t->core, u);
	free(c);
}

static void conn_linger_check(struct conn *c)
{
	if (c->sent_fds && !conn_peer_caught_up(c) && !c->doomed) {
		conn_arm(c->stall_ev, LINGER_POLL_MS, c);
		return;
	}
	log_debug("client %" PRIu64 ": its socket is released", c->cl.id);
	TAILQ_REMOVE(&c->tab->lingering, c, link);
	conn_release(c);
}

static void conn_stall_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	unsigned int limit = c->tab->core->config.limits.unread_timeout_ms;
	int64_t left;

	if (c->state == CONN_LINGERING) {
		conn_linger_check(c);
		return;
	}
	/* Killed: the loop closes it. */
	if (c->doomed)
		return;
	/* The peer may have read what it was sent. */
	conn_update_events(c);
	if (c->doomed || !c->stalled)
		return;
	left = c->stalled_since_ms + limit - conn_now_ms();
	if (left <= 0) {
		char text[96];

		snprintf(text, sizeof(text), "replies left unread for %u ms",
			 limit);
		conn_kill(c, text);
		return;
	}
	/* Only the socket says when descriptors were read; bytes in the
	 * daemon's queue make it writable when they can go. */
	if (c->sent_fds || user_fds_full(c->tab->core, c->cl.user)) {
		if ((int64_t)c->poll_ms < left)
			left = c->poll_ms;
		if (c->poll_ms < POLL_MAX_MS)
			c->poll_ms *= 2;
	}
	conn_arm(c->stall_ev, (unsigned int)left, c);
}

int conn_new(struct conn_table *t, int fd, struct conn **ret_conn)
{
	return conn_new_as(t, fd, 0, ret_conn);
}

int conn_new_as(struct conn_table *t, int fd, uint64_t id,
		struct conn **ret_conn)
{
	socklen_t len = sizeof(struct ucred);
	char why[192];
	struct conn *c;
	char comm[LOG_ESCAPED_SIZE(c->cl.comm)];
	int ret;

	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->tab = t;
	c->cl.core = t->core;
	c->fd = fd;
	c->pidfd = -1;
	c->inflight_slot = -1;
	TAILQ_INIT(&c->outq);
	TAILQ_INIT(&c->cl.ctxs);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c->cl.cred, &len) < 0) {
		ret = -errno;
		goto fail;
	}
	ret = conn_read_groups(c);
	if (ret < 0)
		goto fail;
	c->cl.user = user_get(t->core, c->cl.cred.uid);
	if (!c->cl.user) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = t->ops->admit(t, c, why, sizeof(why));
	if (ret < 0) {
		conn_log_refused(c, why);
		conn_refuse(fd, -ret, why);
		goto fail;
	}
	/* A pidfd is CLOEXEC by definition. A peer that already exited
	 * (ESRCH) is caught by the EOF that follows. */
	c->pidfd = conn_peer_pidfd(fd, c->cl.cred.pid);
	c->cl.cgroup_err =
		c->pidfd < 0 ?
			-errno :
			cgroup_of_pid(c->cl.cred.pid, c->pidfd, &c->cl.cgroup);
	conn_read_comm(c);
	c->read_ev = event_new(t->core->base, fd, EV_READ | EV_PERSIST,
			       conn_read_cb, c);
	c->write_ev = event_new(t->core->base, fd, EV_WRITE | EV_PERSIST,
				conn_write_cb, c);
	c->hello_ev = evtimer_new(t->core->base, conn_hello_cb, c);
	c->stall_ev = evtimer_new(t->core->base, conn_stall_cb, c);
	if (c->pidfd >= 0)
		c->pidfd_ev = event_new(t->core->base, c->pidfd, EV_READ,
					conn_pidfd_cb, c);
	ret = -ENOMEM;
	if (!c->read_ev || !c->write_ev || !c->hello_ev || !c->stall_ev ||
	    (c->pidfd >= 0 && !c->pidfd_ev))
		goto fail;
	if (c->pidfd_ev && event_add(c->pidfd_ev, NULL) < 0)
		goto fail;
	c->cl.id = id;
	ret = id ? 0 : id_next(&t->core->ids.clients, &c->cl.id);
	if (ret < 0)
		goto fail;
	TAILQ_INSERT_TAIL(&t->conns, c, link);
	charge_add_uint(&t->n_conns, 1, "the broker's connections");
	TAILQ_INSERT_TAIL(&c->cl.user->conns, c, user_link);
	user_charge_conn(c->cl.user);
	/* Listed first: a failure to arm dooms it (conn_kill()). */
	conn_arm(c->hello_ev, t->core->config.limits.hello_timeout_ms, c);
	conn_update_events(c);
	if (c->doomed) {
		conn_close(c);
		return -ENOMEM;
	}
	t->ops->opened(c);
	log_debug("client %" PRIu64 ": pid %d uid %u gid %u (%s) connected",
		  c->cl.id, (int)c->cl.cred.pid, c->cl.cred.uid, c->cl.cred.gid,
		  log_escape(comm, sizeof(comm), c->cl.comm));
	*ret_conn = c;
	return 0;

fail:
	if (ret == -ENOMEM)
		log_warn("cannot set up a new connection: out of memory");
	if (c->read_ev)
		event_free(c->read_ev);
	if (c->write_ev)
		event_free(c->write_ev);
	if (c->hello_ev)
		event_free(c->hello_ev);
	if (c->stall_ev)
		event_free(c->stall_ev);
	if (c->pidfd_ev)
		event_free(c->pidfd_ev);
	if (c->pidfd >= 0)
		close(c->pidfd);
	if (c->cl.user)
		user_unref(t->core, c->cl.user);
	close(fd);
	free(c->cl.groups);
	free(c->cl.cgroup);
	free(c);
	return ret;
}

void conn_hello_done(struct conn *c)
{
	c->cl.hello_done = true;
	if (c->hello_ev) {
		event_free(c->hello_ev);
		c->hello_ev = NULL;
	}
}

void conn_close(struct conn *c)
{
	struct conn_table *t = c->tab;
	struct outmsg *m;

	/* Already closing: a nested call (an Event that failed to reach it
	 * while it released its objects) must not free it twice. */
	if (c->state >= CONN_RELEASING)
		return;
	if (c->state == CONN_DEAD)
		TAILQ_REMOVE(&t->dead, c, dead_link);
	c->state = CONN_RELEASING;
	t->ops->closed(c);
	/* First: what its client still sent is applied, and the registry
	 * (the first family) keeps what it holds. */
	if (objects_client_holds(&c->cl))
		t->ops->drain(c);
	families_session_closing(&c->cl);
	log_debug("client %" PRIu64 ": disconnected after %" PRIu64 " requests",
		  c->cl.id, c->cl.requests);
	while ((m = TAILQ_FIRST(&c->outq))) {
		TAILQ_REMOVE(&c->outq, m, link);
		conn_pin_user(t, c->cl.user, m->nfds, false);
		c->queued_fds -= m->nfds;
		outmsg_free(m);
	}
	c->outq_bytes = 0;
	dctx_conn_release(t->core, &c->cl);
	domain_leave(t->core, &c->cl);
	event_free(c->read_ev);
	event_free(c->write_ev);
	if (c->hello_ev)
		event_free(c->hello_ev);
	if (c->pidfd_ev)
		event_free(c->pidfd_ev);
	if (c->pidfd >= 0)
		close(c->pidfd);
	TAILQ_REMOVE(&t->conns, c, link);
	charge_sub_uint(&t->n_conns, 1, "connections", "the broker");
	TAILQ_REMOVE(&c->cl.user->conns, c, user_link);
	user_uncharge_conn(c->cl.user);
	free(c->cl.groups);
	c->cl.groups = NULL;
	free(c->cl.cgroup);
	c->cl.cgroup = NULL;
	t->ops->gone(t);
	/* Descriptors still in the socket stay charged until the peer
	 * reads them or closes its end; shut down, it reads end of stream
	 * after them. */
	if (c->sent_fds && !t->stopping && !c->doomed &&
	    !conn_peer_caught_up(c)) {
		log_debug("client %" PRIu64 ": %u descriptors unread; its "
			  "socket lingers",
			  c->cl.id, c->sent_fds);
		shutdown(c->fd, SHUT_RDWR);
		c->state = CONN_LINGERING;
		event_del(c->stall_ev);
		TAILQ_INSERT_TAIL(&t->lingering, c, link);
		conn_arm(c->stall_ev, LINGER_POLL_MS, c);
		conn_wake_user(c->cl.user);
		return;
	}
	conn_release(c);
}

int conn_parse_read_on(const char *s, enum read_on *ret)
{
	static const char *const names[] = {
		[READ_ON_AUTO] = "auto",
		[READ_ON_ALWAYS] = "always",
		[READ_ON_NEVER] = "never",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(s, names[i]) == 0) {
			*ret = (enum read_on)i;
			return 0;
		}
	}
	return -EINVAL;
}

void conn_kill(struct conn *c, const char *why)
{
	struct conn_table *t = c->tab;

	if (c->state >= CONN_DEAD)
		return;
	if (why)
		conn_log_drop(c, why);
	c->state = CONN_DEAD;
	TAILQ_INSERT_TAIL(&t->dead, c, dead_link);
	conn_update_events(c);
	/* Without the event (a server still being set up), server_fini()
	 * closes it with the rest. */
	if (t->reap_ev)
		event_active(t->reap_ev, EV_TIMEOUT, 1);
}

/* conn_close() takes each off the list: what closing one releases may
 * mark others, which this loop then closes too. */
static void conns_reap(evutil_socket_t fd, short what, void *arg)
{
	struct conn_table *t = arg;
	struct conn *c;

	while ((c = TAILQ_FIRST(&t->dead)))
		conn_close(c);
}

void conns_init(struct conn_table *t, struct core *core,
		const struct conn_ops *ops)
{
	memset(t, 0, sizeof(*t));
	t->core = core;
	t->ops = ops;
	TAILQ_INIT(&t->conns);
	TAILQ_INIT(&t->lingering);
	TAILQ_INIT(&t->dead);
	t->refuse_rl.interval_ms = REFUSE_QUIET_MS;
}

void conn_refuse(int fd, int err, const char *message)
{
	Rdmab__DaemonMessage msg = RDMAB__DAEMON_MESSAGE__INIT;
	Rdmab__Reply reply = RDMAB__REPLY__INIT;
	static uint8_t buf[WIRE_MAX_PACKET];

	reply.error = err;
	reply.message = (char *)message;
	msg.kind_case = RDMAB__DAEMON_MESSAGE__KIND_REPLY;
	msg.reply = &reply;
	wire_send_msg(fd, &msg.base, buf, NULL, 0, MSG_DONTWAIT);
}

int conns_reap_init(struct conn_table *t)
{
	t->reap_ev = event_new(t->core->base, -1, 0, conns_reap, t);
	return t->reap_ev ? 0 : -ENOMEM;
}

void conns_limits_changed(struct conn_table *t)
{
	struct conn *c;

	/* A connection stopped by the old limits has no timer to look
	 * again when it holds nothing unread: only a change of its uid's
	 * count would wake it. conn_update_events() frees nothing. */
	TAILQ_FOREACH(c, &t->conns, link)
		conn_update_events(c);
}

void conns_lingering_free(struct conn_table *t)
{
	struct conn *c;

	while ((c = TAILQ_FIRST(&t->lingering))) {
		TAILQ_REMOVE(&t->lingering, c, link);
		conn_release(c);
	}
}

int conn_send(struct conn *c, const ProtobufCMessage *inner, unsigned int field,
	      bool bounded, const int *fds, unsigned int nfds)
{
	static uint8_t room[WIRE_PACK_ROOM];
	struct outmsg *m;
	uint8_t *buf;
	int len, ret;

	/* Its close is on its way: nothing more goes to it. */
	if (c->state == CONN_DEAD)
		return -EPIPE;
	if (c->outq_bytes > c->tab->outq_max * OUTQ_HARD_FACTOR) {
		char why[64];

		snprintf(why, sizeof(why),
			 "more than %zu KiB of replies unread",
			 c->tab->outq_max * OUTQ_HARD_FACTOR / 1024);
		conn_log_drop(c, why);
		conn_set_closing(c);
		return -EPIPE;
	}
	len = wire_pack_daemon_message(inner, field, bounded, room, &buf);
	if (len < 0)
		return len;
	/* Most replies go out at once, without a copy; the queue is for
	 * the rest. */
	if (TAILQ_EMPTY(&c->outq)) {
		int64_t t0 = conn_now_ns();

		ret = wire_send(c->fd, buf, (size_t)len, fds, nfds,
				MSG_DONTWAIT);
		conn_note_send(c, ret == 0 ? conn_now_ns() - t0 : 0);
		if (ret == 0 && !nfds)
			return 0;
		if (ret == 0) {
			/* Pinned until the peer reads them: that may stop
			 * the reading of its requests. */
			c->sent_fds += nfds;
			conn_pin_user(c->tab, c->cl.user, nfds, true);
			conn_update_events(c);
			return 0;
		}
		if (ret != -EAGAIN) {
			conn_set_closing(c);
			return ret;
		}
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->buf = malloc((size_t)len ? (size_t)len : 1);
	if (!m->buf) {
		ret = -ENOMEM;
		goto fail;
	}
	memcpy(m->buf, buf, (size_t)len);
	m->len = (size_t)len;
	for (; m->nfds < nfds; m->nfds++) {
		m->fds[m->nfds] = fcntl(fds[m->nfds], F_DUPFD_CLOEXEC, 3);
		if (m->fds[m->nfds] < 0) {
			ret = -errno;
			goto fail;
		}
	}
	TAILQ_INSERT_TAIL(&c->outq, m, link);
	c->outq_bytes += m->len;
	c->queued_fds += m->nfds;
	conn_pin_user(c->tab, c->cl.user, m->nfds, true);
	conn_update_events(c);
	return 0;

fail:
	outmsg_free(m);
	return ret;
}

int conn_send_event(struct conn *c, Rdmab__Event *ev)
{
	/* Events are a few names and reasons: bounded. */
	return conn_send(c, &ev->base, RDMAB__DAEMON_MESSAGE__KIND_EVENT, true,
			 NULL, 0);
}

void conn_set_closing(struct conn *c)
{
	if (c->state < CONN_CLOSING)
		c->state = CONN_CLOSING;
}

void conn_close_after_flush(struct conn *c)
{
	conn_set_closing(c);
	/* Flushed (or the socket failed): the loop closes it, never the
	 * caller, who may be serving it or walking what its close frees;
	 * otherwise conn_write_cb() closes it once the queue is out. */
	if (conn_flush(c) != -EAGAIN) {
		conn_kill(c, NULL);
		return;
	}
	conn_update_events(c);
}
