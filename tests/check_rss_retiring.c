// SPDX-License-Identifier: MIT
/*
 * The RSS restore's destroys by handle (daemon/families/rss/rss-state.c),
 * against a device whose kernel keeps the parts across the daemon's
 * death, as a verbs kernel does (mlx5 only: no such device here). A fake
 * context answers the kernel's handle lists from a table and records every
 * destroy: a part goes only by a handle the kernel lists as its kind,
 * flows before QPs before tables; a retiring handle the kernel does not
 * list, or lists as another kind, or a list the kernel cannot give,
 * destroys nothing; a retiring mask without a part's bit leaves that
 * part's handle 0 alone, 0 being a valid handle. And the live rebuild's
 * destroys of its old parts (rss-rebuild.c): a failed one keeps its bit.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "daemon/device/device.h"
#include "daemon/families/rss/rss.h"
#include "daemon/registry/core.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/domain.h"
#include "daemon/families/family.h"
#include "daemon/util/log.h"
#include "proto/state.pb-c.h"
#include "tests/cklib.h"

#define BIT(p) (1u << (p))

/* What the fake kernel holds: handles by kind. */
static struct {
	unsigned int kind;
	uint32_t handle;
} held[16];
static unsigned int n_held;
/* handle_list's answer when it cannot say, else 0. */
static int list_err;
/* The kernel holds more of every kind than one list gives: the list is
 * full of others' handles (from 1000), cut before those held[] names. */
static bool list_cut;
/* The destroys asked for, in order. */
static struct {
	enum ibc_obj_kind kind;
	uint32_t handle;
} destroyed[16];
static unsigned int n_destroyed;

static void hold(unsigned int kind, uint32_t handle)
{
	held[n_held].kind = kind;
	held[n_held++].handle = handle;
}

static int fake_handle_list(struct device_ctx *ctx, unsigned int type,
			    uint32_t *handles, uint32_t max)
{
	uint32_t n = 0;

	if (list_err)
		return list_err;
	if (list_cut) {
		for (; n < max; n++)
			handles[n] = 1000 + n;
		return (int)n;
	}
	for (unsigned int i = 0; i < n_held && n < max; i++)
		if (held[i].kind == type)
			handles[n++] = held[i].handle;
	return (int)n;
}

static int fake_obj_destroy(struct device_ctx *ctx, enum ibc_obj_kind kind,
			    uint32_t handle, struct why *why)
{
	ck_assert_uint_lt(n_destroyed, 16);
	destroyed[n_destroyed].kind = kind;
	destroyed[n_destroyed++].handle = handle;
	return 0;
}

/* A live rebuild's destroys of old parts (rss_retire): the part whose
 * destroy fails (a kind, or IBC_OBJ_NONE for none) and with what. */
static enum ibc_obj_kind fail_kind;
static int fail_err;

static int fake_rss_destroy(struct device_ctx *ctx, struct rss_made *made,
			    enum ibc_obj_kind part, struct why *why)
{
	if (part == fail_kind)
		return why_set(why, fail_err, "refused");
	return fake_obj_destroy(ctx, part,
				part == IBC_OBJ_FLOW ? made->flow_handle :
				part == IBC_OBJ_QP   ? made->qp_handle :
						       made->tbl_handle,
				why);
}

/* The QP handles that answer a query (a member's QP; mlx5's RSS QP
 * answers ENOSYS), and whether the device can say at all. */
static uint32_t plain_qp[4];
static unsigned int n_plain_qp;
static bool qp_query_works;

static int fake_qp_is_rss(struct device_ctx *ctx, uint32_t handle)
{
	if (!qp_query_works)
		return -EOPNOTSUPP;
	for (unsigned int i = 0; i < n_plain_qp; i++)
		if (plain_qp[i] == handle)
			return 0;
	return 1;
}

static const struct device_ctx_ops fake_ops = {
	.handle_list = fake_handle_list,
	.obj_destroy = fake_obj_destroy,
	.rss_destroy = fake_rss_destroy,
	.qp_is_rss = fake_qp_is_rss,
};
static struct device dev = { .name = "fake0", .ctx_ops = &fake_ops };
static struct device_ctx dc = { .dev = &dev };
/* Restart off (no journal): rss_journal_now() writes nothing. The
 * context is in a domain, where the restore's stored hook finds it. */
static struct core core;
static struct domain dom;
static struct rss_table table;
static struct dctx x = { .id = 1, .dev = &dev, .dc = &dc, .core = &core };

