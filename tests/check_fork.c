// SPDX-License-Identifier: MIT
/*
 * Fork against the real daemon on the soft device: ibc_fork_init's rule
 * (too late after a registration, where the kernel does not make fork safe
 * by itself), the state the broker shows, the child's placeholders and
 * -ESTALE on every inherited handle, a parent killed while its forked child
 * lives on (the parent's objects and DMs go anyway), system() changing
 * nothing, child sessions linked to their parent by its secret (and not
 * across domains), and a parent with DM, XRCD and RSS objects whose 100
 * children connect, make objects and exit or are killed.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "tests/cklib.h"
#include "tests/fork-guard.h"
#include "tests/testlib.h"

extern char **environ;

static struct tl_daemon D;
static char conf_path[4096];
static const char *conf_args[] = { "--config", conf_path, NULL };

/* This uid's processes land in "fam" (the first domain that matches),
 * which may claim TCP port 80 of 10/8 for RSS; "other" is joined by
 * name. The 100 children need more connections than the default. */
static void setup(void)
{
	unsigned int uid = (unsigned int)getuid();
	char *dir = tl_mkdtemp();
	FILE *f;
	int ret;

	ck_assert_ptr_nonnull(dir);
	snprintf(conf_path, sizeof(conf_path), "%s/rdmabroker.conf", dir);
	free(dir);
	f = fopen(conf_path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f,
		"[broker]\nconnections_per_uid = 512\n"
		"[domain fam]\nusers = %u\n"
		"rss_allow = ipv4/tcp 10.0.0.0/8 80\n"
		"[domain other]\nusers = %u\n",
		uid, uid);
	ck_assert_int_eq(fclose(f), 0);
	ret = tl_daemon_start(&D, conf_args);
	ck_assert_msg(ret == 0, "cannot start %s: %s", tl_daemon_path(),
		      strerror(-ret));
}

static void teardown(void)
{
	tl_daemon_stop(&D);
}

static int join(const char *domain, struct ibc_client **ret)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_TIMEOUT,
		.socket_path = D.sock,
		.timeout_ms = 20000,
		.domain = domain,
	};

	if (domain)
		attr.comp_mask |= IBC_CONNECT_ATTR_DOMAIN;
	return ibc_connect(&attr, ret);
}

static struct ibc_client *connect_ok(void)
{
	struct ibc_client *cl;
	int ret = join(NULL, &cl);

	ck_assert_msg(ret == 0, "connect: %s", ibc_last_error());
	return cl;
}

static struct ibc_ctx *open_ok(struct ibc_client *cl)
{
	struct ibc_ctx *ctx;
	int ret = ibc_open(cl, NULL, &ctx);

	ck_assert_msg(ret == 0, "open: %s", ibc_last_error());
	return ctx;
}

static uint64_t client_id(struct ibc_client *cl)
{
	struct ibc_client_info info;

	ck_assert_int_eq(ibc_client_info(cl, &info, sizeof(info)), 0);
	return info.client_id;
}

/* Client @id as @cl sees it; false when not listed. */
static bool find_client(struct ibc_client *cl, uint64_t id,
			struct ibc_client_entry *ret)
{
	struct ibc_client_entry *e;
	bool found = false;
	size_t n;

	ck_assert_int_eq(ibc_list_clients(cl, &e, sizeof(*e), &n), 0);
	for (size_t i = 0; i < n; i++)
		if (e[i].id == id) {
			*ret = e[i];
			found = true;
		}
	ibc_list_free(e);
	return found;
}

/* Registry objects of client @id (0: every client). */
static size_t count_objects(struct ibc_client *cl, uint64_t id)
{
	struct ibc_object_filter f = {
		.comp_mask = id ? IBC_OBJECT_FILTER_CLIENT : 0,
		.client_id = id,
	};
	struct ibc_object_info *o;
	size_t n;

	ck_assert_int_eq(ibc_list_objects(cl, &f, &o, sizeof(*o), &n), 0);
	ibc_list_free(o);
	return n;
}

static size_t count_dms(struct ibc_client *cl)
{
	struct ibc_dm_info *d;
	size_t n;

	ck_assert_int_eq(ibc_list_dms(cl, &d, sizeof(*d), &n), 0);
	ibc_list_free(d);
	return n;
}

static void domain_used(struct ibc_client *cl, const char *name,
			struct ibc_quota *ret)
{
	struct ibc_domain_info *d;
	bool found = false;
	size_t n;

	ck_assert_int_eq(ibc_list_domains(cl, &d, sizeof(*d), &n), 0);
	for (size_t i = 0; i < n; i++)
		if (strcmp(d[i].name, name) == 0) {
			*ret = d[i].used;
			found = true;
		}
	ibc_list_free(d);
	ck_assert_msg(found, "domain %s is not listed", name);
}

