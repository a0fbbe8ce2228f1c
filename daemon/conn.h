/* SPDX-License-Identifier: MIT */
#ifndef RDMAB_CONN_H
#define RDMAB_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include "daemon/queue.h"
#include <sys/socket.h>

#include "daemon/ctx.h"
#include "proto/wire.h"

struct server;
struct outmsg;
struct domain;
struct obj_owner;

struct conn {
	TAILQ_ENTRY(conn) link;
	struct server *srv;
	int fd;
	/* Lets the daemon see the peer die even when a copy of the socket
	 * survives it; -1 where pidfd_open is unavailable. */
	int pidfd;
	uint64_t id;
	struct ucred cred;
	/* Supplementary groups at connect (SO_PEERGROUPS). */
	gid_t *groups;
	size_t n_groups;
	char comm[16];
	struct event *read_ev;
	struct event *write_ev;
	struct event *pidfd_ev;
	TAILQ_HEAD(, outmsg) outq;
	size_t outq_bytes;
	bool reading;
	bool hello_done;
	/* Set after a protocol error: flush what is queued, then close. */
	bool closing;
	/* Filled by the hello handler. */
	uint32_t client_pid;
	int fork_state;
	char library_version[32];
	struct domain *domain;
	TAILQ_HEAD(, conn_ctx) ctxs;
	unsigned int n_ctxs;
	/* The session's objects in the registry; NULL before the first. */
	struct obj_owner *owner;
	uint64_t requests;
};

/* Adopt an accepted socket; the conn owns @fd from here on, also on
 * failure. */
int conn_new(struct server *srv, int fd, struct conn **ret_conn);
void conn_close(struct conn *c);

/*
 * Send a DaemonMessage holding @inner as field @field (a Reply or an Event)
 * with @nfds descriptors (borrowed: what must wait in the queue is
 * dupped). @bounded: see wire_pack_daemon_message().
 * A client whose unread replies pass the hard cap is disconnected: -EPIPE.
 */
int conn_send(struct conn *c, const ProtobufCMessage *inner,
	      unsigned int field, bool bounded, const int *fds,
	      unsigned int nfds);
int conn_send_event(struct conn *c, Rdmab__Event *ev);
/* Flush without blocking what can be flushed, then close. */
void conn_close_after_flush(struct conn *c);

#endif
