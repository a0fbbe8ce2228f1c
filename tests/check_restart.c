// SPDX-License-Identifier: MIT
/*
 * Restart faults (issue 25, "Bad input and faults"), the daemon under the
 * fake systemd (tests/fakesd.h): a state memfd corrupted byte by byte or
 * truncated, and descriptors handed over under names that are not the
 * daemon's or that name the wrong kind of file, each give a clean start
 * with the reason logged and the clients told (their connection closed),
 * never a crash or half a registry; a state left whole gives the session
 * back. A daemon that keeps no state is skipped, saying so.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/families/family.h"
#include "daemon/families/xrcd/xrcd.h"
#include "daemon/registry/objects.h"
#include "daemon/restart/inflight.h"
#include "daemon/restart/journal.h"
#include "daemon/restart/restart.h"
#include "daemon/util/fault.h"
#include "include/ibclient.h"
#include "proto/state.pb-c.h"
#include "proto/wire.h"
#include "tests/agent.h"
#include "tests/cklib.h"
#include "tests/fakesd.h"
#include "tests/testlib.h"

struct rig {
	struct fakesd *sd;
	char *dir;
	char sock[108], run[200], log[200], conf[200];
	int lfd;
	struct ibc_client *cl;
};

/* The configuration the next rig_new() gives its daemon (NULL: none),
 * and the fake systemd's store bound (0: 4096). */
static const char *rig_config;
static unsigned int rig_store_max;
/* --max-clients of the next rig_new()'s daemon (NULL: the default). */
static const char *rig_max_clients;
/* RLIMIT_FSIZE (soft) of the next rig_start()'s daemon, in bytes: what
 * its memfds may grow to (0: the test's own). */
static rlim_t rig_fsize;

static void rig_argv(struct rig *g, char **argv)
{
	int n = 0;

	argv[n++] = (char *)tl_daemon_path();
	argv[n++] = "--foreground";
	argv[n++] = "--device";
	argv[n++] = "soft";
	argv[n++] = "--socket";
	argv[n++] = g->sock;
	argv[n++] = "--runtime-dir";
	argv[n++] = g->run;
	if (*g->conf) {
		argv[n++] = "--config";
		argv[n++] = g->conf;
	}
	if (rig_max_clients) {
		argv[n++] = "--max-clients";
		argv[n++] = (char *)rig_max_clients;
	}
	argv[n] = NULL;
}

static void rig_start(struct rig *g)
{
	char *argv[13], buf[2048];
	ssize_t n;
	int fd, r;

	rig_argv(g, argv);
	if (rig_fsize) {
		/* Inherited by the daemon through fork() and exec(): only
		 * for the start, the test's own files are not bound. */
		struct rlimit was, lim;

		ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &was), 0);
		lim = was;
		lim.rlim_cur = rig_fsize;
		ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
		r = fakesd_start(g->sd, argv, g->log);
		ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &was), 0);
		ck_assert_int_eq(r, 0);
	} else {
		ck_assert_int_eq(fakesd_start(g->sd, argv, g->log), 0);
	}
	r = fakesd_wait_ready(g->sd, TL_WAIT_MS);
	if (r < 0) {
		/* What the daemon said before it ended or hung. */
		struct stat st = { 0 };

		fd = open(g->log, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			fstat(fd, &st);
		n = fd >= 0 ?
			    pread(fd, buf, sizeof(buf) - 1,
				  st.st_size > (off_t)sizeof(buf) - 1 ?
					  st.st_size - (off_t)sizeof(buf) + 1 :
					  0) :
			    0;
		buf[n > 0 ? n : 0] = '\0';
		if (fd >= 0)
			close(fd);
		ck_abort_msg("the daemon did not get ready (%d): %s", r, buf);
	}
}

/* The daemon's configuration file, for its next start. */
static void rig_write_config(struct rig *g, const char *text)
{
	FILE *f = fopen(g->conf, "we");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(fputs(text, f), 0);
	ck_assert_int_eq(fclose(f), 0);
}

/* A daemon under the fake systemd, with one client that opened soft0. */
static bool rig_new(struct rig *g)
{
	struct fakesd_opts o = { .store_max =
					 rig_store_max ? rig_store_max : 4096,
				 .listen_name = "rdmabrokerd.socket" };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ibc_ctx *x;
	char name[256];
	bool state = false;
	int fd;

	memset(g, 0, sizeof(*g));
	g->dir = tl_mkdtemp();
	ck_assert_ptr_nonnull(g->dir);
	snprintf(g->sock, sizeof(g->sock), "%s/sock", g->dir);
	snprintf(g->run, sizeof(g->run), "%s/run", g->dir);
	snprintf(g->log, sizeof(g->log), "%s/daemon.log", g->dir);
	if (rig_config) {
		snprintf(g->conf, sizeof(g->conf), "%s/rdmabroker.conf",
			 g->dir);
		rig_write_config(g, rig_config);
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", g->sock);
	g->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(g->lfd, 0);
	ck_assert_int_eq(bind(g->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(g->lfd, 16), 0);
	o.dir = g->dir;
	o.listen_fd = g->lfd;
	ck_assert_int_eq(fakesd_new(&o, &g->sd), 0);
	rig_start(g);
	ck_assert_int_eq(tl_connect(g->sock, 10000, &g->cl), 0);
	ck_assert_int_eq(ibc_open(g->cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_ping(g->cl, NULL, 0), 0);
	for (size_t i = 0;
	     fakesd_store_get(g->sd, i, name, sizeof(name), &fd) == 0; i++) {
		close(fd);
		state |= strncmp(name, "rb.state.", 9) == 0;
	}
	return state;
}

static void rig_free(struct rig *g)
{
	if (g->cl)
		ibc_disconnect(g->cl);
	fakesd_free(g->sd);
	close(g->lfd);
	free(g->dir);
}

/* The stored state's memfd, a dup the caller closes. */
static int state_fd(struct rig *g)
{
	char name[256];
	int fd;

	for (size_t i = 0;
	     fakesd_store_get(g->sd, i, name, sizeof(name), &fd) == 0; i++) {
		if (strncmp(name, "rb.state.", 9) == 0)
			return fd;
		close(fd);
	}
	return -1;
}

#define SKIP_WITHOUT_STATE(g)                                                  \
	do {                                                                   \
		if (!rig_new(g)) {                                             \
			fprintf(stderr, "check_restart: the daemon keeps "     \
					"no state in the fd store: "           \
					"nothing to check\n");                 \
			rig_free(g);                                           \
			return;                                                \
		}                                                              \
	} while (0)

/* The same with @conf as the rig's configuration, for this test only. */
#define SKIP_WITHOUT_STATE_CONF(g, conf)                                       \
	do {                                                                   \
		rig_config = (conf);                                           \
		SKIP_WITHOUT_STATE(g);                                         \
		rig_config = NULL;                                             \
	} while (0)

/* How many descriptors the fake systemd's store holds named @name, or,
 * with @name ending in '.', whose names start with it. */
static size_t store_count(struct rig *g, const char *name)
{
	size_t len = strlen(name), n = 0;
	char got[256];
	int fd;

	if (len && name[len - 1] != '.')
		len++;
	for (size_t i = 0;
	     fakesd_store_get(g->sd, i, got, sizeof(got), &fd) == 0; i++) {
		close(fd);
		n += strncmp(got, name, len) == 0;
	}
	return n;
}

static bool store_has(struct rig *g, const char *name)
{
	return store_count(g, name) > 0;
}

/* The name of a descriptor in the fake systemd's store that starts with
 * @prefix, into @name: waited for, since its thread stores what the
 * daemon sent when it runs. */
static void store_wait_for(struct rig *g, const char *prefix, char *name,
			   size_t size)
{
	int64_t end = tl_now_ms() + TL_WAIT_MS;
	char got[256];
	int fd;

	*name = '\0';
	while (!*name && tl_now_ms() < end) {
		for (size_t i = 0;
		     fakesd_store_get(g->sd, i, got, sizeof(got), &fd) == 0;
		     i++) {
			close(fd);
			if (strncmp(got, prefix, strlen(prefix)) == 0)
				snprintf(name, size, "%s", got);
		}
		if (!*name)
			tl_sleep_ms(20);
	}
	ck_assert_msg(*name, "nothing named %s... in the store", prefix);
}

/* The rig's client disconnects, and the daemon has seen it: its socket
 * left the store. g->cl is NULL then. */
static void rig_client_leaves(struct rig *g)
{
	struct ibc_client_info ci;
	int64_t end = tl_now_ms() + TL_WAIT_MS;
	char conn[64];

	ck_assert_int_eq(ibc_client_info(g->cl, &ci, sizeof(ci)), 0);
	snprintf(conn, sizeof(conn), "rb.conn.%" PRIu64, ci.client_id);
	/* The fake systemd's thread takes the daemon's datagram when it
	 * runs: under load, after the client's first round trips. */
	while (!store_has(g, conn) && tl_now_ms() < end)
		tl_sleep_ms(20);
	ck_assert(store_has(g, conn));
	end = tl_now_ms() + TL_WAIT_MS;
	ibc_disconnect(g->cl);
	g->cl = NULL;
	while (store_has(g, conn) && tl_now_ms() < end)
		tl_sleep_ms(20);
	ck_assert(!store_has(g, conn));
}

/* SIGKILL and start again; the client's next request says whether its
 * session lived. */
static int kill_and_restart(struct rig *g)
{
	ck_assert_int_eq(fakesd_kill(g->sd, SIGKILL), 0);
	ck_assert_int_ge(fakesd_wait_exit(g->sd, TL_WAIT_MS), 0);
	rig_start(g);
	return ibc_ping(g->cl, NULL, 0);
}

/* kill_and_restart(), with the stored descriptor @name lost while no
 * daemon ran. */
static int kill_drop_restart(struct rig *g, const char *name)
{
	ck_assert_int_eq(fakesd_kill(g->sd, SIGKILL), 0);
	ck_assert_int_ge(fakesd_wait_exit(g->sd, TL_WAIT_MS), 0);
	ck_assert_int_eq(fakesd_drop(g->sd, name), 1);
	rig_start(g);
	return ibc_ping(g->cl, NULL, 0);
}

START_TEST(whole_state_keeps_the_session)
{
	struct rig g;
	char *text;

	SKIP_WITHOUT_STATE(&g);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	/* The metrics count the restore (issue 25 item 7). */
	ck_assert_int_eq(ibc_metrics(g.cl, &text, NULL), 0);
	ck_assert_ptr_nonnull(strstr(text, "\nrdmabroker_restarts_total 1\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nrdmabroker_generation 2\n"));
	ck_assert_ptr_nonnull(
		strstr(text, "\nrdmabroker_last_restore_duration_seconds "));
	free(text);
	rig_free(&g);
}
END_TEST

/* A restore keeps again what it took from the store: systemd holds those
 * already, so it is told nothing (no duplicate to find, per session),
 * and still holds them for the next restart. */
START_TEST(restore_tells_systemd_nothing_it_holds)
{
	struct fakesd_stats st;
	struct rig g;

	SKIP_WITHOUT_STATE(&g);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(kill_and_restart(&g), 0);
		fakesd_stats(g.sd, &st);
		ck_assert_uint_eq(st.dups, 0);
		ck_assert_uint_eq(st.refused, 0);
	}
	rig_free(&g);
}
END_TEST

/* Bytes of the state overwritten at seeded offsets past its first 64:
 * each run a clean start whose reason is logged, or (a byte the reader
 * does not look at, past the last record) the session kept; never a
 * crash. */
START_TEST(corrupt_state_starts_clean)
{
	struct tl_rng r;
	struct stat st;
	struct rig g;
	int fd, err, clean = 0;

	SKIP_WITHOUT_STATE(&g);
	fd = state_fd(&g);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	tl_rng_seed(&r, 25 + (uint64_t)_i);
	for (int k = 0; k < 8; k++) {
		off_t at = (off_t)tl_rng_below(&r, (uint32_t)st.st_size);
		uint8_t b;

		ck_assert_int_eq(pread(fd, &b, 1, at), 1);
		b ^= (uint8_t)(1 + tl_rng_below(&r, 255));
		ck_assert_int_eq(pwrite(fd, &b, 1, at), 1);
	}
	close(fd);
	err = kill_and_restart(&g);
	clean = tl_count_in_file(g.log, "starting clean");
	ck_assert_msg(err == 0 || (err == -ECONNRESET && clean > 0),
		      "after the corruption: ping %d, %d clean starts logged",
		      err, clean);
	/* The daemon serves whatever it decided. */
	{
		struct ibc_client *c2;

		ck_assert_int_eq(tl_connect(g.sock, 10000, &c2), 0);
		ck_assert_int_eq(ibc_ping(c2, NULL, 0), 0);
		ibc_disconnect(c2);
	}
	rig_free(&g);
}
END_TEST

START_TEST(truncated_state_starts_clean)
{
	struct rig g;
	int fd, err;

	SKIP_WITHOUT_STATE(&g);
	fd = state_fd(&g);
	ck_assert_int_ge(fd, 0);
	/* A sealed memfd refuses to shrink; a state that cannot be
	 * truncated is the journal's guard, a whole one is zeroed instead
	 * past its header. */
	if (ftruncate(fd, 16) < 0) {
		static const uint8_t zero[4096];

		ck_assert_int_eq(pwrite(fd, zero, sizeof(zero), 16),
				 (ssize_t)sizeof(zero));
	}
	close(fd);
	err = kill_and_restart(&g);
	ck_assert_int_eq(err, -ECONNRESET);
	ck_assert_int_gt(tl_count_in_file(g.log, "starting clean"), 0);
	rig_free(&g);
}
END_TEST

/* /proc/self/fd/@fd, to open the same file again. */
static const char *fdpath(int fd)
{
	static char buf[64];

	snprintf(buf, sizeof(buf), "/proc/self/fd/%d", fd);
	return buf;
}

/* `systemctl stop` empties the store (the VM's fdstore section): the next
 * start has nothing, and the client is told its session ended. */
START_TEST(stop_ends_the_sessions)
{
	struct rig g;

	SKIP_WITHOUT_STATE(&g);
	ck_assert_int_eq(fakesd_kill(g.sd, SIGTERM), 0);
	ck_assert_int_ge(fakesd_wait_exit(g.sd, TL_WAIT_MS), 0);
	fakesd_discard(g.sd);
	rig_start(&g);
	ck_assert_int_eq(ibc_ping(g.cl, NULL, 0), -ECONNRESET);
	rig_free(&g);
}
END_TEST

/* Descriptors the daemon never stored, handed over as if it had: another
 * name than its own, one of its names on the wrong kind of file (a pipe
 * as a session's socket, a file as a DM, a stranger's memfd as a newer
 * state). The daemon starts, serves, keeps the sessions it can prove and
 * never adopts a planted file as its own. */
START_TEST(planted_fds)
{
	static const char *const names[] = { "bogus", "rb.conn.4242",
					     "rb.dm.77", "rb.xrcd.5",
					     "rb.state.999999" };
	struct ibc_client *c2;
	struct rig g;
	int p[2], m, err;

	SKIP_WITHOUT_STATE(&g);
	ck_assert_int_eq(fakesd_kill(g.sd, SIGKILL), 0);
	ck_assert_int_ge(fakesd_wait_exit(g.sd, TL_WAIT_MS), 0);
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	m = memfd_create("planted", MFD_CLOEXEC);
	ck_assert_int_ge(m, 0);
	ck_assert_int_eq(write(m, "not a state", 11), 11);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		/* One open file each: the store keeps a file once. */
		int f = i == 1 ? dup(p[0]) :
				 open(fdpath(m), O_RDWR | O_CLOEXEC);

		ck_assert_int_ge(f, 0);
		ck_assert_int_eq(fakesd_plant(g.sd, names[i], f), 0);
		close(f);
	}
	rig_start(&g);
	err = ibc_ping(g.cl, NULL, 0);
	ck_assert_msg(err == 0 || err == -ECONNRESET, "ping: %d", err);
	ck_assert_int_eq(tl_connect(g.sock, 10000, &c2), 0);
	ck_assert_int_eq(ibc_ping(c2, NULL, 0), 0);
	ibc_disconnect(c2);
	/* What the daemon kept is its own: none of the planted files. */
	for (size_t i = 0;; i++) {
		char name[256];
		struct stat a, b;
		int fd;

		if (fakesd_store_get(g.sd, i, name, sizeof(name), &fd) < 0)
			break;
		ck_assert_int_eq(fstat(fd, &a), 0);
		ck_assert_int_eq(fstat(m, &b), 0);
		ck_assert_msg(a.st_ino != b.st_ino ||
				      strcmp(name, "bogus") == 0,
			      "the daemon kept the planted memfd as %s", name);
		close(fd);
	}
	close(p[0]);
	close(p[1]);
	close(m);
	rig_free(&g);
}
END_TEST

/* What holder_spawn_in()'s process holds, and where. */
enum {
	HOLD_CQ = 1 << 0,
	/* A DM it allocated and an XRCD open. */
	HOLD_FAMILIES = 1 << 1,
	/* Only a DM it allocated. */
	HOLD_DM = 1 << 2,
	/* In a private domain. */
	HOLD_PRIVATE = 1 << 3,
	/* Three RC QPs on its CQ (HOLD_CQ): with [soft]
	 * internal_objects_per_qp, records of its import. */
	HOLD_QPS = 1 << 4,
	/* Two WQs on its CQ (HOLD_CQ) and an RSS object over them, or over
	 * its first and holder_rss_wq when that is set. */
	HOLD_RSS = 1 << 5,
	/* A second session of its own, holding a CQ too. */
	HOLD_TWICE = 1 << 6,
};

/* A WQ of another session for the next holder's RSS table (0: none). */
static uint64_t holder_rss_wq;

/* Two WQs on @cq into @wq and an RSS object over them into @ret, or over
 * the first and @other when it is not 0 (UDP to port 9999, two entries):
 * 0, or -1. */
static int rss_two(struct ibc_ctx *x, struct ibc_cq *cq, uint64_t other,
		   struct ibc_wq **wq, struct ibc_rss **ret)
{
	struct ibc_rss_attr a = {
		.port_num = 1,
		.hash_fields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4,
		.log_ind_tbl_size = 1,
		.num_wqs = 2,
		.match = { .af = AF_INET,
			   .l4_proto = IPPROTO_UDP,
			   .dst_port = 9999,
			   .port_mask = 0xffff },
	};
	uint64_t ids[2];

	for (int i = 0; i < 2; i++)
		if (ibc_wq_create(x, cq, NULL, &wq[i]) < 0)
			return -1;
	ids[0] = ibc_wq_id(wq[0]);
	ids[1] = other ? other : ibc_wq_id(wq[1]);
	a.wq_ids = ids;
	memset(a.hash_key, 0x6d, sizeof(a.hash_key));
	return ibc_rss_create(x, &a, ret);
}

/* The holder's RSS object over two WQs on @cq: its own, or its first
 * and holder_rss_wq. */
static int holder_rss(struct ibc_ctx *x, struct ibc_cq *cq)
{
	struct ibc_wq *wq[2];
	struct ibc_rss *rss;

	return rss_two(x, cq, holder_rss_wq, wq, &rss);
}

/* A small RC QP's attributes, its CQs to set. */
static struct ibc_qp_attr rc_attr(void)
{
	return (struct ibc_qp_attr){ .qp_type = IBV_QPT_RC,
				     .cap = { .max_send_wr = 4,
					      .max_recv_wr = 4,
					      .max_send_sge = 1,
					      .max_recv_sge = 1 } };
}

/* A child process with a session of its own holding in soft0 what @what
 * says; it waits for a signal. */
static pid_t holder_spawn_in(struct rig *g, unsigned int what)
{
	int p[2];
	pid_t pid;
	char c;

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct ibc_connect_attr attr = {
			.comp_mask = IBC_CONNECT_ATTR_SOCKET |
				     IBC_CONNECT_ATTR_TIMEOUT |
				     IBC_CONNECT_ATTR_FLAGS,
			.socket_path = g->sock,
			.timeout_ms = 10000,
			.flags = what & HOLD_PRIVATE ?
					 IBC_CONNECT_PRIVATE_DOMAIN :
					 0,
		};
		struct ibc_qp_attr qa = rc_attr();
		struct ibc_client *cl;
		struct ibc_xrcd *xr;
		struct ibc_ctx *x;
		struct ibc_dm *dm;
		struct ibc_qp *qp;

		if (ibc_connect(&attr, &cl) < 0 ||
		    ibc_open(cl, "soft0", &x) < 0 ||
		    (what & HOLD_CQ && ibc_cq_create(x, 4, &qa.send_cq) < 0) ||
		    (what & (HOLD_FAMILIES | HOLD_DM) &&
		     ibc_dm_alloc(x, 4096, 0, &dm) < 0) ||
		    (what & HOLD_FAMILIES &&
		     ibc_xrcd_open(x, "gone", O_CREAT, &xr) < 0) ||
		    (what & HOLD_RSS && holder_rss(x, qa.send_cq) < 0))
			_exit(1);
		qa.recv_cq = qa.send_cq;
		for (int i = 0; what & HOLD_QPS && i < 3; i++)
			if (ibc_qp_create(x, &qa, &qp) < 0)
				_exit(1);
		if (what & HOLD_TWICE && (ibc_connect(&attr, &cl) < 0 ||
					  ibc_open(cl, "soft0", &x) < 0 ||
					  ibc_cq_create(x, 4, &qa.send_cq) < 0))
			_exit(1);
		if (write(p[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], &c, 1), 1);
	close(p[0]);
	return pid;
}

static pid_t holder_spawn(struct rig *g, bool with_families)
{
	return holder_spawn_in(g,
			       HOLD_CQ | (with_families ? HOLD_FAMILIES : 0));
}

/* Every object and DM goes (a dead client's cleanup). */
static void wait_all_gone(struct rig *g)
{
	int64_t end = tl_now_ms() + TL_WAIT_MS;
	struct ibc_object_info *o;
	struct ibc_dm_info *d;
	size_t n_obj, n_dm;

	do {
		tl_sleep_ms(20);
		ck_assert_int_eq(
			ibc_list_objects(g->cl, NULL, &o, sizeof(*o), &n_obj),
			0);
		ibc_list_free(o);
		ck_assert_int_eq(ibc_list_dms(g->cl, &d, sizeof(*d), &n_dm), 0);
		ibc_list_free(d);
	} while ((n_obj || n_dm) && tl_now_ms() < end);
	ck_assert_uint_eq(n_obj, 0);
	ck_assert_uint_eq(n_dm, 0);
}

/* A client that dies while no daemon runs: its socket hangs up in the
 * store, and what the families kept of it (a DM and its status page, an
 * XRCD open, a CQ) is destroyed after the restore as a dead client's; the
 * other sessions and the state stay. */
START_TEST(client_dead_while_down)
{
	struct rig g;
	pid_t pid;
	int st;

	SKIP_WITHOUT_STATE(&g);
	pid = holder_spawn(&g, true);
	ck_assert_int_eq(fakesd_kill(g.sd, SIGKILL), 0);
	ck_assert_int_ge(fakesd_wait_exit(g.sd, TL_WAIT_MS), 0);
	kill(pid, SIGKILL);
	ck_assert_int_ge(tl_wait_pid(pid, TL_WAIT_MS, &st), 0);
	rig_start(&g);
	ck_assert_int_eq(ibc_ping(g.cl, NULL, 0), 0);
	ck_assert_int_eq(tl_count_in_file(g.log, "cannot be used"), 0);
	ck_assert_int_eq(tl_count_in_file(g.log, "starting clean"), 0);
	/* Its session comes back with its socket (FDPOLL=0 keeps it) and
	 * ends as a dead client's: everything it held is destroyed. */
	wait_all_gone(&g);
	rig_free(&g);
}
END_TEST

struct pinger {
	struct ibc_client *cl;
	int ret;
	char text[256];
	int64_t took;
};

static void *pinger_main(void *arg)
{
	struct pinger *p = arg;
	int64_t t0 = tl_now_ms();

	p->ret = ibc_ping(p->cl, "lost", 4);
	p->took = tl_now_ms() - t0;
	snprintf(p->text, sizeof(p->text), "%s", ibc_last_error());
	return NULL;
}

/* The daemon's end of session @id's connection, a dup from the store
 * (once the fake systemd's thread has taken the daemon's datagram). */
static int stored_conn_of(struct rig *g, uint64_t id)
{
	int64_t end = tl_now_ms() + TL_WAIT_MS;
	char name[256], want[64];
	int fd;

	snprintf(want, sizeof(want), "rb.conn.%llu", (unsigned long long)id);
	do {
		for (size_t i = 0;
		     fakesd_store_get(g->sd, i, name, sizeof(name), &fd) == 0;
		     i++) {
			if (strcmp(name, want) == 0)
				return fd;
			close(fd);
		}
		tl_sleep_ms(20);
	} while (tl_now_ms() < end);
	ck_abort_msg("no %s in the store", want);
	return -1;
}

/* The same for @g's own client. */
static int stored_conn(struct rig *g)
{
	struct ibc_client_info info;

	ck_assert_int_eq(ibc_client_info(g->cl, &info, sizeof(info)), 0);
	return stored_conn_of(g, info.client_id);
}

/*
 * A SIGKILL between the daemon's recv(2) of a request and its store in
 * the in-flight slot (issue 25 item 3): the stopped daemon's read is done
 * here, on its stored end of the connection, and the kill follows. No
 * daemon ever answers the request; the library's restart barrier finds it
 * lost and answers EAGAIN, where the caller waited its whole timeout.
 */
START_TEST(request_read_not_stored_eagain)
{
	struct pinger p = { 0 };
	struct pollfd pf;
	uint8_t buf[512];
	pthread_t t;
	struct rig g;
	pid_t pid;
	int fd;

	SKIP_WITHOUT_STATE(&g);
	fd = stored_conn(&g);
	pid = fakesd_main_pid(g.sd);
	ck_assert_int_eq(kill(pid, SIGSTOP), 0);
	p.cl = g.cl;
	ck_assert_int_eq(pthread_create(&t, NULL, pinger_main, &p), 0);
	pf = (struct pollfd){ .fd = fd, .events = POLLIN };
	ck_assert_int_eq(poll(&pf, 1, TL_WAIT_MS), 1);
	ck_assert_int_gt(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), 0);
	close(fd);
	ck_assert_int_eq(fakesd_kill(g.sd, SIGKILL), 0);
	ck_assert_int_ge(fakesd_wait_exit(g.sd, TL_WAIT_MS), 0);
	rig_start(&g);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_msg(p.ret == -EAGAIN &&
			      strcmp(p.text, "the broker restarted while "
					     "serving this request") == 0,
		      "the lost ping: %d \"%s\" after %lld ms", p.ret, p.text,
		      (long long)p.took);
	/* Well before the client's 10 s timeout. */
	ck_assert_msg(p.took < 8000, "took %lld ms", (long long)p.took);
	ck_assert_int_eq(ibc_ping(g.cl, NULL, 0), 0);
	rig_free(&g);
}
END_TEST

