// SPDX-License-Identifier: MIT
/* The families' restores' look-ups (family-state.h). */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "daemon/registry/client.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/domain.h"
#include "daemon/families/family-state.h"
#include "daemon/restart/restart.h"
#include "daemon/registry/core.h"

struct client *state_client(struct core *core, uint64_t id)
{
	struct domain *d;
	struct client *c;

	/* Every adopted session is a member of its domain. */
	TAILQ_FOREACH(d, &core->domains, link)
		TAILQ_FOREACH(c, &d->members, domain_link)
			if (c->id == id)
				return c;
	return NULL;
}

struct dctx *state_ctx(struct core *core, uint64_t id)
{
	struct domain *d;
	struct dctx *x;

	TAILQ_FOREACH(d, &core->domains, link)
		TAILQ_FOREACH(x, &d->ctxs, link)
			if (x->id == id)
				return x;
	return NULL;
}

struct domain *state_domain(struct core *core, const char *name)
{
	struct domain *d;

	TAILQ_FOREACH(d, &core->domains, link)
		if (strcmp(d->name, name) == 0)
			return d;
	return NULL;
}

void state_fd_name(char *buf, size_t len, const char *what, uint64_t key)
{
	snprintf(buf, len, FDSTORE_PREFIX "%s.%" PRIu64, what, key);
}

void state_forget(struct core *core, uint32_t kind, uint64_t key,
		  const char *what)
{
	struct fdstore *st = restart_fdstore(core);
	char name[FDSTORE_NAME_MAX];

	journal_del(restart_journal(core), kind, key);
	if (st) {
		state_fd_name(name, sizeof(name), what, key);
		fdstore_remove(st, name);
	}
}
