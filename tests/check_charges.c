// SPDX-License-Identifier: MIT
/*
 * Charges (daemon/registry/charge.h), in-process: after a seeded storm over
 * every family (objects, RSS tables, DM allocations, imports and frees,
 * persistent DMs, XRCD opens, sessions in a uid's own, a configured and a
 * private domain, hang-ups and kills) every charge is back at zero, as
 * the daemon's counters say and as `rdmabrokerctl --json domains` shows,
 * and no charge was given back twice. CHARGES_STEPS sets the storm's
 * length (make check-soak runs a long one), CHARGES_SEED its seed.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/families/dm/dm.h"
#include "daemon/registry/charge.h"
#include "daemon/registry/domain.h"
#include "daemon/registry/user.h"
#include "daemon/util/why.h"
#include "include/ibclient.h"
#include "proto/rdmabroker.pb-c.h"
#include "tests/cklib.h"
#include "tests/srvlib.h"
#include "tests/testlib.h"

#define MAX_IDS 64

/* What the storm made that it may use again: per client slot its
 * objects and WQs, and every DM (its domain's name to free it from). */
static struct slot {
	bool live;
	uint64_t ids[MAX_IDS];
	size_t n_ids;
	uint64_t wqs[MAX_IDS];
	size_t n_wqs;
	char domain[64];
} slots[SL_MAX_CLIENTS];

static struct dm_rec {
	uint64_t id;
	uint32_t handle;
	char domain[64];
} dms[MAX_IDS];
static size_t n_dms;

static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static void keep(uint64_t *ids, size_t *n, uint64_t id)
{
	if (*n < MAX_IDS)
		ids[(*n)++] = id;
}

static const char *const conf = "[defaults]\n"
				"objects = 40\nrss_tables = 3\nxrcds = 3\n"
				"[domain lab]\nusers = 0, 4242\n"
				"dm_member_share = 60%\nobjects = 60\n";

static void join(int i)
{
	struct ol_client *c;
	static const char *const names[] = { "lab", NULL, NULL };
	uint32_t k = rnd(3);

	memset(&slots[i], 0, sizeof(slots[i]));
	c = sl_connect(i);
	/* Half the sessions are a user's, not an administrator's: their
	 * persistent DMs count against the uid's bound. */
	if (rnd(2))
		sl_conns[i]->cl.cred.uid = 4242;
	if (k == 2) {
		OK(ol_hello_private(c));
	} else {
		OK(ol_hello(c, names[k]));
	}
	/* Refused when the domain is full: its requests are refused too. */
	ol_open(c);
	snprintf(slots[i].domain, sizeof(slots[i].domain), "%s",
		 sl_conns[i]->cl.domain->name);
	slots[i].live = true;
}

/* A hang-up, or a death: the owner's objects go too (a client that
 * made none has no owner left once its session ends). */
static void leave(int i, bool kill)
{
	struct obj_owner *ow;

	sl_hang_up(i);
	ow = kill ? sl_owner(i) : NULL;
	if (ow)
		objects_owner_dead(ow);
	ol_close(&sl_cl[i]);
	slots[i].live = false;
}

static int dm_call(struct ol_client *c, int body, uint64_t dm_id)
{
	Rdmab__DmIdRequest q = RDMAB__DM_ID_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	int err;

	q.dm_id = dm_id;
	req.body_case = body;
	if (body == RDMAB__REQUEST__BODY_DM_FREE)
		req.dm_free = &q;
	else
		req.dm_unimport = &q;
	err = ol_call(c, &req, &m);
	if (err == 0)
		ol_free(m);
	return err;
}

