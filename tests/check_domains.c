// SPDX-License-Identifier: MIT
/*
 * Domains and contexts against the real rdmabrokerd on the soft device:
 * clients of one uid share a domain and its context, other uids and private
 * clients get their own, configured domains join several uids, refusals and
 * quotas name the domain, contexts go when their last user does, SIGHUP
 * applies a new file and keeps the old one when the new one is bad, and the
 * daemon picks its device and refuses a bad start with a clear message.
 *
 * Clients of other uids run in agents (tests/agent.c): processes that drop
 * to the uid as root and run libibclient on command. As another user they
 * need the socket (--socket-mode 0666) and its directories (0711). Those
 * tests are the suite "domains_root", the program check_domains_root built
 * from this file with -DCK_ROOT_PROGRAM=1, which exits 77 (SKIP) when not
 * run as root; check_domains runs the rest.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "tests/agent.h"
#include "tests/cklib.h"
#include "tests/testlib.h"

#define MAX_AGENTS 8
/* How long an agent may take for one call. */
#define AGENT_WAIT_MS 10000

static struct tl_daemon D;
static struct agent A[MAX_AGENTS];
static size_t n_agents;
static char *cfg_dir;
static char cfg_path[PATH_MAX];
static char log_path[PATH_MAX];
static struct ibc_client *root_cl;

static void setup(void)
{
	memset(&D, 0, sizeof(D));
	D.pid = -1;
	for (size_t i = 0; i < MAX_AGENTS; i++) {
		A[i].pid = -1;
		A[i].to = A[i].from = -1;
	}
	n_agents = 0;
	cfg_dir = NULL;
	root_cl = NULL;
}

static void teardown(void)
{
	for (size_t i = 0; i < MAX_AGENTS; i++)
		agent_stop(&A[i]);
	ibc_disconnect(root_cl);
	root_cl = NULL;
	tl_daemon_stop(&D);
	if (cfg_dir) {
		tl_rmtree(cfg_dir);
		free(cfg_dir);
		cfg_dir = NULL;
	}
}

/* Does this machine have RDMA devices (then auto takes verbs)? */
static bool have_rdma(void)
{
	DIR *d = opendir("/sys/class/infiniband");
	struct dirent *de;
	bool any = false;

	if (!d)
		return false;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			any = true;
	closedir(d);
	if (any)
		fprintf(stderr, "check_domains: this machine has RDMA "
				"devices; the no-device test is skipped\n");
	return any;
}

/* --- configuration file and log -------------------------------------- */

static void conf_paths(void)
{
	if (cfg_dir)
		return;
	cfg_dir = tl_mkdtemp();
	ck_assert_ptr_nonnull(cfg_dir);
	snprintf(cfg_path, sizeof(cfg_path), "%s/rdmabroker.conf", cfg_dir);
	snprintf(log_path, sizeof(log_path), "%s/daemon.log", cfg_dir);
}

/* Replace the file at once, so that a reload never sees half of it. */
static void conf_write(const char *text)
{
	conf_paths();
	ck_assert_int_eq(tl_write_conf(cfg_path, text), 0);
}

static char *log_read(void)
{
	FILE *f = fopen(log_path, "re");
	char *buf = NULL;
	size_t len = 0;

	if (f) {
		buf = calloc(1, 1 << 20);
		ck_assert_ptr_nonnull(buf);
		len = fread(buf, 1, (1 << 20) - 1, f);
		fclose(f);
		buf[len] = '\0';
	}
	return buf ? buf : strdup("");
}

/* Wait until the daemon's log holds @needle. */
static bool log_wait(const char *needle, int timeout_ms)
{
	int64_t deadline = tl_now_ms() + timeout_ms;

	for (;;) {
		char *log = log_read();
		bool found = strstr(log, needle) != NULL;

		free(log);
		if (found)
			return true;
		if (tl_now_ms() >= deadline)
			return false;
		tl_sleep_ms(10);
	}
}

/* Send the daemon's stderr to the log for what @fn does. */
static int stderr_to_log(void)
{
	int fd =
		open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	int saved;

	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	saved = fcntl(2, F_DUPFD_CLOEXEC, 3);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_eq(dup2(fd, 2), 2);
	close(fd);
	return saved;
}

static void stderr_restore(int saved)
{
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
}

/*
 * Start the daemon on @conf (always a file of ours: the default path may
 * hold anything) with @more arguments, its stderr in log_path, its socket
 * usable by every uid.
 */
static void daemon_up(const char *conf, const char *const *more)
{
	const char *args[32] = { "--socket-mode", "0666", "--log-level",
				 "info" };
	size_t n = 4;
	int ret;

	conf_paths();
	for (; more && *more && n < 31; more++)
		args[n++] = *more;
	args[n] = NULL;
	ret = tl_daemon_start_conf(&D, conf ? conf : "# no domains\n", cfg_path,
				   args, log_path);
	if (ret < 0) {
		char *log = log_read();

		ck_abort_msg("cannot start %s: %s; its log:\n%s",
			     tl_daemon_path(), strerror(-ret), log);
	}
	/* Other uids reach the socket through the suite's directories. */
	ck_assert_int_eq(tl_daemon_share(&D), 0);
}

static void reload(void)
{
	ck_assert_int_eq(kill(D.pid, SIGHUP), 0);
}

static void assert_settled(void)
{
	unsigned int clients = 0;
	int n = tl_daemon_settle(&D, TL_WAIT_MS, &clients);

	ck_assert_msg(tl_daemon_alive(&D), "the daemon died");
	ck_assert_msg(n >= 0, "settle: %s", strerror(-n));
	ck_assert_msg(clients == 1, "status reports %u clients, expected 1",
		      clients);
	ck_assert_msg(n == D.baseline_fds,
		      "the daemon holds %d descriptors, %d at start", n,
		      D.baseline_fds);
}

/* --- clients ------------------------------------------------------------- */

static struct ibc_client *root_client(void)
{
	int ret;

	if (root_cl)
		return root_cl;
	ret = tl_connect(D.sock, TL_WAIT_MS, &root_cl);
	ck_assert_msg(ret == 0, "ibc_connect: %s (%s)", strerror(-ret),
		      ibc_last_error());
	return root_cl;
}

