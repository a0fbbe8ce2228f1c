// SPDX-License-Identifier: MIT
/* proto/wire.c: framing, descriptors, limits and the decode budget. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/wire.h"
#include "common/device/caps-fields.h"
#include "tests/cklib.h"
#include "tests/testlib.h"

/* A connected pair: [0] sends, [1] receives. */
static int sv[2];

static void pair_setup(void)
{
	ck_assert_int_eq(
		socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
}

static void pair_teardown(void)
{
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
}

/* @n read ends of fresh pipes, deliberately without FD_CLOEXEC; the write
 * ends are closed. */
static void make_fds(int *fds, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		int p[2];

		ck_assert_int_eq(tl_pipe(p), 0);
		close(p[1]);
		fds[i] = p[0];
		ck_assert_int_eq(fcntl(fds[i], F_GETFD) & FD_CLOEXEC, 0);
	}
}

static void close_fds(int *fds, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		close(fds[i]);
}

static void assert_same_file(int a, int b)
{
	struct stat sa, sb;

	ck_assert_int_eq(fstat(a, &sa), 0);
	ck_assert_int_eq(fstat(b, &sb), 0);
	ck_assert_uint_eq(sa.st_dev, sb.st_dev);
	ck_assert_uint_eq(sa.st_ino, sb.st_ino);
}

static void assert_nothing_pending(int sock)
{
	struct wire_fds fds;
	uint8_t buf[16];

	ck_assert_int_eq(wire_recv(sock, buf, sizeof(buf), &fds, MSG_DONTWAIT),
			 -EAGAIN);
	ck_assert_uint_eq(fds.n, 0);
}

static const unsigned int roundtrip_nfds[] = { 0, 1, WIRE_MAX_FDS };

START_TEST(test_roundtrip)
{
	unsigned int nfds = roundtrip_nfds[_i];
	static uint8_t out[4096], in[WIRE_MAX_PACKET];
	int fds[WIRE_MAX_FDS];
	struct wire_fds got;
	int before, n;

	for (size_t i = 0; i < sizeof(out); i++)
		out[i] = (uint8_t)(i * 7 + nfds);
	make_fds(fds, nfds);
	before = tl_count_fds(0);

	ck_assert_int_eq(wire_send(sv[0], out, sizeof(out), fds, nfds, 0), 0);
	n = wire_recv(sv[1], in, sizeof(in), &got, 0);
	ck_assert_int_eq(n, (int)sizeof(out));
	ck_assert_mem_eq(in, out, sizeof(out));
	ck_assert_uint_eq(got.n, nfds);
	ck_assert_uint_eq(wire_fds_left(&got), nfds);
	ck_assert_int_eq(tl_count_fds(0), before + (int)nfds);
	for (unsigned int i = 0; i < nfds; i++) {
		ck_assert_int_ge(got.fd[i], 0);
		ck_assert_int_ne(got.fd[i], fds[i]);
		ck_assert_msg(fcntl(got.fd[i], F_GETFD) & FD_CLOEXEC,
			      "received descriptor %u is not CLOEXEC", i);
		/* Same order, same files. */
		assert_same_file(got.fd[i], fds[i]);
	}
	/* The rest of the set is empty. */
	for (unsigned int i = nfds; i < WIRE_MAX_FDS; i++)
		ck_assert_int_eq(got.fd[i], -1);

	wire_fds_close(&got);
	ck_assert_uint_eq(got.n, 0);
	wire_fds_close(&got); /* idempotent */
	ck_assert_int_eq(tl_count_fds(0), before);
	close_fds(fds, nfds);
}
END_TEST

START_TEST(test_fds_steal)
{
	int fds[3], stolen;
	struct wire_fds got;
	uint8_t buf[8] = "x";
	int before;

	make_fds(fds, 3);
	before = tl_count_fds(0);
	ck_assert_int_eq(wire_send(sv[0], buf, 1, fds, 3, 0), 0);
	ck_assert_int_eq(wire_recv(sv[1], buf, sizeof(buf), &got, 0), 1);
	ck_assert_uint_eq(wire_fds_left(&got), 3);

	stolen = wire_fds_steal(&got, 1);
	ck_assert_int_ge(stolen, 0);
	assert_same_file(stolen, fds[1]);
	ck_assert_uint_eq(wire_fds_left(&got), 2);
	ck_assert_int_eq(wire_fds_steal(&got, 1), -EBADF);
	ck_assert_int_eq(wire_fds_steal(&got, 3), -EBADF);
	ck_assert_int_eq(wire_fds_steal(&got, WIRE_MAX_FDS + 5), -EBADF);

	/* Closing the set leaves the stolen descriptor alone. */
	wire_fds_close(&got);
	ck_assert_int_eq(tl_count_fds(0), before + 1);
	ck_assert_int_ge(fcntl(stolen, F_GETFD), 0);
	close(stolen);
	ck_assert_int_eq(tl_count_fds(0), before);
	close_fds(fds, 3);
}
END_TEST