static void storm_dm_alloc(int i, bool persistent)
{
	Rdmab__DmAllocRequest q = RDMAB__DM_ALLOC_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	struct dm_rec *d;

	q.context_id = sl_cl[i].ctx_id;
	q.length = 4096 * (1 + rnd(4));
	q.flags = persistent ? IBC_DM_PERSISTENT : 0;
	req.body_case = RDMAB__REQUEST__BODY_DM_ALLOC;
	req.dm_alloc = &q;
	if (ol_call(&sl_cl[i], &req, &m) < 0)
		return;
	if (n_dms < MAX_IDS) {
		d = &dms[n_dms++];
		d->id = m->reply->dm_alloc->dm_id;
		d->handle = m->reply->dm_alloc->handle;
		snprintf(d->domain, sizeof(d->domain), "%s", slots[i].domain);
	}
	ol_free(m);
}

static void storm_dm_import(int i)
{
	Rdmab__DmImportRequest q = RDMAB__DM_IMPORT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;

	if (!n_dms)
		return;
	q.context_id = sl_cl[i].ctx_id;
	q.handle = dms[rnd(n_dms)].handle;
	req.body_case = RDMAB__REQUEST__BODY_DM_IMPORT;
	req.dm_import = &q;
	if (ol_call(&sl_cl[i], &req, &m) == 0)
		ol_free(m);
}

static void xrcd_open(int i)
{
	Rdmab__XrcdOpenRequest q = RDMAB__XRCD_OPEN_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	char name[8];

	snprintf(name, sizeof(name), "x%u", rnd(3));
	q.context_id = sl_cl[i].ctx_id;
	q.name.data = (uint8_t *)name;
	q.name.len = strlen(name);
	q.oflags = O_CREAT;
	req.body_case = RDMAB__REQUEST__BODY_XRCD_OPEN;
	req.xrcd_open = &q;
	if (ol_call(&sl_cl[i], &req, &m) < 0)
		return;
	keep(slots[i].ids, &slots[i].n_ids, m->reply->xrcd_open->object_id);
	ol_free(m);
}

static void step(int i)
{
	struct slot *s = &slots[i];
	struct ol_client *c = &sl_cl[i];
	struct ol_obj o, cq;
	uint64_t id;

	if (!s->live) {
		join(i);
		return;
	}
	switch (rnd(11)) {
	case 0:
		if (ol_cq(c, 8, &o) == 0)
			keep(s->ids, &s->n_ids, o.id);
		break;
	case 1:
		if (ol_cq(c, 8, &cq) < 0)
			break;
		keep(s->ids, &s->n_ids, cq.id);
		if (ol_wq(c, cq.id, 8, &o) == 0) {
			keep(s->ids, &s->n_ids, o.id);
			keep(s->wqs, &s->n_wqs, o.id);
		}
		break;
	case 2:
		if (s->n_wqs && ol_rss(c, s->wqs, 1 + rnd(s->n_wqs), &id) == 0)
			keep(s->ids, &s->n_ids, id);
		break;
	case 3:
		storm_dm_alloc(i, false);
		break;
	case 4:
		storm_dm_alloc(i, true);
		break;
	case 5:
		storm_dm_import(i);
		break;
	case 6:
		if (n_dms)
			dm_call(c,
				rnd(2) ? RDMAB__REQUEST__BODY_DM_FREE :
					 RDMAB__REQUEST__BODY_DM_UNIMPORT,
				dms[rnd(n_dms)].id);
		break;
	case 7:
		xrcd_open(i);
		break;
	case 8:
		if (s->n_ids)
			ol_destroy(c, s->ids[rnd(s->n_ids)]);
		break;
	case 9:
		leave(i, false);
		break;
	default:
		leave(i, true);
		break;
	}
}

/* rdmabrokerctl --json domains against the in-process server: the loop
 * turns while it runs. Its output, to be freed. */
