// SPDX-License-Identifier: MIT
/*
 * Flat messages by hand: a message whose fields are all proto3 singular
 * scalars (uint32, int32, enum, bool, uint64), strings or bytes, with no
 * oneof, no repeated field and no submessage, which is what most request
 * and reply bodies are (OpenContextRequest, CloseContextReply, ...).
 * protobuf-c's generic walkers spend a few hundred instructions on each
 * even when it has one field; these spend a few dozen.
 *
 * The rules are protobuf-c's, as envelope.c's are: packing writes its
 * bytes (fields in number order, zero values and empty strings and bytes
 * left out, a negative int32 or enum as ten bytes, a bool as 0 or 1).
 * Decoding takes fields in number order, each at most once, with the wire
 * type of their type and varints short enough that protobuf-c reads them
 * the same way; for anything else it fails, and the caller hands the
 * packet to protobuf-c (envelope.c decodes the whole envelope again).
 */
#include "config.h"

#include <string.h>

#include "proto/flat.h"
#include "proto/varint.h"

bool wire_flat(const ProtobufCMessageDescriptor *desc)
{
	for (unsigned int i = 0; i < desc->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &desc->fields[i];

		if (f->label != PROTOBUF_C_LABEL_NONE ||
		    (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
			return false;
		switch (f->type) {
		case PROTOBUF_C_TYPE_UINT32:
		case PROTOBUF_C_TYPE_INT32:
		case PROTOBUF_C_TYPE_ENUM:
		case PROTOBUF_C_TYPE_BOOL:
		case PROTOBUF_C_TYPE_UINT64:
		case PROTOBUF_C_TYPE_STRING:
		case PROTOBUF_C_TYPE_BYTES:
			break;
		default:
			return false;
		}
	}
	return true;
}

/* The value of field @f of @m as it goes out in a varint, or the length
 * of its string or bytes; 0 when protobuf-c leaves it out. */
static uint64_t flat_value(const ProtobufCFieldDescriptor *f,
			   const ProtobufCMessage *m)
{
	const char *member = (const char *)m + f->offset;
	const char *s;

	switch (f->type) {
	case PROTOBUF_C_TYPE_UINT32:
		return *(const uint32_t *)member;
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_ENUM:
		/* Sign-extended: ten bytes when negative. */
		return (uint64_t)(int64_t)*(const int32_t *)member;
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

size_t wire_flat_size(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *desc = m->descriptor;
	size_t n = 0;

	for (unsigned int i = 0; i < desc->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &desc->fields[i];
		uint64_t v = flat_value(f, m);

		if (!v)
			continue;
		n += varint_size(varint_tag(f->id, 0)) + varint_size(v);
		if (flat_is_len(f))
			n += v;
	}
	return n;
}

uint8_t *wire_flat_pack(const ProtobufCMessage *m, uint8_t *p)
{
	const ProtobufCMessageDescriptor *desc = m->descriptor;

	for (unsigned int i = 0; i < desc->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &desc->fields[i];
		const char *member = (const char *)m + f->offset;
		uint64_t v = flat_value(f, m);

		if (!v)
			continue;
		p = varint_put(p, varint_tag(f->id, flat_is_len(f) ?
							    VARINT_WT_LEN :
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

ProtobufCMessage *wire_flat_unpack(const ProtobufCMessageDescriptor *desc,
				   ProtobufCAllocator *a, size_t len,
				   const uint8_t *buf)
{
	const uint8_t *p = buf, *end = buf + len;
	const ProtobufCFieldDescriptor *f = desc->fields;
	const ProtobufCFieldDescriptor *fend = f + desc->n_fields;
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
		if (!flat_is_len(f)) {
			if ((tag & 7) != VARINT_WT_VARINT ||
			    varint_get(&p, end, VARINT_MAX_U64, &v) < 0 ||
			    flat_set_varint(member, f->type, v,
					    (unsigned int)(p - start)) < 0)
				return NULL;
		} else {
			uint8_t *data = NULL;
			bool str = f->type == PROTOBUF_C_TYPE_STRING;

			if ((tag & 7) != VARINT_WT_LEN ||
			    varint_get(&p, end, VARINT_MAX_LEN, &v) < 0 ||
			    v > (uint64_t)(end - p))
				return NULL;
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
			p += v;
		}
		f++;
	}
	return m;
}
