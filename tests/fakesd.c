// SPDX-License-Identifier: MIT
/*
 * A fake systemd for the restart tests (fakesd.h). One thread serves the
 * notify socket and the stored fds' hang-ups; the test's thread starts,
 * kills and waits for the service under the same mutex.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/fakesd.h"

extern char **environ;

/* systemd's limits: NOTIFY_BUFFER_MAX and NOTIFY_FD_MAX, FDNAME_MAX. */
#define NOTIFY_BUF 4096
#define NOTIFY_FDS 768
#define NAME_MAX_ 255

/* epoll data of what is not a stored fd; stored fds use their id. */
#define EV_SOCK UINT64_MAX
#define EV_WAKE (UINT64_MAX - 1)
/* The main process's pidfd: this bit and its pid, so that a late event of
 * an earlier main process is told apart. */
#define EV_MAIN (1ULL << 62)

struct entry {
	int fd;
	uint64_t id;
	bool polled;
	/* Its file, to find a duplicate without a system call per entry. */
	dev_t dev;
	ino_t ino;
	char name[NAME_MAX_ + 1];
};

struct fakesd {
	struct fakesd_opts o;
	char listen_name[NAME_MAX_ + 1];
	struct sockaddr_un addr;
	int sock, ep, wake;
	pthread_t thread;
	bool thread_up;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct entry *store;
	size_t n, cap;
	uint64_t next_id;
	pid_t main_pid, spawned;
	int main_pidfd;
	bool main_exited;
	/* The thread holds mu (fakesd_busy()); atomic. */
	bool busy;
	struct fakesd_stats st;
	/* What the service did to the store, in order (fakesd_event()): a
	 * ring of the last FAKESD_EVENTS. */
	struct fakesd_event {
		char op;
		char name[64];
	} ev[FAKESD_EVENTS];
	size_t n_ev;
	/* In the list of live ones (all_head), for fork(). */
	struct fakesd *next;
};

/*
 * fork() in a process that runs a fake systemd: the child gets every lock
 * as it was, and not the thread that held one. The thread allocates under
 * sd->mu (the store grows); glibc's malloc takes its own locks around
 * fork(), clang 14's AddressSanitizer does not (LLVM 18 added that), so a
 * child forked while the thread was in the allocator kept a lock of it
 * held for ever, and hung in its first allocation of that size: the
 * restart storm's client that stopped answering under make check-asan.
 * So every fork waits until no thread of ours is inside: prepare takes
 * each live sd->mu (recursive: fakesd_start() forks holding its own), the
 * parent lets them go, the child makes them anew.
 */
static pthread_mutex_t all_mu = PTHREAD_MUTEX_INITIALIZER;
static struct fakesd *all_head;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void mu_init(pthread_mutex_t *mu)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(mu, &a);
	pthread_mutexattr_destroy(&a);
}

static void fork_prepare(void)
{
	pthread_mutex_lock(&all_mu);
	for (struct fakesd *sd = all_head; sd; sd = sd->next)
		pthread_mutex_lock(&sd->mu);
}

static void fork_parent(void)
{
	for (struct fakesd *sd = all_head; sd; sd = sd->next)
		pthread_mutex_unlock(&sd->mu);
	pthread_mutex_unlock(&all_mu);
}

/* The child's locks name the parent's thread as owner: made anew. */
static void fork_child(void)
{
	for (struct fakesd *sd = all_head; sd; sd = sd->next)
		mu_init(&sd->mu);
	pthread_mutex_init(&all_mu, NULL);
}

