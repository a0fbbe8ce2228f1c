// SPDX-License-Identifier: MIT
/*
 * The interposer's devices and contexts: the device list (libibverbs' own,
 * with the broker's soft device added), the session with the broker, and
 * ibv_open_device/ibv_close_device through ibc_open/ibc_close. The real
 * libibverbs is reached by its path (IBVERBS_REAL_PATH), never by name:
 * under the forwarding libibverbs.so.1 the name is this library's.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "interpose/interpose.h"

__thread unsigned int ibcv_inside;

static pthread_mutex_t ibcv_lock = PTHREAD_MUTEX_INITIALIZER;
/* Under ibcv_lock: the session, and the contexts opened through it. */
static struct ibc_client *ibcv_cl;
static struct ibcv_ctx *ibcv_ctxs;

void *ibcv_real(const char *name, const char *version)
{
	static void *lib;
	void *f;

	if (!lib)
		lib = dlopen(IBVERBS_REAL_PATH, RTLD_NOW | RTLD_LOCAL);
	f = lib ? dlvsym(lib, name, version) : NULL;
	if (!f)
		abort();
	return f;
}

/* fork(): the interposer's locks, taken before libibclient's (whose
 * handlers were installed first, so run after these), released in both
 * processes, so that a fork while another thread is in a create leaves
 * the child no lock held. */
static void ibcv_fork_prepare(void)
{
	pthread_mutex_lock(&ibcv_lock);
	pthread_mutex_lock(&ibcv_soft_lock);
	pthread_mutex_lock(&ibcv_rss_lock);
	pthread_mutex_lock(&ibcv_live_lock);
}

static void ibcv_fork_done(void)
{
	pthread_mutex_unlock(&ibcv_live_lock);
	pthread_mutex_unlock(&ibcv_rss_lock);
	pthread_mutex_unlock(&ibcv_soft_lock);
	pthread_mutex_unlock(&ibcv_lock);
}

static pthread_once_t ibcv_fork_once = PTHREAD_ONCE_INIT;

static void ibcv_fork_install(void)
{
	/* Without it a fork may deadlock the child, as without the
	 * interposer it cannot: nothing to answer but to go on. */
	(void)pthread_atfork(ibcv_fork_prepare, ibcv_fork_done, ibcv_fork_done);
}

struct ibc_client *ibcv_client(void)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_FLAGS,
		/* rxe, siw and every provider without import still work:
		 * the device is opened here, the broker sees the session. */
		.flags = IBC_CONNECT_ALLOW_OWN_CONTEXT,
	};
	struct ibc_client *cl;
	int err = 0;

	pthread_mutex_lock(&ibcv_lock);
	/* Inherited through fork(): the child makes its own session. */
	if (ibcv_cl && ibc_stale(ibcv_cl))
		ibcv_cl = NULL;
	if (!ibcv_cl)
		err = ibc_connect(&attr, &ibcv_cl);
	cl = ibcv_cl;
	pthread_mutex_unlock(&ibcv_lock);
	/* After ibc_connect installed libibclient's handlers. */
	if (cl)
		pthread_once(&ibcv_fork_once, ibcv_fork_install);
	if (err < 0) {
		errno = -err;
		return NULL;
	}
	return cl;
}

struct ibcv_ctx *ibcv_ctx_find(const struct ibv_context *vctx)
{
	struct ibcv_ctx *c;

	if (!vctx)
		return NULL;
	pthread_mutex_lock(&ibcv_lock);
	for (c = ibcv_ctxs; c; c = c->next)
		if (c->vctx == vctx)
			break;
	pthread_mutex_unlock(&ibcv_lock);
	return c;
}

struct ibv_pd *ibcv_domain_pd_get(struct ibcv_ctx *c,
				  struct ibv_pd *(*make)(struct ibcv_ctx *c))
{
	struct ibv_pd *pd, *made = NULL;

	/* Made outside the lock, which is taken before libibclient's. */
	pthread_mutex_lock(&ibcv_lock);
	pd = c->domain_pd;
	pthread_mutex_unlock(&ibcv_lock);
	if (!pd) {
		made = make(c);
		if (!made)
			return NULL;
	}
	pthread_mutex_lock(&ibcv_lock);
	if (!c->domain_pd) {
		c->domain_pd = made;
		made = NULL;
	}
	pd = c->domain_pd;
	c->domain_pds++;
	pthread_mutex_unlock(&ibcv_lock);
	/* Another thread's was first: the soft device's stand-in is the
	 * interposer's memory; the verbs one is the library's, the same. */
	if (made && c->soft)
		free(made);
	return pd;
}

