/* SPDX-License-Identifier: MIT */
/*
 * libibclient: the client side of rdmabroker.
 *
 * Every fallible call returns 0 (or a count) on success and a negative errno
 * on failure; out-parameters named ret_* are written only on success. After
 * a failure, ibc_last_error() gives the broker's sentence for it (per
 * thread). Structures the caller fills or receives start with comp_mask, so
 * that they can grow without breaking the ABI. See libibclient(3).
 *
 * The ABI growth rule: a structure the library fills grows only at its end,
 * and every call that fills one takes the caller's size of it (sizeof, as
 * compiled against this header), so that a program built against an older
 * header keeps working with a newer library and the other way round. The
 * library writes as much as both versions know, zeroes what only the
 * caller's newer version has, and refuses a size smaller than the
 * structure's first version with EINVAL. The ibc_list_*() calls take the
 * size of one entry and return an array of entries of that size.
 */
#ifndef IBCLIENT_H
#define IBCLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* For the attribute types the constructors share with libibverbs. */
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

#define IBC_VERSION_MAJOR 0
#define IBC_VERSION_MINOR 1
#define IBC_VERSION_PATCH 0

/* The socket used when neither the attributes nor $RDMABROKER_SOCKET name
 * one. */
#define IBC_DEFAULT_SOCKET "/run/rdmabroker.sock"

struct ibc_client;
struct ibc_ctx;
struct ibc_cq;
struct ibc_qp;
struct ibc_srq;
struct ibc_wq;
struct ibc_mr;
struct ibc_xrcd;

enum ibc_connect_attr_mask {
	IBC_CONNECT_ATTR_SOCKET = 1 << 0,
	IBC_CONNECT_ATTR_TIMEOUT = 1 << 1,
	IBC_CONNECT_ATTR_FLAGS = 1 << 2,
	IBC_CONNECT_ATTR_EVENT_CB = 1 << 3,
	IBC_CONNECT_ATTR_DOMAIN = 1 << 4,
};

enum ibc_connect_flags {
	/* Where the broker's context cannot be imported, open the device in
	 * this process instead (see ibc_open(3)). */
	IBC_CONNECT_ALLOW_OWN_CONTEXT = 1 << 0,
	/* Join a domain of this client's own: a context nobody else
	 * shares, gone when the client goes. */
	IBC_CONNECT_PRIVATE_DOMAIN = 1 << 1,
};

/*
 * The kinds of object the broker registers, one enum for the library, the
 * daemon and the protocol. The values are ABI: never renumber.
 */
enum ibc_obj_kind {
	IBC_OBJ_NONE = 0,
	IBC_OBJ_QP = 1,
	IBC_OBJ_CQ = 2,
	IBC_OBJ_SRQ = 3,
	IBC_OBJ_WQ = 4,
	IBC_OBJ_MR = 5,
	IBC_OBJ_PD = 6,
	IBC_OBJ_RWQ_IND_TBL = 7,
	IBC_OBJ_FLOW = 8,
	IBC_OBJ_DM = 9,
	IBC_OBJ_XRCD = 10,
	IBC_OBJ_MW = 11,
	IBC_OBJ_AH = 12,
	/* Broker objects: a domain's context on a device. */
	IBC_OBJ_CONTEXT = 13,
};

enum ibc_event_type {
	IBC_EVENT_SHUTDOWN = 1, /* the broker is stopping */
	IBC_EVENT_DISCONNECTED, /* the connection was lost */
	/* A device is gone: destroy what this process made on it in the
	 * callback; the library closes its contexts' descriptors after. */
	IBC_EVENT_DEVICE_REMOVED,
	/* Device memory (object_kind IBC_OBJ_DM, object_id the DM's id):
	 * its free was asked while this process holds it; the library
	 * unimports it after the callback unless MRs are on it. */
	IBC_EVENT_DM_FREE_PENDING,
	/* An administrator revoked the DM: deregister its MRs in the
	 * callback; the library unimports it after. */
	IBC_EVENT_DM_REVOKED,
	/* XRC domains (object_kind IBC_OBJ_XRCD, object_id ibc_xrcd_id()):
	 * the broker restarted and its name no longer names the XRC domain
	 * this open holds (the name's file changed while no broker ran);
	 * the broker dropped the open: close it (ibc_xrcd_close()) and open
	 * the name again. */
	IBC_EVENT_XRCD_LOST = 8,
	/* RSS: a table was rebuilt over the WQs that survived the death of
	 * an owner, or destroyed when none did (IBC_OBJ_RWQ_IND_TBL and
	 * ibc_rss_id(); ibc_rss_lookup() follows it by itself). */
	IBC_EVENT_RSS_REBUILT = 16,
	IBC_EVENT_RSS_DESTROYED = 17,
	/* Rekey: an administrator (or the broker) gave the domain a new
	 * context; object_kind IBC_OBJ_CONTEXT, object_id the replaced
	 * context's id (ibc_caps.context_id). Destroy what this process
	 * made in it in the callback; the library closes its copy after,
	 * and ibc_open() gets the new one (ibc_admin_domain_rekey(3)). */
	IBC_EVENT_DOMAIN_REKEYED = 24,
	/* The broker restarted (a crash, an upgrade) and adopted this
	 * session: its objects and contexts are as they were; a request it
	 * was serving at that moment failed with -EAGAIN. object_id is the
	 * broker's new generation. Nothing to do: informational. */
	IBC_EVENT_BROKER_RESTARTED = 32,
};

/* Filled by the library for the callback, which reads only the fields it
 * knows: it grows at the end like the others. */
