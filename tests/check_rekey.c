// SPDX-License-Identifier: MIT
/*
 * Domain rekey. Against the real daemon on the soft device, through
 * libibclient: members that dispatch the Event and open again get a new
 * context in which objects work, a member that does not keeps working in
 * the old one until it does, and the old context's records and quota go
 * once, when its last holder let go; DMs and RSS objects make a rekey
 * refuse (EBUSY naming them) unless forced, which destroys them and tells
 * their holders; a second rekey before the first old context went; an XRC
 * domain survives; evict --rekey. In-process (a real server, clients on
 * socketpairs): non-administrators are refused, unknown and private
 * domains answer alike, and the automatic rekey once a context's
 * unaccounted objects (dead clients' intents) reach auto_rekey_unaccounted.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>
#include <infiniband/verbs.h>

#include "daemon/conf.h"
#include "daemon/conn.h"
#include "daemon/ctx.h"
#include "daemon/domain.h"
#include "daemon/log.h"
#include "daemon/objects.h"
#include "daemon/server.h"
#include "tests/cklib.h"
#include "tests/objlib.h"
#include "tests/testlib.h"

/* --- against the daemon ------------------------------------------------- */

static struct tl_daemon D;
static char conf_path[4096];

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
	const char *args[] = { "--config", conf_path, NULL };
	char *dir = tl_mkdtemp();
	FILE *f;
	int ret;

	ck_assert_ptr_nonnull(dir);
	snprintf(conf_path, sizeof(conf_path), "%s/rdmabroker.conf", dir);
	free(dir);
	f = fopen(conf_path, "w");
	ck_assert_ptr_nonnull(f);
	/* This process is the administrator, whatever its uid. */
	fprintf(f, "[broker]\nadmin_group = %u\n%s[domain lab]\nusers = %u\n%s%s",
		(unsigned int)getgid(), broker ? broker : "",
		(unsigned int)getuid(), domain ? domain : "",
		extra ? extra : "");
	ck_assert_int_eq(fclose(f), 0);
	ret = tl_daemon_start(&D, args);
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
static struct ibc_domain_info wait_lab(struct ibc_client *cl,
				       uint32_t contexts, uint32_t objects)
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
		      d.contexts, d.old_contexts, d.used.objects,
		      d.unaccounted, contexts, objects);
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

START_TEST(test_members_reopen)
{
	struct seen sa, sb, sc;
	struct ibc_client *a = join(&sa, 0), *b = join(&sb, 0);
	struct ibc_client *c = join(&sc, 0);
	struct ibc_ctx *xa = open_ctx(a), *xb = open_ctx(b), *na;
	struct ibc_cq *cqa, *cqb, *cqb2, *cq;
	struct ibc_domain_info d;
	uint64_t old = ctx_id(xa);

	ck_assert_uint_eq(ctx_id(xb), old);
	ck_assert_int_eq(ibc_cq_create(xa, 8, &cqa), 0);
	ck_assert_int_eq(ibc_cq_create(xb, 8, &cqb), 0);
	/* The PD and two CQs. */
	d = wait_lab(c, 1, 3);
	ck_assert_uint_eq(d.rekeys, 0);

	ck_assert_msg(ibc_admin_domain_rekey(c, "lab", 0) == 0, "%s",
		      ibc_last_error());
	d = lab(c);
	ck_assert_uint_eq(d.rekeys, 1);
	ck_assert_uint_eq(d.old_contexts, 1);

	/* a dispatches: its copy of the old context is closed. */
	wait_event(a, &sa, IBC_EVENT_DOMAIN_REKEYED);
	ck_assert_uint_eq(sa.last_id[IBC_EVENT_DOMAIN_REKEYED], old);
	ck_assert_ptr_nonnull(strstr(sa.last_msg[IBC_EVENT_DOMAIN_REKEYED],
				     "lab"));
	ck_assert_int_eq(ibc_cq_create(xa, 8, &cq), -ESTALE);
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "rekey"));
	ibc_close(xa);
	na = open_ctx(a);
	ck_assert_uint_ne(ctx_id(na), old);
	ck_assert_int_eq(ibc_cq_create(na, 8, &cq), 0);

	/* b has not dispatched: it works on in the old context. */
	ck_assert_msg(ibc_cq_create(xb, 8, &cqb2) == 0, "%s",
		      ibc_last_error());
	/* Old: PD, a's CQ (its session let go of it), b's two CQs; new: PD
	 * and a's CQ. */
	d = wait_lab(c, 2, 6);
	ck_assert_uint_eq(d.old_contexts, 1);

	/* b dispatches: the old context's last holder goes, with its
	 * records and charges, once. */
	wait_event(b, &sb, IBC_EVENT_DOMAIN_REKEYED);
	d = wait_lab(c, 1, 2);
	ck_assert_uint_eq(d.old_contexts, 0);
	ck_assert_uint_eq(d.unaccounted, 0);
	ck_assert_uint_eq(n_objects(c), 1);
	/* c held no context: no event for it. */
	ck_assert_int_eq(ibc_dispatch(c), 0);
	ck_assert_int_eq(sc.n[IBC_EVENT_DOMAIN_REKEYED], 0);
	/* b's next open gets the new one. */
	ibc_close(xb);
	xb = open_ctx(b);
	ck_assert_uint_eq(ctx_id(xb), ctx_id(na));
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	ibc_close(xb);
	ibc_close(na);
	d = wait_lab(c, 0, 0);
	(void)cqa;
	(void)cqb;
	ibc_disconnect(a);
	ibc_disconnect(b);
	ibc_disconnect(c);
}
END_TEST

