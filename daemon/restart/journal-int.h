/* SPDX-License-Identifier: MIT */
/*
 * The journal's insides (journal.h), shared by its files: journal.c the
 * writer, journal-slots.c the slots, journal-read.c the reader,
 * journal-crc.c the CRC, journal-index.c the index of live records.
 *
 * The memfd: a JOURNAL_HDR_SIZE header (struct jhdr), then records, each
 * a struct jrec and its bytes padded to 8 with zeros. A record's word is
 * 0 until the record is whole; then JREC_PART (a transaction goes on) or
 * JREC_COMMIT. One CRC covers a record from its length to its padding's
 * end: whole 8-byte words, so the hot path's CRC is one loop of SSE 4.2
 * crc32 instructions with no tail; a block of slots (JREC_SLOTS) is a
 * struct jslot array whose CRC covers the header alone.
 * The file grows by ftruncate(); the mapping reserves JOURNAL_SIZE_MAX
 * once, so records never move.
 */
#ifndef RDMAB_JOURNAL_INT_H
#define RDMAB_JOURNAL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/restart/journal-index.h"

/* Its kinds and bounds are journal.h's, which includes nothing of this:
 * the journal's files include journal.h first. */
#ifndef RDMAB_JOURNAL_H
#error "include daemon/restart/journal.h before journal-int.h"
#endif

#define JHDR_MAGIC 0x4c4e524a42414d44ull /* "DMABJRNL" */
#define JOURNAL_HDR_SIZE 4096u
#define JOURNAL_GROW (1u << 20)
#define JREC_PART 0x5452415042524a52ull	  /* "RJRBPART" */
#define JREC_COMMIT 0x54494d4d4f43424aull /* "JBCOMMIT" */
#define JREC_DEL 1u
/* A block of slots, written in place (journal.h). */
#define JREC_SLOTS 2u
/* The complete word: every record of the snapshot is in. */
#define JHDR_COMPLETE 0x4554454c504d4f43ull
/* ... or a write failed: what follows the last record is missing, so no
 * reader may take the state. */
#define JHDR_BROKEN 0x4e454b4f52424d44ull

struct jhdr {
	uint64_t magic;
	uint32_t format;
	uint32_t hdr_size;
	uint64_t gen;
	/* JHDR_COMPLETE once sealed, stored last. */
	uint64_t complete;
};

struct jrec {
	uint64_t word;
	/* CRC-32C from len to the end of the padded bytes. */
	uint32_t crc;
	uint32_t zero;
	uint32_t len;
	uint16_t kind;
	uint16_t flags;
	uint64_t key;
};

_Static_assert(sizeof(struct jrec) == 32, "jrec is 32 bytes");

/* A slot: its ids, then the word stored last: the count in the low half,
 * the check (slot_word()) in the high one; 0: free. */
struct jslot {
	uint64_t id[3];
	uint64_t word;
};

_Static_assert(sizeof(struct jslot) == 32, "jslot is 32 bytes");
#define JSLOT_BLOCK_LEN (JOURNAL_SLOT_BLOCK * sizeof(struct jslot))
_Static_assert(offsetof(struct jrec, len) == 16, "the CRC starts aligned");
_Static_assert(JOURNAL_KIND_MAX <= UINT16_MAX, "a kind fits its field");

struct journal {
	int fd;
	uint8_t *map;
	size_t size; /* the file's */
	size_t tail; /* where the next record goes */
	uint64_t gen;
	struct jmap live;
	unsigned int depth;
	/* Records of the open transaction: the last one gets the commit. */
	struct jrec *last_part;
	/* The tail's record when it is a put of a key that had no live
	 * record, committed alone: journal_del() of that key takes it back
	 * (journal_retract()). NULL otherwise. */
	struct jrec *solo_new;
	/* Its entry's slot in @live when it was written: the del finds it
	 * there unless the table moved it since (checked). */
	size_t solo_slot;
	bool broken;
	/* The failure that broke it: -errno. */
	int err;
	/* The slots: each block's first, by number (NULL: a number no
	 * block has), and the free ones' numbers, a stack. */
	struct jslot **blk;
	uint32_t n_blk;
	uint32_t *free_slots;
	uint32_t n_free;
	size_t base; /* the last compaction's size */
	/* Past this tail the log wants a compaction: @on_full is told. */
	size_t full_at;
	void (*on_full)(void *arg);
	void *full_arg;
};

struct journal_view {
	uint64_t gen;
	uint8_t *buf; /* the copy the records point into */
	struct jmap live;
	/* The live records by kind, each kind's in key order: kind k's are
	 * byk[at[k]] to byk[at[k + 1]]. Made once when the view is read, so
	 * that a walk of one kind does not walk the whole table (a restore
	 * walks a dozen kinds: that was 16 walks of a table of 262,144
	 * slots and a sort per walk). */
	struct journal_rec *byk;
	size_t at[JOURNAL_KIND_MAX + 2];
};

/* The CRC-32C of @n bytes, @n a multiple of 8 (a record's): by SSE 4.2
 * once journal_crc_init() found it (journal-crc.c). */
extern uint32_t (*journal_crc_words)(const void *p, size_t n);
void journal_crc_init(void);

static inline size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* The bytes follow the header, padded: one range, no tail; a block of
 * slots changes in place, its slots have their own check. */
static inline uint32_t rec_crc(const struct jrec *r)
{
	size_t hdr = sizeof(*r) - offsetof(struct jrec, len);

	return journal_crc_words(
		&r->len, r->flags & JREC_SLOTS ? hdr : hdr + pad8(r->len));
}

/* journal.c: @j broken by a write that failed with @err (-errno), said
 * in its header; returns @err. */
int journal_break(struct journal *j, int err);
int journal_append_block(struct journal *j, uint64_t key, const uint8_t *data,
			 struct jslot **ret);
/* journal-read.c: @why set as printf() would; returns -EBADMSG. */
int journal_why(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * journal-slots.c: block @key of slots at the tail, committed alone, its
 * slots as @data's (NULL: all free; a compaction copies them as they
 * are); its free ones go on the stack. 0 or -errno, @j broken.
 */
int journal_slot_block_put(struct journal *j, uint64_t key,
			   const uint8_t *data);
void journal_slots_free(struct journal *j);
/* Every held slot's word of @v checked: 0, or -EBADMSG and why. */
int journal_slots_check(const struct journal_view *v, char *why,
			size_t why_len);

#endif
