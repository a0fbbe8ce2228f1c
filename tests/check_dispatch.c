// SPDX-License-Identifier: MIT
/*
 * daemon/server/dispatch.c: the table, reply helpers, and dispatch_packet()
 * driven through a real server (server_init on a temporary socket, soft device)
 * and a connection made of a socketpair, without running the event loop
 * but for the turn that closes a connection dispatch gave up: replies are
 * flushed as they are queued.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/server/conn.h"
#include "daemon/server/dispatch.h"
#include "daemon/util/log.h"
#include "daemon/server/server.h"
#include "tests/cklib.h"
#include "tests/testlib.h"

/* --- the table and the reply helpers ----------------------------------- */

START_TEST(test_lookup_unknown)
{
	static const unsigned int unknown[] = {
		RDMAB__REQUEST__BODY__NOT_SET,
		1, /* Request.version */
		2, /* Request.serial */
		3,
		9,
		99,
		1000,
		65535,
		UINT_MAX - 1,
		UINT_MAX,
	};

	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
		ck_assert_msg(dispatch_lookup(unknown[i]) == NULL,
			      "body case %u has a handler", unknown[i]);
}
END_TEST

START_TEST(test_lookup_known)
{
	const struct handler *h;

	h = dispatch_lookup(RDMAB__REQUEST__BODY_HELLO);
	ck_assert_ptr_nonnull(h);
	ck_assert_ptr_nonnull(h->fn);
	ck_assert_str_eq(h->name, "hello");
	ck_assert_uint_eq(h->flags & H_NEEDS_HELLO, 0);

	h = dispatch_lookup(RDMAB__REQUEST__BODY_PING);
	ck_assert_ptr_nonnull(h);
	ck_assert_str_eq(h->name, "ping");
	ck_assert_uint_ne(h->flags & H_NEEDS_HELLO, 0);
	ck_assert_uint_eq(h->flags & H_ADMIN, 0);

	h = dispatch_lookup(RDMAB__REQUEST__BODY_STATUS);
	ck_assert_ptr_nonnull(h);
	ck_assert_str_eq(h->name, "status");
	ck_assert_uint_ne(h->flags & H_NEEDS_HELLO, 0);
}
END_TEST