static void pending_note(void *arg, uint64_t conn_id, uint64_t serial)
{
	++*(unsigned int *)arg;
}

/* Requests marked read and not answered in the stored in-flight tables. */
static unsigned int stored_pending_now(struct rig *g)
{
	unsigned int n = 0;
	char name[256];
	int fd;

	for (size_t i = 0;
	     fakesd_store_get(g->sd, i, name, sizeof(name), &fd) == 0; i++) {
		if (strncmp(name, "rb.inflight.", 12) == 0)
			ck_assert_int_eq(inflight_scan(fd, pending_note, &n),
					 0);
		close(fd);
	}
	return n;
}

/* The same once it is @want, or at TL_WAIT_MS: the daemon clears a
 * request's mark just after its reply went. */
static unsigned int stored_pending(struct rig *g, unsigned int want)
{
	int64_t end = tl_now_ms() + TL_WAIT_MS;
	unsigned int n;

	while ((n = stored_pending_now(g)) != want && tl_now_ms() < end)
		tl_sleep_ms(20);
	return n;
}

/*
 * A request read whose reply waits in the daemon's queue (its client
 * reads nothing, so its socket is full) is marked in the stored in-flight
 * table (issue 25 item 3): the next daemon answers it EAGAIN. The mark is
 * the connection's inline store at every request (conn_inflight_read()).
 */
START_TEST(inflight_marks_queued_reply)
{
	static uint8_t payload[16384];
	const struct timeval tv = { .tv_usec = 200000 };
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	struct rig g;
	int sock, ret = 0;

	SKIP_WITHOUT_STATE(&g);
	sock = tl_raw_connect(g.sock);
	ck_assert_int_ge(sock, 0);
	ck_assert_int_eq(tl_raw_hello(sock, 1), 0);
	ck_assert_uint_eq(stored_pending(&g, 0), 0);
	ck_assert_int_eq(
		setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)), 0);
	req.version = WIRE_PROTOCOL_VERSION;
	req.body_case = RDMAB__REQUEST__BODY_PING;
	req.ping.data = payload;
	req.ping.len = sizeof(payload);
	/* Until the daemon reads no more: its replies are queued. */
	for (uint64_t serial = 2; serial < 100000 && ret == 0; serial++) {
		req.serial = serial;
		ret = tl_send_request(sock, &req, NULL, 0);
	}
	ck_assert_int_eq(ret, -EAGAIN);
	ck_assert_uint_eq(stored_pending(&g, 1), 1);
	close(sock);
	rig_free(&g);
}
END_TEST

/* The soft device's QP numbers and MR keys: what a restart remakes
 * keeps its own, and none handed out before the restart (of an object
 * destroyed since, or alive) is handed out again after it. */
START_TEST(serials_never_reused)
{
	struct ibc_qp_attr qa = rc_attr();
	static char buf[4096];
	struct ibc_qp *qa_gone, *qb, *qc, *tgt, *tgt2;
	struct ibc_mr *ma_gone, *mb, *mc;
	struct ibc_xrcd *xr;
	uint32_t qn_gone, qn_live, key_gone, key_live;
	struct ibc_ctx *x;
	struct ibc_cq *cq;
	struct rig g;

	SKIP_WITHOUT_STATE(&g);
	/* Restored once: its counters say so (generation 2, 1 restart). */
	ck_assert_int_eq(kill_and_restart(&g), 0);
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_cq_create(x, 4, &cq), 0);
	qa.send_cq = qa.recv_cq = cq;
	ck_assert_int_eq(ibc_qp_create(x, &qa, &qa_gone), 0);
	ck_assert_int_eq(ibc_qp_create(x, &qa, &qb), 0);
	ck_assert_int_eq(ibc_reg_mr(x, buf, sizeof(buf), 0, &ma_gone), 0);
	ck_assert_int_eq(ibc_reg_mr(x, buf, sizeof(buf), 0, &mb), 0);
	qn_gone = ibc_qp_num(qa_gone);
	qn_live = ibc_qp_num(qb);
	key_gone = ibc_mr_lkey(ma_gone);
	key_live = ibc_mr_lkey(mb);
	ck_assert_int_eq(ibc_xrcd_open(x, "serials", O_CREAT, &xr), 0);
	ck_assert_int_eq(ibc_qp_create_xrc_tgt(xr, &tgt), 0);
	ck_assert_int_eq(ibc_qp_destroy(qa_gone), 0);
	ck_assert_int_eq(ibc_dereg_mr(ma_gone), 0);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	/* Twice: the second restore reads the records the first carried
	 * into its journal (restart_obj_packed(): their bytes, as they were,
	 * when what was made again matches them). */
	ck_assert_int_eq(kill_and_restart(&g), 0);
	/* An XRC target QP is opened by the number its creator knows. */
	ck_assert_int_eq(ibc_qp_open_xrc_tgt(xr, ibc_qp_num(tgt), &tgt2), 0);
	ck_assert_int_eq(ibc_qp_destroy(tgt2), 0);
	ck_assert_int_eq(ibc_qp_create(x, &qa, &qc), 0);
	ck_assert_int_eq(ibc_reg_mr(x, buf, sizeof(buf), 0, &mc), 0);
	ck_assert_uint_ne(ibc_qp_num(qc), qn_gone);
	ck_assert_uint_ne(ibc_qp_num(qc), qn_live);
	ck_assert_uint_ne(ibc_mr_lkey(mc), key_gone);
	ck_assert_uint_ne(ibc_mr_lkey(mc), key_live);
	/* The live ones were made again as they were: destroyed by the
	 * client as its own. */
	ck_assert_int_eq(ibc_qp_destroy(qb), 0);
	ck_assert_int_eq(ibc_dereg_mr(mb), 0);
	ibc_qp_destroy(qc);
	ibc_dereg_mr(mc);
	ibc_qp_destroy(tgt);
	ibc_xrcd_close(xr);
	ibc_cq_destroy(cq);
	rig_free(&g);
}
END_TEST

/* The objects of @g's domain as the daemon lists them: how many, and
 * how many of those are in @state. */
static size_t objects_in(struct rig *g, enum ibc_object_state state,
			 size_t *ret_in_state)
{
	struct ibc_object_info *o;
	size_t n, k = 0;

	ck_assert_int_eq(ibc_list_objects(g->cl, NULL, &o, sizeof(*o), &n), 0);
	for (size_t i = 0; i < n; i++)
		k += o[i].state == state;
	ibc_list_free(o);
	*ret_in_state = k;
	return n;
}

/* The id of the session of process @pid (its last one, if several). */
static uint64_t client_id_of(struct rig *g, pid_t pid)
{
	struct ibc_client_entry *e;
	uint64_t id = 0;
	size_t k;

	ck_assert_int_eq(ibc_list_clients(g->cl, &e, sizeof(*e), &k), 0);
	for (size_t i = 0; i < k; i++)
		if (e[i].pid == (uint32_t)pid)
			id = e[i].id;
	ibc_list_free(e);
	ck_assert_uint_ne(id, 0);
	return id;
}

/* Wait (at most TL_WAIT_MS) until the store holds @n descriptors named
 * @name (store_count()): the fake systemd's thread stores and removes what the
 * daemon sent when it runs. */
static void store_wait_count(struct rig *g, const char *name, size_t n)
{
	int64_t end = tl_now_ms() + TL_WAIT_MS;

	while (store_count(g, name) != n && tl_now_ms() < end)
		tl_sleep_ms(20);
	ck_assert_uint_eq(store_count(g, name), n);
}

/* The session of process @pid ends (an eviction), the process stays:
 * once the registry shows more detached objects than before it, how many
 * are detached (of every process). */
static size_t evict_pid(struct rig *g, pid_t pid)
{
	int64_t end = tl_now_ms() + TL_WAIT_MS;
	size_t before, detached;

	objects_in(g, IBC_OBJECT_DETACHED, &before);
	ck_assert_int_eq(ibc_admin_evict(g->cl, client_id_of(g, pid)), 0);
	while (objects_in(g, IBC_OBJECT_DETACHED, &detached) &&
	       detached <= before && tl_now_ms() < end)
		tl_sleep_ms(20);
	return detached;
}

/* The domain named @name as listed now; false when there is none. */
static bool domain_named(struct rig *g, const char *name,
			 struct ibc_domain_info *ret)
{
	struct ibc_domain_info *d;
	bool found = false;
	size_t n;

	ck_assert_int_eq(ibc_list_domains(g->cl, &d, sizeof(*d), &n), 0);
	for (size_t i = 0; i < n && !found; i++)
		if (strcmp(d[i].name, name) == 0) {
			*ret = d[i];
			found = true;
		}
	ibc_list_free(d);
	return found;
}

/* Domain @name goes (its last context closed). */
static void wait_domain_gone(struct rig *g, const char *name)
{
	struct ibc_domain_info left;
	int64_t end = tl_now_ms() + TL_WAIT_MS;

	while (domain_named(g, name, &left) && tl_now_ms() < end)
		tl_sleep_ms(20);
	ck_assert_msg(!domain_named(g, name, &left),
		      "domain %s stays after its objects went", name);
}

/* Holder @pid exits: everything it held goes, and its domain @name with
 * it. */
static void holder_gone(struct rig *g, pid_t pid, const char *name)
{
	int st;

	kill(pid, SIGKILL);
	ck_assert_int_ge(tl_wait_pid(pid, TL_WAIT_MS, &st), 0);
	wait_all_gone(g);
	wait_domain_gone(g, name);
}

/* The one DM listed is live, with one import (its allocator's). */
static void dm_live_imported(struct rig *g)
{
	struct ibc_dm_info *d;
	size_t n;

	ck_assert_int_eq(ibc_list_dms(g->cl, &d, sizeof(*d), &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(d[0].state, IBC_DM_LIVE);
	ck_assert_uint_eq(d[0].n_importers, 1);
	ibc_list_free(d);
}

/* The name of the private domain listed now ("" for none). */
static void private_domain(struct rig *g, char *name, size_t size)
{
	struct ibc_domain_info *d;
	size_t n;

	*name = '\0';
	ck_assert_int_eq(ibc_list_domains(g->cl, &d, sizeof(*d), &n), 0);
	for (size_t i = 0; i < n; i++)
		if (strcmp(d[i].kind, "private") == 0)
			snprintf(name, size, "%s", d[i].name);
	ibc_list_free(d);
}

/* A session that ended before the restart while its process lives
 * (detached, here by an eviction): its objects are adopted with it,
 * shown detached, and destroyed once the process exits after the
 * restart. */
START_TEST(detached_owner_kept)
{
	struct rig g;
	size_t n, detached;
	pid_t pid;
	int st;

	SKIP_WITHOUT_STATE(&g);
	pid = holder_spawn(&g, false);
	ck_assert_uint_eq(evict_pid(&g, pid), 1);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	n = objects_in(&g, IBC_OBJECT_DETACHED, &detached);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(detached, 1);
	kill(pid, SIGKILL);
	ck_assert_int_ge(tl_wait_pid(pid, TL_WAIT_MS, &st), 0);
	{
		int64_t end = tl_now_ms() + TL_WAIT_MS;

		while (objects_in(&g, IBC_OBJECT_DETACHED, &detached) &&
		       tl_now_ms() < end)
			tl_sleep_ms(20);
		ck_assert_uint_eq(
			objects_in(&g, IBC_OBJECT_DETACHED, &detached), 0);
	}
	rig_free(&g);
}
END_TEST

/* A holder of a CQ whose session ends while it lives (detached), its
 * process's pidfd then in the store under @name (its client id's, in
 * *@ret_id), and the daemon SIGKILLed: the holder's pid. */
static pid_t detached_then_killed(struct rig *g, char *name, size_t size,
				  uint64_t *ret_id)
{
	pid_t pid = holder_spawn(g, false);
	uint64_t id = client_id_of(g, pid);

	snprintf(name, size, "rb.pidfd.%" PRIu64, id);
	ck_assert_uint_eq(evict_pid(g, pid), 1);
	store_wait_count(g, name, 1);
	ck_assert_int_eq(fakesd_kill(g->sd, SIGKILL), 0);
	ck_assert_int_ge(fakesd_wait_exit(g->sd, TL_WAIT_MS), 0);
	if (ret_id)
		*ret_id = id;
	return pid;
}

/* The owner record of process @pid, changed by @edit(m, @arg). */
struct owner_edit {
	pid_t pid;
	void (*edit)(Rdmab__State__Owner *m, void *arg);
	void *arg;
	struct journal *j;
	unsigned int edited;
};

static int owner_edit_one(void *arg, const struct journal_rec *r)
{
	struct owner_edit *e = arg;
	Rdmab__State__Owner *m =
		rdmab__state__owner__unpack(NULL, r->len, r->data);

	ck_assert_ptr_nonnull(m);
	if (m->pid == (uint32_t)e->pid) {
		e->edit(m, e->arg);
		ck_assert_int_eq(
			journal_put(e->j, JOURNAL_OWNER, r->key, &m->base), 0);
		e->edited++;
	}
	rdmab__state__owner__free_unpacked(m, NULL);
	return 0;
}

/* @j (taken) handed to the next daemon as the newest state, which it
 * restores, not refuses. */
static void state_plant_start(struct rig *g, struct journal *j)
{
	char name[64];

	snprintf(name, sizeof(name), "rb.state.%" PRIu64, journal_gen(j));
	ck_assert_int_eq(fakesd_plant(g->sd, name, journal_fd(j)), 0);
	journal_free(j);
	rig_start(g);
	ck_assert_int_eq(ibc_ping(g->cl, NULL, 0), 0);
	ck_assert_int_eq(tl_count_in_file(g->log, "starting clean"), 0);
}

/* While no daemon runs: the next generation of the stored state, with
 * the owner record of process @pid changed by @edit, planted (the
 * newest state is the one read). */
static void plant_owner_edit(struct rig *g, pid_t pid,
			     void (*edit)(Rdmab__State__Owner *m, void *arg),
			     void *arg)
{
	struct owner_edit e = { .pid = pid, .edit = edit, .arg = arg };
	struct journal_view *v;
	char why[256], name[64];
	int fd;

	fd = state_fd(g);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(journal_read_fd(fd, &v, why, sizeof(why)), 0);
	close(fd);
	ck_assert_int_eq(journal_from_view(v, journal_view_gen(v) + 1, &e.j),
			 0);
	ck_assert_int_eq(journal_each(v, JOURNAL_OWNER, owner_edit_one, &e), 0);
	ck_assert_uint_eq(e.edited, 1);
	snprintf(name, sizeof(name), "rb.state.%" PRIu64, journal_gen(e.j));
	ck_assert_int_eq(fakesd_plant(g->sd, name, journal_fd(e.j)), 0);
	journal_free(e.j);
	journal_view_free(v);
}

/* Its start time moved on and no pidfd named (an older daemon's
 * record): what a pid reused while no daemon ran looks like to a
 * restore without the process's pidfd. */
static void owner_start_moved(Rdmab__State__Owner *m, void *arg)
{
	/* Recorded when the session ended. */
	ck_assert_uint_ne(m->start_time, 0);
	m->start_time++;
	m->pidfd = 0;
}

/* Without its pidfd, a detached owner's process is known by its start
 * time too: after a restart whose state says the process under its pid
 * started at another time (the pid was reused while no daemon ran), the
 * owner is dead and its objects are destroyed, though a process of that
 * pid lives. The state is an older daemon's: no pidfd in the store. */
START_TEST(detached_owner_pid_reused)
{
	char name[64];
	struct rig g;
	pid_t pid;
	int st;

	SKIP_WITHOUT_STATE(&g);
	pid = detached_then_killed(&g, name, sizeof(name), NULL);
	plant_owner_edit(&g, pid, owner_start_moved, NULL);
	ck_assert_int_eq(fakesd_drop(g.sd, name), 1);
	rig_start(&g);
	ck_assert_int_eq(ibc_ping(g.cl, NULL, 0), 0);
	ck_assert_int_eq(tl_count_in_file(g.log, "starting clean"), 0);
	wait_all_gone(&g);
	ck_assert_int_eq(kill(pid, 0), 0);
	kill(pid, SIGKILL);
	ck_assert_int_ge(tl_wait_pid(pid, TL_WAIT_MS, &st), 0);
	rig_free(&g);
}
END_TEST

/* A session's holds on a context are slots (journal.h) since format 3:
 * a context opened twice comes back opened twice, its count restored,
 * and closed twice. */
START_TEST(hold_count_kept)
{
	struct ibc_ctx *x, *x2;
	struct ibc_cq *cq;
	struct rig g;

	SKIP_WITHOUT_STATE(&g);
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x2), 0);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	ibc_close(x2);
	/* Still held once: the session makes there. */
	ck_assert_int_eq(ibc_cq_create(x, 4, &cq), 0);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	ck_assert_int_eq(ibc_cq_create(x, 4, &cq), 0);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	ibc_close(x);
	rig_free(&g);
}
END_TEST

/* A previous daemon's state (format 2): its holds are SessionHold
 * records, made here from this one's slots. */
struct fmt2 {
	struct journal *j;
	uint64_t key;
};

static int fmt2_rec(void *arg, const struct journal_rec *r)
{
	struct fmt2 *f = arg;

	ck_assert_int_eq(
		journal_put_packed(f->j, r->kind, r->key, r->data, r->len), 0);
	return 0;
}

static int fmt2_hold(void *arg, const struct journal_slot *sl)
{
	Rdmab__State__SessionHold h = RDMAB__STATE__SESSION_HOLD__INIT;
	struct fmt2 *f = arg;

	h.client_id = sl->id[0];
	h.ctx_id = sl->id[1];
	h.import = sl->id[2];
	h.opens = sl->n;
	ck_assert_int_eq(
		journal_put(f->j, JOURNAL_SESSION_HOLD, ++f->key, &h.base), 0);
	/* And a record of no open, which no daemon wrote: no hold. */
	h.opens = 0;
	ck_assert_int_eq(
		journal_put(f->j, JOURNAL_SESSION_HOLD, ++f->key, &h.base), 0);
	return 0;
}

/* An upgrade from the previous daemon: a state of format 2, whose holds
 * are records, gives the sessions their contexts back; a record of no
 * open is none (as a slot it would break the new journal). */
START_TEST(format2_holds_restored)
{
	const uint32_t two = 2;
	struct journal_view *v;
	struct fmt2 f = { 0 };
	struct ibc_ctx *x;
	struct ibc_cq *cq, *cq2;
	char why[256];
	struct rig g;
	int fd;

	SKIP_WITHOUT_STATE(&g);
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_cq_create(x, 4, &cq), 0);
	ck_assert_int_eq(fakesd_kill(g.sd, SIGKILL), 0);
	ck_assert_int_ge(fakesd_wait_exit(g.sd, TL_WAIT_MS), 0);
	fd = state_fd(&g);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(journal_read_fd(fd, &v, why, sizeof(why)), 0);
	close(fd);
	ck_assert_uint_gt(journal_view_count(v, JOURNAL_SLOTS), 0);
	ck_assert_int_eq(journal_create(journal_view_gen(v) + 1, &f.j), 0);
	for (uint32_t k = 1; k <= JOURNAL_KIND_MAX; k++)
		if (k != JOURNAL_SLOTS)
			ck_assert_int_eq(journal_each(v, k, fmt2_rec, &f), 0);
	ck_assert_int_eq(journal_each_slot(v, fmt2_hold, &f), 0);
	ck_assert_uint_eq(f.key, 2);
	/* The header's format word follows its 8-byte magic. */
	ck_assert_int_eq(pwrite(journal_fd(f.j), &two, sizeof(two), 8),
			 (ssize_t)sizeof(two));
	journal_view_free(v);
	state_plant_start(&g, f.j);
	/* The session holds its context again: it makes there. */
	ck_assert_int_eq(ibc_cq_create(x, 4, &cq2), 0);
	ck_assert_int_eq(ibc_cq_destroy(cq2), 0);
	/* The new journal took it whole, and goes on. */
	ck_assert_int_eq(tl_count_in_file(g.log, "the state journal failed"),
			 0);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	ck_assert_int_eq(ibc_cq_create(x, 4, &cq2), 0);
	ck_assert_int_eq(ibc_cq_destroy(cq2), 0);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	ibc_close(x);
	rig_free(&g);
}
END_TEST

/* The domain with members (the rig's client's), as listed now. */
static struct ibc_domain_info domain_now(struct rig *g)
{
	struct ibc_domain_info *d, r = { 0 };
	size_t n;
	bool found = false;

	ck_assert_int_eq(ibc_list_domains(g->cl, &d, sizeof(*d), &n), 0);
	for (size_t i = 0; i < n && !found; i++)
		if (d[i].members) {
			r = d[i];
			found = true;
		}
	ibc_list_free(d);
	ck_assert(found);
	return r;
}

/* A session's import of a context (what the provider made for it, the
 * soft device's internal records) comes back with its hold: counted the
 * same, and freed by the session's close as before the restart. */
START_TEST(import_kept)
{
	struct ibc_domain_info before, after;
	struct ibc_ctx *x;
	struct rig g;

	SKIP_WITHOUT_STATE_CONF(&g,
				"[soft]\ninternal_objects_per_import = 2\n");
	/* The rig's client holds one import (rig_new), this one another
	 * open of it. */
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	before = domain_now(&g);
	ck_assert_uint_eq(before.internal_objects, 2);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	after = domain_now(&g);
	ck_assert_uint_eq(after.internal_objects, before.internal_objects);
	ck_assert_uint_eq(after.unaccounted, before.unaccounted);
	ck_assert_uint_eq(after.used.objects, before.used.objects);
	rig_free(&g);
}
END_TEST

/* The generation of the state the fake systemd holds, or 0. */
static uint64_t state_gen(struct rig *g)
{
	char name[256];
	uint64_t gen = 0;
	int fd;

	for (size_t i = 0;
	     fakesd_store_get(g->sd, i, name, sizeof(name), &fd) == 0; i++) {
		close(fd);
		if (strncmp(name, "rb.state.", 9) == 0)
			gen = strtoull(name + 9, NULL, 10);
	}
	return gen;
}

/* The store's state generation once it is above @above and the same for
 * 200 ms (at most 10 s): what the daemon last sent, taken. */
static uint64_t state_gen_settled(struct rig *g, uint64_t above)
{
	int64_t end = tl_now_ms() + 10000;
	uint64_t gen = state_gen(g);
	int same = 0;

	while (same < 4 && tl_now_ms() < end) {
		uint64_t now;

		tl_sleep_ms(50);
		now = state_gen(g);
		same = now > above && now == gen ? same + 1 : 0;
		gen = now;
	}
	return gen;
}

/* The restore writes each record it adopts once, as a compaction does:
 * past the journal's slack (1 MiB: 16,000 CQs of about 80 bytes) it
 * must not ask for a compaction that copies the whole state again
 * (issue 25's restore time). The generation after the restart is the
 * restore's own, one above the state it read, not a compaction's. */
START_TEST(restore_not_compacted)
{
	struct ibc_ctx *x;
	struct ibc_cq *cq;
	struct rig g;
	uint64_t gen0, gen;

	SKIP_WITHOUT_STATE_CONF(&g, "[defaults]\nobjects = 20000\n");
	gen0 = state_gen(&g);
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	for (int i = 0; i < 16000; i++)
		ck_assert_int_eq(ibc_cq_create(x, 1, &cq), 0);
	/* A compaction the last create asked for has run once the next
	 * request is answered; the fake systemd's thread takes its state a
	 * moment later: read the generation once it is there and stays. */
	ck_assert_int_eq(ibc_ping(g.cl, NULL, 0), 0);
	gen = state_gen_settled(&g, gen0);
	ck_assert_uint_gt(gen, gen0);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	ck_assert_int_eq(ibc_ping(g.cl, NULL, 0), 0);
	ck_assert_uint_eq(state_gen(&g), gen + 1);
	rig_free(&g);
}
END_TEST

