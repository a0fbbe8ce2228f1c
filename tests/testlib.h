/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the test suites: temporary directories, descriptor
 * counting, starting and stopping the real rdmabrokerd, raw packets and a
 * deterministic PRNG. Nothing here uses Check, so that plain programs (the
 * soak test) can use it too: failures are returned and described on stderr.
 */
#ifndef RDMAB_TESTLIB_H
#define RDMAB_TESTLIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "include/ibclient.h"
#include "proto/wire.h"

/* How long helpers wait for the daemon (start, settle, replies). */
#define TL_WAIT_MS 5000

/*
 * Create the suite's private temporary directory (under $TMPDIR or /tmp)
 * that tl_mkdtemp() works in; tl_fini() removes it with everything left in
 * it, also what failed tests left behind. Call both from main().
 */
int tl_init(const char *name);
void tl_fini(void);
/* A fresh directory inside the suite's directory; malloc'd. */
char *tl_mkdtemp(void);
/* rm -rf @path; 0 or -errno. */
int tl_rmtree(const char *path);

/* Open descriptors of @pid (0: this process), or -errno. */
int tl_count_fds(pid_t pid);
/* How often @needle stands in the first MiB of file @path (a daemon's
 * log), or -errno. */
int tl_count_in_file(const char *path, const char *needle);
/* Move process @pid into the cgroup v2 cgroup of directory @dir: 0 or
 * -errno. */
int tl_cgroup_move(const char *dir, pid_t pid);

void tl_sleep_ms(unsigned int ms);
int64_t tl_now_ms(void);

/* The daemon binary: $RDMABROKERD, else ./rdmabrokerd, else
 * ../rdmabrokerd. */
const char *tl_daemon_path(void);
/* The CLI: $RDMABROKERCTL, else ./rdmabrokerctl, else ../rdmabrokerctl. */
const char *tl_ctl_path(void);

struct tl_daemon {
	pid_t pid;
	char *dir;
	char sock[108];
	/* Descriptors of the daemon with exactly one client connected, the
	 * checker of tl_daemon_settle(). */
	int baseline_fds;
	/* Set when the process was waited for. */
	bool reaped;
	int status;
};

/*
 * Start rdmabrokerd --device soft --socket DIR/sock --runtime-dir DIR in a
 * fresh tl_mkdtemp() directory, plus @extra_args (NULL-terminated, may be
 * NULL); wait until it serves a client and record baseline_fds. The daemon
 * dies with the calling thread (PR_SET_PDEATHSIG), so a failed test leaves
 * no process behind.
 */
int tl_daemon_start(struct tl_daemon *d, const char *const *extra_args);
/*
 * Spawn the daemon on @sock without waiting for it. @dir is its runtime
 * directory. Returns the pid or -errno.
 */
pid_t tl_daemon_spawn(const char *dir, const char *sock,
		      const char *const *extra_args);
/* tl_daemon_spawn() with the daemon's stderr appended to @log_path. */
pid_t tl_daemon_spawn_logged(const char *dir, const char *sock,
			     const char *const *extra_args,
			     const char *log_path);
/* Wait for @pid to exit, up to @timeout_ms; its wait status, or -ETIMEDOUT
 * (the process is left running). */
int tl_wait_pid(pid_t pid, int timeout_ms, int *ret_status);
/* A child that only waits to be killed (a live process of the test's,
 * no client): its pid, or -errno. */
pid_t tl_spawn_sleeper(void);
/* Wait until a client can connect to @sock while @pid lives. */
int tl_wait_socket(pid_t pid, const char *sock, int timeout_ms);
bool tl_daemon_alive(struct tl_daemon *d);
/*
 * Connect a checker client and poll until the daemon reports it as its only
 * client and its descriptor count equals baseline_fds, for up to
 * @timeout_ms. Returns the last count seen (or -errno); ret_clients gets
 * the last client count.
 */
int tl_daemon_settle(struct tl_daemon *d, int timeout_ms,
		     unsigned int *ret_clients);
/* SIGTERM, wait (SIGKILL after TL_WAIT_MS), remove the directory. Returns
 * the wait status, or -errno. Safe to call twice. */
int tl_daemon_stop(struct tl_daemon *d);

/* ibc_connect() to @sock with @timeout_ms per reply (0: default). */
int tl_connect(const char *sock, int timeout_ms, struct ibc_client **ret);

/* --- fixtures: a daemon on a configuration of the test's ---------------- */

/* Write @text to @path whole: a new file renamed over it, so that a reload
 * never reads half of it. 0 or -errno. */
int tl_write_conf(const char *path, const char *text);
/*
 * tl_daemon_start() on the configuration @conf, written to @conf_path, or
 * (NULL) to rdmabroker.conf in a fresh tl_mkdtemp() directory; "--config
 * PATH" comes before @extra_args. With @log_path (NULL: none) the
 * daemon's stderr is appended to that file. 0 or -errno.
 */
int tl_daemon_start_conf(struct tl_daemon *d, const char *conf,
			 const char *conf_path, const char *const *extra_args,
			 const char *log_path);
/*
 * What most suites start from: the daemon on @conf (tl_daemon_start_conf),
 * a client connected to it and the first device open in it. 0 or -errno,
 * said on stderr; on failure nothing is left running.
 */
