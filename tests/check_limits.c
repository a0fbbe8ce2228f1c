// SPDX-License-Identifier: MIT
/*
 * What one user can take from the others, against the real rdmabrokerd on
 * the soft device: connection slots (per uid, the administrators' reserve,
 * the hello deadline), descriptors left unread in replies (per connection,
 * per uid, and after the daemon gave up on a reader), contexts of private
 * domains, the accept() warning while descriptors run out, and what status
 * tells a user.
 *
 * Clients of other uids are raw sockets connected with the effective uid
 * and groups switched for the connect() (the daemon reads the peer's
 * credentials as they were then), or agents (tests/agent.c). Root only:
 * without it the program exits 77, which automake counts as skipped.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/agent.h"
#include "tests/cklib.h"
#include "tests/testlib.h"

#define NOBODY 65534
#define MAX_AGENTS 4
#define MAX_RAW 160
#define AGENT_WAIT_MS 10000

static struct tl_daemon D;
static struct agent A[MAX_AGENTS];
static size_t n_agents;
static int raw[MAX_RAW];
static size_t n_raw;
static char *cfg_dir;
static char cfg_path[PATH_MAX];
static char log_path[PATH_MAX];
static struct ibc_client *root_cl;
/* A context of root_cl, for its DMs. */
static struct ibc_ctx *root_ctx;

static void setup(void)
{
	memset(&D, 0, sizeof(D));
	D.pid = -1;
	for (size_t i = 0; i < MAX_AGENTS; i++) {
		A[i].pid = -1;
		A[i].to = A[i].from = -1;
	}
	n_agents = 0;
	n_raw = 0;
	cfg_dir = NULL;
	root_cl = NULL;
	root_ctx = NULL;
}

static void teardown(void)
{
	for (size_t i = 0; i < MAX_AGENTS; i++)
		agent_stop(&A[i]);
	for (size_t i = 0; i < n_raw; i++)
		if (raw[i] >= 0)
			close(raw[i]);
	n_raw = 0;
	ibc_disconnect(root_cl);
	root_cl = NULL;
	root_ctx = NULL;
	tl_daemon_stop(&D);
	if (cfg_dir) {
		tl_rmtree(cfg_dir);
		free(cfg_dir);
		cfg_dir = NULL;
	}
}

/* --- the daemon, its configuration and its log ---------------------------- */

static char *log_read(void)
{
	FILE *f = fopen(log_path, "re");
	char *buf = calloc(1, 1 << 20);
	size_t len = 0;

	ck_assert_ptr_nonnull(buf);
	if (f) {
		len = fread(buf, 1, (1 << 20) - 1, f);
		fclose(f);
	}
	buf[len] = '\0';
	return buf;
}

static unsigned int log_count(const char *needle)
{
	char *log = log_read();
	unsigned int n = 0;

	for (const char *p = log; (p = strstr(p, needle)); p++)
		n++;
	free(log);
	return n;
}

/*
 * Start the daemon on @conf with @more arguments, its stderr in log_path,
 * its socket open to every uid.
 */
static void daemon_up(const char *conf, const char *const *more)
{
	const char *args[32] = { "--socket-mode", "0666", "--log-level",
				 "info" };
	size_t n = 4;
	int ret;

	cfg_dir = tl_mkdtemp();
	ck_assert_ptr_nonnull(cfg_dir);
	snprintf(cfg_path, sizeof(cfg_path), "%s/rdmabroker.conf", cfg_dir);
	snprintf(log_path, sizeof(log_path), "%s/daemon.log", cfg_dir);
	for (; more && *more && n < 31; more++)
		args[n++] = *more;
	args[n] = NULL;
	ret = tl_daemon_start_conf(&D, conf, cfg_path, args, log_path);
	if (ret < 0) {
		char *log = log_read();

		ck_abort_msg("cannot start %s: %s; its log:\n%s",
			     tl_daemon_path(), strerror(-ret), log);
	}
	ck_assert_int_eq(tl_daemon_share(&D), 0);
}

static bool wait_clients(unsigned int n);

/* The same, once root's client is the only one. */
static void daemon_up_clean(const char *conf, const char *const *more)
{
	daemon_up(conf, more);
	ck_assert_msg(wait_clients(1), "the checker of the start stays");
}

static struct ibc_client *root_client(void)
{
	int ret;

	if (root_cl)
		return root_cl;
	ret = tl_connect(D.sock, TL_WAIT_MS, &root_cl);
	ck_assert_msg(ret == 0, "root: ibc_connect: %s (%s)", strerror(-ret),
		      ibc_last_error());
	return root_cl;
}

/* Connections the daemon serves, as root sees them (root's own too). */
static unsigned int daemon_clients(void)
{
	struct ibc_status st;
	int ret = ibc_status(root_client(), &st, sizeof(st));

	ck_assert_msg(ret == 0, "root: ibc_status: %s (%s)", strerror(-ret),
		      ibc_last_error());
	return st.clients;
}

static bool wait_clients(unsigned int n)
{
	int64_t deadline = tl_now_ms() + TL_WAIT_MS;

	while (daemon_clients() != n)
		if (tl_now_ms() >= deadline)
			return false;
		else
			tl_sleep_ms(10);
	return true;
}

/* Requests the daemon served to the clients of @uid that said hello. */
static uint64_t uid_requests(uid_t uid)
{
	struct ibc_client_entry *e = NULL;
	uint64_t sum = 0;
	size_t n = 0;
	int ret = ibc_list_clients(root_client(), &e, sizeof(*e), &n);

	ck_assert_msg(ret == 0, "root: ibc_list_clients: %s", ibc_last_error());
	for (size_t i = 0; i < n; i++)
		if (e[i].uid == uid)
			sum += e[i].requests;
	ibc_list_free(e);
	return sum;
}

