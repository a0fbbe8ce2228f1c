// SPDX-License-Identifier: MIT
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "daemon/device/soft/soft.h"
#include "tests/fakebroker.h"
#include "tests/testlib.h"

int fb_fail(struct fb *fb, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&fb->lock);
	if (!fb->why[0]) {
		va_start(ap, fmt);
		vsnprintf(fb->why, sizeof(fb->why), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&fb->lock);
	return -1;
}

void fb_post(struct fb *fb, int n)
{
	pthread_mutex_lock(&fb->lock);
	if (fb->step < n)
		fb->step = n;
	pthread_cond_broadcast(&fb->cond);
	pthread_mutex_unlock(&fb->lock);
}

int fb_wait(struct fb *fb, int n, int timeout_ms)
{
	struct timespec ts;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&fb->lock);
	while (fb->step < n && ret == 0)
		ret = pthread_cond_timedwait(&fb->cond, &fb->lock, &ts);
	ret = fb->step >= n ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&fb->lock);
	return ret;
}

static void *fb_main(void *arg)
{
	struct fb *fb = arg;
	struct pollfd p = { .fd = fb->listen_fd, .events = POLLIN };

	if (poll(&p, 1, TL_WAIT_MS) != 1) {
		fb_fail(fb, "no client connected within %d ms", TL_WAIT_MS);
		return NULL;
	}
	fb->conn = accept4(fb->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fb->conn < 0) {
		fb_fail(fb, "accept: %s", strerror(errno));
		return NULL;
	}
	fb->script(fb);
	return NULL;
}

int fb_start(struct fb *fb, fb_script script, void *arg)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int ret;

	memset(fb, 0, sizeof(*fb));
	fb->listen_fd = fb->conn = -1;
	fb->script = script;
	fb->arg = arg;
	pthread_mutex_init(&fb->lock, NULL);
	pthread_cond_init(&fb->cond, NULL);
	fb->dir = tl_mkdtemp();
	if (!fb->dir)
		return -ENOMEM;
	snprintf(fb->sock, sizeof(fb->sock), "%s/sock", fb->dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", fb->sock);
	fb->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fb->listen_fd < 0 ||
	    bind(fb->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fb->listen_fd, 4) < 0)
		return -errno;
	ret = pthread_create(&fb->thread, NULL, fb_main, fb);
	return -ret;
}

int fb_stop(struct fb *fb)
{
	pthread_join(fb->thread, NULL);
	if (fb->conn >= 0)
		close(fb->conn);
	if (fb->listen_fd >= 0)
		close(fb->listen_fd);
	fb->conn = fb->listen_fd = -1;
	if (fb->dir)
		tl_rmtree(fb->dir);
	free(fb->dir);
	fb->dir = NULL;
	return fb->why[0] ? -1 : 0;
}

int fb_expect(struct fb *fb, Rdmab__Request__BodyCase body,
	      uint64_t *ret_serial, Rdmab__Request **ret)
{
	struct pollfd p = { .fd = fb->conn, .events = POLLIN };
	Rdmab__Request *req;
	struct wire_fds fds;
	uint8_t *buf;
	int n;

	if (poll(&p, 1, TL_WAIT_MS) != 1)
		return fb_fail(fb, "no request %d within %d ms", (int)body,
			       TL_WAIT_MS);
	buf = malloc(WIRE_MAX_PACKET);
	if (!buf)
		return fb_fail(fb, "out of memory");
	n = wire_recv(fb->conn, buf, WIRE_MAX_PACKET, &fds, MSG_DONTWAIT);
	wire_fds_close(&fds);
	req = n > 0 ? rdmab__request__unpack(NULL, (size_t)n, buf) : NULL;
	free(buf);
	if (!req)
		return fb_fail(fb, "expected request %d, read %d", (int)body,
			       n);
	if (req->body_case != body) {
		fb_fail(fb, "expected request %d, got %d", (int)body,
			(int)req->body_case);
		rdmab__request__free_unpacked(req, NULL);
		return -1;
	}
	*ret_serial = req->serial;
	if (ret)
		*ret = req;
	else
		rdmab__request__free_unpacked(req, NULL);
	return 0;
}

int fb_send_reply(struct fb *fb, Rdmab__Reply *reply, const int *fds,
		  unsigned int nfds)
{
	Rdmab__DaemonMessage m = RDMAB__DAEMON_MESSAGE__INIT;
	struct tl_buf b = { 0 };
	int ret;

	m.kind_case = RDMAB__DAEMON_MESSAGE__KIND_REPLY;
	m.reply = reply;
	tl_pb_message(&b, &m.base);
	ret = tl_raw_send(fb->conn, b.p, b.len, fds, nfds, 0);
	tl_buf_free(&b);
	if (ret < 0)
		return fb_fail(fb, "sending a reply: %s", strerror(-ret));
	return 0;
}

