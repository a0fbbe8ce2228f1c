// SPDX-License-Identifier: MIT
/*
 * RSS objects the broker makes over WQs of several processes, and the
 * lookup that tells, without a round trip, which WQ receives a flow: the
 * device's Toeplitz hash over the fields hash_fields selects, and the
 * table entry its low bits index (entry i = WQ i mod the WQ count).
 *
 * The table a lookup reads is replaced whole when the broker rebuilds it
 * (an Event): readers load the pointer, the event handler stores a new
 * one, and old tables are freed with the RSS object, so that a lookup in
 * another thread never reads freed memory.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/rss/toeplitz.h"
#include "libclient/client.h"
#include "libclient/ctx.h"
#include "libclient/events.h"
#include "libclient/family.h"

#define RSS_HASH_V4 (IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4)
#define RSS_HASH_V6 (IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6)
#define RSS_HASH_TCP (IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP)
#define RSS_HASH_UDP (IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP)

struct rss_table {
	struct rss_table *older;
	uint32_t n_wqs; /* 0: the broker destroyed the object */
	uint64_t wq_ids[];
};

struct ibc_rss {
	struct ibc_rss *next; /* every RSS object of the process */
	struct ibc_ctx *ctx;
	uint64_t id;
	uint64_t hash_fields;
	uint32_t mask;		 /* table size - 1 */
	struct rss_table *table; /* atomic */
	struct toeplitz_tables tt;
};

/* The lock order's 4, the last (client.h). */
static pthread_mutex_t rss_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibc_rss *rss_list;

/*
 * An Event of an RSS object not listed yet, kept while a create is in
 * flight: another thread may read the create's reply, then the Event,
 * before the creator lists the object. A delta names what changed, so none
 * may be lost: the create applies its object's, in order.
 */
struct rss_missed {
	struct rss_missed *next;
	struct ibc_client *cl;
	uint64_t id;
	bool destroyed, delta;
	size_t n;
	uint64_t ids[];
};

/* Creates in flight (all clients), and the Events they may own, oldest
 * first; both under rss_lock. */
static unsigned int rss_creating;
static struct rss_missed *rss_missed_head;
static struct rss_missed **rss_missed_tail = &rss_missed_head;

/* fork(): the RSS list's lock, taken after every client's and context's
 * (fork.c). */
static void ibc_rss_fork_lock(void)
{
	pthread_mutex_lock(&rss_lock);
}

static void ibc_rss_fork_unlock(void)
{
	pthread_mutex_unlock(&rss_lock);
}

static struct rss_table *rss_table_new(const uint64_t *ids, size_t n)
{
	struct rss_table *t = calloc(1, sizeof(*t) + n * sizeof(ids[0]));

	if (!t)
		return NULL;
	t->n_wqs = (uint32_t)n;
	/* A destroyed table has no WQs (and ids may be NULL). */
	if (n)
		memcpy(t->wq_ids, ids, n * sizeof(ids[0]));
	return t;
}

static int rss_id_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A delta Event's table: @old without the @n_removed ids of @removed, the
 * others in their order, as the broker rebuilt it. */
static struct rss_table *rss_table_without(const struct rss_table *old,
					   const uint64_t *removed,
					   size_t n_removed)
{
	uint64_t *sorted =
		malloc((n_removed ? n_removed : 1) * sizeof(*sorted));
	struct rss_table *t =
		calloc(1, sizeof(*t) + old->n_wqs * sizeof(old->wq_ids[0]));

	if (!sorted || !t) {
		free(sorted);
		free(t);
		return NULL;
	}
	if (n_removed)
		memcpy(sorted, removed, n_removed * sizeof(*sorted));
	qsort(sorted, n_removed, sizeof(*sorted), rss_id_cmp);
	for (uint32_t i = 0; i < old->n_wqs; i++)
		if (!bsearch(&old->wq_ids[i], sorted, n_removed,
			     sizeof(*sorted), rss_id_cmp))
			t->wq_ids[t->n_wqs++] = old->wq_ids[i];
	free(sorted);
	return t;
}

/* The table after an Event: empty when @destroyed, @cur without the @n
 * ids @ids name for a @delta, else the list @ids. */
