// SPDX-License-Identifier: MIT
/* Session calls: what the broker said at connect, ping, status. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "libclient/client.h"

IBC_EXPORT int ibc_client_info(struct ibc_client *client,
			       struct ibc_client_info *ret, size_t size)
{
	int err;

	if (!client || !ret)
		return ibc_set_error(-EINVAL, "client or ret is NULL");
	if (ibc_stale(client))
		return ibc_stale_error(client);
	err = ibc_check_size("ibc_client_info", size,
			     IBC_SIZE_V0(struct ibc_client_info, num_devices));
	if (err < 0)
		return err;
	ibc_copy_out(ret, size, &client->info, sizeof(client->info));
	return 0;
}

IBC_EXPORT int ibc_ping(struct ibc_client *client, const void *payload,
			size_t len)
{
	ProtobufCBinaryData ping = { 0 };
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct ibc_reply r;
	int ret;

	if (!client || (len && !payload))
		return ibc_set_error(-EINVAL, "client or payload is NULL");
	if (len > IBC_PING_MAX)
		return ibc_set_error(-EMSGSIZE,
				     "ping payload of %zu bytes exceeds %d",
				     len, IBC_PING_MAX);
	ping.data = (uint8_t *)payload;
	ping.len = len;
	req.body_case = RDMAB__REQUEST__BODY_PING;
	req.ping = ping;
	ret = ibc_call(client, &req, 0, &r);
	if (ret < 0)
		return ret;
	if (r.reply->body_case != RDMAB__REPLY__BODY_PING ||
	    r.reply->ping.len != len ||
	    (len && memcmp(r.reply->ping.data, payload, len)))
		ret = ibc_set_error(-EPROTO,
				    "the broker's ping reply does not match "
				    "the request");
	ibc_reply_free(&r);
	return ret;
}

IBC_EXPORT int ibc_status(struct ibc_client *client, struct ibc_status *ret,
			  size_t size)
{
	Rdmab__StatusRequest sr = RDMAB__STATUS_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	const Rdmab__StatusReply *s;
	struct ibc_status out = { 0 };
	struct ibc_reply r;
	int err;

	if (!client || !ret)
		return ibc_set_error(-EINVAL, "client or ret is NULL");
	err = ibc_check_size("ibc_status", size,
			     IBC_SIZE_V0(struct ibc_status, requests_served));
	if (err < 0)
		return err;
	req.body_case = RDMAB__REQUEST__BODY_STATUS;
	req.status = &sr;
	err = ibc_call(client, &req, 0, &r);
	if (err < 0)
		return err;
	if (r.reply->body_case != RDMAB__REPLY__BODY_STATUS) {
		err = ibc_set_error(-EPROTO,
				    "the broker answered status without a "
				    "status reply");
		goto out;
	}
	s = r.reply->status;
	snprintf(out.daemon_version, sizeof(out.daemon_version), "%s",
		 s->daemon_version);
	snprintf(out.device_kind, sizeof(out.device_kind), "%s",
		 s->device_kind);
	out.protocol_version = s->protocol_version;
	out.daemon_pid = s->pid;
	out.uptime_usec = s->uptime_usec;
	out.clients = s->clients;
	out.max_clients = s->max_clients;
	out.requests_served = s->requests_served;
	/* An older broker sends none: its figures were the daemon's. */
	snprintf(out.domain, sizeof(out.domain), "%s",
		 s->domain ? s->domain : "");
	out.generation = s->generation;
	out.restarts = s->restarts;
	out.last_restore_usec = s->last_restore_usec;
	snprintf(out.last_restore, sizeof(out.last_restore), "%s",
		 s->last_restore ? s->last_restore : "");
	snprintf(out.journal, sizeof(out.journal), "%s",
		 s->journal ? s->journal : "");
	ibc_copy_out(ret, size, &out, sizeof(out));
out:
	ibc_reply_free(&r);
	return err;
}
