// SPDX-License-Identifier: MIT
/* Charges (charge.h): the counts of every domain quota, the core's and
 * the families', and the check that none is given back beyond what it
 * holds. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>

#include "daemon/families/family.h"
#include "daemon/registry/charge.h"
#include "daemon/registry/domain.h"
#include "daemon/util/log.h"
#include "daemon/util/why.h"

static unsigned long underflows;

/* Logged where it is found, once per underflow: the count stays as the
 * arithmetic leaves it, so that the bug shows in listings too. */
static void charge_underflow(const char *what, const char *whose, uint64_t held,
			     uint64_t n)
{
	underflows++;
	log_err("BUG: charge underflow: %s of %s gives back %" PRIu64
		" but holds %" PRIu64,
		what, whose, n, held);
}

/* A count that wraps holds more than it can say: a bug, as an
 * underflow is, and left as the arithmetic leaves it (@now). */
static __attribute__((cold)) void charge_overflow(const char *what, uint64_t n,
						  uint64_t now)
{
	underflows++;
	log_err("BUG: charge overflow: %s wraps to %" PRIu64 " taking %" PRIu64
		" more",
		what, now, n);
}

void charge_add_u64(uint64_t *held, uint64_t n, const char *what)
{
	if (__builtin_add_overflow(*held, n, held))
		charge_overflow(what, n, *held);
}

void charge_add_uint(unsigned int *held, unsigned int n, const char *what)
{
	if (__builtin_add_overflow(*held, n, held))
		charge_overflow(what, n, *held);
}

void charge_sub_u64(uint64_t *held, uint64_t n, const char *what,
		    const char *whose)
{
	if (n > *held)
		charge_underflow(what, whose, *held, n);
	*held -= n;
}

void charge_sub_uint(unsigned int *held, unsigned int n, const char *what,
		     const char *whose)
{
	if (n > *held)
		charge_underflow(what, whose, *held, n);
	*held -= n;
}

static struct domain *charge_owner(struct domain *d, enum charge_quota q)
{
	return q == CHARGE_CLIENTS ? d : domain_pool(d);
}

/* The family whose quota @q is; NULL for the core's. */
static const struct family *charge_family(enum charge_quota q)
{
	return q >= CHARGE_FAMILY && q < CHARGE_QUOTA_COUNT ?
		       families[q - CHARGE_FAMILY] :
		       NULL;
}

const char *charge_quota_name(enum charge_quota q)
{
	const struct family *f = charge_family(q);

	if (f)
		return f->quota_name ? f->quota_name : "?";
	switch (q) {
	case CHARGE_OBJECTS:
		return "objects";
	case CHARGE_CLIENTS:
		return "clients";
	default:
		return "?";
	}
}

uint64_t charge_used(const struct domain *d, enum charge_quota q)
{
	const struct domain *o = charge_owner((struct domain *)d, q);

	switch (q) {
	case CHARGE_OBJECTS:
		return o->used.objects;
	case CHARGE_CLIENTS:
		return o->used.clients;
	default:
		return q < CHARGE_QUOTA_COUNT ?
			       o->used.family[q - CHARGE_FAMILY] :
			       0;
	}
}

/* The limit of @q in @o (its owner); false when it has none. */
static bool charge_limit(const struct domain *o, enum charge_quota q,
			 uint64_t *ret_limit)
{
	const struct family *f;

	switch (q) {
	case CHARGE_OBJECTS:
		*ret_limit = o->limit.objects;
		return true;
	case CHARGE_CLIENTS:
		*ret_limit = o->limit.clients;
		return true;
	default:
		f = charge_family(q);
		if (!f || !f->quota_name || !f->quota_limit)
			return false;
		*ret_limit = f->quota_limit(o);
		return true;
	}
}

/* charge_fits(), inlined where the objects' hot path asks. */
static inline bool charge_fits_in(const struct domain *d, enum charge_quota q,
				  uint64_t n)
{
	const struct domain *o = charge_owner((struct domain *)d, q);
	uint64_t used, limit;

	/* The core's quotas read in place: the objects' is the hot path. */
	switch (q) {
	case CHARGE_OBJECTS:
		used = o->used.objects;
		limit = o->limit.objects;
		break;
	case CHARGE_CLIENTS:
		used = o->used.clients;
		limit = o->limit.clients;
		break;
	default:
		if (!charge_limit(o, q, &limit))
			return false;
		used = charge_used(d, q);
	}
	/* Not used + n: a count charged over its limit (unaccounted.c)
	 * and a large @n must not wrap into room. */
	return used <= limit && n <= limit - used;
}

