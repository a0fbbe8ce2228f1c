// SPDX-License-Identifier: MIT
/*
 * How long the library waits for a reply, against a fake broker
 * (tests/fakebroker.h): a call is bounded by its timeout however many
 * packets that are not its reply come meanwhile, and a request a broker
 * read and then lost in a restart (killed between recv(2) and storing it
 * as in flight) is answered EAGAIN once the restart barrier's reply
 * shows that no broker will answer it (issue 25 item 3).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "include/ibclient.h"
#include "tests/cklib.h"
#include "tests/fakebroker.h"
#include "tests/testlib.h"

/* The client's timeout in the wait test; the broker's events come every
 * half of it, for WAIT_EVENTS of them. */
#define WAIT_TIMEOUT_MS 1000
#define WAIT_EVENTS 10

/* Take the ping and never answer it; send an event of no kind the library
 * knows (a newer broker's) every half timeout until the test is done, the
 * second one just before the call's deadline. */
static void script_trickle(struct fb *fb)
{
	Rdmab__Event ev = RDMAB__EVENT__INIT;
	uint64_t serial;

	if (fb_hello(fb, "soft0", "soft") < 0 ||
	    fb_expect(fb, RDMAB__REQUEST__BODY_PING, &serial, NULL) < 0)
		return;
	for (int i = 0; i < WAIT_EVENTS; i++) {
		if (fb_wait(fb, 1,
			    i ? WAIT_TIMEOUT_MS / 2 :
				WAIT_TIMEOUT_MS / 2 - WAIT_TIMEOUT_MS / 50) ==
		    0)
			return;
		if (fb_send_event(fb, &ev) < 0)
			return;
	}
	if (fb_wait(fb, 1, TL_WAIT_MS) < 0)
		fb_fail(fb, "the test did not finish");
}

/* Each packet that was not the reply restarted a whole SO_RCVTIMEO: the
 * event just before the deadline made the call wait for the next one, half
 * a timeout more (and a whole one with no next event: twice the
 * timeout). */
START_TEST(test_wait_bounded_by_deadline)
{
	struct ibc_client *cl;
	int64_t t0, took;
	struct fb fb;
	int ret;

	FB_START(&fb, script_trickle, NULL);
	ck_assert_int_eq(tl_connect(fb.sock, WAIT_TIMEOUT_MS, &cl), 0);
	t0 = tl_now_ms();
	ret = ibc_ping(cl, "p", 1);
	took = tl_now_ms() - t0;
	fb_post(&fb, 1);
	ck_assert_msg(ret == -ETIMEDOUT, "ping: %d \"%s\"", ret,
		      ibc_last_error());
	/* The first read may end an eighth past the deadline; the rest is
	 * slack for a loaded machine, below the 1.48 timeouts of a wait
	 * that the event restarted. */
	ck_assert_msg(took < WAIT_TIMEOUT_MS * 5 / 4,
		      "a call with a %d ms timeout took %lld ms",
		      WAIT_TIMEOUT_MS, (long long)took);
	ibc_disconnect(cl);
	FB_STOP(&fb);
}
END_TEST

/* What the restarted broker of script_restart() does with the first
 * ping: never saw it (lost), or answers it before the barrier; or, with
 * two pings from two threads, loses the first and answers the second. */
enum restart_mode { RESTART_LOST, RESTART_SERVED, RESTART_TWO };

/*
 * A broker killed after reading the first ping, before storing it as in
 * flight: the next one sends the Restarted event and then serves what is
 * in the socket, in order. The library's barrier ping must come next.
 */
static void script_restart(struct fb *fb)
{
	Rdmab__RestartEvent rev = RDMAB__RESTART_EVENT__INIT;
	Rdmab__Request *lost = NULL, *barrier = NULL, *second = NULL;
	Rdmab__Event ev = RDMAB__EVENT__INIT;
	enum restart_mode mode = *(enum restart_mode *)fb->arg;
	uint64_t serial, bserial, serial2 = 0;

	if (fb_hello(fb, "soft0", "soft") < 0 ||
	    fb_expect(fb, RDMAB__REQUEST__BODY_PING, &serial, &lost) < 0)
		return;
	if (mode == RESTART_TWO &&
	    fb_expect(fb, RDMAB__REQUEST__BODY_PING, &serial2, &second) < 0)
		goto out;
	rev.generation = 2;
	rev.restarts = 1;
	rev.reason = (char *)"fake: the broker restarted (generation 2)";
	ev.body_case = RDMAB__EVENT__BODY_RESTARTED;
	ev.restarted = &rev;
	if (fb_send_event(fb, &ev) < 0 ||
	    fb_expect(fb, RDMAB__REQUEST__BODY_PING, &bserial, &barrier) < 0)
		goto out;
	if (bserial <= serial)
		fb_fail(fb, "the barrier's serial %llu is not after %llu",
			(unsigned long long)bserial,
			(unsigned long long)serial);
	if (mode == RESTART_SERVED && fb_answer_ping(fb, serial, lost) < 0)
		goto out;
	if (mode == RESTART_TWO && fb_answer_ping(fb, serial2, second) < 0)
		goto out;
	if (fb_answer_ping(fb, bserial, barrier) < 0)
		goto out;
	/* The session goes on. */
	rdmab__request__free_unpacked(lost, NULL);
	lost = NULL;
	if (fb_expect(fb, RDMAB__REQUEST__BODY_PING, &serial, &lost) == 0 &&
	    fb_answer_ping(fb, serial, lost) == 0)
		fb_wait_eof(fb);
out:
	if (lost)
		rdmab__request__free_unpacked(lost, NULL);
	if (barrier)
		rdmab__request__free_unpacked(barrier, NULL);
	if (second)
		rdmab__request__free_unpacked(second, NULL);
}

