/* SPDX-License-Identifier: MIT */
/*
 * The contexts' hooks (ctx.h's struct dctx_hooks): what a context's turns
 * do to the modules above it, the registry's records and the unaccounted
 * count. server_init() sets core->ctx_hooks to them.
 */
#ifndef RDMAB_CTX_HOOKS_H
#define RDMAB_CTX_HOOKS_H

#include "daemon/registry/ctx.h"

extern const struct dctx_hooks registry_ctx_hooks;

#endif
