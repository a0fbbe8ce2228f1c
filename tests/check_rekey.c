// SPDX-License-Identifier: MIT
/*
 * Domain rekey against the real daemon on the soft device, through
 * libibclient and rdmabrokerctl: members that dispatch the Event and open
 * again get a new context in which objects work, a member that does not
 * keeps working in the old one until it does, and the old context's
 * records and quota go once, when its last holder let go (until then it
 * counts: EDQUOT); DMs (persistent, free pending, revoked) and RSS objects
 * make a rekey refuse (EBUSY naming them) unless forced, which destroys
 * them and tells their holders; a second rekey before the first old
 * context went; XRC domains survive; evict --rekey. Against a broker
 * played by the test, the calls that wait for the broker's answer in a
 * context (DM alloc and import, RSS create, XRCD open) while the Event is
 * dispatched. The in-process half is check_rekey_srv.c.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "include/ibclient.h"
#include "tests/cklib.h"
#include "tests/fakebroker.h"
#include "tests/testlib.h"

/* --- against the daemon ------------------------------------------------- */

static struct tl_daemon D;

/* Events a client saw, by type; the last one's object. */
struct seen {
	int n[64];
	uint64_t last_id[64];
	char last_msg[64][256];
};

static void on_event(struct ibc_client *cl, const struct ibc_event *ev,
		     void *arg)
{
	struct seen *s = arg;

	(void)cl;
	if (ev->type < 0 || ev->type >= 64)
		return;
	s->n[ev->type]++;
	s->last_id[ev->type] = ev->object_id;
	snprintf(s->last_msg[ev->type], sizeof(s->last_msg[0]), "%s",
		 ev->message ? ev->message : "");
}

/* @broker: lines of [broker]; @domain: of [domain lab]; @extra: more
 * sections. */
static void start_with(const char *broker, const char *domain,
		       const char *extra)
{
	char conf[4096];
	int ret;

	/* This process is the administrator, whatever its uid; its one
	 * uid may have the device's whole memory. */
	snprintf(conf, sizeof(conf),
		 "[broker]\nadmin_group = %u\n%s[domain lab]\nusers = %u\n"
		 "dm_bytes = 100%%\ndm_member_share = 100%%\n%s%s",
		 (unsigned int)getgid(), broker ? broker : "",
		 (unsigned int)getuid(), domain ? domain : "",
		 extra ? extra : "");
	ret = tl_daemon_start_conf(&D, conf, NULL, NULL, NULL);
	ck_assert_msg(ret == 0, "cannot start the daemon: %s", strerror(-ret));
}

static void start(const char *extra)
{
	start_with(NULL, NULL, extra);
}

static void setup(void)
{
	start(NULL);
}

static void teardown(void)
{
	tl_daemon_stop(&D);
}

/* A client of domain lab (@flags: ibc_connect's), events into @s. */
static struct ibc_client *join(struct seen *s, uint32_t flags)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET |
			     IBC_CONNECT_ATTR_TIMEOUT |
			     IBC_CONNECT_ATTR_EVENT_CB | IBC_CONNECT_ATTR_FLAGS,
		.socket_path = D.sock,
		.timeout_ms = 20000,
		.event_cb = on_event,
		.event_arg = s,
		.flags = flags,
	};
	struct ibc_client *cl;
	int ret;

	if (!(flags & IBC_CONNECT_PRIVATE_DOMAIN)) {
		attr.comp_mask |= IBC_CONNECT_ATTR_DOMAIN;
		attr.domain = "lab";
	}
	memset(s, 0, sizeof(*s));
	ret = ibc_connect(&attr, &cl);
	ck_assert_msg(ret == 0, "connect: %s", ibc_last_error());
	return cl;
}

static struct ibc_ctx *open_ctx(struct ibc_client *cl)
{
	struct ibc_ctx *x;

	ck_assert_msg(ibc_open(cl, NULL, &x) == 0, "open: %s",
		      ibc_last_error());
	return x;
}

static uint64_t ctx_id(struct ibc_ctx *x)
{
	struct ibc_caps caps;

	ck_assert_int_eq(ibc_query(x, &caps, sizeof(caps)), 0);
	return caps.context_id;
}

/* Domain lab as @cl sees it. */
static struct ibc_domain_info lab(struct ibc_client *cl)
{
	struct ibc_domain_info *d, out = { 0 };
	size_t n;

	ck_assert_int_eq(ibc_list_domains(cl, &d, sizeof(*d), &n), 0);
	for (size_t i = 0; i < n; i++)
		if (strcmp(d[i].name, "lab") == 0)
			out = d[i];
	ibc_list_free(d);
	ck_assert_str_eq(out.name, "lab");
	return out;
}

/* Dispatch @cl until it saw an event of @type, at most 5 s. */
static void wait_event(struct ibc_client *cl, struct seen *s, int type)
{
	int64_t deadline = tl_now_ms() + 5000;

	while (!s->n[type] && tl_now_ms() < deadline) {
		ck_assert_int_ge(ibc_dispatch(cl), 0);
		if (!s->n[type])
			tl_sleep_ms(5);
	}
	ck_assert_msg(s->n[type], "no event %d", type);
}

/* Wait until domain lab has @contexts contexts and @objects charged. */
static struct ibc_domain_info wait_lab(struct ibc_client *cl, uint32_t contexts,
				       uint32_t objects)
{
	int64_t deadline = tl_now_ms() + 5000;
	struct ibc_domain_info d;

	for (;;) {
		d = lab(cl);
		if ((d.contexts == contexts && d.used.objects == objects) ||
		    tl_now_ms() > deadline)
			break;
		tl_sleep_ms(5);
	}
	ck_assert_msg(d.contexts == contexts && d.used.objects == objects,
		      "lab: %u contexts (%u old), %u objects (%u "
		      "unaccounted); want %u and %u",
		      d.contexts, d.old_contexts, d.used.objects, d.unaccounted,
		      contexts, objects);
	return d;
}

