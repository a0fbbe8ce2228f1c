// SPDX-License-Identifier: MIT
/*
 * The RSS family's rules (rss.h): what a match may name, the family
 * and L4 protocol its hash implies (mlx5's one-family, one-L4 rule), and
 * which matches a domain may claim (rdmabroker.conf's rss_allow).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>

#include "daemon/registry/client.h"
#include "daemon/registry/core.h"
#include "daemon/registry/domain.h"
#include "daemon/families/rss/rss.h"

#define RSS_HASH_V4 (IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4)
#define RSS_HASH_V6 (IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6)
#define RSS_HASH_TCP (IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP)
#define RSS_HASH_UDP (IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP)
#define RSS_HASH_KNOWN (RSS_HASH_V4 | RSS_HASH_V6 | RSS_HASH_TCP | RSS_HASH_UDP)

/* The family and L4 protocol @hash_fields implies, and its one-family,
 * one-L4 rule (mlx5's create_rss_raw_qp_tir). */
int rss_check_hash(const struct device *dev, uint64_t fields, uint32_t log_size,
		   struct rss_match *m, struct why *why)
{
	if (fields & ~RSS_HASH_KNOWN)
		return why_set(why, -EOPNOTSUPP,
			       "hash fields 0x%" PRIx64 " are not among "
			       "the IPv4, IPv6, TCP and UDP source and "
			       "destination bits (IBV_RX_HASH_INNER and "
			       "the rest are not supported)",
			       fields & ~RSS_HASH_KNOWN);
	if (fields & ~dev->caps.rss_hash_fields)
		return why_set(why, -EOPNOTSUPP,
			       "%s does not hash on fields 0x%" PRIx64,
			       dev->name, fields & ~dev->caps.rss_hash_fields);
	if (!fields && log_size)
		return why_set(why, -EINVAL,
			       "hash fields 0 (no hash) need a one-entry "
			       "table, not 2^%u entries",
			       log_size);
	if ((fields & RSS_HASH_V4) && (fields & RSS_HASH_V6))
		return why_set(why, -EINVAL,
			       "one RSS QP hashes one address family: "
			       "hash fields 0x%" PRIx64 " mix IPv4 and "
			       "IPv6",
			       fields);
	if ((fields & RSS_HASH_TCP) && (fields & RSS_HASH_UDP))
		return why_set(why, -EINVAL,
			       "one RSS QP hashes at most one L4 "
			       "protocol: hash fields 0x%" PRIx64 " mix "
			       "TCP and UDP",
			       fields);
	if ((fields & (RSS_HASH_TCP | RSS_HASH_UDP)) &&
	    !(fields & (RSS_HASH_V4 | RSS_HASH_V6)) && !m->af)
		return why_set(why, -EINVAL,
			       "hash fields 0x%" PRIx64 " hash ports "
			       "only: the match must name the address "
			       "family",
			       fields);
	/* What the hash implies is added to the match, so that packets the
	 * hash is not defined for never reach the QP. */
	if (fields & (RSS_HASH_V4 | RSS_HASH_V6)) {
		uint8_t af = fields & RSS_HASH_V4 ? AF_INET : AF_INET6;

		if (m->af && m->af != af)
			return why_set(why, -EINVAL,
				       "the match is %s but the hash "
				       "fields hash %s",
				       m->af == AF_INET ? "IPv4" : "IPv6",
				       af == AF_INET ? "IPv4" : "IPv6");
		m->af = af;
	}
	if (fields & (RSS_HASH_TCP | RSS_HASH_UDP)) {
		uint8_t l4 = fields & RSS_HASH_TCP ? IPPROTO_TCP : IPPROTO_UDP;

		if (m->l4 && m->l4 != l4)
			return why_set(why, -EINVAL,
				       "the match is %s but the hash "
				       "fields hash %s ports",
				       m->l4 == IPPROTO_TCP ? "TCP" : "UDP",
				       l4 == IPPROTO_TCP ? "TCP" : "UDP");
		m->l4 = l4;
	}
	if (!m->af)
		return why_set(why, -EINVAL,
			       "neither the match nor the hash fields "
			       "name an address family");
	return 0;
}

