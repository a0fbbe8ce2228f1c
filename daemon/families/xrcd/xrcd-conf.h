/* SPDX-License-Identifier: MIT */
/*
 * The XRCD family's keys in rdmabroker.conf (rdmabroker.conf(5)): the
 * xrcds quota and the [xrcd NAME] sections that declare persistent XRC
 * domains shared by the domains they list. Registered with the parser
 * through xrcd_family.conf; read through xrcd_conf_find() and
 * xrcd_conf_quota().
 */
#ifndef RDMAB_XRCD_CONF_H
#define RDMAB_XRCD_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/xrcd/xrcd-name.h"
#include "daemon/config/conf.h"

struct conf_family;

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

/* The family's slot: the declarations, in file order. */
struct xrcd_conf {
	struct config_xrcd *xrcds;
	size_t n_xrcds, cap_xrcds;
};

/* A domain's quota ([defaults] or [domain NAME]): its XRCD opens. */
struct xrcd_conf_quota {
	uint32_t xrcds;
	bool set;
};

const struct xrcd_conf *xrcd_conf(const struct config *cfg);
/* @cd's quota; [defaults]' for @cd NULL. */
const struct xrcd_conf_quota *xrcd_conf_quota(const struct config *cfg,
					      const struct config_domain *cd);
/* The declaration of XRCD @name; NULL when it is not declared. */
const struct config_xrcd *xrcd_conf_find(const struct config *cfg,
					 const char *name);
/* Does @x list the domain @domain? */
bool xrcd_conf_lists(const struct config_xrcd *x, const char *domain);
/* The @len bytes at @name are a valid XRCD name (xrcd_name_check()). */
bool xrcd_conf_valid_name(const char *name, size_t len);

/* struct family's conf. */
extern const struct conf_family xrcd_conf_family;

#endif
