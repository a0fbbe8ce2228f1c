// SPDX-License-Identifier: MIT
/*
 * Ping round trips: the broker's (ibc_ping through libibclient to
 * rdmabrokerd) and the two baselines it is divided by, with packets of the
 * same sizes: the raw SOCK_SEQPACKET ping-pong between two blocking
 * processes, and the event-driven floor (bench-evsrv, the daemon's system
 * calls without its logic) driven with libibclient's system calls. Timed
 * per round trip with CLOCK_MONOTONIC.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/bench.h"
#include "include/ibclient.h"
#include "proto/wire.h"

#define RTT_MAX_PACKET (64 * 1024)

int rtt_broker_rep(struct ibc_client *cl, const uint8_t *payload, size_t len,
		   unsigned int iters, uint64_t *lat)
{
	for (unsigned int i = 0; i < iters; i++) {
		uint64_t t0 = now_ns();
		int ret = ibc_ping(cl, payload, len);

		if (ret < 0) {
			fprintf(stderr, "rdmab-bench: ibc_ping: %s\n",
				ibc_last_error());
			return ret;
		}
		if (lat)
			lat[i] = now_ns() - t0;
	}
	return 0;
}

int raw_echo_serve(int fd, size_t rep_len)
{
	const size_t both[2] = { rep_len, rep_len };

	return peer_alternate(fd, both, -1);
}

int raw_echo_main(void *arg)
{
	const struct raw_echo *e = arg;

	close(e->other_fd);
	return raw_echo_serve(e->fd, e->rep_len);
}

int rtt_raw_rep(int fd, const uint8_t *req, size_t req_len, size_t rep_len,
		unsigned int iters, uint64_t *lat)
{
	static uint8_t rx[RTT_MAX_PACKET];

	for (unsigned int i = 0; i < iters; i++) {
		uint64_t t0 = now_ns();
		ssize_t n;

		if (send(fd, req, req_len, MSG_NOSIGNAL) < 0)
			return -errno;
		do
			n = recv(fd, rx, sizeof(rx), 0);
		while (n < 0 && errno == EINTR);
		if (n < 0)
			return -errno;
		if ((size_t)n != rep_len)
			return n == 0 ? -ECONNRESET : -EPROTO;
		if (lat)
			lat[i] = now_ns() - t0;
	}
	return 0;
}

int rtt_floor_rep(int fd, const uint8_t *req, size_t req_len, size_t rep_len,
		  unsigned int iters, uint64_t *lat)
{
	static uint8_t rx[RTT_MAX_PACKET];

	for (unsigned int i = 0; i < iters; i++) {
		uint64_t t0 = now_ns();
		int n;

		/* What ibc_call() does: a send that never blocks, then the
		 * library's receive of a reply without descriptors. */
		if (send(fd, req, req_len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			return -errno;
		n = wire_recv_bare(fd, rx, sizeof(rx), 0);
		if (n < 0)
			return n;
		if ((size_t)n != rep_len)
			return n == 0 ? -ECONNRESET : -EPROTO;
		if (lat)
			lat[i] = now_ns() - t0;
	}
	return 0;
}
