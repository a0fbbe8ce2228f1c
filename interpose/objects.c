// SPDX-License-Identifier: MIT
/*
 * The interposer's constructors and destructors: each makes the object
 * with the real libibverbs (or the provider's op) between an intent and a
 * registration (ibc_track_make), and unregisters it before the destroy
 * (ibc_track_kill), so that the broker destroys what a killed program
 * leaves. The extended creates are inline in <infiniband/verbs.h> and call
 * the context's ops: those ops are wrapped per context; the data path's
 * ops and every object's own ops are left as the provider set them.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "interpose/interpose.h"

/* The context of an object the application hands back; NULL when the
 * interposer did not open it. */
static struct ibcv_ctx *ibcv_of(struct ibv_context *vctx)
{
	return ibcv_inside ? NULL : ibcv_ctx_find(vctx);
}

/* Run @make through the registry of @c's context. */
static void *ibcv_make(struct ibcv_ctx *c, enum ibc_obj_kind kind,
		       void *(*make)(void *arg), void *arg)
{
	void *obj = NULL;
	int err;

	ibcv_inside++;
	err = ibc_track_make(c->ctx, kind, make, arg, &obj);
	ibcv_inside--;
	return err < 0 ? ibcv_fail_null(err) : obj;
}

struct ibc_obj *ibcv_made(struct ibcv_ctx *c, enum ibc_obj_kind kind,
			  const void *obj)
{
	struct ibc_obj *o;

	pthread_mutex_lock(&c->ctx->lock);
	for (o = c->ctx->objs; o; o = o->next)
		if (o->kind == kind && !o->tracked && o->vobj == obj)
			break;
	pthread_mutex_unlock(&c->ctx->lock);
	return o;
}

static int ibcv_kill(struct ibcv_ctx *c, enum ibc_obj_kind kind, void *obj,
		     int (*kill)(void *obj))
{
	struct ibc_obj *o = ibcv_made(c, kind, obj);
	int ret;

	ibcv_inside++;
	if (o)
		ret = -ibc_obj_destroy(o);
	else
		ret = ibc_track_kill(c->ctx, kind, obj, kill);
	ibcv_inside--;
	return ret;
}

/* Soft-device calls go through libibclient, whose libibverbs calls are
 * the real ones. */
#define IBCV_SOFT(call)                                                        \
	({                                                                     \
		ibcv_inside++;                                                 \
		__typeof__(call) r_ = (call);                                  \
		ibcv_inside--;                                                 \
		r_;                                                            \
	})

/* @obj, made for the application, joins the objects it holds. */
static void *ibcv_hand(void *obj)
{
	if (obj && !ibcv_inside)
		ibcv_live_add(obj);
	return obj;
}

/*
 * The application destroys @obj through @destroy: an object it cannot
 * hold (freed already) is EINVAL, unread; it leaves the set for the
 * destroy, so that a new object at its address is never removed, and
 * comes back if the destroy fails.
 */
static int ibcv_unhand(void *obj, int (*destroy)(void *obj))
{
	int ret;

	if (ibcv_inside)
		return destroy(obj);
	ret = ibcv_live_check(obj);
	if (ret)
		return ret;
	ibcv_live_del(obj);
	ret = destroy(obj);
	if (ret)
		ibcv_live_add(obj);
	return ret;
}

/* --- PD ----------------------------------------------------------------- */

static void *make_pd(void *arg)
{
	return IBCV_REAL(ibv_alloc_pd, "IBVERBS_1.1")(arg);
}

static int kill_pd(void *pd)
{
	return IBCV_REAL(ibv_dealloc_pd, "IBVERBS_1.1")(pd);
}

/* RDMABROKER_PD (rdmabroker-run(1)): 0 for "process" (the default), 1
 * for "domain", -EINVAL for anything else. */
static int ibcv_pd_mode(void)
{
	const char *v = getenv("RDMABROKER_PD");

	if (!v || !*v || !strcmp(v, "process"))
		return 0;
	return strcmp(v, "domain") ? -EINVAL : 1;
}

static struct ibv_pd *domain_pd(struct ibcv_ctx *c)
{
	struct ibv_pd *pd;

	ibcv_inside++;
	pd = c->soft ? ibcv_soft_alloc_pd(c) : ibc_verbs_pd(c->ctx);
	ibcv_inside--;
	return pd;
}

