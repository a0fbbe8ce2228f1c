/* SPDX-License-Identifier: MIT */
/*
 * A broker played by a test: a listening socket in a fresh tl_mkdtemp()
 * directory and a thread that accepts one client and runs a script, which
 * answers what the real daemon never would (replies out of order, without
 * descriptors, with impossible errors; a socket it stops reading). The
 * client under test runs in the test's own threads against fb.sock.
 * Nothing here uses Check: a script records its first failure, which
 * fb_stop() returns.
 */
#ifndef RDMAB_FAKEBROKER_H
#define RDMAB_FAKEBROKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"

struct fb;
typedef void (*fb_script)(struct fb *fb);

struct fb {
	char sock[108];
	char *dir;
	int listen_fd;
	/* The accepted client; the script may close it (then -1). */
	int conn;
	fb_script script;
	void *arg;
	pthread_t thread;
	/* Steps the script and the test hand each other. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int step;
	/* The script's first failure, as a sentence. */
	char why[256];
};

/* Listen on a fresh socket and run @script in a thread once a client
 * connects. 0 or -errno. */
int fb_start(struct fb *fb, fb_script script, void *arg);
/* Wait for the script to end, close everything and remove the directory.
 * Returns 0, or -1 with fb->why saying what the script saw go wrong. */
int fb_stop(struct fb *fb);

/* Record a failure of the script (the first one wins); returns -1. */
int fb_fail(struct fb *fb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Announce step @n to the other side / wait up to @timeout_ms for it.
 * fb_wait returns 0 or -ETIMEDOUT. */
void fb_post(struct fb *fb, int n);
int fb_wait(struct fb *fb, int n, int timeout_ms);

/* Receive the client's next request within TL_WAIT_MS; it must carry
 * @body. Its serial goes to *ret_serial, the request (free with
 * rdmab__request__free_unpacked) to *ret unless @ret is NULL. */
int fb_expect(struct fb *fb, Rdmab__Request__BodyCase body,
	      uint64_t *ret_serial, Rdmab__Request **ret);
/* Send @reply wrapped in a DaemonMessage, with @nfds descriptors. */
int fb_send_reply(struct fb *fb, Rdmab__Reply *reply, const int *fds,
		  unsigned int nfds);
/* Send bytes as they are: a DaemonMessage encoded by hand. */
int fb_send_raw(struct fb *fb, const void *buf, size_t len);
/* Send @ev wrapped in a DaemonMessage. */
int fb_send_event(struct fb *fb, Rdmab__Event *ev);
/* Expect the hello and answer it, announcing one device @name of @kind
 * ("soft" or "verbs"). */
int fb_hello(struct fb *fb, const char *name, const char *kind);
/* fb_hello() whose reply carries @secret (@len bytes), as a daemon's does:
 * a session with one tells the broker its fork state. */
int fb_hello_secret(struct fb *fb, const char *name, const char *kind,
		    const uint8_t *secret, size_t len);
/* Answer ping @req (serial @serial) with its payload. */
int fb_answer_ping(struct fb *fb, uint64_t serial, const Rdmab__Request *req);
/* The context every fb_answer_open() opens. */
#define FB_CONTEXT_ID 42
/* Answer open_context @serial with context FB_CONTEXT_ID on @device,
 * sending @fd (-1: none; the caller keeps it). */
int fb_reply_open(struct fb *fb, uint64_t serial, const char *device, int fd);
/* Expect an open_context and answer it so. */
int fb_answer_open(struct fb *fb, const char *device, int fd);
/* A sealed memfd holding the soft device's context header for @id, as
 * the daemon sends it, or -errno. */
int fb_soft_context_fd(uint64_t id);
/* Read and drop whatever the client sends until it closes, up to
 * TL_WAIT_MS. */
int fb_wait_eof(struct fb *fb);

/* For Check tests (check.h, errno.h and string.h included by the test):
 * start and stop the fake broker, failing the test with its reason. */
#define FB_START(fb, script, arg)                                              \
	ck_assert_msg(fb_start(fb, script, arg) == 0, "fb_start: %s",          \
		      strerror(errno))
#define FB_STOP(fb) ck_assert_msg(fb_stop(fb) == 0, "broker: %s", (fb)->why)

#endif
