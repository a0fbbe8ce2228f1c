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

int keysort(void *v, size_t n, size_t size, size_t key_off)
{
	unsigned char *tmp, *src = v, *dst;

	if (n < 2)
		return 0;
	tmp = malloc(n * size);
	if (!tmp)
		return -ENOMEM;
	dst = tmp;
	for (unsigned int shift = 0; shift < 64; shift += 8) {
		size_t count[256] = { 0 }, at = 0;

		for (size_t i = 0; i < n; i++)
			count[digit(src + i * size, key_off, shift)]++;
		if (count[digit(src, key_off, shift)] == n)
			continue;
		for (unsigned int b = 0; b < 256; b++) {
			size_t c = count[b];

			count[b] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			memcpy(dst + size * count[digit(src + i * size, key_off,
							shift)]++,
			       src + i * size, size);
		dst = src;
		src = src == (unsigned char *)v ? tmp : v;
	}
	if (src != (unsigned char *)v)
		memcpy(v, src, n * size);
	free(tmp);
	return 0;
}
