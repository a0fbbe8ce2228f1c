// SPDX-License-Identifier: MIT
/*
 * Device memory on real mlx5 hardware (MEMIC); exits 77 (skipped) without
 * it, or on a device without MEMIC (max_dm_size 0: ConnectX-4, many VFs).
 * Unverified until someone runs it on a ConnectX-5 or newer: see
 * README.md.
 *
 * The daemon (rdmabrokerd --device verbs) must report the device's DM as
 * shareable (its start-up self-test). This process first dirties MEMIC in
 * a context of its own (mlx5 allocates first-fit, so the broker's DM gets
 * those pages), then allocates a DM through the broker and finds it zeroed,
 * and writes it; a second process of the same uid (the same domain)
 * imports it by handle, reads the same bytes and writes others back, which
 * this process reads. A process of another uid (nobody, when run as root)
 * in the same named domain imports a second DM, reads and writes it, and
 * is killed holding it after its allocator asked the free: the DM is
 * listed free pending until the SIGKILL, then freed. An RDMA write from
 * host memory into an MR on the DM (ibc_reg_dm_mr), between two RC QPs of
 * this process, lands in the DM (ibc_dm_read), and an RDMA read brings it
 * back. mlx5's own bounds and alignment rules are checked on the struct
 * ibv_dm, beside the library's. An MR registered with raw verbs (which the
 * library does not count) makes the broker's ibv_free_dm EBUSY: the DM is
 * listed free blocked until the MR goes. Allocating until the device has
 * no MEMIC left gives ENOSPC, and freeing everything gives it all back.
 *
 * --soft: the same against the soft device, but for what needs a struct
 * ibv_dm or a data path (dirtying MEMIC first, the RDMA transfers,
 * mlx5's rules, the raw MR), each said on a SKIP line.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define HW_NAME "hw_dm"
#include "tests/hw/hwlib.h"
#include "tests/vm/vmutil.h"

/* A quota above any MEMIC, so that the device runs out first. */
#define DM_QUOTA "dm_bytes = 268435456\n"

/* A DM's length: one page, as the broker rounds it. */
static size_t dm_len;

/* Never the machine's own configuration: one named domain of the caller
 * and nobody, so that another uid may import. */
static int start_daemon(const char *bin)
{
	char conf[256];

	snprintf(conf, sizeof(conf),
		 "[defaults]\n" DM_QUOTA
		 "[domain hw]\nusers = %u, %d\n" DM_QUOTA,
		 (unsigned int)getuid(), NOBODY);
	hw_domain = "hw";
	return hw_start_daemon(bin, conf);
}

static void pattern(uint32_t *w, size_t words, uint32_t seed)
{
	for (size_t i = 0; i < words; i++)
		w[i] = seed * 2654435761u + (uint32_t)i;
}

/* Write a pattern into MEMIC in a context of this process's own and free
 * it, so that a DM that is not zeroed shows. 1 when it could not (no
 * access to the device): said, and the zero check is then weaker. */
static int dirty_memic(const char *dev)
{
	struct ibv_alloc_dm_attr attr = { .length = dm_len };
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *own = NULL;
	struct ibv_dm *dm = NULL;
	uint32_t *w = malloc(dm_len);
	int ret = 1;

	if (hw_mode == HW_SOFT) {
		HW_SKIP("dirtying MEMIC", "the soft device's DM is a memfd");
		free(w);
		return 1;
	}
	for (int i = 0; list && list[i] && !own; i++)
		if (strcmp(ibv_get_device_name(list[i]), dev) == 0)
			own = ibv_open_device(list[i]);
	if (own && w)
		dm = ibv_alloc_dm(own, &attr);
	if (dm) {
		pattern(w, dm_len / 4, 7);
		ret = ibv_memcpy_to_dm(dm, 0, w, dm_len) ? 1 : 0;
		ibv_free_dm(dm);
	}
	if (ret)
		printf("hw_dm: could not dirty MEMIC first; the zero check "
		       "sees only what the device gave\n");
	if (own)
		ibv_close_device(own);
	if (list)
		ibv_free_device_list(list);
	free(w);
	return ret;
}

/* The state the broker lists for DM @id; -1 when it lists none. */
static int dm_state(struct ibc_client *c, uint64_t id)
{
	struct ibc_dm_info *info;
	size_t n = 0;
	int state = -1;

	if (ibc_list_dms(c, &info, sizeof(*info), &n) < 0)
		return -2;
	for (size_t i = 0; i < n; i++)
		if (info[i].id == id)
			state = (int)info[i].state;
	ibc_list_free(info);
	return state;
}

