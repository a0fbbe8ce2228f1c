// SPDX-License-Identifier: MIT
/*
 * The restart storm (issue 25 item 5): rdmabrokerd under the fake systemd
 * (tests/fakesd.h) with its listener passed as a socket unit's, 32 library
 * clients working over every family (CQs, MRs, DM alloc, import, write and
 * read, XRCD opens, WQs and RSS tables, forked children; every create
 * through the soft device's intent window, as on a verbs device, and one
 * more client stopped inside it at each restart, its intent open), and
 * the daemon ended RESTART_STORM_RESTARTS times (default 3; make
 * check-soak: 100), each way in turn by the seed (RESTART_STORM_SEED;
 * RESTART_STORM_MODES, a mask, keeps some of the ways only): SIGKILL at a
 * random instant of the work, SIGKILL and SIGTERM with the clients paused (the
 * store kept, as `systemctl restart` and a crash keep it), and SIGUSR2,
 * the daemon's re-exec.
 *
 * After each: no client saw a disconnect, and every client's requests
 * keep working on the same connection (a request in flight may be
 * answered EAGAIN, "the broker restarted while serving this request");
 * with the clients paused, the bytes each wrote in its DMs read the same,
 * and `rdmabrokerctl --json` of domains, objects, dm, xrcd, rss and
 * clients equals the snapshot before the restart (less times, counters
 * and rdmabrokerctl's own session; a domain rekeyed at the start keeps
 * its rekey count, and the soft device makes a record per import, which
 * a killed client leaves, counted unaccounted); a client killed after a
 * restart has its objects destroyed; the client whose intent was open at
 * the restart, killed after it, leaves no record and no intent, and what
 * it left is counted unaccounted. A detached owner comes before a restart
 * when there is none (a client evicted while its process lives, its CQ
 * and WQ kept), lives through one restart or more and then exits or is
 * killed: its objects go. At the end, with every client gone,
 * the registry is empty, every charge 0 and the daemon holds the
 * descriptors a fresh one held.
 *
 * Then the same outside systemd, RESTART_STORM_REEXECS times (default 2):
 * SIGUSR2 only, the daemon handing everything to its new binary itself.
 *
 * Every wait on a client process is bounded (twice its requests' timeout:
 * its start, a pause, the intent's client's stop), and one that does not
 * answer is named with the request it waits for or its last answer, what
 * the kernel says of it (state, threads, system call, wchan) and, where
 * gdb is installed, its stack.
 *
 * A daemon that keeps no state in the store ("rb.state." names) cannot be
 * checked: exit 77 (SKIP) saying so.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "include/ibclient.h"
#include "tests/fakesd.h"
#include "tests/jsoncanon.h"
#include "tests/testlib.h"

#define N_CLIENTS 32
#define MAXO 16
#define DOMAIN "storm"
/* A domain with no member, rekeyed once at the start. */
#define REKEYED "storm-rekeyed"
#define DM_PAT 64
/* Every request waits this long for its answer: a restart is a pause. */
#define CLIENT_TIMEOUT_MS 30000

enum { MODE_KILL_BUSY, MODE_KILL_PAUSED, MODE_TERM, MODE_REEXEC, N_MODES };
static const char *const mode_names[] = { "SIGKILL while working",
					  "SIGKILL, clients paused",
					  "SIGTERM (restart)",
					  "SIGUSR2 (re-exec)" };

/* --- the client processes ------------------------------------------------ */

struct wk {
	struct ibc_client *cl;
	struct ibc_ctx *x;
	struct ibc_cq *cq[MAXO];
	struct ibc_mr *mr[MAXO];
	struct ibc_wq *wq[MAXO];
	struct ibc_rss *rss[MAXO];
	struct ibc_xrcd *xrcd[MAXO];
	struct ibc_dm *dm[MAXO];
	/* What this client last wrote at offset 0 of dm[i], and whether
	 * that write was answered (an EAGAIN write may or may not have
	 * landed). */
	uint8_t pat[MAXO][DM_PAT];
	bool pat_known[MAXO];
	unsigned int n_cq, n_mr, n_wq, n_rss, n_xrcd, n_dm;
	unsigned long again;
	int ctl;
};

static char mrbuf[1 << 16];

/*
 * What each client does, on a page it shares with the driver (one slot a
 * client, written by it alone): a client that does not answer is named
 * with the request it waits for, or the last one it got back. Plain
 * stores; the driver reads them only to explain a failure.
 */
struct doing {
	char what[40];
	int64_t since_ms;
	/* The last answer: its errno, when it came. */
	int err;
	int64_t done_ms;
	bool busy;
};
static struct doing *doing_page;
/* The driver's last kill or signal to the daemon (CLOCK_MONOTONIC ms). */
static int64_t restart_ms;
/* In a client: its own slot. */
static struct doing *my_doing;

static void doing(const char *what)
{
	if (!my_doing)
		return;
	snprintf(my_doing->what, sizeof(my_doing->what), "%s", what);
	my_doing->since_ms = tl_now_ms();
	my_doing->busy = true;
}

