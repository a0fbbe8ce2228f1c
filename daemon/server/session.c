// SPDX-License-Identifier: MIT
/* The session family: hello, ping and the broker's status. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/text/text.h"
#include "daemon/registry/client.h"
#include "daemon/registry/core.h"
#include "daemon/server/handler.h"
#include "daemon/registry/domain-join.h"
#include "daemon/registry/domain.h"
#include "daemon/util/log.h"
#include "daemon/restart/restart.h"

/* The library version is shown to the operator (rdmabrokerctl clients)
 * and logged: printable UTF-8 only. */
static int session_check_version(const char *v, struct reply *r)
{
	size_t bad;
	uint32_t cp;

	if (!text_find_unsafe(v, &bad))
		return 0;
	if (text_utf8_decode(v + bad, strlen(v + bad), &cp) < 0)
		return reply_error(r, -EINVAL,
				   "library version string is not UTF-8: "
				   "byte %zu is 0x%02x",
				   bad, (unsigned char)v[bad]);
	return reply_error(r, -EINVAL,
			   "library version string holds the control "
			   "character U+%04X at byte %zu",
			   (unsigned int)cp, bad);
}

/* Equal in time independent of where they differ. */
static bool session_secret_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
	volatile uint8_t diff = 0;

	for (size_t i = 0; i < n; i++)
		diff |= a[i] ^ b[i];
	return diff == 0;
}

/*
 * A forked child names its parent's session and proves it with the secret
 * that session got in its hello reply. The link is for display and
 * accounting only, so a mismatch is not an error: the child connects
 * without a link, and learns nothing about the id it named (a session of
 * another domain, a gone one, a wrong secret all answer parent_id 0).
 */
static void session_link_parent(struct client *c, const Rdmab__HelloRequest *hr)
{
	struct client *p;

	if (!hr->parent_id)
		return;
	for (p = c->core->ops->next(c->core, NULL); p;
	     p = c->core->ops->next(c->core, p))
		if (p->id == hr->parent_id)
			break;
	if (p && p != c && p->hello_done && p->domain == c->domain &&
	    hr->parent_secret.len == sizeof(p->secret) &&
	    session_secret_equal(hr->parent_secret.data, p->secret,
				 sizeof(p->secret)))
		c->parent_id = p->id;
	else
		log_debug("client %" PRIu64 ": no link to client %" PRIu64
			  ": no such session of its domain, or a wrong "
			  "secret",
			  c->id, hr->parent_id);
}

int h_session_hello(struct client *c, const Rdmab__Request *req,
		    struct wire_fds *fds, struct reply *r)
{
	const Rdmab__HelloRequest *hr = req->hello;
	struct core *core = c->core;
	Rdmab__HelloReply *out;
	Rdmab__DeviceInfo *devs, **devp;
	Rdmab__DeviceCaps *caps;
	char version[LOG_ESCAPED_SIZE(c->library_version)];
	ssize_t n;
	int ret;

	if (c->hello_done)
		return reply_error(r, -EALREADY, "hello was already sent");
	if (hr->fork_state > RDMAB__FORK_STATE__FORK_UNNEEDED)
		return reply_error(r, -EINVAL, "fork state %d is not valid",
				   (int)hr->fork_state);
	if (strlen(hr->library_version) >= sizeof(c->library_version))
		return reply_error(r, -EINVAL,
				   "library version string is longer than "
				   "%zu bytes",
				   sizeof(c->library_version) - 1);
	ret = session_check_version(hr->library_version, r);
	if (ret < 0)
		return ret;
	/* An administrator is served all the same: rdmabrokerctl must
	 * still see why the store is full. */
	if (c->store_err < 0 && !policy_is_admin(core, c))
		return reply_error(r, c->store_err,
				   "the broker cannot keep this connection in "
				   "its fd store (%s): a restart of the broker "
				   "would end the session; try again later, "
				   "or see rdmabrokerd(8) RESTART",
				   strerror(-c->store_err));
	if (hr->parent_secret.len > sizeof(c->secret))
		return reply_error(r, -EINVAL,
				   "parent secret of %zu bytes: a session's "
				   "is %zu",
				   hr->parent_secret.len, sizeof(c->secret));
	/* Before the domain is joined: nothing to undo when it fails.
	 * Never blocking: early in boot the pool may not be ready, and
	 * one wait would stall every client of the daemon. */
	errno = 0;
	n = getrandom(c->secret, sizeof(c->secret), GRND_NONBLOCK);
	if (n < 0 && errno == EAGAIN)
		return reply_error(r, -EAGAIN,
				   "the kernel's random pool is not ready yet "
				   "(early boot): try again");
	if (n != (ssize_t)sizeof(c->secret))
		return reply_error(r, n < 0 ? -errno : -EIO,
				   "cannot draw the session's secret: %s",
				   n < 0 ? strerror(errno) : "short read");
	out = reply_alloc(r, sizeof(*out));
	devs = reply_alloc(r, sizeof(*devs) * (core->devices.n + 1));
	devp = reply_alloc(r, sizeof(*devp) * (core->devices.n + 1));
	caps = reply_alloc(r, sizeof(*caps) * (core->devices.n + 1));
	if (!out || !devs || !devp || !caps)
		return reply_error(r, -ENOMEM, "out of memory");
	ret = domain_join(core, c, hr->domain, hr->private_domain, &r->why);
	if (ret < 0)
		return ret;
	rdmab__hello_reply__init(out);
	/* With their caps: ibc_open and ibc_query need nothing more. */
	for (size_t i = 0; i < core->devices.n; i++) {
		inspect_device_info(c, &core->devices.dev[i], &devs[i],
				    &caps[i]);
		devp[i] = &devs[i];
	}
	out->n_devices = core->devices.n;
	out->devices = devp;
	out->protocol_version = WIRE_PROTOCOL_VERSION;
	out->daemon_version = (char *)PACKAGE_VERSION;
	out->client_id = c->id;
	out->domain = c->domain->name;
	session_link_parent(c, hr);
	out->secret.data = c->secret;
	out->secret.len = sizeof(c->secret);
	out->parent_id = c->parent_id;

