// SPDX-License-Identifier: MIT
/*
 * Cgroups (cgroup.h): a peer's v2 path read from /proc and tied to its
 * pidfd, and a glob matcher of our own rather than fnmatch(3): a peer
 * chooses the path (a delegated subtree lets it name cgroups), and
 * fnmatch backtracks over '*' for as long as the path lets it, while
 * this one walks the path once.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/registry/cgroup.h"

/* /proc/PID/cgroup: a line per v1 hierarchy before the v2 one; more than
 * this is refused rather than read on. */
#define CGROUP_FILE_MAX (64 * 1024)

static int cgroup_read_file(int fd, char *buf, size_t cap, size_t *ret_len)
{
	size_t len = 0;

	for (;;) {
		ssize_t n = read(fd, buf + len, cap - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == cap)
			return -ENAMETOOLONG;
	}
	*ret_len = len;
	return 0;
}

/*
 * The v2 line, "0::PATH", is the last: the kernel lists hierarchies
 * newest first and the v2 one is made at boot. Its path is taken to the
 * end of the file, so that a v2 cgroup named with a newline (mkdir takes
 * any byte but '/' and NUL) is read whole instead of ending the line.
 * v1 hierarchies, where such a name could fake a "0::" line, are only
 * the administrator's to write.
 */
static int cgroup_parse(const char *buf, size_t len, const char **ret_path,
			size_t *ret_len)
{
	size_t pos = 0;

	while (pos < len) {
		const char *nl;

		if (len - pos >= 3 && memcmp(buf + pos, "0::", 3) == 0) {
			size_t plen = len - pos - 3;

			if (plen && buf[len - 1] == '\n')
				plen--;
			if (!plen || buf[pos + 3] != '/' ||
			    memchr(buf + pos + 3, '\0', plen))
				return -ENOENT;
			/* The kernel cuts a longer path to PATH_MAX - 1
			 * bytes and says nothing: a path of that length may
			 * be a cut one, shared by several cgroups. */
			if (plen >= CGROUP_PATH_MAX - 1)
				return -ENAMETOOLONG;
			*ret_path = buf + pos + 3;
			*ret_len = plen;
			return 0;
		}
		nl = memchr(buf + pos, '\n', len - pos);
		if (!nl)
			break;
		pos = (size_t)(nl - buf) + 1;
	}
	return -ENOENT;
}

int cgroup_of_pid(pid_t pid, int pidfd, char **ret_path)
{
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
	char file[64], *buf = NULL, *copy;
	const char *path;
	size_t len = 0, plen;
	int fd, ret;

	if (pidfd < 0)
		return -ENOSYS;
	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	buf = malloc(CGROUP_FILE_MAX);
	ret = buf ? cgroup_read_file(fd, buf, CGROUP_FILE_MAX, &len) : -ENOMEM;
	if (ret < 0)
		goto out;
	ret = cgroup_parse(buf, len, &path, &plen);
	if (ret < 0)
		goto out;
	/* Readable: the process exited, and its number may be another's. */
	ret = poll(&pfd, 1, 0);
	if (ret < 0) {
		ret = -errno;
		goto out;
	}
	if (ret > 0) {
		ret = -ESRCH;
		goto out;
	}
	copy = strndup(path, plen);
	if (!copy) {
		ret = -ENOMEM;
		goto out;
	}
	*ret_path = copy;
	ret = 0;
out:
	free(buf);
	close(fd);
	return ret;
}

const char *cgroup_strerror(int err)
{
	switch (err) {
	case -ESRCH:
		return "the process that connected has exited";
	case -ENOENT:
		return "the process is in no cgroup v2 hierarchy";
	case -ENAMETOOLONG:
		return "its path is too long (4095 bytes or more)";
	case -ENOSYS:
		return "the kernel gives no pidfd of the process";
	default:
		return strerror(-err);
	}
}

/* One step of a glob: '*', or one byte of a set. */
struct glob_tok {
	bool star;
	uint8_t set[32];
};

static void set_add(uint8_t *set, unsigned char c)
{
	set[c / 8] |= (uint8_t)(1u << (c % 8));
}

static bool set_has(const uint8_t *set, unsigned char c)
{
	return set[c / 8] & (1u << (c % 8));
}

static int glob_fail(char *why, size_t whylen, const char *text)
{
	if (why)
		snprintf(why, whylen, "%s", text);
	return -EINVAL;
}

