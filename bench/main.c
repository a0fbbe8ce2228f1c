// SPDX-License-Identifier: MIT
/*
 * rdmab-bench: what `make bench` runs. Starts rdmabrokerd (soft device)
 * and the baselines in a temporary directory, everything pinned to CPU 0,
 * and prints each figure next to the baseline measured in the same run:
 *
 *  1. ping RTT: ibc_ping() through libibclient to rdmabrokerd, against a
 *     raw SOCK_SEQPACKET ping-pong between two processes with packets of
 *     the same sizes;
 *  2. daemon CPU per request at 1, 16 and 256 connections: one closed-loop
 *     client sending the broker's Ping packets, against bench-evsrv, a
 *     bare libevent server answering with packets of the same size;
 *  3. ibc_open + ibc_close of soft0, against a raw SOCK_SEQPACKET round
 *     trip whose reply carries one fd plus one that carries none, packets
 *     of the broker's sizes (open.c); steady state (another client holds
 *     the domain's context) and, for information, cold;
 *  4. ibc_cq_create + ibc_cq_destroy on soft0, against two raw
 *     SOCK_SEQPACKET round trips with packets of the broker's sizes
 *     (objs.c). With --objs-ir the driver measures only these pairs and
 *     marks them for callgrind, which counts their user-space
 *     instructions (make bench-ir).
 *
 * Repetitions alternate between the broker and its baseline, so that a
 * drift of the machine hits both sides alike.
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
#include "proto/soft.h"

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
#define N_LOADS 3
#define QUIET_IDLE 90.0
#define QUIET_WAIT_S 20
#define RTT_TARGET 1.3
#define CPU_TARGET 1.5
#define OPEN_TARGET 1.3
#define OBJS_TARGET 1.3

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
	size_t payload;
	int strict;
};

struct run {
	struct opts o;
	char dir[64];
	char broker_sock[96];
	char evsrv_sock[96];
	char daemon_log[96];
	char evsrv_log[96];
	int daemon_dumped;
	int evsrv_dumped;
	pid_t daemon_pid;
	pid_t evsrv_pid;
	pid_t echo_pid;
	int raw_fd;
	struct ibc_client *cl;
	struct open_bench *ob;
	struct objs_bench *jb;
	uint8_t payload[4096];
	uint8_t ping_req[4096];
	size_t req_len;
	size_t rep_len;
	double idle;
	double load1;

	/* Per repetition: [0] broker, [1] baseline. */
	double rtt_med[2][MAX_REPS], rtt_p99[2][MAX_REPS];
	double cpu[N_LOADS][2][MAX_REPS], wall[N_LOADS][2][MAX_REPS];
	double lat_p99[N_LOADS][2][MAX_REPS];
	double open_med[OPEN_SIDES][MAX_REPS], open_p99[OPEN_SIDES][MAX_REPS];
	double objs_med[2][MAX_REPS], objs_p99[2][MAX_REPS];
	unsigned long broker_sent;
	uint64_t daemon_served;
	uint64_t *lat;
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
		"  --payload BYTES   ping payload (48)\n"
		"  --strict          exit 1 when a target is missed\n");
}

