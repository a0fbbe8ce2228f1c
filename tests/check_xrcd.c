// SPDX-License-Identifier: MIT
/*
 * XRC domains by name against the real daemon on the soft device (which
 * keys XRCDs by inode as the kernel does): every errno of ibc_xrcd_open,
 * the broker's O_CREAT/O_EXCL decisions under a race of eight processes,
 * private names as each domain's own namespace, declared names shared by
 * the domains they list and refused to the others, hostile names (the name
 * rule, checked by the library and again by the broker, a NUL inside a name
 * on the wire included), a planted
 * symlink that is never followed, the permissions of the directory and the
 * files, the xrcds quota, EBUSY on close, a killed client's opens, and the
 * adoption of declared files across a restart.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cklib.h"
#include "tests/testlib.h"

static struct tl_daemon D;
static char conf_path[4096];
static const char *conf_args[] = { "--config", conf_path, NULL };

/* Three domains of this uid; "shared" is declared for a and b. */
static void write_conf(const char *extra)
{
	unsigned int uid = (unsigned int)getuid();
	char *dir = tl_mkdtemp();
	FILE *f;

	ck_assert_ptr_nonnull(dir);
	snprintf(conf_path, sizeof(conf_path), "%s/rdmabroker.conf", dir);
	free(dir);
	f = fopen(conf_path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f,
		"[domain a]\nusers = %u\n[domain b]\nusers = %u\n"
		"[domain c]\nusers = %u\n"
		"[xrcd shared]\ndomains = a, b\n%s",
		uid, uid, uid, extra ? extra : "");
	ck_assert_int_eq(fclose(f), 0);
}

static void start_with(const char *extra)
{
	int ret;

	write_conf(extra);
	ret = tl_daemon_start(&D, conf_args);
	ck_assert_msg(ret == 0, "cannot start %s: %s", tl_daemon_path(),
		      strerror(-ret));
}

static void setup(void)
{
	start_with(NULL);
}

static void teardown(void)
{
	tl_daemon_stop(&D);
}

/* A client in @domain (NULL: its uid's own) with its context. */
static struct ibc_client *join(const char *domain, struct ibc_ctx **ret_ctx)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_TIMEOUT,
		.socket_path = D.sock,
		.timeout_ms = 20000,
		.domain = domain,
	};
	struct ibc_client *cl;
	int ret;

	if (domain)
		attr.comp_mask |= IBC_CONNECT_ATTR_DOMAIN;
	ret = ibc_connect(&attr, &cl);
	ck_assert_msg(ret == 0, "connect to %s: %s", domain ? domain : "-",
		      ibc_last_error());
	ret = ibc_open(cl, NULL, ret_ctx);
	ck_assert_msg(ret == 0, "open: %s", ibc_last_error());
	return cl;
}

static void xrcd_dir(char *buf, size_t size)
{
	snprintf(buf, size, "%s/xrcd", D.dir);
}

/* Entries of the XRCD directory. */
static int count_files(void)
{
	char path[PATH_MAX];
	struct dirent *e;
	int n = 0;
	DIR *d;

	xrcd_dir(path, sizeof(path));
	d = opendir(path);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

START_TEST(test_errnos)
{
	struct ibc_client *cl;
	struct ibc_ctx *x;
	struct ibc_xrcd *a, *b, *z = NULL;
	char longname[80];

	cl = join("a", &x);
	ck_assert_int_eq(ibc_xrcd_open(NULL, "n", O_CREAT, &a), -EINVAL);
	ck_assert_int_eq(ibc_xrcd_open(x, NULL, O_CREAT, &a), -EINVAL);
	ck_assert_int_eq(ibc_xrcd_open(x, "n", O_CREAT, NULL), -EINVAL);
	/* A missing name without O_CREAT. */
	ck_assert_int_eq(ibc_xrcd_open(x, "n", 0, &a), -ENOENT);
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "O_CREAT"));
	/* O_EXCL needs O_CREAT; other flags are refused. */
	ck_assert_int_eq(ibc_xrcd_open(x, "n", O_EXCL, &a), -EINVAL);
	ck_assert_int_eq(ibc_xrcd_open(x, "n", O_CREAT | O_TRUNC, &a), -EINVAL);
	ck_assert_int_eq(ibc_xrcd_open(x, "n", O_CREAT | O_EXCL, &a), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "n", O_CREAT | O_EXCL, &z), -EEXIST);
	ck_assert_ptr_null(z);
	ck_assert_int_eq(ibc_xrcd_open(x, "n", O_CREAT, &b), 0);
	ck_assert_uint_ne(ibc_xrcd_ino(a), 0);
	ck_assert_uint_eq(ibc_xrcd_ino(a), ibc_xrcd_ino(b));
	ck_assert_int_eq(ibc_xrcd_open(x, "n", 0, &z), 0);
	ck_assert_int_eq(ibc_xrcd_close(z), 0);
	/* The soft device has no libibverbs objects. */
	ck_assert_ptr_null(ibc_verbs_xrcd(a));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_int_eq(ibc_xrcd_close(NULL), -EINVAL);
	ck_assert_int_eq(ibc_xrcd_close(a), 0);
	ck_assert_int_eq(ibc_xrcd_close(b), 0);
	/* The last open of an undeclared name removes it. */
	ck_assert_int_eq(ibc_xrcd_open(x, "n", 0, &a), -ENOENT);
	ck_assert_int_eq(count_files(), 0);
	/* 64 bytes is the longest name. */
	memset(longname, 'x', 64);
	longname[64] = '\0';
	ck_assert_int_eq(ibc_xrcd_open(x, longname, O_CREAT, &a), 0);
	ck_assert_int_eq(ibc_xrcd_close(a), 0);
	longname[64] = 'x';
	longname[65] = '\0';
	ck_assert_int_eq(ibc_xrcd_open(x, longname, O_CREAT, &a), -EINVAL);
	ibc_disconnect(cl);
}
END_TEST

