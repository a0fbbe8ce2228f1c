/* SPDX-License-Identifier: MIT */
/*
 * Restart (issue 25): the fd store, the state journal and the restore
 * that a daemon runs at start when the previous one left them. This is
 * the part the layers below the handlers see (struct core's restart):
 * the journal's hooks for contexts and objects, the ids, and what a
 * family's restore gets. The transport's part (start, sessions, requests
 * in flight, status) is restart-srv.h's; restore.c re-adopts the
 * registry (domains, contexts, sessions, objects, counters) and then
 * calls each family's restore slot (family.h) with a struct restore.
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
 * - no save slot: the journal indexes its live records and compacts by
 *   copying them, so a family's records are exactly what it put.
 * - restore (family.h) runs once at start, after the registry's
 *   sessions, contexts and objects came back (records of family_owned
 *   objects, such as DM imports, are the family's to make again; one
 *   whose remake needs a family's records again after, when the
 *   family asks: restore_objects_later()), in
 *   families[] order: the family reads its kinds with
 *   restore_each()/journal_find() and takes its descriptors with
 *   restore_take_fd(). The new generation's journal starts empty: the
 *   family journals again what it adopts, as it would a change. A record
 *   it cannot use (a bad message, a missing fd) is a negative errno with
 *   restore_fail()'s sentence: every adopted session and every adopted
 *   ended session's owner is then ended (their objects go as a death's
 *   do, with the charges) rather than keep half a registry, and what
 *   nobody took is closed. A record the family can drop alone, giving
 *   back what it held (a DM whose memfd is lost), is not a failure.
 * - ended sessions: a record of a session that had ended before the
 *   restart while its process lived (detached) is made again for its
 *   owner (restart_owner_find(), objects_add_detached()), as the
 *   registry's are; their contexts came back with the objects. Those
 *   owners' processes are watched only after every family's restore
 *   (restart_owners_watch()), so a record a family makes is never on an
 *   owner already found gone.
 * - ids: a family that hands out ids keeps their space in its state and
 *   describes it (family.h's ids and counters_field): the Counters record
 *   keeps it and the restore brings it back; the family calls
 *   restart_ids_check() after taking one, so that a restart never reuses
 *   one.
 * - a context's books: what the family keeps of a context goes into the
 *   context's record and comes back with its charges (family.h's
 *   ctx_save and ctx_restore).
 */
#ifndef RDMAB_RESTART_H
#define RDMAB_RESTART_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/restart/fdstore.h"
#include "daemon/restart/journal.h"

struct core;
struct dctx;
struct obj;

struct restart;

/* What a family's restore gets. */
struct restore {
	struct core *core;
	const struct journal_view *view;
	struct fdstore *store;
	/* The generation being started (the old one's + 1). */
	uint64_t generation;
	/* Set by restore_fail(): why the state was refused. */
	char why[256];
	/* What was adopted, for the log line and rdmabrokerctl status. */
	uint64_t adopted_sessions, adopted_contexts, adopted_objects,
		adopted_fds;
	/* restore-int.h's (restore_objects_later()). */
	struct rctx *rc;
};

/* Each live record of @kind in key order (journal_each()). */
int restore_each(struct restore *rs, uint32_t kind,
		 int (*fn)(void *arg, const struct journal_rec *r), void *arg);
/* Take the stored descriptor @name (fdstore_take()), counted once as
 * adopted (status and the restore's log line): the caller counts nothing. */
int restore_take_fd(struct restore *rs, const char *name, int *ret_fd);
/* Keep @fd in the store again under @name, a place of @uid's (over its
 * share: it exists), if the store has one beyond the daemon's own: the
 * state and in-flight table stored after the families must fit. 0, or
 * -ENOSPC when its bound is lower than the state's (--max-clients or a
 * limit lowered across the restart), or fdstore_put_for()'s -errno. */
int restore_keep_fd(struct restore *rs, const char *name, int fd, uint32_t uid);
/* The registry's objects whose remake failed before the families'
 * restore (one that uses what a family makes again: an MR on a DM names
 * the DM's handle), tried again, once, with the failure logged: a
 * family calls it when what they use is back and before it acts on
 * what they block (the DM family: before it frees the DMs nobody
 * holds); restore.c calls it after the families for the rest. */
void restore_objects_later(struct restore *rs);
/* Context @ctx_id of records of detached (or dead) owner @ow
 * (restart_owner_find()) when no session brought it back: adopted from
 * the store for them, as for the registry's records of such owners, and
 * closed again after the families' restore if nothing came to hold it;
 * NULL when it cannot be (logged). */
struct obj_owner;
struct dctx *restore_ctx_detached(struct restore *rs, struct obj_owner *ow,
				  uint64_t ctx_id);