static size_t n_objects(struct ibc_client *cl)
{
	struct ibc_object_info *o;
	size_t n;

	ck_assert_int_eq(ibc_list_objects(cl, NULL, &o, sizeof(*o), &n), 0);
	ibc_list_free(o);
	return n;
}

/* Two members of lab, a and b, each with its context, and c, which holds
 * none: where most tests start. One per test (a process of its own). */
struct members {
	struct seen sa, sb, sc;
	struct ibc_client *a, *b, *c;
	struct ibc_ctx *xa, *xb;
};

static struct members *members_join(void)
{
	static struct members m;

	m.a = join(&m.sa, 0);
	m.b = join(&m.sb, 0);
	m.c = join(&m.sc, 0);
	m.xa = open_ctx(m.a);
	m.xb = open_ctx(m.b);
	return &m;
}

/* Every client gone (their contexts are closed or go with them). */
static void members_leave(struct members *m)
{
	ibc_disconnect(m->a);
	ibc_disconnect(m->b);
	ibc_disconnect(m->c);
}

/* The end of such a test: both contexts closed, every client gone. */
static void members_part(struct members *m)
{
	ibc_close(m->xa);
	ibc_close(m->xb);
	members_leave(m);
}

/* The daemon again, on another configuration (start_with()'s). */
static void restart_with(const char *broker, const char *domain,
			 const char *extra)
{
	tl_daemon_stop(&D);
	start_with(broker, domain, extra);
}

START_TEST(test_members_reopen)
{
	struct members *t = members_join();
	struct ibc_ctx *na;
	struct ibc_cq *cqa, *cqb, *cqb2, *cq;
	struct ibc_domain_info d;
	uint64_t old = ctx_id(t->xa);

	ck_assert_uint_eq(ctx_id(t->xb), old);
	ck_assert_int_eq(ibc_cq_create(t->xa, 8, &cqa), 0);
	ck_assert_int_eq(ibc_cq_create(t->xb, 8, &cqb), 0);
	/* The PD and two CQs. */
	d = wait_lab(t->c, 1, 3);
	ck_assert_uint_eq(d.rekeys, 0);

	ck_assert_msg(ibc_admin_domain_rekey(t->c, "lab", 0) == 0, "%s",
		      ibc_last_error());
	d = lab(t->c);
	ck_assert_uint_eq(d.rekeys, 1);
	ck_assert_uint_eq(d.old_contexts, 1);

	/* a dispatches: its copy of the old context is closed. */
	wait_event(t->a, &t->sa, IBC_EVENT_DOMAIN_REKEYED);
	ck_assert_uint_eq(t->sa.last_id[IBC_EVENT_DOMAIN_REKEYED], old);
	ck_assert_ptr_nonnull(
		strstr(t->sa.last_msg[IBC_EVENT_DOMAIN_REKEYED], "lab"));
	ck_assert_int_eq(ibc_cq_create(t->xa, 8, &cq), -ESTALE);
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "rekey"));
	{
		struct ibc_xrcd *xr;
		struct ibc_dm *dm;

		ck_assert_int_eq(ibc_dm_alloc(t->xa, 4096, 0, &dm), -ESTALE);
		ck_assert_int_eq(ibc_xrcd_open(t->xa, "n", O_CREAT, &xr),
				 -ESTALE);
		errno = 0;
		ck_assert_ptr_null(ibc_verbs_context(t->xa));
		ck_assert_int_eq(errno, ESTALE);
	}
	ibc_close(t->xa);
	na = open_ctx(t->a);
	ck_assert_uint_ne(ctx_id(na), old);
	ck_assert_int_eq(ibc_cq_create(na, 8, &cq), 0);

	/* b has not dispatched: what it has keeps working in the old
	 * context, which takes nothing new. */
	ck_assert_int_eq(ibc_cq_create(t->xb, 8, &cqb2), -ESTALE);
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "rekey"));
	/* Old: PD, a's CQ (its session let go of it), b's CQ; new: PD and
	 * a's CQ. */
	d = wait_lab(t->c, 2, 5);
	ck_assert_uint_eq(d.old_contexts, 1);

	/* b dispatches: the old context's last holder goes, with its
	 * records and charges, once. */
	wait_event(t->b, &t->sb, IBC_EVENT_DOMAIN_REKEYED);
	d = wait_lab(t->c, 1, 2);
	ck_assert_uint_eq(d.old_contexts, 0);
	ck_assert_uint_eq(d.unaccounted, 0);
	ck_assert_uint_eq(n_objects(t->c), 1);
	/* c held no context: no event for it. */
	ck_assert_int_eq(ibc_dispatch(t->c), 0);
	ck_assert_int_eq(t->sc.n[IBC_EVENT_DOMAIN_REKEYED], 0);
	/* b's next open gets the new one. */
	ibc_close(t->xb);
	t->xb = open_ctx(t->b);
	ck_assert_uint_eq(ctx_id(t->xb), ctx_id(na));
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	ibc_close(t->xb);
	ibc_close(na);
	d = wait_lab(t->c, 0, 0);
	(void)cqa;
	(void)cqb;
	members_leave(t);
}
END_TEST

/* Every call on what a rekey closed says so: -ESTALE, not -ENODEV (the
 * device is there), on the objects of the old context too. (A DM cannot
 * outlive a rekey: the broker refuses, or revokes it first.) */
