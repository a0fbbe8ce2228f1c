/* SPDX-License-Identifier: MIT */
/*
 * A real server in the test's own process, for suites that drive the
 * daemon's internals (check_registry, check_rekey_srv): on the soft
 * device, in a temporary runtime directory, what it logs going to a file
 * that the test counts lines of, clients on socketpairs (raw clients of
 * tests/objlib.h) and the event loop turned by hand. Unlike testlib and
 * objlib, this uses Check: a step that fails fails the test.
 */
#ifndef RDMAB_TESTS_SRVLIB_H
#define RDMAB_TESTS_SRVLIB_H

#include <stdbool.h>

#include "daemon/server/conn.h"
#include "daemon/registry/objects.h"
#include "daemon/server/server.h"
#include "tests/objlib.h"

#define SL_MAX_CLIENTS 4

/* The server, its runtime directory, and client slot i: the test's end
 * (sl_cl[i]) and the server's (sl_conns[i], NULL once hung up). */
extern struct server sl_srv;
extern char *sl_dir;
extern struct ol_client sl_cl[SL_MAX_CLIENTS];
extern struct conn *sl_conns[SL_MAX_CLIENTS];

/* Start the server with @conf as its configuration file (NULL: none),
 * at LOG_INFO, stderr to its log; every client slot empty. */
void sl_start(const char *conf);
/* Close every client, stop the server, give stderr back, remove the
 * directory. */
void sl_stop(void);
/* One turn of the loop, without waiting: a client's pump. */
void sl_pump(void);
/* Client slot @i on a new socketpair: the server's connection, and the
 * test's end with nothing said yet. */
struct ol_client *sl_connect(int i);
/* sl_connect(), hello (asking for @domain; NULL: the uid's own) and, if
 * @open, the soft context. */
struct ol_client *sl_client(int i, const char *domain, bool open);
/* End client @i's session from the server's side, as at a hang-up. */
void sl_hang_up(int i);
/* sl_hang_up() and objects_owner_dead(): what the daemon does when the
 * client process is gone (this one, the clients' too, does not die). */
void sl_kill(int i);
/* The owner of client @i's objects, also after its session ended; NULL
 * once the registry let it go. */
struct obj_owner *sl_owner(int i);
/* How many times @needle stands in what the server logged so far. */
int sl_log_count(const char *needle);

#endif
