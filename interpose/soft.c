// SPDX-License-Identifier: MIT
/*
 * The broker's soft device under the interposer: libibverbs knows no such
 * device, so the interposer lists one and gives the program a context
 * whose control verbs are libibclient's (the broker makes and registers
 * every object) and whose data path answers EOPNOTSUPP: the soft device
 * moves no data.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interpose/interpose.h"

#define IBCV_SOFT_MAX 8

/* Made once and kept for the process: contexts point at them. */
static struct ibv_device ibcv_soft_devs[IBCV_SOFT_MAX];
static unsigned int ibcv_n_soft;
pthread_mutex_t ibcv_soft_lock = PTHREAD_MUTEX_INITIALIZER;

struct ibv_device *ibcv_soft_device(const char *name)
{
	struct ibv_device *d = NULL;

	pthread_mutex_lock(&ibcv_soft_lock);
	for (unsigned int i = 0; i < ibcv_n_soft; i++)
		if (!strcmp(ibcv_soft_devs[i].name, name))
			d = &ibcv_soft_devs[i];
	if (!d && ibcv_n_soft < IBCV_SOFT_MAX &&
	    strlen(name) < sizeof(d->name)) {
		d = &ibcv_soft_devs[ibcv_n_soft++];
		d->node_type = IBV_NODE_UNSPECIFIED;
		d->transport_type = IBV_TRANSPORT_UNSPECIFIED;
		snprintf(d->name, sizeof(d->name), "%s", name);
		snprintf(d->dev_name, sizeof(d->dev_name), "rdmabroker-%s",
			 name);
		/* No sysfs: what libibverbs reads there is absent. */
		snprintf(d->dev_path, sizeof(d->dev_path),
			 "/nonexistent/rdmabroker/%s", name);
		snprintf(d->ibdev_path, sizeof(d->ibdev_path),
			 "/nonexistent/rdmabroker/%s", name);
	}
	pthread_mutex_unlock(&ibcv_soft_lock);
	return d;
}

bool ibcv_is_soft_device(const struct ibv_device *dev)
{
	return dev >= ibcv_soft_devs && dev < ibcv_soft_devs + IBCV_SOFT_MAX;
}

static struct ibv_wq *soft_create_wq(struct ibv_context *context,
				     struct ibv_wq_init_attr *a);
static int soft_destroy_wq(struct ibv_wq *wq);
static int soft_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr);

/* --- the data path: none ------------------------------------------------ */

static int soft_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	(void)cq, (void)n, (void)wc;
	errno = EOPNOTSUPP;
	return -EOPNOTSUPP;
}

static int soft_req_notify(struct ibv_cq *cq, int solicited)
{
	(void)cq, (void)solicited;
	return EOPNOTSUPP;
}

static int soft_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad)
{
	(void)qp;
	*bad = wr;
	return EOPNOTSUPP;
}

static int soft_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad)
{
	(void)qp;
	*bad = wr;
	return EOPNOTSUPP;
}

static int soft_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad)
{
	(void)srq;
	*bad = wr;
	return EOPNOTSUPP;
}

/* --- queries ------------------------------------------------------------ */

static const struct ibc_device_info *soft_info(struct ibcv_ctx *c)
{
	struct ibc_client *cl = c->ctx->client;

	for (uint32_t i = 0; i < cl->info.num_devices; i++)
		if (!strcmp(cl->devices[i].name, c->ctx->caps.device))
			return &cl->devices[i];
	return NULL;
}

int ibcv_soft_query_device(struct ibcv_ctx *c, struct ibv_device_attr *attr)
{
	const struct ibc_caps *k = &c->ctx->caps;
	const struct ibc_device_info *d = soft_info(c);

	memset(attr, 0, sizeof(*attr));
	snprintf(attr->fw_ver, sizeof(attr->fw_ver), "rdmabroker-soft");
	attr->max_mr_size = k->max_mr_size;
	attr->page_size_cap = 4096;
	attr->max_qp = (int)k->max_qp;
	attr->max_qp_wr = (int)k->max_qp_wr;
	attr->max_sge = (int)k->max_sge;
	attr->max_cq = (int)k->max_cq;
	attr->max_cqe = (int)k->max_cqe;
	attr->max_mr = (int)k->max_mr;
	attr->max_pd = (int)k->max_pd;
	attr->max_mw = (int)k->max_mw;
	attr->max_ah = (int)k->max_ah;
	attr->max_srq = (int)k->max_srq;
	attr->max_srq_wr = (int)k->max_srq_wr;
	attr->max_srq_sge = (int)k->max_srq_sge;
	attr->max_pkeys = 1;
	attr->phys_port_cnt = (uint8_t)(d && d->ports ? d->ports : 1);
	return 0;
}

