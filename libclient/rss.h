/* SPDX-License-Identifier: MIT */
/* RSS objects (rss.c): what the event reader needs. */
#ifndef IBC_RSS_H
#define IBC_RSS_H

#include "proto/rdmabroker.pb-c.h"

struct ibc_client;
struct ibc_queued_event;

/* An RssRebuiltEvent: the RSS object's lookup follows the new table, and
 * the event is queued for the callback. Called with the client's lock. */
struct ibc_queued_event *ibc_rss_event(struct ibc_client *cl,
				       const Rdmab__Event *ev);

#endif