START_TEST(test_stale_objects)
{
	struct seen sa, sc;
	struct ibc_client *a = join(&sa, 0), *c = join(&sc, 0);
	struct ibc_ctx *xa = open_ctx(a);
	struct ibc_cq *cq, *cq2;

	ck_assert_int_eq(ibc_cq_create(xa, 8, &cq), 0);
	ck_assert_msg(ibc_admin_domain_rekey(c, "lab", 0) == 0, "%s",
		      ibc_last_error());
	wait_event(a, &sa, IBC_EVENT_DOMAIN_REKEYED);
	errno = 0;
	ck_assert_ptr_null(ibc_verbs_cq(cq));
	ck_assert_int_eq(errno, ESTALE);
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "rekey"));
	ck_assert_int_eq(ibc_cq_create(xa, 8, &cq2), -ESTALE);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	ibc_close(xa);
	wait_lab(c, 0, 0);
	ibc_disconnect(a);
	ibc_disconnect(c);
}
END_TEST

/* Another thread destroys its CQs, then closes the context, while the
 * rekey Event is dispatched: each object is destroyed once, the context
 * released once (ASan: no use after free). */
struct racer {
	struct ibc_ctx *x;
	struct ibc_cq *cq[8];
	bool close;
	int err;
};

static void *race_destroy(void *arg)
{
	struct racer *r = arg;

	for (int i = 0; i < 8 && !r->err; i++) {
		int ret, tries = 0;

		/* -EBUSY: the dispatch is destroying it right now. */
		while ((ret = ibc_cq_destroy(r->cq[i])) == -EBUSY &&
		       tries++ < 100000)
			sched_yield();
		r->err = ret;
	}
	if (r->close)
		ibc_close(r->x);
	return NULL;
}

START_TEST(test_destroy_during_rekey)
{
	struct seen sa, sc;
	struct ibc_client *a = join(&sa, 0), *c = join(&sc, 0);

	for (int it = 0; it < 40; it++) {
		struct racer r = { .x = open_ctx(a), .close = it & 1 };
		pthread_t t;

		for (int i = 0; i < 8; i++)
			ck_assert_int_eq(ibc_cq_create(r.x, 8, &r.cq[i]), 0);
		ck_assert_msg(ibc_admin_domain_rekey(c, "lab", 0) == 0, "%s",
			      ibc_last_error());
		memset(&sa, 0, sizeof(sa));
		ck_assert_int_eq(pthread_create(&t, NULL, race_destroy, &r), 0);
		wait_event(a, &sa, IBC_EVENT_DOMAIN_REKEYED);
		ck_assert_int_eq(pthread_join(t, NULL), 0);
		ck_assert_msg(r.err == 0, "destroy: %s", strerror(-r.err));
		if (!r.close)
			ibc_close(r.x);
	}
	wait_lab(c, 0, 0);
	ibc_disconnect(a);
	ibc_disconnect(c);
}
END_TEST

/* Creates in flight while the Event is dispatched: each is refused with
 * -ESTALE or made before the old context closed, then closed with it;
 * none lives on in it. */
struct creator {
	struct ibc_ctx *x;
	struct ibc_cq *kept;
	int done;
	int err;
};

static void *race_create(void *arg)
{
	struct creator *r = arg;

	for (;;) {
		struct ibc_cq *cq;
		int ret = ibc_cq_create(r->x, 8, &cq);

		if (ret == -ESTALE)
			break;
		if (ret < 0) {
			r->err = ret;
			break;
		}
		/* Made while the Event was dispatched, or after. */
		if (__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) {
			r->kept = cq;
			break;
		}
		while ((ret = ibc_cq_destroy(cq)) == -EBUSY)
			sched_yield();
		if (ret < 0) {
			r->err = ret;
			break;
		}
	}
	return NULL;
}

START_TEST(test_create_during_rekey)
{
	struct seen sa, sc;
	struct ibc_client *a = join(&sa, 0), *c = join(&sc, 0);

	for (int it = 0; it < 40; it++) {
		struct creator r = { .x = open_ctx(a) };
		pthread_t t;

		memset(&sa, 0, sizeof(sa));
		ck_assert_int_eq(pthread_create(&t, NULL, race_create, &r), 0);
		ck_assert_msg(ibc_admin_domain_rekey(c, "lab", 0) == 0, "%s",
			      ibc_last_error());
		wait_event(a, &sa, IBC_EVENT_DOMAIN_REKEYED);
		__atomic_store_n(&r.done, 1, __ATOMIC_RELEASE);
		ck_assert_int_eq(pthread_join(t, NULL), 0);
		ck_assert_msg(r.err == 0, "round %d: %s", it, strerror(-r.err));
		if (r.kept) {
			errno = 0;
			ck_assert_ptr_null(ibc_verbs_cq(r.kept));
			ck_assert_msg(errno == ESTALE,
				      "round %d: a CQ made during the rekey "
				      "lives on in the old context (%s)",
				      it, strerror(errno));
			ck_assert_int_eq(ibc_cq_destroy(r.kept), 0);
		}
		ibc_close(r.x);
	}
	wait_lab(c, 0, 0);
	ibc_disconnect(a);
	ibc_disconnect(c);
}
END_TEST