int ibcv_domain_pd_put(const struct ibv_pd *pd)
{
	int ret = -ENOENT;

	pthread_mutex_lock(&ibcv_lock);
	for (struct ibcv_ctx *c = ibcv_ctxs; c; c = c->next) {
		if (!pd || c->domain_pd != pd)
			continue;
		/* The domain's PD outlives the process's hold: never
		 * EBUSY, and one dealloc per alloc. */
		ret = c->domain_pds ? 0 : EINVAL;
		if (c->domain_pds)
			c->domain_pds--;
		break;
	}
	pthread_mutex_unlock(&ibcv_lock);
	return ret;
}

/* The broker's entry for @name; NULL when it serves no such device. */
static const struct ibc_device_info *ibcv_broker_device(struct ibc_client *cl,
							const char *name)
{
	for (uint32_t i = 0; i < cl->info.num_devices; i++)
		if (!strcmp(cl->devices[i].name, name))
			return &cl->devices[i];
	return NULL;
}

/* --- the device list ---------------------------------------------------- */

#define IBCV_LIST_MAGIC 0x69626376u

/* What ibv_get_device_list answers: libibverbs' list, freed with it, and
 * the array the application sees. */
struct ibcv_list {
	uint32_t magic;
	struct ibv_device **real;
	struct ibv_device *devs[];
};

IBCV_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	__typeof__(&ibv_get_device_list) real =
		IBCV_REAL(ibv_get_device_list, "IBVERBS_1.1");
	struct ibv_device **rl;
	struct ibcv_list *l;
	struct ibc_client *cl;
	int n = 0, k = 0;

	if (ibcv_inside)
		return real(num_devices);
	ibcv_inside++;
	cl = ibcv_client();
	if (!cl) {
		ibcv_inside--;
		return NULL;
	}
	/* No RDMA in the kernel at all: the broker's soft device still
	 * answers. */
	rl = real(&n);
	if (!rl)
		n = 0;
	l = calloc(1,
		   sizeof(*l) + sizeof(l->devs[0]) *
					((size_t)n + cl->info.num_devices + 1));
	if (!l) {
		if (rl)
			IBCV_REAL(ibv_free_device_list, "IBVERBS_1.1")(rl);
		ibcv_inside--;
		errno = ENOMEM;
		return NULL;
	}
	l->magic = IBCV_LIST_MAGIC;
	l->real = rl;
	for (int i = 0; i < n; i++)
		l->devs[k++] = rl[i];
	for (uint32_t i = 0; i < cl->info.num_devices; i++) {
		const struct ibc_device_info *d = &cl->devices[i];
		struct ibv_device *sd;

		if (strcmp(d->kind, "soft"))
			continue;
		sd = ibcv_soft_device(d->name);
		if (sd)
			l->devs[k++] = sd;
	}
	ibcv_inside--;
	if (num_devices)
		*num_devices = k;
	return l->devs;
}

IBCV_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	__typeof__(&ibv_free_device_list) real =
		IBCV_REAL(ibv_free_device_list, "IBVERBS_1.1");
	struct ibcv_list *l;

	if (ibcv_inside || !list) {
		real(list);
		return;
	}
	l = (struct ibcv_list *)((char *)list -
				 offsetof(struct ibcv_list, devs));
	if (l->magic != IBCV_LIST_MAGIC) {
		real(list);
		return;
	}
	if (l->real)
		real(l->real);
	l->magic = 0;
	free(l);
}

/* --- contexts ----------------------------------------------------------- */

IBCV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	__typeof__(&ibv_open_device) real =
		IBCV_REAL(ibv_open_device, "IBVERBS_1.1");
	struct ibc_client *cl;
	struct ibcv_ctx *c;
	const char *name;
	int err;

	if (ibcv_inside || !device)
		return real(device);
	ibcv_inside++;
	cl = ibcv_client();
	if (!cl) {
		ibcv_inside--;
		return NULL;
	}
	name = device->name;
	if (!ibcv_is_soft_device(device) && !ibcv_broker_device(cl, name)) {
		/* A device the broker does not serve: the program's own,
		 * as without the interposer. */
		struct ibv_context *own = real(device);

		ibcv_inside--;
		if (own)
			ibcv_live_verbs_ctx(1);
		return own;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		ibcv_inside--;
		return ibcv_fail_null(-ENOMEM);
	}
	err = ibc_open(cl, name, &c->ctx);
	if (err == 0 && ibcv_is_soft_device(device))
		err = ibcv_soft_open(c, device);
	else if (err == 0) {
		c->vctx = ibc_verbs_context(c->ctx);
		err = c->vctx ? 0 : -EIO;
		if (c->vctx)
			ibcv_wrap_ops(c);
	}
	if (err < 0) {
		if (c->ctx)
			ibc_close(c->ctx);
		free(c);
		ibcv_inside--;
		return ibcv_fail_null(err);
	}
	pthread_mutex_lock(&ibcv_lock);
	c->next = ibcv_ctxs;
	ibcv_ctxs = c;
	pthread_mutex_unlock(&ibcv_lock);
	ibcv_inside--;
	if (!c->soft)
		ibcv_live_verbs_ctx(1);
	ibcv_live_add(c->vctx);
	return c->vctx;
}