	core->ops->hello_done(c);
	c->client_pid = hr->pid;
	c->fork_state = (int)hr->fork_state;
	families_hello(c, hr);
	snprintf(c->library_version, sizeof(c->library_version), "%s",
		 hr->library_version);
	log_debug("client %" PRIu64 ": hello from pid %u, library %s, "
		  "domain %s",
		  c->id, hr->pid,
		  log_escape(version, sizeof(version), c->library_version),
		  c->domain->name);
	r->msg.body_case = RDMAB__REPLY__BODY_HELLO;
	r->msg.hello = out;
	return 0;
}

int h_fork_state(struct client *c, const Rdmab__Request *req,
		 struct wire_fds *fds, struct reply *r)
{
	Rdmab__ForkStateReply *out = reply_alloc(r, sizeof(*out));
	Rdmab__ForkState s = req->fork_state->fork_state;

	if (!out)
		return reply_error(r, -ENOMEM, "out of memory");
	if (s > RDMAB__FORK_STATE__FORK_UNNEEDED)
		return reply_error(r, -EINVAL, "fork state %d is not valid",
				   (int)s);
	c->fork_state = (int)s;
	rdmab__fork_state_reply__init(out);
	r->msg.body_case = RDMAB__REPLY__BODY_FORK_STATE;
	r->msg.fork_state = out;
	return 0;
}

int h_session_ping(struct client *c, const Rdmab__Request *req,
		   struct wire_fds *fds, struct reply *r)
{
	/* The echo carries more framing than the request: keep it inside
	 * a packet. */
	if (req->ping.len > WIRE_MAX_PACKET - 64)
		return reply_error(r, -EMSGSIZE,
				   "a ping of %zu bytes cannot be echoed in "
				   "one packet",
				   req->ping.len);
	/* Borrowed from the request, which outlives the packing. */
	r->msg.body_case = RDMAB__REPLY__BODY_PING;
	r->msg.ping = req->ping;
	return 0;
}

/*
 * The daemon's figures for an administrator; anyone else gets those of its
 * own domain, since how many clients other domains have and how busy they
 * are is theirs to know.
 */
int h_status_get(struct client *c, const Rdmab__Request *req,
		 struct wire_fds *fds, struct reply *r)
{
	struct core *core = c->core;
	Rdmab__StatusReply *out = reply_alloc(r, sizeof(*out));
	struct core_status st;

	if (!out)
		return reply_error(r, -ENOMEM, "out of memory");
	rdmab__status_reply__init(out);
	out->daemon_version = (char *)PACKAGE_VERSION;
	out->protocol_version = WIRE_PROTOCOL_VERSION;
	core->ops->status(core, &st);
	out->uptime_usec = st.uptime_usec;
	out->device_kind = (char *)device_kind_name(core->devices.kind);
	/* This request counts: it is being served. */
	if (policy_is_admin(core, c)) {
		out->clients = st.clients;
		out->max_clients = st.max_clients;
		out->requests_served = core->requests_served + 1;
	} else {
		out->clients = c->domain->used.clients;
		out->max_clients = c->domain->limit.clients;
		out->requests_served = c->domain->requests + 1;
		out->domain = c->domain->name;
	}
	out->pid = (uint32_t)getpid();
	out->last_restore = reply_alloc(r, RESTART_STATUS_MAX);
	if (!out->last_restore)
		return reply_error(r, -ENOMEM, "out of memory");
	restart_status(core, policy_is_admin(core, c), &out->generation,
		       &out->restarts, &out->last_restore_usec,
		       out->last_restore, RESTART_STATUS_MAX);
	out->journal = reply_alloc(r, RESTART_STATUS_MAX);
	if (!out->journal)
		return reply_error(r, -ENOMEM, "out of memory");
	(void)restart_journal_status(core, out->journal, RESTART_STATUS_MAX);
	r->msg.body_case = RDMAB__REPLY__BODY_STATUS;
	r->msg.status = out;
	return 0;
}
