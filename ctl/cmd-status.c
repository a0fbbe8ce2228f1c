// SPDX-License-Identifier: MIT
/* rdmabrokerctl status */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>

#include "ctl/ctl.h"

static void status_uptime(char *buf, size_t size, uint64_t usec)
{
	uint64_t s = usec / 1000000;

	snprintf(buf, size,
		 "%" PRIu64 "d %02" PRIu64 ":%02" PRIu64 ":%02" PRIu64,
		 s / 86400, s / 3600 % 24, s / 60 % 60, s % 60);
}

/* The generation, and the last restore when there was one (or a state
 * refused: the sentence alone). */
static void status_restarts(const struct ibc_status *st)
{
	char what[CTL_TEXT_SIZE(st->last_restore)];

	printf("%-18s %" PRIu64 "\n", "generation", st->generation);
	if (!st->restarts && !*st->last_restore)
		return;
	printf("%-18s %" PRIu64, "restarts", st->restarts);
	if (st->restarts)
		printf(", the last restored in %" PRIu64 ".%03" PRIu64 " ms",
		       st->last_restore_usec / 1000,
		       st->last_restore_usec % 1000);
	if (*st->last_restore)
		printf(": %s",
		       text_escape(what, sizeof(what), st->last_restore));
	printf("\n");
}

/* Whether a restart from here keeps the sessions (an older broker does
 * not say). */
static void status_journal(const struct ibc_status *st)
{
	char what[CTL_TEXT_SIZE(st->journal)];

	if (*st->journal)
		printf("%-18s %s\n", "journal",
		       text_escape(what, sizeof(what), st->journal));
}

int cmd_status(struct ctl *ctl, int argc, char **argv)
{
	struct ibc_status st;
	char version[CTL_TEXT_SIZE(st.daemon_version)];
	char kind[CTL_TEXT_SIZE(st.device_kind)];
	char up[64];
	int ret;

	if (argc != 1) {
		fprintf(stderr, "rdmabrokerctl: status takes no arguments\n");
		return CTL_USAGE;
	}
	ret = ctl_connect(ctl);
	if (ret)
		return ret;
	ret = ibc_status(ctl->client, &st, sizeof(st));
	if (ret < 0)
		return ctl_fail("status", ret);
	if (ctl->json) {
		printf("{\"daemon_version\":");
		json_string(stdout, st.daemon_version);
		printf(",\"protocol_version\":%u,\"pid\":%u,"
		       "\"uptime_usec\":%" PRIu64 ",\"device_kind\":",
		       st.protocol_version, st.daemon_pid, st.uptime_usec);
		json_string(stdout, st.device_kind);
		printf(",\"clients\":%u,\"max_clients\":%u,"
		       "\"requests_served\":%" PRIu64 ",\"figures_of\":",
		       st.clients, st.max_clients, st.requests_served);
		json_string(stdout, *st.domain ? st.domain : "daemon");
		printf(",\"generation\":%" PRIu64 ",\"restarts\":%" PRIu64
		       ",\"last_restore_usec\":%" PRIu64 ",\"last_restore\":",
		       st.generation, st.restarts, st.last_restore_usec);
		json_string(stdout, st.last_restore);
		printf(",\"journal\":");
		json_string(stdout, st.journal);
		printf("}\n");
		return CTL_OK;
	}
	status_uptime(up, sizeof(up), st.uptime_usec);
	printf("%-18s %s (protocol %u)\n", "daemon version",
	       text_escape(version, sizeof(version), st.daemon_version),
	       st.protocol_version);
	printf("%-18s %u\n", "pid", st.daemon_pid);
	printf("%-18s %s\n", "uptime", up);
	printf("%-18s %s\n", "device kind",
	       text_escape(kind, sizeof(kind), st.device_kind));
	status_restarts(&st);
	status_journal(&st);
	/* Anyone but an administrator gets its domain's figures. */
	if (*st.domain) {
		char dom[CTL_TEXT_SIZE(st.domain)];

		printf("%-18s %s (the figures below are its own; the "
		       "daemon's are for administrators)\n",
		       "your domain", text_escape(dom, sizeof(dom), st.domain));
		printf("%-18s %u of the domain's %u\n", "domain clients",
		       st.clients, st.max_clients);
		printf("%-18s %" PRIu64 "\n", "domain requests",
		       st.requests_served);
		return CTL_OK;
	}
	printf("%-18s %u of %u\n", "clients", st.clients, st.max_clients);
	printf("%-18s %" PRIu64 "\n", "requests served", st.requests_served);
	return CTL_OK;
}
