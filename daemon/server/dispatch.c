// SPDX-License-Identifier: MIT
/*
 * The request table: which handler serves which request body, with its
 * flags (hello first, administrators only, bounded reply), and the reply
 * each request gets exactly once. The only place a request body is
 * matched to code; conn.c hands it the packets (the table's ops, which
 * server.c fills).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "daemon/registry/core.h"
#include "daemon/server/conn.h"
#include "daemon/server/dispatch.h"
#include "daemon/registry/domain.h"
#include "daemon/util/log.h"
#include "daemon/server/metrics.h"
#include "daemon/restart/restart-srv.h"

static const struct handler handlers[] = {
	[RDMAB__REQUEST__BODY_HELLO] = { "hello", h_session_hello, H_BOUNDED },
	[RDMAB__REQUEST__BODY_PING] = { "ping", h_session_ping, H_SESSION },
	[RDMAB__REQUEST__BODY_STATUS] = { "status", h_status_get, H_SESSION },
	[RDMAB__REQUEST__BODY_OPEN_CONTEXT] = { "open-context", h_ctx_open,
						H_SESSION },
	[RDMAB__REQUEST__BODY_CLOSE_CONTEXT] = { "close-context", h_ctx_close,
						 H_SESSION },
	[RDMAB__REQUEST__BODY_LIST_DEVICES] = { "list-devices", h_list_devices,
						H_SESSION },
	[RDMAB__REQUEST__BODY_LIST_DOMAINS] = { "list-domains", h_list_domains,
						H_SESSION },
	[RDMAB__REQUEST__BODY_LIST_CLIENTS] = { "list-clients", h_list_clients,
						H_SESSION },
	[RDMAB__REQUEST__BODY_OBJ_CREATE] = { "obj-create", h_obj_create,
					      H_SESSION },
	[RDMAB__REQUEST__BODY_OBJ_REGISTER] = { "obj-register", h_obj_register,
						H_SESSION | H_DRAIN },
	[RDMAB__REQUEST__BODY_OBJ_DESTROY] = { "obj-destroy", h_obj_destroy,
					       H_SESSION | H_DRAIN },
	[RDMAB__REQUEST__BODY_LIST_OBJECTS] = { "list-objects", h_list_objects,
						H_SESSION },
	[RDMAB__REQUEST__BODY_EVICT] = { "evict", h_admin_evict,
					 H_SESSION | H_ADMIN },
	/* Unaccounted objects: the soft device's intent window. */
	[RDMAB__REQUEST__BODY_OBJ_KERNEL_CALL] = { "obj-kernel-call",
						   h_obj_kernel_call,
						   H_SESSION },
	/* Rekey */
	[RDMAB__REQUEST__BODY_DOMAIN_REKEY] = { "domain-rekey", h_domain_rekey,
						H_SESSION | H_ADMIN },
	/* Fork */
	[RDMAB__REQUEST__BODY_FORK_STATE] = { "fork-state", h_fork_state,
					      H_SESSION },
	/* Metrics */
	[RDMAB__REQUEST__BODY_METRICS] = { "metrics", h_metrics_get,
					   H_SESSION },
};

/* dispatch_set_test_handler(): one extra body case, for test suites. */
static unsigned int test_case;
static const struct handler *test_handler;

void dispatch_set_test_handler(unsigned int body_case, const struct handler *h)
{
	test_case = body_case;
	test_handler = h;
}

const struct handler *dispatch_lookup(unsigned int body_case)
{
	if (body_case < sizeof(handlers) / sizeof(handlers[0]) &&
	    handlers[body_case].fn)
		return &handlers[body_case];
	/* After the table: a served request does not pay for it. */
	if (test_handler && body_case == test_case)
		return test_handler;
	/* DM, XRCD, RSS: what each family serves (family.h). */
	return families_request(body_case);
}

/* One request at a time: its decoded form and its reply live here and go
 * when the reply has been sent. */
static union {
	max_align_t align;
	uint8_t buf[64 * 1024];
} dispatch_mem;
static struct wire_arena dispatch_arena;

static void reply_send(struct conn *c, struct reply *r)
{
	if (r->msg.error) {
		r->msg.message = r->why.text;
		/* A failed request sends no body and no descriptor. */
		r->msg.body_case = RDMAB__REPLY__BODY__NOT_SET;
		r->nfds = 0;
	}
	/* An error reply is a serial, a number and a short sentence. */
	if (conn_send(c, &r->msg.base, RDMAB__DAEMON_MESSAGE__KIND_REPLY,
		      r->bounded || r->msg.error, r->fds, r->nfds) < 0)
		conn_set_closing(c);
}

void dispatch_error(struct conn *c, uint64_t serial, int err,
		    const char *message)
{
	struct reply r = { .msg = RDMAB__REPLY__INIT };

	r.msg.serial = serial;
	r.msg.error = err;
	r.bounded = true;
	snprintf(r.why.text, sizeof(r.why.text), "%s", message);
	reply_send(c, &r);
}

