// SPDX-License-Identifier: MIT
/*
 * Integration tests against the real rdmabrokerd ($RDMABROKERD) on the soft
 * device, each in its own temporary directory: many clients, protocol
 * errors, killed clients, a corpus of malformed packets, the connection
 * limit, shutdown, and the socket's life cycle.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cklib.h"
#include "tests/testlib.h"

static struct tl_daemon D;

/*
 * Start the daemon with @args and a configuration that makes this suite's
 * user an administrator (through its primary group): these tests count
 * every client of the daemon, which only administrators see, and open more
 * connections than one other user may have.
 */
static void daemon_up(const char *const *args)
{
	const char *argv[16] = { "--config" };
	char *dir = tl_mkdtemp(), path[PATH_MAX];
	size_t n = 2;
	FILE *f;
	int ret;

	ck_assert_ptr_nonnull(dir);
	snprintf(path, sizeof(path), "%s/rdmabroker.conf", dir);
	free(dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "[broker]\nadmin_group = %u\n", (unsigned int)getegid());
	ck_assert_int_eq(fclose(f), 0);
	argv[1] = path;
	for (; args && *args && n < 15; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	ret = tl_daemon_start(&D, argv);
	ck_assert_msg(ret == 0, "cannot start %s: %s", tl_daemon_path(),
		      strerror(-ret));
}

static void daemon_teardown(void)
{
	tl_daemon_stop(&D);
}

/* The daemon is alive, has no client but the checker, and holds exactly
 * the descriptors it held at start. */
static void assert_settled(void)
{
	unsigned int clients = 0;
	int n;

	n = tl_daemon_settle(&D, TL_WAIT_MS, &clients);
	ck_assert_msg(tl_daemon_alive(&D), "the daemon died");
	ck_assert_msg(n >= 0, "settle: %s", strerror(-n));
	ck_assert_msg(clients == 1, "status reports %u clients, expected 1",
		      clients);
	ck_assert_msg(n == D.baseline_fds,
		      "the daemon holds %d descriptors, %d at start", n,
		      D.baseline_fds);
}

static struct ibc_client *connect_ok(void)
{
	struct ibc_client *cl = NULL;
	int ret = tl_connect(D.sock, TL_WAIT_MS, &cl);

	ck_assert_msg(ret == 0, "ibc_connect: %s (%s)", strerror(-ret),
		      ibc_last_error());
	return cl;
}

static unsigned int status_clients(struct ibc_client *cl)
{
	struct ibc_status st;
	int ret = ibc_status(cl, &st, sizeof(st));

	ck_assert_msg(ret == 0, "ibc_status: %s (%s)", strerror(-ret),
		      ibc_last_error());
	return st.clients;
}

/* A fresh client can connect and ping. */
static void assert_serving(const char *after)
{
	struct ibc_client *cl = NULL;
	int ret;

	ck_assert_msg(tl_daemon_alive(&D), "the daemon died after %s", after);
	ret = tl_connect(D.sock, TL_WAIT_MS, &cl);
	ck_assert_msg(ret == 0, "after %s: ibc_connect: %s (%s)", after,
		      strerror(-ret), ibc_last_error());
	ret = ibc_ping(cl, "alive?", 6);
	ck_assert_msg(ret == 0, "after %s: ibc_ping: %s (%s)", after,
		      strerror(-ret), ibc_last_error());
	ibc_disconnect(cl);
}

static int raw_connect_ok(void)
{
	int fd = tl_raw_connect(D.sock);

	ck_assert_msg(fd >= 0, "connect %s: %s", D.sock, strerror(-fd));
	return fd;
}

/* --- many clients ------------------------------------------------------- */

#define MANY 100

START_TEST(test_100_clients)
{
	struct ibc_client *cl[MANY];
	uint64_t ids[MANY];
	int ret, n;

	daemon_up(NULL);
	for (int i = 0; i < MANY; i++) {
		struct ibc_client_info info;

		ret = tl_connect(D.sock, TL_WAIT_MS, &cl[i]);
		ck_assert_msg(ret == 0, "client %d: ibc_connect: %s (%s)", i,
			      strerror(-ret), ibc_last_error());
		ck_assert_int_eq(ibc_client_info(cl[i], &info, sizeof(info)),
				 0);
		ck_assert_uint_eq(info.protocol_version, WIRE_PROTOCOL_VERSION);
		ids[i] = info.client_id;
		for (int j = 0; j < i; j++)
			ck_assert_uint_ne(ids[i], ids[j]);
	}
	for (int i = 0; i < MANY; i++) {
		char payload[32];

		snprintf(payload, sizeof(payload), "client %d", i);
		ret = ibc_ping(cl[i], payload, strlen(payload));
		ck_assert_msg(ret == 0, "client %d: ibc_ping: %s (%s)", i,
			      strerror(-ret), ibc_last_error());
	}
	ck_assert_uint_eq(status_clients(cl[0]), MANY);
	/* Every connection costs the daemon at least its socket. */
	n = tl_count_fds(D.pid);
	ck_assert_int_ge(n, D.baseline_fds + MANY - 1);
	for (int i = 0; i < MANY; i++)
		ibc_disconnect(cl[i]);
	assert_settled();
}
END_TEST

#define PROCS 10
#define PER_PROC 10

/* Real client processes, several at once. */
START_TEST(test_client_processes)
{
	pid_t pids[PROCS];

	daemon_up(NULL);
	for (int p = 0; p < PROCS; p++) {
		pids[p] = fork();
		ck_assert_int_ge(pids[p], 0);
		if (pids[p] == 0) {
			struct ibc_client *cl[PER_PROC];

			for (int i = 0; i < PER_PROC; i++)
				if (tl_connect(D.sock, TL_WAIT_MS, &cl[i]) < 0)
					_exit(10 + i);
			for (int i = 0; i < PER_PROC; i++)
				if (ibc_ping(cl[i], &i, sizeof(i)) < 0)
					_exit(30 + i);
			for (int i = 0; i < PER_PROC; i++)
				ibc_disconnect(cl[i]);
			_exit(0);
		}
	}
	for (int p = 0; p < PROCS; p++) {
		int status = 0;

		ck_assert_int_ge(tl_wait_pid(pids[p], 20000, &status), 0);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "client process %d: status 0x%x", p, status);
	}
	assert_settled();
}
END_TEST

/* --- protocol errors ---------------------------------------------------- */

static void send_unknown_body(int fd, uint64_t serial, uint32_t field)
{
	struct tl_buf b = { 0 };

	/* version = 1, serial, and a body field this daemon does not know,
	 * with a little content. */
	tl_pb_uint(&b, 1, WIRE_PROTOCOL_VERSION);
	tl_pb_uint(&b, 2, serial);
	tl_pb_bytes(&b, field, "\x08\x01", 2);
	ck_assert_int_eq(tl_raw_send(fd, b.p, b.len, NULL, 0, 0), 0);
	tl_buf_free(&b);
}

