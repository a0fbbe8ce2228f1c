#!/bin/sh
# SPDX-License-Identifier: MIT
#
# layout-move: give daemon/ one folder per layer or family, and common/ and
# proto/soft.h folders that say what they are (issue 24 item 8), by git mv
# only, so that history follows each file. Run once, from the top of a
# clean checkout, after every branch of the round is merged:
#   build-aux/layout-move.sh [--dry-run] [--commit]
# It moves each file by the rules below, then rewrites every mention of a
# moved path in the tree's text files (the #include lines, Makefile.am and
# the *.inc files, scripts, documentation, comments) and the layer table of
# tests/include-graph.sh, and stages all of it. --commit commits it as one
# commit that only moves; --dry-run prints the moves and changes nothing.
#
# It refuses (exit 1, nothing changed) when the tree has uncommitted
# changes, when the layout is already applied (a target folder exists), or
# when a file of daemon/ or common/ matches no rule: it names the file, and
# a rule is added below (first match wins) before running it again.
set -eu

dry=0
commit=0
for a in "$@"; do
	case $a in
	--dry-run) dry=1 ;;
	--commit) commit=1 ;;
	-h | --help)
		sed -n '3,19p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "layout-move: unknown argument \"$a\"" >&2
		exit 2
		;;
	esac
done

die() {
	echo "layout-move: $*" >&2
	exit 1
}

[ -f Makefile.am ] && [ -d daemon ] ||
	die "run it from the top of the rdmabroker checkout"
git rev-parse --git-dir >/dev/null 2>&1 || die "not a git checkout"

# The rules: "FOLDER GLOB..." for files directly in daemon/ (FOLDER below
# daemon/; "." stays), then for common/ (below common/). First match wins.
daemon_rules='
families/dm	dm.* dm-*
families/xrcd	xrcd.* xrcd-*
families/rss	rss.* rss-*
families	families.* family.* family-* rekey.* rekey-*
device/soft	device-soft.* soft-*
device/verbs	device-verbs.* uverbs.* verbs-*
device		device.* caps.*
registry	core.* client.h objects.* obj-* unaccounted.* domain.* domain-* user.* user-* policy.* ctx.* ctx-* charge.* charge-* cgroup.* cgroup-*
config		conf.* conf-*
util		log.* queue.h ids.* why.* keysort.*
restart		fdstore.* inflight.* reexec.* fdstore-* journal.* journal-* state.* state-* restart.* restart-* restore.* restore-*
server		server.* handler.* conn.* conn-* dispatch.* main.c sd.* notify.* listen.* runtime.* session.* inspect.* metrics.* metrics-*
.		README.md
'
common_rules='
text		text.*
rss		toeplitz.*
xrcd		xrcd-*
verbs		verbs-* wc-flush.h
device		caps-fields.h
.		families.def
'
# Single files outside those two folders: "FROM TO".
single_moves='
proto/soft.h daemon/device/soft/soft.h
'

# The folder (below $2) of file $1 by the rules $3, or "".
folder_of() {
	printf '%s\n' "$3" | while read -r dir globs; do
		[ -n "$dir" ] || continue
		for g in $globs; do
			# shellcheck disable=SC2254
			case $1 in
			$g)
				echo "$dir"
				return
				;;
			esac
		done
	done
}

