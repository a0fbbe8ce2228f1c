// SPDX-License-Identifier: MIT
/*
 * What no session's, context's or object's record says and a restart must
 * find again (restart.h): a domain's own books (its rekey count), and
 * the unnamed objects of a device whose kernel is the broker (the soft
 * device): objects it made that stay in their context once the registry
 * let go of their records (a client killed after its kernel call, the
 * records of a session that let go of a rekeyed context). A verbs
 * kernel keeps those in the context's descriptor; the soft device's
 * kernel is the daemon, so the journal keeps their Object records, each
 * marked by a JOURNAL_UNNAMED record, until their context closes; and
 * the provider-internal records importers that died left there (a
 * context's dead_internal), made again once everything named is back.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/device/device.h"
#include "daemon/registry/client.h"
#include "daemon/registry/core.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/domain.h"
#include "daemon/registry/objects.h"
#include "daemon/restart/restart-int.h"
#include "daemon/restart/restart.h"
#include "daemon/util/array.h"
#include "daemon/util/log.h"
#include "proto/state.pb-c.h"

/* --- a domain's books --------------------------------------------------- */

/* A domain's record key: FNV-1a of its name (a domain has no id). The
 * record says the name, which the restore checks. */
static uint64_t domain_key(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ull;
	}
	return h;
}

void restart_domain_saved(struct core *core, const struct domain *d)
{
	Rdmab__State__Domain m = RDMAB__STATE__DOMAIN__INIT;
	struct journal *j = restart_journal(core);

	if (!j)
		return;
	m.name = (char *)d->name;
	m.rekeys = d->rekeys;
	restart_after_write(core, journal_put(j, JOURNAL_DOMAIN,
					      domain_key(d->name), &m.base));
}

void restart_domain_gone(struct core *core, const struct domain *d)
{
	struct journal *j = restart_journal(core);

	/* Only a rekeyed domain has a record (restart_domain_saved()). */
	if (j && d->rekeys)
		restart_after_write(core, journal_del(j, JOURNAL_DOMAIN,
						      domain_key(d->name)));
}

static int domain_restore(void *arg, const struct journal_rec *r)
{
	struct core *core = arg;
	Rdmab__State__Domain *m;
	struct domain *d;

	/* Checked whole before (restart_state_check()). */
	m = rdmab__state__domain__unpack(NULL, r->len, r->data);
	if (!m)
		return 0;
	d = domain_find(core, m->name);
	/* A domain no session, context or configuration made again is
	 * gone, and its books with it, as when it is freed. */
	if (d && domain_key(d->name) == r->key) {
		d->rekeys = m->rekeys;
		restart_domain_saved(core, d);
	}
	rdmab__state__domain__free_unpacked(m, NULL);
	return 0;
}

void restart_domains_restore(struct restore *rs)
{
	restore_each(rs, JOURNAL_DOMAIN, domain_restore, rs->core);
}

/* --- unnamed objects ---------------------------------------------------- */

/* Keep object record @id (in the journal already) as an unnamed object
 * of @x: marked, and listed for @x's close. False when it cannot be (out
 * of memory, logged): the record goes, and a restart loses the object
 * (its next count gives its charge back). */
static bool unnamed_keep(struct core *core, struct dctx *x, uint64_t id)
{
	Rdmab__State__Unnamed m = RDMAB__STATE__UNNAMED__INIT;
	struct journal *j = restart_journal(core);

	/* n_unnamed counts to UINT32_MAX at most. */
	if (x->n_unnamed == UINT32_MAX ||
	    array_grow(&x->unnamed, &x->cap_unnamed, (size_t)x->n_unnamed + 1,
		       sizeof(*x->unnamed), 8) < 0) {
		log_warn("context %" PRIu64 ": out of memory: object "
			 "%" PRIu64 ", unnamed, is not kept across a "
			 "restart",
			 x->id, id);
		return false;
	}
	m.ctx_id = x->id;
	restart_after_write(core, journal_put(j, JOURNAL_UNNAMED, id, &m.base));
	x->unnamed[x->n_unnamed++] = id;
	return true;
}

void restart_obj_unnamed(struct core *core, const struct obj *o)
{
	struct journal *j = restart_journal(core);

	if (j && !unnamed_keep(core, o->ctx, o->id))
		restart_after_write(core,
				    journal_del(j, JOURNAL_OBJECT, o->id));
}

void restart_unnamed_adopted(struct core *core, struct dctx *x, uint64_t id,
			     const uint8_t *data, size_t len)
{
	struct journal *j = restart_journal(core);

	if (!j)
		return;
	restart_after_write(
		core, journal_put_packed(j, JOURNAL_OBJECT, id, data, len));
	if (!unnamed_keep(core, x, id))
		restart_after_write(core, journal_del(j, JOURNAL_OBJECT, id));
}

