/* SPDX-License-Identifier: MIT */
/*
 * The listener of [metrics] listen (metrics-http.c). Started and stopped
 * by main.c around the server's life, so that the server, which the
 * listener reads, names it not.
 */
#ifndef RDMAB_METRICS_HTTP_H
#define RDMAB_METRICS_HTTP_H

struct server;

/* 0 when none is configured or it listens, else a negative errno,
 * logged. */
int metrics_http_start(struct server *srv);
/* Before server_fini(); nothing when none was started. */
void metrics_http_stop(struct server *srv);
/* HTTP connections open now (tests). */
unsigned int metrics_http_conns(const struct server *srv);

#endif
