/* SPDX-License-Identifier: MIT */
/* Shared by the daemon and the library: libibverbs calls with traps. */
#ifndef RDMAB_VERBS_IMPORT_H
#define RDMAB_VERBS_IMPORT_H

struct ibv_context;

/*
 * ibv_import_device() that always consumes @fd, closing it exactly once.
 * libibverbs leaves the descriptor to the caller on some failures (not a
 * uverbs file, no such device, a provider without import) and closes it on
 * others (mlx5 after its context was set up: static UARs, a kernel without
 * the query method), which the man page does not say. Returns 0 with
 * *ret_ctx set, or a negative errno (-EIO when libibverbs gave no reason).
 */
int verbs_import_device(int fd, struct ibv_context **ret_ctx);

#endif
