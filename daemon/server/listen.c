// SPDX-License-Identifier: MIT
/* The socket the daemon binds itself (listen.h states the rule). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/server/listen.h"

/* The private directory's name, beside the socket's. */
#define LISTEN_PRIVATE ".rdmabrokerd.XXXXXX"

/* The last component of @path. */
static const char *listen_base(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

int listen_dir_open(const char *path, char *why, size_t size)
{
	const char *base = listen_base(path);
	char dir[PATH_MAX];
	struct stat st;
	int fd, ret;

	if (!*base) {
		snprintf(why, size, "it names a directory, not a socket");
		return -EISDIR;
	}
	if (base == path)
		snprintf(dir, sizeof(dir), ".");
	else if (base - 1 == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(base - 1 - path),
			 path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		ret = -errno;
		snprintf(why, size, "its directory %s: %s", dir,
			 strerror(-ret));
		if (fd >= 0)
			close(fd);
		return ret;
	}
	/* Whoever owns the directory, or may write it without the sticky
	 * bit, can rename a symlink over the socket's name. */
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(why, size,
			 "its directory %s belongs to uid %u, who could put "
			 "something else in the socket's place; use a "
			 "directory of root's or of uid %u, such as /run",
			 dir, (unsigned int)st.st_uid, (unsigned int)geteuid());
		close(fd);
		return -EPERM;
	}
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
		snprintf(why, size,
			 "its directory %s is writable by %s and has no "
			 "sticky bit (mode %04o), so anyone who may write "
			 "there could put a symlink in the socket's place; "
			 "use a directory only its owner can write, such as "
			 "/run, or one with the sticky bit, such as /tmp",
			 dir, st.st_mode & S_IWOTH ? "everyone" : "its group",
			 (unsigned int)(st.st_mode & 07777));
		close(fd);
		return -EPERM;
	}
	return fd;
}

int listen_bind(int dfd, const char *path, mode_t mode, gid_t gid)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *base = listen_base(path), *pname;
	char priv[sizeof(sa.sun_path)];
	int fd = -1, pfd = -1, ret;

	/* DIR/.rdmabrokerd.XXXXXX/s must fit in sun_path. */
	if (snprintf(priv, sizeof(priv), "%.*s" LISTEN_PRIVATE,
		     (int)(base - path), path) >= (int)sizeof(priv) - 2)
		return -ENAMETOOLONG;
	/* O_EXCL's guarantee: a name nobody else made. */
	if (!mkdtemp(priv))
		return -errno;
	pname = priv + (base - path);
	pfd = openat(dfd, pname,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0) {
		ret = -errno;
		goto out;
	}
	/* Room for it was checked above. */
	memcpy(sa.sun_path, priv, strlen(priv));
	memcpy(sa.sun_path + strlen(priv), "/s", 3);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	/* fchmod() and fchown() on the socket's descriptor would change
	 * the socket's own inode, not the file's: the file is changed by
	 * its name, where only this process can reach it. */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    fchmodat(pfd, "s", mode, 0) < 0 ||
	    (gid != LISTEN_NO_GROUP &&
	     fchownat(pfd, "s", (uid_t)-1, gid, AT_SYMLINK_NOFOLLOW) < 0) ||
	    listen(fd, 128) < 0 ||
	    renameat2(pfd, "s", dfd, base, RENAME_NOREPLACE) < 0) {
		ret = -errno;
		unlinkat(pfd, "s", 0);
		goto out;
	}
	ret = fd;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	if (pfd >= 0)
		close(pfd);
	unlinkat(dfd, pname, AT_REMOVEDIR);
	return ret;
}
