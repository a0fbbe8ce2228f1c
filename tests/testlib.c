// SPDX-License-Identifier: MIT
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
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

#include "tests/testlib.h"

static char *tl_topdir;
static pid_t tl_owner;

/* The runner was told to stop (make's harness, a timeout): remove the
 * suite's directory on the way out. Forked tests leave it alone. */
static void tl_fatal_signal(int sig)
{
	if (getpid() == tl_owner && tl_topdir)
		tl_rmtree(tl_topdir);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void tl_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void tl_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "testlib[%d]: %s\n", (int)getpid(), line);
}

int tl_init(const char *name)
{
	const char *tmp = getenv("TMPDIR");
	char path[PATH_MAX];

	if (!tmp || !*tmp)
		tmp = "/tmp";
	/* Socket paths must fit in sun_path: a short base, never the build
	 * directory (distcheck's is long). */
	if (strlen(tmp) > 40)
		tmp = "/tmp";
	snprintf(path, sizeof(path), "%s/rdmab-%s-XXXXXX", tmp, name);
	if (!mkdtemp(path)) {
		tl_log("mkdtemp %s: %s", path, strerror(errno));
		return -errno;
	}
	tl_topdir = strdup(path);
	if (!tl_topdir)
		return -ENOMEM;
	tl_owner = getpid();
	signal(SIGTERM, tl_fatal_signal);
	signal(SIGINT, tl_fatal_signal);
	signal(SIGHUP, tl_fatal_signal);
	return 0;
}

void tl_fini(void)
{
	if (!tl_topdir)
		return;
	tl_rmtree(tl_topdir);
	free(tl_topdir);
	tl_topdir = NULL;
}

char *tl_mkdtemp(void)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/t-XXXXXX",
		 tl_topdir ? tl_topdir : "/tmp");
	if (!mkdtemp(path)) {
		tl_log("mkdtemp %s: %s", path, strerror(errno));
		return NULL;
	}
	return strdup(path);
}

static int tl_rm_one(const char *path, const struct stat *st, int type,
		     struct FTW *ftw)
{
	if (remove(path) < 0 && errno != ENOENT)
		tl_log("remove %s: %s", path, strerror(errno));
	return 0;
}

