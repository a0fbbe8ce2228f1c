// SPDX-License-Identifier: MIT
/* Charges (charge.h): the counts of every domain quota, and the check
 * that none is given back beyond what it holds. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>

#include "daemon/registry/charge.h"
#include "daemon/registry/domain.h"
#include "daemon/util/log.h"
#include "daemon/util/why.h"

static unsigned long underflows;

const char *charge_quota_name(enum charge_quota q)
{
	static const char *const names[CHARGE_QUOTA_COUNT] = {
		[CHARGE_DM_BYTES] = "dm_bytes",
		[CHARGE_XRCDS] = "xrcds",
		[CHARGE_RSS_TABLES] = "rss_tables",
		[CHARGE_OBJECTS] = "objects",
		[CHARGE_CLIENTS] = "clients",
	};

	return q < CHARGE_QUOTA_COUNT ? names[q] : "?";
}

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

/* The 32-bit count of @q in @qt (a domain's used or limit); NULL for
 * dm_bytes, the 64-bit one. */
static uint32_t *charge_count(struct quota *qt, enum charge_quota q)
{
	switch (q) {
	case CHARGE_XRCDS:
		return &qt->xrcds;
	case CHARGE_RSS_TABLES:
		return &qt->rss_tables;
	case CHARGE_OBJECTS:
		return &qt->objects;
	case CHARGE_CLIENTS:
		return &qt->clients;
	default:
		return NULL;
	}
}

uint64_t charge_used(const struct domain *d, enum charge_quota q)
{
	struct domain *o = charge_owner((struct domain *)d, q);
	uint32_t *count = charge_count(&o->used, q);

	return count ? *count : o->used.dm_bytes;
}

bool charge_fits(const struct domain *d, enum charge_quota q, uint64_t n)
{
	struct domain *o = charge_owner((struct domain *)d, q);
	uint32_t *used = charge_count(&o->used, q);
	uint32_t *limit = charge_count(&o->limit, q);

	/* In 64 bits: a count charged over its limit (unaccounted.c) and a
	 * large @n must not wrap into room. */
	return used && (uint64_t)*used + n <= *limit;
}

int charge_room(const struct domain *d, enum charge_quota q, uint64_t n,
		const char *clause, struct why *why)
{
	const struct domain *o = charge_owner((struct domain *)d, q);

	if (charge_fits(d, q, n))
		return 0;
	switch (q) {
	case CHARGE_OBJECTS:
		return why_set(
			why, -EDQUOT, "domain %s holds %u of its %u objects%s",
			o->name, o->used.objects, o->limit.objects, clause);
	case CHARGE_XRCDS:
		return why_set(why, -EDQUOT,
			       "domain %s holds its quota of %u XRCD opens%s",
			       o->name, o->limit.xrcds, clause);
	case CHARGE_RSS_TABLES:
		return why_set(why, -EDQUOT,
			       "domain %s holds %u of its %u RSS tables%s",
			       o->name, o->used.rss_tables, o->limit.rss_tables,
			       clause);
	case CHARGE_CLIENTS:
		return why_set(why, -EDQUOT,
			       "domain %s already has %u clients, its quota%s",
			       o->name, o->limit.clients, clause);
	default:
		return why_set(why, -EINVAL, "domain %s: %s has no count here",
			       o->name, charge_quota_name(q));
	}
}

int charge_add_room(struct domain *d, enum charge_quota q, uint64_t n,
		    const char *clause, struct why *why)
{
	int err = charge_room(d, q, n, clause, why);

	if (err < 0)
		return err;
	charge_add(d, q, n);
	return 0;
}

void charge_add(struct domain *d, enum charge_quota q, uint64_t n)
{
	struct domain *o = charge_owner(d, q);
	uint32_t *count = charge_count(&o->used, q);

	/* Not checked for a wrap, unlike the counts outside the domain:
	 * this is the objects' hot path (a check cost ~10 instructions a
	 * create + destroy pair, make bench-ir), and the limits bound
	 * these counts far below 2^32. */
	if (count)
		*count += (uint32_t)n;
	else
		o->used.dm_bytes += n;
}

void charge_sub(struct domain *d, enum charge_quota q, uint64_t n)
{
	struct domain *o = charge_owner(d, q);
	uint32_t *count = charge_count(&o->used, q);
	const char *what = charge_quota_name(q);

	if (count)
		charge_sub_uint(count, (uint32_t)n, what, o->name);
	else
		charge_sub_u64(&o->used.dm_bytes, n, what, o->name);
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