static void die_with(struct wk *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

static void die_with(struct wk *w, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n;

	msg[0] = 'F';
	va_start(ap, fmt);
	n = vsnprintf(msg + 1, sizeof(msg) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(msg) - 2)
		n = (int)sizeof(msg) - 2;
	if (write(w->ctl, msg, (size_t)n + 1) < 0)
		_exit(3);
	_exit(2);
}

static bool lost(int err)
{
	return err == -ECONNRESET || err == -ENOTCONN || err == -EPIPE ||
	       err == -ESHUTDOWN || err == -ECONNABORTED;
}

/* Judge one request's answer: true when it did what was asked. A lost
 * connection ends the client with the reason; EAGAIN (the restart) and the
 * refusals of limits and busy objects are part of the storm. */
static bool judge(struct wk *w, int err, const char *what)
{
	if (my_doing) {
		my_doing->busy = false;
		my_doing->err = err;
		my_doing->done_ms = tl_now_ms();
	}
	if (err == 0)
		return true;
	if (lost(err))
		die_with(w, "%s: the connection was lost (%s): %s", what,
			 strerror(-err), ibc_last_error());
	if (err == -EAGAIN)
		w->again++;
	return false;
}

/* judge() of an object's destroy: whether the object went. -ENOENT too:
 * the broker had no record of it (a destroy before, answered EAGAIN by
 * the restart, had been applied), and the library freed it all the same
 * (ibc_cq_create(3)); kept, the next destroy would use freed memory. */
static bool judge_gone(struct wk *w, int err, const char *what)
{
	return judge(w, err, what) || err == -ENOENT;
}

static void op_dm(struct wk *w, struct tl_rng *r)
{
	unsigned int i;
	uint8_t got[DM_PAT];
	int err;

	switch (tl_rng_below(r, 4)) {
	case 0:
		doing("dm alloc");
		if (w->n_dm < MAXO &&
		    judge(w, ibc_dm_alloc(w->x, 4096, 0, &w->dm[w->n_dm]),
			  "dm alloc")) {
			w->pat_known[w->n_dm] = false;
			w->n_dm++;
		}
		break;
	case 1:
		if (!w->n_dm)
			break;
		i = tl_rng_below(r, w->n_dm);
		tl_rng_fill(r, w->pat[i], DM_PAT);
		doing("dm write");
		err = ibc_dm_write(w->dm[i], 0, w->pat[i], DM_PAT);
		w->pat_known[i] = judge(w, err, "dm write");
		break;
	case 2:
		if (!w->n_dm)
			break;
		i = tl_rng_below(r, w->n_dm);
		doing("dm read");
		err = ibc_dm_read(w->dm[i], got, 0, DM_PAT);
		if (judge(w, err, "dm read") && w->pat_known[i] &&
		    memcmp(got, w->pat[i], DM_PAT) != 0)
			die_with(w, "DM %llu read other bytes than written",
				 (unsigned long long)ibc_dm_id(w->dm[i]));
		break;
	default:
		if (!w->n_dm)
			break;
		i = tl_rng_below(r, w->n_dm);
		doing("dm free");
		err = ibc_dm_free(w->dm[i]);
		/* EAGAIN: the broker restarted while serving it, and the
		 * free may have happened (the rule for a request in
		 * flight): the DM is no longer this client's to check. */
		if (judge(w, err, "dm free") || err == -EAGAIN) {
			w->dm[i] = w->dm[--w->n_dm];
			memcpy(w->pat[i], w->pat[w->n_dm], DM_PAT);
			w->pat_known[i] = w->pat_known[w->n_dm];
		}
	}
}

static void op_rss(struct wk *w, struct tl_rng *r)
{
	struct ibc_rss_attr a = {
		.port_num = 1,
		.hash_fields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4,
		.log_ind_tbl_size = 1,
	};
	uint64_t ids[2];
	unsigned int i;

	doing("wq create");
	if (w->n_cq && w->n_wq < MAXO && tl_rng_below(r, 2) &&
	    judge(w, ibc_wq_create(w->x, w->cq[0], NULL, &w->wq[w->n_wq]),
		  "wq create"))
		w->n_wq++;
	if (w->n_rss && tl_rng_below(r, 2)) {
		i = tl_rng_below(r, w->n_rss);
		doing("rss destroy");
		if (judge(w, ibc_rss_destroy(w->rss[i]), "rss destroy"))
			w->rss[i] = w->rss[--w->n_rss];
		return;
	}
	if (!w->n_wq || w->n_rss == MAXO)
		return;
	ids[0] = ibc_wq_id(w->wq[tl_rng_below(r, w->n_wq)]);
	ids[1] = ibc_wq_id(w->wq[tl_rng_below(r, w->n_wq)]);
	a.num_wqs = 2;
	a.wq_ids = ids;
	tl_rng_fill(r, a.hash_key, sizeof(a.hash_key));
	a.match.af = AF_INET;
	a.match.l4_proto = IPPROTO_UDP;
	a.match.dst_port = (uint16_t)(1000 + tl_rng_below(r, 60000));
	a.match.port_mask = 0xffff;
	doing("rss create");
	if (judge(w, ibc_rss_create(w->x, &a, &w->rss[w->n_rss]), "rss create"))
		w->n_rss++;
}

static void op_xrcd(struct wk *w, struct tl_rng *r)
{
	static const char *const names[] = { "r0", "r1", "r2", "r3" };
	unsigned int i;

	if (w->n_xrcd && tl_rng_below(r, 2)) {
		i = tl_rng_below(r, w->n_xrcd);
		doing("xrcd close");
		if (judge_gone(w, ibc_xrcd_close(w->xrcd[i]), "xrcd close"))
			w->xrcd[i] = w->xrcd[--w->n_xrcd];
	} else if (w->n_xrcd < MAXO) {
		doing("xrcd open");
		if (judge(w,
			  ibc_xrcd_open(w->x, names[tl_rng_below(r, 4)],
					O_CREAT, &w->xrcd[w->n_xrcd]),
			  "xrcd open"))
			w->n_xrcd++;
	}
}

/* A forked child's session, linked to this one: it pings and goes. */
static void op_fork(struct wk *w)
{
	pid_t pid;
	int st;

	doing("fork: the child's ping");
	pid = fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		int err = ibc_ping(w->cl, "c", 1);

		_exit(lost(err) ? 2 : 0);
	}
	if (waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	    WEXITSTATUS(st) == 2)
		die_with(w, "a forked child's ping lost the connection");
	judge(w, 0, "fork");
}

static void op_one(struct wk *w, struct tl_rng *r)
{
	unsigned int i;

	switch (tl_rng_below(r, 9)) {
	case 0:
		doing("cq create");
		if (w->n_cq < MAXO &&
		    judge(w, ibc_cq_create(w->x, 8, &w->cq[w->n_cq]),
			  "cq create"))
			w->n_cq++;
		break;
	case 1:
		/* The first CQ carries the WQs: never destroyed. */
		if (w->n_cq > 1) {
			i = 1 + tl_rng_below(r, w->n_cq - 1);
			doing("cq destroy");
			if (judge_gone(w, ibc_cq_destroy(w->cq[i]),
				       "cq destroy"))
				w->cq[i] = w->cq[--w->n_cq];
		}
		break;
	case 2:
		doing("reg mr");
		if (w->n_mr < MAXO &&
		    judge(w,
			  ibc_reg_mr(w->x, mrbuf, 4096, IBV_ACCESS_LOCAL_WRITE,
				     &w->mr[w->n_mr]),
			  "reg mr"))
			w->n_mr++;
		else if (w->n_mr) {
			i = tl_rng_below(r, w->n_mr);
			doing("dereg mr");
			if (judge_gone(w, ibc_dereg_mr(w->mr[i]), "dereg mr"))
				w->mr[i] = w->mr[--w->n_mr];
		}
		break;
	case 3:
	case 4:
		op_dm(w, r);
		break;
	case 5:
		op_xrcd(w, r);
		break;
	case 6:
		op_rss(w, r);
		break;
	case 7:
		if (tl_rng_below(r, 8) == 0)
			op_fork(w);
		break;
	default:
		doing("ping");
		judge(w, ibc_ping(w->cl, "p", 1), "ping");
	}
}

/* Every DM this client knows the bytes of reads them back. */
static void verify(struct wk *w)
{
	uint8_t got[DM_PAT];

	for (unsigned int i = 0; i < w->n_dm; i++) {
		int err;

		doing("dm read (paused)");
		err = ibc_dm_read(w->dm[i], got, 0, DM_PAT);

		if (!judge(w, err, "dm read (paused)"))
			die_with(w,
				 "DM %llu cannot be read after the "
				 "restart: %s",
				 (unsigned long long)ibc_dm_id(w->dm[i]),
				 strerror(-err));
		if (w->pat_known[i] && memcmp(got, w->pat[i], DM_PAT) != 0)
			die_with(w,
				 "DM %llu read other bytes after the "
				 "restart",
				 (unsigned long long)ibc_dm_id(w->dm[i]));
	}
	doing("ping (paused)");
	if (!judge(w, ibc_ping(w->cl, "v", 1), "ping (paused)"))
		die_with(w, "ping after the restart: %s", ibc_last_error());
}

/*
 * The client: connect, open, then work until told otherwise on @ctl:
 * 'p' pause (answers 'P' once no request is in flight), 'v' verify
 * (answers 'V'), 'r' resume, 'q' exit. Its client id goes first, as 'I'
 * and 8 bytes.
 */