/* The lost request waited its whole timeout (20 s here) for an answer
 * no broker would send. */
START_TEST(test_restart_lost_request_eagain)
{
	enum restart_mode mode = RESTART_LOST;
	struct ibc_client *cl;
	int64_t t0, took;
	struct fb fb;
	int ret;

	FB_START(&fb, script_restart, &mode);
	ck_assert_int_eq(tl_connect(fb.sock, 20000, &cl), 0);
	t0 = tl_now_ms();
	ret = ibc_ping(cl, "p", 1);
	took = tl_now_ms() - t0;
	ck_assert_msg(ret == -EAGAIN &&
			      strcmp(ibc_last_error(),
				     "the broker restarted while serving "
				     "this request") == 0,
		      "ping: %d \"%s\" after %lld ms", ret, ibc_last_error(),
		      (long long)took);
	ck_assert_msg(took < TL_WAIT_MS, "took %lld ms", (long long)took);
	ck_assert_msg(ibc_ping(cl, "p", 1) == 0, "next: %s", ibc_last_error());
	ibc_disconnect(cl);
	FB_STOP(&fb);
}
END_TEST

/* A request the new broker read from the socket and answered before the
 * barrier is not lost: its reply is the caller's. */
START_TEST(test_restart_served_request_kept)
{
	enum restart_mode mode = RESTART_SERVED;
	struct ibc_client *cl;
	struct fb fb;

	FB_START(&fb, script_restart, &mode);
	ck_assert_int_eq(tl_connect(fb.sock, 20000, &cl), 0);
	ck_assert_msg(ibc_ping(cl, "p", 1) == 0, "ping: %s", ibc_last_error());
	ck_assert_msg(ibc_ping(cl, "p", 1) == 0, "next: %s", ibc_last_error());
	ibc_disconnect(cl);
	FB_STOP(&fb);
}
END_TEST

struct pinger {
	struct ibc_client *cl;
	char payload[8];
	int ret;
	char text[256];
};

static void *pinger_main(void *arg)
{
	struct pinger *p = arg;

	p->ret = ibc_ping(p->cl, p->payload, strlen(p->payload));
	snprintf(p->text, sizeof(p->text), "%s", ibc_last_error());
	return NULL;
}

/* Two threads wait, one of them reading for both: the one whose request
 * the broker lost gets EAGAIN, the other its own reply. */
START_TEST(test_restart_two_threads)
{
	enum restart_mode mode = RESTART_TWO;
	struct pinger p[2] = { { .payload = "one" }, { .payload = "two" } };
	struct ibc_client *cl;
	pthread_t t[2];
	struct fb fb;

	FB_START(&fb, script_restart, &mode);
	ck_assert_int_eq(tl_connect(fb.sock, 20000, &cl), 0);
	for (int i = 0; i < 2; i++) {
		p[i].cl = cl;
		ck_assert_int_eq(
			pthread_create(&t[i], NULL, pinger_main, &p[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	/* Which thread sent first is the scheduler's choice. */
	ck_assert_msg((p[0].ret == -EAGAIN && p[1].ret == 0) ||
			      (p[0].ret == 0 && p[1].ret == -EAGAIN),
		      "one: %d \"%s\", two: %d \"%s\"", p[0].ret, p[0].text,
		      p[1].ret, p[1].text);
	ck_assert_msg(ibc_ping(cl, "p", 1) == 0, "next: %s", ibc_last_error());
	ibc_disconnect(cl);
	FB_STOP(&fb);
}
END_TEST

static Suite *client_wait_suite(void)
{
	Suite *s = suite_create("client_wait");
	TCase *tc = tcase_create("wait");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_wait_bounded_by_deadline);
	tcase_add_test(tc, test_restart_lost_request_eagain);
	tcase_add_test(tc, test_restart_served_request_kept);
	tcase_add_test(tc, test_restart_two_threads);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("client_wait", client_wait_suite());
}