static bool fork_unneeded(void)
{
	return ibv_is_fork_initialized() == IBV_FORK_UNNEEDED;
}

/* --- ibc_fork_init ------------------------------------------------------ */

START_TEST(test_init_after_registration)
{
	struct ibc_client *cl = connect_ok();
	struct ibc_ctx *ctx = open_ok(cl);
	static char buf[4096];
	struct ibc_client_entry e;
	struct ibc_mr *mr;

	ck_assert_int_eq(
		ibc_reg_mr(ctx, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE, &mr),
		0);
	/* The deregistration does not make it early again: the rule is
	 * "has ever held". */
	ck_assert_int_eq(ibc_dereg_mr(mr), 0);
	if (fork_unneeded()) {
		ck_assert_int_eq(ibc_fork_init(), 0);
		ck_assert_int_eq(ibc_fork_state(), IBC_FORK_UNNEEDED);
	} else {
		ck_assert_int_eq(ibc_fork_init(), -EINVAL);
		ck_assert_msg(strstr(ibc_last_error(), "too late"), "\"%s\"",
			      ibc_last_error());
		ck_assert_int_eq(ibc_fork_state(), IBC_FORK_DISABLED);
		ck_assert(find_client(cl, client_id(cl), &e));
		ck_assert_int_eq(e.fork_state, IBC_FORK_DISABLED);
	}
	ibc_close(ctx);
	ibc_disconnect(cl);
}
END_TEST

/* A DM MR pins no host memory: fork_init is still in time after one. */
START_TEST(test_init_after_dm_mr)
{
	struct ibc_client *cl = connect_ok();
	struct ibc_ctx *ctx = open_ok(cl);
	struct ibc_dm *dm;
	struct ibc_mr *mr;

	ck_assert_int_eq(ibc_dm_alloc(ctx, 4096, 0, &dm), 0);
	ck_assert_msg(
		ibc_reg_dm_mr(dm, 0, 4096,
			      IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE,
			      &mr) == 0,
		"%s", ibc_last_error());
	ck_assert_msg(ibc_fork_init() == 0, "%s", ibc_last_error());
	ck_assert_int_eq(ibc_dereg_mr(mr), 0);
	ck_assert_int_eq(ibc_dm_free(dm), 0);
	ibc_close(ctx);
	ibc_disconnect(cl);
}
END_TEST

START_TEST(test_init_first)
{
	struct ibc_client *a = connect_ok(), *b = connect_ok(), *other;
	enum ibc_fork_state want =
		fork_unneeded() ? IBC_FORK_UNNEEDED : IBC_FORK_ENABLED;
	struct ibc_client_entry e;
	struct ibc_ctx *ctx;
	static char buf[4096];
	struct ibc_mr *mr;

	ck_assert_int_eq(ibc_fork_state(), fork_unneeded() ? IBC_FORK_UNNEEDED :
							     IBC_FORK_DISABLED);
	ck_assert_msg(ibc_fork_init() == 0, "%s", ibc_last_error());
	ck_assert_int_eq(ibc_fork_state(), want);
	/* Both live sessions were told, and a new one says it at hello. */
	ck_assert_int_eq(join("other", &other), 0);
	ck_assert(find_client(a, client_id(a), &e));
	ck_assert_int_eq(e.fork_state, want);
	ck_assert(find_client(a, client_id(b), &e));
	ck_assert_int_eq(e.fork_state, want);
	ck_assert(find_client(other, client_id(other), &e));
	ck_assert_int_eq(e.fork_state, want);
	/* Registrations after it, and calls again: still 0. */
	ctx = open_ok(a);
	ck_assert_int_eq(
		ibc_reg_mr(ctx, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE, &mr),
		0);
	ck_assert_int_eq(ibc_fork_init(), 0);
	ck_assert_int_eq(ibc_fork_state(), want);
	ck_assert_int_eq(ibc_dereg_mr(mr), 0);
	ibc_close(ctx);
	ibc_disconnect(other);
	ibc_disconnect(b);
	ibc_disconnect(a);
}
END_TEST

/* RDMAV_FORK_SAFE and IBV_FORK_SAFE, as libibverbs reads them ("0" is
 * off), act at connect: the hello carries the state. */
