// SPDX-License-Identifier: MIT
/*
 * Arrays that grow by doubling (array.h).
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/util/array.h"

int array_grow(void *arrp, size_t *cap, size_t want, size_t size, size_t min)
{
	size_t room = *cap ? *cap : (min ? min : 1);
	void *old, *p;

	if (want <= *cap)
		return 0;
	if (!size)
		return -EINVAL;
	while (room < want) {
		if (room > SIZE_MAX / 2)
			return -ENOMEM;
		room *= 2;
	}
	if (room > SIZE_MAX / size)
		return -ENOMEM;
	/* The caller's pointer is a T *, read and written as bytes. */
	memcpy(&old, arrp, sizeof(old));
	p = realloc(old, room * size);
	if (!p)
		return -ENOMEM;
	memset((char *)p + *cap * size, 0, (room - *cap) * size);
	memcpy(arrp, &p, sizeof(p));
	*cap = room;
	return 0;
}
