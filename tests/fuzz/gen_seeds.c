// SPDX-License-Identifier: MIT
/*
 * Writes the fuzzers' seeds, made from valid sessions, into
 * OUTDIR/request/seed-* and OUTDIR/dispatch/seed-*:
 *
 *   gen_seeds OUTDIR
 *
 * make fuzz-seeds runs it on tests/fuzz/corpus; make check runs it on a
 * temporary directory and compares (tests/fuzz/seeds.sh), so the committed
 * seeds are always what this program writes.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz.h"
#include "tests/testlib.h"

static const char *outdir;
static int failed;

static void write_seed(const char *target, const char *name,
		       const struct tl_buf *b)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, target);
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "gen_seeds: %s: %s\n", path, strerror(errno));
		failed = 1;
		return;
	}
	snprintf(path, sizeof(path), "%s/%s/seed-%s", outdir, target, name);
	f = fopen(path, "wbe");
	if (!f || fwrite(b->p, 1, b->len, f) != b->len || fclose(f) != 0) {
		fprintf(stderr, "gen_seeds: %s: %s\n", path, strerror(errno));
		failed = 1;
	}
}

/* A seed of the request target, from @b (freed). */
static void request_seed(const char *name, struct tl_buf *b)
{
	write_seed("request", name, b);
	tl_buf_free(b);
}

/* --- requests ------------------------------------------------------------ */

static uint64_t serial;

static void req_init(Rdmab__Request *req)
{
	rdmab__request__init(req);
	req->version = WIRE_PROTOCOL_VERSION;
	req->serial = ++serial;
}

/* A request whose body (of @body_case) is @body: the members of its oneof
 * share one pointer. */
static void pk_body(struct tl_buf *b, Rdmab__Request__BodyCase body_case,
		    void *body)
{
	Rdmab__Request req;

	req_init(&req);
	req.body_case = body_case;
	req.status = body;
	tl_pb_message(b, &req.base);
}

static void pk_hello_version(struct tl_buf *b, const char *domain, bool private,
			     const char *version)
{
	Rdmab__HelloRequest hello = RDMAB__HELLO_REQUEST__INIT;

	hello.library_version = (char *)version;
	hello.pid = 4242;
	hello.fork_state = RDMAB__FORK_STATE__FORK_UNNEEDED;
	hello.domain = (char *)domain;
	hello.private_domain = private;
	pk_body(b, RDMAB__REQUEST__BODY_HELLO, &hello);
}

static void pk_hello(struct tl_buf *b, const char *domain, bool private)
{
	pk_hello_version(b, domain, private, "fuzz-seed");
}

static void pk_ping(struct tl_buf *b, const char *payload)
{
	Rdmab__Request req;

	req_init(&req);
	req.body_case = RDMAB__REQUEST__BODY_PING;
	req.ping.data = (uint8_t *)payload;
	req.ping.len = strlen(payload);
	tl_pb_message(b, &req.base);
}

static void pk_status(struct tl_buf *b)
{
	Rdmab__StatusRequest st = RDMAB__STATUS_REQUEST__INIT;

	pk_body(b, RDMAB__REQUEST__BODY_STATUS, &st);
}

static void pk_open(struct tl_buf *b, const char *device)
{
	Rdmab__OpenContextRequest oc = RDMAB__OPEN_CONTEXT_REQUEST__INIT;

	oc.device = (char *)device;
	pk_body(b, RDMAB__REQUEST__BODY_OPEN_CONTEXT, &oc);
}

static void pk_close(struct tl_buf *b, uint64_t id)
{
	Rdmab__CloseContextRequest cc = RDMAB__CLOSE_CONTEXT_REQUEST__INIT;

	cc.context_id = id;
	pk_body(b, RDMAB__REQUEST__BODY_CLOSE_CONTEXT, &cc);
}

/* @which: RDMAB__REQUEST__BODY_LIST_DEVICES, _DOMAINS or _CLIENTS. */
static void pk_list(struct tl_buf *b, int which, uint32_t offset)
{
	Rdmab__ListRequest lr = RDMAB__LIST_REQUEST__INIT;

	lr.offset = offset;
	pk_body(b, (Rdmab__Request__BodyCase)which, &lr);
}

/* A request of a newer client: field 99. */
static void pk_unknown(struct tl_buf *b)
{
	tl_pb_uint(b, 1, WIRE_PROTOCOL_VERSION);
	tl_pb_uint(b, 2, ++serial);
	tl_pb_bytes(b, 99, "newer", 5);
}

