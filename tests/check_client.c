// SPDX-License-Identifier: MIT
/*
 * libibclient against the real daemon: one client driven by many threads,
 * the thread-local error sentence, the event descriptor, and the calls'
 * failure paths; then against a hostile broker played by the test
 * (tests/fakebroker.h), and with libibverbs calls that fail without
 * setting errno (tests/verbs-shim.h).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "tests/cklib.h"
#include "tests/fakebroker.h"
#include "tests/testlib.h"
#include "tests/verbs-shim.h"

static struct tl_daemon D;

static void daemon_setup(void)
{
	int ret = tl_daemon_start(&D, NULL);

	ck_assert_msg(ret == 0, "cannot start %s: %s", tl_daemon_path(),
		      strerror(-ret));
}

static void daemon_teardown(void)
{
	tl_daemon_stop(&D);
}

struct events_seen {
	pthread_mutex_t lock;
	int n;
	enum ibc_event_type type[8];
	char message[8][128];
};

static void record_event(struct ibc_client *client, const struct ibc_event *ev,
			 void *arg)
{
	struct events_seen *seen = arg;

	pthread_mutex_lock(&seen->lock);
	if (seen->n < 8) {
		seen->type[seen->n] = ev->type;
		snprintf(seen->message[seen->n], sizeof(seen->message[0]), "%s",
			 ev->message ? ev->message : "");
	}
	seen->n++;
	pthread_mutex_unlock(&seen->lock);
}

static struct ibc_client *connect_with_events(struct events_seen *seen)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET |
			     IBC_CONNECT_ATTR_TIMEOUT |
			     IBC_CONNECT_ATTR_EVENT_CB,
		.socket_path = D.sock,
		.timeout_ms = 20000,
		.event_cb = record_event,
		.event_arg = seen,
	};
	struct ibc_client *cl = NULL;
	int ret;

	ret = ibc_connect(&attr, &cl);
	ck_assert_msg(ret == 0, "ibc_connect: %s (%s)", strerror(-ret),
		      ibc_last_error());
	return cl;
}

static int poll_fd(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, timeout_ms);
}

/* --- many threads, one client ------------------------------------------- */

#define THREADS 8
#define PINGS 500

struct pinger {
	struct ibc_client *cl;
	pthread_barrier_t *start;
	int id;
	int ok;
	int first_error;
	char error_text[256];
};

/* A payload no other thread or iteration sends: its own id and number,
 * then bytes derived from both, of a length that varies. */
static size_t make_payload(uint8_t *buf, int id, int i)
{
	size_t len = 16 + (size_t)((i * 37 + id * 101) % 2000);
	int n = snprintf((char *)buf, 32, "t%02d-i%04d-", id, i);

	for (size_t k = (size_t)n; k < len; k++)
		buf[k] = (uint8_t)(k * 31 + (size_t)id * 7 + (size_t)i);
	return len;
}

static void *pinger_main(void *arg)
{
	struct pinger *p = arg;
	static __thread uint8_t buf[4096];

	pthread_barrier_wait(p->start);
	for (int i = 0; i < PINGS; i++) {
		size_t len = make_payload(buf, p->id, i);
		int ret = ibc_ping(p->cl, buf, len);

		if (ret == 0) {
			p->ok++;
		} else if (!p->first_error) {
			p->first_error = ret;
			snprintf(p->error_text, sizeof(p->error_text), "%s",
				 ibc_last_error());
		}
	}
	return NULL;
}

START_TEST(test_threads_share_client)
{
	struct pinger p[THREADS];
	pthread_t th[THREADS];
	pthread_barrier_t start;
	struct ibc_status before, after;
	struct ibc_client *cl;
	int ret;

	ret = tl_connect(D.sock, 20000, &cl);
	ck_assert_msg(ret == 0, "ibc_connect: %s", ibc_last_error());
	ck_assert_int_eq(ibc_status(cl, &before, sizeof(before)), 0);
	ck_assert_int_eq(pthread_barrier_init(&start, NULL, THREADS), 0);
	for (int t = 0; t < THREADS; t++) {
		p[t] = (struct pinger){ .cl = cl, .start = &start, .id = t };
		ck_assert_int_eq(
			pthread_create(&th[t], NULL, pinger_main, &p[t]), 0);
	}
	for (int t = 0; t < THREADS; t++)
		ck_assert_int_eq(pthread_join(th[t], NULL), 0);
	pthread_barrier_destroy(&start);
	for (int t = 0; t < THREADS; t++)
		ck_assert_msg(p[t].ok == PINGS,
			      "thread %d: %d of %d pings; first error %d: %s",
			      t, p[t].ok, PINGS, p[t].first_error,
			      p[t].error_text);

	/* The broker saw each of them once, plus this status. */
	ck_assert_int_eq(ibc_status(cl, &after, sizeof(after)), 0);
	ck_assert_uint_eq(after.requests_served,
			  before.requests_served + THREADS * PINGS + 1);
	/* Nothing is left unread. */
	ck_assert_int_eq(poll_fd(ibc_get_fd(cl), 0), 0);
	ibc_disconnect(cl);
}
END_TEST

/* --- the error sentence is per thread ----------------------------------- */

struct err_thread {
	struct ibc_client *cl;
	pthread_barrier_t *step;
	int ret;
	char text[256];
	char text_later[256];
	const char *ptr;
};

/* Fails first, then waits while the other thread fails, then looks at its
 * own sentence again. */
static void *err_first(void *arg)
{
	struct err_thread *e = arg;
	struct ibc_connect_attr bad = { .comp_mask = 1u << 31 };
	struct ibc_client *unused = NULL;

	e->ret = ibc_connect(&bad, &unused);
	snprintf(e->text, sizeof(e->text), "%s", ibc_last_error());
	e->ptr = ibc_last_error();
	pthread_barrier_wait(e->step);
	/* The other thread fails now. */
	pthread_barrier_wait(e->step);
	snprintf(e->text_later, sizeof(e->text_later), "%s", ibc_last_error());
	return NULL;
}

static void *err_second(void *arg)
{
	static uint8_t big[60001];
	struct err_thread *e = arg;

	pthread_barrier_wait(e->step);
	e->ret = ibc_ping(e->cl, big, sizeof(big));
	snprintf(e->text, sizeof(e->text), "%s", ibc_last_error());
	e->ptr = ibc_last_error();
	pthread_barrier_wait(e->step);
	snprintf(e->text_later, sizeof(e->text_later), "%s", ibc_last_error());
	return NULL;
}

START_TEST(test_last_error_thread_local)
{
	struct err_thread a = { 0 }, b = { 0 };
	pthread_barrier_t step;
	pthread_t ta, tb;
	struct ibc_client *cl;
	char mine[256];

	ck_assert_int_eq(tl_connect(D.sock, 0, &cl), 0);
	/* This thread's own sentence, set before the others run. */
	ck_assert_int_eq(ibc_ping(cl, NULL, 5), -EINVAL);
	snprintf(mine, sizeof(mine), "%s", ibc_last_error());
	ck_assert_str_ne(mine, "");

	ck_assert_int_eq(pthread_barrier_init(&step, NULL, 2), 0);
	a.step = b.step = &step;
	a.cl = b.cl = cl;
	ck_assert_int_eq(pthread_create(&ta, NULL, err_first, &a), 0);
	ck_assert_int_eq(pthread_create(&tb, NULL, err_second, &b), 0);
	ck_assert_int_eq(pthread_join(ta, NULL), 0);
	ck_assert_int_eq(pthread_join(tb, NULL), 0);
	pthread_barrier_destroy(&step);

	ck_assert_int_eq(a.ret, -EOPNOTSUPP);
	ck_assert_msg(strstr(a.text, "comp_mask"), "first: \"%s\"", a.text);
	ck_assert_int_eq(b.ret, -EMSGSIZE);
	ck_assert_msg(strstr(b.text, "60001"), "second: \"%s\"", b.text);
	/* The second thread's failure did not touch the first's
	 * sentence, nor this thread's. */
	ck_assert_str_eq(a.text_later, a.text);
	ck_assert_str_eq(b.text_later, b.text);
	ck_assert_ptr_ne(a.ptr, b.ptr);
	ck_assert_str_eq(ibc_last_error(), mine);

	/* A failed call does not break the client for others. */
	ck_assert_int_eq(ibc_ping(cl, "still", 5), 0);
	ibc_disconnect(cl);
}
END_TEST

/* --- events ------------------------------------------------------------- */

