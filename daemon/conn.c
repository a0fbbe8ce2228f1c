// SPDX-License-Identifier: MIT
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/conn.h"
#include "daemon/dispatch.h"
#include "daemon/domain.h"
#include "daemon/log.h"
#include "daemon/objects.h"
#include "daemon/server.h"

/* Unread replies beyond outq_max stop the reading of requests; events may
 * still be queued up to this multiple before the client is dropped. */
#define OUTQ_HARD_FACTOR 4

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

static void conn_update_events(struct conn *c)
{
	bool want_read = !c->closing && c->outq_bytes < c->srv->opt.outq_max;

	if (want_read != c->reading) {
		if (want_read)
			event_add(c->read_ev, NULL);
		else
			event_del(c->read_ev);
		c->reading = want_read;
	}
	if (TAILQ_EMPTY(&c->outq))
		event_del(c->write_ev);
	else
		event_add(c->write_ev, NULL);
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
		outmsg_free(m);
	}
	return 0;
}

static void conn_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	int ret = conn_flush(c);

	if (ret < 0 && ret != -EAGAIN) {
		log_debug("client %" PRIu64 ": send: %s", c->id,
			  strerror(-ret));
		conn_close(c);
		return;
	}
	if (c->closing && ret == 0) {
		conn_close(c);
		return;
	}
	conn_update_events(c);
}

static void conn_read_cb(evutil_socket_t fd, short what, void *arg)
{
	static uint8_t buf[WIRE_MAX_PACKET];
	struct conn *c = arg;
	struct wire_fds fds;
	int n;

	n = wire_recv(c->fd, buf, sizeof(buf), &fds, MSG_DONTWAIT);
	if (n == -EAGAIN)
		return;
	if (n == 0) {
		conn_close(c);
		return;
	}
	if (n == -EMSGSIZE || n == -EPROTO) {
		log_notice("client %" PRIu64 " (pid %d): %s; disconnecting",
			   c->id, (int)c->cred.pid,
			   n == -EMSGSIZE ? "packet larger than 64 KiB" :
					    "descriptors did not fit");
		dispatch_error(c, 0, -n,
			       n == -EMSGSIZE ?
				       "packet larger than the 64 KiB limit" :
				       "too many descriptors or a foreign "
				       "control message");
		conn_close_after_flush(c);
		return;
	}
	if (n < 0) {
		log_debug("client %" PRIu64 ": recv: %s", c->id,
			  strerror(-n));
		conn_close(c);
		return;
	}
	/* dispatch_packet owns the descriptors and may close the conn. */
	dispatch_packet(c, buf, (size_t)n, &fds);
}

static void conn_pidfd_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	log_debug("client %" PRIu64 ": process %d exited", c->id,
		  (int)c->cred.pid);
	conn_close(c);
}

static void conn_read_comm(struct conn *c)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)c->cred.pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, c->comm, sizeof(c->comm) - 1);
	close(fd);
	if (n <= 0)
		return;
	c->comm[n] = '\0';
	c->comm[strcspn(c->comm, "\n")] = '\0';
}

/* The peer's supplementary groups, as they were at connect. */
static int conn_read_groups(struct conn *c)
{
	socklen_t len = 64 * sizeof(gid_t);

	for (int tries = 0; tries < 2; tries++) {
		gid_t *g = realloc(c->groups, len ? len : sizeof(gid_t));

		if (!g)
			return -ENOMEM;
		c->groups = g;
		if (getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) == 0) {
			c->n_groups = len / sizeof(gid_t);
			return 0;
		}
		if (errno != ERANGE)
			return -errno;
	}
	return -ERANGE;
}

static int conn_pidfd_open(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	errno = ENOSYS;
	return -1;
#endif
}

