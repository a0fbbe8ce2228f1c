// SPDX-License-Identifier: MIT
/*
 * RSS in-process (a real server on the soft device, clients on
 * socketpairs, the event loop turned by hand): an RSS owner that cannot
 * take a rebuild's Event while the daemon walks the RSS objects, whose
 * unread ObjDestroy of the only WQ of the next table would free that
 * table under the walk if the owner were closed there (a rebuild, and a
 * forced rekey); a part of an RSS object destroyed behind the broker's
 * back (ENOENT at the cleanup); what an old client's Event carries; a
 * connection marked dead.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/server/conn.h"
#include "daemon/registry/ctx.h"
#include "daemon/server/dispatch.h"
#include "daemon/registry/domain.h"
#include "daemon/registry/objects.h"
#include "daemon/server/notify.h"
#include "daemon/server/server.h"
#include "proto/wire.h"
#include "tests/cklib.h"
#include "tests/objlib.h"
#include "tests/srvlib.h"
#include "tests/testlib.h"

/* The WQs of the big table: its rebuild's Event carries ~4 KB of ids. */
#define BIG_WQS 2000

static void srv_setup(void)
{
	sl_start(NULL);
}

/* An RSS object of @c over @n WQs @ids: its id. */
static uint64_t rss_create(struct ol_client *c, const uint64_t *ids, size_t n)
{
	uint64_t id;

	OK(ol_rss(c, ids, n, &id));
	return id;
}

/* An administrator's forced rekey of @c's domain. */
static void rekey_force(struct ol_client *admin, struct ol_client *c)
{
	Rdmab__DomainRekeyRequest dr = RDMAB__DOMAIN_REKEY_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	dr.domain = c->domain;
	dr.force = true;
	req.body_case = RDMAB__REQUEST__BODY_DOMAIN_REKEY;
	req.domain_rekey = &dr;
	OK(ol_request(admin, &req));
}

/* How many RSS objects @c lists. */
static size_t rss_count(struct ol_client *c)
{
	Rdmab__ListRequest lr = RDMAB__LIST_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	size_t n;

	req.body_case = RDMAB__REQUEST__BODY_LIST_RSS;
	req.list_rss = &lr;
	OK(ol_call(c, &req, &m));
	n = m->reply->list_rss->total;
	ol_free(m);
	return n;
}

/* Send @c's ObjDestroy of @id without waiting: the daemon reads it when
 * it reads @c. */
static void destroy_unread(struct ol_client *c, uint64_t id)
{
	Rdmab__ObjDestroyRequest dq = RDMAB__OBJ_DESTROY_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	dq.object_id = id;
	req.body_case = RDMAB__REQUEST__BODY_OBJ_DESTROY;
	req.obj_destroy = &dq;
	OK(ol_send(c, &req));
}

static bool connected(uint64_t client_id)
{
	struct conn *c;

	TAILQ_FOREACH(c, &sl_srv.tab.conns, link)
		if (c->cl.id == client_id)
			return true;
	return false;
}

static bool wq_listed(struct ol_client *c, uint64_t id)
{
	static struct ol_info info[BIG_WQS + 16];
	int n = ol_list(c, 0, NULL, info, BIG_WQS + 16);

	ck_assert_int_ge(n, 0);
	for (int i = 0; i < n && i < BIG_WQS + 16; i++)
		if (info[i].id == id)
			return true;
	return false;
}

/*
 * The table over BIG_WQS of @f's WQs (@wqs), then the table over @e's own
 * WQ (@ret_own): both @e's, in that order, which is the RSS walk's. @e
 * then reads nothing: @f destroys its WQs until the daemon stops reading
 * @e, whose ObjDestroy of its own WQ then waits unread.
 */
