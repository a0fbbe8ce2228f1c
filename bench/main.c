// SPDX-License-Identifier: MIT
/*
 * rdmab-bench: what `make bench` runs. Starts rdmabrokerd (soft device)
 * and the baselines in a temporary directory, everything pinned to CPU 0,
 * and prints each figure next to the baseline measured in the same run:
 *
 *  1. ping RTT: ibc_ping() through libibclient to rdmabrokerd, against a
 *     raw SOCK_SEQPACKET ping-pong between two blocking processes with
 *     packets of the same sizes, and against the event-driven floor:
 *     bench-evsrv, a bare libevent server with the daemon's system calls
 *     (epoll_wait + recv + send), driven with libibclient's (send +
 *     recv, recvmsg for a reply that carries a descriptor);
 *  2. daemon CPU per request at 1, 16 and 256 connections: one closed-loop
 *     client sending the broker's Ping packets, against bench-evsrv
 *     answering with packets of the same size;
 *  3. ibc_open + ibc_close of soft0, against a raw SOCK_SEQPACKET round
 *     trip whose reply carries one fd plus one that carries none, packets
 *     of the broker's sizes (open.c), again blocking and event-driven;
 *     steady state (another client holds the domain's context) and, for
 *     information, cold;
 *  4. user-space instructions per ping and per open + close, client and
 *     server, beside the baselines', counted with callgrind (insn.c).
 *  5. ibc_cq_create + ibc_cq_destroy on soft0, against two raw
 *     SOCK_SEQPACKET round trips with packets of the broker's sizes
 *     (objs.c). With --objs-ir the driver measures only these pairs and
 *     marks them for callgrind, which counts their user-space
 *     instructions (make bench-ir; --objs-daemon-ir for the daemon's
 *     share); with --objs-only it measures nothing
 *     else and adds two empty ibc_ping() calls a pair as a reference.
 *  6. ibc_xrcd_open + ibc_xrcd_close of a name on soft0, against a raw
 *     SOCK_SEQPACKET round trip whose reply carries one fd plus one that
 *     carries none, packets of the broker's sizes (xrcd.c). With --xrcd-only
 *     the driver measures nothing else.
 *  7. cleanup of a dead client holding 1,000 objects (CQs, QPs on them,
 *     MRs) on soft0, SIGKILL to none left, against the time the client
 *     took to create them, as a polling client sees it and as the daemon
 *     logs it (cleanup.c), on a daemon of its own that logs at info.
 *
 * Repetitions alternate between the broker and its baselines, and each
 * repetition of phases 1, 3, 5 and 6 is itself taken in ten turns per
 * side, so that a drift of the machine hits every side alike.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "include/ibclient.h"
#include "daemon/device/soft/soft.h"

/* Under callgrind, --objs-ir counts the instructions of the pairs only. */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_TOGGLE_COLLECT
#define CALLGRIND_TOGGLE_COLLECT
#define CALLGRIND_DUMP_STATS_AT(s) ((void)(s))
#endif

#define MAX_REPS 32
/* Pairs before the daemon's count (--objs-daemon-ir). */
#define OBJS_DAEMON_WARMUP 200
/* Turns a repetition takes per side (rep_interleaved()). */
#define REP_SLICES 10
/* The most sides a phase has (open: steady, raw, floor, cold). */
#define MAX_SIDES 4
#define N_LOADS 3
#define QUIET_IDLE 90.0
#define QUIET_WAIT_S 20
#define RTT_TARGET 1.3
#define FLOOR_TARGET 1.1
#define CPU_TARGET 1.5
#define OPEN_TARGET 1.3
#define OBJS_TARGET 1.3
#define XRCD_TARGET 1.3
#define CLEANUP_TARGET 0.1
#define CLEANUP_OBJS 1000
#define INSN_TARGET 3500

/* RTT sides. */
enum { RTT_BROKER, RTT_BLOCKING, RTT_FLOOR, RTT_SIDES };

static const unsigned int load_conns[N_LOADS] = { 1, 16, 256 };

struct opts {
	const char *daemon;
	const char *evsrv;
	unsigned int reps;
	unsigned int rtt_iters;
	unsigned int rtt_warmup;
	unsigned long requests;
	unsigned long warmup;
	unsigned int open_iters;
	unsigned int open_warmup;
	unsigned int objs_iters;
	unsigned int objs_warmup;
	unsigned int objs_ir;
	unsigned int objs_daemon_ir;
	unsigned int xrcd_iters;
	unsigned int xrcd_warmup;
	int xrcd_only;
	int objs_only;
	unsigned int cleanup_reps;
	size_t payload;
	unsigned long insn_pings;
	const char *callgrind_dir;
	/* --no-restart: the daemon keeps no state journal (its cost,
	 * issue 25). */
	int no_restart;
	int strict;
	/* --role: one side of an instruction count (insn.c). */
	const char *role;
	const char *role_socket;
	const char *role_sizes;
	unsigned long role_count;
};

struct run {
	struct opts o;
	char dir[64];
	char broker_sock[96];
	char evsrv_sock[96];
	char evsrv_open_sock[96];
	char daemon_log[96];
	char evsrv_log[96];
	char evsrv_open_log[96];
	/* For the instruction counts. */
	char cg_rundir[96];
	char cg_sock[96];
	char cg_out[96];
	char cg_log[96];
	/* The cleanup phase's daemon. */
	char cl_rundir[96];
	char cl_sock[96];
	char cl_log[96];
	int cl_dumped;
	pid_t cl_pid;
	int daemon_dumped;
	int evsrv_dumped;
	int evsrv_open_dumped;
	pid_t daemon_pid;
	pid_t evsrv_pid;
	pid_t evsrv_open_pid;
	pid_t echo_pid;
	int raw_fd;
	int floor_fd;
	struct ibc_client *cl;
	struct open_bench *ob;
	struct objs_bench *jb;
	struct xrcd_bench *xb;
	uint8_t payload[4096];
	uint8_t ping_req[4096];
	size_t req_len;
	size_t rep_len;
	double idle;
	double load1;

