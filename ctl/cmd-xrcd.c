// SPDX-License-Identifier: MIT
/* rdmabrokerctl xrcd [list | show NAME | remove NAME] */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ctl/ctl.h"

static int xrcd_usage(const char *why, const char *arg)
{
	fprintf(stderr, "rdmabrokerctl: xrcd: %s%s%s\n", why, arg ? ": " : "",
		arg ? arg : "");
	return CTL_USAGE;
}

/* The @n XRCDs as an array, or with @one the one of `show` alone. */
static void xrcd_json(const struct ibc_xrcd_info *x, size_t n, bool one)
{
	if (!one)
		printf("[");
	for (size_t i = 0; i < n; i++) {
		printf("%s{\"name\":", i ? "," : "");
		json_string(stdout, x[i].name);
		printf(",\"owner_domain\":");
		json_string(stdout, x[i].owner_domain);
		printf(",\"domains\":");
		json_list(stdout,
			  x[i].persistent ? x[i].domains : x[i].owner_domain);
		printf(",\"inode\":%" PRIu64 ",\"devices\":", x[i].ino);
		json_list(stdout, x[i].devices);
		printf(",\"persistent\":%s,\"opens\":%u,\"shown\":[",
		       x[i].persistent ? "true" : "false", x[i].n_opens);
		for (uint32_t k = 0; k < x[i].n_opens_shown; k++) {
			const struct ibc_xrcd_open_info *o = &x[i].opens[k];

			const struct ibc_xrcd_open_objs *u = &x[i].open_objs[k];

			printf("%s{\"client\":%" PRIu64 ",\"pid\":%u,"
			       "\"object\":%" PRIu64 ",\"domain\":",
			       k ? "," : "", o->client_id, o->pid,
			       o->object_id);
			json_string(stdout, o->domain);
			printf(",\"srqs\":%u,\"qps\":%u,\"own\":%s}", u->srqs,
			       u->qps, u->own ? "true" : "false");
		}
		printf("],\"orphaned_opens\":%u}", x[i].n_orphaned);
	}
	printf("%s\n", one ? "" : "]");
}

static void xrcd_table(const struct ibc_xrcd_info *x, size_t n)
{
	printf("%-24s %-10s %-12s %-20s %-12s %-5s %-8s %s\n", "NAME", "INODE",
	       "PERSISTENT", "DOMAIN(S)", "DEVICES", "OPENS", "ORPHANED",
	       "CLIENTS");
	for (size_t i = 0; i < n; i++) {
		char name[CTL_TEXT_SIZE(x[i].name)];
		char doms[CTL_TEXT_SIZE(x[i].domains)];
		char devs[CTL_TEXT_SIZE(x[i].devices)];
		const char *d =
			x[i].persistent ? x[i].domains : x[i].owner_domain;

		printf("%-24s %-10" PRIu64 " %-12s %-20s %-12s %-5u",
		       text_escape(name, sizeof(name), x[i].name), x[i].ino,
		       x[i].persistent ? "declared" : "while-open",
		       text_escape(doms, sizeof(doms), d),
		       text_escape(devs, sizeof(devs),
				   *x[i].devices ? x[i].devices : "-"),
		       x[i].n_opens);
		printf(" %-8u", x[i].n_orphaned);
		/* Opens per client: each open is listed, a client's in a
		 * row. */
		for (uint32_t k = 0; k < x[i].n_opens_shown; k++)
			printf("%s%" PRIu64 "(pid %u)", k ? " " : " ",
			       x[i].opens[k].client_id, x[i].opens[k].pid);
		if (x[i].n_opens > x[i].n_opens_shown)
			printf(" ...");
		printf("\n");
	}
}

static const char *plural(uint32_t n)
{
	return n == 1 ? "" : "s";
}

/* One name, with each open and what holds it (its SRQs and QPs). */
static void xrcd_show(const struct ibc_xrcd_info *x)
{
	char name[CTL_TEXT_SIZE(x->name)];
	char doms[CTL_TEXT_SIZE(x->domains)];
	char devs[CTL_TEXT_SIZE(x->devices)];

	printf("name:       %s\n", text_escape(name, sizeof(name), x->name));
	printf("inode:      %" PRIu64 "\n", x->ino);
	if (x->persistent)
		printf("persistent: declared, domains %s\n",
		       text_escape(doms, sizeof(doms), x->domains));
	else
		printf("persistent: while-open, domain %s\n",
		       text_escape(doms, sizeof(doms), x->owner_domain));
	printf("devices:    %s\n",
	       text_escape(devs, sizeof(devs), *x->devices ? x->devices : "-"));
	printf("opens:      %u\n", x->n_opens);
	for (uint32_t k = 0; k < x->n_opens_shown; k++) {
		const struct ibc_xrcd_open_info *o = &x->opens[k];
		const struct ibc_xrcd_open_objs *u = &x->open_objs[k];
		char dom[CTL_TEXT_SIZE(o->domain)];

		printf("  client %" PRIu64 " (pid %u, domain %s): ",
		       o->client_id, o->pid,
		       text_escape(dom, sizeof(dom), o->domain));
		if (u->own)
			printf("a context of its own, whose SRQs and QPs "
			       "the broker does not see\n");
		else
			printf("object %" PRIu64 ", %u SRQ%s, %u QP%s\n",
			       o->object_id, u->srqs, plural(u->srqs), u->qps,
			       plural(u->qps));
	}
	if (x->n_opens > x->n_opens_shown)
		printf("  and %u more\n", x->n_opens - x->n_opens_shown);
	if (x->n_orphaned)
		printf("orphaned:   %u open%s of dead clients: the kernel XRCD "
		       "stays in the domain's context until it closes or is "
		       "rekeyed\n",
		       x->n_orphaned, plural(x->n_orphaned));
}

