/* SPDX-License-Identifier: MIT */
/*
 * The state journal (issue 25 item 2): the daemon's records (domains,
 * contexts, sessions, objects, the families' state) as keyed protobuf-c
 * messages (proto/state.proto) in a memfd that the fd store keeps, so
 * that a daemon started after a kill at any instruction reads a state the
 * old one was in.
 *
 * Scheme: an append-only log with commit marks, not two generations. A
 * change costs one record (a few dozen bytes), where a second generation
 * would rewrite the whole state (100,000 objects) per request. Each
 * record is a header (length, kind, key, CRC-32C) then its bytes; its
 * header's commit word is stored last, after the bytes and the CRC, with
 * one aligned 8-byte store. A SIGKILL loses no store already made to a
 * shared mapping (there is no disk under a memfd), so what a reader sees
 * is a prefix of the stores: it applies records up to the last committed
 * one and ignores the rest. Several records that must go together
 * (journal_begin()/journal_commit()) carry the commit mark on the last
 * one only. The CRC catches what is not a kill (a bug, a corrupt
 * memfd): a bad record refuses the whole state.
 *
 * One record is taken back rather than followed: the del of a key whose
 * only record is the log's last, written outside a transaction (a
 * context's hold, opened then closed). Its word is zeroed first, then its
 * bytes, and the tail moves back: a reader sees the log before the put,
 * the state after the del.
 *
 * Compaction, bounded: when the log passes twice what the last compaction
 * wrote plus JOURNAL_SLACK, the daemon copies the live records (the
 * journal indexes them: no family is asked) into a fresh memfd of the
 * next generation, stores it ("rb.state.<gen>"), then removes the old
 * one. A reader handed both takes the newest complete one (its header's
 * "complete" word is stored last); so the log holds at most about 2x the
 * live state.
 *
 * Slots (format 3): what changes at nearly every request and stands for
 * nothing else (a session's hold on a context, made at an open and gone
 * at its close) is no record of the log but a fixed slot of 32 bytes in
 * a block record (JOURNAL_SLOTS), written in place: three ids, then one
 * aligned 8-byte word, stored last, holding a count (at least 1) and a
 * check of the ids and the count (journal-slots.c's slot_word()); 0 is
 * a free slot. A kill leaves the
 * word as it was or as it is, so the slot is its old value or its new
 * one; the check catches what is not a kill. The block's own CRC covers
 * its header only. A slot's store shows at once, so a slot goes with no
 * transaction: its user writes it where its change is whole (after the
 * records it names, before they go). Blocks are added when no slot is
 * free and never removed: the log holds as many slots as were ever held
 * at once (a few per session), which a compaction copies as they are.
 *
 * Versioning: the file header carries JOURNAL_FORMAT; a record's bytes
 * are a protobuf message, so a newer daemon reads an older one's records
 * (missing fields read as their defaults) and an older daemon refuses a
 * format it does not know. This daemon reads formats
 * JOURNAL_FORMAT_OLDEST to JOURNAL_FORMAT (2: no slots, its holds are
 * JOURNAL_SESSION_HOLD records).
 *
 * journal_put() and friends take a NULL journal (restart off, or exiting
 * for the next daemon) and then do nothing.
 */
#ifndef RDMAB_JOURNAL_H
#define RDMAB_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#define JOURNAL_FORMAT 3
#define JOURNAL_FORMAT_OLDEST 2
/* Bytes the log may grow past twice the last compaction's. */
#define JOURNAL_SLACK (1u << 20)
/* The largest record, and the largest memfd. */
#define JOURNAL_RECORD_MAX (64u * 1024)
#define JOURNAL_SIZE_MAX (1ull << 30)

/*
 * What a record is; the key is its id among those of its kind. The
 * registry's kinds are restart.c's; each family owns a range of 16 and
 * writes and reads only its own (R2: DM, XRCD, RSS). A kind is never
 * renumbered: records outlive the binary.
 */