START_TEST(test_recv_truncated)
{
	static uint8_t out[4096];
	uint8_t in[100];
	struct wire_fds got;
	int fds[3], before;

	memset(out, 0xab, sizeof(out));
	make_fds(fds, 3);
	before = tl_count_fds(0);
	ck_assert_int_eq(wire_send(sv[0], out, sizeof(out), fds, 3, 0), 0);
	ck_assert_int_eq(wire_recv(sv[1], in, sizeof(in), &got, 0), -EMSGSIZE);
	ck_assert_uint_eq(got.n, 0);
	ck_assert_int_eq(tl_count_fds(0), before);

	/* The socket still works: the next packet arrives whole. */
	ck_assert_int_eq(wire_send(sv[0], "ok", 2, NULL, 0, 0), 0);
	ck_assert_int_eq(wire_recv(sv[1], in, sizeof(in), &got, 0), 2);
	ck_assert_mem_eq(in, "ok", 2);
	ck_assert_int_eq(tl_count_fds(0), before);
	close_fds(fds, 3);
}
END_TEST

/* More descriptors than a packet may carry, sent with a raw sendmsg: one
 * over the limit (fits the receive buffer), a few over (the kernel
 * truncates the control data) and many. */
static const unsigned int too_many[] = { WIRE_MAX_FDS + 1, WIRE_MAX_FDS + 4,
					 64 };

START_TEST(test_recv_too_many_fds)
{
	unsigned int n = too_many[_i];
	uint8_t in[64];
	struct wire_fds got;
	int *fds, before;

	fds = calloc(n, sizeof(*fds));
	ck_assert_ptr_nonnull(fds);
	make_fds(fds, n);
	before = tl_count_fds(0);
	ck_assert_int_eq(tl_raw_send(sv[0], "abc", 3, fds, n, 0), 0);
	ck_assert_int_eq(wire_recv(sv[1], in, sizeof(in), &got, 0), -EPROTO);
	ck_assert_uint_eq(got.n, 0);
	ck_assert_int_eq(tl_count_fds(0), before);
	close_fds(fds, n);
	free(fds);
}
END_TEST

/* A control message that is not SCM_RIGHTS (credentials, which the
 * receiver asked for) is refused, and the descriptors beside it closed. */
START_TEST(test_recv_foreign_cmsg)
{
	uint8_t in[64];
	struct wire_fds got;
	int one = 1, fds[2], before;

	ck_assert_int_eq(
		setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)),
		0);
	make_fds(fds, 2);
	before = tl_count_fds(0);
	ck_assert_int_eq(wire_send(sv[0], "abc", 3, fds, 2, 0), 0);
	ck_assert_int_eq(wire_recv(sv[1], in, sizeof(in), &got, 0), -EPROTO);
	ck_assert_uint_eq(got.n, 0);
	ck_assert_int_eq(tl_count_fds(0), before);
	close_fds(fds, 2);
}
END_TEST

/* A zero-length packet reads like the end of the stream; with descriptors
 * it cannot be one. */
START_TEST(test_recv_empty_with_fds)
{
	uint8_t in[64];
	struct wire_fds got;
	int fds[2], before;

	make_fds(fds, 2);
	before = tl_count_fds(0);
	ck_assert_int_eq(tl_raw_send(sv[0], "", 0, fds, 2, 0), 0);
	ck_assert_int_eq(wire_recv(sv[1], in, sizeof(in), &got, 0), -EPROTO);
	ck_assert_uint_eq(got.n, 0);
	ck_assert_int_eq(tl_count_fds(0), before);
	close_fds(fds, 2);
}
END_TEST

/* wire_recv_bare(): the packet's bytes, a packet over the buffer refused
 * whole, nothing at EOF or on an empty socket, and the descriptors a peer
 * attached never received: the kernel closes them (the write end sent is
 * the pipe's last, so its read end sees EOF). */
