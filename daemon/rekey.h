/* SPDX-License-Identifier: MIT */
/*
 * Domain rekey (DESIGN §5): give a domain new contexts. The old ones stop
 * going to new sessions, their holders get a DomainRekeyedEvent, and each
 * closes as a whole once every session let go of it: nothing in it is
 * destroyed by handle, and its charges (its PD, its records, its
 * unaccounted objects) leave the domain's quota then, once. What the
 * daemon made in a context cannot move (DMs, RSS objects): a rekey
 * refuses with EBUSY naming them, unless forced, which destroys them.
 */
#ifndef RDMAB_REKEY_H
#define RDMAB_REKEY_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/rdmabroker.pb-c.h"

struct server;
struct domain;
struct conn;
struct reply;

/*
 * Rekey @d for @who (a sentence for the log and the Events): 0 with the
 * replaced contexts' ids in @out (may be NULL), or -EBUSY naming what
 * blocks it in @r (force destroys it).
 */
int rekey_domain(struct server *srv, struct domain *d, bool force,
		 const char *who, struct reply *r, Rdmab__DomainRekeyReply *out);

/* Add @item to the list of names in @buf (of @len bytes): ", " between
 * them, whole or not at all; " ..." once one did not fit. */
void rekey_name_add(char *buf, size_t len, const char *item);

/* A context's unaccounted count grew: look at [defaults]
 * auto_rekey_unaccounted from the event loop. */
void rekey_auto_check(struct server *srv);
/* A context's count is stale (unacc_stale): refresh the stale counts a
 * little later, then look as rekey_auto_check() does. */
void rekey_auto_check_stale(struct server *srv);
/* Server exit. */
void rekey_fini(struct server *srv);

#endif