/* Keep the entries of @domain first; returns how many. */
static size_t xrcd_of_domain(struct ibc_xrcd_info *x, size_t n,
			     const char *domain)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (strcmp(x[i].owner_domain, domain) != 0)
			continue;
		if (k != i)
			x[k] = x[i];
		k++;
	}
	return k;
}

static int cmd_xrcd(struct ctl *ctl, int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : "list";
	const char *name = NULL, *domain = NULL;
	struct ibc_xrcd_info *x;
	size_t n;
	int ret;

	if (strcmp(sub, "list") == 0) {
		if (argc > 2)
			return xrcd_usage("list takes no argument", argv[2]);
	} else if (strcmp(sub, "show") == 0 && argc == 5 &&
		   strcmp(argv[3], "--domain") == 0) {
		name = argv[2];
		domain = argv[4];
	} else if (strcmp(sub, "show") == 0 || strcmp(sub, "remove") == 0) {
		if (argc != 3)
			return xrcd_usage("needs one name", sub);
		name = argv[2];
	} else {
		return xrcd_usage("unknown subcommand", sub);
	}
	ret = ctl_connect(ctl);
	if (ret)
		return ret;
	if (strcmp(sub, "remove") == 0) {
		ret = ibc_admin_xrcd_remove(ctl->client, name);
		if (ret < 0)
			return ctl_fail("xrcd remove", ret);
		if (ctl->json) {
			printf("{\"removed\":");
			json_string(stdout, name);
			printf(",\"orphaned_opens\":%d}\n", ret);
		} else {
			char t[TEXT_ESCAPED_SIZE(80)];

			printf("XRCD %s removed",
			       text_escape(t, sizeof(t), name));
			if (ret)
				printf("; %d orphaned open%s keep its kernel "
				       "XRCD until their domains' contexts "
				       "close or are rekeyed",
				       ret, plural((uint32_t)ret));
			printf("\n");
		}
		return CTL_OK;
	}
	ret = ibc_list_xrcds(ctl->client, name, &x, sizeof(*x), &n);
	if (ret < 0)
		return ctl_fail("xrcd", ret);
	if (domain)
		n = xrcd_of_domain(x, n, domain);
	if (name && !n) {
		ibc_list_free(x);
		fprintf(stderr,
			"rdmabrokerctl: xrcd show: no XRCD of that "
			"name is visible%s\n",
			domain ? " in that domain" : "");
		return CTL_ERROR;
	}
	/* A private name may be in several domains (an administrator sees
	 * them all): show is one object, so --domain picks one. */
	if (name && n > 1) {
		ibc_list_free(x);
		fprintf(stderr,
			"rdmabrokerctl: xrcd show: %zu domains hold "
			"that name: pick one with --domain DOMAIN "
			"(see rdmabrokerctl xrcd list)\n",
			n);
		return CTL_ERROR;
	}
	if (ctl->json) {
		xrcd_json(x, n, name);
	} else if (name) {
		xrcd_show(&x[0]);
	} else {
		xrcd_table(x, n);
	}
	ibc_list_free(x);
	return CTL_OK;
}

/* Its entry in the command table (ctl/main.c). */
/* `domains --json`: the XRCD opens of dead clients whose kernel XRCD
 * stays in domain @d's contexts. */
static void xrcd_domain_json(const struct ibc_domain_info *d)
{
	printf(",\"xrcd_orphans\":%u", d->xrcd_orphans);
}

static const struct ctl_family_listing xrcd_listing = {
	.quota_field = offsetof(struct ibc_quota, xrcds),
	.quota_size = sizeof(((struct ibc_quota *)0)->xrcds),
	.quota_key = "xrcds",
	.quota_header = "XRCDS",
	.quota_width = 9,
	.domain_json = xrcd_domain_json,
};

const struct ctl_command ctl_cmd_xrcd = {
	"xrcd",
	"[list | show NAME [--domain D] | remove NAME]",
	"XRC domains by name; remove: administrators",
	"  list                    the XRC domains the caller may see\n"
	"                          (the default)\n"
	"  show NAME [--domain D]  one, with its opens; --domain picks\n"
	"                          one when several domains hold NAME\n"
	"  remove NAME             remove a declared XRCD's file\n"
	"                          (administrators)\n",
	cmd_xrcd,
	&xrcd_listing,
};