static char *ctl_domains(void)
{
	const char *ctl = getenv("RDMABROKERCTL");
	char sock[300], *out = NULL;
	size_t len = 0;
	int p[2], st;
	int64_t t0 = tl_now_ms();
	pid_t pid;

	snprintf(sock, sizeof(sock), "%s/sock", sl_dir);
	OK(tl_pipe(p));
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(p[1], 1);
		execl(ctl && *ctl ? ctl : "./rdmabrokerctl", "rdmabrokerctl",
		      "--json", "--socket", sock, "domains", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	for (;;) {
		char buf[4096];
		ssize_t n = read(p[0], buf, sizeof(buf));

		if (n > 0) {
			out = realloc(out, len + (size_t)n + 1);
			ck_assert_ptr_nonnull(out);
			memcpy(out + len, buf, (size_t)n);
			len += (size_t)n;
			out[len] = '\0';
			continue;
		}
		if (n == 0)
			break;
		sl_pump();
		tl_sleep_ms(1);
		ck_assert_msg(tl_now_ms() - t0 < 20000, "ctl hangs");
	}
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "ctl: %d", st);
	ck_assert_ptr_nonnull(out);
	return out;
}

/* Every quota of every listed domain at 0 but its members: the listing
 * client's own session, in one domain. */
static void assert_listing_zero(void)
{
	char *out = ctl_domains(), *p = out;
	unsigned int members = 0, n = 0;

	while ((p = strstr(p, "\"used\":{"))) {
		uint64_t dm;
		unsigned int x, rss, obj, cl;

		ck_assert_int_eq(sscanf(p,
					"\"used\":{\"dm_bytes\":%" SCNu64
					",\"xrcds\":%u,\"rss_tables\":%u,"
					"\"objects\":%u,\"clients\":%u}",
					&dm, &x, &rss, &obj, &cl),
				 5);
		ck_assert_msg(!dm && !x && !rss && !obj, "%s", out);
		members += cl;
		n++;
		p++;
	}
	ck_assert_msg(n > 0, "%s", out);
	ck_assert_msg(members == 1, "%s", out);
	free(out);
}

static void assert_charges_zero(void)
{
	struct domain *d;
	struct user *u;

	TAILQ_FOREACH(d, &sl_srv.core.domains, link) {
		for (int q = 0; q < CHARGE_QUOTA_COUNT; q++)
			ck_assert_msg(!charge_used(d, q), "%s: %s %" PRIu64,
				      d->name, charge_quota_name(q),
				      charge_used(d, q));
		ck_assert_msg(TAILQ_EMPTY(&dm_domain_of(d)->usages), "%s",
			      d->name);
	}
	for (size_t i = 0; i < sl_srv.core.devices.n; i++)
		ck_assert_uint_eq(sl_srv.core.devices.dev[i].dm_reserved, 0);
	TAILQ_FOREACH(u, &sl_srv.core.users, link) {
		ck_assert_uint_eq(u->n_conns, 0);
		ck_assert_uint_eq(u->private_ctxs, 0);
		ck_assert_uint_eq(dm_user_of(u)->dm_pages, 0);
		ck_assert_uint_eq(dm_user_of(u)->dm_persistent, 0);
		ck_assert_uint_eq(dm_user_of(u)->dm_persistent_bytes, 0);
		ck_assert_uint_eq(u->pinned_fds, 0);
		ck_assert_uint_eq(u->watches, 0);
	}
	ck_assert_uint_eq(sl_srv.tab.n_conns, 0);
	ck_assert_uint_eq(sl_srv.core.registry->n_watch_pidfds, 0);
	ck_assert_uint_eq(charge_underflows(), 0);
	ck_assert_int_eq(sl_log_count("BUG: charge"), 0);
}

/* The quotas the storm charged at some point: each must have been, or
 * the storm proves nothing of it. */
static bool charged[CHARGE_QUOTA_COUNT];
static bool persistent_charged;
static const char *const uid_counts[4] = {
	"unread descriptors",
	"process watches",
	"private contexts",
	"DM pages",
};
static bool uid_charged[4];

