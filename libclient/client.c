// SPDX-License-Identifier: MIT
/* Connecting, the event descriptor and disconnecting. */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "libclient/client.h"
#include "libclient/ctx.h"
#include "libclient/events.h"
#include "libclient/family.h"

/* Wait for replies without a deadline by default: a timed wait arms a
 * kernel timer on every request, and a broker that hangs is killed by its
 * watchdog, which ends the connection. */
#define IBC_DEFAULT_TIMEOUT_MS 0

/* The group that may use the socket at @path, when its mode lets the
 * group connect and others not: what a user who was refused must join. */
static bool ibc_socket_group(const char *path, char *buf, size_t size)
{
	struct group gr, *res = NULL;
	char pwbuf[1024];
	struct stat st;

	if (stat(path, &st) < 0 || !(st.st_mode & S_IWGRP) ||
	    (st.st_mode & S_IWOTH))
		return false;
	if (getgrgid_r(st.st_gid, &gr, pwbuf, sizeof(pwbuf), &res) == 0 && res)
		snprintf(buf, size, "%s", res->gr_name);
	else
		snprintf(buf, size, "%u", (unsigned int)st.st_gid);
	return true;
}

/*
 * Why connecting failed and what to do about it: every application shows
 * this sentence, so it names the remedy, not only the errno.
 */
static int ibc_connect_error(int err, const char *path, int timeout_ms)
{
	static const char what[] = "cannot connect to the broker at";
	char group[64];

	switch (err) {
	case -ENOENT:
		return ibc_set_error(err,
				     "%s %s: %s; is rdmabrokerd running? "
				     "systemctl start rdmabrokerd.socket, or "
				     "set RDMABROKER_SOCKET to its socket",
				     what, path, strerror(-err));
	case -ECONNREFUSED:
		return ibc_set_error(err,
				     "%s %s: %s; rdmabrokerd has stopped: "
				     "systemctl start rdmabrokerd.socket",
				     what, path, strerror(-err));
	case -EACCES:
	case -EPERM:
		if (ibc_socket_group(path, group, sizeof(group)))
			return ibc_set_error(err,
					     "%s %s: %s; the socket is for "
					     "group %s: join it (usermod -aG "
					     "%s USER, then log in again)",
					     what, path, strerror(-err), group,
					     group);
		return ibc_set_error(err,
				     "%s %s: %s; ask the administrator for "
				     "access to the socket and the "
				     "directories above it",
				     what, path, strerror(-err));
	case -ETIMEDOUT:
		return ibc_set_error(err,
				     "%s %s: the broker did not answer within "
				     "%d ms (stopped or overloaded?)",
				     what, path, timeout_ms);
	default:
		return ibc_set_error(err, "%s %s: %s", what, path,
				     strerror(-err));
	}
}

/* Connect cl->sock (closed with @cl on failure). The socket is made
 * straight into cl->sock, under the lock the atfork handler takes, so
 * that a fork during connect() covers it in the child. */
