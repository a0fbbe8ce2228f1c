/* SPDX-License-Identifier: MIT */
/*
 * Reports to clients: the broadcasts, each Event naming the object it
 * concerns (enum ibc_obj_kind and broker id); a device's removal, told
 * once to the server and to every family (family.h's device_gone); and
 * the hooks the layers below the handlers are given (core.h).
 */
#ifndef RDMAB_NOTIFY_H
#define RDMAB_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/registry/core.h"
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

/* The hooks the layers below the handlers reach the clients by
 * (core.h): server_init() sets core.ops to them. */
extern const struct core_ops notify_core_ops;

/*
 * Send @ev to every client past its hello that @filter (NULL: all) takes.
 * A client that cannot take it is marked dead (conn_kill()) and
 * closed by the loop on its next turn, never here: nothing the caller
 * walks goes under it. Returns how many got it.
 */
unsigned int notify_clients(struct server *srv, Rdmab__Event *ev,
			    core_event_filter filter, void *arg);

#endif
