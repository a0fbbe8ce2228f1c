/* SPDX-License-Identifier: MIT */
/*
 * The journal's index of live records by (kind, key): the writer's (what
 * a compaction copies, what a del finds) and a view's (what a restore
 * reads). What a record's write does to it is inline here, for the
 * journal's files alone (journal-int.h); growing, sizing and freeing it
 * are journal-index.c's.
 */
#ifndef RDMAB_JOURNAL_INDEX_H
#define RDMAB_JOURNAL_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One live record: where its bytes are. */
struct jent {
	uint64_t key;
	uint32_t kind; /* 0: empty slot */
	uint32_t len;
	const uint8_t *data;
};

/* Open addressing on (kind, key), linear probing, deletion by backward
 * shift so that no tombstone lengthens a probe. */
struct jmap {
	struct jent *slot;
	size_t cap, n;
};

/* The hot path's helpers are inlined: a call's saves and restores were a
 * third of what a record cost (callgrind). */
#define JOURNAL_HOT static inline __attribute__((always_inline))

static inline size_t jmap_hash(uint32_t kind, uint64_t key, size_t cap)
{
	uint64_t h = (key ^ ((uint64_t)kind << 56)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 17) & (cap - 1);
}

JOURNAL_HOT struct jent *jmap_find(const struct jmap *m, uint32_t kind,
				   uint64_t key)
{
	if (!m->cap)
		return NULL;
	for (size_t i = jmap_hash(kind, key, m->cap);;
	     i = (i + 1) & (m->cap - 1)) {
		struct jent *e = &m->slot[i];

		if (!e->kind)
			return NULL;
		if (e->kind == kind && e->key == key)
			return e;
	}
}

/* Twice the room (64 entries at first): 0 or -ENOMEM, the table as it
 * was. */
int jmap_grow(struct jmap *m);

/* Make room first, so that the set that follows cannot fail. */
JOURNAL_HOT int jmap_reserve(struct jmap *m)
{
	if ((m->n + 1) * 4 > m->cap * 3)
		return jmap_grow(m);
	return 0;
}

/* Room for @n entries at half load, made before they come (0 or
 * -ENOMEM): entries that come in another table's slot order (a compacted
 * state, read back or copied) into a table that grows as they come
 * cluster into probes of thousands (a restore's read was 200 M
 * instructions of them). */
int jmap_presize(struct jmap *m, size_t n);

/* After jmap_reserve(): (@kind, @key)'s entry, made if new (then
 * *@made is set), in one walk of its probe sequence. */
JOURNAL_HOT struct jent *jmap_set(struct jmap *m, uint32_t kind, uint64_t key,
				  const uint8_t *data, uint32_t len, bool *made)
{
	struct jent *e;

	for (size_t i = jmap_hash(kind, key, m->cap);;
	     i = (i + 1) & (m->cap - 1)) {
		e = &m->slot[i];
		if (!e->kind) {
			e->kind = kind;
			e->key = key;
			m->n++;
			*made = true;
			break;
		}
		if (e->kind == kind && e->key == key)
			break;
	}
	e->data = data;
	e->len = len;
	return e;
}

/* Remove @e, an entry of @m. */
JOURNAL_HOT void jmap_del_at(struct jmap *m, struct jent *e)
{
	size_t i = (size_t)(e - m->slot), j;

	m->slot[i].kind = 0;
	m->n--;
	/* Backward shift: pull up every entry of the cluster that the hole
	 * now cuts off from its home. */
	for (j = (i + 1) & (m->cap - 1); m->slot[j].kind;
	     j = (j + 1) & (m->cap - 1)) {
		size_t home =
			jmap_hash(m->slot[j].kind, m->slot[j].key, m->cap);

		if (((j - home) & (m->cap - 1)) >= ((j - i) & (m->cap - 1))) {
			m->slot[i] = m->slot[j];
			m->slot[j].kind = 0;
			i = j;
		}
	}
}

/* Remove (@kind, @key) if it is in @m. */
void jmap_del(struct jmap *m, uint32_t kind, uint64_t key);
void jmap_free(struct jmap *m);

#endif
