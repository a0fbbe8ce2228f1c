// SPDX-License-Identifier: MIT
/*
 * Domain rekey in-process (a real server on the soft device, clients on
 * socketpairs, the event loop turned by hand): non-administrators are
 * refused, unknown and private domains answer alike, the automatic rekey
 * once a context's unaccounted objects (dead clients' intents) reach
 * auto_rekey_unaccounted (off by default, refused and logged once while
 * the domain holds a DM, its [domain] override), and Events that the
 * requester or the evicted client cannot take close them without a use
 * after free.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/config/conf.h"
#include "daemon/server/conn.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/domain.h"
#include "daemon/util/log.h"
#include "daemon/registry/objects.h"
#include "daemon/server/server.h"
#include "tests/cklib.h"
#include "tests/objlib.h"
#include "tests/srvlib.h"
#include "tests/testlib.h"

/* --- in-process --------------------------------------------------------- */

static void srv_setup(void)
{
	sl_start("[defaults]\nauto_rekey_unaccounted = 2\n"
		 "dm_bytes = 100%\n");
}

/* Start again with @conf. */
static void srv_restart(const char *conf)
{
	sl_stop();
	sl_start(conf);
}

static int rekey(struct ol_client *c, const char *name, bool force)
{
	Rdmab__DomainRekeyRequest dr = RDMAB__DOMAIN_REKEY_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	dr.domain = (char *)name;
	dr.force = force;
	req.body_case = RDMAB__REQUEST__BODY_DOMAIN_REKEY;
	req.domain_rekey = &dr;
	return ol_request(c, &req);
}

static int evict_rekey(struct ol_client *c, uint64_t id, bool force)
{
	Rdmab__EvictRequest er = RDMAB__EVICT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	er.client_id = id;
	er.rekey = true;
	er.force = force;
	req.body_case = RDMAB__REQUEST__BODY_EVICT;
	req.evict = &er;
	return ol_request(c, &req);
}

static int close_context(struct ol_client *c, uint64_t id)
{
	Rdmab__CloseContextRequest cr = RDMAB__CLOSE_CONTEXT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	cr.context_id = id;
	req.body_case = RDMAB__REQUEST__BODY_CLOSE_CONTEXT;
	req.close_context = &cr;
	return ol_request(c, &req);
}

/* A DM of 4096 bytes in @c's context; @ret_handle (NULL: not wanted) its
 * handle. */
static int dm_alloc(struct ol_client *c, uint32_t *ret_handle)
{
	Rdmab__DmAllocRequest da = RDMAB__DM_ALLOC_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	int err;

	da.context_id = c->ctx_id;
	da.length = 4096;
	req.body_case = RDMAB__REQUEST__BODY_DM_ALLOC;
	req.dm_alloc = &da;
	err = ol_call(c, &req, &m);
	if (err)
		return err;
	if (ret_handle)
		*ret_handle = m->reply->dm_alloc->handle;
	ol_free(m);
	return 0;
}

/*
 * Client @i (a new one) makes an intent (a CQ) whose kernel call made an
 * object, and is killed between the call and its register: that leaves
 * one unaccounted object in its context, whose id this returns.
 */
static uint64_t leave_intent(int i)
{
	struct ol_client *c = sl_client(i, NULL, true);
	uint64_t ctx = c->ctx_id;
	struct ol_obj o;

	sl_srv.core.devices.dev[0].intent_window = true;
	OK(ol_create_mode(c, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
			  IBC_OBJ_CQ, NULL, 0, NULL, 0, &o));
	OK(ol_kernel_call(c, o.id, NULL, 0, &o.handle));
	sl_kill(i);
	sl_pump();
	ol_close(c);
	return ctx;
}

