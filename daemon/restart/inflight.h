/* SPDX-License-Identifier: MIT */
/*
 * Requests read and not yet answered, per connection, in a stored memfd
 * (inflight.c): what the next daemon answers -EAGAIN after a restart.
 */
#ifndef RDMAB_INFLIGHT_H
#define RDMAB_INFLIGHT_H

#include <stdint.h>

struct inflight;

/* A slot as the memfd holds it. */
struct inflight_slot {
	uint64_t conn_id;
	/* The serial + 1 of the request being served; 0: none. */
	uint64_t pending;
};

/* The table's first member: what the two stores of every request reach
 * inline (a call each was most of their cost). */
struct inflight_hot {
	struct inflight_slot *slot;
};

/* A table of @n slots in a new sealed memfd. 0 or -errno. */
int inflight_create(uint32_t n, struct inflight **ret);
void inflight_free(struct inflight *t);
/* Its memfd, owned by the table. */
int inflight_fd(const struct inflight *t);
/* A slot for connection @conn_id: its index, or -1 when none is left
 * (the connection's requests are then not tracked). */
int inflight_take(struct inflight *t, uint64_t conn_id);
void inflight_put(struct inflight *t, int slot);
/* Request @serial of the slot's connection was read / its reply is in the
 * socket. A NULL table or slot -1 does nothing. */
static inline void inflight_read(struct inflight *t, int slot, uint64_t serial)
{
	if (t && slot >= 0)
		__atomic_store_n(
			&((struct inflight_hot *)t)->slot[slot].pending,
			serial + 1, __ATOMIC_RELEASE);
}

static inline void inflight_answered(struct inflight *t, int slot)
{
	if (t && slot >= 0)
		__atomic_store_n(
			&((struct inflight_hot *)t)->slot[slot].pending, 0,
			__ATOMIC_RELEASE);
}
/* A stored table (@fd, borrowed): @fn for each connection with a request
 * read and unanswered. 0, or -EBADMSG for what is no such table. */
int inflight_scan(int fd,
		  void (*fn)(void *arg, uint64_t conn_id, uint64_t serial),
		  void *arg);

#endif
