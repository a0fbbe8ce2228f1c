// SPDX-License-Identifier: MIT
/*
 * Domains by cgroup against the real rdmabrokerd, on a real cgroup v2
 * mount: clients of one uid in two cgroups land in two domains with two
 * contexts and see nothing of each other (a DM handle, an XRCD name, the
 * listings answer as for what does not exist); a process that moves keeps
 * its session's domain; [domain] cgroups = narrows users =; a hostile
 * cgroup name is read whole and printed escaped; a path too long to keep
 * is refused by name.
 *
 * The clients are agents (tests/agent.c) of uid 4242 moved into cgroups
 * made under the first writable cgroup2 mount (/proc/self/mountinfo);
 * without root, or without such a mount, the program says why and exits
 * 77 (SKIP).
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/agent.h"
#include "tests/cklib.h"
#include "tests/testlib.h"

#define MAX_AGENTS 4
#define AGENT_WAIT_MS 10000
#define UID 4242
/* A directory under the mount, or a cgroup path. */
#define CG_MAX (PATH_MAX + 512)

static char mount_dir[PATH_MAX];
/* The cgroup the mount shows at its top (mountinfo's ROOT). */
static char mount_root[PATH_MAX];
static char base[PATH_MAX + 64];
/* main()'s pid: each test's base is named after it and the test's. */
static pid_t suite_pid;
static struct tl_daemon D;
static struct agent A[MAX_AGENTS];
static size_t n_agents;

/* The first cgroup2 mount in /proc/self/mountinfo: 0, or -ENOENT. */
static int find_cgroup2(char *buf, size_t size)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (ret < 0 && getline(&line, &cap, f) > 0) {
		char mnt[PATH_MAX], *sep = strstr(line, " - ");

		if (!sep || strncmp(sep, " - cgroup2 ", 11) != 0)
			continue;
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT ... */
		if (sscanf(line, "%*s %*s %*s %4095s %4095s", mount_root,
			   mnt) == 2) {
			snprintf(buf, size, "%s", mnt);
			ret = 0;
		}
	}
	free(line);
	fclose(f);
	return ret;
}

/* Is there a cgroup2 mount where this process may make cgroups? Says on
 * stderr why not. */
static bool cgroup2_writable(void)
{
	char probe[PATH_MAX + 64];

	if (find_cgroup2(mount_dir, sizeof(mount_dir)) < 0) {
		fprintf(stderr, "check_cgroups_root: no cgroup2 mount in "
				"/proc/self/mountinfo; skipped\n");
		return false;
	}
	snprintf(probe, sizeof(probe), "%s/rdmab-probe-%d", mount_dir,
		 (int)getpid());
	if (mkdir(probe, 0755) < 0) {
		fprintf(stderr,
			"check_cgroups_root: cannot make a cgroup "
			"under %s (%s); skipped\n",
			mount_dir, strerror(errno));
		return false;
	}
	rmdir(probe);
	return true;
}

/* A cgroup @rel under the suite's base directory. */
static void cg_make(const char *rel, char *ret_dir, size_t size)
{
	snprintf(ret_dir, size, "%s/%s", base, rel);
	ck_assert_msg(mkdir(ret_dir, 0755) == 0 || errno == EEXIST,
		      "mkdir %s: %s", ret_dir, strerror(errno));
}

static void cg_move(const char *dir, pid_t pid)
{
	int err = tl_cgroup_move(dir, pid);

	ck_assert_msg(err == 0, "move %d to %s: %s", (int)pid, dir,
		      strerror(-err));
}

/* Move @pid to the cgroup of directory @dirfd. */
static void cg_move_at(int dirfd, pid_t pid)
{
	int fd = openat(dirfd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
	char text[24];
	int len = snprintf(text, sizeof(text), "%d\n", (int)pid);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, (size_t)len), len);
	close(fd);
}

/* cg_move() for the scene of test_pid_reuse: no Check there. */
static void cg_move_pid(const char *dir, pid_t pid)
{
	(void)tl_cgroup_move(dir, pid);
}

