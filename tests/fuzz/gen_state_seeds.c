// SPDX-License-Identifier: MIT
/*
 * gen_state_seeds OUTDIR: the seeds of the "state" fuzz target, written by
 * the daemon's own journal writer (so they follow its format as it
 * changes): OUTDIR/state/seed-*. make fuzz-seeds runs it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/families/dm/dm.h"
#include "daemon/families/rss/rss.h"
#include "daemon/families/xrcd/xrcd.h"
#include "daemon/registry/objects.h"
#include "daemon/restart/journal.h"
#include "proto/state.pb-c.h"

static const char *outdir;

static void save(const struct journal *j, const char *name)
{
	char path[4096];
	off_t end = lseek(journal_fd(j), 0, SEEK_END);
	size_t len = (size_t)journal_used(j);
	uint8_t *buf = malloc(len);
	int fd;

	if (!buf || end < (off_t)len ||
	    pread(journal_fd(j), buf, len, 0) != (ssize_t)len)
		exit(1);
	snprintf(path, sizeof(path), "%s/state/seed-%s", outdir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, buf, len) != (ssize_t)len || close(fd) < 0) {
		perror(path);
		exit(1);
	}
	free(buf);
}

/*
 * Onto @j's session 9 in context 7 with object 11: a hold, a detached
 * owner (10) with an object (12), and a record of each family's kinds
 * (a DM with its claim, an import and the status page it names, an XRCD
 * name with an open, the XRCD table, an RSS object), so that mutations
 * start from records the restore reads.
 */
static void put_families(struct journal *j)
{
	Rdmab__State__SessionHold h = RDMAB__STATE__SESSION_HOLD__INIT;
	Rdmab__State__Owner ow = RDMAB__STATE__OWNER__INIT;
	Rdmab__State__Object o = RDMAB__STATE__OBJECT__INIT;
	Rdmab__State__Dm dm = RDMAB__STATE__DM__INIT;
	Rdmab__State__DmHold dh = RDMAB__STATE__DM_HOLD__INIT;
	Rdmab__State__DmHold *dhp = &dh;
	Rdmab__State__DmSession ds = RDMAB__STATE__DM_SESSION__INIT;
	Rdmab__State__XrcdName xn = RDMAB__STATE__XRCD_NAME__INIT;
	Rdmab__State__XrcdOpen xo = RDMAB__STATE__XRCD_OPEN__INIT;
	Rdmab__State__XrcdTable xt = RDMAB__STATE__XRCD_TABLE__INIT;
	Rdmab__State__Rss rss = RDMAB__STATE__RSS__INIT;
	static uint8_t key[40] = { 1, 2, 3 };
	static uint64_t wqs[2] = { 11, 12 };
	static char *held_on[1] = { "soft0" };

	h.client_id = 9;
	h.ctx_id = 7;
	h.opens = 1;
	journal_put(j, JOURNAL_SESSION_HOLD, 13, &h.base);
	ow.pid = 43;
	ow.state = OWNER_DETACHED;
	ow.uid = 1000;
	journal_put(j, JOURNAL_OWNER, 10, &ow.base);
	o.owner = 10;
	o.ctx_id = 7;
	o.kind = 3;
	o.handle = 2;
	journal_put(j, JOURNAL_OBJECT, 12, &o.base);
	dh.object_id = 14;
	dh.session = 9;
	dh.slot = 0;
	dh.owner = 9;
	dm.ctx_id = 7;
	dm.handle = 1;
	dm.length = 4096;
	dm.pages = 1;
	dm.log_align = 12;
	dm.allocator_id = 9;
	dm.allocator_live = true;
	dm.allocator_pid = 42;
	dm.uid = 1000;
	dm.charged = 4096;
	dm.claim_object = 15;
	dm.n_holds = 1;
	dm.holds = &dhp;
	journal_put(j, DM_JOURNAL_FIRST, 5, &dm.base);
	ds.sent = true;
	journal_put(j, DM_JOURNAL_FIRST + 1, 9, &ds.base);
	xn.name = "x";
	xn.owner = "uid-1000";
	xn.file = "p.1";
	xn.n_held_on = 1;
	xn.held_on = held_on;
	journal_put(j, XRCD_JOURNAL_FIRST, 1234, &xn.base);
	xo.ino = 1234;
	xo.object_id = 12;
	xo.client_id = 9;
	xo.pid = 42;
	xo.domain = "uid-1000";
	xo.seq = 1;
	journal_put(j, XRCD_JOURNAL_FIRST + 1, 1, &xo.base);
	xt.next_file = 2;
	journal_put(j, XRCD_JOURNAL_FIRST + 2, 0, &xt.base);
	rss.ctx_id = 7;
	rss.qp_object = 11;
	rss.tbl_object = 12;
	rss.port_num = 1;
	rss.log_size = 1;
	rss.key.data = key;
	rss.key.len = sizeof(key);
	rss.hash_fields = 3;
	rss.n_wqs = 2;
	rss.wqs = wqs;
	rss.owner = 9;
	journal_put(j, RSS_JOURNAL_FIRST, 20, &rss.base);
}