/* Client @i dies: its cleanup runs to the end, which frees its owner. */
static void kill_and_reap(int i)
{
	sl_kill(i);
	for (int n = 0; n < 100 && sl_owner(i); n++)
		event_base_loop(sl_srv.core.base, EVLOOP_ONCE);
	ck_assert_ptr_null(sl_owner(i));
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
	struct ol_client *admin = sl_client(0, NULL, true);
	struct ol_client *priv = &sl_cl[1];
	struct ol_client *user = sl_client(2, NULL, true);
	char a[256], b[256], name[64];
	struct domain *d;

	/* One that does not exist, and someone else's private domain. */
	ck_assert_int_eq(rekey(admin, "no-such-domain", false), -ENOENT);
	snprintf(a, sizeof(a), "%s", ol_error);
	unname(a, "no-such-domain");
	{
		Rdmab__HelloRequest h = RDMAB__HELLO_REQUEST__INIT;
		Rdmab__Request req = RDMAB__REQUEST__INIT;
		Rdmab__DaemonMessage *m;

		sl_connect(1);
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
	TAILQ_FOREACH(d, &sl_srv.core.domains, link)
		if (strcmp(d->name, name) == 0)
			break;
	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(rekey(admin, name, false), -ENOENT);
	snprintf(b, sizeof(b), "%s", ol_error);
	unname(b, name);
	ck_assert_str_eq(a, b);
	ck_assert_uint_eq(d->rekeys, 0);

	/* Not an administrator: refused before anything is looked up. */
	sl_conns[2]->cl.cred.uid = 65534;
	sl_conns[2]->cl.cred.gid = 65534;
	free(sl_conns[2]->cl.groups);
	sl_conns[2]->cl.groups = NULL;
	sl_conns[2]->cl.n_groups = 0;
	ck_assert_int_eq(rekey(user, user->domain, false), -EPERM);
	ck_assert_int_eq(rekey(user, "no-such-domain", false), -EPERM);
	ck_assert_int_eq(evict_rekey(user, admin->client_id, false), -EPERM);
	ck_assert_int_eq(TAILQ_FIRST(&sl_srv.core.domains)->rekeys, 0);
	/* An administrator may. */
	OK(rekey(admin, admin->domain, false));
}
END_TEST

/* Intents of dead clients pile up as unaccounted; at the threshold the
 * domain is rekeyed, logged once, and the old context takes them when it
 * goes. */
START_TEST(test_auto_rekey)
{
	struct ol_client *other = sl_client(1, NULL, true);
	Rdmab__DaemonMessage *m = NULL;
	uint32_t used = 0, unacc = 0;
	uint64_t old = other->ctx_id;
	struct domain *d;

	leave_intent(0);
	/* One is below the threshold of 2. */
	OK(ol_domain(other, other->domain, &used, &unacc));
	ck_assert_uint_eq(unacc, 1);
	ck_assert_int_eq(sl_log_count("rekeyed"), 0);
	ck_assert_uint_eq(leave_intent(2), old);
	ck_assert_int_eq(sl_log_count("domain uid-"), 1);
	ck_assert_int_eq(sl_log_count("rekeyed (automatic: 2 unaccounted"), 1);
	/* The holder is told, names the context, lets go. */
	ck_assert_int_eq(tl_recv_msg(other->fd, 1000, &m), 1);
	ck_assert_int_eq(m->kind_case, RDMAB__DAEMON_MESSAGE__KIND_EVENT);
	ck_assert_int_eq(m->event->body_case,
			 RDMAB__EVENT__BODY_DOMAIN_REKEYED);
	ck_assert_uint_eq(m->event->object_kind, IBC_OBJ_CONTEXT);
	ck_assert_uint_eq(m->event->object_id, old);
	rdmab__daemon_message__free_unpacked(m, NULL);
	d = TAILQ_FIRST(&sl_srv.core.domains);
	ck_assert_uint_eq(d->n_ctxs, 1);
	ck_assert(TAILQ_FIRST(&d->ctxs)->rekeyed);
	/* Still charged: PD and the two intents. */
	ck_assert_uint_eq(d->used.objects, 3);
	OK(close_context(other, old));
	ck_assert_uint_eq(d->n_ctxs, 0);
	ck_assert_uint_eq(d->used.objects, 0);
	/* A new one, counting from zero. */
	OK(ol_open(other));
	ck_assert_uint_ne(other->ctx_id, old);
	OK(ol_domain(other, other->domain, &used, &unacc));
	ck_assert_uint_eq(unacc, 0);
	ck_assert_uint_eq(used, 1);
	ck_assert_int_eq(sl_log_count("rekeyed"), 1);
}
END_TEST

/* A domain with a DM is not rekeyed automatically: logged once. */
START_TEST(test_auto_rekey_refused)
{
	struct ol_client *other = sl_client(1, NULL, true);
	/* Keeps the context open throughout. */
	struct ol_client *holder = sl_client(3, NULL, true);
	struct domain *d;

	OK(dm_alloc(other, NULL));
	for (int i = 0; i < 3; i++)
		leave_intent(0);
	ck_assert_int_eq(sl_log_count("no automatic rekey"), 1);
	ck_assert_int_eq(sl_log_count("(persistent)") + sl_log_count("'s)"), 1);
	d = TAILQ_FIRST(&sl_srv.core.domains);
	ck_assert(!TAILQ_FIRST(&d->ctxs)->rekeyed);
	ck_assert_uint_eq(d->rekeys, 0);
	/* The DM goes with its allocator: the next intent left behind
	 * rekeys. */
	kill_and_reap(1);
	ol_close(other);
	other = sl_client(1, NULL, true);
	leave_intent(0);
	ck_assert_uint_eq(d->rekeys, 1);
	ck_assert_int_eq(sl_log_count("no automatic rekey"), 1);
	ck_assert_uint_eq(holder->ctx_id, TAILQ_FIRST(&d->ctxs)->id);
	ck_assert(TAILQ_FIRST(&d->ctxs)->rekeyed);
}
END_TEST

/* Off by default. */
START_TEST(test_auto_rekey_off)
{
	struct ol_client *other;
	struct domain *d;

	srv_restart("");
	other = sl_client(1, NULL, true);
	for (int i = 0; i < 3; i++)
		leave_intent(0);
	d = TAILQ_FIRST(&sl_srv.core.domains);
	ck_assert_uint_eq(TAILQ_FIRST(&d->ctxs)->unaccounted, 3);
	ck_assert_uint_eq(d->rekeys, 0);
	ck_assert_int_eq(sl_log_count("rekeyed"), 0);
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
	struct ol_client *c = sl_client(0, NULL, true);
	struct ol_client *other = sl_client(1, NULL, true);
	Rdmab__DomainRekeyRequest dr = RDMAB__DOMAIN_REKEY_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct domain *d = TAILQ_FIRST(&sl_srv.core.domains);
	uint64_t old = c->ctx_id;

	dr.domain = c->domain;
	req.body_case = RDMAB__REQUEST__BODY_DOMAIN_REKEY;
	req.domain_rekey = &dr;
	OK(ol_send(c, &req));
	/* Gone before the broker reads it. */
	close(c->fd);
	c->fd = -1;
	for (int i = 0; i < 10; i++)
		sl_pump();
	ck_assert_uint_eq(d->rekeys, 1);
	ck_assert_uint_eq(sl_srv.tab.n_conns, 1);
	ck_assert_uint_eq(TAILQ_FIRST(&d->ctxs)->id, old);
	ck_assert(TAILQ_FIRST(&d->ctxs)->rekeyed);
	OK(close_context(other, old));
	ck_assert_uint_eq(d->n_ctxs, 0);
}
END_TEST

START_TEST(test_rss_event_to_gone_requester)
{
	struct ol_client *c = sl_client(0, NULL, true);
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__ObjDestroyRequest dq = RDMAB__OBJ_DESTROY_REQUEST__INIT;
	struct ol_obj cq, wq1, wq2;
	uint64_t ids[2];

	OK(ol_cq(c, 8, &cq));
	OK(ol_wq(c, cq.id, 8, &wq1));
	OK(ol_wq(c, cq.id, 8, &wq2));
	ids[0] = wq1.id;
	ids[1] = wq2.id;
	OK(ol_rss(c, ids, 2, NULL));
	/* Its WQ leaves its own table: the rebuild's Event is its. */
	dq.object_id = wq1.id;
	req.body_case = RDMAB__REQUEST__BODY_OBJ_DESTROY;
	req.obj_destroy = &dq;
	OK(ol_send(c, &req));
	close(c->fd);
	c->fd = -1;
	for (int i = 0; i < 10; i++)
		sl_pump();
	ck_assert_uint_eq(sl_srv.tab.n_conns, 0);
}
END_TEST

/* A forced evict --rekey whose DM Event closes the client being evicted
 * (it reads no more): the eviction must not use it after. */
START_TEST(test_evict_force_closes_target)
{
	struct ol_client *admin = sl_client(0, NULL, true);
	struct ol_client *t = sl_client(1, NULL, true);

	OK(dm_alloc(t, NULL));
	/* Sends to it fail (EPIPE), and it has not hung up. */
	ck_assert_int_eq(shutdown(t->fd, SHUT_RD), 0);
	OK(evict_rekey(admin, t->client_id, true));
	ck_assert_uint_eq(sl_srv.tab.n_conns, 1);
	ck_assert_uint_eq(TAILQ_FIRST(&sl_srv.core.domains)->rekeys, 1);
}
END_TEST

/* Many DMs: the sentence names whole ones and says there are more. */
START_TEST(test_busy_many)
{
	struct ol_client *admin = sl_client(0, NULL, true);
	size_t len;

	for (int i = 0; i < 20; i++)
		OK(dm_alloc(admin, NULL));
	ck_assert_int_eq(rekey(admin, admin->domain, false), -EBUSY);
	ck_assert_msg(strstr(ol_error, "holds 20 objects"), "%s", ol_error);
	ck_assert_msg(strstr(ol_error, "(--force destroys them)"), "%s",
		      ol_error);
	len = strlen(ol_error);
	ck_assert_msg(len > 4 && strcmp(ol_error + len - 4, " ...") == 0, "%s",
		      ol_error);
	ck_assert_msg(strstr(ol_error, "'s), DM "), "%s", ol_error);
	OK(rekey(admin, admin->domain, true));
	ck_assert_uint_eq(
		TAILQ_FIRST(&sl_srv.core.domains)->used.family[FAMILY_DM], 0);
}
END_TEST

/* [defaults] sets it for every domain; a [domain] section overrides. */
START_TEST(test_config)
{
	char path[300], err[512];
	struct config cfg;
	FILE *f;

	snprintf(path, sizeof(path), "%s/t.conf", sl_dir);
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
	ck_assert_uint_eq(
		config_find_domain(&cfg, "a")->quota.auto_rekey_unaccounted, 5);
	ck_assert_uint_eq(
		config_find_domain(&cfg, "b")->quota.auto_rekey_unaccounted, 0);
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

/* A context replaced by a rekey takes no new objects: CREATE, INTENT,
 * TRACK, the kernel call of an intent made before, an XRCD open. */
START_TEST(test_stale_ctx)
{
	struct ol_client *admin = sl_client(0, NULL, true);
	struct ol_client *c = sl_client(1, NULL, true);
	Rdmab__XrcdOpenRequest xo = RDMAB__XRCD_OPEN_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	static const int modes[] = {
		RDMAB__OBJ_CREATE_REQUEST__MODE__CREATE,
		RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
		RDMAB__OBJ_CREATE_REQUEST__MODE__TRACK,
	};
	Rdmab__DaemonMessage *m;
	struct ol_obj i1, o;
	uint32_t handle;

	sl_srv.core.devices.dev[0].intent_window = true;
	OK(ol_create_mode(c, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
			  IBC_OBJ_CQ, NULL, 0, NULL, 0, &i1));
	OK(rekey(admin, admin->domain, false));
	ck_assert(
		TAILQ_FIRST(&TAILQ_FIRST(&sl_srv.core.domains)->ctxs)->rekeyed);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		ck_assert_int_eq(ol_create_mode(c, modes[i], IBC_OBJ_CQ, NULL,
						0, NULL, 0, &o),
				 -ESTALE);
		ck_assert_msg(strstr(ol_error, "replaced by a rekey"), "%s",
			      ol_error);
	}
	ck_assert_int_eq(ol_kernel_call(c, i1.id, NULL, 0, &handle), -ESTALE);
	ck_assert_msg(strstr(ol_error, "replaced by a rekey"), "%s", ol_error);
	xo.context_id = c->ctx_id;
	xo.name.data = (uint8_t *)"stale";
	xo.name.len = 5;
	xo.oflags = O_CREAT;
	req.body_case = RDMAB__REQUEST__BODY_XRCD_OPEN;
	req.xrcd_open = &xo;
	ck_assert_int_eq(ol_call(c, &req, &m), -ESTALE);
	ck_assert_msg(strstr(ol_error, "replaced by a rekey"), "%s", ol_error);
	/* The new context takes them. */
	OK(ol_open(c));
	OK(ol_cq(c, 8, &o));
}
END_TEST

/* Each import that dies holding the context leaves the provider's own
 * objects, charged: the import that could not be charged is refused. */
START_TEST(test_import_quota)
{
	struct ol_client *holder;
	struct domain *d;

	srv_restart("[soft]\ninternal_objects_per_import = 3\n"
		    "[defaults]\nobjects = 8\n");
	holder = sl_client(0, NULL, true);
	d = TAILQ_FIRST(&sl_srv.core.domains);
	ck_assert_uint_eq(d->used.objects, 1);
	for (int i = 0; i < 2; i++) {
		sl_client(1, NULL, true);
		sl_hang_up(1);
		sl_pump();
		ol_close(&sl_cl[1]);
	}
	ck_assert_uint_eq(d->used.objects, 1 + 6);
	sl_client(1, NULL, false);
	ck_assert_int_eq(ol_open(&sl_cl[1]), -EDQUOT);
	ck_assert_msg(strstr(ol_error, "makes 3 of the provider's own"), "%s",
		      ol_error);
	ck_assert_uint_eq(d->used.objects, 1 + 6);
	ck_assert_uint_eq(TAILQ_FIRST(&d->ctxs)->refs, 1);
	(void)holder;
}
END_TEST

/* A verbs importer's provider objects (mlx5 UARs) left by a session that
 * ended are counted once its close had time to finish, and rekey the
 * domain at the threshold. */
START_TEST(test_auto_rekey_stale)
{
	struct ol_client *holder;
	struct domain *d;

	srv_restart("[soft]\ninternal_objects_per_import = 1\n"
		    "[defaults]\nauto_rekey_unaccounted = 2\n");
	/* Counted as on verbs: not at once. */
	sl_srv.core.devices.dev[0].broker_objects = false;
	holder = sl_client(0, NULL, true);
	d = TAILQ_FIRST(&sl_srv.core.domains);
	for (int i = 0; i < 2; i++) {
		sl_client(1, NULL, true);
		sl_hang_up(1);
		ol_close(&sl_cl[1]);
	}
	for (int i = 0; i < 200 && !d->rekeys; i++) {
		sl_pump();
		usleep(10 * 1000);
	}
	ck_assert_uint_eq(d->rekeys, 1);
	ck_assert_int_eq(sl_log_count("rekeyed (automatic: 2 unaccounted"), 1);
	(void)holder;
}
END_TEST

/* A dead allocator's cleanup drops its import of a DM another member X
 * holds; telling X fails and closes it, and X holds a rekeyed context:
 * letting go of that context must leave the dead owner, whose cleanup is
 * still running, alone. */
START_TEST(test_close_nested_in_cleanup)
{
	struct ol_client *admin = sl_client(0, NULL, true);
	struct ol_client *x = sl_client(1, NULL, true);
	struct ol_client *dead;
	Rdmab__DmImportRequest di = RDMAB__DM_IMPORT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	uint32_t handle;

	OK(rekey(admin, admin->domain, false));
	/* x keeps its copy of the old context, and opens the new one. */
	OK(ol_open(x));
	dead = sl_client(2, NULL, true);
	ck_assert_uint_eq(dead->ctx_id, x->ctx_id);
	OK(dm_alloc(dead, &handle));
	di.context_id = x->ctx_id;
	di.handle = handle;
	req.body_case = RDMAB__REQUEST__BODY_DM_IMPORT;
	req.dm_import = &di;
	OK(ol_call(x, &req, &m));
	ol_free(m);
	/* Sends to x fail (EPIPE). */
	ck_assert_int_eq(shutdown(x->fd, SHUT_RD), 0);
	kill_and_reap(2);
	ck_assert_uint_eq(sl_srv.tab.n_conns, 1);
}
END_TEST

static Suite *rekey_srv_suite(void)
{
	Suite *s = suite_create("rekey-srv");
	TCase *tc;

	tc = tcase_create("in-process");
	tcase_add_checked_fixture(tc, srv_setup, sl_stop);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_auto_rekey);
	tcase_add_test(tc, test_auto_rekey_refused);
	tcase_add_test(tc, test_auto_rekey_off);
	tcase_add_test(tc, test_event_to_gone_requester);
	tcase_add_test(tc, test_rss_event_to_gone_requester);
	tcase_add_test(tc, test_config);
	tcase_add_test(tc, test_evict_force_closes_target);
	tcase_add_test(tc, test_busy_many);
	tcase_add_test(tc, test_stale_ctx);
	tcase_add_test(tc, test_import_quota);
	tcase_add_test(tc, test_auto_rekey_stale);
	tcase_add_test(tc, test_close_nested_in_cleanup);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("check_rekey_srv", rekey_srv_suite());
}
