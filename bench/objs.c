// SPDX-License-Identifier: MIT
/*
 * ibc_cq_create + ibc_cq_destroy (issue 8): one pair through libibclient to
 * rdmabrokerd on the soft device, where each is one request, against the
 * socket work the pair cannot avoid: two SOCK_SEQPACKET round trips with
 * packets of the sizes the broker's have (ObjCreate of a CQ, ObjDestroy).
 * The raw peer answers without looking, so the ratio is what the library
 * and the broker's registry and soft records add.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/bench.h"
#include "include/ibclient.h"
#include "proto/wire.h"

#define OBJS_TIMEOUT_MS 10000
#define OBJS_MAX_PACKET 4096
/* A CQ the soft device keeps as asked (a power of two, one kept back). */
#define OBJS_CQE 63

struct objs_bench {
	struct ibc_client *cl;
	struct ibc_ctx *ctx;
	int raw_fd;
	pid_t peer_pid;
	struct objs_sizes sz;
	uint8_t create_req[OBJS_MAX_PACKET];
	uint8_t destroy_req[OBJS_MAX_PACKET];
};

static int objs_fail(const char *what, int err)
{
	fprintf(stderr, "rdmab-bench: objs: %s: %s\n", what,
		err < 0 ? strerror(-err) : "?");
	return err;
}

static int objs_lib_fail(const char *what, int err)
{
	fprintf(stderr, "rdmab-bench: objs: %s: %s\n", what, ibc_last_error());
	return err;
}

/* Answers create-sized and destroy-sized replies (@arg: their two
 * lengths) in turn. */
static int objs_peer_main(int fd, const void *arg)
{
	return peer_alternate(fd, arg, -1);
}

/* Send @len bytes and receive the reply: its length, or -errno. */
static int objs_rt(int fd, const uint8_t *req, int len, uint8_t *rx, size_t cap)
{
	if (len < 0)
		return len;
	if (send(fd, req, (size_t)len, MSG_NOSIGNAL) < 0)
		return -errno;
	return recv_timeout(fd, rx, cap, OBJS_TIMEOUT_MS);
}

/*
 * Take the sizes from the broker: on a raw connection of this uid, a hello,
 * then one CQ create and its destroy packed as the library packs them, with
 * serials of the width every measured request has. The context is the
 * library client's (this uid's domain), which the raw connection may name:
 * the broker checks the domain, not the session, for a context.
 */
static int objs_probe(struct objs_bench *ob, const char *path,
		      uint64_t context_id)
{
	Rdmab__ObjCreateRequest cr = RDMAB__OBJ_CREATE_REQUEST__INIT;
	Rdmab__ObjDestroyRequest dr = RDMAB__OBJ_DESTROY_REQUEST__INIT;
	Rdmab__ObjAttr attr = RDMAB__OBJ_ATTR__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	uint64_t serial = PKT_SERIAL_START, id = 0;
	uint8_t buf[OBJS_MAX_PACKET];
	int fd, len, n, ret;

	ret = unix_connect(path, &fd);
	if (ret < 0)
		return ret;
	/* This session opens the context too (its descriptor is closed
	 * when the reply is dropped). */
	ret = pkt_open_session(fd, serial++, objs_rt);
	if (ret < 0)
		goto out;

	/* What ibc_cq_create() packs. */
	attr.cqe = OBJS_CQE;
	cr.context_id = context_id;
	cr.kind = IBC_OBJ_CQ;
	cr.mode = RDMAB__OBJ_CREATE_REQUEST__MODE__CREATE;
	cr.attr = &attr;
	req = (Rdmab__Request)RDMAB__REQUEST__INIT;
	req.body_case = RDMAB__REQUEST__BODY_OBJ_CREATE;
	req.obj_create = &cr;
	len = pkt_request(&req, ++serial, ob->create_req,
			  sizeof(ob->create_req));
	n = objs_rt(fd, ob->create_req, len, buf, sizeof(buf));
	ret = n < 0 ? n :
		      pkt_check_object(buf, (size_t)n, serial,
				       RDMAB__REPLY__BODY_OBJ_CREATE, &id);
	if (ret < 0)
		goto out;
	ob->sz.create_req = (size_t)len;
	ob->sz.create_rep = (size_t)n;

	dr.object_id = id;
	req = (Rdmab__Request)RDMAB__REQUEST__INIT;
	req.body_case = RDMAB__REQUEST__BODY_OBJ_DESTROY;
	req.obj_destroy = &dr;
	len = pkt_request(&req, ++serial, ob->destroy_req,
			  sizeof(ob->destroy_req));
	n = objs_rt(fd, ob->destroy_req, len, buf, sizeof(buf));
	ret = n < 0 ? n :
		      pkt_check_reply(buf, (size_t)n, serial,
				      RDMAB__REPLY__BODY_OBJ_DESTROY, NULL, 0);
	if (ret < 0)
		goto out;
	ob->sz.destroy_req = (size_t)len;
	ob->sz.destroy_rep = (size_t)n;
out:
	close(fd);
	return ret;
}

