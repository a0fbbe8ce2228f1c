// SPDX-License-Identifier: MIT
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "tests/objlib.h"
#include "tests/testlib.h"

char ol_error[256];

static void ol_init(struct ol_client *c)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

void ol_free(Rdmab__DaemonMessage *m)
{
	if (m)
		rdmab__daemon_message__free_unpacked(m, NULL);
}

int ol_send(struct ol_client *c, Rdmab__Request *req)
{
	req->version = WIRE_PROTOCOL_VERSION;
	req->serial = ++c->serial;
	return tl_send_request(c->fd, req, NULL, 0);
}

static int ol_recv(struct ol_client *c, Rdmab__DaemonMessage **ret)
{
	int64_t deadline = tl_now_ms() + TL_WAIT_MS;

	if (!c->pump)
		return tl_recv_msg(c->fd, TL_WAIT_MS, ret);
	for (;;) {
		int n = tl_recv_msg(c->fd, 0, ret);

		if (n != -ETIMEDOUT || tl_now_ms() > deadline)
			return n;
		c->pump();
	}
}

int ol_call(struct ol_client *c, Rdmab__Request *req,
	    Rdmab__DaemonMessage **ret)
{
	Rdmab__DaemonMessage *m;
	int err = ol_send(c, req);

	ol_error[0] = '\0';
	if (err < 0)
		return err;
	for (;;) {
		err = ol_recv(c, &m);
		if (err == 0)
			return -ECONNRESET;
		if (err < 0)
			return err;
		if (m->kind_case == RDMAB__DAEMON_MESSAGE__KIND_REPLY &&
		    (m->reply->serial == c->serial || m->reply->serial == 0))
			break;
		ol_free(m);
	}
	if (m->reply->error) {
		snprintf(ol_error, sizeof(ol_error), "%s", m->reply->message);
		err = -m->reply->error;
		ol_free(m);
		return err;
	}
	if (m->reply->serial == 0) {
		ol_free(m);
		return -EPROTO;
	}
	*ret = m;
	return 0;
}

static int ol_hello_as(struct ol_client *c, const char *domain,
		       bool private_domain)
{
	Rdmab__HelloRequest hello = RDMAB__HELLO_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	int ret;

	hello.library_version = (char *)"objlib";
	hello.pid = (uint32_t)getpid();
	hello.domain = (char *)(domain ? domain : "");
	hello.private_domain = private_domain;
	req.body_case = RDMAB__REQUEST__BODY_HELLO;
	req.hello = &hello;
	ret = ol_call(c, &req, &m);
	if (ret < 0)
		return ret;
	c->client_id = m->reply->hello->client_id;
	snprintf(c->domain, sizeof(c->domain), "%s", m->reply->hello->domain);
	ol_free(m);
	return 0;
}

int ol_hello(struct ol_client *c, const char *domain)
{
	return ol_hello_as(c, domain, false);
}

int ol_hello_private(struct ol_client *c)
{
	return ol_hello_as(c, NULL, true);
}

int ol_open(struct ol_client *c)
{
	Rdmab__OpenContextRequest open = RDMAB__OPEN_CONTEXT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	int ret;

	open.device = (char *)"";
	req.body_case = RDMAB__REQUEST__BODY_OPEN_CONTEXT;
	req.open_context = &open;
	ret = ol_call(c, &req, &m);
	if (ret < 0)
		return ret;
	c->ctx_id = m->reply->open_context->context_id;
	ol_free(m);
	return 0;
}

int ol_adopt(struct ol_client *c, int fd, void (*pump)(void))
{
	ol_init(c);
	c->fd = fd;
	c->pump = pump;
	return ol_hello(c, NULL);
}

int ol_connect(struct ol_client *c, const char *sock, const char *domain)
{
	int ret;

	ol_init(c);
	ret = tl_raw_connect(sock);
	if (ret < 0)
		return ret;
	c->fd = ret;
	ret = ol_hello(c, domain);
	if (ret == 0)
		ret = ol_open(c);
	if (ret < 0)
		ol_close(c);
	return ret;
}

