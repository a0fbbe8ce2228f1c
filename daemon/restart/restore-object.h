/* SPDX-License-Identifier: MIT */
/*
 * A StateObject record (proto/state.proto, JOURNAL_OBJECT) read by hand
 * for the restore: a state holds one per object (100,000 of them), and
 * protobuf-c's unpack, with its allocations and their frees, was half of
 * a restore's time. The wire format is protobuf's, read as protobuf-c
 * reads it (tests/check_journal.c compares the two on every record it
 * makes and on their mutations): fields in any order, a repeated field
 * packed or not, a field given twice as the last one (a message merged),
 * unknown fields skipped, and refused: a truncated varint or length, a
 * length past the end, a known field of the wrong wire type, a group, a
 * wire type beyond 5, field number 0.
 *
 * The fields it reads by name are the registry's; the families' fields of
 * Object and the device's of SoftObject, all uint64, it reads by number,
 * as the messages' descriptors list them, for their owners to interpret
 * (struct rec_fields).
 */
#ifndef RDMAB_RESTORE_OBJECT_H
#define RDMAB_RESTORE_OBJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/device/device.h"
#include "daemon/util/rec-fields.h"
#include "proto/rdmabroker.pb-c.h"

struct state_obj {
	uint64_t owner, ctx_id, born_usec;
	uint32_t kind, handle;
	bool intent, made_here, window_made, stuck, family_owned;
	/* The families' fields (their hooks' save and restore,
	 * objects.h): every uint64 field of Object the registry does not
	 * own, by number. */
	struct rec_fields family;
	/* Field 13, the soft device's spec: present or not. */
	bool has_soft;
	struct {
		/* The first OBJ_MAX_USES of them; n_uses counts all. */
		uint32_t uses[OBJ_MAX_USES];
		size_t n_uses;
		uint32_t used_mask;
		/* The spec's fields the device keeps by number
		 * (obj_spec_fields_save()): every uint64 field of
		 * SoftObject not read here. */
		struct rec_fields device;
		/* Fields 104, 105: its QP/SRQ number, its MR key. */
		uint32_t num, key;
		bool has_attr;
		/* Scalars only: nothing to free. */
		Rdmab__ObjAttr attr;
	} soft;
};

/* Read the @len bytes at @p into @ret: 0, or -EBADMSG for what
 * protobuf-c would not unpack as a StateObject. */
int state_obj_decode(const uint8_t *p, size_t len, struct state_obj *ret);

/* Write @f into message @m, each value at the uint64 field of its number
 * (what state_obj_decode() reads back into family or soft.device): 0, or
 * -ENOENT for a number @m has no such field of (nothing written then). */
int state_fields_put(ProtobufCMessage *m, const struct rec_fields *f);

#endif
