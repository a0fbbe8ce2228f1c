// SPDX-License-Identifier: MIT
/* Helpers of the benchmark driver: time, statistics, pinned children that
 * cannot outlive the driver, cleanup, sockets. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "proto/wire.h"

#define MAX_CHILDREN 16
#define MAX_PATHS 32

static volatile pid_t children[MAX_CHILDREN];
static char paths[MAX_PATHS][sizeof(((struct sockaddr_un *)0)->sun_path)];
static volatile int n_paths;
static pid_t driver_pid;

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sleep_ms(unsigned int ms)
{
	struct timespec ts = {
		.tv_sec = ms / 1000,
		.tv_nsec = (long)(ms % 1000) * 1000000,
	};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

uint64_t quantile_u64(uint64_t *v, size_t n, double p)
{
	size_t rank;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_u64);
	rank = (size_t)ceil(p * (double)n);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

double median_dbl(const double *v, size_t n)
{
	double tmp[64];

	if (!n || n > sizeof(tmp) / sizeof(tmp[0]))
		return NAN;
	memcpy(tmp, v, n * sizeof(*v));
	qsort(tmp, n, sizeof(*tmp), cmp_dbl);
	return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

double min_dbl(const double *v, size_t n)
{
	double m = INFINITY;

	for (size_t i = 0; i < n; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

int parse_ulong(const char *s, unsigned long min, unsigned long max,
		unsigned long *ret)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	/* strtoul takes "-1" as ULONG_MAX and skips leading blanks. */
	if (errno || end == s || *end || strchr(s, '-') || v < min || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

double max_dbl(const double *v, size_t n)
{
	double m = -INFINITY;

	for (size_t i = 0; i < n; i++)
		if (v[i] > m)
			m = v[i];
	return m;
}

int pin_self(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(BENCH_CPU, &set);
	return sched_setaffinity(0, sizeof(set), &set) < 0 ? -errno : 0;
}

int check_pinned(pid_t pid)
{
	cpu_set_t set;

	if (sched_getaffinity(pid, sizeof(set), &set) < 0)
		return -errno;
	return CPU_COUNT(&set) == 1 && CPU_ISSET(BENCH_CPU, &set) ? 0 : -EXDEV;
}

int wait_in_epoll(pid_t pid, unsigned int ms)
{
	/* "running" or another number: not (yet) there. */
	static const long epoll_nrs[] = {
#ifdef __NR_epoll_wait
		__NR_epoll_wait,
#endif
#ifdef __NR_epoll_pwait2
		__NR_epoll_pwait2,
#endif
		__NR_epoll_pwait,
	};
	const struct timespec nap = { .tv_nsec = 5000 };
	uint64_t end = now_ns() + (uint64_t)ms * 1000000u;
	char path[64], buf[64];

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	for (;;) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n;
		long nr;
		int err;

		if (fd < 0)
			return -errno;
		n = read(fd, buf, sizeof(buf) - 1);
		err = n < 0 ? -errno : 0;
		close(fd);
		if (err < 0)
			return err;
		buf[n] = '\0';
		if (sscanf(buf, "%ld", &nr) == 1)
			for (size_t i = 0;
			     i < sizeof(epoll_nrs) / sizeof(epoll_nrs[0]); i++)
				if (nr == epoll_nrs[i])
					return 0;
		if (now_ns() > end)
			return -ETIMEDOUT;
		nanosleep(&nap, NULL);
	}
}

int cpu_time_ns(pid_t pid, uint64_t *ret)
{
	struct timespec ts;
	clockid_t clk;
	int err;

	err = clock_getcpuclockid(pid, &clk);
	if (err)
		return -err;
	if (clock_gettime(clk, &ts) < 0)
		return -errno;
	*ret = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return 0;
}

static int register_child(pid_t pid)
{
	for (int i = 0; i < MAX_CHILDREN; i++) {
		if (!children[i]) {
			children[i] = pid;
			return 0;
		}
	}
	return -ENOSPC;
}

static void forget_child(pid_t pid)
{
	for (int i = 0; i < MAX_CHILDREN; i++)
		if (children[i] == pid)
			children[i] = 0;
}

/* In a fresh child: drop the driver's cleanup duties, make sure the child
 * dies with the driver and by its own alarm, pin it. */