static void setup(void)
{
	TAILQ_INIT(&core.domains);
	TAILQ_INIT(&dom.ctxs);
	TAILQ_INSERT_TAIL(&core.domains, &dom, link);
	TAILQ_INSERT_TAIL(&dom.ctxs, &x, link);
	TAILQ_INIT(&table.all);
	core.family_state[FAMILY_RSS] = &table;
	n_held = 0;
	n_destroyed = 0;
	list_err = 0;
	list_cut = false;
	fail_kind = IBC_OBJ_NONE;
	n_plain_qp = 0;
	qp_query_works = true;
	dev.broker_objects = false;
}

static void destroyed_is(unsigned int i, enum ibc_obj_kind kind,
			 uint32_t handle)
{
	ck_assert_uint_lt(i, n_destroyed);
	ck_assert_msg(destroyed[i].kind == kind &&
			      destroyed[i].handle == handle,
		      "destroy %u: %s %u, not %s %u", i,
		      obj_kind_name(destroyed[i].kind), destroyed[i].handle,
		      obj_kind_name(kind), handle);
}

/* The restore of adopted record @m, and its retiring parts' destroys
 * once its state is stored (rss_adopt and rss_restored do the same). */
static void adopt(const Rdmab__State__Rss *m)
{
	struct rss r = { .x = &x, .id = 102 };
	unsigned int before = n_destroyed;

	r.retiring = rss_retire_adopted(&x, m, 102);
	/* Nothing goes before the new journal carrying them is stored. */
	ck_assert_uint_eq(n_destroyed, before);
	r.retired.flow_handle = r.retiring.handle[RSS_FLOW];
	r.retired.qp_handle = r.retiring.handle[RSS_QP];
	r.retired.tbl_handle = r.retiring.handle[RSS_TBL];
	r.retired.adopted = true;
	rss_retire_quiet(&r);
}

/* The restore of record @m not adopted: nothing destroyed until its
 * state is stored (review-r1 F1), then what it put off. */
static void drop(const Rdmab__State__Rss *m)
{
	unsigned int before = n_destroyed;

	rss_drop_named(&x, m, 102);
	ck_assert_uint_eq(n_destroyed, before);
	rss_restored(&core);
}

/* A rebuild's record: new parts at 10, 11, 12 (flow, QP, table), the
 * old ones retiring at 3, 4, 5. */
static Rdmab__State__Rss rebuilt(uint32_t retiring)
{
	Rdmab__State__Rss m = RDMAB__STATE__RSS__INIT;

	m.flow_object = 100;
	m.qp_object = 101;
	m.tbl_object = 102;
	m.flow_handle = 10;
	m.qp_handle = 11;
	m.tbl_handle = 12;
	m.retiring = retiring;
	m.retiring_flow_handle = 3;
	m.retiring_qp_handle = 4;
	m.retiring_tbl_handle = 5;
	return m;
}

/* Killed before any old part went: all three listed, all three go, in
 * the order of the kernel's use counts; the new parts stay. */
START_TEST(retiring_listed_destroyed_in_order)
{
	Rdmab__State__Rss m =
		rebuilt(BIT(RSS_FLOW) | BIT(RSS_QP) | BIT(RSS_TBL));

	hold(IBC_OBJ_RWQ_IND_TBL, 5);
	hold(IBC_OBJ_QP, 4);
	hold(IBC_OBJ_FLOW, 3);
	hold(IBC_OBJ_FLOW, 10);
	hold(IBC_OBJ_QP, 11);
	hold(IBC_OBJ_RWQ_IND_TBL, 12);
	adopt(&m);
	ck_assert_uint_eq(n_destroyed, 3);
	destroyed_is(0, IBC_OBJ_FLOW, 3);
	destroyed_is(1, IBC_OBJ_QP, 4);
	destroyed_is(2, IBC_OBJ_RWQ_IND_TBL, 5);
}
END_TEST

/*
 * The old flow went (killed between its destroy and the clear): its
 * handle, free since, was given to a QP of a member; the old QP and
 * table are still listed. The flow's handle is never destroyed, neither
 * as a flow (not listed) nor as the member's QP (another kind).
 */
START_TEST(retiring_reused_as_another_kind_kept)
{
	Rdmab__State__Rss m =
		rebuilt(BIT(RSS_FLOW) | BIT(RSS_QP) | BIT(RSS_TBL));

	hold(IBC_OBJ_QP, 3);
	hold(IBC_OBJ_QP, 4);
	hold(IBC_OBJ_RWQ_IND_TBL, 5);
	adopt(&m);
	ck_assert_uint_eq(n_destroyed, 2);
	destroyed_is(0, IBC_OBJ_QP, 4);
	destroyed_is(1, IBC_OBJ_RWQ_IND_TBL, 5);
}
END_TEST