int tl_rmtree(const char *path)
{
	if (nftw(path, tl_rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0)
		return errno == ENOENT ? 0 : -errno;
	return 0;
}

int tl_cgroup_move(const char *dir, pid_t pid)
{
	char procs[PATH_MAX + 32];
	FILE *f;
	int ret = 0;

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	f = fopen(procs, "we");
	if (!f)
		return -errno;
	if (fprintf(f, "%d\n", (int)pid) < 0)
		ret = -EIO;
	/* The kernel says no at the write, which fclose() does. */
	if (fclose(f) != 0 && ret == 0)
		ret = -errno;
	return ret;
}

int tl_count_in_file(const char *path, const char *needle)
{
	static char buf[1 << 20];
	FILE *f = fopen(path, "re");
	size_t len;
	int n = 0;

	if (!f)
		return -errno;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	for (char *p = buf; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

int tl_count_fds(pid_t pid)
{
	char path[64];
	struct dirent *de;
	DIR *dir;
	int n = 0;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/fd");
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((de = readdir(dir)))
		if (de->d_name[0] != '.')
			n++;
	closedir(dir);
	/* Our own listing holds one descriptor while it runs. */
	return pid ? n : n - 1;
}

void tl_sleep_ms(unsigned int ms)
{
	struct timespec ts = {
		.tv_sec = ms / 1000,
		.tv_nsec = (long)(ms % 1000) * 1000000,
	};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int64_t tl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *tl_daemon_path(void)
{
	const char *p = getenv("RDMABROKERD");

	if (p && *p)
		return p;
	if (access("./rdmabrokerd", X_OK) == 0)
		return "./rdmabrokerd";
	return "../rdmabrokerd";
}

const char *tl_ctl_path(void)
{
	const char *p = getenv("RDMABROKERCTL");

	if (p && *p)
		return p;
	if (access("./rdmabrokerctl", X_OK) == 0)
		return "./rdmabrokerctl";
	return "../rdmabrokerctl";
}

static void tl_close_from(int lowfd)
{
#ifdef SYS_close_range
	if (syscall(SYS_close_range, (unsigned int)lowfd, ~0U, 0) == 0)
		return;
#endif
	for (int fd = lowfd; fd < 65536; fd++)
		close(fd);
}

pid_t tl_daemon_spawn(const char *dir, const char *sock,
		      const char *const *extra_args)
{
	const char *level = getenv("TL_DAEMON_LOG_LEVEL");
	const char *argv[64];
	pid_t parent = getpid();
	unsigned int n = 0;
	pid_t pid;

	if (!level || !*level)
		level = "warning";
	argv[n++] = tl_daemon_path();
	argv[n++] = "--device";
	argv[n++] = "soft";
	argv[n++] = "--socket";
	argv[n++] = sock;
	argv[n++] = "--runtime-dir";
	argv[n++] = dir;
	argv[n++] = "--log-level";
	argv[n++] = level;
	for (; extra_args && *extra_args && n < 63; extra_args++)
		argv[n++] = *extra_args;
	argv[n] = NULL;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		sigset_t none;

		/* Die with the test, also when it fails or times out. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		unsetenv("LISTEN_FDS");
		unsetenv("LISTEN_PID");
		unsetenv("LISTEN_FDNAMES");
		unsetenv("NOTIFY_SOCKET");
		unsetenv("WATCHDOG_USEC");
		unsetenv("WATCHDOG_PID");
		tl_close_from(3);
		execv(argv[0], (char *const *)argv);
		fprintf(stderr, "testlib: exec %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	return pid;
}

pid_t tl_spawn_sleeper(void)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

int tl_wait_pid(pid_t pid, int timeout_ms, int *ret_status)
{
	int64_t deadline = tl_now_ms() + timeout_ms;

	for (;;) {
		int status;
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid) {
			if (ret_status)
				*ret_status = status;
			return status;
		}
		if (r < 0 && errno != EINTR)
			return -errno;
		if (tl_now_ms() >= deadline)
			return -ETIMEDOUT;
		tl_sleep_ms(5);
	}
}

/* Has @pid exited (without reaping it)? */
static bool tl_pid_exited(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return errno == ECHILD ? kill(pid, 0) < 0 : false;
	return si.si_pid == pid;
}

int tl_wait_socket(pid_t pid, const char *sock, int timeout_ms)
{
	int64_t deadline = tl_now_ms() + timeout_ms;

	for (;;) {
		int fd;

		if (tl_pid_exited(pid)) {
			tl_log("daemon %d exited before listening on %s",
			       (int)pid, sock);
			return -ECHILD;
		}
		fd = tl_raw_connect(sock);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
		if (tl_now_ms() >= deadline) {
			tl_log("daemon %d: no socket %s after %d ms", (int)pid,
			       sock, timeout_ms);
			return -ETIMEDOUT;
		}
		tl_sleep_ms(5);
	}
}

bool tl_daemon_alive(struct tl_daemon *d)
{
	return !d->reaped && d->pid > 0 && kill(d->pid, 0) == 0 &&
	       !tl_pid_exited(d->pid);
}

int tl_connect(const char *sock, int timeout_ms, struct ibc_client **ret)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET,
		.socket_path = sock,
	};

	if (timeout_ms) {
		attr.comp_mask |= IBC_CONNECT_ATTR_TIMEOUT;
		attr.timeout_ms = timeout_ms;
	}
	return ibc_connect(&attr, ret);
}

int tl_daemon_settle(struct tl_daemon *d, int timeout_ms,
		     unsigned int *ret_clients)
{
	int64_t deadline = tl_now_ms() + timeout_ms;
	struct ibc_client *cl;
	unsigned int clients = 0;
	int n = -EAGAIN, prev = -1, ret;

	/* The checker may be refused while clients that just left still
	 * count against a connection limit. */
	while ((ret = tl_connect(d->sock, TL_WAIT_MS, &cl)) < 0) {
		if (tl_now_ms() >= deadline || !tl_daemon_alive(d)) {
			tl_log("settle: connect to %s: %s (%s)", d->sock,
			       strerror(-ret), ibc_last_error());
			return ret;
		}
		tl_sleep_ms(20);
	}
	for (;;) {
		struct ibc_status st;

		ret = ibc_status(cl, &st, sizeof(st));
		if (ret < 0) {
			tl_log("settle: status: %s (%s)", strerror(-ret),
			       ibc_last_error());
			n = ret;
			break;
		}
		clients = st.clients;
		n = tl_count_fds(d->pid);
		if (clients == 1) {
			/* Before the baseline is known, take a count that
			 * holds still. */
			if (d->baseline_fds < 0 ? n == prev :
						  n == d->baseline_fds)
				break;
		}
		prev = n;
		if (tl_now_ms() >= deadline)
			break;
		tl_sleep_ms(20);
	}
	ibc_disconnect(cl);
	if (ret_clients)
		*ret_clients = clients;
	return n;
}

int tl_daemon_start(struct tl_daemon *d, const char *const *extra_args)
{
	unsigned int clients;
	int ret;

	memset(d, 0, sizeof(*d));
	d->pid = -1;
	d->baseline_fds = -1;
	d->dir = tl_mkdtemp();
	if (!d->dir)
		return -ENOMEM;
	snprintf(d->sock, sizeof(d->sock), "%s/sock", d->dir);
	d->pid = tl_daemon_spawn(d->dir, d->sock, extra_args);
	if (d->pid < 0) {
		ret = d->pid;
		goto fail;
	}
	ret = tl_wait_socket(d->pid, d->sock, 10000);
	if (ret < 0)
		goto fail;
	ret = tl_daemon_settle(d, TL_WAIT_MS, &clients);
	if (ret < 0)
		goto fail;
	if (clients != 1) {
		tl_log("daemon %d: %u clients at start", (int)d->pid, clients);
		ret = -EPROTO;
		goto fail;
	}
	d->baseline_fds = ret;
	return 0;

fail:
	tl_daemon_stop(d);
	return ret;
}

int tl_write_conf(const char *path, const char *text)
{
	char tmp[PATH_MAX];
	size_t len = strlen(text);
	int fd, ret = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.new", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		tl_log("%s: %s", tmp, strerror(errno));
		return ret;
	}
	if (write(fd, text, len) != (ssize_t)len)
		ret = errno ? -errno : -EIO;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path) < 0)
		ret = -errno;
	if (ret < 0) {
		tl_log("cannot write %s: %s", path, strerror(-ret));
		unlink(tmp);
	}
	return ret;
}