static struct rss_table *rss_table_next(const struct rss_table *cur,
					bool destroyed, bool delta,
					const uint64_t *ids, size_t n)
{
	if (destroyed)
		return rss_table_new(NULL, 0);
	if (delta)
		return rss_table_without(cur, ids, n);
	return rss_table_new(ids, n);
}

/* @rss follows @t, its old tables freed with it. Under rss_lock. */
static void rss_table_set(struct ibc_rss *rss, struct rss_table *t)
{
	t->older = rss->table;
	__atomic_store_n(&rss->table, t, __ATOMIC_RELEASE);
}

/* Keep an Event of an RSS object that a create in flight may list.
 * Under rss_lock. Out of memory it is lost. */
static void rss_missed_add(struct ibc_client *cl, uint64_t id, bool destroyed,
			   bool delta, const uint64_t *ids, size_t n)
{
	struct rss_missed *m = calloc(1, sizeof(*m) + n * sizeof(ids[0]));

	if (!m)
		return;
	m->cl = cl;
	m->id = id;
	m->destroyed = destroyed;
	m->delta = delta;
	m->n = n;
	if (n)
		memcpy(m->ids, ids, n * sizeof(ids[0]));
	*rss_missed_tail = m;
	rss_missed_tail = &m->next;
}

/* @rss was just listed: the Events it missed, in order. Under rss_lock. */
static void rss_missed_apply(struct ibc_rss *rss)
{
	for (struct rss_missed *m = rss_missed_head; m; m = m->next) {
		struct rss_table *t;

		if (m->cl != rss->ctx->client || m->id != rss->id)
			continue;
		t = rss_table_next(rss->table, m->destroyed, m->delta, m->ids,
				   m->n);
		if (t)
			rss_table_set(rss, t);
	}
}

/* A create is done, listed or not: with the last one in flight, the
 * Events kept for them go. */
static void rss_create_done(void)
{
	pthread_mutex_lock(&rss_lock);
	if (--rss_creating == 0) {
		while (rss_missed_head) {
			struct rss_missed *m = rss_missed_head;

			rss_missed_head = m->next;
			free(m);
		}
		rss_missed_tail = &rss_missed_head;
	}
	pthread_mutex_unlock(&rss_lock);
}

static void match_to_wire(const struct ibc_flow_match *m, Rdmab__FlowMatch *w)
{
	w->af = (uint32_t)m->af;
	w->dst_addr.data = (uint8_t *)m->dst_addr;
	w->dst_addr.len = m->af == AF_INET6 ? 16 : m->af == AF_INET ? 4 : 0;
	w->prefix_len = m->prefix_len;
	w->l4_proto = m->l4_proto;
	w->dst_port = m->dst_port;
	w->port_mask = m->port_mask;
}

IBC_EXPORT int ibc_rss_create(struct ibc_ctx *ctx,
			      const struct ibc_rss_attr *attr,
			      struct ibc_rss **ret_rss)
{
	Rdmab__RssCreateRequest q = RDMAB__RSS_CREATE_REQUEST__INIT;
	Rdmab__FlowMatch m = RDMAB__FLOW_MATCH__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	const Rdmab__RssCreateReply *out;
	struct ibc_rss *rss;
	struct ibc_reply r;
	int err;