static void root_disconnect(void)
{
	ibc_disconnect(root_cl);
	root_cl = NULL;
}

/* The domain @name as an administrator sees it: 1 found, 0 not listed. */
static int root_domain(const char *name, struct ibc_domain_info *ret)
{
	struct ibc_domain_info *d = NULL;
	size_t n = 0;
	int found = 0, err;

	err = ibc_list_domains(root_client(), &d, sizeof(*d), &n);
	ck_assert_msg(err == 0, "ibc_list_domains: %s (%s)", strerror(-err),
		      ibc_last_error());
	for (size_t i = 0; i < n; i++) {
		if (strcmp(d[i].name, name) == 0) {
			if (ret)
				*ret = d[i];
			found = 1;
		}
	}
	ibc_list_free(d);
	return found;
}

/* Poll @cond (an expression) for up to TL_WAIT_MS. */
#define WAIT_UNTIL(cond)                                                       \
	({                                                                     \
		int64_t wu_deadline_ = tl_now_ms() + TL_WAIT_MS;               \
		bool wu_ok_;                                                   \
		while (!(wu_ok_ = (cond)) && tl_now_ms() < wu_deadline_)       \
			tl_sleep_ms(10);                                       \
		wu_ok_;                                                        \
	})

static struct agent *agent_new(struct agent_cred cred)
{
	struct agent *a;
	int ret;

	ck_assert_uint_lt(n_agents, MAX_AGENTS);
	a = &A[n_agents++];
	ret = agent_start(a, &cred, D.sock);
	ck_assert_msg(ret == 0, "agent for uid %u: %s", (unsigned int)cred.uid,
		      strerror(-ret));
	return a;
}

static struct agent *agent_uid(uid_t uid)
{
	return agent_new(agent_cred(uid, uid, AGENT_END));
}

static const struct agent_rep *ag(struct agent *a, enum agent_op op,
				  const char *arg, uint32_t flags)
{
	int ret = agent_call(a, op, arg, flags, AGENT_WAIT_MS);

	ck_assert_msg(ret == 0, "agent of uid %u: operation %d: %s",
		      (unsigned int)a->cred.uid, (int)op, strerror(-ret));
	return &a->rep;
}

/* Connect (asking for @domain, NULL for none) and expect success. */
static const struct agent_rep *ag_connect(struct agent *a, const char *domain,
					  uint32_t flags)
{
	const struct agent_rep *r = ag(a, AGENT_CONNECT, domain, flags);

	ck_assert_msg(r->ret == 0, "uid %u: ibc_connect(domain %s): %s (%s)",
		      (unsigned int)a->cred.uid, domain ? domain : "(none)",
		      strerror(-r->ret), r->error);
	return r;
}

static const struct agent_rep *ag_open(struct agent *a, const char *dev)
{
	const struct agent_rep *r = ag(a, AGENT_OPEN, dev, 0);

	ck_assert_msg(r->ret == 0, "uid %u: ibc_open(%s): %s (%s)",
		      (unsigned int)a->cred.uid, dev ? dev : "NULL",
		      strerror(-r->ret), r->error);
	ck_assert_msg(r->soft_ino != 0,
		      "uid %u: no soft context descriptor "
		      "after ibc_open",
		      (unsigned int)a->cred.uid);
	return r;
}

static void ag_ok(struct agent *a, enum agent_op op)
{
	const struct agent_rep *r = ag(a, op, NULL, 0);

	ck_assert_msg(r->ret == 0, "uid %u: operation %d: %s (%s)",
		      (unsigned int)a->cred.uid, (int)op, strerror(-r->ret),
		      r->error);
}

/* Connect with retries: quotas are released when the daemon has seen the
 * previous client go, which the test cannot wait for otherwise. */
static const struct agent_rep *ag_connect_eventually(struct agent *a,
						     const char *domain)
{
	int64_t deadline = tl_now_ms() + TL_WAIT_MS;
	const struct agent_rep *r;

	for (;;) {
		r = ag(a, AGENT_CONNECT, domain, 0);
		if (r->ret != -EDQUOT || tl_now_ms() >= deadline)
			break;
		tl_sleep_ms(10);
	}
	ck_assert_msg(r->ret == 0, "uid %u: ibc_connect: %s (%s)",
		      (unsigned int)a->cred.uid, strerror(-r->ret), r->error);
	return r;
}

/* --- one uid, two uids, private ------------------------------------------ */

START_TEST(test_same_uid_shares)
{
	struct agent *a1, *a2;
	const struct agent_rep *r;
	uint64_t ctx, ino, id1;

	daemon_up(NULL, NULL);
	a1 = agent_uid(4242);
	a2 = agent_uid(4242);
	r = ag_connect(a1, NULL, 0);
	ck_assert_str_eq(r->info.domain, "uid-4242");
	id1 = r->info.client_id;
	r = ag_connect(a2, NULL, 0);
	ck_assert_str_eq(r->info.domain, "uid-4242");
	ck_assert_uint_ne(r->info.client_id, id1);

	r = ag_open(a1, NULL);
	ck_assert_str_eq(r->caps.domain, "uid-4242");
	ck_assert_str_eq(r->caps.device, "soft0");
	ck_assert_uint_ne(r->caps.context_id, 0);
	ctx = r->caps.context_id;
	ino = r->soft_ino;
	r = ag_open(a2, "soft0");
	ck_assert_str_eq(r->caps.domain, "uid-4242");
	ck_assert_uint_eq(r->caps.context_id, ctx);
	/* The very same context: one memfd, received twice. */
	ck_assert_uint_eq(r->soft_ino, ino);

	/* What a member sees: its domain only, with both members and one
	 * context (which is one object). */
	r = ag(a1, AGENT_LIST_DOMAINS, NULL, 0);
	ck_assert_int_eq(r->ret, 0);
	ck_assert_uint_eq(r->n_list, 1);
	ck_assert_str_eq(r->domains[0].name, "uid-4242");
	ck_assert_str_eq(r->domains[0].kind, "uid");
	ck_assert_uint_eq(r->domains[0].members, 2);
	ck_assert_uint_eq(r->domains[0].contexts, 1);
	ck_assert_uint_eq(r->domains[0].used.clients, 2);
	ck_assert_uint_eq(r->domains[0].used.objects, 1);
	ck_assert(!r->domains[0].retired);

	r = ag(a2, AGENT_LIST_CLIENTS, NULL, 0);
	ck_assert_int_eq(r->ret, 0);
	ck_assert_uint_eq(r->n_list, 2);
	for (uint32_t i = 0; i < r->n_list; i++) {
		ck_assert_uint_eq(r->clients[i].uid, 4242);
		ck_assert_str_eq(r->clients[i].domain, "uid-4242");
		ck_assert_uint_eq(r->clients[i].contexts, 1);
	}
}
END_TEST

