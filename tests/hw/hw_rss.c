// SPDX-License-Identifier: MIT
/*
 * RSS across processes on real mlx5 hardware (an Ethernet port); exits 77
 * (skipped) without it. Unverified until someone runs it on a ConnectX-5
 * or newer: see README.md.
 *
 * The daemon (rdmabrokerd --device verbs) runs as the caller (root: it
 * needs CAP_NET_RAW permitted). Two processes, one of them as nobody, both
 * members of one named domain that may claim the test's traffic (without
 * it they are two domains, and the table cannot span them), each make two
 * WQs in the domain's imported context and post receives on them;
 * the parent, an administrator, builds one table over the four
 * (ibc_rss_create), then sends test flows to the port's own MAC from a
 * RAW_PACKET QP of its own, which the NIC loops back into its receive
 * steering. Each process reports which of its WQs received which flow, and
 * the parent compares that with ibc_rss_lookup(): the hash input order and
 * the table index bits the library assumes are what the device does, or
 * the suite says where they differ.
 *
 * With --soft it runs against the soft device: the shared domain, the WQs
 * of both processes, the table over them, its rule and ibc_rss_lookup();
 * the receives and the frames are skipped (the soft device has no data
 * path), on SKIP lines.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define HW_NAME "hw_rss"
#include "tests/hw/hwlib.h"

#define FLOWS 32
#define WQS_EACH 2
#define BUFS 32
#define BUF_SIZE 2048
/* Not RoCEv2's 4791: with RoCE enabled mlx5 steers that port to its own
 * transport before any flow rule of ours sees it. */
#define UDP_PORT 9999

static const uint8_t key[IBC_RSS_KEY_LEN] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
	0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
	0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
	0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

static void flow_of(int i, struct ibc_flow *f)
{
	memset(f, 0, sizeof(*f));
	f->af = AF_INET;
	f->src_addr[0] = 198;
	f->src_addr[1] = 51;
	f->src_addr[2] = 100;
	f->src_addr[3] = (uint8_t)(i + 1);
	f->dst_addr[0] = 192;
	f->dst_addr[1] = 0;
	f->dst_addr[2] = 2;
	f->dst_addr[3] = 1;
	f->src_port = (uint16_t)(40000 + i);
	f->dst_port = UDP_PORT;
	f->l4_proto = IPPROTO_UDP;
}

/* --- the receivers ------------------------------------------------------ */

struct rx {
	struct ibc_cq *cq;
	struct ibc_wq *wq[WQS_EACH];
	struct ibv_mr *mr;
	uint8_t *buf;
};

static int rx_setup(struct ibc_ctx *ctx, struct rx *r)
{
	struct ibc_wq_attr wa = { .max_wr = BUFS, .max_sge = 1 };

	memset(r, 0, sizeof(*r));
	r->buf = calloc(WQS_EACH * BUFS, BUF_SIZE);
	CHECK(r->buf, "out of memory");
	CHECK(ibc_cq_create(ctx, 2 * WQS_EACH * BUFS, &r->cq) == 0, "CQ");
	for (int w = 0; w < WQS_EACH; w++)
		CHECK(ibc_wq_create(ctx, r->cq, &wa, &r->wq[w]) == 0, "WQ");
	if (hw_mode == HW_SOFT) {
		HW_SKIP("receive buffers", "the soft device has no data path");
		return 0;
	}
	r->mr = ibv_reg_mr(ibc_verbs_pd(ctx), r->buf,
			   WQS_EACH * BUFS * BUF_SIZE, IBV_ACCESS_LOCAL_WRITE);
	CHECK(r->mr, "ibv_reg_mr: %s", strerror(errno));
	for (int w = 0; w < WQS_EACH; w++) {
		for (int b = 0; b < BUFS; b++) {
			uint8_t *p = r->buf + (w * BUFS + b) * BUF_SIZE;
			struct ibv_sge sge = { .addr = (uintptr_t)p,
					       .length = BUF_SIZE,
					       .lkey = r->mr->lkey };
			struct ibv_recv_wr wr = { .wr_id = w * BUFS + b,
						  .sg_list = &sge,
						  .num_sge = 1 },
					   *bad;

			CHECK(ibv_post_wq_recv(ibc_verbs_wq(r->wq[w]), &wr,
					       &bad) == 0,
			      "ibv_post_wq_recv: %s", strerror(errno));
		}
	}
	return 0;
}