int main(int argc, char **argv)
{
	Rdmab__State__Counters c = RDMAB__STATE__COUNTERS__INIT;
	Rdmab__State__IdSpace ids = RDMAB__STATE__ID_SPACE__INIT;
	Rdmab__State__Session s = RDMAB__STATE__SESSION__INIT;
	Rdmab__State__SessionCtx sc = RDMAB__STATE__SESSION_CTX__INIT;
	Rdmab__State__SessionCtx *scp = &sc;
	Rdmab__State__Context x = RDMAB__STATE__CONTEXT__INIT;
	Rdmab__State__Object o = RDMAB__STATE__OBJECT__INIT;
	Rdmab__State__SoftObject so = RDMAB__STATE__SOFT_OBJECT__INIT;
	Rdmab__ObjAttr attr = RDMAB__OBJ_ATTR__INIT;
	uint32_t uses[4] = { 0 };
	char dir[4096];
	struct journal *j;
	uint32_t slot;

	if (argc != 2)
		return 2;
	outdir = argv[1];
	snprintf(dir, sizeof(dir), "%s/state", outdir);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return 1;
	if (journal_create(1, &j) < 0)
		return 1;
	save(j, "empty");
	ids.count = 4096;
	ids.key0 = 1;
	ids.key1 = 2;
	c.generation = 1;
	c.clients = c.contexts = c.objects = c.dms = &ids;
	journal_put(j, JOURNAL_COUNTERS, 0, &c.base);
	x.domain = "uid-1000";
	x.device = "soft0";
	journal_put(j, JOURNAL_CONTEXT, 7, &x.base);
	s.pid = 42;
	s.uid = 1000;
	s.gid = 1000;
	s.comm = "client";
	s.library_version = "0.1.0";
	s.domain = "uid-1000";
	s.hello_done = true;
	sc.ctx_id = 7;
	sc.opens = 1;
	s.n_ctxs = 1;
	s.ctxs = &scp;
	journal_put(j, JOURNAL_SESSION, 9, &s.base);
	attr.cqe = 16;
	so.n_uses = 4;
	so.uses = uses;
	so.attr = &attr;
	o.owner = 9;
	o.ctx_id = 7;
	o.kind = 3;
	o.handle = 1;
	o.made_here = true;
	o.soft = &so;
	journal_put(j, JOURNAL_OBJECT, 11, &o.base);
	save(j, "session");
	/* The session's holds as slots (format 3), one freed. */
	journal_slot_add(j, 9, 7, 0, 2, &slot);
	journal_slot_add(j, 9, 8, 5, 1, &slot);
	journal_slot_free(j, slot);
	save(j, "slots");
	put_families(j);
	save(j, "families");
	journal_begin(j);
	journal_del(j, JOURNAL_OBJECT, 11);
	journal_del(j, JOURNAL_SESSION, 9);
	save(j, "open-transaction");
	journal_commit(j);
	save(j, "deleted");
	journal_free(j);
	return 0;
}