/* What status tells @cl of the journal starts with @want. */
static void journal_shown(struct ibc_client *cl, const char *want)
{
	struct ibc_status st;

	ck_assert_int_eq(ibc_status(cl, &st, sizeof(st)), 0);
	ck_assert_msg(strncmp(st.journal, want, strlen(want)) == 0,
		      "status journal: \"%s\", not \"%s...\"", st.journal,
		      want);
}

/* @g killed and started again under RLIMIT_FSIZE @fsize: the daemon goes
 * on, its session (@x its context) keeps its @n live objects and makes
 * one more, the log says @said once and status @shown, the store holds
 * @states states; the restart after it, with no limit, starts clean and
 * says @clean, and status says the journal is ok again. */
static void fsize_restart_goes_on(struct rig *g, struct ibc_ctx *x,
				  rlim_t fsize, size_t n, const char *said,
				  const char *shown, size_t states,
				  const char *clean)
{
	struct ibc_client *c2;
	struct ibc_cq *cq;
	size_t k;

	journal_shown(g->cl, "ok");
	rig_fsize = fsize;
	ck_assert_int_eq(kill_and_restart(g), 0);
	rig_fsize = 0;
	ck_assert_uint_eq(objects_in(g, IBC_OBJECT_LIVE, &k), n);
	ck_assert_int_eq(ibc_cq_create(x, 1, &cq), 0);
	ck_assert_int_eq(tl_count_in_file(g->log, said), 1);
	journal_shown(g->cl, shown);
	store_wait_count(g, "rb.state.", states);
	ck_assert_int_eq(kill_and_restart(g), -ECONNRESET);
	ck_assert_int_eq(tl_count_in_file(g->log, clean), 1);
	ck_assert_int_eq(tl_connect(g->sock, 10000, &c2), 0);
	journal_shown(c2, "ok");
	ibc_disconnect(c2);
}

/* The journal a restore writes cannot grow (the daemon's RLIMIT_FSIZE
 * at the size a new journal starts with, 1 MiB, below the state it
 * adopts): the daemon neither dies of SIGXFSZ nor exits, it goes on with
 * the sessions and objects it adopted, says why, and keeps no state that
 * a next daemon would take: the one it stored says the journal failed,
 * the previous one left the store, and the next restart starts clean. */
START_TEST(restore_journal_fails_goes_on)
{
	struct ibc_ctx *x;
	struct ibc_cq *cq;
	struct stat st;
	struct rig g;
	size_t n, k;
	int fd;

	SKIP_WITHOUT_STATE_CONF(&g, "[defaults]\nobjects = 20000\n");
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	for (int i = 0; i < 16000; i++)
		ck_assert_int_eq(ibc_cq_create(x, 1, &cq), 0);
	n = objects_in(&g, IBC_OBJECT_LIVE, &k);
	/* A restore journals more than 1 MiB of this state. */
	ck_assert_int_eq(kill_and_restart(&g), 0);
	store_wait_count(&g, "rb.state.", 1);
	fd = state_fd(&g);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	close(fd);
	ck_assert_int_gt(st.st_size, 1 << 20);
	ck_assert_int_eq(tl_count_in_file(g.log, "File too large"), 0);

	fsize_restart_goes_on(&g, x, 1 << 20, n,
			      "journal failed during the restore (File too "
			      "large)",
			      "abandoned after a write failed (File too "
			      "large), the next restart starts clean",
			      1, "abandoned after a write failed");
	rig_free(&g);
}
END_TEST

/* No journal can be made at start (RLIMIT_FSIZE below the 1 MiB a new
 * journal's memfd starts with): the daemon neither exits nor refuses
 * what it was handed; it adopts the session and its objects, says why,
 * stores no state (the old one leaves the store), and the restart after
 * it starts clean. */
START_TEST(journal_not_made_goes_on)
{
	struct ibc_ctx *x;
	struct ibc_cq *cq;
	struct rig g;
	size_t n, k;

	SKIP_WITHOUT_STATE(&g);
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_cq_create(x, 1, &cq), 0);
	n = objects_in(&g, IBC_OBJECT_LIVE, &k);
	ck_assert_uint_ge(n, 1);
	fsize_restart_goes_on(&g, x, 512 << 10, n,
			      "journal cannot be made (File too large)",
			      "none: it could not be made at start (File "
			      "too large), the next restart starts clean",
			      0, "handed over without a state");
	rig_free(&g);
}
END_TEST

/* A context replaced by a rekey that a session still holds stays
 * replaced: listed as old, and no new session gets it. */
START_TEST(rekeyed_kept)
{
	struct ibc_domain_info before, after;
	struct ibc_client *c2;
	struct ibc_ctx *x2;
	struct rig g;

	SKIP_WITHOUT_STATE(&g);
	before = domain_now(&g);
	ck_assert_int_eq(ibc_admin_domain_rekey(g.cl, before.name, 0), 0);
	before = domain_now(&g);
	ck_assert_uint_eq(before.old_contexts, 1);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	after = domain_now(&g);
	ck_assert_uint_eq(after.old_contexts, 1);
	ck_assert_uint_eq(after.used.objects, before.used.objects);
	/* A new session opens a new context. */
	ck_assert_int_eq(tl_connect(g.sock, 10000, &c2), 0);
	ck_assert_int_eq(ibc_open(c2, "soft0", &x2), 0);
	after = domain_now(&g);
	ck_assert_uint_eq(after.contexts, 2);
	ck_assert_uint_eq(after.old_contexts, 1);
	ibc_disconnect(c2);
	rig_free(&g);
}
END_TEST

/* The service manager's store full (FileDescriptorStoreMax= below what
 * the daemon keeps): what is over the bound is refused and closed by the
 * manager, one by one, unseen by the daemon. After a restart the sessions
 * whose sockets were kept go on; the others are told their connection
 * ended, and what they held is gone with nothing left charged: the books
 * are exact. */
START_TEST(store_full)
{
	enum { EXTRA = 6, BOUND = 9 };
	struct ibc_client *cl[EXTRA];
	struct ibc_domain_info d;
	struct fakesd_stats st;
	struct ibc_object_info *o;
	size_t n_obj;
	int kept = 0, ended = 0;
	struct rig g;

	/* The state, the in-flight table, the XRCD directory, the rig's
	 * client and its context, then one socket per client below: two
	 * over the bound. */
	rig_store_max = BOUND;
	SKIP_WITHOUT_STATE(&g);
	rig_store_max = 0;
	for (int i = 0; i < EXTRA; i++) {
		struct ibc_ctx *x;
		struct ibc_cq *cq;

		ck_assert_int_eq(tl_connect(g.sock, 10000, &cl[i]), 0);
		ck_assert_int_eq(ibc_open(cl[i], "soft0", &x), 0);
		ck_assert_int_eq(ibc_cq_create(x, 4, &cq), 0);
	}
	/* The manager reads the daemon's messages in a thread of its own:
	 * a reply may come before it has read the last ones. */
	{
		int64_t end = tl_now_ms() + TL_WAIT_MS;

		fakesd_stats(g.sd, &st);
		while (st.refused < 2 && tl_now_ms() < end) {
			tl_sleep_ms(20);
			fakesd_stats(g.sd, &st);
		}
	}
	ck_assert_uint_eq(st.refused, 2);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	for (int i = 0; i < EXTRA; i++) {
		int err = ibc_ping(cl[i], NULL, 0);

		ck_assert_msg(err == 0 || err == -ECONNRESET, "ping: %d", err);
		kept += err == 0;
		ended += err == -ECONNRESET;
	}
	ck_assert_int_eq(kept, EXTRA - 2);
	ck_assert_int_eq(ended, 2);
	/* One CQ per session kept; the context's PD and those CQs are all
	 * the domain is charged. */
	ck_assert_int_eq(ibc_list_objects(g.cl, NULL, &o, sizeof(*o), &n_obj),
			 0);
	ibc_list_free(o);
	ck_assert_uint_eq(n_obj, (size_t)kept);
	d = domain_now(&g);
	ck_assert_uint_eq(d.contexts, 1);
	ck_assert_uint_eq(d.used.objects, 1 + n_obj + d.unaccounted);
	ck_assert_uint_eq(d.used.clients, 1 + (unsigned int)kept);
	for (int i = 0; i < EXTRA; i++)
		ibc_disconnect(cl[i]);
	rig_free(&g);
}
END_TEST

/* What a family keeps of an object that uses another (XRCD: the open an
 * XRC SRQ uses) is its own, journaled with the object's record (issue 24
 * item 2): after a SIGKILL and a restore, the XRCD listing still counts
 * the SRQ on its open. */
START_TEST(family_uses_restored)
{
	struct ibv_srq_attr sa = { .max_wr = 16, .max_sge = 1 };
	struct ibc_client_info ci;
	struct ibc_client *cl;
	struct ibc_xrcd_info *xl;
	struct ibc_xrcd *xr;
	struct ibc_ctx *x;
	struct ibc_cq *cq;
	struct ibc_srq *srq;
	uint32_t srqs = 0;
	size_t n;
	struct rig g;

	SKIP_WITHOUT_STATE(&g);
	ck_assert_int_eq(tl_connect(g.sock, 10000, &cl), 0);
	ck_assert_int_eq(ibc_open(cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_client_info(cl, &ci, sizeof(ci)), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "kept", O_CREAT, &xr), 0);
	ck_assert_int_eq(ibc_cq_create(x, 16, &cq), 0);
	ck_assert_int_eq(ibc_srq_create_xrc(xr, cq, &sa, &srq), 0);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	ck_assert_int_eq(ibc_ping(cl, NULL, 0), 0);
	ck_assert_int_eq(ibc_list_xrcds(cl, "kept", &xl, sizeof(*xl), &n), 0);
	ck_assert_uint_eq(n, 1);
	for (uint32_t k = 0; k < xl[0].n_opens_shown; k++)
		if (xl[0].opens[k].client_id == ci.client_id)
			srqs = xl[0].open_objs[k].srqs;
	ibc_list_free(xl);
	ck_assert_uint_eq(srqs, 1);
	ibc_disconnect(cl);
	rig_free(&g);
}
END_TEST

/* An MR on a DM (soft: the MR's record names the DM's handle) comes
 * back after a SIGKILL with its record and its place on the DM, which
 * needs the DM made again before it: the DM's bytes read the same and
 * the MR is listed as before. Its client killed after the restore,
 * everything it held is destroyed, with nothing left charged. */
static pid_t dm_mr_holder(struct rig *g, int *ret_go, int *ret_done)
{
	static const char bytes[] = "kept across the restart";
	int up[2], down[2];
	pid_t pid;
	char c;

	ck_assert_int_eq(pipe2(up, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(down, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char back[sizeof(bytes)] = { 0 };
		struct ibc_client *cl;
		struct ibc_ctx *x;
		struct ibc_dm *dm;
		struct ibc_mr *mr;

		if (tl_connect(g->sock, 10000, &cl) < 0 ||
		    ibc_open(cl, "soft0", &x) < 0 ||
		    ibc_dm_alloc(x, 4096, 0, &dm) < 0 ||
		    ibc_dm_write(dm, 0, bytes, sizeof(bytes)) < 0 ||
		    ibc_reg_dm_mr(dm, 0, 4096,
				  IBV_ACCESS_ZERO_BASED |
					  IBV_ACCESS_LOCAL_WRITE,
				  &mr) < 0)
			_exit(1);
		if (write(up[1], "r", 1) != 1 || read(down[0], &c, 1) != 1)
			_exit(1);
		c = ibc_ping(cl, NULL, 0) == 0 &&
				    ibc_dm_read(dm, back, 0, sizeof(back)) ==
					    0 &&
				    !memcmp(back, bytes, sizeof(bytes)) ?
			    'o' :
			    'x';
		if (write(up[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	ck_assert_int_eq(read(up[0], &c, 1), 1);
	ck_assert_int_eq(c, 'r');
	*ret_go = down[1];
	*ret_done = up[0];
	return pid;
}

/* The object ids and kinds listed, sorted by id, into @v (of @cap). */
static size_t objects_listed(struct rig *g, struct ibc_object_info *v,
			     size_t cap)
{
	struct ibc_object_info *o;
	size_t n;

	ck_assert_int_eq(ibc_list_objects(g->cl, NULL, &o, sizeof(*o), &n), 0);
	ck_assert_uint_le(n, cap);
	for (size_t i = 0; i < n; i++) {
		size_t k = i;

		while (k && v[k - 1].id > o[i].id) {
			v[k] = v[k - 1];
			k--;
		}
		v[k] = o[i];
	}
	ibc_list_free(o);
	return n;
}

/* The objects listed now are the @n of @before (objects_listed()):
 * the same ids, kinds, handles and states. */
static void objects_same(struct rig *g, const struct ibc_object_info *before,
			 size_t n)
{
	struct ibc_object_info after[16];

	ck_assert_uint_eq(objects_listed(g, after, 16), n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(after[i].id, before[i].id);
		ck_assert_int_eq(after[i].kind, before[i].kind);
		ck_assert_uint_eq(after[i].handle, before[i].handle);
		ck_assert_int_eq(after[i].state, before[i].state);
	}
}

/* Every object and DM goes, and the domain is charged what it was at
 * @base, with no DM bytes. */
static void wait_all_gone_uncharged(struct rig *g,
				    const struct ibc_domain_info *base)
{
	struct ibc_domain_info used;

	wait_all_gone(g);
	used = domain_now(g);
	ck_assert_uint_eq(used.used.dm_bytes, 0);
	ck_assert_uint_eq(used.used.objects, base->used.objects);
}

START_TEST(dm_mr_restored)
{
	struct ibc_object_info before[16];
	struct ibc_domain_info base;
	struct ibc_dm_info *d;
	size_t n_before, n_dm;
	uint64_t mr_id = 0;
	int go, done, st;
	struct rig g;
	pid_t pid;
	char c;

	SKIP_WITHOUT_STATE(&g);
	base = domain_now(&g);
	pid = dm_mr_holder(&g, &go, &done);
	n_before = objects_listed(&g, before, 16);
	for (size_t i = 0; i < n_before; i++)
		if (before[i].kind == IBC_OBJ_MR)
			mr_id = before[i].id;
	ck_assert_uint_ne(mr_id, 0);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	ck_assert_int_eq(tl_count_in_file(g.log, "cannot be made again"), 0);
	ck_assert_int_eq(write(go, "g", 1), 1);
	ck_assert_int_eq(read(done, &c, 1), 1);
	ck_assert_int_eq(c, 'o');
	objects_same(&g, before, n_before);
	ck_assert_int_eq(ibc_list_dms(g.cl, &d, sizeof(*d), &n_dm), 0);
	ck_assert_uint_eq(n_dm, 1);
	ck_assert_uint_eq(d[0].mrs, 1);
	ck_assert_uint_eq(d[0].mr_list[0].object_id, mr_id);
	ibc_list_free(d);
	kill(pid, SIGKILL);
	ck_assert_int_ge(tl_wait_pid(pid, TL_WAIT_MS, &st), 0);
	close(go);
	close(done);
	wait_all_gone_uncharged(&g, &base);
	rig_free(&g);
}
END_TEST

/* A soft DM whose memfd the store lost (or a DM the device will not
 * take back by handle) is dropped alone: the session and its other
 * objects come back, the DM is no longer listed and nothing of it stays
 * charged. Before, the DM family's failure ended every adopted session
 * (ping -ECONNRESET) and kept the rest of the state. */
/* The events of one type a client got (a DM importer's DM_REVOKED, an
 * XRCD opener's XRCD_LOST): how many, the last one's object and reason. */
struct event_seen {
	enum ibc_event_type type;
	int n;
	uint64_t id;
	enum ibc_obj_kind kind;
	char why[256];
};

static void on_event(struct ibc_client *cl, const struct ibc_event *ev,
		     void *arg)
{
	struct event_seen *s = arg;

	(void)cl;
	if (ev->type != s->type)
		return;
	s->n++;
	s->id = ev->object_id;
	s->kind = ev->object_kind;
	snprintf(s->why, sizeof(s->why), "%s", ev->message);
}

/* A client of @g's daemon whose events of seen->type @seen counts. */
static struct ibc_client *connect_seeing(struct rig *g, struct event_seen *seen)
{
	struct ibc_connect_attr attr = {
		.comp_mask =
			IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_EVENT_CB,
		.socket_path = g->sock,
		.event_cb = on_event,
		.event_arg = seen,
	};
	struct ibc_client *cl;

	ck_assert_int_eq(ibc_connect(&attr, &cl), 0);
	return cl;
}

/* @cl's events until @seen has @n, for up to @ms. */
static void wait_events(struct ibc_client *cl, struct event_seen *seen, int n,
			int ms)
{
	struct pollfd pfd = { .fd = ibc_get_fd(cl), .events = POLLIN };
	int64_t end = tl_now_ms() + ms;

	while (seen->n < n && tl_now_ms() < end) {
		poll(&pfd, 1, 100);
		ck_assert_int_ge(ibc_dispatch(cl), 0);
	}
}

/* @cl's events until @seen has one, for up to @ms. */
static void wait_event(struct ibc_client *cl, struct event_seen *seen, int ms)
{
	wait_events(cl, seen, 1, ms);
}

START_TEST(dm_memfd_lost_drops_the_dm)
{
	struct ibc_object_info obj[8];
	struct ibc_domain_info base, used;
	struct event_seen seen = { .type = IBC_EVENT_DM_REVOKED };
	struct ibc_client *importer;
	struct ibc_ctx *ix;
	struct ibc_dm *imp;
	struct ibc_dm_info *d;
	struct ibc_cq *cq;
	struct ibc_ctx *x;
	struct ibc_dm *dm;
	char name[64], want[64];
	size_t n_dm;
	struct rig g;

	SKIP_WITHOUT_STATE(&g);
	base = domain_now(&g);
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_cq_create(x, 16, &cq), 0);
	ck_assert_int_eq(ibc_dm_alloc(x, 4096, 0, &dm), 0);
	importer = connect_seeing(&g, &seen);
	ck_assert_int_eq(ibc_open(importer, "soft0", &ix), 0);
	ck_assert_int_eq(ibc_dm_import(ix, ibc_dm_handle(dm), &imp), 0);
	snprintf(want, sizeof(want), "rb.dm.%" PRIu64, ibc_dm_id(dm));
	store_wait_for(&g, want, name, sizeof(name));
	ck_assert_str_eq(name, want);
	ck_assert_int_eq(kill_drop_restart(&g, name), 0);
	ck_assert_int_eq(tl_count_in_file(g.log, "not adopted, dropped"), 1);
	ck_assert_int_eq(ibc_list_dms(g.cl, &d, sizeof(*d), &n_dm), 0);
	ibc_list_free(d);
	ck_assert_uint_eq(n_dm, 0);
	/* The CQ came back with its session. */
	ck_assert_uint_eq(objects_listed(&g, obj, 8), 1);
	ck_assert_int_eq(obj[0].kind, IBC_OBJ_CQ);
	used = domain_now(&g);
	ck_assert_uint_eq(used.used.dm_bytes, 0);
	/* Its importer is told, with the reason. */
	wait_event(importer, &seen, TL_WAIT_MS);
	ck_assert_int_eq(seen.n, 1);
	ck_assert_uint_eq(seen.id, ibc_dm_id(dm));
	ck_assert_ptr_nonnull(strstr(seen.why, "could not bring this DM back"));
	ibc_disconnect(importer);
	ck_assert_int_eq(ibc_dm_free(dm), -ENOENT);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	wait_all_gone_uncharged(&g, &base);
	rig_free(&g);
}
END_TEST

/*
 * A session's DM status page lost from the store while no daemon ran:
 * only the DMs that session held (through slots of that page) are
 * dropped, by a revoke: their holders get DM_REVOKED with the reason
 * (here the other session that imported one), and they go once let go.
 * The rest of the state comes back: the session itself, its CQ, another
 * session's DM. The session's next DM gets a new page, which its library
 * maps in place of the lost one: the old one's slot 0 still says
 * "revoked" (an administrator's revoke of a DM it held at the kill), the
 * new DM's slot 0 does not. Before, the whole state was refused.
 */
START_TEST(dm_status_page_lost_drops_its_dms)
{
	struct event_seen seen = { .type = IBC_EVENT_DM_REVOKED };
	struct ibc_client_info ci;
	struct ibc_object_info obj[16];
	struct ibc_client *c2;
	struct ibc_ctx *x, *x2;
	struct ibc_dm *revoked, *lost, *kept, *imp, *fresh;
	struct ibc_dm_info *d;
	struct ibc_cq *cq;
	uint32_t word = 0x5a5a1234, back = 0;
	char page[64], got[64];
	bool kept_live = false;
	size_t n, n_cq = 0;
	struct rig g;

	SKIP_WITHOUT_STATE_CONF(&g, "[broker]\ndm_revoke_grace = 200ms\n");
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_cq_create(x, 4, &cq), 0);
	/* Slot 0 of the session's page: revoked, still held at the kill. */
	ck_assert_int_eq(ibc_dm_alloc(x, 4096, 0, &revoked), 0);
	ck_assert_int_eq(ibc_admin_dm_revoke(g.cl, ibc_dm_id(revoked)), 0);
	ck_assert_int_eq(ibc_dm_write(revoked, 0, &word, sizeof(word)),
			 -ENODEV);
	ck_assert_int_eq(ibc_dm_alloc(x, 4096, 0, &lost), 0);
	c2 = connect_seeing(&g, &seen);
	ck_assert_int_eq(ibc_open(c2, "soft0", &x2), 0);
	ck_assert_int_eq(ibc_dm_alloc(x2, 4096, 0, &kept), 0);
	ck_assert_int_eq(ibc_dm_write(kept, 0, &word, sizeof(word)), 0);
	ck_assert_int_eq(ibc_dm_import(x2, ibc_dm_handle(lost), &imp), 0);
	ck_assert_int_eq(ibc_client_info(g.cl, &ci, sizeof(ci)), 0);
	snprintf(page, sizeof(page), "rb.dmst.%" PRIu64, ci.client_id);
	store_wait_for(&g, page, got, sizeof(got));
	ck_assert_str_eq(got, page);
	ck_assert_int_eq(kill_drop_restart(&g, page), 0);
	ck_assert_int_eq(tl_count_in_file(g.log, "starting clean"), 0);
	ck_assert_int_eq(tl_count_in_file(g.log, "cannot be used"), 0);
	ck_assert_int_eq(tl_count_in_file(g.log, "DM status page"), 1);
	/* Its importer is told, with the reason. */
	wait_event(c2, &seen, TL_WAIT_MS);
	ck_assert_int_eq(seen.n, 1);
	ck_assert_uint_eq(seen.id, ibc_dm_id(lost));
	ck_assert_ptr_nonnull(strstr(seen.why, "status page"));
	/* The rest came back. */
	n = objects_listed(&g, obj, 16);
	for (size_t i = 0; i < n; i++)
		n_cq += obj[i].kind == IBC_OBJ_CQ;
	ck_assert_uint_eq(n_cq, 1);
	ck_assert_int_eq(ibc_list_dms(g.cl, &d, sizeof(*d), &n), 0);
	for (size_t i = 0; i < n; i++)
		if (d[i].id == ibc_dm_id(kept))
			kept_live = d[i].state == IBC_DM_LIVE;
	ibc_list_free(d);
	ck_assert(kept_live);
	ck_assert_int_eq(ibc_dm_read(kept, &back, 0, sizeof(back)), 0);
	ck_assert_uint_eq(back, word);
	/* The session's next DM, on its new page. */
	ck_assert_int_eq(ibc_dm_alloc(x, 4096, 0, &fresh), 0);
	ck_assert_int_eq(ibc_dm_write(fresh, 0, &word, sizeof(word)), 0);
	back = 0;
	ck_assert_int_eq(ibc_dm_read(fresh, &back, 0, sizeof(back)), 0);
	ck_assert_uint_eq(back, word);
	ck_assert_int_eq(ibc_dm_free(fresh), 0);
	ck_assert_int_eq(ibc_dm_unimport(imp), 0);
	ck_assert_int_eq(ibc_dm_free(kept), 0);
	ibc_dm_unimport(lost);
	ibc_dm_unimport(revoked);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	ibc_disconnect(c2);
	wait_all_gone(&g);
	rig_free(&g);
}
END_TEST

/*
 * Soft DMs that no longer fit the fd store at the restore (--max-clients
 * and fd_store_per_uid lowered across it) are dropped alone: their
 * importer is told each, with the reason; both sessions, the CQ and the
 * DMs that fit come back, charged for those alone, and the dropped ones'
 * memfds leave the store. Before, the whole state was refused ("DM ...
 * cannot be kept: No space left on device"): every session ended.
 */
START_TEST(dm_store_full_drops_those)
{
	struct event_seen seen = { .type = IBC_EVENT_DM_REVOKED };
	struct ibc_domain_info base, used;
	struct ibc_object_info obj[32];
	struct ibc_client *importer;
	struct ibc_dm *dm[14], *imp;
	struct ibc_dm_info *d;
	struct ibc_ctx *x, *ix;
	struct ibc_cq *cq;
	size_t n_dm, n_obj, cqs = 0, kept = 0;
	struct rig g;

	/* Bound 5 + 2 x 1 device + 3 x (3 + 1 device + 0 + 15) = 64, then
	 * 5 + 2 + 2 x (3 + 1 + 0 + 1) = 17: the daemon's own, the two
	 * sessions' sockets, context and status pages, and fewer than 14
	 * DMs. */
	rig_max_clients = "3";
	SKIP_WITHOUT_STATE_CONF(
		&g, "[broker]\nadmin_reserve = 0\n"
		    "private_contexts_per_uid = 0\nfd_store_per_uid = 15\n");
	base = domain_now(&g);
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_cq_create(x, 16, &cq), 0);
	importer = connect_seeing(&g, &seen);
	ck_assert_int_eq(ibc_open(importer, "soft0", &ix), 0);
	for (int i = 0; i < 14; i++) {
		ck_assert_int_eq(ibc_dm_alloc(x, 4096, 0, &dm[i]), 0);
		ck_assert_int_eq(ibc_dm_import(ix, ibc_dm_handle(dm[i]), &imp),
				 0);
	}
	store_wait_count(&g, "rb.dm.", 14);
	rig_write_config(&g, "[broker]\nadmin_reserve = 0\n"
			     "private_contexts_per_uid = 0\n"
			     "fd_store_per_uid = 1\n");
	rig_max_clients = "2";
	ck_assert_int_eq(kill_and_restart(&g), 0);
	rig_max_clients = NULL;
	ck_assert_int_eq(tl_count_in_file(g.log, "state cannot be used"), 0);
	ck_assert_int_eq(ibc_list_dms(g.cl, &d, sizeof(*d), &n_dm), 0);
	ibc_list_free(d);
	ck_assert_uint_gt(n_dm, 0);
	ck_assert_uint_lt(n_dm, 14);
	ck_assert_int_eq(tl_count_in_file(g.log, "not adopted, dropped"),
			 (int)(14 - n_dm));
	store_wait_count(&g, "rb.dm.", n_dm);
	used = domain_now(&g);
	ck_assert_uint_eq(used.used.dm_bytes, n_dm * 4096);
	/* The CQ came back with its session (and the imports of the DMs
	 * kept with theirs); the importer's session is there. */
	n_obj = objects_listed(&g, obj, 32);
	for (size_t i = 0; i < n_obj; i++)
		cqs += obj[i].kind == IBC_OBJ_CQ;
	ck_assert_msg(cqs == 1, "%zu CQs of %zu objects, %zu DMs kept", cqs,
		      n_obj, n_dm);
	ck_assert_int_eq(ibc_ping(importer, NULL, 0), 0);
	wait_events(importer, &seen, (int)(14 - n_dm), TL_WAIT_MS);
	ck_assert_int_eq(seen.n, (int)(14 - n_dm));
	ck_assert_ptr_nonnull(strstr(seen.why, "fd store has no place"));
	ibc_disconnect(importer);
	for (int i = 0; i < 14; i++) {
		int err = ibc_dm_free(dm[i]);

		ck_assert_msg(err == 0 || err == -ENOENT, "DM %d: %d", i, err);
		kept += err == 0;
	}
	ck_assert_uint_eq(kept, n_dm);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	wait_all_gone_uncharged(&g, &base);
	rig_free(&g);
}
END_TEST

static void kill_restart_bad_rss(struct rig *g, enum ibc_obj_kind kind);

/* A family's restore that fails for another reason than a record that
 * does not decode (here an RSS record whose key is not whole) keeps
 * nothing: the adopted sessions end, and so do the objects of a session
 * that had ended before the restart (detached, its process alive), as a
 * clean start would have closed their context. Before, those stayed,
 * waiting for a process whose sessions the restore had just refused. */
START_TEST(family_failure_keeps_no_detached)
{
	struct ibc_client *cl;
	struct ibc_domain_info used;
	struct ibc_status st;
	struct ibc_xrcd *xr;
	struct ibc_dm *dm;
	struct ibc_ctx *x;
	size_t n, detached;
	int64_t end;
	struct rig g;
	pid_t pid;
	int wst;

	SKIP_WITHOUT_STATE(&g);
	pid = holder_spawn_in(&g, HOLD_CQ);
	ck_assert_uint_eq(evict_pid(&g, pid), 1);
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "kept", O_CREAT, &xr), 0);
	/* A DM and an XRCD, whose families restore before the RSS one. */
	ck_assert_int_eq(ibc_dm_alloc(x, 4096, 0, &dm), 0);
	kill_restart_bad_rss(&g, IBC_OBJ_XRCD);
	ck_assert_int_eq(tl_connect(g.sock, 10000, &cl), 0);
	ibc_disconnect(g.cl);
	g.cl = cl;
	end = tl_now_ms() + TL_WAIT_MS;
	do {
		n = objects_in(&g, IBC_OBJECT_DETACHED, &detached);
		if (n)
			tl_sleep_ms(20);
	} while (n && tl_now_ms() < end);
	ck_assert_msg(n == 0, "%zu objects (%zu detached) kept", n, detached);
	/* Nothing left charged: the new client holds nothing. */
	wait_all_gone(&g);
	used = domain_now(&g);
	ck_assert_uint_eq(used.used.dm_bytes, 0);
	ck_assert_uint_eq(used.used.objects, 0);
	ck_assert_int_eq(ibc_status(g.cl, &st, sizeof(st)), 0);
	ck_assert_ptr_nonnull(strstr(st.last_restore, "state refused"));
	kill(pid, SIGKILL);
	ck_assert_int_ge(tl_wait_pid(pid, TL_WAIT_MS, &wst), 0);
	rig_free(&g);
}
END_TEST

/* A DM a forced rekey left to its old context (an MR on it pins it):
 * its bytes stay charged to the domain across a restart (the DM family's
 * books of the context: its ctx_save and ctx_restore hooks), as long as
 * that context lives. */
START_TEST(dm_left_kept)
{
	struct ibc_domain_info before, after;
	struct ibc_client *cl;
	struct ibc_ctx *x;
	struct ibc_dm *dm;
	struct ibc_mr *mr;
	struct rig g;

	SKIP_WITHOUT_STATE(&g);
	ck_assert_int_eq(tl_connect(g.sock, 10000, &cl), 0);
	ck_assert_int_eq(ibc_open(cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_dm_alloc(x, 4096, 0, &dm), 0);
	ck_assert_msg(
		ibc_reg_dm_mr(dm, 0, 4096,
			      IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE,
			      &mr) == 0,
		"%s", ibc_last_error());
	before = domain_now(&g);
	ck_assert_msg(
		ibc_admin_domain_rekey(g.cl, before.name, IBC_REKEY_FORCE) == 0,
		"%s", ibc_last_error());
	before = domain_now(&g);
	ck_assert_uint_eq(before.old_contexts, 1);
	ck_assert_uint_eq(before.used.dm_bytes, 4096);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	after = domain_now(&g);
	ck_assert_uint_eq(after.old_contexts, 1);
	ck_assert_uint_eq(after.used.dm_bytes, 4096);
	ibc_disconnect(cl);
	rig_free(&g);
}
END_TEST

/* The DM ids' space as the stored state's Counters record keeps it. */
static Rdmab__State__IdSpace dm_ids_saved(struct rig *g)
{
	Rdmab__State__IdSpace ret;
	Rdmab__State__Counters *c;
	struct journal_view *v;
	struct journal_rec rec;
	char why[256];
	int fd = state_fd(g);

	ck_assert_int_ge(fd, 0);
	ck_assert_msg(journal_read_fd(fd, &v, why, sizeof(why)) == 0, "%s",
		      why);
	close(fd);
	ck_assert_int_eq(journal_find(v, JOURNAL_COUNTERS, 0, &rec), 0);
	c = rdmab__state__counters__unpack(NULL, rec.len, rec.data);
	ck_assert_ptr_nonnull(c);
	ck_assert_msg(c->dms, "the counters keep no DM ids");
	ret = *c->dms;
	rdmab__state__counters__free_unpacked(c, NULL);
	journal_view_free(v);
	return ret;
}

/* The DM family's ids (kept in its state, described to the restart by
 * its ids hook): saved with the counters and restored, so that a restart
 * goes on with the same key past every id handed out, never giving one
 * again. */
START_TEST(dm_ids_never_reused)
{
	Rdmab__State__IdSpace before, after;
	struct ibc_ctx *x;
	struct ibc_dm *a, *b;
	uint64_t first;
	struct rig g;

	SKIP_WITHOUT_STATE(&g);
	/* Restored once: its counters say so (generation 2, 1 restart). */
	ck_assert_int_eq(kill_and_restart(&g), 0);
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_dm_alloc(x, 4096, 0, &a), 0);
	first = ibc_dm_id(a);
	ck_assert_int_eq(ibc_dm_free(a), 0);
	before = dm_ids_saved(&g);
	ck_assert_uint_ge(before.count, 1);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	after = dm_ids_saved(&g);
	ck_assert_uint_eq(after.key0, before.key0);
	ck_assert_uint_eq(after.key1, before.key1);
	ck_assert_uint_gt(after.count, before.count);
	ck_assert_int_eq(ibc_dm_alloc(x, 4096, 0, &b), 0);
	ck_assert_uint_ne(ibc_dm_id(b), first);
	ck_assert_int_eq(ibc_dm_free(b), 0);
	rig_free(&g);
}
END_TEST

/* With per = cgroup, a session in its cgroup's domain comes back in that
 * domain, under its name, with its context and charges; a session that
 * connects after the restart from the same cgroup joins it too. */
START_TEST(cgroup_session_kept)
{
	struct ibc_domain_info before, after;
	struct ibc_client_info ci;
	struct ibc_client *c2;
	struct ibc_ctx *x;
	struct ibc_cq *cq;
	struct rig g;

	SKIP_WITHOUT_STATE_CONF(&g, "[defaults]\nper = cgroup\n");
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_cq_create(x, 4, &cq), 0);
	before = domain_now(&g);
	ck_assert_str_eq(before.kind, "cgroup");
	ck_assert_int_eq(kill_and_restart(&g), 0);
	after = domain_now(&g);
	ck_assert_str_eq(after.name, before.name);
	ck_assert_str_eq(after.kind, "cgroup");
	ck_assert_uint_eq(after.contexts, 1);
	ck_assert_uint_eq(after.used.objects, before.used.objects);
	ck_assert_int_eq(tl_connect(g.sock, 10000, &c2), 0);
	ck_assert_int_eq(ibc_client_info(c2, &ci, sizeof(ci)), 0);
	ck_assert_str_eq(ci.domain, before.name);
	ibc_disconnect(c2);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	rig_free(&g);
}
END_TEST

