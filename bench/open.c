// SPDX-License-Identifier: MIT
/*
 * ibc_open + ibc_close (issue 3): one pair through libibclient to
 * rdmabrokerd on the soft device, against the socket work the pair cannot
 * avoid: one SOCK_SEQPACKET round trip whose reply carries one descriptor
 * (closed by the client, as ibc_close() closes its copy) and one that
 * carries none, with packets of the sizes the broker's have; once with a
 * blocking peer (raw), once with bench-evsrv, the event-driven floor, and
 * libibclient's system calls on the client's side (floor).
 *
 * Steady state: a holder, a second client of the same uid, keeps the
 * domain's context open for the whole run, so an open finds the context and
 * a close only drops a reference. Cold: a client in a private domain,
 * where every open creates the context (a sealed memfd) and every close
 * frees it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/bench.h"
#include "include/ibclient.h"
#include "daemon/device/soft/soft.h"
#include "proto/wire.h"

#define OPEN_TIMEOUT_MS 10000
#define OPEN_MAX_PACKET 4096

struct open_bench {
	const char *device;
	/* Holds the domain's context open from setup to teardown. */
	struct ibc_client *holder;
	struct ibc_ctx *held;
	uint64_t held_id;
	/* The measured clients; [OPEN_RAW] stays NULL. */
	struct ibc_client *cl[OPEN_SIDES];
	char domain[OPEN_SIDES][64];
	uint64_t last_cold_id;
	/* The raw baseline: the driver's end and the peer. */
	int raw_fd;
	pid_t peer_pid;
	/* The floor: a connection to bench-evsrv --fd-reply-size. */
	int floor_fd;
	struct open_sizes sz;
	uint8_t open_req[OPEN_MAX_PACKET];
	uint8_t close_req[OPEN_MAX_PACKET];
};

static int open_fail(const char *what, int err)
{
	fprintf(stderr, "rdmab-bench: %s: %s\n", what,
		err < 0 ? strerror(-err) : "?");
	return err;
}

static int open_lib_fail(const char *what, int err)
{
	fprintf(stderr, "rdmab-bench: %s: %s\n", what, ibc_last_error());
	return err;
}

/* A descriptor like the soft device's context: a sealed memfd that starts
 * with a context header. */
static int open_sealed_memfd(void)
{
	struct soft_ctx_header h = {
		.magic = SOFT_CTX_MAGIC,
		.version = SOFT_CTX_VERSION,
	};
	int fd, err;

	snprintf(h.device, sizeof(h.device), "%s", SOFT_DEVICE_NAME);
	fd = memfd_create("rdmab-bench-context",
			  MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    fcntl(fd, F_ADD_SEALS,
		  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) <
		    0) {
		err = errno ? -errno : -EIO;
		close(fd);
		return err;
	}
	return fd;
}

int open_peer_serve(int fd, const struct open_sizes *sz)
{
	const size_t rep_len[2] = { sz->open_rep, sz->close_rep };
	int mfd, ret;

	mfd = open_sealed_memfd();
	if (mfd < 0)
		return mfd;
	ret = peer_alternate(fd, rep_len, mfd);
	close(mfd);
	return ret;
}

/* The raw peer: answers the packets on @fd alternately with an open-sized
 * reply carrying one sealed memfd and a close-sized reply carrying none
 * (@arg: the struct open_sizes). */
static int open_peer_main(int fd, const void *arg)
{
	return open_peer_serve(fd, arg);
}

/* Connect a client; @push: move its serials to where they pack like the
 * probe's (bench.h), with pings that also warm the connection up. */
static int open_connect(const char *path, uint32_t flags, int push,
			struct ibc_client **ret_cl, char *domain, size_t cap)
{
	/* No reply deadline, the library's default, as in main.c. */
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_FLAGS,
		.socket_path = path,
		.flags = flags,
	};
	struct ibc_client_info info;
	struct ibc_client *cl;
	int ret;

	ret = ibc_connect(&attr, &cl);
	if (ret < 0)
		return open_lib_fail("ibc_connect", ret);
	/* The hello was serial 1. */
	for (unsigned int i = 1; push && i < PKT_SERIAL_START; i++) {
		ret = ibc_ping(cl, NULL, 0);
		if (ret < 0) {
			open_lib_fail("ibc_ping", ret);
			ibc_disconnect(cl);
			return ret;
		}
	}
	if (domain) {
		ibc_client_info(cl, &info, sizeof(info));
		snprintf(domain, cap, "%s", info.domain);
	}
	*ret_cl = cl;
	return 0;
}

/* One round trip by hand: send @len bytes of @req, wait for the reply
 * and its descriptors. Returns the reply's length or -errno. */
