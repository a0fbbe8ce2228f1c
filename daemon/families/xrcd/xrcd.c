// SPDX-License-Identifier: MIT
/* XRC domains by name: the name table, the inode files, the opens
 * (xrcd.h states the rules). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/registry/charge.h"
#include "daemon/registry/client.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/domain.h"
#include "daemon/util/log.h"
#include "daemon/registry/objects.h"
#include "daemon/registry/core.h"
#include "daemon/restart/fdstore.h"
#include "daemon/restart/restart.h"
#include "daemon/families/xrcd/xrcd-conf.h"
#include "daemon/restart/restore-object.h"
#include "daemon/families/xrcd/xrcd.h"
#include "proto/state.pb-c.h"

#define XRCD_DIR "xrcd"
/* An XrcdInfo lists at most this many opens; a page this many XRCDs. */
#define XRCD_LIST_OPENS 32
#define XRCD_LIST_PAGE 4
/* Tries at a fresh private file name before giving up. */
#define XRCD_NAME_TRIES 16

struct xrcd;

struct xrcd_open {
	TAILQ_ENTRY(xrcd_open) link; /* the XRCD's */
	TAILQ_ENTRY(xrcd_open) all;  /* the table's */
	/* NULL for an orphan whose name was removed. */
	struct xrcd *x;
	/* The registry's record; NULL on a context of the client's own,
	 * whose open belongs to @conn's session, and for an orphan. */
	struct obj *o;
	struct client *conn;
	/* An orphan: a dead client's open on a verbs device, whose kernel
	 * XRCD stays in @ctx (struct ibv_xrcd shows no handle to destroy it
	 * by) until that context closes. */
	bool orphan;
	struct dctx *ctx;
	struct domain *domain;
	/* One of the domain's xrcds, until the open goes or is orphaned. */
	struct charge charge;
	uint64_t id;
	uint64_t client_id;
	pid_t pid;
	/* Its place among the opens (the table's next_seq when made), which
	 * a restart keeps, so that listings keep their order. */
	uint64_t seq;
};

struct xrcd {
	TAILQ_ENTRY(xrcd) link;
	char name[CONFIG_XRCD_NAME_MAX];
	/* The domain whose private name it is; "" when declared. */
	char owner[64];
	bool declared;
	/* The file's name in the directory, and a read-only descriptor of
	 * it, which clients receive. */
	char file[CONFIG_XRCD_NAME_MAX + 8];
	int fd;
	uint64_t ino, dev;
	/* Whose place in the fd store its file takes: its maker's uid for
	 * an undeclared name, FDSTORE_NOBODY for a declared one. */
	uint32_t store_uid;
	/* The daemon's open per device (core->devices.dev index), and the
	 * identity of the XRC domain it holds there (device.h). */
	void *hold[DEVICE_MAX];
	bool held[DEVICE_MAX];
	uint32_t hold_id[DEVICE_MAX];
	TAILQ_HEAD(, xrcd_open) opens;
	/* Live opens; orphans (in opens too) apart. */
	unsigned int n_opens;
	unsigned int n_orphans;
};

struct xrcd_table {
	struct core *core;
	int dirfd;
	/* Each device's context holding the XRC domains, by its name in the
	 * fd store ("": not there), and the number the next one's name
	 * takes. */
	char ctx_name[DEVICE_MAX][FDSTORE_NAME_MAX + 1];
	uint64_t ctx_seq;
	/* A restore is holding the names again: the new contexts go to the
	 * store once it held them all (xrcd_adopt_end()). */
	bool restoring;
	TAILQ_HEAD(, xrcd) xrcds;
	TAILQ_HEAD(, xrcd_open) opens;
	uint64_t next_file;
	uint64_t next_seq;
};

static struct xrcd_table *table(struct core *core)
{
	return core->family_state[FAMILY_XRCD];
}

static size_t dev_index(struct core *core, const struct device *dev)
{
	return (size_t)(dev - core->devices.dev);
}

/* --- restart: the records as plain values (xrcd-state.c) ----------------- */

static void name_rec(struct core *core, const struct xrcd *x,
		     struct xrcd_name_rec *r)
{
	*r = (struct xrcd_name_rec){ .name = x->name,
				     .owner = x->owner,
				     .file = x->file,
				     .declared = x->declared,
				     .fd = x->fd,
				     .ino = x->ino,
				     .dev = x->dev,
				     .store_uid = x->store_uid };
	for (size_t i = 0; i < core->devices.n; i++)
		if (x->held[i] && r->n_held < 8) {
			r->held_id[r->n_held] = x->hold_id[i];
			r->held_on[r->n_held++] = core->devices.dev[i].name;
		}
}

static void journal_name(struct core *core, const struct xrcd *x)
{
	struct xrcd_name_rec r;

	name_rec(core, x, &r);
	xrcd_journal_name(core, &r, false);
}

static void journal_open(struct core *core, const struct xrcd_open *op)
{
	struct xrcd_open_rec r = {
		.id = op->id,
		.ino = op->x ? op->x->ino : 0,
		.object_id = op->o ? op->o->id : 0,
		.client_id = op->client_id,
		.ctx_id = op->ctx ? op->ctx->id : 0,
		.pid = op->pid,
		.orphan = op->orphan,
		.domain = op->domain->name,
		.live_session = !op->o && op->conn,
		.seq = op->seq,
	};

	xrcd_journal_open(core, &r);
}

/* --- names and files -------------------------------------------------- */

static struct xrcd *xrcd_lookup(struct xrcd_table *t, const char *owner,
				const char *name)
{
	struct xrcd *x;

	TAILQ_FOREACH(x, &t->xrcds, link)
		if (strcmp(x->owner, owner) == 0 && strcmp(x->name, name) == 0)
			return x;
	return NULL;
}

/* Create the file: O_EXCL and O_NOFOLLOW relative to the directory, so
 * that nothing planted there (a symlink) is ever followed. */
