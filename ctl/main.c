// SPDX-License-Identifier: MIT
/* rdmabrokerctl: option parsing, help and the command table. It uses
 * nothing but the public libibclient API. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"

/* How long a request may wait for the broker's answer unless --timeout
 * says otherwise: like systemctl, a hung broker is an error, not a hang. */
#define CTL_DEFAULT_TIMEOUT_MS 5000

static const struct ctl_command commands[] = {
	{ "status", "",
	  "daemon version, uptime, device kind, clients, "
	  "requests served",
	  "The broker's version, pid, uptime and device kind, and its\n"
	  "clients and requests served: the daemon's for an administrator,\n"
	  "the caller's domain's for anyone else (the labels say which).\n",
	  cmd_status },
	{ "devices", "", "devices and their capabilities",
	  "The broker's devices: kind, transport, whether contexts can be\n"
	  "imported, XRC, device memory, the RSS table size.\n",
	  cmd_devices },
	{ "domains", "", "domains: members, contexts, quota use",
	  "The domains the caller may see (an administrator: all), with\n"
	  "members, contexts, and each quota as used/limit.\n",
	  cmd_domains },
	{ "clients", "", "connected clients and what they hold",
	  "Connected clients, a forked child under its parent.\n",
	  cmd_clients },
	{ "objects", "[--client ID] [--domain NAME]",
	  "objects clients made in shared contexts",
	  "Objects clients made in shared contexts.\n"
	  "  --client ID    only those of client ID\n"
	  "  --domain NAME  only those of domain NAME (an error if the\n"
	  "                 caller sees no such domain)\n",
	  cmd_objects },
	{ "evict", "[--rekey [--force]] CLIENT",
	  "end a client's session; --rekey: and shut it out (admin)",
	  "End client CLIENT's session (administrators).\n"
	  "  --rekey  also give its domain new contexts, which shuts the\n"
	  "           process out of the old one\n"
	  "  --force  with --rekey: even when the domain's objects must be\n"
	  "           destroyed\n",
	  cmd_evict },
	/* Rekey */
	{ "domain", "rekey NAME [--force]",
	  "give a domain new contexts (administrators)",
	  "  rekey NAME [--force]  give domain NAME new contexts; --force:\n"
	  "                        even when objects must be destroyed\n",
	  cmd_domain },
	/* Metrics */
	{ "metrics", "[--output FILE]",
	  "the broker's figures in the Prometheus text format",
	  "The broker's figures in the Prometheus text format (0.0.4): the\n"
	  "whole broker for an administrator, the caller's domain for\n"
	  "anyone else.\n"
	  "  --output FILE  write FILE whole through a temporary file\n"
	  "                 renamed over it (node_exporter's textfile\n"
	  "                 collector reads it)\n",
	  cmd_metrics },
	/* Containers (issue 26) */
	{ "cdi", "[--daemon] [--kind K] [--container-socket P] [-o FILE]",
	  "a CDI spec that gives containers the broker",
	  "A Container Device Interface spec (JSON): device \"broker\"\n"
	  "mounts the socket, sets $RDMABROKER_SOCKET and adds each verbs\n"
	  "device's uverbs node and sysfs directories. Runtimes read it\n"
	  "from /etc/cdi or /var/run/cdi (rdmabrokerctl(8), CONTAINERS).\n"
	  "  --daemon                 instead, device \"uverbs\": every "
	  "uverbs\n"
	  "                           node of this host, for a broker in a\n"
	  "                           container; asks no broker\n"
	  "  --kind VENDOR/CLASS      the spec's kind (default\n"
	  "                           rdmabroker.io/broker, with --daemon\n"
	  "                           rdmabroker.io/daemon)\n"
	  "  --container-socket PATH  where containers see the socket\n"
	  "                           (default " IBC_DEFAULT_SOCKET ")\n"
	  "  -o, --output FILE        write FILE whole (a rename), not\n"
	  "                           stdout\n",
	  cmd_cdi },
};