/* A member's session that ends holds the old context no more. */
START_TEST(test_second_rekey)
{
	struct seen sa, sb, sc;
	struct ibc_client *a = join(&sa, 0), *b = join(&sb, 0);
	struct ibc_client *c = join(&sc, 0);
	struct ibc_ctx *xa = open_ctx(a), *xb = open_ctx(b);
	uint64_t first = ctx_id(xa), second;
	struct ibc_domain_info d;

	ck_assert_int_eq(ibc_admin_domain_rekey(c, "lab", 0), 0);
	wait_event(a, &sa, IBC_EVENT_DOMAIN_REKEYED);
	ibc_close(xa);
	xa = open_ctx(a);
	second = ctx_id(xa);
	ck_assert_uint_ne(second, first);
	/* b still holds the first, a the second. */
	ck_assert_int_eq(ibc_admin_domain_rekey(c, "lab", 0), 0);
	d = wait_lab(c, 2, 2);
	ck_assert_uint_eq(d.old_contexts, 2);
	ck_assert_uint_eq(d.rekeys, 2);
	sa.n[IBC_EVENT_DOMAIN_REKEYED] = 0;
	wait_event(a, &sa, IBC_EVENT_DOMAIN_REKEYED);
	ck_assert_uint_eq(sa.last_id[IBC_EVENT_DOMAIN_REKEYED], second);
	d = wait_lab(c, 1, 1);
	ck_assert_uint_eq(d.old_contexts, 1);
	/* b's session ends without dispatching: the first goes too. */
	ibc_disconnect(b);
	wait_lab(c, 0, 0);
	ibc_close(xa);
	xa = open_ctx(a);
	ck_assert_uint_gt(ctx_id(xa), second);
	ibc_close(xa);
	(void)xb;
	ibc_disconnect(a);
	ibc_disconnect(c);
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
	struct ibc_dm_attr da = { .length = 4096,
				  .flags = IBC_DM_PERSISTENT };
	struct seen sa, sb, sc;
	struct ibc_client *a = join(&sa, 0), *b = join(&sb, 0);
	struct ibc_client *c = join(&sc, 0);
	struct ibc_ctx *xa = open_ctx(a), *xb = open_ctx(b);
	struct ibc_dm_info *dl;
	struct ibc_domain_info d;
	struct ibc_dm *dm, *imp, *all;
	struct ibc_rss *rss;
	struct ibc_mr *mr;
	char want[64];
	size_t n;

	ck_assert_msg(ibc_dm_alloc_ex(xa, &da, &dm) == 0, "%s",
		      ibc_last_error());
	ck_assert_int_eq(ibc_dm_import(xb, ibc_dm_handle(dm), &imp), 0);
	/* An MR keeps the forced free from happening at once. */
	ck_assert_msg(ibc_reg_dm_mr(imp, 0, 4096,
				    IBV_ACCESS_ZERO_BASED |
					    IBV_ACCESS_LOCAL_WRITE,
				    &mr) == 0,
		      "%s", ibc_last_error());
	rss = make_rss(xb);
	ck_assert_int_eq(ibc_admin_domain_rekey(c, "lab", 0), -EBUSY);
	snprintf(want, sizeof(want), "DM %llu (persistent)",
		 (unsigned long long)ibc_dm_id(dm));
	ck_assert_msg(strstr(ibc_last_error(), want), "%s", ibc_last_error());
	snprintf(want, sizeof(want), "RSS table %llu",
		 (unsigned long long)ibc_rss_id(rss));
	ck_assert_msg(strstr(ibc_last_error(), want), "%s", ibc_last_error());
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "--force"));
	/* Refused: nothing changed. */
	d = lab(c);
	ck_assert_uint_eq(d.rekeys, 0);
	ck_assert_uint_eq(d.old_contexts, 0);
	ck_assert_int_eq(ibc_dispatch(a), 0);

	ck_assert_msg(ibc_admin_domain_rekey(c, "lab", IBC_REKEY_FORCE) == 0,
		      "%s", ibc_last_error());
	wait_event(a, &sa, IBC_EVENT_DOMAIN_REKEYED);
	ck_assert_int_eq(sa.n[IBC_EVENT_DM_REVOKED], 1);
	ck_assert_uint_eq(sa.last_id[IBC_EVENT_DM_REVOKED], ibc_dm_id(dm));
	wait_event(b, &sb, IBC_EVENT_DOMAIN_REKEYED);
	ck_assert_int_eq(sb.n[IBC_EVENT_DM_REVOKED], 1);
	ck_assert_int_eq(sb.n[IBC_EVENT_RSS_DESTROYED], 1);
	ck_assert_uint_eq(sb.last_id[IBC_EVENT_RSS_DESTROYED],
			  ibc_rss_id(rss));
	ck_assert_int_eq(ibc_list_dms(c, &dl, sizeof(*dl), &n), 0);
	ibc_list_free(dl);
	ck_assert_uint_eq(n, 0);
	d = wait_lab(c, 0, 0);
	ck_assert_uint_eq(d.used.dm_bytes, 0);
	ck_assert_uint_eq(d.used.rss_tables, 0);
	ibc_close(xa);
	ibc_close(xb);
	/* The pinned DM went with its old context: the whole device memory
	 * is free again. */
	xa = open_ctx(a);
	ck_assert_msg(ibc_dm_alloc(xa, 256 * 1024, 0, &all) == 0, "%s",
		      ibc_last_error());
	ck_assert_int_eq(ibc_dm_free(all), 0);
	ibc_close(xa);
	ibc_disconnect(a);
	ibc_disconnect(b);
	ibc_disconnect(c);
}
END_TEST