/* The daemon stopped serving @uid: its count holds still for 300 ms. */
static uint64_t uid_requests_settled(uid_t uid)
{
	int64_t deadline = tl_now_ms() + TL_WAIT_MS;
	uint64_t last = uid_requests(uid), now;
	int still = 0;

	while (still < 30 && tl_now_ms() < deadline) {
		tl_sleep_ms(10);
		now = uid_requests(uid);
		still = now == last ? still + 1 : 0;
		last = now;
	}
	ck_assert_msg(still == 30, "uid %u is still being served",
		      (unsigned int)uid);
	return last;
}

/* The daemon is back to its start: one client, the descriptors it had. */
static void assert_settled(void)
{
	unsigned int clients = 0;
	int n;

	ibc_disconnect(root_cl);
	root_cl = NULL;
	root_ctx = NULL;
	n = tl_daemon_settle(&D, TL_WAIT_MS, &clients);
	ck_assert_msg(tl_daemon_alive(&D), "the daemon died");
	ck_assert_msg(clients == 1, "status reports %u clients, expected 1",
		      clients);
	ck_assert_msg(n == D.baseline_fds,
		      "the daemon holds %d descriptors, %d at start", n,
		      D.baseline_fds);
}

/* --- raw clients of other uids -------------------------------------------- */

/* A socket connected as @uid/@gid without supplementary groups (or with
 * @supp, unless it is -1); kept until teardown. */
static int connect_as(uid_t uid, gid_t gid, gid_t supp)
{
	gid_t saved[64];
	int n = getgroups(64, saved), fd;

	ck_assert_int_ge(n, 0);
	ck_assert_uint_lt(n_raw, MAX_RAW);
	ck_assert_int_eq(setgroups(supp == (gid_t)-1 ? 0 : 1, &supp), 0);
	ck_assert_int_eq(setegid(gid), 0);
	ck_assert_int_eq(seteuid(uid), 0);
	fd = tl_raw_connect(D.sock);
	ck_assert_int_eq(seteuid(0), 0);
	ck_assert_int_eq(setegid(0), 0);
	ck_assert_int_eq(setgroups((size_t)n, saved), 0);
	ck_assert_msg(fd >= 0, "connect as uid %u: %s", (unsigned int)uid,
		      strerror(-fd));
	raw[n_raw++] = fd;
	return fd;
}

static void raw_close(int fd)
{
	for (size_t i = 0; i < n_raw; i++)
		if (raw[i] == fd)
			raw[i] = -1;
	close(fd);
}

/* The broker refused @fd with @err and a sentence holding @needle, then
 * closed it. */
static void assert_refused(int fd, int err, const char *needle)
{
	Rdmab__DaemonMessage *m = NULL;
	int ret = tl_recv_msg(fd, TL_WAIT_MS, &m);

	ck_assert_msg(ret == 1, "no refusal: %d (%s)", ret, strerror(-ret));
	ck_assert_int_eq(m->kind_case, RDMAB__DAEMON_MESSAGE__KIND_REPLY);
	ck_assert_uint_eq(m->reply->serial, 0);
	ck_assert_msg(m->reply->error == err, "error %d (%s), expected %d",
		      m->reply->error, m->reply->message, err);
	ck_assert_msg(strstr(m->reply->message, needle),
		      "the refusal \"%s\" does not say \"%s\"",
		      m->reply->message, needle);
	rdmab__daemon_message__free_unpacked(m, NULL);
	ck_assert_int_eq(tl_wait_eof(fd, TL_WAIT_MS), 0);
}

/* Send open-context requests on @fd without reading, until the socket
 * takes no more (the daemon stopped reading) or @max went. */
static unsigned int flood_opens(int fd, unsigned int max)
{
	Rdmab__OpenContextRequest oc = RDMAB__OPEN_CONTEXT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct tl_buf b = { 0 };
	unsigned int n = 0;

	oc.device = (char *)"";
	req.version = WIRE_PROTOCOL_VERSION;
	req.serial = 1000;
	req.body_case = RDMAB__REQUEST__BODY_OPEN_CONTEXT;
	req.open_context = &oc;
	tl_pb_message(&b, &req.base);
	for (; n < max; n++) {
		int ret = tl_raw_send(fd, b.p, b.len, NULL, 0, MSG_DONTWAIT);

		if (ret == -EAGAIN)
			break;
		ck_assert_msg(ret == 0, "send: %s", strerror(-ret));
	}
	tl_buf_free(&b);
	return n;
}

/* Read @fd to its end: how many replies carried a context. */
static unsigned int replies_until_eof(int fd)
{
	unsigned int n = 0;

	for (;;) {
		Rdmab__DaemonMessage *m = NULL;
		int ret = tl_recv_msg(fd, TL_WAIT_MS, &m);

		if (ret == 0)
			return n;
		/* A socket closed with requests unread resets the peer's,
		 * whose queue is still there to read. */
		if (ret == -ECONNRESET)
			continue;
		ck_assert_msg(ret == 1, "recv: %d (%s)", ret, strerror(-ret));
		if (m->kind_case == RDMAB__DAEMON_MESSAGE__KIND_REPLY &&
		    m->reply->body_case == RDMAB__REPLY__BODY_OPEN_CONTEXT)
			n++;
		rdmab__daemon_message__free_unpacked(m, NULL);
	}
}

/* --- agents --------------------------------------------------------------- */

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

static const struct agent_rep *ag(struct agent *a, enum agent_op op,
				  const char *arg, uint32_t flags)
{
	int ret = agent_call(a, op, arg, flags, AGENT_WAIT_MS);

	ck_assert_msg(ret == 0, "agent of uid %u: operation %d: %s",
		      (unsigned int)a->cred.uid, (int)op, strerror(-ret));
	return &a->rep;
}

static void ag_ok(struct agent *a, enum agent_op op, uint32_t flags)
{
	const struct agent_rep *r = ag(a, op, NULL, flags);

	ck_assert_msg(r->ret == 0, "uid %u: operation %d: %s (%s)",
		      (unsigned int)a->cred.uid, (int)op, strerror(-r->ret),
		      r->error);
}

/* --- connection slots ---------------------------------------------------- */

