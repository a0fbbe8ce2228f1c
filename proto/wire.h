/* SPDX-License-Identifier: MIT */
/*
 * SOCK_SEQPACKET framing shared by the daemon, the library and the tests:
 * one protobuf-c message per packet, at most WIRE_MAX_PACKET bytes and
 * WIRE_MAX_FDS descriptors, every received descriptor CLOEXEC.
 */
#ifndef RDMAB_WIRE_H
#define RDMAB_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "proto/rdmabroker.pb-c.h"

#define WIRE_PROTOCOL_VERSION 1
#define WIRE_MAX_PACKET (64 * 1024)
#define WIRE_MAX_FDS 8
/* Decoded messages may not take more heap than this (protobuf-c has no
 * limits of its own; a 64 KiB packet of empty repeated submessages could
 * otherwise ask for megabytes). */
#define WIRE_MAX_DECODED (1024 * 1024)

/* A set of descriptors that travel with one packet; owns them. */
struct wire_fds {
	unsigned int n;
	int fd[WIRE_MAX_FDS];
};

void wire_fds_init(struct wire_fds *fds);
/* Close every descriptor still owned; idempotent. */
void wire_fds_close(struct wire_fds *fds);
/* Take descriptor @idx out of the set: the caller owns it afterwards. */
int wire_fds_steal(struct wire_fds *fds, unsigned int idx);
/* Number of descriptors not yet stolen. */
unsigned int wire_fds_left(const struct wire_fds *fds);

/*
 * Attach @nfds (at least one) descriptors of @fds to @mh as one
 * SCM_RIGHTS message, made in @ctl: aligned as a struct cmsghdr, with
 * room for CMSG_SPACE(sizeof(int) * @nfds) bytes.
 */
struct msghdr;
void wire_put_fds(struct msghdr *mh, void *ctl, const int *fds,
		  unsigned int nfds);

/*
 * Send one packet carrying @nfds descriptors (not consumed). Retries EINTR.
 * @flags is added to MSG_NOSIGNAL (MSG_DONTWAIT for the daemon).
 * Returns 0, -EAGAIN when the socket is full, -EMSGSIZE, -EINVAL for an
 * empty packet (it would read as end of stream), or another -errno.
 */
int wire_send(int sock, const void *buf, size_t len, const int *fds,
	      unsigned int nfds, int flags);

/*
 * Receive one packet into @buf (@cap bytes, WIRE_MAX_PACKET is enough) and
 * its descriptors into @ret_fds. Returns the packet length, 0 at end of
 * stream, -EAGAIN, -EMSGSIZE for a packet larger than @cap (MSG_TRUNC),
 * -EPROTO for descriptors that did not fit or a control message that is
 * not SCM_RIGHTS (MSG_CTRUNC); on every error no descriptor stays open and
 * @ret_fds is empty. Retries EINTR.
 */
int wire_recv(int sock, void *buf, size_t cap, struct wire_fds *ret_fds,
	      int flags);

/*
 * Receive one packet into @buf (@cap bytes) where no descriptor may come:
 * recv(2), not recvmsg(2), whose msghdr and iovec copied in and out cost
 * about 0.25 us more a read here (make bench-loops). Descriptors the peer
 * attached are never received: the kernel closes them. Returns the packet
 * length, 0 at end of stream (a zero-length packet too), -EAGAIN,
 * -EMSGSIZE for a packet larger than @cap. Retries EINTR.
 */
int wire_recv_bare(int sock, void *buf, size_t cap, int flags);

/*
 * A protobuf-c allocator for one message at a time: allocations are carved
 * from @buf and, once it is full, from the heap up to @limit bytes in all;
 * free is a no-op and wire_arena_reset() releases everything. Decoding
 * into it needs no free_unpacked, and the limit bounds what a hostile
 * packet can make protobuf-c allocate.
 */
struct wire_arena_chunk;

struct wire_arena {
	ProtobufCAllocator allocator;
	uint8_t *buf;
	size_t cap;
	size_t used;
	size_t heap_left;
	size_t limit;
	struct wire_arena_chunk *chunks;
	bool poison;
};

