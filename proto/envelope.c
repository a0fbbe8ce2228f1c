// SPDX-License-Identifier: MIT
/*
 * The envelope on the hot path, by hand: Request and Reply are a few
 * scalars and one oneof body, and protobuf-c's descriptor-driven walkers
 * spend more on them than the rest of a round trip's user-space work
 * (make bench counts it). Packing writes the bytes protobuf-c writes, in
 * field-number order with proto3's rules for what is left out; a body
 * that is a submessage is packed by flat.c when it is flat (scalars,
 * strings, packed uint64 runs and one level of flat submessages), by
 * protobuf-c otherwise.
 *
 * Decoding takes the shape every packer gives an envelope: its fields in
 * number order, each at most once, the body last, short varints, nothing
 * unknown. A packet of any other shape, valid or not, is handed whole to
 * protobuf-c, so that every packet decodes to what rdmab__request__unpack()
 * or rdmab__reply__unpack() would make of it, or fails where they fail.
 * Nothing here range-checks a value: the handlers do (proto/README.md).
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "proto/flat.h"
#include "proto/varint.h"
#include "proto/wire.h"

static void *env_alloc(struct wire_arena *a, size_t size)
{
	return a->allocator.alloc(a->allocator.allocator_data, size);
}

/* --- the body --------------------------------------------------------- */

/*
 * The field numbered @num. Fields are sorted by number and the oneof's
 * come last, in blocks numbered without gaps: try where that puts it,
 * then the field last found for this number (the oneofs have gaps between
 * their blocks, and a few bodies are most of the traffic), before
 * protobuf-c's search. A slot holds a pointer into a static descriptor,
 * one word, so threads racing on it see one field or another whole, and
 * a field is used only once it is checked to be @desc's and @num.
 */
#define ENV_FIELD_CACHE 64

static const ProtobufCFieldDescriptor *env_field_cache[ENV_FIELD_CACHE];

static const ProtobufCFieldDescriptor *
env_field(const ProtobufCMessageDescriptor *desc, uint32_t num)
{
	const ProtobufCFieldDescriptor *last =
		desc->fields + desc->n_fields - 1;
	uint32_t back = last->id - num;
	const ProtobufCFieldDescriptor *f, **slot;

	if (num <= last->id && back < desc->n_fields &&
	    (last - back)->id == num)
		return last - back;
	slot = &env_field_cache[(((uintptr_t)desc >> 4) + num) %
				ENV_FIELD_CACHE];
	f = __atomic_load_n(slot, __ATOMIC_RELAXED);
	/* Compared as addresses: @f may be another descriptor's. */
	if (f && (uintptr_t)f >= (uintptr_t)desc->fields &&
	    (uintptr_t)f <= (uintptr_t)last && f->id == num)
		return f;
	f = protobuf_c_message_descriptor_get_field(desc, num);
	if (f)
		__atomic_store_n(slot, f, __ATOMIC_RELAXED);
	return f;
}

/* The oneof member numbered @num, or NULL. Request and Reply have one
 * oneof; its members are bytes or submessages. */
static const ProtobufCFieldDescriptor *
env_body_field(const ProtobufCMessageDescriptor *desc, uint32_t num)
{
	const ProtobufCFieldDescriptor *f = env_field(desc, num);

	if (!f || !(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) ||
	    (f->type != PROTOBUF_C_TYPE_BYTES &&
	     f->type != PROTOBUF_C_TYPE_MESSAGE))
		return NULL;
	return f;
}

/* What the body of @m packs to: nothing (f NULL), bytes or a message. */
struct env_body {
	const ProtobufCFieldDescriptor *f;
	const ProtobufCBinaryData *bytes;
	const ProtobufCMessage *sub;
	bool flat;  /* sub is packed by flat.c */
	bool sized; /* len is known */
	size_t len;
};

/* As protobuf-c: the member whose number the case holds, a message only
 * when it is set. -1 for a case protobuf-c would pack but this does not
 * (the caller packs with protobuf-c). */
static int env_body_plan(const ProtobufCMessage *m, uint32_t body_case,
			 struct env_body *b)
{
	const ProtobufCFieldDescriptor *f;
	const char *member;

