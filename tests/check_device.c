// SPDX-License-Identifier: MIT
/*
 * The device layer as far as it runs without RDMA hardware: device_probe()
 * in every mode (verbs with no device is an error with a reason, auto falls
 * back to the soft device and says why), the soft device's limits and
 * operations, verbs_import_device()'s ownership of its descriptor, and the
 * verbs device's error paths, with a fake device played by
 * tests/verbs-shim.h. The capability helpers, which need root, are
 * tests/check_caps.c.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include "common/verbs/verbs-import.h"
#include "daemon/device/device.h"
#include "daemon/util/log.h"
#include "daemon/device/soft/soft-objects.h"
#include "tests/cklib.h"
#include "tests/testlib.h"
#include "tests/verbs-shim.h"

/* --- modes and names -------------------------------------------------- */

START_TEST(test_parse_mode)
{
	static const char *const bad[] = { "",	   "Soft",  "AUTO",
					   "mlx5", "soft ", "verbs0" };
	enum device_mode m;

	ck_assert_int_eq(device_parse_mode("auto", &m), 0);
	ck_assert_int_eq(m, DEVICE_MODE_AUTO);
	ck_assert_int_eq(device_parse_mode("verbs", &m), 0);
	ck_assert_int_eq(m, DEVICE_MODE_VERBS);
	ck_assert_int_eq(device_parse_mode("soft", &m), 0);
	ck_assert_int_eq(m, DEVICE_MODE_SOFT);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m = DEVICE_MODE_SOFT;
		ck_assert_msg(device_parse_mode(bad[i], &m) == -EINVAL,
			      "\"%s\" accepted", bad[i]);
		ck_assert_int_eq(m, DEVICE_MODE_SOFT);
	}
	ck_assert_str_eq(device_kind_name(DEVICE_KIND_VERBS), "verbs");
	ck_assert_str_eq(device_kind_name(DEVICE_KIND_SOFT), "soft");
}
END_TEST

/* --- the soft device ---------------------------------------------------- */

static void assert_soft0(const struct device_list *l, uint64_t max_dm)
{
	const struct device *d = &l->dev[0];

	ck_assert_int_eq(l->kind, DEVICE_KIND_SOFT);
	ck_assert_uint_eq(l->n, 1);
	ck_assert_str_eq(d->name, "soft0");
	ck_assert_int_eq(d->kind, DEVICE_KIND_SOFT);
	ck_assert(!d->removed);
	ck_assert_int_eq(d->event_fd, -1);
	ck_assert_uint_eq(d->caps.max_dm_size, max_dm);
	ck_assert(d->caps.xrc);
	/* The device holds 2^16 entries, uverbs takes 2^13 at most. */
	ck_assert_uint_eq(d->caps.max_rss_table_size,
			  1u << IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE);
	ck_assert_uint_eq(d->caps.max_rss_table_size, 8192);
	ck_assert_uint_eq(d->caps.rss_hash_functions,
			  IBV_RX_HASH_FUNC_TOEPLITZ);
	ck_assert_uint_eq(
		d->caps.rss_hash_fields,
		IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
			IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 |
			IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP |
			IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP);
	ck_assert(d->caps.import);
	ck_assert_uint_eq(d->caps.ports, 1);
	ck_assert_str_eq(d->caps.transport, "software");
}

START_TEST(test_probe_soft)
{
	struct device_config cfg = { .soft_max_dm_size = 128 * 1024 };
	struct device_list l;
	struct device_ctx *c1 = NULL, *c2 = NULL;
	struct device *d;
	const char *why = NULL;
	int fds, fd, seals;

	ck_assert_int_eq(device_probe(DEVICE_MODE_SOFT, &cfg, &l, &why), 0);
	ck_assert_ptr_nonnull(why);
	ck_assert_str_eq(why, "--device soft");
	assert_soft0(&l, 128 * 1024);

	ck_assert_ptr_eq(device_find(&l, NULL), &l.dev[0]);
	ck_assert_ptr_eq(device_find(&l, ""), &l.dev[0]);
	ck_assert_ptr_eq(device_find(&l, "soft0"), &l.dev[0]);
	ck_assert_ptr_null(device_find(&l, "soft1"));
	ck_assert_ptr_null(device_find(&l, "soft"));

	/* Each context is its own sealed memfd with the PD first. */
	d = &l.dev[0];
	fds = tl_count_fds(0);
	ck_assert_int_eq(d->ops->ctx_open(d, 7, "uid-1", &c1), 0);
	ck_assert_int_eq(d->ops->ctx_open(d, 8, "uid-2", &c2), 0);
	ck_assert_int_eq(tl_count_fds(0), fds + 2);
	fd = d->ctx_ops->fd(c1);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_ne(fd, d->ctx_ops->fd(c2));
	seals = fcntl(fd, F_GET_SEALS);
	ck_assert_int_ge(seals, 0);
	ck_assert_int_eq(seals & (F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK),
			 F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK);
	ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
	ck_assert_uint_eq(d->ctx_ops->pd_handle(c1), 0);
	ck_assert_int_eq(d->ctx_ops->event_fd(c1), -1);
	ck_assert_int_eq(d->ctx_ops->handle_event(c1), 0);
	ck_assert_int_eq(d->ops->handle_event(d), 0);
	ck_assert(d->ops->present(d));
	d->ctx_ops->close(c1);
	d->ctx_ops->close(c2);
	ck_assert_int_eq(tl_count_fds(0), fds);

	device_list_close(&l);
	ck_assert_uint_eq(l.n, 0);
	ck_assert_ptr_null(device_find(&l, NULL));
}
END_TEST