static int open_rt(int fd, const uint8_t *req, int len, uint8_t *rx, size_t cap,
		   struct wire_fds *fds)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r;

	wire_fds_init(fds);
	if (len < 0)
		return len;
	if (send(fd, req, (size_t)len, MSG_NOSIGNAL) < 0)
		return -errno;
	do
		r = poll(&p, 1, OPEN_TIMEOUT_MS);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -ETIMEDOUT;
	r = wire_recv(fd, rx, cap, fds, MSG_DONTWAIT);
	return r == 0 ? -ECONNRESET : r;
}

/* Check the OpenContext reply to @serial: no error, the context of the
 * holder (steady state), descriptor 0 a sealed memfd. */
static int open_check_open_reply(const struct open_bench *ob,
				 const uint8_t *buf, size_t len,
				 uint64_t serial, struct wire_fds *fds)
{
	Rdmab__DaemonMessage *msg;
	const Rdmab__Reply *r;
	int ret = -EPROTO, seals;

	msg = rdmab__daemon_message__unpack(NULL, len, buf);
	if (!msg)
		return -EBADMSG;
	if (msg->kind_case != RDMAB__DAEMON_MESSAGE__KIND_REPLY)
		goto out;
	r = msg->reply;
	if (r->error) {
		ret = -r->error;
		goto out;
	}
	if (r->serial != serial ||
	    r->body_case != RDMAB__REPLY__BODY_OPEN_CONTEXT ||
	    r->open_context->context_id != ob->held_id ||
	    r->open_context->fd_index != 0 || fds->n != 1)
		goto out;
	seals = fcntl(fds->fd[0], F_GET_SEALS);
	if (seals >= 0 && (seals & F_SEAL_WRITE))
		ret = 0;
out:
	rdmab__daemon_message__free_unpacked(msg, NULL);
	return ret;
}

/*
 * Take the packet sizes from the broker itself, as probe_sizes() does for
 * ping: on a connection of the holder's uid, a hello, then one OpenContext
 * and one CloseContext packed exactly as ibc_open() and ibc_close() pack
 * them, with serials of the width every measured request has. Requests
 * count as packed, replies as received. The packed requests are what the
 * raw baseline sends.
 */
static int open_probe(struct open_bench *ob, const char *path)
{
	Rdmab__OpenContextRequest oc = RDMAB__OPEN_CONTEXT_REQUEST__INIT;
	Rdmab__CloseContextRequest cc = RDMAB__CLOSE_CONTEXT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	uint64_t serial = PKT_SERIAL_START;
	uint8_t buf[OPEN_MAX_PACKET];
	struct wire_fds fds;
	int fd, len, n, ret;

	ret = unix_connect(path, &fd);
	if (ret < 0)
		return ret;
	n = open_rt(fd, buf, pkt_hello(buf, sizeof(buf), serial), buf,
		    sizeof(buf), &fds);
	ret = n < 0 ? n :
		      pkt_check_reply(buf, (size_t)n, serial, PKT_BODY_HELLO,
				      NULL, 0);
	if (ret == 0 && fds.n)
		ret = -EPROTO;
	wire_fds_close(&fds);
	if (ret < 0)
		goto out;

	oc.device = (char *)ob->device;
	req.body_case = RDMAB__REQUEST__BODY_OPEN_CONTEXT;
	req.open_context = &oc;
	len = pkt_request(&req, ++serial, ob->open_req, sizeof(ob->open_req));
	n = open_rt(fd, ob->open_req, len, buf, sizeof(buf), &fds);
	ret = n < 0 ? n :
		      open_check_open_reply(ob, buf, (size_t)n, serial, &fds);
	wire_fds_close(&fds);
	if (ret < 0)
		goto out;
	ob->sz.open_req = (size_t)len;
	ob->sz.open_rep = (size_t)n;

	cc.context_id = ob->held_id;
	req = (Rdmab__Request)RDMAB__REQUEST__INIT;
	req.body_case = RDMAB__REQUEST__BODY_CLOSE_CONTEXT;
	req.close_context = &cc;
	len = pkt_request(&req, ++serial, ob->close_req, sizeof(ob->close_req));
	n = open_rt(fd, ob->close_req, len, buf, sizeof(buf), &fds);
	ret = n < 0 ? n :
		      pkt_check_reply(buf, (size_t)n, serial,
				      RDMAB__REPLY__BODY_CLOSE_CONTEXT, NULL,
				      0);
	if (ret == 0 && fds.n)
		ret = -EPROTO;
	wire_fds_close(&fds);
	if (ret < 0)
		goto out;
	ob->sz.close_req = (size_t)len;
	ob->sz.close_rep = (size_t)n;
out:
	close(fd);
	return ret;
}

static int open_start_peer(struct open_bench *ob)
{
	return raw_peer_start(open_peer_main, &ob->sz, &ob->raw_fd,
			      &ob->peer_pid);
}