START_TEST(test_unknown_body)
{
	int fd;

	daemon_up(NULL);
	fd = raw_connect_ok();
	/* Before hello: refused, but the client stays. */
	send_unknown_body(fd, 2, 99);
	ck_assert_int_eq(tl_recv_reply_error(fd, 2, TL_WAIT_MS), EOPNOTSUPP);
	ck_assert_int_eq(tl_raw_hello(fd, 3), 0);
	send_unknown_body(fd, 7, 99);
	ck_assert_int_eq(tl_recv_reply_error(fd, 7, TL_WAIT_MS), EOPNOTSUPP);
	send_unknown_body(fd, 8, 5000);
	ck_assert_int_eq(tl_recv_reply_error(fd, 8, TL_WAIT_MS), EOPNOTSUPP);
	/* Still usable. */
	ck_assert_int_eq(tl_raw_ping(fd, 9, "after", 5), 0);
	close(fd);
	assert_settled();
}
END_TEST

START_TEST(test_request_before_hello)
{
	Rdmab__StatusRequest sr = RDMAB__STATUS_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	int fd;

	daemon_up(NULL);
	fd = raw_connect_ok();
	req.version = WIRE_PROTOCOL_VERSION;
	req.serial = 3;
	req.body_case = RDMAB__REQUEST__BODY_STATUS;
	req.status = &sr;
	ck_assert_int_eq(tl_send_request(fd, &req, NULL, 0), 0);
	ck_assert_int_eq(tl_recv_reply_error(fd, 3, TL_WAIT_MS), EPROTO);
	ck_assert_int_eq(tl_wait_eof(fd, TL_WAIT_MS), 0);
	close(fd);

	fd = raw_connect_ok();
	ck_assert_int_eq(tl_raw_ping(fd, 4, "early", 5), -EPROTO);
	ck_assert_int_eq(tl_wait_eof(fd, TL_WAIT_MS), 0);
	close(fd);
	assert_settled();
}
END_TEST

static const uint32_t bad_versions[] = { 0, WIRE_PROTOCOL_VERSION + 1,
					 UINT32_MAX };

START_TEST(test_wrong_version)
{
	Rdmab__HelloRequest hello = RDMAB__HELLO_REQUEST__INIT;
	ProtobufCBinaryData ping = { 0 };
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	int fd;

	daemon_up(NULL);
	for (size_t i = 0; i < sizeof(bad_versions) / sizeof(bad_versions[0]);
	     i++) {
		/* As the first request... */
		fd = raw_connect_ok();
		hello.library_version = (char *)"check";
		req.version = bad_versions[i];
		req.serial = 5;
		req.body_case = RDMAB__REQUEST__BODY_HELLO;
		req.hello = &hello;
		ck_assert_int_eq(tl_send_request(fd, &req, NULL, 0), 0);
		ck_assert_int_eq(tl_recv_reply_error(fd, 5, TL_WAIT_MS),
				 EPROTO);
		ck_assert_int_eq(tl_wait_eof(fd, TL_WAIT_MS), 0);
		close(fd);

		/* ...and after a good hello. */
		fd = raw_connect_ok();
		ck_assert_int_eq(tl_raw_hello(fd, 1), 0);
		req.version = bad_versions[i];
		req.serial = 6;
		req.body_case = RDMAB__REQUEST__BODY_PING;
		req.ping = ping;
		ck_assert_int_eq(tl_send_request(fd, &req, NULL, 0), 0);
		ck_assert_int_eq(tl_recv_reply_error(fd, 6, TL_WAIT_MS),
				 EPROTO);
		ck_assert_int_eq(tl_wait_eof(fd, TL_WAIT_MS), 0);
		close(fd);
	}
	assert_settled();
}
END_TEST

static const unsigned int ping_nfds[] = { 1, 2, WIRE_MAX_FDS,
					  WIRE_MAX_FDS + 1 };

/* No request takes descriptors, and the daemon reads requests with recv(2):
 * what a client attaches is closed by the kernel unread, and the request is
 * served as if it had none. The write ends we send are the only ones left,
 * so the pipes report EOF once they are gone; the session goes on. */
START_TEST(test_ping_with_fds)
{
	ProtobufCBinaryData ping = { 0 };
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	unsigned int nfds = ping_nfds[_i];
	int rd[WIRE_MAX_FDS + 1], wr[WIRE_MAX_FDS + 1];
	int fd, err;

	daemon_up(NULL);
	for (unsigned int i = 0; i < nfds; i++) {
		int p[2];

		ck_assert_int_eq(tl_pipe(p), 0);
		rd[i] = p[0];
		wr[i] = p[1];
	}
	fd = raw_connect_ok();
	ck_assert_int_eq(tl_raw_hello(fd, 1), 0);
	ping.data = (uint8_t *)"fd";
	ping.len = 2;
	req.version = WIRE_PROTOCOL_VERSION;
	req.serial = 2;
	req.body_case = RDMAB__REQUEST__BODY_PING;
	req.ping = ping;
	ck_assert_int_eq(tl_send_request(fd, &req, wr, nfds), 0);
	for (unsigned int i = 0; i < nfds; i++)
		close(wr[i]);

	err = tl_recv_reply_error(fd, 2, TL_WAIT_MS);
	ck_assert_int_eq(err, 0);
	for (unsigned int i = 0; i < nfds; i++) {
		struct pollfd p = { .fd = rd[i], .events = POLLIN };
		char c;

		ck_assert_msg(poll(&p, 1, TL_WAIT_MS) == 1,
			      "the daemon still holds descriptor %u", i);
		ck_assert_int_eq(read(rd[i], &c, 1), 0);
		close(rd[i]);
	}
	req.serial = 3;
	ck_assert_int_eq(tl_send_request(fd, &req, NULL, 0), 0);
	ck_assert_int_eq(tl_recv_reply_error(fd, 3, TL_WAIT_MS), 0);
	close(fd);
	assert_settled();
}
END_TEST

/* --- reading on after a reply (--read-on) ------------------------------- */

static int wait_exit_code(pid_t pid);

static const char *const read_on_modes[] = { "always", "auto", "never" };

#define PIPELINED 40

static void send_ping(int fd, uint64_t serial)
{
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	req.version = WIRE_PROTOCOL_VERSION;
	req.serial = serial;
	req.body_case = RDMAB__REQUEST__BODY_PING;
	ck_assert_int_eq(tl_send_request(fd, &req, NULL, 0), 0);
}

/*
 * Requests sent back to back, more than a burst (READ_BURST) in the socket
 * at once, are each answered once and in order, whether the daemon reads
 * on after each reply or goes back to epoll; a packet that cannot be
 * decoded behind them ends the session after the replies before it. (Not
 * more requests behind that one: a socket closed with requests unread
 * makes the peer's next read fail with ECONNRESET, replies or not.)
 */