static int xrcd_file_create(struct xrcd_table *t, struct xrcd *x)
{
	struct stat st;
	int fd = -1;

	for (int i = 0; i < XRCD_NAME_TRIES && fd < 0; i++) {
		if (!x->declared)
			snprintf(x->file, sizeof(x->file), "p.%" PRIu64,
				 ++t->next_file);
		else
			snprintf(x->file, sizeof(x->file), "d.%s", x->name);
		fd = openat(t->dirfd, x->file,
			    O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				    O_CLOEXEC,
			    0600);
		if (fd < 0 && (errno != EEXIST || x->declared))
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	if (!x->declared)
		xrcd_journal_next_file(t->core, t->next_file);
	if (fstat(fd, &st) < 0) {
		int err = -errno;

		close(fd);
		unlinkat(t->dirfd, x->file, 0);
		return err;
	}
	x->fd = fd;
	x->ino = (uint64_t)st.st_ino;
	x->dev = (uint64_t)st.st_dev;
	return 0;
}

static struct xrcd *xrcd_new(struct xrcd_table *t, const char *owner,
			     const char *name, bool declared)
{
	struct xrcd *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	snprintf(x->name, sizeof(x->name), "%s", name);
	snprintf(x->owner, sizeof(x->owner), "%s", owner);
	x->declared = declared;
	x->fd = -1;
	x->store_uid = FDSTORE_NOBODY;
	TAILQ_INIT(&x->opens);
	return x;
}

/* Forget @x: the holds go, and an undeclared name's file. */
static void xrcd_free(struct xrcd_table *t, struct xrcd *x, bool unlink_file)
{
	struct core *core = t->core;

	for (size_t i = 0; i < core->devices.n; i++)
		if (x->held[i])
			core->devices.dev[i].ops->xrcd_drop(
				&core->devices.dev[i], x->hold[i]);
	if (!restart_handing_off(core))
		xrcd_journal_name_gone(core, x->ino);
	if (unlink_file && x->fd >= 0)
		unlinkat(t->dirfd, x->file, 0);
	if (x->fd >= 0)
		close(x->fd);
	TAILQ_REMOVE(&t->xrcds, x, link);
	free(x);
}

/* An undeclared XRCD lives while someone holds it open, or a context
 * holds a dead client's open of it (same inode, same kernel XRCD). */
static void xrcd_put(struct xrcd_table *t, struct xrcd *x)
{
	if (!x->n_opens && !x->n_orphans && !x->declared)
		xrcd_free(t, x, true);
}

/* --- opens ------------------------------------------------------------- */

static void open_drop(struct xrcd_table *t, struct xrcd_open *op)
{
	struct xrcd *x = op->x;

	TAILQ_REMOVE(&x->opens, op, link);
	TAILQ_REMOVE(&t->opens, op, all);
	x->n_opens--;
	charge_release(&op->charge);
	xrcd_journal_open_gone(t->core, op->id);
	free(op);
	xrcd_put(t, x);
}

/* The orphan @op goes with its context's kernel XRCD. */
static void orphan_drop(struct xrcd_table *t, struct xrcd_open *op)
{
	struct xrcd *x = op->x;

	TAILQ_REMOVE(&t->opens, op, all);
	xrcd_journal_open_gone(t->core, op->id);
	op->ctx->family_slot[FAMILY_XRCD]--;
	if (x) {
		TAILQ_REMOVE(&x->opens, op, link);
		x->n_orphans--;
		xrcd_put(t, x);
	}
	free(op);
}

/* @x's context closes (or its device went): so do its orphans. */
static void orphans_ctx_gone(struct xrcd_table *t, const struct dctx *ctx,
			     const struct device *dev)
{
	struct xrcd_open *op, *tmp;

	TAILQ_FOREACH_SAFE(op, &t->opens, all, tmp)
		if (op->orphan &&
		    (op->ctx == ctx || (dev && op->ctx->dev == dev)))
			orphan_drop(t, op);
}

static void xrcd_ctx_closed(struct core *core, const struct dctx *x)
{
	/* The table goes before the last contexts at exit. */
	if (table(core))
		orphans_ctx_gone(table(core), x, NULL);
}

/* The registry's record of an open went (family hook). */
static void xrcd_obj_removed(struct core *core, struct obj *o, void *data)
{
	struct xrcd_table *t = data;
	struct xrcd_open *op;

	TAILQ_FOREACH(op, &t->opens, all)
		if (op->o == o) {
			open_drop(t, op);
			return;
		}
}

/*
 * A dead client's XRCD on a verbs device has no handle the broker knows:
 * the kernel object stays in the domain's context, counted as unaccounted,
 * until the context closes (DESIGN §5). Its open stays too, as an orphan:
 * the name's listing and the domain's count show it, and the name (with
 * its inode, the kernel's key) lives as long.
 */
static int xrcd_before_destroy(struct core *core, struct obj *o, void *data)
{
	struct xrcd_table *t = data;
	struct xrcd_open *op;

	if (o->made_here)
		return 0;
	TAILQ_FOREACH(op, &t->opens, all)
		if (op->o == o)
			break;
	if (op && o->ctx->dc) {
		char esc[LOG_ESCAPED_SIZE(op->x->name)];

		op->o = NULL;
		op->conn = NULL;
		op->orphan = true;
		op->ctx = o->ctx;
		op->x->n_opens--;
		op->x->n_orphans++;
		o->ctx->family_slot[FAMILY_XRCD]++;
		charge_release(&op->charge);
		journal_open(core, op);
		log_info("client %" PRIu64 " (pid %d): its open of XRCD \"%s\" "
			 "(inode %" PRIu64 ") stays in context %" PRIu64
			 " of domain %s until the context closes: the broker "
			 "has no handle to destroy it by",
			 op->client_id, (int)op->pid,
			 log_escape(esc, sizeof(esc), op->x->name), op->x->ino,
			 o->ctx->id, o->ctx->domain->name);
	}
	objects_drop_intent(o);
	return 1;
}

void xrcd_conn_closing(struct client *c)
{
	struct xrcd_table *t = table(c->core);
	struct xrcd_open *op, *tmp;

	if (!t)
		return;
	TAILQ_FOREACH_SAFE(op, &t->opens, all, tmp)
		if (!op->o && op->conn == c)
			open_drop(t, op);
}

/* What holds @dev's XRC domains goes to the fd store once: they outlive
 * the daemon with it (a failure is logged, and costs only that). */
static void xrcd_ctx_keep(struct xrcd_table *t, struct device *dev)
{
	size_t i = dev_index(t->core, dev);
	int fd;

	if (t->ctx_name[i][0] || t->restoring)
		return;
	fd = dev->ops->xrcd_ctx_fd(dev);
	if (fd >= 0)
		(void)xrcd_journal_ctx(t->core, dev->name, ++t->ctx_seq, fd,
				       t->ctx_name[i], sizeof(t->ctx_name[i]));
}

/* The daemon's own open of @x on @dev, made once; @keep: the identity a
 * previous daemon's hold had (0: none). */
static int xrcd_hold_dev(struct xrcd_table *t, struct xrcd *x,
			 struct device *dev, uint32_t keep, struct why *why)
{
	size_t i = dev_index(t->core, dev);
	uint32_t id = keep;
	int ret;

	if (x->held[i])
		return 0;
	ret = dev->ops->xrcd_hold(dev, x->fd, x->ino, &id, &x->hold[i], why);
	if (ret < 0)
		return ret;
	x->held[i] = true;
	x->hold_id[i] = id;
	xrcd_ctx_keep(t, dev);
	journal_name(t->core, x);
	return 0;
}

/* The device is gone: so are its XRCDs (its context closes). */
static void xrcd_device_gone(struct core *core, struct device *dev,
			     const char *reason)
{
	struct xrcd_table *t = table(core);
	size_t i = dev_index(core, dev);
	struct xrcd *x;

	(void)reason;
	TAILQ_FOREACH(x, &t->xrcds, link)
		if (x->held[i]) {
			dev->ops->xrcd_drop(dev, x->hold[i]);
			x->held[i] = false;
		}
	/* systemd's copy would keep the device busy. */
	xrcd_journal_ctx_gone(core, t->ctx_name[i]);
	t->ctx_name[i][0] = '\0';
	orphans_ctx_gone(t, NULL, dev);
}

/* --- requests --------------------------------------------------------- */

/* The name in @b, checked whole (common/xrcd/xrcd-name.h: a NUL inside is
 * refused, not cut at) and copied into @name. */
static int check_name(const ProtobufCBinaryData *b,
		      char name[CONFIG_XRCD_NAME_MAX], struct why *why)
{
	char text[XRCD_NAME_WHY_SIZE];

	if (xrcd_name_check((const char *)b->data, b->len, text, sizeof(text)) <
	    0)
		return why_set(why, -EINVAL, "%s", text);
	memcpy(name, b->data, b->len);
	name[b->len] = '\0';
	return 0;
}

/* "a, b" for a sentence. */
static void list_domains(const struct config_xrcd *d, char *buf, size_t size)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < d->n_domains && off < size; i++)
		off += (size_t)snprintf(buf + off, size - off, "%s%s",
					i ? ", " : "", d->domains[i]);
}