START_TEST(test_event_fd)
{
	struct events_seen seen = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct ibc_client *cl = connect_with_events(&seen);
	int fd = ibc_get_fd(cl), status, ret;

	ck_assert_int_ge(fd, 0);
	/* Quiet while nothing happens, also after traffic. */
	ck_assert_int_eq(poll_fd(fd, 0), 0);
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(ibc_ping(cl, &i, sizeof(i)), 0);
	ck_assert_int_eq(poll_fd(fd, 50), 0);
	ck_assert_int_eq(ibc_dispatch(cl), 0);
	ck_assert_int_eq(seen.n, 0);

	/* An event makes it readable, and dispatch delivers it. */
	ck_assert_int_eq(kill(D.pid, SIGTERM), 0);
	ck_assert_int_eq(poll_fd(fd, TL_WAIT_MS), 1);
	ret = ibc_dispatch(cl);
	ck_assert_int_ge(ret, 1);
	ck_assert_int_eq(seen.n, ret);
	ck_assert_int_eq(seen.type[0], IBC_EVENT_SHUTDOWN);
	ck_assert_msg(strstr(seen.message[0], "SIGTERM"), "reason \"%s\"",
		      seen.message[0]);
	ck_assert_int_ge(tl_wait_pid(D.pid, TL_WAIT_MS, &status), 0);
	D.reaped = true;
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	/* Then the end of the connection, once. */
	while ((ret = ibc_dispatch(cl)) > 0)
		;
	ck_assert_int_eq(ret, -ECONNRESET);
	ck_assert_int_eq(seen.type[seen.n - 1], IBC_EVENT_DISCONNECTED);
	ck_assert_int_eq(ibc_dispatch(cl), -ECONNRESET);
	ck_assert_int_lt(ibc_ping(cl, "x", 1), 0);
	ibc_disconnect(cl);
}
END_TEST

struct busy {
	struct ibc_client *cl;
	int ret;
	int count;
};

static void *busy_main(void *arg)
{
	struct busy *b = arg;

	do {
		b->ret = ibc_ping(b->cl, &b->count, sizeof(b->count));
		b->count++;
	} while (b->ret == 0);
	return NULL;
}

/* Whichever thread reads the end of the connection queues it: every
 * thread's call fails instead of hanging, ibc_get_fd() polls readable and
 * ibc_dispatch() delivers what was queued, the disconnection last. */
START_TEST(test_shutdown_while_busy)
{
	struct events_seen seen = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct ibc_client *cl = connect_with_events(&seen);
	struct busy b[4];
	pthread_t th[4];
	int status;

	for (int t = 0; t < 4; t++) {
		b[t] = (struct busy){ .cl = cl };
		ck_assert_int_eq(pthread_create(&th[t], NULL, busy_main, &b[t]),
				 0);
	}
	tl_sleep_ms(100);
	ck_assert_int_eq(kill(D.pid, SIGTERM), 0);
	for (int t = 0; t < 4; t++) {
		ck_assert_int_eq(pthread_join(th[t], NULL), 0);
		ck_assert_int_lt(b[t].ret, 0);
		ck_assert_int_gt(b[t].count, 1);
	}
	ck_assert_int_ge(tl_wait_pid(D.pid, TL_WAIT_MS, &status), 0);
	D.reaped = true;

	ck_assert_int_eq(poll_fd(ibc_get_fd(cl), TL_WAIT_MS), 1);
	while (ibc_dispatch(cl) > 0)
		;
	ck_assert_int_ge(seen.n, 1);
	ck_assert_int_le(seen.n, 2);
	ck_assert_int_eq(seen.type[seen.n - 1], IBC_EVENT_DISCONNECTED);
	if (seen.n == 2)
		ck_assert_int_eq(seen.type[0], IBC_EVENT_SHUTDOWN);
	ck_assert_int_eq(ibc_dispatch(cl), -ECONNRESET);
	ibc_disconnect(cl);
}
END_TEST

/* The client process of test_shutdown_behind_reset: busy threads, then
 * what ibc_dispatch() delivers, as the exit code. */
static void reset_child(int ready)
{
	struct events_seen seen = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct ibc_connect_attr attr = {
		.comp_mask =
			IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_EVENT_CB,
		.socket_path = D.sock,
		.event_cb = record_event,
		.event_arg = &seen,
	};
	struct ibc_client *cl;
	struct busy b[8];
	pthread_t th[8];

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (ibc_connect(&attr, &cl) < 0)
		_exit(2);
	for (int t = 0; t < 8; t++) {
		b[t] = (struct busy){ .cl = cl };
		if (pthread_create(&th[t], NULL, busy_main, &b[t]))
			_exit(3);
	}
	if (write(ready, "r", 1) != 1)
		_exit(4);
	for (int t = 0; t < 8; t++)
		pthread_join(th[t], NULL);
	if (poll_fd(ibc_get_fd(cl), TL_WAIT_MS) != 1)
		_exit(5);
	while (ibc_dispatch(cl) > 0)
		;
	if (seen.n < 1)
		_exit(6);
	/* 0 when the shutdown came first, else 10 + the first type. */
	_exit(seen.type[0] == IBC_EVENT_SHUTDOWN ? 0 : 10 + (int)seen.type[0]);
}

/*
 * The daemon closes a connection whose requests it has not all read: the
 * kernel then reports ECONNRESET to the client once, before the packets
 * the daemon sent last (tests/check_wire.c test_reset_then_queued). The
 * shutdown event among them must still be delivered. Deterministic: the
 * daemon is stopped while the client's threads send, the client is
 * stopped while the daemon shuts down.
 */
START_TEST(test_shutdown_behind_reset)
{
	int ready[2], status, code;
	pid_t child;
	char c;

	ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		close(ready[0]);
		reset_child(ready[1]);
	}
	close(ready[1]);
	ck_assert_int_eq(poll_fd(ready[0], TL_WAIT_MS), 1);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	tl_sleep_ms(50);

	/* The threads' requests pile up unread... */
	ck_assert_int_eq(kill(D.pid, SIGSTOP), 0);
	tl_sleep_ms(200);
	ck_assert_int_eq(kill(child, SIGSTOP), 0);
	/* ...the daemon shuts down with them in its queue... */
	ck_assert_int_eq(kill(D.pid, SIGTERM), 0);
	ck_assert_int_eq(kill(D.pid, SIGCONT), 0);
	ck_assert_int_ge(tl_wait_pid(D.pid, TL_WAIT_MS, &status), 0);
	D.reaped = true;
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* ...and the client reads what is left. */
	ck_assert_int_eq(kill(child, SIGCONT), 0);
	ck_assert_int_ge(tl_wait_pid(child, 20000, &status), 0);
	ck_assert_msg(WIFEXITED(status), "client wait status 0x%x", status);
	code = WEXITSTATUS(status);
	ck_assert_msg(code == 0, "the client process exited with %d: %s", code,
		      code == 10 + IBC_EVENT_DISCONNECTED ?
			      "only IBC_EVENT_DISCONNECTED was delivered; "
			      "the shutdown event queued behind the "
			      "ECONNRESET was lost" :
			      "it failed before the shutdown");
}
END_TEST

/* --- failure paths ------------------------------------------------------ */

START_TEST(test_connect_errors)
{
	struct ibc_connect_attr attr = { .comp_mask = IBC_CONNECT_ATTR_SOCKET };
	struct ibc_client *cl = (struct ibc_client *)&attr;
	char path[300];
	int before = tl_count_fds(0);

	snprintf(path, sizeof(path), "%s.missing", D.sock);
	attr.socket_path = path;
	ck_assert_int_eq(ibc_connect(&attr, &cl), -ENOENT);
	ck_assert_msg(strstr(ibc_last_error(), path), "\"%s\"",
		      ibc_last_error());
	/* ret_ parameters are untouched on failure. */
	ck_assert_ptr_eq(cl, (struct ibc_client *)&attr);

	attr.socket_path = D.sock;
	attr.comp_mask |= 1u << 30;
	ck_assert_int_eq(ibc_connect(&attr, &cl), -EOPNOTSUPP);
	attr.comp_mask = IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_TIMEOUT;
	attr.timeout_ms = -1;
	ck_assert_int_eq(ibc_connect(&attr, &cl), -EINVAL);
	attr.comp_mask = IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_FLAGS;
	attr.flags = 1u << 31;
	ck_assert_int_eq(ibc_connect(&attr, &cl), -EINVAL);
	ck_assert_int_eq(ibc_connect(&attr, NULL), -EINVAL);
	ck_assert_ptr_eq(cl, (struct ibc_client *)&attr);
	ck_assert_int_eq(tl_count_fds(0), before);

	/* A successful connect clears the sentence. */
	attr.comp_mask = IBC_CONNECT_ATTR_SOCKET;
	ck_assert_int_eq(ibc_connect(&attr, &cl), 0);
	ck_assert_str_eq(ibc_last_error(), "");
	ibc_disconnect(cl);
	ibc_disconnect(NULL);
	ck_assert_int_eq(tl_count_fds(0), before);
}
END_TEST

START_TEST(test_connect_cycles_no_leak)
{
	int before = tl_count_fds(0);

	for (int i = 0; i < 50; i++) {
		struct ibc_client *cl;

		ck_assert_int_eq(tl_connect(D.sock, 0, &cl), 0);
		ck_assert_int_eq(ibc_ping(cl, &i, sizeof(i)), 0);
		ibc_disconnect(cl);
	}
	ck_assert_int_eq(tl_count_fds(0), before);
}
END_TEST

