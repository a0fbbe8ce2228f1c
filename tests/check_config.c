// SPDX-License-Identifier: MIT
/*
 * daemon/config/conf.c: rdmabroker.conf(5) through config_load() on files
 * written to a temporary directory. Every kind of bad file must be refused with
 * -EINVAL and one message "FILE:LINE: [section] key \"k\": reason" that
 * names the file, the exact line and the key (where there is one), leaving
 * the caller's configuration untouched; good files give the right quotas,
 * with [defaults] filling the keys a domain does not set wherever it stands.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/config/conf.h"
#include "daemon/families/dm/dm-conf.h"
#include "daemon/families/rss/rss-conf.h"
#include "daemon/families/xrcd/xrcd-conf.h"
#include "tests/cklib.h"
#include "tests/testlib.h"

/* Write @text to a fresh file in a fresh directory; malloc'd path. */
static char *write_conf(const char *text)
{
	char *dir = tl_mkdtemp(), *path;
	FILE *f;

	ck_assert_ptr_nonnull(dir);
	ck_assert_int_ge(asprintf(&path, "%s/rdmabroker.conf", dir), 0);
	free(dir);
	f = fopen(path, "w");
	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
	return path;
}

/* --- bad files ---------------------------------------------------------- */

#define LONG_NAME_48 "abcdefghijabcdefghijabcdefghijabcdefghijabcdefgh"
#define LONG_NAME_47 "abcdefghijabcdefghijabcdefghijabcdefghijabcdefg"
#define RSS8                                                                   \
	"rss_allow = ipv4 10.0.0.0/8\nrss_allow = ipv4 10.0.0.0/8\n"           \
	"rss_allow = ipv4 10.0.0.0/8\nrss_allow = ipv4 10.0.0.0/8\n"           \
	"rss_allow = ipv4 10.0.0.0/8\nrss_allow = ipv4 10.0.0.0/8\n"           \
	"rss_allow = ipv4 10.0.0.0/8\nrss_allow = ipv4 10.0.0.0/8\n"
#define RSS33 RSS8 RSS8 RSS8 RSS8 "rss_allow = ipv4 10.0.0.0/8\n"
#define X50 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"

struct bad_case {
	const char *what;
	const char *text;
	/* Expected: the line, the section and key in the message (NULL when
	 * the message has none), a part of the reason (NULL: any). */
	unsigned int line;
	const char *section;
	const char *key;
	const char *reason;
};

