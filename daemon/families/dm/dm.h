/* SPDX-License-Identifier: MIT */
/*
 * Device memory (DM): the broker allocates it in a domain's context, hands
 * its handle (and on the soft device its memfd) to the domain's clients,
 * and frees it only once the free was asked for and every holder let go
 * (DESIGN §5). Each DM has a broker-wide id, never reused: a handle alone
 * is ambiguous across domains.
 *
 * A session holds a DM from its alloc or import until its unimport or its
 * process's death (a session that ends while its process lives keeps its
 * holds, detached, as the registry keeps its objects). The free is asked by
 * the allocator, by any member for a persistent DM, by an administrator, or
 * by the allocator's confirmed death (non-persistent DMs); until the last
 * holder goes the DM is free pending, and the holders get an Event. A device
 * that answers EBUSY (an MR still uses the DM) leaves it free blocked, still
 * charged.
 */
#ifndef RDMAB_DM_H
#define RDMAB_DM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/device/device.h"
#include "daemon/families/family.h"
#include "daemon/util/ids.h"
#include "daemon/util/queue.h"
#include "proto/rdmabroker.pb-c.h"

struct family;
struct restore;

struct core;
struct client;
struct dctx;
struct domain;
struct obj;
struct user;
struct event;

/*
 * A session's DM status page: a sealed memfd of one page, mapped read-only
 * by the session's library, one byte per import, set when the DM is
 * revoked, so that the library's check costs no round trip.
 */
#define DM_STATUS_SLOTS 4096

struct dm_session {
	TAILQ_ENTRY(dm_session) link;
	struct client *conn;
	/* The session's uid, charged for the page's descriptor. */
	struct user *user;
	int fd;
	uint8_t *page;
	/* The page went with a reply already. */
	bool sent;
	uint8_t used[DM_STATUS_SLOTS];
};

struct dm_hold {
	struct obj *o;
	/* NULL once the session ended. */
	struct dm_session *s;
	uint32_t slot;
};

/* The DM family's words of a domain's limits (struct quota's family[]):
 * dm_bytes, dm_pct (a percent of each device's memory, when not 0,
 * instead of dm_bytes on all devices together) and dm_member_share (the
 * percent of the domain's one member uid may hold). */
enum dm_limit_word {
	DM_LIMIT_BYTES,
	DM_LIMIT_PCT,
	DM_LIMIT_MEMBER_SHARE,
};

struct dm {
	TAILQ_ENTRY(dm) link;
	uint64_t id;
	struct dctx *ctx;
	struct domain *domain;
	struct device_dm dd;
	uint64_t length;
	uint32_t pages;
	uint32_t log_align;
	uint64_t born_usec;
	/* NULL once the allocator's session ended. */
	struct client *allocator;
	/* A non-persistent DM whose allocator let go of its last import
	 * before its free was asked: the allocator's record, kept so that
	 * its death (dm_release) asks the free. NULL otherwise. */
	struct obj *claim;
	uint64_t allocator_id;
	pid_t allocator_pid;
	/* The allocator's uid: its usage in a configured domain holds
	 * @charged bytes (length may drop to 0 when a forced rekey leaves
	 * the DM to its context), and for a persistent DM @owner's
	 * persistent count does. */
	uid_t uid;
	uint64_t charged;
	struct user *owner;
	bool persistent;
	bool free_asked;
	bool blocked;
	/* Revoked by an administrator; its grace period runs, then the
	 * free is asked. */
	bool revoked;
	struct event *revoke_ev;
	char blocked_by[DEVICE_WHY_MAX];
	/* Its imports: records of the registry (kind DM, family_owned),
	 * one per import, the allocator's included. */
	struct dm_hold *holds;
	unsigned int n_holds;
	size_t cap_holds;
	/* Its domain's list (dm_domain.dms): a member's listing walks only
	 * its own domain's DMs. */
	TAILQ_ENTRY(dm) domain_link;
	/* The registry's MRs on it (struct dm_mr), so that its listing
	 * walks them and not every MR of the broker. */
	TAILQ_HEAD(, dm_mr) mrs;
	unsigned int n_mrs;
};

/*
 * What the family keeps of a registry record (its slot[FAMILY_DM]): an
 * import (kind DM) keeps its DM's id (slot.id); an MR on device memory
 * points to one of these (slot.p), which the record's removal frees.
 */
struct dm_mr {
	struct obj *o;
	/* The DM's broker id: the journal keeps it, and a restore puts
	 * the MR on its DM's list again by it. */
	uint64_t dm_id;
	/* NULL once the DM went (or before a restore found it). */
	struct dm *dm;
	/* dm->mrs while @dm is set, else the table's loose list. */
	TAILQ_ENTRY(dm_mr) link;
};

