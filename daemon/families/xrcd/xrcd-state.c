// SPDX-License-Identifier: MIT
/*
 * XRC domains across a restart (issue 25; restart.h's contract): each name
 * is one journal record keyed by its inode (the kernel's key), its file's
 * descriptor in the fd store as "rb.xrcd.<inode>", so that a private name
 * outlives the daemon although its file is not declared; each open is one
 * record; the private files' counter one. xrcd.c calls these as its table
 * changes, with plain values (xrcd.h), and makes the names and opens again
 * at the restore. The domains' xrcds charges are not records: each live
 * open takes its charge again.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/device/device.h"
#include "daemon/registry/client.h"
#include "daemon/registry/ctx.h"
#include "daemon/registry/domain.h"
#include "daemon/families/family-state.h"
#include "daemon/util/array.h"
#include "daemon/util/fault.h"
#include "daemon/util/log.h"
#include "daemon/registry/objects.h"
#include "daemon/restart/restart.h"
#include "daemon/registry/core.h"
#include "daemon/families/xrcd/xrcd-conf.h"
#include "daemon/families/xrcd/xrcd.h"
#include "proto/state.pb-c.h"

enum {
	JOURNAL_XRCD_NAME = XRCD_JOURNAL_FIRST,
	JOURNAL_XRCD_OPEN = XRCD_JOURNAL_FIRST + 1,
	JOURNAL_XRCD_TABLE = XRCD_JOURNAL_FIRST + 2,
};

/* Each kind's message, in the order above (family.h's journal_msgs). */
const struct ProtobufCMessageDescriptor
	*const xrcd_journal_msgs[XRCD_JOURNAL_MSGS] = {
		&rdmab__state__xrcd_name__descriptor,
		&rdmab__state__xrcd_open__descriptor,
		&rdmab__state__xrcd_table__descriptor,
	};

/* --- as it changes ---------------------------------------------------- */

int xrcd_journal_name(struct core *core, const struct xrcd_name_rec *r,
		      bool is_new)
{
	Rdmab__State__XrcdName m = RDMAB__STATE__XRCD_NAME__INIT;
	struct journal *j = restart_journal(core);
	struct fdstore *st = restart_fdstore(core);
	char name[FDSTORE_NAME_MAX];
	int ret;

	if (!j)
		return 0;
	if (is_new && st) {
		state_fd_name(name, sizeof(name), "xrcd", r->ino);
		ret = fdstore_put_for(st, name, r->fd, r->store_uid,
				      r->over_share);
		if (ret < 0)
			return ret;
	}
	m.name = (char *)r->name;
	m.store_charged = r->store_uid != FDSTORE_NOBODY;
	m.store_uid = m.store_charged ? r->store_uid : 0;
	m.owner = (char *)r->owner;
	m.declared = r->declared;
	m.file = (char *)r->file;
	m.n_held_on = r->n_held;
	m.held_on = (char **)r->held_on;
	m.n_held_id = r->n_held;
	m.held_id = (uint32_t *)r->held_id;
	m.dev = r->dev;
	/* A failure marks the journal broken: the next start refuses the
	 * whole state. */
	journal_put(j, JOURNAL_XRCD_NAME, r->ino, &m.base);
	return 0;
}

void xrcd_journal_name_gone(struct core *core, uint64_t ino)
{
	state_forget(core, JOURNAL_XRCD_NAME, ino, "xrcd");
}

void xrcd_journal_open(struct core *core, const struct xrcd_open_rec *r)
{
	Rdmab__State__XrcdOpen m = RDMAB__STATE__XRCD_OPEN__INIT;
	struct journal *j = restart_journal(core);

	if (!j)
		return;
	m.ino = r->ino;
	m.object_id = r->object_id;
	m.client_id = r->client_id;
	m.pid = (uint32_t)r->pid;
	m.orphan = r->orphan;
	m.ctx_id = r->ctx_id;
	m.domain = (char *)r->domain;
	m.live_session = r->live_session;
	m.seq = r->seq;
	journal_put(j, JOURNAL_XRCD_OPEN, r->id, &m.base);
}

