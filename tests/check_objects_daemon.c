// SPDX-License-Identifier: MIT
/*
 * The object registry against the real rdmabrokerd on the soft device,
 * with raw packets (tests/objlib.c): every constructor and destructor with
 * the kernel's errors, the order -EBUSY enforces, a handle reused by
 * another client while the first one dies, objects detached by a protocol
 * error and destroyed when the process dies, eviction, listings, the
 * objects quota, a seeded storm of clients killed at random points, and
 * the cleanup of a client holding 1,000 objects.
 *
 * Clients that must die are forked processes; they report over a pipe.
 * The eviction tests need root (an administrator, and a client of another
 * uid): built again with -DCK_ROOT_PROGRAM=1 into check_objects_daemon_root,
 * which runs them only and exits 77 (SKIP) for other users.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "tests/cklib.h"
#include "tests/objlib.h"
#include "tests/testlib.h"

#define ST_LIVE RDMAB__OBJECT_INFO__STATE__LIVE
#define ST_DETACHED RDMAB__OBJECT_INFO__STATE__DETACHED
#define MAX_LIST 4096
/* Kills in make check's storm; check-soak does 1,000 (tests/soak.c). */
#define STORM_KILLS 40

static struct tl_daemon D;
static char *cfg_dir;
static char cfg_path[PATH_MAX];
static char log_path[PATH_MAX];
static struct ol_info list[MAX_LIST];

static void setup(void)
{
	memset(&D, 0, sizeof(D));
	D.pid = -1;
	cfg_dir = NULL;
}

static void teardown(void)
{
	tl_daemon_stop(&D);
	if (cfg_dir) {
		tl_rmtree(cfg_dir);
		free(cfg_dir);
		cfg_dir = NULL;
	}
}

/* Start the daemon on a configuration of ours (@conf), its stderr in
 * log_path, its socket usable by every uid. */
static void daemon_up(const char *conf)
{
	const char *args[] = { "--config", cfg_path,	  "--socket-mode",
			       "0666",	   "--log-level", "info",
			       NULL };
	char *top;
	FILE *f;
	int saved, fd, ret;

	cfg_dir = tl_mkdtemp();
	ck_assert_ptr_nonnull(cfg_dir);
	snprintf(cfg_path, sizeof(cfg_path), "%s/rdmabroker.conf", cfg_dir);
	snprintf(log_path, sizeof(log_path), "%s/daemon.log", cfg_dir);
	f = fopen(cfg_path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(conf ? conf : "# nothing\n", f);
	ck_assert_int_eq(fclose(f), 0);
	fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	saved = fcntl(2, F_DUPFD_CLOEXEC, 3);
	ck_assert_int_eq(dup2(fd, 2), 2);
	close(fd);
	ret = tl_daemon_start(&D, args);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	ck_assert_msg(ret == 0, "cannot start %s: %s", tl_daemon_path(),
		      strerror(-ret));
	ck_assert_int_eq(chmod(D.dir, 0711), 0);
	top = strdup(D.dir);
	ck_assert_ptr_nonnull(top);
	ck_assert_int_eq(chmod(dirname(top), 0711), 0);
	free(top);
}

/* The rest of the daemon's first log line that holds @needle. */
static const char *log_line(const char *needle)
{
	static char line[512];
	FILE *f = fopen(log_path, "re");

	snprintf(line, sizeof(line), "(not logged)");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, needle)) {
			line[strcspn(line, "\n")] = '\0';
			fclose(f);
			return strstr(line, needle);
		}
	if (f)
		fclose(f);
	snprintf(line, sizeof(line), "(not logged)");
	return line;
}

/* How often the daemon's log holds @needle. */
static int log_count(const char *needle)
{
	int n = tl_count_in_file(log_path, needle);

	return n < 0 ? 0 : n;
}

static void connect_ok(struct ol_client *c)
{
	int ret = ol_connect(c, D.sock, NULL);

	ck_assert_msg(ret == 0, "connect: %s (%s)", strerror(-ret), ol_error);
}

/* A client that says hello and opens nothing: it charges nothing. */
static void checker_ok(struct ol_client *c)
{
	int fd = tl_raw_connect(D.sock);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ol_adopt(c, fd, NULL), 0);
}