START_TEST(test_other_uid_other_domain)
{
	struct agent *a1, *a2;
	const struct agent_rep *r;
	struct ibc_domain_info di;
	uint64_t ctx, ino;

	daemon_up(NULL, NULL);
	a1 = agent_uid(4242);
	a2 = agent_uid(65534);
	ag_connect(a1, NULL, 0);
	r = ag_open(a1, NULL);
	ctx = r->caps.context_id;
	ino = r->soft_ino;
	r = ag_connect(a2, NULL, 0);
	ck_assert_str_eq(r->info.domain, "uid-65534");
	r = ag_open(a2, NULL);
	ck_assert_str_eq(r->caps.domain, "uid-65534");
	ck_assert_uint_ne(r->caps.context_id, ctx);
	ck_assert_uint_ne(r->soft_ino, ino);

	/* Neither sees the other. */
	r = ag(a2, AGENT_LIST_DOMAINS, NULL, 0);
	ck_assert_int_eq(r->ret, 0);
	ck_assert_uint_eq(r->n_list, 1);
	ck_assert_str_eq(r->domains[0].name, "uid-65534");
	r = ag(a2, AGENT_LIST_CLIENTS, NULL, 0);
	ck_assert_int_eq(r->ret, 0);
	ck_assert_uint_eq(r->n_list, 1);
	ck_assert_uint_eq(r->clients[0].uid, 65534);

	/* The administrator sees both, and its own. */
	ck_assert(root_domain("uid-4242", &di));
	ck_assert_uint_eq(di.members, 1);
	ck_assert_uint_eq(di.contexts, 1);
	ck_assert(root_domain("uid-65534", &di));
	ck_assert(root_domain("uid-0", &di));
	ck_assert_uint_eq(di.contexts, 0);
}
END_TEST

START_TEST(test_private_domain)
{
	struct agent *a1, *a2, *a3, *a4;
	const struct agent_rep *r;
	struct ibc_domain_info di;
	char want[64], name2[64];
	uint64_t ctx1, ctx2, ino1, ino2;

	daemon_up("[defaults]\nclients = 3\nobjects = 40\n", NULL);
	a1 = agent_uid(4242);
	a2 = agent_uid(4242);
	a3 = agent_uid(4242);
	a4 = agent_uid(4242);
	ag_connect(a1, NULL, 0);
	r = ag_open(a1, NULL);
	ctx1 = r->caps.context_id;
	ino1 = r->soft_ino;

	r = ag_connect(a2, NULL, IBC_CONNECT_PRIVATE_DOMAIN);
	snprintf(want, sizeof(want), "private-%llu",
		 (unsigned long long)r->info.client_id);
	ck_assert_str_eq(r->info.domain, want);
	snprintf(name2, sizeof(name2), "%s", want);
	r = ag_open(a2, NULL);
	ck_assert_str_eq(r->caps.domain, want);
	ck_assert_uint_ne(r->caps.context_id, ctx1);
	ck_assert_uint_ne(r->soft_ino, ino1);
	ctx2 = r->caps.context_id;
	ino2 = r->soft_ino;

	/* Two private clients of one uid share nothing either. */
	r = ag_connect(a3, NULL, IBC_CONNECT_PRIVATE_DOMAIN);
	ck_assert_str_ne(r->info.domain, name2);
	ck_assert_int_eq(strncmp(r->info.domain, "private-", 8), 0);
	r = ag_open(a3, NULL);
	ck_assert_uint_ne(r->caps.context_id, ctx1);
	ck_assert_uint_ne(r->caps.context_id, ctx2);
	ck_assert_uint_ne(r->soft_ino, ino2);

	/* It sees its own domain, with the quotas of [defaults]. */
	r = ag(a2, AGENT_LIST_DOMAINS, NULL, 0);
	ck_assert_int_eq(r->ret, 0);
	ck_assert_uint_eq(r->n_list, 1);
	ck_assert_str_eq(r->domains[0].name, name2);
	ck_assert_str_eq(r->domains[0].kind, "private");
	ck_assert_uint_eq(r->domains[0].members, 1);
	ck_assert_uint_eq(r->domains[0].limit.clients, 3);
	ck_assert_uint_eq(r->domains[0].limit.objects, 40);

	/* A private domain cannot also be named. */
	r = ag(a4, AGENT_CONNECT, "uid-4242", IBC_CONNECT_PRIVATE_DOMAIN);
	ck_assert_int_eq(r->ret, -EINVAL);
	ck_assert_msg(strstr(r->error, "private"), "error: %s", r->error);

	/* When its client goes, the private domain goes. */
	ck_assert(root_domain(name2, &di));
	ag_ok(a2, AGENT_DISCONNECT);
	ck_assert_msg(WAIT_UNTIL(!root_domain(name2, NULL)),
		      "%s is still listed after its client left", name2);
	ck_assert(root_domain("uid-4242", &di));
	ck_assert_uint_eq(di.contexts, 1);
}
END_TEST

/* --- configured domains ------------------------------------------------- */

static const char cross_conf[] = "[domain lab]\n"
				 "users = 65534, 4242\n"
				 "[domain grp]\n"
				 "groups = 4250\n"
				 "[domain first]\n"
				 "users = 4247\n"
				 "[domain second]\n"
				 "users = 4247, 4242\n";

