/* SPDX-License-Identifier: MIT */
/*
 * The RSS family's keys in rdmabroker.conf (rdmabroker.conf(5)): the
 * rss_tables quota and a domain's rss_allow rules. Registered with the
 * parser through rss_family.conf; read through rss_conf_domain().
 */
#ifndef RDMAB_RSS_CONF_H
#define RDMAB_RSS_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct config;
struct config_domain;
struct conf_family;

/* rss_allow = FAMILY[/L4] PREFIX [PORT[/MASK]]: traffic a domain's RSS
 * flow rules may claim (rdmabroker.conf(5)). */
#define CONFIG_MAX_RSS_ALLOW 32

struct rss_rule {
	uint8_t af; /* AF_INET or AF_INET6 */
	uint8_t l4; /* IPPROTO_TCP, IPPROTO_UDP, or 0: any */
	uint8_t prefix_len;
	uint8_t addr[16]; /* network order, masked to prefix_len */
	bool has_port;
	uint16_t port;
	uint16_t port_mask;
};

/* A domain's keys ([defaults] has rss_tables only). */
struct rss_conf_domain {
	uint32_t rss_tables;
	bool tables_set;
	struct rss_rule rss_allow[CONFIG_MAX_RSS_ALLOW];
	size_t n_rss_allow;
};

/* @cd's keys; [defaults]' for @cd NULL (no rss_allow rule). */
const struct rss_conf_domain *rss_conf_domain(const struct config *cfg,
					      const struct config_domain *cd);
/* Parse one rss_allow value into @ret: 0, or -EINVAL with the reason in
 * @why. */
int rss_conf_parse_rule(const char *value, struct rss_rule *ret, char *why,
			size_t whylen);

/* struct family's conf. */
extern const struct conf_family rss_conf_family;

#endif
