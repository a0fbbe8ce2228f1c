// SPDX-License-Identifier: MIT
/*
 * Unaccounted objects counted exactly (daemon/registry/unaccounted.c), on the
 * soft device with the verbs path's window ([soft] intent_window) and
 * provider-internal records per import ([soft]
 * internal_objects_per_import): a client stopped and killed inside the
 * window (IBC_TEST_SOFT_STOP) leaves 1 when its kernel call ran and 0 when
 * it did not; a live client's intent is not counted; internal objects of
 * dead importers are; the objects quota follows the count and is not
 * given back twice when the context closes.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/sockios.h>

#include "include/ibclient.h"
#include "tests/cklib.h"
#include "tests/objlib.h"
#include "tests/testlib.h"

static struct tl_daemon D;
static struct ibc_client *C;
static struct ibc_ctx *X;

/* The daemon on @conf, this test's client C and its context X
 * (tl_fixture_start says on stderr what failed). */
static void start(const char *conf)
{
	int ret = tl_fixture_start(&D, conf, &C, &X);

	ck_assert_msg(ret == 0, "cannot start the daemon, connect and open: %s",
		      strerror(-ret));
}

static void stop(void)
{
	if (X)
		ibc_close(X);
	X = NULL;
	ibc_disconnect(C);
	C = NULL;
	tl_daemon_stop(&D);
}

/* This client's domain as the broker lists it now. */
static struct ibc_domain_info domain(void)
{
	struct ibc_domain_info *d, out;
	size_t n;
	int ret = ibc_list_domains(C, &d, sizeof(*d), &n);

	ck_assert_msg(ret == 0 && n == 1, "list domains: %d %zu (%s)", ret, n,
		      ibc_last_error());
	out = d[0];
	ibc_list_free(d);
	return out;
}

enum child_end {
	/* Waits to be killed. */
	END_KILLED,
	/* ibc_close, ibc_disconnect, exit. */
	END_CLOSE,
	/* ibc_disconnect alone, exit. */
	END_DISCONNECT,
	/* Exits at once, its socket left as it is. */
	END_EXIT,
};

/*
 * A client that opens the context and (@create) makes a CQ with
 * IBC_TEST_SOFT_STOP=@stop_at (NULL: none) and @qps RC QPs on it, then
 * ends as @end says. Returns its pid once it stopped (or at once without
 * @stop_at).
 */
static pid_t child_qps(const char *stop_at, bool create, int qps,
		       enum child_end end)
{
	int status;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct ibc_qp_attr qa = { .qp_type = IBV_QPT_RC };
		struct ibc_client *cl;
		struct ibc_ctx *ctx;
		struct ibc_cq *cq = NULL;
		struct ibc_qp *qp;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* Its own socket the only one it holds (peer_socket()). */
		if (end == END_EXIT)
			syscall(SYS_close_range, 3, ~0U, 0);
		if (stop_at)
			setenv("IBC_TEST_SOFT_STOP", stop_at, 1);
		if (tl_connect(D.sock, 20000, &cl) || ibc_open(cl, NULL, &ctx))
			_exit(1);
		if (create && ibc_cq_create(ctx, 16, &cq))
			_exit(2);
		qa.send_cq = qa.recv_cq = cq;
		qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
		qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
		for (int i = 0; i < qps; i++)
			if (ibc_qp_create(ctx, &qa, &qp))
				_exit(3);
		if (end == END_EXIT)
			_exit(0);
		if (end == END_CLOSE)
			ibc_close(ctx);
		if (end != END_KILLED) {
			ibc_disconnect(cl);
			_exit(0);
		}
		/* Killed by the test. */
		for (;;)
			pause();
	}
	if (!stop_at)
		return pid;
	ck_assert_int_eq(waitpid(pid, &status, WUNTRACED), pid);
	ck_assert_msg(WIFSTOPPED(status), "the client did not stop at %s: %#x",
		      stop_at, status);
	return pid;
}

static pid_t child(const char *stop_at, bool create, enum child_end end)
{
	return child_qps(stop_at, create, 0, end);
}