	/* Per repetition: RTT_* sides; loads [0] broker, [1] baseline. */
	double rtt_med[RTT_SIDES][MAX_REPS], rtt_p99[RTT_SIDES][MAX_REPS];
	double cpu[N_LOADS][2][MAX_REPS], wall[N_LOADS][2][MAX_REPS];
	double lat_p99[N_LOADS][2][MAX_REPS];
	double open_med[OPEN_SIDES][MAX_REPS], open_p99[OPEN_SIDES][MAX_REPS];
	/* [0] broker, [1] raw, [2] two pings (only with --objs-only). */
	double objs_med[3][MAX_REPS], objs_p99[3][MAX_REPS];
	double xrcd_med[2][MAX_REPS], xrcd_p99[2][MAX_REPS];
	/* [0] polled, [1] the daemon's figure, [2] creation. */
	double cleanup_us[3][MAX_REPS];
	unsigned long broker_sent;
	uint64_t daemon_served;
	uint64_t *lat;
	struct insn_result insn;
	unsigned long insn_n[INSN_REQS][2];
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rdmab-bench --daemon PATH --evsrv PATH [OPTION]...\n"
		"  --reps N          repetitions per side (default 5)\n"
		"  --rtt-iters N     round trips per RTT repetition (20000)\n"
		"  --rtt-warmup N    warm-up round trips per side (20000)\n"
		"  --requests N      requests per load repetition (30000)\n"
		"  --warmup N        warm-up requests per load and side "
		"(5000)\n"
		"  --open-iters N    open+close pairs per repetition (10000)\n"
		"  --open-warmup N   warm-up pairs per side (2000)\n"
		"  --objs-iters N    CQ create+destroy pairs per repetition "
		"(10000)\n"
		"  --objs-warmup N   warm-up pairs per side (2000)\n"
		"  --objs-ir N       only N pairs a side, marked for "
		"callgrind\n"
		"  --objs-daemon-ir N  only N broker pairs, after a warm-up "
		"and a second\n"
		"                    of rest (for a daemon under callgrind)\n"
		"  --objs-only       measure only the CQ pairs (and two "
		"pings a pair)\n"
		"  --xrcd-iters N    XRCD open+close pairs per repetition "
		"(10000)\n"
		"  --xrcd-only       measure only the XRCD pairs\n"
		"  --cleanup-reps N  dead-client cleanups of 1000 objects "
		"(5; 0 skips)\n"
		"  --payload BYTES   ping payload (48)\n"
		"  --insn-pings N    pings an instruction count is taken "
		"over (2000;\n"
		"                    half as many open+close pairs); 0 "
		"skips the counts\n"
		"  --callgrind-dir DIR  keep every callgrind output in DIR\n"
		"  --no-restart      start the daemon with --no-restart (no "
		"state journal)\n"
		"  --strict          exit 1 when a target is missed\n");
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "daemon", required_argument, NULL, 'd' },
		{ "evsrv", required_argument, NULL, 'e' },
		{ "reps", required_argument, NULL, 'r' },
		{ "rtt-iters", required_argument, NULL, 'i' },
		{ "rtt-warmup", required_argument, NULL, 'I' },
		{ "requests", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "open-iters", required_argument, NULL, 'o' },
		{ "open-warmup", required_argument, NULL, 'O' },
		{ "objs-iters", required_argument, NULL, 'q' },
		{ "objs-warmup", required_argument, NULL, 'Q' },
		{ "objs-ir", required_argument, NULL, 'x' },
		{ "objs-daemon-ir", required_argument, NULL, 'D' },
		{ "objs-only", no_argument, NULL, 'j' },
		{ "xrcd-iters", required_argument, NULL, 'X' },
		{ "xrcd-only", no_argument, NULL, 'Y' },
		{ "cleanup-reps", required_argument, NULL, 'K' },
		{ "payload", required_argument, NULL, 'p' },
		{ "insn-pings", required_argument, NULL, 'N' },
		{ "callgrind-dir", required_argument, NULL, 'C' },
		{ "strict", no_argument, NULL, 's' },
		{ "no-restart", no_argument, NULL, 'Z' },
		/* Internal: what insn.c runs under callgrind. */
		{ "role", required_argument, NULL, 'R' },
		{ "socket", required_argument, NULL, 'S' },
		{ "count", required_argument, NULL, 'c' },
		{ "sizes", required_argument, NULL, 'z' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned long v = 0;
	bool too_many = false;
	int c, ret;

	*o = (struct opts){
		.reps = 5,
		.rtt_iters = 20000,
		.rtt_warmup = 20000,
		.requests = 30000,
		.warmup = 5000,
		.open_iters = 10000,
		.open_warmup = 2000,
		.objs_iters = 10000,
		.objs_warmup = 2000,
		.xrcd_iters = 10000,
		.xrcd_warmup = 2000,
		.cleanup_reps = 5,
		.payload = 48,
		.insn_pings = 2000,
	};
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		ret = 0;
		switch (c) {
		case 'd':
			o->daemon = optarg;
			break;
		case 'e':
			o->evsrv = optarg;
			break;
		case 'X':
			ret = parse_ulong(optarg, 1, 100000, &v);
			o->xrcd_iters = (unsigned int)v;
			break;
		case 'Y':
			o->xrcd_only = 1;
			break;
		case 'j':
			o->objs_only = 1;
			break;
		case 'K':
			ret = parse_ulong(optarg, 0, MAX_REPS, &v);
			o->cleanup_reps = (unsigned int)v;
			break;
		case 's':
			o->strict = 1;
			break;
		case 'Z':
			o->no_restart = 1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'r':
			ret = parse_ulong(optarg, 1, MAX_REPS, &v);
			o->reps = (unsigned int)v;
			break;
		case 'i':
			ret = parse_ulong(optarg, 1, 1000000, &v);
			o->rtt_iters = (unsigned int)v;
			break;
		case 'I':
			ret = parse_ulong(optarg, 0, 1000000, &v);
			o->rtt_warmup = (unsigned int)v;
			break;
		case 'n':
			ret = parse_ulong(optarg, 1, 1000000, &o->requests);
			break;
		case 'w':
			ret = parse_ulong(optarg, 0, 1000000, &o->warmup);
			break;
		case 'o':
			ret = parse_ulong(optarg, 1, 1000000, &v);
			o->open_iters = (unsigned int)v;
			break;
		case 'O':
			ret = parse_ulong(optarg, 0, 1000000, &v);
			o->open_warmup = (unsigned int)v;
			break;
		case 'p':
			ret = parse_ulong(optarg, 0, 1024, &v);
			o->payload = v;
			break;
		case 'q':
			ret = parse_ulong(optarg, 1, 1000000, &v);
			o->objs_iters = (unsigned int)v;
			break;
		case 'Q':
			ret = parse_ulong(optarg, 0, 1000000, &v);
			o->objs_warmup = (unsigned int)v;
			break;
		case 'x':
			ret = parse_ulong(optarg, 1, 1000000, &v);
			o->objs_ir = (unsigned int)v;
			break;
		case 'D':
			ret = parse_ulong(optarg, 1, 1000000, &v);
			o->objs_daemon_ir = (unsigned int)v;
			break;
		case 'N':
			ret = parse_ulong(optarg, 0, 100000, &o->insn_pings);
			break;
		case 'C':
			o->callgrind_dir = optarg;
			break;
		case 'R':
			o->role = optarg;
			break;
		case 'S':
			o->role_socket = optarg;
			break;
		case 'c':
			ret = parse_ulong(optarg, 1, 1000000, &o->role_count);
			break;
		case 'z':
			o->role_sizes = optarg;
			break;
		default:
			usage(stderr);
			return -EINVAL;
		}
		if (ret < 0) {
			fprintf(stderr, "rdmab-bench: bad number \"%s\"\n",
				optarg);
			return ret;
		}
	}
	if (o->role)
		return optind < argc ? -EINVAL : 0;
	if (!o->daemon || !o->evsrv || optind < argc) {
		usage(stderr);
		return -EINVAL;
	}
	/* Every measured serial must pack to the same width (bench.h). */
	if (!o->objs_only && !o->xrcd_only &&
	    ((uint64_t)o->reps * o->rtt_iters + o->rtt_warmup +
			     PKT_SERIAL_START >=
		     PKT_SERIAL_END ||
	     2 * N_LOADS * ((uint64_t)o->reps * o->requests + o->warmup) +
			     2 * (1 + 16 + 256) + PKT_SERIAL_START >=
		     PKT_SERIAL_END ||
	     /* An open client: two serials a pair, a list per repetition. */
	     2 * ((uint64_t)o->reps * o->open_iters + o->open_warmup) +
			     REP_SLICES * o->reps + 1 + PKT_SERIAL_START >=
		     PKT_SERIAL_END))
		too_many = true;
	/* The CQ client: two serials a pair, twice with the ping pairs. */
	if ((o->objs_only ? 4 : 2) * ((uint64_t)o->reps * o->objs_iters +
				      o->objs_warmup + o->objs_ir +
				      o->objs_daemon_ir + OBJS_DAEMON_WARMUP) +
		    PKT_SERIAL_START >=
	    PKT_SERIAL_END)
		too_many = true;
	/* The XRCD client: two serials a pair. */
	if (2 * ((uint64_t)o->reps * o->xrcd_iters + o->xrcd_warmup) +
		    PKT_SERIAL_START >=
	    PKT_SERIAL_END)
		too_many = true;
	if (too_many) {
		fprintf(stderr, "rdmab-bench: too many round trips for one "
				"run\n");
		return -EINVAL;
	}
	return 0;
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "rdmab-bench: %s: %s\n", what, strerror(-err));
	return err;
}

