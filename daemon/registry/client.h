/* SPDX-License-Identifier: MIT */
/*
 * struct client: a session as the layers below the handlers know it: who
 * (its id, credentials and groups), where (its domain and its uid's
 * accounting), what it holds (its contexts and its owner in the registry)
 * and what it asked for at hello. The registry, the domains, the contexts
 * and the families take a client, never a connection, and so do the
 * handlers (handler.h): the transport's struct conn embeds one (conn.h),
 * and what only the transport can do for a client (the Events, its pidfd,
 * its hello's deadline, the walk of every session) goes through struct
 * core_ops.
 */
#ifndef RDMAB_CLIENT_H
#define RDMAB_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "daemon/families/family.h"
#include "daemon/util/queue.h"

struct core;
struct domain;
struct user;
struct obj_owner;
struct conn_ctx;

struct client {
	struct core *core;
	uint64_t id;
	struct ucred cred;
	/* Supplementary groups at connect (SO_PEERGROUPS). */
	gid_t *groups;
	size_t n_groups;
	/* Its cgroup v2 path at connect (cgroup_of_pid()), kept for the
	 * session's life whatever cgroup the process moves to; NULL when it
	 * could not be read, cgroup_err saying why. */
	char *cgroup;
	int cgroup_err;
	/* The peer's uid's accounting (user.h). */
	struct user *user;
	struct domain *domain;
	/* Its domain's members (domain.members): a member's listing of
	 * clients walks them only. */
	TAILQ_ENTRY(client) domain_link;
	TAILQ_HEAD(, conn_ctx) ctxs;
	unsigned int n_ctxs;
	/* The session's objects in the registry; NULL before the first. */
	struct obj_owner *owner;
	/* The session proved who it is (its hello): listings, evict and
	 * Events ask it of a closing session too. */
	bool hello_done;
	/* Restart: -errno when its socket could not be kept in the fd
	 * store (restart_conn_opened()): its hello is refused, saying
	 * why, rather than a restart ending the session unannounced. */
	int store_err;
	/* The peer's command name at connect (/proc), for the operator. */
	char comm[16];
	/* Filled by the hello handler. */
	uint32_t client_pid;
	int fork_state;
	/* Sent in the hello reply only; a forked child of the session
	 * proves its descent with it (session.c). */
	uint8_t secret[16];
	/* The session this one proved it was forked from, 0: none. */
	uint64_t parent_id;
	char library_version[32];
	/* Requests read from it (dispatch.c). */
	uint64_t requests;
	/* What each family keeps of the session, indexed by family id
	 * (family.h): set at hello, journaled with the session's record
	 * (struct family's hello and session_save/restore). */
	uint64_t family_slot[FAMILY_COUNT];
};

#endif
