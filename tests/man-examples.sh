#!/bin/sh
# SPDX-License-Identifier: MIT
# Every C block in the EXAMPLES of every section-3 page compiles and links
# against the library as the page tells a reader to build it, so that the
# examples stay true: a block with "#include" is a whole program; any
# other block that looks like C (a ';' at the end of a line) is refused,
# since a reader cannot build it. Shell lines ("cc hello.c ...") are not C.
set -u

mandir=${TESTS_MAN_DIR:-${abs_top_srcdir:-${srcdir:-.}/..}/man}
top_src=$(cd "$mandir/.." && pwd) || exit 99
top_build=${abs_top_builddir:-$(pwd)}
cc=${CC:-cc}
lib=$top_build/.libs
if [ ! -e "$lib/libibclient.so" ]; then
	echo "man-examples: $lib/libibclient.so is not built"
	exit 99
fi

# libibclient.pc requires libibverbs: pkg-config gives its flags too.
verbs_libs=$(pkg-config --libs libibverbs 2>/dev/null) || verbs_libs=-libverbs
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
status=0
blocks=0
for page in "$mandir"/*.3; do
	# The literal blocks of .Sh EXAMPLES, one file each, roff escapes
	# undone: \e is a backslash, \& is nothing.
	rm -f "$tmp"/block.*
	awk -v out="$tmp/block" '
		/^\.Sh / { ex = ($0 == ".Sh EXAMPLES") }
		ex && /^\.Bd -literal/ { n++; inb = 1; next }
		inb && /^\.Ed/ { inb = 0; next }
		inb { print > (out "." n) }' "$page"
	for b in "$tmp"/block.*; do
		[ -f "$b" ] || continue
		sed -e 's/\\e/\\/g' -e 's/\\&//g' "$b" >"$b.c"
		if ! grep -q '^#include' "$b.c"; then
			if grep -q ';[[:space:]]*$' "$b.c"; then
				echo "FAIL: ${page##*/}: an EXAMPLES block is C" \
					"but not a whole program:"
				sed 's/^/    /' "$b.c"
				status=1
			fi
			continue
		fi
		blocks=$((blocks + 1))
		# As pkg-config --cflags --libs libibclient gives it, from
		# the build tree; SAN_CFLAGS when the library has sanitizers.
		if "$cc" -std=gnu11 -Wall -Wextra -Werror ${SAN_CFLAGS:-} \
			-I"$top_src/include" -o "$b.out" "$b.c" \
			-L"$lib" -libclient $verbs_libs >"$b.log" 2>&1; then
			echo "PASS: ${page##*/}: block ${b##*.}"
		else
			echo "FAIL: ${page##*/}: EXAMPLES block ${b##*.}" \
				"does not build:"
			cat -n "$b.c"
			cat "$b.log"
			status=1
		fi
	done
done
echo "man-examples: $blocks programs built"
[ "$blocks" -gt 0 ] || status=99
exit $status
