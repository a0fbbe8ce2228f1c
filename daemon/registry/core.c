// SPDX-License-Identifier: MIT
/*
 * The hub's own call (core.h): the layers below rekey ask for its
 * automatic check through the event rekey_init() made, so that none of
 * them names rekey.
 */
#include "config.h"

#include <sys/time.h>

#include <event2/event.h>

#include "daemon/registry/core.h"
#include "daemon/util/log.h"

void core_rekey_due(struct core *core, unsigned int delay_ms)
{
	struct timeval tv = { delay_ms / 1000, (delay_ms % 1000) * 1000 };

	if (!core->rekey_ev || event_add(core->rekey_ev, &tv) < 0)
		log_err("cannot schedule the automatic rekey check");
}