/* A DM whose free is pending, and one in its revoke grace period: both
 * named, both destroyed by --force; the grace period's end finds
 * nothing. */
START_TEST(test_pending_and_revoked)
{
	struct seen sa, sb, sc;
	struct ibc_client *a, *b, *c;
	struct ibc_ctx *xa, *xb;
	struct ibc_dm *d1, *d2, *i1, *i2;
	struct ibc_client_info ai;
	char want[64];

	tl_daemon_stop(&D);
	start_with("dm_revoke_grace = 200ms\n", NULL, NULL);
	a = join(&sa, 0);
	b = join(&sb, 0);
	c = join(&sc, 0);
	xa = open_ctx(a);
	xb = open_ctx(b);
	ck_assert_int_eq(ibc_client_info(a, &ai, sizeof(ai)), 0);
	ck_assert_int_eq(ibc_dm_alloc(xa, 4096, 0, &d1), 0);
	ck_assert_int_eq(ibc_dm_alloc(xa, 4096, 0, &d2), 0);
	ck_assert_int_eq(ibc_dm_import(xb, ibc_dm_handle(d1), &i1), 0);
	ck_assert_int_eq(ibc_dm_import(xb, ibc_dm_handle(d2), &i2), 0);
	snprintf(want, sizeof(want), "DM %llu (client %llu's)",
		 (unsigned long long)ibc_dm_id(d1),
		 (unsigned long long)ai.client_id);
	/* d1: free pending (b holds it); d2: revoked, in its grace. */
	ck_assert_int_eq(ibc_dm_free(d1), 0);
	ck_assert_int_eq(ibc_admin_dm_revoke(c, ibc_dm_id(d2)), 0);
	ck_assert_int_eq(ibc_admin_domain_rekey(c, "lab", 0), -EBUSY);
	ck_assert_msg(strstr(ibc_last_error(), want), "%s", ibc_last_error());
	ck_assert_msg(ibc_admin_domain_rekey(c, "lab", IBC_REKEY_FORCE) == 0,
		      "%s", ibc_last_error());
	wait_event(b, &sb, IBC_EVENT_DOMAIN_REKEYED);
	wait_event(a, &sa, IBC_EVENT_DOMAIN_REKEYED);
	/* Past the grace period: the broker still serves. */
	tl_sleep_ms(400);
	ck_assert_int_eq(ibc_ping(c, "x", 1), 0);
	wait_lab(c, 0, 0);
	ck_assert_uint_eq(lab(c).used.dm_bytes, 0);
	ibc_close(xa);
	ibc_close(xb);
	ibc_disconnect(a);
	ibc_disconnect(b);
	ibc_disconnect(c);
}
END_TEST

/* The old context counts in the quota until it goes: a domain at its
 * objects quota opens its new one once the old one's last holder let
 * go. */
START_TEST(test_quota_of_old_context)
{
	struct seen sa, sb, sc;
	struct ibc_client *a, *b, *c;
	struct ibc_ctx *xa, *xb, *na;
	struct ibc_cq *cq1, *cq2;

	tl_daemon_stop(&D);
	start_with(NULL, "objects = 3\n", NULL);
	a = join(&sa, 0);
	b = join(&sb, 0);
	c = join(&sc, 0);
	xa = open_ctx(a);
	xb = open_ctx(b);
	ck_assert_int_eq(ibc_cq_create(xa, 8, &cq1), 0);
	ck_assert_int_eq(ibc_cq_create(xa, 8, &cq2), 0);
	ck_assert_int_eq(ibc_admin_domain_rekey(c, "lab", 0), 0);
	wait_event(a, &sa, IBC_EVENT_DOMAIN_REKEYED);
	ibc_close(xa);
	/* b still holds the old context, with a's CQs in it. */
	wait_lab(c, 1, 3);
	ck_assert_int_eq(ibc_open(a, NULL, &na), -EDQUOT);
	ck_assert_msg(strstr(ibc_last_error(), "lab"), "%s", ibc_last_error());
	wait_event(b, &sb, IBC_EVENT_DOMAIN_REKEYED);
	wait_lab(c, 0, 0);
	na = open_ctx(a);
	ck_assert_int_eq(ibc_cq_create(na, 8, &cq1), 0);
	ibc_close(na);
	ibc_close(xb);
	ibc_disconnect(a);
	ibc_disconnect(b);
	ibc_disconnect(c);
}
END_TEST

