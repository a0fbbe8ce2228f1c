// SPDX-License-Identifier: MIT
/*
 * libibclient on a verbs device that cannot share its context (rxe), run by
 * tests/vm/suite.sh inside the VM:
 *
 *   vm-ownctx import-error DEV
 *	ibc_open without the flag: the import error
 *   vm-ownctx own DEV
 *	IBC_CONNECT_ALLOW_OWN_CONTEXT: shared=false, no shared PD, the fork
 *	state, verbs work on the context
 *   vm-ownctx hold DEV DIR
 *	own context with a PD, MR, CQ and QP; creates DIR/ready, then sleeps
 *	until killed
 *   vm-ownctx xrcd DEV
 *	ibc_xrcd_open on the own context: without IBV_DEVICE_XRC (rxe) the
 *	broker's EOPNOTSUPP with a sentence naming the device; with it, the
 *	open (ibv_open_xrcd on the broker's inode file) and its close
 *   vm-ownctx wait-removed DEV DIR passive|app
 *	wait for IBC_EVENT_DEVICE_REMOVED, which names the context; "app"
 *	holds a PD, MR, CQ and QP and, in the event callback, destroys them
 *	and closes the context; "passive" holds a CQ, QP and MR made with the
 *	library's constructors and leaves them and the context to the
 *	library, which destroys them; then waits for DIR/finish
 *
 * Prints CHECK lines (vmutil.h); exits 0 when all passed.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "ibclient.h"
#include "tests/vm/vmutil.h"

static int usage(void)
{
	fprintf(stderr,
		"usage: vm-ownctx import-error DEV | own DEV | xrcd DEV | "
		"hold DEV DIR | "
		"wait-removed DEV DIR passive|app\n");
	return 2;
}

static int connect_client(uint32_t flags, ibc_event_cb cb, void *arg,
			  struct ibc_client **ret)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_FLAGS | IBC_CONNECT_ATTR_TIMEOUT,
		.flags = flags,
		.timeout_ms = 20000,
	};
	int err;

	if (cb) {
		attr.comp_mask |= IBC_CONNECT_ATTR_EVENT_CB;
		attr.event_cb = cb;
		attr.event_arg = arg;
	}
	err = ibc_connect(&attr, ret);
	if (err < 0)
		vm_check(false, "connect", "ibc_connect: %s (%s)",
			 strerror(-err), ibc_last_error());
	return err;
}

static int mode_import_error(const char *dev)
{
	struct ibc_client *cl;
	struct ibc_ctx *ctx = NULL;
	const char *why;
	int err;

	if (connect_client(0, NULL, NULL, &cl) < 0)
		return 1;
	err = ibc_open(cl, dev, &ctx);
	why = ibc_last_error();
	vm_check(err == -EOPNOTSUPP && ctx == NULL && strstr(why, dev),
		 "import-error",
		 "ibc_open(%s) without IBC_CONNECT_ALLOW_OWN_CONTEXT: %d (%s), "
		 "\"%s\"; ibc_open(3) documents EOPNOTSUPP with a sentence "
		 "naming the device",
		 dev, err, err < 0 ? strerror(-err) : "success", why);
	if (err == 0)
		ibc_close(ctx);
	ibc_disconnect(cl);
	return vm_failures() ? 1 : 0;
}

static enum ibc_fork_state fork_state_of_libibverbs(void)
{
	switch (ibv_is_fork_initialized()) {
	case IBV_FORK_ENABLED:
		return IBC_FORK_ENABLED;
	case IBV_FORK_UNNEEDED:
		return IBC_FORK_UNNEEDED;
	default:
		return IBC_FORK_DISABLED;
	}
}

static const char *fork_name(enum ibc_fork_state s)
{
	return s == IBC_FORK_UNNEEDED ? "UNNEEDED" :
	       s == IBC_FORK_ENABLED  ? "ENABLED" :
					"DISABLED";
}

static int mode_own(const char *dev)
{
	struct ibc_client *cl;
	struct ibc_ctx *ctx;
	struct ibc_caps caps;
	struct ibv_context *vctx;
	struct ibv_pd *pd;
	enum ibc_fork_state want;
	int err, pd_errno;

	if (connect_client(IBC_CONNECT_ALLOW_OWN_CONTEXT, NULL, NULL, &cl) < 0)
		return 1;
	err = ibc_open(cl, dev, &ctx);
	if (!vm_check(err == 0, "own-context-open",
		      "ibc_open(%s) with IBC_CONNECT_ALLOW_OWN_CONTEXT: %d "
		      "(%s)",
		      dev, err, err < 0 ? ibc_last_error() : "success")) {
		ibc_disconnect(cl);
		return 1;
	}
	memset(&caps, 0, sizeof(caps));
	err = ibc_query(ctx, &caps, sizeof(caps));
	vm_check(err == 0 && !caps.shared && caps.kind == IBC_DEVICE_VERBS &&
			 strcmp(caps.device, dev) == 0,
		 "own-context-shared-false",
		 "ibc_query: %d, kind %d, device %s, shared %s", err,
		 (int)caps.kind, caps.device, caps.shared ? "true" : "false");

	errno = 0;
	pd = ibc_verbs_pd(ctx);
	pd_errno = errno;
	vm_check(pd == NULL && pd_errno == EOPNOTSUPP &&
			 strstr(ibc_last_error(), dev),
		 "shared-pd-eopnotsupp",
		 "ibc_verbs_pd: %p, errno %d (%s), \"%s\"", (void *)pd,
		 pd_errno, strerror(pd_errno), ibc_last_error());

	/* Device memory: the own context shares none, and the broker's
	 * start-up self-test says why rxe cannot. */
	{
		struct ibc_device_info *d;
		struct ibc_dm *dm;
		size_t n = 0;
		int derr;

		derr = ibc_dm_alloc(ctx, 4096, 0, &dm);
		vm_check(derr == -EOPNOTSUPP && strstr(ibc_last_error(), dev),
			 "dm-own-context-eopnotsupp",
			 "ibc_dm_alloc on an own context: %d (%s)", derr,
			 ibc_last_error());
		derr = ibc_list_devices(cl, &d, sizeof(*d), &n);
		vm_check(derr == 0 && n >= 1 && !d[0].dm_shared &&
				 d[0].dm_reason[0],
			 "dm-not-shared-with-reason",
			 "ibc_list_devices: %d; dm_shared %s, dm_reason \"%s\"",
			 derr,
			 derr == 0 && n && d[0].dm_shared ? "true" : "false",
			 derr == 0 && n ? d[0].dm_reason : "");
		if (derr == 0)
			ibc_list_free(d);
	}

	want = fork_state_of_libibverbs();
	vm_check(err == 0 && caps.fork_state == want, "fork-state",
		 "ibc_query fork_state %s, ibv_is_fork_initialized() %s",
		 fork_name(caps.fork_state), fork_name(want));

	/* The context is a real one of this process: verbs work on it. */
	vctx = ibc_verbs_context(ctx);
	if (vm_check(vctx != NULL, "own-context-verbs", "ibc_verbs_context: %p",
		     (void *)vctx)) {
		struct ibv_pd *own = ibv_alloc_pd(vctx);

		vm_check(own != NULL, "own-context-alloc-pd",
			 "ibv_alloc_pd on the own context: %s",
			 own ? "ok" : strerror(errno));
		if (own)
			ibv_dealloc_pd(own);
	}
	ibc_close(ctx);
	ibc_disconnect(cl);
	return vm_failures() ? 1 : 0;
}

