/* SPDX-License-Identifier: MIT */
/*
 * Devices: two tables of operations, as libibverbs has (verbs_device_ops
 * and verbs_context_ops): what a device does (open a context, read its
 * events, say whether it is still there) and what one of its contexts does
 * (hand out its descriptor and PD, make and destroy objects). Two
 * implementations: device-verbs.c on libibverbs, device-soft.c in software.
 * The daemon opens one context with its PD per (domain, device) and hands
 * clients a descriptor to import.
 *
 * An implementation leaves NULL what it cannot do. device_set_ops() fills
 * the gaps at probe with defaults (rdma-core's verbs_set_ops is the model),
 * so that every entry can be called: the defaults of fallible operations
 * answer -EOPNOTSUPP with a sentence naming the device and the missing
 * capability.
 */
#ifndef RDMAB_DEVICE_H
#define RDMAB_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "include/ibclient.h"
#include "common/device/caps-fields.h"
#include "daemon/util/rec-fields.h"
#include "daemon/util/why.h"

enum device_mode {
	DEVICE_MODE_AUTO,
	DEVICE_MODE_VERBS,
	DEVICE_MODE_SOFT,
};

enum device_kind {
	DEVICE_KIND_VERBS,
	DEVICE_KIND_SOFT,
};

#define DEVICE_NAME_MAX 64
#define DEVICE_MAX 32

/* enum ibc_obj_kind, the one vocabulary of the daemon, the library and
 * the protocol, runs from IBC_OBJ_NONE to IBC_OBJ_CONTEXT (device.c stops
 * the build when a kind is added after it without moving this). */
#define OBJ_KIND_COUNT (IBC_OBJ_CONTEXT + 1)

/* "QP", "CQ", ... for messages; "object" for a value out of range. */
const char *obj_kind_name(uint32_t kind);
/* Where an owner's objects of @kind are destroyed by handle, from 1 (the
 * first: what uses others) to OBJ_DESTROY_RANKS (the PD, which all use);
 * each rank is one kind's. 0: a kind never destroyed by handle (none,
 * the context) or out of range. */
#define OBJ_DESTROY_RANKS 12
unsigned int obj_kind_destroy_rank(uint32_t kind);
/* Whether libibverbs hides the handle of a @kind object from its user
 * (an XRCD's): a record of one the client made names no handle. */
bool obj_kind_handle_hidden(uint32_t kind);

struct device_caps {
	uint64_t max_dm_size;
	bool xrc;
	uint32_t max_rss_table_size;
	uint64_t rss_hash_fields;
	uint32_t rss_hash_functions;
	/* Clients can import the context (mlx5 and soft). */
	bool import;
	uint32_t ports;
	char transport[16];
	/* ibv_query_device's limits, device-wide: max_qp, max_srq_wr, ...
	 * (common/device/caps-fields.h). */
#define DEVICE_CAPS_LIMIT(name, type, fmt) type name;
	CAPS_LIMITS(DEVICE_CAPS_LIMIT)
#undef DEVICE_CAPS_LIMIT
	/* Device memory: can a DM be shared with the domain's clients
	 * (soft: yes; verbs: the start-up self-test), and why not. */
	bool dm_shared;
	char dm_reason[160];
	uint32_t max_xrcd; /* soft only: what it holds at once */
	/* 1 << IBV_QPT_* of the QP types RSS hashes for (rss_caps). */
	uint32_t rss_qp_types;
};

/* An operation's sentence for a failure (struct why, why.h) is kept this
 * long where a record holds one. */
#define DEVICE_WHY_MAX 200

/* What an object is asked to be, and what the device made of it: the
 * protocol's ObjAttr in device terms. */
