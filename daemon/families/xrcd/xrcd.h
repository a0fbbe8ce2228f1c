/* SPDX-License-Identifier: MIT */
/*
 * XRC domains by name (DESIGN §4). The kernel keys an XRC domain by the
 * inode of a file, per uverbs device, across contexts; the broker owns
 * those files, in a 0700 directory of its own under the runtime directory,
 * and decides O_CREAT and O_EXCL by its own name table:
 *
 * - A name is private to the domain that made it (each domain's names are
 *   its own namespace) unless the configuration declares it ([xrcd NAME],
 *   domains = a, b): a declared name is shared by the listed domains,
 *   refused to the others (-EACCES), and persistent; an undeclared one
 *   lives while someone holds it open.
 * - Files are "d.NAME" (declared, adopted at start) and "p.N" (private,
 *   removed at start): no client byte ever becomes a path but a validated
 *   declared name, and every open is O_NOFOLLOW relative to the directory.
 * - The daemon holds each XRCD open in the device's own context (never a
 *   domain's), so its life does not depend on any domain's; one name on two
 *   devices is two kernel XRCDs, one file.
 * - A client's open is a registry object of kind XRCD (soft: the broker's
 *   record; verbs: an intent the client registers after its own
 *   ibv_open_xrcd), or, on a context of the client's own, a record of the
 *   session. Each open counts in the domain's xrcds quota.
 */
#ifndef RDMAB_XRCD_H
#define RDMAB_XRCD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/families/family.h"
#include "proto/wire.h"

struct core;
struct client;
struct why;

/* The XRCD family (family.h): its init makes or checks the directory,
 * adopts the declared files it kept and removes the rest (0 or -errno,
 * logged); its fini drops the holds and removes the undeclared files; a
 * reload makes names become or stop being declared. */
extern const struct family xrcd_family;
/* Its journal record kinds start here (family.h's journal_first). */
#define XRCD_JOURNAL_FIRST 32
/* Its record kinds' messages (xrcd-state.c), for the restore's check. */
#define XRCD_JOURNAL_MSGS 3
extern const struct ProtobufCMessageDescriptor
	*const xrcd_journal_msgs[XRCD_JOURNAL_MSGS];
/* The family's field of the registry's Object record (state.proto's
 * Object.xrcd_obj): the XRCD open an XRC SRQ or QP uses. */
#define XRCD_OBJECT_FIELD 11
/* The requests (xrcd-handlers.c turns them into replies), 0 or -errno
 * naming what was wrong in @why. An open fills @out (initialised) and
 * the XRCD's file in *@ret_fd (the table's: the reply sends a copy). */
int xrcd_open(struct client *c, const Rdmab__XrcdOpenRequest *q,
	      struct why *why, Rdmab__XrcdOpenReply *out, int *ret_fd);
/* The close of @c's own-context open @id. */
int xrcd_close(struct client *c, uint64_t id, struct why *why);
/* The XRCDs @c may see, @out's lists allocated in @a. */
int xrcd_list(struct client *c, const Rdmab__ListXrcdsRequest *q,
	      struct wire_arena *a, struct why *why,
	      Rdmab__ListXrcdsReply *out);
/* An administrator's removal of the declared name @name (a client's
 * bytes, checked here): how many dead clients' opens it left. */
int xrcd_remove(struct client *c, const ProtobufCBinaryData *name,
		struct why *why, uint32_t *ret_orphans);
/* The requests it serves (xrcd-handlers.c), up to { 0, NULL }. */
extern const struct family_request xrcd_requests[];

/* @c's session ends: its opens on contexts of its own go. */
void xrcd_conn_closing(struct client *c);

/* --- within the XRCD family: xrcd.c, xrcd-state.c ------------------------ */

struct restore;
struct obj;
struct dctx;
struct domain;

/* Restart (xrcd-state.c): an XRCD name and an open as plain values, so
 * that the journal's code needs none of xrcd.c's structures. */
struct xrcd_name_rec {
	const char *name, *owner, *file;
	bool declared;
	int fd;
	/* Its file's identity (dev 0: an older daemon's record, which
	 * named the inode alone). */
	uint64_t ino, dev;
	/* Devices the daemon holds it on, by name, and the identity of
	 * what it holds on each (device.h's xrcd_hold). */
	const char *held_on[8];
	uint32_t held_id[8];
	unsigned int n_held;
	/* Whose place in the fd store its file takes (FDSTORE_NOBODY:
	 * nobody's), and whether it is charged over the uid's share (a
	 * restore keeps what exists; an administrator's). */
	uint32_t store_uid;
	bool over_share;
	/* Set by the restore's xrcd_adopt_name(): the descriptor the store
	 * handed over under its name was not its file (closed). */
	bool stored_wrong;
};

