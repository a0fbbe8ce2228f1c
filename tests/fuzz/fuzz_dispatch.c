// SPDX-License-Identifier: MIT
/*
 * libFuzzer target "dispatch": whole sessions against a real server
 * (libdaemon's server_init on the soft device, with a configuration of its
 * own), through connections made with conn_new() on one end of a
 * socketpair; the input format is in tests/fuzz/fuzz.h. The event loop runs
 * without blocking until the daemon is idle, and the replies are read and
 * checked as a client would.
 *
 * After every input, with every client end closed and the objects of the
 * ended sessions cleaned up as at their process's death: no connection
 * left, an empty registry, the domains of the configuration only, none
 * holding a client, an object or a context, and exactly the descriptors
 * the process held before. Any
 * violation aborts, which libFuzzer reports as a crash.
 *
 * The daemon learns who its peer is from SO_PEERCRED and SO_PEERGROUPS: the
 * program is linked with -Wl,--wrap=getsockopt so that, for the one socket
 * being adopted, the daemon reads the identity the input chose instead.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/server/conn.h"
#include "daemon/families/dm/dm.h"
#include "daemon/registry/domain.h"
#include "daemon/util/log.h"
#include "daemon/registry/objects.h"
#include "daemon/server/server.h"
#include "daemon/registry/user.h"
#include "proto/wire.h"
#include "tests/fuzz/fuzz.h"

const char fuzz_target_name[] = "dispatch";

#define SLOTS 2
#define MAX_SEND_FDS 15

/* Small limits, so that inputs of a few KiB reach them. */
static const char config_a[] = "[broker]\n"
			       "admin_group = 4242\n"
			       "connections_per_uid = 2\n"
			       "admin_reserve = 1\n"
			       "queued_fds = 2\n"
			       "queued_fds_per_uid = 3\n"
			       "private_contexts_per_uid = 1\n"
			       "\n"
			       "[defaults]\n"
			       "objects = 4\n"
			       "clients = 8\n"
			       "\n"
			       "[domain fz]\n"
			       "users = 1000\n"
			       "\n"
			       "[domain fz2]\n"
			       "groups = 4243\n"
			       "objects = 0\n"
			       "clients = 1\n";
/* What a reload switches to: fz retired with its members, fz3 new, the
 * quotas and the admin group changed under the clients. */
static const char config_b[] = "[broker]\n"
			       "admin_group = 4243\n"
			       "\n"
			       "[defaults]\n"
			       "objects = 1\n"
			       "clients = 2\n"
			       "\n"
			       "[domain fz2]\n"
			       "groups = 4243\n"
			       "objects = 1\n"
			       "clients = 2\n"
			       "\n"
			       "[domain fz3]\n"
			       "users = 1000, 65534\n";
#define FUZZ_OUTQ_MAX 4096

static const struct identity {
	uid_t uid;
	gid_t gid;
	size_t n_groups;
	gid_t groups[2];
} identities[4] = {
	[FUZZ_ID_ROOT] = { 0, 0, 0, { 0 } },
	[FUZZ_ID_USER] = { 1000, 1000, 1, { 1000 } },
	[FUZZ_ID_ADMIN_GROUP] = { 65534, 65534, 2, { 65534, 4242 } },
	[FUZZ_ID_GROUP_MEMBER] = { 2000, 2000, 1, { 4243 } },
};

struct slot {
	/* The client's end; -1 when closed. */
	int fd;
	enum fuzz_identity id;
	/* The client reads its replies. */
	bool reading;
	/* The daemon closed its end. */
	bool eof;
	/* Packets sent and replies read on this connection. */
	unsigned int sent, replies;
};

struct session {
	uint8_t hdr;
	/* The daemon runs on config_b since a reload record. */
	bool config_b;
	/* Descriptors open before the session: between inputs the
	 * sanitizers may start their symbolizer, with pipes. */
	int baseline_fds;
	struct slot slot[SLOTS];
	unsigned int packets;
	/* What tells a pass of the event loop that did something. */
	uint64_t replies, eofs;
};