/* charge_add(), inlined likewise. */
static inline void charge_add_in(struct domain *d, enum charge_quota q,
				 uint64_t n)
{
	struct domain *o = charge_owner(d, q);

	/* Not checked for a wrap, unlike the counts outside the domain:
	 * this is the objects' hot path (a check cost ~10 instructions a
	 * create + destroy pair, make bench-ir), and the limits bound
	 * these counts far below 2^32. */
	switch (q) {
	case CHARGE_OBJECTS:
		o->used.objects += (uint32_t)n;
		break;
	case CHARGE_CLIENTS:
		o->used.clients += (uint32_t)n;
		break;
	default:
		if (q < CHARGE_QUOTA_COUNT)
			o->used.family[q - CHARGE_FAMILY] += n;
	}
}

/* The refusal of @q in @d, which has no room: -EDQUOT naming the
 * domain, what it holds and its limit, or -EINVAL for a quota with no
 * one limit. */
static __attribute__((cold)) int charge_refuse(const struct domain *d,
					       enum charge_quota q,
					       const char *clause,
					       struct why *why)
{
	const struct domain *o = charge_owner((struct domain *)d, q);
	uint64_t limit;

	if (!charge_limit(o, q, &limit))
		return why_set(why, -EINVAL, "domain %s: %s has no count here",
			       o->name, charge_quota_name(q));
	switch (q) {
	case CHARGE_OBJECTS:
		return why_set(
			why, -EDQUOT, "domain %s holds %u of its %u objects%s",
			o->name, o->used.objects, o->limit.objects, clause);
	case CHARGE_CLIENTS:
		return why_set(why, -EDQUOT,
			       "domain %s already has %u clients, its quota%s",
			       o->name, o->limit.clients, clause);
	default:
		return charge_family(q)->quota_refuse(
			o->name, charge_used(d, q), limit, clause, why);
	}
}

bool charge_fits(const struct domain *d, enum charge_quota q, uint64_t n)
{
	return charge_fits_in(d, q, n);
}

int charge_room(const struct domain *d, enum charge_quota q, uint64_t n,
		const char *clause, struct why *why)
{
	if (charge_fits_in(d, q, n))
		return 0;
	return charge_refuse(d, q, clause, why);
}

int charge_add_room(struct domain *d, enum charge_quota q, uint64_t n,
		    const char *clause, struct why *why)
{
	if (!charge_fits_in(d, q, n))
		return charge_refuse(d, q, clause, why);
	charge_add_in(d, q, n);
	return 0;
}

void charge_add(struct domain *d, enum charge_quota q, uint64_t n)
{
	charge_add_in(d, q, n);
}

void charge_sub(struct domain *d, enum charge_quota q, uint64_t n)
{
	struct domain *o = charge_owner(d, q);

	switch (q) {
	case CHARGE_OBJECTS:
		charge_sub_uint(&o->used.objects, (uint32_t)n, "objects",
				o->name);
		break;
	case CHARGE_CLIENTS:
		charge_sub_uint(&o->used.clients, (uint32_t)n, "clients",
				o->name);
		break;
	default:
		if (q < CHARGE_QUOTA_COUNT)
			charge_sub_u64(&o->used.family[q - CHARGE_FAMILY], n,
				       charge_quota_name(q), o->name);
	}
}

void charge_take(struct charge *c, struct domain *d, enum charge_quota q,
		 uint64_t n)
{
	if (c->n) {
		underflows++;
		log_err("BUG: charge of %" PRIu64 " %s taken over one of "
			"%" PRIu64 " %s held",
			n, charge_quota_name(q), c->n, charge_quota_name(c->q));
		charge_release(c);
	}
	charge_add(d, q, n);
	c->d = d;
	c->q = q;
	c->n = n;
}

void charge_release(struct charge *c)
{
	if (!c->n)
		return;
	charge_sub(c->d, c->q, c->n);
	c->n = 0;
}

unsigned long charge_underflows(void)
{
	return underflows;
}
