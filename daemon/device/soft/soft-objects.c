// SPDX-License-Identifier: MIT
/* The soft device's object records (soft-objects.h states the rules). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "daemon/device/soft/soft-objects.h"
#include "daemon/util/array.h"

/* The most objects one record uses: a QP's two CQs and SRQ (the PD is
 * counted apart). */
#define SOFT_REC_USES 3
/* QP and SRQ numbers are 24 bits; the lowest are the special QPs'. */
#define SOFT_FIRST_NUM 0x100
#define SOFT_NUM_MASK 0xffffff
/* A context's table starts, and shrinks no further than, this. */
#define SOFT_TABLE_MIN 64
/* Handles are 32 bits; the table doubles from 64 up to 2^31 records. */
#define SOFT_TABLE_MAX (UINT32_C(1) << 31)

struct soft_rec {
	uint8_t kind; /* IBC_OBJ_NONE: the handle is free */
	uint8_t n_uses;
	bool uses_pd;
	/* Objects that use this one. */
	uint32_t usecnt;
	uint32_t uses[SOFT_REC_USES];
	/* A DM: its length, for the bounds of the MRs on it. */
	uint64_t dm_length;
	/* XRCD, XRC target QP: the inode of its (XRC) domain. */
	uint64_t ino;
	/* XRC target QP: its number in sd->tgts. */
	uint32_t tgt_num;
	/* An indirection table's WQs (each once). */
	uint32_t *tbl_wqs;
	uint32_t n_tbl_wqs;
	/* A provider-internal record (kind DEVICE_INTERNAL): its import. */
	uint64_t import;
};

/* The access flags the kernel takes (ib_check_mr_access). */
#define SOFT_MR_ACCESS                                                         \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                    \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |                   \
	 IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_HUGETLB |     \
	 IBV_ACCESS_RELAXED_ORDERING)

static struct soft_xrcd *soft_xrcd_find(struct soft_dev *sd, uint64_t ino)
{
	for (uint32_t i = 0; i < sd->n_xrcds; i++)
		if (sd->xrcds[i].ino == ino)
			return &sd->xrcds[i];
	return NULL;
}

/* XRC domain numbers are 24 bits, 0 none. */
#define SOFT_XRCD_MASK 0xffffff

int soft_xrcd_open(struct soft_dev *sd, uint64_t ino, uint32_t num,
		   uint32_t *ret_num)
{
	struct soft_xrcd *x = soft_xrcd_find(sd, ino);

	if (!x) {
		if (array_grow(&sd->xrcds, &sd->cap_xrcds,
			       (size_t)sd->n_xrcds + 1, sizeof(*sd->xrcds),
			       4) < 0)
			return -ENOMEM;
		x = &sd->xrcds[sd->n_xrcds++];
		x->ino = ino;
		x->refs = 0;
		x->num = 0;
		x->fd = -1;
	}
	if (num & SOFT_XRCD_MASK)
		x->num = num & SOFT_XRCD_MASK;
	if (!x->num) {
		sd->next_xrcd = (sd->next_xrcd + 1) & SOFT_XRCD_MASK;
		if (!sd->next_xrcd)
			sd->next_xrcd = 1;
		x->num = sd->next_xrcd;
	}
	x->refs++;
	if (ret_num)
		*ret_num = x->num;
	return 0;
}

void soft_xrcd_close(struct soft_dev *sd, uint64_t ino)
{
	struct soft_xrcd *x = soft_xrcd_find(sd, ino);

	if (!x || --x->refs)
		return;
	if (x->fd >= 0)
		close(x->fd);
	*x = sd->xrcds[--sd->n_xrcds];
}

int soft_xrcd_file(struct soft_dev *sd, uint64_t ino, int fd)
{
	struct soft_xrcd *x = soft_xrcd_find(sd, ino);

	if (!x)
		return -ENOENT;
	if (x->fd < 0)
		x->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	return x->fd < 0 ? -errno : 0;
}

static struct soft_tgt *soft_tgt_find(struct soft_dev *sd, uint32_t num)
{
	for (uint32_t i = 0; i < sd->n_tgts; i++)
		if (sd->tgts[i].num == num)
			return &sd->tgts[i];
	return NULL;
}

static void soft_tgt_put(struct soft_dev *sd, uint32_t num)
{
	struct soft_tgt *t = soft_tgt_find(sd, num);

	if (!t || --t->refs)
		return;
	*t = sd->tgts[--sd->n_tgts];
}

static int soft_tgt_add(struct soft_dev *sd, uint32_t num, uint64_t ino)
{
	struct soft_tgt *t = soft_tgt_find(sd, num);

	if (t) {
		t->refs++;
		return 0;
	}
	if (array_grow(&sd->tgts, &sd->cap_tgts, (size_t)sd->n_tgts + 1,
		       sizeof(*sd->tgts), 4) < 0)
		return -ENOMEM;
	sd->tgts[sd->n_tgts++] = (struct soft_tgt){ num, ino, 1 };
	return 0;
}