/* The XRC domain is the inode's, held in the broker's own context: a
 * declared name survives, and so does a private one that a member still
 * holds. */
START_TEST(test_xrcd_survives)
{
	struct seen sa, sb, sc;
	struct ibc_client *a, *b, *c;
	struct ibc_ctx *xa, *xb;
	struct ibc_xrcd *x1, *x2, *t1, *t2, *t3;
	uint64_t ino, tino;

	tl_daemon_stop(&D);
	start("[xrcd keep]\ndomains = lab\n");
	a = join(&sa, 0);
	b = join(&sb, 0);
	c = join(&sc, 0);
	xa = open_ctx(a);
	xb = open_ctx(b);
	ck_assert_int_eq(ibc_xrcd_open(xa, "keep", O_CREAT, &x1), 0);
	ino = ibc_xrcd_ino(x1);
	ck_assert_int_eq(ibc_xrcd_open(xb, "tmp", O_CREAT, &t1), 0);
	ck_assert_int_eq(ibc_xrcd_open(xa, "tmp", 0, &t2), 0);
	tino = ibc_xrcd_ino(t1);
	ck_assert_int_eq(ibc_admin_domain_rekey(c, "lab", 0), 0);
	wait_event(a, &sa, IBC_EVENT_DOMAIN_REKEYED);
	ibc_close(xa);
	xa = open_ctx(a);
	ck_assert_msg(ibc_xrcd_open(xa, "keep", 0, &x2) == 0, "%s",
		      ibc_last_error());
	ck_assert_uint_eq(ibc_xrcd_ino(x2), ino);
	/* b, in the old context, still holds "tmp". */
	ck_assert_msg(ibc_xrcd_open(xa, "tmp", 0, &t3) == 0, "%s",
		      ibc_last_error());
	ck_assert_uint_eq(ibc_xrcd_ino(t3), tino);
	ibc_close(xa);
	ibc_close(xb);
	ibc_disconnect(a);
	ibc_disconnect(b);
	ibc_disconnect(c);
}
END_TEST

/* evict --rekey: the evicted process keeps only the old context. */
START_TEST(test_evict_rekey)
{
	struct seen sa, sb, sc;
	struct ibc_client *a = join(&sa, 0), *b = join(&sb, 0);
	struct ibc_client *c = join(&sc, 0);
	struct ibc_ctx *xa = open_ctx(a), *xb = open_ctx(b);
	struct ibc_client_info bi;
	uint64_t old = ctx_id(xa);
	struct ibc_cq *cq;

	ck_assert_int_eq(ibc_client_info(b, &bi, sizeof(bi)), 0);
	ck_assert_int_eq(ibc_admin_evict_ex(c, bi.client_id, IBC_EVICT_FORCE),
			 -EINVAL);
	ck_assert_int_eq(ibc_admin_evict_ex(c, bi.client_id, 1u << 7),
			 -EINVAL);
	ck_assert_msg(ibc_admin_evict_ex(c, bi.client_id, IBC_EVICT_REKEY) ==
			      0,
		      "%s", ibc_last_error());
	wait_event(a, &sa, IBC_EVENT_DOMAIN_REKEYED);
	ck_assert_uint_eq(sa.last_id[IBC_EVENT_DOMAIN_REKEYED], old);
	/* b is gone from the broker; a's next context is new. */
	ck_assert_int_eq(ibc_cq_create(xb, 8, &cq), -ECONNRESET);
	ibc_close(xa);
	xa = open_ctx(a);
	ck_assert_uint_ne(ctx_id(xa), old);
	wait_lab(c, 1, 1);
	ibc_close(xa);
	ibc_close(xb);
	ibc_disconnect(a);
	ibc_disconnect(b);
	ibc_disconnect(c);
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
	ck_assert_msg(strstr(out, "evicted and its domain rekeyed"), "%s",
		      out);
	c = join(&sc, 0);
	ck_assert_uint_eq(lab(c).rekeys, 3);
	ibc_close(xa);
	ibc_disconnect(a);
	ibc_disconnect(c);
}
END_TEST

/* --- in-process --------------------------------------------------------- */

#define MAX_CLIENTS 4

static struct server srv;
static char *dir;
static char log_file[300];
static int saved_stderr = -1;
static struct ol_client cl[MAX_CLIENTS];
static struct conn *conns[MAX_CLIENTS];

static void pump(void)
{
	event_base_loop(srv.base, EVLOOP_NONBLOCK);
}

