/* SPDX-License-Identifier: MIT */
/*
 * The dispatcher: decode a connection's packet, find its handler
 * (handler.h) and send the one reply; the last packets of a closing
 * session.
 */
#ifndef RDMAB_DISPATCH_H
#define RDMAB_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/server/handler.h"
#include "proto/wire.h"

struct conn;

/*
 * For test suites only: serve @body_case (one the daemon does not know)
 * with @h, as if it were in the table, so that the dispatcher's checks can
 * be tried on requests the daemon does not have yet. NULL removes it.
 */
void dispatch_set_test_handler(unsigned int body_case, const struct handler *h);

/* The handler for a body case, or NULL for one this daemon does not know. */
const struct handler *dispatch_lookup(unsigned int body_case);

/*
 * Decode and serve one packet of @c. Owns @fds. Returns false when @c is
 * to be closed (by the loop, once its replies are flushed: never before
 * this returns); true when @c is open and may be read again.
 */
bool dispatch_packet(struct conn *c, const uint8_t *buf, size_t len,
		     struct wire_fds *fds);

/*
 * @c's session ends holding objects (objects_client_holds()): read what
 * its client sent and the daemon has not, and serve the H_DRAIN requests
 * in it. After shutdown(SHUT_RD) nothing more can be queued, and
 * SEQPACKET keeps a connection's packets in order, so every unregister
 * the client sent before a kernel destroy is applied before the broker
 * could destroy that handle itself.
 */
void dispatch_drain(struct conn *c);

/* Queue an error reply (@err positive) carrying @serial. */
void dispatch_error(struct conn *c, uint64_t serial, int err,
		    const char *message);

#endif
