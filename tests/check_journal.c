// SPDX-License-Identifier: MIT
/*
 * The state journal (daemon/restart/journal.h), in-process: what a reader makes
 * of the memfd after a kill at any point of a write is a state the writer was
 * in (a transaction all or nothing), a corrupt or cut state is refused
 * whole and never read outside its bytes, compaction keeps exactly the
 * live records, and the fd store refuses names systemd would not keep.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/families/dm/dm.h"
#include "daemon/families/xrcd/xrcd.h"
#include "daemon/restart/fdstore.h"
#include "daemon/restart/inflight.h"
#include "daemon/util/keysort.h"
#include "daemon/restart/journal.h"
#include "daemon/restart/record-pack.h"
#include "daemon/util/log.h"
#include "daemon/restart/restart.h"
#include "daemon/restart/restore-object.h"
#include "proto/state.pb-c.h"
#include "tests/cklib.h"

/* The byte image of @j's memfd, its length in *@len. */
static uint8_t *snap(const struct journal *j, size_t *len)
{
	off_t end = lseek(journal_fd(j), 0, SEEK_END);
	uint8_t *buf;

	ck_assert_int_gt(end, 0);
	buf = malloc((size_t)end);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(pread(journal_fd(j), buf, (size_t)end, 0), end);
	*len = (size_t)end;
	return buf;
}

/* A Session record whose requests field says @v. */
static int put_val(struct journal *j, uint64_t key, uint64_t v)
{
	Rdmab__State__Session s = RDMAB__STATE__SESSION__INIT;

	s.requests = v;
	return journal_put(j, JOURNAL_SESSION, key, &s.base);
}

/* @key's value in @v, or -1 when it has no record. */
static int64_t val_of(const struct journal_view *v, uint64_t key)
{
	struct journal_rec rec;
	Rdmab__State__Session *s;
	int64_t out;

	if (journal_find(v, JOURNAL_SESSION, key, &rec) < 0)
		return -1;
	s = rdmab__state__session__unpack(NULL, rec.len, rec.data);
	ck_assert_ptr_nonnull(s);
	out = (int64_t)s->requests;
	rdmab__state__session__free_unpacked(s, NULL);
	return out;
}

static struct journal_view *read_buf(const uint8_t *buf, size_t len)
{
	struct journal_view *v = NULL;
	char why[256];

	ck_assert_int_eq(journal_read(buf, len, &v, why, sizeof(why)), 0);
	return v;
}

START_TEST(test_roundtrip)
{
	struct journal *j;
	struct journal_view *v;
	uint8_t *buf;
	size_t len;

	ck_assert_int_eq(journal_create(7, &j), 0);
	for (uint64_t k = 1; k <= 100; k++)
		ck_assert_int_eq(put_val(j, k, k * 10), 0);
	for (uint64_t k = 1; k <= 100; k += 2)
		ck_assert_int_eq(journal_del(j, JOURNAL_SESSION, k), 0);
	ck_assert_int_eq(put_val(j, 4, 4444), 0);
	buf = snap(j, &len);
	v = read_buf(buf, len);
	ck_assert_uint_eq(journal_view_gen(v), 7);
	ck_assert_uint_eq(journal_view_count(v, JOURNAL_SESSION), 50);
	ck_assert_int_eq(val_of(v, 3), -1);
	ck_assert_int_eq(val_of(v, 4), 4444);
	ck_assert_int_eq(val_of(v, 100), 1000);
	journal_view_free(v);
	free(buf);
	journal_free(j);
}
END_TEST

/* journal_each()'s walk of one kind. */
struct each_seen {
	uint32_t kind;
	size_t n;
	uint64_t last, sum;
	bool ordered, kinds_ok;
};

static int each_note(void *arg, const struct journal_rec *r)
{
	struct each_seen *e = arg;

	if (e->n && r->key <= e->last)
		e->ordered = false;
	if (r->kind != e->kind || r->len != 8)
		e->kinds_ok = false;
	e->last = r->key;
	e->sum += r->key;
	e->n++;
	return 0;
}

static int each_stop(void *arg, const struct journal_rec *r)
{
	size_t *n = arg;

	(void)r;
	return ++*n == 3 ? -ECANCELED : 0;
}

/* journal_each() walks exactly the live records of one kind, in key
 * order, whatever the other kinds, the deletes and the rewrites; a
 * negative return stops it. Keys spread over all 64 bits (object ids
 * are keyed) and a kind with none. Seeded. */
START_TEST(test_each_by_kind)
{
	static const uint32_t kinds[] = { JOURNAL_SESSION, JOURNAL_OBJECT,
					  JOURNAL_FAMILY_FIRST + 3,
					  JOURNAL_KIND_MAX };
	uint64_t want_n[4] = { 0 }, want_sum[4] = { 0 };
	unsigned int seed = 11;
	struct journal *j;
	struct journal_view *v;
	uint8_t *buf;
	size_t len, stopped = 0;

	ck_assert_int_eq(journal_create(3, &j), 0);
	for (unsigned int i = 0; i < 3000; i++) {
		unsigned int w = (unsigned int)rand_r(&seed) % 4;
		uint64_t key = ((uint64_t)rand_r(&seed) << 33) ^
			       ((uint64_t)rand_r(&seed) << 11) ^
			       (uint64_t)rand_r(&seed);
		uint8_t data[8] = { 1 };

		ck_assert_int_eq(journal_put_packed(j, kinds[w], key, data, 8),
				 0);
		/* Every third one deleted again, every fifth rewritten. */
		if (i % 3 == 0) {
			ck_assert_int_eq(journal_del(j, kinds[w], key), 0);
			continue;
		}
		if (i % 5 == 0)
			ck_assert_int_eq(
				journal_put_packed(j, kinds[w], key, data, 8),
				0);
		want_n[w]++;
		want_sum[w] += key;
	}
	buf = snap(j, &len);
	v = read_buf(buf, len);
	for (unsigned int w = 0; w < 4; w++) {
		struct each_seen e = { .kind = kinds[w],
				       .ordered = true,
				       .kinds_ok = true };

		ck_assert_int_eq(journal_each(v, kinds[w], each_note, &e), 0);
		ck_assert_uint_eq(e.n, want_n[w]);
		ck_assert_uint_eq(journal_view_count(v, kinds[w]), want_n[w]);
		ck_assert_uint_eq(e.sum, want_sum[w]);
		ck_assert(e.ordered);
		ck_assert(e.kinds_ok);
	}
	ck_assert_uint_eq(journal_view_count(v, JOURNAL_OWNER), 0);
	ck_assert_uint_eq(journal_view_count(v, 0), 0);
	ck_assert_int_eq(journal_each(v, JOURNAL_OBJECT, each_stop, &stopped),
			 -ECANCELED);
	ck_assert_uint_eq(stopped, 3);
	journal_view_free(v);
	free(buf);
	journal_free(j);
}
END_TEST

/* A kill inside a transaction: every record of it is whole but the last
 * one's commit is missing, and behind the tail lie the bytes a record
 * being written had got (its word still 0). The reader must see the
 * state before the transaction at every point, the one after only once
 * the commit is stored. */
START_TEST(test_kill_inside_transaction)
{
	struct journal *j;
	struct journal_view *v;
	uint8_t *buf;
	size_t len, tail;

	ck_assert_int_eq(journal_create(1, &j), 0);
	ck_assert_int_eq(put_val(j, 1, 1), 0);
	ck_assert_int_eq(put_val(j, 2, 2), 0);
	journal_begin(j);
	for (int step = 0; step < 4; step++) {
		if (step == 3)
			ck_assert_int_eq(journal_del(j, JOURNAL_SESSION, 1), 0);
		else
			ck_assert_int_eq(put_val(j, 2, 20 + step), 0);
		buf = snap(j, &len);
		/* A record half written after the tail: garbage, word 0. */
		tail = journal_used(j);
		for (size_t i = tail + 8; i < tail + 200 && i < len; i++)
			buf[i] = (uint8_t)(i * 31 + 7);
		v = read_buf(buf, len);
		ck_assert_int_eq(val_of(v, 1), 1);
		ck_assert_int_eq(val_of(v, 2), 2);
		journal_view_free(v);
		free(buf);
	}
	journal_commit(j);
	buf = snap(j, &len);
	v = read_buf(buf, len);
	ck_assert_int_eq(val_of(v, 1), -1);
	ck_assert_int_eq(val_of(v, 2), 22);
	journal_view_free(v);
	free(buf);
	journal_free(j);
}
END_TEST

/* Every byte flipped and every length cut: refused (-EBADMSG) or read,
 * never a crash; a byte the reader reads (not padding, not past the
 * records) refuses the whole state. */
