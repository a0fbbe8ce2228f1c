// SPDX-License-Identifier: MIT
/*
 * The exact unaccounted count on a real kernel (daemon/registry/unaccounted.c):
 *
 *   vm-unaccounted DEV
 *
 * An in-process daemon on DEV opens a domain's context, as in vm-cleanup.
 * The kernel's handle list of that context (UVERBS_METHOD_INFO_HANDLES)
 * then holds exactly the broker's own objects: unaccounted 0. rxe cannot
 * import a context, so forked children make their objects on the daemon's
 * own libibverbs context, the verbs way: a child that dies between its
 * kernel call (a CQ) and the register leaves 1; one that dies after its
 * intent, before the kernel call, leaves 0; one that makes a CQ with raw
 * verbs and tells nobody leaves 1. A live child's intent covers one
 * unknown object of its kind, which may be its own.
 * The objects quota follows, and the context's close gives it back once.
 * Prints CHECK lines; exits 0 when all passed.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>
#include <infiniband/verbs.h>

#include "daemon/server/conn.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/domain.h"
#include "daemon/util/log.h"
#include "daemon/registry/objects.h"
#include "daemon/server/server.h"
#include "daemon/registry/unaccounted.h"
#include "daemon/device/verbs/uverbs.h"
#include "tests/objlib.h"
#include "tests/testlib.h"
#include "tests/vm/vmsrv.h"
#include "tests/vm/vmutil.h"

static struct ibv_context *vctx;
static struct dctx *X;

enum how {
	/* Intent, kernel call, no register. */
	HOW_KERNEL,
	/* Intent only. */
	HOW_INTENT,
	/* A raw CQ, no intent. */
	HOW_RAW,
};

/* The child: connect, do @how, report its client id, wait to die. */
static void child(enum how how, int report)
{
	struct ol_client c;
	struct ol_obj o;
	struct ibv_cq *cq = NULL;
	uint64_t id;

	if (ol_connect(&c, vs_sock, NULL) < 0)
		_exit(10);
	if (how != HOW_RAW &&
	    ol_create_mode(&c, RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
			   IBC_OBJ_CQ, NULL, 0, NULL, 0, &o) < 0)
		_exit(11);
	if (how != HOW_INTENT) {
		cq = ibv_create_cq(vctx, 16, NULL, NULL, 0);
		if (!cq)
			_exit(12);
	}
	id = c.client_id;
	vm_write_all(report, &id, sizeof(id));
	for (;;)
		pause();
}

static pid_t fork_child(enum how how, uint64_t *ret_id)
{
	int p[2];
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	pid = vs_fork();
	if (pid == 0) {
		close(p[0]);
		child(how, p[1]);
	}
	close(p[1]);
	if (pid < 0 || !vs_pump_until_readable(p[0], 30000) ||
	    vm_read_all(p[0], ret_id, sizeof(*ret_id)) < 0) {
		close(p[0]);
		return -1;
	}
	close(p[0]);
	return pid;
}

static struct unacc_counts counts(void)
{
	struct unacc_counts c = { 0 };

	unaccounted_refresh_counts(X, &c);
	return c;
}

/* Kill @pid and turn the loop until its cleanup is done. */
static bool kill_and_settle(pid_t pid, uint64_t id)
{
	int64_t deadline;
	int status;

	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	deadline = tl_now_ms() + 20000;
	while (vs_owner_of(id) && tl_now_ms() < deadline) {
		vs_pump();
		poll(NULL, 0, 1);
	}
	return !vs_owner_of(id);
}

/*
 * The kernel's list per kind: rxe has PDs, not WQs, XRCDs or DMs (the core
 * drops the object types whose destroy rxe lacks; the kernel answers
 * ENOENT for them), nor mlx5's UARs. Those count none; a real error (the
 * list written to a bad address) stays an error.
 */
static void test_kinds(void)
{
	uint32_t h[16];
	int pd = uverbs_handles(vctx->cmd_fd, IBC_OBJ_PD, h, 16);
	int wq = uverbs_handles(vctx->cmd_fd, IBC_OBJ_WQ, h, 16);
	int xrcd = uverbs_handles(vctx->cmd_fd, IBC_OBJ_XRCD, h, 16);
	int dm = uverbs_handles(vctx->cmd_fd, IBC_OBJ_DM, h, 16);
	int uar = uverbs_handles(vctx->cmd_fd, DEVICE_INTERNAL, h, 16);
	int bad = uverbs_handles(vctx->cmd_fd, IBC_OBJ_PD, (uint32_t *)8, 16);

	vm_check(pd == 1 && wq == 0 && xrcd == 0 && dm == 0 && uar == 0 &&
			 bad == -EFAULT,
		 "unacc-kinds",
		 "the kernel lists PD %d (want 1), WQ %d, XRCD %d, DM %d, "
		 "UAR %d (want 0 each); into a bad address: %s (want %s)",
		 pd, wq, xrcd, dm, uar, bad < 0 ? strerror(-bad) : "no error",
		 strerror(EFAULT));
}