static struct server srv;
static bool srv_up;
/* The server keeps pointers to these. */
static char sock_path[300], config_path_a[64], config_path_b[64];
static int devnull = -1, config_fd_a = -1, config_fd_b = -1;
static size_t baseline_domains;
/* FUZZ_TRACE set: every reply on stderr, to see what a seed does. */
static bool trace;

/* The socket conn_new() is adopting and the identity its peer gets. */
static int hook_fd = -1;
static const struct identity *hook_id;

int __real_getsockopt(int fd, int level, int name, void *val, socklen_t *len);
int __wrap_getsockopt(int fd, int level, int name, void *val, socklen_t *len);

int __wrap_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	const struct identity *id = hook_id;
	socklen_t need;

	if (fd != hook_fd || level != SOL_SOCKET ||
	    (name != SO_PEERCRED && name != SO_PEERGROUPS))
		return __real_getsockopt(fd, level, name, val, len);
	if (name == SO_PEERCRED) {
		struct ucred cred = {
			.pid = getpid(),
			.uid = id->uid,
			.gid = id->gid,
		};

		if (*len < sizeof(cred)) {
			errno = EINVAL;
			return -1;
		}
		memcpy(val, &cred, sizeof(cred));
		*len = sizeof(cred);
		return 0;
	}
	/* As the kernel does: ERANGE with the length it needs. */
	need = (socklen_t)(id->n_groups * sizeof(gid_t));
	if (*len < need) {
		*len = need;
		errno = ERANGE;
		return -1;
	}
	memcpy(val, id->groups, need);
	*len = need;
	return 0;
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz_dispatch: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}

static int count_fds(void)
{
	struct dirent *de;
	DIR *dir = opendir("/proc/self/fd");
	int n = 0;

	if (!dir)
		fail("/proc/self/fd: %s", strerror(errno));
	while ((de = readdir(dir)))
		n += de->d_name[0] != '.';
	closedir(dir);
	/* Without the listing's own descriptor. */
	return n - 1;
}

/* What each descriptor is, for the report of a leak. */
static void list_fds(void)
{
	struct dirent *de;
	DIR *dir = opendir("/proc/self/fd");

	if (!dir)
		return;
	while ((de = readdir(dir))) {
		char path[300], target[256];
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		fprintf(stderr, "  fd %s: %s\n", de->d_name, target);
	}
	closedir(dir);
}

static size_t count_domains(void)
{
	struct domain *d;
	size_t n = 0;

	TAILQ_FOREACH(d, &srv.core.domains, link)
		n++;
	return n;
}

/* The daemon's runtime directory: its xrcd/ directory outlives the
 * server (the files of declared XRCDs survive a restart). */
static char runtime_dir[256];

static int rm_one(const char *path, const struct stat *st, int type,
		  struct FTW *ftw)
{
	return remove(path) < 0 ? -1 : 0;
}

