// SPDX-License-Identifier: MIT
/*
 * The framing of wire.h: sending and receiving one packet with its
 * descriptors (CLOEXEC, counted, closed when unclaimed), the received
 * descriptor set, the decode arena, and packing into the caller's buffer.
 * Protocol-generated code stays in rdmabroker.pb-c.c.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/varint.h"
#include "proto/wire.h"

void wire_fds_init(struct wire_fds *fds)
{
	fds->n = 0;
	for (unsigned int i = 0; i < WIRE_MAX_FDS; i++)
		fds->fd[i] = -1;
}

void wire_fds_close(struct wire_fds *fds)
{
	for (unsigned int i = 0; i < fds->n; i++) {
		if (fds->fd[i] >= 0)
			close(fds->fd[i]);
		fds->fd[i] = -1;
	}
	fds->n = 0;
}

int wire_fds_steal(struct wire_fds *fds, unsigned int idx)
{
	int fd;

	if (idx >= fds->n || fds->fd[idx] < 0)
		return -EBADF;
	fd = fds->fd[idx];
	fds->fd[idx] = -1;
	return fd;
}

unsigned int wire_fds_left(const struct wire_fds *fds)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < fds->n; i++)
		n += fds->fd[i] >= 0;
	return n;
}

void wire_put_fds(struct msghdr *mh, void *ctl, const int *fds,
		  unsigned int nfds)
{
	struct cmsghdr *cm;

	memset(ctl, 0, CMSG_SPACE(sizeof(int) * nfds));
	mh->msg_control = ctl;
	mh->msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
	cm = CMSG_FIRSTHDR(mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
}

int wire_send(int sock, const void *buf, size_t len, const int *fds,
	      unsigned int nfds, int flags)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * WIRE_MAX_FDS)];
	} cbuf;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (len > WIRE_MAX_PACKET || nfds > WIRE_MAX_FDS)
		return -EMSGSIZE;
	/* The peer could not tell a zero-length packet from end of stream. */
	if (len == 0)
		return -EINVAL;
	if (nfds > 0)
		wire_put_fds(&mh, cbuf.buf, fds, nfds);
	/* send() skips the msghdr copy in the kernel: cheaper when there is
	 * no control message. */
	do
		n = nfds ? sendmsg(sock, &mh, MSG_NOSIGNAL | flags) :
			   send(sock, buf, len, MSG_NOSIGNAL | flags);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	/* SEQPACKET sends whole records or nothing. */
	return 0;
}

/* Collect every SCM_RIGHTS descriptor of @mh into @fds; foreign control
 * messages and descriptors beyond the set's room are closed. */
static int wire_collect_fds(struct msghdr *mh, struct wire_fds *fds)
{
	int ret = 0;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm;
	     cm = CMSG_NXTHDR(mh, cm)) {
		size_t n;
		int *p;

		if (cm->cmsg_level != SOL_SOCKET ||
		    cm->cmsg_type != SCM_RIGHTS) {
			ret = -EPROTO;
			continue;
		}
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		p = (int *)CMSG_DATA(cm);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, p + i, sizeof(fd));
			if (fds->n < WIRE_MAX_FDS) {
				fds->fd[fds->n++] = fd;
			} else {
				close(fd);
				ret = -EPROTO;
			}
		}
	}
	return ret;
}

int wire_recv(int sock, void *buf, size_t cap, struct wire_fds *ret_fds,
	      int flags)
{
	/* Room for one more descriptor than allowed, so that a sender who
	 * exceeds the limit is seen (and refused) rather than truncated. */
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * (WIRE_MAX_FDS + 1))];
	} cbuf;
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf.buf,
		.msg_controllen = sizeof(cbuf.buf),
	};
	ssize_t n;
	int ret;

	wire_fds_init(ret_fds);
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;

	ret = wire_collect_fds(&mh, ret_fds);
	if (ret == 0 && (mh.msg_flags & MSG_CTRUNC))
		ret = -EPROTO;
	if (ret == 0 && (mh.msg_flags & MSG_TRUNC))
		ret = -EMSGSIZE;
	if (ret == 0 && n == 0 && ret_fds->n > 0)
		ret = -EPROTO;
	if (ret < 0) {
		wire_fds_close(ret_fds);
		return ret;
	}
	return (int)n;
}

