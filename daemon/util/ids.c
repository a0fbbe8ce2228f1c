// SPDX-License-Identifier: MIT
/* Ids that carry no count (ids.h). */
#include "config.h"

#include <errno.h>
#include <sys/random.h>

#include "daemon/util/ids.h"
#include "daemon/util/log.h"

#define ID_HALF_BITS (ID_BITS / 2)
#define ID_HALF_MASK ((UINT64_C(1) << ID_HALF_BITS) - 1)
#define ID_MASK ((UINT64_C(1) << ID_BITS) - 1)

static uint64_t rotl(uint64_t x, unsigned int b)
{
	return (x << b) | (x >> (64 - b));
}

#define SIPROUND(v0, v1, v2, v3)                                               \
	do {                                                                   \
		v0 += v1;                                                      \
		v1 = rotl(v1, 13);                                             \
		v1 ^= v0;                                                      \
		v0 = rotl(v0, 32);                                             \
		v2 += v3;                                                      \
		v3 = rotl(v3, 16);                                             \
		v3 ^= v2;                                                      \
		v0 += v3;                                                      \
		v3 = rotl(v3, 21);                                             \
		v3 ^= v0;                                                      \
		v2 += v1;                                                      \
		v1 = rotl(v1, 17);                                             \
		v1 ^= v2;                                                      \
		v2 = rotl(v2, 32);                                             \
	} while (0)

/* SipHash-2-4 of the 8 bytes of @m (little-endian) under @k. */
static uint64_t siphash_u64(const uint64_t k[2], uint64_t m)
{
	uint64_t v0 = k[0] ^ UINT64_C(0x736f6d6570736575);
	uint64_t v1 = k[1] ^ UINT64_C(0x646f72616e646f6d);
	uint64_t v2 = k[0] ^ UINT64_C(0x6c7967656e657261);
	uint64_t v3 = k[1] ^ UINT64_C(0x7465646279746573);
	uint64_t b = UINT64_C(8) << 56;

	v3 ^= m;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	v0 ^= m;
	v3 ^= b;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	for (int i = 0; i < 4; i++)
		SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

/* One pass of the Feistel network over [0, 2^48). */
static uint64_t id_feistel(const uint64_t key[2], uint64_t x)
{
	uint64_t l = x >> ID_HALF_BITS, r = x & ID_HALF_MASK;

	for (uint64_t i = 0; i < ID_ROUNDS; i++) {
		uint64_t f = siphash_u64(key, (i << 32) | r) & ID_HALF_MASK;
		uint64_t t = l ^ f;

		l = r;
		r = t;
	}
	return (l << ID_HALF_BITS) | r;
}

uint64_t id_of(const struct id_space *s, uint64_t n)
{
	uint64_t id = n;

	if (s->plain)
		return n;
	/* Cycle walking: [1, 2^48) maps onto itself. */
	do
		id = id_feistel(s->key, id);
	while (id == 0);
	return id;
}

int id_next(struct id_space *s, uint64_t *ret)
{
	if (s->count >= ID_MASK)
		return -ENOSPC;
	*ret = id_of(s, ++s->count);
	return 0;
}

int id_space_init(struct id_space *s)
{
	ssize_t n;

	s->count = 0;
	s->plain = false;
	errno = 0;
	n = getrandom(s->key, sizeof(s->key), GRND_NONBLOCK);
	if (n < 0 && errno == EAGAIN) {
		/* Once, at start, early in boot: no client waits yet. */
		log_notice("waiting for the kernel's random pool (the ids' "
			   "keys)");
		errno = 0;
		n = getrandom(s->key, sizeof(s->key), 0);
	}
	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(s->key) ? 0 : -EIO;
}