static int ibc_open_socket(struct ibc_client *cl, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return ibc_set_error(-ENAMETOOLONG,
				     "socket path %s is too long", path);
	strcpy(sa.sun_path, path);
	pthread_mutex_lock(&cl->lock);
	cl->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	err = cl->sock < 0 ? -errno : 0;
	pthread_mutex_unlock(&cl->lock);
	if (err < 0)
		return ibc_set_error(err, "cannot create a socket: %s",
				     strerror(-err));
	/* A broker that stopped with its backlog full would hold connect()
	 * forever: the send timeout bounds it too. */
	if (cl->timeout_ms > 0) {
		struct timeval tv = {
			.tv_sec = cl->timeout_ms / 1000,
			.tv_usec = (cl->timeout_ms % 1000) * 1000,
		};

		if (setsockopt(cl->sock, SOL_SOCKET, SO_SNDTIMEO, &tv,
			       sizeof(tv)) < 0)
			return ibc_set_error(-errno,
					     "cannot set the socket's send "
					     "timeout: %s",
					     strerror(errno));
	}
	if (connect(cl->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = errno == EAGAIN || errno == EINPROGRESS ? -ETIMEDOUT :
								-errno;
		return ibc_connect_error(err, path, cl->timeout_ms);
	}
	return 0;
}

static int ibc_hello(struct ibc_client *cl, const char *domain)
{
	Rdmab__HelloRequest hello = RDMAB__HELLO_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	const Rdmab__HelloReply *hr;
	uint8_t parent_secret[sizeof(cl->secret)];
	struct ibc_reply r;
	uint64_t parent_id;
	int ret;

	/* A forked child shows its parent's session, inherited through
	 * memory (fork.c). */
	if (ibc_fork_parent(cl, &parent_id, parent_secret)) {
		hello.parent_id = parent_id;
		hello.parent_secret.data = parent_secret;
		hello.parent_secret.len = sizeof(parent_secret);
	}
	hello.library_version = (char *)PACKAGE_VERSION;
	ibc_families_hello(&hello);
	hello.pid = (uint32_t)getpid();
	hello.fork_state = (Rdmab__ForkState)ibc_fork_state();
	hello.domain = (char *)(domain ? domain : "");
	hello.private_domain = !!(cl->flags & IBC_CONNECT_PRIVATE_DOMAIN);
	req.body_case = RDMAB__REQUEST__BODY_HELLO;
	req.hello = &hello;
	ret = ibc_call(cl, &req, 0, &r);
	if (ret < 0)
		return ret;
	if (r.reply->body_case != RDMAB__REPLY__BODY_HELLO) {
		ret = ibc_set_error(-EPROTO,
				    "the broker answered hello without a "
				    "hello reply");
		goto out;
	}
	hr = r.reply->hello;
	cl->info.client_id = hr->client_id;
	cl->info.protocol_version = hr->protocol_version;
	snprintf(cl->info.daemon_version, sizeof(cl->info.daemon_version), "%s",
		 hr->daemon_version);
	snprintf(cl->info.domain, sizeof(cl->info.domain), "%s", hr->domain);
	cl->info.parent_id = hr->parent_id;
	/* Older brokers send none: such a session has no children. */
	if (hr->secret.len == sizeof(cl->secret)) {
		memcpy(cl->secret, hr->secret.data, sizeof(cl->secret));
		cl->has_secret = true;
	}
	cl->devices =
		calloc(hr->n_devices ? hr->n_devices : 1, sizeof(*cl->devices));
	if (!cl->devices) {
		ret = ibc_set_error(-ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < hr->n_devices; i++)
		ibc_device_info_from(&cl->devices[i], hr->devices[i]);
	cl->info.num_devices = (uint32_t)hr->n_devices;
out:
	ibc_reply_free(&r);
	return ret;
}

static void ibc_client_free(struct ibc_client *cl)
{
	ibc_fork_unregister(cl);
	if (cl->sock >= 0)
		close(cl->sock);
	if (cl->epoll_fd >= 0)
		close(cl->epoll_fd);
	if (cl->event_fd >= 0)
		close(cl->event_fd);
	ibc_ctx_free_all(cl);
	ibc_families_client_free(cl);
	ibc_free_events(cl);
	ibc_kept_free(cl);
	pthread_mutex_destroy(&cl->lock);
	pthread_cond_destroy(&cl->cond);
	free(cl->rbuf);
	free(cl->sbuf);
	free(cl->devices);
	free(cl);
}

static int ibc_epoll_add(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

IBC_EXPORT int ibc_connect(const struct ibc_connect_attr *attr,
			   struct ibc_client **ret_client)
{
	const char *path = getenv("RDMABROKER_SOCKET");
	struct ibc_client *cl;
	pthread_condattr_t ca;
	int ret;

	if (!ret_client)
		return ibc_set_error(-EINVAL, "ret_client is NULL");
	if (attr &&
	    (attr->comp_mask &
	     ~(uint32_t)(IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_TIMEOUT |
			 IBC_CONNECT_ATTR_FLAGS | IBC_CONNECT_ATTR_EVENT_CB |
			 IBC_CONNECT_ATTR_DOMAIN)))
		return ibc_set_error(-EOPNOTSUPP,
				     "unknown bits 0x%x in comp_mask",
				     attr->comp_mask);
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return ibc_set_error(-ENOMEM, "out of memory");
	cl->sock = cl->epoll_fd = cl->event_fd = -1;
	cl->timeout_ms = IBC_DEFAULT_TIMEOUT_MS;
	cl->events_tail = &cl->events_head;
	pthread_mutex_init(&cl->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cl->cond, &ca);
	pthread_condattr_destroy(&ca);

	if (attr && (attr->comp_mask & IBC_CONNECT_ATTR_SOCKET) &&
	    attr->socket_path)
		path = attr->socket_path;
	if (!path || !*path)
		path = IBC_DEFAULT_SOCKET;
	ibc_copy_name(cl->sock_path, sizeof(cl->sock_path), path);
	if (attr && (attr->comp_mask & IBC_CONNECT_ATTR_TIMEOUT)) {
		if (attr->timeout_ms < 0) {
			ret = ibc_set_error(-EINVAL,
					    "timeout_ms %d is negative",
					    attr->timeout_ms);
			goto fail;
		}
		cl->timeout_ms = attr->timeout_ms;
	}
	if (attr && (attr->comp_mask & IBC_CONNECT_ATTR_FLAGS)) {
		if (attr->flags & ~(uint32_t)(IBC_CONNECT_ALLOW_OWN_CONTEXT |
					      IBC_CONNECT_PRIVATE_DOMAIN)) {
			ret = ibc_set_error(-EINVAL,
					    "unknown connect flags 0x%x",
					    attr->flags);
			goto fail;
		}
		cl->flags = attr->flags;
	}
	if (attr && (attr->comp_mask & IBC_CONNECT_ATTR_DOMAIN) &&
	    attr->domain && strlen(attr->domain) >= IBC_NAME_MAX) {
		ret = ibc_set_error(-EINVAL,
				    "domain name is longer than %d bytes",
				    IBC_NAME_MAX - 1);
		goto fail;
	}
	if (attr && (attr->comp_mask & IBC_CONNECT_ATTR_EVENT_CB)) {
		cl->event_cb = attr->event_cb;
		cl->event_arg = attr->event_arg;
	}

	cl->rbuf = malloc(WIRE_MAX_PACKET);
	cl->sbuf = malloc(IBC_SBUF_SIZE);
	if (!cl->rbuf || !cl->sbuf) {
		ret = ibc_set_error(-ENOMEM, "out of memory");
		goto fail;
	}
	/* Before the socket exists: a fork from now on covers it. */
	ret = ibc_fork_register(cl);
	if (ret < 0)
		goto fail;
	ret = ibc_open_socket(cl, path);
	if (ret < 0)
		goto fail;
	if (cl->timeout_ms > 0) {
		/* A blocked reader wakes up to check its deadline. */
		struct timeval tv = {
			.tv_sec = cl->timeout_ms / 1000,
			.tv_usec = (cl->timeout_ms % 1000) * 1000,
		};

		if (setsockopt(cl->sock, SOL_SOCKET, SO_RCVTIMEO, &tv,
			       sizeof(tv)) < 0) {
			ret = ibc_set_error(-errno,
					    "cannot set the socket's receive "
					    "timeout: %s",
					    strerror(errno));
			goto fail;
		}
	}
	ibc_fork_env();
	ret = ibc_hello(cl,
			attr && (attr->comp_mask & IBC_CONNECT_ATTR_DOMAIN) ?
				attr->domain :
				NULL);
	if (ret < 0)
		goto fail;
	ibc_clear_error();
	*ret_client = cl;
	return 0;

fail:
	ibc_client_free(cl);
	return ret;
}

IBC_EXPORT void ibc_disconnect(struct ibc_client *client)
{
	if (!client)
		return;
	/* What the library made goes first: a session that ends while the
	 * process lives leaves its registered objects to its death. */
	ibc_ctx_teardown_all(client);
	ibc_client_free(client);
}

/*
 * The pollable descriptor, made on first use: a socket in an epoll set
 * costs every packet a wakeup callback, which a client that never polls
 * (ibc_dispatch() works without it) need not pay. Lock held.
 */
static int ibc_make_poll_fd(struct ibc_client *cl)
{
	uint64_t one = 1;
	int ret;

	cl->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	cl->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (cl->event_fd < 0 || cl->epoll_fd < 0) {
		ret = ibc_set_error(-errno, "cannot create descriptors: %s",
				    strerror(errno));
		goto fail;
	}
	ret = ibc_epoll_add(cl->epoll_fd, cl->sock);
	if (ret == 0)
		ret = ibc_epoll_add(cl->epoll_fd, cl->event_fd);
	if (ret < 0) {
		ibc_set_error(ret, "epoll: %s", strerror(-ret));
		goto fail;
	}
	/* Events queued before anyone polled. */
	if (cl->events_head && write(cl->event_fd, &one, sizeof(one)) < 0) {
		ret = ibc_set_error(-errno, "eventfd: %s", strerror(errno));
		goto fail;
	}
	return cl->epoll_fd;
fail:
	if (cl->epoll_fd >= 0)
		close(cl->epoll_fd);
	if (cl->event_fd >= 0)
		close(cl->event_fd);
	cl->epoll_fd = cl->event_fd = -1;
	return ret;
}

IBC_EXPORT int ibc_get_fd(struct ibc_client *client)
{
	int fd;

	if (ibc_stale(client))
		return ibc_stale_error(client);
	pthread_mutex_lock(&client->lock);
	fd = client->epoll_fd >= 0 ? client->epoll_fd :
				     ibc_make_poll_fd(client);
	pthread_mutex_unlock(&client->lock);
	return fd;
}

IBC_EXPORT int ibc_dispatch(struct ibc_client *client)
{
	int n, dead;

	/* The parent's events are the parent's. */
	if (ibc_stale(client))
		return ibc_stale_error(client);
	n = ibc_drain_events(client);

	pthread_mutex_lock(&client->lock);
	dead = client->dead;
	if (dead)
		ibc_set_error(dead, "%s", client->dead_message);
	pthread_mutex_unlock(&client->lock);
	return n == 0 && dead ? -ECONNRESET : n;
}

/* --- events ----------------------------------------------------------- */

static struct ibc_queued_event *ibc_shutdown_read(struct ibc_client *cl,
						  const Rdmab__Event *ev)
{
	return ibc_queue_event(cl, IBC_EVENT_SHUTDOWN, ev->shutdown->reason,
			       NULL);
}

const struct ibc_event_handler ibc_shutdown_event = {
	.body = RDMAB__EVENT__BODY_SHUTDOWN,
	.read = ibc_shutdown_read,
};

/* The session goes on, on the same socket; a request the old broker read
 * and never stored as in flight is lost with it: the barrier that finds
 * those (call.c) goes out once this packet is handled. Lock held. */
static struct ibc_queued_event *ibc_restarted_read(struct ibc_client *cl,
						   const Rdmab__Event *ev)
{
	cl->barrier_due = true;
	return ibc_queue_event(cl, IBC_EVENT_BROKER_RESTARTED,
			       ev->restarted->reason, NULL);
}

const struct ibc_event_handler ibc_restarted_event = {
	.body = RDMAB__EVENT__BODY_RESTARTED,
	.read = ibc_restarted_read,
};
