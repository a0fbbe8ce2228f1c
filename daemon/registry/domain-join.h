/* SPDX-License-Identifier: MIT */
/*
 * Joining and leaving a domain (domain-join.c): the membership of a
 * session, charged to the domain's clients quota.
 */
#ifndef RDMAB_DOMAIN_JOIN_H
#define RDMAB_DOMAIN_JOIN_H

#include <stdbool.h>
#include <sys/types.h>

#include "daemon/registry/domain.h"

struct core;
struct client;
struct why;

/*
 * Put @c in a domain: @want names one (or is empty), @private asks for a
 * context of its own. On refusal @why says why.
 */
int domain_join(struct core *core, struct client *c, const char *want,
		bool private, struct why *why);
/*
 * Restore: @c joins again the domain @name of @kind its saved session was
 * in. With per = cgroup, its cgroup's own (for a private domain: its
 * pool, @pool_name) is the one there is, or made again under its saved
 * name: domain_join() would name a new one after this session, and
 * refuses the name of a cgroup's domain not made yet. The rest as
 * domain_join() joins (a private domain made again on its pool).
 */
int domain_rejoin(struct core *core, struct client *c, const char *name,
		  enum domain_kind kind, const char *pool_name,
		  struct why *why);
/* Take @c out of its domain; frees the domain when nothing is left. */
void domain_leave(struct core *core, struct client *c);
/*
 * Restore: domain @name of @kind that a context's record names, for the
 * objects of uid @uid whose session ended before the restart: the one
 * there is, or one made again as domain_join() made it: a uid's own; a
 * cgroup's, for the cgroup @cgroup, under @name; a private one drawing on
 * its uid's own or, with per = cgroup, on the domain of @cgroup named
 * @pool_name. NULL when it cannot be: a configured domain the file no
 * longer names, a cgroup the record does not name (an older daemon's),
 * a name that is not what @kind and @uid make, or no memory. A domain
 * it made is freed by domain_release() while nothing holds it.
 */
struct domain *domain_adopt(struct core *core, const char *name,
			    enum domain_kind kind, uid_t uid,
			    const char *cgroup, const char *pool_name);

#endif