/* Send stderr to @log_path, appended: the saved stderr for
 * tl_stderr_back(), or -errno. */
static int tl_stderr_to(const char *log_path)
{
	int fd =
		open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	int saved, ret;

	if (fd < 0)
		return -errno;
	fflush(stderr);
	saved = fcntl(2, F_DUPFD_CLOEXEC, 3);
	if (saved < 0 || dup2(fd, 2) < 0) {
		ret = -errno;
		close(fd);
		if (saved >= 0)
			close(saved);
		return ret;
	}
	close(fd);
	return saved;
}

/* Give stderr back (@saved < 0: it was not moved). */
static void tl_stderr_back(int saved)
{
	if (saved < 0)
		return;
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
}

pid_t tl_daemon_spawn_logged(const char *dir, const char *sock,
			     const char *const *extra_args,
			     const char *log_path)
{
	int saved = tl_stderr_to(log_path);
	pid_t pid;

	if (saved < 0)
		return saved;
	pid = tl_daemon_spawn(dir, sock, extra_args);
	tl_stderr_back(saved);
	return pid;
}

int tl_daemon_start_conf(struct tl_daemon *d, const char *conf,
			 const char *conf_path, const char *const *extra_args,
			 const char *log_path)
{
	static char fresh[PATH_MAX];
	const char *args[64];
	size_t n = 0;
	int saved = -1, ret;

	if (!conf_path) {
		char *dir = tl_mkdtemp();

		if (!dir)
			return -ENOMEM;
		snprintf(fresh, sizeof(fresh), "%s/rdmabroker.conf", dir);
		free(dir);
		conf_path = fresh;
	}
	ret = tl_write_conf(conf_path, conf);
	if (ret < 0)
		return ret;
	args[n++] = "--config";
	args[n++] = conf_path;
	for (; extra_args && *extra_args; extra_args++) {
		if (n == sizeof(args) / sizeof(args[0]) - 1)
			return -E2BIG;
		args[n++] = *extra_args;
	}
	args[n] = NULL;
	if (log_path) {
		saved = tl_stderr_to(log_path);
		if (saved < 0)
			return saved;
	}
	ret = tl_daemon_start(d, args);
	tl_stderr_back(saved);
	return ret;
}