void wire_arena_init(struct wire_arena *a, void *buf, size_t cap, size_t limit);
/*
 * The same, for a static or heap @buf: under AddressSanitizer what is not
 * handed out stays poisoned, with a gap after every allocation, so that an
 * overrun of one is reported as on the heap. Never for a buffer on the
 * stack, which would stay poisoned after its frame.
 */
void wire_arena_init_poisoned(struct wire_arena *a, void *buf, size_t cap,
			      size_t limit);
/* Zeroed memory from the arena; NULL when the limit is reached. */
void *wire_arena_alloc(struct wire_arena *a, size_t size);
/* Release every allocation; the arena is ready for the next message. */
void wire_arena_reset(struct wire_arena *a);

/* The serial of a packed DaemonMessage carrying a Reply, and where the
 * packed Reply is in @buf; 0 when it is an Event or the serial cannot be
 * found without a full decode. */
uint64_t wire_peek_reply(const uint8_t *buf, size_t len,
			 const uint8_t **ret_reply, size_t *ret_len);

/* Pack @msg into @buf, which holds WIRE_MAX_PACKET bytes. Returns the
 * length or -EMSGSIZE. */
int wire_pack_into(const ProtobufCMessage *msg, uint8_t *buf);

/* Room in front of a packed reply for its wrapper's tag and length, and
 * behind the packet limit for a bounded reply that turns out too big. */
#define WIRE_PACK_HEADROOM 16
#define WIRE_PACK_ROOM (WIRE_PACK_HEADROOM + WIRE_MAX_PACKET + 8192)

/*
 * Pack a DaemonMessage whose only field, number @field, is @inner (a Reply
 * or an Event) into @buf (WIRE_PACK_ROOM bytes); *ret_start is where the
 * packet starts. The same bytes as packing the DaemonMessage, with fewer
 * walks of @inner: a Reply is packed by hand (wire_pack_reply_message(),
 * sized first whatever @bounded says); for an Event, the wrapper's tag and
 * length are written here, and a @bounded one (known to pack to less than
 * WIRE_PACK_ROOM minus the headroom) is not sized first. Returns the
 * length or -EMSGSIZE.
 */
int wire_pack_daemon_message(const ProtobufCMessage *inner, unsigned int field,
			     bool bounded, uint8_t *buf, uint8_t **ret_start);

/*
 * The hot path's codec of the envelope (envelope.c): Request and Reply by
 * hand, a submessage body by protobuf-c, the same bytes as protobuf-c.
 *
 * wire_unpack_request() and wire_unpack_reply() decode into @a, which
 * must hold nothing yet (a packet of an unusual shape is decoded by
 * protobuf-c after a reset of @a); the result is what
 * rdmab__request__unpack() or rdmab__reply__unpack() gives, NULL where
 * they fail, but for this: a request's ping is not copied, it points into
 * @buf, which must outlive the request, and takes nothing from @a's limit.
 */
Rdmab__Request *wire_unpack_request(struct wire_arena *a, size_t len,
				    const uint8_t *buf);
Rdmab__Reply *wire_unpack_reply(struct wire_arena *a, size_t len,
				const uint8_t *buf);
/* Pack @req into @buf of @cap bytes; the length or -EMSGSIZE. */
int wire_pack_request(const Rdmab__Request *req, uint8_t *buf, size_t cap);
/* Pack a DaemonMessage whose field @field is @r into @buf of @cap bytes;
 * the length, -EMSGSIZE, or -ENOTSUP for a reply to pack with protobuf-c
 * (unknown fields). */
int wire_pack_reply_message(const Rdmab__Reply *r, unsigned int field,
			    uint8_t *buf, size_t cap);

/* Pack @msg into @scratch (WIRE_MAX_PACKET bytes) and send it. */
int wire_send_msg(int sock, const ProtobufCMessage *msg, uint8_t *scratch,
		  const int *fds, unsigned int nfds, int flags);

#endif
