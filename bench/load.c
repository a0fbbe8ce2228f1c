// SPDX-License-Identifier: MIT
/*
 * Closed-loop load: one client process holds N connections with one
 * request outstanding on each, single-threaded on epoll, and sends the
 * broker's own packets (a Ping Request packed by protobuf-c after a hello)
 * to whichever server it is pointed at. The same code, packets and sizes
 * drive the broker and the libevent baseline.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/bench.h"

#define LOAD_MAX_PACKET 4096
#define LOAD_HELLO_TIMEOUT_MS 5000
#define LOAD_REPLY_TIMEOUT_MS 10000

struct load_conn {
	int fd;
	uint64_t t_sent;
};

struct load {
	int epfd;
	unsigned int n;
	struct load_conn *c;
	const uint8_t *payload;
	size_t plen;
	size_t req_len;
	size_t rep_len;
	unsigned long sent;
};

/* One counter for every load of the run keeps all serials in the range
 * that packs to the same size. */
static uint64_t load_serial = PKT_SERIAL_START;

static int load_next_serial(uint64_t *ret)
{
	if (load_serial >= PKT_SERIAL_END)
		return -ERANGE;
	*ret = load_serial++;
	return 0;
}

static int load_hello(struct load *l, int fd, int broker)
{
	uint8_t buf[LOAD_MAX_PACKET];
	uint64_t serial;
	int len, ret;

	ret = load_next_serial(&serial);
	if (ret < 0)
		return ret;
	len = pkt_hello(buf, sizeof(buf), serial);
	if (len < 0)
		return len;
	if (send(fd, buf, (size_t)len, MSG_NOSIGNAL) < 0)
		return -errno;
	l->sent++;
	len = recv_timeout(fd, buf, sizeof(buf), LOAD_HELLO_TIMEOUT_MS);
	if (len < 0)
		return len;
	if (broker)
		return pkt_check_reply(buf, (size_t)len, serial, PKT_BODY_HELLO,
				       NULL, 0);
	return 0;
}

int load_open(const char *path, unsigned int n, int broker,
	      const uint8_t *payload, size_t plen, size_t req_len,
	      size_t rep_len, struct load **ret)
{
	struct load *l;
	int err;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->c = calloc(n, sizeof(*l->c));
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!l->c || l->epfd < 0) {
		err = l->c ? -errno : -ENOMEM;
		goto fail;
	}
	l->payload = payload;
	l->plen = plen;
	l->req_len = req_len;
	l->rep_len = rep_len;
	for (; l->n < n; l->n++) {
		struct epoll_event ev = { .events = EPOLLIN };
		struct load_conn *c = &l->c[l->n];

		err = unix_connect(path, &c->fd);
		if (err < 0)
			goto fail;
		ev.data.u32 = l->n;
		if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
			err = -errno;
			close(c->fd);
			goto fail;
		}
		err = load_hello(l, c->fd, broker);
		if (err < 0) {
			close(c->fd);
			goto fail;
		}
	}
	*ret = l;
	return 0;

fail:
	load_close(l);
	return err;
}

static int load_send(struct load *l, struct load_conn *c)
{
	uint8_t buf[LOAD_MAX_PACKET];
	uint64_t serial;
	int len, ret;

	ret = load_next_serial(&serial);
	if (ret < 0)
		return ret;
	len = pkt_ping(buf, sizeof(buf), serial, l->payload, l->plen);
	if (len < 0)
		return len;
	if ((size_t)len != l->req_len)
		return -EPROTO;
	c->t_sent = now_ns();
	if (send(c->fd, buf, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return -errno;
	l->sent++;
	return 0;
}

int load_run(struct load *l, unsigned long requests, pid_t server,
	     uint64_t *lat, struct load_result *ret)
{
	struct epoll_event evs[256];
	unsigned long sent = 0, done = 0;
	uint64_t cpu0, cpu1, t0, t1;
	uint8_t buf[LOAD_MAX_PACKET];
	int err;

	err = cpu_time_ns(server, &cpu0);
	if (err < 0)
		return err;
	t0 = now_ns();
	for (unsigned int i = 0; i < l->n && sent < requests; i++, sent++) {
		err = load_send(l, &l->c[i]);
		if (err < 0)
			return err;
	}
	while (done < sent) {
		int k = epoll_wait(l->epfd, evs, 256, LOAD_REPLY_TIMEOUT_MS);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -ETIMEDOUT;
		for (int j = 0; j < k; j++) {
			struct load_conn *c = &l->c[evs[j].data.u32];
			ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);

			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (n < 0)
				return -errno;
			if (n == 0)
				return -ECONNRESET;
			if ((size_t)n != l->rep_len)
				return -EPROTO;
			lat[done++] = now_ns() - c->t_sent;
			if (sent < requests) {
				err = load_send(l, c);
				if (err < 0)
					return err;
				sent++;
			}
		}
	}
	t1 = now_ns();
	err = cpu_time_ns(server, &cpu1);
	if (err < 0)
		return err;
	ret->requests = done;
	ret->server_cpu_us = (double)(cpu1 - cpu0) / 1e3 / (double)done;
	ret->wall_us = (double)(t1 - t0) / 1e3 / (double)done;
	ret->lat_median_us = (double)quantile_u64(lat, done, 0.5) / 1e3;
	ret->lat_p99_us = (double)quantile_u64(lat, done, 0.99) / 1e3;
	return 0;
}

unsigned long load_sent(const struct load *l)
{
	return l->sent;
}

void load_close(struct load *l)
{
	if (!l)
		return;
	for (unsigned int i = 0; i < l->n; i++)
		close(l->c[i].fd);
	if (l->epfd >= 0)
		close(l->epfd);
	free(l->c);
	free(l);
}
