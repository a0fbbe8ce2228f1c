// SPDX-License-Identifier: MIT
/*
 * The rekey storm of make check-soak (issue 12): SOAK_STORM_KILLS (default
 * 1,000) library clients of one domain, each a random sequence of random
 * requests over every object family (CQ, QP, SRQ, WQ, MR; DM alloc,
 * import, write and MR; XRCD open, XRC SRQ and target QP; RSS), each
 * SIGKILLed after a random delay, so at a random point of a random
 * request. The seed fixes both, the sequences and the delays (not the
 * interleaving). Then a forced rekey of the domain reclaims what no
 * registry can name, and the daemon must list no object, charge the domain
 * nothing (every quota back to zero) and hold the descriptors it held at
 * start.
 *
 * The daemon is one of its own, so that its configuration can grow:
 * SOAK_STORM_CONFIG (extra lines) and storm_extra_config below are
 * appended to it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "tests/soak-storm.h"
#include "tests/testlib.h"

/* Lines appended to the storm daemon's configuration: the soft device
 * takes the verbs path (intent, kernel call, register), so a kill between
 * the kernel call and the register leaves an object no registry names,
 * and each import makes a provider-internal record, as mlx5's UAR. */
static const char *const storm_extra_config[] = {
	"[soft]",
	"intent_window = yes",
	"internal_objects_per_import = 1",
	NULL,
};

#define STORM_DOMAIN "storm"
/* Objects one client keeps track of. */
#define STORM_MAX 64
/* Kill delays, in ms: most while the client works, some at once. */
#define STORM_MAX_DELAY_MS 12

struct storm_state {
	struct ibc_ctx *x;
	struct ibc_cq *cq[STORM_MAX];
	struct ibc_qp *qp[STORM_MAX];
	struct ibc_srq *srq[STORM_MAX];
	struct ibc_wq *wq[STORM_MAX];
	struct ibc_mr *mr[STORM_MAX];
	struct ibc_dm *dm[STORM_MAX];
	struct ibc_xrcd *xrcd[STORM_MAX];
	struct ibc_rss *rss[STORM_MAX];
	unsigned int n_cq, n_qp, n_srq, n_wq, n_mr, n_dm, n_xrcd, n_rss;
	bool persistent_left;
};

static char buf[1 << 16];

#define PICK(r, n) tl_rng_below((r), (n))

static struct ibc_cq *any_cq(struct storm_state *s, struct tl_rng *r)
{
	return s->n_cq ? s->cq[PICK(r, s->n_cq)] : NULL;
}

static void storm_rss(struct storm_state *s, struct tl_rng *r)
{
	struct ibc_rss_attr a = {
		.port_num = 1,
		.hash_fields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4,
	};
	uint64_t ids[4];
	unsigned int n = 1 + PICK(r, 4);

	if (!s->n_wq || s->n_rss == STORM_MAX)
		return;
	for (unsigned int i = 0; i < n; i++)
		ids[i] = ibc_wq_id(s->wq[PICK(r, s->n_wq)]);
	a.num_wqs = n;
	a.wq_ids = ids;
	a.log_ind_tbl_size = 2;
	tl_rng_fill(r, a.hash_key, sizeof(a.hash_key));
	a.match.af = AF_INET;
	a.match.l4_proto = IPPROTO_UDP;
	a.match.dst_port = (uint16_t)(1000 + PICK(r, 60000));
	a.match.port_mask = 0xffff;
	if (ibc_rss_create(s->x, &a, &s->rss[s->n_rss]) == 0)
		s->n_rss++;
}

static void storm_xrc(struct storm_state *s, struct tl_rng *r)
{
	static const char *const names[] = { "s0", "s1", "s2", "s3" };
	struct ibv_srq_attr sa = { .max_wr = 16, .max_sge = 1 };
	struct ibc_xrcd *x;
	struct ibc_srq *srq;
	struct ibc_qp *qp;

	if (s->n_xrcd < STORM_MAX && (!s->n_xrcd || PICK(r, 2)) &&
	    ibc_xrcd_open(s->x, names[PICK(r, 4)], O_CREAT, &x) == 0)
		s->xrcd[s->n_xrcd++] = x;
	if (!s->n_xrcd)
		return;
	x = s->xrcd[PICK(r, s->n_xrcd)];
	if (PICK(r, 2) && any_cq(s, r) && s->n_srq < STORM_MAX &&
	    ibc_srq_create_xrc(x, any_cq(s, r), &sa, &srq) == 0)
		s->srq[s->n_srq++] = srq;
	else if (s->n_qp < STORM_MAX && ibc_qp_create_xrc_tgt(x, &qp) == 0)
		s->qp[s->n_qp++] = qp;
}

