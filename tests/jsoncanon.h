/* SPDX-License-Identifier: MIT */
#ifndef RDMAB_TESTS_JSONCANON_H
#define RDMAB_TESTS_JSONCANON_H

#include <stddef.h>

/*
 * @json (one value, as rdmabrokerctl --json prints it) in canonical form
 * into @out (cut at @len): objects keep their keys in order less those
 * whose values move by themselves (times, ages, request counters), arrays
 * are sorted (a listing's order may change across a restore), and an
 * object of rdmabrokerctl's own session ("comm":"rdmabrokerctl") is
 * dropped from its array.
 */
void json_canonical(const char *json, char *out, size_t len);

#endif