static void child_setup(pid_t parent)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGALRM, SIGHUP };
	sigset_t none;

	for (int i = 0; i < MAX_CHILDREN; i++)
		children[i] = 0;
	n_paths = 0;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(126);
	if (pin_self() < 0)
		_exit(126);
	/* Survives execve(). */
	alarm(BENCH_ALARM_S);
}

int spawn(char *const argv[], const char *log_path, pid_t *ret_pid)
{
	pid_t parent = getpid();
	pid_t pid;
	int ret;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		child_setup(parent);
		if (log_path) {
			int fd = open(log_path,
				      O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
				      0600);

			if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
				_exit(126);
			close(fd);
		}
		execv(argv[0], argv);
		dprintf(2, "rdmab-bench: cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	ret = register_child(pid);
	if (ret < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return ret;
	}
	*ret_pid = pid;
	return 0;
}

int spawn_fn(int (*fn)(void *arg), void *arg, pid_t *ret_pid)
{
	pid_t parent = getpid();
	pid_t pid;
	int ret;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		child_setup(parent);
		_exit(fn(arg) < 0 ? 1 : 0);
	}
	ret = register_child(pid);
	if (ret < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return ret;
	}
	*ret_pid = pid;
	return 0;
}

struct raw_peer {
	int (*fn)(int fd, const void *arg);
	const void *arg;
	int fd;
	int other_fd;
};

static int raw_peer_main(void *arg)
{
	const struct raw_peer *p = arg;

	close(p->other_fd);
	return p->fn(p->fd, p->arg);
}

int raw_peer_start(int (*fn)(int fd, const void *arg), const void *arg,
		   int *ret_fd, pid_t *ret_pid)
{
	struct raw_peer p = { .fn = fn, .arg = arg };
	int sv[2], ret;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	p.fd = sv[1];
	p.other_fd = sv[0];
	ret = spawn_fn(raw_peer_main, &p, ret_pid);
	close(sv[1]);
	if (ret < 0) {
		close(sv[0]);
		return ret;
	}
	*ret_fd = sv[0];
	return 0;
}

int peer_alternate(int fd, const size_t rep_len[2], int pass_fd)
{
	static uint8_t rx[PEER_MAX_PACKET], tx[PEER_MAX_PACKET];
	unsigned int k = 0;
	int ret;

	memset(tx, 'r', sizeof(tx));
	if (rep_len[0] > sizeof(tx) || rep_len[1] > sizeof(tx))
		return -EMSGSIZE;
	for (;;) {
		ssize_t n = recv(fd, rx, sizeof(rx), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : 0;
		if (pass_fd >= 0)
			ret = wire_send(fd, tx, rep_len[k], &pass_fd, k == 0,
					0);
		else if (send(fd, tx, rep_len[k], MSG_NOSIGNAL) < 0)
			ret = -errno;
		else
			ret = 0;
		if (ret < 0)
			return ret;
		k ^= 1;
	}
}

/* Async-signal-safe. */
static int reap(pid_t pid)
{
	int status = 0;

	kill(pid, SIGTERM);
	for (int i = 0; i < 300; i++) {
		struct timespec ts = { .tv_nsec = 10 * 1000 * 1000 };
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0)
			return -errno;
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return status;
}

int stop_child(pid_t pid)
{
	int ret = reap(pid);

	forget_child(pid);
	return ret;
}

int wait_child(pid_t pid)
{
	int status = 0;
	pid_t r;

	do
		r = waitpid(pid, &status, 0);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		status = -errno;
	forget_child(pid);
	return status;
}

int cleanup_path(const char *path)
{
	if (n_paths >= MAX_PATHS || strlen(path) >= sizeof(paths[0]))
		return -ENOSPC;
	strcpy(paths[n_paths], path);
	n_paths++;
	return 0;
}

/* Async-signal-safe: only what the benchmark itself made. */
void cleanup_all(void)
{
	if (getpid() != driver_pid)
		return;
	for (int i = 0; i < MAX_CHILDREN; i++) {
		pid_t pid = children[i];

		if (pid) {
			children[i] = 0;
			reap(pid);
		}
	}
	while (n_paths > 0) {
		const char *p = paths[--n_paths];

		if (unlink(p) < 0 && (errno == EISDIR || errno == EPERM))
			rmdir(p);
	}
}

static void cleanup_signal(int sig)
{
	static const char msg[] = "rdmab-bench: interrupted, cleaning up\n";

	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* Nothing to do about it. */
	}
	cleanup_all();
	signal(sig, SIG_DFL);
	raise(sig);
	_exit(128 + sig);
}

