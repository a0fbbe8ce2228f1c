// SPDX-License-Identifier: MIT
/*
 * User-space instructions per request, counted with callgrind: perf cannot
 * count instructions on these VMs (research/performance-baselines.md §0),
 * and counts do not drift with the machine the way times do.
 *
 * Every side of every pair is counted on its own: the broker (libibclient
 * and rdmabrokerd), the blocking ping-pong (a raw client and a blocking
 * echo) and the event-driven floor (libibclient's system calls and
 * bench-evsrv). The side counted runs under callgrind twice, for n[0] and
 * n[1] requests, while its peer runs natively; the difference of the two
 * totals over n[1] - n[0] is what one request costs, start-up, connection
 * and teardown cancelled out. Clients run as `rdmab-bench --role NAME`,
 * servers as themselves; the run's own servers answer the clients.
 *
 * The daemon is counted in the steady state the RTTs measure: for a second
 * after a client comes or goes it holds a timer (the coalesced status
 * update), and each turn of its event loop then also computes a timeout.
 * Its clients wait that second out before their requests.
 *
 * And the daemon is counted one request per wakeup: its driver sends each
 * request only once /proc/PID/syscall shows the daemon asleep in
 * epoll_wait. Otherwise whether a request waits in the socket when the
 * daemon, done with the one before, reads on at once (--read-on auto,
 * conn.c) depends on the scheduler: 1.6 to 2.0 loop wakeups per open and
 * close, about 450 instructions of libevent each, swung the count by up to
 * 4 % from run to run. Pinned so, the count is the daemon's path when its
 * client is not there yet, the dearer of the two (a read on that finds
 * nothing backs off, conn.c): only the measurement changed, not the path.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "include/ibclient.h"
#include "daemon/device/soft/soft.h"

#define INSN_TIMEOUT_MS 30000
#define INSN_MAX_PACKET 4096

/* --- the roles -------------------------------------------------------- */

struct insn_role {
	const char *name;
	/* 1: a server that accepts one connection on --socket. */
	int server;
	/* The request counted, the pair. */
	enum insn_req req;
	enum insn_pair pair;
};

static const struct insn_role roles[] = {
	{ "ping-broker", 0, INSN_PING, INSN_BROKER },
	{ "ping-raw", 0, INSN_PING, INSN_BLOCKING },
	{ "ping-floor", 0, INSN_PING, INSN_FLOOR },
	{ "open-broker", 0, INSN_OPEN, INSN_BROKER },
	{ "open-raw", 0, INSN_OPEN, INSN_BLOCKING },
	{ "open-floor", 0, INSN_OPEN, INSN_FLOOR },
	{ "echo", 1, INSN_PING, INSN_BLOCKING },
	{ "open-peer", 1, INSN_OPEN, INSN_BLOCKING },
};

static const struct insn_role *insn_find_role(enum insn_req req,
					      enum insn_pair pair, int server)
{
	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
		if (roles[i].req == req && roles[i].pair == pair &&
		    roles[i].server == server)
			return &roles[i];
	return NULL;
}

/* What a role needs besides its socket. */
struct insn_params {
	const char *device;
	unsigned int settle_ms;
	/* > 0: the daemon counted; each request waits until it sleeps. */
	pid_t quiet;
	size_t payload;
	size_t ping_req, ping_rep;
	struct open_sizes open;
};

