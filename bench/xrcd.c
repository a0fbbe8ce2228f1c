// SPDX-License-Identifier: MIT
/*
 * ibc_xrcd_open + ibc_xrcd_close (issue 10): one pair through libibclient
 * to rdmabrokerd on the soft device, where the open is one request whose
 * reply carries the name's inode file and the close one request without,
 * against the socket work the pair cannot avoid: one SOCK_SEQPACKET round
 * trip whose reply carries one descriptor (closed by the client, as the
 * library closes the file) and one that carries none, with packets of the
 * broker's sizes. Steady state: the client holds another open of the name
 * for the whole run, so no pair creates or removes the file.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/bench.h"
#include "include/ibclient.h"
#include "proto/wire.h"

#define XB_MAX_PACKET 4096
#define XB_NAME "bench-xrcd"

struct xrcd_bench {
	struct ibc_client *cl;
	struct ibc_ctx *ctx;
	struct ibc_xrcd *holder;
	int raw_fd;
	pid_t peer_pid;
	struct xrcd_sizes sz;
	uint8_t open_req[XB_MAX_PACKET];
	uint8_t close_req[XB_MAX_PACKET];
};

static int xb_fail(const char *what, int err)
{
	fprintf(stderr, "rdmab-bench: xrcd: %s: %s\n", what,
		err < 0 ? strerror(-err) : "?");
	return err;
}

static int xb_lib_fail(const char *what, int err)
{
	fprintf(stderr, "rdmab-bench: xrcd: %s: %s\n", what, ibc_last_error());
	return err;
}

/* Answers an open-sized reply with a descriptor (a file, as the broker's
 * is) and a close-sized one without (@arg: their two lengths), in turn. */
static int xb_peer_main(int fd, const void *arg)
{
	int ffd, ret;

	ffd = memfd_create("rdmab-bench-xrcd", MFD_CLOEXEC);
	if (ffd < 0)
		return -errno;
	ret = peer_alternate(fd, arg, ffd);
	close(ffd);
	return ret;
}

/* One round trip; the reply's descriptors are closed. */
static int xb_rt(int fd, const uint8_t *req, int len, uint8_t *rx, size_t cap)
{
	struct wire_fds fds;
	int n;

	if (len < 0)
		return len;
	if (send(fd, req, (size_t)len, MSG_NOSIGNAL) < 0)
		return -errno;
	n = wire_recv(fd, rx, cap, &fds, 0);
	if (n >= 0)
		wire_fds_close(&fds);
	return n;
}

/* The broker's sizes, from a raw connection of this uid that opens and
 * closes the name as the library does, with serials of the measured
 * width. */
static int xb_probe(struct xrcd_bench *xb, const char *path,
		    uint64_t context_id)
{
	Rdmab__XrcdOpenRequest xo = RDMAB__XRCD_OPEN_REQUEST__INIT;
	Rdmab__ObjDestroyRequest dr = RDMAB__OBJ_DESTROY_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	uint64_t serial = PKT_SERIAL_START, id = 0;
	uint8_t buf[XB_MAX_PACKET];
	int fd, len, n, ret;

	ret = unix_connect(path, &fd);
	if (ret < 0)
		return ret;
	ret = pkt_open_session(fd, serial++, xb_rt);
	if (ret < 0)
		goto out;
	/* What ibc_xrcd_open(ctx, XB_NAME, 0) packs. */
	xo.context_id = context_id;
	xo.name.data = (uint8_t *)XB_NAME;
	xo.name.len = strlen(XB_NAME);
	req = (Rdmab__Request)RDMAB__REQUEST__INIT;
	req.body_case = RDMAB__REQUEST__BODY_XRCD_OPEN;
	req.xrcd_open = &xo;
	len = pkt_request(&req, ++serial, xb->open_req, sizeof(xb->open_req));
	n = xb_rt(fd, xb->open_req, len, buf, sizeof(buf));
	ret = n < 0 ? n :
		      pkt_check_object(buf, (size_t)n, serial,
				       RDMAB__REPLY__BODY_XRCD_OPEN, &id);
	if (ret < 0)
		goto out;
	xb->sz.open_req = (size_t)len;
	xb->sz.open_rep = (size_t)n;
	dr.object_id = id;
	req = (Rdmab__Request)RDMAB__REQUEST__INIT;
	req.body_case = RDMAB__REQUEST__BODY_OBJ_DESTROY;
	req.obj_destroy = &dr;
	len = pkt_request(&req, ++serial, xb->close_req, sizeof(xb->close_req));
	n = xb_rt(fd, xb->close_req, len, buf, sizeof(buf));
	ret = n < 0 ? n :
		      pkt_check_reply(buf, (size_t)n, serial,
				      RDMAB__REPLY__BODY_OBJ_DESTROY, NULL, 0);
	if (ret < 0)
		goto out;
	xb->sz.close_req = (size_t)len;
	xb->sz.close_rep = (size_t)n;
out:
	close(fd);
	return ret;
}

