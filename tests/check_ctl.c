// SPDX-License-Identifier: MIT
/*
 * rdmabrokerctl ($RDMABROKERCTL), the built program, against the real
 * daemon: a non-administrator sees its own domain only, root and members of
 * [broker] admin_group see all; every --json output is one valid JSON
 * value (checked by the recursive-descent parser below); usage errors exit
 * 2, a missing broker exits 1 with a message; what a client or the broker
 * sent (a process name with terminal escapes, bytes that are not UTF-8) is
 * escaped in the tables, the JSON and the messages. Other users run through
 * agent_run() (tests/agent.c), which needs root: those tests are the suite
 * "ctl_root", the program check_ctl_root built from this file with
 * -DCK_ROOT_PROGRAM=1, which exits 77 (SKIP) when not run as root.
 */
#include "config.h"

#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "tests/agent.h"
#include "tests/cklib.h"
#include "tests/jsoncheck.h"
#include "tests/testlib.h"

#define MAX_AGENTS 4
#define RUN_WAIT_MS 10000

static struct tl_daemon D;
static struct agent A[MAX_AGENTS];
static size_t n_agents;
static char *cfg_dir;
static char cfg_path[PATH_MAX];
static struct tl_named_client N;
static pid_t fake_pid;

static void setup(void)
{
	memset(&D, 0, sizeof(D));
	D.pid = -1;
	N.pid = 0;
	N.fd = -1;
	fake_pid = 0;
	for (size_t i = 0; i < MAX_AGENTS; i++) {
		A[i].pid = -1;
		A[i].to = A[i].from = -1;
	}
	n_agents = 0;
	cfg_dir = NULL;
}

static void teardown(void)
{
	for (size_t i = 0; i < MAX_AGENTS; i++)
		agent_stop(&A[i]);
	tl_named_client_stop(&N);
	if (fake_pid > 0) {
		kill(fake_pid, SIGKILL);
		tl_wait_pid(fake_pid, TL_WAIT_MS, NULL);
		fake_pid = 0;
	}
	tl_daemon_stop(&D);
	if (cfg_dir) {
		tl_rmtree(cfg_dir);
		free(cfg_dir);
		cfg_dir = NULL;
	}
}

/* --- the JSON checker (tests/jsoncheck.c) ------------------------------ */

START_TEST(test_json_checker)
{
	static const char *const good[] = {
		"[]",
		" {} \n",
		"[1,-2.5e+3,0,\"a\\\"b\\u00e9\",true,false,null]",
		"{\"a\":{\"b\":[{}]},\"c\":\"\"}",
		"\"x\"",
		"0",
		"\"caf\xc3\xa9 \xf0\x9f\x98\x80\"",
	};
	static const char *const bad[] = {
		"",
		"[",
		"[1,]",
		"{\"a\"}",
		"{\"a\":1,}",
		"[01]",
		"[1.]",
		"\"a\nb\"",
		"[\"\\x\"]",
		"{a:1}",
		"[1] [2]",
		"tru",
		"[-]",
		"{\"a\":1 \"b\":2}",
		"[\"\\u12g4\"]",
		/* Not UTF-8: a stray byte, an overlong form, a surrogate, a
		 * sequence cut short by the quote. */
		"\"\xff\"",
		"\"\xc0\xaf\"",
		"\"\xed\xa0\x80\"",
		"\"\xc3\"",
	};
	char kind;
	int n;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(json_valid(good[i], &kind, &n), "refused: %s",
			      good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!json_valid(bad[i], &kind, &n), "accepted: %s",
			      bad[i]);
	ck_assert(json_valid("[{\"a\":[1,2]},{},3]", &kind, &n));
	ck_assert_int_eq(kind, '[');
	ck_assert_int_eq(n, 3);
	ck_assert(json_valid("{\"a\":1,\"b\":[]}", &kind, &n));
	ck_assert_int_eq(kind, '{');
	ck_assert_int_eq(n, 2);
}
END_TEST

/* --- running the CLI ----------------------------------------------------- */

struct run {
	int status;
	char *out;
	char *err;
};

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

/*
 * Wait until the daemon counts exactly the agents as clients: a CLI run
 * that just ended may not be gone yet, and would show up in the next one's
 * listing. The count is asked as root (only administrators see every
 * domain's clients), by a checker that counts itself.
 */
static void wait_only_agents(void)
{
	int64_t deadline = tl_now_ms() + TL_WAIT_MS;
	struct ibc_client *cl = NULL;
	int ret;

	if (D.pid <= 0 || n_agents == 0)
		return;
	ret = tl_connect(D.sock, RUN_WAIT_MS, &cl);
	ck_assert_msg(ret == 0, "ibc_connect: %s", ibc_last_error());
	for (;;) {
		struct ibc_status st;

		ret = ibc_status(cl, &st, sizeof(st));
		ck_assert_msg(ret == 0, "ibc_status: %s", ibc_last_error());
		if (st.clients == n_agents + 1)
			break;
		ck_assert_msg(tl_now_ms() < deadline,
			      "the daemon counts %u clients, %zu agents and "
			      "the checker",
			      st.clients, n_agents);
		tl_sleep_ms(5);
	}
	ibc_disconnect(cl);
}

/* rdmabrokerctl --socket SOCK ARGS... under @cred. */
static struct run ctl_as(const struct agent_cred *cred, const char *sock,
			 const char *a1, const char *a2, const char *a3)
{
	const char *argv[8];
	struct run r = { 0 };
	size_t n = 0;

	argv[n++] = tl_ctl_path();
	if (sock) {
		argv[n++] = "--socket";
		argv[n++] = sock;
	}
	if (a1)
		argv[n++] = a1;
	if (a2)
		argv[n++] = a2;
	if (a3)
		argv[n++] = a3;
	argv[n] = NULL;
	wait_only_agents();
	r.status = agent_run(cred, argv, RUN_WAIT_MS, &r.out, &r.err);
	ck_assert_msg(r.status >= 0, "running %s: %s", argv[0],
		      strerror(-r.status));
	return r;
}

static int exit_code(const struct run *r)
{
	return WIFEXITED(r->status) ? WEXITSTATUS(r->status) :
				      1000 + WTERMSIG(r->status);
}

