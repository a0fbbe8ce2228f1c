/* SPDX-License-Identifier: MIT */
/* rdmabroker.conf: INI, parsed with inih; see rdmabroker.conf(5). */
#ifndef RDMAB_CONF_H
#define RDMAB_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/xrcd/xrcd-name.h"
#include "daemon/registry/cgroup.h"

#define CONFIG_NAME_MAX 48
#define CONFIG_MAX_DOMAINS 256
#define CONFIG_MAX_MEMBERS 256
/* cgroups = GLOB, ...: globs one [domain] may list. */
#define CONFIG_MAX_CGROUPS 8

struct quota {
	/* Device memory: dm_pct percent of each device's (max_dm_size),
	 * when not 0; else dm_bytes on all devices together. */
	uint64_t dm_bytes;
	uint32_t dm_pct;
	/* Configured domains: the percent of the domain's dm_bytes one
	 * member uid may hold (domain.c). */
	uint32_t dm_member_share;
	uint32_t xrcds;
	uint32_t rss_tables;
	uint32_t objects;
	uint32_t clients;
	/* Not a quota: rekey the domain once one of its contexts counts
	 * this many unaccounted objects; 0 is off (rekey.c). */
	uint32_t auto_rekey_unaccounted;
};

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

struct config_domain {
	char name[CONFIG_NAME_MAX];
	uid_t users[CONFIG_MAX_MEMBERS];
	size_t n_users;
	gid_t groups[CONFIG_MAX_MEMBERS];
	size_t n_groups;
	/* A member's cgroup must match one of these (cgroup.h), and its uid
	 * or groups the lists above when the domain has any. */
	char cgroups[CONFIG_MAX_CGROUPS][CGROUP_GLOB_MAX];
	size_t n_cgroups;
	struct quota quota;
	/* Keys given in the file; the rest come from [defaults]. */
	unsigned int quota_set;
	unsigned int line;
	struct rss_rule rss_allow[CONFIG_MAX_RSS_ALLOW];
	size_t n_rss_allow;
};

/*
 * [broker]: what the daemon lets each uid and each connection hold, so that
 * no user can lock the others (or the administrators) out.
 */
struct broker_limits {
	/* Connections of one uid at once; administrators are exempt. */
	uint32_t connections_per_uid;
	/* Of --max-clients, the last this many are for administrators. */
	uint32_t admin_reserve;
	/* A connection that has not said hello by then is closed. */
	uint32_t hello_timeout_ms;
	/* Descriptors sent to one connection and not yet read by it (in the
	 * daemon's queue or the socket's): at this many, its requests are no
	 * longer read. */
	uint32_t queued_fds;
	/* The same, summed over the connections of one uid. */
	uint32_t queued_fds_per_uid;
	/* Contexts of private domains one uid holds at once. */
	uint32_t private_contexts_per_uid;
	/* A connection that is not read from because it leaves replies
	 * unread is closed after this long. */
	uint32_t unread_timeout_ms;
	/* Device memory: how long the holders of a revoked DM have to let
	 * go before the broker frees what it can. */
	uint32_t dm_revoke_grace_ms;
	/* Device memory only administrators may allocate: a percent of
	 * each device's when dm_admin_reserve_pct, else bytes. */
	uint64_t dm_admin_reserve;
	uint32_t dm_admin_reserve_pct;
	/* Persistent DMs one uid may have allocated that are still there,
	 * in all domains: how many, and how many bytes (a percent of the
	 * device's, or bytes). */
	uint32_t dm_persistent_per_uid;
	uint64_t dm_persistent_bytes_per_uid;
	uint32_t dm_persistent_bytes_pct;
};

/* A figure given in bytes, or as @pct percent (when not 0) of a device's
 * memory of @pool bytes, rounded down to whole pages. */
uint64_t config_dm_bytes(uint64_t bytes, uint32_t pct, uint64_t pool);

/* Room for an XRCD name and its NUL (common/xrcd/xrcd-name.h states the
 * rule). */
#define CONFIG_XRCD_NAME_MAX (XRCD_NAME_MAX + 1)
#define CONFIG_MAX_XRCDS 256
#define CONFIG_XRCD_DOMAINS 32

