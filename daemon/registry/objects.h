/* SPDX-License-Identifier: MIT */
/*
 * The object registry (DESIGN §5; proto/README.md, "The registry
 * invariant"): every object a client made in a shared context, under its
 * owner, keyed by a broker-wide id that is never reused. Handles are not
 * keys: the kernel hands out the lowest free one at once, so two records
 * of one context may name the same handle (one client's unregister not yet
 * read, another's register of the reused handle) until the first goes.
 *
 * An owner is a client session and outlives it: when the session ends
 * while its process lives, the objects stay, detached, until the process
 * is seen dead (its pidfd); only then are they destroyed by handle, in
 * rounds in dependency order, a slice at a time (obj-cleanup.c).
 *
 * objects.c keeps the records, the quota and the lookups; obj-cleanup.c
 * the end of sessions and the cleanup; obj-handlers.c the requests.
 */
#ifndef RDMAB_OBJECTS_H
#define RDMAB_OBJECTS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/device/device.h"
#include "daemon/families/family.h"
#include "daemon/util/queue.h"

struct core;
struct client;
struct dctx;
struct user;
struct event;
struct rec_fields;
struct state_obj;

/* A family's word on one record (struct obj's slot): a pointer to what
 * it allocated, or an id, as the family's file says per kind. */
union obj_slot {
	void *p;
	uint64_t id;
};

enum owner_state {
	/* Its session is open. */
	OWNER_LIVE,
	/* The session ended, the process lives. */
	OWNER_DETACHED,
	/* The process is gone: its objects are being destroyed. */
	OWNER_DEAD,
};

struct obj {
	TAILQ_ENTRY(obj) link;	    /* the registry's, in id order */
	TAILQ_ENTRY(obj) kind_link; /* the owner's list of its kind */
	/* Its context's list: what a listing of the domain walks, so that
	 * it costs what the domain holds, not what the broker does. */
	TAILQ_ENTRY(obj) ctx_link;
	struct obj *hash_next;
	struct obj_owner *owner;
	struct dctx *ctx;
	uint64_t id;
	uint64_t born_usec;
	enum ibc_obj_kind kind;
	uint32_t handle;
	/* Declared (verbs), the handle not registered yet. */
	bool intent;
	/* The broker made it (soft): destroying it is the broker's. */
	bool made_here;
	/* A soft intent whose kernel call (ObjKernelCallRequest, [soft]
	 * intent_window) made the object: its handle is known, the
	 * register not read yet. */
	bool window_made;
	/* The cleanup gave up on it; kept, shown, logged once. */
	bool stuck;
	/* The cleanup round that last tried it. */
	unsigned int tried;
	/* A broker record of its family's (a DM import): the family's
	 * release hook ends it, never a destroy by handle. */
	bool family_owned;
	/* What each family keeps of it, indexed by family id (struct
	 * family's obj_hooks say which kinds a family watches): its own to
	 * set, read and free; zero where it keeps nothing. A slot per
	 * family, not a field per family's use: several families may watch
	 * one kind, and a new family adds no field here. */
	union obj_slot slot[FAMILY_COUNT];
};

struct obj_owner {
	TAILQ_ENTRY(obj_owner) link;
	struct registry *reg;
	/* NULL once the session ended. */
	struct client *conn;
	uint64_t client_id;
	pid_t pid;
	/* Its process's start time (obj_proc_start()), read when the
	 * session ended; 0: not known. With the pid, the process a restore
	 * watches again: a pid reused meanwhile is another's. */
	uint64_t start_time;
	/* Its session's uid: whose watch a restore's owner joins. */
	uid_t uid;
	/* Restore: the key of its process's pidfd in the fd store, as its
	 * record names it (0: none), until it is watched again. */
	uint64_t pidfd_key;
	enum owner_state state;
	/* Its record is in the state journal (restart_owner_saved()). */
	bool journaled;
	/* Detached: the watch of its process, shared by the process's
	 * other detached owners (obj-watch.c). */
	struct obj_watch *watch;
	TAILQ_ENTRY(obj_owner) watch_link;
	/* The cleanup's slices and rounds. */
	struct event *ev;
	TAILQ_HEAD(, obj) kinds[OBJ_KIND_COUNT];
	/* Registered objects (stuck ones too), and open intents. */
	unsigned int n_objs;
	unsigned int n_intents;
	/* The cleanup's place: round, and position in the registry's
	 * cleanup_order; when it started and with how many objects. */
	unsigned int round;
	unsigned int rank;
	unsigned int stuck;
	/* Records whose handle named nothing at the cleanup. */
	unsigned int gone;
	uint64_t dead_usec;
	unsigned int n_at_death;
};