int tl_fixture_start(struct tl_daemon *d, const char *conf,
		     struct ibc_client **ret_client, struct ibc_ctx **ret_ctx);
/* Let clients of other uids reach @d's socket: its directory and the one
 * above it get mode 0711. 0 or -errno. */
int tl_daemon_share(const struct tl_daemon *d);

/* A blocking AF_UNIX SOCK_SEQPACKET connection to @path, or -errno. */
int tl_raw_connect(const char *path);
/* sendmsg() of any length with any number of descriptors (not limited to
 * what wire_send allows). 0 or -errno. */
int tl_raw_send(int sock, const void *buf, size_t len, const int *fds,
		unsigned int nfds, int flags);
/* Pack and send @req (version and serial as set by the caller). */
int tl_send_request(int sock, const Rdmab__Request *req, const int *fds,
		    unsigned int nfds);
/*
 * Receive one daemon message within @timeout_ms. Returns 1 with *ret set
 * (free with rdmab__daemon_message__free_unpacked), 0 at end of stream,
 * -ETIMEDOUT, -EBADMSG when it does not decode, or a wire_recv error.
 * Descriptors that came with it are closed.
 */
int tl_recv_msg(int sock, int timeout_ms, Rdmab__DaemonMessage **ret);
/* Receive one message and return its reply's error (>= 0) after checking
 * that it is a reply to @serial; -errno otherwise. */
int tl_recv_reply_error(int sock, uint64_t serial, int timeout_ms);
/* Send a valid hello with @serial and check its reply: 0 or -errno. */
int tl_raw_hello(int sock, uint64_t serial);
/*
 * Send a hello with @library_version (any bytes) and return the reply's
 * error: 0 when accepted, a positive errno when refused (its sentence in
 * @ret_message, of @size bytes, when not NULL), -errno when no reply came.
 */
int tl_raw_hello_version(int sock, uint64_t serial, const char *library_version,
			 char *ret_message, size_t size);
/* Send a ping carrying @len bytes and check the echo: 0 or -errno. */
int tl_raw_ping(int sock, uint64_t serial, const void *payload, size_t len);
/* Read until end of stream within @timeout_ms, discarding messages:
 * 0 at EOF, -ETIMEDOUT, -errno. */
int tl_wait_eof(int sock, int timeout_ms);

/* A client process with a name of its own, connected until stopped. */
struct tl_named_client {
	pid_t pid;
	/* Its end closes when the client is to exit. */
	int fd;
};

/*
 * Fork a process named @comm (PR_SET_NAME: up to 15 bytes, any but NUL)
 * that connects to @sock, says hello (tl_raw_hello) and stays connected
 * until tl_named_client_stop(). Returns 0 once its hello was answered, or
 * -errno. It dies with the calling thread, like the daemon.
 */
int tl_named_client_start(struct tl_named_client *c, const char *sock,
			  const char *comm);
/* Disconnect and reap it (SIGKILL after TL_WAIT_MS). Safe twice, and on
 * one that was never started if pid is 0. */
void tl_named_client_stop(struct tl_named_client *c);

/* A pipe's two ends, both without FD_CLOEXEC, or -errno. */
int tl_pipe(int p[2]);

/* Hand-encoded protobuf, to build what protobuf-c would refuse to. */
struct tl_buf {
	uint8_t *p;
	size_t len;
	size_t cap;
};

void tl_buf_free(struct tl_buf *b);
void tl_buf_put(struct tl_buf *b, const void *data, size_t len);
void tl_pb_varint(struct tl_buf *b, uint64_t v);
void tl_pb_tag(struct tl_buf *b, uint32_t field, unsigned int wire_type);
void tl_pb_uint(struct tl_buf *b, uint32_t field, uint64_t v);
void tl_pb_bytes(struct tl_buf *b, uint32_t field, const void *data,
		 size_t len);
/* Pack a protobuf-c message into @b. */
void tl_pb_message(struct tl_buf *b, const ProtobufCMessage *msg);

/*
 * The well-formed UTF-8 character at @s, of at most @n bytes: its length (1
 * to 4) with *ret_cp set, or 0. Written apart from common/text/text.c, to check
 * what that produces.
 */
int tl_utf8_char(const char *s, size_t n, uint32_t *ret_cp);
/*
 * Is @s, of @n bytes, well-formed UTF-8 without a character that a terminal
 * acts on: C0 controls (but those in @allow, may be NULL), DEL, C1
 * controls, U+2028, U+2029 and the bidirectional controls U+202A-U+202E and
 * U+2066-U+2069? When not, *ret_off gets the offset of the first bad byte.
 */
bool tl_text_safe(const char *s, size_t n, const char *allow, size_t *ret_off);

/* xorshift64*: deterministic across platforms. */
struct tl_rng {
	uint64_t s;
};

void tl_rng_seed(struct tl_rng *r, uint64_t seed);
uint64_t tl_rng_next(struct tl_rng *r);
/* Uniform in [0, n). */
uint32_t tl_rng_below(struct tl_rng *r, uint32_t n);
void tl_rng_fill(struct tl_rng *r, void *buf, size_t len);

#endif