START_TEST(test_env_fork_safe)
{
	enum ibc_fork_state want =
		fork_unneeded() ? IBC_FORK_UNNEEDED : IBC_FORK_ENABLED;
	struct ibc_client_entry e;
	struct ibc_client *cl;

	ck_assert_int_eq(setenv("IBV_FORK_SAFE", "0", 1), 0);
	cl = connect_ok();
	ck_assert_int_eq(ibc_fork_state(), fork_unneeded() ? IBC_FORK_UNNEEDED :
							     IBC_FORK_DISABLED);
	ibc_disconnect(cl);
	ck_assert_int_eq(setenv("RDMAV_FORK_SAFE", "1", 1), 0);
	cl = connect_ok();
	ck_assert_int_eq(ibc_fork_state(), want);
	ck_assert(find_client(cl, client_id(cl), &e));
	ck_assert_int_eq(e.fork_state, want);
	ibc_disconnect(cl);
}
END_TEST

/* --- the child of a fork ------------------------------------------------ */

/* Descriptors of this process whose link starts with @prefix ("socket:",
 * "/memfd:"), at most @cap. */
static int fds_like(const char *prefix, int *out, int cap)
{
	char path[64], link[256];
	int n = 0;

	for (int fd = 0; fd < 1024 && n < cap; fd++) {
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		if (strncmp(link, prefix, strlen(prefix)) == 0)
			out[n++] = fd;
	}
	return n;
}

/* @fd is the placeholder: open, CLOEXEC, an O_PATH descriptor of /, on
 * which every write fails. */
static bool is_placeholder(int fd)
{
	struct stat st, root;
	int flags = fcntl(fd, F_GETFD);

	return flags >= 0 && (flags & FD_CLOEXEC) &&
	       (fcntl(fd, F_GETFL) & O_PATH) && fstat(fd, &st) == 0 &&
	       stat("/", &root) == 0 && st.st_dev == root.st_dev &&
	       st.st_ino == root.st_ino && write(fd, "", 1) < 0;
}

/* What the forked child found; bit i set: check i failed. */
enum {
	CHK_PLACEHOLDER = 1 << 0,
	CHK_PING = 1 << 1,
	CHK_SENTENCE = 1 << 2,
	CHK_CQ = 1 << 3,
	CHK_DM = 1 << 4,
	CHK_QUERY = 1 << 5,
	CHK_MR = 1 << 6,
	CHK_DISPATCH = 1 << 7,
	CHK_OPEN = 1 << 8,
	CHK_INFO = 1 << 9,
	CHK_NOFDS = 1 << 10,
	CHK_MAPS = 1 << 11,
};

/* Mappings of this process whose line in /proc/self/maps names @what. */
static int maps_like(const char *what)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, what) != NULL;
	fclose(f);
	return n;
}

struct child_report {
	pid_t child;
	uint64_t parent_id;
	unsigned int failed;
	char why[200];
};

static void note(struct child_report *r, unsigned int bit, const char *what)
{
	if (!(r->failed & bit) && !r->why[0])
		snprintf(r->why, sizeof(r->why), "%s (%s)", what,
			 ibc_last_error());
	r->failed |= bit;
}

/* In the child: every inherited handle answers -ESTALE; the inherited
 * descriptors are placeholders. */
static void child_checks(struct child_report *r, struct ibc_client *cl,
			 struct ibc_ctx *ctx, struct ibc_cq *cq,
			 struct ibc_mr *mr, struct ibc_dm *dm, const int *fds,
			 int nfds)
{
	struct ibc_client_info info;
	struct ibc_caps caps;
	struct ibc_ctx *x;
	uint32_t word = 7;
	int other[8];

	for (int i = 0; i < nfds; i++)
		if (!is_placeholder(fds[i]))
			note(r, CHK_PLACEHOLDER, "an inherited descriptor");
	if (fds_like("socket:", other, 8) || fds_like("/memfd:", other, 8))
		note(r, CHK_NOFDS, "a socket or memfd is still open");
	/* The DM and the session's DM status page stayed with the parent
	 * (MADV_DONTFORK). */
	if (maps_like("memfd:rdmabroker") != 0)
		note(r, CHK_MAPS, "a DM memfd is still mapped");
	if (ibc_ping(cl, "x", 1) != -ESTALE)
		note(r, CHK_PING, "ibc_ping");
	if (!strstr(ibc_last_error(), "forked"))
		note(r, CHK_SENTENCE, "the sentence");
	if (ibc_cq_destroy(cq) != -ESTALE)
		note(r, CHK_CQ, "ibc_cq_destroy");
	if (ibc_dm_write(dm, 0, &word, sizeof(word)) != -ESTALE ||
	    ibc_dm_read(dm, &word, 0, sizeof(word)) != -ESTALE ||
	    ibc_dm_free(dm) != -ESTALE || ibc_dm_unimport(dm) != -ESTALE)
		note(r, CHK_DM, "the DM");
	if (ibc_query(ctx, &caps, sizeof(caps)) != -ESTALE)
		note(r, CHK_QUERY, "ibc_query");
	if (ibc_dereg_mr(mr) != -ESTALE)
		note(r, CHK_MR, "ibc_dereg_mr");
	if (ibc_dispatch(cl) != -ESTALE || ibc_get_fd(cl) != -ESTALE)
		note(r, CHK_DISPATCH, "ibc_dispatch");
	if (ibc_open(cl, NULL, &x) != -ESTALE)
		note(r, CHK_OPEN, "ibc_open");
	if (ibc_client_info(cl, &info, sizeof(info)) != -ESTALE)
		note(r, CHK_INFO, "ibc_client_info");
}

static ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n <= 0)
			return n < 0 ? -errno : (ssize_t)got;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/*
 * The parent process: objects and a DM, then a child that lives on
 * without exec. Reports on @res (the child's checks, then the child's
 * new session), waits to be killed.
 */
static void __attribute__((noreturn)) parent_proc(int res, int hold)
{
	struct ibc_client *cl, *fresh;
	struct child_report r = { 0 };
	struct ibc_qp_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4,
			 .max_recv_wr = 4,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	static char buf[8192];
	struct ibc_client_info info;
	struct ibc_ctx *ctx;
	struct ibc_cq *cq;
	struct ibc_qp *qp;
	struct ibc_mr *mr, *dmr;
	struct ibc_dm *dm;
	int fds[16], nfds;
	pid_t child;
	char c;

	if (join(NULL, &cl) || ibc_open(cl, NULL, &ctx) ||
	    ibc_cq_create(ctx, 16, &cq) ||
	    (qa.send_cq = qa.recv_cq = cq, false) ||
	    ibc_qp_create(ctx, &qa, &qp) ||
	    ibc_reg_mr(ctx, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE, &mr) ||
	    ibc_dm_alloc(ctx, 4096, 0, &dm) ||
	    /* An MR on it: the child's ibc_dm_free says ESTALE, not EBUSY. */
	    ibc_reg_dm_mr(dm, 0, 4096,
			  IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE, &dmr))
		_exit(2);
	/* The DM and its status page are mapped here. */
	if (maps_like("memfd:rdmabroker-dm") < 2)
		_exit(8);
	nfds = fds_like("socket:", fds, 8);
	nfds += fds_like("/memfd:", fds + nfds, 8);
	r.parent_id = client_id(cl);
	child = fork();
	if (child < 0)
		_exit(3);
	if (child == 0) {
		r.child = getpid();
		child_checks(&r, cl, ctx, cq, mr, dm, fds, nfds);
		if (write(res, &r, sizeof(r)) != sizeof(r))
			_exit(4);
		/* Live on until the test has seen the parent cleaned. */
		if (read(hold, &c, 1) < 0)
			_exit(5);
		/* Freeing the inherited handles touches nothing of the
		 * parent's; a session of its own works. */
		ibc_close(ctx);
		ibc_disconnect(cl);
		/* ...and leaves no placeholder open. */
		for (int i = 0; i < nfds; i++)
			if (fcntl(fds[i], F_GETFD) >= 0)
				_exit(9);
		if (join(NULL, &fresh) ||
		    ibc_client_info(fresh, &info, sizeof(info)) ||
		    ibc_ping(fresh, "y", 1))
			_exit(6);
		if (write(res, &info.parent_id, sizeof(info.parent_id)) !=
		    sizeof(info.parent_id))
			_exit(7);
		ibc_disconnect(fresh);
		_exit(0);
	}
	for (;;)
		pause();
}

