// SPDX-License-Identifier: MIT
/*
 * A StateObject record read by hand (restore-object.h): protobuf's wire
 * format, three messages deep (Object, SoftObject, ObjAttr), without an
 * allocation, with protobuf-c's answers to what is not well formed; and
 * the fields others own of it (struct rec_fields) written by number.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "daemon/restart/restore-object.h"
#include "proto/state.pb-c.h"

enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2, WT_FIXED32 = 5 };

struct rd {
	const uint8_t *p, *end;
};

/* The 7-bit groups of the 8 bytes of @w (little-endian), side by side:
 * 56 bits. */
static inline uint64_t gather7(uint64_t w)
{
	w &= 0x7f7f7f7f7f7f7f7full;
	w = (w & 0x007f007f007f007full) | (w & 0x7f007f007f007f00ull) >> 1;
	w = (w & 0x00003fff00003fffull) | (w & 0x3fff00003fff0000ull) >> 2;
	return (w & 0x000000000fffffffull) | (w & 0x0fffffff00000000ull) >> 4;
}

/* A varint of at most 10 bytes (bits past 64 are lost). */
static inline int rd_varint(struct rd *r, uint64_t *v)
{
	uint64_t x = 0;

	if (r->p < r->end && *r->p < 0x80) {
		*v = *r->p++;
		return 0;
	}
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* Ten bytes left or more: the first eight at once, where a byte at
	 * a time was most of a record's reading (its ids are keyed, 9 or
	 * 10 bytes; its times 6 or 7). */
	if (r->end - r->p >= 10) {
		const uint8_t *p = r->p;
		uint64_t w, stop;
		unsigned int n;

		memcpy(&w, p, sizeof(w));
		stop = ~w & 0x8080808080808080ull;
		if (stop) {
			n = (unsigned int)__builtin_ctzll(stop) / 8 + 1;
			if (n < 8)
				w &= (1ull << (8 * n)) - 1;
			x = gather7(w);
		} else if (p[8] < 0x80) {
			n = 9;
			x = gather7(w) | (uint64_t)p[8] << 56;
		} else if (p[9] < 0x80) {
			/* 7 * 9 = 63: the tenth byte's low bit only. */
			n = 10;
			x = gather7(w) | (uint64_t)(p[8] & 0x7f) << 56 |
			    (uint64_t)p[9] << 63;
		} else {
			return -EBADMSG;
		}
		r->p = p + n;
		*v = x;
		return 0;
	}
#endif
	for (unsigned int i = 0; i < 10 && r->p < r->end; i++) {
		uint8_t b = *r->p++;

		/* 7 * 9 = 63: the tenth byte's low bit only. */
		x |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -EBADMSG;
}

/* A tag or a length: at most 5 bytes, its low 32 bits kept; @skip bits
 * of the first byte are the wire type's. */
