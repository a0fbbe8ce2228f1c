// SPDX-License-Identifier: MIT
/*
 * Cleanup of a dead client (issue 8): a forked client on the soft device
 * creates CLEANUP_OBJS objects through libibclient (CQs, QPs on them, MRs),
 * timing the creation, tells the driver, and is killed with SIGKILL. The
 * driver times from the kill to the moment its own client, polling
 * ibc_list_objects() filtered on the dead client, sees none left, and takes
 * the daemon's own figure (pidfd readable to last destroy, logged at info
 * by daemon/registry/obj-cleanup.c) from the daemon's log. Both are ratios
 * against the creation time of the same repetition.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "include/ibclient.h"

#define CLEANUP_TIMEOUT_MS 10000
/* Of every five objects: two CQs, one RC QP on them, two MRs. */
#define CLEANUP_CQE 63

struct cleanup_child {
	const char *path;
	unsigned int nobjs;
	int wfd;
	int rfd; /* the driver's end: closed by the child */
};

/* What the child tells the driver once its objects exist. */
struct cleanup_msg {
	int err;
	uint64_t client_id;
	uint64_t create_ns;
};

static int cleanup_fail(const char *what, int err)
{
	fprintf(stderr, "rdmab-bench: cleanup: %s: %s\n", what,
		err < 0 ? strerror(-err) : "?");
	return err < 0 ? err : -EPROTO;
}

static int cleanup_connect(const char *path, struct ibc_client **ret)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_TIMEOUT,
		.socket_path = path,
		.timeout_ms = CLEANUP_TIMEOUT_MS,
	};

	return ibc_connect(&attr, ret);
}

/* @n objects on @ctx; the handles are left to the broker's cleanup. */
static int cleanup_make(struct ibc_ctx *ctx, unsigned int n)
{
	static uint8_t buf[4096];
	struct ibc_cq *cq[2] = { NULL, NULL };
	unsigned int i;
	int ret = 0;

	for (i = 0; i < n && ret == 0; i++) {
		struct ibc_qp_attr qa = {
			.qp_type = IBV_QPT_RC,
			.send_cq = cq[0],
			.recv_cq = cq[1],
			.cap = { .max_send_wr = 16,
				 .max_recv_wr = 16,
				 .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};
		struct ibc_qp *qp;
		struct ibc_mr *mr;

		switch (i % 5) {
		case 0:
		case 1:
			ret = ibc_cq_create(ctx, CLEANUP_CQE, &cq[i % 5]);
			break;
		case 2:
			ret = ibc_qp_create(ctx, &qa, &qp);
			break;
		default:
			ret = ibc_reg_mr(ctx, buf, sizeof(buf),
					 IBV_ACCESS_LOCAL_WRITE, &mr);
			break;
		}
	}
	return ret;
}

static int cleanup_child_main(void *arg)
{
	const struct cleanup_child *c = arg;
	struct cleanup_msg m = { 0 };
	struct ibc_client_info info;
	struct ibc_client *cl = NULL;
	struct ibc_ctx *ctx = NULL;
	uint64_t t0;

	close(c->rfd);
	m.err = cleanup_connect(c->path, &cl);
	if (m.err == 0)
		m.err = ibc_client_info(cl, &info, sizeof(info));
	if (m.err == 0)
		m.err = ibc_open(cl, NULL, &ctx);
	if (m.err == 0) {
		m.client_id = info.client_id;
		t0 = now_ns();
		m.err = cleanup_make(ctx, c->nobjs);
		m.create_ns = now_ns() - t0;
	}
	if (m.err < 0)
		fprintf(stderr, "rdmab-bench: cleanup: client: %s\n",
			ibc_last_error());
	if (write(c->wfd, &m, sizeof(m)) != sizeof(m))
		return -EIO;
	/* Killed here by the driver. */
	for (;;)
		pause();
}

/* Objects of @client_id in the registry, or -errno. */
static int cleanup_count(struct ibc_client *cl, uint64_t client_id)
{
	struct ibc_object_filter f = {
		.comp_mask = IBC_OBJECT_FILTER_CLIENT,
		.client_id = client_id,
	};
	struct ibc_object_info *list;
	size_t n;
	int ret;

	ret = ibc_list_objects(cl, &f, &list, sizeof(*list), &n);
	if (ret < 0)
		return ret;
	ibc_list_free(list);
	return (int)n;
}

/*
 * The daemon's "client ID (pid PID): N objects destroyed in X us" line in
 * @log, waited for up to a second; X in @ret_us.
 */
static int cleanup_daemon_figure(const char *log, uint64_t client_id, pid_t pid,
				 unsigned int nobjs, double *ret_us)
{
	char want[96], line[1024];

	snprintf(want, sizeof(want),
		 "client %" PRIu64 " (pid %d): %u objects destroyed in ",
		 client_id, (int)pid, nobjs);
	for (int tries = 0; tries < 100; tries++) {
		FILE *f = fopen(log, "re");

		if (!f)
			return -errno;
		while (fgets(line, sizeof(line), f)) {
			char *p = strstr(line, want);
			unsigned long long us;

			if (p &&
			    sscanf(p + strlen(want), "%llu us", &us) == 1) {
				fclose(f);
				*ret_us = (double)us;
				return 0;
			}
		}
		fclose(f);
		sleep_ms(10);
	}
	return -ENOENT;
}

static int cleanup_read_msg(int fd, struct cleanup_msg *m)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;
	int ret;

	ret = poll(&p, 1, CLEANUP_TIMEOUT_MS);
	if (ret <= 0)
		return ret < 0 ? -errno : -ETIMEDOUT;
	n = read(fd, m, sizeof(*m));
	if (n != sizeof(*m))
		return n < 0 ? -errno : -EPROTO;
	return 0;
}

