// SPDX-License-Identifier: MIT
/*
 * make bench-dm: device memory on the soft device, against baselines
 * measured in the same run, every process pinned to CPU 0.
 *
 * 1. ibc_dm_write / ibc_dm_read bandwidth at 64 B, 4 KiB and 64 KiB
 *    against memcpy of the same sizes between ordinary page-aligned
 *    buffers (the DM is page-aligned too), in many short rounds that
 *    alternate the sides and take eight DMs and eight pairs of buffers in
 *    turn; a figure is the median of the rounds' own ratios.
 * 2. ibc_dm_alloc + ibc_dm_import (two clients) against two raw
 *    SOCK_SEQPACKET round trips whose replies carry one descriptor each,
 *    plus the soft device's own work for a DM of the same size
 *    (memfd_create, ftruncate, F_ADD_SEALS, mmap, munmap, close). The free
 *    and unimport that follow each pair are outside the timing. Each pair
 *    is timed alone and a repetition counts by its median pair, the sides
 *    alternating, as make bench counts its pairs. For information, a third
 *    side makes the broker's own system calls without the broker
 *    (calls_pairs()): what is left of the ratio above it is the broker's.
 *
 * Usage: rdmab-bench-dm --daemon PATH
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "include/ibclient.h"

#define REPS 5
/* The copy figures: rounds, the length of a side's run in one, and the
 * placements the rounds take in turn (copy_place). */
#define COPY_ROUNDS 48
#define ROUND_NS 4000000u
#define PLACES 8
#define ALLOC_PAIRS 2000
/* Turns a repetition takes per side (alloc_import_rep()). */
#define SLICES 10
#define DM_SIZE 65536

static void pin(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		perror("bench-dm: sched_setaffinity");
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_dbl);
	return v[n / 2];
}

static volatile uint8_t sink;

/* How many calls of @op over @size bytes take about ROUND_NS. */
static uint64_t calibrate(int (*op)(void *arg, size_t size), size_t size)
{
	uint64_t iters = 1;

	for (;;) {
		uint64_t t = now_ns();

		for (uint64_t i = 0; i < iters; i++)
			op(NULL, size);
		if (now_ns() - t > ROUND_NS)
			return iters;
		iters *= 2;
	}
}

/* Bytes per second of one run of @iters calls. */
static double run_bw(int (*op)(void *arg, size_t size), size_t size,
		     uint64_t iters)
{
	uint64_t t = now_ns();

	for (uint64_t i = 0; i < iters; i++)
		op(NULL, size);
	return (double)size * (double)iters / ((double)(now_ns() - t) / 1e9);
}

struct bw {
	double dm, base; /* medians of the rounds, bytes per second */
	double ratio;	 /* the median of the rounds' own ratios */
	double lo, hi;	 /* their 10th and 90th percentiles */
};

/* The placement the ops copy to or from this round. */
static unsigned int copy_place;

/*
 * @dm_op against @base_op over @size bytes: COPY_ROUNDS rounds of about
 * ROUND_NS a side, the sides alternating within each round. A round is
 * short enough that a burst of another tenant of CPU 0 (these VMs have
 * them every few tens of ms) mostly spares it, or lands on one round of
 * many rather than on a whole side; the figure is the median of the
 * rounds' own ratios, each taken over two runs a few ms apart. Round r
 * copies to or from DM r % PLACES and host buffer r % PLACES: where a
 * mapping lands decides a 4 KiB copy's speed for the life of the process
 * (one run read 0.85-0.89 in each of five repetitions, the next
 * 1.03-1.11), and one pair of places must not decide the figure.
 */
static struct bw bandwidth(int (*dm_op)(void *arg, size_t size),
			   int (*base_op)(void *arg, size_t size), size_t size)
{
	uint64_t dm_iters = calibrate(dm_op, size);
	uint64_t base_iters = calibrate(base_op, size);
	double d[COPY_ROUNDS], b[COPY_ROUNDS], q[COPY_ROUNDS];
	struct bw bw;

	for (int r = 0; r < COPY_ROUNDS; r++) {
		copy_place = (unsigned int)r % PLACES;
		/* Which side goes first alternates too. */
		if (r & 1) {
			b[r] = run_bw(base_op, size, base_iters);
			d[r] = run_bw(dm_op, size, dm_iters);
		} else {
			d[r] = run_bw(dm_op, size, dm_iters);
			b[r] = run_bw(base_op, size, base_iters);
		}
		q[r] = d[r] / b[r];
	}
	bw.ratio = median(q, COPY_ROUNDS);
	bw.lo = q[COPY_ROUNDS / 10];
	bw.hi = q[COPY_ROUNDS - 1 - COPY_ROUNDS / 10];
	bw.dm = median(d, COPY_ROUNDS);
	bw.base = median(b, COPY_ROUNDS);
	return bw;
}