struct ibc_event {
	uint32_t comp_mask;
	enum ibc_event_type type;
	/* The broker's reason, NUL-terminated; valid during the callback. */
	const char *message;
	/* IBC_EVENT_DEVICE_REMOVED: the device's name. */
	const char *device;
	/* The object the event concerns and its broker-wide id
	 * (IBC_EVENT_DEVICE_REMOVED: IBC_OBJ_CONTEXT, or IBC_OBJ_NONE and 0
	 * when the broker names none). */
	enum ibc_obj_kind object_kind;
	uint64_t object_id;
};

typedef void (*ibc_event_cb)(struct ibc_client *client,
			     const struct ibc_event *event, void *arg);

struct ibc_connect_attr {
	uint32_t comp_mask; /* enum ibc_connect_attr_mask */
	const char *socket_path;
	/* Milliseconds to wait for the broker to take each request and to
	 * reply (at most an eighth more); 0, the default, waits until the
	 * broker answers or goes. */
	int timeout_ms;
	uint32_t flags; /* enum ibc_connect_flags */
	ibc_event_cb event_cb;
	void *event_arg;
	/* IBC_CONNECT_ATTR_DOMAIN: the domain to join, among those
	 * rdmabroker.conf lets this process join; NULL for the default. */
	const char *domain;
};

enum ibc_fork_state {
	IBC_FORK_DISABLED = 0,
	IBC_FORK_ENABLED = 1,
	IBC_FORK_UNNEEDED = 2,
};

/* What the broker told this client when it connected. */
struct ibc_client_info {
	uint32_t comp_mask;
	uint64_t client_id;
	uint32_t protocol_version;
	char daemon_version[32];
	char domain[64];
	uint32_t num_devices;
	/* Fork: the session this one proved it was forked from
	 * (ibc_fork_init(3)); 0 when the broker linked it to none. */
	uint64_t parent_id;
};

struct ibc_device_info {
	uint32_t comp_mask;
	char name[64];
	char kind[16];	    /* "verbs" or "soft" */
	char transport[16]; /* "InfiniBand", "RoCE" or "software" */
	bool removed;
	/* Clients can import the broker's context (mlx5, soft). */
	bool import;
	bool xrc;
	uint32_t ports;
	uint64_t max_dm_size;
	uint32_t max_rss_table_size;
	uint64_t rss_hash_fields;    /* IBV_RX_HASH_* bits */
	uint32_t rss_hash_functions; /* IBV_RX_HASH_FUNC_* bits */
	/* Device limits, as ibv_query_device(3) names them. */
	uint32_t max_qp;
	uint32_t max_qp_wr;
	uint32_t max_sge;
	uint32_t max_cq;
	uint32_t max_cqe;
	uint32_t max_mr;
	uint32_t max_pd;
	uint32_t max_mw;
	uint32_t max_ah;
	uint32_t max_srq;
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
	uint32_t max_wq; /* receive WQs */
	uint64_t max_mr_size;
	/* Device memory can be shared (ibc_dm_alloc(3)); when not,
	 * dm_reason says why. dm_reserved: the bytes the broker reserved
	 * (its own accounting: the kernel does not show the MEMIC map),
	 * shown to administrators only (dm_device_wide), 0 for others. */
	bool dm_shared;
	char dm_reason[160];
	uint64_t dm_reserved;
	/* 1 << IBV_QPT_* of the QP types RSS hashes for (rss_caps). */
	uint32_t rss_qp_types;
	/* dm_reserved is the device-wide figure (the caller is an
	 * administrator). */
	bool dm_device_wide;
	/* The caller's domain: its device memory in use (on every
	 * device), its dm_bytes quota on this device, and the most one
	 * ibc_dm_alloc(3) of the caller could take by its quotas (its
	 * domain's, and its uid's share of a named domain); the device may
	 * still answer -ENOSPC. */
	uint64_t dm_domain_used;
	uint64_t dm_domain_limit;
	uint64_t dm_room;
};

enum ibc_device_kind {
	IBC_DEVICE_VERBS = 1,
	IBC_DEVICE_SOFT = 2,
};

/* What a context can do; see ibc_query(3). */
struct ibc_caps {
	uint32_t comp_mask;
	enum ibc_device_kind kind;
	char device[64];
	char domain[64];
	/* Broker-wide id of the domain's context on this device. */
	uint64_t context_id;
	/* false: the device was opened in this process
	 * (IBC_CONNECT_ALLOW_OWN_CONTEXT); shared PD, DM and RSS are then
	 * unavailable. */
	bool shared;
	bool xrc;
	uint64_t max_dm_size;
	uint32_t max_rss_table_size;
	uint64_t rss_hash_fields;
	uint32_t rss_hash_functions;
	enum ibc_fork_state fork_state;
	/* Device limits, as ibv_query_device(3) names them. */
	uint32_t max_qp;
	uint32_t max_qp_wr;
	uint32_t max_sge;
	uint32_t max_cq;
	uint32_t max_cqe;
	uint32_t max_mr;
	uint32_t max_pd;
	uint32_t max_mw;
	uint32_t max_ah;
	uint32_t max_srq;
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
	uint32_t max_wq; /* receive WQs */
	uint64_t max_mr_size;
	/* Device memory can be shared (ibc_dm_alloc(3)). */
	bool dm_shared;
	/* 1 << IBV_QPT_* of the QP types RSS hashes for (rss_caps). */
	uint32_t rss_qp_types;
};

struct ibc_quota {
	uint64_t dm_bytes;
	uint32_t xrcds;
	uint32_t rss_tables;
	uint32_t objects;
	uint32_t clients;
};

