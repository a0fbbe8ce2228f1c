// SPDX-License-Identifier: MIT
/*
 * libFuzzer target "state": the bytes of a stored state memfd, read as a
 * restarting daemon reads it (journal_read(), then the registry's check
 * that each record unpacks, restart_state_check()). Beyond the
 * sanitizers: an object record the check reads by hand reads the same
 * with protobuf-c; a state that reads is carried into a new generation
 * (journal_from_view(), what a restore's journal starts from when a
 * compaction copies) and reads back with the same records.
 *
 * The families' records (DM, XRCD, RSS: family.h's journal_msgs) are
 * unpacked as the restore's check does before it adopts anything, and
 * one that unpacks packs into bytes that unpack again.
 *
 * A mutated record almost never passes its CRC, so each input is read
 * twice: as it is (the refusals), and with every record's CRC made right
 * (crc_fix()), so that mutations reach the decoders behind it.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/families/family.h"
#include "daemon/restart/journal.h"
#include "daemon/util/log.h"
#include "daemon/restart/restart.h"
#include "daemon/restart/restore-object.h"
#include "proto/state.pb-c.h"
#include "tests/fuzz/fuzz.h"

const char fuzz_target_name[] = "state";

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_state: %s\n", what);
	abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	log_max_priority = LOG_CRIT;
	return 0;
}

static uint8_t *image(const struct journal *j, size_t *len)
{
	off_t end = lseek(journal_fd(j), 0, SEEK_END);
	uint8_t *buf = malloc(end > 0 ? (size_t)end : 1);

	if (!buf || end <= 0 ||
	    pread(journal_fd(j), buf, (size_t)end, 0) != end)
		fail("cannot read a journal back");
	*len = (size_t)end;
	return buf;
}

/* The hand reader's value of @d's SoftObject field @name, which it keeps
 * by number for the device (struct rec_fields). */
static uint64_t soft_field(const struct state_obj *d, const char *name)
{
	const ProtobufCFieldDescriptor *fd =
		protobuf_c_message_descriptor_get_field_by_name(
			&rdmab__state__soft_object__descriptor, name);

	return rec_field_get(&d->soft.device, fd->id);
}

/* An object record the check read by hand (restore-object.h) is one
 * protobuf-c reads too, as the same object. */
static int obj_agrees(void *arg, const struct journal_rec *r,
		      const struct state_obj *d)
{
	Rdmab__State__Object *m =
		rdmab__state__object__unpack(NULL, r->len, r->data);

	(void)arg;
	if (!m)
		fail("an object record read by hand that protobuf-c refuses");
	if (m->owner != d->owner || m->ctx_id != d->ctx_id ||
	    m->kind != d->kind || m->handle != d->handle ||
	    !m->soft != !d->has_soft ||
	    (m->soft &&
	     (m->soft->num != d->soft.num || m->soft->key != d->soft.key ||
	      m->soft->xrcd_ino != soft_field(d, "xrcd_ino"))))
		fail("an object record read otherwise by hand");
	rdmab__state__object__free_unpacked(m, NULL);
	return 0;
}

/* A family's record (@arg its message): unpacks, or is refused; what
 * unpacks packs again into bytes that unpack. */
static int family_rec(void *arg, const struct journal_rec *r)
{
	const ProtobufCMessageDescriptor *d = arg;
	ProtobufCMessage *m =
		protobuf_c_message_unpack(d, NULL, r->len, r->data);
	ProtobufCMessage *again;
	uint8_t *buf;
	size_t len;

	if (!m)
		return 0;
	/* protobuf-c keeps fields it does not know as they came and packs
	 * them back unchecked (a wire type it would not read again): no
	 * writer of the daemon's packs a record it read, so only known
	 * fields must round-trip. */
	if (m->n_unknown_fields) {
		protobuf_c_message_free_unpacked(m, NULL);
		return 0;
	}
	len = protobuf_c_message_get_packed_size(m);
	buf = malloc(len ? len : 1);
	if (!buf || protobuf_c_message_pack(m, buf) != len)
		fail("a family record that unpacks does not pack");
	again = protobuf_c_message_unpack(d, NULL, len, buf);
	if (!again)
		fail("a family record packed again does not unpack");
	protobuf_c_message_free_unpacked(again, NULL);
	protobuf_c_message_free_unpacked(m, NULL);
	free(buf);
	return 0;
}

