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
# name followed by '.', '-' or '_' (daemon/families/dm/dm-list.c, libclient/dm-soft.c,
# common/xrcd/xrcd-name.c, daemon/families/rss/rss-verbs.c) and ctl/cmd-FAMILY.c.
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
# The device layer: libibverbs' objects and what the daemon does in the
# kernel's place carry family names that are verbs, not the family's module
# (ibv_alloc_dm, the soft device's XRCD inode, ibc_ops' DM calls). Its
# files are daemon/device/ (the soft and verbs devices, uverbs.c among
# them), common/device/ (caps-fields.h: the device's limits as
# ibv_query_device_ex(3) reports them, max_dm_size and rss_caps among
# them, the one list the daemon, the library and ctl walk so that their
# listings name no family), libclient/verbs.c, libclient/soft.c and
# interpose/. They are listed and counted like any other (marked "[device
# layer]"); each family's line also gives the count without them. Nothing
# is left out of the bound.
#
# The bound: with FAMILY_NAMES_MAX set, a family named in more files than
# it allows fails the run (exit 1): a number bounds every family (make
# check FAMILY_NAMES_MAX=2), "dm=39 rss=19" each family named (the others
# are not bounded); unset or empty, the lists are only printed.
# FAMILY_NAMES_MAX_OUTSIDE bounds, as one number, the files outside the
# device layer that name a family (make check sets it to 2: the list of
# families and the top Makefile.am). tests/
# Makefile.inc sets today's counts, so that none can grow; lower them as
# names go. The two files the issue allows are the one list of families
# and the top Makefile.am. A family that not even Makefile.am names fails
# the run whatever the bound: the scan is broken.
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

# The device layer's files (see the header).
device_layer='^(daemon/device([^/]*|/.*)|common/device/.*|libclient/verbs\.c|libclient/soft\.c|interpose/.*)$'

# The bound FAMILY_NAMES_MAX sets for family $1; empty for none.
bound() {
	case ${FAMILY_NAMES_MAX:-} in
	'' | *[!0-9]*) ;;
	*)
		echo "$FAMILY_NAMES_MAX"
		return
		;;
	esac
	for b in ${FAMILY_NAMES_MAX:-}; do
		case $b in
		"$1"=*) echo "${b#*=}" ;;
		esac
	done
}

result=$(scan "$@")
fail=0
for fam in "$@"; do
	n=$(printf '%s\n' "$result" | awk -v f="$fam" '$1 == f' | wc -l)
	d=$(printf '%s\n' "$result" | awk -v f="$fam" '$1 == f { print $2 }' |
		grep -Ec "$device_layer" || :)
	echo "$fam: $n files outside its own name it" \
	     "($((n - d)) outside the device layer too)"
	if [ "$quiet" = 0 ]; then
		printf '%s\n' "$result" | awk -v f="$fam" -v dl="$device_layer" '
		$1 == f {
			printf "  %s:", $2
			for (i = 3; i <= NF; i++)
				printf " %s", $i
			if ($2 ~ dl)
				printf " [device layer]"
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
	max=$(bound "$fam")
	if [ -n "$max" ] && [ "$n" -gt "$max" ]; then
		echo "family-names: $fam is named in $n files, more than" \
		     "its bound $max (FAMILY_NAMES_MAX=$FAMILY_NAMES_MAX)" >&2
		fail=1
	fi
	# Outside the device layer the issue's bound holds as it is: the
	# list of families and Makefile.am.
	if [ -n "${FAMILY_NAMES_MAX_OUTSIDE:-}" ] &&
	   [ "$((n - d))" -gt "$FAMILY_NAMES_MAX_OUTSIDE" ]; then
		echo "family-names: $fam is named in $((n - d)) files outside" \
		     "the device layer, more than" \
		     "FAMILY_NAMES_MAX_OUTSIDE=$FAMILY_NAMES_MAX_OUTSIDE" >&2
		fail=1
	fi
done
exit $fail
