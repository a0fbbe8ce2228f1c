// SPDX-License-Identifier: MIT
/*
 * rdmabrokerctl ($RDMABROKERCTL) as people and scripts meet it: help for
 * every command in every form (help CMD, CMD --help, CMD -h, CMD help),
 * usage errors that point at that help, global options anywhere on the
 * line, one JSON shape rule for every command (a list is an array of
 * objects, show, status and every action one object, and the keys that
 * hold lists are arrays) with --pretty, the timeout against a stopped
 * daemon and a listener that never answers, and the error sentences that
 * say what to do. The list of commands comes from `rdmabrokerctl --help`,
 * so a new command without help or a JSON rule fails here. Parts that run
 * the program as another user need root and are left out otherwise.
 */
#include "config.h"

#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "include/ibclient.h"
#include "tests/agent.h"
#include "tests/cklib.h"
#include "tests/jsoncheck.h"
#include "tests/testlib.h"

#define RUN_WAIT_MS 20000
#define MAX_COMMANDS 32

static struct tl_daemon D;
static char *dir;

/* Let other users through @path's directory and the one above it (the
 * suite's temporary directories). */
static void open_dirs(const char *path)
{
	char *copy = strdup(path), *slash;

	ck_assert_ptr_nonnull(copy);
	for (int i = 0; i < 2 && (slash = strrchr(copy, '/')) && slash != copy;
	     i++) {
		*slash = '\0';
		ck_assert_int_eq(chmod(copy, 0711), 0);
	}
	free(copy);
}

static void setup(void)
{
	memset(&D, 0, sizeof(D));
	D.pid = -1;
	dir = tl_mkdtemp();
	ck_assert_ptr_nonnull(dir);
	ck_assert_int_eq(chmod(dir, 0711), 0);
	open_dirs(dir);
}

static void teardown(void)
{
	if (D.pid > 0)
		kill(D.pid, SIGCONT);
	tl_daemon_stop(&D);
	if (dir) {
		tl_rmtree(dir);
		free(dir);
		dir = NULL;
	}
}

/* --- running it ------------------------------------------------------------
 */

struct run {
	int code; /* the exit status, or 1000 + the signal */
	int64_t ms;
	char *out;
	char *err;
};

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

/* rdmabrokerctl @args (NULL-terminated, at most 14) as @cred (NULL:
 * this process's own). */
