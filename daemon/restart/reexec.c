// SPDX-License-Identifier: MIT
/*
 * Upgrade without systemd (issue 25 item 4): on SIGUSR2 the daemon starts
 * the binary it was started from (nginx's binary upgrade is the
 * convention), handing it every descriptor of the store and the listener
 * as systemd would (LISTEN_FDS, LISTEN_FDNAMES, LISTEN_PID) and a notify
 * socket of its own, and waits, serving nothing, for the new daemon's
 * READY=1: then it exits leaving everything to it; if the new binary exits
 * or stays silent first, the old daemon kills it and goes on as it was.
 * Under systemd (NOTIFY_SOCKET set) the new process could not become the
 * unit's main process: systemctl restart is the way there.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/util/log.h"
#include "daemon/restart/restart-int.h"
#include "daemon/restart/restart.h"
#include "daemon/restart/restart-srv.h"
#include "daemon/server/server.h"

/* How long the new binary may take to say READY=1. */
#define REEXEC_READY_MS 30000
/* Where the passed descriptors wait before they move to 3, 4, ... */
#define REEXEC_HIGH_FD 4096

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The child: the descriptors at 3.., the environment systemd gives, the
 * new binary. Never returns. */
static void reexec_child(char *const argv[], const int *fds,
			 const char *const *names, unsigned int n,
			 const char *notify)
{
	char buf[32], *joined;
	size_t len = 1;
	int *high;

	for (unsigned int i = 0; i < n; i++)
		len += strlen(names[i]) + 1;
	joined = calloc(1, len);
	high = calloc(n ? n : 1, sizeof(*high));
	if (!joined || !high)
		_exit(127);
	/* Out of the way first: a descriptor may sit where another goes. */
	for (unsigned int i = 0; i < n; i++) {
		high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, REEXEC_HIGH_FD);
		if (high[i] < 0)
			_exit(127);
		if (i)
			strcat(joined, ":");
		strcat(joined, names[i]);
	}
	for (unsigned int i = 0; i < n; i++)
		if (dup2(high[i], 3 + (int)i) < 0)
			_exit(127);
	snprintf(buf, sizeof(buf), "%u", n);
	setenv("LISTEN_FDS", buf, 1);
	snprintf(buf, sizeof(buf), "%d", (int)getpid());
	setenv("LISTEN_PID", buf, 1);
	setenv("LISTEN_FDNAMES", joined, 1);
	setenv("NOTIFY_SOCKET", notify, 1);
	execv(argv[0], argv);
	_exit(127);
}

/* The runtime directory's lock (runtime.c: an OFD lock): let go for the
 * new daemon to take, taken back when it fails. */
static int reexec_lock(int fd, short type)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET };

	if (fd < 0)
		return 0;
	return fcntl(fd, F_OFD_SETLK, &fl) < 0 ? -errno : 0;
}

/* Whether the new binary runs at all: --version exits 0. */
static int reexec_probe(const char *path)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		execl(path, path, "--version", (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ENOEXEC;
}

/* The sender of the datagram @m received, or 0 when it came without
 * credentials. */
static pid_t reexec_sender(struct msghdr *m)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		struct ucred uc;

		if (c->cmsg_level != SOL_SOCKET ||
		    c->cmsg_type != SCM_CREDENTIALS ||
		    c->cmsg_len < CMSG_LEN(sizeof(uc)))
			continue;
		memcpy(&uc, CMSG_DATA(c), sizeof(uc));
		return uc.pid;
	}
	return 0;
}

/* Wait for READY=1 on @sock from the child @pid: 0, or -ECHILD when it
 * exited, -ETIMEDOUT. @sock's abstract name is anyone's to write to: a
 * READY=1 counts only with the child's pid on it (SO_PASSCRED), else a
 * stranger's word would make this daemon exit before a new one serves. */