START_TEST(test_child_lives_parent_killed)
{
	struct ibc_client *cl = connect_ok();
	struct child_report r;
	int res[2], hold[2], status;
	uint64_t id = 0, link = 1;
	int64_t deadline;
	pid_t parent;

	ck_assert_int_eq(pipe2(res, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(hold, O_CLOEXEC), 0);
	parent = fork();
	ck_assert_int_ge(parent, 0);
	if (parent == 0) {
		close(res[0]);
		close(hold[1]);
		parent_proc(res[1], hold[0]);
	}
	close(res[1]);
	close(hold[0]);
	ck_assert_int_eq(read_full(res[0], &r, sizeof(r)), sizeof(r));
	ck_assert_msg(r.failed == 0, "the child's checks 0x%x: %s", r.failed,
		      r.why);
	id = r.parent_id;
	ck_assert_uint_ge(count_objects(cl, id), 4);
	ck_assert_uint_eq(count_dms(cl), 1);

	ck_assert_int_eq(kill(parent, SIGKILL), 0);
	ck_assert_int_ge(tl_wait_pid(parent, TL_WAIT_MS, &status), 0);
	deadline = tl_now_ms() + TL_WAIT_MS;
	while ((count_objects(cl, id) || count_dms(cl)) &&
	       tl_now_ms() < deadline)
		tl_sleep_ms(10);
	ck_assert_uint_eq(count_objects(cl, id), 0);
	ck_assert_uint_eq(count_dms(cl), 0);
	/* ...while the child it forked lives. */
	ck_assert_int_eq(kill(r.child, 0), 0);

	ck_assert_int_eq(write(hold[1], "g", 1), 1);
	ck_assert_msg(read_full(res[0], &link, sizeof(link)) == sizeof(link),
		      "the child failed after its parent's death (exit 9: "
		      "placeholders left open by ibc_close/ibc_disconnect)");
	/* Its parent's session was gone when it connected. */
	ck_assert_uint_eq(link, 0);
	/* Not the test's child: reaped by init. */
	deadline = tl_now_ms() + TL_WAIT_MS;
	while (kill(r.child, 0) == 0 && tl_now_ms() < deadline)
		tl_sleep_ms(10);
	close(res[0]);
	close(hold[1]);
	ibc_disconnect(cl);
}
END_TEST

/* Another thread keeps calling while this one forks: the handlers wait
 * for the locks, no child inherits a half-made request, the parent's
 * session goes on, every child finds its inherited one stale. Each of
 * the thread's rounds allocates outside the library's locks too, and the
 * child allocates: the fork guard keeps a fork out of a round (ASan's
 * allocator, fork-guard.h). */
static volatile bool busy_stop;
static int busy_errors;

static void *busy_thread(void *arg)
{
	struct ibc_client *cl = arg;
	struct ibc_ctx *ctx;
	struct ibc_cq *cq;

	while (!busy_stop) {
		fg_enter();
		if (ibc_ping(cl, "b", 1) || ibc_open(cl, NULL, &ctx)) {
			busy_errors++;
			fg_leave();
			break;
		}
		if (ibc_cq_create(ctx, 4, &cq) == 0)
			ibc_cq_destroy(cq);
		ibc_close(ctx);
		fg_leave();
	}
	return NULL;
}

START_TEST(test_fork_while_busy)
{
	struct ibc_client *cl = connect_ok();
	pthread_t t;
	int status;

	ck_assert_int_eq(pthread_create(&t, NULL, busy_thread, cl), 0);
	for (int i = 0; i < 50; i++) {
		pid_t pid = fork();

		ck_assert_int_ge(pid, 0);
		if (pid == 0)
			_exit(ibc_ping(cl, "c", 1) == -ESTALE ? 0 : 1);
		ck_assert_int_ge(tl_wait_pid(pid, TL_WAIT_MS, &status), 0);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "child %d: status 0x%x", i, status);
	}
	busy_stop = true;
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(busy_errors, 0);
	ck_assert_int_eq(ibc_ping(cl, "d", 1), 0);
	ibc_disconnect(cl);
}
END_TEST

/* The fork guard: a thread inside (fg_enter()) for 100 ms when the fork
 * comes; the child must not see it inside. */
static bool guard_inside;

static void *guard_holder(void *arg)
{
	int ready = *(int *)arg;

	fg_enter();
	__atomic_store_n(&guard_inside, true, __ATOMIC_SEQ_CST);
	if (write(ready, "i", 1) != 1)
		abort();
	tl_sleep_ms(100);
	__atomic_store_n(&guard_inside, false, __ATOMIC_SEQ_CST);
	fg_leave();
	return NULL;
}

START_TEST(test_fork_waits_for_guarded_thread)
{
	/* The library's handlers first (fork-guard.h). */
	struct ibc_client *cl = connect_ok();

	for (int i = 0; i < 3; i++) {
		int p[2], status;
		pthread_t t;
		pid_t pid;
		char c;

		ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
		ck_assert_int_eq(pthread_create(&t, NULL, guard_holder, &p[1]),
				 0);
		ck_assert_int_eq(read(p[0], &c, 1), 1);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0)
			_exit(__atomic_load_n(&guard_inside, __ATOMIC_SEQ_CST) ?
				      1 :
				      0);
		ck_assert_int_ge(tl_wait_pid(pid, TL_WAIT_MS, &status), 0);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "fork %d landed while a thread was inside the "
			      "fork guard",
			      i);
		ck_assert_int_eq(pthread_join(t, NULL), 0);
		close(p[0]);
		close(p[1]);
	}
	ibc_disconnect(cl);
}
END_TEST

/* system() and posix_spawn() run no atfork handler: the child execs with
 * every library descriptor closed (CLOEXEC) and nothing changes here. */
