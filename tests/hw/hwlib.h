/* SPDX-License-Identifier: MIT */
/*
 * What the mlx5 hardware suites share: finding the device, a private
 * directory, the daemon they run against, and the kernel's own view of
 * its objects (`rdma resource`). Each suite defines HW_NAME (its name, the
 * prefix of its messages) before including this.
 *
 * Each suite runs in one of three modes (hw_init()): on the first mlx5
 * device (the default; 77 without one); on the soft device (--soft), the
 * broker's side of every step that device models, with each data-path
 * step said skipped on a SKIP line; or on a verbs device that cannot
 * import (--own DEV, rxe under tests/vm), where the clients connect with
 * IBC_CONNECT_ALLOW_OWN_CONTEXT and the library's constructors run on a
 * context of their own (nothing is registered), said too.
 */
#ifndef RDMAB_TESTS_HW_HWLIB_H
#define RDMAB_TESTS_HW_HWLIB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <infiniband/verbs.h>

#include "include/ibclient.h"

#define SKIP 77
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
extern char hw_dir[128], hw_sock[256], hw_conf[256];

enum hw_mode {
	HW_MLX5 = 0,
	HW_SOFT, /* --soft: the broker's side only, no data path */
	HW_OWN,	 /* --own DEV: own contexts, no import */
};

extern enum hw_mode hw_mode;
/* The domain hw_connect() joins (IBC_CONNECT_ATTR_DOMAIN), or NULL for
 * the default one. */
extern const char *hw_domain;

/* A step the mode cannot run: "HW_NAME: SKIP what: why" on stdout. */
#define HW_SKIP(what, why) printf(HW_NAME ": SKIP %s: %s\n", what, why)

/**
 * hw_init() - The mode from the arguments ("", "--soft", "--own DEV") and
 * the device to run on.
 * @argc: main()'s.
 * @argv: main()'s.
 * @find: the mlx5 device to use in the default mode (hw_find_mlx5() or a
 * suite's own choice); NULL when there is none.
 * @ret_dev: the device's name (a static buffer, or @find's, or argv's).
 *
 * Return: 0; SKIP (77) with a line saying so when the default mode finds
 * no device; 2 with the usage on stderr for bad arguments.
 */
int hw_init(int argc, char **argv, const char *(*find)(void),
	    const char **ret_dev);

/**
 * hw_become() - Drop to @uid (and its gid) for good: groups, gid, uid.
 * @uid: the uid; its number is also the gid.
 *
 * Return: 0, or -1 with errno.
 */
int hw_become(unsigned int uid);

/**
 * hw_rdma_count() - How many objects of @type the kernel lists, every
 * process's (`rdma resource show TYPE`): an object whose creator died
 * loses its pid in that listing, so a kill is judged by the whole count
 * (and by number where there is one), never by the dead pid.
 * @type: "qp", "cq", "mr", "pd", "srq".
 *
 * Return: the count, or -1 (said on stderr) when the tool failed.
 */
int hw_rdma_count(const char *type);

/**
 * hw_rdma_qp_listed() - Whether the kernel lists QP number @qpn
 * (`rdma resource show qp lqpn N`).
 * @qpn: the QP number.
 *
 * Return: 1, 0, or -1 (said on stderr) when the tool failed.
 */
int hw_rdma_qp_listed(uint32_t qpn);

/**
 * hw_wait_count() - Poll hw_rdma_count(@type) until it is @want.
 * @type: as hw_rdma_count().
 * @want: the count to wait for.
 * @ms: how long.
 *
 * Return: the last count seen.
 */
int hw_wait_count(const char *type, int want, int ms);

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

/* The MAC of hw_find_mlx5_eth()'s port 1 (the frames' destination). */
extern uint8_t hw_eth_mac[6];

/**
 * hw_find_mlx5_eth() - The name of the first mlx5 device whose port 1 is
 * Ethernet (RSS and flow rules need one), its MAC in hw_eth_mac.
 *
 * Return: the name (a static buffer), or NULL: the suite skips (77), as on
 * an InfiniBand-only mlx5.
 */
const char *hw_find_mlx5_eth(void);

/**
 * hw_mkdir() - Make the suite's directory ($TMPDIR, else /tmp,
 * /@prefix-XXXXXX) and the paths in it.
 * @prefix: the directory's name before its random part.
 *
 * Return: 0, or a negative errno (said on stderr).
 */
int hw_mkdir(const char *prefix);

/**
 * hw_connect() - Connect a client to the suite's daemon.
 * @ret: the client, on success.
 *
 * Return: as ibc_connect().
 */
int hw_connect(struct ibc_client **ret);

/**
 * hw_start_daemon() - Start rdmabrokerd (--device soft or verbs, as the
 * mode says) and wait until it serves a client.
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
