// SPDX-License-Identifier: MIT
/*
 * Flat messages by hand: a message whose fields are proto3 singular
 * scalars (uint32, int32, enum, bool, uint64), strings, bytes, packed
 * repeated uint64 and, one level deep, submessages that are themselves
 * made of scalars, strings and bytes only, with no oneof. That is what
 * most request and reply bodies are (OpenContextRequest, ObjCreateRequest
 * with its ObjAttr and uses, ...). protobuf-c's generic walkers spend a
 * few hundred instructions on each even when it has one field; these
 * spend a few dozen.
 *
 * The rules are protobuf-c's, as envelope.c's are: packing writes its
 * bytes (fields in number order, zero values and empty strings and bytes
 * left out, a negative int32 or enum as ten bytes, a bool as 0 or 1, a
 * submessage whenever it is set, even empty, a repeated field only when
 * it has elements, packed into one length-delimited run).
 * Decoding takes fields in number order, each at most once, with the wire
 * type of their type and varints short enough that protobuf-c reads them
 * the same way; for anything else (an unpacked or empty run of a packed
 * field too) it fails, and the caller hands the packet to protobuf-c
 * (envelope.c decodes the whole envelope again).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "proto/flat.h"
#include "proto/varint.h"

/* Whether field @f may be in a flat message; @nested: a submessage's. */
static bool flat_field(const ProtobufCFieldDescriptor *f, bool nested);

static bool flat_desc(const ProtobufCMessageDescriptor *desc, bool nested)
{
	for (unsigned int i = 0; i < desc->n_fields; i++)
		if (!flat_field(&desc->fields[i], nested))
			return false;
	return true;
}

static bool flat_field(const ProtobufCFieldDescriptor *f, bool nested)
{
	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		return false;
	if (f->label == PROTOBUF_C_LABEL_REPEATED)
		return !nested && f->type == PROTOBUF_C_TYPE_UINT64 &&
		       (f->flags & PROTOBUF_C_FIELD_FLAG_PACKED);
	if (f->label != PROTOBUF_C_LABEL_NONE)
		return false;
	switch (f->type) {
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_ENUM:
	case PROTOBUF_C_TYPE_BOOL:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_BYTES:
		return true;
	case PROTOBUF_C_TYPE_MESSAGE:
		return !nested && flat_desc(f->descriptor, true);
	default:
		return false;
	}
}

/*
 * The answer for a descriptor is remembered: the walk costs more than the
 * rest of packing a small body, and the descriptors are few and static.
 * A slot holds the descriptor's address with the answer in its low bit,
 * one word, so that threads racing on it see either answer whole.
 */
#define FLAT_CACHE 64

static uintptr_t flat_cache[FLAT_CACHE];

bool wire_flat(const ProtobufCMessageDescriptor *desc)
{
	uintptr_t key = (uintptr_t)desc;
	uintptr_t *slot = &flat_cache[(key >> 4) % FLAT_CACHE];
	uintptr_t v = __atomic_load_n(slot, __ATOMIC_RELAXED);
	bool flat;

	if ((v & ~(uintptr_t)1) == key)
		return v & 1;
	flat = flat_desc(desc, false);
	__atomic_store_n(slot, key | flat, __ATOMIC_RELAXED);
	return flat;
}

/* The value of scalar field @f of @m as it goes out in a varint, or the
 * length of its string or bytes; 0 when protobuf-c leaves it out. */
static inline __attribute__((always_inline)) uint64_t
flat_value(const ProtobufCFieldDescriptor *f, const ProtobufCMessage *m)
{
	const char *member = (const char *)m + f->offset;
	const char *s;

	switch (f->type) {
	case PROTOBUF_C_TYPE_UINT32:
		return *(const uint32_t *)member;
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_ENUM:
		/* Sign-extended: ten bytes when negative. */
		return (uint64_t)(int64_t) * (const int32_t *)member;
	case PROTOBUF_C_TYPE_BOOL:
		return *(const protobuf_c_boolean *)member ? 1 : 0;
	case PROTOBUF_C_TYPE_UINT64:
		return *(const uint64_t *)member;
	case PROTOBUF_C_TYPE_STRING:
		s = *(const char *const *)member;
		return s ? strlen(s) : 0;
	default:
		return ((const ProtobufCBinaryData *)member)->len;
	}
}