void restart_unnamed_closed(struct core *core, const struct dctx *x)
{
	struct journal *j = restart_journal(core);

	for (uint32_t i = 0; j && i < x->n_unnamed; i++) {
		restart_after_write(
			core, journal_del(j, JOURNAL_UNNAMED, x->unnamed[i]));
		restart_after_write(
			core, journal_del(j, JOURNAL_OBJECT, x->unnamed[i]));
	}
}

/* --- the imports' records ------------------------------------------------ */

/* @x's live imports' records beyond what an import makes (its QPs'),
 * into @m: @buf and @ptrs of @cap entries, which the caller frees after
 * the write; only on a device that makes records per QP. */
int restart_ctx_imports_save(const struct dctx *x, Rdmab__State__Context *m,
			     Rdmab__State__ImportRecords **ret_buf,
			     Rdmab__State__ImportRecords ***ret_ptrs)
{
	Rdmab__State__ImportRecords *buf = NULL, **ptrs = NULL;
	const struct client *c;
	const struct conn_ctx *cc;
	size_t n = 0, cap = 0;

	*ret_buf = NULL;
	*ret_ptrs = NULL;
	if (!x->dev->internal_per_qp || !x->dc)
		return 0;
	TAILQ_FOREACH(c, &x->domain->members, domain_link)
		TAILQ_FOREACH(cc, &c->ctxs, link) {
			uint32_t r;

			if (cc->ctx != x || !cc->import)
				continue;
			r = x->dev->ctx_ops->import_records(x->dc, cc->import);
			if (r <= x->dev->internal_per_import)
				continue;
			if (array_grow(&buf, &cap, n + 1, sizeof(*buf), 8) < 0)
				goto nomem;
			rdmab__state__import_records__init(&buf[n]);
			buf[n].import = cc->import;
			buf[n].records = r - x->dev->internal_per_import;
			n++;
		}
	if (!n)
		return 0;
	ptrs = malloc(n * sizeof(*ptrs));
	if (!ptrs)
		goto nomem;
	for (size_t i = 0; i < n; i++)
		ptrs[i] = &buf[i];
	m->n_import_records = n;
	m->import_records = ptrs;
	*ret_buf = buf;
	*ret_ptrs = ptrs;
	return 0;
nomem:
	free(buf);
	return -ENOMEM;
}

/* The records of @x's adopted imports beyond what an import makes, as
 * its record @m says. */
static void imports_more(struct dctx *x, const Rdmab__State__Context *m)
{
	const struct client *c;
	const struct conn_ctx *cc;

	TAILQ_FOREACH(c, &x->domain->members, domain_link)
		TAILQ_FOREACH(cc, &c->ctxs, link) {
			if (cc->ctx != x || !cc->import)
				continue;
			for (size_t i = 0; i < m->n_import_records; i++) {
				const Rdmab__State__ImportRecords *r =
					m->import_records[i];
				int err;

				if (r->import != cc->import)
					continue;
				err = x->dev->ctx_ops->import_left(
					x->dc, r->import, r->records);
				if (err < 0)
					log_warn("context %" PRIu64 ": import "
						 "%" PRIu64 "'s %u records "
						 "are not made again: %s",
						 x->id, r->import, r->records,
						 strerror(-err));
			}
		}
}

void restart_imports_left(struct restore *rs)
{
	struct domain *d;
	struct dctx *x;

	/* The sessions' imports first, at free handles: after every
	 * record that names one (a DM, an MR on it: the families'), or
	 * they would take theirs. */
	TAILQ_FOREACH(d, &rs->core->domains, link)
		dctx_imports_adopt(d);
	TAILQ_FOREACH(d, &rs->core->domains, link)
		TAILQ_FOREACH(x, &d->ctxs, link) {
			Rdmab__State__Context *m = NULL;
			struct journal_rec rec;
			int err;

			if (!x->dc || x->reopened)
				continue;
			/* Only such a device's records list them. */
			if (x->dev->internal_per_qp &&
			    journal_find(rs->view, JOURNAL_CONTEXT, x->id,
					 &rec) == 0)
				m = rdmab__state__context__unpack(NULL, rec.len,
								  rec.data);
			if (m && m->n_import_records)
				imports_more(x, m);
			if (m)
				rdmab__state__context__free_unpacked(m, NULL);
			err = x->dead_internal ?
				      x->dev->ctx_ops->import_left(
					      x->dc, 0, x->dead_internal) :
				      0;
			if (err < 0)
				log_warn("context %" PRIu64 ": the %u records "
					 "dead importers left are not made "
					 "again: %s",
					 x->id, x->dead_internal,
					 strerror(-err));
			/* The new journal's record says what is back (its
			 * imports' records were not, when it was adopted). */
			if (x->dev->internal_per_qp)
				restart_ctx_saved(rs->core, x);
		}
}