/*
 * By default a PD of the process's own in the shared context, registered:
 * one per ibv_alloc_pd, so that ibv_dealloc_pd frees exactly it and
 * answers EBUSY as the kernel does while its objects live. With
 * RDMABROKER_PD=domain, the domain's PD itself, so that the processes of
 * a domain may use each other's MRs with their QPs; a context of the
 * process's own (rxe, siw) has no domain PD and keeps its own. The soft
 * device makes every object on the domain's PD either way.
 */
IBCV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct ibcv_ctx *c = ibcv_of(context);
	int mode;

	if (!c)
		return ibcv_hand(make_pd(context));
	mode = ibcv_pd_mode();
	if (mode < 0)
		return ibcv_fail_null(mode);
	if (mode && (c->soft || c->ctx->caps.shared))
		return ibcv_domain_pd_get(c, domain_pd);
	if (c->soft)
		return ibcv_hand(IBCV_SOFT(ibcv_soft_alloc_pd(c)));
	return ibcv_hand(ibcv_make(c, IBC_OBJ_PD, make_pd, context));
}

static int do_dealloc_pd(void *obj)
{
	struct ibv_pd *pd = obj;
	struct ibcv_ctx *c = ibcv_of(pd->context);

	if (!c)
		return kill_pd(pd);
	if (ibcv_rss_pd_used(pd))
		return EBUSY;
	if (c->soft)
		return IBCV_SOFT(ibcv_soft_dealloc_pd(pd));
	return ibcv_kill(c, IBC_OBJ_PD, pd, kill_pd);
}

IBCV_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	/* The domain's PD is not the set's: it is handed out many times. */
	int ret = ibcv_inside ? -ENOENT : ibcv_domain_pd_put(pd);

	if (ret != -ENOENT)
		return ret;
	return ibcv_unhand(pd, do_dealloc_pd);
}

/* --- MR ----------------------------------------------------------------- */

struct mr_args {
	struct ibv_pd *pd;
	void *addr;
	size_t length;
	uint64_t iova;
	unsigned int access;
	int form; /* 0 ibv_reg_mr, 1 _iova, 2 _iova2 */
};

static void *make_mr(void *arg)
{
	struct mr_args *a = arg;

	if (a->form == 1)
		return IBCV_REAL(ibv_reg_mr_iova, "IBVERBS_1.7")(
			a->pd, a->addr, a->length, a->iova, (int)a->access);
	if (a->form == 2)
		return IBCV_REAL(ibv_reg_mr_iova2, "IBVERBS_1.8")(
			a->pd, a->addr, a->length, a->iova, a->access);
	return IBCV_REAL(ibv_reg_mr, "IBVERBS_1.1")(a->pd, a->addr, a->length,
						    (int)a->access);
}

static int kill_mr(void *mr)
{
	return IBCV_REAL(ibv_dereg_mr, "IBVERBS_1.1")(mr);
}

static struct ibv_mr *ibcv_reg(struct mr_args *a)
{
	struct ibcv_ctx *c = ibcv_of(a->pd->context);

	if (!c)
		return ibcv_hand(make_mr(a));
	if (c->soft) {
		/* The soft device registers at the address itself. */
		if (a->form && a->iova != (uintptr_t)a->addr)
			return ibcv_fail_null(-EOPNOTSUPP);
		return ibcv_hand(IBCV_SOFT(ibcv_soft_reg_mr(
			c, a->pd, a->addr, a->length, (int)a->access)));
	}
	return ibcv_hand(ibcv_make(c, IBC_OBJ_MR, make_mr, a));
}

/* The header's ibv_reg_mr() is a macro over this symbol. */
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

IBCV_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr,
				      size_t length, int access)
{
	struct mr_args a = { pd, addr, length, 0, (unsigned int)access, 0 };

	return ibcv_reg(&a);
}

IBCV_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr,
					   size_t length, uint64_t iova,
					   int access)
{
	struct mr_args a = { pd, addr, length, iova, (unsigned int)access, 1 };

	return ibcv_reg(&a);
}

IBCV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr,
					    size_t length, uint64_t iova,
					    unsigned int access)
{
	struct mr_args a = { pd, addr, length, iova, access, 2 };

	return ibcv_reg(&a);
}