/* Root connects, opens a context and pings: it is served. */
static void assert_root_served(const char *after)
{
	struct ibc_client *cl = NULL;
	struct ibc_ctx *ctx = NULL;
	int ret = tl_connect(D.sock, TL_WAIT_MS, &cl);

	ck_assert_msg(ret == 0, "after %s: root cannot connect: %s (%s)", after,
		      strerror(-ret), ibc_last_error());
	ret = ibc_open(cl, NULL, &ctx);
	ck_assert_msg(ret == 0, "after %s: root: ibc_open: %s (%s)", after,
		      strerror(-ret), ibc_last_error());
	ck_assert_int_eq(ibc_ping(cl, "root", 4), 0);
	ibc_close(ctx);
	ibc_disconnect(cl);
}

/*
 * Idle connections of one user that never say hello take what the
 * administrators' reserve leaves, not the reserve: root, and the admin
 * group, still get in; another user does not.
 */
START_TEST(test_idle_connections_leave_the_reserve)
{
	static const char *const args[] = { "--max-clients", "70", NULL };
	struct agent *adm, *other;
	unsigned int taken = 0;
	const struct agent_rep *r;
	int fds[70];

	daemon_up_clean("[broker]\nadmin_group = 4399\n"
			"hello_timeout = 3600s\n",
			args);
	/* As many as the broker serves, from one user: root's client
	 * leaves it 70 - 16 - 1. */
	for (int i = 0; i < 70; i++)
		fds[i] = connect_as(NOBODY, NOBODY, (gid_t)-1);
	for (int i = 0; i < 70; i++) {
		Rdmab__DaemonMessage *m = NULL;
		int wait = i < 53 ? 0 : i == 53 ? TL_WAIT_MS : 500;
		int ret = tl_recv_msg(fds[i], wait, &m);

		if (ret == -ETIMEDOUT) {
			taken++;
			continue;
		}
		ck_assert_msg(ret == 1, "connection %d: %d", i, ret);
		ck_assert_msg(m->reply->error == EUSERS &&
				      strstr(m->reply->message,
					     "16 for administrators"),
			      "connection %d: error %d: %s", i, m->reply->error,
			      m->reply->message);
		rdmab__daemon_message__free_unpacked(m, NULL);
	}
	ck_assert_msg(taken == 53, "uid %u holds %u of 70 connections", NOBODY,
		      taken);
	assert_root_served("70 idle connections of uid 65534");

	/* The admin group may use the reserve, another user may not. */
	adm = agent_new(agent_cred(4300, 4300, 4399, AGENT_END));
	ag_ok(adm, AGENT_CONNECT, 0);
	ag_ok(adm, AGENT_PING, 0);
	other = agent_new(agent_cred(4301, 4301, AGENT_END));
	r = ag(other, AGENT_CONNECT, NULL, 0);
	ck_assert_msg(r->ret == -EUSERS, "uid 4301 got %d (%s)", r->ret,
		      r->error);
	ck_assert_msg(strstr(r->error, "administrators"), "error: %s",
		      r->error);

	/* The reserve ends at the limit, for root too. */
	ck_assert(wait_clients(53 + 1 + 1));
	for (int i = 55; i < 70; i++)
		connect_as(0, 0, (gid_t)-1);
	ck_assert(wait_clients(70));
	assert_refused(connect_as(0, 0, (gid_t)-1), EUSERS, "at most 70");
}
END_TEST

/* One user gets connections_per_uid connections; the next is refused with
 * a sentence, others are not affected, and a slot given back is free. */
START_TEST(test_connections_per_uid)
{
	static const char *const args[] = { "--max-clients", "200", NULL };
	int fds[64], extra;

	daemon_up_clean("[broker]\nhello_timeout = 3600s\n", args);
	for (int i = 0; i < 64; i++)
		fds[i] = connect_as(NOBODY, NOBODY, (gid_t)-1);
	ck_assert(wait_clients(64 + 1));
	extra = connect_as(NOBODY, NOBODY, (gid_t)-1);
	assert_refused(extra, EDQUOT, "connections_per_uid");
	assert_refused(connect_as(NOBODY, NOBODY, (gid_t)-1), EDQUOT,
		       "uid 65534 already has 64 connections");

	/* Another user is not affected, nor is root. */
	ck_assert_int_eq(tl_raw_hello(connect_as(4242, 4242, (gid_t)-1), 1), 0);
	assert_root_served("64 connections of uid 65534");

	/* A connection given back is a slot again. */
	raw_close(fds[0]);
	ck_assert(wait_clients(63 + 1 + 1));
	ck_assert_int_eq(tl_raw_hello(connect_as(NOBODY, NOBODY, (gid_t)-1), 1),
			 0);
	assert_refused(connect_as(NOBODY, NOBODY, (gid_t)-1), EDQUOT,
		       "connections_per_uid");
}
END_TEST

/* A connection that says nothing is told why and closed at the deadline;
 * one that said hello stays. */
START_TEST(test_hello_deadline)
{
	int idle, talker;

	daemon_up_clean("[broker]\nhello_timeout = 300ms\n", NULL);
	talker = connect_as(NOBODY, NOBODY, (gid_t)-1);
	ck_assert_int_eq(tl_raw_hello(talker, 1), 0);
	idle = connect_as(NOBODY, NOBODY, (gid_t)-1);
	assert_refused(idle, ETIMEDOUT, "no hello within 300 ms");
	tl_sleep_ms(400);
	ck_assert_int_eq(tl_raw_ping(talker, 2, "still here", 10), 0);
	ck_assert_msg(log_count("no hello within 300 ms") == 1, "the log:\n%s",
		      log_read());
	raw_close(talker);
	assert_settled();
}
END_TEST

/* --- descriptors nobody reads --------------------------------------------- */

/*
 * open-context in a loop, never reading: each reply carries a descriptor.
 * The daemon stops reading a connection at queued_fds of them and a user
 * at queued_fds_per_uid; its descriptor count stays bounded, and root is
 * served meanwhile.
 */
