// SPDX-License-Identifier: MIT
/* The library's array of families (family.h), made from the one list of
 * them, common/families.def, and the walks over it. */
#include "config.h"

#include <stddef.h>

#include "libclient/events.h"
#include "libclient/family.h"

#define FAMILY(f, F) extern const struct ibc_family ibc_##f##_family;
#include "common/families.def"

static const struct ibc_family *const ibc_families[] = {
#define FAMILY(f, F) &ibc_##f##_family,
#include "common/families.def"
};

#define N_FAMILIES (sizeof(ibc_families) / sizeof(ibc_families[0]))

/* Each walk calls hook @h of every family that has one, with @args. */
#define EACH(h, args)                                          \
	do {                                                   \
		for (size_t i_ = 0; i_ < N_FAMILIES; i_++)     \
			if (ibc_families[i_]->h)               \
				ibc_families[i_]->h args;      \
	} while (0)

const struct ibc_event_handler *ibc_families_event(int body)
{
	for (size_t i = 0; i < N_FAMILIES; i++) {
		const struct ibc_event_handler *const *e;

		for (e = ibc_families[i]->events; e && *e; e++)
			if ((*e)->body == body)
				return *e;
	}
	return NULL;
}

void ibc_families_hello(Rdmab__HelloRequest *hello)
{
	EACH(hello, (hello));
}

void ibc_families_client_free(struct ibc_client *cl)
{
	EACH(client_free, (cl));
}

void ibc_families_ctx_drop(struct ibc_ctx *ctx, int err, const char *why)
{
	EACH(ctx_drop, (ctx, err, why));
}

bool ibc_families_ctx_busy(const struct ibc_ctx *ctx)
{
	for (size_t i = 0; i < N_FAMILIES; i++)
		if (ibc_families[i]->ctx_busy && ibc_families[i]->ctx_busy(ctx))
			return true;
	return false;
}

void ibc_families_ctx_closing(struct ibc_ctx *ctx, bool broker)
{
	EACH(ctx_closing, (ctx, broker));
}

void ibc_families_ctx_teardown(struct ibc_ctx *ctx)
{
	EACH(ctx_teardown, (ctx));
}

void ibc_families_ctx_free(struct ibc_ctx *ctx)
{
	EACH(ctx_free, (ctx));
}

void ibc_families_fork_prepare(struct ibc_ctx *ctx)
{
	EACH(fork_prepare, (ctx));
}

void ibc_families_fork_lock(void)
{
	EACH(fork_lock, ());
}

void ibc_families_fork_unlock(void)
{
	for (size_t i = N_FAMILIES; i-- > 0;)
		if (ibc_families[i]->fork_unlock)
			ibc_families[i]->fork_unlock();
}

void ibc_families_fork_stale(struct ibc_client *cl)
{
	EACH(fork_stale, (cl));
}

void ibc_families_fork_child(struct ibc_client *cl)
{
	EACH(fork_child, (cl));
}
