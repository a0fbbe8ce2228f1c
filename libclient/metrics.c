// SPDX-License-Identifier: MIT
/*
 * ibc_metrics(): the broker's Prometheus text, read a page at a time and
 * joined. The broker keeps a long text as a snapshot of the session's
 * while its pages are read, so that they join into one; a snapshot that
 * expired (-ESTALE) is read again from the start, a few times at most.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libclient/client.h"

/* Far above what the broker renders (its own limit is 16 MiB). */
#define IBC_METRICS_MAX (64u << 20)
#define IBC_METRICS_TRIES 3

/* One read of the whole text: 0 with *ret_text, or -errno. */
static int ibc_metrics_read(struct ibc_client *client, char **ret_text,
			    size_t *ret_len)
{
	Rdmab__MetricsRequest mr = RDMAB__METRICS_REQUEST__INIT;
	Rdmab__Request req = RDMAB__REQUEST__INIT;
	const Rdmab__MetricsReply *m;
	char *text = NULL;
	uint64_t off = 0, total = 0;
	struct ibc_reply r;
	int err;

	req.body_case = RDMAB__REQUEST__BODY_METRICS;
	req.metrics = &mr;
	do {
		mr.offset = off;
		err = ibc_call(client, &req, 0, &r);
		if (err < 0)
			goto fail;
		m = r.reply->metrics;
		if (r.reply->body_case != RDMAB__REPLY__BODY_METRICS ||
		    (off && m->total != total) || m->total > IBC_METRICS_MAX ||
		    m->text.len > m->total - off ||
		    (!m->text.len && off < m->total)) {
			ibc_reply_free(&r);
			err = ibc_set_error(-EPROTO,
					    "the broker's metrics pages do not "
					    "add up");
			goto fail;
		}
		if (!text) {
			total = m->total;
			text = malloc(total + 1);
			if (!text) {
				ibc_reply_free(&r);
				err = ibc_set_error(-ENOMEM, "out of memory");
				goto fail;
			}
		}
		memcpy(text + off, m->text.data, m->text.len);
		off += m->text.len;
		ibc_reply_free(&r);
	} while (off < total);
	text[total] = '\0';
	*ret_text = text;
	*ret_len = total;
	return 0;
fail:
	free(text);
	return err;
}

IBC_EXPORT int ibc_metrics(struct ibc_client *client, char **ret_text,
			   size_t *ret_len)
{
	char *text;
	size_t len;
	int err = -ESTALE;

	if (!client || !ret_text)
		return ibc_set_error(-EINVAL, "client or ret_text is NULL");
	for (int i = 0; i < IBC_METRICS_TRIES && err == -ESTALE; i++)
		err = ibc_metrics_read(client, &text, &len);
	if (err < 0)
		return err;
	*ret_text = text;
	if (ret_len)
		*ret_len = len;
	return 0;
}