static void assert_exit(const struct run *r, int code, const char *what)
{
	ck_assert_msg(exit_code(r) == code,
		      "%s: exit %d, expected %d\nstdout:\n%s\nstderr:\n%s",
		      what, exit_code(r), code, r->out, r->err);
}

/* Names in the first column of a table, after its header. */
static size_t table_names(const char *out, char names[][64], size_t max)
{
	const char *line = out, *nl;
	size_t n = 0;
	bool header = true;

	for (; *line; line = nl ? nl + 1 : line + strlen(line)) {
		nl = strchr(line, '\n');
		if (header) {
			header = false;
			continue;
		}
		if (line == nl)
			continue;
		if (n < max)
			sscanf(line, "%63s", names[n]);
		n++;
		if (!nl)
			break;
	}
	return n;
}

static bool has_name(char names[][64], size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return true;
	return false;
}

/* --- the daemon and its clients ---------------------------------------------
 */

static void daemon_up(const char *conf)
{
	static const char *args[] = { "--config", NULL, "--socket-mode", "0666",
				      NULL };
	char *top;
	FILE *f;
	int ret;

	cfg_dir = tl_mkdtemp();
	ck_assert_ptr_nonnull(cfg_dir);
	snprintf(cfg_path, sizeof(cfg_path), "%s/rdmabroker.conf", cfg_dir);
	f = fopen(cfg_path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(conf ? conf : "# defaults\n", f);
	ck_assert_int_eq(fclose(f), 0);
	args[1] = cfg_path;
	ret = tl_daemon_start(&D, args);
	ck_assert_msg(ret == 0, "cannot start %s: %s", tl_daemon_path(),
		      strerror(-ret));
	ck_assert_int_eq(chmod(D.dir, 0711), 0);
	top = strdup(D.dir);
	ck_assert_ptr_nonnull(top);
	ck_assert_int_eq(chmod(dirname(top), 0711), 0);
	free(top);
}

/* A connected client of @cred, to make its domain exist. */
static void client_as(struct agent_cred cred)
{
	struct agent *a;
	int ret;

	ck_assert_uint_lt(n_agents, MAX_AGENTS);
	a = &A[n_agents++];
	ret = agent_start(a, &cred, D.sock);
	ck_assert_msg(ret == 0, "agent of uid %u: %s", (unsigned int)cred.uid,
		      strerror(-ret));
	ck_assert_int_eq(agent_call(a, AGENT_CONNECT, NULL, 0, RUN_WAIT_MS), 0);
	ck_assert_msg(a->rep.ret == 0, "uid %u: ibc_connect: %s",
		      (unsigned int)cred.uid, a->rep.error);
	ck_assert_int_eq(agent_call(a, AGENT_OPEN, NULL, 0, RUN_WAIT_MS), 0);
	ck_assert_msg(a->rep.ret == 0, "uid %u: ibc_open: %s",
		      (unsigned int)cred.uid, a->rep.error);
}

/* Domains as @cred sees them with `domains` and `--json domains`, which
 * must agree; returns the count. */
static size_t domains_as(const struct agent_cred *cred, char names[][64],
			 size_t max)
{
	struct run r = ctl_as(cred, D.sock, "domains", NULL, NULL);
	size_t n;
	char kind;
	int count;

	assert_exit(&r, 0, "domains");
	ck_assert_str_eq(r.err, "");
	ck_assert_msg(strncmp(r.out, "NAME", 4) == 0, "no header:\n%s", r.out);
	n = table_names(r.out, names, max);
	run_free(&r);

	r = ctl_as(cred, D.sock, "--json", "domains", NULL);
	assert_exit(&r, 0, "--json domains");
	ck_assert_msg(json_valid(r.out, &kind, &count),
		      "--json domains is not JSON:\n%s", r.out);
	ck_assert_int_eq(kind, '[');
	ck_assert_msg((size_t)count == n,
		      "the table has %zu domains, the JSON %d:\n%s", n, count,
		      r.out);
	for (size_t i = 0; i < n && i < max; i++) {
		char key[96];

		snprintf(key, sizeof(key), "\"name\":\"%s\"", names[i]);
		ck_assert_msg(strstr(r.out, key), "%s is not in the JSON:\n%s",
			      names[i], r.out);
	}
	run_free(&r);
	return n;
}

/* --- visibility ------------------------------------------------------------
 */

static const char lab_conf[] = "[domain lab]\nusers = 4242\n";

START_TEST(test_domains_non_admin)
{
	struct agent_cred nobody = agent_cred(65534, 65534, AGENT_END);
	struct agent_cred lab = agent_cred(4242, 4242, AGENT_END);
	char names[16][64];
	struct run r;
	size_t n;
	char kind;
	int count;

	daemon_up(lab_conf);
	client_as(agent_cred(4242, 4242, AGENT_END));
	client_as(agent_cred(4243, 4243, AGENT_END));
	client_as(agent_cred(0, 0, AGENT_END));

	n = domains_as(&nobody, names, 16);
	ck_assert_msg(n == 1, "uid 65534 sees %zu domains", n);
	ck_assert_str_eq(names[0], "uid-65534");

	n = domains_as(&lab, names, 16);
	ck_assert_msg(n == 1, "uid 4242 sees %zu domains", n);
	ck_assert_str_eq(names[0], "lab");

	/* And the clients of its domain only: itself. */
	r = ctl_as(&nobody, D.sock, "clients", NULL, NULL);
	assert_exit(&r, 0, "clients");
	n = table_names(r.out, names, 16);
	ck_assert_msg(n == 1, "uid 65534 sees %zu clients:\n%s", n, r.out);
	run_free(&r);
	r = ctl_as(&nobody, D.sock, "--json", "clients", NULL);
	assert_exit(&r, 0, "--json clients");
	ck_assert_msg(json_valid(r.out, &kind, &count) && count == 1,
		      "uid 65534: --json clients:\n%s", r.out);
	ck_assert_msg(strstr(r.out, "\"uid\":65534,") &&
			      strstr(r.out, "\"domain\":\"uid-65534\""),
		      "uid 65534 sees:\n%s", r.out);
	run_free(&r);
}
END_TEST

/*
 * rdmabrokerctl dm and devices --json: a user sees its own domain's device
 * memory (in use, quota, room), never the device's, which moves with other
 * domains' DMs; an administrator sees both.
 */
START_TEST(test_dm_non_admin)
{
	static const char mine[] = "soft0: this domain uses 0 of its 65536 "
				   "bytes; a DM of up to 65536 bytes fits its "
				   "quotas\n";
	struct agent_cred nobody = agent_cred(65534, 65534, AGENT_END);
	struct agent_cred root = agent_cred(0, 0, AGENT_END);
	struct ibc_client *cl = NULL;
	struct ibc_ctx *x = NULL;
	struct ibc_dm *dm = NULL;
	struct run r;
	char kind;
	int count;

	daemon_up(NULL);
	/* Root's domain holds a DM; n_agents stays 0 for ctl_as(). */
	ck_assert_int_eq(tl_connect(D.sock, TL_WAIT_MS, &cl), 0);
	ck_assert_int_eq(ibc_open(cl, NULL, &x), 0);
	ck_assert_int_eq(ibc_dm_alloc(x, 8192, 0, &dm), 0);

	r = ctl_as(&nobody, D.sock, "dm", NULL, NULL);
	assert_exit(&r, 0, "dm");
	ck_assert_msg(strstr(r.out, mine) && !strstr(r.out, "reserved"),
		      "uid 65534 sees:\n%s", r.out);
	run_free(&r);
	r = ctl_as(&nobody, D.sock, "--json", "devices", NULL);
	assert_exit(&r, 0, "--json devices");
	ck_assert_msg(json_valid(r.out, &kind, &count) &&
			      !strstr(r.out, "reserved") &&
			      strstr(r.out, "\"dm_domain_used\":0,"
					    "\"dm_domain_limit\":65536,"
					    "\"dm_room\":65536,"),
		      "uid 65534: --json devices:\n%s", r.out);
	run_free(&r);

	r = ctl_as(&root, D.sock, "dm", NULL, NULL);
	assert_exit(&r, 0, "dm as root");
	ck_assert_msg(strstr(r.out, "soft0: the broker has reserved 8192 of "
				    "262144 bytes of device memory\n") &&
			      strstr(r.out, "soft0: this domain uses 8192 of "
					    "its 65536 bytes"),
		      "root sees:\n%s", r.out);
	run_free(&r);
	r = ctl_as(&root, D.sock, "--json", "devices", NULL);
	assert_exit(&r, 0, "--json devices as root");
	ck_assert_msg(strstr(r.out, "\"dm_reserved\":8192,"), "%s", r.out);
	run_free(&r);
	ibc_disconnect(cl);
}
END_TEST

/*
 * The core's listings take the families' columns and fields from the
 * families (ctl's struct ctl_family_listing, the caps lists): their
 * layout, which scripts parse, stays as it was: the quotas in struct
 * ibc_quota's order (DM, XRCD, RSS: not the families' list's order), the
 * XRCD figure after internal_left, the DM figures last in a device.
 */
START_TEST(test_listing_layout)
{
	static const char dom_head[] =
		"NAME                 KIND       MEMBERS CONTEXTS DM_BYTES    "
		"      XRCDS     RSS       OBJECTS     UNACCOUNTED "
		"KERNEL:REG:OWN:INTENT  REKEYS     CLIENTS   CGROUP\n";
	static const char lab_row[] =
		"lab                  configured 1       1        0/65536     "
		"      0/3       0/16      1/65536     0           1:0:1:0     "
		"           0          1/256     -\n";
	static const char dev_head[] =
		"NAME         KIND   TRANSPORT  IMPORT XRC  MAX_DM_SIZE  "
		"RSS_TABLE  STATE\n"
		"soft0        soft   software   yes    yes  262144       8192  "
		"     present\n";
	struct agent_cred root = agent_cred(0, 0, AGENT_END);
	struct run r;

	daemon_up("[domain lab]\nusers = 4242\ndm_bytes = 65536\n"
		  "xrcds = 3\n");
	client_as(agent_cred(4242, 4242, AGENT_END));

	r = ctl_as(&root, D.sock, "domains", NULL, NULL);
	assert_exit(&r, 0, "domains");
	ck_assert_msg(strncmp(r.out, dom_head, strlen(dom_head)) == 0 &&
			      strstr(r.out, lab_row),
		      "domains:\n%s", r.out);
	run_free(&r);
	r = ctl_as(&root, D.sock, "--json", "domains", NULL);
	assert_exit(&r, 0, "--json domains");
	ck_assert_msg(strstr(r.out, "\"internal_left\":0,\"xrcd_orphans\":0,"
				    "\"old_contexts\":0,\"rekeys\":0,"
				    "\"used\":{\"dm_bytes\":0,\"xrcds\":0,"
				    "\"rss_tables\":0,\"objects\":1,"
				    "\"clients\":1},\"limit\":{\"dm_bytes\":"
				    "65536,\"xrcds\":3,\"rss_tables\":16,"
				    "\"objects\":65536,\"clients\":256},"),
		      "--json domains:\n%s", r.out);
	run_free(&r);

	r = ctl_as(&root, D.sock, "devices", NULL, NULL);
	assert_exit(&r, 0, "devices");
	ck_assert_msg(strncmp(r.out, dev_head, strlen(dev_head)) == 0,
		      "devices:\n%s", r.out);
	run_free(&r);
	r = ctl_as(&root, D.sock, "--json", "devices", NULL);
	assert_exit(&r, 0, "--json devices");
	ck_assert_msg(strstr(r.out, "\"xrc\":true,\"ports\":1,\"max_dm_size\":"
				    "262144,\"max_rss_table_size\":8192,"
				    "\"rss_hash_fields\":255,"
				    "\"rss_hash_functions\":1,\"max_qp\":") &&
			      strstr(r.out, "\"max_mr_size\":"
					    "18446744073709551615,"
					    "\"rss_qp_types\":256,"
					    "\"dm_reserved\":0,"
					    "\"dm_domain_used\":0,"
					    "\"dm_domain_limit\":"),
		      "--json devices:\n%s", r.out);
	ck_assert_msg(strstr(r.out, ",\"dm_shared\":true,\"dm_reason\":\"\"}"),
		      "--json devices:\n%s", r.out);
	run_free(&r);
}
END_TEST

START_TEST(test_domains_admin)
{
	struct agent_cred root = agent_cred(0, 0, AGENT_END);
	char names[16][64];
	size_t n;

	daemon_up(lab_conf);
	client_as(agent_cred(4242, 4242, AGENT_END));
	client_as(agent_cred(4243, 4243, AGENT_END));

	n = domains_as(&root, names, 16);
	ck_assert_msg(n == 3, "root sees %zu domains", n);
	ck_assert(has_name(names, n, "lab"));
	ck_assert(has_name(names, n, "uid-4243"));
	ck_assert(has_name(names, n, "uid-0"));
}
END_TEST

START_TEST(test_admin_group)
{
	struct agent_cred supp = agent_cred(4261, 4261, 4260, AGENT_END);
	struct agent_cred prim = agent_cred(4262, 4260, AGENT_END);
	struct agent_cred other = agent_cred(4263, 4263, 4264, AGENT_END);
	char names[16][64];
	struct run r;
	size_t n;

	daemon_up("[broker]\nadmin_group = 4260\n[domain lab]\n"
		  "users = 4242\n");
	client_as(agent_cred(4242, 4242, AGENT_END));
	client_as(agent_cred(4243, 4243, AGENT_END));

	/* A member by a supplementary group: everything, itself too. */
	n = domains_as(&supp, names, 16);
	ck_assert_msg(n == 3, "uid 4261 (admin group) sees %zu domains", n);
	ck_assert(has_name(names, n, "lab"));
	ck_assert(has_name(names, n, "uid-4243"));
	ck_assert(has_name(names, n, "uid-4261"));
	r = ctl_as(&supp, D.sock, "clients", NULL, NULL);
	assert_exit(&r, 0, "clients");
	ck_assert_uint_eq(table_names(r.out, names, 16), 3);
	run_free(&r);

	/* By its primary group. */
	n = domains_as(&prim, names, 16);
	ck_assert_msg(n == 3, "uid 4262 (gid 4260) sees %zu domains", n);

	/* Not a member: its own. */
	n = domains_as(&other, names, 16);
	ck_assert_msg(n == 1, "uid 4263 sees %zu domains", n);
	ck_assert_str_eq(names[0], "uid-4263");
}
END_TEST

/* --- JSON ------------------------------------------------------------------
 */

START_TEST(test_json_outputs)
{
	static const char *const cmds[] = { "devices", "domains", "clients",
					    "status" };
	struct agent_cred creds[2] = {
		agent_cred(0, 0, AGENT_END),
		agent_cred(65534, 65534, AGENT_END),
	};

	daemon_up(lab_conf);
	client_as(agent_cred(4242, 4242, AGENT_END));
	for (size_t c = 0; c < 2; c++) {
		for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
			struct run r = ctl_as(&creds[c], D.sock, "--json",
					      cmds[i], NULL);
			char kind;
			int n;

			assert_exit(&r, 0, cmds[i]);
			ck_assert_msg(*r.err == '\0', "--json %s: stderr: %s",
				      cmds[i], r.err);
			ck_assert_msg(json_valid(r.out, &kind, &n),
				      "uid %u: --json %s is not JSON:\n%s",
				      (unsigned int)creds[c].uid, cmds[i],
				      r.out);
			ck_assert_int_eq(kind,
					 strcmp(cmds[i], "status") ? '[' : '{');
			if (strcmp(cmds[i], "devices") == 0) {
				ck_assert_int_eq(n, 1);
				ck_assert_msg(strstr(r.out, "\"soft0\""), "%s",
					      r.out);
			}
			if (strcmp(cmds[i], "clients") == 0)
				ck_assert_int_eq(n, c == 0 ? 2 : 1);
			run_free(&r);

			/* The table too. */
			r = ctl_as(&creds[c], D.sock, cmds[i], NULL, NULL);
			assert_exit(&r, 0, cmds[i]);
			ck_assert_msg(*r.out && *r.err == '\0', "%s: %s",
				      cmds[i], r.err);
			run_free(&r);
		}
	}
}
END_TEST