/* Show a server's log once, after it failed. */
static void dump_log(const char *path, int *dumped)
{
	char line[512];
	FILE *f;

	if (*dumped)
		return;
	*dumped = 1;
	f = fopen(path, "re");
	if (!f)
		return;
	fprintf(stderr, "--- %s\n", path);
	while (fgets(line, sizeof(line), f))
		fputs(line, stderr);
	fprintf(stderr, "---\n");
	fclose(f);
}

/* Wait (bounded) for CPU 0 to be idle: another tenant on it would be
 * measured along with whichever side it happens to hit. */
static void wait_quiet(struct run *r)
{
	for (int s = 0; s < QUIET_WAIT_S; s++) {
		if (idle_percent(BENCH_CPU, 1000, &r->idle) < 0)
			r->idle = NAN;
		if (!(r->idle < QUIET_IDLE))
			break;
	}
	r->load1 = loadavg1();
	if (r->idle < QUIET_IDLE)
		fprintf(stderr,
			"rdmab-bench: warning: CPU %d is only %.0f%% idle; "
			"figures will be noisy\n",
			BENCH_CPU, r->idle);
}

static int make_dir(struct run *r)
{
	const char *tmp = getenv("TMPDIR");
	char conf[96], rundir[96];
	const char *const paths[] = {
		r->dir,
		conf,
		rundir,
		r->cg_rundir,
		r->daemon_log,
		r->evsrv_log,
		r->evsrv_open_log,
		r->cg_out,
		r->cg_log,
		r->broker_sock,
		r->evsrv_sock,
		r->evsrv_open_sock,
		r->cg_sock,
		r->cl_rundir,
		r->cl_sock,
		r->cl_log,
	};
	int ret, fd;

	if (!tmp || !*tmp || strlen(tmp) > 24)
		tmp = "/tmp";
	snprintf(r->dir, sizeof(r->dir), "%s/rdmab-bench.XXXXXX", tmp);
	if (!mkdtemp(r->dir))
		return -errno;
	snprintf(conf, sizeof(conf), "%s/rdmabroker.conf", r->dir);
	snprintf(rundir, sizeof(rundir), "%s/run", r->dir);
	snprintf(r->broker_sock, sizeof(r->broker_sock), "%s/broker.sock",
		 r->dir);
	snprintf(r->evsrv_sock, sizeof(r->evsrv_sock), "%s/evsrv.sock", r->dir);
	snprintf(r->daemon_log, sizeof(r->daemon_log), "%s/rdmabrokerd.log",
		 r->dir);
	snprintf(r->evsrv_log, sizeof(r->evsrv_log), "%s/evsrv.log", r->dir);
	snprintf(r->evsrv_open_sock, sizeof(r->evsrv_open_sock),
		 "%s/evsrv-open.sock", r->dir);
	snprintf(r->evsrv_open_log, sizeof(r->evsrv_open_log),
		 "%s/evsrv-open.log", r->dir);
	snprintf(r->cg_rundir, sizeof(r->cg_rundir), "%s/cg-run", r->dir);
	snprintf(r->cg_sock, sizeof(r->cg_sock), "%s/cg.sock", r->dir);
	snprintf(r->cg_out, sizeof(r->cg_out), "%s/cg.out", r->dir);
	snprintf(r->cg_log, sizeof(r->cg_log), "%s/cg.log", r->dir);
	snprintf(r->cl_rundir, sizeof(r->cl_rundir), "%s/cl-run", r->dir);
	snprintf(r->cl_sock, sizeof(r->cl_sock), "%s/cl.sock", r->dir);
	snprintf(r->cl_log, sizeof(r->cl_log), "%s/cl.log", r->dir);
	/* Removed in reverse order: contents before the directory. */
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		ret = cleanup_path(paths[i]);
		if (ret < 0)
			return ret;
	}
	if (mkdir(rundir, 0700) < 0 || mkdir(r->cg_rundir, 0700) < 0 ||
	    mkdir(r->cl_rundir, 0700) < 0)
		return -errno;
	/* The load holds 256 connections of one uid besides the RTT client:
	 * more than the default per-domain client quota. */
	fd = open(conf, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	ret = dprintf(fd, "[defaults]\nclients = 1024\n") < 0 ? -EIO : 0;
	close(fd);
	return ret;
}

/* A daemon on @sock and @rundir, logging at @level to @log. */
static int spawn_daemon(struct run *r, const char *sock, const char *rundir,
			const char *log, const char *level, pid_t *ret_pid,
			int *dumped)
{
	char conf[96];
	char *argv[] = {
		(char *)r->o.daemon,
		"--socket",
		(char *)sock,
		"--runtime-dir",
		(char *)rundir,
		"--config",
		conf,
		"--device",
		"soft",
		"--log-level",
		(char *)level,
		"--foreground",
		r->o.no_restart ? "--no-restart" : NULL,
		NULL,
	};
	int ret, fd;

	snprintf(conf, sizeof(conf), "%s/rdmabroker.conf", r->dir);
	ret = spawn(argv, log, ret_pid);
	if (ret < 0)
		return fail("cannot start rdmabrokerd", ret);
	ret = unix_connect_wait(sock, 10000, *ret_pid, &fd);
	if (ret < 0) {
		dump_log(log, dumped);
		return fail("rdmabrokerd does not answer", ret);
	}
	close(fd);
	return 0;
}

static int start_daemon(struct run *r)
{
	char rundir[96];

	snprintf(rundir, sizeof(rundir), "%s/run", r->dir);
	return spawn_daemon(r, r->broker_sock, rundir, r->daemon_log, "notice",
			    &r->daemon_pid, &r->daemon_dumped);
}

/*
 * Send one hello and one ping by hand, with a serial of the width every
 * measured request has, and take the sizes from the packets themselves:
 * the request as packed (what ibc_ping() packs), the reply as received.
 */