void soft_dev_fini(struct soft_dev *sd)
{
	free(sd->tgts);
	sd->tgts = NULL;
	sd->n_tgts = 0;
	sd->cap_tgts = 0;
	for (uint32_t i = 0; i < sd->n_xrcds; i++)
		if (sd->xrcds[i].fd >= 0)
			close(sd->xrcds[i].fd);
	free(sd->xrcds);
	sd->xrcds = NULL;
	sd->n_xrcds = 0;
	sd->cap_xrcds = 0;
}

static uint32_t round_pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v && p < (1u << 31))
		p <<= 1;
	return v ? p : 0;
}

static struct soft_rec *soft_rec(struct soft_objs *o, uint32_t handle)
{
	return handle < o->cap && o->recs[handle].kind != IBC_OBJ_NONE ?
		       &o->recs[handle] :
		       NULL;
}

/* n_type's slot for @kind: DEVICE_INTERNAL's is the one past the kinds. */
static unsigned int soft_type_slot(unsigned int kind)
{
	return kind == DEVICE_INTERNAL ? OBJ_KIND_COUNT : kind;
}

/* The lowest free handle for a record of @kind, growing the table when
 * every one is taken. */
static int soft_alloc(struct soft_objs *o, unsigned int kind, uint32_t *ret)
{
	uint32_t h = o->low;

	while (h < o->cap && o->recs[h].kind != IBC_OBJ_NONE)
		h++;
	if (h == o->cap && (o->cap >= SOFT_TABLE_MAX ||
			    array_grow(&o->recs, &o->cap, (size_t)h + 1,
				       sizeof(*o->recs), SOFT_TABLE_MIN) < 0))
		return -ENOMEM;
	o->recs[h].kind = (uint8_t)kind;
	o->n_type[soft_type_slot(kind)]++;
	o->low = h + 1;
	if (h >= o->top)
		o->top = h + 1;
	*ret = h;
	return 0;
}

/* Handle @h is free again. The table shrinks behind the highest handle
 * taken, so that a context that made and destroyed many objects costs
 * what it holds, not what it once held (its handle lists are walked). */
static void soft_release(struct soft_objs *o, uint32_t h)
{
	size_t cap = o->cap;

	o->n_type[soft_type_slot(o->recs[h].kind)]--;
	free(o->recs[h].tbl_wqs);
	memset(&o->recs[h], 0, sizeof(o->recs[h]));
	if (h < o->low)
		o->low = h;
	while (o->top && o->recs[o->top - 1].kind == IBC_OBJ_NONE)
		o->top--;
	/* Half the room once a quarter is used: no realloc per
	 * create-destroy pair at the edge. */
	while (cap > SOFT_TABLE_MIN && o->top <= cap / 4)
		cap /= 2;
	if (cap < o->cap) {
		struct soft_rec *r = realloc(o->recs, cap * sizeof(*r));

		/* A failed shrink keeps the larger table. */
		if (r) {
			o->recs = r;
			o->cap = cap;
		}
	}
}

/* @n provider-internal records of @import, all or none: 0 or -ENOMEM. */
static int soft_internal_add(struct soft_objs *o, uint64_t import, uint32_t n)
{
	uint32_t *made;
	int err = 0;

	if (n == 0)
		return 0;
	made = calloc(n, sizeof(*made));
	if (!made)
		return -ENOMEM;
	for (uint32_t i = 0; i < n && err == 0; i++) {
		err = soft_alloc(o, DEVICE_INTERNAL, &made[i]);
		if (err < 0) {
			while (i--)
				soft_release(o, made[i]);
			break;
		}
		o->recs[made[i]] = (struct soft_rec){ .kind = DEVICE_INTERNAL,
						      .import = import };
	}
	free(made);
	return err;
}

int soft_objs_init(struct soft_objs *o, struct soft_dev *sd,
		   const struct device *dev)
{
	uint32_t pd;
	int ret;

	memset(o, 0, sizeof(*o));
	o->sd = sd;
	o->dev = dev;
	ret = soft_alloc(o, IBC_OBJ_PD, &pd);
	if (ret < 0)
		return ret;
	sd->count[IBC_OBJ_PD]++;
	return 0;
}

void soft_objs_fini(struct soft_objs *o)
{
	for (uint32_t h = 0; h < o->cap; h++) {
		if (o->recs[h].kind == IBC_OBJ_XRCD)
			soft_xrcd_close(o->sd, o->recs[h].ino);
		if (o->recs[h].tgt_num)
			soft_tgt_put(o->sd, o->recs[h].tgt_num);
		/* The kernel frees a context's DMs with it (a DM that an MR
		 * kept from its free, left to a rekeyed context). */
		if (o->recs[h].kind == IBC_OBJ_DM)
			o->sd->dm_reserved -= o->recs[h].dm_length;
		if (o->recs[h].kind != IBC_OBJ_NONE &&
		    o->recs[h].kind < OBJ_KIND_COUNT)
			o->sd->count[o->recs[h].kind]--;
		free(o->recs[h].tbl_wqs);
	}
	free(o->recs);
	memset(o, 0, sizeof(*o));
}

/* The object in slot @slot of @spec, which must be of @kind; NULL with a
 * sentence when it is not. */
