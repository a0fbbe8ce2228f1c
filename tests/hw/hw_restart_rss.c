// SPDX-License-Identifier: MIT
/*
 * A detached session's RSS object across a SIGKILL of the daemon on real
 * mlx5 hardware (issue 25); exits 77 (skipped) without an mlx5 device.
 * Unverified until someone runs it on a ConnectX-5 or newer: see
 * README.md.
 *
 * The daemon runs under the fake systemd of the restart tests
 * (tests/fakesd.h), which keeps its fd store across the kill. A holder
 * process makes two WQs in the domain's imported context and the broker
 * an RSS object over them and a WQ of the suite's own session; the
 * holder's session is evicted while the process lives, so its objects
 * are detached. libibverbs imports only a context, a PD, an MR and a DM:
 * the table, the RSS QP and the flow rule cannot be imported, so the new
 * daemon adopts the context from the store (ibv_import_device of the
 * stored cmd_fd) and takes the parts back by handle. The suite checks
 * that the table is listed as before (id, WQs, QP number, owner, charge)
 * and that the kernel still holds the same flow, QP and table handles in
 * the context; that the suite's WQ leaving it rebuilds it (the adopted
 * handles destroyed, three new ones); and that the holder's SIGKILL
 * destroys it by handle while the context lives on (the suite's session
 * holds it): none of its handles left, nothing listed, nothing charged,
 * nothing unaccounted. The handles are the kernel's list of the suite's
 * own imported context (UVERBS_METHOD_INFO_HANDLES on its cmd_fd), not
 * `rdma resource show qp`: that dump queries each QP, which mlx5 refuses
 * for an RSS QP (-ENOSYS), and counts every process's QPs. An mlx5 whose
 * port 1 is not Ethernet makes no RSS: the suite skips (77).
 *
 * Then, in a build with fault points (./configure --enable-fault-points,
 * daemon/util/fault.h), the daemon is SIGKILLed at each of the RSS
 * family's points while the suite rebuilds its own table over two WQs
 * (one WQ's destroy), destroys it or creates it, and started again: the
 * context holds what the restore says (the new parts once journaled, the
 * old ones retiring, destroyed at the restore since the kernel lists
 * them; nothing after a teardown's part went), and the WQs' destroys work
 * after; but when new parts were made and not yet journaled (the one
 * window left): they stay, unaccounted, pinning their WQs.
 *
 * With --soft it runs the same against the soft device, whose table is a
 * record made again by the restore; the kernel's handle lists are
 * skipped, on SKIP lines.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HW_NAME "hw_restart_rss"
#include "daemon/device/verbs/uverbs.h"
#include "daemon/util/fault.h"
#include "tests/fakesd.h"
#include "tests/hw/hwlib.h"

static struct fakesd *sd;
static char run_dir[300], log_path[300];
static const char *dev_name;
/* The holder process while it runs (killed by main() on a failure). */
static pid_t holder_pid;

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* rdmabrokerd under the fake systemd, ready. */
static int daemon_start(const char *bin)
{
	char *argv[] = { (char *)bin,
			 "--foreground",
			 "--device",
			 hw_mode == HW_SOFT ? "soft" : "verbs",
			 "--socket",
			 hw_sock,
			 "--runtime-dir",
			 run_dir,
			 "--config",
			 hw_conf,
			 NULL };
	int ret = fakesd_start(sd, argv, log_path);

	return ret < 0 ? ret : fakesd_wait_ready(sd, 20000);
}

/* The listener the fake systemd passes as its socket unit's, and the
 * store; an empty configuration (the suite runs as root: an
 * administrator may claim any match). */
static int rig_make(const char *bin, int *ret_lfd)
{
	struct fakesd_opts o = { .store_max = 4096,
				 .listen_name = "rdmabrokerd.socket" };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	FILE *f;
	int lfd;

	if (hw_mkdir("hw_restart_rss") < 0)
		return -1;
	snprintf(run_dir, sizeof(run_dir), "%s/run", hw_dir);
	snprintf(log_path, sizeof(log_path), "%s/daemon.log", hw_dir);
	f = fopen(hw_conf, "we");
	if (!f || fclose(f) != 0)
		return -1;
	if (strlen(hw_sock) >= sizeof(sa.sun_path))
		return -1;
	memcpy(sa.sun_path, hw_sock, strlen(hw_sock) + 1);
	lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(lfd, 16) < 0)
		return -1;
	*ret_lfd = lfd;
	o.dir = hw_dir;
	o.listen_fd = lfd;
	if (fakesd_new(&o, &sd) < 0)
		return -1;
	return daemon_start(bin);
}