/* The registry's record of the open, or none on a context of the
 * client's own. */
static int open_record(struct client *c, struct dctx *dx, struct xrcd *x,
		       bool own, struct why *why, struct obj **ret_o,
		       uint32_t *ret_handle)
{
	struct device *dev = dx->dev;
	struct obj_spec spec = { .kind = IBC_OBJ_XRCD, .xrcd_ino = x->ino };
	struct why dev_why = { 0, "" };
	struct obj_made made;
	struct obj *o;
	int ret;

	*ret_o = NULL;
	*ret_handle = 0;
	if (own) {
		if (dev->broker_objects)
			return why_set(why, -EINVAL,
				       "%s: the soft device's contexts are "
				       "always shared",
				       dev->name);
		return 0;
	}
	/* verbs: registered at once, with no handle (struct ibv_xrcd shows
	 * none); the client cancels it if its ibv_open_xrcd fails. */
	ret = objects_add(c, dx, IBC_OBJ_XRCD, false, dev->broker_objects, 0,
			  why, &o);
	if (ret < 0)
		return ret;
	if (dev->broker_objects) {
		ret = dev->ctx_ops->obj_create(dx->dc, &spec, &made, &dev_why);
		if (ret < 0) {
			objects_remove(o);
			return why_set(why, ret, "%s", dev_why.text);
		}
		o->handle = made.handle;
		*ret_handle = made.handle;
		/* Restart: the record, and what makes it again. */
		restart_obj_made(c->core, o, &spec, NULL, NULL);
	} else {
		restart_obj_saved(c->core, o);
	}
	*ret_o = o;
	return 0;
}

/* The name @q asks for, by the broker's own table: EACCES, EEXIST,
 * ENOENT, EDQUOT; a new name is made here. */
static int xrcd_resolve(struct client *c, const char *name, uint32_t oflags,
			struct why *why, struct xrcd **ret, bool *ret_created)
{
	struct xrcd_table *t = table(c->core);
	struct domain *d = c->domain, *pool = domain_pool(d);
	const struct config_xrcd *decl;
	const char *owner;
	struct xrcd *x;
	char names[512];
	int err;

	decl = xrcd_conf_find(&c->core->config, name);
	if (decl && !xrcd_conf_lists(decl, d->name)) {
		list_domains(decl, names, sizeof(names));
		return why_set(why, -EACCES,
			       "XRCD \"%s\" is declared in the "
			       "configuration for the domains %s; domain "
			       "%s is not one of them",
			       name, names, d->name);
	}
	owner = decl ? "" : d->name;
	x = xrcd_lookup(t, owner, name);
	if (x && (oflags & O_EXCL))
		return why_set(why, -EEXIST, "XRCD \"%s\" exists (O_EXCL)",
			       name);
	if (!x && !(oflags & O_CREAT))
		return why_set(why, -ENOENT,
			       "no XRCD \"%s\" in domain %s (open it with "
			       "O_CREAT to create it)",
			       name, d->name);
	err = charge_room(pool, CHARGE_OF(FAMILY_XRCD), 1, "", why);
	if (err < 0)
		return err;
	*ret_created = !x;
	if (x) {
		*ret = x;
		return 0;
	}
	/* An undeclared name's file takes a place in the fd store, its
	 * maker's; a declared one's is the configuration's.
	 * Administrators are exempt, as from the other per-uid limits. */
	if (!decl && !policy_is_admin(c->core, c)) {
		char what[CONFIG_XRCD_NAME_MAX + 8];

		snprintf(what, sizeof(what), "XRCD \"%s\"", name);
		err = restart_store_room(c->core, c->cred.uid, what, why);
		if (err < 0)
			return err;
	}
	x = xrcd_new(t, owner, name, decl != NULL);
	if (!x)
		return why_set(why, -ENOMEM, "out of memory");
	if (!decl)
		x->store_uid = c->cred.uid;
	err = xrcd_file_create(t, x);
	if (err < 0) {
		/* A declared file's name is the configuration's, still not
		 * logged raw. */
		char file[LOG_ESCAPED_SIZE(x->file)];

		log_err("XRCD file %s/%s: %s", XRCD_DIR,
			log_escape(file, sizeof(file), x->file),
			strerror(-err));
		free(x);
		return why_set(why, -EIO,
			       "the broker cannot create the file of "
			       "XRCD \"%s\" (see its log)",
			       name);
	}
	{
		struct xrcd_name_rec rec;

		name_rec(c->core, x, &rec);
		rec.over_share = policy_is_admin(c->core, c);
		err = xrcd_journal_name(c->core, &rec, true);
	}
	if (err < 0) {
		unlinkat(t->dirfd, x->file, 0);
		close(x->fd);
		free(x);
		return why_set(why, err,
			       "the fd store cannot keep XRCD \"%s\": %s", name,
			       strerror(-err));
	}
	TAILQ_INSERT_TAIL(&t->xrcds, x, link);
	*ret = x;
	return 0;
}

