// SPDX-License-Identifier: MIT
/*
 * The rdmabroker.conf parser (conf.h): every key's syntax, range and
 * default, and the names (users, groups) it resolves. Separate from
 * conf-check.c (--check-config: what parses but admits nobody) and from
 * server.c, which loads one at start and on reload.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <ini.h>

#include "daemon/config/conf.h"

/* Device memory: the soft device's size, a ConnectX-6's. Each domain
 * gets a quarter of a device's by default and one member of a named
 * domain half its domain's, so that one uid (or four domains) cannot take
 * it all; administrators keep a tenth of it for themselves, and a uid's
 * persistent DMs, which outlive its processes, hold at most a quarter. */
#define SOFT_DM_BYTES (256u * 1024)
#define DEFAULT_DM_PCT 25
#define DEFAULT_DM_MEMBER_SHARE 50
#define DEFAULT_DM_ADMIN_RESERVE_PCT 10
#define DEFAULT_DM_PERSISTENT_PER_UID 16
#define DEFAULT_DM_PERSISTENT_BYTES_PCT 25
#define DEFAULT_XRCDS 64
#define DEFAULT_RSS_TABLES 16
#define DEFAULT_OBJECTS 65536
#define DEFAULT_CLIENTS 256
#define SOFT_MAX_DM_SIZE_LIMIT (64u * 1024 * 1024)
/* Soft devices: enough to test what spans devices. */
#define SOFT_DEVICES_LIMIT 8
/* [broker]: dbus-broker's per-user figures (64 connections, 64 descriptors
 * in flight per connection), a 5 s handshake and a 30 s slow reader. */
#define DEFAULT_CONNECTIONS_PER_UID 64
#define DEFAULT_ADMIN_RESERVE 16
#define DEFAULT_HELLO_TIMEOUT_MS 5000
#define DEFAULT_QUEUED_FDS 64
#define DEFAULT_QUEUED_FDS_PER_UID 256
#define DEFAULT_PRIVATE_CONTEXTS_PER_UID 16
#define DEFAULT_UNREAD_TIMEOUT_MS 30000
#define DEFAULT_DM_REVOKE_GRACE_MS 5000
#define TIMEOUT_MIN_MS 10
#define TIMEOUT_MAX_MS (3600 * 1000)
#define PAGE 4096u

enum quota_key {
	Q_DM_BYTES = 1 << 0,
	Q_XRCDS = 1 << 1,
	Q_RSS_TABLES = 1 << 2,
	Q_OBJECTS = 1 << 3,
	Q_CLIENTS = 1 << 4,
	Q_AUTO_REKEY = 1 << 5,
	Q_DM_MEMBER_SHARE = 1 << 6,
};

/* Parser state: inih reads one line, then calls the handler for it, so
 * the reader's line count names the line of every key. */
struct parse {
	const char *path;
	FILE *f;
	unsigned int line;
	char section[96];
	/* [broker], [defaults] and [soft] seen, to refuse a second one
	 * as a repeated key is refused. */
	unsigned int fixed_seen;
	/* Keys seen in the current section, to refuse duplicates. */
	char keys[32][32];
	size_t n_keys;
	struct config cfg;
	char *err;
	size_t errlen;
	int failed;
};

void config_init(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->defaults.dm_pct = DEFAULT_DM_PCT;
	cfg->defaults.dm_member_share = DEFAULT_DM_MEMBER_SHARE;
	cfg->defaults.xrcds = DEFAULT_XRCDS;
	cfg->defaults.rss_tables = DEFAULT_RSS_TABLES;
	cfg->defaults.objects = DEFAULT_OBJECTS;
	cfg->defaults.clients = DEFAULT_CLIENTS;
	cfg->soft_max_dm_size = SOFT_DM_BYTES;
	cfg->soft_devices = 1;
	cfg->metrics.connections = METRICS_HTTP_CONNECTIONS;
	cfg->metrics.timeout_ms = METRICS_HTTP_TIMEOUT_MS;
	cfg->limits.connections_per_uid = DEFAULT_CONNECTIONS_PER_UID;
	cfg->limits.admin_reserve = DEFAULT_ADMIN_RESERVE;
	cfg->limits.hello_timeout_ms = DEFAULT_HELLO_TIMEOUT_MS;
	cfg->limits.dm_revoke_grace_ms = DEFAULT_DM_REVOKE_GRACE_MS;
	cfg->limits.queued_fds = DEFAULT_QUEUED_FDS;
	cfg->limits.queued_fds_per_uid = DEFAULT_QUEUED_FDS_PER_UID;
	cfg->limits.private_contexts_per_uid = DEFAULT_PRIVATE_CONTEXTS_PER_UID;
	cfg->limits.unread_timeout_ms = DEFAULT_UNREAD_TIMEOUT_MS;
	cfg->limits.dm_admin_reserve_pct = DEFAULT_DM_ADMIN_RESERVE_PCT;
	cfg->limits.dm_persistent_per_uid = DEFAULT_DM_PERSISTENT_PER_UID;
	cfg->limits.dm_persistent_bytes_pct = DEFAULT_DM_PERSISTENT_BYTES_PCT;
}

uint64_t config_dm_bytes(uint64_t bytes, uint32_t pct, uint64_t pool)
{
	if (!pct)
		return bytes;
	/* pct is at most 100: the first form cannot overflow. */
	if (pool > UINT64_MAX / 100)
		bytes = pool / 100 * pct;
	else
		bytes = pool * pct / 100;
	return bytes / PAGE * PAGE;
}

void config_free(struct config *cfg)
{
	free(cfg->domains);
	cfg->domains = NULL;
	cfg->n_domains = 0;
	free(cfg->xrcds);
	cfg->xrcds = NULL;
	cfg->n_xrcds = 0;
}