void xrcd_journal_open_gone(struct core *core, uint64_t id)
{
	journal_del(restart_journal(core), JOURNAL_XRCD_OPEN, id);
}

void xrcd_journal_next_file(struct core *core, uint64_t next_file)
{
	Rdmab__State__XrcdTable m = RDMAB__STATE__XRCD_TABLE__INIT;
	struct journal *j = restart_journal(core);

	if (!j)
		return;
	m.next_file = next_file;
	journal_put(j, JOURNAL_XRCD_TABLE, 0, &m.base);
}

/* --- the directory, and the contexts that hold the XRC domains ---------- */

#define XRCD_DIR_NAME FDSTORE_PREFIX "xrcd-dir"
#define XRCD_CTX_PREFIX FDSTORE_PREFIX "xrcd-ctx."

int xrcd_state_dir(struct core *core, int (*check)(int fd, struct why *why),
		   int *ret_fd)
{
	struct fdstore *st = restart_fdstore(core);
	struct why why = { 0, "" };
	int fd, ret;

	if (!st || fdstore_take(st, XRCD_DIR_NAME, &fd) < 0)
		return -ENOENT;
	ret = check(fd, &why);
	if (ret < 0) {
		log_warn("the XRCD directory handed over is not used (%s): "
			 "it is opened by its path",
			 why.text);
		close(fd);
		/* Before the one in use is put under the same name. */
		fdstore_remove(st, XRCD_DIR_NAME);
		return ret;
	}
	*ret_fd = fd;
	return 0;
}

int xrcd_journal_dir(struct core *core, int fd)
{
	struct fdstore *st = restart_fdstore(core);
	int ret = fdstore_put(st, XRCD_DIR_NAME, fd);

	if (ret < 0)
		log_warn("the XRCD directory is not kept in the fd store (%s): "
			 "a restart opens it again by its path",
			 strerror(-ret));
	return ret;
}

void xrcd_journal_dir_gone(struct core *core)
{
	fdstore_remove(restart_fdstore(core), XRCD_DIR_NAME);
}

int xrcd_journal_ctx(struct core *core, const char *dev, uint64_t seq, int fd,
		     char *name, size_t size)
{
	struct fdstore *st = restart_fdstore(core);
	int ret;

	if (!st)
		return 0;
	snprintf(name, size, XRCD_CTX_PREFIX "%s.%" PRIu64, dev, seq);
	ret = fdstore_put(st, name, fd);
	if (ret < 0) {
		log_warn("%s: the context holding the XRC domains is not kept "
			 "in the fd store (%s): a restart makes them anew",
			 dev, strerror(-ret));
		*name = '\0';
	}
	return ret;
}

void xrcd_journal_ctx_gone(struct core *core, const char *name)
{
	if (*name)
		fdstore_remove(restart_fdstore(core), name);
}

/*
 * The previous daemons' contexts holding the XRC domains: taken before
 * the names are held again, closed after, so that a kernel XRC domain is
 * held all along (its usecnt never 0). There is no ibv_import_xrcd: a new
 * context holds the domains again by inode, and goes to the store only
 * once it holds them all (xrcd_adopt_end()); then the old ones go. So
 * every stored context holds every name, and the newest is enough: the
 * others are closed when taken. The store keeps one per device, two
 * from the new one's put to the old one's removal; a kill at any point
 * leaves at most two, which the next restore takes back to one.
 */
struct old_ctxs {
	int fd[DEVICE_MAX];
	char name[DEVICE_MAX][FDSTORE_NAME_MAX + 1];
	uint64_t seq_of[DEVICE_MAX];
	unsigned int n;
	uint64_t seq;
};