static struct soft_rec *soft_use(struct soft_objs *o,
				 const struct obj_spec *spec, unsigned int slot,
				 enum ibc_obj_kind kind, const char *what,
				 struct why *why)
{
	struct soft_rec *r = soft_rec(o, spec->uses[slot]);

	if (!r) {
		why_set(why, -EINVAL, "%s: the %s (handle %u) names no object",
			o->dev->name, what, spec->uses[slot]);
		return NULL;
	}
	if (r->kind != kind) {
		why_set(why, -EINVAL, "%s: the %s (handle %u) is of kind %s",
			o->dev->name, what, spec->uses[slot],
			obj_kind_name(r->kind));
		return NULL;
	}
	return r;
}

static int soft_check_cq(struct soft_objs *o, const struct obj_attr *a,
			 struct obj_attr *given, struct why *why)
{
	const struct device_caps *caps = &o->dev->caps;

	if (a->cqe < 1 || a->cqe > caps->max_cqe)
		return why_set(why, -EINVAL,
			       "%s: a CQ of %u entries (1 to max_cqe %u)",
			       o->dev->name, a->cqe, caps->max_cqe);
	if (a->comp_vector >= SOFT_COMP_VECTORS)
		return why_set(why, -EINVAL,
			       "%s: completion vector %u (it has %u)",
			       o->dev->name, a->comp_vector, SOFT_COMP_VECTORS);
	/* mlx5: a power of two, one entry kept back. */
	given->cqe = round_pow2(a->cqe + 1) - 1;
	given->comp_vector = a->comp_vector;
	return 0;
}

static int soft_check_wrs(struct soft_objs *o, const char *what, uint32_t wr,
			  uint32_t sge, struct why *why)
{
	const struct device_caps *caps = &o->dev->caps;

	if (wr > caps->max_qp_wr)
		return why_set(why, -EINVAL,
			       "%s: %u %s work requests (max_qp_wr %u)",
			       o->dev->name, wr, what, caps->max_qp_wr);
	if (sge > caps->max_sge)
		return why_set(why, -EINVAL,
			       "%s: %u %s scatter/gather entries "
			       "(max_sge %u)",
			       o->dev->name, sge, what, caps->max_sge);
	return 0;
}

/* An XRC target QP: made on the XRCD, or opened by number in it. */
static int soft_check_tgt(struct soft_objs *o, const struct obj_spec *spec,
			  struct obj_attr *given, struct soft_rec *rec,
			  struct why *why)
{
	const struct obj_attr *a = &spec->attr;
	struct soft_rec *x;
	struct soft_tgt *t;

	if (spec->used != 1u << OBJ_USE_QP_XRCD)
		return why_set(why, -EINVAL,
			       "%s: an XRC target QP uses its XRCD and "
			       "nothing else",
			       o->dev->name);
	x = soft_use(o, spec, OBJ_USE_QP_XRCD, IBC_OBJ_XRCD, "XRCD", why);
	if (!x)
		return -EINVAL;
	if (a->xrc_qp_num) {
		t = soft_tgt_find(o->sd, a->xrc_qp_num);
		if (!t || t->ino != x->ino)
			return why_set(why, -EINVAL,
				       "%s: QP 0x%x is not a target QP of "
				       "this XRCD",
				       o->dev->name, a->xrc_qp_num);
	}
	rec->uses[rec->n_uses++] = spec->uses[OBJ_USE_QP_XRCD];
	rec->ino = x->ino;
	given->qp_type = a->qp_type;
	given->xrc_qp_num = a->xrc_qp_num;
	return 0;
}

static int soft_check_qp(struct soft_objs *o, const struct obj_spec *spec,
			 struct obj_attr *given, struct soft_rec *rec,
			 struct why *why)
{
	const struct obj_attr *a = &spec->attr;
	bool xrc = a->qp_type == IBV_QPT_XRC_SEND;
	bool srq = spec->used & (1u << OBJ_USE_SRQ);
	int ret;