static int parse_fail(struct parse *p, unsigned int line, const char *key,
		      const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int parse_fail(struct parse *p, unsigned int line, const char *key,
		      const char *fmt, ...)
{
	char why[256];
	va_list ap;

	if (p->failed)
		return 0;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (key && *p->section)
		snprintf(p->err, p->errlen, "%s:%u: [%s] key \"%s\": %s",
			 p->path, line, p->section, key, why);
	else if (key)
		snprintf(p->err, p->errlen, "%s:%u: key \"%s\": %s", p->path,
			 line, key, why);
	else
		snprintf(p->err, p->errlen, "%s:%u: %s", p->path, line, why);
	p->failed = 1;
	return 0; /* stops inih */
}

static int parse_number(struct parse *p, const char *key, const char *value,
			uint64_t min, uint64_t max, bool suffixes,
			uint64_t *ret)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)value[0]))
		return parse_fail(p, p->line, key, "\"%s\" is not a number",
				  value);
	errno = 0;
	v = strtoull(value, &end, 10);
	if (suffixes && *end && !end[1]) {
		unsigned int shift = *end == 'K' ? 10 :
				     *end == 'M' ? 20 :
				     *end == 'G' ? 30 :
						   0;

		if (shift && v <= (UINT64_MAX >> shift)) {
			v <<= shift;
			end++;
		}
	}
	if (errno || *end)
		return parse_fail(
			p, p->line, key, "\"%s\" is not a number%s", value,
			suffixes ? " (K, M and G suffixes allowed)" : "");
	if (v < min || v > max)
		return parse_fail(p, p->line, key,
				  "%llu is out of range %" PRIu64 "..%" PRIu64,
				  v, min, max);
	*ret = v;
	return 1;
}

/* A percent: a number from @min to 100 followed by '%'. */
static int parse_percent(struct parse *p, const char *key, const char *value,
			 uint64_t min, uint32_t *ret)
{
	size_t len = strlen(value);
	char num[24];
	uint64_t v;

	if (len < 2 || len >= sizeof(num) || value[len - 1] != '%')
		return parse_fail(p, p->line, key,
				  "\"%s\" is not a percent (a number and %%)",
				  value);
	memcpy(num, value, len - 1);
	num[len - 1] = '\0';
	if (!parse_number(p, key, num, min, 100, false, &v))
		return 0;
	*ret = (uint32_t)v;
	return 1;
}

/* Device memory in bytes (K, M and G suffixes) or as a percent of each
 * device's: *ret_pct is 0 for bytes. */
static int parse_dm_amount(struct parse *p, const char *key, const char *value,
			   uint64_t *ret_bytes, uint32_t *ret_pct)
{
	uint32_t pct = 0;
	uint64_t v = 0;

	if (*value && value[strlen(value) - 1] == '%') {
		if (!parse_percent(p, key, value, 0, &pct))
			return 0;
	} else if (!parse_number(p, key, value, 0, UINT64_MAX / 2, true, &v)) {
		return 0;
	}
	*ret_bytes = v;
	*ret_pct = pct;
	return 1;
}

static int parse_quota(struct parse *p, const char *key, const char *value,
		       struct quota *q, unsigned int *set)
{
	uint64_t v;

	if (strcmp(key, "dm_bytes") == 0) {
		if (!parse_dm_amount(p, key, value, &q->dm_bytes, &q->dm_pct))
			return 0;
		*set |= Q_DM_BYTES;
	} else if (strcmp(key, "dm_member_share") == 0) {
		if (!parse_percent(p, key, value, 1, &q->dm_member_share))
			return 0;
		*set |= Q_DM_MEMBER_SHARE;
	} else if (strcmp(key, "xrcds") == 0) {
		if (!parse_number(p, key, value, 0, 1u << 20, false, &v))
			return 0;
		q->xrcds = (uint32_t)v;
		*set |= Q_XRCDS;
	} else if (strcmp(key, "rss_tables") == 0) {
		if (!parse_number(p, key, value, 0, 1u << 20, false, &v))
			return 0;
		q->rss_tables = (uint32_t)v;
		*set |= Q_RSS_TABLES;
	} else if (strcmp(key, "objects") == 0) {
		if (!parse_number(p, key, value, 0, 1u << 24, false, &v))
			return 0;
		q->objects = (uint32_t)v;
		*set |= Q_OBJECTS;
	} else if (strcmp(key, "clients") == 0) {
		if (!parse_number(p, key, value, 1, 1000000, false, &v))
			return 0;
		q->clients = (uint32_t)v;
		*set |= Q_CLIENTS;
	} else if (strcmp(key, "auto_rekey_unaccounted") == 0) {
		if (!parse_number(p, key, value, 0, 1u << 24, false, &v))
			return 0;
		q->auto_rekey_unaccounted = (uint32_t)v;
		*set |= Q_AUTO_REKEY;
	} else {
		return -1; /* not a quota key */
	}
	return 1;
}

/* A uid or gid given as a number: 1 when @name is one (*ret set), 0 when
 * it is a name, -EINVAL when it starts like a number and is not one. */
static int parse_id(const char *name, unsigned long *ret)
{
	unsigned long v;
	char *end;

	if (!isdigit((unsigned char)name[0]))
		return 0;
	errno = 0;
	v = strtoul(name, &end, 10);
	/* (uid_t)-1 and (gid_t)-1 mean "no id". */
	if (errno || *end || v >= (uid_t)-1)
		return -EINVAL;
	*ret = v;
	return 1;
}

/* The user (@user) or group @name, or the id it spells: 0, -ENOENT when
 * none has that name, -EINVAL for a number out of range. */
