/* SPDX-License-Identifier: MIT */
/*
 * make bench: shared helpers of the benchmark driver. Every figure the
 * driver prints is a ratio against a baseline measured in the same run,
 * with the measured process and its peer both pinned to CPU 0
 * (DESIGN §11, research/performance-baselines.md §0).
 */
#ifndef RDMAB_BENCH_H
#define RDMAB_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Every child (and the driver itself) is killed by SIGALRM after this; a
 * normal run takes well under a minute. */
#define BENCH_ALARM_S 300

/* The CPU every process of the benchmark runs on. */
#define BENCH_CPU 0

/* --- time and statistics --------------------------------------------- */

uint64_t now_ns(void);
void sleep_ms(unsigned int ms);

/* Sort @v in place and return the nearest-rank @p quantile (0 < p <= 1). */
uint64_t quantile_u64(uint64_t *v, size_t n, double p);
double median_dbl(const double *v, size_t n);
double min_dbl(const double *v, size_t n);
double max_dbl(const double *v, size_t n);
/* @s as a decimal number from @min to @max in *@ret: 0, or -EINVAL (a sign,
 * trailing bytes or no digits included). */
int parse_ulong(const char *s, unsigned long min, unsigned long max,
		unsigned long *ret);

/* --- processes ------------------------------------------------------- */

/* Pin the calling process to BENCH_CPU. */
int pin_self(void);
/* 0 when @pid may run on BENCH_CPU only, -EXDEV when it may run elsewhere,
 * or another -errno. */
int check_pinned(pid_t pid);
/* CPU time (user + system) that @pid has used so far, in nanoseconds. */
int cpu_time_ns(pid_t pid, uint64_t *ret);
/* Wait up to @ms until @pid is asleep in epoll_wait(2) (its
 * /proc/PID/syscall), polling every few microseconds: 0, -ETIMEDOUT, or
 * -errno of reading it. */
int wait_in_epoll(pid_t pid, unsigned int ms);

/*
 * Fork and exec @argv with stdout and stderr appended to @log_path (NULL:
 * inherited). The child is pinned to BENCH_CPU, dies with the driver
 * (PR_SET_PDEATHSIG) and is killed by its own alarm. Registered for
 * cleanup.
 */
int spawn(char *const argv[], const char *log_path, pid_t *ret_pid);
/*
 * Fork a child that runs @fn(@arg) and exits with its return value; the
 * same safety as spawn(). Registered for cleanup.
 */
int spawn_fn(int (*fn)(void *arg), void *arg, pid_t *ret_pid);
/*
 * The raw baseline's peer: a SOCK_SEQPACKET pair, @fn(its end, @arg) in a
 * child (spawn_fn) that has closed the driver's end, which comes back in
 * @ret_fd.
 */
int raw_peer_start(int (*fn)(int fd, const void *arg), const void *arg,
		   int *ret_fd, pid_t *ret_pid);
/* The largest packet a raw peer takes or answers (a ping's, in rtt.c). */
#define PEER_MAX_PACKET (64 * 1024)
/*
 * A raw peer's loop: answer the packets on @fd in turn with @rep_len[0]
 * bytes carrying @pass_fd (the same descriptor every time, as the broker
 * sends the one it holds; -1: none, a plain send) and @rep_len[1] bytes
 * carrying none, until the driver's end closes (0) or a call fails
 * (-errno).
 */
int peer_alternate(int fd, const size_t rep_len[2], int pass_fd);
/* SIGTERM @pid, wait for it (SIGKILL after 3 s), forget it. Returns its
 * wait status or -errno. */
int stop_child(pid_t pid);
/* Wait for @pid to exit by itself, forget it; its wait status or -errno. */
int wait_child(pid_t pid);

/* Remember @path (a socket, file or empty directory) for removal at exit;
 * rmdir-ed paths must be registered before what they contain. */
int cleanup_path(const char *path);
/* Remove @path and everything below it (not in a signal handler). */
int remove_tree(const char *path);
/* Kill every registered child, remove every registered path. Safe in a
 * signal handler. */
void cleanup_all(void);
/* Clean up on SIGINT, SIGTERM, SIGALRM, SIGHUP and at exit. */
void cleanup_install(void);

/* --- sockets --------------------------------------------------------- */