static int probe_sizes(struct run *r)
{
	uint8_t buf[4096];
	uint64_t serial = PKT_SERIAL_START;
	int fd, len, ret;

	ret = unix_connect(r->broker_sock, &fd);
	if (ret < 0)
		return fail("probe: connect", ret);
	len = pkt_hello(buf, sizeof(buf), serial);
	if (len < 0 || send(fd, buf, (size_t)len, MSG_NOSIGNAL) < 0) {
		ret = len < 0 ? len : -errno;
		goto out;
	}
	len = recv_timeout(fd, buf, sizeof(buf), 5000);
	ret = len < 0 ? len :
			pkt_check_reply(buf, (size_t)len, serial,
					PKT_BODY_HELLO, NULL, 0);
	if (ret < 0)
		goto out;
	len = pkt_ping(r->ping_req, sizeof(r->ping_req), ++serial, r->payload,
		       r->o.payload);
	if (len < 0 || send(fd, r->ping_req, (size_t)len, MSG_NOSIGNAL) < 0) {
		ret = len < 0 ? len : -errno;
		goto out;
	}
	r->req_len = (size_t)len;
	len = recv_timeout(fd, buf, sizeof(buf), 5000);
	ret = len < 0 ? len :
			pkt_check_reply(buf, (size_t)len, serial, PKT_BODY_PING,
					r->payload, r->o.payload);
	if (ret < 0)
		goto out;
	r->rep_len = (size_t)len;
out:
	close(fd);
	return ret < 0 ? fail("probe: hello and ping by hand", ret) : 0;
}

/*
 * Start a bench-evsrv on @sock answering with @rep bytes (alternately
 * @fd_rep bytes and a descriptor first, when not 0); the connection that
 * found it answering into @ret_fd.
 */
static int start_evsrv(struct run *r, const char *sock, const char *log,
		       size_t rep, size_t fd_rep, pid_t *ret_pid, int *dumped,
		       int *ret_fd)
{
	char size[32], fd_size[32];
	char *argv[] = {
		(char *)r->o.evsrv,
		"--socket",
		(char *)sock,
		"--reply-size",
		size,
		fd_rep ? "--fd-reply-size" : NULL,
		fd_size,
		NULL,
	};
	int ret;

	snprintf(size, sizeof(size), "%zu", rep);
	snprintf(fd_size, sizeof(fd_size), "%zu", fd_rep);
	ret = spawn(argv, log, ret_pid);
	if (ret < 0)
		return fail("cannot start bench-evsrv", ret);
	ret = unix_connect_wait(sock, 10000, *ret_pid, ret_fd);
	if (ret < 0) {
		dump_log(log, dumped);
		return fail("bench-evsrv does not answer", ret);
	}
	return 0;
}

static int start_echo(struct run *r)
{
	struct raw_echo e;
	int sv[2], ret;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return fail("socketpair", -errno);
	e.fd = sv[1];
	e.other_fd = sv[0];
	e.rep_len = r->rep_len;
	ret = spawn_fn(raw_echo_main, &e, &r->echo_pid);
	close(sv[1]);
	if (ret < 0) {
		close(sv[0]);
		return fail("cannot start the raw ping-pong peer", ret);
	}
	r->raw_fd = sv[0];
	return 0;
}

static int check_placement(struct run *r)
{
	const pid_t pids[] = { getpid(),
			       r->daemon_pid,
			       r->evsrv_pid,
			       r->evsrv_open_pid,
			       r->echo_pid,
			       open_peer_pid(r->ob),
			       objs_peer_pid(r->jb),
			       xrcd_peer_pid(r->xb) };

	for (size_t i = 0; i < sizeof(pids) / sizeof(pids[0]); i++) {
		int ret = check_pinned(pids[i]);

		if (ret < 0)
			return fail("a benchmark process is not pinned", ret);
	}
	return 0;
}

static void rep_stats(uint64_t *lat, size_t n, double *med, double *p99)
{
	*med = (double)quantile_u64(lat, n, 0.5) / 1e3;
	*p99 = (double)quantile_u64(lat, n, 0.99) / 1e3;
}

/* Measures @n round trips of side @side of a phase, latencies in @lat. */
typedef int (*side_fn)(struct run *r, int side, unsigned int n, uint64_t *lat);

/*
 * Repetition @i of a phase's @nsides sides, @n round trips each, taken in
 * REP_SLICES turns that alternate the sides: the state of these VMs
 * (memory-cgroup page charging, the host's scheduling) swings within a
 * tenth of a second, and a side measured whole in one stretch would carry
 * a swing alone. Side s's latencies go to r->lat + s * n.
 */
static int rep_interleaved(struct run *r, side_fn fn, int nsides,
			   unsigned int n, unsigned int i,
			   double (*med)[MAX_REPS], double (*p99)[MAX_REPS])
{
	for (unsigned int k = 0; k < REP_SLICES; k++) {
		unsigned int from = n * k / REP_SLICES;
		unsigned int to = n * (k + 1) / REP_SLICES;

		for (int s = 0; s < nsides; s++) {
			int ret = fn(r, s, to - from,
				     r->lat + (size_t)s * n + from);

			if (ret < 0)
				return ret;
		}
	}
	for (int s = 0; s < nsides; s++)
		rep_stats(r->lat + (size_t)s * n, n, &med[s][i], &p99[s][i]);
	return 0;
}

/* One repetition of RTT side @side; latencies into r->lat. */
static int rtt_rep(struct run *r, int side, unsigned int n, uint64_t *lat)
{
	switch (side) {
	case RTT_BROKER:
		return rtt_broker_rep(r->cl, r->payload, r->o.payload, n, lat);
	case RTT_BLOCKING:
		return rtt_raw_rep(r->raw_fd, r->ping_req, r->req_len,
				   r->rep_len, n, lat);
	default:
		return rtt_floor_rep(r->floor_fd, r->ping_req, r->req_len,
				     r->rep_len, n, lat);
	}
}

static int run_rtt(struct run *r)
{
	unsigned int n = r->o.rtt_iters;
	int ret;

	/* The warm-up also moves ibc's serials (1 was the hello) into the
	 * range where they pack like the probe's. */
	ret = rtt_rep(r, RTT_BROKER,
		      r->o.rtt_warmup > PKT_SERIAL_START ? r->o.rtt_warmup :
							   PKT_SERIAL_START,
		      NULL);
	for (int s = RTT_BLOCKING; ret == 0 && s < RTT_SIDES; s++)
		ret = rtt_rep(r, s, r->o.rtt_warmup, NULL);
	for (unsigned int i = 0; ret == 0 && i < r->o.reps; i++)
		ret = rep_interleaved(r, rtt_rep, RTT_SIDES, n, i, r->rtt_med,
				      r->rtt_p99);
	return ret < 0 ? fail("ping round trips", ret) : 0;
}

static int open_side(struct run *r, int side, unsigned int n, uint64_t *lat)
{
	return open_rep(r->ob, side, n, lat);
}

static int objs_side(struct run *r, int side, unsigned int n, uint64_t *lat)
{
	return objs_rep(r->jb, side, n, lat);
}

static int xrcd_side(struct run *r, int side, unsigned int n, uint64_t *lat)
{
	return xrcd_rep(r->xb, side, n, lat);
}

/* Repetitions alternate steady, raw, floor and cold, as in run_rtt(). */
static int run_open(struct run *r)
{
	unsigned int n = r->o.open_iters;
	int ret = 0;

	for (int s = 0; s < OPEN_SIDES && ret == 0; s++)
		ret = open_rep(r->ob, s, r->o.open_warmup, NULL);
	for (unsigned int i = 0; ret == 0 && i < r->o.reps; i++)
		ret = rep_interleaved(r, open_side, OPEN_SIDES, n, i,
				      r->open_med, r->open_p99);
	return ret;
}

