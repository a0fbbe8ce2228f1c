/* SPDX-License-Identifier: MIT */
/*
 * The Toeplitz hash RSS uses (Microsoft's RSS specification; mlx5's
 * IBV_RX_HASH_FUNC_TOEPLITZ): bit i of the input, counted from the most
 * significant bit of its first byte, adds the 32 key bits starting at key
 * bit i to the result. The input is the source address, destination
 * address, source port and destination port, in network order, of what
 * the hash fields select.
 *
 * toeplitz_tables_init() precomputes, for each input byte position and
 * byte value, what that byte adds, so that hashing costs one load and one
 * xor per input byte instead of a loop over bits.
 */
#ifndef RDMAB_TOEPLITZ_H
#define RDMAB_TOEPLITZ_H

#include <stddef.h>
#include <stdint.h>

#define TOEPLITZ_KEY_LEN 40
/* The longest input: two IPv6 addresses and two ports. */
#define TOEPLITZ_MAX_INPUT 36

struct toeplitz_tables {
	uint32_t t[TOEPLITZ_MAX_INPUT][256];
};

/* The hash bit by bit, straight from the definition: for tests and the
 * benchmark. @len is at most TOEPLITZ_MAX_INPUT. */
uint32_t toeplitz_hash_bits(const uint8_t key[TOEPLITZ_KEY_LEN],
			    const uint8_t *in, size_t len);

void toeplitz_tables_init(struct toeplitz_tables *t,
			  const uint8_t key[TOEPLITZ_KEY_LEN]);

static inline uint32_t toeplitz_hash(const struct toeplitz_tables *t,
				     const uint8_t *in, size_t len)
{
	uint32_t h = 0;

	for (size_t i = 0; i < len; i++)
		h ^= t->t[i][in[i]];
	return h;
}

#endif