/* --- the soft device's objects ------------------------------------------ */

static struct device_list soft_list;
static struct device *soft_dev;
static struct device_ctx *soft_ctx;
static struct why swhy;

static void soft_setup(void)
{
	struct device_config cfg = { .soft_max_dm_size = 4096 };
	const char *reason;

	ck_assert_int_eq(
		device_probe(DEVICE_MODE_SOFT, &cfg, &soft_list, &reason), 0);
	soft_dev = &soft_list.dev[0];
	ck_assert(soft_dev->broker_objects);
	ck_assert_int_eq(
		soft_dev->ops->ctx_open(soft_dev, 1, "uid-0", &soft_ctx), 0);
}

static void soft_teardown(void)
{
	soft_dev->ctx_ops->close(soft_ctx);
	device_list_close(&soft_list);
}

/* Create; the handle, or the negative errno. */
static int64_t mk(struct obj_spec *spec, struct obj_made *made)
{
	struct obj_made m;
	int ret;

	swhy.text[0] = '\0';
	ret = soft_dev->ctx_ops->obj_create(soft_ctx, spec, made ? made : &m,
					    &swhy);
	if (ret < 0) {
		ck_assert_msg(swhy.text[0] != '\0',
			      "error %d without a "
			      "sentence",
			      ret);
		ck_assert_msg(strstr(swhy.text, "soft0"),
			      "\"%s\" does not name the device", swhy.text);
		return ret;
	}
	return made ? made->handle : m.handle;
}

static int64_t mk_cq(uint32_t cqe)
{
	struct obj_spec s = { .kind = IBC_OBJ_CQ, .attr.cqe = cqe };

	return mk(&s, NULL);
}

static int64_t mk_qp(int64_t scq, int64_t rcq, int64_t srq)
{
	struct obj_spec s = {
		.kind = IBC_OBJ_QP,
		.attr = { .qp_type = IBV_QPT_RC,
			  .max_send_wr = 4,
			  .max_recv_wr = 4,
			  .max_send_sge = 1,
			  .max_recv_sge = 1 },
	};

	if (scq >= 0) {
		s.uses[OBJ_USE_SEND_CQ] = (uint32_t)scq;
		s.used |= 1u << OBJ_USE_SEND_CQ;
	}
	if (rcq >= 0) {
		s.uses[OBJ_USE_RECV_CQ] = (uint32_t)rcq;
		s.used |= 1u << OBJ_USE_RECV_CQ;
	}
	if (srq >= 0) {
		s.uses[OBJ_USE_SRQ] = (uint32_t)srq;
		s.used |= 1u << OBJ_USE_SRQ;
	}
	return mk(&s, NULL);
}

static int rm(enum ibc_obj_kind kind, int64_t handle)
{
	swhy.text[0] = '\0';
	return soft_dev->ctx_ops->obj_destroy(soft_ctx, kind, (uint32_t)handle,
					      &swhy);
}

/* The kernel's numbering: the PD is 0, then lowest free first, one space
 * for every kind. */
START_TEST(test_soft_handles)
{
	int64_t cq1 = mk_cq(16), cq2 = mk_cq(16), qp, cq3;

	ck_assert_int_eq(cq1, 1);
	ck_assert_int_eq(cq2, 2);
	qp = mk_qp(cq1, cq2, -1);
	ck_assert_int_eq(qp, 3);
	ck_assert_int_eq(rm(IBC_OBJ_QP, qp), 0);
	ck_assert_int_eq(rm(IBC_OBJ_CQ, cq1), 0);
	/* 1 is free again, before 3: a QP's handle goes to a CQ. */
	cq3 = mk_cq(1);
	ck_assert_int_eq(cq3, 1);
	ck_assert_int_eq(mk_cq(1), 3);
	ck_assert_int_eq(mk_cq(1), 4);
	/* Past the first table of records. */
	for (int i = 5; i < 300; i++)
		ck_assert_int_eq(mk_cq(1), i);
	ck_assert_int_eq(rm(IBC_OBJ_CQ, 77), 0);
	ck_assert_int_eq(rm(IBC_OBJ_CQ, 7), 0);
	ck_assert_int_eq(mk_cq(1), 7);
	ck_assert_int_eq(mk_cq(1), 77);
	ck_assert_int_eq(mk_cq(1), 300);
}
END_TEST

