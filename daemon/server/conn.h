/* SPDX-License-Identifier: MIT */
/*
 * struct conn, one client connection, and its calls: sending replies and
 * events, closing (now, from the loop, after a flush), the peer's pidfd;
 * and the table of them (struct conn_table), which conn.c owns. The
 * transport above (the dispatcher, the server, restart's sessions) is
 * reached through the table's ops, which the server fills: conn.c names
 * none of them.
 */
#ifndef RDMAB_CONN_H
#define RDMAB_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "daemon/util/queue.h"
#include <sys/socket.h>

#include "daemon/registry/client.h"
#include "daemon/registry/ctx.h"
#include "daemon/restart/inflight.h"
#include "daemon/util/log.h"
#include "proto/wire.h"

struct core;
struct conn;
struct event;
struct metrics;
struct outmsg;
struct domain;
struct obj_owner;
struct user;

enum read_on {
	/* When the send of the reply let the client run. */
	READ_ON_AUTO,
	READ_ON_ALWAYS,
	READ_ON_NEVER,
};

/* --read-on (conn.c): "auto", "always" or "never"; -EINVAL for anything
 * else. */
int conn_parse_read_on(const char *s, enum read_on *ret);

struct conn_table;

/* What the transport above the connections does at their turns (the
 * server fills it: server.c). */
struct conn_ops {
	/* Serve one packet of @c, owning @fds (dispatch_packet()): false
	 * when @c is to be closed. */
	bool (*packet)(struct conn *c, const uint8_t *buf, size_t len,
		       struct wire_fds *fds);
	/* @c's session ends holding objects: serve what it sent and was
	 * not read (dispatch_drain()). */
	void (*drain)(struct conn *c);
	/* Queue an error reply (@err positive) (dispatch_error()). */
	void (*error)(struct conn *c, uint64_t serial, int err,
		      const char *message);
	/* May @c be served, given who else is connected? 0, or -EUSERS or
	 * -EDQUOT with the sentence in @why (server_admit()). */
	int (*admit)(struct conn_table *t, const struct conn *c, char *why,
		     size_t size);
	/* @c was admitted and is served; it is closing, before its session
	 * lets go of anything; its reply went (restart's records, the
	 * server's status). */
	void (*opened)(struct conn *c);
	void (*closed)(struct conn *c);
	void (*reply_sent)(struct conn *c);
	/* A connection went: accepting may resume. */
	void (*gone)(struct conn_table *t);
};

TAILQ_HEAD(conn_list, conn);

/* The connections: conn.c's; struct server embeds it. */
struct conn_table {
	struct core *core;
	const struct conn_ops *ops;
	struct conn_list conns;
	unsigned int n_conns;
	/* Closed connections whose socket still holds descriptors the peer
	 * has not read (see conn_close()). */
	struct conn_list lingering;
	/* Connections marked dead (conn_kill()), linked by dead_link, and
	 * the event that closes them on the loop's next turn. */
	struct conn_list dead;
	struct event *reap_ev;
	/* Refused and timed out clients: one line a while, whoever they
	 * are. */
	struct log_ratelimit refuse_rl;
	/* The quickest a send that went out at once takes here, slowly
	 * forgotten (conn_send()): a send much slower than that let its
	 * peer run. */
	int64_t send_quick_ns;
	/* Bytes of replies a client may leave unread before its requests
	 * are no longer read (--outq-max), and when a connection's next
	 * request is read right after its reply (--read-on). */
	size_t outq_max;
	enum read_on read_on;
	/* The daemon is stopping: nothing is read, nothing lingers. */
	bool stopping;
	/* The request counters (metrics.h), for the dispatcher. */
	struct metrics *metrics;
};

/*
 * Where a connection is in its life. It only moves down this list, but for
 * an evict --rekey that is refused (h_admin_evict()).
 */
enum conn_state {
	/* Read and served (a request but hello only before its hello:
	 * hello_done). */
	CONN_OPEN,
	/* After a protocol error, a failed send, an evict: not read any
	 * more; flushes what is queued, then closes. */
	CONN_CLOSING,
	/* Killed (conn_kill()): no Event, reply or request more; in
	 * tab->dead until the loop's next turn closes it. */
	CONN_DEAD,
	/* conn_close() runs: what it releases may send Events, which skip
	 * it, and a failed send must not close it again. */
	CONN_RELEASING,
	/* Closed, its socket kept (in tab->lingering) for the descriptors
	 * still in it. */
	CONN_LINGERING,
};

