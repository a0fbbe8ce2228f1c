// SPDX-License-Identifier: MIT
/*
 * rdmabrokerd --check-config: the configuration parsed and its users and
 * groups resolved as the daemon would, and then what parses but admits
 * nobody: a group without members, a uid without an account, a domain that
 * matches no user, a cgroup glob that matches every cgroup or none that
 * exists now. Run by hand (sshd -t, nginx -t), so it may walk the
 * password database, which the daemon itself never does.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/config/conf-family.h"
#include "daemon/config/conf.h"
#include "daemon/registry/cgroup.h"

/* The cgroups looked at for globs that match none: at most this many,
 * this deep. */
#define CHECK_CGROUPS_MAX 100000
#define CHECK_CGROUP_DEPTH 64

struct conf_check {
	const char *path;
	FILE *out;
	unsigned int warnings;
};

void conf_warn(struct conf_check *c, unsigned int line, const char *fmt, ...)
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

bool config_uid_exists(uid_t uid)
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

static void check_domain(struct conf_check *c, const struct config_domain *d)
{
	size_t matched = 0;

	for (size_t i = 0; i < d->n_users; i++) {
		if (config_uid_exists(d->users[i]))
			matched++;
		else
			conf_warn(c, d->line,
				  "[domain %s] users: uid %u has no account",
				  d->name, (unsigned int)d->users[i]);
	}
	for (size_t i = 0; i < d->n_groups; i++) {
		if (gid_has_members(d->groups[i]))
			matched++;
		else
			conf_warn(c, d->line,
				  "[domain %s] groups: gid %u has no members",
				  d->name, (unsigned int)d->groups[i]);
	}
	/* A domain of cgroups alone takes any user. */
	if (!matched && d->n_users + d->n_groups)
		conf_warn(c, d->line,
			  "[domain %s] matches no user: nobody can join it",
			  d->name);
}

/* The globs of the file, and which of them a cgroup that exists now
 * matched. */
struct glob_use {
	const char *glob;
	/* Where the file has it, for the warning. */
	const char *what;
	char section[CONFIG_NAME_MAX + 16];
	unsigned int line;
	bool matched;
};

struct cgroup_walk {
	struct glob_use *uses;
	size_t n_uses;
	size_t seen;
	char path[CGROUP_PATH_MAX];
};

static void walk_match(struct cgroup_walk *w)
{
	for (size_t i = 0; i < w->n_uses; i++)
		if (!w->uses[i].matched)
			w->uses[i].matched =
				cgroup_glob_match(w->uses[i].glob, w->path);
}

/* The cgroups under directory @fd, whose path is w->path (@len bytes):
 * through descriptors, since a deep tree outgrows PATH_MAX. */
static void walk_dir(struct cgroup_walk *w, int fd, size_t len,
		     unsigned int depth)
{
	DIR *dir = fdopendir(fd);
	struct dirent *de;

	if (!dir) {
		close(fd);
		return;
	}
	while (w->seen < CHECK_CGROUPS_MAX && (de = readdir(dir))) {
		size_t n = strlen(de->d_name);
		int sub;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (len + 1 + n >= sizeof(w->path) ||
		    depth >= CHECK_CGROUP_DEPTH)
			continue;
		sub = openat(dirfd(dir), de->d_name,
			     O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (sub < 0)
			continue;
		/* Under "/" no second '/'. */
		w->path[len] = '/';
		memcpy(w->path + len + (len > 1 || w->path[0] != '/' ? 1 : 0),
		       de->d_name, n + 1);
		w->seen++;
		walk_match(w);
		walk_dir(w, sub, strlen(w->path), depth + 1);
		w->path[len] = '\0';
	}
	closedir(dir);
}

/* The first cgroup2 mount: its directory and the cgroup it shows (the
 * ROOT of mountinfo), in buffers of 4096 bytes; -ENOENT when there is
 * none. */
static int find_cgroup2(char *mnt, char *root)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	static const char fmt[] = "%*s %*s %*s %4095s %4095s";
	char *line = NULL;
	size_t cap = 0;
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (ret < 0 && getline(&line, &cap, f) > 0) {
		const char *sep = strstr(line, " - ");

		if (sep && strncmp(sep, " - cgroup2 ", 11) == 0 &&
		    sscanf(line, fmt, root, mnt) == 2)
			ret = 0;
	}
	free(line);
	fclose(f);
	return ret;
}

