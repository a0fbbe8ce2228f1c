/* SPDX-License-Identifier: MIT */
/*
 * The DM family's keys in rdmabroker.conf (rdmabroker.conf(5)): the
 * [broker] bounds on device memory, the dm_bytes and dm_member_share
 * quotas, and the soft device's [soft] max_dm_size. Registered with the
 * parser through dm_family.conf; read here, through dm_conf() and
 * dm_conf_quota(), by the DM family and the domains' DM limits.
 */
#ifndef RDMAB_DM_CONF_H
#define RDMAB_DM_CONF_H

#include <stdint.h>

struct config;
struct config_domain;
struct conf_family;

/* [broker] and [soft]: what the daemon lets each uid hold of device
 * memory, so that no user can lock the others (or the administrators)
 * out. */
struct dm_conf {
	/* How long the holders of a revoked DM have to let go before the
	 * broker frees what it can. */
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
	/* [soft] max_dm_size: the soft device's memory (the verbs device
	 * reports its own). */
	uint64_t soft_max_dm_size;
};

/* A domain's quota ([defaults] or [domain NAME]). */
struct dm_conf_quota {
	/* dm_pct percent of each device's (max_dm_size), when not 0; else
	 * dm_bytes on all devices together. */
	uint64_t dm_bytes;
	uint32_t dm_pct;
	/* Configured domains: the percent of the domain's dm_bytes one
	 * member uid may hold (domain.c). */
	uint32_t dm_member_share;
	/* Keys the domain gave (DM_CONF_*); the rest are [defaults]'. */
	unsigned int set;
};

const struct dm_conf *dm_conf(const struct config *cfg);
/* @cd's quota; [defaults]' for @cd NULL. */
const struct dm_conf_quota *dm_conf_quota(const struct config *cfg,
					  const struct config_domain *cd);

/* A figure given in bytes, or as @pct percent (when not 0) of a device's
 * memory of @pool bytes, rounded down to whole pages. */
uint64_t dm_conf_bytes(uint64_t bytes, uint32_t pct, uint64_t pool);

/* struct family's conf. */
extern const struct conf_family dm_conf_family;

#endif