/* The directory goes, with what the daemon left in it (killed last by
 * fakesd_free(), it removed nothing): an empty XRCD directory, its lock. */
static void rig_remove(void)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/xrcd", run_dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/rdmabrokerd.lock", run_dir);
	unlink(path);
	rmdir(run_dir);
	unlink(log_path);
	unlink(hw_conf);
	unlink(hw_sock);
	rmdir(hw_dir);
}

/* An RSS object in @x over the @n WQs @ids, hashing UDP over IPv4 to
 * @port, its table 2^@log entries: ibc_rss_create()'s answer. */
static int udp_rss(struct ibc_ctx *x, uint64_t *ids, uint32_t n, uint32_t log,
		   uint32_t port, struct ibc_rss **ret)
{
	struct ibc_rss_attr a = {
		.port_num = 1,
		.log_ind_tbl_size = log,
		.num_wqs = n,
		.wq_ids = ids,
		.hash_fields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
			       IBV_RX_HASH_SRC_PORT_UDP |
			       IBV_RX_HASH_DST_PORT_UDP,
		.match = { .af = AF_INET,
			   .l4_proto = IPPROTO_UDP,
			   .dst_port = port,
			   .port_mask = 0xffff },
	};

	memset(a.hash_key, 0x6d, sizeof(a.hash_key));
	return ibc_rss_create(x, &a, ret);
}

/* The holder: two WQs on a CQ, and the RSS object over them and @wq;
 * its pid, the RSS id on @ids_fd, then it waits to be killed. */
static pid_t holder_spawn(uint64_t wq, int *ret_rd)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		struct ibc_client *cl;
		struct ibc_ctx *x;
		struct ibc_cq *cq;
		struct ibc_wq *w[2];
		struct ibc_rss *rss;
		uint64_t ids[3], id;

		if (hw_connect(&cl) < 0 || ibc_open(cl, dev_name, &x) < 0 ||
		    ibc_cq_create(x, 16, &cq) < 0 ||
		    ibc_wq_create(x, cq, NULL, &w[0]) < 0 ||
		    ibc_wq_create(x, cq, NULL, &w[1]) < 0)
			_exit(1);
		ids[0] = ibc_wq_id(w[0]);
		ids[1] = ibc_wq_id(w[1]);
		ids[2] = wq;
		if (udp_rss(x, ids, 3, 2, 9999, &rss) < 0) {
			fprintf(stderr, HW_NAME ": the holder's RSS: %s\n",
				ibc_last_error());
			_exit(1);
		}
		id = ibc_rss_id(rss);
		if (write(p[1], &id, sizeof(id)) != sizeof(id))
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	*ret_rd = p[0];
	return pid;
}

/* The one RSS object listed now into @ret (its lists are not kept) and
 * its first RSS_WQS WQ ids into @ret_wqs (zeroes past num_wqs): how many
 * are listed, or -1. */
#define RSS_WQS 3
static int rss_one(struct ibc_client *cl, struct ibc_rss_info *ret,
		   uint64_t *ret_wqs)
{
	struct ibc_rss_info *r;
	size_t n;

	if (ibc_list_rss(cl, &r, sizeof(*r), &n) < 0)
		return -1;
	if (n == 1) {
		*ret = r[0];
		memset(ret_wqs, 0, RSS_WQS * sizeof(*ret_wqs));
		for (uint32_t i = 0; i < r[0].num_wqs && i < RSS_WQS; i++)
			ret_wqs[i] = r[0].wq_ids[i];
		ret->wq_ids = NULL;
		ret->wq_owners = NULL;
	}
	ibc_list_free(r);
	return (int)n;
}

/* The kernel's handles of one kind in the suite's own context. */
struct hset {
	uint32_t h[64];
	int n;
};

/* The RSS parts' kinds. */
static const unsigned int part_kind[3] = { IBC_OBJ_FLOW, IBC_OBJ_QP,
					   IBC_OBJ_RWQ_IND_TBL };

/* The handles of every part kind in @x now (the kernel's list of the
 * context's descriptor, whoever made them); -1 when it failed. */
