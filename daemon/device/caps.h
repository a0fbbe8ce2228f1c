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
/*
 * CAP_NET_RAW is needed only for RSS QPs and flow rules: the daemon drops
 * it from the effective set at start-up, keeping it permitted, and raises
 * it only around those calls. lower: 0 (also when it was not effective);
 * raise: 0 with the previous set in @saved for caps_effective_restore(),
 * -EPERM when it is not permitted.
 */
int caps_net_raw_lower(void);
int caps_net_raw_raise(struct caps_saved *saved);
/* Is CAP_NET_RAW effective, permitted? 1, 0 or -errno (for tests). */
int caps_net_raw_effective(void);
int caps_net_raw_permitted(void);
/* Is the effective set empty right now? (for tests) */
int caps_effective_empty(void);

#endif
