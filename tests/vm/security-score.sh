#!/bin/sh
# SPDX-License-Identifier: MIT
# The service unit's sandbox, scored offline by `systemd-analyze security`:
# the exposure must be at most 2.0 (DESIGN.md §10; a daemon that opens
# /dev/infiniband/uverbs* and needs CAP_NET_RAW cannot reach 0). Runs on the
# host, from the build directory (make check), on the generated unit.
# Exit 77 (skipped) where systemd-analyze is missing or has no --offline
# (systemd < 250).
#
# Environment: RDMABROKER_UNIT (default systemd/rdmabrokerd.service),
# RDMABROKER_MAX_EXPOSURE (default 2.0).
unit=${RDMABROKER_UNIT:-systemd/rdmabrokerd.service}
max=${RDMABROKER_MAX_EXPOSURE:-2.0}

if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "security-score: SKIP: no systemd-analyze"
	exit 77
fi
if ! systemd-analyze security --help 2>&1 | grep -q -- '--offline'; then
	echo "security-score: SKIP: systemd-analyze security has no --offline ($(systemd-analyze --version | head -n 1))"
	exit 77
fi
if [ ! -f "$unit" ]; then
	echo "security-score: FAIL: no $unit (make builds it from systemd/rdmabrokerd.service.in)"
	exit 1
fi

out=$(systemd-analyze security --offline=true --no-pager "$unit" 2>&1)
score=$(printf '%s\n' "$out" |
	sed -n 's/.*Overall exposure level for [^:]*: \([0-9][0-9.]*\).*/\1/p')
if [ -z "$score" ]; then
	printf '%s\n' "$out"
	echo "security-score: FAIL: systemd-analyze gave no exposure level for $unit"
	exit 1
fi
if awk -v s="$score" -v m="$max" 'BEGIN { exit !(s <= m) }'; then
	echo "security-score: PASS: $unit exposure $score (at most $max)"
	exit 0
fi
# What costs the most, for whoever has to fix it.
printf '%s\n' "$out" | grep '^✗' | head -n 15
echo "security-score: FAIL: $unit exposure $score, more than $max"
exit 1