START_TEST(test_configured_cross_uid)
{
	struct agent *a1, *a2, *a3;
	const struct agent_rep *r;
	struct ibc_domain_info di;
	uint64_t ctx, ino;

	daemon_up(cross_conf, NULL);
	a1 = agent_uid(4242);
	a2 = agent_uid(65534);
	a3 = agent_uid(65534);
	r = ag_connect(a1, NULL, 0);
	ck_assert_str_eq(r->info.domain, "lab");
	r = ag_open(a1, NULL);
	ck_assert_str_eq(r->caps.domain, "lab");
	ctx = r->caps.context_id;
	ino = r->soft_ino;
	r = ag_connect(a2, NULL, 0);
	ck_assert_str_eq(r->info.domain, "lab");
	r = ag_open(a2, NULL);
	ck_assert_str_eq(r->caps.domain, "lab");
	ck_assert_uint_eq(r->caps.context_id, ctx);
	ck_assert_uint_eq(r->soft_ino, ino);
	/* Named explicitly: the same. */
	r = ag_connect(a3, "lab", 0);
	ck_assert_str_eq(r->info.domain, "lab");
	r = ag_open(a3, NULL);
	ck_assert_uint_eq(r->caps.context_id, ctx);

	/* Members see the domain and each other, across uids. */
	r = ag(a2, AGENT_LIST_DOMAINS, NULL, 0);
	ck_assert_int_eq(r->ret, 0);
	ck_assert_uint_eq(r->n_list, 1);
	ck_assert_str_eq(r->domains[0].name, "lab");
	ck_assert_str_eq(r->domains[0].kind, "configured");
	ck_assert_uint_eq(r->domains[0].members, 3);
	ck_assert_uint_eq(r->domains[0].contexts, 1);
	r = ag(a2, AGENT_LIST_CLIENTS, NULL, 0);
	ck_assert_int_eq(r->ret, 0);
	ck_assert_uint_eq(r->n_list, 3);

	/* Configured domains are listed even when nobody is in them. */
	ck_assert(root_domain("grp", &di));
	ck_assert_uint_eq(di.members, 0);
	ck_assert_uint_eq(di.contexts, 0);
	ck_assert_str_eq(di.kind, "configured");
	ck_assert(root_domain("lab", &di));
	ck_assert_uint_eq(di.members, 3);
}
END_TEST

/* Who joins what: file order, groups (primary and supplementary, as the
 * peer had them at connect), one's own domain by name. */
START_TEST(test_configured_membership)
{
	struct agent *a;
	const struct agent_rep *r;

	daemon_up(cross_conf, NULL);

	/* 4242 is in lab and second: lab comes first. */
	a = agent_uid(4242);
	r = ag_connect(a, NULL, 0);
	ck_assert_str_eq(r->info.domain, "lab");
	ag_ok(a, AGENT_DISCONNECT);
	r = ag_connect(a, "second", 0);
	ck_assert_str_eq(r->info.domain, "second");
	ag_ok(a, AGENT_DISCONNECT);
	r = ag_connect(a, "uid-4242", 0);
	ck_assert_str_eq(r->info.domain, "uid-4242");

	a = agent_uid(4247);
	r = ag_connect(a, NULL, 0);
	ck_assert_str_eq(r->info.domain, "first");

	/* A supplementary group. */
	a = agent_new(agent_cred(4244, 4244, 4250, AGENT_END));
	r = ag_connect(a, NULL, 0);
	ck_assert_str_eq(r->info.domain, "grp");
	/* A primary group. */
	a = agent_new(agent_cred(4245, 4250, AGENT_END));
	r = ag_connect(a, NULL, 0);
	ck_assert_str_eq(r->info.domain, "grp");
	/* Neither: its own. */
	a = agent_new(agent_cred(4246, 4246, 4251, AGENT_END));
	r = ag_connect(a, NULL, 0);
	ck_assert_str_eq(r->info.domain, "uid-4246");
}
END_TEST

START_TEST(test_join_refused)
{
	struct agent *a1, *a2;
	const struct agent_rep *r;

	daemon_up(cross_conf, NULL);
	a1 = agent_uid(4243);
	r = ag(a1, AGENT_CONNECT, "lab", 0);
	ck_assert_msg(r->ret == -EACCES, "uid 4243 joining lab: %d (%s)",
		      r->ret, r->error);
	ck_assert_msg(strstr(r->error, "lab"),
		      "error \"%s\" does not name "
		      "the domain",
		      r->error);
	r = ag(a1, AGENT_CONNECT, "grp", 0);
	ck_assert_int_eq(r->ret, -EACCES);
	ck_assert_msg(strstr(r->error, "grp"), "error: %s", r->error);

	r = ag(a1, AGENT_CONNECT, "nosuch", 0);
	ck_assert_msg(r->ret == -ENOENT, "unknown domain: %d (%s)", r->ret,
		      r->error);
	ck_assert_msg(strstr(r->error, "nosuch"),
		      "error \"%s\" does not name "
		      "the domain",
		      r->error);

	/* Another uid's own domain is not for the taking. */
	r = ag(a1, AGENT_CONNECT, "uid-65534", 0);
	ck_assert_msg(r->ret == -EACCES || r->ret == -ENOENT,
		      "uid 4243 joining uid-65534: %d (%s)", r->ret, r->error);
	r = ag(a1, AGENT_CONNECT, "private-1", 0);
	ck_assert_msg(r->ret == -EACCES || r->ret == -ENOENT,
		      "uid 4243 joining private-1: %d (%s)", r->ret, r->error);

	/* Refusals cost nothing: the same agent still gets in. */
	r = ag_connect(a1, NULL, 0);
	ck_assert_str_eq(r->info.domain, "uid-4243");
	a2 = agent_uid(65534);
	r = ag_connect(a2, "lab", 0);
	ck_assert_str_eq(r->info.domain, "lab");
	agent_stop(a1);
	agent_stop(a2);
	assert_settled();
}
END_TEST

/* --- quotas -------------------------------------------------------------- */