struct xrcd_open_rec {
	uint64_t id, ino, object_id, client_id, ctx_id;
	pid_t pid;
	bool orphan;
	const char *domain;
	/* An own-context open's session: its client id is client_id. */
	bool live_session;
	/* Its place among the opens, which listings keep. */
	uint64_t seq;
};

/* The records as they change; no-ops with restart off. A new name's
 * file goes to the fd store (0 or -errno: the open is refused). */
int xrcd_journal_name(struct core *core, const struct xrcd_name_rec *r,
		      bool is_new);
void xrcd_journal_name_gone(struct core *core, uint64_t ino);
void xrcd_journal_open(struct core *core, const struct xrcd_open_rec *r);
void xrcd_journal_open_gone(struct core *core, uint64_t id);
void xrcd_journal_next_file(struct core *core, uint64_t next_file);
/* Is @ino held by a descriptor the fd store handed over (a restart's
 * XRCD, whose file is no leftover)? */
bool xrcd_state_passed(struct core *core, uint64_t ino);
/*
 * The directory: the descriptor the store handed over (taken, 0 with
 * *@ret_fd set), -ENOENT when none was, or -errno when @check (xrcd.c's
 * rules, 0 or -errno with a sentence in @why) refuses it (closed, and
 * dropped from the store, the reason logged): the caller opens it by path.
 * Then the one in use goes to the store (xrcd_journal_dir(), 0 or
 * -errno, logged), and leaves it at a stop that hands nothing over.
 */
struct why;
int xrcd_state_dir(struct core *core, int (*check)(int fd, struct why *why),
		   int *ret_fd);
int xrcd_journal_dir(struct core *core, int fd);
void xrcd_journal_dir_gone(struct core *core);
/*
 * The context that holds the XRC domains on device @dev (its descriptor
 * @fd, the device's) goes to the store as "rb.xrcd-ctx.<dev>.<seq>", its
 * name into @name (@size bytes): 0, or -errno (logged: the XRC domains
 * would not outlive a restart). It leaves the store when its device
 * goes (xrcd_journal_ctx_gone(@name)).
 */
int xrcd_journal_ctx(struct core *core, const char *dev, uint64_t seq, int fd,
		     char *name, size_t size);
void xrcd_journal_ctx_gone(struct core *core, const char *name);
/* The family's restore slot (family.h). */
int xrcd_restore(struct core *core, struct restore *rs);

/* xrcd.c, for the restore: make the name @r (its fd taken: closed on a
 * failure unless the table holds it; -1 when the store lost it), held
 * again on the devices it names (a declared name the init adopted
 * already from the directory: @r's fd is closed and r->fd becomes the
 * table's); an open of it. 0 or -errno, with @why. A stored descriptor
 * that is not the recorded file (its inode, and device) is closed (r->fd
 * -1) and counts as lost; a declared name's file in the directory that
 * is the recorded one stands for a lost one. A name whose file is not
 * the one recorded (lost; or a declared name's file in the directory
 * replaced, removed, or made something else while no daemon ran) is
 * -ESTALE: nothing of it is made, r->fd stays the caller's, and a file
 * the init adopted in its place (not the daemon's) is removed. */
int xrcd_adopt_name(struct core *core, struct xrcd_name_rec *r,
		    struct why *why);
/* A refused name's file @fd (inode @ino), which a lost open's record on
 * the soft device still uses: that device keeps a copy while its XRC
 * domain lives, as a kernel XRCD holds its inode, so that no new file
 * takes the inode's number meanwhile (a hold and its drop hand it over).
 * On verbs the clients' own XRCDs hold it. */
void xrcd_adopt_lost(struct core *core, int fd, uint64_t ino);
int xrcd_adopt_open(struct core *core, const struct xrcd_open_rec *r,
		    struct obj *o, struct client *c, struct dctx *ctx,
		    struct domain *d);
void xrcd_adopt_next_file(struct core *core, uint64_t next_file);
/* The restore begins; it saw stored XRC contexts numbered up to @seq:
 * the new ones are numbered past it, so that no name is used twice in
 * the store, and go to the store only at xrcd_adopt_end(), once they
 * hold every name the restore held again (a kill before leaves the
 * stored ones, which hold them all, as they were). */
void xrcd_adopt_begin(struct core *core, uint64_t seq);
void xrcd_adopt_end(struct core *core);
/* Drop every name and open the restore made (a record it could not use):
 * none of the family's state is kept. */
void xrcd_adopt_undo(struct core *core);

#endif
