// SPDX-License-Identifier: MIT
/*
 * proto/envelope.c, the hand codec of Request and Reply, against
 * protobuf-c: the same bytes out for every envelope, and for every packet
 * in (valid, of unusual shape, mutated, cut) the same message or the same
 * failure.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/flat.h"
#include "proto/wire.h"
#include "tests/cklib.h"
#include "tests/testlib.h"

#define ROOM (WIRE_MAX_PACKET + 1024)

static uint8_t payload[WIRE_MAX_PACKET];
static uint8_t out_hand[ROOM], out_pbc[ROOM];

static const uint64_t serials[] = { 0,
				    1,
				    127,
				    128,
				    16383,
				    16384,
				    (uint64_t)1 << 62,
				    (uint64_t)1 << 63,
				    UINT64_MAX };
static const size_t ping_lens[] = { 0, 1, 48, 127, 128, 16384, 60000 };

/*
 * Bodies with a flat submessage and a packed run of uint64 (flat.c one
 * level down): no attr, an empty attr, a full one, one long enough for a
 * two-byte length; no uses, one, four with values of every length.
 */
static unsigned int obj_request_body(Rdmab__Request *req, unsigned int k)
{
	static Rdmab__ObjCreateRequest oc = RDMAB__OBJ_CREATE_REQUEST__INIT;
	static Rdmab__ObjRegisterRequest reg =
		RDMAB__OBJ_REGISTER_REQUEST__INIT;
	static Rdmab__ObjDestroyRequest od = RDMAB__OBJ_DESTROY_REQUEST__INIT;
	static Rdmab__ObjAttr attr;
	static uint64_t uses[] = { 1, 300, (uint64_t)1 << 62, UINT64_MAX };

	attr = (Rdmab__ObjAttr)RDMAB__OBJ_ATTR__INIT;
	oc = (Rdmab__ObjCreateRequest)RDMAB__OBJ_CREATE_REQUEST__INIT;
	req->body_case = RDMAB__REQUEST__BODY_OBJ_CREATE;
	req->obj_create = &oc;
	oc.context_id = 7;
	oc.kind = 3;
	switch (k) {
	case 0:
		return 1;
	case 1:
		oc.attr = &attr;
		oc.n_uses = 1;
		oc.uses = uses;
		return 1;
	case 2:
		attr.cqe = 256;
		attr.mr_addr = 0x7f0000001000;
		attr.mr_length = 1 << 20;
		attr.sq_sig_all = 1;
		oc.attr = &attr;
		oc.n_uses = 3;
		oc.uses = uses;
		oc.mode = RDMAB__OBJ_CREATE_REQUEST__MODE__TRACK;
		oc.handle = 9;
		return 1;
	case 3:
		attr.cqe = attr.comp_vector = attr.qp_type = UINT32_MAX;
		attr.max_send_wr = attr.max_recv_wr = UINT32_MAX;
		attr.max_send_sge = attr.max_recv_sge = UINT32_MAX;
		attr.max_inline_data = attr.max_wr = UINT32_MAX;
		attr.max_sge = attr.srq_limit = UINT32_MAX;
		attr.mr_addr = attr.mr_length = UINT64_MAX;
		attr.mr_access = attr.sq_sig_all = UINT32_MAX;
		oc.attr = &attr;
		oc.n_uses = 4;
		oc.uses = uses;
		oc.context_id = UINT64_MAX;
		return 1;
	case 4:
		/* A count without elements packs nothing. */
		oc.n_uses = 0;
		oc.uses = uses;
		oc.mode = (Rdmab__ObjCreateRequest__Mode)-1;
		return 1;
	case 5:
		reg.object_id = 12;
		reg.handle = 4;
		req->body_case = RDMAB__REQUEST__BODY_OBJ_REGISTER;
		req->obj_register = &reg;
		return 1;
	case 6:
		od.object_id = 12;
		req->body_case = RDMAB__REQUEST__BODY_OBJ_DESTROY;
		req->obj_destroy = &od;
		return 1;
	default:
		req->body_case = RDMAB__REQUEST__BODY__NOT_SET;
		return 0;
	}
}