START_TEST(test_reply_error)
{
	struct reply r = { .msg = RDMAB__REPLY__INIT };
	char longer[600];
	int ret;

	r.msg.serial = 42;
	ret = reply_error(&r, -EINVAL, "field %s is %d", "x", -3);
	ck_assert_int_eq(ret, -EINVAL);
	ck_assert_str_eq(r.why.text, "field x is -3");
	/* The sentence only: dispatch sets the error and sends. */
	ck_assert_int_eq(r.msg.error, 0);
	ck_assert_uint_eq(r.msg.serial, 42);
	ck_assert_uint_eq(r.nfds, 0);

	/* A later error replaces the sentence. */
	ck_assert_int_eq(reply_error(&r, -EPROTO, "%s", "second"), -EPROTO);
	ck_assert_str_eq(r.why.text, "second");

	/* Long sentences are cut, never overflow. */
	memset(longer, 'a', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	ck_assert_int_eq(reply_error(&r, -E2BIG, "%s", longer), -E2BIG);
	ck_assert_uint_eq(strlen(r.why.text), sizeof(r.why.text) - 1);
}
END_TEST

START_TEST(test_reply_alloc)
{
	static union {
		max_align_t align;
		uint8_t b[512];
	} mem;
	struct reply r = { .msg = RDMAB__REPLY__INIT };
	struct wire_arena a;
	unsigned char *p;

	memset(mem.b, 0xee, sizeof(mem.b));
	wire_arena_init(&a, mem.b, sizeof(mem.b), 2048);
	r.arena = &a;
	/* Zeroed, from the buffer and then from the heap. */
	for (int i = 0; i < 4; i++) {
		p = reply_alloc(&r, 200);
		ck_assert_msg(p != NULL, "allocation %d", i);
		for (int j = 0; j < 200; j++)
			ck_assert_uint_eq(p[j], 0);
		memset(p, 0x11, 200);
	}
	/* The request's memory limit holds for replies too. */
	ck_assert_ptr_null(reply_alloc(&r, 4096));
	wire_arena_reset(&a);
	ck_assert_ptr_nonnull(reply_alloc(&r, 1024));
	wire_arena_reset(&a);
}
END_TEST

/* The first message goes out, the next ones are counted until the interval
 * is over, and the first after it says how many were held back. */
START_TEST(test_log_ratelimit)
{
	struct log_ratelimit rl = { .interval_ms = 100 };
	unsigned int quiet = 99;

	ck_assert(log_ratelimit(&rl, &quiet));
	ck_assert_uint_eq(quiet, 0);
	for (int i = 0; i < 5; i++)
		ck_assert(!log_ratelimit(&rl, &quiet));
	tl_sleep_ms(150);
	ck_assert(log_ratelimit(&rl, &quiet));
	ck_assert_uint_eq(quiet, 5);
	ck_assert(!log_ratelimit(&rl, &quiet));
}
END_TEST

/* --- dispatch_packet through a real server and connection --------------- */

static struct server srv;
static char *dir;
static struct conn *conn;
static int peer = -1;
static int fds_at_start;
/* Before the connection existed: what is left once it is gone, plus our
 * end of the pair. */
static int fds_before_conn;
/* More connections of the same server, for tests of who sees what. */
#define MAX_EXTRA 4
static struct conn *extra_conn[MAX_EXTRA];
static int extra_peer[MAX_EXTRA] = { -1, -1, -1, -1 };
static size_t n_extra;

static void conn_setup(void)
{
	char sock[256], cfg[256];
	struct server_options opt = {
		.socket_path = sock,
		.runtime_dir = NULL,
		.config_path = cfg,
		.device_mode = DEVICE_MODE_SOFT,
		.socket_mode = 0600,
		.max_conns = 64,
		.outq_max = 256 * 1024,
	};
	int sv[2];

	log_max_priority = LOG_WARNING;
	dir = tl_mkdtemp();
	ck_assert_ptr_nonnull(dir);
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	snprintf(cfg, sizeof(cfg), "%s/none.conf", dir);
	opt.runtime_dir = dir;
	ck_assert_int_eq(server_init(&srv, &opt), 0);
	fds_before_conn = tl_count_fds(0);
	ck_assert_int_eq(
		socketpair(AF_UNIX,
			   SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
			   sv),
		0);
	ck_assert_int_eq(conn_new(&srv.tab, sv[0], &conn), 0);
	ck_assert_uint_eq(srv.tab.n_conns, 1);
	peer = sv[1];
	fds_at_start = tl_count_fds(0);
}

static void conn_teardown(void)
{
	dispatch_set_test_handler(0, NULL);
	server_fini(&srv);
	if (peer >= 0)
		close(peer);
	peer = -1;
	for (size_t i = 0; i < n_extra; i++) {
		close(extra_peer[i]);
		extra_peer[i] = -1;
	}
	n_extra = 0;
	tl_rmtree(dir);
	free(dir);
}

/* Feed @b to dispatch_packet with @nfds fresh descriptors (read ends of
 * pipes whose write ends are closed at once). */
static void feed(const struct tl_buf *b, unsigned int nfds)
{
	struct wire_fds fds;

	wire_fds_init(&fds);
	for (unsigned int i = 0; i < nfds; i++) {
		int p[2];

		ck_assert_int_eq(tl_pipe(p), 0);
		close(p[1]);
		fds.fd[fds.n++] = p[0];
	}
	/* A connection to be closed is closed by the loop's next turn. */
	if (!dispatch_packet(conn, b->p, b->len, &fds))
		event_base_loop(srv.core.base, EVLOOP_NONBLOCK);
}

static void feed_request(const Rdmab__Request *req, unsigned int nfds)
{
	struct tl_buf b = { 0 };

	tl_pb_message(&b, &req->base);
	feed(&b, nfds);
	tl_buf_free(&b);
}

/* The one reply dispatch sent: its error, after checking the serial. */
static int reply_error_of(uint64_t serial, char *message, size_t size)
{
	Rdmab__DaemonMessage *m;
	int ret;

	ret = tl_recv_msg(peer, 1000, &m);
	ck_assert_int_eq(ret, 1);
	ck_assert_int_eq(m->kind_case, RDMAB__DAEMON_MESSAGE__KIND_REPLY);
	ck_assert_uint_eq(m->reply->serial, serial);
	ret = m->reply->error;
	if (ret)
		ck_assert_uint_eq(m->reply->body_case,
				  RDMAB__REPLY__BODY__NOT_SET);
	if (message)
		snprintf(message, size, "%s", m->reply->message);
	rdmab__daemon_message__free_unpacked(m, NULL);
	return ret;
}

static void send_hello(uint64_t serial, unsigned int fork_state,
		       const char *library_version)
{
	Rdmab__HelloRequest hello = RDMAB__HELLO_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	hello.library_version = (char *)library_version;
	hello.pid = (uint32_t)getpid();
	hello.fork_state = (Rdmab__ForkState)fork_state;
	req.version = WIRE_PROTOCOL_VERSION;
	req.serial = serial;
	req.body_case = RDMAB__REQUEST__BODY_HELLO;
	req.hello = &hello;
	feed_request(&req, 0);
}

static void hello_ok(uint64_t serial)
{
	send_hello(serial, 0, "check");
	ck_assert_int_eq(reply_error_of(serial, NULL, 0), 0);
	ck_assert(conn->cl.hello_done);
}

static void send_ping(uint64_t serial, uint32_t version, unsigned int nfds)
{
	ProtobufCBinaryData ping = { 0 };
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	ping.data = (uint8_t *)"abc";
	ping.len = 3;
	req.version = version;
	req.serial = serial;
	req.body_case = RDMAB__REQUEST__BODY_PING;
	req.ping = ping;
	feed_request(&req, nfds);
}

static void ping_ok(uint64_t serial)
{
	send_ping(serial, WIRE_PROTOCOL_VERSION, 0);
	ck_assert_int_eq(reply_error_of(serial, NULL, 0), 0);
	ck_assert_uint_eq(srv.tab.n_conns, 1 + n_extra);
}

/* The connection is gone: the peer reads end of stream, the server
 * forgot it, and every descriptor it held is closed. */
static void assert_disconnected(void)
{
	ck_assert_uint_eq(srv.tab.n_conns, 0);
	ck_assert(TAILQ_EMPTY(&srv.tab.conns));
	ck_assert_int_eq(tl_wait_eof(peer, 1000), 0);
	/* Only our end is left: the connection's socket, its pidfd and
	 * every descriptor the request carried are closed. */
	ck_assert_int_eq(tl_count_fds(0), fds_before_conn + 1);
}

/* version 1, serial @serial, and a length-delimited field @field. */
static void unknown_body(struct tl_buf *b, uint64_t serial, uint32_t field)
{
	tl_pb_uint(b, 1, WIRE_PROTOCOL_VERSION);
	tl_pb_uint(b, 2, serial);
	tl_pb_bytes(b, field, NULL, 0);
}

START_TEST(test_unknown_body_keeps_client)
{
	struct tl_buf b = { 0 };
	char msg[256];
	uint64_t served = srv.core.requests_served;

	hello_ok(1);
	unknown_body(&b, 7, 99);
	feed(&b, 0);
	tl_buf_free(&b);
	ck_assert_int_eq(reply_error_of(7, msg, sizeof(msg)), EOPNOTSUPP);
	ck_assert_msg(strstr(msg, "not supported"), "message: %s", msg);
	ck_assert_uint_eq(srv.tab.n_conns, 1);
	ck_assert_uint_eq(srv.core.requests_served, served + 2);
	ping_ok(8);
}
END_TEST

/* A request with no body at all is an unknown body too (case 0). */
START_TEST(test_no_body)
{
	struct tl_buf b = { 0 };

	tl_pb_uint(&b, 1, WIRE_PROTOCOL_VERSION);
	tl_pb_uint(&b, 2, 5);
	feed(&b, 0);
	tl_buf_free(&b);
	ck_assert_int_eq(reply_error_of(5, NULL, 0), EOPNOTSUPP);
	ck_assert_uint_eq(srv.tab.n_conns, 1);
	hello_ok(6);
}
END_TEST

/* An unknown request carrying descriptors: refused, descriptors closed. */
START_TEST(test_unknown_body_with_fds)
{
	struct tl_buf b = { 0 };

	hello_ok(1);
	unknown_body(&b, 2, 99);
	feed(&b, 2);
	tl_buf_free(&b);
	ck_assert_int_eq(reply_error_of(2, NULL, 0), EOPNOTSUPP);
	ck_assert_int_eq(tl_count_fds(0), fds_at_start);
}
END_TEST

static const uint8_t malformed[][8] = {
	{ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }, /* bad varint */
	{ 0x08 },	      /* tag without value */
	{ 0x12, 0x05, 0x01 }, /* field 2 length past the end */
	{ 0x52, 0x7f },	      /* hello, 127 bytes promised */
	{ 0x00, 0x00 },	      /* field 0 */
	{ 0x0f },	      /* wire type 7 */
};

static const size_t malformed_len[] = { 8, 1, 3, 2, 2, 1 };

START_TEST(test_malformed_disconnects)
{
	struct tl_buf b = { 0 };
	char msg[256];

	tl_buf_put(&b, malformed[_i], malformed_len[_i]);
	feed(&b, _i % 3);
	tl_buf_free(&b);
	ck_assert_int_eq(reply_error_of(0, msg, sizeof(msg)), EBADMSG);
	ck_assert_str_ne(msg, "");
	assert_disconnected();
}
END_TEST

static const uint32_t bad_versions[] = { 0, WIRE_PROTOCOL_VERSION + 1,
					 UINT32_MAX };

START_TEST(test_wrong_version)
{
	Rdmab__HelloRequest hello = RDMAB__HELLO_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	char msg[256];

	hello.library_version = (char *)"check";
	req.version = bad_versions[_i];
	req.serial = 3;
	req.body_case = RDMAB__REQUEST__BODY_HELLO;
	req.hello = &hello;
	feed_request(&req, 0);
	ck_assert_int_eq(reply_error_of(3, msg, sizeof(msg)), EPROTO);
	ck_assert_msg(strstr(msg, "version"), "message: %s", msg);
	assert_disconnected();
}
END_TEST

START_TEST(test_wrong_version_after_hello)
{
	hello_ok(1);
	send_ping(2, WIRE_PROTOCOL_VERSION + 1, 0);
	ck_assert_int_eq(reply_error_of(2, NULL, 0), EPROTO);
	assert_disconnected();
}
END_TEST

START_TEST(test_before_hello)
{
	Rdmab__StatusRequest sr = RDMAB__STATUS_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	char msg[256];

	if (_i == 0) {
		send_ping(4, WIRE_PROTOCOL_VERSION, 0);
	} else {
		req.version = WIRE_PROTOCOL_VERSION;
		req.serial = 4;
		req.body_case = RDMAB__REQUEST__BODY_STATUS;
		req.status = &sr;
		feed_request(&req, 0);
	}
	ck_assert_int_eq(reply_error_of(4, msg, sizeof(msg)), EPROTO);
	ck_assert_msg(strstr(msg, "hello"), "message: %s", msg);
	assert_disconnected();
}
END_TEST

START_TEST(test_fds_on_ping)
{
	unsigned int nfds = 1 + (unsigned int)_i * (WIRE_MAX_FDS - 1);

	hello_ok(1);
	send_ping(2, WIRE_PROTOCOL_VERSION, nfds);
	ck_assert_int_eq(reply_error_of(2, NULL, 0), EPROTO);
	assert_disconnected();
}
END_TEST

START_TEST(test_hello_twice)
{
	hello_ok(1);
	send_hello(2, 0, "check");
	ck_assert_int_eq(reply_error_of(2, NULL, 0), EALREADY);
	ck_assert_uint_eq(srv.tab.n_conns, 1);
	ping_ok(3);
}
END_TEST

/* A hello that is refused is not fatal, but does not count as a hello. */
START_TEST(test_hello_invalid)
{
	char longer[100];

	send_hello(1, 7, "check");
	ck_assert_int_eq(reply_error_of(1, NULL, 0), EINVAL);
	ck_assert_uint_eq(srv.tab.n_conns, 1);
	ck_assert(!conn->cl.hello_done);

	memset(longer, 'v', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	send_hello(2, 0, longer);
	ck_assert_int_eq(reply_error_of(2, NULL, 0), EINVAL);
	ck_assert(!conn->cl.hello_done);

	hello_ok(3);
	ping_ok(4);
}
END_TEST

/* Every request gets exactly one reply, in order. */
START_TEST(test_one_reply_each)
{
	Rdmab__DaemonMessage *m;

	hello_ok(1);
	for (uint64_t s = 10; s < 60; s++)
		send_ping(s, WIRE_PROTOCOL_VERSION, 0);
	for (uint64_t s = 10; s < 60; s++)
		ck_assert_int_eq(reply_error_of(s, NULL, 0), 0);
	ck_assert_int_eq(tl_recv_msg(peer, 0, &m), -ETIMEDOUT);
	ck_assert_uint_eq(conn->cl.requests, 51);
}
END_TEST

/* --- the admin flag, what status and refusals tell ---------------------- */

static int admin_runs;

static int h_test_admin(struct client *c, const Rdmab__Request *req,
			struct wire_fds *fds, struct reply *r)
{
	admin_runs++;
	return 0;
}

static const struct handler admin_handler = {
	"test-admin",
	h_test_admin,
	H_NEEDS_HELLO | H_ADMIN | H_BOUNDED,
};

/* A request without a body: what the test handler serves. */
static void send_bodyless(uint64_t serial)
{
	struct tl_buf b = { 0 };

	tl_pb_uint(&b, 1, WIRE_PROTOCOL_VERSION);
	tl_pb_uint(&b, 2, serial);
	feed(&b, 0);
	tl_buf_free(&b);
}

/* The peer's credentials as the policy reads them. */
static void set_cred(struct conn *c, uid_t uid, gid_t gid, gid_t supp)
{
	c->cl.cred.uid = uid;
	c->cl.cred.gid = gid;
	c->cl.n_groups = 0;
	if (supp != (gid_t)-1) {
		c->cl.groups[0] = supp;
		c->cl.n_groups = 1;
	}
}

struct admin_case {
	const char *what;
	uid_t uid;
	gid_t gid, supp;
	bool admin_group;
	bool allowed;
};

static const struct admin_case admin_cases[] = {
	{ "uid 0", 0, 0, (gid_t)-1, false, true },
	{ "uid 0 with an admin group", 0, 0, (gid_t)-1, true, true },
	{ "a user, no admin group", 65534, 65534, (gid_t)-1, false, false },
	{ "a user outside the admin group", 65534, 65534, 4320, true, false },
	{ "the admin group as primary group", 65534, 4321, (gid_t)-1, true,
	  true },
	{ "the admin group as supplementary group", 65534, 65534, 4321, true,
	  true },
};

START_TEST(test_admin_flag)
{
	const struct admin_case *ac = &admin_cases[_i];
	char msg[256];
	int err;

	dispatch_set_test_handler(RDMAB__REQUEST__BODY__NOT_SET,
				  &admin_handler);
	hello_ok(1);
	srv.core.config.has_admin_group = ac->admin_group;
	srv.core.config.admin_gid = 4321;
	/* conn_new sized the group list for at least one entry. */
	ck_assert_ptr_nonnull(conn->cl.groups);
	set_cred(conn, ac->uid, ac->gid, ac->supp);
	admin_runs = 0;
	send_bodyless(2);
	err = reply_error_of(2, msg, sizeof(msg));
	if (ac->allowed) {
		ck_assert_msg(err == 0, "%s: refused: %s", ac->what, msg);
		ck_assert_int_eq(admin_runs, 1);
	} else {
		ck_assert_msg(err == EPERM, "%s: error %d (%s)", ac->what, err,
			      msg);
		ck_assert_msg(admin_runs == 0, "%s: the handler ran", ac->what);
		/* A sentence for people: the request's internal name is
		 * the protocol's, not theirs. */
		ck_assert_msg(!strstr(msg, "test-admin") &&
				      strstr(msg, "administrators"),
			      "the refusal names the request type: %s", msg);
	}
	/* Not a protocol error: the client stays. */
	ping_ok(3);
}
END_TEST

/* Another connection of the server, as @uid (before its hello, so that
 * it joins that uid's domain); it becomes the current one. */
static size_t add_conn(uid_t uid)
{
	int sv[2];

	ck_assert_uint_lt(n_extra, MAX_EXTRA);
	ck_assert_int_eq(
		socketpair(AF_UNIX,
			   SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
			   sv),
		0);
	ck_assert_int_eq(conn_new(&srv.tab, sv[0], &extra_conn[n_extra]), 0);
	extra_peer[n_extra] = sv[1];
	conn = extra_conn[n_extra];
	peer = extra_peer[n_extra];
	set_cred(conn, uid, uid, (gid_t)-1);
	return n_extra++;
}

/* Make connection @i current (-1: the fixture's). */
static struct conn *fixture_conn;
static int fixture_peer;

static void use_conn(int i)
{
	if (i < 0) {
		conn = fixture_conn;
		peer = fixture_peer;
	} else {
		conn = extra_conn[i];
		peer = extra_peer[i];
	}
}

static void send_status(uint64_t serial)
{
	Rdmab__StatusRequest sr = RDMAB__STATUS_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	req.version = WIRE_PROTOCOL_VERSION;
	req.serial = serial;
	req.body_case = RDMAB__REQUEST__BODY_STATUS;
	req.status = &sr;
	feed_request(&req, 0);
}

static Rdmab__DaemonMessage *reply_of(uint64_t serial)
{
	Rdmab__DaemonMessage *m;

	ck_assert_int_eq(tl_recv_msg(peer, 1000, &m), 1);
	ck_assert_int_eq(m->kind_case, RDMAB__DAEMON_MESSAGE__KIND_REPLY);
	ck_assert_uint_eq(m->reply->serial, serial);
	ck_assert_msg(m->reply->error == 0, "error %d: %s", m->reply->error,
		      m->reply->message);
	return m;
}

START_TEST(test_status_own_domain)
{
	Rdmab__DaemonMessage *m;

	fixture_conn = conn;
	fixture_peer = peer;
	/* uid 4242 and uid 4243 with one member each, and uid 0. */
	set_cred(conn, 4242, 4242, (gid_t)-1);
	hello_ok(1);
	add_conn(4243);
	hello_ok(1);
	for (uint64_t s = 2; s < 7; s++)
		ping_ok(s);
	add_conn(0);
	hello_ok(1);

	/* A user: its own domain's member and requests, this one too. */
	use_conn(-1);
	send_status(2);
	m = reply_of(2);
	ck_assert_uint_eq(m->reply->status->clients, 1);
	ck_assert_uint_eq(m->reply->status->requests_served, 2);
	ck_assert_uint_eq(m->reply->status->max_clients,
			  srv.core.config.defaults.clients);
	rdmab__daemon_message__free_unpacked(m, NULL);

	/* An administrator: the daemon's. */
	use_conn(1);
	send_status(2);
	m = reply_of(2);
	ck_assert_uint_eq(m->reply->status->clients, 3);
	ck_assert_uint_eq(m->reply->status->requests_served,
			  srv.core.requests_served);
	ck_assert_uint_eq(m->reply->status->requests_served, 10);
	ck_assert_uint_eq(m->reply->status->max_clients, srv.opt.max_conns);
	rdmab__daemon_message__free_unpacked(m, NULL);

	/* The other user sees its own, not the first one's. */
	use_conn(0);
	send_status(7);
	m = reply_of(7);
	ck_assert_uint_eq(m->reply->status->clients, 1);
	ck_assert_uint_eq(m->reply->status->requests_served, 7);
	rdmab__daemon_message__free_unpacked(m, NULL);
}
END_TEST

static uint64_t open_context_ok(uint64_t serial)
{
	Rdmab__OpenContextRequest oc = RDMAB__OPEN_CONTEXT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	uint64_t id;

	oc.device = (char *)"";
	req.version = WIRE_PROTOCOL_VERSION;
	req.serial = serial;
	req.body_case = RDMAB__REQUEST__BODY_OPEN_CONTEXT;
	req.open_context = &oc;
	feed_request(&req, 0);
	m = reply_of(serial);
	ck_assert_uint_eq(m->reply->body_case, RDMAB__REPLY__BODY_OPEN_CONTEXT);
	id = m->reply->open_context->context_id;
	rdmab__daemon_message__free_unpacked(m, NULL);
	return id;
}

static int close_context(uint64_t serial, uint64_t id, char *msg, size_t size)
{
	Rdmab__CloseContextRequest cc = RDMAB__CLOSE_CONTEXT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	cc.context_id = id;
	req.version = WIRE_PROTOCOL_VERSION;
	req.serial = serial;
	req.body_case = RDMAB__REQUEST__BODY_CLOSE_CONTEXT;
	req.close_context = &cc;
	feed_request(&req, 0);
	return reply_error_of(serial, msg, size);
}

static int hello_domain(uint64_t serial, const char *domain, bool private,
			char *msg, size_t size)
{
	Rdmab__HelloRequest hello = RDMAB__HELLO_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	int err;

	hello.library_version = (char *)"check";
	hello.domain = (char *)domain;
	hello.private_domain = private;
	req.version = WIRE_PROTOCOL_VERSION;
	req.serial = serial;
	req.body_case = RDMAB__REQUEST__BODY_HELLO;
	req.hello = &hello;
	feed_request(&req, 0);
	ck_assert_int_eq(tl_recv_msg(peer, 1000, &m), 1);
	ck_assert_uint_eq(m->reply->serial, serial);
	err = m->reply->error;
	snprintf(msg, size, "%s",
		 err ? m->reply->message : m->reply->hello->domain);
	rdmab__daemon_message__free_unpacked(m, NULL);
	return err;
}

/* @s without its digits: the sentence, whatever number it names. */
static void strip_digits(char *s)
{
	char *o = s;

	for (; *s; s++)
		if (*s < '0' || *s > '9')
			*o++ = *s;
	*o = '\0';
}

/* What other domains made at run time answers exactly like what does not
 * exist. */
START_TEST(test_other_domains_look_missing)
{
	char theirs[256], missing[256], name[64];
	uint64_t id;

	fixture_conn = conn;
	fixture_peer = peer;
	set_cred(conn, 4242, 4242, (gid_t)-1);
	hello_ok(1);
	add_conn(4243);
	hello_ok(1);
	id = open_context_ok(2);

	/* Another domain's context, and one that never was. */
	use_conn(-1);
	ck_assert_int_eq(close_context(2, id, theirs, sizeof(theirs)), ENOENT);
	ck_assert_int_eq(close_context(3, id + 1000, missing, sizeof(missing)),
			 ENOENT);
	strip_digits(theirs);
	strip_digits(missing);
	ck_assert_str_eq(theirs, missing);

	/* Another user's private domain, and one that never was. */
	add_conn(4243);
	ck_assert_int_eq(hello_domain(1, "", true, name, sizeof(name)), 0);
	ck_assert_msg(strncmp(name, "private-", 8) == 0, "domain %s", name);
	add_conn(4242);
	ck_assert_int_eq(hello_domain(1, name, false, theirs, sizeof(theirs)),
			 ENOENT);
	ck_assert_int_eq(hello_domain(2, "private-999999", false, missing,
				      sizeof(missing)),
			 ENOENT);
	strip_digits(theirs);
	strip_digits(missing);
	ck_assert_str_eq(theirs, missing);
}
END_TEST

static Suite *dispatch_suite(void)
{
	Suite *s = suite_create("dispatch");
	TCase *tc = tcase_create("table");
	size_t n;

	tcase_add_test(tc, test_lookup_unknown);
	tcase_add_test(tc, test_lookup_known);
	tcase_add_test(tc, test_reply_error);
	tcase_add_test(tc, test_reply_alloc);
	tcase_add_test(tc, test_log_ratelimit);
	suite_add_tcase(s, tc);

	tc = tcase_create("packet");
	tcase_add_checked_fixture(tc, conn_setup, conn_teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_unknown_body_keeps_client);
	tcase_add_test(tc, test_no_body);
	tcase_add_test(tc, test_unknown_body_with_fds);
	n = sizeof(malformed_len) / sizeof(malformed_len[0]);
	tcase_add_loop_test(tc, test_malformed_disconnects, 0, (int)n);
	n = sizeof(bad_versions) / sizeof(bad_versions[0]);
	tcase_add_loop_test(tc, test_wrong_version, 0, (int)n);
	tcase_add_test(tc, test_wrong_version_after_hello);
	tcase_add_loop_test(tc, test_before_hello, 0, 2);
	tcase_add_loop_test(tc, test_fds_on_ping, 0, 2);
	tcase_add_test(tc, test_hello_twice);
	tcase_add_test(tc, test_hello_invalid);
	tcase_add_test(tc, test_one_reply_each);
	n = sizeof(admin_cases) / sizeof(admin_cases[0]);
	tcase_add_loop_test(tc, test_admin_flag, 0, (int)n);
	tcase_add_test(tc, test_status_own_domain);
	tcase_add_test(tc, test_other_domains_look_missing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("dispatch", dispatch_suite());
}