static void note_charged(void)
{
	struct domain *d;
	struct user *u;

	TAILQ_FOREACH(d, &sl_srv.core.domains, link)
		for (int q = 0; q < CHARGE_QUOTA_COUNT; q++)
			if (charge_used(d, q))
				charged[q] = true;
	TAILQ_FOREACH(u, &sl_srv.core.users, link) {
		if (dm_user_of(u)->dm_persistent)
			persistent_charged = true;
		if (u->pinned_fds)
			uid_charged[0] = true;
		if (u->watches)
			uid_charged[1] = true;
		if (u->private_ctxs)
			uid_charged[2] = true;
		if (dm_user_of(u)->dm_pages)
			uid_charged[3] = true;
	}
}

static void storm(uint64_t seed, unsigned long steps)
{
	unsigned long underflows = charge_underflows();

	rng = seed ? seed : 1;
	n_dms = 0;
	memset(slots, 0, sizeof(slots));
	sl_start(conf);
	for (unsigned long k = 0; k < steps; k++) {
		step((int)rnd(SL_MAX_CLIENTS));
		sl_pump();
		note_charged();
	}
	for (int i = 0; i < SL_MAX_CLIENTS; i++)
		if (slots[i].live)
			leave(i, rnd(2));
	/* The processes that only hung up die now: what they still held
	 * goes. */
	for (;;) {
		struct obj_owner *ow;

		TAILQ_FOREACH(ow, &sl_srv.core.registry->owners, link)
			if (ow->state != OWNER_DEAD)
				break;
		if (!ow)
			break;
		objects_owner_dead(ow);
		sl_pump();
	}
	/* Persistent DMs outlive their allocators: a member of their
	 * domain frees them. */
	for (size_t k = 0; k < n_dms; k++) {
		if (strncmp(dms[k].domain, "private-", 8) == 0)
			continue;
		unsigned int uid = 0;

		sl_connect(0);
		/* A uid's own domain takes only that uid. */
		if (sscanf(dms[k].domain, "uid-%u", &uid) == 1)
			sl_conns[0]->cl.cred.uid = uid;
		OK(ol_hello(&sl_cl[0], dms[k].domain));
		dm_call(&sl_cl[0], RDMAB__REQUEST__BODY_DM_FREE, dms[k].id);
		sl_hang_up(0);
		ol_close(&sl_cl[0]);
	}
	for (int k = 0; k < 50; k++)
		sl_pump();
	ck_assert_msg(charge_underflows() == underflows, "seed %" PRIu64, seed);
	assert_charges_zero();
	assert_listing_zero();
	sl_stop();
}

START_TEST(test_storm_charges_zero)
{
	const char *s = getenv("CHARGES_STEPS");
	const char *e = getenv("CHARGES_SEED");
	unsigned long steps = s && *s ? strtoul(s, NULL, 0) : 400;
	uint64_t seed = e && *e ? strtoull(e, NULL, 0) : 0x5eed;

	for (int round = 0; round < 3; round++)
		storm(seed + (uint64_t)round * 7919, steps);
	for (int q = 0; q < CHARGE_QUOTA_COUNT; q++)
		/* A family with no quota of its own has no count. */
		ck_assert_msg(
			charged[q] ||
				(q >= CHARGE_FAMILY &&
				 !families[q - CHARGE_FAMILY]->quota_name),
			"the storm never charged %s", charge_quota_name(q));
	ck_assert_msg(persistent_charged,
		      "the storm never charged a uid's persistent DMs");
	for (int k = 0; k < 4; k++)
		ck_assert_msg(uid_charged[k],
			      "the storm never charged a uid's %s",
			      uid_counts[k]);
}
END_TEST

/* What was never charged cannot be given back: the bug is logged and
 * counted, and the count is not clamped to zero. */
