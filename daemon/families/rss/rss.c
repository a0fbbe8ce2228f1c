// SPDX-License-Identifier: MIT
/*
 * RSS across processes (DESIGN §3): an indirection table over WQs of any
 * clients of a domain, the RSS QP hashing by Toeplitz over it, and the flow
 * rule that steers the traffic a domain may claim to it. The broker makes
 * them because the QP and the rule need CAP_NET_RAW.
 *
 * Each RSS object is three registry records of its owner (flow, QP, table:
 * the cleanup destroys them in that order through rss_destroy_part) and a
 * struct rss that names the WQs by their records. A WQ leaves every table
 * that uses it before it goes, whoever destroys it: the owner
 * (before_owner_destroy) or the cleanup of a dead owner (before_destroy).
 * The table is then rebuilt make-before-break over the WQs that remain,
 * the new flow rule at the other of two priorities, or destroyed when none
 * remain; packets hashed to the leaving WQ in between are lost. Every WQ of
 * a dead process leaves with it: one rebuild, and one Event to the owner
 * naming the WQs that left, however many a dying process had.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>

#include "daemon/registry/charge.h"
#include "daemon/registry/client.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/domain.h"
#include "daemon/util/fault.h"
#include "daemon/util/log.h"
#include "daemon/registry/objects.h"
#include "daemon/restart/restart.h"
#include "daemon/families/rss/rss.h"
#include "proto/state.pb-c.h"
#include "daemon/registry/core.h"

#define RSS_HASH_V4 (IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4)
#define RSS_HASH_V6 (IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6)
#define RSS_HASH_TCP (IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP)
#define RSS_HASH_UDP (IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP)
#define RSS_HASH_KNOWN (RSS_HASH_V4 | RSS_HASH_V6 | RSS_HASH_TCP | RSS_HASH_UDP)
/* An RSS listing entry is under 300 bytes plus 20 per WQ. */
#define RSS_LIST_PAGE 32

struct rss {
	TAILQ_ENTRY(rss) link;
	struct dctx *x;
	/* One of its domain's rss_tables, until it is freed. */
	struct charge charge;
	/* The owner's records; NULL once that part is destroyed. */
	struct obj *flow, *qp, *tbl;
	uint64_t id;
	uint32_t port_num;
	uint32_t log_size;
	uint8_t key[RSS_KEY_LEN];
	uint64_t hash_fields;
	struct rss_match match;
	uint32_t priority;
	uint32_t n_wqs;
	struct obj **wqs;
	struct rss_made made;
	unsigned int rebuilds;
	/* Restart: parts whose kernel objects may outlive their place here
	 * (rss.h); @going, those of a teardown, whose record is journaled
	 * as gone (object 0) while their destroy runs. */
	struct rss_retiring retiring;
	uint32_t going;
};

/* The family's state (core->family_state[FAMILY_RSS]). */
struct rss_table {
	TAILQ_HEAD(, rss) all;
};

static struct rss_table *rss_state(const struct core *core)
{
	return core->family_state[FAMILY_RSS];
}

const enum ibc_obj_kind rss_part_kind[RSS_PARTS] = {
	[RSS_FLOW] = IBC_OBJ_FLOW,
	[RSS_QP] = IBC_OBJ_QP,
	[RSS_TBL] = IBC_OBJ_RWQ_IND_TBL,
};

uint32_t rss_made_handle(const struct rss_made *m, unsigned int p)
{
	return p == RSS_FLOW ? m->flow_handle :
	       p == RSS_QP   ? m->qp_handle :
			       m->tbl_handle;
}

static unsigned int rss_part_of(enum ibc_obj_kind kind)
{
	return kind == IBC_OBJ_FLOW ? RSS_FLOW :
	       kind == IBC_OBJ_QP   ? RSS_QP :
				      RSS_TBL;
}

/* The record's object id of part @o, 0 once it went or while it goes. */
static uint64_t rss_named(const struct rss *r, const struct obj *o,
			  unsigned int p)
{
	return o && !(r->going & 1u << p) ? o->id : 0;
}

/* Restart: @r's record as it is now (rss-state.c). */
static void rss_journal_now(struct rss *r)
{
	struct rss_rec rec = {
		.id = r->id,
		.ctx_id = r->x->id,
		.flow_object = rss_named(r, r->flow, RSS_FLOW),
		.qp_object = rss_named(r, r->qp, RSS_QP),
		.tbl_object = rss_named(r, r->tbl, RSS_TBL),
		.owner = r->tbl	 ? r->tbl->owner->client_id :
			 r->qp	 ? r->qp->owner->client_id :
			 r->flow ? r->flow->owner->client_id :
				   0,
		.port_num = r->port_num,
		.log_size = r->log_size,
		.priority = r->priority,
		.rebuilds = r->rebuilds,
		.key = r->key,
		.hash_fields = r->hash_fields,
		.match = r->match,
		.n_wqs = r->n_wqs,
		.made = r->made,
		.retiring = r->retiring,
	};
	uint64_t *ids;

	if (!restart_journal(r->x->core))
		return;
	ids = calloc(r->n_wqs ? r->n_wqs : 1, sizeof(*ids));
	if (!ids)
		return;
	for (uint32_t i = 0; i < r->n_wqs; i++)
		ids[i] = r->wqs[i]->id;
	rec.wqs = ids;
	rss_journal(r->x->core, &rec);
	free(ids);
}

static void rss_free(struct rss *r)
{
	rss_journal_gone(r->x->core, r->id);
	TAILQ_REMOVE(&rss_state(r->x->core)->all, r, link);
	charge_release(&r->charge);
	free(r->wqs);
	free(r);
}

/* --- the rules ---------------------------------------------------------- */

/* The family and L4 protocol @hash_fields implies, and its one-family,
 * one-L4 rule (mlx5's create_rss_raw_qp_tir). */
