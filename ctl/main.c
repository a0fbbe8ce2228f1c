// SPDX-License-Identifier: MIT
/* rdmabrokerctl: option parsing and the command table. It uses nothing but
 * the public libibclient API. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"

static const struct ctl_command commands[] = {
	{ "status", "", "daemon version, uptime, device kind, clients, "
			"requests served", cmd_status },
	{ "devices", "", "devices and their capabilities", cmd_devices },
	{ "domains", "", "domains: members, contexts, quota use",
	  cmd_domains },
	{ "clients", "", "connected clients and what they hold",
	  cmd_clients },
	{ "objects", "[--client ID] [--domain NAME]",
	  "objects clients made in shared contexts", cmd_objects },
	{ "evict", "[--rekey [--force]] CLIENT",
	  "end a client's session; --rekey: and shut it out (admin)",
	  cmd_evict },
	/* Device memory. */
	{ "dm", "[list | show ID | free ID | revoke ID]",
	  "device memory: DMs, holders, state; free, revoke (admin)",
	  cmd_dm },
	{ "xrcd", "[list | show NAME | remove NAME]",
	  "XRC domains by name; remove: administrators", cmd_xrcd },
	/* RSS */
	{ "rss", "[list | show ID]",
	  "RSS objects: tables, keys, matches, WQs and owners", cmd_rss },
	/* Rekey */
	{ "domain", "rekey NAME [--force]",
	  "give a domain new contexts (administrators)", cmd_domain },
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f, "Usage: rdmabrokerctl [--socket PATH] [--json] COMMAND "
		   "[ARG]...\n"
		   "Show and manage what rdmabrokerd shares.\n\n"
		   "Options:\n"
		   "  -s, --socket PATH  the broker's socket (default "
		   "$RDMABROKER_SOCKET or\n"
		   "                     " IBC_DEFAULT_SOCKET ")\n"
		   "  -j, --json         print JSON instead of a table\n"
		   "  -V, --version      print the version and exit\n"
		   "  -h, --help         print this help and exit\n\n"
		   "Commands:\n");
	for (size_t i = 0; i < N_COMMANDS; i++) {
		/* Long arguments get a line of their own. */
		if (strlen(commands[i].args) > 10)
			fprintf(f, "  %-8s %s\n  %-8s %-10s %s\n",
				commands[i].name, commands[i].args, "", "",
				commands[i].help);
		else
			fprintf(f, "  %-8s %-10s %s\n", commands[i].name,
				commands[i].args, commands[i].help);
	}
	fprintf(f, "\nExit status: 0 success, 1 error, 2 usage. See "
		   "rdmabrokerctl(8).\n");
}

int ctl_fail(const char *what, int err)
{
	const char *why = ibc_last_error();
	/* The broker's sentence, which may quote a client's bytes; the
	 * library keeps 255 bytes of it, and a longer one is cut. */
	char text[TEXT_ESCAPED_SIZE(256)];

	fprintf(stderr, "rdmabrokerctl: %s: %s\n", what,
		*why ? text_escape(text, sizeof(text), why) : strerror(-err));
	return CTL_ERROR;
}

int ctl_connect(struct ctl *ctl)
{
	struct ibc_connect_attr attr = { 0 };
	int ret;

	if (ctl->client)
		return CTL_OK;
	if (ctl->socket_path) {
		attr.comp_mask |= IBC_CONNECT_ATTR_SOCKET;
		attr.socket_path = ctl->socket_path;
	}
	ret = ibc_connect(&attr, &ctl->client);
	if (ret < 0)
		return ctl_fail("connect", ret);
	return CTL_OK;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct ctl ctl = { 0 };
	int c, ret;

	/* "+": options end at the command, which parses its own. */
	while ((c = getopt_long(argc, argv, "+s:jVh", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			ctl.socket_path = optarg;
			break;
		case 'j':
			ctl.json = true;
			break;
		case 'V':
			printf("rdmabrokerctl %s\n", PACKAGE_VERSION);
			return CTL_OK;
		case 'h':
			usage(stdout);
			return CTL_OK;
		default:
			usage(stderr);
			return CTL_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "rdmabrokerctl: no command given\n");
		usage(stderr);
		return CTL_USAGE;
	}
	for (size_t i = 0; i < N_COMMANDS; i++) {
		if (strcmp(argv[optind], commands[i].name) == 0) {
			ret = commands[i].run(&ctl, argc - optind,
					      argv + optind);
			ibc_disconnect(ctl.client);
			return ret;
		}
	}
	fprintf(stderr, "rdmabrokerctl: unknown command \"%s\"\n",
		argv[optind]);
	usage(stderr);
	return CTL_USAGE;
}
