/* SPDX-License-Identifier: MIT */
/*
 * XRC domains on the client side (ibc_xrcd_open(3)): the open's structure,
 * which xrcd.c makes, and the two calls between it and the verbs device
 * (verbs.c).
 */
#ifndef IBC_XRCD_H
#define IBC_XRCD_H

#include "libclient/objects.h"

/* An open of an XRC domain by name (xrcd.c). */
struct ibc_xrcd {
	struct ibc_obj o;
	uint64_t ino;
	/* The broker's id of the open: the registry's (o.id), or on a
	 * context of this process's own, the session's. */
	uint64_t open_id;
	bool persistent;
};

/* verbs.c: ibv_open_xrcd on the inode file @fd (O_CREAT, never O_EXCL),
 * which stays the caller's. */
int ibc_verbs_open_xrcd(struct ibc_obj *o, int fd);
/* xrcd.c: an own-context XRCD was closed: tell the broker. */
void ibc_xrcd_own_closed(struct ibc_obj *o);

#endif