/* A member's session that ends holds the old context no more. */
START_TEST(test_second_rekey)
{
	struct members *t = members_join();
	uint64_t first = ctx_id(t->xa), second;
	struct ibc_domain_info d;

	ck_assert_int_eq(ibc_admin_domain_rekey(t->c, "lab", 0), 0);
	wait_event(t->a, &t->sa, IBC_EVENT_DOMAIN_REKEYED);
	ibc_close(t->xa);
	t->xa = open_ctx(t->a);
	second = ctx_id(t->xa);
	ck_assert_uint_ne(second, first);
	/* b still holds the first, a the second. */
	ck_assert_int_eq(ibc_admin_domain_rekey(t->c, "lab", 0), 0);
	d = wait_lab(t->c, 2, 2);
	ck_assert_uint_eq(d.old_contexts, 2);
	ck_assert_uint_eq(d.rekeys, 2);
	t->sa.n[IBC_EVENT_DOMAIN_REKEYED] = 0;
	wait_event(t->a, &t->sa, IBC_EVENT_DOMAIN_REKEYED);
	ck_assert_uint_eq(t->sa.last_id[IBC_EVENT_DOMAIN_REKEYED], second);
	d = wait_lab(t->c, 1, 1);
	ck_assert_uint_eq(d.old_contexts, 1);
	/* b's session ends without dispatching: the first goes too. */
	ibc_disconnect(t->b);
	wait_lab(t->c, 0, 0);
	ibc_close(t->xa);
	t->xa = open_ctx(t->a);
	/* A new context: ids are never reused. */
	ck_assert_uint_ne(ctx_id(t->xa), second);
	ck_assert_uint_ne(ctx_id(t->xa), first);
	ibc_close(t->xa);
	(void)t->xb;
	ibc_disconnect(t->a);
	ibc_disconnect(t->c);
}
END_TEST

static struct ibc_rss *make_rss(struct ibc_ctx *x)
{
	static const uint8_t key[40] = { 0x6d, 0x5a };
	struct ibc_rss_attr a = {
		.port_num = 1,
		.num_wqs = 1,
		.hash_fields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4,
	};
	struct ibc_rss *r;
	struct ibc_cq *cq;
	struct ibc_wq *wq;
	uint64_t id;

	ck_assert_int_eq(ibc_cq_create(x, 8, &cq), 0);
	ck_assert_int_eq(ibc_wq_create(x, cq, NULL, &wq), 0);
	id = ibc_wq_id(wq);
	a.wq_ids = &id;
	memcpy(a.hash_key, key, sizeof(key));
	a.match.af = AF_INET;
	a.match.l4_proto = IPPROTO_UDP;
	a.match.dst_port = 4791;
	a.match.port_mask = 0xffff;
	ck_assert_msg(ibc_rss_create(x, &a, &r) == 0, "rss: %s",
		      ibc_last_error());
	return r;
}

/* What the broker made in the context cannot move: EBUSY naming it, and
 * --force destroys it, its holders told. */
START_TEST(test_busy_and_force)
{
	struct ibc_dm_attr da = { .length = 4096, .flags = IBC_DM_PERSISTENT };
	struct members *t = members_join();
	struct ibc_dm_info *dl;
	struct ibc_domain_info d;
	struct ibc_dm *dm, *imp, *all;
	struct ibc_rss *rss;
	struct ibc_mr *mr;
	char want[64];
	size_t n;

	ck_assert_msg(ibc_dm_alloc_ex(t->xa, &da, &dm) == 0, "%s",
		      ibc_last_error());
	ck_assert_int_eq(ibc_dm_import(t->xb, ibc_dm_handle(dm), &imp), 0);
	/* An MR keeps the forced free from happening at once. */
	ck_assert_msg(
		ibc_reg_dm_mr(imp, 0, 4096,
			      IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE,
			      &mr) == 0,
		"%s", ibc_last_error());
	rss = make_rss(t->xb);
	ck_assert_int_eq(ibc_admin_domain_rekey(t->c, "lab", 0), -EBUSY);
	snprintf(want, sizeof(want), "DM %llu (persistent)",
		 (unsigned long long)ibc_dm_id(dm));
	ck_assert_msg(strstr(ibc_last_error(), want), "%s", ibc_last_error());
	snprintf(want, sizeof(want), "RSS table %llu",
		 (unsigned long long)ibc_rss_id(rss));
	ck_assert_msg(strstr(ibc_last_error(), want), "%s", ibc_last_error());
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "--force"));
	/* Refused: nothing changed. */
	d = lab(t->c);
	ck_assert_uint_eq(d.rekeys, 0);
	ck_assert_uint_eq(d.old_contexts, 0);
	ck_assert_int_eq(ibc_dispatch(t->a), 0);

	ck_assert_msg(ibc_admin_domain_rekey(t->c, "lab", IBC_REKEY_FORCE) == 0,
		      "%s", ibc_last_error());
	/* The pinned DM stays allocated in the old context, and charged,
	 * until that context goes. */
	d = lab(t->c);
	ck_assert_uint_eq(d.old_contexts, 1);
	ck_assert_uint_eq(d.used.dm_bytes, 4096);
	wait_event(t->a, &t->sa, IBC_EVENT_DOMAIN_REKEYED);
	ck_assert_int_eq(t->sa.n[IBC_EVENT_DM_REVOKED], 1);
	ck_assert_uint_eq(t->sa.last_id[IBC_EVENT_DM_REVOKED], ibc_dm_id(dm));
	wait_event(t->b, &t->sb, IBC_EVENT_DOMAIN_REKEYED);
	ck_assert_int_eq(t->sb.n[IBC_EVENT_DM_REVOKED], 1);
	ck_assert_int_eq(t->sb.n[IBC_EVENT_RSS_DESTROYED], 1);
	ck_assert_uint_eq(t->sb.last_id[IBC_EVENT_RSS_DESTROYED],
			  ibc_rss_id(rss));
	ck_assert_int_eq(ibc_list_dms(t->c, &dl, sizeof(*dl), &n), 0);
	ibc_list_free(dl);
	ck_assert_uint_eq(n, 0);
	d = wait_lab(t->c, 0, 0);
	ck_assert_uint_eq(d.used.dm_bytes, 0);
	ck_assert_uint_eq(d.used.rss_tables, 0);
	ibc_close(t->xa);
	ibc_close(t->xb);
	/* The pinned DM went with its old context: the whole device memory
	 * is free again. */
	t->xa = open_ctx(t->a);
	ck_assert_msg(ibc_dm_alloc(t->xa, 256 * 1024, 0, &all) == 0, "%s",
		      ibc_last_error());
	ck_assert_int_eq(ibc_dm_free(all), 0);
	ibc_close(t->xa);
	members_leave(t);
}
END_TEST

