// SPDX-License-Identifier: MIT
/*
 * The XRCD family's keys in rdmabroker.conf (xrcd-conf.h): the xrcds
 * quota and the [xrcd NAME] sections, their checks and --check-config's
 * warnings, given to the parser (conf-family.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/config/conf-family.h"
#include "daemon/config/conf.h"
#include "daemon/families/xrcd/xrcd-conf.h"
#include "daemon/util/array.h"

static const struct xrcd_conf xrcd_conf_defaults = { 0 };

static const struct xrcd_conf_quota xrcd_conf_quota_defaults = {
	.xrcds = 64,
};

const struct xrcd_conf *xrcd_conf(const struct config *cfg)
{
	return config_family(cfg, FAMILY_XRCD);
}

const struct xrcd_conf_quota *xrcd_conf_quota(const struct config *cfg,
					      const struct config_domain *cd)
{
	return config_family_domain(cfg, cd, FAMILY_XRCD);
}

bool xrcd_conf_valid_name(const char *name, size_t len)
{
	return xrcd_name_check(name, len, NULL, 0) == 0;
}

static const struct config_xrcd *find(const struct xrcd_conf *c,
				      const char *name)
{
	for (size_t i = 0; i < c->n_xrcds; i++)
		if (strcmp(c->xrcds[i].name, name) == 0)
			return &c->xrcds[i];
	return NULL;
}

const struct config_xrcd *xrcd_conf_find(const struct config *cfg,
					 const char *name)
{
	return find(xrcd_conf(cfg), name);
}

bool xrcd_conf_lists(const struct config_xrcd *x, const char *domain)
{
	for (size_t i = 0; i < x->n_domains; i++)
		if (strcmp(x->domains[i], domain) == 0)
			return true;
	return false;
}

static int parse_quota(struct conf_parse *p, const char *key, const char *value,
		       void *slot)
{
	struct xrcd_conf_quota *q = slot;
	uint64_t v;

	if (!conf_number(p, key, value, 0, 1u << 20, false, &v))
		return 0;
	q->xrcds = (uint32_t)v;
	q->set = true;
	return 1;
}

/* [xrcd NAME] */
static int section_open(struct conf_parse *p, const char *name, void *slot)
{
	struct xrcd_conf *c = slot;
	char why[XRCD_NAME_WHY_SIZE];
	struct config_xrcd *x;

	if (xrcd_name_check(name, strlen(name), why, sizeof(why)) < 0)
		return conf_fail(p, NULL, "%s", why);
	if (find(c, name))
		return conf_fail(p, NULL,
				 "[xrcd %s]: XRCD \"%s\" is declared twice",
				 name, name);
	if (c->n_xrcds == CONFIG_MAX_XRCDS)
		return conf_fail(p, NULL, "more than %d XRCDs",
				 CONFIG_MAX_XRCDS);
	/* Grown by doubling up to the bound: most files declare a few. */
	if (array_grow(&c->xrcds, &c->cap_xrcds, c->n_xrcds + 1,
		       sizeof(*c->xrcds), 1) < 0)
		return conf_nomem(p);
	x = &c->xrcds[c->n_xrcds++];
	memset(x, 0, sizeof(*x));
	snprintf(x->name, sizeof(x->name), "%.*s", CONFIG_XRCD_NAME_MAX - 1,
		 name);
	x->line = conf_line(p);
	return 1;
}

