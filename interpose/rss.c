// SPDX-License-Identifier: MIT
/*
 * RSS for unmodified programs: ibv_create_rwq_ind_table over the
 * process's own WQs, the RSS QP over it (ibv_create_qp_ex with
 * IBV_QP_INIT_ATTR_IND_TABLE) and its flows, made by the broker when the
 * process could not make them itself: the RSS QP and the flow rule need
 * CAP_NET_RAW, which the broker holds for its RSS family and the program
 * does not. The broker's RSS object is table, QP and flow in one
 * (ibc_rss_create), so the table and the QP the program holds are the
 * interposer's records until ibv_create_flow, which makes one broker
 * object per flow; mlx5 numbers RSS QPs 0 and refuses to modify them, so
 * the records carry no more than that. A caller with CAP_NET_RAW, and a
 * context of the process's own, get the provider's calls.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "interpose/interpose.h"

struct rss_tbl {
	struct ibv_rwq_ind_table t;
	struct rss_tbl *next;
	struct ibcv_ctx *c;
	uint32_t log_size;
	uint32_t users; /* RSS QPs over it; under ibcv_rss_lock */
	uint32_t n_wqs; /* the distinct leading entries */
	uint64_t wq_ids[];
};

struct rss_qp {
	struct ibv_qp qp;
	struct rss_qp *next;
	struct rss_tbl *tbl;
	uint8_t key[IBC_RSS_KEY_LEN];
	uint64_t fields;
	uint32_t flows; /* under ibcv_rss_lock */
};

struct rss_flow {
	struct ibv_flow f;
	struct rss_flow *next;
	struct rss_qp *qp;
	struct ibc_rss *rss;
};

pthread_mutex_t ibcv_rss_lock = PTHREAD_MUTEX_INITIALIZER;
/* Under ibcv_rss_lock: every record this process holds. */
static struct rss_tbl *rss_tbls;
static struct rss_qp *rss_qps;
static struct rss_flow *rss_flows;

/* Unlink @p from the list at @head (records link through next); false
 * when it is not there. Under ibcv_rss_lock. */
#define RSS_UNLINK(head, p)                                                    \
	({                                                                     \
		__typeof__(head) *pp_ = &(head);                               \
		bool found_;                                                   \
		while (*pp_ && *pp_ != (p))                                    \
			pp_ = &(*pp_)->next;                                   \
		found_ = *pp_ != NULL;                                         \
		if (found_)                                                    \
			*pp_ = (p)->next;                                      \
		found_;                                                        \
	})

/* The record of the list at @head whose libibverbs structure (@field)
 * is @obj; NULL when there is none. Under ibcv_rss_lock. */
#define RSS_FIND(head, field, obj)                                             \
	({                                                                     \
		__typeof__(head) p_ = (head);                                  \
		while (p_ && (const void *)&p_->field != (const void *)(obj))  \
			p_ = p_->next;                                         \
		p_;                                                            \
	})

static bool rss_has_net_raw(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = { 0 };

	if (syscall(SYS_capget, &h, d))
		return false;
	return d[CAP_NET_RAW / 32].effective & (1u << (CAP_NET_RAW % 32));
}

bool ibcv_rss_by_broker(struct ibcv_ctx *c)
{
	return c->soft || (c->ctx->caps.shared && !rss_has_net_raw());
}

/* The broker's id of @wq, a WQ of @c the interposer made; 0 if none. */
static uint64_t rss_wq_id(struct ibcv_ctx *c, struct ibv_wq *wq)
{
	uint64_t id = 0;

	if (c->soft)
		return ibcv_soft_wq_id(c, wq);
	pthread_mutex_lock(&c->ctx->lock);
	for (struct ibc_obj *o = c->ctx->objs; o; o = o->next)
		if (o->kind == IBC_OBJ_WQ && o->vobj == wq) {
			id = o->id;
			break;
		}
	pthread_mutex_unlock(&c->ctx->lock);
	return id;
}