#define FAILS(call, err, words)                                                \
	do {                                                                   \
		int f_ret_ = (call);                                           \
		ck_assert_msg(f_ret_ == -(err), "%s: %d (%s), want %s", #call, \
			      f_ret_, ol_error, #err);                         \
		ck_assert_msg(strstr(ol_error, words),                         \
			      "%s: the sentence \"%s\" lacks \"%s\"", #call,   \
			      ol_error, words);                                \
	} while (0)

/* Objects @c sees of @client (all when 0). */
static int listed(struct ol_client *c, uint64_t client)
{
	int n = ol_list(c, client, NULL, list, MAX_LIST);

	ck_assert_msg(n >= 0, "list: %s (%s)", strerror(-n), ol_error);
	return n;
}

static bool listed_id(int n, uint64_t id, int *ret_state)
{
	for (int i = 0; i < n && i < MAX_LIST; i++)
		if (list[i].id == id) {
			if (ret_state)
				*ret_state = list[i].state;
			return true;
		}
	return false;
}

/* Wait until @c sees no object of @client. */
static void wait_gone(struct ol_client *c, uint64_t client)
{
	int64_t deadline = tl_now_ms() + TL_WAIT_MS;
	int n;

	while ((n = listed(c, client)) > 0 && tl_now_ms() < deadline)
		tl_sleep_ms(5);
	ck_assert_msg(n == 0, "%d objects of client %llu are left", n,
		      (unsigned long long)client);
}

/* Nothing is left: no object, no charge, no descriptor. */
static void assert_clean(struct ol_client *chk)
{
	uint32_t used = 99, unacc = 99;
	unsigned int clients = 0;
	int n;

	wait_gone(chk, 0);
	OK(ol_domain(chk, chk->domain, &used, &unacc));
	ck_assert_uint_eq(unacc, 0);
	ck_assert_msg(used == unacc,
		      "domain %s: %u objects charged, %u "
		      "unaccounted",
		      chk->domain, used, unacc);
	ol_close(chk);
	n = tl_daemon_settle(&D, TL_WAIT_MS, &clients);
	ck_assert_msg(n == D.baseline_fds,
		      "the daemon holds %d descriptors, %d at start", n,
		      D.baseline_fds);
	ck_assert_uint_eq(clients, 1);
}

/* --- children ------------------------------------------------------------ */

struct child {
	pid_t pid;
	int from;
};

/* Fork a client that runs @fn and reports on a pipe; it dies with the
 * test. */
static struct child spawn(void (*fn)(int out, void *arg), void *arg)
{
	struct child ch;
	int p[2];

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	ch.pid = fork();
	ck_assert_int_ge(ch.pid, 0);
	if (ch.pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[0]);
		fn(p[1], arg);
		_exit(0);
	}
	close(p[1]);
	ch.from = p[0];
	return ch;
}

static void child_read(struct child *ch, void *buf, size_t len)
{
	ssize_t n = read(ch->from, buf, len);

	ck_assert_msg(n == (ssize_t)len, "child %d reported %zd bytes, not %zu",
		      (int)ch->pid, n, len);
}

static void child_kill(struct child *ch)
{
	int status;

	kill(ch->pid, SIGKILL);
	ck_assert_int_ge(tl_wait_pid(ch->pid, TL_WAIT_MS, &status), 0);
	close(ch->from);
}

static void report(int out, const void *buf, size_t len)
{
	if (write(out, buf, len) != (ssize_t)len)
		_exit(3);
}

/* --- constructors and destructors ------------------------------------- */

