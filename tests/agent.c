// SPDX-License-Identifier: MIT
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/agent.h"
#include "tests/testlib.h"

struct agent_req {
	int op;
	uint32_t flags;
	/* 0: no argument (NULL), 1: arg holds one. */
	int has_arg;
	char arg[64];
};

struct agent_cred agent_cred(uid_t uid, gid_t gid, ...)
{
	struct agent_cred c = { .uid = uid, .gid = gid };
	va_list ap;
	gid_t g;

	va_start(ap, gid);
	while ((g = va_arg(ap, gid_t)) != AGENT_END &&
	       c.n_groups < AGENT_MAX_GROUPS)
		c.groups[c.n_groups++] = g;
	va_end(ap);
	return c;
}

/* Close every descriptor from 3 up except @keep (sorted, @n of them). */
static void agent_close_except(const int *keep, size_t n)
{
	unsigned int lo = 3;

	for (size_t i = 0; i <= n; i++) {
		unsigned int hi = i < n ? (unsigned int)keep[i] : ~0U;

		if (hi > lo) {
#ifdef SYS_close_range
			if (syscall(SYS_close_range, lo, hi - 1, 0) < 0)
#endif
				for (unsigned int fd = lo;
				     fd < hi && fd < 65536; fd++)
					close((int)fd);
		}
		if (i < n)
			lo = hi + 1;
	}
}

