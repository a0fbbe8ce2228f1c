// SPDX-License-Identifier: MIT
/*
 * systemd integration (sd.h): the passed listening socket and the
 * sd_notify() calls. The only file that includes sd-daemon.h.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "daemon/restart/fdstore.h"
#include "daemon/util/log.h"
#include "daemon/server/sd.h"

int sd_take_listener(const struct fdstore *store)
{
	char **names = NULL;
	int listener = -ENOENT;
	int n;

	n = sd_listen_fds_with_names(1, &names);
	if (n < 0) {
		log_err("systemd passed descriptors that cannot be read: %s",
			strerror(-n));
		return n;
	}
	for (int i = 0; i < n; i++) {
		int fd = SD_LISTEN_FDS_START + i;
		const char *name = names && names[i] ? names[i] : "?";

		if (fdstore_passed(store, fd))
			continue;
		if (listener < 0 &&
		    sd_is_socket_unix(fd, SOCK_SEQPACKET, 1, NULL, 0) > 0) {
			listener = fd;
			/* A SIGUSR2 re-exec passes it as systemd would,
			 * and the log says who did. */
			if (store && !fdstore_notifies(store))
				log_info("listening on the socket the previous "
					 "rdmabrokerd handed over (%s)",
					 name);
			else
				log_info("listening on the socket systemd "
					 "passed (%s)",
					 name);
		} else {
			log_warn("closing descriptor %d (%s) passed by "
				 "systemd: not a listening SOCK_SEQPACKET "
				 "AF_UNIX socket, or one too many",
				 fd, name);
			close(fd);
		}
	}
	if (names) {
		for (int i = 0; i < n; i++)
			free(names[i]);
		free(names);
	}
	/* A blocking listener would hang the loop in accept(); one that
	 * leaks into children would keep the socket open. */
	if (listener >= 0) {
		int fl = fcntl(listener, F_GETFL);

		if (fl < 0 || fcntl(listener, F_SETFL, fl | O_NONBLOCK) < 0 ||
		    fcntl(listener, F_SETFD, FD_CLOEXEC) < 0) {
			int err = -errno;

			log_err("cannot make the socket systemd passed "
				"non-blocking and close-on-exec: %s",
				strerror(-err));
			close(listener);
			return err;
		}
	}
	return listener;
}

void sd_ready(void)
{
	sd_notify(0, "READY=1");
}

void sd_stopping(void)
{
	sd_notify(0, "STOPPING=1");
}

void sd_status(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	n = snprintf(buf, sizeof(buf), "STATUS=");
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	sd_notify(0, buf);
}

void sd_watchdog_ping(void)
{
	sd_notify(0, "WATCHDOG=1");
}

uint64_t sd_watchdog_usec(void)
{
	uint64_t usec = 0;

	if (sd_watchdog_enabled(0, &usec) <= 0)
		return 0;
	return usec;
}