START_TEST(test_recv_bare)
{
	uint8_t in[8];
	int p[2], before;
	char c;

	ck_assert_int_eq(tl_pipe(p), 0);
	before = tl_count_fds(0);
	ck_assert_int_eq(tl_raw_send(sv[0], "abc", 3, &p[1], 1, 0), 0);
	close(p[1]);
	ck_assert_int_eq(wire_recv_bare(sv[1], in, sizeof(in), 0), 3);
	ck_assert_mem_eq(in, "abc", 3);
	ck_assert_int_eq(tl_count_fds(0), before - 1);
	ck_assert_int_eq(read(p[0], &c, 1), 0);
	close(p[0]);

	ck_assert_int_eq(wire_send(sv[0], "123456789", 9, NULL, 0, 0), 0);
	ck_assert_int_eq(wire_recv_bare(sv[1], in, sizeof(in), 0), -EMSGSIZE);
	ck_assert_int_eq(wire_recv_bare(sv[1], in, sizeof(in), MSG_DONTWAIT),
			 -EAGAIN);
	close(sv[0]);
	sv[0] = -1;
	ck_assert_int_eq(wire_recv_bare(sv[1], in, sizeof(in), 0), 0);
}
END_TEST

START_TEST(test_send_oversize)
{
	ProtobufCBinaryData ping = { 0 };
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	static uint8_t big[WIRE_MAX_PACKET + 1], in[WIRE_MAX_PACKET + 16];
	static uint8_t scratch[WIRE_MAX_PACKET];
	int fds[WIRE_MAX_FDS + 1], before;
	struct wire_fds got;
	int sndbuf = 4 * WIRE_MAX_PACKET;

	ck_assert_int_eq(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf,
				    sizeof(sndbuf)),
			 0);
	make_fds(fds, WIRE_MAX_FDS + 1);
	before = tl_count_fds(0);

	ck_assert_int_eq(wire_send(sv[0], big, sizeof(big), NULL, 0, 0),
			 -EMSGSIZE);
	ck_assert_int_eq(wire_send(sv[0], big, sizeof(big), fds, 1, 0),
			 -EMSGSIZE);
	ck_assert_int_eq(wire_send(sv[0], "x", 1, fds, WIRE_MAX_FDS + 1, 0),
			 -EMSGSIZE);
	assert_nothing_pending(sv[1]);

	/* A message that packs to more than the limit. */
	ping.data = big;
	ping.len = WIRE_MAX_PACKET;
	req.version = WIRE_PROTOCOL_VERSION;
	req.body_case = RDMAB__REQUEST__BODY_PING;
	req.ping = ping;
	ck_assert_int_eq(wire_pack_into(&req.base, scratch), -EMSGSIZE);
	ck_assert_int_eq(wire_send_msg(sv[0], &req.base, scratch, NULL, 0, 0),
			 -EMSGSIZE);
	/* Just under the limit packs. */
	ping.len = WIRE_MAX_PACKET - 16;
	req.ping = ping;
	ck_assert_int_eq(wire_pack_into(&req.base, scratch),
			 (int)protobuf_c_message_get_packed_size(&req.base));
	assert_nothing_pending(sv[1]);
	ck_assert_int_eq(tl_count_fds(0), before);

	/* Exactly the limit, with the most descriptors, goes through. */
	ck_assert_int_eq(
		wire_send(sv[0], big, WIRE_MAX_PACKET, fds, WIRE_MAX_FDS, 0),
		0);
	ck_assert_int_eq(wire_recv(sv[1], in, sizeof(in), &got, 0),
			 WIRE_MAX_PACKET);
	ck_assert_uint_eq(got.n, WIRE_MAX_FDS);
	wire_fds_close(&got);
	ck_assert_int_eq(tl_count_fds(0), before);
	close_fds(fds, WIRE_MAX_FDS + 1);
}
END_TEST