struct ibc_domain_info {
	uint32_t comp_mask;
	char name[64];
	char kind[16]; /* "uid", "configured" or "private" */
	uint32_t members;
	uint32_t contexts;
	struct ibc_quota used;
	struct ibc_quota limit;
	/* Removed from the configuration; keeps its members until they
	 * leave. */
	bool retired;
	/* Objects the kernel holds in the domain's contexts that nobody can
	 * name (counted in used.objects): the kernel's handles minus the
	 * registry's, the broker's own and live clients' open intents. */
	uint32_t unaccounted;
	/* The count's parts, from the kernel's handle lists walked for this
	 * listing: the handles listed, those the registry names, the
	 * broker's own, live clients' open intents, and the
	 * provider-internal objects (mlx5 UARs) beyond the broker's own,
	 * counted apart (live and dead importers'; internal_left below). */
	uint32_t kernel_objects;
	uint32_t registry_objects;
	uint32_t broker_objects;
	uint32_t live_intents;
	uint32_t internal_objects;
	/* Rekey: of contexts, those replaced by a rekey that a session
	 * still holds; and rekeys so far. */
	uint32_t old_contexts;
	uint64_t rekeys;
	/* Of internal_objects, what importers that died holding the
	 * context left, as far as the broker knows (a lower bound: what a
	 * bare import makes, per such importer); counted in unaccounted. */
	uint32_t internal_left;
	/* XRCD opens of dead clients whose kernel XRCD stays in the
	 * domain's contexts until they close (ibc_list_xrcds(3)). */
	uint32_t xrcd_orphans;
	/* Cgroups: with kind "cgroup" (and a private domain drawing on
	 * one), the cgroup v2 path whose clients of one uid it holds, its
	 * first 255 bytes: any bytes but NUL, not always UTF-8 (escape it
	 * before printing it); empty for other domains. cgroup_truncated:
	 * the path is longer. */
	char cgroup[256];
	bool cgroup_truncated;
};

struct ibc_client_entry {
	uint32_t comp_mask;
	uint64_t id;
	uint32_t pid;
	uint32_t uid;
	uint32_t gid;
	/* The name the process gave itself (prctl PR_SET_NAME): any bytes
	 * but NUL, not always UTF-8. Escape it before printing it. */
	char comm[16];
	char domain[64];
	uint32_t contexts;
	uint32_t objects;
	uint64_t requests;
	enum ibc_fork_state fork_state;
	char library_version[32];
	/* Its open intents: objects being created (counted in objects). */
	uint32_t unaccounted;
	/* Fork: the session it was forked from (0: none), and how many
	 * live sessions name it so. */
	uint64_t parent_id;
	uint32_t children;
	/* Cgroups: the process's cgroup v2 path when it connected, kept
	 * for the session's life, its first 255 bytes: any bytes but NUL,
	 * not always UTF-8 (escape it before printing it); empty when the
	 * broker could not read it. cgroup_truncated: the path is
	 * longer. */
	char cgroup[256];
	bool cgroup_truncated;
};

struct ibc_status {
	uint32_t comp_mask;
	char daemon_version[32];
	uint32_t protocol_version;
	uint32_t daemon_pid;
	uint64_t uptime_usec;
	char device_kind[16];
	uint32_t clients;
	uint32_t max_clients;
	uint64_t requests_served;
	/* Whose the three figures above are: "" for the daemon's (the
	 * caller is an administrator), else the caller's domain's. */
	char domain[64];
	/* Restart: the broker's generation (1 when it started without a
	 * state to restore), its restores so far, the last one's duration,
	 * and for administrators what that one adopted or why a state was
	 * refused ("" otherwise). */
	uint64_t generation;
	uint64_t restarts;
	uint64_t last_restore_usec;
	char last_restore[160];
	/* Whether a restart from here keeps the sessions: "ok", or
	 * "abandoned after a write failed (...), the next restart starts
	 * clean", or "none: ..." ("" from an older broker). */
	char journal[160];
};

/**
 * ibc_connect() - connect to the broker and introduce this process.
 * @attr: NULL for the defaults, $RDMABROKER_SOCKET or IBC_DEFAULT_SOCKET.
 * @ret_client: the new client, to be freed with ibc_disconnect().
 */
int ibc_connect(const struct ibc_connect_attr *attr,
		struct ibc_client **ret_client);

/** ibc_disconnect() - close the session; NULL is ignored. */
void ibc_disconnect(struct ibc_client *client);

/**
 * ibc_get_fd() - a descriptor that polls readable when ibc_dispatch() has
 * work to do, made by the first call; -errno if it cannot be made. Owned by
 * the client; do not close it.
 */
int ibc_get_fd(struct ibc_client *client);

/**
 * ibc_dispatch() - read what the broker sent without blocking and deliver
 * pending events to the event callback. Returns the number of events
 * delivered, or -ECONNRESET once the connection is gone.
 */
int ibc_dispatch(struct ibc_client *client);

/**
 * ibc_last_error() - the broker's sentence for the calling thread's last
 * failed call, or "" when there is none. Valid until the thread's next call.
 */
const char *ibc_last_error(void);

/**
 * ibc_client_info() - what the broker said at connect.
 * @size: sizeof(*ret), the caller's size of the structure.
 */
int ibc_client_info(struct ibc_client *client, struct ibc_client_info *ret,
		    size_t size);

/**
 * ibc_list_devices(), ibc_list_domains(), ibc_list_clients() - what the
 * broker shares. *ret_list is an array of *ret_count entries of
 * @entry_size bytes each (sizeof(**ret_list)), freed with ibc_list_free().
 * Who is not an administrator sees only its own domain and its members.
 */
int ibc_list_devices(struct ibc_client *client,
		     struct ibc_device_info **ret_list, size_t entry_size,
		     size_t *ret_count);