int xrcd_open(struct client *c, const Rdmab__XrcdOpenRequest *q,
	      struct why *why, Rdmab__XrcdOpenReply *out, int *ret_fd)
{
	char name[CONFIG_XRCD_NAME_MAX];
	struct xrcd_table *t = table(c->core);
	struct xrcd_open *op = calloc(1, sizeof(*op));
	struct why dev_why = { 0, "" };
	struct xrcd *x = NULL;
	bool created = false;
	struct dctx *dx;
	uint32_t handle;
	struct obj *o;
	uint64_t oid;
	int ret;

	if (!op) {
		ret = why_set(why, -ENOMEM, "out of memory");
		goto fail;
	}
	ret = dctx_conn_usable(c, q->context_id, why, &dx);
	if (ret < 0)
		goto fail;
	if (!dx->dev->caps.xrc) {
		ret = why_set(why, -EOPNOTSUPP,
			      "%s has no XRC domains (the device does "
			      "not report IBV_DEVICE_XRC)",
			      dx->dev->name);
		goto fail;
	}
	ret = check_name(&q->name, name, why);
	if (ret < 0)
		goto fail;
	if ((q->oflags & ~(uint32_t)(O_CREAT | O_EXCL)) ||
	    ((q->oflags & O_EXCL) && !(q->oflags & O_CREAT))) {
		ret = why_set(why, -EINVAL,
			      "XRCD open flags 0x%x: O_CREAT, and O_EXCL "
			      "with O_CREAT, nothing else",
			      q->oflags);
		goto fail;
	}
	ret = xrcd_resolve(c, name, q->oflags, why, &x, &created);
	if (ret < 0)
		goto fail;
	ret = xrcd_hold_dev(t, x, dx->dev, 0, &dev_why);
	if (ret < 0) {
		why_set(why, ret, "%s", dev_why.text);
		goto fail;
	}
	/* An open without a record of its own still gets an id of the
	 * objects' space, drawn before anything is made. */
	ret = id_next(&c->core->ids.objects, &oid);
	if (ret < 0) {
		why_set(why, ret, "the broker has no object ids left");
		goto fail;
	}
	ret = open_record(c, dx, x, q->own, why, &o, &handle);
	if (ret < 0)
		goto fail;
	op->x = x;
	op->o = o;
	op->conn = c;
	op->domain = c->domain;
	op->id = o ? o->id : oid;
	op->client_id = c->id;
	op->pid = c->cred.pid;
	op->seq = t->next_seq++;
	TAILQ_INSERT_TAIL(&x->opens, op, link);
	TAILQ_INSERT_TAIL(&t->opens, op, all);
	x->n_opens++;
	charge_take(&op->charge, c->domain, CHARGE_OF(FAMILY_XRCD), 1);
	journal_open(c->core, op);
	/* Debug: any client may create private names at will. */
	if (created)
		log_debug("client %" PRIu64 ": %s XRCD of domain %s created "
			  "(inode %" PRIu64 ")",
			  c->id, x->declared ? "declared" : "private",
			  c->domain->name, x->ino);
	out->object_id = op->id;
	out->handle = handle;
	out->inode = x->ino;
	out->fd_index = 0;
	out->created = created;
	out->persistent = x->declared;
	*ret_fd = x->fd;
	return 0;
fail:
	free(op);
	if (x)
		xrcd_put(t, x);
	return ret;
}

int xrcd_close(struct client *c, uint64_t id, struct why *why)
{
	struct xrcd_table *t = table(c->core);
	struct xrcd_open *op;

	TAILQ_FOREACH(op, &t->opens, all)
		if (op->id == id && op->conn == c && !op->o)
			break;
	if (!op)
		return why_set(why, -ENOENT,
			       "XRCD open %" PRIu64 " is not one of this "
			       "session's own-context opens (a registered "
			       "open is closed with obj-destroy)",
			       id);
	open_drop(t, op);
	return 0;
}

/* A client that is not an administrator sees its domain's private names
 * and the declared names that list it. */
static bool xrcd_visible(const struct xrcd *x, const struct client *c,
			 bool admin)
{
	const struct config_xrcd *decl;

	if (admin)
		return true;
	if (!x->declared)
		return strcmp(x->owner, c->domain->name) == 0;
	decl = xrcd_conf_find(&c->core->config, x->name);
	return decl && xrcd_conf_lists(decl, c->domain->name);
}

/* What holds @op: its owner's XRC SRQs and target QPs that use it (the
 * uses of an object are its own session's). */
static void xrcd_open_objs(const struct xrcd_open *op, Rdmab__XrcdOpenInfo *oi)
{
	const struct obj *u;

	oi->own = !op->o;
	if (!op->o)
		return;
	TAILQ_FOREACH(u, &op->o->owner->kinds[IBC_OBJ_SRQ], kind_link) {
		if (u->slot[FAMILY_XRCD].id == op->o->id)
			oi->srqs++;
	}
	TAILQ_FOREACH(u, &op->o->owner->kinds[IBC_OBJ_QP], kind_link) {
		if (u->slot[FAMILY_XRCD].id == op->o->id)
			oi->qps++;
	}
}

/*
 * @x as @c may see it. A declared XRCD is shared by its domains, not their
 * members: a non-administrator sees the opens of its own domain only, and
 * counts only those, as the client and object listings do.
 */
static int xrcd_info(struct client *c, const struct xrcd *x, bool admin,
		     struct wire_arena *a, Rdmab__XrcdInfo *xi)
{
	struct core *core = c->core;
	const struct config_xrcd *decl = xrcd_conf_find(&core->config, x->name);
	size_t n_dev = 0, n_dom = 0, n_op = 0;
	const struct xrcd_open *op;

