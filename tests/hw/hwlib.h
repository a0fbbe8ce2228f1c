/* SPDX-License-Identifier: MIT */
/*
 * What the mlx5 hardware suites share: finding the device, a private
 * directory, and the daemon they run against. Each suite defines HW_NAME
 * (its name, the prefix of its messages) before including this.
 */
#ifndef RDMAB_TESTS_HW_HWLIB_H
#define RDMAB_TESTS_HW_HWLIB_H

#include <stdbool.h>
#include <stdio.h>

#include <infiniband/verbs.h>

#include "include/ibclient.h"

#define SKIP   77
#define NOBODY 65534

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, HW_NAME ": " __VA_ARGS__);             \
			fprintf(stderr, " (%s)\n", ibc_last_error());          \
			return 1;                                              \
		}                                                              \
	} while (0)

/* The suite's directory, the daemon's socket and configuration in it. */
extern char hw_dir[64], hw_sock[256], hw_conf[256];

/**
 * hw_is_mlx5() - Whether @dev is driven by mlx5_core.
 * @dev: a device of ibv_get_device_list().
 */
bool hw_is_mlx5(struct ibv_device *dev);

/**
 * hw_find_mlx5() - The name of the first mlx5 device.
 *
 * Return: a static buffer, or NULL when there is none.
 */
const char *hw_find_mlx5(void);

/**
 * hw_mkdir() - Make the suite's directory and the paths in it.
 * @tmpl: a mkdtemp() template, "/tmp/...-XXXXXX".
 *
 * Return: 0, or a negative errno.
 */
int hw_mkdir(const char *tmpl);

/**
 * hw_connect() - Connect a client to the suite's daemon.
 * @ret: the client, on success.
 *
 * Return: as ibc_connect().
 */
int hw_connect(struct ibc_client **ret);

/**
 * hw_start_daemon() - Start rdmabrokerd --device verbs and wait until it
 * serves a client.
 * @bin: the daemon's binary.
 * @conf_text: its whole configuration, or NULL for an empty one.
 *
 * Return: 0; -ECHILD when the daemon exited at start; -ETIMEDOUT when it
 * served no client within 10 s; another negative errno when the
 * configuration could not be written.
 */
int hw_start_daemon(const char *bin, const char *conf_text);

/**
 * hw_stop_daemon() - Stop the daemon and remove the suite's directory.
 * @subdir: a directory the daemon made in it to remove first, with the
 * files in it, or NULL.
 */
void hw_stop_daemon(const char *subdir);

#endif
