// SPDX-License-Identifier: MIT
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "tests/verbs-shim.h"

enum verbs_shim_mode verbs_shim_mode = VERBS_SHIM_REAL;
unsigned int verbs_shim_calls;
void (*verbs_shim_destroy_hook)(struct ibv_cq *cq);
int verbs_shim_destroy_ret;
/* The next fake0 CQ's handle. */
static uint32_t shim_cq_handle = 5;

static struct ibv_device shim_dev = { .name = "fake0" };
static struct ibv_device *shim_list[2] = { &shim_dev, NULL };

/* libibverbs' own definition of @name; aborts when there is none, which
 * only a broken link can cause. */
static void *shim_real(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (!f)
		abort();
	return f;
}

#define SHIM_REAL(name) ((__typeof__(&name))shim_real(#name))
/* The build hides symbols by default; these must interpose. */
#define SHIM_EXPORT __attribute__((visibility("default")))

SHIM_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	if (verbs_shim_mode == VERBS_SHIM_REAL)
		return SHIM_REAL(ibv_get_device_list)(num_devices);
	verbs_shim_calls++;
	if (num_devices)
		*num_devices = 1;
	return shim_list;
}

SHIM_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	if (list != shim_list)
		SHIM_REAL(ibv_free_device_list)(list);
}

static struct ibv_xrcd *shim_open_xrcd(struct ibv_context *context,
				       struct ibv_xrcd_init_attr *attr)
{
	struct ibv_xrcd *x = calloc(1, sizeof(*x));

	(void)attr;
	verbs_shim_calls++;
	if (x)
		x->context = context;
	return x;
}

static int shim_close_xrcd(struct ibv_xrcd *xrcd)
{
	verbs_shim_calls++;
	if (verbs_shim_destroy_ret)
		return verbs_shim_destroy_ret;
	free(xrcd);
	return 0;
}

/* VERBS_SHIM_OWN's context: extended, for the inline XRCD verbs. */
static struct ibv_context *shim_own_context(void)
{
	struct verbs_context *vc = calloc(1, sizeof(*vc));

	if (!vc)
		return NULL;
	vc->sz = sizeof(*vc);
	vc->open_xrcd = shim_open_xrcd;
	vc->close_xrcd = shim_close_xrcd;
	vc->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	vc->context.device = &shim_dev;
	vc->context.cmd_fd = vc->context.async_fd = -1;
	return &vc->context;
}

SHIM_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct ibv_context *ctx;

	if (device != &shim_dev)
		return SHIM_REAL(ibv_open_device)(device);
	verbs_shim_calls++;
	if (verbs_shim_mode == VERBS_SHIM_OWN)
		return shim_own_context();
	if (verbs_shim_mode != VERBS_SHIM_NO_FDS)
		return NULL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return NULL;
	ctx->device = &shim_dev;
	ctx->cmd_fd = ctx->async_fd = -1;
	return ctx;
}

SHIM_EXPORT int ibv_close_device(struct ibv_context *context)
{
	if (context->device != &shim_dev)
		return SHIM_REAL(ibv_close_device)(context);
	/* An imported one keeps its descriptor, as libibverbs does. */
	if (context->cmd_fd >= 0)
		close(context->cmd_fd);
	if (context->abi_compat == __VERBS_ABI_IS_EXTENDED)
		free(verbs_get_ctx(context));
	else
		free(context);
	return 0;
}

SHIM_EXPORT int ibv_query_device(struct ibv_context *context,
				 struct ibv_device_attr *device_attr)
{
	if (context->device != &shim_dev)
		return SHIM_REAL(ibv_query_device)(context, device_attr);
	return EOPNOTSUPP;
}

/* verbs.h makes ibv_query_port() an inline wrapper of this symbol. */
#undef ibv_query_port
SHIM_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			       struct _compat_ibv_port_attr *port_attr)
{
	if (context->device != &shim_dev)
		return SHIM_REAL(ibv_query_port)(context, port_num, port_attr);
	return EOPNOTSUPP;
}

SHIM_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	struct ibv_context *ctx;

	if (verbs_shim_mode == VERBS_SHIM_REAL)
		return SHIM_REAL(ibv_import_device)(cmd_fd);
	verbs_shim_calls++;
	if (verbs_shim_mode == VERBS_SHIM_OWN)
		errno = EOPNOTSUPP;
	if (verbs_shim_mode != VERBS_SHIM_IMPORT)
		return NULL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return NULL;
	ctx->device = &shim_dev;
	ctx->cmd_fd = cmd_fd;
	ctx->async_fd = -1;
	return ctx;
}

SHIM_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context,
					 uint32_t pd_handle)
{
	struct ibv_pd *pd;

	if (context->device != &shim_dev)
		return SHIM_REAL(ibv_import_pd)(context, pd_handle);
	verbs_shim_calls++;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	pd->context = context;
	pd->handle = pd_handle;
	return pd;
}

SHIM_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct ibv_pd *pd;

	if (context->device != &shim_dev)
		return SHIM_REAL(ibv_alloc_pd)(context);
	verbs_shim_calls++;
	pd = calloc(1, sizeof(*pd));
	if (pd)
		pd->context = context;
	return pd;
}

SHIM_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	if (pd->context->device != &shim_dev)
		return SHIM_REAL(ibv_dealloc_pd)(pd);
	free(pd);
	return 0;
}

SHIM_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
	if (pd->context->device != &shim_dev) {
		SHIM_REAL(ibv_unimport_pd)(pd);
		return;
	}
	free(pd);
}

SHIM_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
					 void *cq_context,
					 struct ibv_comp_channel *channel,
					 int comp_vector)
{
	struct ibv_cq *cq;

	if (context->device != &shim_dev)
		return SHIM_REAL(ibv_create_cq)(context, cqe, cq_context,
						channel, comp_vector);
	verbs_shim_calls++;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	cq->context = context;
	cq->cq_context = cq_context;
	cq->channel = channel;
	cq->cqe = cqe;
	cq->handle = shim_cq_handle++;
	return cq;
}

SHIM_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	if (cq->context->device != &shim_dev)
		return SHIM_REAL(ibv_destroy_cq)(cq);
	verbs_shim_calls++;
	if (verbs_shim_destroy_hook)
		verbs_shim_destroy_hook(cq);
	if (verbs_shim_destroy_ret)
		return verbs_shim_destroy_ret;
	free(cq);
	return 0;
}
