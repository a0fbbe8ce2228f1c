// SPDX-License-Identifier: MIT
/*
 * The objects the interposer handed to the application, by address, so
 * that a destroy can ask whether it holds the object before reading it. A
 * second ibv_destroy_cq() of one CQ is a use after free in libibverbs;
 * on the soft device the memory is the interposer's, and a process whose
 * contexts are all the soft device's can hold no object the set does not
 * list: there the interposer answers EINVAL without touching it.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "interpose/interpose.h"

/* Open addressing over a power-of-two table; a removed slot is a
 * tombstone until the table is rebuilt. */
#define LIVE_GONE ((const void *)1)
#define LIVE_MIN 64

pthread_mutex_t ibcv_live_lock = PTHREAD_MUTEX_INITIALIZER;
/* Under ibcv_live_lock. */
static const void **live_slots;
static size_t live_size, live_used, live_tombs;
/* Contexts of a real device this process holds, opened through the
 * interposer or not: objects may then exist that it never saw (a
 * provider's direct verbs, an inline create on a context it did not
 * wrap), and a destroy it does not know goes to libibverbs. One more,
 * for good, once an object could not be added (out of memory). */
static unsigned int live_unsure;

static size_t live_hash(const void *p, size_t size)
{
	uint64_t x = (uint64_t)(uintptr_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x & (size - 1);
}

/* The slot of @p, or of the first free one on its probe. Under lock. */
static size_t live_probe(const void **slots, size_t size, const void *p,
			 bool *found)
{
	size_t i = live_hash(p, size), tomb = SIZE_MAX;

	for (;; i = (i + 1) & (size - 1)) {
		if (slots[i] == p) {
			*found = true;
			return i;
		}
		if (slots[i] == LIVE_GONE && tomb == SIZE_MAX)
			tomb = i;
		if (!slots[i]) {
			*found = false;
			return tomb != SIZE_MAX ? tomb : i;
		}
	}
}

/* Room for one more, tombstones dropped. Under lock. */
static int live_grow(void)
{
	size_t size = live_size ? live_size : LIVE_MIN;
	const void **slots;
	bool found;

	if ((live_used + live_tombs + 1) * 4 < live_size * 3)
		return 0;
	if ((live_used + 1) * 2 >= size)
		size *= 2;
	slots = calloc(size, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < live_size; i++)
		if (live_slots[i] && live_slots[i] != LIVE_GONE)
			slots[live_probe(slots, size, live_slots[i], &found)] =
				live_slots[i];
	free(live_slots);
	live_slots = slots;
	live_size = size;
	live_tombs = 0;
	return 0;
}

int ibcv_live_add(const void *obj)
{
	bool found;
	size_t i;
	int err;

	pthread_mutex_lock(&ibcv_live_lock);
	err = live_grow();
	if (err == 0) {
		i = live_probe(live_slots, live_size, obj, &found);
		if (!found) {
			if (live_slots[i] == LIVE_GONE)
				live_tombs--;
			live_slots[i] = obj;
			live_used++;
		}
	}
	if (err < 0)
		live_unsure++;
	pthread_mutex_unlock(&ibcv_live_lock);
	return err;
}

void ibcv_live_del(const void *obj)
{
	bool found = false;
	size_t i = 0;

	pthread_mutex_lock(&ibcv_live_lock);
	if (live_size)
		i = live_probe(live_slots, live_size, obj, &found);
	if (found) {
		live_slots[i] = LIVE_GONE;
		live_used--;
		live_tombs++;
	}
	pthread_mutex_unlock(&ibcv_live_lock);
}

int ibcv_live_check(const void *obj)
{
	bool found = false;
	int ret = 0;

	pthread_mutex_lock(&ibcv_live_lock);
	if (live_size)
		live_probe(live_slots, live_size, obj, &found);
	if (!found && !live_unsure)
		ret = EINVAL;
	pthread_mutex_unlock(&ibcv_live_lock);
	return ret;
}

void ibcv_live_verbs_ctx(int delta)
{
	pthread_mutex_lock(&ibcv_live_lock);
	live_unsure += (unsigned int)delta;
	pthread_mutex_unlock(&ibcv_live_lock);
}
