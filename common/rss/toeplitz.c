// SPDX-License-Identifier: MIT
/* The Toeplitz hash (toeplitz.h). */
#include "config.h"

#include <string.h>

#include "common/rss/toeplitz.h"

/* The 32 key bits that start at bit @bit of @key (bit 0: the most
 * significant of key[0]); the key is long enough for every input bit. */
static uint32_t key_window(const uint8_t *key, unsigned int bit)
{
	unsigned int byte = bit / 8, shift = bit % 8;
	uint64_t w = 0;

	for (unsigned int i = 0; i < 5; i++)
		w = w << 8 | (byte + i < TOEPLITZ_KEY_LEN ? key[byte + i] : 0);
	return (uint32_t)(w >> (8 - shift));
}

uint32_t toeplitz_hash_bits(const uint8_t key[TOEPLITZ_KEY_LEN],
			    const uint8_t *in, size_t len)
{
	uint32_t h = 0;

	for (size_t i = 0; i < len * 8; i++)
		if (in[i / 8] & (0x80u >> (i % 8)))
			h ^= key_window(key, (unsigned int)i);
	return h;
}

void toeplitz_tables_init(struct toeplitz_tables *t,
			  const uint8_t key[TOEPLITZ_KEY_LEN])
{
	for (unsigned int pos = 0; pos < TOEPLITZ_MAX_INPUT; pos++) {
		uint32_t w[8];

		for (unsigned int b = 0; b < 8; b++)
			w[b] = key_window(key, pos * 8 + b);
		/* Each value is a smaller one plus its lowest set bit. */
		t->t[pos][0] = 0;
		for (unsigned int v = 1; v < 256; v++) {
			unsigned int low = (unsigned int)__builtin_ctz(v);

			t->t[pos][v] = t->t[pos][v & (v - 1)] ^ w[7 - low];
		}
	}
}