/* A status request followed by @n unknown fields of one byte each: more
 * to decode than the arena's buffer holds. */
static void pk_unknown_fields(struct tl_buf *b, unsigned int n)
{
	tl_pb_uint(b, 1, WIRE_PROTOCOL_VERSION);
	tl_pb_uint(b, 2, ++serial);
	tl_pb_bytes(b, 12, NULL, 0);
	for (unsigned int i = 0; i < n; i++)
		tl_pb_uint(b, 100 + i % 8, i % 128);
}

static void pk_version(struct tl_buf *b, uint32_t version)
{
	tl_pb_uint(b, 1, version);
	tl_pb_uint(b, 2, ++serial);
	tl_pb_bytes(b, 12, NULL, 0);
}

/* An object of @kind in context @ctx, in @mode, using the objects @uses
 * (0 for none) and with @attr (NULL: none). */
static void pk_obj_create(struct tl_buf *b, uint64_t ctx, uint32_t kind,
			  Rdmab__ObjCreateRequest__Mode mode,
			  const uint64_t *uses, size_t n_uses,
			  Rdmab__ObjAttr *attr, uint32_t handle)
{
	Rdmab__ObjCreateRequest oc = RDMAB__OBJ_CREATE_REQUEST__INIT;

	oc.context_id = ctx;
	oc.kind = kind;
	oc.mode = mode;
	oc.uses = (uint64_t *)uses;
	oc.n_uses = n_uses;
	oc.attr = attr;
	oc.handle = handle;
	pk_body(b, RDMAB__REQUEST__BODY_OBJ_CREATE, &oc);
}

static void pk_obj_register(struct tl_buf *b, uint64_t id, uint32_t handle)
{
	Rdmab__ObjRegisterRequest rr = RDMAB__OBJ_REGISTER_REQUEST__INIT;

	rr.object_id = id;
	rr.handle = handle;
	pk_body(b, RDMAB__REQUEST__BODY_OBJ_REGISTER, &rr);
}

static void pk_obj_destroy(struct tl_buf *b, uint64_t id)
{
	Rdmab__ObjDestroyRequest od = RDMAB__OBJ_DESTROY_REQUEST__INIT;

	od.object_id = id;
	pk_body(b, RDMAB__REQUEST__BODY_OBJ_DESTROY, &od);
}

static void pk_list_objects(struct tl_buf *b, uint32_t offset, uint64_t client,
			    const char *domain)
{
	Rdmab__ListObjectsRequest lo = RDMAB__LIST_OBJECTS_REQUEST__INIT;

	lo.offset = offset;
	lo.client_id = client;
	lo.domain = (char *)domain;
	pk_body(b, RDMAB__REQUEST__BODY_LIST_OBJECTS, &lo);
}

static void pk_evict(struct tl_buf *b, uint64_t client)
{
	Rdmab__EvictRequest ev = RDMAB__EVICT_REQUEST__INIT;

	ev.client_id = client;
	pk_body(b, RDMAB__REQUEST__BODY_EVICT, &ev);
}

/* --- daemon messages, for the client half of the request target ------- */

static void pk_daemon_reply(struct tl_buf *b, Rdmab__Reply *r)
{
	Rdmab__DaemonMessage msg = RDMAB__DAEMON_MESSAGE__INIT;

	msg.kind_case = RDMAB__DAEMON_MESSAGE__KIND_REPLY;
	msg.reply = r;
	tl_pb_message(b, &msg.base);
}