static int mode_hold(const char *dev, const char *dir)
{
	struct ibc_client *cl;
	struct ibc_ctx *ctx;
	struct vm_rc rc;
	int err;

	if (connect_client(IBC_CONNECT_ALLOW_OWN_CONTEXT, NULL, NULL, &cl) < 0)
		return 1;
	err = ibc_open(cl, dev, &ctx);
	if (!vm_check(err == 0, "hold-open", "ibc_open(%s): %d (%s)", dev, err,
		      err < 0 ? ibc_last_error() : "success"))
		return 1;
	err = vm_rc_create(&rc, ibc_verbs_context(ctx), NULL, 8192);
	if (!vm_check(err == 0, "hold-objects",
		      "PD, MR, CQ and QP %u on %s: %s",
		      err == 0 ? rc.qp->qp_num : 0, dev,
		      err == 0 ? "created" : strerror(-err)))
		return 1;
	printf("pid %d qpn %u\n", (int)getpid(), rc.qp->qp_num);
	fflush(stdout);
	vm_sync_touch(dir, "ready");
	/* The suite kills this process with SIGKILL. */
	for (;;)
		pause();
}

struct removed_state {
	int events;
	char device[64];
	char message[256];
	enum ibc_obj_kind object_kind;
	uint64_t object_id;
	/* "app": what the callback destroys and closes. */
	struct vm_rc *rc;
	struct ibc_ctx *ctx;
};