START_TEST(test_constructors)
{
	Rdmab__ObjAttr a = RDMAB__OBJ_ATTR__INIT;
	struct ol_obj cq, rcq, qp, srq, sqp, wq, mr, o;
	struct ol_client c;
	uint64_t uses[5] = { 0 };
	uint32_t n_objs, n_unacc;

	daemon_up(NULL);
	connect_ok(&c);
	OK(ol_cq(&c, 16, &cq));
	ck_assert_uint_ne(cq.id, 0);
	ck_assert_uint_eq(cq.handle, 1);
	ck_assert_uint_eq(cq.attr.cqe, 31);
	OK(ol_cq(&c, 100, &rcq));
	ck_assert_uint_eq(rcq.handle, 2);
	ck_assert_uint_ne(rcq.id, cq.id);
	OK(ol_qp(&c, cq.id, rcq.id, 0, &qp));
	ck_assert_uint_ge(qp.num, 0x100);
	ck_assert_uint_eq(qp.attr.max_send_wr, 16);
	ck_assert_uint_eq(qp.attr.qp_type, IBV_QPT_RC);
	OK(ol_srq(&c, 100, &srq));
	ck_assert_uint_eq(srq.attr.max_wr, 127);
	OK(ol_qp(&c, cq.id, cq.id, srq.id, &sqp));
	ck_assert_uint_eq(sqp.attr.max_recv_wr, 0);
	OK(ol_wq(&c, rcq.id, 100, &wq));
	ck_assert_uint_eq(wq.attr.max_wr, 128);
	OK(ol_mr(&c, 0x100000, 8192,
		 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &mr));
	ck_assert_uint_ne(mr.lkey, 0);
	ck_assert_uint_eq(mr.lkey, mr.rkey);
	ck_assert_uint_eq(mr.attr.mr_length, 8192);
	OK(ol_client(&c, c.client_id, &n_objs, &n_unacc));
	ck_assert_uint_eq(n_objs, 7);
	ck_assert_uint_eq(n_unacc, 0);

	/* The kernel's answers, with the device named. */
	FAILS(ol_cq(&c, 0, NULL), EINVAL, "soft0");
	FAILS(ol_cq(&c, 4194304, NULL), EINVAL, "max_cqe");
	FAILS(ol_srq(&c, 32768, NULL), EINVAL, "max_srq_wr");
	FAILS(ol_mr(&c, 0x1000, 0, 0, NULL), EINVAL, "soft0");
	FAILS(ol_mr(&c, 0x1000, 64, IBV_ACCESS_REMOTE_WRITE, NULL), EINVAL,
	      "LOCAL_WRITE");
	FAILS(ol_qp(&c, cq.id, mr.id, 0, NULL), EINVAL, "is of kind MR");
	FAILS(ol_wq(&c, qp.id, 8, NULL), EINVAL, "is of kind QP");
	FAILS(ol_create(&c, IBC_OBJ_AH, NULL, 0, &a, NULL), EOPNOTSUPP,
	      "soft0");
	/* What the broker refuses itself. */
	FAILS(ol_qp(&c, cq.id, 987654, 0, NULL), ENOENT,
	      "not one of this session's");
	FAILS(ol_create(&c, IBC_OBJ_NONE, NULL, 0, &a, NULL), EINVAL, "kind 0");
	FAILS(ol_create(&c, IBC_OBJ_CONTEXT, NULL, 0, &a, NULL), EINVAL,
	      "kind 13");
	FAILS(ol_create(&c, 99, NULL, 0, &a, NULL), EINVAL, "kind 99");
	FAILS(ol_create(&c, IBC_OBJ_QP, uses, 5, &a, NULL), EINVAL,
	      "at most 4");
	FAILS(ol_create_mode(&c, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
			     IBC_OBJ_CQ, NULL, 0, &a, 0, NULL),
	      EINVAL, "mode CREATE");
	FAILS(ol_create_mode(&c, RDMAB__OBJ_CREATE_REQUEST__MODE__TRACK,
			     IBC_OBJ_CQ, NULL, 0, &a, 5, NULL),
	      EINVAL, "mode CREATE");
	FAILS(ol_create_mode(&c, 7, IBC_OBJ_CQ, NULL, 0, &a, 0, NULL), EINVAL,
	      "mode 7");
	FAILS(ol_register(&c, cq.id, 9), EINVAL, "registered already");
	FAILS(ol_register(&c, 424242, 9), ENOENT, "not one of this session's");
	c.ctx_id += 1000;
	FAILS(ol_cq(&c, 1, NULL), ENOENT, "not open in this session");
	c.ctx_id -= 1000;

	/* Every one goes, once. */
	OK(ol_destroy(&c, sqp.id));
	OK(ol_destroy(&c, qp.id));
	OK(ol_destroy(&c, srq.id));
	OK(ol_destroy(&c, wq.id));
	OK(ol_destroy(&c, cq.id));
	OK(ol_destroy(&c, rcq.id));
	OK(ol_destroy(&c, mr.id));
	FAILS(ol_destroy(&c, mr.id), ENOENT, "not one of this session's");
	ck_assert_int_eq(listed(&c, 0), 0);
	/* Handles start again from the lowest. */
	OK(ol_cq(&c, 1, &o));
	ck_assert_uint_eq(o.handle, 1);
	ol_close(&c);
}
END_TEST

