// SPDX-License-Identifier: MIT
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>

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

static int device_list_verbs(struct device_list *list)
{
	struct ibv_device **devs;
	int n = 0;

	devs = ibv_get_device_list(&n);
	if (!devs)
		return -errno;
	list->kind = DEVICE_KIND_VERBS;
	list->n = 0;
	for (int i = 0; i < n && list->n < DEVICE_MAX; i++) {
		struct device_entry *e = &list->dev[list->n++];

		snprintf(e->name, sizeof(e->name), "%s",
			 ibv_get_device_name(devs[i]));
		e->kind = DEVICE_KIND_VERBS;
	}
	ibv_free_device_list(devs);
	return 0;
}

static void device_list_soft(struct device_list *list)
{
	list->kind = DEVICE_KIND_SOFT;
	list->n = 1;
	snprintf(list->dev[0].name, sizeof(list->dev[0].name), "soft0");
	list->dev[0].kind = DEVICE_KIND_SOFT;
}

int device_probe(enum device_mode mode, struct device_list *ret_list,
		 const char **ret_why)
{
	struct device_list list = { 0 };
	int ret;

	if (mode == DEVICE_MODE_SOFT) {
		device_list_soft(&list);
		*ret_why = "--device soft";
		goto out;
	}
	ret = device_list_verbs(&list);
	if (ret == 0 && list.n > 0) {
		*ret_why = mode == DEVICE_MODE_AUTO ?
				   "libibverbs found a device" :
				   "--device verbs";
		goto out;
	}
	if (mode == DEVICE_MODE_VERBS) {
		*ret_why = ret < 0 ? "libibverbs could not list devices" :
				     "libibverbs found no RDMA device";
		return ret < 0 ? ret : -ENODEV;
	}
	device_list_soft(&list);
	*ret_why = ret < 0 ? "libibverbs could not list devices" :
			     "libibverbs found no RDMA device";
out:
	*ret_list = list;
	return 0;
}