/* "[...]" at @*pp (after the '['): into @t's set; @*pp past the ']'. */
static int glob_class(const char **pp, struct glob_tok *t, char *why,
		      size_t whylen)
{
	const unsigned char *p = (const unsigned char *)*pp;
	bool negate = false, first = true;

	if (*p == '!' || *p == '^') {
		negate = true;
		p++;
	}
	while (*p && (first || *p != ']')) {
		unsigned char lo, hi;

		first = false;
		if (*p == '\\' && !*++p)
			break;
		lo = *p++;
		hi = lo;
		if (*p == '-' && p[1] && p[1] != ']') {
			p++;
			if (*p == '\\' && !*++p)
				break;
			hi = *p++;
			if (hi < lo)
				return glob_fail(why, whylen,
						 "a range in [...] runs "
						 "backwards");
		}
		for (unsigned int c = lo; c <= hi; c++)
			set_add(t->set, (unsigned char)c);
	}
	if (*p != ']')
		return glob_fail(why, whylen, "a '[' is not closed by ']'");
	if (negate)
		for (size_t i = 0; i < sizeof(t->set); i++)
			t->set[i] = (uint8_t)~t->set[i];
	*pp = (const char *)p + 1;
	return 0;
}

/* @glob into at most CGROUP_GLOB_MAX tokens; runs of '*' are one. */
static int glob_compile(const char *glob, struct glob_tok *toks, size_t *ret_n,
			char *why, size_t whylen)
{
	const char *p = glob;
	size_t n = 0;
	int ret;

	if (!*glob)
		return glob_fail(why, whylen, "an empty pattern");
	if (strlen(glob) >= CGROUP_GLOB_MAX)
		return glob_fail(why, whylen, "longer than 255 bytes");
	while (*p) {
		struct glob_tok *t = &toks[n];

		memset(t, 0, sizeof(*t));
		if (*p == '*') {
			p++;
			if (n && toks[n - 1].star)
				continue;
			t->star = true;
		} else if (*p == '?') {
			p++;
			memset(t->set, 0xff, sizeof(t->set));
		} else if (*p == '[') {
			p++;
			ret = glob_class(&p, t, why, whylen);
			if (ret < 0)
				return ret;
		} else {
			if (*p == '\\' && !*++p)
				return glob_fail(why, whylen,
						 "it ends in a lone '\\'");
			set_add(t->set, (unsigned char)*p++);
		}
		n++;
	}
	/* A path begins with '/': a glob that cannot is a mistake. */
	if (!toks[0].star && !set_has(toks[0].set, '/'))
		return glob_fail(why, whylen,
				 "it matches no cgroup: a cgroup path begins "
				 "with '/' (or give a wildcard first)");
	*ret_n = n;
	return 0;
}

int cgroup_glob_check(const char *glob, char *why, size_t whylen)
{
	struct glob_tok toks[CGROUP_GLOB_MAX];
	size_t n;

	return glob_compile(glob, toks, &n, why, whylen);
}

/* Follow '*' to what comes after it without a byte. */
static void glob_closure(const struct glob_tok *toks, size_t n, uint8_t *on)
{
	for (size_t i = 0; i < n; i++)
		if (on[i] && toks[i].star)
			on[i + 1] = 1;
}

size_t cgroup_glob_prefix(const char *glob, const char *path)
{
	struct glob_tok toks[CGROUP_GLOB_MAX];
	uint8_t cur[CGROUP_GLOB_MAX + 1], next[CGROUP_GLOB_MAX + 1];
	size_t n, len = strlen(path);

	if (glob_compile(glob, toks, &n, NULL, 0) < 0)
		return 0;
	/* Which tokens the glob has matched up to, for the bytes read so
	 * far: every way at once, so no byte is read twice. */
	memset(cur, 0, sizeof(cur));
	cur[0] = 1;
	glob_closure(toks, n, cur);
	for (size_t pos = 0;; pos++) {
		bool any = false;

		if (pos && (pos == len || path[pos] == '/') && cur[n])
			return pos;
		if (pos == len)
			return 0;
		memset(next, 0, n + 1);
		for (size_t i = 0; i < n; i++) {
			if (!cur[i])
				continue;
			if (toks[i].star)
				next[i] = 1;
			else if (set_has(toks[i].set, (unsigned char)path[pos]))
				next[i + 1] = 1;
			else
				continue;
			any = true;
		}
		if (!any)
			return 0;
		glob_closure(toks, n, next);
		memcpy(cur, next, n + 1);
	}
}

size_t cgroup_key_len(const char *pattern, unsigned int depth, const char *path)
{
	size_t len = strlen(path), k;
	unsigned int seen = 0;

	if (pattern[0]) {
		k = cgroup_glob_prefix(pattern, path);
		if (k)
			return k;
	}
	if (!depth)
		return len;
	/* The '/' that ends the depth-th component, if the path is deeper. */
	for (k = 1; k < len; k++)
		if (path[k] == '/' && ++seen == depth)
			return k;
	return len;
}

bool cgroup_show(char *buf, const char *path)
{
	size_t len = strlen(path);
	bool cut = len >= CGROUP_SHOWN_MAX;

	if (cut)
		len = CGROUP_SHOWN_MAX - 1;
	memcpy(buf, path, len);
	buf[len] = '\0';
	return cut;
}
