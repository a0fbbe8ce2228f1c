// SPDX-License-Identifier: MIT
/*
 * The daemon's top (server.h): start-up and shutdown in order, the
 * listening socket (stale paths, the socket's group), accepting with the
 * limits and the administrators' reserve, reload, signals, systemd status
 * and watchdog, and the watch for devices that go; and the hooks the
 * layers below it are given: struct core_ops (core.h) and the connection
 * table's struct conn_ops (conn.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/server/conn.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/ctx-hooks.h"
#include "daemon/server/dispatch.h"
#include "daemon/server/listen.h"
#include "daemon/util/log.h"
#include "daemon/server/metrics.h"
#include "daemon/server/notify.h"
#include "daemon/families/rekey.h"
#include "daemon/restart/restart-srv.h"
#include "daemon/server/runtime.h"
#include "daemon/server/sd.h"
#include "daemon/device/caps.h"
#include "daemon/server/server.h"

/* How long accept() rests after EMFILE/ENFILE. */
#define ACCEPT_BACKOFF_MS 100
/* How often verbs devices are checked for having left sysfs. */
#define DEVICE_CHECK_MS 2000

static int server_sockaddr(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	return 0;
}

/* -EADDRINUSE when a live daemon answers on @path; 0 when the path is free
 * or held by a stale socket, which is then removed. */
static int server_clear_stale(const char *path, const struct sockaddr_un *sa)
{
	struct stat st;
	int fd, ret;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ret = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	close(fd);
	if (ret == 0)
		return -EADDRINUSE;
	if (errno != ECONNREFUSED)
		return -errno;
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	log_info("removed the stale socket %s", path);
	return 0;
}

/* --socket-group as a gid; LISTEN_NO_GROUP without one. */
static int server_socket_gid(const struct server *srv, gid_t *ret)
{
	const char *group = srv->opt.socket_group;
	int err;

	*ret = LISTEN_NO_GROUP;
	if (!group)
		return 0;
	err = config_lookup_gid(group, ret);
	if (err < 0)
		log_err("--socket-group %s: %s", group,
			err == -ENOENT ? "no such group" :
					 "not a group name or gid");
	return err;
}

/* What a user who ran the daemon by hand can do about @err: the default
 * path is root's. */
static const char *server_listen_hint(int err)
{
	if (err != -EACCES && err != -EPERM && err != -ENOENT && err != -EROFS)
		return "";
	return "; run as root (systemctl start rdmabrokerd.socket), or give "
	       "--socket a path in a directory you may write, and "
	       "--runtime-dir one too";
}

static int server_bind(struct server *srv)
{
	const char *path = srv->opt.socket_path;
	struct sockaddr_un sa;
	char why[512];
	int dfd, fd, ret;
	gid_t gid;

	ret = server_sockaddr(path, &sa);
	if (ret < 0) {
		log_err("socket path %s is too long", path);
		return ret;
	}
	ret = server_socket_gid(srv, &gid);
	if (ret < 0)
		return ret;
	dfd = listen_dir_open(path, why, sizeof(why));
	if (dfd < 0) {
		/* Its own refusals (EPERM, EISDIR) say what to use. */
		log_err("cannot listen on %s: %s%s", path, why,
			dfd == -ENOENT || dfd == -EACCES ?
				server_listen_hint(dfd) :
				"");
		return dfd;
	}
	ret = server_clear_stale(path, &sa);
	if (ret == -EADDRINUSE) {
		log_err("another broker is listening on %s; not taking it "
			"over",
			path);
		goto out;
	}
	if (ret == -EEXIST) {
		log_err("%s exists and is not a socket; not replacing it",
			path);
		goto out;
	}
	if (ret < 0) {
		log_err("cannot check %s: %s", path, strerror(-ret));
		goto out;
	}
	fd = listen_bind(dfd, path, srv->opt.socket_mode, gid);
	if (fd == -ENAMETOOLONG) {
		ret = fd;
		log_err("cannot listen on %s: the socket is made in a private "
			"directory beside it first (.rdmabrokerd.XXXXXX/s), "
			"whose path would be longer than %zu bytes; use a "
			"shorter --socket",
			path, sizeof(sa.sun_path) - 1);
		goto out;
	}
	if (fd < 0) {
		ret = fd;
		log_err("cannot listen on %s: %s%s", path, strerror(-ret),
			server_listen_hint(ret));
		goto out;
	}
	srv->bound_path = strdup(path);
	if (!srv->bound_path) {
		close(fd);
		unlink(path);
		ret = -ENOMEM;
		goto out;
	}
	log_info("listening on %s", path);
	ret = fd;
out:
	close(dfd);
	return ret;
}