/*
 * Repetitions alternate the library's pairs and the raw round trips, and
 * with --objs-only the two-ping reference.
 */
static int run_objs(struct run *r)
{
	unsigned int n = r->o.objs_iters;
	int sides = r->o.objs_only ? 3 : 2;
	int ret = 0;

	for (int s = 0; s < sides && ret == 0; s++)
		ret = objs_rep(r->jb, s, r->o.objs_warmup, NULL);
	for (unsigned int i = 0; ret == 0 && i < r->o.reps; i++)
		ret = rep_interleaved(r, objs_side, sides, n, i, r->objs_med,
				      r->objs_p99);
	return ret;
}

/* The same for the XRCD pairs. */
static int run_xrcd(struct run *r)
{
	unsigned int n = r->o.xrcd_iters;
	int ret = 0;

	for (int s = 0; s < 2 && ret == 0; s++)
		ret = xrcd_rep(r->xb, s, r->o.xrcd_warmup, NULL);
	for (unsigned int i = 0; ret == 0 && i < r->o.reps; i++)
		ret = rep_interleaved(r, xrcd_side, 2, n, i, r->xrcd_med,
				      r->xrcd_p99);
	return ret;
}

static int stop_server(const char *name, pid_t pid, const char *log,
		       int *dumped);

/*
 * Dead-client cleanup, on a daemon of its own: it logs at info, where the
 * cleanup's own figure is, and the other phases' daemon logs at notice so
 * that no log line is measured with them. One warm-up repetition.
 */
static int run_cleanup(struct run *r)
{
	struct cleanup_result res;
	int ret;

	if (!r->o.cleanup_reps)
		return 0;
	ret = spawn_daemon(r, r->cl_sock, r->cl_rundir, r->cl_log, "info",
			   &r->cl_pid, &r->cl_dumped);
	if (ret == 0)
		ret = check_pinned(r->cl_pid);
	if (ret == 0)
		ret = cleanup_rep(r->cl_sock, r->cl_log, CLEANUP_OBJS, &res);
	for (unsigned int i = 0; ret == 0 && i < r->o.cleanup_reps; i++) {
		ret = cleanup_rep(r->cl_sock, r->cl_log, CLEANUP_OBJS, &res);
		r->cleanup_us[0][i] = res.poll_us;
		r->cleanup_us[1][i] = res.daemon_us;
		r->cleanup_us[2][i] = res.create_us;
	}
	if (ret < 0)
		dump_log(r->cl_log, &r->cl_dumped);
	if (r->cl_pid > 0 &&
	    stop_server("rdmabrokerd (cleanup)", r->cl_pid, r->cl_log,
			&r->cl_dumped) < 0 &&
	    ret == 0)
		ret = -ECHILD;
	r->cl_pid = 0;
	return ret < 0 ? fail("dead-client cleanup", ret) : 0;
}

/*
 * --objs-daemon-ir N: N broker pairs and nothing else, for a daemon that
 * runs under callgrind (make bench-ir runs it for two values of N: the
 * difference of the daemon's totals over the difference of N is one
 * pair's). The warm-up makes every first use, and the second's rest lets
 * the daemon's status timer lapse, as insn.c waits it out: the pairs then
 * run in the state the times are taken in.
 */
static int run_objs_daemon_ir(struct run *r)
{
	int ret = objs_rep(r->jb, 0, OBJS_DAEMON_WARMUP, NULL);

	if (ret < 0)
		return ret;
	usleep(1100 * 1000);
	ret = objs_rep(r->jb, 0, r->o.objs_daemon_ir, NULL);
	if (ret == 0)
		printf("rdmab-bench: %u ibc_cq_create+ibc_cq_destroy pairs "
		       "for the daemon's count\n",
		       r->o.objs_daemon_ir);
	return ret;
}

/*
 * --objs-ir N: N pairs a side, the only instructions callgrind collects
 * (--collect-atstart=no), each side dumped on its own (make bench-ir
 * divides by N). A warm-up first, so that no side pays for first use.
 */
static int run_objs_ir(struct run *r)
{
	unsigned int n = r->o.objs_ir;
	int ret = 0;

	for (int side = 0; side < 3 && ret == 0; side++)
		ret = objs_rep(r->jb, side, n, NULL);
	if (ret < 0)
		return ret;
	CALLGRIND_TOGGLE_COLLECT;
	ret = objs_rep(r->jb, 0, n, NULL);
	CALLGRIND_TOGGLE_COLLECT;
	CALLGRIND_DUMP_STATS_AT("objs-ir broker");
	if (ret < 0)
		return ret;
	CALLGRIND_TOGGLE_COLLECT;
	ret = objs_rep(r->jb, 1, n, NULL);
	CALLGRIND_TOGGLE_COLLECT;
	CALLGRIND_DUMP_STATS_AT("objs-ir raw");
	if (ret < 0)
		return ret;
	CALLGRIND_TOGGLE_COLLECT;
	ret = objs_rep(r->jb, 2, n, NULL);
	CALLGRIND_TOGGLE_COLLECT;
	CALLGRIND_DUMP_STATS_AT("objs-ir ping");
	if (ret == 0)
		printf("rdmab-bench: %u ibc_cq_create+ibc_cq_destroy pairs, "
		       "raw pairs and ping pairs marked for callgrind\n",
		       n);
	return ret;
}

static int run_loads(struct run *r)
{
	struct load_result res;
	struct ibc_status s0, s1;
	int ret;

	ret = ibc_status(r->cl, &s0, sizeof(s0));
	if (ret < 0)
		return fail("status", ret);
	for (int k = 0; k < N_LOADS; k++) {
		struct load *l[2] = { NULL, NULL };
		const char *path[2] = { r->broker_sock, r->evsrv_sock };
		const pid_t pid[2] = { r->daemon_pid, r->evsrv_pid };

		for (int s = 0; s < 2 && ret == 0; s++)
			ret = load_open(path[s], load_conns[k], s == 0,
					r->payload, r->o.payload, r->req_len,
					r->rep_len, &l[s]);
		for (int s = 0; s < 2 && ret == 0 && r->o.warmup; s++)
			ret = load_run(l[s], r->o.warmup, pid[s], r->lat, &res);
		for (unsigned int i = 0; i < r->o.reps && ret == 0; i++) {
			for (int s = 0; s < 2 && ret == 0; s++) {
				ret = load_run(l[s], r->o.requests, pid[s],
					       r->lat, &res);
				r->cpu[k][s][i] = res.server_cpu_us;
				r->wall[k][s][i] = res.wall_us;
				r->lat_p99[k][s][i] = res.lat_p99_us;
			}
		}
		if (l[0])
			r->broker_sent += load_sent(l[0]);
		load_close(l[0]);
		load_close(l[1]);
		if (ret < 0) {
			fprintf(stderr, "rdmab-bench: load at N=%u: %s\n",
				load_conns[k], strerror(-ret));
			return ret;
		}
	}
	ret = ibc_status(r->cl, &s1, sizeof(s1));
	if (ret < 0)
		return fail("status", ret);
	/* A status reply counts itself. */
	r->daemon_served = s1.requests_served - s0.requests_served - 1;
	if (r->daemon_served != r->broker_sent) {
		fprintf(stderr,
			"rdmab-bench: the broker counted %llu requests, the "
			"client sent %lu\n",
			(unsigned long long)r->daemon_served, r->broker_sent);
		return -EPROTO;
	}
	return 0;
}