/* What uses an object keeps it: -EBUSY until the user goes. */
START_TEST(test_ebusy_order)
{
	struct ol_obj cq, cq2, qp, srq, wq;
	struct ol_client c;
	int state;

	daemon_up(NULL);
	connect_ok(&c);
	OK(ol_cq(&c, 8, &cq));
	OK(ol_cq(&c, 8, &cq2));
	OK(ol_srq(&c, 8, &srq));
	OK(ol_qp(&c, cq.id, cq.id, srq.id, &qp));
	OK(ol_wq(&c, cq2.id, 8, &wq));
	FAILS(ol_destroy(&c, cq.id), EBUSY, "used by 2 other objects");
	FAILS(ol_destroy(&c, srq.id), EBUSY, "used by 1 other object");
	FAILS(ol_destroy(&c, cq2.id), EBUSY, "soft0");
	/* Refused, still registered and live. */
	ck_assert(listed_id(listed(&c, c.client_id), cq.id, &state));
	ck_assert_int_eq(state, ST_LIVE);
	OK(ol_destroy(&c, qp.id));
	OK(ol_destroy(&c, srq.id));
	OK(ol_destroy(&c, cq.id));
	FAILS(ol_destroy(&c, cq2.id), EBUSY, "soft0");
	OK(ol_destroy(&c, wq.id));
	OK(ol_destroy(&c, cq2.id));
	ck_assert_int_eq(listed(&c, 0), 0);
	ol_close(&c);
}
END_TEST

/* --- a handle reused by another client -------------------------------- */

struct reuse_report {
	uint64_t client_id;
	uint32_t freed_handle;
	uint32_t kept_handle;
};

/* A: two CQs and a QP; destroys the first CQ, reports, waits. */
static void reuse_child(int out, void *arg)
{
	struct reuse_report rep;
	struct ol_obj cq1, cq2, qp;
	struct ol_client c;

	if (ol_connect(&c, arg, NULL) < 0 || ol_cq(&c, 4, &cq1) < 0 ||
	    ol_cq(&c, 4, &cq2) < 0 || ol_qp(&c, cq2.id, cq2.id, 0, &qp) < 0 ||
	    ol_destroy(&c, cq1.id) < 0)
		_exit(2);
	rep.client_id = c.client_id;
	rep.freed_handle = cq1.handle;
	rep.kept_handle = cq2.handle;
	report(out, &rep, sizeof(rep));
	for (;;)
		pause();
}

/* A destroys handle N, B gets N at once, A dies: B's object survives. */
START_TEST(test_reuse_race)
{
	struct reuse_report rep;
	struct ol_obj cq, qp;
	struct ol_client b, chk;
	struct child a;
	int n, state;

	daemon_up(NULL);
	checker_ok(&chk);
	a = spawn(reuse_child, D.sock);
	child_read(&a, &rep, sizeof(rep));
	connect_ok(&b);
	OK(ol_cq(&b, 4, &cq));
	ck_assert_uint_eq(cq.handle, rep.freed_handle);
	OK(ol_qp(&b, cq.id, cq.id, 0, &qp));
	child_kill(&a);
	wait_gone(&chk, rep.client_id);
	n = listed(&chk, 0);
	ck_assert_int_eq(n, 2);
	ck_assert(listed_id(n, cq.id, &state));
	ck_assert_int_eq(state, ST_LIVE);
	/* A's QP went first, then its CQ: handle N, now B's, still there
	 * in the device: the device refuses to destroy it while B's QP
	 * uses it. */
	FAILS(ol_destroy(&b, cq.id), EBUSY, "soft0");
	OK(ol_destroy(&b, qp.id));
	OK(ol_destroy(&b, cq.id));
	ol_close(&b);
	assert_clean(&chk);
}
END_TEST

/* --- detached after a protocol error, destroyed at death ------------- */

struct detach_report {
	uint64_t client_id;
	uint64_t kept, gone, qp;
	int send_ret;
};

