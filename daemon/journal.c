// SPDX-License-Identifier: MIT
/*
 * The state journal (journal.h): the log's writer, its index of live
 * records (what a compaction copies) and the reader a restore and the
 * fuzzer run.
 *
 * The memfd: a JOURNAL_HDR_SIZE header (struct jhdr), then records, each
 * a struct jrec and its bytes padded to 8. A record's word is 0 until the
 * record is whole; then JREC_PART (a transaction goes on) or JREC_COMMIT.
 * The file grows by ftruncate(); the mapping reserves JOURNAL_SIZE_MAX
 * once, so records never move.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/journal.h"
#include "daemon/keysort.h"

#define JHDR_MAGIC 0x4c4e524a42414d44ull /* "DMABJRNL" */
#define JOURNAL_HDR_SIZE 4096u
#define JOURNAL_GROW (1u << 20)
#define JREC_PART 0x5452415042524a52ull /* "RJRBPART" */
#define JREC_COMMIT 0x54494d4d4f43424aull /* "JBCOMMIT" */
#define JREC_DEL 1u
/* The complete word: every record of the snapshot is in. */
#define JHDR_COMPLETE 0x4554454c504d4f43ull

struct jhdr {
	uint64_t magic;
	uint32_t format;
	uint32_t hdr_size;
	uint64_t gen;
	/* JHDR_COMPLETE once sealed, stored last. */
	uint64_t complete;
};

struct jrec {
	uint64_t word;
	uint32_t len;
	uint32_t kind;
	uint64_t key;
	uint32_t flags;
	/* CRC-32C of len, kind, key, flags and the bytes. */
	uint32_t crc;
};

_Static_assert(sizeof(struct jrec) == 32, "jrec is 32 bytes");

/* One live record: where its bytes are. */
struct jent {
	uint64_t key;
	uint32_t kind; /* 0: empty slot */
	uint32_t len;
	const uint8_t *data;
};

/* Open addressing on (kind, key), linear probing, deletion by backward
 * shift so that no tombstone lengthens a probe. */
struct jmap {
	struct jent *slot;
	size_t cap, n;
};

struct journal {
	int fd;
	uint8_t *map;
	size_t size; /* the file's */
	size_t tail; /* where the next record goes */
	uint64_t gen;
	struct jmap live;
	unsigned int depth;
	/* Records of the open transaction: the last one gets the commit. */
	struct jrec *last_part;
	bool broken;
	size_t base; /* the last compaction's size */
};

struct journal_view {
	uint64_t gen;
	uint8_t *buf; /* the copy the records point into */
	struct jmap live;
};

/* --- CRC-32C (Castagnoli), bytewise from a table made once ------------- */

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
#endif

static uint32_t (*crc32c)(uint32_t crc, const void *p, size_t n) = crc32c_sw;

static void crc_init(void)
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
	if (__builtin_cpu_supports("sse4.2"))
		crc32c = crc32c_hw;
#endif
}

uint32_t journal_crc32c(const void *p, size_t n, bool hw)
{
	crc_init();
	return hw ? crc32c(0, p, n) : crc32c_sw(0, p, n);
}

static uint32_t rec_crc(const struct jrec *r, const uint8_t *data)
{
	uint32_t c = crc32c(0, &r->len, offsetof(struct jrec, crc) -
						offsetof(struct jrec, len));

	return crc32c(c, data, r->len);
}

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* --- the index ---------------------------------------------------------- */

static size_t jmap_hash(uint32_t kind, uint64_t key, size_t cap)
{
	uint64_t h = (key ^ ((uint64_t)kind << 56)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 17) & (cap - 1);
}

static struct jent *jmap_find(const struct jmap *m, uint32_t kind,
			      uint64_t key)
{
	if (!m->cap)
		return NULL;
	for (size_t i = jmap_hash(kind, key, m->cap);;
	     i = (i + 1) & (m->cap - 1)) {
		struct jent *e = &m->slot[i];

		if (!e->kind)
			return NULL;
		if (e->kind == kind && e->key == key)
			return e;
	}
}

static int jmap_grow(struct jmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct jent *old = m->slot;
	size_t old_cap = m->cap;

	m->slot = calloc(cap, sizeof(*m->slot));
	if (!m->slot) {
		m->slot = old;
		return -ENOMEM;
	}
	m->cap = cap;
	for (size_t i = 0; i < old_cap; i++) {
		size_t j;

		if (!old[i].kind)
			continue;
		j = jmap_hash(old[i].kind, old[i].key, cap);
		while (m->slot[j].kind)
			j = (j + 1) & (cap - 1);
		m->slot[j] = old[i];
	}
	free(old);
	return 0;
}