static void client_main(const char *sock, uint64_t seed, int ctl)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_DOMAIN |
			     IBC_CONNECT_ATTR_TIMEOUT,
		.socket_path = sock,
		.domain = DOMAIN,
		.timeout_ms = CLIENT_TIMEOUT_MS,
	};
	struct wk w = { .ctl = ctl };
	struct ibc_client_info info;
	bool paused = false;
	struct tl_rng r;
	char hello[9];

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	tl_rng_seed(&r, seed);
	doing("connect");
	if (ibc_connect(&attr, &w.cl) < 0 || ibc_open(w.cl, NULL, &w.x) < 0 ||
	    ibc_client_info(w.cl, &info, sizeof(info)) < 0)
		die_with(&w, "cannot connect: %s", ibc_last_error());
	judge(&w, 0, "connect");
	if (ibc_cq_create(w.x, 8, &w.cq[0]) == 0)
		w.n_cq = 1;
	hello[0] = 'I';
	memcpy(hello + 1, &info.client_id, 8);
	if (write(ctl, hello, sizeof(hello)) != sizeof(hello))
		_exit(3);
	for (;;) {
		struct pollfd p = { .fd = ctl, .events = POLLIN };
		char c;

		if (poll(&p, 1, paused ? -1 : 0) > 0) {
			if (read(ctl, &c, 1) != 1)
				_exit(3);
			switch (c) {
			case 'p':
				paused = true;
				c = 'P';
				break;
			case 'v':
				verify(&w);
				c = 'V';
				break;
			case 'r':
				paused = false;
				continue;
			default:
				_exit(0);
			}
			if (write(ctl, &c, 1) != 1)
				_exit(3);
			continue;
		}
		op_one(&w, &r);
	}
}

/* --- the driver ------------------------------------------------------------
 */

struct client {
	pid_t pid;
	int ctl;
	uint64_t id;
};

static struct client clients[N_CLIENTS];
/* @rundir is the daemon's --runtime-dir, which it keeps clean of what it
 * did not make: the rest lives beside it, in @dir. */
static char dir[256], rundir[300], sockpath[256], confpath[300], logpath[300];
static char whybuf[1024];
/* The re-exec storm: the daemon outside systemd (no store: SIGUSR2 hands
 * everything over), its pid ours to follow. */
static bool plain;
static pid_t plain_pid;

#define FAIL(...)                                                              \
	do {                                                                   \
		snprintf(whybuf, sizeof(whybuf), __VA_ARGS__);                 \
		return -1;                                                     \
	} while (0)

/* A client's failure message, if it sent one: "" when it did not. */
static const char *client_failure(struct client *c)
{
	static char msg[512];
	struct pollfd p = { .fd = c->ctl, .events = POLLIN };
	ssize_t n;

	msg[0] = '\0';
	if (poll(&p, 1, 0) <= 0)
		return msg;
	n = recv(c->ctl, msg, sizeof(msg) - 1, MSG_DONTWAIT | MSG_PEEK);
	if (n > 0 && msg[0] == 'F') {
		n = recv(c->ctl, msg, sizeof(msg) - 1, MSG_DONTWAIT);
		msg[n > 0 ? n : 0] = '\0';
		return msg + 1;
	}
	msg[0] = '\0';
	return msg;
}

/* The first @len - 1 bytes of /proc/@pid/@file into @buf, its last
 * newline cut; "" when it cannot be read. */
static void proc_read(pid_t pid, const char *file, char *buf, size_t len)
{
	char path[64];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, len - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
}

/*
 * What the kernel says process @pid is doing, into @buf: its state, its
 * threads, the system call it is in (/proc/PID/syscall: its number, or
 * "running"), where it sleeps. One thread in futex(2) past its request's
 * timeout waits for a lock nobody in it can let go: one that another
 * thread of its parent held when it forked (as the fake systemd's did).
 */
static const char *proc_facts(pid_t pid, char *buf, size_t len)
{
	char stat[1024], sc[128], wchan[64];
	const char *p;
	char state = '?';
	long threads = -1, nr = -1;

	proc_read(pid, "stat", stat, sizeof(stat));
	proc_read(pid, "syscall", sc, sizeof(sc));
	proc_read(pid, "wchan", wchan, sizeof(wchan));
	p = strrchr(stat, ')');
	if (!p) {
		snprintf(buf, len, "process %d is gone", (int)pid);
		return buf;
	}
	/* After the name: the state (3), then 16 fields to num_threads. */
	if (sscanf(p + 1,
		   " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d "
		   "%*d %*d %*d %ld",
		   &state, &threads) != 2)
		threads = -1;
	if (sscanf(sc, "%ld", &nr) != 1)
		nr = -1;
	snprintf(buf, len,
		 "process %d: state %c, %ld thread(s), system call %.100s, "
		 "wchan %.40s%s",
		 (int)pid, state, threads, sc[0] ? sc : "?",
		 wchan[0] ? wchan : "?",
		 threads == 1 && nr == SYS_futex ?
			 " (one thread in futex(2): a lock held at its fork "
			 "by a thread it does not have)" :
			 "");
	return buf;
}

/* gdb's stack of @pid on stderr, where gdb is installed (60 s at most):
 * where a process that does not answer is. */
static void stack_of(pid_t pid)
{
	char p[16];
	pid_t t;

	snprintf(p, sizeof(p), "%d", (int)pid);
	fprintf(stderr, "restart-storm: the stack of process %d (gdb):\n",
		(int)pid);
	fflush(stderr);
	fflush(stdout);
	t = fork();
	if (t == 0) {
		dup2(2, 1);
		execlp("timeout", "timeout", "60", "gdb", "-nx", "-batch", "-p",
		       p, "-ex", "thread apply all bt", (char *)NULL);
		_exit(127);
	}
	if (t > 0)
		waitpid(t, NULL, 0);
}

static const char *doing_of(int i, char *buf, size_t len);

/* Why process @pid (client slot @slot, or -1) did not answer, for a
 * FAIL(): what it waits for and what the kernel says; its stack goes to
 * stderr first. */
static const char *why_silent(pid_t pid, int slot)
{
	static char buf[800];
	char what[200] = "", facts[400];

	if (slot >= 0)
		doing_of(slot, what, sizeof(what));
	proc_facts(pid, facts, sizeof(facts));
	stack_of(pid);
	snprintf(buf, sizeof(buf), "%s%s%s", what, what[0] ? "; " : "", facts);
	return buf;
}

/* Wait up to 2 × CLIENT_TIMEOUT_MS for @fd to be readable: whatever a
 * client does ends by then (each request is bounded by the timeout). */
static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 2 * CLIENT_TIMEOUT_MS) > 0;
}

static int client_spawn(struct client *c, uint64_t seed)
{
	char hello[512];
	int sv[2];
	ssize_t n;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	c->pid = fork();
	if (c->pid < 0)
		return -errno;
	if (c->pid == 0) {
		close(sv[0]);
		if (doing_page) {
			my_doing = &doing_page[c - clients];
			memset(my_doing, 0, sizeof(*my_doing));
		}
		client_main(sockpath, seed, sv[1]);
	}
	close(sv[1]);
	c->ctl = sv[0];
	if (!readable(c->ctl)) {
		snprintf(whybuf, sizeof(whybuf),
			 "client %d did not connect within %d ms: %s",
			 (int)c->pid, 2 * CLIENT_TIMEOUT_MS,
			 why_silent(c->pid, (int)(c - clients)));
		return -ETIMEDOUT;
	}
	n = read(c->ctl, hello, sizeof(hello) - 1);
	if (n != 9 || hello[0] != 'I') {
		hello[n > 0 ? n : 0] = '\0';
		snprintf(whybuf, sizeof(whybuf), "client %d: %s", (int)c->pid,
			 n > 0 ? hello + 1 : "died at start");
		return -EIO;
	}
	memcpy(&c->id, hello + 1, 8);
	return 0;
}

/* What client @i was doing, into @buf: the request it waits for, or the
 * last answer it had. */