/*
 * Leave replies unread until the daemon's socket is full, then make a
 * protocol error: the daemon stops reading and waits to flush. An
 * unregister sent now is queued behind the error; it must still count.
 */
static void detach_child(int out, void *arg)
{
	static uint8_t payload[60000];
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__ObjDestroyRequest dq = RDMAB__OBJ_DESTROY_REQUEST__INIT;
	struct detach_report rep = { 0 };
	struct ol_obj kept, gone, qp;
	struct ol_client c;
	long wmem = 212992;
	FILE *f = fopen("/proc/sys/net/core/wmem_default", "re");

	if (f) {
		if (fscanf(f, "%ld", &wmem) != 1)
			wmem = 212992;
		fclose(f);
	}
	if (ol_connect(&c, arg, NULL) < 0 || ol_cq(&c, 4, &kept) < 0 ||
	    ol_cq(&c, 4, &gone) < 0 || ol_qp(&c, kept.id, kept.id, 0, &qp) < 0)
		_exit(2);
	/* The socket takes about wmem bytes; a few pings more stay in the
	 * daemon's queue, well under the 256 KiB that stop its reading. */
	for (long i = 0; i < wmem / (long)sizeof(payload) + 3; i++) {
		req.body_case = RDMAB__REQUEST__BODY_PING;
		req.ping.data = payload;
		req.ping.len = sizeof(payload);
		if (ol_send(&c, &req) < 0)
			_exit(4);
	}
	tl_sleep_ms(100);
	req.body_case = RDMAB__REQUEST__BODY_PING;
	req.ping.len = 1;
	req.version = 77;
	req.serial = ++c.serial;
	if (tl_send_request(c.fd, &req, NULL, 0) < 0)
		_exit(5);
	tl_sleep_ms(100);
	dq.object_id = gone.id;
	memset(&req, 0, sizeof(req));
	rdmab__request__init(&req);
	req.body_case = RDMAB__REQUEST__BODY_OBJ_DESTROY;
	req.obj_destroy = &dq;
	rep.send_ret = ol_send(&c, &req);
	/* Now read: the daemon flushes, closes, and reads what is left. */
	tl_wait_eof(c.fd, TL_WAIT_MS);
	rep.client_id = c.client_id;
	rep.kept = kept.id;
	rep.gone = gone.id;
	rep.qp = qp.id;
	report(out, &rep, sizeof(rep));
	for (;;)
		pause();
}

START_TEST(test_detached_after_protocol_error)
{
	struct detach_report rep;
	struct ol_client chk;
	uint32_t n_objs, n_unacc;
	struct child a;
	int n, state;

	daemon_up(NULL);
	checker_ok(&chk);
	a = spawn(detach_child, D.sock);
	child_read(&a, &rep, sizeof(rep));
	ck_assert_msg(rep.send_ret == 0,
		      "the unregister after the protocol error was refused "
		      "(%s): the daemon had closed already, the test did not "
		      "test the drain",
		      strerror(-rep.send_ret));
	/* The session is over, the process lives. */
	ck_assert_int_eq(ol_client(&chk, rep.client_id, &n_objs, &n_unacc),
			 -ENOENT);
	n = listed(&chk, rep.client_id);
	ck_assert_msg(!listed_id(n, rep.gone, NULL),
		      "the unregister queued behind the protocol error was "
		      "lost");
	ck_assert_int_eq(n, 2);
	ck_assert(listed_id(n, rep.kept, &state));
	ck_assert_int_eq(state, ST_DETACHED);
	ck_assert(listed_id(n, rep.qp, &state));
	ck_assert_int_eq(state, ST_DETACHED);
	ck_assert_uint_eq(list[0].pid, (uint32_t)a.pid);
	/* Detached objects stay while the process lives. */
	tl_sleep_ms(200);
	ck_assert_int_eq(listed(&chk, rep.client_id), 2);
	child_kill(&a);
	wait_gone(&chk, rep.client_id);
	ck_assert_int_ge(log_count("is gone: destroying its 2 objects"), 1);
	assert_clean(&chk);
}
END_TEST

/* --- eviction ------------------------------------------------------------ */

struct evict_report {
	uint64_t client_id;
	uint64_t cq;
};