struct obj_attr {
	uint32_t cqe;
	uint32_t comp_vector;
	uint32_t qp_type; /* enum ibv_qp_type */
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
	uint32_t max_wr; /* SRQ, WQ */
	uint32_t max_sge;
	uint32_t srq_limit;
	uint64_t mr_addr;
	uint64_t mr_length;
	uint32_t mr_access; /* IBV_ACCESS_* */
	uint32_t sq_sig_all;
	/* XRC_RECV QP: the target QP to open; 0 to create one. */
	uint32_t xrc_qp_num;
};

/* The objects one object uses, by slot: QP: send CQ, receive CQ, SRQ
 * (XRC_RECV: the XRCD in slot 0); WQ: CQ; XRC SRQ: CQ, XRCD. */
#define OBJ_MAX_USES 4

enum obj_use_slot {
	OBJ_USE_SEND_CQ = 0,
	OBJ_USE_RECV_CQ = 1,
	OBJ_USE_SRQ = 2,
	OBJ_USE_CQ = 0,
	OBJ_USE_SRQ_XRCD = 1,
	OBJ_USE_QP_XRCD = 0,
};

struct obj_spec {
	enum ibc_obj_kind kind;
	/* Handles in the context, where bit i of used is set. */
	uint32_t uses[OBJ_MAX_USES];
	unsigned int used;
	struct obj_attr attr;
	/* XRCD: the inode of its file (the kernel's key). */
	uint64_t xrcd_ino;
	/* The creating session's import (import_open): where the
	 * provider objects a create makes belong (soft: [soft]
	 * internal_objects_per_qp). 0: none. */
	uint64_t import;
	/* A restore (obj_restore): the QP or SRQ number and the MR key
	 * the object had, which its clients know; 0: new ones. */
	uint32_t num;
	uint32_t key;
};

/* Restart: the spec's fields the soft device's record of an object keeps
 * (state.proto's SoftObject) beyond what the registry writes there (its
 * uses, attributes, number and key), by the record's field numbers: into
 * @f, and back into @spec. Inline: every soft create saves its spec. */
#define OBJ_SPEC_FIELD_XRCD_INO 4 /* SoftObject.xrcd_ino */

static inline void obj_spec_fields_save(const struct obj_spec *spec,
					struct rec_fields *f)
{
	/* One field, at most one: within REC_FIELDS_MAX. */
	(void)rec_field_set(f, OBJ_SPEC_FIELD_XRCD_INO, spec->xrcd_ino);
}

static inline void obj_spec_fields_load(struct obj_spec *spec,
					const struct rec_fields *f)
{
	spec->xrcd_ino = rec_field_get(f, OBJ_SPEC_FIELD_XRCD_INO);
}

struct obj_made {
	uint32_t handle;
	/* QP and SRQ number. */
	uint32_t num;
	uint32_t lkey;
	uint32_t rkey;
	struct obj_attr attr;
};

/* A DM the device allocated (daemon/families/dm/dm.c keeps the rest). */
struct device_dm {
	/* Its handle in the context. */
	uint32_t handle;
	/* Bytes, whole pages. */
	uint64_t length;
	/* soft: the DM's sealed memfd, owned; -1 on verbs. */
	int fd;
	/* verbs: the struct ibv_dm. */
	void *priv;
};

/* An RSS object as the device makes it (daemon/families/rss/rss.c checks the
 * rules first): an indirection table of 2^log_size entries, entry i the WQ
 * wqs[i % n_wqs], a RAW_PACKET QP hashing by Toeplitz over it, and a flow
 * rule steering the match to the QP at @priority. */
#define RSS_KEY_LEN 40

struct rss_match {
	uint8_t af; /* AF_INET or AF_INET6: always set */
	uint8_t l4; /* IPPROTO_TCP, IPPROTO_UDP, or 0 */
	uint8_t prefix_len;
	uint8_t addr[16];
	uint16_t port;
	uint16_t port_mask;
};

struct rss_spec {
	uint32_t port_num;
	uint32_t log_size;
	uint32_t n_wqs;
	const uint32_t *wqs; /* handles in the context */
	uint8_t key[RSS_KEY_LEN];
	uint64_t hash_fields;
	struct rss_match match;
	uint32_t priority;
};