START_TEST(test_corrupt_and_cut)
{
	struct journal *j;
	struct journal_view *v;
	uint8_t *buf, *copy;
	size_t len, used;
	char why[256];
	unsigned int refused = 0;

	ck_assert_int_eq(journal_create(3, &j), 0);
	for (uint64_t k = 1; k <= 6; k++)
		ck_assert_int_eq(put_val(j, k, 1000 + k), 0);
	buf = snap(j, &len);
	used = journal_used(j);
	copy = malloc(len);
	ck_assert_ptr_nonnull(copy);
	/* The header's words and the records (the rest of the header page
	 * is padding). */
	for (size_t i = 0; i < used; i = i == 31 ? 4096 : i + 1) {
		int ret;

		memcpy(copy, buf, len);
		copy[i] ^= 0x5a;
		v = NULL;
		ret = journal_read(copy, len, &v, why, sizeof(why));
		ck_assert_msg(ret == 0 || ret == -EBADMSG, "byte %zu: %d", i,
			      ret);
		if (ret < 0) {
			ck_assert_ptr_null(v);
			ck_assert(*why);
			refused++;
			continue;
		}
		/* Read: the flip hit bytes nobody checks (header padding,
		 * record padding); the state is the same. */
		for (uint64_t k = 1; k <= 6; k++)
			ck_assert_int_eq(val_of(v, k), 1000 + (int64_t)k);
		journal_view_free(v);
	}
	ck_assert_uint_gt(refused, (used - 4096 + 32) / 2);
	for (size_t cut = 0; cut < used + 64; cut++) {
		int ret;

		v = NULL;
		ret = journal_read(buf, cut, &v, why, sizeof(why));
		ck_assert_msg(ret == 0 || ret == -EBADMSG, "cut %zu: %d", cut,
			      ret);
		journal_view_free(v);
	}
	free(copy);
	free(buf);
	journal_free(j);
}
END_TEST

START_TEST(test_refuses_unknown)
{
	struct journal *j;
	struct journal_view *v = NULL;
	uint8_t *buf;
	size_t len;
	char why[256];

	ck_assert_int_eq(journal_create(1, &j), 0);
	buf = snap(j, &len);
	/* The format word follows the 8-byte magic. */
	buf[8] = JOURNAL_FORMAT + 1;
	ck_assert_int_eq(journal_read(buf, len, &v, why, sizeof(why)),
			 -EBADMSG);
	ck_assert_ptr_nonnull(strstr(why, "format"));
	memset(buf, 0, 8);
	ck_assert_int_eq(journal_read(buf, len, &v, why, sizeof(why)),
			 -EBADMSG);
	free(buf);
	journal_free(j);
}
END_TEST

static void count_full(void *arg)
{
	++*(unsigned int *)arg;
}

/* Rewrites of a few keys grow the log; the write that takes it past its
 * bound calls the hook (the daemon's only trigger), compaction bounds it,
 * keeps exactly the live records and the hook. */
START_TEST(test_compaction)
{
	struct journal *j, *fresh;
	struct journal_view *v;
	uint8_t *buf;
	size_t len;
	uint64_t n = 0;
	unsigned int full = 0;

	ck_assert_int_eq(journal_create(1, &j), 0);
	journal_on_full(j, count_full, &full);
	while (!journal_wants_compaction(j)) {
		ck_assert_uint_eq(full, 0);
		ck_assert_int_eq(put_val(j, n % 10, n), 0);
		n++;
	}
	ck_assert_uint_eq(full, 1);
	ck_assert_int_eq(journal_del(j, JOURNAL_SESSION, 0), 0);
	ck_assert_int_eq(journal_compact(j, &fresh), 0);
	ck_assert_uint_eq(journal_gen(fresh), 2);
	ck_assert_uint_lt(journal_used(fresh), 4096 + 10 * 64);
	ck_assert(!journal_wants_compaction(fresh));
	buf = snap(fresh, &len);
	v = read_buf(buf, len);
	ck_assert_uint_eq(journal_view_count(v, JOURNAL_SESSION), 9);
	ck_assert_int_eq(val_of(v, 0), -1);
	for (uint64_t k = 1; k < 10; k++) {
		uint64_t last = (n - 1) - ((n - 1 + 10 - k) % 10);

		ck_assert_int_eq(val_of(v, k), (int64_t)last);
	}
	journal_view_free(v);
	free(buf);
	full = 0;
	while (!journal_wants_compaction(fresh)) {
		ck_assert_int_eq(put_val(fresh, n % 10, n), 0);
		n++;
	}
	ck_assert_uint_eq(full, 1);
	journal_free(fresh);
	journal_free(j);
}
END_TEST

/* The del of a key whose only record is the log's last takes that record
 * back (journal_retract()): the state after it and at each store of it is
 * one the writer was in, no byte of the record is left for a later,
 * shorter one to expose, and neither a transaction's del nor the del of
 * a key with an older record is taken back. */
START_TEST(test_retract)
{
	/* 8 bytes, then room for a record's header: a client's bytes that
	 * a reader would take for a record if they stayed. */
	uint8_t planted[40] = { 0 }, eight[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct journal *j;
	struct journal_view *v;
	uint8_t *buf, tomb[32];
	size_t len, used0, used1, at;
	uint64_t key;
	uint32_t crc;

	ck_assert_int_eq(journal_create(5, &j), 0);
	ck_assert_int_eq(put_val(j, 1, 11), 0);
	/* A key with an older record: its del is a tombstone, whose header
	 * the planted bytes copy (a del of key 1). */
	ck_assert_int_eq(put_val(j, 30, 1), 0);
	ck_assert_int_eq(put_val(j, 30, 2), 0);
	at = journal_used(j);
	ck_assert_int_eq(journal_del(j, JOURNAL_SESSION, 30), 0);
	ck_assert_uint_eq(journal_used(j), at + 32);
	buf = snap(j, &len);
	v = read_buf(buf, len);
	ck_assert_int_eq(val_of(v, 30), -1);
	journal_view_free(v);
	memcpy(tomb, buf + at, sizeof(tomb));
	free(buf);
	key = 1;
	memcpy(tomb + 24, &key, sizeof(key));
	crc = journal_crc32c(tomb + 16, 16, true);
	memcpy(tomb + 8, &crc, sizeof(crc));
	memcpy(planted + 8, tomb, sizeof(tomb));

	/* Put alone, then del: the log is as before the put. */
	used0 = journal_used(j);
	ck_assert_int_eq(journal_put_packed(j, JOURNAL_SESSION_HOLD, 3, planted,
					    sizeof(planted)),
			 0);
	used1 = journal_used(j);
	buf = snap(j, &len);
	v = read_buf(buf, len);
	ck_assert_int_eq(journal_view_count(v, JOURNAL_SESSION_HOLD), 1);
	journal_view_free(v);
	/* A kill after the retract's first store: its word is 0. */
	memset(buf + used0, 0, 8);
	v = read_buf(buf, len);
	ck_assert_int_eq(journal_view_count(v, JOURNAL_SESSION_HOLD), 0);
	ck_assert_int_eq(val_of(v, 1), 11);
	journal_view_free(v);
	free(buf);
	ck_assert_int_eq(journal_del(j, JOURNAL_SESSION_HOLD, 3), 0);
	ck_assert_uint_eq(journal_used(j), used0);
	/* A shorter record where it was, ending where the planted header
	 * began: the reader must find zeros there, not a del of key 1. */
	ck_assert_int_eq(journal_put_packed(j, JOURNAL_SESSION_HOLD, 4, eight,
					    sizeof(eight)),
			 0);
	ck_assert_uint_eq(journal_used(j), used0 + 40);
	buf = snap(j, &len);
	for (size_t i = used0 + 40; i < used1; i++)
		ck_assert_msg(buf[i] == 0,
			      "byte %zu of the record taken back "
			      "is left",
			      i);
	v = read_buf(buf, len);
	ck_assert_int_eq(val_of(v, 1), 11);
	ck_assert_int_eq(journal_view_count(v, JOURNAL_SESSION_HOLD), 1);
	journal_view_free(v);
	free(buf);

	/* The index grown between the put and the del: the del finds the
	 * record's entry where it moved, and takes the record back. */
	at = journal_used(j);
	ck_assert_int_eq(put_val(j, 40, 400), 0);
	ck_assert_int_eq(journal_reserve(j, 5000), 0);
	ck_assert_int_eq(journal_del(j, JOURNAL_SESSION, 40), 0);
	ck_assert_uint_eq(journal_used(j), at);

	/* Inside a transaction the del is a record: a kill before the
	 * commit keeps the key. */
	ck_assert_int_eq(put_val(j, 20, 200), 0);
	at = journal_used(j);
	journal_begin(j);
	ck_assert_int_eq(journal_del(j, JOURNAL_SESSION, 20), 0);
	ck_assert_uint_eq(journal_used(j), at + 32);
	buf = snap(j, &len);
	v = read_buf(buf, len);
	ck_assert_int_eq(val_of(v, 20), 200);
	journal_view_free(v);
	free(buf);
	ck_assert_int_eq(put_val(j, 21, 210), 0);
	journal_commit(j);
	buf = snap(j, &len);
	v = read_buf(buf, len);
	ck_assert_int_eq(val_of(v, 20), -1);
	ck_assert_int_eq(val_of(v, 21), 210);
	ck_assert_int_eq(val_of(v, 1), 11);
	ck_assert_int_eq(val_of(v, 30), -1);
	ck_assert_int_eq(val_of(v, 40), -1);
	journal_view_free(v);
	free(buf);
	journal_free(j);
}
END_TEST

/* A write that fails (a record over the bound) breaks the journal, and
 * the memfd says so: a daemon started after a kill refuses the state
 * rather than take one that lacks the write. */
START_TEST(test_failed_write_refuses)
{
	static uint8_t big[JOURNAL_RECORD_MAX + 1];
	struct journal *j;
	struct journal_view *v = NULL;
	uint8_t *buf;
	size_t len;
	char why[256] = "";

	ck_assert_int_eq(journal_create(4, &j), 0);
	ck_assert_int_eq(put_val(j, 1, 11), 0);
	ck_assert_int_eq(
		journal_put_packed(j, JOURNAL_SESSION, 2, big, sizeof(big)),
		-E2BIG);
	ck_assert(journal_broken(j));
	ck_assert_int_eq(put_val(j, 3, 33), -EIO);
	ck_assert(!journal_wants_compaction(j));
	buf = snap(j, &len);
	ck_assert_int_eq(journal_read(buf, len, &v, why, sizeof(why)),
			 -EBADMSG);
	ck_assert_ptr_null(v);
	ck_assert_ptr_nonnull(strstr(why, "abandoned"));
	free(buf);
	journal_free(j);
}
END_TEST

/* The check value of CRC-32C, by the instruction and by the table. */
START_TEST(test_crc)
{
	uint8_t buf[1000];

	ck_assert_uint_eq(journal_crc32c("123456789", 9, true), 0xe3069283);
	ck_assert_uint_eq(journal_crc32c("123456789", 9, false), 0xe3069283);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + 17);
	for (size_t n = 0; n < sizeof(buf); n += 37)
		ck_assert_uint_eq(
			journal_crc32c(buf + 3, n - (n ? 3 : 0), true),
			journal_crc32c(buf + 3, n - (n ? 3 : 0), false));
	/* Whole words, as a record's CRC is taken. */
	for (size_t n = 0; n + 8 <= sizeof(buf); n += 8)
		ck_assert_uint_eq(journal_crc32c(buf, n, true),
				  journal_crc32c(buf, n, false));
}
END_TEST

