// SPDX-License-Identifier: MIT
/*
 * The DM family's keys in rdmabroker.conf (dm-conf.h): their syntax,
 * ranges and defaults, given to the parser (conf-family.h).
 */
#include "config.h"

#include <inttypes.h>
#include <string.h>

#include "daemon/config/conf-family.h"
#include "daemon/config/conf.h"
#include "daemon/device/device.h"
#include "daemon/families/dm/dm-conf.h"
#include "daemon/util/log.h"

/* Device memory: the soft device's size, a ConnectX-6's. Each domain
 * gets a quarter of a device's by default and one member of a named
 * domain half its domain's, so that one uid (or four domains) cannot take
 * it all; administrators keep a tenth of it for themselves, and a uid's
 * persistent DMs, which outlive its processes, hold at most a quarter. */
#define SOFT_DM_BYTES (256u * 1024)
#define SOFT_MAX_DM_SIZE_LIMIT (64u * 1024 * 1024)
#define PAGE 4096u

enum dm_conf_key {
	DM_CONF_BYTES = 1 << 0,
	DM_CONF_MEMBER_SHARE = 1 << 1,
};

static const struct dm_conf dm_conf_defaults = {
	.dm_revoke_grace_ms = 5000,
	.dm_admin_reserve_pct = 10,
	.dm_persistent_per_uid = 16,
	.dm_persistent_bytes_pct = 25,
	.soft_max_dm_size = SOFT_DM_BYTES,
};

static const struct dm_conf_quota dm_conf_quota_defaults = {
	.dm_pct = 25,
	.dm_member_share = 50,
};

uint64_t dm_conf_bytes(uint64_t bytes, uint32_t pct, uint64_t pool)
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

const struct dm_conf *dm_conf(const struct config *cfg)
{
	return config_family(cfg, FAMILY_DM);
}

const struct dm_conf_quota *dm_conf_quota(const struct config *cfg,
					  const struct config_domain *cd)
{
	return config_family_domain(cfg, cd, FAMILY_DM);
}

/* Device memory in bytes (K, M and G suffixes) or as a percent of each
 * device's: *ret_pct is 0 for bytes. */
static int parse_amount(struct conf_parse *p, const char *key,
			const char *value, uint64_t *ret_bytes,
			uint32_t *ret_pct)
{
	uint32_t pct = 0;
	uint64_t v = 0;

	if (*value && value[strlen(value) - 1] == '%') {
		if (!conf_percent(p, key, value, 0, &pct))
			return 0;
	} else if (!conf_number(p, key, value, 0, UINT64_MAX / 2, true, &v)) {
		return 0;
	}
	*ret_bytes = v;
	*ret_pct = pct;
	return 1;
}

static int parse_revoke_grace(struct conf_parse *p, const char *key,
			      const char *value, void *slot)
{
	struct dm_conf *c = slot;

	return conf_duration(p, key, value, &c->dm_revoke_grace_ms);
}

static int parse_admin_reserve(struct conf_parse *p, const char *key,
			       const char *value, void *slot)
{
	struct dm_conf *c = slot;

	return parse_amount(p, key, value, &c->dm_admin_reserve,
			    &c->dm_admin_reserve_pct);
}

static int parse_persistent_per_uid(struct conf_parse *p, const char *key,
				    const char *value, void *slot)
{
	struct dm_conf *c = slot;
	uint64_t v;

	if (!conf_number(p, key, value, 0, 1u << 20, false, &v))
		return 0;
	c->dm_persistent_per_uid = (uint32_t)v;
	return 1;
}

static int parse_persistent_bytes(struct conf_parse *p, const char *key,
				  const char *value, void *slot)
{
	struct dm_conf *c = slot;

	return parse_amount(p, key, value, &c->dm_persistent_bytes_per_uid,
			    &c->dm_persistent_bytes_pct);
}

static int parse_soft_max_size(struct conf_parse *p, const char *key,
			       const char *value, void *slot)
{
	struct dm_conf *c = slot;
	uint64_t v;

	if (!conf_number(p, key, value, PAGE, SOFT_MAX_DM_SIZE_LIMIT, true, &v))
		return 0;
	if (v % PAGE)
		return conf_fail(p, key,
				 "%" PRIu64 " is not a multiple of 4096", v);
	c->soft_max_dm_size = v;
	return 1;
}

static int parse_bytes(struct conf_parse *p, const char *key, const char *value,
		       void *slot)
{
	struct dm_conf_quota *q = slot;

	if (!parse_amount(p, key, value, &q->dm_bytes, &q->dm_pct))
		return 0;
	q->set |= DM_CONF_BYTES;
	return 1;
}

static int parse_member_share(struct conf_parse *p, const char *key,
			      const char *value, void *slot)
{
	struct dm_conf_quota *q = slot;

	if (!conf_percent(p, key, value, 1, &q->dm_member_share))
		return 0;
	q->set |= DM_CONF_MEMBER_SHARE;
	return 1;
}

static void dm_conf_domain_finish(void *dslot, const void *defaults)
{
	struct dm_conf_quota *q = dslot;
	const struct dm_conf_quota *def = defaults;

	if (!(q->set & DM_CONF_BYTES)) {
		q->dm_bytes = def->dm_bytes;
		q->dm_pct = def->dm_pct;
	}
	if (!(q->set & DM_CONF_MEMBER_SHARE))
		q->dm_member_share = def->dm_member_share;
}

static void dm_conf_device(const void *slot, struct device_config *dcfg)
{
	const struct dm_conf *c = slot;

	dcfg->soft_max_dm_size = c->soft_max_dm_size;
}

static void dm_conf_reload(const void *old, const void *slot)
{
	const struct dm_conf *o = old, *c = slot;

	if (c->soft_max_dm_size != o->soft_max_dm_size)
		log_notice("[soft] max_dm_size takes effect at the next "
			   "start");
}

static const struct conf_key dm_conf_keys[] = {
	{ "dm_revoke_grace", CONF_BROKER, false, parse_revoke_grace },
	{ "dm_admin_reserve", CONF_BROKER, false, parse_admin_reserve },
	{ "dm_persistent_per_uid", CONF_BROKER, false,
	  parse_persistent_per_uid },
	{ "dm_persistent_bytes_per_uid", CONF_BROKER, false,
	  parse_persistent_bytes },
	{ "dm_bytes", CONF_QUOTA, false, parse_bytes },
	{ "dm_member_share", CONF_QUOTA, false, parse_member_share },
	{ "max_dm_size", CONF_SOFT, false, parse_soft_max_size },
	{ NULL, 0, false, NULL },
};

const struct conf_family dm_conf_family = {
	.keys = dm_conf_keys,
	.listed = 0,
	.size = sizeof(struct dm_conf),
	.defaults = &dm_conf_defaults,
	.domain_size = sizeof(struct dm_conf_quota),
	.domain_defaults = &dm_conf_quota_defaults,
	.domain_finish = dm_conf_domain_finish,
	.device_config = dm_conf_device,
	.reload = dm_conf_reload,
};