static void atfork_install(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static int err_out(int err, const char *what)
{
	fprintf(stderr, "fakesd: %s: %s\n", what, strerror(-err));
	return err;
}

/* Is stored @e the open file @b (of @sb)? */
static bool same_file(const struct entry *e, int b, const struct stat *sb)
{
	int a = e->fd;
	long r;

	if (e->dev != sb->st_dev || e->ino != sb->st_ino)
		return false;
	errno = 0;
	r = syscall(SYS_kcmp, getpid(), getpid(), KCMP_FILE, a, b);
	if (r >= 0)
		return r == 0;
	/* No kcmp: one inode, and systemd would compare more; close enough
	 * for a test whose fds are the daemon's own. */
	return true;
}

static void drop_at(struct fakesd *sd, size_t i)
{
	if (sd->store[i].polled)
		epoll_ctl(sd->ep, EPOLL_CTL_DEL, sd->store[i].fd, NULL);
	close(sd->store[i].fd);
	memmove(&sd->store[i], &sd->store[i + 1],
		(sd->n - i - 1) * sizeof(*sd->store));
	sd->n--;
}

static bool name_valid(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > NAME_MAX_)
		return false;
	for (; *s; s++)
		if (*s < ' ' || *s >= 127 || *s == ':')
			return false;
	return true;
}

static void event_add(struct fakesd *sd, char op, const char *name)
{
	struct fakesd_event *e = &sd->ev[sd->n_ev++ % FAKESD_EVENTS];

	e->op = op;
	snprintf(e->name, sizeof(e->name), "%s", name);
}

/* One fd of an FDSTORE=1 message: stored (the store owns it) or closed. */
static void store_one(struct fakesd *sd, int fd, const char *name, bool poll_)
{
	struct epoll_event ev = { .events = 0 };
	struct stat st;
	struct entry *e;

	if (fstat(fd, &st) < 0) {
		sd->st.refused++;
		close(fd);
		return;
	}
	for (size_t i = 0; i < sd->n; i++) {
		if (same_file(&sd->store[i], fd, &st)) {
			sd->st.dups++;
			event_add(sd, 'd', name);
			close(fd);
			return;
		}
	}
	if (sd->n >= sd->o.store_max) {
		sd->st.refused++;
		event_add(sd, 'r', name);
		close(fd);
		return;
	}
	if (sd->n == sd->cap) {
		size_t cap = sd->cap ? sd->cap * 2 : 16;
		struct entry *s = realloc(sd->store, cap * sizeof(*s));

		if (!s) {
			sd->st.refused++;
			close(fd);
			return;
		}
		sd->store = s;
		sd->cap = cap;
	}
	event_add(sd, 's', name);
	e = &sd->store[sd->n++];
	e->fd = fd;
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	e->id = sd->next_id++;
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->polled = false;
	ev.data.u64 = e->id;
	/* Events 0: only EPOLLHUP and EPOLLERR, as systemd; a file that
	 * cannot be polled (EPERM: a memfd) is simply not watched. */
	if (poll_ && epoll_ctl(sd->ep, EPOLL_CTL_ADD, fd, &ev) == 0)
		e->polled = true;
}

static void handle_message(struct fakesd *sd, char *buf, pid_t sender, int *fds,
			   size_t nfds)
{
	const char *fdname = NULL;
	bool fdstore = false, fdremove = false, fdpoll = true;
	char *line, *save = NULL;

	if (sender != sd->main_pid) {
		/* NotifyAccess=main, implied by FileDescriptorStoreMax=. */
		sd->st.foreign++;
		sd->st.refused += nfds;
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		return;
	}
	/* BARRIER=1 alone with one fd: closing the fd is the answer. */
	if (strcmp(buf, "BARRIER=1") == 0 || strcmp(buf, "BARRIER=1\n") == 0) {
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		return;
	}
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strcmp(line, "READY=1") == 0)
			sd->st.ready = true;
		else if (strcmp(line, "STOPPING=1") == 0)
			sd->st.stopping = true;
		else if (strcmp(line, "WATCHDOG=1") == 0)
			sd->st.watchdog++;
		else if (strncmp(line, "STATUS=", 7) == 0)
			snprintf(sd->st.status, sizeof(sd->st.status), "%s",
				 line + 7);
		else if (strncmp(line, "MAINPID=", 8) == 0)
			sd->main_pid = (pid_t)atoi(line + 8);
		else if (strcmp(line, "FDSTORE=1") == 0)
			fdstore = true;
		else if (strcmp(line, "FDSTOREREMOVE=1") == 0)
			fdremove = true;
		else if (strcmp(line, "FDPOLL=0") == 0)
			fdpoll = false;
		else if (strncmp(line, "FDNAME=", 7) == 0)
			fdname = line + 7;
	}
	if (fdremove && fdname) {
		for (size_t i = sd->n; i-- > 0;) {
			if (strcmp(sd->store[i].name, fdname) == 0) {
				drop_at(sd, i);
				sd->st.removed++;
				event_add(sd, 'x', fdname);
			}
		}
	}
	if (fdname && !name_valid(fdname))
		fdname = NULL;
	for (size_t i = 0; i < nfds; i++) {
		if (fdstore && sd->o.store_max > 0) {
			store_one(sd, fds[i], fdname ? fdname : "stored",
				  fdpoll);
		} else {
			sd->st.refused++;
			close(fds[i]);
		}
	}
}