static void kill_child(pid_t pid)
{
	int status;

	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
}

/* Child @pid exits by itself, with status 0. */
static void wait_child_ok(pid_t pid)
{
	int status;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%#x",
		      status);
}

/* Until the dead clients' sessions, intents and objects are gone (their
 * cleanup ran; this test's own client holds none), at most 10 s. */
static struct ibc_domain_info settle(uint32_t members)
{
	int64_t end = tl_now_ms() + 10000;
	struct ibc_domain_info d;

	do {
		d = domain();
		if (d.live_intents == 0 && d.members == members &&
		    d.registry_objects == 0)
			return d;
		tl_sleep_ms(10);
	} while (tl_now_ms() < end);
	ck_abort_msg("the dead client's intent stayed: %u intents, %u "
		     "members, %u objects",
		     d.live_intents, d.members, d.registry_objects);
	return d;
}

/* The context closes: its charge goes once, to zero. */
static void close_and_check_zero(void)
{
	struct ibc_domain_info d;

	ibc_close(X);
	X = NULL;
	d = domain();
	ck_assert_uint_eq(d.contexts, 0);
	ck_assert_uint_eq(d.used.objects, 0);
	ck_assert_uint_eq(d.unaccounted, 0);
}

/* A dead client that made nothing left nothing: the PD alone exists and is
 * charged, nothing unaccounted; then the context closes to zero and the
 * daemon stops. */
static void check_nothing_left(void)
{
	struct ibc_domain_info d = settle(1);

	ck_assert_uint_eq(d.unaccounted, 0);
	ck_assert_uint_eq(d.kernel_objects, 1);
	/* An intent's charge went back: nothing exists for it. */
	ck_assert_uint_eq(d.used.objects, 1);
	close_and_check_zero();
	stop();
}

static const char *window_conf = "[soft]\nintent_window = yes\n";

/* rdmabrokerctl ARGS against the daemon: its output (static). */
static const char *ctl(const char *args)
{
	static char out[8192];
	const char *path = getenv("RDMABROKERCTL");
	char cmd[512];
	size_t n;
	FILE *f;

	if (!path || !*path)
		path = access("./rdmabrokerctl", X_OK) == 0 ?
			       "./rdmabrokerctl" :
			       "../rdmabrokerctl";
	snprintf(cmd, sizeof(cmd), "%s --socket %s %s", path, D.sock, args);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	ck_assert_int_eq(pclose(f), 0);
	return out;
}

/*
 * The daemon with the window, and a client stopped at @stop_at in it
 * making a CQ: its intent is live and its own, made or not; charged are
 * the PD and the intent; the kernel holds @kernel objects. Its pid.
 */
static pid_t stopped_in_window(const char *stop_at, uint32_t kernel)
{
	struct ibc_domain_info d;
	pid_t pid;

	start(window_conf);
	pid = child(stop_at, true, END_KILLED);
	d = domain();
	ck_assert_uint_eq(d.live_intents, 1);
	ck_assert_uint_eq(d.kernel_objects, kernel);
	ck_assert_uint_eq(d.used.objects, 2);
	return pid;
}

/* Killed after its kernel call made the CQ, before the register: the
 * kernel holds a CQ nobody names. */
START_TEST(test_killed_after_kernel_call)
{
	pid_t pid = stopped_in_window("kernel", 2); /* the PD and the CQ */
	struct ibc_domain_info d;

	d = domain();
	ck_assert_uint_eq(d.broker_objects, 1);
	ck_assert_uint_eq(d.unaccounted, 0);
	kill_child(pid);
	d = settle(1);
	ck_assert_uint_eq(d.unaccounted, 1);
	ck_assert_uint_eq(d.kernel_objects, 2);
	ck_assert_uint_eq(d.registry_objects, 0);
	ck_assert_uint_eq(d.used.objects, 2);
	/* rdmabrokerctl shows the count and its parts. */
	ck_assert_msg(strstr(ctl("--json domains"),
			     "\"unaccounted\":1,\"kernel_objects\":2,"
			     "\"registry_objects\":0,\"broker_objects\":1,"
			     "\"live_intents\":0,\"internal_objects\":0"),
		      "%s", ctl("--json domains"));
	ck_assert_msg(strstr(ctl("domains"), " 2:0:1:0 "), "%s",
		      ctl("domains"));
	close_and_check_zero();
	stop();
}
END_TEST

