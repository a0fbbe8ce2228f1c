// SPDX-License-Identifier: MIT
/*
 * The rdmabroker.conf parser (conf.h): the sections, the core's keys
 * (their syntax, range and default) and the names (users, groups) it
 * resolves; the families' keys and sections are theirs, found by walking
 * families[] (conf-family.h), their values kept in slots only they read.
 * Separate from conf-check.c (--check-config: what parses but admits
 * nobody) and from server.c, which loads one at start and on reload.
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

#include "daemon/config/conf-family.h"
#include "daemon/config/conf.h"

#define DEFAULT_OBJECTS 65536
#define DEFAULT_CLIENTS 256
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
#define DEFAULT_FD_STORE_PER_UID 32
#define DEFAULT_UNREAD_TIMEOUT_MS 30000
#define TIMEOUT_MIN_MS CONF_TIMEOUT_MIN_MS
#define TIMEOUT_MAX_MS CONF_TIMEOUT_MAX_MS

enum quota_key {
	Q_OBJECTS = 1 << 0,
	Q_CLIENTS = 1 << 1,
	Q_AUTO_REKEY = 1 << 2,
};

/* Parser state: inih reads one line, then calls the handler for it, so
 * the reader's line count names the line of every key. */
struct conf_parse {
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
	/* The family whose own section is open ([xrcd NAME]), or -1. */
	int own;
	/* A family's slot could not be allocated. */
	bool nomem;
};

void config_init(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->defaults.objects = DEFAULT_OBJECTS;
	cfg->defaults.clients = DEFAULT_CLIENTS;
	cfg->soft_devices = 1;
	cfg->metrics.connections = METRICS_HTTP_CONNECTIONS;
	cfg->metrics.timeout_ms = METRICS_HTTP_TIMEOUT_MS;
	cfg->limits.connections_per_uid = DEFAULT_CONNECTIONS_PER_UID;
	cfg->limits.admin_reserve = DEFAULT_ADMIN_RESERVE;
	cfg->limits.hello_timeout_ms = DEFAULT_HELLO_TIMEOUT_MS;
	cfg->limits.queued_fds = DEFAULT_QUEUED_FDS;
	cfg->limits.queued_fds_per_uid = DEFAULT_QUEUED_FDS_PER_UID;
	cfg->limits.private_contexts_per_uid = DEFAULT_PRIVATE_CONTEXTS_PER_UID;
	cfg->limits.fd_store_per_uid = DEFAULT_FD_STORE_PER_UID;
	cfg->limits.unread_timeout_ms = DEFAULT_UNREAD_TIMEOUT_MS;
}

/* The configuration part of family @id; NULL when it has no keys. */
static const struct conf_family *conf_of(unsigned int id)
{
	return families[id]->conf;
}

const void *config_family(const struct config *cfg, enum family_id id)
{
	return cfg->family[id] ? cfg->family[id] : conf_of(id)->defaults;
}

const void *config_family_domain(const struct config *cfg,
				 const struct config_domain *cd,
				 enum family_id id)
{
	if (cd && cd->family[id])
		return cd->family[id];
	if (cfg->family_defaults[id])
		return cfg->family_defaults[id];
	return conf_of(id)->domain_defaults;
}

void config_free(struct config *cfg)
{
	for (unsigned int id = 0; id < FAMILY_COUNT; id++) {
		for (size_t i = 0; i < cfg->n_domains; i++) {
			free(cfg->domains[i].family[id]);
			cfg->domains[i].family[id] = NULL;
		}
		if (cfg->family[id] && conf_of(id)->free)
			conf_of(id)->free(cfg->family[id]);
		free(cfg->family[id]);
		free(cfg->family_defaults[id]);
		cfg->family[id] = NULL;
		cfg->family_defaults[id] = NULL;
	}
	free(cfg->domains);
	cfg->domains = NULL;
	cfg->n_domains = 0;
}

void config_device(const struct config *cfg, struct device_config *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->soft_devices = cfg->soft_devices;
	ret->soft_intent_window = cfg->soft_intent_window;
	ret->soft_internal_per_import = cfg->soft_internal_per_import;
	ret->soft_internal_per_qp = cfg->soft_internal_per_qp;
	for (unsigned int id = 0; id < FAMILY_COUNT; id++)
		if (conf_of(id) && conf_of(id)->device_config)
			conf_of(id)->device_config(config_family(cfg, id), ret);
}

