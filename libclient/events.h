/* SPDX-License-Identifier: MIT */
/*
 * The broker's events and who handles them: the session's own handlers
 * in the table of events.c, each family's in its struct ibc_family
 * (family.h); the reader (call.c) and ibc_dispatch() find them through
 * ibc_event_handler() without naming any family.
 */
#ifndef IBC_EVENTS_H
#define IBC_EVENTS_H

#include "libclient/client.h"

struct ibc_event_handler {
	/* The Event body it handles (Rdmab__Event__BodyCase). */
	int body;
	/* As the event is read, with the client's lock held: do what cannot
	 * wait for the callback and queue the event for ibc_dispatch()
	 * (ibc_queue_event()). The queued event, or NULL without memory. */
	struct ibc_queued_event *(*read)(struct ibc_client *cl,
					 const Rdmab__Event *ev);
	/* After the application's callback for @ev, without the lock: what
	 * the library still does (the callback was the application's chance
	 * to go first). NULL: nothing. */
	void (*after)(struct ibc_client *cl, const struct ibc_event *ev);
};

/* The handler of Event body @body; NULL for an event of a newer broker. */
const struct ibc_event_handler *ibc_event_handler(int body);

/* The session's own handlers; a family's are in its struct ibc_family
 * (family.h). */
extern const struct ibc_event_handler ibc_shutdown_event;	/* client.c */
extern const struct ibc_event_handler ibc_restarted_event;	/* client.c */
extern const struct ibc_event_handler ibc_device_removed_event; /* ctx.c */
extern const struct ibc_event_handler ibc_domain_rekeyed_event; /* rekey.c */

#endif