/* Every body a Request can carry; @k picks one (and the payload size). */
static unsigned int request_body(Rdmab__Request *req, unsigned int k)
{
	static Rdmab__HelloRequest hello = RDMAB__HELLO_REQUEST__INIT;
	static Rdmab__StatusRequest status = RDMAB__STATUS_REQUEST__INIT;
	static Rdmab__OpenContextRequest oc = RDMAB__OPEN_CONTEXT_REQUEST__INIT;
	static Rdmab__CloseContextRequest cc =
		RDMAB__CLOSE_CONTEXT_REQUEST__INIT;
	static Rdmab__ListRequest list = RDMAB__LIST_REQUEST__INIT;
	const unsigned int n_pings = sizeof(ping_lens) / sizeof(ping_lens[0]);

	hello.library_version = (char *)"0.1.0";
	hello.pid = 4242;
	hello.fork_state = RDMAB__FORK_STATE__FORK_UNNEEDED;
	hello.domain = (char *)"lab";
	oc.device = (char *)"soft0";
	cc.context_id = 300;
	list.offset = 17;
	req->body_case = RDMAB__REQUEST__BODY__NOT_SET;
	if (k < n_pings) {
		req->body_case = RDMAB__REQUEST__BODY_PING;
		req->ping.len = ping_lens[k];
		/* An empty ping with and without a pointer. */
		req->ping.data = ping_lens[k] || k % 2 ? payload : NULL;
		return 1;
	}
	switch (k - n_pings) {
	case 0:
		req->body_case = RDMAB__REQUEST__BODY_HELLO;
		req->hello = &hello;
		return 1;
	case 1:
		req->body_case = RDMAB__REQUEST__BODY_STATUS;
		req->status = &status;
		return 1;
	case 2:
		req->body_case = RDMAB__REQUEST__BODY_OPEN_CONTEXT;
		req->open_context = &oc;
		return 1;
	case 3:
		req->body_case = RDMAB__REQUEST__BODY_CLOSE_CONTEXT;
		req->close_context = &cc;
		return 1;
	case 4:
		req->body_case = RDMAB__REQUEST__BODY_LIST_CLIENTS;
		req->list_clients = &list;
		return 1;
	case 5:
		/* A submessage case without its message: nothing packed. */
		req->body_case = RDMAB__REQUEST__BODY_LIST_DOMAINS;
		req->list_domains = NULL;
		return 1;
	case 6:
		/* A case that names no member, or a member outside the
		 * oneof: nothing packed either. */
		req->body_case = (Rdmab__Request__BodyCase)99;
		return 1;
	case 7:
		req->body_case = (Rdmab__Request__BodyCase)2;
		return 1;
	case 8:
		return 1;
	case 9:
		/* Flat bodies (flat.c) at their edges: a bool, a negative
		 * enum (proto3 enums are open), 32-bit maxima, empty
		 * strings and no strings. */
		hello.private_domain = 1;
		hello.fork_state = (Rdmab__ForkState)-1;
		hello.pid = UINT32_MAX;
		hello.domain = (char *)"";
		hello.library_version = NULL;
		req->body_case = RDMAB__REQUEST__BODY_HELLO;
		req->hello = &hello;
		return 1;
	case 10:
		hello.fork_state = (Rdmab__ForkState)INT32_MIN;
		hello.pid = 1 << 28;
		req->body_case = RDMAB__REQUEST__BODY_HELLO;
		req->hello = &hello;
		return 1;
	case 11:
		cc.context_id = UINT64_MAX;
		req->body_case = RDMAB__REQUEST__BODY_CLOSE_CONTEXT;
		req->close_context = &cc;
		return 1;
	case 12:
		oc.device = (char *)"";
		req->body_case = RDMAB__REQUEST__BODY_OPEN_CONTEXT;
		req->open_context = &oc;
		return 1;
	default:
		hello.private_domain = 0;
		return obj_request_body(req, k - n_pings - 13);
	}
}

/* The same for a Reply. */
static char long_device[300];

