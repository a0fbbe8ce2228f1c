// SPDX-License-Identifier: MIT
/*
 * The domain of a context held only by records of ended sessions, made
 * again at restore (restore-domain.h). A state of a daemon before the
 * cgroup fields (R3) names a cgroup's domain by its name alone, which
 * says nothing of the cgroup ("cgroup-UID-CLIENT", after the session that
 * made it): the cgroup is the one the records' process is in, read now,
 * as a session's is read at its connect.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/registry/cgroup.h"
#include "daemon/registry/core.h"
#include "daemon/registry/domain-join.h"
#include "daemon/registry/domain.h"
#include "daemon/registry/objects.h"
#include "daemon/restart/restore-domain.h"
#include "daemon/util/log.h"

/* The domain key of @ow's process's cgroup, read now, in *@ret (the
 * caller's to free): 0, or cgroup_of_pid()'s -errno (-ESRCH: the
 * process that started at @ow's start time is gone). */
static int owner_cgroup_key(struct core *core, const struct obj_owner *ow,
			    char **ret)
{
	char *path = NULL;
	int pidfd, err;

	err = obj_pidfd_open_as(ow->pid, ow->start_time, &pidfd);
	if (err < 0)
		return err;
	err = cgroup_of_pid(ow->pid, pidfd, &path);
	if (pidfd >= 0)
		close(pidfd);
	if (err < 0)
		return err;
	path[cgroup_key_len(core->config.cgroup_pattern,
			    core->config.cgroup_depth, path)] = '\0';
	*ret = path;
	return 0;
}

struct domain *restore_domain_adopt(struct core *core,
				    const struct obj_owner *ow,
				    const Rdmab__State__Context *m,
				    bool *logged)
{
	enum domain_kind kind = (enum domain_kind)m->domain_kind;
	struct domain *d;
	char *key = NULL, pool[64];
	const char *pool_name = m->domain_pool;
	int err;

	if (!core->config.per_cgroup || *m->domain_cgroup ||
	    (kind != DOMAIN_CGROUP && kind != DOMAIN_PRIVATE) ||
	    domain_find(core, m->domain))
		return domain_adopt(core, m->domain, kind, ow->uid,
				    m->domain_cgroup, m->domain_pool);
	err = owner_cgroup_key(core, ow, &key);
	if (err < 0) {
		/* An exited process's objects go as if adopted and
		 * destroyed: nothing to say. */
		if (err != -ESRCH && !*logged)
			log_warn("domain %s: the state (an older daemon's) "
				 "does not name its cgroup, and that of "
				 "process %d, whose session ended, cannot be "
				 "read (%s): its objects are not restored, "
				 "nor those of other such domains",
				 m->domain, (int)ow->pid, cgroup_strerror(err));
		else
			log_debug("domain %s: the cgroup of process %d cannot "
				  "be read (%s), its objects are not restored",
				  m->domain, (int)ow->pid,
				  cgroup_strerror(err));
		*logged |= err != -ESRCH;
		return NULL;
	}
	/* The pool's name, unknown, as the owner's session would have made
	 * it: used only when no domain of the cgroup is there. */
	if (kind == DOMAIN_PRIVATE && !*pool_name) {
		snprintf(pool, sizeof(pool), "cgroup-%u-%" PRIu64,
			 (unsigned int)ow->uid, ow->client_id);
		pool_name = pool;
	}
	d = domain_adopt(core, m->domain, kind, ow->uid, key, pool_name);
	if (d && kind == DOMAIN_CGROUP && strcmp(d->name, m->domain) != 0) {
		/* The process moved to the cgroup of another domain, which
		 * came back: its context and objects are not that domain's
		 * to hold, nor its members' to reach. */
		log_info("domain %s: process %d is now in the cgroup of "
			 "domain %s, its objects are not restored",
			 m->domain, (int)ow->pid, d->name);
		d = NULL;
	} else if (d) {
		log_info("domain %s made again for the cgroup of process %d, "
			 "which the state (an older daemon's) does not name",
			 m->domain, (int)ow->pid);
	}
	free(key);
	return d;
}
