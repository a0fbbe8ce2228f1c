/* SPDX-License-Identifier: MIT */
/*
 * Protobuf varints for the hand codecs (envelope.c, flat.c). Inline: they
 * are most of what those codecs do.
 */
#ifndef RDMAB_VARINT_H
#define RDMAB_VARINT_H

#include <stddef.h>
#include <stdint.h>

/* Wire types. */
#define VARINT_WT_VARINT 0
#define VARINT_WT_LEN 2

/* The longest varints read by hand. protobuf-c reads these lengths
 * exactly (a longer one goes to it): tags of fields below 2048, 32-bit
 * values below 2^28, 64-bit values below 2^63, lengths below 2 MiB. */
#define VARINT_MAX_TAG 2
#define VARINT_MAX_U32 4
#define VARINT_MAX_U64 9
#define VARINT_MAX_LEN 3

static inline uint64_t varint_tag(uint32_t field, unsigned int wire_type)
{
	return ((uint64_t)field << 3) | wire_type;
}

static inline size_t varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static inline uint8_t *varint_put(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* A varint of at most @max bytes at *@p, which moves past it; -1 when it
 * is longer or cut short. */
static inline __attribute__((always_inline)) int varint_get(const uint8_t **p,
							    const uint8_t *end,
							    unsigned int max,
							    uint64_t *ret)
{
	const uint8_t *q = *p, *stop;
	unsigned int shift = 0;
	uint64_t v = 0;

	/* Tags, versions, small lengths. */
	if (q < end && *q < 0x80) {
		*ret = *q;
		*p = q + 1;
		return 0;
	}
	stop = (size_t)(end - q) > max ? q + max : end;
	while (q < stop) {
		uint8_t b = *q++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (b < 0x80) {
			*p = q;
			*ret = v;
			return 0;
		}
		shift += 7;
	}
	return -1;
}

#endif
