// SPDX-License-Identifier: MIT
/*
 * verbs_import_device() (verbs-import.h): ibv_import_device() with one
 * owner of the descriptor whatever libibverbs does with it on failure;
 * the verbs device (device-verbs.c) and the library's verbs contexts
 * (libclient/verbs.c) share it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/kcmp.h>

#include <infiniband/verbs.h>

#include "common/verbs/verbs-err.h"
#include "common/verbs/verbs-import.h"

/* 1: @a and @b are the same open file; 0: they are not; -1: unknown. */
static int verbs_same_file(int a, int b)
{
	long r = syscall(SYS_kcmp, (long)getpid(), (long)getpid(),
			 (long)KCMP_FILE, (long)a, (long)b);

	if (r == 0)
		return 1;
	if (r > 0 || errno == EBADF)
		return 0;
	return -1;
}

int verbs_import_device(int fd, struct ibv_context **ret_ctx)
{
	struct ibv_context *ctx;
	int d, err;

	/* libibverbs gets a private dup: whatever it does with that, @fd
	 * stays ours to close. */
	d = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (d < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	ctx = verbs_try(ibv_import_device(d));
	if (ctx) {
		close(fd);
		*ret_ctx = ctx;
		return 0;
	}
	err = verbs_err(EIO);
	/* @d may be closed already, and its number reused by another
	 * thread: close it only while it is still our file. Without kcmp,
	 * follow libibverbs/device.c (v31 to v44 alike): it gives the
	 * descriptor back for ENODEV and EOPNOTSUPP. EINVAL is ambiguous
	 * (not a character device, or mlx5's static UARs after closing it):
	 * leaking a duplicate is the lesser harm than closing another
	 * thread's file. */
	switch (verbs_same_file(d, fd)) {
	case 1:
		close(d);
		break;
	case 0:
		break;
	default:
		if (err == -ENODEV || err == -EOPNOTSUPP)
			close(d);
		break;
	}
	close(fd);
	return err;
}