static void evictee(int out, void *arg)
{
	struct evict_report rep;
	struct ol_obj cq;
	struct ol_client c;
	Rdmab__DaemonMessage *m = NULL;
	int ret;

	if (ol_connect(&c, arg, NULL) < 0 || ol_cq(&c, 4, &cq) < 0)
		_exit(2);
	rep.client_id = c.client_id;
	rep.cq = cq.id;
	report(out, &rep, sizeof(rep));
	/* The broker's word: a refusal of the whole connection, then the
	 * end. */
	ret = tl_recv_msg(c.fd, 10000, &m);
	if (ret != 1 || m->kind_case != RDMAB__DAEMON_MESSAGE__KIND_REPLY ||
	    m->reply->serial != 0 || m->reply->error != ECONNRESET ||
	    !strstr(m->reply->message, "administrator"))
		_exit(6);
	ol_free(m);
	if (tl_wait_eof(c.fd, TL_WAIT_MS) != 0)
		_exit(7);
	ret = 0;
	report(out, &ret, sizeof(ret));
	for (;;)
		pause();
}

START_TEST(test_evict_admin)
{
	struct evict_report rep;
	struct ol_client chk, self;
	uint32_t n_objs, n_unacc;
	struct child a;
	int ret = -1, state, n;

	daemon_up(NULL);
	checker_ok(&chk);
	a = spawn(evictee, D.sock);
	child_read(&a, &rep, sizeof(rep));
	FAILS(ol_evict(&chk, 999999), ENOENT, "not connected");
	OK(ol_evict(&chk, rep.client_id));
	child_read(&a, &ret, sizeof(ret));
	ck_assert_int_eq(ret, 0);
	ck_assert_int_eq(ol_client(&chk, rep.client_id, &n_objs, &n_unacc),
			 -ENOENT);
	/* What eviction cannot take back: the process lives, its objects
	 * stay until it goes. */
	n = listed(&chk, rep.client_id);
	ck_assert_int_eq(n, 1);
	ck_assert(listed_id(n, rep.cq, &state));
	ck_assert_int_eq(state, ST_DETACHED);
	ck_assert_int_ge(log_count("evicted by client"), 1);
	child_kill(&a);
	wait_gone(&chk, rep.client_id);

	/* Evicting oneself: the reply, then the end. */
	checker_ok(&self);
	OK(ol_evict(&self, self.client_id));
	ck_assert_int_eq(tl_wait_eof(self.fd, TL_WAIT_MS), 0);
	ol_close(&self);
	assert_clean(&chk);
}
END_TEST

struct nonadmin_report {
	int evict;
	int n_listed;
	int n_other;
	int create;
};

/* As uid 65534: evict is refused, and the root domain's objects are not
 * listed. */
static void nonadmin(int out, void *arg)
{
	uint64_t *ids = arg;
	struct nonadmin_report rep;
	struct ol_obj cq;
	struct ol_client c;

	if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
		_exit(2);
	if (ol_connect(&c, (const char *)D.sock, NULL) < 0)
		_exit(3);
	rep.create = ol_cq(&c, 4, &cq);
	rep.evict = ol_evict(&c, ids[0]);
	rep.n_listed = ol_list(&c, 0, NULL, list, MAX_LIST);
	rep.n_other = ol_list(&c, 0, "uid-0", list, MAX_LIST);
	report(out, &rep, sizeof(rep));
	for (;;)
		pause();
}

START_TEST(test_evict_nonadmin)
{
	struct nonadmin_report rep;
	struct ol_client root;
	struct ol_obj cq;
	struct child a;
	uint64_t ids[1];

	daemon_up(NULL);
	connect_ok(&root);
	OK(ol_cq(&root, 4, &cq));
	ids[0] = root.client_id;
	a = spawn(nonadmin, ids);
	child_read(&a, &rep, sizeof(rep));
	ck_assert_int_eq(rep.create, 0);
	/* H_ADMIN, enforced by the dispatcher. */
	ck_assert_int_eq(rep.evict, -EPERM);
	/* Its own CQ only: uid-0's objects answer like missing ones. */
	ck_assert_int_eq(rep.n_listed, 1);
	ck_assert_int_eq(rep.n_other, 0);
	/* The root client was not evicted. */
	OK(ol_destroy(&root, cq.id));
	child_kill(&a);
	ol_close(&root);
}
END_TEST

/* --- listings ------------------------------------------------------------ */