/* --- untrusted bytes ---------------------------------------------------- */

/*
 * What a hostile client (in its process name) or a hostile broker (in any
 * string) might send, 14 bytes: a clear screen, a newline, a C1 CSI, a
 * right-to-left override, a byte that is not UTF-8, a backslash.
 */
static const char evil[] = "\x1b[2J\n\xc2\x9b"
			   "1m\xe2\x80\xae\xff\\";
/* How the tables show it, and the JSON. */
static const char evil_table[] = "\\x1b[2J\\x0a\\xc2\\x9b1m\\xe2\\x80\\xae"
				 "\\xff\\\\";
static const char evil_json[] = "\\u001b[2J\\n\\u009b1m\\u202e\\ufffd\\\\";

/* @s written by json_string(), malloc'd. */
static char *json_of(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	json_string(f, s);
	ck_assert_int_eq(fclose(f), 0);
	return buf;
}

/* One JSON string, valid UTF-8 with no control character. */
static void assert_json_string(const char *in, const char *out)
{
	size_t off;
	char kind;
	int n;

	ck_assert_msg(json_valid(out, &kind, &n) && kind == '"',
		      "json_string(\"%s\") gave invalid JSON: %s", in, out);
	ck_assert_msg(tl_text_safe(out, strlen(out), NULL, &off),
		      "json_string(\"%s\"): byte %zu of %s", in, off, out);
}

