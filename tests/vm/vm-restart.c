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
 * context there are none to list, which is checked too), that it was told
 * the broker's new generation (IBC_EVENT_BROKER_RESTARTED, the
 * generation ibc_status() gives), that a new CQ can be made and destroyed,
 * that it was told of no device removal, and on the soft device that its
 * DM reads the bytes written before. On rxe its context is its own
 * ibv_open_device(): the broker's context of the domain, which rxe cannot
 * import again, is opened anew under the same id (rdmabrokerd(8)
 * RESTART), and a device-removed event would make the library drop the
 * client's context, CQ and MR. It prints one CHECK line "NAME-N" with
 * what it saw, then creates DIR/NAME.N.done;
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

/* What the event callback saw, read between rounds. */
static struct {
	unsigned int restarted, removed;
	uint64_t generation, removed_ctx;
} seen;

static void on_event(struct ibc_client *cl, const struct ibc_event *ev,
		     void *arg)
{
	(void)cl;
	(void)arg;
	if (ev->type == IBC_EVENT_BROKER_RESTARTED) {
		seen.restarted++;
		seen.generation = ev->object_id;
	} else if (ev->type == IBC_EVENT_DEVICE_REMOVED) {
		seen.removed++;
		seen.removed_ctx = ev->object_id;
	}
}

/* Open @dev and make a CQ and an MR there; on the soft device a DM too,
 * with @text written into it. */
static int make_objects(struct ibc_client *cl, const char *dev,
			struct ibc_ctx **ctx, struct ibc_cq **cq,
			struct ibc_mr **mr, struct ibc_dm **dm,
			const char *text, size_t len)
{
	struct ibc_caps caps;
	int err;

	err = ibc_open(cl, dev, ctx);
	if (err == 0)
		err = ibc_cq_create(*ctx, 16, cq);
	if (err == 0)
		err = ibc_reg_mr(*ctx, mrbuf, sizeof(mrbuf),
				 IBV_ACCESS_LOCAL_WRITE, mr);
	memset(&caps, 0, sizeof(caps));
	if (err == 0)
		err = ibc_query(*ctx, &caps, sizeof(caps));
	*dm = NULL;
	if (err == 0 && caps.kind == IBC_DEVICE_SOFT) {
		err = ibc_dm_alloc(*ctx, len, 0, dm);
		if (err == 0)
			err = ibc_dm_write(*dm, 0, text, len);
	}
	return err;
}

/* Are the CQ's verbs and a new CQ of @ctx usable? 0 or -errno. */
static int ctx_works(struct ibc_ctx *ctx, struct ibc_cq *cq, bool verbs)
{
	struct ibc_cq *cq2;
	int err;

	errno = 0;
	if (verbs && !ibc_verbs_cq(cq))
		return errno ? -errno : -EIO;
	err = ibc_cq_create(ctx, 8, &cq2);
	if (err == 0)
		err = ibc_cq_destroy(cq2);
	return err;
}

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
			     IBC_CONNECT_ATTR_TIMEOUT |
			     IBC_CONNECT_ATTR_EVENT_CB,
		.flags = IBC_CONNECT_ALLOW_OWN_CONTEXT,
		.timeout_ms = 60000,
		.event_cb = on_event,
	};
	static const char text[64] = "written before the restarts";
	struct ibc_client_info info;
	struct ibc_client *cl;
	struct ibc_ctx *ctx;
	struct ibc_cq *cq;
	struct ibc_mr *mr;
	struct ibc_dm *dm;
	struct ibc_caps caps;
	char file[256], idtext[32];
	const char *dir, *name, *dev;
	int err, before;
	bool shared, verbs;

	if (argc != 5) {
		fprintf(stderr, "usage: vm-restart SOCK DEV DIR NAME\n");
		return 2;
	}
	attr.socket_path = argv[1];
	dev = argv[2];
	dir = argv[3];
	name = argv[4];
	err = ibc_connect(&attr, &cl);
	if (err == 0)
		err = ibc_client_info(cl, &info, sizeof(info));
	if (err == 0)
		err = make_objects(cl, dev, &ctx, &cq, &mr, &dm, text,
				   sizeof(text));
	if (!vm_check(err == 0, name, "connect, open %s, CQ and MR%s: %s (%s)",
		      dev, dm ? ", DM written" : "", strerror(-err),
		      err ? ibc_last_error() : "ok"))
		return 1;
	memset(&caps, 0, sizeof(caps));
	shared = ibc_query(ctx, &caps, sizeof(caps)) == 0 && caps.shared;
	verbs = caps.kind == IBC_DEVICE_VERBS;
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
		struct ibc_status st;
		char got[sizeof(text)], dmtext[160] = "";
		int ping, lst, objs, works, stat;
		bool removed, ok;

		snprintf(file, sizeof(file), "%s.%d", name, n);
		while (vm_sync_wait(dir, file, 1000) < 0)
			if (vm_sync_wait(dir, "finish", 0) == 0)
				goto done;
		memset(&seen, 0, sizeof(seen));
		ping = ibc_ping(cl, "r", 1);
		/* The restart's events, read by the ping or waiting. */
		if (ping == 0)
			ibc_dispatch(cl);
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
		memset(&st, 0, sizeof(st));
		stat = ping == 0 ? ibc_status(cl, &st, sizeof(st)) : ping;
		lst = ping == 0 ? listed(cl, info.client_id) : ping;
		objs = ping == 0 ? objects(cl, info.client_id) : ping;
		works = ctx_works(ctx, cq, verbs);
		/* What the library answers for a context it dropped. */
		removed = works == -ENODEV;
		if (dm) {
			memset(got, 0, sizeof(got));
			err = ibc_dm_read(dm, got, 0, sizeof(got));
			snprintf(dmtext, sizeof(dmtext), "; DM reads %s",
				 err ? strerror(-err) :
				 memcmp(got, text, sizeof(text)) ?
				       "other bytes" :
				       "the same bytes");
			if (!err && memcmp(got, text, sizeof(text)))
				err = -EIO;
		} else {
			err = 0;
		}
		snprintf(file, sizeof(file), "%s-%d", name, n);
		ok = ping == 0 && stat == 0 && lst == 1 &&
		     seen.restarted == 1 && seen.generation == st.generation &&
		     err == 0 && works == 0 && objs == before &&
		     seen.removed == 0;
		vm_check(ok, file,
			 "client %" PRIu64 " (%s context): ping %s; session "
			 "listed: %s; objects listed %d (%d before); restart "
			 "events %u, generation %" PRIu64 " (status %" PRIu64
			 "); device-removed events %u (context %" PRIu64
			 ", its own %" PRIu64 "); the context %s%s%s%s",
			 info.client_id, shared ? "a shared" : "its own",
			 ping ? strerror(-ping) : "ok",
			 lst == 1 ? "yes" :
			 lst == 0 ? "no" :
				    strerror(-lst),
			 objs, before, seen.restarted, seen.generation,
			 st.generation, seen.removed, seen.removed_ctx,
			 caps.context_id,
			 removed ? "was dropped" :
			 works	 ? "fails: " :
				   "works (a new CQ)",
			 !removed && works ? strerror(-works) : "", dmtext,
			 ping ? ibc_last_error() : "");
		fflush(stdout);
		snprintf(file, sizeof(file), "%s.%d.done", name, n);
		vm_sync_touch(dir, file);
	}
done:
	ibc_disconnect(cl);
	return vm_failures() ? 1 : 0;
}