int ibc_list_domains(struct ibc_client *client,
		     struct ibc_domain_info **ret_list, size_t entry_size,
		     size_t *ret_count);
int ibc_list_clients(struct ibc_client *client,
		     struct ibc_client_entry **ret_list, size_t entry_size,
		     size_t *ret_count);
void ibc_list_free(void *list);

/* Where a registered object is in its life (ibc_list_objects(3)). */
enum ibc_object_state {
	IBC_OBJECT_LIVE = 0,	   /* its owner's session is open */
	IBC_OBJECT_DETACHED = 1,   /* the session ended, the process lives */
	IBC_OBJECT_DESTROYING = 2, /* the owner died: cleanup under way */
	IBC_OBJECT_STUCK = 3,	   /* cleanup gave up (the broker logged why) */
	IBC_OBJECT_INTENT = 4,	   /* being created: no handle yet */
};

struct ibc_object_info {
	uint32_t comp_mask;
	uint64_t id; /* broker-wide, never reused */
	enum ibc_obj_kind kind;
	uint32_t handle;    /* in its context; 0 for an intent */
	uint64_t client_id; /* the owner */
	uint32_t pid;
	uint64_t context_id;
	char domain[64];
	char device[64];
	enum ibc_object_state state;
	uint64_t age_usec;
	/* Cgroups: its owner's cgroup v2 path at connect, as
	 * ibc_list_clients(3) shows it, while the owner's session is open;
	 * else empty. Any bytes but NUL: escape it before printing it. */
	char cgroup[256];
	bool cgroup_truncated;
};

enum ibc_object_filter_mask {
	IBC_OBJECT_FILTER_CLIENT = 1 << 0,
	IBC_OBJECT_FILTER_DOMAIN = 1 << 1,
};

struct ibc_object_filter {
	uint32_t comp_mask; /* enum ibc_object_filter_mask */
	uint64_t client_id;
	const char *domain;
};

/**
 * ibc_list_objects() - the broker's registry: what clients made in shared
 * contexts. @filter: NULL for every object the caller may see. Entries of
 * @entry_size bytes (sizeof(**ret_list)), freed with ibc_list_free().
 */
int ibc_list_objects(struct ibc_client *client,
		     const struct ibc_object_filter *filter,
		     struct ibc_object_info **ret_list, size_t entry_size,
		     size_t *ret_count);
/** ibc_obj_kind_str() - "CQ", "QP", ...; "unknown" for a kind this library
 * does not know. */
const char *ibc_obj_kind_str(enum ibc_obj_kind kind);

/**
 * ibc_admin_evict() - end client @client_id's session (administrators
 * only). Its objects are destroyed when its process exits, not before.
 */
int ibc_admin_evict(struct ibc_client *client, uint64_t client_id);

/* Rekey (ibc_admin_domain_rekey(3)). */
enum ibc_rekey_flags {
	/* Destroy what the broker made in the old contexts (DMs, RSS
	 * objects) instead of refusing with -EBUSY. */
	IBC_REKEY_FORCE = 1 << 0,
};

/**
 * ibc_admin_domain_rekey() - give domain @domain new contexts
 * (administrators only): the members holding an old one get
 * IBC_EVENT_DOMAIN_REKEYED, and the old one closes as a whole once every
 * holder let go. -EBUSY naming the DMs and RSS objects in it unless
 * @flags has IBC_REKEY_FORCE; -ENOENT for a domain that does not exist or
 * is private.
 */
int ibc_admin_domain_rekey(struct ibc_client *client, const char *domain,
			   uint32_t flags);

enum ibc_evict_flags {
	/* Then rekey the client's domain: the process is shut out of the
	 * domain's context for good. */
	IBC_EVICT_REKEY = 1 << 0,
	/* With IBC_EVICT_REKEY: as IBC_REKEY_FORCE. */
	IBC_EVICT_FORCE = 1 << 1,
};

/**
 * ibc_admin_evict_ex() - ibc_admin_evict() with @flags (enum
 * ibc_evict_flags).
 */
int ibc_admin_evict_ex(struct ibc_client *client, uint64_t client_id,
		       uint32_t flags);

/**
 * ibc_open() - open @device (NULL: the first) in this client's domain: the
 * domain's context is imported (verbs) or mapped (soft).
 */
int ibc_open(struct ibc_client *client, const char *device,
	     struct ibc_ctx **ret_ctx);
/** ibc_close() - release this process's use of the context; NULL is
 * ignored. */
void ibc_close(struct ibc_ctx *ctx);
/** ibc_query() - what the context's device can do; @size: sizeof(*ret). */
int ibc_query(struct ibc_ctx *ctx, struct ibc_caps *ret, size_t size);
/** ibc_verbs_context() - the libibverbs context; NULL on the soft device.
 * Valid until ibc_close(), or until the IBC_EVENT_DEVICE_REMOVED event of
 * its device has been dispatched (NULL, errno ENODEV, from then on). */
struct ibv_context *ibc_verbs_context(struct ibc_ctx *ctx);
/** ibc_verbs_pd() - the domain's shared PD; NULL (errno EOPNOTSUPP) on the
 * soft device and on a context of this process's own. Valid as long as
 * ibc_verbs_context(). */
struct ibv_pd *ibc_verbs_pd(struct ibc_ctx *ctx);

/*
 * Objects in a context, registered with the broker (ibc_cq_create(3)).
 * They use the domain's PD. On a verbs device ibc_verbs_cq() and friends
 * give the libibverbs objects for the data path; never ibv_destroy_*() them
 * (use the destructors below). On a context of this process's own
 * (caps.shared false) they use a PD of this process and nothing is
 * registered. The attribute structures' comp_mask must be 0 in this
 * version: every field shown is read; bits will name fields added later.
 */