struct dm_table {
	/* The DMs' ids (ids.h). */
	struct id_space ids;
	TAILQ_HEAD(, dm) dms;
	unsigned int n;
	/* Retries the free of blocked DMs while there are any. */
	struct event *retry_ev;
	unsigned int n_blocked;
	TAILQ_HEAD(, dm_session) sessions;
	/* MRs on device memory whose DM went, or that a restore has not
	 * put on their DM's list yet: freed with their records, or at the
	 * family's fini. */
	TAILQ_HEAD(, dm_mr) loose;
};

/* How often a blocked free is tried again: the MR that blocks it may go
 * at any time, by its owner or by the cleanup of its owner's death. */
#define DM_RETRY_MS 50

/* The DM family (family.h): its init sets up the table (0 or -ENOMEM);
 * its fini frees every DM that is left (persistent ones die with the
 * daemon). */
extern const struct family dm_family;
/* Its journal record kinds start here (family.h's journal_first). */
#define DM_JOURNAL_FIRST 16
/* Its record kinds' messages (dm-state.c), for the restore's check. */
#define DM_JOURNAL_MSGS 2
extern const struct ProtobufCMessageDescriptor
	*const dm_journal_msgs[DM_JOURNAL_MSGS];
/* The family's field of the registry's Object record (state.proto's
 * Object.dm_id): a DM import's DM, an MR's on a DM. */
#define DM_OBJECT_FIELD 10
/* The requests it serves (dm-handlers.c), up to { 0, NULL }. */
extern const struct family_request dm_requests[];
/* Its listing's (dm-list.c), one of them. */
struct handler;
extern const struct handler dm_h_list;
/* The family's state: NULL before its init and after its fini. */
struct dm_table *dm_state(const struct core *core);

/* The session of @c ends: its status page goes; its holds stay until its
 * process is gone (the registry's cleanup), and so does its right as an
 * allocator: its death asks the free of its non-persistent DMs. */
void dm_conn_closing(struct client *c);

/* The requests (dm-handlers.c turns them into replies): 0 with the DM
 * and @c's new hold of it, or -errno naming what was wrong in @why. */
int dm_alloc(struct client *c, const Rdmab__DmAllocRequest *q, struct why *why,
	     struct dm **ret_dm, struct dm_hold **ret_hold);
int dm_import(struct client *c, uint64_t ctx_id, uint32_t handle,
	      struct why *why, struct dm **ret_dm, struct dm_hold **ret_hold);
/* The free of DM @id asked by @c: its allocator, a member for a
 * persistent DM, any for @admin. @object_id: the import the free ends
 * (0: none), *@ret_ended whether it did. */
int dm_free_request(struct client *c, uint64_t id, bool admin,
		    uint64_t object_id, struct why *why, bool *ret_ended);

/* An administrator's revoke of DM @id (client @client_id, uid @uid, for
 * the log): -ENOENT, -EALREADY, -ENOMEM. */
int dm_revoke(struct core *core, uint64_t id, uint64_t client_id, uid_t uid,
	      struct why *why);

/* @c's unimport of DM @dm_id (a request, or one read after the end of its
 * session: the library unmapped before it sent it). 0 or -ENOENT. */
int dm_unimport(struct client *c, uint64_t dm_id, uint64_t object_id);

/* @mr, loose, goes on its DM's list (a DM that is gone: it stays
 * loose). */
void dm_mr_attach(struct core *core, struct dm_mr *mr);
/* Every MR on @dm goes loose: @dm goes, the MRs keep its id. */
void dm_mrs_loosen(struct core *core, struct dm *dm);
/* The DM an import record (kind DM) is of, by id; 0 for none. */
uint64_t dm_import_id(const struct obj *o);

/*
 * What @c may know of the device memory of @dev: the bytes the broker
 * reserved on it (its own accounting) only for an administrator, since
 * they move with every domain's allocations; for everyone, its domain's
 * bytes in use (on every device) and its dm_bytes quota there, and the
 * most one allocation of its could take by its quotas (its domain's and,
 * in a named domain, its uid's share; the device may still say ENOSPC).
 */
struct dm_view {
	bool device_wide;
	uint64_t reserved;
	uint64_t domain_used;
	uint64_t domain_limit;
	uint64_t room;
};

void dm_view(const struct core *core, const struct client *c,
	     const struct device *dev, struct dm_view *ret);
/* The family's part of @dev's DeviceCaps for @c (struct family's
 * device_caps): why a DM cannot be shared there, and dm_view()'s
 * figures. */