/* The held slots of a view, by their first id. */
struct slots_seen {
	size_t n;
	struct journal_slot s[256];
};

static int slot_note(void *arg, const struct journal_slot *sl)
{
	struct slots_seen *ss = arg;

	ck_assert_uint_lt(ss->n, sizeof(ss->s) / sizeof(ss->s[0]));
	ss->s[ss->n++] = *sl;
	return 0;
}

static const struct journal_slot *slot_of(const struct slots_seen *ss,
					  uint64_t a)
{
	for (size_t i = 0; i < ss->n; i++)
		if (ss->s[i].id[0] == a)
			return &ss->s[i];
	return NULL;
}

/* @j's held slots as a reader of its memfd finds them. */
static void slots_read(const struct journal *j, struct slots_seen *ss)
{
	struct journal_view *v;
	uint8_t *buf;
	size_t len;

	buf = snap(j, &len);
	v = read_buf(buf, len);
	ss->n = 0;
	ck_assert_int_eq(journal_each_slot(v, slot_note, ss), 0);
	journal_view_free(v);
	free(buf);
}

/* Where slot (@a, @a + 1000, @a + 2000) is in @buf: its ids' offset. */
static size_t slot_find(const uint8_t *buf, size_t len, uint64_t a)
{
	const uint64_t ids[3] = { a, a + 1000, a + 2000 };

	for (size_t off = 4096; off + 32 <= len; off += 8)
		if (!memcmp(buf + off, ids, sizeof(ids)))
			return off;
	ck_abort_msg("slot %" PRIu64 " not in the memfd", a);
	return 0;
}

/* @n slots, the first id @a0 on, counts 1 to 5; their numbers in @nums. */
static void slots_add(struct journal *j, uint64_t a0, size_t n, uint32_t *nums)
{
	for (size_t k = 0; k < n; k++) {
		uint64_t a = a0 + k;

		ck_assert_int_eq(journal_slot_add(j, a, a + 1000, a + 2000,
						  (uint32_t)(a % 5 + 1),
						  &nums[k]),
				 0);
		ck_assert_uint_ne(nums[k], 0);
	}
}

/* What @ss holds is slots 1 to @n of slots_add() but those @freed says,
 * with their counts but @k7's, which is 7. */
static void slots_expect(const struct slots_seen *ss, size_t n,
			 bool (*freed)(uint64_t a), uint64_t k7)
{
	size_t want = 0;

	for (uint64_t a = 1; a <= n; a++) {
		const struct journal_slot *sl = slot_of(ss, a);

		if (freed(a)) {
			ck_assert_msg(!sl, "slot %" PRIu64 " freed is read", a);
			continue;
		}
		want++;
		ck_assert_msg(sl, "slot %" PRIu64 " held is not read", a);
		ck_assert_uint_eq(sl->id[1], a + 1000);
		ck_assert_uint_eq(sl->id[2], a + 2000);
		ck_assert_uint_eq(sl->n, a == k7 ? 7 : a % 5 + 1);
	}
	ck_assert_uint_eq(ss->n, want);
}

static bool third(uint64_t a)
{
	return a % 3 == 0;
}

/*
 * The holds' slots (journal_slot_*()): a reader finds every held slot
 * with its ids and count, over blocks; a kill before a slot's word shows
 * the slot as before; a word that fails its check refuses the state, a
 * free slot's stale ids do not; a slot freed twice is handed out once;
 * a compaction and a restore's copy keep each slot at its number and
 * hand out free ones only; a state of format 2 reads without slots and
 * is refused with one.
 */
START_TEST(test_slots)
{
	static struct slots_seen ss;
	struct journal *j, *fresh;
	struct journal_view *v = NULL;
	uint32_t nums[100], more[3], none = 5;
	uint8_t *buf, *copy;
	size_t len, off;
	char why[256];

	ck_assert_int_eq(journal_slot_add(NULL, 1, 2, 3, 1, &none), 0);
	ck_assert_uint_eq(none, 0);
	ck_assert_int_eq(journal_create(2, &j), 0);
	ck_assert_int_eq(put_val(j, 1, 11), 0);
	/* Two blocks (64 slots each), a third of them freed again. */
	slots_add(j, 1, 100, nums);
	for (uint64_t a = 3; a <= 100; a += 3)
		journal_slot_free(j, nums[a - 1]);
	ck_assert_int_eq(journal_slot_count(j, nums[0], 7), 0);
	slots_read(j, &ss);
	slots_expect(&ss, 100, third, 1);

	/* A kill before the word of an add into a slot freed before: its
	 * new ids are in, its word still 0. */
	ck_assert_int_eq(journal_slot_add(j, 500, 1500, 2500, 2, &more[0]), 0);
	buf = snap(j, &len);
	off = slot_find(buf, len, 500);
	memset(buf + off + 24, 0, 8);
	v = read_buf(buf, len);
	ss.n = 0;
	ck_assert_int_eq(journal_each_slot(v, slot_note, &ss), 0);
	slots_expect(&ss, 100, third, 1);
	journal_view_free(v);

	/* Any byte of a held slot flipped (its word's too): refused. A
	 * free slot's ids are not read. */
	copy = malloc(len);
	ck_assert_ptr_nonnull(copy);
	for (size_t i = 0; i < 32; i++) {
		memcpy(copy, buf, len);
		copy[slot_find(buf, len, 1) + i] ^= 0x5a;
		v = NULL;
		ck_assert_int_eq(journal_read(copy, len, &v, why, sizeof(why)),
				 -EBADMSG);
		ck_assert_ptr_nonnull(strstr(why, "fails its check"));
	}
	memcpy(copy, buf, len);
	copy[slot_find(buf, len, 3)] ^= 0x5a;
	v = read_buf(copy, len);
	journal_view_free(v);
	/* A free slot's word set: no kill's. */
	memcpy(copy, buf, len);
	copy[slot_find(buf, len, 3) + 24] = 1;
	ck_assert_int_eq(journal_read(copy, len, &v, why, sizeof(why)),
			 -EBADMSG);
	/* A block of slots in a state of format 2, which had none. */
	memcpy(copy, buf, len);
	copy[8] = 2;
	ck_assert_int_eq(journal_read(copy, len, &v, why, sizeof(why)),
			 -EBADMSG);
	ck_assert_ptr_nonnull(strstr(why, "block of slots"));
	free(copy);
	free(buf);
	journal_slot_free(j, more[0]);

	/* Freed twice, a slot is handed out once. */
	journal_slot_free(j, nums[1]);
	journal_slot_free(j, nums[1]);
	ck_assert_int_eq(journal_slot_add(j, 600, 1600, 2600, 1, &more[0]), 0);
	ck_assert_int_eq(journal_slot_add(j, 700, 1700, 2700, 1, &more[1]), 0);
	ck_assert_uint_ne(more[0], more[1]);
	slots_read(j, &ss);
	ck_assert_ptr_nonnull(slot_of(&ss, 600));
	ck_assert_ptr_nonnull(slot_of(&ss, 700));
	journal_slot_free(j, more[0]);
	journal_slot_free(j, more[1]);
	ck_assert_int_eq(journal_slot_add(j, 2, 1002, 2002, 3, &nums[1]), 0);

	/* Compacted: the same slots at the same numbers; the free ones
	 * only are handed out. */
	ck_assert_int_eq(journal_compact(j, &fresh), 0);
	journal_free(j);
	j = fresh;
	slots_read(j, &ss);
	slots_expect(&ss, 100, third, 1);
	slots_add(j, 200, 3, more);
	for (size_t k = 0; k < 3; k++)
		for (size_t i = 0; i < 100; i++)
			if (!third(i + 1))
				ck_assert_uint_ne(more[k], nums[i]);
	for (size_t k = 0; k < 3; k++)
		journal_slot_free(j, more[k]);
	ck_assert_int_eq(journal_slot_count(j, nums[0], 7), 0);
	journal_slot_free(j, nums[3]);
	slots_read(j, &ss);
	ck_assert_ptr_null(slot_of(&ss, 4));
	ck_assert_uint_eq(slot_of(&ss, 1)->n, 7);
	ck_assert_int_eq(journal_slot_add(j, 4, 1004, 2004, 5, &nums[3]), 0);

	/* A restore's journal from the view: the same again. */
	buf = snap(j, &len);
	v = read_buf(buf, len);
	ck_assert_int_eq(journal_from_view(v, 9, &fresh), 0);
	journal_view_free(v);
	free(buf);
	slots_read(fresh, &ss);
	slots_expect(&ss, 100, third, 1);
	ck_assert_int_eq(journal_slot_count(fresh, nums[4], 7), 0);
	slots_read(fresh, &ss);
	ck_assert_uint_eq(slot_of(&ss, 5)->n, 7);
	journal_free(fresh);

	/* A count of 0, or a slot not held: the journal is broken. */
	ck_assert_int_eq(journal_slot_count(j, nums[2], 1), -EINVAL);
	ck_assert(journal_broken(j));
	ck_assert_int_eq(journal_slot_add(j, 9, 9, 9, 1, &more[0]), -EIO);
	journal_free(j);

	/* Format 2 without slots: read. */
	ck_assert_int_eq(journal_create(3, &j), 0);
	ck_assert_int_eq(put_val(j, 1, 11), 0);
	buf = snap(j, &len);
	buf[8] = 2;
	v = read_buf(buf, len);
	ck_assert_int_eq(val_of(v, 1), 11);
	journal_view_free(v);
	free(buf);
	journal_free(j);
}
END_TEST

