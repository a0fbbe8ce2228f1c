// SPDX-License-Identifier: MIT
/* Administrators' calls: the broker checks who asks. */
#include "config.h"

#include "libclient/client.h"

IBC_EXPORT int ibc_admin_evict(struct ibc_client *client, uint64_t client_id)
{
	/* The same request without its rekey fields (libclient/rekey.c). */
	return ibc_admin_evict_ex(client, client_id, 0);
}
