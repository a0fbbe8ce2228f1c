/* SPDX-License-Identifier: MIT */
/*
 * The runtime directory (--runtime-dir): the daemon's alone, made 0700
 * when missing, and locked for the daemon's life, so that a second daemon
 * given the same directory refuses to start instead of removing the first
 * one's XRCD files as leftovers.
 */
#ifndef RDMAB_RUNTIME_H
#define RDMAB_RUNTIME_H

/* The lock file, in the runtime directory: the holder's pid. */
#define RUNTIME_LOCK_FILE "rdmabrokerd.lock"

/*
 * Open @path (making it 0700 when it is missing), check that it belongs
 * to the daemon's user (or root) and that no one else may write it, and
 * take its lock: 0 with the directory's and the lock's descriptors
 * (CLOEXEC; the lock lasts while *ret_lockfd is open), or -errno, logged
 * (-EBUSY: another daemon holds it).
 */
int runtime_take(const char *path, int *ret_dirfd, int *ret_lockfd);

#endif
