// SPDX-License-Identifier: MIT
/*
 * The canonical form of rdmabrokerctl's JSON for comparing two listings
 * (jsoncanon.h): the restart storm's before and after.
 */
#include "config.h"

#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "tests/jsoncanon.h"

/* Keys whose values move by themselves: times, ages, counters. */
static bool key_moves(const char *k, size_t n)
{
	static const char *const parts[] = { "usec", "age",   "uptime",
					     "time", "since", "requests",
					     "born" };

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		size_t pl = strlen(parts[i]);

		for (size_t j = 0; j + pl <= n; j++)
			if (memcmp(k + j, parts[i], pl) == 0)
				return true;
	}
	return false;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A growing string. */
struct sbuf {
	char *p;
	size_t n, cap;
};

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t cap = (b->n + n + 1) * 2;
		char *p = realloc(b->p, cap);

		if (!p)
			abort();
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

static const char *skip_string(const char *p)
{
	for (p++; *p && *p != '"'; p += *p == '\\' && p[1] ? 2 : 1)
		;
	return *p ? p + 1 : p;
}

/*
 * The canonical form of the JSON value at *@pp into @out: objects keep
 * their keys in the daemon's order less the keys that move, arrays are
 * sorted (what a listing shows in an order of no meaning may come back in
 * another after a restore), and an object of rdmabrokerctl's own session
 * is dropped (@drop set).
 */
static void canon(const char **pp, struct sbuf *out, bool *drop)
{
	const char *p = *pp;

	if (*p == '{') {
		bool first = true;

		sb_put(out, "{", 1);
		for (p++; *p && *p != '}';) {
			const char *k = p, *ke = skip_string(p);
			struct sbuf v = { 0 };
			bool moves = key_moves(k + 1, (size_t)(ke - k - 2));

			p = ke + 1; /* the ':' */
			canon(&p, &v, drop);
			if (strncmp(k, "\"comm\"", 6) == 0 && v.p &&
			    strcmp(v.p, "\"rdmabrokerctl\"") == 0)
				*drop = true;
			if (!moves) {
				if (!first)
					sb_put(out, ",", 1);
				sb_put(out, k, (size_t)(ke - k));
				sb_put(out, ":", 1);
				sb_put(out, v.p ? v.p : "", v.n);
				first = false;
			}
			free(v.p);
			if (*p == ',')
				p++;
		}
		sb_put(out, "}", 1);
		*pp = *p ? p + 1 : p;
		return;
	}
	if (*p == '[') {
		char **el = NULL;
		size_t n = 0;

		for (p++; *p && *p != ']';) {
			struct sbuf v = { 0 };
			bool d = false;

			canon(&p, &v, &d);
			if (!d) {
				el = realloc(el, (n + 1) * sizeof(*el));
				if (!el)
					abort();
				el[n++] = v.p ? v.p : strdup("");
			} else {
				free(v.p);
			}
			if (*p == ',')
				p++;
		}
		if (n)
			qsort(el, n, sizeof(*el), cmp_str);
		sb_put(out, "[", 1);
		for (size_t i = 0; i < n; i++) {
			if (i)
				sb_put(out, ",\n", 2);
			sb_put(out, el[i], strlen(el[i]));
			free(el[i]);
		}
		free(el);
		sb_put(out, "]", 1);
		*pp = *p ? p + 1 : p;
		return;
	}
	if (*p == '"') {
		const char *e = skip_string(p);

		sb_put(out, p, (size_t)(e - p));
		*pp = e;
		return;
	}
	{
		const char *e = p;

		while (*e && !strchr(",}]", *e) && *e != '\n')
			e++;
		sb_put(out, p, (size_t)(e - p));
		*pp = e;
	}
}

void json_canonical(const char *json, char *out, size_t len)
{
	struct sbuf b = { 0 };
	const char *p = json;
	bool drop = false;

	while (*p == ' ' || *p == '\n')
		p++;
	canon(&p, &b, &drop);
	snprintf(out, len, "%s", b.p ? b.p : "");
	free(b.p);
}