START_TEST(test_fdstore_names)
{
	struct fdstore *s;
	int fd = dup(0);

	ck_assert_int_eq(fdstore_open(2, false, &s), 0);
	ck_assert_int_eq(fdstore_put(s, "rb.conn.1", fd), 0);
	ck_assert_int_eq(fdstore_put(s, "rb.conn.1", fd), -EEXIST);
	ck_assert_int_eq(fdstore_put(s, "rb.a:b", fd), -EINVAL);
	ck_assert_int_eq(fdstore_put(s, "conn.1", fd), -EINVAL);
	ck_assert_int_eq(fdstore_put(s, "rb.", fd), -EINVAL);
	ck_assert_int_eq(fdstore_put(s, "rb.conn.2", fd), 0);
	ck_assert_int_eq(fdstore_put(s, "rb.conn.3", fd), -ENOSPC);
	ck_assert_uint_eq(fdstore_count(s), 2);
	fdstore_remove(s, "rb.conn.1");
	ck_assert_uint_eq(fdstore_count(s), 1);
	ck_assert_int_eq(fdstore_put(s, "rb.conn.3", fd), 0);
	fdstore_free(s);
	close(fd);
}
END_TEST

/* The kept table against a model (names in the order they came): seeded
 * puts and removes of 100 names over a bound of 64, so that removes leave
 * holes, the table fills and is compacted; the listing keeps the order,
 * a name kept is -EEXIST, one over the bound -ENOSPC. */
START_TEST(test_fdstore_kept_order)
{
	char model[64][FDSTORE_NAME_MAX + 1], name[FDSTORE_NAME_MAX + 1];
	const char *names[64];
	unsigned int n = 0, seed = 3;
	struct fdstore *s;
	int fds[64], fd = dup(0);

	ck_assert_int_eq(fdstore_open(64, false, &s), 0);
	for (int op = 0; op < 20000; op++) {
		unsigned int k = (unsigned int)rand_r(&seed) % 100, at = n;

		snprintf(name, sizeof(name), "rb.conn.%u", k);
		for (unsigned int i = 0; i < n; i++)
			if (strcmp(model[i], name) == 0)
				at = i;
		if (rand_r(&seed) % 2) {
			int want = at < n ? -EEXIST : n == 64 ? -ENOSPC : 0;

			ck_assert_int_eq(fdstore_put(s, name, fd), want);
			if (want == 0)
				snprintf(model[n++], sizeof(model[0]), "%s",
					 name);
		} else {
			fdstore_remove(s, name);
			if (at < n) {
				memmove(model[at], model[at + 1],
					(n - at - 1) * sizeof(model[0]));
				n--;
			}
		}
		ck_assert_uint_eq(fdstore_count(s), n);
	}
	ck_assert_uint_eq(fdstore_list(s, fds, names, 64), n);
	for (unsigned int i = 0; i < n; i++)
		ck_assert_str_eq(names[i], model[i]);
	fdstore_free(s);
	close(fd);
}
END_TEST

/* The next datagram on @sock, without waiting: its text (fds closed), or
 * "" when none is there. */
static const char *notified(int sock)
{
	static char buf[256];
	char ctl[CMSG_SPACE(sizeof(int) * 4)];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) - 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl,
			     .msg_controllen = sizeof(ctl) };
	ssize_t n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	buf[n > 0 ? n : 0] = '\0';
	for (struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL; c;
	     c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_type == SCM_RIGHTS)
			for (size_t i = 0;
			     i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++)
				close(((int *)CMSG_DATA(c))[i]);
	return buf;
}

/* The sockets this process holds other than @except: how many, the
 * inode of the last in *@ino, and whether every one is CLOEXEC. */
static unsigned int sockets_held(int except, ino_t *ino, bool *cloexec)
{
	unsigned int n = 0;
	struct stat st;

	*cloexec = true;
	for (int fd = 0; fd < 1024; fd++) {
		if (fd == except || fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
			continue;
		n++;
		*ino = st.st_ino;
		if (!(fcntl(fd, F_GETFD) & FD_CLOEXEC))
			*cloexec = false;
	}
	return n;
}

/* NOTIFY_SOCKET's @path ("@name": abstract) as an address into @sa:
 * its length. */
static socklen_t notify_addr(const char *path, struct sockaddr_un *sa)
{
	size_t len = strlen(path);

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, path, len);
	if (path[0] == '@')
		sa->sun_path[0] = '\0';
	else
		len++;
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
}

/* A datagram socket bound to @path, for NOTIFY_SOCKET. */
static int notify_receiver(const char *path)
{
	struct sockaddr_un sa;
	socklen_t len = notify_addr(path, &sa);
	int sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(sock, 0);
	ck_assert_int_eq(bind(sock, (struct sockaddr *)&sa, len), 0);
	setenv("NOTIFY_SOCKET", path, 1);
	return sock;
}

/* The store tells systemd through one socket, made once and CLOEXEC,
 * not one per notice (libsystemd's sd_pid_notify*() make one per
 * call): the same socket across 40 notices and a NOTIFY_SOCKET that
 * changes from an abstract name to a path, each notice read where
 * NOTIFY_SOCKET pointed when it was sent. */
START_TEST(test_fdstore_one_socket)
{
	char path[64], name[32], dir[] = "/tmp/rdmab-notify-XXXXXX";
	ino_t ino = 0, first = 0;
	struct fdstore *s;
	int sock, fd;
	bool cloexec;

	snprintf(path, sizeof(path), "@rdmab-check-notify-%d", (int)getpid());
	sock = notify_receiver(path);
	fd = memfd_create("kept", MFD_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fdstore_open(64, true, &s), 0);
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "rb.conn.%d", i / 2);
		if (i % 2) {
			char want[64];

			snprintf(want, sizeof(want),
				 "FDSTOREREMOVE=1\nFDNAME=%s", name);
			fdstore_remove(s, name);
			ck_assert_str_eq(notified(sock), want);
		} else {
			ck_assert_int_eq(fdstore_put(s, name, fd), 0);
			ck_assert_ptr_nonnull(strstr(notified(sock), name));
		}
		ck_assert_uint_eq(sockets_held(sock, &ino, &cloexec), 1);
		ck_assert(cloexec);
		if (!i)
			first = ino;
		ck_assert_uint_eq(ino, first);
	}
	/* A new NOTIFY_SOCKET, a path now: the next notice goes there. */
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/notify", dir);
	close(sock);
	sock = notify_receiver(path);
	ck_assert_int_eq(fdstore_put(s, "rb.conn.99", fd), 0);
	ck_assert_str_eq(notified(sock),
			 "FDSTORE=1\nFDNAME=rb.conn.99\nFDPOLL=0");
	ck_assert_uint_eq(sockets_held(sock, &ino, &cloexec), 1);
	ck_assert_uint_eq(ino, first);
	/* An address that is neither a path nor abstract: refused, the
	 * table keeps nothing. */
	setenv("NOTIFY_SOCKET", "x", 1);
	ck_assert_int_eq(fdstore_put(s, "rb.conn.100", fd), -EINVAL);
	ck_assert_uint_eq(fdstore_count(s), 1);
	fdstore_free(s);
	ck_assert_uint_eq(sockets_held(sock, &ino, &cloexec), 0);
	unsetenv("NOTIFY_SOCKET");
	close(sock);
	close(fd);
	unlink(path);
	rmdir(dir);
}
END_TEST

static void on_alarm(int sig)
{
	(void)sig;
}

static bool drain_done;

/* Reads @arg's socket dry after 300 ms, until drain_done (2 s at most). */
static void *drain_later(void *arg)
{
	int sock = *(int *)arg;
	char buf[256];

	tl_sleep_ms(300);
	for (int i = 0;
	     i < 200 && !__atomic_load_n(&drain_done, __ATOMIC_SEQ_CST); i++) {
		while (recv(sock, buf, sizeof(buf), MSG_DONTWAIT) >= 0)
			;
		tl_sleep_ms(10);
	}
	return NULL;
}