static int lookup_id(const char *name, bool user, id_t *ret)
{
	struct passwd pw, *pw_res = NULL;
	struct group gr, *gr_res = NULL;
	char buf[4096];
	unsigned long v;
	int num = parse_id(name, &v);

	if (num < 0)
		return num;
	if (num) {
		*ret = (id_t)v;
		return 0;
	}
	if (user) {
		if (getpwnam_r(name, &pw, buf, sizeof(buf), &pw_res) != 0 ||
		    !pw_res)
			return -ENOENT;
		*ret = pw_res->pw_uid;
	} else {
		if (getgrnam_r(name, &gr, buf, sizeof(buf), &gr_res) != 0 ||
		    !gr_res)
			return -ENOENT;
		*ret = gr_res->gr_gid;
	}
	return 0;
}

/* One lookup serves both: a uid and a gid are an id_t. */
_Static_assert(sizeof(uid_t) == sizeof(id_t) && sizeof(gid_t) == sizeof(id_t),
	       "uid_t, gid_t and id_t differ in size");

int config_lookup_gid(const char *name, gid_t *ret)
{
	id_t id;
	int err = lookup_id(name, false, &id);

	if (err < 0)
		return err;
	*ret = (gid_t)id;
	return 0;
}

/* Parse a comma- or space-separated list of users or groups. */
static int parse_members(struct parse *p, const char *key, const char *value,
			 bool users, struct config_domain *d)
{
	char buf[1024], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", value);
	for (tok = strtok_r(buf, ", \t", &save); tok;
	     tok = strtok_r(NULL, ", \t", &save)) {
		id_t id;

		if ((users ? d->n_users : d->n_groups) == CONFIG_MAX_MEMBERS)
			return parse_fail(p, p->line, key,
					  "more than %d entries",
					  CONFIG_MAX_MEMBERS);
		if (lookup_id(tok, users, &id) < 0)
			return parse_fail(p, p->line, key, "no %s \"%s\"",
					  users ? "user" : "group", tok);
		if (users)
			d->users[d->n_users++] = (uid_t)id;
		else
			d->groups[d->n_groups++] = (gid_t)id;
	}
	if ((users ? d->n_users : d->n_groups) == 0)
		return parse_fail(p, p->line, key, "the list is empty");
	return 1;
}

/* Parse cgroups = GLOB, ...: comma-separated, so that a glob may hold a
 * space; each checked as cgroup_glob_check() does. */
static int parse_cgroups(struct parse *p, const char *key, const char *value,
			 struct config_domain *d)
{
	const char *v = value;

	while (*v) {
		const char *end = strchr(v, ',');
		size_t len = end ? (size_t)(end - v) : strlen(v);
		char why[128];

		while (len && isspace((unsigned char)*v)) {
			v++;
			len--;
		}
		while (len && isspace((unsigned char)v[len - 1]))
			len--;
		if (!len)
			return parse_fail(p, p->line, key,
					  "an empty entry in the list");
		if (d->n_cgroups == CONFIG_MAX_CGROUPS)
			return parse_fail(p, p->line, key,
					  "more than %d patterns",
					  CONFIG_MAX_CGROUPS);
		if (len >= CGROUP_GLOB_MAX)
			return parse_fail(p, p->line, key,
					  "a pattern is longer than %d bytes",
					  CGROUP_GLOB_MAX - 1);
		memcpy(d->cgroups[d->n_cgroups], v, len);
		d->cgroups[d->n_cgroups][len] = '\0';
		if (cgroup_glob_check(d->cgroups[d->n_cgroups], why,
				      sizeof(why)) < 0)
			return parse_fail(p, p->line, key, "\"%s\": %s",
					  d->cgroups[d->n_cgroups], why);
		d->n_cgroups++;
		if (!end)
			break;
		v = end + 1;
	}
	return 1;
}

/* [defaults] per, cgroup_depth, cgroup_pattern; -ENOENT for another
 * key. */
static int parse_defaults_cgroup(struct parse *p, const char *key,
				 const char *value)
{
	char why[128];

	if (strcmp(key, "per") == 0) {
		if (strcmp(value, "uid") == 0)
			p->cfg.per_cgroup = false;
		else if (strcmp(value, "cgroup") == 0)
			p->cfg.per_cgroup = true;
		else
			return parse_fail(p, p->line, key,
					  "\"%s\" is neither uid nor cgroup",
					  value);
		return 1;
	}
	if (strcmp(key, "cgroup_depth") == 0) {
		uint64_t v;
		if (!parse_number(p, key, value, 1, 64, false, &v))
			return 0;
		p->cfg.cgroup_depth = (unsigned int)v;
		return 1;
	}
	if (strcmp(key, "cgroup_pattern") != 0)
		return -ENOENT;
	if (strlen(value) >= CGROUP_GLOB_MAX)
		return parse_fail(p, p->line, key, "longer than %d bytes",
				  CGROUP_GLOB_MAX - 1);
	if (cgroup_glob_check(value, why, sizeof(why)) < 0)
		return parse_fail(p, p->line, key, "%s", why);
	snprintf(p->cfg.cgroup_pattern, sizeof(p->cfg.cgroup_pattern), "%s",
		 value);
	return 1;
}

/* A duration: a number of seconds, or of milliseconds with "ms", or of
 * seconds with "s"; in [min_ms, max_ms]. */