/* @pid's v2 path as the kernel shows it (what the daemon reads). */
static void cg_path_of(pid_t pid, char *buf, size_t size)
{
	char file[64], data[8192];
	ssize_t n;
	char *line;
	int fd;

	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	n = read(fd, data, sizeof(data) - 1);
	close(fd);
	ck_assert_int_gt(n, 0);
	data[n] = '\0';
	line = strstr(data, "0::");
	ck_assert_ptr_nonnull(line);
	line += 3;
	line[strlen(line) - 1] = '\0';
	snprintf(buf, size, "%s", line);
}

/* The v2 path of the cgroup at directory @dir, as the daemon reads it. */
static void cg_path(const char *dir, char *buf, size_t size)
{
	const char *rel = dir + strlen(mount_dir);

	snprintf(buf, size, "%s%s", strcmp(mount_root, "/") ? mount_root : "",
		 rel);
}

/* Remove the tree under @dir, deepest first, once its processes left
 * (find -delete reaches below PATH_MAX). */
static void cg_remove(const char *dir)
{
	char cmd[CG_MAX + 64];

	snprintf(cmd, sizeof(cmd), "find '%s' -type d -delete 2>/dev/null",
		 dir);
	for (int i = 0; i < 200; i++) {
		if (system(cmd) < 0 || access(dir, F_OK) < 0)
			return;
		tl_sleep_ms(10);
	}
}

static void setup(void)
{
	memset(&D, 0, sizeof(D));
	D.pid = -1;
	for (size_t i = 0; i < MAX_AGENTS; i++) {
		A[i].pid = -1;
		A[i].to = A[i].from = -1;
	}
	n_agents = 0;
	snprintf(base, sizeof(base), "%s/rdmab-check-%d-%d", mount_dir,
		 (int)suite_pid, (int)getpid());
	ck_assert_msg(mkdir(base, 0755) == 0, "mkdir %s: %s", base,
		      strerror(errno));
}

static void teardown(void)
{
	for (size_t i = 0; i < MAX_AGENTS; i++)
		agent_stop(&A[i]);
	tl_daemon_stop(&D);
	cg_remove(base);
}

static void daemon_up(const char *conf)
{
	const char *args[] = { "--socket-mode", "0666", NULL };
	int ret = tl_daemon_start_conf(&D, conf, NULL, args, NULL);

	ck_assert_msg(ret == 0, "cannot start the daemon: %s", strerror(-ret));
	ck_assert_int_eq(tl_daemon_share(&D), 0);
}

/* An agent of uid UID (or @uid) in cgroup @dir. */
static struct agent *agent_in(const char *dir, uid_t uid)
{
	struct agent_cred cred = agent_cred(uid, uid, AGENT_END);
	struct agent *a;
	int ret;

	ck_assert_uint_lt(n_agents, MAX_AGENTS);
	a = &A[n_agents++];
	ret = agent_start(a, &cred, D.sock);
	ck_assert_msg(ret == 0, "agent: %s", strerror(-ret));
	cg_move(dir, a->pid);
	return a;
}

static const struct agent_rep *ag(struct agent *a, enum agent_op op,
				  const char *arg, uint32_t flags)
{
	int ret = agent_call(a, op, arg, flags, AGENT_WAIT_MS);

	ck_assert_msg(ret == 0, "agent: operation %d: %s", (int)op,
		      strerror(-ret));
	return &a->rep;
}

static const struct agent_rep *ag_ok(struct agent *a, enum agent_op op,
				     const char *arg, uint32_t flags)
{
	const struct agent_rep *r = ag(a, op, arg, flags);

	ck_assert_msg(r->ret == 0, "agent: operation %d: %s (%s)", (int)op,
		      strerror(-r->ret), r->error);
	return r;
}

static const char per_cgroup[] = "[defaults]\nper = cgroup\n";