/* Datagrams to @path until its queue is full (net.unix.max_dgram_qlen:
 * the sender's own buffer made large enough not to fill first); returns
 * the sending socket. */
static int fill_queue(const char *path)
{
	struct sockaddr_un sa;
	socklen_t len = notify_addr(path, &sa);
	int fill = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int sz = 8 << 20;

	ck_assert_int_ge(fill, 0);
	(void)setsockopt(fill, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz));
	while (sendto(fill, "x", 1, MSG_DONTWAIT, (struct sockaddr *)&sa,
		      len) == 1)
		;
	ck_assert_int_eq(errno, EAGAIN);
	return fill;
}

/* A signal while the manager's queue is full interrupts the notice's
 * send (a handler without SA_RESTART): the put waits on until the
 * manager reads (300 ms on), it does not fail with EINTR. */
START_TEST(test_fdstore_put_interrupted)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	sigset_t alrm;
	char path[64];
	struct fdstore *s;
	int sock, fill, fd;
	int64_t t0;
	pthread_t t;

	snprintf(path, sizeof(path), "@rdmab-check-eintr-%d", (int)getpid());
	sock = notify_receiver(path);
	fd = memfd_create("kept", MFD_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fdstore_open(4, true, &s), 0);
	fill = fill_queue(path);
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGALRM, &sa, NULL), 0);
	/* The alarm for this thread, blocked in the drainer. */
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	ck_assert_int_eq(pthread_sigmask(SIG_BLOCK, &alrm, NULL), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, drain_later, &sock), 0);
	ck_assert_int_eq(pthread_sigmask(SIG_UNBLOCK, &alrm, NULL), 0);
	t0 = tl_now_ms();
	ualarm(100000, 0);
	ck_assert_int_eq(fdstore_put(s, "rb.conn.1", fd), 0);
	__atomic_store_n(&drain_done, true, __ATOMIC_SEQ_CST);
	/* It waited for the drain: the queue was full, the send blocked. */
	ck_assert_int_ge(tl_now_ms() - t0, 250);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_uint_eq(fdstore_count(s), 1);
	fdstore_free(s);
	unsetenv("NOTIFY_SOCKET");
	close(fill);
	close(sock);
	close(fd);
}
END_TEST

/* The child of test_fdstore_passed_kept: fd 3 is its own to pass. */
static int passed_kept_child(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char env[64];
	struct fdstore *s;
	int sock, mfd, fd;

	sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1,
		 "rdmab-check-journal-%d", (int)getpid());
	if (sock < 0 ||
	    bind(sock, (struct sockaddr *)&sa,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			     strlen(sa.sun_path + 1))) < 0)
		return 10;
	snprintf(env, sizeof(env), "@%s", sa.sun_path + 1);
	setenv("NOTIFY_SOCKET", env, 1);
	mfd = memfd_create("passed", 0);
	if (mfd < 0 || dup2(mfd, 3) != 3)
		return 11;
	snprintf(env, sizeof(env), "%d", (int)getpid());
	setenv("LISTEN_PID", env, 1);
	setenv("LISTEN_FDS", "1", 1);
	setenv("LISTEN_FDNAMES", "rb.conn.7", 1);
	if (fdstore_open(8, true, &s) < 0 ||
	    fdstore_take(s, "rb.conn.7", &fd) < 0 || fd != 3)
		return 12;
	/* Kept again as it came: systemd has it, nothing is sent. */
	if (fdstore_put(s, "rb.conn.7", fd) < 0 || *notified(sock))
		return 13;
	fdstore_remove(s, "rb.conn.7");
	if (!strstr(notified(sock), "FDSTOREREMOVE=1"))
		return 14;
	/* Gone from systemd: the same number kept again is sent. */
	if (fdstore_put(s, "rb.conn.7", fd) < 0 ||
	    !strstr(notified(sock), "FDSTORE=1"))
		return 15;
	fdstore_free(s);
	return 0;
}

/* A descriptor passed at start, taken and kept again under its name is
 * systemd's already (no FDSTORE=1 again); once removed, it is told again.
 * In a child: the passed descriptor must be fd 3. */
START_TEST(test_fdstore_passed_kept)
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(passed_kept_child());
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the child's step %d failed", WEXITSTATUS(status));
}
END_TEST

/* The child of test_fdstore_passed_which: fds 3 to 6 passed, two under
 * our names; whether each is ours, also after those are taken and
 * removed. */
static int passed_which_child(void)
{
	static const bool want[] = { false, false, false, true,
				     false, true,  false, false };
	char env[32];
	struct fdstore *s;
	int fd;

	for (int i = 3; i <= 6; i++)
		if (dup2(0, i) != i)
			return 10;
	snprintf(env, sizeof(env), "%d", (int)getpid());
	setenv("LISTEN_PID", env, 1);
	setenv("LISTEN_FDS", "4", 1);
	setenv("LISTEN_FDNAMES", "rb.conn.1:rdmabrokerd.socket:rb.conn.2:rb.",
	       1);
	if (fdstore_open(8, false, &s) < 0)
		return 11;
	for (int round = 0; round < 2; round++) {
		for (int i = -1; i < 8; i++)
			if (fdstore_passed(s, i) != (i >= 0 && want[i]))
				return 20 + i;
		if (round)
			break;
		if (fdstore_take(s, "rb.conn.2", &fd) < 0 || fd != 5)
			return 12;
		fdstore_remove(s, "rb.conn.2");
		close(fd);
	}
	fdstore_free(s);
	return fdstore_passed(NULL, 3) ? 13 : 0;
}

/* fdstore_passed(): the descriptors passed under our names, no other,
 * as sd_take_listener() asks before it looks for the listener. */
START_TEST(test_fdstore_passed_which)
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(passed_which_child());
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the child's step %d failed", WEXITSTATUS(status));
}
END_TEST

static uint64_t seen_conn, seen_serial;
static unsigned int seen;

static void seen_one(void *arg, uint64_t conn_id, uint64_t serial)
{
	seen_conn = conn_id;
	seen_serial = serial;
	seen++;
}

/* What a kill leaves of the in-flight table: the request read and not
 * answered, serial 0 included, and nothing once its reply went. */
START_TEST(test_inflight)
{
	struct inflight *t;
	int a, b;

	ck_assert_int_eq(inflight_create(2, &t), 0);
	a = inflight_take(t, 77);
	b = inflight_take(t, 78);
	ck_assert_int_ge(a, 0);
	ck_assert_int_ge(b, 0);
	ck_assert_int_eq(inflight_take(t, 79), -1);
	inflight_read(t, a, 0);
	inflight_read(t, b, 5);
	inflight_answered(t, b);
	seen = 0;
	ck_assert_int_eq(inflight_scan(inflight_fd(t), seen_one, NULL), 0);
	ck_assert_uint_eq(seen, 1);
	ck_assert_uint_eq(seen_conn, 77);
	ck_assert_uint_eq(seen_serial, 0);
	inflight_put(t, a);
	seen = 0;
	ck_assert_int_eq(inflight_scan(inflight_fd(t), seen_one, NULL), 0);
	ck_assert_uint_eq(seen, 0);
	ck_assert_int_eq(
		inflight_scan(0 /* stdin: no table */, seen_one, NULL) < 0, 1);
	inflight_free(t);
}
END_TEST

static uint64_t seen_sum;

static void sum_one(void *arg, uint64_t conn_id, uint64_t serial)
{
	(void)arg;
	ck_assert_uint_eq(serial, conn_id * 3);
	seen_sum += conn_id;
	seen++;
}

/* A table of more slots than a scan reads at once, and not a whole number
 * of its blocks: every slot is seen once, the last block's too. */
START_TEST(test_inflight_blocks)
{
	const uint32_t n = 2500;
	struct inflight *t;
	uint64_t want = 0;

	ck_assert_int_eq(inflight_create(n, &t), 0);
	for (uint32_t i = 0; i < n; i++) {
		int slot = inflight_take(t, i + 1);

		ck_assert_int_ge(slot, 0);
		inflight_read(t, slot, (i + 1) * 3);
		want += i + 1;
	}
	seen = 0;
	seen_sum = 0;
	ck_assert_int_eq(inflight_scan(inflight_fd(t), sum_one, NULL), 0);
	ck_assert_uint_eq(seen, n);
	ck_assert_uint_eq(seen_sum, want);
	inflight_free(t);
}
END_TEST

/* keysort(): ascending, stable, every record kept; keys that share bytes
 * (no pass for those) and keys that differ in all eight. Seeded. */
START_TEST(test_keysort)
{
	struct rec {
		uint32_t pad;
		uint64_t key;
		uint32_t i;
	} * v;
	const size_t n = 5000;
	unsigned int seed = 7;

	v = calloc(n, sizeof(*v));
	ck_assert_ptr_nonnull(v);
	for (int round = 0; round < 3; round++) {
		uint64_t sum = 0;

		for (size_t i = 0; i < n; i++) {
			uint64_t k = ((uint64_t)rand_r(&seed) << 32) ^
				     (uint64_t)rand_r(&seed) << 7 ^
				     (uint64_t)rand_r(&seed);

			/* Round 0: few distinct keys (ties); 1: all bytes
			 * differ; 2: only the low byte does. */
			v[i].key =
				round == 0 ? k % 37 :
				round == 1 ? k :
					     0xabcdef0000000000ull | (k & 0xff);
			v[i].i = (uint32_t)i;
		}
		ck_assert_int_eq(
			keysort(v, n, sizeof(*v), offsetof(struct rec, key)),
			0);
		for (size_t i = 0; i < n; i++) {
			sum += v[i].i;
			if (i == 0)
				continue;
			ck_assert(v[i - 1].key <= v[i].key);
			if (v[i - 1].key == v[i].key)
				ck_assert_uint_lt(v[i - 1].i, v[i].i);
		}
		ck_assert_uint_eq(sum, (uint64_t)n * (n - 1) / 2);
	}
	free(v);
}
END_TEST