/* A DM whose free is pending, and one in its revoke grace period: both
 * named, both destroyed by --force; the grace period's end finds
 * nothing. */
START_TEST(test_pending_and_revoked)
{
	struct members *t;
	struct ibc_dm *d1, *d2, *i1, *i2;
	struct ibc_client_info ai;
	char want[64];

	restart_with("dm_revoke_grace = 200ms\n", NULL, NULL);
	t = members_join();
	ck_assert_int_eq(ibc_client_info(t->a, &ai, sizeof(ai)), 0);
	ck_assert_int_eq(ibc_dm_alloc(t->xa, 4096, 0, &d1), 0);
	ck_assert_int_eq(ibc_dm_alloc(t->xa, 4096, 0, &d2), 0);
	ck_assert_int_eq(ibc_dm_import(t->xb, ibc_dm_handle(d1), &i1), 0);
	ck_assert_int_eq(ibc_dm_import(t->xb, ibc_dm_handle(d2), &i2), 0);
	snprintf(want, sizeof(want), "DM %llu (client %llu's)",
		 (unsigned long long)ibc_dm_id(d1),
		 (unsigned long long)ai.client_id);
	/* d1: free pending (b holds it); d2: revoked, in its grace. */
	ck_assert_int_eq(ibc_dm_free(d1), 0);
	ck_assert_int_eq(ibc_admin_dm_revoke(t->c, ibc_dm_id(d2)), 0);
	ck_assert_int_eq(ibc_admin_domain_rekey(t->c, "lab", 0), -EBUSY);
	ck_assert_msg(strstr(ibc_last_error(), want), "%s", ibc_last_error());
	ck_assert_msg(ibc_admin_domain_rekey(t->c, "lab", IBC_REKEY_FORCE) == 0,
		      "%s", ibc_last_error());
	wait_event(t->b, &t->sb, IBC_EVENT_DOMAIN_REKEYED);
	wait_event(t->a, &t->sa, IBC_EVENT_DOMAIN_REKEYED);
	/* Past the grace period: the broker still serves. */
	tl_sleep_ms(400);
	ck_assert_int_eq(ibc_ping(t->c, "x", 1), 0);
	wait_lab(t->c, 0, 0);
	ck_assert_uint_eq(lab(t->c).used.dm_bytes, 0);
	members_part(t);
}
END_TEST

/* The old context counts in the quota until it goes: a domain at its
 * objects quota opens its new one once the old one's last holder let
 * go. */
START_TEST(test_quota_of_old_context)
{
	struct ibc_ctx *na;
	struct members *t;
	struct ibc_cq *cq1, *cq2;

	restart_with(NULL, "objects = 3\n", NULL);
	t = members_join();
	ck_assert_int_eq(ibc_cq_create(t->xa, 8, &cq1), 0);
	ck_assert_int_eq(ibc_cq_create(t->xa, 8, &cq2), 0);
	ck_assert_int_eq(ibc_admin_domain_rekey(t->c, "lab", 0), 0);
	wait_event(t->a, &t->sa, IBC_EVENT_DOMAIN_REKEYED);
	ibc_close(t->xa);
	/* b still holds the old context, with a's CQs in it. */
	wait_lab(t->c, 1, 3);
	ck_assert_int_eq(ibc_open(t->a, NULL, &na), -EDQUOT);
	ck_assert_msg(strstr(ibc_last_error(), "lab"), "%s", ibc_last_error());
	wait_event(t->b, &t->sb, IBC_EVENT_DOMAIN_REKEYED);
	wait_lab(t->c, 0, 0);
	na = open_ctx(t->a);
	ck_assert_int_eq(ibc_cq_create(na, 8, &cq1), 0);
	ibc_close(na);
	ibc_close(t->xb);
	members_leave(t);
}
END_TEST

/* The XRC domain is the inode's, held in the broker's own context: a
 * declared name survives, and so does a private one that a member still
 * holds. */
START_TEST(test_xrcd_survives)
{
	struct members *t;
	struct ibc_xrcd *x1, *x2, *t1, *t2, *t3;
	uint64_t ino, tino;

	restart_with(NULL, NULL, "[xrcd keep]\ndomains = lab\n");
	t = members_join();
	ck_assert_int_eq(ibc_xrcd_open(t->xa, "keep", O_CREAT, &x1), 0);
	ino = ibc_xrcd_ino(x1);
	ck_assert_int_eq(ibc_xrcd_open(t->xb, "tmp", O_CREAT, &t1), 0);
	ck_assert_int_eq(ibc_xrcd_open(t->xa, "tmp", 0, &t2), 0);
	tino = ibc_xrcd_ino(t1);
	ck_assert_int_eq(ibc_admin_domain_rekey(t->c, "lab", 0), 0);
	wait_event(t->a, &t->sa, IBC_EVENT_DOMAIN_REKEYED);
	ibc_close(t->xa);
	t->xa = open_ctx(t->a);
	ck_assert_msg(ibc_xrcd_open(t->xa, "keep", 0, &x2) == 0, "%s",
		      ibc_last_error());
	ck_assert_uint_eq(ibc_xrcd_ino(x2), ino);
	/* b, in the old context, still holds "tmp". */
	ck_assert_msg(ibc_xrcd_open(t->xa, "tmp", 0, &t3) == 0, "%s",
		      ibc_last_error());
	ck_assert_uint_eq(ibc_xrcd_ino(t3), tino);
	members_part(t);
}
END_TEST