static void storm_dm(struct storm_state *s, struct tl_rng *r)
{
	struct ibc_dm_attr a = { .length = 4096 * (1 + PICK(r, 4)) };
	struct ibc_dm *dm;
	struct ibc_mr *mr;

	switch (PICK(r, 4)) {
	case 0:
		/* One client in 32 leaves a page that outlives it, for the
		 * forced rekey to destroy. */
		if (s->persistent_left) {
			s->persistent_left = false;
			a.flags = IBC_DM_PERSISTENT;
			a.length = 4096;
		}
		if (s->n_dm < STORM_MAX && ibc_dm_alloc_ex(s->x, &a, &dm) == 0)
			s->dm[s->n_dm++] = dm;
		break;
	case 1:
		if (s->n_dm && s->n_dm < STORM_MAX &&
		    ibc_dm_import(s->x, ibc_dm_handle(s->dm[PICK(r, s->n_dm)]),
				  &dm) == 0)
			s->dm[s->n_dm++] = dm;
		break;
	case 2:
		if (s->n_dm)
			ibc_dm_write(s->dm[PICK(r, s->n_dm)], 0, buf, 64);
		break;
	default:
		if (s->n_dm && s->n_mr < STORM_MAX &&
		    ibc_reg_dm_mr(s->dm[PICK(r, s->n_dm)], 0, 64,
				  IBV_ACCESS_ZERO_BASED |
					  IBV_ACCESS_LOCAL_WRITE,
				  &mr) == 0)
			s->mr[s->n_mr++] = mr;
	}
}

/* Destroy one object of a random family; what another uses refuses. */
static void storm_destroy(struct storm_state *s, struct tl_rng *r)
{
	unsigned int i;

	switch (PICK(r, 8)) {
	case 0:
		if (s->n_qp && ibc_qp_destroy(s->qp[i = PICK(r, s->n_qp)]) == 0)
			s->qp[i] = s->qp[--s->n_qp];
		break;
	case 1:
		if (s->n_srq &&
		    ibc_srq_destroy(s->srq[i = PICK(r, s->n_srq)]) == 0)
			s->srq[i] = s->srq[--s->n_srq];
		break;
	case 2:
		if (s->n_wq && ibc_wq_destroy(s->wq[i = PICK(r, s->n_wq)]) == 0)
			s->wq[i] = s->wq[--s->n_wq];
		break;
	case 3:
		if (s->n_cq && ibc_cq_destroy(s->cq[i = PICK(r, s->n_cq)]) == 0)
			s->cq[i] = s->cq[--s->n_cq];
		break;
	case 4:
		if (s->n_mr && ibc_dereg_mr(s->mr[i = PICK(r, s->n_mr)]) == 0)
			s->mr[i] = s->mr[--s->n_mr];
		break;
	case 5:
		if (s->n_dm && ibc_dm_free(s->dm[i = PICK(r, s->n_dm)]) == 0)
			s->dm[i] = s->dm[--s->n_dm];
		break;
	case 6:
		if (s->n_rss &&
		    ibc_rss_destroy(s->rss[i = PICK(r, s->n_rss)]) == 0)
			s->rss[i] = s->rss[--s->n_rss];
		break;
	default:
		if (s->n_xrcd &&
		    ibc_xrcd_close(s->xrcd[i = PICK(r, s->n_xrcd)]) == 0)
			s->xrcd[i] = s->xrcd[--s->n_xrcd];
	}
}

