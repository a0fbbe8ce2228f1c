/* SPDX-License-Identifier: MIT */
/*
 * Charges: the one place a domain's quotas are spent and given back, after
 * dbus-broker's UserCharge. What is charged holds a struct charge; its
 * release gives back exactly what it took, once. Counts not held by one
 * thing (a context's unaccounted objects, DM bytes left to a closing
 * context) go through charge_add()/charge_sub(). Giving back more than
 * was charged is a bug: it is logged with what and whose, counted in
 * charge_underflows() (which the tests assert 0), and never clamped.
 * tests/charges-by-hand.sh fails where a quota's count is changed by hand
 * outside this file.
 *
 * The quotas are the core's (objects, clients) and one per family that
 * declares one in its struct family (quota_name): CHARGE_OF(its id).
 * Each family asks charge_room() (or its own check, for a limit that is
 * not one number: device memory's is per device) before it charges, or
 * charges with charge_add_room(): the refusal is worded here for the
 * core's quotas and by the family's quota_refuse for its own, one
 * sentence per quota, naming the domain and the limit.
 */
#ifndef RDMAB_CHARGE_H
#define RDMAB_CHARGE_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/families/family.h"

struct domain;
struct why;

enum charge_quota {
	CHARGE_OBJECTS,
	/* Members: counted on the domain itself, not its pool. */
	CHARGE_CLIENTS,
	/* The families' quotas, by enum family_id: CHARGE_OF(). */
	CHARGE_FAMILY,
	CHARGE_QUOTA_COUNT = CHARGE_FAMILY + FAMILY_COUNT,
};

/* The quota of family @id (enum family_id). */
#define CHARGE_OF(id) ((enum charge_quota)(CHARGE_FAMILY + (id)))

/* What one thing holds of one quota; all zero holds nothing. */
struct charge {
	struct domain *d;
	enum charge_quota q;
	uint64_t n;
};

const char *charge_quota_name(enum charge_quota q);
/* What @d's pool (for CHARGE_CLIENTS, @d) uses of @q. */
uint64_t charge_used(const struct domain *d, enum charge_quota q);

/* Whether @n more of @q fit in @d's limit (false for a family quota
 * with no quota_limit: its limit is not one number). */
bool charge_fits(const struct domain *d, enum charge_quota q, uint64_t n);

/* Whether @n more of @q fit in @d's limit: 0, or -EDQUOT with @why
 * naming the domain, what it holds and its limit, @clause (the caller's,
 * or "") appended; -EINVAL for a quota with no one limit. */
int charge_room(const struct domain *d, enum charge_quota q, uint64_t n,
		const char *clause, struct why *why);
/* charge_room(), then charge_add() when it fits. */
int charge_add_room(struct domain *d, enum charge_quota q, uint64_t n,
		    const char *clause, struct why *why);

/* Charge @n of @q to @d into @c, which must hold nothing. */
void charge_take(struct charge *c, struct domain *d, enum charge_quota q,
		 uint64_t n);
/* Give back what @c holds (nothing if it holds nothing) and empty it. */
void charge_release(struct charge *c);

/* Counts not held by one charge. */
void charge_add(struct domain *d, enum charge_quota q, uint64_t n);
void charge_sub(struct domain *d, enum charge_quota q, uint64_t n);

/* Counters outside the domain that follow a charge (a uid's share in a
 * configured domain, its connections, private contexts, DM pages,
 * persistent DMs, unread descriptors and watches, a device's reserved
 * bytes, the broker's connections): they change only through these, never
 * by hand, so that each is checked where it is given back.
 * charge_add_*: *@held += @n, a wrap logged as a bug naming @what.
 * charge_sub_*: *@held -= @n, an underflow logged naming @what and
 * @whose. */
void charge_add_u64(uint64_t *held, uint64_t n, const char *what);
void charge_add_uint(unsigned int *held, unsigned int n, const char *what);
void charge_sub_u64(uint64_t *held, uint64_t n, const char *what,
		    const char *whose);
void charge_sub_uint(unsigned int *held, unsigned int n, const char *what,
		     const char *whose);

/* Underflows (and wraps) seen since the daemon started: bugs, 0 in
 * every test. */
unsigned long charge_underflows(void);

#endif