/* Killed after its intent, before the kernel call: nothing was made. */
START_TEST(test_killed_before_kernel_call)
{
	pid_t pid = stopped_in_window("intent", 1);

	kill_child(pid);
	check_nothing_left();
}
END_TEST

/* A copy of the one socket process @pid holds (END_EXIT closed the
 * rest), taken with pidfd_getfd(2). */
static int peer_socket(pid_t pid)
{
	char dir[64], path[320], link[64];
	int pidfd, found = -1, sock;
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		ssize_t n;

		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (strncmp(link, "socket:", 7) != 0)
			continue;
		ck_assert_msg(found < 0, "client %d holds two sockets",
			      (int)pid);
		found = atoi(e->d_name);
	}
	closedir(d);
	ck_assert_int_ge(found, 0);
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	ck_assert_int_ge(pidfd, 0);
	sock = (int)syscall(SYS_pidfd_getfd, pidfd, found, 0);
	ck_assert_msg(sock >= 0, "pidfd_getfd: %s", strerror(errno));
	close(pidfd);
	return sock;
}

/* Bytes sent on @sock its peer has not read yet. */
static int unread_by_peer(int sock)
{
	int queued = 0;

	ck_assert_int_eq(ioctl(sock, SIOCOUTQ, &queued), 0);
	return queued;
}

/*
 * Pings of 60 KiB, whose replies nobody reads, on @sock until the broker
 * stops reading it (256 KiB of its replies unread): the last one stays
 * unread. Returns how many the broker read.
 */
static int stop_reads(int sock)
{
	static uint8_t payload[60 * 1024];
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	int read_n = 0;

	req.version = WIRE_PROTOCOL_VERSION;
	req.body_case = RDMAB__REQUEST__BODY_PING;
	req.ping.data = payload;
	req.ping.len = sizeof(payload);
	for (int i = 0; i < 64; i++) {
		int64_t end = tl_now_ms() + 3000;

		req.serial = (1ull << 40) + (uint64_t)i;
		ck_assert_int_eq(tl_send_request(sock, &req, NULL, 0), 0);
		while (unread_by_peer(sock) > 0 && tl_now_ms() < end)
			tl_sleep_ms(5);
		if (unread_by_peer(sock) > 0)
			return read_n;
		read_n++;
	}
	ck_abort_msg("the broker read 64 pings of 60 KiB nobody read the "
		     "replies of");
	return -1;
}

/*
 * A client whose register is still unread when its process exits: the
 * broker had stopped reading its requests (its replies unread), so the
 * process's pidfd, not the request, is what the broker sees first. What
 * its socket holds is served all the same: the CQ is registered, then
 * destroyed as the dead client's, nothing left unaccounted. A copy of the
 * socket kept here: the broker never reads end of stream on it.
 */
START_TEST(test_register_unread_at_exit)
{
	struct ibc_domain_info d;
	pid_t pid;
	int sock, n;

	start(window_conf);
	pid = child("kernel", true, END_EXIT);
	sock = peer_socket(pid);
	n = stop_reads(sock);
	ck_assert_msg(n >= 2, "the broker stopped reading after %d pings", n);
	ck_assert_int_eq(kill(pid, SIGCONT), 0);
	wait_child_ok(pid);
	d = settle(1);
	ck_assert_msg(d.unaccounted == 0 && d.kernel_objects == 1,
		      "the register was lost: %u unaccounted, %u kernel "
		      "objects",
		      d.unaccounted, d.kernel_objects);
	close(sock);
	close_and_check_zero();
	stop();
}
END_TEST

