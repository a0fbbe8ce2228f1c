// SPDX-License-Identifier: MIT
/*
 * make bench-fork: the cost of the library's atfork handlers (issue 12).
 *
 * fork() + the child's _exit(0) + waitpid() of a process holding 1 GiB of
 * touched memory (4 KiB pages) with a session, an open soft-device
 * context, a CQ and a DM mapping, against the same of its twin, which holds
 * the same memory and never ran the library (no handler is installed
 * before the first ibc_connect); both are children of the driver forked
 * before anything of the library ran in it (the driver's own forks are
 * slower than its children's, library or not), and they fork in turn,
 * every process on CPU 0. The same without the 1 GiB, for scale (the
 * library's own memory and descriptors then show). With valgrind
 * installed, callgrind counts the same for the parent and for the child
 * (whose handler runs there) of a small process: for the parent the role
 * runs twice, for 0 and IR_FORKS forks, and the difference over IR_FORKS
 * is one fork's; a child's count starts with its parent's (callgrind
 * copies the counters at fork), so for the children the parent zeroes its
 * counters before every fork and the children's totals are averaged.
 *
 * Usage: rdmab-bench-fork --daemon PATH [--mib N]
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <valgrind/callgrind.h>

#include "bench/bench.h"
#include "include/ibclient.h"

#define REPS 3
#define FORKS 20
#define IR_FORKS 200

struct figure {
	double wait_us; /* fork + _exit + waitpid, median */
	double fork_us; /* fork() returning in the parent, median */
};

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

/* One fork whose child exits at once: its two times, in microseconds. */
static void one_fork(double ret[2])
{
	uint64_t t0 = now_ns(), t1;
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	t1 = now_ns();
	if (pid < 0) {
		perror("bench-fork: fork");
		exit(1);
	}
	waitpid(pid, &status, 0);
	ret[0] = (double)(now_ns() - t0) / 1e3;
	ret[1] = (double)(t1 - t0) / 1e3;
}

static void *touch(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("bench-fork: mmap");
		exit(1);
	}
	/* 4 KiB pages, as an application's heap mostly is: the page
	 * tables are what fork copies. */
	madvise(p, len, MADV_NOHUGEPAGE);
	for (size_t off = 0; off < len; off += 4096)
		p[off] = 1;
	return p;
}

/*
 * The two processes measured: twins forked by the driver before anything
 * of the library ran, so that they are alike but for what they are told.
 * On command: 'T' touch the memory, 'U' unmap it, 'L' connect with a
 * soft context, a CQ and a DM (the library's twin only: the first
 * ibc_connect installs the handlers), 'F' one fork, whose times go back,
 * 'Q' quit.
 */
struct twin {
	pid_t pid;
	int cmd, res;
};

static int twin_library(const char *sock)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET,
		.socket_path = sock,
	};
	struct ibc_client *cl;
	struct ibc_ctx *ctx;
	struct ibc_cq *cq;
	struct ibc_dm *dm;
	int i, err = -1;

	for (i = 0; i < 500 && (err = ibc_connect(&attr, &cl)) < 0; i++)
		usleep(10000);
	if (err == 0 &&
	    (ibc_open(cl, NULL, &ctx) < 0 || ibc_cq_create(ctx, 64, &cq) < 0 ||
	     ibc_dm_alloc(ctx, 4096, 0, &dm) < 0))
		err = -1;
	if (err < 0)
		fprintf(stderr, "bench-fork: %s\n", ibc_last_error());
	/* Held until the twin exits. */
	return err;
}

static void __attribute__((noreturn))
twin_main(int cmd, int res, size_t len, const char *sock)
{
	void *big = NULL;
	double t[2];
	char c;

	while (read(cmd, &c, 1) == 1) {
		t[0] = t[1] = 0;
		if (c == 'T')
			big = touch(len);
		else if (c == 'U')
			munmap(big, len);
		else if (c == 'L')
			t[0] = twin_library(sock);
		else if (c == 'Q')
			break;
		else
			one_fork(t);
		if (write(res, t, sizeof(t)) != sizeof(t))
			break;
	}
	_exit(0);
}

static void twin_start(struct twin *tw, size_t len, const char *sock)
{
	int cmd[2], res[2];

	if (pipe2(cmd, O_CLOEXEC) < 0 || pipe2(res, O_CLOEXEC) < 0) {
		perror("bench-fork: pipe2");
		exit(1);
	}
	tw->pid = fork();
	if (tw->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(cmd[1]);
		close(res[0]);
		twin_main(cmd[0], res[1], len, sock);
	}
	close(cmd[0]);
	close(res[1]);
	tw->cmd = cmd[1];
	tw->res = res[0];
}