static struct ibv_rwq_ind_table *
rss_table(struct ibcv_ctx *c, struct ibv_rwq_ind_table_init_attr *attr)
{
	uint32_t size, n;
	struct rss_tbl *t;

	if (attr->comp_mask)
		return ibcv_fail_null(-EINVAL);
	if (attr->log_ind_tbl_size > IBC_RSS_MAX_LOG_TABLE || !attr->ind_tbl)
		return ibcv_fail_null(-EINVAL);
	size = 1u << attr->log_ind_tbl_size;
	t = calloc(1, sizeof(*t) + size * sizeof(t->wq_ids[0]));
	if (!t)
		return ibcv_fail_null(-ENOMEM);
	/* The broker's table is its WQs repeated (entry i = WQ i mod n):
	 * the application's must be that, its first WQs in order. */
	for (n = 0; n < size; n++) {
		uint32_t k;

		for (k = 0; k < n && attr->ind_tbl[k] != attr->ind_tbl[n]; k++)
			;
		if (k < n)
			break;
	}
	for (uint32_t i = 0; i < size; i++) {
		if (attr->ind_tbl[i] != attr->ind_tbl[i % n] ||
		    attr->ind_tbl[i]->context != c->vctx) {
			free(t);
			return ibcv_fail_null(i < n ? -EINVAL : -EOPNOTSUPP);
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		t->wq_ids[i] = rss_wq_id(c, attr->ind_tbl[i]);
		if (!t->wq_ids[i]) {
			/* Not a WQ the broker knows: made by direct verbs,
			 * or of the process's own context. */
			free(t);
			return ibcv_fail_null(-EINVAL);
		}
	}
	t->t.context = c->vctx;
	t->c = c;
	t->log_size = attr->log_ind_tbl_size;
	t->n_wqs = n;
	pthread_mutex_lock(&ibcv_rss_lock);
	t->next = rss_tbls;
	rss_tbls = t;
	pthread_mutex_unlock(&ibcv_rss_lock);
	return &t->t;
}

/* 0, EBUSY while an RSS QP uses it, -ENOENT when it is not a record. */
static int rss_table_destroy(struct ibv_rwq_ind_table *tbl)
{
	struct rss_tbl *t = (struct rss_tbl *)tbl, *p;
	int ret = -ENOENT;

	pthread_mutex_lock(&ibcv_rss_lock);
	p = RSS_FIND(rss_tbls, t, tbl);
	if (p && p->users)
		ret = EBUSY;
	else if (p && RSS_UNLINK(rss_tbls, t))
		ret = 0;
	pthread_mutex_unlock(&ibcv_rss_lock);
	if (ret == 0)
		free(t);
	return ret;
}

struct ibv_qp *ibcv_rss_qp(struct ibcv_ctx *c, struct ibv_qp_init_attr_ex *a)
{
	struct rss_tbl *t = (struct rss_tbl *)a->rwq_ind_tbl, *p;
	const struct ibv_rx_hash_conf *h = &a->rx_hash_conf;
	struct rss_qp *q;

	if (a->qp_type != IBV_QPT_RAW_PACKET ||
	    !(a->comp_mask & IBV_QP_INIT_ATTR_RX_HASH) ||
	    h->rx_hash_function != IBV_RX_HASH_FUNC_TOEPLITZ ||
	    h->rx_hash_key_len != IBC_RSS_KEY_LEN || !h->rx_hash_key)
		return ibcv_fail_null(-EINVAL);
	/* What else an RSS QP may be asked (send queue, create flags) the
	 * broker's does not do. */
	if (a->comp_mask &
	    ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE |
			IBV_QP_INIT_ATTR_RX_HASH))
		return ibcv_fail_null(-EOPNOTSUPP);
	q = calloc(1, sizeof(*q));
	if (!q)
		return ibcv_fail_null(-ENOMEM);
	q->qp.context = c->vctx;
	q->qp.qp_context = a->qp_context;
	q->qp.pd = a->pd;
	q->qp.qp_type = IBV_QPT_RAW_PACKET;
	q->qp.state = IBV_QPS_RESET;
	q->tbl = t;
	memcpy(q->key, h->rx_hash_key, IBC_RSS_KEY_LEN);
	q->fields = h->rx_hash_fields_mask;
	pthread_mutex_lock(&ibcv_rss_lock);
	p = RSS_FIND(rss_tbls, t, a->rwq_ind_tbl);
	if (p && p->c == c) {
		t->users++;
		q->next = rss_qps;
		rss_qps = q;
	}
	pthread_mutex_unlock(&ibcv_rss_lock);
	if (!p || p->c != c) {
		free(q);
		return ibcv_fail_null(-EINVAL);
	}
	pthread_mutex_init(&q->qp.mutex, NULL);
	pthread_cond_init(&q->qp.cond, NULL);
	return &q->qp;
}

bool ibcv_rss_is_table(const struct ibv_rwq_ind_table *tbl)
{
	bool found;

	pthread_mutex_lock(&ibcv_rss_lock);
	found = RSS_FIND(rss_tbls, t, tbl) != NULL;
	pthread_mutex_unlock(&ibcv_rss_lock);
	return found;
}