START_TEST(test_json_string)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "", "\"\"" },
		{ "soft0", "\"soft0\"" },
		{ "caf\xc3\xa9", "\"caf\xc3\xa9\"" },
		{ "\"\\/", "\"\\\"\\\\/\"" },
		{ "\x1b[2J", "\"\\u001b[2J\"" },
		{ "a\nb\tc\r\x7f", "\"a\\nb\\tc\\u000d\\u007f\"" },
		{ "\xc2\x9b", "\"\\u009b\"" },
		{ "\xe2\x80\xae\xe2\x81\xa6\xe2\x80\xa8",
		  "\"\\u202e\\u2066\\u2028\"" },
		{ "\xff", "\"\\ufffd\"" },
		{ "\xc3(", "\"\\ufffd(\"" },
		{ "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"" },
		{ "\xf0\x9f\x98", "\"\\ufffd\\ufffd\\ufffd\"" },
	};
	struct tl_rng rng;
	char in[24];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out = json_of(cases[i].in);

		ck_assert_str_eq(out, cases[i].out);
		assert_json_string(cases[i].in, out);
		free(out);
	}
	/* Any two bytes, and random strings of the bytes that matter. */
	for (unsigned int a = 1; a < 256; a++) {
		for (unsigned int b = 0; b < 256; b++) {
			char *out;

			in[0] = (char)a;
			in[1] = (char)b;
			in[2] = '\0';
			out = json_of(in);
			assert_json_string(in, out);
			free(out);
		}
	}
	tl_rng_seed(&rng, 11);
	for (int i = 0; i < 5000; i++) {
		size_t n = tl_rng_below(&rng, sizeof(in));
		char *out;

		tl_rng_fill(&rng, in, n);
		for (size_t k = 0; k < n; k++)
			if (tl_rng_below(&rng, 2))
				in[k] = (char)(in[k] & 0x9f);
		in[n] = '\0';
		out = json_of(in);
		assert_json_string(in, out);
		free(out);
	}
}
END_TEST