static void twin_ask(const struct twin *tw, char c, double t[2])
{
	if (write(tw->cmd, &c, 1) != 1 ||
	    read(tw->res, t, 2 * sizeof(*t)) != (ssize_t)(2 * sizeof(*t))) {
		fprintf(stderr, "bench-fork: a twin is gone\n");
		exit(1);
	}
}

static void twin_stop(struct twin *tw)
{
	int status;

	/* Said, not an end of file: the other twin holds this one's pipe
	 * ends too. */
	if (write(tw->cmd, "Q", 1) != 1)
		kill(tw->pid, SIGKILL);
	close(tw->cmd);
	close(tw->res);
	waitpid(tw->pid, &status, 0);
}

/* REPS * FORKS forks of each twin, in turn; who goes first alternates, so
 * that neither gains from what the other left warm. */
static void measure(const struct twin *lt, const struct twin *pt,
		    struct figure *lib, struct figure *raw)
{
	double lw[REPS * FORKS], lf[REPS * FORKS];
	double rw[REPS * FORKS], rf[REPS * FORKS];
	double t[2];

	for (int i = 0; i < REPS * FORKS; i++) {
		for (int k = 0; k < 2; k++) {
			if ((i + k) % 2) {
				twin_ask(pt, 'F', t);
				rw[i] = t[0];
				rf[i] = t[1];
			} else {
				twin_ask(lt, 'F', t);
				lw[i] = t[0];
				lf[i] = t[1];
			}
		}
	}
	lib->wait_us = median(lw, REPS * FORKS);
	lib->fork_us = median(lf, REPS * FORKS);
	raw->wait_us = median(rw, REPS * FORKS);
	raw->fork_us = median(rf, REPS * FORKS);
}

static void row(const char *what, const struct figure *lib,
		const struct figure *raw)
{
	printf("%-28s %10.0f %10.0f %6.3f %10.0f %10.0f\n", what, lib->wait_us,
	       raw->wait_us, lib->wait_us / raw->wait_us, lib->fork_us,
	       raw->fork_us);
}

/* --- callgrind ------------------------------------------------------- */

/* The counted role: a session with a soft context, a CQ and a DM when
 * @lib, then @n forks whose children exit at once; @zero: the counters
 * are zeroed before each, for the children's counts. */
static int ir_role(const char *sock, int lib, int n, int zero)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET,
		.socket_path = sock,
	};
	struct ibc_client *cl = NULL;
	struct ibc_ctx *ctx;
	struct ibc_cq *cq;
	struct ibc_dm *dm;

	if (lib &&
	    (ibc_connect(&attr, &cl) < 0 || ibc_open(cl, NULL, &ctx) < 0 ||
	     ibc_cq_create(ctx, 64, &cq) < 0 ||
	     ibc_dm_alloc(ctx, 4096, 0, &dm) < 0)) {
		fprintf(stderr, "bench-fork: %s\n", ibc_last_error());
		return 1;
	}
	for (int i = 0; i < n; i++) {
		int status;
		pid_t pid;

		if (zero)
			CALLGRIND_ZERO_STATS;
		pid = fork();
		if (pid == 0)
			_exit(0);
		if (pid < 0 || waitpid(pid, &status, 0) != pid)
			return 1;
	}
	/* The process exits holding them: the same work at both counts. */
	return 0;
}

/* The Ir total of a callgrind output file, or -1. */
static double ir_total(const char *path)
{
	char line[256];
	FILE *f = fopen(path, "re");
	double v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long x;

		if (sscanf(line, "summary: %llu", &x) == 1 ||
		    sscanf(line, "totals: %llu", &x) == 1) {
			v = (double)x;
			break;
		}
	}
	fclose(f);
	return v;
}

/* Run the role under callgrind with @n forks: the parent's total and the
 * children's summed, from the files named @dir/cg-@lib-@n.PID. */