/* evict --rekey: the evicted process keeps only the old context. */
START_TEST(test_evict_rekey)
{
	struct members *t = members_join();
	struct ibc_client_info bi;
	uint64_t old = ctx_id(t->xa);
	struct ibc_cq *cq;

	ck_assert_int_eq(ibc_client_info(t->b, &bi, sizeof(bi)), 0);
	ck_assert_int_eq(
		ibc_admin_evict_ex(t->c, bi.client_id, IBC_EVICT_FORCE),
		-EINVAL);
	ck_assert_int_eq(ibc_admin_evict_ex(t->c, bi.client_id, 1u << 7),
			 -EINVAL);
	ck_assert_msg(ibc_admin_evict_ex(t->c, bi.client_id, IBC_EVICT_REKEY) ==
			      0,
		      "%s", ibc_last_error());
	wait_event(t->a, &t->sa, IBC_EVENT_DOMAIN_REKEYED);
	ck_assert_uint_eq(t->sa.last_id[IBC_EVENT_DOMAIN_REKEYED], old);
	/* b is gone from the broker; a's next context is new. */
	ck_assert_int_eq(ibc_cq_create(t->xb, 8, &cq), -ECONNRESET);
	ibc_close(t->xa);
	t->xa = open_ctx(t->a);
	ck_assert_uint_ne(ctx_id(t->xa), old);
	wait_lab(t->c, 1, 1);
	members_part(t);
}
END_TEST

/* rdmabrokerctl --socket D.sock ARGS, its output into @out: the exit
 * status. */
static int ctl(char *out, size_t len, const char *args)
{
	const char *path = getenv("RDMABROKERCTL");
	char cmd[1024];
	size_t n;
	FILE *f;
	int st;

	if (!path || !*path)
		path = access("./rdmabrokerctl", X_OK) == 0 ?
			       "./rdmabrokerctl" :
			       "../rdmabrokerctl";
	snprintf(cmd, sizeof(cmd), "%s --socket %s %s 2>&1", path, D.sock,
		 args);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(out, 1, len - 1, f);
	out[n] = '\0';
	st = pclose(f);
	ck_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

START_TEST(test_ctl)
{
	struct seen sa, sc;
	struct ibc_client *a = join(&sa, 0), *c;
	struct ibc_ctx *xa = open_ctx(a);
	struct ibc_client_info ai;
	char out[4096], args[64];

	ck_assert_int_eq(ctl(out, sizeof(out), "domain rekey lab"), 0);
	ck_assert_msg(strstr(out, "domain lab rekeyed"), "%s", out);
	wait_event(a, &sa, IBC_EVENT_DOMAIN_REKEYED);
	ck_assert_int_eq(ctl(out, sizeof(out), "--json domain rekey lab"), 0);
	ck_assert_str_eq(out, "{\"rekeyed\":\"lab\"}\n");
	ck_assert_int_ne(ctl(out, sizeof(out), "domain rekey nosuch"), 0);
	ck_assert_msg(strstr(out, "no domain \"nosuch\""), "%s", out);
	ck_assert_int_eq(ctl(out, sizeof(out), "domain rekey"), 2);
	ck_assert_int_eq(ctl(out, sizeof(out), "domain frob lab"), 2);
	ck_assert_int_eq(ctl(out, sizeof(out), "evict --force 5"), 2);
	ibc_close(xa);
	xa = open_ctx(a);
	ck_assert_int_eq(ibc_client_info(a, &ai, sizeof(ai)), 0);
	snprintf(args, sizeof(args), "evict --rekey %llu",
		 (unsigned long long)ai.client_id);
	ck_assert_int_eq(ctl(out, sizeof(out), args), 0);
	ck_assert_msg(strstr(out, "evicted and its domain rekeyed"), "%s", out);
	c = join(&sc, 0);
	ck_assert_uint_eq(lab(c).rekeys, 3);
	ibc_close(xa);
	ibc_disconnect(a);
	ibc_disconnect(c);
}
END_TEST

/* --- a fork from the event callback -------------------------------------- */

static pid_t cb_child = -1;
static int cb_fds = -1;

/* Descriptors this process has open. */
static int count_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

static void fork_on_event(struct ibc_client *cl, const struct ibc_event *ev,
			  void *arg)
{
	on_event(cl, ev, arg);
	if (ev->type != IBC_EVENT_DOMAIN_REKEYED)
		return;
	cb_child = fork();
	if (cb_child == 0)
		cb_fds = count_fds();
}

/* The child of a fork in the callback returns into the parent's
 * ibc_dispatch: what follows the callback there (closing the rekeyed
 * context) is the parent's, and the child's inherited descriptors (the
 * placeholders) stay as they are. */
START_TEST(test_fork_in_callback)
{
	struct ibc_connect_attr attr = {
		.comp_mask =
			IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_TIMEOUT |
			IBC_CONNECT_ATTR_EVENT_CB | IBC_CONNECT_ATTR_DOMAIN,
		.socket_path = D.sock,
		.timeout_ms = 20000,
		.event_cb = fork_on_event,
		.domain = "lab",
	};
	struct seen sa = { 0 }, sc;
	struct ibc_client *a, *c = join(&sc, 0);
	struct ibc_ctx *xa;
	struct ibc_cq *cq;
	int64_t deadline;
	int status;

	attr.event_arg = &sa;
	ck_assert_msg(ibc_connect(&attr, &a) == 0, "%s", ibc_last_error());
	xa = open_ctx(a);
	ck_assert_int_eq(ibc_cq_create(xa, 8, &cq), 0);
	ck_assert_int_eq(ibc_admin_domain_rekey(c, "lab", 0), 0);
	deadline = tl_now_ms() + 5000;
	while (!sa.n[IBC_EVENT_DOMAIN_REKEYED] && tl_now_ms() < deadline) {
		int n = ibc_dispatch(a);

		if (cb_child == 0)
			_exit(n == 1 && count_fds() == cb_fds ? 0 : 1);
		ck_assert_int_ge(n, 0);
		if (!sa.n[IBC_EVENT_DOMAIN_REKEYED])
			tl_sleep_ms(5);
	}
	ck_assert_int_gt(cb_child, 0);
	ck_assert_int_eq(waitpid(cb_child, &status, 0), cb_child);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the child closed inherited descriptors after the "
		      "callback (status %d)",
		      status);
	/* The parent closed its copy as usual. */
	ck_assert_int_eq(ibc_cq_create(xa, 8, &cq), -ESTALE);
	ibc_close(xa);
	ibc_disconnect(a);
	ibc_disconnect(c);
}
END_TEST