static int first_name(void *arg, const char *name, int fd)
{
	(void)fd;
	snprintf(arg, FDSTORE_NAME_MAX + 1, "%s", name);
	return 1;
}

/* Stored context @name (@fd, taken) goes: closed, out of the store. */
static void old_ctx_drop(struct restore *rs, int fd, const char *name)
{
	close(fd);
	fdstore_remove(rs->store, name);
}

static void old_ctxs_take(struct restore *rs, struct old_ctxs *old)
{
	char name[FDSTORE_NAME_MAX + 1];
	const char *dot;
	size_t dev_len;
	unsigned int i;
	uint64_t seq;
	int fd;

	while (fdstore_each_passed(rs->store, XRCD_CTX_PREFIX, first_name,
				   name) == 1) {
		if (fdstore_take(rs->store, name, &fd) < 0)
			break;
		/* "rb.xrcd-ctx.<dev>.<seq>" */
		dot = strrchr(name, '.');
		seq = strtoull(dot + 1, NULL, 10);
		dev_len = (size_t)(dot - name);
		if (seq > old->seq)
			old->seq = seq;
		for (i = 0; i < old->n; i++)
			if (strncmp(old->name[i], name, dev_len + 1) == 0)
				break;
		if (i < old->n && old->seq_of[i] > seq) {
			old_ctx_drop(rs, fd, name);
			continue;
		}
		if (i < old->n) {
			old_ctx_drop(rs, old->fd[i], old->name[i]);
		} else if (old->n == DEVICE_MAX) {
			/* More devices than a daemon serves. */
			old_ctx_drop(rs, fd, name);
			continue;
		} else {
			old->n++;
		}
		old->fd[i] = fd;
		old->seq_of[i] = seq;
		snprintf(old->name[i], sizeof(old->name[0]), "%s", name);
	}
}

static void old_ctxs_close(struct restore *rs, struct old_ctxs *old)
{
	for (unsigned int i = 0; i < old->n; i++)
		old_ctx_drop(rs, old->fd[i], old->name[i]);
	old->n = 0;
}

/* --- the directory at init ---------------------------------------------- */

struct passed_ino {
	uint64_t ino;
	bool found;
};

static int passed_ino_cb(void *arg, const char *name, int fd)
{
	struct passed_ino *p = arg;
	struct stat st;

	(void)name;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_ino == p->ino) {
		p->found = true;
		return 1;
	}
	return 0;
}

bool xrcd_state_passed(struct core *core, uint64_t ino)
{
	struct fdstore *st = restart_fdstore(core);
	struct passed_ino p = { .ino = ino };

	if (!st)
		return false;
	fdstore_each_passed(st, FDSTORE_PREFIX "xrcd.", passed_ino_cb, &p);
	return p.found;
}

/* --- restore ------------------------------------------------------------- */

/*
 * The restore's names refused alone (a file that changed while no daemon
 * ran): their opens end for their holders, who are told; the rest of the
 * state is adopted. One bad name must not end every session.
 */
struct refused_name {
	uint64_t ino;
	/* The name, then the reason, in one allocation. */
	char *name, *why;
	/* Its stored file, closed once its opens are seen; -1: the store
	 * had none. */
	int fd;
};

struct xrcd_restoring {
	struct restore *rs;
	struct refused_name *refused;
	size_t n_refused, cap;
};

static const struct refused_name *refused_find(const struct xrcd_restoring *xr,
					       uint64_t ino)
{
	for (size_t i = 0; i < xr->n_refused; i++)
		if (xr->refused[i].ino == ino)
			return &xr->refused[i];
	return NULL;
}

/* Name @name (inode @ino) is refused for @why (logged once); its file
 * @fd (taken; -1: none) leaves the store. */
