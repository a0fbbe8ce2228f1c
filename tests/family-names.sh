#!/bin/sh
# SPDX-License-Identifier: MIT
#
# family-names: for each resource family (DM, XRCD, RSS), every file outside
# the family's own that names it (issue 24 item 9). Adding a family should
# touch the family's own files and the one list of families only; this
# prints where that is not yet so.
#   tests/family-names.sh [-q] [FAMILY...]     (default: dm xrcd rss)
# Run from anywhere; the tree is $abs_top_srcdir, $srcdir or the script's
# parent folder. -q prints the counts only.
#
# What is scanned: every file of the program's own folders (every top-level
# folder but the ones below that are not the program: tests, man pages,
# examples, benchmarks, packaging, generated output) whose name ends in .c,
# .h, .def, .cc, .am or .ac, every file under completion/, and the top
# Makefile.am. Not scanned, as the issue allows: man/, tests/, the .proto,
# include/ibclient.h, libclient/libibclient.map (the public interface is
# the families' to name), and the family's own files.
#
# A family's own files: any file under a folder named after the family
# (daemon/families/dm/...), any file whose name starts with the family's
# name followed by '.', '-' or '_' (daemon/dm-list.c, libclient/dm-soft.c,
# common/xrcd-name.c, daemon/rss-verbs.c) and ctl/cmd-FAMILY.c.
#
# "Names the family": in C (.c .h .cc .def) an identifier one of whose
# words is the family's word (dm or dms, xrcd or xrcds, rss), words being
# split at '_' and at a lower-to-upper case change (ibc_dm_alloc,
# RDMAB__REQUEST__BODY_DM_ALLOC, Rdmab__DmAllocRequest, srv_xrcds), or an
# #include "..." whose file name has such a word (split at '-', '_', '.':
# "daemon/dm-list.h"); comments and string and character literals do not
# count. In other files (Makefile.am, completion) any such word outside a
# '#' comment counts, quoted or not. Words that merely contain the family's
# (rdmabrokerd, xrc, toeplitz) do not.
#
# The bound: with FAMILY_NAMES_MAX set (make check FAMILY_NAMES_MAX=2), a
# family named in more files than that fails the run (exit 1); unset or
# empty, the lists are only printed. The two files the issue allows are the
# one list of families and the top Makefile.am. A family that not even
# Makefile.am names fails the run whatever the bound: the scan is broken.
set -eu

quiet=0
if [ "${1:-}" = "-q" ]; then
	quiet=1
	shift
fi
[ $# -gt 0 ] || set -- dm xrcd rss

top=${abs_top_srcdir:-}
if [ -z "$top" ] && [ -n "${srcdir:-}" ] && [ -f "$srcdir/Makefile.am" ]; then
	top=$srcdir
fi
if [ -z "$top" ]; then
	top=$(dirname "$0")/..
fi
cd "$top" || exit 99
[ -f Makefile.am ] || { echo "family-names: no Makefile.am in $top" >&2; exit 99; }

# Top-level folders that are not the program.
not_program='^(tests|man|man3|examples|bench|debian|deploy|systemd|m4|build.*|_.*|asan|tsan|autom4te\.cache|\.git|\.ci|\.deps|\.libs)$'

files() {
	echo Makefile.am
	for d in */; do
		d=${d%/}
		printf '%s\n' "$d" | grep -Eq "$not_program" && continue
		if [ "$d" = completion ]; then
			find "$d" -type f
			continue
		fi
		find "$d" -type f \( -name '*.c' -o -name '*.h' -o -name '*.def' \
			-o -name '*.cc' -o -name '*.am' -o -name '*.ac' \) \
			! -name '*.pb-c.*'
	done | grep -Ev '^(include/ibclient\.h|libclient/libibclient\.map)$' || :
}

# One line per file that names a family: "FAMILY PATH WORD..." (the first
# identifiers or words that name it, at most four, for the reader).
scan() {
	for f in $(files | sort); do
		case $f in
		*.c | *.h | *.cc | *.def) kind=c ;;
		*) kind=text ;;
		esac
		awk -v kind="$kind" -v fams="$*" -v path="$f" '