/* Page-aligned, as the DMs' mappings are: glibc's memcpy of 4 KiB ran at
 * 0.64 of its best speed between some pairs of page offsets (seen on an
 * AMD EPYC), and the sides must differ only by the library. host_a[] are
 * the application's buffers on both sides, host_b[] the baseline's
 * others; all are shared mappings of their own, as a DM's is. */
static uint8_t *host_a[PLACES], *host_b[PLACES];
static struct ibc_dm *bench_dms[PLACES];

static int op_memcpy_to(void *arg, size_t size)
{
	memcpy(host_b[copy_place], host_a[copy_place], size);
	__asm__ volatile("" ::: "memory");
	return 0;
}

static int op_memcpy_from(void *arg, size_t size)
{
	memcpy(host_a[copy_place], host_b[copy_place], size);
	__asm__ volatile("" ::: "memory");
	sink = host_a[copy_place][size - 1];
	return 0;
}

static int op_dm_write(void *arg, size_t size)
{
	return ibc_dm_write(bench_dms[copy_place], 0, host_a[copy_place], size);
}

static int op_dm_read(void *arg, size_t size)
{
	int ret =
		ibc_dm_read(bench_dms[copy_place], host_a[copy_place], 0, size);

	sink = host_a[copy_place][size - 1];
	return ret;
}

static uint8_t *copy_map(int fill)
{
	void *p = mmap(NULL, DM_SIZE, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("bench-dm: mmap");
		return NULL;
	}
	memset(p, fill, DM_SIZE);
	return p;
}

/* The copy figures' buffers: PLACES DMs of @ctx and twice as many
 * mappings of the same size. */
static int copy_places_make(struct ibc_ctx *ctx)
{
	for (int i = 0; i < PLACES; i++) {
		host_a[i] = copy_map(0x5a);
		host_b[i] = copy_map(0);
		if (!host_a[i] || !host_b[i])
			return -1;
		if (ibc_dm_alloc(ctx, DM_SIZE, 0, &bench_dms[i]) < 0) {
			fprintf(stderr, "bench-dm: %s\n", ibc_last_error());
			return -1;
		}
	}
	return 0;
}

static void copy_places_free(void)
{
	for (int i = 0; i < PLACES; i++) {
		if (bench_dms[i])
			ibc_dm_free(bench_dms[i]);
		if (host_a[i])
			munmap(host_a[i], DM_SIZE);
		if (host_b[i])
			munmap(host_b[i], DM_SIZE);
	}
}

/* --- the raw baseline of alloc + import -------------------------------- */

/* Requests to the raw peer: the first byte says what to answer, bytes 8
 * to 15 a size. */
enum peer_op {
	PEER_FIXED = 1, /* the peer's one memfd: the baseline */
	PEER_MAKE,	/* a new sealed memfd of the size, kept: as an alloc */
	PEER_AGAIN,	/* the one kept, again: as an import */
	PEER_DROP,	/* close the one kept; no descriptor */
};

static int peer_send_fd(int fd, const uint8_t *buf, int memfd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = 48 };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf,
		.msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &memfd, sizeof(int));
	return sendmsg(fd, &mh, MSG_NOSIGNAL) < 0 ? -1 : 0;
}

static int peer_main(int fd)
{
	uint8_t buf[256];
	int memfd = memfd_create("bench-dm-peer", MFD_CLOEXEC), kept = -1;

	if (memfd < 0)
		return 1;
	for (;;) {
		uint64_t size;

		if (recv(fd, buf, sizeof(buf), 0) <= 0)
			return 0;
		memcpy(&size, buf + 8, sizeof(size));
		switch (buf[0]) {
		case PEER_MAKE:
			/* What the daemon's soft device does for an alloc. */
			kept = memfd_create("bench-dm-calls",
					    MFD_CLOEXEC | MFD_ALLOW_SEALING);
			if (kept < 0 || ftruncate(kept, (off_t)size) < 0 ||
			    fcntl(kept, F_ADD_SEALS,
				  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) <
				    0)
				return 1;
			/* fall through */
		case PEER_AGAIN:
			if (peer_send_fd(fd, buf, kept) < 0)
				return 1;
			break;
		case PEER_DROP:
			close(kept);
			kept = -1;
			if (send(fd, buf, 10, MSG_NOSIGNAL) < 0)
				return 1;
			break;
		default:
			if (peer_send_fd(fd, buf, memfd) < 0)
				return 1;
		}
	}
}