static unsigned int reply_body(Rdmab__Reply *r, unsigned int k)
{
	static Rdmab__DeviceCaps caps = RDMAB__DEVICE_CAPS__INIT;
	static Rdmab__DeviceInfo dev = RDMAB__DEVICE_INFO__INIT;
	static Rdmab__DeviceInfo *devs[] = { &dev, &dev };
	static Rdmab__HelloReply hello = RDMAB__HELLO_REPLY__INIT;
	static Rdmab__OpenContextReply oc = RDMAB__OPEN_CONTEXT_REPLY__INIT;
	static Rdmab__CloseContextReply cc = RDMAB__CLOSE_CONTEXT_REPLY__INIT;
	static Rdmab__ListClientsReply lc = RDMAB__LIST_CLIENTS_REPLY__INIT;
	static Rdmab__StatusReply st = RDMAB__STATUS_REPLY__INIT;
	static Rdmab__ObjCreateReply ocr = RDMAB__OBJ_CREATE_REPLY__INIT;
	static Rdmab__ObjAttr attr = RDMAB__OBJ_ATTR__INIT;
	const unsigned int n_pings = sizeof(ping_lens) / sizeof(ping_lens[0]);

	caps.max_dm_size = 1 << 20;
	caps.ports = 1;
	dev.name = (char *)"soft0";
	dev.kind = (char *)"soft";
	dev.caps = &caps;
	dev.transport = (char *)"software";
	hello.protocol_version = 1;
	hello.daemon_version = (char *)"0.1.0";
	hello.client_id = 77;
	hello.domain = (char *)"uid-0";
	hello.n_devices = 2;
	hello.devices = devs;
	oc.context_id = 5;
	oc.device = (char *)"soft0";
	oc.pd_handle = 3;
	lc.total = 9;
	r->body_case = RDMAB__REPLY__BODY__NOT_SET;
	if (k < n_pings) {
		r->body_case = RDMAB__REPLY__BODY_PING;
		r->ping.len = ping_lens[k];
		r->ping.data = ping_lens[k] || k % 2 ? payload : NULL;
		return 1;
	}
	switch (k - n_pings) {
	case 0:
		r->body_case = RDMAB__REPLY__BODY_HELLO;
		r->hello = &hello;
		return 1;
	case 1:
		r->body_case = RDMAB__REPLY__BODY_OPEN_CONTEXT;
		r->open_context = &oc;
		return 1;
	case 2:
		r->body_case = RDMAB__REPLY__BODY_CLOSE_CONTEXT;
		r->close_context = &cc;
		return 1;
	case 3:
		r->body_case = RDMAB__REPLY__BODY_LIST_CLIENTS;
		r->list_clients = &lc;
		return 1;
	case 4:
		r->body_case = RDMAB__REPLY__BODY_STATUS;
		r->status = NULL;
		return 1;
	case 5:
		r->body_case = (Rdmab__Reply__BodyCase)3;
		return 1;
	case 6:
		return 1;
	case 7:
		/* Flat, every field set, then every field zero. */
		st.daemon_version = (char *)"0.1.0";
		st.uptime_usec = (uint64_t)1 << 40;
		st.device_kind = (char *)"soft";
		st.clients = 3;
		st.requests_served = 123456789;
		st.pid = 4242;
		st.max_clients = 1024;
		st.protocol_version = 1;
		r->body_case = RDMAB__REPLY__BODY_STATUS;
		r->status = &st;
		return 1;
	case 8:
		st = (Rdmab__StatusReply)RDMAB__STATUS_REPLY__INIT;
		r->body_case = RDMAB__REPLY__BODY_STATUS;
		r->status = &st;
		return 1;
	case 9:
		oc.context_id = UINT64_MAX;
		oc.pd_handle = UINT32_MAX;
		oc.fd_index = 0;
		oc.device = NULL;
		r->body_case = RDMAB__REPLY__BODY_OPEN_CONTEXT;
		r->open_context = &oc;
		return 1;
	case 10:
		/* A submessage one level down: set, empty, absent. */
		attr.cqe = 4095;
		attr.max_send_wr = 1 << 15;
		attr.mr_length = UINT64_MAX;
		ocr.object_id = 1ULL << 40;
		ocr.handle = 3;
		ocr.qp_num = 0xffffff;
		ocr.lkey = ocr.rkey = UINT32_MAX;
		ocr.attr = &attr;
		r->body_case = RDMAB__REPLY__BODY_OBJ_CREATE;
		r->obj_create = &ocr;
		return 1;
	case 11:
		attr = (Rdmab__ObjAttr)RDMAB__OBJ_ATTR__INIT;
		r->body_case = RDMAB__REPLY__BODY_OBJ_CREATE;
		r->obj_create = &ocr;
		return 1;
	case 12:
		ocr.attr = NULL;
		r->body_case = RDMAB__REPLY__BODY_OBJ_CREATE;
		r->obj_create = &ocr;
		return 1;
	case 13:
		/* A flat body of 300 bytes: its length and the wrapper's
		 * take two bytes (the one-walk packer moves it up). */
		memset(long_device, 'd', sizeof(long_device) - 1);
		oc.device = long_device;
		r->body_case = RDMAB__REPLY__BODY_OPEN_CONTEXT;
		r->open_context = &oc;
		return 1;
	default:
		return 0;
	}
}

static size_t pbc_pack(const ProtobufCMessage *m, uint8_t *buf)
{
	size_t len = protobuf_c_message_get_packed_size(m);

	ck_assert_uint_le(len, ROOM);
	ck_assert_uint_eq(protobuf_c_message_pack(m, buf), len);
	return len;
}

START_TEST(test_pack_request)
{
	static const uint32_t versions[] = { 0, 1, 300, UINT32_MAX };
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	unsigned int n = 0;

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7);
	for (unsigned int k = 0; request_body(&req, k); k++) {
		for (size_t v = 0; v < 4; v++) {
			for (size_t s = 0;
			     s < sizeof(serials) / sizeof(serials[0]); s++) {
				size_t len;
				int got;

				req.version = versions[v];
				req.serial = serials[s];
				len = pbc_pack(&req.base, out_pbc);
				got = wire_pack_request(&req, out_hand, ROOM);
				ck_assert_int_eq(got, (int)len);
				ck_assert_mem_eq(out_hand, out_pbc, len);
				/* One byte short is too small. */
				if (len)
					ck_assert_int_eq(wire_pack_request(
								 &req, out_hand,
								 len - 1),
							 -EMSGSIZE);
				n++;
			}
		}
	}
	ck_assert_uint_gt(n, 400);
}
END_TEST

/* A flat body longer than a one-byte length, in a room of its exact size
 * and one byte short, packs as protobuf-c packs it (the one-walk packer
 * moves it up for its length). */
START_TEST(test_pack_request_long_flat)
{
	static const size_t lens[] = { 120, 127, 128, 300, 16384, 65000 };
	static char domain[65001];
	Rdmab__HelloRequest hello = RDMAB__HELLO_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	req.version = 1;
	req.serial = 1ULL << 40;
	req.body_case = RDMAB__REQUEST__BODY_HELLO;
	req.hello = &hello;
	hello.domain = domain;
	hello.pid = 4242;
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		size_t len;

		memset(domain, 'd', lens[i]);
		domain[lens[i]] = '\0';
		len = pbc_pack(&req.base, out_pbc);
		if (len > WIRE_MAX_PACKET) {
			ck_assert_int_eq(
				wire_pack_request(&req, out_hand, ROOM),
				-EMSGSIZE);
			continue;
		}
		ck_assert_int_eq(wire_pack_request(&req, out_hand, len),
				 (int)len);
		ck_assert_mem_eq(out_hand, out_pbc, len);
		ck_assert_int_eq(wire_pack_request(&req, out_hand, len - 1),
				 -EMSGSIZE);
		ck_assert_int_eq(wire_pack_request(&req, out_hand, ROOM),
				 (int)len);
		ck_assert_mem_eq(out_hand, out_pbc, len);
	}
}
END_TEST