static int do_dereg_mr(void *obj)
{
	struct ibv_mr *mr = obj;
	struct ibcv_ctx *c = ibcv_of(mr->context);

	if (!c)
		return kill_mr(mr);
	if (c->soft)
		return IBCV_SOFT(ibcv_soft_dereg_mr(mr));
	return ibcv_kill(c, IBC_OBJ_MR, mr, kill_mr);
}

IBCV_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	return ibcv_unhand(mr, do_dereg_mr);
}

/* --- CQ ----------------------------------------------------------------- */

struct cq_args {
	struct ibv_context *context;
	int cqe;
	void *cq_context;
	struct ibv_comp_channel *channel;
	int comp_vector;
};

static void *make_cq(void *arg)
{
	struct cq_args *a = arg;

	return IBCV_REAL(ibv_create_cq, "IBVERBS_1.1")(
		a->context, a->cqe, a->cq_context, a->channel, a->comp_vector);
}

static int kill_cq(void *cq)
{
	return IBCV_REAL(ibv_destroy_cq, "IBVERBS_1.1")(cq);
}

IBCV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
					 void *cq_context,
					 struct ibv_comp_channel *channel,
					 int comp_vector)
{
	struct cq_args a = { context, cqe, cq_context, channel, comp_vector };
	struct ibcv_ctx *c = ibcv_of(context);

	if (!c)
		return ibcv_hand(make_cq(&a));
	if (c->soft)
		return ibcv_hand(IBCV_SOFT(ibcv_soft_create_cq(
			c, cqe, cq_context, channel, comp_vector)));
	return ibcv_hand(ibcv_make(c, IBC_OBJ_CQ, make_cq, &a));
}

/* Also the CQs of ibv_create_cq_ex (ibv_cq_ex_to_cq). */
static int do_destroy_cq(void *obj)
{
	struct ibv_cq *cq = obj;
	struct ibcv_ctx *c = ibcv_of(cq->context);

	if (!c)
		return kill_cq(cq);
	if (c->soft)
		return IBCV_SOFT(ibcv_soft_destroy_cq(cq));
	return ibcv_kill(c, IBC_OBJ_CQ, cq, kill_cq);
}

IBCV_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	return ibcv_unhand(cq, do_destroy_cq);
}

/* --- QP ----------------------------------------------------------------- */

struct qp_args {
	struct ibv_pd *pd;
	struct ibv_qp_init_attr *attr;
};

static void *make_qp(void *arg)
{
	struct qp_args *a = arg;

	return IBCV_REAL(ibv_create_qp, "IBVERBS_1.1")(a->pd, a->attr);
}

static int kill_qp(void *qp)
{
	return IBCV_REAL(ibv_destroy_qp, "IBVERBS_1.1")(qp);
}

IBCV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
					 struct ibv_qp_init_attr *attr)
{
	struct qp_args a = { pd, attr };
	struct ibcv_ctx *c = ibcv_of(pd->context);

	if (!c)
		return ibcv_hand(make_qp(&a));
	if (c->soft)
		return ibcv_hand(IBCV_SOFT(ibcv_soft_create_qp(c, pd, attr)));
	return ibcv_hand(ibcv_make(c, IBC_OBJ_QP, make_qp, &a));
}

static int do_destroy_qp(void *obj)
{
	struct ibv_qp *qp = obj;
	struct ibcv_ctx *c = ibcv_of(qp->context);
	/* An RSS QP the broker makes per flow: the interposer's record. */
	int ret = c ? ibcv_rss_qp_destroy(qp) : -ENOENT;

	if (ret != -ENOENT)
		return ret;
	if (!c)
		return kill_qp(qp);
	if (c->soft)
		return IBCV_SOFT(ibcv_soft_destroy_qp(qp));
	return ibcv_kill(c, IBC_OBJ_QP, qp, kill_qp);
}

IBCV_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	return ibcv_unhand(qp, do_destroy_qp);
}

/* --- SRQ ---------------------------------------------------------------- */

struct srq_args {
	struct ibv_pd *pd;
	struct ibv_srq_init_attr *attr;
};

static void *make_srq(void *arg)
{
	struct srq_args *a = arg;

	return IBCV_REAL(ibv_create_srq, "IBVERBS_1.1")(a->pd, a->attr);
}

static int kill_srq(void *srq)
{
	return IBCV_REAL(ibv_destroy_srq, "IBVERBS_1.1")(srq);
}

IBCV_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
					   struct ibv_srq_init_attr *attr)
{
	struct srq_args a = { pd, attr };
	struct ibcv_ctx *c = ibcv_of(pd->context);