/* How long the accept() and refusal warnings stay quiet after one. */
#define LOG_QUIET_MS (60 * 1000)

static void server_rest(struct server *srv);

static void server_set_accepting(struct server *srv, bool on)
{
	if (on == srv->accepting || srv->tab.stopping)
		return;
	if (!on) {
		event_del(srv->listen_ev);
		srv->accepting = false;
		return;
	}
	if (event_add(srv->listen_ev, NULL) < 0) {
		log_err("cannot watch the listening socket; retrying in %d ms",
			ACCEPT_BACKOFF_MS);
		server_rest(srv);
		return;
	}
	srv->accepting = true;
}

/* Stop accepting for a while; without even a timer, stop the daemon
 * rather than leave it deaf. */
static void server_rest(struct server *srv)
{
	struct timeval tv = { .tv_usec = ACCEPT_BACKOFF_MS * 1000 };

	server_set_accepting(srv, false);
	if (evtimer_add(srv->backoff_ev, &tv) < 0) {
		log_crit("cannot arm a timer to accept again; exiting");
		srv->failed = true;
		event_base_loopbreak(srv->core.base);
	}
}

/* The administrators' reserve: at most a quarter of the connections, so
 * that a small broker still serves its users. */
static unsigned int server_reserve(const struct server *srv)
{
	unsigned int quarter = srv->opt.max_conns / 4;

	return srv->core.config.limits.admin_reserve < quarter ?
		       srv->core.config.limits.admin_reserve :
		       quarter;
}

int server_admit(struct server *srv, const struct conn *c, char *why,
		 size_t size)
{
	const struct broker_limits *l = &srv->core.config.limits;
	bool admin = policy_is_admin(&srv->core, &c->cl);
	unsigned int reserve = server_reserve(srv);

	if (srv->tab.n_conns >= srv->opt.max_conns) {
		snprintf(why, size, "the broker serves at most %u connections",
			 srv->opt.max_conns);
		return -EUSERS;
	}
	/* The reserve lets an administrator in to see who holds the rest. */
	if (!admin && srv->tab.n_conns + reserve >= srv->opt.max_conns) {
		snprintf(why, size,
			 "the broker serves at most %u connections and keeps "
			 "the last %u for administrators; all others are "
			 "taken",
			 srv->opt.max_conns, reserve);
		return -EUSERS;
	}
	if (!admin && c->cl.user->n_conns >= l->connections_per_uid) {
		snprintf(why, size,
			 "uid %u already has %u connections, the most one "
			 "user may have (connections_per_uid)",
			 c->cl.cred.uid, c->cl.user->n_conns);
		return -EDQUOT;
	}
	return 0;
}

/* Nothing to accept with: say so once a minute, not at every retry, with
 * how many retries failed in between. */
static void server_accept_failed(struct server *srv, int err)
{
	unsigned int quiet;

	if (log_ratelimit(&srv->accept_rl, &quiet)) {
		if (quiet)
			log_warn("accept: %s; resting %d ms (%u more times "
				 "since the last message)",
				 strerror(err), ACCEPT_BACKOFF_MS, quiet);
		else
			log_warn("accept: %s; resting %d ms", strerror(err),
				 ACCEPT_BACKOFF_MS);
	}
	server_rest(srv);
}

static void server_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct server *srv = arg;

	for (;;) {
		struct conn *c;
		char text[128];
		int fd;

		fd = accept4(srv->listen_fd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM)
				server_accept_failed(srv, errno);
			else if (errno != EAGAIN && errno != EINTR &&
				 errno != ECONNABORTED)
				log_err("accept: %s", strerror(errno));
			return;
		}
		/* Refused before anything is allocated for it. */
		if (srv->tab.n_conns >= srv->opt.max_conns) {
			snprintf(text, sizeof(text),
				 "the broker serves at most %u connections",
				 srv->opt.max_conns);
			conn_refuse(fd, EUSERS, text);
			close(fd);
			continue;
		}
		conn_new(&srv->tab, fd, &c);
	}
}

static void server_backoff_cb(evutil_socket_t fd, short what, void *arg)
{
	server_set_accepting(arg, true);
}

static void server_conn_gone(struct conn_table *t)
{
	struct server *srv = server_of_tab(t);

	server_status_dirty(srv);
	if (!evtimer_pending(srv->backoff_ev, NULL))
		server_set_accepting(srv, true);
}

