// SPDX-License-Identifier: MIT
/*
 * Reports (notify.h): the Event broadcasts to clients, where a client
 * that cannot take one is only marked for the loop to close, and a
 * device's removal, told once to the server and to every family: the
 * one path by which any family reports to clients.
 */
#include "config.h"

#include <errno.h>

#include "daemon/conn.h"
#include "daemon/device.h"
#include "daemon/family.h"
#include "daemon/notify.h"
#include "daemon/server.h"

void notify_device_gone(struct server *srv, struct device *dev,
			const char *reason)
{
	/* Both the device's events and the presence check see a removal;
	 * the first one tells. */
	if (dev->removed)
		return;
	dev->removed = true;
	server_device_gone(srv, dev, reason);
	families_device_gone(srv, dev, reason);
}

unsigned int notify_clients(struct server *srv, Rdmab__Event *ev,
			    notify_filter filter, void *arg)
{
	uint32_t kind = ev->object_kind;
	uint64_t id = ev->object_id;
	struct conn *c;
	unsigned int n = 0;

	/* The caller may be walking what a close frees (a family's
	 * objects): a client that cannot take the Event is only marked, and
	 * the loop closes it. */
	TAILQ_FOREACH(c, &srv->conns, link) {
		if (!c->hello_done || c->state >= CONN_DEAD)
			continue;
		ev->object_kind = kind;
		ev->object_id = id;
		if (filter && !filter(c, ev, arg))
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
