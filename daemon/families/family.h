/* SPDX-License-Identifier: MIT */
/*
 * The family seam: what the server, the connections, rekey and the
 * registry's cleanup know of a resource family. Each family fills one
 * struct family; families.c lists them all, in the one order every walk
 * uses (teardown walks it backwards). A family keeps its state in
 * core->family_state[its id], never in a file-level variable, so that the
 * server names no family's state type.
 */
#ifndef RDMAB_FAMILY_H
#define RDMAB_FAMILY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/device/device.h"

struct core;
struct client;
struct config;
struct config_domain;
struct conf_family;
struct quota;
struct dctx;
struct device;
struct obj_family;
struct handler;
struct restore;
struct Rdmab__DeviceCaps;
struct Rdmab__HelloRequest;
struct Rdmab__State__Session;
struct Rdmab__State__Context;
struct id_space;
struct ProtobufCMessageDescriptor;
struct Rdmab__DomainInfo;
struct domain;
struct user;
struct why;
struct family_metrics;

/* A request a family serves: the dispatch table's entry for @body_case
 * (an RDMAB__REQUEST__BODY_* value). */
struct family_request {
	unsigned int body_case;
	const struct handler *handler;
};

/* Index into families[] and core->family_state[]: the order of the walks.
 * The registry comes first: the families' records live in it, and a
 * closing session's last requests are read before any family lets go.
 * Then the families of common/families.def, in its order (FAMILY_DM...). */
enum family_id {
	FAMILY_OBJECTS,
#define FAMILY(f, F) FAMILY_##F,
#include "common/families.def"
	FAMILY_COUNT,
};

struct family {
	const char *name;
	/* Set up the family's state (core->family_state[id]): 0 or a
	 * negative errno, which stops the daemon. */
	int (*init)(struct core *core);
	/* Daemon exit: free the state, whatever init left of it. */
	void (*fini)(struct core *core);
	/* The configuration was reloaded (core->config is the new one). */
	void (*configure)(struct core *core);
	/* The session of @c ends (conn_close()). */
	void (*session_closing)(struct client *c);
	/* @dev is gone; told once, in reverse order (the registry last:
	 * a family lets go of what it made before the records go). */
	void (*device_gone)(struct core *core, struct device *dev,
			    const char *reason);
	/* Context @x is about to be freed: the kernel freed (or is about to
	 * free) what it held. */
	void (*ctx_closed)(struct core *core, const struct dctx *x);
	/* Rekey: how many objects of @x the family made, which cannot move
	 * to a new context, their names added to @buf (rekey_name_add()). */
	unsigned int (*rekey_busy)(const struct core *core,
				   const struct dctx *x, char *buf, size_t len);
	/* A forced rekey destroys them: how many went. */
	unsigned int (*rekey_force)(struct core *core, struct dctx *x,
				    const char *reason);
	/* What rekey_force destroys, plural, for the log ("DMs"), and
	 * where the DomainRekeyReply counts it (offsetof). */
	const char *rekey_noun;
	size_t rekey_reply_field;
	/* The requests it serves (its listings among them), up to an
	 * entry with no handler: its handlers file's table. */
	const struct family_request *requests;
	/* The objects the family watches, by kind (NULL: none): several
	 * families may watch one kind; the registry calls each in order,
	 * with core->family_state[id] as the hooks' data.
	 * These are also the hooks of an owner's confirmed death: the
	 * cleanup calls them on each record of the dead owner, in the
	 * registry's cleanup order. A family that must hear of a death
	 * keeps a record for it (the DM family's claim on a DM whose
	 * allocator let go of its last import), so that it hears in that
	 * order: a per-owner hook would run before the MRs on a DM went,
	 * and for an owner with no records there is no watch to fire. */
	const struct obj_family *obj_hooks[OBJ_KIND_COUNT];
	/* Restart (issue 25; the contract is restart.h's): at start,
	 * after the registry came back, re-adopt the family's records and
	 * stored fds from @rs; 0, or a negative errno after
	 * restore_fail(): the adopted sessions then end (no half
	 * registry). NULL: the family keeps nothing across a restart.
	 * (No save slot: a family journals its records as they change,
	 * and the journal compacts them itself.) */
	int (*restore)(struct core *core, struct restore *rs);
	/* The first of its JOURNAL_FAMILY_KINDS journal record kinds
	 * (journal.h), at or past JOURNAL_FAMILY_FIRST; 0: it journals
	 * nothing. Written on disk: never changed once released. */
	unsigned int journal_first;
	/* The hello of @c: what the family takes of it into
	 * c->family_slot[its id] (RSS: Events that carry the change
	 * alone). */
	void (*hello)(struct client *c, const struct Rdmab__HelloRequest *hr);
	/* Restart: that slot goes into the session's journal record @m
	 * (the family's own fields of state.proto), and comes back. */
	void (*session_save)(const struct client *c,
			     struct Rdmab__State__Session *m);
	void (*session_restore)(struct client *c,
				const struct Rdmab__State__Session *m);
	/* Configuration (issue 24 item 9, S4): the family's keys in
	 * rdmabroker.conf (daemon/config/conf-family.h; NULL: none), and
	 * the limits of its quotas in a domain's @limit from them: @cd a
	 * configured domain's keys, NULL any other domain's ([defaults]). */
	const struct conf_family *conf;
	void (*domain_limit)(const struct config *cfg,
			     const struct config_domain *cd,
			     struct quota *limit);
	/* Restart through the seam (issue 24 item 9): the family's ids
	 * and its books of a context, so that restart.c and restore.c name
	 * no family. */
	/* The ids the family hands out, in its state (NULL: none): a
	 * restart never hands one out again. The state's Counters record
	 * keeps the space at counters_field (the offsetof of its
	 * IdSpace pointer in Rdmab__State__Counters). */
	struct id_space *(*ids)(struct core *core);
	size_t counters_field;
	/* What the family keeps of context @x (its books) goes into the
	 * context's journal record @m, and comes back from it with the
	 * charges it stands for when @x is adopted again. */
	void (*ctx_save)(const struct dctx *x, struct Rdmab__State__Context *m);
	void (*ctx_restore)(struct core *core, struct dctx *x,
			    const struct Rdmab__State__Context *m);
	/* The device listing and the hello's devices (inspect.c): what
	 * the family adds to @dev's DeviceCaps, its own figures for @c
	 * (the DM family: why a DM cannot be shared, the device memory
	 * @c's domain uses and may take). The device's limits themselves
	 * are common/device/caps-fields.h's. */
	void (*device_caps)(const struct client *c, const struct device *dev,
			    struct Rdmab__DeviceCaps *caps);

