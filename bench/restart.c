// SPDX-License-Identifier: MIT
/*
 * rdmab-restart-bench: what restart costs (issue 25's benchmark), run by
 * `make bench` after rdmab-bench, the daemon on the soft device.
 *
 *  1. The state journal's cost: the same daemon with the journal off (no
 *     fd store: started plainly) and on (under tests/fakesd.c, which
 *     speaks systemd's notify protocol, so that the daemon journals and
 *     stores as under systemd), taken in alternating turns: ibc_ping()
 *     and ibc_open() + ibc_close() medians, and the daemon's CPU time per
 *     request (utime + stime of /proc/PID/stat over all the turns: a
 *     turn is a few clock ticks), each as the ratio on / off. Target: at
 *     most 1.05.
 *  2. Restore: a daemon under the fake systemd holding --clients sessions
 *     (1,000), --objects objects (100,000 CQs spread over them) and --dms
 *     DMs (256), SIGKILLed and started again: its restore time (start to
 *     READY=1, and the "restored in N us" it logs) against the time the
 *     clients took to connect and create all that. Target: at most 0.05.
 *     Also the new daemon's CPU time to READY=1, which a loaded machine
 *     does not stretch; the daemon logs its restore's phases at info.
 *
 * Prints one line per figure and "restart-bench: ... PASS|FAIL"; exits 1
 * on a FAIL only with --strict (times on shared machines are noisy).
 * --keep leaves the daemons' logs in the directory it names.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "include/ibclient.h"
#include "tests/fakesd.h"

#define JOURNAL_TARGET 1.05
#define RESTORE_TARGET 0.05
#define MAX_TURNS 64

struct opts {
	const char *daemon;
	unsigned int clients, objects, dms, pings, opens, turns;
	int strict, keep;
};

static char dir[128];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* utime + stime of @pid, in seconds. */
static double cpu_of(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	p = strrchr(buf, ')');
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
		   &ut, &st) != 2)
		return 0;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static int rm_one(const char *path, const struct stat *st, int type,
		  struct FTW *f)
{
	(void)st;
	(void)type;
	(void)f;
	return remove(path) < 0 ? 0 : 0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_d);
	return n ? v[n / 2] : 0;
}

static int write_conf(const char *path, const struct opts *o)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fprintf(f,
		"[broker]\nconnections_per_uid = %u\n"
		"[defaults]\nobjects = %u\nclients = %u\ndm_bytes = %u\n"
		"[soft]\nmax_dm_size = %u\n",
		o->clients + 64, o->objects + o->dms + 4096, o->clients + 64,
		(o->dms + 16) * 4096, (o->dms + 16) * 4096);
	return fclose(f) ? -errno : 0;
}

static int connect_to(const char *sock, struct ibc_client **ret)
{
	struct ibc_connect_attr a = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_TIMEOUT,
		.socket_path = sock,
		.timeout_ms = 60000,
	};

	return ibc_connect(&a, ret);
}

static int wait_socket(const char *sock)
{
	struct ibc_client *cl;

	for (int i = 0; i < 500; i++) {
		if (connect_to(sock, &cl) == 0) {
			ibc_disconnect(cl);
			return 0;
		}
		usleep(10000);
	}
	return -ETIMEDOUT;
}

static int listener(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 4096) < 0)
		return -errno;
	return fd;
}

/* --- 1. the journal's cost ------------------------------------------------ */

struct side {
	const char *name;
	pid_t pid;
	char sock[160];
	struct ibc_client *cl;
	struct ibc_ctx *hold;
	double ping[MAX_TURNS], open[MAX_TURNS];
	/* The daemon's CPU seconds and the requests, over every turn: a
	 * turn is a few clock ticks only. */
	double cpu;
	unsigned long reqs;
};

static void turn(struct side *s, unsigned int t, const struct opts *o)
{
	unsigned int np = o->pings / o->turns, no = o->opens / o->turns;
	double *lat = calloc(np > no ? np : no, sizeof(*lat));
	double c0 = cpu_of(s->pid), t0;

	if (!lat)
		return;
	for (unsigned int i = 0; i < np; i++) {
		t0 = now_s();
		ibc_ping(s->cl, NULL, 0);
		lat[i] = now_s() - t0;
	}
	s->ping[t] = median(lat, np);
	for (unsigned int i = 0; i < no; i++) {
		struct ibc_ctx *x;

		t0 = now_s();
		if (ibc_open(s->cl, "soft0", &x) == 0)
			ibc_close(x);
		lat[i] = now_s() - t0;
	}
	s->open[t] = median(lat, no);
	s->cpu += cpu_of(s->pid) - c0;
	s->reqs += np + 2 * no;
	free(lat);
}