/* -ENOENT for no object, -EINVAL for another kind, -EBUSY while used. */
START_TEST(test_soft_destroy_errors)
{
	int64_t cq = mk_cq(8), rcq = mk_cq(8), qp, srq, wq;
	struct obj_spec s = { .kind = IBC_OBJ_SRQ, .attr.max_wr = 16 };

	srq = mk(&s, NULL);
	ck_assert_int_ge(srq, 0);
	qp = mk_qp(cq, rcq, srq);
	ck_assert_int_ge(qp, 0);
	memset(&s, 0, sizeof(s));
	s.kind = IBC_OBJ_WQ;
	s.attr.max_wr = 8;
	s.uses[OBJ_USE_CQ] = (uint32_t)rcq;
	s.used = 1u << OBJ_USE_CQ;
	wq = mk(&s, NULL);
	ck_assert_int_ge(wq, 0);

	ck_assert_int_eq(rm(IBC_OBJ_CQ, 4242), -ENOENT);
	ck_assert_ptr_nonnull(strstr(swhy.text, "4242"));
	ck_assert_int_eq(rm(IBC_OBJ_QP, cq), -EINVAL);
	ck_assert_ptr_nonnull(strstr(swhy.text, "is of kind CQ, not QP"));
	ck_assert_int_eq(rm(IBC_OBJ_CQ, cq), -EBUSY);
	ck_assert_int_eq(rm(IBC_OBJ_CQ, rcq), -EBUSY);
	ck_assert_int_eq(rm(IBC_OBJ_SRQ, srq), -EBUSY);
	ck_assert_int_eq(rm(IBC_OBJ_PD, 0), -EBUSY);
	ck_assert_int_eq(rm(IBC_OBJ_QP, qp), 0);
	ck_assert_int_eq(rm(IBC_OBJ_QP, qp), -ENOENT);
	ck_assert_int_eq(rm(IBC_OBJ_CQ, cq), 0);
	ck_assert_int_eq(rm(IBC_OBJ_SRQ, srq), 0);
	/* The WQ still holds its CQ. */
	ck_assert_int_eq(rm(IBC_OBJ_CQ, rcq), -EBUSY);
	ck_assert_ptr_nonnull(strstr(swhy.text, "used by 1 other object"));
	ck_assert_int_eq(rm(IBC_OBJ_WQ, wq), 0);
	ck_assert_int_eq(rm(IBC_OBJ_CQ, rcq), 0);
	/* Nothing uses the PD any more. */
	ck_assert_int_eq(rm(IBC_OBJ_PD, 0), 0);
	ck_assert_int_eq(mk_qp(-1, -1, -1), -EINVAL);
	ck_assert_int_eq(mk_cq(1), 0);
}
END_TEST

/* A QP needs CQs of its context, of the right kind. */
START_TEST(test_soft_qp_deps)
{
	int64_t cq = mk_cq(8), mr;
	struct obj_spec s = {
		.kind = IBC_OBJ_MR,
		.attr = { .mr_addr = 4096,
			  .mr_length = 4096,
			  .mr_access = IBV_ACCESS_LOCAL_WRITE },
	};
	struct obj_made made;

	mr = mk(&s, &made);
	ck_assert_int_ge(mr, 0);
	ck_assert_uint_ne(made.lkey, 0);
	ck_assert_uint_eq(made.lkey, made.rkey);
	ck_assert_int_eq(mk_qp(-1, cq, -1), -EINVAL);
	ck_assert_ptr_nonnull(strstr(swhy.text, "send CQ"));
	ck_assert_int_eq(mk_qp(cq, -1, -1), -EINVAL);
	ck_assert_ptr_nonnull(strstr(swhy.text, "receive CQ"));
	ck_assert_int_eq(mk_qp(cq, mr, -1), -EINVAL);
	ck_assert_ptr_nonnull(strstr(swhy.text, "is of kind MR"));
	ck_assert_int_eq(mk_qp(cq, 999, -1), -EINVAL);
	ck_assert_ptr_nonnull(strstr(swhy.text, "names no object"));
	ck_assert_int_eq(mk_qp(cq, cq, cq), -EINVAL);
	ck_assert_ptr_nonnull(strstr(swhy.text, "SRQ"));
	/* One CQ for both sides: used twice, busy until the QP goes. */
	ck_assert_int_ge(mk_qp(cq, cq, -1), 0);
	ck_assert_int_eq(rm(IBC_OBJ_CQ, cq), -EBUSY);
	ck_assert_ptr_nonnull(strstr(swhy.text, "used by 2 other objects"));
}
END_TEST

