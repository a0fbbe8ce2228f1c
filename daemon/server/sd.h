/* SPDX-License-Identifier: MIT */
/*
 * systemd: socket activation and readiness, status and watchdog notices;
 * no-ops when the daemon runs outside systemd.
 */
#ifndef RDMAB_SD_H
#define RDMAB_SD_H

#include <stdint.h>

/*
 * The listening socket systemd passed us: the first SOCK_SEQPACKET listening
 * AF_UNIX socket; every other passed descriptor is logged and closed.
 * Returns the fd, -ENOENT when systemd passed none, or -errno.
 */
struct fdstore;
/* @store's descriptors (fdstore_passed()) are the restart's: skipped. */
int sd_take_listener(const struct fdstore *store);

/* sd_notify() wrappers; silent no-ops outside systemd. */
void sd_ready(void);
void sd_stopping(void);
void sd_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sd_watchdog_ping(void);
/* The watchdog interval in microseconds, 0 when not set. */
uint64_t sd_watchdog_usec(void);

#endif