/*
 * The hooks a family hangs on the records of one kind (struct family's
 * obj_hooks): several families may watch one kind, each called in the
 * order of families[], with its state (core->family_state) as @data.
 * before_destroy: the family acts before one of its objects is destroyed
 * by the cleanup (RSS rebuilds a table without a dead client's WQ); a
 * negative errno keeps the object for the next round.
 */
struct obj_family {
	int (*before_destroy)(struct core *core, struct obj *o, void *data);
	/* For family_owned records: release @o in place of the destroy by
	 * handle; it removes the record (objects_remove) on success. */
	int (*release)(struct core *core, struct obj *o, void *data);
	/* The record goes, whatever the path (destroy, unregister, cleanup,
	 * a dead client's intent, device removal); @o is still whole. */
	void (*removed)(struct core *core, struct obj *o, void *data);
	/* Objects the family made (its slot set; RSS): the cleanup
	 * destroys them with this instead of the device's obj_destroy, and
	 * an ObjDestroyRequest of their owner is refused (the family's own
	 * request destroys them). */
	int (*destroy)(struct core *core, struct obj *o, void *data,
		       struct why *why);
	/* Before @o's live owner destroys or unregisters it (RSS: a WQ
	 * leaves the tables that use it); a negative errno refuses. */
	int (*before_owner_destroy)(struct core *core, struct obj *o,
				    void *data, struct why *why);
	/* @o was made or declared using @uses (@n records of its owner, in
	 * its context; NULL where a use is not a record): the family notes
	 * what it keeps of that in its slot (DM: an MR on a DM). Called
	 * before the record is journaled or the device asked; a negative
	 * errno (in @why) removes the record and fails the request. */
	int (*uses)(struct core *core, struct obj *o, struct obj *const *uses,
		    size_t n, void *data, struct why *why);
	/* Restart: what the family keeps of @o goes into its journal
	 * record as fields of the family's own (@f: state.proto's Object
	 * fields by the numbers the family's files define, uint64), and
	 * comes back from the record read by hand (@m's family fields)
	 * when it is adopted again, before any family's restore. */
	void (*save)(const struct obj *o, struct rec_fields *f, void *data);
	int (*restore)(struct core *core, struct obj *o,
		       const struct state_obj *m, void *data);
};

/* Destroys per event-loop turn, cleanup rounds, and the wait before the
 * second round (doubled for each later one). */
#define OBJ_SLICE 64
#define OBJ_ROUNDS 8
#define OBJ_BACKOFF_MS 10
/* The buckets of the registry's cleanup durations. */
#define OBJ_CLEANUP_BUCKETS 9
/* Families watching one kind, at most. */
#define OBJ_WATCHERS_MAX 8
/* Records kept for reuse when removed: a create after a destroy then
 * costs no calloc and no free (make bench-ir). */
#define OBJ_SPARE_MAX 64

/* One process of detached owners, watched until it exits. */
struct obj_watch {
	TAILQ_ENTRY(obj_watch) link;
	struct registry *reg;
	pid_t pid;
	/* Whose process: a pid reused by another uid's never joins. */
	uid_t uid;
	/* Polls readable once the process is gone; -1: a timer polls. */
	int pidfd;
	struct event *ev;
	/* Charged one pidfd (user->watches); NULL for a timer. */
	struct user *user;
	/* The client id its pidfd is kept under in the fd store (the
	 * journal sink's pidfd_kept), its owners' records name it; 0: not
	 * kept. */
	uint64_t key;
	TAILQ_HEAD(, obj_owner) owners;
	/* Its owners are starting their cleanups. */
	bool firing;
};

struct registry {
	struct core *core;
	TAILQ_HEAD(, obj) objs;
	TAILQ_HEAD(, obj_owner) owners;
	TAILQ_HEAD(, obj_watch) watches;
	/* Watches with a pidfd: at most max_conns, as many as connections
	 * could hold. */
	unsigned int n_watch_pidfds;
	struct obj **hash;
	size_t hash_size;
	unsigned int n_objs;
	/* Removed records for reuse, linked by hash_next; at most
	 * OBJ_SPARE_MAX. */
	struct obj *spare;
	unsigned int n_spare;
	/* Who watches each kind, in the order they joined (families[]'s);
	 * a hook's data is *data at the call (a family's state is set up
	 * after the registry's). */
	struct obj_watcher {
		const struct obj_family *fam;
		void *const *data;
		/* Its records' slot (struct obj's slot[]): its family id. */
		unsigned int slot;
	} watchers[OBJ_KIND_COUNT][OBJ_WATCHERS_MAX];
	unsigned int n_watchers[OBJ_KIND_COUNT];
	/* The order the cleanup destroys in, cleanup_kinds of them: the
	 * device layer's destroy ranks (obj_kind_destroy_rank()), what uses
	 * another object before it. */
	enum ibc_obj_kind cleanup_order[OBJ_DESTROY_RANKS];
	unsigned int cleanup_kinds;
	/* OBJ_SLICE, OBJ_ROUNDS and OBJ_BACKOFF_MS, which tests may
	 * change. */
	unsigned int slice;
	unsigned int rounds;
	unsigned int backoff_ms;
	/* Cleanups ended (objects destroyed or given up on), by how long
	 * after the death: cumulative counts under each of
	 * obj_cleanup_le_usec, their number and their sum (metrics.c). */
	struct {
		uint64_t le[OBJ_CLEANUP_BUCKETS];
		uint64_t count;
		uint64_t usec;
	} cleanups;
};