void cleanup_install(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGALRM, SIGHUP };
	struct sigaction sa = { .sa_handler = cleanup_signal };

	driver_pid = getpid();
	sigfillset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	atexit(cleanup_all);
}

int unix_connect(const char *path, int *ret_fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	*ret_fd = fd;
	return 0;
}

int unix_connect_wait(const char *path, unsigned int ms, pid_t server,
		      int *ret_fd)
{
	uint64_t deadline = now_ns() + (uint64_t)ms * 1000000;
	int ret;

	for (;;) {
		siginfo_t si = { 0 };

		ret = unix_connect(path, ret_fd);
		if (ret == 0 || (ret != -ENOENT && ret != -ECONNREFUSED))
			return ret;
		/* Look without reaping: stop_child() reaps. */
		if (waitid(P_PID, (id_t)server, &si,
			   WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == server)
			return -ECHILD;
		if (now_ns() > deadline)
			return -ETIMEDOUT;
		sleep_ms(10);
	}
}

int recv_timeout(int fd, void *buf, size_t cap, unsigned int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;
	int r;

	do
		r = poll(&p, 1, (int)ms);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -ETIMEDOUT;
	n = recv(fd, buf, cap, MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ECONNRESET;
	return (int)n;
}

int unix_accept_one(const char *path, unsigned int ms, int *ret_fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct pollfd p = { .events = POLLIN };
	bool bound = false;
	int lfd, fd, ret;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return -errno;
	bound = bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	if (!bound || listen(lfd, 1) < 0) {
		ret = -errno;
		goto out;
	}
	p.fd = lfd;
	do
		ret = poll(&p, 1, (int)ms);
	while (ret < 0 && errno == EINTR);
	if (ret <= 0) {
		ret = ret < 0 ? -errno : -ETIMEDOUT;
		goto out;
	}
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	ret = fd < 0 ? -errno : 0;
	if (ret == 0)
		*ret_fd = fd;
out:
	close(lfd);
	/* Only ours, once it is no longer needed. */
	if (bound)
		unlink(path);
	return ret;
}

/* Idle and total jiffies of the /proc/stat line for CPU @cpu (-1: all). */
static int read_cpu_line(int cpu, uint64_t *idle, uint64_t *total)
{
	unsigned long long v[8];
	char want[16], line[512];
	FILE *f = fopen("/proc/stat", "re");
	int ret = -ENOENT;

	if (!f)
		return -errno;
	if (cpu < 0)
		snprintf(want, sizeof(want), "cpu ");
	else
		snprintf(want, sizeof(want), "cpu%d ", cpu);
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, want, strlen(want)))
			continue;
		if (sscanf(line + strlen(want),
			   "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
			   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
			   &v[7]) != 8) {
			ret = -EIO;
			break;
		}
		/* guest and guest_nice are already inside user and nice. */
		*idle = v[3] + v[4];
		*total = 0;
		for (int i = 0; i < 8; i++)
			*total += v[i];
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

int idle_percent(int cpu, unsigned int ms, double *ret)
{
	uint64_t i0, t0, i1, t1;
	int err;

	err = read_cpu_line(cpu, &i0, &t0);
	if (err < 0)
		return err;
	sleep_ms(ms);
	err = read_cpu_line(cpu, &i1, &t1);
	if (err < 0)
		return err;
	if (t1 == t0)
		return -EAGAIN;
	*ret = 100.0 * (double)(i1 - i0) / (double)(t1 - t0);
	return 0;
}

double loadavg1(void)
{
	FILE *f = fopen("/proc/loadavg", "re");
	double l = NAN;

	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = NAN;
		fclose(f);
	}
	return l;
}

static int rm_entry(const char *p, const struct stat *st, int type,
		    struct FTW *ftw)
{
	return remove(p) < 0 ? -1 : 0;
}

int remove_tree(const char *path)
{
	if (nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0)
		return errno == ENOENT ? 0 : -errno;
	return 0;
}