START_TEST(test_hostile_names)
{
	static const char *const bad[] = {
		"",	     ".",   "..",	 "a/b",	 "/etc/passwd",
		"../escape", "x\n", "tab\there", "\x7f", "\x1b[31m",
	};
	char path[PATH_MAX], target[PATH_MAX];
	struct ibc_client *cl;
	struct ibc_ctx *x;
	struct ibc_xrcd *a;
	struct stat st;

	cl = join(NULL, &x);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(ibc_xrcd_open(x, bad[i], O_CREAT, &a) == -EINVAL,
			      "name %zu accepted", i);
		ck_assert_ptr_nonnull(strstr(ibc_last_error(), "1 to 64"));
	}
	ck_assert_int_eq(count_files(), 0);
	/* A symlink planted where the broker would create its first
	 * private file: it is never followed, the broker takes another
	 * name. */
	snprintf(target, sizeof(target), "%s/outside", D.dir);
	xrcd_dir(path, sizeof(path));
	strncat(path, "/p.1", sizeof(path) - strlen(path) - 1);
	ck_assert_int_eq(symlink(target, path), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "victim", O_CREAT, &a), 0);
	errno = 0;
	ck_assert_int_eq(lstat(target, &st), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(count_files(), 2);
	ck_assert_int_eq(ibc_xrcd_close(a), 0);
	/* Only the broker's file went; the link is not its. */
	ck_assert_int_eq(count_files(), 1);
	ck_assert_int_eq(lstat(target, &st), -1);
	ibc_disconnect(cl);
}
END_TEST

START_TEST(test_permissions)
{
	char path[PATH_MAX], fdpath[64], link[PATH_MAX], line[256];
	struct ibc_client *cl;
	struct ibc_ctx *x;
	struct ibc_xrcd *a;
	struct dirent *e;
	bool seen = false;
	struct stat st;
	DIR *d;

	cl = join(NULL, &x);
	ck_assert_int_eq(ibc_xrcd_open(x, "perm", O_CREAT, &a), 0);
	xrcd_dir(path, sizeof(path));
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	strncat(path, "/p.1", sizeof(path) - strlen(path) - 1);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	ck_assert_uint_eq((uint64_t)st.st_ino, ibc_xrcd_ino(a));
	/* What clients receive is a dup of the daemon's descriptor of the
	 * file: read-only, close-on-exec. */
	snprintf(fdpath, sizeof(fdpath), "/proc/%d/fd", (int)D.pid);
	d = opendir(fdpath);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		char p[PATH_MAX];
		ssize_t n;
		FILE *f;

		snprintf(p, sizeof(p), "%s/%s", fdpath, e->d_name);
		n = readlink(p, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (strcmp(link, path) != 0)
			continue;
		snprintf(p, sizeof(p), "/proc/%d/fdinfo/%s", (int)D.pid,
			 e->d_name);
		f = fopen(p, "r");
		ck_assert_ptr_nonnull(f);
		while (fgets(line, sizeof(line), f)) {
			unsigned int flags;

			if (sscanf(line, "flags: %o", &flags) != 1)
				continue;
			ck_assert_uint_eq(flags & O_ACCMODE, O_RDONLY);
			ck_assert(flags & O_CLOEXEC);
			seen = true;
		}
		fclose(f);
	}
	closedir(d);
	ck_assert(seen);
	ck_assert_int_eq(ibc_xrcd_close(a), 0);
	ibc_disconnect(cl);
}
END_TEST

START_TEST(test_domains)
{
	struct ibc_client *ca, *cb, *cc;
	struct ibc_ctx *xa, *xb, *xc;
	struct ibc_xrcd *sa, *sb, *pa, *pb, *z = NULL;

	ca = join("a", &xa);
	cb = join("b", &xb);
	cc = join("c", &xc);
	/* A declared name: one XRCD for a and b. */
	ck_assert_int_eq(ibc_xrcd_open(xa, "shared", O_CREAT, &sa), 0);
	ck_assert_int_eq(ibc_xrcd_open(xb, "shared", 0, &sb), 0);
	ck_assert_uint_eq(ibc_xrcd_ino(sa), ibc_xrcd_ino(sb));
	/* c is not listed: refused with a sentence naming the domains. */
	ck_assert_int_eq(ibc_xrcd_open(xc, "shared", O_CREAT, &z), -EACCES);
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "a, b"));
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "domain c"));
	ck_assert_ptr_null(z);
	/* Private names: each domain's own namespace. */
	ck_assert_int_eq(ibc_xrcd_open(xa, "mine", O_CREAT | O_EXCL, &pa), 0);
	ck_assert_int_eq(ibc_xrcd_open(xb, "mine", 0, &z), -ENOENT);
	ck_assert_int_eq(ibc_xrcd_open(xb, "mine", O_CREAT | O_EXCL, &pb), 0);
	ck_assert_uint_ne(ibc_xrcd_ino(pa), ibc_xrcd_ino(pb));
	ck_assert_int_eq(ibc_xrcd_close(pa), 0);
	ck_assert_int_eq(ibc_xrcd_close(pb), 0);
	/* A declared XRCD is persistent: it outlives its opens. */
	ck_assert_int_eq(ibc_xrcd_close(sa), 0);
	ck_assert_int_eq(ibc_xrcd_close(sb), 0);
	ck_assert_int_eq(ibc_xrcd_open(xb, "shared", O_CREAT | O_EXCL, &z),
			 -EEXIST);
	ck_assert_int_eq(ibc_xrcd_open(xb, "shared", 0, &sb), 0);
	ck_assert_int_eq(ibc_xrcd_close(sb), 0);
	ck_assert_int_eq(count_files(), 1);
	ibc_disconnect(ca);
	ibc_disconnect(cb);
	ibc_disconnect(cc);
}
END_TEST

/* Eight processes open one name at once; each reports its result and
 * inode, then holds the open until told to go. */
