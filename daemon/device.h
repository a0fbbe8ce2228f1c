/* SPDX-License-Identifier: MIT */
/*
 * Devices: one table of operations, two implementations (device-verbs.c on
 * libibverbs, device-soft.c in software). The daemon opens one context with
 * its PD per (domain, device) and hands clients a descriptor to import.
 */
#ifndef RDMAB_DEVICE_H
#define RDMAB_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum device_mode {
	DEVICE_MODE_AUTO,
	DEVICE_MODE_VERBS,
	DEVICE_MODE_SOFT,
};

enum device_kind {
	DEVICE_KIND_VERBS,
	DEVICE_KIND_SOFT,
};

#define DEVICE_NAME_MAX 64
#define DEVICE_MAX 32

struct device_caps {
	uint64_t max_dm_size;
	bool xrc;
	uint32_t max_rss_table_size;
	uint64_t rss_hash_fields;
	uint32_t rss_hash_functions;
	/* Clients can import the context (mlx5 and soft). */
	bool import;
	uint32_t ports;
	char transport[16];
};

struct device;
struct device_ctx;

struct device_ops {
	/* Open a context and its PD for one domain. */
	int (*ctx_open)(struct device *dev, uint64_t ctx_id,
			const char *domain, struct device_ctx **ret_ctx);
	void (*ctx_close)(struct device_ctx *ctx);
	/* The descriptor clients import; owned by the context. */
	int (*ctx_fd)(const struct device_ctx *ctx);
	uint32_t (*ctx_pd_handle)(const struct device_ctx *ctx);
	/* The context's async event descriptor (-1 for none) and its reader,
	 * which returns 1 when the event says the device is gone. */
	int (*ctx_event_fd)(const struct device_ctx *ctx);
	int (*ctx_handle_event)(struct device_ctx *ctx);
	/* Read the device's events; returns 1 once the device is gone. */
	int (*handle_event)(struct device *dev);
	/* Is the device still present (checked periodically)? */
	bool (*present)(struct device *dev);
	/* Release the device's own context; the device is unusable after. */
	void (*shutdown)(struct device *dev);
};

struct device {
	char name[DEVICE_NAME_MAX];
	enum device_kind kind;
	const struct device_ops *ops;
	struct device_caps caps;
	bool removed;
	/* Polls readable when handle_event has work; -1 for none. */
	int event_fd;
	void *priv;
};

struct device_list {
	enum device_kind kind;
	size_t n;
	struct device dev[DEVICE_MAX];
};

struct device_config {
	/* Soft device limits (the verbs device reports its own). */
	uint64_t soft_max_dm_size;
};

int device_parse_mode(const char *s, enum device_mode *ret_mode);
const char *device_kind_name(enum device_kind kind);

/*
 * Choose the device kind for @mode and open its devices. auto takes verbs
 * when libibverbs finds a device and soft otherwise; verbs with no device is
 * -ENODEV. @ret_why says why, for the log.
 */
int device_probe(enum device_mode mode, const struct device_config *cfg,
		 struct device_list *ret_list, const char **ret_why);
void device_list_close(struct device_list *list);
/* Find by name; NULL (or "") is the first device still present. */
struct device *device_find(struct device_list *list, const char *name);

/* Implementations. */
int device_soft_probe(const struct device_config *cfg,
		      struct device_list *list);
/* Returns the number of devices opened, or -errno. */
int device_verbs_probe(struct device_list *list);

#endif
