// SPDX-License-Identifier: MIT
/*
 * The metrics over HTTP ([metrics] listen), served by libevent's evhttp:
 * GET /metrics, read-only, the broker-wide text (metrics.h) shared by
 * every scrape within METRICS_CACHE_MS and handed to each connection by
 * reference, never copied. Bounded: at most [metrics] connections at once
 * (the listener stops accepting at that many), request headers of
 * METRICS_HTTP_HEADERS bytes, no body, [metrics] timeout for a request
 * to arrive or a reply to be read, and METRICS_HTTP_LIVES timeouts for
 * a connection's whole life, so that a scraper that connects and never
 * reads, trickles, or floods holds a bounded share of the broker and
 * never stalls its loop.
 *
 * evhttp (libevent 2.1) tells nobody when it frees a connection, so each
 * connection's bufferevent is made here (evhttp_set_bevcb) and held by a
 * reference of ours: once evhttp let go of it (its callbacks cleared),
 * the sweep drops that reference, which closes the socket, and counts the
 * connection gone.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>

#include "daemon/util/log.h"
#include "daemon/server/metrics-http.h"
#include "daemon/server/metrics-text.h"
#include "daemon/server/server.h"

/* Request line and headers of a scrape: Prometheus sends a few hundred
 * bytes. */
#define METRICS_HTTP_HEADERS 8192
/* What the socket may read ahead of evhttp, and after evhttp let go. */
#define METRICS_HTTP_READ_MAX 16384
#define METRICS_HTTP_SWEEP_MS 200
/* Connections the kernel queues while the listener is at its limit. */
#define METRICS_HTTP_BACKLOG 16
/* A connection's life, in timeouts: the timeout is of inactivity, and a
 * peer that trickles a byte at a time would hold its slot for ever. */
#define METRICS_HTTP_LIVES 10
#define METRICS_HTTP_BACKOFF_MS 1000

struct metrics_http {
	struct server *srv;
	struct evhttp *http;
	struct evconnlistener *lev;
	/* Sweeps while connections are open; re-arms accept after an
	 * error. */
	struct event *sweep_ev;
	struct event *backoff_ev;
	struct bufferevent **bevs;
	/* When each was accepted. */
	uint64_t *born_ms;
	unsigned int n_bevs;
	/* The longest a connection lives: METRICS_HTTP_LIVES timeouts. */
	uint64_t life_ms;
	unsigned int max;
	/* The path of a Unix socket we made, unlinked at stop. */
	char *path;
	struct log_ratelimit rl;
};

static void http_accepting(struct metrics_http *h)
{
	if (h->n_bevs < h->max &&
	    !event_pending(h->backoff_ev, EV_TIMEOUT, NULL))
		evconnlistener_enable(h->lev);
	else
		evconnlistener_disable(h->lev);
}

/* While connections are open, the sweep looks for those evhttp let go. */
static void http_sweep_arm(struct metrics_http *h)
{
	static const struct timeval tv = { 0, METRICS_HTTP_SWEEP_MS * 1000 };

	if (h->n_bevs && !event_pending(h->sweep_ev, EV_TIMEOUT, NULL))
		event_add(h->sweep_ev, &tv);
}

static void http_sweep(struct metrics_http *h)
{
	uint64_t now = metrics_now_ms();

	for (unsigned int i = h->n_bevs; i-- > 0;) {
		bufferevent_data_cb rd, wr;
		bufferevent_event_cb ev;
		void *arg;

		bufferevent_getcb(h->bevs[i], &rd, &wr, &ev, &arg);
		if (rd || wr || ev) {
			/* Past its life: evhttp sees the end and lets go,
			 * and the next sweep counts it gone. */
			if (now - h->born_ms[i] > h->life_ms)
				shutdown(bufferevent_getfd(h->bevs[i]),
					 SHUT_RDWR);
			continue;
		}
		bufferevent_disable(h->bevs[i], EV_READ | EV_WRITE);
		bufferevent_decref(h->bevs[i]);
		h->n_bevs--;
		h->bevs[i] = h->bevs[h->n_bevs];
		h->born_ms[i] = h->born_ms[h->n_bevs];
	}
	http_sweep_arm(h);
	http_accepting(h);
}

static void http_sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	http_sweep(arg);
}

static void http_backoff_cb(evutil_socket_t fd, short what, void *arg)
{
	http_accepting(arg);
}

