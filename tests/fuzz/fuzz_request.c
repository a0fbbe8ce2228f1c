// SPDX-License-Identifier: MIT
/*
 * libFuzzer target "request": the bytes of one packet decoded as the daemon
 * decodes a request (protobuf-c into an arena of the size and limit
 * dispatch_packet uses), and as the client library decodes what a daemon
 * sends (wire_peek_reply, then the Reply alone, or the whole
 * DaemonMessage).
 *
 * Beyond the sanitizers it checks what the handlers take for granted: a
 * request whose body is set has that submessage and its strings; and that
 * what decodes packs to bytes that decode and pack to the same bytes.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"
#include "tests/fuzz/fuzz.h"

const char fuzz_target_name[] = "request";

/* As daemon/server/dispatch.c: 64 KiB in place, WIRE_MAX_DECODED in all. */
static union {
	max_align_t align;
	uint8_t buf[64 * 1024];
} request_mem, again_mem, hand_mem;

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_request: %s\n", what);
	abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

/* What dispatch and the handlers dereference without looking. */
static void check_request_shape(const Rdmab__Request *req)
{
	switch (req->body_case) {
	case RDMAB__REQUEST__BODY_HELLO:
		if (!req->hello || !req->hello->library_version ||
		    !req->hello->domain)
			fail("hello without its strings");
		break;
	case RDMAB__REQUEST__BODY_PING:
		if (req->ping.len && !req->ping.data)
			fail("ping bytes without data");
		break;
	case RDMAB__REQUEST__BODY_STATUS:
		if (!req->status)
			fail("status without its message");
		break;
	case RDMAB__REQUEST__BODY_OPEN_CONTEXT:
		if (!req->open_context || !req->open_context->device)
			fail("open_context without its device string");
		break;
	case RDMAB__REQUEST__BODY_CLOSE_CONTEXT:
		if (!req->close_context)
			fail("close_context without its message");
		break;
	case RDMAB__REQUEST__BODY_LIST_DEVICES:
	case RDMAB__REQUEST__BODY_LIST_DOMAINS:
	case RDMAB__REQUEST__BODY_LIST_CLIENTS:
		/* One ListRequest pointer, whichever list it is. */
		if (!req->list_devices)
			fail("list request without its message");
		break;
	default:
		break;
	}
}

/* Whether @m or a message inside it kept fields it does not know. */
static bool has_unknown_fields(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;

	if (m->n_unknown_fields)
		return true;
	for (unsigned int i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *member = (const char *)m + f->offset;
		const char *quant = (const char *)m + f->quantifier_offset;

		if (f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			ProtobufCMessage *const *v;
			size_t n;

			memcpy(&n, quant, sizeof(n));
			memcpy(&v, member, sizeof(v));
			for (size_t j = 0; j < n; j++)
				if (has_unknown_fields(v[j]))
					return true;
		} else {
			const ProtobufCMessage *sub;
			uint32_t which;

			/* A oneof member is there only when it is the
			 * case. */
			if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
				memcpy(&which, quant, sizeof(which));
				if (which != f->id)
					continue;
			}
			memcpy(&sub, member, sizeof(sub));
			if (sub && has_unknown_fields(sub))
				return true;
		}
	}
	return false;
}

/*
 * Pack @msg: as long as its packed size says. Unless it holds unknown
 * fields, decode the bytes into @a and pack again: the same bytes. (Unknown
 * fields are left out because protobuf-c 1.4 keeps a field numbered 0 whose
 * key is encoded in two bytes and refuses it in one: harmless, the daemon
 * ignores unknown fields, but not a round trip.)
 */
static void check_round_trip(const ProtobufCMessage *msg, struct wire_arena *a)
{
	size_t len = protobuf_c_message_get_packed_size(msg);
	uint8_t *first = malloc(len ? len : 1), *second = NULL;
	ProtobufCMessage *again;

	if (!first)
		fail("out of memory");
	if (protobuf_c_message_pack(msg, first) != len)
		fail("packed length differs from the packed size");
	if (has_unknown_fields(msg)) {
		free(first);
		return;
	}
	again = protobuf_c_message_unpack(msg->descriptor, &a->allocator, len,
					  first);
	if (!again)
		fail("a decoded message packs to bytes that do not decode");
	if (protobuf_c_message_get_packed_size(again) != len)
		fail("decoding the packed bytes changed their size");
	second = malloc(len ? len : 1);
	if (!second)
		fail("out of memory");
	protobuf_c_message_pack(again, second);
	if (memcmp(first, second, len) != 0)
		fail("decoding the packed bytes changed them");
	free(first);
	free(second);
	wire_arena_reset(a);
}