static int rss_check_hash(const struct device *dev, uint64_t fields,
			  uint32_t log_size, struct rss_match *m,
			  struct why *why)
{
	if (fields & ~RSS_HASH_KNOWN)
		return why_set(why, -EOPNOTSUPP,
			       "hash fields 0x%" PRIx64 " are not among "
			       "the IPv4, IPv6, TCP and UDP source and "
			       "destination bits (IBV_RX_HASH_INNER and "
			       "the rest are not supported)",
			       fields & ~RSS_HASH_KNOWN);
	if (fields & ~dev->caps.rss_hash_fields)
		return why_set(why, -EOPNOTSUPP,
			       "%s does not hash on fields 0x%" PRIx64,
			       dev->name, fields & ~dev->caps.rss_hash_fields);
	if (!fields && log_size)
		return why_set(why, -EINVAL,
			       "hash fields 0 (no hash) need a one-entry "
			       "table, not 2^%u entries",
			       log_size);
	if ((fields & RSS_HASH_V4) && (fields & RSS_HASH_V6))
		return why_set(why, -EINVAL,
			       "one RSS QP hashes one address family: "
			       "hash fields 0x%" PRIx64 " mix IPv4 and "
			       "IPv6",
			       fields);
	if ((fields & RSS_HASH_TCP) && (fields & RSS_HASH_UDP))
		return why_set(why, -EINVAL,
			       "one RSS QP hashes at most one L4 "
			       "protocol: hash fields 0x%" PRIx64 " mix "
			       "TCP and UDP",
			       fields);
	if ((fields & (RSS_HASH_TCP | RSS_HASH_UDP)) &&
	    !(fields & (RSS_HASH_V4 | RSS_HASH_V6)) && !m->af)
		return why_set(why, -EINVAL,
			       "hash fields 0x%" PRIx64 " hash ports "
			       "only: the match must name the address "
			       "family",
			       fields);
	/* What the hash implies is added to the match, so that packets the
	 * hash is not defined for never reach the QP. */
	if (fields & (RSS_HASH_V4 | RSS_HASH_V6)) {
		uint8_t af = fields & RSS_HASH_V4 ? AF_INET : AF_INET6;

		if (m->af && m->af != af)
			return why_set(why, -EINVAL,
				       "the match is %s but the hash "
				       "fields hash %s",
				       m->af == AF_INET ? "IPv4" : "IPv6",
				       af == AF_INET ? "IPv4" : "IPv6");
		m->af = af;
	}
	if (fields & (RSS_HASH_TCP | RSS_HASH_UDP)) {
		uint8_t l4 = fields & RSS_HASH_TCP ? IPPROTO_TCP : IPPROTO_UDP;

		if (m->l4 && m->l4 != l4)
			return why_set(why, -EINVAL,
				       "the match is %s but the hash "
				       "fields hash %s ports",
				       m->l4 == IPPROTO_TCP ? "TCP" : "UDP",
				       l4 == IPPROTO_TCP ? "TCP" : "UDP");
		m->l4 = l4;
	}
	if (!m->af)
		return why_set(why, -EINVAL,
			       "neither the match nor the hash fields "
			       "name an address family");
	return 0;
}

static int rss_match_from_wire(const Rdmab__FlowMatch *w, struct rss_match *m,
			       bool *empty, struct why *why)
{
	unsigned int alen;

	memset(m, 0, sizeof(*m));
	*empty = true;
	if (!w)
		return 0;
	if (w->af && w->af != AF_INET && w->af != AF_INET6)
		return why_set(why, -EINVAL,
			       "match family %u is not AF_INET or "
			       "AF_INET6",
			       w->af);
	if (w->l4_proto && w->l4_proto != IPPROTO_TCP &&
	    w->l4_proto != IPPROTO_UDP)
		return why_set(why, -EINVAL,
			       "match L4 protocol %u is not TCP or UDP",
			       w->l4_proto);
	if (w->dst_port > 0xffff || w->port_mask > 0xffff)
		return why_set(why, -EINVAL,
			       "match port %u/0x%x is not 16 bits", w->dst_port,
			       w->port_mask);
	if (w->port_mask && !w->l4_proto)
		return why_set(why, -EINVAL,
			       "a match on a port needs the L4 protocol");
	if (w->dst_port & ~w->port_mask)
		return why_set(why, -EINVAL,
			       "match port %u has bits outside its mask "
			       "0x%x",
			       w->dst_port, w->port_mask);
	alen = w->af == AF_INET6 ? 16 : 4;
	if (w->prefix_len > alen * 8 || (w->prefix_len && !w->af))
		return why_set(why, -EINVAL,
			       "match prefix length %u is not 0..%u of a "
			       "named family",
			       w->prefix_len, alen * 8);
	if (w->dst_addr.len > 16)
		return why_set(why, -EINVAL, "match address of %zu bytes",
			       w->dst_addr.len);
	m->af = (uint8_t)w->af;
	m->l4 = (uint8_t)w->l4_proto;
	m->prefix_len = (uint8_t)w->prefix_len;
	m->port = (uint16_t)w->dst_port;
	m->port_mask = (uint16_t)w->port_mask;
	/* An empty address comes as NULL. */
	if (w->dst_addr.len)
		memcpy(m->addr, w->dst_addr.data, w->dst_addr.len);
	/* Bits past the prefix match nothing: drop them. */
	for (unsigned int i = 0; i < 16; i++) {
		unsigned int keep =
			m->prefix_len > i * 8 ? m->prefix_len - i * 8 : 0;

		if (keep < 8)
			m->addr[i] &= (uint8_t)(0xff00u >> keep);
	}
	*empty = !m->af && !m->l4 && !m->prefix_len && !m->port_mask;
	return 0;
}

/* Does rule @u allow match @m (which has the implied family and L4)? */
bool rss_rule_allows(const struct rss_rule *u, const struct rss_match *m)
{
	if (u->af != m->af || (u->l4 && u->l4 != m->l4))
		return false;
	if (m->prefix_len < u->prefix_len)
		return false;
	for (unsigned int i = 0; i < 16; i++) {
		unsigned int keep =
			u->prefix_len > i * 8 ? u->prefix_len - i * 8 : 0;
		uint8_t mask = keep >= 8 ? 0xff : (uint8_t)(0xff00u >> keep);

		if ((m->addr[i] & mask) != u->addr[i])
			return false;
	}
	if (u->has_port)
		return (m->port_mask & u->port_mask) == u->port_mask &&
		       (m->port & u->port_mask) == u->port;
	return true;
}