START_TEST(test_eagain)
{
	uint8_t buf[256] = { 0 };
	struct wire_fds got;
	int fds[2], before, ret, sent = 0;

	make_fds(fds, 2);
	before = tl_count_fds(0);

	/* Empty socket: with MSG_DONTWAIT, and on an O_NONBLOCK socket. */
	ck_assert_int_eq(wire_recv(sv[1], buf, sizeof(buf), &got, MSG_DONTWAIT),
			 -EAGAIN);
	ck_assert_uint_eq(got.n, 0);
	ck_assert_int_eq(
		fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK), 0);
	ck_assert_int_eq(wire_recv(sv[1], buf, sizeof(buf), &got, 0), -EAGAIN);
	ck_assert_int_eq(tl_count_fds(0), before);

	/* Full socket: the sender gets -EAGAIN and keeps its descriptors. */
	do {
		ret = wire_send(sv[0], buf, sizeof(buf), fds, 2, MSG_DONTWAIT);
		if (ret == 0)
			sent++;
	} while (ret == 0 && sent < 100000);
	ck_assert_int_eq(ret, -EAGAIN);
	ck_assert_int_gt(sent, 0);
	ck_assert_int_ge(fcntl(fds[0], F_GETFD), 0);
	ck_assert_int_ge(fcntl(fds[1], F_GETFD), 0);

	/* Drain: every packet arrives with its two descriptors. */
	for (int i = 0; i < sent; i++) {
		ck_assert_int_eq(wire_recv(sv[1], buf, sizeof(buf), &got, 0),
				 (int)sizeof(buf));
		ck_assert_uint_eq(got.n, 2);
		wire_fds_close(&got);
	}
	ck_assert_int_eq(wire_recv(sv[1], buf, sizeof(buf), &got, 0), -EAGAIN);
	ck_assert_int_eq(tl_count_fds(0), before);
	close_fds(fds, 2);
}
END_TEST

START_TEST(test_eof)
{
	uint8_t buf[64];
	struct wire_fds got;
	int fds[1], before;

	make_fds(fds, 1);
	before = tl_count_fds(0);
	/* What was sent before the close still arrives, then EOF. */
	ck_assert_int_eq(wire_send(sv[0], "last", 4, fds, 1, 0), 0);
	close(sv[0]);
	sv[0] = -1;
	ck_assert_int_eq(wire_recv(sv[1], buf, sizeof(buf), &got, 0), 4);
	ck_assert_uint_eq(got.n, 1);
	wire_fds_close(&got);
	ck_assert_int_eq(wire_recv(sv[1], buf, sizeof(buf), &got, 0), 0);
	ck_assert_uint_eq(got.n, 0);
	ck_assert_int_eq(wire_recv(sv[1], buf, sizeof(buf), &got, MSG_DONTWAIT),
			 0);
	ck_assert_int_eq(tl_count_fds(0), before - 1);
	close_fds(fds, 1);
}
END_TEST

/*
 * A peer that closes while our packets are unread in its queue: Linux
 * reports ECONNRESET once, before what the peer sent last, which is still
 * there to read, then EOF. Readers must not stop at the ECONNRESET (the
 * daemon's last word, an error reply or a shutdown event, is behind it).
 */
START_TEST(test_reset_then_queued)
{
	uint8_t buf[64];
	struct wire_fds got;
	int fds[1], before;

	make_fds(fds, 1);
	before = tl_count_fds(0);
	ck_assert_int_eq(wire_send(sv[1], "unread", 6, NULL, 0, 0), 0);
	ck_assert_int_eq(wire_send(sv[0], "last word", 9, fds, 1, 0), 0);
	close(sv[0]);
	sv[0] = -1;
	ck_assert_int_eq(wire_recv(sv[1], buf, sizeof(buf), &got, MSG_DONTWAIT),
			 -ECONNRESET);
	ck_assert_uint_eq(got.n, 0);
	ck_assert_int_eq(wire_recv(sv[1], buf, sizeof(buf), &got, MSG_DONTWAIT),
			 9);
	ck_assert_mem_eq(buf, "last word", 9);
	ck_assert_uint_eq(got.n, 1);
	wire_fds_close(&got);
	ck_assert_int_eq(wire_recv(sv[1], buf, sizeof(buf), &got, MSG_DONTWAIT),
			 0);
	ck_assert_int_eq(tl_count_fds(0), before - 1);
	close_fds(fds, 1);
}
END_TEST

/* wire_send_msg of a message that packs to nothing must not produce a
 * zero-length packet, which the peer cannot tell from the end of the
 * stream. */