START_TEST(test_quota_clients)
{
	struct agent *a1, *a2, *a3, *u1, *u2;
	const struct agent_rep *r;
	struct ibc_domain_info di;

	daemon_up("[domain lab]\nusers = 65534, 4242\nclients = 2\n"
		  "[defaults]\nclients = 1\n",
		  NULL);
	a1 = agent_uid(4242);
	a2 = agent_uid(65534);
	a3 = agent_uid(4242);
	ag_connect(a1, NULL, 0);
	ag_connect(a2, NULL, 0);
	r = ag(a3, AGENT_CONNECT, NULL, 0);
	ck_assert_msg(r->ret == -EDQUOT, "third client of lab: %d (%s)", r->ret,
		      r->error);
	ck_assert_msg(strstr(r->error, "lab") && strstr(r->error, "2"),
		      "error \"%s\" does not name the domain and its quota",
		      r->error);
	ck_assert(root_domain("lab", &di));
	ck_assert_uint_eq(di.members, 2);
	ck_assert_uint_eq(di.used.clients, 2);
	ck_assert_uint_eq(di.limit.clients, 2);

	/* A place freed is a place taken. */
	ag_ok(a1, AGENT_DISCONNECT);
	r = ag_connect_eventually(a3, NULL);
	ck_assert_str_eq(r->info.domain, "lab");
	ck_assert(root_domain("lab", &di));
	ck_assert_uint_eq(di.members, 2);

	/* [defaults] clients = 1 holds for a uid's own domain. */
	u1 = agent_uid(4243);
	u2 = agent_uid(4243);
	ag_connect(u1, NULL, 0);
	r = ag(u2, AGENT_CONNECT, NULL, 0);
	ck_assert_int_eq(r->ret, -EDQUOT);
	ck_assert_msg(strstr(r->error, "uid-4243"), "error: %s", r->error);
	/* ... and for private domains, one client each. */
	r = ag(u2, AGENT_CONNECT, NULL, IBC_CONNECT_PRIVATE_DOMAIN);
	ck_assert_msg(r->ret == 0, "private: %d (%s)", r->ret, r->error);
}
END_TEST

START_TEST(test_quota_objects)
{
	struct agent *a1, *a2, *a3, *a4;
	const struct agent_rep *r;
	struct ibc_domain_info di;

	daemon_up("[defaults]\nobjects = 0\n"
		  "[domain lab]\nusers = 4242\nobjects = 0\n"
		  "[domain one]\nusers = 65534\nobjects = 1\n",
		  NULL);
	a1 = agent_uid(4242);
	ag_connect(a1, NULL, 0);
	r = ag(a1, AGENT_OPEN, NULL, 0);
	ck_assert_msg(r->ret == -EDQUOT, "ibc_open in lab: %d (%s)", r->ret,
		      r->error);
	ck_assert_msg(strstr(r->error, "lab"),
		      "error \"%s\" does not name "
		      "the domain",
		      r->error);
	ck_assert_uint_eq(r->soft_ino, 0);
	ck_assert(root_domain("lab", &di));
	ck_assert_uint_eq(di.contexts, 0);
	ck_assert_uint_eq(di.used.objects, 0);

	a2 = agent_uid(4243);
	ag_connect(a2, NULL, 0);
	r = ag(a2, AGENT_OPEN, NULL, 0);
	ck_assert_int_eq(r->ret, -EDQUOT);
	ck_assert_msg(strstr(r->error, "uid-4243"), "error: %s", r->error);

	/* One object: the context, shared by every member. */
	a3 = agent_uid(65534);
	a4 = agent_uid(65534);
	ag_connect(a3, NULL, 0);
	ag_connect(a4, NULL, 0);
	ag_open(a3, NULL);
	ag_open(a4, NULL);
	ck_assert(root_domain("one", &di));
	ck_assert_uint_eq(di.used.objects, 1);
	ck_assert_uint_eq(di.limit.objects, 1);
	ck_assert_uint_eq(di.contexts, 1);

	/* Released with the context, so it can be opened again. */
	ag_ok(a3, AGENT_CLOSE);
	ag_ok(a4, AGENT_CLOSE);
	ck_assert(root_domain("one", &di));
	ck_assert_uint_eq(di.used.objects, 0);
	ck_assert_uint_eq(di.contexts, 0);
	ag_open(a4, NULL);
	root_disconnect();
	agent_stop(a1);
	agent_stop(a2);
	agent_stop(a3);
	agent_stop(a4);
	assert_settled();
}
END_TEST

/* --- contexts go with their last user ------------------------------------- */

START_TEST(test_contexts_released)
{
	struct agent *a1, *a2, *a3;
	const struct agent_rep *r;
	struct ibc_domain_info di;
	struct ibc_client *cl;
	struct ibc_ctx *c1, *c2;
	int ret;

	daemon_up("[domain lab]\nusers = 65534, 4242\n", NULL);
	a1 = agent_uid(4242);
	a2 = agent_uid(65534);
	a3 = agent_uid(4243);
	ag_connect(a1, NULL, 0);
	ag_connect(a2, NULL, 0);
	ag_connect(a3, NULL, 0);
	ag_open(a1, NULL);
	ag_open(a2, NULL);
	ag_open(a3, NULL);
	ck_assert(root_domain("lab", &di));
	ck_assert_uint_eq(di.contexts, 1);

	/* Held by one member: stays. */
	r = ag(a1, AGENT_CLOSE, NULL, 0);
	ck_assert_int_eq(r->ret, 0);
	/* The process let go of its descriptor. */
	ck_assert_uint_eq(r->soft_ino, 0);
	r = ag(a2, AGENT_LIST_DOMAINS, NULL, 0);
	ck_assert_uint_eq(r->domains[0].contexts, 1);
	ag_ok(a2, AGENT_PING);
	ag_ok(a2, AGENT_CLOSE);
	r = ag(a2, AGENT_LIST_DOMAINS, NULL, 0);
	ck_assert_int_eq(r->ret, 0);
	ck_assert_str_eq(r->domains[0].name, "lab");
	ck_assert_uint_eq(r->domains[0].members, 2);
	ck_assert_uint_eq(r->domains[0].contexts, 0);
	ck_assert_uint_eq(r->domains[0].used.objects, 0);
	ag_ok(a3, AGENT_CLOSE);
	r = ag(a3, AGENT_LIST_DOMAINS, NULL, 0);
	ck_assert_uint_eq(r->domains[0].contexts, 0);

	/* One process opening twice holds one context until both close. */
	cl = root_client();
	ck_assert_int_eq(ibc_open(cl, NULL, &c1), 0);
	ck_assert_int_eq(ibc_open(cl, "soft0", &c2), 0);
	ck_assert(root_domain("uid-0", &di));
	ck_assert_uint_eq(di.contexts, 1);
	ibc_close(c1);
	ck_assert(root_domain("uid-0", &di));
	ck_assert_uint_eq(di.contexts, 1);
	ibc_close(c2);
	ck_assert(root_domain("uid-0", &di));
	ck_assert_uint_eq(di.contexts, 0);

	/* Open again, then leave without closing: the daemon cleans up. */
	ag_open(a1, NULL);
	ret = ibc_open(cl, NULL, &c1);
	ck_assert_int_eq(ret, 0);
	root_disconnect();
	for (int i = 0; i < 3; i++)
		agent_stop(&A[i]);
	assert_settled();
	ck_assert(root_domain("lab", &di));
	ck_assert_uint_eq(di.members, 0);
	ck_assert_uint_eq(di.contexts, 0);
	ck_assert_uint_eq(di.used.objects, 0);
	ck_assert(!root_domain("uid-4243", NULL));
	root_disconnect();
}
END_TEST