moves=$(mktemp)
trap 'rm -f "$moves"' EXIT
unknown=
plan() {
	top=$1
	rules=$2
	for f in $(git ls-files "$top" | sort); do
		rel=${f#"$top"/}
		case $rel in */*) continue ;; esac
		d=$(folder_of "$rel" "$top" "$rules")
		if [ -z "$d" ]; then
			unknown="$unknown $f"
		elif [ "$d" != . ]; then
			echo "$f $top/$d/$rel" >>"$moves"
		fi
	done
}
plan daemon "$daemon_rules"
plan common "$common_rules"
printf '%s\n' "$single_moves" | while read -r from to; do
	[ -n "$from" ] || continue
	[ -e "$from" ] && echo "$from $to" >>"$moves"
	:
done

if [ -n "$unknown" ]; then
	echo "layout-move: no rule for:$unknown" >&2
	die "add a rule for each (the rules at the top of $0); nothing was moved"
fi
[ -s "$moves" ] || die "nothing to move: the layout is applied already"
while read -r from to; do
	[ -e "${to%/*}" ] &&
		die "${to%/*} exists: the layout is applied already"
done <"$moves"
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
	die "the tree has uncommitted changes: commit or stash them first"
fi

if [ "$dry" = 1 ]; then
	sed 's/^/git mv /' "$moves"
	exit 0
fi

while read -r from to; do
	mkdir -p "${to%/*}"
	git mv "$from" "$to"
done <"$moves"

# Every mention of a moved path, as a whole path: not inside a longer one
# ("daemon/dm.c" is not in "daemon/dm.cc" nor "xdaemon/dm.c"), whatever is
# before it ("$(top_srcdir)/daemon/dm.c" and "#include \"daemon/dm.h\""
# both change).
perl_prog=$(awk '{
	printf "s{(?<![\\w.-])\\Q%s\\E(?!\\w)}{%s}g;\n", $1, $2
}' "$moves")
# Not this script: its rules would be rewritten too.
files=$(git ls-files | while read -r f; do
	[ -f "$f" ] && [ ! -L "$f" ] && [ "$f" != build-aux/layout-move.sh ] &&
		printf '%s\n' "$f"
done | xargs grep -lI -E -e 'daemon/|common/|proto/soft\.h' || :)
if [ -n "$files" ]; then
	# shellcheck disable=SC2086
	# A rule line ("--- name (path) ------") longer than 80 columns
	# loses the dashes it has too many.
	printf '%s\n' $files | xargs perl -pi -e 'my $o = $_; '"$perl_prog"'
		if ($_ ne $o && /^(.*?)(-{4,})((?: \*\/)?\n)$/) {
			my ($h, $d, $t) = ($1, $2, $3);
			(my $w = $h) =~ s/\t/        /g;
			my $keep = 80 - length($w) - length($t) + 1;
			$_ = $h . ("-" x $keep) . $t
				if $keep >= 3 && $keep < length($d);
		}'
fi

# tests/include-graph.sh names modules (paths without the extension) in
# "^daemon/(a|b)$" patterns: each name becomes its new path, and a module
# new to daemon/ (soft.h) joins the layer of the modules beside it.
graph=tests/include-graph.sh
if [ -f "$graph" ]; then
	map=$(awk '$1 ~ /^daemon\// {
		a = $1; b = $2
		sub(/^daemon\//, "", a); sub(/\.[ch]$/, "", a)
		sub(/^daemon\//, "", b); sub(/\.[ch]$/, "", b)
		if (a != b)
			print a, b
	}' "$moves" | sort -u)
	add=$(awk '$1 !~ /^daemon\// && $2 ~ /^daemon\// {
		b = $2
		sub(/^daemon\//, "", b); sub(/\.[ch]$/, "", b)
		print b
	}' "$moves" | sort -u)
	MAP="$map" ADD="$add" perl -pi -e '
		BEGIN {
			for (split /\n/, $ENV{MAP}) {
				my ($a, $b) = split / /;
				$m{$a} = $b;
			}
		}
		sub dir { my $d = shift; $d =~ s{/[^/]*$}{}; $d }
		sub group {
			my @g = map { $m{$_} // $_ } split(/\|/, shift);
			for my $n (split /\n/, $ENV{ADD}) {
				push @g, $n if !grep({ $_ eq $n } @g) &&
					grep({ dir($_) eq dir($n) } @g);
			}
			"^daemon/(" . join("|", @g) . ")\$";
		}
		s{\^daemon/\(([^)]*)\)\$}{group($1)}ge;
		s{\^daemon/([\w-]+)\$}{"^daemon/" . ($m{$1} // $1) . "\$"}ge;
' "$graph"
fi

git add -A daemon common proto
# shellcheck disable=SC2086
[ -z "$files" ] || git add $files
[ ! -f "$graph" ] || git add "$graph"
# A longer path can push a comment past 80 columns: name those lines, to
# be reflowed by hand (the rewrite does not reflow prose).
git diff --cached -U0 -M -- '*.c' '*.h' '*.proto' '*.def' | awk '
/^\+\+\+ / { f = substr($0, 7) }
/^\+[^+]/ {
	l = substr($0, 2)
	gsub(/\t/, "        ", l)
	if (length(l) > 80)
		printf "layout-move: over 80 columns: %s: %s\n", f, substr($0, 2)
}' >&2
n=$(wc -l <"$moves")
echo "layout-move: moved $n files and rewrote the paths in" \
     "$(printf '%s\n' $files | grep -c .) files; staged."
if [ "$commit" = 1 ]; then
	git commit -q -m "layout: daemon/ one folder per layer or family, common/ by what it is, soft.h beside the soft device (issue 24 item 8)

Moves only (git mv), by build-aux/layout-move.sh; #include lines,
Makefile.am, the *.inc files, scripts and documentation follow the
paths, and tests/include-graph.sh's layer table the modules."
	git log --oneline -1
else
	echo "layout-move: review with git diff --cached -M, then commit"
fi