static int row(const char *name, const double *b, const double *base,
	       unsigned int reps, double target)
{
	double mb = median_dbl(b, reps), ma = median_dbl(base, reps);
	double ratio = mb / ma;
	char t[32] = "-";
	int miss = 0;

	if (target > 0) {
		miss = !(ratio <= target);
		snprintf(t, sizeof(t), "<=%.2f %s", target,
			 miss ? "MISSED" : "ok");
	}
	printf("  %-33s %9.2f %9.2f %7.2f  %s\n", name, mb, ma, ratio, t);
	return miss;
}

static void spread(const char *name, const double *b, const double *base,
		   unsigned int reps)
{
	double q[MAX_REPS];

	for (unsigned int i = 0; i < reps; i++)
		q[i] = b[i] / base[i];
	printf("  %-33s %.2f .. %.2f\n", name, min_dbl(q, reps),
	       max_dbl(q, reps));
}

static int report_xrcd(const struct run *r)
{
	const struct xrcd_sizes *s = xrcd_sizes(r->xb);
	unsigned int n = r->o.reps;
	int miss;

	miss = row("xrcd open+close median (us)", r->xrcd_med[0],
		   r->xrcd_med[1], n, XRCD_TARGET);
	row("xrcd open+close p99 (us)", r->xrcd_p99[0], r->xrcd_p99[1], n, 0);
	printf("  xrcd open+close = ibc_xrcd_open(\"bench-xrcd\", 0) + "
	       "ibc_xrcd_close() on\n"
	       "  %s (another open holds the name); baseline = one raw "
	       "round trip whose reply\n"
	       "  carries one fd (closed by the client) + one carrying "
	       "none: open %zu B / %zu B,\n"
	       "  close %zu B / %zu B (request / reply, the broker's "
	       "sizes).\n",
	       SOFT_DEVICE_NAME, s->open_req, s->open_rep, s->close_req,
	       s->close_rep);
	return miss;
}

static int report_objs_only(const struct run *r)
{
	const struct objs_sizes *s = objs_sizes(r->jb);
	unsigned int n = r->o.reps;
	int miss;

	printf("\nrdmab-bench: CQ pairs vs baseline, same run, every process "
	       "on CPU %d; medians\n  over %u repetitions of %u pairs\n\n",
	       BENCH_CPU, n, r->o.objs_iters);
	printf("  %-33s %9s %9s %7s  %s\n", "metric / baseline", "broker",
	       "baseline", "ratio", "target");
	miss = row("cq create+destroy median (us)", r->objs_med[0],
		   r->objs_med[1], n, OBJS_TARGET);
	row("cq create+destroy p99 (us)", r->objs_p99[0], r->objs_p99[1], n, 0);
	row("two ibc_ping median (us)", r->objs_med[2], r->objs_med[1], n, 0);
	spread("cq create+destroy median", r->objs_med[0], r->objs_med[1], n);
	spread("two ibc_ping median", r->objs_med[2], r->objs_med[1], n);
	printf("  baseline = two raw SOCK_SEQPACKET round trips: create "
	       "%zu B / %zu B, destroy\n  %zu B / %zu B (request / reply, "
	       "the broker's sizes); two ibc_ping = two empty\n"
	       "  pings through the same client, for reference.\n",
	       s->create_req, s->create_rep, s->destroy_req, s->destroy_rep);
	return miss;
}

static int report_cleanup(const struct run *r)
{
	const double(*c)[MAX_REPS] = r->cleanup_us;
	unsigned int n = r->o.cleanup_reps;
	int miss;

	if (!n) {
		printf("  dead-client cleanup: skipped (--cleanup-reps 0)\n");
		return 0;
	}
	miss = row("cleanup 1000 polled / create (us)", c[0], c[2], n,
		   CLEANUP_TARGET);
	miss |= row("cleanup 1000 daemon / create (us)", c[1], c[2], n,
		    CLEANUP_TARGET);
	printf("  cleanup 1000 min .. max (us): polled %.0f .. %.0f, daemon "
	       "%.0f .. %.0f,\n  create %.0f .. %.0f\n",
	       min_dbl(c[0], n), max_dbl(c[0], n), min_dbl(c[1], n),
	       max_dbl(c[1], n), min_dbl(c[2], n), max_dbl(c[2], n));
	return miss;
}