static const struct bad_case bad[] = {
	{ "syntax error: a line without '='",
	  "[defaults]\nobjects = 5\nthis line has no equals sign\n"
	  "clients = 3\n",
	  3, NULL, NULL, "syntax error" },
	{ "'[' without ']'", "# a comment\n[defaults\nobjects = 5\n", 2, NULL,
	  NULL, "without" },
	{ "unknown section", "[defaults]\nobjects = 1\n\n[bogus]\nx = 1\n", 4,
	  NULL, NULL, "unknown section [bogus]" },
	{ "unknown key in [defaults]", "[defaults]\nobjects = 1\nfoo = 1\n", 3,
	  "defaults", "foo", "unknown key" },
	{ "unknown key in [broker]", "[broker]\nadmin = 0\n", 2, "broker",
	  "admin", "unknown key" },
	{ "unknown key in [soft]", "[soft]\nmax_dm = 4096\n", 2, "soft",
	  "max_dm", "unknown key" },
	{ "unknown key in a domain", "[domain lab]\nusers = 0\nmembers = 0\n",
	  3, "domain lab", "members", "unknown key" },
	{ "key outside any section",
	  "; a comment\n\nobjects = 5\n[defaults]\nclients = 2\n", 3, NULL,
	  "objects", "outside" },
	{ "not a number", "[defaults]\nclients = ten\n", 2, "defaults",
	  "clients", "\"ten\" is not a number" },
	{ "number with junk", "[domain lab]\nusers = 0\nxrcds = 12abc\n", 3,
	  "domain lab", "xrcds", "is not a number" },
	{ "negative number", "[defaults]\nobjects = -1\n", 2, "defaults",
	  "objects", "is not a number" },
	{ "hexadecimal", "[defaults]\nobjects = 0x10\n", 2, "defaults",
	  "objects", "is not a number" },
	{ "out of range (clients too many)", "[defaults]\nclients = 1000001\n",
	  2, "defaults", "clients", "out of range" },
	{ "out of range (clients = 0)",
	  "[domain lab]\nusers = 0\nclients = 0\n", 3, "domain lab", "clients",
	  "out of range" },
	{ "out of range (objects)", "[defaults]\nobjects = 16777217\n", 2,
	  "defaults", "objects", "out of range" },
	{ "out of range (xrcds)", "[defaults]\nxrcds = 1048577\n", 2,
	  "defaults", "xrcds", "out of range" },
	{ "overflowing number", "[defaults]\ndm_bytes = 99999999999999999999\n",
	  2, "defaults", "dm_bytes", NULL },
	{ "overflowing suffix", "[defaults]\ndm_bytes = 17179869184G\n", 2,
	  "defaults", "dm_bytes", NULL },
	{ "bad suffix KB", "[defaults]\ndm_bytes = 4KB\n", 2, "defaults",
	  "dm_bytes", "suffixes" },
	{ "bad suffix T", "[domain lab]\nusers = 0\ndm_bytes = 4T\n", 3,
	  "domain lab", "dm_bytes", "suffixes" },
	{ "lower-case suffix", "[defaults]\ndm_bytes = 4k\n", 2, "defaults",
	  "dm_bytes", "is not a number" },
	{ "suffix on a count", "[defaults]\nxrcds = 4K\n", 2, "defaults",
	  "xrcds", "is not a number" },
	{ "duplicate key", "[defaults]\nxrcds = 1\nobjects = 2\nxrcds = 3\n", 4,
	  "defaults", "xrcds", "twice" },
	{ "duplicate key in a domain",
	  "[domain lab]\nusers = 0\nusers = 65534\n", 3, "domain lab", "users",
	  "twice" },
	{ "duplicate [defaults]",
	  "[defaults]\nxrcds = 1\n[broker]\n[defaults]\nobjects = 2\n", 4, NULL,
	  NULL, "[defaults] is given twice" },
	{ "duplicate [broker]", "[broker]\n[soft]\n[broker]\n", 3, NULL, NULL,
	  "[broker] is given twice" },
	{ "duplicate [soft]", "[soft]\n\n[soft]\n", 3, NULL, NULL,
	  "[soft] is given twice" },
	{ "duplicate domain",
	  "[domain lab]\nusers = 0\n[domain lab2]\nusers = 0\n"
	  "[domain lab]\nusers = 0\n",
	  5, NULL, NULL, "defined twice" },
	{ "invalid domain name", "[domain bad/name]\nusers = 0\n", 1, NULL,
	  NULL, "domain names" },
	{ "reserved prefix uid-",
	  "[defaults]\n[domain uid-1000]\nusers = 1000\n", 2, NULL, NULL,
	  "uid-" },
	{ "reserved prefix private-", "[domain private-7]\nusers = 0\n", 1,
	  NULL, NULL, "private-" },
	{ "empty domain name", "[domain ]\nusers = 0\n", 1, NULL, NULL,
	  "domain names" },
	{ "domain name of 48 characters",
	  "[domain " LONG_NAME_48 "]\nusers = 0\n", 1, NULL, NULL,
	  "domain names" },
	{ "unknown user", "[domain lab]\nusers = 0, no_such_user_rdmab\n", 2,
	  "domain lab", "users", "no user \"no_such_user_rdmab\"" },
	{ "uid out of range", "[domain lab]\nusers = 4294967295\n", 2,
	  "domain lab", "users", "no user" },
	{ "unknown group", "[domain lab]\ngroups = no_such_group_rdmab\n", 2,
	  "domain lab", "groups", "no group \"no_such_group_rdmab\"" },
	{ "domain with no members",
	  "[defaults]\nobjects = 1\n[domain lab]\ndm_bytes = 4K\n"
	  "[domain other]\nusers = 0\n",
	  3, "domain lab", "users", "no users, no groups and no cgroups" },
	/* Cgroups. */
	{ "reserved prefix cgroup-", "[domain cgroup-0-1]\nusers = 0\n", 1,
	  NULL, NULL, "cgroup-" },
	{ "cgroups: a relative path matches nothing",
	  "[domain pod]\ncgroups = kubepods/*\n", 2, "domain pod", "cgroups",
	  "\"kubepods/*\": it matches no cgroup" },
	{ "cgroups: an unclosed class", "[domain pod]\ncgroups = /a/[bc\n", 2,
	  "domain pod", "cgroups", "not closed" },
	{ "cgroups: a range backwards", "[domain pod]\ncgroups = /a/[z-a]\n", 2,
	  "domain pod", "cgroups", "backwards" },
	{ "cgroups: a lone backslash", "[domain pod]\ncgroups = /a\\\n", 2,
	  "domain pod", "cgroups", "lone" },
	{ "cgroups: an empty entry", "[domain pod]\ncgroups = /a, ,/b\n", 2,
	  "domain pod", "cgroups", "empty entry" },
	{ "cgroups: nine patterns",
	  "[domain pod]\ncgroups = /1,/2,/3,/4,/5,/6,/7,/8,/9\n", 2,
	  "domain pod", "cgroups", "more than 8" },
	{ "per neither uid nor cgroup", "[defaults]\nper = pod\n", 2,
	  "defaults", "per", "neither uid nor cgroup" },
	{ "cgroup_depth 0", "[defaults]\ncgroup_depth = 0\n", 2, "defaults",
	  "cgroup_depth", "out of range" },
	{ "cgroup_pattern relative", "[defaults]\ncgroup_pattern = pod*\n", 2,
	  "defaults", "cgroup_pattern", "matches no cgroup" },
	{ "unknown key in [defaults] names per", "[defaults]\nperr = uid\n", 2,
	  "defaults", "perr", "per, cgroup_depth, cgroup_pattern" },
	{ "empty member list", "[domain lab]\nusers = , ,\n", 2, "domain lab",
	  "users", "empty" },
	{ "empty value", "[defaults]\nobjects =\n", 2, "defaults", "objects",
	  "empty value" },
	{ "[soft] max_dm_size not a multiple of 4096",
	  "[soft]\nmax_dm_size = 5000\n", 2, "soft", "max_dm_size",
	  "multiple of 4096" },
	{ "[soft] max_dm_size below a page", "[soft]\nmax_dm_size = 1K\n", 2,
	  "soft", "max_dm_size", "out of range" },
	{ "[soft] max_dm_size above 64M", "[soft]\nmax_dm_size = 128M\n", 2,
	  "soft", "max_dm_size", "out of range" },
	{ "[soft] devices = 0", "[soft]\ndevices = 0\n", 2, "soft", "devices",
	  "out of range" },
	{ "[soft] devices above 8", "[soft]\ndevices = 9\n", 2, "soft",
	  "devices", "out of range" },
	{ "unknown key in [soft] names the known ones", "[soft]\ndevice = 2\n",
	  2, "soft", "device", "max_dm_size, devices" },
	{ "unknown admin_group",
	  "[broker]\nadmin_group = no_such_group_rdmab\n", 2, "broker",
	  "admin_group", "no group" },
	{ "unknown key in [broker] names the known ones",
	  "[broker]\nconnections = 3\n", 2, "broker", "connections",
	  "connections_per_uid, admin_reserve, hello_timeout, queued_fds" },
	{ "dm_bytes percent above 100", "[defaults]\ndm_bytes = 101%\n", 2,
	  "defaults", "dm_bytes", "out of range 0..100" },
	{ "dm_bytes percent with junk", "[defaults]\ndm_bytes = 1K%\n", 2,
	  "defaults", "dm_bytes", "is not a number" },
	{ "dm_bytes bare percent sign", "[defaults]\ndm_bytes = %\n", 2,
	  "defaults", "dm_bytes", "is not a percent" },
	{ "dm_member_share in bytes",
	  "[domain lab]\nusers = 0\ndm_member_share = 4K\n", 3, "domain lab",
	  "dm_member_share", "is not a percent" },
	{ "dm_member_share = 0%", "[defaults]\ndm_member_share = 0%\n", 2,
	  "defaults", "dm_member_share", "out of range 1..100" },
	{ "dm_admin_reserve not an amount",
	  "[broker]\ndm_admin_reserve = half\n", 2, "broker",
	  "dm_admin_reserve", "is not a number" },
	{ "dm_admin_reserve percent above 100",
	  "[broker]\ndm_admin_reserve = 200%\n", 2, "broker",
	  "dm_admin_reserve", "out of range" },
	{ "dm_persistent_per_uid too large",
	  "[broker]\ndm_persistent_per_uid = 1048577\n", 2, "broker",
	  "dm_persistent_per_uid", "out of range" },
	{ "dm_persistent_bytes_per_uid with junk",
	  "[broker]\ndm_persistent_bytes_per_uid = 4KB\n", 2, "broker",
	  "dm_persistent_bytes_per_uid", "suffixes" },
	{ "unknown key in [broker] names the DM keys",
	  "[broker]\ndm_reserve = 3\n", 2, "broker", "dm_reserve",
	  "dm_admin_reserve, dm_persistent_per_uid, "
	  "dm_persistent_bytes_per_uid" },
	{ "unknown key in [defaults] names dm_member_share",
	  "[defaults]\ndm_share = 3%\n", 2, "defaults", "dm_share",
	  "dm_bytes, dm_member_share" },
	{ "connections_per_uid = 0", "[broker]\nconnections_per_uid = 0\n", 2,
	  "broker", "connections_per_uid", "out of range" },
	{ "admin_reserve not a number", "[broker]\nadmin_reserve = some\n", 2,
	  "broker", "admin_reserve", "is not a number" },
	{ "queued_fds = 0", "[broker]\nqueued_fds = 0\n", 2, "broker",
	  "queued_fds", "out of range" },
	{ "queued_fds_per_uid too large",
	  "[broker]\nqueued_fds_per_uid = 1048577\n", 2, "broker",
	  "queued_fds_per_uid", "out of range" },
	{ "private_contexts_per_uid negative",
	  "[broker]\nprivate_contexts_per_uid = -1\n", 2, "broker",
	  "private_contexts_per_uid", "is not a number" },
	{ "hello_timeout with a unit it does not know",
	  "[broker]\nhello_timeout = 5m\n", 2, "broker", "hello_timeout",
	  "is not a duration" },
	{ "hello_timeout below 10 ms", "[broker]\nhello_timeout = 9ms\n", 2,
	  "broker", "hello_timeout", "out of range 10ms..3600s" },
	{ "hello_timeout of 0 s", "[broker]\nhello_timeout = 0\n", 2, "broker",
	  "hello_timeout", "out of range" },
	{ "unread_timeout above an hour", "[broker]\nunread_timeout = 3601s\n",
	  2, "broker", "unread_timeout", "out of range" },
	{ "unread_timeout overflowing",
	  "[broker]\nunread_timeout = 99999999999999999999\n", 2, "broker",
	  "unread_timeout", "is not a duration" },
	{ "duration with a space", "[broker]\nunread_timeout = 5 s\n", 2,
	  "broker", "unread_timeout", "is not a duration" },
	{ "line longer than the parser's limit",
	  "[defaults]\n# " X50 X50 X50 X50 X50 "\nobjects = 1\n", 2, NULL, NULL,
	  "longer" },
	/* Two errors: the first one is the one to report. */
	{ "syntax error before an unknown key",
	  "[defaults]\nnot a pair\nfoo = 1\n", 2, NULL, NULL, "syntax error" },
	{ "syntax error before a bad section",
	  "[defaults]\nobjects = 1\nnot a pair\n[bogus]\n", 3, NULL, NULL,
	  "syntax error" },
	/* [xrcd NAME] */
	{ "XRCD name with a slash", "[xrcd a/b]\ndomains = uid-0\n", 1, NULL,
	  NULL, "\"a/b\": byte 2 is a '/'; a name is 1 to 64 bytes" },
	{ "XRCD name ..", "[xrcd ..]\ndomains = uid-0\n", 1, NULL, NULL,
	  "XRCD name \"..\"" },
	{ "XRCD name of 65 bytes",
	  "[xrcd " X50 "123456789012345]\ndomains = uid-0\n", 1, NULL, NULL,
	  "longer than 64 bytes" },
	/* Shown escaped, never raw. */
	{ "XRCD name with a C1 control (CSI)",
	  "[xrcd a\xc2\x9b]\ndomains = uid-0\n", 1, NULL, NULL,
	  "\"a\\xc2\\x9b\": byte 2 starts U+009B, a control character" },
	{ "XRCD name with a bidi override",
	  "[xrcd a\xe2\x80\xae"
	  "b]\ndomains = uid-0\n",
	  1, NULL, NULL, "byte 2 starts U+202E, a control character" },
	{ "XRCD name with a bidi isolate",
	  "[xrcd \xe2\x81\xa6"
	  "a]\ndomains = uid-0\n",
	  1, NULL, NULL, "byte 1 starts U+2066, a control character" },
	{ "XRCD name with a zero width space",
	  "[xrcd a\xe2\x80\x8b"
	  "b]\ndomains = uid-0\n",
	  1, NULL, NULL,
	  "\"a\\xe2\\x80\\x8bb\": byte 2 starts U+200B, an invisible "
	  "formatting character" },
	{ "XRCD name that is not UTF-8",
	  "[xrcd a\xff"
	  "b]\ndomains = uid-0\n",
	  1, NULL, NULL,
	  "\"a\\xffb\": byte 2 does not start a well-formed UTF-8" },
	{ "XRCD name with an overlong '/'",
	  "[xrcd a\xc0\xaf]\ndomains = uid-0\n", 1, NULL, NULL,
	  "byte 2 does not start a well-formed UTF-8" },
	{ "unknown key in [xrcd]", "[domain a]\nusers = 0\n[xrcd s]\nfoo = a\n",
	  4, "xrcd s", "foo", "unknown key (known: domains)" },
	{ "XRCD listing an unknown domain", "[xrcd s]\ndomains = nope\n", 1,
	  "xrcd s", "domains", "\"nope\" is neither" },
	{ "XRCD without domains", "[xrcd s]\n", 1, "xrcd s", "domains",
	  "lists no domains" },
	{ "XRCD declared twice",
	  "[xrcd s]\ndomains = uid-0\n[xrcd s]\ndomains = uid-0\n", 3, NULL,
	  NULL, "declared twice" },
	{ "XRCD listing a domain twice", "[xrcd s]\ndomains = uid-0, uid-0\n",
	  2, "xrcd s", "domains", "listed twice" },
	/* The known keys and sections, whole and in the order
	 * rdmabroker.conf(5) gives them, the families' among the rest. */
	{ "unknown key in [broker]: the whole list", "[broker]\nfoo = 1\n", 2,
	  "broker", "foo",
	  "unknown key (known: admin_group, connections_per_uid, "
	  "admin_reserve, hello_timeout, queued_fds, queued_fds_per_uid, "
	  "private_contexts_per_uid, fd_store_per_uid, unread_timeout, "
	  "dm_revoke_grace, "
	  "dm_admin_reserve, dm_persistent_per_uid, "
	  "dm_persistent_bytes_per_uid)" },
	{ "unknown key in [defaults]: the whole list", "[defaults]\nfoo = 1\n",
	  2, "defaults", "foo",
	  "unknown key (known: dm_bytes, dm_member_share, xrcds, rss_tables, "
	  "objects, clients, auto_rekey_unaccounted, per, cgroup_depth, "
	  "cgroup_pattern)" },
	{ "unknown key in a domain: the whole list",
	  "[domain lab]\nusers = 0\nfoo = 1\n", 3, "domain lab", "foo",
	  "unknown key (known: users, groups, cgroups, rss_allow, dm_bytes, "
	  "dm_member_share, xrcds, rss_tables, objects, clients, "
	  "auto_rekey_unaccounted)" },
	{ "unknown key in [soft]: the whole list", "[soft]\nfoo = 1\n", 2,
	  "soft", "foo",
	  "unknown key (known: max_dm_size, devices, intent_window, "
	  "internal_objects_per_import, internal_objects_per_qp)" },
	{ "unknown section: the whole list", "[bogus]\n", 1, NULL, NULL,
	  "unknown section [bogus] (known: [broker], [defaults], [soft], "
	  "[metrics], [domain NAME], [xrcd NAME])" },
	/* rss_allow may repeat in a domain, not elsewhere: in [defaults] it
	 * is unknown, even given twice. */
	{ "rss_allow twice in [defaults]",
	  "[defaults]\nrss_allow = ipv4 10.0.0.0/8\n"
	  "rss_allow = ipv4 10.0.0.0/8\n",
	  2, "defaults", "rss_allow", "unknown key" },
	{ "a domain's quota key given twice",
	  "[domain lab]\nusers = 0\nxrcds = 1\nxrcds = 2\n", 4, "domain lab",
	  "xrcds", "given twice in this section" },
	{ "rss_allow over its bound", "[domain lab]\nusers = 0\n" RSS33, 35,
	  "domain lab", "rss_allow", "more than 32 rules in one domain" },
};

