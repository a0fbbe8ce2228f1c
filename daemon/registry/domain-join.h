/* SPDX-License-Identifier: MIT */
/*
 * Joining and leaving a domain (domain-join.c): the membership of a
 * session, charged to the domain's clients quota.
 */
#ifndef RDMAB_DOMAIN_JOIN_H
#define RDMAB_DOMAIN_JOIN_H

#include <stdbool.h>

struct core;
struct client;
struct why;

/*
 * Put @c in a domain: @want names one (or is empty), @private asks for a
 * context of its own. On refusal @why says why.
 */
int domain_join(struct core *core, struct client *c, const char *want,
		bool private, struct why *why);
/* Take @c out of its domain; frees the domain when nothing is left. */
void domain_leave(struct core *core, struct client *c);

#endif