START_TEST(test_underflow_seen)
{
	struct domain *d;
	struct charge ch = { 0 };
	unsigned long before;

	sl_start(NULL);
	sl_client(0, NULL, false);
	d = sl_conns[0]->cl.domain;
	before = charge_underflows();
	charge_take(&ch, d, CHARGE_OF(FAMILY_XRCD), 1);
	ck_assert_uint_eq(charge_used(d, CHARGE_OF(FAMILY_XRCD)), 1);
	charge_release(&ch);
	charge_release(&ch);
	ck_assert_uint_eq(charge_used(d, CHARGE_OF(FAMILY_XRCD)), 0);
	ck_assert_uint_eq(charge_underflows(), before);
	charge_sub(d, CHARGE_OF(FAMILY_RSS), 1);
	ck_assert_uint_eq(charge_underflows(), before + 1);
	ck_assert_uint_eq(charge_used(d, CHARGE_OF(FAMILY_RSS)), UINT64_MAX);
	ck_assert_int_eq(sl_log_count("BUG: charge underflow: rss_tables"), 1);
	charge_add(d, CHARGE_OF(FAMILY_RSS), 1);
	sl_stop();
}
END_TEST

/* The counts outside a domain (a uid's, the broker's) are checked as the
 * domain's are: one given back beyond what it holds, or one that wraps,
 * is a bug logged and counted, the count left as the arithmetic leaves
 * it. */
START_TEST(test_outside_counts_checked)
{
	struct user *u;
	unsigned long before;
	uint64_t big = UINT64_MAX;

	sl_start(NULL);
	sl_client(0, NULL, false);
	u = sl_conns[0]->cl.user;
	before = charge_underflows();
	user_charge_watch(u);
	user_uncharge_watch(u);
	ck_assert_uint_eq(charge_underflows(), before);
	user_uncharge_watch(u);
	ck_assert_uint_eq(charge_underflows(), before + 1);
	ck_assert_uint_eq(u->watches, UINT_MAX);
	ck_assert_int_eq(sl_log_count("BUG: charge underflow: process "
				      "watches"),
			 1);
	user_charge_watch(u);
	ck_assert_uint_eq(charge_underflows(), before + 2);
	ck_assert_uint_eq(u->watches, 0);
	ck_assert_int_eq(sl_log_count("BUG: charge overflow: a uid's process "
				      "watches"),
			 1);

	user_pin_fds(u, 2, false);
	ck_assert_uint_eq(charge_underflows(), before + 3);
	ck_assert_int_eq(sl_log_count("BUG: charge underflow: unread "
				      "descriptors"),
			 1);
	u->pinned_fds = 0;
	charge_add_u64(&big, 1, "a test's count");
	ck_assert_uint_eq(charge_underflows(), before + 4);
	ck_assert_uint_eq(big, 0);
	sl_stop();
}
END_TEST

/* A quota's refusal is worded by the charge call: -EDQUOT naming the
 * domain, what it holds and its limit, the caller's clause last; a
 * refused charge counts nothing. */
