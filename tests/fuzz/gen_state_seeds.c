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
	journal_begin(j);
	journal_del(j, JOURNAL_OBJECT, 11);
	journal_del(j, JOURNAL_SESSION, 9);
	save(j, "open-transaction");
	journal_commit(j);
	save(j, "deleted");
	journal_free(j);
	return 0;
}
