/* SPDX-License-Identifier: MIT */
/*
 * The daemon in the in-VM program's own process, on a real device, for
 * the programs that look into its registry (vm-cleanup, vm-unaccounted):
 * its server in a fresh directory, its loop turned by hand, and this
 * process's session with the domain's context open. Failures are CHECK
 * lines (vmutil.h) named @tag-daemon and @tag-context.
 */
#ifndef RDMAB_VMSRV_H
#define RDMAB_VMSRV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <infiniband/verbs.h>

#include "daemon/registry/ctx.h"
#include "daemon/registry/objects.h"
#include "daemon/server/server.h"
#include "tests/objlib.h"

extern struct server vs_srv;
/* The server's socket, for the forked clients. */
extern char vs_sock[128];

/* Start the server on device @dev_name, at LOG_INFO, in a fresh
 * /tmp/vm-@tag-XXXXXX: the device, or NULL (said in a CHECK line). */
struct device *vs_start(const char *tag, const char *dev_name);
/* @parent's session on a socketpair, with the domain's context open: the
 * context, its libibverbs context and PD, or NULL (said). */
struct dctx *vs_open(const char *tag, struct ol_client *parent,
		     struct ibv_context **ret_vctx, struct ibv_pd **ret_pd);
/* Stop the server and remove its directory. */
void vs_stop(void);

/* One turn of the loop, without waiting. */
void vs_pump(void);
/* Turn the loop until @fd is readable (true) or for @ms (false). */
bool vs_pump_until_readable(int fd, int ms);
/* The registry's owner of client @client_id, or NULL. */
struct obj_owner *vs_owner_of(uint64_t client_id);
/* fork() for a client process: stdio flushed first, and the child dies
 * with this process (PR_SET_PDEATHSIG). */
pid_t vs_fork(void);

#endif
