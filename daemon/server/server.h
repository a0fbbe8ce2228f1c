/* SPDX-License-Identifier: MIT */
/*
 * struct server, the daemon's top: the event loop, the listening socket,
 * the connection table (conn.h), the devices and the families' state, and
 * what every layer below reaches through it. server.c owns start-up,
 * admission, reload, device removal and shutdown.
 */
#ifndef RDMAB_SERVER_H
#define RDMAB_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "daemon/util/queue.h"
#include <time.h>

#include "daemon/config/conf.h"
#include "daemon/registry/core.h"
#include "daemon/server/conn.h"
#include "daemon/device/device.h"
#include "daemon/registry/domain.h"
#include "daemon/families/family.h"
#include "daemon/util/ids.h"
#include "daemon/util/log.h"
#include "daemon/registry/user.h"
#include "proto/rdmabroker.pb-c.h"

struct event_base;
struct event;
struct conn;
struct registry;

struct server_options {
	const char *socket_path;
	const char *runtime_dir;
	const char *config_path;
	/* The path was given on the command line: it must exist. */
	bool config_required;
	enum device_mode device_mode;
	unsigned int socket_mode;
	/* --socket-group of a self-bound socket; NULL: the daemon's. */
	const char *socket_group;
	unsigned int max_conns;
	/* Bytes of replies a client may leave unread before the daemon stops
	 * reading its requests. */
	size_t outq_max;
	/* Read a connection's next request right after its reply
	 * (conn_read_cb()). */
	enum read_on read_on;
	/* The command line, which a SIGUSR2 starts again (reexec.c). */
	char **argv;
	/* --no-restart: no journal, no store (restart.h). */
	bool no_restart;
};

struct server {
	struct server_options opt;
	/* What the layers below the handlers share (core.h). */
	struct core core;
	int listen_fd;
	/* The path we bound ourselves and unlink at exit; NULL when systemd
	 * owns the socket. */
	char *bound_path;
	struct event *listen_ev;
	struct event *backoff_ev;
	struct event *sig_ev[3];
	struct event *watchdog_ev;
	struct event *status_ev;
	bool accepting;
	/* The loop was stopped for a failure: server_run() reports it. */
	bool failed;
	/* The connections (conn.h; tab.stopping: the daemon is stopping). */
	struct conn_table tab;
	/* accept() failing for lack of descriptors, logged once a while. */
	struct log_ratelimit accept_rl;
	struct timespec started;
	struct event *device_ev[DEVICE_MAX];
	struct event *present_ev;
	/* The runtime directory's lock (its descriptor: core.runtime_fd),
	 * held for the daemon's life (runtime.h); -1 before server_init()
	 * takes it. */
	int runtime_lock_fd;
	/* Metrics (metrics.h): counters, the cached text, the HTTP
	 * listener. */
	struct metrics *metrics;
};

/* The server whose core @core is (the hooks of core.h get the core). */
static inline struct server *server_of(struct core *core)
{
	return (struct server *)((char *)core - offsetof(struct server, core));
}

/* The server whose connection table @t is (conn.h's ops get the table). */
static inline struct server *server_of_tab(struct conn_table *t)
{
	return (struct server *)((char *)t - offsetof(struct server, tab));
}

int server_init(struct server *srv, const struct server_options *opt);
/* Run until SIGTERM/SIGINT; returns 0 after a clean shutdown. */
int server_run(struct server *srv);
void server_fini(struct server *srv);

/*
 * May @c be served, given who else is connected? 0, or -EUSERS or -EDQUOT
 * with the sentence for the client in @why.
 */
int server_admit(struct server *srv, const struct conn *c, char *why,
		 size_t size);

/* Schedule a STATUS= update. */
void server_status_dirty(struct server *srv);
uint64_t server_uptime_usec(const struct server *srv);

/* Re-read the configuration (SIGHUP); a bad file keeps the running one. */
int server_reload(struct server *srv);
/* @dev is gone (a fatal event, or it left the system): the server closes
 * its descriptors and tells the clients, then every family lets go
 * (families_device_gone()); reported once, the later reports of the same
 * device are dropped. */
void server_device_removed(struct server *srv, struct device *dev,
			   const char *reason);

#endif