/* With per = cgroup, a private domain's session comes back on its pool,
 * its cgroup's domain, under the pool's name, also when no session of
 * the pool comes back before it. */
START_TEST(cgroup_private_session_kept)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET |
			     IBC_CONNECT_ATTR_TIMEOUT | IBC_CONNECT_ATTR_FLAGS,
		.timeout_ms = 10000,
		.flags = IBC_CONNECT_PRIVATE_DOMAIN,
	};
	struct ibc_domain_info pool;
	struct ibc_client *p;
	char name[64];
	struct rig g;

	SKIP_WITHOUT_STATE_CONF(&g, "[defaults]\nper = cgroup\n");
	snprintf(name, sizeof(name), "%s", domain_now(&g).name);
	attr.socket_path = g.sock;
	ck_assert_int_eq(ibc_connect(&attr, &p), 0);
	/* Only the private session names the pool now. */
	rig_client_leaves(&g);
	g.cl = p;
	ck_assert_int_eq(kill_and_restart(&g), 0);
	ck_assert_msg(domain_named(&g, name, &pool),
		      "the pool %s did not come back", name);
	ck_assert_str_eq(pool.kind, "cgroup");
	rig_free(&g);
}
END_TEST

/* With per = cgroup, the objects of a session that ended before the
 * restart in its cgroup's domain, of which no session comes back: the
 * domain is made again under its name for the cgroup its context's
 * record names (a session of that cgroup then joins it), the objects
 * are listed detached and go with the process. */
START_TEST(cgroup_detached_no_session)
{
	struct ibc_client_info ci;
	size_t n, detached;
	char name[64];
	struct rig g;
	pid_t pid;
	int st;

	SKIP_WITHOUT_STATE_CONF(&g, "[defaults]\nper = cgroup\n");
	snprintf(name, sizeof(name), "%s", domain_now(&g).name);
	pid = holder_spawn(&g, false);
	ck_assert_uint_eq(evict_pid(&g, pid), 1);
	/* No session of the domain is left to bring it back. */
	rig_client_leaves(&g);
	ck_assert_int_eq(fakesd_kill(g.sd, SIGKILL), 0);
	ck_assert_int_ge(fakesd_wait_exit(g.sd, TL_WAIT_MS), 0);
	rig_start(&g);
	ck_assert_int_eq(tl_connect(g.sock, 10000, &g.cl), 0);
	ck_assert_int_eq(ibc_client_info(g.cl, &ci, sizeof(ci)), 0);
	ck_assert_str_eq(ci.domain, name);
	n = objects_in(&g, IBC_OBJECT_DETACHED, &detached);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(detached, 1);
	kill(pid, SIGKILL);
	ck_assert_int_ge(tl_wait_pid(pid, TL_WAIT_MS, &st), 0);
	wait_all_gone(&g);
	rig_free(&g);
}
END_TEST

/* The objects of a session that ended before the restart in a context
 * that no live session holds (its private domain's): the context is
 * adopted from the store all the same, its domain made again, and the
 * objects are listed detached with their charges; once the process
 * exits they are destroyed and the context and domain go, as without a
 * restart. Run 1: with per = cgroup, the private domain draws on its
 * cgroup's, found by the name its context's record keeps. */
START_TEST(detached_ctx_no_session)
{
	struct ibc_domain_info before, after;
	char name[64];
	struct rig g;
	size_t n, detached;
	pid_t pid;

	rig_config = _i ? "[defaults]\nper = cgroup\n" : NULL;
	SKIP_WITHOUT_STATE(&g);
	rig_config = NULL;
	pid = holder_spawn_in(&g, HOLD_CQ | HOLD_PRIVATE);
	ck_assert_uint_eq(evict_pid(&g, pid), 1);
	private_domain(&g, name, sizeof(name));
	ck_assert_str_ne(name, "");
	ck_assert(domain_named(&g, name, &before));
	ck_assert_uint_eq(before.contexts, 1);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	n = objects_in(&g, IBC_OBJECT_DETACHED, &detached);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(detached, 1);
	ck_assert_msg(domain_named(&g, name, &after),
		      "domain %s did not come back", name);
	ck_assert_uint_eq(after.contexts, 1);
	ck_assert_uint_eq(after.members, 0);
	ck_assert_uint_eq(after.used.objects, before.used.objects);
	holder_gone(&g, pid, name);
	rig_free(&g);
}
END_TEST

/* An MR on a DM of a session that ended before the restart, whose
 * process exits while no daemon runs: the MR is made again only after
 * the DMs (late), and its owner is watched after that, so that the
 * process's exit is seen and the MR and the DM are destroyed, with
 * nothing left charged. */
START_TEST(detached_dm_mr_owner_gone)
{
	struct ibc_domain_info base;
	int go, done, st;
	struct rig g;
	pid_t pid;

	SKIP_WITHOUT_STATE(&g);
	base = domain_now(&g);
	pid = dm_mr_holder(&g, &go, &done);
	ck_assert_uint_ge(evict_pid(&g, pid), 1);
	ck_assert_int_eq(fakesd_kill(g.sd, SIGKILL), 0);
	ck_assert_int_ge(fakesd_wait_exit(g.sd, TL_WAIT_MS), 0);
	kill(pid, SIGKILL);
	ck_assert_int_ge(tl_wait_pid(pid, TL_WAIT_MS, &st), 0);
	rig_start(&g);
	ck_assert_int_eq(ibc_ping(g.cl, NULL, 0), 0);
	close(go);
	close(done);
	wait_all_gone_uncharged(&g, &base);
	rig_free(&g);
}
END_TEST

/* The same, with what the families keep of the holder (a DM it
 * allocated, an XRCD open): every record of it is listed after the
 * restart as before, detached, the DM not freed; once the process exits
 * everything goes. */
START_TEST(detached_families_no_session)
{
	struct ibc_object_info before[16], after[16];
	size_t n_before, n_after;
	char name[64];
	struct rig g;
	pid_t pid;

	SKIP_WITHOUT_STATE(&g);
	pid = holder_spawn_in(&g, HOLD_CQ | HOLD_FAMILIES | HOLD_PRIVATE);
	ck_assert_uint_ge(evict_pid(&g, pid), 1);
	private_domain(&g, name, sizeof(name));
	n_before = objects_listed(&g, before, 16);
	ck_assert_uint_ge(n_before, 3);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	n_after = objects_listed(&g, after, 16);
	ck_assert_uint_eq(n_after, n_before);
	for (size_t i = 0; i < n_after; i++) {
		ck_assert_uint_eq(after[i].id, before[i].id);
		ck_assert_int_eq(after[i].kind, before[i].kind);
		ck_assert_uint_eq(after[i].handle, before[i].handle);
		ck_assert_int_eq(after[i].state, IBC_OBJECT_DETACHED);
	}
	dm_live_imported(&g);
	holder_gone(&g, pid, name);
	rig_free(&g);
}
END_TEST

/* A session that ended before the restart holding only a DM it
 * allocated, in its private domain: no registry record of it names the
 * context, the DM's does; the context comes back for it all the same,
 * the DM stays with its import, and goes with the process. */
START_TEST(detached_dm_only_no_session)
{
	size_t n, detached;
	char name[64];
	struct rig g;
	pid_t pid;

	SKIP_WITHOUT_STATE(&g);
	pid = holder_spawn_in(&g, HOLD_DM | HOLD_PRIVATE);
	ck_assert_uint_eq(evict_pid(&g, pid), 1);
	private_domain(&g, name, sizeof(name));
	ck_assert_int_eq(kill_and_restart(&g), 0);
	n = objects_in(&g, IBC_OBJECT_DETACHED, &detached);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(detached, 1);
	dm_live_imported(&g);
	holder_gone(&g, pid, name);
	rig_free(&g);
}
END_TEST

/* The one RSS object listed now into @ret, its WQs' ids into @wqs (at
 * most 2); how many are listed. */
static size_t rss_listed(struct rig *g, struct ibc_rss_info *ret, uint64_t *wqs)
{
	struct ibc_rss_info *r;
	size_t n;

	ck_assert_int_eq(ibc_list_rss(g->cl, &r, sizeof(*r), &n), 0);
	if (n == 1) {
		ck_assert_uint_le(r[0].num_wqs, 2);
		*ret = r[0];
		memcpy(wqs, r[0].wq_ids, r[0].num_wqs * sizeof(*wqs));
		ret->wq_ids = wqs;
		ret->wq_owners = NULL;
	}
	ibc_list_free(r);
	return n;
}

/*
 * The RSS object of a session that ended before the restart while its
 * process lives (detached): it comes back as it was (the same id, WQs,
 * QP number, rebuilds, owner), its parts listed detached and its table
 * charged to the domain again; it goes with its process, nothing left
 * charged. Run 0: in the holder's private domain, over two WQs of its
 * own. Run 1: in the domain it shares with the rig's client, over a WQ
 * of the holder and one of that live session, whose destroy after the
 * restart rebuilds the table over the holder's WQ alone, as before one.
 */
START_TEST(detached_rss_kept)
{
	struct ibc_object_info ob[16];
	struct ibc_domain_info base, db, da;
	struct ibc_rss_info rb, ra;
	uint64_t wb[2], wa[2];
	struct ibc_cq *cq = NULL;
	struct ibc_wq *wq = NULL;
	struct ibc_ctx *x;
	size_t n_before;
	char name[64];
	int64_t end;
	struct rig g;
	pid_t pid;
	int st;

	SKIP_WITHOUT_STATE(&g);
	base = domain_now(&g);
	if (_i) {
		ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
		ck_assert_int_eq(ibc_cq_create(x, 4, &cq), 0);
		ck_assert_int_eq(ibc_wq_create(x, cq, NULL, &wq), 0);
		holder_rss_wq = ibc_wq_id(wq);
	}
	pid = holder_spawn_in(&g, HOLD_CQ | HOLD_RSS | (_i ? 0 : HOLD_PRIVATE));
	holder_rss_wq = 0;
	ck_assert_uint_ge(evict_pid(&g, pid), 1);
	if (!_i)
		private_domain(&g, name, sizeof(name));
	/* A private domain's charges are its pool's: the uid's own, the
	 * rig's client's. */
	db = domain_now(&g);
	ck_assert_uint_eq(db.used.rss_tables, 1);
	ck_assert_uint_eq(rss_listed(&g, &rb, wb), 1);
	n_before = objects_listed(&g, ob, 16);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	ck_assert_msg(rss_listed(&g, &ra, wa) == 1,
		      "the detached session's RSS object did not come back");
	ck_assert_uint_eq(ra.id, rb.id);
	ck_assert_uint_eq(ra.client_id, rb.client_id);
	ck_assert_uint_eq(ra.qp_num, rb.qp_num);
	ck_assert_uint_eq(ra.rebuilds, rb.rebuilds);
	ck_assert_uint_eq(ra.priority, rb.priority);
	ck_assert_uint_eq(ra.num_wqs, 2);
	ck_assert_uint_eq(ra.num_wqs, rb.num_wqs);
	ck_assert_mem_eq(wa, wb, sizeof(wa));
	ck_assert_mem_eq(ra.hash_key, rb.hash_key, sizeof(ra.hash_key));
	objects_same(&g, ob, n_before);
	da = domain_now(&g);
	ck_assert_uint_eq(da.used.rss_tables, db.used.rss_tables);
	ck_assert_uint_eq(da.used.objects, db.used.objects);
	if (!_i) {
		holder_gone(&g, pid, name);
		ck_assert_uint_eq(domain_now(&g).used.rss_tables, 0);
		rig_free(&g);
		return;
	}
	/* The live session's WQ leaves the table: rebuilt over the
	 * detached one's, make before break, as without a restart. */
	ck_assert_int_eq(ibc_wq_destroy(wq), 0);
	end = tl_now_ms() + TL_WAIT_MS;
	while (rss_listed(&g, &ra, wa) == 1 && ra.num_wqs == 2 &&
	       tl_now_ms() < end)
		tl_sleep_ms(20);
	ck_assert_uint_eq(rss_listed(&g, &ra, wa), 1);
	ck_assert_uint_eq(ra.num_wqs, 1);
	ck_assert_uint_eq(ra.rebuilds, rb.rebuilds + 1);
	ck_assert_uint_eq(wa[0], wb[0]);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	kill(pid, SIGKILL);
	ck_assert_int_ge(tl_wait_pid(pid, TL_WAIT_MS, &st), 0);
	wait_all_gone(&g);
	ck_assert_uint_eq(rss_listed(&g, &ra, wa), 0);
	da = domain_now(&g);
	ck_assert_uint_eq(da.used.rss_tables, 0);
	ck_assert_uint_eq(da.used.objects, base.used.objects);
	rig_free(&g);
}
END_TEST

/* The domain with members until its dead clients' records and intents
 * are gone (their cleanup ran, the count refreshed). */
static struct ibc_domain_info domain_settled(struct rig *g)
{
	int64_t end = tl_now_ms() + TL_WAIT_MS;
	struct ibc_domain_info d;

	do {
		d = domain_now(g);
		if (d.live_intents == 0 && d.members == 1 &&
		    d.registry_objects == 0)
			return d;
		tl_sleep_ms(20);
	} while (tl_now_ms() < end);
	ck_abort_msg("the dead client stayed: %u intents, %u members, %u "
		     "objects",
		     d.live_intents, d.members, d.registry_objects);
	return d;
}

/* A client that stops (SIGSTOP) inside the soft device's intent window
 * ([soft] intent_window) while it makes a CQ, at @stop_at
 * (IBC_TEST_SOFT_STOP): its pid, once stopped. */
static pid_t stopped_in_window(struct rig *g, const char *stop_at)
{
	pid_t pid = fork();
	int st;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct ibc_client *cl;
		struct ibc_ctx *cx;
		struct ibc_cq *ccq;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		setenv("IBC_TEST_SOFT_STOP", stop_at, 1);
		if (tl_connect(g->sock, 10000, &cl) < 0 ||
		    ibc_open(cl, "soft0", &cx) < 0)
			_exit(1);
		ibc_cq_create(cx, 16, &ccq);
		_exit(2);
	}
	ck_assert_int_eq(waitpid(pid, &st, WUNTRACED), pid);
	ck_assert_msg(WIFSTOPPED(st), "the client did not stop: %#x", st);
	return pid;
}

/* The soft device's unnamed objects: a client killed after its kernel
 * call made a CQ ([soft] intent_window, IBC_TEST_SOFT_STOP=kernel) leaves
 * the CQ in the context in no record's name, counted unaccounted and
 * charged. Across two SIGKILLs and restores the context holds it still:
 * the count after the restore (every listing walks it) finds it, and
 * charges and gives back nothing; a new CQ does not take its handle. */
