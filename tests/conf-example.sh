#!/bin/sh
# SPDX-License-Identifier: MIT
# examples/rdmabroker.conf, installed under the documentation directory,
# stays true: every key rdmabroker.conf(5) documents is in it, and with
# every "#" of a key or section removed it is a valid configuration
# (rdmabrokerd --check-config exits 0).
set -u

src=${abs_top_srcdir:-${srcdir:-.}}
example=$src/examples/rdmabroker.conf
page=${TESTS_MAN_DIR:-$src/man}/rdmabroker.conf.5
daemon=${RDMABROKERD:-./rdmabrokerd}
status=0

# ".It Cm key Ns = ..." and ".It Cm a , b , c" (the quota keys of a domain).
keys=$(sed -n 's/^\.It Cm \([a-z_]*\) Ns =.*/\1/p' "$page")
[ -n "$keys" ] || { echo "no keys found in $page"; exit 99; }
for k in $keys; do
	if ! grep -q "^#$k = " "$example"; then
		echo "FAIL: key $k of rdmabroker.conf(5) is not in $example"
		status=1
	fi
done

tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
sed -e 's/^#\([a-z_]* = \)/\1/' -e 's/^#\(\[\)/\1/' "$example" \
	>"$tmp/all.conf"
if ! out=$("$daemon" --check-config "$tmp/all.conf" 2>&1); then
	echo "FAIL: the example with every key set is not valid:"
	printf '%s\n' "$out"
	status=1
else
	printf '%s\n' "$out"
fi
# As shipped (all commented), too.
"$daemon" --check-config "$example" || status=1
exit $status