/* Each family's command, in its ctl/cmd-FAMILY.c, listed after the
 * others from the one list of families. */
#define FAMILY(f, F) &ctl_cmd_##f,
const struct ctl_command *const ctl_family_commands[] = {
#include "common/families.def"
};

#define N_CORE (sizeof(commands) / sizeof(commands[0]))
#define N_FAMILY_COMMANDS                                                      \
	(sizeof(ctl_family_commands) / sizeof(ctl_family_commands[0]))
const size_t ctl_n_family_commands = N_FAMILY_COMMANDS;
#define N_COMMANDS (N_CORE + N_FAMILY_COMMANDS)

/* Command @i of every command, the families' after the others. */
static const struct ctl_command *command_at(size_t i)
{
	return i < N_CORE ? &commands[i] : ctl_family_commands[i - N_CORE];
}

static const char global_options[] =
	"Options (anywhere on the line):\n"
	"  -s, --socket PATH    the broker's socket (default "
	"$RDMABROKER_SOCKET or\n"
	"                       " IBC_DEFAULT_SOCKET ")\n"
	"  -t, --timeout SECS   wait at most SECS for each answer (default "
	"5; 0: forever)\n"
	"  -j, --json           print JSON instead of a table\n"
	"  -p, --pretty         with --json: indented\n"
	"  -V, --version        print the version and exit\n"
	"  -h, --help           print this help and exit\n";

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rdmabrokerctl [OPTION]... COMMAND [ARG]...\n"
		"       rdmabrokerctl help [COMMAND]\n"
		"Show and manage what rdmabrokerd shares.\n\n%s\n"
		"Commands:\n",
		global_options);
	for (size_t i = 0; i < N_COMMANDS; i++) {
		const struct ctl_command *c = command_at(i);

		/* Long arguments get a line of their own. */
		if (strlen(c->args) > 10)
			fprintf(f, "  %-8s %s\n  %-8s %-10s %s\n", c->name,
				c->args, "", "", c->help);
		else
			fprintf(f, "  %-8s %-10s %s\n", c->name, c->args,
				c->help);
	}
	fprintf(f, "\n'rdmabrokerctl help COMMAND' or 'rdmabrokerctl COMMAND "
		   "--help' tells more.\n"
		   "Exit status: 0 success, 1 error, 2 usage. See "
		   "rdmabrokerctl(8).\n");
}

static const struct ctl_command *command_find(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (strcmp(name, command_at(i)->name) == 0)
			return command_at(i);
	return NULL;
}

static void command_help(const struct ctl_command *c)
{
	printf("Usage: rdmabrokerctl [OPTION]... %s%s%s\n%s.\n\n%s\n%s",
	       c->name, *c->args ? " " : "", c->args, c->help, c->details,
	       global_options);
}

/* help [COMMAND] */
static int help(int argc, char **argv)
{
	const struct ctl_command *c;

	if (argc < 2) {
		usage(stdout);
		return CTL_OK;
	}
	c = command_find(argv[1]);
	if (!c || argc > 2) {
		fprintf(stderr,
			"rdmabrokerctl: help: %s \"%s\"\n"
			"See 'rdmabrokerctl help' for the commands.\n",
			!c ? "no command" : "one command, not also",
			argv[!c ? 1 : 2]);
		return CTL_USAGE;
	}
	command_help(c);
	return CTL_OK;
}

