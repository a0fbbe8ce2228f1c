// SPDX-License-Identifier: MIT
/*
 * What another domain holds and does must not show to a member (issue 23
 * items 3, 5 and 6): a listing walks what its caller may see, counted by
 * the daemon's list_visits (deterministic, where a timing would be noise:
 * soak-listings times it), the soft device's handle table shrinks after a
 * storm of creates and destroys, and the ids a member is given do not
 * move by what others made. A server in this process (tests/srvlib.h):
 * the victim, client 0, is demoted to uid 65534 before its hello, so that
 * it is a member of uid-65534 and no administrator; the other domain,
 * "big" (the test's own uid), is client 1's.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "daemon/registry/ctx.h"
#include "daemon/device/device.h"
#include "daemon/util/ids.h"
#include "daemon/server/server.h"
#include "daemon/device/soft/soft-objects.h"
#include "tests/cklib.h"
#include "tests/objlib.h"
#include "tests/srvlib.h"
#include "tests/testlib.h"

#define BIG_OBJECTS 2000
#define BIG_MRS 200

static void setup(void)
{
	char conf[128];

	snprintf(conf, sizeof(conf),
		 "[domain big]\nusers = %u\nobjects = 10000\n",
		 (unsigned int)getuid());
	sl_start(conf);
}

/* Drop client @i's session to uid 65534: a member, no administrator. */
static void demote(int i)
{
	sl_conns[i]->cl.cred.uid = 65534;
	sl_conns[i]->cl.cred.gid = 65534;
	free(sl_conns[i]->cl.groups);
	sl_conns[i]->cl.groups = NULL;
	sl_conns[i]->cl.n_groups = 0;
}

/* Client @i of uid 65534's own domain, with its context: the member
 * whose view is checked (the test's own uid is in domain "big"). */
static struct ol_client *member(int i)
{
	struct ol_client *c = sl_connect(i);

	demote(i);
	OK(ol_hello(c, NULL));
	ck_assert_str_eq(c->domain, "uid-65534");
	OK(ol_open(c));
	return c;
}

static void dm_mr(struct ol_client *c, uint64_t hold)
{
	Rdmab__ObjAttr a = RDMAB__OBJ_ATTR__INIT;
	struct ol_obj mr;

	a.mr_length = 4096;
	a.mr_access = IBV_ACCESS_ZERO_BASED;
	OK(ol_create(c, IBC_OBJ_MR, &hold, 1, &a, &mr));
}

/* What each listing of @c walks, by list_visits; and what it says. */
struct cost {
	uint64_t domains, objects, dms, clients;
	uint32_t n_domains, n_objects, n_dms, mrs, n_clients;
};

static uint64_t visits_of(struct ol_client *c, Rdmab__Request *req,
			  Rdmab__DaemonMessage **m)
{
	uint64_t before = sl_srv.core.list_visits;

	OK(ol_call(c, req, m));
	return sl_srv.core.list_visits - before;
}

static void measure(struct ol_client *c, struct cost *ret)
{
	Rdmab__ListRequest lr = RDMAB__LIST_REQUEST__INIT;
	Rdmab__ListObjectsRequest lo = RDMAB__LIST_OBJECTS_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;

	memset(ret, 0, sizeof(*ret));
	req.body_case = RDMAB__REQUEST__BODY_LIST_DOMAINS;
	req.list_domains = &lr;
	ret->domains = visits_of(c, &req, &m);
	ret->n_domains = m->reply->list_domains->total;
	ol_free(m);
	lo.domain = (char *)"";
	req.body_case = RDMAB__REQUEST__BODY_LIST_OBJECTS;
	req.list_objects = &lo;
	ret->objects = visits_of(c, &req, &m);
	ret->n_objects = m->reply->list_objects->total;
	ol_free(m);
	req.body_case = RDMAB__REQUEST__BODY_LIST_DMS;
	req.list_dms = &lr;
	ret->dms = visits_of(c, &req, &m);
	ret->n_dms = m->reply->list_dms->total;
	if (m->reply->list_dms->n_dms)
		ret->mrs = m->reply->list_dms->dms[0]->mrs;
	ol_free(m);
	req.body_case = RDMAB__REQUEST__BODY_LIST_CLIENTS;
	req.list_clients = &lr;
	ret->clients = visits_of(c, &req, &m);
	ret->n_clients = m->reply->list_clients->total;
	ol_free(m);
}

