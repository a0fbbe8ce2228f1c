/* SPDX-License-Identifier: MIT */
/*
 * What the fuzz targets share with their replay driver (replay.c) and the
 * seed generator (gen_seeds.c): the libFuzzer entry points, and the input
 * format of the dispatcher target.
 *
 * A dispatcher input is a session: one header byte, then records
 * separated by FUZZ_SEP. A record is a control byte and the bytes of one
 * SOCK_SEQPACKET packet (possibly empty); empty records are skipped.
 */
#ifndef RDMAB_FUZZ_H
#define RDMAB_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The target's name: its corpus is tests/fuzz/corpus/NAME. */
extern const char fuzz_target_name[];

/*
 * The target's input for one raw packet of tests/corpus: @name follows
 * that corpus's conventions (".hello." sends a hello first, ".fdsN." sends
 * N descriptors with the packet). Returns the input's length, or -ENOMEM;
 * *ret is malloc'd.
 */
int fuzz_wrap_packet(const char *name, const uint8_t *pkt, size_t len,
		     uint8_t **ret);

/* Between records; a packet that contains it is split there, which is
 * just another input. */
#define FUZZ_SEP "\xa7RB\xa7"
#define FUZZ_SEP_LEN 4

/*
 * Header byte: bits 0-1 and 2-3 are the identities of connection slots 0
 * and 1 (FUZZ_ID_*), as the daemon reads them from SO_PEERCRED and
 * SO_PEERGROUPS; bit 4 shrinks the daemon's send buffer to the kernel's
 * minimum, so that replies queue in the daemon after a few packets.
 */
#define FUZZ_HDR_ID(h, slot) (((h) >> (2 * (slot))) & 3)
#define FUZZ_HDR_SMALL_SNDBUF 0x10

enum fuzz_identity {
	/* uid 0: an administrator. */
	FUZZ_ID_ROOT,
	/* uid 1000: a user named in [domain fz]. */
	FUZZ_ID_USER,
	/* uid 65534 in the admin group. */
	FUZZ_ID_ADMIN_GROUP,
	/* uid 2000 in the group of [domain fz2], which has no room for
	 * objects and one client. */
	FUZZ_ID_GROUP_MEMBER,
};

/*
 * Control byte: bits 0-3 descriptors sent with the packet (up to 15, more
 * than the daemon takes), bit 4 the connection slot; bit 5 sends the next
 * record before the daemon runs; bit 6 leaves the slot's replies unread
 * until a later record of the slot without it, or the end of the input;
 * bit 7 closes the client's end after the packet. A
 * record for a slot whose connection is closed, by either end, opens a new
 * one.
 */
#define FUZZ_CTL_NFDS(c) ((c)&0x0f)
#define FUZZ_CTL_SLOT(c) (((c) >> 4) & 1)
#define FUZZ_CTL_BATCH 0x20
#define FUZZ_CTL_NO_READ 0x40
#define FUZZ_CTL_CLOSE 0x80
/* All bits: no packet; the daemon reloads its configuration (SIGHUP),
 * switching between two files (fuzz_dispatch.c); the end of the input
 * switches back. */
#define FUZZ_CTL_RELOAD 0xff

#endif