/* One round trip of @op (@size for PEER_MAKE); the descriptor the reply
 * carried, 0 when none, -1 on failure. */
static int raw_call(int fd, enum peer_op op, uint64_t size)
{
	uint8_t req[32] = { (uint8_t)op }, buf[256];
	char cbuf[CMSG_SPACE(sizeof(int) * 4)];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf,
		.msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	int got;

	memcpy(req + 8, &size, sizeof(size));
	if (send(fd, req, sizeof(req), MSG_NOSIGNAL) < 0 ||
	    recvmsg(fd, &mh, MSG_CMSG_CLOEXEC) <= 0)
		return -1;
	if (op == PEER_DROP)
		return 0;
	cm = CMSG_FIRSTHDR(&mh);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&got, CMSG_DATA(cm), sizeof(int));
	return got;
}

static int raw_round_trip(int fd)
{
	int got = raw_call(fd, PEER_FIXED, 0);

	if (got < 0)
		return -1;
	close(got);
	return 0;
}

/* What the library does with a DM's memfd @fd of @size: size it, map it,
 * close it (ibc_dm_map()); the mapping, or NULL. */
static void *calls_map(int fd, size_t size)
{
	void *p = MAP_FAILED;

	if (fd >= 0 && lseek(fd, 0, SEEK_END) >= (off_t)size)
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (fd >= 0)
		close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* What the soft device does for one DM. */
static int soft_work(size_t size)
{
	int fd = memfd_create("bench-dm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	void *p;

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) <
		    0)
		return -1;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	munmap(p, size);
	close(fd);
	return 0;
}

/* One repetition of a side: its pairs' median and mean, in ns. */
struct rep {
	double median;
	double mean;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static struct rep rep_of(uint64_t *lat)
{
	uint64_t total = 0;

	for (int i = 0; i < ALLOC_PAIRS; i++)
		total += lat[i];
	qsort(lat, ALLOC_PAIRS, sizeof(*lat), cmp_u64);
	return (struct rep){ .median = (double)lat[ALLOC_PAIRS / 2],
			     .mean = (double)total / ALLOC_PAIRS };
}

/* A repetition's latencies of each side. */
static uint64_t lat_dm[ALLOC_PAIRS], lat_base[ALLOC_PAIRS];
static uint64_t lat_calls[ALLOC_PAIRS];

/* @n alloc + import pairs, each timed alone, into @lat. */
static void alloc_import_pairs(struct ibc_ctx *a, struct ibc_ctx *b,
			       size_t size, uint64_t *lat, int n)
{
	for (int i = 0; i < n; i++) {
		struct ibc_dm *dm, *imp;
		uint64_t t = now_ns();

		if (ibc_dm_alloc(a, size, 0, &dm) ||
		    ibc_dm_import(b, ibc_dm_handle(dm), &imp)) {
			fprintf(stderr, "bench-dm: %s\n", ibc_last_error());
			exit(1);
		}
		lat[i] = now_ns() - t;
		ibc_dm_unimport(imp);
		ibc_dm_free(dm);
	}
}

/* The same for the baseline: two raw round trips with a descriptor each
 * and the soft device's work for a DM of @size. */
static void baseline_pairs(int fd, size_t size, uint64_t *lat, int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t t = now_ns();

		if (raw_round_trip(fd) || raw_round_trip(fd) ||
		    soft_work(size)) {
			perror("bench-dm: baseline");
			exit(1);
		}
		lat[i] = now_ns() - t;
	}
}

/*
 * For information, the broker's own system calls without the broker: the
 * peer makes, seals and sends a memfd as the daemon does for an alloc and
 * sends it again for the import; this side receives, sizes, maps and
 * closes it twice, as the library does. The unmaps and the peer's close,
 * as the unimport and the free, are outside the timing.
 */
