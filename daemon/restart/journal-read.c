// SPDX-License-Identifier: MIT
/*
 * The journal's reader (journal.h): a stored state read into a view, the
 * records up to the last commit with their CRCs checked, what a restore
 * and the fuzzer walk.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/restart/journal.h"
#include "daemon/restart/journal-int.h"
#include "daemon/util/array.h"
#include "daemon/util/keysort.h"

int journal_why(char *why, size_t len, const char *fmt, ...)
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

/* @v's byk and at from its table: 0 or -ENOMEM. */
static int view_index(struct journal_view *v)
{
	size_t fill[JOURNAL_KIND_MAX + 1] = { 0 };

	for (size_t i = 0; i < v->live.cap; i++)
		v->at[v->live.slot[i].kind + 1]++;
	/* Slot kind 0 (empty) counted into at[1]: dropped below. */
	v->at[1] = 0;
	for (size_t k = 1; k <= JOURNAL_KIND_MAX + 1; k++)
		v->at[k] += v->at[k - 1];
	if (!v->live.n)
		return 0;
	v->byk = malloc(v->live.n * sizeof(*v->byk));
	if (!v->byk)
		return -ENOMEM;
	for (size_t i = 0; i < v->live.cap; i++) {
		const struct jent *e = &v->live.slot[i];

		if (e->kind)
			v->byk[v->at[e->kind] + fill[e->kind]++] =
				(struct journal_rec){ e->kind, e->key, e->data,
						      e->len };
	}
	for (size_t k = 1; k <= JOURNAL_KIND_MAX; k++) {
		int err = keysort(v->byk + v->at[k], v->at[k + 1] - v->at[k],
				  sizeof(*v->byk),
				  offsetof(struct journal_rec, key));

		if (err < 0)
			return err;
	}
	return 0;
}

/* The reader proper, on @buf (taken: the view keeps it or it is
 * freed). */
static int read_owned(uint8_t *buf, size_t len, struct journal_view **ret,
		      char *why, size_t why_len)
{
	struct journal_view *v;
	struct pending *pend = NULL;
	size_t n_pend = 0, cap_pend = 0, off, n_recs = 0;
	bool made;
	struct jhdr h;
	int err = 0;

	journal_crc_init();
	v = calloc(1, sizeof(*v));
	if (!v) {
		free(buf);
		return -ENOMEM;
	}
	v->buf = buf;
	if (len < sizeof(h)) {
		err = journal_why(why, why_len,
				  "the state is %zu bytes, "
				  "shorter than its header",
				  len);
		goto fail;
	}
	memcpy(&h, buf, sizeof(h));
	if (h.magic != JHDR_MAGIC) {
		err = journal_why(why, why_len,
				  "the state has no journal magic");
		goto fail;
	}
	if (h.format < JOURNAL_FORMAT_OLDEST || h.format > JOURNAL_FORMAT) {
		err = journal_why(why, why_len,
				  "the state's format %u is not "
				  "one this daemon reads (%u to %u)",
				  h.format, JOURNAL_FORMAT_OLDEST,
				  JOURNAL_FORMAT);
		goto fail;
	}
	if (h.hdr_size != JOURNAL_HDR_SIZE || len < JOURNAL_HDR_SIZE) {
		err = journal_why(why, why_len,
				  "the state's header is cut "
				  "short or of a size not %u bytes",
				  JOURNAL_HDR_SIZE);
		goto fail;
	}
	if (h.complete == JHDR_BROKEN) {
		err = journal_why(why, why_len,
				  "the state of generation "
				  "%" PRIu64 " was abandoned after a write "
				  "failed",
				  h.gen);
		goto fail;
	}
	if (h.complete != JHDR_COMPLETE) {
		err = journal_why(why, why_len,
				  "the state of generation "
				  "%" PRIu64 " was never completed",
				  h.gen);
		goto fail;
	}
	v->gen = h.gen;
	/* The records, counted first, up to the first whose mark or length
	 * the loop below would refuse: bad bytes size the table no larger
	 * than a state of that length made of empty records (32 bytes
	 * each) would. The CRC is the loop's, once: here it was a second
	 * pass over every byte. */
	for (off = JOURNAL_HDR_SIZE; off + sizeof(struct jrec) <= len;) {
		const struct jrec *r = (const struct jrec *)(v->buf + off);

		if ((r->word != JREC_PART && r->word != JREC_COMMIT) ||
		    r->len > JOURNAL_RECORD_MAX ||
		    pad8(r->len) > len - off - sizeof(*r))
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
			err = journal_why(why, why_len,
					  "record at byte %zu of "
					  "the state has no mark",
					  off);
			goto fail;
		}
		if (r->len > JOURNAL_RECORD_MAX ||
		    pad8(r->len) > len - off - sizeof(*r)) {
			err = journal_why(why, why_len,
					  "record at byte %zu of "
					  "the state runs past its end",
					  off);
			goto fail;
		}
		if (!r->kind || r->kind > JOURNAL_KIND_MAX ||
		    (r->flags & ~(JREC_DEL | JREC_SLOTS)) || r->zero) {
			err = journal_why(why, why_len,
					  "record at byte %zu of "
					  "the state has kind %u, flags %#x, "
					  "reserved %#x",
					  off, r->kind, r->flags, r->zero);
			goto fail;
		}
		if (!(r->flags & JREC_SLOTS) != (r->kind != JOURNAL_SLOTS) ||
		    (r->kind == JOURNAL_SLOTS &&
		     (h.format < 3 || r->flags != JREC_SLOTS ||
		      r->len != JSLOT_BLOCK_LEN ||
		      r->key >= JOURNAL_SLOT_BLOCKS_MAX))) {
			err = journal_why(why, why_len,
					  "record at byte %zu of "
					  "the state is no block of slots of "
					  "a state of format %u as this daemon "
					  "writes them",
					  off, h.format);
			goto fail;
		}
		if (rec_crc(r) != r->crc) {
			err = journal_why(why, why_len,
					  "record at byte %zu of "
					  "the state fails its CRC",
					  off);
			goto fail;
		}
		err = array_grow(&pend, &cap_pend, n_pend + 1, sizeof(*pend),
				 16);
		if (err < 0)
			goto fail;
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
					 pend[i].data, p->len, &made);
			}
			n_pend = 0;
		}
		off += sizeof(*r) + pad8(r->len);
	}
	/* What follows the last commit (a transaction the kill cut) was
	 * never a state the daemon was in. */
	free(pend);
	pend = NULL;
	err = journal_slots_check(v, why, why_len);
	if (err == 0)
		err = view_index(v);
	if (err < 0)
		goto fail;
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
	free(v->byk);
	free(v->buf);
	free(v);
}

uint64_t journal_view_gen(const struct journal_view *v)
{
	return v->gen;
}

size_t journal_view_size(const struct journal_view *v)
{
	return v ? v->live.n : 0;
}

size_t journal_view_count(const struct journal_view *v, uint32_t kind)
{
	if (!kind || kind > JOURNAL_KIND_MAX)
		return 0;
	return v->at[kind + 1] - v->at[kind];
}

int journal_each(const struct journal_view *v, uint32_t kind,
		 int (*fn)(void *arg, const struct journal_rec *r), void *arg)
{
	size_t n = journal_view_count(v, kind);
	const struct journal_rec *recs = n ? v->byk + v->at[kind] : NULL;

	for (size_t i = 0; i < n; i++) {
		int ret = fn(arg, &recs[i]);

		if (ret < 0)
			return ret;
	}
	return 0;
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
		return journal_why(why, why_len,
				   "the stored state is not a "
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
