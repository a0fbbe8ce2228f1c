// SPDX-License-Identifier: MIT
/*
 * A fork that waits for the test's other threads to leave their
 * allocating work (fork-guard.h).
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/fork-guard.h"

/* Held shared by the threads inside, exclusively by a fork; writers
 * first, so that a thread that loops cannot keep a fork out. */
static pthread_rwlock_t fg_lock;
static pthread_once_t fg_once = PTHREAD_ONCE_INIT;

static void fg_init_lock(void)
{
	pthread_rwlockattr_t a;

	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(
		&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&fg_lock, &a);
	pthread_rwlockattr_destroy(&a);
}

static void fg_prepare(void)
{
	pthread_rwlock_wrlock(&fg_lock);
}

static void fg_parent(void)
{
	pthread_rwlock_unlock(&fg_lock);
}

/* The lock names the parent's thread as its writer: made anew. */
static void fg_child(void)
{
	fg_init_lock();
}

static void fg_install(void)
{
	fg_init_lock();
	if (pthread_atfork(fg_prepare, fg_parent, fg_child)) {
		fprintf(stderr, "fork-guard: pthread_atfork failed\n");
		abort();
	}
}

void fg_enter(void)
{
	pthread_once(&fg_once, fg_install);
	pthread_rwlock_rdlock(&fg_lock);
}

void fg_leave(void)
{
	pthread_rwlock_unlock(&fg_lock);
}