static int reexec_wait(int sock, pid_t pid)
{
	int64_t end = now_ms() + REEXEC_READY_MS;
	char msg[4096];
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(struct ucred))];
	} ctl;

	while (now_ms() < end) {
		struct pollfd p = { .fd = sock, .events = POLLIN };
		struct iovec iov = { msg, sizeof(msg) - 1 };
		struct msghdr m = { .msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = ctl.buf,
				    .msg_controllen = sizeof(ctl.buf) };
		ssize_t n;

		if (waitpid(pid, NULL, WNOHANG) == pid)
			return -ECHILD;
		if (poll(&p, 1, 100) <= 0)
			continue;
		/* Its FDSTORE=1 descriptors are copies of ours: with room
		 * for the credentials only, MSG_CTRUNC drops them. */
		n = recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n <= 0 || reexec_sender(&m) != pid)
			continue;
		msg[n] = '\0';
		if (strstr(msg, "READY=1"))
			return 0;
	}
	return -ETIMEDOUT;
}

static void reexec_cb(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;
	struct restart *rs = srv->core.restart;
	unsigned int n, max = fdstore_count(rs->store) + 1;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char notify[sizeof(sa.sun_path)];
	const char **names = NULL;
	int *fds = NULL, sock = -1, ret;
	pid_t pid;

	if (rs->systemd) {
		log_warn("SIGUSR2: under systemd, upgrade with systemctl "
			 "restart rdmabrokerd (the store keeps the sessions)");
		return;
	}
	if (!srv->opt.argv || !srv->opt.argv[0]) {
		log_warn("SIGUSR2: the daemon's own path is unknown");
		return;
	}
	ret = reexec_probe(srv->opt.argv[0]);
	if (ret < 0) {
		log_err("SIGUSR2: %s --version fails: not re-executing",
			srv->opt.argv[0]);
		return;
	}
	fds = calloc(max, sizeof(*fds));
	names = calloc(max, sizeof(*names));
	sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (!fds || !names || sock < 0 ||
	    setsockopt(sock, SOL_SOCKET, SO_PASSCRED, &(int){ 1 },
		       sizeof(int)) < 0)
		goto out;
	/* Abstract: nothing to clean up; the pid makes it ours. */
	snprintf(notify, sizeof(notify), REEXEC_NOTIFY_PREFIX "%d",
		 (int)getpid());
	memcpy(sa.sun_path + 1, notify + 1, strlen(notify) - 1);
	if (bind(sock, (struct sockaddr *)&sa,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
			     strlen(notify))) < 0)
		goto out;
	n = fdstore_list(rs->store, fds, names, max - 1);
	if (n > max - 1)
		goto out;
	if (srv->listen_fd >= 0) {
		fds[n] = srv->listen_fd;
		names[n++] = "listener";
	}
	log_notice("SIGUSR2: starting %s with %u descriptors", srv->opt.argv[0],
		   n);
	reexec_lock(srv->runtime_lock_fd, F_UNLCK);
	pid = fork();
	if (pid < 0) {
		reexec_lock(srv->runtime_lock_fd, F_WRLCK);
		goto out;
	}
	if (pid == 0)
		reexec_child(srv->opt.argv, fds, names, n, notify);
	ret = reexec_wait(sock, pid);
	if (ret < 0) {
		log_err("SIGUSR2: the new daemon (pid %d) %s: going on as "
			"before",
			(int)pid,
			ret == -ECHILD ? "exited" : "never got ready");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		if (reexec_lock(srv->runtime_lock_fd, F_WRLCK) < 0)
			log_warn("SIGUSR2: the runtime directory's lock could "
				 "not be taken back: another daemon may start "
				 "there");
		goto out;
	}
	log_notice("SIGUSR2: the new daemon (pid %d) is ready; exiting",
		   (int)pid);
	/* It serves from here: nothing of ours is removed or told. */
	rs->handoff = true;
	srv->tab.stopping = true;
	event_base_loopexit(srv->core.base, NULL);

out:
	if (sock >= 0)
		close(sock);
	free(fds);
	free(names);
}

int reexec_init(struct server *srv)
{
	struct restart *rs = srv->core.restart;

	rs->usr2_ev = evsignal_new(srv->core.base, SIGUSR2, reexec_cb, srv);
	if (!rs->usr2_ev || event_add(rs->usr2_ev, NULL) < 0)
		return -ENOMEM;
	return 0;
}