START_TEST(test_two_cgroups_two_domains)
{
	char da[CG_MAX], db[CG_MAX], pa[CG_MAX], dom_a[64], dom_b[64];
	char handle[16], other[16], err1[256], err2[256];
	struct agent *a, *b;
	const struct agent_rep *r;
	uint64_t ctx, ino;
	uint32_t n;

	daemon_up(per_cgroup);
	cg_make("a", da, sizeof(da));
	cg_make("b", db, sizeof(db));
	a = agent_in(da, UID);
	b = agent_in(db, UID);
	cg_path_of(a->pid, pa, sizeof(pa));

	r = ag_ok(a, AGENT_CONNECT, NULL, 0);
	snprintf(dom_a, sizeof(dom_a), "%s", r->info.domain);
	ck_assert_msg(strncmp(dom_a, "cgroup-4242-", 12) == 0, "%s", dom_a);
	r = ag_ok(b, AGENT_CONNECT, NULL, 0);
	snprintf(dom_b, sizeof(dom_b), "%s", r->info.domain);
	ck_assert_msg(strncmp(dom_b, "cgroup-4242-", 12) == 0, "%s", dom_b);
	ck_assert_str_ne(dom_a, dom_b);

	/* Two contexts. */
	r = ag_ok(a, AGENT_OPEN, NULL, 0);
	ctx = r->caps.context_id;
	ino = r->soft_ino;
	r = ag_ok(b, AGENT_OPEN, NULL, 0);
	ck_assert_uint_ne(r->caps.context_id, ctx);
	ck_assert_uint_ne(r->soft_ino, ino);

	/* The listings: a's domain and a alone, with its cgroup. */
	r = ag_ok(a, AGENT_LIST_DOMAINS, NULL, 0);
	ck_assert_uint_eq(r->n_list, 1);
	ck_assert_str_eq(r->domains[0].name, dom_a);
	ck_assert_str_eq(r->domains[0].kind, "cgroup");
	ck_assert_str_eq(r->domains[0].cgroup, pa);
	ck_assert(!r->domains[0].cgroup_truncated);
	r = ag_ok(a, AGENT_LIST_CLIENTS, NULL, 0);
	ck_assert_uint_eq(r->n_list, 1);
	ck_assert_str_eq(r->clients[0].cgroup, pa);
	ck_assert_str_eq(r->clients[0].domain, dom_a);

	/* A DM of a's is, to b, a handle of nothing. */
	r = ag_ok(a, AGENT_DM_ALLOC, "4096", 0);
	snprintf(handle, sizeof(handle), "%u", r->dm_handle);
	snprintf(other, sizeof(other), "%u", r->dm_handle + 1000);
	r = ag(b, AGENT_DM_IMPORT, handle, 0);
	ck_assert_int_eq(r->ret, -ENOENT);
	snprintf(err1, sizeof(err1), "%s", r->error);
	r = ag(b, AGENT_DM_IMPORT, other, 0);
	ck_assert_int_eq(r->ret, -ENOENT);
	snprintf(err2, sizeof(err2), "%s", r->error);
	/* The same sentence but for the number asked. */
	ck_assert_uint_eq(strlen(err1) + strlen(other),
			  strlen(err2) + strlen(handle));
	ck_assert_uint_eq(ag_ok(b, AGENT_LIST_DMS, NULL, 0)->n_list, 0);
	ck_assert_uint_eq(ag_ok(a, AGENT_LIST_DMS, NULL, 0)->n_list, 1);

	/* An XRCD name of a's is, to b, a name of nothing: b makes its
	 * own. */
	ag_ok(a, AGENT_XRCD_OPEN, "pod-xrc", O_CREAT);
	r = ag(b, AGENT_XRCD_OPEN, "pod-xrc", 0);
	ck_assert_int_eq(r->ret, -ENOENT);
	snprintf(err1, sizeof(err1), "%s", r->error);
	r = ag(b, AGENT_XRCD_OPEN, "pod-xrx", 0);
	ck_assert_int_eq(r->ret, -ENOENT);
	snprintf(err2, sizeof(err2), "%s", r->error);
	ck_assert_uint_eq(strlen(err1), strlen(err2));
	ck_assert_uint_eq(ag_ok(b, AGENT_LIST_XRCDS, NULL, 0)->n_list, 0);
	ag_ok(b, AGENT_XRCD_OPEN, "pod-xrc", O_CREAT | O_EXCL);
	ck_assert_uint_eq(ag_ok(b, AGENT_LIST_XRCDS, NULL, 0)->n_list, 1);
	ck_assert_uint_eq(ag_ok(a, AGENT_LIST_XRCDS, NULL, 0)->n_list, 1);

	/* Objects: each sees its own domain's only: a's DM and XRCD open,
	 * b's XRCD open. */
	n = ag_ok(a, AGENT_LIST_OBJECTS, NULL, 0)->n_list;
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(ag_ok(b, AGENT_LIST_OBJECTS, NULL, 0)->n_list, 1);

	/* Naming the other's domain is refused as naming one that does not
	 * exist would be. */
	ag_ok(b, AGENT_DISCONNECT, NULL, 0);
	r = ag(b, AGENT_CONNECT, dom_a, 0);
	ck_assert_int_eq(r->ret, -EACCES);
	snprintf(err1, sizeof(err1), "%s", r->error);
	r = ag(b, AGENT_CONNECT, "cgroup-4242-999999", 0);
	ck_assert_int_eq(r->ret, -EACCES);
	snprintf(err2, sizeof(err2), "%s", r->error);
	ck_assert_uint_eq(strlen(err1) + strlen("cgroup-4242-999999"),
			  strlen(err2) + strlen(dom_a));
	r = ag(b, AGENT_CONNECT, "uid-4242", 0);
	ck_assert_int_eq(r->ret, -EACCES);
	ck_assert_msg(strstr(r->error, "per = cgroup"), "%s", r->error);
}
END_TEST

