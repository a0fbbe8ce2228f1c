/* SPDX-License-Identifier: MIT */
/*
 * Restart (issue 25): the fd store, the state journal and the restore
 * that a daemon runs at start when the previous one left them. restart.c
 * owns struct restart (srv->restart); restore.c re-adopts the registry
 * (domains, contexts, sessions, objects, counters) and then calls each
 * family's restore slot (family.h) with a struct restore.
 *
 * The contract with a family:
 * - save as it changes: a family writes each of its records with
 *   journal_put() (journal_del() when it goes) under its own kinds
 *   (journal.h), at the point its in-memory state changes, inside the
 *   same journal_begin()/journal_commit() as the registry's change it
 *   goes with; its descriptors go to the store with fdstore_put() under
 *   "rb.<family>.<key>" when made and fdstore_remove() before they are
 *   closed. restart_journal() and restart_fdstore() give both (NULL:
 *   restart off, every call a no-op).
 * - save (family.h) writes every live record of the family into a fresh
 *   journal: a compaction, from the loop, never inside a change.
 * - restore (family.h) runs once at start, after the registry came back,
 *   in families[] order: the family reads its kinds with
 *   restore_each()/journal_find() and takes its descriptors with
 *   restore_take_fd(); a record it cannot use (a bad message, a missing
 *   fd) is a negative errno with restore_fail()'s sentence: the whole
 *   state is then dropped (every family's fini, every passed fd closed,
 *   clients told) and the daemon starts clean.
 */
#ifndef RDMAB_RESTART_H
#define RDMAB_RESTART_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/fdstore.h"
#include "daemon/journal.h"

struct server;

struct restart;

/* What a family's restore gets. */
struct restore {
	struct server *srv;
	const struct journal_view *view;
	struct fdstore *store;
	/* The generation being started (the old one's + 1). */
	uint64_t generation;
	/* Set by restore_fail(): why the state was refused. */
	char why[256];
	/* What was adopted, for the log line and rdmabrokerctl status. */
	uint64_t adopted_sessions, adopted_contexts, adopted_objects,
		adopted_fds;
};

/* Each live record of @kind in key order (journal_each()). */
int restore_each(struct restore *rs, uint32_t kind,
		 int (*fn)(void *arg, const struct journal_rec *r), void *arg);
/* Take the stored descriptor @name (fdstore_take()), counted. */
int restore_take_fd(struct restore *rs, const char *name, int *ret_fd);
/* Refuse the state: @err (negative) with a sentence; returns @err. */
int restore_fail(struct restore *rs, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The running daemon's journal and store; NULL when restart is off. */
struct journal *restart_journal(const struct server *srv);
struct fdstore *restart_fdstore(const struct server *srv);

#endif