static void check_glob_use(struct conf_check *c, struct glob_use *u,
			   bool mounted, const char *mnt, size_t seen)
{
	static const char *const probes[] = { "/", "/\x01", "/\x01/\x02" };
	bool all = true;

	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
		all = all && cgroup_glob_match(u->glob, probes[i]);
	if (all)
		conf_warn(c, u->line,
			  "[%s] %s: \"%s\" matches every cgroup, so it "
			  "tells none apart",
			  u->section, u->what, u->glob);
	else if (!mounted)
		conf_warn(c, u->line,
			  "[%s] %s: \"%s\" matches no cgroup here: no "
			  "cgroup v2 hierarchy is mounted",
			  u->section, u->what, u->glob);
	else if (!u->matched)
		conf_warn(c, u->line,
			  "[%s] %s: \"%s\" matches no cgroup that exists "
			  "now (%zu looked at under %s)",
			  u->section, u->what, u->glob, seen, mnt);
}

/*
 * Globs that match every cgroup, or none that exists now (a cgroup made
 * later, a pod's, may still match: a warning, not an error), and per =
 * cgroup without a cgroup v2 hierarchy.
 */
static void check_cgroups(struct conf_check *c, const struct config *cfg)
{
	struct cgroup_walk w = { 0 };
	char mnt[4096], root[4096];
	bool mounted;
	size_t n = 0;
	int fd;

	for (size_t i = 0; i < cfg->n_domains; i++)
		n += cfg->domains[i].n_cgroups;
	n += !!cfg->cgroup_pattern[0];
	mounted = find_cgroup2(mnt, root) == 0;
	if (cfg->per_cgroup && !mounted)
		conf_warn(c, 0,
			  "[defaults] per = cgroup: no cgroup v2 hierarchy "
			  "is mounted here, so the broker can read no "
			  "client's cgroup and refuses every client that "
			  "names no configured domain");
	if (!n)
		return;
	w.uses = calloc(n, sizeof(*w.uses));
	if (!w.uses) {
		conf_warn(c, 0,
			  "out of memory: the cgroup globs are not "
			  "checked");
		return;
	}
	for (size_t i = 0; i < cfg->n_domains; i++) {
		const struct config_domain *d = &cfg->domains[i];

		for (size_t j = 0; j < d->n_cgroups; j++) {
			struct glob_use *u = &w.uses[w.n_uses++];

			u->glob = d->cgroups[j];
			u->what = "cgroups";
			u->line = d->line;
			snprintf(u->section, sizeof(u->section), "domain %s",
				 d->name);
		}
	}
	if (cfg->cgroup_pattern[0]) {
		struct glob_use *u = &w.uses[w.n_uses++];

		u->glob = cfg->cgroup_pattern;
		u->what = "cgroup_pattern";
		snprintf(u->section, sizeof(u->section), "defaults");
	}
	if (mounted) {
		snprintf(w.path, sizeof(w.path), "%s", root);
		walk_match(&w);
		fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0)
			walk_dir(&w, fd, strlen(w.path), 0);
	}
	for (size_t i = 0; i < w.n_uses; i++)
		check_glob_use(c, &w.uses[i], mounted, mnt, w.seen);
	free(w.uses);
}

int config_check(const char *path, bool must_exist, FILE *out)
{
	struct conf_check c = { .path = path, .out = out };
	struct config cfg;
	char err[512];
	int ret;

	/* What the daemon does without the file at its default path. */
	if (!must_exist && access(path, F_OK) < 0 && errno == ENOENT) {
		fprintf(out,
			"%s: absent: rdmabrokerd runs on the built-in "
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
		conf_warn(&c, 0, "[broker] admin_group: gid %u has no members",
			  (unsigned int)cfg.admin_gid);
	for (size_t i = 0; i < cfg.n_domains; i++)
		check_domain(&c, &cfg.domains[i]);
	for (unsigned int id = 0; id < FAMILY_COUNT; id++)
		if (families[id]->conf && families[id]->conf->check)
			families[id]->conf->check(&c, config_family(&cfg, id));
	check_cgroups(&c, &cfg);
	fprintf(out, "%s: valid: %zu domain%s", path, cfg.n_domains,
		cfg.n_domains == 1 ? "" : "s");
	for (unsigned int id = 0; id < FAMILY_COUNT; id++)
		if (families[id]->conf && families[id]->conf->summary)
			families[id]->conf->summary(config_family(&cfg, id),
						    out);
	fprintf(out, ", %u warning%s\n", c.warnings,
		c.warnings == 1 ? "" : "s");
	config_free(&cfg);
	return 0;
}