struct ibc_cq_attr {
	uint32_t comp_mask;
	int cqe;
	int comp_vector;
	/* Verbs devices; NULL: none. */
	struct ibv_comp_channel *channel;
};

struct ibc_qp_attr {
	uint32_t comp_mask;
	enum ibv_qp_type qp_type;	  /* RC, UC, UD, XRC_SEND */
	struct ibc_cq *send_cq, *recv_cq; /* recv_cq: not for XRC_SEND */
	struct ibc_srq *srq;		  /* NULL: none */
	struct ibv_qp_cap cap;
	int sq_sig_all;
};

/* A receive WQ; NULL attributes: max_wr 256, max_sge 1. */
struct ibc_wq_attr {
	uint32_t comp_mask;
	uint32_t max_wr;
	uint32_t max_sge;
};

/** ibc_cq_create() - a CQ of at least @cqe entries; see ibc_cq_create(3). */
int ibc_cq_create(struct ibc_ctx *ctx, int cqe, struct ibc_cq **ret_cq);
int ibc_cq_create_ex(struct ibc_ctx *ctx, const struct ibc_cq_attr *attr,
		     struct ibc_cq **ret_cq);
/** ibc_cq_destroy() - 0 or -errno; -EBUSY while a QP or WQ uses it. */
int ibc_cq_destroy(struct ibc_cq *cq);
/** ibc_cq_cqe() - the entries the device gave (at least those asked). */
int ibc_cq_cqe(const struct ibc_cq *cq);

int ibc_qp_create(struct ibc_ctx *ctx, const struct ibc_qp_attr *attr,
		  struct ibc_qp **ret_qp);
int ibc_qp_destroy(struct ibc_qp *qp);
uint32_t ibc_qp_num(const struct ibc_qp *qp);
/** ibc_qp_cap() - the capacities the device gave. */
void ibc_qp_cap(const struct ibc_qp *qp, struct ibv_qp_cap *ret_cap);

int ibc_srq_create(struct ibc_ctx *ctx, const struct ibv_srq_attr *attr,
		   struct ibc_srq **ret_srq);
/** ibc_srq_destroy() - 0 or -errno; -EBUSY while a QP uses it. */
int ibc_srq_destroy(struct ibc_srq *srq);

/** ibc_wq_create() - a receive WQ on @cq, moved to ready. */
int ibc_wq_create(struct ibc_ctx *ctx, struct ibc_cq *cq,
		  const struct ibc_wq_attr *attr, struct ibc_wq **ret_wq);
int ibc_wq_destroy(struct ibc_wq *wq);
/** ibc_wq_id() - broker-issued, never reused; 0 on a context of this
 * process's own. */
uint64_t ibc_wq_id(const struct ibc_wq *wq);

int ibc_reg_mr(struct ibc_ctx *ctx, void *addr, size_t length, int access,
	       struct ibc_mr **ret_mr);
int ibc_dereg_mr(struct ibc_mr *mr);
uint32_t ibc_mr_lkey(const struct ibc_mr *mr);
uint32_t ibc_mr_rkey(const struct ibc_mr *mr);

/*
 * The libibverbs objects on a verbs device, for posting, polling and
 * modifying; NULL with errno EOPNOTSUPP on the soft device, ENODEV once
 * the device was removed. They stay the library's: never destroy them with
 * ibv_destroy_*() or ibv_dereg_mr().
 */
struct ibv_cq *ibc_verbs_cq(struct ibc_cq *cq);
struct ibv_qp *ibc_verbs_qp(struct ibc_qp *qp);
struct ibv_srq *ibc_verbs_srq(struct ibc_srq *srq);
struct ibv_wq *ibc_verbs_wq(struct ibc_wq *wq);
struct ibv_mr *ibc_verbs_mr(struct ibc_mr *mr);

/**
 * ibc_track() - register an object made with raw libibverbs on @ctx's
 * shared context (@kind: IBC_OBJ_PD, MR, MW, CQ, QP, SRQ, WQ or AH; @obj:
 * the struct ibv_pd *, ibv_mr *, ... itself), so that the broker destroys
 * it if this process dies. ibc_untrack() hands it back: call it before
 * destroying the object with libibverbs.
 */
int ibc_track(struct ibc_ctx *ctx, enum ibc_obj_kind kind, void *obj);
int ibc_untrack(struct ibc_ctx *ctx, enum ibc_obj_kind kind, void *obj);

/*
 * XRC domains by name (ibc_xrcd_open(3)). The broker maps @name to an
 * inode file of its own; the kernel keys an XRC domain by that inode on
 * each device, across contexts. Names are private to the caller's domain
 * unless rdmabroker.conf declares them ([xrcd NAME], domains = a, b).
 * @oflags: 0, O_CREAT, or O_CREAT | O_EXCL, decided by the broker's name
 * table (-EEXIST, -ENOENT). -EINVAL for a bad name (not 1 to 64 bytes of
 * printable UTF-8, '/', "." or ".."; ibc_xrcd_open(3) has the whole
 * rule), -EACCES for a declared name that
 * does not list the caller's domain, -EDQUOT over the domain's xrcds
 * quota, -EOPNOTSUPP on a device without XRC.
 */
int ibc_xrcd_open(struct ibc_ctx *ctx, const char *name, int oflags,
		  struct ibc_xrcd **ret_xrcd);
/** ibc_xrcd_close() - 0 or -errno; -EBUSY while this open's XRC SRQs or
 * QPs exist. */
int ibc_xrcd_close(struct ibc_xrcd *xrcd);
/** ibc_xrcd_ino() - the inode of the name's file: one inode, one XRC
 * domain per device. */