START_TEST(test_empty_message_is_not_eof)
{
	Rdmab__StatusRequest empty = RDMAB__STATUS_REQUEST__INIT;
	static uint8_t scratch[WIRE_MAX_PACKET];
	uint8_t buf[64];
	struct wire_fds got;
	int ret;

	ret = wire_send_msg(sv[0], &empty.base, scratch, NULL, 0, 0);
	if (ret < 0)
		return; /* refusing is fine too */
	ret = wire_recv(sv[1], buf, sizeof(buf), &got, MSG_DONTWAIT);
	ck_assert_msg(ret > 0,
		      "an empty message went out as a %d-byte packet, which "
		      "reads as end of stream",
		      ret);
	wire_fds_close(&got);
}
END_TEST

static bool in_buf(const void *p, const void *buf, size_t cap)
{
	return (const uint8_t *)p >= (const uint8_t *)buf &&
	       (const uint8_t *)p < (const uint8_t *)buf + cap;
}

START_TEST(test_arena)
{
	static union {
		max_align_t align;
		uint8_t b[1024];
	} mem;
	struct wire_arena a;
	uint8_t *p, *q, *first;

	memset(mem.b, 0xff, sizeof(mem.b));
	wire_arena_init(&a, mem.b, sizeof(mem.b), 4096);
	/* From the buffer first, zeroed and aligned. */
	first = p = wire_arena_alloc(&a, 100);
	ck_assert_ptr_nonnull(p);
	ck_assert(in_buf(p, mem.b, sizeof(mem.b)));
	for (int i = 0; i < 100; i++)
		ck_assert_uint_eq(p[i], 0);
	q = wire_arena_alloc(&a, 1);
	ck_assert(in_buf(q, mem.b, sizeof(mem.b)));
	ck_assert_uint_eq((uintptr_t)q % _Alignof(max_align_t), 0);
	ck_assert(q >= p + 100);
	/* Then from the heap, up to the limit in all. */
	p = wire_arena_alloc(&a, 2000);
	ck_assert_ptr_nonnull(p);
	ck_assert(!in_buf(p, mem.b, sizeof(mem.b)));
	memset(p, 0x5a, 2000);
	ck_assert_ptr_null(wire_arena_alloc(&a, 2000));
	ck_assert_ptr_null(wire_arena_alloc(&a, SIZE_MAX));
	ck_assert_ptr_null(wire_arena_alloc(&a, SIZE_MAX - 8));
	/* Everything comes back. */
	wire_arena_reset(&a);
	ck_assert_ptr_eq(wire_arena_alloc(&a, 8), first);
	p = wire_arena_alloc(&a, 3000);
	ck_assert_ptr_nonnull(p);
	wire_arena_reset(&a);

	/* No buffer at all: the heap only. */
	wire_arena_init(&a, NULL, 0, 256);
	ck_assert_ptr_nonnull(wire_arena_alloc(&a, 200));
	ck_assert_ptr_null(wire_arena_alloc(&a, 200));
	wire_arena_reset(&a);
	ck_assert_ptr_nonnull(wire_arena_alloc(&a, 200));
	wire_arena_reset(&a);
}
END_TEST

/* A HelloReply of @n empty DeviceInfo entries, two bytes each on the wire:
 * small to send, large to decode. */
static size_t pack_empty_devices(uint8_t *buf, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		buf[2 * i] = (5 << 3) | 2; /* HelloReply.devices */
		buf[2 * i + 1] = 0;
	}
	return 2 * n;
}

/* The decode limit: what the daemon and the library decode into. */
START_TEST(test_arena_refuses_over_limit_decode)
{
	static union {
		max_align_t align;
		uint8_t b[64 * 1024];
	} mem;
	static uint8_t buf[WIRE_MAX_PACKET];
	struct wire_arena a;
	Rdmab__HelloReply *hr;
	struct tl_buf u = { 0 };
	size_t len;

	wire_arena_init(&a, mem.b, sizeof(mem.b), WIRE_MAX_DECODED);
	/* A small message decodes... */
	len = pack_empty_devices(buf, 4);
	hr = rdmab__hello_reply__unpack(&a.allocator, len, buf);
	ck_assert_ptr_nonnull(hr);
	ck_assert_uint_eq(hr->n_devices, 4);
	wire_arena_reset(&a);

	/* ...a 64 KiB packet of empty submessages, which protobuf-c alone
	 * decodes into megabytes, does not... */
	len = pack_empty_devices(buf, WIRE_MAX_PACKET / 2);
	hr = rdmab__hello_reply__unpack(NULL, len, buf);
	ck_assert_ptr_nonnull(hr);
	ck_assert_uint_eq(hr->n_devices, WIRE_MAX_PACKET / 2);
	rdmab__hello_reply__free_unpacked(hr, NULL);
	ck_assert_ptr_null(rdmab__hello_reply__unpack(&a.allocator, len, buf));
	wire_arena_reset(&a);

	/* ...and the arena is whole again after the failure. */
	len = pack_empty_devices(buf, 4);
	ck_assert_ptr_nonnull(
		rdmab__hello_reply__unpack(&a.allocator, len, buf));
	wire_arena_reset(&a);

	/* Unknown fields cost memory too: a Request (what the daemon
	 * decodes) of nothing else, in a small arena. */
	tl_pb_uint(&u, 1, WIRE_PROTOCOL_VERSION);
	while (u.len + 4 <= WIRE_MAX_PACKET)
		tl_pb_uint(&u, 2000, 1);
	wire_arena_init(&a, NULL, 0, 4096);
	ck_assert_ptr_null(rdmab__request__unpack(&a.allocator, u.len, u.p));
	wire_arena_reset(&a);
	tl_buf_free(&u);
}
END_TEST

