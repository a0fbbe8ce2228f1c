/* SPDX-License-Identifier: MIT */
/*
 * A fork that waits for the test's other threads to leave their
 * allocating work. clang 14's ASan takes no allocator lock across fork():
 * a child forked while another thread of the test is inside malloc() may
 * hang in its first allocation of that size (the lock is held by a
 * thread the child does not have). tests/fakesd.c does the same over its
 * own lock for the fake systemd's thread; this one is for any test
 * thread.
 *
 * A thread that allocates while another forks brackets each piece of its
 * work with fg_enter() and fg_leave(); a fork() then waits (its
 * pthread_atfork prepare handler) until no thread is inside, and new
 * entries wait for the fork. The handlers are installed at the first
 * fg_enter(): call it after the first ibc_connect() of the process, so
 * that they run before the library's prepare handler (the last installed
 * runs first) and a thread inside never waits for a library lock the
 * forking thread holds.
 */
#ifndef RDMAB_TESTS_FORK_GUARD_H
#define RDMAB_TESTS_FORK_GUARD_H

void fg_enter(void);
void fg_leave(void);

#endif