static int parse_duration(struct parse *p, const char *key, const char *value,
			  uint32_t min_ms, uint32_t max_ms, uint32_t *ret_ms)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)value[0]))
		return parse_fail(p, p->line, key,
				  "\"%s\" is not a duration (seconds, or a "
				  "number with ms or s)",
				  value);
	errno = 0;
	v = strtoull(value, &end, 10);
	if (errno || (*end && strcmp(end, "s") && strcmp(end, "ms")))
		return parse_fail(p, p->line, key,
				  "\"%s\" is not a duration (seconds, or a "
				  "number with ms or s)",
				  value);
	if (strcmp(end, "ms") != 0)
		v = v > max_ms ? (unsigned long long)max_ms + 1 : v * 1000;
	if (v < min_ms || v > max_ms)
		return parse_fail(p, p->line, key,
				  "\"%s\" is out of range %ums..%us", value,
				  min_ms, max_ms / 1000);
	*ret_ms = (uint32_t)v;
	return 1;
}

/* The [broker] section. */
static int parse_broker(struct parse *p, const char *key, const char *value)
{
	struct broker_limits *l = &p->cfg.limits;
	uint32_t *n = NULL;
	uint64_t min = 1, max = 1000000, v;

	if (strcmp(key, "admin_group") == 0) {
		if (config_lookup_gid(value, &p->cfg.admin_gid) < 0)
			return parse_fail(p, p->line, key, "no group \"%s\"",
					  value);
		p->cfg.has_admin_group = true;
		return 1;
	}
	if (strcmp(key, "hello_timeout") == 0)
		return parse_duration(p, key, value, TIMEOUT_MIN_MS,
				      TIMEOUT_MAX_MS, &l->hello_timeout_ms);
	if (strcmp(key, "dm_revoke_grace") == 0)
		return parse_duration(p, key, value, TIMEOUT_MIN_MS,
				      TIMEOUT_MAX_MS, &l->dm_revoke_grace_ms);
	if (strcmp(key, "unread_timeout") == 0)
		return parse_duration(p, key, value, TIMEOUT_MIN_MS,
				      TIMEOUT_MAX_MS, &l->unread_timeout_ms);
	if (strcmp(key, "dm_admin_reserve") == 0)
		return parse_dm_amount(p, key, value, &l->dm_admin_reserve,
				       &l->dm_admin_reserve_pct);
	if (strcmp(key, "dm_persistent_bytes_per_uid") == 0)
		return parse_dm_amount(p, key, value,
				       &l->dm_persistent_bytes_per_uid,
				       &l->dm_persistent_bytes_pct);
	if (strcmp(key, "connections_per_uid") == 0) {
		n = &l->connections_per_uid;
	} else if (strcmp(key, "admin_reserve") == 0) {
		n = &l->admin_reserve;
		min = 0;
	} else if (strcmp(key, "queued_fds") == 0) {
		n = &l->queued_fds;
		max = 1u << 20;
	} else if (strcmp(key, "queued_fds_per_uid") == 0) {
		n = &l->queued_fds_per_uid;
		max = 1u << 20;
	} else if (strcmp(key, "private_contexts_per_uid") == 0) {
		n = &l->private_contexts_per_uid;
		min = 0;
		max = 1u << 20;
	} else if (strcmp(key, "dm_persistent_per_uid") == 0) {
		n = &l->dm_persistent_per_uid;
		min = 0;
		max = 1u << 20;
	} else {
		return parse_fail(p, p->line, key,
				  "unknown key (known: admin_group, "
				  "connections_per_uid, admin_reserve, "
				  "hello_timeout, queued_fds, "
				  "queued_fds_per_uid, "
				  "private_contexts_per_uid, unread_timeout, "
				  "dm_revoke_grace, dm_admin_reserve, "
				  "dm_persistent_per_uid, "
				  "dm_persistent_bytes_per_uid)");
	}
	if (!parse_number(p, key, value, min, max, false, &v))
		return 0;
	*n = (uint32_t)v;
	return 1;
}

static bool valid_domain_name(const char *name)
{
	if (!*name || strlen(name) >= CONFIG_NAME_MAX)
		return false;
	for (const char *c = name; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_' &&
		    *c != '.')
			return false;
	/* These name the domains the broker makes itself. */
	return strncmp(name, "uid-", 4) != 0 &&
	       strncmp(name, "private-", 8) != 0 &&
	       strncmp(name, "cgroup-", 7) != 0;
}

bool config_valid_xrcd_name(const char *name, size_t len)
{
	return xrcd_name_check(name, len, NULL, 0) == 0;
}

const struct config_xrcd *config_find_xrcd(const struct config *cfg,
					   const char *name)
{
	for (size_t i = 0; i < cfg->n_xrcds; i++)
		if (strcmp(cfg->xrcds[i].name, name) == 0)
			return &cfg->xrcds[i];
	return NULL;
}

bool config_xrcd_lists(const struct config_xrcd *x, const char *domain)
{
	for (size_t i = 0; i < x->n_domains; i++)
		if (strcmp(x->domains[i], domain) == 0)
			return true;
	return false;
}

/* [xrcd NAME] */
static int parse_xrcd_section(struct parse *p, const char *section)
{
	const char *name = section + 5;
	char why[XRCD_NAME_WHY_SIZE];
	struct config_xrcd *x;

	if (xrcd_name_check(name, strlen(name), why, sizeof(why)) < 0)
		return parse_fail(p, p->line, NULL, "%s", why);
	if (config_find_xrcd(&p->cfg, name))
		return parse_fail(p, p->line, NULL,
				  "[%s]: XRCD \"%s\" is declared twice",
				  section, name);
	if (p->cfg.n_xrcds == CONFIG_MAX_XRCDS)
		return parse_fail(p, p->line, NULL, "more than %d XRCDs",
				  CONFIG_MAX_XRCDS);
	x = &p->cfg.xrcds[p->cfg.n_xrcds++];
	memset(x, 0, sizeof(*x));
	snprintf(x->name, sizeof(x->name), "%.*s", CONFIG_XRCD_NAME_MAX - 1,
		 name);
	x->line = p->line;
	return 1;
}