static void race(int oflags, int *ret_ok, int *ret_exist, uint64_t *inos)
{
	enum { N = 8 };
	int res[2], go[2];
	pid_t pids[N];

	ck_assert_int_eq(pipe(res), 0);
	ck_assert_int_eq(pipe(go), 0);
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0) {
			struct {
				int ret;
				uint64_t ino;
			} out = { 0, 0 };
			struct ibc_client *cl;
			struct ibc_ctx *x;
			struct ibc_xrcd *xr;
			char c;

			close(res[0]);
			close(go[1]);
			if (tl_connect(D.sock, 20000, &cl) < 0 ||
			    ibc_open(cl, NULL, &x) < 0)
				_exit(2);
			out.ret = ibc_xrcd_open(x, "race", oflags, &xr);
			if (out.ret == 0)
				out.ino = ibc_xrcd_ino(xr);
			if (write(res[1], &out, sizeof(out)) != sizeof(out))
				_exit(3);
			(void)!read(go[0], &c, 1);
			_exit(0);
		}
	}
	close(res[1]);
	close(go[0]);
	*ret_ok = *ret_exist = 0;
	for (int i = 0; i < N; i++) {
		struct {
			int ret;
			uint64_t ino;
		} out;

		ck_assert_int_eq(read(res[0], &out, sizeof(out)), sizeof(out));
		if (out.ret == 0)
			inos[(*ret_ok)++] = out.ino;
		else if (out.ret == -EEXIST)
			(*ret_exist)++;
	}
	/* While every open is held: one file. */
	ck_assert_int_eq(count_files(), 1);
	close(go[1]);
	close(res[0]);
	for (int i = 0; i < N; i++) {
		int st;

		ck_assert_int_eq(waitpid(pids[i], &st, 0), pids[i]);
		ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
}

START_TEST(test_race_creat)
{
	uint64_t inos[8];
	int ok, exist;

	race(O_CREAT, &ok, &exist, inos);
	ck_assert_int_eq(ok, 8);
	for (int i = 1; i < ok; i++)
		ck_assert_uint_eq(inos[i], inos[0]);
}
END_TEST

START_TEST(test_race_excl)
{
	uint64_t inos[8];
	int ok, exist;

	race(O_CREAT | O_EXCL, &ok, &exist, inos);
	ck_assert_int_eq(ok, 1);
	ck_assert_int_eq(exist, 7);
}
END_TEST

START_TEST(test_quota)
{
	struct ibc_client *cl;
	struct ibc_ctx *x;
	struct ibc_xrcd *a, *b, *z;

	tl_daemon_stop(&D);
	start_with("[defaults]\nxrcds = 2\n");
	cl = join(NULL, &x);
	/* Opens count, not names. */
	ck_assert_int_eq(ibc_xrcd_open(x, "q", O_CREAT, &a), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "q", O_CREAT, &b), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "q", O_CREAT, &z), -EDQUOT);
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "quota of 2"));
	ck_assert_int_eq(ibc_xrcd_close(b), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "other", O_CREAT, &b), 0);
	ck_assert_int_eq(ibc_xrcd_close(a), 0);
	ck_assert_int_eq(ibc_xrcd_close(b), 0);
	ibc_disconnect(cl);
}
END_TEST

START_TEST(test_killed_client)
{
	struct ibc_client *cl;
	struct ibc_ctx *x;
	struct ibc_xrcd *a;
	int p[2], st;
	pid_t pid;
	char c;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct ibc_client *kc;
		struct ibc_ctx *kx;
		struct ibc_xrcd *kxr;

		if (tl_connect(D.sock, 20000, &kc) < 0 ||
		    ibc_open(kc, NULL, &kx) < 0 ||
		    ibc_xrcd_open(kx, "dies", O_CREAT, &kxr) < 0)
			_exit(2);
		(void)!write(p[1], "k", 1);
		pause();
		_exit(0);
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], &c, 1), 1);
	close(p[0]);
	cl = join(NULL, &x);
	ck_assert_int_eq(ibc_xrcd_open(x, "dies", 0, &a), 0);
	ck_assert_int_eq(ibc_xrcd_close(a), 0);
	ck_assert_int_eq(count_files(), 1);
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	/* The cleanup drops its open: the undeclared name goes. */
	for (int i = 0; i < 200 && count_files(); i++)
		tl_sleep_ms(10);
	ck_assert_int_eq(count_files(), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "dies", 0, &a), -ENOENT);
	ibc_disconnect(cl);
}
END_TEST

START_TEST(test_adoption)
{
	char path[PATH_MAX], leftover[PATH_MAX + 16], target[PATH_MAX];
	struct ibc_client *cl;
	struct ibc_ctx *x;
	struct ibc_xrcd *a, *p;
	uint64_t ino;
	struct stat st;
	int st_;
	pid_t pid;

	cl = join("a", &x);
	ck_assert_int_eq(ibc_xrcd_open(x, "shared", O_CREAT, &a), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "private", O_CREAT, &p), 0);
	ino = ibc_xrcd_ino(a);
	ibc_disconnect(cl);
	/* Stop the daemon, keep its runtime directory
	 * (RuntimeDirectoryPreserve=restart). */
	ck_assert_int_eq(kill(D.pid, SIGTERM), 0);
	ck_assert_int_eq(tl_wait_pid(D.pid, 10000, &st_), 0);
	ck_assert(WIFEXITED(st_) && WEXITSTATUS(st_) == 0);
	/* Leftovers: an undeclared file and a symlink to the outside. */
	xrcd_dir(path, sizeof(path));
	snprintf(leftover, sizeof(leftover), "%s/p.77", path);
	ck_assert_int_eq(close(open(leftover, O_CREAT | O_WRONLY, 0600)), 0);
	snprintf(target, sizeof(target), "%s/outside", D.dir);
	snprintf(leftover, sizeof(leftover), "%s/d.gone", path);
	ck_assert_int_eq(symlink(target, leftover), 0);
	pid = tl_daemon_spawn(D.dir, D.sock, conf_args);
	ck_assert_int_gt(pid, 0);
	D.pid = pid;
	ck_assert_int_eq(tl_wait_socket(pid, D.sock, 10000), 0);
	/* Only the declared file is left, adopted: the same XRCD. */
	ck_assert_int_eq(count_files(), 1);
	ck_assert_int_eq(lstat(target, &st), -1);
	cl = join("b", &x);
	ck_assert_int_eq(ibc_xrcd_open(x, "shared", 0, &a), 0);
	ck_assert_uint_eq(ibc_xrcd_ino(a), ino);
	ck_assert_int_eq(ibc_xrcd_open(x, "private", 0, &p), -ENOENT);
	ck_assert_int_eq(ibc_xrcd_close(a), 0);
	ibc_disconnect(cl);
}
END_TEST

