// SPDX-License-Identifier: MIT
/*
 * Reports (notify.h): the Event broadcasts to clients, where a client
 * that cannot take one is only marked for the loop to close, and a
 * device's removal, told once to the server and to every family; and the
 * transport's side of struct core_ops (core.h), the one path by which
 * the layers below the handlers reach a client's connection.
 */
#include "config.h"

#include <errno.h>

#include <event2/event.h>

#include "daemon/server/conn.h"
#include "daemon/device/device.h"
#include "daemon/families/family.h"
#include "daemon/server/notify.h"
#include "daemon/server/server.h"

void notify_device_gone(struct server *srv, struct device *dev,
			const char *reason)
{
	/* Both the device's events and the presence check see a removal;
	 * the first one tells. */
	if (dev->removed)
		return;
	dev->removed = true;
	server_device_gone(srv, dev, reason);
	families_device_gone(&srv->core, dev, reason);
}

unsigned int notify_clients(struct server *srv, Rdmab__Event *ev,
			    core_event_filter filter, void *arg)
{
	uint32_t kind = ev->object_kind;
	uint64_t id = ev->object_id;
	struct conn *c;
	unsigned int n = 0;

	/* The caller may be walking what a close frees (a family's
	 * objects): a client that cannot take the Event is only marked, and
	 * the loop closes it. */
	TAILQ_FOREACH(c, &srv->conns, link) {
		if (!c->cl.hello_done || c->state >= CONN_DEAD)
			continue;
		ev->object_kind = kind;
		ev->object_id = id;
		if (filter && !filter(&c->cl, ev, arg))
			continue;
		if (conn_send_event(c, ev) == 0)
			n++;
		else
			conn_kill(c, NULL);
	}
	ev->object_kind = kind;
	ev->object_id = id;
	return n;
}

static unsigned int notify_broadcast(struct core *core, Rdmab__Event *ev,
				     core_event_filter filter, void *arg)
{
	return notify_clients(server_of(core), ev, filter, arg);
}

static void notify_core_device_gone(struct core *core, struct device *dev,
				    const char *reason)
{
	notify_device_gone(server_of(core), dev, reason);
}

static bool notify_is_open(const struct client *cl)
{
	return conn_of(cl)->state < CONN_CLOSING;
}

static int notify_take_pidfd(struct client *cl)
{
	struct conn *c = conn_of(cl);
	int pidfd = c->pidfd;

	c->pidfd = -1;
	if (c->pidfd_ev) {
		event_free(c->pidfd_ev);
		c->pidfd_ev = NULL;
	}
	return pidfd;
}

static struct client *notify_next(struct core *core, struct client *prev)
{
	struct conn *c = prev ? TAILQ_NEXT(conn_of(prev), link) :
				TAILQ_FIRST(&server_of(core)->conns);

	return c ? &c->cl : NULL;
}

static void notify_hello_done(struct client *cl)
{
	conn_hello_done(conn_of(cl));
}

static void notify_status(const struct core *core, struct core_status *st)
{
	const struct server *srv = server_of((struct core *)core);

	st->uptime_usec = server_uptime_usec(srv);
	st->clients = srv->n_conns;
	st->max_clients = srv->opt.max_conns;
}

const struct core_ops notify_core_ops = {
	.broadcast = notify_broadcast,
	.device_gone = notify_core_device_gone,
	.is_open = notify_is_open,
	.take_pidfd = notify_take_pidfd,
	.next = notify_next,
	.hello_done = notify_hello_done,
	.status = notify_status,
};