/* domains = a, b: names of [domain] sections or of uid domains. */
static int parse_xrcd_key(struct parse *p, const char *key, const char *value)
{
	struct config_xrcd *x = &p->cfg.xrcds[p->cfg.n_xrcds - 1];
	char buf[1024];
	char *save = NULL;

	if (strcmp(key, "domains") != 0)
		return parse_fail(p, p->line, key,
				  "unknown key (known: "
				  "domains)");
	snprintf(buf, sizeof(buf), "%s", value);
	for (char *t = strtok_r(buf, ", \t", &save); t;
	     t = strtok_r(NULL, ", \t", &save)) {
		if (strlen(t) >= CONFIG_NAME_MAX)
			return parse_fail(p, p->line, key,
					  "domain name \"%.*s...\" is longer "
					  "than %d bytes",
					  16, t, CONFIG_NAME_MAX - 1);
		if (config_xrcd_lists(x, t))
			return parse_fail(p, p->line, key,
					  "domain \"%s\" is listed twice", t);
		if (x->n_domains == CONFIG_XRCD_DOMAINS)
			return parse_fail(p, p->line, key,
					  "more than %d domains",
					  CONFIG_XRCD_DOMAINS);
		snprintf(x->domains[x->n_domains++], CONFIG_NAME_MAX, "%s", t);
	}
	if (!x->n_domains)
		return parse_fail(p, p->line, key, "no domain listed");
	return 1;
}

/* A new section begins: reset the duplicate-key check, open a domain. */
static int parse_section(struct parse *p, const char *section)
{
	const char *name;
	struct config_domain *d;

	snprintf(p->section, sizeof(p->section), "%s", section);
	p->n_keys = 0;
	static const char *const fixed[] = { "broker", "defaults", "soft",
					     "metrics" };

	for (unsigned int i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		if (strcmp(section, fixed[i]) != 0)
			continue;
		if (p->fixed_seen & (1u << i))
			return parse_fail(p, p->line, NULL,
					  "[%s] is given twice: put its keys "
					  "in one section",
					  section);
		p->fixed_seen |= 1u << i;
		return 1;
	}
	if (strncmp(section, "xrcd ", 5) == 0)
		return parse_xrcd_section(p, section);
	if (strncmp(section, "domain ", 7) != 0)
		return parse_fail(p, p->line, NULL,
				  "unknown section [%s] (known: [broker], "
				  "[defaults], [soft], [metrics], "
				  "[domain NAME], [xrcd NAME])",
				  section);
	name = section + 7;
	if (!valid_domain_name(name))
		return parse_fail(p, p->line, NULL,
				  "[%s]: domain names are 1 to %d letters, "
				  "digits, '-', '_' or '.', and do not start "
				  "with \"uid-\", \"private-\" or "
				  "\"cgroup-\"",
				  section, CONFIG_NAME_MAX - 1);
	if (config_find_domain(&p->cfg, name))
		return parse_fail(p, p->line, NULL,
				  "[%s]: domain \"%s\" is defined twice",
				  section, name);
	if (p->cfg.n_domains == CONFIG_MAX_DOMAINS)
		return parse_fail(p, p->line, NULL, "more than %d domains",
				  CONFIG_MAX_DOMAINS);
	d = &p->cfg.domains[p->cfg.n_domains++];
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->line = p->line;
	return 1;
}

static int parse_section(struct parse *p, const char *section);

/* inih reads a line, then calls the handler for it: counting lines here
 * names the line of every key. Section headers are taken here too, so that
 * an empty or repeated section is seen. */
static char *parse_reader(char *str, int num, void *stream)
{
	struct parse *p = stream;
	char *s = fgets(str, num, p->f);
	const char *t, *end;

	if (!s) {
		/* End of file, or a read error (a directory, EIO). */
		if (ferror(p->f))
			parse_fail(p, p->line + 1, NULL, "cannot be read: %s",
				   strerror(errno));
		return NULL;
	}
	if (p->failed)
		return NULL;
	p->line++;
	if (!strchr(s, '\n') && !feof(p->f)) {
		parse_fail(p, p->line, NULL, "line longer than %d bytes",
			   num - 2);
		return NULL;
	}
	t = s;
	/* inih skips a UTF-8 byte order mark; so must the section scan. */
	if (p->line == 1 && strncmp(t, "\xef\xbb\xbf", 3) == 0)
		t += 3;
	while (isspace((unsigned char)*t))
		t++;
	end = strchr(t, ']');
	if (*t == '[' && !end) {
		parse_fail(p, p->line, NULL,
			   "syntax error: \"[\" without \"]\"");
		return NULL;
	}
	if (*t == '[') {
		char name[96];
		size_t len = (size_t)(end - t - 1);

		if (len >= sizeof(name))
			len = sizeof(name) - 1;
		memcpy(name, t + 1, len);
		name[len] = '\0';
		if (!parse_section(p, name))
			return NULL;
	}
	return s;
}

/* --- rss_allow ------------------------------------------------------------ */