int wire_recv_bare(int sock, void *buf, size_t cap, int flags)
{
	ssize_t n;

	/* MSG_TRUNC: the packet's whole length, to tell a truncated one. */
	do
		n = recv(sock, buf, cap, MSG_TRUNC | flags);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	if ((size_t)n > cap)
		return -EMSGSIZE;
	return (int)n;
}

struct wire_arena_chunk {
	struct wire_arena_chunk *next;
	max_align_t data[];
};

#define WIRE_ALIGN(n)                                                          \
	(((n) + _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1))

/*
 * wire_arena_init_poisoned(): under AddressSanitizer the buffer is poisoned
 * but for what has been handed out, with a gap after every allocation, so
 * that an overrun of one (by a handler, by the decoder's memcpy) is
 * reported as it would be on the heap. Nothing changes in other builds.
 */
#if defined(__SANITIZE_ADDRESS__)
#define WIRE_ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WIRE_ARENA_ASAN 1
#endif
#endif
#ifdef WIRE_ARENA_ASAN
#include <sanitizer/asan_interface.h>
#define WIRE_ARENA_GAP _Alignof(max_align_t)
#define wire_arena_poison(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define wire_arena_unpoison(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define WIRE_ARENA_GAP 0
#define wire_arena_poison(p, n) ((void)(p), (void)(n))
#define wire_arena_unpoison(p, n) ((void)(p), (void)(n))
#endif

/* protobuf-c initialises what it allocates: no zeroing here. */
static void *wire_arena_raw(struct wire_arena *a, size_t size)
{
	size_t need = WIRE_ALIGN(size ? size : 1);
	size_t gap = a->poison ? WIRE_ARENA_GAP : 0;
	struct wire_arena_chunk *c;

	if (need < size || need > SIZE_MAX - gap)
		return NULL;
	if (a->cap - a->used >= need + gap) {
		void *p = a->buf + a->used;

		a->used += need + gap;
		if (a->poison)
			wire_arena_unpoison(p, size);
		return p;
	}
	if (need > a->heap_left)
		return NULL;
	c = malloc(sizeof(*c) + need);
	if (!c)
		return NULL;
	a->heap_left -= need;
	c->next = a->chunks;
	a->chunks = c;
	return c->data;
}

void *wire_arena_alloc(struct wire_arena *a, size_t size)
{
	void *p = wire_arena_raw(a, size);

	if (p)
		memset(p, 0, size);
	return p;
}

static void *wire_arena_pb_alloc(void *data, size_t size)
{
	return wire_arena_raw(data, size);
}

static void wire_arena_pb_free(void *data, void *ptr)
{
	/* Everything goes at wire_arena_reset(). */
}

void wire_arena_init(struct wire_arena *a, void *buf, size_t cap, size_t limit)
{
	a->allocator.alloc = wire_arena_pb_alloc;
	a->allocator.free = wire_arena_pb_free;
	a->allocator.allocator_data = a;
	/* The buffer must start aligned for anything. */
	a->buf = buf;
	a->cap = cap & ~(_Alignof(max_align_t) - 1);
	a->used = 0;
	a->limit = limit;
	a->heap_left = limit > a->cap ? limit - a->cap : 0;
	a->chunks = NULL;
	a->poison = false;
}

void wire_arena_init_poisoned(struct wire_arena *a, void *buf, size_t cap,
			      size_t limit)
{
	wire_arena_init(a, buf, cap, limit);
#ifdef WIRE_ARENA_ASAN
	a->poison = a->buf != NULL;
	if (a->poison)
		wire_arena_poison(a->buf, a->cap);
#endif
}