static void storm_child(const char *sock, uint64_t seed, int report_fd)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_DOMAIN,
		.socket_path = sock,
		.domain = STORM_DOMAIN,
	};
	struct storm_state s = { 0 };
	struct ibc_client *cl;
	struct tl_rng r;
	char one = 1;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	tl_rng_seed(&r, seed);
	s.persistent_left = PICK(&r, 32) == 0;
	if (ibc_connect(&attr, &cl) < 0 || ibc_open(cl, NULL, &s.x) < 0)
		_exit(1);
	if (write(report_fd, &one, 1) != 1)
		_exit(1);
	for (;;) {
		struct ibv_srq_attr sa = { .max_wr = 16, .max_sge = 1 };
		struct ibc_qp_attr qa = {
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 8,
				 .max_recv_wr = 8,
				 .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};
		struct ibc_cq *cq;
		struct ibc_srq *srq;
		struct ibc_wq *wq;
		struct ibc_qp *qp;
		struct ibc_mr *mr;

		switch (PICK(&r, 10)) {
		case 0:
			if (s.n_cq < STORM_MAX &&
			    ibc_cq_create(s.x, 8, &cq) == 0)
				s.cq[s.n_cq++] = cq;
			break;
		case 1:
			qa.send_cq = qa.recv_cq = any_cq(&s, &r);
			if (qa.send_cq && s.n_qp < STORM_MAX &&
			    ibc_qp_create(s.x, &qa, &qp) == 0)
				s.qp[s.n_qp++] = qp;
			break;
		case 2:
			if (s.n_srq < STORM_MAX &&
			    ibc_srq_create(s.x, &sa, &srq) == 0)
				s.srq[s.n_srq++] = srq;
			break;
		case 3:
			if (any_cq(&s, &r) && s.n_wq < STORM_MAX &&
			    ibc_wq_create(s.x, any_cq(&s, &r), NULL, &wq) == 0)
				s.wq[s.n_wq++] = wq;
			break;
		case 4:
			if (s.n_mr < STORM_MAX &&
			    ibc_reg_mr(s.x, buf, 4096 * (1 + PICK(&r, 15)),
				       IBV_ACCESS_LOCAL_WRITE, &mr) == 0)
				s.mr[s.n_mr++] = mr;
			break;
		case 5:
			storm_dm(&s, &r);
			break;
		case 6:
			storm_xrc(&s, &r);
			break;
		case 7:
			storm_rss(&s, &r);
			break;
		default:
			storm_destroy(&s, &r);
		}
	}
}

/* The daemon's configuration: the storm's domain, this process as the
 * administrator, then the extra lines. */
static int storm_conf(const char *path)
{
	const char *extra = getenv("SOAK_STORM_CONFIG");
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fprintf(f,
		"[broker]\nadmin_group = %u\n"
		"[domain " STORM_DOMAIN "]\nusers = %u\n",
		(unsigned int)getgid(), (unsigned int)getuid());
	for (size_t i = 0; storm_extra_config[i]; i++)
		fprintf(f, "%s\n", storm_extra_config[i]);
	if (extra && *extra)
		fprintf(f, "%s\n", extra);
	return fclose(f) ? -errno : 0;
}

/* The storm domain and the registry as @cl sees them. */
static int storm_state(struct ibc_client *cl, struct ibc_domain_info *ret,
		       size_t *ret_objects)
{
	struct ibc_object_info *o;
	struct ibc_domain_info *d;
	size_t n;
	int err;

	memset(ret, 0, sizeof(*ret));
	err = ibc_list_domains(cl, &d, sizeof(*d), &n);
	if (err < 0)
		return err;
	for (size_t i = 0; i < n; i++)
		if (strcmp(d[i].name, STORM_DOMAIN) == 0)
			*ret = d[i];
	ibc_list_free(d);
	err = ibc_list_objects(cl, NULL, &o, sizeof(*o), ret_objects);
	if (err == 0)
		ibc_list_free(o);
	return err;
}

static bool storm_clean(const struct ibc_domain_info *d, size_t objects)
{
	return !objects && !d->used.objects && !d->used.dm_bytes &&
	       !d->used.xrcds && !d->used.rss_tables && !d->used.clients &&
	       !d->contexts && !d->unaccounted;
}