static int rule_fail(char *why, size_t whylen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int rule_fail(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int rule_number(const char *s, unsigned long max, unsigned long *ret)
{
	unsigned long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || *end || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

int config_parse_rss_rule(const char *value, struct rss_rule *ret, char *why,
			  size_t whylen)
{
	char buf[160], *tok[4], *save = NULL, *slash, *t;
	struct rss_rule r = { 0 };
	unsigned long v;
	size_t n = 0;

	if (strlen(value) >= sizeof(buf))
		return rule_fail(why, whylen, "longer than %zu characters",
				 sizeof(buf) - 1);
	memcpy(buf, value, strlen(value) + 1);
	for (t = strtok_r(buf, " \t", &save); t && n < 4;
	     t = strtok_r(NULL, " \t", &save))
		tok[n++] = t;
	if (n < 2 || n > 3)
		return rule_fail(why, whylen,
				 "expected FAMILY[/L4] PREFIX [PORT[/MASK]], "
				 "e.g. ipv4/udp 192.0.2.0/24 9999");
	slash = strchr(tok[0], '/');
	if (slash)
		*slash++ = '\0';
	if (strcmp(tok[0], "ipv4") == 0)
		r.af = AF_INET;
	else if (strcmp(tok[0], "ipv6") == 0)
		r.af = AF_INET6;
	else
		return rule_fail(why, whylen,
				 "family \"%s\" is not ipv4 or ipv6", tok[0]);
	if (slash && strcmp(slash, "tcp") == 0)
		r.l4 = IPPROTO_TCP;
	else if (slash && strcmp(slash, "udp") == 0)
		r.l4 = IPPROTO_UDP;
	else if (slash)
		return rule_fail(why, whylen,
				 "L4 protocol \"%s\" is not tcp or udp", slash);
	slash = strchr(tok[1], '/');
	if (slash)
		*slash++ = '\0';
	if (inet_pton(r.af, tok[1], r.addr) != 1)
		return rule_fail(why, whylen, "\"%s\" is not an %s address",
				 tok[1], r.af == AF_INET ? "IPv4" : "IPv6");
	r.prefix_len = r.af == AF_INET ? 32 : 128;
	if (slash) {
		if (rule_number(slash, r.prefix_len, &v) < 0)
			return rule_fail(why, whylen,
					 "prefix length \"%s\" is not 0..%u",
					 slash, r.prefix_len);
		r.prefix_len = (uint8_t)v;
	}
	for (unsigned int i = 0; i < 16; i++) {
		unsigned int keep =
			r.prefix_len > i * 8 ? r.prefix_len - i * 8 : 0;

		if (keep < 8 && (r.addr[i] & ~(0xff00u >> keep) & 0xff))
			return rule_fail(why, whylen,
					 "%s/%u has bits set past the prefix",
					 tok[1], r.prefix_len);
	}
	if (n == 3) {
		if (!r.l4)
			return rule_fail(why, whylen,
					 "a port needs an L4 protocol, e.g. "
					 "%s/udp",
					 tok[0]);
		slash = strchr(tok[2], '/');
		if (slash)
			*slash++ = '\0';
		if (rule_number(tok[2], 65535, &v) < 0)
			return rule_fail(why, whylen,
					 "port \"%s\" is not 0..65535", tok[2]);
		r.has_port = true;
		r.port = (uint16_t)v;
		r.port_mask = 0xffff;
		if (slash) {
			if (rule_number(slash, 65535, &v) < 0 || !v)
				return rule_fail(why, whylen,
						 "port mask \"%s\" is not "
						 "1..0xffff",
						 slash);
			r.port_mask = (uint16_t)v;
		}
		if (r.port & ~r.port_mask)
			return rule_fail(why, whylen,
					 "port %u has bits outside the mask "
					 "0x%x",
					 r.port, r.port_mask);
	}
	*ret = r;
	return 0;
}

static int parse_rss_allow(struct parse *p, const char *key, const char *value,
			   struct config_domain *d)
{
	char why[160];

	if (d->n_rss_allow == CONFIG_MAX_RSS_ALLOW)
		return parse_fail(p, p->line, key,
				  "more than %d rules in one domain",
				  CONFIG_MAX_RSS_ALLOW);
	if (config_parse_rss_rule(value, &d->rss_allow[d->n_rss_allow], why,
				  sizeof(why)) < 0)
		return parse_fail(p, p->line, key, "%s", why);
	d->n_rss_allow++;
	return 1;
}

/* [soft] intent_window: yes or no. */
static int parse_yes_no(struct parse *p, const char *key, const char *value,
			bool *ret)
{
	if (strcmp(value, "yes") == 0 || strcmp(value, "no") == 0) {
		*ret = value[0] == 'y';
		return 1;
	}
	return parse_fail(p, p->line, key, "\"%s\" is not yes or no", value);
}

static int parse_soft(struct parse *p, const char *key, const char *value)
{
	uint32_t *internal;
	uint64_t v;

	if (strcmp(key, "devices") == 0) {
		if (!parse_number(p, key, value, 1, SOFT_DEVICES_LIMIT, false,
				  &v))
			return 0;
		p->cfg.soft_devices = (unsigned int)v;
		return 1;
	}
	if (strcmp(key, "intent_window") == 0)
		return parse_yes_no(p, key, value, &p->cfg.soft_intent_window);
	internal = strcmp(key, "internal_objects_per_import") == 0 ?
			   &p->cfg.soft_internal_per_import :
		   strcmp(key, "internal_objects_per_qp") == 0 ?
			   &p->cfg.soft_internal_per_qp :
			   NULL;
	if (internal) {
		if (!parse_number(p, key, value, 0, SOFT_INTERNAL_MAX, false,
				  &v))
			return 0;
		*internal = (uint32_t)v;
		return 1;
	}
	if (strcmp(key, "max_dm_size") != 0)
		return parse_fail(p, p->line, key,
				  "unknown key (known: max_dm_size, "
				  "devices, intent_window, "
				  "internal_objects_per_import, "
				  "internal_objects_per_qp)");
	if (!parse_number(p, key, value, PAGE, SOFT_MAX_DM_SIZE_LIMIT, true,
			  &v))
		return 0;
	if (v % PAGE)
		return parse_fail(p, p->line, key,
				  "%" PRIu64 " is not a multiple of 4096", v);
	p->cfg.soft_max_dm_size = v;
	return 1;
}

int config_metrics_listen(const char *value, char *why, size_t whylen,
			  char *ret_host, size_t hostlen,
			  unsigned int *ret_port, char *ret_path,
			  size_t pathlen)
{
	struct sockaddr_un sun;
	unsigned char addr[sizeof(struct in6_addr)];
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon = strrchr(value, ':'), *h = value;
	size_t hl = colon ? (size_t)(colon - value) : 0;
	unsigned long port;
	char *end;

	if (strncmp(value, "unix:", 5) == 0) {
		if (value[5] != '/' ||
		    strlen(value + 5) >= sizeof(sun.sun_path))
			return rule_fail(why, whylen,
					 "a Unix socket is unix: and an "
					 "absolute path of at most %zu bytes",
					 sizeof(sun.sun_path) - 1);
		if (ret_path)
			snprintf(ret_path, pathlen, "%s", value + 5);
		return 0;
	}
	if (hl >= 2 && value[0] == '[' && value[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	if (!colon || hl == 0 || hl >= sizeof(host))
		return rule_fail(why, whylen,
				 "\"%s\" is not ADDRESS:PORT, [IPV6]:PORT or "
				 "unix:PATH",
				 value);
	memcpy(host, h, hl);
	host[hl] = '\0';
	if (inet_pton(AF_INET, host, addr) != 1 &&
	    inet_pton(AF_INET6, host, addr) != 1)
		return rule_fail(why, whylen,
				 "\"%s\" is not a numeric IPv4 or IPv6 "
				 "address (no names: the listener is set up "
				 "before anything resolves them)",
				 host);
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (!isdigit((unsigned char)colon[1]) || *end || errno || port == 0 ||
	    port > 65535)
		return rule_fail(why, whylen, "\"%s\" is not a port (1-65535)",
				 colon + 1);
	if (ret_host)
		snprintf(ret_host, hostlen, "%s", host);
	if (ret_port)
		*ret_port = (unsigned int)port;
	return 0;
}

/* The [metrics] section. */
static int parse_metrics(struct parse *p, const char *key, const char *value)
{
	char why[160];
	uint64_t v;

	if (strcmp(key, "listen") == 0) {
		if (config_metrics_listen(value, why, sizeof(why), NULL, 0,
					  NULL, NULL, 0) < 0)
			return parse_fail(p, p->line, key, "%s", why);
		snprintf(p->cfg.metrics.listen, sizeof(p->cfg.metrics.listen),
			 "%s", value);
		return 1;
	}
	if (strcmp(key, "timeout") == 0)
		return parse_duration(p, key, value, TIMEOUT_MIN_MS,
				      TIMEOUT_MAX_MS,
				      &p->cfg.metrics.timeout_ms);
	if (strcmp(key, "connections") != 0)
		return parse_fail(p, p->line, key,
				  "unknown key (known: listen, connections, "
				  "timeout)");
	if (!parse_number(p, key, value, 1, METRICS_HTTP_CONNECTIONS_MAX, false,
			  &v))
		return 0;
	p->cfg.metrics.connections = (uint32_t)v;
	return 1;
}

static int parse_key(struct parse *p, const char *section, const char *key,
		     const char *value)
{
	struct config_domain *d;
	int ret;

	if (strcmp(section, "broker") == 0)
		return parse_broker(p, key, value);
	if (strcmp(section, "defaults") == 0) {
		unsigned int set = 0;

		ret = parse_defaults_cgroup(p, key, value);
		if (ret != -ENOENT)
			return ret;
		ret = parse_quota(p, key, value, &p->cfg.defaults, &set);
		if (ret < 0)
			return parse_fail(p, p->line, key,
					  "unknown key (known: dm_bytes, "
					  "dm_member_share, xrcds, "
					  "rss_tables, objects, clients, "
					  "auto_rekey_unaccounted, per, "
					  "cgroup_depth, cgroup_pattern)");
		return ret;
	}
	if (strcmp(section, "soft") == 0)
		return parse_soft(p, key, value);
	if (strcmp(section, "metrics") == 0)
		return parse_metrics(p, key, value);
	if (strncmp(section, "xrcd ", 5) == 0)
		return parse_xrcd_key(p, key, value);
	/* parse_section() opened it; anything else is a parser bug. */
	if (p->cfg.n_domains == 0 ||
	    strcmp(p->cfg.domains[p->cfg.n_domains - 1].name, section + 7))
		return parse_fail(p, p->line, key, "internal: no open domain");
	d = &p->cfg.domains[p->cfg.n_domains - 1];
	if (strcmp(key, "users") == 0)
		return parse_members(p, key, value, true, d);
	if (strcmp(key, "groups") == 0)
		return parse_members(p, key, value, false, d);
	if (strcmp(key, "cgroups") == 0)
		return parse_cgroups(p, key, value, d);
	if (strcmp(key, "rss_allow") == 0)
		return parse_rss_allow(p, key, value, d);
	ret = parse_quota(p, key, value, &d->quota, &d->quota_set);
	if (ret < 0)
		return parse_fail(
			p, p->line, key,
			"unknown key (known: users, groups, "
			"cgroups, rss_allow, dm_bytes, dm_member_share, "
			"xrcds, rss_tables, objects, clients, "
			"auto_rekey_unaccounted)");
	return ret;
}

static int parse_handler(void *user, const char *section, const char *key,
			 const char *value)
{
	struct parse *p = user;

	if (p->failed)
		return 0;
	if (!*section)
		return parse_fail(p, p->line, key,
				  "key outside of any section");
	/* rss_allow is the one repeatable key. */
	for (size_t i = 0; i < p->n_keys && strcmp(key, "rss_allow"); i++)
		if (strcmp(p->keys[i], key) == 0)
			return parse_fail(p, p->line, key,
					  "given twice in this section");
	if (p->n_keys < sizeof(p->keys) / sizeof(p->keys[0]))
		snprintf(p->keys[p->n_keys++], sizeof(p->keys[0]), "%s", key);
	if (!*value)
		return parse_fail(p, p->line, key, "empty value");
	/* inih cuts long section names; the reader kept the whole one. */
	return parse_key(p, p->section, key, value);
}

/* A uid domain's name: "uid-" and a number. */
static bool uid_domain_name(const char *name)
{
	if (strncmp(name, "uid-", 4) != 0 || !isdigit((unsigned char)name[4]))
		return false;
	for (const char *c = name + 4; *c; c++)
		if (!isdigit((unsigned char)*c))
			return false;
	return true;
}

/* Every listed domain is defined in the file or is a uid's own. */
static void parse_finish_xrcd(struct parse *p, struct config_xrcd *x)
{
	snprintf(p->section, sizeof(p->section), "xrcd %s", x->name);
	if (!x->n_domains) {
		parse_fail(p, x->line, "domains",
			   "XRCD \"%s\" lists no domains", x->name);
		return;
	}
	for (size_t j = 0; j < x->n_domains; j++)
		if (!config_find_domain(&p->cfg, x->domains[j]) &&
		    !uid_domain_name(x->domains[j])) {
			parse_fail(p, x->line, "domains",
				   "domain \"%s\" is neither a [domain] "
				   "section nor a uid's domain (uid-N)",
				   x->domains[j]);
			return;
		}
}

/* Checks that need the whole file: every domain has members; quotas not
 * given come from [defaults], wherever it stands. */
static void parse_finish(struct parse *p)
{
	for (size_t i = 0; i < p->cfg.n_domains && !p->failed; i++) {
		struct config_domain *d = &p->cfg.domains[i];
		const struct quota *def = &p->cfg.defaults;

		if (!d->n_users && !d->n_groups && !d->n_cgroups) {
			snprintf(p->section, sizeof(p->section), "domain %s",
				 d->name);
			parse_fail(p, d->line, "users",
				   "domain \"%s\" has no users, no groups and "
				   "no cgroups",
				   d->name);
			break;
		}
		if (!(d->quota_set & Q_DM_BYTES)) {
			d->quota.dm_bytes = def->dm_bytes;
			d->quota.dm_pct = def->dm_pct;
		}
		if (!(d->quota_set & Q_DM_MEMBER_SHARE))
			d->quota.dm_member_share = def->dm_member_share;
		if (!(d->quota_set & Q_XRCDS))
			d->quota.xrcds = def->xrcds;
		if (!(d->quota_set & Q_RSS_TABLES))
			d->quota.rss_tables = def->rss_tables;
		if (!(d->quota_set & Q_OBJECTS))
			d->quota.objects = def->objects;
		if (!(d->quota_set & Q_CLIENTS))
			d->quota.clients = def->clients;
		if (!(d->quota_set & Q_AUTO_REKEY))
			d->quota.auto_rekey_unaccounted =
				def->auto_rekey_unaccounted;
	}
	for (size_t i = 0; i < p->cfg.n_xrcds && !p->failed; i++)
		parse_finish_xrcd(p, &p->cfg.xrcds[i]);
}

int config_load(const char *path, bool must_exist, struct config *ret,
		char *err, size_t errlen)
{
	struct parse *p;
	int ini, rc = 0;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	config_init(&p->cfg);
	p->path = path;
	p->err = err;
	p->errlen = errlen;
	p->cfg.domains = calloc(CONFIG_MAX_DOMAINS, sizeof(*p->cfg.domains));
	p->cfg.xrcds = calloc(CONFIG_MAX_XRCDS, sizeof(*p->cfg.xrcds));
	if (!p->cfg.domains || !p->cfg.xrcds) {
		rc = -ENOMEM;
		goto out;
	}
	p->f = fopen(path, "re");
	if (!p->f) {
		rc = -errno;
		if (rc == -ENOENT && !must_exist) {
			*ret = p->cfg;
			p->cfg.domains = NULL;
			p->cfg.xrcds = NULL;
			rc = 0;
		} else if (rc == -ENOENT) {
			/* Named on the command line: say what to do. */
			snprintf(err, errlen,
				 "%s: %s: a configuration file named with "
				 "--config must exist; without --config the "
				 "daemon runs on the built-in defaults (an "
				 "example: " DOCDIR
				 "/examples/rdmabroker.conf)",
				 path, strerror(-rc));
		} else {
			snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		}
		goto out;
	}
	/* One handler call per line keeps the line count exact. */
	ini_allow_multiline = false;
	ini_stop_on_first_error = true;
	ini = ini_parse_stream(parse_reader, p, parse_handler, p);
	if (ini > 0 && !p->failed)
		parse_fail(p, (unsigned int)ini, NULL,
			   "syntax error (expected [section], key = value, "
			   "or a comment)");
	else if (ini < 0 && !p->failed)
		parse_fail(p, p->line, NULL, "cannot be read");
	if (!p->failed)
		parse_finish(p);
	if (p->failed) {
		rc = -EINVAL;
		goto out;
	}
	*ret = p->cfg;
	p->cfg.domains = NULL;
	p->cfg.xrcds = NULL;
out:
	if (p->f)
		fclose(p->f);
	free(p->cfg.domains);
	free(p->cfg.xrcds);
	free(p);
	return rc;
}

const struct config_domain *config_find_domain(const struct config *cfg,
					       const char *name)
{
	for (size_t i = 0; i < cfg->n_domains; i++)
		if (strcmp(cfg->domains[i].name, name) == 0)
			return &cfg->domains[i];
	return NULL;
}
