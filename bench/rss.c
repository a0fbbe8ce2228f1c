// SPDX-License-Identifier: MIT
/*
 * make bench-rss (issue 11): ibc_rss_lookup() against a straightforward
 * bit-by-bit Toeplitz hash of the same flows in the same run (the table
 * entry taken the same way), and the ibc_rss_create() round trip against
 * a raw SOCK_SEQPACKET round trip of about its sizes (the issue's
 * baseline) and an empty ibc_ping(), on rdmabrokerd's soft device, every
 * process pinned to one CPU; and a create over 4096 WQs (the most a table
 * takes) against the 8-WQ one, whose difference is the broker's per-WQ
 * work (issue 23 item 4: the duplicate check was quadratic). Figures are
 * ratios of medians over repetitions.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/bench.h"
#include "common/rss/toeplitz.h"
#include "include/ibclient.h"

#define FLOWS 4096
#define REPS 7
#define LOOKUP_ROUNDS 200
#define RTT_ITERS 2000
/* The raw baseline's sizes: about an RssCreateRequest over 8 WQs and its
 * reply. */
#define RAW_REQ 96
#define RAW_REP 128
/* The big create: IBC_RSS_MAX_WQS WQs in a table of as many entries. */
#define BIG_LOG 12
#define BIG_ITERS 20

static const uint8_t key[40] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
	0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
	0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
	0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

static struct ibc_flow flows[FLOWS];
static volatile uint64_t sink;

static const char *tmpdir;

static void done(void)
{
	cleanup_all();
	if (tmpdir)
		remove_tree(tmpdir);
}

static int die(const char *what)
{
	fprintf(stderr, "rdmab-bench-rss: %s: %s\n", what, ibc_last_error());
	done();
	return 1;
}

/* The raw baseline's peer: answers every packet with RAW_REP bytes until
 * end of stream; it inherits the driver's CPU. */
static int rss_raw_peer(int fd, const void *arg)
{
	uint8_t buf[512], rep[RAW_REP] = { 0 };

	while (recv(fd, buf, sizeof(buf), 0) > 0)
		if (send(fd, rep, sizeof(rep), MSG_NOSIGNAL) < 0)
			break;
	return 0;
}

/* @iters raw round trips; the mean in ns, or a negative errno. */
static double raw_rtt(int fd, unsigned int iters)
{
	uint8_t req[RAW_REQ] = { 0 }, rep[512];
	uint64_t t0 = now_ns();

	for (unsigned int i = 0; i < iters; i++)
		if (send(fd, req, sizeof(req), MSG_NOSIGNAL) < 0 ||
		    recv(fd, rep, sizeof(rep), 0) != RAW_REP)
			return -EPROTO;
	return (double)(now_ns() - t0) / iters;
}

