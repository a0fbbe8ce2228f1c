// SPDX-License-Identifier: MIT
/* Charges (charge.h): the counts of every domain quota and their checks. */
#include "config.h"

#include <inttypes.h>

#include "daemon/charge.h"
#include "daemon/domain.h"
#include "daemon/log.h"

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
static void charge_underflow(const char *what, const char *whose,
			     uint64_t held, uint64_t n)
{
	underflows++;
	log_err("BUG: charge underflow: %s of %s gives back %" PRIu64
		" but holds %" PRIu64,
		what, whose, n, held);
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

uint64_t charge_used(const struct domain *d, enum charge_quota q)
{
	const struct domain *o = charge_owner((struct domain *)d, q);

	switch (q) {
	case CHARGE_DM_BYTES:
		return o->used.dm_bytes;
	case CHARGE_XRCDS:
		return o->used.xrcds;
	case CHARGE_RSS_TABLES:
		return o->used.rss_tables;
	case CHARGE_OBJECTS:
		return o->used.objects;
	case CHARGE_CLIENTS:
		return o->used.clients;
	default:
		return 0;
	}
}

void charge_add(struct domain *d, enum charge_quota q, uint64_t n)
{
	struct domain *o = charge_owner(d, q);

	switch (q) {
	case CHARGE_DM_BYTES:
		o->used.dm_bytes += n;
		break;
	case CHARGE_XRCDS:
		o->used.xrcds += n;
		break;
	case CHARGE_RSS_TABLES:
		o->used.rss_tables += n;
		break;
	case CHARGE_OBJECTS:
		o->used.objects += n;
		break;
	case CHARGE_CLIENTS:
		o->used.clients += n;
		break;
	default:
		break;
	}
}

void charge_sub(struct domain *d, enum charge_quota q, uint64_t n)
{
	struct domain *o = charge_owner(d, q);
	const char *what = charge_quota_name(q);

	switch (q) {
	case CHARGE_DM_BYTES:
		charge_sub_u64(&o->used.dm_bytes, n, what, o->name);
		break;
	case CHARGE_XRCDS:
		charge_sub_uint(&o->used.xrcds, n, what, o->name);
		break;
	case CHARGE_RSS_TABLES:
		charge_sub_uint(&o->used.rss_tables, n, what, o->name);
		break;
	case CHARGE_OBJECTS:
		charge_sub_uint(&o->used.objects, n, what, o->name);
		break;
	case CHARGE_CLIENTS:
		charge_sub_uint(&o->used.clients, n, what, o->name);
		break;
	default:
		break;
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