	rdmab__xrcd_info__init(xi);
	xi->name = (char *)x->name;
	xi->owner_domain = (char *)x->owner;
	xi->inode = x->ino;
	xi->persistent = x->declared;
	xi->open_count = 0;
	xi->devices =
		wire_arena_alloc(a, sizeof(char *) * (core->devices.n + 1));
	xi->opens = wire_arena_alloc(a, sizeof(*xi->opens) * XRCD_LIST_OPENS);
	if (x->declared && decl)
		xi->domains = wire_arena_alloc(
			a, sizeof(char *) * (decl->n_domains + 1));
	if (!xi->devices || !xi->opens || (x->declared && decl && !xi->domains))
		return -ENOMEM;
	for (size_t i = 0; i < core->devices.n; i++)
		if (x->held[i])
			xi->devices[n_dev++] = core->devices.dev[i].name;
	xi->n_devices = n_dev;
	if (x->declared && decl) {
		for (size_t i = 0; i < decl->n_domains; i++)
			xi->domains[n_dom++] = (char *)decl->domains[i];
		xi->n_domains = n_dom;
	}
	TAILQ_FOREACH(op, &x->opens, link) {
		Rdmab__XrcdOpenInfo *oi;

		if (!admin && op->domain != c->domain)
			continue;
		if (op->orphan) {
			xi->orphaned_opens++;
			continue;
		}
		xi->open_count++;
		if (n_op == XRCD_LIST_OPENS)
			continue;
		oi = wire_arena_alloc(a, sizeof(*oi));
		if (!oi)
			return -ENOMEM;
		rdmab__xrcd_open_info__init(oi);
		oi->client_id = op->client_id;
		oi->pid = (uint32_t)op->pid;
		oi->domain = op->domain->name;
		oi->object_id = op->id;
		xrcd_open_objs(op, oi);
		xi->opens[n_op++] = oi;
	}
	xi->n_opens = n_op;
	return 0;
}

int xrcd_list(struct client *c, const Rdmab__ListXrcdsRequest *q,
	      struct wire_arena *a, struct why *why, Rdmab__ListXrcdsReply *out)
{
	struct xrcd_table *t = table(c->core);
	bool admin = policy_is_admin(c->core, c);
	char name[CONFIG_XRCD_NAME_MAX] = "";
	Rdmab__XrcdInfo *infos, **ptrs;
	uint32_t idx = 0;
	struct xrcd *x;
	size_t n = 0;
	int ret;

	/* An empty name lists every one visible. */
	if (q->name.len) {
		ret = check_name(&q->name, name, why);
		if (ret < 0)
			return ret;
	}
	infos = wire_arena_alloc(a, sizeof(*infos) * XRCD_LIST_PAGE);
	ptrs = wire_arena_alloc(a, sizeof(*ptrs) * XRCD_LIST_PAGE);
	if (!out || !infos || !ptrs)
		return why_set(why, -ENOMEM, "out of memory");
	rdmab__list_xrcds_reply__init(out);
	TAILQ_FOREACH(x, &t->xrcds, link) {
		if (!xrcd_visible(x, c, admin))
			continue;
		if (*name && strcmp(name, x->name) != 0)
			continue;
		if (idx++ < q->offset || n == XRCD_LIST_PAGE)
			continue;
		if (xrcd_info(c, x, admin, a, &infos[n]) < 0)
			return why_set(why, -ENOMEM, "out of memory");
		ptrs[n] = &infos[n];
		n++;
	}
	out->xrcds = ptrs;
	out->n_xrcds = n;
	out->total = idx;
	return 0;
}

int xrcd_remove(struct client *c, const ProtobufCBinaryData *name_b,
		struct why *why, uint32_t *ret_orphans)
{
	char name[CONFIG_XRCD_NAME_MAX];
	struct xrcd_table *t = table(c->core);
	char esc[LOG_ESCAPED_SIZE(((struct xrcd *)0)->name)];
	struct xrcd_open *op;
	unsigned int orphans;
	struct xrcd *x;
	int ret;

	/* Administrators only: H_ADMIN. */
	ret = check_name(name_b, name, why);
	if (ret < 0)
		return ret;
	x = xrcd_lookup(t, "", name);
	if (!x)
		return why_set(why, -ENOENT,
			       "no declared XRCD \"%s\" exists (private "
			       "names go when their last open closes)",
			       name);
	if (x->n_opens)
		return why_set(why, -EBUSY, "XRCD \"%s\" is held by %u open%s",
			       name, x->n_opens, x->n_opens == 1 ? "" : "s");
	/* Dead clients' opens leave the name, not their contexts: the
	 * kernel XRCD of this inode lives there until each closes. */
	orphans = x->n_orphans;
	while ((op = TAILQ_FIRST(&x->opens))) {
		TAILQ_REMOVE(&x->opens, op, link);
		op->x = NULL;
		journal_open(c->core, op);
	}
	x->n_orphans = 0;
	log_notice("XRCD \"%s\" (inode %" PRIu64 ") removed by client "
		   "%" PRIu64 " (uid %u)%s",
		   log_escape(esc, sizeof(esc), x->name), x->ino, c->id,
		   c->cred.uid,
		   orphans ? "; dead clients' opens keep its kernel XRCD in "
			     "their domains' contexts until those close" :
			     "");
	xrcd_free(t, x, true);
	*ret_orphans = orphans;
	return 0;
}

/* --- the directory ---------------------------------------------------- */

/* A directory handed over by the fd store: the daemon's own, as
 * xrcd_dir_open() leaves it (a directory of its user's, mode 0700), and
 * open for reading (not O_PATH: it is read at init). */
