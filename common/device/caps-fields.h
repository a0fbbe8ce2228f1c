/* SPDX-License-Identifier: MIT */
/*
 * The device limits ibv_query_device(3) and ibv_query_device_ex(3)
 * report, each named once. They travel from the daemon's struct
 * device_caps (daemon/device/device.h) through DeviceCaps on the wire
 * (proto/rdmabroker.proto) into the library's struct ibc_device_info and
 * struct ibc_caps (include/ibclient.h) and out of `rdmabrokerctl devices`;
 * each of those fills, copies or prints them from these lists. The .proto
 * and the public header keep their fields written out (wire and ABI), so
 * does struct device_caps; libclient/inspect.c and daemon/server/inspect.c
 * assert at compile time that each has every field below with its type,
 * and tests/check_wire.c that DeviceCaps has no limit these lists lack.
 * Not installed.
 *
 * Some of these limits are the device's answer for a family's objects
 * (max_dm_size, rss_caps): they are still the device's description, so
 * they are named here, in the device layer, and the files that copy or
 * print a device's limits walk the lists instead of naming them (issue 24
 * items 7 and 9). What a family makes of them for a domain (the DM quota
 * left, say) is the family's own (struct family's device_caps hook).
 *
 * CAPS_LIMITS(X) calls X(name, type, printf format) once per limit of
 * ibv_query_device(3), in the order ctl prints them.
 */
#ifndef RDMAB_CAPS_FIELDS_H
#define RDMAB_CAPS_FIELDS_H

#include <inttypes.h>

#define CAPS_LIMITS(X)                                                         \
	X(max_qp, uint32_t, "%" PRIu32)                                        \
	X(max_qp_wr, uint32_t, "%" PRIu32)                                     \
	X(max_sge, uint32_t, "%" PRIu32)                                       \
	X(max_cq, uint32_t, "%" PRIu32)                                        \
	X(max_cqe, uint32_t, "%" PRIu32)                                       \
	X(max_mr, uint32_t, "%" PRIu32)                                        \
	X(max_pd, uint32_t, "%" PRIu32)                                        \
	X(max_mw, uint32_t, "%" PRIu32)                                        \
	X(max_ah, uint32_t, "%" PRIu32)                                        \
	X(max_srq, uint32_t, "%" PRIu32)                                       \
	X(max_srq_wr, uint32_t, "%" PRIu32)                                    \
	X(max_srq_sge, uint32_t, "%" PRIu32)                                   \
	X(max_wq, uint32_t, "%" PRIu32)                                        \
	X(max_mr_size, uint64_t, "%" PRIu64)

/*
 * CAPS_NUMBERS(X): every number of the device's description, the limits
 * above among them, as X(name, type, printf format), in the order
 * `rdmabrokerctl devices --json` prints them: ibv_query_device_ex(3)'s
 * max_dm_size and rss_caps (max_rwq_indirection_table_size,
 * rx_hash_fields_mask, rx_hash_function), the limits, then
 * rss_caps.supported_qpts (1 << IBV_QPT_*), which came later.
 */
#define CAPS_NUMBERS(X)                                                        \
	X(max_dm_size, uint64_t, "%" PRIu64)                                   \
	X(max_rss_table_size, uint32_t, "%" PRIu32)                            \
	X(rss_hash_fields, uint64_t, "%" PRIu64)                               \
	X(rss_hash_functions, uint32_t, "%" PRIu32)                            \
	CAPS_LIMITS(X)                                                         \
	X(rss_qp_types, uint32_t, "%" PRIu32)

/*
 * CAPS_FLAGS(X): the yes-or-no answers a context's caps carry, as
 * X(name): XRC domains, and whether a DM can be shared with the domain's
 * clients (soft: yes; verbs: the start-up self-test; the daemon's
 * device_caps.dm_reason says why not, which the DM family reports).
 */
#define CAPS_FLAGS(X)                                                          \
	X(xrc)                                                                 \
	X(dm_shared)

/*
 * CAPS_COLUMNS(X): the limits `rdmabrokerctl devices` has a column for,
 * after the XRC one, as X(name, header, width), in their order.
 */
#define CAPS_COLUMNS(X)                                                        \
	X(max_dm_size, "MAX_DM_SIZE", 12)                                      \
	X(max_rss_table_size, "RSS_TABLE", 10)

#endif