/* The window changes nothing for a client that lives through it: the
 * objects work, are registered and destroyed. */
START_TEST(test_window_objects)
{
	struct ibc_qp_attr qa = { .qp_type = IBV_QPT_RC };
	struct ibc_domain_info d;
	struct ibc_cq *cq;
	struct ibc_qp *qp;

	start(window_conf);
	ck_assert_int_eq(ibc_cq_create(X, 16, &cq), 0);
	qa.send_cq = qa.recv_cq = cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	ck_assert_msg(ibc_qp_create(X, &qa, &qp) == 0, "qp: %s",
		      ibc_last_error());
	ck_assert_uint_ne(ibc_qp_num(qp), 0);
	d = domain();
	ck_assert_uint_eq(d.kernel_objects, 3);
	ck_assert_uint_eq(d.registry_objects, 2);
	ck_assert_uint_eq(d.live_intents, 0);
	ck_assert_uint_eq(d.unaccounted, 0);
	ck_assert_uint_eq(d.used.objects, 3);
	/* In use by the QP: the device refuses. */
	ck_assert_int_eq(ibc_cq_destroy(cq), -EBUSY);
	ck_assert_int_eq(ibc_qp_destroy(qp), 0);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	d = domain();
	ck_assert_uint_eq(d.kernel_objects, 1);
	ck_assert_uint_eq(d.used.objects, 1);
	close_and_check_zero();
	stop();
}
END_TEST

/* Provider-internal objects: a dead importer's stay, counted; a clean
 * close frees them. */
START_TEST(test_internal_objects)
{
	struct ibc_domain_info d;
	pid_t pid;

	start("[soft]\ninternal_objects_per_import = 3\n");
	d = domain();
	ck_assert_uint_eq(d.kernel_objects, 1 + 3);
	ck_assert_uint_eq(d.unaccounted, 0);
	/* One that closes cleanly leaves nothing, with ibc_close or with
	 * ibc_disconnect alone (which closes the import, as
	 * ibv_close_device does on mlx5). */
	for (int end = END_CLOSE; end <= END_DISCONNECT; end++) {
		pid = child(NULL, true, (enum child_end)end);
		wait_child_ok(pid);
		d = settle(1);
		ck_assert_uint_eq(d.kernel_objects, 1 + 3);
		ck_assert_msg(d.unaccounted == 0, "end %d: %u unaccounted", end,
			      d.unaccounted);
		ck_assert_uint_eq(d.used.objects, 1);
	}
	/* One that is killed holding the context leaves its three. */
	pid = child(NULL, false, END_KILLED);
	while (domain().members < 2)
		tl_sleep_ms(10);
	while (domain().kernel_objects < 1 + 6)
		tl_sleep_ms(10);
	d = domain();
	ck_assert_uint_eq(d.unaccounted, 0);
	kill_child(pid);
	d = settle(1);
	ck_assert_uint_eq(d.kernel_objects, 1 + 6);
	/* Apart: this client's three and the dead one's. */
	ck_assert_uint_eq(d.internal_objects, 6);
	ck_assert_uint_eq(d.internal_left, 3);
	ck_assert_uint_eq(d.unaccounted, 3);
	ck_assert_uint_eq(d.used.objects, 1 + 3);
	close_and_check_zero();
	stop();
}
END_TEST

/*
 * A live client's QPs make provider objects of its import (mlx5: a BF UAR
 * page as its QPs come, kept until the import closes): counted apart,
 * never unaccounted, however many. A client killed with as many leaves
 * them; what is known of them (a bare import's share) is unaccounted.
 */
