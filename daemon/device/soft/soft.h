/* SPDX-License-Identifier: MIT */
/*
 * The soft device's context descriptor, shared by the daemon and the
 * library: a sealed memfd that starts with this header. Every client of a
 * domain receives the same memfd, as every importer of a verbs context
 * receives the same cmd_fd.
 */
#ifndef RDMAB_SOFT_H
#define RDMAB_SOFT_H

#include <stdint.h>

#define SOFT_CTX_MAGIC 0x3154465342444d52ULL /* "RDMBSFT1" */
#define SOFT_CTX_VERSION 2
#define SOFT_DEVICE_NAME "soft0"

struct soft_ctx_header {
	uint64_t magic;
	uint32_t version;
	uint32_t pd_handle;
	uint64_t context_id;
	char device[64];
	char domain[64];
	/* SOFT_CTX_* */
	uint32_t flags;
	uint32_t reserved;
};

/* The constructors declare an intent, make the object with a request of
 * its own (the soft device's kernel call), then register it, as on a
 * verbs device ([soft] intent_window in rdmabroker.conf). */
#define SOFT_CTX_INTENT_WINDOW (1u << 0)
/* The device makes records per import ([soft]
 * internal_objects_per_import): the library closes the context with the
 * broker at the end of a session too, as ibv_close_device frees mlx5's. */
#define SOFT_CTX_IMPORT_OBJECTS (1u << 1)

#endif