	if (!c)
		return ibcv_hand(make_srq(&a));
	if (c->soft)
		return ibcv_hand(IBCV_SOFT(ibcv_soft_create_srq(c, pd, attr)));
	return ibcv_hand(ibcv_make(c, IBC_OBJ_SRQ, make_srq, &a));
}

static int do_destroy_srq(void *obj)
{
	struct ibv_srq *srq = obj;
	struct ibcv_ctx *c = ibcv_of(srq->context);

	if (!c)
		return kill_srq(srq);
	if (c->soft)
		return IBCV_SOFT(ibcv_soft_destroy_srq(srq));
	return ibcv_kill(c, IBC_OBJ_SRQ, srq, kill_srq);
}

IBCV_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	return ibcv_unhand(srq, do_destroy_srq);
}

/* --- AH ----------------------------------------------------------------- */

struct ah_args {
	struct ibv_pd *pd;
	struct ibv_ah_attr *attr;
};

static void *make_ah(void *arg)
{
	struct ah_args *a = arg;

	return IBCV_REAL(ibv_create_ah, "IBVERBS_1.1")(a->pd, a->attr);
}

static int kill_ah(void *ah)
{
	return IBCV_REAL(ibv_destroy_ah, "IBVERBS_1.1")(ah);
}

IBCV_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd,
					 struct ibv_ah_attr *attr)
{
	struct ah_args a = { pd, attr };
	struct ibcv_ctx *c = ibcv_of(pd->context);

	if (!c)
		return ibcv_hand(make_ah(&a));
	if (c->soft)
		return ibcv_fail_null(-EOPNOTSUPP);
	return ibcv_hand(ibcv_make(c, IBC_OBJ_AH, make_ah, &a));
}

static int do_destroy_ah(void *obj)
{
	struct ibv_ah *ah = obj;
	struct ibcv_ctx *c = ibcv_of(ah->context);

	if (!c || c->soft)
		return kill_ah(ah);
	return ibcv_kill(c, IBC_OBJ_AH, ah, kill_ah);
}

IBCV_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	return ibcv_unhand(ah, do_destroy_ah);
}

/* --- the provider's extended ops, wrapped per context ------------------- */

struct ex_args {
	struct ibcv_ctx *c;
	struct ibv_context *context;
	void *attr;
};

static void *make_cq_ex(void *arg)
{
	struct ex_args *a = arg;

	return a->c->saved.create_cq_ex(a->context, a->attr);
}

static struct ibv_cq_ex *wrap_create_cq_ex(struct ibv_context *context,
					   struct ibv_cq_init_attr_ex *attr)
{
	struct ibcv_ctx *c = ibcv_ctx_find(context);
	struct ex_args a = { c, context, attr };

	if (ibcv_inside)
		return make_cq_ex(&a);
	/* struct ibv_cq_ex starts as struct ibv_cq: tracked as one. */
	return ibcv_hand(ibcv_make(c, IBC_OBJ_CQ, make_cq_ex, &a));
}

static void *make_qp_ex(void *arg)
{
	struct ex_args *a = arg;

	return a->c->saved.create_qp_ex(a->context, a->attr);
}

static struct ibv_qp *wrap_create_qp_ex(struct ibv_context *context,
					struct ibv_qp_init_attr_ex *attr)
{
	struct ibcv_ctx *c = ibcv_ctx_find(context);
	struct ex_args a = { c, context, attr };

	if (ibcv_inside)
		return make_qp_ex(&a);
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE) &&
	    ibcv_rss_is_table(attr->rwq_ind_tbl))
		return ibcv_hand(ibcv_rss_qp(c, attr));
	return ibcv_hand(ibcv_make(c, IBC_OBJ_QP, make_qp_ex, &a));
}

static void *make_srq_ex(void *arg)
{
	struct ex_args *a = arg;

	return a->c->saved.create_srq_ex(a->context, a->attr);
}

static struct ibv_srq *wrap_create_srq_ex(struct ibv_context *context,
					  struct ibv_srq_init_attr_ex *attr)
{
	struct ibcv_ctx *c = ibcv_ctx_find(context);
	struct ex_args a = { c, context, attr };

	if (ibcv_inside)
		return make_srq_ex(&a);
	return ibcv_hand(ibcv_make(c, IBC_OBJ_SRQ, make_srq_ex, &a));
}