START_TEST(test_ping_sizes)
{
	static uint8_t buf[60001];
	struct ibc_client *cl;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 13);
	ck_assert_int_eq(tl_connect(D.sock, 0, &cl), 0);
	ck_assert_int_eq(ibc_ping(cl, NULL, 0), 0);
	ck_assert_int_eq(ibc_ping(cl, buf, 1), 0);
	ck_assert_int_eq(ibc_ping(cl, buf, 60000), 0);
	ck_assert_int_eq(ibc_ping(cl, buf, 60001), -EMSGSIZE);
	ck_assert_int_eq(ibc_ping(NULL, buf, 1), -EINVAL);
	ck_assert_int_eq(ibc_ping(cl, buf, 4096), 0);
	ibc_disconnect(cl);
}
END_TEST

/* --- a hostile broker ---------------------------------------------------
 *
 * The broker is a script in a thread of this process (tests/fakebroker.h):
 * it answers what the real daemon never would.
 */

struct caller {
	struct ibc_client *cl;
	int ret;
	char text[256];
};

static void *ping_main(void *arg)
{
	struct caller *c = arg;

	c->ret = ibc_ping(c->cl, "p", 1);
	snprintf(c->text, sizeof(c->text), "%s", ibc_last_error());
	return NULL;
}

/* A client waits for a reply to a ping; the broker stops reading (sends
 * fail with EPIPE from then on) and, a little later, refuses the
 * connection with its reason and closes. */
static void script_refuse_late(struct fb *fb)
{
	Rdmab__Reply refusal = RDMAB__REPLY__INIT;
	uint64_t serial;

	if (fb_hello(fb, "soft0", "soft") < 0 ||
	    fb_expect(fb, RDMAB__REQUEST__BODY_PING, &serial, NULL) < 0)
		return;
	if (shutdown(fb->conn, SHUT_RD) < 0) {
		fb_fail(fb, "shutdown: %s", strerror(errno));
		return;
	}
	fb_post(fb, 1);
	if (fb_wait(fb, 2, TL_WAIT_MS) < 0) {
		fb_fail(fb, "the test did not go on");
		return;
	}
	refusal.error = EUSERS;
	refusal.message = (char *)"fake: this client is refused";
	fb_send_reply(fb, &refusal, NULL, 0);
	close(fb->conn);
	fb->conn = -1;
}

/*
 * A second thread's send fails with EPIPE while the first thread is the
 * reader, blocked in recv. It must not read the socket itself (that was
 * the reader's buffer) but wait for what the reader finds: the broker's
 * reason. Without that, it gave up at once with a sentence of its own.
 */
START_TEST(test_epipe_waits_for_reader)
{
	struct caller a = { 0 }, b = { 0 };
	struct ibc_client *cl;
	pthread_t ta, tb;
	struct fb fb;

	FB_START(&fb, script_refuse_late, NULL);
	ck_assert_int_eq(tl_connect(fb.sock, 0, &cl), 0);
	a.cl = b.cl = cl;
	ck_assert_int_eq(pthread_create(&ta, NULL, ping_main, &a), 0);
	/* a's ping arrived: a reads, and the broker reads no more. */
	ck_assert_int_eq(fb_wait(&fb, 1, TL_WAIT_MS), 0);
	ck_assert_int_eq(pthread_create(&tb, NULL, ping_main, &b), 0);
	/* Time for b's send to fail before the reason comes. */
	tl_sleep_ms(200);
	fb_post(&fb, 2);
	ck_assert_int_eq(pthread_join(tb, NULL), 0);
	ck_assert_int_eq(pthread_join(ta, NULL), 0);
	ck_assert_msg(b.ret == -EUSERS && strstr(b.text, "is refused"),
		      "the sender: %d \"%s\"", b.ret, b.text);
	ck_assert_msg(a.ret == -EUSERS && strstr(a.text, "is refused"),
		      "the reader: %d \"%s\"", a.ret, a.text);
	ibc_disconnect(cl);
	FB_STOP(&fb);
}
END_TEST

/* Echo two pings in encodings the fast peek cannot read: the Reply's
 * fields out of order, then an unknown field in the wrapper. */
static void script_odd_replies(struct fb *fb)
{
	for (int i = 0; i < 2; i++) {
		struct tl_buf inner = { 0 }, outer = { 0 };
		Rdmab__Request *req;
		uint64_t serial;

		if (fb_expect(fb, RDMAB__REQUEST__BODY_PING, &serial, &req) < 0)
			return;
		if (i == 0) {
			tl_pb_bytes(&inner, 11, req->ping.data, req->ping.len);
			tl_pb_uint(&inner, 1, serial);
			tl_pb_bytes(&outer, 1, inner.p, inner.len);
		} else {
			tl_pb_uint(&inner, 1, serial);
			tl_pb_bytes(&inner, 11, req->ping.data, req->ping.len);
			tl_pb_bytes(&outer, 1, inner.p, inner.len);
			tl_pb_uint(&outer, 99, 1);
		}
		rdmab__request__free_unpacked(req, NULL);
		fb_send_raw(fb, outer.p, outer.len);
		tl_buf_free(&inner);
		tl_buf_free(&outer);
	}
	fb_wait_eof(fb);
}

static void script_hello_odd_replies(struct fb *fb)
{
	if (fb_hello(fb, "soft0", "soft") == 0)
		script_odd_replies(fb);
}

/* Valid replies the fast path cannot match are decoded in full and matched
 * by their serial; they were dropped, and the caller waited for ever. */
START_TEST(test_reply_slow_path)
{
	struct ibc_client *cl;
	struct fb fb;

	FB_START(&fb, script_hello_odd_replies, NULL);
	ck_assert_int_eq(tl_connect(fb.sock, 5000, &cl), 0);
	ck_assert_msg(ibc_ping(cl, "first", 5) == 0, "first: %s",
		      ibc_last_error());
	ck_assert_msg(ibc_ping(cl, "second", 6) == 0, "second: %s",
		      ibc_last_error());
	ibc_disconnect(cl);
	FB_STOP(&fb);
}
END_TEST

/* Answer hello, then read nothing until the test is done. */
static void script_deaf(struct fb *fb)
{
	if (fb_hello(fb, "soft0", "soft") < 0)
		return;
	if (fb_wait(fb, 1, 30000) < 0)
		fb_fail(fb, "the test did not finish");
}

/* timeout_ms bounds sends too: once the socket is full, a call fails
 * with ETIMEDOUT instead of blocking for ever, and says why. */
START_TEST(test_send_timeout)
{
	static uint8_t big[60000];
	struct ibc_client *cl;
	bool send_timed_out = false;
	struct fb fb;
	int ret = 0;

	FB_START(&fb, script_deaf, NULL);
	ck_assert_int_eq(tl_connect(fb.sock, 500, &cl), 0);
	for (int i = 0; i < 64 && !send_timed_out; i++) {
		ret = ibc_ping(cl, big, sizeof(big));
		if (ret != -ETIMEDOUT)
			break;
		send_timed_out = strstr(ibc_last_error(), "did not take");
	}
	ck_assert_msg(send_timed_out, "last: %d \"%s\"", ret, ibc_last_error());
	fb_post(&fb, 1);
	ibc_disconnect(cl);
	FB_STOP(&fb);
}
END_TEST

/* Answer the hello with a secret (so that the session is told the fork
 * state), take the ForkState request and never answer it. */
static void script_fork_state_deaf(struct fb *fb)
{
	static const uint8_t secret[16] = { 1, 2, 3 };
	uint64_t serial;

	if (fb_hello_secret(fb, "soft0", "soft", secret, sizeof(secret)) < 0 ||
	    fb_expect(fb, RDMAB__REQUEST__BODY_FORK_STATE, &serial, NULL) < 0)
		return;
	fb_post(fb, 1);
	if (fb_wait(fb, 2, 30000) < 0)
		fb_fail(fb, "the test did not finish");
}

static void *fork_init_main(void *arg)
{
	*(int *)arg = ibc_fork_init();
	return NULL;
}

static void *fork_main(void *arg)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	*(pid_t *)arg = pid;
	return NULL;
}

/* A broker that does not answer the new fork state (no timeout) stalls
 * neither ibc_fork_init() nor, above all, every fork() of the process,
 * whose atfork handler takes the fork lock. */
