// SPDX-License-Identifier: MIT
/*
 * make bench-loops: what waiting in an event loop costs a round trip on
 * this machine, before any daemon logic. One client, every peer and the
 * driver pinned to CPU 0, the sides measured in the same run in
 * alternating rounds; each peer answers a request with a reply of the same
 * size:
 *
 *   blocking  recv + send, make bench's raw peer (peer_alternate()): the
 *             round trip every make bench figure is divided by;
 *   epoll     epoll_wait + recv(MSG_DONTWAIT) + send: the daemon's system
 *             calls, without libevent;
 *   recvmsg   the same with recvmsg(2) and room for descriptors, as the
 *             daemon read requests before it took recv(2);
 *   libevent  the same under event_base_dispatch (EV_READ | EV_PERSIST), as
 *             bench-evsrv and the daemon run it;
 *   io_uring  built with liburing: one io_uring_enter submits the reply and
 *             the next receive and waits for it (DEFER_TASKRUN where the
 *             kernel has it), the loop that would spare the daemon its
 *             epoll_wait.
 *
 * A ratio is a side's median round against the blocking side's; the range
 * is the 10th to 90th percentile of the rounds' own ratios.
 *
 * Usage: rdmab-bench-loops [--rounds N] [--iters N] [--size BYTES]
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#ifdef HAVE_LIBURING
#include <liburing.h>
#endif

#include "bench/bench.h"
#include "proto/wire.h"

#define LOOP_MAX_PACKET 4096
#define LOOP_WARMUP 200

/* --- the peers ---------------------------------------------------------- */

/* make bench's raw peer itself (peer_alternate()), answering the size
 * @arg points to. */
static int loop_blocking(int fd, const void *arg)
{
	const size_t *size = arg;
	const size_t rep_len[2] = { *size, *size };

	return peer_alternate(fd, rep_len, -1);
}

/* One request read (@msg: with wire_recv(), the recvmsg(2) the daemon
 * read requests with before) and answered; 1 when the peer closed,
 * -errno. */
static int loop_answer(int fd, bool msg)
{
	static uint8_t buf[LOOP_MAX_PACKET];
	struct wire_fds fds;
	ssize_t n;

	if (msg) {
		n = wire_recv(fd, buf, sizeof(buf), &fds, MSG_DONTWAIT);
		wire_fds_close(&fds);
		if (n < 0)
			return n == -EAGAIN ? 0 : (int)n;
	} else {
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	}
	if (n == 0)
		return 1;
	if (send(fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		return -errno;
	return 0;
}

static int loop_epoll_run(int fd, bool msg)
{
	struct epoll_event ev = { .events = EPOLLIN }, out[8];
	int ep = epoll_create1(EPOLL_CLOEXEC), ret = 0;

	if (ep < 0)
		return -errno;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		ret = -errno;
	while (ret == 0) {
		if (epoll_wait(ep, out, 8, -1) < 0 && errno != EINTR)
			ret = -errno;
		else
			ret = loop_answer(fd, msg);
	}
	close(ep);
	return ret < 0 ? ret : 0;
}

static int loop_epoll(int fd, const void *arg)
{
	return loop_epoll_run(fd, false);
}

/* What the daemon read requests with until it took recv(2). */
static int loop_epoll_recvmsg(int fd, const void *arg)
{
	return loop_epoll_run(fd, true);
}

struct loop_ev {
	struct event_base *base;
	int ret;
};

static void loop_libevent_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loop_ev *l = arg;

	l->ret = loop_answer(fd, false);
	if (l->ret)
		event_base_loopbreak(l->base);
}

static int loop_libevent(int fd, const void *arg)
{
	struct loop_ev l = { .base = event_base_new() };
	struct event *ev;

	if (!l.base)
		return -ENOMEM;
	ev = event_new(l.base, fd, EV_READ | EV_PERSIST, loop_libevent_cb, &l);
	if (!ev || event_add(ev, NULL) < 0 || event_base_dispatch(l.base) < 0)
		l.ret = -EIO;
	if (ev)
		event_free(ev);
	event_base_free(l.base);
	return l.ret < 0 ? l.ret : 0;
}

#ifdef HAVE_LIBURING
enum { URING_RECV = 1, URING_SEND = 2 };

static int loop_uring_init(struct io_uring *ring)
{
	struct io_uring_params p = {
		.flags =
			IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
	};

	/* Kernels before 6.1 refuse the flags: the plain ring then. */
	if (io_uring_queue_init_params(8, ring, &p) == 0)
		return 0;
	return io_uring_queue_init(8, ring, 0);
}

static void loop_uring_prep(struct io_uring *ring, int op, int fd, void *buf,
			    size_t len)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (op == URING_RECV)
		io_uring_prep_recv(sqe, fd, buf, len, 0);
	else
		io_uring_prep_send(sqe, fd, buf, len, MSG_NOSIGNAL);
	io_uring_sqe_set_data64(sqe, (uint64_t)op);
}

