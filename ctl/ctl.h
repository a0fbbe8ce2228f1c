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

struct ctl_command {
	const char *name;
	const char *args;
	const char *help;
	/* What `help NAME` adds: the subcommands and options, a line each. */
	const char *details;
	/* argv[0] is the command's name. Returns an exit code. */
	int (*run)(struct ctl *ctl, int argc, char **argv);
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
/* Rekey */
int cmd_domain(struct ctl *ctl, int argc, char **argv);
/* Metrics */
int cmd_metrics(struct ctl *ctl, int argc, char **argv);
/* Containers */
int cmd_cdi(struct ctl *ctl, int argc, char **argv);

#endif