START_TEST(test_same_cgroup_shares)
{
	char da[CG_MAX];
	struct agent *a, *b;
	const struct agent_rep *r;
	uint64_t ctx;
	char dom[64];

	daemon_up(per_cgroup);
	cg_make("a", da, sizeof(da));
	a = agent_in(da, UID);
	b = agent_in(da, UID);
	snprintf(dom, sizeof(dom), "%s",
		 ag_ok(a, AGENT_CONNECT, NULL, 0)->info.domain);
	ck_assert_str_eq(ag_ok(b, AGENT_CONNECT, NULL, 0)->info.domain, dom);
	ctx = ag_ok(a, AGENT_OPEN, NULL, 0)->caps.context_id;
	ck_assert_uint_eq(ag_ok(b, AGENT_OPEN, NULL, 0)->caps.context_id, ctx);
	/* Another uid in the same cgroup: a domain of its own. */
	r = ag_ok(agent_in(da, 65534), AGENT_CONNECT, NULL, 0);
	ck_assert_str_ne(r->info.domain, dom);
}
END_TEST

/* cgroup_depth: the cgroups under one ancestor share its domain. */
START_TEST(test_depth_groups)
{
	char dp[CG_MAX], dx[CG_MAX], dy[CG_MAX], pp[CG_MAX];
	char conf[256], dom[64];
	unsigned int depth = 0;
	struct agent *a, *b;

	cg_make("pod", dp, sizeof(dp));
	cg_make("pod/x", dx, sizeof(dx));
	cg_make("pod/y", dy, sizeof(dy));
	cg_path(dp, pp, sizeof(pp));
	for (const char *c = pp; *c; c++)
		depth += *c == '/';
	snprintf(conf, sizeof(conf),
		 "[defaults]\nper = cgroup\ncgroup_depth = %u\n", depth);
	daemon_up(conf);
	a = agent_in(dx, UID);
	b = agent_in(dy, UID);
	snprintf(dom, sizeof(dom), "%s",
		 ag_ok(a, AGENT_CONNECT, NULL, 0)->info.domain);
	ck_assert_str_eq(ag_ok(b, AGENT_CONNECT, NULL, 0)->info.domain, dom);
	/* The domain shows the ancestor. */
	ck_assert_str_eq(
		ag_ok(a, AGENT_LIST_DOMAINS, NULL, 0)->domains[0].cgroup, pp);
}
END_TEST

/* A process keeps its session's domain when it moves; a new session
 * follows it. */
START_TEST(test_moved_keeps_domain)
{
	char da[CG_MAX], db[CG_MAX], pa[CG_MAX], dom[64];
	struct agent *a;
	const struct agent_rep *r;

	daemon_up(per_cgroup);
	cg_make("a", da, sizeof(da));
	cg_make("b", db, sizeof(db));
	a = agent_in(da, UID);
	cg_path_of(a->pid, pa, sizeof(pa));
	snprintf(dom, sizeof(dom), "%s",
		 ag_ok(a, AGENT_CONNECT, NULL, 0)->info.domain);
	cg_move(db, a->pid);
	ag_ok(a, AGENT_OPEN, NULL, 0);
	r = ag_ok(a, AGENT_LIST_CLIENTS, NULL, 0);
	ck_assert_uint_eq(r->n_list, 1);
	ck_assert_str_eq(r->clients[0].domain, dom);
	ck_assert_str_eq(r->clients[0].cgroup, pa);
	ag_ok(a, AGENT_DISCONNECT, NULL, 0);
	r = ag_ok(a, AGENT_CONNECT, NULL, 0);
	ck_assert_str_ne(r->info.domain, dom);
}
END_TEST