enum journal_kind {
	/* Key 0: the counters (StateCounters: generation, restarts, the
	 * id spaces' counts and keys). */
	JOURNAL_COUNTERS = 1,
	/* Key: kept.c's hash of the domain's name: what a domain keeps
	 * beyond what its sessions remake (its rekey count). */
	JOURNAL_DOMAIN = 2,
	/* Key: the context id. */
	JOURNAL_CONTEXT = 3,
	/* Key: the client id. */
	JOURNAL_SESSION = 4,
	/* Key: the object id (registered objects and open intents). */
	JOURNAL_OBJECT = 5,
	/* Key: the owner's client id: a detached owner (session ended,
	 * process alive). */
	JOURNAL_OWNER = 6,
	/* 7: reserved, never written. It was named for the soft device's
	 * records of a context, which live in the context's own memfd
	 * (rb.ctx.<id>) instead; left unused so that no state an older
	 * daemon could have read means two things. */
	/* Key: a hold's own (SessionHold: a session's hold on a context):
	 * format 2's; from format 3 on, holds are JOURNAL_SLOTS' slots. */
	JOURNAL_SESSION_HOLD = 8,
	/* Key: the object id: its JOURNAL_OBJECT record names an object
	 * that stays in its context with no record of the registry. */
	JOURNAL_UNNAMED = 9,
	/* Key: the block's number (from 0, each one more): a block of
	 * JOURNAL_SLOT_BLOCK slots written in place (journal_slot_*()):
	 * the sessions' holds on contexts (restart.c: ids client, context,
	 * import; count the opens). Format 3 on. */
	JOURNAL_SLOTS = 10,
	/* 16 and up: the families' own kinds, JOURNAL_FAMILY_KINDS from
	 * each family's journal_first (family.h; families_init() checks
	 * that no two ranges meet). */
	JOURNAL_FAMILY_FIRST = 16,
	JOURNAL_FAMILY_KINDS = 16,
	JOURNAL_KIND_MAX = 255,
};

/* Slots per block, and blocks at most (4 M slots). */
#define JOURNAL_SLOT_BLOCK 64u
#define JOURNAL_SLOT_BLOCKS_MAX (1u << 16)

struct journal;

/* A slot's value as a reader found it: ids fixed while it is held, and
 * its count (at least 1). */
struct journal_slot {
	uint64_t id[3];
	uint32_t n;
};

/* One live record as a reader found it: @data (of @len bytes) points into
 * the reader's buffer, valid until journal_view_free(). */
struct journal_rec {
	uint32_t kind;
	uint64_t key;
	const uint8_t *data;
	size_t len;
};

/* The state a reader made of a journal: the last committed record of
 * each (kind, key), tombstones applied. */
struct journal_view;

/*
 * A fresh journal of generation @gen in a new memfd (CLOEXEC, sealed
 * against shrinking). 0 or -errno.
 */
int journal_create(uint64_t gen, struct journal **ret);
/*
 * A fresh journal of generation @gen holding @v's live records (NULL:
 * none), sealed: what a restore goes on writing, since the old one may
 * end in a transaction the kill cut, which must stay unapplied.
 */
int journal_from_view(const struct journal_view *v, uint64_t gen,
		      struct journal **ret);
/*
 * The compaction: a fresh journal of @j's generation + 1 holding @j's
 * live records, sealed. The caller stores it, removes @j from the store
 * and frees @j, in that order.
 */
int journal_compact(const struct journal *j, struct journal **ret);
void journal_free(struct journal *j);
/*
 * @j holds live records only (a restore wrote each it adopted once, as a
 * compaction copies them): the growth that asks for the next compaction
 * counts from here, so that no compaction copies the state again just
 * after the restore made it.
 */
void journal_rebase(struct journal *j);
/* Room in @j's index for @n more records, made at once (a restore knows
 * how many come): 0 or -ENOMEM. */
int journal_reserve(struct journal *j, size_t n);
/* Its memfd (owned by the journal) and generation. */
int journal_fd(const struct journal *j);
uint64_t journal_gen(const struct journal *j);
/* Bytes in the log, and whether it should be compacted now. */
size_t journal_used(const struct journal *j);
bool journal_wants_compaction(const struct journal *j);
/*
 * Call @fn(@arg) from each write that leaves the log past its compaction
 * bound, maybe inside a transaction: @fn only schedules the compaction,
 * which asks journal_wants_compaction() when it runs. journal_compact()'s
 * journal keeps the hook.
 */
void journal_on_full(struct journal *j, void (*fn)(void *arg), void *arg);

