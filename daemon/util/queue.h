/* SPDX-License-Identifier: MIT */
/* <sys/queue.h>, plus what glibc's copy lacks. */
#ifndef RDMAB_QUEUE_H
#define RDMAB_QUEUE_H

#include <sys/queue.h>

#ifndef TAILQ_FOREACH_SAFE
#define TAILQ_FOREACH_SAFE(var, head, field, tvar)                             \
	for ((var) = TAILQ_FIRST(head);                                        \
	     (var) && ((tvar) = TAILQ_NEXT(var, field), 1); (var) = (tvar))
#endif

#endif