/* --- against a broker played by the test -------------------------------- */

/*
 * The calls that wait for the broker's answer in a context, besides the
 * creates of test_create_during_rekey. The broker delivers the rekey's
 * Event while it holds the answer, and answers once the library released
 * the context or HELD_MS passed: a library that closes its copy of the
 * context under the call releases it at once, one that waits for the call
 * releases it only after the answer.
 */
enum held_call {
	HELD_DM_ALLOC,
	HELD_DM_IMPORT,
	HELD_RSS_CREATE,
	HELD_XRCD_OPEN,
	HELD_CALLS,
};

#define HELD_MS 1000

static const char *const held_names[HELD_CALLS] = {
	[HELD_DM_ALLOC] = "ibc_dm_alloc",
	[HELD_DM_IMPORT] = "ibc_dm_import",
	[HELD_RSS_CREATE] = "ibc_rss_create",
	[HELD_XRCD_OPEN] = "ibc_xrcd_open",
};

static const Rdmab__Request__BodyCase held_bodies[HELD_CALLS] = {
	[HELD_DM_ALLOC] = RDMAB__REQUEST__BODY_DM_ALLOC,
	[HELD_DM_IMPORT] = RDMAB__REQUEST__BODY_DM_IMPORT,
	[HELD_RSS_CREATE] = RDMAB__REQUEST__BODY_RSS_CREATE,
	[HELD_XRCD_OPEN] = RDMAB__REQUEST__BODY_XRCD_OPEN,
};

struct held {
	enum held_call call;
	struct ibc_ctx *x;
	int ret;
	struct ibc_dm *dm;
	struct ibc_rss *rss;
	struct ibc_xrcd *xrcd;
	/* Set by the broker: the context was released before the answer. */
	int released_early;
};

static int held_send_rekeyed(struct fb *fb)
{
	Rdmab__DomainRekeyedEvent dr = RDMAB__DOMAIN_REKEYED_EVENT__INIT;
	Rdmab__Event ev = RDMAB__EVENT__INIT;

	dr.domain = (char *)"uid-fake";
	dr.reason = (char *)"fake: rekeyed";
	ev.object_kind = IBC_OBJ_CONTEXT;
	ev.object_id = FB_CONTEXT_ID;
	ev.body_case = RDMAB__EVENT__BODY_DOMAIN_REKEYED;
	ev.domain_rekeyed = &dr;
	return fb_send_event(fb, &ev);
}

/* The answer the daemon's soft device would give to @call. */
static int held_answer(struct fb *fb, enum held_call call, uint64_t serial)
{
	Rdmab__RssCreateReply rss = RDMAB__RSS_CREATE_REPLY__INIT;
	Rdmab__XrcdOpenReply xo = RDMAB__XRCD_OPEN_REPLY__INIT;
	Rdmab__DmReply dm = RDMAB__DM_REPLY__INIT;
	Rdmab__Reply reply = RDMAB__REPLY__INIT;
	uint64_t wq = 7;
	int fd = -1, ret;

	reply.serial = serial;
	if (call == HELD_DM_ALLOC || call == HELD_DM_IMPORT) {
		fd = memfd_create("held-dm", MFD_CLOEXEC);
		if (fd < 0 || ftruncate(fd, 4096) < 0)
			return fb_fail(fb, "DM memfd: %s", strerror(errno));
		dm.dm_id = 5;
		dm.handle = 9;
		dm.length = 4096;
		dm.has_fd = true;
		dm.allocator = 1;
		dm.object_id = 11;
		reply.body_case = call == HELD_DM_ALLOC ?
					  RDMAB__REPLY__BODY_DM_ALLOC :
					  RDMAB__REPLY__BODY_DM_IMPORT;
		reply.dm_alloc = &dm;
	} else if (call == HELD_RSS_CREATE) {
		rss.rss_id = 12;
		rss.wq_ids = &wq;
		rss.n_wq_ids = 1;
		reply.body_case = RDMAB__REPLY__BODY_RSS_CREATE;
		reply.rss_create = &rss;
	} else {
		/* The soft device does not look at the XRCD's file. */
		fd = memfd_create("held-xrcd", MFD_CLOEXEC);
		if (fd < 0)
			return fb_fail(fb, "XRCD memfd: %s", strerror(errno));
		xo.object_id = 13;
		xo.handle = 3;
		xo.inode = 1;
		reply.body_case = RDMAB__REPLY__BODY_XRCD_OPEN;
		reply.xrcd_open = &xo;
	}
	ret = fb_send_reply(fb, &reply, &fd, fd >= 0 ? 1 : 0);
	if (fd >= 0)
		close(fd);
	return ret;
}