static void fuzz_cleanup(void)
{
	if (srv_up)
		server_fini(&srv);
	srv_up = false;
	if (runtime_dir[0])
		nftw(runtime_dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	runtime_dir[0] = '\0';
	if (devnull >= 0)
		close(devnull);
	devnull = -1;
	if (config_fd_a >= 0)
		close(config_fd_a);
	if (config_fd_b >= 0)
		close(config_fd_b);
	config_fd_a = config_fd_b = -1;
}

/*
 * A configuration file that leaves nothing on disk, also when the fuzzer
 * stops on a crash: a memfd holding @text, named by its /proc/self/fd path
 * in @path. Returns the descriptor.
 */
static int config_memfd(const char *name, const char *text, char *path,
			size_t size)
{
	size_t len = strlen(text);
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0)
		fail("memfd_create: %s", strerror(errno));
	if (write(fd, text, len) != (ssize_t)len)
		fail("%s: cannot write", name);
	snprintf(path, size, "/proc/self/fd/%d", fd);
	return fd;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR"), *level = getenv("FUZZ_LOG_LEVEL");
	char *dir = runtime_dir;
	struct server_options opt = {
		.socket_path = sock_path,
		.runtime_dir = dir,
		.config_path = config_path_a,
		.config_required = true,
		.device_mode = DEVICE_MODE_SOFT,
		.socket_mode = 0600,
		.max_conns = 16,
		.outq_max = FUZZ_OUTQ_MAX,
	};
	int ret;

	/* Errors only, unless asked: the fuzzer runs millions of
	 * sessions. */
	log_max_priority = LOG_ERR;
	if (level && log_parse_level(level) >= 0)
		log_max_priority = log_parse_level(level);
	/* Not socket-activated, not under systemd's watch. */
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_PID");
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");

	snprintf(dir, sizeof(runtime_dir), "%s/rdmab-fuzz.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		fail("mkdtemp %s: %s", dir, strerror(errno));
	snprintf(sock_path, sizeof(sock_path), "%s/sock", dir);
	config_fd_a = config_memfd("rdmabroker-fuzz-a.conf", config_a,
				   config_path_a, sizeof(config_path_a));
	config_fd_b = config_memfd("rdmabroker-fuzz-b.conf", config_b,
				   config_path_b, sizeof(config_path_b));
	ret = server_init(&srv, &opt);
	if (ret < 0)
		fail("server_init: %s", strerror(-ret));
	/* Inputs name ids by count (1, 2, ...), as the corpus was made:
	 * the daemon's keyed ids would make every named id a miss. */
	srv.core.ids.clients.plain = true;
	srv.core.ids.contexts.plain = true;
	srv.core.ids.objects.plain = true;
	for (unsigned int f = 0; f < FAMILY_COUNT; f++)
		if (families[f]->ids)
			families[f]->ids(&srv.core)->plain = true;
	srv_up = true;
	/* Connections come from socketpairs: the socket can go now. The
	 * directory goes at exit (fuzz_cleanup), a crash's aside. */
	unlink(sock_path);
	atexit(fuzz_cleanup);

	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0)
		fail("/dev/null: %s", strerror(errno));
	baseline_domains = count_domains();
	trace = getenv("FUZZ_TRACE") != NULL;
	return 0;
}

/* Give slot @i a new connection with the identity the header chose. */
static void slot_open(struct session *s, unsigned int i)
{
	struct slot *sl = &s->slot[i];
	struct conn *c;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC,
		       0, sv) < 0)
		fail("socketpair: %s", strerror(errno));
	if (s->hdr & FUZZ_HDR_SMALL_SNDBUF) {
		int one = 1;

		/* The kernel rounds it up to its minimum. */
		setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &one, sizeof(one));
	}
	sl->fd = sv[1];
	sl->id = FUZZ_HDR_ID(s->hdr, i);
	sl->reading = true;
	sl->eof = false;
	sl->sent = 0;
	sl->replies = 0;
	hook_fd = sv[0];
	hook_id = &identities[sl->id];
	/* The conn owns sv[0] from here on, also when it refuses it: the
	 * client then reads end of stream, as from a daemon that hung
	 * up. */
	if (conn_new(&srv.tab, sv[0], &c) < 0)
		sl->eof = true;
	hook_fd = -1;
	hook_id = NULL;
}

static void slot_close(struct slot *sl)
{
	if (sl->fd >= 0)
		close(sl->fd);
	sl->fd = -1;
}

/* A reply as the protocol promises it. Returns whether it answers a
 * packet: an eviction's notice (serial 0, ECONNRESET) answers none. */
