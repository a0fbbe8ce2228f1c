// SPDX-License-Identifier: MIT
/*
 * make check-soak: a storm against one rdmabrokerd for SOAK_SECONDS
 * (default 150, at most 180): first SOAK_OBJECT_KILLS (default 1,000)
 * clients that make and destroy objects are killed at random points, and
 * the registry must be empty again with the objects quota back; then
 * client processes that connect, talk (objects too) and are killed at
 * random moments, malformed and valid packets on raw connections that are
 * sometimes dropped before the answer, and library clients coming and
 * going; then the rekey storm (soak-storm.c: SOAK_STORM_KILLS, default
 * 1,000, clients over every object family killed at random points, and a
 * forced rekey; SOAK_STORM_SEED, SOAK_STORM_CONFIG). Every few seconds the
 * daemon must be alive and serving; at the end it must hold exactly the
 * descriptors it held at start, list no object and report no client but the
 * checker, and exit 0 on SIGTERM.
 *
 * Deterministic in what it does (SOAK_SEED), not in the interleaving.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/objlib.h"
#include "tests/soak-storm.h"
#include "tests/testlib.h"

#define MAX_CHILDREN 16

static struct tl_daemon D;
static struct tl_rng rng;

static struct {
	unsigned long spawned, killed, packets, dropped, clients, checks;
	unsigned long object_kills, dm_cycles;
} stats;

static void die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "soak: FAIL: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	tl_daemon_stop(&D);
	tl_fini();
	exit(1);
}

/* --- children that get killed ------------------------------------------ */

static void child_ping_loop(int fd)
{
	for (uint64_t s = 2;; s++)
		if (tl_raw_ping(fd, s, &s, sizeof(s)) < 0)
			_exit(0);
}

static void child_flood(int fd, struct tl_rng *r)
{
	static uint8_t payload[60000];
	ProtobufCBinaryData ping = { 0 };
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct tl_buf b = { 0 };

	ping.data = payload;
	ping.len = 1 + tl_rng_below(r, sizeof(payload));
	req.version = WIRE_PROTOCOL_VERSION;
	req.body_case = RDMAB__REQUEST__BODY_PING;
	req.ping = ping;
	for (uint64_t s = 2;; s++) {
		req.serial = s;
		b.len = 0;
		tl_pb_message(&b, &req.base);
		if (tl_raw_send(fd, b.p, b.len, NULL, 0, 0) < 0)
			_exit(0);
	}
}

static void child_library(struct tl_rng *r)
{
	struct ibc_client *cl;
	uint8_t buf[2048];

	for (;;) {
		if (tl_connect(D.sock, 0, &cl) < 0)
			_exit(0);
		for (unsigned int i = tl_rng_below(r, 50); i > 0; i--) {
			size_t len = tl_rng_below(r, sizeof(buf));

			tl_rng_fill(r, buf, len);
			if (ibc_ping(cl, buf, len) < 0)
				break;
		}
		if (tl_rng_below(r, 4) == 0)
			_exit(0); /* without disconnecting */
		ibc_disconnect(cl);
	}
}

static void child_main(uint64_t seed)
{
	struct tl_rng r;
	int fd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	tl_rng_seed(&r, seed);
	switch (tl_rng_below(&r, 6)) {
	case 0: /* connect and sit */
		if (tl_raw_connect(D.sock) < 0)
			_exit(0);
		for (;;)
			pause();
	case 1: /* hello, then pings */
		fd = tl_raw_connect(D.sock);
		if (fd < 0 || tl_raw_hello(fd, 1) < 0)
			_exit(0);
		child_ping_loop(fd);
		break;
	case 2: /* hello, then requests without reading a reply */
		fd = tl_raw_connect(D.sock);
		if (fd < 0 || tl_raw_hello(fd, 1) < 0)
			_exit(0);
		child_flood(fd, &r);
		break;
	case 4: /* objects, killed with some of them alive */
		ol_storm(D.sock, tl_rng_next(&r), -1);
	case 3: /* hello never answered */
		fd = tl_raw_connect(D.sock);
		if (fd < 0)
			_exit(0);
		tl_raw_send(fd, "\x08\x01\x10\x01\x52\x00", 6, NULL, 0, 0);
		for (;;)
			pause();
	default:
		child_library(&r);
	}
	_exit(0);
}

