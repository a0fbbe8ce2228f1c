// SPDX-License-Identifier: MIT
/*
 * The contexts' hooks (ctx-hooks.h): a context sits below the records
 * made in it and below the count of what nobody names there, which both
 * know a struct dctx; this table is how ctx.c reaches them.
 */
#include "config.h"

#include "daemon/registry/ctx-hooks.h"
#include "daemon/registry/objects.h"
#include "daemon/registry/unaccounted.h"

const struct dctx_hooks registry_ctx_hooks = {
	.opened = unaccounted_ctx_opened,
	.let_go = objects_ctx_let_go,
	.recount = unaccounted_refresh,
};