START_TEST(test_list_objects)
{
	struct ol_client a, b;
	struct ol_obj cq, first;
	static uint64_t made[301];
	int n;

	daemon_up(NULL);
	connect_ok(&a);
	connect_ok(&b);
	ck_assert_uint_eq(a.ctx_id, b.ctx_id);
	OK(ol_cq(&a, 4, &first));
	made[0] = first.id;
	/* More than a page. */
	for (int i = 1; i < 300; i++) {
		OK(ol_cq(&a, 4, &cq));
		made[i] = cq.id;
	}
	OK(ol_cq(&b, 4, &cq));
	made[300] = cq.id;
	n = listed(&b, 0);
	ck_assert_int_eq(n, 301);
	/* In the order they were made (ids carry no order, ids.h). */
	for (int i = 0; i < n; i++) {
		ck_assert_uint_eq(list[i].id, made[i]);
		ck_assert_int_eq(list[i].state, ST_LIVE);
		ck_assert_uint_eq(list[i].kind, IBC_OBJ_CQ);
		ck_assert_uint_eq(list[i].context_id, a.ctx_id);
		ck_assert_str_eq(list[i].device, "soft0");
		ck_assert_str_eq(list[i].domain, a.domain);
		ck_assert_uint_eq(list[i].pid, (uint32_t)getpid());
		ck_assert_uint_eq(list[i].client_id,
				  i < 300 ? a.client_id : b.client_id);
	}
	ck_assert_uint_eq(list[0].id, first.id);
	ck_assert_uint_eq(list[0].handle, first.handle);
	ck_assert_uint_eq(list[300].handle, 301);
	ck_assert_int_eq(listed(&b, b.client_id), 1);
	ck_assert_uint_eq(list[0].id, cq.id);
	ck_assert_int_eq(listed(&b, a.client_id), 300);
	ck_assert_int_eq(ol_list(&b, 0, a.domain, list, MAX_LIST), 301);
	ck_assert_int_eq(ol_list(&b, 0, "no-such-domain", list, MAX_LIST), 0);
	ck_assert_int_eq(ol_list(&b, 424242, NULL, list, MAX_LIST), 0);
	/* Another session's objects answer like missing ones. */
	FAILS(ol_destroy(&b, first.id), ENOENT, "not one of this session's");
	ol_close(&a);
	ol_close(&b);
}
END_TEST

/* --- the objects quota ---------------------------------------------------- */

START_TEST(test_quota)
{
	struct ol_obj cq[4], qp;
	struct ol_client c, chk;
	uint32_t used, unacc;

	/* The context's PD is one of the five. */
	daemon_up("[defaults]\nobjects = 5\n");
	checker_ok(&chk);
	connect_ok(&c);
	for (int i = 0; i < 4; i++)
		OK(ol_cq(&c, 4, &cq[i]));
	OK(ol_domain(&chk, c.domain, &used, &unacc));
	ck_assert_uint_eq(used, 5);
	FAILS(ol_cq(&c, 4, NULL), EDQUOT, c.domain);
	FAILS(ol_qp(&c, cq[0].id, cq[1].id, 0, NULL), EDQUOT, "of its 5");
	OK(ol_destroy(&c, cq[3].id));
	/* A refused create gives its charge back. */
	FAILS(ol_cq(&c, 0, NULL), EINVAL, "soft0");
	FAILS(ol_qp(&c, cq[0].id, 55555, 0, NULL), ENOENT, "session");
	OK(ol_qp(&c, cq[0].id, cq[1].id, 0, &qp));
	FAILS(ol_destroy(&c, cq[0].id), EBUSY, "soft0");
	OK(ol_domain(&chk, c.domain, &used, &unacc));
	ck_assert_uint_eq(used, 5);
	ck_assert_uint_eq(unacc, 0);
	/* This process lives on: what it leaves stays, detached. */
	OK(ol_destroy(&c, qp.id));
	for (int i = 0; i < 3; i++)
		OK(ol_destroy(&c, cq[i].id));
	ol_close(&c);
	assert_clean(&chk);
}
END_TEST

/* --- clients killed at random points ---------------------------------- */

static void storm_child(int out, void *arg)
{
	ol_storm(D.sock, *(uint64_t *)arg, out);
}

