/* SPDX-License-Identifier: MIT */
/*
 * Test-only fault points: a named instant in the daemon where a test can
 * have it SIGKILL itself, to reach a crash window (a kernel call made, its
 * journal record not yet written) on purpose. Compiled in only with
 * ./configure --enable-fault-points (the build ./quickstart and make
 * check-asan make); the installed daemon and the packages have none: there
 * fault_point() is an empty inline and no environment is read.
 *
 * RDMABROKERD_FAULT=<name>[@<n>] arms point <name>: the n-th time (1 if
 * not given) the daemon passes it, it logs the point and SIGKILLs itself.
 * One point per run; a name no fault_point() call uses is never hit. A
 * value that is not of that form arms nothing and is logged, named.
 */
#ifndef RDMAB_FAULT_H
#define RDMAB_FAULT_H

#define FAULT_ENV "RDMABROKERD_FAULT"

#ifdef RDMAB_FAULT_POINTS
/* At start: read FAULT_ENV and log that this is a test build, and the
 * point armed or why the value arms none. Else the first pass reads it. */
void fault_init(void);
void fault_point(const char *name);
#else
static inline void fault_init(void)
{
}

static inline void fault_point(const char *name)
{
	(void)name;
}
#endif

#endif
