/* SPDX-License-Identifier: MIT */
/*
 * Objects the library makes in a context (CQ, QP, SRQ, WQ, MR) or tracks
 * for the application (ibc_track), and the broker requests that keep the
 * registry exact: proto/README.md, "The registry invariant".
 */
#ifndef IBC_OBJECTS_H
#define IBC_OBJECTS_H

#include "libclient/ctx.h"

/* Objects one object uses: a QP's send CQ, receive CQ and SRQ; a WQ's
 * CQ. */
#define IBC_OBJ_MAX_USES 3

struct ibc_obj {
	struct ibc_ctx *ctx;
	/* ctx->objs, under ctx->lock */
	struct ibc_obj *prev, *next;
	enum ibc_obj_kind kind;
	/* The broker's id; 0 when nothing is registered (a context of this
	 * process's own, or a registration that failed). */
	uint64_t id;
	uint32_t handle;
	/* Under ctx->lock: how many of this process's objects use this one
	 * (destroying it is EBUSY until they are gone), and whether a
	 * destroy is under way (no new user may take it). */
	uint32_t users;
	bool destroying;
	/* Made by ibc_track: the application's, never destroyed here. */
	bool tracked;
	/* The device was removed: the kernel object is gone, the structure
	 * waits for the application's destroy. */
	bool dead;
	struct ibc_obj *uses[IBC_OBJ_MAX_USES];
	unsigned int n_uses;
	/* The libibverbs object on verbs devices. */
	void *vobj;
	/* A family's resource the object is made on, which is no object
	 * of the list (an MR on device memory; family.h), NULL for none;
	 * under ctx->lock. Its family hears when the application destroys
	 * the object; the family clears it when it destroyed the object
	 * itself. */
	struct ibc_family_res *on;
};

struct ibc_cq {
	struct ibc_obj o;
	int cqe;
};

struct ibc_qp {
	struct ibc_obj o;
	uint32_t qp_num;
	struct ibv_qp_cap cap;
};

struct ibc_srq {
	struct ibc_obj o;
	struct ibv_srq_attr attr;
	/* XRC SRQs: what remote senders address. */
	uint32_t srq_num;
};

/* Create @srq (ctx, kind and uses set by the caller) with @attr and the
 * family's @a; the limits the device answered replace @attr's, and an XRC
 * SRQ's number is kept when @xrc. Takes @srq: freed on failure. */
int ibc_srq_make(struct ibc_srq *srq, const struct ibv_srq_attr *attr,
		 struct ibc_obj_args *a, bool xrc);

struct ibc_wq {
	struct ibc_obj o;
	uint32_t max_wr;
	uint32_t max_sge;
};

struct ibc_mr {
	struct ibc_obj o;
	uint32_t lkey;
	uint32_t rkey;
};

/*
 * What a family asks the device for. @attr is the wire's description of
 * the object, which the soft device receives whole and the verbs kernel
 * calls read; the verbs-only pointers follow.
 */
struct ibc_obj_args {
	Rdmab__ObjAttr attr;
	struct ibv_comp_channel *channel;
	/* QP */
	struct ibv_cq *send_cq, *recv_cq;
	struct ibv_srq *srq;
	/* WQ; XRC SRQ */
	struct ibv_cq *cq;
	/* MR on host memory: its address (NULL for none, where the MR is
	 * made on @parent). */
	void *mr_addr;
	/* The libibverbs object of the family's resource the new object is
	 * made in or on, besides the PD, NULL for none: an XRC SRQ's or
	 * target QP's struct ibv_xrcd (attr.qp_type XRC_RECV, and
	 * attr.xrc_qp_num to open one), an MR's struct ibv_dm
	 * (ibv_reg_dm_mr at attr.mr_addr's offset). */
	void *parent;
};

/* What the device gave: the soft device's reply, or what libibverbs wrote
 * back. */
struct ibc_obj_result {
	Rdmab__ObjAttr attr;
	uint32_t qp_num;
	uint32_t lkey;
	uint32_t rkey;
};

/* The short name of @kind for sentences: "CQ", "QP", ... */
const char *ibc_obj_kind_name(enum ibc_obj_kind kind);

/*
 * Create @o (kind, ctx and uses set by the family) through the context's
 * operations, link it and take its uses. On failure @o is left as it was
 * given, for the family to free.
 */
int ibc_obj_create(struct ibc_obj *o, const struct ibc_obj_args *a,
		   struct ibc_obj_result *res);
/* The destructors' common path: local checks, then the operations, then
 * the structure is freed. */
int ibc_obj_destroy(struct ibc_obj *o);
/* Check that @user may be used by a new object of @ctx; @what names the
 * attribute in the sentence. */
int ibc_obj_check_use(struct ibc_ctx *ctx, const struct ibc_obj *user,
		      enum ibc_obj_kind kind, const char *what);

/* The libibverbs object of @o (a @kind) for ibc_verbs_cq() and friends;
 * NULL with errno and the sentence set where there is none. */
void *ibc_obj_verbs(struct ibc_obj *o, enum ibc_obj_kind kind);

/* Link an object (made, or tracked) into its context; _locked: with
 * ctx->lock held. */
void ibc_obj_link(struct ibc_obj *o);
void ibc_obj_link_locked(struct ibc_obj *o);
/* The tracked record of (@kind, @vobj) in @ctx, unlinked; NULL if none. */
struct ibc_obj *ibc_obj_unlink_tracked(struct ibc_ctx *ctx,
				       enum ibc_obj_kind kind, void *vobj);

/*
 * Destroy every object the library made in @ctx, in dependency order (QP,
 * SRQ, WQ, CQ, MR, then the families' objects of the list, which those
 * use), and free the tracked records. @broker false: the
 * device is gone and so are the broker's records; only the kernel objects
 * are destroyed, and the structures stay for the application (dead).
 */
void ibc_ctx_destroy_objects(struct ibc_ctx *ctx, bool broker);
/* Free what is left of @ctx's objects (dead ones, tracked records). */
void ibc_ctx_free_objects(struct ibc_ctx *ctx);

/* --- broker requests (objects.c) --- */

/*
 * ObjCreateRequest in @mode for an object of @o->kind in @o's context;
 * the uses are @o's. On success *ret_id is the broker's id and, if @res is
 * not NULL, the soft device's answer is copied there (handle into @o).
 */
int ibc_obj_request(struct ibc_obj *o, Rdmab__ObjCreateRequest__Mode mode,
		    const Rdmab__ObjAttr *attr, struct ibc_obj_result *res);
/* Register @o->handle under the intent @o->id, without waiting. */
void ibc_obj_register_nowait(struct ibc_obj *o);
/* ObjDestroyRequest for @o->id: waiting for the answer (soft), or not
 * (verbs: an unregister, or the cancel of an intent). */
int ibc_obj_destroy_request(struct ibc_obj *o, bool wait);

/* --- the interposer (track.c) --- */

/* A raw libibverbs object of @kind made by @make(@arg) on @ctx's shared
 * context: intent, the call, the registration; nothing is registered on a
 * context of this process's own. 0 or -errno (the call's errno). */
int ibc_track_make(struct ibc_ctx *ctx, enum ibc_obj_kind kind,
		   void *(*make)(void *arg), void *arg, void **ret_obj);
/* Unregister @obj, then @kill it; re-registered when @kill fails. @kill's
 * answer: 0 or an errno value. */
int ibc_track_kill(struct ibc_ctx *ctx, enum ibc_obj_kind kind, void *obj,
		   int (*kill)(void *obj));

#endif