START_TEST(test_unread_descriptors_bounded)
{
	static const char conf[] = "[broker]\n"
				   "queued_fds = 8\n"
				   "queued_fds_per_uid = 20\n"
				   "hello_timeout = 3600s\n";
	unsigned int sent = 0, served, fds_now;
	int fl[3], late;
	Rdmab__HelloRequest hello = RDMAB__HELLO_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m = NULL;

	daemon_up_clean(conf, NULL);
	for (int i = 0; i < 3; i++) {
		fl[i] = connect_as(NOBODY, NOBODY, (gid_t)-1);
		ck_assert_int_eq(tl_raw_hello(fl[i], 1), 0);
	}
	for (int i = 0; i < 3; i++)
		sent += flood_opens(fl[i], 3000);
	served = (unsigned int)uid_requests_settled(NOBODY);
	fds_now = (unsigned int)tl_count_fds(D.pid);
	fprintf(stderr,
		"check_limits: %u opens sent on 3 connections, %u requests "
		"served; the daemon holds %u descriptors (%d at start)\n",
		sent, served, fds_now, D.baseline_fds);
	ck_assert_uint_gt(sent, 100);
	/* Root's client instead of the checker, three more, the context of
	 * uid-65534 and at most 20 descriptors waiting. */
	ck_assert_msg(fds_now <= (unsigned int)D.baseline_fds + 3 * 2 + 1 + 20,
		      "the daemon holds %u descriptors, %d at start", fds_now,
		      D.baseline_fds);
	/* Three hellos and at most 20 opens. */
	ck_assert_msg(served <= 3 + 20, "%u requests served to uid %u", served,
		      NOBODY);
	ck_assert_msg(served >= 3 + 8, "%u requests served to uid %u", served,
		      NOBODY);
	assert_root_served("three connections that do not read");

	/* A new connection of the same user is not read while it is full. */
	late = connect_as(NOBODY, NOBODY, (gid_t)-1);
	hello.library_version = (char *)"late";
	req.version = WIRE_PROTOCOL_VERSION;
	req.serial = 1;
	req.body_case = RDMAB__REQUEST__BODY_HELLO;
	req.hello = &hello;
	ck_assert_int_eq(tl_send_request(late, &req, NULL, 0), 0);
	ck_assert_int_eq(tl_recv_msg(late, 300, &m), -ETIMEDOUT);
	/* It is once another connection of the user gives its share back. */
	raw_close(fl[0]);
	ck_assert_int_eq(tl_recv_msg(late, TL_WAIT_MS, &m), 1);
	ck_assert_int_eq(m->reply->error, 0);
	ck_assert_uint_eq(m->reply->body_case, RDMAB__REPLY__BODY_HELLO);
	rdmab__daemon_message__free_unpacked(m, NULL);
	for (int i = 1; i < 3; i++)
		raw_close(fl[i]);
	raw_close(late);
	assert_settled();
}
END_TEST

/*
 * A client that reads each reply before it sends the next request is never
 * stopped for the descriptors it was sent, though every reply carries one
 * and the count reaches queued_fds with each fourth: it has read them when
 * its request comes, and the daemon asks its socket then. Before, the
 * daemon stopped reading at the limit, while the last reply was still in
 * the socket, and read on at its first poll, 2 ms later. A client that
 * sends without reading is stopped as before.
 */
START_TEST(test_reading_client_not_stopped)
{
	static const char conf[] = "[broker]\n"
				   "queued_fds = 4\n"
				   "queued_fds_per_uid = 6\n"
				   "hello_timeout = 3600s\n";
	static const char *const args[] = { "--log-level", "debug", NULL };
	static const char stopped[] = "not read while the descriptors";
	Rdmab__OpenContextRequest oc = RDMAB__OPEN_CONTEXT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	unsigned int served;
	int fd, flood;

	daemon_up_clean(conf, args);
	fd = connect_as(NOBODY, NOBODY, (gid_t)-1);
	ck_assert_int_eq(tl_raw_hello(fd, 1), 0);
	oc.device = (char *)"";
	req.version = WIRE_PROTOCOL_VERSION;
	req.body_case = RDMAB__REQUEST__BODY_OPEN_CONTEXT;
	req.open_context = &oc;
	for (unsigned int i = 0; i < 40; i++) {
		Rdmab__DaemonMessage *m = NULL;

		req.serial = 2 + i;
		ck_assert_int_eq(tl_send_request(fd, &req, NULL, 0), 0);
		ck_assert_msg(tl_recv_msg(fd, TL_WAIT_MS, &m) == 1,
			      "no reply to open %u; the log:\n%s", i,
			      log_read());
		ck_assert_int_eq(m->reply->error, 0);
		ck_assert_uint_eq(m->reply->body_case,
				  RDMAB__REPLY__BODY_OPEN_CONTEXT);
		rdmab__daemon_message__free_unpacked(m, NULL);
	}
	ck_assert_msg(log_count(stopped) == 0,
		      "a client that reads its replies was stopped; the "
		      "log:\n%s",
		      log_read());
	raw_close(fd);

	/* One that does not read: 4 opens and it stops. */
	flood = connect_as(NOBODY, NOBODY, (gid_t)-1);
	ck_assert_int_eq(tl_raw_hello(flood, 1), 0);
	ck_assert_uint_gt(flood_opens(flood, 100), 4);
	served = (unsigned int)uid_requests_settled(NOBODY);
	/* Its hello and 4 opens (the first client's are gone with it). */
	ck_assert_uint_eq(served, 1 + 4);
	ck_assert_msg(log_count(stopped) >= 1, "the log:\n%s", log_read());
	raw_close(flood);
	assert_settled();
}
END_TEST

/* Write @conf to the daemon's configuration file and SIGHUP it; returns
 * once it logged the reload. */
