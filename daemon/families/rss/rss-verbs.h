/* SPDX-License-Identifier: MIT */
/* RSS on a verbs device (rss-verbs.c). */
#ifndef RDMAB_RSS_VERBS_H
#define RDMAB_RSS_VERBS_H

#include <stddef.h>

#include "daemon/device/device.h"

struct ibv_context;
struct ibv_pd;

/* Does a table over a stub WQ that carries only a real WQ's handle work on
 * @ctx's device? 0, or -errno with the reason in @why. */
int rss_verbs_selftest(struct ibv_context *ctx, char *why, size_t len);
/* Table, QP and flow rule for @spec in @ctx (CAP_NET_RAW raised around the
 * QP and the rule); -errno with the sentence in @why. */
int rss_verbs_create(struct ibv_context *ctx, struct ibv_pd *pd,
		     const struct rss_spec *spec, struct rss_made *ret,
		     char *why, size_t len);
/* The RSS QP of @made (a struct ibv_qp), NULL once destroyed. */
void *rss_verbs_qp(const struct rss_made *made);
/* One part, in the order flow, QP, table (-EBUSY otherwise). */
int rss_verbs_destroy(struct rss_made *made, enum ibc_obj_kind part, char *why,
		      size_t len);

#endif