/* Make room first, so that the set that follows cannot fail. */
static int jmap_reserve(struct jmap *m)
{
	if ((m->n + 1) * 4 > m->cap * 3)
		return jmap_grow(m);
	return 0;
}

/* Room for @n entries at half load, made before they come: entries that
 * come in another table's slot order (a compacted state, read back or
 * copied) into a table that grows as they come cluster into probes of
 * thousands (a restore's read was 200 M instructions of them). */
static int jmap_presize(struct jmap *m, size_t n)
{
	while (m->cap < n * 2) {
		int err = jmap_grow(m);

		if (err < 0)
			return err;
	}
	return 0;
}

static void jmap_set(struct jmap *m, uint32_t kind, uint64_t key,
		     const uint8_t *data, uint32_t len)
{
	struct jent *e = jmap_find(m, kind, key);

	if (!e) {
		size_t i = jmap_hash(kind, key, m->cap);

		while (m->slot[i].kind)
			i = (i + 1) & (m->cap - 1);
		e = &m->slot[i];
		e->kind = kind;
		e->key = key;
		m->n++;
	}
	e->data = data;
	e->len = len;
}

static void jmap_del(struct jmap *m, uint32_t kind, uint64_t key)
{
	struct jent *e = jmap_find(m, kind, key);
	size_t i, j;

	if (!e)
		return;
	i = (size_t)(e - m->slot);
	m->slot[i].kind = 0;
	m->n--;
	/* Backward shift: pull up every entry of the cluster that the hole
	 * now cuts off from its home. */
	for (j = (i + 1) & (m->cap - 1); m->slot[j].kind;
	     j = (j + 1) & (m->cap - 1)) {
		size_t home = jmap_hash(m->slot[j].kind, m->slot[j].key,
					m->cap);

		if (((j - home) & (m->cap - 1)) >= ((j - i) & (m->cap - 1))) {
			m->slot[i] = m->slot[j];
			m->slot[j].kind = 0;
			i = j;
		}
	}
}

static void jmap_free(struct jmap *m)
{
	free(m->slot);
	m->slot = NULL;
	m->cap = m->n = 0;
}

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

	crc_init();
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
	return j && !j->depth && j->tail > 2 * j->base + JOURNAL_SLACK;
}

static void journal_seal(struct journal *j)
{
	struct jhdr *h = (struct jhdr *)j->map;

	__atomic_store_n(&h->complete, JHDR_COMPLETE, __ATOMIC_RELEASE);
	j->base = j->tail;
}

bool journal_broken(const struct journal *j)
{
	return j && j->broken;
}

/* Append one record; the index follows. */
static int journal_append(struct journal *j, uint32_t kind, uint64_t key,
			  uint32_t flags, const uint8_t *data, size_t len,
			  void (*pack)(const void *msg, uint8_t *out),
			  const void *msg)
{
	size_t need = j->tail + sizeof(struct jrec) + pad8(len);
	struct jrec *r;
	uint8_t *out;
	int ret;

	if (j->broken)
		return -EIO;
	if (!kind || kind > JOURNAL_KIND_MAX)
		return -EINVAL;
	if (len > JOURNAL_RECORD_MAX)
		return -E2BIG;
	if (need > j->size) {
		ret = journal_grow(j, need);
		if (ret < 0)
			goto broken;
	}
	ret = jmap_reserve(&j->live);
	if (ret < 0)
		goto broken;
	r = (struct jrec *)(j->map + j->tail);
	out = (uint8_t *)(r + 1);
	if (pack)
		pack(msg, out);
	else if (len)
		memcpy(out, data, len);
	r->len = (uint32_t)len;
	r->kind = kind;
	r->key = key;
	r->flags = flags;
	r->crc = rec_crc(r, out);
	if (flags & JREC_DEL)
		jmap_del(&j->live, kind, key);
	else
		jmap_set(&j->live, kind, key, out, (uint32_t)len);
	j->tail = need;
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
	return 0;

broken:
	j->broken = true;
	return ret;
}

static void pack_msg(const void *msg, uint8_t *out)
{
	protobuf_c_message_pack(msg, out);
}

int journal_put(struct journal *j, uint32_t kind, uint64_t key,
		const ProtobufCMessage *msg)
{
	if (!j)
		return 0;
	return journal_append(j, kind, key, 0, NULL,
			      protobuf_c_message_get_packed_size(msg), pack_msg,
			      msg);
}

