#!/bin/bash
# SPDX-License-Identifier: MIT
# rdmabrokerctl cdi against a broker on the software device: the whole spec
# (it has no device node there: the soft device needs none), --pretty, -o
# (a rename: a runtime watching the directory never reads half a file),
# the socket's real path in the mount, and the usage errors. The verbs
# part (uverbs nodes, sysfs mounts) needs a uverbs device: check-vm's cdi
# section checks it on rxe.
set -u

ctl=${RDMABROKERCTL:-./rdmabrokerctl}
daemon=${RDMABROKERD:-./rdmabrokerd}
status=0
tmp=$(mktemp -d) || exit 99
pid=
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; wait; rm -rf "$tmp"' EXIT

fail() {
	echo "FAIL: $*"
	status=1
}

# expect_exit CODE WHAT ARGS...: rdmabrokerctl ARGS exits CODE.
expect_exit() {
	local want=$1 what=$2 got
	shift 2
	"$ctl" "$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	[[ $got == "$want" ]] ||
		fail "$what: exit $got, expected $want: $(cat "$tmp/out" "$tmp/err")"
}

mkdir "$tmp/run" "$tmp/real"
sock=$tmp/real/broker.sock
"$daemon" --foreground --device soft --config /dev/null \
	--socket "$sock" --runtime-dir "$tmp/run" 2>"$tmp/daemon.log" &
pid=$!
for _ in $(seq 100); do
	[[ -S $sock ]] && break
	sleep 0.1
done
[[ -S $sock ]] || { cat "$tmp/daemon.log"; echo "FAIL: no daemon"; exit 1; }
ln -s real "$tmp/link"

want='{"cdiVersion":"0.5.0","kind":"rdmabroker.io/broker","devices":[{"name":"broker","containerEdits":{"env":["RDMABROKER_SOCKET=/run/rdmabroker.sock"],"deviceNodes":[],"mounts":[{"hostPath":"'$sock'","containerPath":"/run/rdmabroker.sock","type":"bind","options":["bind","ro","nosuid","nodev","noexec"]}]}}]}'

# The socket through a symbolic link: the mount names the real file.
got=$("$ctl" --socket "$tmp/link/broker.sock" cdi) || fail "cdi: exit $?"
[[ $got == "$want" ]] || fail "cdi printed
$got
expected
$want"
got=$(RDMABROKER_SOCKET=$sock "$ctl" cdi --kind example.com/rdma_broker \
	--container-socket /var/run/b.sock)
w2=${want/rdmabroker.io\/broker/example.com\/rdma_broker}
w2=${w2//\/run\/rdmabroker.sock/\/var\/run\/b.sock}
[[ $got == "$w2" ]] || fail "--kind, --container-socket: $got"

# --pretty: the same JSON, indented.
got=$("$ctl" -s "$sock" -p cdi)
[[ $(wc -l <<<"$got") -gt 20 && $(tr -d ' \n' <<<"$got") == "$want" ]] ||
	fail "cdi --pretty: $got"

# -o: the same text, 0644, nothing left beside it, and a second write
# replaces the file (a new inode: renamed over it, not rewritten).
mkdir "$tmp/cdi"
"$ctl" -s "$sock" cdi -o "$tmp/cdi/rdmabroker.json" || fail "cdi -o: exit $?"
[[ $(cat "$tmp/cdi/rdmabroker.json") == "$want" ]] ||
	fail "cdi -o wrote $(cat "$tmp/cdi/rdmabroker.json")"
[[ $(stat -c %a "$tmp/cdi/rdmabroker.json") == 644 ]] ||
	fail "cdi -o: mode $(stat -c %a "$tmp/cdi/rdmabroker.json")"
ino=$(stat -c %i "$tmp/cdi/rdmabroker.json")
"$ctl" -s "$sock" cdi --output "$tmp/cdi/rdmabroker.json" ||
	fail "cdi --output again: exit $?"
[[ $(stat -c %i "$tmp/cdi/rdmabroker.json") != "$ino" ]] ||
	fail "cdi -o rewrote the file in place"
[[ $(ls "$tmp/cdi") == rdmabroker.json ]] ||
	fail "cdi -o left: $(ls "$tmp/cdi")"
expect_exit 1 "-o into a missing directory" -s "$sock" cdi -o "$tmp/none/x.json"
grep -q "$tmp/none/x.json" "$tmp/err" ||
	fail "-o error does not name the file: $(cat "$tmp/err")"

# Usage errors: kinds CDI refuses (podman 4.3 crashes on a one-letter
# class), paths a container cannot use.
for kind in x/y ab ab/ /ab 1ab/cd ab/c.d a-/cd ab/cd- 'ab/c d'; do
	expect_exit 2 "--kind '$kind'" -s "$sock" cdi --kind "$kind"
	grep -q "See 'rdmabrokerctl help cdi'" "$tmp/err" ||
		fail "--kind '$kind': $(cat "$tmp/err")"
done
long=/$(printf 'a%.0s' $(seq 110))
for p in run/b.sock "$long" $'/run/b\e[31m.sock'; do
	expect_exit 2 "--container-socket ${p:0:20}" -s "$sock" cdi \
		--container-socket "$p"
done
expect_exit 2 "cdi --kind without a value" -s "$sock" cdi --kind
expect_exit 2 "cdi frobnicate" -s "$sock" cdi frobnicate

# --daemon: every uverbs node of the host, and no broker asked (none
# here: this kernel has no RDMA, which the spec says with no node).
if compgen -G '/sys/class/infiniband_verbs/uverbs*' >/dev/null; then
	echo "cdi --daemon's node list is checked in check-vm (this host has uverbs devices)"
else
	got=$("$ctl" -s "$tmp/none.sock" cdi --daemon)
	[[ $got == '{"cdiVersion":"0.5.0","kind":"rdmabroker.io/daemon","devices":[{"name":"uverbs","containerEdits":{"deviceNodes":[]}}]}' ]] ||
		fail "cdi --daemon: $got"
fi
expect_exit 2 "--daemon --container-socket" -s "$sock" cdi --daemon \
	--container-socket /run/b.sock

# No broker: the socket is missing, or nothing listens on it.
expect_exit 1 "a missing socket" -s "$tmp/none.sock" cdi
: >"$tmp/plain"
expect_exit 1 "a file that is no socket" -s "$tmp/plain" cdi
# A path the host cannot show: refused, and not echoed raw.
mkdir "$tmp/"$'\e[31mred'
expect_exit 1 "a socket path with an escape" -s "$tmp/"$'\e[31mred/s.sock' cdi
grep -q $'\e' "$tmp/err" && fail "an escape reached stderr raw"

[[ $status == 0 ]] && echo "cdi: all passed"
exit $status