static bool check_reply(unsigned int slot, const uint8_t *buf, size_t len,
			unsigned int nfds)
{
	Rdmab__DaemonMessage *msg;
	const Rdmab__Reply *r;
	bool answer;

	msg = rdmab__daemon_message__unpack(NULL, len, buf);
	if (!msg)
		fail("the daemon sent %zu bytes that do not decode", len);
	/* An Event answers no packet; it names its object and comes
	 * without descriptors (rekey, DM and RSS Events arrive in
	 * sessions). */
	if (msg->kind_case == RDMAB__DAEMON_MESSAGE__KIND_EVENT) {
		if (nfds)
			fail("an event (%d) with %u descriptors",
			     (int)msg->event->body_case, nfds);
		if (msg->event->body_case == RDMAB__EVENT__BODY__NOT_SET)
			fail("an event without a body");
		rdmab__daemon_message__free_unpacked(msg, NULL);
		return false;
	}
	if (msg->kind_case != RDMAB__DAEMON_MESSAGE__KIND_REPLY)
		fail("the daemon sent a message of kind %d",
		     (int)msg->kind_case);
	r = msg->reply;
	if (r->error < 0)
		fail("reply %llu has the negative error %d",
		     (unsigned long long)r->serial, (int)r->error);
	if (r->error) {
		if (!r->message || !*r->message)
			fail("error %d without a sentence", (int)r->error);
		if (r->body_case != RDMAB__REPLY__BODY__NOT_SET)
			fail("error %d with a body (%d)", (int)r->error,
			     (int)r->body_case);
		if (nfds)
			fail("error %d with %u descriptors", (int)r->error,
			     nfds);
	} else if (r->body_case == RDMAB__REPLY__BODY_OPEN_CONTEXT &&
		   nfds != 1) {
		fail("open_context reply with %u descriptors", nfds);
	}
	if (trace)
		fprintf(stderr,
			"slot %u: reply %llu: error %d, body %d, %u fds%s%s\n",
			slot, (unsigned long long)r->serial, (int)r->error,
			(int)r->body_case, nfds, r->error ? ": " : "",
			r->error ? r->message : "");
	answer = r->serial || r->error != ECONNRESET;
	rdmab__daemon_message__free_unpacked(msg, NULL);
	return answer;
}

/* Read and check every reply waiting on @sl's end. */
static void slot_drain(struct session *s, struct slot *sl)
{
	static uint8_t buf[WIRE_MAX_PACKET + 1];
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * (WIRE_MAX_FDS + 1))];
	} cbuf;

	while (sl->fd >= 0 && !sl->eof) {
		struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
		struct msghdr mh = {
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = cbuf.buf,
			.msg_controllen = sizeof(cbuf.buf),
		};
		unsigned int nfds = 0;
		ssize_t n;

		n = recvmsg(sl->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0 && errno == EINTR)
			continue;
		/* The daemon hung up with our packets unread: the kernel
		 * says so once, then end of stream. */
		if (n == 0 || (n < 0 && errno == ECONNRESET)) {
			sl->eof = true;
			s->eofs++;
			return;
		}
		if (n < 0)
			fail("recvmsg: %s", strerror(errno));
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm;
		     cm = CMSG_NXTHDR(&mh, cm)) {
			size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			if (cm->cmsg_level != SOL_SOCKET ||
			    cm->cmsg_type != SCM_RIGHTS)
				fail("a control message of type %d",
				     cm->cmsg_type);
			for (size_t j = 0; j < k; j++) {
				int fd;

				memcpy(&fd, CMSG_DATA(cm) + j * sizeof(int),
				       sizeof(fd));
				close(fd);
				nfds++;
			}
		}
		if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
			fail("a reply of more than %d bytes or %d descriptors",
			     WIRE_MAX_PACKET, WIRE_MAX_FDS);
		if (!check_reply((unsigned int)(sl - s->slot), buf, (size_t)n,
				 nfds)) {
			s->replies++;
			continue;
		}
		sl->replies++;
		s->replies++;
		if (sl->replies > sl->sent)
			fail("%u replies to %u packets", sl->replies, sl->sent);
	}
}

struct progress {
	uint64_t served, replies, eofs;
	unsigned int conns;
};

static struct progress progress_now(const struct session *s)
{
	struct progress p = {
		.served = srv.core.requests_served,
		.replies = s->replies,
		.eofs = s->eofs,
		.conns = srv.tab.n_conns,
	};

	return p;
}

/*
 * Run the event loop without blocking, reading the replies of the slots
 * that read, until two passes in a row change nothing: no request served,
 * no reply read, no connection opened or closed. Every packet the daemon
 * reads is served or ends its connection, so that is idle.
 */