START_TEST(test_fork_init_stalled_broker)
{
	struct ibc_client *cl;
	pthread_t ti, tf;
	struct timespec ts;
	int ret = 1, status;
	pid_t pid = -1;
	struct fb fb;

	/* Nothing to tell: the state was UNNEEDED from the start. */
	if (ibc_fork_state() != IBC_FORK_DISABLED)
		return;
	FB_START(&fb, script_fork_state_deaf, NULL);
	ck_assert_int_eq(tl_connect(fb.sock, 0, &cl), 0);
	ck_assert_int_eq(pthread_create(&ti, NULL, fork_init_main, &ret), 0);
	ck_assert_msg(fb_wait(&fb, 1, TL_WAIT_MS) == 0, "broker: %s", fb.why);
	ck_assert_int_eq(pthread_create(&tf, NULL, fork_main, &pid), 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += TL_WAIT_MS / 1000;
	ck_assert_msg(pthread_timedjoin_np(tf, NULL, &ts) == 0,
		      "fork() blocked while ibc_fork_init() waited for the "
		      "broker");
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(pthread_timedjoin_np(ti, NULL, &ts) == 0,
		      "ibc_fork_init() waited for the broker");
	ck_assert_int_eq(ret, 0);
	ck_assert_int_eq(ibc_fork_state(), IBC_FORK_ENABLED);
	fb_post(&fb, 2);
	ibc_disconnect(cl);
	FB_STOP(&fb);
}
END_TEST

/* Answer the first ping with the error in arg (and its echo). */
static void script_bad_error(struct fb *fb)
{
	Rdmab__Reply reply = RDMAB__REPLY__INIT;
	Rdmab__Request *req;
	uint64_t serial;

	if (fb_hello(fb, "soft0", "soft") < 0 ||
	    fb_expect(fb, RDMAB__REQUEST__BODY_PING, &serial, &req) < 0)
		return;
	reply.serial = serial;
	reply.error = *(const int *)fb->arg;
	reply.message = (char *)"fake: odd error";
	reply.body_case = RDMAB__REPLY__BODY_PING;
	reply.ping = req->ping;
	fb_send_reply(fb, &reply, NULL, 0);
	rdmab__request__free_unpacked(req, NULL);
	fb_wait_eof(fb);
}

/* Refuse the connection (serial 0) with the error in arg. */
static void script_bad_refusal(struct fb *fb)
{
	Rdmab__Reply reply = RDMAB__REPLY__INIT;

	if (fb_hello(fb, "soft0", "soft") < 0)
		return;
	reply.error = *(const int *)fb->arg;
	reply.message = (char *)"fake: odd refusal";
	fb_send_reply(fb, &reply, NULL, 0);
	fb_wait_eof(fb);
}

/* An error outside 1..4095 is no errno value: a protocol violation that
 * ends the connection, never a success (a negative one made the call
 * return a positive value with no reply). */
START_TEST(test_error_out_of_range)
{
	static const int errors[] = { -5, 4096, INT32_MIN };
	static const fb_script scripts[] = { script_bad_error,
					     script_bad_refusal };

	for (size_t s = 0; s < 2; s++) {
		for (size_t i = 0; i < 3; i++) {
			struct ibc_client *cl;
			char num[16];
			struct fb fb;
			int ret;

			FB_START(&fb, scripts[s], (void *)&errors[i]);
			ck_assert_int_eq(tl_connect(fb.sock, 5000, &cl), 0);
			ret = ibc_ping(cl, "x", 1);
			snprintf(num, sizeof(num), "%d", errors[i]);
			ck_assert_msg(ret == -EPROTO &&
					      strstr(ibc_last_error(), num),
				      "script %zu, error %d: %d \"%s\"", s,
				      errors[i], ret, ibc_last_error());
			/* The connection is dead. */
			ck_assert_int_eq(ibc_ping(cl, "y", 1), -EPROTO);
			ibc_disconnect(cl);
			FB_STOP(&fb);
		}
	}
}
END_TEST

/* Answer close_context, which the library sends when it gives up on a
 * context it was given. */
static void fb_answer_close(struct fb *fb)
{
	Rdmab__CloseContextReply cr = RDMAB__CLOSE_CONTEXT_REPLY__INIT;
	Rdmab__Reply reply = RDMAB__REPLY__INIT;
	uint64_t serial;

	if (fb_expect(fb, RDMAB__REQUEST__BODY_CLOSE_CONTEXT, &serial, NULL) <
	    0)
		return;
	reply.serial = serial;
	reply.body_case = RDMAB__REPLY__BODY_CLOSE_CONTEXT;
	reply.close_context = &cr;
	fb_send_reply(fb, &reply, NULL, 0);
}

static void script_open_without_fd(struct fb *fb)
{
	if (fb_hello(fb, "soft0", "soft") < 0 ||
	    fb_answer_open(fb, "soft0", -1) < 0)
		return;
	fb_answer_close(fb);
	fb_wait_eof(fb);
}

/* The sentence of an open whose reply carries no descriptor survives the
 * release that follows it (whose success cleared it). */
START_TEST(test_open_without_fd)
{
	struct ibc_ctx *ctx = NULL;
	struct ibc_client *cl;
	struct fb fb;

	FB_START(&fb, script_open_without_fd, NULL);
	ck_assert_int_eq(tl_connect(fb.sock, 5000, &cl), 0);
	ck_assert_int_eq(ibc_open(cl, NULL, &ctx), -EPROTO);
	ck_assert_ptr_null(ctx);
	ck_assert_msg(strstr(ibc_last_error(), "without sending its "
					       "descriptor"),
		      "\"%s\"", ibc_last_error());
	ibc_disconnect(cl);
	FB_STOP(&fb);
}
END_TEST

/*
 * A ping's reader is in recv(2), which would let the kernel close the
 * descriptor of a reply that came meanwhile. The broker holds the ping's
 * answer until the test has started an open in a second thread and given
 * it time to send; the open must not be on the socket yet. Then the ping
 * is answered, and the open, sent only now, gets its context.
 */
static void script_open_behind_bare_read(struct fb *fb)
{
	Rdmab__Request *req = NULL;
	uint64_t serial;
	char c;
	int fd = fb_soft_context_fd(FB_CONTEXT_ID);

	if (fd < 0) {
		fb_fail(fb, "memfd: %s", strerror(-fd));
		return;
	}
	if (fb_hello(fb, "soft0", "soft") < 0 ||
	    fb_expect(fb, RDMAB__REQUEST__BODY_PING, &serial, &req) < 0)
		goto out;
	fb_post(fb, 1);
	if (fb_wait(fb, 2, TL_WAIT_MS) < 0) {
		fb_fail(fb, "the test did not go on");
		goto out;
	}
	if (recv(fb->conn, &c, 1, MSG_PEEK | MSG_DONTWAIT) >= 0) {
		fb_fail(fb, "the open was sent while the ping's reader was in "
			    "recv(2)");
		goto out;
	}
	if (fb_answer_ping(fb, serial, req) < 0 ||
	    fb_answer_open(fb, "soft0", fd) < 0)
		goto out;
	fb_answer_close(fb);
	fb_wait_eof(fb);
out:
	if (req)
		rdmab__request__free_unpacked(req, NULL);
	close(fd);
}

static void *open_main(void *arg)
{
	struct caller *c = arg;
	struct ibc_ctx *ctx = NULL;

	c->ret = ibc_open(c->cl, NULL, &ctx);
	snprintf(c->text, sizeof(c->text), "%s", ibc_last_error());
	if (c->ret == 0)
		ibc_close(ctx);
	return NULL;
}

/*
 * A ping and an open of one client in two threads against @script, the
 * open first when @open_first, the second started once the broker posted
 * 1 for the first's request; with the ping first, the broker is posted 2
 * after a pause that lets the open reach its send. Both must succeed.
 */
static void ping_and_open(fb_script script, bool open_first)
{
	struct caller ping = { 0 }, open = { 0 };
	struct ibc_client *cl;
	pthread_t first, second;
	struct fb fb;

	FB_START(&fb, script, NULL);
	ck_assert_int_eq(tl_connect(fb.sock, 5000, &cl), 0);
	ping.cl = open.cl = cl;
	ck_assert_int_eq(pthread_create(&first, NULL,
					open_first ? open_main : ping_main,
					open_first ? &open : &ping),
			 0);
	ck_assert_int_eq(fb_wait(&fb, 1, TL_WAIT_MS), 0);
	ck_assert_int_eq(pthread_create(&second, NULL,
					open_first ? ping_main : open_main,
					open_first ? &ping : &open),
			 0);
	if (!open_first) {
		tl_sleep_ms(200);
		fb_post(&fb, 2);
	}
	ck_assert_int_eq(pthread_join(first, NULL), 0);
	ck_assert_int_eq(pthread_join(second, NULL), 0);
	ck_assert_msg(ping.ret == 0, "the ping: %d \"%s\"", ping.ret,
		      ping.text);
	ck_assert_msg(open.ret == 0, "the open: %d \"%s\"", open.ret,
		      open.text);
	ibc_disconnect(cl);
	FB_STOP(&fb);
}

START_TEST(test_open_waits_for_bare_read)
{
	/* The ping's thread is the reader, in recv(2). */
	ping_and_open(script_open_behind_bare_read, false);
}
END_TEST

/*
 * The other half: an open's request is out and its thread is the reader
 * when a ping's reply comes first. The reader hands it over and reads
 * again at once, the ping's waiter still listed; that read must still be
 * recvmsg(2)'s, or the open's descriptor, which comes next, is lost.
 */
static void script_open_after_other_reply(struct fb *fb)
{
	Rdmab__Request *req = NULL;
	uint64_t open_serial, serial;
	int fd = fb_soft_context_fd(FB_CONTEXT_ID);

	if (fd < 0) {
		fb_fail(fb, "memfd: %s", strerror(-fd));
		return;
	}
	if (fb_hello(fb, "soft0", "soft") < 0 ||
	    fb_expect(fb, RDMAB__REQUEST__BODY_OPEN_CONTEXT, &open_serial,
		      NULL) < 0)
		goto out;
	fb_post(fb, 1);
	if (fb_expect(fb, RDMAB__REQUEST__BODY_PING, &serial, &req) < 0)
		goto out;
	if (fb_answer_ping(fb, serial, req) < 0 ||
	    fb_reply_open(fb, open_serial, "soft0", fd) < 0)
		goto out;
	fb_answer_close(fb);
	fb_wait_eof(fb);
out:
	if (req)
		rdmab__request__free_unpacked(req, NULL);
	close(fd);
}

START_TEST(test_open_reply_after_other_reply)
{
	/* The open's thread is the reader; the broker holds its reply. */
	ping_and_open(script_open_after_other_reply, true);
}
END_TEST

/* The hello, then an open answered with soft context 42, whose memfd
 * goes to @ret_fd (-1: none made) for the caller to close. 0 or -1. */
static int fb_open_soft(struct fb *fb, int *ret_fd)
{
	*ret_fd = fb_soft_context_fd(42);
	if (*ret_fd < 0) {
		fb_fail(fb, "memfd: %s", strerror(-*ret_fd));
		*ret_fd = -1;
		return -1;
	}
	if (fb_hello(fb, "soft0", "soft") < 0 ||
	    fb_answer_open(fb, "soft0", *ret_fd) < 0)
		return -1;
	return 0;
}

/* Open a soft context, remove its device on the test's word, then answer
 * the close. */
static void script_remove_device(struct fb *fb)
{
	Rdmab__DeviceRemovedEvent dr = RDMAB__DEVICE_REMOVED_EVENT__INIT;
	Rdmab__Event ev = RDMAB__EVENT__INIT;
	int fd;

	if (fb_open_soft(fb, &fd) < 0 || fb_wait(fb, 1, TL_WAIT_MS) < 0)
		goto out;
	dr.device = (char *)"soft0";
	dr.reason = (char *)"fake: unplugged";
	ev.body_case = RDMAB__EVENT__BODY_DEVICE_REMOVED;
	ev.device_removed = &dr;
	if (fb_send_event(fb, &ev) == 0) {
		fb_answer_close(fb);
		fb_wait_eof(fb);
	}
out:
	if (fd >= 0)
		close(fd);
}

struct verbs_reader {
	struct ibc_ctx *ctx;
	int stop;
	unsigned long soft;
	bool removed;
};

static void *verbs_reader_main(void *arg)
{
	struct verbs_reader *v = arg;

	for (;;) {
		int last = __atomic_load_n(&v->stop, __ATOMIC_ACQUIRE);
		struct ibv_context *vctx;
		struct ibv_pd *vpd;
		int e1, e2;

		errno = 0;
		vctx = ibc_verbs_context(v->ctx);
		e1 = errno;
		vpd = ibc_verbs_pd(v->ctx);
		e2 = errno;
		if (!vctx && !vpd && e1 == ENODEV && e2 == ENODEV) {
			v->removed = true;
			break;
		}
		if (!vctx && !vpd && e1 == EOPNOTSUPP && e2 == EOPNOTSUPP)
			v->soft++;
		if (last)
			break;
	}
	return NULL;
}

/*
 * ibc_verbs_context() and ibc_verbs_pd() in one thread while another
 * dispatches the removal of the context's device, which closes this
 * process's objects under the lock: they read under it too (a data race
 * that ThreadSanitizer reports, make check-tsan, without the lock).
 */
START_TEST(test_verbs_context_during_removal)
{
	struct events_seen seen = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET |
			     IBC_CONNECT_ATTR_TIMEOUT |
			     IBC_CONNECT_ATTR_EVENT_CB,
		.timeout_ms = 5000,
		.event_cb = record_event,
		.event_arg = &seen,
	};
	struct verbs_reader v = { 0 };
	struct ibc_client *cl;
	pthread_t th;
	struct fb fb;

	FB_START(&fb, script_remove_device, NULL);
	attr.socket_path = fb.sock;
	ck_assert_int_eq(ibc_connect(&attr, &cl), 0);
	ck_assert_msg(ibc_open(cl, NULL, &v.ctx) == 0, "ibc_open: %s",
		      ibc_last_error());
	ck_assert_int_eq(pthread_create(&th, NULL, verbs_reader_main, &v), 0);
	fb_post(&fb, 1);
	ck_assert_int_eq(poll_fd(ibc_get_fd(cl), TL_WAIT_MS), 1);
	ck_assert_int_eq(ibc_dispatch(cl), 1);
	__atomic_store_n(&v.stop, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(seen.n, 1);
	ck_assert_int_eq(seen.type[0], IBC_EVENT_DEVICE_REMOVED);
	ck_assert(v.removed);
	ck_assert(ibc_verbs_context(v.ctx) == NULL && errno == ENODEV);
	ibc_close(v.ctx);
	ibc_disconnect(cl);
	FB_STOP(&fb);
}
END_TEST

/* --- an RSS Event before the create's reply ------------------------------ */

#define FB_RSS_ID 77

/* The create's Event (WQ 12 left) comes before its reply, as another
 * thread's read of the reply would let it come before the creator lists
 * the object; then the destroy and the close. */
static void script_rss_event_first(struct fb *fb)
{
	Rdmab__RssRebuiltEvent rb = RDMAB__RSS_REBUILT_EVENT__INIT;
	Rdmab__RssCreateReply cr = RDMAB__RSS_CREATE_REPLY__INIT;
	Rdmab__RssDestroyReply dr = RDMAB__RSS_DESTROY_REPLY__INIT;
	Rdmab__Reply reply = RDMAB__REPLY__INIT;
	Rdmab__Event ev = RDMAB__EVENT__INIT;
	uint64_t ids[3] = { 11, 12, 13 }, gone = 12, serial;
	int fd;

	if (fb_open_soft(fb, &fd) < 0 ||
	    fb_expect(fb, RDMAB__REQUEST__BODY_RSS_CREATE, &serial, NULL) < 0)
		goto out;
	rb.removed_wq_ids = &gone;
	rb.n_removed_wq_ids = 1;
	rb.delta = true;
	rb.reason = (char *)"fake: a WQ of the table went";
	ev.object_kind = IBC_OBJ_RWQ_IND_TBL;
	ev.object_id = FB_RSS_ID;
	ev.body_case = RDMAB__EVENT__BODY_RSS_REBUILT;
	ev.rss_rebuilt = &rb;
	if (fb_send_event(fb, &ev) < 0)
		goto out;
	cr.rss_id = FB_RSS_ID;
	cr.wq_ids = ids;
	cr.n_wq_ids = 3;
	reply.serial = serial;
	reply.body_case = RDMAB__REPLY__BODY_RSS_CREATE;
	reply.rss_create = &cr;
	if (fb_send_reply(fb, &reply, NULL, 0) < 0 ||
	    fb_expect(fb, RDMAB__REQUEST__BODY_RSS_DESTROY, &serial, NULL) < 0)
		goto out;
	reply.serial = serial;
	reply.body_case = RDMAB__REPLY__BODY_RSS_DESTROY;
	reply.rss_destroy = &dr;
	if (fb_send_reply(fb, &reply, NULL, 0) == 0) {
		fb_answer_close(fb);
		fb_wait_eof(fb);
	}
out:
	if (fd >= 0)
		close(fd);
}

/*
 * A delta Event of an RSS object that the library does not list yet,
 * read while its create is in flight: the create applies it (a delta lost
 * would leave the lookup on a WQ that is gone for good).
 */
START_TEST(test_rss_event_before_create_reply)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_TIMEOUT,
		.timeout_ms = 5000,
	};
	uint64_t ids[3] = { 11, 12, 13 };
	struct ibc_rss_attr ra = {
		.port_num = 1,
		.log_ind_tbl_size = 2,
		.num_wqs = 3,
		.wq_ids = ids,
		.hash_fields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4,
		.match = { .af = AF_INET, .prefix_len = 0 },
	};
	struct ibc_client *cl;
	struct ibc_ctx *ctx;
	struct ibc_rss *r;
	int seen[3] = { 0 };
	struct fb fb;

	memset(ra.hash_key, 0x5a, sizeof(ra.hash_key));
	FB_START(&fb, script_rss_event_first, NULL);
	attr.socket_path = fb.sock;
	ck_assert_int_eq(ibc_connect(&attr, &cl), 0);
	ck_assert_msg(ibc_open(cl, NULL, &ctx) == 0, "ibc_open: %s",
		      ibc_last_error());
	ck_assert_msg(ibc_rss_create(ctx, &ra, &r) == 0, "%s",
		      ibc_last_error());
	for (uint32_t i = 0; i < 256; i++) {
		struct ibc_flow f = { .af = AF_INET };
		uint64_t wq;

		memcpy(f.src_addr, &i, sizeof(i));
		ck_assert_int_eq(ibc_rss_lookup(r, &f, NULL, &wq), 0);
		ck_assert(wq >= 11 && wq <= 13);
		seen[wq - 11]++;
	}
	ck_assert_int_eq(seen[1], 0);
	ck_assert(seen[0] && seen[2]);
	ck_assert_int_eq(ibc_rss_destroy(r), 0);
	ibc_close(ctx);
	ibc_disconnect(cl);
	FB_STOP(&fb);
}
END_TEST

