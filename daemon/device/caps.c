// SPDX-License-Identifier: MIT
/*
 * The capability calls of caps.h, on capget/capset directly: the verbs
 * device's context opens and the RSS paths use them, and keeping the raw
 * syscalls here keeps linux/capability.h out of every other file.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include "daemon/device/caps.h"

static int caps_get(struct __user_cap_data_struct data[2])
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};

	return syscall(SYS_capget, &hdr, data) < 0 ? -errno : 0;
}

static int caps_set(struct __user_cap_data_struct data[2])
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};

	return syscall(SYS_capset, &hdr, data) < 0 ? -errno : 0;
}

int caps_effective_clear(struct caps_saved *saved)
{
	struct __user_cap_data_struct data[2];
	int ret;

	saved->valid = 0;
	ret = caps_get(data);
	if (ret < 0)
		return ret;
	saved->effective[0] = data[0].effective;
	saved->effective[1] = data[1].effective;
	if (!data[0].effective && !data[1].effective)
		return 0;
	data[0].effective = 0;
	data[1].effective = 0;
	ret = caps_set(data);
	if (ret < 0)
		return ret;
	saved->valid = 1;
	return 0;
}

int caps_effective_restore(const struct caps_saved *saved)
{
	struct __user_cap_data_struct data[2];
	int ret;

	if (!saved->valid)
		return 0;
	ret = caps_get(data);
	if (ret < 0)
		return ret;
	data[0].effective = saved->effective[0];
	data[1].effective = saved->effective[1];
	/* Bits that are still permitted come back, unless seccomp or an LSM
	 * refuses capset. */
	return caps_set(data);
}

int caps_effective_empty(void)
{
	struct __user_cap_data_struct data[2];
	int ret = caps_get(data);

	if (ret < 0)
		return ret;
	return !data[0].effective && !data[1].effective;
}

#define NET_RAW_BIT (1u << (CAP_NET_RAW % 32))
#define NET_RAW_WORD (CAP_NET_RAW / 32)

int caps_net_raw_lower(void)
{
	struct __user_cap_data_struct data[2];
	int ret = caps_get(data);

	if (ret < 0)
		return ret;
	if (!(data[NET_RAW_WORD].effective & NET_RAW_BIT))
		return 0;
	data[NET_RAW_WORD].effective &= ~NET_RAW_BIT;
	return caps_set(data);
}

int caps_net_raw_raise(struct caps_saved *saved)
{
	struct __user_cap_data_struct data[2];
	int ret;

	saved->valid = 0;
	ret = caps_get(data);
	if (ret < 0)
		return ret;
	if (!(data[NET_RAW_WORD].permitted & NET_RAW_BIT))
		return -EPERM;
	saved->effective[0] = data[0].effective;
	saved->effective[1] = data[1].effective;
	if (data[NET_RAW_WORD].effective & NET_RAW_BIT)
		return 0;
	data[NET_RAW_WORD].effective |= NET_RAW_BIT;
	ret = caps_set(data);
	if (ret < 0)
		return ret;
	saved->valid = 1;
	return 0;
}

int caps_net_raw_effective(void)
{
	struct __user_cap_data_struct data[2];
	int ret = caps_get(data);

	return ret < 0 ? ret : !!(data[NET_RAW_WORD].effective & NET_RAW_BIT);
}

int caps_net_raw_permitted(void)
{
	struct __user_cap_data_struct data[2];
	int ret = caps_get(data);

	return ret < 0 ? ret : !!(data[NET_RAW_WORD].permitted & NET_RAW_BIT);
}