static int hsets_get(struct ibc_ctx *x, struct hset ret[3])
{
	int fd = ibc_verbs_context(x)->cmd_fd;

	for (int k = 0; k < 3; k++) {
		ret[k].n = uverbs_handles(fd, part_kind[k], ret[k].h, 64);
		if (ret[k].n < 0 || ret[k].n == 64)
			return -1;
	}
	return 0;
}

static bool hset_has(const struct hset *s, uint32_t h)
{
	for (int i = 0; i < s->n; i++)
		if (s->h[i] == h)
			return true;
	return false;
}

/* @now is @base plus exactly one handle of each kind, written to
 * @ret_new: true, else false. */
static bool hsets_one_more(const struct hset base[3], const struct hset now[3],
			   uint32_t ret_new[3])
{
	for (int k = 0; k < 3; k++) {
		int extra = 0;

		if (now[k].n != base[k].n + 1)
			return false;
		for (int i = 0; i < now[k].n; i++)
			if (!hset_has(&base[k], now[k].h[i])) {
				ret_new[k] = now[k].h[i];
				extra++;
			}
		if (extra != 1)
			return false;
	}
	return true;
}

/* The suite's context holds @base plus @parts (one handle of each kind)
 * now, and nothing else of those kinds. */
static bool hsets_are(struct ibc_ctx *x, const struct hset base[3],
		      const uint32_t parts[3])
{
	struct hset now[3];
	uint32_t got[3];

	return hsets_get(x, now) == 0 && hsets_one_more(base, now, got) &&
	       memcmp(got, parts, sizeof(got)) == 0;
}

/* The suite's context holds exactly @base now. */
static bool hsets_back(struct ibc_ctx *x, const struct hset base[3])
{
	struct hset now[3];

	if (hsets_get(x, now) < 0)
		return false;
	for (int k = 0; k < 3; k++) {
		if (now[k].n != base[k].n)
			return false;
		for (int i = 0; i < now[k].n; i++)
			if (!hset_has(&base[k], now[k].h[i]))
				return false;
	}
	return true;
}