	if (!ctx || !attr || !ret_rss || (attr->num_wqs && !attr->wq_ids))
		return ibc_set_error(-EINVAL,
				     "ctx, attr, attr->wq_ids or ret_rss is "
				     "NULL");
	if (attr->comp_mask || attr->match.comp_mask)
		return ibc_set_error(-EOPNOTSUPP,
				     "unknown bits in the RSS attributes' "
				     "comp_mask");
	if (!ctx->caps.shared)
		return ibc_set_error(-EOPNOTSUPP,
				     "%s: RSS needs the broker's shared "
				     "context, and this one is the "
				     "process's own",
				     ctx->caps.device);
	if (attr->num_wqs > IBC_RSS_MAX_WQS)
		return ibc_set_error(-EINVAL, "%u WQs, at most %d",
				     attr->num_wqs, IBC_RSS_MAX_WQS);
	if (attr->log_ind_tbl_size > IBC_RSS_MAX_LOG_TABLE)
		return ibc_set_error(-EINVAL,
				     "a table of 2^%u entries is over the "
				     "uverbs limit of 2^%d",
				     attr->log_ind_tbl_size,
				     IBC_RSS_MAX_LOG_TABLE);
	/* A rekey or removal closes the context only once the table is
	 * listed, so that it goes with the context (ibc_rss_ctx_closing). */
	err = ibc_ctx_enter(ctx, true);
	if (err < 0)
		return err;
	pthread_mutex_lock(&rss_lock);
	rss_creating++;
	pthread_mutex_unlock(&rss_lock);
	rss = calloc(1, sizeof(*rss));
	if (!rss) {
		err = ibc_set_error(-ENOMEM, "out of memory");
		goto leave;
	}
	q.context_id = ctx->caps.context_id;
	q.port_num = attr->port_num;
	q.log_ind_tbl_size = attr->log_ind_tbl_size;
	q.wq_ids = (uint64_t *)attr->wq_ids;
	q.n_wq_ids = attr->num_wqs;
	q.hash_key.data = (uint8_t *)attr->hash_key;
	q.hash_key.len = IBC_RSS_KEY_LEN;
	q.hash_fields = attr->hash_fields;
	match_to_wire(&attr->match, &m);
	q.match = &m;
	q.flags = attr->flags;
	req.body_case = RDMAB__REQUEST__BODY_RSS_CREATE;
	req.rss_create = &q;
	err = ibc_call(ctx->client, &req, 0, &r);
	if (err < 0)
		goto leave;
	out = r.reply->rss_create;
	if (r.reply->body_case != RDMAB__REPLY__BODY_RSS_CREATE ||
	    !out->rss_id || out->n_wq_ids != attr->num_wqs) {
		ibc_reply_free(&r);
		err = ibc_set_error(-EPROTO, "the broker answered rss-create "
					     "with something else");
		goto leave;
	}
	rss->ctx = ctx;
	rss->id = out->rss_id;
	rss->hash_fields = attr->hash_fields;
	rss->mask = (1u << attr->log_ind_tbl_size) - 1;
	rss->table = rss_table_new(out->wq_ids, out->n_wq_ids);
	ibc_reply_free(&r);
	if (!rss->table) {
		/* The broker's object goes with the session. */
		err = ibc_set_error(-ENOMEM, "out of memory");
		goto leave;
	}
	toeplitz_tables_init(&rss->tt, attr->hash_key);
	pthread_mutex_lock(&rss_lock);
	rss->next = rss_list;
	rss_list = rss;
	rss_missed_apply(rss);
	pthread_mutex_unlock(&rss_lock);
	*ret_rss = rss;
	rss = NULL;
leave:
	rss_create_done();
	ibc_ctx_leave(ctx);
	free(rss);
	return err;
}

static void rss_free(struct ibc_rss *rss)
{
	struct rss_table *t = rss->table;

	while (t) {
		struct rss_table *older = t->older;

		free(t);
		t = older;
	}
	free(rss);
}

IBC_EXPORT int ibc_rss_destroy(struct ibc_rss *rss)
{
	Rdmab__RssDestroyRequest q = RDMAB__RSS_DESTROY_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct ibc_rss **p;
	struct ibc_reply r;
	int err;

	if (!rss)
		return ibc_set_error(-EINVAL, "rss is NULL");
	if (__atomic_load_n(&rss->table, __ATOMIC_ACQUIRE)->n_wqs) {
		q.rss_id = rss->id;
		req.body_case = RDMAB__REQUEST__BODY_RSS_DESTROY;
		req.rss_destroy = &q;
		err = ibc_call(rss->ctx->client, &req, 0, &r);
		if (err < 0)
			return err;
		ibc_reply_free(&r);
	}
	pthread_mutex_lock(&rss_lock);
	for (p = &rss_list; *p; p = &(*p)->next)
		if (*p == rss) {
			*p = rss->next;
			break;
		}
	pthread_mutex_unlock(&rss_lock);
	rss_free(rss);
	return 0;
}

IBC_EXPORT uint64_t ibc_rss_id(const struct ibc_rss *rss)
{
	return rss ? rss->id : 0;
}

