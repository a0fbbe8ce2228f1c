/* SPDX-License-Identifier: MIT */
/*
 * A test's own libibverbs entry points, linked into the test program: the
 * program's definitions come first in symbol lookup, so libibclient and
 * libdaemon call these. In VERBS_SHIM_REAL (the default) they forward to
 * libibverbs; the other modes play one fake device "fake0", which no real
 * provider can be made to do on demand.
 */
#ifndef RDMAB_VERBS_SHIM_H
#define RDMAB_VERBS_SHIM_H

enum verbs_shim_mode {
	VERBS_SHIM_REAL,
	/* Every call fails as some provider paths do: NULL, errno left as
	 * it was. ibv_get_device_list lists fake0. */
	VERBS_SHIM_SILENT,
	/* fake0 opens, to a context with neither command nor async event
	 * descriptor (-1), which queries refuse with EOPNOTSUPP. */
	VERBS_SHIM_NO_FDS,
	/* ibv_import_device succeeds, to a fake0 context that keeps the
	 * descriptor; its PD imports, and CQs are made and destroyed there
	 * (handles from 5 up), each destroy calling verbs_shim_destroy_hook
	 * first: a shared context without a kernel. */
	VERBS_SHIM_IMPORT,
	/* ibv_import_device fails with EOPNOTSUPP (rxe's answer), and fake0
	 * opens to a context of the process's own whose PD allocates and
	 * whose XRCDs open and close (verbs_shim_destroy_ret applies to the
	 * close): the fall-back of IBC_CONNECT_ALLOW_OWN_CONTEXT. */
	VERBS_SHIM_OWN,
};

struct ibv_cq;
/* Called by a fake0 CQ's ibv_destroy_cq before it goes; NULL: none. */
extern void (*verbs_shim_destroy_hook)(struct ibv_cq *cq);
/* Not 0: a fake0 CQ's ibv_destroy_cq (and an own fake0 context's
 * ibv_close_xrcd) answers this errno value and keeps
 * the object, as libibverbs does when the kernel refuses (ENOENT: the
 * handle was destroyed by another process of the domain, or by a raw ioctl
 * of this one); the test frees it. */
extern int verbs_shim_destroy_ret;

/* Set by the test's thread before it calls into the code under test. */
extern enum verbs_shim_mode verbs_shim_mode;
/* How many calls the shim answered itself rather than libibverbs. */
extern unsigned int verbs_shim_calls;

#endif
