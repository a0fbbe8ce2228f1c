/* SPDX-License-Identifier: MIT */
/*
 * Restart (issue 25), the transport's part: the start that reads the fd
 * store and picks the state, the restore that makes the connections again
 * (restore.c), the sessions' records and their sockets in the store, the
 * requests read and not answered, SIGTERM's handoff and what status
 * shows. What the layers below the handlers see is restart.h's.
 */
#ifndef RDMAB_RESTART_SRV_H
#define RDMAB_RESTART_SRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/restart/restart.h"

struct core;
struct server;
struct conn;

/*
 * Start-up (server_init(); @off: --no-restart, nothing is done): read the
 * fd store (restart is on when systemd gives a NOTIFY_SOCKET or
 * descriptors were handed over), pick the newest readable state, start
 * its successor journal. Before sd_take_listener(), which leaves our
 * descriptors alone. 0 or -errno (the daemon stops).
 */
int restart_init(struct core *core, bool off);
/* SIGUSR2: re-execute (reexec.c), once restart_init() started restart.
 * 0 or -ENOMEM. */
int reexec_init(struct server *srv);
/* After the families' init: re-adopt what the state holds (restore.c),
 * close what nobody took, log one line. 0 or -errno. */
int restart_restore(struct server *srv);
void restart_fini(struct core *core);
/* The store's bound: what FileDescriptorStoreMax= must be at least. */
unsigned int restart_store_max(const struct core *core);
/* SIGTERM under a store: exit leaving sessions and state to the next
 * daemon (nothing is removed from the store or the journal from here). */
void restart_handoff(struct core *core);
/* SIGTERM leaves the sessions to the next start: systemd's store keeps
 * them and the journal is whole. */
bool restart_keeps_sessions(const struct core *core);

/* Hooks: the sessions' changes, to the journal and the store. */
void restart_conn_opened(struct conn *c);
void restart_conn_closed(struct conn *c);
/* Hello: the session's record (its holds on contexts are records of
 * their own, restart_hold_saved()). */
void restart_session_save(struct conn *c);
/* @c's replies went (its queue drained): conn_inflight_sent(), the
 * connections' hook (a request's own are conn.h's, inline). */
void restart_reply_sent(struct conn *c);
/* Request @body_case of @c succeeded: what it changed of the session. */
void restart_request_done(struct conn *c, unsigned int body_case);

#endif