static void seeds_daemon_messages(void)
{
	Rdmab__DaemonMessage msg = RDMAB__DAEMON_MESSAGE__INIT;
	Rdmab__ShutdownEvent sev = RDMAB__SHUTDOWN_EVENT__INIT;
	Rdmab__Event ev = RDMAB__EVENT__INIT;
	Rdmab__DeviceCaps caps = RDMAB__DEVICE_CAPS__INIT;
	Rdmab__DeviceInfo dev = RDMAB__DEVICE_INFO__INIT, *devp = &dev;
	Rdmab__HelloReply hr = RDMAB__HELLO_REPLY__INIT;
	Rdmab__OpenContextReply oc = RDMAB__OPEN_CONTEXT_REPLY__INIT;
	Rdmab__Reply r = RDMAB__REPLY__INIT;
	struct tl_buf b = { 0 };

	caps.max_dm_size = 262144;
	caps.xrc = true;
	caps.max_rss_table_size = 65536;
	caps.ports = 1;
	caps.import = true;
	dev.name = (char *)"soft0";
	dev.kind = (char *)"soft";
	dev.transport = (char *)"software";
	dev.caps = &caps;
	hr.protocol_version = WIRE_PROTOCOL_VERSION;
	hr.daemon_version = (char *)"0.1.0";
	hr.client_id = 1;
	hr.domain = (char *)"uid-1000";
	hr.n_devices = 1;
	hr.devices = &devp;
	r.serial = 1;
	r.body_case = RDMAB__REPLY__BODY_HELLO;
	r.hello = &hr;
	pk_daemon_reply(&b, &r);
	request_seed("reply-hello", &b);

	rdmab__reply__init(&r);
	r.serial = 2;
	oc.context_id = 1;
	oc.device = (char *)"soft0";
	r.body_case = RDMAB__REPLY__BODY_OPEN_CONTEXT;
	r.open_context = &oc;
	pk_daemon_reply(&b, &r);
	request_seed("reply-open-context", &b);

	rdmab__reply__init(&r);
	r.serial = 3;
	r.error = ENOENT;
	r.message = (char *)"context 9 is not open in this session";
	pk_daemon_reply(&b, &r);
	request_seed("reply-error", &b);

	sev.reason = (char *)"SIGTERM";
	ev.body_case = RDMAB__EVENT__BODY_SHUTDOWN;
	ev.shutdown = &sev;
	msg.kind_case = RDMAB__DAEMON_MESSAGE__KIND_EVENT;
	msg.event = &ev;
	tl_pb_message(&b, &msg.base);
	request_seed("event-shutdown", &b);
}

static void seeds_requests(void)
{
	static const struct {
		const char *name;
		int which;
	} lists[] = {
		{ "list-devices", RDMAB__REQUEST__BODY_LIST_DEVICES },
		{ "list-domains", RDMAB__REQUEST__BODY_LIST_DOMAINS },
		{ "list-clients", RDMAB__REQUEST__BODY_LIST_CLIENTS },
	};
	struct tl_buf b = { 0 };

	serial = 0;
	pk_hello(&b, "", false);
	request_seed("hello", &b);
	pk_hello(&b, "fz", false);
	request_seed("hello-domain", &b);
	pk_hello(&b, "", true);
	request_seed("hello-private", &b);
	pk_ping(&b, "fuzz");
	request_seed("ping", &b);
	pk_status(&b);
	request_seed("status", &b);
	pk_open(&b, "soft0");
	request_seed("open-context", &b);
	pk_close(&b, 1);
	request_seed("close-context", &b);
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		pk_list(&b, lists[i].which, (uint32_t)i);
		request_seed(lists[i].name, &b);
	}
	pk_unknown(&b);
	request_seed("unknown-body", &b);
	pk_unknown_fields(&b, 1300);
	request_seed("unknown-fields", &b);
	{
		static const uint64_t uses[] = { 1, 1, 0 };
		Rdmab__ObjAttr attr = RDMAB__OBJ_ATTR__INIT;

		attr.qp_type = 2; /* IBV_QPT_RC */
		attr.max_send_wr = attr.max_recv_wr = 16;
		attr.max_send_sge = attr.max_recv_sge = 1;
		pk_obj_create(&b, 1, 1, RDMAB__OBJ_CREATE_REQUEST__MODE__CREATE,
			      uses, 3, &attr, 0);
		request_seed("obj-create", &b);
	}
	pk_obj_register(&b, 1, 3);
	request_seed("obj-register", &b);
	pk_obj_destroy(&b, 1);
	request_seed("obj-destroy", &b);
	pk_list_objects(&b, 0, 1, "uid-0");
	request_seed("list-objects", &b);
	pk_evict(&b, 2);
	request_seed("evict", &b);
	seeds_daemon_messages();
}

/* --- sessions ------------------------------------------------------------ */

struct sess {
	struct tl_buf b;
	unsigned int records;
};

static void sess_begin(struct sess *s, uint8_t hdr)
{
	memset(s, 0, sizeof(*s));
	tl_buf_put(&s->b, &hdr, 1);
	serial = 0;
}