/* Objects of @kind in the registry that the caller sees. */
static size_t count_objects(struct ibc_client *cl, enum ibc_obj_kind kind)
{
	struct ibc_object_info *o;
	size_t n, k = 0;

	ck_assert_int_eq(ibc_list_objects(cl, NULL, &o, sizeof(*o), &n), 0);
	for (size_t i = 0; i < n; i++)
		if (o[i].kind == kind)
			k++;
	ibc_list_free(o);
	return k;
}

/* What holds @client's open of @name, as the listing shows it. */
static void open_objs(struct ibc_client *cl, const char *name, uint64_t client,
		      uint32_t *ret_srqs, uint32_t *ret_qps)
{
	struct ibc_xrcd_info *l;
	size_t n;
	bool found = false;

	ck_assert_int_eq(ibc_list_xrcds(cl, name, &l, sizeof(*l), &n), 0);
	ck_assert_uint_eq(n, 1);
	for (uint32_t k = 0; k < l[0].n_opens_shown; k++)
		if (l[0].opens[k].client_id == client) {
			ck_assert(!l[0].open_objs[k].own);
			*ret_srqs = l[0].open_objs[k].srqs;
			*ret_qps = l[0].open_objs[k].qps;
			found = true;
		}
	ibc_list_free(l);
	ck_assert_msg(found, "client %llu has no open of %s",
		      (unsigned long long)client, name);
}

static uint64_t client_id(struct ibc_client *cl)
{
	struct ibc_client_info ci;

	ck_assert_int_eq(ibc_client_info(cl, &ci, sizeof(ci)), 0);
	return ci.client_id;
}

static int ctl(char *out, size_t size, const char *args);

/* How many opens of @name the broker lists for @client. */
static unsigned int opens_of(struct ibc_client *cl, const char *name,
			     uint64_t client)
{
	struct ibc_xrcd_info *l;
	unsigned int opens = 0;
	size_t n;

	ck_assert_int_eq(ibc_list_xrcds(cl, name, &l, sizeof(*l), &n), 0);
	for (size_t i = 0; i < n; i++)
		for (uint32_t k = 0; k < l[i].n_opens_shown; k++)
			opens += l[i].opens[k].client_id == client;
	ibc_list_free(l);
	return opens;
}

/* ibc_close() of a context with opens that XRC SRQs and target QPs still
 * use: the library closes the opens with the broker after what uses them
 * (the XRCD family's objects come after the core's in the teardown), and
 * the session lives on without them. */
START_TEST(test_close_with_users)
{
	struct ibv_srq_attr sa = { .max_wr = 16, .max_sge = 1 };
	struct ibc_client *ca, *cb;
	struct ibc_ctx *xa, *xb;
	struct ibc_xrcd *a, *a2, *b;
	struct ibc_cq *cq;
	struct ibc_srq *srq;
	struct ibc_qp *tgt;
	uint64_t id;

	ca = join("a", &xa);
	cb = join("b", &xb);
	id = client_id(ca);
	ck_assert_int_eq(ibc_xrcd_open(xb, "shared", O_CREAT, &b), 0);
	ck_assert_int_eq(ibc_xrcd_open(xa, "shared", 0, &a), 0);
	ck_assert_int_eq(ibc_xrcd_open(xa, "mine", O_CREAT, &a2), 0);
	ck_assert_int_eq(ibc_cq_create(xa, 16, &cq), 0);
	ck_assert_int_eq(ibc_srq_create_xrc(a, cq, &sa, &srq), 0);
	ck_assert_int_eq(ibc_qp_create_xrc_tgt(a2, &tgt), 0);
	ck_assert_uint_eq(opens_of(ca, "shared", id), 1);
	ck_assert_uint_eq(opens_of(ca, "mine", id), 1);
	ibc_close(xa);
	ck_assert_uint_eq(opens_of(ca, "shared", id), 0);
	ck_assert_uint_eq(opens_of(ca, "mine", id), 0);
	ck_assert_uint_eq(opens_of(cb, "shared", client_id(cb)), 1);
	/* The last open of an undeclared name went: the name with it. */
	ck_assert_int_eq(ibc_open(ca, NULL, &xa), 0);
	ck_assert_int_eq(ibc_xrcd_open(xa, "mine", 0, &a2), -ENOENT);
	ck_assert_int_eq(ibc_xrcd_close(b), 0);
	ibc_disconnect(ca);
	ibc_disconnect(cb);
}
END_TEST