START_TEST(unnamed_kept)
{
	struct ibc_domain_info before, after;
	struct ibc_ctx *x;
	struct ibc_cq *cq;
	struct rig g;
	pid_t pid;
	int st;

	SKIP_WITHOUT_STATE_CONF(&g, "[soft]\nintent_window = yes\n");
	pid = stopped_in_window(&g, "kernel");
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	before = domain_settled(&g);
	ck_assert_uint_eq(before.unaccounted, 1);
	/* The context's PD and the CQ. */
	ck_assert_uint_eq(before.kernel_objects, 2);
	ck_assert_uint_eq(before.used.objects, 2);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(kill_and_restart(&g), 0);
		after = domain_now(&g);
		ck_assert_uint_eq(after.unaccounted, before.unaccounted);
		ck_assert_uint_eq(after.kernel_objects, before.kernel_objects);
		ck_assert_uint_eq(after.registry_objects, 0);
		ck_assert_uint_eq(after.used.objects, before.used.objects);
		ck_assert_int_eq(tl_count_in_file(g.log, "cannot be made"), 0);
	}
	/* A new CQ gets a handle of its own: the unnamed one keeps its. */
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_cq_create(x, 4, &cq), 0);
	after = domain_now(&g);
	ck_assert_uint_eq(after.kernel_objects, 3);
	ck_assert_uint_eq(after.unaccounted, 1);
	ck_assert_uint_eq(after.used.objects, 3);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	ibc_close(x);
	rig_free(&g);
}
END_TEST

/* A session that lets go of a rekeyed context (its process killed)
 * leaves its objects there, unnamed, while another session holds the
 * context: the soft device keeps them across a restart, counted and
 * charged as before. */
START_TEST(unnamed_rekeyed_kept)
{
	struct ibc_domain_info before, after;
	struct rig g;
	pid_t pid;
	int st;

	SKIP_WITHOUT_STATE(&g);
	pid = holder_spawn(&g, false);
	before = domain_now(&g);
	ck_assert_int_eq(ibc_admin_domain_rekey(g.cl, before.name, 0), 0);
	before = domain_now(&g);
	ck_assert_uint_eq(before.old_contexts, 1);
	ck_assert_uint_eq(before.registry_objects, 1);
	/* Its session ends: the record goes, the CQ stays. */
	kill(pid, SIGKILL);
	ck_assert_int_ge(tl_wait_pid(pid, TL_WAIT_MS, &st), 0);
	before = domain_settled(&g);
	ck_assert_uint_eq(before.unaccounted, 1);
	ck_assert_uint_eq(before.kernel_objects, 2);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	after = domain_now(&g);
	ck_assert_uint_eq(after.old_contexts, 1);
	ck_assert_uint_eq(after.unaccounted, before.unaccounted);
	ck_assert_uint_eq(after.kernel_objects, before.kernel_objects);
	ck_assert_uint_eq(after.used.objects, before.used.objects);
	rig_free(&g);
}
END_TEST

/* A session that ended without closing its import (its process killed)
 * leaves what the provider made for it (the soft device's internal
 * records, as mlx5's UARs: per import, and per QP made with it): counted
 * unaccounted, and kept across restarts, so that the count after them
 * charges and gives back nothing. A live session's import keeps its QPs'
 * records too, and its clean close frees them all. */
START_TEST(dead_import_kept)
{
	struct ibc_qp_attr qa = rc_attr();
	struct ibc_domain_info before, after;
	struct ibc_client *c2;
	struct ibc_ctx *x2;
	struct ibc_qp *qp;
	struct rig g;
	pid_t pid;
	int st;

	SKIP_WITHOUT_STATE_CONF(&g, "[soft]\ninternal_objects_per_import = 2\n"
				    "internal_objects_per_qp = 1\n");
	pid = holder_spawn_in(&g, HOLD_CQ | HOLD_QPS);
	kill(pid, SIGKILL);
	ck_assert_int_ge(tl_wait_pid(pid, TL_WAIT_MS, &st), 0);
	/* A live one with 2 QPs. */
	ck_assert_int_eq(tl_connect(g.sock, 10000, &c2), 0);
	ck_assert_int_eq(ibc_open(c2, "soft0", &x2), 0);
	ck_assert_int_eq(ibc_cq_create(x2, 4, &qa.send_cq), 0);
	qa.recv_cq = qa.send_cq;
	ck_assert_int_eq(ibc_qp_create(x2, &qa, &qp), 0);
	ck_assert_int_eq(ibc_qp_create(x2, &qa, &qp), 0);
	before = domain_now(&g);
	/* The rig's client's import (2), the dead one's (2 + 3), the live
	 * one's (2 + 2). */
	ck_assert_uint_eq(before.internal_objects, 11);
	ck_assert_uint_eq(before.unaccounted, 2);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(kill_and_restart(&g), 0);
		after = domain_now(&g);
		ck_assert_uint_eq(after.internal_objects,
				  before.internal_objects);
		ck_assert_uint_eq(after.kernel_objects, before.kernel_objects);
		ck_assert_uint_eq(after.unaccounted, before.unaccounted);
		ck_assert_uint_eq(after.used.objects, before.used.objects);
	}
	/* The live one's clean end frees its import's records, its QPs'
	 * too; the dead one's stay. */
	ibc_disconnect(c2);
	{
		int64_t end = tl_now_ms() + TL_WAIT_MS;

		while ((after = domain_now(&g)).members > 1 &&
		       tl_now_ms() < end)
			tl_sleep_ms(20);
	}
	ck_assert_uint_eq(after.internal_objects, 7);
	ck_assert_uint_eq(after.unaccounted, 2);
	rig_free(&g);
}
END_TEST

/* The imports' records take free handles at a restore: after the
 * records that name theirs (a DM's, which the DM family makes again
 * after the registry's objects), or they take a DM's handle and the
 * state is refused. Here a session that opened after the DM's alloc
 * made its import's record above the DM. */
START_TEST(imports_after_named)
{
	struct ibc_client *c2;
	struct ibc_dm_info *dl;
	struct ibc_ctx *x, *x2;
	struct ibc_dm *dm;
	size_t n;
	struct rig g;

	SKIP_WITHOUT_STATE_CONF(&g,
				"[soft]\ninternal_objects_per_import = 1\n");
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_dm_alloc(x, 4096, 0, &dm), 0);
	ck_assert_int_eq(tl_connect(g.sock, 10000, &c2), 0);
	ck_assert_int_eq(ibc_open(c2, "soft0", &x2), 0);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	ck_assert_int_eq(ibc_ping(c2, NULL, 0), 0);
	ck_assert_int_eq(tl_count_in_file(g.log, "cannot be used"), 0);
	ck_assert_int_eq(ibc_list_dms(g.cl, &dl, sizeof(*dl), &n), 0);
	ibc_list_free(dl);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(domain_now(&g).internal_objects, 2);
	ibc_disconnect(c2);
	rig_free(&g);
}
END_TEST

/* The books of the domain with members that an intent's restart test
 * compares. */
static void books_equal(const struct ibc_domain_info *a,
			const struct ibc_domain_info *b)
{
	ck_assert_uint_eq(a->live_intents, b->live_intents);
	ck_assert_uint_eq(a->kernel_objects, b->kernel_objects);
	ck_assert_uint_eq(a->registry_objects, b->registry_objects);
	ck_assert_uint_eq(a->unaccounted, b->unaccounted);
	ck_assert_uint_eq(a->used.objects, b->used.objects);
}

/* A soft object made through the intent window ([soft] intent_window)
 * and registered comes back registered, not as an intent: the client's
 * destroy and its death treat it as before the restart. */
START_TEST(window_registered_kept)
{
	struct ibc_domain_info before, after;
	struct ibc_ctx *x;
	struct ibc_cq *cq;
	struct rig g;

	SKIP_WITHOUT_STATE_CONF(&g, "[soft]\nintent_window = yes\n");
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_cq_create(x, 4, &cq), 0);
	/* The register went without an answer: this one comes after it. */
	ck_assert_int_eq(ibc_ping(g.cl, NULL, 0), 0);
	before = domain_now(&g);
	ck_assert_uint_eq(before.live_intents, 0);
	ck_assert_uint_eq(before.registry_objects, 1);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	after = domain_now(&g);
	books_equal(&after, &before);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	after = domain_now(&g);
	ck_assert_uint_eq(after.registry_objects, 0);
	ck_assert_uint_eq(after.kernel_objects, before.kernel_objects - 1);
	ibc_close(x);
	rig_free(&g);
}
END_TEST

/*
 * An intent open at the kill: a client stopped inside the soft device's
 * window ([soft] intent_window), after its intent (run 1) or after the
 * kernel call made its CQ (run 0), while the daemon is SIGKILLed. The
 * intent comes back open with its session, charged as before; once the
 * client dies its half-served CQ is counted unaccounted (run 0) or
 * nothing is left (run 1), across one more restart too; once the
 * context closes the domain's books are at 0.
 */
START_TEST(intent_open_at_kill)
{
	const char *stop_at = _i ? "intent" : "kernel";
	struct ibc_domain_info before, after;
	uint32_t made = _i ? 0 : 1;
	struct rig g;
	pid_t pid;
	int st;

	SKIP_WITHOUT_STATE_CONF(&g, "[soft]\nintent_window = yes\n");
	pid = stopped_in_window(&g, stop_at);
	before = domain_now(&g);
	ck_assert_uint_eq(before.live_intents, 1);
	/* The PD, and the CQ if the kernel call ran. */
	ck_assert_uint_eq(before.kernel_objects, 1 + made);
	/* The PD and the intent. */
	ck_assert_uint_eq(before.used.objects, 2);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	ck_assert_int_eq(tl_count_in_file(g.log, "starting clean"), 0);
	after = domain_now(&g);
	books_equal(&after, &before);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	before = domain_settled(&g);
	ck_assert_uint_eq(before.unaccounted, made);
	ck_assert_uint_eq(before.kernel_objects, 1 + made);
	ck_assert_uint_eq(before.used.objects, 1 + made);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	after = domain_now(&g);
	books_equal(&after, &before);
	/* The last session leaves: its context closes with the CQ in it;
	 * a new session finds the books at 0. */
	rig_client_leaves(&g);
	ck_assert_int_eq(tl_connect(g.sock, 10000, &g.cl), 0);
	after = domain_now(&g);
	ck_assert_uint_eq(after.contexts, 0);
	ck_assert_uint_eq(after.used.objects, 0);
	ck_assert_uint_eq(after.unaccounted, 0);
	ck_assert_uint_eq(after.kernel_objects, 0);
	rig_free(&g);
}
END_TEST

/* Mark request @serial of session @id read and unanswered in the stored
 * in-flight table, as the daemon does when it reads it. */
static void inflight_plant(struct rig *g, uint64_t id, uint64_t serial)
{
	struct inflight_slot *slot = NULL;
	char name[256];
	uint64_t *hdr;
	struct stat st;
	int fd = -1;

	for (size_t i = 0;
	     fakesd_store_get(g->sd, i, name, sizeof(name), &fd) == 0; i++) {
		if (strncmp(name, "rb.inflight.", 12) == 0)
			break;
		close(fd);
		fd = -1;
	}
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	hdr = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	ck_assert_ptr_ne(hdr, MAP_FAILED);
	/* A magic and the slot count, then the slots. */
	for (uint64_t i = 0; i < hdr[1] && !slot; i++) {
		struct inflight_slot *s = (struct inflight_slot *)(hdr + 2) + i;

		if (s->conn_id == id)
			slot = s;
	}
	ck_assert_ptr_nonnull(slot);
	slot->pending = serial + 1;
	munmap(hdr, (size_t)st.st_size);
	close(fd);
}

/*
 * A register sent without waiting (ibc_obj_register_nowait()), read by a
 * daemon that a SIGKILL ends before it applied it: read and the kill
 * before its store in the in-flight slot (run 0: no daemon ever answers
 * it), or after (run 1: the next daemon answers EAGAIN). The read is done
 * here on the daemon's stored end while it is stopped. The library sends
 * the register again: the CQ is registered, and the client's death
 * destroys it, nothing unaccounted. Lost, the restored intent stays open
 * and the death leaves the CQ in no record's name.
 */
START_TEST(register_lost_in_restart_resent)
{
	Rdmab__Request *req;
	int to[2], from[2], fd, st, pings = -1;
	struct ibc_domain_info d;
	uint8_t buf[512];
	struct pollfd pf;
	uint64_t serial, id;
	struct rig g;
	char c = 0;
	int64_t end;
	pid_t pid;
	ssize_t n;

	SKIP_WITHOUT_STATE_CONF(&g, "[soft]\nintent_window = yes\n");
	ck_assert_int_eq(pipe2(to, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(from, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct ibc_client *cl;
		struct ibc_ctx *cx;
		struct ibc_cq *ccq;
		int ret;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		setenv("IBC_TEST_SOFT_STOP", "kernel", 1);
		if (tl_connect(g.sock, 10000, &cl) < 0 ||
		    ibc_open(cl, "soft0", &cx) < 0 ||
		    ibc_cq_create(cx, 16, &ccq) < 0 ||
		    write(from[1], "c", 1) != 1 || read(to[0], &c, 1) != 1)
			_exit(1);
		/* The second reads the barrier's answer. */
		ret = ibc_ping(cl, NULL, 0);
		if (ret == 0)
			ret = ibc_ping(cl, NULL, 0);
		c = ret == 0 ? 'p' : 'f';
		if (write(from[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	ck_assert_int_eq(waitpid(pid, &st, WUNTRACED), pid);
	ck_assert_msg(WIFSTOPPED(st), "the client did not stop: %#x", st);
	id = client_id_of(&g, pid);
	fd = stored_conn_of(&g, id);
	ck_assert_int_eq(kill(fakesd_main_pid(g.sd), SIGSTOP), 0);
	ck_assert_int_eq(kill(pid, SIGCONT), 0);
	ck_assert_int_eq(read(from[0], &c, 1), 1);
	ck_assert_int_eq(c, 'c');
	pf = (struct pollfd){ .fd = fd, .events = POLLIN };
	ck_assert_int_eq(poll(&pf, 1, TL_WAIT_MS), 1);
	n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	ck_assert_int_gt(n, 0);
	close(fd);
	req = rdmab__request__unpack(NULL, (size_t)n, buf);
	ck_assert_ptr_nonnull(req);
	ck_assert_int_eq(req->body_case, RDMAB__REQUEST__BODY_OBJ_REGISTER);
	serial = req->serial;
	rdmab__request__free_unpacked(req, NULL);
	if (_i)
		inflight_plant(&g, id, serial);
	ck_assert_int_eq(fakesd_kill(g.sd, SIGKILL), 0);
	ck_assert_int_ge(fakesd_wait_exit(g.sd, TL_WAIT_MS), 0);
	rig_start(&g);
	ck_assert_int_eq(write(to[1], "g", 1), 1);
	ck_assert_int_eq(read(from[0], &c, 1), 1);
	pings = c == 'p';
	end = tl_now_ms() + TL_WAIT_MS;
	while ((d = domain_now(&g)).live_intents && tl_now_ms() < end)
		tl_sleep_ms(20);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	d = domain_settled(&g);
	ck_assert_msg(d.unaccounted == 0 && d.kernel_objects == 1,
		      "the register was lost: %u unaccounted, %u kernel "
		      "objects",
		      d.unaccounted, d.kernel_objects);
	ck_assert_msg(pings == 1,
		      "the client's pings after the restart failed");
	for (int i = 0; i < 2; i++) {
		close(to[i]);
		close(from[i]);
	}
	rig_free(&g);
}
END_TEST

/*
 * A register sent while no daemon runs, by a client that then exits
 * (stopped after its kernel call, continued once the daemon is killed):
 * the next daemon adopts the session from the store and serves what its
 * socket holds, however the session's end is seen (the peer's pidfd, end
 * of stream): the CQ is registered, then destroyed with its dead owner.
 */
START_TEST(register_sent_while_down_served)
{
	struct ibc_domain_info d;
	struct rig g;
	pid_t pid;
	int st;

	SKIP_WITHOUT_STATE_CONF(&g, "[soft]\nintent_window = yes\n");
	pid = stopped_in_window(&g, "kernel");
	ck_assert_int_eq(fakesd_kill(g.sd, SIGKILL), 0);
	ck_assert_int_ge(fakesd_wait_exit(g.sd, TL_WAIT_MS), 0);
	ck_assert_int_eq(kill(pid, SIGCONT), 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2,
		      "the client did not make its CQ: %#x", st);
	rig_start(&g);
	d = domain_settled(&g);
	ck_assert_msg(d.unaccounted == 0 && d.kernel_objects == 1,
		      "the register was lost: %u unaccounted, %u kernel "
		      "objects",
		      d.unaccounted, d.kernel_objects);
	rig_free(&g);
}
END_TEST

/*
 * The committed states (tests/data/state-format<N>.bin), one per format,
 * each as its day's writer wrote it (`make state-fixture` writes today's
 * format's again): a session with its context, a CQ, a DM and an XRCD
 * open, and a detached owner's CQ, in a journal of generation
 * STATE_FIXTURE_GEN. A change of the state format that an older state no
 * longer reads through fails here.
 */
static const char *const state_fixtures[] = {
	"state-format2.bin",
	/* J1: the holds as slots. */
	"state-format3.bin",
};
#define STATE_FIXTURE_GEN 100

/* Write the fixture to @path: the rig's daemon's state after the kill,
 * its live records only, in a fresh journal. */
static void state_fixture_write(const char *path)
{
	struct journal_view *v;
	struct journal *j;
	struct ibc_xrcd *xr;
	struct ibc_ctx *x;
	struct ibc_dm *dm;
	struct ibc_cq *cq;
	char why[256];
	uint8_t *buf;
	struct rig g;
	pid_t pid;
	off_t len;
	FILE *f;
	int fd, st;

	SKIP_WITHOUT_STATE(&g);
	/* Restored once: its counters say so (generation 2, 1 restart). */
	ck_assert_int_eq(kill_and_restart(&g), 0);
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_cq_create(x, 4, &cq), 0);
	ck_assert_int_eq(ibc_dm_alloc(x, 4096, 0, &dm), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "fixture", O_CREAT, &xr), 0);
	pid = holder_spawn(&g, false);
	ck_assert_uint_eq(evict_pid(&g, pid), 1);
	ck_assert_int_eq(fakesd_kill(g.sd, SIGKILL), 0);
	ck_assert_int_ge(fakesd_wait_exit(g.sd, TL_WAIT_MS), 0);
	kill(pid, SIGKILL);
	ck_assert_int_ge(tl_wait_pid(pid, TL_WAIT_MS, &st), 0);
	fd = state_fd(&g);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(journal_read_fd(fd, &v, why, sizeof(why)), 0);
	close(fd);
	ck_assert_int_eq(journal_from_view(v, STATE_FIXTURE_GEN, &j), 0);
	/* Its log, not the room the memfd keeps past it. */
	len = (off_t)journal_used(j);
	ck_assert_int_gt(len, 0);
	buf = malloc((size_t)len);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(pread(journal_fd(j), buf, (size_t)len, 0), len);
	f = fopen(path, "we");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, (size_t)len, f), (size_t)len);
	ck_assert_int_eq(fclose(f), 0);
	free(buf);
	journal_free(j);
	journal_view_free(v);
	rig_free(&g);
}

/* Live records of kinds [@first, @first + JOURNAL_FAMILY_KINDS). */
static size_t family_records(const struct journal_view *v, uint32_t first)
{
	size_t n = 0;

	for (uint32_t k = first; k < first + JOURNAL_FAMILY_KINDS; k++)
		n += journal_view_count(v, k);
	return n;
}

/* Today's reader reads the committed state, and today's restore adopts
 * it: its generation goes on, nothing refused. What it names that the
 * store does not hold (the session's socket, the context's, the DM's
 * memfd, the XRCD's file) is dropped as when lost in a crash. */
START_TEST(state_fixture_restores)
{
	const char *out = getenv("STATE_FIXTURE_WRITE");
	const char *dir = getenv("TESTS_DATA_DIR");
	struct journal_view *v;
	struct ibc_client *c2;
	char why[256], path[512], name[64], *text;
	struct rig g;
	int fd;

	if (out) {
		/* Once, today's. */
		if (_i == 0)
			state_fixture_write(out);
		return;
	}
	ck_assert_ptr_nonnull(dir);
	snprintf(path, sizeof(path), "%s/%s", dir, state_fixtures[_i]);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	ck_assert_int_eq(journal_read_fd(fd, &v, why, sizeof(why)), 0);
	ck_assert_int_eq(restart_state_check(v, NULL, NULL, why, sizeof(why)),
			 0);
	ck_assert_uint_eq(journal_view_gen(v), STATE_FIXTURE_GEN);
	ck_assert_uint_eq(journal_view_count(v, JOURNAL_COUNTERS), 1);
	ck_assert_uint_eq(journal_view_count(v, JOURNAL_CONTEXT), 1);
	ck_assert_uint_eq(journal_view_count(v, JOURNAL_SESSION), 1);
	ck_assert_uint_eq(journal_view_count(v, JOURNAL_OWNER), 1);
	ck_assert_uint_ge(journal_view_count(v, JOURNAL_OBJECT), 2);
	/* The session's hold: a record in format 2, a slot from 3 on. */
	ck_assert_uint_eq(journal_view_count(v, _i ? JOURNAL_SLOTS :
						     JOURNAL_SESSION_HOLD),
			  1);
	/* The DM family's records, and the XRCD family's (dm.h, xrcd.h:
	 * a family's kinds are never renumbered). */
	ck_assert_uint_gt(family_records(v, 16), 0);
	ck_assert_uint_gt(family_records(v, 32), 0);
	journal_view_free(v);

	/* Handed to a daemon as the newest state. */
	SKIP_WITHOUT_STATE(&g);
	ck_assert_int_eq(fakesd_kill(g.sd, SIGKILL), 0);
	ck_assert_int_ge(fakesd_wait_exit(g.sd, TL_WAIT_MS), 0);
	{
		/* A memfd as the daemon's own: a file would do as well,
		 * but the store holds memfds. */
		int m = memfd_create("fixture", MFD_CLOEXEC);
		uint8_t buf[65536];
		ssize_t n;

		ck_assert_int_ge(m, 0);
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			ck_assert_int_eq(write(m, buf, (size_t)n), n);
		ck_assert_int_eq(n, 0);
		snprintf(name, sizeof(name), "rb.state.%d", STATE_FIXTURE_GEN);
		ck_assert_int_eq(fakesd_plant(g.sd, name, m), 0);
		close(m);
	}
	close(fd);
	rig_start(&g);
	ck_assert_int_eq(tl_count_in_file(g.log, "starting clean"), 0);
	ck_assert_int_eq(tl_connect(g.sock, 10000, &c2), 0);
	/* The fixture's counters go on (the rig's own state would say 1
	 * restart, generation 2). */
	ck_assert_int_eq(ibc_metrics(c2, &text, NULL), 0);
	ck_assert_msg(strstr(text, "\nrdmabroker_restarts_total 2\n") &&
			      strstr(text, "\nrdmabroker_generation 3\n"),
		      "the restore did not go on from the fixture's counters");
	free(text);
	ibc_disconnect(c2);
	rig_free(&g);
}
END_TEST

/* A domain's rekey count (rdmabrokerctl domains, status, metrics) goes
 * on across restarts: kept in the domain's own record. */
START_TEST(rekeys_kept)
{
	struct ibc_domain_info d;
	char want[160];
	char *text;
	struct rig g;

	SKIP_WITHOUT_STATE(&g);
	d = domain_now(&g);
	ck_assert_uint_eq(d.rekeys, 0);
	ck_assert_int_eq(ibc_admin_domain_rekey(g.cl, d.name, 0), 0);
	ck_assert_int_eq(ibc_admin_domain_rekey(g.cl, d.name, 0), 0);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	d = domain_now(&g);
	ck_assert_uint_eq(d.rekeys, 2);
	snprintf(want, sizeof(want),
		 "\nrdmabroker_domain_rekeys_total{domain=\"%s\"} 2\n", d.name);
	ck_assert_int_eq(ibc_metrics(g.cl, &text, NULL), 0);
	ck_assert_msg(strstr(text, want), "no '%s' in the metrics", want + 1);
	free(text);
	ck_assert_int_eq(ibc_admin_domain_rekey(g.cl, d.name, 0), 0);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	ck_assert_uint_eq(domain_now(&g).rekeys, 3);
	rig_free(&g);
}
END_TEST

/* The restore's "descriptors adopted" (rdmabrokerctl status, the log's
 * line) counts each descriptor it took from the store and kept once: the
 * ones the new daemon keeps in the store, less its own state and
 * in-flight table. A family that counted its DM memfds, DM status pages
 * and XRCD files again on top of restore_take_fd() showed a 4,100-XRCD
 * restore as 8,203 descriptors. */
START_TEST(adopted_fds_counted_once)
{
	struct ibc_status st;
	struct ibc_xrcd *xr;
	struct ibc_ctx *x;
	struct ibc_dm *dm;
	char name[256];
	const char *at;
	unsigned long long shown;
	unsigned int kept = 0;
	struct rig g;
	int fd;

	SKIP_WITHOUT_STATE(&g);
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_dm_alloc(x, 4096, 0, &dm), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "counted", O_CREAT, &xr), 0);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	for (size_t i = 0;
	     fakesd_store_get(g.sd, i, name, sizeof(name), &fd) == 0; i++) {
		close(fd);
		kept += strncmp(name, "rb.", 3) == 0 &&
			strncmp(name, "rb.state.", 9) != 0 &&
			strncmp(name, "rb.inflight.", 12) != 0 &&
			strcmp(name, "rb.xrcd-dir") != 0;
	}
	/* The session's socket, its context, the DM's memfd and status
	 * page, the XRCD's file (not the XRCD directory, the family's own,
	 * taken at its start like the state). */
	ck_assert_uint_eq(kept, 5);
	ck_assert_int_eq(ibc_status(g.cl, &st, sizeof(st)), 0);
	at = strstr(st.last_restore, " objects, ");
	ck_assert_msg(at && sscanf(at, " objects, %llu descriptors", &shown) ==
				      1,
		      "status: \"%s\"", st.last_restore);
	ck_assert_msg(shown == kept,
		      "status: \"%s\", the store keeps %u adopted",
		      st.last_restore, kept);
	rig_free(&g);
}
END_TEST