static void families_check(const struct journal_view *v)
{
	for (unsigned int i = 0; i < FAMILY_COUNT; i++) {
		const struct family *f = families[i];

		for (unsigned int k = 0; k < f->n_journal_msgs; k++)
			journal_each(v, f->journal_first + k, family_rec,
				     (void *)f->journal_msgs[k]);
	}
}

/* CRC-32C (Castagnoli), as journal-crc.c's: bitwise, the harness is not
 * the hot path. */
static uint32_t crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = ~0u;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
	}
	return ~c;
}

/*
 * Every whole record of @b gets its right CRC (journal-int.h: a 32-byte
 * header whose CRC at byte 8 covers byte 16 to the end of the record's
 * bytes padded to 8, or to the header's end for a block of slots, flag 2
 * at byte 22), up to the first the reader would stop at. True if one
 * changed.
 */
static bool crc_fix(uint8_t *b, size_t len)
{
	const uint64_t part = 0x5452415042524a52ull;
	const uint64_t commit = 0x54494d4d4f43424aull;
	bool changed = false;

	for (size_t off = 4096; off + 32 <= len;) {
		uint64_t word;
		uint32_t n, crc;
		uint16_t flags;
		size_t pad;

		memcpy(&word, b + off, 8);
		memcpy(&n, b + off + 16, 4);
		memcpy(&flags, b + off + 22, 2);
		pad = ((size_t)n + 7) & ~(size_t)7;
		if ((word != part && word != commit) ||
		    n > JOURNAL_RECORD_MAX || pad > len - off - 32)
			break;
		crc = crc32c(b + off + 16, flags & 2 ? 16 : 16 + pad);
		if (memcmp(b + off + 8, &crc, 4)) {
			memcpy(b + off + 8, &crc, 4);
			changed = true;
		}
		off += 32 + pad;
	}
	return changed;
}

static void read_one(const uint8_t *data, size_t size)
{
	struct journal_view *v = NULL, *again = NULL;
	struct journal *j;
	char why[512];
	uint8_t *buf;
	size_t len;

	if (journal_read(data, size, &v, why, sizeof(why)) < 0) {
		if (v || !*why)
			fail("a refused state without its reason");
		return;
	}
	(void)restart_state_check(v, obj_agrees, NULL, why, sizeof(why));
	families_check(v);
	if (journal_from_view(v, journal_view_gen(v) + 1, &j) < 0)
		fail("cannot carry a state over");
	buf = image(j, &len);
	if (journal_read(buf, len, &again, why, sizeof(why)) < 0)
		fail("a carried state does not read");
	for (uint32_t k = 1; k <= JOURNAL_KIND_MAX; k++)
		if (journal_view_count(v, k) != journal_view_count(again, k))
			fail("a carried state has other records");
	journal_view_free(again);
	free(buf);
	journal_free(j);
	journal_view_free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *fixed = malloc(size ? size : 1);

	read_one(data, size);
	if (!fixed)
		fail("out of memory");
	if (size)
		memcpy(fixed, data, size);
	if (crc_fix(fixed, size))
		read_one(fixed, size);
	free(fixed);
	return 0;
}

int fuzz_wrap_packet(const char *name, const uint8_t *pkt, size_t len,
		     uint8_t **ret)
{
	uint8_t *p = malloc(len ? len : 1);

	if (!p)
		return -ENOMEM;
	memcpy(p, pkt, len);
	*ret = p;
	return (int)len;
}