/* ConnectX-6's limits, and what mlx5 gives. */
START_TEST(test_soft_limits)
{
	const struct device_caps *caps = &soft_dev->caps;
	struct obj_spec s = { .kind = IBC_OBJ_CQ };
	struct obj_made made;
	int64_t cq;

	ck_assert_uint_eq(caps->max_qp, 262144);
	ck_assert_uint_eq(caps->max_qp_wr, 32768);
	ck_assert_uint_eq(caps->max_cqe, 4194303);
	ck_assert_uint_eq(caps->max_sge, 30);
	ck_assert_uint_eq(caps->max_srq_wr, 32767);
	ck_assert_uint_eq(caps->max_srq_sge, 31);
	ck_assert_uint_eq(caps->max_mr_size, UINT64_MAX);

	s.attr.cqe = 0;
	ck_assert_int_eq(mk(&s, NULL), -EINVAL);
	s.attr.cqe = caps->max_cqe + 1;
	ck_assert_int_eq(mk(&s, NULL), -EINVAL);
	ck_assert_ptr_nonnull(strstr(swhy.text, "max_cqe 4194303"));
	s.attr.cqe = caps->max_cqe;
	ck_assert_int_ge(mk(&s, &made), 0);
	ck_assert_uint_eq(made.attr.cqe, 4194303);
	s.attr.cqe = 16;
	cq = mk(&s, &made);
	ck_assert_int_ge(cq, 0);
	ck_assert_uint_eq(made.attr.cqe, 31);
	s.attr.comp_vector = SOFT_COMP_VECTORS;
	ck_assert_int_eq(mk(&s, NULL), -EINVAL);

	memset(&s, 0, sizeof(s));
	s.kind = IBC_OBJ_QP;
	s.attr.qp_type = IBV_QPT_UD;
	s.uses[0] = s.uses[1] = (uint32_t)cq;
	s.used = 3;
	s.attr.max_send_wr = caps->max_qp_wr + 1;
	ck_assert_int_eq(mk(&s, NULL), -EINVAL);
	ck_assert_ptr_nonnull(strstr(swhy.text, "max_qp_wr"));
	s.attr.max_send_wr = 100;
	s.attr.max_recv_sge = caps->max_sge + 1;
	ck_assert_int_eq(mk(&s, NULL), -EINVAL);
	ck_assert_ptr_nonnull(strstr(swhy.text, "max_sge"));
	s.attr.max_recv_sge = 2;
	s.attr.max_recv_wr = 3;
	s.attr.max_inline_data = SOFT_MAX_INLINE_DATA + 1;
	ck_assert_int_eq(mk(&s, NULL), -EINVAL);
	s.attr.max_inline_data = 64;
	ck_assert_int_ge(mk(&s, &made), 0);
	ck_assert_uint_eq(made.attr.max_send_wr, 128);
	ck_assert_uint_eq(made.attr.max_recv_wr, 4);
	ck_assert_uint_eq(made.attr.max_recv_sge, 2);
	ck_assert_uint_eq(made.attr.max_inline_data, 64);
	ck_assert_uint_ge(made.num, 0x100);
	s.attr.qp_type = IBV_QPT_RAW_PACKET;
	ck_assert_int_eq(mk(&s, NULL), -EOPNOTSUPP);
	s.attr.qp_type = 77;
	ck_assert_int_eq(mk(&s, NULL), -EINVAL);
	/* XRC_SEND: a send side only. */
	s.attr.qp_type = IBV_QPT_XRC_SEND;
	ck_assert_int_eq(mk(&s, NULL), -EINVAL);
	s.used = 1;
	ck_assert_int_ge(mk(&s, &made), 0);
	ck_assert_uint_eq(made.attr.max_recv_wr, 0);

	memset(&s, 0, sizeof(s));
	s.kind = IBC_OBJ_SRQ;
	s.attr.max_wr = caps->max_srq_wr + 1;
	ck_assert_int_eq(mk(&s, NULL), -EINVAL);
	s.attr.max_wr = 100;
	s.attr.max_sge = caps->max_srq_sge + 1;
	ck_assert_int_eq(mk(&s, NULL), -EINVAL);
	s.attr.max_sge = 4;
	ck_assert_int_ge(mk(&s, &made), 0);
	ck_assert_uint_eq(made.attr.max_wr, 127);

	memset(&s, 0, sizeof(s));
	s.kind = IBC_OBJ_MR;
	s.attr.mr_addr = UINT64_MAX - 10;
	s.attr.mr_length = 100;
	ck_assert_int_eq(mk(&s, NULL), -EINVAL);
	s.attr.mr_addr = 0x10000;
	s.attr.mr_length = 0;
	ck_assert_int_eq(mk(&s, NULL), -EINVAL);
	s.attr.mr_length = 100;
	s.attr.mr_access = IBV_ACCESS_REMOTE_WRITE;
	ck_assert_int_eq(mk(&s, NULL), -EINVAL);
	ck_assert_ptr_nonnull(strstr(swhy.text, "LOCAL_WRITE"));
	s.attr.mr_access = IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE;
	ck_assert_int_eq(mk(&s, NULL), -EOPNOTSUPP);
	s.attr.mr_access = 1u << 30;
	ck_assert_int_eq(mk(&s, NULL), -EINVAL);

	memset(&s, 0, sizeof(s));
	s.kind = IBC_OBJ_AH;
	ck_assert_int_eq(mk(&s, NULL), -EOPNOTSUPP);
	s.kind = IBC_OBJ_PD;
	ck_assert_int_eq(mk(&s, NULL), -EOPNOTSUPP);
}
END_TEST