/* Pack a DaemonMessage carrying @reply into @b. */
static void pack_reply(struct tl_buf *b, Rdmab__Reply *reply)
{
	Rdmab__DaemonMessage m = RDMAB__DAEMON_MESSAGE__INIT;

	m.kind_case = RDMAB__DAEMON_MESSAGE__KIND_REPLY;
	m.reply = reply;
	b->len = 0;
	tl_pb_message(b, &m.base);
}

START_TEST(test_peek_reply)
{
	Rdmab__DaemonMessage ev_msg = RDMAB__DAEMON_MESSAGE__INIT;
	Rdmab__ShutdownEvent sev = RDMAB__SHUTDOWN_EVENT__INIT;
	ProtobufCBinaryData ping = { 0 };
	Rdmab__Reply reply = RDMAB__REPLY__INIT, *back;
	Rdmab__Event ev = RDMAB__EVENT__INIT;
	const uint8_t *r = NULL;
	struct tl_buf b = { 0 }, h = { 0 };
	size_t rlen = 0;

	ping.data = (uint8_t *)"payload";
	ping.len = 7;
	reply.serial = 42;
	reply.body_case = RDMAB__REPLY__BODY_PING;
	reply.ping = ping;
	pack_reply(&b, &reply);
	ck_assert_uint_eq(wire_peek_reply(b.p, b.len, &r, &rlen), 42);
	/* It points at the whole Reply. */
	ck_assert(r > b.p && r + rlen == b.p + b.len);
	back = rdmab__reply__unpack(NULL, rlen, r);
	ck_assert_ptr_nonnull(back);
	ck_assert_uint_eq(back->serial, 42);
	ck_assert_uint_eq(back->ping.len, 7);
	rdmab__reply__free_unpacked(back, NULL);

	/* The largest serial (a ten-byte varint). */
	reply.serial = UINT64_MAX;
	pack_reply(&b, &reply);
	ck_assert(wire_peek_reply(b.p, b.len, &r, &rlen) == UINT64_MAX);

	/* Cut anywhere, it is not a reply. */
	for (size_t cut = 0; cut < b.len; cut++)
		ck_assert_uint_eq(wire_peek_reply(b.p, cut, &r, &rlen), 0);

	/* Serial 0 (the broker's refusal) is not packed in proto3. */
	reply.serial = 0;
	reply.error = EUSERS;
	reply.body_case = RDMAB__REPLY__BODY__NOT_SET;
	reply.message = (char *)"full";
	pack_reply(&b, &reply);
	ck_assert_uint_eq(wire_peek_reply(b.p, b.len, &r, &rlen), 0);

	/* An event is not a reply. */
	sev.reason = (char *)"SIGTERM";
	ev.body_case = RDMAB__EVENT__BODY_SHUTDOWN;
	ev.shutdown = &sev;
	ev_msg.kind_case = RDMAB__DAEMON_MESSAGE__KIND_EVENT;
	ev_msg.event = &ev;
	b.len = 0;
	tl_pb_message(&b, &ev_msg.base);
	ck_assert_uint_eq(wire_peek_reply(b.p, b.len, &r, &rlen), 0);

	/* Hand-made: a length that does not match, garbage. */
	tl_pb_uint(&h, 1, 7);
	b.len = 0;
	tl_pb_bytes(&b, 1, h.p, h.len);
	ck_assert_uint_eq(wire_peek_reply(b.p, b.len, &r, &rlen), 7);
	b.p[1]++;
	ck_assert_uint_eq(wire_peek_reply(b.p, b.len, &r, &rlen), 0);
	ck_assert_uint_eq(
		wire_peek_reply((const uint8_t *)"\xff\xff\xff", 3, &r, &rlen),
		0);
	ck_assert_uint_eq(wire_peek_reply(NULL, 0, &r, &rlen), 0);
	tl_buf_free(&b);
	tl_buf_free(&h);
}
END_TEST

