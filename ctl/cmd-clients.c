// SPDX-License-Identifier: MIT
/* rdmabrokerctl clients */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl/ctl.h"

static const char *const fork_names[] = { "disabled", "enabled", "unneeded" };

static const char *fork_name(enum ibc_fork_state s)
{
	return (unsigned int)s < 3 ? fork_names[s] : "?";
}

/* Is the session @id listed? */
static bool listed(const struct ibc_client_entry *c, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (c[i].id == id)
			return true;
	return false;
}

/* Children deeper than this are drawn at this depth. */
#define TREE_DEPTH_MAX 8

static void print_row(const struct ibc_client_entry *e, unsigned int depth)
{
	char comm[CTL_TEXT_SIZE(e->comm)];
	char domain[CTL_TEXT_SIZE(e->domain)];
	char cgroup[CTL_CGROUP_SIZE];
	char id[32], parent[24] = "-";

	/* A forked child under its parent, two columns further in. */
	if (depth > TREE_DEPTH_MAX)
		depth = TREE_DEPTH_MAX;
	snprintf(id, sizeof(id), "%*s%" PRIu64, (int)(2 * depth), "", e->id);
	if (e->parent_id)
		snprintf(parent, sizeof(parent), "%" PRIu64, e->parent_id);
	printf("%-15s %-15s %-8u %-6u %-16s %-20s %-8u %-7u %-11u "
	       "%-9" PRIu64 " %-9s %s\n",
	       id, parent, e->pid, e->uid,
	       text_escape(comm, sizeof(comm), e->comm),
	       text_escape(domain, sizeof(domain), e->domain), e->contexts,
	       e->objects, e->unaccounted, e->requests,
	       fork_name(e->fork_state),
	       ctl_cgroup_text(cgroup, sizeof(cgroup), e->cgroup,
			       e->cgroup_truncated));
}

/*
 * Entry @root and the sessions forked from it, depth first, each entry
 * once (@printed): the listing comes from the daemon, which may repeat ids
 * or link sessions in a cycle, so neither the output nor the walk (an
 * explicit stack, @stack of n entries) may grow with what it claims.
 */
static void print_tree(const struct ibc_client_entry *c, size_t n, size_t root,
		       bool *printed, size_t *stack, unsigned int *depth)
{
	size_t top = 0;

	printed[root] = true;
	stack[top] = root;
	depth[top++] = 0;
	while (top) {
		size_t i = stack[--top];
		unsigned int d = depth[top];

		print_row(&c[i], d);
		/* Pushed last to first: printed in the listing's order. */
		for (size_t j = n; j-- > 0;) {
			if (printed[j] || c[j].parent_id != c[i].id)
				continue;
			printed[j] = true;
			stack[top] = j;
			depth[top++] = d + 1;
		}
	}
}

/* Roots first (sessions of no parent, or of one not listed); then what
 * no root reached (a cycle), each as a root. */
static int print_clients(const struct ibc_client_entry *c, size_t n)
{
	bool *printed = calloc(n ? n : 1, sizeof(*printed));
	size_t *stack = calloc(n ? n : 1, sizeof(*stack));
	unsigned int *depth = calloc(n ? n : 1, sizeof(*depth));
	int ret = 0;

	if (!printed || !stack || !depth) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (!printed[i] &&
		    !(c[i].parent_id && listed(c, n, c[i].parent_id)))
			print_tree(c, n, i, printed, stack, depth);
	for (size_t i = 0; i < n; i++)
		if (!printed[i])
			print_tree(c, n, i, printed, stack, depth);
out:
	free(printed);
	free(stack);
	free(depth);
	return ret;
}

int cmd_clients(struct ctl *ctl, int argc, char **argv)
{
	struct ibc_client_entry *c;
	size_t n;
	int ret;

	if (argc != 1) {
		fprintf(stderr, "rdmabrokerctl: clients takes no arguments\n");
		return CTL_USAGE;
	}
	ret = ctl_connect(ctl);
	if (ret)
		return ret;
	ret = ibc_list_clients(ctl->client, &c, sizeof(*c), &n);
	if (ret < 0)
		return ctl_fail("clients", ret);
	if (ctl->json) {
		printf("[");
		for (size_t i = 0; i < n; i++) {
			printf("%s{\"id\":%" PRIu64 ",\"pid\":%u,\"uid\":%u,"
			       "\"gid\":%u,\"comm\":",
			       i ? "," : "", c[i].id, c[i].pid, c[i].uid,
			       c[i].gid);
			json_string(stdout, c[i].comm);
			printf(",\"domain\":");
			json_string(stdout, c[i].domain);
			printf(",\"contexts\":%u,\"objects\":%u,"
			       "\"requests\":%" PRIu64 ",\"fork\":",
			       c[i].contexts, c[i].objects, c[i].requests);
			json_string(stdout, fork_name(c[i].fork_state));
			printf(",\"library_version\":");
			json_string(stdout, c[i].library_version);
			printf(",\"unaccounted\":%u", c[i].unaccounted);
			printf(",\"parent\":%" PRIu64 ",\"children\":%u",
			       c[i].parent_id, c[i].children);
			json_cgroup(stdout, c[i].cgroup, c[i].cgroup_truncated);
			printf("}");
		}
		printf("]\n");
		goto out;
	}
	/* Ids have up to 15 digits (rdmabrokerd(8), Ids). */
	printf("%-15s %-15s %-8s %-6s %-16s %-20s %-8s %-7s %-11s %-9s %-9s "
	       "%s\n",
	       "ID", "PARENT", "PID", "UID", "COMMAND", "DOMAIN", "CONTEXTS",
	       "OBJECTS", "UNACCOUNTED", "REQUESTS", "FORK", "CGROUP");
	ret = print_clients(c, n);
	if (ret < 0) {
		ibc_list_free(c);
		return ctl_fail("clients", ret);
	}
out:
	ibc_list_free(c);
	return CTL_OK;
}