static struct run ctl_argv(const struct agent_cred *cred,
			   const char *const *args)
{
	struct agent_cred me = agent_cred(geteuid(), getegid(), AGENT_END);
	const char *argv[16];
	struct run r = { 0 };
	size_t n = 0;
	int64_t t0;
	int st;

	argv[n++] = tl_ctl_path();
	for (; *args && n < 15; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	t0 = tl_now_ms();
	st = agent_run(cred ? cred : &me, argv, RUN_WAIT_MS, &r.out, &r.err);
	r.ms = tl_now_ms() - t0;
	ck_assert_msg(st >= 0, "running %s: %s", argv[0], strerror(-st));
	r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
	return r;
}

static struct run ctl_v(const struct agent_cred *cred, const char *a,
			va_list ap)
{
	const char *args[15];
	size_t n = 0;

	for (; a && n < 14; a = va_arg(ap, const char *))
		args[n++] = a;
	args[n] = NULL;
	return ctl_argv(cred, args);
}

/* rdmabrokerctl A... up to the first NULL. */
static struct run ctl(const char *a, ...)
{
	struct run r;
	va_list ap;

	va_start(ap, a);
	r = ctl_v(NULL, a, ap);
	va_end(ap);
	return r;
}

static struct run ctl_as(const struct agent_cred *cred, const char *a, ...)
{
	struct run r;
	va_list ap;

	va_start(ap, a);
	r = ctl_v(cred, a, ap);
	va_end(ap);
	return r;
}

#define assert_code(r, want, what)                                             \
	ck_assert_msg((r).code == (want),                                      \
		      "%s: exit %d, expected %d\nstdout:\n%s\nstderr:\n%s",    \
		      (what), (r).code, (want), (r).out, (r).err)

/* The command names `rdmabrokerctl --help` lists under "Commands:". */
static size_t command_names(char names[][16])
{
	struct run r = ctl("--help", NULL);
	const char *p;
	size_t n = 0;

	assert_code(r, 0, "--help");
	p = strstr(r.out, "\nCommands:\n");
	ck_assert_msg(p, "no command list:\n%s", r.out);
	for (p = strchr(p + 1, '\n') + 1; *p == ' '; p = strchr(p, '\n') + 1) {
		/* "  name ..." starts a command; deeper lines continue one. */
		if (p[2] != ' ' && n < MAX_COMMANDS)
			sscanf(p + 2, "%15s", names[n++]);
		if (!strchr(p, '\n'))
			break;
	}
	run_free(&r);
	ck_assert_uint_ge(n, 10);
	return n;
}

/* --- the JSON rule -----------------------------------------------------------
 */

enum shape { LIST, ONE };

/* Keys whose values are lists: each must be an array. */
static const char *const list_keys[] = { "domains", "devices", "importers",
					 "wqs",	    "shown",   "mr_list",
					 NULL };

/* --- help ------------------------------------------------------------------
 */

START_TEST(test_help_every_command)
{
	char names[MAX_COMMANDS][16], want[96], sock[PATH_MAX];
	size_t n = command_names(names);
	struct run r;

	snprintf(sock, sizeof(sock), "%s/none.sock", dir);
	r = ctl("help", NULL);
	assert_code(r, 0, "help");
	ck_assert_msg(strstr(r.out, "Commands:"), "%s", r.out);
	run_free(&r);
	r = ctl("help", "frobnicate", NULL);
	assert_code(r, 2, "help frobnicate");
	ck_assert_msg(strstr(r.err, "rdmabrokerctl help") &&
			      !strstr(r.err, "Commands:"),
		      "%s", r.err);
	run_free(&r);
	for (size_t i = 0; i < n; i++) {
		const char *c = names[i];
		const char *forms[][4] = {
			{ "help", c },
			{ c, "--help" },
			{ c, "-h" },
			{ "--help", c },
			{ c, "help" },
			{ "-j", c, "--help" },
			{ "-s", sock, c, "-h" },
		};

		snprintf(want, sizeof(want),
			 "Usage: rdmabrokerctl [OPTION]... %s", c);
		for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
			r = ctl(forms[f][0], forms[f][1], forms[f][2],
				forms[f][3], NULL);
			assert_code(r, 0, forms[f][0]);
			ck_assert_msg(
				strncmp(r.out, want, strlen(want)) == 0 &&
					strstr(r.out, "--timeout") && !*r.err,
				"%s %s %s: not %s's help:\n%s%s", forms[f][0],
				forms[f][1], forms[f][2] ? forms[f][2] : "", c,
				r.out, r.err);
			run_free(&r);
		}
		/* A usage error: short, and says where the help is. */
		snprintf(want, sizeof(want), "See 'rdmabrokerctl help %s'.", c);
		r = ctl("-s", sock, c, "--frobnicate", NULL);
		assert_code(r, 2, c);
		ck_assert_msg(strstr(r.err, want) &&
				      !strstr(r.err, "Commands:") && !*r.out,
			      "%s --frobnicate:\n%s", c, r.err);
		run_free(&r);
	}
}
END_TEST