static void read_notify(struct fakesd *sd)
{
	char buf[NOTIFY_BUF + 1];
	union {
		struct cmsghdr align;
		char b[CMSG_SPACE(sizeof(struct ucred)) +
		       CMSG_SPACE(sizeof(int) * NOTIFY_FDS)];
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = NOTIFY_BUF };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = &ctl,
		.msg_controllen = sizeof(ctl),
	};
	int fds[NOTIFY_FDS];
	size_t nfds = 0;
	pid_t sender = 0;
	ssize_t n;

	/* Received and handled under the lock: a socket found empty with
	 * the lock held has nothing in flight (fakesd_wait_exit()). */
	pthread_mutex_lock(&sd->mu);
	n = recvmsg(sd->sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0) {
		pthread_mutex_unlock(&sd->mu);
		return;
	}
	__atomic_store_n(&sd->busy, true, __ATOMIC_SEQ_CST);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c;
	     c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET)
			continue;
		if (c->cmsg_type == SCM_CREDENTIALS) {
			struct ucred uc;

			memcpy(&uc, CMSG_DATA(c), sizeof(uc));
			sender = uc.pid;
		} else if (c->cmsg_type == SCM_RIGHTS) {
			size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (size_t i = 0; i < k && nfds < NOTIFY_FDS; i++)
				memcpy(&fds[nfds++],
				       CMSG_DATA(c) + i * sizeof(int),
				       sizeof(int));
		}
	}
	buf[n] = '\0';
	if (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) {
		sd->st.refused += nfds;
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
	} else {
		handle_message(sd, buf, sender, fds, nfds);
	}
	pthread_cond_broadcast(&sd->cv);
	if (sd->o.test_hold_ms)
		usleep(sd->o.test_hold_ms * 1000);
	__atomic_store_n(&sd->busy, false, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&sd->mu);
}

bool fakesd_busy(const struct fakesd *sd)
{
	return __atomic_load_n(&sd->busy, __ATOMIC_SEQ_CST);
}

