// SPDX-License-Identifier: MIT
/*
 * The library's constructors and destructors against the real daemon on
 * the soft device, which keeps its objects under the kernel's rules: every
 * constructor and destructor with the kernel's errors, the order in which
 * objects in use may go (EBUSY), handles reused lowest-first while broker
 * ids never are, the objects quota, ibc_track (which the soft device has no
 * objects for), teardown by ibc_close and ibc_disconnect, and a client
 * killed with SIGKILL whose objects the broker destroys (the quickstart
 * demo's step).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cklib.h"
#include "tests/testlib.h"

static struct tl_daemon D;
static struct ibc_client *C;
static struct ibc_ctx *X;
static struct ibc_caps caps;

static void start(const char *conf)
{
	int ret = tl_fixture_start(&D, conf, &C, &X);

	ck_assert_msg(ret == 0, "cannot start the daemon and a client: %s",
		      strerror(-ret));
	ck_assert_int_eq(ibc_query(X, &caps, sizeof(caps)), 0);
	ck_assert_int_eq(caps.kind, IBC_DEVICE_SOFT);
}

static void setup(void)
{
	start("# defaults\n");
}

static void teardown(void)
{
	ibc_disconnect(C);
	C = NULL;
	X = NULL;
	tl_daemon_stop(&D);
}

static uint64_t my_id(struct ibc_client *cl)
{
	struct ibc_client_info info;

	ck_assert_int_eq(ibc_client_info(cl, &info, sizeof(info)), 0);
	return info.client_id;
}

/* The registry's objects of @kind (IBC_OBJ_NONE: any but contexts) owned
 * by client @client (0: anyone), as a fresh client sees them. */
static size_t count_objects(uint64_t client, enum ibc_obj_kind kind,
			    struct ibc_object_info *ret_first)
{
	struct ibc_object_filter f = { 0 };
	struct ibc_object_info *o;
	size_t n, k = 0;
	int err;

	if (client) {
		f.comp_mask = IBC_OBJECT_FILTER_CLIENT;
		f.client_id = client;
	}
	err = ibc_list_objects(C, &f, &o, sizeof(*o), &n);
	ck_assert_msg(err == 0, "ibc_list_objects: %d (%s)", err,
		      ibc_last_error());
	for (size_t i = 0; i < n; i++) {
		if (o[i].kind == IBC_OBJ_CONTEXT ||
		    (kind != IBC_OBJ_NONE && o[i].kind != kind))
			continue;
		if (k++ == 0 && ret_first)
			*ret_first = o[i];
	}
	ibc_list_free(o);
	return k;
}

static struct ibc_cq *make_cq(int cqe)
{
	struct ibc_cq *cq = NULL;
	int err = ibc_cq_create(X, cqe, &cq);

	ck_assert_msg(err == 0, "ibc_cq_create(%d): %d (%s)", cqe, err,
		      ibc_last_error());
	return cq;
}

static struct ibc_qp *make_qp(struct ibc_cq *scq, struct ibc_cq *rcq,
			      struct ibc_srq *srq)
{
	struct ibc_qp_attr qa = {
		.qp_type = IBV_QPT_RC,
		.send_cq = scq,
		.recv_cq = rcq,
		.srq = srq,
		.cap = { .max_send_wr = 16,
			 .max_recv_wr = srq ? 0 : 16,
			 .max_send_sge = 1,
			 .max_recv_sge = srq ? 0 : 1 },
	};
	struct ibc_qp *qp = NULL;
	int err = ibc_qp_create(X, &qa, &qp);

	ck_assert_msg(err == 0, "ibc_qp_create: %d (%s)", err,
		      ibc_last_error());
	return qp;
}

static struct ibc_srq *make_srq(void)
{
	struct ibv_srq_attr sa = { .max_wr = 100, .max_sge = 2 };
	struct ibc_srq *srq = NULL;
	int err = ibc_srq_create(X, &sa, &srq);

	ck_assert_msg(err == 0, "ibc_srq_create: %d (%s)", err,
		      ibc_last_error());
	return srq;
}