struct rss_made {
	uint32_t tbl_handle;
	uint32_t qp_handle;
	uint32_t flow_handle;
	uint32_t qp_num;
	/* The implementation's (verbs: the libibverbs objects); NULL once
	 * every part is destroyed. */
	void *priv;
	/* Taken back after a restart (rss_adopt): no implementation's
	 * objects, the parts go by handle. */
	bool adopted;
};

struct device;

/* Every implementation's context starts with this (container_of). */
struct device_ctx {
	struct device *dev;
};

/* What a device numbers itself (serials_get). */
struct device_serials {
	uint32_t num;
	uint32_t key;
	/* The soft device's XRC domain numbers. */
	uint32_t xrc_num;
};

/* Device-level operations. ctx_open is required. */
struct device_ops {
	/* Open a context and its PD for one domain. */
	int (*ctx_open)(struct device *dev, uint64_t ctx_id, const char *domain,
			struct device_ctx **ret_ctx);
	/* Read the device's events; returns 1 once the device is gone.
	 * Default: 0. */
	int (*handle_event)(struct device *dev);
	/* Is the device still present (checked periodically)? Default:
	 * true. */
	bool (*present)(struct device *dev);
	/* Release the device's own context; the device is unusable after.
	 * Default: nothing to release. */
	void (*shutdown)(struct device *dev);
	/*
	 * Hold the XRC domain of the inode file @fd (inode @ino) open in the
	 * device's own context for XRC domains, never a domain's
	 * (ibv_open_xrcd with O_CREAT): @ret is what xrcd_drop takes back.
	 * @io_id: in, the identity a previous daemon's hold of it had (0: a
	 * hold of no earlier one); out, the identity of the XRC domain held,
	 * as the device shows it (soft: its number; verbs: 0, libibverbs
	 * shows none). A restart's hold names the old one: the soft device,
	 * whose kernel died with the daemon, gives the XRC domain that
	 * identity again; a verbs kernel finds its XRC domain alive (held by
	 * the stored context, xrcd_ctx_fd). The kernel's -errno is passed on
	 * as it is. Default: -EOPNOTSUPP naming the device.
	 */
	int (*xrcd_hold)(struct device *dev, int fd, uint64_t ino,
			 uint32_t *io_id, void **ret, struct why *why);
	/* Let the hold go (ibv_close_xrcd). Default: nothing. */
	void (*xrcd_drop)(struct device *dev, void *xrcd);
	/*
	 * Restart: the descriptor (the device's, borrowed) of the context
	 * that holds the XRC domains, once one is held, which the fd store
	 * keeps so that the kernel's XRC domains outlive the daemon; -1 when
	 * there is none (not opened yet, or a device whose kernel is the
	 * daemon). Default: -1.
	 */
	int (*xrcd_ctx_fd)(struct device *dev);
	/*
	 * Restart (restore-ctx.c): make the context @ctx_id again over @fd
	 * (taken, also on failure), the descriptor a previous daemon's
	 * ctx_open handed out, which clients still hold, with its PD
	 * @pd_handle. -EBADMSG for a descriptor that is not that context's.
	 * Default: -EOPNOTSUPP (the context cannot be adopted: closed, its
	 * clients told).
	 */
	int (*ctx_adopt)(struct device *dev, uint64_t ctx_id, int fd,
			 uint32_t pd_handle, struct device_ctx **ret_ctx);
	/*
	 * Restart: the numbers the device hands out next where it is the
	 * kernel (soft: QP and SRQ numbers, MR keys), so that a restart
	 * never hands one out twice; serials_set() moves them to @v (what
	 * serials_get() gave, plus a margin). Default: none (a kernel
	 * keeps its own): serials_get() gives zeroes.
	 */
	void (*serials_get)(const struct device *dev,
			    struct device_serials *ret);
	void (*serials_set)(struct device *dev, const struct device_serials *v);
};