/* The unaccounted count of a kind: its unknown handles less the live
 * intents, which may be those handles (unaccounted.h). */
static uint32_t unknown_less_intents(uint32_t unknown, uint32_t intents)
{
	return unknown > intents ? unknown - intents : 0;
}

/* @own: the kernel's handles of the fresh context, all the broker's. */
static void test_kills(uint32_t own)
{
	static const struct {
		enum how how;
		const char *name, *what;
		uint32_t adds;
	} cases[] = {
		{ HOW_KERNEL, "unacc-kernel-call",
		  "killed after its kernel call, before the register", 1 },
		{ HOW_INTENT, "unacc-intent-only",
		  "killed after its intent, before the kernel call", 0 },
		{ HOW_RAW, "unacc-raw", "killed holding an untracked raw CQ",
		  1 },
	};
	uint32_t expect = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct unacc_counts live, dead;
		uint64_t id = 0;
		pid_t pid = fork_child(cases[i].how, &id);
		uint32_t made = cases[i].how != HOW_INTENT;
		uint32_t intents = cases[i].how != HOW_RAW;
		uint32_t want = unknown_less_intents(expect + made, intents);
		bool ok;

		if (!vm_check(pid > 0, cases[i].name, "a child %s",
			      "connected and made its objects"))
			continue;
		live = counts();
		/*
		 * A live client's CQ intent is its own whether its kernel
		 * call ran or not, so it covers one unknown CQ: the intent-only
		 * child's covers the CQ the first child left. The raw CQ has
		 * no intent.
		 */
		ok = live.kernel == own + expect + made &&
		     live.intents == intents && live.unaccounted == want;
		vm_check(ok, "unacc-live",
			 "%s, alive: kernel %u (want %u), registry %u, broker "
			 "%u, intents %u (want %u): unaccounted %u (want %u)",
			 cases[i].what, live.kernel, own + expect + made,
			 live.registry, live.broker, live.intents, intents,
			 live.unaccounted, want);
		ok = kill_and_settle(pid, id);
		dead = counts();
		expect += cases[i].adds;
		vm_check(ok && dead.kernel == own + expect &&
				 dead.unaccounted == expect &&
				 X->unaccounted == expect &&
				 X->domain->used.objects == 1 + expect,
			 cases[i].name,
			 "%s: kernel %u (want %u), broker %u, unaccounted %u "
			 "(want %u), objects charged %u (want %u)",
			 cases[i].what, dead.kernel, own + expect, dead.broker,
			 dead.unaccounted, expect, X->domain->used.objects,
			 1 + expect);
	}
}

int main(int argc, char **argv)
{
	struct ol_client parent;
	/* unaccounted_count() leaves it alone when it fails. */
	struct unacc_counts c = { 0 };
	struct device *dev;
	struct domain *d;
	struct ibv_pd *vpd = NULL;
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc != 2) {
		fprintf(stderr, "usage: vm-unaccounted DEV\n");
		return 2;
	}
	dev = vs_start("unacc", argv[1]);
	if (!dev)
		return 1;
	X = vs_open("unacc", &parent, &vctx, &vpd);
	if (!X)
		return 1;
	/* The kernel's handle list of a fresh context: the broker's own. */
	ret = unaccounted_count(X, &c);
	vm_check(ret == 0 && c.kernel >= 1 && c.kernel == c.broker &&
			 c.registry == 0 && c.unaccounted == 0,
		 "unacc-own",
		 "the kernel lists %u handles in the domain's context, %u of "
		 "them the broker's own (%u provider objects of its open, "
		 "per import %u): unaccounted %u (%s)",
		 c.kernel, c.broker, X->own_internal, dev->internal_per_import,
		 c.unaccounted, ret ? strerror(-ret) : "ok");
	test_kinds();
	test_kills(c.kernel);
	/* The context closes: its charge goes, once. */
	ol_close(&parent);
	for (int i = 0; i < 100; i++)
		vs_pump();
	d = TAILQ_FIRST(&vs_srv.core.domains);
	vm_check(!d || d->used.objects == 0, "unacc-closed",
		 "the context closed: the domain's objects charge is %u",
		 d ? d->used.objects : 0);
	vs_stop();
	return vm_failures() ? 1 : 0;
}