static void server_status_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	sd_status("%u clients, %" PRIu64 " requests served, %s device",
		  srv->tab.n_conns, srv->core.requests_served,
		  device_kind_name(srv->core.devices.kind));
}

void server_status_dirty(struct server *srv)
{
	/* Coalesced: at most one STATUS= a second. */
	struct timeval tv = { .tv_sec = 1 };

	/* Without a timer, update at once rather than never. */
	if (!evtimer_pending(srv->status_ev, NULL) &&
	    evtimer_add(srv->status_ev, &tv) < 0)
		server_status_cb(-1, 0, srv);
}

static void server_watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
	sd_watchdog_ping();
}

static void server_shutdown(struct server *srv, const char *reason)
{
	Rdmab__ShutdownEvent sev = RDMAB__SHUTDOWN_EVENT__INIT;
	Rdmab__Event ev = RDMAB__EVENT__INIT;
	struct conn *c;

	if (srv->tab.stopping)
		return;
	/* SIGTERM: systemd's stop and restart alike (a stop then empties
	 * the store); SIGINT, a person at a terminal, ends the sessions. */
	if (strcmp(reason, "SIGTERM") == 0 &&
	    restart_keeps_sessions(&srv->core)) {
		/* The sessions and the state stay in the store for the
		 * next daemon: no Event, no close of a session. */
		log_notice("%s: exiting, %u clients kept for the next start",
			   reason, srv->tab.n_conns);
		sd_stopping();
		server_set_accepting(srv, false);
		srv->tab.stopping = true;
		restart_handoff(&srv->core);
		event_base_loopexit(srv->core.base, NULL);
		return;
	}
	log_notice("%s: shutting down, %u clients connected", reason,
		   srv->tab.n_conns);
	sd_stopping();
	server_set_accepting(srv, false);
	srv->tab.stopping = true;
	sev.reason = (char *)reason;
	/* The broker itself: no object. */
	ev.object_kind = IBC_OBJ_NONE;
	ev.body_case = RDMAB__EVENT__BODY_SHUTDOWN;
	ev.shutdown = &sev;
	/* Best effort: a client that does not read gets no event. Killed,
	 * not closed under the walk: the loop's reap or server_fini()
	 * closes them. */
	TAILQ_FOREACH(c, &srv->tab.conns, link) {
		conn_send_event(c, &ev);
		conn_kill(c, NULL);
	}
	event_base_loopexit(srv->core.base, NULL);
}

static void server_check_reserve(const struct server *srv)
{
	if (server_reserve(srv) < srv->core.config.limits.admin_reserve)
		log_notice("[broker] admin_reserve = %u is more than a "
			   "quarter of --max-clients %u: %u connections are "
			   "reserved",
			   srv->core.config.limits.admin_reserve,
			   srv->opt.max_conns, server_reserve(srv));
}

int server_reload(struct server *srv)
{
	struct config cfg;
	char err[512];
	int ret;

	ret = config_load(srv->opt.config_path, srv->opt.config_required, &cfg,
			  err, sizeof(err));
	if (ret < 0) {
		log_err("%s; keeping the running configuration", err);
		return ret;
	}
	config_reload(&srv->core.config, &cfg);
	if (cfg.soft_devices != srv->core.config.soft_devices)
		log_notice("[soft] devices takes effect at the next start");
	if (cfg.soft_intent_window != srv->core.config.soft_intent_window ||
	    cfg.soft_internal_per_import !=
		    srv->core.config.soft_internal_per_import ||
	    cfg.soft_internal_per_qp != srv->core.config.soft_internal_per_qp)
		log_notice("[soft] intent_window and "
			   "internal_objects_per_import and _per_qp take "
			   "effect at the next start");
	config_free(&srv->core.config);
	srv->core.config = cfg;
	server_check_reserve(srv);
	domains_configure(&srv->core);
	conns_limits_changed(&srv->tab);
	families_configure(&srv->core);
	log_notice("configuration reloaded from %s: %zu domains",
		   srv->opt.config_path, cfg.n_domains);
	return 0;
}

/* Each client hears of the context its session had on the device (0:
 * none). */
static bool server_removed_filter(struct client *c, Rdmab__Event *ev, void *arg)
{
	ev->object_id = dctx_conn_ctx_id(c, arg);
	return true;
}