int tl_fixture_start(struct tl_daemon *d, const char *conf,
		     struct ibc_client **ret_client, struct ibc_ctx **ret_ctx)
{
	struct ibc_client *cl = NULL;
	struct ibc_ctx *ctx = NULL;
	int ret;

	ret = tl_daemon_start_conf(d, conf, NULL, NULL, NULL);
	if (ret < 0) {
		tl_log("cannot start %s: %s", tl_daemon_path(), strerror(-ret));
		return ret;
	}
	ret = tl_connect(d->sock, 20000, &cl);
	if (ret == 0)
		ret = ibc_open(cl, NULL, &ctx);
	if (ret < 0) {
		tl_log("%s: %s", cl ? "open" : "connect", ibc_last_error());
		ibc_disconnect(cl);
		tl_daemon_stop(d);
		return ret;
	}
	*ret_client = cl;
	*ret_ctx = ctx;
	return 0;
}

int tl_daemon_share(const struct tl_daemon *d)
{
	char *top = strdup(d->dir);
	char *slash = top ? strrchr(top, '/') : NULL;
	int ret = 0;

	if (!top)
		return -ENOMEM;
	if (chmod(d->dir, 0711) < 0)
		ret = -errno;
	if (slash && slash != top)
		*slash = '\0';
	if (!ret && slash && chmod(top, 0711) < 0)
		ret = -errno;
	free(top);
	return ret;
}

int tl_daemon_stop(struct tl_daemon *d)
{
	int ret = 0;

	if (d->pid > 0 && !d->reaped) {
		kill(d->pid, SIGTERM);
		ret = tl_wait_pid(d->pid, TL_WAIT_MS, &d->status);
		if (ret == -ETIMEDOUT) {
			tl_log("daemon %d ignored SIGTERM; killing it",
			       (int)d->pid);
			kill(d->pid, SIGKILL);
			ret = tl_wait_pid(d->pid, TL_WAIT_MS, &d->status);
		}
		if (ret >= 0)
			d->reaped = true;
	} else if (d->reaped) {
		ret = d->status;
	}
	if (d->dir) {
		tl_rmtree(d->dir);
		free(d->dir);
		d->dir = NULL;
	}
	return ret;
}

int tl_raw_connect(const char *path)
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
	return fd;
}

int tl_raw_send(int sock, const void *buf, size_t len, const int *fds,
		unsigned int nfds, int flags)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	char *cbuf = NULL;
	ssize_t n;

	if (nfds) {
		struct cmsghdr *cm;

		cbuf = calloc(1, CMSG_SPACE(sizeof(int) * nfds));
		if (!cbuf)
			return -ENOMEM;
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL | flags);
	while (n < 0 && errno == EINTR);
	free(cbuf);
	if (n < 0)
		return -errno;
	return 0;
}

int tl_send_request(int sock, const Rdmab__Request *req, const int *fds,
		    unsigned int nfds)
{
	struct tl_buf b = { 0 };
	int ret;

	tl_pb_message(&b, &req->base);
	ret = tl_raw_send(sock, b.p, b.len, fds, nfds, 0);
	tl_buf_free(&b);
	return ret;
}

