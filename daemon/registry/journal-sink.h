/* SPDX-License-Identifier: MIT */
/*
 * The registry's journal sink: the changes of contexts, sessions' holds,
 * records and their owners that a restart must find again, told to
 * whoever keeps them. Restart (restart.c) sits above the registry, since
 * it reads what it writes (ctx.h, objects.h): it implements the sink and
 * sets core->sink when it starts the journal (restart_init()). NULL
 * (--no-restart): nothing is kept and nothing is called. So no module of
 * the registry names restart, and its records' layout stays restart's.
 * Each hook is restart.h's function of the same name (restart_ctx_opened()
 * for ctx_opened...), which says what it writes.
 */
#ifndef RDMAB_JOURNAL_SINK_H
#define RDMAB_JOURNAL_SINK_H

#include <errno.h>
#include <stdint.h>

#include "daemon/registry/core.h"

struct dctx;
struct domain;
struct conn_ctx;
struct obj;
struct obj_owner;
struct obj_spec;
struct obj_made;
struct Rdmab__ObjAttr;

struct journal_sink {
	void (*ctx_opened)(struct core *core, const struct dctx *x);
	void (*ctx_closed)(struct core *core, const struct dctx *x);
	void (*ctx_saved)(struct core *core, const struct dctx *x);
	void (*ctx_fd_drop)(struct core *core, const struct dctx *x);
	void (*hold_saved)(struct core *core, uint64_t client_id,
			   struct conn_ctx *cc);
	void (*hold_gone)(struct core *core, struct conn_ctx *cc);
	void (*obj_saved)(struct core *core, const struct obj *o);
	void (*obj_made)(struct core *core, const struct obj *o,
			 const struct obj_spec *spec,
			 const struct obj_made *made,
			 const struct Rdmab__ObjAttr *attr);
	void (*obj_gone)(struct core *core, const struct obj *o);
	void (*owner_saved)(struct core *core, struct obj_owner *ow);
	void (*owner_gone)(struct core *core, const struct obj_owner *ow);
	/* A record leaves the registry while its object stays in a
	 * device whose kernel is the broker (told before obj_gone, which
	 * then keeps the record); a domain's own books changed, or it
	 * goes. */
	void (*obj_unnamed)(struct core *core, const struct obj *o);
	void (*domain_saved)(struct core *core, const struct domain *d);
	void (*domain_gone)(struct core *core, const struct domain *d);
	/* A watch's pidfd (obj-watch.c) is kept under @key (a client id)
	 * until the watch goes: 0, or a negative errno when it is not
	 * kept (no store, or past its bound). */
	int (*pidfd_kept)(struct core *core, uint64_t key, int pidfd);
	void (*pidfd_gone)(struct core *core, uint64_t key);
};

static inline void sink_ctx_opened(struct core *core, const struct dctx *x)
{
	if (core->sink)
		core->sink->ctx_opened(core, x);
}

static inline void sink_ctx_closed(struct core *core, const struct dctx *x)
{
	if (core->sink)
		core->sink->ctx_closed(core, x);
}

static inline void sink_ctx_saved(struct core *core, const struct dctx *x)
{
	if (core->sink)
		core->sink->ctx_saved(core, x);
}

static inline void sink_ctx_fd_drop(struct core *core, const struct dctx *x)
{
	if (core->sink)
		core->sink->ctx_fd_drop(core, x);
}

static inline void sink_hold_saved(struct core *core, uint64_t client_id,
				   struct conn_ctx *cc)
{
	if (core->sink)
		core->sink->hold_saved(core, client_id, cc);
}

static inline void sink_hold_gone(struct core *core, struct conn_ctx *cc)
{
	if (core->sink)
		core->sink->hold_gone(core, cc);
}

static inline void sink_obj_saved(struct core *core, const struct obj *o)
{
	if (core->sink)
		core->sink->obj_saved(core, o);
}

static inline void sink_obj_made(struct core *core, const struct obj *o,
				 const struct obj_spec *spec,
				 const struct obj_made *made,
				 const struct Rdmab__ObjAttr *attr)
{
	if (core->sink)
		core->sink->obj_made(core, o, spec, made, attr);
}

static inline void sink_obj_gone(struct core *core, const struct obj *o)
{
	if (core->sink)
		core->sink->obj_gone(core, o);
}

static inline void sink_owner_saved(struct core *core, struct obj_owner *ow)
{
	if (core->sink)
		core->sink->owner_saved(core, ow);
}

static inline void sink_owner_gone(struct core *core,
				   const struct obj_owner *ow)
{
	if (core->sink)
		core->sink->owner_gone(core, ow);
}

static inline void sink_obj_unnamed(struct core *core, const struct obj *o)
{
	if (core->sink)
		core->sink->obj_unnamed(core, o);
}

static inline void sink_domain_saved(struct core *core, const struct domain *d)
{
	if (core->sink)
		core->sink->domain_saved(core, d);
}

static inline void sink_domain_gone(struct core *core, const struct domain *d)
{
	if (core->sink)
		core->sink->domain_gone(core, d);
}

static inline int sink_pidfd_kept(struct core *core, uint64_t key, int pidfd)
{
	return core->sink ? core->sink->pidfd_kept(core, key, pidfd) : -ENOSYS;
}

static inline void sink_pidfd_gone(struct core *core, uint64_t key)
{
	if (core->sink)
		core->sink->pidfd_gone(core, key);
}

#endif
