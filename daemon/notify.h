/* SPDX-License-Identifier: MIT */
/*
 * The notifier: resource families report what happened to a resource (a
 * device is gone; later a DM revoked, an RSS table rebuilt, a domain
 * rekeyed) without calling up into the server, and the modules that care
 * subscribe. It also carries the broadcasts to clients, and every Event it
 * sends names the object it concerns (enum ibc_obj_kind and broker id).
 */
#ifndef RDMAB_NOTIFY_H
#define RDMAB_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/rdmabroker.pb-c.h"

struct server;
struct conn;
struct device;

enum notify_topic {
	/* struct notify_device_gone */
	NOTIFY_DEVICE_GONE,
	/* struct dctx, about to be freed: the kernel freed (or is about to
	 * free) what its context held. */
	NOTIFY_CTX_CLOSED,
	NOTIFY_TOPIC_COUNT,
};

struct notify_device_gone {
	struct device *dev;
	const char *reason;
};

typedef void (*notify_fn)(struct server *srv, const void *what, void *data);

#define NOTIFY_MAX_SUBSCRIBERS 8

struct notifier {
	struct {
		notify_fn fn;
		void *data;
	} subs[NOTIFY_TOPIC_COUNT][NOTIFY_MAX_SUBSCRIBERS];
	unsigned int n[NOTIFY_TOPIC_COUNT];
};

/* Call @fn with @data for every report of @topic, after the subscribers
 * before it. -ENOSPC when the topic has NOTIFY_MAX_SUBSCRIBERS already. */
int notify_subscribe(struct notifier *n, enum notify_topic topic, notify_fn fn,
		     void *data);
/* Tell every subscriber of @topic, in subscription order. */
void notify_publish(struct server *srv, enum notify_topic topic,
		    const void *what);

/* @dev is gone (a fatal event, or it left the system): reported once; the
 * later reports of the same device are dropped. */
void notify_device_gone(struct server *srv, struct device *dev,
			const char *reason);

/*
 * Decide, for client @c, whether it gets @ev and which object it names
 * (set ev->object_kind and ev->object_id): false skips the client.
 */
typedef bool (*notify_filter)(struct conn *c, Rdmab__Event *ev, void *arg);

/*
 * Send @ev to every client past its hello that @filter (NULL: all) takes.
 * A client that cannot take it is marked dead (conn_close_later()) and
 * closed by the loop on its next turn, never here: nothing the caller
 * walks goes under it. Returns how many got it.
 */
unsigned int notify_clients(struct server *srv, Rdmab__Event *ev,
			    notify_filter filter, void *arg);

#endif