	*b = (struct env_body){ .sized = true };
	if (!body_case)
		return 0;
	f = env_field(m->descriptor, body_case);
	if (!f || !(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
		return 0;
	member = (const char *)m + f->offset;
	if (f->type == PROTOBUF_C_TYPE_BYTES) {
		b->bytes = (const ProtobufCBinaryData *)member;
		b->len = b->bytes->len;
	} else if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
		b->sub = *(const ProtobufCMessage *const *)member;
		if (!b->sub || b->sub == f->default_value)
			return 0;
		b->flat = !b->sub->n_unknown_fields &&
			  wire_flat(b->sub->descriptor);
		if (!b->flat)
			b->len = protobuf_c_message_get_packed_size(b->sub);
		b->sized = !b->flat;
	} else {
		return -1;
	}
	b->f = f;
	return 0;
}

/* Size a flat body that env_body_put_in() did not pack. */
static void env_body_sized(struct env_body *b)
{
	if (b->sized)
		return;
	b->sized = true;
	b->len = wire_flat_size(b->sub);
	if (b->len == WIRE_FLAT_NOT) {
		b->flat = false;
		b->len = protobuf_c_message_get_packed_size(b->sub);
	}
}

/*
 * Pack unsized flat body @b at @p, at least VARINT_MAX_TAG + 1 bytes
 * before @end, in one walk: the length goes in the byte left for it, or
 * the body moves up for a longer one. The end, or NULL for the caller to
 * size it and pack it with env_body_put().
 */
static uint8_t *env_body_put_in(const struct env_body *b, uint8_t *p,
				const uint8_t *end)
{
	uint8_t *body_end;
	size_t len;

	p = varint_put(p, varint_tag(b->f->id, VARINT_WT_LEN));
	body_end = wire_flat_pack_in(b->sub, p + 1, end);
	if (!body_end)
		return NULL;
	len = (size_t)(body_end - (p + 1));
	if (varint_size(len) > 1) {
		if ((size_t)(end - p) < varint_size(len) + len)
			return NULL;
		memmove(p + varint_size(len), p + 1, len);
	}
	p = varint_put(p, len);
	return p + len;
}

static size_t env_body_size(const struct env_body *b)
{
	if (!b->f)
		return 0;
	return varint_size(varint_tag(b->f->id, VARINT_WT_LEN)) +
	       varint_size(b->len) + b->len;
}

static uint8_t *env_body_put(const struct env_body *b, uint8_t *p)
{
	if (!b->f)
		return p;
	p = varint_put(p, varint_tag(b->f->id, VARINT_WT_LEN));
	p = varint_put(p, b->len);
	if (b->sub && b->flat)
		return wire_flat_pack(b->sub, p);
	if (b->sub)
		return p + protobuf_c_message_pack(b->sub, p);
	if (b->len)
		memcpy(p, b->bytes->data, b->len);
	return p + b->len;
}

/*
 * Decode the body @f of @m from the @len bytes at @p, as protobuf-c does:
 * a flat message by flat.c, any other by protobuf-c, bytes copied into @a
 * (NULL when empty) or, @borrow, pointing into the packet. -1 when it does
 * not decode.
 */
static int env_body_get(struct wire_arena *a, ProtobufCMessage *m,
			const ProtobufCFieldDescriptor *f, const uint8_t *p,
			size_t len, bool borrow)
{
	char *member = (char *)m + f->offset;

	if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
		const ProtobufCMessageDescriptor *desc = f->descriptor;
		ProtobufCMessage *sub;

		/* A flat body that flat.c does not read goes to protobuf-c
		 * with the whole envelope. */
		if (wire_flat(desc))
			sub = wire_flat_unpack(desc, &a->allocator, len, p);
		else
			sub = protobuf_c_message_unpack(desc, &a->allocator,
							len, p);
		if (!sub)
			return -1;
		*(ProtobufCMessage **)member = sub;
	} else {
		ProtobufCBinaryData *bd = (ProtobufCBinaryData *)member;

		bd->len = len;
		bd->data = NULL;
		if (len && borrow) {
			bd->data = (uint8_t *)p;
		} else if (len) {
			bd->data = env_alloc(a, len);
			if (!bd->data)
				return -1;
			memcpy(bd->data, p, len);
		}
	}
	*(uint32_t *)((char *)m + f->quantifier_offset) = f->id;
	return 0;
}

/* The body at @p, tagged @tag: -1 when it is not a member of the oneof
 * or does not end the packet exactly. */
static int env_get_body(struct wire_arena *a, ProtobufCMessage *m, uint64_t tag,
			const uint8_t *p, const uint8_t *end, bool borrow)
{
	const ProtobufCFieldDescriptor *f;
	uint64_t len;

	if ((tag & 7) != VARINT_WT_LEN)
		return -1;
	f = env_body_field(m->descriptor, tag >> 3);
	if (!f || varint_get(&p, end, VARINT_MAX_LEN, &len) < 0 ||
	    len != (uint64_t)(end - p))
		return -1;
	return env_body_get(a, m, f, p, (size_t)len, borrow);
}

/* --- Request ---------------------------------------------------------- */

static size_t env_request_head(const Rdmab__Request *req)
{
	size_t n = 0;

	if (req->version)
		n += 1 + varint_size(req->version);
	if (req->serial)
		n += 1 + varint_size(req->serial);
	return n;
}

