// SPDX-License-Identifier: MIT
/*
 * Metrics (issue 26 item 4 and its bad input): the text exposition, what a
 * member sees of it, its pages, the HTTP listener and its bounds, the
 * [metrics] keys. A server in this process (tests/srvlib.h) for all but
 * the last test, which runs the real daemon and rdmabrokerctl metrics.
 * Every text goes through the format check below and, where Debian's
 * prometheus package is installed, through promtool check metrics.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "common/text/text.h"
#include "daemon/config/conf.h"
#include "daemon/registry/domain.h"
#include "daemon/server/metrics-http.h"
#include "daemon/server/metrics-text.h"
#include "daemon/server/server.h"
#include "tests/cklib.h"
#include "tests/objlib.h"
#include "tests/srvlib.h"
#include "tests/testlib.h"

/* metrics-req.c's page: the first page ends before this. */
#define METRICS_PAGE_TEST (32 * 1024)

/* --- the format --------------------------------------------------------- */

static bool name_char(char c, bool first)
{
	return c == '_' || c == ':' || ((c | 32) >= 'a' && (c | 32) <= 'z') ||
	       (!first && c >= '0' && c <= '9');
}

static bool name_ok(const char **p)
{
	const char *s = *p;

	if (!name_char(*s, true))
		return false;
	while (name_char(*s, false))
		s++;
	*p = s;
	return true;
}

/* One sample line: name{label="value",...} number. */
static bool sample_ok(const char *s)
{
	char *end;

	if (!name_ok(&s))
		return false;
	if (*s == '{') {
		s++;
		while (*s != '}') {
			if (!name_ok(&s) || *s++ != '=' || *s++ != '"')
				return false;
			while (*s != '"') {
				if (!*s)
					return false;
				if (*s == '\\') {
					s++;
					if (*s != '\\' && *s != '"' &&
					    *s != 'n')
						return false;
				}
				s++;
			}
			s++;
			if (*s == ',')
				s++;
			else if (*s != '}')
				return false;
		}
		s++;
	}
	if (*s++ != ' ')
		return false;
	if (strcmp(s, "+Inf") == 0 || strcmp(s, "NaN") == 0)
		return true;
	strtod(s, &end);
	return end != s && !*end;
}

/*
 * Whether @text is the text format as the broker must write it: printable
 * UTF-8 lines (text_find_unsafe()), HELP and TYPE before the samples of
 * their family, every sample line well formed, no series twice. The
 * failing line in @why.
 */
static bool exposition_ok(const char *text, char *why, size_t len)
{
	char *copy = strdup(text), *save = NULL, *line;
	char **seen = NULL;
	size_t n = 0, off;
	bool ok = true;

	ck_assert_ptr_nonnull(copy);
	snprintf(why, len, "ok");
	if (!*text || text[strlen(text) - 1] != '\n') {
		snprintf(why, len, "the text does not end with a newline");
		free(copy);
		return false;
	}
	for (line = strtok_r(copy, "\n", &save); line && ok;
	     line = strtok_r(NULL, "\n", &save)) {
		if (text_find_unsafe(line, &off)) {
			ok = false;
		} else if (strncmp(line, "# HELP ", 7) == 0 ||
			   strncmp(line, "# TYPE ", 7) == 0) {
			const char *s = line + 7;

			ok = name_ok(&s) && *s == ' ';
		} else {
			ok = sample_ok(line);
			/* The series is all but the value, after the last
			 * space (a label value may hold spaces). */
			for (size_t i = 0; ok && i < n; i++)
				ok = strrchr(line, ' ') - line !=
					     strrchr(seen[i], ' ') - seen[i] ||
				     strncmp(seen[i], line,
					     (size_t)(strrchr(line, ' ') -
						      line));
			seen = realloc(seen, (n + 1) * sizeof(*seen));
			ck_assert_ptr_nonnull(seen);
			seen[n++] = line;
		}
		if (!ok)
			snprintf(why, len, "bad line: %.200s", line);
	}
	free(seen);
	free(copy);
	return ok;
}

/* promtool check metrics on @text: true when it passes or is not
 * installed (said once). */
