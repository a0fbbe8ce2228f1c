// SPDX-License-Identifier: MIT
/*
 * Two client processes of the broker exchange messages over RC QPs:
 *
 *   vm-pingpong DEV ITERATIONS [SYNCDIR]
 *
 * The process forks; each side connects to the broker with
 * IBC_CONNECT_ALLOW_OWN_CONTEXT, opens DEV through ibc_open, and creates a
 * CQ, an RC QP and an MR on the context it got (on the shared PD when the
 * context is shared, on a PD of its own otherwise). The sides swap QP
 * numbers and GIDs over a socketpair, connect, and bounce ITERATIONS
 * messages, each checked byte for byte. With SYNCDIR the parent creates
 * SYNCDIR/ready when both sides are connected and waits for SYNCDIR/go, and
 * creates SYNCDIR/done after the last message and waits for SYNCDIR/finish
 * before either side tears down: the suite reads the broker's request
 * counter in between. Prints CHECK lines; exits 0 when all passed.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "ibclient.h"
#include "tests/vm/vmutil.h"

#define MSG_LEN 256
#define WAIT_MS 15000
/* Receive buffers live in the first half of the MR, sends in the second. */
#define SEND_OFF 2048

struct side {
	const char *name;
	struct ibc_client *cl;
	struct ibc_ctx *ctx;
	struct vm_rc rc;
	/* The responder saw the next message before its own send completed:
	 * the one CQ serves both queues. */
	bool early;
};

static void fill(uint8_t *p, uint32_t seq, int from)
{
	for (int i = 0; i < MSG_LEN; i++)
		p[i] = (uint8_t)(seq * 31u + (uint32_t)i * 7u + (uint32_t)from);
}

static int side_open(struct side *s, const char *dev)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_FLAGS | IBC_CONNECT_ATTR_TIMEOUT,
		.flags = IBC_CONNECT_ALLOW_OWN_CONTEXT,
		.timeout_ms = 20000,
	};
	struct ibc_caps caps;
	struct ibv_pd *pd = NULL;
	int err;

	err = ibc_connect(&attr, &s->cl);
	if (err < 0) {
		fprintf(stderr, "%s: ibc_connect: %s\n", s->name,
			ibc_last_error());
		return err;
	}
	err = ibc_open(s->cl, dev, &s->ctx);
	if (err < 0) {
		fprintf(stderr, "%s: ibc_open(%s): %s\n", s->name, dev,
			ibc_last_error());
		return err;
	}
	ibc_query(s->ctx, &caps, sizeof(caps));
	if (caps.shared)
		pd = ibc_verbs_pd(s->ctx);
	return vm_rc_create(&s->rc, ibc_verbs_context(s->ctx), pd, 4096);
}

static void side_close(struct side *s)
{
	vm_rc_destroy(&s->rc);
	ibc_close(s->ctx);
	ibc_disconnect(s->cl);
}

/* Check what the peer sent for @seq, then post the buffer again. */
static int take(struct side *s, uint32_t seq, int me)
{
	uint8_t want[MSG_LEN];
	uint8_t *rbuf = s->rc.buf;

	fill(want, seq, !me);
	if (memcmp(rbuf, want, MSG_LEN)) {
		fprintf(stderr, "%s: message %" PRIu32 " is corrupt\n", s->name,
			seq);
		return -EBADMSG;
	}
	memset(rbuf, 0, MSG_LEN);
	return vm_rc_post_recv(&s->rc, 0, MSG_LEN, seq + 1);
}

/*
 * One round trip: the initiator sends @seq and waits for the answer; the
 * responder waits for @seq, posts its receive buffer again, then answers,
 * so that the next message never finds it without one. The peer's next
 * message may complete before the responder's own send does; it is kept
 * for the next round.
 */