int cleanup_rep(const char *path, const char *log, unsigned int nobjs,
		struct cleanup_result *ret)
{
	struct cleanup_child c = { .path = path, .nobjs = nobjs };
	struct ibc_client *cl = NULL;
	struct cleanup_msg m;
	int fds[2], err, n;
	uint64_t t0;
	pid_t pid = 0, dead;

	err = cleanup_connect(path, &cl);
	if (err < 0) {
		fprintf(stderr, "rdmab-bench: cleanup: ibc_connect: %s\n",
			ibc_last_error());
		return err;
	}
	if (pipe2(fds, O_CLOEXEC) < 0) {
		err = cleanup_fail("pipe", -errno);
		goto out;
	}
	c.rfd = fds[0];
	c.wfd = fds[1];
	err = spawn_fn(cleanup_child_main, &c, &pid);
	close(fds[1]);
	if (err == 0)
		err = cleanup_read_msg(fds[0], &m);
	close(fds[0]);
	if (err == 0)
		err = m.err;
	if (err < 0) {
		cleanup_fail("the client's objects", err);
		goto out;
	}
	n = cleanup_count(cl, m.client_id);
	if (n != (int)nobjs) {
		err = cleanup_fail("the registry before the kill",
				   n < 0 ? n : -EPROTO);
		goto out;
	}
	t0 = now_ns();
	kill(pid, SIGKILL);
	wait_child(pid);
	dead = pid;
	pid = 0;
	do
		n = cleanup_count(cl, m.client_id);
	while (n > 0 && now_ns() - t0 < CLEANUP_TIMEOUT_MS * 1000000ull);
	if (n != 0) {
		err = cleanup_fail("the registry after the kill",
				   n < 0 ? n : -ETIMEDOUT);
		goto out;
	}
	ret->poll_us = (double)(now_ns() - t0) / 1e3;
	ret->create_us = (double)m.create_ns / 1e3;
	err = cleanup_daemon_figure(log, m.client_id, dead, nobjs,
				    &ret->daemon_us);
	if (err < 0)
		cleanup_fail("the daemon's figure in its log", err);
out:
	if (pid > 0)
		stop_child(pid);
	ibc_disconnect(cl);
	return err;
}