void ol_close(struct ol_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

int ol_create_mode(struct ol_client *c, int mode, uint32_t kind,
		   const uint64_t *uses, size_t n_uses,
		   const Rdmab__ObjAttr *attr, uint32_t handle,
		   struct ol_obj *ret)
{
	Rdmab__ObjCreateRequest q = RDMAB__OBJ_CREATE_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	const Rdmab__ObjCreateReply *out;
	Rdmab__DaemonMessage *m;
	int err;

	q.context_id = c->ctx_id;
	q.kind = kind;
	q.mode = (Rdmab__ObjCreateRequest__Mode)mode;
	q.uses = (uint64_t *)uses;
	q.n_uses = n_uses;
	q.attr = (Rdmab__ObjAttr *)attr;
	q.handle = handle;
	req.body_case = RDMAB__REQUEST__BODY_OBJ_CREATE;
	req.obj_create = &q;
	err = ol_call(c, &req, &m);
	if (err < 0)
		return err;
	out = m->reply->obj_create;
	if (ret) {
		memset(ret, 0, sizeof(*ret));
		ret->id = out->object_id;
		ret->handle = out->handle;
		ret->num = out->qp_num;
		ret->lkey = out->lkey;
		ret->rkey = out->rkey;
		rdmab__obj_attr__init(&ret->attr);
		if (out->attr) {
			ret->attr = *out->attr;
			ret->attr.base.unknown_fields = NULL;
			ret->attr.base.n_unknown_fields = 0;
		}
	}
	ol_free(m);
	return 0;
}

int ol_create(struct ol_client *c, uint32_t kind, const uint64_t *uses,
	      size_t n_uses, const Rdmab__ObjAttr *attr, struct ol_obj *ret)
{
	return ol_create_mode(c, RDMAB__OBJ_CREATE_REQUEST__MODE__CREATE, kind,
			      uses, n_uses, attr, 0, ret);
}

int ol_cq(struct ol_client *c, uint32_t cqe, struct ol_obj *ret)
{
	Rdmab__ObjAttr a = RDMAB__OBJ_ATTR__INIT;

	a.cqe = cqe;
	return ol_create(c, IBC_OBJ_CQ, NULL, 0, &a, ret);
}

int ol_qp(struct ol_client *c, uint64_t scq, uint64_t rcq, uint64_t srq,
	  struct ol_obj *ret)
{
	Rdmab__ObjAttr a = RDMAB__OBJ_ATTR__INIT;
	uint64_t uses[3] = { scq, rcq, srq };

	a.qp_type = IBV_QPT_RC;
	a.max_send_wr = 16;
	a.max_recv_wr = srq ? 0 : 16;
	a.max_send_sge = 1;
	a.max_recv_sge = srq ? 0 : 1;
	return ol_create(c, IBC_OBJ_QP, uses, srq ? 3 : 2, &a, ret);
}

int ol_srq(struct ol_client *c, uint32_t max_wr, struct ol_obj *ret)
{
	Rdmab__ObjAttr a = RDMAB__OBJ_ATTR__INIT;

	a.max_wr = max_wr;
	a.max_sge = 1;
	return ol_create(c, IBC_OBJ_SRQ, NULL, 0, &a, ret);
}

int ol_wq(struct ol_client *c, uint64_t cq, uint32_t max_wr, struct ol_obj *ret)
{
	Rdmab__ObjAttr a = RDMAB__OBJ_ATTR__INIT;

	a.max_wr = max_wr;
	a.max_sge = 1;
	return ol_create(c, IBC_OBJ_WQ, &cq, 1, &a, ret);
}

int ol_mr(struct ol_client *c, uint64_t addr, uint64_t length, uint32_t access,
	  struct ol_obj *ret)
{
	Rdmab__ObjAttr a = RDMAB__OBJ_ATTR__INIT;

	a.mr_addr = addr;
	a.mr_length = length;
	a.mr_access = access;
	return ol_create(c, IBC_OBJ_MR, NULL, 0, &a, ret);
}

int ol_request(struct ol_client *c, Rdmab__Request *req)
{
	Rdmab__DaemonMessage *m;
	int err;

	err = ol_call(c, req, &m);
	if (err == 0)
		ol_free(m);
	return err;
}

int ol_destroy(struct ol_client *c, uint64_t id)
{
	Rdmab__ObjDestroyRequest q = RDMAB__OBJ_DESTROY_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	q.object_id = id;
	req.body_case = RDMAB__REQUEST__BODY_OBJ_DESTROY;
	req.obj_destroy = &q;
	return ol_request(c, &req);
}

int ol_register(struct ol_client *c, uint64_t id, uint32_t handle)
{
	Rdmab__ObjRegisterRequest q = RDMAB__OBJ_REGISTER_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	q.object_id = id;
	q.handle = handle;
	req.body_case = RDMAB__REQUEST__BODY_OBJ_REGISTER;
	req.obj_register = &q;
	return ol_request(c, &req);
}

int ol_evict(struct ol_client *c, uint64_t client_id)
{
	Rdmab__EvictRequest q = RDMAB__EVICT_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;

	q.client_id = client_id;
	req.body_case = RDMAB__REQUEST__BODY_EVICT;
	req.evict = &q;
	return ol_request(c, &req);
}

int ol_dm_alloc(struct ol_client *c, uint64_t length, uint64_t *ret_dm,
		uint64_t *ret_hold)
{
	Rdmab__DmAllocRequest q = RDMAB__DM_ALLOC_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m;
	int err;

	q.context_id = c->ctx_id;
	q.length = length;
	req.body_case = RDMAB__REQUEST__BODY_DM_ALLOC;
	req.dm_alloc = &q;
	err = ol_call(c, &req, &m);
	if (err < 0)
		return err;
	if (ret_dm)
		*ret_dm = m->reply->dm_alloc->dm_id;
	if (ret_hold)
		*ret_hold = m->reply->dm_alloc->object_id;
	ol_free(m);
	return 0;
}

int ol_rss(struct ol_client *c, const uint64_t *wq_ids, size_t n,
	   uint64_t *ret_id)
{
	Rdmab__RssCreateRequest q = RDMAB__RSS_CREATE_REQUEST__INIT;
	Rdmab__FlowMatch fm = RDMAB__FLOW_MATCH__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	static uint8_t key[40] = { 1 };
	Rdmab__DaemonMessage *m;
	int err;

	while ((1u << q.log_ind_tbl_size) < n)
		q.log_ind_tbl_size++;
	q.context_id = c->ctx_id;
	q.port_num = 1;
	q.wq_ids = (uint64_t *)wq_ids;
	q.n_wq_ids = n;
	q.hash_key.data = key;
	q.hash_key.len = sizeof(key);
	q.hash_fields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4;
	fm.af = AF_INET;
	fm.l4_proto = IPPROTO_UDP;
	fm.dst_port = 4791;
	fm.port_mask = 0xffff;
	q.match = &fm;
	req.body_case = RDMAB__REQUEST__BODY_RSS_CREATE;
	req.rss_create = &q;
	err = ol_call(c, &req, &m);
	if (err)
		return err;
	if (ret_id)
		*ret_id = m->reply->rss_create->rss_id;
	ol_free(m);
	return 0;
}

int ol_list(struct ol_client *c, uint64_t client_id, const char *domain,
	    struct ol_info *out, size_t cap)
{
	uint32_t offset = 0, total = 0;

	do {
		Rdmab__ListObjectsRequest q = RDMAB__LIST_OBJECTS_REQUEST__INIT;
		Rdmab__Request req = RDMAB__REQUEST__INIT;
		const Rdmab__ListObjectsReply *r;
		Rdmab__DaemonMessage *m;
		int err;

		q.offset = offset;
		q.client_id = client_id;
		q.domain = (char *)(domain ? domain : "");
		req.body_case = RDMAB__REQUEST__BODY_LIST_OBJECTS;
		req.list_objects = &q;
		err = ol_call(c, &req, &m);
		if (err < 0)
			return err;
		r = m->reply->list_objects;
		total = r->total;
		for (size_t i = 0; i < r->n_objects; i++, offset++) {
			const Rdmab__ObjectInfo *oi = r->objects[i];
			struct ol_info *o;

			if (offset >= cap)
				continue;
			o = &out[offset];
			memset(o, 0, sizeof(*o));
			o->id = oi->id;
			o->kind = oi->kind;
			o->handle = oi->handle;
			o->client_id = oi->client_id;
			o->pid = oi->pid;
			o->context_id = oi->context_id;
			snprintf(o->domain, sizeof(o->domain), "%s",
				 oi->domain);
			snprintf(o->device, sizeof(o->device), "%s",
				 oi->device);
			o->state = (int)oi->state;
			o->age_usec = oi->age_usec;
		}
		if (!r->n_objects)
			offset = total;
		ol_free(m);
	} while (offset < total);
	return (int)total;
}

int ol_domain(struct ol_client *c, const char *name, uint32_t *ret_objects,
	      uint32_t *ret_unaccounted)
{
	Rdmab__ListRequest q = RDMAB__LIST_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	const Rdmab__ListDomainsReply *r;
	Rdmab__DaemonMessage *m;
	int err = -ENOENT;

	req.body_case = RDMAB__REQUEST__BODY_LIST_DOMAINS;
	req.list_domains = &q;
	err = ol_call(c, &req, &m);
	if (err < 0)
		return err;
	r = m->reply->list_domains;
	err = -ENOENT;
	for (size_t i = 0; i < r->n_domains; i++)
		if (strcmp(r->domains[i]->name, name) == 0) {
			*ret_objects = r->domains[i]->used->objects;
			*ret_unaccounted = r->domains[i]->unaccounted;
			err = 0;
		}
	ol_free(m);
	return err;
}

int ol_client(struct ol_client *c, uint64_t id, uint32_t *ret_objects,
	      uint32_t *ret_unaccounted)
{
	Rdmab__ListRequest q = RDMAB__LIST_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	const Rdmab__ListClientsReply *r;
	Rdmab__DaemonMessage *m;
	int err;

	req.body_case = RDMAB__REQUEST__BODY_LIST_CLIENTS;
	req.list_clients = &q;
	err = ol_call(c, &req, &m);
	if (err < 0)
		return err;
	r = m->reply->list_clients;
	err = -ENOENT;
	for (size_t i = 0; i < r->n_clients; i++)
		if (r->clients[i]->id == id) {
			*ret_objects = r->clients[i]->objects;
			*ret_unaccounted = r->clients[i]->unaccounted;
			err = 0;
		}
	ol_free(m);
	return err;
}

void ol_storm(const char *sock, uint64_t seed, int report_fd)
{
	uint64_t cqs[16], others[64];
	size_t n_cq = 0, n_other = 0;
	struct ol_client c;
	struct tl_rng r;
	uint32_t suicide;

	tl_rng_seed(&r, seed);
	suicide = tl_rng_below(&r, 2) ? tl_rng_below(&r, 60) : UINT32_MAX;
	if (ol_connect(&c, sock, NULL) < 0)
		_exit(0);
	if (report_fd >= 0 &&
	    write(report_fd, &c.client_id, sizeof(c.client_id)) < 0)
		_exit(0);
	for (uint32_t i = 0;; i++) {
		struct ol_obj o;
		uint32_t what = tl_rng_below(&r, 10);

		if (i == suicide) {
			Rdmab__ObjDestroyRequest dq =
				RDMAB__OBJ_DESTROY_REQUEST__INIT;
			Rdmab__Request req = RDMAB__REQUEST__INIT;

			/* A destroy in flight, then death. */
			dq.object_id = n_other ? others[n_other - 1] :
				       n_cq    ? cqs[0] :
						 1;
			req.body_case = RDMAB__REQUEST__BODY_OBJ_DESTROY;
			req.obj_destroy = &dq;
			ol_send(&c, &req);
			raise(SIGKILL);
		}
		if (what < 3 && n_cq < 16) {
			if (ol_cq(&c, 1 + tl_rng_below(&r, 64), &o) == 0)
				cqs[n_cq++] = o.id;
		} else if (what < 7 && n_cq && n_other < 64) {
			uint64_t cq = cqs[tl_rng_below(&r, (uint32_t)n_cq)];
			int ret;

			switch (tl_rng_below(&r, 4)) {
			case 0:
				ret = ol_qp(&c, cq, cq, 0, &o);
				break;
			case 1:
				ret = ol_wq(&c, cq, 8, &o);
				break;
			case 2:
				ret = ol_srq(&c, 8, &o);
				break;
			default:
				ret = ol_mr(&c, 0x10000, 4096, 0, &o);
				break;
			}
			if (ret == 0)
				others[n_other++] = o.id;
		} else if (what < 9 && n_other) {
			uint32_t k = tl_rng_below(&r, (uint32_t)n_other);

			if (ol_destroy(&c, others[k]) == 0)
				others[k] = others[--n_other];
		} else if (n_cq && !n_other) {
			/* EBUSY while a QP or WQ uses it: kept then. */
			if (ol_destroy(&c, cqs[n_cq - 1]) == 0)
				n_cq--;
		}
	}
}

int ol_settled(const char *sock, int timeout_ms, char *why, size_t len)
{
	int64_t deadline = tl_now_ms() + timeout_ms;
	struct ol_client c;
	uint32_t used = 0, unacc = 0;
	int fd, n, ret;

	fd = tl_raw_connect(sock);
	if (fd < 0)
		return fd;
	ret = ol_adopt(&c, fd, NULL);
	while (ret == 0) {
		n = ol_list(&c, 0, NULL, NULL, 0);
		ret = n < 0 ? n : ol_domain(&c, c.domain, &used, &unacc);
		if (ret < 0)
			break;
		if (n == 0 && used == unacc)
			break;
		if (tl_now_ms() > deadline) {
			snprintf(why, len,
				 "%d objects registered, domain %s charged "
				 "with %u objects, %u unaccounted",
				 n, c.domain, used, unacc);
			ret = -EBUSY;
			break;
		}
		tl_sleep_ms(10);
	}
	ol_close(&c);
	return ret;
}

/* The soft device's kernel call of intent @id ([soft] intent_window), with
 * cqe 8 in its attributes (what a CQ needs; other kinds ignore it). */
int ol_kernel_call(struct ol_client *c, uint64_t id, const uint64_t *uses,
		   size_t n_uses, uint32_t *ret_handle)
{
	Rdmab__ObjKernelCallRequest kc = RDMAB__OBJ_KERNEL_CALL_REQUEST__INIT;
	Rdmab__ObjAttr attr = RDMAB__OBJ_ATTR__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	Rdmab__DaemonMessage *m = NULL;
	int ret;

	attr.cqe = 8;
	kc.object_id = id;
	kc.uses = (uint64_t *)uses;
	kc.n_uses = n_uses;
	kc.attr = &attr;
	req.body_case = RDMAB__REQUEST__BODY_OBJ_KERNEL_CALL;
	req.obj_kernel_call = &kc;
	ret = ol_call(c, &req, &m);
	if (ret == 0) {
		if (m->reply->body_case != RDMAB__REPLY__BODY_OBJ_KERNEL_CALL)
			ret = -EPROTO;
		else
			*ret_handle = m->reply->obj_kernel_call->handle;
		ol_free(m);
	}
	return ret;
}
