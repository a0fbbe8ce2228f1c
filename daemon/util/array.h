/* SPDX-License-Identifier: MIT */
/*
 * Arrays that grow by doubling: the one place where the room's size is
 * computed, checked against overflow and reallocated.
 */
#ifndef RDMAB_ARRAY_H
#define RDMAB_ARRAY_H

#include <stddef.h>

/*
 * Make room for @want elements of @size bytes in the array *@arrp (the
 * address of the array's pointer, of any element type), which has room
 * for *@cap: the room doubles, from @min when there is none, until it
 * holds @want; the new elements are zeroed. 0 (also when the room
 * suffices already), or -ENOMEM when the memory is not there or the
 * room's bytes would overflow a size_t: *@arrp and *@cap are then as
 * they were; -EINVAL for a @size of 0.
 */
int array_grow(void *arrp, size_t *cap, size_t want, size_t size, size_t min);

#endif