static void run_until_idle(struct session *s)
{
	unsigned int limit = 1000 + 8 * s->packets, idle = 0;

	for (unsigned int pass = 0; pass < limit; pass++) {
		struct progress before = progress_now(s), after;

		if (event_base_loop(srv.core.base, EVLOOP_NONBLOCK) < 0)
			fail("event_base_loop failed");
		for (unsigned int i = 0; i < SLOTS; i++)
			if (s->slot[i].reading)
				slot_drain(s, &s->slot[i]);
		after = progress_now(s);
		if (before.served != after.served ||
		    before.replies != after.replies ||
		    before.eofs != after.eofs || before.conns != after.conns)
			idle = 0;
		else if (++idle == 2)
			return;
	}
	fail("the daemon is still busy after %u passes of the event loop",
	     limit);
}

static void session_send(struct session *s, struct slot *sl, const uint8_t *pkt,
			 size_t len, unsigned int nfds)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * MAX_SEND_FDS)];
	} cbuf;
	struct iovec iov = { .iov_base = (void *)pkt, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[MAX_SEND_FDS], err;
	ssize_t n;

	for (unsigned int i = 0; i < nfds; i++) {
		fds[i] = fcntl(devnull, F_DUPFD_CLOEXEC, 0);
		if (fds[i] < 0)
			fail("dup: %s", strerror(errno));
	}
	if (nfds) {
		struct cmsghdr *cm;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	do
		n = sendmsg(sl->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	err = n < 0 ? errno : 0;
	for (unsigned int i = 0; i < nfds; i++)
		close(fds[i]);
	/* A daemon that stopped reading fills our send buffer; one that
	 * hung up refuses the packet. Neither is a packet sent. */
	if (err && err != EAGAIN && err != EPIPE && err != ECONNRESET &&
	    err != ENOBUFS)
		fail("sendmsg of %zu bytes: %s", len, strerror(err));
	if (!err) {
		sl->sent++;
		s->packets++;
	}
	if (trace)
		fprintf(stderr, "slot %u: %zu bytes, %u fds: %s\n",
			(unsigned int)(sl - s->slot), len, nfds,
			err ? strerror(err) : "sent");
}

/* SIGHUP: the other configuration. */
static void session_reload(struct session *s)
{
	s->config_b = !s->config_b;
	srv.opt.config_path = s->config_b ? config_path_b : config_path_a;
	if (server_reload(&srv) < 0)
		fail("the daemon refused the configuration %s",
		     s->config_b ? "b" : "a");
}

static void session_record(struct session *s, uint8_t ctl, const uint8_t *pkt,
			   size_t len)
{
	unsigned int i = FUZZ_CTL_SLOT(ctl);
	struct slot *sl = &s->slot[i];

	if (ctl == FUZZ_CTL_RELOAD) {
		session_reload(s);
		run_until_idle(s);
		return;
	}

	/* A session the daemon ended makes room for a new one. */
	if (sl->fd >= 0 && sl->eof)
		slot_close(sl);
	if (sl->fd < 0)
		slot_open(s, i);
	sl->reading = !(ctl & FUZZ_CTL_NO_READ);
	session_send(s, sl, pkt, len, FUZZ_CTL_NFDS(ctl));
	if (ctl & FUZZ_CTL_CLOSE)
		slot_close(sl);
	if (!(ctl & FUZZ_CTL_BATCH))
		run_until_idle(s);
}

static bool any_stalled(void)
{
	const struct conn *c;

	TAILQ_FOREACH(c, &srv.tab.conns, link)
		if (c->stalled)
			return true;
	return false;
}

/*
 * The daemon's next look at every stalled or lingering socket, now rather
 * than when its timer (2 ms and doubling, 500 ms for a lingering one)
 * would fire: it finds what it would find then, since the clients have
 * read their replies or closed their ends, and nothing else changes
 * meanwhile. A socket the look does not release stays, and is reported.
 * Waiting for the timers made the target run 25 inputs a second.
 */
static void poke_timers(void)
{
	struct conn *c;

	TAILQ_FOREACH(c, &srv.tab.conns, link)
		if (c->stalled)
			event_active(c->stall_ev, EV_TIMEOUT, 1);
	TAILQ_FOREACH(c, &srv.tab.lingering, link)
		event_active(c->stall_ev, EV_TIMEOUT, 1);
	if (event_base_loop(srv.core.base, EVLOOP_NONBLOCK) < 0)
		fail("event_base_loop failed");
}

/*
 * The peers are this process, which lives: a session that ended holding
 * objects left them detached, watched through a pidfd of our own pid.
 * Make each such owner's process "die", as its pidfd would say, and let
 * the cleanup run: it must destroy every object, in order, with nothing
 * stuck (the soft device makes only uses within a session).
 */
static void owners_die(void)
{
	struct registry *reg = srv.core.registry;
	struct obj_owner *ow, *tmp;
	unsigned int i;

	TAILQ_FOREACH_SAFE(ow, &reg->owners, link, tmp)
		if (ow->state == OWNER_DETACHED)
			objects_owner_dead(ow);
	for (i = 0; i < 64 && !TAILQ_EMPTY(&reg->owners); i++) {
		/* A cleanup's next slice or round, now. */
		TAILQ_FOREACH(ow, &reg->owners, link)
			if (ow->ev)
				event_active(ow->ev, EV_TIMEOUT, 1);
		if (event_base_loop(srv.core.base, EVLOOP_NONBLOCK) < 0)
			fail("event_base_loop failed");
	}
	TAILQ_FOREACH(ow, &reg->owners, link)
		fail("client %llu: owner left in state %d with %u objects "
		     "(%u stuck) and %u intents",
		     (unsigned long long)ow->client_id, (int)ow->state,
		     ow->n_objs, ow->stuck, ow->n_intents);
	if (reg->n_objs || !TAILQ_EMPTY(&reg->objs))
		fail("%u objects in the registry without an owner",
		     reg->n_objs);
}

static void session_end(struct session *s)
{
	struct domain *d;
	struct user *u;
	size_t n_domains;
	int fds;

	/* Every client reads what is left: a daemon that still holds a
	 * connection has answered every packet of it. */
	for (unsigned int i = 0; i < SLOTS; i++)
		s->slot[i].reading = true;
	run_until_idle(s);
	/* A connection stopped for its unread descriptors is looked at again
	 * by a timer of a few ms, a lingering socket (whose descriptors
	 * count against its uid, stopping the uid's other connections) every
	 * 500 ms: make them look now, as long as each look lets a
	 * connection answer more (a few replies with descriptors at a time,
	 * under the queued_fds limits). One stuck with every reply read
	 * fails the count below. */
	for (unsigned int idle = 0;
	     idle < 16 &&
	     (any_stalled() || !TAILQ_EMPTY(&srv.tab.lingering));) {
		uint64_t replies = s->replies;

		poke_timers();
		run_until_idle(s);
		idle = s->replies == replies ? idle + 1 : 0;
	}
	for (unsigned int i = 0; i < SLOTS; i++) {
		const struct slot *sl = &s->slot[i];

		if (sl->fd >= 0 && !sl->eof && sl->replies != sl->sent)
			fail("slot %u: %u replies to %u packets", i,
			     sl->replies, sl->sent);
	}
	for (unsigned int i = 0; i < SLOTS; i++)
		slot_close(&s->slot[i]);
	run_until_idle(s);
	/* A socket closed with descriptors unread lingers until the daemon's
	 * next look sees its peer gone (a timer): make it look now,
	 * boundedly, rather than count it as a leak. */
	for (unsigned int i = 0; i < 16 && !TAILQ_EMPTY(&srv.tab.lingering);
	     i++)
		poke_timers();
	if (!TAILQ_EMPTY(&srv.tab.lingering))
		fail("a closed client's socket still lingers");
	owners_die();
	/* Nothing is charged to any uid once its connections are gone. */
	TAILQ_FOREACH(u, &srv.core.users, link)
		if (u->n_conns || u->pinned_fds || u->private_ctxs ||
		    dm_user_of(u)->dm_pages)
			fail("uid %u still holds %u connections, %u unread "
			     "descriptors, %u private contexts, %u DM status "
			     "pages",
			     (unsigned int)u->uid, u->n_conns, u->pinned_fds,
			     u->private_ctxs, dm_user_of(u)->dm_pages);
	if (s->config_b)
		session_reload(s);

	if (srv.tab.n_conns != 0)
		fail("%u connections outlive their clients", srv.tab.n_conns);
	n_domains = count_domains();
	if (n_domains != baseline_domains)
		fail("%zu domains, %zu before the session", n_domains,
		     baseline_domains);
	TAILQ_FOREACH(d, &srv.core.domains, link)
		if (d->used.clients || d->used.objects || d->n_ctxs)
			fail("domain %s still counts %u clients, %u objects, "
			     "%u contexts",
			     d->name, d->used.clients, d->used.objects,
			     d->n_ctxs);
	fds = count_fds();
	if (fds != s->baseline_fds) {
		list_fds();
		fail("%d descriptors open, %d before the session", fds,
		     s->baseline_fds);
	}

	/* Ids start again, so that an input always means the same
	 * session: nothing that could hold an old one is left. */
	srv.core.ids.clients.count = 0;
	srv.core.ids.contexts.count = 0;
	srv.core.ids.objects.count = 0;
	for (unsigned int f = 0; f < FAMILY_COUNT; f++)
		if (families[f]->ids)
			families[f]->ids(&srv.core)->count = 0;
	srv.core.requests_served = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p, *end = data + size;
	struct session s;

	if (size == 0)
		return 0;
	memset(&s, 0, sizeof(s));
	s.hdr = data[0];
	s.baseline_fds = count_fds();
	for (unsigned int i = 0; i < SLOTS; i++)
		s.slot[i].fd = -1;
	for (p = data + 1; p < end;) {
		const uint8_t *q =
			memmem(p, (size_t)(end - p), FUZZ_SEP, FUZZ_SEP_LEN);
		const uint8_t *rend = q ? q : end;

		if (rend > p)
			session_record(&s, p[0], p + 1, (size_t)(rend - p - 1));
		if (!q)
			break;
		p = q + FUZZ_SEP_LEN;
	}
	session_end(&s);
	if (trace)
		fprintf(stderr, "session: %u packets, %llu replies\n",
			s.packets, (unsigned long long)s.replies);
	return 0;
}

/* A valid hello, packed. */
static size_t pack_hello(uint8_t *buf, size_t cap)
{
	Rdmab__HelloRequest hello = RDMAB__HELLO_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	hello.library_version = (char *)"corpus";
	hello.pid = 1;
	req.version = WIRE_PROTOCOL_VERSION;
	req.serial = 1;
	req.body_case = RDMAB__REQUEST__BODY_HELLO;
	req.hello = &hello;
	if (rdmab__request__get_packed_size(&req) > cap)
		return 0;
	return rdmab__request__pack(&req, buf);
}

int fuzz_wrap_packet(const char *name, const uint8_t *pkt, size_t len,
		     uint8_t **ret)
{
	uint8_t hello[128], *out, *o;
	size_t hlen = 0;
	const char *f = strstr(name, ".fds");
	unsigned int nfds = 0;

	if (strstr(name, ".hello."))
		hlen = pack_hello(hello, sizeof(hello));
	if (f)
		nfds = (unsigned int)strtoul(f + 4, NULL, 10);
	if (nfds > MAX_SEND_FDS)
		nfds = MAX_SEND_FDS;
	out = malloc(1 + (hlen ? 1 + hlen + FUZZ_SEP_LEN : 0) + 1 + len);
	if (!out)
		return -ENOMEM;
	o = out;
	*o++ = FUZZ_ID_ROOT;
	if (hlen) {
		*o++ = 0;
		memcpy(o, hello, hlen);
		o += hlen;
		memcpy(o, FUZZ_SEP, FUZZ_SEP_LEN);
		o += FUZZ_SEP_LEN;
	}
	*o++ = (uint8_t)nfds;
	memcpy(o, pkt, len);
	o += len;
	*ret = out;
	return (int)(o - out);
}