/* A device is gone: close every descriptor of it, tell every client. */
static void server_device_gone(struct server *srv, struct device *dev,
			       const char *reason)
{
	Rdmab__DeviceRemovedEvent rev = RDMAB__DEVICE_REMOVED_EVENT__INIT;
	Rdmab__Event ev = RDMAB__EVENT__INIT;
	size_t i = (size_t)(dev - srv->core.devices.dev);

	log_warn("device %s is gone (%s); releasing its contexts", dev->name,
		 reason);
	if (srv->device_ev[i]) {
		event_free(srv->device_ev[i]);
		srv->device_ev[i] = NULL;
	}
	/* Every descriptor of the device goes, so that the kernel can finish
	 * the removal; clients are told to close theirs. */
	dctx_device_gone(&srv->core, dev);
	dev->ops->shutdown(dev);
	rev.device = dev->name;
	rev.reason = (char *)reason;
	ev.body_case = RDMAB__EVENT__BODY_DEVICE_REMOVED;
	ev.device_removed = &rev;
	ev.object_kind = IBC_OBJ_CONTEXT;
	notify_clients(&srv->tab, &ev, server_removed_filter, dev);
}

void server_device_removed(struct server *srv, struct device *dev,
			   const char *reason)
{
	/* Both the device's events and the presence check see a removal;
	 * the first one tells. */
	if (dev->removed)
		return;
	dev->removed = true;
	server_device_gone(srv, dev, reason);
	families_device_gone(&srv->core, dev, reason);
}

static void server_device_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	for (size_t i = 0; i < srv->core.devices.n; i++) {
		struct device *dev = &srv->core.devices.dev[i];

		if (!dev->removed && dev->event_fd == fd &&
		    dev->ops->handle_event(dev) == 1)
			server_device_removed(
				srv, dev, "the device reported a fatal error");
	}
}

/* udev removal does not always reach us as an event first. */
static void server_present_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	for (size_t i = 0; i < srv->core.devices.n; i++) {
		struct device *dev = &srv->core.devices.dev[i];

		if (!dev->removed && !dev->ops->present(dev))
			server_device_removed(srv, dev, "it left the system");
	}
}

static int server_devices_watch(struct server *srv)
{
	struct timeval tv = { .tv_sec = DEVICE_CHECK_MS / 1000 };

	for (size_t i = 0; i < srv->core.devices.n; i++) {
		struct device *dev = &srv->core.devices.dev[i];

		if (dev->event_fd < 0)
			continue;
		srv->device_ev[i] =
			event_new(srv->core.base, dev->event_fd,
				  EV_READ | EV_PERSIST, server_device_cb, srv);
		if (!srv->device_ev[i] ||
		    event_add(srv->device_ev[i], NULL) < 0)
			return -ENOMEM;
	}
	if (srv->core.devices.kind != DEVICE_KIND_VERBS)
		return 0;
	srv->present_ev = event_new(srv->core.base, -1, EV_PERSIST,
				    server_present_cb, srv);
	if (!srv->present_ev || event_add(srv->present_ev, &tv) < 0)
		return -ENOMEM;
	return 0;
}

static void server_signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;

	if (sig == SIGHUP) {
		server_reload(srv);
		return;
	}
	server_shutdown(srv, sig == SIGTERM ? "SIGTERM" : "SIGINT");
}

uint64_t server_uptime_usec(const struct server *srv)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)(now.tv_sec - srv->started.tv_sec) * 1000000 +
	       (uint64_t)((now.tv_nsec - srv->started.tv_nsec) / 1000);
}

static int server_events_init(struct server *srv)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	uint64_t wd = sd_watchdog_usec();

	srv->listen_ev = event_new(srv->core.base, srv->listen_fd,
				   EV_READ | EV_PERSIST, server_accept_cb, srv);
	srv->backoff_ev = evtimer_new(srv->core.base, server_backoff_cb, srv);
	srv->status_ev = evtimer_new(srv->core.base, server_status_cb, srv);
	if (!srv->listen_ev || !srv->backoff_ev || !srv->status_ev ||
	    conns_reap_init(&srv->tab) < 0)
		return -ENOMEM;
	for (int i = 0; i < 3; i++) {
		srv->sig_ev[i] = evsignal_new(srv->core.base, sigs[i],
					      server_signal_cb, srv);
		if (!srv->sig_ev[i] || evsignal_add(srv->sig_ev[i], NULL) < 0)
			return -ENOMEM;
	}
	if (wd) {
		struct timeval tv = {
			.tv_sec = (time_t)(wd / 2 / 1000000),
			.tv_usec = (suseconds_t)(wd / 2 % 1000000),
		};

		srv->watchdog_ev = event_new(srv->core.base, -1, EV_PERSIST,
					     server_watchdog_cb, srv);
		if (!srv->watchdog_ev || event_add(srv->watchdog_ev, &tv) < 0)
			return -ENOMEM;
		log_info("watchdog: pinging systemd every %" PRIu64 " ms",
			 wd / 2000);
	}
	return 0;
}