static bool promtool_ok(const char *text)
{
	static bool told;
	char path[] = "/tmp/check_metrics.XXXXXX", cmd[256];
	int fd, st;

	if (system("command -v promtool >/dev/null 2>&1") != 0) {
		if (!told)
			fprintf(stderr,
				"check_metrics: promtool not installed "
				"(apt-get install prometheus): only the "
				"suite's own format check runs\n");
		told = true;
		return true;
	}
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s >&2", path);
	st = system(cmd);
	unlink(path);
	return st == 0;
}

#define TEXT_OK(text)                                                          \
	do {                                                                   \
		char why_[256];                                                \
		ck_assert_msg(exposition_ok(text, why_, sizeof(why_)), "%s",   \
			      why_);                                           \
		ck_assert_msg(promtool_ok(text), "promtool refused it");       \
	} while (0)

static char *render(const struct domain *only)
{
	struct metrics_text *t;
	char *s;

	ck_assert_int_eq(metrics_render(&sl_srv, only, &t), 0);
	s = strndup(t->data, t->len);
	ck_assert_ptr_nonnull(s);
	metrics_text_put(t);
	return s;
}

static struct domain *domain_named(const char *name)
{
	struct domain *d;

	TAILQ_FOREACH(d, &sl_srv.core.domains, link)
		if (strcmp(d->name, name) == 0)
			return d;
	return NULL;
}

/* --- label values --------------------------------------------------------- */

START_TEST(t_label_escape)
{
	char buf[512], small[8];

	ck_assert_str_eq(metrics_label(buf, sizeof(buf), "uid-0"), "uid-0");
	/* A quote, a backslash, a newline, ESC, a C1 CSI and a byte that
	 * is no UTF-8: nothing raw, nothing the format reads as the end. */
	ck_assert_str_eq(metrics_label(buf, sizeof(buf),
				       "a\"b\\c\nd\x1b[31m\xc2\x9b\xff"),
			 "a\\\"b\\\\\\\\c\\\\x0ad\\\\x1b[31m\\\\xc2\\\\x9b"
			 "\\\\xff");
	/* Printable UTF-8 stays as it is. */
	ck_assert_str_eq(metrics_label(buf, sizeof(buf), "pod-\xc3\xa9"),
			 "pod-\xc3\xa9");
	/* Cut whole: never half an escape. */
	ck_assert_str_eq(metrics_label(small, sizeof(small), "ab\"cdef"),
			 "ab\\\"cde");
	ck_assert_str_eq(metrics_label(small, sizeof(small), "abcdef\\"),
			 "abcdef");
}
END_TEST

/* --- the text, in-process --------------------------------------------------
 */

static void setup(void)
{
	sl_start("[domain team]\nusers = 65534\nxrcds = 7\n");
}

static void teardown(void)
{
	sl_stop();
}

