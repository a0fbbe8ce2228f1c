/* SPDX-License-Identifier: MIT */
/*
 * A peer's cgroup (v2), read once at accept, and the globs that choose a
 * domain by it: [domain] cgroups = GLOB and [defaults] per = cgroup
 * (rdmabroker.conf(5)). Apart from the domains because it reads /proc and
 * matches bytes a peer chose; the domains only ask it yes or no, and a key.
 */
#ifndef RDMAB_CGROUP_H
#define RDMAB_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct config;

/* Room for the longest cgroup path the broker keeps, its NUL included,
 * and one byte more: the kernel shows a longer path cut to 4095 bytes, so
 * one of 4095 is as one that cannot be read. */
#define CGROUP_PATH_MAX 4096
/* What a listing carries of a path: its first bytes, and a flag for the
 * rest (ibclient.h's cgroup fields are this size). */
#define CGROUP_SHOWN_MAX 256
/* A glob in the configuration, its NUL included. */
#define CGROUP_GLOB_MAX 256

/*
 * The cgroup v2 path of process @pid, which @pidfd refers to: 0 and a
 * malloc'd path in *@ret_path. The path is read from /proc and then the
 * pidfd is asked whether the process still runs: if it does, @pid was
 * still its number while the file was read, so the path is its own and
 * not that of a process that reused the number. -ESRCH: it exited;
 * -ENOENT: it is in no v2 hierarchy (cgroup v1 only); -ENAMETOOLONG: the
 * path has CGROUP_PATH_MAX - 1 bytes or more; -ENOSYS: no pidfd (@pidfd
 * < 0); else -errno of the read.
 */
int cgroup_of_pid(pid_t pid, int pidfd, char **ret_path);
/* Why cgroup_of_pid() (or the pidfd before it) failed with @err, in words
 * for a client's refusal. */
const char *cgroup_strerror(int err);

/*
 * Parse a glob of rdmabroker.conf(5): '*' (any bytes, '/' included), '?'
 * (one byte), "[...]" (one byte of a set: ranges a-z, '!' or '^' first
 * negates), '\' (the next byte as itself). 0, or -EINVAL with the reason
 * in @why.
 */
int cgroup_glob_check(const char *glob, char *why, size_t whylen);

/*
 * The length of the shortest leading part of @path (a cgroup path, '/'
 * first) that @glob matches whole and that ends where a component does
 * (before a '/' or at the end): the cgroup or the ancestor the glob
 * names. 0 when none does. The work is bounded by the lengths of @path
 * times that of @glob, whatever bytes either holds.
 */
size_t cgroup_glob_prefix(const char *glob, const char *path);

/* Does @glob match @path or one of its ancestors? */
static inline bool cgroup_glob_match(const char *glob, const char *path)
{
	return cgroup_glob_prefix(glob, path) > 0;
}

/*
 * With [defaults] per = cgroup: how many bytes of @path name the client's
 * own domain (with its uid): the shortest ancestor @pattern (the
 * configuration's cgroup_pattern, "": none) matches, else the first
 * @depth (cgroup_depth, 0: all) components, else the whole path.
 */
size_t cgroup_key_len(const char *pattern, unsigned int depth,
		      const char *path);

/* Copy into @buf (CGROUP_SHOWN_MAX bytes) what a listing carries of
 * @path, its first bytes; true when some were left out. */
bool cgroup_show(char *buf, const char *path);

#endif