IBC_EXPORT int ibc_rss_lookup(const struct ibc_rss *rss,
			      const struct ibc_flow *flow, uint32_t *ret_hash,
			      uint64_t *ret_wq_id)
{
	uint8_t in[TOEPLITZ_MAX_INPUT];
	const struct rss_table *t;
	uint64_t f, ports = 0;
	size_t n = 0, alen;
	uint32_t h;

	if (!rss || !flow)
		return ibc_set_error(-EINVAL, "rss or flow is NULL");
	if (ibc_stale(rss->ctx->client))
		return ibc_stale_error(rss->ctx->client);
	f = rss->hash_fields;
	if (flow->af == AF_INET) {
		f &= ~(uint64_t)RSS_HASH_V6;
		alen = 4;
	} else if (flow->af == AF_INET6) {
		f &= ~(uint64_t)RSS_HASH_V4;
		alen = 16;
	} else {
		return ibc_set_error(-EINVAL,
				     "flow family %d is not AF_INET or "
				     "AF_INET6",
				     flow->af);
	}
	if (flow->l4_proto == IPPROTO_TCP)
		ports = f & RSS_HASH_TCP;
	else if (flow->l4_proto == IPPROTO_UDP)
		ports = f & RSS_HASH_UDP;
	/* Source address, destination address, source port, destination
	 * port, as the device reads them. */
	if (f & (IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_SRC_IPV6)) {
		memcpy(in + n, flow->src_addr, alen);
		n += alen;
	}
	if (f & (IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_DST_IPV6)) {
		memcpy(in + n, flow->dst_addr, alen);
		n += alen;
	}
	if (ports & (IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_SRC_PORT_UDP)) {
		in[n++] = (uint8_t)(flow->src_port >> 8);
		in[n++] = (uint8_t)flow->src_port;
	}
	if (ports & (IBV_RX_HASH_DST_PORT_TCP | IBV_RX_HASH_DST_PORT_UDP)) {
		in[n++] = (uint8_t)(flow->dst_port >> 8);
		in[n++] = (uint8_t)flow->dst_port;
	}
	h = toeplitz_hash(&rss->tt, in, n);
	t = __atomic_load_n(&rss->table, __ATOMIC_ACQUIRE);
	if (!t->n_wqs)
		return ibc_set_error(-ENOENT,
				     "RSS %llu was destroyed: every WQ of its "
				     "table is gone",
				     (unsigned long long)rss->id);
	if (ret_hash)
		*ret_hash = h;
	if (ret_wq_id)
		*ret_wq_id = t->wq_ids[(h & rss->mask) % t->n_wqs];
	return 0;
}

/* @ctx closes (@broker: with the broker, ibc_close and ibc_disconnect; the
 * RSS objects are destroyed and freed) or its device is gone (the objects
 * stay for ibc_rss_destroy(), which then only frees them). Called before
 * the context's other objects go: the tables use its WQs. */
static void ibc_rss_ctx_closing(struct ibc_ctx *ctx, bool broker)
{
	struct ibc_rss *gone = NULL, **p;

	pthread_mutex_lock(&rss_lock);
	for (p = &rss_list; *p;) {
		struct ibc_rss *rss = *p;
		struct rss_table *t;

		if (rss->ctx != ctx) {
			p = &rss->next;
			continue;
		}
		if (broker) {
			*p = rss->next;
			rss->next = gone;
			gone = rss;
			continue;
		}
		/* The device is gone, and the kernel objects with it: the
		 * lookup says so, ibc_rss_destroy() only frees. */
		t = calloc(1, sizeof(*t));
		if (t) {
			t->older = rss->table;
			__atomic_store_n(&rss->table, t, __ATOMIC_RELEASE);
		}
		p = &rss->next;
	}
	pthread_mutex_unlock(&rss_lock);
	while (gone) {
		Rdmab__RssDestroyRequest q = RDMAB__RSS_DESTROY_REQUEST__INIT;
		Rdmab__Request req = RDMAB__REQUEST__INIT;
		struct ibc_rss *next = gone->next;
		struct ibc_reply r;

		/* Whatever the broker answers, the object goes with this
		 * session or this process. */
		q.rss_id = gone->id;
		req.body_case = RDMAB__REQUEST__BODY_RSS_DESTROY;
		req.rss_destroy = &q;
		if (ibc_call(ctx->client, &req, 0, &r) == 0)
			ibc_reply_free(&r);
		rss_free(gone);
		gone = next;
	}
}

/* The RSS object's lookup follows the new table as the event is read, and
 * the event is queued for the callback. Called with the client's lock. */
