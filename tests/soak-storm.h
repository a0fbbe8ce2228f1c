/* SPDX-License-Identifier: MIT */
/* The rekey storm of make check-soak (soak-storm.c). */
#ifndef RDMAB_TESTS_SOAK_STORM_H
#define RDMAB_TESTS_SOAK_STORM_H

#include <stddef.h>
#include <stdint.h>

/*
 * On a daemon of its own: @kills clients SIGKILLed at random points of
 * random requests over every object family (@seed fixes the requests and
 * the delays), then a forced rekey of their domain. 0 once the registry
 * is empty, the domain charged nothing and the daemon's descriptors back
 * at their count at start; -errno with @why otherwise.
 */
int soak_storm(uint64_t seed, unsigned long kills, char *why, size_t len);

#endif