/* keysort() of the two record sizes it moves by a copy of their own
 * (16 bytes: the restore's object order; 32: the journal's records),
 * and of a size it does not (24): sorted, stable, nothing lost. */
START_TEST(test_keysort_sizes)
{
	static const size_t sizes[] = { 16, 24, 32 };
	const size_t n = 3000;
	unsigned int seed = 5;

	for (size_t s = 0; s < 3; s++) {
		size_t size = sizes[s];
		unsigned char *v = calloc(n, size);
		uint64_t sum = 0, key, prev_key = 0, idx, prev_idx = 0;

		ck_assert_ptr_nonnull(v);
		for (size_t i = 0; i < n; i++) {
			/* Ties in the first half, all bytes in the rest. */
			key = ((uint64_t)rand_r(&seed) << 40) ^
			      (uint64_t)rand_r(&seed);
			if (i < n / 2)
				key %= 29;
			idx = i;
			memcpy(v + i * size, &key, 8);
			memcpy(v + i * size + 8, &idx, 8);
			memset(v + i * size + 16, (int)(i & 0xff), size - 16);
		}
		ck_assert_int_eq(keysort(v, n, size, 0), 0);
		for (size_t i = 0; i < n; i++) {
			memcpy(&key, v + i * size, 8);
			memcpy(&idx, v + i * size + 8, 8);
			for (size_t b = 16; b < size; b++)
				ck_assert_uint_eq(v[i * size + b], idx & 0xff);
			sum += idx;
			if (i) {
				ck_assert(prev_key <= key);
				if (prev_key == key)
					ck_assert_uint_lt(prev_idx, idx);
			}
			prev_key = key;
			prev_idx = idx;
		}
		ck_assert_uint_eq(sum, (uint64_t)n * (n - 1) / 2);
		free(v);
	}
}
END_TEST

/* --- the object records read by hand (restore-object.h) --------------- */

static uint64_t rnd(unsigned int *seed, int bits)
{
	uint64_t v = ((uint64_t)rand_r(seed) << 33) ^
		     ((uint64_t)rand_r(seed) << 11) ^ (uint64_t)rand_r(seed);

	/* Small values often: most fields are 0 or short varints. */
	switch (rand_r(seed) % 4) {
	case 0:
		return 0;
	case 1:
		return v & 0x7f;
	default:
		return bits == 64 ? v : v & 0xffffffffu;
	}
}

/* The fields of @m the hand reader keeps by number for their owners
 * (@f: every uint64 field but the ones it reads by name, @own): the same
 * values as protobuf-c read, and no other. */
static bool others_same(const ProtobufCMessage *m, const struct rec_fields *f,
			const char *const *own)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	unsigned int n = 0;

	for (unsigned int i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *fd = &d->fields[i];
		bool mine = false;
		uint64_t v;

		if (fd->type != PROTOBUF_C_TYPE_UINT64)
			continue;
		for (const char *const *o = own; *o; o++)
			mine |= strcmp(*o, fd->name) == 0;
		if (mine)
			continue;
		memcpy(&v, (const char *)m + fd->offset, sizeof(v));
		if (rec_field_get(f, fd->id) != v)
			return false;
		n += v != 0;
	}
	return n == f->n;
}

static const char *const object_own[] = { "owner", "ctx_id", "born_usec",
					  NULL };
static const char *const soft_own[] = { NULL };

/* Does @d say what protobuf-c read in @m? */
static bool obj_same(const Rdmab__State__Object *m, const struct state_obj *d)
{
	const Rdmab__ObjAttr *a = m->soft ? m->soft->attr : NULL;
	const Rdmab__ObjAttr *b = &d->soft.attr;

	if (m->owner != d->owner || m->ctx_id != d->ctx_id ||
	    m->kind != d->kind || m->handle != d->handle ||
	    m->intent != d->intent || m->made_here != d->made_here ||
	    m->window_made != d->window_made || m->stuck != d->stuck ||
	    m->family_owned != d->family_owned ||
	    !others_same(&m->base, &d->family, object_own) ||
	    m->born_usec != d->born_usec || !m->soft != !d->has_soft)
		return false;
	if (!m->soft)
		return true;
	if (m->soft->n_uses != d->soft.n_uses ||
	    m->soft->used_mask != d->soft.used_mask ||
	    !others_same(&m->soft->base, &d->soft.device, soft_own) ||
	    m->soft->num != d->soft.num || m->soft->key != d->soft.key ||
	    !a != !d->soft.has_attr)
		return false;
	for (size_t i = 0; i < m->soft->n_uses && i < OBJ_MAX_USES; i++)
		if (m->soft->uses[i] != d->soft.uses[i])
			return false;
	return !a ||
	       (a->cqe == b->cqe && a->comp_vector == b->comp_vector &&
		a->qp_type == b->qp_type && a->max_send_wr == b->max_send_wr &&
		a->max_recv_wr == b->max_recv_wr &&
		a->max_send_sge == b->max_send_sge &&
		a->max_recv_sge == b->max_recv_sge &&
		a->max_inline_data == b->max_inline_data &&
		a->max_wr == b->max_wr && a->max_sge == b->max_sge &&
		a->srq_limit == b->srq_limit && a->mr_addr == b->mr_addr &&
		a->mr_length == b->mr_length && a->mr_access == b->mr_access &&
		a->sq_sig_all == b->sq_sig_all &&
		a->xrc_qp_num == b->xrc_qp_num);
}

/* Both readers on @len bytes at @p: they refuse it together, or read
 * the same. Returns whether protobuf-c read it. */
static bool both_read(const uint8_t *p, size_t len, const char *what,
		      unsigned int n)
{
	Rdmab__State__Object *m = rdmab__state__object__unpack(NULL, len, p);
	struct state_obj d;
	int r = state_obj_decode(p, len, &d);

	ck_assert_msg((m != NULL) == (r == 0),
		      "%s %u (%zu bytes): protobuf-c %s, by hand %d", what, n,
		      len, m ? "reads it" : "refuses it", r);
	if (m) {
		ck_assert_msg(obj_same(m, &d), "%s %u: read otherwise", what,
			      n);
		rdmab__state__object__free_unpacked(m, NULL);
	}
	return r == 0;
}

/* The fields obj_same() compares, per message: a field added to
 * proto/state.proto (or ObjAttr) fails the test below until the hand
 * reader and obj_same() know it, and the records made here carry it. */
static const struct {
	const ProtobufCMessageDescriptor *d;
	unsigned int n_fields;
} obj_fields[] = {
	{ &rdmab__state__object__descriptor, 13 },
	{ &rdmab__state__soft_object__descriptor, 6 },
	{ &rdmab__obj_attr__descriptor, 16 },
};

/* Records as restart.c writes them (and what it never does: uses beyond
 * OBJ_MAX_USES, every field at its bounds), then their mutations: a byte
 * changed, cut short, two records one after the other (a field given
 * twice: the last wins, messages merge; the first the previous record,
 * so that what the latter lacks is seen merged). Seeded. */