static const char *doing_of(int i, char *buf, size_t len)
{
	const struct doing *d = doing_page ? &doing_page[i] : NULL;
	int64_t now = tl_now_ms();

	if (!d || !d->since_ms)
		snprintf(buf, len, "nothing recorded");
	else if (d->busy && !restart_ms)
		snprintf(buf, len,
			 "it waits for '%.40s', sent %lld ms ago (before the "
			 "first restart)",
			 d->what, (long long)(now - d->since_ms));
	else if (d->busy)
		snprintf(buf, len,
			 "it waits for '%.40s', sent %lld ms ago (%+lld ms "
			 "from the last restart's signal)",
			 d->what, (long long)(now - d->since_ms),
			 (long long)(d->since_ms - restart_ms));
	else
		snprintf(buf, len,
			 "its last request, '%.40s', was answered %d (%s) "
			 "%lld ms ago, after %lld ms",
			 d->what, d->err, strerror(-d->err),
			 (long long)(now - d->done_ms),
			 (long long)(d->done_ms - d->since_ms));
	return buf;
}

/* Send @cmd to every client and wait for @ack from each (0: none). */
static int all_clients(char cmd, char ack)
{
	for (int i = 0; i < N_CLIENTS; i++) {
		const char *m = client_failure(&clients[i]);

		if (*m)
			FAIL("client %d: %s", (int)clients[i].pid, m);
		if (write(clients[i].ctl, &cmd, 1) != 1)
			FAIL("client %d is gone", (int)clients[i].pid);
	}
	for (int i = 0; ack && i < N_CLIENTS; i++) {
		char msg[512];
		ssize_t n;

		if (!readable(clients[i].ctl))
			FAIL("client %d did not answer '%c' within %d ms: %s",
			     (int)clients[i].pid, cmd, 2 * CLIENT_TIMEOUT_MS,
			     why_silent(clients[i].pid, i));
		n = read(clients[i].ctl, msg, sizeof(msg) - 1);
		if (n == 1 && msg[0] == ack)
			continue;
		msg[n > 0 ? n : 0] = '\0';
		FAIL("client %d: %s", (int)clients[i].pid,
		     n > 1 && msg[0] == 'F' ? msg + 1 : "died");
	}
	return 0;
}

/* rdmabrokerctl --json @cmd into *@ret (malloc'd). */
static int ctl_json(const char *cmd, char **ret)
{
	const char *argv[] = { tl_ctl_path(), "--socket", sockpath,
			       "--json",      cmd,	  NULL };
	size_t len = 0, cap = 1 << 16;
	char *out = malloc(cap);
	int p[2], st;
	pid_t pid;
	ssize_t n;

	if (!out || pipe2(p, O_CLOEXEC) < 0) {
		free(out);
		return -ENOMEM;
	}
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	while ((n = read(p[0], out + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (len + 1 == cap) {
			char *o = realloc(out, cap *= 2);

			if (!o)
				break;
			out = o;
		}
	}
	close(p[0]);
	out[len] = '\0';
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0) {
		free(out);
		return -EIO;
	}
	*ret = out;
	return 0;
}

/* rdmabrokerctl with @argv, its output dropped: 0 or -EIO. */
static int ctl_run(const char *const argv[])
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (null >= 0)
			dup2(null, 1);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		return -EIO;
	return 0;
}

/* rdmabrokerctl domain rekey @name: 0 or -EIO. */
static int ctl_rekey(const char *name)
{
	const char *argv[] = { tl_ctl_path(), "--socket", sockpath, "domain",
			       "rekey",	      name,	  NULL };

	return ctl_run(argv);
}

static const char *const listings[] = { "domains", "objects", "dm",
					"xrcd",	   "rss",     "clients" };
#define N_LISTINGS (sizeof(listings) / sizeof(listings[0]))
#define SNAP_MAX (1 << 20)

/* The listings before and after a restart; snaps_free() frees them, on a
 * failure too. */
static char *snap_before[N_LISTINGS], *snap_after[N_LISTINGS];

static void snaps_free(void)
{
	for (size_t i = 0; i < N_LISTINGS; i++) {
		free(snap_before[i]);
		free(snap_after[i]);
		snap_before[i] = snap_after[i] = NULL;
	}
}

static int snapshot(char *snap[N_LISTINGS])
{
	for (size_t i = 0; i < N_LISTINGS; i++) {
		char *raw;

		if (ctl_json(listings[i], &raw) < 0)
			FAIL("rdmabrokerctl --json %s failed", listings[i]);
		snap[i] = malloc(SNAP_MAX);
		if (!snap[i]) {
			free(raw);
			FAIL("out of memory");
		}
		json_canonical(raw, snap[i], SNAP_MAX);
		free(raw);
	}
	return 0;
}

/* RESTART_STORM_DUMP=DIR: both sides of a listing that differs, whole,
 * as DIR/NAME.before and DIR/NAME.after. */
static void dump(const char *name, const char *before, const char *after)
{
	const char *d = getenv("RESTART_STORM_DUMP");
	char path[512];
	FILE *f;

	for (int k = 0; d && k < 2; k++) {
		snprintf(path, sizeof(path), "%s/%s.%s", d, name,
			 k ? "after" : "before");
		f = fopen(path, "w");
		if (f) {
			fputs(k ? after : before, f);
			fclose(f);
		}
	}
}

/* The first line where @a and @b differ, for the report. */
static void first_diff(const char *a, const char *b, char *out, size_t len)
{
	while (*a && *a == *b) {
		const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');

		if (!ea || !eb || ea - a != eb - b ||
		    memcmp(a, b, (size_t)(ea - a)) != 0)
			break;
		a = ea + 1;
		b = eb + 1;
	}
	snprintf(out, len, "before: %.300s | after: %.300s", a, b);
}

/* The daemon's command line under the fake systemd. */
static void daemon_argv(char *argv[11])
{
	char *const a[] = { (char *)tl_daemon_path(),
			    "--foreground",
			    "--device",
			    "soft",
			    "--socket",
			    sockpath,
			    "--runtime-dir",
			    rundir,
			    "--config",
			    confpath,
			    NULL };

	memcpy(argv, a, sizeof(a));
}

static pid_t daemon_pid(struct fakesd *sd)
{
	return plain ? plain_pid : fakesd_main_pid(sd);
}

/* The daemon's pid in its runtime directory's lock file, or -1. */
static pid_t lock_pid(void)
{
	char path[400], buf[32] = "";
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/rdmabrokerd.lock", rundir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return (pid_t)atoi(buf);
}

/* SIGUSR2 outside systemd: the old daemon waits for the new one's
 * READY=1, then exits; the new one, its child, is ours (subreaper). */
static int reexec_plain(void)
{
	pid_t old = plain_pid, now;
	int st;

	kill(old, SIGUSR2);
	st = tl_wait_pid(old, 6 * TL_WAIT_MS, &st) < 0 ? -1 : st;
	if (st < 0)
		FAIL("the daemon did not hand over within %d ms of SIGUSR2",
		     6 * TL_WAIT_MS);
	if (WIFSIGNALED(st))
		FAIL("the daemon ended on signal %d after SIGUSR2 instead of "
		     "re-executing itself",
		     WTERMSIG(st));
	now = lock_pid();
	if (now <= 0 || now == old || kill(now, 0) < 0)
		FAIL("after SIGUSR2 no new daemon holds the runtime directory "
		     "(lock names %d, was %d)",
		     (int)now, (int)old);
	plain_pid = now;
	if (tl_wait_socket(now, sockpath, TL_WAIT_MS) < 0)
		FAIL("the re-executed daemon (pid %d) does not answer",
		     (int)now);
	return 0;
}