/* SIGUSR2 outside systemd: the old daemon waits for its new binary's
 * READY=1 on an abstract datagram socket, whose name (its pid) anyone on
 * the host can write to. A READY=1 from another process must not make it
 * hand over: here the new binary fails before it is ready, and the old
 * daemon must go on serving its sessions, not exit on a stranger's word
 * and leave nobody. The daemon runs as a bash script's exec -a, so that
 * the path it re-executes is the script, which then plays the failing
 * new binary. */
START_TEST(reexec_ready_only_from_the_child)
{
	char script[256], broken[256], sock[160], run[160], log[160];
	char cwd[4096], daemon[4096];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ibc_client *cl;
	struct ibc_ctx *x;
	socklen_t sa_len;
	char *dir = tl_mkdtemp();
	int64_t end;
	pid_t pid;
	FILE *f;
	int s, st = 0, err;

	ck_assert_ptr_nonnull(dir);
	snprintf(script, sizeof(script), "%s/rdmabrokerd", dir);
	snprintf(broken, sizeof(broken), "%s/broken", dir);
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	snprintf(run, sizeof(run), "%s/run", dir);
	snprintf(log, sizeof(log), "%s/daemon.log", dir);
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	ck_assert_int_eq(tl_daemon_path()[0] == '/' ?
				 snprintf(daemon, sizeof(daemon), "%s",
					  tl_daemon_path()) > 0 :
				 snprintf(daemon, sizeof(daemon), "%s/%s", cwd,
					  tl_daemon_path()) > 0,
			 1);
	f = fopen(script, "we");
	ck_assert_ptr_nonnull(f);
	fprintf(f,
		"#!/bin/bash\n"
		"[ \"$1\" = --version ] && exec '%s' --version\n"
		"[ -e '%s' ] && { sleep 2; exit 1; }\n"
		"exec -a \"$0\" '%s' \"$@\"\n",
		daemon, broken, daemon);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(script, 0755), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		unsetenv("NOTIFY_SOCKET");
		unsetenv("LISTEN_FDS");
		unsetenv("LISTEN_PID");
		execl(script, script, "--foreground", "--device", "soft",
		      "--socket", sock, "--runtime-dir", run, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_eq(tl_wait_socket(pid, sock, TL_WAIT_MS), 0);
	ck_assert_int_eq(tl_connect(sock, 10000, &cl), 0);
	ck_assert_int_eq(ibc_open(cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_ping(cl, NULL, 0), 0);
	/* The next binary fails 2 s after it starts, never ready. */
	f = fopen(broken, "we");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fclose(f), 0);
	s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(s, 0);
	/* reexec.c's name: "@rdmabrokerd-reexec-<pid>", abstract. */
	snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1,
		 "rdmabrokerd-reexec-%d", (int)pid);
	sa_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			     strlen(sa.sun_path + 1));
	ck_assert_int_eq(kill(pid, SIGUSR2), 0);
	end = tl_now_ms() + 3000;
	while (tl_now_ms() < end) {
		(void)sendto(s, "READY=1", 7, MSG_DONTWAIT,
			     (struct sockaddr *)&sa, sa_len);
		tl_sleep_ms(10);
	}
	close(s);
	ck_assert_msg(tl_wait_pid(pid, 1000, &st) < 0,
		      "the daemon exited on a READY=1 its new binary never "
		      "sent (status %#x)",
		      st);
	err = ibc_ping(cl, NULL, 0);
	ck_assert_msg(err == 0, "the session after a failed re-exec: %d", err);
	ck_assert_int_gt(tl_count_in_file(log, "going on as before"), 0);
	ibc_disconnect(cl);
	kill(pid, SIGINT);
	ck_assert_int_ge(tl_wait_pid(pid, TL_WAIT_MS, &st), 0);
	free(dir);
}
END_TEST

/* The stored state, one generation newer, as @edit leaves it (given the
 * old state's view and @arg), planted as the newest for the next start
 * (no daemon runs). */
static void state_plant_edited(struct rig *g,
			       void (*edit)(struct journal *j,
					    const struct journal_view *v,
					    const void *arg),
			       const void *arg)
{
	struct journal_view *v;
	struct journal *j;
	char why[256], name[64];
	int fd = state_fd(g);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(journal_read_fd(fd, &v, why, sizeof(why)), 0);
	close(fd);
	ck_assert_int_eq(journal_from_view(v, journal_view_gen(v) + 1, &j), 0);
	edit(j, v, arg);
	snprintf(name, sizeof(name), "rb.state.%" PRIu64, journal_gen(j));
	ck_assert_int_eq(fakesd_plant(g->sd, name, journal_fd(j)), 0);
	journal_free(j);
	journal_view_free(v);
}

/* Junk with a good CRC under the record kind *@arg, key 1. */
static void put_junk(struct journal *j, const struct journal_view *v,
		     const void *arg)
{
	static const uint8_t junk[] = { 0xff, 0xff, 0xff, 0xff };

	(void)v;
	ck_assert_int_eq(journal_put_packed(j, *(const unsigned int *)arg, 1,
					    junk, sizeof(junk)),
			 0);
}

/* A state whose registry reads but one of whose family records does not
 * (junk bytes with a good CRC under the first record kind of family
 * @_i: a bug of the writer, not a kill) is a state the daemon cannot
 * use: a clean start, the reason logged and shown, the clients told, and
 * nothing of it adopted, neither the sessions nor what the families
 * before that one took back. */
START_TEST(bad_family_record_starts_clean)
{
	struct ibc_client *c2;
	struct ibc_object_info *o;
	struct ibc_dm_info *d;
	struct ibc_xrcd_info *xl;
	struct ibc_status st;
	struct ibc_xrcd *xr;
	struct ibc_ctx *x;
	struct ibc_dm *dm;
	struct ibc_cq *cq;
	size_t n_obj, n_dm, n_xrcd;
	struct rig g;
	int err;

	if (!families[_i]->journal_first)
		return;
	SKIP_WITHOUT_STATE(&g);
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_cq_create(x, 4, &cq), 0);
	ck_assert_int_eq(ibc_dm_alloc(x, 4096, 0, &dm), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "half", O_CREAT, &xr), 0);
	ck_assert_int_eq(fakesd_kill(g.sd, SIGKILL), 0);
	ck_assert_int_ge(fakesd_wait_exit(g.sd, TL_WAIT_MS), 0);
	state_plant_edited(&g, put_junk, (void *)&families[_i]->journal_first);
	rig_start(&g);
	err = ibc_ping(g.cl, NULL, 0);
	ck_assert_int_eq(tl_connect(g.sock, 10000, &c2), 0);
	ck_assert_int_eq(ibc_status(c2, &st, sizeof(st)), 0);
	ck_assert_int_eq(ibc_list_objects(c2, NULL, &o, sizeof(*o), &n_obj), 0);
	ibc_list_free(o);
	ck_assert_int_eq(ibc_list_dms(c2, &d, sizeof(*d), &n_dm), 0);
	ibc_list_free(d);
	ck_assert_int_eq(ibc_list_xrcds(c2, NULL, &xl, sizeof(*xl), &n_xrcd),
			 0);
	ibc_list_free(xl);
	ck_assert_msg(err == -ECONNRESET &&
			      tl_count_in_file(g.log, "starting clean") > 0 &&
			      strstr(st.last_restore, "refused") &&
			      st.generation == 1 && n_obj == 0 && n_dm == 0 &&
			      n_xrcd == 0,
		      "after a state with a bad %s record: ping %d, "
		      "%d clean starts logged, generation %" PRIu64
		      " \"%s\", %zu objects, %zu DMs, %zu XRCDs",
		      families[_i]->name, err,
		      tl_count_in_file(g.log, "starting clean"), st.generation,
		      st.last_restore, n_obj, n_dm, n_xrcd);
	ibc_disconnect(c2);
	rig_free(&g);
}
END_TEST

/* An RSS record of session *@arg's (client id, context id) that decodes
 * but whose key is not whole: the RSS family's restore fails on it, after
 * the DM family's restored. */
static void put_bad_rss(struct journal *j, const struct journal_view *v,
			const void *arg)
{
	const uint64_t *ids = arg;
	Rdmab__State__Rss m = RDMAB__STATE__RSS__INIT;

	(void)v;
	m.owner = ids[0];
	m.ctx_id = ids[1];
	m.flow_object = m.qp_object = m.tbl_object = UINT64_MAX;
	ck_assert_int_eq(
		journal_put(j, families[FAMILY_RSS]->journal_first, 1, &m.base),
		0);
}

/* SIGKILL; the state planted again with a bad RSS record (put_bad_rss())
 * on the context of the rig's client's object of @kind; start: the state
 * is refused (the sessions end), saying why. */
static void kill_restart_bad_rss(struct rig *g, enum ibc_obj_kind kind)
{
	struct ibc_object_info obj[8];
	struct ibc_client_info ci;
	uint64_t ids[2] = { 0, 0 };
	size_t n;

	ck_assert_int_eq(ibc_client_info(g->cl, &ci, sizeof(ci)), 0);
	ids[0] = ci.client_id;
	n = objects_listed(g, obj, 8);
	for (size_t i = 0; i < n; i++)
		if (obj[i].kind == kind)
			ids[1] = obj[i].context_id;
	ck_assert_uint_ne(ids[1], 0);
	ck_assert_int_eq(fakesd_kill(g->sd, SIGKILL), 0);
	ck_assert_int_ge(fakesd_wait_exit(g->sd, TL_WAIT_MS), 0);
	state_plant_edited(g, put_bad_rss, ids);
	rig_start(g);
	ck_assert_int_ne(ibc_ping(g->cl, NULL, 0), 0);
	ck_assert_int_eq(tl_count_in_file(g->log, "is not whole"), 1);
}

/*
 * A family whose restore fails after the DM family's did (here the RSS
 * family's, on a record whose key is not whole) keeps nothing of the DMs
 * either: a persistent DM, which outlives its holders, does not stay
 * behind the ended sessions with its bytes charged and its memfd in the
 * store, holding its uid's one place there (fd_store_per_uid = 1: a new
 * DM of the uid finds it free).
 */
START_TEST(family_failure_after_dm_keeps_no_dm)
{
	struct ibc_dm_attr da = { .length = 4096, .flags = IBC_DM_PERSISTENT };
	struct ibc_domain_info used;
	struct ibc_client *cl;
	struct ibc_dm_info *d;
	struct ibc_dm *dm, *dm2;
	struct ibc_ctx *x, *x2;
	struct ibc_cq *cq;
	char name[64], got[64];
	size_t n_dm;
	int64_t end;
	struct rig g;

	SKIP_WITHOUT_STATE_CONF(&g, "[broker]\nfd_store_per_uid = 1\n");
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_cq_create(x, 4, &cq), 0);
	ck_assert_int_eq(ibc_dm_alloc_ex(x, &da, &dm), 0);
	snprintf(name, sizeof(name), "rb.dm.%" PRIu64, ibc_dm_id(dm));
	store_wait_for(&g, name, got, sizeof(got));
	kill_restart_bad_rss(&g, IBC_OBJ_CQ);
	ck_assert_int_eq(tl_connect(g.sock, 10000, &cl), 0);
	ibc_disconnect(g.cl);
	g.cl = cl;
	end = tl_now_ms() + TL_WAIT_MS;
	do {
		ck_assert_int_eq(ibc_list_dms(g.cl, &d, sizeof(*d), &n_dm), 0);
		ibc_list_free(d);
		if (n_dm)
			tl_sleep_ms(20);
	} while (n_dm && tl_now_ms() < end);
	ck_assert_msg(n_dm == 0, "%zu DMs kept after a refused state", n_dm);
	used = domain_now(&g);
	ck_assert_uint_eq(used.used.dm_bytes, 0);
	ck_assert(!store_has(&g, name));
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x2), 0);
	ck_assert_int_eq(ibc_dm_alloc(x2, 4096, 0, &dm2), 0);
	ck_assert_int_eq(ibc_dm_free(dm2), 0);
	wait_all_gone(&g);
	rig_free(&g);
}
END_TEST

/* What a daemon before R3's cgroup fields wrote: record @r of the new
 * journal @arg as it was, less those fields (and B2's start time). */
static int strip_ctx(void *arg, const struct journal_rec *r)
{
	Rdmab__State__Context *m;
	char *cg, *pool;

	m = rdmab__state__context__unpack(NULL, r->len, r->data);
	ck_assert_ptr_nonnull(m);
	cg = m->domain_cgroup;
	pool = m->domain_pool;
	m->domain_cgroup = m->domain_pool = "";
	ck_assert_int_eq(journal_put(arg, r->kind, r->key, &m->base), 0);
	m->domain_cgroup = cg;
	m->domain_pool = pool;
	rdmab__state__context__free_unpacked(m, NULL);
	return 0;
}

static int strip_session(void *arg, const struct journal_rec *r)
{
	Rdmab__State__Session *m;
	char *pool;

	m = rdmab__state__session__unpack(NULL, r->len, r->data);
	ck_assert_ptr_nonnull(m);
	pool = m->domain_pool;
	m->domain_pool = "";
	ck_assert_int_eq(journal_put(arg, r->kind, r->key, &m->base), 0);
	m->domain_pool = pool;
	rdmab__state__session__free_unpacked(m, NULL);
	return 0;
}

static int strip_owner(void *arg, const struct journal_rec *r)
{
	Rdmab__State__Owner *m;

	m = rdmab__state__owner__unpack(NULL, r->len, r->data);
	ck_assert_ptr_nonnull(m);
	m->start_time = 0;
	ck_assert_int_eq(journal_put(arg, r->kind, r->key, &m->base), 0);
	rdmab__state__owner__free_unpacked(m, NULL);
	return 0;
}

/* The state as a daemon before 4433c8a and ac19904 (R3) would have
 * written it: its contexts name no cgroup nor pool, its sessions no
 * pool (and, before B2, its owners no start time). */
static void strip_cgroup_fields(struct journal *j, const struct journal_view *v,
				const void *arg)
{
	(void)arg;
	ck_assert_int_eq(journal_each(v, JOURNAL_CONTEXT, strip_ctx, j), 0);
	ck_assert_int_eq(journal_each(v, JOURNAL_SESSION, strip_session, j), 0);
	ck_assert_int_eq(journal_each(v, JOURNAL_OWNER, strip_owner, j), 0);
}

/*
 * From a state an older daemon wrote (strip_cgroup_fields()), with per =
 * cgroup: the objects of a session that ended in its cgroup's domain
 * (run 0), or in a private domain drawing on it (run 1), when no session
 * of that domain comes back, come back all the same, detached: the
 * cgroup the records do not name is read from the owner's process, and
 * the domain made again under its saved name for it (a private one's
 * pool found or made by that cgroup, the pool's name being unknown).
 * Before, their context was closed and they were not listed.
 */
START_TEST(older_state_cgroup_detached)
{
	struct ibc_domain_info back;
	struct ibc_client_info ci;
	size_t n, detached;
	char pool[64], name[64];
	struct rig g;
	pid_t pid;
	int st;

	SKIP_WITHOUT_STATE_CONF(&g, "[defaults]\nper = cgroup\n");
	snprintf(pool, sizeof(pool), "%s", domain_now(&g).name);
	pid = holder_spawn_in(&g, HOLD_CQ | (_i ? HOLD_PRIVATE : 0));
	ck_assert_uint_eq(evict_pid(&g, pid), 1);
	if (_i)
		private_domain(&g, name, sizeof(name));
	else
		snprintf(name, sizeof(name), "%s", pool);
	ck_assert_str_ne(name, "");
	/* No session of the domain is left to bring it back. */
	rig_client_leaves(&g);
	ck_assert_int_eq(fakesd_kill(g.sd, SIGKILL), 0);
	ck_assert_int_ge(fakesd_wait_exit(g.sd, TL_WAIT_MS), 0);
	state_plant_edited(&g, strip_cgroup_fields, NULL);
	rig_start(&g);
	ck_assert_int_eq(tl_count_in_file(g.log, "starting clean"), 0);
	ck_assert_int_eq(tl_connect(g.sock, 10000, &g.cl), 0);
	n = objects_in(&g, IBC_OBJECT_DETACHED, &detached);
	ck_assert_msg(n == 1 && detached == 1,
		      "%zu objects (%zu detached) from the older state", n,
		      detached);
	ck_assert_msg(domain_named(&g, name, &back),
		      "domain %s did not come back", name);
	/* A session of the cgroup joins the cgroup's domain made again. */
	ck_assert_int_eq(ibc_client_info(g.cl, &ci, sizeof(ci)), 0);
	if (!_i)
		ck_assert_str_eq(ci.domain, pool);
	else
		ck_assert_str_eq(back.kind, "private");
	if (_i) {
		holder_gone(&g, pid, name);
	} else {
		kill(pid, SIGKILL);
		ck_assert_int_ge(tl_wait_pid(pid, TL_WAIT_MS, &st), 0);
		wait_all_gone(&g);
	}
	rig_free(&g);
}
END_TEST

/* The first cgroup2 mount, if this process may make a cgroup there:
 * @dir (of @size bytes) is then a new one, made, and true. */
static bool cgroup2_new(char *dir, size_t size)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL, mnt[512] = "";
	size_t cap = 0;

	if (!f)
		return false;
	while (!*mnt && getline(&line, &cap, f) > 0) {
		char *sep = strstr(line, " - ");

		if (sep && strncmp(sep, " - cgroup2 ", 11) == 0 &&
		    sscanf(line, "%*s %*s %*s %*s %511s", mnt) != 1)
			*mnt = '\0';
	}
	free(line);
	fclose(f);
	if (!*mnt)
		return false;
	snprintf(dir, size, "%s/rdmab-restart-%d", mnt, (int)getpid());
	return mkdir(dir, 0755) == 0;
}

/*
 * The same from the older state, but the process moved, while no daemon
 * ran, to the cgroup of another domain of its uid, whose session came
 * back: that cgroup is what its process's reads now, and its objects
 * must not land in that other domain (whose members would then reach
 * its context); they are not restored. Needs a cgroup2 mount where this
 * process may make cgroups.
 */
START_TEST(older_state_cgroup_moved_not_merged)
{
	struct agent_cred cred = agent_cred(0, 0, AGENT_END);
	struct agent other = { 0 };
	char cg[600];
	size_t n, detached;
	struct rig g;
	pid_t pid;
	int st;

	if (!cgroup2_new(cg, sizeof(cg))) {
		fprintf(stderr,
			"check_restart: no cgroup2 mount where a "
			"cgroup can be made: "
			"older_state_cgroup_moved_not_merged skipped\n");
		return;
	}
	rig_config = "[defaults]\nper = cgroup\n";
	if (!rig_new(&g)) {
		rig_config = NULL;
		rig_free(&g);
		rmdir(cg);
		return;
	}
	rig_config = NULL;
	pid = holder_spawn_in(&g, HOLD_CQ);
	ck_assert_uint_eq(evict_pid(&g, pid), 1);
	/* A session of the same uid in the other cgroup's domain. */
	ck_assert_int_eq(agent_start(&other, &cred, g.sock), 0);
	ck_assert_int_eq(tl_cgroup_move(cg, other.pid), 0);
	ck_assert_int_eq(agent_call(&other, AGENT_CONNECT, NULL, 0, TL_WAIT_MS),
			 0);
	ck_assert_int_eq(other.rep.ret, 0);
	rig_client_leaves(&g);
	ck_assert_int_eq(fakesd_kill(g.sd, SIGKILL), 0);
	ck_assert_int_ge(fakesd_wait_exit(g.sd, TL_WAIT_MS), 0);
	ck_assert_int_eq(tl_cgroup_move(cg, pid), 0);
	state_plant_edited(&g, strip_cgroup_fields, NULL);
	rig_start(&g);
	ck_assert_int_eq(agent_call(&other, AGENT_PING, NULL, 0, TL_WAIT_MS),
			 0);
	ck_assert_int_eq(other.rep.ret, 0);
	ck_assert_int_eq(tl_connect(g.sock, 10000, &g.cl), 0);
	n = objects_in(&g, IBC_OBJECT_DETACHED, &detached);
	ck_assert_msg(n == 0,
		      "%zu objects (%zu detached) adopted into the "
		      "other cgroup's domain",
		      n, detached);
	ck_assert_int_eq(tl_count_in_file(g.log, "is now in the cgroup"), 1);
	kill(pid, SIGKILL);
	ck_assert_int_ge(tl_wait_pid(pid, TL_WAIT_MS, &st), 0);
	agent_stop(&other);
	rig_free(&g);
	ck_assert_msg(rmdir(cg) == 0, "rmdir %s: %s", cg, strerror(errno));
}
END_TEST

/* An agent of uid @uid on the rig's daemon, connected, soft0 open. */
static void rig_agent(struct rig *g, struct agent *a, uid_t uid)
{
	struct agent_cred cred = agent_cred(uid, uid, AGENT_END);
	char *top = strdup(g->dir);

	ck_assert_ptr_nonnull(top);
	ck_assert_int_eq(chmod(g->dir, 0711), 0);
	ck_assert_int_eq(chmod(dirname(top), 0711), 0);
	free(top);
	ck_assert_int_eq(chmod(g->sock, 0666), 0);
	ck_assert_int_eq(agent_start(a, &cred, g->sock), 0);
	ck_assert_int_eq(agent_call(a, AGENT_CONNECT, NULL, 0, TL_WAIT_MS), 0);
	ck_assert_msg(a->rep.ret == 0, "uid %u: ibc_connect: %s",
		      (unsigned int)uid, a->rep.error);
	ck_assert_int_eq(agent_call(a, AGENT_OPEN, "soft0", 0, TL_WAIT_MS), 0);
	ck_assert_int_eq(a->rep.ret, 0);
}

/* @a opens undeclared XRCD "@prefix<i>" with O_CREAT: its result. */
static int agent_xrcd(struct agent *a, const char *prefix, int i)
{
	char name[32];

	snprintf(name, sizeof(name), "%s%d", prefix, i);
	ck_assert_int_eq(
		agent_call(a, AGENT_XRCD_OPEN, name, O_CREAT, TL_WAIT_MS), 0);
	return a->rep.ret;
}

/*
 * The fd store is shared by every uid: each uid's XRCD names and DMs are
 * charged there, up to [broker] fd_store_per_uid. A uid at its share is
 * refused with a sentence naming the limit, before anything is made;
 * another uid's new session is still kept in the store, and its names
 * too. The charge survives a restart (the names' records say whose).
 */
START_TEST(store_share_per_uid)
{
	enum { SHARE = 3 };
	struct agent a = { 0 }, b = { 0 };
	size_t before;
	struct rig g;

	SKIP_WITHOUT_STATE_CONF(&g, "[broker]\nfd_store_per_uid = 3\n");
	rig_agent(&g, &a, 65534);
	for (int i = 0; i < SHARE; i++)
		ck_assert_msg(agent_xrcd(&a, "a", i) == 0, "a%d: %s", i,
			      a.rep.error);
	ck_assert_int_eq(agent_xrcd(&a, "a", SHARE), -EDQUOT);
	ck_assert_msg(strstr(a.rep.error, "fd_store_per_uid = 3") &&
			      strstr(a.rep.error, "uid 65534"),
		      "refusal: %s", a.rep.error);
	/* Nothing was made: the names listed are the share's. */
	ck_assert_int_eq(agent_call(&a, AGENT_LIST_XRCDS, NULL, 0, TL_WAIT_MS),
			 0);
	ck_assert_uint_eq(a.rep.n_list, SHARE);
	/* Another uid's session and names are kept. */
	before = fakesd_store_count(g.sd, NULL);
	rig_agent(&g, &b, 65533);
	ck_assert_int_eq(agent_xrcd(&b, "b", 0), 0);
	{
		int64_t end = tl_now_ms() + TL_WAIT_MS;

		while (fakesd_store_count(g.sd, NULL) < before + 2 &&
		       tl_now_ms() < end)
			tl_sleep_ms(20);
	}
	ck_assert_uint_ge(fakesd_store_count(g.sd, NULL), before + 2);
	/* After a restart the places are still uid 65534's. */
	ck_assert_int_eq(kill_and_restart(&g), 0);
	ck_assert_int_eq(agent_call(&a, AGENT_PING, NULL, 0, TL_WAIT_MS), 0);
	ck_assert_int_eq(agent_xrcd(&a, "a", SHARE + 1), -EDQUOT);
	ck_assert_int_eq(agent_xrcd(&b, "b", 1), 0);
	agent_stop(&a);
	agent_stop(&b);
	rig_free(&g);
}
END_TEST