static void calls_pairs(int fd, size_t size, uint64_t *lat, int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t t = now_ns();
		void *a = calls_map(raw_call(fd, PEER_MAKE, size), size);
		void *b = calls_map(raw_call(fd, PEER_AGAIN, 0), size);

		lat[i] = now_ns() - t;
		if (!a || !b || raw_call(fd, PEER_DROP, 0) < 0) {
			perror("bench-dm: system calls");
			exit(1);
		}
		munmap(a, size);
		munmap(b, size);
	}
}

/*
 * One repetition of both sides, ALLOC_PAIRS pairs each, taken in SLICES
 * turns that alternate them: the swings of these VMs last a tenth of a
 * second, as long as a side's repetition, and would fall on one side.
 */
static void alloc_import_rep(struct ibc_ctx *a, struct ibc_ctx *b, int fd,
			     size_t size, struct rep *x, struct rep *y,
			     struct rep *z)
{
	for (int k = 0; k < SLICES; k++) {
		int from = ALLOC_PAIRS * k / SLICES;
		int to = ALLOC_PAIRS * (k + 1) / SLICES;

		alloc_import_pairs(a, b, size, lat_dm + from, to - from);
		baseline_pairs(fd, size, lat_base + from, to - from);
		calls_pairs(fd, size, lat_calls + from, to - from);
	}
	*x = rep_of(lat_dm);
	*y = rep_of(lat_base);
	*z = rep_of(lat_calls);
}

struct row {
	double dm, base, calls;	   /* medians of the repetitions' medians */
	double dm_mean, base_mean; /* the same of their means */
	double lo, hi;		   /* the range of the repetitions' ratios */
};

/*
 * The alloc + import figure at @size: a warm-up of each side, then REPS
 * repetitions, each in turns that alternate the broker's pairs and the
 * baseline's, so that a drift of the machine hits both sides alike rather
 * than whichever ran through it. Each repetition counts by the median
 * pair, as make bench does: a mean takes in whatever else ran on CPU 0
 * meanwhile (on a shared machine, most of the spread of the ratio); the
 * means are shown beside it.
 */
