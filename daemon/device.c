// SPDX-License-Identifier: MIT
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/device.h"

int device_parse_mode(const char *s, enum device_mode *ret_mode)
{
	if (strcmp(s, "auto") == 0)
		*ret_mode = DEVICE_MODE_AUTO;
	else if (strcmp(s, "verbs") == 0)
		*ret_mode = DEVICE_MODE_VERBS;
	else if (strcmp(s, "soft") == 0)
		*ret_mode = DEVICE_MODE_SOFT;
	else
		return -EINVAL;
	return 0;
}

const char *device_kind_name(enum device_kind kind)
{
	return kind == DEVICE_KIND_VERBS ? "verbs" : "soft";
}

int device_probe(enum device_mode mode, const struct device_config *cfg,
		 struct device_list *ret_list, const char **ret_why)
{
	int ret;

	memset(ret_list, 0, sizeof(*ret_list));
	if (mode == DEVICE_MODE_SOFT) {
		*ret_why = "--device soft";
		return device_soft_probe(cfg, ret_list);
	}
	ret = device_verbs_probe(ret_list);
	if (ret > 0) {
		*ret_why = mode == DEVICE_MODE_AUTO ?
				   "libibverbs found a device" :
				   "--device verbs";
		return 0;
	}
	if (ret == 0)
		*ret_why = "libibverbs found no RDMA device";
	else if (ret == -ENOSYS)
		*ret_why = "this kernel has no RDMA support";
	else
		*ret_why = "libibverbs could not open any RDMA device";
	if (mode == DEVICE_MODE_VERBS)
		return ret < 0 ? ret : -ENODEV;
	return device_soft_probe(cfg, ret_list);
}

void device_list_close(struct device_list *list)
{
	for (size_t i = 0; i < list->n; i++)
		if (!list->dev[i].removed)
			list->dev[i].ops->shutdown(&list->dev[i]);
	list->n = 0;
}

struct device *device_find(struct device_list *list, const char *name)
{
	for (size_t i = 0; i < list->n; i++) {
		struct device *d = &list->dev[i];

		if (name && *name) {
			if (strcmp(d->name, name) == 0)
				return d;
		} else if (!d->removed) {
			return d;
		}
	}
	return NULL;
}