/* The whole output is safe for a terminal: UTF-8, no control character
 * but newlines. */
static void assert_terminal_safe(const char *what, const char *text)
{
	size_t off;

	ck_assert_msg(tl_text_safe(text, strlen(text), "\n", &off),
		      "%s: byte %zu (0x%02x) is not safe for a terminal:\n%s",
		      what, off, (unsigned char)text[off], text);
}

/* `clients` and `--json clients` show a client named @evil (PR_SET_NAME)
 * escaped. */
START_TEST(test_clients_hostile_name)
{
	struct agent_cred me = agent_cred(geteuid(), getegid(), AGENT_END);
	struct run r;
	char kind;
	int n;

	ck_assert_uint_eq(strlen(evil), 14);
	daemon_up(NULL);
	ck_assert_int_eq(tl_named_client_start(&N, D.sock, evil), 0);

	r = ctl_as(&me, D.sock, "clients", NULL, NULL);
	assert_exit(&r, 0, "clients");
	assert_terminal_safe("clients", r.out);
	ck_assert_msg(strstr(r.out, evil_table),
		      "the name is not shown as %s:\n%s", evil_table, r.out);
	run_free(&r);

	r = ctl_as(&me, D.sock, "--json", "clients", NULL);
	assert_exit(&r, 0, "--json clients");
	ck_assert_msg(json_valid(r.out, &kind, &n) && kind == '[',
		      "--json clients is not JSON:\n%s", r.out);
	assert_terminal_safe("--json clients", r.out);
	ck_assert_msg(strstr(r.out, evil_json),
		      "the name is not in the JSON as %s:\n%s", evil_json,
		      r.out);
	run_free(&r);
}
END_TEST

/*
 * A broker that puts @evil in every string it sends, for each connection
 * until it is killed; with @refuse it refuses hello with @evil as the
 * sentence. Listens on @sock before it returns; the pid goes to fake_pid.
 */
/* The listing of fake_broker() when set: ids repeated, a cycle, a
 * session linked to itself, a parent with a higher id than its child,
 * a chain 20 deep. */
static bool fake_tree;
#define FAKE_TREE_N 29

static void fake_tree_list(Rdmab__ListClientsReply *lc)
{
	static const uint64_t pairs[][2] = { { 1, 0 }, { 1, 0 }, { 2, 1 },
					     { 2, 1 }, { 4, 0 }, { 3, 4 },
					     { 5, 6 }, { 6, 5 }, { 7, 7 } };
	static Rdmab__ClientInfo c[FAKE_TREE_N];
	static Rdmab__ClientInfo *cp[FAKE_TREE_N];

	for (size_t i = 0; i < FAKE_TREE_N; i++) {
		rdmab__client_info__init(&c[i]);
		c[i].comm = c[i].domain = c[i].library_version = (char *)"t";
		if (i < 9) {
			c[i].id = pairs[i][0];
			c[i].parent_id = pairs[i][1];
		} else {
			c[i].id = 100 + i - 9;
			c[i].parent_id = i > 9 ? c[i].id - 1 : 0;
		}
		cp[i] = &c[i];
	}
	lc->n_clients = FAKE_TREE_N;
	lc->clients = cp;
	lc->total = FAKE_TREE_N;
}