/* --- stale errno at the verbs boundary ---------------------------------- */

/* Open a "verbs" context whose import the shim fails without errno. */
static void script_verbs_open(struct fb *fb)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		fb_fail(fb, "/dev/null: %s", strerror(errno));
		return;
	}
	if (fb_hello(fb, "mlx5_0", "verbs") == 0 &&
	    fb_answer_open(fb, "mlx5_0", fd) == 0) {
		fb_answer_close(fb);
		fb_wait_eof(fb);
	}
	close(fd);
}

/*
 * An import that fails without setting errno reports the fallback (EIO)
 * and its own sentence, whatever an earlier call left in errno: ENODEV
 * picked the "does not see the device" sentence, EOPNOTSUPP the fallback
 * to a context of this process's own.
 */
START_TEST(test_stale_errno_import)
{
	static const int stale[] = { ENODEV, EOPNOTSUPP, EINVAL };

	for (size_t i = 0; i < 3; i++) {
		struct ibc_connect_attr attr = {
			.comp_mask = IBC_CONNECT_ATTR_SOCKET |
				     IBC_CONNECT_ATTR_FLAGS,
			.flags = IBC_CONNECT_ALLOW_OWN_CONTEXT,
		};
		struct ibc_ctx *ctx = NULL;
		struct ibc_client *cl;
		struct fb fb;
		int ret;

		FB_START(&fb, script_verbs_open, NULL);
		attr.socket_path = fb.sock;
		ck_assert_int_eq(ibc_connect(&attr, &cl), 0);
		verbs_shim_mode = VERBS_SHIM_SILENT;
		verbs_shim_calls = 0;
		errno = stale[i];
		ret = ibc_open(cl, NULL, &ctx);
		verbs_shim_mode = VERBS_SHIM_REAL;
		ck_assert_msg(verbs_shim_calls > 0,
			      "the shim of ibv_import_device was not called");
		ck_assert_msg(ret == -EIO && strstr(ibc_last_error(),
						    "ibv_import_device failed"),
			      "stale %s: %d \"%s\"", strerror(stale[i]), ret,
			      ibc_last_error());
		ibc_disconnect(cl);
		FB_STOP(&fb);
	}
}
END_TEST

