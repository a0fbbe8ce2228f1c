// SPDX-License-Identifier: MIT
/*
 * Requests and replies: any thread may call; the first one that needs a
 * reply reads the socket for everyone, the others wait on a condition
 * variable. Events read on the way are queued for ibc_dispatch().
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "libclient/client.h"

struct ibc_waiter {
	struct ibc_waiter *next;
	uint64_t serial;
	bool done;
	struct ibc_reply r;
};

struct ibc_queued_event {
	struct ibc_queued_event *next;
	enum ibc_event_type type;
	char message[256];
	char device[64];
};

void ibc_reply_free(struct ibc_reply *r)
{
	wire_fds_close(&r->fds);
	if (r->msg)
		rdmab__daemon_message__free_unpacked(r->msg, NULL);
	r->msg = NULL;
	r->reply = NULL;
}

/* Called with the lock held. */
void ibc_queue_event(struct ibc_client *cl, enum ibc_event_type type,
		     const char *message, const char *device)
{
	struct ibc_queued_event *e = calloc(1, sizeof(*e));
	uint64_t one = 1;

	if (!e)
		return;
	e->type = type;
	snprintf(e->message, sizeof(e->message), "%s", message);
	snprintf(e->device, sizeof(e->device), "%s", device ? device : "");
	*cl->events_tail = e;
	cl->events_tail = &e->next;
	if (write(cl->event_fd, &one, sizeof(one)) < 0) {
		/* The counter cannot overflow in practice; the event stays
		 * queued and is delivered by the next dispatch anyway. */
	}
}

/* Called with the lock held: the connection is gone for good. */
void ibc_mark_dead(struct ibc_client *cl, int err, const char *message)
{
	if (cl->dead)
		return;
	cl->dead = err;
	snprintf(cl->dead_message, sizeof(cl->dead_message), "%s", message);
	ibc_queue_event(cl, IBC_EVENT_DISCONNECTED, message, NULL);
	pthread_cond_broadcast(&cl->cond);
}

static struct ibc_waiter *ibc_find_waiter(struct ibc_client *cl,
					  uint64_t serial)
{
	for (struct ibc_waiter *w = cl->waiters; w; w = w->next)
		if (w->serial == serial && !w->done)
			return w;
	return NULL;
}

static void ibc_handle_event(struct ibc_client *cl, const Rdmab__Event *ev)
{
	switch (ev->body_case) {
	case RDMAB__EVENT__BODY_SHUTDOWN:
		ibc_queue_event(cl, IBC_EVENT_SHUTDOWN, ev->shutdown->reason,
				NULL);
		break;
	case RDMAB__EVENT__BODY_DEVICE_REMOVED:
		ibc_queue_event(cl, IBC_EVENT_DEVICE_REMOVED,
				ev->device_removed->reason,
				ev->device_removed->device);
		break;
	default:
		/* An event of a newer broker: nothing to do with it. */
		break;
	}
}

/* Deliver one packet; called with the lock held; takes @fds. */
static void ibc_handle_packet(struct ibc_client *cl, const uint8_t *buf,
			      size_t len, struct wire_fds *fds)
{
	Rdmab__DaemonMessage *msg;
	struct ibc_waiter *w;

	msg = rdmab__daemon_message__unpack(NULL, len, buf);
	if (!msg) {
		wire_fds_close(fds);
		ibc_mark_dead(cl, -EBADMSG,
			      "the broker sent a message that could not be "
			      "decoded");
		return;
	}
	if (msg->kind_case == RDMAB__DAEMON_MESSAGE__KIND_EVENT) {
		ibc_handle_event(cl, msg->event);
		goto drop;
	}
	if (msg->kind_case != RDMAB__DAEMON_MESSAGE__KIND_REPLY)
		goto drop;
	if (msg->reply->serial == 0 && msg->reply->error) {
		/* Not an answer to a request: the broker refuses the
		 * connection (too many clients, malformed packet). */
		ibc_mark_dead(cl, -msg->reply->error, msg->reply->message);
		goto drop;
	}
	w = ibc_find_waiter(cl, msg->reply->serial);
	if (!w)
		goto drop; /* its caller timed out */
	w->r.msg = msg;
	w->r.reply = msg->reply;
	w->r.fds = *fds;
	w->done = true;
	return;

drop:
	wire_fds_close(fds);
	rdmab__daemon_message__free_unpacked(msg, NULL);
}

/*
 * Read one packet. Called with the lock held and cl->reading clear; the
 * lock is dropped while waiting. @timeout_ms < 0 waits forever, 0 does not
 * wait. Returns 0, -EAGAIN or -ETIMEDOUT.
 */