int rss_match_from_wire(const Rdmab__FlowMatch *w, struct rss_match *m,
			bool *empty, struct why *why)
{
	unsigned int alen;

	memset(m, 0, sizeof(*m));
	*empty = true;
	if (!w)
		return 0;
	if (w->af && w->af != AF_INET && w->af != AF_INET6)
		return why_set(why, -EINVAL,
			       "match family %u is not AF_INET or "
			       "AF_INET6",
			       w->af);
	if (w->l4_proto && w->l4_proto != IPPROTO_TCP &&
	    w->l4_proto != IPPROTO_UDP)
		return why_set(why, -EINVAL,
			       "match L4 protocol %u is not TCP or UDP",
			       w->l4_proto);
	if (w->dst_port > 0xffff || w->port_mask > 0xffff)
		return why_set(why, -EINVAL,
			       "match port %u/0x%x is not 16 bits", w->dst_port,
			       w->port_mask);
	if (w->port_mask && !w->l4_proto)
		return why_set(why, -EINVAL,
			       "a match on a port needs the L4 protocol");
	if (w->dst_port & ~w->port_mask)
		return why_set(why, -EINVAL,
			       "match port %u has bits outside its mask "
			       "0x%x",
			       w->dst_port, w->port_mask);
	alen = w->af == AF_INET6 ? 16 : 4;
	if (w->prefix_len > alen * 8 || (w->prefix_len && !w->af))
		return why_set(why, -EINVAL,
			       "match prefix length %u is not 0..%u of a "
			       "named family",
			       w->prefix_len, alen * 8);
	if (w->dst_addr.len > 16)
		return why_set(why, -EINVAL, "match address of %zu bytes",
			       w->dst_addr.len);
	m->af = (uint8_t)w->af;
	m->l4 = (uint8_t)w->l4_proto;
	m->prefix_len = (uint8_t)w->prefix_len;
	m->port = (uint16_t)w->dst_port;
	m->port_mask = (uint16_t)w->port_mask;
	/* An empty address comes as NULL. */
	if (w->dst_addr.len)
		memcpy(m->addr, w->dst_addr.data, w->dst_addr.len);
	/* Bits past the prefix match nothing: drop them. */
	for (unsigned int i = 0; i < 16; i++) {
		unsigned int keep =
			m->prefix_len > i * 8 ? m->prefix_len - i * 8 : 0;

		if (keep < 8)
			m->addr[i] &= (uint8_t)(0xff00u >> keep);
	}
	*empty = !m->af && !m->l4 && !m->prefix_len && !m->port_mask;
	return 0;
}

/* Does rule @u allow match @m (which has the implied family and L4)? */
bool rss_rule_allows(const struct rss_rule *u, const struct rss_match *m)
{
	if (u->af != m->af || (u->l4 && u->l4 != m->l4))
		return false;
	if (m->prefix_len < u->prefix_len)
		return false;
	for (unsigned int i = 0; i < 16; i++) {
		unsigned int keep =
			u->prefix_len > i * 8 ? u->prefix_len - i * 8 : 0;
		uint8_t mask = keep >= 8 ? 0xff : (uint8_t)(0xff00u >> keep);

		if ((m->addr[i] & mask) != u->addr[i])
			return false;
	}
	if (u->has_port)
		return (m->port_mask & u->port_mask) == u->port_mask &&
		       (m->port & u->port_mask) == u->port;
	return true;
}

static void rss_match_str(const struct rss_match *m, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	int n;

	if (!inet_ntop(m->af, m->addr, a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	n = snprintf(buf, len, "%s%s %s/%u", m->af == AF_INET ? "ipv4" : "ipv6",
		     m->l4 == IPPROTO_TCP ? "/tcp" :
		     m->l4 == IPPROTO_UDP ? "/udp" :
					    "",
		     a, m->prefix_len);
	if (m->port_mask && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " %u/0x%x", m->port,
			 m->port_mask);
}

/* An admin may claim anything; a domain what its rss_allow lists; an
 * empty match only an admin, and only with IBC_RSS_MATCH_ALL. */
int rss_check_policy(struct client *c, const struct rss_match *m, bool empty,
		     uint32_t flags, struct why *why)
{
	bool admin = policy_is_admin(c->core, c);
	const struct rss_conf_domain *rd;
	char what[128];

	if (empty) {
		if (!admin)
			return why_set(why, -EPERM,
				       "an empty match claims all the "
				       "port's traffic of the hashed "
				       "family: only an administrator "
				       "may ask for it");
		if (!(flags & IBC_RSS_MATCH_ALL))
			return why_set(why, -EPERM,
				       "an empty match claims all the "
				       "port's traffic and can take the "
				       "host off the network: set "
				       "IBC_RSS_MATCH_ALL to mean it");
		return 0;
	}
	if (admin)
		return 0;
	rd = c->domain->kind == DOMAIN_CONFIGURED ?
		     rss_conf_domain(&c->core->config,
				     config_find_domain(&c->core->config,
							c->domain->name)) :
		     NULL;
	for (size_t i = 0; rd && i < rd->n_rss_allow; i++)
		if (rss_rule_allows(&rd->rss_allow[i], m))
			return 0;
	rss_match_str(m, what, sizeof(what));
	return why_set(why, -EPERM,
		       "domain %s may not claim %s: no rss_allow rule of "
		       "rdmabroker.conf lists it",
		       c->domain->name, what);
}

Rdmab__FlowMatch *rss_match_to_wire(struct wire_arena *a,
				    const struct rss_match *m)
{
	Rdmab__FlowMatch *w = wire_arena_alloc(a, sizeof(*w));
	uint8_t *addr = wire_arena_alloc(a, 16);

	if (!w || !addr)
		return NULL;
	rdmab__flow_match__init(w);
	memcpy(addr, m->addr, 16);
	w->af = m->af;
	w->dst_addr.data = addr;
	w->dst_addr.len = m->af == AF_INET ? 4 : 16;
	w->prefix_len = m->prefix_len;
	w->l4_proto = m->l4;
	w->dst_port = m->port;
	w->port_mask = m->port_mask;
	return w;
}