/* A record without a packet: the daemon reloads its configuration. */
static void sess_reload(struct sess *s)
{
	uint8_t ctl = FUZZ_CTL_RELOAD;

	if (s->records++)
		tl_buf_put(&s->b, FUZZ_SEP, FUZZ_SEP_LEN);
	tl_buf_put(&s->b, &ctl, 1);
}

/* One record: control byte @ctl and the packet in @pkt (freed). */
static void sess_add(struct sess *s, uint8_t ctl, struct tl_buf *pkt)
{
	if (s->records++)
		tl_buf_put(&s->b, FUZZ_SEP, FUZZ_SEP_LEN);
	tl_buf_put(&s->b, &ctl, 1);
	tl_buf_put(&s->b, pkt->p, pkt->len);
	tl_buf_free(pkt);
}

static void sess_write(struct sess *s, const char *name)
{
	write_seed("dispatch", name, &s->b);
	tl_buf_free(&s->b);
}

#define HDR(id0, id1) ((uint8_t)((id0) | ((id1) << 2)))
#define SLOT1 0x10

static void seeds_sessions(void)
{
	struct tl_buf p = { 0 };
	struct sess s;

	sess_begin(&s, HDR(FUZZ_ID_ROOT, FUZZ_ID_ROOT));
	pk_hello(&p, "", false);
	sess_add(&s, 0, &p);
	sess_write(&s, "hello");

	sess_begin(&s, HDR(FUZZ_ID_USER, FUZZ_ID_USER));
	pk_hello(&p, "", false);
	sess_add(&s, 0, &p);
	pk_ping(&p, "fuzz");
	sess_add(&s, 0, &p);
	pk_ping(&p, "");
	sess_add(&s, 0, &p);
	pk_status(&p);
	sess_add(&s, 0, &p);
	sess_write(&s, "ping-status");

	/* Open, open again (the same context), close twice, close one
	 * too many. */
	sess_begin(&s, HDR(FUZZ_ID_ROOT, FUZZ_ID_ROOT));
	pk_hello(&p, "", false);
	sess_add(&s, 0, &p);
	pk_open(&p, "");
	sess_add(&s, 0, &p);
	pk_open(&p, "soft0");
	sess_add(&s, 0, &p);
	pk_close(&p, 1);
	sess_add(&s, 0, &p);
	pk_close(&p, 1);
	sess_add(&s, 0, &p);
	pk_close(&p, 1);
	sess_add(&s, 0, &p);
	pk_open(&p, "mlx5_9");
	sess_add(&s, 0, &p);
	sess_write(&s, "open-close");

	/* Listings, as an administrator and not. */
	for (int admin = 0; admin < 2; admin++) {
		sess_begin(&s, admin ? HDR(FUZZ_ID_ADMIN_GROUP, FUZZ_ID_USER) :
				       HDR(FUZZ_ID_USER, FUZZ_ID_ROOT));
		pk_hello(&p, "", false);
		sess_add(&s, 0, &p);
		pk_hello(&p, "", false);
		sess_add(&s, SLOT1, &p);
		pk_open(&p, "");
		sess_add(&s, SLOT1, &p);
		pk_list(&p, RDMAB__REQUEST__BODY_LIST_DEVICES, 0);
		sess_add(&s, 0, &p);
		pk_list(&p, RDMAB__REQUEST__BODY_LIST_DEVICES, 1);
		sess_add(&s, 0, &p);
		pk_list(&p, RDMAB__REQUEST__BODY_LIST_DOMAINS, 0);
		sess_add(&s, 0, &p);
		pk_list(&p, RDMAB__REQUEST__BODY_LIST_DOMAINS, 2);
		sess_add(&s, 0, &p);
		pk_list(&p, RDMAB__REQUEST__BODY_LIST_CLIENTS, 0);
		sess_add(&s, 0, &p);
		pk_list(&p, RDMAB__REQUEST__BODY_LIST_CLIENTS, 1);
		sess_add(&s, 0, &p);
		sess_write(&s, admin ? "lists-admin" : "lists-user");
	}

	/* Two clients of one domain share its context; the first goes
	 * away holding it. */
	sess_begin(&s, HDR(FUZZ_ID_ROOT, FUZZ_ID_ROOT));
	pk_hello(&p, "", false);
	sess_add(&s, 0, &p);
	pk_open(&p, "");
	sess_add(&s, 0, &p);
	pk_hello(&p, "", false);
	sess_add(&s, SLOT1, &p);
	pk_open(&p, "");
	sess_add(&s, SLOT1, &p);
	pk_list(&p, RDMAB__REQUEST__BODY_LIST_DOMAINS, 0);
	sess_add(&s, FUZZ_CTL_CLOSE, &p);
	pk_close(&p, 1);
	sess_add(&s, SLOT1, &p);
	/* A new connection in slot 0. */
	pk_hello(&p, "", true);
	sess_add(&s, 0, &p);
	pk_open(&p, "");
	sess_add(&s, 0, &p);
	sess_write(&s, "shared-context");

	/* Domains: configured, refused, another uid's, missing, private,
	 * private and named, and the quotas of fz2. */
	sess_begin(&s, HDR(FUZZ_ID_USER, FUZZ_ID_ADMIN_GROUP));
	pk_hello(&p, "fz", false);
	sess_add(&s, 0, &p);
	pk_open(&p, "");
	sess_add(&s, 0, &p);
	pk_hello(&p, "fz", false);
	sess_add(&s, SLOT1, &p);
	sess_write(&s, "domain-configured");

	sess_begin(&s, HDR(FUZZ_ID_ROOT, FUZZ_ID_USER));
	pk_hello(&p, "uid-5", false);
	sess_add(&s, 0, &p);
	pk_hello(&p, "nope", false);
	sess_add(&s, 0, &p);
	pk_hello(&p, "fz", true);
	sess_add(&s, 0, &p);
	pk_hello(&p, "", true);
	sess_add(&s, SLOT1, &p);
	pk_open(&p, "");
	sess_add(&s, SLOT1, &p);
	sess_write(&s, "domain-refused");

	sess_begin(&s, HDR(FUZZ_ID_GROUP_MEMBER, FUZZ_ID_GROUP_MEMBER));
	pk_hello(&p, "", false);
	sess_add(&s, 0, &p);
	pk_open(&p, "");
	sess_add(&s, 0, &p);
	pk_hello(&p, "fz2", false);
	sess_add(&s, SLOT1, &p);
	sess_write(&s, "domain-quota");

	/* Reloads under clients: fz retired while a member holds its
	 * context, fz3 joined, then retired in turn; quotas and the admin
	 * group change; then retirements of domains nobody is in. */
	sess_begin(&s, HDR(FUZZ_ID_USER, FUZZ_ID_USER));
	pk_hello(&p, "", false);
	sess_add(&s, 0, &p);
	pk_open(&p, "");
	sess_add(&s, 0, &p);
	sess_reload(&s);
	pk_list(&p, RDMAB__REQUEST__BODY_LIST_DOMAINS, 0);
	sess_add(&s, 0, &p);
	pk_hello(&p, "", false);
	sess_add(&s, SLOT1, &p);
	pk_open(&p, "");
	sess_add(&s, SLOT1, &p);
	pk_hello(&p, "fz", false);
	sess_add(&s, FUZZ_CTL_CLOSE, &p);
	sess_reload(&s);
	pk_close(&p, 2);
	sess_add(&s, SLOT1, &p);
	pk_list(&p, RDMAB__REQUEST__BODY_LIST_DOMAINS, 0);
	sess_add(&s, SLOT1 | FUZZ_CTL_CLOSE, &p);
	/* Without members: fz goes at once, and fz3 at the end. */
	sess_reload(&s);
	sess_write(&s, "reload");

	/* Protocol errors that end the session. */
	sess_begin(&s, HDR(FUZZ_ID_ROOT, FUZZ_ID_ROOT));
	pk_ping(&p, "early");
	sess_add(&s, 0, &p);
	pk_version(&p, 2);
	sess_add(&s, SLOT1, &p);
	sess_write(&s, "before-hello");

	sess_begin(&s, HDR(FUZZ_ID_ROOT, FUZZ_ID_USER));
	pk_hello(&p, "", false);
	sess_add(&s, 0, &p);
	pk_hello(&p, "", false);
	sess_add(&s, 0, &p);
	pk_unknown(&p);
	sess_add(&s, 0, &p);
	pk_ping(&p, "with descriptors");
	sess_add(&s, 2, &p);
	pk_hello(&p, "", false);
	sess_add(&s, SLOT1 | 1, &p);
	sess_write(&s, "with-fds");

	/* Library versions: the longest allowed, one byte too long; a
	 * request with more unknown fields than the arena's buffer holds. */
	sess_begin(&s, HDR(FUZZ_ID_USER, FUZZ_ID_ROOT));
	pk_hello_version(&p, "", false, "1234567890123456789012345678901");
	sess_add(&s, 0, &p);
	pk_hello_version(&p, "", false, "12345678901234567890123456789012");
	sess_add(&s, SLOT1, &p);
	pk_unknown_fields(&p, 1300);
	sess_add(&s, 0, &p);
	sess_write(&s, "hello-limits");

	/* Replies left unread: they queue in the daemon, contexts' fds
	 * with them, until the client reads or goes away. */
	sess_begin(&s, HDR(FUZZ_ID_ROOT, FUZZ_ID_ROOT) | FUZZ_HDR_SMALL_SNDBUF);
	pk_hello(&p, "", false);
	sess_add(&s, 0, &p);
	for (int i = 0; i < 24; i++) {
		pk_open(&p, "");
		sess_add(&s, FUZZ_CTL_NO_READ, &p);
	}
	pk_ping(&p, "last");
	sess_add(&s, FUZZ_CTL_NO_READ | FUZZ_CTL_CLOSE, &p);
	/* A batch: the daemon finds three packets at once. */
	for (int i = 0; i < 3; i++) {
		pk_hello(&p, "", false);
		sess_add(&s, FUZZ_CTL_BATCH, &p);
	}
	pk_hello(&p, "", false);
	sess_add(&s, SLOT1, &p);
	for (int i = 0; i < 24; i++) {
		pk_ping(&p, "unread unread unread unread unread unread");
		sess_add(&s, SLOT1 | FUZZ_CTL_NO_READ, &p);
	}
	pk_status(&p);
	sess_add(&s, SLOT1, &p);
	sess_write(&s, "unread");
}