START_TEST(test_bad_global_options)
{
	static const char *const bad[][3] = {
		{ "--timeout", "soon", "status" },
		{ "status", "-t", NULL },
		{ "--frobnicate", "status", NULL },
		{ "-t", "-1", "status" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct run r = ctl(bad[i][0], bad[i][1], bad[i][2], NULL);

		assert_code(r, 2, bad[i][0]);
		ck_assert_msg(*r.err && !strstr(r.err, "Commands:"), "%s",
			      r.err);
		run_free(&r);
	}
}
END_TEST

/* --- with a daemon ----------------------------------------------------------
 */

static void daemon_up(void)
{
	char conf[PATH_MAX], text[256];
	const char *args[] = { "--config", conf,       "--socket-mode",
			       "0666",	   "--device", "soft",
			       NULL };
	int ret;

	snprintf(conf, sizeof(conf), "%s/rdmabroker.conf", dir);
	snprintf(text, sizeof(text), "[xrcd decl]\ndomains = uid-%u\n",
		 (unsigned int)geteuid());
	ck_assert_int_eq(tl_write_conf(conf, text), 0);
	ret = tl_daemon_start(&D, args);
	ck_assert_msg(ret == 0, "cannot start the daemon: %s", strerror(-ret));
	ck_assert_int_eq(chmod(D.dir, 0711), 0);
	open_dirs(D.dir);
}

/* What the listings show: a DM, a private XRCD, an RSS object over two
 * WQs, held by @cl. */
struct held {
	struct ibc_client *cl;
	struct ibc_ctx *ctx;
	struct ibc_dm *dm, *dm2;
	struct ibc_xrcd *x;
	struct ibc_cq *cq;
	struct ibc_wq *wq[2];
	struct ibc_rss *rss;
};

static void hold(struct held *h)
{
	struct ibc_rss_attr a = { .port_num = 1,
				  .log_ind_tbl_size = 2,
				  .num_wqs = 2 };
	struct ibc_xrcd *decl;
	uint64_t ids[2];

	memset(h, 0, sizeof(*h));
	ck_assert_int_eq(tl_connect(D.sock, RUN_WAIT_MS, &h->cl), 0);
	ck_assert_int_eq(ibc_open(h->cl, NULL, &h->ctx), 0);
	ck_assert_msg(ibc_dm_alloc(h->ctx, 4096, 0, &h->dm) == 0, "%s",
		      ibc_last_error());
	ck_assert_msg(ibc_dm_alloc(h->ctx, 4096, 0, &h->dm2) == 0, "%s",
		      ibc_last_error());
	ck_assert_int_eq(ibc_xrcd_open(h->ctx, "mine", O_CREAT, &h->x), 0);
	/* A declared name outlives its opens (and `xrcd remove` wants it
	 * unheld). */
	ck_assert_int_eq(ibc_xrcd_open(h->ctx, "decl", O_CREAT, &decl), 0);
	ck_assert_int_eq(ibc_xrcd_close(decl), 0);
	ck_assert_int_eq(ibc_cq_create(h->ctx, 16, &h->cq), 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(ibc_wq_create(h->ctx, h->cq, NULL, &h->wq[i]),
				 0);
		ids[i] = ibc_wq_id(h->wq[i]);
	}
	a.wq_ids = ids;
	a.hash_fields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4;
	a.match.af = AF_INET;
	a.match.prefix_len = 0;
	ck_assert_msg(ibc_rss_create(h->ctx, &a, &h->rss) == 0,
		      "ibc_rss_create: %s", ibc_last_error());
}

static void unhold(struct held *h)
{
	/* Whatever the actions left; the session's end takes the rest. */
	ibc_disconnect(h->cl);
}

/* Every command and subcommand with the JSON shape it must print. */
struct form {
	const char *argv[5];
	enum shape shape;
	bool admin; /* an action: needs root here */
};

START_TEST(test_json_rule_every_command)
{
	char names[MAX_COMMANDS][16], dm_id[24], dm2_id[24], rss_id[24];
	char victim_id[24], why[200];
	size_t n_names = command_names(names);
	struct ibc_client *victim;
	struct ibc_client_info info;
	struct held h;

	daemon_up();
	hold(&h);
	ck_assert_int_eq(tl_connect(D.sock, RUN_WAIT_MS, &victim), 0);
	ck_assert_int_eq(ibc_client_info(victim, &info, sizeof(info)), 0);
	snprintf(victim_id, sizeof(victim_id), "%llu",
		 (unsigned long long)info.client_id);
	snprintf(dm_id, sizeof(dm_id), "%llu",
		 (unsigned long long)ibc_dm_id(h.dm));
	snprintf(dm2_id, sizeof(dm2_id), "%llu",
		 (unsigned long long)ibc_dm_id(h.dm2));
	snprintf(rss_id, sizeof(rss_id), "%llu",
		 (unsigned long long)ibc_rss_id(h.rss));
	{
		char dom[80];
		const struct form forms[] = {
			{ { "status" }, ONE, false },
			{ { "devices" }, LIST, false },
			{ { "domains" }, LIST, false },
			{ { "clients" }, LIST, false },
			{ { "objects" }, LIST, false },
			{ { "objects", "--client", victim_id }, LIST, false },
			{ { "dm" }, LIST, false },
			{ { "dm", "list" }, LIST, false },
			{ { "dm", "show", dm_id }, ONE, false },
			{ { "xrcd" }, LIST, false },
			{ { "xrcd", "list" }, LIST, false },
			{ { "xrcd", "show", "mine" }, ONE, false },
			{ { "xrcd", "show", "decl" }, ONE, false },
			{ { "rss" }, LIST, false },
			{ { "rss", "list" }, LIST, false },
			{ { "rss", "show", rss_id }, ONE, false },
			{ { "metrics" }, ONE, false },
			{ { "dm", "free", dm_id }, ONE, true },
			{ { "dm", "revoke", dm2_id }, ONE, true },
			{ { "xrcd", "remove", "decl" }, ONE, true },
			{ { "domain", "rekey", dom, "--force" }, ONE, true },
			{ { "evict", victim_id }, ONE, true },
			{ { "cdi" }, ONE, false },
		};
		size_t n_forms = sizeof(forms) / sizeof(forms[0]);

		snprintf(dom, sizeof(dom), "uid-%u", (unsigned int)geteuid());
		/* Every command has a rule here. */
		for (size_t i = 0; i < n_names; i++) {
			size_t f = 0;

			while (f < n_forms &&
			       strcmp(forms[f].argv[0], names[i]))
				f++;
			ck_assert_msg(f < n_forms,
				      "command %s has no JSON rule in this "
				      "test",
				      names[i]);
		}
		for (size_t f = 0; f < n_forms; f++) {
			const char *const *a = forms[f].argv;
			struct run r;

			if (forms[f].admin && geteuid() != 0)
				continue;
			/* --json first, -j last, -j between the command
			 * and its arguments with --pretty. */
			for (int v = 0; v < (forms[f].admin ? 1 : 3); v++) {
				const char *args[12];
				size_t k = 0;

				if (v == 0) {
					args[k++] = "--json";
					args[k++] = "-s";
					args[k++] = D.sock;
				}
				if (v == 2)
					args[k++] = "--pretty";
				for (size_t i = 0; i < 4 && a[i]; i++) {
					args[k++] = a[i];
					if (v == 2 && i == 0)
						args[k++] = "-j";
				}
				if (v != 0) {
					args[k++] = "--socket";
					args[k++] = D.sock;
				}
				if (v == 1)
					args[k++] = "-j";
				args[k] = NULL;
				r = ctl_argv(NULL, args);
				ck_assert_msg(r.code == 0,
					      "%s %s %s: exit %d: %s", a[0],
					      a[1] ? a[1] : "",
					      a[2] ? a[2] : "", r.code, r.err);
				ck_assert_msg(json_shape(r.out,
							 forms[f].shape == LIST,
							 list_keys, why,
							 sizeof(why)),
					      "%s %s %s (form %d): %s:\n%s",
					      a[0], a[1] ? a[1] : "",
					      a[2] ? a[2] : "", v, why, r.out);
				if (v == 2 && strchr(r.out, '{'))
					ck_assert_msg(
						strchr(r.out, '\n') <
							r.out + strlen(r.out) -
								1,
						"--pretty is one line:\n%s",
						r.out);
				run_free(&r);
			}
		}
	}
	unhold(&h);
	ibc_disconnect(victim);
}
END_TEST

/* --- timeouts ---------------------------------------------------------------
 */

START_TEST(test_timeout_stopped_daemon)
{
	struct run r;

	daemon_up();
	r = ctl("-s", D.sock, "status", NULL);
	assert_code(r, 0, "status");
	run_free(&r);
	ck_assert_int_eq(kill(D.pid, SIGSTOP), 0);
	r = ctl("status", "-s", D.sock, "--timeout", "1", NULL);
	ck_assert_int_eq(kill(D.pid, SIGCONT), 0);
	assert_code(r, 1, "status against a stopped daemon");
	ck_assert_msg(strstr(r.err, "did not answer") &&
			      strstr(r.err, "--timeout"),
		      "%s", r.err);
	ck_assert_msg(r.ms < 8000, "took %lld ms", (long long)r.ms);
	run_free(&r);
}
END_TEST

/* A socket that is listened on and never accepted: no --timeout, the
 * default. */
START_TEST(test_timeout_default)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct run r;

	ck_assert_int_ge(fd, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/silent.sock", dir);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 4), 0);
	r = ctl("-s", sa.sun_path, "devices", NULL);
	close(fd);
	assert_code(r, 1, "devices against a silent listener");
	ck_assert_msg(strstr(r.err, "did not answer"), "%s", r.err);
	/* A few seconds: not at once, not forever. */
	ck_assert_msg(r.ms >= 2000 && r.ms < RUN_WAIT_MS - 2000, "took %lld ms",
		      (long long)r.ms);
	run_free(&r);
}
END_TEST

/* --- error sentences --------------------------------------------------------
 */

START_TEST(test_connect_errors)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char sock[PATH_MAX];
	struct run r;
	int fd;

	snprintf(sock, sizeof(sock), "%s/none.sock", dir);
	r = ctl("-s", sock, "status", NULL);
	assert_code(r, 1, "no socket");
	ck_assert_msg(strstr(r.err, sock) &&
			      strstr(r.err, "is rdmabrokerd running?") &&
			      strstr(r.err, "systemctl start "
					    "rdmabrokerd.socket") &&
			      strstr(r.err, "RDMABROKER_SOCKET"),
		      "%s", r.err);
	run_free(&r);

	/* A socket file nobody listens on. */
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/dead.sock", dir);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	r = ctl("-s", sa.sun_path, "status", NULL);
	assert_code(r, 1, "a dead socket");
	ck_assert_msg(strstr(r.err, "rdmabrokerd has stopped"), "%s", r.err);
	run_free(&r);
	if (geteuid() != 0)
		return;

	/* A user outside the socket's group: told to join it. */
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/group.sock", dir);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 4), 0);
	ck_assert_int_eq(chown(sa.sun_path, 0, 4321), 0);
	ck_assert_int_eq(chmod(sa.sun_path, 0660), 0);
	{
		struct agent_cred nobody = agent_cred(65534, 65534, AGENT_END);

		r = ctl_as(&nobody, "-s", sa.sun_path, "status", NULL);
	}
	close(fd);
	assert_code(r, 1, "permission denied");
	ck_assert_msg(strstr(r.err, "Permission denied") &&
			      strstr(r.err, "group 4321: join it"),
		      "%s", r.err);
	run_free(&r);
}
END_TEST