START_TEST(test_system_changes_nothing)
{
	struct ibc_client *cl = connect_ok();
	struct ibc_ctx *ctx = open_ok(cl);
	enum ibc_fork_state state = ibc_fork_state();
	char *dir = tl_mkdtemp(), cmd[512], line[256], out[300];
	char *argv[] = { "sh", "-c", "exit 5", NULL };
	int fds, status, sockets = 0;
	static char buf[4096];
	struct ibc_cq *cq;
	struct ibc_mr *mr;
	size_t objs;
	pid_t pid;
	FILE *f;

	ck_assert_int_eq(ibc_cq_create(ctx, 8, &cq), 0);
	ck_assert_int_eq(
		ibc_reg_mr(ctx, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE, &mr),
		0);
	objs = count_objects(cl, client_id(cl));
	fds = tl_count_fds(0);
	snprintf(out, sizeof(out), "%s/fds", dir);
	snprintf(cmd, sizeof(cmd), "ls -l /proc/$$/fd/ > %s; exit 3", out);
	status = system(cmd);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 3,
		      "system: 0x%x", status);
	f = fopen(out, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		sockets += strstr(line, "socket:") || strstr(line, "memfd:");
	fclose(f);
	ck_assert_int_eq(sockets, 0);
	ck_assert_int_eq(
		posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 5);

	ck_assert_int_eq(ibc_ping(cl, "z", 1), 0);
	ck_assert_uint_eq(count_objects(cl, client_id(cl)), objs);
	ck_assert_int_eq(tl_count_fds(0), fds);
	ck_assert_int_eq(ibc_fork_state(), state);
	ck_assert_int_eq(ibc_dereg_mr(mr), 0);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	ibc_close(ctx);
	ibc_disconnect(cl);
	free(dir);
}
END_TEST

/* --- child sessions ----------------------------------------------------- */

/* In a forked child: free the @inherited session (may be NULL), connect
 * (to @domain) and report the link the broker recorded, then wait for
 * @hold. */
static void __attribute__((noreturn))
linked_child(int res, int hold, struct ibc_client *inherited,
	     const char *domain)
{
	struct ibc_client_info info = { 0 };
	struct ibc_client *cl;
	char c;

	/* The link survives it: the parent's sessions were noted at the
	 * fork. */
	ibc_disconnect(inherited);
	if (join(domain, &cl) || ibc_client_info(cl, &info, sizeof(info)))
		_exit(2);
	if (write(res, &info, sizeof(info)) != sizeof(info))
		_exit(3);
	if (read(hold, &c, 1) < 0)
		_exit(4);
	_exit(0);
}