/* --- devices, capabilities --------------------------------------------------
 */

START_TEST(test_unknown_device)
{
	struct ibc_client *cl;
	struct ibc_ctx *ctx = (struct ibc_ctx *)&ctx;
	int ret;

	daemon_up(NULL, NULL);
	cl = root_client();
	ret = ibc_open(cl, "mlx5_9", &ctx);
	ck_assert_int_eq(ret, -ENODEV);
	ck_assert_msg(strstr(ibc_last_error(), "mlx5_9"),
		      "error \"%s\" does not name the device",
		      ibc_last_error());
	ck_assert_ptr_eq(ctx, (struct ibc_ctx *)&ctx);
	ret = ibc_open(cl, "soft", &ctx);
	ck_assert_int_eq(ret, -ENODEV);
	ck_assert_int_eq(ibc_ping(cl, "x", 1), 0);
	root_disconnect();
	assert_settled();
}
END_TEST

START_TEST(test_verbs_accessors_on_soft)
{
	struct ibc_client *cl;
	struct ibc_ctx *ctx;

	daemon_up(NULL, NULL);
	cl = root_client();
	ck_assert_int_eq(ibc_open(cl, NULL, &ctx), 0);
	errno = 0;
	ck_assert_ptr_null(ibc_verbs_context(ctx));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_msg(strstr(ibc_last_error(), "soft0"), "error: %s",
		      ibc_last_error());
	errno = 0;
	ck_assert_ptr_null(ibc_verbs_pd(ctx));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_msg(strstr(ibc_last_error(), "soft0"), "error: %s",
		      ibc_last_error());
	ibc_close(ctx);
}
END_TEST

/* The same for a client of another uid, in its own domain. */
START_TEST(test_verbs_accessors_other_uid)
{
	struct agent *a;
	const struct agent_rep *r;

	daemon_up(NULL, NULL);
	a = agent_uid(4242);
	ag_connect(a, NULL, 0);
	ag_open(a, NULL);
	r = ag(a, AGENT_VERBS, NULL, 0);
	ck_assert_int_eq(r->ret, 0);
	ck_assert_int_eq(r->err_ctx, EOPNOTSUPP);
	ck_assert_int_eq(r->err_pd, EOPNOTSUPP);
}
END_TEST

