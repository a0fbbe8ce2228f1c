// SPDX-License-Identifier: MIT
/* Administrators' calls: the broker checks who asks. */
#include "config.h"

#include <errno.h>

#include "libclient/client.h"

IBC_EXPORT int ibc_admin_evict(struct ibc_client *client, uint64_t client_id)
{
	Rdmab__EvictRequest er = RDMAB__EVICT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct ibc_reply r;
	int err;

	if (!client)
		return ibc_set_error(-EINVAL, "client is NULL");
	if (!client_id)
		return ibc_set_error(-EINVAL, "client id 0 names no client");
	er.client_id = client_id;
	req.body_case = RDMAB__REQUEST__BODY_EVICT;
	req.evict = &er;
	err = ibc_call(client, &req, NULL, 0, &r);
	if (err < 0)
		return err;
	if (r.reply->body_case != RDMAB__REPLY__BODY_EVICT)
		err = ibc_set_error(-EPROTO, "the broker answered evict with "
					     "something else");
	ibc_reply_free(&r);
	return err;
}
