/* SPDX-License-Identifier: MIT */
/*
 * rdmabroker.conf: INI, parsed with inih; see rdmabroker.conf(5). The
 * core's keys are here; each family's are in its own slots of struct
 * config, which it reads through its accessor (conf-family.h).
 */
#ifndef RDMAB_CONF_H
#define RDMAB_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/device/device.h"
#include "daemon/families/family.h"
#include "daemon/registry/cgroup.h"

#define CONFIG_NAME_MAX 48
#define CONFIG_MAX_DOMAINS 256
#define CONFIG_MAX_MEMBERS 256
/* cgroups = GLOB, ...: globs one [domain] may list. */
#define CONFIG_MAX_CGROUPS 8

/* A domain's quotas the core keeps; the families' are in their slots. */
struct config_quota {
	uint32_t objects;
	uint32_t clients;
	/* Not a quota: rekey the domain once one of its contexts counts
	 * this many unaccounted objects; 0 is off (rekey.c). */
	uint32_t auto_rekey_unaccounted;
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
	struct config_quota quota;
	/* Keys given in the file; the rest come from [defaults]. */
	unsigned int quota_set;
	unsigned int line;
	/* Each family's keys for this domain (conf-family.h), by family
	 * id; NULL when it gave none: config_family_domain(). */
	void *family[FAMILY_COUNT];
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
	/* Places in the fd store one uid's XRCD names and DMs take at once
	 * (read at start: the store's bound follows it). */
	uint32_t fd_store_per_uid;
	/* A connection that is not read from because it leaves replies
	 * unread is closed after this long. */
	uint32_t unread_timeout_ms;
};

#define SOFT_INTERNAL_MAX 64

struct config {
	bool has_admin_group;
	gid_t admin_gid;
	struct broker_limits limits;
	/* Quotas of every uid's own domain and of private domains. */
	struct config_quota defaults;
	/* [defaults] per = cgroup: a client's own domain is its uid's in
	 * its cgroup (cgroup_key_len()), not its uid's alone. */
	bool per_cgroup;
	unsigned int cgroup_depth;
	char cgroup_pattern[CGROUP_GLOB_MAX];
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
	/* Each family's keys (conf-family.h), by family id: its own, and
	 * its quotas' in [defaults]; NULL when the file gave none, so that
	 * config_family() answers the family's built-in defaults. */
	void *family[FAMILY_COUNT];
	void *family_defaults[FAMILY_COUNT];
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

/* Family @id's slot in @cfg (conf-family.h): what the file set, or the
 * family's built-in defaults. */
const void *config_family(const struct config *cfg, enum family_id id);
/* Its domain slot: @cd's (a configured domain), or for what @cd did not
 * set and for @cd NULL (every other domain), [defaults]'. */
const void *config_family_domain(const struct config *cfg,
				 const struct config_domain *cd,
				 enum family_id id);
/* The device layer's part of @cfg: [soft] and the families' keys. */
void config_device(const struct config *cfg, struct device_config *ret);
/* @cfg replaces @old (SIGHUP): the families log what of theirs takes
 * effect at the next start only. */
void config_reload(const struct config *old, const struct config *cfg);
/* @name is a uid's own domain's: "uid-" and a number. */
bool config_uid_domain_name(const char *name);
/* uid @uid has an account (--check-config). */
bool config_uid_exists(uid_t uid);
/* The group @name, or the gid it spells: 0, -ENOENT when there is no such
 * group, -EINVAL for a number out of range. */
int config_lookup_gid(const char *name, gid_t *ret);
/* The reason in @why (of @whylen bytes); returns -EINVAL. */
int config_why(char *why, size_t whylen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