static int parse_ulong(const char *s, unsigned long min, unsigned long max,
		       unsigned long *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
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
		{ "objs-iters", required_argument, NULL, 'c' },
		{ "objs-warmup", required_argument, NULL, 'C' },
		{ "objs-ir", required_argument, NULL, 'x' },
		{ "payload", required_argument, NULL, 'p' },
		{ "strict", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned long v = 0;
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
		.payload = 48,
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
		case 's':
			o->strict = 1;
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
		case 'c':
			ret = parse_ulong(optarg, 1, 1000000, &v);
			o->objs_iters = (unsigned int)v;
			break;
		case 'C':
			ret = parse_ulong(optarg, 0, 1000000, &v);
			o->objs_warmup = (unsigned int)v;
			break;
		case 'x':
			ret = parse_ulong(optarg, 1, 1000000, &v);
			o->objs_ir = (unsigned int)v;
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
	if (!o->daemon || !o->evsrv || optind < argc) {
		usage(stderr);
		return -EINVAL;
	}
	/* Every measured serial must pack to the same width (bench.h). */
	if ((uint64_t)o->reps * o->rtt_iters + o->rtt_warmup +
		    PKT_SERIAL_START >= PKT_SERIAL_END ||
	    2 * N_LOADS * ((uint64_t)o->reps * o->requests + o->warmup) +
			    2 * (1 + 16 + 256) + PKT_SERIAL_START >=
		    PKT_SERIAL_END ||
	    /* An open client: two serials a pair, a list per repetition. */
	    2 * ((uint64_t)o->reps * o->open_iters + o->open_warmup) +
			    o->reps + 1 + PKT_SERIAL_START >=
		    PKT_SERIAL_END ||
	    /* The CQ client: two serials a pair. */
	    2 * ((uint64_t)o->reps * o->objs_iters + o->objs_warmup +
		 o->objs_ir) +
			    PKT_SERIAL_START >=
		    PKT_SERIAL_END) {
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
	snprintf(r->evsrv_sock, sizeof(r->evsrv_sock), "%s/evsrv.sock",
		 r->dir);
	snprintf(r->daemon_log, sizeof(r->daemon_log), "%s/rdmabrokerd.log",
		 r->dir);
	snprintf(r->evsrv_log, sizeof(r->evsrv_log), "%s/evsrv.log", r->dir);
	/* Removed in reverse order: contents before the directory. */
	ret = cleanup_path(r->dir);
	if (ret == 0)
		ret = cleanup_path(conf);
	if (ret == 0)
		ret = cleanup_path(rundir);
	if (ret == 0)
		ret = cleanup_path(r->daemon_log);
	if (ret == 0)
		ret = cleanup_path(r->evsrv_log);
	if (ret == 0)
		ret = cleanup_path(r->broker_sock);
	if (ret == 0)
		ret = cleanup_path(r->evsrv_sock);
	if (ret < 0)
		return ret;
	if (mkdir(rundir, 0700) < 0)
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

static int start_daemon(struct run *r)
{
	char conf[96], rundir[96];
	char *argv[] = {
		(char *)r->o.daemon, "--socket", r->broker_sock,
		"--runtime-dir", rundir, "--config", conf, "--device", "soft",
		"--log-level", "notice", "--foreground", NULL,
	};
	int ret, fd;

	snprintf(conf, sizeof(conf), "%s/rdmabroker.conf", r->dir);
	snprintf(rundir, sizeof(rundir), "%s/run", r->dir);
	ret = spawn(argv, r->daemon_log, &r->daemon_pid);
	if (ret < 0)
		return fail("cannot start rdmabrokerd", ret);
	ret = unix_connect_wait(r->broker_sock, 10000, r->daemon_pid, &fd);
	if (ret < 0) {
		dump_log(r->daemon_log, &r->daemon_dumped);
		return fail("rdmabrokerd does not answer", ret);
	}
	close(fd);
	return 0;
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
	len = pkt_ping(r->ping_req, sizeof(r->ping_req), ++serial,
		       r->payload, r->o.payload);
	if (len < 0 ||
	    send(fd, r->ping_req, (size_t)len, MSG_NOSIGNAL) < 0) {
		ret = len < 0 ? len : -errno;
		goto out;
	}
	r->req_len = (size_t)len;
	len = recv_timeout(fd, buf, sizeof(buf), 5000);
	ret = len < 0 ? len :
			pkt_check_reply(buf, (size_t)len, serial,
					PKT_BODY_PING, r->payload,
					r->o.payload);
	if (ret < 0)
		goto out;
	r->rep_len = (size_t)len;
out:
	close(fd);
	return ret < 0 ? fail("probe: hello and ping by hand", ret) : 0;
}

static int start_evsrv(struct run *r)
{
	char size[32];
	char *argv[] = {
		(char *)r->o.evsrv, "--socket", r->evsrv_sock,
		"--reply-size", size, NULL,
	};
	int ret, fd;

	snprintf(size, sizeof(size), "%zu", r->rep_len);
	ret = spawn(argv, r->evsrv_log, &r->evsrv_pid);
	if (ret < 0)
		return fail("cannot start bench-evsrv", ret);
	ret = unix_connect_wait(r->evsrv_sock, 10000, r->evsrv_pid, &fd);
	if (ret < 0) {
		dump_log(r->evsrv_log, &r->evsrv_dumped);
		return fail("bench-evsrv does not answer", ret);
	}
	close(fd);
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
	const pid_t pids[] = { getpid(), r->daemon_pid, r->evsrv_pid,
			       r->echo_pid, open_peer_pid(r->ob),
			       objs_peer_pid(r->jb) };

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

static int run_rtt(struct run *r)
{
	unsigned int n = r->o.rtt_iters;
	int ret;

	/* The warm-up also moves ibc's serials (1 was the hello) into the
	 * range where they pack like the probe's. */
	ret = rtt_broker_rep(r->cl, r->payload, r->o.payload,
			     r->o.rtt_warmup > PKT_SERIAL_START ?
				     r->o.rtt_warmup :
				     PKT_SERIAL_START,
			     NULL);
	if (ret == 0)
		ret = rtt_raw_rep(r->raw_fd, r->ping_req, r->req_len,
				  r->rep_len, r->o.rtt_warmup, NULL);
	for (unsigned int i = 0; ret == 0 && i < r->o.reps; i++) {
		ret = rtt_broker_rep(r->cl, r->payload, r->o.payload, n,
				     r->lat);
		if (ret < 0)
			break;
		rep_stats(r->lat, n, &r->rtt_med[0][i], &r->rtt_p99[0][i]);
		ret = rtt_raw_rep(r->raw_fd, r->ping_req, r->req_len,
				  r->rep_len, n, r->lat);
		if (ret < 0)
			break;
		rep_stats(r->lat, n, &r->rtt_med[1][i], &r->rtt_p99[1][i]);
	}
	return ret < 0 ? fail("ping round trips", ret) : 0;
}

/* Repetitions alternate steady, raw and cold, as in run_rtt(). */
static int run_open(struct run *r)
{
	unsigned int n = r->o.open_iters;
	int ret = 0;

	for (int s = 0; s < OPEN_SIDES && ret == 0; s++)
		ret = open_rep(r->ob, s, r->o.open_warmup, NULL);
	for (unsigned int i = 0; ret == 0 && i < r->o.reps; i++) {
		for (int s = 0; s < OPEN_SIDES && ret == 0; s++) {
			ret = open_rep(r->ob, s, n, r->lat);
			if (ret == 0)
				rep_stats(r->lat, n, &r->open_med[s][i],
					  &r->open_p99[s][i]);
		}
	}
	return ret;
}

/* Repetitions alternate the library's pairs and the raw round trips. */
static int run_objs(struct run *r)
{
	unsigned int n = r->o.objs_iters;
	int ret = 0;

	for (int s = 0; s < 2 && ret == 0; s++)
		ret = objs_rep(r->jb, s, r->o.objs_warmup, NULL);
	for (unsigned int i = 0; ret == 0 && i < r->o.reps; i++) {
		for (int s = 0; s < 2 && ret == 0; s++) {
			ret = objs_rep(r->jb, s, n, r->lat);
			if (ret == 0)
				rep_stats(r->lat, n, &r->objs_med[s][i],
					  &r->objs_p99[s][i]);
		}
	}
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
			ret = load_run(l[s], r->o.warmup, pid[s], r->lat,
				       &res);
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
			(unsigned long long)r->daemon_served,
			r->broker_sent);
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
	printf("  %-30s %9.2f %9.2f %7.2f  %s\n", name, mb, ma, ratio, t);
	return miss;
}

static void spread(const char *name, const double *b, const double *base,
		   unsigned int reps)
{
	double q[MAX_REPS];

	for (unsigned int i = 0; i < reps; i++)
		q[i] = b[i] / base[i];
	printf("  %-30s %.2f .. %.2f\n", name, min_dbl(q, reps),
	       max_dbl(q, reps));
}

static int report(const struct run *r)
{
	const struct open_sizes *os = open_sizes(r->ob);
	unsigned int n = r->o.reps;
	char name[64];
	int miss = 0;

	printf("\nrdmab-bench: broker vs baseline, same run, every process "
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
	printf("  %-30s %9s %9s %7s  %s\n", "metric", "broker", "baseline",
	       "ratio", "target");
	miss |= row("ping RTT median (us)", r->rtt_med[0], r->rtt_med[1], n,
		    RTT_TARGET);
	miss |= row("ping RTT p99 (us)", r->rtt_p99[0], r->rtt_p99[1], n, 0);
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
	miss |= row("open+close median (us)", r->open_med[OPEN_STEADY],
		    r->open_med[OPEN_RAW], n, OPEN_TARGET);
	row("open+close p99 (us)", r->open_p99[OPEN_STEADY],
	    r->open_p99[OPEN_RAW], n, 0);
	row("open+close cold median (us)", r->open_med[OPEN_COLD],
	    r->open_med[OPEN_RAW], n, 0);
	row("open+close cold p99 (us)", r->open_p99[OPEN_COLD],
	    r->open_p99[OPEN_RAW], n, 0);
	miss |= row("cq create+destroy median (us)", r->objs_med[0],
		    r->objs_med[1], n, OBJS_TARGET);
	row("cq create+destroy p99 (us)", r->objs_p99[0], r->objs_p99[1], n,
	    0);
	printf("\n  baselines: RTT = raw SOCK_SEQPACKET ping-pong of the "
	       "same sizes between two\n"
	       "  processes; CPU = bench-evsrv (libevent, recv/send) driven "
	       "by the same client.\n"
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
	       "  close frees it; same baseline.\n",
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
	printf("  ratio per repetition pair (min .. max):\n");
	spread("ping RTT median", r->rtt_med[0], r->rtt_med[1], n);
	for (int k = 0; k < N_LOADS; k++) {
		snprintf(name, sizeof(name), "daemon CPU/request N=%u",
			 load_conns[k]);
		spread(name, r->cpu[k][0], r->cpu[k][1], n);
	}
	spread("open+close median", r->open_med[OPEN_STEADY],
	       r->open_med[OPEN_RAW], n);
	spread("open+close cold median", r->open_med[OPEN_COLD],
	       r->open_med[OPEN_RAW], n);
	spread("cq create+destroy median", r->objs_med[0], r->objs_med[1],
	       n);
	printf("  the broker counted %llu requests in the load phase, the "
	       "client sent %lu\n",
	       (unsigned long long)r->daemon_served, r->broker_sent);
	fflush(stdout);
	return miss;
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
		fprintf(stderr, "rdmab-bench: %s: %s\n", name,
			strerror(-st));
	else if (WIFSIGNALED(st))
		fprintf(stderr, "rdmab-bench: %s was killed by signal %d\n",
			name, WTERMSIG(st));
	else
		fprintf(stderr, "rdmab-bench: %s exited with status %d\n",
			name, WEXITSTATUS(st));
	return -ECHILD;
}

static int stop_all(struct run *r)
{
	int ret = 0;

	open_teardown(r->ob);
	r->ob = NULL;
	objs_teardown(r->jb);
	r->jb = NULL;
	if (r->cl)
		ibc_disconnect(r->cl);
	r->cl = NULL;
	if (r->raw_fd >= 0)
		close(r->raw_fd);
	r->raw_fd = -1;
	if (r->echo_pid > 0)
		stop_child(r->echo_pid);
	if (r->evsrv_pid > 0 &&
	    stop_server("bench-evsrv", r->evsrv_pid, r->evsrv_log,
			&r->evsrv_dumped) < 0)
		ret = -ECHILD;
	if (r->daemon_pid > 0 &&
	    stop_server("rdmabrokerd", r->daemon_pid, r->daemon_log,
			&r->daemon_dumped) < 0)
		ret = -ECHILD;
	r->echo_pid = r->evsrv_pid = r->daemon_pid = 0;
	if (r->dir[0])
		remove_tree(r->dir);
	return ret;
}

int main(int argc, char **argv)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_TIMEOUT,
		.timeout_ms = 10000,
	};
	struct run *r;
	size_t nlat;
	int ret, miss = 0, strict;

	alarm(BENCH_ALARM_S);
	r = calloc(1, sizeof(*r));
	if (!r)
		return 1;
	r->raw_fd = -1;
	if (parse_opts(argc, argv, &r->o) < 0)
		return 2;
	nlat = r->o.rtt_iters > r->o.requests ? r->o.rtt_iters :
						r->o.requests;
	if (r->o.warmup > nlat)
		nlat = r->o.warmup;
	if (r->o.open_iters > nlat)
		nlat = r->o.open_iters;
	if (r->o.objs_iters > nlat)
		nlat = r->o.objs_iters;
	r->lat = calloc(nlat, sizeof(*r->lat));
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
	if (!r->o.objs_ir)
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
		ret = start_evsrv(r);
	if (ret == 0)
		ret = start_echo(r);
	/* Before anything is measured: the holder keeps the domain's
	 * context open for the whole run. */
	if (ret == 0)
		ret = open_setup(r->broker_sock, SOFT_DEVICE_NAME, &r->ob);
	if (ret == 0)
		ret = objs_setup(r->broker_sock, &r->jb);
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
	ret = run_rtt(r);
	if (ret == 0)
		ret = run_loads(r);
	if (ret == 0)
		ret = run_open(r);
	if (ret == 0)
		ret = run_objs(r);
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