START_TEST(test_srq_tgt)
{
	uint32_t srqs = 9, qps = 9;
	char out[16384], want[128];
	struct ibv_srq_attr sa = { .max_wr = 16, .max_sge = 1 };
	struct ibc_client *ca, *cb;
	struct ibc_ctx *xa, *xb;
	struct ibc_xrcd *a, *b, *other;
	struct ibc_cq *cq;
	struct ibc_srq *srq, *basic;
	struct ibc_qp *tgt, *opened, *z = NULL, *snd;
	struct ibc_qp_attr qa = { .qp_type = IBV_QPT_XRC_SEND };

	ca = join("a", &xa);
	cb = join("b", &xb);
	ck_assert_int_eq(ibc_xrcd_open(xa, "shared", O_CREAT, &a), 0);
	ck_assert_int_eq(ibc_xrcd_open(xb, "shared", 0, &b), 0);
	ck_assert_int_eq(ibc_xrcd_open(xb, "other", O_CREAT, &other), 0);
	ck_assert_int_eq(ibc_cq_create(xa, 16, &cq), 0);
	ck_assert_int_eq(ibc_srq_create_xrc(a, cq, &sa, &srq), 0);
	ck_assert_uint_ne(ibc_srq_num(srq), 0);
	ck_assert_int_eq(ibc_srq_create(xa, &sa, &basic), 0);
	ck_assert_uint_eq(ibc_srq_num(basic), 0);
	ck_assert_int_eq(ibc_srq_destroy(basic), 0);
	ck_assert_int_eq(ibc_srq_create_xrc(NULL, cq, &sa, &srq), -EINVAL);
	/* The CQ must be of the XRCD's context. */
	ck_assert_int_eq(ibc_srq_create_xrc(b, cq, &sa, &basic), -EINVAL);
	ck_assert_int_eq(ibc_qp_create_xrc_tgt(a, &tgt), 0);
	ck_assert_uint_ne(ibc_qp_num(tgt), 0);
	/* Another domain that shares the XRCD opens the target QP by
	 * number; an XRCD of another inode cannot. */
	ck_assert_int_eq(ibc_qp_open_xrc_tgt(b, ibc_qp_num(tgt), &opened), 0);
	ck_assert_uint_eq(ibc_qp_num(opened), ibc_qp_num(tgt));
	ck_assert_int_eq(ibc_qp_open_xrc_tgt(other, ibc_qp_num(tgt), &z),
			 -EINVAL);
	ck_assert_int_eq(ibc_qp_open_xrc_tgt(b, 0, &z), -EINVAL);
	ck_assert_int_eq(ibc_qp_open_xrc_tgt(b, 0xfffff0, &z), -EINVAL);
	ck_assert_ptr_null(z);
	/* The sending side: an XRC_SEND QP. */
	qa.send_cq = cq;
	qa.cap.max_send_wr = 4;
	qa.cap.max_send_sge = 1;
	ck_assert_int_eq(ibc_qp_create(xa, &qa, &snd), 0);
	ck_assert_int_eq(ibc_qp_destroy(snd), 0);
	/* The listing shows what holds each open: a's SRQ and target QP,
	 * b's target QP opened by number. */
	open_objs(ca, "shared", client_id(ca), &srqs, &qps);
	ck_assert_uint_eq(srqs, 1);
	ck_assert_uint_eq(qps, 1);
	open_objs(cb, "shared", client_id(cb), &srqs, &qps);
	ck_assert_uint_eq(srqs, 0);
	ck_assert_uint_eq(qps, 1);
	open_objs(cb, "other", client_id(cb), &srqs, &qps);
	ck_assert_uint_eq(srqs + qps, 0);
	ck_assert_int_eq(ctl(out, sizeof(out), "xrcd show shared"), 0);
	snprintf(want, sizeof(want), "client %llu (pid %d, domain a): object ",
		 (unsigned long long)client_id(ca), (int)getpid());
	ck_assert_msg(strstr(out, want) && strstr(out, "1 SRQ, 1 QP\n") &&
			      strstr(out, "0 SRQs, 1 QP\n"),
		      "%s", out);
	ck_assert_int_eq(ctl(out, sizeof(out), "--json xrcd show shared"), 0);
	ck_assert_msg(strstr(out, "\"srqs\":1,\"qps\":1,\"own\":false") &&
			      strstr(out, "\"srqs\":0,\"qps\":1,"),
		      "%s", out);
	/* The kernel's per-open rule: EBUSY while this open's SRQs or QPs
	 * exist. */
	ck_assert_int_eq(ibc_xrcd_close(a), -EBUSY);
	ck_assert_ptr_nonnull(strstr(ibc_last_error(), "XRC SRQs or QPs"));
	ck_assert_int_eq(ibc_srq_destroy(srq), 0);
	open_objs(ca, "shared", client_id(ca), &srqs, &qps);
	ck_assert_uint_eq(srqs, 0);
	ck_assert_uint_eq(qps, 1);
	ck_assert_int_eq(ibc_xrcd_close(a), -EBUSY);
	/* The creator's QP goes; the opened one stays usable. */
	ck_assert_int_eq(ibc_qp_destroy(tgt), 0);
	ck_assert_int_eq(ibc_xrcd_close(a), 0);
	ck_assert_int_eq(ibc_xrcd_close(b), -EBUSY);
	ck_assert_int_eq(ibc_qp_destroy(opened), 0);
	ck_assert_int_eq(ibc_xrcd_close(b), 0);
	ck_assert_int_eq(ibc_xrcd_close(other), 0);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	ibc_disconnect(ca);
	ibc_disconnect(cb);
}
END_TEST

START_TEST(test_killed_with_srqs)
{
	struct ibc_client *cl;
	struct ibc_ctx *x;
	int p[2], st;
	pid_t pid;
	char c;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct ibv_srq_attr sa = { .max_wr = 8, .max_sge = 1 };
		struct ibc_client *kc;
		struct ibc_ctx *kx;
		struct ibc_xrcd *kxr;
		struct ibc_cq *cq;
		struct ibc_srq *s1, *s2;
		struct ibc_qp *q;

		if (tl_connect(D.sock, 20000, &kc) < 0 ||
		    ibc_open(kc, NULL, &kx) < 0 ||
		    ibc_xrcd_open(kx, "held", O_CREAT, &kxr) < 0 ||
		    ibc_cq_create(kx, 8, &cq) < 0 ||
		    ibc_srq_create_xrc(kxr, cq, &sa, &s1) < 0 ||
		    ibc_srq_create_xrc(kxr, cq, &sa, &s2) < 0 ||
		    ibc_qp_create_xrc_tgt(kxr, &q) < 0)
			_exit(2);
		(void)!write(p[1], "k", 1);
		pause();
		_exit(0);
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], &c, 1), 1);
	close(p[0]);
	cl = join(NULL, &x);
	ck_assert_uint_eq(count_objects(cl, IBC_OBJ_SRQ), 2);
	ck_assert_uint_eq(count_objects(cl, IBC_OBJ_XRCD), 1);
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	for (int i = 0;
	     i < 200 && (count_files() || count_objects(cl, IBC_OBJ_SRQ)); i++)
		tl_sleep_ms(10);
	ck_assert_uint_eq(count_objects(cl, IBC_OBJ_SRQ), 0);
	ck_assert_uint_eq(count_objects(cl, IBC_OBJ_QP), 0);
	ck_assert_uint_eq(count_objects(cl, IBC_OBJ_XRCD), 0);
	ck_assert_int_eq(count_files(), 0);
	ibc_disconnect(cl);
}
END_TEST

/* rdmabrokerctl --socket SOCK ARGS (no shell quoting needed: the tests'
 * arguments are plain words); its exit status, stdout in @out. */