/*
 * A second process: import @handle, check seed @seed's bytes, write seed
 * @seed + 1's. With @out_fd -1 it then lets the DM go; otherwise it is the
 * importer of another uid (nobody, when run as root), says so on @out_fd
 * and holds the DM until killed.
 */
static int importer(const char *dev, uint32_t handle, uint32_t seed, int out_fd)
{
	uint32_t *want = malloc(dm_len), *got = malloc(dm_len);
	struct ibc_client *c;
	struct ibc_ctx *ctx;
	struct ibc_dm *dm;

	CHECK(want && got, "out of memory");
	CHECK(out_fd < 0 || geteuid() != 0 || hw_become(NOBODY) == 0,
	      "cannot become uid %d", NOBODY);
	CHECK(hw_connect(&c) == 0, "importer: connect");
	CHECK(ibc_open(c, dev, &ctx) == 0, "importer: ibc_open %s", dev);
	CHECK(ibc_dm_import(ctx, handle, &dm) == 0,
	      "importer (uid %u): ibc_dm_import %u", (unsigned int)getuid(),
	      handle);
	CHECK(hw_mode == HW_SOFT || ibc_verbs_dm(dm), "no struct ibv_dm");
	pattern(want, dm_len / 4, seed);
	CHECK(ibc_dm_read(dm, got, 0, dm_len) == 0, "importer: ibc_dm_read");
	CHECK(memcmp(want, got, dm_len) == 0,
	      "the importer (uid %u) reads other bytes than were written",
	      (unsigned int)getuid());
	pattern(want, dm_len / 4, seed + 1);
	CHECK(ibc_dm_write(dm, 0, want, dm_len) == 0, "importer: write");
	if (out_fd < 0) {
		CHECK(ibc_dm_unimport(dm) == 0, "ibc_dm_unimport");
		ibc_disconnect(c);
		free(want);
		free(got);
		return 0;
	}
	CHECK(write(out_fd, "i", 1) == 1, "write");
	for (;;)
		pause();
}

/* A DM imported by another uid of the domain: both see each other's
 * bytes; freed by its allocator it waits free pending for the importer,
 * whose SIGKILL then frees it. */
static int killed_importer(const char *dev, struct ibc_client *c,
			   struct ibc_ctx *ctx)
{
	uint32_t *buf = malloc(dm_len), *want = malloc(dm_len);
	int p[2], state = -2;
	struct ibc_dm *dm;
	pid_t pid;
	uint64_t id;
	char x;

	CHECK(buf && want && pipe2(p, O_CLOEXEC) == 0, "out of memory");
	if (geteuid() != 0)
		HW_SKIP("a second uid", "not run as root: the importer is the "
					"caller's uid");
	CHECK(ibc_dm_alloc(ctx, dm_len, 0, &dm) == 0, "ibc_dm_alloc");
	id = ibc_dm_id(dm);
	pattern(want, dm_len / 4, 3);
	CHECK(ibc_dm_write(dm, 0, want, dm_len) == 0, "ibc_dm_write");
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		_exit(importer(dev, ibc_dm_handle(dm), 3, p[1]));
	}
	close(p[1]);
	CHECK(pid > 0 && read(p[0], &x, 1) == 1, "the importer failed");
	close(p[0]);
	pattern(want, dm_len / 4, 4);
	CHECK(ibc_dm_read(dm, buf, 0, dm_len) == 0 &&
		      memcmp(buf, want, dm_len) == 0,
	      "the allocator does not read what the other uid wrote");
	CHECK(ibc_dm_free(dm) == 0, "ibc_dm_free with an importer");
	state = dm_state(c, id);
	CHECK(state == IBC_DM_FREE_PENDING,
	      "DM %llu listed in state %d with its importer alive, not free "
	      "pending",
	      (unsigned long long)id, state);
	CHECK(kill(pid, SIGKILL) == 0 && waitpid(pid, NULL, 0) == pid,
	      "kill the importer");
	for (int i = 0; (state = dm_state(c, id)) != -1; i++) {
		CHECK(i < 50,
		      "DM %llu stayed in state %d after its importer's SIGKILL",
		      (unsigned long long)id, state);
		usleep(100000);
	}
	printf("hw_dm: DM %llu: imported by uid %d, free pending, freed after "
	       "the importer's SIGKILL\n",
	       (unsigned long long)id, geteuid() ? (int)geteuid() : NOBODY);
	free(buf);
	free(want);
	return 0;
}

