/* SPDX-License-Identifier: MIT */
#ifndef RDMABROKERCTL_H
#define RDMABROKERCTL_H

#include <stdbool.h>
#include <stdio.h>

#include "common/text/text.h"
#include "include/ibclient.h"

/* Exit codes. */
#define CTL_OK 0
#define CTL_ERROR 1
#define CTL_USAGE 2

struct ctl {
	const char *socket_path;
	bool json;
	bool pretty;
	/* Each request's wait for the broker; 0: no limit. */
	int timeout_ms;
	struct ibc_client *client;
};

/* What a family shows in the core's listings (`domains`, `devices`), so
 * that those name no family. */
struct ctl_family_listing {
	/* Its domain quota: the field of struct ibc_quota (offsetof) and its
	 * size (4 or 8 bytes), its key in `domains --json` ("used" and
	 * "limit") and its USED/LIMIT column's header and width in
	 * `domains`. The families' quotas come in the order of their
	 * fields in struct ibc_quota, before the core's. 0 size: none. */
	size_t quota_field;
	size_t quota_size;
	const char *quota_key;
	const char *quota_header;
	int quota_width;
	/* `domains --json`: ,"key":value of its other figures of domain
	 * @d, after internal_left. */
	void (*domain_json)(const struct ibc_domain_info *d);
	/* `devices --json`: ,"key":value of its figures of device @d
	 * (what it makes of the device for the caller's domain), last. */
	void (*device_json)(const struct ibc_device_info *d);
};

struct ctl_command {
	const char *name;
	const char *args;
	const char *help;
	/* What `help NAME` adds: the subcommands and options, a line each. */
	const char *details;
	/* argv[0] is the command's name. Returns an exit code. */
	int (*run)(struct ctl *ctl, int argc, char **argv);
	/* A family's command: what the family shows in the core's
	 * listings; NULL: nothing. */
	const struct ctl_family_listing *listing;
};

/* Connect on first use; prints the error and returns CTL_ERROR. */
int ctl_connect(struct ctl *ctl);
/* Print "rdmabrokerctl: WHAT: broker sentence" and return CTL_ERROR. */
int ctl_fail(const char *what, int err);

/*
 * Every string that came from the broker (and through it from a client) is
 * escaped before it is printed: text_escape() (common/text/text.h) for the
 * tables and messages, json_string() for JSON.
 */

/* Room for the escaped form of a char array @field. */
#define CTL_TEXT_SIZE(field) TEXT_ESCAPED_SIZE(sizeof(field))

/* @s as a JSON string: valid UTF-8 whatever the bytes (each byte that is
 * not UTF-8 becomes U+FFFD), control characters as \uXXXX. */
void json_string(FILE *f, const char *s);
/* "a, b" (a list the broker sends as one string) as a JSON array of
 * strings: lists are arrays in every command's JSON. */
void json_list(FILE *f, const char *s);
/* A listing's cgroup path (ctl/cgroup.c): escaped, "..." after it when
 * the broker cut it, "-" when empty; in @buf of CTL_CGROUP_SIZE bytes. */
#define CTL_CGROUP_SIZE (TEXT_ESCAPED_SIZE(256) + 4)
const char *ctl_cgroup_text(char *buf, size_t size, const char *cgroup,
			    bool truncated);
/* ,"cgroup":"...","cgroup_truncated":BOOL for a JSON object. */
void json_cgroup(FILE *f, const char *cgroup, bool truncated);
/* The JSON text @s of @len bytes (as the commands print it) indented by
 * two spaces a level, as `rdma -j -p` does. */
void json_pretty(FILE *f, const char *s, size_t len);

int cmd_status(struct ctl *ctl, int argc, char **argv);
int cmd_devices(struct ctl *ctl, int argc, char **argv);
int cmd_domains(struct ctl *ctl, int argc, char **argv);
int cmd_clients(struct ctl *ctl, int argc, char **argv);
int cmd_objects(struct ctl *ctl, int argc, char **argv);
int cmd_evict(struct ctl *ctl, int argc, char **argv);
/* Each family's command (ctl/cmd-FAMILY.c), from the one list. */
#define FAMILY(f, F) extern const struct ctl_command ctl_cmd_##f;
#include "common/families.def"
/* Those commands, in the list's order (main.c). */
extern const struct ctl_command *const ctl_family_commands[];
extern const size_t ctl_n_family_commands;
/* Rekey */
int cmd_domain(struct ctl *ctl, int argc, char **argv);
/* Metrics */
int cmd_metrics(struct ctl *ctl, int argc, char **argv);
/* Containers */
int cmd_cdi(struct ctl *ctl, int argc, char **argv);

#endif