static void rx_teardown(struct rx *r)
{
	if (r->mr)
		ibv_dereg_mr(r->mr);
	for (int w = 0; w < WQS_EACH; w++)
		ibc_wq_destroy(r->wq[w]);
	ibc_cq_destroy(r->cq);
	free(r->buf);
}

/* Poll for 3 s after @go is readable; write "WQID FLOW" lines to @out. */
static void rx_report(struct rx *r, int out)
{
	time_t end = time(NULL) + 3;

	while (hw_mode != HW_SOFT && time(NULL) < end) {
		struct ibv_wc wc[16];
		int n = ibv_poll_cq(ibc_verbs_cq(r->cq), 16, wc);

		for (int i = 0; i < n; i++) {
			const uint8_t *p = r->buf + wc[i].wr_id * BUF_SIZE;
			int w = (int)(wc[i].wr_id / BUFS), flow = -1;
			char line[64];

			if (wc[i].status == IBV_WC_SUCCESS &&
			    wc[i].byte_len >= 46 &&
			    memcmp(p + 42, "flw", 3) == 0)
				flow = p[45];
			snprintf(line, sizeof(line), "%llu %d\n",
				 (unsigned long long)ibc_wq_id(r->wq[w]), flow);
			if (write(out, line, strlen(line)) < 0)
				return;
		}
		if (!n)
			usleep(1000);
	}
}

static int child(const char *dev, int ids_fd, int go_fd, int out_fd)
{
	struct ibc_client *c;
	struct ibc_ctx *ctx;
	struct rx r;
	char x;

	CHECK(geteuid() != 0 || hw_become(NOBODY) == 0, "cannot become uid %d",
	      NOBODY);
	CHECK(hw_connect(&c) == 0, "connect");
	CHECK(ibc_open(c, dev, &ctx) == 0, "ibc_open %s", dev);
	if (rx_setup(ctx, &r))
		return 1;
	for (int w = 0; w < WQS_EACH; w++) {
		uint64_t id = ibc_wq_id(r.wq[w]);

		CHECK(write(ids_fd, &id, sizeof(id)) == sizeof(id), "write");
	}
	close(ids_fd);
	CHECK(read(go_fd, &x, 1) == 1, "go");
	rx_report(&r, out_fd);
	close(out_fd);
	ibc_disconnect(c);
	return 0;
}

/* --- the sender ----------------------------------------------------------- */

static uint16_t ip_csum(const uint8_t *h, size_t len)
{
	uint32_t s = 0;

	for (size_t i = 0; i < len; i += 2)
		s += (uint32_t)(h[i] << 8 | h[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static size_t frame(uint8_t *p, const uint8_t dst[6], int i)
{
	struct ibc_flow f;
	size_t ip = 14, udp = 34, len = 46;

	flow_of(i, &f);
	memset(p, 0, len);
	memcpy(p, dst, 6);
	memcpy(p + 6, dst, 6);
	p[6] |= 0x02; /* a locally administered source */
	p[12] = 0x08;
	p[14] = 0x45;
	p[ip + 2] = (uint8_t)((len - ip) >> 8);
	p[ip + 3] = (uint8_t)(len - ip);
	p[ip + 8] = 64;
	p[ip + 9] = IPPROTO_UDP;
	memcpy(p + ip + 12, f.src_addr, 4);
	memcpy(p + ip + 16, f.dst_addr, 4);
	p[ip + 10] = (uint8_t)(ip_csum(p + ip, 20) >> 8);
	p[ip + 11] = (uint8_t)ip_csum(p + ip, 20);
	p[udp] = (uint8_t)(f.src_port >> 8);
	p[udp + 1] = (uint8_t)f.src_port;
	p[udp + 2] = (uint8_t)(f.dst_port >> 8);
	p[udp + 3] = (uint8_t)f.dst_port;
	p[udp + 5] = (uint8_t)(len - udp);
	memcpy(p + 42, "flw", 3);
	p[45] = (uint8_t)i;
	return len;
}

/* A RAW_PACKET QP of this process's own sends every flow to hw_eth_mac[]. */
static int send_flows(const char *dev)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	static uint8_t buf[FLOWS][64];
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.cap = { .max_send_wr = FLOWS,
			 .max_send_sge = 1,
			 .max_recv_wr = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_qp *qp;

	if (hw_mode == HW_SOFT) {
		HW_SKIP("frames", "the soft device has no data path");
		return 0;
	}
	for (int i = 0; list && list[i] && !ctx; i++)
		if (strcmp(ibv_get_device_name(list[i]), dev) == 0)
			ctx = ibv_open_device(list[i]);
	CHECK(ctx, "open %s", dev);
	pd = ibv_alloc_pd(ctx);
	qa.send_cq = qa.recv_cq = ibv_create_cq(ctx, FLOWS, NULL, NULL, 0);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), 0) : NULL;
	CHECK(pd && qa.send_cq && mr, "sender PD, CQ, MR");
	qp = ibv_create_qp(pd, &qa);
	CHECK(qp, "sender RAW_PACKET QP: %s", strerror(errno));
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT) == 0, "INIT");
	a.qp_state = IBV_QPS_RTR;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0, "RTR");
	a.qp_state = IBV_QPS_RTS;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0, "RTS");
	for (int i = 0; i < FLOWS; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)buf[i],
				       .length = (uint32_t)frame(buf[i],
								 hw_eth_mac, i),
				       .lkey = mr->lkey };
		struct ibv_send_wr wr = { .wr_id = i,
					  .sg_list = &sge,
					  .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		CHECK(ibv_post_send(qp, &wr, &bad) == 0, "post_send");
	}
	for (int done = 0, tries = 0; done < FLOWS && tries < 3000; tries++) {
		struct ibv_wc wc[FLOWS];
		int n = ibv_poll_cq(qa.send_cq, FLOWS, wc);

		done += n > 0 ? n : 0;
		usleep(1000);
	}
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(qa.send_cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	if (list)
		ibv_free_device_list(list);
	return 0;
}