static pid_t children[MAX_CHILDREN];
static unsigned int n_children;

static void spawn_child(void)
{
	uint64_t seed = tl_rng_next(&rng);
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0)
		child_main(seed);
	children[n_children++] = pid;
	stats.spawned++;
}

static void kill_child(unsigned int i)
{
	pid_t pid = children[i];
	int status;

	kill(pid, SIGKILL);
	if (tl_wait_pid(pid, TL_WAIT_MS, &status) < 0)
		die("child %d does not die", (int)pid);
	children[i] = children[--n_children];
	stats.killed++;
}

/* --- raw packets -------------------------------------------------------- */

static void random_packet(void)
{
	ProtobufCBinaryData ping = { 0 };
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	int fds[WIRE_MAX_FDS + 3];
	struct tl_buf b = { 0 };
	unsigned int nfds = 0;
	uint8_t payload[512];
	size_t len;
	int fd;

	fd = tl_raw_connect(D.sock);
	if (fd < 0)
		die("raw connect: %s", strerror(-fd));
	if (tl_rng_below(&rng, 2) && tl_raw_hello(fd, 1) < 0) {
		/* Refused while over the limit, or similar: fine. */
		close(fd);
		return;
	}
	switch (tl_rng_below(&rng, 4)) {
	case 0: /* random bytes */
		len = tl_rng_below(&rng, 1024);
		tl_buf_put(&b, NULL, len);
		tl_rng_fill(&rng, b.p, len);
		break;
	case 1: /* a valid ping with bytes flipped */
	case 2:
		len = tl_rng_below(&rng, sizeof(payload));
		tl_rng_fill(&rng, payload, len);
		ping.data = payload;
		ping.len = len;
		req.version = tl_rng_below(&rng, 8) ? WIRE_PROTOCOL_VERSION :
						      tl_rng_below(&rng, 4);
		req.serial = tl_rng_next(&rng);
		req.body_case = RDMAB__REQUEST__BODY_PING;
		req.ping = ping;
		tl_pb_message(&b, &req.base);
		for (unsigned int i = tl_rng_below(&rng, 4); i > 0 && b.len;
		     i--)
			b.p[tl_rng_below(&rng, (uint32_t)b.len)] ^=
				(uint8_t)(1u << tl_rng_below(&rng, 8));
		if (tl_rng_below(&rng, 4) == 0)
			b.len = tl_rng_below(&rng, (uint32_t)b.len + 1);
		break;
	default: /* oversize */
		len = WIRE_MAX_PACKET + 1 + tl_rng_below(&rng, 32768);
		tl_buf_put(&b, NULL, len);
		tl_rng_fill(&rng, b.p, len);
		break;
	}
	if (tl_rng_below(&rng, 5) == 0) {
		nfds = 1 + tl_rng_below(&rng, WIRE_MAX_FDS + 2);
		for (unsigned int i = 0; i < nfds; i++)
			fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	tl_raw_send(fd, b.p, b.len, fds, nfds, MSG_DONTWAIT);
	for (unsigned int i = 0; i < nfds; i++)
		close(fds[i]);
	tl_buf_free(&b);
	stats.packets++;
	if (tl_rng_below(&rng, 3) == 0) {
		/* Gone before the answer. */
		stats.dropped++;
	} else {
		Rdmab__DaemonMessage *m;

		if (tl_recv_msg(fd, TL_WAIT_MS, &m) == 1)
			rdmab__daemon_message__free_unpacked(m, NULL);
	}
	close(fd);
}

static void library_clients(void)
{
	struct ibc_client *cl[8];
	unsigned int n = 1 + tl_rng_below(&rng, 8), ok = 0;

	for (unsigned int i = 0; i < n; i++)
		if (tl_connect(D.sock, TL_WAIT_MS, &cl[ok]) == 0)
			ok++;
	for (unsigned int i = 0; i < ok; i++) {
		if (ibc_ping(cl[i], &i, sizeof(i)) < 0)
			die("ping: %s", ibc_last_error());
		ibc_disconnect(cl[i]);
	}
	stats.clients += ok;
}

/* The registry holds nothing, the quota is back (objects == unaccounted,
 * zero on the soft device). */
static void check_registry(const char *when)
{
	char why[256] = "";
	int ret = ol_settled(D.sock, 10000, why, sizeof(why));

	if (ret < 0)
		die("%s: %s", when, ret == -EBUSY ? why : strerror(-ret));
}

/* Clients with objects, each killed at a random moment (or killing
 * itself right after a request). */
static void object_kills(unsigned long n)
{
	for (unsigned long k = 0; k < n; k++) {
		int p[2];
		uint64_t id, seed = tl_rng_next(&rng);
		int status;
		pid_t pid;

		if (pipe2(p, O_CLOEXEC) < 0)
			die("pipe: %s", strerror(errno));
		fflush(stdout);
		fflush(stderr);
		pid = fork();
		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			close(p[0]);
			ol_storm(D.sock, seed, p[1]);
		}
		close(p[1]);
		/* Connected (or dead already): a few ms of requests. */
		if (read(p[0], &id, sizeof(id)) == sizeof(id))
			tl_sleep_ms(tl_rng_below(&rng, 12));
		close(p[0]);
		kill(pid, SIGKILL);
		if (tl_wait_pid(pid, TL_WAIT_MS, &status) < 0)
			die("child %d does not die", (int)pid);
		stats.object_kills++;
	}
}