/* [domain] cgroups = alone, and with users = (both must match). */
START_TEST(test_configured_cgroups)
{
	char da[CG_MAX], db[CG_MAX], pa[CG_MAX], conf[2 * CG_MAX + 128];

	cg_make("a", da, sizeof(da));
	cg_make("b", db, sizeof(db));
	cg_path(da, pa, sizeof(pa));
	snprintf(conf, sizeof(conf),
		 "[domain pods]\ncgroups = %s\n"
		 "[domain lab]\nusers = 65534\ncgroups = %s\n",
		 pa, pa);
	daemon_up(conf);
	ck_assert_str_eq(
		ag_ok(agent_in(da, UID), AGENT_CONNECT, NULL, 0)->info.domain,
		"pods");
	ck_assert_str_eq(
		ag_ok(agent_in(db, UID), AGENT_CONNECT, NULL, 0)->info.domain,
		"uid-4242");
	/* 65534 in a: both lists match lab, but pods comes first; asked,
	 * lab takes it. In b it may not join lab. */
	ck_assert_str_eq(ag_ok(agent_in(da, 65534), AGENT_CONNECT, "lab", 0)
				 ->info.domain,
			 "lab");
	ck_assert_int_eq(ag(agent_in(db, 65534), AGENT_CONNECT, "lab", 0)->ret,
			 -EACCES);
}
END_TEST

/* rdmabrokerctl --socket SOCK @a1 @a2 as root: its output, malloc'd. */
static char *ctl_out(const char *a1, const char *a2)
{
	const char *argv[] = {
		tl_ctl_path(), "--socket", D.sock, a1, a2, NULL
	};
	struct agent_cred root = agent_cred(0, 0, AGENT_END);
	char *out = NULL, *err = NULL;
	int status = agent_run(&root, argv, AGENT_WAIT_MS, &out, &err);

	ck_assert_msg(status == 0, "rdmabrokerctl %s: status %d: %s", a1,
		      status, err ? err : "");
	free(err);
	return out;
}

/*
 * A cgroup named to drive a terminal (the kernel refuses a newline in a
 * name, so none can fake a line of /proc/PID/cgroup): the daemon reads the
 * name whole, the listing carries it as it is, and rdmabrokerctl prints it
 * escaped (clients, domains, objects: table and JSON), with no byte of it
 * raw.
 */
START_TEST(test_hostile_name)
{
	static const char evil[] = "x\t0::fake\x1b]0;owned\x07\x1b[2J\xff";
	char de[CG_MAX], pe[CG_MAX];
	const struct agent_rep *r;
	struct agent *a;
	char *out;

	daemon_up(per_cgroup);
	cg_make(evil, de, sizeof(de));
	cg_path(de, pe, sizeof(pe));
	a = agent_in(de, UID);
	ag_ok(a, AGENT_CONNECT, NULL, 0);
	r = ag_ok(a, AGENT_LIST_CLIENTS, NULL, 0);
	ck_assert_uint_eq(r->n_list, 1);
	ck_assert_str_eq(r->clients[0].cgroup, pe);
	r = ag_ok(a, AGENT_LIST_DOMAINS, NULL, 0);
	ck_assert_str_eq(r->domains[0].cgroup, pe);
	/* An object, so that the objects listing has its owner's cgroup. */
	ag_ok(a, AGENT_OPEN, NULL, 0);
	ag_ok(a, AGENT_DM_ALLOC, "4096", 0);

	for (int json = 0; json < 2; json++) {
		const char *cmds[] = { "clients", "domains", "objects" };

		for (size_t i = 0; i < 3; i++) {
			out = ctl_out(json ? "--json" : cmds[i],
				      json ? cmds[i] : NULL);
			ck_assert_msg(!strchr(out, 0x1b) &&
					      !strchr(out, 0x07) &&
					      !strchr(out, '\xff'),
				      "a raw byte of the name in:\n%s", out);
			ck_assert_msg(!strstr(out, "\t0::fake"),
				      "the name's tab raw in:\n%s", out);
			ck_assert_msg(strstr(out, json ? "x\\t0::fake\\u001b" :
							 "x\\x090::fake\\x1b"),
				      "the name is not shown escaped:\n%s",
				      out);
			free(out);
		}
	}
}
END_TEST