static int soft_query_device_ex(struct ibv_context *context,
				const struct ibv_query_device_ex_input *input,
				struct ibv_device_attr_ex *attr, size_t size)
{
	struct ibcv_soft *s = (struct ibcv_soft *)verbs_get_ctx(context);

	(void)input;
	memset(attr, 0, size);
	return ibcv_soft_query_device(s->owner, &attr->orig_attr);
}

int ibcv_soft_query_port(struct ibcv_ctx *c, uint8_t port,
			 struct ibv_port_attr *attr)
{
	const struct ibc_device_info *d = soft_info(c);
	uint32_t ports = d && d->ports ? d->ports : 1;

	if (port < 1 || port > ports)
		return EINVAL;
	memset(attr, 0, sizeof(*attr));
	attr->state = IBV_PORT_ACTIVE;
	attr->max_mtu = IBV_MTU_4096;
	attr->active_mtu = IBV_MTU_4096;
	attr->pkey_tbl_len = 1;
	attr->link_layer = IBV_LINK_LAYER_UNSPECIFIED;
	attr->phys_state = 5; /* LinkUp */
	return 0;
}

static int soft_query_port_ex(struct ibv_context *context, uint8_t port,
			      struct ibv_port_attr *attr, size_t size)
{
	struct ibcv_soft *s = (struct ibcv_soft *)verbs_get_ctx(context);
	struct ibv_port_attr a;
	int ret = ibcv_soft_query_port(s->owner, port, &a);

	if (ret == 0)
		memcpy(attr, &a, size < sizeof(a) ? size : sizeof(a));
	return ret;
}

/* --- the context -------------------------------------------------------- */

int ibcv_soft_open(struct ibcv_ctx *c, struct ibv_device *dev)
{
	struct ibcv_soft *s = calloc(1, sizeof(*s));
	struct ibv_context *v;

	if (!s)
		return -ENOMEM;
	s->owner = c;
	s->vc.sz = sizeof(s->vc);
	s->vc.query_port = soft_query_port_ex;
	s->vc.query_device_ex = soft_query_device_ex;
	ibcv_soft_shared_ops(&s->vc);
	s->vc.create_wq = soft_create_wq;
	s->vc.destroy_wq = soft_destroy_wq;
	s->vc.modify_wq = soft_modify_wq;
	ibcv_soft_rss_ops(&s->vc);
	v = &s->vc.context;
	v->device = dev;
	v->cmd_fd = -1;
	v->async_fd = -1;
	v->num_comp_vectors = 1;
	v->abi_compat = __VERBS_ABI_IS_EXTENDED;
	v->ops.poll_cq = soft_poll_cq;
	v->ops.req_notify_cq = soft_req_notify;
	v->ops.post_send = soft_post_send;
	v->ops.post_recv = soft_post_recv;
	v->ops.post_srq_recv = soft_post_srq_recv;
	pthread_mutex_init(&v->mutex, NULL);
	c->soft = s;
	c->vctx = v;
	return 0;
}

void ibcv_soft_close(struct ibcv_ctx *c)
{
	/* RDMABROKER_PD=domain's, held by no object once the context
	 * closes. */
	free(c->domain_pd);
	c->domain_pd = NULL;
	pthread_mutex_destroy(&c->soft->vc.context.mutex);
	free(c->soft);
	c->soft = NULL;
}

/* --- objects: libibclient's, behind libibverbs' structures -------------- */

/* The domain's PD: the soft device makes every object on it. What the
 * application holds counts its objects made on it, to answer EBUSY as the
 * kernel does for a PD of one's own. */
struct soft_pd {
	struct ibv_pd pd;
	unsigned int users; /* atomic */
};

static void soft_pd_use(struct ibv_pd *pd, int delta)
{
	__atomic_add_fetch(&((struct soft_pd *)pd)->users, (unsigned int)delta,
			   __ATOMIC_RELAXED);
}

struct ibv_pd *ibcv_soft_alloc_pd(struct ibcv_ctx *c)
{
	struct soft_pd *p = calloc(1, sizeof(*p));

	if (!p)
		return ibcv_fail_null(-ENOMEM);
	p->pd.context = c->vctx;
	p->pd.handle = c->ctx->pd_handle;
	return &p->pd;
}

int ibcv_soft_dealloc_pd(struct ibv_pd *pd)
{
	struct soft_pd *p = (struct soft_pd *)pd;

	if (__atomic_load_n(&p->users, __ATOMIC_RELAXED))
		return EBUSY;
	free(p);
	return 0;
}

struct soft_mr {
	struct ibv_mr mr;
	struct ibc_mr *imr;
};

