// SPDX-License-Identifier: MIT
/*
 * Fork: ibc_fork_init() and the fork state, and the atfork handlers that
 * keep a forked child off its parent's broker resources (ibc_fork_init(3)).
 *
 * Before fork() the handlers take every library lock, in the lock order
 * (client.h), so that the child inherits no structure half changed, and
 * mark the device's mappings MADV_DONTFORK and have the DM code keep its
 * mappings out of the child (its family's fork_prepare hook; dm.c marks the
 * session's DM status page when it maps it). In the child the inherited
 * descriptors are covered with a placeholder (closing them would free their
 * numbers for unrelated files the application opens next) and every inherited
 * session is marked stale.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "libclient/family.h"
#include "libclient/objects.h"

/* Guards the list below and the library's fork state: the lock order's 1
 * (client.h). */
static pthread_mutex_t fork_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibc_client *fork_clients;
/* Signalled when a client is held by ibc_fork_init() no more. */
static pthread_cond_t fork_cond = PTHREAD_COND_INITIALIZER;
/* ibc_fork_init() succeeded: the library's own state, which the soft
 * device has too. */
static bool fork_enabled;
/* Memory was ever pinned for the device (atomic). */
static bool fork_pinned;
/* A verbs context was ever attached (atomic). */
static bool fork_device;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static int fork_once_err;
/* The forking process, for the child's sentences. */
static pid_t fork_parent_pid;

/* The sessions the parent had when it forked this process, newest first:
 * what a child's ibc_connect names as its parent. Kept apart from the
 * clients, which the child may disconnect before it connects. */
#define FORK_PARENTS 8
static struct fork_parent {
	char sock_path[sizeof(((struct ibc_client *)0)->sock_path)];
	uint64_t id;
	uint8_t secret[sizeof(((struct ibc_client *)0)->secret)];
} fork_parents[FORK_PARENTS];
static unsigned int fork_n_parents;

void ibc_fork_note_pin(void)
{
	__atomic_store_n(&fork_pinned, true, __ATOMIC_RELAXED);
}

int ibc_stale_error(const struct ibc_client *cl)
{
	return ibc_set_error(-ESTALE, "%s", cl->dead_message);
}

/* --- before fork(): the locks and MADV_DONTFORK ------------------------ */

void ibc_fork_note_device(void)
{
	__atomic_store_n(&fork_device, true, __ATOMIC_RELAXED);
}

/* Did this process ever map a uverbs device? Sticky: a context being
 * attached is in no list yet, and the scan of the maps finds nothing
 * where there is nothing. */
static bool fork_maps_device(void)
{
	return __atomic_load_n(&fork_device, __ATOMIC_RELAXED);
}

/* One line of /proc/self/maps: a mapping of a uverbs device file (the
 * doorbells, UARs, queues and DM the provider mapped) is not copied. The
 * path is what follows the inode: a '/' before it may be inside an
 * anonymous mapping's name, "[anon:/dev/infiniband/uverbs0]". */
static void fork_dontfork_line(const char *line)
{
	unsigned long start, end;
	int path = -1;

	if (sscanf(line, "%lx-%lx %*s %*x %*x:%*x %*u %n", &start, &end,
		   &path) != 2 ||
	    path < 0 || end <= start ||
	    strncmp(line + path, "/dev/infiniband/uverbs", 22))
		return;
	/* A failure leaves the mapping copied, as without the library. */
	madvise((void *)start, end - start, MADV_DONTFORK);
}

/* Walk /proc/self/maps in a fixed buffer (the fork lock guards it): no
 * allocation while every library lock is held. */
static void fork_dontfork_device(void)
{
	static char buf[16384];
	size_t have = 0;
	bool skip = false;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		char *p = buf, *nl;

		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = '\0';
		while ((nl = memchr(p, '\n', have - (size_t)(p - buf)))) {
			*nl = '\0';
			if (!skip)
				fork_dontfork_line(p);
			skip = false;
			p = nl + 1;
		}
		have -= (size_t)(p - buf);
		memmove(buf, p, have);
		/* A line longer than the buffer (a long file name) is no
		 * device's: drop what came of it. */
		if (have == sizeof(buf) - 1) {
			have = 0;
			skip = true;
		}
	}
	close(fd);
}