int journal_put_packed(struct journal *j, uint32_t kind, uint64_t key,
		       const uint8_t *data, size_t len)
{
	if (!j)
		return 0;
	return journal_append(j, kind, key, 0, data, len, NULL, NULL);
}

int journal_del(struct journal *j, uint32_t kind, uint64_t key)
{
	if (!j || !jmap_find(&j->live, kind, key))
		return 0;
	return journal_append(j, kind, key, JREC_DEL, NULL, 0, NULL, NULL);
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

/* Copy every live record of @m into @to (a compaction or an adopt). */
static int journal_copy(struct journal *to, const struct jmap *m)
{
	for (size_t i = 0; i < m->cap; i++) {
		const struct jent *e = &m->slot[i];
		int ret;

		if (!e->kind)
			continue;
		ret = journal_append(to, e->kind, e->key, 0, e->data, e->len,
				     NULL, NULL);
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
	return journal_copy_new(&j->live, j->gen + 1, ret);
}

int journal_from_view(const struct journal_view *v, uint64_t gen,
		      struct journal **ret)
{
	return journal_copy_new(v ? &v->live : NULL, gen, ret);
}

/* --- the reader --------------------------------------------------------- */

static int why_set(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int why_set(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

struct pending {
	const struct jrec *r;
	const uint8_t *data;
};

/* The reader proper, on @buf (taken: the view keeps it or it is
 * freed). */
static int read_owned(uint8_t *buf, size_t len, struct journal_view **ret,
		      char *why, size_t why_len)
{
	struct journal_view *v;
	struct pending *pend = NULL;
	size_t n_pend = 0, cap_pend = 0, off, n_recs = 0;
	struct jhdr h;
	int err = 0;

	crc_init();
	v = calloc(1, sizeof(*v));
	if (!v) {
		free(buf);
		return -ENOMEM;
	}
	v->buf = buf;
	if (len < sizeof(h)) {
		err = why_set(why, why_len, "the state is %zu bytes, "
			      "shorter than its header", len);
		goto fail;
	}
	memcpy(&h, buf, sizeof(h));
	if (h.magic != JHDR_MAGIC) {
		err = why_set(why, why_len, "the state has no journal magic");
		goto fail;
	}
	if (h.format != JOURNAL_FORMAT) {
		err = why_set(why, why_len, "the state's format %u is not "
			      "one this daemon reads (%u)", h.format,
			      JOURNAL_FORMAT);
		goto fail;
	}
	if (h.hdr_size != JOURNAL_HDR_SIZE || len < JOURNAL_HDR_SIZE) {
		err = why_set(why, why_len, "the state's header is cut "
			      "short or of a size not %u bytes",
			      JOURNAL_HDR_SIZE);
		goto fail;
	}
	if (h.complete != JHDR_COMPLETE) {
		err = why_set(why, why_len, "the state of generation "
			      "%" PRIu64 " was never completed", h.gen);
		goto fail;
	}
	v->gen = h.gen;
	/* The records, counted first: up to the first the loop below would
	 * refuse, so that bad bytes never size the table. */
	for (off = JOURNAL_HDR_SIZE; off + sizeof(struct jrec) <= len;) {
		const struct jrec *r = (const struct jrec *)(v->buf + off);

		if ((r->word != JREC_PART && r->word != JREC_COMMIT) ||
		    r->len > JOURNAL_RECORD_MAX ||
		    r->len > len - off - sizeof(*r) ||
		    rec_crc(r, (const uint8_t *)(r + 1)) != r->crc)
			break;
		n_recs++;
		off += sizeof(*r) + pad8(r->len);
	}
	err = jmap_presize(&v->live, n_recs);
	if (err < 0)
		goto fail;
	for (off = JOURNAL_HDR_SIZE; off + sizeof(struct jrec) <= len;) {
		const struct jrec *r = (const struct jrec *)(v->buf + off);
		const uint8_t *data = (const uint8_t *)(r + 1);

		if (r->word == 0)
			break;
		if (r->word != JREC_PART && r->word != JREC_COMMIT) {
			err = why_set(why, why_len, "record at byte %zu of "
				      "the state has no mark", off);
			goto fail;
		}
		if (r->len > JOURNAL_RECORD_MAX ||
		    r->len > len - off - sizeof(*r)) {
			err = why_set(why, why_len, "record at byte %zu of "
				      "the state runs past its end", off);
			goto fail;
		}
		if (!r->kind || r->kind > JOURNAL_KIND_MAX ||
		    (r->flags & ~JREC_DEL)) {
			err = why_set(why, why_len, "record at byte %zu of "
				      "the state has kind %u, flags %#x", off,
				      r->kind, r->flags);
			goto fail;
		}
		if (rec_crc(r, data) != r->crc) {
			err = why_set(why, why_len, "record at byte %zu of "
				      "the state fails its CRC", off);
			goto fail;
		}
		if (n_pend == cap_pend) {
			struct pending *p;

			cap_pend = cap_pend ? cap_pend * 2 : 16;
			p = realloc(pend, cap_pend * sizeof(*p));
			if (!p) {
				err = -ENOMEM;
				goto fail;
			}
			pend = p;
		}
		pend[n_pend++] = (struct pending){ r, data };
		if (r->word == JREC_COMMIT) {
			for (size_t i = 0; i < n_pend; i++) {
				const struct jrec *p = pend[i].r;

				if (p->flags & JREC_DEL) {
					jmap_del(&v->live, p->kind, p->key);
					continue;
				}
				err = jmap_reserve(&v->live);
				if (err < 0)
					goto fail;
				jmap_set(&v->live, p->kind, p->key,
					 pend[i].data, p->len);
			}
			n_pend = 0;
		}
		off += sizeof(*r) + pad8(r->len);
	}
	/* What follows the last commit (a transaction the kill cut) was
	 * never a state the daemon was in. */
	free(pend);
	*ret = v;
	return 0;

fail:
	free(pend);
	journal_view_free(v);
	return err;
}

int journal_read(const uint8_t *buf, size_t len, struct journal_view **ret,
		 char *why, size_t why_len)
{
	uint8_t *copy = malloc(len ? len : 1);

	if (!copy)
		return -ENOMEM;
	if (len)
		memcpy(copy, buf, len);
	return read_owned(copy, len, ret, why, why_len);
}

void journal_view_free(struct journal_view *v)
{
	if (!v)
		return;
	jmap_free(&v->live);
	free(v->buf);
	free(v);
}

uint64_t journal_view_gen(const struct journal_view *v)
{
	return v->gen;
}

size_t journal_view_count(const struct journal_view *v, uint32_t kind)
{
	size_t n = 0;

	for (size_t i = 0; i < v->live.cap; i++)
		n += v->live.slot[i].kind == kind;
	return n;
}

int journal_each(const struct journal_view *v, uint32_t kind,
		 int (*fn)(void *arg, const struct journal_rec *r), void *arg)
{
	size_t n = journal_view_count(v, kind), k = 0;
	struct journal_rec *recs;
	int ret = 0;

	if (!n)
		return 0;
	recs = calloc(n, sizeof(*recs));
	if (!recs)
		return -ENOMEM;
	for (size_t i = 0; i < v->live.cap; i++) {
		const struct jent *e = &v->live.slot[i];

		if (e->kind != kind)
			continue;
		recs[k++] = (struct journal_rec){ e->kind, e->key, e->data,
						  e->len };
	}
	/* qsort() was 115 M instructions of a restore's 100,000 objects. */
	ret = keysort(recs, n, sizeof(*recs),
		      offsetof(struct journal_rec, key));
	for (size_t i = 0; i < n && ret >= 0; i++)
		ret = fn(arg, &recs[i]);
	free(recs);
	return ret < 0 ? ret : 0;
}

int journal_find(const struct journal_view *v, uint32_t kind, uint64_t key,
		 struct journal_rec *ret)
{
	const struct jent *e = jmap_find(&v->live, kind, key);

	if (!e)
		return -ENOENT;
	*ret = (struct journal_rec){ e->kind, e->key, e->data, e->len };
	return 0;
}

int journal_read_fd(int fd, struct journal_view **ret, char *why,
		    size_t why_len)
{
	struct stat st;
	uint8_t *buf;
	size_t got = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size < 0 ||
	    (uint64_t)st.st_size > JOURNAL_SIZE_MAX)
		return why_set(why, why_len, "the stored state is not a "
				"file of at most %llu bytes",
				(unsigned long long)JOURNAL_SIZE_MAX);
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf)
		return -ENOMEM;
	while (got < (size_t)st.st_size) {
		ssize_t n = pread(fd, buf + got, (size_t)st.st_size - got,
				  (off_t)got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return read_owned(buf, got, ret, why, why_len);
}