START_TEST(test_state_obj_decode)
{
	unsigned int seed = 25;
	uint8_t buf[1024], two[2048], prev[1024];
	size_t prev_len = 0;

	for (size_t i = 0; i < sizeof(obj_fields) / sizeof(obj_fields[0]); i++)
		ck_assert_msg(obj_fields[i].d->n_fields ==
				      obj_fields[i].n_fields,
			      "%s has %u fields, the hand reader's test "
			      "knows %u",
			      obj_fields[i].d->name, obj_fields[i].d->n_fields,
			      obj_fields[i].n_fields);

	for (unsigned int n = 0; n < 3000; n++) {
		Rdmab__State__Object m = RDMAB__STATE__OBJECT__INIT;
		Rdmab__State__SoftObject so = RDMAB__STATE__SOFT_OBJECT__INIT;
		Rdmab__ObjAttr a = RDMAB__OBJ_ATTR__INIT;
		uint32_t uses[6];
		size_t len, len2;

		m.owner = rnd(&seed, 64);
		m.ctx_id = rnd(&seed, 64);
		m.kind = (uint32_t)rnd(&seed, 32);
		m.handle = (uint32_t)rnd(&seed, 32);
		m.intent = rand_r(&seed) & 1;
		m.made_here = rand_r(&seed) & 1;
		m.window_made = rand_r(&seed) & 1;
		m.stuck = rand_r(&seed) & 1;
		m.family_owned = rand_r(&seed) & 1;
		m.dm_id = rnd(&seed, 64);
		m.xrcd_obj = rnd(&seed, 64);
		m.born_usec = rnd(&seed, 64);
		if (rand_r(&seed) % 4) {
			so.n_uses = (size_t)rand_r(&seed) % 7;
			for (size_t i = 0; i < so.n_uses; i++)
				uses[i] = (uint32_t)rnd(&seed, 32);
			so.uses = uses;
			so.used_mask = (uint32_t)rnd(&seed, 32);
			so.xrcd_ino = rnd(&seed, 64);
			so.num = (uint32_t)rnd(&seed, 32);
			so.key = (uint32_t)rnd(&seed, 32);
			if (rand_r(&seed) % 4) {
				a.cqe = (uint32_t)rnd(&seed, 32);
				a.comp_vector = (uint32_t)rnd(&seed, 32);
				a.qp_type = (uint32_t)rnd(&seed, 32);
				a.max_send_wr = (uint32_t)rnd(&seed, 32);
				a.max_recv_wr = (uint32_t)rnd(&seed, 32);
				a.max_send_sge = (uint32_t)rnd(&seed, 32);
				a.max_recv_sge = (uint32_t)rnd(&seed, 32);
				a.max_inline_data = (uint32_t)rnd(&seed, 32);
				a.max_wr = (uint32_t)rnd(&seed, 32);
				a.max_sge = (uint32_t)rnd(&seed, 32);
				a.srq_limit = (uint32_t)rnd(&seed, 32);
				a.mr_addr = rnd(&seed, 64);
				a.mr_length = rnd(&seed, 64);
				a.mr_access = (uint32_t)rnd(&seed, 32);
				a.sq_sig_all = (uint32_t)rnd(&seed, 32);
				a.xrc_qp_num = (uint32_t)rnd(&seed, 32);
				so.attr = &a;
			}
			m.soft = &so;
		}
		len = rdmab__state__object__pack(&m, buf);
		ck_assert(both_read(buf, len, "record", n));
		/* Each length short of it. */
		for (size_t cut = 0; cut < len; cut++)
			both_read(buf, cut, "cut", n);
		/* A byte changed, a few times. */
		for (unsigned int k = 0; k < 8 && len; k++) {
			size_t at = (size_t)rand_r(&seed) % len;
			uint8_t was = buf[at];

			buf[at] = (uint8_t)rand_r(&seed);
			both_read(buf, len, "mutation", n);
			buf[at] = was;
		}
		/* Given twice: the same bytes, then the previous record's
		 * before these. */
		len2 = rdmab__state__object__pack(&m, two);
		memcpy(two + len2, buf, len);
		ck_assert(both_read(two, len2 + len, "twice", n));
		memcpy(two, prev, prev_len);
		memcpy(two + prev_len, buf, len);
		ck_assert(both_read(two, prev_len + len, "after another", n));
		memcpy(prev, buf, len);
		prev_len = len;
	}
}
END_TEST

/* A field number by its name in @d. */
static uint32_t field_no(const ProtobufCMessageDescriptor *d, const char *name)
{
	const ProtobufCFieldDescriptor *fd =
		protobuf_c_message_descriptor_get_field_by_name(d, name);

	ck_assert_msg(fd, "%s has no field %s", d->name, name);
	return fd->id;
}

/* Others' fields (struct rec_fields): the last value wins, 0 takes one
 * out, and no more than REC_FIELDS_MAX. */
START_TEST(test_rec_fields)
{
	struct rec_fields a = { 0 }, b = { 0 };

	ck_assert_int_eq(rec_field_set(&a, 10, 5), 0);
	ck_assert_int_eq(rec_field_set(&a, 11, 6), 0);
	ck_assert_int_eq(rec_field_set(&a, 10, 7), 0);
	ck_assert_uint_eq(a.n, 2);
	ck_assert_uint_eq(rec_field_get(&a, 10), 7);
	ck_assert_uint_eq(rec_field_get(&a, 11), 6);
	ck_assert_uint_eq(rec_field_get(&a, 12), 0);
	ck_assert_int_eq(rec_field_set(&b, 11, 6), 0);
	ck_assert(!rec_fields_same(&a, &b));
	ck_assert_int_eq(rec_field_set(&b, 10, 7), 0);
	ck_assert(rec_fields_same(&a, &b));
	ck_assert_int_eq(rec_field_set(&a, 10, 0), 0);
	ck_assert_uint_eq(a.n, 1);
	ck_assert_uint_eq(rec_field_get(&a, 10), 0);
	ck_assert_uint_eq(rec_field_get(&a, 11), 6);
	ck_assert_int_eq(rec_field_set(&a, 12, 0), 0);
	ck_assert_uint_eq(a.n, 1);
	for (uint32_t f = 20; a.n < REC_FIELDS_MAX; f++)
		ck_assert_int_eq(rec_field_set(&a, f, f), 0);
	ck_assert_int_eq(rec_field_set(&a, 99, 1), -ENOSPC);
	ck_assert_int_eq(rec_field_set(&a, 11, 8), 0);
	ck_assert_uint_eq(rec_field_get(&a, 11), 8);
}
END_TEST

/* The families' fields of the Object record and the device's of its
 * SoftObject go by number: the numbers their files define are the
 * .proto's, every field the hand reader does not read by name is a
 * uint64 it keeps (within REC_FIELDS_MAX), and what the writer puts by
 * number reads back by number. */
START_TEST(test_state_fields)
{
	static const struct {
		const ProtobufCMessageDescriptor *d;
		const char *const *own;
	} msgs[] = {
		{ &rdmab__state__object__descriptor, object_own },
		{ &rdmab__state__soft_object__descriptor, soft_own },
	};
	Rdmab__State__Object m = RDMAB__STATE__OBJECT__INIT;
	Rdmab__State__SoftObject so = RDMAB__STATE__SOFT_OBJECT__INIT;
	struct rec_fields fam = { 0 }, dev = { 0 }, bad = { 0 };
	struct obj_spec spec = { .xrcd_ino = 77 }, back = { 0 };
	struct state_obj d;
	uint8_t buf[256];
	size_t len;

	ck_assert_uint_eq(DM_OBJECT_FIELD,
			  field_no(&rdmab__state__object__descriptor, "dm_id"));
	ck_assert_uint_eq(
		XRCD_OBJECT_FIELD,
		field_no(&rdmab__state__object__descriptor, "xrcd_obj"));
	for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
		unsigned int others = 0;

		for (unsigned int k = 0; k < msgs[i].d->n_fields; k++) {
			const ProtobufCFieldDescriptor *fd =
				&msgs[i].d->fields[k];
			bool mine = false;

			if (fd->type != PROTOBUF_C_TYPE_UINT64)
				continue;
			for (const char *const *o = msgs[i].own; *o; o++)
				mine |= strcmp(*o, fd->name) == 0;
			if (!mine) {
				ck_assert_int_eq(fd->label,
						 PROTOBUF_C_LABEL_NONE);
				others++;
			}
		}
		ck_assert_uint_le(others, REC_FIELDS_MAX);
	}

	/* The device's spec fields, through the record and back. */
	obj_spec_fields_save(&spec, &dev);
	ck_assert_uint_eq(dev.n, 1);
	ck_assert_uint_eq(
		rec_field_get(&dev,
			      field_no(&rdmab__state__soft_object__descriptor,
				       "xrcd_ino")),
		77);
	ck_assert_int_eq(state_fields_put(&so.base, &dev), 0);
	ck_assert_uint_eq(so.xrcd_ino, 77);
	ck_assert_int_eq(rec_field_set(&fam, DM_OBJECT_FIELD, 5), 0);
	ck_assert_int_eq(rec_field_set(&fam, XRCD_OBJECT_FIELD, 6), 0);
	ck_assert_int_eq(state_fields_put(&m.base, &fam), 0);
	ck_assert_uint_eq(m.dm_id, 5);
	ck_assert_uint_eq(m.xrcd_obj, 6);
	m.kind = IBC_OBJ_MR;
	m.soft = &so;
	len = rdmab__state__object__get_packed_size(&m);
	ck_assert_uint_le(len, sizeof(buf));
	rdmab__state__object__pack(&m, buf);
	ck_assert_int_eq(state_obj_decode(buf, len, &d), 0);
	ck_assert(rec_fields_same(&d.family, &fam));
	ck_assert(rec_fields_same(&d.soft.device, &dev));
	obj_spec_fields_load(&back, &d.soft.device);
	ck_assert_uint_eq(back.xrcd_ino, 77);

	/* A number that is no uint64 field of the message (the kind, a
	 * uint32; none at all): refused whole, nothing written. */
	m.dm_id = 0;
	ck_assert_int_eq(rec_field_set(&bad, DM_OBJECT_FIELD, 9), 0);
	ck_assert_int_eq(
		rec_field_set(
			&bad,
			field_no(&rdmab__state__object__descriptor, "kind"), 3),
		0);
	ck_assert_int_eq(state_fields_put(&m.base, &bad), -ENOENT);
	ck_assert_uint_eq(m.dm_id, 0);
	ck_assert_uint_eq(m.kind, IBC_OBJ_MR);
	bad.n = 0;
	ck_assert_int_eq(rec_field_set(&bad, 1000, 3), 0);
	ck_assert_int_eq(state_fields_put(&m.base, &bad), -ENOENT);
}
END_TEST

/* --- record_pack() against protobuf-c ---------------------------------- */

/* What a random message holds, freed at once. */
struct fill {
	unsigned int seed;
	void *owned[4096];
	size_t n_owned;
};

static void *fill_alloc(struct fill *f, size_t n)
{
	void *p = calloc(1, n ? n : 1);

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_lt(f->n_owned, sizeof(f->owned) / sizeof(f->owned[0]));
	f->owned[f->n_owned++] = p;
	return p;
}