static void fork_prepare(void)
{
	pthread_mutex_lock(&fork_lock);
	fork_parent_pid = getpid();
	for (struct ibc_client *cl = fork_clients; cl; cl = cl->fork_next)
		pthread_mutex_lock(&cl->lock);
	for (struct ibc_client *cl = fork_clients; cl; cl = cl->fork_next)
		for (struct ibc_ctx *ctx = cl->ctxs; ctx; ctx = ctx->next) {
			pthread_mutex_lock(&ctx->lock);
			/* Here rather than at each import, where a madvise()
			 * would cost every DM a system call and a VMA split. */
			ibc_families_fork_prepare(ctx);
		}
	ibc_families_fork_lock();
	/* The DM status page was marked when it was mapped (once a
	 * session); the provider's mappings are found here. */
	if (fork_maps_device())
		fork_dontfork_device();
}

static void fork_unlock_all(void)
{
	ibc_families_fork_unlock();
	for (struct ibc_client *cl = fork_clients; cl; cl = cl->fork_next)
		for (struct ibc_ctx *ctx = cl->ctxs; ctx; ctx = ctx->next)
			pthread_mutex_unlock(&ctx->lock);
	for (struct ibc_client *cl = fork_clients; cl; cl = cl->fork_next)
		pthread_mutex_unlock(&cl->lock);
	pthread_mutex_unlock(&fork_lock);
}

static void fork_parent(void)
{
	fork_unlock_all();
}

/* --- in the child: placeholders and stale sessions --------------------- */

/* Cover @fd with the placeholder @ph: the number stays taken, CLOEXEC,
 * and names nothing of the parent's. */
static void fork_cover(int ph, int fd)
{
	if (fd < 0)
		return;
	if (ph >= 0 && dup3(ph, fd, O_CLOEXEC) == fd)
		return;
	/* No placeholder (no descriptor left): closing is what remains;
	 * the parent's resource must not stay reachable. */
	close(fd);
}

static void fork_stale_ctx(struct ibc_ctx *ctx, int ph)
{
	fork_cover(ph, ctx->soft_fd);
	if (ctx->vctx) {
		fork_cover(ph, ctx->vctx->cmd_fd);
		fork_cover(ph, ctx->vctx->async_fd);
	}
	for (struct ibc_obj *o = ctx->objs; o; o = o->next) {
		const struct ibv_cq *cq = o->vobj;

		if (o->kind == IBC_OBJ_CQ && cq && cq->channel)
			fork_cover(ph, cq->channel->fd);
	}
}

void ibc_fork_ctx_close(struct ibc_ctx *ctx)
{
	/* Completion channels are the application's: it closes them with
	 * ibv_destroy_comp_channel(). */
	if (ctx->soft_fd >= 0)
		close(ctx->soft_fd);
	ctx->soft_fd = -1;
	if (!ctx->vctx)
		return;
	if (ctx->vctx->async_fd >= 0 &&
	    ctx->vctx->async_fd != ctx->vctx->cmd_fd)
		close(ctx->vctx->async_fd);
	if (ctx->vctx->cmd_fd >= 0)
		close(ctx->vctx->cmd_fd);
	ctx->vctx->async_fd = ctx->vctx->cmd_fd = -1;
}