static int loop_uring(int fd, const void *arg)
{
	static uint8_t rx[LOOP_MAX_PACKET], tx[LOOP_MAX_PACKET];
	struct io_uring ring;
	unsigned int wait = 1;
	int ret = loop_uring_init(&ring);

	if (ret < 0)
		return ret;
	loop_uring_prep(&ring, URING_RECV, fd, rx, sizeof(rx));
	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned int head, seen = 0;
		bool eof = false;
		int got = 0;

		ret = io_uring_submit_and_wait(&ring, wait);
		if (ret < 0 && ret != -EINTR)
			break;
		ret = 0;
		io_uring_for_each_cqe(&ring, head, cqe) {
			seen++;
			if (cqe->res < 0)
				ret = cqe->res;
			else if (io_uring_cqe_get_data64(cqe) == URING_RECV)
				eof = !(got = cqe->res);
		}
		io_uring_cq_advance(&ring, seen);
		if (ret < 0 || eof)
			break;
		/* Only the last reply's send completed: wait for the
		 * request. */
		wait = 1;
		if (!got)
			continue;
		memcpy(tx, rx, (size_t)got);
		loop_uring_prep(&ring, URING_SEND, fd, tx, (size_t)got);
		loop_uring_prep(&ring, URING_RECV, fd, rx, sizeof(rx));
		wait = 2;
	}
	io_uring_queue_exit(&ring);
	return ret;
}
#endif

/* --- the driver --------------------------------------------------------- */

#ifdef HAVE_LIBURING
/* A kernel or a seccomp filter may refuse io_uring: that side is left out,
 * not the run failed. */
static int loop_uring_probe(void)
{
	struct io_uring ring;
	int ret = loop_uring_init(&ring);

	if (ret == 0)
		io_uring_queue_exit(&ring);
	return ret;
}
#endif

static const struct side {
	const char *name;
	int (*fn)(int fd, const void *arg);
	/* NULL: always there; else 0 or why not (-errno). */
	int (*probe)(void);
} sides[] = {
	{ "blocking", loop_blocking, NULL },
	{ "epoll", loop_epoll, NULL },
	{ "recvmsg", loop_epoll_recvmsg, NULL },
	{ "libevent", loop_libevent, NULL },
#ifdef HAVE_LIBURING
	{ "io_uring", loop_uring, loop_uring_probe },
#endif
};
#define N_SIDES (sizeof(sides) / sizeof(sides[0]))

/* @iters round trips of @size bytes on @fd; ns a round trip, or 0. */
static double loop_round(int fd, size_t size, unsigned int iters)
{
	static uint8_t buf[LOOP_MAX_PACKET];
	uint64_t t = 0;

	for (unsigned int i = 0; i < LOOP_WARMUP + iters; i++) {
		if (i == LOOP_WARMUP)
			t = now_ns();
		if (send(fd, buf, size, MSG_NOSIGNAL) < 0 ||
		    recv(fd, buf, sizeof(buf), 0) != (ssize_t)size)
			return 0;
	}
	return (double)(now_ns() - t) / iters;
}

static int loop_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The @p quantile of @v (the element at rank p * (n - 1), rounded), which
 * it sorts. */
static double loop_quantile(double *v, size_t n, double p)
{
	qsort(v, n, sizeof(*v), loop_cmp);
	return v[(size_t)(p * (double)(n - 1) + 0.5)];
}