/* --- each constructor and destructor ---------------------------------- */

START_TEST(test_cq)
{
	struct ibc_object_info o;
	struct ibc_cq_attr attr = { .cqe = 10, .comp_vector = 3 };
	struct ibc_cq *cq, *cq2;
	int err;

	cq = make_cq(100);
	/* What the device gave: at least what was asked. */
	ck_assert_int_ge(ibc_cq_cqe(cq), 100);
	errno = 0;
	ck_assert_ptr_null(ibc_verbs_cq(cq));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_msg(strstr(ibc_last_error(), "soft"), "%s", ibc_last_error());

	ck_assert_uint_eq(count_objects(my_id(C), IBC_OBJ_CQ, &o), 1);
	ck_assert_uint_eq(o.client_id, my_id(C));
	ck_assert_uint_eq(o.pid, (uint32_t)getpid());
	ck_assert_uint_eq(o.context_id, caps.context_id);
	ck_assert_int_eq(o.state, IBC_OBJECT_LIVE);
	ck_assert_str_eq(o.device, caps.device);
	ck_assert_str_eq(o.domain, caps.domain);
	ck_assert_uint_ne(o.id, 0);
	ck_assert_uint_ne(o.handle, 0); /* the PD is 0 */

	err = ibc_cq_create_ex(X, &attr, &cq2);
	ck_assert_msg(err == 0, "%s", ibc_last_error());
	ck_assert_uint_eq(count_objects(my_id(C), IBC_OBJ_CQ, NULL), 2);
	ck_assert_int_eq(ibc_cq_destroy(cq2), 0);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	ck_assert_uint_eq(count_objects(my_id(C), IBC_OBJ_NONE, NULL), 0);
}
END_TEST

/* What the library refuses before asking, and what the device refuses. */
START_TEST(test_cq_errors)
{
	struct ibc_cq_attr attr = { .cqe = 1 };
	struct ibc_cq *cq = (struct ibc_cq *)&attr; /* must stay untouched */
	int err;

	ck_assert_int_eq(ibc_cq_create(X, 0, &cq), -EINVAL);
	ck_assert_int_eq(ibc_cq_create(X, -5, &cq), -EINVAL);
	ck_assert_int_eq(ibc_cq_create(NULL, 5, &cq), -EINVAL);
	ck_assert_int_eq(ibc_cq_create(X, 5, NULL), -EINVAL);
	ck_assert_ptr_eq(cq, (struct ibc_cq *)&attr);
	/* Beyond the device's limit: the device's answer. */
	ck_assert_uint_gt(caps.max_cqe, 0);
	err = ibc_cq_create(X, (int)caps.max_cqe + 1, &cq);
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_msg(strstr(ibc_last_error(), "max_cqe"), "%s",
		      ibc_last_error());
	attr.comp_mask = 1;
	ck_assert_int_eq(ibc_cq_create_ex(X, &attr, &cq), -EOPNOTSUPP);
	attr.comp_mask = 0;
	attr.comp_vector = 100000;
	ck_assert_int_eq(ibc_cq_create_ex(X, &attr, &cq), -EINVAL);
	attr.comp_vector = 0;
	attr.channel = (struct ibv_comp_channel *)&attr;
	ck_assert_int_eq(ibc_cq_create_ex(X, &attr, &cq), -EOPNOTSUPP);
	ck_assert_ptr_eq(cq, (struct ibc_cq *)&attr);
	ck_assert_int_eq(ibc_cq_destroy(NULL), -EINVAL);
	/* Nothing was left behind by the refusals. */
	ck_assert_uint_eq(count_objects(0, IBC_OBJ_NONE, NULL), 0);
}
END_TEST