int open_setup(const char *path, const char *device, struct open_bench **ret)
{
	struct open_bench *ob;
	struct ibc_caps caps;
	int err;

	ob = calloc(1, sizeof(*ob));
	if (!ob)
		return -ENOMEM;
	ob->device = device;
	ob->raw_fd = -1;
	ob->floor_fd = -1;
	err = open_connect(path, 0, 0, &ob->holder, NULL, 0);
	if (err < 0)
		goto fail;
	err = ibc_open(ob->holder, device, &ob->held);
	if (err < 0) {
		open_lib_fail("the holder's ibc_open", err);
		goto fail;
	}
	ibc_query(ob->held, &caps, sizeof(caps));
	ob->held_id = caps.context_id;
	err = open_connect(path, 0, 1, &ob->cl[OPEN_STEADY],
			   ob->domain[OPEN_STEADY], sizeof(ob->domain[0]));
	if (err == 0)
		err = open_connect(path, IBC_CONNECT_PRIVATE_DOMAIN, 1,
				   &ob->cl[OPEN_COLD], ob->domain[OPEN_COLD],
				   sizeof(ob->domain[0]));
	if (err < 0)
		goto fail;
	if (strcmp(ob->domain[OPEN_STEADY], caps.domain) ||
	    !strcmp(ob->domain[OPEN_COLD], caps.domain)) {
		fprintf(stderr,
			"rdmab-bench: open: the clients got domains %s and "
			"%s, the holder %s\n",
			ob->domain[OPEN_STEADY], ob->domain[OPEN_COLD],
			caps.domain);
		err = -EPROTO;
		goto fail;
	}
	err = open_probe(ob, path);
	if (err < 0) {
		open_fail("open: OpenContext and CloseContext by hand", err);
		goto fail;
	}
	err = open_start_peer(ob);
	if (err < 0) {
		open_fail("cannot start the raw open/close peer", err);
		goto fail;
	}
	*ret = ob;
	return 0;

fail:
	open_teardown(ob);
	return err;
}

pid_t open_peer_pid(const struct open_bench *ob)
{
	return ob->peer_pid;
}

const struct open_sizes *open_sizes(const struct open_bench *ob)
{
	return &ob->sz;
}

void open_floor_adopt(struct open_bench *ob, int fd)
{
	if (ob->floor_fd >= 0)
		close(ob->floor_fd);
	ob->floor_fd = fd;
}

/* Warm-up only (outside the timed pairs): steady opens get the holder's
 * context, cold opens a new one each. Ids carry no order (rdmabrokerd(8),
 * Ids) but are never reused: a new context is one whose id differs from
 * the last. */
static int open_check_ctx(struct open_bench *ob, enum open_side side,
			  struct ibc_ctx *ctx)
{
	struct ibc_caps caps;
	int ret = ibc_query(ctx, &caps, sizeof(caps));

	if (ret < 0)
		return ret;
	if (caps.kind != IBC_DEVICE_SOFT || !caps.shared)
		return -EPROTO;
	if (side == OPEN_STEADY)
		return caps.context_id == ob->held_id ? 0 : -EPROTO;
	if (caps.context_id == ob->held_id ||
	    caps.context_id == ob->last_cold_id)
		return -EPROTO;
	ob->last_cold_id = caps.context_id;
	return 0;
}

/* After a repetition: the broker released every close. The steady domain
 * holds the holder's context only, the cold one none. */
static int open_check_domain(struct open_bench *ob, enum open_side side)
{
	struct ibc_domain_info *l;
	size_t n;
	int ret;

	ret = ibc_list_domains(ob->cl[side], &l, sizeof(*l), &n);
	if (ret < 0)
		return open_lib_fail("ibc_list_domains", ret);
	ret = -ENOENT;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(l[i].name, ob->domain[side]))
			continue;
		ret = l[i].contexts == (side == OPEN_STEADY ? 1u : 0u) ?
			      0 :
			      -EPROTO;
		if (ret < 0)
			fprintf(stderr,
				"rdmab-bench: domain %s has %u contexts "
				"after the repetition\n",
				l[i].name, l[i].contexts);
		break;
	}
	ibc_list_free(l);
	return ret;
}

static int open_broker_rep(struct open_bench *ob, enum open_side side,
			   unsigned int iters, uint64_t *lat)
{
	struct ibc_client *cl = ob->cl[side];

	for (unsigned int i = 0; i < iters; i++) {
		uint64_t t0 = now_ns();
		struct ibc_ctx *ctx;
		int ret = ibc_open(cl, ob->device, &ctx);

		if (ret < 0)
			return open_lib_fail("ibc_open", ret);
		if (!lat) {
			ret = open_check_ctx(ob, side, ctx);
			if (ret < 0) {
				ibc_close(ctx);
				return open_fail("open: unexpected context",
						 ret);
			}
		}
		ibc_close(ctx);
		if (lat)
			lat[i] = now_ns() - t0;
	}
	return open_check_domain(ob, side);
}