/*
 * Record @msg as the state of (@kind, @key), or its end (journal_del()).
 * 0, -E2BIG for a record over JOURNAL_RECORD_MAX, -ENOSPC when the memfd
 * cannot grow (-EINVAL for a kind out of range). A failure leaves the
 * records as they were and marks the journal broken (journal_broken(),
 * and in the memfd's header, which journal_read() then refuses): the
 * state is no longer complete, so the restart closes every fd and starts
 * clean rather than adopt half of it.
 */
int journal_put(struct journal *j, uint32_t kind, uint64_t key,
		const ProtobufCMessage *msg);
int journal_del(struct journal *j, uint32_t kind, uint64_t key);
/* journal_put() of a message packed already (@len bytes at @data): for a
 * record written at every request, where protobuf-c's sizing and packing
 * would be most of the cost. */
int journal_put_packed(struct journal *j, uint32_t kind, uint64_t key,
		       const uint8_t *data, size_t len);
/* Records between begin and commit are committed together; begin nests
 * (only the outermost commit marks). */
void journal_begin(struct journal *j);
void journal_commit(struct journal *j);
bool journal_broken(const struct journal *j);
/* What broke @j, the first failure's -errno; 0 while it is not broken. */
int journal_error(const struct journal *j);

/*
 * Slots (see above). journal_slot_add() takes a free slot (adding a block
 * record when none is), writes its ids @a, @b, @c and count @n, the word
 * last, and gives its
 * number (never 0) in *@ret: 0 or journal_put()'s errors. A NULL journal
 * gives slot 0, which the others take and do nothing with.
 * journal_slot_count() changes a held slot's count, its ids as added: one
 * store. journal_slot_free() frees it: one store; a free slot stays
 * free. @n at least 1 (-EINVAL, as a slot not held). Not inside a
 * transaction: the store shows at once.
 */
int journal_slot_add(struct journal *j, uint64_t a, uint64_t b, uint64_t c,
		     uint32_t n, uint32_t *ret);
int journal_slot_count(struct journal *j, uint32_t slot, uint32_t n);
void journal_slot_free(struct journal *j, uint32_t slot);

/*
 * The reader: the state in @len bytes at @buf (a journal's memfd, mapped).
 * 0 with *@ret set, or -EBADMSG with the reason in @why: bad magic,
 * unknown format, a record that runs past the end or whose CRC is wrong,
 * a kind beyond JOURNAL_KIND_MAX, a held slot that fails its check.
 * Never reads outside @buf. The view
 * copies what it keeps.
 */
int journal_read(const uint8_t *buf, size_t len, struct journal_view **ret,
		 char *why, size_t why_len);
void journal_view_free(struct journal_view *v);
uint64_t journal_view_gen(const struct journal_view *v);
/* Live records of every kind (0 for no view). */
size_t journal_view_size(const struct journal_view *v);
/* Live records of @kind. */
size_t journal_view_count(const struct journal_view *v, uint32_t kind);
/*
 * Call @fn for each live record of @kind, in key order; a negative return
 * stops the walk and is returned.
 */
int journal_each(const struct journal_view *v, uint32_t kind,
		 int (*fn)(void *arg, const struct journal_rec *r), void *arg);
/* The record (@kind, @key) in @ret: 0, or -ENOENT. */
int journal_find(const struct journal_view *v, uint32_t kind, uint64_t key,
		 struct journal_rec *ret);
/* The writer's live record (@kind, @key) in @ret (its bytes valid until
 * the next write): 0, or -ENOENT. */
int journal_get(const struct journal *j, uint32_t kind, uint64_t key,
		struct journal_rec *ret);
/* Call @fn for each held slot of @v, by block and place; a negative
 * return stops the walk and is returned. */
int journal_each_slot(const struct journal_view *v,
		      int (*fn)(void *arg, const struct journal_slot *s),
		      void *arg);
/* journal_read() of the file @fd (borrowed): a stored state. */
int journal_read_fd(int fd, struct journal_view **ret, char *why,
		    size_t why_len);
/* The records' CRC-32C of @n bytes, as the journal computes it (@hw: by
 * whole words where @n is a multiple of 8, as a record's) or by the table
 * alone: tests check they agree. */
uint32_t journal_crc32c(const void *p, size_t n, bool hw);

#endif
