/* SPDX-License-Identifier: MIT */
/*
 * A saved record's uint64 fields that the code writing and reading the
 * record does not own, by field number (proto/state.proto): the families'
 * fields of the registry's Object record, the device's fields of the soft
 * spec it keeps in it. The restart carries them without knowing what they
 * mean; their owners set and read them by the numbers their own files
 * define. As in proto3, 0 is no field.
 */
#ifndef RDMAB_REC_FIELDS_H
#define RDMAB_REC_FIELDS_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

/* More than one record's message has of others' fields (a test counts
 * them, tests/check_journal.c). */
#define REC_FIELDS_MAX 4

struct rec_fields {
	unsigned int n;
	struct rec_field {
		uint32_t number;
		uint64_t value;
	} v[REC_FIELDS_MAX];
};

/* Field @number's value; 0 when it has none. */
static inline uint64_t rec_field_get(const struct rec_fields *f,
				     uint32_t number)
{
	for (unsigned int i = 0; i < f->n; i++)
		if (f->v[i].number == number)
			return f->v[i].value;
	return 0;
}

/* Field @number is @value now, as a field given again in a message is
 * (the last wins; 0 takes it out): 0, or -ENOSPC past REC_FIELDS_MAX
 * fields. */
static inline int rec_field_set(struct rec_fields *f, uint32_t number,
				uint64_t value)
{
	unsigned int i = 0;

	while (i < f->n && f->v[i].number != number)
		i++;
	if (!value) {
		if (i < f->n)
			f->v[i] = f->v[--f->n];
		return 0;
	}
	if (i == f->n) {
		if (f->n == REC_FIELDS_MAX)
			return -ENOSPC;
		f->v[f->n++].number = number;
	}
	f->v[i].value = value;
	return 0;
}

/* Whether @a and @b hold the same fields, in any order. */
static inline bool rec_fields_same(const struct rec_fields *a,
				   const struct rec_fields *b)
{
	if (a->n != b->n)
		return false;
	for (unsigned int i = 0; i < a->n; i++)
		if (rec_field_get(b, a->v[i].number) != a->v[i].value)
			return false;
	return true;
}

#endif