START_TEST(test_internal_per_qp_live)
{
	struct ibc_qp_attr qa = { .qp_type = IBV_QPT_RC };
	struct ibc_domain_info d;
	struct ibc_qp *qp[100];
	struct ibc_cq *cq;
	pid_t pid;

	start("[soft]\ninternal_objects_per_import = 1\n"
	      "internal_objects_per_qp = 1\n");
	ck_assert_int_eq(ibc_cq_create(X, 16, &cq), 0);
	qa.send_cq = qa.recv_cq = cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	for (int i = 0; i < 100; i++)
		ck_assert_msg(ibc_qp_create(X, &qa, &qp[i]) == 0, "qp %d: %s",
			      i, ibc_last_error());
	d = domain();
	ck_assert_uint_eq(d.unaccounted, 0);
	ck_assert_uint_eq(d.used.objects, 1 + 1 + 100);
	ck_assert_uint_eq(d.internal_objects, 1 + 100);
	ck_assert_uint_eq(d.internal_left, 0);
	/* Kept when the QPs go, as mlx5 keeps the UARs for the next. */
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(ibc_qp_destroy(qp[i]), 0);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	d = domain();
	ck_assert_uint_eq(d.internal_objects, 1 + 100);
	ck_assert_uint_eq(d.unaccounted, 0);
	ck_assert_uint_eq(d.used.objects, 1);
	/* A child with 100 QPs, killed: its 101 stay, one is known. */
	pid = child_qps(NULL, true, 100, END_KILLED);
	while (domain().internal_objects < 2 * (1 + 100))
		tl_sleep_ms(10);
	d = domain();
	ck_assert_uint_eq(d.unaccounted, 0);
	kill_child(pid);
	d = settle(1);
	ck_assert_uint_eq(d.internal_objects, 2 * (1 + 100));
	ck_assert_uint_eq(d.internal_left, 1);
	ck_assert_uint_eq(d.unaccounted, 1);
	close_and_check_zero();
	stop();
}
END_TEST

/* Without the window (the default), the soft device creates in one
 * request: a kill leaves nothing, and the hook never stops anyone. */
START_TEST(test_default_no_window)
{
	pid_t pid;

	start("# defaults\n");
	pid = child(NULL, false, END_KILLED);
	kill_child(pid);
	fflush(stdout);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct ibc_client *cl;
		struct ibc_ctx *ctx;
		struct ibc_cq *cq;

		setenv("IBC_TEST_SOFT_STOP", "kernel", 1);
		if (tl_connect(D.sock, 20000, &cl) ||
		    ibc_open(cl, NULL, &ctx) || ibc_cq_create(ctx, 16, &cq))
			_exit(1);
		_exit(0);
	}
	wait_child_ok(pid);
	check_nothing_left();
}
END_TEST

/* The window's rules on the wire, as a raw client sends them. */
START_TEST(test_window_rules)
{
	struct ol_client raw;
	struct ol_obj i1, i2, cq;
	uint32_t h = 0, h2 = 0;

	start(window_conf);
	ck_assert_int_eq(ol_connect(&raw, D.sock, NULL), 0);
	ck_assert_int_eq(ol_create_mode(&raw,
					RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
					IBC_OBJ_CQ, NULL, 0, NULL, 0, &i1),
			 0);
	/* No register before the kernel call made the object. */
	ck_assert_int_eq(ol_register(&raw, i1.id, 1), -EINVAL);
	ck_assert_msg(strstr(ol_error, "no kernel call"), "%s", ol_error);
	ck_assert_int_eq(ol_kernel_call(&raw, i1.id, NULL, 0, &h), 0);
	ck_assert_uint_ne(h, 0);
	/* Once only; then the register must name the handle it gave. */
	ck_assert_int_eq(ol_kernel_call(&raw, i1.id, NULL, 0, &h2), -EINVAL);
	ck_assert_int_eq(ol_register(&raw, i1.id, h + 1), -EINVAL);
	ck_assert_int_eq(ol_register(&raw, i1.id, h), 0);
	ck_assert_int_eq(ol_kernel_call(&raw, i1.id, NULL, 0, &h2), -EINVAL);
	ck_assert_int_eq(ol_kernel_call(&raw, 999999, NULL, 0, &h2), -ENOENT);
	/* The object works as any: a QP intent uses it at its kernel call
	 * (the device checks the uses: a QP needs a receive CQ too). */
	ck_assert_int_eq(ol_create_mode(&raw,
					RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
					IBC_OBJ_QP, NULL, 0, NULL, 0, &i2),
			 0);
	ck_assert_int_eq(ol_kernel_call(&raw, i2.id, &i1.id, 1, &h2), -EINVAL);
	/* A cancel after the kernel call destroys what it made. */
	ck_assert_int_eq(ol_destroy(&raw, i2.id), 0);
	ck_assert_int_eq(ol_create_mode(&raw,
					RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
					IBC_OBJ_CQ, NULL, 0, NULL, 0, &i2),
			 0);
	ck_assert_int_eq(ol_kernel_call(&raw, i2.id, NULL, 0, &h2), 0);
	ck_assert_uint_eq(domain().kernel_objects, 3);
	ck_assert_int_eq(ol_destroy(&raw, i2.id), 0);
	ck_assert_uint_eq(domain().kernel_objects, 2);
	/* One-request creates still work with the window open. */
	ck_assert_int_eq(ol_cq(&raw, 4, &cq), 0);
	ck_assert_int_eq(ol_destroy(&raw, cq.id), 0);
	ck_assert_int_eq(ol_destroy(&raw, i1.id), 0);
	ck_assert_uint_eq(domain().kernel_objects, 1);
	ol_close(&raw);
	/* The broker reads the end of that connection when it reads it:
	 * its context may be open for the next request of this one. */
	settle(1);
	close_and_check_zero();
	stop();
}
END_TEST