static void owner_stops_reading(struct ol_client *f, struct ol_client *e,
				struct conn *ec, uint64_t *wqs,
				uint64_t *ret_own, unsigned int *ret_next)
{
	struct ol_obj cq, wq;
	unsigned int k = 0;
	uint64_t requests;

	OK(ol_cq(f, 64, &cq));
	for (int i = 0; i < BIG_WQS; i++) {
		OK(ol_wq(f, cq.id, 8, &wq));
		wqs[i] = wq.id;
	}
	OK(ol_cq(e, 8, &cq));
	OK(ol_wq(e, cq.id, 8, &wq));
	*ret_own = wq.id;
	rss_create(e, wqs, BIG_WQS);
	rss_create(e, ret_own, 1);
	/* A smaller cap, fewer destroys: the Events pass it sooner. */
	sl_srv.tab.outq_max = 64 * 1024;
	while (ec->reading) {
		ck_assert_uint_lt(k, BIG_WQS / 2);
		OK(ol_destroy(f, wqs[k++]));
	}
	requests = ec->cl.requests;
	destroy_unread(e, *ret_own);
	for (int i = 0; i < 10; i++)
		sl_pump();
	ck_assert_uint_eq(ec->cl.requests, requests);
	*ret_next = k;
}

/*
 * Issue 23 item 1: @f's WQ leaves the big table, whose Event @e cannot
 * take (over the hard cap). Closing @e there replayed its unread
 * ObjDestroy, which destroyed the next table under rss_wq_going's walk
 * (ASan: heap-use-after-free). @e is closed by the loop instead, once,
 * and its request applied then.
 */
START_TEST(test_rebuild_event_closes_owner)
{
	struct ol_client *f = sl_client(0, NULL, true);
	struct ol_client *e = sl_client(1, NULL, true);
	static uint64_t wqs[BIG_WQS];
	uint64_t own;
	unsigned int k;

	owner_stops_reading(f, e, sl_conns[1], wqs, &own, &k);
	ck_assert_uint_eq(rss_count(f), 2);
	/* Until the hard cap: each rebuild queues an Event to @e. */
	while (connected(e->client_id)) {
		ck_assert_uint_lt(k, BIG_WQS - 1);
		OK(ol_destroy(f, wqs[k++]));
	}
	sl_conns[1] = NULL;
	/* Its ObjDestroy was applied at its close: the small table went
	 * with its WQ, the big one stays over the rest. */
	ck_assert(!wq_listed(f, own));
	ck_assert_uint_eq(rss_count(f), 1);
	ck_assert_uint_eq(sl_srv.tab.n_conns, 1);
	/* The daemon goes on: the rest of the WQs leave the big table. */
	OK(ol_destroy(f, wqs[k]));
}
END_TEST

/* The same through a forced rekey (an administrator's): rss_ctx_force
 * walks the RSS objects and tells each owner. */
START_TEST(test_forced_rekey_closes_owner)
{
	struct ol_client *f = sl_client(0, NULL, true);
	struct ol_client *e = sl_client(1, NULL, true);
	struct ol_client *admin = sl_client(2, NULL, false);
	static uint64_t wqs[BIG_WQS];
	struct conn *ec = sl_conns[1];
	uint64_t own;
	unsigned int k;

	owner_stops_reading(f, e, ec, wqs, &own, &k);
	/* Past the hard cap, not yet told: the rekey's Event fails. */
	while (ec->outq_bytes <= 4 * sl_srv.tab.outq_max) {
		ck_assert_uint_lt(k, BIG_WQS - 1);
		OK(ol_destroy(f, wqs[k++]));
	}
	ck_assert(connected(e->client_id));
	rekey_force(admin, f);
	for (int i = 0; i < 10 && connected(e->client_id); i++)
		sl_pump();
	ck_assert(!connected(e->client_id));
	sl_conns[1] = NULL;
	ck_assert_uint_eq(rss_count(admin), 0);
	ck_assert_uint_eq(sl_srv.tab.n_conns, 2);
}
END_TEST