int ibcv_rss_qp_destroy(struct ibv_qp *qp)
{
	struct rss_qp *q = (struct rss_qp *)qp, *p;
	int ret = -ENOENT;

	pthread_mutex_lock(&ibcv_rss_lock);
	p = RSS_FIND(rss_qps, qp, qp);
	/* The kernel's answer for a QP with flows attached. */
	if (p && p->flows)
		ret = EBUSY;
	else if (p && RSS_UNLINK(rss_qps, q)) {
		q->tbl->users--;
		ret = 0;
	}
	pthread_mutex_unlock(&ibcv_rss_lock);
	if (ret == 0) {
		pthread_mutex_destroy(&q->qp.mutex);
		pthread_cond_destroy(&q->qp.cond);
		free(q);
	}
	return ret;
}

bool ibcv_rss_pd_used(const struct ibv_pd *pd)
{
	bool used = false;

	pthread_mutex_lock(&ibcv_rss_lock);
	for (const struct rss_qp *q = rss_qps; q && !used; q = q->next)
		used = q->qp.pd == pd;
	pthread_mutex_unlock(&ibcv_rss_lock);
	return used;
}

/* --- flows: what the broker's match can say ----------------------------- */

/* The prefix length of the network-order mask @m of @len bytes; -1 when
 * it is not a prefix. */
static int rss_prefix(const uint8_t *m, size_t len)
{
	int n = 0;
	size_t i = 0;

	for (; i < len && m[i] == 0xff; i++)
		n += 8;
	if (i < len) {
		uint8_t b = m[i++];

		while (b & 0x80) {
			n++;
			b = (uint8_t)(b << 1);
		}
		if (b)
			return -1;
	}
	for (; i < len; i++)
		if (m[i])
			return -1;
	return n;
}

static bool rss_zero(const void *p, size_t len)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

/* The broker's match for @a's specs: a destination prefix, an L4
 * protocol and a destination port; -EOPNOTSUPP for anything else a flow
 * can say (MACs, VLANs, sources, other specs). */
static int rss_match(const struct ibv_flow_attr *a, struct ibc_flow_match *m)
{
	const uint8_t *spec = (const uint8_t *)(a + 1);
	size_t off = sizeof(*a);

	memset(m, 0, sizeof(*m));
	if (a->comp_mask || a->type != IBV_FLOW_ATTR_NORMAL || a->flags)
		return -EOPNOTSUPP;
	for (uint8_t i = 0; i < a->num_of_specs; i++) {
		/* Specs follow each other at 4-byte steps: each is copied
		 * to be read aligned, and none may pass the attribute's
		 * size. */
		struct ibv_flow_spec sb, *s = &sb;
		__typeof__(sb.hdr) h;
		int plen;

		if (off + sizeof(h) > a->size)
			return -EINVAL;
		memcpy(&h, spec, sizeof(h));
		if (h.size < sizeof(h) || off + h.size > a->size)
			return -EINVAL;
		memset(&sb, 0, sizeof(sb));
		memcpy(&sb, spec, h.size < sizeof(sb) ? h.size : sizeof(sb));
		switch (s->hdr.type) {
		case IBV_FLOW_SPEC_ETH:
			if (s->hdr.size < sizeof(s->eth))
				return -EINVAL;
			if (!rss_zero(s->eth.mask.dst_mac, 6) ||
			    !rss_zero(s->eth.mask.src_mac, 6) ||
			    s->eth.mask.vlan_tag)
				return -EOPNOTSUPP;
			break;
		case IBV_FLOW_SPEC_IPV4:
			if (s->hdr.size < sizeof(s->ipv4))
				return -EINVAL;
			plen = rss_prefix((const uint8_t *)&s->ipv4.mask.dst_ip,
					  4);
			if (s->ipv4.mask.src_ip || plen < 0)
				return -EOPNOTSUPP;
			m->af = AF_INET;
			memcpy(m->dst_addr, &s->ipv4.val.dst_ip, 4);
			m->prefix_len = (uint8_t)plen;
			break;
		case IBV_FLOW_SPEC_IPV6:
			if (s->hdr.size < sizeof(s->ipv6))
				return -EINVAL;
			plen = rss_prefix(s->ipv6.mask.dst_ip, 16);
			if (!rss_zero(s->ipv6.mask.src_ip, 16) ||
			    s->ipv6.mask.flow_label || s->ipv6.mask.next_hdr ||
			    s->ipv6.mask.traffic_class ||
			    s->ipv6.mask.hop_limit || plen < 0)
				return -EOPNOTSUPP;
			m->af = AF_INET6;
			memcpy(m->dst_addr, s->ipv6.val.dst_ip, 16);
			m->prefix_len = (uint8_t)plen;
			break;
		case IBV_FLOW_SPEC_TCP:
		case IBV_FLOW_SPEC_UDP:
			if (s->hdr.size < sizeof(s->tcp_udp))
				return -EINVAL;
			if (s->tcp_udp.mask.src_port)
				return -EOPNOTSUPP;
			m->l4_proto = s->hdr.type == IBV_FLOW_SPEC_TCP ?
					      IPPROTO_TCP :
					      IPPROTO_UDP;
			m->port_mask = ntohs(s->tcp_udp.mask.dst_port);
			m->dst_port =
				ntohs(s->tcp_udp.val.dst_port) & m->port_mask;
			break;
		default:
			return -EOPNOTSUPP;
		}
		spec += h.size;
		off += h.size;
	}
	return 0;
}