static void srv_start(const char *conf)
{
	char sock[256], cfg[256];
	struct server_options opt = {
		.socket_path = sock,
		.config_path = cfg,
		.device_mode = DEVICE_MODE_SOFT,
		.socket_mode = 0600,
		.max_conns = 16,
		.outq_max = 256 * 1024,
	};
	FILE *f;
	int fd;

	log_max_priority = LOG_INFO;
	dir = tl_mkdtemp();
	ck_assert_ptr_nonnull(dir);
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	snprintf(cfg, sizeof(cfg), "%s/rdmabroker.conf", dir);
	snprintf(log_file, sizeof(log_file), "%s/log", dir);
	f = fopen(cfg, "w");
	ck_assert_ptr_nonnull(f);
	fputs(conf, f);
	ck_assert_int_eq(fclose(f), 0);
	opt.runtime_dir = dir;
	fd = open(log_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	saved_stderr = fcntl(2, F_DUPFD_CLOEXEC, 3);
	dup2(fd, 2);
	close(fd);
	ck_assert_int_eq(server_init(&srv, &opt), 0);
	memset(conns, 0, sizeof(conns));
	for (int i = 0; i < MAX_CLIENTS; i++)
		cl[i].fd = -1;
}

static void srv_setup(void)
{
	srv_start("[defaults]\nauto_rekey_unaccounted = 2\n");
}

static void srv_teardown(void)
{
	for (int i = 0; i < MAX_CLIENTS; i++)
		ol_close(&cl[i]);
	server_fini(&srv);
	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	tl_rmtree(dir);
	free(dir);
}

/* Client @i: a connection of its own, hello (@domain: NULL for its uid's
 * own), and @open the soft context. */
static struct ol_client *client(int i, const char *domain, bool open)
{
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX,
				    SOCK_SEQPACKET | SOCK_NONBLOCK |
					    SOCK_CLOEXEC,
				    0, sv),
			 0);
	ck_assert_int_eq(conn_new(&srv, sv[0], &conns[i]), 0);
	cl[i].fd = sv[1];
	cl[i].serial = 0;
	cl[i].pump = pump;
	ck_assert_int_eq(ol_hello(&cl[i], domain), 0);
	if (open)
		ck_assert_int_eq(ol_open(&cl[i]), 0);
	return &cl[i];
}

#define OK(call)                                                         \
	do {                                                             \
		int ok_ret_ = (call);                                    \
		ck_assert_msg(ok_ret_ == 0, "%s: %s (%s)", #call,        \
			      strerror(-ok_ret_), ol_error);             \
	} while (0)

static struct obj_owner *owner(int i)
{
	struct obj_owner *ow;

	TAILQ_FOREACH(ow, &srv.registry->owners, link)
		if (ow->client_id == cl[i].client_id)
			return ow;
	return NULL;
}

