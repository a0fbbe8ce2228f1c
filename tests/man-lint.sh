#!/bin/sh
# SPDX-License-Identifier: MIT
# Lint every man page under man/ with mandoc -Tlint -Wwarning; skipped (77)
# without mandoc. A page that is only a ".so manN/target.N" alias is checked
# for its target instead: mandoc resolves .so against the installed
# hierarchy, which the source tree does not have.
set -u

mandir=${TESTS_MAN_DIR:-${abs_top_srcdir:-${srcdir:-.}/..}/man}
mandoc=${MANDOC:-}
if [ -z "$mandoc" ]; then
	mandoc=$(command -v mandoc 2>/dev/null) || mandoc=
fi
if [ -z "$mandoc" ]; then
	echo "man-lint: mandoc is not installed; skipping"
	exit 77
fi

status=0
count=0
for page in "$mandir"/*.[0-9]; do
	[ -f "$page" ] || continue
	count=$((count + 1))
	# Lines that are not comments: exactly one ".so X" makes an alias.
	body=$(grep -v '^\.\\"' "$page" | grep -v '^[[:space:]]*$')
	case $body in
	.so\ *)
		if [ "$(printf '%s\n' "$body" | wc -l)" -eq 1 ]; then
			target=${body#.so }
			if [ -f "$mandir/${target##*/}" ]; then
				echo "PASS: $page (alias of $target)"
			else
				echo "$page: .so target $target does not exist"
				echo "FAIL: $page"
				status=1
			fi
			continue
		fi
		;;
	esac
	if out=$("$mandoc" -Tlint -Wwarning "$page" 2>&1) && [ -z "$out" ]; then
		echo "PASS: $page"
	else
		printf '%s\n' "$out"
		echo "FAIL: $page"
		status=1
	fi
done
if [ "$count" -eq 0 ]; then
	echo "man-lint: no man pages in $mandir"
	exit 99
fi
exit $status