void config_reload(const struct config *old, const struct config *cfg)
{
	for (unsigned int id = 0; id < FAMILY_COUNT; id++)
		if (conf_of(id) && conf_of(id)->reload)
			conf_of(id)->reload(config_family(old, id),
					    config_family(cfg, id));
}

static int parse_fail(struct conf_parse *p, unsigned int line, const char *key,
		      const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int parse_fail(struct conf_parse *p, unsigned int line, const char *key,
		      const char *fmt, ...)
{
	/* The longest is [broker]'s list of known keys. */
	char why[384];
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

/* *@slot, made a copy of @defaults (@size bytes) the first time: NULL
 * when out of memory, the parse failed. */
static void *parse_slot(struct conf_parse *p, void **slot, size_t size,
			const void *defaults)
{
	if (*slot)
		return *slot;
	*slot = malloc(size);
	if (!*slot) {
		conf_nomem(p);
		return NULL;
	}
	memcpy(*slot, defaults, size);
	return *slot;
}

int conf_nomem(struct conf_parse *p)
{
	p->nomem = true;
	return parse_fail(p, p->line, NULL, "out of memory");
}

int conf_fail(struct conf_parse *p, const char *key, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return parse_fail(p, p->line, key, "%s", why);
}

int conf_fail_at(struct conf_parse *p, unsigned int line, const char *key,
		 const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return parse_fail(p, line, key, "%s", why);
}

void conf_set_section(struct conf_parse *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->section, sizeof(p->section), fmt, ap);
	va_end(ap);
}

unsigned int conf_line(const struct conf_parse *p)
{
	return p->line;
}

int conf_number(struct conf_parse *p, const char *key, const char *value,
		uint64_t min, uint64_t max, bool suffixes, uint64_t *ret)
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

int conf_percent(struct conf_parse *p, const char *key, const char *value,
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
	if (!conf_number(p, key, num, min, 100, false, &v))
		return 0;
	*ret = (uint32_t)v;
	return 1;
}

static int parse_quota(struct conf_parse *p, const char *key, const char *value,
		       struct config_quota *q, unsigned int *set)
{
	uint64_t v;

	if (strcmp(key, "objects") == 0) {
		if (!conf_number(p, key, value, 0, 1u << 24, false, &v))
			return 0;
		q->objects = (uint32_t)v;
		*set |= Q_OBJECTS;
	} else if (strcmp(key, "clients") == 0) {
		if (!conf_number(p, key, value, 1, 1000000, false, &v))
			return 0;
		q->clients = (uint32_t)v;
		*set |= Q_CLIENTS;
	} else if (strcmp(key, "auto_rekey_unaccounted") == 0) {
		if (!conf_number(p, key, value, 0, 1u << 24, false, &v))
			return 0;
		q->auto_rekey_unaccounted = (uint32_t)v;
		*set |= Q_AUTO_REKEY;
	} else {
		return -ENOENT; /* not a quota key */
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
static int parse_members(struct conf_parse *p, const char *key,
			 const char *value, bool users, struct config_domain *d)
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
static int parse_cgroups(struct conf_parse *p, const char *key,
			 const char *value, struct config_domain *d)
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
static int parse_defaults_cgroup(struct conf_parse *p, const char *key,
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
		if (!conf_number(p, key, value, 1, 64, false, &v))
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
static int parse_duration(struct conf_parse *p, const char *key,
			  const char *value, uint32_t min_ms, uint32_t max_ms,
			  uint32_t *ret_ms)
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

int conf_duration(struct conf_parse *p, const char *key, const char *value,
		  uint32_t *ret_ms)
{
	return parse_duration(p, key, value, TIMEOUT_MIN_MS, TIMEOUT_MAX_MS,
			      ret_ms);
}

/* The [broker] section's own keys; -ENOENT for another key. */
static int parse_broker(struct conf_parse *p, const char *key,
			const char *value)
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
	if (strcmp(key, "unread_timeout") == 0)
		return parse_duration(p, key, value, TIMEOUT_MIN_MS,
				      TIMEOUT_MAX_MS, &l->unread_timeout_ms);
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
	} else if (strcmp(key, "fd_store_per_uid") == 0) {
		n = &l->fd_store_per_uid;
		min = 0;
		max = 1u << 16;
	} else {
		return -ENOENT;
	}
	if (!conf_number(p, key, value, min, max, false, &v))
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

static int fixed_find(const char *section);

/* A new section begins: reset the duplicate-key check, open a domain. */
static int parse_section(struct conf_parse *p, const char *section)
{
	int fixed = fixed_find(section);
	struct config_domain *d;
	const char *name;
	char known[256];
	size_t len = 0;

	snprintf(p->section, sizeof(p->section), "%s", section);
	p->n_keys = 0;
	p->own = -1;
	if (fixed >= 0) {
		if (p->fixed_seen & (1u << fixed))
			return parse_fail(p, p->line, NULL,
					  "[%s] is given twice: put its keys "
					  "in one section",
					  section);
		p->fixed_seen |= 1u << fixed;
		return 1;
	}
	for (unsigned int id = 0; id < FAMILY_COUNT; id++) {
		const struct conf_family *cf = conf_of(id);
		size_t n = cf && cf->section ? strlen(cf->section) : 0;
		void *slot;

		if (!n || strncmp(section, cf->section, n) != 0 ||
		    section[n] != ' ')
			continue;
		p->own = (int)id;
		slot = parse_slot(p, &p->cfg.family[id], cf->size,
				  cf->defaults);
		return slot ? cf->section_open(p, section + n + 1, slot) : 0;
	}
	if (strncmp(section, "domain ", 7) != 0) {
		for (unsigned int id = 0; id < FAMILY_COUNT; id++)
			if (conf_of(id) && conf_of(id)->section)
				len += (size_t)snprintf(
					known + len,
					len < sizeof(known) ?
						sizeof(known) - len :
						0,
					", [%s NAME]", conf_of(id)->section);
		return parse_fail(p, p->line, NULL,
				  "unknown section [%s] (known: [broker], "
				  "[defaults], [soft], [metrics], "
				  "[domain NAME]%s)",
				  section, len ? known : "");
	}
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

static int parse_section(struct conf_parse *p, const char *section);

/* inih reads a line, then calls the handler for it: counting lines here
 * names the line of every key. Section headers are taken here too, so that
 * an empty or repeated section is seen. */
static char *parse_reader(char *str, int num, void *stream)
{
	struct conf_parse *p = stream;
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

int config_why(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* [soft] intent_window: yes or no. */
static int parse_yes_no(struct conf_parse *p, const char *key,
			const char *value, bool *ret)
{
	if (strcmp(value, "yes") == 0 || strcmp(value, "no") == 0) {
		*ret = value[0] == 'y';
		return 1;
	}
	return parse_fail(p, p->line, key, "\"%s\" is not yes or no", value);
}

/* The [soft] section's own keys; -ENOENT for another key. */
static int parse_soft(struct conf_parse *p, const char *key, const char *value)
{
	uint32_t *internal;
	uint64_t v;

	if (strcmp(key, "devices") == 0) {
		if (!conf_number(p, key, value, 1, SOFT_DEVICES_LIMIT, false,
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
		if (!conf_number(p, key, value, 0, SOFT_INTERNAL_MAX, false,
				 &v))
			return 0;
		*internal = (uint32_t)v;
		return 1;
	}
	return -ENOENT;
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
			return config_why(why, whylen,
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
		return config_why(why, whylen,
				  "\"%s\" is not ADDRESS:PORT, [IPV6]:PORT or "
				  "unix:PATH",
				  value);
	memcpy(host, h, hl);
	host[hl] = '\0';
	if (inet_pton(AF_INET, host, addr) != 1 &&
	    inet_pton(AF_INET6, host, addr) != 1)
		return config_why(why, whylen,
				  "\"%s\" is not a numeric IPv4 or IPv6 "
				  "address (no names: the listener is set up "
				  "before anything resolves them)",
				  host);
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (!isdigit((unsigned char)colon[1]) || *end || errno || port == 0 ||
	    port > 65535)
		return config_why(why, whylen, "\"%s\" is not a port (1-65535)",
				  colon + 1);
	if (ret_host)
		snprintf(ret_host, hostlen, "%s", host);
	if (ret_port)
		*ret_port = (unsigned int)port;
	return 0;
}

/* The [metrics] section's keys; -ENOENT for another key. */
static int parse_metrics(struct conf_parse *p, const char *key,
			 const char *value)
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
		return -ENOENT;
	if (!conf_number(p, key, value, 1, METRICS_HTTP_CONNECTIONS_MAX, false,
			 &v))
		return 0;
	p->cfg.metrics.connections = (uint32_t)v;
	return 1;
}

/* A family's key @key given in a section of @where: its parse's answer,
 * or -ENOENT when no family has the key there. @d: the domain open
 * (CONF_QUOTA, CONF_DOMAIN), NULL for [defaults]. */
static int parse_family_key(struct conf_parse *p, enum conf_where where,
			    struct config_domain *d, const char *key,
			    const char *value)
{
	for (unsigned int id = 0; id < FAMILY_COUNT; id++) {
		const struct conf_family *cf = conf_of(id);
		bool dom = where == CONF_QUOTA || where == CONF_DOMAIN;
		void **slot;

		if (!cf || (where == CONF_OWN && (int)id != p->own))
			continue;
		slot = !dom ? &p->cfg.family[id] :
		       d    ? &d->family[id] :
			      &p->cfg.family_defaults[id];
		for (const struct conf_key *k = cf->keys; k->name; k++) {
			if (k->where != where || strcmp(k->name, key) != 0)
				continue;
			if (!parse_slot(
				    p, slot, dom ? cf->domain_size : cf->size,
				    dom ? cf->domain_defaults : cf->defaults))
				return 0;
			return k->parse(p, key, value, *slot);
		}
	}
	return -ENOENT;
}

/* "unknown key (known: @before, the families' keys of @where[0], then of
 * @where[1]..., @after)", the families in their listed order. */
static int parse_unknown(struct conf_parse *p, const char *key,
			 const char *before, const enum conf_where *where,
			 size_t n_where, const char *after)
{
	char known[256];
	size_t len = 0;

	known[0] = '\0';
	for (size_t w = 0; w < n_where; w++)
		for (unsigned int rank = 0; rank < FAMILY_COUNT; rank++)
			for (unsigned int id = 0; id < FAMILY_COUNT; id++) {
				const struct conf_family *cf = conf_of(id);

				if (!cf || cf->listed != rank ||
				    (where[w] == CONF_OWN && (int)id != p->own))
					continue;
				for (const struct conf_key *k = cf->keys;
				     k->name; k++)
					if (k->where == where[w] &&
					    len < sizeof(known))
						len += (size_t)snprintf(
							known + len,
							sizeof(known) - len,
							"%s%s", len ? ", " : "",
							k->name);
			}
	return parse_fail(p, p->line, key, "unknown key (known: %s%s%s%s%s)",
			  before, *before && *known ? ", " : "", known,
			  (*before || *known) && *after ? ", " : "", after);
}

/* Is @key one that may be given more than once in a section? */
static bool key_repeats(const char *key)
{
	for (unsigned int id = 0; id < FAMILY_COUNT; id++)
		for (const struct conf_key *k =
			     conf_of(id) ? conf_of(id)->keys : NULL;
		     k && k->name; k++)
			if (k->repeats && strcmp(k->name, key) == 0)
				return true;
	return false;
}

/* [defaults]: the cgroup keys, then the core's quotas. */
static int parse_defaults(struct conf_parse *p, const char *key,
			  const char *value)
{
	unsigned int set = 0;
	int ret = parse_defaults_cgroup(p, key, value);

	if (ret != -ENOENT)
		return ret;
	return parse_quota(p, key, value, &p->cfg.defaults, &set);
}

/* The sections of one name: the parser of their own keys (-ENOENT for a
 * key it does not know), whether they take families' keys (of @where),
 * and the known keys the families' go between in the unknown-key message,
 * as rdmabroker.conf(5) lists them. */
static const struct fixed_section {
	const char *name;
	int (*parse)(struct conf_parse *p, const char *key, const char *value);
	bool families;
	enum conf_where where;
	const char *before, *after;
} fixed_sections[] = {
	{ "broker", parse_broker, true, CONF_BROKER,
	  "admin_group, connections_per_uid, admin_reserve, hello_timeout, "
	  "queued_fds, queued_fds_per_uid, private_contexts_per_uid, "
	  "fd_store_per_uid, unread_timeout",
	  "" },
	{ "defaults", parse_defaults, true, CONF_QUOTA, "",
	  "objects, clients, auto_rekey_unaccounted, per, cgroup_depth, "
	  "cgroup_pattern" },
	{ "soft", parse_soft, true, CONF_SOFT, "",
	  "devices, intent_window, internal_objects_per_import, "
	  "internal_objects_per_qp" },
	{ "metrics", parse_metrics, false, CONF_OWN,
	  "listen, connections, timeout", "" },
};

#define N_FIXED (sizeof(fixed_sections) / sizeof(fixed_sections[0]))

/* The index of @section in fixed_sections[], or -1. */
static int fixed_find(const char *section)
{
	for (unsigned int i = 0; i < N_FIXED; i++)
		if (strcmp(section, fixed_sections[i].name) == 0)
			return (int)i;
	return -1;
}

static int parse_key(struct conf_parse *p, const char *section, const char *key,
		     const char *value)
{
	static const enum conf_where own[] = { CONF_OWN };
	static const enum conf_where dom[] = { CONF_DOMAIN, CONF_QUOTA };
	int fixed = fixed_find(section), ret;
	struct config_domain *d;

	if (p->own >= 0) {
		ret = parse_family_key(p, CONF_OWN, NULL, key, value);
		return ret != -ENOENT ? ret :
					parse_unknown(p, key, "", own, 1, "");
	}
	if (fixed >= 0) {
		const struct fixed_section *f = &fixed_sections[fixed];

		ret = f->parse(p, key, value);
		if (ret == -ENOENT && f->families)
			ret = parse_family_key(p, f->where, NULL, key, value);
		return ret != -ENOENT ?
			       ret :
			       parse_unknown(p, key, f->before, &f->where,
					     f->families, f->after);
	}
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
	ret = parse_family_key(p, CONF_DOMAIN, d, key, value);
	if (ret == -ENOENT)
		ret = parse_family_key(p, CONF_QUOTA, d, key, value);
	if (ret == -ENOENT)
		ret = parse_quota(p, key, value, &d->quota, &d->quota_set);
	return ret != -ENOENT ?
		       ret :
		       parse_unknown(p, key, "users, groups, cgroups", dom, 2,
				     "objects, clients, "
				     "auto_rekey_unaccounted");
}

static int parse_handler(void *user, const char *section, const char *key,
			 const char *value)
{
	struct conf_parse *p = user;

	if (p->failed)
		return 0;
	if (!*section)
		return parse_fail(p, p->line, key,
				  "key outside of any section");
	for (size_t i = 0; i < p->n_keys && !key_repeats(key); i++)
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

bool config_uid_domain_name(const char *name)
{
	if (strncmp(name, "uid-", 4) != 0 || !isdigit((unsigned char)name[4]))
		return false;
	for (const char *c = name + 4; *c; c++)
		if (!isdigit((unsigned char)*c))
			return false;
	return true;
}

/* Checks that need the whole file: every domain has members; quotas not
 * given come from [defaults], wherever it stands; then the families'. */
static void parse_finish(struct conf_parse *p)
{
	for (size_t i = 0; i < p->cfg.n_domains && !p->failed; i++) {
		struct config_domain *d = &p->cfg.domains[i];
		const struct config_quota *def = &p->cfg.defaults;

		if (!d->n_users && !d->n_groups && !d->n_cgroups) {
			snprintf(p->section, sizeof(p->section), "domain %s",
				 d->name);
			parse_fail(p, d->line, "users",
				   "domain \"%s\" has no users, no groups and "
				   "no cgroups",
				   d->name);
			break;
		}
		if (!(d->quota_set & Q_OBJECTS))
			d->quota.objects = def->objects;
		if (!(d->quota_set & Q_CLIENTS))
			d->quota.clients = def->clients;
		if (!(d->quota_set & Q_AUTO_REKEY))
			d->quota.auto_rekey_unaccounted =
				def->auto_rekey_unaccounted;
		for (unsigned int id = 0; id < FAMILY_COUNT; id++)
			if (d->family[id] && conf_of(id)->domain_finish)
				conf_of(id)->domain_finish(
					d->family[id],
					config_family_domain(&p->cfg, NULL,
							     id));
	}
	for (unsigned int id = 0; id < FAMILY_COUNT && !p->failed; id++)
		if (p->cfg.family[id] && conf_of(id)->finish)
			conf_of(id)->finish(p, &p->cfg, p->cfg.family[id]);
}

int config_load(const char *path, bool must_exist, struct config *ret,
		char *err, size_t errlen)
{
	struct conf_parse *p;
	int ini, rc = 0;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	config_init(&p->cfg);
	p->path = path;
	p->err = err;
	p->errlen = errlen;
	p->own = -1;
	p->cfg.domains = calloc(CONFIG_MAX_DOMAINS, sizeof(*p->cfg.domains));
	if (!p->cfg.domains) {
		rc = -ENOMEM;
		goto out;
	}
	p->f = fopen(path, "re");
	if (!p->f) {
		rc = -errno;
		if (rc == -ENOENT && !must_exist) {
			*ret = p->cfg;
			config_init(&p->cfg);
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
		rc = p->nomem ? -ENOMEM : -EINVAL;
		goto out;
	}
	*ret = p->cfg;
	config_init(&p->cfg);
out:
	if (p->f)
		fclose(p->f);
	config_free(&p->cfg);
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