/*
 * A part of an RSS object destroyed behind the broker's back (raw verbs
 * on the shared context): the cleanup of its dead owner gets ENOENT and
 * drops the record. The RSS object must forget it: it kept a pointer to
 * the freed record, stayed "being destroyed" for good, held its quota and
 * refused every destroy of its WQs (EBUSY); a forced rekey then read the
 * freed record.
 */
START_TEST(test_part_gone_behind_back)
{
	struct ol_client *f = sl_client(0, NULL, true);
	struct ol_client *e = sl_client(1, NULL, true);
	struct ol_client *admin = sl_client(2, NULL, false);
	struct why why;
	struct ol_obj cq, wq;
	struct domain *pool = NULL;
	struct obj *o;
	bool found = false;

	OK(ol_cq(f, 8, &cq));
	OK(ol_wq(f, cq.id, 8, &wq));
	rss_create(e, &wq.id, 1);
	TAILQ_FOREACH(o, &sl_srv.core.registry->objs, link) {
		if (o->kind != IBC_OBJ_FLOW || !o->slot[FAMILY_RSS].p)
			continue;
		ck_assert_int_eq(
			o->ctx->dev->ctx_ops->obj_destroy(
				o->ctx->dc, IBC_OBJ_FLOW, o->handle, &why),
			0);
		pool = domain_pool(o->ctx->domain);
		found = true;
	}
	ck_assert(found);
	ck_assert_uint_eq(pool->used.family[FAMILY_RSS], 1);
	sl_kill(1);
	for (int i = 0; i < 100 && sl_owner(1); i++)
		sl_pump();
	ck_assert_ptr_null(sl_owner(1));
	ck_assert_uint_eq(rss_count(f), 0);
	ck_assert_uint_eq(pool->used.family[FAMILY_RSS], 0);
	OK(ol_destroy(f, wq.id));
	rekey_force(admin, f);
}
END_TEST

/* The next Event on @c; replies of requests sent without waiting are
 * skipped. */
static Rdmab__RssRebuiltEvent *next_rss_event(struct ol_client *c,
					      Rdmab__DaemonMessage **ret)
{
	static uint8_t buf[WIRE_MAX_PACKET];
	Rdmab__DaemonMessage *m = NULL;

	for (int i = 0; i < 100 && !m; i++) {
		ssize_t n;

		sl_pump();
		n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n <= 0)
			continue;
		m = rdmab__daemon_message__unpack(NULL, (size_t)n, buf);
		ck_assert_ptr_nonnull(m);
		if (m->kind_case == RDMAB__DAEMON_MESSAGE__KIND_EVENT)
			break;
		rdmab__daemon_message__free_unpacked(m, NULL);
		m = NULL;
	}
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(m->event->body_case, RDMAB__EVENT__BODY_RSS_REBUILT);
	*ret = m;
	return m->event->rss_rebuilt;
}

/*
 * Issue 23 item 4: a dead process's WQs leave a table in one rebuild, one
 * Event, which names them. A client whose hello did not ask for deltas
 * (a library before them) still gets the whole new list.
 */
