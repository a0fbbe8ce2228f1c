/* SPDX-License-Identifier: MIT */
/*
 * Reports to clients over the connection table (conn.h): the broadcasts,
 * each Event naming the object it concerns (enum ibc_obj_kind and broker
 * id), and the calls the layers below the handlers make of a session's
 * connection through struct core_ops (core.h), which the server fills
 * with them (server.c).
 */
#ifndef RDMAB_NOTIFY_H
#define RDMAB_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/registry/core.h"
#include "proto/rdmabroker.pb-c.h"

struct conn_table;
struct client;

/*
 * Send @ev to every client of @t past its hello that @filter (NULL: all)
 * takes. A client that cannot take it is marked dead (conn_kill()) and
 * closed by the loop on its next turn, never here: nothing the caller
 * walks goes under it. Returns how many got it.
 */
unsigned int notify_clients(struct conn_table *t, Rdmab__Event *ev,
			    core_event_filter filter, void *arg);
/* The session after @prev in @t's order (the first for NULL), closing
 * ones among them; NULL after the last (core_ops.next). */
struct client *notify_next(struct conn_table *t, struct client *prev);
/* core_ops.is_open, take_pidfd and hello_done, for @cl's connection. */
bool notify_is_open(const struct client *cl);
int notify_take_pidfd(struct client *cl);
void notify_hello_done(struct client *cl);

#endif