function own(fam,    n, parts, i, base) {
	n = split(path, parts, "/")
	for (i = 1; i < n; i++)
		if (parts[i] == fam)
			return 1
	base = parts[n]
	if (index(base, fam) == 1 &&
	    substr(base, length(fam) + 1, 1) ~ /^[-_.]$/)
		return 1
	if (base == "cmd-" fam ".c")
		return 1
	return 0
}
# The family a word is, or "".
function fam_of(w,    i) {
	w = tolower(w)
	for (i = 1; i <= nf; i++)
		if (w == fam[i] || w == fam[i] "s")
			return fam[i]
	return ""
}
# Split an identifier or path into words and note every family it names.
function note(tok,    t, n, ws, i, g) {
	t = tok
	# a lower case letter or digit followed by an upper case one: a word
	# boundary (DmAlloc); so is every character but letters and digits
	while (match(t, /[a-z0-9][A-Z]/))
		t = substr(t, 1, RSTART) "_" substr(t, RSTART + 1)
	gsub(/[^A-Za-z0-9]+/, "_", t)
	n = split(t, ws, "_")
	for (i = 1; i <= n; i++) {
		g = fam_of(ws[i])
		if (g != "" && !skip[g] && !((g, tok) in seen)) {
			seen[g, tok] = 1
			if (cnt[g]++ < 4)
				what[g] = what[g] " " tok
		}
	}
}
# Identifiers of a line of C with literals and comments already removed.
function words(s,    tok) {
	while (match(s, /[A-Za-z_][A-Za-z0-9_]*/)) {
		# note() matches too: RSTART and RLENGTH are read first
		tok = substr(s, RSTART, RLENGTH)
		s = substr(s, RSTART + RLENGTH)
		note(tok)
	}
}
BEGIN {
	nf = split(fams, fam, " ")
	for (i = 1; i <= nf; i++)
		skip[fam[i]] = own(fam[i])
	incomment = 0
}
kind == "text" {
	sub(/(^|[ \t])#.*$/, "")
	s = $0
	while (match(s, /[A-Za-z0-9_.\/-]+/)) {
		tok = substr(s, RSTART, RLENGTH)
		s = substr(s, RSTART + RLENGTH)
		note(tok)
	}
	next
}
{
	line = $0
	if (!incomment && line ~ /^[ \t]*#[ \t]*include[ \t]*"/) {
		inc = line
		sub(/^[^"]*"/, "", inc)
		sub(/".*$/, "", inc)
		note(inc)
		next
	}
	out = ""
	i = 1
	n = length(line)
	while (i <= n) {
		c = substr(line, i, 1)
		if (incomment) {
			if (substr(line, i, 2) == "*/") {
				incomment = 0
				i += 2
			} else {
				i++
			}
			continue
		}
		if (substr(line, i, 2) == "/*") {
			incomment = 1
			out = out " "
			i += 2
			continue
		}
		if (substr(line, i, 2) == "//")
			break
		if (c == "\"" || c == "\047") {
			q = c
			i++
			while (i <= n && substr(line, i, 1) != q)
				i += substr(line, i, 1) == "\\" ? 2 : 1
			i++
			out = out " "
			continue
		}
		out = out c
		i++
	}
	words(out)
}
END {
	for (i = 1; i <= nf; i++)
		if (cnt[fam[i]])
			print fam[i], path what[fam[i]]
}' "$f"
	done
}

result=$(scan "$@")
fail=0
for fam in "$@"; do
	n=$(printf '%s\n' "$result" | awk -v f="$fam" '$1 == f' | wc -l)
	echo "$fam: $n files outside its own name it"
	if [ "$quiet" = 0 ]; then
		printf '%s\n' "$result" | awk -v f="$fam" '$1 == f {
			printf "  %s:", $2
			for (i = 3; i <= NF; i++)
				printf " %s", $i
			printf "\n"
		}'
	fi
	# Makefile.am lists every family's files: a family found nowhere
	# means the scan itself is broken, not that the family is clean.
	if ! printf '%s\n' "$result" | grep -q "^$fam Makefile.am "; then
		echo "family-names: $fam not found even in Makefile.am:" \
		     "the scan is broken" >&2
		fail=1
	fi
	if [ -n "${FAMILY_NAMES_MAX:-}" ] && [ "$n" -gt "$FAMILY_NAMES_MAX" ]; then
		echo "family-names: $fam is named in $n files, more than" \
		     "FAMILY_NAMES_MAX=$FAMILY_NAMES_MAX" >&2
		fail=1
	fi
done
exit $fail
