// SPDX-License-Identifier: MIT
/*
 * The RSS family's keys in rdmabroker.conf (rss-conf.h): the rss_tables
 * quota and the rss_allow rules' syntax, given to the parser
 * (conf-family.h).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "daemon/config/conf-family.h"
#include "daemon/config/conf.h"
#include "daemon/families/rss/rss-conf.h"

static const struct rss_conf_domain rss_conf_domain_defaults = {
	.rss_tables = 16,
};

const struct rss_conf_domain *rss_conf_domain(const struct config *cfg,
					      const struct config_domain *cd)
{
	return config_family_domain(cfg, cd, FAMILY_RSS);
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

int rss_conf_parse_rule(const char *value, struct rss_rule *ret, char *why,
			size_t whylen)
{
	char buf[160], *tok[4], *save = NULL, *slash, *t;
	struct rss_rule r = { 0 };
	unsigned long v;
	size_t n = 0;

	if (strlen(value) >= sizeof(buf))
		return config_why(why, whylen, "longer than %zu characters",
				  sizeof(buf) - 1);
	memcpy(buf, value, strlen(value) + 1);
	for (t = strtok_r(buf, " \t", &save); t && n < 4;
	     t = strtok_r(NULL, " \t", &save))
		tok[n++] = t;
	if (n < 2 || n > 3)
		return config_why(why, whylen,
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
		return config_why(why, whylen,
				  "family \"%s\" is not ipv4 or ipv6", tok[0]);
	if (slash && strcmp(slash, "tcp") == 0)
		r.l4 = IPPROTO_TCP;
	else if (slash && strcmp(slash, "udp") == 0)
		r.l4 = IPPROTO_UDP;
	else if (slash)
		return config_why(why, whylen,
				  "L4 protocol \"%s\" is not tcp or udp",
				  slash);
	slash = strchr(tok[1], '/');
	if (slash)
		*slash++ = '\0';
	if (inet_pton(r.af, tok[1], r.addr) != 1)
		return config_why(why, whylen, "\"%s\" is not an %s address",
				  tok[1], r.af == AF_INET ? "IPv4" : "IPv6");
	r.prefix_len = r.af == AF_INET ? 32 : 128;
	if (slash) {
		if (rule_number(slash, r.prefix_len, &v) < 0)
			return config_why(why, whylen,
					  "prefix length \"%s\" is not 0..%u",
					  slash, r.prefix_len);
		r.prefix_len = (uint8_t)v;
	}
	for (unsigned int i = 0; i < 16; i++) {
		unsigned int keep =
			r.prefix_len > i * 8 ? r.prefix_len - i * 8 : 0;

		if (keep < 8 && (r.addr[i] & ~(0xff00u >> keep) & 0xff))
			return config_why(why, whylen,
					  "%s/%u has bits set past the prefix",
					  tok[1], r.prefix_len);
	}
	if (n == 3) {
		if (!r.l4)
			return config_why(why, whylen,
					  "a port needs an L4 protocol, e.g. "
					  "%s/udp",
					  tok[0]);
		slash = strchr(tok[2], '/');
		if (slash)
			*slash++ = '\0';
		if (rule_number(tok[2], 65535, &v) < 0)
			return config_why(why, whylen,
					  "port \"%s\" is not 0..65535",
					  tok[2]);
		r.has_port = true;
		r.port = (uint16_t)v;
		r.port_mask = 0xffff;
		if (slash) {
			if (rule_number(slash, 65535, &v) < 0 || !v)
				return config_why(why, whylen,
						  "port mask \"%s\" is not "
						  "1..0xffff",
						  slash);
			r.port_mask = (uint16_t)v;
		}
		if (r.port & ~r.port_mask)
			return config_why(why, whylen,
					  "port %u has bits outside the mask "
					  "0x%x",
					  r.port, r.port_mask);
	}
	*ret = r;
	return 0;
}

static int parse_allow(struct conf_parse *p, const char *key, const char *value,
		       void *slot)
{
	struct rss_conf_domain *d = slot;
	char why[160];

	if (d->n_rss_allow == CONFIG_MAX_RSS_ALLOW)
		return conf_fail(p, key, "more than %d rules in one domain",
				 CONFIG_MAX_RSS_ALLOW);
	if (rss_conf_parse_rule(value, &d->rss_allow[d->n_rss_allow], why,
				sizeof(why)) < 0)
		return conf_fail(p, key, "%s", why);
	d->n_rss_allow++;
	return 1;
}

static int parse_tables(struct conf_parse *p, const char *key,
			const char *value, void *slot)
{
	struct rss_conf_domain *d = slot;
	uint64_t v;

	if (!conf_number(p, key, value, 0, 1u << 20, false, &v))
		return 0;
	d->rss_tables = (uint32_t)v;
	d->tables_set = true;
	return 1;
}

static void domain_finish(void *dslot, const void *defaults)
{
	struct rss_conf_domain *d = dslot;
	const struct rss_conf_domain *def = defaults;

	if (!d->tables_set)
		d->rss_tables = def->rss_tables;
}

static const struct conf_key rss_conf_keys[] = {
	{ "rss_allow", CONF_DOMAIN, true, parse_allow },
	{ "rss_tables", CONF_QUOTA, false, parse_tables },
	{ NULL, 0, false, NULL },
};

const struct conf_family rss_conf_family = {
	.keys = rss_conf_keys,
	.listed = 2,
	/* No keys of its own outside the domains'. */
	.size = 0,
	.defaults = NULL,
	.domain_size = sizeof(struct rss_conf_domain),
	.domain_defaults = &rss_conf_domain_defaults,
	.domain_finish = domain_finish,
};
