/* SPDX-License-Identifier: MIT */
/*
 * Reports to clients: the broadcasts, each Event naming the object it
 * concerns (enum ibc_obj_kind and broker id); and a device's removal,
 * told once to the server and to every family (family.h's device_gone).
 */
#ifndef RDMAB_NOTIFY_H
#define RDMAB_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/rdmabroker.pb-c.h"

struct server;
struct conn;
struct device;

/* @dev is gone (a fatal event, or it left the system): the server closes
 * its descriptors and tells the clients, then every family lets go
 * (families_device_gone()); reported once, the later reports of the same
 * device are dropped. */
void notify_device_gone(struct server *srv, struct device *dev,
			const char *reason);

/*
 * Decide, for client @c, whether it gets @ev and which object it names
 * (set ev->object_kind and ev->object_id): false skips the client.
 */
typedef bool (*notify_filter)(struct conn *c, Rdmab__Event *ev, void *arg);

/*
 * Send @ev to every client past its hello that @filter (NULL: all) takes.
 * A client that cannot take it is marked dead (conn_kill()) and
 * closed by the loop on its next turn, never here: nothing the caller
 * walks goes under it. Returns how many got it.
 */
unsigned int notify_clients(struct server *srv, Rdmab__Event *ev,
			    notify_filter filter, void *arg);

#endif