static int report(const struct run *r)
{
	const struct open_sizes *os = open_sizes(r->ob);
	unsigned int n = r->o.reps;
	char name[64];
	int miss = 0;

	printf("\nrdmab-bench: broker vs baselines, same run, every process "
	       "on CPU %d\n",
	       BENCH_CPU);
	printf("  CPU %d idle before the run: %.0f%%, load average %.2f\n",
	       BENCH_CPU, r->idle, r->load1);
	printf("  ping request %zu B, reply %zu B (payload %zu B); "
	       "medians over %u repetitions\n",
	       r->req_len, r->rep_len, r->o.payload, n);
	printf("  RTT: %u round trips a repetition; load: %lu requests a "
	       "repetition;\n  open+close: %u pairs a repetition\n\n",
	       r->o.rtt_iters, r->o.requests, r->o.open_iters);
	printf("  %-33s %9s %9s %7s  %s\n", "metric / baseline", "broker",
	       "baseline", "ratio", "target");
	miss |= row("ping RTT median / blocking (us)", r->rtt_med[RTT_BROKER],
		    r->rtt_med[RTT_BLOCKING], n, RTT_TARGET);
	miss |= row("ping RTT median / floor (us)", r->rtt_med[RTT_BROKER],
		    r->rtt_med[RTT_FLOOR], n, FLOOR_TARGET);
	row("ping RTT p99 / blocking (us)", r->rtt_p99[RTT_BROKER],
	    r->rtt_p99[RTT_BLOCKING], n, 0);
	row("ping RTT p99 / floor (us)", r->rtt_p99[RTT_BROKER],
	    r->rtt_p99[RTT_FLOOR], n, 0);
	for (int k = 0; k < N_LOADS; k++) {
		snprintf(name, sizeof(name), "daemon CPU/request N=%u (us)",
			 load_conns[k]);
		miss |= row(name, r->cpu[k][0], r->cpu[k][1], n, CPU_TARGET);
	}
	for (int k = 0; k < N_LOADS; k++) {
		snprintf(name, sizeof(name), "wall time/request N=%u (us)",
			 load_conns[k]);
		row(name, r->wall[k][0], r->wall[k][1], n, 0);
	}
	for (int k = 0; k < N_LOADS; k++) {
		snprintf(name, sizeof(name), "request latency p99 N=%u (us)",
			 load_conns[k]);
		row(name, r->lat_p99[k][0], r->lat_p99[k][1], n, 0);
	}
	miss |= row("open+close median / blocking (us)",
		    r->open_med[OPEN_STEADY], r->open_med[OPEN_RAW], n,
		    OPEN_TARGET);
	row("open+close median / floor (us)", r->open_med[OPEN_STEADY],
	    r->open_med[OPEN_FLOOR], n, 0);
	row("open+close p99 / blocking (us)", r->open_p99[OPEN_STEADY],
	    r->open_p99[OPEN_RAW], n, 0);
	row("open+close cold median / blocking", r->open_med[OPEN_COLD],
	    r->open_med[OPEN_RAW], n, 0);
	row("open+close cold p99 / blocking", r->open_p99[OPEN_COLD],
	    r->open_p99[OPEN_RAW], n, 0);
	miss |= row("cq create+destroy median (us)", r->objs_med[0],
		    r->objs_med[1], n, OBJS_TARGET);
	row("cq create+destroy p99 (us)", r->objs_p99[0], r->objs_p99[1], n, 0);
	miss |= report_xrcd(r);
	miss |= report_cleanup(r);
	row("floor RTT median / blocking (us)", r->rtt_med[RTT_FLOOR],
	    r->rtt_med[RTT_BLOCKING], n, 0);
	row("floor open+close / blocking (us)", r->open_med[OPEN_FLOOR],
	    r->open_med[OPEN_RAW], n, 0);
	miss |= insn_report(&r->insn, r->insn_n, INSN_TARGET);
	printf("\n  baselines: blocking = raw SOCK_SEQPACKET ping-pong of "
	       "the same sizes between\n"
	       "  two blocking processes (send + recv); floor = "
	       "bench-evsrv, libevent with the\n"
	       "  daemon's system calls (epoll_wait + recv + send, "
	       "sendmsg for a descriptor)\n"
	       "  and no logic, driven with libibclient's (send "
	       "MSG_DONTWAIT + recv, recvmsg\n"
	       "  for a reply with a descriptor); the\n"
	       "  floor rows show what the event loop itself costs. CPU = "
	       "bench-evsrv driven\n"
	       "  by the same client.\n"
	       "  CPU/request = server utime+stime (clock_getcpuclockid) / "
	       "requests served;\n"
	       "  wall = 1 / throughput of the closed loop (one client "
	       "process, 1 request\n"
	       "  outstanding per connection).\n");
	printf("  open+close = ibc_open(\"%s\") + ibc_close() through "
	       "libibclient; baseline =\n"
	       "  one raw SOCK_SEQPACKET round trip whose reply carries "
	       "one fd (closed by the\n"
	       "  client) + one carrying none: open %zu B / %zu B, close "
	       "%zu B / %zu B\n"
	       "  (request / reply, the broker's sizes). Steady: a second "
	       "client of the same\n"
	       "  uid holds the domain's context open for the whole run, "
	       "so no open creates\n"
	       "  it and no close tears it down. Cold (no target): a "
	       "client in a private\n"
	       "  domain, where every open creates the context (a sealed "
	       "memfd) and every\n"
	       "  close frees it; same baseline.\n"
	       "  instructions: user space only (callgrind Ir), the "
	       "difference between a long\n"
	       "  and a short run of each side over the difference in "
	       "requests; the broker's\n"
	       "  client is libibclient, its server rdmabrokerd; the "
	       "target is the broker's\n"
	       "  client and server together.\n",
	       SOFT_DEVICE_NAME, os->open_req, os->open_rep, os->close_req,
	       os->close_rep);
	printf("  cq create+destroy = ibc_cq_create(%s, 63) + "
	       "ibc_cq_destroy(): one request\n"
	       "  each on the soft device, where the broker keeps the "
	       "record; baseline = two raw\n"
	       "  SOCK_SEQPACKET round trips: create %zu B / %zu B, destroy "
	       "%zu B / %zu B.\n"
	       "  User-space instructions per pair: make bench-ir "
	       "(callgrind).\n",
	       SOFT_DEVICE_NAME, objs_sizes(r->jb)->create_req,
	       objs_sizes(r->jb)->create_rep, objs_sizes(r->jb)->destroy_req,
	       objs_sizes(r->jb)->destroy_rep);
	if (r->o.cleanup_reps)
		printf("  cleanup 1000 = a forked client (pinned) "
		       "creates %d objects on %s, two CQs,\n"
		       "  an RC QP on them and two MRs at a time, "
		       "each one request; baseline = the\n"
		       "  client's own time for those creates. It "
		       "is then killed with SIGKILL: polled =\n"
		       "  from kill() (the driver reaps it at once) "
		       "to the first ibc_list_objects()\n"
		       "  filtered on that client that finds none, "
		       "polling without pause; daemon = the\n"
		       "  daemon's own \"N objects destroyed in X "
		       "us\" (pidfd readable to last destroy,\n"
		       "  logged at info), taken from its log. "
		       "A daemon of its own, at --log-level\n"
		       "  info; %u repetitions "
		       "after one warm-up.\n",
		       CLEANUP_OBJS, SOFT_DEVICE_NAME, r->o.cleanup_reps);
	printf("  ratio per repetition pair (min .. max):\n");
	spread("ping RTT median / blocking", r->rtt_med[RTT_BROKER],
	       r->rtt_med[RTT_BLOCKING], n);
	spread("ping RTT median / floor", r->rtt_med[RTT_BROKER],
	       r->rtt_med[RTT_FLOOR], n);
	for (int k = 0; k < N_LOADS; k++) {
		snprintf(name, sizeof(name), "daemon CPU/request N=%u",
			 load_conns[k]);
		spread(name, r->cpu[k][0], r->cpu[k][1], n);
	}
	spread("open+close median / blocking", r->open_med[OPEN_STEADY],
	       r->open_med[OPEN_RAW], n);
	spread("open+close median / floor", r->open_med[OPEN_STEADY],
	       r->open_med[OPEN_FLOOR], n);
	spread("open+close cold / blocking", r->open_med[OPEN_COLD],
	       r->open_med[OPEN_RAW], n);
	spread("cq create+destroy median", r->objs_med[0], r->objs_med[1], n);
	if (r->o.cleanup_reps) {
		spread("cleanup 1000 polled / create", r->cleanup_us[0],
		       r->cleanup_us[2], r->o.cleanup_reps);
		spread("cleanup 1000 daemon / create", r->cleanup_us[1],
		       r->cleanup_us[2], r->o.cleanup_reps);
	}
	printf("  the broker counted %llu requests in the load phase, the "
	       "client sent %lu\n",
	       (unsigned long long)r->daemon_served, r->broker_sent);
	fflush(stdout);
	return miss;
}

/* Instruction counts, last: callgrind's runs are the slow part. */
static int run_insn(struct run *r)
{
	char conf[96];
	struct insn_setup s = {
		.broker_sock = r->broker_sock,
		.evsrv_sock = r->evsrv_sock,
		.evsrv_open_sock = r->evsrv_open_sock,
		.daemon = r->o.daemon,
		.evsrv = r->o.evsrv,
		.conf = conf,
		.rundir = r->cg_rundir,
		.sock = r->cg_sock,
		.out = r->cg_out,
		.log = r->cg_log,
		.keep_dir = r->o.callgrind_dir,
		.no_restart = r->o.no_restart,
		.device = SOFT_DEVICE_NAME,
		.payload = r->o.payload,
		.ping_req = r->req_len,
		.ping_rep = r->rep_len,
		.open = *open_sizes(r->ob),
		.n = { { r->o.insn_pings / 2, r->o.insn_pings * 3 / 2 },
		       { r->o.insn_pings / 4, r->o.insn_pings * 3 / 4 } },
		/* The daemon's status timer: a second, in server.c. */
		.settle_ms = 1100,
	};
	int ret;

	memcpy(r->insn_n, s.n, sizeof(s.n));
	if (r->o.insn_pings < 4) {
		insn_skip(&r->insn, "--insn-pings 0");
		return 0;
	}
	snprintf(conf, sizeof(conf), "%s/rdmabroker.conf", r->dir);
	ret = insn_count(&s, &r->insn);
	return ret < 0 ? fail("instruction counts", ret) : 0;
}

