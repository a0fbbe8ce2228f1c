/* SPDX-License-Identifier: MIT */
/*
 * Ids that carry no count (issue 23 item 5): object, client, DM and context
 * ids are what a member sees of other domains' activity if they are plain
 * counters (its next id moves by what they made). Each kind has its own
 * counter, never reused during the daemon's life, and shows it through a
 * keyed permutation of [1, 2^48): unique, never 0, below 2^53 (a JSON
 * consumer's integers), 15 digits at most (typed for rdmabrokerctl
 * evict), and, to whoever lacks the key, telling nothing of the counter
 * nor of the order ids were handed out in.
 *
 * The permutation is a Feistel network of ID_ROUNDS rounds over two
 * 24-bit halves, each round's function SipHash-2-4 under the kind's
 * 128-bit key (drawn at start); 0 is walked past (cycle walking), so the
 * ids stay a permutation of the counter values.
 */
#ifndef RDMAB_IDS_H
#define RDMAB_IDS_H

#include <stdbool.h>
#include <stdint.h>

#define ID_BITS 48
#define ID_ROUNDS 8

struct id_space {
	/* Ids handed out so far. */
	uint64_t count;
	uint64_t key[2];
	/* The counter itself, for the fuzzer's reproducible inputs only:
	 * id_space_init() sets it false. */
	bool plain;
};

/* Draw @s's key from the kernel's pool (waiting for it at early boot)
 * and start its counter. 0 or -errno. */
int id_space_init(struct id_space *s);

/* The next id of @s: 0 or -ENOSPC once 2^48 - 1 have been handed out
 * (not in a daemon's life: a million a second for nine years). */
int id_next(struct id_space *s, uint64_t *ret);

/* The id the @n-th of @s is (1 <= @n < 2^48); for tests. */
uint64_t id_of(const struct id_space *s, uint64_t n);

#endif