static void *serve(void *arg)
{
	struct fakesd *sd = arg;
	struct epoll_event evs[32];

	for (;;) {
		int n = epoll_wait(sd->ep, evs, 32, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return NULL;
		for (int i = 0; i < n; i++) {
			uint64_t id = evs[i].data.u64;

			if (id == EV_WAKE)
				return NULL;
			if (id == EV_SOCK) {
				read_notify(sd);
				continue;
			}
			pthread_mutex_lock(&sd->mu);
			if (id & EV_MAIN) {
				if ((pid_t)(id & ~EV_MAIN) == sd->main_pid) {
					epoll_ctl(sd->ep, EPOLL_CTL_DEL,
						  sd->main_pidfd, NULL);
					sd->main_exited = true;
				}
			} else {
				for (size_t k = 0; k < sd->n; k++) {
					if (sd->store[k].id == id) {
						drop_at(sd, k);
						sd->st.hangups++;
						break;
					}
				}
			}
			pthread_cond_broadcast(&sd->cv);
			pthread_mutex_unlock(&sd->mu);
		}
	}
}

int fakesd_new(const struct fakesd_opts *opts, struct fakesd **ret)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct fakesd *sd;
	int one = 1, rcv = 4 << 20, r;

	sd = calloc(1, sizeof(*sd));
	if (!sd)
		return -ENOMEM;
	sd->o = *opts;
	snprintf(sd->listen_name, sizeof(sd->listen_name), "%s",
		 opts->listen_name ? opts->listen_name : "rdmabrokerd.socket");
	sd->o.listen_name = sd->listen_name;
	sd->sock = sd->ep = sd->wake = sd->main_pidfd = -1;
	mu_init(&sd->mu);
	pthread_cond_init(&sd->cv, NULL);
	sd->addr.sun_family = AF_UNIX;
	if ((size_t)snprintf(sd->addr.sun_path, sizeof(sd->addr.sun_path),
			     "%s/notify",
			     opts->dir) >= sizeof(sd->addr.sun_path)) {
		r = err_out(-ENAMETOOLONG, opts->dir);
		goto fail;
	}
	/* systemd is the reaper of what its services leave: a re-executed
	 * daemon's new process must be ours to wait for. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	sd->sock =
		socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	sd->ep = epoll_create1(EPOLL_CLOEXEC);
	sd->wake = eventfd(0, EFD_CLOEXEC);
	if (sd->sock < 0 || sd->ep < 0 || sd->wake < 0) {
		r = err_out(-errno, "socket/epoll/eventfd");
		goto fail;
	}
	unlink(sd->addr.sun_path);
	if (bind(sd->sock, (struct sockaddr *)&sd->addr, sizeof(sd->addr)) <
		    0 ||
	    setsockopt(sd->sock, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) <
		    0) {
		r = err_out(-errno, sd->addr.sun_path);
		goto fail;
	}
	setsockopt(sd->sock, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	ev.data.u64 = EV_SOCK;
	epoll_ctl(sd->ep, EPOLL_CTL_ADD, sd->sock, &ev);
	ev.data.u64 = EV_WAKE;
	epoll_ctl(sd->ep, EPOLL_CTL_ADD, sd->wake, &ev);
	r = -pthread_create(&sd->thread, NULL, serve, sd);
	if (r < 0) {
		err_out(r, "pthread_create");
		goto fail;
	}
	sd->thread_up = true;
	pthread_once(&atfork_once, atfork_install);
	pthread_mutex_lock(&all_mu);
	sd->next = all_head;
	all_head = sd;
	pthread_mutex_unlock(&all_mu);
	*ret = sd;
	return 0;
fail:
	fakesd_free(sd);
	return r;
}

void fakesd_free(struct fakesd *sd)
{
	if (!sd)
		return;
	if (sd->main_pid > 0) {
		kill(sd->main_pid, SIGKILL);
		fakesd_wait_exit(sd, 5000);
	}
	if (sd->thread_up) {
		uint64_t one = 1;

		if (write(sd->wake, &one, sizeof(one)) != sizeof(one))
			abort();
		pthread_join(sd->thread, NULL);
	}
	pthread_mutex_lock(&all_mu);
	for (struct fakesd **p = &all_head; *p; p = &(*p)->next) {
		if (*p == sd) {
			*p = sd->next;
			break;
		}
	}
	pthread_mutex_unlock(&all_mu);
	fakesd_discard(sd);
	free(sd->store);
	if (sd->sock >= 0) {
		close(sd->sock);
		unlink(sd->addr.sun_path);
	}
	if (sd->ep >= 0)
		close(sd->ep);
	if (sd->wake >= 0)
		close(sd->wake);
	if (sd->main_pidfd >= 0)
		close(sd->main_pidfd);
	pthread_cond_destroy(&sd->cv);
	pthread_mutex_destroy(&sd->mu);
	free(sd);
}

/* Decimal @v into @p (async-signal-safe: used between fork and exec). */
static void put_num(char *p, long v)
{
	char tmp[24];
	int n = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) > 0);
	while (n)
		*p++ = tmp[--n];
	*p = '\0';
}

