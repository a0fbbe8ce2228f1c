// SPDX-License-Identifier: MIT
/* A strict JSON checker for the tests of rdmabrokerctl's --json output. */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "tests/jsoncheck.h"
#include "tests/testlib.h"
struct jp {
	const char *p;
	int depth;
	/* Keys whose values must be arrays, NULL-terminated; NULL: none. */
	const char *const *list_keys;
	char *why;
	size_t why_size;
};

static bool j_value(struct jp *j, const char *key);

static void j_ws(struct jp *j)
{
	while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
		j->p++;
}

static bool j_lit(struct jp *j, const char *lit)
{
	size_t n = strlen(lit);

	if (strncmp(j->p, lit, n) != 0)
		return false;
	j->p += n;
	return true;
}

/* A string; an object's key also into @key (escapes kept, cut at 64). */
static bool j_string(struct jp *j, char *key)
{
	const char *start = j->p + 1;

	if (*j->p != '"')
		return false;
	j->p++;
	for (;;) {
		unsigned char c = (unsigned char)*j->p;

		if (c == '"') {
			if (key) {
				size_t n = (size_t)(j->p - start);

				n = n < 63 ? n : 63;
				memcpy(key, start, n);
				key[n] = '\0';
			}
			j->p++;
			return true;
		}
		if (c < 0x20)
			return false; /* also the end of the text */
		if (c >= 0x80) {
			uint32_t cp;
			int len = tl_utf8_char(j->p, strlen(j->p), &cp);

			if (!len)
				return false; /* not UTF-8 */
			j->p += len;
			continue;
		}
		if (c == '\\') {
			j->p++;
			if (*j->p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!isxdigit((unsigned char)j->p[i]))
						return false;
				j->p += 5;
				continue;
			}
			if (!*j->p || !strchr("\"\\/bfnrt", *j->p))
				return false;
		}
		j->p++;
	}
}

static bool j_number(struct jp *j)
{
	if (*j->p == '-')
		j->p++;
	if (*j->p == '0')
		j->p++;
	else if (*j->p >= '1' && *j->p <= '9')
		while (isdigit((unsigned char)*j->p))
			j->p++;
	else
		return false;
	if (*j->p == '.') {
		j->p++;
		if (!isdigit((unsigned char)*j->p))
			return false;
		while (isdigit((unsigned char)*j->p))
			j->p++;
	}
	if (*j->p == 'e' || *j->p == 'E') {
		j->p++;
		if (*j->p == '+' || *j->p == '-')
			j->p++;
		if (!isdigit((unsigned char)*j->p))
			return false;
		while (isdigit((unsigned char)*j->p))
			j->p++;
	}
	return true;
}

/* An array or object; @count gets the number of members. */
static bool j_container(struct jp *j, char close, int *count)
{
	bool object = close == '}';
	char key[64];

	*count = 0;
	if (++j->depth > 64)
		return false;
	j->p++;
	j_ws(j);
	if (*j->p == close) {
		j->p++;
		j->depth--;
		return true;
	}
	for (;;) {
		j_ws(j);
		if (object) {
			if (!j_string(j, key))
				return false;
			j_ws(j);
			if (*j->p++ != ':')
				return false;
		}
		if (!j_value(j, object ? key : NULL))
			return false;
		(*count)++;
		j_ws(j);
		if (*j->p == ',') {
			j->p++;
			continue;
		}
		if (*j->p != close)
			return false;
		j->p++;
		j->depth--;
		return true;
	}
}

/* Must the value of @key be an array? */
static bool j_list_key(const struct jp *j, const char *key)
{
	for (const char *const *k = j->list_keys; key && k && *k; k++)
		if (strcmp(key, *k) == 0)
			return true;
	return false;
}

static bool j_value(struct jp *j, const char *key)
{
	int n;

	j_ws(j);
	if (*j->p != '[' && j_list_key(j, key)) {
		snprintf(j->why, j->why_size,
			 "\"%s\" holds a list but is not an array", key);
		return false;
	}
	switch (*j->p) {
	case '{':
		return j_container(j, '}', &n);
	case '[':
		return j_container(j, ']', &n);
	case '"':
		return j_string(j, NULL);
	case 't':
		return j_lit(j, "true");
	case 'f':
		return j_lit(j, "false");
	case 'n':
		return j_lit(j, "null");
	default:
		return j_number(j);
	}
}

/* One JSON value and only white space around it. */
static bool json_parse(struct jp *jp, char *ret_kind, int *ret_count)
{
	struct jp j = *jp;
	int n = -1;
	bool ok;

	j_ws(&j);
	*ret_kind = *j.p;
	if (*j.p == '[' || *j.p == '{')
		ok = j_container(&j, *j.p == '[' ? ']' : '}', &n);
	else
		ok = j_value(&j, NULL);
	j_ws(&j);
	*ret_count = n;
	return ok && *j.p == '\0';
}

bool json_valid(const char *text, char *ret_kind, int *ret_count)
{
	char why[8];
	struct jp j = { .p = text, .why = why, .why_size = sizeof(why) };

	return json_parse(&j, ret_kind, ret_count);
}

bool json_shape(const char *text, bool list, const char *const *list_keys,
		char *why, size_t why_size)
{
	struct jp j = { .p = text,
			.list_keys = list_keys,
			.why = why,
			.why_size = why_size };
	const char *q;
	char kind;
	int n;

	*why = '\0';
	if (!json_parse(&j, &kind, &n)) {
		if (!*why)
			snprintf(why, why_size, "not one valid JSON value");
		return false;
	}
	if (kind != (list ? '[' : '{')) {
		snprintf(why, why_size, "not %s",
			 list ? "an array" : "an object");
		return false;
	}
	if (!list)
		return true;
	/* A list's elements are objects: the first says what they are. */
	for (q = strchr(text, '[') + 1; isspace((unsigned char)*q); q++)
		;
	if (*q != ']' && *q != '{') {
		snprintf(why, why_size, "an array of what is not objects");
		return false;
	}
	return true;
}