uint64_t ibc_xrcd_ino(const struct ibc_xrcd *xrcd);
/** ibc_xrcd_id() - the broker's id of this open (an event's object_id,
 * ibc_list_xrcds()'s object_id); 0 when @xrcd is NULL. */
uint64_t ibc_xrcd_id(const struct ibc_xrcd *xrcd);
/** ibc_verbs_xrcd() - the libibverbs XRCD on a verbs device (NULL with
 * errno EOPNOTSUPP on the soft device); never ibv_close_xrcd() it. */
struct ibv_xrcd *ibc_verbs_xrcd(struct ibc_xrcd *xrcd);

/* One open of an XRC domain, for the listing. */
struct ibc_xrcd_open_info {
	uint64_t client_id;
	uint32_t pid;
	char domain[64];
	uint64_t object_id;
};

#define IBC_XRCD_OPENS_SHOWN 8

/* What holds one open of an XRCD (the same index in opens[]). */
struct ibc_xrcd_open_objs {
	uint32_t srqs; /* XRC SRQs */
	uint32_t qps;  /* XRC target QPs, made or opened by number */
	/* A context of the client's own: the broker sees none of them. */
	bool own;
};

/* An XRC domain the broker holds (ibc_list_xrcds(3)). */
struct ibc_xrcd_info {
	uint32_t comp_mask;
	char name[72];
	/* The domain of a private name; "" for a declared one. */
	char owner_domain[64];
	/* A declared name's domains, "a, b" (cut at the buffer). */
	char domains[256];
	uint64_t ino;
	/* The devices the broker holds it open on, "mlx5_0, mlx5_1". */
	char devices[256];
	bool persistent;
	uint32_t n_opens;
	/* The first opens (at most IBC_XRCD_OPENS_SHOWN). */
	uint32_t n_opens_shown;
	struct ibc_xrcd_open_info opens[IBC_XRCD_OPENS_SHOWN];
	/* opens[i]'s SRQs and QPs. */
	struct ibc_xrcd_open_objs open_objs[IBC_XRCD_OPENS_SHOWN];
	/* Opens of dead clients on verbs devices, not in n_opens: struct
	 * ibv_xrcd shows no handle to destroy them by, so their kernel XRCD
	 * stays in the domain's context until it closes or is rekeyed. */
	uint32_t n_orphaned;
};

/**
 * ibc_list_xrcds() - the XRC domains the caller may see: its domain's
 * private names and the declared names that list it (administrators: all).
 * @name: NULL for all, else that name. Entries of @entry_size bytes, freed
 * with ibc_list_free().
 */
int ibc_list_xrcds(struct ibc_client *client, const char *name,
		   struct ibc_xrcd_info **ret_list, size_t entry_size,
		   size_t *ret_count);
/** ibc_admin_xrcd_remove() - remove a declared XRC domain nobody holds
 * (administrators only): -EBUSY while it is open. Returns how many dead
 * clients' opens (n_orphaned) keep its kernel XRCD in their domains'
 * contexts until those close: removing the name does not free them. */
int ibc_admin_xrcd_remove(struct ibc_client *client, const char *name);

/*
 * What holds an XRCD open (ibc_srq_create_xrc(3)): an XRC SRQ on @cq with
 * its number for remote senders, and XRC target QPs, created or opened by
 * number (ibv_open_qp) in the same XRC domain, from any context. The
 * sending side is ibc_qp_create() with IBV_QPT_XRC_SEND.
 */
int ibc_srq_create_xrc(struct ibc_xrcd *xrcd, struct ibc_cq *cq,
		       const struct ibv_srq_attr *attr,
		       struct ibc_srq **ret_srq);
/** ibc_srq_num() - an XRC SRQ's number; 0 for a basic SRQ. */
uint32_t ibc_srq_num(const struct ibc_srq *srq);
int ibc_qp_create_xrc_tgt(struct ibc_xrcd *xrcd, struct ibc_qp **ret_qp);
int ibc_qp_open_xrc_tgt(struct ibc_xrcd *xrcd, uint32_t qp_num,
			struct ibc_qp **ret_qp);

/** ibc_ping() - one round trip carrying @len bytes (at most 60000). */
int ibc_ping(struct ibc_client *client, const void *payload, size_t len);

/** ibc_status() - the broker's version, uptime and counters; @size:
 * sizeof(*ret). */
int ibc_status(struct ibc_client *client, struct ibc_status *ret, size_t size);

/**
 * ibc_metrics() - the broker's figures in the Prometheus text format
 * (0.0.4): the whole broker for an administrator, else the caller's
 * domain. *@ret_text: a NUL-terminated string of *@ret_len bytes (@ret_len
 * may be NULL), freed with free().
 */
int ibc_metrics(struct ibc_client *client, char **ret_text, size_t *ret_len);

/** ibc_fork_state() - this process's fork protection: UNNEEDED where the
 * kernel copies pinned pages at fork, ENABLED after ibc_fork_init() (or
 * RDMAV_FORK_SAFE), DISABLED otherwise. */
enum ibc_fork_state ibc_fork_state(void);

/**
 * ibc_fork_init() - make this process's RDMA memory safe across fork().
 *
 * 0 when the kernel needs nothing (IBC_FORK_UNNEEDED) or it was done;
 * -EINVAL once this process has ever held memory pinned for the device
 * (ibc_reg_mr, and queues on verbs devices), as ibv_fork_init(3) refuses;
 * else ibv_fork_init()'s error. Every live session is told the new state.
 */
int ibc_fork_init(void);