static int insn_ping_broker(const char *path, size_t plen,
			    unsigned int settle_ms, pid_t quiet,
			    unsigned long n)
{
	/* As the RTT's client: the library's defaults. */
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET,
		.socket_path = path,
	};
	uint8_t payload[INSN_MAX_PACKET];
	struct ibc_client *cl;
	int ret;

	if (plen > sizeof(payload))
		return -EMSGSIZE;
	for (size_t i = 0; i < plen; i++)
		payload[i] = (uint8_t)('a' + i % 26);
	ret = ibc_connect(&attr, &cl);
	if (ret < 0) {
		fprintf(stderr, "rdmab-bench: ibc_connect: %s\n",
			ibc_last_error());
		return ret;
	}
	if (settle_ms)
		sleep_ms(settle_ms);
	for (unsigned long i = 0; quiet > 0 && ret == 0 && i < n; i++) {
		ret = wait_in_epoll(quiet, INSN_TIMEOUT_MS);
		if (ret == 0)
			ret = rtt_broker_rep(cl, payload, plen, 1, NULL);
	}
	if (quiet <= 0)
		ret = rtt_broker_rep(cl, payload, plen, (unsigned int)n, NULL);
	ibc_disconnect(cl);
	return ret;
}

/*
 * One side of a count, natively or under callgrind: @fd is a connection
 * to the peer already made (-1: connect to @path).
 */
static int insn_run_role(const struct insn_role *role, const char *path, int fd,
			 const struct insn_params *p, unsigned long n)
{
	static uint8_t req[INSN_MAX_PACKET];
	int ret = 0, own = fd < 0;

	if (role->pair == INSN_BROKER) {
		if (fd >= 0)
			close(fd);
		if (role->req == INSN_PING)
			return insn_ping_broker(path, p->payload, p->settle_ms,
						p->quiet, n);
		return open_pairs_broker(path, p->device, p->settle_ms,
					 p->quiet, (unsigned int)n);
	}
	if (p->ping_req > sizeof(req))
		return -EMSGSIZE;
	memset(req, 'q', sizeof(req));
	if (own && role->server)
		ret = unix_accept_one(path, INSN_TIMEOUT_MS, &fd);
	else if (own)
		ret = unix_connect(path, &fd);
	if (ret < 0)
		return ret;
	if (role->server && role->req == INSN_PING)
		ret = raw_echo_serve(fd, p->ping_rep);
	else if (role->server)
		ret = open_peer_serve(fd, &p->open);
	else if (role->req == INSN_PING && role->pair == INSN_BLOCKING)
		ret = rtt_raw_rep(fd, req, p->ping_req, p->ping_rep,
				  (unsigned int)n, NULL);
	else if (role->req == INSN_PING)
		ret = rtt_floor_rep(fd, req, p->ping_req, p->ping_rep,
				    (unsigned int)n, NULL);
	else
		ret = open_pairs_raw(fd, &p->open,
				     role->pair == INSN_FLOOR ? MSG_DONTWAIT :
								0,
				     (unsigned int)n);
	close(fd);
	return ret;
}

/* "a,b" for a ping, "a,b,c,d" for an open and close (@req). */
static int insn_parse_sizes(const char *s, enum insn_req req,
			    struct insn_params *p)
{
	unsigned long v[4];
	int n = 0;

	if (!s)
		return -EINVAL;
	while (*s && n < 4) {
		char *end;

		errno = 0;
		v[n] = strtoul(s, &end, 10);
		if (errno || end == s || v[n] < 1 || v[n] > INSN_MAX_PACKET ||
		    (*end && *end != ','))
			return -EINVAL;
		n++;
		s = *end ? end + 1 : end;
	}
	if (*s)
		return -EINVAL;
	if (req == INSN_PING && n == 2) {
		p->ping_req = v[0];
		p->ping_rep = v[1];
		return 0;
	}
	if (req == INSN_OPEN && n == 4) {
		p->open = (struct open_sizes){ v[0], v[1], v[2], v[3] };
		return 0;
	}
	return -EINVAL;
}

