// SPDX-License-Identifier: MIT
/*
 * The journal's slots (journal.h): a session's hold on a context, 32
 * bytes written in place in a block record, taken, counted and freed
 * without a record of the log; and what a reader checks of them and
 * walks.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/restart/journal.h"
#include "daemon/restart/journal-int.h"

/*
 * A held slot's word: its count in the low half, a check of its ids and
 * count in the high one. Not a CRC: a multiply-xor mix, a few inline
 * instructions where a CRC's call was half of what a hold cost. It is
 * for what is not a kill (a kill never tears the word): random bytes
 * pass it with a 2^-32 chance, and every single byte flipped in 300
 * random slots was caught (2.4 million tries), but it has no CRC's
 * guarantee for short bursts.
 */
static inline uint64_t slot_word(uint64_t a, uint64_t b, uint64_t c, uint32_t n)
{
	uint64_t h = (a ^ (b * 0x9e3779b97f4a7c15ull) ^
		      (c * 0xc2b2ae3d27d4eb4full) ^ n) *
		     0xff51afd7ed558ccdull;

	return (h & ~(uint64_t)UINT32_MAX) | n;
}

int journal_slot_block_put(struct journal *j, uint64_t key, const uint8_t *data)
{
	struct jslot *s;
	int err;

	if (key >= JOURNAL_SLOT_BLOCKS_MAX)
		return journal_break(j, -ENOSPC);
	if (key >= j->n_blk) {
		uint32_t n = (uint32_t)key + 1;
		struct jslot **blk = realloc(j->blk, n * sizeof(*blk));
		uint32_t *fr;

		if (!blk)
			return journal_break(j, -ENOMEM);
		memset(blk + j->n_blk, 0, (n - j->n_blk) * sizeof(*blk));
		j->blk = blk;
		fr = realloc(j->free_slots,
			     (size_t)n * JOURNAL_SLOT_BLOCK * sizeof(*fr));
		if (!fr)
			return journal_break(j, -ENOMEM);
		j->free_slots = fr;
		j->n_blk = n;
	}
	if (j->blk[key])
		return journal_break(j, -EEXIST);
	err = journal_append_block(j, key, data, &s);
	if (err < 0)
		return err;
	j->blk[key] = s;
	/* The lowest first: the stack's top. */
	for (uint32_t i = JOURNAL_SLOT_BLOCK; i-- > 0;)
		if (!s[i].word)
			j->free_slots[j->n_free++] =
				(uint32_t)key * JOURNAL_SLOT_BLOCK + i + 1;
	return 0;
}

JOURNAL_HOT struct jslot *slot_at(const struct journal *j, uint32_t slot)
{
	uint32_t b = (slot - 1) / JOURNAL_SLOT_BLOCK;

	if (!slot || b >= j->n_blk || !j->blk[b])
		return NULL;
	return &j->blk[b][(slot - 1) % JOURNAL_SLOT_BLOCK];
}

/* journal_slot_add() where its fast path stops: a broken journal, a
 * count of 0, no free slot (a block is added, then the fast path). Out
 * of line, so that the fast path saves no register. */
static __attribute__((noinline)) int slot_add_slow(struct journal *j,
						   uint64_t a, uint64_t b,
						   uint64_t c, uint32_t n,
						   uint32_t *ret)
{
	int err;

	if (j->broken)
		return -EIO;
	if (!n)
		return journal_break(j, -EINVAL);
	err = journal_slot_block_put(j, j->n_blk, NULL);
	if (err < 0)
		return err;
	return journal_slot_add(j, a, b, c, n, ret);
}

int journal_slot_add(struct journal *j, uint64_t a, uint64_t b, uint64_t c,
		     uint32_t n, uint32_t *ret)
{
	struct jslot *s;
	uint32_t slot;

	if (!j) {
		*ret = 0;
		return 0;
	}
	if (j->broken || !n || !j->n_free)
		return slot_add_slow(j, a, b, c, n, ret);
	/* Its word is 0 and its block there: free slots only are on the
	 * stack. */
	slot = j->free_slots[--j->n_free];
	s = &j->blk[(slot - 1) / JOURNAL_SLOT_BLOCK]
		   [(slot - 1) % JOURNAL_SLOT_BLOCK];
	s->id[0] = a;
	s->id[1] = b;
	s->id[2] = c;
	__atomic_store_n(&s->word, slot_word(a, b, c, n), __ATOMIC_RELEASE);
	*ret = slot;
	return 0;
}

int journal_slot_count(struct journal *j, uint32_t slot, uint32_t n)
{
	struct jslot *s;

	if (!j || !slot)
		return 0;
	if (j->broken)
		return -EIO;
	s = slot_at(j, slot);
	if (!s || !s->word || !n)
		return journal_break(j, -EINVAL);
	__atomic_store_n(&s->word, slot_word(s->id[0], s->id[1], s->id[2], n),
			 __ATOMIC_RELEASE);
	return 0;
}

void journal_slot_free(struct journal *j, uint32_t slot)
{
	struct jslot *s = j ? slot_at(j, slot) : NULL;

	/* Freed twice, it would be handed out twice. */
	if (!s || !s->word)
		return;
	__atomic_store_n(&s->word, 0, __ATOMIC_RELEASE);
	j->free_slots[j->n_free++] = slot;
}

void journal_slots_free(struct journal *j)
{
	free(j->blk);
	free(j->free_slots);
}

/* --- the reader's ----------------------------------------------------- */

/* A kill leaves a slot's old word or its new one, so a word that fails
 * its check is no kill's. */
int journal_slots_check(const struct journal_view *v, char *why, size_t why_len)
{
	for (size_t i = 0; i < v->live.cap; i++) {
		const struct jent *e = &v->live.slot[i];
		const struct jslot *s = (const struct jslot *)e->data;

		if (e->kind != JOURNAL_SLOTS)
			continue;
		for (uint32_t k = 0; k < JOURNAL_SLOT_BLOCK; k++)
			if (s[k].word &&
			    (!(uint32_t)s[k].word ||
			     s[k].word != slot_word(s[k].id[0], s[k].id[1],
						    s[k].id[2],
						    (uint32_t)s[k].word)))
				return journal_why(
					why, why_len,
					"slot %u of block %" PRIu64
					" of the state fails its check",
					k, e->key);
	}
	return 0;
}

int journal_each_slot(const struct journal_view *v,
		      int (*fn)(void *arg, const struct journal_slot *s),
		      void *arg)
{
	size_t n = journal_view_count(v, JOURNAL_SLOTS);
	const struct journal_rec *b = n ? v->byk + v->at[JOURNAL_SLOTS] : NULL;

	for (size_t i = 0; i < n; i++) {
		const struct jslot *s = (const struct jslot *)b[i].data;

		for (uint32_t k = 0; k < JOURNAL_SLOT_BLOCK; k++) {
			struct journal_slot out;
			int ret;

			if (!s[k].word)
				continue;
			memcpy(out.id, s[k].id, sizeof(out.id));
			out.n = (uint32_t)s[k].word;
			ret = fn(arg, &out);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}