static void *make_wq(void *arg)
{
	struct ex_args *a = arg;

	return a->c->saved.create_wq(a->context, a->attr);
}

static struct ibv_wq *wrap_create_wq(struct ibv_context *context,
				     struct ibv_wq_init_attr *attr)
{
	struct ibcv_ctx *c = ibcv_ctx_find(context);
	struct ex_args a = { c, context, attr };

	if (ibcv_inside)
		return make_wq(&a);
	return ibcv_hand(ibcv_make(c, IBC_OBJ_WQ, make_wq, &a));
}

static __thread struct ibcv_ctx *kill_ctx;

static int kill_wq(void *wq)
{
	return kill_ctx->saved.destroy_wq(wq);
}

static int wrap_destroy_wq(struct ibv_wq *wq)
{
	struct ibcv_ctx *c = ibcv_ctx_find(wq->context);

	if (ibcv_inside)
		return c->saved.destroy_wq(wq);
	kill_ctx = c;
	return ibcv_kill(c, IBC_OBJ_WQ, wq, kill_wq);
}

struct mw_args {
	struct ibcv_ctx *c;
	struct ibv_pd *pd;
	enum ibv_mw_type type;
};

static void *make_mw(void *arg)
{
	struct mw_args *a = arg;

	return a->c->saved.context.ops.alloc_mw(a->pd, a->type);
}

static struct ibv_mw *wrap_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ibcv_ctx *c = ibcv_ctx_find(pd->context);
	struct mw_args a = { c, pd, type };

	if (ibcv_inside)
		return make_mw(&a);
	return ibcv_hand(ibcv_make(c, IBC_OBJ_MW, make_mw, &a));
}

static int kill_mw(void *mw)
{
	return kill_ctx->saved.context.ops.dealloc_mw(mw);
}

static int wrap_dealloc_mw(struct ibv_mw *mw)
{
	struct ibcv_ctx *c = ibcv_ctx_find(mw->context);

	if (ibcv_inside)
		return c->saved.context.ops.dealloc_mw(mw);
	kill_ctx = c;
	return ibcv_kill(c, IBC_OBJ_MW, mw, kill_mw);
}

void ibcv_wrap_ops(struct ibcv_ctx *c)
{
	struct verbs_context *vc = verbs_get_ctx(c->vctx);

	c->saved.context.ops = c->vctx->ops;
	if (c->vctx->ops.alloc_mw) {
		c->vctx->ops.alloc_mw = wrap_alloc_mw;
		c->vctx->ops.dealloc_mw = wrap_dealloc_mw;
	}
	if (!vc)
		return;
	c->saved.create_cq_ex = vc->create_cq_ex;
	c->saved.create_qp_ex = vc->create_qp_ex;
	c->saved.create_srq_ex = vc->create_srq_ex;
	c->saved.create_wq = vc->create_wq;
	c->saved.destroy_wq = vc->destroy_wq;
	/* An op the provider lacks stays NULL: the inline verb answers
	 * EOPNOTSUPP as it would. */
	if (vc->create_cq_ex)
		vc->create_cq_ex = wrap_create_cq_ex;
	if (vc->create_qp_ex)
		vc->create_qp_ex = wrap_create_qp_ex;
	if (vc->create_srq_ex)
		vc->create_srq_ex = wrap_create_srq_ex;
	if (vc->create_wq && vc->destroy_wq) {
		vc->create_wq = wrap_create_wq;
		vc->destroy_wq = wrap_destroy_wq;
	}
	ibcv_wrap_shared_ops(c, vc);
	ibcv_wrap_rss_ops(c, vc);
}

void ibcv_unwrap_ops(struct ibcv_ctx *c)
{
	struct verbs_context *vc = verbs_get_ctx(c->vctx);

	c->vctx->ops.alloc_mw = c->saved.context.ops.alloc_mw;
	c->vctx->ops.dealloc_mw = c->saved.context.ops.dealloc_mw;
	if (!vc)
		return;
	vc->create_cq_ex = c->saved.create_cq_ex;
	vc->create_qp_ex = c->saved.create_qp_ex;
	vc->create_srq_ex = c->saved.create_srq_ex;
	vc->create_wq = c->saved.create_wq;
	vc->destroy_wq = c->saved.destroy_wq;
	ibcv_unwrap_shared_ops(c, vc);
	ibcv_unwrap_rss_ops(c, vc);
}