static int ctl(char *out, size_t size, const char *args)
{
	char cmd[8192];
	size_t n = 0;
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd), "%s --socket %s %s 2>/dev/null",
		 tl_ctl_path(), D.sock, args);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	while (n + 1 < size && fgets(out + n, (int)(size - n), f))
		n += strlen(out + n);
	out[n] = '\0';
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(test_ctl)
{
	struct ibc_client *cl;
	struct ibc_ctx *x;
	struct ibc_xrcd *a, *p;
	char out[16384];

	cl = join("a", &x);
	ck_assert_int_eq(ibc_xrcd_open(x, "shared", O_CREAT, &a), 0);
	ck_assert_int_eq(ibc_xrcd_open(x, "mine", O_CREAT, &p), 0);
	ck_assert_int_eq(ctl(out, sizeof(out), "--json xrcd"), 0);
	ck_assert_msg(strstr(out, "{\"name\":\"shared\",\"owner_domain\":\"\","
				  "\"domains\":[\"a\",\"b\"]"),
		      "%s", out);
	ck_assert_msg(strstr(out, "\"persistent\":true,\"opens\":1"), "%s",
		      out);
	ck_assert_msg(strstr(out, "\"name\":\"mine\",\"owner_domain\":\"a\""),
		      "%s", out);
	ck_assert_int_eq(ctl(out, sizeof(out), "xrcd show shared"), 0);
	ck_assert_msg(strstr(out, "declared") && strstr(out, "a, b") &&
			      strstr(out, "soft"),
		      "%s", out);
	ck_assert_int_eq(ctl(out, sizeof(out), "xrcd show nothing"), 1);
	ck_assert_int_eq(ctl(out, sizeof(out), "xrcd frobnicate"), 2);
	ck_assert_int_eq(ctl(out, sizeof(out), "xrcd remove"), 2);
	/* Held: refused (EBUSY for administrators, EPERM for others). */
	ck_assert_int_eq(ctl(out, sizeof(out), "xrcd remove shared"), 1);
	ck_assert_int_eq(ibc_xrcd_close(a), 0);
	ck_assert_int_eq(ibc_xrcd_close(p), 0);
	ck_assert_int_eq(count_files(), 1);
	if (geteuid() == 0) {
		ck_assert_int_eq(ctl(out, sizeof(out), "xrcd remove shared"),
				 0);
		ck_assert_int_eq(count_files(), 0);
		ck_assert_int_eq(ctl(out, sizeof(out), "xrcd remove shared"),
				 1);
	}
	ibc_disconnect(cl);
}
END_TEST