START_TEST(test_qp)
{
	struct ibc_qp_attr qa = { .qp_type = IBV_QPT_UD };
	struct ibc_cq *scq, *rcq;
	struct ibc_qp *qp, *qp2;
	struct ibv_qp_cap cap;
	int err;

	scq = make_cq(16);
	rcq = make_cq(16);
	qp = make_qp(scq, rcq, NULL);
	ck_assert_uint_ne(ibc_qp_num(qp), 0);
	ibc_qp_cap(qp, &cap);
	ck_assert_uint_ge(cap.max_send_wr, 16);
	ck_assert_uint_ge(cap.max_recv_wr, 16);
	errno = 0;
	ck_assert_ptr_null(ibc_verbs_qp(qp));
	ck_assert_int_eq(errno, EOPNOTSUPP);

	/* The same CQ on both sides; QP numbers differ. */
	qp2 = make_qp(scq, scq, NULL);
	ck_assert_uint_ne(ibc_qp_num(qp2), ibc_qp_num(qp));
	ck_assert_uint_eq(count_objects(my_id(C), IBC_OBJ_QP, NULL), 2);

	/* The library's refusals. */
	qa.send_cq = scq;
	err = ibc_qp_create(X, &qa, &qp2);
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_msg(strstr(ibc_last_error(), "recv_cq"), "%s",
		      ibc_last_error());
	qa.qp_type = (enum ibv_qp_type)99;
	qa.recv_cq = rcq;
	ck_assert_int_eq(ibc_qp_create(X, &qa, &qp2), -EINVAL);
	qa.qp_type = IBV_QPT_XRC_SEND;
	ck_assert_int_eq(ibc_qp_create(X, &qa, &qp2), -EINVAL);
	qa.qp_type = IBV_QPT_RC;
	qa.comp_mask = 2;
	ck_assert_int_eq(ibc_qp_create(X, &qa, &qp2), -EOPNOTSUPP);
	qa.comp_mask = 0;
	/* The device's: beyond max_qp_wr, max_sge. */
	qa.cap.max_send_wr = caps.max_qp_wr + 1;
	err = ibc_qp_create(X, &qa, &qp2);
	ck_assert_int_eq(err, -EINVAL);
	qa.cap.max_send_wr = 1;
	qa.cap.max_send_sge = caps.max_sge + 1;
	ck_assert_int_eq(ibc_qp_create(X, &qa, &qp2), -EINVAL);
	ck_assert_uint_eq(count_objects(my_id(C), IBC_OBJ_QP, NULL), 2);

	ck_assert_int_eq(ibc_qp_destroy(qp2), 0);
	ck_assert_int_eq(ibc_qp_destroy(qp), 0);
	ck_assert_int_eq(ibc_cq_destroy(rcq), 0);
	ck_assert_int_eq(ibc_cq_destroy(scq), 0);
	ck_assert_int_eq(ibc_qp_destroy(NULL), -EINVAL);
	ck_assert_uint_eq(ibc_qp_num(NULL), 0);
}
END_TEST

/* An XRC send QP has only a send CQ. */
START_TEST(test_qp_xrc_send)
{
	struct ibc_cq *cq = make_cq(8);
	struct ibc_qp_attr qa = {
		.qp_type = IBV_QPT_XRC_SEND,
		.send_cq = cq,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
	};
	struct ibc_qp *qp;
	int err;

	err = ibc_qp_create(X, &qa, &qp);
	ck_assert_msg(err == 0, "XRC_SEND: %d (%s)", err, ibc_last_error());
	ck_assert_int_eq(ibc_cq_destroy(cq), -EBUSY);
	ck_assert_int_eq(ibc_qp_destroy(qp), 0);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
}
END_TEST

START_TEST(test_srq)
{
	struct ibv_srq_attr sa = { .max_wr = 0, .max_sge = 1 };
	struct ibc_srq *srq, *bad;

	srq = make_srq();
	errno = 0;
	ck_assert_ptr_null(ibc_verbs_srq(srq));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_uint_eq(count_objects(my_id(C), IBC_OBJ_SRQ, NULL), 1);
	/* The device's answers: no entries, too many. */
	ck_assert_int_eq(ibc_srq_create(X, &sa, &bad), -EINVAL);
	sa.max_wr = caps.max_srq_wr + 1;
	ck_assert_int_eq(ibc_srq_create(X, &sa, &bad), -EINVAL);
	sa.max_wr = 1;
	sa.max_sge = caps.max_srq_sge + 1;
	ck_assert_int_eq(ibc_srq_create(X, &sa, &bad), -EINVAL);
	ck_assert_int_eq(ibc_srq_create(X, NULL, &bad), -EINVAL);
	ck_assert_int_eq(ibc_srq_destroy(srq), 0);
	ck_assert_uint_eq(count_objects(my_id(C), IBC_OBJ_NONE, NULL), 0);
}
END_TEST