static int rd_small(struct rd *r, unsigned int skip, uint32_t *v,
		    unsigned int *low)
{
	uint32_t x = 0;

	for (unsigned int i = 0; i < 5 && r->p < r->end; i++) {
		uint8_t b = *r->p++;

		if (i == 0) {
			*low = b & ((1u << skip) - 1);
			x = (uint32_t)(b & 0x7f) >> skip;
		} else {
			x |= (uint32_t)(b & 0x7f) << (7 * i - skip);
		}
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -EBADMSG;
}

/* A field's tag: its number (not 0) and wire type; the wire types no
 * field has are refused with the field. */
static inline int rd_tag(struct rd *r, uint32_t *field, unsigned int *wt)
{
	/* Fields 1-15: one byte, nearly every tag of a record; 16-2047
	 * (the soft spec's 104 and 105): two. */
	if (r->p < r->end && *r->p < 0x80) {
		*field = *r->p >> 3;
		*wt = *r->p++ & 7;
	} else if (r->end - r->p >= 2 && r->p[1] < 0x80) {
		*field = (uint32_t)(r->p[0] & 0x7f) >> 3 | (uint32_t)r->p[1]
								   << 4;
		*wt = r->p[0] & 7;
		r->p += 2;
	} else if (rd_small(r, 3, field, wt) < 0) {
		return -EBADMSG;
	}
	return *field ? 0 : -EBADMSG;
}

/* A field of wire type @wt, its bytes as a reader of their own (a
 * length-delimited field's without its length; *@all with it). */
static int rd_field(struct rd *r, unsigned int wt, struct rd *sub,
		    struct rd *all)
{
	uint32_t n;
	unsigned int none;
	uint64_t v;

	all->p = r->p;
	switch (wt) {
	case WT_VARINT:
		if (rd_varint(r, &v) < 0)
			return -EBADMSG;
		break;
	case WT_FIXED64:
	case WT_FIXED32: {
		size_t k = wt == WT_FIXED64 ? 8 : 4;

		if ((size_t)(r->end - r->p) < k)
			return -EBADMSG;
		r->p += k;
		break;
	}
	case WT_LEN:
		/* A length below 128 (every one of a record): one byte. */
		if (r->p < r->end && *r->p < 0x80)
			n = *r->p++;
		else if (rd_small(r, 0, &n, &none) < 0)
			return -EBADMSG;
		if (n > (uint64_t)(r->end - r->p))
			return -EBADMSG;
		sub->p = r->p;
		sub->end = r->p + n;
		r->p += n;
		break;
	default:
		/* Groups (3, 4) and what is no wire type (6, 7). */
		return -EBADMSG;
	}
	all->end = r->p;
	return 0;
}

/* A uint32 or uint64 field: a varint, or the record is refused. */
static int rd_uint(struct rd *r, unsigned int wt, uint64_t *v)
{
	return wt == WT_VARINT ? rd_varint(r, v) : -EBADMSG;
}

/* A bool field: any wire type, true when any of its bytes (a length's
 * too) has a bit set but the continuation bit, as protobuf-c reads it. */
static int rd_bool(struct rd *r, unsigned int wt, bool *v)
{
	struct rd sub, all;

	if (rd_field(r, wt, &sub, &all) < 0)
		return -EBADMSG;
	*v = false;
	for (const uint8_t *p = all.p; p < all.end; p++)
		*v |= (*p & 0x7f) != 0;
	return 0;
}

/* An unknown field, passed over. */
static int rd_skip(struct rd *r, unsigned int wt)
{
	struct rd sub, all;

	return rd_field(r, wt, &sub, &all);
}

/* The uint64 field @field of message @d that the reader does not own:
 * kept by number in @f for its owner (a family, the device); any other
 * field @d does not name as one is passed over, as unknown. */
static int rd_other(struct rd *r, unsigned int wt,
		    const ProtobufCMessageDescriptor *d, uint32_t field,
		    struct rec_fields *f)
{
	const ProtobufCFieldDescriptor *fd =
		protobuf_c_message_descriptor_get_field(d, field);
	uint64_t v;

	if (!fd || fd->type != PROTOBUF_C_TYPE_UINT64 ||
	    fd->label != PROTOBUF_C_LABEL_NONE)
		return rd_skip(r, wt);
	if (rd_uint(r, wt, &v) < 0 || rec_field_set(f, field, v) < 0)
		return -EBADMSG;
	return 0;
}

int state_fields_put(ProtobufCMessage *m, const struct rec_fields *f)
{
	const ProtobufCFieldDescriptor *fd[REC_FIELDS_MAX];

	/* All or nothing: a record with some of them would say less than
	 * its owners asked. */
	for (unsigned int i = 0; i < f->n; i++) {
		fd[i] = protobuf_c_message_descriptor_get_field(m->descriptor,
								f->number[i]);
		if (!fd[i] || fd[i]->type != PROTOBUF_C_TYPE_UINT64 ||
		    fd[i]->label != PROTOBUF_C_LABEL_NONE)
			return -ENOENT;
	}
	for (unsigned int i = 0; i < f->n; i++)
		memcpy((char *)m + fd[i]->offset, &f->value[i],
		       sizeof(uint64_t));
	return 0;
}

static int attr_decode(struct rd *r, Rdmab__ObjAttr *a)
{
	while (r->p < r->end) {
		uint32_t *u32 = NULL;
		unsigned int wt;
		uint32_t field;
		uint64_t v;

		if (rd_tag(r, &field, &wt) < 0)
			return -EBADMSG;
		switch (field) {
		case 1:
			u32 = &a->cqe;
			break;
		case 2:
			u32 = &a->comp_vector;
			break;
		case 3:
			u32 = &a->qp_type;
			break;
		case 4:
			u32 = &a->max_send_wr;
			break;
		case 5:
			u32 = &a->max_recv_wr;
			break;
		case 6:
			u32 = &a->max_send_sge;
			break;
		case 7:
			u32 = &a->max_recv_sge;
			break;
		case 8:
			u32 = &a->max_inline_data;
			break;
		case 9:
			u32 = &a->max_wr;
			break;
		case 10:
			u32 = &a->max_sge;
			break;
		case 11:
			u32 = &a->srq_limit;
			break;
		case 12:
		case 13:
			if (rd_uint(r, wt, &v) < 0)
				return -EBADMSG;
			if (field == 12)
				a->mr_addr = v;
			else
				a->mr_length = v;
			continue;
		case 14:
			u32 = &a->mr_access;
			break;
		case 15:
			u32 = &a->sq_sig_all;
			break;
		case 40:
			u32 = &a->xrc_qp_num;
			break;
		default:
			if (rd_skip(r, wt) < 0)
				return -EBADMSG;
			continue;
		}
		if (rd_uint(r, wt, &v) < 0)
			return -EBADMSG;
		*u32 = (uint32_t)v;
	}
	return 0;
}

static void use_add(struct state_obj *o, uint64_t v)
{
	if (o->soft.n_uses < OBJ_MAX_USES)
		o->soft.uses[o->soft.n_uses] = (uint32_t)v;
	o->soft.n_uses++;
}

/* One SoftObject's bytes into @o->soft. A message given twice is merged
 * as protobuf-c merges it: the latter's scalars (0 when it has none),
 * the repeated field concatenated, the sub-message merged; an ObjAttr
 * has only scalars, so the latter's is the whole of it. */
static int soft_decode(struct rd *r, struct state_obj *o)
{
	o->soft.used_mask = 0;
	o->soft.device.n = 0;
	o->soft.num = 0;
	o->soft.key = 0;
	while (r->p < r->end) {
		struct rd sub, all;
		unsigned int wt;
		uint32_t field;
		uint64_t v;

		if (rd_tag(r, &field, &wt) < 0)
			return -EBADMSG;
		switch (field) {
		case 1:
			/* Repeated: packed (proto3's way) or one by one. */
			if (wt != WT_LEN) {
				if (rd_uint(r, wt, &v) < 0)
					return -EBADMSG;
				use_add(o, v);
				break;
			}
			if (rd_field(r, wt, &sub, &all) < 0)
				return -EBADMSG;
			while (sub.p < sub.end) {
				if (rd_varint(&sub, &v) < 0)
					return -EBADMSG;
				use_add(o, v);
			}
			break;
		case 2:
			if (rd_uint(r, wt, &v) < 0)
				return -EBADMSG;
			o->soft.used_mask = (uint32_t)v;
			break;
		case 3:
			if (wt != WT_LEN || rd_field(r, wt, &sub, &all) < 0)
				return -EBADMSG;
			rdmab__obj_attr__init(&o->soft.attr);
			if (attr_decode(&sub, &o->soft.attr) < 0)
				return -EBADMSG;
			o->soft.has_attr = true;
			break;
		case 104:
		case 105:
			if (rd_uint(r, wt, &v) < 0)
				return -EBADMSG;
			if (field == 104)
				o->soft.num = (uint32_t)v;
			else
				o->soft.key = (uint32_t)v;
			break;
		default:
			if (rd_other(r, wt,
				     &rdmab__state__soft_object__descriptor,
				     field, &o->soft.device) < 0)
				return -EBADMSG;
		}
	}
	return 0;
}

int state_obj_decode(const uint8_t *p, size_t len, struct state_obj *ret)
{
	struct rd r = { p, p + len };
	struct state_obj o;

	memset(&o, 0, sizeof(o));
	rdmab__obj_attr__init(&o.soft.attr);
	while (r.p < r.end) {
		struct rd sub, all;
		unsigned int wt;
		uint32_t field;
		uint64_t v = 0;
		bool b = false;

		if (rd_tag(&r, &field, &wt) < 0)
			return -EBADMSG;
		switch (field) {
		case 1:
		case 2:
		case 3:
		case 4:
		case 12:
			if (rd_uint(&r, wt, &v) < 0)
				return -EBADMSG;
			break;
		case 5:
		case 6:
		case 7:
		case 8:
		case 9:
			if (rd_bool(&r, wt, &b) < 0)
				return -EBADMSG;
			break;
		case 13:
			if (wt != WT_LEN || rd_field(&r, wt, &sub, &all) < 0 ||
			    soft_decode(&sub, &o) < 0)
				return -EBADMSG;
			o.has_soft = true;
			continue;
		default:
			if (rd_other(&r, wt, &rdmab__state__object__descriptor,
				     field, &o.family) < 0)
				return -EBADMSG;
			continue;
		}
		switch (field) {
		case 1:
			o.owner = v;
			break;
		case 2:
			o.ctx_id = v;
			break;
		case 3:
			o.kind = (uint32_t)v;
			break;
		case 4:
			o.handle = (uint32_t)v;
			break;
		case 5:
			o.intent = b;
			break;
		case 6:
			o.made_here = b;
			break;
		case 7:
			o.window_made = b;
			break;
		case 8:
			o.stuck = b;
			break;
		case 9:
			o.family_owned = b;
			break;
		case 12:
			o.born_usec = v;
			break;
		}
	}
	*ret = o;
	return 0;
}
