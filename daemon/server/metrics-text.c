// SPDX-License-Identifier: MIT
/*
 * The text exposition (metrics-text.h). The figures are read where they
 * live (domains, contexts, the registry's records, the devices, the
 * families' hooks) at the render, so that nothing is counted twice and
 * nothing drifts.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text/text.h"
#include "daemon/registry/charge.h"
#include "daemon/registry/ctx.h"
#include "daemon/server/dispatch.h"
#include "daemon/families/family.h"
#include "daemon/registry/domain.h"
#include "daemon/server/metrics-text.h"
#include "daemon/registry/objects.h"
#include "daemon/restart/restart.h"
#include "daemon/server/server.h"

struct mtext {
	struct metrics_text *t;
	size_t cap;
	int err;
};

static void mt_printf(struct mtext *mt, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void mt_vprintf(struct mtext *mt, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void mt_vprintf(struct mtext *mt, const char *fmt, va_list ap)
{
	size_t room;
	int n;

	if (mt->err)
		return;
	for (;;) {
		va_list cp;

		room = mt->cap - mt->t->len;
		va_copy(cp, ap);
		n = vsnprintf(mt->t->data + mt->t->len, room, fmt, cp);
		va_end(cp);
		if (n < 0) {
			mt->err = -EINVAL;
			return;
		}
		if ((size_t)n < room)
			break;
		if (mt->cap * 2 > METRICS_TEXT_MAX) {
			mt->err = -EFBIG;
			return;
		}
		struct metrics_text *t =
			realloc(mt->t, sizeof(*t) + mt->cap * 2);
		if (!t) {
			mt->err = -ENOMEM;
			return;
		}
		mt->t = t;
		mt->cap *= 2;
	}
	mt->t->len += (size_t)n;
}

static void mt_printf(struct mtext *mt, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mt_vprintf(mt, fmt, ap);
	va_end(ap);
}

static void mt_family(struct mtext *mt, const char *name, const char *type,
		      const char *help)
{
	mt_printf(mt, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The labels of a domain, and of a domain's device. */
struct names {
	char domain[2 * TEXT_ESCAPED_SIZE(64)];
	char device[DEVICE_MAX][2 * TEXT_ESCAPED_SIZE(DEVICE_NAME_MAX)];
};

/* The first domain a render walks, and the next. */
static struct domain *d_first(struct server *srv, const struct domain *only)
{
	return only ? (struct domain *)only : TAILQ_FIRST(&srv->core.domains);
}

static struct domain *d_next(struct domain *d, const struct domain *only)
{
	return only ? NULL : TAILQ_NEXT(d, link);
}

#define FOR_DOMAINS(d, srv, only, nm)                                          \
	for (d = d_first(srv, only);                                           \
	     d &&                                                              \
	     (metrics_label((nm)->domain, sizeof((nm)->domain), d->name), 1);  \
	     d = d_next(d, only))

/* The seam's writer (family.h) over a render: a family's metrics hooks
 * write with it. */
struct mt_families {
	struct family_metrics fm;
	struct mtext *mt;
	struct server *srv;
	const struct domain *only;
	struct names *nm;
};

static struct mt_families *mt_families_of(struct family_metrics *fm)
{
	return (struct mt_families *)((char *)fm -
				      offsetof(struct mt_families, fm));
}

static void mtf_family(struct family_metrics *fm, const char *name,
		       const char *type, const char *help)
{
	mt_family(mt_families_of(fm)->mt, name, type, help);
}