/* The listing follows the ABI growth rule: the caller's entry size. */
START_TEST(test_list_abi)
{
	struct {
		struct ibc_xrcd_info i;
		unsigned char tail[64];
	} * big;
	struct ibc_xrcd_info *l;
	struct ibc_client *cl;
	struct ibc_ctx *x;
	struct ibc_xrcd *a;
	size_t n;

	cl = join("a", &x);
	ck_assert_int_eq(ibc_xrcd_open(x, "abi", O_CREAT, &a), 0);
	ck_assert_int_eq(ibc_list_xrcds(cl, NULL, &l,
					offsetof(struct ibc_xrcd_info, opens),
					&n),
			 -EINVAL);
	ck_assert_int_eq(ibc_list_xrcds(cl, "abi",
					(struct ibc_xrcd_info **)&big,
					sizeof(*big), &n),
			 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(big[0].i.name, "abi");
	ck_assert_str_eq(big[0].i.owner_domain, "a");
	ck_assert_uint_eq(big[0].i.ino, ibc_xrcd_ino(a));
	ck_assert_uint_eq(big[0].i.n_opens, 1);
	ck_assert_uint_eq(big[0].i.n_opens_shown, 1);
	for (size_t k = 0; k < sizeof(big[0].tail); k++)
		ck_assert_uint_eq(big[0].tail[k], 0);
	ibc_list_free(big);
	ck_assert_int_eq(ibc_list_xrcds(cl, "none", &l, sizeof(*l), &n), 0);
	ck_assert_uint_eq(n, 0);
	ibc_list_free(l);
	ck_assert_int_eq(ibc_xrcd_close(a), 0);
	ibc_disconnect(cl);
}
END_TEST

static void setup_two_devices(void)
{
	start_with("[soft]\ndevices = 2\n");
}

/* The devices the broker holds @name open on, as listed. */
static void held_on(struct ibc_client *cl, const char *name, char *buf,
		    size_t size, uint32_t *ret_opens)
{
	struct ibc_xrcd_info *l;
	size_t n;

	ck_assert_int_eq(ibc_list_xrcds(cl, name, &l, sizeof(*l), &n), 0);
	ck_assert_uint_eq(n, 1);
	snprintf(buf, size, "%s", l[0].devices);
	*ret_opens = l[0].n_opens;
	ibc_list_free(l);
}

/*
 * One name on two devices is two kernel XRCDs and one file: the same
 * inode on both, a hold of the daemon's on each, a target QP of one that
 * the other's XRCD cannot open (another kernel XRCD), and closing the open
 * on one device leaves the other's working.
 */
START_TEST(test_two_devices)
{
	struct ibv_srq_attr sa = { .max_wr = 16, .max_sge = 1 };
	struct ibc_client *cl;
	struct ibc_ctx *x0, *x1;
	struct ibc_xrcd *a, *b, *a2;
	struct ibc_qp *tgt, *z = NULL;
	struct ibc_srq *srq;
	struct ibc_cq *cq;
	char devs[256];
	uint32_t opens;

	cl = join("a", &x0);
	ck_assert_int_eq(ibc_open(cl, "soft1", &x1), 0);
	ck_assert_int_eq(ibc_xrcd_open(x0, "two", O_CREAT, &a), 0);
	ck_assert_int_eq(ibc_xrcd_open(x1, "two", 0, &b), 0);
	ck_assert_uint_eq(ibc_xrcd_ino(a), ibc_xrcd_ino(b));
	ck_assert_int_eq(count_files(), 1);
	held_on(cl, "two", devs, sizeof(devs), &opens);
	ck_assert_str_eq(devs, "soft0, soft1");
	ck_assert_uint_eq(opens, 2);
	/* Two kernel XRCDs: soft0's target QP is not in soft1's. */
	ck_assert_int_eq(ibc_qp_create_xrc_tgt(a, &tgt), 0);
	ck_assert_int_eq(ibc_qp_open_xrc_tgt(b, ibc_qp_num(tgt), &z), -EINVAL);
	ck_assert_ptr_null(z);
	ck_assert_int_eq(ibc_qp_destroy(tgt), 0);
	/* Closing on soft0 leaves soft1's open, its file and its XRCD. */
	ck_assert_int_eq(ibc_xrcd_close(a), 0);
	ck_assert_int_eq(count_files(), 1);
	held_on(cl, "two", devs, sizeof(devs), &opens);
	ck_assert_uint_eq(opens, 1);
	ck_assert_ptr_nonnull(strstr(devs, "soft1"));
	ck_assert_int_eq(ibc_cq_create(x1, 16, &cq), 0);
	ck_assert_int_eq(ibc_srq_create_xrc(b, cq, &sa, &srq), 0);
	/* The name is still there: soft0 opens the same inode again. */
	ck_assert_int_eq(ibc_xrcd_open(x0, "two", 0, &a2), 0);
	ck_assert_uint_eq(ibc_xrcd_ino(a2), ibc_xrcd_ino(b));
	ck_assert_int_eq(ibc_xrcd_close(a2), 0);
	ck_assert_int_eq(ibc_srq_destroy(srq), 0);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	ck_assert_int_eq(ibc_xrcd_close(b), 0);
	ck_assert_int_eq(count_files(), 0);
	ibc_disconnect(cl);
}
END_TEST

/* The configuration again with @xrcd_section for the XRCDs, and SIGHUP. */
static void rewrite_conf(const char *xrcd_section)
{
	unsigned int uid = (unsigned int)getuid();
	char text[1024];

	snprintf(text, sizeof(text),
		 "[domain a]\nusers = %u\n[domain b]\nusers = %u\n"
		 "[domain c]\nusers = %u\n%s",
		 uid, uid, uid, xrcd_section);
	ck_assert_int_eq(tl_write_conf(conf_path, text), 0);
	ck_assert_int_eq(kill(D.pid, SIGHUP), 0);
}

/* Until domain c's open of "shared" without O_CREAT answers @want. */
static void wait_c_sees(struct ibc_ctx *cx, int want)
{
	struct ibc_xrcd *z;
	int ret = 0;

	for (int i = 0; i < 500; i++) {
		ret = ibc_xrcd_open(cx, "shared", 0, &z);
		if (ret == 0)
			ibc_xrcd_close(z);
		if (ret == want)
			return;
		tl_sleep_ms(10);
	}
	ck_abort_msg("domain c still gets %d, not %d", ret, want);
}

/*
 * A declared name that a reload undeclares while it is held, then a
 * reload declares again: the listed domains open it again, the same file
 * and inode, not an error for the file the undeclared one still holds.
 */
START_TEST(test_redeclared_while_held)
{
	struct ibc_client *ca, *cb, *cc;
	struct ibc_ctx *xa, *xb, *xc;
	struct ibc_xrcd *a, *b = NULL;
	int ret;

	ca = join("a", &xa);
	cb = join("b", &xb);
	cc = join("c", &xc);
	ck_assert_int_eq(ibc_xrcd_open(xa, "shared", O_CREAT, &a), 0);
	wait_c_sees(xc, -EACCES);
	rewrite_conf("");
	wait_c_sees(xc, -ENOENT);
	rewrite_conf("[xrcd shared]\ndomains = a, b\n");
	wait_c_sees(xc, -EACCES);
	ret = ibc_xrcd_open(xb, "shared", O_CREAT, &b);
	ck_assert_msg(ret == 0, "b's open of the declared-again name: %d (%s)",
		      ret, ibc_last_error());
	ck_assert_uint_eq(ibc_xrcd_ino(b), ibc_xrcd_ino(a));
	ck_assert_int_eq(ibc_xrcd_close(b), 0);
	ck_assert_int_eq(ibc_xrcd_close(a), 0);
	ibc_disconnect(cc);
	ibc_disconnect(cb);
	ibc_disconnect(ca);
}
END_TEST

/* Names the rule refuses (common/xrcd/xrcd-name.h), as bytes that a C string
 * can carry: what ibc_xrcd_open() refuses before sending them. */
static const char *const unprintable[] = {
	"a\xc2\x9b[31m", /* U+009B, CSI: C1 */
	"a\xc2\x85",	 /* U+0085, NEL: C1 */
	"a\xe2\x80\xae"
	"b", /* U+202E, right-to-left override */
	"\xe2\x81\xa6"
	"a",		 /* U+2066, left-to-right isolate */
	"a\xe2\x80\xa8", /* U+2028, line separator */
	"a\xe2\x80\x8b"
	"b", /* U+200B, zero width space */
	"\xef\xbb\xbf"
	"a",		/* U+FEFF, byte order mark */
	"a\xff",	/* not UTF-8 */
	"a\x80",	/* a stray continuation byte */
	"\xc0\xaf",	/* overlong '/' */
	"\xed\xa0\x80", /* a surrogate */
	"a\xe2\x80",	/* cut short */
};

/* The library refuses each before sending it, with a sentence that shows
 * it escaped; printable UTF-8 of any script is a name. */
START_TEST(test_name_rule)
{
	static const char *const good[] = {
		"caf\xc3\xa9",
		"\xe5\x90\x8d\xe5\x89\x8d",
		"with space",
		"a-b_c.d",
	};
	struct ibc_client *cl;
	struct ibc_ctx *x;
	struct ibc_xrcd *a;
	size_t off;

	cl = join(NULL, &x);
	for (size_t i = 0; i < sizeof(unprintable) / sizeof(unprintable[0]);
	     i++) {
		const char *e;

		a = NULL;
		ck_assert_msg(ibc_xrcd_open(x, unprintable[i], O_CREAT, &a) ==
				      -EINVAL,
			      "name %zu accepted", i);
		ck_assert_ptr_null(a);
		e = ibc_last_error();
		ck_assert_msg(tl_text_safe(e, strlen(e), NULL, &off),
			      "name %zu: the error shows byte %zu raw: %s", i,
			      off, e);
		ck_assert_msg(strstr(e, "\\x") && strstr(e, "printable UTF-8"),
			      "name %zu: %s", i, e);
		ck_assert_int_eq(ibc_admin_xrcd_remove(cl, unprintable[i]),
				 -EINVAL);
	}
	ck_assert_int_eq(count_files(), 0);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ck_assert_msg(ibc_xrcd_open(x, good[i], O_CREAT, &a) == 0,
			      "name %zu: %s", i, ibc_last_error());
		ck_assert_int_eq(ibc_xrcd_close(a), 0);
	}
	ibc_disconnect(cl);
}
END_TEST