struct conn {
	/* In tab->conns, or tab->lingering once closed (CONN_LINGERING). */
	TAILQ_ENTRY(conn) link;
	struct conn_table *tab;
	/* The session, as the layers below the handlers know it; its user
	 * (the peer's uid's accounting) links its connections here. */
	struct client cl;
	TAILQ_ENTRY(conn) user_link;
	int fd;
	/* Lets the daemon see the peer die even when a copy of the socket
	 * survives it; -1 where pidfd_open is unavailable. */
	int pidfd;
	struct event *read_ev;
	struct event *write_ev;
	struct event *pidfd_ev;
	/* Until hello: the deadline. */
	struct event *hello_ev;
	/* While not read from with replies of its own unread: the unread
	 * deadline, and the checks of whether the peer caught up. */
	struct event *stall_ev;
	TAILQ_HEAD(, outmsg) outq;
	size_t outq_bytes;
	/* Descriptors in outq, and sent but perhaps not yet received (the
	 * socket's queue is not known to be empty); both charged to user. */
	unsigned int queued_fds;
	unsigned int sent_fds;
	int64_t stalled_since_ms;
	unsigned int poll_ms;
	enum conn_state state;
	/* In tab->dead while CONN_DEAD. */
	TAILQ_ENTRY(conn) dead_link;
	/*
	 * Not part of the state, since each holds across states (and so
	 * does the session's cl.hello_done: one closes as well before its
	 * hello as after):
	 * - doomed: one of its events could not be armed. Killed then, but
	 *   also a closed socket must not linger on a timer that cannot be
	 *   trusted, and a lingering one is released at once.
	 * - the read flow (reading, fds_hint, fds_hint_spent, stalled): how
	 *   an open connection is read while it or its uid leaves bytes or
	 *   descriptors unread; CONN_CLOSING only stops it.
	 */
	bool doomed;
	bool reading;
	/* At the descriptor limit with the last of them perhaps still in
	 * the socket: read on, but ask the socket before the next request
	 * (fds_hint); the peer sent one without reading (fds_hint_spent):
	 * not read until it catches up. */
	bool fds_hint;
	bool fds_hint_spent;
	bool stalled;
	/* Reading on after a request (conn_read_cb()): how long the last
	 * send that went out at once took, requests to serve before the
	 * next try, and how many the last read that found nothing set. */
	int64_t send_ns;
	unsigned int read_skip;
	unsigned int read_backoff;
	/* Restart: its slot in the in-flight table (inflight.h); -1, and
	 * the table then NULL. */
	int inflight_slot;
	struct inflight *inflight;
};

/* Request @serial of @c was read; its reply is in the socket once the
 * queue is empty (restart's in-flight table). Inline: every request
 * passes both, where two calls a request were most of their cost. */
static inline void conn_inflight_read(struct conn *c, uint64_t serial)
{
	inflight_read(c->inflight, c->inflight_slot, serial);
}

static inline void conn_inflight_sent(struct conn *c)
{
	if (TAILQ_EMPTY(&c->outq))
		inflight_answered(c->inflight, c->inflight_slot);
}

/* The connection whose session @cl is. */
static inline struct conn *conn_of(const struct client *cl)
{
	return (struct conn *)((const char *)cl - offsetof(struct conn, cl));
}

/* Adopt an accepted socket into @t; the conn owns @fd from here on, also
 * on failure. A client the broker may not serve (ops->admit) is told why
 * and gets -EUSERS or -EDQUOT. */
int conn_new(struct conn_table *t, int fd, struct conn **ret_conn);
/* The same for a restore: the session keeps its id @id (0: a new one). */
int conn_new_as(struct conn_table *t, int fd, uint64_t id,
		struct conn **ret_conn);
/* Send a refusal (@err positive) with @message on @fd, without blocking. */
void conn_refuse(int fd, int err, const char *message);
/*
 * End the session. Descriptors sent that the peer has not read stay in its
 * socket, out of the daemon's reach, for as long as the peer keeps the
 * socket without reading: the socket then lingers, shut down, still
 * charged to the uid, until they are gone.
 */
void conn_close(struct conn *c);
/*
 * Mark @c dead and leave its close to the loop's next turn (conns_reap()):
 * the one way to end a connection other than the one whose own event the
 * loop reports, since the caller may walk what a close frees (a family's
 * objects, the connections). From here on it gets no Event or reply and
 * none of its requests is served. @why, when not NULL, is logged (rate
 * limited, conn_log_drop()); NULL: the caller logged it. Once: a second
 * kill does nothing.
 */
void conn_kill(struct conn *c, const char *why);
/* An empty table of @core's connections, served through @ops. */
void conns_init(struct conn_table *t, struct core *core,
		const struct conn_ops *ops);
/* The event (t->reap_ev) that closes the connections marked dead on
 * the loop's next turn. 0 or -ENOMEM. */
int conns_reap_init(struct conn_table *t);
/* Free the lingering sockets (daemon exit). */
void conns_lingering_free(struct conn_table *t);
/* The configuration's limits changed (a reload): every connection is read
 * or stopped as the new ones say. */
void conns_limits_changed(struct conn_table *t);
/* Hello succeeded: the deadline goes. */
void conn_hello_done(struct conn *c);

/*
 * Send a DaemonMessage holding @inner as field @field (a Reply or an Event)
 * with @nfds descriptors (borrowed: what must wait in the queue is
 * dupped). @bounded: see wire_pack_daemon_message().
 * A client whose unread replies pass the hard cap is disconnected: -EPIPE.
 */
int conn_send(struct conn *c, const ProtobufCMessage *inner, unsigned int field,
	      bool bounded, const int *fds, unsigned int nfds);
int conn_send_event(struct conn *c, Rdmab__Event *ev);
/* Log that @c is disconnected for what its peer did or did not do (@why):
 * one such line a minute at most, whoever the peers are, since they can
 * make many. */
void conn_log_drop(struct conn *c, const char *why);
/* Read no more: CONN_CLOSING, unless it is past that. */
void conn_set_closing(struct conn *c);
/* Flush without blocking what can be flushed, then close: from the loop,
 * never before this returns (conn_kill() once flushed). */
void conn_close_after_flush(struct conn *c);

#endif