static bool flat_is_len(const ProtobufCFieldDescriptor *f)
{
	return f->type == PROTOBUF_C_TYPE_STRING ||
	       f->type == PROTOBUF_C_TYPE_BYTES;
}

/* The elements of repeated field @f of @m, and their count. */
static const uint64_t *flat_array(const ProtobufCFieldDescriptor *f,
				  const ProtobufCMessage *m, size_t *n)
{
	*n = *(const size_t *)((const char *)m + f->quantifier_offset);
	return *(const uint64_t *const *)((const char *)m + f->offset);
}

static const ProtobufCMessage *flat_sub(const ProtobufCFieldDescriptor *f,
					const ProtobufCMessage *m)
{
	return *(const ProtobufCMessage *const *)((const char *)m + f->offset);
}

/* What the payload of a length-delimited run packs to. */
static size_t flat_run_size(const uint64_t *v, size_t n)
{
	size_t len = 0;

	for (size_t i = 0; i < n; i++)
		len += varint_size(v[i]);
	return len;
}

size_t wire_flat_size(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *desc = m->descriptor;
	size_t n = 0;

	for (unsigned int i = 0; i < desc->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &desc->fields[i];
		const ProtobufCMessage *sub;
		size_t len, count;
		const uint64_t *a;
		uint64_t v;

		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			a = flat_array(f, m, &count);
			if (!count)
				continue;
			len = flat_run_size(a, count);
		} else if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
			sub = flat_sub(f, m);
			if (!sub)
				continue;
			/* Unknown fields are protobuf-c's to pack. */
			if (sub->n_unknown_fields)
				return WIRE_FLAT_NOT;
			len = wire_flat_size(sub);
		} else {
			v = flat_value(f, m);
			if (!v)
				continue;
			if (!flat_is_len(f)) {
				n += varint_size(varint_tag(f->id, 0)) +
				     varint_size(v);
				continue;
			}
			len = (size_t)v;
		}
		n += varint_size(varint_tag(f->id, 0)) + varint_size(len) + len;
	}
	return n;
}

/* Write field @f of value @v (a scalar, or the length of a string or
 * bytes, whose data follows) at @p; returns the end. The caller checked the
 * room. */
static uint8_t *flat_put_value(uint8_t *p, const ProtobufCFieldDescriptor *f,
			       const char *member, uint64_t v)
{
	p = varint_put(p, varint_tag(f->id, flat_is_len(f) ? VARINT_WT_LEN :
							     VARINT_WT_VARINT));
	p = varint_put(p, v);
	if (f->type == PROTOBUF_C_TYPE_STRING) {
		memcpy(p, *(const char *const *)member, (size_t)v);
		p += v;
	} else if (f->type == PROTOBUF_C_TYPE_BYTES) {
		memcpy(p, ((const ProtobufCBinaryData *)member)->data,
		       (size_t)v);
		p += v;
	}
	return p;
}

uint8_t *wire_flat_pack(const ProtobufCMessage *m, uint8_t *p)
{
	const ProtobufCMessageDescriptor *desc = m->descriptor;

	for (unsigned int i = 0; i < desc->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &desc->fields[i];
		const char *member = (const char *)m + f->offset;
		const ProtobufCMessage *sub;
		const uint64_t *a;
		size_t count;
		uint8_t *start;
		uint64_t v;

		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			a = flat_array(f, m, &count);
			if (!count)
				continue;
			p = varint_put(p, varint_tag(f->id, VARINT_WT_LEN));
			p = varint_put(p, flat_run_size(a, count));
			for (size_t k = 0; k < count; k++)
				p = varint_put(p, a[k]);
			continue;
		}
		if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
			sub = flat_sub(f, m);
			if (!sub)
				continue;
			/* Room for a one-byte length; a longer one moves the
			 * submessage up. */
			p = varint_put(p, varint_tag(f->id, VARINT_WT_LEN));
			start = p + 1;
			v = (uint64_t)(wire_flat_pack(sub, start) - start);
			if (varint_size(v) > 1)
				memmove(p + varint_size(v), start, (size_t)v);
			p = varint_put(p, v);
			p += v;
			continue;
		}
		v = flat_value(f, m);
		if (!v)
			continue;
		p = flat_put_value(p, f, member, v);
	}
	return p;
}

