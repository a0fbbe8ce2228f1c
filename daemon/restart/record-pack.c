// SPDX-License-Identifier: MIT
/*
 * record_pack() (record-pack.h): protobuf's wire format written in one
 * pass over the descriptor. A sub-message's length comes before its
 * bytes: one byte is kept for it and the bytes move up in the rare case
 * that it takes more (a sub-message of 128 bytes or more).
 */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "daemon/restart/record-pack.h"

/* The most a tag (field numbers up to 2^29) and a varint take. */
#define TAG_MAX 5
#define VARINT_MAX 10

struct out {
	uint8_t *p, *end;
	int err;
};

static inline uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Room for @n more bytes, or the pack fails with -ENOSPC. */
static inline bool room(struct out *o, size_t n)
{
	if ((size_t)(o->end - o->p) >= n)
		return true;
	o->err = -ENOSPC;
	return false;
}

static inline void put_tag(struct out *o, uint32_t id, unsigned int wt)
{
	o->p = put_varint(o->p, (uint64_t)id << 3 | wt);
}

static void pack_message(struct out *o, const ProtobufCMessage *m);

/* @len bytes at @data, length-delimited. */
static void put_bytes(struct out *o, uint32_t id, const void *data, size_t len)
{
	if (!room(o, TAG_MAX + VARINT_MAX + len))
		return;
	put_tag(o, id, 2);
	o->p = put_varint(o->p, len);
	if (len)
		memcpy(o->p, data, len);
	o->p += len;
}

/* @m as field @id: its length first, in the byte kept for it, or moved
 * up behind a longer one. */
static void put_message(struct out *o, uint32_t id, const ProtobufCMessage *m)
{
	uint8_t *at;
	size_t len, n;

	if (!room(o, TAG_MAX + 1))
		return;
	put_tag(o, id, 2);
	at = o->p++;
	pack_message(o, m);
	if (o->err)
		return;
	len = (size_t)(o->p - at - 1);
	n = varint_len(len);
	if (n > 1) {
		if (!room(o, n - 1))
			return;
		memmove(at + n, at + 1, len);
		o->p += n - 1;
	}
	put_varint(at, len);
}

/* A scalar's value as a varint: 0 for a type this does not write. */
static inline bool scalar_get(const ProtobufCFieldDescriptor *f, const void *at,
			      uint64_t *v)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_BOOL:
		*v = *(const protobuf_c_boolean *)at ? 1 : 0;
		return true;
	case PROTOBUF_C_TYPE_UINT32:
		*v = *(const uint32_t *)at;
		return true;
	case PROTOBUF_C_TYPE_UINT64:
		*v = *(const uint64_t *)at;
		return true;
	default:
		return false;
	}
}

static size_t scalar_size(const ProtobufCFieldDescriptor *f)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_UINT32:
		return sizeof(uint32_t);
	default:
		return sizeof(uint64_t);
	}
}

static void pack_repeated(struct out *o, const ProtobufCFieldDescriptor *f,
			  const char *base)
{
	size_t n = *(const size_t *)(base + f->quantifier_offset);
	const char *arr = *(const char *const *)(base + f->offset);
	size_t len = 0, sz;
	uint64_t v = 0;

	if (!n)
		return;
	switch (f->type) {
	case PROTOBUF_C_TYPE_MESSAGE:
		for (size_t i = 0; i < n && !o->err; i++) {
			const ProtobufCMessage *sub =
				((const ProtobufCMessage *const *)arr)[i];

			if (!sub) {
				o->err = -ENOTSUP;
				return;
			}
			put_message(o, f->id, sub);
		}
		return;
	case PROTOBUF_C_TYPE_STRING:
		for (size_t i = 0; i < n && !o->err; i++) {
			const char *s = ((const char *const *)arr)[i];

			if (!s) {
				o->err = -ENOTSUP;
				return;
			}
			put_bytes(o, f->id, s, strlen(s));
		}
		return;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_UINT64:
		break;
	default:
		o->err = -ENOTSUP;
		return;
	}
	sz = scalar_size(f);
	if (!(f->flags & PROTOBUF_C_FIELD_FLAG_PACKED)) {
		for (size_t i = 0; i < n; i++) {
			if (!room(o, TAG_MAX + VARINT_MAX))
				return;
			scalar_get(f, arr + i * sz, &v);
			put_tag(o, f->id, 0);
			o->p = put_varint(o->p, v);
		}
		return;
	}
	for (size_t i = 0; i < n; i++) {
		scalar_get(f, arr + i * sz, &v);
		len += varint_len(v);
	}
	if (!room(o, TAG_MAX + VARINT_MAX + len))
		return;
	put_tag(o, f->id, 2);
	o->p = put_varint(o->p, len);
	for (size_t i = 0; i < n; i++) {
		scalar_get(f, arr + i * sz, &v);
		o->p = put_varint(o->p, v);
	}
}

/* One unlabelled (proto3) field, left out when it is zero. */
static void pack_field(struct out *o, const ProtobufCFieldDescriptor *f,
		       const char *base)
{
	const void *at = base + f->offset;
	uint64_t v;

	if (scalar_get(f, at, &v)) {
		if (!v)
			return;
		if (!room(o, TAG_MAX + VARINT_MAX))
			return;
		put_tag(o, f->id, 0);
		o->p = put_varint(o->p, v);
		return;
	}
	switch (f->type) {
	case PROTOBUF_C_TYPE_FIXED64:
		memcpy(&v, at, sizeof(v));
		if (!v || !room(o, TAG_MAX + sizeof(v)))
			return;
		put_tag(o, f->id, 1);
		v = htole64(v);
		memcpy(o->p, &v, sizeof(v));
		o->p += sizeof(v);
		return;
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(const char *const *)at;

		if (s && *s)
			put_bytes(o, f->id, s, strlen(s));
		return;
	}
	case PROTOBUF_C_TYPE_BYTES: {
		const ProtobufCBinaryData *b = at;

		if (b->len)
			put_bytes(o, f->id, b->data, b->len);
		return;
	}
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessage *sub =
			*(const ProtobufCMessage *const *)at;

		if (sub)
			put_message(o, f->id, sub);
		return;
	}
	default:
		o->err = -ENOTSUP;
		return;
	}
}

static void pack_message(struct out *o, const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const char *base = (const char *)m;

	if (m->n_unknown_fields) {
		o->err = -ENOTSUP;
		return;
	}
	for (unsigned int i = 0; i < d->n_fields && !o->err; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];

		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
			o->err = -ENOTSUP;
		else if (f->label == PROTOBUF_C_LABEL_NONE)
			pack_field(o, f, base);
		else if (f->label == PROTOBUF_C_LABEL_REPEATED)
			pack_repeated(o, f, base);
		else
			o->err = -ENOTSUP;
	}
}

long record_pack(const ProtobufCMessage *m, uint8_t *buf, size_t cap)
{
	struct out o = { buf, buf + cap, 0 };

	pack_message(&o, m);
	if (o.err)
		return o.err;
	return (long)(o.p - buf);
}
