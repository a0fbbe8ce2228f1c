// SPDX-License-Identifier: MIT
/*
 * vm-restart SOCK DEV DIR NAME: a client that lives through the broker's
 * restarts (issue 25 item 6), run by tests/vm/suite.sh's restart section
 * while systemd kills, aborts, restarts and stops the service.
 *
 * Connects to SOCK (own contexts allowed: rxe cannot import), opens DEV,
 * makes a CQ and an MR with the library's constructors, writes its client
 * id to DIR/NAME.id and creates DIR/NAME.ready. Then, for each DIR/NAME.N
 * the suite creates (N = 1, 2, ...), checks on the same connection that
 * the broker answers (a ping), still lists its session under the same id
 * (ibc_list_clients) and its CQ and MR (ibc_list_objects; on an own
 * context there are none to list, which is checked too), and prints one
 * CHECK line "NAME-N" with what it saw, then creates DIR/NAME.N.done;
 * when DIR/NAME.N.lost exists too, the suite stopped the service, and the
 * check is that the ping failed with ECONNRESET (the client then ends).
 * It ends at DIR/finish, disconnecting.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "ibclient.h"
#include "tests/vm/vmutil.h"

static char mrbuf[4096];

/* Is client @id among the broker's sessions? */
static int listed(struct ibc_client *cl, uint64_t id)
{
	struct ibc_client_entry *list;
	size_t n;
	int err, found = 0;

	err = ibc_list_clients(cl, &list, sizeof(*list), &n);
	if (err < 0)
		return err;
	for (size_t i = 0; i < n; i++)
		found |= list[i].id == id;
	ibc_list_free(list);
	return found;
}

/* The objects the broker lists for this session. */
static int objects(struct ibc_client *cl, uint64_t id)
{
	struct ibc_object_info *list;
	size_t n;
	int err, mine = 0;

	err = ibc_list_objects(cl, NULL, &list, sizeof(*list), &n);
	if (err < 0)
		return err;
	for (size_t i = 0; i < n; i++)
		mine += list[i].client_id == id;
	ibc_list_free(list);
	return mine;
}

int main(int argc, char **argv)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_FLAGS |
			     IBC_CONNECT_ATTR_TIMEOUT,
		.flags = IBC_CONNECT_ALLOW_OWN_CONTEXT,
		.timeout_ms = 60000,
	};
	struct ibc_client_info info;
	struct ibc_client *cl;
	struct ibc_ctx *ctx;
	struct ibc_cq *cq;
	struct ibc_mr *mr;
	char file[256], idtext[32];
	const char *dir, *name;
	int err, before;
	bool shared;

	if (argc != 5) {
		fprintf(stderr, "usage: vm-restart SOCK DEV DIR NAME\n");
		return 2;
	}
	attr.socket_path = argv[1];
	dir = argv[3];
	name = argv[4];
	err = ibc_connect(&attr, &cl);
	if (err == 0)
		err = ibc_client_info(cl, &info, sizeof(info));
	if (err == 0)
		err = ibc_open(cl, argv[2], &ctx);
	if (err == 0)
		err = ibc_cq_create(ctx, 16, &cq);
	if (err == 0)
		err = ibc_reg_mr(ctx, mrbuf, sizeof(mrbuf),
				 IBV_ACCESS_LOCAL_WRITE, &mr);
	if (!vm_check(err == 0, name, "connect, open %s, CQ and MR: %s (%s)",
		      argv[2], strerror(-err), err ? ibc_last_error() : "ok"))
		return 1;
	{
		struct ibc_caps caps;

		memset(&caps, 0, sizeof(caps));
		shared = ibc_query(ctx, &caps, sizeof(caps)) == 0 &&
			 caps.shared;
	}
	before = objects(cl, info.client_id);
	snprintf(file, sizeof(file), "%s.id", name);
	snprintf(idtext, sizeof(idtext), "%" PRIu64, info.client_id);
	{
		char path[512];
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, file);
		f = fopen(path, "w");
		if (f) {
			fprintf(f, "%s\n", idtext);
			fclose(f);
		}
	}
	snprintf(file, sizeof(file), "%s.ready", name);
	vm_sync_touch(dir, file);
	for (int n = 1;; n++) {
		int ping, lst, objs;

		snprintf(file, sizeof(file), "%s.%d", name, n);
		while (vm_sync_wait(dir, file, 1000) < 0)
			if (vm_sync_wait(dir, "finish", 0) == 0)
				goto done;
		ping = ibc_ping(cl, "r", 1);
		lst = ping == 0 ? listed(cl, info.client_id) : ping;
		objs = ping == 0 ? objects(cl, info.client_id) : ping;
		snprintf(file, sizeof(file), "%s.%d.lost", name, n);
		if (vm_sync_wait(dir, file, 0) == 0) {
			/* `systemctl stop` empties the store: the session
			 * cannot survive it, and the library says so. */
			snprintf(file, sizeof(file), "%s-%d", name, n);
			vm_check(ping == -ECONNRESET, file,
				 "after a stop: ping %s (%s)",
				 ping ? strerror(-ping) : "answered",
				 ping ? ibc_last_error() : "the session lived");
			fflush(stdout);
			snprintf(file, sizeof(file), "%s.%d.done", name, n);
			vm_sync_touch(dir, file);
			break;
		}
		snprintf(file, sizeof(file), "%s-%d", name, n);
		vm_check(ping == 0 && lst == 1 && objs == before, file,
			 "client %" PRIu64 " (%s context): ping %s; session "
			 "listed: %s; objects listed %d (%d before)%s%s",
			 info.client_id, shared ? "a shared" : "its own",
			 ping ? strerror(-ping) : "ok",
			 lst == 1 ? "yes" : lst == 0 ? "no" : strerror(-lst),
			 objs, before, ping ? ": " : "",
			 ping ? ibc_last_error() : "");
		fflush(stdout);
		snprintf(file, sizeof(file), "%s.%d.done", name, n);
		vm_sync_touch(dir, file);
	}
done:
	ibc_disconnect(cl);
	return vm_failures() ? 1 : 0;
}