/* One completion of @cq within 15 s. */
static int poll_one(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	for (int i = 0; i < 15000; i++) {
		int n = ibv_poll_cq(cq, 1, &wc);

		CHECK(n >= 0, "ibv_poll_cq");
		if (n == 1) {
			CHECK(wc.status == IBV_WC_SUCCESS, "completion: %s",
			      ibv_wc_status_str(wc.status));
			return 0;
		}
		usleep(1000);
	}
	fprintf(stderr, "hw_dm: no completion in 15 s\n");
	return 1;
}

/* Post one RDMA @op of @len bytes at @local (lkey @lkey) against offset 0
 * of the DM MR @rkey, and wait for it. */
static int rdma_one(struct ibc_qp *qp, struct ibc_cq *cq, enum ibv_wr_opcode op,
		    void *local, uint32_t lkey, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)local,
			       .length = (uint32_t)dm_len,
			       .lkey = lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		/* The MR is zero-based: its address 0 is the DM's. */
		.wr.rdma = { .remote_addr = 0, .rkey = rkey },
	},
			   *bad;

	CHECK(ibv_post_send(ibc_verbs_qp(qp), &wr, &bad) == 0, "ibv_post_send");
	return poll_one(ibc_verbs_cq(cq));
}

/* An RDMA write from host memory into an MR on @dm, between two RC QPs of
 * this process connected to each other; the DM holds the bytes, and an
 * RDMA read brings them back. */
static int rdma_into_dm(struct ibc_ctx *ctx, struct ibc_dm *dm)
{
	unsigned int acc = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibc_qp_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4,
			 .max_recv_wr = 1,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	uint8_t *host = aligned_alloc(4096, 2 * dm_len);
	uint32_t *got = malloc(dm_len);
	struct ibc_mr *host_mr, *dm_mr;
	struct vm_rc rc[2];
	struct ibc_qp *qp[2];
	struct ibc_cq *cq;

	if (hw_mode == HW_SOFT) {
		HW_SKIP("the RDMA write into the DM MR",
			"the soft device has no data path");
		free(host);
		free(got);
		return 0;
	}
	CHECK(host && got, "out of memory");
	memset(host, 0, 2 * dm_len);
	pattern((uint32_t *)host, dm_len / 4, 5);
	CHECK(ibc_cq_create(ctx, 16, &cq) == 0, "ibc_cq_create");
	qa.send_cq = cq;
	qa.recv_cq = cq;
	CHECK(ibc_reg_mr(ctx, host, 2 * dm_len, IBV_ACCESS_LOCAL_WRITE,
			 &host_mr) == 0,
	      "ibc_reg_mr");
	CHECK(ibc_reg_dm_mr(dm, 0, dm_len, acc, &dm_mr) == 0,
	      "ibc_reg_dm_mr with remote access");
	for (int i = 0; i < 2; i++) {
		CHECK(ibc_qp_create(ctx, &qa, &qp[i]) == 0, "ibc_qp_create");
		CHECK(vm_rc_adopt(&rc[i], ibc_verbs_context(ctx),
				  ibc_verbs_qp(qp[i]), ibc_verbs_mr(host_mr),
				  host, 2 * dm_len) == 0,
		      "QP to INIT");
	}
	CHECK(vm_rc_connect(&rc[0], &rc[1].local) == 0 &&
		      vm_rc_connect(&rc[1], &rc[0].local) == 0,
	      "the QPs to RTR and RTS");
	if (rdma_one(qp[0], cq, IBV_WR_RDMA_WRITE, host, ibc_mr_lkey(host_mr),
		     ibc_mr_rkey(dm_mr)))
		return 1;
	CHECK(ibc_dm_read(dm, got, 0, dm_len) == 0 &&
		      memcmp(got, host, dm_len) == 0,
	      "the DM does not hold what the RDMA write carried");
	if (rdma_one(qp[0], cq, IBV_WR_RDMA_READ, host + dm_len,
		     ibc_mr_lkey(host_mr), ibc_mr_rkey(dm_mr)))
		return 1;
	CHECK(memcmp(host + dm_len, host, dm_len) == 0,
	      "the RDMA read from the DM MR brought other bytes");
	for (int i = 0; i < 2; i++)
		CHECK(ibc_qp_destroy(qp[i]) == 0, "ibc_qp_destroy");
	CHECK(ibc_dereg_mr(dm_mr) == 0 && ibc_dereg_mr(host_mr) == 0 &&
		      ibc_cq_destroy(cq) == 0,
	      "teardown");
	printf("hw_dm: %zu bytes RDMA-written into a DM MR and read back\n",
	       dm_len);
	free(host);
	free(got);
	return 0;
}