/*
 * Device memory (ibc_dm_alloc(3)): on-chip memory (mlx5 MEMIC; the soft
 * device's own) that the broker allocates in the domain's context and any
 * member can import by handle. Reads and writes go straight to the
 * device, without the broker.
 */
struct ibc_dm;

enum ibc_dm_flags {
	/* The DM is the domain's: it outlives its allocator until a member
	 * or an administrator frees it, or the broker stops. */
	IBC_DM_PERSISTENT = 1 << 0,
};

/* comp_mask must be 0 in this version: every field shown is read. */
struct ibc_dm_attr {
	uint32_t comp_mask;
	size_t length;
	uint32_t log_align_req;
	uint32_t flags; /* enum ibc_dm_flags */
};

/**
 * ibc_dm_alloc() - allocate @length bytes of device memory, rounded up to
 * whole pages, zeroed; -EDQUOT over the domain's dm_bytes, -ENOSPC when the
 * device has no more, -EINVAL for a length or alignment it cannot give.
 */
int ibc_dm_alloc(struct ibc_ctx *ctx, size_t length, uint32_t log_align_req,
		 struct ibc_dm **ret_dm);
int ibc_dm_alloc_ex(struct ibc_ctx *ctx, const struct ibc_dm_attr *attr,
		    struct ibc_dm **ret_dm);
/** ibc_dm_import() - the DM @handle of this domain's context; -ENOENT for
 * a handle of no live DM of this domain. */
int ibc_dm_import(struct ibc_ctx *ctx, uint32_t handle, struct ibc_dm **ret_dm);
/** ibc_dm_unimport() - stop using @dm here; -EBUSY while this process has
 * MRs on it. */
int ibc_dm_unimport(struct ibc_dm *dm);
/** ibc_dm_free() - ask the broker to free @dm (its allocator, or any member
 * for a persistent DM; -EPERM otherwise), and unimport it. */
int ibc_dm_free(struct ibc_dm *dm);
/** ibc_dm_handle() - the handle to give to ibc_dm_import() in another
 * process of the domain. */
uint32_t ibc_dm_handle(const struct ibc_dm *dm);
/** ibc_dm_id() - the broker-wide id (rdmabrokerctl dm). */
uint64_t ibc_dm_id(const struct ibc_dm *dm);
/** ibc_dm_length() - the DM's length: what was asked, rounded to pages. */
size_t ibc_dm_length(const struct ibc_dm *dm);
/**
 * ibc_dm_write(), ibc_dm_read() - copy to or from the DM at @dm_offset, as
 * ibv_memcpy_to_dm() and ibv_memcpy_from_dm(): -EFAULT past the end, then
 * -EINVAL for an offset or length not a multiple of 4, -ENODEV once the DM
 * was revoked or freed. The write ends with a store fence.
 */
int ibc_dm_write(struct ibc_dm *dm, uint64_t dm_offset, const void *src,
		 size_t length);
int ibc_dm_read(struct ibc_dm *dm, void *dst, uint64_t dm_offset,
		size_t length);
/** ibc_verbs_dm() - the struct ibv_dm on a verbs device (for
 * ibv_reg_dm_mr and work requests); NULL (errno EOPNOTSUPP) on the soft
 * device. Never ibv_free_dm() it. */
struct ibv_dm *ibc_verbs_dm(struct ibc_dm *dm);
/**
 * ibc_reg_dm_mr() - an MR on @length bytes of @dm at @dm_offset, as
 * ibv_reg_dm_mr(3): @access must have IBV_ACCESS_ZERO_BASED. Registered
 * with the broker like ibc_reg_mr(); deregister it with ibc_dereg_mr().
 */
int ibc_reg_dm_mr(struct ibc_dm *dm, uint64_t dm_offset, size_t length,
		  unsigned int access, struct ibc_mr **ret_mr);

enum ibc_dm_state {
	IBC_DM_LIVE = 0,
	IBC_DM_FREE_PENDING = 1, /* free asked, importers remain */
	IBC_DM_FREE_BLOCKED = 2, /* the device said EBUSY: an MR uses it */
	IBC_DM_REVOKED = 3,
};

#define IBC_DM_INFO_IMPORTERS 16
#define IBC_DM_INFO_MRS 8

/* An MR on a DM: its registry id and its owner (what blocks a free). */
struct ibc_dm_mr_info {
	uint64_t object_id;
	uint64_t client_id;
	uint32_t pid;
	bool gone; /* its process is dead: the MR is stuck */
};

struct ibc_dm_info {
	uint32_t comp_mask;
	uint64_t id; /* broker-wide, never reused */
	char domain[64];
	char device[64];
	uint32_t handle;
	uint64_t length; /* whole pages */
	uint32_t pages;
	uint32_t log_align;
	/* The allocator's client id and pid, kept once its session ended
	 * (allocator_gone). */
	uint64_t allocator;
	uint32_t allocator_pid;
	/* Clients that hold it (the allocator too, while it does); the
	 * first IBC_DM_INFO_IMPORTERS of n_importers. */
	uint32_t n_importers;
	uint64_t importers[IBC_DM_INFO_IMPORTERS];
	enum ibc_dm_state state;
	bool persistent;
	/* IBC_DM_FREE_BLOCKED: what blocks it. */
	char blocked_by[160];
	/* MRs on it in the broker's registry, dead clients' stuck ones
	 * too; the first IBC_DM_INFO_MRS of them in mr_list. */
	uint32_t mrs;
	struct ibc_dm_mr_info mr_list[IBC_DM_INFO_MRS];
	/* The allocator's session ended (the DM outlives it: persistent, or
	 * held by importers). */
	bool allocator_gone;
};

/**
 * ibc_list_dms() - the DMs the caller may see (its domain's; every one for
 * an administrator), as ibc_list_devices().
 */
