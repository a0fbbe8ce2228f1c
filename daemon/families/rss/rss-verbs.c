// SPDX-License-Identifier: MIT
/*
 * RSS on a verbs device (DESIGN §3): the indirection table over clients'
 * WQs, which live in the domain's context but were made by the clients, is
 * built with the public ibv_create_rwq_ind_table() over stub struct ibv_wq
 * objects that carry the clients' handles. libibverbs reads only the
 * handle (and the providers the context); that is not documented, so a
 * self-test at start-up decides, and its failure makes RSS EOPNOTSUPP with
 * the reason. Then the RAW_PACKET QP hashing by Toeplitz and the flow rule,
 * with CAP_NET_RAW effective only around those two calls. Unverified on
 * mlx5 hardware (tests/hw/).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>

#include "common/verbs/verbs-err.h"
#include "daemon/device/caps.h"
#include "daemon/families/rss/rss-verbs.h"

struct rss_verbs {
	struct ibv_rwq_ind_table *tbl;
	struct ibv_qp *qp;
	struct ibv_flow *flow;
};

/* Stubs for @n handles: what libibverbs and the providers read. */
static struct ibv_wq *rss_stubs(struct ibv_context *ctx, struct ibv_pd *pd,
				const uint32_t *handles, uint32_t n)
{
	struct ibv_wq *w = calloc(n, sizeof(*w));

	if (!w)
		return NULL;
	for (uint32_t i = 0; i < n; i++) {
		w[i].context = ctx;
		w[i].pd = pd;
		w[i].wq_type = IBV_WQT_RQ;
		w[i].state = IBV_WQS_RDY;
		w[i].handle = handles[i];
	}
	return w;
}

/* Entry i = WQ i mod n. */
static struct ibv_rwq_ind_table *rss_table(struct ibv_context *ctx,
					   struct ibv_wq *stubs, uint32_t n,
					   uint32_t log_size)
{
	uint32_t size = 1u << log_size;
	struct ibv_rwq_ind_table_init_attr a = { .log_ind_tbl_size = log_size };
	struct ibv_rwq_ind_table *t;
	struct ibv_wq **ent = calloc(size, sizeof(*ent));

	if (!ent) {
		errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < size; i++)
		ent[i] = &stubs[i % n];
	a.ind_tbl = ent;
	t = verbs_try(ibv_create_rwq_ind_table(ctx, &a));
	free(ent);
	return t;
}

int rss_verbs_selftest(struct ibv_context *ctx, char *why, size_t len)
{
	struct ibv_wq_init_attr wa = { .wq_type = IBV_WQT_RQ,
				       .max_wr = 1,
				       .max_sge = 1 };
	struct ibv_rwq_ind_table *t = NULL;
	struct ibv_wq *wq = NULL, *stub = NULL;
	struct ibv_pd *pd;
	struct ibv_cq *cq = NULL;
	int ret = -ENOMEM;

	pd = verbs_try(ibv_alloc_pd(ctx));
	if (!pd) {
		ret = verbs_err(ENOMEM);
		snprintf(why, len, "the self-test's ibv_alloc_pd failed: %s",
			 strerror(-ret));
		return ret;
	}
	cq = verbs_try(ibv_create_cq(ctx, 1, NULL, NULL, 0));
	if (!cq) {
		ret = verbs_err(ENOMEM);
		snprintf(why, len, "the self-test's ibv_create_cq failed: %s",
			 strerror(-ret));
		goto out;
	}
	wa.pd = pd;
	wa.cq = cq;
	wq = verbs_try(ibv_create_wq(ctx, &wa));
	if (!wq) {
		ret = verbs_err(EOPNOTSUPP);
		snprintf(why, len,
			 "the device has no receive WQs (ibv_create_wq: %s)",
			 strerror(-ret));
		goto out;
	}
	/* The stub names the real WQ by handle only. */
	stub = rss_stubs(ctx, pd, &wq->handle, 1);
	if (!stub)
		goto out;
	t = rss_table(ctx, stub, 1, 0);
	if (!t) {
		ret = verbs_err(EOPNOTSUPP);
		snprintf(why, len,
			 "ibv_create_rwq_ind_table over a stub WQ failed: %s",
			 strerror(-ret));
		goto out;
	}
	ret = 0;
out:
	if (t)
		ibv_destroy_rwq_ind_table(t);
	free(stub);
	if (wq)
		ibv_destroy_wq(wq);
	if (cq)
		ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	return ret;
}