/* --- the registry's flows on a shared verbs context ----------------------
 *
 * rxe cannot import, so no kernel runs these: the shim plays an imported
 * context (VERBS_SHIM_IMPORT) and the broker is a script. A create
 * declares its intent and waits for the id, makes the CQ, then registers
 * it without waiting; a destroy unregisters without waiting, and the
 * unregister is in the broker's socket before the kernel destroy runs
 * (proto/README.md, "The registry invariant").
 */

#define VR_ID 7

static struct fb *vr_fb;
/* What the broker's socket held when the kernel destroy ran. */
static int vr_destroy_saw = -1;

static void vr_destroy_hook(struct ibv_cq *cq)
{
	uint8_t buf[256];
	Rdmab__Request *req;
	ssize_t n;

	(void)cq;
	vr_destroy_saw = 0;
	n = recv(vr_fb->conn, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	if (n <= 0)
		return;
	req = rdmab__request__unpack(NULL, (size_t)n, buf);
	if (req && req->body_case == RDMAB__REQUEST__BODY_OBJ_DESTROY &&
	    req->obj_destroy->object_id == VR_ID)
		vr_destroy_saw = 1;
	if (req)
		rdmab__request__free_unpacked(req, NULL);
}

/* The session up to a CQ's intent, answered with VR_ID; the context's
 * descriptor is @fd. 0 or -1 (the failure recorded). */
static int vr_begin(struct fb *fb, int fd)
{
	Rdmab__ObjCreateReply ocr = RDMAB__OBJ_CREATE_REPLY__INIT;
	Rdmab__Reply reply = RDMAB__REPLY__INIT;
	Rdmab__Request *req = NULL;
	uint64_t serial;
	int ret = -1;

	if (fb_hello(fb, "mlx5_0", "verbs") < 0 ||
	    fb_answer_open(fb, "mlx5_0", fd) < 0 ||
	    fb_expect(fb, RDMAB__REQUEST__BODY_OBJ_CREATE, &serial, &req) < 0)
		goto out;
	if (req->obj_create->mode != RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT ||
	    req->obj_create->kind != IBC_OBJ_CQ ||
	    req->obj_create->context_id != 42) {
		fb_fail(fb, "not a CQ's intent in context 42: mode %d kind %u",
			(int)req->obj_create->mode, req->obj_create->kind);
		goto out;
	}
	ocr.object_id = VR_ID;
	reply.serial = serial;
	reply.body_case = RDMAB__REPLY__BODY_OBJ_CREATE;
	reply.obj_create = &ocr;
	ret = fb_send_reply(fb, &reply, NULL, 0);
out:
	if (req)
		rdmab__request__free_unpacked(req, NULL);
	return ret;
}

static void script_verbs_registry(struct fb *fb)
{
	Rdmab__Reply reply = RDMAB__REPLY__INIT;
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	Rdmab__Request *req = NULL;
	uint64_t serial;

	if (fd < 0) {
		fb_fail(fb, "/dev/null: %s", strerror(errno));
		return;
	}
	if (vr_begin(fb, fd) < 0)
		goto out;
	/* ibc_cq_create returns with its register unread and unanswered. */
	if (fb_wait(fb, 1, TL_WAIT_MS) < 0) {
		fb_fail(fb, "ibc_cq_create did not return: it waited for the "
			    "register's reply");
		goto out;
	}
	if (fb_expect(fb, RDMAB__REQUEST__BODY_OBJ_REGISTER, &serial, &req) < 0)
		goto out;
	if (req->obj_register->object_id != VR_ID ||
	    req->obj_register->handle != 5) {
		fb_fail(fb, "register of object %llu handle %u, not %d and 5",
			(unsigned long long)req->obj_register->object_id,
			req->obj_register->handle, VR_ID);
		goto out;
	}
	/* An error reply to a register is ignored. */
	reply = (Rdmab__Reply)RDMAB__REPLY__INIT;
	reply.serial = serial;
	reply.error = EINVAL;
	reply.message = (char *)"ignored";
	if (fb_send_reply(fb, &reply, NULL, 0) < 0)
		goto out;
	fb_post(fb, 2);
	if (fb_wait(fb, 3, TL_WAIT_MS) < 0) {
		fb_fail(fb, "ibc_cq_destroy did not return: it waited for the "
			    "unregister's reply");
		goto out;
	}
	if (fb_expect(fb, RDMAB__REQUEST__BODY_OBJ_DESTROY, &serial, NULL) < 0)
		goto out;
	/* The close's reply is matched by its serial after those. */
	fb_answer_close(fb);
	fb_wait_eof(fb);
out:
	if (req)
		rdmab__request__free_unpacked(req, NULL);
	close(fd);
}

START_TEST(test_verbs_registry_nowait)
{
	struct ibc_ctx *ctx = NULL;
	struct ibc_cq *cq = NULL;
	struct ibc_client *cl;
	struct ibc_caps q;
	struct fb fb;

	FB_START(&fb, script_verbs_registry, NULL);
	vr_fb = &fb;
	vr_destroy_saw = -1;
	verbs_shim_destroy_hook = vr_destroy_hook;
	verbs_shim_mode = VERBS_SHIM_IMPORT;
	ck_assert_int_eq(tl_connect(fb.sock, 5000, &cl), 0);
	ck_assert_msg(ibc_open(cl, NULL, &ctx) == 0, "%s", ibc_last_error());
	ck_assert_int_eq(ibc_query(ctx, &q, sizeof(q)), 0);
	ck_assert(q.shared);
	ck_assert_msg(ibc_cq_create(ctx, 16, &cq) == 0, "%s", ibc_last_error());
	ck_assert_ptr_nonnull(ibc_verbs_cq(cq));
	fb_post(&fb, 1);
	/* The broker has read the register: nothing is queued. */
	ck_assert_int_eq(fb_wait(&fb, 2, TL_WAIT_MS), 0);
	ck_assert_msg(ibc_cq_destroy(cq) == 0, "%s", ibc_last_error());
	ck_assert_msg(vr_destroy_saw == 1, "the kernel destroy ran %s",
		      vr_destroy_saw < 0 ? "not at all" :
					   "before the unregister was sent");
	fb_post(&fb, 3);
	ibc_close(ctx);
	ibc_disconnect(cl);
	verbs_shim_mode = VERBS_SHIM_REAL;
	verbs_shim_destroy_hook = NULL;
	FB_STOP(&fb);
}
END_TEST

/*
 * A broker that answers a register EAGAIN, as a restarted one answers a
 * request the killed one read and did not serve: the library sends the
 * register again, under its serial, each time it reads such an answer
 * (here while it waits for its pings), and gives up after 4 more: a
 * broker that answers EAGAIN forever costs it 5 sends, not one a read.
 */
#define VR_PINGS 8

static void script_verbs_register_eagain(struct fb *fb)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	unsigned int registers = 0, pings = 0;
	uint64_t first = 0, serial;

	if (fd < 0) {
		fb_fail(fb, "/dev/null: %s", strerror(errno));
		return;
	}
	if (vr_begin(fb, fd) < 0)
		goto out;
	while (pings < VR_PINGS) {
		struct pollfd p = { .fd = fb->conn, .events = POLLIN };
		Rdmab__Reply reply = RDMAB__REPLY__INIT;
		Rdmab__Request *req;
		uint8_t buf[512];
		ssize_t n;

		if (poll(&p, 1, TL_WAIT_MS) != 1 ||
		    (n = recv(fb->conn, buf, sizeof(buf), 0)) <= 0) {
			fb_fail(fb, "no request after %u pings", pings);
			goto out;
		}
		req = rdmab__request__unpack(NULL, (size_t)n, buf);
		if (!req) {
			fb_fail(fb, "a request that does not decode");
			goto out;
		}
		if (req->body_case == RDMAB__REQUEST__BODY_PING) {
			fb_answer_ping(fb, req->serial, req);
			pings++;
		} else if (req->body_case ==
				   RDMAB__REQUEST__BODY_OBJ_REGISTER &&
			   req->obj_register->object_id == VR_ID &&
			   (!first || req->serial == first)) {
			first = req->serial;
			registers++;
			reply.serial = req->serial;
			reply.error = EAGAIN;
			reply.message = (char *)"the broker restarted while "
						"serving this request";
			fb_send_reply(fb, &reply, NULL, 0);
		} else {
			fb_fail(fb, "request %d (serial %llu) after %u pings",
				(int)req->body_case,
				(unsigned long long)req->serial, pings);
			rdmab__request__free_unpacked(req, NULL);
			goto out;
		}
		rdmab__request__free_unpacked(req, NULL);
	}
	if (registers != 5)
		fb_fail(fb,
			"the register was sent %u times, not once and 4 "
			"times again",
			registers);
	if (fb_expect(fb, RDMAB__REQUEST__BODY_OBJ_DESTROY, &serial, NULL) < 0)
		goto out;
	fb_answer_close(fb);
	fb_wait_eof(fb);
out:
	close(fd);
}