/* A value of @bits random bits, 0 a third of the time (proto3 leaves
 * zeros out), all ones now and then. */
static uint64_t fill_value(struct fill *f, int bits)
{
	unsigned int r = (unsigned int)rand_r(&f->seed) % 6;
	uint64_t v = 0;

	if (r < 2)
		return 0;
	if (r == 2)
		return bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
	for (int i = 0; i < 4; i++)
		v = v << 16 | ((uint64_t)rand_r(&f->seed) & 0xffff);
	/* Short varints as much as long ones. */
	v >>= (unsigned int)rand_r(&f->seed) % 64;
	return bits == 64 ? v : v & ((1ull << bits) - 1);
}

static ProtobufCMessage *
fill_message(struct fill *f, const ProtobufCMessageDescriptor *d, int depth);

/* One element of field @fd at @at. */
static void fill_one(struct fill *f, const ProtobufCFieldDescriptor *fd,
		     void *at, int depth)
{
	static const char *const strs[] = { "", "a", "mlx5_0", "soft0",
					    "a-domain-name-of-more-than-"
					    "one-hundred-and-twenty-eight-"
					    "bytes-so-that-its-length-takes-"
					    "two-bytes-in-the-varint-xxxxxxx"
					    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" };
	uint64_t v;

	switch (fd->type) {
	case PROTOBUF_C_TYPE_BOOL:
		*(protobuf_c_boolean *)at = (int)fill_value(f, 1);
		break;
	case PROTOBUF_C_TYPE_UINT32:
		*(uint32_t *)at = (uint32_t)fill_value(f, 32);
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		v = fill_value(f, 64);
		memcpy(at, &v, sizeof(v));
		break;
	case PROTOBUF_C_TYPE_STRING:
		*(const char **)at =
			rand_r(&f->seed) % 5 ?
				strs[(unsigned int)rand_r(&f->seed) % 5] :
				(fd->label == PROTOBUF_C_LABEL_REPEATED ? "" :
									  NULL);
		break;
	case PROTOBUF_C_TYPE_BYTES: {
		ProtobufCBinaryData *b = at;

		b->len = (size_t)rand_r(&f->seed) % 3 ?
				 (size_t)rand_r(&f->seed) % 200 :
				 0;
		b->data = b->len ? fill_alloc(f, b->len) : NULL;
		for (size_t i = 0; i < b->len; i++)
			b->data[i] = (uint8_t)rand_r(&f->seed);
		break;
	}
	case PROTOBUF_C_TYPE_MESSAGE:
		*(ProtobufCMessage **)at =
			depth < 3 && (rand_r(&f->seed) % 4 ||
				      fd->label == PROTOBUF_C_LABEL_REPEATED) ?
				fill_message(f, fd->descriptor, depth + 1) :
				NULL;
		break;
	default:
		ck_abort_msg("field %s: a type the test does not fill",
			     fd->name);
	}
}

static size_t fill_size(const ProtobufCFieldDescriptor *fd)
{
	switch (fd->type) {
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_UINT32:
		return sizeof(uint32_t);
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	default:
		return sizeof(uint64_t);
	}
}

static ProtobufCMessage *
fill_message(struct fill *f, const ProtobufCMessageDescriptor *d, int depth)
{
	ProtobufCMessage *m = fill_alloc(f, d->sizeof_message);

	d->message_init(m);
	for (unsigned int i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *fd = &d->fields[i];
		char *at = (char *)m + fd->offset;

		if (fd->label != PROTOBUF_C_LABEL_REPEATED) {
			fill_one(f, fd, at, depth);
			continue;
		}
		size_t n = (size_t)rand_r(&f->seed) % 5, sz = fill_size(fd);
		char *arr = n ? fill_alloc(f, n * sz) : NULL;

		for (size_t k = 0; k < n; k++)
			fill_one(f, fd, arr + k * sz, depth);
		*(size_t *)((char *)m + fd->quantifier_offset) = n;
		*(char **)at = arr;
	}
	return m;
}

/* Every message of proto/state.proto, a few thousand random fills of
 * each: record_pack()'s bytes are protobuf-c's, and a buffer too small
 * by a byte is -ENOSPC, never a write past it. */
START_TEST(test_record_pack)
{
	static const ProtobufCMessageDescriptor *const descs[] = {
		&rdmab__state__counters__descriptor,
		&rdmab__state__device_serials__descriptor,
		&rdmab__state__id_space__descriptor,
		&rdmab__state__context__descriptor,
		&rdmab__state__import_records__descriptor,
		&rdmab__state__domain__descriptor,
		&rdmab__state__unnamed__descriptor,
		&rdmab__state__soft_object__descriptor,
		&rdmab__state__session_ctx__descriptor,
		&rdmab__state__session_hold__descriptor,
		&rdmab__state__session__descriptor,
		&rdmab__state__owner__descriptor,
		&rdmab__state__object__descriptor,
		&rdmab__state__dm_hold__descriptor,
		&rdmab__state__dm__descriptor,
		&rdmab__state__dm_session__descriptor,
		&rdmab__state__xrcd_name__descriptor,
		&rdmab__state__xrcd_open__descriptor,
		&rdmab__state__xrcd_table__descriptor,
		&rdmab__state__rss__descriptor,
	};
	static uint8_t want[65536], got[65536 + 64];
	struct fill *f = calloc(1, sizeof(*f));

	ck_assert_ptr_nonnull(f);
	f->seed = 2512;
	for (size_t i = 0; i < sizeof(descs) / sizeof(descs[0]); i++) {
		for (int round = 0; round < 2000; round++) {
			ProtobufCMessage *m = fill_message(f, descs[i], 0);
			size_t n = protobuf_c_message_get_packed_size(m);
			long r;

			ck_assert_uint_le(n, sizeof(want));
			ck_assert_uint_eq(protobuf_c_message_pack(m, want), n);
			memset(got, 0xa5, sizeof(got));
			r = record_pack(m, got, sizeof(got) - 64);
			ck_assert_msg(r == (long)n,
				      "%s round %d: %ld bytes, "
				      "protobuf-c %zu",
				      descs[i]->name, round, r, n);
			ck_assert_msg(memcmp(got, want, n) == 0,
				      "%s round %d: bytes differ",
				      descs[i]->name, round);
			if (n) {
				memset(got, 0xa5, sizeof(got));
				ck_assert_int_eq(record_pack(m, got, n - 1),
						 -ENOSPC);
				for (size_t k = n - 1; k < n + 64; k++)
					ck_assert_uint_eq(got[k], 0xa5);
			}
			while (f->n_owned)
				free(f->owned[--f->n_owned]);
		}
	}
	/* Unknown fields kept from an unpack: not written here, so
	 * journal_put() packs the record with protobuf-c, which keeps
	 * them. */
	{
		uint8_t unk_data[2] = { 0x07, 0x2a };
		ProtobufCMessageUnknownField unk = {
			99, PROTOBUF_C_WIRE_TYPE_VARINT, 1, unk_data
		};
		Rdmab__State__Session sess = RDMAB__STATE__SESSION__INIT;
		struct journal *j;
		struct journal_view *v;
		uint8_t *buf;
		size_t len;

		sess.requests = 77;
		sess.base.n_unknown_fields = 1;
		sess.base.unknown_fields = &unk;
		ck_assert_int_eq(record_pack(&sess.base, got, sizeof(got)),
				 -ENOTSUP);
		ck_assert_int_eq(journal_create(9, &j), 0);
		ck_assert_int_eq(journal_put(j, JOURNAL_SESSION, 5, &sess.base),
				 0);
		buf = snap(j, &len);
		v = read_buf(buf, len);
		ck_assert_int_eq(val_of(v, 5), 77);
		journal_view_free(v);
		free(buf);
		journal_free(j);
	}
	free(f);
}
END_TEST

static Suite *journal_suite(void)
{
	Suite *s = suite_create("journal");
	TCase *tc = tcase_create("journal");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_kill_inside_transaction);
	tcase_add_test(tc, test_retract);
	tcase_add_test(tc, test_slots);
	tcase_add_test(tc, test_record_pack);
	tcase_add_test(tc, test_corrupt_and_cut);
	tcase_add_test(tc, test_refuses_unknown);
	tcase_add_test(tc, test_compaction);
	tcase_add_test(tc, test_failed_write_refuses);
	tcase_add_test(tc, test_crc);
	tcase_add_test(tc, test_fdstore_names);
	tcase_add_test(tc, test_fdstore_passed_kept);
	tcase_add_test(tc, test_fdstore_one_socket);
	tcase_add_test(tc, test_fdstore_put_interrupted);
	tcase_add_test(tc, test_fdstore_passed_which);
	tcase_add_test(tc, test_fdstore_kept_order);
	tcase_add_test(tc, test_keysort);
	tcase_add_test(tc, test_keysort_sizes);
	tcase_add_test(tc, test_each_by_kind);
	tcase_add_test(tc, test_state_obj_decode);
	tcase_add_test(tc, test_rec_fields);
	tcase_add_test(tc, test_state_fields);
	tcase_add_test(tc, test_inflight);
	tcase_add_test(tc, test_inflight_blocks);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	log_max_priority = LOG_ERR;
	/* No systemd here: the store keeps its table only. */
	unsetenv("NOTIFY_SOCKET");
	return ck_run("journal", journal_suite());
}