/*
 * The object registry on the soft device, which is the broker's to make:
 * every kind with its uses, EBUSY, the domain's objects quota (4 with the
 * context's PD), the kernel's errors, the verbs modes soft refuses, and a
 * session that ends holding objects (they stay, detached, until
 * fuzz_dispatch's process "dies" at the end of the input).
 */
static void seeds_objects(void)
{
	static const uint64_t qp_uses[] = { 1, 1, 0 }, wq_uses[] = { 4 };
	static const uint64_t bad_uses[] = { 99 };
	Rdmab__ObjAttr cq = RDMAB__OBJ_ATTR__INIT, qp = RDMAB__OBJ_ATTR__INIT;
	Rdmab__ObjAttr srq = RDMAB__OBJ_ATTR__INIT, wq = RDMAB__OBJ_ATTR__INIT;
	Rdmab__ObjAttr mr = RDMAB__OBJ_ATTR__INIT;
	const Rdmab__ObjCreateRequest__Mode create =
		RDMAB__OBJ_CREATE_REQUEST__MODE__CREATE;
	struct tl_buf p = { 0 };
	struct sess s;

	cq.cqe = 63;
	qp.qp_type = 2; /* IBV_QPT_RC */
	qp.max_send_wr = qp.max_recv_wr = 16;
	qp.max_send_sge = qp.max_recv_sge = 1;
	srq.max_wr = 32;
	srq.max_sge = 1;
	wq.max_wr = 16;
	wq.max_sge = 1;
	mr.mr_addr = 0x10000;
	mr.mr_length = 4096;
	mr.mr_access = 1; /* IBV_ACCESS_LOCAL_WRITE */

	/* Objects 1 (CQ) and 2 (QP on it); the CQ is busy; listed; both
	 * destroyed; then SRQ 3, CQ 4, WQ 5 on it (the quota is full), an
	 * MR over it; the SRQ goes and the MR (6) comes; the session ends
	 * holding CQ, WQ and MR. */
	sess_begin(&s, HDR(FUZZ_ID_ROOT, FUZZ_ID_ROOT));
	pk_hello(&p, "", false);
	sess_add(&s, 0, &p);
	pk_open(&p, "");
	sess_add(&s, 0, &p);
	pk_obj_create(&p, 1, 2, create, NULL, 0, &cq, 0);
	sess_add(&s, 0, &p);
	pk_obj_create(&p, 1, 1, create, qp_uses, 3, &qp, 0);
	sess_add(&s, 0, &p);
	pk_obj_destroy(&p, 1);
	sess_add(&s, 0, &p);
	pk_list_objects(&p, 0, 0, "");
	sess_add(&s, 0, &p);
	pk_obj_destroy(&p, 2);
	sess_add(&s, 0, &p);
	pk_obj_destroy(&p, 1);
	sess_add(&s, 0, &p);
	pk_obj_create(&p, 1, 3, create, NULL, 0, &srq, 0);
	sess_add(&s, 0, &p);
	pk_obj_create(&p, 1, 2, create, NULL, 0, &cq, 0);
	sess_add(&s, 0, &p);
	pk_obj_create(&p, 1, 4, create, wq_uses, 1, &wq, 0);
	sess_add(&s, 0, &p);
	pk_obj_create(&p, 1, 5, create, NULL, 0, &mr, 0);
	sess_add(&s, 0, &p);
	pk_obj_destroy(&p, 3);
	sess_add(&s, 0, &p);
	pk_obj_create(&p, 1, 5, create, NULL, 0, &mr, 0);
	sess_add(&s, 0, &p);
	pk_list_objects(&p, 0, 1, "uid-0");
	sess_add(&s, FUZZ_CTL_CLOSE, &p);
	sess_write(&s, "objects");

	/* What soft refuses: the verbs modes, a register, a handle of
	 * another kind's object or of none, uses of another session, a
	 * kind out of range, a context not open; a second client's
	 * listing, its evict as non-admin; the first client ends holding
	 * a CQ. */
	sess_begin(&s, HDR(FUZZ_ID_USER, FUZZ_ID_USER));
	pk_hello(&p, "", false);
	sess_add(&s, 0, &p);
	pk_open(&p, "");
	sess_add(&s, 0, &p);
	pk_obj_create(&p, 1, 2, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT, NULL,
		      0, NULL, 0);
	sess_add(&s, 0, &p);
	pk_obj_create(&p, 1, 2, RDMAB__OBJ_CREATE_REQUEST__MODE__TRACK, NULL, 0,
		      NULL, 5);
	sess_add(&s, 0, &p);
	pk_obj_create(&p, 1, 2, create, NULL, 0, &cq, 0);
	sess_add(&s, 0, &p);
	pk_obj_register(&p, 1, 7);
	sess_add(&s, 0, &p);
	pk_obj_create(&p, 1, 1, create, bad_uses, 1, &qp, 0);
	sess_add(&s, 0, &p);
	pk_obj_create(&p, 1, 13, create, NULL, 0, NULL, 0);
	sess_add(&s, 0, &p);
	pk_obj_create(&p, 9, 2, create, NULL, 0, &cq, 0);
	sess_add(&s, 0, &p);
	pk_obj_destroy(&p, 42);
	sess_add(&s, 0, &p);
	pk_hello(&p, "", false);
	sess_add(&s, SLOT1, &p);
	pk_open(&p, "");
	sess_add(&s, SLOT1, &p);
	pk_obj_create(&p, 1, 1, create, qp_uses, 3, &qp, 0);
	sess_add(&s, SLOT1, &p);
	pk_obj_destroy(&p, 1);
	sess_add(&s, SLOT1, &p);
	pk_list_objects(&p, 0, 0, "");
	sess_add(&s, SLOT1, &p);
	pk_evict(&p, 1);
	sess_add(&s, SLOT1, &p);
	pk_ping(&p, "last");
	sess_add(&s, FUZZ_CTL_CLOSE, &p);
	sess_write(&s, "objects-refused");

	/* An administrator lists every domain's objects and evicts the
	 * other client, which holds a CQ and an MR: its session ends, its
	 * objects stay detached. */
	sess_begin(&s, HDR(FUZZ_ID_USER, FUZZ_ID_ADMIN_GROUP));
	pk_hello(&p, "", false);
	sess_add(&s, 0, &p);
	pk_open(&p, "");
	sess_add(&s, 0, &p);
	pk_obj_create(&p, 1, 2, create, NULL, 0, &cq, 0);
	sess_add(&s, 0, &p);
	pk_obj_create(&p, 1, 5, create, NULL, 0, &mr, 0);
	sess_add(&s, 0, &p);
	pk_hello(&p, "", false);
	sess_add(&s, SLOT1, &p);
	pk_list_objects(&p, 0, 0, "");
	sess_add(&s, SLOT1, &p);
	pk_list_objects(&p, 1, 1, "uid-1000");
	sess_add(&s, SLOT1, &p);
	pk_evict(&p, 9);
	sess_add(&s, SLOT1, &p);
	pk_evict(&p, 1);
	sess_add(&s, SLOT1, &p);
	pk_ping(&p, "after the evict");
	sess_add(&s, 0, &p);
	pk_list_objects(&p, 0, 1, "");
	sess_add(&s, SLOT1, &p);
	sess_write(&s, "objects-evict");
}