static int log_count(const char *needle)
{
	static char buf[1 << 20];
	FILE *f;
	size_t len;
	int n = 0;

	fflush(stderr);
	f = fopen(log_file, "re");
	ck_assert_ptr_nonnull(f);
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	for (char *p = buf; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static int rekey(struct ol_client *c, const char *name, bool force)
{
	Rdmab__DomainRekeyRequest dr = RDMAB__DOMAIN_REKEY_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	int err;

	dr.domain = (char *)name;
	dr.force = force;
	req.body_case = RDMAB__REQUEST__BODY_DOMAIN_REKEY;
	req.domain_rekey = &dr;
	err = ol_call(c, &req, &m);
	if (err == 0)
		ol_free(m);
	return err;
}

static int evict_rekey(struct ol_client *c, uint64_t id)
{
	Rdmab__EvictRequest er = RDMAB__EVICT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	int err;

	er.client_id = id;
	er.rekey = true;
	req.body_case = RDMAB__REQUEST__BODY_EVICT;
	req.evict = &er;
	err = ol_call(c, &req, &m);
	if (err == 0)
		ol_free(m);
	return err;
}

static int ol_close_context(struct ol_client *c, uint64_t id)
{
	Rdmab__CloseContextRequest cr = RDMAB__CLOSE_CONTEXT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	int err;

	cr.context_id = id;
	req.body_case = RDMAB__REQUEST__BODY_CLOSE_CONTEXT;
	req.close_context = &cr;
	err = ol_call(c, &req, &m);
	if (err == 0)
		ol_free(m);
	return err;
}

/* Replace the first @name in @s by "NAME". */
static void unname(char *s, const char *name)
{
	char *p = strstr(s, name);

	if (p)
		memmove(p + 4, p + strlen(name), strlen(p + strlen(name)) + 1),
			memcpy(p, "NAME", 4);
}

START_TEST(test_refusals)
{
	struct ol_client *admin = client(0, NULL, true);
	struct ol_client *priv = &cl[1];
	struct ol_client *user = client(2, NULL, true);
	char a[256], b[256], name[64];
	struct domain *d;

	/* One that does not exist, and someone else's private domain. */
	ck_assert_int_eq(rekey(admin, "no-such-domain", false), -ENOENT);
	snprintf(a, sizeof(a), "%s", ol_error);
	unname(a, "no-such-domain");
	{
		int sv[2];
		Rdmab__HelloRequest h = RDMAB__HELLO_REQUEST__INIT;
		Rdmab__Request req = RDMAB__REQUEST__INIT;
		Rdmab__DaemonMessage *m;

		ck_assert_int_eq(socketpair(AF_UNIX,
					    SOCK_SEQPACKET | SOCK_NONBLOCK |
						    SOCK_CLOEXEC,
					    0, sv),
				 0);
		ck_assert_int_eq(conn_new(&srv, sv[0], &conns[1]), 0);
		priv->fd = sv[1];
		priv->serial = 0;
		priv->pump = pump;
		h.library_version = (char *)"test";
		h.private_domain = true;
		req.body_case = RDMAB__REQUEST__BODY_HELLO;
		req.hello = &h;
		OK(ol_call(priv, &req, &m));
		snprintf(name, sizeof(name), "%s", m->reply->hello->domain);
		ol_free(m);
		OK(ol_open(priv));
	}
	ck_assert_int_eq(strncmp(name, "private-", 8), 0);
	TAILQ_FOREACH(d, &srv.domains, link)
		if (strcmp(d->name, name) == 0)
			break;
	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(rekey(admin, name, false), -ENOENT);
	snprintf(b, sizeof(b), "%s", ol_error);
	unname(b, name);
	ck_assert_str_eq(a, b);
	ck_assert_uint_eq(d->rekeys, 0);

	/* Not an administrator: refused before anything is looked up. */
	conns[2]->cred.uid = 65534;
	conns[2]->cred.gid = 65534;
	free(conns[2]->groups);
	conns[2]->groups = NULL;
	conns[2]->n_groups = 0;
	ck_assert_int_eq(rekey(user, user->domain, false), -EPERM);
	ck_assert_int_eq(rekey(user, "no-such-domain", false), -EPERM);
	ck_assert_int_eq(evict_rekey(user, admin->client_id), -EPERM);
	ck_assert_int_eq(TAILQ_FIRST(&srv.domains)->rekeys, 0);
	/* An administrator may. */
	OK(rekey(admin, admin->domain, false));
}
END_TEST

/* Intents of dead clients pile up as unaccounted; at the threshold the
 * domain is rekeyed, logged once, and the old context takes them when it
 * goes. */
START_TEST(test_auto_rekey)
{
	struct ol_client *c = client(0, NULL, true);
	struct ol_client *other = client(1, NULL, true);
	struct ol_obj i1, i2;
	Rdmab__DaemonMessage *m = NULL;
	uint32_t used = 0, unacc = 0;
	uint64_t old = other->ctx_id;
	struct domain *d;

	srv.devices.dev[0].broker_objects = false;
	OK(ol_create_mode(c, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
			  IBC_OBJ_CQ, NULL, 0, NULL, 0, &i1));
	conn_close(conns[0]);
	conns[0] = NULL;
	objects_owner_dead(owner(0));
	pump();
	/* One is below the threshold of 2. */
	OK(ol_domain(other, other->domain, &used, &unacc));
	ck_assert_uint_eq(unacc, 1);
	ck_assert_int_eq(log_count("rekeyed"), 0);
	ol_close(c);

	c = client(2, NULL, true);
	ck_assert_uint_eq(c->ctx_id, old);
	OK(ol_create_mode(c, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
			  IBC_OBJ_QP, NULL, 0, NULL, 0, &i2));
	conn_close(conns[2]);
	conns[2] = NULL;
	objects_owner_dead(owner(2));
	pump();
	ck_assert_int_eq(log_count("domain uid-"), 1);
	ck_assert_int_eq(log_count("rekeyed (automatic: 2 unaccounted"), 1);
	/* The holder is told, names the context, lets go. */
	ck_assert_int_eq(tl_recv_msg(other->fd, 1000, &m), 1);
	ck_assert_int_eq(m->kind_case, RDMAB__DAEMON_MESSAGE__KIND_EVENT);
	ck_assert_int_eq(m->event->body_case,
			 RDMAB__EVENT__BODY_DOMAIN_REKEYED);
	ck_assert_uint_eq(m->event->object_kind, IBC_OBJ_CONTEXT);
	ck_assert_uint_eq(m->event->object_id, old);
	rdmab__daemon_message__free_unpacked(m, NULL);
	d = TAILQ_FIRST(&srv.domains);
	ck_assert_uint_eq(d->n_ctxs, 1);
	ck_assert(TAILQ_FIRST(&d->ctxs)->rekeyed);
	/* Still charged: PD and the two intents. */
	ck_assert_uint_eq(d->used.objects, 3);
	OK(ol_close_context(other, old));
	ck_assert_uint_eq(d->n_ctxs, 0);
	ck_assert_uint_eq(d->used.objects, 0);
	/* A new one, counting from zero. */
	OK(ol_open(other));
	ck_assert_uint_ne(other->ctx_id, old);
	OK(ol_domain(other, other->domain, &used, &unacc));
	ck_assert_uint_eq(unacc, 0);
	ck_assert_uint_eq(used, 1);
	ck_assert_int_eq(log_count("rekeyed"), 1);
}
END_TEST

/* A domain with a DM is not rekeyed automatically: logged once. */
START_TEST(test_auto_rekey_refused)
{
	struct ol_client *other = client(1, NULL, true);
	/* Keeps the context open throughout. */
	struct ol_client *holder = client(3, NULL, true);
	Rdmab__DmAllocRequest da = RDMAB__DM_ALLOC_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	struct domain *d;

	da.context_id = other->ctx_id;
	da.length = 4096;
	req.body_case = RDMAB__REQUEST__BODY_DM_ALLOC;
	req.dm_alloc = &da;
	OK(ol_call(other, &req, &m));
	ol_free(m);
	srv.devices.dev[0].broker_objects = false;
	for (int i = 0; i < 3; i++) {
		struct ol_client *c = client(0, NULL, true);
		struct ol_obj o;

		OK(ol_create_mode(c, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
				  IBC_OBJ_CQ, NULL, 0, NULL, 0, &o));
		conn_close(conns[0]);
		conns[0] = NULL;
		objects_owner_dead(owner(0));
		pump();
		ol_close(c);
	}
	ck_assert_int_eq(log_count("no automatic rekey"), 1);
	ck_assert_int_eq(log_count("(persistent)") +
				 log_count("'s)"),
			 1);
	d = TAILQ_FIRST(&srv.domains);
	ck_assert(!TAILQ_FIRST(&d->ctxs)->rekeyed);
	ck_assert_uint_eq(d->rekeys, 0);
	/* The DM goes with its allocator: the next intent left behind
	 * rekeys. */
	conn_close(conns[1]);
	conns[1] = NULL;
	objects_owner_dead(owner(1));
	for (int i = 0; i < 100 && owner(1); i++)
		event_base_loop(srv.base, EVLOOP_ONCE);
	ck_assert_ptr_null(owner(1));
	ol_close(other);
	other = client(1, NULL, true);
	{
		struct ol_client *c = client(0, NULL, true);
		struct ol_obj o;

		OK(ol_create_mode(c, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
				  IBC_OBJ_CQ, NULL, 0, NULL, 0, &o));
		conn_close(conns[0]);
		conns[0] = NULL;
		objects_owner_dead(owner(0));
		pump();
		ol_close(c);
	}
	ck_assert_uint_eq(d->rekeys, 1);
	ck_assert_int_eq(log_count("no automatic rekey"), 1);
	ck_assert_uint_eq(holder->ctx_id, TAILQ_FIRST(&d->ctxs)->id);
	ck_assert(TAILQ_FIRST(&d->ctxs)->rekeyed);
}
END_TEST

/* Off by default. */
START_TEST(test_auto_rekey_off)
{
	struct ol_client *other;
	struct domain *d;

	srv_teardown();
	srv_start("");
	other = client(1, NULL, true);
	srv.devices.dev[0].broker_objects = false;
	for (int i = 0; i < 3; i++) {
		struct ol_client *c = client(0, NULL, true);
		struct ol_obj o;

		OK(ol_create_mode(c, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
				  IBC_OBJ_CQ, NULL, 0, NULL, 0, &o));
		conn_close(conns[0]);
		conns[0] = NULL;
		objects_owner_dead(owner(0));
		pump();
		ol_close(c);
	}
	d = TAILQ_FIRST(&srv.domains);
	ck_assert_uint_eq(TAILQ_FIRST(&d->ctxs)->unaccounted, 3);
	ck_assert_uint_eq(d->rekeys, 0);
	ck_assert_int_eq(log_count("rekeyed"), 0);
	(void)other;
}
END_TEST

/*
 * An Event the requester itself cannot take (its peer is gone) must not
 * close its connection under its own handler, which still uses it: the
 * rekey of a context it holds, and the RSS rebuild when it destroys a WQ
 * of its own table (the storm of make check-soak found that one).
 */
START_TEST(test_event_to_gone_requester)
{
	struct ol_client *c = client(0, NULL, true);
	struct ol_client *other = client(1, NULL, true);
	Rdmab__DomainRekeyRequest dr = RDMAB__DOMAIN_REKEY_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct domain *d = TAILQ_FIRST(&srv.domains);
	uint64_t old = c->ctx_id;

	dr.domain = c->domain;
	req.body_case = RDMAB__REQUEST__BODY_DOMAIN_REKEY;
	req.domain_rekey = &dr;
	OK(ol_send(c, &req));
	/* Gone before the broker reads it. */
	close(c->fd);
	c->fd = -1;
	for (int i = 0; i < 10; i++)
		pump();
	ck_assert_uint_eq(d->rekeys, 1);
	ck_assert_uint_eq(srv.n_conns, 1);
	ck_assert_uint_eq(TAILQ_FIRST(&d->ctxs)->id, old);
	ck_assert(TAILQ_FIRST(&d->ctxs)->rekeyed);
	OK(ol_close_context(other, old));
	ck_assert_uint_eq(d->n_ctxs, 0);
}
END_TEST

START_TEST(test_rss_event_to_gone_requester)
{
	struct ol_client *c = client(0, NULL, true);
	Rdmab__RssCreateRequest rc = RDMAB__RSS_CREATE_REQUEST__INIT;
	Rdmab__FlowMatch fm = RDMAB__FLOW_MATCH__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__ObjDestroyRequest dq = RDMAB__OBJ_DESTROY_REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	static uint8_t key[40] = { 1 };
	struct ol_obj cq, wq1, wq2;
	uint64_t ids[2];

	OK(ol_cq(c, 8, &cq));
	OK(ol_wq(c, cq.id, 8, &wq1));
	OK(ol_wq(c, cq.id, 8, &wq2));
	ids[0] = wq1.id;
	ids[1] = wq2.id;
	rc.context_id = c->ctx_id;
	rc.port_num = 1;
	rc.log_ind_tbl_size = 1;
	rc.wq_ids = ids;
	rc.n_wq_ids = 2;
	rc.hash_key.data = key;
	rc.hash_key.len = sizeof(key);
	rc.hash_fields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4;
	fm.af = AF_INET;
	fm.l4_proto = IPPROTO_UDP;
	fm.dst_port = 4791;
	fm.port_mask = 0xffff;
	rc.match = &fm;
	req.body_case = RDMAB__REQUEST__BODY_RSS_CREATE;
	req.rss_create = &rc;
	OK(ol_call(c, &req, &m));
	ol_free(m);
	/* Its WQ leaves its own table: the rebuild's Event is its. */
	dq.object_id = wq1.id;
	req.body_case = RDMAB__REQUEST__BODY_OBJ_DESTROY;
	req.obj_destroy = &dq;
	OK(ol_send(c, &req));
	close(c->fd);
	c->fd = -1;
	for (int i = 0; i < 10; i++)
		pump();
	ck_assert_uint_eq(srv.n_conns, 0);
}
END_TEST

/* A forced evict --rekey whose DM Event closes the client being evicted
 * (it reads no more): the eviction must not use it after. */
START_TEST(test_evict_force_closes_target)
{
	struct ol_client *admin = client(0, NULL, true);
	struct ol_client *t = client(1, NULL, true);
	Rdmab__DmAllocRequest da = RDMAB__DM_ALLOC_REQUEST__INIT;
	Rdmab__EvictRequest er = RDMAB__EVICT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;

	da.context_id = t->ctx_id;
	da.length = 4096;
	req.body_case = RDMAB__REQUEST__BODY_DM_ALLOC;
	req.dm_alloc = &da;
	OK(ol_call(t, &req, &m));
	ol_free(m);
	/* Sends to it fail (EPIPE), and it has not hung up. */
	ck_assert_int_eq(shutdown(t->fd, SHUT_RD), 0);
	er.client_id = t->client_id;
	er.rekey = true;
	er.force = true;
	req.body_case = RDMAB__REQUEST__BODY_EVICT;
	req.evict = &er;
	OK(ol_call(admin, &req, &m));
	ol_free(m);
	ck_assert_uint_eq(srv.n_conns, 1);
	ck_assert_uint_eq(TAILQ_FIRST(&srv.domains)->rekeys, 1);
}
END_TEST

/* [defaults] sets it for every domain; a [domain] section overrides. */
START_TEST(test_config)
{
	char path[300], err[512];
	struct config cfg;
	FILE *f;

	snprintf(path, sizeof(path), "%s/t.conf", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("[domain a]\nusers = 0\n[domain b]\nusers = 0\n"
	      "auto_rekey_unaccounted = 0\n"
	      "[defaults]\nauto_rekey_unaccounted = 5\n",
	      f);
	ck_assert_int_eq(fclose(f), 0);
	config_init(&cfg);
	ck_assert_uint_eq(cfg.defaults.auto_rekey_unaccounted, 0);
	ck_assert_msg(config_load(path, true, &cfg, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(cfg.defaults.auto_rekey_unaccounted, 5);
	ck_assert_uint_eq(config_find_domain(&cfg, "a")->quota
				  .auto_rekey_unaccounted,
			  5);
	ck_assert_uint_eq(config_find_domain(&cfg, "b")->quota
				  .auto_rekey_unaccounted,
			  0);
	config_free(&cfg);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("[defaults]\nauto_rekey_unaccounted = -1\n", f);
	ck_assert_int_eq(fclose(f), 0);
	config_init(&cfg);
	ck_assert_int_lt(config_load(path, true, &cfg, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "auto_rekey_unaccounted"), "%s", err);
	config_free(&cfg);
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
	tcase_add_test(tc, test_second_rekey);
	tcase_add_test(tc, test_busy_and_force);
	tcase_add_test(tc, test_xrcd_survives);
	tcase_add_test(tc, test_pending_and_revoked);
	tcase_add_test(tc, test_quota_of_old_context);
	tcase_add_test(tc, test_evict_rekey);
	tcase_add_test(tc, test_ctl);
	suite_add_tcase(s, tc);

	tc = tcase_create("in-process");
	tcase_add_checked_fixture(tc, srv_setup, srv_teardown);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_auto_rekey);
	tcase_add_test(tc, test_auto_rekey_refused);
	tcase_add_test(tc, test_auto_rekey_off);
	tcase_add_test(tc, test_event_to_gone_requester);
	tcase_add_test(tc, test_rss_event_to_gone_requester);
	tcase_add_test(tc, test_config);
	tcase_add_test(tc, test_evict_force_closes_target);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("check_rekey", rekey_suite());
}