int fb_send_raw(struct fb *fb, const void *buf, size_t len)
{
	int ret = tl_raw_send(fb->conn, buf, len, NULL, 0, 0);

	if (ret < 0)
		return fb_fail(fb, "sending: %s", strerror(-ret));
	return 0;
}

int fb_send_event(struct fb *fb, Rdmab__Event *ev)
{
	Rdmab__DaemonMessage m = RDMAB__DAEMON_MESSAGE__INIT;
	struct tl_buf b = { 0 };
	int ret;

	m.kind_case = RDMAB__DAEMON_MESSAGE__KIND_EVENT;
	m.event = ev;
	tl_pb_message(&b, &m.base);
	ret = fb_send_raw(fb, b.p, b.len);
	tl_buf_free(&b);
	return ret;
}

int fb_hello(struct fb *fb, const char *name, const char *kind)
{
	return fb_hello_secret(fb, name, kind, NULL, 0);
}

int fb_hello_secret(struct fb *fb, const char *name, const char *kind,
		    const uint8_t *secret, size_t len)
{
	Rdmab__DeviceCaps caps = RDMAB__DEVICE_CAPS__INIT;
	Rdmab__DeviceInfo dev = RDMAB__DEVICE_INFO__INIT;
	Rdmab__DeviceInfo *devs[1] = { &dev };
	Rdmab__HelloReply hello = RDMAB__HELLO_REPLY__INIT;
	Rdmab__Reply reply = RDMAB__REPLY__INIT;
	uint64_t serial;

	if (fb_expect(fb, RDMAB__REQUEST__BODY_HELLO, &serial, NULL) < 0)
		return -1;
	dev.name = (char *)name;
	dev.kind = (char *)kind;
	/* As the daemon's soft device: its DMs can always be shared. */
	caps.dm_shared = strcmp(kind, "soft") == 0;
	dev.caps = &caps;
	dev.transport = (char *)"fake";
	hello.protocol_version = WIRE_PROTOCOL_VERSION;
	hello.daemon_version = (char *)"fake";
	hello.client_id = 1;
	hello.domain = (char *)"uid-fake";
	hello.n_devices = 1;
	hello.devices = devs;
	hello.secret.data = (uint8_t *)secret;
	hello.secret.len = len;
	reply.serial = serial;
	reply.body_case = RDMAB__REPLY__BODY_HELLO;
	reply.hello = &hello;
	return fb_send_reply(fb, &reply, NULL, 0);
}

int fb_answer_ping(struct fb *fb, uint64_t serial, const Rdmab__Request *req)
{
	Rdmab__Reply reply = RDMAB__REPLY__INIT;

	reply.serial = serial;
	reply.body_case = RDMAB__REPLY__BODY_PING;
	reply.ping = req->ping;
	return fb_send_reply(fb, &reply, NULL, 0);
}

int fb_reply_open(struct fb *fb, uint64_t serial, const char *device, int fd)
{
	Rdmab__OpenContextReply oc = RDMAB__OPEN_CONTEXT_REPLY__INIT;
	Rdmab__Reply reply = RDMAB__REPLY__INIT;

	oc.context_id = FB_CONTEXT_ID;
	oc.device = (char *)device;
	reply.serial = serial;
	reply.body_case = RDMAB__REPLY__BODY_OPEN_CONTEXT;
	reply.open_context = &oc;
	return fb_send_reply(fb, &reply, &fd, fd >= 0 ? 1 : 0);
}

int fb_answer_open(struct fb *fb, const char *device, int fd)
{
	uint64_t serial;

	if (fb_expect(fb, RDMAB__REQUEST__BODY_OPEN_CONTEXT, &serial, NULL) < 0)
		return -1;
	return fb_reply_open(fb, serial, device, fd);
}

int fb_soft_context_fd(uint64_t id)
{
	struct soft_ctx_header h = {
		.magic = SOFT_CTX_MAGIC,
		.version = SOFT_CTX_VERSION,
		.context_id = id,
	};
	int fd, err;

	snprintf(h.device, sizeof(h.device), "%s", SOFT_DEVICE_NAME);
	fd = memfd_create("fakebroker-context",
			  MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	errno = 0;
	if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) <
		    0) {
		err = errno ? -errno : -EIO;
		close(fd);
		return err;
	}
	return fd;
}

int fb_wait_eof(struct fb *fb)
{
	int ret = tl_wait_eof(fb->conn, TL_WAIT_MS);

	if (ret < 0)
		return fb_fail(fb, "the client did not close: %s",
			       strerror(-ret));
	return 0;
}