/* --- rekey --------------------------------------------------------------- */

static void pk_rekey(struct tl_buf *b, const char *domain, bool force)
{
	Rdmab__DomainRekeyRequest dr = RDMAB__DOMAIN_REKEY_REQUEST__INIT;

	dr.domain = (char *)domain;
	dr.force = force;
	pk_body(b, RDMAB__REQUEST__BODY_DOMAIN_REKEY, &dr);
}

static void pk_evict_rekey(struct tl_buf *b, uint64_t client, bool force)
{
	Rdmab__EvictRequest ev = RDMAB__EVICT_REQUEST__INIT;

	ev.client_id = client;
	ev.rekey = true;
	ev.force = force;
	pk_body(b, RDMAB__REQUEST__BODY_EVICT, &ev);
}

/* One record of a rekey session: who sends it (@ctl: 0 or SLOT1) and
 * which request. */
struct rekey_step {
	uint8_t ctl;
	enum {
		RK_HELLO,
		RK_OPEN,
		RK_CQ,
		RK_CLOSE,
		RK_REKEY,
		RK_EVICT,
		RK_PING
	} op;
	/* RK_CQ, RK_CLOSE: the context; RK_EVICT: the client. */
	uint64_t id;
	/* RK_REKEY: the domain; RK_PING: the payload. */
	const char *text;
	bool force;
};

