/* SPDX-License-Identifier: MIT */
/*
 * A state record's protobuf bytes in one pass over its message's
 * descriptor (record-pack.c), for journal_put(): protobuf-c's
 * get_packed_size() and pack() walk a message twice, a call per field,
 * and were 97 % of what the journal cost an object's create (a
 * StateObject with its spec and attributes: 3,957 of 4,105 instructions).
 *
 * The bytes are protobuf-c's own for the same message (fields in the
 * descriptor's order, proto3's zeros left out, repeated scalars packed as
 * the descriptor says): tests/check_journal.c compares the two on every
 * message of proto/state.proto. What it does not write (a proto2 label,
 * a oneof, a type state.proto has no field of, unknown fields kept from
 * an unpack) it refuses, and the caller packs with protobuf-c.
 */
#ifndef RDMAB_RECORD_PACK_H
#define RDMAB_RECORD_PACK_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/*
 * @m's bytes in the @cap bytes at @buf: their length, -ENOSPC when they do
 * not fit, or -ENOTSUP for a message it does not write (see above). @buf
 * holds garbage after a failure.
 */
long record_pack(const ProtobufCMessage *m, uint8_t *buf, size_t cap);

#endif