static void on_event(struct ibc_client *cl, const struct ibc_event *ev,
		     void *arg)
{
	struct removed_state *st = arg;

	printf("event %d device %s: %s\n", (int)ev->type,
	       ev->device ? ev->device : "-", ev->message ? ev->message : "");
	fflush(stdout);
	if (ev->type != IBC_EVENT_DEVICE_REMOVED)
		return;
	st->events++;
	snprintf(st->device, sizeof(st->device), "%s",
		 ev->device ? ev->device : "");
	snprintf(st->message, sizeof(st->message), "%s",
		 ev->message ? ev->message : "");
	st->object_kind = ev->object_kind;
	st->object_id = ev->object_id;
	/* The application's part, in the callback: drop what it made on the
	 * device, then the context. */
	if (st->rc) {
		vm_rc_destroy(st->rc);
		st->rc = NULL;
	}
	if (st->ctx) {
		ibc_close(st->ctx);
		st->ctx = NULL;
	}
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int mode_wait_removed(const char *dev, const char *dir, const char *how)
{
	struct removed_state st = { 0 };
	bool app = strcmp(how, "app") == 0;
	struct ibc_qp_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4,
			 .max_recv_wr = 4,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	static char buf[4096];
	struct ibc_client *cl;
	struct ibc_ctx *ctx;
	struct ibc_caps caps;
	struct ibc_cq *cq = NULL;
	struct ibc_qp *qp = NULL;
	struct ibc_mr *mr = NULL;
	struct vm_rc rc;
	long start, end;
	int err;

	char name_open[32], name_event[48];

	if (!app && strcmp(how, "passive"))
		return usage();
	snprintf(name_open, sizeof(name_open), "removal-open-%s", how);
	snprintf(name_event, sizeof(name_event), "device-removed-event-%s",
		 how);
	if (connect_client(IBC_CONNECT_ALLOW_OWN_CONTEXT, on_event, &st, &cl) <
	    0)
		return 1;
	err = ibc_open(cl, dev, &ctx);
	if (!vm_check(err == 0, name_open, "ibc_open(%s): %d (%s)", dev, err,
		      err < 0 ? ibc_last_error() : "success"))
		return 1;
	if (app) {
		err = vm_rc_create(&rc, ibc_verbs_context(ctx), NULL, 4096);
		if (!vm_check(err == 0, "removal-objects",
			      "PD, MR, CQ and QP on %s: %s", dev,
			      err == 0 ? "created" : strerror(-err)))
			return 1;
		st.rc = &rc;
		st.ctx = ctx;
	} else {
		/* Left to the library, which destroys them on the event. */
		err = ibc_cq_create(ctx, 16, &cq);
		qa.send_cq = qa.recv_cq = cq;
		if (err == 0)
			err = ibc_qp_create(ctx, &qa, &qp);
		if (err == 0)
			err = ibc_reg_mr(ctx, buf, sizeof(buf), 0, &mr);
		if (!vm_check(err == 0, "removal-library-objects",
			      "ibc_cq_create, ibc_qp_create, ibc_reg_mr on %s: "
			      "%d (%s)",
			      dev, err, err < 0 ? ibc_last_error() : "success"))
			return 1;
	}
	ibc_query(ctx, &caps, sizeof(caps));
	vm_sync_touch(dir, how);
	/* Wait for the event until the suite says finish (at most 90 s). */
	start = now_ms();
	end = start + 90000;
	while (st.events == 0 && now_ms() < end &&
	       vm_sync_wait(dir, "finish", 0) < 0) {
		struct pollfd pfd = { .fd = ibc_get_fd(cl), .events = POLLIN };

		if (poll(&pfd, 1, 200) > 0 && ibc_dispatch(cl) < 0) {
			printf("connection lost: %s\n", ibc_last_error());
			fflush(stdout);
			break;
		}
	}
	if (vm_check(st.events > 0 && strcmp(st.device, dev) == 0, name_event,
		     "%s client: %d device-removed event(s) for \"%s\" after "
		     "%ld ms: %s",
		     how, st.events, st.device, now_ms() - start, st.message))
		vm_sync_touch(dir, app ? "app-closed" : "passive-done");
	snprintf(name_event, sizeof(name_event), "device-removed-object-%s",
		 how);
	vm_check(st.object_kind == IBC_OBJ_CONTEXT &&
			 st.object_id == caps.context_id,
		 name_event, "the event names kind %d id %llu (context %llu)",
		 (int)st.object_kind, (unsigned long long)st.object_id,
		 (unsigned long long)caps.context_id);
	if (!app && st.events) {
		struct ibv_cq *vcq;
		int verr;

		/* The library destroyed them: the structures wait for the
		 * destructors, which only free them. */
		errno = 0;
		vcq = ibc_verbs_cq(cq);
		verr = errno;
		err = ibc_dereg_mr(mr);
		if (err == 0)
			err = ibc_qp_destroy(qp);
		if (err == 0)
			err = ibc_cq_destroy(cq);
		vm_check(!vcq && verr == ENODEV && err == 0,
			 "removal-library-destroyed",
			 "ibc_verbs_cq after the event: %p errno %d; the "
			 "destructors: %d (%s)",
			 (void *)vcq, verr, err, ibc_last_error());
	}
	/* Stay alive, so that a descriptor the library kept open keeps the
	 * device busy, until the suite is done looking. */
	vm_sync_wait(dir, "finish", 90000);
	ibc_disconnect(cl);
	return vm_failures() ? 1 : 0;
}

static int mode_xrcd(const char *dev)
{
	struct ibc_xrcd *x = NULL;
	struct ibc_client *cl;
	struct ibc_ctx *ctx;
	struct ibc_caps caps;
	const char *why;
	int err;

	if (connect_client(IBC_CONNECT_ALLOW_OWN_CONTEXT, NULL, NULL, &cl) < 0)
		return 1;
	err = ibc_open(cl, dev, &ctx);
	if (!vm_check(err == 0, "xrcd-open-context", "ibc_open(%s): %d (%s)",
		      dev, err, err < 0 ? ibc_last_error() : "success")) {
		ibc_disconnect(cl);
		return 1;
	}
	memset(&caps, 0, sizeof(caps));
	ibc_query(ctx, &caps, sizeof(caps));
	err = ibc_xrcd_open(ctx, "vm-xrcd", O_CREAT, &x);
	why = ibc_last_error();
	if (!caps.xrc)
		vm_check(err == -EOPNOTSUPP && !x && strstr(why, dev) &&
				 strstr(why, "IBV_DEVICE_XRC"),
			 "xrcd-eopnotsupp",
			 "ibc_xrcd_open on %s (no XRC): %d (%s), \"%s\"; "
			 "ibc_xrcd_open(3) documents EOPNOTSUPP with a "
			 "sentence naming the device",
			 dev, err, err < 0 ? strerror(-err) : "success", why);
	else
		vm_check(err == 0 && ibc_verbs_xrcd(x) &&
				 ibc_xrcd_close(x) == 0,
			 "xrcd-open-close",
			 "ibc_xrcd_open on %s (XRC): %d (%s)", dev, err, why);
	ibc_close(ctx);
	ibc_disconnect(cl);
	return vm_failures() ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && strcmp(argv[1], "import-error") == 0)
		return mode_import_error(argv[2]);
	if (argc == 3 && strcmp(argv[1], "own") == 0)
		return mode_own(argv[2]);
	if (argc == 3 && strcmp(argv[1], "xrcd") == 0)
		return mode_xrcd(argv[2]);
	if (argc == 4 && strcmp(argv[1], "hold") == 0)
		return mode_hold(argv[2], argv[3]);
	if (argc == 5 && strcmp(argv[1], "wait-removed") == 0)
		return mode_wait_removed(argv[2], argv[3], argv[4]);
	return usage();
}
