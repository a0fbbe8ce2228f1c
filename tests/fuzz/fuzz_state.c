// SPDX-License-Identifier: MIT
/*
 * libFuzzer target "state": the bytes of a stored state memfd, read as a
 * restarting daemon reads it (journal_read(), then the registry's check
 * that each record unpacks, restart_state_check()). Beyond the
 * sanitizers: an object record the check reads by hand reads the same
 * with protobuf-c; a state that reads is carried into a new generation
 * (journal_from_view(), what a restore's journal starts from when a
 * compaction copies) and reads back with the same records.
 *
 * With -DFUZZ_STATE_SEEDS (tests/fuzz/gen_state_seeds), main() writes the
 * seeds instead: states the daemon's own writer makes.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/restart/journal.h"
#include "daemon/util/log.h"
#include "daemon/restart/restart.h"
#include "daemon/restart/restore-object.h"
#include "proto/state.pb-c.h"
#include "tests/fuzz/fuzz.h"

const char fuzz_target_name[] = "state";

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_state: %s\n", what);
	abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	log_max_priority = LOG_CRIT;
	return 0;
}

static uint8_t *image(const struct journal *j, size_t *len)
{
	off_t end = lseek(journal_fd(j), 0, SEEK_END);
	uint8_t *buf = malloc(end > 0 ? (size_t)end : 1);

	if (!buf || end <= 0 ||
	    pread(journal_fd(j), buf, (size_t)end, 0) != end)
		fail("cannot read a journal back");
	*len = (size_t)end;
	return buf;
}

/* The hand reader's value of @d's SoftObject field @name, which it keeps
 * by number for the device (struct rec_fields). */
static uint64_t soft_field(const struct state_obj *d, const char *name)
{
	const ProtobufCFieldDescriptor *fd =
		protobuf_c_message_descriptor_get_field_by_name(
			&rdmab__state__soft_object__descriptor, name);

	return rec_field_get(&d->soft.device, fd->id);
}

/* An object record the check read by hand (restore-object.h) is one
 * protobuf-c reads too, as the same object. */
static int obj_agrees(void *arg, const struct journal_rec *r,
		      const struct state_obj *d)
{
	Rdmab__State__Object *m =
		rdmab__state__object__unpack(NULL, r->len, r->data);

	(void)arg;
	if (!m)
		fail("an object record read by hand that protobuf-c refuses");
	if (m->owner != d->owner || m->ctx_id != d->ctx_id ||
	    m->kind != d->kind || m->handle != d->handle ||
	    !m->soft != !d->has_soft ||
	    (m->soft &&
	     (m->soft->num != d->soft.num || m->soft->key != d->soft.key ||
	      m->soft->xrcd_ino != soft_field(d, "xrcd_ino"))))
		fail("an object record read otherwise by hand");
	rdmab__state__object__free_unpacked(m, NULL);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct journal_view *v = NULL, *again = NULL;
	struct journal *j;
	char why[512];
	uint8_t *buf;
	size_t len;

	if (journal_read(data, size, &v, why, sizeof(why)) < 0) {
		if (v || !*why)
			fail("a refused state without its reason");
		return 0;
	}
	(void)restart_state_check(v, obj_agrees, NULL, why, sizeof(why));
	if (journal_from_view(v, journal_view_gen(v) + 1, &j) < 0)
		fail("cannot carry a state over");
	buf = image(j, &len);
	if (journal_read(buf, len, &again, why, sizeof(why)) < 0)
		fail("a carried state does not read");
	for (uint32_t k = 1; k <= JOURNAL_KIND_MAX; k++)
		if (journal_view_count(v, k) != journal_view_count(again, k))
			fail("a carried state has other records");
	journal_view_free(again);
	free(buf);
	journal_free(j);
	journal_view_free(v);
	return 0;
}

int fuzz_wrap_packet(const char *name, const uint8_t *pkt, size_t len,
		     uint8_t **ret)
{
	uint8_t *p = malloc(len ? len : 1);

	if (!p)
		return -ENOMEM;
	memcpy(p, pkt, len);
	*ret = p;
	return (int)len;
}