START_TEST(test_dead_wqs_leave_at_once)
{
	struct ol_client *e = sl_client(0, NULL, true);
	struct ol_client *p = sl_client(1, NULL, true);
	Rdmab__RssRebuiltEvent *ev;
	Rdmab__DaemonMessage *m;
	struct ol_obj cq, wq;
	uint64_t ids[9];
	uint64_t rss;

	OK(ol_cq(e, 8, &cq));
	OK(ol_wq(e, cq.id, 8, &wq));
	ids[0] = wq.id;
	OK(ol_cq(p, 8, &cq));
	for (int i = 1; i < 9; i++) {
		OK(ol_wq(p, cq.id, 8, &wq));
		ids[i] = wq.id;
	}
	rss = rss_create(e, ids, 9);
	sl_kill(1);
	ev = next_rss_event(e, &m);
	ck_assert_uint_eq(m->event->object_id, rss);
	ck_assert(!ev->delta && !ev->destroyed);
	ck_assert_uint_eq(ev->n_wq_ids, 1);
	ck_assert_uint_eq(ev->wq_ids[0], ids[0]);
	ck_assert_uint_eq(ev->n_removed_wq_ids, 8);
	for (int i = 0; i < 8; i++)
		ck_assert_uint_eq(ev->removed_wq_ids[i], ids[i + 1]);
	rdmab__daemon_message__free_unpacked(m, NULL);
	for (int i = 0; i < 100 && sl_owner(1); i++)
		sl_pump();
	ck_assert_ptr_null(sl_owner(1));
	/* One rebuild: no other Event came. */
	ck_assert_int_eq(recv(e->fd, &cq, sizeof(cq), MSG_DONTWAIT), -1);
	ck_assert_int_eq(sl_log_count("rebuilt over 1 WQs without 8"), 1);
	/* The last WQ goes: destroyed, no list. */
	destroy_unread(e, ids[0]);
	ev = next_rss_event(e, &m);
	ck_assert(ev->destroyed && ev->n_wq_ids == 0);
	ck_assert_uint_eq(ev->n_removed_wq_ids, 1);
	rdmab__daemon_message__free_unpacked(m, NULL);
}
END_TEST

/*
 * A client whose hello asked for deltas (rss_delta_events) gets the change
 * alone: the removed WQs, not the new list. What the hello asked is the
 * RSS family's to keep (its hello hook, issue 24 item 9).
 */
START_TEST(test_delta_hello)
{
	Rdmab__HelloRequest hello = RDMAB__HELLO_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct ol_client *e = sl_connect(0);
	struct ol_client *p;
	Rdmab__RssRebuiltEvent *ev;
	Rdmab__DaemonMessage *m;
	struct ol_obj cq, wq;
	uint64_t ids[3];

	hello.library_version = (char *)"check_rss_srv";
	hello.pid = (uint32_t)getpid();
	hello.domain = (char *)"";
	hello.rss_delta_events = true;
	req.body_case = RDMAB__REQUEST__BODY_HELLO;
	req.hello = &hello;
	OK(ol_request(e, &req));
	OK(ol_open(e));
	p = sl_client(1, NULL, true);
	OK(ol_cq(e, 8, &cq));
	OK(ol_wq(e, cq.id, 8, &wq));
	ids[0] = wq.id;
	OK(ol_cq(p, 8, &cq));
	for (int i = 1; i < 3; i++) {
		OK(ol_wq(p, cq.id, 8, &wq));
		ids[i] = wq.id;
	}
	rss_create(e, ids, 3);
	sl_kill(1);
	ev = next_rss_event(e, &m);
	ck_assert(ev->delta && !ev->destroyed);
	ck_assert_uint_eq(ev->n_wq_ids, 0);
	ck_assert_uint_eq(ev->n_removed_wq_ids, 2);
	ck_assert_uint_eq(ev->removed_wq_ids[0], ids[1]);
	ck_assert_uint_eq(ev->removed_wq_ids[1], ids[2]);
	rdmab__daemon_message__free_unpacked(m, NULL);
}
END_TEST

/*
 * conn_kill() itself: marked once, it gets no Event, its request
 * is not served, and the loop's next turn closes it; a server stopped
 * before that turn closes it with the rest (check-asan's leak check).
 */