struct ibv_mr *ibcv_soft_reg_mr(struct ibcv_ctx *c, struct ibv_pd *pd,
				void *addr, size_t length, int access)
{
	struct soft_mr *m = calloc(1, sizeof(*m));
	int err;

	if (!m)
		return ibcv_fail_null(-ENOMEM);
	err = ibc_reg_mr(c->ctx, addr, length, access, &m->imr);
	if (err < 0) {
		free(m);
		return ibcv_fail_null(err);
	}
	soft_pd_use(pd, 1);
	m->mr.context = c->vctx;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = length;
	m->mr.handle = m->imr->o.handle;
	m->mr.lkey = m->imr->lkey;
	m->mr.rkey = m->imr->rkey;
	return &m->mr;
}

int ibcv_soft_dereg_mr(struct ibv_mr *mr)
{
	struct soft_mr *m = (struct soft_mr *)mr;
	int err = ibc_dereg_mr(m->imr);

	if (err < 0)
		return -err;
	soft_pd_use(mr->pd, -1);
	free(m);
	return 0;
}

struct soft_cq {
	struct ibv_cq cq;
	struct ibc_cq *icq;
};

struct ibv_cq *ibcv_soft_create_cq(struct ibcv_ctx *c, int cqe,
				   void *cq_context,
				   struct ibv_comp_channel *channel,
				   int comp_vector)
{
	struct ibc_cq_attr a = { .cqe = cqe, .comp_vector = comp_vector };
	struct soft_cq *q;
	int err;

	if (channel)
		return ibcv_fail_null(-EOPNOTSUPP);
	q = calloc(1, sizeof(*q));
	if (!q)
		return ibcv_fail_null(-ENOMEM);
	err = ibc_cq_create_ex(c->ctx, &a, &q->icq);
	if (err < 0) {
		free(q);
		return ibcv_fail_null(err);
	}
	q->cq.context = c->vctx;
	q->cq.cq_context = cq_context;
	q->cq.handle = q->icq->o.handle;
	q->cq.cqe = ibc_cq_cqe(q->icq);
	pthread_mutex_init(&q->cq.mutex, NULL);
	pthread_cond_init(&q->cq.cond, NULL);
	return &q->cq;
}

int ibcv_soft_destroy_cq(struct ibv_cq *cq)
{
	struct soft_cq *q = (struct soft_cq *)cq;
	int err = ibc_cq_destroy(q->icq);

	if (err < 0)
		return -err;
	pthread_mutex_destroy(&q->cq.mutex);
	pthread_cond_destroy(&q->cq.cond);
	free(q);
	return 0;
}

struct soft_srq {
	struct ibv_srq srq;
	struct ibc_srq *isrq;
};

struct soft_qp {
	struct ibv_qp qp;
	struct ibc_qp *iqp;
};

struct ibv_qp *ibcv_soft_create_qp(struct ibcv_ctx *c, struct ibv_pd *pd,
				   struct ibv_qp_init_attr *attr)
{
	struct ibc_qp_attr a = {
		.qp_type = attr->qp_type,
		.cap = attr->cap,
		.sq_sig_all = attr->sq_sig_all,
	};
	struct soft_qp *q;
	int err;

	if ((attr->send_cq && attr->send_cq->context != c->vctx) ||
	    (attr->recv_cq && attr->recv_cq->context != c->vctx) ||
	    (attr->srq && attr->srq->context != c->vctx))
		return ibcv_fail_null(-EINVAL);
	a.send_cq =
		attr->send_cq ? ((struct soft_cq *)attr->send_cq)->icq : NULL;
	a.recv_cq =
		attr->recv_cq ? ((struct soft_cq *)attr->recv_cq)->icq : NULL;
	a.srq = attr->srq ? ((struct soft_srq *)attr->srq)->isrq : NULL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return ibcv_fail_null(-ENOMEM);
	err = ibc_qp_create(c->ctx, &a, &q->iqp);
	if (err < 0) {
		free(q);
		return ibcv_fail_null(err);
	}
	soft_pd_use(pd, 1);
	q->qp.context = c->vctx;
	q->qp.qp_context = attr->qp_context;
	q->qp.pd = pd;
	q->qp.send_cq = attr->send_cq;
	q->qp.recv_cq = attr->recv_cq;
	q->qp.srq = attr->srq;
	q->qp.handle = q->iqp->o.handle;
	q->qp.qp_num = ibc_qp_num(q->iqp);
	q->qp.state = IBV_QPS_RESET;
	q->qp.qp_type = attr->qp_type;
	ibc_qp_cap(q->iqp, &attr->cap);
	pthread_mutex_init(&q->qp.mutex, NULL);
	pthread_cond_init(&q->qp.cond, NULL);
	return &q->qp;
}