/*
 * Killed between the old QP's destroy and its bit's clear (review-r1 F2):
 * a member made a QP at the freed handle, listed as QP. It answers a
 * query, which an RSS QP does not (mlx5): kept. The table still goes. A
 * device that cannot say leaves the list as the only check.
 */
START_TEST(retiring_qp_answering_query_kept)
{
	Rdmab__State__Rss m = rebuilt(BIT(RSS_QP) | BIT(RSS_TBL));

	hold(IBC_OBJ_QP, 4);
	hold(IBC_OBJ_RWQ_IND_TBL, 5);
	plain_qp[n_plain_qp++] = 4;
	adopt(&m);
	ck_assert_uint_eq(n_destroyed, 1);
	destroyed_is(0, IBC_OBJ_RWQ_IND_TBL, 5);
	/* An RSS QP there (the old one, its destroy never ran): it goes. */
	n_destroyed = 0;
	n_plain_qp = 0;
	adopt(&m);
	ck_assert_uint_eq(n_destroyed, 2);
	destroyed_is(0, IBC_OBJ_QP, 4);
	/* No query: the list decides, as before. */
	n_destroyed = 0;
	qp_query_works = false;
	plain_qp[n_plain_qp++] = 4;
	adopt(&m);
	ck_assert_uint_eq(n_destroyed, 2);
}
END_TEST

/* Only the table still retires, at handle 0 (valid); the flow and QP
 * bits are clear, their handles 0 too, and a flow and a QP at 0 belong
 * to others: only the table goes. */
START_TEST(retiring_mask_says_which)
{
	Rdmab__State__Rss m = rebuilt(BIT(RSS_TBL));

	m.retiring_flow_handle = 0;
	m.retiring_qp_handle = 0;
	m.retiring_tbl_handle = 0;
	hold(IBC_OBJ_FLOW, 0);
	hold(IBC_OBJ_QP, 0);
	hold(IBC_OBJ_RWQ_IND_TBL, 0);
	adopt(&m);
	ck_assert_uint_eq(n_destroyed, 1);
	destroyed_is(0, IBC_OBJ_RWQ_IND_TBL, 0);
	/* Bits past the three parts mean nothing. */
	n_destroyed = 0;
	m.retiring = 0xf8;
	adopt(&m);
	ck_assert_uint_eq(n_destroyed, 0);
}
END_TEST

/* A kernel that cannot list (an old one): nothing goes by a retiring
 * handle. The named parts of a record not adopted still go, the kernel's
 * kind check all there is (S2's rule): a named part is never destroyed
 * before it is journaled as going, so its handle is its own. */
START_TEST(retiring_unlisted_kernel_kept)
{
	Rdmab__State__Rss m =
		rebuilt(BIT(RSS_FLOW) | BIT(RSS_QP) | BIT(RSS_TBL));

	hold(IBC_OBJ_FLOW, 3);
	/* Or (review-r1 F3) one that holds more objects of each kind than
	 * a list gives: a full list that does not name a part cannot say
	 * it went either. */
	if (_i == 0)
		list_err = -EOPNOTSUPP;
	else
		list_cut = true;
	adopt(&m);
	ck_assert_uint_eq(n_destroyed, 0);
	drop(&m);
	ck_assert_uint_eq(n_destroyed, 3);
	destroyed_is(0, IBC_OBJ_FLOW, 10);
	destroyed_is(1, IBC_OBJ_QP, 11);
	destroyed_is(2, IBC_OBJ_RWQ_IND_TBL, 12);
}
END_TEST

/*
 * A teardown killed after its QP's destroy: the flow went (object 0, no
 * retiring bit), the QP is going (object 0, retiring at its handle), the
 * table is named. The QP's handle is listed no more; the table is, and
 * goes; a QP a member made at the flow's old handle stays.
 */
START_TEST(teardown_going_part_dropped)
{
	Rdmab__State__Rss m = RDMAB__STATE__RSS__INIT;

	m.tbl_object = 102;
	m.flow_handle = 10;
	m.qp_handle = 11;
	m.tbl_handle = 12;
	m.retiring = BIT(RSS_QP);
	m.retiring_qp_handle = 11;
	hold(IBC_OBJ_QP, 10);
	hold(IBC_OBJ_RWQ_IND_TBL, 12);
	drop(&m);
	ck_assert_uint_eq(n_destroyed, 1);
	destroyed_is(0, IBC_OBJ_RWQ_IND_TBL, 12);
	/* Killed before the QP's destroy: it is listed, and goes first. */
	n_destroyed = 0;
	hold(IBC_OBJ_QP, 11);
	drop(&m);
	ck_assert_uint_eq(n_destroyed, 2);
	destroyed_is(0, IBC_OBJ_QP, 11);
	destroyed_is(1, IBC_OBJ_RWQ_IND_TBL, 12);
}
END_TEST