START_TEST(test_read_on_pipelined)
{
	const char *args[] = { "--read-on", read_on_modes[_i], NULL };
	uint64_t serial = 1;
	int fd;

	daemon_up(args);
	fd = raw_connect_ok();
	ck_assert_int_eq(tl_raw_hello(fd, serial++), 0);
	for (unsigned int i = 0; i < PIPELINED; i++)
		send_ping(fd, serial + i);
	for (unsigned int i = 0; i < PIPELINED; i++)
		ck_assert_int_eq(
			tl_recv_reply_error(fd, serial + i, TL_WAIT_MS), 0);
	serial += PIPELINED;

	for (unsigned int i = 0; i < PIPELINED / 2; i++)
		send_ping(fd, serial + i);
	ck_assert_int_eq(tl_raw_send(fd, "\xff\xff\xff", 3, NULL, 0, 0), 0);
	for (unsigned int i = 0; i < PIPELINED / 2; i++)
		ck_assert_int_eq(
			tl_recv_reply_error(fd, serial + i, TL_WAIT_MS), 0);
	ck_assert_int_eq(tl_recv_reply_error(fd, 0, TL_WAIT_MS), EBADMSG);
	ck_assert_int_eq(tl_wait_eof(fd, TL_WAIT_MS), 0);
	close(fd);
	assert_settled();
}
END_TEST

/* A peer that hangs up behind a burst of requests: the daemon, reading
 * on, meets the end of the stream in the middle and lets go of all. */
START_TEST(test_read_on_hangup)
{
	const char *args[] = { "--read-on", read_on_modes[_i], NULL };
	int fd;

	daemon_up(args);
	for (unsigned int round = 0; round < 8; round++) {
		fd = raw_connect_ok();
		ck_assert_int_eq(tl_raw_hello(fd, 1), 0);
		for (unsigned int i = 0; i < PIPELINED; i++)
			send_ping(fd, 2 + i);
		close(fd);
	}
	assert_settled();
}
END_TEST

START_TEST(test_read_on_bad_value)
{
	const char *args[] = { "--read-on", "sometimes", NULL };
	char *dir = tl_mkdtemp(), sock[PATH_MAX];
	pid_t pid;

	ck_assert_ptr_nonnull(dir);
	snprintf(sock, sizeof(sock), "%s/s.sock", dir);
	pid = tl_daemon_spawn(dir, sock, args);
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(wait_exit_code(pid), 2);
	tl_rmtree(dir);
	free(dir);
}
END_TEST

/* --- killed clients ----------------------------------------------------- */

enum kill_scenario {
	/* Connected, nothing sent. */
	KILL_CONNECTED,
	/* Hello sent, its reply never read. */
	KILL_HELLO_UNREAD,
	/* Large pings sent until the socket is full, no reply read: the
	 * daemon has replies queued and requests unread. */
	KILL_FLOODING,
	/* libibclient with threads in the middle of pings. */
	KILL_LIBRARY_BUSY,
	KILL_SCENARIOS,
};

static void *busy_pinger(void *arg)
{
	struct ibc_client *cl = arg;
	char buf[1000];

	memset(buf, 'p', sizeof(buf));
	for (;;)
		if (ibc_ping(cl, buf, sizeof(buf)) < 0)
			_exit(3);
	return NULL;
}

static void child_flood(int fd)
{
	static uint8_t payload[60000];
	ProtobufCBinaryData ping = { 0 };
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct tl_buf b = { 0 };

	ping.data = payload;
	ping.len = sizeof(payload);
	req.version = WIRE_PROTOCOL_VERSION;
	req.body_case = RDMAB__REQUEST__BODY_PING;
	req.ping = ping;
	for (uint64_t s = 10; s < 200; s++) {
		req.serial = s;
		b.len = 0;
		tl_pb_message(&b, &req.base);
		if (tl_raw_send(fd, b.p, b.len, NULL, 0, MSG_DONTWAIT) < 0)
			break;
	}
	tl_buf_free(&b);
}

/* The child: get into @scenario, then say so on @ready and wait to die. */
static void kill_child(enum kill_scenario scenario, int ready)
{
	struct ibc_client *cl;
	pthread_t th;
	int fd;

	switch (scenario) {
	case KILL_CONNECTED:
		if (tl_raw_connect(D.sock) < 0)
			_exit(1);
		break;
	case KILL_HELLO_UNREAD:
	case KILL_FLOODING:
		fd = tl_raw_connect(D.sock);
		if (fd < 0)
			_exit(1);
		if (scenario == KILL_HELLO_UNREAD) {
			Rdmab__HelloRequest hello = RDMAB__HELLO_REQUEST__INIT;
			Rdmab__Request req = RDMAB__REQUEST__INIT;

			hello.library_version = (char *)"killed";
			req.version = WIRE_PROTOCOL_VERSION;
			req.serial = 1;
			req.body_case = RDMAB__REQUEST__BODY_HELLO;
			req.hello = &hello;
			if (tl_send_request(fd, &req, NULL, 0) < 0)
				_exit(2);
		} else {
			if (tl_raw_hello(fd, 1) < 0)
				_exit(2);
			child_flood(fd);
		}
		break;
	case KILL_LIBRARY_BUSY:
		if (tl_connect(D.sock, TL_WAIT_MS, &cl) < 0)
			_exit(1);
		for (int i = 0; i < 4; i++)
			if (pthread_create(&th, NULL, busy_pinger, cl))
				_exit(2);
		break;
	default:
		_exit(4);
	}
	if (write(ready, "r", 1) != 1)
		_exit(5);
	for (;;)
		pause();
}

START_TEST(test_sigkill_mid_request)
{
	enum kill_scenario scenario = (enum kill_scenario)_i;
	struct ibc_client *checker;

	daemon_up(NULL);
	checker = connect_ok();
	for (int round = 0; round < 5; round++) {
		struct pollfd p;
		int pfd[2], status;
		unsigned int clients = 0;
		pid_t pid;
		char c;

		ck_assert_int_eq(pipe2(pfd, O_CLOEXEC), 0);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			close(pfd[0]);
			kill_child(scenario, pfd[1]);
		}
		close(pfd[1]);
		p = (struct pollfd){ .fd = pfd[0], .events = POLLIN };
		ck_assert_int_eq(poll(&p, 1, TL_WAIT_MS), 1);
		ck_assert_msg(read(pfd[0], &c, 1) == 1,
			      "scenario %d: the child failed", scenario);
		close(pfd[0]);
		/* The daemon sees the child (scenario KILL_CONNECTED may
		 * still be in the backlog). */
		for (int t = 0; t < 250; t++) {
			clients = status_clients(checker);
			if (clients == 2)
				break;
			tl_sleep_ms(20);
		}
		ck_assert_uint_eq(clients, 2);
		/* Let the busy client be busy. */
		tl_sleep_ms(5 + 10 * (unsigned int)round);
		ck_assert_int_eq(kill(pid, SIGKILL), 0);
		ck_assert_int_ge(tl_wait_pid(pid, TL_WAIT_MS, &status), 0);
		ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		ck_assert_int_eq(ibc_ping(checker, "x", 1), 0);
	}
	ibc_disconnect(checker);
	assert_settled();
}
END_TEST