int tl_recv_msg(int sock, int timeout_ms, Rdmab__DaemonMessage **ret)
{
	struct pollfd p = { .fd = sock, .events = POLLIN };
	struct wire_fds fds;
	uint8_t *buf;
	int n;

	do
		n = poll(&p, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ETIMEDOUT;
	buf = malloc(WIRE_MAX_PACKET);
	if (!buf)
		return -ENOMEM;
	n = wire_recv(sock, buf, WIRE_MAX_PACKET, &fds, MSG_DONTWAIT);
	if (n <= 0) {
		free(buf);
		return n;
	}
	wire_fds_close(&fds);
	*ret = rdmab__daemon_message__unpack(NULL, (size_t)n, buf);
	free(buf);
	return *ret ? 1 : -EBADMSG;
}

int tl_recv_reply_error(int sock, uint64_t serial, int timeout_ms)
{
	Rdmab__DaemonMessage *m;
	int ret;

	ret = tl_recv_msg(sock, timeout_ms, &m);
	if (ret == 0)
		return -ECONNRESET;
	if (ret < 0)
		return ret;
	if (m->kind_case != RDMAB__DAEMON_MESSAGE__KIND_REPLY) {
		tl_log("expected a reply to serial %llu, got kind %d",
		       (unsigned long long)serial, (int)m->kind_case);
		ret = -EPROTO;
	} else if (m->reply->serial != serial) {
		tl_log("expected a reply to serial %llu, got serial %llu "
		       "(error %d: %s)",
		       (unsigned long long)serial,
		       (unsigned long long)m->reply->serial,
		       (int)m->reply->error, m->reply->message);
		ret = -EPROTO;
	} else {
		ret = m->reply->error;
	}
	rdmab__daemon_message__free_unpacked(m, NULL);
	return ret;
}

int tl_raw_hello(int sock, uint64_t serial)
{
	Rdmab__HelloRequest hello = RDMAB__HELLO_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	int ret;

	hello.library_version = (char *)"testlib";
	hello.pid = (uint32_t)getpid();
	req.version = WIRE_PROTOCOL_VERSION;
	req.serial = serial;
	req.body_case = RDMAB__REQUEST__BODY_HELLO;
	req.hello = &hello;
	ret = tl_send_request(sock, &req, NULL, 0);
	if (ret < 0)
		return ret;
	ret = tl_recv_msg(sock, TL_WAIT_MS, &m);
	if (ret == 0)
		return -ECONNRESET;
	if (ret < 0)
		return ret;
	if (m->kind_case != RDMAB__DAEMON_MESSAGE__KIND_REPLY ||
	    m->reply->serial != serial || m->reply->error ||
	    m->reply->body_case != RDMAB__REPLY__BODY_HELLO)
		ret = -EPROTO;
	else
		ret = 0;
	rdmab__daemon_message__free_unpacked(m, NULL);
	return ret;
}

int tl_raw_hello_version(int sock, uint64_t serial, const char *library_version,
			 char *ret_message, size_t size)
{
	Rdmab__HelloRequest hello = RDMAB__HELLO_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	int ret;

	hello.library_version = (char *)library_version;
	hello.pid = (uint32_t)getpid();
	req.version = WIRE_PROTOCOL_VERSION;
	req.serial = serial;
	req.body_case = RDMAB__REQUEST__BODY_HELLO;
	req.hello = &hello;
	ret = tl_send_request(sock, &req, NULL, 0);
	if (ret < 0)
		return ret;
	ret = tl_recv_msg(sock, TL_WAIT_MS, &m);
	if (ret == 0)
		return -ECONNRESET;
	if (ret < 0)
		return ret;
	if (m->kind_case != RDMAB__DAEMON_MESSAGE__KIND_REPLY ||
	    m->reply->serial != serial || m->reply->error < 0) {
		ret = -EPROTO;
	} else {
		ret = m->reply->error;
		if (ret == 0 && m->reply->body_case != RDMAB__REPLY__BODY_HELLO)
			ret = -EPROTO;
		if (ret > 0 && ret_message)
			snprintf(ret_message, size, "%s", m->reply->message);
	}
	rdmab__daemon_message__free_unpacked(m, NULL);
	return ret;
}

int tl_named_client_start(struct tl_named_client *c, const char *sock,
			  const char *comm)
{
	struct pollfd pfd = { .events = POLLIN };
	int ready[2], hold[2], ret = 0;
	pid_t parent = getpid();

	c->pid = 0;
	c->fd = -1;
	if (pipe2(ready, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(hold, O_CLOEXEC) < 0) {
		ret = -errno;
		close(ready[0]);
		close(ready[1]);
		return ret;
	}
	fflush(stdout);
	fflush(stderr);
	c->pid = fork();
	if (c->pid == 0) {
		int r = fcntl(ready[1], F_DUPFD, 10);
		int h = fcntl(hold[0], F_DUPFD, 10);
		char b;
		int fd;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		/* Only its pipes, as 3 and 4: a copy of another test socket
		 * would keep that connection open. */
		if (r < 0 || h < 0 || dup2(r, 3) < 0 || dup2(h, 4) < 0)
			_exit(127);
		tl_close_from(5);
		prctl(PR_SET_NAME, comm);
		fd = tl_raw_connect(sock);
		ret = fd < 0 ? fd : tl_raw_hello(fd, 1);
		if (write(3, &ret, sizeof(ret)) != sizeof(ret))
			_exit(127);
		while (read(4, &b, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	if (c->pid < 0)
		ret = -errno;
	close(ready[1]);
	close(hold[0]);
	if (ret < 0) {
		c->pid = 0;
		close(ready[0]);
		close(hold[1]);
		return ret;
	}
	c->fd = hold[1];
	pfd.fd = ready[0];
	if (poll(&pfd, 1, TL_WAIT_MS) != 1)
		ret = -ETIMEDOUT;
	else if (read(ready[0], &ret, sizeof(ret)) != sizeof(ret))
		ret = -ECHILD;
	close(ready[0]);
	if (ret < 0)
		tl_named_client_stop(c);
	return ret;
}

void tl_named_client_stop(struct tl_named_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	if (c->pid > 0 && tl_wait_pid(c->pid, TL_WAIT_MS, NULL) == -ETIMEDOUT) {
		kill(c->pid, SIGKILL);
		tl_wait_pid(c->pid, TL_WAIT_MS, NULL);
	}
	c->pid = 0;
}

int tl_raw_ping(int sock, uint64_t serial, const void *payload, size_t len)
{
	ProtobufCBinaryData ping = { 0 };
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	const Rdmab__Reply *r;
	int ret;

	ping.data = (uint8_t *)payload;
	ping.len = len;
	req.version = WIRE_PROTOCOL_VERSION;
	req.serial = serial;
	req.body_case = RDMAB__REQUEST__BODY_PING;
	req.ping = ping;
	ret = tl_send_request(sock, &req, NULL, 0);
	if (ret < 0)
		return ret;
	ret = tl_recv_msg(sock, TL_WAIT_MS, &m);
	if (ret == 0)
		return -ECONNRESET;
	if (ret < 0)
		return ret;
	r = m->kind_case == RDMAB__DAEMON_MESSAGE__KIND_REPLY ? m->reply : NULL;
	if (!r || r->serial != serial)
		ret = -EPROTO;
	else if (r->error)
		ret = -r->error;
	else if (r->body_case != RDMAB__REPLY__BODY_PING ||
		 r->ping.len != len ||
		 (len && memcmp(r->ping.data, payload, len)))
		ret = -EPROTO;
	else
		ret = 0;
	rdmab__daemon_message__free_unpacked(m, NULL);
	return ret;
}

int tl_wait_eof(int sock, int timeout_ms)
{
	int64_t deadline = tl_now_ms() + timeout_ms;

	for (;;) {
		Rdmab__DaemonMessage *m;
		int64_t left = deadline - tl_now_ms();
		int ret;

		if (left < 0)
			left = 0;
		ret = tl_recv_msg(sock, (int)left, &m);
		if (ret == 1) {
			rdmab__daemon_message__free_unpacked(m, NULL);
			continue;
		}
		/* A peer that closed with our packets unread reports
		 * ECONNRESET before the end of stream. */
		if (ret == -ECONNRESET)
			continue;
		/* Packets that do not decode are still packets. */
		if (ret == -EBADMSG || ret == -EPROTO || ret == -EMSGSIZE)
			continue;
		return ret;
	}
}

int tl_pipe(int p[2])
{
	return pipe(p) < 0 ? -errno : 0;
}

void tl_buf_free(struct tl_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

void tl_buf_put(struct tl_buf *b, const void *data, size_t len)
{
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap : 64;

		while (cap < b->len + len)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (!b->p)
			abort();
		b->cap = cap;
	}
	if (len && data)
		memcpy(b->p + b->len, data, len);
	b->len += len;
}

void tl_pb_varint(struct tl_buf *b, uint64_t v)
{
	uint8_t out[10];
	size_t n = 0;

	do {
		out[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			out[n] |= 0x80;
		n++;
	} while (v);
	tl_buf_put(b, out, n);
}

void tl_pb_tag(struct tl_buf *b, uint32_t field, unsigned int wire_type)
{
	tl_pb_varint(b, ((uint64_t)field << 3) | wire_type);
}

void tl_pb_uint(struct tl_buf *b, uint32_t field, uint64_t v)
{
	tl_pb_tag(b, field, 0);
	tl_pb_varint(b, v);
}

void tl_pb_bytes(struct tl_buf *b, uint32_t field, const void *data, size_t len)
{
	tl_pb_tag(b, field, 2);
	tl_pb_varint(b, len);
	tl_buf_put(b, data, len);
}

void tl_pb_message(struct tl_buf *b, const ProtobufCMessage *msg)
{
	size_t len = protobuf_c_message_get_packed_size(msg);
	size_t at = b->len;

	tl_buf_put(b, NULL, len);
	protobuf_c_message_pack(msg, b->p + at);
}

int tl_utf8_char(const char *s, size_t n, uint32_t *ret_cp)
{
	static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	const unsigned char *p = (const unsigned char *)s;
	unsigned int len;
	uint32_t cp;

	if (n == 0)
		return 0;
	if (p[0] < 0x80) {
		*ret_cp = p[0];
		return 1;
	}
	if ((p[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = p[0] & 0x1f;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = p[0] & 0x0f;
	} else if ((p[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = p[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (unsigned int k = 1; k < len; k++) {
		if ((p[k] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[k] & 0x3f);
	}
	if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*ret_cp = cp;
	return (int)len;
}

bool tl_text_safe(const char *s, size_t n, const char *allow, size_t *ret_off)
{
	for (size_t i = 0; i < n;) {
		uint32_t cp = 0;
		int len = tl_utf8_char(s + i, n - i, &cp);
		bool allowed =
			cp && cp < 0x20 && allow && strchr(allow, (int)cp);

		if (!len || (cp < 0x20 && !allowed) ||
		    (cp >= 0x7f && cp <= 0x9f) || cp == 0x2028 ||
		    cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) ||
		    (cp >= 0x2066 && cp <= 0x2069)) {
			*ret_off = i;
			return false;
		}
		i += (size_t)len;
	}
	return true;
}

void tl_rng_seed(struct tl_rng *r, uint64_t seed)
{
	r->s = seed ? seed : 0x9e3779b97f4a7c15ULL;
}

uint64_t tl_rng_next(struct tl_rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dULL;
}

uint32_t tl_rng_below(struct tl_rng *r, uint32_t n)
{
	return n ? (uint32_t)((tl_rng_next(r) >> 32) % n) : 0;
}

void tl_rng_fill(struct tl_rng *r, void *buf, size_t len)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(tl_rng_next(r) >> 56);
}