#define N_BAD (sizeof(bad) / sizeof(bad[0]))

START_TEST(test_bad_file)
{
	const struct bad_case *b = &bad[_i];
	char *path = write_conf(b->text);
	char err[512], prefix[PATH_MAX + 128];
	struct config cfg, before;
	int ret;

	memset(&cfg, 0xa5, sizeof(cfg));
	memcpy(&before, &cfg, sizeof(cfg));
	memset(err, 0, sizeof(err));
	ret = config_load(path, true, &cfg, err, sizeof(err));
	ck_assert_msg(ret == -EINVAL,
		      "%s: config_load returned %d (%s), expected -EINVAL; "
		      "message: \"%s\"",
		      b->what, ret, ret < 0 ? strerror(-ret) : "accepted", err);
	ck_assert_msg(memcmp(&cfg, &before, sizeof(cfg)) == 0,
		      "%s: the configuration was written on failure", b->what);
	if (b->key && b->section)
		snprintf(prefix, sizeof(prefix),
			 "%s:%u: [%s] key \"%s\": ", path, b->line, b->section,
			 b->key);
	else if (b->key)
		snprintf(prefix, sizeof(prefix), "%s:%u: key \"%s\": ", path,
			 b->line, b->key);
	else
		snprintf(prefix, sizeof(prefix), "%s:%u: ", path, b->line);
	ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0,
		      "%s: message \"%s\" does not start with \"%s\"", b->what,
		      err, prefix);
	if (b->reason)
		ck_assert_msg(strstr(err + strlen(prefix), b->reason),
			      "%s: message \"%s\" does not say \"%s\"", b->what,
			      err, b->reason);
	ck_assert_msg(!strchr(err, '\n'), "%s: message \"%s\" has a newline",
		      b->what, err);
	/* The same with must_exist false: the file exists, so no
	 * difference. */
	ret = config_load(path, false, &cfg, err, sizeof(err));
	ck_assert_int_eq(ret, -EINVAL);
	ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0,
		      "%s (must_exist false): \"%s\"", b->what, err);
	free(path);
}
END_TEST