static int restart_daemon(struct fakesd *sd, int mode, struct tl_rng *r)
{
	char *argv[11];
	int st;

	daemon_argv(argv);

	switch (mode) {
	case MODE_KILL_BUSY:
		tl_sleep_ms(tl_rng_below(r, 40));
		/* fall through */
	case MODE_KILL_PAUSED:
		restart_ms = tl_now_ms();
		fakesd_kill(sd, SIGKILL);
		break;
	case MODE_TERM:
		restart_ms = tl_now_ms();
		fakesd_kill(sd, SIGTERM);
		break;
	default:
		restart_ms = tl_now_ms();
		/* The daemon replaces itself; no new start from us. */
		if (plain)
			return reexec_plain();
		fakesd_reset_ready(sd);
		fakesd_kill(sd, SIGUSR2);
		st = fakesd_wait_ready(sd, 3 * TL_WAIT_MS);
		if (st == -ECHILD) {
			st = fakesd_wait_exit(sd, TL_WAIT_MS);
			FAIL("the daemon ended on SIGUSR2 (wait status 0x%x) "
			     "instead of re-executing itself",
			     st);
		}
		if (st < 0)
			FAIL("the re-executed daemon did not get ready");
		return 0;
	}
	st = fakesd_wait_exit(sd, TL_WAIT_MS);
	if (st < 0)
		FAIL("the daemon did not exit on %s", mode_names[mode]);
	if (fakesd_start(sd, argv, logpath) < 0 ||
	    fakesd_wait_ready(sd, TL_WAIT_MS) < 0)
		FAIL("the daemon did not start again after %s (see %s)",
		     mode_names[mode], logpath);
	return 0;
}

/* The objects of client @id, by rdmabrokerctl: how many lines name it. */
static int objects_of(uint64_t id)
{
	char *raw, needle[64];
	int n = 0;

	if (ctl_json("objects", &raw) < 0)
		return -EIO;
	snprintf(needle, sizeof(needle), "\"client\":%llu",
		 (unsigned long long)id);
	for (const char *p = raw; (p = strstr(p, needle)); p++)
		n++;
	free(raw);
	return n;
}

/* In a child of the driver: a session of DOMAIN with its context open,
 * and its client id. 0, or -1 for the child to exit on. */
static int storm_connect(struct ibc_client **ret_cl, struct ibc_ctx **ret_x,
			 uint64_t *ret_id)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_DOMAIN |
			     IBC_CONNECT_ATTR_TIMEOUT,
		.socket_path = sockpath,
		.domain = DOMAIN,
		.timeout_ms = CLIENT_TIMEOUT_MS,
	};
	struct ibc_client_info info;

	if (ibc_connect(&attr, ret_cl) < 0 ||
	    ibc_open(*ret_cl, NULL, ret_x) < 0 ||
	    ibc_client_info(*ret_cl, &info, sizeof(info)) < 0)
		return -1;
	*ret_id = info.client_id;
	return 0;
}

/*
 * An intent open at the restart: a client of DOMAIN stopped inside the
 * soft device's window ([soft] intent_window, IBC_TEST_SOFT_STOP) while it
 * makes a CQ, after its intent or (@made) after the kernel call made the
 * CQ. Its session and intent go through the restart; killed after it,
 * its half-served CQ is counted unaccounted.
 */
struct intent_holder {
	pid_t pid;
	uint64_t id;
	bool made;
};

static int intent_spawn(struct intent_holder *h, struct tl_rng *r)
{
	int64_t end;
	int p[2], st = 0;
	pid_t w;

	h->made = tl_rng_below(r, 2) == 0;
	if (pipe2(p, O_CLOEXEC) < 0)
		FAIL("pipe: %s", strerror(errno));
	h->pid = fork();
	if (h->pid < 0)
		FAIL("fork: %s", strerror(errno));
	if (h->pid == 0) {
		struct ibc_client *cl;
		struct ibc_ctx *x;
		struct ibc_cq *cq;
		uint64_t id;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[0]);
		setenv("IBC_TEST_SOFT_STOP", h->made ? "kernel" : "intent", 1);
		if (storm_connect(&cl, &x, &id) < 0 || write(p[1], &id, 8) != 8)
			_exit(1);
		ibc_cq_create(x, 8, &cq);
		_exit(2);
	}
	close(p[1]);
	if (!readable(p[0])) {
		close(p[0]);
		FAIL("the intent's client %d did not connect within %d ms: %s",
		     (int)h->pid, 2 * CLIENT_TIMEOUT_MS,
		     why_silent(h->pid, -1));
	}
	if (read(p[0], &h->id, 8) != 8) {
		close(p[0]);
		FAIL("the intent's client %d did not connect", (int)h->pid);
	}
	close(p[0]);
	end = tl_now_ms() + 2 * CLIENT_TIMEOUT_MS;
	while ((w = waitpid(h->pid, &st, WUNTRACED | WNOHANG)) == 0 &&
	       tl_now_ms() < end)
		tl_sleep_ms(5);
	if (w == 0)
		FAIL("the intent's client %d did not stop in the window "
		     "within %d ms: %s",
		     (int)h->pid, 2 * CLIENT_TIMEOUT_MS,
		     why_silent(h->pid, -1));
	if (w != h->pid || !WIFSTOPPED(st))
		FAIL("the intent's client %d did not stop in the window: %#x",
		     (int)h->pid, st);
	return 0;
}

/* DOMAIN's count @key ("unaccounted", "live_intents") now, or -1. */
static long domain_count(const char *key)
{
	char *raw, k[64];
	const char *p;
	long n = -1;

	if (ctl_json("domains", &raw) < 0)
		return -1;
	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(raw, "\"name\":\"" DOMAIN "\"");
	if (p)
		p = strstr(p, k);
	if (p)
		n = strtol(p + strlen(k), NULL, 10);
	free(raw);
	return n;
}

/*
 * The intent's client dies after the restart, the other clients paused:
 * its records go, no intent is left open (a paused client has none), and
 * what it leaves is counted unaccounted: its import's record, and the CQ
 * if its kernel call made it. At least: the count takes each live intent
 * for an object, so one without (nothing made) hid an unnamed object
 * that its end shows.
 */
static int intent_end(struct intent_holder *h, unsigned long k)
{
	int64_t end = tl_now_ms() + TL_WAIT_MS;
	long before = domain_count("unaccounted"), now, intents;
	long want = before + 1 + (h->made ? 1 : 0);
	/* Another client's create answered EAGAIN by the restart may
	 * keep its intent open until that client ends (issue 25: a
	 * half-served request is counted like any intent): only this
	 * client's must close. */
	long intents_want = domain_count("live_intents") - 1;
	int left;

	if (before < 0 || intents_want < 0) {
		char *raw = NULL;

		if (ctl_json("domains", &raw) == 0)
			fprintf(stderr, "restart-storm: domains now: %s\n",
				raw);
		free(raw);
		FAIL("restart %lu: no unaccounted or intent count for " DOMAIN
		     " (the held client's intent not listed): unaccounted "
		     "%ld, live intents %ld; the held client %llu: %d records",
		     k, before, intents_want + 1, (unsigned long long)h->id,
		     objects_of(h->id));
	}
	kill(h->pid, SIGKILL);
	waitpid(h->pid, NULL, 0);
	do {
		tl_sleep_ms(50);
		left = objects_of(h->id);
		now = domain_count("unaccounted");
		intents = domain_count("live_intents");
	} while ((left != 0 || now < want || intents > intents_want) &&
		 tl_now_ms() < end);
	if (left != 0 || now < want || intents > intents_want)
		FAIL("restart %lu: the client of an intent open at it (%s), "
		     "killed after it: %d records left, %ld intents open (at "
		     "most %ld expected), %ld unaccounted (%ld before, at "
		     "least %ld expected)",
		     k, h->made ? "its CQ made" : "nothing made", left, intents,
		     intents_want, now, before, want);
	return 0;
}