static void daemon_reload(const char *conf)
{
	unsigned int before = log_count("configuration reloaded");
	int64_t deadline = tl_now_ms() + TL_WAIT_MS;
	FILE *f = fopen(cfg_path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(fputs(conf, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(kill(D.pid, SIGHUP), 0);
	while (log_count("configuration reloaded") == before) {
		ck_assert_msg(tl_now_ms() < deadline, "no reload; the log:\n%s",
			      log_read());
		usleep(10000);
	}
}

/*
 * A connection that a user's descriptor limit stopped before it sent
 * anything has no timer of its own: a reload that raises the limit reads
 * it at once (before, it waited for the user's count to cross the limit
 * again, which the new limit may never let happen).
 */
START_TEST(test_reload_raises_fd_limit)
{
	static const char conf[] = "[broker]\n"
				   "queued_fds = 8\n"
				   "queued_fds_per_uid = 4\n"
				   "hello_timeout = 3600s\n";
	static const char raised[] = "[broker]\n"
				     "queued_fds = 8\n"
				     "queued_fds_per_uid = 100\n"
				     "hello_timeout = 3600s\n";
	Rdmab__HelloRequest hello = RDMAB__HELLO_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m = NULL;
	int fl, late;

	daemon_up_clean(conf, NULL);
	fl = connect_as(NOBODY, NOBODY, (gid_t)-1);
	ck_assert_int_eq(tl_raw_hello(fl, 1), 0);
	ck_assert_uint_gt(flood_opens(fl, 3000), 4);
	/* A hello and the 4 opens the user's limit lets through. */
	ck_assert_uint_eq(uid_requests_settled(NOBODY), 1 + 4);
	late = connect_as(NOBODY, NOBODY, (gid_t)-1);
	hello.library_version = (char *)"late";
	req.version = WIRE_PROTOCOL_VERSION;
	req.serial = 1;
	req.body_case = RDMAB__REQUEST__BODY_HELLO;
	req.hello = &hello;
	ck_assert_int_eq(tl_send_request(late, &req, NULL, 0), 0);
	ck_assert_int_eq(tl_recv_msg(late, 300, &m), -ETIMEDOUT);
	daemon_reload(raised);
	ck_assert_msg(tl_recv_msg(late, TL_WAIT_MS, &m) == 1,
		      "the stopped connection is not read after the limit "
		      "was raised; the log:\n%s",
		      log_read());
	ck_assert_int_eq(m->reply->error, 0);
	ck_assert_uint_eq(m->reply->body_case, RDMAB__REPLY__BODY_HELLO);
	rdmab__daemon_message__free_unpacked(m, NULL);
	raw_close(fl);
	raw_close(late);
	assert_settled();
}
END_TEST

/*
 * A reader stopped for unread_timeout is disconnected; the descriptors it
 * has not read stay charged to its uid until it reads them or closes its
 * socket, so that reconnecting gets it nothing more.
 */
START_TEST(test_unread_timeout)
{
	static const char conf[] = "[broker]\n"
				   "queued_fds = 4\n"
				   "queued_fds_per_uid = 6\n"
				   "unread_timeout = 300ms\n";
	unsigned int first, second;
	int a, b;

	daemon_up_clean(conf, NULL);
	a = connect_as(NOBODY, NOBODY, (gid_t)-1);
	ck_assert_int_eq(tl_raw_hello(a, 1), 0);
	ck_assert_uint_gt(flood_opens(a, 3000), 100);
	ck_assert_msg(wait_clients(1), "the reader that stopped is still "
				       "connected");
	ck_assert_msg(log_count("replies left unread for 300 ms") >= 1,
		      "the log:\n%s", log_read());

	/* Its socket still holds 4 descriptors: 2 are left to the user. */
	b = connect_as(NOBODY, NOBODY, (gid_t)-1);
	ck_assert_int_eq(tl_raw_hello(b, 1), 0);
	ck_assert_uint_gt(flood_opens(b, 3000), 100);
	ck_assert_msg(wait_clients(1), "the second reader that stopped is "
				       "still connected");
	second = replies_until_eof(b);
	first = replies_until_eof(a);
	ck_assert_msg(first == 4, "the first connection got %u contexts",
		      first);
	ck_assert_msg(second == 2, "the second connection got %u contexts",
		      second);
	raw_close(a);
	raw_close(b);
	assert_settled();
}
END_TEST

/* --- private contexts, status, accept() ---------------------------------- */

START_TEST(test_private_contexts_per_uid)
{
	struct agent *p[3], *other;
	const struct agent_rep *r;
	int64_t deadline;

	daemon_up_clean("[broker]\nprivate_contexts_per_uid = 2\n", NULL);
	for (int i = 0; i < 3; i++) {
		p[i] = agent_new(agent_cred(4242, 4242, AGENT_END));
		ag_ok(p[i], AGENT_CONNECT, IBC_CONNECT_PRIVATE_DOMAIN);
	}
	ag_ok(p[0], AGENT_OPEN, 0);
	ag_ok(p[1], AGENT_OPEN, 0);
	r = ag(p[2], AGENT_OPEN, NULL, 0);
	ck_assert_msg(r->ret == -EDQUOT, "the third private context: %d (%s)",
		      r->ret, r->error);
	ck_assert_msg(strstr(r->error, "private_contexts_per_uid"), "error: %s",
		      r->error);
	/* Per uid: another user has its own. */
	other = agent_new(agent_cred(4243, 4243, AGENT_END));
	ag_ok(other, AGENT_CONNECT, IBC_CONNECT_PRIVATE_DOMAIN);
	ag_ok(other, AGENT_OPEN, 0);
	/* Uncharged when the context goes. */
	ag_ok(p[0], AGENT_DISCONNECT, 0);
	deadline = tl_now_ms() + TL_WAIT_MS;
	do {
		r = ag(p[2], AGENT_OPEN, NULL, 0);
		if (r->ret != -EDQUOT)
			break;
		tl_sleep_ms(10);
	} while (tl_now_ms() < deadline);
	ck_assert_msg(r->ret == 0, "after a disconnect: %d (%s)", r->ret,
		      r->error);
}
END_TEST

/* A user's status counts its domain, root's the daemon. */
START_TEST(test_status_of_a_user)
{
	struct agent *u1, *u2, *n;

	daemon_up_clean("# defaults\n", NULL);
	u1 = agent_new(agent_cred(4242, 4242, AGENT_END));
	u2 = agent_new(agent_cred(4242, 4242, AGENT_END));
	n = agent_new(agent_cred(NOBODY, NOBODY, AGENT_END));
	ag_ok(u1, AGENT_CONNECT, 0);
	ag_ok(u2, AGENT_CONNECT, 0);
	ag_ok(n, AGENT_CONNECT, 0);
	ag_ok(u1, AGENT_STATUS, 0);
	ck_assert_uint_eq(u1->rep.n_list, 2);
	ag_ok(n, AGENT_STATUS, 0);
	ck_assert_uint_eq(n->rep.n_list, 1);
	ck_assert_uint_eq(daemon_clients(), 4);
}
END_TEST

/*
 * With no descriptor left, accept() fails at every retry (every 100 ms):
 * the warning is logged once, not at each.
 */
START_TEST(test_accept_warning_rate_limited)
{
	struct rlimit rl, low;
	int fds_now;

	daemon_up_clean("# defaults\n", NULL);
	ck_assert_int_eq(prlimit(D.pid, RLIMIT_NOFILE, NULL, &rl), 0);
	fds_now = tl_count_fds(D.pid);
	ck_assert_int_gt(fds_now, 0);
	/* Room for one more connection (its socket and pidfd), no more. */
	low = rl;
	low.rlim_cur = (rlim_t)fds_now + 2;
	ck_assert_int_eq(prlimit(D.pid, RLIMIT_NOFILE, &low, NULL), 0);
	for (int i = 0; i < 8; i++)
		connect_as(NOBODY, NOBODY, (gid_t)-1);
	/* About fifteen retries. */
	tl_sleep_ms(1600);
	ck_assert_msg(log_count("accept: Too many open files") == 1,
		      "the log:\n%s", log_read());
	ck_assert_int_eq(prlimit(D.pid, RLIMIT_NOFILE, &rl, NULL), 0);
	assert_root_served("running out of descriptors");
	for (size_t i = 0; i < n_raw; i++) {
		close(raw[i]);
		raw[i] = -1;
	}
	assert_settled();
}
END_TEST

/* --- device memory ---------------------------------------------------------
 */

#define OTHER 4243

/* An agent of @uid, connected, with the first device open. */
static struct agent *ag_opened(uid_t uid)
{
	struct agent *a = agent_new(agent_cred(uid, uid, AGENT_END));

	ag_ok(a, AGENT_CONNECT, 0);
	ag_ok(a, AGENT_OPEN, 0);
	return a;
}

/* @a allocates DMs of @len bytes (@flags) until refused: how many went;
 * the refusal must be @err and name @needle. */
static unsigned int ag_dm_fill(struct agent *a, unsigned int len,
			       uint32_t flags, int err, const char *needle)
{
	char arg[24];
	const struct agent_rep *r;

	snprintf(arg, sizeof(arg), "%u", len);
	r = ag(a, AGENT_DM_FILL, arg, flags);
	ck_assert_msg(r->ret == err && strstr(r->error, needle),
		      "uid %u after %u DMs of %u bytes: %d (%s), expected %d "
		      "naming \"%s\"",
		      (unsigned int)a->cred.uid, r->n_list, len, r->ret,
		      r->error, err, needle);
	return r->n_list;
}

static int ag_dm_alloc(struct agent *a, unsigned int len, uint32_t flags)
{
	char arg[24];

	snprintf(arg, sizeof(arg), "%u", len);
	return ag(a, AGENT_DM_ALLOC, arg, flags)->ret;
}

/* Root allocates @len bytes in a context of its own domain: 0 or -errno
 * (its DM stays until the client goes). */
static int root_dm_alloc(unsigned int len)
{
	struct ibc_dm *dm;
	int ret;

	if (!root_ctx)
		ck_assert_int_eq(ibc_open(root_client(), NULL, &root_ctx), 0);
	ret = ibc_dm_alloc(root_ctx, len, 0, &dm);
	ck_assert_msg(ret == 0 || ret == -ENOSPC || ret == -EDQUOT,
		      "root: ibc_dm_alloc(%u): %d (%s)", len, ret,
		      ibc_last_error());
	return ret;
}

/* The persistent DMs of domain @domain that root lists. */
static unsigned int persistent_dms(const char *domain)
{
	struct ibc_dm_info *d = NULL;
	unsigned int k = 0;
	size_t n = 0;

	ck_assert_int_eq(ibc_list_dms(root_client(), &d, sizeof(*d), &n), 0);
	for (size_t i = 0; i < n; i++)
		k += d[i].persistent && strcmp(d[i].domain, domain) == 0;
	ibc_list_free(d);
	return k;
}

/*
 * With the built-in defaults, uid 65534 allocated persistent DMs until
 * refused and exited: they stay, but they are a quarter of the device (its
 * domain's share), so that another uid and root still allocate. Before,
 * its domain's quota was the whole device: every other uid, root
 * included, got ENOSPC until an administrator freed them.
 */
START_TEST(test_dm_lockout_defaults)
{
	struct agent *n, *o;
	unsigned int got;

	daemon_up_clean("# defaults\n", NULL);
	n = ag_opened(NOBODY);
	got = ag_dm_fill(n, 4096, IBC_DM_PERSISTENT, -EDQUOT, "dm_bytes");
	/* 25% of the soft device's 256 KiB. */
	ck_assert_uint_eq(got, 16);
	agent_stop(n);
	ck_assert_uint_eq(persistent_dms("uid-65534"), 16);
	o = ag_opened(OTHER);
	ck_assert_uint_eq(ag_dm_fill(o, 4096, 0, -EDQUOT, "dm_bytes"), 16);
	ck_assert_int_eq(root_dm_alloc(4096), 0);
}
END_TEST

/*
 * In a named domain a member uid holds at most its share (half of the
 * domain's dm_bytes by default): one member's persistent DMs, left by a
 * process that exited, leave the other member its half. Before, the first
 * took the whole quota.
 */
START_TEST(test_dm_member_share)
{
	static const char conf[] = "[domain lab]\n"
				   "users = 65534, 4243\n"
				   "dm_bytes = 64K\n";
	struct agent *n, *o;

	daemon_up_clean(conf, NULL);
	n = ag_opened(NOBODY);
	ck_assert_uint_eq(ag_dm_fill(n, 4096, IBC_DM_PERSISTENT, -EDQUOT,
				     "dm_member_share"),
			  8);
	ck_assert_ptr_nonnull(strstr(n->rep.error, "uid 65534 holds 32768"));
	agent_stop(n);
	ck_assert_uint_eq(persistent_dms("lab"), 8);
	o = ag_opened(OTHER);
	/* Its half, which the domain's quota ends too. */
	ck_assert_uint_eq(ag_dm_fill(o, 4096, 0, -EDQUOT, "dm_bytes"), 8);
}
END_TEST

/*
 * A uid's persistent DMs, which outlive its processes, have a bound of
 * their own: a count and bytes, across its domains, that a new process of
 * the uid finds spent. DMs that end with their process are not bound by
 * it.
 */
START_TEST(test_dm_persistent_bound)
{
	static const char conf[] = "[broker]\n"
				   "dm_persistent_per_uid = 3\n"
				   "dm_persistent_bytes_per_uid = 16K\n"
				   "[defaults]\n"
				   "dm_bytes = 100%\n";
	struct agent *n, *o;

	daemon_up_clean(conf, NULL);
	n = ag_opened(NOBODY);
	ck_assert_uint_eq(ag_dm_fill(n, 4096, IBC_DM_PERSISTENT, -EDQUOT,
				     "(dm_persistent_per_uid)"),
			  3);
	ck_assert_int_eq(ag_dm_alloc(n, 4096, 0), 0);
	agent_stop(n);
	n = ag_opened(NOBODY);
	ck_assert_int_eq(ag_dm_alloc(n, 4096, IBC_DM_PERSISTENT), -EDQUOT);
	ck_assert_ptr_nonnull(strstr(n->rep.error, "uid 65534 has 3 "
						   "persistent DMs"));
	o = ag_opened(OTHER);
	ck_assert_int_eq(ag_dm_alloc(o, 12288, IBC_DM_PERSISTENT), 0);
	ck_assert_uint_eq(ag_dm_fill(o, 8192, IBC_DM_PERSISTENT, -EDQUOT,
				     "(dm_persistent_bytes_per_uid)"),
			  0);
	ck_assert_ptr_nonnull(strstr(o->rep.error, "uid 4243 holds 12288"));
	/* What is left of the bytes still goes. */
	ck_assert_int_eq(ag_dm_alloc(o, 4096, IBC_DM_PERSISTENT), 0);
	ck_assert_uint_eq(persistent_dms("uid-4243"), 2);
}
END_TEST

/*
 * The administrators' reserve: a user whose domain may have the whole
 * device stops short of it, with a sentence that names the reserve and no
 * figure of the device's; root still allocates in it.
 */
START_TEST(test_dm_admin_reserve)
{
	static const char conf[] = "[broker]\n"
				   "dm_admin_reserve = 64K\n"
				   "[defaults]\n"
				   "dm_bytes = 100%\n";
	struct agent *n;

	daemon_up_clean(conf, NULL);
	n = ag_opened(NOBODY);
	ck_assert_uint_eq(
		ag_dm_fill(n, 65536, 0, -ENOSPC, "(dm_admin_reserve)"), 3);
	ck_assert_msg(!strstr(n->rep.error, "196608") &&
			      !strstr(n->rep.error, "262144"),
		      "the refusal shows the device's figures: %s",
		      n->rep.error);
	ck_assert_int_eq(ag_dm_alloc(n, 4096, 0), -ENOSPC);
	ck_assert_int_eq(root_dm_alloc(65536), 0);
	ck_assert_int_eq(root_dm_alloc(4096), -ENOSPC);
}
END_TEST

/* What uid 65534 learns of the DM of the first device on a connection of
 * its own: the hello's dm_reserved and dm_domain_used, ListDms's
 * reserved_bytes and domain_used. */
static void raw_dm_view(uint64_t ret[4])
{
	Rdmab__HelloRequest hello = RDMAB__HELLO_REQUEST__INIT;
	Rdmab__ListRequest lr = RDMAB__LIST_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m = NULL;
	const Rdmab__DeviceCaps *caps;
	const Rdmab__DmDeviceInfo *dd;
	int fd = connect_as(NOBODY, NOBODY, (gid_t)-1);

	hello.library_version = (char *)"view";
	req.version = WIRE_PROTOCOL_VERSION;
	req.serial = 1;
	req.body_case = RDMAB__REQUEST__BODY_HELLO;
	req.hello = &hello;
	ck_assert_int_eq(tl_send_request(fd, &req, NULL, 0), 0);
	ck_assert_int_eq(tl_recv_msg(fd, TL_WAIT_MS, &m), 1);
	ck_assert_int_eq(m->reply->error, 0);
	ck_assert_uint_eq(m->reply->hello->n_devices, 1);
	caps = m->reply->hello->devices[0]->caps;
	ck_assert(!caps->dm_device_wide);
	ret[0] = caps->dm_reserved;
	ret[1] = caps->dm_domain_used;
	rdmab__daemon_message__free_unpacked(m, NULL);
	req.serial = 2;
	req.body_case = RDMAB__REQUEST__BODY_LIST_DMS;
	req.list_dms = &lr;
	ck_assert_int_eq(tl_send_request(fd, &req, NULL, 0), 0);
	ck_assert_int_eq(tl_recv_msg(fd, TL_WAIT_MS, &m), 1);
	ck_assert_int_eq(m->reply->error, 0);
	ck_assert_uint_eq(m->reply->list_dms->n_devices, 1);
	dd = m->reply->list_dms->devices[0];
	ck_assert(!dd->device_wide);
	ret[2] = dd->reserved_bytes;
	ret[3] = dd->domain_used;
	rdmab__daemon_message__free_unpacked(m, NULL);
	raw_close(fd);
}

/* Root's view of the first device. */
static struct ibc_device_info root_device(void)
{
	struct ibc_device_info *d = NULL, ret;
	size_t n = 0;

	ck_assert_int_eq(ibc_list_devices(root_client(), &d, sizeof(*d), &n),
			 0);
	ck_assert_uint_ge(n, 1);
	ret = d[0];
	ibc_list_free(d);
	ck_assert(ret.dm_device_wide);
	return ret;
}

/*
 * The device's memory in use is every domain's: a user sees its own
 * domain's (used, quota, room), in the hello, the device listing and
 * ListDms, and nothing of it moves when another domain allocates, not even
 * the sentence of a device that is full; an administrator sees the
 * device's figure move. Before, all three showed the device's figure.
 */
START_TEST(test_dm_view_own_domain)
{
	static const char conf[] = "[broker]\n"
				   "dm_admin_reserve = 0\n"
				   "[defaults]\n"
				   "dm_bytes = 100%\n";
	struct ibc_device_info before, after;
	uint64_t raw0[4], raw1[4];
	struct agent *n, *o;

	daemon_up_clean(conf, NULL);
	n = ag_opened(NOBODY);
	ck_assert_int_eq(ag_dm_alloc(n, 4096, 0), 0);
	ag_ok(n, AGENT_LIST_DEVICES, 0);
	before = n->rep.devices[0];
	ck_assert(!before.dm_device_wide);
	ck_assert_uint_eq(before.dm_reserved, 0);
	ck_assert_uint_eq(before.dm_domain_used, 4096);
	ck_assert_uint_eq(before.dm_domain_limit, 262144);
	ck_assert_uint_eq(before.dm_room, 262144 - 4096);
	raw_dm_view(raw0);
	ck_assert_uint_eq(raw0[0], 0);
	ck_assert_uint_eq(raw0[1], 4096);
	ck_assert_uint_eq(raw0[2], 0);
	ck_assert_uint_eq(raw0[3], 4096);
	ck_assert_uint_eq(root_device().dm_reserved, 4096);

	o = ag_opened(OTHER);
	ck_assert_int_eq(ag_dm_alloc(o, 131072, 0), 0);
	ag_ok(n, AGENT_LIST_DEVICES, 0);
	after = n->rep.devices[0];
	ck_assert_uint_eq(after.dm_reserved, before.dm_reserved);
	ck_assert_uint_eq(after.dm_domain_used, before.dm_domain_used);
	ck_assert_uint_eq(after.dm_domain_limit, before.dm_domain_limit);
	ck_assert_uint_eq(after.dm_room, before.dm_room);
	raw_dm_view(raw1);
	ck_assert_mem_eq(raw0, raw1, sizeof(raw0));
	ck_assert_uint_eq(root_device().dm_reserved, 4096 + 131072);
	/* The device is full for it: the sentence says so, with its own
	 * figure only. */
	ck_assert_int_eq(ag_dm_alloc(n, 196608, 0), -ENOSPC);
	ck_assert_msg(strstr(n->rep.error, "out of device memory") &&
			      !strstr(n->rep.error, "135168") &&
			      !strstr(n->rep.error, "262144"),
		      "uid 65534 is told: %s", n->rep.error);
}
END_TEST

/*
 * Each session's DM status page is a descriptor the daemon holds for it,
 * charged to its uid as its connection is: at most connections_per_uid of
 * them, which a reload that lowers the limit makes visible. Before, the
 * pages were counted nowhere.
 */
START_TEST(test_dm_status_pages_charged)
{
	struct agent *a[3];

	daemon_up_clean("[broker]\nconnections_per_uid = 4\n", NULL);
	for (int i = 0; i < 3; i++)
		a[i] = ag_opened(NOBODY);
	ck_assert_int_eq(ag_dm_alloc(a[0], 4096, 0), 0);
	ck_assert_int_eq(ag_dm_alloc(a[1], 4096, 0), 0);
	daemon_reload("[broker]\nconnections_per_uid = 2\n");
	/* Its first DM would make a third page. */
	ck_assert_int_eq(ag_dm_alloc(a[2], 4096, 0), -EDQUOT);
	ck_assert_msg(strstr(a[2]->rep.error, "uid 65534's sessions hold 2 DM "
					      "status pages") &&
			      strstr(a[2]->rep.error, "connections_per_uid"),
		      "%s", a[2]->rep.error);
	/* A session with a page takes more DMs on it. */
	ck_assert_int_eq(ag_dm_alloc(a[0], 4096, 0), 0);
	/* A session that ends gives its page back. */
	agent_stop(a[1]);
	/* Root's client and the two others. */
	ck_assert(wait_clients(3));
	ck_assert_int_eq(ag_dm_alloc(a[2], 4096, 0), 0);
}
END_TEST

static Suite *limits_suite(void)
{
	Suite *s = suite_create("limits");
	TCase *tc = tcase_create("slots");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_idle_connections_leave_the_reserve);
	tcase_add_test(tc, test_connections_per_uid);
	tcase_add_test(tc, test_hello_deadline);
	suite_add_tcase(s, tc);

	tc = tcase_create("descriptors");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_unread_descriptors_bounded);
	tcase_add_test(tc, test_reading_client_not_stopped);
	tcase_add_test(tc, test_unread_timeout);
	tcase_add_test(tc, test_reload_raises_fd_limit);
	suite_add_tcase(s, tc);

	tc = tcase_create("accounting");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_private_contexts_per_uid);
	tcase_add_test(tc, test_status_of_a_user);
	tcase_add_test(tc, test_accept_warning_rate_limited);
	suite_add_tcase(s, tc);

	tc = tcase_create("device memory");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_dm_lockout_defaults);
	tcase_add_test(tc, test_dm_member_share);
	tcase_add_test(tc, test_dm_persistent_bound);
	tcase_add_test(tc, test_dm_admin_reserve);
	tcase_add_test(tc, test_dm_view_own_domain);
	tcase_add_test(tc, test_dm_status_pages_charged);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	ck_require_root("check_limits");
	return ck_run("limits", limits_suite());
}
