// SPDX-License-Identifier: MIT
/*
 * The registry's cleanup engine, driven in-process (a real server on the
 * soft device, clients on socketpairs, the event loop turned by hand): the
 * packets a session sent before it ended are applied, a dead client's
 * objects go in dependency order and in slices, -EBUSY is retried in later
 * rounds and gives up into STUCK (logged once), a family acts before its
 * objects are destroyed, intents of dead clients are counted unaccounted,
 * and a removed device takes its contexts' objects out of the registry.
 *
 * Death is objects_owner_dead(): the clients are this process, which does
 * not die. A device's obj_destroy is wrapped to see the order and to
 * answer -EBUSY.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>
#include <infiniband/verbs.h>

#include "daemon/server/conn.h"
#include "daemon/registry/ctx.h"
#include "daemon/server/dispatch.h"
#include "daemon/families/dm/dm.h"
#include "daemon/util/log.h"
#include "daemon/registry/objects.h"
#include "daemon/server/server.h"
#include "daemon/registry/user.h"
#include "tests/cklib.h"
#include "tests/objlib.h"
#include "tests/srvlib.h"
#include "tests/testlib.h"

/* The wrapped obj_destroy. */
static int (*soft_destroy)(struct device_ctx *, enum ibc_obj_kind, uint32_t,
			   struct why *);
static enum ibc_obj_kind seen[4096];
static size_t n_seen;
/* -EBUSY for this kind, this many times (UINT32_MAX: always). */
static enum ibc_obj_kind busy_kind;
static unsigned int busy_left;

static int wrapped_destroy(struct device_ctx *ctx, enum ibc_obj_kind kind,
			   uint32_t handle, struct why *why)
{
	if (n_seen < sizeof(seen) / sizeof(seen[0]))
		seen[n_seen++] = kind;
	if (kind == busy_kind && busy_left) {
		if (busy_left != UINT32_MAX)
			busy_left--;
		return why_set(why, -EBUSY, "test: %s handle %u is busy",
			       obj_kind_name(kind), handle);
	}
	return soft_destroy(ctx, kind, handle, why);
}

static void setup(void)
{
	sl_start(NULL);
	sl_srv.core.registry->backoff_ms = 1;
	soft_destroy = sl_srv.core.devices.dev[0].ctx_ops_table.obj_destroy;
	sl_srv.core.devices.dev[0].ctx_ops_table.obj_destroy = wrapped_destroy;
	n_seen = 0;
	busy_kind = IBC_OBJ_NONE;
	busy_left = 0;
}

/* The server's configuration becomes @text's, as a reload would make it
 * (before the clients of a test come). */
static void configure(const char *text)
{
	char *path, err[512] = "";
	struct config cfg;

	ck_assert_int_ge(asprintf(&path, "%s/test.conf", sl_dir), 0);
	ck_assert_int_eq(tl_write_conf(path, text), 0);
	ck_assert_msg(config_load(path, true, &cfg, err, sizeof(err)) == 0,
		      "%s", err);
	config_free(&sl_srv.core.config);
	sl_srv.core.config = cfg;
	domains_configure(&sl_srv.core);
	free(path);
}

/* Client @i: a connection of its own, hello, the soft context. */
static struct ol_client *client(int i)
{
	return sl_client(i, NULL, true);
}

/* Run the loop until @ow's cleanup is over (it is freed, or only stuck
 * objects are left), at most @ms. */
static void run_cleanup(int i, int ms)
{
	int64_t deadline = tl_now_ms() + ms;
	struct obj_owner *ow;

	while ((ow = sl_owner(i)) && ow->n_objs > ow->stuck &&
	       tl_now_ms() < deadline)
		event_base_loop(sl_srv.core.base, EVLOOP_ONCE);
}

/* --- what a session sent before it ended ------------------------------ */

START_TEST(test_drain_at_close)
{
	Rdmab__ObjDestroyRequest dq = RDMAB__OBJ_DESTROY_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct ol_client *c = client(0);
	struct ol_obj a, b, d;
	struct obj_owner *ow;

	OK(ol_cq(c, 4, &a));
	OK(ol_cq(c, 4, &b));
	OK(ol_cq(c, 4, &d));
	/* Sent, not read by the daemon, when the session ends. */
	dq.object_id = b.id;
	req.body_case = RDMAB__REQUEST__BODY_OBJ_DESTROY;
	req.obj_destroy = &dq;
	OK(ol_send(c, &req));
	sl_hang_up(0);
	ow = sl_owner(0);
	ck_assert_ptr_nonnull(ow);
	ck_assert_int_eq(ow->state, OWNER_DETACHED);
	ck_assert_uint_eq(ow->n_objs, 2);
	ck_assert_uint_eq(sl_srv.core.registry->n_objs, 2);
	/* Nothing more can be queued. */
	ck_assert_int_eq(ol_send(c, &req), -EPIPE);
	objects_owner_dead(ow);
	run_cleanup(0, 2000);
	ck_assert_ptr_null(sl_owner(0));
	ck_assert_uint_eq(sl_srv.core.registry->n_objs, 0);
}
END_TEST

/* What the invariant rests on: after the reading side is shut, what was
 * queued can still be read, and a send fails instead of being queued. */