/*
 * The daemon ends a session when its process exits, even if a copy of the
 * socket lives on in another process (it watches a pidfd).
 */
START_TEST(test_client_exit_with_socket_copy)
{
	int pfd[2], status, pidfd;
	pid_t child, grandchild = 0;

#ifdef SYS_pidfd_open
	pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
#else
	pidfd = -1;
	errno = ENOSYS;
#endif
	if (pidfd < 0 && errno == ENOSYS) {
		/* The daemon cannot watch processes here either. */
		fprintf(stderr, "no pidfd_open: test skipped\n");
		return;
	}
	close(pidfd);
	daemon_up(NULL);
	/* Orphans come back to us, so the copy's holder can be reaped. */
	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	ck_assert_int_eq(pipe2(pfd, O_CLOEXEC), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		int fd = tl_raw_connect(D.sock);
		pid_t g;

		close(pfd[0]);
		if (fd < 0 || tl_raw_hello(fd, 1) < 0)
			_exit(1);
		g = fork();
		if (g == 0) {
			/* Holds the socket, does nothing with it. */
			for (;;)
				pause();
		}
		if (g < 0 || write(pfd[1], &g, sizeof(g)) != sizeof(g))
			_exit(2);
		for (;;)
			pause();
	}
	close(pfd[1]);
	ck_assert_int_eq(read(pfd[0], &grandchild, sizeof(grandchild)),
			 sizeof(grandchild));
	close(pfd[0]);
	ck_assert_int_gt(grandchild, 0);
	ck_assert_int_eq(kill(child, SIGKILL), 0);
	ck_assert_int_ge(tl_wait_pid(child, TL_WAIT_MS, &status), 0);

	/* The session is gone although the grandchild still holds it. */
	ck_assert_int_eq(kill(grandchild, 0), 0);
	assert_settled();

	kill(grandchild, SIGKILL);
	ck_assert_int_ge(tl_wait_pid(grandchild, TL_WAIT_MS, &status), 0);
	assert_settled();
}
END_TEST

/* --- malformed packets -------------------------------------------------- */

enum expect {
	/* Some reply (any error) or a disconnect; never silence. */
	EXPECT_ANSWER,
	/* Error reply @err, then a disconnect. */
	EXPECT_FATAL,
	/* Error reply @err, and the connection stays usable. */
	EXPECT_STAY,
	/* No reply, a disconnect (a zero-length packet reads as EOF). */
	EXPECT_EOF,
};

struct packet {
	char what[80];
	struct tl_buf b;
	unsigned int nfds;
	bool hello_first;
	enum expect expect;
	int err;
	/* The serial of the expected reply (0 when the packet cannot be
	 * decoded). */
	uint64_t serial;
};

static void packet_reset(struct packet *p)
{
	tl_buf_free(&p->b);
	memset(p, 0, sizeof(*p));
}

static void pb_hello(struct tl_buf *b, uint32_t version, uint64_t serial)
{
	Rdmab__HelloRequest hello = RDMAB__HELLO_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	hello.library_version = (char *)"corpus";
	hello.pid = 1;
	req.version = version;
	req.serial = serial;
	req.body_case = RDMAB__REQUEST__BODY_HELLO;
	req.hello = &hello;
	tl_pb_message(b, &req.base);
}

static void pb_ping(struct tl_buf *b, uint32_t version, uint64_t serial,
		    struct tl_rng *rng, size_t len)
{
	ProtobufCBinaryData ping = { 0 };
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	uint8_t *payload = malloc(len ? len : 1);

	ck_assert_ptr_nonnull(payload);
	tl_rng_fill(rng, payload, len);
	ping.data = payload;
	ping.len = len;
	req.version = version;
	req.serial = serial;
	req.body_case = RDMAB__REQUEST__BODY_PING;
	req.ping = ping;
	tl_pb_message(b, &req.base);
	free(payload);
}

static void pb_status(struct tl_buf *b, uint32_t version, uint64_t serial)
{
	/* StatusRequest is empty: field 12, length 0. */
	tl_pb_uint(b, 1, version);
	tl_pb_uint(b, 2, serial);
	tl_pb_bytes(b, 12, NULL, 0);
}

/* Encodes a request, body chosen by @kind: 0 hello, 1 ping, 2 status,
 * 3 none, 4 unknown. */
static void pb_request(struct tl_buf *b, unsigned int kind, uint32_t version,
		       uint64_t serial, struct tl_rng *rng)
{
	switch (kind) {
	case 0:
		pb_hello(b, version, serial);
		break;
	case 1:
		pb_ping(b, version, serial, rng, tl_rng_below(rng, 200));
		break;
	case 2:
		pb_status(b, version, serial);
		break;
	case 3:
		tl_pb_uint(b, 1, version);
		tl_pb_uint(b, 2, serial);
		break;
	default:
		tl_pb_uint(b, 1, version);
		tl_pb_uint(b, 2, serial);
		tl_pb_bytes(b, 99, "junk", 4);
		break;
	}
}

static const char *const kind_names[] = { "hello", "ping", "status", "none",
					  "unknown" };

