/* SPDX-License-Identifier: MIT */
#ifndef RDMAB_DEVICE_H
#define RDMAB_DEVICE_H

#include <stddef.h>

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

struct device_entry {
	char name[DEVICE_NAME_MAX];
	enum device_kind kind;
};

struct device_list {
	enum device_kind kind;
	size_t n;
	struct device_entry dev[DEVICE_MAX];
};

int device_parse_mode(const char *s, enum device_mode *ret_mode);
const char *device_kind_name(enum device_kind kind);

/*
 * Choose the device kind for @mode and list its devices. auto takes verbs
 * when libibverbs finds a device and soft otherwise; verbs with no device is
 * -ENODEV. @ret_why says why, for the log.
 */
int device_probe(enum device_mode mode, struct device_list *ret_list,
		 const char **ret_why);

#endif