START_TEST(t_render_figures)
{
	struct ol_client *c = sl_client(0, NULL, true);
	struct ol_obj cq;
	uint64_t dm, hold;
	char *s;

	OK(ol_cq(c, 16, &cq));
	OK(ol_dm_alloc(c, 4096, &dm, &hold));
	s = render(NULL);
	TEXT_OK(s);
	ck_assert_ptr_nonnull(strstr(s, "rdmabroker_domain_clients{domain="
					"\"uid-0\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(s, "rdmabroker_contexts{domain=\"uid-0\","
					"device=\"soft0\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(s, "rdmabroker_objects{domain=\"uid-0\","
					"device=\"soft0\",kind=\"CQ\","
					"state=\"live\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(s, "rdmabroker_dms{domain=\"uid-0\","
					"state=\"in_use\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(s, "rdmabroker_dm_bytes{domain=\"uid-0\","
					"device=\"soft0\"} 4096\n"));
	ck_assert_ptr_nonnull(
		strstr(s, "rdmabroker_device_dm_reserved_bytes{device="
			  "\"soft0\"} 4096\n"));
	/* A configured domain with no member yet: its quota shows. */
	ck_assert_ptr_nonnull(strstr(s, "rdmabroker_quota_limit{domain="
					"\"team\",quota=\"xrcds\"} 7\n"));
	ck_assert_ptr_nonnull(strstr(s, "rdmabroker_requests_total{type="
					"\"obj-create\",error=\"none\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(s, "rdmabroker_cleanup_duration_seconds"
					"_count 0\n"));
	/* No state restored: the first generation (check_restart counts a
	 * restore). */
	ck_assert_ptr_nonnull(strstr(s, "\nrdmabroker_restarts_total 0\n"));
	ck_assert_ptr_nonnull(strstr(s, "\nrdmabroker_generation 1\n"));
	ck_assert_ptr_nonnull(strstr(s, "\nrdmabroker_last_restore_duration_"
					"seconds 0.000000\n"));
	/* Its journal is kept: a restart would keep the sessions. */
	ck_assert_ptr_nonnull(strstr(s, "\nrdmabroker_journal_ok 1\n"));
	free(s);

	/* A refused request counts under its errno's name; the death's
	 * cleanup under the histogram. */
	ck_assert_int_eq(ol_destroy(c, 999999), -ENOENT);
	sl_kill(0);
	for (int i = 0; i < 200 && sl_owner(0); i++) {
		sl_pump();
		tl_sleep_ms(5);
	}
	ck_assert_ptr_null(sl_owner(0));
	s = render(NULL);
	TEXT_OK(s);
	ck_assert_ptr_nonnull(strstr(s,
				     "rdmabroker_requests_total{type="
				     "\"obj-destroy\",error=\"ENOENT\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(s, "rdmabroker_cleanup_duration_seconds"
					"_count 1\n"));
	ck_assert_ptr_nonnull(strstr(s, "rdmabroker_cleanup_duration_seconds"
					"_bucket{le=\"+Inf\"} 1\n"));
	free(s);
}
END_TEST

/* Hostile names (what a cgroup or a device could carry) reach the text
 * escaped: the format holds, nothing raw. */
START_TEST(t_render_hostile_names)
{
	static const char evil[] =
		"x\"} 1\nrdmabroker_fake 9\n\x1b]0;pwn\a\xff";
	struct domain *d;
	char *s;

	sl_client(0, NULL, true);
	d = domain_named("uid-0");
	ck_assert_ptr_nonnull(d);
	snprintf(d->name, sizeof(d->name), "%s", evil);
	snprintf(sl_srv.core.devices.dev[0].name,
		 sizeof(sl_srv.core.devices.dev[0].name), "%s", evil);
	s = render(NULL);
	TEXT_OK(s);
	ck_assert_ptr_null(strstr(s, "\nrdmabroker_fake"));
	ck_assert_ptr_null(strchr(s, '\x1b'));
	ck_assert_ptr_nonnull(
		strstr(s, "rdmabroker_domain_clients{domain="
			  "\"x\\\"} 1\\\\x0ardmabroker_fake 9"
			  "\\\\x0a\\\\x1b]0;pwn\\\\x07\\\\xff\"} 1\n"));
	free(s);
	/* A very long one is cut, still whole. */
	memset(d->name, 'a', sizeof(d->name) - 2);
	d->name[sizeof(d->name) - 2] = '"';
	d->name[sizeof(d->name) - 1] = '\0';
	s = render(NULL);
	TEXT_OK(s);
	free(s);
	snprintf(d->name, sizeof(d->name), "uid-0");
	snprintf(sl_srv.core.devices.dev[0].name,
		 sizeof(sl_srv.core.devices.dev[0].name), "soft0");
}
END_TEST

/* The MetricsRequest at @offset: 0 with the reply in *@ret, or -errno. */
static int metrics_call(struct ol_client *c, uint64_t offset,
			Rdmab__DaemonMessage **ret)
{
	Rdmab__MetricsRequest mr = RDMAB__METRICS_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	req.body_case = RDMAB__REQUEST__BODY_METRICS;
	req.metrics = &mr;
	mr.offset = offset;
	return ol_call(c, &req, ret);
}

/* A member's text: its own domain, nothing of the broker or of other
 * domains (which answer as if they did not exist). */
START_TEST(t_member_view)
{
	Rdmab__DaemonMessage *m;
	struct ol_client *c;
	char *s;

	sl_client(1, NULL, true);
	c = sl_connect(0);
	sl_conns[0]->cl.cred.uid = 65534;
	sl_conns[0]->cl.cred.gid = 65534;
	free(sl_conns[0]->cl.groups);
	sl_conns[0]->cl.groups = NULL;
	sl_conns[0]->cl.n_groups = 0;
	OK(ol_hello(c, NULL));
	ck_assert_str_eq(c->domain, "team");
	OK(metrics_call(c, 0, &m));
	ck_assert_int_eq(m->reply->body_case, RDMAB__REPLY__BODY_METRICS);
	s = strndup((char *)m->reply->metrics->text.data,
		    m->reply->metrics->text.len);
	ck_assert_uint_eq(m->reply->metrics->total, strlen(s));
	ol_free(m);
	TEXT_OK(s);
	ck_assert_ptr_nonnull(strstr(s, "domain=\"team\""));
	ck_assert_ptr_null(strstr(s, "uid-0"));
	ck_assert_ptr_null(strstr(s, "rdmabroker_requests_total"));
	ck_assert_ptr_null(strstr(s, "rdmabroker_connections"));
	ck_assert_ptr_null(strstr(s, "rdmabroker_device_dm_reserved_bytes"));
	free(s);
}
END_TEST

/* The pages of a long text join into the text the first page began,
 * whatever changed in between; a page nobody began, or one that does not
 * start a line, is refused. */
START_TEST(t_pages)
{
	Rdmab__DaemonMessage *m;
	struct ol_client *c;
	struct ol_obj cq;
	char *text = NULL, *now;
	size_t total = 0, off = 0;
	int pages = 0;

	sl_stop();
	{
		/* Enough domains for several pages. */
		size_t cap = 64 * 1024, o = 0;
		char *conf = malloc(cap);

		for (int i = 0; i < 150; i++)
			o += (size_t)snprintf(conf + o, cap - o,
					      "[domain d%03d]\nusers = 65534\n",
					      i);
		sl_start(conf);
		free(conf);
	}
	c = sl_client(0, NULL, true);
	/* No page begun: refused. */
	ck_assert_int_eq(metrics_call(c, 10, &m), -ESTALE);
	do {
		OK(metrics_call(c, off, &m));
		if (!text) {
			total = m->reply->metrics->total;
			text = malloc(total + 1);
			ck_assert_ptr_nonnull(text);
			/* Meanwhile the session makes a CQ: the pages
			 * still show the first page's instant. */
			OK(ol_cq(c, 16, &cq));
		}
		ck_assert_uint_eq(m->reply->metrics->total, total);
		ck_assert_uint_le(off + m->reply->metrics->text.len, total);
		memcpy(text + off, m->reply->metrics->text.data,
		       m->reply->metrics->text.len);
		off += m->reply->metrics->text.len;
		ol_free(m);
		pages++;
	} while (off < total);
	text[total] = '\0';
	ck_assert_int_ge(pages, 3);
	TEXT_OK(text);
	ck_assert_ptr_nonnull(strstr(text, "d149"));
	ck_assert_ptr_null(strstr(text, "kind=\"CQ\""));
	/* The objects come last, pages after the first: a text rendered
	 * now has the CQ. */
	ck_assert_ptr_null(
		memmem(text, METRICS_PAGE_TEST, "rdmabroker_objects", 18));
	now = render(NULL);
	ck_assert_ptr_nonnull(strstr(now, "kind=\"CQ\",state=\"live\"} 1\n"));
	free(now);
	free(text);
	/* Read whole: the snapshot is gone. */
	ck_assert_int_eq(metrics_call(c, 10, &m), -ESTALE);
	/* Not at a line's start. */
	OK(metrics_call(c, 0, &m));
	ck_assert_uint_gt(m->reply->metrics->total,
			  m->reply->metrics->text.len);
	ck_assert_int_eq(
		m->reply->metrics->text.data[m->reply->metrics->text.len - 1],
		'\n');
	ol_free(m);
	ck_assert_int_eq(metrics_call(c, 3, &m), -EINVAL);
	ck_assert_ptr_nonnull(strstr(ol_error, "does not start a page"));
}
END_TEST

/* --- HTTP ------------------------------------------------------------------
 */

static char *http_dir;
static char http_path[108];

static void http_setup(void)
{
	char conf[512];

	http_dir = tl_mkdtemp();
	ck_assert_ptr_nonnull(http_dir);
	snprintf(http_path, sizeof(http_path), "%s/metrics.sock", http_dir);
	snprintf(conf, sizeof(conf),
		 "[metrics]\nlisten = unix:%s\nconnections = 3\n"
		 "timeout = 300ms\n",
		 http_path);
	sl_start(conf);
	/* A permissive umask must not make the socket world-writable. */
	umask(0);
	/* main.c's part. */
	ck_assert_int_eq(metrics_http_start(&sl_srv), 0);
}

static void http_teardown(void)
{
	umask(022);
	metrics_http_stop(&sl_srv);
	sl_stop();
	tl_rmtree(http_dir);
	free(http_dir);
}

static int http_connect(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	ck_assert_int_ge(fd, 0);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", http_path);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* Pump the server until @fd has said all (EOF) or @ms passed; what it
 * said, NUL-terminated, its length in *ret_len; *ret_eof: whether it
 * ended. */
static char *http_read(int fd, int ms, size_t *ret_len, bool *ret_eof)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	int64_t end = tl_now_ms() + ms;

	*ret_eof = false;
	while (tl_now_ms() < end) {
		ssize_t n;

		sl_pump();
		if (len + 1024 > cap) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n == 0 || (n < 0 && errno == ECONNRESET)) {
			*ret_eof = true;
			break;
		}
		if (n > 0)
			len += (size_t)n;
		else
			tl_sleep_ms(1);
	}
	buf[len] = '\0';
	*ret_len = len;
	return buf;
}

/* Whether @r is a response with status @code (HTTP/1.0 or 1.1). */
static bool http_status(const char *r, int code)
{
	char want[16];

	snprintf(want, sizeof(want), " %d ", code);
	return strncmp(r, "HTTP/1.", 7) == 0 && strncmp(r + 8, want, 5) == 0;
}

static char *http_get(const char *request, size_t *ret_len)
{
	int fd = http_connect();
	bool eof;
	char *r;

	ck_assert_int_eq(write(fd, request, strlen(request)),
			 (ssize_t)strlen(request));
	r = http_read(fd, 3000, ret_len, &eof);
	ck_assert(eof);
	close(fd);
	return r;
}

START_TEST(t_http_get)
{
	struct stat st;
	size_t len;
	char *r, *body;

	/* Born 0660, whatever the umask. */
	ck_assert_int_eq(stat(http_path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0660);
	sl_client(0, NULL, true);
	r = http_get("GET /metrics HTTP/1.0\r\n\r\n", &len);
	ck_assert_msg(http_status(r, 200), "%.80s", r);
	ck_assert_ptr_nonnull(strstr(r, "Content-Type: text/plain; "
					"version=0.0.4; charset=utf-8\r\n"));
	body = strstr(r, "\r\n\r\n");
	ck_assert_ptr_nonnull(body);
	TEXT_OK(body + 4);
	ck_assert_ptr_nonnull(strstr(body, "rdmabroker_domain_clients{domain="
					   "\"uid-0\"} 1\n"));
	free(r);
	r = http_get("HEAD /metrics HTTP/1.0\r\n\r\n", &len);
	ck_assert_msg(http_status(r, 200), "%.80s", r);
	ck_assert_ptr_null(strstr(r, "rdmabroker_"));
	free(r);
	/* Read-only, one path. */
	r = http_get("GET / HTTP/1.0\r\n\r\n", &len);
	ck_assert_msg(http_status(r, 404), "%.80s", r);
	free(r);
	r = http_get("POST /metrics HTTP/1.0\r\nContent-Length: 1\r\n\r\nx",
		     &len);
	ck_assert_msg(http_status(r, 405) || http_status(r, 413) ||
			      http_status(r, 501),
		      "%.80s", r);
	ck_assert_ptr_null(strstr(r, "rdmabroker_"));
	free(r);
}
END_TEST

/* A flood of scrapes costs one rendering a second: they share its text. */
START_TEST(t_http_flood)
{
	static const char get[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	int fd = http_connect(), served = 0;
	uint64_t renders = sl_srv.metrics->renders;
	int64_t t0 = tl_now_ms(), ms;
	size_t cap = 1 << 20, len = 0;
	char *buf = malloc(cap);

	ck_assert_ptr_nonnull(buf);
	/* One after the other on one connection, each read whole. */
	for (int i = 0; i < 40; i++) {
		int64_t end = tl_now_ms() + 3000;
		char *p;

		ck_assert_int_eq(write(fd, get, sizeof(get) - 1),
				 (ssize_t)sizeof(get) - 1);
		len = 0;
		while (tl_now_ms() < end) {
			ssize_t n;

			sl_pump();
			n = read(fd, buf + len, cap - len - 1);
			if (n > 0)
				len += (size_t)n;
			buf[len] = '\0';
			p = strstr(buf, "Content-Length: ");
			if (p && strstr(p, "\r\n\r\n") &&
			    strlen(strstr(p, "\r\n\r\n") + 4) ==
				    strtoul(p + 16, NULL, 10))
				break;
		}
		ck_assert_msg(http_status(buf, 200), "%.80s", buf);
		served++;
	}
	ms = tl_now_ms() - t0;
	ck_assert_int_eq(served, 40);
	ck_assert_msg(sl_srv.metrics->renders - renders <=
			      (uint64_t)(ms / METRICS_CACHE_MS) + 1,
		      "%" PRIu64 " renders in %" PRId64 " ms",
		      sl_srv.metrics->renders - renders, ms);
	free(buf);
	close(fd);
}
END_TEST

/* Headers past the bound are refused and the connection goes. */
START_TEST(t_http_big_request)
{
	size_t n = 64 * 1024, len;
	char *req = malloc(n + 64), *r;
	int fd = http_connect();
	bool eof;

	strcpy(req, "GET /metrics HTTP/1.1\r\nX: ");
	memset(req + strlen(req), 'a', n);
	req[n] = '\0';
	/* Written as far as the socket takes it; the server reads. */
	for (size_t off = 0, k = strlen(req); off < k;) {
		ssize_t w = write(fd, req + off, k - off);

		if (w > 0)
			off += (size_t)w;
		else if (errno == EAGAIN)
			sl_pump();
		else
			break;
		if (metrics_http_conns(&sl_srv) == 0 && off > 16384)
			break;
	}
	r = http_read(fd, 3000, &len, &eof);
	ck_assert(eof);
	ck_assert_ptr_null(strstr(r, "rdmabroker_"));
	free(r);
	free(req);
	close(fd);
	for (int i = 0; i < 100 && metrics_http_conns(&sl_srv); i++) {
		sl_pump();
		tl_sleep_ms(5);
	}
	ck_assert_uint_eq(metrics_http_conns(&sl_srv), 0);
}
END_TEST

/* At most [metrics] connections at once: the next waits in the backlog,
 * unserved, until one goes; idle ones go after [metrics] timeout, and so
 * does one that asks and never reads. The broker's own clients are served
 * all along. */
START_TEST(t_http_bounds)
{
	struct ol_client *c = sl_client(0, NULL, true);
	int idle[3], extra, reader, fds_before = tl_count_fds(getpid());
	size_t len;
	bool eof;
	char *r;

	for (int i = 0; i < 3; i++)
		idle[i] = http_connect();
	for (int i = 0; i < 50 && metrics_http_conns(&sl_srv) < 3; i++) {
		sl_pump();
		tl_sleep_ms(2);
	}
	ck_assert_uint_eq(metrics_http_conns(&sl_srv), 3);
	extra = http_connect();
	ck_assert_int_eq(write(extra, "GET /metrics HTTP/1.0\r\n\r\n", 25), 25);
	r = http_read(extra, 100, &len, &eof);
	ck_assert_uint_eq(len, 0);
	ck_assert(!eof);
	free(r);
	ck_assert_uint_eq(metrics_http_conns(&sl_srv), 3);
	{
		Rdmab__StatusRequest sr = RDMAB__STATUS_REQUEST__INIT;
		Rdmab__Request req = RDMAB__REQUEST__INIT;

		req.body_case = RDMAB__REQUEST__BODY_STATUS;
		req.status = &sr;
		OK(ol_request(c, &req));
	}
	/* The idle ones time out (300 ms); the waiting one is served. */
	r = http_read(extra, 3000, &len, &eof);
	ck_assert(eof);
	ck_assert_msg(http_status(r, 200), "%.80s", r);
	free(r);
	close(extra);
	for (int i = 0; i < 3; i++) {
		r = http_read(idle[i], 1000, &len, &eof);
		ck_assert(eof);
		free(r);
		close(idle[i]);
	}

	/* A reader that asks again and again and never reads: its replies
	 * wait in its socket until the timeout ends it. */
	reader = http_connect();
	{
		int small = 4096;

		setsockopt(reader, SOL_SOCKET, SO_RCVBUF, &small,
			   sizeof(small));
	}
	for (int i = 0; i < 200; i++) {
		static const char get[] = "GET /metrics HTTP/1.1\r\n"
					  "Host: x\r\n\r\n";

		if (write(reader, get, sizeof(get) - 1) < 0)
			break;
		sl_pump();
	}
	for (int i = 0; i < 400 && metrics_http_conns(&sl_srv); i++) {
		sl_pump();
		tl_sleep_ms(5);
	}
	ck_assert_uint_eq(metrics_http_conns(&sl_srv), 0);
	close(reader);
	sl_pump();
	ck_assert_int_eq(tl_count_fds(getpid()), fds_before);
}
END_TEST

/* A peer that trickles a byte at a time, each within the timeout, is
 * still cut off after ten timeouts (3 s here). */
START_TEST(t_http_trickle)
{
	static const char get[] = "GET /metrics HTTP/1.1\r\nX: ";
	int fd = http_connect();
	int64_t t0 = tl_now_ms(), end = t0 + 8000;
	bool gone = false;
	char c;

	ck_assert_int_eq(write(fd, get, sizeof(get) - 1),
			 (ssize_t)sizeof(get) - 1);
	while (!gone && tl_now_ms() < end) {
		int64_t next = tl_now_ms() + 100;

		if (write(fd, "a", 1) < 0)
			gone = true;
		while (!gone && tl_now_ms() < next) {
			ssize_t n;

			sl_pump();
			n = read(fd, &c, 1);
			gone = n == 0 || (n < 0 && errno != EAGAIN);
			tl_sleep_ms(5);
		}
	}
	ck_assert(gone);
	ck_assert_int_ge(tl_now_ms() - t0, 2500);
	close(fd);
	for (int i = 0; i < 100 && metrics_http_conns(&sl_srv); i++) {
		sl_pump();
		tl_sleep_ms(5);
	}
	ck_assert_uint_eq(metrics_http_conns(&sl_srv), 0);
}
END_TEST

/* --- [metrics] ------------------------------------------------------------ */

static const char *conf_error(const char *text)
{
	static char err[512];
	char *dir = tl_mkdtemp(), path[256];
	struct config cfg;
	int ret;

	snprintf(path, sizeof(path), "%s/c.conf", dir);
	ck_assert_int_eq(tl_write_conf(path, text), 0);
	err[0] = '\0';
	ret = config_load(path, true, &cfg, err, sizeof(err));
	if (ret == 0) {
		snprintf(err, sizeof(err), "ok %s %u %u", cfg.metrics.listen,
			 cfg.metrics.connections, cfg.metrics.timeout_ms);
		config_free(&cfg);
	}
	tl_rmtree(dir);
	free(dir);
	return err;
}

START_TEST(t_config)
{
	ck_assert_str_eq(conf_error("[metrics]\nlisten = 127.0.0.1:9425\n"),
			 "ok 127.0.0.1:9425 8 10000");
	ck_assert_str_eq(conf_error("[metrics]\nlisten = [::1]:1\n"
				    "connections = 2\ntimeout = 5s\n"),
			 "ok [::1]:1 2 5000");
	ck_assert_str_eq(conf_error("[metrics]\nlisten = unix:/run/m.sock\n"),
			 "ok unix:/run/m.sock 8 10000");
	ck_assert_ptr_nonnull(
		strstr(conf_error("[metrics]\nlisten = localhost:9425\n"),
		       "[metrics] key \"listen\": \"localhost\" is not a "
		       "numeric IPv4 or IPv6 address"));
	ck_assert_ptr_nonnull(
		strstr(conf_error("[metrics]\nlisten = 127.0.0.1:0\n"),
		       "\"0\" is not a port (1-65535)"));
	ck_assert_ptr_nonnull(
		strstr(conf_error("[metrics]\nlisten = 127.0.0.1\n"),
		       "is not ADDRESS:PORT"));
	ck_assert_ptr_nonnull(
		strstr(conf_error("[metrics]\nlisten = unix:m.sock\n"),
		       "an absolute path"));
	ck_assert_ptr_nonnull(strstr(conf_error("[metrics]\nconnections = 0\n"),
				     "out of range 1..1024"));
	ck_assert_ptr_nonnull(strstr(conf_error("[metrics]\nport = 1\n"),
				     "unknown key (known: listen, "
				     "connections, timeout)"));
}
END_TEST

/* --- the real daemon and rdmabrokerctl metrics ------------------------------
 */

static char *run_out(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	size_t cap = 1 << 16, len = 0, n;
	char *buf = malloc(cap);

	ck_assert_ptr_nonnull(p);
	while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (cap - len < 1024)
			buf = realloc(buf, cap *= 2);
	}
	buf[len] = '\0';
	ck_assert_int_eq(pclose(p), 0);
	return buf;
}

START_TEST(t_ctl_metrics)
{
	struct tl_daemon d = { 0 };
	struct ibc_client *cl;
	struct ibc_ctx *ctx;
	char cmd[2048], path[512], *s, *f;

	ck_assert_int_eq(tl_fixture_start(&d, "", &cl, &ctx), 0);
	snprintf(cmd, sizeof(cmd), "'%s' -s '%s' metrics", tl_ctl_path(),
		 d.sock);
	s = run_out(cmd);
	TEXT_OK(s);
	ck_assert_ptr_nonnull(strstr(s, "rdmabroker_contexts{domain=\"uid-"));
	free(s);
	/* --output: the same text, whole, no temporary file left. */
	snprintf(path, sizeof(path), "%s/rdmabroker.prom", d.dir);
	snprintf(cmd, sizeof(cmd),
		 "'%s' -s '%s' metrics --output '%s' && cat '%s' && "
		 "ls '%s' | grep -c tmp || true",
		 tl_ctl_path(), d.sock, path, path, d.dir);
	f = run_out(cmd);
	ck_assert_ptr_nonnull(strstr(f, "# TYPE rdmabroker_build_info gauge"));
	ck_assert_ptr_nonnull(strstr(f, "\n0\n"));
	free(f);
	/* JSON: the text as one string. */
	snprintf(cmd, sizeof(cmd), "'%s' -s '%s' -j metrics", tl_ctl_path(),
		 d.sock);
	f = run_out(cmd);
	ck_assert_msg(strncmp(f,
			      "{\"format\":\"prometheus-text-0.0.4\","
			      "\"text\":\"# HELP rdmabroker_build_info ",
			      70) == 0,
		      "%.100s", f);
	free(f);
	ibc_close(ctx);
	ibc_disconnect(cl);
	ck_assert_int_eq(tl_daemon_stop(&d), 0);
}
END_TEST

static Suite *metrics_suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("text");

	tcase_add_test(tc, t_label_escape);
	tcase_add_test(tc, t_config);
	suite_add_tcase(s, tc);
	tc = tcase_create("render");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, t_render_figures);
	tcase_add_test(tc, t_render_hostile_names);
	tcase_add_test(tc, t_member_view);
	tcase_add_test(tc, t_pages);
	suite_add_tcase(s, tc);
	tc = tcase_create("http");
	tcase_add_checked_fixture(tc, http_setup, http_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, t_http_get);
	tcase_add_test(tc, t_http_flood);
	tcase_add_test(tc, t_http_big_request);
	tcase_add_test(tc, t_http_bounds);
	tcase_add_test(tc, t_http_trickle);
	suite_add_tcase(s, tc);
	tc = tcase_create("ctl");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, t_ctl_metrics);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("metrics", metrics_suite());
}