static void fake_broker(const char *sock, bool refuse)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	pid_t parent = getpid();
	int lfd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(lfd, 8), 0);
	fflush(stdout);
	fflush(stderr);
	fake_pid = fork();
	ck_assert_int_ge(fake_pid, 0);
	if (fake_pid > 0) {
		close(lfd);
		return;
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	for (;;) {
		static uint8_t buf[WIRE_MAX_PACKET];
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		ssize_t len;

		if (fd < 0)
			_exit(1);
		while ((len = recv(fd, buf, sizeof(buf), 0)) > 0) {
			Rdmab__DeviceCaps caps = RDMAB__DEVICE_CAPS__INIT;
			Rdmab__DeviceInfo dev = RDMAB__DEVICE_INFO__INIT;
			Rdmab__DeviceInfo *devs[] = { &dev };
			Rdmab__HelloReply hello = RDMAB__HELLO_REPLY__INIT;
			Rdmab__StatusReply st = RDMAB__STATUS_REPLY__INIT;
			Rdmab__ListDevicesReply ld =
				RDMAB__LIST_DEVICES_REPLY__INIT;
			Rdmab__QuotaInfo q = RDMAB__QUOTA_INFO__INIT;
			Rdmab__DomainInfo dom = RDMAB__DOMAIN_INFO__INIT;
			Rdmab__DomainInfo *doms[] = { &dom };
			Rdmab__ListDomainsReply lm =
				RDMAB__LIST_DOMAINS_REPLY__INIT;
			Rdmab__ClientInfo cl = RDMAB__CLIENT_INFO__INIT;
			Rdmab__ClientInfo *cls[] = { &cl };
			Rdmab__ListClientsReply lc =
				RDMAB__LIST_CLIENTS_REPLY__INIT;
			Rdmab__Reply rep = RDMAB__REPLY__INIT;
			Rdmab__DaemonMessage m = RDMAB__DAEMON_MESSAGE__INIT;
			Rdmab__Request *req;
			struct tl_buf b = { 0 };

			req = rdmab__request__unpack(NULL, (size_t)len, buf);
			if (!req)
				_exit(1);
			dev.name = dev.kind = dev.transport = (char *)evil;
			dev.caps = &caps;
			rep.serial = req->serial;
			rep.body_case = (Rdmab__Reply__BodyCase)req->body_case;
			switch (req->body_case) {
			case RDMAB__REQUEST__BODY_HELLO:
				if (refuse) {
					rep.error = EACCES;
					rep.message = (char *)evil;
					rep.body_case =
						RDMAB__REPLY__BODY__NOT_SET;
					break;
				}
				hello.protocol_version = WIRE_PROTOCOL_VERSION;
				hello.daemon_version = (char *)evil;
				hello.client_id = 1;
				hello.domain = (char *)evil;
				hello.n_devices = 1;
				hello.devices = devs;
				rep.hello = &hello;
				break;
			case RDMAB__REQUEST__BODY_STATUS:
				st.daemon_version = (char *)evil;
				st.device_kind = (char *)evil;
				st.protocol_version = WIRE_PROTOCOL_VERSION;
				rep.status = &st;
				break;
			case RDMAB__REQUEST__BODY_LIST_DEVICES:
				ld.n_devices = 1;
				ld.devices = devs;
				ld.total = 1;
				rep.list_devices = &ld;
				break;
			case RDMAB__REQUEST__BODY_LIST_DOMAINS:
				dom.name = dom.kind = (char *)evil;
				dom.used = dom.limit = &q;
				lm.n_domains = 1;
				lm.domains = doms;
				lm.total = 1;
				rep.list_domains = &lm;
				break;
			case RDMAB__REQUEST__BODY_LIST_CLIENTS:
				cl.comm = cl.domain = (char *)evil;
				cl.library_version = (char *)evil;
				lc.n_clients = 1;
				lc.clients = cls;
				lc.total = 1;
				if (fake_tree)
					fake_tree_list(&lc);
				rep.list_clients = &lc;
				break;
			default:
				rep.error = EOPNOTSUPP;
				rep.message = (char *)evil;
				rep.body_case = RDMAB__REPLY__BODY__NOT_SET;
			}
			m.kind_case = RDMAB__DAEMON_MESSAGE__KIND_REPLY;
			m.reply = &rep;
			tl_pb_message(&b, &m.base);
			if (tl_raw_send(fd, b.p, b.len, NULL, 0, 0) < 0)
				_exit(1);
			tl_buf_free(&b);
			rdmab__request__free_unpacked(req, NULL);
		}
		close(fd);
	}
}

/* Every command, as a table and as JSON, with a broker whose every string
 * is @evil: nothing reaches the terminal raw. */
START_TEST(test_hostile_broker)
{
	static const char *const cmds[] = { "status", "devices", "domains",
					    "clients" };
	struct agent_cred me = agent_cred(geteuid(), getegid(), AGENT_END);
	char *dir = tl_mkdtemp(), sock[PATH_MAX];

	ck_assert_ptr_nonnull(dir);
	snprintf(sock, sizeof(sock), "%s/fake.sock", dir);
	fake_broker(sock, false);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		struct run r = ctl_as(&me, sock, cmds[i], NULL, NULL);
		char kind;
		int n;

		assert_exit(&r, 0, cmds[i]);
		assert_terminal_safe(cmds[i], r.out);
		ck_assert_msg(strstr(r.out, evil_table), "%s:\n%s", cmds[i],
			      r.out);
		run_free(&r);

		r = ctl_as(&me, sock, "--json", cmds[i], NULL);
		assert_exit(&r, 0, cmds[i]);
		ck_assert_msg(json_valid(r.out, &kind, &n), "--json %s:\n%s",
			      cmds[i], r.out);
		assert_terminal_safe(cmds[i], r.out);
		ck_assert_msg(strstr(r.out, evil_json), "--json %s:\n%s",
			      cmds[i], r.out);
		run_free(&r);
	}
	free(dir);
}
END_TEST

/* A hostile listing of clients: every entry printed once, none lost to
 * a cycle, the indentation bounded. */
START_TEST(test_clients_hostile_tree)
{
	struct agent_cred me = agent_cred(geteuid(), getegid(), AGENT_END);
	char *dir = tl_mkdtemp(), sock[PATH_MAX];
	const char *line, *nl;
	struct run r;
	size_t rows = 0;
	bool seen[8] = { false };

	ck_assert_ptr_nonnull(dir);
	snprintf(sock, sizeof(sock), "%s/fake.sock", dir);
	fake_tree = true;
	fake_broker(sock, false);
	r = ctl_as(&me, sock, "clients", NULL, NULL);
	assert_exit(&r, 0, "clients");
	line = strchr(r.out, '\n');
	ck_assert_ptr_nonnull(line);
	for (line++; *line; line = nl + 1) {
		size_t indent = strspn(line, " ");
		unsigned long id = strtoul(line + indent, NULL, 10);

		nl = strchr(line, '\n');
		ck_assert_ptr_nonnull(nl);
		ck_assert_msg(indent <= 16, "indented %zu:\n%s", indent, r.out);
		if (id < 8)
			seen[id] = true;
		rows++;
	}
	ck_assert_msg(rows == FAKE_TREE_N, "%zu rows, %d entries:\n%s", rows,
		      FAKE_TREE_N, r.out);
	for (int id = 1; id < 8; id++)
		ck_assert_msg(seen[id], "client %d not shown:\n%s", id, r.out);
	run_free(&r);
	free(dir);
}
END_TEST

/* The broker's sentence of a refusal, on stderr. */
START_TEST(test_hostile_broker_error)
{
	struct agent_cred me = agent_cred(geteuid(), getegid(), AGENT_END);
	char *dir = tl_mkdtemp(), sock[PATH_MAX];
	struct run r;

	ck_assert_ptr_nonnull(dir);
	snprintf(sock, sizeof(sock), "%s/fake.sock", dir);
	fake_broker(sock, true);
	r = ctl_as(&me, sock, "status", NULL, NULL);
	assert_exit(&r, 1, "status refused");
	assert_terminal_safe("stderr", r.err);
	ck_assert_msg(strstr(r.err, evil_table), "stderr:\n%s", r.err);
	ck_assert_str_eq(r.out, "");
	run_free(&r);
	free(dir);
}
END_TEST