/* Device memory: @n alloc/free cycles (every 8th imported by a second
 * client, every 64th left to a client killed with SIGKILL) leave the
 * device as it started: nothing listed, nothing reserved or charged, and
 * the next DM gets the handle the first one got. */
static void dm_device_state(struct ibc_client *cl, uint64_t *ret_reserved,
			    uint64_t *ret_used, size_t *ret_n)
{
	struct ibc_device_info *dev;
	struct ibc_domain_info *dom;
	struct ibc_dm_info *dms;
	size_t n;

	if (ibc_list_devices(cl, &dev, sizeof(*dev), &n) < 0 || n < 1 ||
	    ibc_list_domains(cl, &dom, sizeof(*dom), &n) < 0 || n < 1 ||
	    ibc_list_dms(cl, &dms, sizeof(*dms), ret_n) < 0)
		die("dm: listing: %s", ibc_last_error());
	*ret_reserved = dev[0].dm_reserved;
	*ret_used = dom[0].used.dm_bytes;
	ibc_list_free(dev);
	ibc_list_free(dom);
	ibc_list_free(dms);
}

static void dm_cycles(unsigned long n)
{
	struct ibc_client *a, *b;
	struct ibc_ctx *xa, *xb;
	struct ibc_dm *dm, *imp;
	uint64_t reserved, used;
	uint32_t first = 0;
	size_t listed;
	int64_t end;

	if (tl_connect(D.sock, TL_WAIT_MS, &a) < 0 ||
	    tl_connect(D.sock, TL_WAIT_MS, &b) < 0 ||
	    ibc_open(a, NULL, &xa) < 0 || ibc_open(b, NULL, &xb) < 0)
		die("dm: connect: %s", ibc_last_error());
	for (unsigned long k = 0; k < n; k++) {
		size_t len = 4 + 4 * tl_rng_below(&rng, 16384);

		if (k % 64 == 63) {
			pid_t pid = fork();
			int status;

			if (pid == 0) {
				struct ibc_client *c;
				struct ibc_ctx *x;

				prctl(PR_SET_PDEATHSIG, SIGKILL);
				if (tl_connect(D.sock, TL_WAIT_MS, &c) ||
				    ibc_open(c, NULL, &x) ||
				    ibc_dm_alloc(x, len, 0, &dm))
					_exit(1);
				raise(SIGKILL);
			}
			if (pid < 0 ||
			    tl_wait_pid(pid, TL_WAIT_MS, &status) < 0)
				die("dm: the killed allocator");
			continue;
		}
		if (ibc_dm_alloc(xa, len, 0, &dm) < 0)
			die("dm: cycle %lu: alloc of %zu: %s", k, len,
			    ibc_last_error());
		if (!first)
			first = ibc_dm_handle(dm);
		if (ibc_dm_write(dm, 0, &k, 4) < 0)
			die("dm: write: %s", ibc_last_error());
		if (k % 8 == 0) {
			if (ibc_dm_import(xb, ibc_dm_handle(dm), &imp) < 0)
				die("dm: import: %s", ibc_last_error());
			if (ibc_dm_free(dm) < 0 || ibc_dm_unimport(imp) < 0)
				die("dm: free: %s", ibc_last_error());
		} else if (ibc_dm_free(dm) < 0) {
			die("dm: free: %s", ibc_last_error());
		}
	}
	end = tl_now_ms() + 10000;
	do {
		dm_device_state(a, &reserved, &used, &listed);
	} while ((reserved || used || listed) && tl_now_ms() < end &&
		 (tl_sleep_ms(20), 1));
	if (reserved || used || listed)
		die("dm: after %lu cycles: %llu bytes reserved, %llu charged, "
		    "%zu DMs listed",
		    n, (unsigned long long)reserved, (unsigned long long)used,
		    listed);
	if (ibc_dm_alloc(xa, 4, 0, &dm) < 0 || ibc_dm_handle(dm) != first ||
	    ibc_dm_free(dm) < 0)
		die("dm: after %lu cycles the next DM does not get handle %u",
		    n, first);
	ibc_disconnect(a);
	ibc_disconnect(b);
	stats.dm_cycles += n;
}