static int journal_cost(const struct opts *o, const char *conf, int *pass)
{
	struct side off = { .name = "off" }, on = { .name = "on" };
	struct fakesd_opts fo = { .store_max = 65536, .listen_fd = -1 };
	char run_off[160], run_on[160], logp[160];
	struct fakesd *sd = NULL;
	double r_ping, r_open, r_cpu;
	bool cpu_measured;
	int lfd, ret = -1;
	pid_t pid;

	snprintf(off.sock, sizeof(off.sock), "%s/off.sock", dir);
	snprintf(on.sock, sizeof(on.sock), "%s/on.sock", dir);
	snprintf(run_off, sizeof(run_off), "%s/run-off", dir);
	snprintf(run_on, sizeof(run_on), "%s/run-on", dir);
	snprintf(logp, sizeof(logp), "%s/journal-cost.log", dir);
	pid = fork();
	if (pid == 0) {
		int fd = open(logp, O_WRONLY | O_CREAT | O_APPEND, 0600);

		unsetenv("NOTIFY_SOCKET");
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(o->daemon, o->daemon, "--foreground", "--device", "soft",
		      "--socket", off.sock, "--runtime-dir", run_off,
		      "--config", conf, "--log-level", "warning", NULL);
		_exit(127);
	}
	off.pid = pid;
	lfd = listener(on.sock);
	fo.dir = dir;
	fo.listen_fd = lfd;
	if (lfd < 0 || fakesd_new(&fo, &sd) < 0)
		goto out;
	{
		char *const argv[] = { (char *)o->daemon,
				       "--foreground",
				       "--device",
				       "soft",
				       "--socket",
				       on.sock,
				       "--runtime-dir",
				       run_on,
				       "--config",
				       (char *)conf,
				       "--log-level",
				       "warning",
				       NULL };

		if (fakesd_start(sd, argv, logp) < 0 ||
		    fakesd_wait_ready(sd, 10000) < 0)
			goto out;
	}
	on.pid = fakesd_main_pid(sd);
	if (wait_socket(off.sock) < 0 || connect_to(off.sock, &off.cl) < 0 ||
	    connect_to(on.sock, &on.cl) < 0 ||
	    ibc_open(off.cl, "soft0", &off.hold) < 0 ||
	    ibc_open(on.cl, "soft0", &on.hold) < 0) {
		fprintf(stderr,
			"restart-bench: the daemons did not serve "
			"(see %s)\n",
			logp);
		goto out;
	}
	/* A warm-up turn each, then alternating turns. */
	turn(&off, 0, o);
	turn(&on, 0, o);
	off.cpu = on.cpu = 0;
	off.reqs = on.reqs = 0;
	for (unsigned int t = 0; t < o->turns; t++) {
		turn(t % 2 ? &on : &off, t, o);
		turn(t % 2 ? &off : &on, t, o);
	}
	r_ping = median(on.ping, o->turns) / median(off.ping, o->turns);
	r_open = median(on.open, o->turns) / median(off.open, o->turns);
	r_cpu = (on.cpu / (double)on.reqs) / (off.cpu / (double)off.reqs);
	printf("journal: ping median %.1f us on, %.1f us off: %.3fx\n",
	       median(on.ping, o->turns) * 1e6,
	       median(off.ping, o->turns) * 1e6, r_ping);
	printf("journal: open+close median %.1f us on, %.1f us off: %.3fx\n",
	       median(on.open, o->turns) * 1e6,
	       median(off.open, o->turns) * 1e6, r_open);
	/* Too few requests for the CPU clock's ticks: no ratio, said so,
	 * rather than a NaN judged as a failure. */
	cpu_measured = on.cpu > 0 && off.cpu > 0 && on.reqs && off.reqs;
	if (cpu_measured)
		printf("journal: daemon CPU per request %.2f us on, %.2f us "
		       "off: %.3fx\n",
		       on.cpu / (double)on.reqs * 1e6,
		       off.cpu / (double)off.reqs * 1e6, r_cpu);
	else
		printf("journal: daemon CPU per request not measured: %lu and "
		       "%lu requests took less than the CPU clock's tick "
		       "(more --pings and --opens)\n",
		       on.reqs, off.reqs);
	*pass = r_ping <= JOURNAL_TARGET && r_open <= JOURNAL_TARGET &&
		(!cpu_measured || r_cpu <= JOURNAL_TARGET);
	printf("restart-bench: journal cost (target %.2fx) %s%s\n",
	       JOURNAL_TARGET, *pass ? "PASS" : "FAIL",
	       cpu_measured ? "" : " (times only)");
	ret = 0;
out:
	if (off.cl)
		ibc_disconnect(off.cl);
	if (on.cl)
		ibc_disconnect(on.cl);
	kill(off.pid, SIGTERM);
	waitpid(off.pid, NULL, 0);
	fakesd_free(sd);
	if (lfd >= 0)
		close(lfd);
	return ret;
}

