/* SPDX-License-Identifier: MIT */
/*
 * The socket the daemon binds itself (no systemd socket): made with its
 * mode and group before its name exists, so that nothing is ever chmod'ed
 * or chown'ed by a path someone else could have swapped for a symlink.
 */
#ifndef RDMAB_LISTEN_H
#define RDMAB_LISTEN_H

#include <stddef.h>
#include <sys/types.h>

/* No --socket-group: the socket keeps the daemon's group. */
#define LISTEN_NO_GROUP ((gid_t)-1)

/*
 * Open the directory @path's socket is to be made in, and check that only
 * root and the daemon's user can replace names in it (or that it has the
 * sticky bit): the directory's descriptor, or -errno with the reason in
 * @why (-EPERM: the directory is not safe; any other: it cannot be
 * opened).
 */
int listen_dir_open(const char *path, char *why, size_t size);

/*
 * Bind a listening SOCK_SEQPACKET socket at @path, in the directory @dfd
 * (listen_dir_open()): bound in a private 0700 directory beside @path,
 * given @mode and @gid there (LISTEN_NO_GROUP: none), then renamed into
 * place, never over an existing name. The socket's descriptor (CLOEXEC,
 * non-blocking), or -errno; nothing is left behind on failure.
 */
int listen_bind(int dfd, const char *path, mode_t mode, gid_t gid);

#endif