/* accept() failed (no descriptors left): wait, do not spin. */
static void http_accept_error(struct evconnlistener *lev, void *arg)
{
	static const struct timeval tv = { METRICS_HTTP_BACKOFF_MS / 1000, 0 };
	struct metrics_http *h = arg;
	unsigned int held;
	int err = errno;

	if (log_ratelimit(&h->rl, &held))
		log_warn("metrics: cannot accept a connection: %s (%u such "
			 "messages held back)",
			 strerror(err), held);
	event_add(h->backoff_ev, &tv);
	http_accepting(h);
}

/* A connection evhttp takes: its bufferevent, which we hold too. */
static struct bufferevent *http_bev_cb(struct event_base *base, void *arg)
{
	struct metrics_http *h = arg;
	struct bufferevent *bev;

	http_sweep(h);
	/* The listener stopped at the limit: never past it. */
	if (h->n_bevs > h->max)
		return NULL;
	bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (!bev)
		return NULL;
	bufferevent_setwatermark(bev, EV_READ, 0, METRICS_HTTP_READ_MAX);
	bufferevent_incref(bev);
	h->born_ms[h->n_bevs] = metrics_now_ms();
	h->bevs[h->n_bevs++] = bev;
	http_sweep_arm(h);
	http_accepting(h);
	return bev;
}

static void http_text_put(const void *data, size_t len, void *arg)
{
	metrics_text_put(arg);
}

static void http_metrics_cb(struct evhttp_request *req, void *arg)
{
	struct metrics_http *h = arg;
	struct metrics_text *t = NULL;
	struct evbuffer *body = evbuffer_new();
	int err;

	if (!body) {
		evhttp_send_error(req, HTTP_INTERNAL, "out of memory");
		return;
	}
	evhttp_add_header(evhttp_request_get_output_headers(req),
			  "Content-Type",
			  "text/plain; version=0.0.4; charset=utf-8");
	/* evhttp 2.1 would send a HEAD reply's body: none is made. */
	if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
		evhttp_send_reply(req, HTTP_OK, "OK", NULL);
		evbuffer_free(body);
		return;
	}
	err = metrics_render_all(h->srv, &t);
	if (err < 0) {
		evhttp_send_error(req, HTTP_INTERNAL,
				  err == -EFBIG ? "the metrics exceed the "
						  "broker's limit" :
						  "out of memory");
		evbuffer_free(body);
		return;
	}
	/* By reference: the text goes with the last reply that holds it. */
	if (evbuffer_add_reference(body, t->data, t->len, http_text_put, t) <
	    0) {
		metrics_text_put(t);
		evbuffer_free(body);
		evhttp_send_error(req, HTTP_INTERNAL, "out of memory");
		return;
	}
	evhttp_send_reply(req, HTTP_OK, "OK", body);
	evbuffer_free(body);
}

static void http_other_cb(struct evhttp_request *req, void *arg)
{
	evhttp_send_error(req, HTTP_NOTFOUND, "the metrics are at /metrics");
}