static int name_refuse(struct xrcd_restoring *xr, const char *name,
		       uint64_t ino, int fd, const char *store_name,
		       const char *why)
{
	char esc[TEXT_ESCAPED_SIZE(CONFIG_XRCD_NAME_MAX)];
	char *copy;

	log_warn("XRCD \"%s\" (inode %" PRIu64 ") is not adopted, its opens "
		 "end: %s",
		 log_escape(esc, sizeof(esc), name), ino, why);
	fdstore_remove(xr->rs->store, store_name);
	if (array_grow(&xr->refused, &xr->cap, xr->n_refused + 1,
		       sizeof(*xr->refused), 4) < 0)
		goto nomem;
	copy = malloc(strlen(name) + strlen(why) + 2);
	if (!copy)
		goto nomem;
	strcpy(copy, name);
	strcpy(copy + strlen(name) + 1, why);
	xr->refused[xr->n_refused++] =
		(struct refused_name){ ino, copy, copy + strlen(name) + 1, fd };
	return 0;
nomem:
	if (fd >= 0)
		close(fd);
	return -ENOMEM;
}

static int restore_name(void *arg, const struct journal_rec *rec)
{
	struct xrcd_restoring *xr = arg;
	struct restore *rs = xr->rs;
	Rdmab__State__XrcdName *m;
	struct xrcd_name_rec r = { 0 };
	char name[FDSTORE_NAME_MAX];
	char text[200];
	struct why why = { 0, "" };
	int fd, ret;

	m = rdmab__state__xrcd_name__unpack(NULL, rec->len, rec->data);
	if (!m)
		return restore_fail(rs, -EBADMSG,
				    "XRCD of inode %" PRIu64 " does not decode",
				    rec->key);
	state_fd_name(name, sizeof(name), "xrcd", rec->key);
	if (restore_take_fd(rs, name, &fd) < 0)
		fd = -1;
	r.name = m->name;
	r.owner = m->owner;
	r.file = m->file;
	r.declared = m->declared;
	r.fd = fd;
	r.ino = rec->key;
	r.dev = m->dev;
	r.store_uid = m->store_charged ? m->store_uid : FDSTORE_NOBODY;
	r.over_share = true;
	for (size_t i = 0; i < m->n_held_on && r.n_held < 8; i++) {
		r.held_id[r.n_held] = i < m->n_held_id ? m->held_id[i] : 0;
		r.held_on[r.n_held++] = m->held_on[i];
	}
	ret = xrcd_adopt_name(rs->core, &r, &why);
	/* Before its file is stored again under the same name. */
	if (r.stored_wrong && ret != -ESTALE)
		fdstore_remove(rs->store, name);
	if (ret == -ESTALE) {
		snprintf(text, sizeof(text), "%s%s",
			 r.fd < 0 ? "" :
				    "its file changed while no daemon ran: ",
			 why.text);
		ret = name_refuse(xr, m->name, rec->key, r.fd, name, text);
		goto out;
	}
	if (ret < 0) {
		ret = restore_fail(rs, ret,
				   "XRCD \"%s\" (inode %" PRIu64
				   ") cannot be adopted: %s",
				   m->name, rec->key, why.text);
		goto out;
	}
	/* A kill here: the names before held again on the new contexts,
	 * which are not stored yet (xrcd_adopt_end()). */
	fault_point("xrcd-restore-name");
	/* The new generation's journal and store hold what was adopted. */
	ret = xrcd_journal_name(rs->core, &r, true);
	if (ret < 0)
		ret = restore_fail(rs, ret, "XRCD \"%s\" cannot be kept: %s",
				   m->name, strerror(-ret));
out:
	rdmab__state__xrcd_name__free_unpacked(m, NULL);
	return ret;
}

/* The session @arg (a client id) alone. */
static bool lost_filter(struct client *c, Rdmab__Event *ev, void *arg)
{
	(void)ev;
	return c->id == *(const uint64_t *)arg;
}