static void fork_stale_client(struct ibc_client *cl, int ph)
{
	pthread_condattr_t ca;

	if (!cl->stale && cl->has_secret && fork_n_parents < FORK_PARENTS) {
		struct fork_parent *p = &fork_parents[fork_n_parents++];

		memcpy(p->sock_path, cl->sock_path, sizeof(p->sock_path));
		p->id = cl->info.client_id;
		memcpy(p->secret, cl->secret, sizeof(p->secret));
	}
	if (!cl->stale) {
		cl->stale = true;
		cl->dead = -ESTALE;
		snprintf(cl->dead_message, sizeof(cl->dead_message),
			 "client %llu is the session of process %d, which "
			 "forked this one: a child inherits no session "
			 "(ibc_connect() makes one of its own)",
			 (unsigned long long)cl->info.client_id,
			 (int)fork_parent_pid);
		fork_cover(ph, cl->sock);
		fork_cover(ph, cl->epoll_fd);
		fork_cover(ph, cl->event_fd);
		for (struct ibc_ctx *ctx = cl->ctxs; ctx; ctx = ctx->next)
			fork_stale_ctx(ctx, ph);
		ibc_families_fork_stale(cl);
	}
	/* The parent's other threads are not here: nobody reads or waits,
	 * and a condition variable they waited on would never let its
	 * destroy return. */
	cl->reading = false;
	cl->reading_bare = false;
	ibc_fork_drop_waiters(cl);
	cl->waiters = NULL;
	cl->fd_waiters = 0;
	cl->fork_refs = 0;
	ibc_families_fork_child(cl);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cl->cond, &ca);
	pthread_condattr_destroy(&ca);
}

static void fork_child(void)
{
	/* O_PATH: every read, write and ioctl fails (EBADF), so a raw verbs
	 * call on an inherited context cannot "succeed" through it, as it
	 * would on /dev/null (rdma-core falls back from ioctl to write). */
	int ph = open("/", O_PATH | O_CLOEXEC);

	if (ph < 0)
		ph = eventfd(0, EFD_CLOEXEC);
	/* A grandparent's sessions are not this process's parent's. */
	fork_n_parents = 0;
	pthread_cond_init(&fork_cond, NULL);
	for (struct ibc_client *cl = fork_clients; cl; cl = cl->fork_next)
		fork_stale_client(cl, ph);
	if (ph >= 0)
		close(ph);
	fork_unlock_all();
}

