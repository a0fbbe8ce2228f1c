// SPDX-License-Identifier: MIT
/* rdmabrokerctl rss [list | show ID] */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ctl/ctl.h"

static const struct {
	uint64_t bit;
	const char *name;
} hash_names[] = {
	{ IBV_RX_HASH_SRC_IPV4, "src-ipv4" },
	{ IBV_RX_HASH_DST_IPV4, "dst-ipv4" },
	{ IBV_RX_HASH_SRC_IPV6, "src-ipv6" },
	{ IBV_RX_HASH_DST_IPV6, "dst-ipv6" },
	{ IBV_RX_HASH_SRC_PORT_TCP, "src-tcp" },
	{ IBV_RX_HASH_DST_PORT_TCP, "dst-tcp" },
	{ IBV_RX_HASH_SRC_PORT_UDP, "src-udp" },
	{ IBV_RX_HASH_DST_PORT_UDP, "dst-udp" },
};

static void hash_text(char *buf, size_t size, uint64_t fields)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(hash_names) / sizeof(hash_names[0]); i++)
		if ((fields & hash_names[i].bit) && n < size)
			n += (size_t)snprintf(buf + n, size - n, "%s%s",
					      n ? "," : "", hash_names[i].name);
	if (!n)
		snprintf(buf, size, "none");
}

/* "ipv4/udp 192.0.2.0/24 9999/0xffff", as rss_allow writes it. */
static void match_text(char *buf, size_t size, const struct ibc_flow_match *m)
{
	char a[INET6_ADDRSTRLEN] = "?";
	int n;

	if (m->af == AF_INET || m->af == AF_INET6)
		inet_ntop(m->af, m->dst_addr, a, sizeof(a));
	n = snprintf(buf, size, "%s%s %s/%u",
		     m->af == AF_INET6 ? "ipv6" : "ipv4",
		     m->l4_proto == IPPROTO_TCP ? "/tcp" :
		     m->l4_proto == IPPROTO_UDP ? "/udp" :
						  "",
		     a, m->prefix_len);
	if (m->port_mask && n > 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, " %u/0x%x", m->dst_port,
			 m->port_mask);
}

static void key_text(char *buf, const uint8_t *key)
{
	for (int i = 0; i < IBC_RSS_KEY_LEN; i++)
		sprintf(buf + 2 * i, "%02x", key[i]);
}

static void rss_json_one(const struct ibc_rss_info *r)
{
	char hash[160], match[96], key[2 * IBC_RSS_KEY_LEN + 1];

	hash_text(hash, sizeof(hash), r->hash_fields);
	match_text(match, sizeof(match), &r->match);
	key_text(key, r->hash_key);
	printf("{\"id\":%" PRIu64 ",\"domain\":", r->id);
	json_string(stdout, r->domain);
	printf(",\"device\":");
	json_string(stdout, r->device);
	printf(",\"client\":%" PRIu64 ",\"port\":%u,\"table_size\":%u,"
	       "\"key\":\"%s\",\"hash_fields\":%" PRIu64 ",\"hash\":\"%s\","
	       "\"match\":\"%s\",\"priority\":%u,\"qp_num\":%u,"
	       "\"rebuilds\":%u,\"wqs\":[",
	       r->client_id, r->port_num, 1u << r->log_ind_tbl_size, key,
	       r->hash_fields, hash, match, r->priority, r->qp_num,
	       r->rebuilds);
	for (uint32_t i = 0; i < r->num_wqs; i++)
		printf("%s{\"id\":%" PRIu64 ",\"owner\":%" PRIu64 "}",
		       i ? "," : "", r->wq_ids[i], r->wq_owners[i]);
	printf("]}");
}

static void rss_show(const struct ibc_rss_info *r)
{
	char hash[160], match[96], key[2 * IBC_RSS_KEY_LEN + 1];
	char domain[CTL_TEXT_SIZE(r->domain)], device[CTL_TEXT_SIZE(r->device)];

	hash_text(hash, sizeof(hash), r->hash_fields);
	match_text(match, sizeof(match), &r->match);
	key_text(key, r->hash_key);
	printf("RSS %" PRIu64 "\n  domain      %s\n  device      %s port %u\n"
	       "  owner       client %" PRIu64 "\n  table       %u entries "
	       "(entry i = WQ i mod %u)\n  key         %s\n"
	       "  hash        %s\n  match       %s\n  priority    %u\n"
	       "  qp number   %u\n  rebuilds    %u\n  WQs         ",
	       r->id, text_escape(domain, sizeof(domain), r->domain),
	       text_escape(device, sizeof(device), r->device), r->port_num,
	       r->client_id, 1u << r->log_ind_tbl_size, r->num_wqs, key, hash,
	       match, r->priority, r->qp_num, r->rebuilds);
	for (uint32_t i = 0; i < r->num_wqs; i++)
		printf("%s%" PRIu64 " (client %" PRIu64 ")", i ? ", " : "",
		       r->wq_ids[i], r->wq_owners[i]);
	printf("\n");
}

