/* SPDX-License-Identifier: MIT */
/*
 * One socket for systemd's notify protocol (sd_notify(3)): a datagram to
 * NOTIFY_SOCKET, descriptors as SCM_RIGHTS. libsystemd's
 * sd_pid_notify_with_fds() makes and tunes a socket for every message
 * (socket, two getsockopt and two setsockopt, four id calls and close:
 * ten system calls besides its sendmsg), and a restore tells the store
 * of thousands of descriptors; this one socket is made once, CLOEXEC, and
 * serves every message of the store that owns it.
 */
#ifndef RDMAB_NOTIFY_SOCK_H
#define RDMAB_NOTIFY_SOCK_H

#include <sys/socket.h>
#include <sys/un.h>

struct notify_sock {
	/* -1 until the first message. */
	int fd;
	/* The NOTIFY_SOCKET the address was read from, and the address. */
	char env[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
	struct sockaddr_un sa;
	socklen_t sa_len;
};

void notify_sock_init(struct notify_sock *ns);
/*
 * Send @msg with @n_fds descriptors of @fds (borrowed) to the manager
 * NOTIFY_SOCKET names now (read at every call: a test or a re-exec may
 * change it): 1 when sent, 0 without NOTIFY_SOCKET, -EINVAL for an
 * address that is neither a path nor "@" and an abstract name, or
 * socket()'s or sendmsg()'s -errno.
 */
int notify_sock_send(struct notify_sock *ns, const char *msg, const int *fds,
		     unsigned int n_fds);
void notify_sock_close(struct notify_sock *ns);

#endif
