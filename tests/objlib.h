/* SPDX-License-Identifier: MIT */
/*
 * The object registry's requests as raw packets, for the daemon's tests
 * (which do not go through libibclient): a blocking raw client that says
 * hello, opens a context and creates, registers, destroys and lists
 * objects. Like testlib, the calls do not use Check: they return 0 or
 * -errno (the daemon's error), and ol_error holds the daemon's sentence;
 * OK() asserts one succeeded, in a suite.
 */
#ifndef RDMAB_TESTS_OBJLIB_H
#define RDMAB_TESTS_OBJLIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"

/* The daemon's sentence for the last failed call (per process). */
extern char ol_error[256];

/* For the Check suites that use these calls: assert that @call returned
 * 0, naming it, the error and the daemon's sentence. */
#define OK(call)                                                               \
	do {                                                                   \
		int ok_ret_ = (call);                                          \
		ck_assert_msg(ok_ret_ == 0, "%s: %s (%s)", #call,              \
			      strerror(-ok_ret_), ol_error);                   \
	} while (0)

struct ol_client {
	int fd;
	uint64_t serial;
	uint64_t client_id;
	uint64_t ctx_id;
	char domain[64];
	/* Called while a reply is awaited, for a daemon in this process;
	 * NULL: wait on the socket. */
	void (*pump)(void);
};

/* Connect to @sock, hello (asking for @domain, or NULL), open the first
 * device. 0 or -errno; @c->fd is -1 on failure. */
int ol_connect(struct ol_client *c, const char *sock, const char *domain);
/* Adopt a connected socket (a socketpair end) and hello on it, without
 * opening a context. */
int ol_adopt(struct ol_client *c, int fd, void (*pump)(void));
int ol_hello(struct ol_client *c, const char *domain);
/* Hello asking for a private domain of the session's own. */
int ol_hello_private(struct ol_client *c);
int ol_open(struct ol_client *c);
void ol_close(struct ol_client *c);

/* Send @req with the next serial and wait for its reply (events are
 * skipped). 0 with *ret (free with ol_free) or -errno. */
int ol_call(struct ol_client *c, Rdmab__Request *req,
	    Rdmab__DaemonMessage **ret);
void ol_free(Rdmab__DaemonMessage *m);
/* ol_call() for a request whose reply says nothing more than that it
 * worked: the reply is dropped. 0 or -errno. */
int ol_request(struct ol_client *c, Rdmab__Request *req);
/* Send @req and do not wait: its reply is read later, or never. */
int ol_send(struct ol_client *c, Rdmab__Request *req);

struct ol_obj {
	uint64_t id;
	uint32_t handle;
	uint32_t num;
	uint32_t lkey;
	uint32_t rkey;
	Rdmab__ObjAttr attr; /* as given */
};

/* ObjCreateRequest in @mode for @kind in @c's context, with @uses (0:
 * none). */
int ol_create_mode(struct ol_client *c, int mode, uint32_t kind,
		   const uint64_t *uses, size_t n_uses,
		   const Rdmab__ObjAttr *attr, uint32_t handle,
		   struct ol_obj *ret);
/* The soft device's kernel call of intent @id ([soft] intent_window). */
int ol_kernel_call(struct ol_client *c, uint64_t id, const uint64_t *uses,
		   size_t n_uses, uint32_t *ret_handle);
int ol_create(struct ol_client *c, uint32_t kind, const uint64_t *uses,
	      size_t n_uses, const Rdmab__ObjAttr *attr, struct ol_obj *ret);
int ol_cq(struct ol_client *c, uint32_t cqe, struct ol_obj *ret);
/* An RC QP on @scq and @rcq, with SRQ @srq (0: none). */
int ol_qp(struct ol_client *c, uint64_t scq, uint64_t rcq, uint64_t srq,
	  struct ol_obj *ret);
int ol_srq(struct ol_client *c, uint32_t max_wr, struct ol_obj *ret);
int ol_wq(struct ol_client *c, uint64_t cq, uint32_t max_wr,
	  struct ol_obj *ret);
int ol_mr(struct ol_client *c, uint64_t addr, uint64_t length, uint32_t access,
	  struct ol_obj *ret);
int ol_destroy(struct ol_client *c, uint64_t id);
int ol_register(struct ol_client *c, uint64_t id, uint32_t handle);
int ol_evict(struct ol_client *c, uint64_t client_id);
/* A DM of @length bytes in @c's context: its id and the record of the
 * allocator's import (either may be NULL). 0 or -errno. */
int ol_dm_alloc(struct ol_client *c, uint64_t length, uint64_t *ret_dm,
		uint64_t *ret_hold);
/* An RSS object of @c over @wq_ids (a table of the next power of two
 * entries, IPv4 hashed, UDP port 4791 matched); its id in @ret_id. */
int ol_rss(struct ol_client *c, const uint64_t *wq_ids, size_t n,
	   uint64_t *ret_id);

struct ol_info {
	uint64_t id;
	uint32_t kind;
	uint32_t handle;
	uint64_t client_id;
	uint32_t pid;
	uint64_t context_id;
	char domain[64];
	char device[64];
	int state;
	uint64_t age_usec;
};

/* Every object the daemon lists for @c (all pages), filtered by
 * @client_id (0: any) and @domain (NULL: any). Returns the count (also
 * beyond @cap) or -errno. */
int ol_list(struct ol_client *c, uint64_t client_id, const char *domain,
	    struct ol_info *out, size_t cap);
/* Domain @name as @c sees it: its objects charged and unaccounted. */
int ol_domain(struct ol_client *c, const char *name, uint32_t *ret_objects,
	      uint32_t *ret_unaccounted);
/* Client @id as @c sees it: -ENOENT when not listed. */
int ol_client(struct ol_client *c, uint64_t id, uint32_t *ret_objects,
	      uint32_t *ret_unaccounted);

/*
 * A client process for storms: connect to @sock, then random creates and
 * destroys of CQs, QPs, WQs, SRQs and MRs (seeded), until killed; or, for
 * half the seeds, kill itself right after sending a destroy. Writes its
 * client id to @report_fd (-1: nowhere) once connected. Never returns.
 */
void ol_storm(const char *sock, uint64_t seed, int report_fd)
	__attribute__((noreturn));

/*
 * Wait until the daemon on @sock lists no object and charges the
 * checker's domain with no more objects than it counts unaccounted (zero
 * on the soft device). 0, -EBUSY with @why after @timeout_ms, or -errno.
 */
int ol_settled(const char *sock, int timeout_ms, char *why, size_t len);

#endif