static uint8_t *env_request_head_put(const Rdmab__Request *req, uint8_t *p)
{
	if (req->version) {
		p = varint_put(p, varint_tag(1, VARINT_WT_VARINT));
		p = varint_put(p, req->version);
	}
	if (req->serial) {
		p = varint_put(p, varint_tag(2, VARINT_WT_VARINT));
		p = varint_put(p, req->serial);
	}
	return p;
}

/* The head's two varints with their tags, the body's tag and a byte. */
#define ENV_ROOM (2 * (1 + 10) + 5 + 1)
/* A body's tag and its length byte, before env_body_put_in(). */
#define ENV_BODY_ROOM (VARINT_MAX_TAG + 1 + 1)

int wire_pack_request(const Rdmab__Request *req, uint8_t *buf, size_t cap)
{
	struct env_body b;
	size_t len;
	uint8_t *p = buf;

	if (req->base.n_unknown_fields ||
	    env_body_plan(&req->base, req->body_case, &b) < 0) {
		len = protobuf_c_message_get_packed_size(&req->base);
		if (len > cap || len > WIRE_MAX_PACKET)
			return -EMSGSIZE;
		return (int)protobuf_c_message_pack(&req->base, buf);
	}
	/* A flat body is packed in one walk when there is room for the
	 * most the head and the body's tag and length byte take. */
	if (!b.sized && cap >= ENV_ROOM) {
		uint8_t *end =
			buf + (cap < WIRE_MAX_PACKET ? cap : WIRE_MAX_PACKET);

		p = env_request_head_put(req, buf);
		p = env_body_put_in(&b, p, end);
		if (p)
			return (int)(p - buf);
		p = buf;
	}
	env_body_sized(&b);
	len = env_request_head(req) + env_body_size(&b);
	if (len > cap || len > WIRE_MAX_PACKET)
		return -EMSGSIZE;
	p = env_request_head_put(req, p);
	env_body_put(&b, p);
	return (int)len;
}

/*
 * The fields one at a time, in number order, each at most once: a tag
 * that is not the next one expected, or a non-minimal one, ends the
 * envelope's fields and must be the body's.
 */
Rdmab__Request *wire_unpack_request(struct wire_arena *a, size_t len,
				    const uint8_t *buf)
{
	/* NULL with 0 is an empty packet: no arithmetic on NULL. */
	const uint8_t *p = buf, *end = len ? buf + len : buf;
	Rdmab__Request *req;
	uint64_t v;

	req = env_alloc(a, sizeof(*req));
	if (!req)
		return NULL;
	/* Stored in place: rdmab__request__init() is a call and a copy on
	 * every request (make bench's instruction counts). */
	*req = (Rdmab__Request)RDMAB__REQUEST__INIT;
	if (p < end && *p == varint_tag(1, VARINT_WT_VARINT)) {
		p++;
		if (varint_get(&p, end, VARINT_MAX_U32, &v) < 0)
			goto generic;
		req->version = (uint32_t)v;
	}
	if (p < end && *p == varint_tag(2, VARINT_WT_VARINT)) {
		p++;
		if (varint_get(&p, end, VARINT_MAX_U64, &v) < 0)
			goto generic;
		req->serial = v;
	}
	if (p < end && (varint_get(&p, end, VARINT_MAX_TAG, &v) < 0 ||
			env_get_body(a, &req->base, v, p, end, true) < 0))
		goto generic;
	return req;

generic:
	/* With the arena as empty as protobuf-c alone would find it. */
	wire_arena_reset(a);
	return rdmab__request__unpack(&a->allocator, len, buf);
}

/* --- Reply ------------------------------------------------------------ */

static bool env_has_message(const Rdmab__Reply *r)
{
	return r->message && r->message[0];
}

static size_t env_reply_head(const Rdmab__Reply *r)
{
	size_t n = 0;

	if (r->serial)
		n += 1 + varint_size(r->serial);
	/* A negative int32 goes out as ten bytes, sign-extended. */
	if (r->error)
		n += 1 + varint_size((uint64_t)(int64_t)r->error);
	if (env_has_message(r)) {
		size_t m = strlen(r->message);

		n += 1 + varint_size(m) + m;
	}
	return n;
}

static uint8_t *env_reply_head_put(const Rdmab__Reply *r, uint8_t *p)
{
	if (r->serial) {
		p = varint_put(p, varint_tag(1, VARINT_WT_VARINT));
		p = varint_put(p, r->serial);
	}
	if (r->error) {
		p = varint_put(p, varint_tag(2, VARINT_WT_VARINT));
		p = varint_put(p, (uint64_t)(int64_t)r->error);
	}
	if (env_has_message(r)) {
		size_t m = strlen(r->message);

		p = varint_put(p, varint_tag(3, VARINT_WT_LEN));
		p = varint_put(p, m);
		memcpy(p, r->message, m);
		p += m;
	}
	return p;
}