/* The device's maximum holds across its contexts; -ENOMEM past it. */
START_TEST(test_soft_max_qp)
{
	struct device_ctx *other = NULL;
	struct obj_spec s = { .kind = IBC_OBJ_CQ, .attr.cqe = 1 };
	struct obj_made made;
	struct why w;
	int64_t cq = mk_cq(1), last = -1;

	for (uint32_t i = 0; i < soft_dev->caps.max_qp - 1; i++) {
		last = mk_qp(cq, cq, -1);
		ck_assert_int_ge(last, 0);
	}
	ck_assert_int_eq(soft_dev->ops->ctx_open(soft_dev, 2, "uid-1", &other),
			 0);
	ck_assert_int_eq(soft_dev->ctx_ops->obj_create(other, &s, &made, &w),
			 0);
	s.kind = IBC_OBJ_QP;
	s.attr.qp_type = IBV_QPT_RC;
	s.uses[0] = s.uses[1] = made.handle;
	s.used = 3;
	ck_assert_int_eq(soft_dev->ctx_ops->obj_create(other, &s, &made, &w),
			 0);
	ck_assert_int_eq(mk_qp(cq, cq, -1), -ENOMEM);
	ck_assert_ptr_nonnull(strstr(swhy.text, "262144"));
	/* The other context's QPs go with it. */
	soft_dev->ctx_ops->close(other);
	ck_assert_int_ge(mk_qp(cq, cq, -1), 0);
	ck_assert_int_eq(rm(IBC_OBJ_QP, last), 0);
	ck_assert_int_ge(mk_qp(cq, cq, -1), 0);
	ck_assert_int_eq(mk_qp(cq, cq, -1), -ENOMEM);
}
END_TEST

/* Contexts have their own handle spaces; closing one frees its objects. */
START_TEST(test_soft_contexts)
{
	struct device_ctx *other = NULL;
	struct why w;
	struct obj_spec s = { .kind = IBC_OBJ_CQ, .attr.cqe = 1 };
	struct obj_made made;

	ck_assert_int_eq(soft_dev->ops->ctx_open(soft_dev, 2, "uid-1", &other),
			 0);
	ck_assert_int_eq(mk_cq(1), 1);
	ck_assert_int_eq(soft_dev->ctx_ops->obj_create(other, &s, &made, &w),
			 0);
	ck_assert_uint_eq(made.handle, 1);
	ck_assert_int_eq(mk_cq(1), 2);
	soft_dev->ctx_ops->close(other);
	ck_assert_int_eq(mk_cq(1), 3);
}
END_TEST

/* --- defaults for what an implementation leaves NULL -------------------- */

static int bare_ctx_open(struct device *dev, uint64_t ctx_id,
			 const char *domain, struct device_ctx **ret_ctx)
{
	static struct device_ctx ctx;

	ctx.dev = dev;
	*ret_ctx = &ctx;
	return 0;
}

static void bare_close(struct device_ctx *ctx)
{
}

static int bare_fd(const struct device_ctx *ctx)
{
	return 42;
}

static uint32_t bare_pd_handle(const struct device_ctx *ctx)
{
	return 7;
}

/* Restart (dm-state.c): a DM is taken back by its handle and memfd: its
 * record made again at that handle when the context lacks it (a restarted
 * daemon's fresh soft context), kept when it has it; a handle another
 * object has and a descriptor that is not the DM's sealed memfd are
 * refused; the DM counts in the device's reserve again. */