START_TEST(test_pack_reply)
{
	static const int32_t errors[] = { 0,	     5,	 1 << 27,
					  INT32_MAX, -1, INT32_MIN };
	static const char *const messages[] = { NULL, "", "no such device",
						NULL };
	char longmsg[256];
	Rdmab__DaemonMessage dm = RDMAB__DAEMON_MESSAGE__INIT;
	Rdmab__Reply r = RDMAB__REPLY__INIT;
	unsigned int n = 0;

	memset(longmsg, 'm', sizeof(longmsg) - 1);
	longmsg[sizeof(longmsg) - 1] = '\0';
	dm.kind_case = RDMAB__DAEMON_MESSAGE__KIND_REPLY;
	dm.reply = &r;
	for (unsigned int k = 0; reply_body(&r, k); k++) {
		for (size_t e = 0; e < sizeof(errors) / sizeof(errors[0]);
		     e++) {
			for (size_t m = 0; m < 4; m++) {
				for (size_t s = 0; s < 4; s++) {
					size_t len;

					r.error = errors[e];
					r.message = (char *)messages[m];
					if (m == 3)
						r.message = longmsg;
					r.serial = serials[s * 2];
					len = pbc_pack(&dm.base, out_pbc);
					ck_assert_int_eq(
						wire_pack_reply_message(
							&r, 1, out_hand, ROOM),
						(int)len);
					ck_assert_mem_eq(out_hand, out_pbc,
							 len);
					ck_assert_int_eq(
						wire_pack_reply_message(
							&r, 1, out_hand,
							len - 1),
						-EMSGSIZE);
					n++;
				}
			}
		}
	}
	ck_assert_uint_gt(n, 1000);
}
END_TEST

/* A reply over the packet limit is refused before anything is written. */
/* Every scalar of ObjAttr alone, at values of every varint length, and a
 * negative enum (ten bytes, sign-extended), in a request and in a reply:
 * the bytes protobuf-c packs (flat.c's plans write the scalars' tags). */
START_TEST(test_pack_flat_each_field)
{
	static const uint64_t values[] = {
		1, 127, 128, 16384, UINT32_MAX, (uint64_t)1 << 40, UINT64_MAX
	};
	const ProtobufCMessageDescriptor *d = &rdmab__obj_attr__descriptor;
	Rdmab__ObjCreateRequest oc = RDMAB__OBJ_CREATE_REQUEST__INIT;
	Rdmab__ObjCreateReply ocr = RDMAB__OBJ_CREATE_REPLY__INIT;
	Rdmab__DaemonMessage dm = RDMAB__DAEMON_MESSAGE__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__Reply r = RDMAB__REPLY__INIT;
	Rdmab__ObjAttr attr;
	unsigned int n = 0;

	req.serial = 1ULL << 20;
	req.body_case = RDMAB__REQUEST__BODY_OBJ_CREATE;
	req.obj_create = &oc;
	oc.attr = &attr;
	r.serial = 1ULL << 20;
	r.body_case = RDMAB__REPLY__BODY_OBJ_CREATE;
	r.obj_create = &ocr;
	ocr.attr = &attr;
	dm.kind_case = RDMAB__DAEMON_MESSAGE__KIND_REPLY;
	dm.reply = &r;
	for (unsigned int i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];

		for (size_t v = 0; v < sizeof(values) / sizeof(values[0]);
		     v++) {
			char *member;
			size_t len;

			attr = (Rdmab__ObjAttr)RDMAB__OBJ_ATTR__INIT;
			member = (char *)&attr + f->offset;
			if (f->type == PROTOBUF_C_TYPE_UINT64)
				*(uint64_t *)member = values[v];
			else if (f->type == PROTOBUF_C_TYPE_UINT32)
				*(uint32_t *)member = (uint32_t)values[v];
			else
				continue;
			/* A negative enum beside it. */
			oc.mode =
				v % 2 ? (Rdmab__ObjCreateRequest__Mode)-1 :
					RDMAB__OBJ_CREATE_REQUEST__MODE__CREATE;
			len = pbc_pack(&req.base, out_pbc);
			ck_assert_int_eq(
				wire_pack_request(&req, out_hand, ROOM),
				(int)len);
			ck_assert_mem_eq(out_hand, out_pbc, len);
			ck_assert_int_eq(
				wire_pack_request(&req, out_hand, len - 1),
				-EMSGSIZE);
			len = pbc_pack(&dm.base, out_pbc);
			ck_assert_int_eq(
				wire_pack_reply_message(&r, 1, out_hand, ROOM),
				(int)len);
			ck_assert_mem_eq(out_hand, out_pbc, len);
			ck_assert_int_eq(wire_pack_reply_message(
						 &r, 1, out_hand, len - 1),
					 -EMSGSIZE);
			n++;
		}
	}
	ck_assert_uint_ge(n, 16 * 7);
}
END_TEST

START_TEST(test_pack_reply_oversize)
{
	Rdmab__Reply r = RDMAB__REPLY__INIT;

	r.serial = 9;
	r.body_case = RDMAB__REPLY__BODY_PING;
	r.ping.data = payload;
	r.ping.len = WIRE_MAX_PACKET;
	ck_assert_int_eq(wire_pack_reply_message(&r, 1, out_hand, ROOM),
			 -EMSGSIZE);
}
END_TEST