/* --- objects and evict -------------------------------------------------------
 */

/* Data lines of a table (after its header). */
static size_t table_rows(const char *out)
{
	char names[1][64];

	return table_names(out, names, 0);
}

START_TEST(test_objects_and_evict)
{
	struct agent_cred root = agent_cred(0, 0, AGENT_END);
	struct agent_cred nobody = agent_cred(65534, 65534, AGENT_END);
	struct ibc_client_info info;
	struct ibc_client *cl;
	struct ibc_ctx *ctx;
	struct ibc_cq *cq;
	struct ibc_mr *mr;
	static char buf[256];
	char id[32], filter[48];
	struct run r;
	char kind;
	int n;

	daemon_up(NULL);
	ck_assert_int_eq(tl_connect(D.sock, RUN_WAIT_MS, &cl), 0);
	ck_assert_int_eq(ibc_client_info(cl, &info, sizeof(info)), 0);
	ck_assert_int_eq(ibc_open(cl, NULL, &ctx), 0);
	ck_assert_int_eq(ibc_cq_create(ctx, 16, &cq), 0);
	ck_assert_int_eq(ibc_reg_mr(ctx, buf, sizeof(buf), 0, &mr), 0);
	snprintf(id, sizeof(id), "%llu", (unsigned long long)info.client_id);

	r = ctl_as(&root, D.sock, "objects", NULL, NULL);
	assert_exit(&r, 0, "objects");
	ck_assert_msg(strncmp(r.out, "ID", 2) == 0 && strstr(r.out, " CQ ") &&
			      strstr(r.out, " MR ") && strstr(r.out, " live "),
		      "objects:\n%s", r.out);
	run_free(&r);
	r = ctl_as(&root, D.sock, "--json", "objects", NULL);
	assert_exit(&r, 0, "--json objects");
	ck_assert_msg(json_valid(r.out, &kind, &n) && kind == '[',
		      "--json objects is not a JSON array:\n%s", r.out);
	ck_assert_msg(strstr(r.out, "\"kind\":\"CQ\"") &&
			      strstr(r.out, "\"state\":\"live\""),
		      "%s", r.out);
	run_free(&r);
	r = ctl_as(&root, D.sock, "objects", "--client", id);
	assert_exit(&r, 0, "objects --client");
	ck_assert_uint_ge(table_rows(r.out), 2);
	run_free(&r);
	r = ctl_as(&root, D.sock, "objects", "--client=999999", NULL);
	assert_exit(&r, 0, "objects --client=999999");
	ck_assert_uint_eq(table_rows(r.out), 0);
	run_free(&r);
	/* An unknown domain is an error, as any unknown name. */
	r = ctl_as(&root, D.sock, "objects", "--domain", "no-such-domain");
	assert_exit(&r, 1, "objects --domain");
	ck_assert_msg(strstr(r.err, "no such domain"), "%s", r.err);
	ck_assert_uint_eq(table_rows(r.out), 0);
	run_free(&r);
	/* Another user's domain: its objects are not there for it. */
	r = ctl_as(&nobody, D.sock, "objects", NULL, NULL);
	assert_exit(&r, 0, "objects as uid 65534");
	ck_assert_msg(!strstr(r.out, " CQ "), "uid 65534 sees:\n%s", r.out);
	run_free(&r);

	/* Usage errors. */
	r = ctl_as(&root, D.sock, "objects", "--client", NULL);
	assert_exit(&r, 2, "objects --client without an id");
	run_free(&r);
	r = ctl_as(&root, D.sock, "objects", "--client", "abc");
	assert_exit(&r, 2, "objects --client abc");
	run_free(&r);
	r = ctl_as(&root, D.sock, "objects", "--bogus", NULL);
	assert_exit(&r, 2, "objects --bogus");
	run_free(&r);
	r = ctl_as(&root, D.sock, "evict", NULL, NULL);
	assert_exit(&r, 2, "evict without a client");
	run_free(&r);
	r = ctl_as(&root, D.sock, "evict", "-3", NULL);
	assert_exit(&r, 2, "evict -3");
	run_free(&r);

	/* Not an administrator: EPERM, and the client stays. */
	r = ctl_as(&nobody, D.sock, "evict", id, NULL);
	assert_exit(&r, 1, "evict as uid 65534");
	ck_assert_msg(strncmp(r.err, "rdmabrokerctl: evict ", 21) == 0,
		      "stderr: %s", r.err);
	run_free(&r);
	ck_assert_int_eq(ibc_ping(cl, "x", 1), 0);

	r = ctl_as(&root, D.sock, "--json", "evict", id);
	assert_exit(&r, 0, "evict as root");
	snprintf(filter, sizeof(filter), "{\"evicted\":%s}\n", id);
	ck_assert_str_eq(r.out, filter);
	run_free(&r);
	ck_assert_int_lt(ibc_ping(cl, "x", 1), 0);
	/* This process lives: its objects stay, detached. */
	r = ctl_as(&root, D.sock, "objects", "--client", id);
	assert_exit(&r, 0, "objects after evict");
	ck_assert_msg(table_rows(r.out) >= 2 && strstr(r.out, " detached "),
		      "objects after evict:\n%s", r.out);
	run_free(&r);
	r = ctl_as(&root, D.sock, "evict", id, NULL);
	assert_exit(&r, 1, "evict of a client that is gone");
	run_free(&r);
	ibc_disconnect(cl);

	/* The counts in clients and domains. */
	r = ctl_as(&root, D.sock, "--json", "domains", NULL);
	assert_exit(&r, 0, "--json domains");
	ck_assert_msg(strstr(r.out, "\"unaccounted\":0"), "%s", r.out);
	run_free(&r);
	r = ctl_as(&root, D.sock, "--json", "clients", NULL);
	assert_exit(&r, 0, "--json clients");
	ck_assert_msg(strstr(r.out, "\"unaccounted\":0"), "%s", r.out);
	run_free(&r);
	r = ctl_as(&root, D.sock, "clients", NULL, NULL);
	assert_exit(&r, 0, "clients");
	ck_assert_msg(strstr(r.out, "UNACCOUNTED"), "%s", r.out);
	run_free(&r);
}
END_TEST