/* A member works on in the old context, lets go of it, opens the new
 * one; an administrator rekeys (plain, forced, a domain that does not
 * exist) and evicts the member with --rekey. */
static const struct rekey_step rekey_session[] = {
	{ 0, RK_HELLO },
	{ 0, RK_OPEN },
	{ 0, RK_CQ, .id = 1 },
	{ SLOT1, RK_HELLO },
	{ SLOT1, RK_REKEY, .text = "fz" },
	{ 0, RK_CQ, .id = 1 },
	{ 0, RK_CLOSE, .id = 1 },
	{ 0, RK_OPEN },
	{ 0, RK_CQ, .id = 2 },
	{ SLOT1, RK_REKEY, .text = "fz", .force = true },
	{ SLOT1, RK_REKEY, .text = "nosuch" },
	{ SLOT1, RK_EVICT, .id = 1 },
	{ SLOT1, RK_PING, .text = "after the rekeys" },
};

static void pk_rekey_step(struct tl_buf *b, const struct rekey_step *st)
{
	Rdmab__ObjAttr cq = RDMAB__OBJ_ATTR__INIT;

	cq.cqe = 4;
	switch (st->op) {
	case RK_HELLO:
		pk_hello(b, "", false);
		break;
	case RK_OPEN:
		pk_open(b, "");
		break;
	case RK_CQ:
		pk_obj_create(b, st->id, 2,
			      RDMAB__OBJ_CREATE_REQUEST__MODE__CREATE, NULL, 0,
			      &cq, 0);
		break;
	case RK_CLOSE:
		pk_close(b, st->id);
		break;
	case RK_REKEY:
		pk_rekey(b, st->text, st->force);
		break;
	case RK_EVICT:
		pk_evict_rekey(b, st->id, st->force);
		break;
	case RK_PING:
		pk_ping(b, st->text);
		break;
	}
}

static void seeds_rekey(void)
{
	struct tl_buf p = { 0 };
	struct sess s;

	pk_rekey(&p, "fz", true);
	request_seed("domain-rekey", &p);
	pk_evict_rekey(&p, 2, true);
	request_seed("evict-rekey", &p);

	sess_begin(&s, HDR(FUZZ_ID_USER, FUZZ_ID_ADMIN_GROUP));
	for (size_t i = 0; i < sizeof(rekey_session) / sizeof(rekey_session[0]);
	     i++) {
		pk_rekey_step(&p, &rekey_session[i]);
		sess_add(&s, rekey_session[i].ctl, &p);
	}
	sess_write(&s, "rekey");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen_seeds OUTDIR\n");
		return 2;
	}
	outdir = argv[1];
	if (mkdir(outdir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "gen_seeds: %s: %s\n", outdir, strerror(errno));
		return 1;
	}
	seeds_requests();
	seeds_sessions();
	seeds_objects();
	seeds_rekey();
	return failed;
}