/* Room for a tag and a varint, the most a scalar field takes. */
#define FLAT_ROOM 15

/* Pack field @f of @m at @p as wire_flat_pack() does, sizing nothing;
 * the end, or NULL when it might not fit before @end. */
static uint8_t *flat_pack_field_in(const ProtobufCFieldDescriptor *f,
				   const ProtobufCMessage *m, uint8_t *p,
				   const uint8_t *end)
{
	const char *member = (const char *)m + f->offset;
	const ProtobufCMessage *sub;
	const uint64_t *a;
	size_t count;
	uint8_t *sub_end;
	uint64_t v;

	if (end - p < FLAT_ROOM)
		return NULL;
	if (f->label == PROTOBUF_C_LABEL_REPEATED) {
		a = flat_array(f, m, &count);
		if (!count)
			return p;
		if (count > (size_t)(end - p - FLAT_ROOM) / 10)
			return NULL;
		p = varint_put(p, varint_tag(f->id, VARINT_WT_LEN));
		p = varint_put(p, flat_run_size(a, count));
		for (size_t k = 0; k < count; k++)
			p = varint_put(p, a[k]);
		return p;
	}
	if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
		sub = flat_sub(f, m);
		if (!sub)
			return p;
		if (sub->n_unknown_fields)
			return NULL;
		p = varint_put(p, varint_tag(f->id, VARINT_WT_LEN));
		sub_end = wire_flat_pack_in(sub, p + 1, end);
		if (!sub_end)
			return NULL;
		v = (uint64_t)(sub_end - (p + 1));
		if (varint_size(v) > 1) {
			if ((size_t)(end - p) < varint_size(v) + v)
				return NULL;
			memmove(p + varint_size(v), p + 1, (size_t)v);
		}
		p = varint_put(p, v);
		return p + v;
	}
	v = flat_value(f, m);
	if (!v)
		return p;
	if (flat_is_len(f) && v > (uint64_t)(end - p - FLAT_ROOM))
		return NULL;
	return flat_put_value(p, f, member, v);
}

/*
 * Plans: what packing needs of a descriptor's fields, 12 bytes a field
 * rather than protobuf-c's 72, the tag of a scalar written already. A
 * message such as ObjAttr has 32 fields, nearly all zero in any one
 * message: the walk that skips them is most of its packing, and reading
 * the descriptors themselves is most of the walk's cache lines. Made once
 * per descriptor and kept for the life of the process, published with a
 * compare-and-swap so that racing threads agree on one; a descriptor that
 * finds its slot taken by another is packed field by field.
 */
enum flat_kind {
	FLAT_K_U32,
	FLAT_K_I32,
	FLAT_K_BOOL,
	FLAT_K_U64,
	FLAT_K_FIELD,
};

struct flat_op {
	uint32_t offset;
	uint16_t index; /* in desc->fields */
	uint8_t kind;	/* enum flat_kind */
	uint8_t tag_len;
	uint8_t tag[2]; /* a scalar's tag, as a varint */
};

struct flat_plan {
	const ProtobufCMessageDescriptor *desc;
	unsigned int n;
	struct flat_op ops[];
};

#define FLAT_PLANS 128

static struct flat_plan *flat_plans[FLAT_PLANS];

static enum flat_kind flat_kind_of(const ProtobufCFieldDescriptor *f)
{
	/* Two bytes of tag: fields below 2048. */
	if (f->label == PROTOBUF_C_LABEL_REPEATED || f->id >= 2048)
		return FLAT_K_FIELD;
	switch (f->type) {
	case PROTOBUF_C_TYPE_UINT32:
		return FLAT_K_U32;
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_ENUM:
		return FLAT_K_I32;
	case PROTOBUF_C_TYPE_BOOL:
		return FLAT_K_BOOL;
	case PROTOBUF_C_TYPE_UINT64:
		return FLAT_K_U64;
	default:
		return FLAT_K_FIELD;
	}
}

