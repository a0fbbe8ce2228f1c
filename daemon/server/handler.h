/* SPDX-License-Identifier: MIT */
/*
 * The handler interface: struct reply, what a handler fills and dispatch
 * sends, the handler signature and flags, and every h_<family>_<verb>
 * handler the table in dispatch.c names (the families' own are in their
 * handlers files' tables, family.h). handler.c fills replies.
 */
#ifndef RDMAB_HANDLER_H
#define RDMAB_HANDLER_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/util/why.h"
#include "proto/wire.h"

struct client;
struct device;

/* What a handler fills in; dispatch sends it, so every request gets exactly
 * one reply. */
struct reply {
	Rdmab__Reply msg;
	/* The failure's sentence: what the layers below fill (why.h). */
	struct why why;
	/* Descriptors to send; borrowed: the queue takes dups. */
	int fds[WIRE_MAX_FDS];
	unsigned int nfds;
	/* Where reply_alloc() takes memory: the request's arena. */
	struct wire_arena *arena;
	bool bounded;
};

/* Zeroed memory that lives until the reply is sent; NULL past the
 * request's memory limit. */
void *reply_alloc(struct reply *r, size_t size);

/* Record the broker's sentence for a failure; returns @err (negative). */
int reply_error(struct reply *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

typedef int (*handler_fn)(struct client *c, const Rdmab__Request *req,
			  struct wire_fds *fds, struct reply *r);

enum handler_flags {
	H_NEEDS_HELLO = 1 << 0,
	H_ADMIN = 1 << 1,
	/* The reply packs to well under WIRE_PACK_ROOM by construction
	 * (bounded names, pages, payloads). Only protobuf-c's path skips
	 * the sizing for it; the hand codec sizes every reply as it packs
	 * (proto/README.md, "The hot path"). */
	H_BOUNDED = 1 << 2,
	/* Read after the end of its session (dispatch_drain()), it is
	 * served all the same, its reply going nowhere: it does not wait
	 * for one. Creates wait for theirs, so the client makes nothing for
	 * them; registers, unregisters and a DM unimport do not (the
	 * library unmapped, or unimported from its context, before it sent
	 * it, whatever the answer). A DM free waits: without its answer the
	 * library keeps the DM, so it is not applied (the allocator's death
	 * asks it). */
	H_DRAIN = 1 << 3,
};

/* What most requests need: a hello first, a bounded reply. */
#define H_SESSION (H_NEEDS_HELLO | H_BOUNDED)

struct handler {
	const char *name;
	handler_fn fn;
	unsigned int flags;
};

/* Fill a DeviceInfo from @dev for @c: the device's limits
 * (common/device/caps-fields.h), and what each family adds for @c
 * (struct family's device_caps); @caps is where its caps go (inspect.c;
 * the hello reply's too). */
void inspect_device_info(const struct client *c, const struct device *dev,
			 Rdmab__DeviceInfo *info, Rdmab__DeviceCaps *caps);

/* Handlers, one family a file. */
int h_session_hello(struct client *c, const Rdmab__Request *req,
		    struct wire_fds *fds, struct reply *r);
int h_session_ping(struct client *c, const Rdmab__Request *req,
		   struct wire_fds *fds, struct reply *r);
int h_status_get(struct client *c, const Rdmab__Request *req,
		 struct wire_fds *fds, struct reply *r);
int h_ctx_open(struct client *c, const Rdmab__Request *req,
	       struct wire_fds *fds, struct reply *r);
int h_ctx_close(struct client *c, const Rdmab__Request *req,
		struct wire_fds *fds, struct reply *r);
int h_list_devices(struct client *c, const Rdmab__Request *req,
		   struct wire_fds *fds, struct reply *r);
int h_list_domains(struct client *c, const Rdmab__Request *req,
		   struct wire_fds *fds, struct reply *r);
int h_list_clients(struct client *c, const Rdmab__Request *req,
		   struct wire_fds *fds, struct reply *r);
int h_obj_create(struct client *c, const Rdmab__Request *req,
		 struct wire_fds *fds, struct reply *r);
int h_obj_register(struct client *c, const Rdmab__Request *req,
		   struct wire_fds *fds, struct reply *r);
int h_obj_destroy(struct client *c, const Rdmab__Request *req,
		  struct wire_fds *fds, struct reply *r);
int h_list_objects(struct client *c, const Rdmab__Request *req,
		   struct wire_fds *fds, struct reply *r);
int h_admin_evict(struct client *c, const Rdmab__Request *req,
		  struct wire_fds *fds, struct reply *r);
/* The soft device's kernel call of an intent (obj-handlers.c). */
int h_obj_kernel_call(struct client *c, const Rdmab__Request *req,
		      struct wire_fds *fds, struct reply *r);
/* Rekey (rekey.c). */
int h_domain_rekey(struct client *c, const Rdmab__Request *req,
		   struct wire_fds *fds, struct reply *r);
/* Fork (session.c). */
int h_fork_state(struct client *c, const Rdmab__Request *req,
		 struct wire_fds *fds, struct reply *r);
/* Metrics (metrics-req.c). */
int h_metrics_get(struct client *c, const Rdmab__Request *req,
		  struct wire_fds *fds, struct reply *r);

#endif
