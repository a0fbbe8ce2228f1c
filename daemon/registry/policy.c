// SPDX-License-Identifier: MIT
/* Who may join a domain, who is an administrator. Groups are the peer's
 * groups at connect (SO_PEERGROUPS), its cgroup the one it was in then,
 * never looked up again. */
#include "config.h"

#include "daemon/registry/cgroup.h"
#include "daemon/registry/client.h"
#include "daemon/registry/domain.h"
#include "daemon/registry/core.h"

static bool conn_in_group(const struct client *c, gid_t gid)
{
	if (c->cred.gid == gid)
		return true;
	for (size_t i = 0; i < c->n_groups; i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

/* Its cgroup at connect matches one of @d's globs; a cgroup that could
 * not be read matches none. */
static bool conn_in_cgroups(const struct config_domain *d,
			    const struct client *c)
{
	if (!c->cgroup)
		return false;
	for (size_t i = 0; i < d->n_cgroups; i++)
		if (cgroup_glob_match(d->cgroups[i], c->cgroup))
			return true;
	return false;
}

/* Each list the domain has narrows who may join: users or groups, and
 * cgroups, so that adding cgroups to a domain never lets more in. */
bool policy_may_join(const struct config_domain *d, const struct client *c)
{
	bool member = !d->n_users && !d->n_groups;

	for (size_t i = 0; !member && i < d->n_users; i++)
		member = d->users[i] == c->cred.uid;
	for (size_t i = 0; !member && i < d->n_groups; i++)
		member = conn_in_group(c, d->groups[i]);
	if (!member)
		return false;
	return !d->n_cgroups || conn_in_cgroups(d, c);
}

bool policy_is_admin(const struct core *core, const struct client *c)
{
	if (c->cred.uid == 0)
		return true;
	return core->config.has_admin_group &&
	       conn_in_group(c, core->config.admin_gid);
}