static void rss_match_str(const struct rss_match *m, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	int n;

	if (!inet_ntop(m->af, m->addr, a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	n = snprintf(buf, len, "%s%s %s/%u", m->af == AF_INET ? "ipv4" : "ipv6",
		     m->l4 == IPPROTO_TCP ? "/tcp" :
		     m->l4 == IPPROTO_UDP ? "/udp" :
					    "",
		     a, m->prefix_len);
	if (m->port_mask && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " %u/0x%x", m->port,
			 m->port_mask);
}

/* An admin may claim anything; a domain what its rss_allow lists; an
 * empty match only an admin, and only with IBC_RSS_MATCH_ALL. */
static int rss_check_policy(struct client *c, const struct rss_match *m,
			    bool empty, uint32_t flags, struct why *why)
{
	bool admin = policy_is_admin(c->core, c);
	const struct rss_conf_domain *rd;
	char what[128];

	if (empty) {
		if (!admin)
			return why_set(why, -EPERM,
				       "an empty match claims all the "
				       "port's traffic of the hashed "
				       "family: only an administrator "
				       "may ask for it");
		if (!(flags & IBC_RSS_MATCH_ALL))
			return why_set(why, -EPERM,
				       "an empty match claims all the "
				       "port's traffic and can take the "
				       "host off the network: set "
				       "IBC_RSS_MATCH_ALL to mean it");
		return 0;
	}
	if (admin)
		return 0;
	rd = c->domain->kind == DOMAIN_CONFIGURED ?
		     rss_conf_domain(&c->core->config,
				     config_find_domain(&c->core->config,
							c->domain->name)) :
		     NULL;
	for (size_t i = 0; rd && i < rd->n_rss_allow; i++)
		if (rss_rule_allows(&rd->rss_allow[i], m))
			return 0;
	rss_match_str(m, what, sizeof(what));
	return why_set(why, -EPERM,
		       "domain %s may not claim %s: no rss_allow rule of "
		       "rdmabroker.conf lists it",
		       c->domain->name, what);
}

/* --- making and destroying ---------------------------------------------- */

static int rss_handles(const struct rss *r, struct obj *const *wqs, uint32_t n,
		       uint32_t **ret)
{
	uint32_t *h = malloc((n ? n : 1) * sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		h[i] = wqs[i]->handle;
	*ret = h;
	return 0;
}

static int rss_make(struct rss *r, struct obj *const *wqs, uint32_t n,
		    uint32_t priority, struct rss_made *ret, struct why *why)
{
	struct rss_spec spec = {
		.port_num = r->port_num,
		.log_size = r->log_size,
		.n_wqs = n,
		.hash_fields = r->hash_fields,
		.match = r->match,
		.priority = priority,
	};
	uint32_t *h;
	int err;

	if (rss_handles(r, wqs, n, &h) < 0)
		return why_set(why, -ENOMEM, "out of memory");
	spec.wqs = h;
	memcpy(spec.key, r->key, sizeof(spec.key));
	err = r->x->dev->ctx_ops->rss_create(r->x->dc, &spec, ret, why);
	free(h);
	return err;
}

/* Part @p of @r is journaled as going (its object 0, its handle
 * retiring), or as staying again. */
static void rss_going(struct rss *r, unsigned int p, bool going)
{
	if (going) {
		r->going |= 1u << p;
		r->retiring.mask |= 1u << p;
		r->retiring.handle[p] = rss_made_handle(&r->made, p);
	} else {
		r->going &= ~(1u << p);
		r->retiring.mask &= ~(1u << p);
	}
	rss_journal_now(r);
}

/*
 * The registry's destroy of one part (flow, QP, table), in that order;
 * the record's removal (rss_part_removed) then updates @r. The part is
 * journaled as going first: a SIGKILL after the destroy must not leave
 * the record naming a freed handle, which the kernel gives to the next
 * object made in the context (lowest free first).
 */
static int rss_destroy_part(struct core *core, struct obj *o, void *data,
			    struct why *why)
{
	static const char *const point[RSS_PARTS] = { "rss-teardown-flow",
						      "rss-teardown-qp",
						      "rss-teardown-tbl" };
	struct rss *r = o->slot[FAMILY_RSS].p;
	unsigned int p = rss_part_of(o->kind);
	int err;

	rss_going(r, p, true);
	err = r->x->dev->ctx_ops->rss_destroy(r->x->dc, &r->made, o->kind, why);
	fault_point(point[p]);
	/* -ENOENT, -EIO: gone all the same, the record goes next. */
	if (err < 0 && err != -ENOENT && err != -EIO)
		rss_going(r, p, false);
	return err;
}

/*
 * A part's record goes, whatever the path: the cleanup after a destroy,
 * or after ENOENT for a part destroyed behind the broker's back (with
 * raw verbs on the shared context). @r forgets it, so that no walk of the
 * RSS objects meets a freed record, and goes with its last part.
 */
static void rss_part_removed(struct core *core, struct obj *o, void *data)
{
	struct rss *r = o->slot[FAMILY_RSS].p;

	if (!r)
		return;
	o->slot[FAMILY_RSS].p = NULL;
	if (o == r->flow)
		r->flow = NULL;
	else if (o == r->qp)
		r->qp = NULL;
	else if (o == r->tbl)
		r->tbl = NULL;
	r->going &= ~(1u << rss_part_of(o->kind));
	r->retiring.mask &= ~(1u << rss_part_of(o->kind));
	if (!r->flow && !r->qp && !r->tbl)
		rss_free(r);
	else
		rss_journal_now(r);
}

/* Destroy every part of @r that is left; frees @r when all went. */
static int rss_teardown(struct rss *r, struct why *why)
{
	struct obj *parts[3] = { r->flow, r->qp, r->tbl };

	for (unsigned int i = 0; i < 3; i++) {
		int err;

		if (!parts[i])
			continue;
		err = rss_destroy_part(NULL, parts[i], NULL, why);
		/* -ENOENT: the part is gone already. */
		if (err < 0 && err != -EIO && err != -ENOENT)
			return err;
		objects_remove(parts[i]);
	}
	return 0;
}

static void rss_event(struct rss *r, const char *reason, bool destroyed,
		      const uint64_t *removed, uint32_t n_removed);

/* Undo a create whose reply failed: the device's parts, the records that
 * were added, the struct. */
static void rss_unmake(struct rss *r)
{
	static const enum ibc_obj_kind part[3] = { IBC_OBJ_FLOW, IBC_OBJ_QP,
						   IBC_OBJ_RWQ_IND_TBL };
	struct obj *rec[3] = { r->flow, r->qp, r->tbl };
	struct why why;

	for (int i = 0; i < 3; i++) {
		r->x->dev->ctx_ops->rss_destroy(r->x->dc, &r->made, part[i],
						&why);
		if (!rec[i])
			continue;
		/* Freed below, whether or not every record was added. */
		rec[i]->slot[FAMILY_RSS].p = NULL;
		objects_remove(rec[i]);
	}
	rss_free(r);
}

/*
 * Does @o stay in a table that @wq leaves? Not @wq, nor a WQ whose
 * process is gone: the cleanup destroys each of those next, and one
 * rebuild without all of them spares the device a rebuild, and the owner
 * an Event, for each of a dead process's thousands of WQs.
 */
static bool rss_wq_stays(const struct obj *o, const struct obj *wq)
{
	return o != wq && o->owner->state != OWNER_DEAD;
}

/*
 * A rebuild's old parts @old go, journaled as retiring with the new parts
 * already: each bit is cleared once its destroy returned, so that a
 * SIGKILL leaves the record naming as retiring only a part whose destroy
 * may not have run, never a handle the kernel may have given to another
 * object since.
 */
static void rss_retire(struct rss *r, struct rss_made *old)
{
	static const char *const point[RSS_PARTS] = { "rss-leave-flow",
						      "rss-leave-qp",
						      "rss-leave-tbl" };

	for (unsigned int p = 0; p < RSS_PARTS; p++) {
		struct why w;

		if (r->x->dev->ctx_ops->rss_destroy(r->x->dc, old,
						    rss_part_kind[p], &w) < 0)
			log_warn("RSS %" PRIu64 ": the old %s stays: %s", r->id,
				 obj_kind_name(rss_part_kind[p]), w.text);
		fault_point(point[p]);
		r->retiring.mask &= ~(1u << p);
		rss_journal_now(r);
	}
}

/* @wq leaves @r, with every dead process's WQ: rebuild over the rest, or
 * destroy @r when none is left. */
static int rss_leave(struct rss *r, struct obj *wq, struct why *why)
{
	struct rss_made made, old = r->made;
	struct obj **rest;
	uint64_t *gone;
	uint32_t n = 0, n_gone = 0;
	int err;

	if (!r->flow || !r->qp || !r->tbl)
		return why_set(why, -EBUSY,
			       "RSS %" PRIu64 " is being destroyed", r->id);
	rest = malloc(r->n_wqs * sizeof(*rest));
	gone = malloc(r->n_wqs * sizeof(*gone));
	if (!rest || !gone) {
		free(rest);
		free(gone);
		return why_set(why, -ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < r->n_wqs; i++) {
		if (rss_wq_stays(r->wqs[i], wq))
			rest[n++] = r->wqs[i];
		else
			gone[n_gone++] = r->wqs[i]->id;
	}
	if (!n) {
		free(rest);
		log_info("RSS %" PRIu64 ": its last %u WQs (%" PRIu64 " among "
			 "them) go; destroyed",
			 r->id, n_gone, wq->id);
		rss_event(r, "the last WQ of the table went", true, gone,
			  n_gone);
		free(gone);
		return rss_teardown(r, why);
	}
	/* Make before break: the new rule at the other priority takes the
	 * traffic before the old one goes. */
	err = rss_make(r, rest, n, r->priority ^ 1, &made, why);
	if (err < 0) {
		free(rest);
		free(gone);
		return err;
	}
	/* The one window left: killed before the journal put below, the new
	 * parts are named by nothing; a verbs kernel keeps them in the
	 * context, counted unaccounted after the restart, and the soft
	 * device's went with the daemon. */
	fault_point("rss-leave-made");
	for (unsigned int p = 0; p < RSS_PARTS; p++)
		r->retiring.handle[p] = rss_made_handle(&old, p);
	r->retiring.mask = (1u << RSS_PARTS) - 1;
	r->made = made;
	r->flow->handle = made.flow_handle;
	r->qp->handle = made.qp_handle;
	r->tbl->handle = made.tbl_handle;
	free(r->wqs);
	r->wqs = rest;
	r->n_wqs = n;
	r->priority ^= 1;
	r->rebuilds++;
	rss_journal_now(r);
	fault_point("rss-leave-journaled");
	rss_retire(r, &old);
	log_info("RSS %" PRIu64 ": rebuilt over %u WQs without %u (WQ "
		 "%" PRIu64 " among them)",
		 r->id, n, n_gone, wq->id);
	rss_event(r,
		  n_gone > 1 ? "WQs of the table went" :
			       "a WQ of the table went",
		  false, gone, n_gone);
	free(gone);
	return 0;
}

/* Before a WQ goes, by its owner or the cleanup: out of every table. */
static int rss_wq_going(struct core *core, struct obj *o, void *data,
			struct why *why)
{
	struct rss *r, *tmp;

	TAILQ_FOREACH_SAFE(r, &rss_state(core)->all, link, tmp) {
		for (uint32_t i = 0; i < r->n_wqs; i++) {
			int err;

			if (r->wqs[i] != o)
				continue;
			err = rss_leave(r, o, why);
			if (err < 0)
				return err;
			break;
		}
	}
	return 0;
}

static int rss_wq_cleanup(struct core *core, struct obj *o, void *data)
{
	struct why why;
	int err = rss_wq_going(core, o, data, &why);

	if (err < 0)
		log_warn("WQ %" PRIu64 " stays in its RSS table for now: %s",
			 o->id, why.text);
	return err;
}

static bool rss_event_filter(struct client *c, Rdmab__Event *ev, void *arg)
{
	return c == arg;
}

/*
 * Tell @r's owner: the WQs that left (@removed), and, to a session whose
 * hello did not ask for the change alone, the whole new list (empty:
 * destroyed). At most IBC_RSS_MAX_WQS ids in all, since the two lists
 * share the old one: the Event fits a packet.
 */
static void rss_event(struct rss *r, const char *reason, bool destroyed,
		      const uint64_t *removed, uint32_t n_removed)
{
	Rdmab__RssRebuiltEvent body = RDMAB__RSS_REBUILT_EVENT__INIT;
	Rdmab__Event ev = RDMAB__EVENT__INIT;
	struct client *owner = r->tbl ? r->tbl->owner->conn : NULL;
	uint64_t *ids = NULL;
	uint32_t n = 0;

	if (!owner)
		return;
	ids = calloc(r->n_wqs ? r->n_wqs : 1, sizeof(*ids));
	if (!ids)
		return;
	/* A rebuild has changed r->wqs already; a destroy sends none. */
	if (!destroyed && !owner->family_slot[FAMILY_RSS])
		for (; n < r->n_wqs; n++)
			ids[n] = r->wqs[n]->id;
	body.wq_ids = ids;
	body.n_wq_ids = n;
	body.removed_wq_ids = (uint64_t *)removed;
	body.n_removed_wq_ids = n_removed;
	body.delta = owner->family_slot[FAMILY_RSS] != 0;
	body.destroyed = destroyed;
	body.priority = r->priority;
	body.reason = (char *)reason;
	ev.object_kind = IBC_OBJ_RWQ_IND_TBL;
	ev.object_id = r->id;
	ev.body_case = RDMAB__EVENT__BODY_RSS_REBUILT;
	ev.rss_rebuilt = &body;
	owner->core->ops->broadcast(owner->core, &ev, rss_event_filter, owner);
	free(ids);
}

static void rss_device_gone(struct core *core, struct device *dev,
			    const char *reason)
{
	struct rss *r, *tmp;

	(void)reason;
	/* Before the registry drops the records (it hears last): the
	 * kernel frees the objects with the contexts. */
	TAILQ_FOREACH_SAFE(r, &rss_state(core)->all, link, tmp) {
		if (r->x->dev != dev)
			continue;
		/* The implementation's handles died with it; the records
		 * go next, without it. */
		if (r->flow)
			r->flow->slot[FAMILY_RSS].p = NULL;
		if (r->qp)
			r->qp->slot[FAMILY_RSS].p = NULL;
		if (r->tbl)
			r->tbl->slot[FAMILY_RSS].p = NULL;
		free(r->made.priv);
		rss_free(r);
	}
}

int rss_adopt(struct core *core, const struct rss_rec *rec, struct dctx *x,
	      struct obj *flow, struct obj *qp, struct obj *tbl,
	      struct obj **wqs)
{
	struct rss *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->wqs = calloc(rec->n_wqs ? rec->n_wqs : 1, sizeof(*r->wqs));
	if (!r->wqs) {
		free(r);
		return -ENOMEM;
	}
	r->x = x;
	r->flow = flow;
	r->qp = qp;
	r->tbl = tbl;
	r->id = rec->id;
	r->port_num = rec->port_num;
	r->log_size = rec->log_size;
	memcpy(r->key, rec->key, RSS_KEY_LEN);
	r->hash_fields = rec->hash_fields;
	r->match = rec->match;
	r->priority = rec->priority;
	r->rebuilds = rec->rebuilds;
	r->n_wqs = rec->n_wqs;
	memcpy(r->wqs, wqs, rec->n_wqs * sizeof(*wqs));
	/* The kernel's handles; the implementation's own objects are not
	 * this process's (verbs destroys the parts by handle). */
	r->made = rec->made;
	r->made.priv = NULL;
	if (flow)
		flow->slot[FAMILY_RSS].p = r;
	if (qp)
		qp->slot[FAMILY_RSS].p = r;
	if (tbl)
		tbl->slot[FAMILY_RSS].p = r;
	charge_take(&r->charge, domain_pool(x->domain), CHARGE_OF(FAMILY_RSS),
		    1);
	TAILQ_INSERT_TAIL(&rss_state(core)->all, r, link);
	rss_journal_now(r);
	return 0;
}

void rss_adopt_undo(struct core *core)
{
	static const enum ibc_obj_kind kinds[3] = { IBC_OBJ_FLOW, IBC_OBJ_QP,
						    IBC_OBJ_RWQ_IND_TBL };
	struct why why;
	struct rss *r;

	/* The parts the restore made, on the device and in the registry. */
	while ((r = TAILQ_FIRST(&rss_state(core)->all))) {
		struct obj *parts[3] = { r->flow, r->qp, r->tbl };

		for (int i = 0; i < 3; i++) {
			r->x->dev->ctx_ops->rss_destroy(r->x->dc, &r->made,
							kinds[i], &why);
			if (parts[i]) {
				parts[i]->slot[FAMILY_RSS].p = NULL;
				objects_remove(parts[i]);
			}
		}
		rss_free(r);
	}
}

static int rss_init(struct core *core)
{
	struct rss_table *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	TAILQ_INIT(&t->all);
	core->family_state[FAMILY_RSS] = t;
	return 0;
}

static void rss_fini(struct core *core)
{
	struct rss_table *t = rss_state(core);
	struct rss *r;

	if (!t)
		return;
	/* The registry's fini forgets the records; the kernel frees the
	 * rest. */
	while ((r = TAILQ_FIRST(&t->all))) {
		TAILQ_REMOVE(&t->all, r, link);
		free(r->wqs);
		free(r);
	}
	free(t);
	core->family_state[FAMILY_RSS] = NULL;
}

/* --- rekey -------------------------------------------------------------- */

static unsigned int rss_ctx_busy(const struct core *core, const struct dctx *x,
				 char *buf, size_t len)
{
	const struct rss *r;
	unsigned int n = 0;

	TAILQ_FOREACH(r, &rss_state(core)->all, link) {
		char item[64];

		if (r->x != x)
			continue;
		n++;
		if (r->tbl)
			snprintf(item, sizeof(item),
				 "RSS table %" PRIu64 " (client %" PRIu64 "'s)",
				 r->id, r->tbl->owner->client_id);
		else
			snprintf(item, sizeof(item), "RSS table %" PRIu64,
				 r->id);
		rekey_name_add(buf, len, item);
	}
	return n;
}

/* What a teardown could not destroy stays in the rekeyed context, which
 * closes as a whole: the parts' records become unaccounted and @r goes,
 * so that no record or listing names it after the context is freed. */
static void rss_leave_to_ctx(struct rss *r)
{
	struct obj *parts[3] = { r->flow, r->qp, r->tbl };

	for (unsigned int i = 0; i < 3; i++) {
		if (!parts[i])
			continue;
		parts[i]->slot[FAMILY_RSS].p = NULL;
		objects_drop_intent(parts[i]);
	}
	/* The implementation's objects go with the context. */
	free(r->made.priv);
	rss_free(r);
}

static unsigned int rss_ctx_force(struct core *core, struct dctx *x,
				  const char *reason)
{
	struct rss *r, *tmp;
	unsigned int n = 0;

	TAILQ_FOREACH_SAFE(r, &rss_state(core)->all, link, tmp) {
		struct why why = { 0, "" };
		uint64_t id = r->id;

		if (r->x != x)
			continue;
		n++;
		/* Sending closes no RSS object: an ended session keeps its
		 * records. */
		rss_event(r, reason, true, NULL, 0);
		if (rss_teardown(r, &why) < 0) {
			log_warn("RSS %" PRIu64 ": left to its old context: %s",
				 id, why.text);
			rss_leave_to_ctx(r);
		}
	}
	return n;
}

/* --- requests ----------------------------------------------------------- */

/* WQ @id of a create: a live registry WQ of the domain in @x. */
static int rss_find_wq(struct client *c, struct dctx *x, uint64_t id,
		       struct obj **ret, struct why *why)
{
	struct obj *o = objects_find_in_domain(c, id);

	if (!o || o->kind != IBC_OBJ_WQ)
		return why_set(why, -EINVAL,
			       "object %" PRIu64 " is not a WQ of domain %s",
			       id, c->domain->name);
	if (o->ctx != x)
		return why_set(why, -EINVAL,
			       "WQ %" PRIu64 " is in context %" PRIu64
			       ", not %" PRIu64,
			       o->id, o->ctx->id, x->id);
	if (o->intent || o->owner->state != OWNER_LIVE)
		return why_set(why, -EINVAL, "WQ %" PRIu64 " is not live (%s)",
			       o->id,
			       o->intent ? "not registered yet" :
					   "its owner's session ended");
	*ret = o;
	return 0;
}

/*
 * Add @id to @seen, an open-addressing set of @size slots (a power of
 * two, at least twice the ids) where 0 is free: no object id is 0.
 * false when it was there already.
 */
static bool rss_id_add(uint64_t *seen, size_t size, uint64_t id)
{
	size_t h = (size_t)((id * 0x9e3779b97f4a7c15ull) >> 32) & (size - 1);

	while (seen[h]) {
		if (seen[h] == id)
			return false;
		h = (h + 1) & (size - 1);
	}
	seen[h] = id;
	return true;
}

/* The WQs, each once: a set of the ids seen keeps the check linear in
 * their number (4096 pairwise compares took ~5 ms a request). */
static int rss_find_wqs(struct client *c, struct dctx *x,
			const Rdmab__RssCreateRequest *q, struct obj **wqs,
			struct why *why)
{
	size_t size = 2;
	uint64_t *seen;
	int err = 0;

	while (size < 2 * q->n_wq_ids)
		size *= 2;
	seen = calloc(size, sizeof(*seen));
	if (!seen)
		return why_set(why, -ENOMEM, "out of memory");
	for (size_t i = 0; i < q->n_wq_ids && err == 0; i++) {
		err = rss_find_wq(c, x, q->wq_ids[i], &wqs[i], why);
		if (err == 0 && !rss_id_add(seen, size, wqs[i]->id))
			err = why_set(why, -EINVAL,
				      "WQ %" PRIu64 " is listed twice",
				      wqs[i]->id);
	}
	free(seen);
	return err;
}

static int rss_check_sizes(const struct device *dev,
			   const Rdmab__RssCreateRequest *q, struct why *why)
{
	uint32_t max = dev->caps.max_rss_table_size;

	if (max > 1u << IBC_RSS_MAX_LOG_TABLE)
		max = 1u << IBC_RSS_MAX_LOG_TABLE;
	if (q->log_ind_tbl_size > IBC_RSS_MAX_LOG_TABLE ||
	    (1u << q->log_ind_tbl_size) > max)
		return why_set(why, -EINVAL,
			       "a table of 2^%u entries is over %s's "
			       "maximum of %u (min of its rss_caps and "
			       "the uverbs limit 2^13)",
			       q->log_ind_tbl_size, dev->name, max);
	if (!q->n_wq_ids || q->n_wq_ids > IBC_RSS_MAX_WQS ||
	    q->n_wq_ids > (1u << q->log_ind_tbl_size))
		return why_set(why, -EINVAL,
			       "%zu WQs for a table of %u entries (1 to "
			       "the table size, at most %d)",
			       q->n_wq_ids, 1u << q->log_ind_tbl_size,
			       IBC_RSS_MAX_WQS);
	if (q->hash_key.len != RSS_KEY_LEN)
		return why_set(why, -EINVAL,
			       "the hash key is %zu bytes, not %d",
			       q->hash_key.len, RSS_KEY_LEN);
	if (!q->port_num || q->port_num > dev->caps.ports)
		return why_set(why, -EINVAL, "%s has no port %u", dev->name,
			       q->port_num);
	/* RAW_PACKET needs an Ethernet port: the device's rss_create asks
	 * the port (the soft device's counts as Ethernet). */
	return 0;
}

static Rdmab__FlowMatch *rss_match_to_wire(struct wire_arena *a,
					   const struct rss_match *m)
{
	Rdmab__FlowMatch *w = wire_arena_alloc(a, sizeof(*w));
	uint8_t *addr = wire_arena_alloc(a, 16);

	if (!w || !addr)
		return NULL;
	rdmab__flow_match__init(w);
	memcpy(addr, m->addr, 16);
	w->af = m->af;
	w->dst_addr.data = addr;
	w->dst_addr.len = m->af == AF_INET ? 4 : 16;
	w->prefix_len = m->prefix_len;
	w->l4_proto = m->l4;
	w->dst_port = m->port;
	w->port_mask = m->port_mask;
	return w;
}

static int rss_add_records(struct client *c, struct rss *s, struct why *why)
{
	struct obj **slot[3] = { &s->flow, &s->qp, &s->tbl };
	static const enum ibc_obj_kind kind[3] = { IBC_OBJ_RWQ_IND_TBL,
						   IBC_OBJ_QP, IBC_OBJ_FLOW };
	uint32_t h[3] = { s->made.tbl_handle, s->made.qp_handle,
			  s->made.flow_handle };

	/* Table first, so that its id, the RSS id, is the lowest. */
	for (int i = 0; i < 3; i++) {
		struct obj *o;
		int err = objects_add(c, s->x, kind[i], false, true, h[i], why,
				      &o);

		if (err < 0)
			return err;
		o->slot[FAMILY_RSS].p = s;
		*slot[2 - i] = o;
	}
	return 0;
}

int rss_create(struct client *c, const Rdmab__RssCreateRequest *q,
	       struct wire_arena *a, struct why *why,
	       Rdmab__RssCreateReply *out)
{
	struct why dev_why = { 0, "" };
	struct domain *pool = domain_pool(c->domain);
	struct dctx *x;
	uint64_t *ids;
	struct rss *s;
	bool empty;
	int err;

	err = dctx_conn_usable(c, q->context_id, why, &x);
	if (err < 0)
		return err;
	/* A device that makes none says why before any rule is checked. */
	if (*x->dev->rss_why)
		return why_set(why, -EOPNOTSUPP, "%s makes no RSS tables: %s",
			       x->dev->name, x->dev->rss_why);
	if (q->flags & ~(uint32_t)IBC_RSS_MATCH_ALL)
		return why_set(why, -EINVAL, "unknown RSS flags 0x%x",
			       q->flags & ~(uint32_t)IBC_RSS_MATCH_ALL);
	err = rss_check_sizes(x->dev, q, why);
	if (err < 0)
		return err;
	s = calloc(1, sizeof(*s));
	if (s)
		s->wqs = calloc(q->n_wq_ids, sizeof(*s->wqs));
	if (!s || !s->wqs) {
		if (s)
			free(s);
		return why_set(why, -ENOMEM, "out of memory");
	}
	s->x = x;
	s->port_num = q->port_num;
	s->log_size = q->log_ind_tbl_size;
	s->hash_fields = q->hash_fields;
	s->n_wqs = (uint32_t)q->n_wq_ids;
	memcpy(s->key, q->hash_key.data, RSS_KEY_LEN);
	err = rss_match_from_wire(q->match, &s->match, &empty, why);
	if (err == 0)
		err = rss_check_hash(x->dev, q->hash_fields,
				     q->log_ind_tbl_size, &s->match, why);
	if (err == 0)
		err = rss_check_policy(c, &s->match, empty, q->flags, why);
	if (err == 0)
		err = rss_find_wqs(c, x, q, s->wqs, why);
	if (err == 0)
		err = charge_room(pool, CHARGE_OF(FAMILY_RSS), 1, "", why);
	if (err == 0)
		err = charge_room(pool, CHARGE_OBJECTS, 3,
				  " (an RSS object takes 3)", why);
	if (err == 0) {
		err = rss_make(s, s->wqs, s->n_wqs, 0, &s->made, &dev_why);
		if (err < 0)
			why_set(why, err, "%s", dev_why.text);
	}
	if (err < 0) {
		free(s->wqs);
		free(s);
		return err;
	}
	charge_take(&s->charge, pool, CHARGE_OF(FAMILY_RSS), 1);
	TAILQ_INSERT_TAIL(&rss_state(c->core)->all, s, link);
	err = rss_add_records(c, s, why);
	if (err == 0) {
		s->id = s->tbl->id;
		ids = wire_arena_alloc(a, s->n_wqs * sizeof(*ids));
		out->match = rss_match_to_wire(a, &s->match);
		if (!ids || !out->match)
			err = why_set(why, -ENOMEM, "out of memory");
	}
	if (err < 0) {
		rss_unmake(s);
		return err;
	}
	rss_journal_now(s);
	rdmab__rss_create_reply__init(out);
	out->match = rss_match_to_wire(a, &s->match);
	for (uint32_t i = 0; i < s->n_wqs; i++)
		ids[i] = s->wqs[i]->id;
	out->rss_id = s->id;
	out->wq_ids = ids;
	out->n_wq_ids = s->n_wqs;
	out->priority = s->priority;
	return 0;
}

int rss_destroy_request(struct client *c, uint64_t id, struct why *why)
{
	struct obj *o = objects_find(c, id);
	struct why dev_why = { 0, "" };
	int err;

	if (!o || o->kind != IBC_OBJ_RWQ_IND_TBL || !o->slot[FAMILY_RSS].p)
		return why_set(why, -ENOENT,
			       "RSS %" PRIu64 " is not one of this "
			       "session's",
			       id);
	err = rss_teardown(o->slot[FAMILY_RSS].p, &dev_why);
	if (err < 0)
		return why_set(why, err, "%s", dev_why.text);
	return 0;
}

static int rss_info(struct wire_arena *a, const struct rss *s,
		    Rdmab__RssInfo *ri)
{
	uint64_t *ids = wire_arena_alloc(a, s->n_wqs * sizeof(*ids));
	uint64_t *owners = wire_arena_alloc(a, s->n_wqs * sizeof(*owners));

	if (!ids || !owners)
		return -ENOMEM;
	rdmab__rss_info__init(ri);
	ri->id = s->id;
	ri->domain = s->x->domain->name;
	ri->device = s->x->dev->name;
	ri->client_id = s->tbl ? s->tbl->owner->client_id : 0;
	ri->port_num = s->port_num;
	ri->log_ind_tbl_size = s->log_size;
	ri->hash_key.data = (uint8_t *)s->key;
	ri->hash_key.len = RSS_KEY_LEN;
	ri->hash_fields = s->hash_fields;
	ri->match = rss_match_to_wire(a, &s->match);
	ri->priority = s->priority;
	for (uint32_t i = 0; i < s->n_wqs; i++) {
		ids[i] = s->wqs[i]->id;
		owners[i] = s->wqs[i]->owner->client_id;
	}
	ri->wq_ids = ids;
	ri->n_wq_ids = s->n_wqs;
	ri->wq_owners = owners;
	ri->n_wq_owners = s->n_wqs;
	ri->qp_num = s->made.qp_num;
	ri->rebuilds = s->rebuilds;
	return ri->match ? 0 : -ENOMEM;
}

int rss_list(struct client *c, const Rdmab__ListRequest *q,
	     struct wire_arena *a, struct why *why, Rdmab__ListRssReply *out)
{
	bool admin = policy_is_admin(c->core, c);
	Rdmab__RssInfo *infos, **ptrs;
	uint32_t idx = 0;
	size_t n = 0, bytes = 0;
	bool full = false;
	struct rss *s;

	infos = wire_arena_alloc(a, sizeof(*infos) * RSS_LIST_PAGE);
	ptrs = wire_arena_alloc(a, sizeof(*ptrs) * RSS_LIST_PAGE);
	if (!out || !infos || !ptrs)
		return why_set(why, -ENOMEM, "out of memory");
	rdmab__list_rss_reply__init(out);
	TAILQ_FOREACH(s, &rss_state(c->core)->all, link) {
		if (!admin && s->x->domain != c->domain)
			continue;
		if (idx++ < q->offset || full)
			continue;
		/* Keep the page under the packet limit: the next page
		 * starts where this one stopped. */
		bytes += 300 + 22 * (size_t)s->n_wqs;
		if (n == RSS_LIST_PAGE || (n && bytes > 48000)) {
			full = true;
			continue;
		}
		if (rss_info(a, s, &infos[n]) < 0)
			return why_set(why, -ENOMEM, "out of memory");
		ptrs[n] = &infos[n];
		n++;
	}
	out->rss = ptrs;
	out->n_rss = n;
	out->total = idx;
	return 0;
}

static const struct obj_family rss_parts = {
	.destroy = rss_destroy_part,
	.removed = rss_part_removed,
};
static const struct obj_family rss_wqs = {
	.before_destroy = rss_wq_cleanup,
	.before_owner_destroy = rss_wq_going,
};

/* A session whose hello asked for Events that carry the change alone
 * (family_slot[FAMILY_RSS]: 1; 0 for the whole table). */
static void rss_hello(struct client *c, const Rdmab__HelloRequest *hr)
{
	c->family_slot[FAMILY_RSS] = hr->rss_delta_events;
}

static void rss_session_save(const struct client *c, Rdmab__State__Session *m)
{
	m->rss_delta = c->family_slot[FAMILY_RSS] != 0;
}

static void rss_session_restore(struct client *c,
				const Rdmab__State__Session *m)
{
	c->family_slot[FAMILY_RSS] = m->rss_delta;
}

/* A domain's quota of RSS tables: its key, or [defaults]'. */
static void rss_domain_limit(const struct config *cfg,
			     const struct config_domain *cd,
			     struct quota *limit)
{
	limit->family[FAMILY_RSS][0] = rss_conf_domain(cfg, cd)->rss_tables;
}

static uint64_t rss_quota_limit(const struct domain *d)
{
	return d->limit.family[FAMILY_RSS][0];
}

static int rss_quota_refuse(const char *domain, uint64_t used, uint64_t limit,
			    const char *clause, struct why *why)
{
	return why_set(why, -EDQUOT,
		       "domain %s holds %" PRIu64 " of its %" PRIu64
		       " RSS tables%s",
		       domain, used, limit, clause);
}

const struct family rss_family = {
	/* Its quota: RSS tables, charged to the domain's pool. */
	.quota_name = "rss_tables",
	.quota_info_field = offsetof(Rdmab__QuotaInfo, rss_tables),
	.quota_info_size = sizeof(((Rdmab__QuotaInfo *)0)->rss_tables),
	.quota_counted = true,
	.quota_metric = "rdmabroker_rss_tables",
	.quota_metric_help = "RSS indirection tables the domain holds.",
	.quota_limit = rss_quota_limit,
	.quota_refuse = rss_quota_refuse,
	.name = "RSS",
	.conf = &rss_conf_family,
	.domain_limit = rss_domain_limit,
	.journal_first = RSS_JOURNAL_FIRST,
	.journal_msgs = rss_journal_msgs,
	.n_journal_msgs = RSS_JOURNAL_MSGS,
	.hello = rss_hello,
	.session_save = rss_session_save,
	.session_restore = rss_session_restore,
	.init = rss_init,
	.fini = rss_fini,
	.device_gone = rss_device_gone,
	.rekey_busy = rss_ctx_busy,
	.rekey_force = rss_ctx_force,
	.rekey_noun = "RSS tables",
	.requests = rss_requests,
	.rekey_reply_field = offsetof(Rdmab__DomainRekeyReply, destroyed_rss),
	.obj_hooks =
		{
			[IBC_OBJ_FLOW] = &rss_parts,
			[IBC_OBJ_QP] = &rss_parts,
			[IBC_OBJ_RWQ_IND_TBL] = &rss_parts,
			[IBC_OBJ_WQ] = &rss_wqs,
		},
	.restore = rss_restore,
};