/* Connect a SOCK_SEQPACKET socket to @path; -errno on failure. */
int unix_connect(const char *path, int *ret_fd);
/* Retry unix_connect() for up to @ms milliseconds (a starting server). */
int unix_connect_wait(const char *path, unsigned int ms, pid_t server,
		      int *ret_fd);
/* Wait up to @ms for one packet, into @buf; returns its length or -errno
 * (-ETIMEDOUT, -ECONNRESET at end of stream). */
int recv_timeout(int fd, void *buf, size_t cap, unsigned int ms);
/* Listen on @path (SOCK_SEQPACKET) and accept one connection, within @ms
 * milliseconds. */
int unix_accept_one(const char *path, unsigned int ms, int *ret_fd);

/* --- machine state --------------------------------------------------- */

/* Percentage of idle time of CPU @cpu (-1: all CPUs) over @ms ms. */
int idle_percent(int cpu, unsigned int ms, double *ret);
double loadavg1(void);

/* --- protocol packets (pkt.c) ---------------------------------------- */

/*
 * Serials from here up to PKT_SERIAL_END pack as a 3-byte varint, so
 * every ping request and reply of the run has the same size.
 */
#define PKT_SERIAL_START 16384u
#define PKT_SERIAL_END 2097152u

/* Pack Request{version, serial, hello{...}} into @buf; returns the length
 * or -EMSGSIZE. */
int pkt_hello(uint8_t *buf, size_t cap, uint64_t serial);
/* Pack Request{version, serial, ping{payload}}. */
int pkt_ping(uint8_t *buf, size_t cap, uint64_t serial, const uint8_t *payload,
	     size_t len);
/*
 * Decode a daemon packet and check that it is the error-free reply to
 * @serial with a body of @body_case (Rdmab__Reply__BodyCase); for a ping,
 * that it echoes @payload. Returns 0 or -errno (-EPROTO, -EBADMSG, or the
 * broker's error).
 */
int pkt_check_reply(const uint8_t *buf, size_t len, uint64_t serial,
		    int body_case, const uint8_t *payload, size_t plen);
#define PKT_BODY_HELLO 10
#define PKT_BODY_PING 11

struct Rdmab__Request;
/* Set @req's version and @serial as ibc_call() does and pack it into @buf;
 * returns the length or -EMSGSIZE. */
int pkt_request(struct Rdmab__Request *req, uint64_t serial, uint8_t *buf,
		size_t cap);
/* As pkt_check_reply(), for a reply of @body_case (ObjCreate or XrcdOpen)
 * that names a new object: its id into @ret_id. */
int pkt_check_object(const uint8_t *buf, size_t len, uint64_t serial,
		     int body_case, uint64_t *ret_id);
/* One raw round trip: send @len bytes of @req (a negative @len is passed
 * back), receive the reply into @rx; its length or -errno. */
typedef int pkt_rt_fn(int fd, const uint8_t *req, int len, uint8_t *rx,
		      size_t cap);
/* On the raw connection @fd, through @rt: a hello (@serial), then an
 * OpenContext of the default device (@serial + 1), whose descriptor @rt
 * drops. Returns 0 or -errno. */
int pkt_open_session(int fd, uint64_t serial, pkt_rt_fn *rt);

/* --- ping round trips (rtt.c) ---------------------------------------- */

struct ibc_client;

/* @iters broker pings through libibclient; latencies in ns into @lat. */
int rtt_broker_rep(struct ibc_client *cl, const uint8_t *payload, size_t len,
		   unsigned int iters, uint64_t *lat);

/* The raw ping-pong peer: answers every packet on @fd with @rep_len
 * bytes until end of stream. Runs in a child (spawn_fn). */
struct raw_echo {
	int fd;
	int other_fd; /* the driver's end: closed by the child */
	size_t rep_len;
};
int raw_echo_main(void *arg);
/* The same loop on @fd (the blocking server counted by insn.c). */
int raw_echo_serve(int fd, size_t rep_len);

/* @iters raw round trips: @req_len bytes out, @rep_len bytes back. */
int rtt_raw_rep(int fd, const uint8_t *req, size_t req_len, size_t rep_len,
		unsigned int iters, uint64_t *lat);
/*
 * The same against the event-driven floor (bench-evsrv), with
 * libibclient's system calls: send(MSG_DONTWAIT) and a blocking recvmsg()
 * with room for descriptors (wire_recv()).
 */
int rtt_floor_rep(int fd, const uint8_t *req, size_t req_len, size_t rep_len,
		  unsigned int iters, uint64_t *lat);