/*
 * A member's ListDomains, ListObjects, ListDms and ListClients walk the
 * same records whatever another domain holds: 2,000 objects, a DM with
 * 200 MRs, three clients. Before the per-domain lists, each walked the
 * whole registry (ListDomains, ListObjects), every MR of the broker per
 * DM (ListDms) or every connection (ListClients).
 */
START_TEST(test_listing_walks_own_domain)
{
	struct ol_client *v = member(0), *big = sl_client(1, "big", true);
	struct cost before, after;
	struct ol_obj o;
	uint64_t dm, hold;

	for (int i = 0; i < 5; i++)
		OK(ol_cq(v, 4, &o));
	OK(ol_dm_alloc(v, 4096, &dm, &hold));
	dm_mr(v, hold);
	dm_mr(v, hold);
	measure(v, &before);
	ck_assert_uint_eq(before.n_domains, 1);
	ck_assert_uint_eq(before.n_dms, 1);
	ck_assert_uint_eq(before.mrs, 2);
	ck_assert_uint_gt(before.domains, 0);
	ck_assert_uint_gt(before.dms, 0);

	for (int i = 0; i < BIG_OBJECTS; i++)
		OK(ol_cq(big, 4, &o));
	OK(ol_dm_alloc(big, 4096, &dm, &hold));
	for (int i = 0; i < BIG_MRS; i++)
		dm_mr(big, hold);
	sl_client(2, "big", false);
	sl_client(3, "big", false);

	measure(v, &after);
	ck_assert_uint_eq(after.n_domains, before.n_domains);
	ck_assert_uint_eq(after.n_objects, before.n_objects);
	ck_assert_uint_eq(after.n_dms, before.n_dms);
	ck_assert_uint_eq(after.mrs, before.mrs);
	ck_assert_uint_eq(after.n_clients, before.n_clients);
	ck_assert_msg(after.domains == before.domains,
		      "ListDomains walked %" PRIu64 " records, %" PRIu64
		      " before another domain made %d objects",
		      after.domains, before.domains, BIG_OBJECTS);
	ck_assert_msg(after.objects == before.objects,
		      "ListObjects walked %" PRIu64 " records, %" PRIu64
		      " before",
		      after.objects, before.objects);
	ck_assert_msg(after.dms == before.dms,
		      "ListDms walked %" PRIu64 " records, %" PRIu64 " before "
		      "another domain's DM got %d MRs",
		      after.dms, before.dms, BIG_MRS);
	ck_assert_msg(after.clients == before.clients,
		      "ListClients walked %" PRIu64 " records, %" PRIu64
		      " before another domain got 2 more clients",
		      after.clients, before.clients);
}
END_TEST

/* The DM listing finds an MR on its DM's list until the MR goes, and a
 * DM that goes first leaves its MRs' records whole. */
START_TEST(test_dm_mr_list_follows)
{
	Rdmab__ListRequest lr = RDMAB__LIST_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct ol_client *v = member(0);
	Rdmab__DaemonMessage *m;
	struct ol_info objs[8];
	uint64_t dm, hold, mr_id;
	int n;

	OK(ol_dm_alloc(v, 4096, &dm, &hold));
	dm_mr(v, hold);
	n = ol_list(v, 0, NULL, objs, 8);
	ck_assert_int_eq(n, 2);
	mr_id = objs[0].kind == IBC_OBJ_MR ? objs[0].id : objs[1].id;
	req.body_case = RDMAB__REQUEST__BODY_LIST_DMS;
	req.list_dms = &lr;
	OK(ol_call(v, &req, &m));
	ck_assert_uint_eq(m->reply->list_dms->dms[0]->mrs, 1);
	ck_assert_uint_eq(m->reply->list_dms->dms[0]->mr_list[0]->object_id,
			  mr_id);
	ol_free(m);
	OK(ol_destroy(v, mr_id));
	OK(ol_call(v, &req, &m));
	ck_assert_uint_eq(m->reply->list_dms->dms[0]->mrs, 0);
	ol_free(m);
}
END_TEST

/*
 * The soft device's handle table follows what the context holds: 5,000
 * CQs made and destroyed leave it at its first size, and a handle list
 * walks no further than the last record of its kind.
 */