START_TEST(test_kill_storm)
{
	const char *env = getenv("OBJ_STORM_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 0x5eed0b1ec7ULL;
	struct ol_client chk;
	struct tl_rng r;
	int n_dead;

	fprintf(stderr,
		"check_objects_daemon: storm seed 0x%llx "
		"(OBJ_STORM_SEED)\n",
		(unsigned long long)seed);
	tl_rng_seed(&r, seed);
	daemon_up(NULL);
	checker_ok(&chk);
	for (int k = 0; k < STORM_KILLS; k++) {
		uint64_t child_seed = tl_rng_next(&r), id = 0;
		struct child ch = spawn(storm_child, &child_seed);

		if (read(ch.from, &id, sizeof(id)) == sizeof(id))
			tl_sleep_ms(tl_rng_below(&r, 20));
		child_kill(&ch);
	}
	wait_gone(&chk, 0);
	/* The storm hit clients that held objects. */
	n_dead = log_count("is gone: destroying");
	fprintf(stderr,
		"check_objects_daemon: %d of %d killed clients held "
		"objects\n",
		n_dead, STORM_KILLS);
	ck_assert_int_ge(n_dead, STORM_KILLS / 4);
	assert_clean(&chk);
}
END_TEST

/* --- a client holding 1,000 objects ---------------------------------- */

static void thousand(int out, void *arg)
{
	struct ol_client c;
	struct ol_obj cq, o;
	int64_t t0, t1;

	if (ol_connect(&c, D.sock, NULL) < 0)
		_exit(2);
	t0 = tl_now_ms();
	for (int i = 0; i < 250; i++) {
		if (ol_cq(&c, 8, &cq) < 0 ||
		    ol_qp(&c, cq.id, cq.id, 0, &o) < 0 ||
		    ol_wq(&c, cq.id, 8, &o) < 0 ||
		    ol_mr(&c, 0x10000, 4096, 0, &o) < 0)
			_exit(3);
	}
	t1 = tl_now_ms() - t0;
	report(out, &c.client_id, sizeof(c.client_id));
	report(out, &t1, sizeof(t1));
	for (;;)
		pause();
}

START_TEST(test_cleanup_1000)
{
	struct ol_client chk;
	uint64_t id;
	int64_t made_ms, t0, gone_ms;
	struct child a;

	daemon_up(NULL);
	checker_ok(&chk);
	a = spawn(thousand, NULL);
	child_read(&a, &id, sizeof(id));
	child_read(&a, &made_ms, sizeof(made_ms));
	ck_assert_int_eq(listed(&chk, id), 1000);
	t0 = tl_now_ms();
	child_kill(&a);
	wait_gone(&chk, id);
	gone_ms = tl_now_ms() - t0;
	/* Figures for the record, not limits: the daemon's own (death to
	 * the last destroy) and the listing's, which polls. */
	fprintf(stderr,
		"check_objects_daemon: 1000 objects made in %lld ms, "
		"listed as gone %lld ms after the kill; the daemon: "
		"%s\n",
		(long long)made_ms, (long long)gone_ms,
		log_line("1000 objects destroyed in"));
	ck_assert_int_ge(log_count("is gone: destroying its 1000 objects"), 1);
	assert_clean(&chk);
}
END_TEST

static Suite *objects_suite(void)
{
	Suite *s = suite_create("objects (daemon)");
	TCase *tc;

	tc = tcase_create("soft");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_constructors);
	tcase_add_test(tc, test_ebusy_order);
	tcase_add_test(tc, test_reuse_race);
	tcase_add_test(tc, test_detached_after_protocol_error);
	tcase_add_test(tc, test_list_objects);
	tcase_add_test(tc, test_quota);
	tcase_add_test(tc, test_kill_storm);
	tcase_add_test(tc, test_cleanup_1000);
	suite_add_tcase(s, tc);
	return s;
}

static Suite *objects_root_suite(void)
{
	Suite *s = suite_create("objects (daemon, root)");
	TCase *tc;

	tc = tcase_create("evict");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_evict_admin);
	tcase_add_test(tc, test_evict_nonadmin);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	if (CK_ROOT_PROGRAM) {
		ck_require_root("check_objects_daemon_root");
		return ck_run("objects_daemon_root", objects_root_suite());
	}
	return ck_run("objects_daemon", objects_suite());
}