/* A message longer than the buffer is cut, never overflows it. */
START_TEST(test_bad_file_small_buffer)
{
	char *path = write_conf("[defaults]\nclients = ten\n");
	char buf[32];
	struct config cfg;

	memset(buf, 'Z', sizeof(buf));
	ck_assert_int_eq(config_load(path, true, &cfg, buf, 20), -EINVAL);
	ck_assert_int_eq(buf[19], '\0');
	for (size_t i = 20; i < sizeof(buf); i++)
		ck_assert_msg(buf[i] == 'Z', "byte %zu past the buffer written",
			      i);
	ck_assert_int_eq(strncmp(buf, path, 19), 0);
	free(path);
}
END_TEST

/* --- good files ----------------------------------------------------------- */

static void assert_builtin_defaults(const struct config *c)
{
	/* A quarter of each device's memory, half of it per member. */
	ck_assert_uint_eq(dm_conf_quota(c, NULL)->dm_bytes, 0);
	ck_assert_uint_eq(dm_conf_quota(c, NULL)->dm_pct, 25);
	ck_assert_uint_eq(dm_conf_quota(c, NULL)->dm_member_share, 50);
	ck_assert_uint_eq(xrcd_conf_quota(c, NULL)->xrcds, 64);
	ck_assert_uint_eq(rss_conf_domain(c, NULL)->rss_tables, 16);
	ck_assert_uint_eq(c->defaults.objects, 65536);
	ck_assert_uint_eq(c->defaults.clients, 256);
	ck_assert_uint_eq(dm_conf(c)->soft_max_dm_size, 256 * 1024);
	ck_assert(!c->has_admin_group);
	ck_assert_uint_eq(c->n_domains, 0);
	ck_assert_uint_eq(c->limits.connections_per_uid, 64);
	ck_assert_uint_eq(c->limits.admin_reserve, 16);
	ck_assert_uint_eq(c->limits.hello_timeout_ms, 5000);
	ck_assert_uint_eq(c->limits.queued_fds, 64);
	ck_assert_uint_eq(c->limits.queued_fds_per_uid, 256);
	ck_assert_uint_eq(c->limits.private_contexts_per_uid, 16);
	ck_assert_uint_eq(c->limits.unread_timeout_ms, 30000);
	ck_assert_uint_eq(dm_conf(c)->dm_admin_reserve, 0);
	ck_assert_uint_eq(dm_conf(c)->dm_admin_reserve_pct, 10);
	ck_assert_uint_eq(dm_conf(c)->dm_persistent_per_uid, 16);
	ck_assert_uint_eq(dm_conf(c)->dm_persistent_bytes_per_uid, 0);
	ck_assert_uint_eq(dm_conf(c)->dm_persistent_bytes_pct, 25);
}