int ibcv_soft_destroy_qp(struct ibv_qp *qp)
{
	struct soft_qp *q = (struct soft_qp *)qp;
	int err = ibc_qp_destroy(q->iqp);

	if (err < 0)
		return -err;
	soft_pd_use(qp->pd, -1);
	pthread_mutex_destroy(&q->qp.mutex);
	pthread_cond_destroy(&q->qp.cond);
	free(q);
	return 0;
}

struct ibv_srq *ibcv_soft_create_srq(struct ibcv_ctx *c, struct ibv_pd *pd,
				     struct ibv_srq_init_attr *attr)
{
	struct soft_srq *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return ibcv_fail_null(-ENOMEM);
	err = ibc_srq_create(c->ctx, &attr->attr, &s->isrq);
	if (err < 0) {
		free(s);
		return ibcv_fail_null(err);
	}
	soft_pd_use(pd, 1);
	s->srq.context = c->vctx;
	s->srq.srq_context = attr->srq_context;
	s->srq.pd = pd;
	s->srq.handle = s->isrq->o.handle;
	attr->attr = s->isrq->attr;
	pthread_mutex_init(&s->srq.mutex, NULL);
	pthread_cond_init(&s->srq.cond, NULL);
	return &s->srq;
}

int ibcv_soft_destroy_srq(struct ibv_srq *srq)
{
	struct soft_srq *s = (struct soft_srq *)srq;
	int err = ibc_srq_destroy(s->isrq);

	if (err < 0)
		return -err;
	soft_pd_use(srq->pd, -1);
	pthread_mutex_destroy(&s->srq.mutex);
	pthread_cond_destroy(&s->srq.cond);
	free(s);
	return 0;
}

/* --- WQs: the members of RSS tables (rss.c) ------------------------------ */

struct soft_wq {
	struct ibv_wq wq;
	struct ibc_wq *iwq;
};

static struct ibv_wq *soft_create_wq(struct ibv_context *context,
				     struct ibv_wq_init_attr *a)
{
	struct ibcv_soft *s = (struct ibcv_soft *)verbs_get_ctx(context);
	struct ibc_wq_attr wa = { .max_wr = a->max_wr, .max_sge = a->max_sge };
	struct soft_wq *w;
	int err;

	if (a->wq_type != IBV_WQT_RQ || !a->cq || a->cq->context != context ||
	    !a->pd || a->pd->context != context)
		return ibcv_fail_null(-EINVAL);
	if ((a->comp_mask & IBV_WQ_INIT_ATTR_FLAGS) && a->create_flags)
		return ibcv_fail_null(-EOPNOTSUPP);
	w = calloc(1, sizeof(*w));
	if (!w)
		return ibcv_fail_null(-ENOMEM);
	ibcv_inside++;
	err = ibc_wq_create(s->owner->ctx, ((struct soft_cq *)a->cq)->icq, &wa,
			    &w->iwq);
	ibcv_inside--;
	if (err < 0) {
		free(w);
		return ibcv_fail_null(err);
	}
	soft_pd_use(a->pd, 1);
	w->wq.context = context;
	w->wq.wq_context = a->wq_context;
	w->wq.pd = a->pd;
	w->wq.cq = a->cq;
	w->wq.wq_type = IBV_WQT_RQ;
	w->wq.handle = w->iwq->o.handle;
	/* libibclient's WQs are ready when made. */
	w->wq.state = IBV_WQS_RDY;
	pthread_mutex_init(&w->wq.mutex, NULL);
	pthread_cond_init(&w->wq.cond, NULL);
	return &w->wq;
}

static int soft_destroy_wq(struct ibv_wq *wq)
{
	struct soft_wq *w = (struct soft_wq *)wq;
	int err;

	ibcv_inside++;
	err = ibc_wq_destroy(w->iwq);
	ibcv_inside--;
	if (err < 0)
		return -err;
	soft_pd_use(wq->pd, -1);
	pthread_mutex_destroy(&wq->mutex);
	pthread_cond_destroy(&wq->cond);
	free(w);
	return 0;
}

/* Ready is what a program asks, and what the WQ already is. */
static int soft_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr)
{
	if ((attr->attr_mask &
	     ~(uint32_t)(IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE)) ||
	    !(attr->attr_mask & IBV_WQ_ATTR_STATE) ||
	    attr->wq_state != IBV_WQS_RDY)
		return EOPNOTSUPP;
	wq->state = IBV_WQS_RDY;
	return 0;
}

uint64_t ibcv_soft_wq_id(struct ibcv_ctx *c, struct ibv_wq *wq)
{
	(void)c;
	return ibc_wq_id(((struct soft_wq *)wq)->iwq);
}