static struct ibc_queued_event *ibc_rss_event(struct ibc_client *cl,
					      const Rdmab__Event *ev)
{
	const Rdmab__RssRebuiltEvent *b = ev->rss_rebuilt;
	/* A broker before deltas says destroyed with an empty list. */
	bool destroyed = b->destroyed || (!b->delta && !b->n_wq_ids);
	const uint64_t *ids = b->delta ? b->removed_wq_ids : b->wq_ids;
	size_t n = b->delta ? b->n_removed_wq_ids : b->n_wq_ids;
	struct ibc_queued_event *q;
	struct ibc_rss *rss;
	struct rss_table *t = NULL;

	pthread_mutex_lock(&rss_lock);
	for (rss = rss_list; rss; rss = rss->next)
		if (rss->ctx->client == cl && rss->id == ev->object_id)
			break;
	if (rss)
		t = rss_table_next(rss->table, destroyed, b->delta, ids, n);
	else if (rss_creating)
		rss_missed_add(cl, ev->object_id, destroyed, b->delta, ids, n);
	if (t)
		rss_table_set(rss, t);
	pthread_mutex_unlock(&rss_lock);
	q = ibc_queue_event(
		cl, destroyed ? IBC_EVENT_RSS_DESTROYED : IBC_EVENT_RSS_REBUILT,
		b->reason, NULL);
	return q;
}

/* --- the listing ---------------------------------------------------------- */

static void rss_info_from(struct ibc_rss_info *e, const Rdmab__RssInfo *ri)
{
	const Rdmab__FlowMatch *m = ri->match;

	memset(e, 0, sizeof(*e));
	e->id = ri->id;
	ibc_copy_name(e->domain, sizeof(e->domain), ri->domain);
	ibc_copy_name(e->device, sizeof(e->device), ri->device);
	e->client_id = ri->client_id;
	e->port_num = ri->port_num;
	e->log_ind_tbl_size = ri->log_ind_tbl_size;
	if (ri->hash_key.len == IBC_RSS_KEY_LEN)
		memcpy(e->hash_key, ri->hash_key.data, IBC_RSS_KEY_LEN);
	e->hash_fields = ri->hash_fields;
	if (m) {
		e->match.af = (int)m->af;
		if (m->dst_addr.len &&
		    m->dst_addr.len <= sizeof(e->match.dst_addr))
			memcpy(e->match.dst_addr, m->dst_addr.data,
			       m->dst_addr.len);
		e->match.prefix_len = (uint8_t)m->prefix_len;
		e->match.l4_proto = (uint8_t)m->l4_proto;
		e->match.dst_port = (uint16_t)m->dst_port;
		e->match.port_mask = (uint16_t)m->port_mask;
	}
	e->priority = ri->priority;
	e->qp_num = ri->qp_num;
	e->rebuilds = ri->rebuilds;
	e->num_wqs =
		(uint32_t)(ri->n_wq_ids < ri->n_wq_owners ? ri->n_wq_ids :
							    ri->n_wq_owners);
}

/* Entries in the library's size, then every WQ id and owner. */
struct rss_acc {
	struct ibc_rss_info *e;
	uint64_t *wq; /* pairs: id, owner */
	size_t n, n_wq;
};

static int rss_acc_add(struct rss_acc *a, const Rdmab__RssInfo *ri)
{
	struct ibc_rss_info *e = realloc(a->e, (a->n + 1) * sizeof(*e));
	uint64_t *wq;

	if (!e)
		return -ENOMEM;
	a->e = e;
	rss_info_from(&e[a->n], ri);
	wq = realloc(a->wq, (a->n_wq + e[a->n].num_wqs + 1) * 2 * sizeof(*wq));
	if (!wq)
		return -ENOMEM;
	a->wq = wq;
	for (uint32_t i = 0; i < e[a->n].num_wqs; i++) {
		wq[2 * (a->n_wq + i)] = ri->wq_ids[i];
		wq[2 * (a->n_wq + i) + 1] = ri->wq_owners[i];
	}
	a->n_wq += e[a->n].num_wqs;
	a->n++;
	return 0;
}

/* One block the caller frees with ibc_list_free(): @size-byte entries,
 * then their WQ ids and owners. */
