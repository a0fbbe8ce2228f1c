/* SPDX-License-Identifier: MIT */
/*
 * mlx5 records the opener's CAP_NET_RAW and CAP_SYS_RAWIO in a context and
 * every importer inherits them, so domain contexts are opened with an empty
 * effective capability set.
 */
#ifndef RDMAB_CAPS_H
#define RDMAB_CAPS_H

#include <stdint.h>

struct caps_saved {
	uint32_t effective[2];
	int valid;
};

/* Clear the effective set, remembering it in @saved. */
int caps_effective_clear(struct caps_saved *saved);
/* Put back what caps_effective_clear() cleared; -errno (errno set too)
 * when capset is refused. */
int caps_effective_restore(const struct caps_saved *saved);
/* Is the effective set empty right now? (for tests) */
int caps_effective_empty(void);

#endif