/* Root only: what a non-administrator is told. */
START_TEST(test_non_admin_answers)
{
	struct agent_cred nobody = agent_cred(65534, 65534, AGENT_END);
	struct ibc_client *cl;
	struct run r, r2;

	daemon_up();
	/* uid-0 exists: root has a session. */
	ck_assert_int_eq(tl_connect(D.sock, RUN_WAIT_MS, &cl), 0);
	r = ctl_as(&nobody, "-s", D.sock, "dm", "free", "1", NULL);
	assert_code(r, 1, "dm free as nobody");
	ck_assert_msg(strstr(r.err, "only administrators") &&
			      !strstr(r.err, "dm-admin"),
		      "%s", r.err);
	run_free(&r);

	/* No such domain, and a domain of others: the same answer. */
	r = ctl_as(&nobody, "-s", D.sock, "objects", "--domain", "nosuch",
		   NULL);
	r2 = ctl_as(&nobody, "-s", D.sock, "objects", "--domain", "uid-0",
		    NULL);
	assert_code(r, 1, "objects --domain nosuch");
	assert_code(r2, 1, "objects --domain uid-0 as nobody");
	ck_assert_msg(strstr(r.err, "no such domain: nosuch"), "%s", r.err);
	ck_assert_msg(strstr(r2.err, "no such domain: uid-0"), "%s", r2.err);
	run_free(&r);
	run_free(&r2);
	/* Root sees uid-0, which has no objects: an empty table. */
	r = ctl("-s", D.sock, "objects", "--domain", "uid-0", NULL);
	assert_code(r, 0, "objects --domain uid-0 as root");
	run_free(&r);

	/* status: whose figures. */
	r = ctl_as(&nobody, "-s", D.sock, "status", NULL);
	assert_code(r, 0, "status as nobody");
	ck_assert_msg(strstr(r.out, "your domain        uid-65534") &&
			      strstr(r.out, "domain clients") &&
			      !strstr(r.out, "requests served"),
		      "%s", r.out);
	run_free(&r);
	r = ctl_as(&nobody, "-s", D.sock, "-j", "status", NULL);
	ck_assert_msg(strstr(r.out, "\"figures_of\":\"uid-65534\""), "%s",
		      r.out);
	run_free(&r);
	r = ctl("-s", D.sock, "status", "-j", NULL);
	ck_assert_msg(strstr(r.out, "\"figures_of\":\"daemon\""), "%s", r.out);
	run_free(&r);
	ibc_disconnect(cl);
}
END_TEST

static Suite *ctl_cli_suite(void)
{
	Suite *s = suite_create("ctl_cli");
	TCase *tc;

	tc = tcase_create("help");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_help_every_command);
	tcase_add_test(tc, test_bad_global_options);
	suite_add_tcase(s, tc);

	tc = tcase_create("json");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_json_rule_every_command);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_timeout_stopped_daemon);
	tcase_add_test(tc, test_timeout_default);
	tcase_add_test(tc, test_connect_errors);
	if (geteuid() == 0)
		tcase_add_test(tc, test_non_admin_answers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("ctl_cli", ctl_cli_suite());
}