/* Send @req on the raw session @s, with a fresh serial; its reply. */
static Rdmab__DaemonMessage *raw_call(int s, Rdmab__Request *req)
{
	static uint64_t serial = 100;
	Rdmab__DaemonMessage *m;

	req->version = WIRE_PROTOCOL_VERSION;
	req->serial = ++serial;
	ck_assert_int_eq(tl_send_request(s, req, NULL, 0), 0);
	ck_assert_int_eq(tl_recv_msg(s, TL_WAIT_MS, &m), 1);
	ck_assert(m->kind_case == RDMAB__DAEMON_MESSAGE__KIND_REPLY);
	ck_assert_uint_eq(m->reply->serial, serial);
	return m;
}

/* A raw session of this uid with the soft context open: the socket, and
 * the context's id in *ret_ctx. */
static int raw_session(uint64_t *ret_ctx)
{
	Rdmab__OpenContextRequest oc = RDMAB__OPEN_CONTEXT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	int s = tl_raw_connect(D.sock);

	ck_assert_int_ge(s, 0);
	ck_assert_int_eq(tl_raw_hello(s, 1), 0);
	req.body_case = RDMAB__REQUEST__BODY_OPEN_CONTEXT;
	req.open_context = &oc;
	m = raw_call(s, &req);
	ck_assert_int_eq(m->reply->error, 0);
	ck_assert(m->reply->body_case == RDMAB__REPLY__BODY_OPEN_CONTEXT);
	*ret_ctx = m->reply->open_context->context_id;
	rdmab__daemon_message__free_unpacked(m, NULL);
	return s;
}

/* An XrcdOpenRequest (O_CREAT) for the @len bytes at @name: the reply's
 * error, with its sentence in @msg. */
static int raw_xrcd_open(int s, uint64_t ctx, const char *name, size_t len,
			 char *msg, size_t size)
{
	Rdmab__XrcdOpenRequest xo = RDMAB__XRCD_OPEN_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	int err;

	xo.context_id = ctx;
	xo.name.data = (uint8_t *)name;
	xo.name.len = len;
	xo.oflags = O_CREAT;
	req.body_case = RDMAB__REQUEST__BODY_XRCD_OPEN;
	req.xrcd_open = &xo;
	m = raw_call(s, &req);
	err = m->reply->error;
	snprintf(msg, size, "%s", m->reply->message ? m->reply->message : "");
	rdmab__daemon_message__free_unpacked(m, NULL);
	return err;
}

/*
 * The broker's own check, from a client that skips the library's: a NUL
 * inside a name is refused, not cut at (the name field was a string, and
 * "a\0b" made the XRCD "a"), and so is every unprintable name, with a
 * sentence that shows it escaped.
 */
START_TEST(test_name_wire)
{
	struct ibc_xrcd_info *l;
	struct ibc_client *cl;
	struct ibc_ctx *x;
	char msg[512];
	uint64_t ctx;
	size_t n, off;
	int s = raw_session(&ctx);

	ck_assert_int_eq(raw_xrcd_open(s, ctx, "a\0b", 3, msg, sizeof(msg)),
			 EINVAL);
	ck_assert_msg(strstr(msg, "\"a\\x00b\": byte 2 is a NUL"), "%s", msg);
	ck_assert_int_eq(raw_xrcd_open(s, ctx, "a\0", 2, msg, sizeof(msg)),
			 EINVAL);
	for (size_t i = 0; i < sizeof(unprintable) / sizeof(unprintable[0]);
	     i++) {
		ck_assert_int_eq(raw_xrcd_open(s, ctx, unprintable[i],
					       strlen(unprintable[i]), msg,
					       sizeof(msg)),
				 EINVAL);
		ck_assert_msg(tl_text_safe(msg, strlen(msg), NULL, &off),
			      "name %zu: the sentence shows byte %zu raw: %s",
			      i, off, msg);
	}
	ck_assert_int_eq(count_files(), 0);
	cl = join(NULL, &x);
	ck_assert_int_eq(ibc_list_xrcds(cl, "a", &l, sizeof(*l), &n), 0);
	ck_assert_uint_eq(n, 0);
	ibc_list_free(l);
	/* The same session goes on: a good name still works. */
	ck_assert_int_eq(raw_xrcd_open(s, ctx, "ab", 2, msg, sizeof(msg)), 0);
	close(s);
	ibc_disconnect(cl);
}
END_TEST

static Suite *xrcd_suite(void)
{
	Suite *s = suite_create("xrcd");
	TCase *tc = tcase_create("xrcd");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_errnos);
	tcase_add_test(tc, test_hostile_names);
	tcase_add_test(tc, test_permissions);
	tcase_add_test(tc, test_domains);
	tcase_add_test(tc, test_race_creat);
	tcase_add_test(tc, test_race_excl);
	tcase_add_test(tc, test_quota);
	tcase_add_test(tc, test_killed_client);
	tcase_add_test(tc, test_adoption);
	tcase_add_test(tc, test_srq_tgt);
	tcase_add_test(tc, test_close_with_users);
	tcase_add_test(tc, test_killed_with_srqs);
	tcase_add_test(tc, test_ctl);
	tcase_add_test(tc, test_list_abi);
	tcase_add_test(tc, test_redeclared_while_held);
	tcase_add_test(tc, test_name_rule);
	tcase_add_test(tc, test_name_wire);
	suite_add_tcase(s, tc);
	tc = tcase_create("two devices");
	tcase_add_checked_fixture(tc, setup_two_devices, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_two_devices);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("check_xrcd", xrcd_suite());
}