/* mlx5's own rules on the struct ibv_dm, in its order: past the end
 * EFAULT, then unaligned EINVAL (never a wrapping offset: its check
 * wraps). */
static int provider_rules(struct ibc_dm *dm, const uint32_t *buf)
{
	struct ibv_dm *vdm;

	if (hw_mode == HW_SOFT) {
		HW_SKIP("mlx5's rules", "the soft device has no struct ibv_dm");
		return 0;
	}
	vdm = ibc_verbs_dm(dm);
	CHECK(vdm, "no struct ibv_dm");
	CHECK(ibv_memcpy_to_dm(vdm, dm_len - 4, buf, 8) == EFAULT,
	      "mlx5: no EFAULT past the end");
	CHECK(ibv_memcpy_to_dm(vdm, 2, buf, 4) == EINVAL,
	      "mlx5: no EINVAL for an unaligned offset");
	CHECK(ibv_memcpy_to_dm(vdm, dm_len + 2, buf, 4) == EFAULT,
	      "mlx5: bounds are not checked before alignment");
	return 0;
}

/* An MR the library does not know of: the broker's ibv_free_dm meets the
 * kernel's EBUSY, and the DM waits free blocked until it goes. */
static int kernel_blocks_free(struct ibc_client *c, struct ibc_ctx *ctx)
{
	unsigned int acc = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE;
	struct ibc_dm *dm;
	struct ibv_mr *mr;
	uint64_t id;
	int state;

	if (hw_mode == HW_SOFT) {
		HW_SKIP("an MR of raw verbs",
			"the soft device has no struct ibv_dm");
		return 0;
	}
	CHECK(ibc_dm_alloc(ctx, dm_len, 0, &dm) == 0, "ibc_dm_alloc");
	id = ibc_dm_id(dm);
	mr = ibv_reg_dm_mr(ibc_verbs_pd(ctx), ibc_verbs_dm(dm), 0, dm_len, acc);
	CHECK(mr, "ibv_reg_dm_mr: %s", strerror(errno));
	CHECK(ibc_dm_free(dm) == 0, "ibc_dm_free with a raw MR");
	state = dm_state(c, id);
	CHECK(state == IBC_DM_FREE_BLOCKED,
	      "DM %llu listed in state %d, not free blocked",
	      (unsigned long long)id, state);
	CHECK(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr");
	/* The broker tries a blocked free again on its own. */
	for (int i = 0; (state = dm_state(c, id)) != -1; i++) {
		CHECK(i < 100, "DM %llu stayed in state %d after its MR went",
		      (unsigned long long)id, state);
		usleep(100000);
	}
	return 0;
}

static int run(const char *dev)
{
	unsigned int acc = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE;
	uint32_t *buf = malloc(dm_len), *want = malloc(dm_len);
	struct ibc_dm *dm, **many;
	struct ibc_device_info *d;
	uint64_t max_dm = 0;
	struct ibc_client *c;
	struct ibc_ctx *ctx;
	struct ibc_mr *mr;
	size_t nd, n = 0, max_n;
	int err = 0, st, shared = -1;
	char reason[256] = "";
	pid_t pid;

	CHECK(buf && want, "out of memory");
	CHECK(hw_connect(&c) == 0, "connect");
	CHECK(ibc_list_devices(c, &d, sizeof(*d), &nd) == 0, "list");
	for (size_t i = 0; i < nd; i++)
		if (strcmp(d[i].name, dev) == 0) {
			max_dm = d[i].max_dm_size;
			shared = d[i].dm_shared;
			snprintf(reason, sizeof(reason), "%s", d[i].dm_reason);
		}
	ibc_list_free(d);
	if (max_dm < dm_len) {
		printf("hw_dm: %s has no device memory of a page (max_dm_size "
		       "%llu); skipped\n",
		       dev, (unsigned long long)max_dm);
		return SKIP;
	}
	if (shared != 1 && strstr(reason, "before 5.13")) {
		printf("hw_dm: %s: %s; skipped\n", dev, reason);
		return SKIP;
	}
	if (shared != 1) {
		fprintf(stderr, "hw_dm: %s: DM not shareable: %s\n", dev,
			reason);
		return 1;
	}
	dirty_memic(dev);
	CHECK(ibc_open(c, dev, &ctx) == 0, "ibc_open %s", dev);
	CHECK(ibc_dm_alloc(ctx, 100, 0, &dm) == 0, "ibc_dm_alloc");
	CHECK(ibc_dm_length(dm) == dm_len, "length %zu, not a page (%zu)",
	      ibc_dm_length(dm), dm_len);
	CHECK(ibc_dm_read(dm, buf, 0, dm_len) == 0, "ibc_dm_read");
	memset(want, 0, dm_len);
	CHECK(memcmp(buf, want, dm_len) == 0, "a new DM is not zeroed");
	pattern(want, dm_len / 4, 1);
	CHECK(ibc_dm_write(dm, 0, want, dm_len) == 0, "ibc_dm_write");
	pid = fork();
	if (pid == 0)
		_exit(importer(dev, ibc_dm_handle(dm), 1, -1));
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		      WEXITSTATUS(st) == 0,
	      "the second process failed");
	pattern(want, dm_len / 4, 2);
	CHECK(ibc_dm_read(dm, buf, 0, dm_len) == 0, "ibc_dm_read");
	CHECK(memcmp(buf, want, dm_len) == 0,
	      "this process does not read what the second one wrote");
	/* The library's checks first (a wrapping offset never reaches mlx5,
	 * whose check would wrap), then mlx5's own. */
	CHECK(ibc_dm_write(dm, UINT64_MAX - 3, buf, 8) == -EFAULT,
	      "no EFAULT for a wrapping offset");
	CHECK(ibc_dm_write(dm, 2, buf, 4) == -EINVAL, "no EINVAL");
	if (provider_rules(dm, buf) || rdma_into_dm(ctx, dm) ||
	    killed_importer(dev, c, ctx))
		return 1;
	CHECK(ibc_reg_dm_mr(dm, 0, dm_len, acc, &mr) == 0, "ibc_reg_dm_mr");
	CHECK(ibc_dm_free(dm) == -EBUSY, "free with an MR on the DM");
	CHECK(ibc_dereg_mr(mr) == 0, "ibc_dereg_mr");
	CHECK(ibc_dm_free(dm) == 0, "ibc_dm_free");
	if (kernel_blocks_free(c, ctx))
		return 1;
	/* Until the device has no MEMIC left: at most what it reports. */
	max_n = max_dm / dm_len + 1;
	many = calloc(max_n, sizeof(*many));
	CHECK(many, "out of memory");
	while (n < max_n && (err = ibc_dm_alloc(ctx, dm_len, 0, &many[n])) == 0)
		n++;
	CHECK(err == -ENOSPC, "after %zu DMs: %d instead of ENOSPC", n, err);
	for (size_t i = 0; i < n; i++)
		CHECK(ibc_dm_free(many[i]) == 0, "ibc_dm_free");
	free(many);
	CHECK(ibc_dm_alloc(ctx, dm_len, 0, &dm) == 0 && ibc_dm_free(dm) == 0,
	      "the memory did not come back");
	printf("hw_dm: %s: %zu DMs of %zu bytes until ENOSPC (max_dm_size "
	       "%llu)\n",
	       dev, n, dm_len, (unsigned long long)max_dm);
	ibc_disconnect(c);
	free(buf);
	free(want);
	return 0;
}

int main(int argc, char **argv)
{
	const char *bin = getenv("RDMABROKERD");
	const char *dev;
	int ret;

	ret = hw_init(argc, argv, hw_find_mlx5, &dev);
	if (ret)
		return ret;
	if (hw_mode == HW_OWN) {
		fprintf(stderr, "hw_dm: --own: a context of one's own shares "
				"no device memory\n");
		return 2;
	}
	dm_len = (size_t)sysconf(_SC_PAGESIZE);
	if (!bin || hw_mkdir("rdmab-hwdm") < 0)
		return 99;
	if (start_daemon(bin) < 0) {
		hw_stop_daemon(NULL);
		return 1;
	}
	ret = run(dev);
	hw_stop_daemon(NULL);
	if (ret == SKIP)
		return SKIP;
	printf("hw_dm: %s: %s\n", dev, ret ? "FAIL" : "PASS");
	return ret;
}
