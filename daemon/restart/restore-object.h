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
 */
#ifndef RDMAB_RESTORE_OBJECT_H
#define RDMAB_RESTORE_OBJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/device/device.h"
#include "proto/rdmabroker.pb-c.h"

struct state_obj {
	uint64_t owner, ctx_id, dm_id, xrcd_obj, born_usec;
	uint32_t kind, handle;
	bool intent, made_here, window_made, stuck, family_owned;
	/* Field 13, the soft device's spec: present or not. */
	bool has_soft;
	struct {
		/* The first OBJ_MAX_USES of them; n_uses counts all. */
		uint32_t uses[OBJ_MAX_USES];
		size_t n_uses;
		uint32_t used_mask;
		uint64_t xrcd_ino;
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

#endif