void dm_device_caps(const struct client *c, const struct device *dev,
		    Rdmab__DeviceCaps *caps);

/* Rekey (rekey.c): the DMs of @x, counted and named after what @buf
 * holds ("DM 4 (persistent), ..."). */
unsigned int dm_ctx_busy(const struct core *core, const struct dctx *x,
			 char *buf, size_t len);
/* Destroy every DM of @x: its holders get a revoke Event, their imports
 * go, and the DM is freed (or, pinned by an MR, left to the context).
 * Returns how many. */
unsigned int dm_ctx_force(struct core *core, struct dctx *x,
			  const char *reason);

/* Fill the caps' DM fields for the wire. */
#define DM_PERSISTENT_FLAG 1u

/* --- within the DM family: dm.c, dm-list.c, dm-revoke.c, dm-state.c ---- */

/*
 * Restart (dm-state.c, restart.h): dm_journal() writes @dm's record as it
 * is now, dm_journal_forget() ends it and takes its memfd out of the fd
 * store; dm_journal_store_fd() puts a new soft DM's memfd there, its
 * place charged to dm->uid (0 or -errno: the alloc is refused), @over
 * its share too (a restore: it exists; an administrator's). A session's
 * status page: into the store with its record when made
 * (dm_journal_session(), 0 or -errno), its "sent"
 * (dm_journal_session_sent()), out when it goes. All no-ops with restart
 * off.
 */
void dm_journal(struct core *core, const struct dm *dm);
void dm_journal_forget(struct core *core, const struct dm *dm);
int dm_journal_store_fd(struct core *core, const struct dm *dm, bool over);
int dm_journal_session(struct core *core, const struct dm_session *s);
void dm_journal_session_sent(struct core *core, const struct dm_session *s);
void dm_journal_session_gone(struct core *core, const struct dm_session *s);
/* The daemon hands off to the next one (restart_handing_off()): drop
 * this process's records and descriptors, leave the DMs, the journal and
 * the store as they are. */
void dm_state_leave(struct core *core);
/* The family's restore slot, and its undo when a later family's fails
 * (family.h). */
int dm_restore(struct core *core, struct restore *rs);
void dm_restore_undo(struct core *core);
/* Its ids, and its books of a context (DM bytes a forced rekey left in
 * it), across a restart (family.h's ids, ctx_save, ctx_restore). */
struct id_space *dm_ids(struct core *core);
struct Rdmab__State__Context;
void dm_ctx_save(const struct dctx *x, struct Rdmab__State__Context *m);
void dm_ctx_restore(struct core *core, struct dctx *x,
		    const struct Rdmab__State__Context *m);
/* Arm @dm's revoke grace period (dm-revoke.c): 0 or -ENOMEM. */
int dm_revoke_arm(struct core *core, struct dm *dm);
/* Drop @dm's record: uncharged, off every list, freed; the device's DM
 * is the caller's (freed, or left to the context). */
void dm_forget(struct core *core, struct dm *dm);
/* Try the blocked frees again in DM_RETRY_MS. */
void dm_retry_later(struct core *core);

/* The DM with broker id @id, or NULL. */
struct dm *dm_find_id(struct core *core, uint64_t id);
/* The free is asked: set it, and the allocator's claim goes. */
void dm_set_free_asked(struct dm *dm);
/* Free @dm if its free was asked and nobody holds it: true when it is gone
 * (the caller must not touch it); the device's EBUSY leaves it blocked. */
bool dm_try_free(struct core *core, struct dm *dm);
/* Send @ev to the live sessions that hold @dm, but @except; @dm stays (a
 * client that cannot take it is killed, conn_kill()). */
void dm_notify(struct core *core, struct dm *dm, const struct client *except,
	       Rdmab__Event *ev);
/* dm_notify() of a DmEvent: @body is RDMAB__EVENT__BODY_DM_REVOKED or
 * RDMAB__EVENT__BODY_DM_FREE_PENDING, @reason its sentence. */
void dm_tell(struct core *core, struct dm *dm, const struct client *except,
	     Rdmab__Event__BodyCase body, const char *reason);
/* Revoked: the libraries see it on their next call, in their status page,
 * without asking. */
void dm_mark_revoked(struct dm *dm);
/* The MRs on @dm in the registry, a dead client's stuck ones too: how
 * many; the first @max go to @list, and @text (when not NULL) names them
 * ("MR 12 of client 3 (pid 456), MR 14 of client 5 (gone)"), cut at a
 * whole entry. */
unsigned int dm_mrs(struct core *core, const struct dm *dm,
		    Rdmab__DmMrInfo *list, unsigned int max, char *text,
		    size_t size);