static int xrcd_dir_check(int fd, struct why *why)
{
	int fl = fcntl(fd, F_GETFL);
	struct stat st;

	if (fl < 0 || fstat(fd, &st) < 0)
		return why_set(why, -errno, "%s", strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return why_set(why, -ENOTDIR, "not a directory (mode 0%o)",
			       (unsigned int)st.st_mode);
	if (st.st_uid != geteuid())
		return why_set(
			why, -EPERM, "owned by uid %u, not the daemon's (%u)",
			(unsigned int)st.st_uid, (unsigned int)geteuid());
	if ((st.st_mode & 07777) != 0700)
		return why_set(why, -EPERM, "mode 0%o, not 0700",
			       (unsigned int)(st.st_mode & 07777));
	if ((fl & O_PATH) || (fl & O_ACCMODE) != O_RDONLY)
		return why_set(why, -EBADF, "not open for reading (flags 0x%x)",
			       (unsigned int)fl);
	return 0;
}

/* The 0700 directory of the broker's own in the runtime directory @rfd,
 * never a symlink. */
static int xrcd_dir_open(int rfd)
{
	struct stat st;
	int fd;

	if (mkdirat(rfd, XRCD_DIR, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(rfd, XRCD_DIR,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() ||
	    fchmod(fd, 0700) < 0) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* Adopt "d.NAME" regular files of declared names; remove the rest. */
static void xrcd_adopt(struct xrcd_table *t)
{
	const struct config *cfg = &t->core->config;
	int fd = fcntl(t->dirfd, F_DUPFD_CLOEXEC, 0);
	unsigned int adopted = 0, removed = 0;
	char esc[LOG_ESCAPED_SIZE(((struct dirent *)0)->d_name)];
	struct dirent *e;
	DIR *dir;

	if (fd < 0)
		return;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return;
	}
	rewinddir(dir);
	while ((e = readdir(dir))) {
		const char *n = e->d_name;
		struct xrcd *x;
		struct stat st;
		int f;

		if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
			continue;
		if (strncmp(n, "d.", 2) == 0 && xrcd_conf_find(cfg, n + 2)) {
			int err = 0;

			x = NULL;
			errno = 0;
			f = openat(t->dirfd, n,
				   O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
					   O_CLOEXEC);
			if (f < 0 || fstat(f, &st) < 0)
				err = errno;
			else if (!S_ISREG(st.st_mode))
				err = ELOOP;
			else if (!(x = xrcd_new(t, "", n + 2, true)))
				err = ENOMEM;
			if (!err) {
				snprintf(x->file, sizeof(x->file), "d.%s",
					 x->name);
				x->fd = f;
				x->ino = (uint64_t)st.st_ino;
				x->dev = (uint64_t)st.st_dev;
				TAILQ_INSERT_TAIL(&t->xrcds, x, link);
				adopted++;
				continue;
			}
			if (f >= 0)
				close(f);
			/* A declared XRCD is lost only for what cannot be
			 * one (a symlink, not a regular file); kept on any
			 * other failure, and opens of it fail until a
			 * restart adopts it. */
			if (err != ELOOP) {
				log_warn("%s/%s: cannot adopt the file of a "
					 "declared XRCD, kept: %s",
					 XRCD_DIR,
					 log_escape(esc, sizeof(esc), n),
					 strerror(err));
				continue;
			}
		}
		/* A private file a restart hands over (its inode in the fd
		 * store) is the restore's. */
		if (strncmp(n, "p.", 2) == 0 &&
		    fstatat(t->dirfd, n, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) &&
		    xrcd_state_passed(t->core, (uint64_t)st.st_ino))
			continue;
		/* A leftover, or something that is not ours: a symlink is
		 * removed, never followed. */
		if (unlinkat(t->dirfd, n, 0) == 0 ||
		    unlinkat(t->dirfd, n, AT_REMOVEDIR) == 0)
			removed++;
		else
			log_warn("%s/%s: cannot remove it: %s", XRCD_DIR,
				 log_escape(esc, sizeof(esc), n),
				 strerror(errno));
	}
	closedir(dir);
	if (adopted || removed)
		log_info("XRCD directory: %u declared file%s adopted, %u "
			 "leftover%s removed",
			 adopted, adopted == 1 ? "" : "s", removed,
			 removed == 1 ? "" : "s");
}

static void xrcd_configure(struct core *core)
{
	struct xrcd_table *t = table(core);
	struct xrcd *x, *tmp;

	if (!t)
		return;
	/* A name declared again while its undeclared self is still held
	 * takes it back, file ("d.NAME") and inode: else the next open
	 * would try to create that file anew, and fail. */
	TAILQ_FOREACH(x, &t->xrcds, link)
		if (!x->declared && strcmp(x->owner, "(undeclared)") == 0 &&
		    xrcd_conf_find(&core->config, x->name)) {
			x->declared = true;
			x->owner[0] = '\0';
		}
	/* A name no longer declared lives while it is held, as an
	 * undeclared one; it stays visible to no domain but the
	 * administrators. */
	TAILQ_FOREACH_SAFE(x, &t->xrcds, link, tmp)
		if (x->declared && !xrcd_conf_find(&core->config, x->name)) {
			x->declared = false;
			snprintf(x->owner, sizeof(x->owner), "%s",
				 "(undeclared)");
			journal_name(core, x);
			xrcd_put(t, x);
		}
}

static int xrcd_init(struct core *core)
{
	struct xrcd_table *t = calloc(1, sizeof(*t));
	int fd;

	if (!t)
		return -ENOMEM;
	/* The one a restart handed over, whatever its path is now (moved,
	 * replaced); else by its path. A broker that would refuse every
	 * XRCD says so at once. */
	if (xrcd_state_dir(core, xrcd_dir_check, &fd) < 0)
		fd = xrcd_dir_open(core->runtime_fd);
	if (fd < 0) {
		log_err("%s/%s: the XRCD directory cannot be used: %s",
			core->runtime_dir, XRCD_DIR, strerror(-fd));
		free(t);
		return fd;
	}
	/* A failure is logged: only a restart's reopen by path is left. */
	(void)xrcd_journal_dir(core, fd);
	t->core = core;
	t->dirfd = fd;
	TAILQ_INIT(&t->xrcds);
	TAILQ_INIT(&t->opens);
	core->family_state[FAMILY_XRCD] = t;
	xrcd_adopt(t);
	return 0;
}

static void xrcd_fini(struct core *core)
{
	struct xrcd_table *t = table(core);
	struct xrcd_open *op;
	struct xrcd *x;

	if (!t)
		return;
	while ((op = TAILQ_FIRST(&t->opens))) {
		TAILQ_REMOVE(&t->opens, op, all);
		free(op);
	}
	/* Declared files stay for the next start (RuntimeDirectoryPreserve
	 * =restart); the others go, unless the next daemon takes them over
	 * (their records and fds stay in the journal and the store). */
	while ((x = TAILQ_FIRST(&t->xrcds)))
		xrcd_free(t, x, !x->declared && !restart_handing_off(core));
	if (!restart_handing_off(core)) {
		xrcd_journal_dir_gone(core);
		for (size_t i = 0; i < core->devices.n; i++)
			xrcd_journal_ctx_gone(core, t->ctx_name[i]);
	}
	if (t->dirfd >= 0)
		close(t->dirfd);
	free(t);
	core->family_state[FAMILY_XRCD] = NULL;
}

/* --- restart: what the restore makes (xrcd-state.c reads the records) --- */

/* Is @st the file record @r names (its inode, and device when recorded)? */
static bool adopt_same(const struct xrcd_name_rec *r, const struct stat *st)
{
	return S_ISREG(st->st_mode) && (uint64_t)st->st_ino == r->ino &&
	       (!r->dev || (uint64_t)st->st_dev == r->dev);
}

/*
 * Is the stored file @st (adopt_same()), for a name declared now, still
 * its file in the directory? A clean start adopts the declared names
 * from their files: the file and what the clients hold must be one
 * inode. A file at that path that is not the one recorded was not made
 * by this daemon (only root or the daemon's user can write the
 * directory), and is never followed nor adopted. 0, or -ESTALE with what
 * changed in @why.
 */
static int adopt_path(struct xrcd_table *t, const struct xrcd_name_rec *r,
		      const struct stat *st, struct why *why)
{
	char file[CONFIG_XRCD_NAME_MAX + 8];
	struct stat at;

	/* A name the configuration stopped declaring while no daemon ran
	 * lost its file at the init (a leftover) and lives on the stored
	 * one while held, as after a reload. */
	if (!r->declared || !xrcd_conf_find(&t->core->config, r->name))
		return 0;
	/* Its path is the name's, whatever the record says. */
	snprintf(file, sizeof(file), "d.%s", r->name);
	if (fstatat(t->dirfd, file, &at, AT_SYMLINK_NOFOLLOW) < 0)
		return why_set(why, -ESTALE, "%s/%s is gone", XRCD_DIR, file);
	if (!S_ISREG(at.st_mode))
		return why_set(why, -ESTALE,
			       "%s/%s is not a regular file (mode 0%o)",
			       XRCD_DIR, file, (unsigned int)at.st_mode);
	if (at.st_ino != st->st_ino || at.st_dev != st->st_dev)
		return why_set(why, -ESTALE,
			       "%s/%s is another inode (%" PRIu64 ")", XRCD_DIR,
			       file, (uint64_t)at.st_ino);
	return 0;
}

int xrcd_adopt_name(struct core *core, struct xrcd_name_rec *r, struct why *why)
{
	struct xrcd_table *t = table(core);
	const char *lost = "its file is not in the fd store";
	struct xrcd_name_rec held;
	struct stat st;
	struct xrcd *x;
	int ret;

	x = xrcd_lookup(t, r->owner, r->name);
	if (r->fd >= 0 && (fstat(r->fd, &st) < 0 || !adopt_same(r, &st))) {
		close(r->fd);
		r->fd = -1;
		r->stored_wrong = true;
		lost = "the descriptor stored for it is not its file";
	}
	/* Without its stored file, a declared name's file the init adopted
	 * from the directory is the one recorded, or nothing is. */
	if (r->fd < 0)
		ret = x && x->declared && x->ino == r->ino &&
				      (!r->dev || x->dev == r->dev) ?
			      0 :
			      why_set(why, -ESTALE, "%s", lost);
	else
		ret = adopt_path(t, r, &st, why);
	/* What the init adopted under a refused declared name is the file
	 * that took its place, not the daemon's. */
	if (ret == -ESTALE && x && x->declared)
		xrcd_free(t, x, true);
	/* A declared name's file was adopted from the directory by the
	 * init: the same inode (adopt_path()), kept once. */
	else if (ret == 0 && x && (!r->declared || x->ino != r->ino))
		ret = why_set(why, -EEXIST, "the name is taken");
	if (ret == -ESTALE)
		return ret;
	if (ret < 0) {
		if (r->fd >= 0)
			close(r->fd);
		r->fd = -1;
		return ret;
	}
	if (x) {
		if (r->fd >= 0)
			close(r->fd);
		r->fd = x->fd;
	} else {
		x = xrcd_new(t, r->owner, r->name, r->declared);
		if (!x) {
			close(r->fd);
			r->fd = -1;
			return why_set(why, -ENOMEM, "out of memory");
		}
		snprintf(x->file, sizeof(x->file), "%s", r->file);
		x->fd = r->fd;
		x->ino = r->ino;
		x->dev = (uint64_t)st.st_dev;
		x->store_uid = r->store_uid;
		TAILQ_INSERT_TAIL(&t->xrcds, x, link);
	}
	/* Held again while the previous daemon's hold still stands (its
	 * context in the store, xrcd-state.c), with the identity it had:
	 * a declared name nobody opens keeps its kernel XRC domain. */
	for (unsigned int i = 0; i < r->n_held; i++) {
		struct device *dev = device_find(&core->devices, r->held_on[i]);

		if (!dev)
			continue;
		/* A failure leaves @x, its fd with it, to the undo. */
		ret = xrcd_hold_dev(t, x, dev, r->held_id[i], why);
		if (ret < 0)
			return ret;
	}
	/* What the new generation records: the holds as they are now. */
	held = *r;
	name_rec(core, x, &held);
	r->n_held = held.n_held;
	memcpy(r->held_on, held.held_on, sizeof(r->held_on));
	memcpy(r->held_id, held.held_id, sizeof(r->held_id));
	return 0;
}

int xrcd_adopt_open(struct core *core, const struct xrcd_open_rec *r,
		    struct obj *o, struct client *c, struct dctx *ctx,
		    struct domain *d)
{
	struct xrcd_table *t = table(core);
	struct xrcd_open *op;
	struct xrcd *x = NULL;

	if (r->ino) {
		TAILQ_FOREACH(x, &t->xrcds, link)
			if (x->ino == r->ino)
				break;
		if (!x)
			return -ENOENT;
	}
	if (!x && !r->orphan)
		return -EINVAL;
	op = calloc(1, sizeof(*op));
	if (!op)
		return -ENOMEM;
	op->x = x;
	op->o = o;
	op->conn = c;
	op->orphan = r->orphan;
	op->ctx = ctx;
	op->domain = d;
	op->id = r->id;
	op->client_id = r->client_id;
	op->pid = r->pid;
	op->seq = r->seq;
	if (r->seq >= t->next_seq)
		t->next_seq = r->seq + 1;
	TAILQ_INSERT_TAIL(&t->opens, op, all);
	if (x)
		TAILQ_INSERT_TAIL(&x->opens, op, link);
	if (r->orphan) {
		ctx->family_slot[FAMILY_XRCD]++;
		if (x)
			x->n_orphans++;
	} else {
		x->n_opens++;
		charge_take(&op->charge, d, CHARGE_OF(FAMILY_XRCD), 1);
	}
	journal_open(core, op);
	return 0;
}

void xrcd_adopt_lost(struct core *core, int fd, uint64_t ino)
{
	for (size_t i = 0; i < core->devices.n; i++) {
		struct device *dev = &core->devices.dev[i];
		struct why why = { 0, "" };
		uint32_t id = 0;
		void *h;

		if (dev->broker_objects &&
		    dev->ops->xrcd_hold(dev, fd, ino, &id, &h, &why) == 0)
			dev->ops->xrcd_drop(dev, h);
	}
}

void xrcd_adopt_next_file(struct core *core, uint64_t next_file)
{
	if (next_file > table(core)->next_file)
		table(core)->next_file = next_file;
	xrcd_journal_next_file(core, table(core)->next_file);
}

void xrcd_adopt_begin(struct core *core, uint64_t seq)
{
	struct xrcd_table *t = table(core);

	if (seq > t->ctx_seq)
		t->ctx_seq = seq;
	t->restoring = true;
}

void xrcd_adopt_end(struct core *core)
{
	struct xrcd_table *t = table(core);
	struct xrcd *x;

	t->restoring = false;
	for (size_t i = 0; i < core->devices.n; i++)
		TAILQ_FOREACH(x, &t->xrcds, link)
			if (x->held[i]) {
				xrcd_ctx_keep(t, &core->devices.dev[i]);
				break;
			}
}

void xrcd_adopt_undo(struct core *core)
{
	struct xrcd_table *t = table(core);
	struct xrcd_open *op;
	struct xrcd *x, *tmp;

	while ((op = TAILQ_FIRST(&t->opens))) {
		if (op->orphan)
			orphan_drop(t, op);
		else
			open_drop(t, op);
	}
	/* The private names the restore made (declared ones came from the
	 * directory at init and stay). */
	TAILQ_FOREACH_SAFE(x, &t->xrcds, link, tmp)
		if (!x->declared)
			xrcd_free(t, x, true);
}

static const struct obj_family xrcd_opens = {
	.before_destroy = xrcd_before_destroy,
	.removed = xrcd_obj_removed,
};

/*
 * An XRC SRQ or target QP keeps the record of the XRCD open it uses
 * (slot[FAMILY_XRCD].id: the XRCD listing counts each open's by it), 0
 * for the rest. An id, not a pointer: the open's record may go first.
 */
static int xrcd_user_uses(struct core *core, struct obj *o,
			  struct obj *const *uses, size_t n, void *data,
			  struct why *why)
{
	(void)core;
	(void)data;
	(void)why;
	for (size_t i = 0; i < n; i++) {
		if (uses[i] && uses[i]->kind == IBC_OBJ_XRCD) {
			o->slot[FAMILY_XRCD].id = uses[i]->id;
			break;
		}
	}
	return 0;
}

/* That id, in the record's field XRCD_OBJECT_FIELD. */
static void xrcd_user_save(const struct obj *o, struct rec_fields *f,
			   void *data)
{
	(void)data;
	/* The family's one field: within REC_FIELDS_MAX. */
	(void)rec_field_set(f, XRCD_OBJECT_FIELD, o->slot[FAMILY_XRCD].id);
}

static int xrcd_user_restore(struct core *core, struct obj *o,
			     const struct state_obj *m, void *data)
{
	(void)core;
	(void)data;
	o->slot[FAMILY_XRCD].id = rec_field_get(&m->family, XRCD_OBJECT_FIELD);
	return 0;
}

static const struct obj_family xrcd_users = {
	.uses = xrcd_user_uses,
	.save = xrcd_user_save,
	.restore = xrcd_user_restore,
};

/* A domain's quota of XRCD opens: its key, or [defaults]'. */
static void xrcd_domain_limit(const struct config *cfg,
			      const struct config_domain *cd,
			      struct quota *limit)
{
	limit->family[FAMILY_XRCD][0] = xrcd_conf_quota(cfg, cd)->xrcds;
}

/* A domain's listing: the XRCD opens its contexts' kernels still hold
 * for the closed (xrcd_orphans), summed. */
static void xrcd_domain_info(const struct core *core, const struct domain *d,
			     Rdmab__DomainInfo *info)
{
	const struct dctx *x;

	TAILQ_FOREACH(x, &d->ctxs, link)
		info->xrcd_orphans += (uint32_t)x->family_slot[FAMILY_XRCD];
}

static uint64_t xrcd_quota_limit(const struct domain *d)
{
	return d->limit.family[FAMILY_XRCD][0];
}

static int xrcd_quota_refuse(const char *domain, uint64_t used, uint64_t limit,
			     const char *clause, struct why *why)
{
	return why_set(why, -EDQUOT,
		       "domain %s holds its quota of %" PRIu64 " XRCD opens%s",
		       domain, limit, clause);
}

const struct family xrcd_family = {
	/* Its quota: XRCD opens, charged to the domain's pool. */
	.quota_name = "xrcds",
	.quota_info_field = offsetof(Rdmab__QuotaInfo, xrcds),
	.quota_info_size = sizeof(((Rdmab__QuotaInfo *)0)->xrcds),
	.quota_counted = true,
	.quota_metric = "rdmabroker_xrcds",
	.quota_metric_help = "XRC domains the domain holds open.",
	.quota_limit = xrcd_quota_limit,
	.quota_refuse = xrcd_quota_refuse,
	.domain_info = xrcd_domain_info,
	.name = "XRCD",
	.conf = &xrcd_conf_family,
	.domain_limit = xrcd_domain_limit,
	.journal_first = XRCD_JOURNAL_FIRST,
	.journal_msgs = xrcd_journal_msgs,
	.n_journal_msgs = XRCD_JOURNAL_MSGS,
	.init = xrcd_init,
	.fini = xrcd_fini,
	.configure = xrcd_configure,
	.session_closing = xrcd_conn_closing,
	.device_gone = xrcd_device_gone,
	.ctx_closed = xrcd_ctx_closed,
	.requests = xrcd_requests,
	.obj_hooks =
		{
			[IBC_OBJ_XRCD] = &xrcd_opens,
			[IBC_OBJ_SRQ] = &xrcd_users,
			[IBC_OBJ_QP] = &xrcd_users,
		},
	.restore = xrcd_restore,
};
