// SPDX-License-Identifier: MIT
/* rdmabrokerd: argument parsing and the event loop; everything else lives
 * in libdaemon. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/config/conf.h"
#include "daemon/util/fault.h"
#include "daemon/util/log.h"
#include "daemon/server/metrics-http.h"
#include "daemon/server/server.h"
#include "proto/wire.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rdmabrokerd [OPTION]...\n"
		"Share RDMA contexts, XRC domains and device memory with "
		"unprivileged processes.\n\n"
		"  -s, --socket PATH       listen on PATH when systemd passes "
		"no socket\n"
		"                          (default /run/rdmabroker.sock)\n"
		"  -m, --socket-mode MODE  permissions of a self-bound socket "
		"(default 0660)\n"
		"  -g, --socket-group GROUP\n"
		"                          group of a self-bound socket "
		"(default the daemon's)\n"
		"  -r, --runtime-dir DIR   directory for XRC domain files\n"
		"                          (default /run/rdmabroker)\n"
		"  -c, --config FILE       configuration file\n"
		"                          (default " SYSCONFDIR
		"/rdmabroker/rdmabroker.conf)\n"
		"  -d, --device KIND       auto, verbs or soft (default "
		"auto)\n"
		"      --max-clients N     connection limit (default 1024)\n"
		"      --read-on WHEN      read a connection's next request "
		"right after\n"
		"                          its reply: auto (when the client "
		"ran meanwhile),\n"
		"                          always or never (default auto)\n"
		"      --no-restart        keep no state for a restart "
		"(sessions end with\n"
		"                          the daemon)\n"
		"  -l, --log-level LEVEL   err, warning, notice, info, debug "
		"(default info)\n"
		"  -f, --foreground        stay in the foreground (always; "
		"kept for scripts)\n"
		"      --check-config [FILE]  check FILE (default: the "
		"--config file) as the\n"
		"                          daemon would read it, say what "
		"matches no user,\n"
		"                          exit 0 when valid, 1 otherwise\n"
		"  -V, --version           print the version and exit\n"
		"  -h, --help              print this help and exit\n\n"
		"See rdmabrokerd(8).\n");
}

static int parse_uint(const char *s, int base, unsigned int max,
		      unsigned int *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, base);
	if (errno || end == s || *end || v > max)
		return -EINVAL;
	*ret = (unsigned int)v;
	return 0;
}

int main(int argc, char **argv)
{
	static const int early_sigs[] = { SIGHUP, SIGUSR2, SIGTERM, SIGINT };
	sigset_t early;
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "socket-mode", required_argument, NULL, 'm' },
		{ "socket-group", required_argument, NULL, 'g' },
		{ "runtime-dir", required_argument, NULL, 'r' },
		{ "config", required_argument, NULL, 'c' },
		{ "device", required_argument, NULL, 'd' },
		{ "max-clients", required_argument, NULL, 'M' },
		{ "read-on", required_argument, NULL, 'R' },
		{ "no-restart", no_argument, NULL, 'N' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "check-config", optional_argument, NULL, 'C' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct server_options opt = {
		.socket_path = "/run/rdmabroker.sock",
		.runtime_dir = "/run/rdmabroker",
		.config_path = SYSCONFDIR "/rdmabroker/rdmabroker.conf",
		.device_mode = DEVICE_MODE_AUTO,
		.socket_mode = 0660,
		.max_conns = 1024,
		.outq_max = 256 * 1024,
	};
	bool check_config = false;
	struct server srv;
	int c, ret;

	while ((c = getopt_long(argc, argv, "s:m:g:r:c:d:l:fVh", longopts,
				NULL)) != -1) {
		switch (c) {
		case 's':
			opt.socket_path = optarg;
			break;
		case 'm':
			if (parse_uint(optarg, 8, 0777, &opt.socket_mode) < 0) {
				fprintf(stderr,
					"rdmabrokerd: --socket-mode: \"%s\" is "
					"not an octal mode\n",
					optarg);
				return 2;
			}
			break;
		case 'g':
			opt.socket_group = optarg;
			break;
		case 'r':
			opt.runtime_dir = optarg;
			break;
		case 'c':
			opt.config_path = optarg;
			opt.config_required = true;
			break;
		case 'd':
			if (device_parse_mode(optarg, &opt.device_mode) < 0) {
				fprintf(stderr,
					"rdmabrokerd: --device: \"%s\" is not "
					"auto, verbs or soft\n",
					optarg);
				return 2;
			}
			break;
		case 'M':
			if (parse_uint(optarg, 10, 1000000, &opt.max_conns) <
				    0 ||
			    opt.max_conns == 0) {
				fprintf(stderr,
					"rdmabrokerd: --max-clients: \"%s\" is "
					"not a number from 1 to 1000000\n",
					optarg);
				return 2;
			}
			break;
		case 'R':
			if (conn_parse_read_on(optarg, &opt.read_on) < 0) {
				fprintf(stderr,
					"rdmabrokerd: --read-on: \"%s\" is not "
					"auto, always or never\n",
					optarg);
				return 2;
			}
			break;
		case 'N':
			opt.no_restart = true;
			break;
		case 'l':
			ret = log_parse_level(optarg);
			if (ret < 0) {
				fprintf(stderr,
					"rdmabrokerd: --log-level: \"%s\" is "
					"not a syslog level\n",
					optarg);
				return 2;
			}
			log_max_priority = ret;
			break;
		case 'f':
			break;
		case 'C':
			check_config = true;
			if (optarg) {
				opt.config_path = optarg;
				opt.config_required = true;
			}
			break;
		case 'V':
			printf("rdmabrokerd %s (protocol %d)\n",
			       PACKAGE_VERSION, WIRE_PROTOCOL_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	/* "--check-config FILE" as well as "--check-config=FILE". */
	if (check_config && optind + 1 == argc) {
		opt.config_path = argv[optind++];
		opt.config_required = true;
	}
	if (check_config && optind == argc)
		return config_check(opt.config_path, opt.config_required,
				    stdout) < 0 ?
			       1 :
			       0;
	if (optind < argc) {
		fprintf(stderr, "rdmabrokerd: unexpected argument \"%s\"\n",
			argv[optind]);
		usage(stderr);
		return 2;
	}

	opt.argv = argv;
	/* A test build says so at start, armed or not. */
	fault_init();
	/* Until server_init() has its handlers in place, a SIGHUP (a
	 * reload asked as soon as the socket appears) or a SIGUSR2 would
	 * kill the daemon with the default action: they wait, blocked,
	 * and are served by the loop. Unblocked by name, not restored: a
	 * mask inherited from the parent must not silence them. */
	sigemptyset(&early);
	for (size_t i = 0; i < sizeof(early_sigs) / sizeof(early_sigs[0]); i++)
		sigaddset(&early, early_sigs[i]);
	sigprocmask(SIG_BLOCK, &early, NULL);
	ret = server_init(&srv, &opt);
	/* The metrics listener reads the server, which names it not. */
	if (ret == 0)
		ret = metrics_http_start(&srv);
	sigprocmask(SIG_UNBLOCK, &early, NULL);
	if (ret == 0) {
		log_notice("rdmabrokerd %s started", PACKAGE_VERSION);
		ret = server_run(&srv);
	}
	metrics_http_stop(&srv);
	server_fini(&srv);
	return ret < 0 ? 1 : 0;
}
