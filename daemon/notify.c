// SPDX-License-Identifier: MIT
#include "config.h"

#include <errno.h>

#include "daemon/conn.h"
#include "daemon/device.h"
#include "daemon/notify.h"
#include "daemon/server.h"

int notify_subscribe(struct notifier *n, enum notify_topic topic, notify_fn fn,
		     void *data)
{
	unsigned int i = n->n[topic];

	if (i == NOTIFY_MAX_SUBSCRIBERS)
		return -ENOSPC;
	n->subs[topic][i].fn = fn;
	n->subs[topic][i].data = data;
	n->n[topic]++;
	return 0;
}

void notify_publish(struct server *srv, enum notify_topic topic,
		    const void *what)
{
	struct notifier *n = &srv->notifier;

	for (unsigned int i = 0; i < n->n[topic]; i++)
		n->subs[topic][i].fn(srv, what, n->subs[topic][i].data);
}

void notify_device_gone(struct server *srv, struct device *dev,
			const char *reason)
{
	struct notify_device_gone what = { .dev = dev, .reason = reason };

	/* Both the device's events and the presence check see a removal;
	 * the first one tells. */
	if (dev->removed)
		return;
	dev->removed = true;
	notify_publish(srv, NOTIFY_DEVICE_GONE, &what);
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
		if (!c->hello_done || c->releasing || c->dead)
			continue;
		ev->object_kind = kind;
		ev->object_id = id;
		if (filter && !filter(c, ev, arg))
			continue;
		if (conn_send_event(c, ev) == 0)
			n++;
		else
			conn_close_later(c);
	}
	ev->object_kind = kind;
	ev->object_id = id;
	return n;
}