/*
 * A detached owner (issue 25: the owner's pidfd in the store): a client of
 * DOMAIN that makes a CQ and a WQ on it, then has its session ended by an
 * eviction (rdmabrokerctl evict) while its process lives, so that both
 * stay, detached, until it exits. It lives through one restart or more,
 * the listings compared showing its objects, then exits by itself ('x' on
 * its pipe) or is killed; its objects must then go. Its own generator
 * (seeded from the storm's), so that a seed's other choices stay what
 * they were before it came.
 */
struct detached_holder {
	pid_t pid;
	uint64_t id;
	/* The restart it came before. */
	unsigned long since;
	/* Its pipe's write end; -1 while there is no holder. */
	int ctl;
};

/* rdmabrokerctl evict @id: 0 or -EIO. */
static int ctl_evict(uint64_t id)
{
	char arg[32];
	const char *argv[] = { tl_ctl_path(), "--socket", sockpath,
			       "evict",	      arg,	  NULL };

	snprintf(arg, sizeof(arg), "%llu", (unsigned long long)id);
	return ctl_run(argv);
}

/* The objects listed in state "detached". */
static int detached_listed(void)
{
	const char *needle = "\"state\":\"detached\"";
	char *raw;
	int n = 0;

	if (ctl_json("objects", &raw) < 0)
		return -EIO;
	for (const char *p = raw; (p = strstr(p, needle)); p++)
		n++;
	free(raw);
	return n;
}