/* Context-level operations. close, fd and pd_handle are required. */
struct device_ctx_ops {
	void (*close)(struct device_ctx *ctx);
	/* The descriptor clients import; owned by the context. */
	int (*fd)(const struct device_ctx *ctx);
	uint32_t (*pd_handle)(const struct device_ctx *ctx);
	/* The context's async event descriptor and its reader, which
	 * returns 1 when the event says the device is gone. Default: -1
	 * (none) and 0. */
	int (*event_fd)(const struct device_ctx *ctx);
	int (*handle_event)(struct device_ctx *ctx);
	/*
	 * Make an object in the context, for a device whose kernel the
	 * daemon is (soft). Returns 0 with @ret filled, or the kernel's
	 * -errno with a sentence in @why. Default: -EOPNOTSUPP (verbs
	 * clients make their objects themselves).
	 */
	int (*obj_create)(struct device_ctx *ctx, const struct obj_spec *spec,
			  struct obj_made *ret, struct why *why);
	/*
	 * Destroy the object @handle of @kind by its handle alone. Returns
	 * 0 or the kernel's -errno: -EBUSY while other objects use it,
	 * -ENOENT for a handle that names no object, -EINVAL for one that
	 * names an object of another kind, -EIO once the device is
	 * disassociated. Default: -EOPNOTSUPP.
	 */
	int (*obj_destroy)(struct device_ctx *ctx, enum ibc_obj_kind kind,
			   uint32_t handle, struct why *why);
	/*
	 * Restart (restore-registry.c): make again, at @handle, the
	 * object @spec made before the daemon restarted, for a device
	 * whose kernel the daemon is (soft). Default: -EOPNOTSUPP.
	 */
	int (*obj_restore)(struct device_ctx *ctx, const struct obj_spec *spec,
			   uint32_t handle, struct obj_made *ret,
			   struct why *why);
	/*
	 * Device memory. dm_alloc: @length bytes (whole pages), aligned to
	 * 2^@log_align, zeroed before anyone sees them; -ENOMEM when the
	 * device's memory is exhausted, -EINVAL for what it cannot give.
	 * dm_free: zero @dm again and free it; -EBUSY while an MR uses it
	 * (nothing is freed then). Defaults: -EOPNOTSUPP.
	 */
	int (*dm_alloc)(struct device_ctx *ctx, uint64_t length,
			uint32_t log_align, struct device_dm *ret,
			struct why *why);
	int (*dm_free)(struct device_ctx *ctx, struct device_dm *dm,
		       struct why *why);
	/*
	 * Restart (dm-state.c): take back the DM @handle of @length bytes
	 * that the previous daemon allocated in this (re-adopted) context:
	 * soft, its record made again at @handle (unless the context has
	 * it), its memfd @fd (taken on success) must be the DM's; verbs,
	 * ibv_import_dm() by handle (@fd is -1). Counted in the device's
	 * reserve again. -EEXIST for a handle another object has, -EINVAL
	 * for an fd that is not the DM. Default: -EOPNOTSUPP.
	 */
	int (*dm_adopt)(struct device_ctx *ctx, uint32_t handle,
			uint64_t length, int fd, struct device_dm *ret,
			struct why *why);
	/*
	 * RSS (daemon/families/rss/rss.c): make table, QP and flow rule, all or
	 * none; destroy one part of @made (IBC_OBJ_FLOW, IBC_OBJ_QP, then
	 * IBC_OBJ_RWQ_IND_TBL: -EBUSY in any other order). Default:
	 * -EOPNOTSUPP naming the device, and the reason the start-up
	 * self-test gave when it failed (rss_why).
	 */
	int (*rss_create)(struct device_ctx *ctx, const struct rss_spec *spec,
			  struct rss_made *ret, struct why *why);
	int (*rss_destroy)(struct device_ctx *ctx, struct rss_made *made,
			   enum ibc_obj_kind part, struct why *why);
	/*
	 * Restart (rss-state.c): take back the RSS object of @spec whose
	 * parts the previous daemon made at @at's handles: soft, made again
	 * there; verbs, the kernel kept them in the context (destroyed by
	 * handle later). Default: -EOPNOTSUPP.
	 */
	int (*rss_adopt)(struct device_ctx *ctx, const struct rss_spec *spec,
			 const struct rss_made *at, struct rss_made *ret,
			 struct why *why);
	/*
	 * The kernel's handle list (daemon/registry/unaccounted.c): the handles
	 * of every object of @type in the context, whoever made it, at most
	 * @max of them in @handles. @type is an enum ibc_obj_kind or
	 * DEVICE_INTERNAL, the provider's own objects (mlx5: its UARs).
	 * Returns how many were written; @max of them means there may be
	 * more. Default: -EOPNOTSUPP (nothing to count).
	 */
	int (*handle_list)(struct device_ctx *ctx, unsigned int type,
			   uint32_t *handles, uint32_t max);
	/*
	 * Restart (rss-state.c): whether the QP at @handle is an RSS QP (one
	 * over an indirection table, which members cannot make): 1, 0 for a
	 * QP of another type, or -errno when the device cannot say. mlx5:
	 * its query answers ENOSYS for an RSS QP. Default: -EOPNOTSUPP.
	 */
	int (*qp_is_rss)(struct device_ctx *ctx, uint32_t handle);
	/*
	 * A client imports the context, and closes its import cleanly: the
	 * provider objects a device makes per import, which the kernel
	 * keeps after a death (soft: [soft] internal_objects_per_import
	 * records; mlx5 makes its UARs in the client, unseen here). @ret is
	 * what import_close takes. Defaults: nothing to make.
	 */
	int (*import_open)(struct device_ctx *ctx, uint64_t *ret);
	void (*import_close)(struct device_ctx *ctx, uint64_t import);
	/* Restart: the import a previous daemon's import_open named
	 * @import, of a session adopted with it, made again after the
	 * context's objects (soft: its records, at free handles); the
	 * next import_open names a later one. 0 or -ENOMEM. Default:
	 * nothing to make. */
	int (*import_adopt)(struct device_ctx *ctx, uint64_t import);
	/* Restart: how many records import @import holds now (its QPs'
	 * included), what a death leaves; and @n more records of import
	 * @import made again (soft: at free handles), @import 0 for those
	 * dead importers left (under an import no session holds, kept
	 * until the context closes). 0 or -ENOMEM. Defaults: 0, nothing
	 * to make (a verbs kernel keeps them in the context). */
	uint32_t (*import_records)(struct device_ctx *ctx, uint64_t import);
	int (*import_left)(struct device_ctx *ctx, uint64_t import, uint32_t n);
};

