/* SPDX-License-Identifier: MIT */
/*
 * What restart.c and restore.c share: struct restart. Nothing else
 * includes it.
 */
#ifndef RDMAB_RESTART_INT_H
#define RDMAB_RESTART_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/util.h>

#include "daemon/device/device.h"
#include "daemon/families/family.h"
#include "daemon/restart/inflight.h"

struct event;
struct core;
struct server;
struct fdstore;
struct store_share;
struct journal;
struct journal_view;
struct journal_sink;

/* The daemon's own places: two states and two in-flight tables during a
 * compaction, and the XRC domains' directory. */
#define RESTART_STORE_OWN 5
/* The registry's id spaces (clients, contexts, objects), and at most one
 * per family. */
#define RESTART_CORE_IDS 3
#define RESTART_IDS (RESTART_CORE_IDS + FAMILY_COUNT)
/* In-flight slots beyond --max-clients: the admins' reserve. */
#define RESTART_INFLIGHT_EXTRA 64

struct restart {
	struct fdstore *store;
	/* Each uid's places in it (fd_store_per_uid), its books. */
	struct store_share *share;
	/* NULL when restart_init() could not make it: no state is kept
	 * (nothing journaled or stored), and a restart starts clean. */
	struct journal *j;
	/* Why restart_init() could not make it (-errno), for status. */
	int j_err;
	/* At start: the state read, until the restore ran. */
	struct journal_view *view;
	/* Why a state handed over was refused ("" when none was). */
	char refused[256];
	uint64_t generation;
	uint64_t restarts;
	uint64_t last_restore_usec;
	/* What the last restore adopted, for status. */
	uint64_t adopted_sessions, adopted_contexts, adopted_objects,
		adopted_fds;
	/* The id spaces a restart must not hand out again, the registry's
	 * and then the families' (family.h's ids), and where each one's
	 * count was saved to (restart_counters_save()). */
	struct id_space *ids[RESTART_IDS];
	unsigned int n_ids;
	uint64_t id_mark[RESTART_IDS];
	/* The same for each device's serials (device_ops.serials_get). */
	struct device_serials serial_mark[DEVICE_MAX];
	struct event *compact_ev;
	/* Requests read and not answered (inflight.h). */
	struct inflight *inflight;
	/* Exiting for a successor (SIGTERM under a store, re-exec): no
	 * record or store entry is removed any more. */
	bool handoff;
	bool warned;
	/* systemd's store keeps the descriptors (NOTIFY_SOCKET at start,
	 * not a re-exec's): SIGTERM leaves the sessions to the next start. */
	bool systemd;
	/* SIGUSR2 (reexec.c). */
	struct event *usr2_ev;
};

/* The notify socket a re-exec gives the new binary starts so. */
#define REEXEC_NOTIFY_PREFIX "@rdmabrokerd-reexec-"

/* The registry's journal sink (journal-sink.h): restart_init() sets
 * core->sink to it. */
extern const struct journal_sink restart_sink;

int restart_counters_save(struct core *core);
/* The devices' serials of a Counters record (restore_counters()), moved
 * past what the old daemon may have handed out. */
struct Rdmab__State__Counters;
void restart_serials_adopt(struct core *core,
			   const struct Rdmab__State__Counters *c);
/* After a journal write (@ret its result): warn once. */
void restart_after_write(struct core *core, int ret);
/* kept.c: the restore made unnamed object @id again in @x as its record
 * (@len bytes at @data) says: record and mark again; @x closes: its
 * unnamed objects' records go. The domains' books, after the sessions,
 * contexts and objects made the domains again. */
struct dctx;
struct restore;
void restart_unnamed_adopted(struct core *core, struct dctx *x, uint64_t id,
			     const uint8_t *data, size_t len);
void restart_unnamed_closed(struct core *core, const struct dctx *x);
void restart_domains_restore(struct restore *rs);
/* kept.c: once every record that names a handle is back (the
 * families' too), what takes free ones: the adopted sessions' imports
 * (dctx_imports_adopt()) with their QPs' records, and what dead
 * importers left in each adopted context (dead_internal). */
void restart_imports_left(struct restore *rs);
/* kept.c: @x's live imports' records beyond a bare import's, into its
 * record @m (on a device that makes records per QP); the caller frees
 * *@ret_buf and *@ret_ptrs after the write. 0 or -ENOMEM. */
struct Rdmab__State__Context;
struct Rdmab__State__ImportRecords;
int restart_ctx_imports_save(const struct dctx *x,
			     struct Rdmab__State__Context *m,
			     struct Rdmab__State__ImportRecords **ret_buf,
			     struct Rdmab__State__ImportRecords ***ret_ptrs);
/* The loop's compaction (restart_init() makes its event), and the
 * journal's hook that schedules it (journal_on_full(), @arg the core). */
void restart_compact_cb(evutil_socket_t fd, short what, void *arg);
void restart_journal_full(void *arg);
void restart_fd_name(char *buf, size_t size, const char *what, uint64_t id);
/* owner-pidfd.c: the journal sink's pidfd_kept and pidfd_gone (a watch's
 * pidfd as "rb.pidfd.<key>"); and at the restore, detached @ow (@u its
 * uid's user) watched through the pidfd its record names (or, naming
 * none, one under its own id): 0, -ESRCH when its process exited,
 * -ENOENT when no pidfd of it is kept (the pid and start time then
 * decide), -ENOMEM. */
struct obj_owner;
struct user;
int restart_pidfd_kept(struct core *core, uint64_t key, int pidfd);
void restart_pidfd_gone(struct core *core, uint64_t key);
int restart_owner_watch_kept(struct restore *rs, struct obj_owner *ow,
			     struct user *u);
int restart_first_name(void *arg, const char *name, int fd);

#endif
