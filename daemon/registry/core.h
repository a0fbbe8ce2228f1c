/* SPDX-License-Identifier: MIT */
/*
 * struct core: what the layers below the handlers (the registry, domains,
 * contexts, users and the families) share of the daemon: the event loop,
 * the configuration, the devices, the domains and users, the id spaces,
 * the registry and each family's state; and the hooks by which the
 * transport lets them reach its clients (struct core_ops), so that none of
 * them sees the server, a connection's transport or a reply. struct server
 * embeds it (server.h).
 */
#ifndef RDMAB_CORE_H
#define RDMAB_CORE_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/config/conf.h"
#include "daemon/device/device.h"
#include "daemon/families/family.h"
#include "daemon/util/ids.h"
#include "daemon/util/queue.h"
#include "proto/rdmabroker.pb-c.h"

struct event_base;
struct event;
struct registry;
struct client;
struct core;
struct restart;
struct journal_sink;
struct dctx_hooks;
struct domain;
struct user;

/* The hub names the lists, not their members: domain.h and user.h sit
 * above it, and every layer below the handlers includes it. */
TAILQ_HEAD(domain_list, domain);
TAILQ_HEAD(user_list, user);

/*
 * Decide, for client @c, whether it gets @ev and which object it names
 * (set ev->object_kind and ev->object_id): false skips the client.
 */
typedef bool (*core_event_filter)(struct client *c, Rdmab__Event *ev,
				  void *arg);

/* The transport's figures (core_ops.status). */
struct core_status {
	uint64_t uptime_usec;
	/* Connections, and their limit (--max-clients). */
	unsigned int clients, max_clients;
};

/* What the transport does for the layers below it (server.c fills it,
 * notify.c walks the connections). */
struct core_ops {
	/*
	 * Send @ev to every client past its hello that @filter (NULL: all)
	 * takes. A client that cannot take it is marked dead and closed by
	 * the loop on its next turn, never here: nothing the caller walks
	 * goes under it. Returns how many got it.
	 */
	unsigned int (*broadcast)(struct core *core, Rdmab__Event *ev,
				  core_event_filter filter, void *arg);
	/* @dev is gone (a fatal event, or it left the system): the
	 * transport tells the clients, then every family lets go; reported
	 * once, the later reports of the same device are dropped. */
	void (*device_gone)(struct core *core, struct device *dev,
			    const char *reason);
	/* Whether @c's requests are still read: not once it is closing
	 * (an evict, a protocol error) or closed. */
	bool (*is_open)(const struct client *c);
	/* The pidfd of @c's peer, which the transport stops watching: the
	 * caller's to close; -1 when there is none. */
	int (*take_pidfd)(struct client *c);
	/* The sessions the transport serves, closing ones among them, in
	 * its order: the first for a NULL @prev, NULL after the last. */
	struct client *(*next)(struct core *core, struct client *prev);
	/* @c's hello succeeded: it is marked so (c->hello_done) and its
	 * deadline goes. */
	void (*hello_done)(struct client *c);
	/* The transport's figures for status: connections and uptime. */
	void (*status)(const struct core *core, struct core_status *st);
};

struct core {
	struct event_base *base;
	struct config config;
	struct device_list devices;
	struct domain_list domains;
	struct user_list users;
	/* Client, context and object ids (ids.h); a family that hands out
	 * ids of its own keeps them in its state (family.h's ids). */
	struct {
		struct id_space clients, contexts, objects;
	} ids;
	/* Records the listings walked (domains, contexts, clients, objects,
	 * DMs, MRs): tests check that what another domain holds adds nothing
	 * to a member's listing. */
	uint64_t list_visits;
	struct registry *registry;
	/* Each family's own (family.h), by enum family_id. */
	void *family_state[FAMILY_COUNT];
	/* The runtime directory (runtime.h) and its path, for the log; -1
	 * before the server takes it. */
	int runtime_fd;
	const char *runtime_dir;
	/* --max-conns: what the registry's process watches may hold in
	 * pidfds (obj-watch.c). */
	unsigned int max_conns;
	/* Rekey (rekey.c): the automatic check, run from the loop
	 * (core_rekey_due()); rekey_init() makes it. */
	struct event *rekey_ev;
	const struct core_ops *ops;
	/* What a context's turns do above it (ctx.h), set by
	 * server_init(). */
	const struct dctx_hooks *ctx_hooks;
	/* Restart (restart.h): the fd store and the state journal; NULL
	 * when off. */
	struct restart *restart;
	/* What the registry tells the journal (journal-sink.h), set by
	 * restart_init(); NULL when restart is off. */
	const struct journal_sink *sink;
	/* Requests answered since the first generation (status, and the
	 * journal's counters). */
	uint64_t requests_served;
};

/*
 * Run the automatic rekey check (rekey.c's, which sits above the counts
 * and the contexts that ask for it) from the loop in @delay_ms: a
 * context's unaccounted count grew (0), or went stale while an importer
 * finishes closing (a little later).
 */
void core_rekey_due(struct core *core, unsigned int delay_ms);

#endif