static void check_serving(void)
{
	struct ibc_client *cl;
	int ret;

	if (!tl_daemon_alive(&D))
		die("the daemon died");
	ret = tl_connect(D.sock, TL_WAIT_MS, &cl);
	if (ret < 0)
		die("a fresh client cannot connect: %s", ibc_last_error());
	ret = ibc_ping(cl, "soak", 4);
	if (ret < 0)
		die("a fresh client cannot ping: %s", ibc_last_error());
	ibc_disconnect(cl);
	stats.checks++;
}

int main(void)
{
	const char *env = getenv("SOAK_SECONDS");
	const char *seed_env = getenv("SOAK_SEED");
	const char *kills_env = getenv("SOAK_OBJECT_KILLS");
	unsigned long kills =
		kills_env && *kills_env ? strtoul(kills_env, NULL, 10) : 1000;
	const char *storm_env = getenv("SOAK_STORM_KILLS");
	const char *storm_seed_env = getenv("SOAK_STORM_SEED");
	unsigned long storm_kills =
		storm_env && *storm_env ? strtoul(storm_env, NULL, 10) : 1000;
	uint64_t storm_seed;
	char storm_why[512];
	const char *dm_env = getenv("SOAK_DM_CYCLES");
	unsigned long dm_n =
		dm_env && *dm_env ? strtoul(dm_env, NULL, 10) : 10000;
	long seconds = env && *env ? strtol(env, NULL, 10) : 150;
	uint64_t seed = seed_env && *seed_env ? strtoull(seed_env, NULL, 0) :
						0x50a450a4ULL;
	int64_t start, deadline, next_check, next_report;
	unsigned int clients;
	int ret, n, status;

	if (seconds < 1)
		seconds = 1;
	if (seconds > 180)
		seconds = 180;
	signal(SIGPIPE, SIG_IGN);
	tl_rng_seed(&rng, seed);
	if (tl_init("soak") < 0)
		return 99;
	/* The DM cycles run up to the device's memory in one domain (a
	 * killed allocator's DM goes when its death is seen). */
	ret = tl_daemon_start_conf(&D, "[defaults]\ndm_bytes = 100%\n", NULL,
				   NULL, NULL);
	if (ret < 0) {
		fprintf(stderr, "soak: cannot start %s: %s\n", tl_daemon_path(),
			strerror(-ret));
		tl_fini();
		return 99;
	}
	printf("soak: daemon %d on %s, %ld s, seed 0x%llx, %d descriptors\n",
	       (int)D.pid, D.sock, seconds, (unsigned long long)seed,
	       D.baseline_fds);
	fflush(stdout);

	start = tl_now_ms();
	object_kills(kills);
	check_registry("after the object kills");
	printf("soak: %3lld s: %lu clients with objects killed; registry "
	       "empty, quota back\n",
	       (long long)(tl_now_ms() - start) / 1000, stats.object_kills);
	fflush(stdout);
	dm_cycles(dm_n);
	check_registry("after the DM cycles");
	printf("soak: %3lld s: %lu DM alloc/free cycles; nothing reserved, "
	       "charged or listed, the first handle again\n",
	       (long long)(tl_now_ms() - start) / 1000, stats.dm_cycles);
	fflush(stdout);
	/* Its own seed, so that a failing storm can be run alone. */
	storm_seed = storm_seed_env && *storm_seed_env ?
			     strtoull(storm_seed_env, NULL, 0) :
			     tl_rng_next(&rng);
	printf("soak: rekey storm: %lu kills, SOAK_STORM_SEED=0x%llx\n",
	       storm_kills, (unsigned long long)storm_seed);
	fflush(stdout);
	if (storm_kills && soak_storm(storm_seed, storm_kills, storm_why,
				      sizeof(storm_why)) < 0)
		die("rekey storm (SOAK_STORM_SEED=0x%llx): %s",
		    (unsigned long long)storm_seed, storm_why);
	printf("soak: %3lld s: rekey storm: %lu clients killed over every "
	       "object family; after the rekey the registry is empty, every "
	       "quota back at zero, descriptors at baseline\n",
	       (long long)(tl_now_ms() - start) / 1000, storm_kills);
	fflush(stdout);
	/* Leave room for the final checks within the bound. */
	deadline = start + seconds * 1000 - (seconds > 20 ? 10000 : 0);
	next_check = start + 2000;
	next_report = start + 10000;
	while (tl_now_ms() < deadline) {
		unsigned int what = tl_rng_below(&rng, 10);

		if (what < 5) {
			if (n_children == MAX_CHILDREN)
				kill_child(tl_rng_below(&rng, n_children));
			spawn_child();
			if (tl_rng_below(&rng, 2))
				tl_sleep_ms(tl_rng_below(&rng, 3));
		} else if (what < 9) {
			random_packet();
		} else {
			library_clients();
		}
		if (tl_now_ms() >= next_check) {
			check_serving();
			next_check = tl_now_ms() + 2000;
		}
		if (tl_now_ms() >= next_report) {
			printf("soak: %3lld s: %lu children (%lu killed), "
			       "%lu packets (%lu dropped), %lu clients\n",
			       (long long)(tl_now_ms() - start) / 1000,
			       stats.spawned, stats.killed, stats.packets,
			       stats.dropped, stats.clients);
			fflush(stdout);
			next_report += 10000;
		}
	}
	while (n_children)
		kill_child(n_children - 1);

	check_serving();
	check_registry("at the end");
	n = tl_daemon_settle(&D, 10000, &clients);
	if (!tl_daemon_alive(&D))
		die("the daemon died");
	if (n != D.baseline_fds || clients != 1)
		die("the daemon holds %d descriptors (%d at start) and reports "
		    "%u clients (expected 1)",
		    n, D.baseline_fds, clients);
	status = tl_daemon_stop(&D);
	if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("the daemon's wait status after SIGTERM is 0x%x", status);
	tl_fini();
	printf("soak: PASS in %lld s: %lu clients with objects killed, %lu "
	       "children (%lu killed), %lu packets (%lu dropped), %lu "
	       "clients, %lu checks; registry empty, descriptors back at "
	       "%d\n",
	       (long long)(tl_now_ms() - start) / 1000, stats.object_kills,
	       stats.spawned, stats.killed, stats.packets, stats.dropped,
	       stats.clients, stats.checks, n);
	return 0;
}
