/* SPDX-License-Identifier: MIT */
/* RSS objects (rss.c): what the event reader needs. */
#ifndef IBC_RSS_H
#define IBC_RSS_H

#include "proto/rdmabroker.pb-c.h"

#include <stdbool.h>

struct ibc_client;
struct ibc_ctx;
struct ibc_queued_event;

/* @ctx closes (@broker: with the broker, ibc_close and ibc_disconnect; the
 * RSS objects are destroyed and freed) or its device is gone (the objects
 * stay for ibc_rss_destroy(), which then only frees them). Called before
 * the context's other objects go: the tables use its WQs. */
void ibc_rss_ctx_closing(struct ibc_ctx *ctx, bool broker);

/* An RssRebuiltEvent: the RSS object's lookup follows the new table, and
 * the event is queued for the callback. Called with the client's lock. */
struct ibc_queued_event *ibc_rss_event(struct ibc_client *cl,
				       const Rdmab__Event *ev);

/* fork(): the RSS list's lock, taken after every client's and context's
 * (fork.c). */
void ibc_rss_fork_lock(void);
void ibc_rss_fork_unlock(void);

#endif