/* Decode @len bytes of @buf both ways and check that they agree: both
 * fail, or both give messages that pack to the same bytes. */
static void same_request(const uint8_t *buf, size_t len, size_t limit)
{
	struct wire_arena a, b;
	Rdmab__Request *hand, *pbc;

	wire_arena_init(&a, NULL, 0, limit);
	wire_arena_init(&b, NULL, 0, limit);
	hand = wire_unpack_request(&a, len, buf);
	pbc = rdmab__request__unpack(&b.allocator, len, buf);
	/* The one difference: a ping takes no memory, it stays in the
	 * packet; protobuf-c copies it, which can pass a small limit. Then
	 * protobuf-c decodes it with room for the copy. */
	if (hand && !pbc && hand->body_case == RDMAB__REQUEST__BODY_PING) {
		ck_assert_ptr_eq(hand->ping.data, buf + len - hand->ping.len);
		wire_arena_reset(&b);
		wire_arena_init(&b, NULL, 0, limit + hand->ping.len + 16);
		ck_assert_ptr_nonnull(
			rdmab__request__unpack(&b.allocator, len, buf));
		goto out;
	}
	ck_assert_msg(!hand == !pbc, "%zu bytes: %s decodes, %s does not", len,
		      hand ? "the hand path" : "protobuf-c",
		      hand ? "protobuf-c" : "the hand path");
	if (hand) {
		size_t n = pbc_pack(&pbc->base, out_pbc);

		ck_assert_uint_eq(hand->version, pbc->version);
		ck_assert_uint_eq(hand->serial, pbc->serial);
		ck_assert_uint_eq(hand->body_case, pbc->body_case);
		ck_assert_uint_eq(hand->base.n_unknown_fields,
				  pbc->base.n_unknown_fields);
		ck_assert_uint_eq(pbc_pack(&hand->base, out_hand), n);
		ck_assert_mem_eq(out_hand, out_pbc, n);
	}
out:
	wire_arena_reset(&a);
	wire_arena_reset(&b);
}

static void same_reply(const uint8_t *buf, size_t len, size_t limit)
{
	struct wire_arena a, b;
	Rdmab__Reply *hand, *pbc;

	wire_arena_init(&a, NULL, 0, limit);
	wire_arena_init(&b, NULL, 0, limit);
	hand = wire_unpack_reply(&a, len, buf);
	pbc = rdmab__reply__unpack(&b.allocator, len, buf);
	ck_assert_msg(!hand == !pbc, "%zu bytes: %s decodes, %s does not", len,
		      hand ? "the hand path" : "protobuf-c",
		      hand ? "protobuf-c" : "the hand path");
	if (hand) {
		size_t n = pbc_pack(&pbc->base, out_pbc);

		ck_assert_uint_eq(hand->serial, pbc->serial);
		ck_assert_int_eq(hand->error, pbc->error);
		ck_assert_str_eq(hand->message, pbc->message);
		ck_assert_uint_eq(hand->body_case, pbc->body_case);
		ck_assert_uint_eq(pbc_pack(&hand->base, out_hand), n);
		ck_assert_mem_eq(out_hand, out_pbc, n);
	}
	wire_arena_reset(&a);
	wire_arena_reset(&b);
}

/* @b with one random change: a byte flipped, cut, a byte inserted or a
 * field appended. */
static void mutate(struct tl_rng *rng, struct tl_buf *b)
{
	uint8_t byte = (uint8_t)tl_rng_next(rng);
	size_t at = b->len ? tl_rng_below(rng, (uint32_t)b->len) : 0;

	switch (tl_rng_below(rng, 4)) {
	case 0:
		if (b->len)
			b->p[at] ^= (uint8_t)(1u << tl_rng_below(rng, 8));
		break;
	case 1:
		b->len = at;
		break;
	case 2:
		tl_buf_put(b, &byte, 1);
		memmove(b->p + at + 1, b->p + at, b->len - at - 1);
		b->p[at] = byte;
		break;
	default:
		tl_pb_uint(b, tl_rng_below(rng, 20),
			   tl_rng_next(rng) >> tl_rng_below(rng, 64));
		break;
	}
}

/* Packets every way protobuf-c accepts or refuses them, hand-built: the
 * envelope's fields out of order, twice, unknown, with long or
 * non-minimal varints, of the wrong wire type, field 0, the body not last,
 * two bodies. @serial_field is the serial's number (2 in a Request, 1 in
 * a Reply). */
