// SPDX-License-Identifier: MIT
/*
 * RSS on rxe, run by tests/vm/suite.sh inside the VM:
 *
 *   vm-rss client DEV
 *	rxe has no receive WQs and no indirection tables: the broker reports
 *	no RSS for DEV (max_rss_table_size 0, no RSS QP types), and
 *	ibc_rss_create answers EOPNOTSUPP with a sentence naming DEV
 *   vm-rss rawcaps DEV
 *	started by systemd-run with the unit's User=, AmbientCapabilities=,
 *	CapabilityBoundingSet= and SystemCallFilter=: with CAP_NET_RAW
 *	dropped from the effective set (daemon/device/caps.c, as the daemon does
 *at start-up) a RAW_PACKET QP is refused with EPERM by the kernel's capability
 *check; raised, the request gets past it to the driver's own answer (rxe makes
 *no RAW_PACKET QPs)
 *
 * Prints CHECK lines (vmutil.h); exits 0 when all passed.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "daemon/device/caps.h"
#include "include/ibclient.h"
#include "tests/vm/vmutil.h"

static int client(const char *dev)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_FLAGS | IBC_CONNECT_ATTR_TIMEOUT,
		.flags = IBC_CONNECT_ALLOW_OWN_CONTEXT,
		.timeout_ms = 20000,
	};
	struct ibc_rss_attr ra = { .port_num = 1, .num_wqs = 1 };
	uint64_t wq = 1;
	struct ibc_client *cl;
	struct ibc_caps caps;
	struct ibc_ctx *ctx;
	struct ibc_rss *rss;
	int err;

	err = ibc_connect(&attr, &cl);
	if (!vm_check(err == 0, "rss-connect", "ibc_connect: %d (%s)", err,
		      err < 0 ? ibc_last_error() : "success"))
		return 1;
	err = ibc_open(cl, dev, &ctx);
	if (!vm_check(err == 0, "rss-open", "ibc_open %s: %d (%s)", dev, err,
		      err < 0 ? ibc_last_error() : "success"))
		return 1;
	ibc_query(ctx, &caps, sizeof(caps));
	vm_check(caps.max_rss_table_size == 0 && caps.rss_qp_types == 0,
		 "rss-caps",
		 "%s: max_rss_table_size %u, rss_qp_types 0x%x, max_wq %u", dev,
		 caps.max_rss_table_size, caps.rss_qp_types, caps.max_wq);
	ra.wq_ids = &wq;
	ra.hash_fields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4;
	err = ibc_rss_create(ctx, &ra, &rss);
	vm_check(err == -EOPNOTSUPP && strstr(ibc_last_error(), dev),
		 "rss-eopnotsupp", "ibc_rss_create on %s: %d (%s)", dev, err,
		 ibc_last_error());
	ibc_disconnect(cl);
	return vm_failures() ? 1 : 0;
}

static int raw_qp_errno(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RAW_PACKET,
		.cap = { .max_send_wr = 1,
			 .max_recv_wr = 1,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp;

	errno = 0;
	qp = ibv_create_qp(pd, &a);
	if (qp) {
		ibv_destroy_qp(qp);
		return 0;
	}
	return errno ? errno : -1;
}

static int rawcaps(const char *dev)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	struct caps_saved saved;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int e1, e2, err;

	for (int i = 0; list && list[i] && !ctx; i++)
		if (strcmp(ibv_get_device_name(list[i]), dev) == 0)
			ctx = ibv_open_device(list[i]);
	if (!vm_check(ctx, "rawcaps-open", "ibv_open_device %s", dev))
		return 1;
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	if (!vm_check(pd && cq, "rawcaps-objects", "PD and CQ on %s", dev))
		return 1;
	vm_check(caps_net_raw_permitted() == 1, "rawcaps-permitted",
		 "CAP_NET_RAW permitted (AmbientCapabilities=): %d",
		 caps_net_raw_permitted());
	err = caps_net_raw_lower();
	e1 = raw_qp_errno(pd, cq);
	vm_check(err == 0 && caps_net_raw_effective() == 0 && e1 == EPERM,
		 "rawcaps-dropped",
		 "CAP_NET_RAW not effective: a RAW_PACKET QP gets %s (want "
		 "EPERM)",
		 strerror(e1));
	err = caps_net_raw_raise(&saved);
	e2 = raw_qp_errno(pd, cq);
	vm_check(err == 0 && e2 != EPERM, "rawcaps-raised",
		 "CAP_NET_RAW raised (capset allowed by SystemCallFilter=: "
		 "%s): a RAW_PACKET QP gets %s, the driver's answer",
		 err ? strerror(-err) : "yes", e2 ? strerror(e2) : "a QP");
	caps_effective_restore(&saved);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	if (list)
		ibv_free_device_list(list);
	return vm_failures() ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "client") == 0)
		return client(argv[2]);
	if (argc == 3 && strcmp(argv[1], "rawcaps") == 0)
		return rawcaps(argv[2]);
	fprintf(stderr, "Usage: vm-rss client DEV | vm-rss rawcaps DEV\n");
	return 2;
}
