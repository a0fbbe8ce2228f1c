/* SPDX-License-Identifier: MIT */
/*
 * What a family tells the rdmabroker.conf parser (conf.c) and
 * --check-config (conf-check.c): its keys in the file's sections, its own
 * sections, and how they are parsed, defaulted, checked and freed. The
 * values go to the family's slots of struct config (conf.h), which the
 * parser allocates and frees but never reads: the family reads them through
 * its own accessor over config_family() and config_family_domain().
 */
#ifndef RDMAB_CONF_FAMILY_H
#define RDMAB_CONF_FAMILY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct config;
struct conf_parse;
struct conf_check;
struct device_config;

/* The sections a family's key is given in, and the slot it writes. */
enum conf_where {
	/* [broker]: the family's slot. */
	CONF_BROKER,
	/* A quota: [defaults] and [domain NAME]; a domain's slot, or the
	 * defaults' (what a domain does not set, wherever it stands). */
	CONF_QUOTA,
	/* [domain NAME] only: the domain's slot. */
	CONF_DOMAIN,
	/* [soft]: the family's slot. */
	CONF_SOFT,
	/* The family's own sections ([NAME ...]): the family's slot. */
	CONF_OWN,
};

struct conf_key {
	const char *name;
	enum conf_where where;
	/* May be given more than once in a section (each adds one). */
	bool repeats;
	/* Parse @value of @key into @slot: 1, or 0 after conf_fail(). */
	int (*parse)(struct conf_parse *p, const char *key, const char *value,
		     void *slot);
};

struct conf_family {
	/* Up to an entry with no name, in the order the unknown-key
	 * messages list them. */
	const struct conf_key *keys;
	/* Where its keys stand among the families' in those messages (0
	 * first): rdmabroker.conf(5)'s order, older than families.def's. */
	unsigned int listed;
	/* Its slot and a domain's: their size and the built-in defaults,
	 * which config_family*() return while the file set nothing. A
	 * domain slot holds no allocation of its own. */
	size_t size;
	const void *defaults;
	size_t domain_size;
	const void *domain_defaults;
	/* Its own sections, "[@section NAME]" (NULL: none): one opens with
	 * @section_open(NAME), then its CONF_OWN keys follow. 1, or 0 after
	 * conf_fail(). */
	const char *section;
	int (*section_open)(struct conf_parse *p, const char *name, void *slot);
	/* The whole file is read. @domain_finish: a domain's slot takes
	 * what it did not set from @defaults (the [defaults] slot).
	 * @finish: the checks that need the whole file, conf_fail() on the
	 * first that fails (NULL: none). */
	void (*domain_finish)(void *dslot, const void *defaults);
	void (*finish)(struct conf_parse *p, const struct config *cfg,
		       void *slot);
	/* Free what @slot holds (not @slot). */
	void (*free)(void *slot);
	/* --check-config: warn of what parses but cannot work
	 * (conf_warn()); write its part of the summary line, ", N ...". */
	void (*check)(struct conf_check *c, const void *slot);
	void (*summary)(const void *slot, FILE *out);
	/* Its part of the device layer's configuration. */
	void (*device_config)(const void *slot, struct device_config *dcfg);
	/* The file was reloaded (SIGHUP): log what of @slot's keys takes
	 * effect at the next start only, when @old and @slot differ. */
	void (*reload)(const void *old, const void *slot);
};

/* The parser's helpers for a family's parse callbacks. Each returns 1 when
 * the value is good (*ret set), else 0 after conf_fail(). */
int conf_number(struct conf_parse *p, const char *key, const char *value,
		uint64_t min, uint64_t max, bool suffixes, uint64_t *ret);
/* A number from @min to 100 followed by '%'. */
int conf_percent(struct conf_parse *p, const char *key, const char *value,
		 uint64_t min, uint32_t *ret);
/* Seconds, or a number with "ms" or "s", within CONF_TIMEOUT_*_MS. */
int conf_duration(struct conf_parse *p, const char *key, const char *value,
		  uint32_t *ret_ms);
#define CONF_TIMEOUT_MIN_MS 10
#define CONF_TIMEOUT_MAX_MS (3600 * 1000)

/* Refuse the file: "FILE:LINE: [section] key \"@key\": reason" (no key:
 * @key NULL), at the line being read, or at @line. Returns 0. */
int conf_fail(struct conf_parse *p, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int conf_fail_at(struct conf_parse *p, unsigned int line, const char *key,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Refuse the file for want of memory: config_load() returns -ENOMEM.
 * Returns 0. */
int conf_nomem(struct conf_parse *p);
/* The section the next message names ("xrcd NAME"), for a finish check. */
void conf_set_section(struct conf_parse *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The line being read. */
unsigned int conf_line(const struct conf_parse *p);

/* --check-config: "FILE:LINE: warning: ..." (no line: @line 0). */
void conf_warn(struct conf_check *c, unsigned int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