/* Without the window, a soft device takes no intent and no kernel call. */
START_TEST(test_window_closed)
{
	struct ol_client raw;
	struct ol_obj i1, cq;
	uint32_t h = 0;

	start("# defaults\n");
	ck_assert_int_eq(ol_connect(&raw, D.sock, NULL), 0);
	ck_assert_int_eq(ol_create_mode(&raw,
					RDMAB__OBJ_CREATE_REQUEST__MODE__INTENT,
					IBC_OBJ_CQ, NULL, 0, NULL, 0, &i1),
			 -EINVAL);
	ck_assert_int_eq(ol_cq(&raw, 4, &cq), 0);
	ck_assert_int_eq(ol_kernel_call(&raw, cq.id, NULL, 0, &h), -EINVAL);
	ol_close(&raw);
	stop();
}
END_TEST

/* The configuration's words. */
START_TEST(test_config_errors)
{
	static const char *const bad[] = {
		"[soft]\nintent_window = maybe\n",
		"[soft]\ninternal_objects_per_import = 65\n",
		"[soft]\ninternal_objects_per_qp = 65\n",
		"[soft]\ninternal_objects_per_import = -1\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *dir = tl_mkdtemp(), path[4096], sock[4200];
		const char *args[] = { "--config", path, NULL };
		int status = 0;
		pid_t pid;

		ck_assert_ptr_nonnull(dir);
		snprintf(path, sizeof(path), "%s/rdmabroker.conf", dir);
		snprintf(sock, sizeof(sock), "%s/sock", dir);
		ck_assert_int_eq(tl_write_conf(path, bad[i]), 0);
		pid = tl_daemon_spawn(dir, sock, args);
		ck_assert_int_gt(pid, 0);
		ck_assert_int_ge(tl_wait_pid(pid, 20000, &status), 0);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 0,
			      "%s: status %#x", bad[i], status);
		tl_rmtree(dir);
		free(dir);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("unaccounted");
	TCase *tc = tcase_create("soft");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_killed_after_kernel_call);
	tcase_add_test(tc, test_killed_before_kernel_call);
	tcase_add_test(tc, test_register_unread_at_exit);
	tcase_add_test(tc, test_window_objects);
	tcase_add_test(tc, test_internal_objects);
	tcase_add_test(tc, test_internal_per_qp_live);
	tcase_add_test(tc, test_default_no_window);
	tcase_add_test(tc, test_window_rules);
	tcase_add_test(tc, test_window_closed);
	tcase_add_test(tc, test_config_errors);
	suite_add_tcase(s, tc);
	return ck_run("check_unaccounted", s);
}