START_TEST(test_soft_dm_adopt)
{
	struct device_dm dd = { .fd = -1 }, back = { .fd = -1 };
	struct device_dm more = { .fd = -1 }, again = { .fd = -1 };
	uint32_t handles[16];
	int64_t cq = mk_cq(4);
	int other, fd, n;
	bool listed = false;

	ck_assert_int_ge(cq, 0);
	ck_assert_int_eq(
		soft_dev->ctx_ops->dm_alloc(soft_ctx, 4096, 0, &dd, &swhy), 0);
	fd = fcntl(dd.fd, F_DUPFD_CLOEXEC, 3);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(soft_dev->ctx_ops->dm_adopt(soft_ctx, (uint32_t)cq,
						     4096, fd, &back, &swhy),
			 -EEXIST);
	ck_assert_msg(strstr(swhy.text, "taken"), "%s", swhy.text);
	other = memfd_create("not-the-dm", MFD_CLOEXEC);
	ck_assert_int_ge(other, 0);
	ck_assert_int_eq(ftruncate(other, 4096), 0);
	ck_assert_int_eq(soft_dev->ctx_ops->dm_adopt(soft_ctx, dd.handle, 4096,
						     other, &back, &swhy),
			 -EINVAL);
	ck_assert_int_eq(soft_dev->ctx_ops->dm_adopt(soft_ctx, dd.handle, 8192,
						     fd, &back, &swhy),
			 -EINVAL);
	close(other);
	ck_assert_int_eq(soft_dev->ctx_ops->dm_adopt(soft_ctx, dd.handle, 4096,
						     fd, &back, &swhy),
			 0);
	ck_assert_uint_eq(back.handle, dd.handle);
	ck_assert_uint_eq(back.length, 4096);
	ck_assert_int_eq(back.fd, fd);
	/* The original goes; the adopted one still holds the device's only
	 * page (max_dm_size 4096): no room for another. */
	ck_assert_int_eq(soft_dev->ctx_ops->dm_free(soft_ctx, &dd, &swhy), 0);
	ck_assert_int_eq(
		soft_dev->ctx_ops->dm_alloc(soft_ctx, 4096, 0, &more, &swhy),
		-ENOMEM);
	/* A handle the context lacks: the record is made again there. */
	fd = fcntl(back.fd, F_DUPFD_CLOEXEC, 3);
	ck_assert_int_eq(soft_dev->ctx_ops->dm_adopt(soft_ctx, 40, 4096, fd,
						     &again, &swhy),
			 0);
	n = soft_dev->ctx_ops->handle_list(soft_ctx, IBC_OBJ_DM, handles, 16);
	for (int i = 0; i < n; i++)
		listed |= handles[i] == 40;
	ck_assert_msg(listed, "DM handle 40 is not in the context (%d DMs)", n);
	ck_assert_int_eq(soft_dev->ctx_ops->dm_free(soft_ctx, &again, &swhy),
			 0);
	close(back.fd);
}
END_TEST

/* A device with only the required operations: every other entry is
 * callable and answers like a device without the capability. */
START_TEST(test_default_ops)
{
	static const struct device_ops ops = { .ctx_open = bare_ctx_open };
	static const struct device_ctx_ops ctx_ops = {
		.close = bare_close,
		.fd = bare_fd,
		.pd_handle = bare_pd_handle,
	};
	struct obj_spec spec = { .kind = IBC_OBJ_CQ };
	struct why why = { 0, "" };
	struct device_ctx *ctx = NULL;
	struct obj_made made;
	struct device d;

	memset(&d, 0, sizeof(d));
	snprintf(d.name, sizeof(d.name), "bare7");
	device_set_ops(&d, &ops, &ctx_ops);
	ck_assert_ptr_eq(d.ops->ctx_open, bare_ctx_open);
	ck_assert_ptr_eq(d.ctx_ops->fd, bare_fd);
	ck_assert_int_eq(d.ops->handle_event(&d), 0);
	ck_assert(d.ops->present(&d));
	d.ops->shutdown(&d);
	ck_assert_int_eq(d.ops->ctx_open(&d, 1, "uid-0", &ctx), 0);
	ck_assert_int_eq(d.ctx_ops->event_fd(ctx), -1);
	ck_assert_int_eq(d.ctx_ops->handle_event(ctx), 0);
	ck_assert_uint_eq(d.ctx_ops->pd_handle(ctx), 7);

	ck_assert_int_eq(d.ctx_ops->obj_create(ctx, &spec, &made, &why),
			 -EOPNOTSUPP);
	ck_assert_msg(strstr(why.text, "bare7") && strstr(why.text, "CQ"),
		      "the sentence \"%s\" names neither the device nor "
		      "the object",
		      why.text);
	why.text[0] = '\0';
	ck_assert_int_eq(d.ctx_ops->dm_adopt(ctx, 3, 4096, -1, NULL, &why),
			 -EOPNOTSUPP);
	ck_assert_msg(strstr(why.text, "bare7"), "%s", why.text);
	why.text[0] = '\0';
	ck_assert_int_eq(d.ctx_ops->obj_destroy(ctx, IBC_OBJ_QP, 3, &why),
			 -EOPNOTSUPP);
	ck_assert_msg(strstr(why.text, "bare7") &&
			      strstr(why.text, "destroy objects by handle"),
		      "the sentence \"%s\" names neither the device nor "
		      "what it cannot do",
		      why.text);
	d.ctx_ops->close(ctx);
}
END_TEST

START_TEST(test_obj_kind_names)
{
	ck_assert_str_eq(obj_kind_name(IBC_OBJ_QP), "QP");
	ck_assert_str_eq(obj_kind_name(IBC_OBJ_CQ), "CQ");
	ck_assert_str_eq(obj_kind_name(IBC_OBJ_AH), "AH");
	ck_assert_str_eq(obj_kind_name(IBC_OBJ_CONTEXT), "context");
	ck_assert_str_eq(obj_kind_name(IBC_OBJ_CONTEXT + 1), "object");
	ck_assert_str_eq(obj_kind_name(UINT32_MAX), "object");
	for (uint32_t k = 0; k < OBJ_KIND_COUNT; k++)
		ck_assert_ptr_nonnull(obj_kind_name(k));
}
END_TEST