/* The hand codec (proto/envelope.c) decodes what protobuf-c decodes, to a
 * message that packs to the same bytes, and refuses what it refuses. */
static void check_same(const ProtobufCMessage *ref,
		       const ProtobufCMessage *hand, const char *what)
{
	size_t len;
	uint8_t *a, *b;

	if (!ref != !hand) {
		fprintf(stderr, "%s: protobuf-c %s, the hand codec %s\n", what,
			ref ? "decodes" : "refuses",
			hand ? "decodes" : "refuses");
		fail("the hand codec and protobuf-c disagree");
	}
	if (!ref)
		return;
	len = protobuf_c_message_get_packed_size(ref);
	if (protobuf_c_message_get_packed_size(hand) != len) {
		fprintf(stderr, "%s: ", what);
		fail("the hand codec's message packs to another size");
	}
	a = malloc(len ? len : 1);
	b = malloc(len ? len : 1);
	if (!a || !b)
		fail("out of memory");
	protobuf_c_message_pack(ref, a);
	protobuf_c_message_pack(hand, b);
	if (memcmp(a, b, len) != 0) {
		fprintf(stderr, "%s: ", what);
		fail("the hand codec decoded other values");
	}
	free(a);
	free(b);
}

static void fuzz_daemon_side(const uint8_t *data, size_t size)
{
	struct wire_arena a, again, hand;
	Rdmab__Request *req, *hreq;

	wire_arena_init_poisoned(&a, request_mem.buf, sizeof(request_mem.buf),
				 WIRE_MAX_DECODED);
	wire_arena_init_poisoned(&again, again_mem.buf, sizeof(again_mem.buf),
				 WIRE_MAX_DECODED);
	req = rdmab__request__unpack(&a.allocator, size, data);
	if (req) {
		check_request_shape(req);
		check_round_trip(&req->base, &again);
	}
	wire_arena_init_poisoned(&hand, hand_mem.buf, sizeof(hand_mem.buf),
				 WIRE_MAX_DECODED);
	hreq = wire_unpack_request(&hand, size, data);
	check_same(req ? &req->base : NULL, hreq ? &hreq->base : NULL,
		   "request");
	wire_arena_reset(&hand);
	wire_arena_reset(&a);
}

static void fuzz_client_side(const uint8_t *data, size_t size)
{
	const uint8_t *rbuf = NULL;
	Rdmab__DaemonMessage *msg;
	Rdmab__Reply *reply = NULL, *hreply;
	struct wire_arena a, again, hand;
	size_t rlen = 0;
	uint64_t serial;

	wire_arena_init(&a, NULL, 0, WIRE_MAX_DECODED);
	wire_arena_init(&again, NULL, 0, WIRE_MAX_DECODED);
	serial = wire_peek_reply(data, size, &rbuf, &rlen);
	if (serial) {
		if (rbuf < data || rlen > size || rbuf + rlen != data + size)
			fail("wire_peek_reply points outside the packet");
		reply = rdmab__reply__unpack(&a.allocator, rlen, rbuf);
		if (reply)
			check_round_trip(&reply->base, &again);
		wire_arena_init(&hand, NULL, 0, WIRE_MAX_DECODED);
		hreply = wire_unpack_reply(&hand, rlen, rbuf);
		check_same(reply ? &reply->base : NULL,
			   hreply ? &hreply->base : NULL, "reply");
		wire_arena_reset(&hand);
	}
	msg = rdmab__daemon_message__unpack(&a.allocator, size, data);
	/* The whole message decodes only if the reply inside does. */
	if (serial && msg && !reply)
		fail("a DaemonMessage decodes but its peeked Reply does not");
	if (msg)
		check_round_trip(&msg->base, &again);
	wire_arena_reset(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_daemon_side(data, size);
	fuzz_client_side(data, size);
	return 0;
}

int fuzz_wrap_packet(const char *name, const uint8_t *pkt, size_t len,
		     uint8_t **ret)
{
	uint8_t *p = malloc(len ? len : 1);

	if (!p)
		return -ENOMEM;
	memcpy(p, pkt, len);
	*ret = p;
	return (int)len;
}