/* The device-memory keys: bytes or a percent of each device's memory,
 * and what a percent makes of a device (whole pages, rounded down). */
START_TEST(test_dm_keys)
{
	char *path = write_conf("[broker]\n"
				"dm_admin_reserve = 64K\n"
				"dm_persistent_per_uid = 0\n"
				"dm_persistent_bytes_per_uid = 100%\n"
				"[defaults]\n"
				"dm_bytes = 10%\n"
				"dm_member_share = 100%\n"
				"[domain lab]\n"
				"users = 0\n"
				"dm_bytes = 1M\n"
				"[domain team]\n"
				"users = 0\n"
				"dm_member_share = 1%\n");
	char *path2 = write_conf("[broker]\ndm_admin_reserve = 0%\n"
				 "[domain lab]\nusers = 0\ndm_bytes = 0\n");
	const struct config_domain *d;
	char err[512] = "";
	struct config c;

	ck_assert_msg(config_load(path, true, &c, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_uint_eq(dm_conf(&c)->dm_admin_reserve, 64 * 1024);
	ck_assert_uint_eq(dm_conf(&c)->dm_admin_reserve_pct, 0);
	ck_assert_uint_eq(dm_conf(&c)->dm_persistent_per_uid, 0);
	ck_assert_uint_eq(dm_conf(&c)->dm_persistent_bytes_pct, 100);
	ck_assert_uint_eq(dm_conf_quota(&c, NULL)->dm_pct, 10);
	ck_assert_uint_eq(dm_conf_quota(&c, NULL)->dm_member_share, 100);
	d = config_find_domain(&c, "lab");
	ck_assert_ptr_nonnull(d);
	/* Bytes set in the domain: no percent from [defaults]. */
	ck_assert_uint_eq(dm_conf_quota(&c, d)->dm_bytes, 1 << 20);
	ck_assert_uint_eq(dm_conf_quota(&c, d)->dm_pct, 0);
	ck_assert_uint_eq(dm_conf_quota(&c, d)->dm_member_share, 100);
	d = config_find_domain(&c, "team");
	ck_assert_ptr_nonnull(d);
	ck_assert_uint_eq(dm_conf_quota(&c, d)->dm_pct, 10);
	ck_assert_uint_eq(dm_conf_quota(&c, d)->dm_member_share, 1);
	config_free(&c);
	ck_assert_msg(config_load(path2, true, &c, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_uint_eq(dm_conf(&c)->dm_admin_reserve, 0);
	ck_assert_uint_eq(dm_conf(&c)->dm_admin_reserve_pct, 0);
	ck_assert_uint_eq(
		dm_conf_quota(&c, config_find_domain(&c, "lab"))->dm_bytes, 0);
	ck_assert_uint_eq(
		dm_conf_quota(&c, config_find_domain(&c, "lab"))->dm_pct, 0);
	/* Not set: the defaults. */
	ck_assert_uint_eq(dm_conf(&c)->dm_persistent_per_uid, 16);
	ck_assert_uint_eq(dm_conf(&c)->dm_persistent_bytes_pct, 25);
	config_free(&c);
	free(path);
	free(path2);

	/* 25% of 256 KiB; 10% of 256 KiB is 26214.4, 6 whole pages. */
	ck_assert_uint_eq(dm_conf_bytes(0, 25, 256 * 1024), 64 * 1024);
	ck_assert_uint_eq(dm_conf_bytes(0, 10, 256 * 1024), 6 * 4096);
	ck_assert_uint_eq(dm_conf_bytes(0, 100, 16384), 16384);
	ck_assert_uint_eq(dm_conf_bytes(0, 1, 16384), 0);
	/* Bytes stay bytes, whatever the device. */
	ck_assert_uint_eq(dm_conf_bytes(5000, 0, 16384), 5000);
	/* The largest device does not overflow. */
	ck_assert_uint_eq(dm_conf_bytes(0, 100, UINT64_MAX),
			  UINT64_MAX / 100 * 100 / 4096 * 4096);
}
END_TEST

/* Every [broker] limit, durations in each of their forms. */
START_TEST(test_broker_limits)
{
	char *path = write_conf("[broker]\n"
				"connections_per_uid = 3\n"
				"admin_reserve = 0\n"
				"hello_timeout = 250ms\n"
				"queued_fds = 1\n"
				"queued_fds_per_uid = 1048576\n"
				"private_contexts_per_uid = 0\n"
				"unread_timeout = 2s\n");
	char *path2 = write_conf("[broker]\nhello_timeout = 7\n"
				 "unread_timeout = 3600s\n");
	char err[512] = "";
	struct config c;

	ck_assert_msg(config_load(path, true, &c, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_uint_eq(c.limits.connections_per_uid, 3);
	ck_assert_uint_eq(c.limits.admin_reserve, 0);
	ck_assert_uint_eq(c.limits.hello_timeout_ms, 250);
	ck_assert_uint_eq(c.limits.queued_fds, 1);
	ck_assert_uint_eq(c.limits.queued_fds_per_uid, 1 << 20);
	ck_assert_uint_eq(c.limits.private_contexts_per_uid, 0);
	ck_assert_uint_eq(c.limits.unread_timeout_ms, 2000);
	config_free(&c);
	ck_assert_msg(config_load(path2, true, &c, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_uint_eq(c.limits.hello_timeout_ms, 7000);
	ck_assert_uint_eq(c.limits.unread_timeout_ms, 3600 * 1000);
	/* What the file does not set keeps its default. */
	ck_assert_uint_eq(c.limits.connections_per_uid, 64);
	ck_assert_uint_eq(c.limits.queued_fds, 64);
	config_free(&c);
	free(path);
	free(path2);
}
END_TEST

START_TEST(test_config_init)
{
	struct config c;

	memset(&c, 0x5a, sizeof(c));
	config_init(&c);
	assert_builtin_defaults(&c);
	ck_assert_ptr_null(c.domains);
}
END_TEST

/* Cgroups (issue 26): per, cgroup_depth, cgroup_pattern, cgroups =. */
START_TEST(test_config_keys)
{
	char *path = write_conf("[defaults]\n"
				"per = cgroup\n"
				"cgroup_depth = 3\n"
				"cgroup_pattern = */kubepods*/*pod*\n"
				"[domain pods]\n"
				"cgroups = /kubepods/a b , /kubepods/c*\n"
				"[domain lab]\n"
				"users = 0\n"
				"cgroups = /lab\n");
	const struct config_domain *d;
	char err[512] = "";
	struct config c;

	ck_assert_msg(config_load(path, true, &c, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert(c.per_cgroup);
	ck_assert_uint_eq(c.cgroup_depth, 3);
	ck_assert_str_eq(c.cgroup_pattern, "*/kubepods*/*pod*");
	d = config_find_domain(&c, "pods");
	ck_assert_ptr_nonnull(d);
	/* A domain of cgroups alone needs no users. */
	ck_assert_uint_eq(d->n_users + d->n_groups, 0);
	ck_assert_uint_eq(d->n_cgroups, 2);
	/* Commas separate; the spaces inside a glob stay. */
	ck_assert_str_eq(d->cgroups[0], "/kubepods/a b");
	ck_assert_str_eq(d->cgroups[1], "/kubepods/c*");
	d = config_find_domain(&c, "lab");
	ck_assert_uint_eq(d->n_users, 1);
	ck_assert_uint_eq(d->n_cgroups, 1);
	config_free(&c);
	unlink(path);
	free(path);

	/* The default: per uid. */
	path = write_conf("[defaults]\nper = uid\n");
	ck_assert_int_eq(config_load(path, true, &c, err, sizeof(err)), 0);
	ck_assert(!c.per_cgroup);
	config_free(&c);
	unlink(path);
	free(path);
}
END_TEST

static const char good_text[] = "# rdmabroker.conf for the test\n"  /* 1 */
				"; both comment styles\n"	    /* 2 */
				"[domain lab]\n"		    /* 3 */
				"users = root, nobody 4242\n"	    /* 4 */
				"dm_bytes = 128K\n"		    /* 5 */
				"\n"				    /* 6 */
				"[broker]\n"			    /* 7 */
				"admin_group = nogroup\n"	    /* 8 */
				"  [defaults]  \n"		    /* 9 */
				"dm_bytes = 1M\n"		    /* 10 */
				"xrcds = 7\n"			    /* 11 */
				"rss_tables = 3\n"		    /* 12 */
				"objects = 1000 ; inline comment\n" /* 13 */
				"clients = 9\n"			    /* 14 */
				"[soft]\n"			    /* 15 */
				"max_dm_size = 128K\n"		    /* 16 */
				"[domain team.a_b-c]\n"		    /* 17 */
				"groups = nogroup,0\n"		    /* 18 */
				"clients = 2\n"			    /* 19 */
				"objects = 0\n"			    /* 20 */
				"xrcds = 0\n"			    /* 21 */
				"[domain " LONG_NAME_47 "]\n"	    /* 22 */
				"users = 65534\n"		    /* 23 */
				"groups = 4242\n"		    /* 24 */
				"dm_bytes = 2G\n";		    /* 25 */

START_TEST(test_good_file)
{
	char *path = write_conf(good_text);
	const struct config_domain *lab, *team, *longd;
	char err[512] = "";
	struct config c;
	int ret;

	ret = config_load(path, true, &c, err, sizeof(err));
	ck_assert_msg(ret == 0, "config_load: %d: %s", ret, err);
	ck_assert(c.has_admin_group);
	ck_assert_uint_eq(c.admin_gid, 65534);
	ck_assert_uint_eq(dm_conf_quota(&c, NULL)->dm_bytes, 1024 * 1024);
	ck_assert_uint_eq(xrcd_conf_quota(&c, NULL)->xrcds, 7);
	ck_assert_uint_eq(rss_conf_domain(&c, NULL)->rss_tables, 3);
	ck_assert_uint_eq(c.defaults.objects, 1000);
	ck_assert_uint_eq(c.defaults.clients, 9);
	ck_assert_uint_eq(dm_conf(&c)->soft_max_dm_size, 128 * 1024);
	ck_assert_uint_eq(c.n_domains, 3);

	/* File order is kept: it decides which domain a client joins. */
	ck_assert_str_eq(c.domains[0].name, "lab");
	ck_assert_str_eq(c.domains[1].name, "team.a_b-c");
	ck_assert_str_eq(c.domains[2].name, LONG_NAME_47);

	lab = config_find_domain(&c, "lab");
	ck_assert_ptr_eq(lab, &c.domains[0]);
	ck_assert_uint_eq(lab->line, 3);
	ck_assert_uint_eq(lab->n_users, 3);
	ck_assert_uint_eq(lab->users[0], 0);
	ck_assert_uint_eq(lab->users[1], 65534);
	ck_assert_uint_eq(lab->users[2], 4242);
	ck_assert_uint_eq(lab->n_groups, 0);
	/* Its own key, and [defaults] (which comes later) for the rest. */
	ck_assert_uint_eq(dm_conf_quota(&c, lab)->dm_bytes, 128 * 1024);
	ck_assert_uint_eq(xrcd_conf_quota(&c, lab)->xrcds, 7);
	ck_assert_uint_eq(rss_conf_domain(&c, lab)->rss_tables, 3);
	ck_assert_uint_eq(lab->quota.objects, 1000);
	ck_assert_uint_eq(lab->quota.clients, 9);

	team = config_find_domain(&c, "team.a_b-c");
	ck_assert_ptr_nonnull(team);
	ck_assert_uint_eq(team->line, 17);
	ck_assert_uint_eq(team->n_users, 0);
	ck_assert_uint_eq(team->n_groups, 2);
	ck_assert_uint_eq(team->groups[0], 65534);
	ck_assert_uint_eq(team->groups[1], 0);
	ck_assert_uint_eq(team->quota.clients, 2);
	/* 0 is a quota, not "unset". */
	ck_assert_uint_eq(team->quota.objects, 0);
	ck_assert_uint_eq(xrcd_conf_quota(&c, team)->xrcds, 0);
	ck_assert_uint_eq(dm_conf_quota(&c, team)->dm_bytes, 1024 * 1024);
	ck_assert_uint_eq(rss_conf_domain(&c, team)->rss_tables, 3);

	longd = config_find_domain(&c, LONG_NAME_47);
	ck_assert_ptr_nonnull(longd);
	ck_assert_uint_eq(longd->n_users, 1);
	ck_assert_uint_eq(longd->users[0], 65534);
	ck_assert_uint_eq(longd->n_groups, 1);
	ck_assert_uint_eq(longd->groups[0], 4242);
	ck_assert_uint_eq(dm_conf_quota(&c, longd)->dm_bytes, 2ULL << 30);

	ck_assert_ptr_null(config_find_domain(&c, "nope"));
	ck_assert_ptr_null(config_find_domain(&c, "la"));
	ck_assert_ptr_null(config_find_domain(&c, ""));
	config_free(&c);
	ck_assert_ptr_null(c.domains);
	ck_assert_uint_eq(c.n_domains, 0);
	free(path);
}
END_TEST

START_TEST(test_xrcd_sections)
{
	char *path = write_conf("[domain a]\nusers = 0\n"
				"[xrcd shared.one]\ndomains = a, uid-1000\n"
				"[xrcd x y]\ndomains = uid-7\n");
	const struct config_xrcd *x;
	char err[512] = "";
	struct config c;
	int ret;

	ret = config_load(path, true, &c, err, sizeof(err));
	ck_assert_msg(ret == 0, "config_load: %d: %s", ret, err);
	ck_assert_uint_eq(xrcd_conf(&c)->n_xrcds, 2);
	x = xrcd_conf_find(&c, "shared.one");
	ck_assert_ptr_nonnull(x);
	ck_assert_uint_eq(x->line, 3);
	ck_assert_uint_eq(x->n_domains, 2);
	ck_assert(xrcd_conf_lists(x, "a"));
	ck_assert(xrcd_conf_lists(x, "uid-1000"));
	ck_assert(!xrcd_conf_lists(x, "uid-7"));
	ck_assert_ptr_nonnull(xrcd_conf_find(&c, "x y"));
	ck_assert_ptr_null(xrcd_conf_find(&c, "shared"));
	ck_assert(xrcd_conf_valid_name("ok", 2));
	ck_assert(!xrcd_conf_valid_name("", 0));
	ck_assert(!xrcd_conf_valid_name(".", 1));
	ck_assert(!xrcd_conf_valid_name("a\0b", 3));
	ck_assert(!xrcd_conf_valid_name("a\tb", 3));
	/* Printable UTF-8 of any script is a name. */
	ck_assert(xrcd_conf_valid_name("caf\xc3\xa9 \xe5\x90\x8d", 9));
	ck_assert(!xrcd_conf_valid_name("\xc2\x85", 2));
	ck_assert(!xrcd_conf_valid_name("a\xe2\x80\xa8", 4));
	ck_assert(!xrcd_conf_valid_name("\xef\xbb\xbf"
					"a",
					4));
	ck_assert(!xrcd_conf_valid_name("\xed\xa0\x80", 3));
	config_free(&c);
	ck_assert_ptr_null(c.family[FAMILY_XRCD]);
	free(path);
}
END_TEST

/* [xrcd NAME] up to its bound, 256 (the declarations grow as they come):
 * each found by name; one more is refused at its line. */
START_TEST(test_xrcd_bound)
{
	size_t cap = 64 * 1024, len = 0;
	char *text = malloc(cap), *path, err[512] = "";
	struct config c;

	ck_assert_ptr_nonnull(text);
	for (int i = 0; i < 257; i++)
		len += (size_t)snprintf(text + len, cap - len,
					"[xrcd x%d]\ndomains = uid-0\n", i);
	/* The first 256 only. */
	*strstr(text, "[xrcd x256]") = '\0';
	path = write_conf(text);
	ck_assert_msg(config_load(path, true, &c, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_uint_eq(xrcd_conf(&c)->n_xrcds, 256);
	for (int i = 0; i < 256; i++) {
		char name[16];
		const struct config_xrcd *x;

		snprintf(name, sizeof(name), "x%d", i);
		x = xrcd_conf_find(&c, name);
		ck_assert_ptr_nonnull(x);
		ck_assert_uint_eq(x->line, 2 * (unsigned int)i + 1);
		ck_assert(xrcd_conf_lists(x, "uid-0"));
	}
	config_free(&c);
	free(path);
	text[strlen(text)] = '[';
	path = write_conf(text);
	ck_assert_int_eq(config_load(path, true, &c, err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, ":513: more than 256 XRCDs"), "%s", err);
	free(path);
	free(text);
}
END_TEST

/* --check-config: a family's own warning and its count in the summary,
 * word for word. */
START_TEST(test_check_output)
{
	char *path = write_conf("[domain a]\nusers = 0\n"
				"[xrcd s]\ndomains = a, uid-3999999\n"
				"[xrcd t]\ndomains = uid-0\n");
	char *out = NULL, *want;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(config_check(path, true, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_ge(
		asprintf(&want,
			 "%s:3: warning: [xrcd s] domains: uid-3999999 "
			 "is the domain of a uid that has no account\n"
			 "%s: valid: 1 domain, 2 declared XRC domains, "
			 "1 warning\n",
			 path, path),
		0);
	ck_assert_str_eq(out, want);
	free(want);
	free(out);
	free(path);
}
END_TEST

/* [defaults] first or last: the domain gets the same quotas. */
START_TEST(test_defaults_anywhere)
{
	static const char *const texts[] = {
		"[defaults]\nclients = 5\nobjects = 77\n"
		"[domain d]\nusers = 0\nobjects = 3\n",
		"[domain d]\nusers = 0\nobjects = 3\n"
		"[defaults]\nclients = 5\nobjects = 77\n",
		"[domain d]\nusers = 0\n[defaults]\nclients = 5\n"
		"[domain e]\nusers = 0\nobjects = 3\n"
		"[soft]\nmax_dm_size = 8K\n",
	};

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		char *path = write_conf(texts[i]);
		const struct config_domain *d;
		char err[512] = "";
		struct config c;
		int ret = config_load(path, true, &c, err, sizeof(err));

		ck_assert_msg(ret == 0, "text %zu: %s", i, err);
		d = config_find_domain(&c, i == 2 ? "e" : "d");
		ck_assert_ptr_nonnull(d);
		ck_assert_uint_eq(d->quota.objects, 3);
		ck_assert_uint_eq(d->quota.clients, 5);
		ck_assert_uint_eq(xrcd_conf_quota(&c, d)->xrcds, 64);
		ck_assert_uint_eq(rss_conf_domain(&c, d)->rss_tables, 16);
		ck_assert_uint_eq(dm_conf_quota(&c, d)->dm_pct, 25);
		if (i == 2) {
			d = config_find_domain(&c, "d");
			ck_assert_ptr_nonnull(d);
			ck_assert_uint_eq(d->quota.clients, 5);
			ck_assert_uint_eq(d->quota.objects, 65536);
			ck_assert_uint_eq(dm_conf(&c)->soft_max_dm_size, 8192);
		}
		config_free(&c);
		free(path);
	}
}
END_TEST

/* Files as editors write them: CRLF line ends, a UTF-8 byte order mark,
 * no newline at the end. inih accepts all three, so config_load should;
 * a byte order mark may also be refused, as long as the message names line
 * 1, but never read as something else. */
START_TEST(test_good_file_encodings)
{
	static const char *const texts[] = {
		"[domain lab]\r\nusers = 0\r\nclients = 4\r\n[defaults]\r\n"
		"objects = 9\r\n",
		"\xef\xbb\xbf[domain lab]\nusers = 0\nclients = 4\n[defaults]\n"
		"objects = 9\n",
		"[domain lab]\nusers = 0\nclients = 4\n[defaults]\nobjects = 9",
	};
	static const char *const names[] = { "CRLF", "BOM",
					     "no final newline" };

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		char *path = write_conf(texts[i]);
		const struct config_domain *d;
		char err[512] = "";
		struct config c;
		int ret = config_load(path, true, &c, err, sizeof(err));

		if (i == 1 && ret == -EINVAL) {
			char prefix[PATH_MAX + 8];

			snprintf(prefix, sizeof(prefix), "%s:1: ", path);
			ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0,
				      "BOM refused with \"%s\"", err);
			free(path);
			continue;
		}
		ck_assert_msg(ret == 0, "%s: %d: %s", names[i], ret, err);
		ck_assert_msg(c.n_domains == 1, "%s: %zu domains", names[i],
			      c.n_domains);
		d = config_find_domain(&c, "lab");
		ck_assert_msg(d != NULL, "%s: no domain lab", names[i]);
		ck_assert_uint_eq(d->n_users, 1);
		ck_assert_uint_eq(d->users[0], 0);
		ck_assert_uint_eq(d->quota.clients, 4);
		ck_assert_uint_eq(d->quota.objects, 9);
		ck_assert_uint_eq(c.defaults.objects, 9);
		config_free(&c);
		free(path);
	}
}
END_TEST

START_TEST(test_empty_file)
{
	char *path = write_conf("# nothing but a comment\n\n");
	char err[512] = "";
	struct config c;

	ck_assert_int_eq(config_load(path, true, &c, err, sizeof(err)), 0);
	assert_builtin_defaults(&c);
	config_free(&c);
	free(path);
}
END_TEST

/* --- missing and unreadable files ----------------------------------------- */

START_TEST(test_missing_file)
{
	char *dir = tl_mkdtemp(), *path;
	char err[512] = "";
	struct config c, before;
	int ret;

	ck_assert_ptr_nonnull(dir);
	ck_assert_int_ge(asprintf(&path, "%s/absent.conf", dir), 0);

	/* The default path may be absent: the built-in defaults. */
	memset(&c, 0xa5, sizeof(c));
	ret = config_load(path, false, &c, err, sizeof(err));
	ck_assert_msg(ret == 0, "must_exist false: %d: %s", ret, err);
	assert_builtin_defaults(&c);
	config_free(&c);

	/* A path given with --config must exist. */
	memset(&c, 0xa5, sizeof(c));
	memcpy(&before, &c, sizeof(c));
	ret = config_load(path, true, &c, err, sizeof(err));
	ck_assert_int_eq(ret, -ENOENT);
	ck_assert_msg(strncmp(err, path, strlen(path)) == 0 &&
			      err[strlen(path)] == ':',
		      "message \"%s\" does not start with \"%s:\"", err, path);
	ck_assert_msg(strstr(err, strerror(ENOENT)), "message \"%s\"", err);
	/* And what to do about it. */
	ck_assert_msg(strstr(err, "without --config the daemon runs on the "
				  "built-in defaults") &&
			      strstr(err, "/examples/rdmabroker.conf"),
		      "message \"%s\"", err);
	ck_assert(memcmp(&c, &before, sizeof(c)) == 0);
	free(path);
	free(dir);
}
END_TEST

/* A directory is no configuration: refused, not read as an empty file. */
START_TEST(test_directory_as_file)
{
	char *dir = tl_mkdtemp();
	char err[512] = "";
	struct config c;
	int ret;

	ck_assert_ptr_nonnull(dir);
	ret = config_load(dir, true, &c, err, sizeof(err));
	if (ret == 0)
		config_free(&c);
	ck_assert_msg(ret < 0,
		      "config_load(%s), a directory, returned %d: the daemon "
		      "would run on the built-in defaults",
		      dir, ret);
	ck_assert_msg(strstr(err, dir), "message \"%s\" does not name %s", err,
		      dir);
	free(dir);
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc;

	tc = tcase_create("bad");
	tcase_add_loop_test(tc, test_bad_file, 0, (int)N_BAD);
	tcase_add_test(tc, test_bad_file_small_buffer);
	suite_add_tcase(s, tc);

	tc = tcase_create("good");
	tcase_add_test(tc, test_config_init);
	tcase_add_test(tc, test_broker_limits);
	tcase_add_test(tc, test_dm_keys);
	tcase_add_test(tc, test_good_file);
	tcase_add_test(tc, test_config_keys);
	tcase_add_test(tc, test_xrcd_sections);
	tcase_add_test(tc, test_check_output);
	tcase_add_test(tc, test_xrcd_bound);
	tcase_add_test(tc, test_defaults_anywhere);
	tcase_add_test(tc, test_good_file_encodings);
	tcase_add_test(tc, test_empty_file);
	suite_add_tcase(s, tc);

	tc = tcase_create("missing");
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_directory_as_file);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("config", config_suite());
}
