/* SPDX-License-Identifier: MIT */
/*
 * The domain of a context that only records of ended sessions hold, made
 * again at restore (restore-domain.c), also from a state that an older
 * daemon wrote and that does not name everything the domain needs.
 */
#ifndef RDMAB_RESTORE_DOMAIN_H
#define RDMAB_RESTORE_DOMAIN_H

#include <stdbool.h>

#include "proto/state.pb-c.h"

struct core;
struct domain;
struct obj_owner;

/*
 * Domain @m->domain of context record @m, for the records of @ow, whose
 * session ended before the restart, when no session of that domain came
 * back: domain_adopt() of what @m names. A record written before the
 * cgroup fields (state.proto Context 210, 211) names neither the cgroup
 * nor the pool: with per = cgroup the cgroup is then read from @ow's
 * process now (the one that started at its start time, when known), cut
 * to its domain's key as at connect, and a private domain's pool is the
 * cgroup's domain there is, or one made under the name @ow's session
 * would have given it. NULL when it cannot be: the first cgroup that
 * cannot be read is logged, and *@logged set; the others at debug.
 */
struct domain *restore_domain_adopt(struct core *core,
				    const struct obj_owner *ow,
				    const Rdmab__State__Context *m,
				    bool *logged);

#endif