int ctl_fail(const char *what, int err)
{
	const char *why = ibc_last_error();
	/* The broker's sentence, which may quote a client's bytes; the
	 * library keeps 255 bytes of it, and a longer one is cut. */
	char text[TEXT_ESCAPED_SIZE(256)];

	fprintf(stderr, "rdmabrokerctl: %s: %s\n", what,
		*why ? text_escape(text, sizeof(text), why) : strerror(-err));
	if (err == -ETIMEDOUT)
		fprintf(stderr, "rdmabrokerctl: the broker did not answer in "
				"time; --timeout SECS waits longer\n");
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
	attr.comp_mask |= IBC_CONNECT_ATTR_TIMEOUT;
	attr.timeout_ms = ctl->timeout_ms;
	ret = ibc_connect(&attr, &ctl->client);
	if (ret < 0)
		return ctl_fail("connect", ret);
	return CTL_OK;
}

/* "5", "0.5", "2s", "250ms": at most a day; 0 is no limit. */
static int parse_timeout(const char *s, int *ret_ms)
{
	char *end;
	double v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s)
		return -EINVAL;
	if (strcmp(end, "ms") == 0)
		v /= 1000;
	else if (*end && strcmp(end, "s") != 0)
		return -EINVAL;
	if (v > 86400)
		return -ERANGE;
	*ret_ms = (int)(v * 1000 + 0.5);
	/* A positive value below a millisecond is not "forever". */
	if (v > 0 && !*ret_ms)
		*ret_ms = 1;
	return 0;
}

/* The value of global option @lng/@sht at argv[*i] ("-s X", "-sX",
 * "--socket X", "--socket=X"): 1 and *ret_val set, 0 when argv[*i] is
 * not that option, -1 when its value is missing. */
static int global_value(int argc, char **argv, int *i, char sht,
			const char *lng, const char **ret_val)
{
	const char *a = argv[*i];
	size_t n = strlen(lng);

	if (a[0] == '-' && a[1] == sht) {
		a += 2;
	} else if (a[0] == '-' && a[1] == '-' && !strncmp(a + 2, lng, n) &&
		   (a[2 + n] == '=' || !a[2 + n])) {
		a += 2 + n;
		if (*a == '=') {
			*ret_val = a + 1;
			return 1;
		}
	} else {
		return 0;
	}
	if (*a) {
		*ret_val = a;
		return 1;
	}
	if (*i + 1 >= argc)
		return -1;
	*ret_val = argv[++*i];
	return 1;
}

/* Apart from the exit codes, which parse_globals() also returns. */
enum { GLOBAL_NO = 10, GLOBAL_TAKEN, GLOBAL_HELP, GLOBAL_VERSION };

/* Flags without a value, alone or bundled ("-jp"). */
static int global_flags(struct ctl *ctl, const char *a)
{
	static const struct {
		const char *lng;
		char sht;
	} flags[] = { { "--json", 'j' },
		      { "--pretty", 'p' },
		      { "--help", 'h' },
		      { "--version", 'V' } };
	char one[3] = "-";
	int ret = GLOBAL_TAKEN;

	for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++) {
		if (strcmp(a, flags[k].lng) == 0) {
			one[1] = flags[k].sht;
			a = one;
		}
	}
	if (a[0] != '-' || !a[1] || a[1] == '-' || a[strspn(a + 1, "jphV") + 1])
		return GLOBAL_NO;
	for (a++; *a; a++) {
		if (*a == 'j')
			ctl->json = true;
		else if (*a == 'p')
			ctl->pretty = true;
		else if (*a == 'h' && ret != GLOBAL_VERSION)
			ret = GLOBAL_HELP;
		else if (*a == 'V')
			ret = GLOBAL_VERSION;
	}
	return ret;
}

/*
 * Take the global options from anywhere on the line, as systemctl does;
 * what is left (the command and its arguments, in order) moves to the
 * front of @argv, and *ret_argc counts it. "--" ends the options: what
 * follows is the command's. Returns GLOBAL_* or CTL_USAGE.
 */
