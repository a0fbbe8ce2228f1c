// SPDX-License-Identifier: MIT
/*
 * One socket for systemd's notify protocol (notify-sock.h).
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/restart/notify-sock.h"
#include "proto/wire.h"

/* The send buffer libsystemd asks for: a restore's burst of FDSTORE=1
 * messages waits in it until the manager reads them, where a socket per
 * message had the buffer of every socket not yet freed. */
#define NOTIFY_SNDBUF (8 * 1024 * 1024)
/* At most what one message of the store passes. */
#define NOTIFY_FDS_MAX 4

void notify_sock_init(struct notify_sock *ns)
{
	memset(ns, 0, sizeof(*ns));
	ns->fd = -1;
}

void notify_sock_close(struct notify_sock *ns)
{
	if (ns->fd >= 0)
		close(ns->fd);
	notify_sock_init(ns);
}

/* The address of @env into @ns: 0 or -EINVAL. */
static int notify_sock_address(struct notify_sock *ns, const char *env)
{
	size_t len = strlen(env);

	if (len < 2 || len >= sizeof(ns->sa.sun_path) ||
	    (env[0] != '/' && env[0] != '@'))
		return -EINVAL;
	memset(&ns->sa, 0, sizeof(ns->sa));
	ns->sa.sun_family = AF_UNIX;
	memcpy(ns->sa.sun_path, env, len);
	/* An abstract name is its bytes, without a terminating NUL; a
	 * path's length counts its NUL. */
	if (env[0] == '@') {
		ns->sa.sun_path[0] = '\0';
		ns->sa_len =
			(socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				    len);
	} else {
		ns->sa_len =
			(socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				    len + 1);
	}
	memcpy(ns->env, env, len + 1);
	return 0;
}

static int notify_sock_open(struct notify_sock *ns)
{
	int sz = NOTIFY_SNDBUF, fd;

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Best effort, as libsystemd's: past wmem_max only a privileged
	 * daemon gets it (SO_SNDBUFFORCE), else the send waits for the
	 * manager to read. */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	ns->fd = fd;
	return 0;
}

int notify_sock_send(struct notify_sock *ns, const char *msg, const int *fds,
		     unsigned int n_fds)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * NOTIFY_FDS_MAX)];
	} ctl;
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = strlen(msg) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	const char *env = getenv("NOTIFY_SOCKET");
	ssize_t n;
	int ret;

	if (!env)
		return 0;
	if (n_fds > NOTIFY_FDS_MAX)
		return -EINVAL;
	if (!ns->sa_len || strcmp(env, ns->env) != 0) {
		ret = notify_sock_address(ns, env);
		if (ret < 0) {
			ns->sa_len = 0;
			return ret;
		}
	}
	if (ns->fd < 0) {
		ret = notify_sock_open(ns);
		if (ret < 0)
			return ret;
	}
	m.msg_name = &ns->sa;
	m.msg_namelen = ns->sa_len;
	if (n_fds)
		wire_put_fds(&m, ctl.buf, fds, n_fds);
	/* No SCM_CREDENTIALS: the manager's socket has SO_PASSCRED, so the
	 * kernel adds ours; MSG_NOSIGNAL, as the manager may be gone. A
	 * signal while the manager's queue is full is no reason to lose a
	 * descriptor's place. */
	do
		n = sendmsg(ns->fd, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return 1;
}