/* A path the broker does not keep: with per = cgroup the client is told
 * why; by uid it is served, its cgroup unknown. */
START_TEST(test_path_too_long)
{
	char name[201], conf[64];
	const struct agent_rep *r;
	size_t len = strlen(base);
	struct agent *a;
	int fd;

	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	/* Made a level at a time from the one above: past PATH_MAX, where
	 * only descriptors reach. */
	fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	while (len < 4200) {
		int next;

		ck_assert_int_eq(mkdirat(fd, name, 0755), 0);
		next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ck_assert_int_ge(next, 0);
		close(fd);
		fd = next;
		len += 1 + strlen(name);
	}
	for (int per = 0; per < 2; per++) {
		snprintf(conf, sizeof(conf), "[defaults]\nper = %s\n",
			 per ? "cgroup" : "uid");
		daemon_up(conf);
		a = agent_in(base, UID);
		cg_move_at(fd, a->pid);
		r = ag(a, AGENT_CONNECT, NULL, 0);
		if (per) {
			ck_assert_int_eq(r->ret, -EACCES);
			ck_assert_msg(strstr(r->error, "cgroup") &&
					      strstr(r->error, "too long"),
				      "%s", r->error);
		} else {
			ck_assert_int_eq(r->ret, 0);
			ck_assert_str_eq(r->info.domain, "uid-4242");
			r = ag_ok(a, AGENT_LIST_CLIENTS, NULL, 0);
			ck_assert_str_eq(r->clients[0].cgroup, "");
		}
		agent_stop(a);
		n_agents = 0;
		tl_daemon_stop(&D);
		memset(&D, 0, sizeof(D));
		D.pid = -1;
	}
	close(fd);
}
END_TEST

/*
 * The pid of a peer that exited before the daemon accepted it, taken by a
 * process in another cgroup: the session must not get that cgroup. In a
 * pid namespace of its own (and a /proc of it), where ns_last_pid decides
 * the next pid, so that the reuse is certain: the daemon stopped, P
 * connects and leaves its socket to a child Q, P exits, R takes P's pid
 * in cgroup b, the daemon goes on, Q says hello.
 *
 * Returns 0 when the hello is refused for want of a cgroup or the session
 * closed (the process that connected is dead, which its pidfd says), 1
 * when it was accepted, 2 and up when the scene could not be set (said on
 * stderr).
 */
static int reuse_scene(const char *db)
{
	const char *args[] = { "--socket-mode", "0666", NULL };
	int go_q[2], ready[2], fd = -1, status, ret = 2;
	struct tl_daemon d = { .pid = -1 };
	char msg[256] = "", last[24];
	pid_t p, q = -1, r = -1;
	FILE *f;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("proc", "/proc", "proc", 0, NULL) < 0) {
		perror("reuse: a /proc of the namespace");
		return 2;
	}
	if (tl_daemon_start_conf(&d, per_cgroup, NULL, args, NULL) < 0 ||
	    pipe2(go_q, O_CLOEXEC) < 0 || pipe2(ready, O_CLOEXEC) < 0)
		return 2;
	kill(d.pid, SIGSTOP);
	p = fork();
	if (p == 0) {
		char b;

		fd = tl_raw_connect(d.sock);
		if (fd < 0)
			_exit(3);
		q = fork();
		if (q == 0) {
			pid_t self = getpid();

			/* Q: the socket's holder, once told to. */
			if (write(ready[1], &self, sizeof(self)) !=
				    sizeof(self) ||
			    read(go_q[0], &b, 1) != 1)
				_exit(3);
			status = tl_raw_hello_version(fd, 1, "testlib", msg,
						      sizeof(msg));
			fprintf(stderr, "reuse: hello: %d %s\n", status, msg);
			/* Refused for want of a cgroup, or closed: the
			 * process that connected is dead. */
			_exit(status == 0 ? 1 :
			      status == EACCES || status == -EPIPE ||
					      status == -ECONNRESET ?
					    0 :
					    4);
		}
		_exit(q < 0 ? 3 : 0);
	}
	if (p < 0)
		goto out;
	/* P connected in a: the test's cgroup would do as well, only the
	 * pid's reuse matters. */
	if (read(ready[0], &q, sizeof(q)) != sizeof(q))
		goto out;
	if (waitpid(p, &status, 0) != p || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		goto out;
	snprintf(last, sizeof(last), "%d", (int)p - 1);
	f = fopen("/proc/sys/kernel/ns_last_pid", "we");
	if (!f || fputs(last, f) < 0 || fclose(f) != 0) {
		perror("reuse: ns_last_pid");
		goto out;
	}
	r = fork();
	if (r == 0) {
		pause();
		_exit(0);
	}
	if (r != p) {
		fprintf(stderr, "reuse: the new process got pid %d, not %d\n",
			(int)r, (int)p);
		goto out;
	}
	cg_move_pid(db, r);
	kill(d.pid, SIGCONT);
	if (write(go_q[1], "g", 1) != 1)
		goto out;
	/* Q is P's child, reparented to this process (the namespace's
	 * init) when P exited. */
	if (waitpid(q, &status, 0) == q && WIFEXITED(status))
		ret = WEXITSTATUS(status);
out:
	if (r > 0)
		kill(r, SIGKILL);
	kill(d.pid, SIGCONT);
	tl_daemon_stop(&d);
	return ret;
}

