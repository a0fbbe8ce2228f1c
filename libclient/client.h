/* SPDX-License-Identifier: MIT */
/*
 * The library's internals: struct ibc_client (the socket, the calls in
 * flight, the queued events, the contexts), the call and reply, and the
 * helpers every libclient file shares (errors, fork, listings). Contexts'
 * own are in ctx.h. Not installed.
 */
#ifndef IBC_CLIENT_H
#define IBC_CLIENT_H

/*
 * The library's lock order. A thread that holds several takes them in this
 * order, never the other way; the atfork handlers (fork.c) take them all,
 * in it, before fork():
 *   1. the fork lock (fork.c's fork_lock): the process's clients and the
 *      fork state;
 *   2. each client's lock (struct ibc_client's lock), in the order of the
 *      fork list;
 *   3. each context's lock (struct ibc_ctx's lock, ctx.h), in the order of
 *      the client's list;
 *   4. the RSS list's lock (rss.c's rss_lock).
 */

#include <pthread.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "include/ibclient.h"
#include "libclient/family.h"
#include "proto/wire.h"

#define IBC_EXPORT __attribute__((visibility("default")))

/* Names the library sends (domains, devices) are shorter than this. */
#define IBC_NAME_MAX 64
/* Ping payloads are at most this long. */
#define IBC_PING_MAX 60000
/* The send buffer: every request the library builds packs to less (names
 * and payloads are bounded above); anything bigger is refused before it
 * is packed (ibc_pack()). */
#define IBC_SBUF_SIZE (WIRE_MAX_PACKET + 4096)

struct ibc_waiter;
struct ibc_queued_event;
struct ibc_kept;

struct ibc_client {
	int sock;
	/* Readable when ibc_dispatch() has work: holds the socket and
	 * event_fd. Both made by the first ibc_get_fd(); -1 before. */
	int epoll_fd;
	/* Counts events queued by whichever thread read them. */
	int event_fd;
	int timeout_ms;
	uint32_t flags;
	ibc_event_cb event_cb;
	void *event_arg;

	/* Lock order 2 (above). */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* The reader's buffer (one reader at a time) and the senders'
	 * (under lock). */
	uint8_t *rbuf;
	uint8_t *sbuf;
	uint64_t next_serial;
	/* One thread at a time reads the socket; the others wait on cond. */
	bool reading;
	/* The reader is in recv(2), which would lose the descriptors of a
	 * reply: no call whose reply carries some sends meanwhile. */
	bool reading_bare;
	/* Waiters whose replies may carry descriptors (IBC_CALL_FDS): while
	 * there is one, the socket is read with recvmsg(2). */
	unsigned int fd_waiters;
	/* Set once the connection is gone; every call fails after. */
	int dead;
	char dead_message[256];
	struct ibc_waiter *waiters;
	/* Requests sent without waiting whose answers were not read yet
	 * (ibc_send_nowait). */
	unsigned int unanswered;
	struct ibc_queued_event *events_head, **events_tail;
	/* The restart barrier (call.c, ibc_barrier_send()): a Restarted
	 * event asks for one; the serial of the ping sent, 0 for none. */
	bool barrier_due;
	uint64_t barrier_serial;
	/* The registers and unregisters sent without waiting whose answers
	 * were not read yet, oldest first (call.c, struct ibc_kept), and
	 * where the next goes (NULL: at kept); one of them a restart lost
	 * is to be sent again (kept_due). */
	struct ibc_kept *kept, **kept_tail;
	bool kept_due;

	struct ibc_client_info info;
	/* The devices and their caps, as the hello reply gave them. */
	struct ibc_device_info *devices;
	/* Contexts open, closed locally at disconnect. */
	struct ibc_ctx *ctxs;
	/* Each family's state of the session, by enum ibc_family_id
	 * (family.h), NULL until the family needs one: the family's own,
	 * read through its accessors only; it frees it in its client_free
	 * hook. */
	void *family_slot[IBC_FAMILY_COUNT];

	/* Fork (fork.c): every client of the process, under the fork
	 * lock; the broker's socket path and the session's secret, which
	 * a forked child shows to prove its descent. */
	struct ibc_client *fork_prev, *fork_next;
	bool fork_linked;
	/* Held by ibc_fork_init() while it tells the broker the state,
	 * without the fork lock: ibc_fork_unregister() waits. */
	unsigned int fork_refs;
	/* Inherited through fork(): the parent's session. Every call on it
	 * answers -ESTALE (dead_message says why) and nothing of the
	 * parent's is sent on, closed or unmapped. Written only by the
	 * child's atfork handler, before the child runs anything else. */
	bool stale;
	bool has_secret;
	uint8_t secret[16];
	char sock_path[108];
};

/* A decoded reply handed to the caller of ibc_call(), who keeps it (on its
 * stack, usually): the reader decodes straight into its arena. */
struct ibc_reply {
	Rdmab__Reply *reply;
	struct wire_fds fds;
	struct wire_arena arena;
	max_align_t mem[2048 / sizeof(max_align_t)];
};

/* ibc_call(): the reply may carry descriptors. Every other reply is read
 * with recv(2), about 0.25 us a read cheaper here than recvmsg(2), which
 * only this flag asks for (proto/README.md). */
#define IBC_CALL_FDS 1u

/*
 * Send @req (serial and version are filled in) and wait for its reply;
 * @flags: IBC_CALL_FDS or 0. On success *ret holds a reply without error,
 * to be released with ibc_reply_free(); a broker error returns its -errno
 * with the sentence recorded for ibc_last_error().
 */
int ibc_call(struct ibc_client *client, Rdmab__Request *req, unsigned int flags,
	     struct ibc_reply *ret);
