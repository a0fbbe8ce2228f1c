// SPDX-License-Identifier: MIT
/* The packets the benchmark sends by hand, in the library's wire format. */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "proto/wire.h"

/* What a session's first two packets and their replies fit in. */
#define PKT_SESSION_MAX 4096

static int pkt_pack(const Rdmab__Request *req, uint8_t *buf, size_t cap)
{
	size_t len = protobuf_c_message_get_packed_size(&req->base);

	if (len > cap || len > WIRE_MAX_PACKET)
		return -EMSGSIZE;
	protobuf_c_message_pack(&req->base, buf);
	return (int)len;
}

int pkt_hello(uint8_t *buf, size_t cap, uint64_t serial)
{
	Rdmab__HelloRequest hello = RDMAB__HELLO_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	hello.library_version = (char *)PACKAGE_VERSION;
	hello.pid = (uint32_t)getpid();
	hello.fork_state = RDMAB__FORK_STATE__FORK_DISABLED;
	req.version = WIRE_PROTOCOL_VERSION;
	req.serial = serial;
	req.body_case = RDMAB__REQUEST__BODY_HELLO;
	req.hello = &hello;
	return pkt_pack(&req, buf, cap);
}

int pkt_ping(uint8_t *buf, size_t cap, uint64_t serial, const uint8_t *payload,
	     size_t len)
{
	ProtobufCBinaryData ping = { 0 };
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	/* Exactly what ibc_ping() packs. */
	ping.data = (uint8_t *)payload;
	ping.len = len;
	req.version = WIRE_PROTOCOL_VERSION;
	req.serial = serial;
	req.body_case = RDMAB__REQUEST__BODY_PING;
	req.ping = ping;
	return pkt_pack(&req, buf, cap);
}

int pkt_check_reply(const uint8_t *buf, size_t len, uint64_t serial,
		    int body_case, const uint8_t *payload, size_t plen)
{
	Rdmab__DaemonMessage *msg;
	const Rdmab__Reply *r;
	int ret = 0;

	msg = rdmab__daemon_message__unpack(NULL, len, buf);
	if (!msg)
		return -EBADMSG;
	if (msg->kind_case != RDMAB__DAEMON_MESSAGE__KIND_REPLY) {
		ret = -EPROTO;
		goto out;
	}
	r = msg->reply;
	if (r->error) {
		ret = -r->error;
		goto out;
	}
	if (r->serial != serial || (int)r->body_case != body_case) {
		ret = -EPROTO;
		goto out;
	}
	if (body_case == PKT_BODY_PING &&
	    (r->ping.len != plen ||
	     (plen && memcmp(r->ping.data, payload, plen))))
		ret = -EPROTO;
out:
	rdmab__daemon_message__free_unpacked(msg, NULL);
	return ret;
}

int pkt_request(Rdmab__Request *req, uint64_t serial, uint8_t *buf, size_t cap)
{
	size_t len;

	/* What ibc_call() sets. */
	req->version = WIRE_PROTOCOL_VERSION;
	req->serial = serial;
	len = rdmab__request__get_packed_size(req);
	if (len > cap)
		return -EMSGSIZE;
	rdmab__request__pack(req, buf);
	return (int)len;
}

int pkt_check_object(const uint8_t *buf, size_t len, uint64_t serial,
		     int body_case, uint64_t *ret_id)
{
	Rdmab__DaemonMessage *msg;
	const Rdmab__Reply *r;
	uint64_t id = 0;
	int ret = -EPROTO;

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
	if (r->serial != serial || (int)r->body_case != body_case)
		goto out;
	if (body_case == RDMAB__REPLY__BODY_OBJ_CREATE)
		id = r->obj_create->object_id;
	else if (body_case == RDMAB__REPLY__BODY_XRCD_OPEN)
		id = r->xrcd_open->object_id;
	if (id) {
		*ret_id = id;
		ret = 0;
	}
out:
	rdmab__daemon_message__free_unpacked(msg, NULL);
	return ret;
}

int pkt_open_session(int fd, uint64_t serial, pkt_rt_fn *rt)
{
	Rdmab__OpenContextRequest oc = RDMAB__OPEN_CONTEXT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	uint8_t buf[PKT_SESSION_MAX], tmp[PKT_SESSION_MAX];
	int len, n, ret;

	n = rt(fd, buf, pkt_hello(buf, sizeof(buf), serial), buf, sizeof(buf));
	ret = n < 0 ? n :
		      pkt_check_reply(buf, (size_t)n, serial, PKT_BODY_HELLO,
				      NULL, 0);
	if (ret < 0)
		return ret;
	oc.device = "";
	req.body_case = RDMAB__REQUEST__BODY_OPEN_CONTEXT;
	req.open_context = &oc;
	len = pkt_request(&req, ++serial, tmp, sizeof(tmp));
	n = rt(fd, tmp, len, buf, sizeof(buf));
	return n < 0 ? n :
		       pkt_check_reply(buf, (size_t)n, serial,
				       RDMAB__REPLY__BODY_OPEN_CONTEXT, NULL,
				       0);
}