/* domains = a, b: names of [domain] sections or of uid domains. */
static int parse_domains(struct conf_parse *p, const char *key,
			 const char *value, void *slot)
{
	struct xrcd_conf *c = slot;
	struct config_xrcd *x = &c->xrcds[c->n_xrcds - 1];
	char buf[1024];
	char *save = NULL;

	snprintf(buf, sizeof(buf), "%s", value);
	for (char *t = strtok_r(buf, ", \t", &save); t;
	     t = strtok_r(NULL, ", \t", &save)) {
		if (strlen(t) >= CONFIG_NAME_MAX)
			return conf_fail(p, key,
					 "domain name \"%.*s...\" is longer "
					 "than %d bytes",
					 16, t, CONFIG_NAME_MAX - 1);
		if (xrcd_conf_lists(x, t))
			return conf_fail(p, key,
					 "domain \"%s\" is listed twice", t);
		if (x->n_domains == CONFIG_XRCD_DOMAINS)
			return conf_fail(p, key, "more than %d domains",
					 CONFIG_XRCD_DOMAINS);
		snprintf(x->domains[x->n_domains++], CONFIG_NAME_MAX, "%s", t);
	}
	if (!x->n_domains)
		return conf_fail(p, key, "no domain listed");
	return 1;
}

static void domain_finish(void *dslot, const void *defaults)
{
	struct xrcd_conf_quota *q = dslot;
	const struct xrcd_conf_quota *def = defaults;

	if (!q->set)
		q->xrcds = def->xrcds;
}

/* Every listed domain is defined in the file or is a uid's own. */
static void finish(struct conf_parse *p, const struct config *cfg, void *slot)
{
	const struct xrcd_conf *c = slot;

	for (size_t i = 0; i < c->n_xrcds; i++) {
		const struct config_xrcd *x = &c->xrcds[i];

		conf_set_section(p, "xrcd %s", x->name);
		if (!x->n_domains) {
			conf_fail_at(p, x->line, "domains",
				     "XRCD \"%s\" lists no domains", x->name);
			return;
		}
		for (size_t j = 0; j < x->n_domains; j++)
			if (!config_find_domain(cfg, x->domains[j]) &&
			    !config_uid_domain_name(x->domains[j])) {
				conf_fail_at(p, x->line, "domains",
					     "domain \"%s\" is neither a "
					     "[domain] section nor a uid's "
					     "domain (uid-N)",
					     x->domains[j]);
				return;
			}
	}
}

static void conf_free(void *slot)
{
	struct xrcd_conf *c = slot;

	free(c->xrcds);
	c->xrcds = NULL;
	c->n_xrcds = 0;
	c->cap_xrcds = 0;
}

/* "uid-N" of an [xrcd] that names a uid without an account. */
static void check(struct conf_check *chk, const void *slot)
{
	const struct xrcd_conf *c = slot;

	for (size_t i = 0; i < c->n_xrcds; i++) {
		const struct config_xrcd *x = &c->xrcds[i];

		for (size_t j = 0; j < x->n_domains; j++) {
			const char *n = x->domains[j];
			char *end;
			unsigned long uid;

			if (strncmp(n, "uid-", 4) != 0)
				continue;
			uid = strtoul(n + 4, &end, 10);
			if (!*end && !config_uid_exists((uid_t)uid))
				conf_warn(chk, x->line,
					  "[xrcd %s] domains: %s is the domain "
					  "of a uid that has no account",
					  x->name, n);
		}
	}
}

static void summary(const void *slot, FILE *out)
{
	const struct xrcd_conf *c = slot;

	fprintf(out, ", %zu declared XRC domain%s", c->n_xrcds,
		c->n_xrcds == 1 ? "" : "s");
}

static const struct conf_key xrcd_conf_keys[] = {
	{ "xrcds", CONF_QUOTA, false, parse_quota },
	{ "domains", CONF_OWN, false, parse_domains },
	{ NULL, 0, false, NULL },
};

const struct conf_family xrcd_conf_family = {
	.keys = xrcd_conf_keys,
	.listed = 1,
	.size = sizeof(struct xrcd_conf),
	.defaults = &xrcd_conf_defaults,
	.domain_size = sizeof(struct xrcd_conf_quota),
	.domain_defaults = &xrcd_conf_quota_defaults,
	.section = "xrcd",
	.section_open = section_open,
	.domain_finish = domain_finish,
	.finish = finish,
	.free = conf_free,
	.check = check,
	.summary = summary,
};