/* The client of the resend scripts: a CQ made and destroyed, @pings
 * pings; @destroy_first: destroyed before the pings, which wait for the
 * script's step 1, else after them. */
static void vr_resend_client(fb_script script, bool destroy_first, int pings)
{
	struct ibc_ctx *ctx = NULL;
	struct ibc_cq *cq = NULL;
	struct ibc_client *cl;
	struct fb fb;

	FB_START(&fb, script, NULL);
	verbs_shim_mode = VERBS_SHIM_IMPORT;
	ck_assert_int_eq(tl_connect(fb.sock, 5000, &cl), 0);
	ck_assert_msg(ibc_open(cl, NULL, &ctx) == 0, "%s", ibc_last_error());
	ck_assert_msg(ibc_cq_create(ctx, 16, &cq) == 0, "%s", ibc_last_error());
	if (destroy_first) {
		ck_assert_msg(ibc_cq_destroy(cq) == 0, "%s", ibc_last_error());
		ck_assert_int_eq(fb_wait(&fb, 1, TL_WAIT_MS), 0);
	}
	for (int i = 0; i < pings; i++)
		ck_assert_msg(ibc_ping(cl, NULL, 0) == 0, "ping %d: %s", i,
			      ibc_last_error());
	if (!destroy_first)
		ck_assert_msg(ibc_cq_destroy(cq) == 0, "%s", ibc_last_error());
	ibc_close(ctx);
	ibc_disconnect(cl);
	verbs_shim_mode = VERBS_SHIM_REAL;
	FB_STOP(&fb);
}

START_TEST(test_verbs_register_eagain_resent)
{
	vr_resend_client(script_verbs_register_eagain, false, VR_PINGS);
}
END_TEST

/*
 * A register and the unregister of its CQ, both unanswered when the
 * restart barrier's answer comes (a broker killed after it read them):
 * the library sends both again in the order it first sent them, the
 * register before the unregister, so that the new broker never sees an
 * unregister of an object it has not registered yet.
 */
static int vr_expect_again(struct fb *fb, Rdmab__Request__BodyCase body,
			   uint64_t want)
{
	uint64_t serial;

	if (fb_expect(fb, body, &serial, NULL) < 0)
		return -1;
	if (serial != want)
		return fb_fail(fb,
			       "request %d sent again as serial %llu, not "
			       "%llu",
			       (int)body, (unsigned long long)serial,
			       (unsigned long long)want);
	return 0;
}

static void script_verbs_resend_order(struct fb *fb)
{
	Rdmab__RestartEvent re = RDMAB__RESTART_EVENT__INIT;
	Rdmab__Event ev = RDMAB__EVENT__INIT;
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	Rdmab__Request *req = NULL;
	uint64_t reg, unreg, serial;

	if (fd < 0) {
		fb_fail(fb, "/dev/null: %s", strerror(errno));
		return;
	}
	if (vr_begin(fb, fd) < 0 ||
	    fb_expect(fb, RDMAB__REQUEST__BODY_OBJ_REGISTER, &reg, NULL) < 0 ||
	    fb_expect(fb, RDMAB__REQUEST__BODY_OBJ_DESTROY, &unreg, NULL) < 0)
		goto out;
	re.generation = 2;
	re.reason = (char *)"fake: restarted";
	ev.body_case = RDMAB__EVENT__BODY_RESTARTED;
	ev.restarted = &re;
	if (fb_send_event(fb, &ev) < 0)
		goto out;
	fb_post(fb, 1);
	/* The first ping, then the barrier's: answered in that order. */
	if (fb_expect(fb, RDMAB__REQUEST__BODY_PING, &serial, &req) < 0 ||
	    fb_answer_ping(fb, serial, req) < 0)
		goto out;
	rdmab__request__free_unpacked(req, NULL);
	req = NULL;
	if (fb_expect(fb, RDMAB__REQUEST__BODY_PING, &serial, &req) < 0 ||
	    fb_answer_ping(fb, serial, req) < 0)
		goto out;
	rdmab__request__free_unpacked(req, NULL);
	req = NULL;
	/* The second ping reads the barrier's answer: then the two again. */
	if (fb_expect(fb, RDMAB__REQUEST__BODY_PING, &serial, &req) < 0 ||
	    vr_expect_again(fb, RDMAB__REQUEST__BODY_OBJ_REGISTER, reg) < 0 ||
	    vr_expect_again(fb, RDMAB__REQUEST__BODY_OBJ_DESTROY, unreg) < 0 ||
	    fb_answer_ping(fb, serial, req) < 0)
		goto out;
	fb_answer_close(fb);
	fb_wait_eof(fb);
out:
	if (req)
		rdmab__request__free_unpacked(req, NULL);
	close(fd);
}

START_TEST(test_verbs_resend_order)
{
	vr_resend_client(script_verbs_resend_order, true, 2);
}
END_TEST

/*
 * The kernel answers a CQ's destroy with ENOENT: another process of the
 * domain destroyed the handle with a raw ioctl on the shared command
 * descriptor. The unregister went first; the CQ is not handed back to the
 * registry (no ObjCreateRequest TRACK before the close: the broker would
 * destroy, once this process exits, whatever object the kernel gives the
 * handle next), the destroy answers -ENOENT as ibv_destroy_cq answers
 * ENOENT, and ibc_close does not destroy the handle again.
 */
static void script_verbs_gone(struct fb *fb)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	Rdmab__Request *req = NULL;
	uint64_t serial;

	if (fd < 0) {
		fb_fail(fb, "/dev/null: %s", strerror(errno));
		return;
	}
	if (vr_begin(fb, fd) < 0 ||
	    fb_expect(fb, RDMAB__REQUEST__BODY_OBJ_REGISTER, &serial, NULL) <
		    0 ||
	    fb_expect(fb, RDMAB__REQUEST__BODY_OBJ_DESTROY, &serial, &req) < 0)
		goto out;
	if (req->obj_destroy->object_id != VR_ID) {
		fb_fail(fb, "unregister of object %llu, not %d",
			(unsigned long long)req->obj_destroy->object_id, VR_ID);
		goto out;
	}
	/* Next comes the close: a TRACK here is the CQ handed back. */
	fb_answer_close(fb);
	fb_wait_eof(fb);
out:
	if (req)
		rdmab__request__free_unpacked(req, NULL);
	close(fd);
}