static int rss_acc_out(struct rss_acc *a, size_t size,
		       struct ibc_rss_info **ret)
{
	size_t head = (a->n * size + 7) & ~(size_t)7;
	uint8_t *b = calloc(1, head + a->n_wq * 2 * sizeof(uint64_t) + 1);
	uint64_t *ids, *owners;
	size_t w = 0;

	if (!b)
		return -ENOMEM;
	ids = (uint64_t *)(b + head);
	owners = ids + a->n_wq;
	for (size_t i = 0; i < a->n; i++) {
		struct ibc_rss_info *e = &a->e[i];

		e->wq_ids = ids + w;
		e->wq_owners = owners + w;
		for (uint32_t k = 0; k < e->num_wqs; k++, w++) {
			ids[w] = a->wq[2 * w];
			owners[w] = a->wq[2 * w + 1];
		}
		ibc_copy_out(b + i * size, size, e, sizeof(*e));
	}
	*ret = (struct ibc_rss_info *)b;
	return 0;
}

IBC_EXPORT int ibc_list_rss(struct ibc_client *client,
			    struct ibc_rss_info **ret_list, size_t entry_size,
			    size_t *ret_count)
{
	struct rss_acc a = { 0 };
	int err;

	if (!client || !ret_list || !ret_count)
		return ibc_set_error(-EINVAL, "NULL argument");
	err = ibc_check_size("ibc_rss_info", entry_size,
			     IBC_SIZE_V0(struct ibc_rss_info, wq_owners));
	if (err == 0 && entry_size % __alignof__(struct ibc_rss_info))
		err = ibc_set_error(-EINVAL,
				    "entries of %zu bytes are not aligned as "
				    "struct ibc_rss_info: pass sizeof the "
				    "structure",
				    entry_size);
	for (;;) {
		Rdmab__ListRequest lr = RDMAB__LIST_REQUEST__INIT;
		Rdmab__Request req = RDMAB__REQUEST__INIT;
		const Rdmab__ListRssReply *out;
		struct ibc_reply r;
		size_t k;

		if (err < 0)
			break;
		lr.offset = (uint32_t)a.n;
		req.body_case = RDMAB__REQUEST__BODY_LIST_RSS;
		req.list_rss = &lr;
		err = ibc_call(client, &req, 0, &r);
		if (err < 0)
			break;
		out = r.reply->list_rss;
		if (r.reply->body_case != RDMAB__REPLY__BODY_LIST_RSS) {
			ibc_reply_free(&r);
			err = ibc_set_error(-EPROTO,
					    "the broker answered list-rss "
					    "with something else");
			break;
		}
		k = out->n_rss;
		for (size_t i = 0; err == 0 && i < k; i++)
			if (rss_acc_add(&a, out->rss[i]) < 0)
				err = ibc_set_error(-ENOMEM, "out of memory");
		if (err == 0 && (a.n >= out->total || k == 0)) {
			ibc_reply_free(&r);
			break;
		}
		ibc_reply_free(&r);
	}
	if (err == 0 && rss_acc_out(&a, entry_size, ret_list) < 0)
		err = ibc_set_error(-ENOMEM, "out of memory");
	if (err == 0) {
		*ret_count = a.n;
		ibc_clear_error();
	}
	free(a.e);
	free(a.wq);
	return err;
}

static const struct ibc_event_handler ibc_rss_rebuilt_event = {
	.body = RDMAB__EVENT__BODY_RSS_REBUILT,
	.read = ibc_rss_event,
};

static const struct ibc_event_handler *const ibc_rss_events[] = {
	&ibc_rss_rebuilt_event,
	NULL,
};

static void ibc_rss_hello(Rdmab__HelloRequest *hello)
{
	/* ibc_rss_event() applies a rebuild's removed WQs itself. */
	hello->rss_delta_events = true;
}

const struct ibc_family ibc_rss_family = {
	.name = "rss",
	.events = ibc_rss_events,
	.hello = ibc_rss_hello,
	.ctx_closing = ibc_rss_ctx_closing,
	.fork_lock = ibc_rss_fork_lock,
	.fork_unlock = ibc_rss_fork_unlock,
	.quota = IBC_FAMILY_FIELD(Rdmab__QuotaInfo, rss_tables,
				  struct ibc_quota, rss_tables),
};