/*
 * A session whose connection the fd store cannot keep is told at its
 * hello, not left to lose its session at the next restart. The store
 * is made full by a restart that shrinks every uid's share: the places
 * adopted (charged over the share: they exist) fill the new bound.
 */
START_TEST(store_full_hello_told)
{
	struct agent a = { 0 }, b = { 0 };
	struct rig g;

	/* Bound 5 + 2 x 1 device + 3 x (3 + 1 device + 0 + 15) = 64, then,
	 * with a share of 1, 22: the state, the in-flight table, the XRCD
	 * directory, the rig's session and context, uid 65534's session and
	 * context and its 15 names. */
	rig_max_clients = "3";
	SKIP_WITHOUT_STATE_CONF(
		&g, "[broker]\nadmin_reserve = 0\n"
		    "private_contexts_per_uid = 0\nfd_store_per_uid = 15\n");
	rig_agent(&g, &a, 65534);
	for (int i = 0; i < 15; i++)
		ck_assert_msg(agent_xrcd(&a, "a", i) == 0, "a%d: %s", i,
			      a.rep.error);
	rig_write_config(&g, "[broker]\nadmin_reserve = 0\n"
			     "private_contexts_per_uid = 0\n"
			     "fd_store_per_uid = 1\n");
	ck_assert_int_eq(kill_and_restart(&g), 0);
	rig_max_clients = NULL;
	ck_assert_int_eq(agent_call(&a, AGENT_PING, NULL, 0, TL_WAIT_MS), 0);
	ck_assert_int_eq(a.rep.ret, 0);
	/* The restore kept uid 65534's names; a new session of another
	 * uid finds the store full and is told so. */
	{
		struct agent_cred cred = agent_cred(65533, 65533, AGENT_END);

		ck_assert_int_eq(agent_start(&b, &cred, g.sock), 0);
	}
	ck_assert_int_eq(agent_call(&b, AGENT_CONNECT, NULL, 0, TL_WAIT_MS), 0);
	ck_assert_msg(b.rep.ret == -ENOSPC && strstr(b.rep.error, "fd store"),
		      "uid 65533's hello: %d %s", b.rep.ret, b.rep.error);
	agent_stop(&a);
	agent_stop(&b);
	rig_free(&g);
}
END_TEST

/* --- X1: the XRCD directory and the XRC domains' holds ------------------ */

/* A configuration with domain "a" of this uid, which declares XRCD
 * "decl". */
static const char *xrcd_conf(void)
{
	static char conf[128];

	snprintf(conf, sizeof(conf),
		 "[domain a]\nusers = %u\n[xrcd decl]\ndomains = a\n",
		 (unsigned int)getuid());
	return conf;
}

/* Does directory @dir hold a file of inode @ino? */
static bool dir_has_ino(const char *dir, uint64_t ino)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while ((e = readdir(d)))
		found |= (uint64_t)e->d_ino == ino;
	closedir(d);
	return found;
}

/* The inode of what the store keeps under @name, 0 when nothing. */
static uint64_t store_ino(struct rig *g, const char *name)
{
	char got[256];
	uint64_t ino = 0;
	struct stat st;
	int fd;

	for (size_t i = 0;
	     fakesd_store_get(g->sd, i, got, sizeof(got), &fd) == 0; i++) {
		if (strcmp(got, name) == 0 && fstat(fd, &st) == 0)
			ino = (uint64_t)st.st_ino;
		close(fd);
	}
	return ino;
}

/* SIGKILL; @between runs while no daemon does; start again. */
static void kill_between_restart(struct rig *g, void (*between)(struct rig *))
{
	ck_assert_int_eq(fakesd_kill(g->sd, SIGKILL), 0);
	ck_assert_int_ge(fakesd_wait_exit(g->sd, TL_WAIT_MS), 0);
	between(g);
	rig_start(g);
}

static void xrcd_dir_moved(struct rig *g)
{
	char dir[300], moved[310];

	snprintf(dir, sizeof(dir), "%s/xrcd", g->run);
	snprintf(moved, sizeof(moved), "%s.moved", dir);
	ck_assert_int_eq(rename(dir, moved), 0);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
}

/*
 * The XRCD directory is kept in the fd store (rb.xrcd-dir): a restart
 * takes it from there wherever its path went while no daemon ran (here
 * renamed away, and another directory made at its path). The names opened
 * before open again by name, the declared name's file is adopted from it,
 * and a new name's file lands in it, never at the path.
 */
START_TEST(xrcd_dir_from_the_store)
{
	struct ibc_xrcd *p, *d, *n, *again;
	char dir[300], moved[310];
	struct ibc_client *cl;
	struct ibc_ctx *x;
	struct rig g;

	SKIP_WITHOUT_STATE_CONF(&g, xrcd_conf());
	snprintf(dir, sizeof(dir), "%s/xrcd", g.run);
	snprintf(moved, sizeof(moved), "%s.moved", dir);
	ck_assert_uint_ne(store_ino(&g, "rb.xrcd-dir"), 0);
	ck_assert_int_eq(tl_connect(g.sock, 10000, &cl), 0);
	ck_assert_int_eq(ibc_open(cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "priv", O_CREAT, &p), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "decl", O_CREAT, &d), 0);
	kill_between_restart(&g, xrcd_dir_moved);
	ck_assert_int_eq(ibc_ping(cl, NULL, 0), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "priv", 0, &again), 0);
	ck_assert_uint_eq(ibc_xrcd_ino(again), ibc_xrcd_ino(p));
	ck_assert_int_eq(ibc_xrcd_close(again), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "decl", 0, &again), 0);
	ck_assert_uint_eq(ibc_xrcd_ino(again), ibc_xrcd_ino(d));
	ck_assert_int_eq(ibc_xrcd_close(again), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "new", O_CREAT, &n), 0);
	ck_assert_msg(dir_has_ino(moved, ibc_xrcd_ino(n)) &&
			      !dir_has_ino(dir, ibc_xrcd_ino(n)),
		      "the new name's file is not in the stored directory");
	ck_assert(dir_has_ino(moved, ibc_xrcd_ino(d)));
	ibc_disconnect(cl);
	rig_free(&g);
}
END_TEST

/* @fd (taken) planted in the store in place of the XRCD directory. */
static void store_replace_dir(struct rig *g, int fd)
{
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fakesd_drop(g->sd, "rb.xrcd-dir"), 1);
	ck_assert_int_eq(fakesd_plant(g->sd, "rb.xrcd-dir", fd), 0);
	close(fd);
}

/* What replaces the stored directory in xrcd_dir_refused's cases. */
static void xrcd_dir_chmod(struct rig *g)
{
	char dir[300], moved[310];

	xrcd_dir_moved(g);
	snprintf(dir, sizeof(dir), "%s/xrcd", g->run);
	snprintf(moved, sizeof(moved), "%s.moved", dir);
	ck_assert_int_eq(chmod(moved, 0755), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}

static void xrcd_dir_symlink(struct rig *g)
{
	char dir[300], link[310];
	int fd;

	snprintf(dir, sizeof(dir), "%s/xrcd", g->run);
	snprintf(link, sizeof(link), "%s.link", dir);
	ck_assert_int_eq(symlink(dir, link), 0);
	fd = open(link, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	store_replace_dir(g, fd);
}

static void xrcd_dir_file(struct rig *g)
{
	char path[310];
	int fd;

	snprintf(path, sizeof(path), "%s/xrcd.file", g->run);
	fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0700);
	store_replace_dir(g, fd);
}

static void xrcd_dir_o_path(struct rig *g)
{
	char moved[310];
	int fd;

	xrcd_dir_moved(g);
	snprintf(moved, sizeof(moved), "%s/xrcd.moved", g->run);
	fd = open(moved, O_PATH | O_DIRECTORY | O_CLOEXEC);
	store_replace_dir(g, fd);
}

/*
 * A stored directory the daemon would not have made (mode 0755, a
 * symlink, a file, one it could not read) is not used: the restart says why and
 * opens the directory at its path, and the store keeps that one from then on.
 */
START_TEST(xrcd_dir_refused)
{
	static void (*const spoil[])(struct rig *) = {
		xrcd_dir_chmod,
		xrcd_dir_symlink,
		xrcd_dir_file,
		xrcd_dir_o_path,
	};
	static const char *const why[] = { "mode 0755", "not a directory",
					   "not a directory",
					   "not open for reading" };
	struct ibc_client *cl;
	struct ibc_xrcd *p, *n;
	struct ibc_ctx *x;
	char dir[300];
	struct stat st;
	struct rig g;

	SKIP_WITHOUT_STATE_CONF(&g, xrcd_conf());
	snprintf(dir, sizeof(dir), "%s/xrcd", g.run);
	ck_assert_int_eq(tl_connect(g.sock, 10000, &cl), 0);
	ck_assert_int_eq(ibc_open(cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "priv", O_CREAT, &p), 0);
	kill_between_restart(&g, spoil[_i]);
	ck_assert_int_eq(ibc_ping(cl, NULL, 0), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "new", O_CREAT, &n), 0);
	ck_assert_msg(dir_has_ino(dir, ibc_xrcd_ino(n)),
		      "case %d: the new name's file is not at the path", _i);
	ck_assert_int_eq(stat(dir, &st), 0);
	ck_assert_uint_eq(store_ino(&g, "rb.xrcd-dir"), (uint64_t)st.st_ino);
	ck_assert_msg(tl_count_in_file(g.log, "XRCD directory handed over "
					      "is not used (") == 1 &&
			      tl_count_in_file(g.log, why[_i]) == 1,
		      "case %d: the log does not say why", _i);
	ibc_disconnect(cl);
	rig_free(&g);
}
END_TEST

/* The identity of the XRC domain the state's record of XRCD @ino says
 * the daemon holds on its first device (soft0). */
static uint32_t xrcd_held_id(struct rig *g, uint64_t ino)
{
	Rdmab__State__XrcdName *m;
	struct journal_view *v;
	struct journal_rec rec;
	char why[256];
	uint32_t id;
	int fd = state_fd(g);

	ck_assert_int_ge(fd, 0);
	ck_assert_msg(journal_read_fd(fd, &v, why, sizeof(why)) == 0, "%s",
		      why);
	close(fd);
	ck_assert_int_eq(journal_find(v, XRCD_JOURNAL_FIRST, ino, &rec), 0);
	m = rdmab__state__xrcd_name__unpack(NULL, rec.len, rec.data);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->n_held_on, 1);
	ck_assert_uint_eq(m->n_held_id, 1);
	id = m->held_id[0];
	rdmab__state__xrcd_name__free_unpacked(m, NULL);
	journal_view_free(v);
	return id;
}

/*
 * A declared XRC domain that nobody opens lives on the daemon's hold
 * alone; a SIGKILL must not make it a new one. On the soft device, whose
 * kernel is the daemon, its identity is its number (as mlx5's xrcdn): the
 * restore's hold takes the one it had, and a name made after gets a new
 * one.
 */
START_TEST(xrcd_hold_kept)
{
	struct ibc_xrcd_info *xl;
	struct ibc_xrcd *d, *n;
	size_t n_xl;
	struct ibc_client *cl;
	struct ibc_ctx *x;
	uint64_t ino;
	uint32_t id;
	struct rig g;

	SKIP_WITHOUT_STATE_CONF(&g, xrcd_conf());
	ck_assert_int_eq(tl_connect(g.sock, 10000, &cl), 0);
	ck_assert_int_eq(ibc_open(cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "decl", O_CREAT, &d), 0);
	ino = ibc_xrcd_ino(d);
	ck_assert_int_eq(ibc_xrcd_close(d), 0);
	id = xrcd_held_id(&g, ino);
	ck_assert_uint_ne(id, 0);
	/* The soft device has no context for them: none stored. */
	ck_assert(!store_has(&g, "rb.xrcd-ctx."));
	ck_assert_int_eq(kill_and_restart(&g), 0);
	ck_assert_int_eq(ibc_ping(cl, NULL, 0), 0);
	/* Held again at once, not at the next open. */
	ck_assert_int_eq(ibc_list_xrcds(cl, "decl", &xl, sizeof(*xl), &n_xl),
			 0);
	ck_assert_uint_eq(n_xl, 1);
	ck_assert_str_eq(xl[0].devices, "soft0");
	ibc_list_free(xl);
	ck_assert_uint_eq(xrcd_held_id(&g, ino), id);
	ck_assert_int_eq(ibc_xrcd_open(x, "new", O_CREAT, &n), 0);
	ck_assert_uint_ne(xrcd_held_id(&g, ibc_xrcd_ino(n)), id);
	ibc_disconnect(cl);
	rig_free(&g);
}
END_TEST

/* --- X2: a declared XRCD's file changed while no daemon ran ------------ */

/* The declared names of xrcd_file_changed: "decl" opened, "idle" held by
 * the daemon alone (opened once, closed). */
static const char *xrcd_two_conf(void)
{
	static char conf[160];

	snprintf(conf, sizeof(conf),
		 "[domain a]\nusers = %u\n[xrcd decl]\ndomains = a\n"
		 "[xrcd idle]\ndomains = a\n",
		 (unsigned int)getuid());
	return conf;
}

/* The file xrcd_file_changed's spoilers change, and the inode that took
 * its place (0: none, or not a regular file), held open so that its
 * number is not reused. */
static char spoil_path[400];
static uint64_t spoil_ino;
static int spoil_fd = -1;

/* Another inode renamed over it (root's `cp` and `mv`). */
static void xrcd_file_other(struct rig *g)
{
	char tmp[420];
	struct stat st;
	int fd;

	snprintf(tmp, sizeof(tmp), "%s/xrcd/tmp.other", g->run);
	fd = open(tmp, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	spoil_fd = fd;
	spoil_ino = (uint64_t)st.st_ino;
	ck_assert_int_eq(rename(tmp, spoil_path), 0);
}

static void xrcd_file_removed(struct rig *g)
{
	(void)g;
	ck_assert_int_eq(unlink(spoil_path), 0);
}

/* A symlink to a regular file out of the directory. */
static void xrcd_file_symlink(struct rig *g)
{
	char out[300];
	int fd;

	snprintf(out, sizeof(out), "%s/outside", g->dir);
	fd = open(out, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(unlink(spoil_path), 0);
	ck_assert_int_eq(symlink(out, spoil_path), 0);
}

static void xrcd_file_dir(struct rig *g)
{
	(void)g;
	ck_assert_int_eq(unlink(spoil_path), 0);
	ck_assert_int_eq(mkdir(spoil_path, 0700), 0);
}

/*
 * A declared name's file replaced by another inode, removed, made a
 * symlink or a directory while no daemon ran (cases 0-3 on the opened
 * name "decl", 4-7 on "idle", which only the daemon holds): that name
 * alone is refused. Its open ends for its holder, who is told why and
 * whose xrcds charge is returned; its stored file leaves the store; the
 * inode that took its place is never adopted (a new open makes a file of
 * the daemon's own). The sessions, the other declared name and a private
 * one come back as they were. Before, the whole state was refused.
 */
START_TEST(xrcd_file_changed)
{
	static void (*const spoil[])(struct rig *) = {
		xrcd_file_other,
		xrcd_file_removed,
		xrcd_file_symlink,
		xrcd_file_dir,
	};
	const char *name = _i < 4 ? "decl" : "idle";
	const char *other = _i < 4 ? "idle" : "decl";
	struct ibc_xrcd *d, *idle, *p, *again, *fresh;
	struct ibc_domain_info before, after;
	uint64_t ino_name, ino_other, ino_p;
	char dir[300], stored[64];
	struct event_seen seen = { .type = IBC_EVENT_XRCD_LOST };
	struct ibc_client *cl;
	struct ibc_ctx *x;
	struct rig g;

	SKIP_WITHOUT_STATE_CONF(&g, xrcd_two_conf());
	snprintf(dir, sizeof(dir), "%s/xrcd", g.run);
	snprintf(spoil_path, sizeof(spoil_path), "%s/d.%s", dir, name);
	spoil_ino = 0;
	cl = connect_seeing(&g, &seen);
	ck_assert_int_eq(ibc_open(cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "idle", O_CREAT, &idle), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "decl", O_CREAT, &d), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "priv", O_CREAT, &p), 0);
	ino_name = ibc_xrcd_ino(_i < 4 ? d : idle);
	ino_other = ibc_xrcd_ino(_i < 4 ? idle : d);
	ino_p = ibc_xrcd_ino(p);
	ck_assert_int_eq(ibc_xrcd_close(idle), 0);
	snprintf(stored, sizeof(stored), "rb.xrcd.%" PRIu64, ino_name);
	store_wait_count(&g, stored, 1);
	before = domain_now(&g);
	ck_assert_uint_eq(before.used.xrcds, 2);
	kill_between_restart(&g, spoil[_i % 4]);
	ck_assert_msg(ibc_ping(cl, NULL, 0) == 0 &&
			      ibc_ping(g.cl, NULL, 0) == 0,
		      "case %d: the sessions did not come back", _i);
	ck_assert_int_eq(tl_count_in_file(g.log, "starting clean"), 0);
	ck_assert_int_eq(tl_count_in_file(g.log, "cannot be used"), 0);
	/* The rest came back as it was. */
	ck_assert_int_eq(ibc_xrcd_open(x, other, 0, &again), 0);
	ck_assert_uint_eq(ibc_xrcd_ino(again), ino_other);
	ck_assert_int_eq(ibc_xrcd_close(again), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "priv", 0, &again), 0);
	ck_assert_uint_eq(ibc_xrcd_ino(again), ino_p);
	ck_assert_int_eq(ibc_xrcd_close(again), 0);
	/* That name alone is gone, said once, its file out of the store. */
	ck_assert_msg(tl_count_in_file(g.log, "is not adopted, its opens "
					      "end: its file changed while "
					      "no daemon ran") == 1,
		      "case %d: the log does not say why once", _i);
	store_wait_count(&g, stored, 0);
	after = domain_now(&g);
	ck_assert_uint_eq(after.used.xrcds, _i < 4 ? 1 : 2);
	/* Its holder is told, with the reason; nobody else is. */
	wait_event(cl, &seen, _i < 4 ? TL_WAIT_MS : 300);
	ck_assert_int_eq(seen.n, _i < 4 ? 1 : 0);
	if (_i < 4) {
		ck_assert_uint_eq(seen.id, ibc_xrcd_id(d));
		ck_assert_int_eq(seen.kind, IBC_OBJ_XRCD);
		ck_assert_msg(strstr(seen.why, "\"decl\" (its file changed"),
			      "%s", seen.why);
	}
	ck_assert_int_eq(ibc_xrcd_open(x, name, 0, &again), -ENOENT);
	/* Made anew, of the daemon's own: not what took its place. */
	ck_assert_int_eq(ibc_xrcd_open(x, name, O_CREAT, &fresh), 0);
	ck_assert_uint_ne(ibc_xrcd_ino(fresh), spoil_ino);
	ck_assert(spoil_ino == 0 || !dir_has_ino(dir, spoil_ino));
	ck_assert(dir_has_ino(dir, ibc_xrcd_ino(fresh)));
	/* The lost open still holds the old inode (on verbs its ibv_xrcd,
	 * here the soft device): a new file cannot be given its number. */
	if (_i < 4)
		ck_assert_uint_ne(ibc_xrcd_ino(fresh), ino_name);
	ck_assert_int_eq(ibc_xrcd_close(fresh), 0);
	/* The lost open's record is still the client's to close. */
	ck_assert_int_eq(ibc_xrcd_close(d), 0);
	ck_assert_int_eq(ibc_xrcd_close(p), 0);
	after = domain_now(&g);
	ck_assert_uint_eq(after.used.xrcds, 0);
	ck_assert_uint_eq(after.used.objects, before.used.objects - 2);
	ibc_disconnect(cl);
	if (spoil_fd >= 0)
		close(spoil_fd);
	spoil_fd = -1;
	rig_free(&g);
}
END_TEST

/*
 * A name's file lost from the store while no daemon ran (cases 0, 1), or
 * another file stored in its place (2, 3): a declared name comes back
 * from its file in the directory, which is the inode recorded (0, 2); a
 * private one is refused alone (1, 3): its holder is told, its charge
 * returned, the session and the rest kept. Before, the whole state was
 * refused.
 */
START_TEST(xrcd_file_unstored)
{
	const char *name = _i % 2 == 0 ? "decl" : "priv";
	const char *why = _i < 2 ? "its file is not in the fd store" :
				   "the descriptor stored for it is not its "
				   "file";
	char log_line[128];
	struct ibc_domain_info before, after;
	struct event_seen seen = { .type = IBC_EVENT_XRCD_LOST };
	struct ibc_xrcd *d, *p, *again;
	struct ibc_client *cl;
	struct ibc_ctx *x;
	char stored[64];
	uint64_t ino;
	struct rig g;
	int fd;

	SKIP_WITHOUT_STATE_CONF(&g, xrcd_conf());
	cl = connect_seeing(&g, &seen);
	ck_assert_int_eq(ibc_open(cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "decl", O_CREAT, &d), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "priv", O_CREAT, &p), 0);
	ino = ibc_xrcd_ino(_i % 2 == 0 ? d : p);
	snprintf(stored, sizeof(stored), "rb.xrcd.%" PRIu64, ino);
	store_wait_count(&g, stored, 1);
	before = domain_now(&g);
	if (_i < 2) {
		ck_assert_int_eq(kill_drop_restart(&g, stored), 0);
	} else {
		ck_assert_int_eq(fakesd_kill(g.sd, SIGKILL), 0);
		ck_assert_int_ge(fakesd_wait_exit(g.sd, TL_WAIT_MS), 0);
		ck_assert_int_eq(fakesd_drop(g.sd, stored), 1);
		fd = memfd_create("other", MFD_CLOEXEC);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(fakesd_plant(g.sd, stored, fd), 0);
		close(fd);
		rig_start(&g);
	}
	ck_assert_int_eq(ibc_ping(cl, NULL, 0), 0);
	wait_event(cl, &seen, _i % 2 ? TL_WAIT_MS : 300);
	after = domain_now(&g);
	if (_i % 2 == 0) {
		ck_assert_int_eq(seen.n, 0);
		ck_assert_uint_eq(after.used.xrcds, before.used.xrcds);
		ck_assert_int_eq(ibc_xrcd_open(x, name, 0, &again), 0);
		ck_assert_uint_eq(ibc_xrcd_ino(again), ino);
		ck_assert_int_eq(ibc_xrcd_close(again), 0);
		/* In the store again, for the next restart. */
		store_wait_count(&g, stored, 1);
	} else {
		ck_assert_int_eq(seen.n, 1);
		ck_assert_uint_eq(seen.id, ibc_xrcd_id(p));
		ck_assert_msg(strstr(seen.why, why), "%s", seen.why);
		ck_assert_uint_eq(after.used.xrcds, before.used.xrcds - 1);
		ck_assert_int_eq(ibc_xrcd_open(x, name, 0, &again), -ENOENT);
		snprintf(log_line, sizeof(log_line),
			 "is not adopted, its opens end: %s", why);
		ck_assert_int_eq(tl_count_in_file(g.log, log_line), 1);
		store_wait_count(&g, stored, 0);
	}
	ck_assert_int_eq(ibc_xrcd_close(d), 0);
	ck_assert_int_eq(ibc_xrcd_close(p), 0);
	after = domain_now(&g);
	ck_assert_uint_eq(after.used.xrcds, 0);
	ibc_disconnect(cl);
	rig_free(&g);
}
END_TEST

/* Where, among the fake systemd's events from @from on, the first and
 * last with op @op and a name starting with @prefix are (-1: none). */
static void events_find(struct rig *g, size_t from, char op, const char *prefix,
			long *ret_first, long *ret_last)
{
	char got_op, name[64];

	*ret_first = *ret_last = -1;
	for (size_t i = from;
	     fakesd_event(g->sd, i, &got_op, name, sizeof(name)) == 0; i++) {
		if (got_op != op || strncmp(name, prefix, strlen(prefix)) != 0)
			continue;
		if (*ret_first < 0)
			*ret_first = (long)i;
		*ret_last = (long)i;
	}
}

/*
 * The contexts that hold the XRC domains across restores (verbs; the
 * soft device keeps none, so three are planted here, as restores killed
 * twice in the middle left them before): every stored one holds every
 * name, since a restore stores its new one only once it held them all,
 * so the restore keeps the newest it finds and lets the others go at
 * once, before the names; the newest goes only after them (its own new
 * one is stored before that, on verbs). So a kill at any point of a
 * restore leaves at most two per device (the newest old one and the new
 * one), and the next restore takes that back to one. The names' phase
 * shows in the store's events by a declared name whose file was replaced
 * (xrcd_file_changed): its file leaves the store there. Before, a
 * restore held every stored context to its end, and each restore killed
 * after storing its own left one more.
 */