int ibc_list_dms(struct ibc_client *client, struct ibc_dm_info **ret_list,
		 size_t entry_size, size_t *ret_count);
/**
 * ibc_admin_dm_free() - ask the free of any DM by its id (administrators
 * only, -EPERM otherwise): as if its allocator had freed it.
 */
int ibc_admin_dm_free(struct ibc_client *client, uint64_t dm_id);
/**
 * ibc_admin_dm_revoke() - revoke DM @dm_id (administrators only): its
 * holders get IBC_EVENT_DM_REVOKED, and after the broker's grace period
 * ([broker] dm_revoke_grace) it is freed once nothing holds it.
 */
int ibc_admin_dm_revoke(struct ibc_client *client, uint64_t dm_id);
/* --- RSS across processes (ibc_rss_create(3)) --------------------------- */

struct ibc_rss;

/* The largest table (the uverbs limit, 2^13 entries) and the most WQs one
 * table spreads over (so that a request fits one packet). */
#define IBC_RSS_MAX_LOG_TABLE 13
#define IBC_RSS_MAX_WQS 4096
#define IBC_RSS_KEY_LEN 40

/* The traffic a flow rule steers to the RSS QP; value/mask, no ranges. A
 * zeroed match claims all the port's traffic of the hashed family. */
struct ibc_flow_match {
	uint32_t comp_mask;
	int af; /* AF_INET, AF_INET6, or 0: the family hash_fields implies */
	uint8_t dst_addr[16]; /* network order, IPv4 in the first 4 bytes */
	uint8_t prefix_len;   /* of dst_addr; 0: any address */
	uint8_t l4_proto;     /* IPPROTO_TCP, IPPROTO_UDP, or 0 */
	uint16_t dst_port;    /* host order; with port_mask */
	uint16_t port_mask;   /* 0: any port; 0xffff: exactly dst_port */
};

enum ibc_rss_flags {
	/* An empty match: claim all the port's traffic of the hashed family
	 * (administrators only; it can take the host off the network). */
	IBC_RSS_MATCH_ALL = 1 << 0,
};

struct ibc_rss_attr {
	uint32_t comp_mask;
	uint8_t port_num;	   /* 1-based; an Ethernet port */
	uint32_t log_ind_tbl_size; /* the table has 2^this entries */
	uint32_t num_wqs;	   /* entry i = wq_ids[i % num_wqs] */
	const uint64_t *wq_ids;	   /* ibc_wq_id() of any client of the domain */
	uint8_t hash_key[IBC_RSS_KEY_LEN];
	/* IBV_RX_HASH_{SRC,DST}_{IPV4,IPV6,PORT_TCP,PORT_UDP} bits */
	uint64_t hash_fields;
	struct ibc_flow_match match;
	uint32_t flags; /* enum ibc_rss_flags */
};

/* A flow to look up, as the packet carries it. */
struct ibc_flow {
	int af;		      /* AF_INET or AF_INET6 */
	uint8_t src_addr[16]; /* network order, IPv4 in the first 4 bytes */
	uint8_t dst_addr[16];
	uint16_t src_port; /* host order */
	uint16_t dst_port;
	uint8_t l4_proto; /* IPPROTO_TCP, IPPROTO_UDP, or 0 */
};

/**
 * ibc_rss_create() - an indirection table over WQs of any clients of
 * @ctx's domain, an RSS QP hashing by Toeplitz over it and the flow rule
 * that steers @attr->match to it, made by the broker; see ibc_rss_create(3).
 */
int ibc_rss_create(struct ibc_ctx *ctx, const struct ibc_rss_attr *attr,
		   struct ibc_rss **ret_rss);
/** ibc_rss_destroy() - flow, QP and table, in that order. */
int ibc_rss_destroy(struct ibc_rss *rss);
/**
 * ibc_rss_lookup() - the Toeplitz hash of @flow's fields that the table's
 * hash_fields select, and the ibc_wq_id() of the WQ that receives it; no
 * round trip. -ENOENT once every WQ of the table is gone.
 */
int ibc_rss_lookup(const struct ibc_rss *rss, const struct ibc_flow *flow,
		   uint32_t *ret_hash, uint64_t *ret_wq_id);
/** ibc_rss_id() - the broker's id of the RSS object (its table). */
uint64_t ibc_rss_id(const struct ibc_rss *rss);

/* What ibc_list_rss() gives: one RSS object of the caller's domain (an
 * administrator's: of every domain). */
struct ibc_rss_info {
	uint32_t comp_mask;
	uint64_t id;
	char domain[64];
	char device[64];
	uint64_t client_id; /* its owner */
	uint32_t port_num;
	uint32_t log_ind_tbl_size;
	uint8_t hash_key[IBC_RSS_KEY_LEN];
	uint64_t hash_fields;
	/* With the family and L4 protocol the hash implies. */
	struct ibc_flow_match match;
	uint32_t priority; /* of the flow rule: 0 or 1, swapped by rebuilds */
	uint32_t qp_num;   /* mlx5 RSS QPs have number 0 */
	uint32_t rebuilds;
	uint32_t num_wqs;
	/* num_wqs each, in the list's memory: the WQs and their owners'
	 * client ids. */
	const uint64_t *wq_ids;
	const uint64_t *wq_owners;
};

/** ibc_list_rss() - the RSS objects the caller may see; free the list with
 * ibc_list_free(). @entry_size: sizeof(struct ibc_rss_info). */
int ibc_list_rss(struct ibc_client *client, struct ibc_rss_info **ret_list,
		 size_t entry_size, size_t *ret_count);

#ifdef __cplusplus
}
#endif

#endif