int insn_role_main(const char *name, const char *socket, unsigned long n,
		   size_t payload, const char *sizes)
{
	struct insn_params p = { .device = SOFT_DEVICE_NAME,
				 .payload = payload };
	const struct insn_role *role = NULL;
	int ret;

	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
		if (!strcmp(roles[i].name, name))
			role = &roles[i];
	if (!role) {
		fprintf(stderr, "rdmab-bench: unknown --role %s\n", name);
		return 2;
	}
	if (!socket || (!role->server && !n) ||
	    (role->pair != INSN_BROKER &&
	     insn_parse_sizes(sizes, role->req, &p) < 0)) {
		fprintf(stderr,
			"rdmab-bench: --role %s: needs --socket, "
			"--count (clients) and --sizes (but for the "
			"broker's)\n",
			name);
		return 2;
	}
	ret = insn_run_role(role, socket, -1, &p, n);
	if (ret < 0) {
		fprintf(stderr, "rdmab-bench: --role %s: %s\n", name,
			strerror(-ret));
		return 1;
	}
	return 0;
}

/* --- the driver ------------------------------------------------------- */

static const char *const req_names[INSN_REQS] = { "ping", "open" };
static const char *const pair_names[INSN_PAIRS] = { "broker", "blocking",
						    "floor" };
static const char *const side_names[INSN_SIDES] = { "client", "server" };

/* @name's full path in $PATH, into @buf. */
static int insn_which(const char *name, char *buf, size_t cap)
{
	const char *path = getenv("PATH");

	while (path && *path) {
		size_t len = strcspn(path, ":");

		if (len &&
		    (size_t)snprintf(buf, cap, "%.*s/%s", (int)len, path,
				     name) < cap &&
		    access(buf, X_OK) == 0)
			return 0;
		path += len + (path[len] == ':');
	}
	return -ENOENT;
}