/* Run the handler; a negative return is the error to reply with. */
static int dispatch_request(struct conn *c, const struct handler *h,
			    const Rdmab__Request *req, struct wire_fds *fds,
			    struct reply *r, bool *ret_fatal)
{
	if (req->version != WIRE_PROTOCOL_VERSION) {
		*ret_fatal = true;
		return reply_error(r, -EPROTO,
				   "protocol version %u is not supported "
				   "(the broker speaks version %u)",
				   req->version, WIRE_PROTOCOL_VERSION);
	}
	if (!h) {
		/* A newer client's request: refuse it, keep the client. */
		return reply_error(r, -EOPNOTSUPP,
				   "request type %u is not supported by "
				   "this broker (" PACKAGE_VERSION ")",
				   (unsigned int)req->body_case);
	}
	/* The socket never delivers any (conn_read_one()); what gets here
	 * is a test's or a fuzzer's. */
	if (fds->n) {
		*ret_fatal = true;
		return reply_error(r, -EPROTO,
				   "%s carries %u descriptors: no request "
				   "takes any",
				   h->name, fds->n);
	}
	r->bounded = !!(h->flags & H_BOUNDED);
	if ((h->flags & H_NEEDS_HELLO) && !c->cl.hello_done) {
		*ret_fatal = true;
		return reply_error(r, -EPROTO, "%s before hello", h->name);
	}
	/* The client knows what it asked: the sentence names no request
	 * type, which is the protocol's word, not the user's. */
	if ((h->flags & H_ADMIN) && !policy_is_admin(c->cl.core, &c->cl))
		return reply_error(r, -EPERM,
				   "only administrators may do this: uid 0 "
				   "and the broker's admin_group");
	return h->fn(&c->cl, req, fds, r);
}

bool dispatch_packet(struct conn *c, const uint8_t *buf, size_t len,
		     struct wire_fds *fds)
{
	/* Not zeroed whole: message is a string, the rest is set here. */
	struct reply r;
	/* The reply's sentence may quote the request. */
	char text[LOG_ESCAPED_SIZE(r.why.text)];
	const struct handler *h;
	Rdmab__Request *req;
	bool fatal = false;
	int ret;

	if (!dispatch_arena.buf)
		wire_arena_init_poisoned(&dispatch_arena, dispatch_mem.buf,
					 sizeof(dispatch_mem.buf),
					 WIRE_MAX_DECODED);
	/* In place, not rdmab__reply__init()'s call and copy: every
	 * request passes here. */
	r.msg = (Rdmab__Reply)RDMAB__REPLY__INIT;
	r.why.text[0] = '\0';
	r.nfds = 0;
	r.arena = &dispatch_arena;
	r.bounded = false;
	/* A ping's bytes stay in @buf, which outlives the reply. */
	req = wire_unpack_request(&dispatch_arena, len, buf);
	if (!req) {
		wire_arena_reset(&dispatch_arena);
		conn_log_drop(c, "a request that could not be decoded");
		metrics_undecodable(c->tab->metrics);
		wire_fds_close(fds);
		dispatch_error(c, 0, EBADMSG,
			       "the request could not be decoded");
		conn_close_after_flush(c);
		return false;
	}
	r.msg.serial = req->serial;
	conn_inflight_read(c, req->serial);
	h = dispatch_lookup(req->body_case);
	ret = dispatch_request(c, h, req, fds, &r, &fatal);
	if (ret >= 0)
		restart_request_done(c, req->body_case);
	/* A descriptor no field claimed is closed here. */
	wire_fds_close(fds);
	c->cl.requests++;
	c->cl.core->requests_served++;
	/* What a non-administrator's status shows. */
	if (c->cl.domain)
		c->cl.domain->requests++;
	metrics_request(c->tab->metrics, req->body_case, h != NULL,
			ret < 0 ? ret : 0);
	if (ret < 0) {
		r.msg.error = -ret;
		if (fatal)
			conn_log_drop(
				c, log_escape(text, sizeof(text), r.why.text));
	}
	reply_send(c, &r);
	conn_inflight_sent(c);
	wire_arena_reset(&dispatch_arena);
	if (!fatal && c->state < CONN_CLOSING)
		return true;
	conn_close_after_flush(c);
	return false;
}

/* --- the last packets of a session ------------------------------------- */

/* Serve @req, read after the end of @c's session, if it is H_DRAIN: its
 * reply goes nowhere. */
static void drain_one(struct conn *c, const Rdmab__Request *req,
		      struct wire_arena *arena)
{
	const struct handler *h;
	struct wire_fds none;
	struct reply r;

	if (req->version != WIRE_PROTOCOL_VERSION)
		return;
	h = dispatch_lookup(req->body_case);
	if (!h || !(h->flags & H_DRAIN))
		return;
	wire_fds_init(&none);
	rdmab__reply__init(&r.msg);
	r.why.text[0] = '\0';
	r.nfds = 0;
	r.arena = arena;
	r.bounded = false;
	h->fn(&c->cl, req, &none, &r);
}

void dispatch_drain(struct conn *c)
{
	static uint8_t buf[WIRE_MAX_PACKET];
	static union {
		max_align_t align;
		uint8_t buf[16 * 1024];
	} mem;
	struct wire_arena arena;
	unsigned int n_read = 0;

	wire_arena_init(&arena, mem.buf, sizeof(mem.buf), WIRE_MAX_DECODED);
	/* The cut: a send after this fails with EPIPE in the client. */
	if (shutdown(c->fd, SHUT_RD) < 0)
		log_debug("client %" PRIu64 ": shutdown: %s", c->cl.id,
			  strerror(errno));
	for (;;) {
		struct wire_fds fds;
		Rdmab__Request *req;
		int n = wire_recv(c->fd, buf, sizeof(buf), &fds, MSG_DONTWAIT);

		if (n == -EMSGSIZE || n == -EPROTO)
			continue;
		if (n <= 0)
			break;
		wire_fds_close(&fds);
		req = rdmab__request__unpack(&arena.allocator, (size_t)n, buf);
		if (req)
			drain_one(c, req, &arena);
		wire_arena_reset(&arena);
		n_read++;
	}
	if (n_read)
		log_debug("client %" PRIu64 ": %u requests read after the end "
			  "of its session",
			  c->cl.id, n_read);
}
