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
#include <stdlib.h>
#include <string.h>

#include "daemon/restart/record-pack.h"
#include "proto/varint.h"

/* The most a tag (field numbers up to 2^29) and a varint take. */
#define TAG_MAX 5
#define VARINT_MAX 10

struct out {
	uint8_t *p, *end;
	int err;
};

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
	o->p = varint_put(o->p, (uint64_t)id << 3 | wt);
}

static void pack_message(struct out *o, const ProtobufCMessage *m);

/* @len bytes at @data, length-delimited. */
static void put_bytes(struct out *o, uint32_t id, const void *data, size_t len)
{
	if (!room(o, TAG_MAX + VARINT_MAX + len))
		return;
	put_tag(o, id, 2);
	o->p = varint_put(o->p, len);
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
	n = varint_size(len);
	if (n > 1) {
		if (!room(o, n - 1))
			return;
		memmove(at + n, at + 1, len);
		o->p += n - 1;
	}
	varint_put(at, len);
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
			o->p = varint_put(o->p, v);
		}
		return;
	}
	for (size_t i = 0; i < n; i++) {
		scalar_get(f, arr + i * sz, &v);
		len += varint_size(v);
	}
	if (!room(o, TAG_MAX + VARINT_MAX + len))
		return;
	put_tag(o, f->id, 2);
	o->p = varint_put(o->p, len);
	for (size_t i = 0; i < n; i++) {
		scalar_get(f, arr + i * sz, &v);
		o->p = varint_put(o->p, v);
	}
}

/* What a field is, for the pack's loop: the descriptor's type and label
 * read once per message type, not once per field written. */
enum pf_op {
	PF_BOOL,
	PF_U32,
	PF_U64,
	PF_FIXED64,
	PF_STRING,
	PF_BYTES,
	PF_MESSAGE,
	PF_REPEATED,
};

struct pfield {
	uint32_t offset;
	uint8_t op;
	uint8_t tag_len;
	/* The field's key (number and wire type), written as is. */
	uint8_t tag[TAG_MAX];
	const ProtobufCFieldDescriptor *fd;
};

/* A message type's fields in the descriptor's order; NULL @f: a type
 * this does not write. */
struct plan {
	const ProtobufCMessageDescriptor *d;
	unsigned int n;
	struct pfield *f;
};

/* The plans made so far, by descriptor (a state has a few dozen types):
 * open addressing, never freed (the types live as long as the binary).
 * The daemon packs from its loop's thread only. */
#define PLANS 128
static struct plan plans[PLANS];

static uint8_t wire_type(const ProtobufCFieldDescriptor *f)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_FIXED64:
		return 1;
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_BYTES:
	case PROTOBUF_C_TYPE_MESSAGE:
		return 2;
	default:
		return 0;
	}
}

/* @d's fields as the loop reads them: 0, or -ENOTSUP for a field this
 * does not write (then the plan says so for good). */
static int plan_make(struct plan *pl, const ProtobufCMessageDescriptor *d)
{
	struct pfield *f = calloc(d->n_fields ? d->n_fields : 1, sizeof(*f));

	pl->d = d;
	pl->f = NULL;
	if (!f)
		return -ENOMEM;
	for (unsigned int i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *fd = &d->fields[i];
		struct pfield *p = &f[i];

		p->fd = fd;
		p->offset = fd->offset;
		if (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
			goto unsupported;
		if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
			p->op = PF_REPEATED;
			continue;
		}
		if (fd->label != PROTOBUF_C_LABEL_NONE)
			goto unsupported;
		switch (fd->type) {
		case PROTOBUF_C_TYPE_BOOL:
			p->op = PF_BOOL;
			break;
		case PROTOBUF_C_TYPE_UINT32:
			p->op = PF_U32;
			break;
		case PROTOBUF_C_TYPE_UINT64:
			p->op = PF_U64;
			break;
		case PROTOBUF_C_TYPE_FIXED64:
			p->op = PF_FIXED64;
			break;
		case PROTOBUF_C_TYPE_STRING:
			p->op = PF_STRING;
			break;
		case PROTOBUF_C_TYPE_BYTES:
			p->op = PF_BYTES;
			break;
		case PROTOBUF_C_TYPE_MESSAGE:
			p->op = PF_MESSAGE;
			break;
		default:
			goto unsupported;
		}
		p->tag_len =
			(uint8_t)(varint_put(p->tag, (uint64_t)fd->id << 3 |
							     wire_type(fd)) -
				  p->tag);
	}
	pl->n = d->n_fields;
	pl->f = f;
	return 0;

unsupported:
	free(f);
	return -ENOTSUP;
}

/* @d's plan, made the first time: NULL for a type this does not write
 * (or, once, no memory for its plan). */
static const struct plan *plan_of(const ProtobufCMessageDescriptor *d)
{
	size_t h = ((uintptr_t)d >> 4) * 0x9e3779b97f4a7c15ull >> 57;

	for (unsigned int k = 0; k < PLANS; k++, h = (h + 1) & (PLANS - 1)) {
		struct plan *pl = &plans[h];

		if (pl->d == d)
			return pl->f ? pl : NULL;
		if (!pl->d)
			return plan_make(pl, d) < 0 ? NULL : pl;
	}
	return NULL;
}

static inline void put_key(struct out *o, const struct pfield *p)
{
	memcpy(o->p, p->tag, TAG_MAX);
	o->p += p->tag_len;
}

static void pack_message(struct out *o, const ProtobufCMessage *m)
{
	const struct plan *pl = plan_of(m->descriptor);
	const char *base = (const char *)m;

	if (!pl || m->n_unknown_fields) {
		o->err = -ENOTSUP;
		return;
	}
	for (unsigned int i = 0; i < pl->n; i++) {
		const struct pfield *p = &pl->f[i];
		const void *at = base + p->offset;
		uint64_t v;

		switch (p->op) {
		case PF_BOOL:
			v = *(const protobuf_c_boolean *)at ? 1 : 0;
			break;
		case PF_U32:
			v = *(const uint32_t *)at;
			break;
		case PF_U64:
			v = *(const uint64_t *)at;
			break;
		case PF_FIXED64:
			memcpy(&v, at, sizeof(v));
			if (!v)
				continue;
			if (!room(o, TAG_MAX + sizeof(v)))
				return;
			put_key(o, p);
			v = htole64(v);
			memcpy(o->p, &v, sizeof(v));
			o->p += sizeof(v);
			continue;
		case PF_STRING: {
			const char *str = *(const char *const *)at;

			if (str && *str)
				put_bytes(o, p->fd->id, str, strlen(str));
			goto next;
		}
		case PF_BYTES: {
			const ProtobufCBinaryData *b = at;

			if (b->len)
				put_bytes(o, p->fd->id, b->data, b->len);
			goto next;
		}
		case PF_MESSAGE: {
			const ProtobufCMessage *sub =
				*(const ProtobufCMessage *const *)at;

			if (sub)
				put_message(o, p->fd->id, sub);
			goto next;
		}
		default:
			pack_repeated(o, p->fd, base);
			goto next;
		}
		/* A varint scalar: left out when 0, as proto3 does. */
		if (!v)
			continue;
		if (!room(o, TAG_MAX + VARINT_MAX))
			return;
		put_key(o, p);
		o->p = varint_put(o->p, v);
		continue;
	next:
		if (o->err)
			return;
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