/* Oddities that are well-formed protobuf, or nearly. */
static void odd_packet(unsigned int n, struct packet *p, struct tl_rng *rng)
{
	struct tl_buf sub = { 0 };
	char big[1000];

	p->expect = EXPECT_ANSWER;
	p->hello_first = n % 2;
	switch (n) {
	case 0: /* fork state out of range */
	case 1:
		tl_pb_uint(&sub, 3, n ? 99 : 3);
		tl_pb_uint(&p->b, 1, WIRE_PROTOCOL_VERSION);
		tl_pb_uint(&p->b, 2, 11);
		tl_pb_bytes(&p->b, 10, sub.p, sub.len);
		p->hello_first = false;
		snprintf(p->what, sizeof(p->what), "hello fork_state %u",
			 n ? 99 : 3);
		break;
	case 2: /* fork state -1: a ten-byte varint */
		tl_pb_uint(&sub, 3, UINT64_MAX);
		tl_pb_uint(&p->b, 1, WIRE_PROTOCOL_VERSION);
		tl_pb_uint(&p->b, 2, 12);
		tl_pb_bytes(&p->b, 10, sub.p, sub.len);
		snprintf(p->what, sizeof(p->what), "hello fork_state -1");
		break;
	case 3: /* a library version far too long */
	case 4:
		memset(big, 'L', sizeof(big));
		tl_pb_bytes(&sub, 1, big, sizeof(big));
		tl_pb_uint(&p->b, 1, WIRE_PROTOCOL_VERSION);
		tl_pb_uint(&p->b, 2, 13);
		tl_pb_bytes(&p->b, 10, sub.p, sub.len);
		snprintf(p->what, sizeof(p->what), "hello with a long version");
		break;
	case 5: /* a string that is not UTF-8 */
		tl_pb_bytes(&sub, 1, "\xff\xfe\xc0", 3);
		tl_pb_uint(&p->b, 1, WIRE_PROTOCOL_VERSION);
		tl_pb_uint(&p->b, 2, 14);
		tl_pb_bytes(&p->b, 10, sub.p, sub.len);
		snprintf(p->what, sizeof(p->what), "hello with bad UTF-8");
		break;
	case 6: /* a domain nobody has */
		tl_pb_bytes(&sub, 4, "no-such-domain-\x01", 16);
		tl_pb_uint(&p->b, 1, WIRE_PROTOCOL_VERSION);
		tl_pb_uint(&p->b, 2, 15);
		tl_pb_bytes(&p->b, 10, sub.p, sub.len);
		snprintf(p->what, sizeof(p->what), "hello with a bad domain");
		break;
	case 7: /* the body as a varint instead of a message */
		tl_pb_uint(&p->b, 1, WIRE_PROTOCOL_VERSION);
		tl_pb_uint(&p->b, 2, 16);
		tl_pb_uint(&p->b, 11, 5);
		snprintf(p->what, sizeof(p->what), "ping body as a varint");
		break;
	case 8: /* version as a length-delimited field */
		tl_pb_bytes(&p->b, 1, "\x01", 1);
		tl_pb_uint(&p->b, 2, 17);
		snprintf(p->what, sizeof(p->what), "version as bytes");
		break;
	case 9: /* two bodies: the last one wins in protobuf */
		pb_hello(&p->b, WIRE_PROTOCOL_VERSION, 18);
		pb_ping(&p->b, WIRE_PROTOCOL_VERSION, 18, rng, 8);
		snprintf(p->what, sizeof(p->what), "hello and ping at once");
		break;
	case 10: /* an unknown start group */
		pb_hello(&p->b, WIRE_PROTOCOL_VERSION, 19);
		tl_pb_tag(&p->b, 50, 3);
		tl_pb_uint(&p->b, 1, 1);
		tl_pb_tag(&p->b, 50, 4);
		snprintf(p->what, sizeof(p->what), "a group");
		break;
	case 11: /* an end group with no start */
		tl_pb_tag(&p->b, 50, 4);
		snprintf(p->what, sizeof(p->what), "a lone end group");
		break;
	case 12: /* a length larger than the packet */
		tl_pb_uint(&p->b, 1, WIRE_PROTOCOL_VERSION);
		tl_pb_tag(&p->b, 11, 2);
		tl_pb_varint(&p->b, UINT64_MAX);
		snprintf(p->what, sizeof(p->what), "a 2^64 length");
		break;
	case 13: /* a varint of eleven bytes */
		tl_buf_put(&p->b,
			   "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff"
			   "\xff\x01",
			   12);
		snprintf(p->what, sizeof(p->what), "an eleven-byte varint");
		break;
	case 14: /* the largest serial */
		pb_ping(&p->b, WIRE_PROTOCOL_VERSION, UINT64_MAX, rng, 4);
		p->hello_first = true;
		p->expect = EXPECT_STAY;
		p->err = 0;
		p->serial = UINT64_MAX;
		snprintf(p->what, sizeof(p->what), "ping with serial 2^64-1");
		break;
	case 15: /* the largest ping the library sends */
		pb_ping(&p->b, WIRE_PROTOCOL_VERSION, 20, rng, 60000);
		p->hello_first = true;
		p->expect = EXPECT_STAY;
		p->err = 0;
		p->serial = 20;
		snprintf(p->what, sizeof(p->what), "ping of 60000 bytes");
		break;
	case 16: /* a packet of exactly 64 KiB */
		pb_ping(&p->b, WIRE_PROTOCOL_VERSION, 21, rng, 60000);
		while (p->b.len + 3 <= WIRE_MAX_PACKET)
			tl_pb_uint(&p->b, 2000 + (p->b.len & 7), 1);
		tl_buf_put(&p->b, "\x00\x00\x00", WIRE_MAX_PACKET - p->b.len);
		snprintf(p->what, sizeof(p->what), "64 KiB exactly");
		break;
	case 17: /* 64 KiB of unknown fields */
		tl_pb_uint(&p->b, 1, WIRE_PROTOCOL_VERSION);
		while (p->b.len + 3 <= WIRE_MAX_PACKET)
			tl_pb_uint(&p->b, 2000, 1);
		snprintf(p->what, sizeof(p->what), "64 KiB of unknown fields");
		break;
	case 18: /* a hello nested a thousand times in unknown fields */
		tl_buf_put(&sub, "\x08\x01", 2);
		for (int i = 0; i < 1000; i++) {
			struct tl_buf outer = { 0 };

			tl_pb_bytes(&outer, 99, sub.p, sub.len);
			tl_buf_free(&sub);
			sub = outer;
		}
		tl_pb_uint(&p->b, 1, WIRE_PROTOCOL_VERSION);
		tl_buf_put(&p->b, sub.p, sub.len);
		snprintf(p->what, sizeof(p->what), "deep nesting");
		break;
	case 19: /* a valid request followed by garbage */
		pb_hello(&p->b, WIRE_PROTOCOL_VERSION, 22);
		tl_buf_put(&p->b, "\xff\xff", 2);
		snprintf(p->what, sizeof(p->what), "hello with trailing junk");
		break;
	case 20: /* hello twice */
		pb_hello(&p->b, WIRE_PROTOCOL_VERSION, 23);
		p->hello_first = true;
		p->expect = EXPECT_STAY;
		p->err = EALREADY;
		p->serial = 23;
		snprintf(p->what, sizeof(p->what), "hello twice");
		break;
	case 21: /* a status request with fields StatusRequest lacks */
		tl_pb_uint(&sub, 1, 5);
		tl_pb_uint(&p->b, 1, WIRE_PROTOCOL_VERSION);
		tl_pb_uint(&p->b, 2, 24);
		tl_pb_bytes(&p->b, 12, sub.p, sub.len);
		p->hello_first = true;
		p->expect = EXPECT_STAY;
		p->err = 0;
		p->serial = 24;
		snprintf(p->what, sizeof(p->what), "status with extra fields");
		break;
	case 22: /* nothing but a serial */
		tl_pb_uint(&p->b, 2, 25);
		snprintf(p->what, sizeof(p->what), "serial only (version 0)");
		p->expect = EXPECT_FATAL;
		p->err = EPROTO;
		p->serial = 25;
		break;
	default: /* a single zero byte */
		tl_buf_put(&p->b, "", 1);
		snprintf(p->what, sizeof(p->what), "one zero byte");
		break;
	}
	tl_buf_free(&sub);
}

