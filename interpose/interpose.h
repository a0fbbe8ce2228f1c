/* SPDX-License-Identifier: MIT */
/*
 * libibclient-verbs: libibverbs' control verbs taken over for unmodified
 * programs (LD_PRELOAD, or the forwarding libibverbs.so.1), so that their
 * contexts are the broker's and their objects are in its registry. The
 * data path (post, poll, notify, modify, query) is the provider's: none of
 * it is defined here. This header is shared by interpose/ only.
 */
#ifndef IBCV_INTERPOSE_H
#define IBCV_INTERPOSE_H

#include <pthread.h>
#include <stdbool.h>

#include <infiniband/verbs.h>

#include "libclient/objects.h"

/* Exported with libibverbs' version (interpose/libibclient-verbs.map). */
#define IBCV_EXPORT __attribute__((visibility("default")))

/*
 * The calling thread is inside the interposer (in libibclient, or in a
 * provider op we wrapped): its libibverbs calls are the real ones. The
 * library's own calls (ibv_import_device, ibv_alloc_pd ...) resolve to
 * this object's definitions first, since it was loaded first.
 */
extern __thread unsigned int ibcv_inside;

/* The real libibverbs definition of @name at @version; aborts when the
 * installed libibverbs lacks it, which the build checked it does not. */
