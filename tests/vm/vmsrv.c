// SPDX-License-Identifier: MIT
/* The in-process daemon of the in-VM programs (vmsrv.h). */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/server/conn.h"
#include "daemon/registry/domain.h"
#include "daemon/util/log.h"
#include "tests/testlib.h"
#include "tests/vm/vmsrv.h"
#include "tests/vm/vmutil.h"

struct server vs_srv;
char vs_sock[128];

static char dir[64];
static const char *device_name;

struct device *vs_start(const char *tag, const char *dev_name)
{
	char cfg[160], name[64];
	struct server_options opt = {
		.socket_path = vs_sock,
		.config_path = cfg,
		.device_mode = DEVICE_MODE_VERBS,
		.socket_mode = 0600,
		.max_conns = 16,
		.outq_max = 256 * 1024,
	};
	struct device *dev;
	int ret;

	log_max_priority = LOG_INFO;
	device_name = dev_name;
	snprintf(dir, sizeof(dir), "/tmp/vm-%s-XXXXXX", tag);
	if (!mkdtemp(dir))
		return NULL;
	snprintf(vs_sock, sizeof(vs_sock), "%s/sock", dir);
	snprintf(cfg, sizeof(cfg), "%s/none.conf", dir);
	opt.runtime_dir = dir;
	ret = server_init(&vs_srv, &opt);
	dev = ret == 0 ? device_find(&vs_srv.core.devices, dev_name) : NULL;
	snprintf(name, sizeof(name), "%s-daemon", tag);
	vm_check(dev != NULL, name, "an in-process daemon on %s: %s", dev_name,
		 ret ? strerror(-ret) :
		 dev ? "ok" :
		       "no such device");
	return dev;
}

struct dctx *vs_open(const char *tag, struct ol_client *parent,
		     struct ibv_context **ret_vctx, struct ibv_pd **ret_pd)
{
	struct ibv_context *vctx = NULL;
	struct ibv_pd *vpd = NULL;
	struct dctx *x = NULL;
	struct domain *d;
	struct conn *c;
	char name[64];
	int sv[2], ret;

	snprintf(name, sizeof(name), "%s-context", tag);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC,
		       0, sv) < 0 ||
	    conn_new(&vs_srv.tab, sv[0], &c) < 0 ||
	    ol_adopt(parent, sv[1], vs_pump) < 0 || ol_open(parent) < 0) {
		vm_check(false, name, "cannot open the context: %s", ol_error);
		return NULL;
	}
	TAILQ_FOREACH(d, &vs_srv.core.domains, link)
		TAILQ_FOREACH(x, &d->ctxs, link)
			if (x->id == parent->ctx_id)
				goto found;
found:
	ret = x ? device_verbs_context(x->dc, &vctx, &vpd) : -ENOENT;
	if (!vm_check(ret == 0, name, "context %llu of domain %s on %s, PD %u",
		      (unsigned long long)parent->ctx_id, parent->domain,
		      device_name, vpd ? vpd->handle : 0))
		return NULL;
	*ret_vctx = vctx;
	*ret_pd = vpd;
	return x;
}

void vs_stop(void)
{
	server_fini(&vs_srv);
	tl_rmtree(dir);
}

void vs_pump(void)
{
	event_base_loop(vs_srv.core.base, EVLOOP_NONBLOCK);
}

bool vs_pump_until_readable(int fd, int ms)
{
	int64_t deadline = tl_now_ms() + ms;
	struct pollfd p = { .fd = fd, .events = POLLIN };

	while (tl_now_ms() < deadline) {
		vs_pump();
		if (poll(&p, 1, 1) == 1)
			return true;
	}
	return false;
}

pid_t vs_fork(void)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0)
		prctl(PR_SET_PDEATHSIG, SIGKILL);
	return pid;
}

struct obj_owner *vs_owner_of(uint64_t client_id)
{
	struct obj_owner *ow;

	TAILQ_FOREACH(ow, &vs_srv.core.registry->owners, link)
		if (ow->client_id == client_id)
			return ow;
	return NULL;
}
