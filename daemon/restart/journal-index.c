// SPDX-License-Identifier: MIT
/*
 * The journal's index (journal-index.h): what is not on a record's path,
 * growing, sizing and freeing the table.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "daemon/restart/journal-index.h"

int jmap_grow(struct jmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct jent *old = m->slot;
	size_t old_cap = m->cap;

	m->slot = calloc(cap, sizeof(*m->slot));
	if (!m->slot) {
		m->slot = old;
		return -ENOMEM;
	}
	m->cap = cap;
	for (size_t i = 0; i < old_cap; i++) {
		size_t j;

		if (!old[i].kind)
			continue;
		j = jmap_hash(old[i].kind, old[i].key, cap);
		while (m->slot[j].kind)
			j = (j + 1) & (cap - 1);
		m->slot[j] = old[i];
	}
	free(old);
	return 0;
}

int jmap_presize(struct jmap *m, size_t n)
{
	while (m->cap < n * 2) {
		int err = jmap_grow(m);

		if (err < 0)
			return err;
	}
	return 0;
}

void jmap_del(struct jmap *m, uint32_t kind, uint64_t key)
{
	struct jent *e = jmap_find(m, kind, key);

	if (e)
		jmap_del_at(m, e);
}

void jmap_free(struct jmap *m)
{
	free(m->slot);
	m->slot = NULL;
	m->cap = m->n = 0;
}