void wire_arena_reset(struct wire_arena *a)
{
	while (a->chunks) {
		struct wire_arena_chunk *c = a->chunks;

		a->chunks = c->next;
		free(c);
	}
	if (a->poison)
		wire_arena_poison(a->buf, a->used);
	a->used = 0;
	a->heap_left = a->limit > a->cap ? a->limit - a->cap : 0;
}

/* Read a varint of up to the ten bytes a 64-bit one takes at *p (below
 * end); 0 on success. varint.h's reader, inline with its one-byte path:
 * every reply the library reads passes here four times (make bench). */
static inline int wire_varint(const uint8_t **p, const uint8_t *end,
			      uint64_t *ret)
{
	return varint_get(p, end, 10, ret);
}

uint64_t wire_peek_reply(const uint8_t *buf, size_t len,
			 const uint8_t **ret_reply, size_t *ret_len)
{
	const uint8_t *p, *end, *reply;
	uint64_t key, sub, serial;

	/* NULL + 0 is undefined behaviour (UBSan's pointer-overflow). */
	if (!len)
		return 0;
	p = buf;
	end = buf + len;
	/* DaemonMessage.reply is field 1, length-delimited, and the whole
	 * message; Reply.serial is its field 1, a varint, packed first since
	 * fields go out in number order. */
	if (wire_varint(&p, end, &key) || key != ((1 << 3) | 2) ||
	    wire_varint(&p, end, &sub) || sub != (uint64_t)(end - p))
		return 0;
	reply = p;
	if (wire_varint(&p, end, &key) || key != ((1 << 3) | 0) ||
	    wire_varint(&p, end, &serial))
		return 0;
	*ret_reply = reply;
	*ret_len = (size_t)sub;
	return serial;
}

int wire_pack_into(const ProtobufCMessage *msg, uint8_t *buf)
{
	size_t len = protobuf_c_message_get_packed_size(msg);

	if (len > WIRE_MAX_PACKET)
		return -EMSGSIZE;
	return (int)protobuf_c_message_pack(msg, buf);
}

/* Write @v as a varint at @p; returns the bytes written. */
static size_t wire_put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

int wire_pack_daemon_message(const ProtobufCMessage *inner, unsigned int field,
			     bool bounded, uint8_t *buf, uint8_t **ret_start)
{
	uint8_t hdr[WIRE_PACK_HEADROOM];
	size_t len, n;
	int ret;

	/* A Reply by hand (envelope.c), sized before it is written. */
	if (inner->descriptor == &rdmab__reply__descriptor) {
		ret = wire_pack_reply_message((const Rdmab__Reply *)inner,
					      field, buf, WIRE_PACK_ROOM);
		if (ret != -ENOTSUP) {
			*ret_start = buf;
			return ret;
		}
	}
	if (!bounded &&
	    protobuf_c_message_get_packed_size(inner) > WIRE_MAX_PACKET)
		return -EMSGSIZE;
	/* Pack after room for the wrapper's tag and length, which go right
	 * in front once the length is known. */
	len = protobuf_c_message_pack(inner, buf + WIRE_PACK_HEADROOM);
	n = wire_put_varint(hdr, ((uint64_t)field << 3) | 2);
	n += wire_put_varint(hdr + n, len);
	if (len + n > WIRE_MAX_PACKET)
		return -EMSGSIZE;
	memcpy(buf + WIRE_PACK_HEADROOM - n, hdr, n);
	*ret_start = buf + WIRE_PACK_HEADROOM - n;
	return (int)(len + n);
}

int wire_send_msg(int sock, const ProtobufCMessage *msg, uint8_t *scratch,
		  const int *fds, unsigned int nfds, int flags)
{
	int len = wire_pack_into(msg, scratch);

	if (len < 0)
		return len;
	return wire_send(sock, scratch, (size_t)len, fds, nfds, flags);
}