/* --- verbs without hardware ---------------------------------------------- */

START_TEST(test_probe_verbs)
{
	struct device_config cfg = { .soft_max_dm_size = 256 * 1024 };
	struct device_list l;
	const char *why = NULL;
	int ret, fds;

	fds = tl_count_fds(0);
	ret = device_probe(DEVICE_MODE_VERBS, &cfg, &l, &why);
	ck_assert_ptr_nonnull(why);
	if (ret == 0) {
		/* A machine with RDMA devices: the other branch of the
		 * contract. */
		fprintf(stderr,
			"check_device: libibverbs found %zu device(s); "
			"the no-device error is not testable here\n",
			l.n);
		ck_assert_int_eq(l.kind, DEVICE_KIND_VERBS);
		ck_assert_uint_gt(l.n, 0);
		ck_assert_str_eq(why, "--device verbs");
		device_list_close(&l);
		return;
	}
	ck_assert_msg(ret < 0, "device_probe(verbs) returned %d", ret);
	ck_assert_msg(ret == -ENODEV || ret == -ENOSYS || ret == -EACCES ||
			      ret == -EPERM || ret == -ENOENT,
		      "device_probe(verbs): unexpected %d (%s)", ret,
		      strerror(-ret));
	ck_assert_msg(strstr(why, "RDMA"),
		      "the reason \"%s\" does not say "
		      "what is missing",
		      why);
	ck_assert_uint_eq(l.n, 0);
	ck_assert_ptr_null(device_find(&l, NULL));
	/* A failed probe leaves nothing open, however often it runs. */
	for (int i = 0; i < 3; i++) {
		ck_assert_int_lt(
			device_probe(DEVICE_MODE_VERBS, &cfg, &l, &why), 0);
		device_list_close(&l);
	}
	ck_assert_int_eq(tl_count_fds(0), fds);
}
END_TEST

START_TEST(test_probe_auto)
{
	struct device_config cfg = { .soft_max_dm_size = 64 * 1024 };
	struct device_list l;
	const char *why = NULL;
	int ret;

	ret = device_probe(DEVICE_MODE_AUTO, &cfg, &l, &why);
	ck_assert_msg(ret == 0, "device_probe(auto): %d (%s)", ret,
		      strerror(-ret));
	ck_assert_ptr_nonnull(why);
	if (l.kind == DEVICE_KIND_VERBS) {
		ck_assert_str_eq(why, "libibverbs found a device");
		ck_assert_uint_gt(l.n, 0);
		device_list_close(&l);
		return;
	}
	assert_soft0(&l, 64 * 1024);
	ck_assert_msg(strcmp(why, "libibverbs found no RDMA device") == 0 ||
			      strcmp(why, "this kernel has no RDMA support") ==
				      0 ||
			      strcmp(why, "libibverbs could not open any RDMA "
					  "device") == 0,
		      "auto chose soft because \"%s\"", why);
	device_list_close(&l);
}
END_TEST

/* verbs_import_device() consumes its descriptor on every path: a
 * character device libibverbs does not know (ENODEV, descriptor left to the
 * caller by libibverbs) and a regular file (EINVAL) leave no descriptor. */
START_TEST(test_import_consumes_fd)
{
	static const char *const paths[] = { "/dev/null", "/proc/self/stat" };
	int before = tl_count_fds(0);

	for (size_t i = 0; i < 2; i++) {
		int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
		struct ibv_context *ctx = NULL;

		ck_assert_int_ge(fd, 0);
		ck_assert_int_lt(verbs_import_device(fd, &ctx), 0);
		ck_assert_ptr_null(ctx);
		ck_assert_msg(fcntl(fd, F_GETFD) < 0 && errno == EBADF,
			      "%s: the descriptor is still open", paths[i]);
		ck_assert_int_eq(tl_count_fds(0), before);
	}
}
END_TEST

/* --- the verbs boundary, through tests/verbs-shim.h ---------------------- */

/* A device that fails to open without setting errno is reported with the
 * fallback (ENODEV), not with what an earlier call left in errno. */
START_TEST(test_verbs_stale_errno)
{
	static const int stale[] = { EACCES, EOPNOTSUPP };

	for (size_t i = 0; i < 2; i++) {
		struct device_list l;
		int ret;

		verbs_shim_mode = VERBS_SHIM_SILENT;
		verbs_shim_calls = 0;
		errno = stale[i];
		ret = device_verbs_probe(&l);
		verbs_shim_mode = VERBS_SHIM_REAL;
		if (ret > 0)
			device_list_close(&l);
		/* The list and the open of fake0. */
		ck_assert_uint_eq(verbs_shim_calls, 2);
		ck_assert_msg(ret == -ENODEV, "stale %s: %d (%s)",
			      strerror(stale[i]), ret,
			      ret < 0 ? strerror(-ret) : "");
	}
}
END_TEST