static int xb_start_peer(struct xrcd_bench *xb)
{
	const size_t rep_len[2] = { xb->sz.open_rep, xb->sz.close_rep };

	return raw_peer_start(xb_peer_main, rep_len, &xb->raw_fd,
			      &xb->peer_pid);
}

int xrcd_setup(const char *path, struct xrcd_bench **ret)
{
	/* The library's defaults, as in main.c: no reply deadline, which
	 * would arm a kernel timer per request; the alarm ends a hang. */
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET,
		.socket_path = path,
	};
	struct xrcd_bench *xb;
	struct ibc_caps caps;
	int err;

	xb = calloc(1, sizeof(*xb));
	if (!xb)
		return -ENOMEM;
	xb->raw_fd = -1;
	err = ibc_connect(&attr, &xb->cl);
	if (err < 0) {
		xb_lib_fail("ibc_connect", err);
		goto fail;
	}
	err = ibc_open(xb->cl, NULL, &xb->ctx);
	if (err == 0)
		err = ibc_query(xb->ctx, &caps, sizeof(caps));
	if (err == 0)
		err = ibc_xrcd_open(xb->ctx, XB_NAME, O_CREAT, &xb->holder);
	if (err < 0) {
		xb_lib_fail("ibc_open and the holder's ibc_xrcd_open", err);
		goto fail;
	}
	/* The measured serials pack like the probe's (bench.h). */
	for (unsigned int i = 4; i < PKT_SERIAL_START && err == 0; i++)
		err = ibc_ping(xb->cl, NULL, 0);
	if (err < 0) {
		xb_lib_fail("ibc_ping", err);
		goto fail;
	}
	err = xb_probe(xb, path, caps.context_id);
	if (err < 0) {
		xb_fail("XrcdOpen and ObjDestroy by hand", err);
		goto fail;
	}
	err = xb_start_peer(xb);
	if (err < 0) {
		xb_fail("cannot start the raw peer", err);
		goto fail;
	}
	*ret = xb;
	return 0;
fail:
	xrcd_teardown(xb);
	return err;
}

pid_t xrcd_peer_pid(const struct xrcd_bench *xb)
{
	return xb ? xb->peer_pid : 0;
}

const struct xrcd_sizes *xrcd_sizes(const struct xrcd_bench *xb)
{
	return &xb->sz;
}

static int xb_broker_rep(struct xrcd_bench *xb, unsigned int iters,
			 uint64_t *lat)
{
	for (unsigned int i = 0; i < iters; i++) {
		uint64_t t0 = now_ns();
		struct ibc_xrcd *x;
		int ret = ibc_xrcd_open(xb->ctx, XB_NAME, 0, &x);

		if (ret < 0)
			return xb_lib_fail("ibc_xrcd_open", ret);
		ret = ibc_xrcd_close(x);
		if (ret < 0)
			return xb_lib_fail("ibc_xrcd_close", ret);
		if (lat)
			lat[i] = now_ns() - t0;
	}
	return 0;
}

static int xb_raw_rep(struct xrcd_bench *xb, unsigned int iters, uint64_t *lat)
{
	static uint8_t rx[XB_MAX_PACKET];
	const struct xrcd_sizes *s = &xb->sz;
	int fd = xb->raw_fd;

	for (unsigned int i = 0; i < iters; i++) {
		uint64_t t0 = now_ns();
		struct wire_fds fds;
		unsigned int nfds;
		ssize_t n;

		if (send(fd, xb->open_req, s->open_req, MSG_NOSIGNAL) < 0)
			return -errno;
		n = wire_recv(fd, rx, sizeof(rx), &fds, 0);
		nfds = n < 0 ? 0 : fds.n;
		/* As the library closes the file once it has used it. */
		if (n >= 0)
			wire_fds_close(&fds);
		if (n < 0 || (size_t)n != s->open_rep || nfds != 1)
			return n < 0 ? (int)n : -EPROTO;
		if (send(fd, xb->close_req, s->close_req, MSG_NOSIGNAL) < 0)
			return -errno;
		n = recv(fd, rx, sizeof(rx), 0);
		if (n < 0 || (size_t)n != s->close_rep)
			return n < 0 ? -errno : -EPROTO;
		if (lat)
			lat[i] = now_ns() - t0;
	}
	return 0;
}

int xrcd_rep(struct xrcd_bench *xb, int raw, unsigned int iters, uint64_t *lat)
{
	int ret;

	if (!raw)
		return xb_broker_rep(xb, iters, lat);
	ret = xb_raw_rep(xb, iters, lat);
	return ret < 0 ? xb_fail("raw round trips", ret) : 0;
}

void xrcd_teardown(struct xrcd_bench *xb)
{
	if (!xb)
		return;
	if (xb->raw_fd >= 0)
		close(xb->raw_fd);
	if (xb->peer_pid > 0)
		stop_child(xb->peer_pid);
	if (xb->holder)
		ibc_xrcd_close(xb->holder);
	ibc_close(xb->ctx);
	ibc_disconnect(xb->cl);
	free(xb);
}
