/* SPDX-License-Identifier: MIT */
#ifndef RDMAB_TESTS_JSONCHECK_H
#define RDMAB_TESTS_JSONCHECK_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Is @text exactly one JSON value (surrounded by white space), strings valid
 * UTF-8? *ret_kind gets its first character, *ret_count the members of a
 * top-level array or object.
 */
bool json_valid(const char *text, char *ret_kind, int *ret_count);
/*
 * rdmabrokerctl's JSON rule: @text is valid JSON and, with @list, an array
 * of objects, else one object; wherever a key of @list_keys (NULL-ended)
 * appears, its value is an array. Otherwise false, and why in @why.
 */
bool json_shape(const char *text, bool list, const char *const *list_keys,
		char *why, size_t why_size);

#endif