/* --- closed-loop load over many connections (load.c) ----------------- */

struct load;

struct load_result {
	unsigned long requests;
	double server_cpu_us; /* per request */
	double wall_us;	      /* per request */
	double lat_median_us;
	double lat_p99_us;
};

/*
 * Open @n connections to @path and send each a hello; @broker: check that
 * the replies are the broker's hello replies. Every later request is a
 * ping of @plen payload bytes, @req_len bytes on the wire, and must be
 * answered by @rep_len bytes.
 */
int load_open(const char *path, unsigned int n, int broker,
	      const uint8_t *payload, size_t plen, size_t req_len,
	      size_t rep_len, struct load **ret);
/*
 * Serve @requests requests in a closed loop, one outstanding per
 * connection; @server's CPU time over the run divided by the requests.
 * @lat needs room for @requests entries.
 */
int load_run(struct load *l, unsigned long requests, pid_t server,
	     uint64_t *lat, struct load_result *ret);
/* Requests this load has sent, hellos included. */
unsigned long load_sent(const struct load *l);
void load_close(struct load *l);

/* --- ibc_open + ibc_close (open.c) ---------------------------------- */

/* The broker's packets of one pair, request as packed, reply as received. */
struct open_sizes {
	size_t open_req;
	size_t open_rep; /* carries the context's descriptor */
	size_t close_req;
	size_t close_rep;
};

enum open_side {
	OPEN_STEADY, /* ibc_open + ibc_close, the context held elsewhere */
	OPEN_RAW,    /* raw baseline: a round trip with an fd + one without */
	OPEN_FLOOR,  /* the same against bench-evsrv, libibclient's calls */
	OPEN_COLD,   /* the pair in a private domain: each open creates it */
	OPEN_SIDES,
};

struct open_bench;

/*
 * Connect the holder (a client of this uid that keeps @device's context
 * open until open_teardown()), the steady and the cold client, take the
 * packet sizes from the broker at @path and start the raw peer (pinned,
 * registered for cleanup).
 */
int open_setup(const char *path, const char *device, struct open_bench **ret);
pid_t open_peer_pid(const struct open_bench *ob);
const struct open_sizes *open_sizes(const struct open_bench *ob);
/* The OPEN_FLOOR side: @fd, a connection (taken) to a bench-evsrv that
 * answers with the broker's sizes (--fd-reply-size). */
void open_floor_adopt(struct open_bench *ob, int fd);
/* @iters pairs of @side; latencies in ns into @lat. @lat NULL: a warm-up
 * that also checks which context every open gets. */
int open_rep(struct open_bench *ob, enum open_side side, unsigned int iters,
	     uint64_t *lat);
/* Stop the peer, disconnect every client; NULL is ignored. */
void open_teardown(struct open_bench *ob);

/*
 * The pieces the instruction counts (insn.c) run in processes of their
 * own. open_pairs_broker(): @iters ibc_open + ibc_close of @device while a
 * holder of the same domain keeps the context open (steady state), after
 * waiting @settle_ms once connected; with @quiet > 0, each request only once
 * that process (the daemon counted) is asleep in epoll_wait (insn.c).
 * open_pairs_raw(): @iters raw pairs of the sizes @sz, send() with
 * @send_flags. open_peer_serve(): the raw peer on an accepted @fd.
 */
int open_pairs_broker(const char *path, const char *device,
		      unsigned int settle_ms, pid_t quiet, unsigned int iters);
int open_pairs_raw(int fd, const struct open_sizes *sz, int send_flags,
		   unsigned int iters);
int open_peer_serve(int fd, const struct open_sizes *sz);

/* --- user-space instructions per request (insn.c) -------------------- */

/* What is counted: one kind of request, each side of each pair. */
enum insn_req { INSN_PING, INSN_OPEN, INSN_REQS };
enum insn_pair { INSN_BROKER, INSN_BLOCKING, INSN_FLOOR, INSN_PAIRS };
enum insn_side { INSN_CLIENT, INSN_SERVER, INSN_SIDES };