/* Metrics (metrics.c): what a domain's DMs are doing, and the bytes they
 * hold on each device (by index in srv->devices). A DM counts in the
 * first state that holds: revoked, free blocked, free pending, in use. */
enum dm_metric_state {
	DM_METRIC_IN_USE,
	DM_METRIC_FREE_PENDING,
	DM_METRIC_BLOCKED,
	DM_METRIC_REVOKED,
	DM_METRIC_STATES,
};
struct dm_figures {
	uint32_t dms[DM_METRIC_STATES];
	uint64_t bytes[DEVICE_MAX];
};
const char *dm_metric_state_name(enum dm_metric_state s);
void dm_domain_figures(const struct core *core, const struct domain *d,
		       struct dm_figures *ret);

/*
 * A member uid's charges inside a configured domain, after dbus-broker's
 * usages: made at its first charge, gone with its last, so that one member
 * holds at most its share of what the domain may hold (dm_member_share),
 * persistent DMs of its dead processes included.
 */
struct dm_usage {
	TAILQ_ENTRY(dm_usage) link;
	uid_t uid;
	uint64_t dm_bytes;
};

/* What the family keeps of a domain (its family_slot, dm-quota.c). */
struct dm_domain {
	/* Its DMs (dm.domain_link). */
	TAILQ_HEAD(, dm) dms;
	/* Configured domains: what each member uid holds. */
	TAILQ_HEAD(, dm_usage) usages;
};

/* What the family keeps of @d. */
struct dm_domain *dm_domain_of(const struct domain *d);
int dm_domain_init(struct domain *d);
void dm_domain_fini(struct domain *d);

/* What the family counts of a uid (its user record's family_slot,
 * dm-user.c). */
struct dm_user {
	/* DM status pages of its sessions, a memfd each. */
	unsigned int dm_pages;
	/* Persistent DMs it allocated that are still there, in every
	 * domain, each holding a reference to the user. */
	unsigned int dm_persistent;
	uint64_t dm_persistent_bytes;
};

struct dm_user *dm_user_of(const struct user *u);
int dm_user_init(struct user *u);
void dm_user_fini(struct user *u);
/* A DM status page of one of @u's sessions: -EDQUOT once its pages
 * reach connections_per_uid (after a reload lowered it), unless
 * @exempt (an administrator). */
int dm_user_charge_page(struct core *core, struct user *u, bool exempt);
void dm_user_uncharge_page(struct user *u);
/* A persistent DM of @bytes allocated by @u: a reference, given back by
 * dm_user_uncharge_persistent() (which may free @u). */
void dm_user_charge_persistent(struct user *u, uint64_t bytes);
void dm_user_uncharge_persistent(struct core *core, struct user *u,
				 uint64_t bytes);

/* The family's quota (dm-quota.c). */
/* The dm_bytes quota of @d's pool on @dev: its percent of the device's
 * memory, or its bytes. */
uint64_t dm_quota_limit(const struct domain *d, const struct device *dev);
/* The largest of dm_quota_limit() over the devices present: what a
 * listing shows. */
uint64_t dm_quota_limit_shown(const struct core *core, const struct domain *d);
/* Whether @d's pool and, in a configured domain, uid @uid's share of it
 * have room for @rounded bytes on @dev (a DM of @length): -EDQUOT
 * otherwise, with a sentence in @why naming the quota. */
int dm_quota_room(struct domain *d, uid_t uid, const struct device *dev,
		  uint64_t length, uint64_t rounded, struct why *why);
/* The bytes uid @uid may still allocate on @dev by @d's quotas: its
 * pool's room and, in a configured domain, its share's. */
uint64_t dm_quota_free(struct domain *d, uid_t uid, const struct device *dev);
/* Charge @bytes of DM to @d's pool and to @uid's usage there; -ENOMEM. */
int dm_quota_charge(struct domain *d, uid_t uid, uint64_t bytes);
/* The charges of dm_quota_charge(), @bytes of them: @pool_bytes go back
 * to the pool, all to the uid (a DM left to a closing context keeps the
 * pool's charge until the context goes). */
void dm_quota_uncharge(struct domain *d, uid_t uid, uint64_t bytes,
		       uint64_t pool_bytes);

/* What it shows of itself (dm-metrics.c): the family's hooks. */
void dm_domain_info(const struct core *core, const struct domain *d,
		    Rdmab__DomainInfo *info);
void dm_metrics_devices(const struct core *core, struct family_metrics *fm);
void dm_metrics_domains(const struct core *core, struct family_metrics *fm);
extern const struct family_request_metric dm_request_metrics[];

#endif