	if (a->qp_type == IBV_QPT_XRC_RECV)
		return soft_check_tgt(o, spec, given, rec, why);
	switch (a->qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
	case IBV_QPT_XRC_SEND:
		break;
	case IBV_QPT_RAW_PACKET:
		return why_set(why, -EOPNOTSUPP, "%s has no raw packet QPs",
			       o->dev->name);
	default:
		return why_set(why, -EINVAL,
			       "%s: QP type %u (RC, UC, UD, XRC_SEND or "
			       "XRC_RECV)",
			       o->dev->name, a->qp_type);
	}
	if (!(spec->used & (1u << OBJ_USE_SEND_CQ)))
		return why_set(why, -EINVAL, "%s: a QP needs a send CQ",
			       o->dev->name);
	if (!xrc && !(spec->used & (1u << OBJ_USE_RECV_CQ)))
		return why_set(why, -EINVAL, "%s: a QP needs a receive CQ",
			       o->dev->name);
	if (xrc && (spec->used & ~(1u << OBJ_USE_SEND_CQ)))
		return why_set(why, -EINVAL,
			       "%s: an XRC_SEND QP has no receive side "
			       "(no receive CQ, no SRQ)",
			       o->dev->name);
	if (spec->used & ~((1u << OBJ_USE_SEND_CQ) | (1u << OBJ_USE_RECV_CQ) |
			   (1u << OBJ_USE_SRQ)))
		return why_set(why, -EINVAL,
			       "%s: a QP uses two CQs and an SRQ at most",
			       o->dev->name);
	ret = soft_check_wrs(o, "send", a->max_send_wr, a->max_send_sge, why);
	if (ret == 0 && !xrc && !srq)
		ret = soft_check_wrs(o, "receive", a->max_recv_wr,
				     a->max_recv_sge, why);
	if (ret < 0)
		return ret;
	if (a->max_inline_data > SOFT_MAX_INLINE_DATA)
		return why_set(why, -EINVAL,
			       "%s: %u bytes of inline data (at most %u)",
			       o->dev->name, a->max_inline_data,
			       SOFT_MAX_INLINE_DATA);
	if (!soft_use(o, spec, OBJ_USE_SEND_CQ, IBC_OBJ_CQ, "send CQ", why))
		return -EINVAL;
	rec->uses[rec->n_uses++] = spec->uses[OBJ_USE_SEND_CQ];
	if (!xrc) {
		if (!soft_use(o, spec, OBJ_USE_RECV_CQ, IBC_OBJ_CQ,
			      "receive CQ", why))
			return -EINVAL;
		rec->uses[rec->n_uses++] = spec->uses[OBJ_USE_RECV_CQ];
	}
	if (srq) {
		if (!soft_use(o, spec, OBJ_USE_SRQ, IBC_OBJ_SRQ, "SRQ", why))
			return -EINVAL;
		rec->uses[rec->n_uses++] = spec->uses[OBJ_USE_SRQ];
	}
	given->qp_type = a->qp_type;
	given->sq_sig_all = !!a->sq_sig_all;
	/* mlx5 sizes work queues in powers of two and reports them. */
	given->max_send_wr = round_pow2(a->max_send_wr);
	given->max_send_sge = a->max_send_sge;
	given->max_inline_data = a->max_inline_data;
	if (!xrc && !srq) {
		given->max_recv_wr = round_pow2(a->max_recv_wr);
		given->max_recv_sge = a->max_recv_sge;
	}
	rec->uses_pd = true;
	return 0;
}

static int soft_check_srq(struct soft_objs *o, const struct obj_spec *spec,
			  struct obj_attr *given, struct soft_rec *rec,
			  struct why *why)
{
	const struct device_caps *caps = &o->dev->caps;
	const struct obj_attr *a = &spec->attr;
	unsigned int xrc = (1u << OBJ_USE_CQ) | (1u << OBJ_USE_SRQ_XRCD);

	if (spec->used == xrc) {
		if (!soft_use(o, spec, OBJ_USE_CQ, IBC_OBJ_CQ, "CQ", why) ||
		    !soft_use(o, spec, OBJ_USE_SRQ_XRCD, IBC_OBJ_XRCD, "XRCD",
			      why))
			return -EINVAL;
		rec->uses[rec->n_uses++] = spec->uses[OBJ_USE_CQ];
		rec->uses[rec->n_uses++] = spec->uses[OBJ_USE_SRQ_XRCD];
	} else if (spec->used) {
		return why_set(why, -EINVAL,
			       "%s: a basic SRQ uses no CQ; an XRC SRQ "
			       "uses a CQ and an XRCD",
			       o->dev->name);
	}
	if (a->max_wr < 1 || a->max_wr > caps->max_srq_wr)
		return why_set(why, -EINVAL,
			       "%s: an SRQ of %u work requests (1 to "
			       "max_srq_wr %u)",
			       o->dev->name, a->max_wr, caps->max_srq_wr);
	if (a->max_sge > caps->max_srq_sge)
		return why_set(why, -EINVAL,
			       "%s: %u scatter/gather entries per SRQ "
			       "request (max_srq_sge %u)",
			       o->dev->name, a->max_sge, caps->max_srq_sge);
	/* mlx5: a power of two, one kept back; srq_limit is not set at
	 * creation (ibv_create_srq ignores it). */
	given->max_wr = round_pow2(a->max_wr + 1) - 1;
	given->max_sge = a->max_sge ? a->max_sge : 1;
	return 0;
}

static int soft_check_wq(struct soft_objs *o, const struct obj_spec *spec,
			 struct obj_attr *given, struct soft_rec *rec,
			 struct why *why)
{
	const struct obj_attr *a = &spec->attr;
	int ret;

	if (spec->used != 1u << OBJ_USE_CQ)
		return why_set(why, -EINVAL, "%s: a receive WQ uses one CQ",
			       o->dev->name);
	if (a->max_wr < 1)
		return why_set(why, -EINVAL,
			       "%s: a WQ needs at least one work request",
			       o->dev->name);
	ret = soft_check_wrs(o, "WQ", a->max_wr, a->max_sge, why);
	if (ret < 0)
		return ret;
	if (!soft_use(o, spec, OBJ_USE_CQ, IBC_OBJ_CQ, "CQ", why))
		return -EINVAL;
	rec->uses[rec->n_uses++] = spec->uses[OBJ_USE_CQ];
	given->max_wr = round_pow2(a->max_wr);
	given->max_sge = a->max_sge ? a->max_sge : 1;
	rec->uses_pd = true;
	return 0;
}