static struct flat_plan *flat_plan_make(const ProtobufCMessageDescriptor *desc)
{
	struct flat_plan *pl;

	if (desc->n_fields > UINT16_MAX)
		return NULL;
	pl = malloc(sizeof(*pl) + desc->n_fields * sizeof(pl->ops[0]));
	if (!pl)
		return NULL;
	pl->desc = desc;
	pl->n = desc->n_fields;
	for (unsigned int i = 0; i < desc->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &desc->fields[i];
		struct flat_op *op = &pl->ops[i];
		uint8_t *t = op->tag;

		op->offset = f->offset;
		op->index = (uint16_t)i;
		op->kind = (uint8_t)flat_kind_of(f);
		t[0] = t[1] = 0;
		op->tag_len = 0;
		if (op->kind != FLAT_K_FIELD)
			op->tag_len =
				(uint8_t)(varint_put(
						  t,
						  varint_tag(
							  f->id,
							  VARINT_WT_VARINT)) -
					  t);
	}
	return pl;
}

/* @desc's plan, or NULL: pack it field by field. */
static const struct flat_plan *flat_plan(const ProtobufCMessageDescriptor *desc)
{
	/* Fibonacci hashing of the address: descriptors lie close together. */
	uint64_t h = ((uint64_t)(uintptr_t)desc >> 3) * 0x9e3779b97f4a7c15ull;
	struct flat_plan **slot = &flat_plans[h >> 57];
	struct flat_plan *pl = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	struct flat_plan *none = NULL;

	if (pl)
		return pl->desc == desc ? pl : NULL;
	pl = flat_plan_make(desc);
	if (!pl)
		return NULL;
	if (__atomic_compare_exchange_n(slot, &none, pl, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return pl;
	/* Another thread published first: its plan, if it is this one. */
	free(pl);
	return none->desc == desc ? none : NULL;
}

uint8_t *wire_flat_pack_in(const ProtobufCMessage *m, uint8_t *p,
			   const uint8_t *end)
{
	const ProtobufCMessageDescriptor *desc = m->descriptor;
	const struct flat_plan *pl = flat_plan(desc);

	if (!pl) {
		for (unsigned int i = 0; i < desc->n_fields && p; i++)
			p = flat_pack_field_in(&desc->fields[i], m, p, end);
		return p;
	}
	for (unsigned int i = 0; i < pl->n; i++) {
		const struct flat_op *op = &pl->ops[i];
		const char *member = (const char *)m + op->offset;
		uint64_t v;

		switch (op->kind) {
		case FLAT_K_U32:
			v = *(const uint32_t *)member;
			break;
		case FLAT_K_I32:
			/* Sign-extended: ten bytes when negative. */
			v = (uint64_t)(int64_t) * (const int32_t *)member;
			break;
		case FLAT_K_BOOL:
			v = *(const protobuf_c_boolean *)member ? 1 : 0;
			break;
		case FLAT_K_U64:
			v = *(const uint64_t *)member;
			break;
		default:
			p = flat_pack_field_in(&desc->fields[op->index], m, p,
					       end);
			if (!p)
				return NULL;
			continue;
		}
		if (!v)
			continue;
		if (end - p < FLAT_ROOM)
			return NULL;
		/* Both bytes fit in the room; the varint overwrites the
		 * second when the tag has one. */
		p[0] = op->tag[0];
		p[1] = op->tag[1];
		p = varint_put(p + op->tag_len, v);
	}
	return p;
}

/* Store the varint @v in @member, a field of type @type; -1 for a value
 * this does not read the way protobuf-c does. */
static int flat_set_varint(char *member, ProtobufCType type, uint64_t v,
			   unsigned int bytes)
{
	switch (type) {
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_ENUM:
		/* Below 2^28: exact, not negative. */
		if (bytes > VARINT_MAX_U32)
			return -1;
		*(uint32_t *)member = (uint32_t)v;
		return 0;
	case PROTOBUF_C_TYPE_BOOL:
		if (bytes > VARINT_MAX_U32)
			return -1;
		*(protobuf_c_boolean *)member = v != 0;
		return 0;
	case PROTOBUF_C_TYPE_UINT64:
		if (bytes > VARINT_MAX_U64)
			return -1;
		*(uint64_t *)member = v;
		return 0;
	default:
		return -1;
	}
}

/*
 * The packed run of uint64 of @len bytes at @p into field @f of @m, in an
 * array of exactly its elements, allocated where protobuf-c allocates it;
 * -1 for an empty run (no packer writes one) or a varint too long.
 */
static int flat_get_run(ProtobufCAllocator *a, ProtobufCMessage *m,
			const ProtobufCFieldDescriptor *f, const uint8_t *p,
			size_t len)
{
	const uint8_t *end = p + len;
	size_t count = 0;
	uint64_t *array;

	if (!len || p[len - 1] & 0x80)
		return -1;
	for (size_t i = 0; i < len; i++)
		count += !(p[i] & 0x80);
	array = a->alloc(a->allocator_data, count * sizeof(*array));
	if (!array)
		return -1;
	for (size_t i = 0; i < count; i++)
		if (varint_get(&p, end, VARINT_MAX_U64, &array[i]) < 0)
			return -1;
	*(size_t *)((char *)m + f->quantifier_offset) = count;
	*(uint64_t **)((char *)m + f->offset) = array;
	return 0;
}

ProtobufCMessage *wire_flat_unpack(const ProtobufCMessageDescriptor *desc,
				   ProtobufCAllocator *a, size_t len,
				   const uint8_t *buf)
{
	/* Messages without fields have a NULL descriptor array and empty
	 * bodies may come as NULL: no arithmetic on NULL (undefined). */
	const uint8_t *p = buf, *end = len ? buf + len : buf;
	const ProtobufCFieldDescriptor *f = desc->fields;
	const ProtobufCFieldDescriptor *fend =
		desc->n_fields ? f + desc->n_fields : f;
	ProtobufCMessage *m;

	m = a->alloc(a->allocator_data, desc->sizeof_message);
	if (!m)
		return NULL;
	desc->message_init(m);
	while (p < end) {
		const uint8_t *start;
		uint64_t tag, v;
		char *member;

		if (varint_get(&p, end, VARINT_MAX_TAG, &tag) < 0)
			return NULL;
		/* Forward only: out of order, repeated or unknown fail. */
		while (f < fend && f->id < (tag >> 3))
			f++;
		if (f == fend || f->id != (tag >> 3))
			return NULL;
		member = (char *)m + f->offset;
		start = p;
		if (!flat_is_len(f) && f->type != PROTOBUF_C_TYPE_MESSAGE &&
		    f->label != PROTOBUF_C_LABEL_REPEATED) {
			if ((tag & 7) != VARINT_WT_VARINT ||
			    varint_get(&p, end, VARINT_MAX_U64, &v) < 0 ||
			    flat_set_varint(member, f->type, v,
					    (unsigned int)(p - start)) < 0)
				return NULL;
			f++;
			continue;
		}
		if ((tag & 7) != VARINT_WT_LEN ||
		    varint_get(&p, end, VARINT_MAX_LEN, &v) < 0 ||
		    v > (uint64_t)(end - p))
			return NULL;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			if (flat_get_run(a, m, f, p, (size_t)v) < 0)
				return NULL;
		} else if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
			/* Flat: wire_flat() let no deeper message in. */
			ProtobufCMessage *sub = wire_flat_unpack(
				f->descriptor, a, (size_t)v, p);

			if (!sub)
				return NULL;
			*(ProtobufCMessage **)member = sub;
		} else {
			uint8_t *data = NULL;
			bool str = f->type == PROTOBUF_C_TYPE_STRING;

			/* protobuf-c: a string is always allocated, empty
			 * bytes are NULL. */
			if (v || str) {
				data = a->alloc(a->allocator_data,
						(size_t)v + str);
				if (!data)
					return NULL;
				memcpy(data, p, (size_t)v);
			}
			if (str) {
				data[v] = '\0';
				*(char **)member = (char *)data;
			} else {
				((ProtobufCBinaryData *)member)->data = data;
				((ProtobufCBinaryData *)member)->len =
					(size_t)v;
			}
		}
		p += v;
		f++;
	}
	return m;
}
