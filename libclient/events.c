// SPDX-License-Identifier: MIT
/*
 * The table of the session's event handlers, then the families' (events.h).
 */
#include "config.h"

#include "libclient/events.h"
#include "libclient/family.h"

/* The session's own; each family lists its own (family.h). */
static const struct ibc_event_handler *const ibc_event_handlers[] = {
	&ibc_shutdown_event,
	&ibc_device_removed_event,
	&ibc_domain_rekeyed_event,
	&ibc_restarted_event,
};

const struct ibc_event_handler *ibc_event_handler(int body)
{
	size_t n = sizeof(ibc_event_handlers) / sizeof(ibc_event_handlers[0]);

	for (size_t i = 0; i < n; i++)
		if (ibc_event_handlers[i]->body == body)
			return ibc_event_handlers[i];
	return ibc_families_event(body);
}