/* The shim's kernel answers the next destroy ENOENT; the count of its
 * calls so far. */
static unsigned int shim_gone_begin(void)
{
	verbs_shim_destroy_ret = ENOENT;
	return verbs_shim_calls;
}

/* After that destroy answered -ENOENT: the kernel's sentence kept, and
 * @verb ran once (ibc_close does not destroy the handle again); the
 * session ends, the shim back to libibverbs. */
static void shim_gone_end(struct ibc_ctx *ctx, struct ibc_client *cl,
			  unsigned int calls, const char *verb)
{
	ck_assert_msg(strstr(ibc_last_error(), strerror(ENOENT)), "\"%s\"",
		      ibc_last_error());
	ibc_close(ctx);
	ck_assert_msg(verbs_shim_calls == calls + 1,
		      "%s ran %u times, not once", verb,
		      verbs_shim_calls - calls);
	ibc_disconnect(cl);
	verbs_shim_destroy_ret = 0;
	verbs_shim_mode = VERBS_SHIM_REAL;
}

START_TEST(test_verbs_destroy_gone)
{
	struct ibc_ctx *ctx = NULL;
	struct ibc_cq *cq = NULL;
	struct ibv_cq *vcq;
	struct ibc_client *cl;
	unsigned int calls;
	struct fb fb;

	FB_START(&fb, script_verbs_gone, NULL);
	verbs_shim_mode = VERBS_SHIM_IMPORT;
	ck_assert_int_eq(tl_connect(fb.sock, 5000, &cl), 0);
	ck_assert_msg(ibc_open(cl, NULL, &ctx) == 0, "%s", ibc_last_error());
	ck_assert_msg(ibc_cq_create(ctx, 16, &cq) == 0, "%s", ibc_last_error());
	vcq = ibc_verbs_cq(cq);
	ck_assert_ptr_nonnull(vcq);
	calls = shim_gone_begin();
	ck_assert_int_eq(ibc_cq_destroy(cq), -ENOENT);
	shim_gone_end(ctx, cl, calls, "ibv_destroy_cq");
	/* libibverbs keeps a CQ the kernel refused to destroy. */
	free(vcq);
	FB_STOP(&fb);
}
END_TEST

/*
 * An XRCD of the process's own context (rxe, siw: no import) whose close
 * the kernel answers ENOENT: the process closed the handle itself with a
 * raw ioctl. ibc_xrcd_close frees the XRCD and answers -ENOENT; the broker,
 * which counts the name's own opens and charges them to the domain, is
 * told the open ended (XrcdClose of its id) before the context's close.
 * Untold, it held the open and its charge until the session ended.
 */
#define OWN_XRCD_OPEN 9

static void script_own_xrcd_gone(struct fb *fb)
{
	Rdmab__XrcdOpenReply xo = RDMAB__XRCD_OPEN_REPLY__INIT;
	Rdmab__Reply reply = RDMAB__REPLY__INIT;
	char path[] = "/tmp/check_client-xrcd-XXXXXX";
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC), xfd;
	Rdmab__Request *req = NULL;
	uint64_t serial;
	struct stat st;

	xfd = mkostemp(path, O_CLOEXEC);
	if (fd < 0 || xfd < 0 || fstat(xfd, &st) < 0) {
		fb_fail(fb, "/dev/null or %s: %s", path, strerror(errno));
		goto out;
	}
	if (fb_hello(fb, "fake0", "verbs") < 0 ||
	    fb_answer_open(fb, "fake0", fd) < 0 ||
	    fb_expect(fb, RDMAB__REQUEST__BODY_XRCD_OPEN, &serial, &req) < 0)
		goto out;
	if (!req->xrcd_open->own) {
		fb_fail(fb, "the XRCD open is not an own context's");
		goto out;
	}
	xo.object_id = OWN_XRCD_OPEN;
	xo.inode = (uint64_t)st.st_ino;
	reply.serial = serial;
	reply.body_case = RDMAB__REPLY__BODY_XRCD_OPEN;
	reply.xrcd_open = &xo;
	if (fb_send_reply(fb, &reply, &xfd, 1) < 0)
		goto out;
	rdmab__request__free_unpacked(req, NULL);
	req = NULL;
	/* A CloseContext here is the open left counted. */
	if (fb_expect(fb, RDMAB__REQUEST__BODY_XRCD_CLOSE, &serial, &req) < 0)
		goto out;
	if (req->xrcd_close->object_id != OWN_XRCD_OPEN) {
		fb_fail(fb, "XRCD close of open %llu, not %d",
			(unsigned long long)req->xrcd_close->object_id,
			OWN_XRCD_OPEN);
		goto out;
	}
	fb_answer_close(fb);
	fb_wait_eof(fb);
out:
	if (req)
		rdmab__request__free_unpacked(req, NULL);
	if (xfd >= 0) {
		unlink(path);
		close(xfd);
	}
	if (fd >= 0)
		close(fd);
}

START_TEST(test_own_xrcd_close_gone)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_FLAGS,
		.flags = IBC_CONNECT_ALLOW_OWN_CONTEXT,
	};
	struct ibc_ctx *ctx = NULL;
	struct ibc_xrcd *x = NULL;
	struct ibv_xrcd *vx;
	struct ibc_client *cl;
	unsigned int calls;
	struct fb fb;
	struct ibc_caps q;

	FB_START(&fb, script_own_xrcd_gone, NULL);
	attr.socket_path = fb.sock;
	ck_assert_int_eq(ibc_connect(&attr, &cl), 0);
	verbs_shim_mode = VERBS_SHIM_OWN;
	ck_assert_msg(ibc_open(cl, NULL, &ctx) == 0, "%s", ibc_last_error());
	ck_assert_int_eq(ibc_query(ctx, &q, sizeof(q)), 0);
	ck_assert(!q.shared);
	ck_assert_msg(ibc_xrcd_open(ctx, "own", O_CREAT, &x) == 0, "%s",
		      ibc_last_error());
	vx = ibc_verbs_xrcd(x);
	ck_assert_ptr_nonnull(vx);
	calls = shim_gone_begin();
	ck_assert_int_eq(ibc_xrcd_close(x), -ENOENT);
	shim_gone_end(ctx, cl, calls, "ibv_close_xrcd");
	/* libibverbs keeps an XRCD the kernel refused to close. */
	free(vx);
	FB_STOP(&fb);
}
END_TEST

/* A clean ibc_disconnect closes a shared verbs context's import (its UARs
 * go with ibv_close_device) and says so (script_verbs_open expects the
 * CloseContext): else the broker counts the session as an importer that
 * died holding its UARs. */
START_TEST(test_verbs_disconnect_closes)
{
	struct ibc_ctx *ctx = NULL;
	struct ibc_client *cl;
	struct fb fb;

	FB_START(&fb, script_verbs_open, NULL);
	verbs_shim_mode = VERBS_SHIM_IMPORT;
	ck_assert_int_eq(tl_connect(fb.sock, 5000, &cl), 0);
	ck_assert_msg(ibc_open(cl, NULL, &ctx) == 0, "%s", ibc_last_error());
	ibc_disconnect(cl);
	verbs_shim_mode = VERBS_SHIM_REAL;
	FB_STOP(&fb);
}
END_TEST

static Suite *client_suite(void)
{
	Suite *s = suite_create("client");
	TCase *tc = tcase_create("client");

	tcase_add_checked_fixture(tc, daemon_setup, daemon_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_threads_share_client);
	tcase_add_test(tc, test_last_error_thread_local);
	tcase_add_test(tc, test_event_fd);
	tcase_add_test(tc, test_shutdown_while_busy);
	tcase_add_test(tc, test_shutdown_behind_reset);
	tcase_add_test(tc, test_connect_errors);
	tcase_add_test(tc, test_connect_cycles_no_leak);
	tcase_add_test(tc, test_ping_sizes);
	suite_add_tcase(s, tc);

	tc = tcase_create("hostile");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_epipe_waits_for_reader);
	tcase_add_test(tc, test_reply_slow_path);
	tcase_add_test(tc, test_send_timeout);
	tcase_add_test(tc, test_error_out_of_range);
	tcase_add_test(tc, test_open_without_fd);
	tcase_add_test(tc, test_open_waits_for_bare_read);
	tcase_add_test(tc, test_open_reply_after_other_reply);
	tcase_add_test(tc, test_verbs_context_during_removal);
	tcase_add_test(tc, test_rss_event_before_create_reply);
	tcase_add_test(tc, test_stale_errno_import);
	tcase_add_test(tc, test_verbs_registry_nowait);
	tcase_add_test(tc, test_verbs_register_eagain_resent);
	tcase_add_test(tc, test_verbs_resend_order);
	tcase_add_test(tc, test_verbs_destroy_gone);
	tcase_add_test(tc, test_own_xrcd_close_gone);
	tcase_add_test(tc, test_verbs_disconnect_closes);
	tcase_add_test(tc, test_fork_init_stalled_broker);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("client", client_suite());
}