START_TEST(test_wq)
{
	struct ibc_wq_attr wa = { .max_wr = 64, .max_sge = 2 };
	struct ibc_object_info o;
	struct ibc_cq *cq = make_cq(64);
	struct ibc_wq *wq, *wq2, *unused_wq;
	int err;

	err = ibc_wq_create(X, cq, NULL, &wq);
	ck_assert_msg(err == 0, "defaults: %d (%s)", err, ibc_last_error());
	ck_assert_uint_ne(ibc_wq_id(wq), 0);
	ck_assert_uint_eq(count_objects(my_id(C), IBC_OBJ_WQ, &o), 1);
	/* ibc_wq_id is the broker's id of the object. */
	ck_assert_uint_eq(o.id, ibc_wq_id(wq));
	err = ibc_wq_create(X, cq, &wa, &wq2);
	ck_assert_msg(err == 0, "%d (%s)", err, ibc_last_error());
	ck_assert_uint_ne(ibc_wq_id(wq2), ibc_wq_id(wq));
	errno = 0;
	ck_assert_ptr_null(ibc_verbs_wq(wq2));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	wa.max_wr = caps.max_qp_wr + 1;
	ck_assert_int_eq(ibc_wq_create(X, cq, &wa, &unused_wq), -EINVAL);
	wa.max_wr = 1;
	wa.comp_mask = 1;
	ck_assert_int_eq(ibc_wq_create(X, cq, &wa, &unused_wq), -EOPNOTSUPP);
	ck_assert_int_eq(ibc_wq_create(X, NULL, NULL, &unused_wq), -EINVAL);
	ck_assert_int_eq(ibc_cq_destroy(cq), -EBUSY);
	ck_assert_int_eq(ibc_wq_destroy(wq2), 0);
	ck_assert_int_eq(ibc_wq_destroy(wq), 0);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	ck_assert_uint_eq(ibc_wq_id(NULL), 0);
}
END_TEST

START_TEST(test_mr)
{
	static char buf[8192];
	struct ibc_mr *mr, *mr2, *unused_mr;
	int err;

	err = ibc_reg_mr(X, buf, sizeof(buf),
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &mr);
	ck_assert_msg(err == 0, "%d (%s)", err, ibc_last_error());
	ck_assert_uint_ne(ibc_mr_lkey(mr), 0);
	ck_assert_uint_ne(ibc_mr_rkey(mr), 0);
	errno = 0;
	ck_assert_ptr_null(ibc_verbs_mr(mr));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	err = ibc_reg_mr(X, buf, 16, 0, &mr2);
	ck_assert_msg(err == 0, "%d (%s)", err, ibc_last_error());
	ck_assert_uint_ne(ibc_mr_lkey(mr2), ibc_mr_lkey(mr));
	ck_assert_uint_eq(count_objects(my_id(C), IBC_OBJ_MR, NULL), 2);
	/* ib_check_mr_access(): remote write needs local write; unknown
	 * bits. */
	ck_assert_int_eq(
		ibc_reg_mr(X, buf, 16, IBV_ACCESS_REMOTE_WRITE, &unused_mr),
		-EINVAL);
	ck_assert_int_eq(ibc_reg_mr(X, buf, 16, 1 << 28, &unused_mr), -EINVAL);
	ck_assert_int_eq(ibc_reg_mr(X, buf, 0, 0, &unused_mr), -EINVAL);
	ck_assert_int_eq(ibc_reg_mr(X, NULL, 16, 0, &unused_mr), -EINVAL);
	ck_assert_int_eq(ibc_dereg_mr(mr2), 0);
	ck_assert_int_eq(ibc_dereg_mr(mr), 0);
	ck_assert_int_eq(ibc_dereg_mr(NULL), -EINVAL);
	ck_assert_uint_eq(count_objects(my_id(C), IBC_OBJ_NONE, NULL), 0);
}
END_TEST