static bool env_ours(const char *e)
{
	static const char *const keys[] = { "NOTIFY_SOCKET=", "LISTEN_FDS=",
					    "LISTEN_PID=",    "LISTEN_FDNAMES=",
					    "WATCHDOG_USEC=", "WATCHDOG_PID=" };

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strncmp(e, keys[i], strlen(keys[i])) == 0)
			return true;
	return false;
}

/* The order the store is handed over: systemd 252's (newest first, as
 * tests/vm/suite.sh's fdstore section shows), or a seeded shuffle. */
static void pass_order(struct fakesd *sd, size_t *idx)
{
	unsigned int s = sd->o.shuffle_seed;

	for (size_t i = 0; i < sd->n; i++)
		idx[i] = sd->n - 1 - i;
	if (!s)
		return;
	for (size_t i = sd->n; i > 1; i--) {
		size_t j = (size_t)rand_r(&s) % i, t = idx[i - 1];

		idx[i - 1] = idx[j];
		idx[j] = t;
	}
}

int fakesd_start(struct fakesd *sd, char *const argv[], const char *log_path)
{
	char **envp = NULL, *names = NULL, nfds_env[32], pid_env[32],
	     wd_env[48], wdpid_env[32], notify_env[128];
	size_t nenv = 0, nf = 0, *idx = NULL, namelen = 1, pos = 0;
	int *src = NULL, logfd = -1, pidfd, r;
	struct epoll_event ev = { .events = EPOLLIN };
	pid_t pid;

	pthread_mutex_lock(&sd->mu);
	if (sd->main_pid > 0) {
		r = -EBUSY;
		goto out;
	}
	while (environ[nenv])
		nenv++;
	envp = calloc(nenv + 8, sizeof(*envp));
	src = calloc(sd->n + 1, sizeof(*src));
	idx = calloc(sd->n + 1, sizeof(*idx));
	for (size_t i = 0; i < sd->n; i++)
		namelen += strlen(sd->store[i].name) + 1;
	namelen += strlen(sd->listen_name) + 16;
	names = malloc(namelen + sizeof("LISTEN_FDNAMES="));
	if (!envp || !src || !idx || !names) {
		r = -ENOMEM;
		goto out;
	}
	pos = (size_t)sprintf(names, "LISTEN_FDNAMES=");
	if (sd->o.listen_fd >= 0) {
		src[nf++] = sd->o.listen_fd;
		pos += (size_t)sprintf(names + pos, "%s", sd->listen_name);
	}
	pass_order(sd, idx);
	for (size_t i = 0; i < sd->n; i++) {
		src[nf] = sd->store[idx[i]].fd;
		pos += (size_t)sprintf(names + pos, "%s%s", nf ? ":" : "",
				       sd->store[idx[i]].name);
		nf++;
	}
	nenv = 0;
	for (char **e = environ; *e; e++)
		if (!env_ours(*e))
			envp[nenv++] = *e;
	snprintf(notify_env, sizeof(notify_env), "NOTIFY_SOCKET=%s",
		 sd->addr.sun_path);
	envp[nenv++] = notify_env;
	strcpy(pid_env, "LISTEN_PID=");
	strcpy(wdpid_env, "WATCHDOG_PID=");
	if (nf) {
		snprintf(nfds_env, sizeof(nfds_env), "LISTEN_FDS=%zu", nf);
		envp[nenv++] = nfds_env;
		envp[nenv++] = pid_env;
		envp[nenv++] = names;
	}
	if (sd->o.watchdog_usec) {
		snprintf(wd_env, sizeof(wd_env), "WATCHDOG_USEC=%llu",
			 sd->o.watchdog_usec);
		envp[nenv++] = wd_env;
		envp[nenv++] = wdpid_env;
	}
	if (log_path) {
		logfd = open(log_path,
			     O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (logfd < 0) {
			r = err_out(-errno, log_path);
			goto out;
		}
	}
	pid = fork();
	if (pid < 0) {
		r = err_out(-errno, "fork");
		goto out;
	}
	if (pid == 0) {
		/* Async-signal-safe calls only: the harness has a thread. */
		sigset_t all;
		int hi = 3 + (int)nf;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		if (logfd >= 0 && (dup2(logfd, 1) < 0 || dup2(logfd, 2) < 0))
			_exit(127);
		for (size_t i = 0; i < nf; i++) {
			src[i] = fcntl(src[i], F_DUPFD, hi);
			if (src[i] < 0)
				_exit(127);
			if (src[i] >= hi)
				hi = src[i] + 1;
		}
		for (size_t i = 0; i < nf; i++)
			if (dup2(src[i], 3 + (int)i) < 0)
				_exit(127);
		syscall(SYS_close_range, 3 + (unsigned int)nf, ~0U, 0);
		put_num(pid_env + strlen("LISTEN_PID="), (long)getpid());
		put_num(wdpid_env + strlen("WATCHDOG_PID="), (long)getpid());
		execve(argv[0], argv, envp);
		_exit(127);
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		r = err_out(-errno, "pidfd_open");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		goto out;
	}
	if (sd->main_pidfd >= 0)
		close(sd->main_pidfd);
	sd->main_pidfd = pidfd;
	sd->main_pid = sd->spawned = pid;
	sd->main_exited = false;
	sd->st.ready = sd->st.stopping = false;
	sd->st.starts++;
	ev.data.u64 = EV_MAIN | (uint64_t)pid;
	epoll_ctl(sd->ep, EPOLL_CTL_ADD, pidfd, &ev);
	r = 0;
out:
	pthread_mutex_unlock(&sd->mu);
	if (logfd >= 0)
		close(logfd);
	free(envp);
	free(src);
	free(idx);
	free(names);
	return r;
}

static void deadline(struct timespec *ts, int timeout_ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += timeout_ms / 1000;
	ts->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

int fakesd_wait_ready(struct fakesd *sd, int timeout_ms)
{
	struct timespec ts;
	int r = 0;

	deadline(&ts, timeout_ms);
	pthread_mutex_lock(&sd->mu);
	while (!sd->st.ready && !sd->main_exited && r == 0)
		r = pthread_cond_timedwait(&sd->cv, &sd->mu, &ts);
	if (sd->st.ready)
		r = 0;
	else if (sd->main_exited)
		r = -ECHILD;
	else
		r = -ETIMEDOUT;
	pthread_mutex_unlock(&sd->mu);
	return r;
}

void fakesd_reset_ready(struct fakesd *sd)
{
	pthread_mutex_lock(&sd->mu);
	sd->st.ready = false;
	pthread_mutex_unlock(&sd->mu);
}

pid_t fakesd_main_pid(const struct fakesd *sd)
{
	return sd->main_pid;
}

int fakesd_kill(struct fakesd *sd, int sig)
{
	if (sd->main_pid <= 0)
		return -ESRCH;
	return kill(sd->main_pid, sig) < 0 ? -errno : 0;
}

int fakesd_wait_exit(struct fakesd *sd, int timeout_ms)
{
	struct pollfd p = { .events = POLLIN };
	int status = 0, r;
	pid_t pid;

	pthread_mutex_lock(&sd->mu);
	pid = sd->main_pid;
	p.fd = sd->main_pidfd;
	pthread_mutex_unlock(&sd->mu);
	if (pid <= 0)
		return -ESRCH;
	/* MAINPID= moved it: follow the new main process. */
	if (pid != sd->spawned) {
		int fd = (int)syscall(SYS_pidfd_open, pid, 0);

		if (fd < 0)
			goto gone;
		close(p.fd);
		p.fd = sd->main_pidfd = fd;
	}
	r = poll(&p, 1, timeout_ms);
	if (r == 0)
		return -ETIMEDOUT;
gone:
	if (waitpid(pid, &status, 0) < 0)
		status = 0;
	/* The first process, when MAINPID= replaced it, is ours to reap. */
	if (sd->spawned != pid)
		waitpid(sd->spawned, NULL, WNOHANG);
	/* As systemd, which dispatches notifications before SIGCHLD: what
	 * the process sent before it died is its main process's still. */
	pthread_mutex_lock(&sd->mu);
	for (int i = 0; i < 1000; i++) {
		struct pollfd q = { .fd = sd->sock, .events = POLLIN };

		if (poll(&q, 1, 0) <= 0)
			break;
		pthread_mutex_unlock(&sd->mu);
		usleep(1000);
		pthread_mutex_lock(&sd->mu);
	}
	sd->main_pid = sd->spawned = 0;
	sd->main_exited = true;
	pthread_mutex_unlock(&sd->mu);
	return status;
}

void fakesd_discard(struct fakesd *sd)
{
	pthread_mutex_lock(&sd->mu);
	while (sd->n)
		drop_at(sd, sd->n - 1);
	pthread_mutex_unlock(&sd->mu);
}

int fakesd_plant(struct fakesd *sd, const char *name, int fd)
{
	int d = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	size_t before;

	if (d < 0)
		return -errno;
	pthread_mutex_lock(&sd->mu);
	before = sd->n;
	store_one(sd, d, name_valid(name) ? name : "stored", false);
	pthread_mutex_unlock(&sd->mu);
	return sd->n > before ? 0 : -ENOSPC;
}

int fakesd_drop(struct fakesd *sd, const char *name)
{
	int n = 0;

	pthread_mutex_lock(&sd->mu);
	for (size_t i = sd->n; i-- > 0;) {
		if (strcmp(sd->store[i].name, name) == 0) {
			drop_at(sd, i);
			n++;
		}
	}
	pthread_mutex_unlock(&sd->mu);
	return n;
}

size_t fakesd_store_count(struct fakesd *sd, const char *name)
{
	size_t c = 0;

	pthread_mutex_lock(&sd->mu);
	for (size_t i = 0; i < sd->n; i++)
		c += !name || strcmp(sd->store[i].name, name) == 0;
	pthread_mutex_unlock(&sd->mu);
	return c;
}

int fakesd_store_get(struct fakesd *sd, size_t i, char *name, size_t len,
		     int *ret_fd)
{
	int r = -ENOENT, fd;

	pthread_mutex_lock(&sd->mu);
	if (i < sd->n) {
		fd = fcntl(sd->store[i].fd, F_DUPFD_CLOEXEC, 3);
		if (fd < 0) {
			r = -errno;
		} else {
			snprintf(name, len, "%s", sd->store[i].name);
			*ret_fd = fd;
			r = 0;
		}
	}
	pthread_mutex_unlock(&sd->mu);
	return r;
}

size_t fakesd_events(struct fakesd *sd)
{
	size_t n;

	pthread_mutex_lock(&sd->mu);
	n = sd->n_ev;
	pthread_mutex_unlock(&sd->mu);
	return n;
}

int fakesd_event(struct fakesd *sd, size_t i, char *ret_op, char *name,
		 size_t len)
{
	int ret = -ENOENT;

	pthread_mutex_lock(&sd->mu);
	if (i < sd->n_ev && i + FAKESD_EVENTS >= sd->n_ev) {
		*ret_op = sd->ev[i % FAKESD_EVENTS].op;
		snprintf(name, len, "%s", sd->ev[i % FAKESD_EVENTS].name);
		ret = 0;
	}
	pthread_mutex_unlock(&sd->mu);
	return ret;
}

void fakesd_stats(struct fakesd *sd, struct fakesd_stats *ret)
{
	pthread_mutex_lock(&sd->mu);
	*ret = sd->st;
	pthread_mutex_unlock(&sd->mu);
}