/* The median of @v, through the scratch array @tmp. */
static double loop_median(const double *v, size_t n, double *tmp)
{
	memcpy(tmp, v, n * sizeof(*v));
	return loop_quantile(tmp, n, 0.5);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rdmab-bench-loops [--rounds N] [--iters N] "
		"[--size BYTES]\n"
		"  --rounds N    rounds, each side taking one a round "
		"(60)\n"
		"  --iters N     round trips a side takes in a round "
		"(1000)\n"
		"  --size BYTES  request and reply size (17, the broker's "
		"CQ create; 1..%d)\n",
		LOOP_MAX_PACKET);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "iters", required_argument, NULL, 'i' },
		{ "size", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned int rounds = 60, iters = 1000;
	size_t size = 17;
	/* The sides that run, in sides[] order: the first is blocking. */
	size_t side_of[N_SIDES], n = 0;
	int fds[N_SIDES], opt, ret = 0;
	pid_t pids[N_SIDES];
	double *ns, *q;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		unsigned long v = 0, lo = 0, hi = 0;
		int bad = 0;

		switch (opt) {
		case 'r':
			lo = 5, hi = 10000;
			bad = parse_ulong(optarg, lo, hi, &v);
			rounds = (unsigned int)v;
			break;
		case 'i':
			lo = 10, hi = 1000000;
			bad = parse_ulong(optarg, lo, hi, &v);
			iters = (unsigned int)v;
			break;
		case 's':
			lo = 1, hi = LOOP_MAX_PACKET;
			bad = parse_ulong(optarg, lo, hi, &v);
			size = v;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		if (bad) {
			fprintf(stderr,
				"rdmab-bench-loops: --%s takes a "
				"number from %lu to %lu, not \"%s\"\n",
				longopts[opt == 'r' ? 0 :
					 opt == 'i' ? 1 :
						      2]
					.name,
				lo, hi, optarg);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	ns = calloc(N_SIDES * rounds, sizeof(*ns));
	q = calloc(rounds, sizeof(*q));
	if (!ns || !q || pin_self() < 0) {
		fprintf(stderr, "rdmab-bench-loops: cannot set up: %s\n",
			strerror(ns && q ? errno : ENOMEM));
		ret = -ENOMEM;
		goto out;
	}
	for (size_t s = 0; s < N_SIDES; s++) {
		int why = sides[s].probe ? sides[s].probe() : 0;

		if (why < 0) {
			printf("(%s left out: %s)\n", sides[s].name,
			       strerror(-why));
			continue;
		}
		ret = raw_peer_start(sides[s].fn, &size, &fds[n], &pids[n]);
		if (ret < 0) {
			fprintf(stderr, "rdmab-bench-loops: %s peer: %s\n",
				sides[s].name, strerror(-ret));
			goto out;
		}
		side_of[n++] = s;
	}
	/* Each round starts at the next side, so that no side always
	 * follows the same one. */
	for (unsigned int r = 0; r < rounds && ret == 0; r++)
		for (size_t k = 0; k < n && ret == 0; k++) {
			size_t i = (r + k) % n;

			ns[i * rounds + r] = loop_round(fds[i], size, iters);
			if (!ns[i * rounds + r]) {
				fprintf(stderr,
					"rdmab-bench-loops: the %s "
					"peer stopped answering\n",
					sides[side_of[i]].name);
				ret = -EIO;
			}
		}
	if (ret == 0) {
		double base = loop_median(ns, rounds, q);

		printf("rdmab-bench-loops: %zu-byte round trips, every process "
		       "on CPU %d; %u rounds of %u a side,\n  the sides "
		       "alternating; a side's figure is its median round\n\n",
		       size, BENCH_CPU, rounds, iters);
		printf("%-10s %10s %7s  %s\n", "loop", "ns/rt", "ratio",
		       "rounds' ratios, p10..p90");
		for (size_t i = 0; i < n; i++) {
			double med = loop_median(ns + i * rounds, rounds, q);

			for (unsigned int r = 0; r < rounds; r++)
				q[r] = ns[i * rounds + r] / ns[r];
			printf("%-10s %10.0f %7.2f  %.2f..%.2f\n",
			       sides[side_of[i]].name, med, med / base,
			       loop_quantile(q, rounds, 0.1),
			       loop_quantile(q, rounds, 0.9));
		}
#ifndef HAVE_LIBURING
		printf("(io_uring: built without liburing)\n");
#endif
	}
out:
	for (size_t i = 0; i < n; i++) {
		close(fds[i]);
		stop_child(pids[i]);
	}
	free(ns);
	free(q);
	return ret ? 1 : 0;
}