/*
 * Open @id of client @client_id holds XRCD @rn, a name refused: the open
 * is not adopted (not charged, nor listed), and its session, if it came
 * back, is told why, as a removed device's holders are. Its registry
 * record, if any, stays the client's to destroy (on a verbs device its
 * own ibv_xrcd still holds the kernel XRCD of the old inode); a detached
 * owner's goes with its owner.
 */
static void open_lost(struct restore *rs, const struct refused_name *rn,
		      uint64_t id, uint64_t client_id, const struct obj *o)
{
	Rdmab__XrcdLostEvent le = RDMAB__XRCD_LOST_EVENT__INIT;
	Rdmab__Event ev = RDMAB__EVENT__INIT;
	char reason[512];

	if (o && o->made_here && rn->fd >= 0)
		xrcd_adopt_lost(rs->core, rn->fd, rn->ino);

	snprintf(reason, sizeof(reason),
		 "the broker restarted and refused XRCD \"%s\" (%s): close "
		 "this open and open the name again",
		 rn->name, rn->why);
	le.name.data = (uint8_t *)rn->name;
	le.name.len = strlen(rn->name);
	le.inode = rn->ino;
	le.reason = reason;
	ev.object_kind = IBC_OBJ_XRCD;
	ev.object_id = id;
	ev.body_case = RDMAB__EVENT__BODY_XRCD_LOST;
	ev.xrcd_lost = &le;
	rs->core->ops->broadcast(rs->core, &ev, lost_filter, &client_id);
}

static int restore_open(struct xrcd_restoring *xr,
			const struct journal_rec *rec)
{
	struct restore *rs = xr->rs;
	struct core *core = rs->core;
	const struct refused_name *rn;
	struct xrcd_open_rec r = { 0 };
	Rdmab__State__XrcdOpen *m;
	struct dctx *ctx = NULL;
	struct client *c = NULL;
	struct obj *o = NULL;
	struct domain *d;
	int ret;

	m = rdmab__state__xrcd_open__unpack(NULL, rec->len, rec->data);
	if (!m)
		return restore_fail(rs, -EBADMSG,
				    "XRCD open %" PRIu64 " does not decode",
				    rec->key);
	d = state_domain(core, m->domain);
	if (m->object_id)
		o = objects_find_id(core, m->object_id);
	if (m->live_session)
		c = state_client(core, m->client_id);
	if (m->orphan)
		ctx = state_ctx(core, m->ctx_id);
	/* A registered open needs its record, an own-context one its
	 * session (gone: the open went with it), an orphan its context
	 * (gone: so is the kernel XRCD it stood for). */
	if (!m->orphan && !m->object_id && !c) {
		ret = 0;
		goto out;
	}
	if (m->orphan && !ctx) {
		ret = 0;
		goto out;
	}
	/* Its record did not come back with its session (which hung up
	 * while no daemon ran): the open went with it. */
	if (!d || (m->object_id && !o)) {
		log_debug("XRCD open %" PRIu64 " of client %" PRIu64 ": its "
			  "%s did not come back, not adopted",
			  rec->key, m->client_id,
			  d ? "registry record" : "domain");
		ret = 0;
		goto out;
	}
	rn = m->ino ? refused_find(xr, m->ino) : NULL;
	if (rn && !m->orphan) {
		open_lost(rs, rn, rec->key, m->client_id, o);
		ret = 0;
		goto out;
	}
	r.id = rec->key;
	/* A dead client's open of a refused name stays with its context's
	 * kernel XRCD, nameless, as after an administrator's removal. */
	r.ino = rn ? 0 : m->ino;
	r.object_id = m->object_id;
	r.client_id = m->client_id;
	r.ctx_id = m->ctx_id;
	r.pid = (pid_t)m->pid;
	r.orphan = m->orphan;
	r.domain = d->name;
	r.live_session = m->live_session;
	r.seq = m->seq;
	ret = xrcd_adopt_open(core, &r, o, c, ctx, d);
	if (ret < 0)
		ret = restore_fail(
			rs, ret, "XRCD open %" PRIu64 " cannot be adopted: %s",
			rec->key, strerror(-ret));
out:
	rdmab__state__xrcd_open__free_unpacked(m, NULL);
	return ret;
}

