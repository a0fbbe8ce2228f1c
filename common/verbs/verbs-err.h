/* SPDX-License-Identifier: MIT */
/*
 * Errors at the libibverbs boundary, for the daemon and the library alike.
 * libibverbs fails by returning NULL (or -1) with errno set, or by returning
 * an errno value; some provider paths fail without setting errno at all,
 * and errno then still holds what an earlier, unrelated call left there,
 * which would be reported as this call's reason. So every call whose
 * failure is reported goes through verbs_try(), which zeroes errno first,
 * and its failure is converted by verbs_err() or verbs_ret(), which fall
 * back to the caller's errno when the provider set none:
 *
 *	ctx = verbs_try(ibv_open_device(dev));
 *	if (!ctx)
 *		return verbs_err(ENODEV);
 *
 *	ret = verbs_ret(verbs_try(ibv_query_port(ctx, 1, &attr)), EIO);
 */
#ifndef RDMAB_VERBS_ERR_H
#define RDMAB_VERBS_ERR_H

#include <errno.h>

/* Evaluate @call with errno zeroed first. */
#define verbs_try(call) (errno = 0, (call))

/* After a call that failed by returning NULL or -1: -errno, or -@fallback
 * when the provider left errno unset. */
static inline int verbs_err(int fallback)
{
	return errno > 0 ? -errno : -fallback;
}

/* The result of a call that returns 0 or an errno value (some providers
 * return -1 with errno instead): 0, or a negative errno. */
static inline int verbs_ret(int ret, int fallback)
{
	if (ret == 0)
		return 0;
	return ret > 0 ? -ret : verbs_err(fallback);
}

#endif
