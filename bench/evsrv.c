// SPDX-License-Identifier: MIT
/*
 * bench-evsrv: the event-driven floor, the baseline of "daemon CPU per
 * request" and of the RTTs against it. The least a libevent
 * SOCK_SEQPACKET server can do per request with the daemon's system calls
 * (compare `strace -f rdmabrokerd`): accept4 + SO_PEERCRED per connection,
 * one event_new(EV_READ | EV_PERSIST) per connection, and per readable
 * event one epoll_wait, one recv(MSG_DONTWAIT | MSG_TRUNC) (requests carry
 * no descriptors: wire_recv_bare()), and one send(MSG_DONTWAIT |
 * MSG_NOSIGNAL) of a packet as large as the broker's reply. No decoding,
 * no allocation.
 *
 * With --fd-reply-size, replies alternate like the broker's to
 * ibc_open + ibc_close: one of that size carrying a descriptor
 * (sendmsg + SCM_RIGHTS), then one of --reply-size carrying none.
 *
 * Usage: bench-evsrv --socket PATH --reply-size BYTES [--fd-reply-size B]
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "bench/bench.h"

#define EVSRV_MAX_PACKET (64 * 1024)

struct evsrv {
	struct event_base *base;
	int listen_fd;
	size_t reply_size;
	/* 0: every reply is reply_size bytes without a descriptor. */
	size_t fd_reply_size;
	int reply_fd;
	unsigned long conns;
};

struct evconn {
	struct evsrv *srv;
	struct event *ev;
	int fd;
	struct ucred cred;
	/* The next reply carries the descriptor (--fd-reply-size). */
	bool fd_next;
};

static uint8_t rx_buf[EVSRV_MAX_PACKET];
static uint8_t tx_buf[EVSRV_MAX_PACKET];

static void evconn_free(struct evconn *c)
{
	event_free(c->ev);
	close(c->fd);
	c->srv->conns--;
	free(c);
}

/* One reply carrying the descriptor, as the daemon sends a context. */
static ssize_t evconn_send_fd(int fd, const struct evsrv *srv)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cbuf;
	struct iovec iov = {
		.iov_base = tx_buf,
		.iov_len = srv->fd_reply_size,
	};
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf.buf,
		.msg_controllen = sizeof(cbuf.buf),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &srv->reply_fd, sizeof(int));
	return sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void evconn_cb(evutil_socket_t fd, short what, void *arg)
{
	struct evconn *c = arg;
	const struct evsrv *srv = c->srv;
	ssize_t n;

	n = recv(fd, rx_buf, sizeof(rx_buf), MSG_DONTWAIT | MSG_TRUNC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		evconn_free(c);
		return;
	}
	if (c->fd_next)
		n = evconn_send_fd(fd, srv);
	else
		n = send(fd, tx_buf, srv->reply_size,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0 && errno != EAGAIN) {
		evconn_free(c);
		return;
	}
	if (srv->fd_reply_size)
		c->fd_next = !c->fd_next;
}

static void evsrv_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct evsrv *srv = arg;

	for (;;) {
		socklen_t len = sizeof(struct ucred);
		struct evconn *c;
		int fd;

		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				fprintf(stderr, "bench-evsrv: accept: %s\n",
					strerror(errno));
			return;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->srv = srv;
		c->fd = fd;
		c->fd_next = srv->fd_reply_size > 0;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c->cred, &len) <
		    0) {
			close(fd);
			free(c);
			continue;
		}
		c->ev = event_new(srv->base, fd, EV_READ | EV_PERSIST,
				  evconn_cb, c);
		if (!c->ev || event_add(c->ev, NULL) < 0) {
			if (c->ev)
				event_free(c->ev);
			close(fd);
			free(c);
			continue;
		}
		srv->conns++;
	}
}

static void evsrv_signal_cb(evutil_socket_t sig, short what, void *arg)
{
	event_base_loopexit(arg, NULL);
}

static int evsrv_listen(const char *path, int *ret_fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 128) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	*ret_fd = fd;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "reply-size", required_argument, NULL, 'n' },
		{ "fd-reply-size", required_argument, NULL, 'f' },
		{ 0 },
	};
	struct evsrv srv = { .listen_fd = -1, .reply_fd = -1 };
	struct event *lev = NULL, *sev[2] = { NULL, NULL };
	const char *path = NULL;
	long size = -1, fd_size = 0;
	int c, ret;

	alarm(BENCH_ALARM_S);
	while ((c = getopt_long(argc, argv, "s:n:f:", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			path = optarg;
			break;
		case 'n':
			size = strtol(optarg, NULL, 10);
			break;
		case 'f':
			fd_size = strtol(optarg, NULL, 10);
			break;
		default:
			return 2;
		}
	}
	if (!path || size < 1 || size > EVSRV_MAX_PACKET || fd_size < 0 ||
	    fd_size > EVSRV_MAX_PACKET) {
		fprintf(stderr, "usage: bench-evsrv --socket PATH "
				"--reply-size 1..65536 "
				"[--fd-reply-size 1..65536]\n");
		return 2;
	}
	srv.reply_size = (size_t)size;
	srv.fd_reply_size = (size_t)fd_size;
	memset(tx_buf, 'r', sizeof(tx_buf));
	signal(SIGPIPE, SIG_IGN);

	srv.base = event_base_new();
	if (!srv.base)
		return 1;
	ret = evsrv_listen(path, &srv.listen_fd);
	if (ret < 0) {
		fprintf(stderr, "bench-evsrv: cannot listen on %s: %s\n", path,
			strerror(-ret));
		event_base_free(srv.base);
		return 1;
	}
	/* The same descriptor every time, as the broker re-sends the
	 * domain's context. */
	if (srv.fd_reply_size) {
		srv.reply_fd = memfd_create("bench-evsrv", MFD_CLOEXEC);
		if (srv.reply_fd < 0) {
			ret = -errno;
			fprintf(stderr, "bench-evsrv: memfd_create: %s\n",
				strerror(-ret));
			goto out;
		}
	}
	lev = event_new(srv.base, srv.listen_fd, EV_READ | EV_PERSIST,
			evsrv_accept_cb, &srv);
	sev[0] = evsignal_new(srv.base, SIGTERM, evsrv_signal_cb, srv.base);
	sev[1] = evsignal_new(srv.base, SIGINT, evsrv_signal_cb, srv.base);
	if (!lev || !sev[0] || !sev[1] || event_add(lev, NULL) < 0 ||
	    event_add(sev[0], NULL) < 0 || event_add(sev[1], NULL) < 0) {
		ret = -ENOMEM;
		goto out;
	}
	ret = event_base_dispatch(srv.base) < 0 ? -EIO : 0;
out:
	for (int i = 0; i < 2; i++)
		if (sev[i])
			event_free(sev[i]);
	if (lev)
		event_free(lev);
	close(srv.listen_fd);
	if (srv.reply_fd >= 0)
		close(srv.reply_fd);
	unlink(path);
	event_base_free(srv.base);
	return ret < 0 ? 1 : 0;
}