#define ODD_PACKETS 24

/* Packet @i of the generated corpus; every category is a range of @i. */
static unsigned int corpus_packet(unsigned int i, struct packet *p,
				  struct tl_rng *rng)
{
	unsigned int n = i;

	packet_reset(p);
	/* Random bytes. */
	if (n < 70) {
		size_t len = 1 + tl_rng_below(rng, 600);

		tl_buf_put(&p->b, NULL, len);
		tl_rng_fill(rng, p->b.p, len);
		p->hello_first = tl_rng_below(rng, 2);
		p->expect = EXPECT_ANSWER;
		snprintf(p->what, sizeof(p->what), "%zu random bytes", len);
		return 1;
	}
	n -= 70;
	/* Valid requests cut short. */
	if (n < 40) {
		struct tl_buf whole = { 0 };
		unsigned int kind = n % 3;
		size_t len;

		pb_request(&whole, kind, WIRE_PROTOCOL_VERSION, 30 + n, rng);
		len = 1 + tl_rng_below(rng, (uint32_t)whole.len - 1);
		tl_buf_put(&p->b, whole.p, len);
		tl_buf_free(&whole);
		p->hello_first = n % 2;
		p->expect = EXPECT_ANSWER;
		snprintf(p->what, sizeof(p->what), "%s cut to %zu bytes",
			 kind_names[kind], len);
		return 1;
	}
	n -= 40;
	/* Wrong versions, every body. */
	if (n < 25) {
		static const uint32_t versions[] = { 0, 2, 3, 255, UINT32_MAX };
		uint32_t v = versions[n / 5];

		pb_request(&p->b, n % 5, v, 100 + n, rng);
		p->hello_first = n % 2;
		p->expect = EXPECT_FATAL;
		p->err = EPROTO;
		p->serial = 100 + n;
		snprintf(p->what, sizeof(p->what), "%s with version %u",
			 kind_names[n % 5], v);
		return 1;
	}
	n -= 25;
	/* A ping with 1 to WIRE_MAX_FDS + 1 descriptors, with and without
	 * hello: served as the ping alone would be (the kernel closes
	 * them unread), so refused before hello. */
	if (n < 2 * (WIRE_MAX_FDS + 1)) {
		p->nfds = 1 + n % (WIRE_MAX_FDS + 1);
		p->hello_first = n < WIRE_MAX_FDS + 1;
		pb_ping(&p->b, WIRE_PROTOCOL_VERSION, 200 + n, rng, 16);
		p->expect = p->hello_first ? EXPECT_STAY : EXPECT_FATAL;
		p->err = p->hello_first ? 0 : EPROTO;
		p->serial = 200 + n;
		snprintf(p->what, sizeof(p->what), "ping with %u fds%s",
			 p->nfds, p->hello_first ? "" : " before hello");
		return 1;
	}
	n -= 2 * (WIRE_MAX_FDS + 1);
	/* Oversize. */
	if (n < 6) {
		static const size_t sizes[] = {
			WIRE_MAX_PACKET + 1, WIRE_MAX_PACKET + 100,
			80 * 1024,	     100 * 1024,
			150 * 1024,	     WIRE_MAX_PACKET + 7,
		};

		if (n % 2) {
			tl_buf_put(&p->b, NULL, sizes[n]);
			tl_rng_fill(rng, p->b.p, sizes[n]);
		} else {
			pb_ping(&p->b, WIRE_PROTOCOL_VERSION, 300 + n, rng,
				sizes[n]);
		}
		p->nfds = n == 5 ? 2 : 0;
		p->hello_first = n % 3 == 0;
		p->expect = EXPECT_FATAL;
		p->err = EMSGSIZE;
		snprintf(p->what, sizeof(p->what), "%zu bytes%s", p->b.len,
			 p->nfds ? " with fds" : "");
		return 1;
	}
	n -= 6;
	/* Descriptors where none belong. */
	if (n < 20) {
		unsigned int kind = n % 5;

		pb_request(&p->b, kind, WIRE_PROTOCOL_VERSION, 400 + n, rng);
		p->nfds = 1 + n % 3;
		p->hello_first = kind != 0;
		p->serial = 400 + n;
		snprintf(p->what, sizeof(p->what), "%s with %u fds",
			 kind_names[kind], p->nfds);
		/* The kernel closes them unread (test_ping_with_fds): the
		 * request is served as if it had none. */
		if (kind >= 3) {
			/* An unknown request: refused, the client stays. */
			p->expect = EXPECT_ANSWER;
		} else {
			p->expect = EXPECT_STAY;
			p->err = 0;
		}
		if (n >= 15) {
			/* Garbage with descriptors. */
			tl_buf_free(&p->b);
			tl_buf_put(&p->b, "\xff\xff\xff", 3);
			p->expect = EXPECT_FATAL;
			p->err = EBADMSG;
			p->serial = 0;
			snprintf(p->what, sizeof(p->what),
				 "garbage with %u fds", p->nfds);
		}
		return 1;
	}
	n -= 20;
	/* Zero-length packets, some with descriptors: recv(2) cannot tell
	 * one from the end of the stream, which it is taken for. */
	if (n < 10) {
		p->hello_first = n % 2;
		p->nfds = n >= 6 ? 1 + n % 3 : 0;
		p->expect = EXPECT_EOF;
		snprintf(p->what, sizeof(p->what), "zero-length, %u fds",
			 p->nfds);
		return 1;
	}
	n -= 10;
	if (n < ODD_PACKETS) {
		odd_packet(n, p, rng);
		return 1;
	}
	return 0;
}

/* Send @p on a fresh connection and check what the daemon makes of it.
 * @label names the packet in failures. */