/* --- 2. restore -------------------------------------------------------------
 */

/* "restored in N us" from the daemon's log, or -1. */
static long restored_us(const char *log)
{
	char line[1024];
	long us = -1;
	FILE *f = fopen(log, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "restored in ");

		if (p)
			us = strtol(p + 12, NULL, 10);
	}
	fclose(f);
	return us;
}

static int restore_time(const struct opts *o, const char *conf, int *pass)
{
	struct fakesd_opts fo = { .store_max = 1u << 20 };
	struct ibc_client **cls = calloc(o->clients, sizeof(*cls));
	struct ibc_ctx **ctxs = calloc(o->clients, sizeof(*ctxs));
	char sock[160], run[160], logp[160];
	struct fakesd *sd = NULL;
	unsigned int made = 0, dms = 0, alive = 0;
	double t0, t_build, t_restore, cpu;
	long us;
	int lfd = -1, ret = -1;
	char *argv[16];
	int n = 0;

	snprintf(sock, sizeof(sock), "%s/restore.sock", dir);
	snprintf(run, sizeof(run), "%s/run-restore", dir);
	snprintf(logp, sizeof(logp), "%s/restore.log", dir);
	argv[n++] = (char *)o->daemon;
	argv[n++] = "--foreground";
	argv[n++] = "--device";
	argv[n++] = "soft";
	argv[n++] = "--socket";
	argv[n++] = sock;
	argv[n++] = "--runtime-dir";
	argv[n++] = run;
	argv[n++] = "--config";
	argv[n++] = (char *)conf;
	argv[n++] = "--max-clients";
	argv[n++] = "65536";
	argv[n] = NULL;
	lfd = listener(sock);
	fo.dir = dir;
	fo.listen_fd = lfd;
	if (!cls || !ctxs || lfd < 0 || fakesd_new(&fo, &sd) < 0 ||
	    fakesd_start(sd, argv, logp) < 0 ||
	    fakesd_wait_ready(sd, 10000) < 0)
		goto out;
	t0 = now_s();
	for (unsigned int i = 0; i < o->clients; i++) {
		if (connect_to(sock, &cls[i]) < 0 ||
		    ibc_open(cls[i], "soft0", &ctxs[i]) < 0) {
			fprintf(stderr, "restart-bench: client %u: %s\n", i,
				ibc_last_error());
			goto out;
		}
	}
	for (unsigned int i = 0; i < o->objects; i++) {
		struct ibc_cq *cq;

		if (ibc_cq_create(ctxs[i % o->clients], 1, &cq) == 0)
			made++;
	}
	for (unsigned int i = 0; i < o->dms; i++) {
		struct ibc_dm *dm;

		if (ibc_dm_alloc(ctxs[i % o->clients], 4096, 0, &dm) == 0)
			dms++;
	}
	t_build = now_s() - t0;
	printf("restore: %u clients, %u objects, %u DMs made in %.3f s\n",
	       o->clients, made, dms, t_build);
	fakesd_kill(sd, SIGKILL);
	fakesd_wait_exit(sd, 10000);
	t0 = now_s();
	if (fakesd_start(sd, argv, logp) < 0 ||
	    fakesd_wait_ready(sd, 120000) < 0) {
		fprintf(stderr, "restart-bench: no restart (see %s)\n", logp);
		goto out;
	}
	t_restore = now_s() - t0;
	/* What the new daemon has run so far is its start and the restore:
	 * a figure a loaded machine does not stretch as it does the wall
	 * clock's. */
	cpu = cpu_of(fakesd_main_pid(sd));
	us = restored_us(logp);
	for (unsigned int i = 0; i < o->clients; i++)
		alive += ibc_ping(cls[i], NULL, 0) == 0;
	printf("restore: start to READY=1 %.3f s (the daemon's restore %.3f "
	       "s, its CPU time to READY=1 %.3f s): %.4fx the creation; %u "
	       "of %u clients answered after it\n",
	       t_restore, us >= 0 ? (double)us / 1e6 : -1.0, cpu,
	       t_restore / t_build, alive, o->clients);
	*pass = t_restore / t_build <= RESTORE_TARGET && alive == o->clients;
	printf("restart-bench: restore (target %.2fx, every client kept) %s\n",
	       RESTORE_TARGET, *pass ? "PASS" : "FAIL");
	ret = 0;
out:
	for (unsigned int i = 0; cls && i < o->clients; i++)
		if (cls[i])
			ibc_disconnect(cls[i]);
	free(cls);
	free(ctxs);
	fakesd_free(sd);
	if (lfd >= 0)
		close(lfd);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "daemon", required_argument, NULL, 'd' },
		{ "clients", required_argument, NULL, 'c' },
		{ "objects", required_argument, NULL, 'o' },
		{ "dms", required_argument, NULL, 'm' },
		{ "pings", required_argument, NULL, 'p' },
		{ "opens", required_argument, NULL, 'O' },
		{ "turns", required_argument, NULL, 't' },
		{ "strict", no_argument, NULL, 's' },
		{ "keep", no_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .clients = 1000,
			  .objects = 100000,
			  .dms = 256,
			  .pings = 20000,
			  .opens = 4000,
			  .turns = 10 };
	struct rlimit rl;
	char conf[192];
	int c, p1 = 0, p2 = 0, ret;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'd':
			o.daemon = optarg;
			break;
		case 'c':
			o.clients = (unsigned int)atoi(optarg);
			break;
		case 'o':
			o.objects = (unsigned int)atoi(optarg);
			break;
		case 'm':
			o.dms = (unsigned int)atoi(optarg);
			break;
		case 'p':
			o.pings = (unsigned int)atoi(optarg);
			break;
		case 'O':
			o.opens = (unsigned int)atoi(optarg);
			break;
		case 't':
			o.turns = (unsigned int)atoi(optarg);
			break;
		case 's':
			o.strict = 1;
			break;
		case 'k':
			o.keep = 1;
			break;
		default:
			fprintf(stderr, "usage: rdmab-restart-bench --daemon "
					"PATH [--clients N] [--objects N] "
					"[--dms N] [--pings N] [--opens N] "
					"[--turns N] [--strict] [--keep]\n");
			return 2;
		}
	}
	if (!o.daemon || !o.clients || !o.turns || o.turns > MAX_TURNS ||
	    o.pings < o.turns || o.opens < o.turns) {
		fprintf(stderr, "rdmab-restart-bench: --daemon PATH, and "
				"--turns 1..64 below --pings and --opens\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	/* A socket per client and a few descriptors per context. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	snprintf(dir, sizeof(dir), "%s/rdmab-restart-bench.XXXXXX",
		 getenv("TMPDIR") && strlen(getenv("TMPDIR")) < 40 ?
			 getenv("TMPDIR") :
			 "/tmp");
	if (!mkdtemp(dir))
		return 1;
	snprintf(conf, sizeof(conf), "%s/rdmabroker.conf", dir);
	if (write_conf(conf, &o) < 0)
		return 1;
	ret = journal_cost(&o, conf, &p1);
	if (ret == 0)
		ret = restore_time(&o, conf, &p2);
	if (ret < 0 || o.keep) {
		printf("restart-bench: logs in %s\n", dir);
		if (ret < 0)
			return 1;
	} else {
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	}
	return o.strict && !(p1 && p2) ? 1 : 0;
}