static int ir_run(const char *self, const char *dir, const char *sock, int lib,
		  int n, int zero, double *ret_parent, double *ret_children)
{
	char out[256], prefix[64], nb[16], lb[4], zb[4], path[512];
	char *argv[] = {
		"valgrind", "--tool=callgrind", "-q", out, (char *)self,
		"--role",   (char *)sock,	lb,   nb,  zb,
		NULL
	};
	struct dirent *e;
	int status;
	pid_t pid;
	DIR *d;

	snprintf(prefix, sizeof(prefix), "cg-%d-%d-%d.", lib, n, zero);
	snprintf(zb, sizeof(zb), "%d", zero);
	snprintf(out, sizeof(out), "--callgrind-out-file=%s/%s%%p", dir,
		 prefix);
	snprintf(lb, sizeof(lb), "%d", lib);
	snprintf(nb, sizeof(nb), "%d", n);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execvp("valgrind", argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return -1;
	*ret_parent = *ret_children = 0;
	d = opendir(dir);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		double v;

		if (strncmp(e->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		v = ir_total(path);
		unlink(path);
		if (v < 0)
			continue;
		if (atoi(e->d_name + strlen(prefix)) == pid)
			*ret_parent = v;
		else
			*ret_children += v;
	}
	closedir(d);
	return *ret_parent > 0 ? 0 : -1;
}

static void ir_report(const char *dir, const char *sock)
{
	double p[2][2], c[2][2], per_p[2], per_c[2], unused;
	char self[512];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return;
	self[n] = '\0';
	for (int lib = 0; lib < 2; lib++)
		for (int k = 0; k < 2; k++)
			if (ir_run(self, dir, sock, lib, k ? IR_FORKS : 0, 0,
				   &p[lib][k], &unused) < 0 ||
			    (k && ir_run(self, dir, sock, lib, IR_FORKS, 1,
					 &unused, &c[lib][k]) < 0)) {
				printf("\ncallgrind counts: n/a (valgrind "
				       "failed)\n");
				return;
			}
	for (int lib = 0; lib < 2; lib++) {
		per_p[lib] = (p[lib][1] - p[lib][0]) / IR_FORKS;
		per_c[lib] = c[lib][1] / IR_FORKS;
	}
	printf("\nuser-space instructions per fork of a small process "
	       "(callgrind, %d forks):\n",
	       IR_FORKS);
	printf("%-24s %12s %12s %12s\n", "", "library", "plain", "handlers");
	printf("%-24s %12.0f %12.0f %12.0f\n", "parent (fork, waitpid)",
	       per_p[1], per_p[0], per_p[1] - per_p[0]);
	printf("%-24s %12.0f %12.0f %12.0f\n", "child (to _exit)", per_c[1],
	       per_c[0], per_c[1] - per_c[0]);
}

int main(int argc, char **argv)
{
	const char *daemon = NULL;
	char dir[] = "/tmp/rdmab-bench-fork.XXXXXX", sock[128];
	struct figure raw_small, raw_big, lib_small, lib_big;
	size_t mib = 1024, len;
	struct twin lt, pt;
	cpu_set_t set;
	double t[2];
	int status;
	pid_t dpid;

	if (argc == 6 && strcmp(argv[1], "--role") == 0)
		return ir_role(argv[2], atoi(argv[3]), atoi(argv[4]),
			       atoi(argv[5]));
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--daemon") == 0 && i + 1 < argc)
			daemon = argv[++i];
		else if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc)
			mib = strtoul(argv[++i], NULL, 10);
	}
	if (!daemon || !mib || !mkdtemp(dir)) {
		fprintf(stderr,
			"Usage: rdmab-bench-fork --daemon PATH [--mib N]\n");
		return 2;
	}
	len = mib << 20;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		perror("bench-fork: sched_setaffinity");
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	dpid = fork();
	if (dpid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(daemon, daemon, "--device", "soft", "--socket", sock,
		      "--runtime-dir", dir, "--log-level", "warning",
		      (char *)NULL);
		_exit(127);
	}
	/* Before anything of the library ran here. */
	twin_start(&lt, len, sock);
	twin_start(&pt, len, sock);
	twin_ask(&lt, 'T', t);
	twin_ask(&pt, 'T', t);
	twin_ask(&lt, 'L', t);
	if (t[0] < 0) {
		kill(dpid, SIGKILL);
		return 1;
	}
	measure(&lt, &pt, &lib_big, &raw_big);
	twin_ask(&lt, 'U', t);
	twin_ask(&pt, 'U', t);
	measure(&lt, &pt, &lib_small, &raw_small);
	twin_stop(&lt);
	twin_stop(&pt);

	printf("fork + _exit + waitpid of a process with a session, a soft "
	       "context, a CQ and a DM,\nagainst its twin without the library, "
	       "in turn (CPU 0, median of %d)\n",
	       REPS * FORKS);
	printf("%-28s %10s %10s %6s %10s %10s\n", "PROCESS", "lib us",
	       "plain us", "RATIO", "fork() lib", "fork() pl");
	{
		char what[64];

		snprintf(what, sizeof(what), "%zu MiB touched", mib);
		row(what, &lib_big, &raw_big);
	}
	row("small (no extra memory)", &lib_small, &raw_small);

	if (access("/usr/bin/valgrind", X_OK) == 0 ||
	    access("/usr/local/bin/valgrind", X_OK) == 0)
		ir_report(dir, sock);
	kill(dpid, SIGTERM);
	waitpid(dpid, &status, 0);
	/* With the xrcd/ directory the daemon leaves for a restart. */
	remove_tree(dir);
	return 0;
}