static int detached_spawn(struct detached_holder *h, unsigned long k)
{
	int64_t end = tl_now_ms() + TL_WAIT_MS;
	int p[2], go[2], before = detached_listed(), now;

	if (pipe2(p, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0)
		FAIL("pipe: %s", strerror(errno));
	h->pid = fork();
	if (h->pid < 0)
		FAIL("fork: %s", strerror(errno));
	if (h->pid == 0) {
		struct ibc_client *cl;
		struct ibc_ctx *x;
		struct ibc_cq *cq;
		struct ibc_wq *wq;
		uint64_t id;
		char c;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[0]);
		close(go[1]);
		if (storm_connect(&cl, &x, &id) < 0 ||
		    ibc_cq_create(x, 8, &cq) < 0 ||
		    ibc_wq_create(x, cq, NULL, &wq) < 0 ||
		    write(p[1], &id, 8) != 8)
			_exit(1);
		/* Evicted meanwhile; 'x' or end of file: it exits. */
		if (read(go[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	close(go[0]);
	h->ctl = go[1];
	h->since = k;
	if (!readable(p[0]) || read(p[0], &h->id, 8) != 8) {
		close(p[0]);
		FAIL("restart %lu: the detached owner's client %d did not "
		     "connect and make its CQ and WQ: %s",
		     k, (int)h->pid, why_silent(h->pid, -1));
	}
	close(p[0]);
	if (before < 0 || ctl_evict(h->id) < 0)
		FAIL("restart %lu: rdmabrokerctl evict %llu failed", k,
		     (unsigned long long)h->id);
	/* Its register went without an answer: read by the drain of the
	 * eviction, if not before. */
	while ((now = detached_listed()) < before + 2 && tl_now_ms() < end)
		tl_sleep_ms(20);
	if (now < before + 2)
		FAIL("restart %lu: evicted client %llu shows %d objects "
		     "detached (%d before, 2 more expected)",
		     k, (unsigned long long)h->id, now, before);
	return 0;
}

/* The detached owner's process ends, killed or (@exits) by itself, after
 * restart @k (the number of restarts, at the end), the owner kept through
 * @through of them: its objects go. */
static int detached_end(struct detached_holder *h, bool exits, unsigned long k,
			unsigned long through)
{
	int64_t end = tl_now_ms() + TL_WAIT_MS;
	int left;

	if (!exits || write(h->ctl, "x", 1) != 1)
		kill(h->pid, SIGKILL);
	waitpid(h->pid, NULL, 0);
	close(h->ctl);
	h->ctl = -1;
	while ((left = objects_of(h->id)) != 0 && tl_now_ms() < end)
		tl_sleep_ms(50);
	if (left != 0)
		FAIL("restart %lu: the detached owner %llu %s after it: %d of "
		     "its objects left",
		     k, (unsigned long long)h->id, exits ? "exited" : "killed",
		     left);
	printf("restart %lu: a detached owner kept through %lu restarts, "
	       "%s: its objects gone\n",
	       k, through, exits ? "exited" : "killed");
	return 0;
}

/* How many descriptors @pid holds, and in *@ret_pidfds how many of them
 * are pidfds (a session's process); -1 when /proc cannot tell. */
static int fds_of(pid_t pid, int *ret_pidfds)
{
	char path[64], link[64];
	struct dirent *de;
	int n = 0, pidfds = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		ssize_t k;

		if (de->d_name[0] == '.')
			continue;
		n++;
		k = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
		link[k > 0 ? k : 0] = '\0';
		pidfds += strcmp(link, "anon_inode:[pidfd]") == 0;
	}
	closedir(d);
	*ret_pidfds = pidfds;
	return n;
}

/* Is @pid asleep in epoll_wait(2) (its system call and where, into
 * @where)? Then it has handled every event that was ready: one pending
 * would have woken it. */
static bool asleep_in_epoll(pid_t pid, char *where, size_t len)
{
	char stat[1024];
	const char *p;
	long nr = -1;

	proc_read(pid, "syscall", where, len);
	proc_read(pid, "stat", stat, sizeof(stat));
	p = strrchr(stat, ')');
	if (!p || p[1] != ' ' || p[2] != 'S' || sscanf(where, "%ld", &nr) != 1)
		return false;
	return nr == SYS_epoll_wait || nr == SYS_epoll_pwait ||
	       nr == SYS_epoll_pwait2;
}

/*
 * The daemon's descriptors with no session open. A session holds two, its
 * socket and its process's pidfd, and one that hung up (rdmabrokerctl's,
 * just before) is closed only once the daemon ran, its descriptors one
 * after another: a count taken at once held some of them or not as the
 * load had it (12 at the end against 14 or 15 at the start). So count
 * when the daemon is asleep in epoll_wait(2) with no pidfd, the same
 * sleep before and after the count (TL_WAIT_MS at most, then as it is);
 * -1 when it cannot be counted.
 */
static int daemon_fds(pid_t pid)
{
	int64_t end = tl_now_ms() + TL_WAIT_MS;
	char a[128], b[128];
	int n, pidfds;

	for (;;) {
		bool idle = asleep_in_epoll(pid, a, sizeof(a));

		n = fds_of(pid, &pidfds);
		if (n < 0 || tl_now_ms() >= end)
			return n;
		if (idle && !pidfds && asleep_in_epoll(pid, b, sizeof(b)) &&
		    strcmp(a, b) == 0)
			return n;
		tl_sleep_ms(10);
	}
}

/*
 * Before the baseline, every time: a session hangs up while the daemon
 * does not run (stopped, as a loaded machine may leave it unscheduled),
 * and it runs again 200 ms later, when @ret_waker (ours to reap) sends it
 * SIGCONT. The baseline must not count that session (daemon_fds()).
 */
static int late_close(pid_t daemon, pid_t *ret_waker)
{
	int64_t end = tl_now_ms() + TL_WAIT_MS;
	int fd, pidfds = 0;
	pid_t t;

	if (daemon_fds(daemon) < 0)
		FAIL("late close: the daemon's descriptors cannot be counted");
	fd = tl_raw_connect(sockpath);
	if (fd < 0)
		FAIL("late close: cannot connect to %s", sockpath);
	while (fds_of(daemon, &pidfds) >= 0 && !pidfds && tl_now_ms() < end)
		tl_sleep_ms(5);
	kill(daemon, SIGSTOP);
	close(fd);
	t = fork();
	if (t == 0) {
		tl_sleep_ms(200);
		kill(daemon, SIGCONT);
		_exit(0);
	}
	if (t < 0) {
		kill(daemon, SIGCONT);
		FAIL("late close: fork: %s", strerror(errno));
	}
	*ret_waker = t;
	return 0;
}

static bool has_state(struct fakesd *sd)
{
	char name[256];
	int fd;

	for (size_t i = 0;
	     fakesd_store_get(sd, i, name, sizeof(name), &fd) == 0; i++) {
		close(fd);
		if (strncmp(name, "rb.state.", 9) == 0)
			return true;
	}
	return false;
}

static int storm(uint64_t seed, unsigned long restarts)
{
	struct fakesd_opts o = { .store_max = 65536,
				 .listen_name = "rdmabrokerd.socket" };
	char *argv[11];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct fakesd *sd = NULL;
	char **before = snap_before, **after = snap_after, diff[800];
	struct intent_holder ih;
	struct detached_holder dh = { .ctl = -1 };
	int lfd, base_fds, fds = -1;
	pid_t waker = -1;
	unsigned int modes;
	struct tl_rng r, rd;
	FILE *f;

	tl_rng_seed(&r, seed);
	tl_rng_seed(&rd, seed ^ 0x6465746163686564ull);
	daemon_argv(argv);
	{
		const char *m = getenv("RESTART_STORM_MODES");

		/* Under the fake systemd the daemon refuses SIGUSR2 (a
		 * restart is systemd's), outside it SIGUSR2 is the only way
		 * that keeps anything. */
		modes = m ? (unsigned int)strtoul(m, NULL, 0) : 0;
		if (plain)
			modes = 1u << MODE_REEXEC;
		else if (!(modes & ((1u << MODE_REEXEC) - 1)))
			modes = (1u << MODE_REEXEC) - 1;
	}
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s",
			     sockpath) >= sizeof(sa.sun_path))
		FAIL("%s: too long for a socket", sockpath);
	lfd = plain ? -1 : socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (!plain &&
	    (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	     listen(lfd, 128) < 0))
		FAIL("cannot listen on %s: %s", sockpath, strerror(errno));
	f = fopen(confpath, "w");
	if (!f)
		FAIL("%s: %s", confpath, strerror(errno));
	/* REKEYED: a domain with a rekey count (and no member: another
	 * uid's), which the snapshots compare; the per-import records:
	 * what a killed client's import leaves, counted unaccounted; the
	 * verbs path's window on the soft device: every create an intent
	 * first, and a client may stop inside it (intent_spawn()). */
	fprintf(f,
		"[broker]\nadmin_group = %u\n[domain " DOMAIN "]\n"
		"users = %u\ndm_bytes = 1048576\n[domain " REKEYED "]\n"
		"users = %u\n[soft]\ninternal_objects_per_import = 1\n"
		"intent_window = yes\n",
		(unsigned int)getgid(), (unsigned int)getuid(),
		(unsigned int)getuid() + 1);
	fclose(f);
	o.dir = dir;
	o.listen_fd = lfd;
	o.shuffle_seed = (unsigned int)seed | 1;
	if (plain) {
		prctl(PR_SET_CHILD_SUBREAPER, 1);
		plain_pid = tl_daemon_spawn_logged(
			rundir, sockpath,
			/* info: the log says who passed the listener. */
			(const char *const[]){ "--config", confpath,
					       "--log-level", "info", NULL },
			logpath);
		if (plain_pid < 0 ||
		    tl_wait_socket(plain_pid, sockpath, TL_WAIT_MS) < 0)
			FAIL("the daemon did not start (see %s)", logpath);
	} else if (fakesd_new(&o, &sd) < 0) {
		FAIL("cannot make the fake systemd");
	} else if (fakesd_start(sd, argv, logpath) < 0 ||
		   fakesd_wait_ready(sd, TL_WAIT_MS) < 0) {
		FAIL("the daemon did not get ready (see %s)", logpath);
	}
	tl_sleep_ms(100);
	/* RESTART_STORM_FORCE: run anyway, to see the checks fail. */
	if (!plain && !has_state(sd) && !getenv("RESTART_STORM_FORCE")) {
		fprintf(stderr,
			"restart-storm: the daemon stored no state in the fd "
			"store (no \"rb.state.\" name among %zu stored fds): "
			"it does not survive a restart; skipped\n",
			fakesd_store_count(sd, NULL));
		fakesd_free(sd);
		close(lfd);
		return 77;
	}
	if (ctl_rekey(REKEYED) < 0)
		FAIL("rdmabrokerctl domain rekey " REKEYED " failed");
	if (late_close(daemon_pid(sd), &waker) < 0)
		return -1;
	base_fds = daemon_fds(daemon_pid(sd));
	if (waker > 0)
		waitpid(waker, NULL, 0);
	for (int i = 0; i < N_CLIENTS; i++)
		if (client_spawn(&clients[i], seed * 1000 + (uint64_t)i) < 0)
			return -1;

	for (unsigned long k = 0; k < restarts; k++) {
		int mode = (int)tl_rng_below(&r, N_MODES);

		/* RESTART_STORM_MODES: a mask of the ways to use (bit 0
		 * SIGKILL while working, 1 paused, 2 SIGTERM, 3 SIGUSR2). */
		while (!(modes & (1u << mode)))
			mode = (mode + 1) % N_MODES;
		bool paused = mode != MODE_KILL_BUSY;

		if (intent_spawn(&ih, &r) < 0)
			return -1;
		if (dh.ctl < 0 && detached_spawn(&dh, k) < 0)
			return -1;
		tl_sleep_ms(20 + tl_rng_below(&r, 150));
		for (int i = 0; i < N_CLIENTS; i++) {
			const char *m = client_failure(&clients[i]);

			if (*m)
				FAIL("restart %lu: before it, client %d: %s", k,
				     (int)clients[i].pid, m);
		}
		if (paused &&
		    (all_clients('p', 'P') < 0 || snapshot(before) < 0))
			return -1;
		if (restart_daemon(sd, mode, &r) < 0)
			return -1;
		if (paused) {
			if (all_clients('v', 'V') < 0 || snapshot(after) < 0)
				return -1;
			for (size_t i = 0; i < N_LISTINGS; i++) {
				if (strcmp(before[i], after[i]) != 0) {
					dump(listings[i], before[i], after[i]);
					first_diff(before[i], after[i], diff,
						   sizeof(diff));
					FAIL("restart %lu (%s): rdmabrokerctl "
					     "--json %s differs: %s",
					     k, mode_names[mode], listings[i],
					     diff);
				}
			}
			snaps_free();
			if (all_clients('r', 0) < 0)
				return -1;
		} else if (all_clients('p', 'P') < 0 ||
			   all_clients('v', 'V') < 0 ||
			   all_clients('r', 0) < 0) {
			return -1;
		}
		if (all_clients('p', 'P') < 0 || intent_end(&ih, k) < 0 ||
		    all_clients('r', 0) < 0)
			return -1;
		/* The detached owner lives through one restart or more,
		 * then exits or is killed. */
		if (tl_rng_below(&rd, 2) == 0 &&
		    detached_end(&dh, tl_rng_below(&rd, 2) == 0, k,
				 k - dh.since + 1) < 0)
			return -1;
		/* One client in four restarts is killed: its objects go. */
		if (tl_rng_below(&r, 4) == 0) {
			struct client *c =
				&clients[tl_rng_below(&r, N_CLIENTS)];
			int64_t end = tl_now_ms() + TL_WAIT_MS;
			int left;
			char ack;

			/* Paused, not inside the intent window. */
			if (write(c->ctl, "p", 1) != 1)
				FAIL("restart %lu: client %d is gone", k,
				     (int)c->pid);
			if (!readable(c->ctl))
				FAIL("restart %lu: client %d did not pause "
				     "within %d ms: %s",
				     k, (int)c->pid, 2 * CLIENT_TIMEOUT_MS,
				     why_silent(c->pid, (int)(c - clients)));
			if (read(c->ctl, &ack, 1) != 1 || ack != 'P')
				FAIL("restart %lu: client %d did not pause", k,
				     (int)c->pid);
			kill(c->pid, SIGKILL);
			waitpid(c->pid, NULL, 0);
			close(c->ctl);
			while ((left = objects_of(c->id)) > 0 &&
			       tl_now_ms() < end)
				tl_sleep_ms(50);
			if (left != 0)
				FAIL("restart %lu: client %llu, killed after "
				     "it, still has %d objects",
				     k, (unsigned long long)c->id, left);
			if (client_spawn(c, seed * 1000 + 500 + k) < 0)
				return -1;
		}
		printf("restart %lu: %s, %s\n", k, mode_names[mode],
		       paused ? "listings equal" : "clients unbroken");
	}

	if (dh.ctl >= 0 && detached_end(&dh, tl_rng_below(&rd, 2) == 0,
					restarts, restarts - dh.since) < 0)
		return -1;
	/* Every client goes: half ask, half are killed, paused first: one
	 * killed inside the intent window would leave an unnamed object
	 * that holds its CQ, stuck until a rekey. */
	if (all_clients('p', 'P') < 0)
		return -1;
	for (int i = 0; i < N_CLIENTS; i++) {
		if (i % 2) {
			kill(clients[i].pid, SIGKILL);
		} else if (write(clients[i].ctl, "q", 1) != 1) {
			kill(clients[i].pid, SIGKILL);
		}
		waitpid(clients[i].pid, NULL, 0);
		close(clients[i].ctl);
	}
	{
		int64_t end = tl_now_ms() + 2 * TL_WAIT_MS;
		char *raw = NULL;
		bool clean = false;

		while (!clean && tl_now_ms() < end) {
			free(raw);
			raw = NULL;
			tl_sleep_ms(100);
			if (ctl_json("objects", &raw) < 0)
				continue;
			clean = strcmp(raw, "[]\n") == 0 ||
				strcmp(raw, "[]") == 0;
			if (clean) {
				free(raw);
				raw = NULL;
				if (ctl_json("domains", &raw) == 0)
					clean = strstr(raw, "\"used\":{\"dm_"
							    "bytes\":0,"
							    "\"xrcds\":0,"
							    "\"rss_tables\":0,"
							    "\"objects\":0,") !=
						NULL;
			}
			fds = daemon_fds(daemon_pid(sd));
			clean = clean && fds == base_fds;
		}
		if (!clean)
			snprintf(whybuf, sizeof(whybuf),
				 "at the end: registry or charges not empty, "
				 "or the daemon holds %d fds (%d at start): "
				 "%.400s",
				 fds, base_fds, raw ? raw : "(no listing)");
		free(raw);
		if (!clean)
			return -1;
	}
	if (plain) {
		int st;

		/* Each new binary says who passed its listener: no systemd
		 * did. */
		if (restarts &&
		    (tl_count_in_file(logpath, "the previous rdmabrokerd "
					       "handed over") <= 0 ||
		     tl_count_in_file(logpath, "socket systemd passed")))
			FAIL("after SIGUSR2 the log does not say that the "
			     "previous daemon handed the socket over (%s)",
			     logpath);
		kill(plain_pid, SIGTERM);
		tl_wait_pid(plain_pid, TL_WAIT_MS, &st);
	} else {
		fakesd_kill(sd, SIGTERM);
		fakesd_wait_exit(sd, TL_WAIT_MS);
		fakesd_free(sd);
		close(lfd);
	}
	return 0;
}

/* One storm in a fresh directory: @n restarts, under the fake systemd or
 * (@plain_run) outside it. 0, 77 (skipped) or 1, said on stderr. */
static int run(uint64_t seed, unsigned long n, bool plain_run)
{
	char *d = tl_mkdtemp();
	int ret;

	if (!d)
		return 99;
	plain = plain_run;
	restart_ms = 0;
	memset(clients, 0, sizeof(clients));
	if ((size_t)snprintf(dir, sizeof(dir), "%s", d) >= sizeof(dir) ||
	    (size_t)snprintf(sockpath, sizeof(sockpath), "%s/sock", d) >=
		    sizeof(sockpath)) {
		free(d);
		return 99;
	}
	snprintf(rundir, sizeof(rundir), "%s/run", d);
	snprintf(confpath, sizeof(confpath), "%s/rdmabroker.conf", d);
	snprintf(logpath, sizeof(logpath), "%s/daemon.log", d);
	printf("restart-storm: seed %llu, %lu %s, %d clients\n",
	       (unsigned long long)seed, n,
	       plain ? "re-executions (SIGUSR2, no systemd)" :
		       "restarts under the fake systemd",
	       N_CLIENTS);
	doing_page =
		mmap(NULL, N_CLIENTS * sizeof(*doing_page),
		     PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (doing_page == MAP_FAILED)
		doing_page = NULL;
	ret = storm(seed, n);
	snaps_free();
	if (ret < 0) {
		pid_t t;

		fprintf(stderr, "restart-storm: seed %llu: %s\n",
			(unsigned long long)seed, whybuf);
		fprintf(stderr, "restart-storm: the daemon's log (up to "
				"notice, the last 60 lines):\n");
		fflush(stderr);
		t = fork();
		if (t == 0) {
			/* Its notices, warnings and errors: the restores,
			 * the last ones, which led to the failure. */
			execl("/bin/sh", "sh", "-c",
			      "grep -E '^<[0-5]>' \"$1\" | tail -n 60", "sh",
			      logpath, (char *)NULL);
			_exit(127);
		}
		if (t > 0)
			waitpid(t, NULL, 0);
		ret = 1;
	}
	for (int i = 0; i < N_CLIENTS; i++)
		if (clients[i].pid > 0)
			kill(clients[i].pid, SIGKILL);
	if (plain && plain_pid > 0)
		kill(plain_pid, SIGKILL);
	if (doing_page)
		munmap(doing_page, N_CLIENTS * sizeof(*doing_page));
	doing_page = NULL;
	free(d);
	return ret;
}

int main(void)
{
	const char *s = getenv("RESTART_STORM_SEED");
	const char *n = getenv("RESTART_STORM_RESTARTS");
	const char *x = getenv("RESTART_STORM_REEXECS");
	uint64_t seed = s ? strtoull(s, NULL, 0) : 25;
	unsigned long restarts = n ? strtoul(n, NULL, 0) : 3;
	unsigned long reexecs = x ? strtoul(x, NULL, 0) : 2;
	int ret, ret2 = 0;

	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (tl_init("restart-storm") < 0)
		return 99;
	ret = run(seed, restarts, false);
	if (ret == 0 && reexecs) {
		unsetenv("NOTIFY_SOCKET");
		ret2 = run(seed + 1, reexecs, true);
	}
	tl_fini();
	return ret ? ret : ret2;
}