static void prefix_mask(uint8_t *mask, unsigned int bytes, unsigned int plen)
{
	for (unsigned int i = 0; i < bytes; i++) {
		unsigned int keep = plen > i * 8 ? plen - i * 8 : 0;

		mask[i] = keep >= 8 ? 0xff : (uint8_t)(0xff00u >> keep);
	}
}

/* A flow attribute and its specifications, one after the other as the
 * kernel reads them. */
union rss_flow_attr {
	struct ibv_flow_attr attr;
	uint64_t align;
	uint8_t b[sizeof(struct ibv_flow_attr) +
		  sizeof(struct ibv_flow_spec_eth) +
		  sizeof(struct ibv_flow_spec_ipv6) +
		  sizeof(struct ibv_flow_spec_tcp_udp)];
};

/* Ethernet with the family's ethertype, the destination prefix, and the
 * L4 protocol with the port: the family and L4 the hash implies are in
 * the match already (rss.c). */
static void rss_flow_attr(const struct rss_spec *spec, union rss_flow_attr *f)
{
	const struct rss_match *m = &spec->match;
	struct ibv_flow_spec_eth eth = { .type = IBV_FLOW_SPEC_ETH,
					 .size = sizeof(eth) };
	size_t off = sizeof(f->attr);

	memset(f, 0, sizeof(*f));
	f->attr.type = IBV_FLOW_ATTR_NORMAL;
	f->attr.priority = (uint16_t)spec->priority;
	f->attr.port = (uint8_t)spec->port_num;
	eth.val.ether_type = htons(m->af == AF_INET ? 0x0800 : 0x86dd);
	eth.mask.ether_type = 0xffff;
	memcpy(f->b + off, &eth, sizeof(eth));
	off += sizeof(eth);
	if (m->af == AF_INET) {
		struct ibv_flow_spec_ipv4 v4 = { .type = IBV_FLOW_SPEC_IPV4,
						 .size = sizeof(v4) };

		memcpy(&v4.val.dst_ip, m->addr, 4);
		prefix_mask((uint8_t *)&v4.mask.dst_ip, 4, m->prefix_len);
		memcpy(f->b + off, &v4, sizeof(v4));
		off += sizeof(v4);
	} else {
		struct ibv_flow_spec_ipv6 v6 = { .type = IBV_FLOW_SPEC_IPV6,
						 .size = sizeof(v6) };

		memcpy(v6.val.dst_ip, m->addr, 16);
		prefix_mask(v6.mask.dst_ip, 16, m->prefix_len);
		memcpy(f->b + off, &v6, sizeof(v6));
		off += sizeof(v6);
	}
	f->attr.num_of_specs = 2;
	if (m->l4) {
		struct ibv_flow_spec_tcp_udp l4 = {
			.type = m->l4 == IPPROTO_TCP ? IBV_FLOW_SPEC_TCP :
						       IBV_FLOW_SPEC_UDP,
			.size = sizeof(l4),
		};

		l4.val.dst_port = htons(m->port);
		l4.mask.dst_port = htons(m->port_mask);
		memcpy(f->b + off, &l4, sizeof(l4));
		off += sizeof(l4);
		f->attr.num_of_specs = 3;
	}
	f->attr.size = (uint16_t)off;
}