/* Become @cred; 0 or -errno. Called in the child, with the parent's pid. */
static int agent_become(const struct agent_cred *cred, pid_t parent)
{
	/* Not root: only what we are already. */
	if (geteuid() != 0 && cred->uid == geteuid() && cred->gid == getegid())
		return 0;
	if (setgroups(cred->n_groups, cred->groups) < 0 ||
	    setresgid(cred->gid, cred->gid, cred->gid) < 0 ||
	    setresuid(cred->uid, cred->uid, cred->uid) < 0)
		return -errno;
	/* A credential change clears the death signal and dumpability. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_DUMPABLE, 1);
	if (getppid() != parent)
		return -ESRCH;
	return 0;
}

static int agent_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read exactly @len bytes within @timeout_ms (< 0: no limit); 0, -EPIPE at
 * EOF, -ETIMEDOUT, -errno. */
static int agent_read_all(int fd, void *buf, size_t len, int timeout_ms)
{
	int64_t deadline = tl_now_ms() + timeout_ms;
	char *p = buf;

	while (len) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		int wait = -1, r;
		ssize_t n;

		if (timeout_ms >= 0) {
			int64_t left = deadline - tl_now_ms();

			wait = left > 0 ? (int)left : 0;
		}
		r = poll(&pf, 1, wait);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The inode of the soft context memfd this process holds. */
static uint64_t agent_soft_ino(void)
{
	static const char prefix[] = "/memfd:rdmabroker-soft-context";
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *de;
	uint64_t ino = 0;

	if (!dir)
		return 0;
	while ((de = readdir(dir))) {
		char path[300], target[256];
		struct stat st;
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		if (strncmp(target, prefix, sizeof(prefix) - 1) == 0 &&
		    stat(path, &st) == 0)
			ino = (uint64_t)st.st_ino;
	}
	closedir(dir);
	return ino;
}

/* The agent's loop: one request, one reply, until EXIT or EOF. */
static void agent_serve(int in, int out, const char *sock)
{
	struct ibc_client *cl = NULL;
	struct ibc_ctx *ctxs[AGENT_MAX_CTXS];
	size_t n_ctxs = 0, n_dms = 0;
	static struct agent_rep rep;
	struct agent_req req;

	for (;;) {
		const char *arg;

		if (agent_read_all(in, &req, sizeof(req), -1) < 0)
			break;
		arg = req.has_arg ? req.arg : NULL;
		memset(&rep, 0, sizeof(rep));
		switch (req.op) {
		case AGENT_CONNECT: {
			struct ibc_connect_attr attr = {
				.comp_mask = IBC_CONNECT_ATTR_SOCKET |
					     IBC_CONNECT_ATTR_TIMEOUT,
				.socket_path = sock,
				.timeout_ms = TL_WAIT_MS,
			};

			if (req.flags) {
				attr.comp_mask |= IBC_CONNECT_ATTR_FLAGS;
				attr.flags = req.flags;
			}
			if (arg) {
				attr.comp_mask |= IBC_CONNECT_ATTR_DOMAIN;
				attr.domain = arg;
			}
			if (cl) {
				rep.ret = -EISCONN;
				break;
			}
			rep.ret = ibc_connect(&attr, &cl);
			if (rep.ret == 0)
				ibc_client_info(cl, &rep.info,
						sizeof(rep.info));
			break;
		}
		case AGENT_OPEN:
			if (!cl || n_ctxs == AGENT_MAX_CTXS) {
				rep.ret = -ENOTCONN;
				break;
			}
			rep.ret = ibc_open(cl, arg, &ctxs[n_ctxs]);
			if (rep.ret == 0) {
				ibc_query(ctxs[n_ctxs], &rep.caps,
					  sizeof(rep.caps));
				n_ctxs++;
				rep.soft_ino = agent_soft_ino();
			}
			break;
		case AGENT_CLOSE:
			if (!n_ctxs) {
				rep.ret = -ENOENT;
				break;
			}
			ibc_close(ctxs[--n_ctxs]);
			rep.soft_ino = agent_soft_ino();
			break;
		case AGENT_LIST_DOMAINS: {
			struct ibc_domain_info *d = NULL;
			size_t n = 0;

			rep.ret =
				cl ? ibc_list_domains(cl, &d, sizeof(*d), &n) :
				     -ENOTCONN;
			if (rep.ret < 0)
				break;
			rep.n_list = (uint32_t)n;
			for (size_t i = 0; i < n && i < AGENT_MAX_LIST; i++)
				rep.domains[i] = d[i];
			ibc_list_free(d);
			break;
		}
		case AGENT_LIST_CLIENTS: {
			struct ibc_client_entry *c = NULL;
			size_t n = 0;

			rep.ret =
				cl ? ibc_list_clients(cl, &c, sizeof(*c), &n) :
				     -ENOTCONN;
			if (rep.ret < 0)
				break;
			rep.n_list = (uint32_t)n;
			for (size_t i = 0; i < n && i < AGENT_MAX_LIST; i++)
				rep.clients[i] = c[i];
			ibc_list_free(c);
			break;
		}
		case AGENT_PING:
			rep.ret = cl ? ibc_ping(cl, "agent", 5) : -ENOTCONN;
			break;
		case AGENT_STATUS: {
			struct ibc_status st;

			rep.ret = cl ? ibc_status(cl, &st, sizeof(st)) :
				       -ENOTCONN;
			if (rep.ret == 0)
				rep.n_list = st.clients;
			break;
		}
		case AGENT_VERBS:
			if (!n_ctxs) {
				rep.ret = -ENOENT;
				break;
			}
			errno = 0;
			if (ibc_verbs_context(ctxs[n_ctxs - 1]))
				rep.ret |= 1;
			rep.err_ctx = errno;
			errno = 0;
			if (ibc_verbs_pd(ctxs[n_ctxs - 1]))
				rep.ret |= 2;
			rep.err_pd = errno;
			break;
		case AGENT_DM_ALLOC:
		case AGENT_DM_FILL: {
			struct ibc_dm_attr at = { .flags = req.flags };
			struct ibc_dm *dm = NULL;

			if (!n_ctxs || !arg) {
				rep.ret = -ENOENT;
				break;
			}
			at.length = strtoull(arg, NULL, 10);
			/* The DMs stay the agent's until it ends: the
			 * library frees them with its client. */
			do {
				if (n_dms == AGENT_MAX_DMS) {
					rep.ret = -ENOSPC;
					break;
				}
				rep.ret = ibc_dm_alloc_ex(ctxs[n_ctxs - 1], &at,
							  &dm);
				if (rep.ret == 0) {
					n_dms++;
					rep.n_list++;
					rep.dm_id = ibc_dm_id(dm);
					rep.dm_handle = ibc_dm_handle(dm);
				}
			} while (req.op == AGENT_DM_FILL && rep.ret == 0);
			break;
		}
		case AGENT_LIST_DEVICES: {
			struct ibc_device_info *d = NULL;
			size_t n = 0;

			rep.ret =
				cl ? ibc_list_devices(cl, &d, sizeof(*d), &n) :
				     -ENOTCONN;
			if (rep.ret < 0)
				break;
			rep.n_list = (uint32_t)n;
			for (size_t i = 0; i < n && i < AGENT_MAX_DEVICES; i++)
				rep.devices[i] = d[i];
			ibc_list_free(d);
			break;
		}
		case AGENT_DM_IMPORT: {
			struct ibc_dm *dm = NULL;

			rep.ret = n_ctxs && arg ?
					  ibc_dm_import(ctxs[n_ctxs - 1],
							(uint32_t)strtoul(
								arg, NULL, 10),
							&dm) :
					  -ENOENT;
			break;
		}
		case AGENT_XRCD_OPEN: {
			struct ibc_xrcd *x = NULL;

			rep.ret = n_ctxs && arg ?
					  ibc_xrcd_open(ctxs[n_ctxs - 1], arg,
							(int)req.flags, &x) :
					  -ENOENT;
			break;
		}
		case AGENT_LIST_OBJECTS:
		case AGENT_LIST_DMS:
		case AGENT_LIST_XRCDS: {
			void *l = NULL;
			size_t n = 0;

			if (!cl)
				rep.ret = -ENOTCONN;
			else if (req.op == AGENT_LIST_OBJECTS)
				rep.ret = ibc_list_objects(
					cl, NULL, (struct ibc_object_info **)&l,
					sizeof(struct ibc_object_info), &n);
			else if (req.op == AGENT_LIST_DMS)
				rep.ret = ibc_list_dms(
					cl, (struct ibc_dm_info **)&l,
					sizeof(struct ibc_dm_info), &n);
			else
				rep.ret = ibc_list_xrcds(
					cl, NULL, (struct ibc_xrcd_info **)&l,
					sizeof(struct ibc_xrcd_info), &n);
			if (rep.ret == 0)
				ibc_list_free(l);
			rep.n_list = (uint32_t)n;
			break;
		}
		case AGENT_DISCONNECT:
			ibc_disconnect(cl);
			cl = NULL;
			n_ctxs = 0;
			n_dms = 0;
			rep.soft_ino = agent_soft_ino();
			break;
		case AGENT_EXIT:
			ibc_disconnect(cl);
			agent_write_all(out, &rep, sizeof(rep));
			return;
		default:
			rep.ret = -EINVAL;
			break;
		}
		snprintf(rep.error, sizeof(rep.error), "%s", ibc_last_error());
		if (agent_write_all(out, &rep, sizeof(rep)) < 0)
			break;
	}
	ibc_disconnect(cl);
}

int agent_start(struct agent *a, const struct agent_cred *cred,
		const char *sock)
{
	int req[2] = { -1, -1 }, rep[2] = { -1, -1 };
	pid_t parent = getpid();
	int ret, status;

	memset(a, 0, sizeof(*a));
	a->pid = -1;
	a->to = a->from = -1;
	a->cred = *cred;
	if (pipe2(req, O_CLOEXEC) < 0 || pipe2(rep, O_CLOEXEC) < 0) {
		ret = -errno;
		goto fail;
	}
	fflush(stdout);
	fflush(stderr);
	a->pid = fork();
	if (a->pid < 0) {
		ret = -errno;
		goto fail;
	}
	if (a->pid == 0) {
		int keep[2] = { req[0], rep[1] };

		if (keep[0] > keep[1]) {
			keep[0] = rep[1];
			keep[1] = req[0];
		}
		agent_close_except(keep, 2);
		signal(SIGPIPE, SIG_IGN);
		ret = agent_become(cred, parent);
		if (agent_write_all(rep[1], &ret, sizeof(ret)) < 0 || ret < 0)
			_exit(1);
		agent_serve(req[0], rep[1], sock);
		_exit(0);
	}
	close(req[0]);
	close(rep[1]);
	a->to = req[1];
	a->from = rep[0];
	req[0] = req[1] = rep[0] = rep[1] = -1;
	if (agent_read_all(a->from, &status, sizeof(status), TL_WAIT_MS) < 0)
		status = -EPIPE;
	ret = status;
	if (ret < 0) {
		fprintf(stderr, "agent: cannot become uid %u gid %u: %s\n",
			(unsigned int)cred->uid, (unsigned int)cred->gid,
			strerror(-ret));
		agent_stop(a);
		return ret;
	}
	return 0;

fail:
	for (int i = 0; i < 2; i++) {
		if (req[i] >= 0)
			close(req[i]);
		if (rep[i] >= 0)
			close(rep[i]);
	}
	a->pid = -1;
	return ret;
}

int agent_call(struct agent *a, enum agent_op op, const char *arg,
	       uint32_t flags, int timeout_ms)
{
	struct agent_req req;
	int ret;

	if (a->pid <= 0)
		return -ESRCH;
	memset(&req, 0, sizeof(req));
	req.op = op;
	req.flags = flags;
	if (arg) {
		req.has_arg = 1;
		snprintf(req.arg, sizeof(req.arg), "%s", arg);
	}
	memset(&a->rep, 0, sizeof(a->rep));
	ret = agent_write_all(a->to, &req, sizeof(req));
	if (ret < 0)
		return ret;
	return agent_read_all(a->from, &a->rep, sizeof(a->rep), timeout_ms);
}

void agent_stop(struct agent *a)
{
	if (a->pid > 0) {
		if (agent_call(a, AGENT_EXIT, NULL, 0, TL_WAIT_MS) < 0 ||
		    tl_wait_pid(a->pid, TL_WAIT_MS, NULL) < 0) {
			kill(a->pid, SIGKILL);
			tl_wait_pid(a->pid, TL_WAIT_MS, NULL);
		}
	}
	if (a->to >= 0)
		close(a->to);
	if (a->from >= 0)
		close(a->from);
	a->to = a->from = -1;
	a->pid = -1;
}

/* Append what @fd has to *buf (grown as needed); 0 at EOF, 1 for more. */
static int agent_slurp(int fd, char **buf, size_t *len, size_t *cap)
{
	char chunk[4096];
	ssize_t n = read(fd, chunk, sizeof(chunk));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : 0;
	if (n == 0)
		return 0;
	if (*len + (size_t)n + 1 > *cap) {
		size_t c = *cap ? *cap : 8192;
		char *p;

		while (c < *len + (size_t)n + 1)
			c *= 2;
		p = realloc(*buf, c);
		if (!p)
			return 0;
		*buf = p;
		*cap = c;
	}
	memcpy(*buf + *len, chunk, (size_t)n);
	*len += (size_t)n;
	(*buf)[*len] = '\0';
	return 1;
}

int agent_run(const struct agent_cred *cred, const char *const *argv,
	      int timeout_ms, char **ret_out, char **ret_err)
{
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 };
	char *buf[2] = { NULL, NULL };
	size_t len[2] = { 0, 0 }, cap[2] = { 0, 0 };
	int64_t deadline = tl_now_ms() + timeout_ms;
	pid_t parent = getpid(), pid;
	int open_ends = 2, status, ret;

	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
		ret = -errno;
		goto out;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		goto out;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);
		int err;

		if (null < 0 || dup2(null, 0) < 0 || dup2(po[1], 1) < 0 ||
		    dup2(pe[1], 2) < 0)
			_exit(126);
		agent_close_except(NULL, 0);
		err = agent_become(cred, parent);
		if (err < 0) {
			fprintf(stderr, "agent_run: cannot become uid %u: %s\n",
				(unsigned int)cred->uid, strerror(-err));
			_exit(126);
		}
		signal(SIGPIPE, SIG_DFL);
		execv(argv[0], (char *const *)argv);
		fprintf(stderr, "agent_run: exec %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	po[1] = pe[1] = -1;
	while (open_ends) {
		struct pollfd pf[2] = {
			{ .fd = po[0], .events = POLLIN },
			{ .fd = pe[0], .events = POLLIN },
		};
		int64_t left = deadline - tl_now_ms();
		int r;

		if (left <= 0)
			break;
		r = poll(pf, 2, (int)left);
		if (r < 0 && errno != EINTR)
			break;
		for (int i = 0; i < 2 && r > 0; i++) {
			int *fd = i ? &pe[0] : &po[0];

			if (*fd < 0 || !pf[i].revents)
				continue;
			if (!agent_slurp(*fd, &buf[i], &len[i], &cap[i])) {
				close(*fd);
				*fd = -1;
				open_ends--;
			}
		}
	}
	if (open_ends) {
		kill(pid, SIGKILL);
		tl_wait_pid(pid, TL_WAIT_MS, NULL);
		ret = -ETIMEDOUT;
		goto out;
	}
	ret = tl_wait_pid(pid, (int)(deadline - tl_now_ms()) + 100, &status);
	if (ret == -ETIMEDOUT) {
		kill(pid, SIGKILL);
		tl_wait_pid(pid, TL_WAIT_MS, NULL);
	}
	if (ret >= 0)
		ret = status;
out:
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
		if (!buf[i])
			buf[i] = strdup("");
	}
	*ret_out = buf[0];
	*ret_err = buf[1];
	return ret;
}