static void odd_shapes(void (*same)(const uint8_t *, size_t, size_t),
		       uint32_t serial_field)
{
	struct tl_buf b = { 0 };
	static const uint8_t nonminimal[] = { 0x90, 0x00, 0x85, 0x80, 0x00 };
	static const uint8_t long_u64[] = { 0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
					    0xff, 0xff, 0xff, 0xff, 0x01 };
	static const uint8_t long_u32[] = {
		0x10, 0xff, 0xff, 0xff, 0xff, 0x0f
	};

	/* Empty. */
	same(b.p, 0, WIRE_MAX_DECODED);
	/* Serial before version/error, the body before the serial. */
	tl_pb_uint(&b, serial_field, 7);
	tl_pb_uint(&b, serial_field == 2 ? 1 : 2, 1);
	same(b.p, b.len, WIRE_MAX_DECODED);
	b.len = 0;
	tl_pb_bytes(&b, 11, "abc", 3);
	tl_pb_uint(&b, serial_field, 7);
	same(b.p, b.len, WIRE_MAX_DECODED);
	/* Twice the serial, twice a body, of different kinds. */
	b.len = 0;
	tl_pb_uint(&b, serial_field, 7);
	tl_pb_uint(&b, serial_field, 8);
	same(b.p, b.len, WIRE_MAX_DECODED);
	b.len = 0;
	tl_pb_bytes(&b, 11, "abc", 3);
	tl_pb_bytes(&b, 13, "", 0);
	same(b.p, b.len, WIRE_MAX_DECODED);
	b.len = 0;
	tl_pb_bytes(&b, 13, "", 0);
	tl_pb_bytes(&b, 11, "abc", 3);
	same(b.p, b.len, WIRE_MAX_DECODED);
	/* Unknown fields before, after, in place of the body. */
	b.len = 0;
	tl_pb_uint(&b, serial_field, 7);
	tl_pb_uint(&b, 5, 1);
	tl_pb_bytes(&b, 11, "abc", 3);
	same(b.p, b.len, WIRE_MAX_DECODED);
	tl_pb_uint(&b, 2000, 1);
	same(b.p, b.len, WIRE_MAX_DECODED);
	b.len = 0;
	tl_pb_uint(&b, serial_field, 7);
	tl_pb_bytes(&b, 99, "abc", 3);
	same(b.p, b.len, WIRE_MAX_DECODED);
	/* Field 0, a group, a fixed64 where a varint belongs, a varint
	 * where the body belongs. */
	b.len = 0;
	tl_pb_uint(&b, 0, 1);
	same(b.p, b.len, WIRE_MAX_DECODED);
	b.len = 0;
	tl_pb_tag(&b, 3, 3);
	tl_pb_tag(&b, 3, 4);
	same(b.p, b.len, WIRE_MAX_DECODED);
	b.len = 0;
	tl_pb_tag(&b, serial_field, 1);
	tl_buf_put(&b, "12345678", 8);
	same(b.p, b.len, WIRE_MAX_DECODED);
	b.len = 0;
	tl_pb_uint(&b, 11, 5);
	same(b.p, b.len, WIRE_MAX_DECODED);
	/* A body submessage that does not decode, one that does. */
	b.len = 0;
	tl_pb_uint(&b, serial_field, 7);
	tl_pb_bytes(&b, 13, "\xff", 1);
	same(b.p, b.len, WIRE_MAX_DECODED);
	b.len = 0;
	tl_pb_uint(&b, serial_field, 7);
	tl_pb_bytes(&b, 13, "\x08\x05\x12\x01x", 5);
	same(b.p, b.len, WIRE_MAX_DECODED);
	/* Flat bodies of every shape: fields out of order, twice, unknown,
	 * of the wrong wire type, a bool of 2, a 5-byte uint32, a negative
	 * enum, a string past the end, an empty string and empty bytes. */
	{
		static const struct {
			const char *sub;
			size_t len;
		} subs[] = {
			{ "\x10\x05\x0a\x01x", 5 },
			{ "\x10\x05\x10\x06", 4 },
			{ "\x10\x05\x30\x01", 4 },
			{ "\x0a\x00\x10\x05\x18\x02\x22\x00\x28\x02", 10 },
			{ "\x15\x01\x02\x03\x04", 5 },
			{ "\x10\xff\xff\xff\xff\x0f", 6 },
			{ "\x10\xff\xff\xff\xff\x1f", 6 },
			{ "\x18\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11 },
			{ "\x28\x80\x00", 3 },
			{ "\x0a\x05xy", 4 },
			{ "\x0a\x02", 2 },
			{ "\x08\x05", 2 },
			{ "\x0a\x01x\x0a\x01y", 6 },
		};

		for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
			/* As a Request's hello (field 10) and a Reply's
			 * status (12); both are flat. */
			for (uint32_t body = 10; body <= 12; body += 2) {
				b.len = 0;
				tl_pb_uint(&b, serial_field, 7);
				tl_pb_bytes(&b, body, subs[i].sub, subs[i].len);
				same(b.p, b.len, WIRE_MAX_DECODED);
			}
		}
	}
	/* Bodies one level down (ObjCreateRequest 18 in a Request,
	 * ObjCreateReply 18 in a Reply; field 4 is the packed uses of the
	 * one, a uint32 of the other, 5 and 4 the attr): an unpacked run,
	 * an empty one, two, one cut inside a varint, a 10-byte element,
	 * the attr twice, with an unknown field, with a field out of order,
	 * of the wrong wire type, cut, empty, before the uses. */
	{
		static const struct {
			const char *sub;
			size_t len;
		} subs[] = {
			{ "\x08\x07\x20\x01\x20\x02", 6 },
			{ "\x08\x07\x22\x00", 4 },
			{ "\x22\x02\x01\x02\x22\x01\x03", 7 },
			{ "\x22\x02\x01\x82", 4 },
			{ "\x22\x03\x01\x82\x01\x2a\x00", 7 },
			{ "\x22\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff"
			  "\x01",
			  12 },
			{ "\x22\x09\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 11 },
			{ "\x2a\x02\x08\x01\x2a\x02\x10\x01", 8 },
			{ "\x2a\x02\x08\x01\x22\x02\x10\x01", 8 },
			{ "\x22\x02\x10\x01\x2a\x02\x08\x01", 8 },
			{ "\x2a\x02\xf8\x07\x01", 5 },
			{ "\x2a\x04\x10\x01\x08\x01", 6 },
			{ "\x2a\x02\x0a\x00", 4 },
			{ "\x2a\x03\x08\x01", 4 },
			{ "\x2a\x00\x30\x09", 4 },
			{ "\x28\x01", 2 },
			{ "\x22\x01\x05\x30\x09", 5 },
			{ "\x2a\x02\x60\x05\x32\x00", 6 },
			{ "\x22\x01\x05\x22\x00", 5 },
			{ "\x0a\x01\x05", 3 },
		};

		for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
			b.len = 0;
			tl_pb_uint(&b, serial_field, 7);
			tl_pb_bytes(&b, 18, subs[i].sub, subs[i].len);
			same(b.p, b.len, WIRE_MAX_DECODED);
			same(b.p, b.len, 64);
		}
	}
	/* Non-minimal and long varints, a length past the end. */
	same(nonminimal, sizeof(nonminimal), WIRE_MAX_DECODED);
	same(long_u64, sizeof(long_u64), WIRE_MAX_DECODED);
	same(long_u32, sizeof(long_u32), WIRE_MAX_DECODED);
	b.len = 0;
	tl_pb_tag(&b, 11, 2);
	tl_pb_varint(&b, 100);
	tl_buf_put(&b, "abc", 3);
	same(b.p, b.len, WIRE_MAX_DECODED);
	/* The error string of a Reply (field 3), empty and not, and a
	 * negative error (ten bytes). */
	b.len = 0;
	tl_pb_bytes(&b, 3, "", 0);
	same(b.p, b.len, WIRE_MAX_DECODED);
	tl_pb_bytes(&b, 11, "", 0);
	same(b.p, b.len, WIRE_MAX_DECODED);
	b.len = 0;
	tl_pb_uint(&b, 2, (uint64_t)(int64_t)-5);
	tl_pb_bytes(&b, 3, "bad", 3);
	same(b.p, b.len, WIRE_MAX_DECODED);
	/* Big enough to need the heap, in an arena too small for it. */
	b.len = 0;
	tl_pb_uint(&b, serial_field, 7);
	tl_pb_bytes(&b, 11, payload, 5000);
	same(b.p, b.len, 4096);
	same(b.p, b.len, WIRE_MAX_DECODED);
	tl_buf_free(&b);
}

