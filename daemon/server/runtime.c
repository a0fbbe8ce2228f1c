// SPDX-License-Identifier: MIT
/* The runtime directory and its lock (runtime.h states the rules). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/util/log.h"
#include "daemon/server/runtime.h"

/* Open @path, made 0700 when it is missing; -errno, logged. */
static int runtime_open(const char *path)
{
	struct stat st;
	int fd, err;

	if (mkdir(path, 0700) == 0)
		log_notice("made the runtime directory %s (0700)", path);
	else if (errno != EEXIST) {
		err = -errno;
		log_err("cannot make the runtime directory %s: %s%s", path,
			strerror(-err),
			err == -ENOENT ? " (its parent must exist)" : "");
		return err;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		err = -errno;
		log_err("cannot open the runtime directory %s: %s", path,
			strerror(-err));
		if (fd >= 0)
			close(fd);
		return err;
	}
	/* Its files are the daemon's: nobody else may add, swap or remove
	 * one. */
	if ((st.st_uid != 0 && st.st_uid != geteuid()) ||
	    (st.st_mode & (S_IWGRP | S_IWOTH))) {
		log_err("the runtime directory %s belongs to uid %u with mode "
			"%04o: it must belong to uid %u (or root) and be "
			"writable by its owner only",
			path, (unsigned int)st.st_uid,
			(unsigned int)(st.st_mode & 07777),
			(unsigned int)geteuid());
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* The pid the holder of @fd's lock wrote in it; 0 when unknown. */
static long runtime_holder(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	char *end;
	long pid;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	pid = strtol(buf, &end, 10);
	return end != buf && *end == '\n' && pid > 0 ? pid : 0;
}

/* Take the lock of the directory @dfd (@path for messages): the lock's
 * descriptor, or -errno, logged. */
static int runtime_lock(int dfd, const char *path)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char pid[32];
	int fd, err, n;

	/* Nobody else may write the directory: the file is the daemon's. */
	fd = openat(dfd, RUNTIME_LOCK_FILE,
		    O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		log_err("cannot open %s/%s: %s", path, RUNTIME_LOCK_FILE,
			strerror(-err));
		return err;
	}
	/* An open file description's lock: it goes when the daemon does,
	 * however it ends, and no other descriptor's close drops it. */
	if (fcntl(fd, F_OFD_SETLK, &fl) < 0) {
		err = -errno;
		if (err == -EAGAIN || err == -EACCES) {
			long holder = runtime_holder(fd);

			if (holder)
				log_err("the runtime directory %s is in use "
					"by rdmabrokerd pid %ld (it holds "
					"%s); stop it, or give this daemon "
					"another --runtime-dir",
					path, holder, RUNTIME_LOCK_FILE);
			else
				log_err("the runtime directory %s is in use "
					"by another rdmabrokerd, which is "
					"starting (it holds %s); give this "
					"daemon another --runtime-dir",
					path, RUNTIME_LOCK_FILE);
			err = -EBUSY;
		} else {
			log_err("cannot lock %s/%s: %s", path,
				RUNTIME_LOCK_FILE, strerror(-err));
		}
		close(fd);
		return err;
	}
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	errno = 0;
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
		err = errno ? -errno : -EIO;
		log_err("cannot write %s/%s: %s", path, RUNTIME_LOCK_FILE,
			strerror(-err));
		close(fd);
		return err;
	}
	return fd;
}

int runtime_take(const char *path, int *ret_dirfd, int *ret_lockfd)
{
	int dfd, lfd;

	if (!path) {
		log_err("no runtime directory (--runtime-dir)");
		return -EINVAL;
	}
	dfd = runtime_open(path);
	if (dfd < 0)
		return dfd;
	lfd = runtime_lock(dfd, path);
	if (lfd < 0) {
		close(dfd);
		return lfd;
	}
	*ret_dirfd = dfd;
	*ret_lockfd = lfd;
	return 0;
}