static int parse_globals(struct ctl *ctl, int argc, char **argv, int *ret_argc)
{
	int n = 0, ret = GLOBAL_NO;

	for (int i = 1; i < argc; i++) {
		const char *v;
		int r, f;

		if (strcmp(argv[i], "--") == 0) {
			while (++i < argc)
				argv[n++] = argv[i];
			break;
		}
		r = global_value(argc, argv, &i, 's', "socket", &v);
		if (r > 0) {
			ctl->socket_path = v;
			continue;
		}
		if (r == 0)
			r = global_value(argc, argv, &i, 't', "timeout", &v);
		if (r > 0) {
			if (parse_timeout(v, &ctl->timeout_ms) < 0) {
				fprintf(stderr,
					"rdmabrokerctl: --timeout: \"%s\" is "
					"not a number of seconds (at most "
					"86400; 0: no limit)\n",
					v);
				return CTL_USAGE;
			}
			continue;
		}
		if (r < 0) {
			fprintf(stderr, "rdmabrokerctl: %s needs a value\n",
				argv[i]);
			return CTL_USAGE;
		}
		f = global_flags(ctl, argv[i]);
		if (f == GLOBAL_NO) {
			argv[n++] = argv[i];
			continue;
		}
		if (f != GLOBAL_TAKEN && ret != GLOBAL_VERSION)
			ret = f;
	}
	*ret_argc = n;
	return ret;
}

/* "CMD --help", "CMD -h" and "CMD help" (ip's OBJECT help). */
static bool wants_help(int argc, char **argv, bool help_flag)
{
	return help_flag || (argc > 1 && strcmp(argv[1], "help") == 0);
}

/* With --pretty, what the command prints goes to @buf first. */
static int run_command(struct ctl *ctl, const struct ctl_command *c, int argc,
		       char **argv)
{
	FILE *real = stdout, *mem = NULL;
	char *buf = NULL;
	size_t len = 0;
	int ret;

	if (ctl->json && ctl->pretty) {
		mem = open_memstream(&buf, &len);
		if (!mem) {
			perror("rdmabrokerctl");
			return CTL_ERROR;
		}
		/* glibc's stdout is a variable programs may set. */
		stdout = mem;
	}
	ret = c->run(ctl, argc, argv);
	if (mem) {
		stdout = real;
		if (fclose(mem) == 0)
			json_pretty(stdout, buf, len);
		free(buf);
	}
	if (ret == CTL_USAGE)
		fprintf(stderr, "See 'rdmabrokerctl help %s'.\n", c->name);
	return ret;
}

int main(int argc, char **argv)
{
	struct ctl ctl = { .timeout_ms = CTL_DEFAULT_TIMEOUT_MS };
	const struct ctl_command *c;
	int n, ret;

	ret = parse_globals(&ctl, argc, argv, &n);
	if (ret == CTL_USAGE)
		return ret;
	if (ret == GLOBAL_VERSION) {
		printf("rdmabrokerctl %s\n", PACKAGE_VERSION);
		return CTL_OK;
	}
	if (n == 0) {
		if (ret == GLOBAL_HELP) {
			usage(stdout);
			return CTL_OK;
		}
		fprintf(stderr, "rdmabrokerctl: no command given\n");
		usage(stderr);
		return CTL_USAGE;
	}
	if (strcmp(argv[0], "help") == 0)
		return help(n, argv);
	if (argv[0][0] == '-') {
		fprintf(stderr,
			"rdmabrokerctl: unknown option \"%s\"\n"
			"See 'rdmabrokerctl help'.\n",
			argv[0]);
		return CTL_USAGE;
	}
	c = command_find(argv[0]);
	if (!c) {
		fprintf(stderr,
			"rdmabrokerctl: unknown command \"%s\"\n"
			"See 'rdmabrokerctl help' for the commands.\n",
			argv[0]);
		return CTL_USAGE;
	}
	if (wants_help(n, argv, ret == GLOBAL_HELP)) {
		command_help(c);
		return CTL_OK;
	}
	ret = run_command(&ctl, c, n, argv);
	ibc_disconnect(ctl.client);
	return ret;
}