static unsigned int server_broadcast(struct core *core, Rdmab__Event *ev,
				     core_event_filter filter, void *arg)
{
	return notify_clients(&server_of(core)->tab, ev, filter, arg);
}

static void server_core_device_gone(struct core *core, struct device *dev,
				    const char *reason)
{
	server_device_removed(server_of(core), dev, reason);
}

static struct client *server_next(struct core *core, struct client *prev)
{
	return notify_next(&server_of(core)->tab, prev);
}

static void server_core_status(const struct core *core, struct core_status *st)
{
	const struct server *srv = server_of((struct core *)core);

	st->uptime_usec = server_uptime_usec(srv);
	st->clients = srv->tab.n_conns;
	st->max_clients = srv->opt.max_conns;
}

/* The transport's hooks for the layers below the handlers (core.h). */
static const struct core_ops server_core_ops = {
	.broadcast = server_broadcast,
	.device_gone = server_core_device_gone,
	.is_open = notify_is_open,
	.take_pidfd = notify_take_pidfd,
	.next = server_next,
	.hello_done = notify_hello_done,
	.status = server_core_status,
};

static int server_conn_admit(struct conn_table *t, const struct conn *c,
			     char *why, size_t size)
{
	return server_admit(server_of_tab(t), c, why, size);
}

static void server_conn_opened(struct conn *c)
{
	restart_conn_opened(c);
	server_status_dirty(server_of_tab(c->tab));
}

/* What the connections' turns do above them (conn.h). */
static const struct conn_ops server_conn_ops = {
	.packet = dispatch_packet,
	.drain = dispatch_drain,
	.error = dispatch_error,
	.admit = server_conn_admit,
	.opened = server_conn_opened,
	.closed = restart_conn_closed,
	.reply_sent = restart_reply_sent,
	.gone = server_conn_gone,
};

int server_init(struct server *srv, const struct server_options *opt)
{
	struct device_config dcfg;
	const char *why;
	char err[512];
	int ret;

	memset(srv, 0, sizeof(*srv));
	srv->opt = *opt;
	srv->listen_fd = -1;
	srv->core.runtime_fd = -1;
	srv->core.runtime_dir = srv->opt.runtime_dir;
	srv->core.max_conns = srv->opt.max_conns;
	srv->core.ops = &server_core_ops;
	srv->core.ctx_hooks = &registry_ctx_hooks;
	srv->runtime_lock_fd = -1;
	conns_init(&srv->tab, &srv->core, &server_conn_ops);
	srv->tab.outq_max = srv->opt.outq_max;
	srv->tab.read_on = srv->opt.read_on;
	TAILQ_INIT(&srv->core.users);
	TAILQ_INIT(&srv->core.domains);
	srv->accept_rl.interval_ms = LOG_QUIET_MS;
	clock_gettime(CLOCK_MONOTONIC, &srv->started);
	signal(SIGPIPE, SIG_IGN);
	/* A file size limit (LimitFSIZE=) on a memfd that must grow (the
	 * state journal) is a write that fails with EFBIG, which the
	 * journal survives (journal.h), not a death. */
	signal(SIGXFSZ, SIG_IGN);

	ret = config_load(opt->config_path, opt->config_required,
			  &srv->core.config, err, sizeof(err));
	if (ret < 0) {
		log_err("%s", err);
		config_init(&srv->core.config);
		return ret;
	}
	server_check_reserve(srv);
	/* Before anything in it is touched: a second daemon stops here. */
	ret = runtime_take(opt->runtime_dir, &srv->core.runtime_fd,
			   &srv->runtime_lock_fd);
	if (ret < 0)
		return ret;
	/* The unit's ambient CAP_NET_RAW is for RSS QPs and flow rules only:
	 * effective only around those calls (rss-verbs.c). */
	ret = caps_net_raw_lower();
	if (ret < 0)
		log_warn("cannot drop CAP_NET_RAW from the effective set: %s",
			 strerror(-ret));
	config_device(&srv->core.config, &dcfg);
	ret = device_probe(opt->device_mode, &dcfg, &srv->core.devices, &why);
	if (ret < 0) {
		log_err("--device verbs: %s", why);
		return ret;
	}
	log_notice("using the %s device: %s; %zu device%s",
		   device_kind_name(srv->core.devices.kind), why,
		   srv->core.devices.n, srv->core.devices.n == 1 ? "" : "s");
	for (size_t i = 0; i < srv->core.devices.n; i++) {
		const struct device *d = &srv->core.devices.dev[i];
		char caps[256];

		device_caps_text(d, caps, sizeof(caps));
		log_info("%s: %s", d->name, caps);
	}
	domains_configure(&srv->core);

	ret = id_space_init(&srv->core.ids.clients);
	if (ret == 0)
		ret = id_space_init(&srv->core.ids.contexts);
	if (ret == 0)
		ret = id_space_init(&srv->core.ids.objects);
	if (ret < 0) {
		log_err("cannot draw the ids' keys: %s", strerror(-ret));
		return ret;
	}
	srv->core.base = event_base_new();
	if (!srv->core.base)
		return -ENOMEM;
	ret = rekey_init(&srv->core);
	if (ret < 0)
		return ret;
	ret = restart_init(&srv->core, srv->opt.no_restart);
	if (ret == 0 && srv->core.restart)
		ret = reexec_init(srv);
	if (ret < 0) {
		log_err("cannot start the restart's store and journal: %s",
			strerror(-ret));
		return ret;
	}
	ret = families_init(&srv->core);
	if (ret < 0)
		return ret;
	srv->metrics = metrics_new();
	srv->tab.metrics = srv->metrics;
	if (!srv->metrics)
		return -ENOMEM;
	ret = sd_take_listener(restart_fdstore(&srv->core));
	if (ret == -ENOENT)
		ret = server_bind(srv);
	if (ret < 0)
		return ret;
	srv->listen_fd = ret;
	ret = server_events_init(srv);
	if (ret == 0)
		ret = server_devices_watch(srv);
	if (ret < 0) {
		log_err("cannot set up the event loop: %s", strerror(-ret));
		return ret;
	}
	ret = restart_restore(srv);
	if (ret < 0)
		return ret;
	server_set_accepting(srv, true);
	return 0;
}

