/* SPDX-License-Identifier: MIT */
/*
 * Each uid's share of the fd store (rdmabroker.conf(5) fd_store_per_uid):
 * the places an uid's XRCD names and DMs take there are charged to it
 * (registry/charge.c's counts), so that no user can fill the store that
 * keeps every session across a restart. The fd store calls these through
 * its books (fdstore_set_books()) as places are put and removed.
 */
#ifndef RDMAB_STORE_SHARE_H
#define RDMAB_STORE_SHARE_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/restart/fdstore.h"

struct store_share;

/* Up to @share places per uid: 0 with *@ret set, or -ENOMEM. */
int store_share_new(unsigned int share, struct store_share **ret);
void store_share_free(struct store_share *sh);
/* The books for fdstore_set_books(): they charge @sh. */
struct fdstore_books store_share_books(struct store_share *sh);

/* Whether one more place fits in @uid's share: 0 or -EDQUOT. */
int store_share_room(const struct store_share *sh, uint32_t uid);
/* The places @uid holds now. */
unsigned int store_share_places(const struct store_share *sh, uint32_t uid);

#endif