/* The Ir total of a callgrind output file. */
static int insn_read_total(const char *path, uint64_t *ret)
{
	char line[256];
	FILE *f = fopen(path, "re");
	int err = -ENODATA;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;

		if (sscanf(line, "summary: %llu", &v) == 1 ||
		    sscanf(line, "totals: %llu", &v) == 1) {
			*ret = v;
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

static void insn_dump_log(const char *path)
{
	char line[512];
	FILE *f = fopen(path, "re");

	if (!f)
		return;
	fprintf(stderr, "--- %s\n", path);
	while (fgets(line, sizeof(line), f))
		fputs(line, stderr);
	fprintf(stderr, "---\n");
	fclose(f);
}

struct insn_run {
	const struct insn_setup *s;
	struct insn_params p;
	char valgrind[256];
	char self[256];
	char sizes[64];
	char count[32];
	char payload[32];
	char outopt[320];
	char out[256];
	char size[2][32];
};

/* The server's command line, after valgrind's options. */
static void insn_server_argv(struct insn_run *x, const struct insn_role *r,
			     enum insn_req req, enum insn_pair pair,
			     char **argv)
{
	const struct insn_setup *s = x->s;
	int i = 0;

	if (pair == INSN_BROKER) {
		argv[i++] = (char *)s->daemon;
		argv[i++] = "--socket";
		argv[i++] = (char *)s->sock;
		argv[i++] = "--runtime-dir";
		argv[i++] = (char *)s->rundir;
		argv[i++] = "--config";
		argv[i++] = (char *)s->conf;
		argv[i++] = "--device";
		argv[i++] = "soft";
		argv[i++] = "--log-level";
		argv[i++] = "notice";
		argv[i++] = "--foreground";
		if (s->no_restart)
			argv[i++] = "--no-restart";
	} else if (pair == INSN_FLOOR) {
		snprintf(x->size[0], sizeof(x->size[0]), "%zu",
			 req == INSN_PING ? x->p.ping_rep :
					    x->p.open.close_rep);
		snprintf(x->size[1], sizeof(x->size[1]), "%zu",
			 x->p.open.open_rep);
		argv[i++] = (char *)s->evsrv;
		argv[i++] = "--socket";
		argv[i++] = (char *)s->sock;
		argv[i++] = "--reply-size";
		argv[i++] = x->size[0];
		if (req == INSN_OPEN) {
			argv[i++] = "--fd-reply-size";
			argv[i++] = x->size[1];
		}
	} else {
		argv[i++] = x->self;
		argv[i++] = "--role";
		argv[i++] = (char *)r->name;
		argv[i++] = "--socket";
		argv[i++] = (char *)s->sock;
		argv[i++] = "--sizes";
		argv[i++] = x->sizes;
	}
	argv[i] = NULL;
}

/* The client's command line, after valgrind's options. */
static void insn_client_argv(struct insn_run *x, const struct insn_role *r,
			     enum insn_req req, enum insn_pair pair,
			     char **argv)
{
	const struct insn_setup *s = x->s;
	int i = 0;

	argv[i++] = x->self;
	argv[i++] = "--role";
	argv[i++] = (char *)r->name;
	argv[i++] = "--socket";
	argv[i++] = (char *)(pair == INSN_BROKER ? s->broker_sock :
			     req == INSN_PING	 ? s->evsrv_sock :
						   s->evsrv_open_sock);
	argv[i++] = "--count";
	argv[i++] = x->count;
	argv[i++] = "--payload";
	argv[i++] = x->payload;
	argv[i++] = "--sizes";
	argv[i++] = x->sizes;
	argv[i] = NULL;
}

/*
 * Under callgrind: the client of @req and @pair talking to the run's own
 * server, or the server driven by a native client, for @n requests. The
 * total Ir into @ret.
 */
static int insn_one(struct insn_run *x, enum insn_req req, enum insn_pair pair,
		    enum insn_side side, unsigned long n, uint64_t *ret)
{
	const struct insn_setup *s = x->s;
	const struct insn_role *client = insn_find_role(req, pair, 0);
	const struct insn_role *server = insn_find_role(req, pair, 1);
	char *argv[32] = { x->valgrind, "--tool=callgrind", "-q", x->outopt };
	pid_t pid;
	int err, st, fd = -1;

	if (s->keep_dir)
		snprintf(x->out, sizeof(x->out), "%s/%s-%s-%s-%lu.callgrind",
			 s->keep_dir, req_names[req], pair_names[pair],
			 side_names[side], n);
	else
		snprintf(x->out, sizeof(x->out), "%s", s->out);
	snprintf(x->outopt, sizeof(x->outopt), "--callgrind-out-file=%s",
		 x->out);
	snprintf(x->count, sizeof(x->count), "%lu", n);
	if (req == INSN_PING)
		snprintf(x->sizes, sizeof(x->sizes), "%zu,%zu", x->p.ping_req,
			 x->p.ping_rep);
	else
		snprintf(x->sizes, sizeof(x->sizes), "%zu,%zu,%zu,%zu",
			 x->p.open.open_req, x->p.open.open_rep,
			 x->p.open.close_req, x->p.open.close_rep);
	/* A fresh log each time: the one shown is the failed run's. */
	unlink(s->log);
	if (side == INSN_CLIENT) {
		insn_client_argv(x, client, req, pair, argv + 4);
		err = spawn(argv, s->log, &pid);
		if (err < 0)
			return err;
		st = wait_child(pid);
	} else {
		insn_server_argv(x, server, req, pair, argv + 4);
		err = spawn(argv, s->log, &pid);
		if (err < 0)
			return err;
		err = unix_connect_wait(s->sock, INSN_TIMEOUT_MS, pid, &fd);
		x->p.settle_ms = pair == INSN_BROKER ? s->settle_ms : 0;
		x->p.quiet = pair == INSN_BROKER ? pid : 0;
		if (err == 0)
			err = insn_run_role(client, s->sock, fd, &x->p, n);
		x->p.settle_ms = 0;
		x->p.quiet = 0;
		/* The blocking servers end with their one connection, the
		 * others on SIGTERM. */
		st = server && err == 0 ? wait_child(pid) : stop_child(pid);
		unlink(s->sock);
	}
	if (err == 0 && st < 0)
		err = st;
	if (err == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		err = -ECHILD;
	if (err == 0)
		err = insn_read_total(x->out, ret);
	if (err < 0) {
		fprintf(stderr,
			"rdmab-bench: counting the %s %s of %s with %lu "
			"requests: %s\n",
			pair_names[pair], side_names[side], req_names[req], n,
			err == -ECHILD ? "it failed" : strerror(-err));
		insn_dump_log(s->log);
	}
	return err;
}

void insn_skip(struct insn_result *ret, const char *why)
{
	for (int q = 0; q < INSN_REQS; q++)
		for (int p = 0; p < INSN_PAIRS; p++)
			for (int d = 0; d < INSN_SIDES; d++)
				ret->per[q][p][d] = NAN;
	snprintf(ret->skipped, sizeof(ret->skipped), "%s", why ? why : "");
}

int insn_count(const struct insn_setup *s, struct insn_result *ret)
{
	struct insn_run *x;
	ssize_t len;
	int err = 0;

	insn_skip(ret, NULL);
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->s = s;
	x->p = (struct insn_params){
		.device = s->device,
		.payload = s->payload,
		.ping_req = s->ping_req,
		.ping_rep = s->ping_rep,
		.open = s->open,
	};
	snprintf(x->payload, sizeof(x->payload), "%zu", s->payload);
	if (insn_which("valgrind", x->valgrind, sizeof(x->valgrind)) < 0) {
		insn_skip(ret, "valgrind is not installed");
		goto out;
	}
	/* The wrapper libtool puts in front has set LD_LIBRARY_PATH. */
	len = readlink("/proc/self/exe", x->self, sizeof(x->self) - 1);
	if (len < 0) {
		err = -errno;
		goto out;
	}
	x->self[len] = '\0';
	for (int q = 0; q < INSN_REQS; q++) {
		for (int p = 0; p < INSN_PAIRS; p++) {
			for (int d = 0; d < INSN_SIDES; d++) {
				unsigned long n0 = s->n[q][0], n1 = s->n[q][1];
				uint64_t t0, t1;

				if (insn_one(x, q, p, d, n0, &t0) < 0 ||
				    insn_one(x, q, p, d, n1, &t1) < 0)
					continue;
				ret->per[q][p][d] = ((double)t1 - (double)t0) /
						    (double)(n1 - n0);
			}
		}
	}
	unlink(s->out);
out:
	free(x);
	return err;
}

static void insn_cell(double v)
{
	if (isnan(v))
		printf(" %9s", "-");
	else
		printf(" %9.0f", v);
}

int insn_report(const struct insn_result *res,
		const unsigned long n[INSN_REQS][2], double target)
{
	static const char *const reqs[INSN_REQS] = { "ping", "open+close" };
	double total;
	int miss = 0;

	printf("\n  user-space instructions per request (callgrind Ir)");
	if (res->skipped[0]) {
		printf(": not counted, %s\n", res->skipped);
		return 0;
	}
	printf(";\n  ping: %lu minus %lu pings, open+close: %lu minus %lu "
	       "pairs\n",
	       n[INSN_PING][1], n[INSN_PING][0], n[INSN_OPEN][1],
	       n[INSN_OPEN][0]);
	printf("  %-18s %9s %9s %9s  %s\n", "request / side", "broker",
	       "blocking", "floor", "target");
	for (int q = 0; q < INSN_REQS; q++) {
		for (int d = 0; d <= INSN_SIDES; d++) {
			char name[32];

			snprintf(name, sizeof(name), "%s %s", reqs[q],
				 d < INSN_SIDES ? side_names[d] : "total");
			printf("  %-18s", name);
			for (int p = 0; p < INSN_PAIRS; p++) {
				const double *v = res->per[q][p];

				total = v[INSN_CLIENT] + v[INSN_SERVER];
				insn_cell(d < INSN_SIDES ? v[d] : total);
				if (q == INSN_PING && d == INSN_SIDES &&
				    p == INSN_BROKER)
					miss = !(total <= target);
			}
			if (q == INSN_PING && d == INSN_SIDES)
				printf("  <=%.0f %s", target,
				       miss ? "MISSED" : "ok");
			printf("\n");
		}
	}
	return miss;
}
