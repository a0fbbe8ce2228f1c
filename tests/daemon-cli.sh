#!/bin/sh
# SPDX-License-Identifier: MIT
# rdmabrokerd's start-up as an operator meets it: --check-config [FILE]
# exits 0 for a valid file (and names what matches nobody) and 1 for a bad
# or missing one; a missing --config file and a socket that cannot be bound
# say what to do; the unit reloads with ExecReload=.
set -u

daemon=${RDMABROKERD:-./rdmabrokerd}
unit=${abs_top_builddir:-.}/systemd/rdmabrokerd.service
status=0
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

fail() {
	echo "FAIL: $*"
	status=1
}

# expect RC PATTERN COMMAND...: exit status RC, output matching PATTERN.
expect() {
	rc=$1 pat=$2
	shift 2
	out=$("$@" 2>&1)
	got=$?
	printf '$ %s\n%s\n' "$*" "$out"
	[ "$got" -eq "$rc" ] || fail "$*: exit $got, expected $rc"
	printf '%s\n' "$out" | grep -q -- "$pat" ||
		fail "$*: no \"$pat\" in the output"
}

printf '[defaults]\nxrcds = 4\n[domain lab]\nusers = 0\n' >"$tmp/good.conf"
expect 0 "good.conf: valid: 1 domain" "$daemon" --check-config "$tmp/good.conf"
expect 0 "valid: 1 domain" "$daemon" --check-config="$tmp/good.conf"
expect 0 "valid: 1 domain" "$daemon" --config "$tmp/good.conf" --check-config

printf '[domain lab]\nusers = 4294967\ngroups = 4294968\n' >"$tmp/nobody.conf"
expect 0 "matches no user: nobody can join it" \
	"$daemon" --check-config "$tmp/nobody.conf"
expect 0 "gid 4294968 has no members" \
	"$daemon" --check-config "$tmp/nobody.conf"

printf '[defaults]\nxrcds = 4\n[defaults]\nclients = 3\n' >"$tmp/twice.conf"
expect 1 "twice.conf:3: \[defaults\] is given twice" \
	"$daemon" --check-config "$tmp/twice.conf"
printf '[domain lab]\nusers = no_such_user_rdmab\n' >"$tmp/bad.conf"
expect 1 'bad.conf:2: \[domain lab\] key "users"' \
	"$daemon" --check-config "$tmp/bad.conf"
expect 1 "without --config the daemon runs on the built-in defaults" \
	"$daemon" --check-config "$tmp/nope.conf"

# A missing --config file stops the daemon with the same sentence.
expect 1 "nope.conf: No such file or directory: a configuration file" \
	"$daemon" --device soft --config "$tmp/nope.conf" \
	--socket "$tmp/s.sock" --runtime-dir "$tmp"

# A socket path it cannot bind: what to give instead.
expect 1 "give --socket a path in a directory you may write" \
	"$daemon" --device soft --config "$tmp/good.conf" \
	--socket "$tmp/no/such/dir/s.sock" --runtime-dir "$tmp"

# Cgroup globs (issue 26): one that matches every cgroup and one that
# matches none are named; a domain of cgroups alone is not "no user".
printf '[domain pods]\ncgroups = *, /no-such-rdmab-cgroup\n' >"$tmp/cg.conf"
expect 0 '"\*" matches every cgroup' "$daemon" --check-config "$tmp/cg.conf"
expect 0 '"/no-such-rdmab-cgroup" matches no cgroup' \
	"$daemon" --check-config "$tmp/cg.conf"
"$daemon" --check-config "$tmp/cg.conf" 2>&1 | grep -q "matches no user" &&
	fail "a domain of cgroups alone is said to match no user"

# A SIGHUP that comes before the daemon's handlers are in place (a reload
# asked as soon as it starts) is served once they are, not fatal and not
# lost: the daemon starts with it pending and blocked, as an exec from a
# parent that blocked it leaves it.
if command -v perl >/dev/null 2>&1; then
	perl -MPOSIX -e 'sigprocmask(SIG_BLOCK, POSIX::SigSet->new(SIGHUP));
		kill "HUP", $$; exec @ARGV or exit 127' \
		"$daemon" --device soft --config "$tmp/good.conf" \
		--socket "$tmp/hup.sock" --runtime-dir "$tmp" \
		>"$tmp/hup.log" 2>&1 &
	hup=$!
	for _ in $(seq 100); do
		grep -q "configuration reloaded" "$tmp/hup.log" && break
		kill -0 "$hup" 2>/dev/null || break
		sleep 0.1
	done
	grep -q "configuration reloaded" "$tmp/hup.log" ||
		fail "a SIGHUP pending at start was not served: $(cat "$tmp/hup.log")"
	kill -TERM "$hup" 2>/dev/null
	wait "$hup"
else
	echo "SKIP: no perl to start the daemon with a SIGHUP pending"
fi

# systemctl reload sends what the daemon rereads its configuration on.
if [ -f "$unit" ]; then
	grep -q '^ExecReload=/bin/kill -HUP \$MAINPID$' "$unit" ||
		fail "$unit has no ExecReload= sending SIGHUP"
else
	fail "$unit was not built"
fi
exit $status