IBCV_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct ibcv_ctx *c, **pp;

	if (ibcv_inside)
		return IBCV_REAL(ibv_close_device, "IBVERBS_1.1")(context);
	pthread_mutex_lock(&ibcv_lock);
	for (pp = &ibcv_ctxs; *pp; pp = &(*pp)->next)
		if ((*pp)->vctx == context)
			break;
	c = *pp;
	if (c)
		*pp = c->next;
	pthread_mutex_unlock(&ibcv_lock);
	if (!c) {
		/* Closed already (the soft device's memory is the
		 * interposer's), or a context the interposer did not open. */
		int ret = ibcv_live_check(context);

		if (ret) {
			errno = ret;
			return -1;
		}
		ret = IBCV_REAL(ibv_close_device, "IBVERBS_1.1")(context);
		if (ret == 0)
			ibcv_live_verbs_ctx(-1);
		return ret;
	}
	ibcv_live_del(context);
	if (!c->soft)
		ibcv_live_verbs_ctx(-1);
	ibcv_rss_ctx_closing(c);
	ibcv_inside++;
	/* The provider's ops back, for libibverbs' own teardown. */
	if (!c->soft)
		ibcv_unwrap_ops(c);
	ibc_close(c->ctx);
	if (c->soft)
		ibcv_soft_close(c);
	ibcv_inside--;
	free(c);
	return 0;
}

/* --- queries: answered here for the soft device only ------------------- */

IBCV_EXPORT int ibv_query_device(struct ibv_context *context,
				 struct ibv_device_attr *attr)
{
	struct ibcv_ctx *c = ibcv_inside ? NULL : ibcv_ctx_find(context);

	if (!c || !c->soft)
		return IBCV_REAL(ibv_query_device, "IBVERBS_1.1")(context,
								  attr);
	return ibcv_soft_query_device(c, attr);
}

/* The header's ibv_query_port() is a macro over this symbol. */
#undef ibv_query_port

/* The legacy entry, which ___ibv_query_port() calls for contexts without
 * an extended query_port: the soft context has one. */
IBCV_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port,
			       struct _compat_ibv_port_attr *attr)
{
	struct ibcv_ctx *c = ibcv_inside ? NULL : ibcv_ctx_find(context);

	if (!c || !c->soft)
		return IBCV_REAL(ibv_query_port, "IBVERBS_1.1")(context, port,
								attr);
	return ibcv_soft_query_port(c, port, (struct ibv_port_attr *)attr);
}

IBCV_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port,
			      int index, union ibv_gid *gid)
{
	struct ibcv_ctx *c = ibcv_inside ? NULL : ibcv_ctx_find(context);

	if (!c || !c->soft)
		return IBCV_REAL(ibv_query_gid, "IBVERBS_1.1")(context, port,
							       index, gid);
	/* The soft device has no GID table (gid_tbl_len 0). */
	(void)gid;
	errno = EINVAL;
	return -1;
}

IBCV_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	if (ibcv_is_soft_device(device))
		return 0;
	return IBCV_REAL(ibv_get_device_guid, "IBVERBS_1.1")(device);
}

IBCV_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	if (ibcv_is_soft_device(device))
		return -1;
	return IBCV_REAL(ibv_get_device_index, "IBVERBS_1.9")(device);
}

/* As ibc_fork_init(3): the library knows this process's pins, on the soft
 * device too, and tells the broker. */
IBCV_EXPORT int ibv_fork_init(void)
{
	int err;

	if (ibcv_inside)
		return IBCV_REAL(ibv_fork_init, "IBVERBS_1.1")();
	ibcv_inside++;
	err = ibc_fork_init();
	ibcv_inside--;
	return err < 0 ? -err : 0;
}