/* Refuse the state: @err (negative) with a sentence; returns @err. */
int restore_fail(struct restore *rs, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Exiting for a successor (restart_handoff()): the families leave what
 * they share with the next daemon as it is. */
bool restart_handing_off(const struct core *core);
/* Exiting for a successor: no teardown at all, which could touch what
 * the successor shares (a DM's bytes, a socket): _exit(0). */
void restart_exit(void) __attribute__((noreturn));

/* Hooks: the registry's changes, to the journal and the store. The
 * registry reaches them through its sink (journal-sink.h: restart_sink),
 * never by name; restart itself and the families call them. */
void restart_ctx_opened(struct core *core, const struct dctx *x);
void restart_ctx_closed(struct core *core, const struct dctx *x);
/* @x's books changed (its unaccounted count, dead imports, DM bytes a
 * rekey left, the rekey itself): its record again. */
void restart_ctx_saved(struct core *core, const struct dctx *x);
/* Restore: adopted @x gets the books of its record @m, and their
 * charges. */
struct Rdmab__State__Context;
void restart_ctx_books(struct core *core, struct dctx *x,
		       const struct Rdmab__State__Context *m);
/* Its device went: the store lets go of the descriptor now (systemd's
 * copy would keep the device busy), the record stays while held. */
void restart_ctx_fd_drop(struct core *core, const struct dctx *x);
/* Session @client_id's hold @cc on a context was made or its opens
 * changed; it goes (before @cc is freed). */
struct conn_ctx;
void restart_hold_saved(struct core *core, uint64_t client_id,
			struct conn_ctx *cc);
void restart_hold_gone(struct core *core, struct conn_ctx *cc);
/* A registry record was made or changed (not a soft object's made by
 * the broker: restart_obj_made()), or goes. */
void restart_obj_saved(struct core *core, const struct obj *o);
void restart_obj_gone(struct core *core, const struct obj *o);
/* The broker made @o on a device it is the kernel of, as @spec and the
 * request's @attr asked, and was given @made (NULL: nothing clients
 * know): what remakes it, the same, at a restore. */
struct obj_spec;
struct obj_made;
struct Rdmab__ObjAttr;
void restart_obj_made(struct core *core, const struct obj *o,
		      const struct obj_spec *spec, const struct obj_made *made,
		      const struct Rdmab__ObjAttr *attr);
/* A restore adopted @o as its record (@len bytes at @data, a packed
 * StateObject) says, made again with @made (NULL: not made again) as the
 * record asked: that record, as it is. */
void restart_obj_packed(struct core *core, const struct obj *o,
			const struct obj_made *made, const uint8_t *data,
			size_t len);
/* @o's record leaves the registry while the object stays in its context
 * (a device whose kernel is the broker): its record is kept, marked
 * unnamed, until the context closes, and the restore makes the object
 * again in no one's name (kept.c). */
void restart_obj_unnamed(struct core *core, const struct obj *o);
/* A domain's own books (its rekey count) changed, or it goes. */
struct domain;
void restart_domain_saved(struct core *core, const struct domain *d);
void restart_domain_gone(struct core *core, const struct domain *d);
/* An owner's session ended while it holds objects (detached), or its
 * process is gone (dead): the record that makes its objects' records
 * adoptable without a session; it goes when the owner does. */
struct obj_owner;
void restart_owner_saved(struct core *core, struct obj_owner *ow);
void restart_owner_gone(struct core *core, const struct obj_owner *ow);
/* Restore: the owner of a record whose session did not come back (its
 * Owner record: detached or dead), made on first use; and context
 * @ctx_id as adopted so far; NULL when either is not. */
struct journal_view;
struct obj_owner *restart_owner_find(struct restore *rs, uint64_t client_id);
struct dctx *restart_ctx_find(struct core *core, uint64_t ctx_id);
/* Restore, once every record is back, the families' and those made
 * again late (an MR on a DM) too: each adopted owner whose session had
 * ended is watched again (a process gone meanwhile starts its cleanup);
 * one that got no record goes. Earlier, an owner whose only record came
 * later would be freed first, then made again unwatched. (The sessions'
 * imports are made again then too, after every record that names a
 * handle: restart_imports_left().) With @end (a family's restore failed:
 * the state is not kept), each such owner's cleanup starts now instead,
 * as the adopted sessions are ended. */
void restart_owners_watch(struct restore *rs, bool end);
/* The id spaces passed their saved mark: save them further on. */
void restart_ids_check(struct core *core);

/* Whether every record of @v the registry reads unpacks (the restore's
 * check, and the fuzz target's): 0 or -EBADMSG with the reason in @why.
 * The object records are read as the restore reads them (by hand,
 * restore-object.h), once: @obj, when set, is given each one, in id
 * order, to keep (the restore's objects); its error (with its own
 * sentence in @why) ends the check. */
struct state_obj;
int restart_state_check(const struct journal_view *v,
			int (*obj)(void *arg, const struct journal_rec *r,
				   const struct state_obj *m),
			void *arg, char *why, size_t why_len);

/* What status shows (rdmabrokerctl status): generation, restores, the
 * last one's duration, and, for an administrator (@full), what it
 * adopted or why a state was refused, in @what. */
#define RESTART_STATUS_MAX 160
void restart_status(const struct core *core, bool full, uint64_t *gen,
		    uint64_t *restarts, uint64_t *usec, char *what,
		    size_t size);

/* Whether a restart from here keeps the sessions, for everyone's status
 * (every session depends on it): RESTART_JOURNAL_OK, or _ABANDONED after
 * a write failed, or _NONE (restart off, or no journal could be made at
 * start); @what (RESTART_STATUS_MAX) says so in words, with the errno's
 * text. */
enum restart_journal_state {
	RESTART_JOURNAL_OK,
	RESTART_JOURNAL_ABANDONED,
	RESTART_JOURNAL_NONE,
};
enum restart_journal_state restart_journal_status(const struct core *core,
						  char *what, size_t size);

/* The running daemon's journal and store; NULL when restart is off. */
struct journal *restart_journal(const struct core *core);
struct fdstore *restart_fdstore(const struct core *core);

struct why;
/*
 * Whether uid @uid may take one more place in the fd store for @what
 * ("XRCD \"x\"", "a DM"), asked before anything is made: 0 (also
 * without a store), -EDQUOT with @why naming the uid's share
 * ([broker] fd_store_per_uid), or -ENOSPC with @why naming the bound.
 */
int restart_store_room(const struct core *core, uint32_t uid, const char *what,
		       struct why *why);

#endif
