// SPDX-License-Identifier: MIT
/*
 * Reports (notify.h): the Event broadcasts over the connection table,
 * where a client that cannot take one is only marked for the loop to
 * close, and the calls struct core_ops (core.h) makes of a session's
 * connection, the one path by which the layers below the handlers reach
 * it. The server fills core_ops with them (server.c), and tells a
 * device's removal.
 */
#include "config.h"

#include <errno.h>

#include <event2/event.h>

#include "daemon/server/conn.h"
#include "daemon/server/notify.h"

unsigned int notify_clients(struct conn_table *t, Rdmab__Event *ev,
			    core_event_filter filter, void *arg)
{
	uint32_t kind = ev->object_kind;
	uint64_t id = ev->object_id;
	struct conn *c;
	unsigned int n = 0;

	/* The caller may be walking what a close frees (a family's
	 * objects): a client that cannot take the Event is only marked, and
	 * the loop closes it. */
	TAILQ_FOREACH(c, &t->conns, link) {
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

bool notify_is_open(const struct client *cl)
{
	return conn_of(cl)->state < CONN_CLOSING;
}

int notify_take_pidfd(struct client *cl)
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

struct client *notify_next(struct conn_table *t, struct client *prev)
{
	struct conn *c =
		prev ? TAILQ_NEXT(conn_of(prev), link) : TAILQ_FIRST(&t->conns);

	return c ? &c->cl : NULL;
}

void notify_hello_done(struct client *cl)
{
	conn_hello_done(conn_of(cl));
}