/* The bit loop, fed as ibc_rss_lookup() feeds the table. */
static uint64_t bits_lookup(const struct ibc_flow *f, const uint64_t *ids,
			    uint32_t n, uint32_t mask)
{
	uint8_t in[12];
	uint32_t h;

	memcpy(in, f->src_addr, 4);
	memcpy(in + 4, f->dst_addr, 4);
	in[8] = f->src_port >> 8;
	in[9] = f->src_port & 0xff;
	in[10] = f->dst_port >> 8;
	in[11] = f->dst_port & 0xff;
	h = toeplitz_hash_bits(key, in, sizeof(in));
	return ids[(h & mask) % n];
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/rdmab-bench-rss.XXXXXX", sock[128], rundir[128],
	     log[128], conf[128];
	char *dargv[] = { argc > 1 ? argv[1] : "./rdmabrokerd",
			  "--socket",
			  sock,
			  "--runtime-dir",
			  rundir,
			  "--config",
			  conf,
			  "--device",
			  "soft",
			  "--log-level",
			  "notice",
			  "--foreground",
			  NULL };
	double lib[REPS], bits[REPS], create[REPS], ping[REPS], raw[REPS],
		big[REPS];
	static uint64_t big_ids[IBC_RSS_MAX_WQS];
	struct ibc_rss_attr b;
	struct ibc_connect_attr ca = { .comp_mask = IBC_CONNECT_ATTR_SOCKET };
	struct ibc_rss_attr a = { .port_num = 1, .log_ind_tbl_size = 7 };
	uint64_t ids[8];
	struct ibc_client *cl;
	struct ibc_ctx *x;
	struct ibc_cq *cq;
	struct ibc_rss *rss;
	pid_t pid;
	int fd, raw_fd = -1;
	pid_t raw_pid;

	cleanup_install();
	if (!mkdtemp(dir))
		return 1;
	tmpdir = dir;
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	snprintf(rundir, sizeof(rundir), "%s/run", dir);
	snprintf(log, sizeof(log), "%s/log", dir);
	snprintf(conf, sizeof(conf), "%s/rdmabroker.conf", dir);
	fd = open(conf, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, "[defaults]\n", 11) != 11 || close(fd) < 0)
		return 1;
	pin_self();
	if (spawn(dargv, log, &pid) < 0 ||
	    unix_connect_wait(sock, 10000, pid, &fd) < 0) {
		fprintf(stderr, "rdmab-bench-rss: cannot start %s (log: %s)\n",
			dargv[0], log);
		cleanup_all();
		return 1;
	}
	close(fd);
	ca.socket_path = sock;
	if (ibc_connect(&ca, &cl) < 0 || ibc_open(cl, NULL, &x) < 0 ||
	    ibc_cq_create(x, 64, &cq) < 0)
		return die("connect");
	for (int i = 0; i < 8; i++) {
		struct ibc_wq *wq;

		if (ibc_wq_create(x, cq, NULL, &wq) < 0)
			return die("ibc_wq_create");
		ids[i] = ibc_wq_id(wq);
	}
	a.num_wqs = 8;
	a.wq_ids = ids;
	memcpy(a.hash_key, key, sizeof(key));
	a.hash_fields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
			IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;
	a.match.af = AF_INET;
	a.match.l4_proto = IPPROTO_UDP;
	a.match.dst_port = 4791;
	a.match.port_mask = 0xffff;
	srand(1);
	for (int i = 0; i < FLOWS; i++) {
		uint32_t s = (uint32_t)rand(), d = (uint32_t)rand();

		flows[i].af = AF_INET;
		memcpy(flows[i].src_addr, &s, 4);
		memcpy(flows[i].dst_addr, &d, 4);
		flows[i].src_port = (uint16_t)rand();
		flows[i].dst_port = 4791;
		flows[i].l4_proto = IPPROTO_UDP;
	}
	if (ibc_rss_create(x, &a, &rss) < 0)
		return die("ibc_rss_create");
	/* Both agree before either is timed. */
	for (int i = 0; i < FLOWS; i++) {
		uint64_t wq;

		ibc_rss_lookup(rss, &flows[i], NULL, &wq);
		if (wq != bits_lookup(&flows[i], ids, 8, 127)) {
			fprintf(stderr,
				"rdmab-bench-rss: flow %d: the table "
				"and the bit loop disagree\n",
				i);
			done();
			return 1;
		}
	}
	for (int r = 0; r < REPS; r++) {
		uint64_t t0 = now_ns(), acc = 0, wq;

		for (int k = 0; k < LOOKUP_ROUNDS; k++)
			for (int i = 0; i < FLOWS; i++) {
				ibc_rss_lookup(rss, &flows[i], NULL, &wq);
				acc += wq;
			}
		lib[r] = (double)(now_ns() - t0) / (LOOKUP_ROUNDS * FLOWS);
		t0 = now_ns();
		for (int k = 0; k < LOOKUP_ROUNDS / 10; k++)
			for (int i = 0; i < FLOWS; i++)
				acc += bits_lookup(&flows[i], ids, 8, 127);
		bits[r] =
			(double)(now_ns() - t0) / (LOOKUP_ROUNDS / 10 * FLOWS);
		sink += acc;
	}
	ibc_rss_destroy(rss);
	memcpy(big_ids, ids, sizeof(ids));
	for (int i = 8; i < IBC_RSS_MAX_WQS; i++) {
		struct ibc_wq *wq;

		if (ibc_wq_create(x, cq, NULL, &wq) < 0)
			return die("ibc_wq_create");
		big_ids[i] = ibc_wq_id(wq);
	}
	b = a;
	b.num_wqs = IBC_RSS_MAX_WQS;
	b.wq_ids = big_ids;
	b.log_ind_tbl_size = BIG_LOG;
	if (raw_peer_start(rss_raw_peer, NULL, &raw_fd, &raw_pid) < 0) {
		fprintf(stderr, "rdmab-bench-rss: cannot start the raw peer\n");
		done();
		return 1;
	}
	for (int r = 0; r < REPS; r++) {
		uint64_t t = 0, t0;

		for (int i = 0; i < RTT_ITERS / 10; i++) {
			t0 = now_ns();
			if (ibc_rss_create(x, &a, &rss) < 0)
				return die("ibc_rss_create");
			t += now_ns() - t0;
			ibc_rss_destroy(rss);
		}
		create[r] = (double)t / (RTT_ITERS / 10);
		t0 = now_ns();
		for (int i = 0; i < RTT_ITERS; i++)
			if (ibc_ping(cl, NULL, 0) < 0)
				return die("ibc_ping");
		ping[r] = (double)(now_ns() - t0) / RTT_ITERS;
		t = 0;
		for (int i = 0; i < BIG_ITERS; i++) {
			t0 = now_ns();
			if (ibc_rss_create(x, &b, &rss) < 0)
				return die("ibc_rss_create (4096 WQs)");
			t += now_ns() - t0;
			ibc_rss_destroy(rss);
		}
		big[r] = (double)t / BIG_ITERS;
		raw[r] = raw_rtt(raw_fd, RTT_ITERS);
		if (raw[r] < 0) {
			fprintf(stderr,
				"rdmab-bench-rss: the raw peer failed\n");
			done();
			return 1;
		}
	}
	close(raw_fd);
	printf("ibc_rss_lookup            %8.1f ns/flow (median of %d)\n",
	       median_dbl(lib, REPS), REPS);
	printf("bit-by-bit Toeplitz       %8.1f ns/flow\n",
	       median_dbl(bits, REPS));
	printf("  speed-up                %8.1f x (issue: >= 10)\n",
	       median_dbl(bits, REPS) / median_dbl(lib, REPS));
	printf("ibc_rss_create            %8.1f us (8 WQs, 128 entries)\n",
	       median_dbl(create, REPS) / 1000);
	printf("ibc_ping (empty)          %8.1f us\n",
	       median_dbl(ping, REPS) / 1000);
	printf("  create / ping           %8.2f\n",
	       median_dbl(create, REPS) / median_dbl(ping, REPS));
	printf("ibc_rss_create            %8.1f us (%d WQs, %d entries)\n",
	       median_dbl(big, REPS) / 1000, IBC_RSS_MAX_WQS, 1 << BIG_LOG);
	printf("  per WQ beyond 8         %8.1f ns\n",
	       (median_dbl(big, REPS) - median_dbl(create, REPS)) /
		       (IBC_RSS_MAX_WQS - 8));
	printf("raw round trip (%d B/%d B) %7.1f us\n", RAW_REQ, RAW_REP,
	       median_dbl(raw, REPS) / 1000);
	printf("  create / raw round trip %8.2f\n",
	       median_dbl(create, REPS) / median_dbl(raw, REPS));
	ibc_disconnect(cl);
	done();
	return 0;
}