static int soft_check_mr(struct soft_objs *o, const struct obj_attr *a,
			 struct obj_attr *given, struct why *why)
{
	const struct device_caps *caps = &o->dev->caps;
	uint32_t writes = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;

	if (a->mr_length == 0 || a->mr_length > caps->max_mr_size ||
	    a->mr_addr + a->mr_length < a->mr_addr)
		return why_set(why, -EINVAL,
			       "%s: an MR of %llu bytes at 0x%llx",
			       o->dev->name, (unsigned long long)a->mr_length,
			       (unsigned long long)a->mr_addr);
	if (a->mr_access & IBV_ACCESS_ON_DEMAND)
		return why_set(why, -EOPNOTSUPP, "%s has no on-demand paging",
			       o->dev->name);
	if (a->mr_access & ~SOFT_MR_ACCESS)
		return why_set(why, -EINVAL, "%s: MR access flags 0x%x",
			       o->dev->name, a->mr_access & ~SOFT_MR_ACCESS);
	if ((a->mr_access & writes) && !(a->mr_access & IBV_ACCESS_LOCAL_WRITE))
		return why_set(why, -EINVAL,
			       "%s: remote write or atomic access needs "
			       "IBV_ACCESS_LOCAL_WRITE",
			       o->dev->name);
	given->mr_addr = a->mr_addr;
	given->mr_length = a->mr_length;
	given->mr_access = a->mr_access;
	return 0;
}

/*
 * An MR on a DM (ibv_reg_dm_mr): the DM in use slot 0, the offset in
 * mr_addr; zero-based, as mlx5 requires, and inside the DM.
 */
static int soft_check_dm_mr(struct soft_objs *o, const struct obj_spec *spec,
			    struct obj_attr *given, struct soft_rec *rec,
			    struct why *why)
{
	const struct obj_attr *a = &spec->attr;
	struct soft_rec *dm;
	int err;

	if (spec->used != 1u << 0)
		return why_set(why, -EINVAL, "%s: an MR uses at most one DM",
			       o->dev->name);
	dm = soft_use(o, spec, 0, IBC_OBJ_DM, "DM", why);
	if (!dm)
		return -EINVAL;
	if (!(a->mr_access & IBV_ACCESS_ZERO_BASED))
		return why_set(why, -EINVAL,
			       "%s: an MR on device memory needs "
			       "IBV_ACCESS_ZERO_BASED",
			       o->dev->name);
	if (a->mr_addr > dm->dm_length ||
	    a->mr_length > dm->dm_length - a->mr_addr)
		return why_set(why, -EINVAL,
			       "%s: %llu bytes at offset %llu pass the end "
			       "of the DM (%llu bytes)",
			       o->dev->name, (unsigned long long)a->mr_length,
			       (unsigned long long)a->mr_addr,
			       (unsigned long long)dm->dm_length);
	err = soft_check_mr(o, a, given, why);
	if (err < 0)
		return err;
	rec->uses[rec->n_uses++] = spec->uses[0];
	return 0;
}

/* The device-wide maximum of @kind. */
static uint32_t soft_max(const struct device_caps *caps, enum ibc_obj_kind k)
{
	switch (k) {
	case IBC_OBJ_QP:
		return caps->max_qp;
	case IBC_OBJ_CQ:
		return caps->max_cq;
	case IBC_OBJ_SRQ:
		return caps->max_srq;
	case IBC_OBJ_WQ:
		return caps->max_wq;
	case IBC_OBJ_MR:
		return caps->max_mr;
	case IBC_OBJ_XRCD:
		return caps->max_xrcd;
	default:
		return 0;
	}
}

static uint32_t soft_next_num(struct soft_dev *sd)
{
	uint32_t n = sd->next_num;

	/* Unique until the 24 bits wrap (16 million QPs and SRQs later). */
	if (n < SOFT_FIRST_NUM || n > SOFT_NUM_MASK)
		n = SOFT_FIRST_NUM;
	sd->next_num = n + 1;
	return n;
}

int soft_objs_create(struct soft_objs *o, const struct obj_spec *spec,
		     struct obj_made *ret, struct why *why)
{
	struct soft_rec rec = { .kind = (uint8_t)spec->kind };
	struct obj_made made;
	struct soft_rec *pd = soft_rec(o, 0);
	uint32_t h;
	int err;