/* --- the order of teardown ------------------------------------------- */

START_TEST(test_ebusy_order)
{
	struct ibc_cq *cq = make_cq(32);
	struct ibc_srq *srq = make_srq();
	struct ibc_qp *qp = make_qp(cq, cq, srq);
	struct ibc_wq *wq;
	int err;

	ck_assert_int_eq(ibc_wq_create(X, cq, NULL, &wq), 0);
	err = ibc_cq_destroy(cq);
	ck_assert_int_eq(err, -EBUSY);
	ck_assert_msg(strstr(ibc_last_error(), "CQ"), "%s", ibc_last_error());
	err = ibc_srq_destroy(srq);
	ck_assert_int_eq(err, -EBUSY);
	ck_assert_msg(strstr(ibc_last_error(), "SRQ"), "%s", ibc_last_error());
	/* Refused destroys change nothing. */
	ck_assert_uint_eq(count_objects(my_id(C), IBC_OBJ_NONE, NULL), 4);
	ck_assert_int_eq(ibc_qp_destroy(qp), 0);
	/* The WQ still holds the CQ; nothing holds the SRQ. */
	ck_assert_int_eq(ibc_cq_destroy(cq), -EBUSY);
	ck_assert_int_eq(ibc_srq_destroy(srq), 0);
	ck_assert_int_eq(ibc_wq_destroy(wq), 0);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	ck_assert_uint_eq(count_objects(my_id(C), IBC_OBJ_NONE, NULL), 0);
}
END_TEST

/* A CQ of another context cannot serve a QP. */
START_TEST(test_other_context)
{
	struct ibc_client *c2;
	struct ibc_ctx *x2;
	struct ibc_cq *cq, *cq2;
	struct ibc_qp_attr qa = { .qp_type = IBV_QPT_RC };
	struct ibc_qp *qp;
	int err;

	/* A private domain has a context of its own. */
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_FLAGS,
		.socket_path = D.sock,
		.flags = IBC_CONNECT_PRIVATE_DOMAIN,
	};

	ck_assert_int_eq(ibc_connect(&attr, &c2), 0);
	ck_assert_int_eq(ibc_open(c2, NULL, &x2), 0);
	cq = make_cq(8);
	ck_assert_int_eq(ibc_cq_create(x2, 8, &cq2), 0);
	qa.send_cq = cq;
	qa.recv_cq = cq2;
	err = ibc_qp_create(X, &qa, &qp);
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_msg(strstr(ibc_last_error(), "another context"), "%s",
		      ibc_last_error());
	ibc_disconnect(c2);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
}
END_TEST

/* The kernel hands out the lowest free handle, so a destroyed one comes
 * back at once; the broker's ids never do. */
START_TEST(test_handle_reuse)
{
	struct ibc_object_info a, b;
	struct ibc_cq *cq;

	cq = make_cq(8);
	ck_assert_uint_eq(count_objects(my_id(C), IBC_OBJ_CQ, &a), 1);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
	cq = make_cq(8);
	ck_assert_uint_eq(count_objects(my_id(C), IBC_OBJ_CQ, &b), 1);
	ck_assert_uint_eq(b.handle, a.handle);
	ck_assert_uint_ne(b.id, a.id);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
}
END_TEST

/* --- quota, tracking, teardown --------------------------------------- */