/*
 * Pack the DaemonMessage field @field holding @r, whose body @b is flat
 * and unsized, at @buf in one walk, as env_body_put_in() packs a body:
 * the wrapper's length goes in the byte left for it, or what follows
 * moves up for a longer one. The end, or NULL when it might not fit
 * before @end (the caller sizes it then).
 */
static uint8_t *env_reply_put_in(const Rdmab__Reply *r, unsigned int field,
				 const struct env_body *b, uint8_t *buf,
				 const uint8_t *end)
{
	size_t head = env_reply_head(r), inner;
	uint8_t *p, *len_at;

	/* The wrapper's tag and length byte, the head, and the body's tag
	 * and length byte. */
	if ((size_t)(end - buf) < VARINT_MAX_TAG + 1 + head + ENV_BODY_ROOM)
		return NULL;
	len_at = varint_put(buf, varint_tag(field, VARINT_WT_LEN));
	p = env_reply_head_put(r, len_at + 1);
	p = env_body_put_in(b, p, end);
	if (!p)
		return NULL;
	inner = (size_t)(p - (len_at + 1));
	if (varint_size(inner) > 1) {
		if ((size_t)(end - len_at) < varint_size(inner) + inner)
			return NULL;
		memmove(len_at + varint_size(inner), len_at + 1, inner);
	}
	return varint_put(len_at, inner) + inner;
}

int wire_pack_reply_message(const Rdmab__Reply *r, unsigned int field,
			    uint8_t *buf, size_t cap)
{
	struct env_body b;
	size_t inner, len;
	uint8_t *p = buf;

	if (r->base.n_unknown_fields ||
	    env_body_plan(&r->base, r->body_case, &b) < 0)
		return -ENOTSUP;
	/* A flat body (most replies') is packed in one walk. */
	if (!b.sized) {
		size_t room = cap < WIRE_MAX_PACKET ? cap : WIRE_MAX_PACKET;

		p = env_reply_put_in(r, field, &b, buf, buf + room);
		if (p)
			return (int)(p - buf);
		p = buf;
	}
	env_body_sized(&b);
	inner = env_reply_head(r) + env_body_size(&b);
	len = varint_size(varint_tag(field, VARINT_WT_LEN)) +
	      varint_size(inner) + inner;
	if (len > cap || len > WIRE_MAX_PACKET)
		return -EMSGSIZE;
	p = varint_put(p, varint_tag(field, VARINT_WT_LEN));
	p = varint_put(p, inner);
	p = env_reply_head_put(r, p);
	env_body_put(&b, p);
	return (int)len;
}

Rdmab__Reply *wire_unpack_reply(struct wire_arena *a, size_t len,
				const uint8_t *buf)
{
	/* NULL with 0 is an empty packet: no arithmetic on NULL. */
	const uint8_t *p = buf, *end = len ? buf + len : buf;
	Rdmab__Reply *r;
	uint64_t v;

	r = env_alloc(a, sizeof(*r));
	if (!r)
		return NULL;
	/* As wire_unpack_request()'s. */
	*r = (Rdmab__Reply)RDMAB__REPLY__INIT;
	if (p < end && *p == varint_tag(1, VARINT_WT_VARINT)) {
		p++;
		if (varint_get(&p, end, VARINT_MAX_U64, &v) < 0)
			goto generic;
		r->serial = v;
	}
	if (p < end && *p == varint_tag(2, VARINT_WT_VARINT)) {
		p++;
		/* Below 2^28: what protobuf-c makes of it too. */
		if (varint_get(&p, end, VARINT_MAX_U32, &v) < 0)
			goto generic;
		r->error = (int32_t)v;
	}
	if (p < end && *p == varint_tag(3, VARINT_WT_LEN)) {
		p++;
		if (varint_get(&p, end, VARINT_MAX_LEN, &v) < 0 ||
		    v > (uint64_t)(end - p))
			goto generic;
		r->message = env_alloc(a, (size_t)v + 1);
		if (!r->message)
			goto generic;
		memcpy(r->message, p, (size_t)v);
		r->message[v] = '\0';
		p += v;
	}
	if (p < end && (varint_get(&p, end, VARINT_MAX_TAG, &v) < 0 ||
			env_get_body(a, &r->base, v, p, end, false) < 0))
		goto generic;
	return r;

generic:
	wire_arena_reset(a);
	return rdmab__reply__unpack(&a->allocator, len, buf);
}