	memset(&made, 0, sizeof(made));
	switch (spec->kind) {
	case IBC_OBJ_CQ:
		err = spec->used ?
			      why_set(why, -EINVAL,
				      "%s: a CQ uses no other object",
				      o->dev->name) :
			      soft_check_cq(o, &spec->attr, &made.attr, why);
		break;
	case IBC_OBJ_QP:
		err = soft_check_qp(o, spec, &made.attr, &rec, why);
		break;
	case IBC_OBJ_SRQ:
		err = soft_check_srq(o, spec, &made.attr, &rec, why);
		rec.uses_pd = true;
		break;
	case IBC_OBJ_WQ:
		err = soft_check_wq(o, spec, &made.attr, &rec, why);
		break;
	case IBC_OBJ_MR:
		err = spec->used ?
			      soft_check_dm_mr(o, spec, &made.attr, &rec, why) :
			      soft_check_mr(o, &spec->attr, &made.attr, why);
		rec.uses_pd = true;
		break;
	case IBC_OBJ_XRCD:
		/* Opened by the broker's XRCD request only. */
		err = spec->used || !spec->xrcd_ino ?
			      why_set(why, -EINVAL,
				      "%s: an XRCD uses no other object and "
				      "needs an inode",
				      o->dev->name) :
			      0;
		rec.ino = spec->xrcd_ino;
		break;
	default:
		return why_set(why, -EOPNOTSUPP,
			       "%s makes CQs, QPs, SRQs, WQs, MRs and "
			       "XRCDs for clients, not objects of kind %s",
			       o->dev->name, obj_kind_name(spec->kind));
	}
	if (err < 0)
		return err;
	if (rec.uses_pd && (!pd || pd->kind != IBC_OBJ_PD))
		return why_set(why, -EINVAL,
			       "%s: the context's PD was destroyed",
			       o->dev->name);
	if (o->sd->count[spec->kind] >= soft_max(&o->dev->caps, spec->kind))
		return why_set(why, -ENOMEM,
			       "%s holds its maximum of %u objects of kind "
			       "%s",
			       o->dev->name,
			       soft_max(&o->dev->caps, spec->kind),
			       obj_kind_name(spec->kind));
	/* mlx5 gives a QP a UAR of its importer's (a BF register page),
	 * freed only when that import closes: modelled per QP made, never
	 * per QP opened by number. */
	if (spec->kind == IBC_OBJ_QP && spec->import &&
	    !spec->attr.xrc_qp_num &&
	    soft_internal_add(o, spec->import, o->dev->internal_per_qp) < 0)
		return why_set(why, -ENOMEM, "%s: out of memory", o->dev->name);
	if (spec->kind == IBC_OBJ_XRCD &&
	    soft_xrcd_open(o->sd, spec->xrcd_ino, 0, NULL) < 0)
		return why_set(why, -ENOMEM, "%s: out of memory", o->dev->name);
	err = soft_alloc(o, spec->kind, &h);
	if (err < 0) {
		if (spec->kind == IBC_OBJ_XRCD)
			soft_xrcd_close(o->sd, spec->xrcd_ino);
		return why_set(why, err, "%s: out of memory", o->dev->name);
	}
	/* soft_alloc may have moved the table. */
	for (unsigned int i = 0; i < rec.n_uses; i++)
		o->recs[rec.uses[i]].usecnt++;
	if (rec.uses_pd)
		o->recs[0].usecnt++;
	o->recs[h] = rec;
	o->sd->count[spec->kind]++;
	made.handle = h;
	if (spec->kind == IBC_OBJ_QP || spec->kind == IBC_OBJ_SRQ)
		made.num = made.attr.xrc_qp_num ? made.attr.xrc_qp_num :
			   spec->num		? spec->num :
						  soft_next_num(o->sd);
	if (spec->kind == IBC_OBJ_QP &&
	    spec->attr.qp_type == IBV_QPT_XRC_RECV) {
		if (soft_tgt_add(o->sd, made.num, rec.ino) < 0) {
			soft_objs_destroy(o, spec->kind, h, why);
			return why_set(why, -ENOMEM, "%s: out of memory",
				       o->dev->name);
		}
		o->recs[h].tgt_num = made.num;
	}
	if (spec->kind == IBC_OBJ_MR && spec->key) {
		made.lkey = made.rkey = spec->key;
	} else if (spec->kind == IBC_OBJ_MR) {
		/* mlx5: the mkey index above a key byte; lkey = rkey. */
		o->sd->next_key = (o->sd->next_key + 1) & SOFT_NUM_MASK;
		if (!o->sd->next_key)
			o->sd->next_key = 1;
		made.lkey = made.rkey = o->sd->next_key << 8;
	}
	*ret = made;
	return 0;
}

/* The table reaches @handle and it is free: 0, or -ENOMEM, -EEXIST. */
static int soft_room_at(struct soft_objs *o, uint32_t handle, struct why *why)
{
	if (handle >= SOFT_TABLE_MAX)
		return why_set(why, -ENOMEM, "%s: handle %u is out of reach",
			       o->dev->name, handle);
	if (array_grow(&o->recs, &o->cap, (size_t)handle + 1, sizeof(*o->recs),
		       SOFT_TABLE_MIN) < 0)
		return why_set(why, -ENOMEM, "%s: out of memory", o->dev->name);
	if (o->recs[handle].kind != IBC_OBJ_NONE)
		return why_set(why, -EEXIST, "%s: handle %u is taken",
			       o->dev->name, handle);
	return 0;
}