struct ibv_flow *ibcv_rss_flow(struct ibcv_ctx *c, struct ibv_qp *qp,
			       struct ibv_flow_attr *a)
{
	struct rss_qp *q = (struct rss_qp *)qp;
	struct ibc_rss_attr ra = { .port_num = a->port };
	struct rss_flow *f;
	int err;

	err = rss_match(a, &ra.match);
	if (err < 0)
		return ibcv_fail_null(err);
	/* Nothing to match is all the port's traffic: the broker lets only
	 * its administrators ask that. */
	if (!ra.match.af && !ra.match.l4_proto)
		ra.flags = IBC_RSS_MATCH_ALL;
	ra.log_ind_tbl_size = q->tbl->log_size;
	ra.num_wqs = q->tbl->n_wqs;
	ra.wq_ids = q->tbl->wq_ids;
	memcpy(ra.hash_key, q->key, IBC_RSS_KEY_LEN);
	ra.hash_fields = q->fields;
	f = calloc(1, sizeof(*f));
	if (!f)
		return ibcv_fail_null(-ENOMEM);
	ibcv_inside++;
	err = ibc_rss_create(c->ctx, &ra, &f->rss);
	ibcv_inside--;
	if (err < 0) {
		free(f);
		return ibcv_fail_null(err);
	}
	f->f.context = c->vctx;
	f->qp = q;
	pthread_mutex_lock(&ibcv_rss_lock);
	q->flows++;
	f->next = rss_flows;
	rss_flows = f;
	pthread_mutex_unlock(&ibcv_rss_lock);
	return &f->f;
}

bool ibcv_rss_is_qp(const struct ibv_qp *qp)
{
	bool found;

	pthread_mutex_lock(&ibcv_rss_lock);
	found = RSS_FIND(rss_qps, qp, qp) != NULL;
	pthread_mutex_unlock(&ibcv_rss_lock);
	return found;
}

/* 0 or the broker's errno; -ENOENT when @flow is not a record. */
static int rss_flow_destroy(struct ibv_flow *flow)
{
	struct rss_flow *f = (struct rss_flow *)flow;
	bool found;
	int err;

	pthread_mutex_lock(&ibcv_rss_lock);
	found = RSS_UNLINK(rss_flows, f);
	pthread_mutex_unlock(&ibcv_rss_lock);
	if (!found)
		return -ENOENT;
	ibcv_inside++;
	err = ibc_rss_destroy(f->rss);
	ibcv_inside--;
	if (err < 0) {
		/* Still the broker's: the application may try again. */
		pthread_mutex_lock(&ibcv_rss_lock);
		f->next = rss_flows;
		rss_flows = f;
		pthread_mutex_unlock(&ibcv_rss_lock);
		return -err;
	}
	pthread_mutex_lock(&ibcv_rss_lock);
	f->qp->flows--;
	pthread_mutex_unlock(&ibcv_rss_lock);
	free(f);
	return 0;
}

/* --- the context's ops ------------------------------------------------- */

static struct ibv_rwq_ind_table *
wrap_create_table(struct ibv_context *context,
		  struct ibv_rwq_ind_table_init_attr *attr)
{
	struct ibcv_ctx *c = ibcv_ctx_find(context);

	if (ibcv_inside || !ibcv_rss_by_broker(c))
		return c->saved.create_rwq_ind_table(context, attr);
	return rss_table(c, attr);
}

static int wrap_destroy_table(struct ibv_rwq_ind_table *tbl)
{
	struct ibcv_ctx *c = ibcv_ctx_find(tbl->context);
	int ret = rss_table_destroy(tbl);

	if (ret != -ENOENT)
		return ret;
	return c->soft ? EINVAL : c->saved.destroy_rwq_ind_table(tbl);
}

