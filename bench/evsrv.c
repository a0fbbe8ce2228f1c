// SPDX-License-Identifier: MIT
/*
 * bench-evsrv: the baseline of "daemon CPU per request". The least a
 * libevent SOCK_SEQPACKET server can do per request: accept4 +
 * SO_PEERCRED per connection, one event_new(EV_READ | EV_PERSIST) per
 * connection, and per readable event one recv() and one send() of a
 * packet as large as the broker's reply. No decoding, no allocation.
 *
 * Usage: bench-evsrv --socket PATH --reply-size BYTES
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	unsigned long conns;
};

struct evconn {
	struct evsrv *srv;
	struct event *ev;
	int fd;
	struct ucred cred;
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

static void evconn_cb(evutil_socket_t fd, short what, void *arg)
{
	struct evconn *c = arg;
	ssize_t n;

	n = recv(fd, rx_buf, sizeof(rx_buf), 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		evconn_free(c);
		return;
	}
	if (send(fd, tx_buf, c->srv->reply_size, MSG_NOSIGNAL) < 0 &&
	    errno != EAGAIN)
		evconn_free(c);
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
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
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
		{ 0 },
	};
	struct evsrv srv = { .listen_fd = -1 };
	struct event *lev = NULL, *sev[2] = { NULL, NULL };
	const char *path = NULL;
	long size = -1;
	int c, ret;

	alarm(BENCH_ALARM_S);
	while ((c = getopt_long(argc, argv, "s:n:", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			path = optarg;
			break;
		case 'n':
			size = strtol(optarg, NULL, 10);
			break;
		default:
			return 2;
		}
	}
	if (!path || size < 1 || size > EVSRV_MAX_PACKET) {
		fprintf(stderr, "usage: bench-evsrv --socket PATH "
				"--reply-size 1..65536\n");
		return 2;
	}
	srv.reply_size = (size_t)size;
	memset(tx_buf, 'r', sizeof(tx_buf));
	signal(SIGPIPE, SIG_IGN);

	srv.base = event_base_new();
	if (!srv.base)
		return 1;
	ret = evsrv_listen(path, &srv.listen_fd);
	if (ret < 0) {
		fprintf(stderr, "bench-evsrv: cannot listen on %s: %s\n",
			path, strerror(-ret));
		event_base_free(srv.base);
		return 1;
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
	unlink(path);
	event_base_free(srv.base);
	return ret < 0 ? 1 : 0;
}