static void replay(const struct packet *p, const char *label)
{
	int fds[WIRE_MAX_FDS + 2];
	Rdmab__DaemonMessage *m = NULL;
	int fd, ret, got_err = -1;
	uint64_t got_serial = 0;

	ck_assert(p->nfds <= WIRE_MAX_FDS + 2);
	fd = raw_connect_ok();
	if (p->hello_first) {
		ret = tl_raw_hello(fd, 1);
		ck_assert_msg(ret == 0, "%s: hello: %s", label, strerror(-ret));
	}
	for (unsigned int i = 0; i < p->nfds; i++) {
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		ck_assert_int_ge(fds[i], 0);
	}
	ret = tl_raw_send(fd, p->b.p, p->b.len, fds, p->nfds, 0);
	ck_assert_msg(ret == 0, "%s: send: %s", label, strerror(-ret));
	for (unsigned int i = 0; i < p->nfds; i++)
		close(fds[i]);

	ret = tl_recv_msg(fd, TL_WAIT_MS, &m);
	/* A peer that closed on our unread packets reports ECONNRESET
	 * first; what it sent is still there. */
	if (ret == -ECONNRESET)
		ret = tl_recv_msg(fd, TL_WAIT_MS, &m);
	ck_assert_msg(ret != -ETIMEDOUT, "%s: no answer within %d ms", label,
		      TL_WAIT_MS);
	ck_assert_msg(ret >= 0, "%s: receive: %s", label, strerror(-ret));
	/* Every packet but an empty one is answered. */
	if (p->expect != EXPECT_EOF)
		ck_assert_msg(ret == 1, "%s: disconnected without a reply",
			      label);
	if (ret == 1) {
		ck_assert_msg(m->kind_case == RDMAB__DAEMON_MESSAGE__KIND_REPLY,
			      "%s: not a reply", label);
		got_err = m->reply->error;
		got_serial = m->reply->serial;
		rdmab__daemon_message__free_unpacked(m, NULL);
	}

	switch (p->expect) {
	case EXPECT_ANSWER:
		break;
	case EXPECT_EOF:
		ck_assert_msg(ret == 0,
			      "%s: a reply (error %d) where none "
			      "was expected",
			      label, got_err);
		break;
	case EXPECT_FATAL:
	case EXPECT_STAY:
		ck_assert_msg(ret == 1, "%s: disconnected without a reply",
			      label);
		ck_assert_msg(got_err == p->err,
			      "%s: error %d (%s), expected %d (%s)", label,
			      got_err, strerror(got_err), p->err,
			      strerror(p->err));
		ck_assert_msg(got_serial == p->serial,
			      "%s: reply to serial %llu, expected %llu", label,
			      (unsigned long long)got_serial,
			      (unsigned long long)p->serial);
		break;
	}
	if (p->expect == EXPECT_FATAL) {
		ret = tl_wait_eof(fd, TL_WAIT_MS);
		ck_assert_msg(ret == 0, "%s: still connected (%s)", label,
			      strerror(-ret));
	} else if (p->expect == EXPECT_STAY) {
		ret = tl_raw_ping(fd, 77, "stay", 4);
		ck_assert_msg(ret == 0, "%s: the connection broke: %s", label,
			      strerror(-ret));
	}
	close(fd);
	assert_serving(label);
}

#define CORPUS_SEED 0x5eed2a11c0ffeeULL

START_TEST(test_corpus_generated)
{
	struct packet p = { 0 };
	struct tl_rng rng;
	unsigned int i;

	daemon_up(NULL);
	tl_rng_seed(&rng, CORPUS_SEED);
	for (i = 0; corpus_packet(i, &p, &rng); i++) {
		char label[128];

		snprintf(label, sizeof(label), "packet %u (%s)", i, p.what);
		replay(&p, label);
	}
	packet_reset(&p);
	ck_assert_uint_ge(i, 200);
	assert_settled();
}
END_TEST

static const char *corpus_dir(void)
{
	const char *dir = getenv("TESTS_CORPUS_DIR");

	return dir && *dir ? dir : "../tests/corpus";
}

static int corpus_filter(const struct dirent *de)
{
	size_t n = strlen(de->d_name);

	return n > 4 && strcmp(de->d_name + n - 4, ".bin") == 0;
}

/*
 * The shipped corpus: tests/corpus/NAME.bin is one packet; ".hello." in
 * the name sends a hello first, ".fdsN." attaches N descriptors.
 */