	/* Charges and the domain's books (issue 24 items 5, 9): the
	 * family's domain quota, counted by charge.c as CHARGE_OF(its id)
	 * on the domain's pool. quota_name NULL: it has none. */
	/* The quota's name in messages, metrics (quota="...") and the
	 * field of the QuotaInfo that carries it (offsetof, sizeof: 4 or
	 * 8 bytes) in a DomainInfo's used and limit. */
	const char *quota_name;
	size_t quota_info_field, quota_info_size;
	/* Listed in rdmabroker_quota_used and _limit; and the gauge of
	 * what a pool holds of it (name, help), NULL: none. */
	bool quota_counted;
	const char *quota_metric, *quota_metric_help;
	/* The limit of domain @d (its own, not its pool's); NULL when it is
	 * not one number (device memory: a share of each device's), so
	 * that charge_room() does not apply and the family checks. */
	uint64_t (*quota_limit)(const struct domain *d);
	/* The refusal when @used of @limit leave no room in domain
	 * @domain: -EDQUOT in @why, @clause appended. */
	int (*quota_refuse)(const char *domain, uint64_t used, uint64_t limit,
			    const char *clause, struct why *why);
	/* A domain is made: what the family keeps of it goes in
	 * d->family_slot[its id] (0 or -ENOMEM: no domain); and the
	 * domain is freed (every domain_init that succeeded has its
	 * domain_fini, in reverse order). NULL: it keeps nothing. */
	int (*domain_init)(struct domain *d);
	void (*domain_fini)(struct domain *d);
	/* A uid's user record is made, and freed: what the family counts
	 * of the uid, in u->family_slot[its id], as domain_init/_fini. */
	int (*user_init)(struct user *u);
	void (*user_fini)(struct user *u);
	/* What the family adds to @d's listing (DomainInfo @info, its used
	 * and limit filled) beyond its quota; NULL: nothing. */
	void (*domain_info)(const struct core *core, const struct domain *d,
			    struct Rdmab__DomainInfo *info);
	/* Its own metrics (metrics-text.c), NULL: none: of the devices
	 * (an administrator's scrape, after rdmabroker_device_removed),
	 * and of the domains @fm walks (after the quotas'). */
	void (*metrics_devices)(const struct core *core,
				struct family_metrics *fm);
	void (*metrics_domains)(const struct core *core,
				struct family_metrics *fm);
	/* Counters of its requests' successes (an administrator's
	 * scrape), up to an entry with no name. */
	const struct family_request_metric *request_metrics;
	/* The kernel objects of context @x the family holds as the
	 * broker's own, not as the registry's records (unaccounted.c's
	 * walk): each told to @name with its kind and handle, and counted
	 * in core->list_visits as the family walks. NULL: none. */
	void (*ctx_handles)(struct core *core, const struct dctx *x,
			    void (*name)(void *arg, enum ibc_obj_kind kind,
					 uint32_t handle),
			    void *arg);
	/* A1, issue 25 (bad input): the message of each of its journal
	 * kinds, journal_first + i for i < n_journal_msgs, so that the
	 * restore finds a record that does not decode before it adopts
	 * anything: a state refused whole, never half a registry. */
	const struct ProtobufCMessageDescriptor *const *journal_msgs;
	unsigned int n_journal_msgs;
	/* F1, issue 25 (the restore's failure paths): a later family's
	 * restore failed after this one's succeeded, and the adopted
	 * sessions are about to end. What the family restored that would
	 * outlive them (a persistent DM holds no session) goes: its
	 * records, charges and store places, as a clean start would have
	 * none of it. NULL: what it restored goes with the sessions. */
	void (*restore_undo)(struct core *core);
	/* R2, issue 25 (review-r1 F1): the restore's state is stored (or
	 * none will be): what the family put off until then, e.g. destroys
	 * by handle, which must follow a stored journal that carries them,
	 * or none that names them. NULL: nothing put off. */
	void (*restored)(struct core *core);
};