START_TEST(test_child_session_link)
{
	struct ibc_client *cl = connect_ok(), *oth;
	struct ibc_client_info got, got2;
	int res[2], hold[2], status;
	struct ibc_client_entry e;
	pid_t a, b;

	ck_assert_int_eq(pipe2(res, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(hold, O_CLOEXEC), 0);
	a = fork();
	ck_assert_int_ge(a, 0);
	if (a == 0)
		linked_child(res[1], hold[0], cl, NULL);
	ck_assert_int_eq(read_full(res[0], &got, sizeof(got)), sizeof(got));
	ck_assert_uint_eq(got.parent_id, client_id(cl));
	ck_assert(find_client(cl, got.client_id, &e));
	ck_assert_uint_eq(e.parent_id, client_id(cl));
	ck_assert(find_client(cl, client_id(cl), &e));
	ck_assert_uint_eq(e.children, 1);

	/* A session of another domain forks a child that joins "fam": the
	 * broker links across no domain. */
	ck_assert_int_eq(join("other", &oth), 0);
	ibc_disconnect(cl);
	b = fork();
	ck_assert_int_ge(b, 0);
	if (b == 0)
		linked_child(res[1], hold[0], NULL, "fam");
	ck_assert_int_eq(read_full(res[0], &got2, sizeof(got2)), sizeof(got2));
	ck_assert_uint_eq(got2.parent_id, 0);

	/* Every child holds the writing end too: a byte each. */
	ck_assert_int_eq(write(hold[1], "gg", 2), 2);
	ck_assert_int_eq(tl_wait_pid(a, TL_WAIT_MS, &status), 0);
	ck_assert_int_eq(tl_wait_pid(b, TL_WAIT_MS, &status), 0);
	close(hold[1]);
	close(hold[0]);
	close(res[0]);
	close(res[1]);
	ibc_disconnect(oth);
}
END_TEST

/* A raw hello that names client @parent with @secret of @len bytes: the
 * reply's error (>= 0) and its parent_id. */
static int hello_naming(uint64_t parent, const uint8_t *secret, size_t len,
			uint64_t *ret_link)
{
	Rdmab__HelloRequest hello = RDMAB__HELLO_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	int sock = tl_raw_connect(D.sock), ret;

	ck_assert_int_ge(sock, 0);
	hello.library_version = (char *)"testlib";
	hello.pid = (uint32_t)getpid();
	hello.parent_id = parent;
	hello.parent_secret.data = (uint8_t *)secret;
	hello.parent_secret.len = len;
	req.version = WIRE_PROTOCOL_VERSION;
	req.serial = 1;
	req.body_case = RDMAB__REQUEST__BODY_HELLO;
	req.hello = &hello;
	ck_assert_int_eq(tl_send_request(sock, &req, NULL, 0), 0);
	ck_assert_int_eq(tl_recv_msg(sock, TL_WAIT_MS, &m), 1);
	ck_assert_int_eq(m->kind_case, RDMAB__DAEMON_MESSAGE__KIND_REPLY);
	ret = m->reply->error;
	if (ret == 0) {
		ck_assert_int_eq(m->reply->body_case, RDMAB__REPLY__BODY_HELLO);
		ck_assert_uint_eq(m->reply->hello->secret.len, 16);
		*ret_link = m->reply->hello->parent_id;
	}
	rdmab__daemon_message__free_unpacked(m, NULL);
	close(sock);
	return ret;
}

START_TEST(test_wrong_secret)
{
	struct ibc_client *cl = connect_ok(), *oth;
	uint8_t secret[17] = { 1, 2, 3 };
	uint64_t link = 99;

	ck_assert_int_eq(join("other", &oth), 0);
	/* A wrong secret, an id of another domain, an id of nobody: the
	 * same answer, a session without a link. */
	ck_assert_int_eq(hello_naming(client_id(cl), secret, 16, &link), 0);
	ck_assert_uint_eq(link, 0);
	link = 99;
	ck_assert_int_eq(hello_naming(client_id(oth), secret, 16, &link), 0);
	ck_assert_uint_eq(link, 0);
	link = 99;
	ck_assert_int_eq(hello_naming(1000000, secret, 16, &link), 0);
	ck_assert_uint_eq(link, 0);
	ck_assert_int_eq(hello_naming(client_id(cl), secret, 17, &link),
			 EINVAL);
	ibc_disconnect(oth);
	ibc_disconnect(cl);
}
END_TEST

/* --- a parent with DM, XRCD and RSS objects, and 100 children ----------- */

#define N_CHILDREN 100

static const uint8_t rss_key[IBC_RSS_KEY_LEN] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
	0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
	0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
	0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

static void __attribute__((noreturn)) busy_child(int ready, int hold)
{
	static char buf[4096];
	struct ibc_client *cl;
	struct ibc_ctx *ctx;
	struct ibc_cq *cq;
	struct ibc_mr *mr;
	char c = 'r';

	if (join(NULL, &cl) || ibc_open(cl, NULL, &ctx) ||
	    ibc_cq_create(ctx, 4, &cq) ||
	    ibc_reg_mr(ctx, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE, &mr))
		_exit(2);
	if (write(ready, &c, 1) != 1)
		_exit(3);
	if (read(hold, &c, 1) < 0)
		_exit(4);
	/* Half go without a word, half after a clean disconnect. */
	if (getpid() & 1)
		ibc_disconnect(cl);
	_exit(0);
}

START_TEST(test_hundred_children)
{
	struct ibc_client *cl = connect_ok();
	struct ibc_ctx *ctx = open_ok(cl);
	struct ibc_quota before, after;
	struct ibc_client_entry *e;
	int ready[2], hold[2], status, dfds;
	struct ibc_rss_attr ra = {
		.port_num = 1,
		.log_ind_tbl_size = 2,
		.num_wqs = 2,
		.hash_fields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
			       IBV_RX_HASH_SRC_PORT_TCP |
			       IBV_RX_HASH_DST_PORT_TCP,
	};
	pid_t kids[N_CHILDREN];
	uint64_t wq_ids[2], me = client_id(cl);
	size_t n, objs, linked = 0;
	struct ibc_xrcd *xrcd;
	struct ibc_wq *wq[2];
	struct ibc_rss *rss;
	struct ibc_dm *dm;
	struct ibc_cq *cq;
	int64_t deadline;
	char c;

	ck_assert_int_eq(ibc_dm_alloc(ctx, 8192, 0, &dm), 0);
	ck_assert_msg(ibc_xrcd_open(ctx, "fam-x", O_CREAT, &xrcd) == 0, "%s",
		      ibc_last_error());
	ck_assert_int_eq(ibc_cq_create(ctx, 16, &cq), 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(ibc_wq_create(ctx, cq, NULL, &wq[i]), 0);
		wq_ids[i] = ibc_wq_id(wq[i]);
	}
	ra.wq_ids = wq_ids;
	memcpy(ra.hash_key, rss_key, sizeof(rss_key));
	ra.match.af = AF_INET;
	ra.match.l4_proto = IPPROTO_TCP;
	ra.match.dst_addr[0] = 10;
	ra.match.prefix_len = 8;
	ra.match.dst_port = 80;
	ra.match.port_mask = 0xffff;
	ck_assert_msg(ibc_rss_create(ctx, &ra, &rss) == 0, "%s",
		      ibc_last_error());
	domain_used(cl, "fam", &before);
	objs = count_objects(cl, 0);
	dfds = tl_count_fds(D.pid);
	ck_assert_int_gt(dfds, 0);

	ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(hold, O_CLOEXEC), 0);
	for (int i = 0; i < N_CHILDREN; i++) {
		kids[i] = fork();
		ck_assert_int_ge(kids[i], 0);
		if (kids[i] == 0)
			busy_child(ready[1], hold[0]);
	}
	for (int i = 0; i < N_CHILDREN; i++)
		ck_assert_int_eq(read_full(ready[0], &c, 1), 1);

	/* The tree: every child under this session. */
	ck_assert_int_eq(ibc_list_clients(cl, &e, sizeof(*e), &n), 0);
	for (size_t i = 0; i < n; i++) {
		if (e[i].id == me)
			ck_assert_uint_eq(e[i].children, N_CHILDREN);
		else
			linked += e[i].parent_id == me;
	}
	ibc_list_free(e);
	ck_assert_uint_eq(linked, N_CHILDREN);
	ck_assert_uint_eq(count_objects(cl, 0), objs + 2 * N_CHILDREN);

	/* Half are killed where they wait, the others exit. */
	for (int i = 0; i < N_CHILDREN; i += 2)
		ck_assert_int_eq(kill(kids[i], SIGKILL), 0);
	for (int i = 0; i < N_CHILDREN; i++)
		ck_assert_int_eq(write(hold[1], "g", 1), 1);
	for (int i = 0; i < N_CHILDREN; i++) {
		ck_assert_int_ge(tl_wait_pid(kids[i], TL_WAIT_MS, &status), 0);
		ck_assert(i % 2 ? WIFEXITED(status) &&
					  WEXITSTATUS(status) == 0 :
				  WIFSIGNALED(status));
	}
	close(hold[1]);

	deadline = tl_now_ms() + 10000;
	for (;;) {
		domain_used(cl, "fam", &after);
		if ((count_objects(cl, 0) == objs &&
		     count_objects(cl, me) == objs &&
		     after.objects == before.objects &&
		     after.clients == before.clients &&
		     tl_count_fds(D.pid) == dfds) ||
		    tl_now_ms() > deadline)
			break;
		tl_sleep_ms(20);
	}
	ck_assert_uint_eq(count_objects(cl, 0), objs);
	ck_assert_uint_eq(count_objects(cl, me), objs);
	ck_assert_uint_eq(after.objects, before.objects);
	ck_assert_uint_eq(after.clients, before.clients);
	ck_assert_uint_eq(after.dm_bytes, before.dm_bytes);
	ck_assert_uint_eq(after.xrcds, before.xrcds);
	ck_assert_uint_eq(after.rss_tables, before.rss_tables);
	ck_assert_int_eq(tl_count_fds(D.pid), dfds);
	ck_assert(find_client(cl, me, (struct ibc_client_entry[1]){ 0 }));

	ck_assert_int_eq(ibc_rss_destroy(rss), 0);
	ibc_close(ctx);
	ibc_disconnect(cl);
	close(ready[0]);
	close(ready[1]);
	close(hold[0]);
}
END_TEST

static Suite *fork_suite(void)
{
	Suite *s = suite_create("fork");
	TCase *tc = tcase_create("fork");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_init_after_registration);
	tcase_add_test(tc, test_init_after_dm_mr);
	tcase_add_test(tc, test_init_first);
	tcase_add_test(tc, test_env_fork_safe);
	tcase_add_test(tc, test_child_lives_parent_killed);
	tcase_add_test(tc, test_system_changes_nothing);
	tcase_add_test(tc, test_fork_while_busy);
	tcase_add_test(tc, test_fork_waits_for_guarded_thread);
	tcase_add_test(tc, test_child_session_link);
	tcase_add_test(tc, test_wrong_secret);
	tcase_add_test(tc, test_hundred_children);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("check_fork", fork_suite());
}
