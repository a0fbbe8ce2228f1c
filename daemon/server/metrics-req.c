// SPDX-License-Identifier: MIT
/*
 * The metrics request (rdmabrokerctl metrics): the exposition a page at a
 * time over the broker's socket. A text longer than a page is kept as a
 * snapshot of the session's, so that its pages join into the one text the
 * first page began; snapshots are few (METRICS_SNAPS, the oldest goes
 * first), shared with the HTTP cache when they are the same text, and
 * dropped once read whole or METRICS_SNAP_MS after their last page.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/registry/client.h"
#include "daemon/server/dispatch.h"
#include "daemon/server/metrics-text.h"
#include "daemon/server/server.h"

/* Bytes of text in one reply: whole lines, well inside a packet. */
#define METRICS_PAGE (32 * 1024)
#define METRICS_SNAPS 16
#define METRICS_SNAP_MS 10000

/* The snapshot of session @id, after dropping the stale ones; -1. */
static int snap_find(struct metrics *m, uint64_t id)
{
	uint64_t now = metrics_now_ms();
	int found = -1;

	for (unsigned int i = m->n_snaps; i-- > 0;) {
		if (now - m->snaps[i].used_ms >= METRICS_SNAP_MS)
			metrics_snap_drop(m, i);
	}
	for (unsigned int i = 0; i < m->n_snaps; i++)
		if (m->snaps[i].client_id == id)
			found = (int)i;
	return found;
}

/* Keep @t (a reference taken) for session @id: 0 or -ENOMEM. */
static int snap_keep(struct metrics *m, uint64_t id, struct metrics_text *t)
{
	int i = snap_find(m, id);

	if (i >= 0) {
		metrics_snap_drop(m, (unsigned int)i);
	} else if (m->n_snaps == METRICS_SNAPS) {
		unsigned int old = 0;

		for (unsigned int k = 1; k < m->n_snaps; k++)
			if (m->snaps[k].used_ms < m->snaps[old].used_ms)
				old = k;
		metrics_snap_drop(m, old);
	}
	if (!m->snaps) {
		m->snaps = calloc(METRICS_SNAPS, sizeof(*m->snaps));
		if (!m->snaps)
			return -ENOMEM;
	}
	t->refs++;
	m->snaps[m->n_snaps++] = (struct metrics_snap){
		.client_id = id,
		.used_ms = metrics_now_ms(),
		.t = t,
	};
	return 0;
}

/* The end of the page that starts at @off: whole lines, at most
 * METRICS_PAGE bytes (a longer line, which the render never makes,
 * would be cut). */
static size_t page_end(const struct metrics_text *t, size_t off)
{
	size_t end = off + METRICS_PAGE;

	if (end >= t->len)
		return t->len;
	while (end > off && t->data[end - 1] != '\n')
		end--;
	return end > off ? end : off + METRICS_PAGE;
}

int h_metrics_get(struct client *c, const Rdmab__Request *req,
		  struct wire_fds *fds, struct reply *r)
{
	struct server *srv = server_of(c->core);
	struct metrics *m = srv->metrics;
	uint64_t off = req->metrics->offset;
	Rdmab__MetricsReply *out = reply_alloc(r, sizeof(*out));
	struct metrics_text *t = NULL;
	size_t end;
	int i, err;

	if (!out || !m)
		return reply_error(r, -ENOMEM, "out of memory");
	if (off == 0) {
		/* Administrators see the broker; the others, their domain:
		 * what other domains hold answers like nothing. */
		err = policy_is_admin(&srv->core, c) ?
			      metrics_render_all(srv, &t) :
			      metrics_render(srv, c->domain, &t);
		if (err == -EFBIG)
			return reply_error(r, err,
					   "the metrics exceed the broker's "
					   "limit of %u bytes",
					   METRICS_TEXT_MAX);
		if (err < 0)
			return reply_error(r, err, "out of memory");
		i = snap_find(m, c->id);
		if (i >= 0)
			metrics_snap_drop(m, (unsigned int)i);
		if (t->len > METRICS_PAGE && snap_keep(m, c->id, t) < 0) {
			metrics_text_put(t);
			return reply_error(r, -ENOMEM, "out of memory");
		}
	} else {
		i = snap_find(m, c->id);
		if (i < 0)
			return reply_error(r, -ESTALE,
					   "no metrics text is being read by "
					   "this session (one is kept %u s "
					   "after its last page): read again "
					   "from offset 0",
					   METRICS_SNAP_MS / 1000);
		if (off >= m->snaps[i].t->len ||
		    m->snaps[i].t->data[off - 1] != '\n')
			return reply_error(r, -EINVAL,
					   "offset %" PRIu64 " does not start "
					   "a page of the metrics text",
					   off);
		t = m->snaps[i].t;
		t->refs++;
		m->snaps[i].used_ms = metrics_now_ms();
	}
	end = page_end(t, (size_t)off);
	rdmab__metrics_reply__init(out);
	out->total = t->len;
	/* The text outlives the reply: a snapshot holds it, or the copy
	 * below does. */
	out->text.len = end - (size_t)off;
	out->text.data = reply_alloc(r, out->text.len + 1);
	if (!out->text.data) {
		metrics_text_put(t);
		return reply_error(r, -ENOMEM, "out of memory");
	}
	memcpy(out->text.data, t->data + off, out->text.len);
	if (end == t->len && (i = snap_find(m, c->id)) >= 0)
		metrics_snap_drop(m, (unsigned int)i);
	metrics_text_put(t);
	r->msg.body_case = RDMAB__REPLY__BODY_METRICS;
	r->msg.metrics = out;
	return 0;
}
