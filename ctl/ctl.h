/* SPDX-License-Identifier: MIT */
#ifndef RDMABROKERCTL_H
#define RDMABROKERCTL_H

#include <stdbool.h>
#include <stdio.h>

#include "include/ibclient.h"

/* Exit codes. */
#define CTL_OK 0
#define CTL_ERROR 1
#define CTL_USAGE 2

struct ctl {
	const char *socket_path;
	bool json;
	struct ibc_client *client;
};

struct ctl_command {
	const char *name;
	const char *args;
	const char *help;
	/* argv[0] is the command's name. Returns an exit code. */
	int (*run)(struct ctl *ctl, int argc, char **argv);
};

/* Connect on first use; prints the error and returns CTL_ERROR. */
int ctl_connect(struct ctl *ctl);
/* Print "rdmabrokerctl: WHAT: broker sentence" and return CTL_ERROR. */
int ctl_fail(const char *what, int err);

/* JSON output: a string with escaping, never a bare pointer. */
void json_string(FILE *f, const char *s);

int cmd_status(struct ctl *ctl, int argc, char **argv);
int cmd_devices(struct ctl *ctl, int argc, char **argv);
int cmd_domains(struct ctl *ctl, int argc, char **argv);
int cmd_clients(struct ctl *ctl, int argc, char **argv);
int cmd_objects(struct ctl *ctl, int argc, char **argv);
int cmd_evict(struct ctl *ctl, int argc, char **argv);

#endif
