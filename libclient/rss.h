/* SPDX-License-Identifier: MIT */
/* RSS objects (rss.c): what the rest of the library needs. */
#ifndef IBC_RSS_H
#define IBC_RSS_H

#include "proto/rdmabroker.pb-c.h"

#include <stdbool.h>

struct ibc_client;
struct ibc_ctx;

/* @ctx closes (@broker: with the broker, ibc_close and ibc_disconnect; the
 * RSS objects are destroyed and freed) or its device is gone (the objects
 * stay for ibc_rss_destroy(), which then only frees them). Called before
 * the context's other objects go: the tables use its WQs. */
void ibc_rss_ctx_closing(struct ibc_ctx *ctx, bool broker);

/* fork(): the RSS list's lock, taken after every client's and context's
 * (fork.c). */
void ibc_rss_fork_lock(void);
void ibc_rss_fork_unlock(void);

#endif
