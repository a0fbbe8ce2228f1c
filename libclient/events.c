// SPDX-License-Identifier: MIT
/*
 * The table of event handlers: the one place a family's events are
 * registered (events.h).
 */
#include "config.h"

#include "libclient/events.h"

static const struct ibc_event_handler *const ibc_event_handlers[] = {
	&ibc_shutdown_event,	    &ibc_device_removed_event,
	&ibc_dm_free_pending_event, &ibc_dm_revoked_event,
	&ibc_rss_rebuilt_event,	    &ibc_domain_rekeyed_event,
};

const struct ibc_event_handler *ibc_event_handler(int body)
{
	size_t n = sizeof(ibc_event_handlers) / sizeof(ibc_event_handlers[0]);

	for (size_t i = 0; i < n; i++)
		if (ibc_event_handlers[i]->body == body)
			return ibc_event_handlers[i];
	return NULL;
}