void *ibcv_real(const char *name, const char *version);
#define IBCV_REAL(fn, ver)                                                     \
	({                                                                     \
		static __typeof__(&fn) real_;                                  \
		if (!real_)                                                    \
			real_ = (__typeof__(&fn))ibcv_real(#fn, ver);          \
		real_;                                                         \
	})

/* The broker's client of this process, connected at first use; NULL with
 * errno set when the broker cannot be reached. Inside only. */
struct ibc_client *ibcv_client(void);

/* A context this process opened through the broker. */
struct ibcv_ctx {
	struct ibcv_ctx *next;
	struct ibc_ctx *ctx;
	/* What the application holds: the imported (or own) libibverbs
	 * context, or on the soft device soft->vc.context. */
	struct ibv_context *vctx;
	struct ibcv_soft *soft;
	/* The provider's ops this interposer wrapped, to call them. */
	struct verbs_context saved;
	/* RDMABROKER_PD=domain: the one PD every ibv_alloc_pd answers (the
	 * domain's; the soft device's stands for it), and how many of those
	 * are not deallocated yet. Under the contexts' lock. */
	struct ibv_pd *domain_pd;
	unsigned int domain_pds;
};

/* The interposer's record of @vctx; NULL for a context it did not open
 * (a device the broker does not serve). */
struct ibcv_ctx *ibcv_ctx_find(const struct ibv_context *vctx);

/* RDMABROKER_PD=domain (ibv_alloc_pd): @c's domain PD, one more held;
 * @make makes it the first time. NULL with errno on failure. */
struct ibv_pd *ibcv_domain_pd_get(struct ibcv_ctx *c,
				  struct ibv_pd *(*make)(struct ibcv_ctx *c));
/* ibv_dealloc_pd of @pd: 0 when it is a context's domain PD, one fewer
 * held; EINVAL when none is held; -ENOENT when it is no domain PD. */
int ibcv_domain_pd_put(const struct ibv_pd *pd);

/* An object of @kind the library made for the interposer in @c's
 * context, whose libibverbs object is @obj (an MR of ibv_reg_dm_mr on the
 * broker's DM, an XRCD of ibv_open_xrcd); NULL for the others. */
struct ibc_obj *ibcv_made(struct ibcv_ctx *c, enum ibc_obj_kind kind,
			  const void *obj);

/* Wrap the provider's extended control ops of @c (objects.c), and put
 * them back before the context closes. */
void ibcv_wrap_ops(struct ibcv_ctx *c);
void ibcv_unwrap_ops(struct ibcv_ctx *c);
/* The same for DM and XRCD (shared.c); and the soft context's. */
void ibcv_wrap_shared_ops(struct ibcv_ctx *c, struct verbs_context *vc);
void ibcv_unwrap_shared_ops(struct ibcv_ctx *c, struct verbs_context *vc);
void ibcv_soft_shared_ops(struct verbs_context *vc);
/* The broker's XRCD name for the file open as @fd: its path, each '/'
 * written ':'. -ENAMETOOLONG past XRCD_NAME_MAX, -EINVAL for a path that
 * makes no valid name. */
int ibcv_xrcd_name(int fd, char *name, size_t size);

/*
 * The objects handed to the application (live.c): added when made,
 * deleted before the destroy (added back when it fails). check: 0 when
 * @obj is listed or may be an object the interposer never saw (the
 * process holds a real device's context), else EINVAL: freed already or
 * never made, and not read. ibcv_live_verbs_ctx(+1/-1) as such contexts
 * open and close.
 */
int ibcv_live_add(const void *obj);
void ibcv_live_del(const void *obj);
int ibcv_live_check(const void *obj);
void ibcv_live_verbs_ctx(int delta);
/* The modules' locks, which fork() takes (devices.c): live.c's, soft.c's
 * device list's, rss.c's records'. */
extern pthread_mutex_t ibcv_live_lock, ibcv_soft_lock, ibcv_rss_lock;

/* --- RSS (rss.c) --- */

/* Whether the broker makes @c's RSS tables, QPs and flows: the soft
 * device, or a shared context and a caller without CAP_NET_RAW. */
bool ibcv_rss_by_broker(struct ibcv_ctx *c);
bool ibcv_rss_is_table(const struct ibv_rwq_ind_table *tbl);
bool ibcv_rss_is_qp(const struct ibv_qp *qp);
/* The RSS QP over a table of ibcv_rss_is_table(): the interposer's
 * record, made the broker's by each ibv_create_flow. */
struct ibv_qp *ibcv_rss_qp(struct ibcv_ctx *c, struct ibv_qp_init_attr_ex *a);
/* 0, EBUSY with flows, -ENOENT when @qp is not such a record. */
int ibcv_rss_qp_destroy(struct ibv_qp *qp);
/* Whether an RSS QP record is on @pd: the kernel never sees those QPs
 * (the broker makes its own), so ibv_dealloc_pd asks here to answer EBUSY
 * as the kernel does for a PD a QP uses, on every context. */
bool ibcv_rss_pd_used(const struct ibv_pd *pd);
struct ibv_flow *ibcv_rss_flow(struct ibcv_ctx *c, struct ibv_qp *qp,
			       struct ibv_flow_attr *a);
void ibcv_wrap_rss_ops(struct ibcv_ctx *c, struct verbs_context *vc);
void ibcv_unwrap_rss_ops(struct ibcv_ctx *c, struct verbs_context *vc);
void ibcv_soft_rss_ops(struct verbs_context *vc);
/* @c closes: its records go (the broker's objects go with ibc_close). */
void ibcv_rss_ctx_closing(struct ibcv_ctx *c);
/* The broker's id of the soft device's WQ @wq of @c. */
uint64_t ibcv_soft_wq_id(struct ibcv_ctx *c, struct ibv_wq *wq);

/* Convert a libibclient error to libibverbs' errno convention. */
static inline void *ibcv_fail_null(int err)
{
	errno = err < 0 ? -err : EIO;
	return NULL;
}

/* --- the soft device (soft.c): no data path --- */

struct ibcv_soft {
	struct verbs_context vc;
	struct ibcv_ctx *owner;
};

/* The soft device's entries in the device list, made once. */
struct ibv_device *ibcv_soft_device(const char *name);
bool ibcv_is_soft_device(const struct ibv_device *dev);
/* Make @c's application context on the soft device. */
int ibcv_soft_open(struct ibcv_ctx *c, struct ibv_device *dev);
void ibcv_soft_close(struct ibcv_ctx *c);
/* The control verbs on a soft context, objects.c's counterparts. */
struct ibv_pd *ibcv_soft_alloc_pd(struct ibcv_ctx *c);
int ibcv_soft_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *ibcv_soft_reg_mr(struct ibcv_ctx *c, struct ibv_pd *pd,
				void *addr, size_t length, int access);
int ibcv_soft_dereg_mr(struct ibv_mr *mr);
struct ibv_cq *ibcv_soft_create_cq(struct ibcv_ctx *c, int cqe,
				   void *cq_context,
				   struct ibv_comp_channel *channel,
				   int comp_vector);
int ibcv_soft_destroy_cq(struct ibv_cq *cq);
struct ibv_qp *ibcv_soft_create_qp(struct ibcv_ctx *c, struct ibv_pd *pd,
				   struct ibv_qp_init_attr *attr);
int ibcv_soft_destroy_qp(struct ibv_qp *qp);
struct ibv_srq *ibcv_soft_create_srq(struct ibcv_ctx *c, struct ibv_pd *pd,
				     struct ibv_srq_init_attr *attr);
int ibcv_soft_destroy_srq(struct ibv_srq *srq);
int ibcv_soft_query_device(struct ibcv_ctx *c, struct ibv_device_attr *attr);
int ibcv_soft_query_port(struct ibcv_ctx *c, uint8_t port,
			 struct ibv_port_attr *attr);

#endif