int soak_storm(uint64_t seed, unsigned long kills, char *why, size_t len)
{
	char conf[4096], *dir = tl_mkdtemp();
	const char *args[] = { "--config", conf, NULL };
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_DOMAIN,
	};
	struct ibc_domain_info d;
	struct ibc_client *cl = NULL;
	struct tl_daemon sd = { 0 };
	struct tl_rng rng;
	char own[32];
	size_t objects = 0;
	unsigned int clients;
	int64_t end;
	int err, n;

	if (!dir)
		return -ENOMEM;
	snprintf(conf, sizeof(conf), "%s/rdmabroker.conf", dir);
	free(dir);
	err = storm_conf(conf);
	if (err == 0)
		err = tl_daemon_start(&sd, args);
	if (err < 0) {
		snprintf(why, len, "cannot start the storm's daemon: %s",
			 strerror(-err));
		return err;
	}
	tl_rng_seed(&rng, seed);
	for (unsigned long k = 0; k < kills; k++) {
		uint64_t child_seed = tl_rng_next(&rng);
		unsigned int delay = tl_rng_below(&rng, STORM_MAX_DELAY_MS + 1);
		int p[2], status;
		char one;
		pid_t pid;

		if (pipe2(p, O_CLOEXEC) < 0) {
			err = -errno;
			goto out;
		}
		fflush(stdout);
		fflush(stderr);
		pid = fork();
		if (pid < 0) {
			err = -errno;
			close(p[0]);
			close(p[1]);
			goto out;
		}
		if (pid == 0) {
			close(p[0]);
			storm_child(sd.sock, child_seed, p[1]);
		}
		close(p[1]);
		/* Connected (or dead already), then a while of requests. */
		if (read(p[0], &one, 1) == 1)
			tl_sleep_ms(delay);
		close(p[0]);
		kill(pid, SIGKILL);
		if (tl_wait_pid(pid, TL_WAIT_MS, &status) < 0) {
			snprintf(why, len, "storm child %d does not die",
				 (int)pid);
			err = -ETIMEDOUT;
			goto out;
		}
	}
	/* The checker: in its uid's own domain, an administrator. */
	snprintf(own, sizeof(own), "uid-%u", (unsigned int)getuid());
	attr.socket_path = sd.sock;
	attr.domain = own;
	err = ibc_connect(&attr, &cl);
	if (err < 0) {
		snprintf(why, len, "checker: %s", ibc_last_error());
		goto out;
	}
	/* The dead clients' cleanups end; then the rekey takes what they
	 * left that nobody can name, with their persistent DMs. */
	end = tl_now_ms() + 10000;
	do {
		err = storm_state(cl, &d, &objects);
	} while (err == 0 && d.used.clients && tl_now_ms() < end &&
		 (tl_sleep_ms(20), 1));
	printf("soak: storm: before the rekey: %zu objects listed; domain "
	       "%s: %u objects charged (%u unaccounted), %llu DM bytes, %u "
	       "XRCDs, %u RSS tables, %u contexts\n",
	       objects, STORM_DOMAIN, d.used.objects, d.unaccounted,
	       (unsigned long long)d.used.dm_bytes, d.used.xrcds,
	       d.used.rss_tables, d.contexts);
	err = ibc_admin_domain_rekey(cl, STORM_DOMAIN, IBC_REKEY_FORCE);
	if (err < 0) {
		snprintf(why, len, "rekey: %s", ibc_last_error());
		goto out;
	}
	end = tl_now_ms() + 10000;
	do {
		err = storm_state(cl, &d, &objects);
	} while (err == 0 && !storm_clean(&d, objects) && tl_now_ms() < end &&
		 (tl_sleep_ms(20), 1));
	if (err < 0 || !storm_clean(&d, objects)) {
		snprintf(why, len,
			 "after the rekey: %zu objects listed; domain %s: %u "
			 "objects charged (%u unaccounted), %llu DM bytes, %u "
			 "XRCDs, %u RSS tables, %u clients, %u contexts",
			 objects, STORM_DOMAIN, d.used.objects, d.unaccounted,
			 (unsigned long long)d.used.dm_bytes, d.used.xrcds,
			 d.used.rss_tables, d.used.clients, d.contexts);
		err = -EBUSY;
		goto out;
	}
	ibc_disconnect(cl);
	cl = NULL;
	n = tl_daemon_settle(&sd, 10000, &clients);
	if (n != sd.baseline_fds) {
		snprintf(why, len,
			 "the storm's daemon holds %d descriptors (%d at "
			 "start)",
			 n, sd.baseline_fds);
		err = -EBUSY;
		goto out;
	}
	err = 0;
out:
	ibc_disconnect(cl);
	tl_daemon_stop(&sd);
	return err;
}