static void assert_soft_caps(uint64_t max_dm)
{
	const uint64_t fields =
		IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
		IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 |
		IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP |
		IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;
	struct ibc_client *cl = root_client();
	struct ibc_device_info *devs;
	struct ibc_status st;
	struct ibc_caps caps;
	struct ibc_ctx *ctx;
	char own[32];
	size_t n;

	ck_assert_int_eq(ibc_open(cl, NULL, &ctx), 0);
	memset(&caps, 0xa5, sizeof(caps));
	ck_assert_int_eq(ibc_query(ctx, &caps, sizeof(caps)), 0);
	ck_assert_int_eq(caps.kind, IBC_DEVICE_SOFT);
	ck_assert_str_eq(caps.device, "soft0");
	snprintf(own, sizeof(own), "uid-%u", (unsigned int)getuid());
	ck_assert_str_eq(caps.domain, own);
	ck_assert_uint_ne(caps.context_id, 0);
	ck_assert(caps.shared);
	ck_assert(caps.xrc);
	ck_assert_uint_eq(caps.max_dm_size, max_dm);
	/* What uverbs takes, below the device's 2^16. */
	ck_assert_uint_eq(caps.max_rss_table_size, 8192);
	ck_assert_uint_eq(caps.rss_hash_functions, IBV_RX_HASH_FUNC_TOEPLITZ);
	ck_assert_uint_eq(caps.rss_hash_fields, fields);
	ck_assert_int_eq(caps.fork_state, ibc_fork_state());
	ibc_close(ctx);

	ck_assert_int_eq(ibc_list_devices(cl, &devs, sizeof(*devs), &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(devs[0].name, "soft0");
	ck_assert_str_eq(devs[0].kind, "soft");
	ck_assert_str_eq(devs[0].transport, "software");
	ck_assert(!devs[0].removed);
	ck_assert(devs[0].import);
	ck_assert(devs[0].xrc);
	ck_assert_uint_eq(devs[0].ports, 1);
	ck_assert_uint_eq(devs[0].max_dm_size, max_dm);
	ck_assert_uint_eq(devs[0].max_rss_table_size, 8192);
	ck_assert_uint_eq(devs[0].rss_hash_fields, fields);
	ck_assert_uint_eq(devs[0].rss_hash_functions,
			  IBV_RX_HASH_FUNC_TOEPLITZ);
	ibc_list_free(devs);

	ck_assert_int_eq(ibc_status(cl, &st, sizeof(st)), 0);
	ck_assert_str_eq(st.device_kind, "soft");
}

START_TEST(test_soft_caps_default)
{
	daemon_up(NULL, NULL);
	assert_soft_caps(262144);
}
END_TEST

START_TEST(test_soft_caps_configured)
{
	daemon_up("[soft]\nmax_dm_size = 128K\n", NULL);
	assert_soft_caps(131072);
	/* Read at start only: a reload says so and changes nothing. */
	conf_write("[soft]\nmax_dm_size = 64K\n");
	reload();
	ck_assert_msg(log_wait("[soft] max_dm_size takes effect at the next "
			       "start",
			       TL_WAIT_MS),
		      "no notice that max_dm_size waits for a restart");
	assert_soft_caps(131072);
}
END_TEST

/* --- SIGHUP --------------------------------------------------------------- */

START_TEST(test_reload_quota)
{
	struct agent *a1, *a2;
	const struct agent_rep *r;
	struct ibc_domain_info di;

	daemon_up("[domain lab]\nusers = 65534, 4242\nclients = 1\n", NULL);
	a1 = agent_uid(4242);
	a2 = agent_uid(65534);
	ag_connect(a1, NULL, 0);
	ag_open(a1, NULL);
	r = ag(a2, AGENT_CONNECT, NULL, 0);
	ck_assert_int_eq(r->ret, -EDQUOT);

	conf_write("[domain lab]\nusers = 65534, 4242\nclients = 3\n"
		   "[defaults]\nobjects = 5\n");
	reload();
	ck_assert_msg(
		WAIT_UNTIL(root_domain("lab", &di) && di.limit.clients == 3),
		"the new quota was not applied");
	ck_assert(log_wait("configuration reloaded", TL_WAIT_MS));
	/* New requests get the new quota; the old client keeps going. */
	r = ag_connect(a2, NULL, 0);
	ck_assert_str_eq(r->info.domain, "lab");
	r = ag_open(a2, NULL);
	ag_ok(a1, AGENT_PING);
	/* [defaults] applies to existing uid domains too. */
	ck_assert(root_domain("uid-0", &di));
	ck_assert_uint_eq(di.limit.objects, 5);
	/* So do the keys lab leaves to [defaults]. */
	ck_assert(root_domain("lab", &di));
	ck_assert_uint_eq(di.limit.objects, 5);
	ck_assert_uint_eq(di.members, 2);
}
END_TEST

START_TEST(test_reload_bad_file)
{
	struct agent *a1, *a2;
	const struct agent_rep *r;
	struct ibc_domain_info di;
	char needle[PATH_MAX + 64];

	daemon_up("[domain lab]\nusers = 65534, 4242\nclients = 1\n", NULL);
	a1 = agent_uid(4242);
	a2 = agent_uid(65534);
	ag_connect(a1, NULL, 0);

	conf_write("[domain lab]\nusers = 65534, 4242\nclients = many\n"
		   "[defaults]\nobjects = 5\n");
	reload();
	snprintf(needle, sizeof(needle),
		 "%s:3: [domain lab] key \"clients\": ", cfg_path);
	ck_assert_msg(log_wait(needle, TL_WAIT_MS),
		      "the log does not hold \"%s\"", needle);
	ck_assert(log_wait("keeping the running configuration", TL_WAIT_MS));

	/* The daemon serves, on the old configuration. */
	ck_assert(tl_daemon_alive(&D));
	ag_ok(a1, AGENT_PING);
	r = ag(a2, AGENT_CONNECT, NULL, 0);
	ck_assert_msg(r->ret == -EDQUOT, "after a bad reload: %d (%s)", r->ret,
		      r->error);
	ck_assert(root_domain("lab", &di));
	ck_assert(!di.retired);
	ck_assert_uint_eq(di.limit.clients, 1);
	ck_assert(root_domain("uid-0", &di));
	ck_assert_uint_eq(di.limit.objects, 65536);

	/* A domain the bad file would remove stays too. */
	conf_write("[domain other]\nusers = 4242\n\n[domain other]\n");
	reload();
	snprintf(needle, sizeof(needle), "%s:4: ", cfg_path);
	ck_assert(log_wait(needle, TL_WAIT_MS));
	ck_assert(root_domain("lab", &di));
	ck_assert(!di.retired);
	ck_assert(!root_domain("other", NULL));

	/* And a good file afterwards is taken. */
	conf_write("[domain lab]\nusers = 65534, 4242\nclients = 2\n");
	reload();
	ck_assert(WAIT_UNTIL(root_domain("lab", &di) && di.limit.clients == 2));
	r = ag_connect(a2, NULL, 0);
	ck_assert_str_eq(r->info.domain, "lab");
}
END_TEST

START_TEST(test_reload_removes_domain)
{
	struct agent *a1, *a2, *a3, *a4;
	const struct agent_rep *r;
	struct ibc_domain_info di;
	uint64_t ctx;

	daemon_up("[domain lab]\nusers = 65534, 4242\n", NULL);
	a1 = agent_uid(4242);
	a2 = agent_uid(65534);
	a3 = agent_uid(4242);
	a4 = agent_uid(65534);
	ag_connect(a1, NULL, 0);
	r = ag_open(a1, NULL);
	ctx = r->caps.context_id;

	conf_write("# lab is gone\n");
	reload();
	ck_assert_msg(WAIT_UNTIL(root_domain("lab", &di) && di.retired),
		      "lab is not listed as retired");
	ck_assert_uint_eq(di.members, 1);
	ck_assert_uint_eq(di.contexts, 1);
	ck_assert(log_wait("was removed from the configuration", TL_WAIT_MS));

	/* Its client keeps it, and sees it retired. */
	ag_ok(a1, AGENT_PING);
	r = ag(a1, AGENT_LIST_DOMAINS, NULL, 0);
	ck_assert_int_eq(r->ret, 0);
	ck_assert_uint_eq(r->n_list, 1);
	ck_assert_str_eq(r->domains[0].name, "lab");
	ck_assert(r->domains[0].retired);
	r = ag_open(a1, NULL);
	ck_assert_uint_eq(r->caps.context_id, ctx);
	ag_ok(a1, AGENT_CLOSE);

	/* Nobody new gets in. */
	r = ag_connect(a2, NULL, 0);
	ck_assert_str_eq(r->info.domain, "uid-65534");
	r = ag(a3, AGENT_CONNECT, "lab", 0);
	ck_assert_msg(r->ret < 0, "joined the retired domain lab");
	ck_assert_msg(strstr(r->error, "lab"), "error: %s", r->error);

	/* Back in the file: the same domain, context and all. */
	conf_write("[domain lab]\nusers = 65534, 4242\n");
	reload();
	ck_assert(WAIT_UNTIL(root_domain("lab", &di) && !di.retired));
	r = ag_connect(a4, NULL, 0);
	ck_assert_str_eq(r->info.domain, "lab");
	r = ag_open(a4, NULL);
	ck_assert_uint_eq(r->caps.context_id, ctx);

	/* Out again: it goes when its last client does. */
	conf_write("# lab is gone again\n");
	reload();
	ck_assert(WAIT_UNTIL(root_domain("lab", &di) && di.retired));
	ck_assert_uint_eq(di.members, 2);
	agent_stop(a1);
	ck_assert(root_domain("lab", NULL));
	agent_stop(a4);
	ck_assert_msg(WAIT_UNTIL(!root_domain("lab", NULL)),
		      "the retired lab stays after its clients left");
	agent_stop(a2);
	agent_stop(a3);
	root_disconnect();
	assert_settled();
}
END_TEST

/* --- device selection and bad starts -------------------------------------- */

START_TEST(test_device_auto)
{
	static const char *const more[] = { "--device", "auto", NULL };
	struct ibc_status st;
	char *log;

	if (have_rdma())
		return;
	daemon_up(NULL, more);
	ck_assert_msg(log_wait("using the soft device", TL_WAIT_MS),
		      "the log does not say which device was chosen");
	log = log_read();
	ck_assert_msg(strstr(log, "no RDMA"), "the log does not say why:\n%s",
		      log);
	free(log);
	ck_assert_int_eq(ibc_status(root_client(), &st, sizeof(st)), 0);
	ck_assert_str_eq(st.device_kind, "soft");
	assert_soft_caps(262144);
}
END_TEST

/* Spawn the daemon with @more and expect it to exit 1 within the wait;
 * returns its log. */
static char *daemon_must_fail(const char *const *more)
{
	const char *args[16];
	char sock[PATH_MAX];
	char *dir = tl_mkdtemp();
	size_t n = 0;
	int saved, status = 0, ret;
	pid_t pid;

	ck_assert_ptr_nonnull(dir);
	conf_paths();
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	for (; more && *more && n < 15; more++)
		args[n++] = *more;
	args[n] = NULL;
	saved = stderr_to_log();
	pid = tl_daemon_spawn(dir, sock, args);
	stderr_restore(saved);
	ck_assert_int_gt(pid, 0);
	ret = tl_wait_pid(pid, 10000, &status);
	if (ret == -ETIMEDOUT) {
		kill(pid, SIGKILL);
		tl_wait_pid(pid, TL_WAIT_MS, NULL);
		ck_abort_msg("the daemon kept running");
	}
	ck_assert_int_ge(ret, 0);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1,
		      "the daemon ended with status 0x%x, expected exit 1",
		      status);
	ck_assert_msg(access(sock, F_OK) < 0, "the failed daemon left %s",
		      sock);
	tl_rmtree(dir);
	free(dir);
	return log_read();
}

START_TEST(test_device_verbs_without_device)
{
	static const char *more[] = { "--device", "verbs", "--config", NULL,
				      NULL };
	char *log;

	if (have_rdma())
		return;
	conf_write("# empty\n");
	more[3] = cfg_path;
	log = daemon_must_fail(more);
	ck_assert_msg(strstr(log, "--device verbs: ") && strstr(log, "RDMA"),
		      "no clear message in the log:\n%s", log);
	free(log);
}
END_TEST

START_TEST(test_bad_config_at_start)
{
	static const char *more[] = { "--config", NULL, NULL };
	char needle[PATH_MAX + 64];
	char *log;

	conf_write("[defaults]\nclients = 4\n\nobjects = lots\n");
	more[1] = cfg_path;
	log = daemon_must_fail(more);
	snprintf(needle, sizeof(needle),
		 "%s:4: [defaults] key \"objects\": \"lots\" is not a number",
		 cfg_path);
	ck_assert_msg(strstr(log, needle), "the log does not hold \"%s\":\n%s",
		      needle, log);
	free(log);
}
END_TEST

START_TEST(test_missing_config_at_start)
{
	static const char *more[] = { "--config", NULL, NULL };
	char path[PATH_MAX + 16], needle[PATH_MAX + 64];
	char *log;

	conf_paths();
	snprintf(path, sizeof(path), "%s/absent.conf", cfg_dir);
	more[1] = path;
	log = daemon_must_fail(more);
	snprintf(needle, sizeof(needle), "%s: %s", path, strerror(ENOENT));
	ck_assert_msg(strstr(log, needle), "the log does not hold \"%s\":\n%s",
		      needle, log);
	free(log);
}
END_TEST

/* What runs without root: one uid, the devices, bad starts. */
static Suite *domains_suite(void)
{
	Suite *s = suite_create("domains");
	TCase *tc;

	tc = tcase_create("devices");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_unknown_device);
	tcase_add_test(tc, test_verbs_accessors_on_soft);
	tcase_add_test(tc, test_soft_caps_default);
	tcase_add_test(tc, test_soft_caps_configured);
	tcase_add_test(tc, test_device_auto);
	tcase_add_test(tc, test_device_verbs_without_device);
	suite_add_tcase(s, tc);

	tc = tcase_create("start");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_bad_config_at_start);
	tcase_add_test(tc, test_missing_config_at_start);
	suite_add_tcase(s, tc);
	return s;
}

/* Clients of other uids: root only. */
static Suite *domains_root_suite(void)
{
	Suite *s = suite_create("domains_root");
	TCase *tc;

	tc = tcase_create("sharing");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_same_uid_shares);
	tcase_add_test(tc, test_other_uid_other_domain);
	tcase_add_test(tc, test_private_domain);
	tcase_add_test(tc, test_configured_cross_uid);
	tcase_add_test(tc, test_configured_membership);
	tcase_add_test(tc, test_join_refused);
	tcase_add_test(tc, test_contexts_released);
	tcase_add_test(tc, test_verbs_accessors_other_uid);
	suite_add_tcase(s, tc);

	tc = tcase_create("quota");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_quota_clients);
	tcase_add_test(tc, test_quota_objects);
	suite_add_tcase(s, tc);

	tc = tcase_create("reload");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_reload_quota);
	tcase_add_test(tc, test_reload_bad_file);
	tcase_add_test(tc, test_reload_removes_domain);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	if (CK_ROOT_PROGRAM) {
		ck_require_root("check_domains_root");
		return ck_run("domains_root", domains_root_suite());
	}
	return ck_run("domains", domains_suite());
}