/* handle_list's type for the provider's internal objects: a value of
 * its own, above every kind (a new kind must not become it) and within
 * the soft device's 8-bit record kind. */
#define DEVICE_INTERNAL 0xffu
_Static_assert(DEVICE_INTERNAL >= OBJ_KIND_COUNT,
	       "DEVICE_INTERNAL must not be an object kind");
_Static_assert(DEVICE_INTERNAL <= 0xff,
	       "DEVICE_INTERNAL must fit soft_rec's 8-bit kind");

struct device {
	char name[DEVICE_NAME_MAX];
	enum device_kind kind;
	/* Complete tables (device_set_ops): point at ops_table and
	 * ctx_ops_table below. */
	const struct device_ops *ops;
	const struct device_ctx_ops *ctx_ops;
	struct device_caps caps;
	/* Device memory the broker reserved on it (dm.c), in bytes. */
	uint64_t dm_reserved;
	/* The daemon is the device's kernel: objects are made by
	 * obj_create, not by clients (soft). */
	bool broker_objects;
	/* Provider-internal objects one import makes (handle_list's
	 * DEVICE_INTERNAL): soft, the configuration's; mlx5, what the
	 * start-up scratch import made. */
	uint32_t internal_per_import;
	/* soft: provider-internal objects each QP an import creates makes
	 * there ([soft] internal_objects_per_qp), as mlx5 allocates BF
	 * UARs for QPs and frees them only when the import closes. */
	uint32_t internal_per_qp;
	/* soft: the constructors go INTENT, kernel call, REGISTER ([soft]
	 * intent_window). */
	bool intent_window;
	/* Why the device makes no RSS objects (its self-test); empty when
	 * it does. */
	char rss_why[DEVICE_WHY_MAX];
	bool removed;
	/* Polls readable when handle_event has work; -1 for none. */
	int event_fd;
	void *priv;
	struct device_ops ops_table;
	struct device_ctx_ops ctx_ops_table;
};