/* The domain both processes join: the caller and nobody, allowed the
 * test's traffic. */
static int start_daemon(const char *bin)
{
	char conf[256];

	snprintf(conf, sizeof(conf),
		 "[domain hw]\nusers = %u, %d\n"
		 "rss_allow = ipv4/udp 192.0.2.1/32 %d\n",
		 (unsigned int)getuid(), NOBODY, UDP_PORT);
	hw_domain = "hw";
	return hw_start_daemon(bin, conf);
}

/* Every flow maps to one of the four WQs, and the table spreads them
 * over both processes' (entry i is WQ i mod 4). */
static int check_lookups(struct ibc_rss *rss, const uint64_t ids[])
{
	int per_side[2] = { 0 };

	for (int i = 0; i < FLOWS; i++) {
		struct ibc_flow fl;
		uint64_t want = 0;
		uint32_t h;
		int k = 0;

		flow_of(i, &fl);
		CHECK(ibc_rss_lookup(rss, &fl, &h, &want) == 0,
		      "ibc_rss_lookup of flow %d", i);
		while (k < 2 * WQS_EACH && ids[k] != want)
			k++;
		CHECK(k < 2 * WQS_EACH,
		      "flow %d: WQ %llu is none of the table's", i,
		      (unsigned long long)want);
		per_side[k / WQS_EACH]++;
	}
	CHECK(per_side[0] && per_side[1],
	      "the %d flows all map to one process's WQs (%d, %d)", FLOWS,
	      per_side[0], per_side[1]);
	printf("hw_rss: %d flows map to the child's WQs, %d to the parent's\n",
	       per_side[0], per_side[1]);
	return 0;
}

