// SPDX-License-Identifier: MIT
/*
 * Requests and replies: any thread may call; the first one that needs a
 * reply reads the socket for everyone, the others wait on a condition
 * variable. A reply is decoded by the reader straight into the arena of the
 * caller that waits for it; events read on the way are queued for
 * ibc_dispatch().
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
#include "libclient/events.h"
#include "proto/varint.h"

/* The largest errno value a broker may answer with (the kernel's
 * MAX_ERRNO): anything else is a protocol violation. */
#define IBC_ERRNO_MAX 4095

/* What ended a wait (struct ibc_waiter's done). */
enum ibc_done {
	IBC_WAITING = 0,
	IBC_REPLIED,
	/* Sent before the restart barrier, unanswered when its reply came:
	 * no broker will ever answer it (ibc_barrier_done()). */
	IBC_LOST,
};

struct ibc_waiter {
	struct ibc_waiter *next;
	uint64_t serial;
	/* enum ibc_done; nonzero: the wait is over. */
	uint8_t done;
	/* The request is in the socket (a send that waited for room is
	 * counted once it took the lock back). */
	bool sent;
	/* Sent before the pending restart barrier. */
	bool suspect;
	struct ibc_reply *r;
};

struct ibc_queued_event {
	struct ibc_queued_event *next;
	enum ibc_event_type type;
	char message[256];
	char device[64];
	uint32_t object_kind;
	uint64_t object_id;
	/* Who handles it after the callback; NULL: nobody. */
	const struct ibc_event_handler *handler;
};

/*
 * A register or unregister sent without waiting (ibc_send_kept()),
 * packed, until its answer is read. A broker killed after it read the
 * request and before it applied it loses it (its answer never comes, or
 * the next broker's EAGAIN): what the client made is then named by no
 * record, or a record names what it destroyed. Such a request is sent
 * again; each names its object by id, so one the broker did apply is
 * refused the second time (EINVAL, ENOENT) and changes nothing.
 */
struct ibc_kept {
	struct ibc_kept *next;
	uint64_t serial;
	/* Sent before the pending restart barrier. */
	bool suspect;
	/* Lost: to be sent again (ibc_kept_resend()). */
	bool due;
	/* A request the broker answers EAGAIN each time is given up. */
	unsigned int resends;
	size_t len;
	uint8_t buf[];
};

#define IBC_KEPT_RESENDS 4

static void ibc_barrier_send(struct ibc_client *cl);
static int ibc_pack(struct ibc_client *cl, const Rdmab__Request *req);

void ibc_kept_free(struct ibc_client *cl)
{
	struct ibc_kept *k;

	while ((k = cl->kept)) {
		cl->kept = k->next;
		free(k);
	}
	cl->kept_tail = NULL;
	cl->kept_due = false;
}

/* Keep @req, just sent, until its answer. Without memory it is not kept:
 * only a restart in its window loses it then. Lock held. */
static void ibc_kept_add(struct ibc_client *cl, Rdmab__Request *req)
{
	int len = ibc_pack(cl, req);
	struct ibc_kept *k;

	if (len < 0)
		return;
	k = malloc(sizeof(*k) + (size_t)len);
	if (!k)
		return;
	k->serial = req->serial;
	k->suspect = false;
	k->due = false;
	k->resends = 0;
	k->len = (size_t)len;
	memcpy(k->buf, cl->sbuf, (size_t)len);
	k->next = NULL;
	if (!cl->kept_tail)
		cl->kept_tail = &cl->kept;
	*cl->kept_tail = k;
	cl->kept_tail = &k->next;
}

/* Free the kept request *@pp, taking it off the list. */
static void ibc_kept_drop(struct ibc_client *cl, struct ibc_kept **pp)
{
	struct ibc_kept *k = *pp;

	*pp = k->next;
	if (cl->kept_tail == &k->next)
		cl->kept_tail = pp;
	free(k);
}

/* The error of the packed Reply @buf, whose serial (field 1) comes first:
 * field 2 when it follows, else 0. */
static uint64_t ibc_peek_error(const uint8_t *buf, size_t len)
{
	const uint8_t *p = buf, *end = buf + len;
	uint64_t v;

	if (varint_get(&p, end, VARINT_MAX_TAG, &v) < 0 ||
	    varint_get(&p, end, VARINT_MAX_U64, &v) < 0 ||
	    varint_get(&p, end, VARINT_MAX_TAG, &v) < 0 ||
	    v != varint_tag(2, VARINT_WT_VARINT) ||
	    varint_get(&p, end, VARINT_MAX_U64, &v) < 0)
		return 0;
	return v;
}