extern const uint64_t obj_cleanup_le_usec[OBJ_CLEANUP_BUCKETS];

/* The registry as the first of families[]: it sets up core->registry with
 * every family's object hooks, forgets every record at exit (the kernel
 * frees what processes no longer hold; it destroys nothing), and drops a
 * gone device's records after the families let go of theirs. */
extern const struct family objects_family;

/* @fam watches @kind too, after the others, with *@data as its hooks'
 * data and @slot (its family id) as its slot of the records: a record
 * whose slot is set is one @fam made, which its destroy hook destroys.
 * -ENOSPC past OBJ_WATCHERS_MAX, -EINVAL for a slot past FAMILY_COUNT. */
int objects_watch(struct registry *reg, enum ibc_obj_kind kind,
		  const struct obj_family *fam, void *const *data,
		  unsigned int slot);
/* The watchers of @o's kind, in order: a family_owned record's release
 * (-EOPNOTSUPP when none releases it); before_destroy until one answers
 * non-zero; whether one destroys @o itself (its slot set) and that
 * destroy; before_owner_destroy until one refuses; uses and restore until
 * one fails; every save. */
int objects_hook_release(struct registry *reg, struct obj *o);
int objects_hook_before_destroy(struct registry *reg, struct obj *o);
bool objects_hook_destroys(const struct registry *reg, const struct obj *o);
int objects_hook_destroy(struct registry *reg, struct obj *o, struct why *why);
int objects_hook_before_owner_destroy(struct registry *reg, struct obj *o,
				      struct why *why);
int objects_hook_uses(struct registry *reg, struct obj *o,
		      struct obj *const *uses, size_t n, struct why *why);
int objects_hook_restore(struct registry *reg, struct obj *o,
			 const struct state_obj *m);
/* Inline: every journaled create and change of a record asks, and most
 * kinds have no watcher (make bench-ir counts it). */
static inline void objects_hook_save(const struct registry *reg,
				     const struct obj *o, struct rec_fields *f)
{
	const struct obj_watcher *w = reg->watchers[o->kind];

	for (unsigned int i = 0; i < reg->n_watchers[o->kind]; i++)
		if (w[i].fam->save)
			w[i].fam->save(o, f, *w[i].data);
}

/*
 * Add a record for @c in context @x, charged to the domain's objects
 * quota (-EDQUOT naming the domain, in @why, when over it). An @intent has
 * no handle yet.
 */
int objects_add(struct client *c, struct dctx *x, enum ibc_obj_kind kind,
		bool intent, bool made_here, uint32_t handle, struct why *why,
		struct obj **ret);
/* The same with the id @id (0: a new one): a restore's. */
int objects_add_id(struct client *c, struct dctx *x, enum ibc_obj_kind kind,
		   bool intent, bool made_here, uint32_t handle, uint64_t id,
		   struct why *why, struct obj **ret);
/* Restore: the owner @client_id whose session ended before the restart
 * (detached or dead, @state) of process @pid of @uid, made on first use;
 * NULL without memory, or for a live session's. Its records come with
 * objects_add_detached() (as objects_add_id()); the restore then watches
 * its process as objects_conn_closing() does (restart_owners_watch()). */
struct obj_owner *objects_owner_adopt(struct core *core, uint64_t client_id,
				      pid_t pid, uint64_t start_time, uid_t uid,
				      enum owner_state state);
int objects_add_detached(struct obj_owner *ow, struct dctx *x,
			 enum ibc_obj_kind kind, bool intent, bool made_here,
			 uint32_t handle, uint64_t id, struct why *why,
			 struct obj **ret);
/* The wire's object attributes in device terms (obj-handlers.c). */
struct Rdmab__ObjAttr;
void obj_attr_from_wire(struct obj_attr *a, const struct Rdmab__ObjAttr *w);
/* The record @id of @c's session; NULL for any other (another session's,
 * another domain's, none: one answer). */
struct obj *objects_find(struct client *c, uint64_t id);
/* The record @id of any client of @c's domain; NULL for another
 * domain's or none. */
