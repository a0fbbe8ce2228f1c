// SPDX-License-Identifier: MIT
/*
 * A detached owner's process across a restart (issue 25 item 1, "each
 * pidfd"): the pidfd its watch holds (registry/obj-watch.c) is kept in the
 * fd store as "rb.pidfd.<key>", the key the client id of the owner that
 * brought it, which every owner of the watch names in its record. At the
 * restore that pidfd is the truth about the process: one that exited
 * while no daemon ran polls readable, whatever process has its pid since.
 * The pid and start time are only the fallback, for a state without one
 * (an older daemon's, or a watch that had no pidfd).
 *
 * Its place is not charged to the uid's fd_store_per_uid: a watch holds a
 * pidfd only within the watches' own bound (connections_per_uid per uid,
 * --max-clients in all; past it a timer watches and nothing is kept), a
 * process that exits frees its place, and a live one costs one place
 * however many sessions it ended. restart_store_max() counts one place
 * per client for them.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "daemon/registry/core.h"
#include "daemon/registry/objects.h"
#include "daemon/registry/user.h"
#include "daemon/restart/restart-int.h"
#include "daemon/restart/restart.h"
#include "daemon/util/log.h"

int restart_pidfd_kept(struct core *core, uint64_t key, int pidfd)
{
	struct fdstore *st = restart_fdstore(core);
	char name[FDSTORE_NAME_MAX + 1];
	int ret;

	if (!st)
		return -ENOSYS;
	restart_fd_name(name, sizeof(name), "pidfd", key);
	ret = fdstore_put(st, name, pidfd);
	if (ret < 0)
		log_warn("client %" PRIu64 ": its process's pidfd is not kept "
			 "in the fd store (%s); a restart knows the process "
			 "by its pid and start time",
			 key, strerror(-ret));
	return ret;
}

void restart_pidfd_gone(struct core *core, uint64_t key)
{
	struct fdstore *st = restart_fdstore(core);
	char name[FDSTORE_NAME_MAX + 1];

	if (!st)
		return;
	restart_fd_name(name, sizeof(name), "pidfd", key);
	fdstore_remove(st, name);
}

/* What the pidfd its record names said of @ow's process is said for
 * the process's other owners the restore has not watched yet, which
 * cannot take it again: @dead, the process exited; else they go by pid
 * and start time, unlogged. */
static void owners_of_key(struct restore *rs, const struct obj_owner *ow,
			  bool dead)
{
	struct obj_owner *o;

	if (!ow->pidfd_key)
		return;
	TAILQ_FOREACH(o, &rs->core->registry->owners, link) {
		if (o == ow || o->pidfd_key != ow->pidfd_key || o->watch ||
		    o->ev || o->state != OWNER_DETACHED)
			continue;
		if (dead)
			o->state = OWNER_DEAD;
		else
			o->pidfd_key = 0;
	}
}

int restart_owner_watch_kept(struct restore *rs, struct obj_owner *ow,
			     struct user *u)
{
	char name[FDSTORE_NAME_MAX + 1];
	uint64_t key = ow->pidfd_key;
	int fd, err;

	if (key && obj_watch_join_kept(ow, key) == 0)
		return 0;
	/* A record that names none may have been written before its
	 * watch's pidfd was stored under its own id (killed between the
	 * two): that place, if there, is its process's too, and would
	 * otherwise be closed (FDSTOREREMOVE of its name) after a new
	 * pidfd of the process was stored under it. */
	if (!key)
		key = ow->client_id;
	restart_fd_name(name, sizeof(name), "pidfd", key);
	if (restore_take_fd(rs, name, &fd) < 0) {
		if (ow->pidfd_key)
			log_notice("client %" PRIu64 " (pid %d): its "
				   "process's pidfd is not in the fd store; "
				   "the process is known by its pid and start "
				   "time",
				   ow->client_id, (int)ow->pid);
		owners_of_key(rs, ow, false);
		return -ENOENT;
	}
	err = obj_pidfd_check(fd, ow->pid);
	if (err == -EINVAL)
		log_warn("client %" PRIu64 " (pid %d): %s is no pidfd of its "
			 "process, not used; the process is known by its pid "
			 "and start time",
			 ow->client_id, (int)ow->pid, name);
	if (err < 0) {
		close(fd);
		fdstore_remove(rs->store, name);
		owners_of_key(rs, ow, err == -ESRCH);
		return err == -ESRCH ? -ESRCH : -ENOENT;
	}
	err = obj_watch_adopt(ow, u, fd, key);
	/* The process's watch kept another pidfd, or none (past the
	 * watches' bound now): this place goes. */
	if (err < 0 || ow->watch->key != key)
		fdstore_remove(rs->store, name);
	return err;
}
