// SPDX-License-Identifier: MIT
/* Who may join a domain, who is an administrator. Groups are the peer's
 * groups at connect (SO_PEERGROUPS), never looked up again. */
#include "config.h"

#include "daemon/conn.h"
#include "daemon/domain.h"
#include "daemon/server.h"

static bool conn_in_group(const struct conn *c, gid_t gid)
{
	if (c->cred.gid == gid)
		return true;
	for (size_t i = 0; i < c->n_groups; i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

bool policy_may_join(const struct config_domain *d, const struct conn *c)
{
	for (size_t i = 0; i < d->n_users; i++)
		if (d->users[i] == c->cred.uid)
			return true;
	for (size_t i = 0; i < d->n_groups; i++)
		if (conn_in_group(c, d->groups[i]))
			return true;
	return false;
}

bool policy_is_admin(const struct server *srv, const struct conn *c)
{
	if (c->cred.uid == 0)
		return true;
	return srv->config.has_admin_group &&
	       conn_in_group(c, srv->config.admin_gid);
}