int server_run(struct server *srv)
{
	sd_ready();
	server_status_cb(-1, 0, srv);
	if (event_base_dispatch(srv->core.base) < 0) {
		log_err("event loop failed");
		return -EIO;
	}
	return srv->failed ? -EIO : 0;
}

void server_fini(struct server *srv)
{
	struct conn *c;

	if (restart_handing_off(&srv->core))
		restart_exit();

	while ((c = TAILQ_FIRST(&srv->tab.conns)))
		conn_close(c);
	rekey_fini(&srv->core);
	metrics_free(srv->metrics);
	srv->tab.metrics = NULL;
	families_fini(&srv->core);
	restart_fini(&srv->core);
	conns_lingering_free(&srv->tab);
	/* The contexts first: domains_free() frees what they point to. */
	dctx_close_all(&srv->core);
	domains_free(&srv->core);
	users_free(&srv->core);
	for (size_t i = 0; i < srv->core.devices.n; i++)
		if (srv->device_ev[i])
			event_free(srv->device_ev[i]);
	if (srv->present_ev)
		event_free(srv->present_ev);
	device_list_close(&srv->core.devices);
	config_free(&srv->core.config);
	for (int i = 0; i < 3; i++)
		if (srv->sig_ev[i])
			event_free(srv->sig_ev[i]);
	if (srv->listen_ev)
		event_free(srv->listen_ev);
	if (srv->backoff_ev)
		event_free(srv->backoff_ev);
	if (srv->status_ev)
		event_free(srv->status_ev);
	if (srv->watchdog_ev)
		event_free(srv->watchdog_ev);
	if (srv->tab.reap_ev)
		event_free(srv->tab.reap_ev);
	if (srv->listen_fd >= 0)
		close(srv->listen_fd);
	if (srv->bound_path) {
		unlink(srv->bound_path);
		free(srv->bound_path);
	}
	if (srv->core.runtime_fd >= 0)
		close(srv->core.runtime_fd);
	/* Last: the lock covers everything above. */
	if (srv->runtime_lock_fd >= 0)
		close(srv->runtime_lock_fd);
	if (srv->core.base)
		event_base_free(srv->core.base);
	memset(srv, 0, sizeof(*srv));
	srv->listen_fd = -1;
	srv->core.runtime_fd = -1;
	srv->runtime_lock_fd = -1;
}
