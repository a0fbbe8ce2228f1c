// SPDX-License-Identifier: MIT
/* Records by a 64-bit key (keysort.h): LSD radix, 8 bits a pass. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/util/keysort.h"

static unsigned int digit(const unsigned char *rec, size_t key_off,
			  unsigned int shift)
{
	uint64_t k;

	memcpy(&k, rec + key_off, sizeof(k));
	return (unsigned int)(k >> shift) & 0xff;
}

/* One record's move: a call of memcpy() per record of a size known only
 * at run time was a third of a sort; the sizes sorted are these two. */
static inline void move(unsigned char *to, const unsigned char *from,
			size_t size)
{
	if (size == 16)
		memcpy(to, from, 16);
	else if (size == 32)
		memcpy(to, from, 32);
	else
		memcpy(to, from, size);
}

int keysort(void *v, size_t n, size_t size, size_t key_off)
{
	unsigned char *tmp, *src = v, *dst;
	/* Every byte's counts from one read of the keys, where a read per
	 * byte was eight. */
	size_t(*count)[256];

	if (n < 2)
		return 0;
	count = calloc(8, sizeof(*count));
	tmp = malloc(n * size);
	if (!tmp || !count) {
		free(count);
		free(tmp);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t k;

		memcpy(&k, src + i * size + key_off, sizeof(k));
		for (unsigned int b = 0; b < 8; b++)
			count[b][(k >> (8 * b)) & 0xff]++;
	}
	dst = tmp;
	for (unsigned int b = 0, shift = 0; b < 8; b++, shift += 8) {
		size_t at = 0;

		if (count[b][digit(src, key_off, shift)] == n)
			continue;
		for (unsigned int d = 0; d < 256; d++) {
			size_t c = count[b][d];

			count[b][d] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			move(dst + size * count[b][digit(src + i * size,
							 key_off, shift)]++,
			     src + i * size, size);
		dst = src;
		src = src == (unsigned char *)v ? tmp : v;
	}
	if (src != (unsigned char *)v)
		memcpy(v, src, n * size);
	free(tmp);
	free(count);
	return 0;
}