void ibc_reply_free(struct ibc_reply *r);

/* After this many unanswered requests, ibc_send_nowait() reads what the
 * broker sent before returning. */
#define IBC_UNANSWERED_MAX 64

/*
 * Send @req without waiting for its reply, which is dropped when it comes,
 * an error included: for requests whose outcome changes nothing the caller
 * does next (proto/README.md, "The registry invariant"). 0, or -errno when
 * it could not be sent.
 */
int ibc_send_nowait(struct ibc_client *cl, Rdmab__Request *req);
/*
 * The same for a request whose loss leaves the broker's records wrong (a
 * register, an unregister, the end of an import or an open), which names
 * what it acts on by an id, so that a second one changes nothing: kept
 * until its answer is read, and sent again if a restart of the broker
 * lost it (call.c, struct ibc_kept).
 */
int ibc_send_kept(struct ibc_client *cl, Rdmab__Request *req);
/* Free what ibc_send_kept() kept of @cl's requests. */
void ibc_kept_free(struct ibc_client *cl);

/* Called with the lock held; the event queued, NULL without memory. */
struct ibc_queued_event *ibc_queue_event(struct ibc_client *cl,
					 enum ibc_event_type type,
					 const char *message,
					 const char *device);
void ibc_mark_dead(struct ibc_client *cl, int err, const char *message);
/* How ibc_read_one() waits: not at all, up to the socket's SO_RCVTIMEO,
 * or up to @wait_ms when positive. */
#define IBC_READ_NOW 0
#define IBC_READ_BLOCK (-1)
int ibc_read_one(struct ibc_client *cl, struct ibc_waiter *self, int wait_ms);
void ibc_free_events(struct ibc_client *cl);

/* Read what is pending without blocking and run the event callback for
 * every queued event; returns how many. */
int ibc_drain_events(struct ibc_client *cl);

/* At disconnect, while the session lives: destroy the objects the library
 * made in every context, telling the broker. */
void ibc_ctx_teardown_all(struct ibc_client *cl);
/* Release the contexts still open at disconnect, locally: the broker
 * releases its side when the session ends. */
void ibc_ctx_free_all(struct ibc_client *cl);
/* After IBC_EVENT_DEVICE_REMOVED was delivered: close this process's
 * descriptors of every context still open on @device, so that the kernel
 * can finish removing it. */
void ibc_ctx_device_removed(struct ibc_client *cl, const char *device);
/* After IBC_EVENT_DOMAIN_REKEYED was delivered (rekey.c): close this
 * process's copy of context @id and let the broker know. */
void ibc_ctx_rekeyed(struct ibc_client *cl, uint64_t id);

/* Fill @e from a DeviceInfo of the broker. */
void ibc_device_info_from(struct ibc_device_info *e,
			  const Rdmab__DeviceInfo *d);

/*
 * The ABI growth rule (libibclient(3)): a structure the library fills is
 * copied into the caller's, of @size bytes, as far as both versions go; a
 * newer caller's tail is zeroed. IBC_SIZE_V0 is the size of a structure's
 * first version, through its last field then: the smallest @size accepted.
 */
#define IBC_SIZE_V0(type, last)                                                \
	(offsetof(type, last) + sizeof(((type *)0)->last))

static inline void ibc_copy_out(void *dst, size_t size, const void *src,
				size_t src_size)
{
	size_t n = size < src_size ? size : src_size;

	memcpy(dst, src, n);
	if (size > n)
		memset((char *)dst + n, 0, size - n);
}

/* -EINVAL with a sentence when @size is below @min, the first version of
 * struct @name. */
int ibc_check_size(const char *name, size_t size, size_t min);

/* Copy @src into @dst of @cap bytes, truncated and NUL-terminated. */
static inline void ibc_copy_name(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* --- fork (fork.c) --- */

/* Add @cl to the process's clients, which the atfork handlers walk;
 * installs them the first time. 0 or -errno with the sentence. */
int ibc_fork_register(struct ibc_client *cl);
/* Remove @cl, if it was added. */
void ibc_fork_unregister(struct ibc_client *cl);
/* For @cl's hello: the session of the parent process on the same
 * broker, inherited through fork(). false when there is none. */
bool ibc_fork_parent(const struct ibc_client *cl, uint64_t *ret_id,
		     uint8_t ret_secret[16]);
/* RDMAV_FORK_SAFE or IBV_FORK_SAFE is set: ibc_fork_init() now, before
 * the hello that tells the broker the state. */
void ibc_fork_env(void);
/* The process now holds memory pinned for the device (an MR, or a queue
 * on a verbs device): ibc_fork_init() is too late from now on. */
void ibc_fork_note_pin(void);

/* At ibc_close()/ibc_disconnect() of a context inherited through fork():
 * close the placeholders over its descriptors (the soft memfd, cmd_fd,
 * the async event fd), leaving its libibverbs structures. */
void ibc_fork_ctx_close(struct ibc_ctx *ctx);

/* This process maps (or is about to map) a uverbs device: every fork()
 * from now on marks the device's mappings MADV_DONTFORK. */
void ibc_fork_note_device(void);
/* In the child (fork lock held): close the descriptors delivered to
 * @cl's waiters, threads of the parent that are not here to take them. */
void ibc_fork_drop_waiters(struct ibc_client *cl);

/* The session was inherited through fork(). */
static inline bool ibc_stale(const struct ibc_client *cl)
{
	return cl->stale;
}

/* -ESTALE with the sentence that says whose session @cl is. */
int ibc_stale_error(const struct ibc_client *cl);

/* Record the calling thread's last error and return @err. */
int ibc_set_error(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void ibc_clear_error(void);

#endif