START_TEST(test_room_names_limit)
{
	struct why why = { 0, "" };
	struct domain *d;
	struct quota limit;
	char want[WHY_MAX];

	sl_start(NULL);
	sl_client(0, NULL, false);
	d = domain_pool(sl_conns[0]->cl.domain);
	limit = d->limit;
	d->limit.objects = d->used.objects;
	d->limit.family[FAMILY_XRCD][0] =
		(uint32_t)charge_used(d, CHARGE_OF(FAMILY_XRCD));
	d->limit.family[FAMILY_RSS][0] =
		(uint32_t)charge_used(d, CHARGE_OF(FAMILY_RSS));
	d->limit.clients = d->used.clients;

	ck_assert_int_eq(
		charge_add_room(d, CHARGE_OBJECTS, 1, ", and more", &why),
		-EDQUOT);
	ck_assert_int_eq(why.err, -EDQUOT);
	snprintf(want, sizeof(want),
		 "domain %s holds %u of its %u objects, "
		 "and more",
		 d->name, d->used.objects, d->used.objects);
	ck_assert_str_eq(why.text, want);
	ck_assert_uint_eq(charge_used(d, CHARGE_OBJECTS), d->limit.objects);

	ck_assert_int_eq(charge_room(d, CHARGE_OF(FAMILY_XRCD), 1, "", &why),
			 -EDQUOT);
	snprintf(want, sizeof(want),
		 "domain %s holds its quota of %" PRIu64 " XRCD "
		 "opens",
		 d->name, d->limit.family[FAMILY_XRCD][0]);
	ck_assert_str_eq(why.text, want);

	ck_assert_int_eq(charge_room(d, CHARGE_OF(FAMILY_RSS), 1, "", &why),
			 -EDQUOT);
	snprintf(want, sizeof(want),
		 "domain %s holds %" PRIu64 " of its %" PRIu64 " RSS tables",
		 d->name, d->limit.family[FAMILY_RSS][0],
		 d->limit.family[FAMILY_RSS][0]);
	ck_assert_str_eq(why.text, want);

	ck_assert_int_eq(charge_add_room(d, CHARGE_CLIENTS, 1, "", &why),
			 -EDQUOT);
	snprintf(want, sizeof(want),
		 "domain %s already has %u clients, its "
		 "quota",
		 d->name, d->limit.clients);
	ck_assert_str_eq(why.text, want);
	ck_assert_uint_eq(charge_used(d, CHARGE_CLIENTS), d->limit.clients);

	/* Room again: charged, and given back. */
	d->limit = limit;
	ck_assert_int_eq(charge_add_room(d, CHARGE_OBJECTS, 2, "", &why), 0);
	charge_sub(d, CHARGE_OBJECTS, 2);
	sl_stop();
}
END_TEST

/* Each family's quota, as its struct family describes it: the QuotaInfo
 * field it names (listings fill it by offsetof) is the field of that name
 * and size, its limit and refusal come as a pair, and a quota with no one
 * limit is refused as one with no count. */
START_TEST(test_family_quotas_described)
{
	const ProtobufCMessageDescriptor *qd = &rdmab__quota_info__descriptor;
	struct why why = { 0, "" };
	unsigned int quotas = 0;
	struct domain *d;

	for (unsigned int i = 0; i < FAMILY_COUNT; i++) {
		const struct family *f = families[i];
		const ProtobufCFieldDescriptor *fd;

		if (!f->quota_name)
			continue;
		quotas++;
		fd = protobuf_c_message_descriptor_get_field_by_name(
			qd, f->quota_name);
		ck_assert_msg(fd, "%s: QuotaInfo has no field %s", f->name,
			      f->quota_name);
		ck_assert_uint_eq(fd->offset, f->quota_info_field);
		ck_assert_uint_eq(f->quota_info_size,
				  fd->type == PROTOBUF_C_TYPE_UINT64 ? 8 : 4);
		ck_assert_msg(!f->quota_limit == !f->quota_refuse,
			      "%s: a limit without a refusal, or the reverse",
			      f->name);
		ck_assert_str_eq(charge_quota_name(CHARGE_OF(i)),
				 f->quota_name);
	}
	ck_assert_uint_gt(quotas, 0);

	sl_start(NULL);
	sl_client(0, NULL, false);
	d = domain_pool(sl_conns[0]->cl.domain);
	for (unsigned int i = 0; i < FAMILY_COUNT; i++) {
		const struct family *f = families[i];

		if (!f->quota_name || f->quota_limit)
			continue;
		ck_assert(!charge_fits(d, CHARGE_OF(i), 0));
		ck_assert_int_eq(charge_room(d, CHARGE_OF(i), 1, "", &why),
				 -EINVAL);
		ck_assert_ptr_nonnull(strstr(why.text, "has no count here"));
	}
	sl_stop();
}
END_TEST

static Suite *charges_suite(void)
{
	Suite *s = suite_create("charges");
	TCase *tc = tcase_create("storm");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_storm_charges_zero);
	tcase_add_test(tc, test_underflow_seen);
	tcase_add_test(tc, test_outside_counts_checked);
	tcase_add_test(tc, test_room_names_limit);
	tcase_add_test(tc, test_family_quotas_described);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("check_charges", charges_suite());
}