int soft_objs_create_at(struct soft_objs *o, const struct obj_spec *spec,
			uint32_t handle, struct obj_made *ret, struct why *why)
{
	uint32_t low = o->low;
	int err = soft_room_at(o, handle, why);

	if (err < 0)
		return err;
	/* soft_alloc() takes the first free handle from low on: make it
	 * this one, then give low back (what was free below stays so). */
	o->low = handle;
	err = soft_objs_create(o, spec, ret, why);
	if (err < 0 || low != handle)
		o->low = low;
	return err;
}

int soft_objs_add_dm_at(struct soft_objs *o, uint64_t length, uint32_t handle,
			struct why *why)
{
	uint32_t low = o->low, h;
	int err = soft_room_at(o, handle, why);

	if (err < 0)
		return err;
	o->low = handle;
	err = soft_objs_add_dm(o, length, &h);
	if (err < 0 || low != handle)
		o->low = low;
	if (err < 0)
		return why_set(why, err, "%s: out of memory", o->dev->name);
	return 0;
}

int soft_objs_destroy(struct soft_objs *o, enum ibc_obj_kind kind,
		      uint32_t handle, struct why *why)
{
	struct soft_rec *r = soft_rec(o, handle);

	if (!r)
		return why_set(why, -ENOENT, "%s: handle %u names no object",
			       o->dev->name, handle);
	if (r->kind != kind)
		return why_set(why, -EINVAL,
			       "%s: handle %u is of kind %s, not %s",
			       o->dev->name, handle, obj_kind_name(r->kind),
			       obj_kind_name(kind));
	if (r->usecnt)
		return why_set(why, -EBUSY,
			       "%s: %s handle %u is used by %u other "
			       "object%s",
			       o->dev->name, obj_kind_name(kind), handle,
			       r->usecnt, r->usecnt == 1 ? "" : "s");
	for (unsigned int i = 0; i < r->n_uses; i++)
		o->recs[r->uses[i]].usecnt--;
	for (uint32_t i = 0; i < r->n_tbl_wqs; i++)
		o->recs[r->tbl_wqs[i]].usecnt--;
	if (r->uses_pd)
		o->recs[0].usecnt--;
	if (kind == IBC_OBJ_XRCD)
		soft_xrcd_close(o->sd, r->ino);
	if (r->tgt_num)
		soft_tgt_put(o->sd, r->tgt_num);
	o->sd->count[kind]--;
	soft_release(o, handle);
	return 0;
}

int soft_objs_add_dm(struct soft_objs *o, uint64_t length, uint32_t *ret_handle)
{
	uint32_t h;
	int err = soft_alloc(o, IBC_OBJ_DM, &h);

	if (err < 0)
		return err;
	o->recs[h].dm_length = length;
	o->sd->count[IBC_OBJ_DM]++;
	*ret_handle = h;
	return 0;
}

/* --- RSS ------------------------------------------------------------------ */

/* A record of @kind using @uses (at most one object) and the PD. */
static int soft_add(struct soft_objs *o, enum ibc_obj_kind kind, int use,
		    bool uses_pd, uint32_t *ret)
{
	uint32_t h;
	int err = soft_alloc(o, kind, &h);

	if (err < 0)
		return err;
	o->recs[h] =
		(struct soft_rec){ .kind = (uint8_t)kind, .uses_pd = uses_pd };
	if (use >= 0) {
		o->recs[h].uses[0] = (uint32_t)use;
		o->recs[h].n_uses = 1;
		o->recs[use].usecnt++;
	}
	if (uses_pd)
		o->recs[0].usecnt++;
	o->sd->count[kind]++;
	*ret = h;
	return 0;
}

/* soft_add() at handle @at (NULL: the lowest free one), for a restart's
 * RSS parts: 0, -EEXIST when it is taken, -ENOMEM. */
static int soft_add_at(struct soft_objs *o, enum ibc_obj_kind kind, int use,
		       bool uses_pd, const uint32_t *at, uint32_t *ret,
		       struct why *why)
{
	uint32_t low = o->low;
	int err;

	if (!at) {
		err = soft_add(o, kind, use, uses_pd, ret);
		return err < 0 ? why_set(why, err, "%s: out of memory",
					 o->dev->name) :
				 0;
	}
	err = soft_room_at(o, *at, why);
	if (err < 0)
		return err;
	o->low = *at;
	err = soft_add(o, kind, use, uses_pd, ret);
	if (err < 0 || low != *at)
		o->low = low;
	return err < 0 ? why_set(why, err, "%s: out of memory", o->dev->name) :
			 0;
}

/* The RSS parts, at @at's handles when not NULL (a restart's). */
static int soft_rss_make(struct soft_objs *o, const struct rss_spec *spec,
			 const struct rss_made *at, struct rss_made *ret,
			 struct why *why)
{
	struct rss_made made = { 0 };
	uint32_t *wqs;
	int err;