struct obj *objects_find_in_domain(struct client *c, uint64_t id);
/* Any record by id, whoever owns it (the restart's restore), or NULL. */
struct obj *objects_find_id(struct core *core, uint64_t id);
/* An intent gets its handle. */
void objects_set_handle(struct obj *o, uint32_t handle);
/* Forget @o and give its quota back. */
void objects_remove(struct obj *o);
/* A dead client's intent: it may or may not have made an object, so its
 * charge stays, counted as unaccounted in its context; the record goes. */
void objects_drop_intent(struct obj *o);

/*
 * Rekey: the records in @x of client @client_id (0: of every client whose
 * session ended) leave the registry without a destroy; their charges stay,
 * counted in x->unaccounted, until @x closes with everything in it. DM
 * imports and RSS parts are their families'.
 */
void objects_ctx_let_go(struct core *core, struct dctx *x, uint64_t client_id);

/*
 * Destroy or unregister @c's object @id, as an ObjDestroyRequest asks:
 * the broker destroys what it made (soft; -EBUSY and the device's other
 * errors leave it, but -ENOENT, a handle that names no object any more,
 * removes it), forgets what the client made (an unregister, or the cancel
 * of an intent). -ENOENT when @c has no object @id. The sentence goes to
 * @why.
 */
int objects_destroy_request(struct client *c, uint64_t id, struct why *why);
/* Register @handle for @c's intent @id (ObjRegisterRequest): -ENOENT, or
 * -EINVAL when it is registered already. */
int objects_register_request(struct client *c, uint64_t id, uint32_t handle,
			     struct why *why);

/* What a listing shows: an RDMAB__OBJECT_INFO__STATE__* value. */
int obj_state(const struct obj *o);
uint64_t objects_now_usec(void);

/* Whether @c's session holds records or intents: what its client sent
 * and the daemon did not read is read then, and its registers and
 * unregisters applied, before the session ends (dispatch_drain()). */
bool objects_client_holds(const struct client *c);

/*
 * The session of @c ends (the first family told): its objects stay,
 * detached, until its process is gone (obj-cleanup.c), watched with the
 * session's pidfd (core_ops.take_pidfd).
 */
void objects_conn_closing(struct client *c);
/* The session of @c is about to end and its objects must not outlive
 * it, whatever its process does (a restore that keeps nothing): they are
 * destroyed as a dead process's are; the session's close that follows
 * finds no owner. */
void objects_conn_end(struct client *c);

/*
 * Watch detached @ow's process, of @uid, until it exits (obj-watch.c),
 * sharing the watch of its other detached owners; takes @pidfd (the
 * session's; -1: none), charged to @u. -ESRCH: the process is gone
 * already; -ENOMEM.
 */
int obj_watch_join(struct obj_owner *ow, struct user *u, uid_t uid, int pidfd);
/* A pidfd of @pid (CLOEXEC by definition), or -1 with errno: ESRCH when
 * the process is gone, ENOSYS without pidfds. */
int obj_pidfd_open(pid_t pid);
/* Process @pid's start time, clock ticks after boot (/proc/PID/stat
 * field 22), in *@ret; -ESRCH when it is gone, another negative errno
 * when /proc does not say. */
int obj_proc_start(pid_t pid, uint64_t *ret);
/* A pidfd of process @pid if it is the one that started at @start_time
 * (0: any), in *@ret_pidfd (-1 without pidfds); -ESRCH when that process
 * is gone, its pid reused or free. */
int obj_pidfd_open_as(pid_t pid, uint64_t start_time, int *ret_pidfd);
/* Restore: detached @ow joins the watch whose pidfd is kept under @key
 * (another owner of its process brought it back): 0, or -ENOENT when
 * there is none yet. */
int obj_watch_join_kept(struct obj_owner *ow, uint64_t key);
/*
 * Restore: watch detached @ow's process with @pidfd (taken; the process
 * lives: obj_pidfd_check()), which the previous daemon kept under @key:
 * the process's watch if one was made again already (@pidfd closed
 * unless it has none), else a new one whose pidfd is kept under @key
 * again. -ENOMEM.
 */
int obj_watch_adopt(struct obj_owner *ow, struct user *u, int pidfd,
		    uint64_t key);
/* Is @pidfd, handed over, one of the live process @pid? 0; -ESRCH when
 * that process has exited; -EINVAL when it is no pidfd of @pid. */
int obj_pidfd_check(int pidfd, pid_t pid);
/* @ow no longer waits for its process; the last owner frees the watch. */
void obj_watch_leave(struct obj_owner *ow);
/* Daemon exit: every watch goes, its owners forget it. */
void obj_watches_fini(struct registry *reg);
/* The owner's process is gone: destroy its objects (obj-cleanup.c). */
void objects_owner_dead(struct obj_owner *ow);
/* Free @ow once it holds nothing and its session has ended. */
void objects_owner_put(struct obj_owner *ow);

#endif
