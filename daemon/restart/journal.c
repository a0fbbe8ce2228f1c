// SPDX-License-Identifier: MIT
/*
 * The state journal's writer (journal.h): records appended, committed,
 * taken back, and copied into a fresh memfd (a compaction, a restore).
 * The memfd's layout is journal-int.h's; the slots are journal-slots.c's,
 * the reader journal-read.c's.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/restart/journal.h"
#include "daemon/restart/journal-int.h"
#include "daemon/restart/record-pack.h"

/* A record journal_put() packs on the stack: an object's is about 100
 * bytes, a session's a few hundred. */
#define JOURNAL_PACK_BUF 1024

/* --- the writer --------------------------------------------------------- */

static void journal_seal(struct journal *j);

static int journal_map(struct journal *j)
{
	void *p = mmap(NULL, JOURNAL_SIZE_MAX, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_NORESERVE, j->fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	j->map = p;
	return 0;
}

static int journal_grow(struct journal *j, size_t need)
{
	size_t size = j->size;

	while (size < need)
		size += size < JOURNAL_GROW * 16 ? size : JOURNAL_GROW * 16;
	if (size > JOURNAL_SIZE_MAX)
		return -ENOSPC;
	if (ftruncate(j->fd, (off_t)size) < 0)
		return -errno;
	j->size = size;
	return 0;
}

int journal_create(uint64_t gen, struct journal **ret)
{
	struct journal *j;
	struct jhdr *h;
	int ret_err;

	journal_crc_init();
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->gen = gen;
	j->fd = memfd_create("rdmabroker-state",
			     MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (j->fd < 0) {
		ret_err = -errno;
		goto fail;
	}
	j->size = JOURNAL_GROW;
	/* Shrinking would SIGBUS the mapping; only we grow it. */
	if (ftruncate(j->fd, (off_t)j->size) < 0 ||
	    fcntl(j->fd, F_ADD_SEALS, F_SEAL_SHRINK) < 0) {
		ret_err = -errno;
		goto fail;
	}
	ret_err = journal_map(j);
	if (ret_err < 0)
		goto fail;
	h = (struct jhdr *)j->map;
	h->magic = JHDR_MAGIC;
	h->format = JOURNAL_FORMAT;
	h->hdr_size = JOURNAL_HDR_SIZE;
	h->gen = gen;
	j->tail = JOURNAL_HDR_SIZE;
	/* Empty is complete; a compaction seals again once it copied. */
	journal_seal(j);
	*ret = j;
	return 0;

fail:
	journal_free(j);
	return ret_err;
}

void journal_free(struct journal *j)
{
	if (!j)
		return;
	if (j->map)
		munmap(j->map, JOURNAL_SIZE_MAX);
	if (j->fd >= 0)
		close(j->fd);
	jmap_free(&j->live);
	journal_slots_free(j);
	free(j);
}

int journal_fd(const struct journal *j)
{
	return j->fd;
}

uint64_t journal_gen(const struct journal *j)
{
	return j->gen;
}

size_t journal_used(const struct journal *j)
{
	return j->tail;
}

bool journal_wants_compaction(const struct journal *j)
{
	/* Not a broken one: its copy would seal a state that misses what
	 * failed. */
	return j && !j->depth && !j->broken && j->tail > j->full_at;
}

void journal_on_full(struct journal *j, void (*fn)(void *arg), void *arg)
{
	j->on_full = fn;
	j->full_arg = arg;
}

void journal_rebase(struct journal *j)
{
	j->base = j->tail;
	j->full_at = 2 * j->base + JOURNAL_SLACK;
}

int journal_reserve(struct journal *j, size_t n)
{
	return jmap_presize(&j->live, j->live.n + n);
}

static void journal_seal(struct journal *j)
{
	struct jhdr *h = (struct jhdr *)j->map;

	__atomic_store_n(&h->complete, JHDR_COMPLETE, __ATOMIC_RELEASE);
	j->base = j->tail;
	j->full_at = 2 * j->base + JOURNAL_SLACK;
}

/* A write failed: the memfd says so, so that a daemon started after a
 * kill does not take a state that lacks it. */
int journal_break(struct journal *j, int err)
{
	struct jhdr *h = (struct jhdr *)j->map;

	if (!j->broken)
		j->err = err;
	j->broken = true;
	__atomic_store_n(&h->complete, JHDR_BROKEN, __ATOMIC_RELEASE);
	return err;
}

bool journal_broken(const struct journal *j)
{
	return j && j->broken;
}

int journal_error(const struct journal *j)
{
	return j && j->broken ? j->err : 0;
}

/*
 * Room at the tail for a record of @len bytes: its header, its bytes'
 * last word zeroed (the CRC covers the padding). Nothing is written when
 * this fails, and the journal is broken.
 */
JOURNAL_HOT int rec_open(struct journal *j, uint32_t kind, size_t len,
			 struct jrec **ret)
{
	size_t need = j->tail + sizeof(struct jrec) + pad8(len);
	struct jrec *r;
	int err;

	if (j->broken)
		return -EIO;
	if (!kind || kind > JOURNAL_KIND_MAX)
		return journal_break(j, -EINVAL);
	if (len > JOURNAL_RECORD_MAX)
		return journal_break(j, -E2BIG);
	if (need > j->size) {
		err = journal_grow(j, need);
		if (err < 0)
			return journal_break(j, err);
	}
	r = (struct jrec *)(j->map + j->tail);
	if (len & 7)
		memset((uint8_t *)(r + 1) + (len & ~(size_t)7), 0, 8);
	*ret = r;
	return 0;
}

/* The header of @r, whose bytes are in, its CRC, then its word: the
 * record's last store. */
JOURNAL_HOT void rec_close(struct journal *j, struct jrec *r, uint32_t kind,
			   uint64_t key, uint32_t flags, size_t len)
{
	r->len = (uint32_t)len;
	r->kind = (uint16_t)kind;
	r->flags = (uint16_t)flags;
	r->key = key;
	r->crc = rec_crc(r);
	j->tail += sizeof(*r) + pad8(len);
	j->solo_new = NULL;
	if (j->depth) {
		/* The previous part is whole; this one waits for the
		 * commit or the next part. */
		if (j->last_part)
			__atomic_store_n(&j->last_part->word, JREC_PART,
					 __ATOMIC_RELEASE);
		j->last_part = r;
	} else {
		__atomic_store_n(&r->word, JREC_COMMIT, __ATOMIC_RELEASE);
	}
	/* One compare per record, where a query after each write was a
	 * call of its own. */
	if (j->tail > j->full_at && j->on_full)
		j->on_full(j->full_arg);
}

/* Append the state of (@kind, @key): @len bytes, from @data or made by
 * @pack(@msg); the index follows. */
JOURNAL_HOT int journal_append(struct journal *j, uint32_t kind, uint64_t key,
			       const uint8_t *data, size_t len,
			       void (*pack)(const void *msg, uint8_t *out),
			       const void *msg)
{
	struct jrec *r;
	struct jent *e;
	uint8_t *out;
	bool made = false;
	int err;

	err = rec_open(j, kind, len, &r);
	if (err < 0)
		return err;
	err = jmap_reserve(&j->live);
	if (err < 0)
		return journal_break(j, err);
	out = (uint8_t *)(r + 1);
	if (pack)
		pack(msg, out);
	else if (len)
		memcpy(out, data, len);
	e = jmap_set(&j->live, kind, key, out, (uint32_t)len, &made);
	rec_close(j, r, kind, key, 0, len);
	/* After rec_close(), which forgets the last one. */
	if (made && !j->depth) {
		j->solo_new = r;
		j->solo_slot = (size_t)(e - j->live.slot);
	}
	return 0;
}

static void pack_msg(const void *msg, uint8_t *out)
{
	protobuf_c_message_pack(msg, out);
}

int journal_put(struct journal *j, uint32_t kind, uint64_t key,
		const ProtobufCMessage *msg)
{
	uint8_t buf[JOURNAL_PACK_BUF];
	long n;

	if (!j)
		return 0;
	/* protobuf-c only for what record_pack() does not write, or a
	 * record larger than the buffer. */
	n = record_pack(msg, buf, sizeof(buf));
	if (n >= 0)
		return journal_append(j, kind, key, buf, (size_t)n, NULL, NULL);
	return journal_append(j, kind, key, NULL,
			      protobuf_c_message_get_packed_size(msg), pack_msg,
			      msg);
}

int journal_put_packed(struct journal *j, uint32_t kind, uint64_t key,
		       const uint8_t *data, size_t len)
{
	if (!j)
		return 0;
	return journal_append(j, kind, key, data, len, NULL, NULL);
}

/*
 * The end of a key whose only record is the log's last, committed alone
 * (@j->solo_new, @e its entry): the record is taken back instead of a
 * tombstone written after it, so that a put and its del (a context's
 * open and close) cost one record and leave the log as it was. The log
 * without that record is the state before its put, which is the state
 * after the del: no key of it had another record. A kill at any store
 * below leaves one of the two: the word goes first (a reader stops at a
 * word 0), then the bytes, which are zeroed so that no later, shorter
 * record leaves any behind it (a client's bytes that a reader would
 * take for a record's header).
 */
static void journal_retract(struct journal *j, struct jent *e)
{
	struct jrec *r = j->solo_new;
	size_t size = sizeof(*r) + pad8(r->len);

	__atomic_store_n(&r->word, 0, __ATOMIC_RELEASE);
	/* The zeroing must not be made before the word's store. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	memset((uint8_t *)r + sizeof(r->word), 0, size - sizeof(r->word));
	j->tail -= size;
	j->solo_new = NULL;
	jmap_del_at(&j->live, e);
}

int journal_del(struct journal *j, uint32_t kind, uint64_t key)
{
	struct jent *e;
	struct jrec *r;
	int err;

	if (!j)
		return 0;
	/* Not inside a transaction: the del would show before its commit. */
	if (j->solo_new && j->solo_new->key == key &&
	    j->solo_new->kind == kind && !j->depth && !j->broken) {
		e = &j->live.slot[j->solo_slot];
		if (e->kind != kind || e->key != key)
			e = jmap_find(&j->live, kind, key);
		/* The key's only record is the last one. */
		if (e && e->data == (uint8_t *)(j->solo_new + 1)) {
			journal_retract(j, e);
			return 0;
		}
	}
	e = jmap_find(&j->live, kind, key);
	if (!e)
		return 0;
	err = rec_open(j, kind, 0, &r);
	if (err < 0)
		return err;
	jmap_del_at(&j->live, e);
	rec_close(j, r, kind, key, JREC_DEL, 0);
	return 0;
}

void journal_begin(struct journal *j)
{
	if (j)
		j->depth++;
}

void journal_commit(struct journal *j)
{
	if (!j || !j->depth || --j->depth)
		return;
	if (j->last_part)
		__atomic_store_n(&j->last_part->word, JREC_COMMIT,
				 __ATOMIC_RELEASE);
	j->last_part = NULL;
}

/*
 * Block @key of slots (journal-slots.c) at the tail, committed alone and
 * indexed: @data's slots as they are (a compaction's copy), or all free
 * (NULL); *@ret its first slot, in the mapping.
 */
int journal_append_block(struct journal *j, uint64_t key, const uint8_t *data,
			 struct jslot **ret)
{
	struct jslot *s;
	struct jrec *r;
	bool made = false;
	int err;

	err = rec_open(j, JOURNAL_SLOTS, JSLOT_BLOCK_LEN, &r);
	if (err < 0)
		return err;
	err = jmap_reserve(&j->live);
	if (err < 0)
		return journal_break(j, err);
	s = (struct jslot *)(r + 1);
	if (data)
		memcpy(s, data, JSLOT_BLOCK_LEN);
	else
		memset(s, 0, JSLOT_BLOCK_LEN);
	jmap_set(&j->live, JOURNAL_SLOTS, key, (uint8_t *)s, JSLOT_BLOCK_LEN,
		 &made);
	rec_close(j, r, JOURNAL_SLOTS, key, JREC_SLOTS, JSLOT_BLOCK_LEN);
	*ret = s;
	return 0;
}

/* Copy every live record of @m into @to (a compaction or an adopt). */
static int journal_copy(struct journal *to, const struct jmap *m)
{
	for (size_t i = 0; i < m->cap; i++) {
		const struct jent *e = &m->slot[i];
		int ret;

		if (!e->kind)
			continue;
		if (e->kind == JOURNAL_SLOTS)
			ret = journal_slot_block_put(to, e->key, e->data);
		else
			ret = journal_append(to, e->kind, e->key, e->data,
					     e->len, NULL, NULL);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* A fresh journal of generation @gen holding @m's records, sealed. */
static int journal_copy_new(const struct jmap *m, uint64_t gen,
			    struct journal **ret)
{
	struct journal *fresh;
	int err;

	err = journal_create(gen, &fresh);
	if (err < 0)
		return err;
	err = m ? jmap_presize(&fresh->live, m->n) : 0;
	if (err == 0 && m)
		err = journal_copy(fresh, m);
	if (err < 0) {
		journal_free(fresh);
		return err;
	}
	journal_seal(fresh);
	*ret = fresh;
	return 0;
}

int journal_compact(const struct journal *j, struct journal **ret)
{
	int err = journal_copy_new(&j->live, j->gen + 1, ret);

	if (err == 0)
		journal_on_full(*ret, j->on_full, j->full_arg);
	return err;
}

int journal_from_view(const struct journal_view *v, uint64_t gen,
		      struct journal **ret)
{
	return journal_copy_new(v ? &v->live : NULL, gen, ret);
}

/* The writer's live record, as journal_find() finds a view's. */
int journal_get(const struct journal *j, uint32_t kind, uint64_t key,
		struct journal_rec *ret)
{
	const struct jent *e = j ? jmap_find(&j->live, kind, key) : NULL;

	if (!e)
		return -ENOENT;
	*ret = (struct journal_rec){ e->kind, e->key, e->data, e->len };
	return 0;
}