static int restore_table(void *arg, const struct journal_rec *rec)
{
	struct restore *rs = arg;
	Rdmab__State__XrcdTable *m;

	m = rdmab__state__xrcd_table__unpack(NULL, rec->len, rec->data);
	if (!m)
		return restore_fail(rs, -EBADMSG,
				    "the XRCD table does not decode");
	xrcd_adopt_next_file(rs->core, m->next_file);
	rdmab__state__xrcd_table__free_unpacked(m, NULL);
	return 0;
}

/* The open records, to adopt in the order they were made (their seq):
 * listings keep their order across a restart. */
struct open_recs {
	struct journal_rec *v;
	uint64_t *seq;
	size_t n, cap, cap_seq;
};

static int collect_open(void *arg, const struct journal_rec *rec)
{
	struct open_recs *recs = arg;
	Rdmab__State__XrcdOpen *m;

	if (array_grow(&recs->v, &recs->cap, recs->n + 1, sizeof(*recs->v),
		       64) < 0 ||
	    array_grow(&recs->seq, &recs->cap_seq, recs->n + 1,
		       sizeof(*recs->seq), 64) < 0)
		return -ENOMEM;
	m = rdmab__state__xrcd_open__unpack(NULL, rec->len, rec->data);
	recs->seq[recs->n] = m ? m->seq : 0;
	if (m)
		rdmab__state__xrcd_open__free_unpacked(m, NULL);
	recs->v[recs->n++] = *rec;
	return 0;
}

static int restore_opens(struct xrcd_restoring *xr)
{
	struct restore *rs = xr->rs;
	struct open_recs or = { 0 };
	size_t *idx = NULL;
	int ret;

	ret = restore_each(rs, JOURNAL_XRCD_OPEN, collect_open, & or);
	if (ret == 0 && or.n) {
		idx = malloc(or.n * sizeof(*idx));
		if (!idx)
			ret = -ENOMEM;
	}
	if (ret < 0) {
		ret = restore_fail(rs, ret, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < or.n; i++)
		idx[i] = i;
	/* Insertion sort by seq: the opens of one daemon, a few thousand. */
	for (size_t i = 1; i < or.n; i++)
		for (size_t k = i; k > 0 && or.seq[idx[k]] < or.seq[idx[k - 1]];
		     k--) {
			size_t t = idx[k];

			idx[k] = idx[k - 1];
			idx[k - 1] = t;
		}
	for (size_t i = 0; i < or.n && ret == 0; i++)
		ret = restore_open(xr, & or.v[idx[i]]);
out:
	free(idx);
	free(or.v);
	free(or.seq);
	return ret;
}

int xrcd_restore(struct core *core, struct restore *rs)
{
	struct xrcd_restoring xr = { .rs = rs };
	struct old_ctxs old = { .n = 0 };
	int ret;

	old_ctxs_take(rs, &old);
	xrcd_adopt_begin(core, old.seq);
	ret = restore_each(rs, JOURNAL_XRCD_TABLE, restore_table, rs);
	if (ret == 0)
		ret = restore_each(rs, JOURNAL_XRCD_NAME, restore_name, &xr);
	if (ret == 0)
		ret = restore_opens(&xr);
	if (ret < 0)
		xrcd_adopt_undo(core);
	/* Every name is held again (or, refused, dropped): the new contexts
	 * are stored before the old ones go. */
	xrcd_adopt_end(core);
	old_ctxs_close(rs, &old);
	for (size_t i = 0; i < xr.n_refused; i++) {
		if (xr.refused[i].fd >= 0)
			close(xr.refused[i].fd);
		free(xr.refused[i].name);
	}
	free(xr.refused);
	return ret;
}
