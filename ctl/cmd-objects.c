// SPDX-License-Identifier: MIT
/* rdmabrokerctl objects [--client ID] [--domain NAME] */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"

static const char *const state_names[] = {
	[IBC_OBJECT_LIVE] = "live",
	[IBC_OBJECT_DETACHED] = "detached",
	[IBC_OBJECT_DESTROYING] = "destroying",
	[IBC_OBJECT_STUCK] = "stuck",
	[IBC_OBJECT_INTENT] = "intent",
};

static const char *state_name(enum ibc_object_state s)
{
	return (unsigned int)s < sizeof(state_names) / sizeof(state_names[0]) ?
		       state_names[s] :
		       "?";
}

/* "42s", "3m07s", "2h05m", "4d03h": the two largest units. */
static void age_text(char *buf, size_t size, uint64_t usec)
{
	uint64_t s = usec / 1000000;

	if (s < 60)
		snprintf(buf, size, "%" PRIu64 "s", s);
	else if (s < 3600)
		snprintf(buf, size, "%" PRIu64 "m%02" PRIu64 "s", s / 60,
			 s % 60);
	else if (s < 86400)
		snprintf(buf, size, "%" PRIu64 "h%02" PRIu64 "m", s / 3600,
			 s / 60 % 60);
	else
		snprintf(buf, size, "%" PRIu64 "d%02" PRIu64 "h", s / 86400,
			 s / 3600 % 24);
}

/* The value of option @name at argv[*i]: "--name VALUE" or "--name=VALUE";
 * NULL when argv[*i] is not that option. */
static const char *option_value(int argc, char **argv, int *i, const char *name,
				bool *missing)
{
	size_t n = strlen(name);

	if (strncmp(argv[*i], name, n))
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n])
		return NULL;
	if (*i + 1 >= argc) {
		*missing = true;
		return NULL;
	}
	return argv[++*i];
}

static int objects_usage(const char *why, const char *arg)
{
	fprintf(stderr, "rdmabrokerctl: objects: %s%s%s\n", why,
		arg ? ": " : "", arg ? arg : "");
	return CTL_USAGE;
}

static void objects_json(const struct ibc_object_info *o, size_t n)
{
	printf("[");
	for (size_t i = 0; i < n; i++) {
		printf("%s{\"id\":%" PRIu64 ",\"kind\":", i ? "," : "",
		       o[i].id);
		json_string(stdout, ibc_obj_kind_str(o[i].kind));
		printf(",\"handle\":%u,\"client\":%" PRIu64 ",\"pid\":%u,"
		       "\"context\":%" PRIu64 ",\"device\":",
		       o[i].handle, o[i].client_id, o[i].pid, o[i].context_id);
		json_string(stdout, o[i].device);
		printf(",\"domain\":");
		json_string(stdout, o[i].domain);
		printf(",\"state\":");
		json_string(stdout, state_name(o[i].state));
		printf(",\"age_usec\":%" PRIu64, o[i].age_usec);
		json_cgroup(stdout, o[i].cgroup, o[i].cgroup_truncated);
		printf("}");
	}
	printf("]\n");
}

static void objects_table(const struct ibc_object_info *o, size_t n)
{
	/* Ids have up to 15 digits (rdmabrokerd(8), Ids). */
	printf("%-15s %-8s %-7s %-15s %-8s %-15s %-10s %-20s %-10s %-10s %s\n",
	       "ID", "KIND", "HANDLE", "CLIENT", "PID", "CONTEXT", "DEVICE",
	       "DOMAIN", "STATE", "AGE", "CGROUP");
	for (size_t i = 0; i < n; i++) {
		char device[CTL_TEXT_SIZE(o[i].device)];
		char domain[CTL_TEXT_SIZE(o[i].domain)];
		char cgroup[CTL_CGROUP_SIZE];
		char age[32];

		age_text(age, sizeof(age), o[i].age_usec);
		printf("%-15" PRIu64 " %-8s %-7u %-15" PRIu64
		       " %-8u %-15" PRIu64 " %-10s %-20s %-10s %-10s %s\n",
		       o[i].id, ibc_obj_kind_str(o[i].kind), o[i].handle,
		       o[i].client_id, o[i].pid, o[i].context_id,
		       text_escape(device, sizeof(device), o[i].device),
		       text_escape(domain, sizeof(domain), o[i].domain),
		       state_name(o[i].state), age,
		       ctl_cgroup_text(cgroup, sizeof(cgroup), o[i].cgroup,
				       o[i].cgroup_truncated));
	}
}

/*
 * An empty listing of a domain the caller does not see says so, like any
 * unknown name; a domain of others answers exactly like one that does not
 * exist, since the caller sees it in neither listing.
 */
static int objects_domain_visible(struct ctl *ctl, const char *name)
{
	char esc[TEXT_ESCAPED_SIZE(64)];
	struct ibc_domain_info *d;
	size_t n;
	int ret;

	ret = ibc_list_domains(ctl->client, &d, sizeof(*d), &n);
	if (ret < 0)
		return ctl_fail("objects", ret);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(d[i].name, name) == 0) {
			ibc_list_free(d);
			return CTL_OK;
		}
	}
	ibc_list_free(d);
	fprintf(stderr,
		"rdmabrokerctl: objects: no such domain: %s (see "
		"rdmabrokerctl domains)\n",
		text_escape(esc, sizeof(esc), name));
	return CTL_ERROR;
}

int cmd_objects(struct ctl *ctl, int argc, char **argv)
{
	struct ibc_object_filter filter = { 0 };
	struct ibc_object_info *o;
	size_t n;
	int ret;

	for (int i = 1; i < argc; i++) {
		bool missing = false;
		const char *v;

		if ((v = option_value(argc, argv, &i, "--client", &missing))) {
			char *end;

			errno = 0;
			filter.client_id = strtoull(v, &end, 10);
			if (errno || end == v || *end || *v == '-' ||
			    !filter.client_id)
				return objects_usage("not a client id", v);
			filter.comp_mask |= IBC_OBJECT_FILTER_CLIENT;
		} else if ((v = option_value(argc, argv, &i, "--domain",
					     &missing))) {
			filter.domain = v;
			filter.comp_mask |= IBC_OBJECT_FILTER_DOMAIN;
		} else {
			return objects_usage(missing ? "option needs a value" :
						       "unknown argument",
					     argv[i]);
		}
	}
	ret = ctl_connect(ctl);
	if (ret)
		return ret;
	ret = ibc_list_objects(ctl->client, &filter, &o, sizeof(*o), &n);
	if (ret < 0)
		return ctl_fail("objects", ret);
	if (filter.domain && !n) {
		ret = objects_domain_visible(ctl, filter.domain);
		if (ret != CTL_OK) {
			ibc_list_free(o);
			return ret;
		}
	}
	if (ctl->json)
		objects_json(o, n);
	else
		objects_table(o, n);
	ibc_list_free(o);
	return CTL_OK;
}
