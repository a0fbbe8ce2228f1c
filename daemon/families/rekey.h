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

#include "daemon/device/device.h"
#include "proto/rdmabroker.pb-c.h"

struct core;
struct domain;
struct client;
struct why;

/* The most contexts a domain has, one per device: what a rekey replaces. */
#define REKEY_MAX_CTXS DEVICE_MAX

/*
 * Rekey @d for @who (a sentence for the log and the Events): 0 with the
 * replaced contexts' ids in @out (may be NULL; its old_context_ids holds
 * REKEY_MAX_CTXS), or -EBUSY naming what blocks it in @why (force
 * destroys it).
 */
int rekey_domain(struct core *core, struct domain *d, bool force,
		 const char *who, struct why *why,
		 Rdmab__DomainRekeyReply *out);

/* Server start: the automatic check (core->rekey_ev), which the layers
 * below ask for with core_rekey_due(): it refreshes the stale counts,
 * then looks at [defaults] auto_rekey_unaccounted. 0 or -ENOMEM. */
int rekey_init(struct core *core);
/* Server exit. */
void rekey_fini(struct core *core);

#endif