/* Stop a server; 0 when it exited with status 0 on SIGTERM. */
static int stop_server(const char *name, pid_t pid, const char *log,
		       int *dumped)
{
	int st = stop_child(pid);

	if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	dump_log(log, dumped);
	if (st < 0)
		fprintf(stderr, "rdmab-bench: %s: %s\n", name, strerror(-st));
	else if (WIFSIGNALED(st))
		fprintf(stderr, "rdmab-bench: %s was killed by signal %d\n",
			name, WTERMSIG(st));
	else
		fprintf(stderr, "rdmab-bench: %s exited with status %d\n", name,
			WEXITSTATUS(st));
	return -ECHILD;
}

static int stop_all(struct run *r)
{
	int ret = 0;

	open_teardown(r->ob);
	r->ob = NULL;
	objs_teardown(r->jb);
	r->jb = NULL;
	xrcd_teardown(r->xb);
	r->xb = NULL;
	if (r->cl)
		ibc_disconnect(r->cl);
	r->cl = NULL;
	if (r->raw_fd >= 0)
		close(r->raw_fd);
	r->raw_fd = -1;
	if (r->floor_fd >= 0)
		close(r->floor_fd);
	r->floor_fd = -1;
	if (r->echo_pid > 0)
		stop_child(r->echo_pid);
	if (r->evsrv_pid > 0 && stop_server("bench-evsrv", r->evsrv_pid,
					    r->evsrv_log, &r->evsrv_dumped) < 0)
		ret = -ECHILD;
	if (r->evsrv_open_pid > 0 &&
	    stop_server("bench-evsrv --fd-reply-size", r->evsrv_open_pid,
			r->evsrv_open_log, &r->evsrv_open_dumped) < 0)
		ret = -ECHILD;
	if (r->daemon_pid > 0 &&
	    stop_server("rdmabrokerd", r->daemon_pid, r->daemon_log,
			&r->daemon_dumped) < 0)
		ret = -ECHILD;
	r->echo_pid = r->evsrv_pid = r->evsrv_open_pid = r->daemon_pid = 0;
	if (r->dir[0])
		remove_tree(r->dir);
	return ret;
}

int main(int argc, char **argv)
{
	/* The library's defaults, no reply deadline among them (a timed
	 * wait arms a kernel timer per request); the alarm ends a hang. */
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET,
	};
	struct run *r;
	size_t nlat;
	int ret, miss = 0, strict, fd;

	alarm(BENCH_ALARM_S);
	r = calloc(1, sizeof(*r));
	if (!r)
		return 1;
	r->raw_fd = -1;
	r->floor_fd = -1;
	if (parse_opts(argc, argv, &r->o) < 0)
		return 2;
	if (r->o.role) {
		ret = insn_role_main(r->o.role, r->o.role_socket,
				     r->o.role_count, r->o.payload,
				     r->o.role_sizes);
		free(r);
		return ret;
	}
	nlat = r->o.rtt_iters > r->o.requests ? r->o.rtt_iters : r->o.requests;
	if (r->o.warmup > nlat)
		nlat = r->o.warmup;
	if (r->o.open_iters > nlat)
		nlat = r->o.open_iters;
	if (r->o.objs_iters > nlat)
		nlat = r->o.objs_iters;
	if (r->o.xrcd_iters > nlat)
		nlat = r->o.xrcd_iters;
	/* A repetition keeps every side's latencies (rep_interleaved()). */
	r->lat = calloc(nlat * MAX_SIDES, sizeof(*r->lat));
	if (!r->lat)
		return 1;
	for (size_t i = 0; i < r->o.payload; i++)
		r->payload[i] = (uint8_t)('a' + i % 26);
	cleanup_install();
	ret = pin_self();
	if (ret < 0) {
		fail("cannot pin to CPU 0", ret);
		goto out;
	}
	/* Instructions do not depend on a quiet CPU. */
	if (!r->o.objs_ir && !r->o.objs_daemon_ir)
		wait_quiet(r);

	ret = make_dir(r);
	if (ret < 0) {
		fail("temporary directory", ret);
		goto out;
	}
	ret = start_daemon(r);
	if (ret == 0)
		ret = probe_sizes(r);
	if (ret == 0)
		ret = start_evsrv(r, r->evsrv_sock, r->evsrv_log, r->rep_len, 0,
				  &r->evsrv_pid, &r->evsrv_dumped,
				  &r->floor_fd);
	if (ret == 0)
		ret = start_echo(r);
	/* Before anything is measured: the holder keeps the domain's
	 * context open for the whole run. */
	if (ret == 0)
		ret = open_setup(r->broker_sock, SOFT_DEVICE_NAME, &r->ob);
	if (ret == 0)
		ret = start_evsrv(r, r->evsrv_open_sock, r->evsrv_open_log,
				  open_sizes(r->ob)->close_rep,
				  open_sizes(r->ob)->open_rep,
				  &r->evsrv_open_pid, &r->evsrv_open_dumped,
				  &fd);
	if (ret == 0)
		open_floor_adopt(r->ob, fd);
	if (ret == 0)
		ret = objs_setup(r->broker_sock, &r->jb);
	if (ret == 0)
		ret = xrcd_setup(r->broker_sock, &r->xb);
	if (ret == 0)
		ret = check_placement(r);
	if (ret < 0)
		goto out;
	attr.socket_path = r->broker_sock;
	ret = ibc_connect(&attr, &r->cl);
	if (ret < 0) {
		fprintf(stderr, "rdmab-bench: ibc_connect: %s\n",
			ibc_last_error());
		goto out;
	}

	if (r->o.objs_ir) {
		ret = run_objs_ir(r);
		goto out;
	}
	if (r->o.objs_daemon_ir) {
		ret = run_objs_daemon_ir(r);
		goto out;
	}
	if (r->o.objs_only) {
		ret = run_objs(r);
		if (ret == 0)
			miss = report_objs_only(r);
		goto out;
	}
	if (r->o.xrcd_only) {
		ret = run_xrcd(r);
		if (ret == 0) {
			printf("\nrdmab-bench: XRCD pairs vs baseline, same "
			       "run, every process on CPU %d; medians over %u "
			       "repetitions of %u pairs\n\n",
			       BENCH_CPU, r->o.reps, r->o.xrcd_iters);
			printf("  %-33s %9s %9s %7s  %s\n", "metric / baseline",
			       "broker", "baseline", "ratio", "target");
			miss = report_xrcd(r);
		}
		goto out;
	}
	ret = run_rtt(r);
	if (ret == 0)
		ret = run_loads(r);
	if (ret == 0)
		ret = run_open(r);
	if (ret == 0)
		ret = run_objs(r);
	if (ret == 0)
		ret = run_xrcd(r);
	if (ret == 0)
		ret = run_cleanup(r);
	if (ret == 0)
		ret = run_insn(r);
	if (ret == 0)
		miss = report(r);
out:
	if (stop_all(r) < 0 && ret == 0)
		ret = -ECHILD;
	cleanup_all();
	strict = r->o.strict;
	free(r->lat);
	free(r);
	if (ret < 0)
		return 1;
	return strict && miss ? 1 : 0;
}