/* The answer to kept request @serial came (the packed Reply @buf): it is
 * done with, or, answered EAGAIN (the broker restarted while serving it),
 * sent again. Lock held. */
static void ibc_kept_answered(struct ibc_client *cl, uint64_t serial,
			      const uint8_t *buf, size_t len)
{
	struct ibc_kept **pp, *k;

	for (pp = &cl->kept; (k = *pp); pp = &k->next)
		if (k->serial == serial)
			break;
	if (!k)
		return;
	if (ibc_peek_error(buf, len) == EAGAIN &&
	    k->resends < IBC_KEPT_RESENDS) {
		k->due = true;
		cl->kept_due = true;
		return;
	}
	ibc_kept_drop(cl, pp);
}

/* The barrier's answer came: the kept requests sent before it and still
 * unanswered are lost, to be sent again, or given up after
 * IBC_KEPT_RESENDS. Lock held. */
static void ibc_kept_lost(struct ibc_client *cl)
{
	struct ibc_kept **pp = &cl->kept, *k;

	while ((k = *pp)) {
		if (!k->suspect) {
			pp = &k->next;
			continue;
		}
		k->suspect = false;
		if (k->resends < IBC_KEPT_RESENDS) {
			k->due = true;
			cl->kept_due = true;
			pp = &k->next;
			continue;
		}
		ibc_kept_drop(cl, pp);
	}
}

/* Send the lost requests again, in the order they were first sent (a
 * register before the unregister of its object), without waiting for
 * room: a full socket holds requests the broker will answer, and the next
 * packet read tries again. Lock held, nobody reading. */
static void ibc_kept_resend(struct ibc_client *cl)
{
	for (struct ibc_kept *k = cl->kept; k; k = k->next) {
		int err;

		if (!k->due)
			continue;
		err = wire_send(cl->sock, k->buf, k->len, NULL, 0,
				MSG_DONTWAIT);
		/* A broken socket: the reader sees its end. */
		if (err < 0)
			return;
		/* After the barrier: not the one it finds lost. */
		k->due = false;
		k->suspect = false;
		k->resends++;
		cl->unanswered++;
	}
	cl->kept_due = false;
}

static void ibc_reply_init(struct ibc_reply *r)
{
	r->reply = NULL;
	wire_fds_init(&r->fds);
	wire_arena_init(&r->arena, r->mem, sizeof(r->mem), WIRE_MAX_DECODED);
}

void ibc_reply_free(struct ibc_reply *r)
{
	wire_fds_close(&r->fds);
	wire_arena_reset(&r->arena);
	r->reply = NULL;
}