int rss_verbs_create(struct ibv_context *ctx, struct ibv_pd *pd,
		     const struct rss_spec *spec, struct rss_made *ret,
		     char *why, size_t len)
{
	struct ibv_qp_init_attr_ex qa = { 0 };
	struct rss_verbs *v = calloc(1, sizeof(*v));
	union rss_flow_attr fa;
	struct caps_saved saved;
	struct ibv_port_attr pa;
	struct ibv_wq *stubs;
	int err;

	/* RAW_PACKET QPs and their flow rules need an Ethernet port. */
	if (ibv_query_port(ctx, (uint8_t)spec->port_num, &pa) == 0 &&
	    pa.link_layer != IBV_LINK_LAYER_ETHERNET) {
		free(v);
		snprintf(why, len,
			 "%s port %u is not Ethernet: RAW_PACKET QPs need an "
			 "Ethernet port",
			 ibv_get_device_name(ctx->device), spec->port_num);
		return -EOPNOTSUPP;
	}
	stubs = rss_stubs(ctx, pd, spec->wqs, spec->n_wqs);
	if (!v || !stubs) {
		free(v);
		free(stubs);
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	v->tbl = rss_table(ctx, stubs, spec->n_wqs, spec->log_size);
	free(stubs);
	if (!v->tbl) {
		/* A handle that is no WQ, or not a ready one: the kernel's
		 * EINVAL is the last word. */
		err = verbs_err(EINVAL);
		snprintf(why, len, "ibv_create_rwq_ind_table: %s",
			 strerror(-err));
		goto fail;
	}
	qa.qp_type = IBV_QPT_RAW_PACKET;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE |
		       IBV_QP_INIT_ATTR_RX_HASH;
	qa.pd = pd;
	qa.rwq_ind_tbl = v->tbl;
	qa.rx_hash_conf.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
	qa.rx_hash_conf.rx_hash_key_len = RSS_KEY_LEN;
	qa.rx_hash_conf.rx_hash_key = (uint8_t *)spec->key;
	qa.rx_hash_conf.rx_hash_fields_mask = spec->hash_fields;
	rss_flow_attr(spec, &fa);
	err = caps_net_raw_raise(&saved);
	if (err < 0) {
		snprintf(why, len,
			 "CAP_NET_RAW is not permitted to the broker: %s "
			 "(AmbientCapabilities= of its unit)",
			 strerror(-err));
		goto fail;
	}
	v->qp = verbs_try(ibv_create_qp_ex(ctx, &qa));
	err = v->qp ? 0 : verbs_err(EINVAL);
	if (v->qp) {
		v->flow = verbs_try(ibv_create_flow(v->qp, &fa.attr));
		err = v->flow ? 0 : verbs_err(EINVAL);
	}
	if (caps_effective_restore(&saved) < 0 && err == 0)
		err = -EPERM;
	if (err < 0) {
		snprintf(why, len, "%s: %s",
			 v->qp ? "ibv_create_flow" : "ibv_create_qp_ex (RSS)",
			 strerror(-err));
		goto fail;
	}
	ret->tbl_handle = v->tbl->ind_tbl_handle;
	ret->qp_handle = v->qp->handle;
	ret->flow_handle = v->flow->handle;
	ret->qp_num = v->qp->qp_num;
	ret->priv = v;
	return 0;
fail:
	if (v->qp)
		ibv_destroy_qp(v->qp);
	if (v->tbl)
		ibv_destroy_rwq_ind_table(v->tbl);
	free(v);
	return err;
}

void *rss_verbs_qp(const struct rss_made *made)
{
	const struct rss_verbs *v = made->priv;

	return v ? v->qp : NULL;
}

int rss_verbs_destroy(struct rss_made *made, enum ibc_obj_kind part, char *why,
		      size_t len)
{
	struct rss_verbs *v = made->priv;
	int err = 0;

	if (!v)
		return 0;
	/* -ENOENT: the kernel object is gone already (destroyed by handle
	 * behind the broker's back). The part is forgotten, so that the
	 * next one can go; a provider that keeps its struct after a failed
	 * destroy leaks it, which only that use against the rules costs. */
	switch (part) {
	case IBC_OBJ_FLOW:
		if (v->flow)
			err = verbs_ret(verbs_try(ibv_destroy_flow(v->flow)),
					EINVAL);
		if (!err || err == -ENOENT)
			v->flow = NULL;
		break;
	case IBC_OBJ_QP:
		if (v->flow)
			err = -EBUSY;
		else if (v->qp)
			err = verbs_ret(verbs_try(ibv_destroy_qp(v->qp)),
					EINVAL);
		if (!err || err == -ENOENT)
			v->qp = NULL;
		break;
	default:
		if (v->qp)
			err = -EBUSY;
		else if (v->tbl)
			err = verbs_ret(
				verbs_try(ibv_destroy_rwq_ind_table(v->tbl)),
				EINVAL);
		if (!err || err == -ENOENT)
			v->tbl = NULL;
		break;
	}
	if (err < 0)
		snprintf(why, len, "destroying the RSS %s: %s",
			 part == IBC_OBJ_FLOW ? "flow rule" :
			 part == IBC_OBJ_QP   ? "QP" :
						"indirection table",
			 strerror(-err));
	if (!v->flow && !v->qp && !v->tbl) {
		free(v);
		made->priv = NULL;
	}
	return err;
}
