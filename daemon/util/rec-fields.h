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
 * them, tests/check_journal.c); few, as the restore keeps a record's
 * fields for each of its objects. */
#define REC_FIELDS_MAX 3

/* Numbers and values apart: no padding between them. */
struct rec_fields {
	uint64_t value[REC_FIELDS_MAX];
	uint32_t number[REC_FIELDS_MAX];
	uint32_t n;
};

/* Field @number's value; 0 when it has none. */
static inline uint64_t rec_field_get(const struct rec_fields *f,
				     uint32_t number)
{
	for (unsigned int i = 0; i < f->n; i++)
		if (f->number[i] == number)
			return f->value[i];
	return 0;
}

/* Field @number is @value now, as a field given again in a message is
 * (the last wins; 0 takes it out): 0, or -ENOSPC past REC_FIELDS_MAX
 * fields. */
static inline int rec_field_set(struct rec_fields *f, uint32_t number,
				uint64_t value)
{
	unsigned int i = 0;

	while (i < f->n && f->number[i] != number)
		i++;
	if (!value) {
		if (i < f->n) {
			f->n--;
			f->number[i] = f->number[f->n];
			f->value[i] = f->value[f->n];
		}
		return 0;
	}
	if (i == f->n) {
		if (f->n == REC_FIELDS_MAX)
			return -ENOSPC;
		f->number[f->n++] = number;
	}
	f->value[i] = value;
	return 0;
}

/* Whether @a and @b hold the same fields, in any order. */
static inline bool rec_fields_same(const struct rec_fields *a,
				   const struct rec_fields *b)
{
	if (a->n != b->n)
		return false;
	for (unsigned int i = 0; i < a->n; i++)
		if (rec_field_get(b, a->number[i]) != a->value[i])
			return false;
	return true;
}

#endif