static void script_held(struct fb *fb)
{
	struct held *h = fb->arg;
	int fd = fb_soft_context_fd(FB_CONTEXT_ID);
	struct pollfd p = { .events = POLLIN };
	uint64_t serial, close_serial;

	if (fd < 0) {
		fb_fail(fb, "memfd: %s", strerror(-fd));
		return;
	}
	if (fb_hello(fb, "soft0", "soft") < 0 ||
	    fb_answer_open(fb, "soft0", fd) < 0 ||
	    fb_expect(fb, held_bodies[h->call], &serial, NULL) < 0 ||
	    held_send_rekeyed(fb) < 0)
		goto out;
	p.fd = fb->conn;
	if (poll(&p, 1, HELD_MS) == 1) {
		if (fb_expect(fb, RDMAB__REQUEST__BODY_CLOSE_CONTEXT,
			      &close_serial, NULL) < 0)
			goto out;
		__atomic_store_n(&h->released_early, 1, __ATOMIC_RELEASE);
	}
	if (held_answer(fb, h->call, serial) == 0)
		fb_wait_eof(fb);
out:
	close(fd);
}

static void *held_main(void *arg)
{
	static const uint64_t wq = 7;
	struct ibc_rss_attr ra = {
		.port_num = 1,
		.num_wqs = 1,
		.wq_ids = &wq,
		.hash_fields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4,
	};
	struct held *h = arg;

	switch (h->call) {
	case HELD_DM_ALLOC:
		h->ret = ibc_dm_alloc(h->x, 4096, 0, &h->dm);
		break;
	case HELD_DM_IMPORT:
		h->ret = ibc_dm_import(h->x, 9, &h->dm);
		break;
	case HELD_RSS_CREATE:
		h->ret = ibc_rss_create(h->x, &ra, &h->rss);
		break;
	default:
		h->ret = ibc_xrcd_open(h->x, "held", O_CREAT, &h->xrcd);
		break;
	}
	return NULL;
}

/* What the call made in the old context went with it. */
static void held_check_gone(struct held *h)
{
	const char *name = held_names[h->call];
	struct ibc_flow flow = { .af = AF_INET };
	uint32_t word = 0x5a5a5a5a;

	if (h->dm) {
		ck_assert_msg(ibc_dm_write(h->dm, 0, &word, 4) == -ESTALE,
			      "%s: the DM lives on in the old context (%s)",
			      name, ibc_last_error());
		ck_assert_int_eq(ibc_dm_unimport(h->dm), 0);
	} else if (h->rss) {
		ck_assert_msg(ibc_rss_lookup(h->rss, &flow, NULL, NULL) ==
				      -ENOENT,
			      "%s: the RSS table lives on in the old context "
			      "(%s)",
			      name, ibc_last_error());
		ck_assert_int_eq(ibc_rss_destroy(h->rss), 0);
	} else {
		errno = 0;
		ck_assert_ptr_null(ibc_verbs_xrcd(h->xrcd));
		ck_assert_msg(errno == ESTALE,
			      "%s: the XRCD lives on in the old context (%s)",
			      name, strerror(errno));
		ck_assert_int_eq(ibc_xrcd_close(h->xrcd), 0);
	}
}

/*
 * The rekey Event dispatched while a DM alloc or import, an RSS create or
 * an XRCD open waits for the broker: the library closes the old context
 * only once the call is done, and what the call made goes with it.
 */
START_TEST(test_broker_calls_during_rekey)
{
	for (int c = 0; c < HELD_CALLS; c++) {
		struct held h = { .call = (enum held_call)c };
		struct ibc_client *cl;
		int64_t deadline;
		struct fb fb;
		pthread_t t;
		int n;

		ck_assert_int_eq(fb_start(&fb, script_held, &h), 0);
		ck_assert_int_eq(tl_connect(fb.sock, 5000, &cl), 0);
		ck_assert_msg(ibc_open(cl, NULL, &h.x) == 0, "open: %s",
			      ibc_last_error());
		ck_assert_int_eq(pthread_create(&t, NULL, held_main, &h), 0);
		/* The Event arrives once the broker has the request. */
		deadline = tl_now_ms() + TL_WAIT_MS;
		while ((n = ibc_dispatch(cl)) == 0 && tl_now_ms() < deadline)
			tl_sleep_ms(1);
		ck_assert_msg(n == 1, "%s: dispatch: %d", held_names[c], n);
		ck_assert_int_eq(pthread_join(t, NULL), 0);
		ck_assert_msg(h.ret == 0, "%s: %s", held_names[c],
			      ibc_last_error());
		ck_assert_msg(
			!__atomic_load_n(&h.released_early, __ATOMIC_ACQUIRE),
			"%s: the rekey closed the context while the "
			"call waited for the broker",
			held_names[c]);
		held_check_gone(&h);
		ibc_close(h.x);
		ibc_disconnect(cl);
		ck_assert_msg(fb_stop(&fb) == 0, "%s: broker: %s",
			      held_names[c], fb.why);
	}
}
END_TEST

static Suite *rekey_suite(void)
{
	Suite *s = suite_create("rekey");
	TCase *tc;

	tc = tcase_create("daemon");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_members_reopen);
	tcase_add_test(tc, test_stale_objects);
	tcase_add_test(tc, test_destroy_during_rekey);
	tcase_add_test(tc, test_create_during_rekey);
	tcase_add_test(tc, test_second_rekey);
	tcase_add_test(tc, test_busy_and_force);
	tcase_add_test(tc, test_xrcd_survives);
	tcase_add_test(tc, test_pending_and_revoked);
	tcase_add_test(tc, test_quota_of_old_context);
	tcase_add_test(tc, test_evict_rekey);
	tcase_add_test(tc, test_ctl);
	tcase_add_test(tc, test_fork_in_callback);
	suite_add_tcase(s, tc);

	tc = tcase_create("fake broker");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_broker_calls_during_rekey);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("check_rekey", rekey_suite());
}