int ibc_read_one(struct ibc_client *cl, int timeout_ms)
{
	struct wire_fds fds;
	int n = 0;

	cl->reading = true;
	pthread_mutex_unlock(&cl->lock);
	if (timeout_ms != 0) {
		struct pollfd p = { .fd = cl->sock, .events = POLLIN };

		do
			n = poll(&p, 1, timeout_ms);
		while (n < 0 && errno == EINTR);
		n = n == 0 ? -ETIMEDOUT : 0;
	}
	if (n == 0)
		n = wire_recv(cl->sock, cl->rbuf, WIRE_MAX_PACKET, &fds,
			      MSG_DONTWAIT);
	pthread_mutex_lock(&cl->lock);
	cl->reading = false;
	pthread_cond_broadcast(&cl->cond);

	if (n == -EAGAIN || n == -ETIMEDOUT)
		return n;
	if (n == 0) {
		ibc_mark_dead(cl, -ECONNRESET,
			      "the broker closed the connection");
		return 0;
	}
	if (n < 0) {
		ibc_mark_dead(cl, n, "the connection to the broker failed");
		return 0;
	}
	ibc_handle_packet(cl, cl->rbuf, (size_t)n, &fds);
	return 0;
}

static int64_t ibc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for @w until @deadline (ms, monotonic; 0 = none). Lock held. */
static int ibc_wait(struct ibc_client *cl, struct ibc_waiter *w,
		    int64_t deadline)
{
	while (!w->done && !cl->dead) {
		int left = -1;

		if (deadline) {
			int64_t d = deadline - ibc_now_ms();

			if (d <= 0)
				return -ETIMEDOUT;
			left = (int)d;
		}
		if (!cl->reading) {
			int ret = ibc_read_one(cl, left);

			if (ret == -ETIMEDOUT)
				return ret;
		} else if (deadline) {
			struct timespec ts;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += left / 1000;
			ts.tv_nsec += (long)(left % 1000) * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&cl->cond, &cl->lock, &ts);
		} else {
			pthread_cond_wait(&cl->cond, &cl->lock);
		}
	}
	return 0;
}

static void ibc_unlink_waiter(struct ibc_client *cl, struct ibc_waiter *w)
{
	for (struct ibc_waiter **p = &cl->waiters; *p; p = &(*p)->next) {
		if (*p == w) {
			*p = w->next;
			return;
		}
	}
}

int ibc_call(struct ibc_client *cl, Rdmab__Request *req, const int *fds,
	     unsigned int nfds, struct ibc_reply *ret)
{
	struct ibc_waiter w = { 0 };
	int64_t deadline = 0;
	int err;

	wire_fds_init(&w.r.fds);
	pthread_mutex_lock(&cl->lock);
	if (cl->dead) {
		err = ibc_set_error(cl->dead, "%s", cl->dead_message);
		pthread_mutex_unlock(&cl->lock);
		return err;
	}
	w.serial = ++cl->next_serial;
	w.next = cl->waiters;
	cl->waiters = &w;
	pthread_mutex_unlock(&cl->lock);

	req->version = WIRE_PROTOCOL_VERSION;
	req->serial = w.serial;
	/* Sends have their own lock: a sender blocked on a full socket
	 * must not keep the reader from delivering replies. */
	pthread_mutex_lock(&cl->send_lock);
	err = wire_send_msg(cl->sock, &req->base, fds, nfds, 0);
	pthread_mutex_unlock(&cl->send_lock);

	pthread_mutex_lock(&cl->lock);
	if (err < 0) {
		ibc_set_error(err, "cannot send to the broker: %s",
			      strerror(-err));
		if (err != -EMSGSIZE)
			ibc_mark_dead(cl, err, "the broker's socket failed");
		goto out;
	}
	if (cl->timeout_ms > 0)
		deadline = ibc_now_ms() + cl->timeout_ms;
	err = ibc_wait(cl, &w, deadline);
	if (err == -ETIMEDOUT) {
		ibc_set_error(err, "the broker did not answer within %d ms",
			      cl->timeout_ms);
		goto out;
	}
	if (!w.done) {
		err = ibc_set_error(cl->dead, "%s", cl->dead_message);
		goto out;
	}
	if (w.r.reply->error) {
		err = ibc_set_error(-w.r.reply->error, "%s",
				    w.r.reply->message);
		ibc_reply_free(&w.r);
		goto out;
	}
	ibc_clear_error();
	*ret = w.r;
	err = 0;
out:
	ibc_unlink_waiter(cl, &w);
	pthread_mutex_unlock(&cl->lock);
	return err;
}

int ibc_drain_events(struct ibc_client *cl)
{
	struct ibc_queued_event *head;
	uint64_t count;
	int n = 0;

	pthread_mutex_lock(&cl->lock);
	/* Read what is there, unless another thread is reading already. */
	for (int i = 0; i < 64 && !cl->reading && !cl->dead; i++)
		if (ibc_read_one(cl, 0) == -EAGAIN)
			break;
	if (read(cl->event_fd, &count, sizeof(count)) < 0) {
		/* EAGAIN: nothing was counted. */
	}
	head = cl->events_head;
	cl->events_head = NULL;
	cl->events_tail = &cl->events_head;
	pthread_mutex_unlock(&cl->lock);

	while (head) {
		struct ibc_queued_event *e = head;
		struct ibc_event ev = {
			.type = e->type,
			.message = e->message,
			.device = e->device,
		};

		head = e->next;
		if (cl->event_cb)
			cl->event_cb(cl, &ev, cl->event_arg);
		free(e);
		n++;
	}
	return n;
}

void ibc_free_events(struct ibc_client *cl)
{
	while (cl->events_head) {
		struct ibc_queued_event *e = cl->events_head;

		cl->events_head = e->next;
		free(e);
	}
	cl->events_tail = &cl->events_head;
}