START_TEST(test_pid_reuse)
{
	char db[CG_MAX];
	int status, sv[2], pidfd = -1;
	socklen_t len = sizeof(pidfd);
	pid_t n;

	/* The kernel's pidfd of a peer: without it the broker cannot tell. */
	ck_assert_int_eq(
		socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	if (getsockopt(sv[0], SOL_SOCKET, 77 /* SO_PEERPIDFD */, &pidfd, &len) <
	    0) {
		fprintf(stderr,
			"check_cgroups_root: no SO_PEERPIDFD (%s): "
			"test_pid_reuse skipped\n",
			strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return;
	}
	close(pidfd);
	close(sv[0]);
	close(sv[1]);
	cg_make("b", db, sizeof(db));
	n = fork();
	ck_assert_int_ge(n, 0);
	if (n == 0) {
		pid_t init;

		if (unshare(CLONE_NEWPID | CLONE_NEWNS) < 0)
			_exit(5);
		init = fork();
		if (init == 0)
			_exit(reuse_scene(db));
		_exit(init > 0 && waitpid(init, &status, 0) == init &&
				      WIFEXITED(status) ?
			      WEXITSTATUS(status) :
			      6);
	}
	ck_assert_int_eq(waitpid(n, &status, 0), n);
	ck_assert_msg(WIFEXITED(status), "the scene was killed");
	ck_assert_msg(WEXITSTATUS(status) != 1,
		      "the session of a process that exited got the cgroup "
		      "of the process that took its pid");
	ck_assert_msg(WEXITSTATUS(status) == 0,
		      "the scene could not be set (%d): see stderr",
		      WEXITSTATUS(status));
}
END_TEST

static Suite *cgroups_suite(void)
{
	Suite *s = suite_create("cgroups_root");
	TCase *tc = tcase_create("cgroups");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_two_cgroups_two_domains);
	tcase_add_test(tc, test_same_cgroup_shares);
	tcase_add_test(tc, test_depth_groups);
	tcase_add_test(tc, test_moved_keeps_domain);
	tcase_add_test(tc, test_configured_cgroups);
	tcase_add_test(tc, test_hostile_name);
	tcase_add_test(tc, test_path_too_long);
	tcase_add_test(tc, test_pid_reuse);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	ck_require_root("check_cgroups_root");
	struct dirent *de;
	char prefix[64];
	DIR *dir;
	int ret;

	if (!cgroup2_writable())
		return CK_EXIT_SKIP;
	suite_pid = getpid();
	ret = ck_run("cgroups_root", cgroups_suite());
	/* A failed test skips its teardown; its agents died with it. */
	snprintf(prefix, sizeof(prefix), "rdmab-check-%d-", (int)suite_pid);
	dir = opendir(mount_dir);
	while (dir && (de = readdir(dir))) {
		char path[PATH_MAX + 300];

		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", mount_dir, de->d_name);
		cg_remove(path);
	}
	if (dir)
		closedir(dir);
	return ret;
}