START_TEST(test_unpack_request)
{
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct tl_buf b = { 0 };
	struct tl_rng rng;

	tl_rng_seed(&rng, 7);
	odd_shapes(same_request, 2);
	for (unsigned int k = 0; request_body(&req, k); k++) {
		for (size_t s = 0; s < sizeof(serials) / sizeof(serials[0]);
		     s++) {
			req.version = (uint32_t)s;
			req.serial = serials[s];
			b.len = 0;
			tl_pb_message(&b, &req.base);
			same_request(b.p, b.len, WIRE_MAX_DECODED);
			for (unsigned int i = 0; i < 40; i++) {
				mutate(&rng, &b);
				same_request(b.p, b.len, WIRE_MAX_DECODED);
			}
		}
	}
	tl_buf_free(&b);
}
END_TEST

START_TEST(test_unpack_reply)
{
	Rdmab__Reply r = RDMAB__REPLY__INIT;
	struct tl_buf b = { 0 };
	struct tl_rng rng;

	tl_rng_seed(&rng, 11);
	odd_shapes(same_reply, 1);
	for (unsigned int k = 0; reply_body(&r, k); k++) {
		for (size_t s = 0; s < sizeof(serials) / sizeof(serials[0]);
		     s++) {
			r.serial = serials[s];
			r.error = s % 3 ? 0 : (int32_t)s - 4;
			r.message = s % 2 ? (char *)"a sentence" : NULL;
			b.len = 0;
			tl_pb_message(&b, &r.base);
			same_reply(b.p, b.len, WIRE_MAX_DECODED);
			for (unsigned int i = 0; i < 40; i++) {
				mutate(&rng, &b);
				same_reply(b.p, b.len, WIRE_MAX_DECODED);
			}
		}
	}
	tl_buf_free(&b);
}
END_TEST

/* Many random packets: a valid envelope of each kind with up to four
 * changes, decoded under a limit that is now and then tiny. */