/* One device limit of common/device/caps-fields.h: its name and wire type. */
struct caps_limit {
	const char *name;
	ProtobufCType type;
};

#define CAPS_NUMBER_ENTRY(name, type, fmt)                                     \
	{ #name, sizeof(type) == 8 ? PROTOBUF_C_TYPE_UINT64 :                  \
				     PROTOBUF_C_TYPE_UINT32 },
#define CAPS_FLAG_ENTRY(name) { #name, PROTOBUF_C_TYPE_BOOL },
static const struct caps_limit caps_limits[] = { CAPS_NUMBERS(
	CAPS_NUMBER_ENTRY) CAPS_FLAGS(CAPS_FLAG_ENTRY) };
#undef CAPS_FLAG_ENTRY
#undef CAPS_NUMBER_ENTRY

/* DeviceCaps' fields that are no device limit: whether the context can be
 * imported and the ports (the core's), and the DM family's figures for
 * the caller (struct family's device_caps: dm_view()). */
static const char *const caps_not_limits[] = {
	"import",      "ports",		 "dm_reason",
	"dm_reserved", "dm_domain_used", "dm_domain_limit",
	"dm_room",     "dm_device_wide", NULL,
};

/* The .proto writes the limits out; the lists must name every one of
 * them (the compile-time checks in libclient/inspect.c and the daemon's
 * inspect.c see only the lists'), each with its width, so that no file
 * that copies or prints a device's limits needs to name one: a field of
 * DeviceCaps is either in the lists or one of the others above. */
START_TEST(test_device_caps_match_list)
{
	const ProtobufCMessageDescriptor *d = &rdmab__device_caps__descriptor;
	const size_t n = sizeof(caps_limits) / sizeof(caps_limits[0]);
	unsigned int found = 0;

	for (unsigned int i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		size_t k = 0;

		while (k < n && strcmp(caps_limits[k].name, f->name) != 0)
			k++;
		if (k == n) {
			const char *const *o = caps_not_limits;

			while (*o && strcmp(*o, f->name) != 0)
				o++;
			ck_assert_msg(*o,
				      "DeviceCaps.%s is missing from "
				      "common/device/caps-fields.h",
				      f->name);
			continue;
		}
		ck_assert_msg(f->type == caps_limits[k].type,
			      "DeviceCaps.%s's width is not the list's",
			      f->name);
		found++;
	}
	ck_assert_uint_eq(found, n);
}
END_TEST

static Suite *wire_suite(void)
{
	Suite *s = suite_create("wire");
	TCase *tc = tcase_create("wire");

	tcase_add_checked_fixture(tc, pair_setup, pair_teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_loop_test(tc, test_roundtrip, 0,
			    sizeof(roundtrip_nfds) / sizeof(roundtrip_nfds[0]));
	tcase_add_test(tc, test_fds_steal);
	tcase_add_test(tc, test_recv_truncated);
	tcase_add_loop_test(tc, test_recv_too_many_fds, 0,
			    sizeof(too_many) / sizeof(too_many[0]));
	tcase_add_test(tc, test_recv_foreign_cmsg);
	tcase_add_test(tc, test_recv_empty_with_fds);
	tcase_add_test(tc, test_recv_bare);
	tcase_add_test(tc, test_send_oversize);
	tcase_add_test(tc, test_eagain);
	tcase_add_test(tc, test_eof);
	tcase_add_test(tc, test_reset_then_queued);
	tcase_add_test(tc, test_empty_message_is_not_eof);
	tcase_add_test(tc, test_arena);
	tcase_add_test(tc, test_arena_refuses_over_limit_decode);
	tcase_add_test(tc, test_peek_reply);
	tcase_add_test(tc, test_device_caps_match_list);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("wire", wire_suite());
}