START_TEST(test_corpus_files)
{
	struct dirent **names;
	int n;

	daemon_up(NULL);
	n = scandir(corpus_dir(), &names, corpus_filter, alphasort);
	ck_assert_msg(n > 0, "no packets in %s", corpus_dir());
	for (int i = 0; i < n; i++) {
		struct packet p = { 0 };
		char path[1024], buf[4096];
		const char *fdsp;
		ssize_t len;
		int fd;

		snprintf(path, sizeof(path), "%s/%s", corpus_dir(),
			 names[i]->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
		while ((len = read(fd, buf, sizeof(buf))) > 0)
			tl_buf_put(&p.b, buf, (size_t)len);
		ck_assert_int_eq(len, 0);
		close(fd);
		p.hello_first = strstr(names[i]->d_name, ".hello.") != NULL;
		fdsp = strstr(names[i]->d_name, ".fds");
		if (fdsp)
			p.nfds = (unsigned int)atoi(fdsp + 4);
		p.expect = p.b.len ? EXPECT_ANSWER : EXPECT_EOF;
		replay(&p, names[i]->d_name);
		packet_reset(&p);
		free(names[i]);
	}
	free(names);
	assert_settled();
}
END_TEST

/* --- limits, shutdown, the socket --------------------------------------- */

START_TEST(test_max_clients)
{
	static const char *const args[] = { "--max-clients", "4", NULL };
	struct ibc_client *cl[4], *extra = NULL;
	int ret = 0;

	daemon_up(args);
	/* The start-up checker may still count: wait until it is gone. */
	cl[0] = connect_ok();
	for (int t = 0; t < 250 && status_clients(cl[0]) != 1; t++)
		tl_sleep_ms(20);
	ck_assert_uint_eq(status_clients(cl[0]), 1);
	for (int i = 1; i < 4; i++)
		cl[i] = connect_ok();
	for (int round = 0; round < 3; round++) {
		ret = tl_connect(D.sock, TL_WAIT_MS, &extra);
		ck_assert_msg(ret == -EUSERS,
			      "round %d: the fifth client got %d (%s): %s",
			      round, ret, strerror(-ret), ibc_last_error());
		ck_assert_msg(strstr(ibc_last_error(), "at most 4"),
			      "the error does not name the limit: \"%s\"",
			      ibc_last_error());
	}
	ck_assert_uint_eq(status_clients(cl[0]), 4);
	/* A place frees up. */
	ibc_disconnect(cl[3]);
	for (int t = 0; t < 100; t++) {
		ret = tl_connect(D.sock, TL_WAIT_MS, &extra);
		if (ret == 0)
			break;
		tl_sleep_ms(20);
	}
	ck_assert_msg(ret == 0, "no room after a disconnect: %s",
		      ibc_last_error());
	ck_assert_int_eq(ibc_ping(extra, "in", 2), 0);
	ibc_disconnect(extra);
	for (int i = 0; i < 3; i++)
		ibc_disconnect(cl[i]);
	assert_settled();
}
END_TEST

struct events_seen {
	int n;
	enum ibc_event_type type[8];
	char message[8][128];
};

static void record_event(struct ibc_client *client, const struct ibc_event *ev,
			 void *arg)
{
	struct events_seen *seen = arg;

	if (seen->n < 8) {
		seen->type[seen->n] = ev->type;
		snprintf(seen->message[seen->n], sizeof(seen->message[0]), "%s",
			 ev->message ? ev->message : "");
	}
	seen->n++;
}

static const int stop_signals[] = { SIGTERM, SIGINT };

START_TEST(test_shutdown_signal)
{
	int sig = stop_signals[_i];
	struct events_seen seen = { 0 };
	struct ibc_connect_attr attr = {
		.comp_mask =
			IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_EVENT_CB,
		.event_cb = record_event,
		.event_arg = &seen,
	};
	struct ibc_client *cl;
	struct pollfd p;
	struct stat st;
	int status, ret;

	daemon_up(NULL);
	attr.socket_path = D.sock;
	ck_assert_int_eq(ibc_connect(&attr, &cl), 0);
	ck_assert_int_eq(ibc_ping(cl, "before", 6), 0);
	ck_assert_int_eq(ibc_dispatch(cl), 0);
	ck_assert_int_eq(seen.n, 0);

	ck_assert_int_eq(kill(D.pid, sig), 0);
	p = (struct pollfd){ .fd = ibc_get_fd(cl), .events = POLLIN };
	ck_assert_int_eq(poll(&p, 1, TL_WAIT_MS), 1);
	ret = ibc_dispatch(cl);
	ck_assert_int_ge(ret, 1);
	ck_assert_int_ge(seen.n, 1);
	ck_assert_int_eq(seen.type[0], IBC_EVENT_SHUTDOWN);
	ck_assert_msg(
		strstr(seen.message[0], sig == SIGTERM ? "SIGTERM" : "SIGINT"),
		"shutdown reason: \"%s\"", seen.message[0]);

	ck_assert_int_ge(tl_wait_pid(D.pid, TL_WAIT_MS, &status), 0);
	D.reaped = true;
	D.status = status;
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the daemon's wait status is 0x%x", status);
	ck_assert_msg(lstat(D.sock, &st) < 0 && errno == ENOENT,
		      "the daemon left its socket behind");

	/* The client knows the broker is gone. */
	ck_assert_int_lt(ibc_ping(cl, "after", 5), 0);
	ibc_disconnect(cl);
}
END_TEST

static int wait_exit_code(pid_t pid)
{
	int status = 0;

	ck_assert_msg(tl_wait_pid(pid, TL_WAIT_MS, &status) >= 0,
		      "the second daemon did not exit");
	ck_assert_msg(WIFEXITED(status), "wait status 0x%x", status);
	return WEXITSTATUS(status);
}

START_TEST(test_live_socket_not_stolen)
{
	struct stat before, after;
	pid_t second;
	char *dir;

	daemon_up(NULL);
	ck_assert_int_eq(lstat(D.sock, &before), 0);
	dir = tl_mkdtemp();
	ck_assert_ptr_nonnull(dir);
	second = tl_daemon_spawn(dir, D.sock, NULL);
	ck_assert_int_gt(second, 0);
	ck_assert_int_eq(wait_exit_code(second), 1);
	tl_rmtree(dir);
	free(dir);

	/* The first one still owns the very same socket. */
	ck_assert_int_eq(lstat(D.sock, &after), 0);
	ck_assert(S_ISSOCK(after.st_mode));
	ck_assert_uint_eq(before.st_ino, after.st_ino);
	assert_serving("a second daemon");
	assert_settled();
}
END_TEST

START_TEST(test_stale_socket_replaced)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct tl_daemon d2 = { .pid = -1, .baseline_fds = -1 };
	struct ibc_client *cl;
	struct stat st;
	int fd, status;

	d2.dir = tl_mkdtemp();
	ck_assert_ptr_nonnull(d2.dir);
	snprintf(d2.sock, sizeof(d2.sock), "%s/sock", d2.dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d2.sock);
	/* A socket file nobody listens on any more. */
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	ck_assert_int_eq(lstat(d2.sock, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	ck_assert_int_eq(tl_raw_connect(d2.sock), -ECONNREFUSED);

	d2.pid = tl_daemon_spawn(d2.dir, d2.sock, NULL);
	ck_assert_int_gt(d2.pid, 0);
	ck_assert_int_eq(tl_wait_socket(d2.pid, d2.sock, 10000), 0);
	ck_assert_int_eq(tl_connect(d2.sock, TL_WAIT_MS, &cl), 0);
	ck_assert_int_eq(ibc_ping(cl, "fresh", 5), 0);
	ibc_disconnect(cl);

	status = tl_daemon_stop(&d2);
	ck_assert_msg(status >= 0 && WIFEXITED(status) &&
			      WEXITSTATUS(status) == 0,
		      "wait status 0x%x", status);
}
END_TEST

START_TEST(test_not_a_socket)
{
	char *dir = tl_mkdtemp(), path[256], buf[16] = { 0 };
	pid_t pid;
	int fd;

	ck_assert_ptr_nonnull(dir);
	snprintf(path, sizeof(path), "%s/sock", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "precious", 8), 8);
	close(fd);

	pid = tl_daemon_spawn(dir, path, NULL);
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(wait_exit_code(pid), 1);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, buf, sizeof(buf)), 8);
	ck_assert_str_eq(buf, "precious");
	close(fd);
	tl_rmtree(dir);
	free(dir);
}
END_TEST

static Suite *daemon_suite(void)
{
	Suite *s = suite_create("daemon");
	TCase *tc;

	tc = tcase_create("clients");
	tcase_add_checked_fixture(tc, NULL, daemon_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_100_clients);
	tcase_add_test(tc, test_client_processes);
	tcase_add_loop_test(tc, test_sigkill_mid_request, 0, KILL_SCENARIOS);
	tcase_add_test(tc, test_client_exit_with_socket_copy);
	suite_add_tcase(s, tc);

	tc = tcase_create("protocol");
	tcase_add_checked_fixture(tc, NULL, daemon_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_unknown_body);
	tcase_add_test(tc, test_request_before_hello);
	tcase_add_test(tc, test_wrong_version);
	tcase_add_loop_test(tc, test_ping_with_fds, 0,
			    sizeof(ping_nfds) / sizeof(ping_nfds[0]));
	tcase_add_loop_test(tc, test_read_on_pipelined, 0,
			    sizeof(read_on_modes) / sizeof(read_on_modes[0]));
	tcase_add_loop_test(tc, test_read_on_hangup, 0,
			    sizeof(read_on_modes) / sizeof(read_on_modes[0]));
	tcase_add_test(tc, test_read_on_bad_value);
	suite_add_tcase(s, tc);

	tc = tcase_create("corpus");
	tcase_add_checked_fixture(tc, NULL, daemon_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_corpus_generated);
	tcase_add_test(tc, test_corpus_files);
	suite_add_tcase(s, tc);

	tc = tcase_create("lifecycle");
	tcase_add_checked_fixture(tc, NULL, daemon_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_max_clients);
	tcase_add_loop_test(tc, test_shutdown_signal, 0, 2);
	tcase_add_test(tc, test_live_socket_not_stolen);
	tcase_add_test(tc, test_stale_socket_replaced);
	tcase_add_test(tc, test_not_a_socket);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("daemon", daemon_suite());
}