static struct row alloc_import_row(struct ibc_ctx *a, struct ibc_ctx *b, int fd,
				   size_t size)
{
	double d[REPS], base[REPS], calls[REPS], dmean[REPS], bmean[REPS];
	struct row row = { 0 };
	struct rep x, y, z;

	alloc_import_rep(a, b, fd, size, &x, &y, &z);
	for (int r = 0; r < REPS; r++) {
		double q;

		alloc_import_rep(a, b, fd, size, &x, &y, &z);
		q = x.median / y.median;

		d[r] = x.median;
		base[r] = y.median;
		calls[r] = z.median;
		dmean[r] = x.mean;
		bmean[r] = y.mean;
		row.lo = r == 0 || q < row.lo ? q : row.lo;
		row.hi = r == 0 || q > row.hi ? q : row.hi;
	}
	row.dm = median(d, REPS);
	row.base = median(base, REPS);
	row.calls = median(calls, REPS);
	row.dm_mean = median(dmean, REPS);
	row.base_mean = median(bmean, REPS);
	return row;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 64, 4096, 65536 };
	const char *daemon = NULL;
	char dir[] = "/tmp/rdmab-bench-dm.XXXXXX", sock[128], conf[128];
	struct ibc_connect_attr attr = { .comp_mask = IBC_CONNECT_ATTR_SOCKET };
	struct ibc_client *ca, *cb;
	struct ibc_ctx *xa, *xb;
	int sp[2], status, bad = 0;
	pid_t dpid, ppid;
	FILE *f;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--daemon") == 0 && i + 1 < argc)
			daemon = argv[++i];
	if (!daemon || !mkdtemp(dir)) {
		fprintf(stderr, "Usage: rdmab-bench-dm --daemon PATH\n");
		return 2;
	}
	pin();
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	snprintf(conf, sizeof(conf), "%s/rdmabroker.conf", dir);
	f = fopen(conf, "w");
	if (!f)
		return 1;
	/* Room for the PLACES DMs of 64 KiB of the copy figures. */
	fputs("[soft]\nmax_dm_size = 1048576\n[defaults]\n"
	      "dm_bytes = 1048576\n",
	      f);
	fclose(f);
	dpid = fork();
	if (dpid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(daemon, daemon, "--device", "soft", "--socket", sock,
		      "--runtime-dir", dir, "--config", conf, "--log-level",
		      "warning", (char *)NULL);
		_exit(127);
	}
	attr.socket_path = sock;
	for (int i = 0; i < 500 && ibc_connect(&attr, &ca) < 0; i++)
		usleep(10000);
	if (ibc_connect(&attr, &cb) < 0 || ibc_open(ca, NULL, &xa) < 0 ||
	    ibc_open(cb, NULL, &xb) < 0) {
		fprintf(stderr, "bench-dm: %s\n", ibc_last_error());
		kill(dpid, SIGKILL);
		return 1;
	}
	if (copy_places_make(xa) < 0) {
		kill(dpid, SIGKILL);
		return 1;
	}

	printf("DM copies on the soft device against memcpy, CPU 0: %d "
	       "rounds of about %u ms a side,\nthe sides alternating, over "
	       "%d DMs and %d host mappings in turn; RATIO: the median\nof "
	       "the rounds' ratios, RANGE: their p10..p90; GB/s: each side's "
	       "median round)\n",
	       COPY_ROUNDS, ROUND_NS / 1000000u, PLACES, PLACES);
	printf("%-8s %-6s %14s %14s %7s %12s\n", "SIZE", "DIR", "ibc_dm GB/s",
	       "memcpy GB/s", "RATIO", "RANGE");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		struct bw w = bandwidth(op_dm_write, op_memcpy_to, sizes[s]);
		struct bw rd = bandwidth(op_dm_read, op_memcpy_from, sizes[s]);
		const char *req = sizes[s] >= 4096 ? "(>= 0.90)" : "";

		printf("%-8zu %-6s %14.2f %14.2f %7.2f %5.2f..%-5.2f %s\n",
		       sizes[s], "write", w.dm / 1e9, w.base / 1e9, w.ratio,
		       w.lo, w.hi, req);
		printf("%-8zu %-6s %14.2f %14.2f %7.2f %5.2f..%-5.2f %s\n",
		       sizes[s], "read", rd.dm / 1e9, rd.base / 1e9, rd.ratio,
		       rd.lo, rd.hi, req);
		if (sizes[s] >= 4096 && (w.ratio < 0.9 || rd.ratio < 0.9))
			bad = 1;
	}
	copy_places_free();

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return 1;
	ppid = fork();
	if (ppid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(sp[0]);
		_exit(peer_main(sp[1]));
	}
	close(sp[1]);
	printf("\nibc_dm_alloc + ibc_dm_import against two raw round trips "
	       "with one fd each\nplus memfd_create, ftruncate, F_ADD_SEALS, "
	       "mmap, munmap, close (%d pairs a\nrepetition, %d repetitions "
	       "in %d turns a side; a repetition's figure is its\nmedian "
	       "pair, the row's the median repetition; RANGE: the "
	       "repetitions' ratios;\nMEAN: the ratio of the mean pairs, "
	       "which take in other tenants of CPU 0;\nCALLS, no target: "
	       "the broker's system calls without the broker, a raw peer\n"
	       "making, sealing and sending a memfd as the daemon does, "
	       "then sending it again,\nthis side sizing, mapping and "
	       "closing it twice as the library does)\n",
	       ALLOC_PAIRS, REPS, SLICES);
	printf("%-8s %10s %10s %7s %12s %6s %9s %6s\n", "SIZE", "dm ns",
	       "floor ns", "RATIO", "RANGE", "MEAN", "calls ns", "/CALLS");
	for (size_t size = 4096; size <= DM_SIZE; size *= 16) {
		struct row row = alloc_import_row(xa, xb, sp[0], size);
		double q = row.dm / row.base;

		printf("%-8zu %10.0f %10.0f %7.2f %5.2f..%-5.2f %6.2f %9.0f "
		       "%6.2f (<= 1.30)\n",
		       size, row.dm, row.base, q, row.lo, row.hi,
		       row.dm_mean / row.base_mean, row.calls,
		       row.dm / row.calls);
		if (q > 1.3)
			bad = 1;
	}
	close(sp[0]);
	waitpid(ppid, &status, 0);
	ibc_disconnect(ca);
	ibc_disconnect(cb);
	kill(dpid, SIGTERM);
	waitpid(dpid, &status, 0);
	/* With the xrcd/ directory the daemon leaves for a restart. */
	remove_tree(dir);
	printf("\n%s\n", bad ? "bench-dm: a ratio is outside its target" :
			       "bench-dm: every ratio is inside its target");
	return 0;
}