int main(int argc, char **argv)
{
	const char *bin = getenv("RDMABROKERD");
	const char *dev;
	uint64_t ids[2 * WQS_EACH], got[FLOWS] = { 0 };
	int idp[2], gop[2], outp[2], outc[2], ret = 0, n_ok = 0;
	struct ibc_rss_attr ra = { .port_num = 1, .log_ind_tbl_size = 4 };
	struct ibc_client *c;
	struct ibc_ctx *ctx;
	struct ibc_rss *rss;
	unsigned long long wq;
	struct rx r;
	pid_t pid;
	int flow;
	FILE *f;

	ret = hw_init(argc, argv, hw_find_mlx5_eth, &dev);
	if (ret)
		return ret;
	if (hw_mode == HW_OWN) {
		fprintf(stderr, "hw_rss: --own: a context of one's own has no "
				"RSS across processes\n");
		return 2;
	}
	if (!bin || hw_mkdir("rdmab-hwrss") < 0 || pipe2(idp, O_CLOEXEC) ||
	    pipe2(gop, O_CLOEXEC) || pipe2(outp, O_CLOEXEC) ||
	    pipe2(outc, O_CLOEXEC))
		return 99;
	if (start_daemon(bin) < 0) {
		hw_stop_daemon(NULL);
		return 1;
	}
	if (geteuid() != 0)
		HW_SKIP("a second uid", "not run as root: both processes are "
					"the caller");
	pid = fork();
	if (pid == 0)
		_exit(child(dev, idp[1], gop[0], outc[1]));
	close(idp[1]);
	close(gop[0]);
	close(outc[1]);
	for (int w = 0; w < WQS_EACH; w++)
		if (read(idp[0], &ids[w], sizeof(ids[w])) != sizeof(ids[w]))
			ret = 1;
	if (ret || hw_connect(&c) || ibc_open(c, dev, &ctx) ||
	    rx_setup(ctx, &r)) {
		fprintf(stderr, "hw_rss: setup failed (%s)\n",
			ibc_last_error());
		kill(pid, SIGKILL);
		hw_stop_daemon(NULL);
		return 1;
	}
	for (int w = 0; w < WQS_EACH; w++)
		ids[WQS_EACH + w] = ibc_wq_id(r.wq[w]);
	ra.num_wqs = 2 * WQS_EACH;
	ra.wq_ids = ids;
	memcpy(ra.hash_key, key, sizeof(key));
	ra.hash_fields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
			 IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;
	ra.match.af = AF_INET;
	inet_pton(AF_INET, "192.0.2.1", ra.match.dst_addr);
	ra.match.prefix_len = 32;
	ra.match.l4_proto = IPPROTO_UDP;
	ra.match.dst_port = UDP_PORT;
	ra.match.port_mask = 0xffff;
	if (ibc_rss_create(ctx, &ra, &rss)) {
		fprintf(stderr, "hw_rss: ibc_rss_create on %s: %s\n", dev,
			ibc_last_error());
		kill(pid, SIGKILL);
		hw_stop_daemon(NULL);
		return 1;
	}
	printf("hw_rss: RSS %llu over WQs %llu %llu (%s) %llu %llu "
	       "(uid %u), domain hw\n",
	       (unsigned long long)ibc_rss_id(rss), (unsigned long long)ids[0],
	       (unsigned long long)ids[1],
	       geteuid() ? "the same uid" : "nobody",
	       (unsigned long long)ids[2], (unsigned long long)ids[3],
	       (unsigned int)getuid());
	if (check_lookups(rss, ids))
		ret = 1;
	if (write(gop[1], "g", 1) != 1 || send_flows(dev))
		ret = 1;
	rx_report(&r, outp[1]);
	close(outp[1]);
	waitpid(pid, NULL, 0);
	for (int k = 0; k < 2; k++) {
		f = fdopen(k ? outc[0] : outp[0], "r");
		while (f && fscanf(f, "%llu %d", &wq, &flow) == 2)
			if (flow >= 0 && flow < FLOWS)
				got[flow] = wq;
		if (f)
			fclose(f);
	}
	for (int i = 0; hw_mode != HW_SOFT && i < FLOWS; i++) {
		struct ibc_flow fl;
		uint64_t want;
		uint32_t h;

		flow_of(i, &fl);
		ibc_rss_lookup(rss, &fl, &h, &want);
		if (got[i] == want) {
			n_ok++;
			continue;
		}
		printf("hw_rss: flow %d (198.51.100.%d:%d): hash %08x, "
		       "ibc_rss_lookup says WQ %llu, the device delivered to "
		       "%s%llu\n",
		       i, i + 1, 40000 + i, h, (unsigned long long)want,
		       got[i] ? "WQ " : "nothing ", (unsigned long long)got[i]);
		ret = 1;
	}
	ibc_rss_destroy(rss);
	rx_teardown(&r);
	ibc_disconnect(c);
	hw_stop_daemon(NULL);
	if (hw_mode == HW_SOFT)
		printf("hw_rss: %s: the table over both processes: %s\n", dev,
		       ret ? "FAIL" : "PASS");
	else
		printf("hw_rss: %s: %d of %d flows where ibc_rss_lookup said: "
		       "%s\n",
		       dev, n_ok, FLOWS, ret ? "FAIL" : "PASS");
	return ret;
}