/* @iters raw pairs on @fd: @oreq and @creq, of the sizes in @s, sent
 * with @flags. */
static int open_raw_rep(int fd, const uint8_t *oreq, const uint8_t *creq,
			const struct open_sizes *s, int flags,
			unsigned int iters, uint64_t *lat)
{
	static uint8_t rx[OPEN_MAX_PACKET];
	struct wire_fds fds;

	flags |= MSG_NOSIGNAL;
	for (unsigned int i = 0; i < iters; i++) {
		uint64_t t0 = now_ns();
		unsigned int nfds;
		int n;

		if (send(fd, oreq, s->open_req, flags) < 0)
			return -errno;
		n = wire_recv(fd, rx, sizeof(rx), &fds, 0);
		if (n < 0)
			return n;
		nfds = fds.n;
		/* ibc_close() closes the library's copy. */
		wire_fds_close(&fds);
		if ((size_t)n != s->open_rep || nfds != 1)
			return n == 0 ? -ECONNRESET : -EPROTO;
		if (send(fd, creq, s->close_req, flags) < 0)
			return -errno;
		/* A reply without descriptors, as the library reads it. */
		n = wire_recv_bare(fd, rx, sizeof(rx), 0);
		if (n < 0)
			return n;
		if ((size_t)n != s->close_rep)
			return n == 0 ? -ECONNRESET : -EPROTO;
		if (lat)
			lat[i] = now_ns() - t0;
	}
	return 0;
}

int open_rep(struct open_bench *ob, enum open_side side, unsigned int iters,
	     uint64_t *lat)
{
	int ret;

	if (side == OPEN_RAW || side == OPEN_FLOOR) {
		/* The floor sends as ibc_call() does. */
		ret = open_raw_rep(side == OPEN_RAW ? ob->raw_fd : ob->floor_fd,
				   ob->open_req, ob->close_req, &ob->sz,
				   side == OPEN_RAW ? 0 : MSG_DONTWAIT, iters,
				   lat);
		if (ret < 0)
			return open_fail(side == OPEN_RAW ?
						 "raw open/close round trips" :
						 "floor open/close round trips",
					 ret);
		return 0;
	}
	return open_broker_rep(ob, side, iters, lat);
}

int open_pairs_raw(int fd, const struct open_sizes *sz, int send_flags,
		   unsigned int iters)
{
	static uint8_t oreq[OPEN_MAX_PACKET], creq[OPEN_MAX_PACKET];

	if (sz->open_req > sizeof(oreq) || sz->close_req > sizeof(creq))
		return -EMSGSIZE;
	memset(oreq, 'o', sizeof(oreq));
	memset(creq, 'c', sizeof(creq));
	return open_raw_rep(fd, oreq, creq, sz, send_flags, iters, NULL);
}

int open_pairs_broker(const char *path, const char *device,
		      unsigned int settle_ms, pid_t quiet, unsigned int iters)
{
	struct ibc_client *holder = NULL, *cl = NULL;
	struct ibc_ctx *held = NULL;
	int ret;

	ret = open_connect(path, 0, 0, &holder, NULL, 0);
	if (ret == 0) {
		ret = ibc_open(holder, device, &held);
		if (ret < 0)
			open_lib_fail("the holder's ibc_open", ret);
	}
	if (ret == 0)
		ret = open_connect(path, 0, 0, &cl, NULL, 0);
	if (ret == 0 && settle_ms)
		sleep_ms(settle_ms);
	for (unsigned int i = 0; ret == 0 && i < iters; i++) {
		struct ibc_ctx *ctx;

		if (quiet > 0)
			ret = wait_in_epoll(quiet, OPEN_TIMEOUT_MS);
		if (ret < 0)
			break;
		ret = ibc_open(cl, device, &ctx);
		if (ret < 0) {
			open_lib_fail("ibc_open", ret);
			break;
		}
		if (quiet > 0)
			ret = wait_in_epoll(quiet, OPEN_TIMEOUT_MS);
		ibc_close(ctx);
	}
	ibc_disconnect(cl);
	ibc_close(held);
	ibc_disconnect(holder);
	return ret;
}

void open_teardown(struct open_bench *ob)
{
	if (!ob)
		return;
	/* End of stream: the peer exits. */
	if (ob->raw_fd >= 0)
		close(ob->raw_fd);
	if (ob->floor_fd >= 0)
		close(ob->floor_fd);
	if (ob->peer_pid > 0)
		stop_child(ob->peer_pid);
	ibc_disconnect(ob->cl[OPEN_COLD]);
	ibc_disconnect(ob->cl[OPEN_STEADY]);
	ibc_close(ob->held);
	ibc_disconnect(ob->holder);
	free(ob);
}