START_TEST(xrcd_ctx_newest_kept)
{
	long named, gone[3], last;
	struct ibc_xrcd *xr[3], *again;
	char name[64], stored[64];
	struct ibc_ctx *x;
	struct rig g;
	size_t from;
	int fd;

	SKIP_WITHOUT_STATE_CONF(&g, xrcd_conf());
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), i ? "n%d" : "decl", i);
		ck_assert_int_eq(ibc_xrcd_open(x, name, O_CREAT, &xr[i]), 0);
	}
	snprintf(stored, sizeof(stored), "rb.xrcd.%" PRIu64,
		 ibc_xrcd_ino(xr[0]));
	store_wait_count(&g, "rb.xrcd.", 3);
	snprintf(spoil_path, sizeof(spoil_path), "%s/xrcd/d.decl", g.run);
	spoil_ino = 0;
	ck_assert_int_eq(fakesd_kill(g.sd, SIGKILL), 0);
	ck_assert_int_ge(fakesd_wait_exit(g.sd, TL_WAIT_MS), 0);
	xrcd_file_other(&g);
	for (int i = 0; i < 3; i++) {
		fd = memfd_create("ctx", MFD_CLOEXEC);
		ck_assert_int_ge(fd, 0);
		snprintf(name, sizeof(name), "rb.xrcd-ctx.soft0.%d", 101 + i);
		ck_assert_int_eq(fakesd_plant(g.sd, name, fd), 0);
		close(fd);
	}
	from = fakesd_events(g.sd);
	rig_start(&g);
	ck_assert_int_eq(ibc_ping(g.cl, NULL, 0), 0);
	store_wait_count(&g, "rb.xrcd-ctx.", 0);
	store_wait_count(&g, stored, 0);
	events_find(&g, from, 'x', stored, &named, &last);
	ck_assert_int_ge(named, 0);
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "rb.xrcd-ctx.soft0.%d", 101 + i);
		events_find(&g, from, 'x', name, &gone[i], &last);
		ck_assert_int_ge(gone[i], 0);
	}
	ck_assert_msg(gone[0] < named && gone[1] < named && gone[2] > named,
		      "the contexts went at %ld, %ld and %ld (the newest), "
		      "the names' phase at %ld",
		      gone[0], gone[1], gone[2], named);
	ck_assert_int_eq(ibc_xrcd_open(x, "n1", 0, &again), 0);
	ck_assert_uint_eq(ibc_xrcd_ino(again), ibc_xrcd_ino(xr[1]));
	ck_assert_int_eq(ibc_xrcd_close(again), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(ibc_xrcd_close(xr[i]), 0);
	close(spoil_fd);
	spoil_fd = -1;
	rig_free(&g);
}
END_TEST

/* Names xrcd_ctx_kills_bounded opens, and the restores it kills. */
#define CTX_NAMES 8
#define CTX_KILLS 6

/* The stored contexts holding soft0's XRC domains: how many, and the
 * highest number among their names. */
static size_t stored_ctxs(struct rig *g, uint64_t *ret_top)
{
	const char *prefix = "rb.xrcd-ctx.soft0.";
	char got[256];
	size_t n = 0;
	int fd;

	*ret_top = 0;
	for (size_t i = 0;
	     fakesd_store_get(g->sd, i, got, sizeof(got), &fd) == 0; i++) {
		close(fd);
		if (strncmp(got, prefix, strlen(prefix)) != 0)
			continue;
		n++;
		if (strtoull(got + strlen(prefix), NULL, 10) > *ret_top)
			*ret_top = strtoull(got + strlen(prefix), NULL, 10);
	}
	return n;
}

/*
 * Restores SIGKILLed again and again inside the XRCD family's restore
 * (the fault point xrcd-restore-name, at a seeded name each time), each
 * finding three stored contexts for soft0 (planted: the soft device keeps
 * none, and three is what two such kills left before): each leaves at
 * most two, the newest among them, whatever the number of kills; a last
 * whole restore brings every session and name back. Before, each killed
 * restore left every context it found.
 */
START_TEST(xrcd_ctx_kills_bounded)
{
#ifdef RDMAB_FAULT_POINTS
	struct ibc_xrcd *xr[CTX_NAMES], *again;
	uint64_t seq = 100, top;
	unsigned int seed = 25;
	char name[64], point[64];
	char *argv[13];
	struct ibc_ctx *x;
	struct rig g;
	size_t n;
	int fd;

	SKIP_WITHOUT_STATE(&g);
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	for (int i = 0; i < CTX_NAMES; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		ck_assert_int_eq(ibc_xrcd_open(x, name, O_CREAT, &xr[i]), 0);
	}
	store_wait_count(&g, "rb.xrcd.", CTX_NAMES);
	ck_assert_int_eq(fakesd_kill(g.sd, SIGKILL), 0);
	ck_assert_int_ge(fakesd_wait_exit(g.sd, TL_WAIT_MS), 0);
	for (int kill = 0; kill < CTX_KILLS; kill++) {
		while (stored_ctxs(&g, &top) < 3) {
			fd = memfd_create("ctx", MFD_CLOEXEC);
			ck_assert_int_ge(fd, 0);
			snprintf(name, sizeof(name),
				 "rb.xrcd-ctx.soft0.%" PRIu64, ++seq);
			ck_assert_int_eq(fakesd_plant(g.sd, name, fd), 0);
			close(fd);
		}
		snprintf(point, sizeof(point), "xrcd-restore-name@%d",
			 1 + rand_r(&seed) % CTX_NAMES);
		ck_assert_int_eq(setenv(FAULT_ENV, point, 1), 0);
		rig_argv(&g, argv);
		ck_assert_int_eq(fakesd_start(g.sd, argv, g.log), 0);
		ck_assert_int_eq(unsetenv(FAULT_ENV), 0);
		ck_assert_int_ge(fakesd_wait_exit(g.sd, TL_WAIT_MS), 0);
		n = stored_ctxs(&g, &top);
		ck_assert_msg(n <= 2 && top == seq,
			      "kill %d (%s): %zu stored, the newest %" PRIu64
			      " of %" PRIu64,
			      kill, point, n, top, seq);
	}
	ck_assert_int_eq(tl_count_in_file(g.log, "fault point "
						 "xrcd-restore-name: SIGKILL"),
			 CTX_KILLS);
	rig_start(&g);
	ck_assert_int_eq(ibc_ping(g.cl, NULL, 0), 0);
	ck_assert_int_eq(tl_count_in_file(g.log, "starting clean"), 0);
	/* The soft device holds them in no context: none is left. */
	ck_assert_uint_eq(stored_ctxs(&g, &top), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "n0", 0, &again), 0);
	ck_assert_uint_eq(ibc_xrcd_ino(again), ibc_xrcd_ino(xr[0]));
	ck_assert_int_eq(ibc_xrcd_close(again), 0);
	for (int i = 0; i < CTX_NAMES; i++)
		ck_assert_int_eq(ibc_xrcd_close(xr[i]), 0);
	rig_free(&g);
#else
	fprintf(stderr, "check_restart: no fault points in this build "
			"(./configure --enable-fault-points): "
			"xrcd_ctx_kills_bounded skipped\n");
#endif
}
END_TEST

/* --- P1: a detached owner's pidfd in the fd store ---------------------- */

/* A detached owner whose process exits while no daemon runs: its
 * process's pidfd was in the store under its client id, the restore
 * finds the process gone through it (not by pid and start time: nothing
 * says the pidfd was missing), destroys its objects, and the pidfd
 * leaves the store. */
START_TEST(detached_pidfd_exited_while_down)
{
	char name[64];
	struct rig g;
	pid_t pid;
	int st;

	SKIP_WITHOUT_STATE(&g);
	pid = detached_then_killed(&g, name, sizeof(name), NULL);
	ck_assert_uint_eq(store_count(&g, "rb.pidfd."), 1);
	kill(pid, SIGKILL);
	ck_assert_int_ge(tl_wait_pid(pid, TL_WAIT_MS, &st), 0);
	rig_start(&g);
	ck_assert_int_eq(ibc_ping(g.cl, NULL, 0), 0);
	wait_all_gone(&g);
	store_wait_count(&g, "rb.pidfd.", 0);
	ck_assert_int_eq(tl_count_in_file(g.log, "pidfd is not in the fd "
						 "store"),
			 0);
	ck_assert_int_eq(tl_count_in_file(g.log, "starting clean"), 0);
	rig_free(&g);
}
END_TEST

/* Process @arg's pid and start time: what the record of a process
 * whose pid was reused within the clock tick it started in says of the
 * new one. The record's pidfd key is checked (*@arg's), and with
 * @key_lost, zeroed (written before the pidfd was stored). */
struct owner_as {
	pid_t as;
	uint64_t key;
	bool key_lost;
};

static void owner_forged_as(Rdmab__State__Owner *m, void *arg)
{
	struct owner_as *a = arg;

	ck_assert_uint_eq(m->pidfd, a->key);
	m->pid = (uint32_t)a->as;
	ck_assert_int_eq(obj_proc_start(a->as, &m->start_time), 0);
	if (a->key_lost)
		m->pidfd = 0;
}

/* A detached owner's process exits while no daemon runs and its pid is
 * taken by another process that started in the same clock tick (forged
 * in the state: the pid and start time of a live process). With its
 * pidfd in the store the owner is seen gone and its objects destroyed
 * (_i = 0; _i = 2: its record names no pidfd, as when killed between
 * the store and the record, and the one under its own id is used);
 * with the pidfd lost (_i = 1: a state without it) the pid and start
 * time are all there is, and the other process is taken for it: its
 * objects stay, until that process exits. */
START_TEST(detached_pidfd_pid_reused)
{
	struct owner_as a = { .key_lost = _i == 2 };
	char name[64];
	size_t detached;
	struct rig g;
	pid_t pid;
	int st;

	SKIP_WITHOUT_STATE(&g);
	a.as = tl_spawn_sleeper();
	ck_assert_int_gt(a.as, 0);
	pid = detached_then_killed(&g, name, sizeof(name), &a.key);
	kill(pid, SIGKILL);
	ck_assert_int_ge(tl_wait_pid(pid, TL_WAIT_MS, &st), 0);
	plant_owner_edit(&g, pid, owner_forged_as, &a);
	if (_i == 1)
		ck_assert_int_eq(fakesd_drop(g.sd, name), 1);
	rig_start(&g);
	ck_assert_int_eq(ibc_ping(g.cl, NULL, 0), 0);
	ck_assert_int_eq(tl_count_in_file(g.log, "starting clean"), 0);
	if (_i != 1) {
		wait_all_gone(&g);
		store_wait_count(&g, "rb.pidfd.", 0);
	} else {
		/* Taken for alive: its objects stay while the other process
		 * lives, watched through a pidfd of that one's. */
		ck_assert_int_eq(tl_count_in_file(g.log, "pidfd is not in "
							 "the fd store"),
				 1);
		tl_sleep_ms(300);
		ck_assert_uint_eq(
			objects_in(&g, IBC_OBJECT_DETACHED, &detached), 1);
		ck_assert_uint_eq(detached, 1);
		store_wait_count(&g, "rb.pidfd.", 1);
	}
	kill(a.as, SIGKILL);
	ck_assert_int_ge(tl_wait_pid(a.as, TL_WAIT_MS, &st), 0);
	wait_all_gone(&g);
	store_wait_count(&g, "rb.pidfd.", 0);
	rig_free(&g);
}
END_TEST

/* One process that ended two sessions holding objects costs one place in
 * the store, which both owners' records name: after a restart both come
 * back watched through it, and its exit destroys both owners' objects
 * and frees the place. */
START_TEST(detached_pidfd_shared)
{
	struct ibc_client_entry *e;
	size_t detached, k;
	struct rig g;
	pid_t pid;
	int st;

	SKIP_WITHOUT_STATE(&g);
	pid = holder_spawn_in(&g, HOLD_CQ | HOLD_TWICE);
	ck_assert_int_eq(ibc_list_clients(g.cl, &e, sizeof(*e), &k), 0);
	for (size_t i = 0; i < k; i++)
		if (e[i].pid == (uint32_t)pid)
			ck_assert_int_eq(ibc_admin_evict(g.cl, e[i].id), 0);
	ibc_list_free(e);
	{
		int64_t end = tl_now_ms() + TL_WAIT_MS;

		while (objects_in(&g, IBC_OBJECT_DETACHED, &detached) &&
		       detached < 2 && tl_now_ms() < end)
			tl_sleep_ms(20);
		ck_assert_uint_eq(detached, 2);
	}
	store_wait_count(&g, "rb.pidfd.", 1);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	ck_assert_uint_eq(objects_in(&g, IBC_OBJECT_DETACHED, &detached), 2);
	ck_assert_uint_eq(detached, 2);
	store_wait_count(&g, "rb.pidfd.", 1);
	ck_assert_int_eq(tl_count_in_file(g.log, "pidfd is not in the fd "
						 "store"),
			 0);
	kill(pid, SIGKILL);
	ck_assert_int_ge(tl_wait_pid(pid, TL_WAIT_MS, &st), 0);
	wait_all_gone(&g);
	store_wait_count(&g, "rb.pidfd.", 0);
	rig_free(&g);
}
END_TEST

/* A uid's processes that end sessions holding objects and stay alive
 * take places in the store only as far as their watches hold pidfds:
 * connections_per_uid of them (3 here); the fourth process is watched by
 * a timer and keeps no place, before and after a restart; their exits
 * free every place. */
START_TEST(pidfd_places_bounded)
{
	pid_t pid[4];
	size_t detached;
	struct rig g;
	int st;

	SKIP_WITHOUT_STATE_CONF(&g, "[broker]\nconnections_per_uid = 3\n");
	for (int i = 0; i < 4; i++) {
		pid[i] = holder_spawn(&g, false);
		ck_assert_uint_ge(evict_pid(&g, pid[i]), 1);
	}
	ck_assert_uint_eq(objects_in(&g, IBC_OBJECT_DETACHED, &detached), 4);
	ck_assert_uint_eq(detached, 4);
	store_wait_count(&g, "rb.pidfd.", 3);
	ck_assert_int_eq(kill_and_restart(&g), 0);
	ck_assert_uint_eq(objects_in(&g, IBC_OBJECT_DETACHED, &detached), 4);
	ck_assert_uint_eq(detached, 4);
	store_wait_count(&g, "rb.pidfd.", 3);
	for (int i = 0; i < 4; i++) {
		kill(pid[i], SIGKILL);
		ck_assert_int_ge(tl_wait_pid(pid[i], TL_WAIT_MS, &st), 0);
	}
	wait_all_gone(&g);
	store_wait_count(&g, "rb.pidfd.", 0);
	rig_free(&g);
}
END_TEST

/* --- R1 (W8): the RSS rebuild's and teardown's crash windows ----------- */

/* The RSS family's fault points, in the order a rebuild (a WQ leaves a
 * table of two), a teardown (the owner destroys the table) or a create
 * passes them. */
static const char *const rss_points[] = {
	"rss-leave-made",  "rss-leave-journaled", "rss-leave-flow",
	"rss-leave-qp",	   "rss-leave-tbl",	  "rss-teardown-flow",
	"rss-teardown-qp", "rss-teardown-tbl",	  "rss-create-made",
};
#define RSS_POINTS (sizeof(rss_points) / sizeof(rss_points[0]))

#ifdef RDMAB_FAULT_POINTS

struct rss_killer {
	/* A create: two WQs on @cq and the table over them. */
	struct ibc_ctx *x;
	struct ibc_cq *cq;
	struct ibc_wq **wq;
	struct ibc_rss **rss;
	/* Else a rebuild (its WQ goes) or a teardown. */
	bool leave;
	int ret;
};

/* The request the daemon dies in: the table's create, a WQ's destroy (a
 * rebuild) or the table's. */
static void *rss_killer_main(void *arg)
{
	struct rss_killer *k = arg;

	if (k->x)
		k->ret = rss_two(k->x, k->cq, 0, k->wq, k->rss);
	else
		k->ret = k->leave ? ibc_wq_destroy(k->wq[1]) :
				    ibc_rss_destroy(*k->rss);
	return NULL;
}
#endif

/*
 * The daemon SIGKILLed at each of the RSS family's fault points while the
 * rig's client rebuilds its table over two WQs (one WQ's destroy),
 * destroys it or creates it; then started again. What the restore gives
 * back is what the daemon had done to the device at the kill: the old
 * table while a rebuild's new parts were not journaled yet (made but
 * unnamed: the soft device's died with the daemon, nothing unaccounted),
 * the new one from the moment it was journaled, the old parts retiring
 * (never the old record, whose handles were freed); nothing once a
 * teardown's first part went, nor when a create's parts were made but not
 * journaled (soft: died with the daemon; verbs: unaccounted,
 * tests/hw/hw_restart_rss.c). The request fails with -EAGAIN; the WQs'
 * destroys work after; charges back to the start.
 */
START_TEST(rss_killed_at_fault_point)
{
#ifdef RDMAB_FAULT_POINTS
	const char *point = rss_points[_i];
	bool leave = strncmp(point, "rss-leave-", 10) == 0;
	bool create = strcmp(point, "rss-create-made") == 0;
	bool rebuilt = leave && strcmp(point, "rss-leave-made") != 0;
	struct ibc_domain_info base, now;
	struct ibc_rss_info ri;
	struct ibc_wq *wq[2];
	struct ibc_rss *rss = NULL;
	struct rss_killer k = { .wq = wq, .rss = &rss, .leave = leave };
	struct ibc_cq *cq;
	struct ibc_ctx *x;
	uint64_t ids[2], wa[2];
	char said[96];
	struct rig g;
	pthread_t t;

	ck_assert_int_eq(setenv(FAULT_ENV, point, 1), 0);
	SKIP_WITHOUT_STATE(&g);
	ck_assert_int_eq(unsetenv(FAULT_ENV), 0);
	base = domain_now(&g);
	ck_assert_int_eq(ibc_open(g.cl, "soft0", &x), 0);
	ck_assert_int_eq(ibc_cq_create(x, 4, &cq), 0);
	if (create) {
		k.x = x;
		k.cq = cq;
	} else {
		ck_assert_int_eq(rss_two(x, cq, 0, wq, &rss), 0);
	}
	ck_assert_int_eq(pthread_create(&t, NULL, rss_killer_main, &k), 0);
	ck_assert_int_ge(fakesd_wait_exit(g.sd, TL_WAIT_MS), 0);
	snprintf(said, sizeof(said), "fault point %s: SIGKILL", point);
	ck_assert_int_eq(tl_count_in_file(g.log, said), 1);
	rig_start(&g);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_msg(k.ret == -EAGAIN, "%s: the request gave %d, not -EAGAIN",
		      point, k.ret);
	ck_assert_int_eq(tl_count_in_file(g.log, "starting clean"), 0);
	for (int i = 0; i < 2; i++)
		ids[i] = ibc_wq_id(wq[i]);
	now = domain_now(&g);
	ck_assert_uint_eq(now.unaccounted, 0);
	if (!leave) {
		ck_assert_msg(rss_listed(&g, &ri, wa) == 0,
			      "%s: the table came back, %s", point,
			      create ? "never journaled" :
				       "a part of it destroyed");
		ck_assert_uint_eq(now.used.rss_tables, 0);
		/* The library keeps what failed; the daemon has none. */
		if (!create)
			ck_assert_int_eq(ibc_rss_destroy(rss), -ENOENT);
	} else {
		ck_assert_uint_eq(rss_listed(&g, &ri, wa), 1);
		ck_assert_msg(ri.num_wqs == (rebuilt ? 1 : 2) &&
				      ri.rebuilds == (rebuilt ? 1 : 0),
			      "%s: %u WQs, %u rebuilds after the restart",
			      point, ri.num_wqs, ri.rebuilds);
		ck_assert_uint_eq(wa[0], ids[0]);
		ck_assert_uint_eq(now.used.rss_tables, 1);
		ck_assert_int_eq(ibc_wq_destroy(wq[1]), 0);
		ck_assert_uint_eq(rss_listed(&g, &ri, wa), 1);
		ck_assert_uint_eq(ri.num_wqs, 1);
		ck_assert_uint_eq(ri.rebuilds, 1);
		ck_assert_int_eq(ibc_rss_destroy(rss), 0);
	}
	/* The WQs go: no table pins them. */
	for (int i = leave ? 0 : 1; i >= 0; i--)
		ck_assert_int_eq(ibc_wq_destroy(wq[i]), 0);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	now = domain_now(&g);
	ck_assert_uint_eq(now.used.rss_tables, 0);
	ck_assert_uint_eq(now.used.objects, base.used.objects);
	ck_assert_uint_eq(now.unaccounted, 0);
	rig_free(&g);
#else
	if (_i == 0)
		fprintf(stderr, "check_restart: no fault points in this build "
				"(./configure --enable-fault-points): "
				"rss_killed_at_fault_point skipped\n");
#endif
}
END_TEST

static Suite *restart_suite(void)
{
	Suite *s = suite_create("restart");
	TCase *tc = tcase_create("faults");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, whole_state_keeps_the_session);
	tcase_add_test(tc, restore_tells_systemd_nothing_it_holds);
	tcase_add_loop_test(tc, corrupt_state_starts_clean, 0, 6);
	tcase_add_test(tc, truncated_state_starts_clean);
	tcase_add_test(tc, stop_ends_the_sessions);
	tcase_add_test(tc, planted_fds);
	tcase_add_test(tc, client_dead_while_down);
	tcase_add_test(tc, serials_never_reused);
	tcase_add_test(tc, request_read_not_stored_eagain);
	tcase_add_test(tc, inflight_marks_queued_reply);
	tcase_add_test(tc, detached_owner_kept);
	tcase_add_test(tc, detached_owner_pid_reused);
	tcase_add_test(tc, hold_count_kept);
	tcase_add_test(tc, format2_holds_restored);
	tcase_add_test(tc, import_kept);
	tcase_add_test(tc, restore_not_compacted);
	tcase_add_test(tc, restore_journal_fails_goes_on);
	tcase_add_test(tc, journal_not_made_goes_on);
	tcase_add_test(tc, rekeyed_kept);
	tcase_add_test(tc, store_full);
	tcase_add_test(tc, family_uses_restored);
	tcase_add_test(tc, dm_mr_restored);
	tcase_add_test(tc, dm_memfd_lost_drops_the_dm);
	tcase_add_test(tc, dm_status_page_lost_drops_its_dms);
	tcase_add_test(tc, dm_store_full_drops_those);
	tcase_add_test(tc, family_failure_keeps_no_detached);
	tcase_add_test(tc, family_failure_after_dm_keeps_no_dm);
	tcase_add_test(tc, dm_left_kept);
	tcase_add_test(tc, dm_ids_never_reused);
	tcase_add_loop_test(tc, detached_ctx_no_session, 0, 2);
	tcase_add_test(tc, detached_dm_mr_owner_gone);
	tcase_add_test(tc, detached_families_no_session);
	tcase_add_test(tc, cgroup_session_kept);
	tcase_add_test(tc, cgroup_detached_no_session);
	tcase_add_test(tc, cgroup_private_session_kept);
	tcase_add_loop_test(tc, older_state_cgroup_detached, 0, 2);
	tcase_add_test(tc, older_state_cgroup_moved_not_merged);
	tcase_add_test(tc, detached_dm_only_no_session);
	tcase_add_loop_test(tc, detached_rss_kept, 0, 2);
	tcase_add_test(tc, unnamed_kept);
	tcase_add_test(tc, unnamed_rekeyed_kept);
	tcase_add_test(tc, dead_import_kept);
	tcase_add_test(tc, imports_after_named);
	tcase_add_test(tc, rekeys_kept);
	tcase_add_test(tc, adopted_fds_counted_once);
	tcase_add_test(tc, reexec_ready_only_from_the_child);
	tcase_add_loop_test(tc, bad_family_record_starts_clean, 0,
			    FAMILY_COUNT);
	tcase_add_test(tc, store_share_per_uid);
	tcase_add_test(tc, store_full_hello_told);
	tcase_add_loop_test(tc, intent_open_at_kill, 0, 2);
	tcase_add_loop_test(tc, register_lost_in_restart_resent, 0, 2);
	tcase_add_test(tc, register_sent_while_down_served);
	tcase_add_test(tc, window_registered_kept);
	/* X1: the XRCD directory and holds. */
	tcase_add_test(tc, xrcd_dir_from_the_store);
	tcase_add_loop_test(tc, xrcd_dir_refused, 0, 4);
	tcase_add_test(tc, xrcd_hold_kept);
	/* P1: a detached owner's pidfd in the fd store. */
	tcase_add_test(tc, detached_pidfd_exited_while_down);
	tcase_add_loop_test(tc, detached_pidfd_pid_reused, 0, 3);
	tcase_add_test(tc, detached_pidfd_shared);
	tcase_add_test(tc, pidfd_places_bounded);
	/* R1 (W8) */
	tcase_add_loop_test(tc, rss_killed_at_fault_point, 0, RSS_POINTS);
	suite_add_tcase(s, tc);
	/* X2: an XRCD's file changed while no daemon ran (CK_RUN_CASE=xrcd
	 * runs them alone). */
	tc = tcase_create("xrcd");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, xrcd_file_changed, 0, 8);
	tcase_add_loop_test(tc, xrcd_file_unstored, 0, 4);
	tcase_add_test(tc, xrcd_ctx_newest_kept);
	tcase_add_test(tc, xrcd_ctx_kills_bounded);
	suite_add_tcase(s, tc);
	/* Alone, for make state-fixture (CK_RUN_CASE=fixture). */
	tc = tcase_create("fixture");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, state_fixture_restores, 0,
			    sizeof(state_fixtures) / sizeof(state_fixtures[0]));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("check_restart", restart_suite());
}