static void fork_install(void)
{
	fork_once_err = pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* --- the list of clients ----------------------------------------------- */

int ibc_fork_register(struct ibc_client *cl)
{
	pthread_once(&fork_once, fork_install);
	if (fork_once_err)
		return ibc_set_error(-fork_once_err, "pthread_atfork: %s",
				     strerror(fork_once_err));
	pthread_mutex_lock(&fork_lock);
	cl->fork_prev = NULL;
	cl->fork_next = fork_clients;
	if (fork_clients)
		fork_clients->fork_prev = cl;
	fork_clients = cl;
	cl->fork_linked = true;
	pthread_mutex_unlock(&fork_lock);
	return 0;
}

void ibc_fork_unregister(struct ibc_client *cl)
{
	if (!cl->fork_linked)
		return;
	pthread_mutex_lock(&fork_lock);
	/* ibc_fork_init() may be telling it the state. */
	while (cl->fork_refs)
		pthread_cond_wait(&fork_cond, &fork_lock);
	if (cl->fork_prev)
		cl->fork_prev->fork_next = cl->fork_next;
	else
		fork_clients = cl->fork_next;
	if (cl->fork_next)
		cl->fork_next->fork_prev = cl->fork_prev;
	cl->fork_linked = false;
	pthread_mutex_unlock(&fork_lock);
}

bool ibc_fork_parent(const struct ibc_client *cl, uint64_t *ret_id,
		     uint8_t ret_secret[16])
{
	bool found = false;

	pthread_mutex_lock(&fork_lock);
	/* Newest first: the parent's latest session on that broker. */
	for (unsigned int i = 0; i < fork_n_parents && !found; i++) {
		const struct fork_parent *p = &fork_parents[i];

		if (strcmp(p->sock_path, cl->sock_path))
			continue;
		*ret_id = p->id;
		memcpy(ret_secret, p->secret, sizeof(p->secret));
		found = true;
	}
	pthread_mutex_unlock(&fork_lock);
	return found;
}

/* --- the fork state ---------------------------------------------------- */

/* libibverbs' test of its variables: set, and not "0". */
static bool fork_env(const char *name)
{
	const char *v = getenv(name);

	return v && strcmp(v, "0") != 0;
}

void ibc_fork_env(void)
{
	/* libibverbs acts on them only when it first lists devices, which
	 * a client of the soft device never does. A failure (too late)
	 * shows as the state the broker is told. */
	if ((fork_env("RDMAV_FORK_SAFE") || fork_env("IBV_FORK_SAFE")) &&
	    ibc_fork_state() == IBC_FORK_DISABLED)
		ibc_fork_init();
}

IBC_EXPORT enum ibc_fork_state ibc_fork_state(void)
{
	switch (ibv_is_fork_initialized()) {
	case IBV_FORK_UNNEEDED:
		return IBC_FORK_UNNEEDED;
	case IBV_FORK_ENABLED:
		return IBC_FORK_ENABLED;
	default:
		return __atomic_load_n(&fork_enabled, __ATOMIC_RELAXED) ?
			       IBC_FORK_ENABLED :
			       IBC_FORK_DISABLED;
	}
}

/* The live sessions, each held against ibc_fork_unregister() (fork lock
 * held): NULL when there are none or no memory, *ret_n their number. */
static struct ibc_client **fork_hold_all(size_t *ret_n)
{
	struct ibc_client **all;
	size_t n = 0;

	for (struct ibc_client *cl = fork_clients; cl; cl = cl->fork_next)
		n += !cl->stale && cl->has_secret;
	all = n ? malloc(n * sizeof(*all)) : NULL;
	n = 0;
	for (struct ibc_client *cl = fork_clients; all && cl;
	     cl = cl->fork_next) {
		if (cl->stale || !cl->has_secret)
			continue;
		cl->fork_refs++;
		all[n++] = cl;
	}
	*ret_n = n;
	return all;
}

/*
 * Tell the sessions @all the new state, without the fork lock: a broker
 * that does not read would otherwise block every fork() of the process.
 * Not waited for: the state is for display (a session that cannot be told
 * is ending; its successor's hello carries the state).
 */
static void fork_tell_all(struct ibc_client **all, size_t n,
			  enum ibc_fork_state state)
{
	for (size_t i = 0; i < n; i++) {
		Rdmab__ForkStateRequest fs = RDMAB__FORK_STATE_REQUEST__INIT;
		Rdmab__Request req = RDMAB__REQUEST__INIT;

		fs.fork_state = (Rdmab__ForkState)state;
		req.body_case = RDMAB__REQUEST__BODY_FORK_STATE;
		req.fork_state = &fs;
		ibc_send_nowait(all[i], &req);
	}
	pthread_mutex_lock(&fork_lock);
	for (size_t i = 0; i < n; i++)
		all[i]->fork_refs--;
	pthread_cond_broadcast(&fork_cond);
	pthread_mutex_unlock(&fork_lock);
	free(all);
}

IBC_EXPORT int ibc_fork_init(void)
{
	struct ibc_client **all = NULL;
	size_t n = 0;
	int err = 0;

	/* rdma-core 44 would still refuse after a registration, or switch
	 * on tracking nobody needs: not called at all. */
	if (ibv_is_fork_initialized() == IBV_FORK_UNNEEDED) {
		ibc_clear_error();
		return 0;
	}
	pthread_mutex_lock(&fork_lock);
	if (fork_enabled)
		goto out;
	/* RDMAV_FORK_SAFE or IBV_FORK_SAFE made libibverbs do it at load;
	 * so did an earlier ibv_fork_init() of the application. */
	if (ibv_is_fork_initialized() != IBV_FORK_ENABLED) {
		if (__atomic_load_n(&fork_pinned, __ATOMIC_RELAXED)) {
			err = ibc_set_error(-EINVAL,
					    "ibc_fork_init is too late: this "
					    "process already registered "
					    "memory or made queues, which "
					    "stay unprotected (call it "
					    "first, or set RDMAV_FORK_SAFE=1)");
			goto out;
		}
		err = ibv_fork_init();
		if (err) {
			err = ibc_set_error(-err, "ibv_fork_init: %s",
					    strerror(err));
			goto out;
		}
	}
	__atomic_store_n(&fork_enabled, true, __ATOMIC_RELAXED);
	all = fork_hold_all(&n);
out:
	pthread_mutex_unlock(&fork_lock);
	if (all)
		fork_tell_all(all, n, IBC_FORK_ENABLED);
	if (err == 0)
		ibc_clear_error();
	return err;
}
