/* SPDX-License-Identifier: MIT */
/*
 * Flat messages (proto3 singular scalars, strings, bytes, packed repeated
 * uint64 and one level of such submessages) packed
 * and decoded by hand, with protobuf-c's bytes and results (flat.c).
 * Internal to proto/.
 */
#ifndef RDMAB_FLAT_H
#define RDMAB_FLAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/* Whether messages of @desc are flat. */
bool wire_flat(const ProtobufCMessageDescriptor *desc);
/* What flat @m packs to (it must have no unknown fields), or
 * WIRE_FLAT_NOT when a submessage has some: protobuf-c packs it. */
#define WIRE_FLAT_NOT SIZE_MAX
size_t wire_flat_size(const ProtobufCMessage *m);
/* Pack flat @m at @p, which has room for wire_flat_size(); returns the
 * end. */
uint8_t *wire_flat_pack(const ProtobufCMessage *m, uint8_t *p);
/*
 * Pack flat @m at @p in one walk, sizing nothing first, the bytes
 * wire_flat_pack() writes; the end, or NULL (what is at @p undefined)
 * when it might not fit before @end or a submessage has unknown fields:
 * the caller sizes it then (wire_flat_size()).
 */
uint8_t *wire_flat_pack_in(const ProtobufCMessage *m, uint8_t *p,
			   const uint8_t *end);
/*
 * Decode a flat message of @desc from @len bytes at @buf into memory of
 * @a, as protobuf-c would; NULL for a packet of a shape this does not
 * read (left to protobuf-c) or when @a is out of memory.
 */
ProtobufCMessage *wire_flat_unpack(const ProtobufCMessageDescriptor *desc,
				   ProtobufCAllocator *a, size_t len,
				   const uint8_t *buf);

#endif
