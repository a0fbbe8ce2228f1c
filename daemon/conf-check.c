// SPDX-License-Identifier: MIT
/*
 * rdmabrokerd --check-config: the configuration parsed and its users and
 * groups resolved as the daemon would, and then what parses but admits
 * nobody: a group without members, a uid without an account, a domain that
 * matches no user. Run by hand (sshd -t, nginx -t), so it may walk the
 * password database, which the daemon itself never does.
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/conf.h"

struct check {
	const char *path;
	FILE *out;
	unsigned int warnings;
};

static void check_warn(struct check *c, unsigned int line, const char *fmt,
		       ...) __attribute__((format(printf, 3, 4)));
static void check_warn(struct check *c, unsigned int line, const char *fmt,
		       ...)
{
	va_list ap;

	if (line)
		fprintf(c->out, "%s:%u: warning: ", c->path, line);
	else
		fprintf(c->out, "%s: warning: ", c->path);
	va_start(ap, fmt);
	vfprintf(c->out, fmt, ap);
	va_end(ap);
	fputc('\n', c->out);
	c->warnings++;
}

static bool uid_exists(uid_t uid)
{
	struct passwd pw, *res = NULL;
	char buf[4096];

	return getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res;
}

/* Does anyone have @gid, as a supplementary or a primary group? */
static bool gid_has_members(gid_t gid)
{
	struct group gr, *res = NULL;
	char buf[16384];
	struct passwd *pw;
	bool found = false;

	if (getgrgid_r(gid, &gr, buf, sizeof(buf), &res) == 0 && res &&
	    res->gr_mem && res->gr_mem[0])
		return true;
	setpwent();
	while (!found && (pw = getpwent()))
		found = pw->pw_gid == gid;
	endpwent();
	return found;
}

static void check_domain(struct check *c, const struct config_domain *d)
{
	size_t matched = 0;

	for (size_t i = 0; i < d->n_users; i++) {
		if (uid_exists(d->users[i]))
			matched++;
		else
			check_warn(c, d->line,
				   "[domain %s] users: uid %u has no account",
				   d->name, (unsigned int)d->users[i]);
	}
	for (size_t i = 0; i < d->n_groups; i++) {
		if (gid_has_members(d->groups[i]))
			matched++;
		else
			check_warn(c, d->line,
				   "[domain %s] groups: gid %u has no members",
				   d->name, (unsigned int)d->groups[i]);
	}
	if (!matched)
		check_warn(c, d->line,
			   "[domain %s] matches no user: nobody can join it",
			   d->name);
}

/* "uid-N" of an [xrcd] that names a uid without an account. */
static void check_xrcd(struct check *c, const struct config_xrcd *x)
{
	for (size_t i = 0; i < x->n_domains; i++) {
		const char *n = x->domains[i];
		char *end;
		unsigned long uid;

		if (strncmp(n, "uid-", 4) != 0)
			continue;
		uid = strtoul(n + 4, &end, 10);
		if (!*end && !uid_exists((uid_t)uid))
			check_warn(c, x->line,
				   "[xrcd %s] domains: %s is the domain of a "
				   "uid that has no account",
				   x->name, n);
	}
}

int config_check(const char *path, bool must_exist, FILE *out)
{
	struct check c = { .path = path, .out = out };
	struct config cfg;
	char err[512];
	int ret;

	/* What the daemon does without the file at its default path. */
	if (!must_exist && access(path, F_OK) < 0 && errno == ENOENT) {
		fprintf(out, "%s: absent: rdmabrokerd runs on the built-in "
			     "defaults\n",
			path);
		return 0;
	}
	ret = config_load(path, must_exist, &cfg, err, sizeof(err));
	if (ret < 0) {
		fprintf(out, "%s\n", ret == -ENOMEM ? "out of memory" : err);
		return ret;
	}
	if (cfg.has_admin_group && !gid_has_members(cfg.admin_gid))
		check_warn(&c, 0,
			   "[broker] admin_group: gid %u has no members",
			   (unsigned int)cfg.admin_gid);
	for (size_t i = 0; i < cfg.n_domains; i++)
		check_domain(&c, &cfg.domains[i]);
	for (size_t i = 0; i < cfg.n_xrcds; i++)
		check_xrcd(&c, &cfg.xrcds[i]);
	fprintf(out, "%s: valid: %zu domain%s, %zu declared XRC domain%s, %u "
		     "warning%s\n",
		path, cfg.n_domains, cfg.n_domains == 1 ? "" : "s", cfg.n_xrcds,
		cfg.n_xrcds == 1 ? "" : "s", c.warnings,
		c.warnings == 1 ? "" : "s");
	config_free(&cfg);
	return 0;
}