/* The listening socket of [metrics] listen: a descriptor or -errno. */
static int http_socket(struct metrics_http *h, const char *listen_on)
{
	char why[160], host[INET6_ADDRSTRLEN], path[108];
	union {
		struct sockaddr sa;
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
		struct sockaddr_un un;
	} a;
	unsigned int port = 0;
	mode_t old_mask;
	socklen_t len;
	int fd, one = 1, err;

	memset(&a, 0, sizeof(a));
	path[0] = '\0';
	if (config_metrics_listen(listen_on, why, sizeof(why), host,
				  sizeof(host), &port, path,
				  sizeof(path)) < 0) {
		log_err("[metrics] listen: %s", why);
		return -EINVAL;
	}
	if (*path) {
		a.un.sun_family = AF_UNIX;
		memcpy(a.un.sun_path, path, strlen(path) + 1);
		len = sizeof(a.un);
	} else if (inet_pton(AF_INET, host, &a.in.sin_addr) == 1) {
		a.in.sin_family = AF_INET;
		a.in.sin_port = htons((uint16_t)port);
		len = sizeof(a.in);
	} else {
		inet_pton(AF_INET6, host, &a.in6.sin6_addr);
		a.in6.sin6_family = AF_INET6;
		a.in6.sin6_port = htons((uint16_t)port);
		len = sizeof(a.in6);
	}
	fd = socket(a.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
	if (fd < 0)
		goto fail;
	if (!*path &&
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		goto fail;
	/* A socket a previous run left (the daemon holds the runtime lock:
	 * no other broker uses it). */
	if (*path) {
		struct stat st;

		if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
			unlink(path);
	}
	/* A Unix socket is born 0660: whoever may reach the directory and
	 * is in the broker's group scrapes, nobody else, not even before a
	 * chmod. The loop has one thread: the umask is ours for the call. */
	old_mask = umask(0117);
	err = bind(fd, &a.sa, len);
	umask(old_mask);
	if (err < 0)
		goto fail;
	if (*path) {
		h->path = strdup(path);
		if (!h->path)
			goto fail;
	}
	if (listen(fd, METRICS_HTTP_BACKLOG) < 0)
		goto fail;
	return fd;
fail:
	err = errno ? -errno : -ENOMEM;
	log_err("[metrics] listen = %s: %s", listen_on, strerror(-err));
	if (fd >= 0)
		close(fd);
	return err;
}

int metrics_http_start(struct server *srv)
{
	const struct config *cfg = &srv->core.config;
	struct timeval tv = {
		.tv_sec = cfg->metrics.timeout_ms / 1000,
		.tv_usec = (suseconds_t)(cfg->metrics.timeout_ms % 1000) * 1000,
	};
	struct metrics_http *h;
	int fd, err = -ENOMEM;

	if (!cfg->metrics.listen[0] || !srv->metrics)
		return 0;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	srv->metrics->http = h;
	h->srv = srv;
	h->max = cfg->metrics.connections;
	h->rl.interval_ms = 60 * 1000;
	h->life_ms = (uint64_t)cfg->metrics.timeout_ms * METRICS_HTTP_LIVES;
	h->bevs = calloc(h->max + 1, sizeof(*h->bevs));
	h->born_ms = calloc(h->max + 1, sizeof(*h->born_ms));
	h->http = evhttp_new(srv->core.base);
	h->sweep_ev = evtimer_new(srv->core.base, http_sweep_cb, h);
	h->backoff_ev = evtimer_new(srv->core.base, http_backoff_cb, h);
	if (!h->bevs || !h->born_ms || !h->http || !h->sweep_ev ||
	    !h->backoff_ev)
		goto fail;
	fd = http_socket(h, cfg->metrics.listen);
	if (fd < 0) {
		err = fd;
		goto fail;
	}
	/* Backlog 0: listening already, with http_socket()'s backlog, which
	 * bounds what waits in the kernel while the listener is stopped. */
	h->lev = evconnlistener_new(
		srv->core.base, NULL, NULL,
		LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
	if (!h->lev) {
		close(fd);
		goto fail;
	}
	evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
	evhttp_set_max_headers_size(h->http, METRICS_HTTP_HEADERS);
	evhttp_set_max_body_size(h->http, 0);
	evhttp_set_timeout_tv(h->http, &tv);
	evhttp_set_bevcb(h->http, http_bev_cb, h);
	evhttp_set_cb(h->http, "/metrics", http_metrics_cb, h);
	evhttp_set_gencb(h->http, http_other_cb, h);
	/* evhttp sets the accept callback; ours is the error one. */
	if (!evhttp_bind_listener(h->http, h->lev)) {
		evconnlistener_free(h->lev);
		h->lev = NULL;
		goto fail;
	}
	evconnlistener_set_error_cb(h->lev, http_accept_error);
	log_notice("metrics: serving GET /metrics on %s (at most %u "
		   "connections, timeout %u ms)",
		   cfg->metrics.listen, h->max, cfg->metrics.timeout_ms);
	return 0;
fail:
	metrics_http_stop(srv);
	return err;
}

void metrics_http_stop(struct server *srv)
{
	struct metrics_http *h = srv->metrics ? srv->metrics->http : NULL;

	if (!h)
		return;
	/* Frees its connections (and the listener evhttp_bind_listener
	 * took), then our references free their bufferevents. */
	if (h->http)
		evhttp_free(h->http);
	else if (h->lev)
		evconnlistener_free(h->lev);
	for (unsigned int i = 0; i < h->n_bevs; i++)
		bufferevent_decref(h->bevs[i]);
	if (h->sweep_ev)
		event_free(h->sweep_ev);
	if (h->backoff_ev)
		event_free(h->backoff_ev);
	if (h->path) {
		unlink(h->path);
		free(h->path);
	}
	free(h->bevs);
	free(h->born_ms);
	free(h);
	srv->metrics->http = NULL;
}

unsigned int metrics_http_conns(const struct server *srv)
{
	const struct metrics_http *h = srv->metrics ? srv->metrics->http : NULL;

	return h ? h->n_bevs : 0;
}
