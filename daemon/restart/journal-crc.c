// SPDX-License-Identifier: MIT
/*
 * The journal's CRC-32C (Castagnoli): bytewise from a table made once,
 * or by SSE 4.2's crc32 instruction where the CPU has it.
 */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "daemon/restart/journal.h"
#include "daemon/restart/journal-int.h"

static uint32_t crc_table[256];

static uint32_t crc32c_sw(uint32_t crc, const void *p, size_t n)
{
	const uint8_t *b = p;

	crc = ~crc;
	while (n--)
		crc = crc_table[(crc ^ *b++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

#if defined(__x86_64__)
/* The same CRC by SSE 4.2's crc32 instruction, 8 bytes at a time: a
 * record's CRC is most of what the journal costs a request. */
__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t crc, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t c = ~crc;

	for (; n >= 8; n -= 8, b += 8) {
		uint64_t v;

		memcpy(&v, b, sizeof(v));
		c = __builtin_ia32_crc32di(c, v);
	}
	/* The tail by 4, 2 and 1 bytes: a hold's record is a few dozen
	 * bytes, where a byte loop was a third of the CRC. */
	if (n & 4) {
		uint32_t v;

		memcpy(&v, b, sizeof(v));
		c = __builtin_ia32_crc32si((uint32_t)c, v);
		b += 4;
	}
	if (n & 2) {
		uint16_t v;

		memcpy(&v, b, sizeof(v));
		c = __builtin_ia32_crc32hi((uint32_t)c, v);
		b += 2;
	}
	if (n & 1)
		c = __builtin_ia32_crc32qi((uint32_t)c, *b);
	return ~(uint32_t)c;
}

/* A record's CRC: whole words only (its padding is in). */
__attribute__((target("sse4.2"))) static uint32_t crc32c_words_hw(const void *p,
								  size_t n)
{
	const uint8_t *b = p, *end = b + n;
	uint64_t c = 0xffffffffu;

	for (; b < end; b += 8) {
		uint64_t v;

		memcpy(&v, b, sizeof(v));
		c = __builtin_ia32_crc32di(c, v);
	}
	return ~(uint32_t)c;
}
#endif

static uint32_t crc32c_words_sw(const void *p, size_t n)
{
	return crc32c_sw(0, p, n);
}

static uint32_t (*crc32c)(uint32_t crc, const void *p, size_t n) = crc32c_sw;
uint32_t (*journal_crc_words)(const void *p, size_t n) = crc32c_words_sw;

void journal_crc_init(void)
{
	if (crc_table[1])
		return;
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[i] = c;
	}
#if defined(__x86_64__)
	if (__builtin_cpu_supports("sse4.2")) {
		crc32c = crc32c_hw;
		journal_crc_words = crc32c_words_hw;
	}
#endif
}

uint32_t journal_crc32c(const void *p, size_t n, bool hw)
{
	journal_crc_init();
	if (!hw)
		return crc32c_sw(0, p, n);
	return n % 8 ? crc32c(0, p, n) : journal_crc_words(p, n);
}