static void rss_table(const struct ibc_rss_info *r, size_t n)
{
	/* Ids have up to 15 digits (rdmabrokerd(8), Ids). */
	printf("%-15s %-20s %-10s %-15s %-6s %-26s %-4s %s\n", "ID", "DOMAIN",
	       "DEVICE", "OWNER", "SIZE", "MATCH", "PRIO", "WQS");
	for (size_t i = 0; i < n; i++) {
		char domain[CTL_TEXT_SIZE(r[i].domain)];
		char device[CTL_TEXT_SIZE(r[i].device)];
		char match[96];

		match_text(match, sizeof(match), &r[i].match);
		printf("%-15" PRIu64 " %-20s %-10s %-15" PRIu64
		       " %-6u %-26s %-4u "
		       "%u\n",
		       r[i].id,
		       text_escape(domain, sizeof(domain), r[i].domain),
		       text_escape(device, sizeof(device), r[i].device),
		       r[i].client_id, 1u << r[i].log_ind_tbl_size, match,
		       r[i].priority, r[i].num_wqs);
	}
}

static int rss_usage(const char *why, const char *arg)
{
	fprintf(stderr, "rdmabrokerctl: rss: %s%s%s\n", why, arg ? ": " : "",
		arg ? arg : "");
	return CTL_USAGE;
}

static int cmd_rss(struct ctl *ctl, int argc, char **argv)
{
	struct ibc_rss_info *r;
	uint64_t id = 0;
	size_t n, shown = 0;
	int ret;

	if (argc >= 2 && strcmp(argv[1], "show") == 0) {
		char *end;

		if (argc != 3)
			return rss_usage("show needs one RSS id", NULL);
		errno = 0;
		id = strtoull(argv[2], &end, 10);
		if (errno || end == argv[2] || *end || *argv[2] == '-' || !id)
			return rss_usage("not an RSS id", argv[2]);
	} else if (argc > 2 || (argc == 2 && strcmp(argv[1], "list"))) {
		return rss_usage("unknown argument", argv[1]);
	}
	ret = ctl_connect(ctl);
	if (ret)
		return ret;
	ret = ibc_list_rss(ctl->client, &r, sizeof(*r), &n);
	if (ret < 0)
		return ctl_fail("rss", ret);
	if (ctl->json && !id)
		printf("[");
	for (size_t i = 0; i < n; i++) {
		if (id && r[i].id != id)
			continue;
		if (ctl->json) {
			printf("%s", shown ? "," : "");
			rss_json_one(&r[i]);
		} else if (id) {
			rss_show(&r[i]);
		}
		shown++;
	}
	if (ctl->json && (shown || !id))
		printf("%s\n", id ? "" : "]");
	else if (!id)
		rss_table(r, n);
	ibc_list_free(r);
	if (id && !shown) {
		fprintf(stderr,
			"rdmabrokerctl: rss: no RSS object %" PRIu64
			" that this client may see\n",
			id);
		return CTL_ERROR;
	}
	return CTL_OK;
}

/* Its entry in the command table (ctl/main.c). */
static const struct ctl_family_listing rss_listing = {
	.quota_field = offsetof(struct ibc_quota, rss_tables),
	.quota_size = sizeof(((struct ibc_quota *)0)->rss_tables),
	.quota_key = "rss_tables",
	.quota_header = "RSS",
	.quota_width = 9,
};

const struct ctl_command ctl_cmd_rss = {
	"rss",
	"[list | show ID]",
	"RSS objects: tables, keys, matches, WQs and owners",
	"  list     the RSS objects the caller may see (the default)\n"
	"  show ID  one whole: key, hash fields, QP number, WQs\n",
	cmd_rss,
	&rss_listing,
};