START_TEST(test_kill)
{
	struct ol_client *a = sl_client(0, NULL, false);
	struct ol_client *b = sl_client(1, NULL, false);
	Rdmab__ShutdownEvent sev = RDMAB__SHUTDOWN_EVENT__INIT;
	Rdmab__Event ev = RDMAB__EVENT__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	uint8_t byte = 0;
	uint64_t served;

	conn_kill(sl_conns[0], NULL);
	conn_kill(sl_conns[0], NULL);
	sev.reason = (char *)"test";
	ev.body_case = RDMAB__EVENT__BODY_SHUTDOWN;
	ev.shutdown = &sev;
	ck_assert_uint_eq(notify_clients(&sl_srv.tab, &ev, NULL, NULL), 1);
	served = sl_srv.core.requests_served;
	req.body_case = RDMAB__REQUEST__BODY_PING;
	req.ping.data = &byte;
	req.ping.len = 1;
	OK(ol_send(a, &req));
	sl_pump();
	sl_conns[0] = NULL;
	ck_assert(!connected(a->client_id));
	ck_assert_uint_eq(sl_srv.core.requests_served, served);
	ck_assert_uint_eq(sl_srv.tab.n_conns, 1);
	/* Neither the Event nor a reply: the end of the connection (reset:
	 * its ping was left unread). */
	errno = 0;
	ck_assert_int_le(recv(a->fd, &byte, 1, 0), 0);
	ck_assert(errno == 0 || errno == ECONNRESET);
	/* b got the Event. */
	ck_assert_int_gt(recv(b->fd, &byte, 1, MSG_DONTWAIT), 0);
	/* The why is logged by the kill that decides. */
	conn_kill(sl_conns[1], "the test ends it");
	ck_assert_int_eq(sl_log_count("the test ends it"), 1);
	sl_conns[1] = NULL;
}
END_TEST

/*
 * An administrator's evict of another session only marks it: its close
 * frees its context and objects, which whoever runs the handler may be
 * walking. The handler returns with the target still connected, told why;
 * the loop's next turn closes it, once.
 */
START_TEST(test_evict_deferred)
{
	static union {
		max_align_t align;
		uint8_t b[4096];
	} mem;
	struct ol_client *t;
	Rdmab__EvictRequest er = RDMAB__EVICT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct reply r = { .msg = RDMAB__REPLY__INIT };
	struct wire_arena arena;
	unsigned int n;
	uint8_t buf[512];

	sl_client(0, NULL, false);
	t = sl_client(1, NULL, true);
	n = sl_srv.tab.n_conns;
	wire_arena_init(&arena, mem.b, sizeof(mem.b), sizeof(mem.b));
	r.arena = &arena;
	er.client_id = t->client_id;
	req.body_case = RDMAB__REQUEST__BODY_EVICT;
	req.evict = &er;
	/* The handler itself (dispatch checks H_ADMIN before it). */
	ck_assert_int_eq(h_admin_evict(&sl_conns[0]->cl, &req, NULL, &r), 0);
	ck_assert(connected(t->client_id));
	ck_assert_uint_eq(sl_srv.tab.n_conns, n);
	ck_assert_int_eq(sl_log_count("evicted by client"), 1);
	/* Told why before the end. */
	ck_assert_int_gt(recv(t->fd, buf, sizeof(buf), MSG_DONTWAIT), 0);
	sl_pump();
	sl_conns[1] = NULL;
	ck_assert(!connected(t->client_id));
	ck_assert_uint_eq(sl_srv.tab.n_conns, n - 1);
	ck_assert_int_eq(recv(t->fd, buf, sizeof(buf), MSG_DONTWAIT), 0);
	/* Closed once: another turn finds nothing to close. */
	sl_pump();
	ck_assert_uint_eq(sl_srv.tab.n_conns, n - 1);
	wire_arena_reset(&arena);
}
END_TEST

static Suite *rss_srv_suite(void)
{
	Suite *s = suite_create("rss-srv");
	TCase *tc;

	tc = tcase_create("in-process");
	tcase_add_checked_fixture(tc, srv_setup, sl_stop);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_rebuild_event_closes_owner);
	tcase_add_test(tc, test_forced_rekey_closes_owner);
	tcase_add_test(tc, test_part_gone_behind_back);
	tcase_add_test(tc, test_dead_wqs_leave_at_once);
	tcase_add_test(tc, test_delta_hello);
	tcase_add_test(tc, test_kill);
	tcase_add_test(tc, test_evict_deferred);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("check_rss_srv", rss_srv_suite());
}