struct insn_setup {
	/* Where the run's servers listen, for the clients counted. */
	const char *broker_sock;
	const char *evsrv_sock;
	const char *evsrv_open_sock;
	/* How to start the servers counted: the programs, the daemon's
	 * configuration, and paths for its runtime directory, the server's
	 * socket, the callgrind output and the log of each run. */
	const char *daemon;
	const char *evsrv;
	const char *conf;
	const char *rundir;
	const char *sock;
	const char *out;
	const char *log;
	/* Non-NULL: keep every callgrind output there, named by what it
	 * counted. */
	const char *keep_dir;
	/* Start the daemon with --no-restart. */
	bool no_restart;
	const char *device;
	size_t payload;
	size_t ping_req, ping_rep;
	struct open_sizes open;
	/* Requests of the shorter and the longer run of each count. */
	unsigned long n[INSN_REQS][2];
	/* How long the daemon's clients wait once connected before their
	 * requests (see insn.c). */
	unsigned int settle_ms;
};

struct insn_result {
	/* Instructions per request; NAN where not counted. */
	double per[INSN_REQS][INSN_PAIRS][INSN_SIDES];
	/* Why nothing was counted ("" when it was). */
	char skipped[128];
};

/* Count every cell of @ret with callgrind. Returns 0 (a cell that failed
 * is NAN) or -errno for a failure of the run itself. */
int insn_count(const struct insn_setup *s, struct insn_result *ret);
/* Nothing counted, because of @why. */
void insn_skip(struct insn_result *ret, const char *why);
/* Print the table of @res, counted over @n requests; 1 when the broker's
 * ping exceeds @target instructions. */
int insn_report(const struct insn_result *res,
		const unsigned long n[INSN_REQS][2], double target);

/*
 * rdmab-bench --role NAME ...: one side of one count, run under callgrind
 * by insn_count(). Returns the exit status.
 */
int insn_role_main(const char *role, const char *socket, unsigned long n,
		   size_t payload, const char *sizes);

/* --- ibc_cq_create + ibc_cq_destroy (objs.c) ------------------------- */

/* The broker's packets of one pair, requests as packed, replies as
 * received. */
struct objs_sizes {
	size_t create_req;
	size_t create_rep;
	size_t destroy_req;
	size_t destroy_rep;
};

struct objs_bench;

/*
 * Connect a client, open the soft device, take the packet sizes from the
 * broker at @path and start the raw peer (pinned, registered for cleanup).
 */
int objs_setup(const char *path, struct objs_bench **ret);
pid_t objs_peer_pid(const struct objs_bench *ob);
const struct objs_sizes *objs_sizes(const struct objs_bench *ob);
/* @iters pairs through the library (@raw 0), raw round trips (@raw 1) or,
 * for reference, two empty ibc_ping() calls (@raw 2); latencies in ns into
 * @lat, which may be NULL. */
int objs_rep(struct objs_bench *ob, int raw, unsigned int iters, uint64_t *lat);
/* Stop the peer, disconnect; NULL is ignored. */
void objs_teardown(struct objs_bench *ob);

/* --- ibc_xrcd_open + ibc_xrcd_close (xrcd.c) ------------------------- */

struct xrcd_sizes {
	size_t open_req;
	size_t open_rep; /* carries the name's file */
	size_t close_req;
	size_t close_rep;
};

struct xrcd_bench;

/* A client that holds the name open for the run, the broker's sizes, and
 * the raw peer (pinned, registered for cleanup). */
int xrcd_setup(const char *path, struct xrcd_bench **ret);
pid_t xrcd_peer_pid(const struct xrcd_bench *xb);
const struct xrcd_sizes *xrcd_sizes(const struct xrcd_bench *xb);
/* @iters pairs through the library (@raw 0) or raw round trips (@raw 1);
 * latencies in ns into @lat, which may be NULL. */
int xrcd_rep(struct xrcd_bench *xb, int raw, unsigned int iters, uint64_t *lat);
void xrcd_teardown(struct xrcd_bench *xb);

/* --- cleanup of a dead client (cleanup.c) --------------------------- */

struct cleanup_result {
	double create_us; /* the client's creation of its objects */
	double poll_us;	  /* SIGKILL to none left in ibc_list_objects() */
	double daemon_us; /* the daemon's log: death seen to last destroy */
};

/*
 * One repetition against the broker at @path, whose log (at info) is @log:
 * a forked client (pinned, registered for cleanup) creates @nobjs objects
 * (a multiple of 5: two CQs, a QP on them and two MRs at a time) and is
 * killed with SIGKILL; the driver polls the registry until none is left.
 */
int cleanup_rep(const char *path, const char *log, unsigned int nobjs,
		struct cleanup_result *ret);

#endif
