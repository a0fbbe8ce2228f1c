// SPDX-License-Identifier: MIT
/*
 * libibclient against the real daemon: one client driven by many threads,
 * the thread-local error sentence, the event descriptor, and the calls'
 * failure paths.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cklib.h"
#include "tests/testlib.h"

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

static void record_event(struct ibc_client *client,
			 const struct ibc_event *ev, void *arg)
{
	struct events_seen *seen = arg;

	pthread_mutex_lock(&seen->lock);
	if (seen->n < 8) {
		seen->type[seen->n] = ev->type;
		snprintf(seen->message[seen->n], sizeof(seen->message[0]),
			 "%s", ev->message ? ev->message : "");
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
		ck_assert_int_eq(pthread_create(&th[t], NULL, pinger_main,
						&p[t]),
				 0);
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
	snprintf(e->text_later, sizeof(e->text_later), "%s",
		 ibc_last_error());
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
	snprintf(e->text_later, sizeof(e->text_later), "%s",
		 ibc_last_error());
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
		.comp_mask = IBC_CONNECT_ATTR_SOCKET |
			     IBC_CONNECT_ATTR_EVENT_CB,
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
	ck_assert_msg(code == 0,
		      "the client process exited with %d: %s", code,
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
	return s;
}

int main(void)
{
	return ck_run("client", client_suite());
}