/* [xrcd NAME]: a persistent XRC domain the listed domains share. */
struct config_xrcd {
	char name[CONFIG_XRCD_NAME_MAX];
	char domains[CONFIG_XRCD_DOMAINS][CONFIG_NAME_MAX];
	size_t n_domains;
	unsigned int line;
};

#define SOFT_INTERNAL_MAX 64

struct config {
	bool has_admin_group;
	gid_t admin_gid;
	struct broker_limits limits;
	/* Quotas of every uid's own domain and of private domains. */
	struct quota defaults;
	/* [defaults] per = cgroup: a client's own domain is its uid's in
	 * its cgroup (cgroup_key_len()), not its uid's alone. */
	bool per_cgroup;
	unsigned int cgroup_depth;
	char cgroup_pattern[CGROUP_GLOB_MAX];
	uint64_t soft_max_dm_size;
	/* How many soft devices (soft0, soft1, ...): 1 unless a test needs
	 * two devices. */
	unsigned int soft_devices;
	/* [soft] intent_window, internal_objects_per_import and
	 * internal_objects_per_qp (each at most SOFT_INTERNAL_MAX). */
	bool soft_intent_window;
	uint32_t soft_internal_per_import;
	uint32_t soft_internal_per_qp;
	struct config_domain *domains;
	size_t n_domains;
	struct config_xrcd *xrcds;
	size_t n_xrcds;
	/* [metrics] (metrics-http.c): no listener while listen is empty;
	 * read at start only. listen is checked by config_metrics_listen(). */
	struct {
		char listen[128];
		uint32_t connections;
		uint32_t timeout_ms;
	} metrics;
};

/* [metrics]: HTTP connections at once by default and at most, and how
 * long one may be idle or stall a reply. */
#define METRICS_HTTP_CONNECTIONS 8
#define METRICS_HTTP_CONNECTIONS_MAX 1024
#define METRICS_HTTP_TIMEOUT_MS 10000

/*
 * [metrics] listen: "unix:/ABSOLUTE/PATH", "IPV4:PORT" or "[IPV6]:PORT".
 * 0 with the parts filled (@ret_path set for a Unix socket, else
 * @ret_host, a numeric address, and @ret_port), or -EINVAL with the
 * reason in @why. @ret_*: NULL to check only.
 */
int config_metrics_listen(const char *value, char *why, size_t whylen,
			  char *ret_host, size_t hostlen,
			  unsigned int *ret_port, char *ret_path,
			  size_t pathlen);

/* The built-in defaults, used when no file exists. */
void config_init(struct config *cfg);

/*
 * Parse @path into @ret. A missing file gives the defaults unless
 * @must_exist. On error @err holds "FILE:LINE: [section] key: reason" and
 * @ret is untouched.
 */
int config_load(const char *path, bool must_exist, struct config *ret,
		char *err, size_t errlen);
void config_free(struct config *cfg);
/*
 * rdmabrokerd --check-config: load @path (see config_load()), then write to
 * @out each user, group or domain that matches nobody, and a summary line;
 * or the error. 0 when the file is valid (warnings or not), else -errno.
 */
int config_check(const char *path, bool must_exist, FILE *out);

const struct config_domain *config_find_domain(const struct config *cfg,
					       const char *name);

/* The declaration of XRCD @name; NULL when it is not declared. */
const struct config_xrcd *config_find_xrcd(const struct config *cfg,
					   const char *name);
/* Does @x list the domain @domain? */
bool config_xrcd_lists(const struct config_xrcd *x, const char *domain);
/* The @len bytes at @name are a valid XRCD name (xrcd_name_check()). */
bool config_valid_xrcd_name(const char *name, size_t len);
/* The group @name, or the gid it spells: 0, -ENOENT when there is no such
 * group, -EINVAL for a number out of range. */
int config_lookup_gid(const char *name, gid_t *ret);
/* Parse one rss_allow value into @ret: 0, or -EINVAL with the reason in
 * @why. */
int config_parse_rss_rule(const char *value, struct rss_rule *ret, char *why,
			  size_t whylen);

#endif