static struct ibv_flow *wrap_create_flow(struct ibv_qp *qp,
					 struct ibv_flow_attr *attr)
{
	struct ibcv_ctx *c = ibcv_ctx_find(qp->context);

	if (ibcv_rss_is_qp(qp))
		return ibcv_rss_flow(c, qp, attr);
	if (c->soft)
		return ibcv_fail_null(-EOPNOTSUPP);
	return c->saved.ibv_create_flow(qp, attr);
}

static int wrap_destroy_flow(struct ibv_flow *flow)
{
	struct ibcv_ctx *c = ibcv_ctx_find(flow->context);
	int ret = rss_flow_destroy(flow);

	if (ret != -ENOENT)
		return ret;
	return c->soft ? EINVAL : c->saved.ibv_destroy_flow(flow);
}

void ibcv_wrap_rss_ops(struct ibcv_ctx *c, struct verbs_context *vc)
{
	c->saved.create_rwq_ind_table = vc->create_rwq_ind_table;
	c->saved.destroy_rwq_ind_table = vc->destroy_rwq_ind_table;
	c->saved.ibv_create_flow = vc->ibv_create_flow;
	c->saved.ibv_destroy_flow = vc->ibv_destroy_flow;
	/* The provider without them (rxe) answers EOPNOTSUPP as it would. */
	if (!vc->create_rwq_ind_table || !vc->destroy_rwq_ind_table ||
	    !vc->ibv_create_flow || !vc->ibv_destroy_flow)
		return;
	vc->create_rwq_ind_table = wrap_create_table;
	vc->destroy_rwq_ind_table = wrap_destroy_table;
	vc->ibv_create_flow = wrap_create_flow;
	vc->ibv_destroy_flow = wrap_destroy_flow;
}

void ibcv_unwrap_rss_ops(struct ibcv_ctx *c, struct verbs_context *vc)
{
	vc->create_rwq_ind_table = c->saved.create_rwq_ind_table;
	vc->destroy_rwq_ind_table = c->saved.destroy_rwq_ind_table;
	vc->ibv_create_flow = c->saved.ibv_create_flow;
	vc->ibv_destroy_flow = c->saved.ibv_destroy_flow;
}

/* The soft device's ibv_create_qp_ex: RSS QPs only (its other QPs are
 * ibv_create_qp's). */
static struct ibv_qp *soft_create_qp_ex(struct ibv_context *context,
					struct ibv_qp_init_attr_ex *a)
{
	struct ibcv_ctx *c = ibcv_ctx_find(context);
	struct ibv_qp *qp;

	if (!(a->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE) ||
	    !ibcv_rss_is_table(a->rwq_ind_tbl))
		return ibcv_fail_null(-EOPNOTSUPP);
	qp = ibcv_rss_qp(c, a);
	if (qp)
		ibcv_live_add(qp);
	return qp;
}

void ibcv_soft_rss_ops(struct verbs_context *vc)
{
	vc->create_qp_ex = soft_create_qp_ex;
	vc->create_rwq_ind_table = wrap_create_table;
	vc->destroy_rwq_ind_table = wrap_destroy_table;
	vc->ibv_create_flow = wrap_create_flow;
	vc->ibv_destroy_flow = wrap_destroy_flow;
}

void ibcv_rss_ctx_closing(struct ibcv_ctx *c)
{
	struct rss_flow *f, **fp = &rss_flows;
	struct rss_qp *q, **qp = &rss_qps;
	struct rss_tbl *t, **tp = &rss_tbls;

	/* ibc_close destroys the broker's RSS objects with the context; the
	 * records go with it, as the kernel's objects go with a closed
	 * context. */
	pthread_mutex_lock(&ibcv_rss_lock);
	while ((f = *fp)) {
		if (f->qp->tbl->c != c) {
			fp = &f->next;
			continue;
		}
		*fp = f->next;
		free(f);
	}
	while ((q = *qp)) {
		if (q->tbl->c != c) {
			qp = &q->next;
			continue;
		}
		*qp = q->next;
		pthread_mutex_destroy(&q->qp.mutex);
		pthread_cond_destroy(&q->qp.cond);
		free(q);
	}
	while ((t = *tp)) {
		if (t->c != c) {
			tp = &t->next;
			continue;
		}
		*tp = t->next;
		free(t);
	}
	pthread_mutex_unlock(&ibcv_rss_lock);
}