/* --- errors -----------------------------------------------------------------
 */

START_TEST(test_usage_errors)
{
	struct agent_cred me = agent_cred(geteuid(), getegid(), AGENT_END);
	char *dir = tl_mkdtemp(), sock[PATH_MAX];
	struct run r;

	ck_assert_ptr_nonnull(dir);
	snprintf(sock, sizeof(sock), "%s/none", dir);
	r = ctl_as(&me, sock, "frobnicate", NULL, NULL);
	assert_exit(&r, 2, "unknown command");
	ck_assert_msg(strstr(r.err, "frobnicate"), "stderr: %s", r.err);
	run_free(&r);

	r = ctl_as(&me, sock, NULL, NULL, NULL);
	assert_exit(&r, 2, "no command");
	run_free(&r);

	r = ctl_as(&me, sock, "--bogus-option", "status", NULL);
	assert_exit(&r, 2, "unknown option");
	run_free(&r);

	r = ctl_as(&me, sock, "domains", "extra", NULL);
	assert_exit(&r, 2, "domains with an argument");
	run_free(&r);

	r = ctl_as(&me, NULL, "--help", NULL, NULL);
	assert_exit(&r, 0, "--help");
	ck_assert_msg(strstr(r.out, "domains"), "help: %s", r.out);
	run_free(&r);
	free(dir);
}
END_TEST

START_TEST(test_no_broker)
{
	static const char *const cmds[] = { "status", "devices", "domains",
					    "clients" };
	struct agent_cred me = agent_cred(geteuid(), getegid(), AGENT_END);
	char *dir = tl_mkdtemp(), sock[PATH_MAX];

	ck_assert_ptr_nonnull(dir);
	snprintf(sock, sizeof(sock), "%s/no-broker.sock", dir);
	for (size_t json = 0; json < 2; json++) {
		for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
			struct run r =
				ctl_as(&me, sock, json ? "--json" : cmds[i],
				       json ? cmds[i] : NULL, NULL);

			assert_exit(&r, 1, cmds[i]);
			ck_assert_msg(strncmp(r.err, "rdmabrokerctl: ", 15) ==
						      0 &&
					      strstr(r.err, sock) &&
					      strstr(r.err, strerror(ENOENT)),
				      "%s: the message does not say what "
				      "failed: \"%s\"",
				      cmds[i], r.err);
			ck_assert_msg(*r.out == '\0',
				      "%s printed to stdout: %s", cmds[i],
				      r.out);
			run_free(&r);
		}
	}
	free(dir);
}
END_TEST

static Suite *ctl_suite(void)
{
	Suite *s = suite_create("ctl");
	TCase *tc;

	tc = tcase_create("json");
	tcase_add_test(tc, test_json_checker);
	suite_add_tcase(s, tc);

	tc = tcase_create("untrusted");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_json_string);
	tcase_add_test(tc, test_clients_hostile_name);
	tcase_add_test(tc, test_hostile_broker);
	tcase_add_test(tc, test_hostile_broker_error);
	tcase_add_test(tc, test_clients_hostile_tree);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_usage_errors);
	tcase_add_test(tc, test_no_broker);
	suite_add_tcase(s, tc);
	return s;
}

/*
 * A declared XRCD is shared by its domains, not their members: a member
 * of b sees a's opens neither in the listing nor in its count; an
 * administrator sees them.
 */
START_TEST(test_xrcd_opens_non_admin)
{
	struct agent_cred b = agent_cred(4243, 4243, AGENT_END);
	struct agent_cred root = agent_cred(0, 0, AGENT_END);
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_DOMAIN,
		.socket_path = D.sock,
		.domain = "a",
	};
	struct ibc_client *cl;
	struct ibc_xrcd *x;
	struct ibc_ctx *ctx;
	struct run r;

	daemon_up("[domain a]\nusers = 0\n[domain b]\nusers = 4243\n"
		  "[xrcd shared]\ndomains = a, b\n");
	ck_assert_int_eq(ibc_connect(&attr, &cl), 0);
	ck_assert_int_eq(ibc_open(cl, NULL, &ctx), 0);
	ck_assert_int_eq(ibc_xrcd_open(ctx, "shared", O_CREAT, &x), 0);
	r = ctl_as(&b, D.sock, "--json", "xrcd", "list");
	assert_exit(&r, 0, "--json xrcd list as a member of b");
	ck_assert_msg(strstr(r.out, "\"opens\":0,\"shown\":[]"),
		      "a member of b sees a's opens:\n%s", r.out);
	run_free(&r);
	r = ctl_as(&root, D.sock, "--json", "xrcd", "list");
	assert_exit(&r, 0, "--json xrcd list as root");
	ck_assert_msg(strstr(r.out, "\"opens\":1,") &&
			      strstr(r.out, "\"domain\":\"a\""),
		      "root does not see a's open:\n%s", r.out);
	run_free(&r);
	ck_assert_int_eq(ibc_xrcd_close(x), 0);
	ibc_close(ctx);
	ibc_disconnect(cl);
}
END_TEST

/* rdmabrokerctl as other users: root only. */
static Suite *ctl_root_suite(void)
{
	Suite *s = suite_create("ctl_root");
	TCase *tc;

	tc = tcase_create("visibility");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_domains_non_admin);
	tcase_add_test(tc, test_domains_admin);
	tcase_add_test(tc, test_listing_layout);
	tcase_add_test(tc, test_dm_non_admin);
	tcase_add_test(tc, test_admin_group);
	tcase_add_test(tc, test_json_outputs);
	tcase_add_test(tc, test_xrcd_opens_non_admin);
	suite_add_tcase(s, tc);

	tc = tcase_create("objects");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_objects_and_evict);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	if (CK_ROOT_PROGRAM) {
		ck_require_root("check_ctl_root");
		return ck_run("ctl_root", ctl_root_suite());
	}
	return ck_run("ctl", ctl_suite());
}
