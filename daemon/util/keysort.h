/* SPDX-License-Identifier: MIT */
/*
 * Sorting records by a 64-bit key, for what a restore walks by the
 * hundred thousand (the journal's records, the objects' order): a radix
 * sort, a byte of the key at a time, where qsort() cost 10 times more.
 */
#ifndef RDMAB_KEYSORT_H
#define RDMAB_KEYSORT_H

#include <stddef.h>

/*
 * Sort the @n records of @size bytes at @v by the uint64_t at @key_off in
 * each, ascending and stable (equal keys keep their order). A byte that
 * every key shares costs no pass. 0, or -ENOMEM (@v unchanged).
 */
int keysort(void *v, size_t n, size_t size, size_t key_off);

#endif