/* How many objects are listed detached now, or -1. */
static int detached_count(struct ibc_client *cl)
{
	struct ibc_object_info *o;
	size_t n;
	int k = 0;

	if (ibc_list_objects(cl, NULL, &o, sizeof(*o), &n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		k += o[i].state == IBC_OBJECT_DETACHED;
	ibc_list_free(o);
	return k;
}

/* The session of process @pid is evicted: its @want objects stay,
 * detached, once the daemon's loop has ended the session (a kill before
 * that would find it live). */
static int evict(struct ibc_client *cl, pid_t pid, int want)
{
	struct ibc_client_entry *e;
	int64_t end = now_ms() + 5000;
	uint64_t id = 0;
	size_t n;

	if (ibc_list_clients(cl, &e, sizeof(*e), &n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (e[i].pid == (uint32_t)pid)
			id = e[i].id;
	ibc_list_free(e);
	if (!id || ibc_admin_evict(cl, id) < 0)
		return -1;
	while (detached_count(cl) != want && now_ms() < end)
		usleep(20000);
	return detached_count(cl) == want ? 0 : -1;
}

/* The domain @cl is a member of, as listed. */
static int domain_of(struct ibc_client *cl, struct ibc_domain_info *ret)
{
	struct ibc_domain_info *d;
	size_t n;
	int found = -1;

	if (ibc_list_domains(cl, &d, sizeof(*d), &n) < 0)
		return -1;
	for (size_t i = 0; i < n && found < 0; i++)
		if (d[i].members) {
			*ret = d[i];
			found = 0;
		}
	ibc_list_free(d);
	return found;
}

static int run(const char *bin)
{
	struct ibc_rss_info before, after;
	struct ibc_domain_info dom;
	struct ibc_client *cl;
	struct ibc_ctx *x;
	struct ibc_cq *cq;
	struct ibc_wq *wq;
	struct hset base[3], now[3];
	uint32_t parts[3] = { 0 }, rebuilt[3] = { 0 };
	uint64_t wq_before[RSS_WQS], wq_after[RSS_WQS];
	bool kernel = hw_mode == HW_MLX5;
	int rd, st, lfd = -1;
	int64_t end;
	uint64_t id;
	pid_t pid;

	CHECK(rig_make(bin, &lfd) == 0, "the daemon did not start (see %s)",
	      log_path);
	CHECK(hw_connect(&cl) == 0, "connect");
	/* The suite's session holds the domain's context throughout, so
	 * that the kernel objects go by handle, not with the context. */
	CHECK(ibc_open(cl, dev_name, &x) == 0, "open %s", dev_name);
	CHECK(ibc_cq_create(x, 16, &cq) == 0, "CQ");
	CHECK(ibc_wq_create(x, cq, NULL, &wq) == 0, "WQ");
	if (kernel)
		CHECK(hsets_get(x, base) == 0,
		      "the kernel's handle lists of the context");
	pid = holder_spawn(ibc_wq_id(wq), &rd);
	holder_pid = pid;
	CHECK(pid > 0 && read(rd, &id, sizeof(id)) == sizeof(id),
	      "the holder made no RSS object");
	close(rd);
	/* Its CQ, two WQs and the RSS object's table, QP and flow rule. */
	CHECK(evict(cl, pid, 6) == 0,
	      "the holder's session evicted, its 6 objects detached");
	CHECK(rss_one(cl, &before, wq_before) == 1 && before.id == id,
	      "RSS %llu is not listed", (unsigned long long)id);
	if (kernel)
		CHECK(hsets_get(x, now) == 0 &&
			      hsets_one_more(base, now, parts),
		      "the context does not hold one flow, QP and table "
		      "more than before the RSS object");
	CHECK(fakesd_kill(sd, SIGKILL) == 0 && fakesd_wait_exit(sd, 20000) >= 0,
	      "SIGKILL of the daemon");
	CHECK(daemon_start(bin) == 0, "the daemon did not start again");
	CHECK(ibc_ping(cl, NULL, 0) == 0, "the suite's session did not live");
	CHECK(rss_one(cl, &after, wq_after) == 1 && after.id == before.id &&
		      after.client_id == before.client_id &&
		      after.num_wqs == 3 && after.qp_num == before.qp_num &&
		      after.rebuilds == before.rebuilds &&
		      memcmp(wq_after, wq_before, sizeof(wq_after)) == 0,
	      "the detached session's RSS object did not come back as it "
	      "was");
	CHECK(domain_of(cl, &dom) == 0 && dom.used.rss_tables == 1,
	      "the domain is not charged the table again");
	CHECK(detached_count(cl) == 6, "the holder's 6 objects are not "
				       "listed detached");
	if (kernel)
		CHECK(hsets_are(x, base, parts),
		      "the context does not hold the flow %u, QP %u and "
		      "table %u it held before the SIGKILL, alone",
		      parts[0], parts[1], parts[2]);
	else
		HW_SKIP("the kernel's handle lists", "the soft device's");
	printf(HW_NAME ": RSS %llu came back detached after a SIGKILL\n",
	       (unsigned long long)id);
	/* A rebuild of the adopted table: new parts, the adopted ones
	 * destroyed by handle (only their absence shows it: the rebuild
	 * logs, and goes on, when an old part stays). */
	CHECK(ibc_wq_destroy(wq) == 0, "the suite's WQ");
	CHECK(rss_one(cl, &after, wq_after) == 1 && after.num_wqs == 2 &&
		      after.rebuilds == before.rebuilds + 1 &&
		      wq_after[0] == wq_before[0] &&
		      wq_after[1] == wq_before[1],
	      "the table was not rebuilt without the suite's WQ");
	if (kernel)
		CHECK(hsets_get(x, now) == 0 &&
			      hsets_one_more(base, now, rebuilt) &&
			      rebuilt[0] != parts[0] &&
			      rebuilt[1] != parts[1] && rebuilt[2] != parts[2],
		      "the rebuild did not replace the adopted flow %u, QP "
		      "%u and table %u by three new ones",
		      parts[0], parts[1], parts[2]);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	holder_pid = 0;
	end = now_ms() + 5000;
	while (rss_one(cl, &after, wq_after) != 0 && now_ms() < end)
		usleep(20000);
	CHECK(rss_one(cl, &after, wq_after) == 0,
	      "the RSS object stayed after its owner's SIGKILL");
	if (kernel) {
		while (!hsets_back(x, base) && now_ms() < end)
			usleep(20000);
		CHECK(hsets_back(x, base),
		      "the RSS object's flow, QP or table stayed in the "
		      "context");
	}
	CHECK(domain_of(cl, &dom) == 0 && dom.used.rss_tables == 0,
	      "the table stayed charged");
	CHECK(dom.unaccounted == 0, "%u objects unaccounted in the domain",
	      dom.unaccounted);
	printf(HW_NAME ": the holder's SIGKILL destroyed it by handle\n");
	CHECK(ibc_cq_destroy(cq) == 0, "the suite's CQ");
	ibc_disconnect(cl);
	fakesd_free(sd);
	sd = NULL;
	close(lfd);
	rig_remove();
	return 0;
}

/* --- R1 (W8): a SIGKILL at each of rss.c's fault points ----------------- */
#ifdef RDMAB_FAULT_POINTS

struct killed {
	/* A create over @ids in @x; else a rebuild (@wq goes) or a
	 * teardown of *@rss. */
	struct ibc_ctx *x;
	uint64_t *ids;
	struct ibc_wq *wq;
	struct ibc_rss **rss;
	int ret;
};

/* The request the daemon dies in. */
static void *killed_main(void *arg)
{
	struct killed *k = arg;

	if (k->x)
		k->ret = udp_rss(k->x, k->ids, 2, 1, 9998, k->rss);
	else
		k->ret = k->wq ? ibc_wq_destroy(k->wq) :
				 ibc_rss_destroy(*k->rss);
	return NULL;
}

/* The suite's own table over two WQs, rebuilt without one, destroyed or
 * created while the daemon SIGKILLs itself at @point; the daemon started
 * again. The daemon runs from a start of its own, the fault armed. */
static int run_fault(const char *bin, const char *point)
{
	bool leave = strncmp(point, "rss-leave-", 10) == 0;
	bool create = strcmp(point, "rss-create-made") == 0;
	/* Parts made and not journaled: unaccounted (the window left). */
	bool unnamed = create || strcmp(point, "rss-leave-made") == 0;
	bool kernel = hw_mode == HW_MLX5;
	struct hset base[3], now[3], twice[3];
	struct ibc_domain_info dom;
	struct ibc_rss_info info;
	uint32_t parts[3] = { 0 }, rebuilt[3] = { 0 };
	uint64_t ids[2], wqs[RSS_WQS];
	struct ibc_rss *rss = NULL;
	struct killed k = { .rss = &rss };
	struct ibc_client *cl;
	struct ibc_wq *w[2];
	struct ibc_ctx *x;
	struct ibc_cq *cq;
	int lfd = -1;
	pthread_t t;

	setenv(FAULT_ENV, point, 1);
	CHECK(rig_make(bin, &lfd) == 0, "the daemon did not start (see %s)",
	      log_path);
	unsetenv(FAULT_ENV);
	CHECK(hw_connect(&cl) == 0, "connect");
	CHECK(ibc_open(cl, dev_name, &x) == 0, "open %s", dev_name);
	CHECK(ibc_cq_create(x, 16, &cq) == 0, "CQ");
	for (int i = 0; i < 2; i++) {
		CHECK(ibc_wq_create(x, cq, NULL, &w[i]) == 0, "WQ");
		ids[i] = ibc_wq_id(w[i]);
	}
	if (kernel)
		CHECK(hsets_get(x, base) == 0,
		      "the kernel's handle lists of the context");
	if (create) {
		k.x = x;
		k.ids = ids;
	} else {
		CHECK(udp_rss(x, ids, 2, 1, 9998, &rss) == 0, "RSS: %s",
		      ibc_last_error());
		if (kernel)
			CHECK(hsets_get(x, now) == 0 &&
				      hsets_one_more(base, now, parts),
			      "%s: the RSS object's three parts", point);
		k.wq = leave ? w[1] : NULL;
	}
	CHECK(pthread_create(&t, NULL, killed_main, &k) == 0, "thread");
	CHECK(fakesd_wait_exit(sd, 20000) >= 0,
	      "%s: the daemon did not kill itself there", point);
	CHECK(daemon_start(bin) == 0, "the daemon did not start again");
	pthread_join(t, NULL);
	CHECK(k.ret == -EAGAIN, "%s: the request gave %d, not -EAGAIN", point,
	      k.ret);
	CHECK(domain_of(cl, &dom) == 0, "the domain");
	/* Made, not journaled: what the context held before (the old parts
	 * of a rebuild, nothing of a create) and three new parts,
	 * unaccounted. */
	if (kernel && unnamed)
		CHECK(hsets_get(x, twice) == 0 &&
			      hsets_one_more(create ? base : now, twice,
					     rebuilt) &&
			      dom.unaccounted == 3,
		      "%s: the context does not hold three new parts more, "
		      "unaccounted (%u)",
		      point, dom.unaccounted);
	if (!leave) {
		CHECK(rss_one(cl, &info, wqs) == 0 && dom.used.rss_tables == 0,
		      "%s: the table came back", point);
		/* A teardown's parts: gone, or destroyed at the restore. */
		if (kernel && !create)
			CHECK(hsets_back(x, base),
			      "%s: the restore left a part of the table in "
			      "the context",
			      point);
	} else {
		CHECK(rss_one(cl, &info, wqs) == 1 &&
			      info.num_wqs == (unnamed ? 2 : 1) &&
			      info.rebuilds == (unnamed ? 0 : 1),
		      "%s: %u WQs, %u rebuilds after the restart", point,
		      info.num_wqs, info.rebuilds);
		/* Journaled: the new parts alone, the old retiring ones
		 * destroyed at the restore. */
		if (kernel && !unnamed)
			CHECK(hsets_get(x, twice) == 0 &&
				      hsets_one_more(base, twice, rebuilt) &&
				      rebuilt[0] != parts[0] &&
				      rebuilt[1] != parts[1] &&
				      rebuilt[2] != parts[2],
			      "%s: the old flow %u, QP %u or table %u stayed "
			      "after the restore",
			      point, parts[0], parts[1], parts[2]);
		CHECK(ibc_wq_destroy(w[1]) == 0, "%s: the WQ after", point);
		CHECK(ibc_rss_destroy(rss) == 0, "%s: the table after", point);
	}
	if (!kernel)
		HW_SKIP("the kernel's handle lists", "the soft device's");
	if (kernel && unnamed) {
		/* The unnamed table pins the WQs it holds until the context
		 * closes (a rekey): what the window costs. */
		CHECK(ibc_wq_destroy(w[0]) == -EBUSY,
		      "%s: the WQ of the unaccounted table was destroyed",
		      point);
	} else {
		/* The WQs go: no table left pins them. */
		for (int i = leave ? 0 : 1; i >= 0; i--)
			CHECK(ibc_wq_destroy(w[i]) == 0,
			      "%s: WQ %d after the restart", point, i);
		CHECK(ibc_cq_destroy(cq) == 0, "the suite's CQ");
	}
	CHECK(domain_of(cl, &dom) == 0 && dom.used.rss_tables == 0 &&
		      dom.unaccounted == (kernel && unnamed ? 3 : 0),
	      "%s: %llu tables charged, %u objects unaccounted", point,
	      (unsigned long long)dom.used.rss_tables, dom.unaccounted);
	printf(HW_NAME ": killed at %s, restored as the kernel held it\n",
	       point);
	ibc_disconnect(cl);
	fakesd_free(sd);
	sd = NULL;
	close(lfd);
	rig_remove();
	return 0;
}

static int run_faults(const char *bin)
{
	static const char *const points[] = {
		"rss-leave-made",  "rss-leave-journaled", "rss-leave-flow",
		"rss-leave-qp",	   "rss-leave-tbl",	  "rss-teardown-flow",
		"rss-teardown-qp", "rss-teardown-tbl",	  "rss-create-made",
	};

	for (size_t i = 0; i < sizeof(points) / sizeof(points[0]); i++)
		if (run_fault(bin, points[i]))
			return 1;
	return 0;
}
#else
static int run_faults(const char *bin)
{
	HW_SKIP("the fault points", "a build without --enable-fault-points");
	return 0;
}
#endif

int main(int argc, char **argv)
{
	const char *bin = getenv("RDMABROKERD");
	int ret = hw_init(argc, argv, hw_find_mlx5_eth, &dev_name);

	if (ret)
		return ret;
	if (hw_mode == HW_OWN) {
		HW_SKIP("everything", "RSS needs the domain's shared context");
		return SKIP;
	}
	if (!bin)
		bin = "./rdmabrokerd";
	ret = run(bin);
	if (ret == 0)
		ret = run_faults(bin);
	if (holder_pid > 0) {
		kill(holder_pid, SIGKILL);
		waitpid(holder_pid, NULL, 0);
	}
	/* On a failure the directory stays, with the daemon's log. */
	if (ret && sd)
		fakesd_free(sd);
	return ret;
}