	if (spec->port_num != 1)
		return why_set(why, -EINVAL, "%s has one port, not port %u",
			       o->dev->name, spec->port_num);
	for (uint32_t i = 0; i < spec->n_wqs; i++) {
		struct soft_rec *r = soft_rec(o, spec->wqs[i]);

		if (!r || r->kind != IBC_OBJ_WQ)
			return why_set(why, -EINVAL,
				       "%s: handle %u is not a WQ",
				       o->dev->name, spec->wqs[i]);
	}
	wqs = malloc(spec->n_wqs * sizeof(*wqs));
	if (!wqs)
		return why_set(why, -ENOMEM, "out of memory");
	memcpy(wqs, spec->wqs, spec->n_wqs * sizeof(*wqs));
	err = soft_add_at(o, IBC_OBJ_RWQ_IND_TBL, -1, false,
			  at ? &at->tbl_handle : NULL, &made.tbl_handle, why);
	if (err < 0) {
		free(wqs);
		return err;
	}
	o->recs[made.tbl_handle].tbl_wqs = wqs;
	o->recs[made.tbl_handle].n_tbl_wqs = spec->n_wqs;
	for (uint32_t i = 0; i < spec->n_wqs; i++)
		o->recs[wqs[i]].usecnt++;
	err = soft_add_at(o, IBC_OBJ_QP, (int)made.tbl_handle, true,
			  at ? &at->qp_handle : NULL, &made.qp_handle, why);
	if (err == 0)
		err = soft_add_at(o, IBC_OBJ_FLOW, (int)made.qp_handle, false,
				  at ? &at->flow_handle : NULL,
				  &made.flow_handle, why);
	if (err < 0) {
		struct why w;

		if (made.qp_handle)
			soft_objs_destroy(o, IBC_OBJ_QP, made.qp_handle, &w);
		soft_objs_destroy(o, IBC_OBJ_RWQ_IND_TBL, made.tbl_handle, &w);
		return err;
	}
	/* mlx5 RSS QPs have no number of their own. */
	made.qp_num = 0;
	*ret = made;
	return 0;
}

int soft_objs_rss_create(struct soft_objs *o, const struct rss_spec *spec,
			 struct rss_made *ret, struct why *why)
{
	return soft_rss_make(o, spec, NULL, ret, why);
}

int soft_objs_rss_create_at(struct soft_objs *o, const struct rss_spec *spec,
			    const struct rss_made *at, struct rss_made *ret,
			    struct why *why)
{
	return soft_rss_make(o, spec, at, ret, why);
}

int soft_objs_rss_destroy(struct soft_objs *o, struct rss_made *made,
			  enum ibc_obj_kind part, struct why *why)
{
	uint32_t h = part == IBC_OBJ_FLOW ? made->flow_handle :
		     part == IBC_OBJ_QP	  ? made->qp_handle :
					    made->tbl_handle;

	return soft_objs_destroy(o, part, h, why);
}

/* --- the kernel's handle list and provider-internal records ------------- */

int soft_objs_handles(const struct soft_objs *o, unsigned int type,
		      uint32_t *handles, uint32_t max)
{
	uint32_t n = 0;

	if (type == IBC_OBJ_NONE ||
	    (type >= OBJ_KIND_COUNT && type != DEVICE_INTERNAL))
		return -EINVAL;
	/* Up to the last record of @type: a walk of what the context
	 * holds, not of the room it once took. */
	for (uint32_t h = 0;
	     h < o->top && n < max && n < o->n_type[soft_type_slot(type)]; h++)
		if (o->recs[h].kind == type)
			handles[n++] = h;
	return (int)n;
}

unsigned int soft_objs_kind(const struct soft_objs *o, uint32_t handle)
{
	return handle < o->top ? o->recs[handle].kind : IBC_OBJ_NONE;
}

int soft_objs_import_open(struct soft_objs *o, uint32_t n, uint64_t *ret)
{
	uint64_t import;
	int err;

	/* Nothing to make, now or for its QPs: nothing to find at the
	 * close. */
	if (n == 0 && !o->dev->internal_per_qp) {
		*ret = 0;
		return 0;
	}
	import = ++o->next_import;
	err = soft_internal_add(o, import, n);
	if (err < 0)
		return err;
	*ret = import;
	return 0;
}

int soft_objs_import_adopt(struct soft_objs *o, uint32_t n, uint64_t import)
{
	int err = import ? soft_internal_add(o, import, n) : 0;

	if (err == 0 && import > o->next_import)
		o->next_import = import;
	return err;
}

uint32_t soft_objs_import_records(const struct soft_objs *o, uint64_t import)
{
	uint32_t n = 0;

	for (uint32_t h = 0; import && h < o->top; h++)
		n += o->recs[h].kind == DEVICE_INTERNAL &&
		     o->recs[h].import == import;
	return n;
}

void soft_objs_import_close(struct soft_objs *o, uint64_t import)
{
	/* From the top down: the table may shrink as records go. */
	for (uint32_t h = o->top; import && h-- > 0;) {
		if (h >= o->top || o->recs[h].kind != DEVICE_INTERNAL ||
		    o->recs[h].import != import)
			continue;
		soft_release(o, h);
	}
}