START_TEST(test_soft_table_shrinks)
{
	struct device_config cfg = { .soft_max_dm_size = 4096 };
	static struct device_list list;
	struct obj_spec cq = { .kind = IBC_OBJ_CQ, .attr = { .cqe = 4 } };
	static uint32_t handles[5000];
	struct why why;
	struct soft_objs o;
	struct obj_made made;
	uint32_t first_cap, h[4];

	ck_assert_int_eq(device_soft_probe(&cfg, &list), 0);
	ck_assert_int_eq(soft_objs_init(&o, list.dev[0].priv, &list.dev[0]), 0);
	first_cap = o.cap;
	for (int i = 0; i < 5000; i++) {
		ck_assert_int_eq(soft_objs_create(&o, &cq, &made, &why), 0);
		handles[i] = made.handle;
	}
	ck_assert_uint_ge(o.cap, 5000);
	/* Destroyed from the bottom up but the last: the table keeps room
	 * for the one left at the top. */
	for (int i = 0; i < 4999; i++)
		ck_assert_int_eq(
			soft_objs_destroy(&o, IBC_OBJ_CQ, handles[i], &why), 0);
	ck_assert_uint_ge(o.cap, 5000);
	ck_assert_int_eq(soft_objs_handles(&o, IBC_OBJ_CQ, h, 4), 1);
	ck_assert_uint_eq(h[0], handles[4999]);
	ck_assert_int_eq(soft_objs_destroy(&o, IBC_OBJ_CQ, handles[4999], &why),
			 0);
	ck_assert_uint_eq(o.cap, first_cap);
	ck_assert_uint_eq(o.top, 1);
	ck_assert_int_eq(soft_objs_handles(&o, IBC_OBJ_CQ, h, 4), 0);
	ck_assert_int_eq(soft_objs_handles(&o, IBC_OBJ_PD, h, 4), 1);
	/* Handles are the lowest free again. */
	ck_assert_int_eq(soft_objs_create(&o, &cq, &made, &why), 0);
	ck_assert_uint_eq(made.handle, 1);
	/* Imports' records go from a shrinking table too. */
	for (int i = 0; i < 300; i++) {
		uint64_t imp;

		ck_assert_int_eq(soft_objs_import_open(&o, 10, &imp), 0);
		handles[i] = (uint32_t)imp;
	}
	ck_assert_uint_ge(o.cap, 3000);
	for (int i = 0; i < 300; i++)
		soft_objs_import_close(&o, handles[i]);
	ck_assert_uint_eq(o.cap, first_cap);
	ck_assert_int_eq(soft_objs_handles(&o, DEVICE_INTERNAL, h, 4), 0);
	/* One past the kinds is no type: the sentinel is a value of its
	 * own, so a 14th kind cannot list the provider's records. */
	ck_assert_int_eq(soft_objs_handles(&o, OBJ_KIND_COUNT, h, 4), -EINVAL);
	soft_objs_fini(&o);
	device_list_close(&list);
}
END_TEST

/* --- ids ------------------------------------------------------------------ */

