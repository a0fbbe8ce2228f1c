#!/bin/sh
# SPDX-License-Identifier: MIT
# Print a version script that defines every version node of the real
# libibverbs ($2, read with readelf $1) and no symbol: the forwarding
# libibverbs.so.1 must satisfy what programs and providers linked against
# libibverbs.so.1 require (IBVERBS_1.x, IBVERBS_PRIVATE_xx); its symbols
# are its dependencies', the interposer's first.
set -eu
readelf=${1:-readelf}
lib=$2
nodes=$("$readelf" -V --wide "$lib" |
	sed -n '/^Version definition section/,/^Version needs section/p' |
	sed -n 's/.*Name: \(IBVERBS_[A-Za-z0-9_.]*\).*/\1/p')
if [ -z "$nodes" ]; then
	echo "forward-map.sh: no IBVERBS_ version in $lib" >&2
	exit 1
fi
first=1
for n in $nodes; do
	if [ $first = 1 ]; then
		printf '%s { local: *; };\n' "$n"
		first=0
	else
		printf '%s { };\n' "$n"
	fi
done
