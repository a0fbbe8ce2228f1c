#!/bin/sh
# SPDX-License-Identifier: MIT
# Lint every man page under man/ with mandoc -Tlint -Wwarning; skipped (77)
# without mandoc. A page that is only a ".so man3/target.3" alias must open
# from the source tree as `man -l man/alias.3` does, which resolves the .so
# against the working directory: run from the tree's top, where the man3
# link points at man/. And every command rdmabrokerctl lists must be an
# ".It Cm" of rdmabrokerctl(8)'s COMMANDS section, none outside it.
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
mandir=$(cd "$mandir" && pwd) || exit 99
top=$(dirname "$mandir")
# A release tarball has no links: there the man3 link is made aside. In a
# checkout it must be the repository's own.
if [ ! -e "$top/man3" ] && [ ! -e "$top/.git" ]; then
	tmp=$(mktemp -d) || exit 99
	trap 'rm -rf "$tmp"' EXIT
	mkdir "$tmp/top"
	ln -s "$mandir" "$tmp/top/man"
	ln -s "$mandir" "$tmp/top/man3"
	top=$tmp/top
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
			# What the reader sees, from the top of the tree.
			out=$(cd "$top" && "$mandoc" -Tascii "man/${page##*/}" 2>&1)
			name=$(basename "$target" .3 | tr '[:lower:]' '[:upper:]')
			if [ -f "$mandir/${target##*/}" ] &&
				printf '%s\n' "$out" | grep -q "^$name(3)"; then
				echo "PASS: $page (alias of $target)"
			else
				echo "$page: .so $target does not open from $top"
				printf '%s\n' "$out" | head -n 3
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

# rdmabrokerctl(8): each command in COMMANDS, and only there.
ctl=${RDMABROKERCTL:-}
page=$mandir/rdmabrokerctl.8
if [ -n "$ctl" ] && [ -x "$ctl" ]; then
	cmds=$("$ctl" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z]*\) .*/\1/p')
	[ -n "$cmds" ] || { echo "man-lint: no commands from $ctl"; exit 99; }
	for c in $cmds; do
		where=$(awk -v c="$c" '
			/^\.Sh / { sh = substr($0, 5) }
			$1 == ".It" && $2 == "Cm" && $3 == c { print sh }' "$page")
		if [ -z "$where" ]; then
			echo "$page: command $c is not documented"
			status=1
		fi
		printf '%s\n' "$where" | while IFS= read -r sh; do
			[ -z "$sh" ] || [ "$sh" = COMMANDS ] && continue
			echo "$page: command $c is documented under .Sh $sh," \
				"not COMMANDS"
			exit 1
		done || status=1
	done
	[ $status -eq 0 ] && echo "PASS: $page: every command under COMMANDS"
else
	echo "man-lint: RDMABROKERCTL is not set; the COMMANDS check is skipped"
fi
exit $status