/* Called with the lock held. */
struct ibc_queued_event *ibc_queue_event(struct ibc_client *cl,
					 enum ibc_event_type type,
					 const char *message,
					 const char *device)
{
	struct ibc_queued_event *e = calloc(1, sizeof(*e));
	uint64_t one = 1;

	if (!e)
		return NULL;
	e->type = type;
	snprintf(e->message, sizeof(e->message), "%s", message);
	snprintf(e->device, sizeof(e->device), "%s", device ? device : "");
	*cl->events_tail = e;
	cl->events_tail = &e->next;
	/* Nobody polls before ibc_get_fd() made the descriptor. */
	if (cl->event_fd >= 0 && write(cl->event_fd, &one, sizeof(one)) < 0) {
		/* The counter cannot overflow in practice; the event stays
		 * queued and is delivered by the next dispatch anyway. */
	}
	return e;
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

void ibc_fork_drop_waiters(struct ibc_client *cl)
{
	/* A reply delivered but not yet taken: its descriptors are reached
	 * by nothing in this process. */
	for (struct ibc_waiter *w = cl->waiters; w; w = w->next)
		if (w->done)
			wire_fds_close(&w->r->fds);
}

/*
 * The barrier's reply: the broker serves a connection's packets in order,
 * so a request sent before the barrier and still unanswered was read by a
 * broker that died before it stored the request as in flight (between
 * recv(2) and inflight_read()), and the new one never saw it. Lock held.
 */
static void ibc_barrier_done(struct ibc_client *cl)
{
	cl->barrier_serial = 0;
	for (struct ibc_waiter *w = cl->waiters; w; w = w->next) {
		if (w->suspect && !w->done)
			w->done = IBC_LOST;
	}
	ibc_kept_lost(cl);
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

/*
 * Hand the reply in @buf to @w, which takes @fds. @buf is the packed Reply
 * (the fast path), or the whole DaemonMessage when @whole (the slow path).
 * Lock held.
 */
static void ibc_deliver(struct ibc_client *cl, struct ibc_waiter *w,
			const uint8_t *buf, size_t len, bool whole,
			struct wire_fds *fds)
{
	struct ibc_reply *r = w->r;
	Rdmab__DaemonMessage *msg;
	Rdmab__Reply *reply;
	char why[128];

	if (whole) {
		msg = rdmab__daemon_message__unpack(&r->arena.allocator, len,
						    buf);
		reply = NULL;
		if (msg && msg->kind_case == RDMAB__DAEMON_MESSAGE__KIND_REPLY)
			reply = msg->reply;
	} else {
		reply = wire_unpack_reply(&r->arena, len, buf);
	}
	if (!reply) {
		wire_arena_reset(&r->arena);
		ibc_mark_dead(cl, -EBADMSG,
			      "the broker sent a reply that could not be "
			      "decoded");
		return;
	}
	/* A negative error would read as success with no reply body. */
	if (reply->error < 0 || reply->error > IBC_ERRNO_MAX) {
		snprintf(why, sizeof(why),
			 "the broker answered with error %d, which is not an "
			 "errno value",
			 (int)reply->error);
		wire_arena_reset(&r->arena);
		ibc_mark_dead(cl, -EPROTO, why);
		return;
	}
	r->reply = reply;
	r->fds = *fds;
	wire_fds_init(fds);
	w->done = IBC_REPLIED;
}

/* A packet whose serial the fast peek did not find: an event, the broker
 * refusing the whole connection, or a reply encoded otherwise than the
 * broker's own (fields out of order, unknown fields), which is matched by
 * the serial the full decode finds. Lock held; takes @fds. */
static void ibc_handle_other(struct ibc_client *cl, const uint8_t *buf,
			     size_t len, struct wire_fds *fds)
{
	const struct ibc_event_handler *h;
	struct ibc_queued_event *q = NULL;
	struct wire_arena arena;
	Rdmab__DaemonMessage *msg;
	const Rdmab__Reply *reply;
	const Rdmab__Event *ev;
	struct ibc_waiter *w;
	char why[128];

	/* As much as a reply may take: this may be one. */
	wire_arena_init(&arena, NULL, 0, WIRE_MAX_DECODED);
	msg = rdmab__daemon_message__unpack(&arena.allocator, len, buf);
	if (!msg) {
		ibc_mark_dead(cl, -EBADMSG,
			      "the broker sent a message that could not be "
			      "decoded");
		goto out;
	}
	if (msg->kind_case == RDMAB__DAEMON_MESSAGE__KIND_REPLY) {
		reply = msg->reply;
		w = reply->serial ? ibc_find_waiter(cl, reply->serial) : NULL;
		if (w) {
			/* Decoded again, into the waiter's own arena. */
			ibc_deliver(cl, w, buf, len, true, fds);
			goto out;
		}
		if (reply->serial && reply->serial == cl->barrier_serial) {
			ibc_barrier_done(cl);
			goto out;
		}
		/* Serial 0 answers no request: the broker refuses the
		 * connection (too many clients, a malformed packet). A reply
		 * nobody waits for belongs to a call that timed out. */
		if (reply->serial != 0 || reply->error == 0)
			goto out;
		if (reply->error < 0 || reply->error > IBC_ERRNO_MAX) {
			snprintf(why, sizeof(why),
				 "the broker refused the connection with "
				 "error %d, which is not an errno value",
				 (int)reply->error);
			ibc_mark_dead(cl, -EPROTO, why);
		} else {
			ibc_mark_dead(cl, -reply->error, reply->message);
		}
		goto out;
	}
	if (msg->kind_case != RDMAB__DAEMON_MESSAGE__KIND_EVENT)
		goto out;
	ev = msg->event;
	/* An event of a newer broker has no handler: nothing to do. */
	h = ibc_event_handler(ev->body_case);
	if (h)
		q = h->read(cl, ev);
	if (q) {
		q->object_kind = ev->object_kind;
		q->object_id = ev->object_id;
		q->handler = h;
	}
out:
	wire_fds_close(fds);
	wire_arena_reset(&arena);
}

/* Deliver one packet; called with the lock held; takes @fds. */
static void ibc_handle_packet(struct ibc_client *cl, const uint8_t *buf,
			      size_t len, struct wire_fds *fds)
{
	const uint8_t *rbuf = NULL;
	size_t rlen = 0;
	uint64_t serial = wire_peek_reply(buf, len, &rbuf, &rlen);
	struct ibc_waiter *w = serial ? ibc_find_waiter(cl, serial) : NULL;

	if (serial && !w) {
		/* The answer to a request sent without waiting, or to a call
		 * that timed out: dropped, an error included, but for a
		 * kept request's EAGAIN (ibc_kept_answered()). */
		wire_fds_close(fds);
		if (serial == cl->barrier_serial) {
			ibc_barrier_done(cl);
			return;
		}
		if (cl->unanswered)
			cl->unanswered--;
		if (cl->kept)
			ibc_kept_answered(cl, serial, rbuf, rlen);
		return;
	}
	if (!w) {
		ibc_handle_other(cl, buf, len, fds);
		return;
	}
	/* Straight to the Reply inside: its wrapper holds nothing else. */
	ibc_deliver(cl, w, rbuf, rlen, false, fds);
	wire_fds_close(fds);
}

/*
 * The socket reported end of stream (@n == 0) or an error. A broker that
 * closes with our requests unread makes the kernel report ECONNRESET while
 * its last packets (a refusal, the shutdown event) are still queued: read
 * them before giving up. Called with the lock held and cl->reading clear,
 * so that this thread is the only one that reads the socket.
 */
static void ibc_connection_lost(struct ibc_client *cl, int n)
{
	struct wire_fds fds;

	for (int i = 0; i < 64 && n < 0 && n != -EAGAIN; i++) {
		n = wire_recv(cl->sock, cl->rbuf, WIRE_MAX_PACKET, &fds,
			      MSG_DONTWAIT);
		if (n > 0)
			ibc_handle_packet(cl, cl->rbuf, (size_t)n, &fds);
		if (n > 0)
			n = -ECONNRESET;
	}
	if (n == 0 || n == -EAGAIN || n == -ECONNRESET)
		ibc_mark_dead(cl, -ECONNRESET,
			      "the broker closed the connection");
	else
		ibc_mark_dead(cl, n, "the connection to the broker failed");
}

static int ibc_poll_in(int sock, int wait_ms)
{
	struct pollfd p = { .fd = sock, .events = POLLIN };

	return poll(&p, 1, wait_ms);
}

/*
 * Read one packet for @self (NULL: for ibc_dispatch). Called with the lock
 * held and cl->reading clear; the lock is dropped while waiting, as
 * @wait_ms says (IBC_READ_NOW, IBC_READ_BLOCK: until the client's timeout,
 * SO_RCVTIMEO; or a bound of its own, a poll(2) first). Returns 0 or
 * -EAGAIN.
 */
int ibc_read_one(struct ibc_client *cl, struct ibc_waiter *self, int wait_ms)
{
	bool bare = !cl->fd_waiters;
	int flags = wait_ms == IBC_READ_BLOCK ? 0 : MSG_DONTWAIT;
	struct wire_fds fds;
	int n;

	cl->reading = true;
	cl->reading_bare = bare;
	pthread_mutex_unlock(&cl->lock);
	/* No reply that carries descriptors can come while bare: the kernel
	 * would close them (ibc_await_bare_read()). */
	wire_fds_init(&fds);
	/* Nothing by then (or a signal): the caller's deadline. */
	if (wait_ms > 0 && ibc_poll_in(cl->sock, wait_ms) <= 0)
		n = -EAGAIN;
	else if (bare)
		n = wire_recv_bare(cl->sock, cl->rbuf, WIRE_MAX_PACKET, flags);
	else
		n = wire_recv(cl->sock, cl->rbuf, WIRE_MAX_PACKET, &fds, flags);
	pthread_mutex_lock(&cl->lock);
	cl->reading = false;
	cl->reading_bare = false;

	if (n == -EAGAIN)
		goto out;
	if (n > 0)
		ibc_handle_packet(cl, cl->rbuf, (size_t)n, &fds);
	else
		ibc_connection_lost(cl, n);
	if (cl->barrier_due && !cl->dead)
		ibc_barrier_send(cl);
	if (cl->kept_due && !cl->dead)
		ibc_kept_resend(cl);
	n = 0;
out:
	/* Wake the others: one of them may have its reply now, or must
	 * take over reading. */
	if (cl->waiters && (cl->waiters != self || cl->waiters->next))
		pthread_cond_broadcast(&cl->cond);
	return n;
}

static int64_t ibc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait on the condition once, until @deadline (ms, monotonic; 0 = none)
 * at the latest. Lock held. */
static void ibc_cond_wait(struct ibc_client *cl, int64_t deadline)
{
	struct timespec ts = {
		.tv_sec = (time_t)(deadline / 1000),
		.tv_nsec = (long)(deadline % 1000) * 1000000,
	};

	if (deadline)
		pthread_cond_timedwait(&cl->cond, &cl->lock, &ts);
	else
		pthread_cond_wait(&cl->cond, &cl->lock);
}

/*
 * How long a read may wait with @left ms to the deadline. A
 * blocking read lasts up to the whole timeout (SO_RCVTIMEO), which the
 * first read of a call, right after its send, may take: it ends an eighth
 * of the timeout past the deadline at most, and needs no syscall more.
 * A later one (after an event or another thread's reply) would restart
 * the whole timeout each time: it polls until the deadline instead.
 */
static int ibc_read_wait(const struct ibc_client *cl, int64_t left)
{
	if (left >= cl->timeout_ms - cl->timeout_ms / 8)
		return IBC_READ_BLOCK;
	return (int)left;
}

/* Wait for @w until @deadline (ms, monotonic; 0 = none). Lock held. */
static int ibc_wait(struct ibc_client *cl, struct ibc_waiter *w,
		    int64_t deadline)
{
	while (!w->done && !cl->dead) {
		int wait_ms = IBC_READ_BLOCK;

		if (deadline) {
			int64_t left = deadline - ibc_now_ms();

			if (left <= 0)
				return -ETIMEDOUT;
			wait_ms = ibc_read_wait(cl, left);
		}
		if (!cl->reading)
			ibc_read_one(cl, w, wait_ms);
		else
			ibc_cond_wait(cl, deadline);
	}
	return 0;
}

/*
 * A reader in recv(2) would let the kernel close the descriptors of a reply
 * that came meanwhile: a request whose reply carries some waits until that
 * read is over (@deadline as ibc_wait()'s). The read is for a request sent
 * earlier, whose reply ends it; the next read, with this call's waiter
 * counted, is recvmsg(2)'s. Lock held.
 */
static int ibc_await_bare_read(struct ibc_client *cl, int64_t deadline)
{
	while (cl->reading && cl->reading_bare && !cl->dead) {
		if (deadline && ibc_now_ms() >= deadline)
			return -ETIMEDOUT;
		ibc_cond_wait(cl, deadline);
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

/* Pack @req into cl->sbuf (lock held): the envelope by hand
 * (envelope.c), sized as it goes, so nothing can overrun the buffer. */
static int ibc_pack(struct ibc_client *cl, const Rdmab__Request *req)
{
	return wire_pack_request(req, cl->sbuf, IBC_SBUF_SIZE);
}

/*
 * After a Restarted event: a ping whose reply tells which of the requests
 * sent so far the broker lost (ibc_barrier_done()). Sent without waiting
 * for room: a full socket holds requests the broker will answer, and the
 * next packet read tries again. Lock held, nobody reading.
 */
static void ibc_barrier_send(struct ibc_client *cl)
{
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct ibc_waiter *w;
	int len, err;

	for (w = cl->waiters; w && !(w->sent && !w->done); w = w->next)
		;
	if (!w && !cl->kept) {
		cl->barrier_due = false;
		return;
	}
	req.version = WIRE_PROTOCOL_VERSION;
	req.serial = cl->next_serial + 1;
	req.body_case = RDMAB__REQUEST__BODY_PING;
	len = ibc_pack(cl, &req);
	err = len < 0 ? len :
			wire_send(cl->sock, cl->sbuf, (size_t)len, NULL, 0,
				  MSG_DONTWAIT);
	if (err == -EAGAIN)
		return;
	cl->barrier_due = false;
	/* A broken socket: the reader sees its end. */
	if (err < 0)
		return;
	cl->barrier_serial = ++cl->next_serial;
	for (w = cl->waiters; w; w = w->next)
		if (w->sent && !w->done)
			w->suspect = true;
	for (struct ibc_kept *k = cl->kept; k; k = k->next)
		k->suspect = true;
}

/* Send once the socket has room, until @deadline (ms, monotonic; 0 =
 * none): -ETIMEDOUT then. */
static int ibc_send_wait(int sock, const uint8_t *buf, size_t len,
			 int64_t deadline)
{
	int err;

	if (!deadline)
		return wire_send(sock, buf, len, NULL, 0, 0);
	for (;;) {
		struct pollfd p = { .fd = sock, .events = POLLOUT };
		int64_t left = deadline - ibc_now_ms();

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
		err = wire_send(sock, buf, len, NULL, 0, MSG_DONTWAIT);
		if (err != -EAGAIN)
			return err;
	}
}

/*
 * Send @req by @deadline (0: none); called with the lock held, which a
 * blocking send drops. SEQPACKET sends are atomic, so concurrent senders
 * need no lock of their own, and a send that times out sent nothing; the
 * lock only guards sbuf.
 */
static int ibc_send(struct ibc_client *cl, Rdmab__Request *req,
		    int64_t deadline)
{
	int len = ibc_pack(cl, req);
	uint8_t *copy;
	int err;

	if (len < 0)
		return len;
	err = wire_send(cl->sock, cl->sbuf, (size_t)len, NULL, 0, MSG_DONTWAIT);
	if (err != -EAGAIN)
		return err;
	/* The socket is full: wait for room without the lock, so that the
	 * reader can deliver the replies that will drain it. */
	copy = malloc((size_t)len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, cl->sbuf, (size_t)len);
	pthread_mutex_unlock(&cl->lock);
	err = ibc_send_wait(cl->sock, copy, (size_t)len, deadline);
	pthread_mutex_lock(&cl->lock);
	free(copy);
	return err;
}

/*
 * A send found the connection gone. The broker may have refused us and
 * closed before reading the request: its reason is queued on our side.
 * Only the elected reader may read the socket, so read what is left when
 * nobody is reading, else wait until the reader has seen the end (or has
 * stopped reading without seeing it). Lock held.
 */
static void ibc_lost_on_send(struct ibc_client *cl, int err)
{
	while (!cl->dead) {
		if (!cl->reading) {
			ibc_connection_lost(cl, err);
			return;
		}
		pthread_cond_wait(&cl->cond, &cl->lock);
	}
}

/*
 * Send @req by @deadline and turn a failure into the caller's error and
 * sentence: a connection found gone is read to its end, a send that timed
 * out sent nothing (the connection stays usable), any other failure but an
 * oversized request ends the connection. Lock held.
 */
static int ibc_send_checked(struct ibc_client *cl, Rdmab__Request *req,
			    int64_t deadline)
{
	int err = ibc_send(cl, req, deadline);

	if (err == -EPIPE || err == -ECONNRESET) {
		ibc_lost_on_send(cl, err);
		return ibc_set_error(cl->dead, "%s", cl->dead_message);
	}
	if (err == -ETIMEDOUT)
		return ibc_set_error(err,
				     "the broker did not take the request "
				     "within %d ms: it is not reading its "
				     "socket",
				     cl->timeout_ms);
	if (err < 0) {
		ibc_set_error(err, "cannot send to the broker: %s",
			      strerror(-err));
		if (err != -EMSGSIZE)
			ibc_mark_dead(cl, err, "the broker's socket failed");
	}
	return err;
}

int ibc_call(struct ibc_client *cl, Rdmab__Request *req, unsigned int flags,
	     struct ibc_reply *ret)
{
	bool want_fds = flags & IBC_CALL_FDS;
	struct ibc_waiter w = { .r = ret };
	int64_t deadline = 0;
	int err;

	ibc_reply_init(ret);
	pthread_mutex_lock(&cl->lock);
	if (cl->dead) {
		err = ibc_set_error(cl->dead, "%s", cl->dead_message);
		pthread_mutex_unlock(&cl->lock);
		return err;
	}
	w.serial = ++cl->next_serial;
	w.next = cl->waiters;
	cl->waiters = &w;
	req->version = WIRE_PROTOCOL_VERSION;
	req->serial = w.serial;
	if (cl->timeout_ms > 0)
		deadline = ibc_now_ms() + cl->timeout_ms;
	if (want_fds) {
		cl->fd_waiters++;
		err = ibc_await_bare_read(cl, deadline);
		if (err == -ETIMEDOUT) {
			ibc_set_error(err,
				      "another thread's request to the broker "
				      "was not answered within %d ms",
				      cl->timeout_ms);
			goto out;
		}
		if (cl->dead) {
			err = ibc_set_error(cl->dead, "%s", cl->dead_message);
			goto out;
		}
	}
	err = ibc_send_checked(cl, req, deadline);
	if (err < 0)
		goto out;
	w.sent = true;
	err = ibc_wait(cl, &w, deadline);
	if (err == -ETIMEDOUT) {
		ibc_set_error(err, "the broker did not answer within %d ms",
			      cl->timeout_ms);
		goto out;
	}
	if (w.done != IBC_REPLIED) {
		err = w.done == IBC_LOST ?
			      ibc_set_error(-EAGAIN,
					    "the broker restarted while "
					    "serving this request") :
			      ibc_set_error(cl->dead, "%s", cl->dead_message);
		goto out;
	}
	if (ret->reply->error) {
		err = ibc_set_error(-ret->reply->error, "%s",
				    ret->reply->message);
		goto out;
	}
	ibc_clear_error();
	err = 0;
out:
	if (want_fds)
		cl->fd_waiters--;
	ibc_unlink_waiter(cl, &w);
	pthread_mutex_unlock(&cl->lock);
	if (err < 0)
		ibc_reply_free(ret);
	return err;
}

static int ibc_send_nowait_as(struct ibc_client *cl, Rdmab__Request *req,
			      bool keep)
{
	int err;

	pthread_mutex_lock(&cl->lock);
	if (cl->dead) {
		err = ibc_set_error(cl->dead, "%s", cl->dead_message);
		goto out;
	}
	req->version = WIRE_PROTOCOL_VERSION;
	req->serial = ++cl->next_serial;
	/* On -ETIMEDOUT nothing was sent: the caller keeps its object. */
	err = ibc_send_checked(
		cl, req,
		cl->timeout_ms > 0 ? ibc_now_ms() + cl->timeout_ms : 0);
	if (err < 0)
		goto out;
	if (keep)
		ibc_kept_add(cl, req);
	/*
	 * Nobody may read the answers for a long time (a program that
	 * destroys a thousand objects makes no round trip): read them here,
	 * so that they never fill the broker's output queue, which would end
	 * the session.
	 */
	if (++cl->unanswered >= IBC_UNANSWERED_MAX)
		for (int i = 0; i < IBC_UNANSWERED_MAX && cl->unanswered &&
				!cl->reading && !cl->dead;
		     i++)
			if (ibc_read_one(cl, NULL, IBC_READ_NOW) == -EAGAIN)
				break;
	err = 0;
out:
	pthread_mutex_unlock(&cl->lock);
	return err;
}

int ibc_send_nowait(struct ibc_client *cl, Rdmab__Request *req)
{
	return ibc_send_nowait_as(cl, req, false);
}

int ibc_send_kept(struct ibc_client *cl, Rdmab__Request *req)
{
	return ibc_send_nowait_as(cl, req, true);
}

int ibc_drain_events(struct ibc_client *cl)
{
	struct ibc_queued_event *head;
	uint64_t count;
	int n = 0;

	pthread_mutex_lock(&cl->lock);
	/* Read what is there, unless another thread is reading already. */
	for (int i = 0; i < 64 && !cl->reading && !cl->dead; i++)
		if (ibc_read_one(cl, NULL, IBC_READ_NOW) == -EAGAIN)
			break;
	if (cl->event_fd >= 0 &&
	    read(cl->event_fd, &count, sizeof(count)) < 0) {
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
			.object_kind = (enum ibc_obj_kind)e->object_kind,
			.object_id = e->object_id,
		};

		head = e->next;
		if (cl->event_cb)
			cl->event_cb(cl, &ev, cl->event_arg);
		/* The callback forked and this is the child: the teardown
		 * below is the parent's to do, on the parent's objects. */
		if (ibc_stale(cl)) {
			free(e);
			n++;
			while (head) {
				e = head;
				head = e->next;
				free(e);
			}
			return n;
		}
		/* The callback was the application's chance to destroy its
		 * objects and close the contexts; what is left goes now. */
		if (e->handler && e->handler->after)
			e->handler->after(cl, &ev);
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