START_TEST(test_unpack_random)
{
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__Reply r = RDMAB__REPLY__INIT;
	struct tl_buf seeds[64] = { 0 }, b = { 0 };
	unsigned int n = 0;
	struct tl_rng rng;

	tl_rng_seed(&rng, 13);
	for (unsigned int k = 0; n < 64 && request_body(&req, k); k++) {
		if (req.body_case == RDMAB__REQUEST__BODY_PING &&
		    req.ping.len > 256)
			continue;
		req.version = 1;
		req.serial = 16385;
		tl_pb_message(&seeds[n++], &req.base);
	}
	for (unsigned int k = 0; n < 64 && reply_body(&r, k); k++) {
		if (r.body_case == RDMAB__REPLY__BODY_PING && r.ping.len > 256)
			continue;
		r.serial = 16385;
		r.error = k % 5 ? 0 : 22;
		r.message = k % 5 ? NULL : (char *)"a sentence";
		tl_pb_message(&seeds[n++], &r.base);
	}
	for (unsigned int i = 0; i < 100000; i++) {
		const struct tl_buf *seed = &seeds[tl_rng_below(&rng, n)];
		size_t limit = tl_rng_below(&rng, 8) ? WIRE_MAX_DECODED :
						       tl_rng_below(&rng, 512);

		b.len = 0;
		tl_buf_put(&b, seed->p, seed->len);
		for (unsigned int m = 1 + tl_rng_below(&rng, 4); m; m--)
			mutate(&rng, &b);
		same_request(b.p, b.len, limit);
		same_reply(b.p, b.len, limit);
	}
	for (unsigned int i = 0; i < n; i++)
		tl_buf_free(&seeds[i]);
	tl_buf_free(&b);
}
END_TEST

/* Set every scalar field of @m to @v (truncated to its type). */
static void fill_scalars(ProtobufCMessage *m, uint64_t v)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;

	for (unsigned int i = 0; i < d->n_fields; i++) {
		char *member = (char *)m + d->fields[i].offset;

		switch (d->fields[i].type) {
		case PROTOBUF_C_TYPE_UINT64:
			*(uint64_t *)member = v;
			break;
		case PROTOBUF_C_TYPE_UINT32:
		case PROTOBUF_C_TYPE_INT32:
		case PROTOBUF_C_TYPE_ENUM:
			*(uint32_t *)member = (uint32_t)v;
			break;
		case PROTOBUF_C_TYPE_BOOL:
			*(protobuf_c_boolean *)member = v != 0;
			break;
		default:
			break;
		}
	}
}

/*
 * flat.c on a message whose submessage packs to more than 127 bytes (a
 * two-byte length, the submessage moved up), which no body has yet:
 * DeviceInfo and its DeviceCaps, packed and decoded as protobuf-c does.
 */
START_TEST(test_flat_long_submessage)
{
	static const uint64_t values[] = { 0, 1, 200, UINT32_MAX, UINT64_MAX };
	Rdmab__DeviceCaps caps = RDMAB__DEVICE_CAPS__INIT;
	Rdmab__DeviceInfo dev = RDMAB__DEVICE_INFO__INIT;
	struct wire_arena a;

	ck_assert(wire_flat(&rdmab__device_info__descriptor));
	dev.name = (char *)"soft0";
	dev.caps = &caps;
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		ProtobufCMessage *back;
		size_t len, n;

		fill_scalars(&caps.base, values[i]);
		len = pbc_pack(&dev.base, out_pbc);
		ck_assert_uint_eq(wire_flat_size(&dev.base), len);
		ck_assert_ptr_eq(wire_flat_pack(&dev.base, out_hand),
				 out_hand + len);
		ck_assert_mem_eq(out_hand, out_pbc, len);
		if (values[i] == UINT64_MAX)
			ck_assert_uint_gt(
				rdmab__device_caps__get_packed_size(&caps),
				127);
		wire_arena_init(&a, NULL, 0, WIRE_MAX_DECODED);
		back = wire_flat_unpack(&rdmab__device_info__descriptor,
					&a.allocator, len, out_pbc);
		/* 32-bit values from 2^28 on are protobuf-c's to read. */
		if (values[i] >= 1u << 28) {
			ck_assert_ptr_null(back);
		} else {
			ck_assert_ptr_nonnull(back);
			n = pbc_pack(back, out_hand);
			ck_assert_uint_eq(n, len);
			ck_assert_mem_eq(out_hand, out_pbc, len);
		}
		wire_arena_reset(&a);
	}
}
END_TEST

/* The daemon echoes a ping from the packet itself: no copy. */
START_TEST(test_request_ping_borrows)
{
	Rdmab__Request req = RDMAB__REQUEST__INIT, *back;
	struct tl_buf b = { 0 };
	struct wire_arena a;

	req.version = 1;
	req.serial = 5;
	req.body_case = RDMAB__REQUEST__BODY_PING;
	req.ping.data = (uint8_t *)"payload";
	req.ping.len = 7;
	tl_pb_message(&b, &req.base);
	wire_arena_init(&a, NULL, 0, WIRE_MAX_DECODED);
	back = wire_unpack_request(&a, b.len, b.p);
	ck_assert_ptr_nonnull(back);
	ck_assert_ptr_eq(back->ping.data, b.p + b.len - 7);
	ck_assert_mem_eq(back->ping.data, "payload", 7);
	wire_arena_reset(&a);
	tl_buf_free(&b);
}
END_TEST

static Suite *envelope_suite(void)
{
	Suite *s = suite_create("envelope");
	TCase *tc = tcase_create("envelope");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_pack_request);
	tcase_add_test(tc, test_pack_request_long_flat);
	tcase_add_test(tc, test_pack_reply);
	tcase_add_test(tc, test_pack_reply_oversize);
	tcase_add_test(tc, test_pack_flat_each_field);
	tcase_add_test(tc, test_unpack_request);
	tcase_add_test(tc, test_unpack_reply);
	tcase_add_test(tc, test_unpack_random);
	tcase_add_test(tc, test_request_ping_borrows);
	tcase_add_test(tc, test_flat_long_submessage);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("envelope", envelope_suite());
}