int conn_new(struct server *srv, int fd, struct conn **ret_conn)
{
	socklen_t len = sizeof(struct ucred);
	struct conn *c;
	int ret;

	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->srv = srv;
	c->fd = fd;
	c->pidfd = -1;
	TAILQ_INIT(&c->outq);
	TAILQ_INIT(&c->ctxs);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c->cred, &len) < 0) {
		ret = -errno;
		goto fail;
	}
	ret = conn_read_groups(c);
	if (ret < 0)
		goto fail;
	/* pidfd_open is CLOEXEC by definition. A peer that already exited
	 * (ESRCH) is caught by the EOF that follows. */
	c->pidfd = conn_pidfd_open(c->cred.pid);
	conn_read_comm(c);
	c->read_ev = event_new(srv->base, fd, EV_READ | EV_PERSIST,
			       conn_read_cb, c);
	c->write_ev = event_new(srv->base, fd, EV_WRITE | EV_PERSIST,
				conn_write_cb, c);
	if (c->pidfd >= 0)
		c->pidfd_ev = event_new(srv->base, c->pidfd, EV_READ,
					conn_pidfd_cb, c);
	if (!c->read_ev || !c->write_ev || (c->pidfd >= 0 && !c->pidfd_ev)) {
		ret = -ENOMEM;
		goto fail;
	}
	if (c->pidfd_ev)
		event_add(c->pidfd_ev, NULL);
	c->id = ++srv->next_client_id;
	TAILQ_INSERT_TAIL(&srv->conns, c, link);
	srv->n_conns++;
	conn_update_events(c);
	server_status_dirty(srv);
	log_debug("client %" PRIu64 ": pid %d uid %u gid %u (%s) connected",
		  c->id, (int)c->cred.pid, c->cred.uid, c->cred.gid, c->comm);
	*ret_conn = c;
	return 0;

fail:
	if (c->read_ev)
		event_free(c->read_ev);
	if (c->write_ev)
		event_free(c->write_ev);
	if (c->pidfd_ev)
		event_free(c->pidfd_ev);
	if (c->pidfd >= 0)
		close(c->pidfd);
	close(fd);
	free(c->groups);
	free(c);
	return ret;
}

void conn_close(struct conn *c)
{
	struct server *srv = c->srv;
	struct outmsg *m;

	/* First: it still reads the socket. */
	objects_conn_closing(c);
	log_debug("client %" PRIu64 ": disconnected after %" PRIu64
		  " requests",
		  c->id, c->requests);
	while ((m = TAILQ_FIRST(&c->outq))) {
		TAILQ_REMOVE(&c->outq, m, link);
		outmsg_free(m);
	}
	dctx_conn_release(srv, c);
	domain_leave(srv, c);
	event_free(c->read_ev);
	event_free(c->write_ev);
	if (c->pidfd_ev)
		event_free(c->pidfd_ev);
	if (c->pidfd >= 0)
		close(c->pidfd);
	close(c->fd);
	TAILQ_REMOVE(&srv->conns, c, link);
	srv->n_conns--;
	free(c->groups);
	free(c);
	server_conn_gone(srv);
}

int conn_send(struct conn *c, const ProtobufCMessage *inner,
	      unsigned int field, bool bounded, const int *fds,
	      unsigned int nfds)
{
	static uint8_t room[WIRE_PACK_ROOM];
	struct outmsg *m;
	uint8_t *buf;
	int len, ret;

	if (c->outq_bytes > c->srv->opt.outq_max * OUTQ_HARD_FACTOR) {
		log_notice("client %" PRIu64 " (pid %d) does not read its "
			   "replies; disconnecting",
			   c->id, (int)c->cred.pid);
		c->closing = true;
		return -EPIPE;
	}
	len = wire_pack_daemon_message(inner, field, bounded, room, &buf);
	if (len < 0)
		return len;
	/* Most replies go out at once, without a copy; the queue is for
	 * the rest. */
	if (TAILQ_EMPTY(&c->outq)) {
		ret = wire_send(c->fd, buf, (size_t)len, fds, nfds,
				MSG_DONTWAIT);
		if (ret == 0)
			return 0;
		if (ret != -EAGAIN) {
			c->closing = true;
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

void conn_close_after_flush(struct conn *c)
{
	c->closing = true;
	if (conn_flush(c) != -EAGAIN) {
		conn_close(c);
		return;
	}
	conn_update_events(c);
}