static void mtf_printf(struct family_metrics *fm, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void mtf_printf(struct family_metrics *fm, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mt_vprintf(mt_families_of(fm)->mt, fmt, ap);
	va_end(ap);
}

static struct domain *mtf_next_domain(struct family_metrics *fm,
				      struct domain *prev)
{
	struct mt_families *m = mt_families_of(fm);
	struct domain *d =
		prev ? d_next(prev, m->only) : d_first(m->srv, m->only);

	if (d)
		metrics_label(m->nm->domain, sizeof(m->nm->domain), d->name);
	return d;
}

static const char *mtf_domain_label(struct family_metrics *fm)
{
	return mt_families_of(fm)->nm->domain;
}

static const char *mtf_device_label(struct family_metrics *fm, size_t k)
{
	return mt_families_of(fm)->nm->device[k];
}

static void mt_families_init(struct mt_families *m, struct mtext *mt,
			     struct server *srv, const struct domain *only,
			     struct names *nm)
{
	*m = (struct mt_families){
		.fm = {
			.family = mtf_family,
			.printf = mtf_printf,
			.next_domain = mtf_next_domain,
			.domain_label = mtf_domain_label,
			.device_label = mtf_device_label,
		},
		.mt = mt,
		.srv = srv,
		.only = only,
		.nm = nm,
	};
}

/* The registry's records of @d, by device, kind and state. */
enum obj_metric_state {
	OBJ_M_LIVE,
	OBJ_M_DETACHED,
	OBJ_M_DEAD,
	OBJ_M_INTENT,
	OBJ_M_STUCK,
	OBJ_M_STATES,
};

static const char *const obj_state_names[OBJ_M_STATES] = {
	"live", "detached", "dead", "intent", "stuck",
};

static enum obj_metric_state obj_metric_state(const struct obj *o)
{
	if (o->intent)
		return OBJ_M_INTENT;
	if (o->stuck)
		return OBJ_M_STUCK;
	switch (o->owner->state) {
	case OWNER_DETACHED:
		return OBJ_M_DETACHED;
	case OWNER_DEAD:
		return OBJ_M_DEAD;
	default:
		return OBJ_M_LIVE;
	}
}

/* Per device of one domain: its contexts, unaccounted objects and
 * records (a rekey leaves two contexts on one device: summed). */
struct dev_figures {
	uint32_t contexts;
	uint32_t unaccounted;
	uint32_t objs[OBJ_KIND_COUNT][OBJ_M_STATES];
};

static void domain_dev_figures(const struct server *srv, const struct domain *d,
			       struct dev_figures *f)
{
	const struct dctx *x;
	const struct obj *o;

	memset(f, 0, sizeof(*f) * srv->core.devices.n);
	TAILQ_FOREACH(x, &d->ctxs, link) {
		struct dev_figures *df = &f[x->dev - srv->core.devices.dev];

		df->contexts++;
		df->unaccounted += x->unaccounted;
		TAILQ_FOREACH(o, &x->objs, ctx_link)
			if (o->kind < OBJ_KIND_COUNT)
				df->objs[o->kind][obj_metric_state(o)]++;
	}
}

/* One figure of a domain. */
typedef uint64_t domain_figure_fn(const struct domain *d);

static uint64_t d_clients(const struct domain *d)
{
	return d->used.clients;
}

static uint64_t d_requests(const struct domain *d)
{
	return d->requests;
}

static uint64_t d_rekeys(const struct domain *d)
{
	return d->rekeys;
}

/* A family of one figure per domain. */
static void render_per_domain(struct mtext *mt, struct server *srv,
			      const struct domain *only, struct names *nm,
			      const char *name, const char *type,
			      const char *help, domain_figure_fn *get)
{
	struct domain *d;

	mt_family(mt, name, type, help);
	FOR_DOMAINS(d, srv, only, nm)
		mt_printf(mt, "%s{domain=\"%s\"} %" PRIu64 "\n", name,
			  nm->domain, get(d));
}

/* A family of one figure per domain and device where the domain has a
 * context: @all holds each domain's figures per device, in walk order. */
static void render_per_context(struct mtext *mt, struct server *srv,
			       const struct domain *only, struct names *nm,
			       const struct dev_figures *all, const char *name,
			       bool unaccounted)
{
	const struct dev_figures *f = all;
	struct domain *d;

	FOR_DOMAINS(d, srv, only, nm) {
		for (size_t k = 0; k < srv->core.devices.n; k++)
			if (f[k].contexts)
				mt_printf(mt,
					  "%s{domain=\"%s\",device=\"%s\"} "
					  "%u\n",
					  name, nm->domain, nm->device[k],
					  unaccounted ? f[k].unaccounted :
							f[k].contexts);
		f += srv->core.devices.n;
	}
}

/* What the domains' contexts hold: one walk of each domain's records. */
static void render_devices(struct mtext *mt, struct server *srv,
			   const struct domain *only, struct names *nm)
{
	size_t nd = 0, ndev = srv->core.devices.n;
	struct dev_figures *all, *f;
	struct domain *d;

	FOR_DOMAINS(d, srv, only, nm)
		nd++;
	all = calloc(nd * ndev + 1, sizeof(*all));
	if (!all) {
		mt->err = -ENOMEM;
		return;
	}
	f = all;
	FOR_DOMAINS(d, srv, only, nm) {
		domain_dev_figures(srv, d, f);
		f += ndev;
	}
	mt_family(mt, "rdmabroker_contexts", "gauge",
		  "The domain's contexts on a device (two while a rekey's old "
		  "one is held).");
	render_per_context(mt, srv, only, nm, all, "rdmabroker_contexts",
			   false);
	mt_family(mt, "rdmabroker_unaccounted_objects", "gauge",
		  "Objects the kernel holds in the domain's contexts that "
		  "nobody can name, as of the last walk.");
	render_per_context(mt, srv, only, nm, all,
			   "rdmabroker_unaccounted_objects", true);
	mt_family(mt, "rdmabroker_objects", "gauge",
		  "The registry's objects in the domain's contexts, by device, "
		  "kind and state (the owner's: live, detached, dead; or an "
		  "open intent, or stuck); absent: none.");
	f = all;
	FOR_DOMAINS(d, srv, only, nm) {
		for (size_t k = 0; k < ndev; k++)
			for (unsigned int kd = 1; kd < OBJ_KIND_COUNT; kd++)
				for (unsigned int s = 0; s < OBJ_M_STATES; s++)
					if (f[k].objs[kd][s])
						mt_printf(mt,
							  "rdmabroker_objects{"
							  "domain=\"%s\","
							  "device=\"%s\","
							  "kind=\"%s\","
							  "state=\"%s\"} %u\n",
							  nm->domain,
							  nm->device[k],
							  obj_kind_name(kd),
							  obj_state_names[s],
							  f[k].objs[kd][s]);
		f += ndev;
	}
	free(all);
}

/* The quotas counted in rdmabroker_quota_used and _limit, in this order:
 * the families' that ask for it, then the core's. Returns how many. */
static size_t counted_quotas(enum charge_quota *q)
{
	size_t n = 0;

	for (unsigned int f = 0; f < FAMILY_COUNT; f++)
		if (families[f]->quota_name && families[f]->quota_counted)
			q[n++] = CHARGE_OF(f);
	q[n++] = CHARGE_OBJECTS;
	q[n++] = CHARGE_CLIENTS;
	return n;
}

/* The limit of @q a domain @o (its owner) shows. */
static uint64_t counted_limit(const struct domain *o, enum charge_quota q)
{
	switch (q) {
	case CHARGE_OBJECTS:
		return o->limit.objects;
	case CHARGE_CLIENTS:
		return o->limit.clients;
	default:
		return families[q - CHARGE_FAMILY]->quota_limit(o);
	}
}

static void render_domains(struct mtext *mt, struct server *srv,
			   const struct domain *only, struct names *nm)
{
	enum charge_quota counted[CHARGE_QUOTA_COUNT];
	size_t n_counted = counted_quotas(counted);
	struct mt_families mf;
	struct domain *d;

	render_per_domain(mt, srv, only, nm, "rdmabroker_domain_clients",
			  "gauge", "Sessions in the domain.", d_clients);
	render_per_domain(
		mt, srv, only, nm, "rdmabroker_domain_requests_total",
		"counter",
		"Requests the domain's sessions made while it existed.",
		d_requests);
	render_per_domain(
		mt, srv, only, nm, "rdmabroker_domain_rekeys_total", "counter",
		"Rekeys of the domain (a new context per device).", d_rekeys);
	/* A private domain spends its uid's domain's quotas but its
	 * clients: shown once, where they are charged. */
	mt_family(mt, "rdmabroker_quota_used", "gauge",
		  "What the domain holds of a counted quota (private domains "
		  "draw on their uid's domain, but for clients).");
	FOR_DOMAINS(d, srv, only, nm)
		for (size_t i = 0; i < n_counted; i++)
			if (domain_pool(d) == d || counted[i] == CHARGE_CLIENTS)
				mt_printf(mt,
					  "rdmabroker_quota_used{domain=\"%s\","
					  "quota=\"%s\"} %" PRIu64 "\n",
					  nm->domain,
					  charge_quota_name(counted[i]),
					  charge_used(d, counted[i]));
	mt_family(mt, "rdmabroker_quota_limit", "gauge",
		  "The domain's limit of a counted quota.");
	FOR_DOMAINS(d, srv, only, nm)
		for (size_t i = 0; i < n_counted; i++) {
			const struct domain *o = counted[i] == CHARGE_CLIENTS ?
							 d :
							 domain_pool(d);

			if (o == d)
				mt_printf(
					mt,
					"rdmabroker_quota_limit{domain=\"%s\","
					"quota=\"%s\"} %" PRIu64 "\n",
					nm->domain,
					charge_quota_name(counted[i]),
					counted_limit(o, counted[i]));
		}
	mt_families_init(&mf, mt, srv, only, nm);
	for (unsigned int f = 0; f < FAMILY_COUNT; f++)
		if (families[f]->metrics_domains)
			families[f]->metrics_domains(&srv->core, &mf.fm);
	/* What each pool holds of a family's quota, in its own gauge. */
	for (unsigned int f = 0; f < FAMILY_COUNT; f++) {
		const struct family *fa = families[f];

		if (!fa->quota_name || !fa->quota_metric)
			continue;
		mt_family(mt, fa->quota_metric, "gauge", fa->quota_metric_help);
		FOR_DOMAINS(d, srv, only, nm)
			if (domain_pool(d) == d)
				mt_printf(mt, "%s{domain=\"%s\"} %" PRIu64 "\n",
					  fa->quota_metric, nm->domain,
					  charge_used(d, CHARGE_OF(f)));
	}
	render_devices(mt, srv, only, nm);
}

/* What only an administrator sees: the devices, the connections and the
 * requests of every domain. */
static void render_broker(struct mtext *mt, struct server *srv,
			  struct names *nm)
{
	struct metrics *m = srv->metrics;
	const struct registry *reg = srv->core.registry;
	char type[2 * TEXT_ESCAPED_SIZE(64)];
	struct mt_families mf;

	mt_family(mt, "rdmabroker_connections", "gauge",
		  "Connections to the broker's socket, sessions or not.");
	mt_printf(mt, "rdmabroker_connections %u\n", srv->tab.n_conns);
	mt_family(mt, "rdmabroker_connections_limit", "gauge",
		  "The most connections the broker takes (--max-clients).");
	mt_printf(mt, "rdmabroker_connections_limit %u\n", srv->opt.max_conns);
	mt_family(mt, "rdmabroker_device_removed", "gauge",
		  "1 once the device is gone.");
	for (size_t k = 0; k < srv->core.devices.n; k++)
		mt_printf(mt, "rdmabroker_device_removed{device=\"%s\"} %d\n",
			  nm->device[k], srv->core.devices.dev[k].removed);
	mt_families_init(&mf, mt, srv, NULL, nm);
	for (unsigned int f = 0; f < FAMILY_COUNT; f++)
		if (families[f]->metrics_devices)
			families[f]->metrics_devices(&srv->core, &mf.fm);
	mt_family(mt, "rdmabroker_requests_total", "counter",
		  "Requests answered, by type and error (none: success).");
	for (unsigned int bc = 0; bc < METRICS_TYPES; bc++) {
		const struct metrics_req_counts *rc = &m->requests[bc];
		const struct handler *h = bc ? dispatch_lookup(bc) : NULL;

		metrics_label(type, sizeof(type), h ? h->name : "unknown");
		for (unsigned int i = 0; i < METRICS_ERRS + 2; i++) {
			const char *err =
				i == 0 ? "none" :
				i > METRICS_ERRS ?
					 "other" :
					 strerrorname_np(rc->errs[i - 1]);
			char num[16];

			if (!rc->n[i])
				continue;
			/* An errno glibc has no name for keeps its number. */
			if (!err) {
				snprintf(num, sizeof(num), "errno_%u",
					 rc->errs[i - 1]);
				err = num;
			}
			mt_printf(mt,
				  "rdmabroker_requests_total{type=\"%s\","
				  "error=\"%s\"} %" PRIu64 "\n",
				  type, err, rc->n[i]);
		}
	}
	mt_printf(mt,
		  "rdmabroker_requests_total{type=\"undecodable\","
		  "error=\"EBADMSG\"} %" PRIu64 "\n",
		  m->undecodable);
	mt_family(mt, "rdmabroker_evictions_total", "counter",
		  "Sessions ended by an administrator (rdmabrokerctl evict).");
	/* The successes of those requests. */
	mt_printf(mt, "rdmabroker_evictions_total %" PRIu64 "\n",
		  m->requests[RDMAB__REQUEST__BODY_EVICT].n[0]);
	for (unsigned int f = 0; f < FAMILY_COUNT; f++)
		for (const struct family_request_metric *rm =
			     families[f]->request_metrics;
		     rm && rm->name; rm++) {
			mt_family(mt, rm->name, "counter", rm->help);
			mt_printf(mt, "%s %" PRIu64 "\n", rm->name,
				  m->requests[rm->body_case].n[0]);
		}
	mt_family(mt, "rdmabroker_cleanup_duration_seconds", "histogram",
		  "From a client's seen death to its objects destroyed (or "
		  "given up on).");
	for (unsigned int i = 0; i < OBJ_CLEANUP_BUCKETS; i++)
		mt_printf(mt,
			  "rdmabroker_cleanup_duration_seconds_bucket{le=\""
			  "%" PRIu64 ".%06" PRIu64 "\"} %" PRIu64 "\n",
			  obj_cleanup_le_usec[i] / 1000000,
			  obj_cleanup_le_usec[i] % 1000000,
			  reg->cleanups.le[i]);
	mt_printf(mt,
		  "rdmabroker_cleanup_duration_seconds_bucket{le=\"+Inf\"} "
		  "%" PRIu64 "\n"
		  "rdmabroker_cleanup_duration_seconds_sum %" PRIu64
		  ".%06" PRIu64 "\n"
		  "rdmabroker_cleanup_duration_seconds_count %" PRIu64 "\n",
		  reg->cleanups.count, reg->cleanups.usec / 1000000,
		  reg->cleanups.usec % 1000000, reg->cleanups.count);
	mt_family(mt, "rdmabroker_charge_underflows_total", "counter",
		  "Quota charges given back beyond what they held, or "
		  "counts that wrapped: bugs, logged.");
	mt_printf(mt, "rdmabroker_charge_underflows_total %lu\n",
		  charge_underflows());
}

/* The restart's figures, what rdmabrokerctl status shows everyone: they
 * carry on across the restarts that restore a state, so the restarts
 * are a counter, not the start time's changes. */
static void render_restart(struct mtext *mt, const struct core *core)
{
	uint64_t gen, restarts, usec;
	char what[RESTART_STATUS_MAX];

	restart_status(core, false, &gen, &restarts, &usec, what, sizeof(what));
	mt_family(mt, "rdmabroker_restarts_total", "counter",
		  "Restarts that restored the broker's state (a clean start "
		  "begins again at 0).");
	mt_printf(mt, "rdmabroker_restarts_total %" PRIu64 "\n", restarts);
	mt_family(mt, "rdmabroker_generation", "gauge",
		  "The broker's generation: 1 at a clean start, one more at "
		  "each restore.");
	mt_printf(mt, "rdmabroker_generation %" PRIu64 "\n", gen);
	mt_family(mt, "rdmabroker_last_restore_duration_seconds", "gauge",
		  "How long the last restore took (0: none).");
	mt_printf(mt,
		  "rdmabroker_last_restore_duration_seconds %" PRIu64
		  ".%06" PRIu64 "\n",
		  usec / 1000000, usec % 1000000);
	mt_family(mt, "rdmabroker_journal_ok", "gauge",
		  "1 while the state journal is kept, so a restart keeps the "
		  "sessions; 0 when it was abandoned after a write failed or "
		  "there is none (rdmabrokerctl status says why).");
	mt_printf(mt, "rdmabroker_journal_ok %d\n",
		  restart_journal_status(core, what, sizeof(what)) ==
			  RESTART_JOURNAL_OK);
}

int metrics_render(struct server *srv, const struct domain *only,
		   struct metrics_text **ret)
{
	struct mtext mt = { .cap = 16384 };
	struct names *nm = malloc(sizeof(*nm));

	mt.t = malloc(sizeof(*mt.t) + mt.cap);
	if (!nm || !mt.t || !srv->metrics) {
		free(nm);
		free(mt.t);
		return -ENOMEM;
	}
	mt.t->refs = 1;
	mt.t->born_ms = metrics_now_ms();
	mt.t->len = 0;
	mt.t->data[0] = '\0';
	for (size_t k = 0; k < srv->core.devices.n; k++)
		metrics_label(nm->device[k], sizeof(nm->device[k]),
			      srv->core.devices.dev[k].name);
	mt_family(&mt, "rdmabroker_build_info", "gauge",
		  "The broker's version; always 1.");
	mt_printf(&mt, "rdmabroker_build_info{version=\"%s\"} 1\n",
		  PACKAGE_VERSION);
	mt_family(&mt, "rdmabroker_start_time_seconds", "gauge",
		  "When the broker started, in seconds since the epoch.");
	mt_printf(&mt, "rdmabroker_start_time_seconds %" PRId64 "\n",
		  srv->metrics->start_time);
	render_restart(&mt, &srv->core);
	if (!only)
		render_broker(&mt, srv, nm);
	render_domains(&mt, srv, only, nm);
	free(nm);
	if (mt.err) {
		free(mt.t);
		return mt.err;
	}
	*ret = mt.t;
	return 0;
}

int metrics_render_all(struct server *srv, struct metrics_text **ret)
{
	struct metrics *m = srv->metrics;
	struct metrics_text *t;
	int err;

	if (!m)
		return -ENOMEM;
	if (!m->cache ||
	    metrics_now_ms() - m->cache->born_ms >= METRICS_CACHE_MS) {
		err = metrics_render(srv, NULL, &t);
		if (err < 0)
			return err;
		metrics_text_put(m->cache);
		m->cache = t;
		m->renders++;
	}
	m->cache->refs++;
	*ret = m->cache;
	return 0;
}