START_TEST(test_seqpacket_cut)
{
	char buf[8];
	int sv[2];

	ck_assert_int_eq(
		socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	ck_assert_int_eq(send(sv[1], "a", 1, MSG_NOSIGNAL), 1);
	ck_assert_int_eq(shutdown(sv[0], SHUT_RD), 0);
	errno = 0;
	ck_assert_int_eq(send(sv[1], "b", 1, MSG_NOSIGNAL), -1);
	ck_assert_int_eq(errno, EPIPE);
	ck_assert_int_eq(recv(sv[0], buf, sizeof(buf), MSG_DONTWAIT), 1);
	ck_assert_int_eq(buf[0], 'a');
	ck_assert_int_eq(recv(sv[0], buf, sizeof(buf), MSG_DONTWAIT), 0);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* A verbs client's way, played on the soft device with its kernel role
 * switched off: intents, registers and cancels sent without waiting. */
START_TEST(test_drain_registers)
{
	Rdmab__ObjRegisterRequest rq = RDMAB__OBJ_REGISTER_REQUEST__INIT;
	Rdmab__ObjDestroyRequest dq = RDMAB__OBJ_DESTROY_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct ol_client *c = client(0);
	struct ol_obj i1, i2, i3;
	struct obj_owner *ow;
	struct obj *o;

	sl_srv.core.devices.dev[0].broker_objects = false;
	OK(ol_create_mode(c, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
			  IBC_OBJ_CQ, NULL, 0, NULL, 0, &i1));
	OK(ol_create_mode(c, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
			  IBC_OBJ_QP, NULL, 0, NULL, 0, &i2));
	OK(ol_create_mode(c, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
			  IBC_OBJ_MR, NULL, 0, NULL, 0, &i3));
	rq.object_id = i1.id;
	rq.handle = 41;
	req.body_case = RDMAB__REQUEST__BODY_OBJ_REGISTER;
	req.obj_register = &rq;
	OK(ol_send(c, &req));
	dq.object_id = i2.id;
	req.body_case = RDMAB__REQUEST__BODY_OBJ_DESTROY;
	req.obj_destroy = &dq;
	OK(ol_send(c, &req));
	sl_hang_up(0);
	ow = sl_owner(0);
	ck_assert_ptr_nonnull(ow);
	ck_assert_uint_eq(ow->n_objs, 1);
	ck_assert_uint_eq(ow->n_intents, 1);
	o = TAILQ_FIRST(&ow->kinds[IBC_OBJ_CQ]);
	ck_assert_ptr_nonnull(o);
	ck_assert_uint_eq(o->handle, 41);
	ck_assert_int_eq(obj_state(o), RDMAB__OBJECT_INFO__STATE__DETACHED);
	ck_assert_int_eq(obj_state(TAILQ_FIRST(&ow->kinds[IBC_OBJ_MR])),
			 RDMAB__OBJECT_INFO__STATE__INTENT);
}
END_TEST

/* --- the cleanup --------------------------------------------------------- */

START_TEST(test_order)
{
	struct ol_client *c = client(0);
	struct ol_obj cq, cq2, srq, qp, wq, mr;
	static const enum ibc_obj_kind want[] = { IBC_OBJ_QP, IBC_OBJ_SRQ,
						  IBC_OBJ_WQ, IBC_OBJ_CQ,
						  IBC_OBJ_CQ, IBC_OBJ_MR };

	/* Made in an order the cleanup must not follow. */
	OK(ol_mr(c, 0x1000, 4096, 0, &mr));
	OK(ol_cq(c, 4, &cq));
	OK(ol_cq(c, 4, &cq2));
	OK(ol_srq(c, 4, &srq));
	OK(ol_wq(c, cq2.id, 4, &wq));
	OK(ol_qp(c, cq.id, cq.id, srq.id, &qp));
	sl_kill(0);
	run_cleanup(0, 2000);
	ck_assert_ptr_null(sl_owner(0));
	ck_assert_uint_eq(n_seen, 6);
	for (size_t i = 0; i < 6; i++)
		ck_assert_msg(seen[i] == want[i],
			      "destroy %zu was a %s, not a %s", i,
			      obj_kind_name(seen[i]), obj_kind_name(want[i]));
	ck_assert_int_eq(sl_log_count("is gone: destroying its 6 objects"), 1);
}
END_TEST

/* The registry's cleanup order, from the device's destroy ranks, is the
 * kernel's: what uses another object before it, every kind once. */
START_TEST(test_cleanup_order)
{
	static const enum ibc_obj_kind want[] = {
		IBC_OBJ_FLOW, IBC_OBJ_QP, IBC_OBJ_RWQ_IND_TBL, IBC_OBJ_SRQ,
		IBC_OBJ_WQ,   IBC_OBJ_CQ, IBC_OBJ_MW,	       IBC_OBJ_MR,
		IBC_OBJ_AH,   IBC_OBJ_DM, IBC_OBJ_XRCD,	       IBC_OBJ_PD,
	};
	const struct registry *reg = sl_srv.core.registry;

	ck_assert_uint_eq(reg->cleanup_kinds, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < reg->cleanup_kinds; i++)
		ck_assert_msg(reg->cleanup_order[i] == want[i],
			      "the cleanup's kind %zu is a %s, not a %s", i,
			      obj_kind_name(reg->cleanup_order[i]),
			      obj_kind_name(want[i]));
	ck_assert_uint_eq(obj_kind_destroy_rank(IBC_OBJ_NONE), 0);
	ck_assert_uint_eq(obj_kind_destroy_rank(IBC_OBJ_CONTEXT), 0);
	ck_assert_uint_eq(obj_kind_destroy_rank(OBJ_KIND_COUNT), 0);
}
END_TEST

/* A thousand objects: at most a slice per turn of the loop. */
START_TEST(test_slices)
{
	struct ol_client *c = client(0);
	struct registry *reg = sl_srv.core.registry;
	unsigned int before, turns = 0;
	struct ol_obj o;

	for (int i = 0; i < 1000; i++)
		OK(ol_cq(c, 1, &o));
	sl_kill(0);
	before = reg->n_objs;
	ck_assert_uint_eq(before, 1000);
	while (reg->n_objs) {
		event_base_loop(sl_srv.core.base,
				EVLOOP_ONCE | EVLOOP_NONBLOCK);
		ck_assert_msg(before - reg->n_objs <= OBJ_SLICE,
			      "%u destroyed in one turn", before - reg->n_objs);
		before = reg->n_objs;
		ck_assert_uint_lt(++turns, 10000);
	}
	ck_assert_uint_ge(turns, 1000 / OBJ_SLICE);
	ck_assert_ptr_null(sl_owner(0));
}
END_TEST

/* -EBUSY: tried again in a later round; the rest went meanwhile. */
START_TEST(test_busy_retried)
{
	struct ol_client *c = client(0);
	struct ol_obj cq, qp, mr;
	size_t cq_tries = 0;

	OK(ol_cq(c, 4, &cq));
	OK(ol_qp(c, cq.id, cq.id, 0, &qp));
	OK(ol_mr(c, 0x1000, 4096, 0, &mr));
	busy_kind = IBC_OBJ_CQ;
	busy_left = 3;
	sl_kill(0);
	run_cleanup(0, 5000);
	ck_assert_ptr_null(sl_owner(0));
	for (size_t i = 0; i < n_seen; i++)
		cq_tries += seen[i] == IBC_OBJ_CQ;
	ck_assert_uint_eq(cq_tries, 4);
	/* QP first; the MR did not wait for the CQ's rounds. */
	ck_assert_int_eq(seen[0], IBC_OBJ_QP);
	ck_assert_int_eq(seen[2], IBC_OBJ_MR);
	ck_assert_int_eq(sl_log_count("is kept"), 0);
}
END_TEST

/* -EBUSY every time: kept after the last round, stuck, logged once. */
START_TEST(test_stuck)
{
	struct ol_client *c = client(0), *other = client(1);
	struct ol_obj cq, cq2, keep;
	struct obj_owner *ow;
	size_t cq_tries = 0;
	uint32_t used = 0, unacc = 0;

	OK(ol_cq(c, 4, &cq));
	OK(ol_cq(c, 4, &cq2));
	OK(ol_cq(other, 4, &keep));
	busy_kind = IBC_OBJ_CQ;
	busy_left = UINT32_MAX;
	sl_hang_up(0);
	ow = sl_owner(0);
	objects_owner_dead(ow);
	run_cleanup(0, 10000);
	ck_assert_ptr_eq(sl_owner(0), ow);
	ck_assert_uint_eq(ow->stuck, 2);
	for (size_t i = 0; i < n_seen; i++)
		cq_tries += seen[i] == IBC_OBJ_CQ;
	ck_assert_uint_eq(cq_tries, 2 * OBJ_ROUNDS);
	ck_assert_int_eq(obj_state(TAILQ_FIRST(&ow->kinds[IBC_OBJ_CQ])),
			 RDMAB__OBJECT_INFO__STATE__STUCK);
	ck_assert_int_eq(sl_log_count("is kept: test: CQ handle"), 2);
	ck_assert_int_eq(sl_log_count("2 objects could not be destroyed"), 1);
	/* Shown, and still charged: PD, two stuck, the other's one. */
	ck_assert_int_eq(ol_list(other, 0, NULL, NULL, 0), 3);
	OK(ol_domain(other, other->domain, &used, &unacc));
	ck_assert_uint_eq(used, 4);
	/* Nothing runs any more. */
	n_seen = 0;
	for (int i = 0; i < 50; i++)
		event_base_loop(sl_srv.core.base,
				EVLOOP_ONCE | EVLOOP_NONBLOCK);
	ck_assert_uint_eq(n_seen, 0);
}
END_TEST

/*
 * -EINVAL is not "gone": the handle names an object of another kind (here
 * a record of kind QP on the soft kernel's CQ), so the record stays, stuck
 * at once, logged once with the errno, and listed so; the CQ is destroyed.
 * Only -ENOENT drops a record (test_intents_unaccounted).
 */
START_TEST(test_einval_stuck)
{
	struct ol_client *c = client(0), *other = client(1);
	struct ol_info info[8];
	struct ol_obj cq, qp;
	struct obj_owner *ow;
	size_t qp_tries = 0;
	int n, stuck = -1;

	OK(ol_cq(c, 4, &cq));
	sl_srv.core.devices.dev[0].broker_objects = false;
	OK(ol_create_mode(c, RDMAB__OBJ_CREATE_REQUEST__MODE__TRACK, IBC_OBJ_QP,
			  NULL, 0, NULL, cq.handle, &qp));
	sl_kill(0);
	run_cleanup(0, 5000);
	ow = sl_owner(0);
	ck_assert_ptr_nonnull(ow);
	ck_assert_uint_eq(ow->n_objs, 1);
	ck_assert_uint_eq(ow->stuck, 1);
	for (size_t i = 0; i < n_seen; i++)
		qp_tries += seen[i] == IBC_OBJ_QP;
	/* Not retried: the answer would not change. */
	ck_assert_uint_eq(qp_tries, 1);
	ck_assert_int_eq(sl_log_count("is of kind CQ, not QP (errno 22)"), 1);
	ck_assert_int_eq(sl_log_count("was already gone"), 0);
	n = ol_list(other, ow->client_id, NULL, info, 8);
	ck_assert_int_eq(n, 1);
	if (info[0].id == qp.id)
		stuck = info[0].state;
	ck_assert_int_eq(stuck, RDMAB__OBJECT_INFO__STATE__STUCK);
	/* Nothing runs any more. */
	n_seen = 0;
	for (int i = 0; i < 50; i++)
		event_base_loop(sl_srv.core.base,
				EVLOOP_ONCE | EVLOOP_NONBLOCK);
	ck_assert_uint_eq(n_seen, 0);
	ck_assert_int_eq(sl_log_count("is kept"), 1);
}
END_TEST

/*
 * A CQ destroyed behind its owner's back, by handle through the device's
 * own path (as another process of the domain can with a raw ioctl on the
 * shared command descriptor): the owner's destroy answers the device's
 * -ENOENT and the record goes. Kept, the owner's cleanup would destroy the
 * handle, which the device gives at once to another client's new CQ.
 */
START_TEST(test_destroy_gone_dropped)
{
	struct ol_client *c = client(0), *other = client(1);
	struct ol_obj cq, keep, theirs;
	struct ol_info info[8];
	struct why why;
	struct obj *o;
	size_t cq_tries = 0;
	int n;

	OK(ol_cq(c, 4, &cq));
	OK(ol_cq(c, 4, &keep));
	o = TAILQ_FIRST(&sl_owner(0)->kinds[IBC_OBJ_CQ]);
	ck_assert_ptr_nonnull(o);
	OK(soft_destroy(o->ctx->dc, IBC_OBJ_CQ, cq.handle, &why));
	ck_assert_int_eq(ol_destroy(c, cq.id), -ENOENT);
	n = ol_list(other, 0, NULL, info, 8);
	ck_assert_int_ge(n, 1);
	for (int i = 0; i < n && i < 8; i++)
		ck_assert_msg(info[i].id != cq.id,
			      "the registry still lists the CQ the device no "
			      "longer has");
	OK(ol_cq(other, 4, &theirs));
	ck_assert_uint_eq(theirs.handle, cq.handle);
	n_seen = 0;
	sl_kill(0);
	run_cleanup(0, 5000);
	ck_assert_ptr_null(sl_owner(0));
	for (size_t i = 0; i < n_seen; i++)
		cq_tries += seen[i] == IBC_OBJ_CQ;
	/* Only the CQ its record names. */
	ck_assert_uint_eq(cq_tries, 1);
	ck_assert_int_eq(ol_destroy(other, theirs.id), 0);
}
END_TEST

static unsigned int hook_calls, hook_busy;

static int hook(struct core *s, struct obj *o, void *data)
{
	ck_assert_ptr_eq(s, &sl_srv.core);
	ck_assert_ptr_eq(data, &hook_calls);
	ck_assert_int_eq(o->kind, IBC_OBJ_WQ);
	hook_calls++;
	/* The family acts before the destroy. */
	for (size_t i = 0; i < n_seen; i++)
		ck_assert_int_ne(seen[i], IBC_OBJ_WQ);
	if (hook_busy) {
		hook_busy--;
		return -EBUSY;
	}
	return 0;
}

START_TEST(test_family_hook)
{
	static const struct obj_family fam = { .before_destroy = hook };
	static void *const data = &hook_calls;
	struct ol_client *c = client(0);
	struct ol_obj cq, wq, qp;

	OK(objects_watch(sl_srv.core.registry, IBC_OBJ_WQ, &fam, &data, 0));
	hook_calls = 0;
	hook_busy = 1;
	OK(ol_cq(c, 4, &cq));
	OK(ol_wq(c, cq.id, 4, &wq));
	OK(ol_qp(c, cq.id, cq.id, 0, &qp));
	sl_kill(0);
	run_cleanup(0, 5000);
	ck_assert_ptr_null(sl_owner(0));
	/* Refused once (then the CQ was busy too), then let go. */
	ck_assert_uint_eq(hook_calls, 2);
	ck_assert_int_eq(seen[n_seen - 1], IBC_OBJ_CQ);
}
END_TEST

static unsigned int watched_a, watched_b;

static int watch_hook(struct core *s, struct obj *o, void *data)
{
	(void)s;
	if (o->kind == IBC_OBJ_CQ)
		++*(unsigned int *)data;
	return 0;
}

static void watch_removed(struct core *s, struct obj *o, void *data)
{
	(void)s;
	if (o->kind == IBC_OBJ_CQ)
		*(unsigned int *)data += 10;
}

/* Two families watch one kind: each hears of each record, in order. */
START_TEST(test_two_watchers)
{
	static const struct obj_family fam = { .before_destroy = watch_hook,
					       .removed = watch_removed };
	static void *const a = &watched_a, *const b = &watched_b;
	struct ol_client *c = client(0);
	struct ol_obj cq;

	OK(objects_watch(sl_srv.core.registry, IBC_OBJ_CQ, &fam, &a, 0));
	OK(objects_watch(sl_srv.core.registry, IBC_OBJ_CQ, &fam, &b, 0));
	watched_a = watched_b = 0;
	OK(ol_cq(c, 4, &cq));
	sl_kill(0);
	run_cleanup(0, 5000);
	ck_assert_ptr_null(sl_owner(0));
	ck_assert_uint_eq(watched_a, 11);
	ck_assert_uint_eq(watched_b, 11);
}
END_TEST

static unsigned int destroyed_by[3];

static int slot_destroy(struct core *s, struct obj *o, void *data,
			struct why *why)
{
	(void)s;
	++*(unsigned int *)data;
	return o->ctx->dev->ctx_ops->obj_destroy(o->ctx->dc, o->kind, o->handle,
						 why);
}

/* Two families destroy records of one kind they made: the cleanup asks
 * the one whose slot of the record is set, never the other (what a family
 * keeps of a record is its own, issue 24 item 2). */
START_TEST(test_slot_destroyer)
{
	static const struct obj_family fam = { .destroy = slot_destroy };
	static void *const a = &destroyed_by[1], *const b = &destroyed_by[2];
	struct ol_client *c = client(0);
	struct ol_obj cq;
	struct obj *o;

	OK(objects_watch(sl_srv.core.registry, IBC_OBJ_CQ, &fam, &a, 1));
	OK(objects_watch(sl_srv.core.registry, IBC_OBJ_CQ, &fam, &b, 2));
	destroyed_by[1] = destroyed_by[2] = 0;
	OK(ol_cq(c, 4, &cq));
	o = objects_find_id(&sl_srv.core, cq.id);
	ck_assert_ptr_nonnull(o);
	o->slot[2].p = o;
	sl_kill(0);
	run_cleanup(0, 5000);
	ck_assert_ptr_null(sl_owner(0));
	ck_assert_uint_eq(destroyed_by[1], 0);
	ck_assert_uint_eq(destroyed_by[2], 1);
}
END_TEST

/* A dead client's open intents: the one whose kernel call made an object
 * stays charged, as unaccounted, until the context closes; the one that
 * made nothing is given back (daemon/registry/unaccounted.c counts the kernel's
 * handles). */
START_TEST(test_intents_unaccounted)
{
	struct ol_client *c = client(0), *other = client(1);
	uint32_t used = 0, unacc = 0, objs = 9, cintents = 9;
	struct obj_spec spec = { .kind = IBC_OBJ_CQ, .attr.cqe = 4 };
	struct why why;
	struct obj_made made;
	struct ol_obj i1, i2, t;
	struct dctx *x;

	sl_srv.core.devices.dev[0].broker_objects = false;
	OK(ol_create_mode(c, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
			  IBC_OBJ_CQ, NULL, 0, NULL, 0, &i1));
	OK(ol_create_mode(c, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
			  IBC_OBJ_QP, NULL, 0, NULL, 0, &i2));
	/* Made with raw verbs: a handle the device does not know. */
	OK(ol_create_mode(c, RDMAB__OBJ_CREATE_REQUEST__MODE__TRACK, IBC_OBJ_PD,
			  NULL, 0, NULL, 77, &t));
	ck_assert_uint_eq(t.handle, 77);
	/* The CQ intent's kernel call ran: the device holds a CQ. */
	x = TAILQ_FIRST(&TAILQ_FIRST(&sl_srv.core.domains)->ctxs);
	OK(x->dev->ctx_ops->obj_create(x->dc, &spec, &made, &why));
	OK(ol_client(other, c->client_id, &objs, &cintents));
	ck_assert_uint_eq(objs, 1);
	ck_assert_uint_eq(cintents, 2);
	OK(ol_domain(other, other->domain, &used, &unacc));
	ck_assert_uint_eq(used, 4);
	ck_assert_uint_eq(unacc, 0);
	sl_kill(0);
	run_cleanup(0, 2000);
	ck_assert_ptr_null(sl_owner(0));
	ck_assert_uint_eq(sl_srv.core.registry->n_objs, 0);
	ck_assert_int_eq(sl_log_count("PD handle 77 was already gone"), 1);
	OK(ol_domain(other, other->domain, &used, &unacc));
	ck_assert_uint_eq(unacc, 1);
	ck_assert_uint_eq(used, 1 + unacc);
	/* The last client goes: the context closes, the kernel frees what
	 * they made, and the charge goes with it. */
	ol_close(other);
	sl_hang_up(1);
	ck_assert(TAILQ_EMPTY(&sl_srv.core.domains) ||
		  TAILQ_FIRST(&sl_srv.core.domains)->used.objects == 0);
}
END_TEST

/* The kernel frees a removed device's objects with its contexts. */
START_TEST(test_device_gone)
{
	struct ol_client *a = client(0), *b = client(1);
	struct ol_obj cq, qp, o;
	Rdmab__DaemonMessage *m = NULL;
	struct domain *d;

	OK(ol_cq(a, 4, &cq));
	OK(ol_qp(a, cq.id, cq.id, 0, &qp));
	OK(ol_cq(b, 4, &o));
	sl_hang_up(1);
	ck_assert_uint_eq(sl_srv.core.registry->n_objs, 3);
	server_device_removed(&sl_srv, &sl_srv.core.devices.dev[0],
			      "a test removed it");
	ck_assert_uint_eq(sl_srv.core.registry->n_objs, 0);
	ck_assert_ptr_null(sl_owner(1));
	ck_assert_int_eq(n_seen, 0);
	/* The event names the client's context. */
	ck_assert_int_eq(tl_recv_msg(a->fd, 1000, &m), 1);
	ck_assert_int_eq(m->kind_case, RDMAB__DAEMON_MESSAGE__KIND_EVENT);
	ck_assert_int_eq(m->event->body_case,
			 RDMAB__EVENT__BODY_DEVICE_REMOVED);
	ck_assert_uint_eq(m->event->object_kind, IBC_OBJ_CONTEXT);
	ck_assert_uint_eq(m->event->object_id, a->ctx_id);
	ol_free(m);
	d = TAILQ_FIRST(&sl_srv.core.domains);
	ck_assert_ptr_nonnull(d);
	/* Only the context's PD, until the client closes it. */
	ck_assert_uint_eq(d->used.objects, 1);
	ck_assert_int_eq(ol_cq(a, 4, NULL), -ENODEV);
}
END_TEST

/* The dispatcher's rows: evict is an administrator's call. */
START_TEST(test_dispatch_rows)
{
	static const struct {
		unsigned int body;
		const char *name;
		unsigned int admin;
	} rows[] = {
		{ RDMAB__REQUEST__BODY_OBJ_CREATE, "obj-create", 0 },
		{ RDMAB__REQUEST__BODY_OBJ_REGISTER, "obj-register", 0 },
		{ RDMAB__REQUEST__BODY_OBJ_DESTROY, "obj-destroy", 0 },
		{ RDMAB__REQUEST__BODY_LIST_OBJECTS, "list-objects", 0 },
		{ RDMAB__REQUEST__BODY_EVICT, "evict", H_ADMIN },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct handler *h = dispatch_lookup(rows[i].body);

		ck_assert_ptr_nonnull(h);
		ck_assert_str_eq(h->name, rows[i].name);
		ck_assert_uint_ne(h->flags & H_NEEDS_HELLO, 0);
		ck_assert_uint_eq(h->flags & H_ADMIN, rows[i].admin);
	}
}
END_TEST

/* --- XRC domains (daemon/families/xrcd/xrcd.c) ---------------------------- */

/* XrcdOpenRequest for @name with @oflags in @c's context: the object id, or
 * -errno. */
static int xrcd_open_own(struct ol_client *c, const char *name, uint32_t oflags,
			 bool own, uint64_t *ret_id)
{
	Rdmab__XrcdOpenRequest xo = RDMAB__XRCD_OPEN_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	int ret;

	xo.context_id = c->ctx_id;
	xo.name.data = (uint8_t *)name;
	xo.name.len = strlen(name);
	xo.oflags = oflags;
	xo.own = own;
	req.body_case = RDMAB__REQUEST__BODY_XRCD_OPEN;
	req.xrcd_open = &xo;
	ret = ol_call(c, &req, &m);
	if (ret < 0)
		return ret;
	*ret_id = m->reply->xrcd_open->object_id;
	ol_free(m);
	return 0;
}

static int xrcd_open(struct ol_client *c, const char *name, uint32_t oflags,
		     uint64_t *ret_id)
{
	return xrcd_open_own(c, name, oflags, false, ret_id);
}

static int xrcd_close(struct ol_client *c, uint64_t id)
{
	Rdmab__XrcdCloseRequest xc = RDMAB__XRCD_CLOSE_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	int ret;

	xc.object_id = id;
	req.body_case = RDMAB__REQUEST__BODY_XRCD_CLOSE;
	req.xrcd_close = &xc;
	ret = ol_call(c, &req, &m);
	if (ret == 0)
		ol_free(m);
	return ret;
}

/*
 * A client on a context of its own (a verbs device it could not import):
 * its opens are its session's, registered nowhere; XrcdClose ends one, the
 * end of the session the rest. The soft device has no such contexts.
 */
START_TEST(test_xrcd_own)
{
	struct ol_client *c = client(0), *other = client(1);
	struct ol_info objs[4];
	char path[400];
	uint64_t a, b;

	ck_assert_int_eq(xrcd_open_own(c, "o", O_CREAT, true, &a), -EINVAL);
	sl_srv.core.devices.dev[0].broker_objects = false;
	OK(xrcd_open_own(c, "o", O_CREAT, true, &a));
	OK(xrcd_open_own(c, "o", 0, true, &b));
	ck_assert_int_eq(ol_list(other, 0, NULL, objs, 4), 0);
	ck_assert_uint_eq(
		sl_srv.core.domains.tqh_first->used.family[FAMILY_XRCD], 2);
	/* Registered opens are closed with obj-destroy, not here. */
	ck_assert_int_eq(xrcd_close(other, a), -ENOENT);
	OK(xrcd_close(c, a));
	ck_assert_int_eq(xrcd_close(c, a), -ENOENT);
	/* p.1 went with the refused open. */
	snprintf(path, sizeof(path), "%s/xrcd/p.2", sl_dir);
	ck_assert_int_eq(access(path, F_OK), 0);
	sl_hang_up(0);
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert_uint_eq(
		sl_srv.core.domains.tqh_first->used.family[FAMILY_XRCD], 0);
}
END_TEST

/*
 * On a verbs device the broker knows no handle of a client's XRCD (struct
 * ibv_xrcd shows none): a dead client's XRC SRQ goes by handle, its XRCD
 * record is never destroyed by handle but counted as unaccounted while
 * the kernel lists an XRCD nobody names (here the device, soft playing
 * verbs, made none: 0), and its open of the name goes, which removes an
 * undeclared name's file.
 */
/* The XRCD @name as @c lists it: its live and orphaned opens; false when
 * not listed. */
static bool xrcd_listed(struct ol_client *c, const char *name,
			uint32_t *ret_opens, uint32_t *ret_orphaned)
{
	Rdmab__ListXrcdsRequest lx = RDMAB__LIST_XRCDS_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	bool listed;

	lx.name.data = (uint8_t *)name;
	lx.name.len = strlen(name);
	req.body_case = RDMAB__REQUEST__BODY_LIST_XRCDS;
	req.list_xrcds = &lx;
	OK(ol_call(c, &req, &m));
	listed = m->reply->list_xrcds->n_xrcds == 1;
	if (listed) {
		*ret_opens = m->reply->list_xrcds->xrcds[0]->open_count;
		*ret_orphaned = m->reply->list_xrcds->xrcds[0]->orphaned_opens;
	}
	ol_free(m);
	return listed;
}

/* @c's domain's count of XRCD opens orphaned in its contexts. */
static uint32_t domain_xrcd_orphans(struct ol_client *c)
{
	Rdmab__ListRequest ld = RDMAB__LIST_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	uint32_t n = UINT32_MAX;

	req.body_case = RDMAB__REQUEST__BODY_LIST_DOMAINS;
	req.list_domains = &ld;
	OK(ol_call(c, &req, &m));
	for (size_t i = 0; i < m->reply->list_domains->n_domains; i++)
		if (strcmp(m->reply->list_domains->domains[i]->name,
			   c->domain) == 0)
			n = m->reply->list_domains->domains[i]->xrcd_orphans;
	ol_free(m);
	return n;
}

/* The client's ibv_open_xrcd in the domain's context, on the soft kernel
 * (a verbs client makes it itself; the broker never sees its handle). */
static void kernel_xrcd_open(const char *path)
{
	struct dctx *x = TAILQ_FIRST(&TAILQ_FIRST(&sl_srv.core.domains)->ctxs);
	struct obj_spec spec = { .kind = IBC_OBJ_XRCD };
	struct why why;
	struct obj_made made;
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	spec.xrcd_ino = st.st_ino;
	OK(x->dev->ctx_ops->obj_create(x->dc, &spec, &made, &why));
}

/*
 * A dead client's XRCD open on a verbs device cannot be destroyed (struct
 * ibv_xrcd shows no handle): its record goes, the kernel XRCD stays in the
 * domain's context, unaccounted, and the open stays as an orphan, shown in
 * the name's listing and the domain's count, holding the name (and its
 * inode) until the context closes.
 */
START_TEST(test_xrcd_verbs_dead)
{
	struct ol_client *c = client(0), *other = client(1);
	uint32_t used = 0, unacc = 0, opens = 9, orphaned = 9;
	struct ol_obj srq;
	char path[400];
	uint64_t id;

	sl_srv.core.devices.dev[0].broker_objects = false;
	OK(xrcd_open(c, "v", O_CREAT, &id));
	snprintf(path, sizeof(path), "%s/xrcd/p.1", sl_dir);
	kernel_xrcd_open(path);
	OK(ol_create_mode(c, RDMAB__OBJ_CREATE_REQUEST__MODE__TRACK,
			  IBC_OBJ_SRQ, NULL, 0, NULL, 5, &srq));
	ck_assert_int_eq(access(path, F_OK), 0);
	ck_assert_uint_eq(
		sl_srv.core.domains.tqh_first->used.family[FAMILY_XRCD], 1);
	ck_assert(xrcd_listed(other, "v", &opens, &orphaned));
	ck_assert_uint_eq(opens, 1);
	ck_assert_uint_eq(orphaned, 0);
	ck_assert_uint_eq(domain_xrcd_orphans(other), 0);
	n_seen = 0;
	sl_kill(0);
	run_cleanup(0, 2000);
	ck_assert_ptr_null(sl_owner(0));
	/* The SRQ was destroyed by handle, the XRCD was not. */
	for (size_t i = 0; i < n_seen; i++)
		ck_assert_int_ne(seen[i], IBC_OBJ_XRCD);
	ck_assert_uint_eq(
		sl_srv.core.domains.tqh_first->used.family[FAMILY_XRCD], 0);
	/* Shown where the operator looks, and counted. */
	ck_assert(xrcd_listed(other, "v", &opens, &orphaned));
	ck_assert_uint_eq(opens, 0);
	ck_assert_uint_eq(orphaned, 1);
	ck_assert_uint_eq(domain_xrcd_orphans(other), 1);
	ck_assert_int_eq(sl_log_count("until the context closes"), 1);
	OK(ol_domain(other, other->domain, &used, &unacc));
	ck_assert_uint_eq(unacc, 1);
	ck_assert_uint_eq(used, 1 + 1);
	/* The kernel XRCD keeps the inode: so does the name. */
	ck_assert_int_eq(access(path, F_OK), 0);
	/* The context closes: the kernel frees the XRCD, the orphan goes,
	 * and with it the undeclared name. */
	ol_close(other);
	sl_hang_up(1);
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

/*
 * An administrator removes a declared name whose only opens are orphans:
 * the name goes, and the reply does not claim to free the kernel XRCD: it
 * says how many dead clients' opens keep it in their domains' contexts,
 * which still count them.
 */
START_TEST(test_xrcd_remove_orphaned)
{
	static char cfg_path[400];
	struct ol_client *c, *other;
	Rdmab__XrcdRemoveRequest xr = RDMAB__XRCD_REMOVE_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	uint32_t opens = 9, orphaned = 9;
	Rdmab__DaemonMessage *m;
	char path[400], conf[200];
	uint64_t id;
	FILE *f;

	/* Declared for this process's own domain, and this process an
	 * administrator (its group), whoever runs the test. */
	snprintf(cfg_path, sizeof(cfg_path), "%s/rdmabroker.conf", sl_dir);
	snprintf(conf, sizeof(conf), "[xrcd d]\ndomains = uid-%u\n",
		 (unsigned int)getuid());
	f = fopen(cfg_path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(conf, f);
	ck_assert_int_eq(fclose(f), 0);
	sl_srv.opt.config_path = cfg_path;
	OK(server_reload(&sl_srv));
	sl_srv.core.config.has_admin_group = true;
	sl_srv.core.config.admin_gid = getgid();
	c = client(0);
	other = client(1);
	sl_srv.core.devices.dev[0].broker_objects = false;
	OK(xrcd_open(c, "d", O_CREAT, &id));
	snprintf(path, sizeof(path), "%s/xrcd/d.d", sl_dir);
	kernel_xrcd_open(path);
	sl_kill(0);
	run_cleanup(0, 2000);
	ck_assert(xrcd_listed(other, "d", &opens, &orphaned));
	ck_assert_uint_eq(orphaned, 1);
	xr.name.data = (uint8_t *)"d";
	xr.name.len = 1;
	req.body_case = RDMAB__REQUEST__BODY_XRCD_REMOVE;
	req.xrcd_remove = &xr;
	OK(ol_call(other, &req, &m));
	ck_assert_uint_eq(m->reply->xrcd_remove->orphaned_opens, 1);
	ol_free(m);
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert(!xrcd_listed(other, "d", &opens, &orphaned));
	/* Still the domain's, until its context closes. */
	ck_assert_uint_eq(domain_xrcd_orphans(other), 1);
	ck_assert_int_eq(sl_log_count("keep its kernel XRCD"), 1);
	ol_close(other);
	sl_hang_up(1);
}
END_TEST

/* The XRCD listing's opens of @name as client @c sees them: SRQs and QPs
 * of the first. */
static void xrcd_open_objs(struct ol_client *c, const char *name,
			   uint32_t *ret_srqs, uint32_t *ret_qps)
{
	Rdmab__ListXrcdsRequest lx = RDMAB__LIST_XRCDS_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	const Rdmab__XrcdInfo *x;

	lx.name.data = (uint8_t *)name;
	lx.name.len = strlen(name);
	req.body_case = RDMAB__REQUEST__BODY_LIST_XRCDS;
	req.list_xrcds = &lx;
	OK(ol_call(c, &req, &m));
	ck_assert_uint_eq(m->reply->list_xrcds->n_xrcds, 1);
	x = m->reply->list_xrcds->xrcds[0];
	ck_assert_uint_ge(x->n_opens, 1);
	ck_assert(!x->opens[0]->own);
	*ret_srqs = x->opens[0]->srqs;
	*ret_qps = x->opens[0]->qps;
	ol_free(m);
}

/*
 * On a verbs device the library names what an object uses in its intent,
 * as in a create (a QP's CQs, an XRC SRQ's CQ and XRCD): the broker checks
 * them as it does for a create and keeps what its listings show (the XRCD
 * open's SRQs and target QPs). It refused every intent with uses.
 */
START_TEST(test_intent_uses)
{
	struct ol_client *c = client(0), *other = client(1);
	struct ol_obj cq, srq, qp, rc, oc, z;
	uint64_t uses[3], xid, missing = 999999;
	uint32_t srqs = 9, qps = 9;

	sl_srv.core.devices.dev[0].broker_objects = false;
	OK(ol_create_mode(c, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
			  IBC_OBJ_CQ, NULL, 0, NULL, 0, &cq));
	OK(ol_register(c, cq.id, 11));
	OK(xrcd_open(c, "u", O_CREAT, &xid));
	uses[0] = cq.id;
	uses[1] = xid;
	OK(ol_create_mode(c, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
			  IBC_OBJ_SRQ, uses, 2, NULL, 0, &srq));
	OK(ol_register(c, srq.id, 12));
	uses[0] = 0;
	uses[1] = 0;
	uses[2] = xid;
	OK(ol_create_mode(c, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
			  IBC_OBJ_QP, uses, 3, NULL, 0, &qp));
	OK(ol_register(c, qp.id, 13));
	/* An RC QP on the CQ: the XRCD's counts do not change. */
	uses[0] = cq.id;
	uses[1] = cq.id;
	OK(ol_create_mode(c, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
			  IBC_OBJ_QP, uses, 2, NULL, 0, &rc));
	OK(ol_register(c, rc.id, 14));
	xrcd_open_objs(c, "u", &srqs, &qps);
	ck_assert_uint_eq(srqs, 1);
	ck_assert_uint_eq(qps, 1);
	/* Checked as a create's: another session's object, or none. */
	OK(ol_create_mode(other, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
			  IBC_OBJ_CQ, NULL, 0, NULL, 0, &oc));
	OK(ol_register(other, oc.id, 11));
	ck_assert_int_eq(ol_create_mode(c,
					RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
					IBC_OBJ_QP, &oc.id, 1, NULL, 0, &z),
			 -ENOENT);
	ck_assert_int_eq(ol_create_mode(c,
					RDMAB__OBJ_CREATE_REQUEST__MODE__TRACK,
					IBC_OBJ_QP, &missing, 1, NULL, 15, &z),
			 -ENOENT);
	/* The target QP goes (its owner's unregister): the count follows. */
	OK(ol_destroy(c, qp.id));
	xrcd_open_objs(c, "u", &srqs, &qps);
	ck_assert_uint_eq(srqs, 1);
	ck_assert_uint_eq(qps, 0);
}
END_TEST

/*
 * A dead client's MR on its DM that the cleanup cannot destroy (stuck):
 * the allocator's death asked the free, which the MR blocks, and the DM
 * listing names it as the MR of a client that is gone.
 */
START_TEST(test_dm_stuck_mr_named)
{
	Rdmab__DmAllocRequest da = RDMAB__DM_ALLOC_REQUEST__INIT;
	Rdmab__ObjAttr a = RDMAB__OBJ_ATTR__INIT;
	Rdmab__ListRequest lr = RDMAB__LIST_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct ol_client *c = client(0), *other = client(1);
	const Rdmab__DmInfo *di;
	Rdmab__DaemonMessage *m;
	struct ol_obj mr;
	uint64_t dm_id, hold;
	char want[128];

	da.context_id = c->ctx_id;
	da.length = 4096;
	req.body_case = RDMAB__REQUEST__BODY_DM_ALLOC;
	req.dm_alloc = &da;
	OK(ol_call(c, &req, &m));
	dm_id = m->reply->dm_alloc->dm_id;
	hold = m->reply->dm_alloc->object_id;
	ol_free(m);
	a.mr_length = 4096;
	a.mr_access = IBV_ACCESS_ZERO_BASED;
	OK(ol_create(c, IBC_OBJ_MR, &hold, 1, &a, &mr));
	busy_kind = IBC_OBJ_MR;
	busy_left = UINT32_MAX;
	sl_kill(0);
	run_cleanup(0, 2000);
	req.body_case = RDMAB__REQUEST__BODY_LIST_DMS;
	req.list_dms = &lr;
	OK(ol_call(other, &req, &m));
	ck_assert_uint_eq(m->reply->list_dms->n_dms, 1);
	di = m->reply->list_dms->dms[0];
	ck_assert_uint_eq(di->id, dm_id);
	ck_assert_int_eq(di->state, RDMAB__DM_INFO__STATE__FREE_BLOCKED);
	ck_assert_uint_eq(di->mrs, 1);
	ck_assert_uint_eq(di->n_mr_list, 1);
	ck_assert_uint_eq(di->mr_list[0]->object_id, mr.id);
	ck_assert_uint_eq(di->mr_list[0]->client_id, sl_cl[0].client_id);
	ck_assert(di->mr_list[0]->gone);
	snprintf(want, sizeof(want), "MR %llu of client %llu (gone)",
		 (unsigned long long)mr.id,
		 (unsigned long long)sl_cl[0].client_id);
	ck_assert_msg(strstr(di->blocked_by, want), "%s", di->blocked_by);
	ol_free(m);
}
END_TEST

/* The descriptors the daemon has open now. */
static int count_fds(void)
{
	char path[64];
	int n = 0;

	for (int fd = 0; fd < 4096; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (access(path, F_OK) == 0)
			n++;
	}
	return n;
}

/*
 * One live process that connects, makes an object and hangs up, again
 * and again, leaves a detached owner per session. They watch the process
 * through one pidfd, not one each: else the daemon's descriptors grow with
 * the sessions, charged to nobody, until accept fails for every uid.
 */
START_TEST(test_detached_owners_share_pidfd)
{
	const int rounds = 200;
	int probe = (int)syscall(SYS_pidfd_open, getpid(), 0);
	int before, after;
	struct ol_obj a;

	if (probe < 0)
		return; /* no pidfds: timers watch, no descriptor is held */
	close(probe);
	/* The first session opens the domain's context and the watch. */
	for (int i = 0; i < rounds; i++) {
		struct ol_client *c = client(0);

		OK(ol_cq(c, 4, &a));
		sl_hang_up(0);
		ol_close(&sl_cl[0]);
		sl_pump();
		if (i == 0)
			before = count_fds();
	}
	after = count_fds();
	ck_assert_msg(after == before,
		      "%d more sessions of one live process left the "
		      "daemon holding %d more descriptors",
		      rounds - 1, after - before);
	ck_assert_uint_eq(sl_srv.core.registry->n_objs, (unsigned int)rounds);
}
END_TEST

static int dm_alloc_raw(struct ol_client *c, uint64_t length, uint32_t flags)
{
	Rdmab__DmAllocRequest q = RDMAB__DM_ALLOC_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	int ret;

	q.context_id = c->ctx_id;
	q.length = length;
	q.flags = flags;
	req.body_case = RDMAB__REQUEST__BODY_DM_ALLOC;
	req.dm_alloc = &q;
	ret = ol_call(c, &req, &m);
	if (ret == 0)
		ol_free(m);
	return ret;
}

/* Client @i in a private domain of its own, with the soft context. */
static struct ol_client *private_client(int i)
{
	struct ol_client *c = sl_connect(i);

	OK(ol_hello_private(c));
	OK(ol_open(c));
	return c;
}

/*
 * A uid's private domains draw on its own domain's quotas: sixteen of
 * them must not hold sixteen times the device memory, or the objects,
 * that one uid may have.
 */
START_TEST(test_private_domains_share_quota)
{
	struct ol_client *p0, *p1, *own;

	configure("[defaults]\ndm_bytes = 8192\n");
	p0 = private_client(0);
	p1 = private_client(1);
	own = client(2);
	OK(dm_alloc_raw(p0, 8192, 0));
	ck_assert_int_eq(dm_alloc_raw(p1, 4096, 0), -EDQUOT);
	ck_assert_int_eq(dm_alloc_raw(own, 4096, 0), -EDQUOT);
	/* p0's process is gone: its DM is freed and the quota is back. */
	sl_kill(0);
	ol_close(&sl_cl[0]);
	for (int i = 0; i < 20; i++)
		sl_pump();
	OK(dm_alloc_raw(p1, 4096, 0));
	OK(dm_alloc_raw(own, 4096, 0));
	ck_assert_int_eq(dm_alloc_raw(own, 4096, 0), -EDQUOT);
}
END_TEST

/*
 * Nobody can join a private domain, so a persistent DM there would
 * outlive its session and process with no member to free it, holding the
 * device's memory for every uid: refused.
 */
START_TEST(test_private_persistent_dm_refused)
{
	struct ol_client *c, *o;
	uint64_t all = sl_srv.core.devices.dev[0].caps.max_dm_size;

	/* The uid's domain may have the whole device. */
	configure("[defaults]\ndm_bytes = 100%\n");
	c = private_client(0);

	ck_assert_int_eq(dm_alloc_raw(c, all, DM_PERSISTENT_FLAG), -EINVAL);
	/* A DM of the session itself is fine, and goes with it. */
	OK(dm_alloc_raw(c, all, 0));
	sl_kill(0);
	ol_close(&sl_cl[0]);
	for (int i = 0; i < 20; i++)
		sl_pump();
	o = client(1);
	OK(dm_alloc_raw(o, all, 0));
}
END_TEST

/* A child that waits to be killed; its pid. */
static pid_t sleeper(void)
{
	pid_t pid = tl_spawn_sleeper();

	ck_assert_int_gt(pid, 0);
	return pid;
}

/* Client @i as process @pid: the owner and the session's watch are
 * @pid's, as if that process had connected. */
static struct ol_client *client_as(int i, pid_t pid)
{
	struct ol_client *c;
	struct conn *conn;

	c = sl_connect(i);
	conn = sl_conns[i];
	conn->cl.cred.pid = pid;
	if (conn->pidfd_ev) {
		event_free(conn->pidfd_ev);
		conn->pidfd_ev = NULL;
	}
	if (conn->pidfd >= 0)
		close(conn->pidfd);
	conn->pidfd = -1;
	ck_assert_int_eq(ol_hello(c, NULL), 0);
	ck_assert_int_eq(ol_open(c), 0);
	return c;
}

/* Run the loop until @n records are left, at most @ms. */
static void run_until_n_objs(unsigned int n, int ms)
{
	int64_t deadline = tl_now_ms() + ms;

	while (sl_srv.core.registry->n_objs != n && tl_now_ms() < deadline)
		event_base_loop(sl_srv.core.base,
				EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

/* Run the loop until no owner is left, at most @ms. */
static void run_until_no_owner(int ms)
{
	int64_t deadline = tl_now_ms() + ms;

	while (!TAILQ_EMPTY(&sl_srv.core.registry->owners) &&
	       tl_now_ms() < deadline)
		event_base_loop(sl_srv.core.base,
				EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

/*
 * Processes @a and @b of one uid with a CQ each and their sessions ended,
 * the uid allowed one pidfd: a's watch has it, b's is a timer. The uid's
 * record, held by a's watch.
 */
static struct user *two_at_cap(pid_t a, pid_t b)
{
	struct ol_obj o;
	struct user *u;

	sl_srv.core.config.limits.connections_per_uid = 1;
	OK(ol_cq(client_as(0, a), 4, &o));
	u = sl_conns[0]->cl.user;
	sl_hang_up(0);
	ol_close(&sl_cl[0]);
	ck_assert_uint_eq(u->watches, 1);
	OK(ol_cq(client_as(1, b), 4, &o));
	sl_hang_up(1);
	ol_close(&sl_cl[1]);
	/* b's watch is a timer: no second pidfd. */
	ck_assert_uint_eq(u->watches, 1);
	ck_assert_uint_eq(sl_srv.core.registry->n_objs, 2);
	return u;
}

/*
 * A uid's pidfds for detached owners stop at connections_per_uid; the
 * processes past it are watched by a timer, and their objects still go
 * when they die.
 */
START_TEST(test_watch_pidfds_per_uid)
{
	pid_t a = sleeper(), b = sleeper();

	two_at_cap(a, b);
	kill(b, SIGKILL);
	ck_assert_int_eq(waitpid(b, NULL, 0), b);
	kill(a, SIGKILL);
	ck_assert_int_eq(waitpid(a, NULL, 0), a);
	run_until_no_owner(5000);
	ck_assert_uint_eq(sl_srv.core.registry->n_objs, 0);
	ck_assert_msg(TAILQ_EMPTY(&sl_srv.core.registry->watches),
		      "a watch is left after both processes died");
	ck_assert_uint_eq(sl_srv.core.registry->n_watch_pidfds, 0);
}
END_TEST

/*
 * The session's pidfd says its process has exited, and its pid is another
 * live process's now, which has a watch: the owner does not join it, its
 * objects go at once (the reuse is made up here: a live sleeper's pid, a
 * reaped child's pidfd).
 */
START_TEST(test_dead_session_joins_no_live_watch)
{
	pid_t a = sleeper(), d;
	struct ol_client *c1;
	struct ol_obj o;
	int dfd;

	OK(ol_cq(client_as(0, a), 4, &o));
	sl_hang_up(0);
	ol_close(&sl_cl[0]);
	d = fork();
	ck_assert_int_ge(d, 0);
	if (d == 0)
		_exit(0);
	dfd = (int)syscall(SYS_pidfd_open, d, 0);
	ck_assert_int_eq(waitpid(d, NULL, 0), d);
	if (dfd >= 0) {
		c1 = client_as(1, a);
		sl_conns[1]->pidfd = dfd;
		OK(ol_cq(c1, 4, &o));
		sl_hang_up(1);
		ol_close(&sl_cl[1]);
		for (int i = 0; i < 20; i++)
			event_base_loop(sl_srv.core.base,
					EVLOOP_ONCE | EVLOOP_NONBLOCK);
		ck_assert_msg(sl_srv.core.registry->n_objs == 1,
			      "%u objects left: the dead process's CQ waits "
			      "for live pid %d",
			      sl_srv.core.registry->n_objs, (int)a);
	}
	kill(a, SIGKILL);
	ck_assert_int_eq(waitpid(a, NULL, 0), a);
}
END_TEST

/*
 * A process watched by a timer (its uid was at its cap) gets the pidfd of
 * its next session once the uid has room: no second watch, and no timer.
 */
START_TEST(test_timer_watch_upgraded)
{
	pid_t a = sleeper(), b = sleeper();
	struct obj_watch *w;
	struct ol_obj o;
	struct user *u;

	two_at_cap(a, b);
	/* a goes: its pidfd is free for b's next session. */
	kill(a, SIGKILL);
	ck_assert_int_eq(waitpid(a, NULL, 0), a);
	run_until_n_objs(1, 5000);
	ck_assert_uint_eq(sl_srv.core.registry->n_objs, 1);
	OK(ol_cq(client_as(2, b), 4, &o));
	/* The session's own pidfd, as a real connection of b has. The uid's
	 * record may be a new one: nothing held the old one. */
	sl_conns[2]->pidfd = (int)syscall(SYS_pidfd_open, b, 0);
	ck_assert_int_ge(sl_conns[2]->pidfd, 0);
	u = sl_conns[2]->cl.user;
	sl_hang_up(2);
	ol_close(&sl_cl[2]);
	/* Held by the watch now. */
	ck_assert_uint_eq(u->watches, 1);
	ck_assert_uint_eq(sl_srv.core.registry->n_watch_pidfds, 1);
	w = TAILQ_FIRST(&sl_srv.core.registry->watches);
	ck_assert_ptr_nonnull(w);
	ck_assert_ptr_null(TAILQ_NEXT(w, link));
	ck_assert_int_ge(w->pidfd, 0);
	/* Armed on the pidfd, the timer gone: the exit is seen at once,
	 * well within the timer's second. */
	ck_assert_int_eq(event_get_fd(w->ev), w->pidfd);
	ck_assert(event_pending(w->ev, EV_READ, NULL));
	kill(b, SIGKILL);
	ck_assert_int_eq(waitpid(b, NULL, 0), b);
	run_until_no_owner(300);
	ck_assert_uint_eq(sl_srv.core.registry->n_objs, 0);
	ck_assert(TAILQ_EMPTY(&sl_srv.core.registry->watches));
	ck_assert_uint_eq(sl_srv.core.registry->n_watch_pidfds, 0);
}
END_TEST

/*
 * The daemon's pidfds for watches stop at max_conns in all, whatever the
 * uids' own limits: past it, a timer.
 */
START_TEST(test_watch_pidfds_max_conns)
{
	pid_t a = sleeper(), b = sleeper();
	struct ol_obj o;

	sl_srv.core.max_conns = 1;
	OK(ol_cq(client_as(0, a), 4, &o));
	sl_hang_up(0);
	ol_close(&sl_cl[0]);
	OK(ol_cq(client_as(1, b), 4, &o));
	sl_hang_up(1);
	ol_close(&sl_cl[1]);
	ck_assert_uint_eq(sl_srv.core.registry->n_watch_pidfds, 1);
	kill(a, SIGKILL);
	ck_assert_int_eq(waitpid(a, NULL, 0), a);
	kill(b, SIGKILL);
	ck_assert_int_eq(waitpid(b, NULL, 0), b);
	run_until_no_owner(5000);
	ck_assert_uint_eq(sl_srv.core.registry->n_objs, 0);
	ck_assert_uint_eq(sl_srv.core.registry->n_watch_pidfds, 0);
}
END_TEST

/* A pid seen under another uid is another process: its own watch. */
START_TEST(test_watch_matches_uid)
{
	pid_t a = sleeper();
	struct ol_obj o;
	struct obj_watch *w;

	OK(ol_cq(client_as(0, a), 4, &o));
	sl_hang_up(0);
	ol_close(&sl_cl[0]);
	OK(ol_cq(client_as(1, a), 4, &o));
	w = TAILQ_FIRST(&sl_srv.core.registry->watches);
	ck_assert_ptr_nonnull(w);
	/* The same pid under a uid that is not its watch's. */
	sl_conns[1]->cl.cred.uid = w->uid + 1;
	sl_hang_up(1);
	ol_close(&sl_cl[1]);
	ck_assert_ptr_nonnull(TAILQ_NEXT(w, link));
	kill(a, SIGKILL);
	ck_assert_int_eq(waitpid(a, NULL, 0), a);
	run_until_no_owner(5000);
	ck_assert_uint_eq(sl_srv.core.registry->n_objs, 0);
	ck_assert(TAILQ_EMPTY(&sl_srv.core.registry->watches));
}
END_TEST

static Suite *registry_suite(void)
{
	Suite *s = suite_create("registry");
	TCase *tc;

	tc = tcase_create("cleanup");
	tcase_add_checked_fixture(tc, setup, sl_stop);
	tcase_add_test(tc, test_seqpacket_cut);
	tcase_add_test(tc, test_drain_at_close);
	tcase_add_test(tc, test_drain_registers);
	tcase_add_test(tc, test_order);
	tcase_add_test(tc, test_cleanup_order);
	tcase_add_test(tc, test_slices);
	tcase_add_test(tc, test_busy_retried);
	tcase_add_test(tc, test_stuck);
	tcase_add_test(tc, test_einval_stuck);
	tcase_add_test(tc, test_destroy_gone_dropped);
	tcase_add_test(tc, test_family_hook);
	tcase_add_test(tc, test_two_watchers);
	tcase_add_test(tc, test_slot_destroyer);
	tcase_add_test(tc, test_intents_unaccounted);
	tcase_add_test(tc, test_device_gone);
	tcase_add_test(tc, test_xrcd_verbs_dead);
	tcase_add_test(tc, test_xrcd_remove_orphaned);
	tcase_add_test(tc, test_xrcd_own);
	tcase_add_test(tc, test_intent_uses);
	tcase_add_test(tc, test_dm_stuck_mr_named);
	tcase_add_test(tc, test_detached_owners_share_pidfd);
	tcase_add_test(tc, test_watch_pidfds_per_uid);
	tcase_add_test(tc, test_dead_session_joins_no_live_watch);
	tcase_add_test(tc, test_timer_watch_upgraded);
	tcase_add_test(tc, test_watch_pidfds_max_conns);
	tcase_add_test(tc, test_watch_matches_uid);
	tcase_add_test(tc, test_private_persistent_dm_refused);
	tcase_add_test(tc, test_private_domains_share_quota);
	suite_add_tcase(s, tc);

	tc = tcase_create("dispatch");
	tcase_add_test(tc, test_dispatch_rows);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("registry", registry_suite());
}