/* Of @n ids, how many are above the one before: a counter's all are. */
static unsigned int rises(const uint64_t *ids, unsigned int n)
{
	unsigned int up = 0;

	for (unsigned int i = 1; i < n; i++)
		up += ids[i] > ids[i - 1];
	return up;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The permutation: 50,000 ids, every one in [1, 2^48), none twice, in
 * no order a counter shows. */
START_TEST(test_ids_unique)
{
	enum { N = 50000 };
	struct id_space s;
	uint64_t *ids = malloc(N * sizeof(*ids));
	unsigned int up;

	ck_assert_ptr_nonnull(ids);
	ck_assert_int_eq(id_space_init(&s), 0);
	for (unsigned int i = 0; i < N; i++) {
		ck_assert_int_eq(id_next(&s, &ids[i]), 0);
		ck_assert_uint_ne(ids[i], 0);
		ck_assert_uint_lt(ids[i], UINT64_C(1) << ID_BITS);
		ck_assert_uint_eq(ids[i], id_of(&s, i + 1));
	}
	up = rises(ids, N);
	/* Half rise, give or take: 0.48 to 0.52 of 50,000 is 18 standard
	 * deviations wide. */
	ck_assert_msg(up > N * 48 / 100 && up < N * 52 / 100,
		      "%u of %d ids rose", up, N);
	qsort(ids, N, sizeof(*ids), cmp_u64);
	for (unsigned int i = 1; i < N; i++)
		ck_assert_uint_ne(ids[i], ids[i - 1]);
	/* The end of the space: refused, never wrapped to a reused id. */
	s.count = (UINT64_C(1) << ID_BITS) - 2;
	ck_assert_int_eq(id_next(&s, &ids[0]), 0);
	ck_assert_int_eq(id_next(&s, &ids[0]), -ENOSPC);
	free(ids);
}
END_TEST

/* Client @i in a private domain of its own, a member, with its context:
 * a new context id. */
static struct ol_client *private_member(int i)
{
	struct ol_client *c = sl_connect(i);

	demote(i);
	OK(ol_hello_private(c));
	OK(ol_open(c));
	return c;
}

/* Two ids a counter would have put @made apart: far apart instead (a
 * 48-bit permutation's two values are within 2^20 of each other with
 * odds of 2^-27). */
static void apart(const char *what, uint64_t a, uint64_t b, unsigned int made)
{
	uint64_t d = a > b ? a - b : b - a;

	ck_assert_msg(d > (UINT64_C(1) << 20),
		      "%s ids %" PRIu64 " and %" PRIu64 " are %" PRIu64
		      " apart, with %u made in between",
		      what, a, b, d, made);
	ck_assert_uint_lt(a, UINT64_C(1) << 53);
	ck_assert_uint_lt(b, UINT64_C(1) << 53);
}

/*
 * What a member is given does not move by what another domain made: its
 * object, client, DM and context ids, taken before and after the other
 * domain made 9 objects, 6 clients, 2 DMs and 2 contexts, are no counter's
 * (with counters each would differ by what was made in between), and the
 * rises of 64 of its object ids in a row are no counter's either.
 */
START_TEST(test_ids_do_not_count_others)
{
	struct ol_client *v = member(0), *big = sl_client(1, "big", true);
	uint64_t obj[2], cli[2], dm[2], ctx[2], hold, seq[64];
	struct ol_obj o;

	OK(ol_cq(v, 4, &o));
	obj[0] = o.id;
	cli[0] = v->client_id;
	ctx[0] = v->ctx_id;
	OK(ol_dm_alloc(v, 4096, &dm[0], &hold));

	for (int i = 0; i < 9; i++)
		OK(ol_cq(big, 4, &o));
	for (int i = 0; i < 6; i++) {
		sl_client(2, "big", false);
		sl_hang_up(2);
		ol_close(&sl_cl[2]);
	}
	OK(ol_dm_alloc(big, 4096, NULL, NULL));
	OK(ol_dm_alloc(big, 4096, NULL, NULL));

	OK(ol_cq(v, 4, &o));
	obj[1] = o.id;
	OK(ol_dm_alloc(v, 4096, &dm[1], &hold));
	v = private_member(2);
	cli[1] = v->client_id;
	ctx[1] = v->ctx_id;

	apart("object", obj[0], obj[1], 1 + 9 + 2);
	apart("client", cli[0], cli[1], 1 + 6);
	apart("DM", dm[0], dm[1], 2);
	apart("context", ctx[0], ctx[1], 1);

	v = &sl_cl[0];
	for (int i = 0; i < 64; i++) {
		OK(ol_cq(v, 4, &o));
		seq[i] = o.id;
		ck_assert_uint_lt(seq[i], UINT64_C(1) << 53);
	}
	/* A counter rises 63 times; a permutation's 64 ids rise as coins
	 * fall: 63 (or 0) has odds of 2^-62. */
	ck_assert_uint_lt(rises(seq, 64), 63);
	ck_assert_uint_gt(rises(seq, 64), 0);
}
END_TEST

static Suite *listings_suite(void)
{
	Suite *s = suite_create("listings");
	TCase *tc;

	tc = tcase_create("cost");
	tcase_add_checked_fixture(tc, setup, sl_stop);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_listing_walks_own_domain);
	tcase_add_test(tc, test_dm_mr_list_follows);
	tcase_add_test(tc, test_ids_do_not_count_others);
	suite_add_tcase(s, tc);
	tc = tcase_create("units");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_soft_table_shrinks);
	tcase_add_test(tc, test_ids_unique);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("listings", listings_suite());
}