static int objs_start_peer(struct objs_bench *ob)
{
	const size_t rep_len[2] = { ob->sz.create_rep, ob->sz.destroy_rep };

	return raw_peer_start(objs_peer_main, rep_len, &ob->raw_fd,
			      &ob->peer_pid);
}

int objs_setup(const char *path, struct objs_bench **ret)
{
	/* The library's defaults, as in main.c: no reply deadline, which
	 * would arm a kernel timer per request; the alarm ends a hang. */
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET,
		.socket_path = path,
	};
	struct objs_bench *ob;
	struct ibc_caps caps;
	int err;

	ob = calloc(1, sizeof(*ob));
	if (!ob)
		return -ENOMEM;
	ob->raw_fd = -1;
	err = ibc_connect(&attr, &ob->cl);
	if (err < 0) {
		objs_lib_fail("ibc_connect", err);
		goto fail;
	}
	err = ibc_open(ob->cl, NULL, &ob->ctx);
	if (err == 0)
		err = ibc_query(ob->ctx, &caps, sizeof(caps));
	if (err < 0) {
		objs_lib_fail("ibc_open", err);
		goto fail;
	}
	/* The measured serials pack like the probe's (bench.h). */
	for (unsigned int i = 3; i < PKT_SERIAL_START && err == 0; i++)
		err = ibc_ping(ob->cl, NULL, 0);
	if (err < 0) {
		objs_lib_fail("ibc_ping", err);
		goto fail;
	}
	err = objs_probe(ob, path, caps.context_id);
	if (err < 0) {
		objs_fail("ObjCreate and ObjDestroy by hand", err);
		goto fail;
	}
	err = objs_start_peer(ob);
	if (err < 0) {
		objs_fail("cannot start the raw peer", err);
		goto fail;
	}
	*ret = ob;
	return 0;
fail:
	objs_teardown(ob);
	return err;
}

pid_t objs_peer_pid(const struct objs_bench *ob)
{
	return ob->peer_pid;
}

const struct objs_sizes *objs_sizes(const struct objs_bench *ob)
{
	return &ob->sz;
}

static int objs_broker_rep(struct objs_bench *ob, unsigned int iters,
			   uint64_t *lat)
{
	for (unsigned int i = 0; i < iters; i++) {
		uint64_t t0 = now_ns();
		struct ibc_cq *cq;
		int ret = ibc_cq_create(ob->ctx, OBJS_CQE, &cq);

		if (ret < 0)
			return objs_lib_fail("ibc_cq_create", ret);
		ret = ibc_cq_destroy(cq);
		if (ret < 0)
			return objs_lib_fail("ibc_cq_destroy", ret);
		if (lat)
			lat[i] = now_ns() - t0;
	}
	return 0;
}

static int objs_raw_rep(struct objs_bench *ob, unsigned int iters,
			uint64_t *lat)
{
	static uint8_t rx[OBJS_MAX_PACKET];
	const struct objs_sizes *s = &ob->sz;
	int fd = ob->raw_fd;

	for (unsigned int i = 0; i < iters; i++) {
		uint64_t t0 = now_ns();
		ssize_t n;

		if (send(fd, ob->create_req, s->create_req, MSG_NOSIGNAL) < 0)
			return -errno;
		n = recv(fd, rx, sizeof(rx), 0);
		if (n < 0 || (size_t)n != s->create_rep)
			return n < 0 ? -errno : -EPROTO;
		if (send(fd, ob->destroy_req, s->destroy_req, MSG_NOSIGNAL) < 0)
			return -errno;
		n = recv(fd, rx, sizeof(rx), 0);
		if (n < 0 || (size_t)n != s->destroy_rep)
			return n < 0 ? -errno : -EPROTO;
		if (lat)
			lat[i] = now_ns() - t0;
	}
	return 0;
}

/* For reference: two empty ibc_ping() round trips a pair. */
static int objs_ping_rep(struct objs_bench *ob, unsigned int iters,
			 uint64_t *lat)
{
	for (unsigned int i = 0; i < iters; i++) {
		uint64_t t0 = now_ns();
		int ret = ibc_ping(ob->cl, NULL, 0);

		if (ret == 0)
			ret = ibc_ping(ob->cl, NULL, 0);
		if (ret < 0)
			return objs_lib_fail("ibc_ping", ret);
		if (lat)
			lat[i] = now_ns() - t0;
	}
	return 0;
}

int objs_rep(struct objs_bench *ob, int raw, unsigned int iters, uint64_t *lat)
{
	int ret;

	if (raw == 2)
		return objs_ping_rep(ob, iters, lat);
	if (!raw)
		return objs_broker_rep(ob, iters, lat);
	ret = objs_raw_rep(ob, iters, lat);
	return ret < 0 ? objs_fail("raw round trips", ret) : 0;
}

void objs_teardown(struct objs_bench *ob)
{
	if (!ob)
		return;
	if (ob->raw_fd >= 0)
		close(ob->raw_fd);
	if (ob->peer_pid > 0)
		stop_child(ob->peer_pid);
	ibc_close(ob->ctx);
	ibc_disconnect(ob->cl);
	free(ob);
}