static void put_event(int fd, uint32_t type, uint64_t element)
{
	struct ib_uverbs_async_event_desc d = {
		.element = element,
		.event_type = type,
	};

	ck_assert_int_eq(write(fd, &d, sizeof(d)), (ssize_t)sizeof(d));
}

/*
 * A domain context's default async file gets the events of what members
 * make without an event file, with the element they chose: the broker
 * reads them raw and dereferences only its own QPs (libibverbs' reading
 * would lock and increment through 0x10 here, and die).
 */
START_TEST(test_verbs_foreign_events)
{
	struct ibv_context ctx = { .cmd_fd = -1 };
	struct ibv_qp own = { .events_completed = 0 };
	void *own_qps[1] = { &own };
	unsigned int foreign = 99;
	int p[2];

	ck_assert_int_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	pthread_mutex_init(&own.mutex, NULL);
	pthread_cond_init(&own.cond, NULL);
	ctx.async_fd = p[0];
	put_event(p[1], IBV_EVENT_QP_LAST_WQE_REACHED, 0x10);
	put_event(p[1], IBV_EVENT_CQ_ERR, 0x20);
	put_event(p[1], IBV_EVENT_SRQ_LIMIT_REACHED, 0x30);
	put_event(p[1], IBV_EVENT_WQ_FATAL, 0x40);
	put_event(p[1], IBV_EVENT_PORT_ACTIVE, 1);
	put_event(p[1], IBV_EVENT_QP_FATAL, (uintptr_t)&own);
	ck_assert_int_eq(device_verbs_drain(&ctx, own_qps, 1, &foreign), 0);
	ck_assert_uint_eq(foreign, 4);
	ck_assert_uint_eq(own.events_completed, 1);
	/* Drained: nothing more to read. */
	ck_assert_int_eq(device_verbs_drain(&ctx, own_qps, 1, &foreign), 0);
	ck_assert_uint_eq(foreign, 0);
	put_event(p[1], IBV_EVENT_COMM_EST, (uintptr_t)&own + 8);
	put_event(p[1], IBV_EVENT_DEVICE_FATAL, 0);
	ck_assert_int_eq(device_verbs_drain(&ctx, own_qps, 1, &foreign), 1);
	ck_assert_uint_eq(foreign, 1);
	ck_assert_uint_eq(own.events_completed, 1);
	close(p[0]);
	close(p[1]);
	pthread_cond_destroy(&own.cond);
	pthread_mutex_destroy(&own.mutex);
}
END_TEST

/* The async event descriptor must become non-blocking, or the event loop
 * could block on it: a device whose descriptor refuses is not used. */
START_TEST(test_verbs_async_fd_checked)
{
	struct device_list l;
	int ret;

	verbs_shim_mode = VERBS_SHIM_NO_FDS;
	ret = device_verbs_probe(&l);
	verbs_shim_mode = VERBS_SHIM_REAL;
	if (ret > 0)
		device_list_close(&l);
	ck_assert_msg(ret == -EBADF, "device_verbs_probe: %d (%s)", ret,
		      ret < 0 ? strerror(-ret) : "a device");
}
END_TEST

static Suite *device_suite(void)
{
	Suite *s = suite_create("device");
	TCase *tc;

	tc = tcase_create("probe");
	tcase_add_test(tc, test_parse_mode);
	tcase_add_test(tc, test_probe_soft);
	tcase_add_test(tc, test_probe_verbs);
	tcase_add_test(tc, test_probe_auto);
	tcase_add_test(tc, test_import_consumes_fd);
	tcase_add_test(tc, test_default_ops);
	tcase_add_test(tc, test_obj_kind_names);
	suite_add_tcase(s, tc);

	tc = tcase_create("soft objects");
	tcase_add_checked_fixture(tc, soft_setup, soft_teardown);
	tcase_add_test(tc, test_soft_handles);
	tcase_add_test(tc, test_soft_destroy_errors);
	tcase_add_test(tc, test_soft_qp_deps);
	tcase_add_test(tc, test_soft_limits);
	tcase_add_test(tc, test_soft_contexts);
	tcase_add_test(tc, test_soft_max_qp);
	tcase_add_test(tc, test_soft_dm_adopt);
	suite_add_tcase(s, tc);

	tc = tcase_create("shim");
	tcase_add_test(tc, test_verbs_stale_errno);
	tcase_add_test(tc, test_verbs_async_fd_checked);
	tcase_add_test(tc, test_verbs_foreign_events);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	/* Only errors from the code under test. */
	log_max_priority = LOG_ERR;
	return ck_run("device", device_suite());
}
