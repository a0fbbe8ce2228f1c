/* SPDX-License-Identifier: MIT */
/*
 * Clients under other credentials, for the domain and CLI suites (run as
 * root): an agent is a forked process that drops to a uid, gid and
 * supplementary groups and then runs libibclient calls on command, over a
 * pair of pipes, so that a test can keep several clients of several users
 * connected at once. agent_run() runs a program under such credentials and
 * collects its output. Like testlib, nothing here uses Check.
 *
 * Agents die with the thread that started them (PR_SET_PDEATHSIG, set after
 * the credentials changed, since a change clears it), close every inherited
 * descriptor but their pipes (a copied client socket would keep another
 * connection alive) and stay dumpable, so that they can read their own
 * /proc/self/fd.
 *
 * Only root can switch users: tests that do belong in a root-only program
 * (ck_require_root() in tests/cklib.h), never behind an early return.
 */
#ifndef RDMAB_TESTS_AGENT_H
#define RDMAB_TESTS_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "include/ibclient.h"

#define AGENT_MAX_GROUPS 8
#define AGENT_MAX_LIST 16
#define AGENT_MAX_CTXS 4
#define AGENT_MAX_DMS 128
#define AGENT_MAX_DEVICES 4

struct agent_cred {
	uid_t uid;
	gid_t gid;
	gid_t groups[AGENT_MAX_GROUPS];
	size_t n_groups;
};

enum agent_op {
	/* arg: the domain to ask for ("" for none, NULL not to set the
	 * attribute); flags: ibc_connect flags. Fills info. */
	AGENT_CONNECT = 1,
	/* arg: the device ("" or NULL: the first). Fills caps, soft_ino. */
	AGENT_OPEN,
	/* Close the context opened last. */
	AGENT_CLOSE,
	/* ibc_list_domains: n_list, domains[]. */
	AGENT_LIST_DOMAINS,
	/* ibc_list_clients: n_list, clients[]. */
	AGENT_LIST_CLIENTS,
	AGENT_PING,
	/* ibc_status: n_list gets the daemon's client count. */
	AGENT_STATUS,
	/* ibc_verbs_context and ibc_verbs_pd of the context opened last:
	 * ret is 1 for each non-NULL result (bit 0 context, bit 1 PD),
	 * err_ctx and err_pd the errno each left. */
	AGENT_VERBS,
	AGENT_DISCONNECT,
	AGENT_EXIT,
	/* ibc_dm_alloc_ex of arg (a decimal length) bytes in the context
	 * opened last, flags its enum ibc_dm_flags: dm_id. Kept until the
	 * agent ends. */
	AGENT_DM_ALLOC,
	/* The same until refused or AGENT_MAX_DMS: n_list is how many went,
	 * ret and error the refusal. */
	AGENT_DM_FILL,
	/* ibc_list_devices: n_list, devices[]. */
	AGENT_LIST_DEVICES,
	/* Cgroups: ibc_dm_import of handle arg (decimal) in the context
	 * opened last (ret; kept until the agent ends); ibc_xrcd_open of
	 * name arg with oflags flags (ret; kept too); how many entries
	 * ibc_list_objects, ibc_list_dms and ibc_list_xrcds give (n_list). */
	AGENT_DM_IMPORT,
	AGENT_XRCD_OPEN,
	AGENT_LIST_OBJECTS,
	AGENT_LIST_DMS,
	AGENT_LIST_XRCDS,
};

struct agent_rep {
	/* The call's return value (0 or -errno). */
	int ret;
	int err_ctx;
	int err_pd;
	/* ibc_last_error() after the call. */
	char error[256];
	struct ibc_client_info info;
	struct ibc_caps caps;
	/* Inode of the soft context memfd this process holds, 0 if none. */
	uint64_t soft_ino;
	/* Entries in the listing (not all may fit in the arrays). */
	uint32_t n_list;
	struct ibc_domain_info domains[AGENT_MAX_LIST];
	struct ibc_client_entry clients[AGENT_MAX_LIST];
	struct ibc_device_info devices[AGENT_MAX_DEVICES];
	uint64_t dm_id;
	/* AGENT_DM_ALLOC: the handle ibc_dm_import takes. */
	uint32_t dm_handle;
};

struct agent {
	pid_t pid;
	int to;
	int from;
	struct agent_cred cred;
	/* The last reply. */
	struct agent_rep rep;
};

/* Ends the group list of agent_cred(). */
#define AGENT_END ((gid_t)-1)

/* A credential: @uid, @gid and up to AGENT_MAX_GROUPS supplementary groups
 * from the AGENT_END terminated list. */
struct agent_cred agent_cred(uid_t uid, gid_t gid, ...);

/*
 * Fork an agent for @sock under @cred (when not root, only this process's
 * own uid and gid can be had, and groups are left as they are); returns 0 once
 * it runs with those credentials, or -errno (the agent's own error when it
 * could not drop).
 */
int agent_start(struct agent *a, const struct agent_cred *cred,
		const char *sock);
/*
 * Send @op and wait for the reply (in a->rep) up to @timeout_ms. Returns 0
 * when a reply came (the call's own result is a->rep.ret), -errno when the
 * agent did not answer.
 */
int agent_call(struct agent *a, enum agent_op op, const char *arg,
	       uint32_t flags, int timeout_ms);
/* Tell the agent to exit and reap it (SIGKILL after a timeout). Safe on an
 * agent that was never started or is stopped. */
void agent_stop(struct agent *a);

/*
 * Run @argv (argv[0] a path) under @cred, stdin from /dev/null; stdout and
 * stderr go to the malloc'd NUL-terminated *ret_out and *ret_err. Returns
 * the wait status, or -errno (-ETIMEDOUT: killed after @timeout_ms).
 */
int agent_run(const struct agent_cred *cred, const char *const *argv,
	      int timeout_ms, char **ret_out, char **ret_err);

#endif