static int bounce(struct side *s, uint32_t seq, int me, bool initiator)
{
	uint8_t *sbuf = (uint8_t *)s->rc.buf + SEND_OFF;
	bool sent = false, got = false;
	struct ibv_wc wc;
	int err;

	if (!initiator) {
		if (!s->early) {
			err = vm_rc_wait(&s->rc, &wc, WAIT_MS);
			if (err < 0 || wc.opcode != IBV_WC_RECV)
				return err < 0 ? err : -EPROTO;
		}
		s->early = false;
		got = true;
		err = take(s, seq, me);
		if (err < 0)
			return err;
	}
	fill(sbuf, seq, me);
	err = vm_rc_post_send(&s->rc, SEND_OFF, MSG_LEN, seq);
	if (err < 0)
		return err;
	while (!sent || !got) {
		err = vm_rc_wait(&s->rc, &wc, WAIT_MS);
		if (err < 0)
			return err;
		if (wc.opcode == IBV_WC_SEND) {
			sent = true;
		} else if (wc.opcode != IBV_WC_RECV) {
			return -EPROTO;
		} else if (got) {
			s->early = true; /* the next message, already */
		} else {
			got = true;
			err = take(s, seq, me);
			if (err < 0)
				return err;
		}
	}
	return 0;
}

/* Milliseconds the parent spent in the message loop. */
static double loop_ms;

static int run_side(struct side *s, int sock, const char *dev, int iters,
		    const char *syncdir, int me)
{
	struct vm_rc_addr remote;
	struct timespec t0, t1;
	char token = 'r';
	int err;

	err = side_open(s, dev);
	if (err < 0)
		return err;
	err = vm_rc_post_recv(&s->rc, 0, MSG_LEN, 0);
	if (err == 0)
		err = vm_write_all(sock, &s->rc.local, sizeof(s->rc.local));
	if (err == 0)
		err = vm_read_all(sock, &remote, sizeof(remote));
	if (err == 0)
		err = vm_rc_connect(&s->rc, &remote);
	/* Both connected before the first message. */
	if (err == 0)
		err = vm_write_all(sock, &token, 1);
	if (err == 0)
		err = vm_read_all(sock, &token, 1);
	if (err < 0)
		return err;
	if (me == 0 && syncdir) {
		vm_sync_touch(syncdir, "ready");
		err = vm_sync_wait(syncdir, "go", 60000);
		if (err < 0)
			return err;
	}
	/* The parent starts only when the suite said go. */
	if (me == 0)
		err = vm_write_all(sock, &token, 1);
	else
		err = vm_read_all(sock, &token, 1);
	if (err < 0)
		return err;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < iters; i++) {
		err = bounce(s, (uint32_t)i, me, me == 0);
		if (err < 0) {
			fprintf(stderr, "%s: message %d: %s\n", s->name, i,
				strerror(-err));
			return err;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	loop_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
		  (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	return 0;
}

int main(int argc, char **argv)
{
	const char *dev, *syncdir;
	struct side s = { 0 };
	char token = 'f';
	int sv[2], iters, err, status;
	pid_t child;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3 || argc > 4) {
		fprintf(stderr,
			"usage: vm-pingpong DEV ITERATIONS [SYNCDIR]\n");
		return 2;
	}
	dev = argv[1];
	iters = atoi(argv[2]);
	syncdir = argc > 3 ? argv[3] : NULL;
	if (iters <= 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return 2;
	child = fork();
	if (child < 0)
		return 2;
	if (child == 0) {
		close(sv[0]);
		s.name = "child";
		err = run_side(&s, sv[1], dev, iters, NULL, 1);
		/* Tear down only when the parent says so: closing the context
		 * is a request to the broker, and the suite is counting. */
		if (err == 0)
			vm_read_all(sv[1], &token, 1);
		side_close(&s);
		_exit(err < 0 ? 1 : 0);
	}
	close(sv[1]);
	s.name = "parent";
	err = run_side(&s, sv[0], dev, iters, syncdir, 0);
	if (syncdir) {
		vm_sync_touch(syncdir, "done");
		vm_sync_wait(syncdir, "finish", 60000);
	}
	if (err < 0)
		kill(child, SIGKILL);
	else
		vm_write_all(sv[0], &token, 1);
	waitpid(child, &status, 0);
	vm_check(err == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "rc-pingpong",
		 "%d messages each way between pid %d and pid %d over RC QPs "
		 "on %s: %s (child %s %d), %.0f ms",
		 iters, (int)getpid(), (int)child, dev,
		 err == 0 ? "ok" : strerror(-err),
		 WIFEXITED(status) ? "exit" : "signal",
		 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
		 loop_ms);
	side_close(&s);
	return vm_failures() ? 1 : 0;
}