/* A record not adopted that names a part the kernel does not list: none
 * of its named handles is trusted; its listed retiring ones still go. */
START_TEST(stale_named_kept_retiring_listed_go)
{
	Rdmab__State__Rss m = rebuilt(BIT(RSS_TBL));

	hold(IBC_OBJ_FLOW, 10);
	hold(IBC_OBJ_RWQ_IND_TBL, 12);
	hold(IBC_OBJ_RWQ_IND_TBL, 5);
	drop(&m);
	ck_assert_uint_eq(n_destroyed, 1);
	destroyed_is(0, IBC_OBJ_RWQ_IND_TBL, 5);
	/* All listed: the named go too, each kind's retiring one first. */
	n_destroyed = 0;
	hold(IBC_OBJ_QP, 11);
	drop(&m);
	ck_assert_uint_eq(n_destroyed, 4);
	destroyed_is(0, IBC_OBJ_FLOW, 10);
	destroyed_is(1, IBC_OBJ_QP, 11);
	destroyed_is(2, IBC_OBJ_RWQ_IND_TBL, 5);
	destroyed_is(3, IBC_OBJ_RWQ_IND_TBL, 12);
}
END_TEST

/*
 * A live rebuild whose old flow's destroy fails (review-r1 F5): its bit
 * stays, so the record still names it for the restore, and the next try
 * (rss_retire_left, before the slots are reused) destroys it; a part
 * found gone (ENOENT) clears its bit.
 */
START_TEST(retire_failed_destroy_keeps_bit)
{
	struct rss r = { .x = &x, .id = 7 };

	r.retired.flow_handle = 3;
	r.retired.qp_handle = 4;
	r.retired.tbl_handle = 5;
	r.retiring.mask = BIT(RSS_FLOW) | BIT(RSS_QP) | BIT(RSS_TBL);
	fail_kind = IBC_OBJ_FLOW;
	fail_err = -EBUSY;
	rss_retire(&r);
	ck_assert_uint_eq(r.retiring.mask, BIT(RSS_FLOW));
	ck_assert_uint_eq(n_destroyed, 2);
	destroyed_is(0, IBC_OBJ_QP, 4);
	destroyed_is(1, IBC_OBJ_RWQ_IND_TBL, 5);
	fail_kind = IBC_OBJ_NONE;
	rss_retire_left(&r);
	ck_assert_uint_eq(r.retiring.mask, 0);
	ck_assert_uint_eq(n_destroyed, 3);
	destroyed_is(2, IBC_OBJ_FLOW, 3);
	/* Gone already: cleared, nothing left to name. */
	r.retiring.mask = BIT(RSS_QP);
	fail_kind = IBC_OBJ_QP;
	fail_err = -ENOENT;
	rss_retire(&r);
	ck_assert_uint_eq(r.retiring.mask, 0);
	/* Still refused at the last try: let go, the slots free. */
	r.retiring.mask = BIT(RSS_TBL);
	fail_kind = IBC_OBJ_RWQ_IND_TBL;
	fail_err = -EBUSY;
	rss_retire_left(&r);
	ck_assert_uint_eq(r.retiring.mask, 0);
}
END_TEST

/* The soft device: its parts died with the daemon that was their kernel,
 * whatever a list says now. */
START_TEST(soft_destroys_nothing)
{
	Rdmab__State__Rss m =
		rebuilt(BIT(RSS_FLOW) | BIT(RSS_QP) | BIT(RSS_TBL));

	dev.broker_objects = true;
	hold(IBC_OBJ_FLOW, 3);
	hold(IBC_OBJ_FLOW, 10);
	adopt(&m);
	drop(&m);
	ck_assert_uint_eq(n_destroyed, 0);
}
END_TEST

static Suite *rss_retiring_suite(void)
{
	Suite *s = suite_create("rss_retiring");
	TCase *tc = tcase_create("restore");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, retiring_listed_destroyed_in_order);
	tcase_add_test(tc, retiring_reused_as_another_kind_kept);
	tcase_add_test(tc, retiring_mask_says_which);
	tcase_add_test(tc, retiring_qp_answering_query_kept);
	tcase_add_loop_test(tc, retiring_unlisted_kernel_kept, 0, 2);
	tcase_add_test(tc, teardown_going_part_dropped);
	tcase_add_test(tc, stale_named_kept_retiring_listed_go);
	tcase_add_test(tc, soft_destroys_nothing);
	tcase_add_test(tc, retire_failed_destroy_keeps_bit);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	log_max_priority = LOG_ERR;
	return ck_run("rss_retiring", rss_retiring_suite());
}
