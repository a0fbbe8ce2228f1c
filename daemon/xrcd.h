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

#include <stdint.h>

#include "daemon/family.h"
#include "proto/wire.h"

struct core;
struct client;
struct why;

/* The XRCD family (family.h): its init makes or checks the directory,
 * adopts the declared files it kept and removes the rest (0 or -errno,
 * logged); its fini drops the holds and removes the undeclared files; a
 * reload makes names become or stop being declared. */
extern const struct family xrcd_family;
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

#endif