/* A counter of the successes of the requests of @body_case. */
struct family_request_metric {
	unsigned int body_case;
	const char *name, *help;
};

/* What a family's metrics hooks write with: the exposition's helpers
 * (metrics-text.c), so that a family names no renderer. */
struct family_metrics {
	/* A metric family's HELP and TYPE lines. */
	void (*family)(struct family_metrics *fm, const char *name,
		       const char *type, const char *help);
	void (*printf)(struct family_metrics *fm, const char *fmt, ...)
		__attribute__((format(printf, 2, 3)));
	/* The domains of the render: the first for a NULL @prev, NULL after
	 * the last; domain_label the last one's label, escaped. */
	struct domain *(*next_domain)(struct family_metrics *fm,
				      struct domain *prev);
	const char *(*domain_label)(struct family_metrics *fm);
	/* Device @k's label (core->devices.dev[k]), escaped. */
	const char *(*device_label)(struct family_metrics *fm, size_t k);
};

/* Add @item to the list of names in @buf (of @len bytes): ", " between
 * them, whole or not at all; " ..." once one did not fit. What a
 * family's rekey_busy hook names its objects with. */
void rekey_name_add(char *buf, size_t len, const char *item);

/* Every family, indexed by enum family_id (families.c). */
extern const struct family *const families[FAMILY_COUNT];

/* Init every family in order; on failure the caller's fini undoes.
 * -EINVAL when two families' journal kinds meet. */
int families_init(struct core *core);
/* Every family's fini, in reverse order. */
void families_fini(struct core *core);
/* The handler a family serves @body_case with; NULL for none. */
const struct handler *families_request(unsigned int body_case);
void families_configure(struct core *core);
void families_session_closing(struct client *c);
void families_device_gone(struct core *core, struct device *dev,
			  const char *reason);
void families_ctx_closed(struct core *core, const struct dctx *x);
void families_hello(struct client *c, const struct Rdmab__HelloRequest *hr);
void families_device_caps(const struct client *c, const struct device *dev,
			  struct Rdmab__DeviceCaps *caps);
void families_session_save(const struct client *c,
			   struct Rdmab__State__Session *m);
void families_session_restore(struct client *c,
			      const struct Rdmab__State__Session *m);
void families_ctx_save(const struct dctx *x, struct Rdmab__State__Context *m);
void families_ctx_restore(struct core *core, struct dctx *x,
			  const struct Rdmab__State__Context *m);

#endif
