/* SPDX-License-Identifier: MIT */
/*
 * What the families' restores (dm-state.c, xrcd-state.c, rss-state.c) look
 * up by the ids and names their records carry: the sessions and contexts
 * the registry's restore adopted before them (restart.h's order).
 */
#ifndef RDMAB_FAMILY_STATE_H
#define RDMAB_FAMILY_STATE_H

#include <stddef.h>
#include <stdint.h>

struct core;
struct client;
struct dctx;
struct domain;

/* The adopted session of client @id, or NULL. */
struct client *state_client(struct core *core, uint64_t id);
/* Context @id in any domain, or NULL. */
struct dctx *state_ctx(struct core *core, uint64_t id);
/* The domain named @name, or NULL. */
struct domain *state_domain(struct core *core, const char *name);

/* A family's descriptor's name in the fd store: "rb.@what.@key". */
void state_fd_name(char *buf, size_t len, const char *what, uint64_t key);
/* Record (@kind, @key) ends, and the descriptor "rb.@what.@key" leaves
 * the store (by name: its owner may have closed it already). No-ops with
 * restart off. */
void state_forget(struct core *core, uint32_t kind, uint64_t key,
		  const char *what);

#endif
