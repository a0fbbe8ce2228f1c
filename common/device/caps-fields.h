/* SPDX-License-Identifier: MIT */
/*
 * The device limits ibv_query_device(3) reports, each named once. They
 * travel from the daemon's struct device_caps (daemon/device/device.h) through
 * DeviceCaps on the wire (proto/rdmabroker.proto) into the library's
 * struct ibc_device_entry and struct ibc_caps (include/ibclient.h) and out
 * of `rdmabrokerctl devices --json`; each of those fills, copies or prints
 * them from this list. The .proto and the public header keep their fields
 * written out (wire and ABI); libclient/inspect.c asserts at compile time
 * that each has every field below with its type, and tests/check_wire.c
 * that DeviceCaps has no limit this list lacks. Not installed.
 *
 * CAPS_LIMITS(X) calls X(name, type, printf format) once per limit, in
 * the order ctl prints them.
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

#endif