START_TEST(test_quota)
{
	struct ibc_domain_info *d;
	struct ibc_cq *cq[4];
	size_t n, made = 0;
	int err = 0;

	teardown();
	/* The context is an object too. */
	start("[defaults]\nobjects = 3\n");
	while (made < 4 && (err = ibc_cq_create(X, 8, &cq[made])) == 0)
		made++;
	ck_assert_uint_eq(made, 2);
	ck_assert_int_eq(err, -EDQUOT);
	ck_assert_msg(strstr(ibc_last_error(), caps.domain), "%s",
		      ibc_last_error());
	ck_assert_int_eq(ibc_list_domains(C, &d, sizeof(*d), &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(d[0].used.objects, 3);
	ck_assert_uint_eq(d[0].unaccounted, 0);
	ibc_list_free(d);
	/* A destroy gives the quota back. */
	ck_assert_int_eq(ibc_cq_destroy(cq[0]), 0);
	ck_assert_int_eq(ibc_cq_create(X, 8, &cq[0]), 0);
}
END_TEST

START_TEST(test_track_soft)
{
	struct ibc_cq *cq = make_cq(8);
	int err;

	/* The soft device has no libibverbs objects to track. */
	err = ibc_track(X, IBC_OBJ_CQ, cq);
	ck_assert_int_eq(err, -EOPNOTSUPP);
	ck_assert_msg(strstr(ibc_last_error(), caps.device), "%s",
		      ibc_last_error());
	ck_assert_int_eq(ibc_track(X, IBC_OBJ_CONTEXT, cq), -EINVAL);
	ck_assert_int_eq(ibc_track(X, IBC_OBJ_CQ, NULL), -EINVAL);
	ck_assert_int_eq(ibc_untrack(X, IBC_OBJ_CQ, cq), -ENOENT);
	ck_assert_uint_eq(count_objects(my_id(C), IBC_OBJ_NONE, NULL), 1);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
}
END_TEST

/* A client that stops without destroying: ibc_close and ibc_disconnect do
 * it, in an order the device accepts. */
START_TEST(test_close_and_disconnect_destroy)
{
	struct ibc_client *c2;
	struct ibc_ctx *x2;
	struct ibc_cq *cq;
	struct ibc_srq *srq;
	struct ibc_qp *qp;
	struct ibc_mr *mr;
	struct ibc_wq *wq;
	static char buf[64];
	uint64_t id2;

	ck_assert_int_eq(tl_connect(D.sock, 20000, &c2), 0);
	id2 = my_id(c2);
	ck_assert_int_eq(ibc_open(c2, NULL, &x2), 0);
	ck_assert_int_eq(ibc_cq_create(x2, 8, &cq), 0);
	ck_assert_int_eq(ibc_reg_mr(x2, buf, sizeof(buf), 0, &mr), 0);
	ck_assert_uint_eq(count_objects(id2, IBC_OBJ_NONE, NULL), 2);
	ibc_close(x2);
	ck_assert_uint_eq(count_objects(id2, IBC_OBJ_NONE, NULL), 0);

	ck_assert_int_eq(ibc_open(c2, NULL, &x2), 0);
	{
		struct ibv_srq_attr sa = { .max_wr = 4, .max_sge = 1 };
		struct ibc_qp_attr qa = { .qp_type = IBV_QPT_RC };

		ck_assert_int_eq(ibc_cq_create(x2, 8, &cq), 0);
		ck_assert_int_eq(ibc_srq_create(x2, &sa, &srq), 0);
		qa.send_cq = qa.recv_cq = cq;
		qa.srq = srq;
		qa.cap.max_send_wr = qa.cap.max_send_sge = 1;
		ck_assert_int_eq(ibc_qp_create(x2, &qa, &qp), 0);
		ck_assert_int_eq(ibc_wq_create(x2, cq, NULL, &wq), 0);
		ck_assert_int_eq(ibc_reg_mr(x2, buf, sizeof(buf), 0, &mr), 0);
	}
	ck_assert_uint_eq(count_objects(id2, IBC_OBJ_NONE, NULL), 5);
	ibc_disconnect(c2);
	/* Destroyed before the session ended: none left detached. */
	ck_assert_uint_eq(count_objects(0, IBC_OBJ_NONE, NULL), 0);
}
END_TEST

/* Wait until client @id owns no objects, up to @ms. */
static size_t wait_objects_gone(uint64_t id, int ms)
{
	int64_t end = tl_now_ms() + ms;
	size_t n;

	while ((n = count_objects(id, IBC_OBJ_NONE, NULL)) && tl_now_ms() < end)
		tl_sleep_ms(20);
	return n;
}

/* The quickstart's demo: a client makes a CQ, a QP and an MR and is
 * killed; the broker destroys them. */
START_TEST(test_killed_client)
{
	struct ibc_domain_info *d;
	uint64_t id = 0;
	int p[2], status;
	size_t n;
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		static char buf[4096];
		struct ibc_qp_attr qa = { .qp_type = IBV_QPT_RC };
		struct ibc_client_info info;
		struct ibc_client *cl;
		struct ibc_ctx *ctx;
		struct ibc_cq *cq;
		struct ibc_qp *qp;
		struct ibc_mr *mr;

		close(p[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (tl_connect(D.sock, 20000, &cl) ||
		    ibc_open(cl, NULL, &ctx) || ibc_cq_create(ctx, 64, &cq))
			_exit(1);
		qa.send_cq = qa.recv_cq = cq;
		qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
		qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
		if (ibc_qp_create(ctx, &qa, &qp) ||
		    ibc_reg_mr(ctx, buf, sizeof(buf), 0, &mr))
			_exit(1);
		if (ibc_client_info(cl, &info, sizeof(info)))
			_exit(1);
		id = info.client_id;
		if (write(p[1], &id, sizeof(id)) != sizeof(id))
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], &id, sizeof(id)), (ssize_t)sizeof(id));
	close(p[0]);
	ck_assert_uint_eq(count_objects(id, IBC_OBJ_NONE, NULL), 3);
	ck_assert_uint_eq(count_objects(id, IBC_OBJ_QP, NULL), 1);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_uint_eq(wait_objects_gone(id, 5000), 0);
	/* And the quota with them: only this client's context is left. */
	ck_assert_int_eq(ibc_list_domains(C, &d, sizeof(*d), &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(d[0].unaccounted, 0);
	ck_assert_uint_eq(d[0].used.objects, 1);
	ibc_list_free(d);
}
END_TEST

/* An evicted session's objects stay, detached, while its process lives;
 * its library then fails every call and its destroys with it. */
START_TEST(test_evicted_detached)
{
	struct ibc_object_info o;
	struct ibc_client *c2;
	struct ibc_ctx *x2;
	struct ibc_cq *cq;
	uint64_t id2;
	int64_t end;

	ck_assert_int_eq(tl_connect(D.sock, 20000, &c2), 0);
	id2 = my_id(c2);
	ck_assert_int_eq(ibc_open(c2, NULL, &x2), 0);
	ck_assert_int_eq(ibc_cq_create(x2, 8, &cq), 0);
	ck_assert_int_eq(ibc_admin_evict(C, id2), 0);
	end = tl_now_ms() + 5000;
	do {
		ck_assert_uint_eq(count_objects(id2, IBC_OBJ_CQ, &o), 1);
	} while (o.state != IBC_OBJECT_DETACHED && tl_now_ms() < end &&
		 (tl_sleep_ms(20), 1));
	ck_assert_int_eq(o.state, IBC_OBJECT_DETACHED);
	ck_assert_int_lt(ibc_cq_destroy(cq), 0);
	ck_assert_int_lt(ibc_ping(c2, "x", 1), 0);
	ibc_disconnect(c2);
	/* This process lives: the object stays. */
	ck_assert_uint_eq(count_objects(id2, IBC_OBJ_CQ, NULL), 1);
	ck_assert_int_eq(ibc_admin_evict(C, id2), -ENOENT);
}
END_TEST

/* Threads sharing one context: each makes and destroys its own QPs on a
 * CQ they all use, which must stay busy until the last QP is gone. */
#define THREADS 4
#define ROUNDS 100

struct worker {
	struct ibc_cq *cq;
	int failed;
	char why[256];
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < ROUNDS && !w->failed; i++) {
		struct ibc_qp_attr qa = {
			.qp_type = IBV_QPT_UD,
			.send_cq = w->cq,
			.recv_cq = w->cq,
			.cap = { .max_send_wr = 1, .max_send_sge = 1 },
		};
		struct ibc_cq *own;
		struct ibc_qp *qp;
		int err = ibc_qp_create(X, &qa, &qp);

		if (err == 0)
			err = ibc_cq_create(X, 4, &own);
		if (err == 0)
			err = ibc_cq_destroy(own);
		if (err == 0)
			err = ibc_qp_destroy(qp);
		if (err < 0) {
			w->failed = err;
			snprintf(w->why, sizeof(w->why), "%s",
				 ibc_last_error());
		}
	}
	return NULL;
}

START_TEST(test_threads)
{
	struct worker w[THREADS];
	pthread_t th[THREADS];
	struct ibc_cq *cq = make_cq(16);

	for (int t = 0; t < THREADS; t++) {
		w[t] = (struct worker){ .cq = cq };
		ck_assert_int_eq(
			pthread_create(&th[t], NULL, worker_main, &w[t]), 0);
	}
	for (int t = 0; t < THREADS; t++)
		ck_assert_int_eq(pthread_join(th[t], NULL), 0);
	for (int t = 0; t < THREADS; t++)
		ck_assert_msg(!w[t].failed, "thread %d: %d (%s)", t,
			      w[t].failed, w[t].why);
	ck_assert_uint_eq(count_objects(my_id(C), IBC_OBJ_NONE, NULL), 1);
	ck_assert_int_eq(ibc_cq_destroy(cq), 0);
}
END_TEST

START_TEST(test_kind_names)
{
	ck_assert_str_eq(ibc_obj_kind_str(IBC_OBJ_CQ), "CQ");
	ck_assert_str_eq(ibc_obj_kind_str(IBC_OBJ_QP), "QP");
	ck_assert_str_eq(ibc_obj_kind_str(IBC_OBJ_MR), "MR");
	ck_assert_str_eq(ibc_obj_kind_str(IBC_OBJ_CONTEXT), "context");
	ck_assert_str_eq(ibc_obj_kind_str(IBC_OBJ_NONE), "none");
	ck_assert_str_eq(ibc_obj_kind_str((enum ibc_obj_kind)1000), "unknown");
	ck_assert_str_eq(ibc_obj_kind_str((enum ibc_obj_kind) - 1), "unknown");
	/* Every kind has its name, the families' named by the family
	 * table (libclient/family.h) rather than the core's. */
	ck_assert_str_eq(ibc_obj_kind_str(IBC_OBJ_SRQ), "SRQ");
	ck_assert_str_eq(ibc_obj_kind_str(IBC_OBJ_WQ), "WQ");
	ck_assert_str_eq(ibc_obj_kind_str(IBC_OBJ_PD), "PD");
	ck_assert_str_eq(ibc_obj_kind_str(IBC_OBJ_RWQ_IND_TBL), "IND_TBL");
	ck_assert_str_eq(ibc_obj_kind_str(IBC_OBJ_FLOW), "FLOW");
	ck_assert_str_eq(ibc_obj_kind_str(IBC_OBJ_DM), "DM");
	ck_assert_str_eq(ibc_obj_kind_str(IBC_OBJ_XRCD), "XRCD");
	ck_assert_str_eq(ibc_obj_kind_str(IBC_OBJ_MW), "MW");
	ck_assert_str_eq(ibc_obj_kind_str(IBC_OBJ_AH), "AH");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("objects");
	TCase *tc = tcase_create("soft");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_cq);
	tcase_add_test(tc, test_cq_errors);
	tcase_add_test(tc, test_qp);
	tcase_add_test(tc, test_qp_xrc_send);
	tcase_add_test(tc, test_srq);
	tcase_add_test(tc, test_wq);
	tcase_add_test(tc, test_mr);
	tcase_add_test(tc, test_ebusy_order);
	tcase_add_test(tc, test_other_context);
	tcase_add_test(tc, test_handle_reuse);
	tcase_add_test(tc, test_quota);
	tcase_add_test(tc, test_track_soft);
	tcase_add_test(tc, test_close_and_disconnect_destroy);
	tcase_add_test(tc, test_killed_client);
	tcase_add_test(tc, test_evicted_detached);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_kind_names);
	suite_add_tcase(s, tc);
	return ck_run("check_objects", s);
}