/*
 * Give @dev the implementation's tables, every NULL entry replaced by its
 * default. Called by the implementations' probes.
 */
void device_set_ops(struct device *dev, const struct device_ops *ops,
		    const struct device_ctx_ops *ctx_ops);

struct device_list {
	enum device_kind kind;
	size_t n;
	struct device dev[DEVICE_MAX];
};

struct device_config {
	/* Soft device limits (the verbs device reports its own). */
	uint64_t soft_max_dm_size;
	/* Soft devices to make, soft0 to soft(n-1); 0 is taken as 1. */
	unsigned int soft_devices;
	/* [soft] intent_window, internal_objects_per_import and
	 * internal_objects_per_qp. */
	bool soft_intent_window;
	uint32_t soft_internal_per_import;
	uint32_t soft_internal_per_qp;
};

int device_parse_mode(const char *s, enum device_mode *ret_mode);
const char *device_kind_name(enum device_kind kind);

/*
 * Choose the device kind for @mode and open its devices. auto takes verbs
 * when libibverbs finds a device and soft otherwise; verbs with no device is
 * -ENODEV. @ret_why says why, for the log.
 */
int device_probe(enum device_mode mode, const struct device_config *cfg,
		 struct device_list *ret_list, const char **ret_why);
void device_list_close(struct device_list *list);
/* Find by name; NULL (or "") is the first device still present. */
struct device *device_find(struct device_list *list, const char *name);
/* @dev's caps in a line for the daemon's log at start: "InfiniBand,
 * max_dm_size 131072, xrc yes, rss table 512, import yes". */
void device_caps_text(const struct device *dev, char *buf, size_t len);

/* Implementations. */
int device_soft_probe(const struct device_config *cfg,
		      struct device_list *list);
/* Returns the number of devices opened, or -errno. */
int device_verbs_probe(struct device_list *list);

struct ibv_context;
struct ibv_pd;

/*
 * The libibverbs context and PD behind a verbs device's context; -EINVAL
 * for another kind of device. For the real-kernel tests on devices that
 * cannot import (rxe): a forked child makes its objects on the daemon's own
 * context, as a client would on its import (tests/vm/vm-cleanup.c).
 */
int device_verbs_context(const struct device_ctx *ctx,
			 struct ibv_context **ret_ctx, struct ibv_pd **ret_pd);

/*
 * Read the async events waiting on a domain context's descriptor
 * (ctx->async_fd, non-blocking) without libibverbs' reading, which would
 * take each event's element for a pointer: the context is the members' too,
 * and what they make without an event file reports here with an element of
 * their choosing. Events of @own_qps (the broker's RSS QPs, struct ibv_qp)
 * are acknowledged; those of other objects are dropped and counted in
 * @ret_foreign. Returns 1 when one says the device is gone, else 0.
 */
int device_verbs_drain(struct ibv_context *ctx, void *const *own_qps,
		       size_t n_own, unsigned int *ret_foreign);

#endif
