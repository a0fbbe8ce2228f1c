#!/bin/sh
# SPDX-License-Identifier: MIT
# libibclient-verbs on the soft device (issue 28): its symbols are
# libibverbs' at the installed versions and none is of the data path;
# Debian's ibv_devinfo under it lists the broker's device, preloaded and
# through the forwarding libibverbs.so.1; an unmodified verbs program's
# objects are in the broker's registry while it runs, go with its destroys
# (EBUSY for a CQ in use, as the kernel answers), and the broker destroys
# them when it is SIGKILLed; a program that dlopens libibverbs and resolves
# with dlvsym gets the same through the forwarder alone; rdmabroker-run
# sets both up. RSS without CAP_NET_RAW through the broker; RDMABROKER_PD;
# bad input (EBUSY for a PD in use, destroys twice, fork mid-call) with the
# broker's books exact after each.
# INTERPOSE_DEVICE=verbs (make check-hw) runs it on the first mlx5 device
# instead: the domain's context imported, the program's objects made in it
# and registered (its PD too: 6 objects); exits 77 without mlx5.
# Unverified on hardware.
set -u
kind=${INTERPOSE_DEVICE:-soft}

top=${abs_top_builddir:-.}
daemon=${RDMABROKERD:-$top/rdmabrokerd}
ctl=${RDMABROKERCTL:-$top/rdmabrokerctl}
interp=$top/interpose/.libs/libibclient-verbs.so
fwd=$top/interpose/.libs/verbs
prog=$top/tests/interpose-prog
real=$(sed -n 's/^#define IBVERBS_REAL_PATH "\(.*\)"$/\1/p' "$top/config.h")
status=0
tmp=$(mktemp -d) || exit 99
dpid=
cleanup() {
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null && wait "$dpid"
	rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	status=1
}

# Under ASan the interposer needs the runtime that instrumented programs
# carry (clang links it into each): Debian's ibv_devinfo has none.
asan=0
case "${SAN_CFLAGS:-}" in
*sanitize=address*) asan=1 ;;
esac

# --- the symbol table ----------------------------------------------------
objdump -T "$interp" | awk '$2 == "g" && $4 != "*UND*" && $NF ~ /^ibv_/ {
	print $(NF-1), $NF }' >"$tmp/ours"
[ -s "$tmp/ours" ] || fail "$interp exports no ibv_ symbol"
objdump -T "$real" | awk '$NF ~ /^ibv_/ && $(NF-1) !~ /^\(/ {
	print $(NF-1), $NF }' >"$tmp/real"
while read -r ver name; do
	grep -qx "$ver $name" "$tmp/real" ||
		fail "$name@@$ver: $real defines no such default version"
done <"$tmp/ours"
# The data path stays the provider's: nothing that posts, polls, arms,
# modifies or queries an object is defined here.
if grep -E 'post|poll|notify|cq_event|modify|query_(qp|srq|ece)|resize' \
	"$tmp/ours"; then
	fail "the interposer defines data-path symbols (above)"
fi
echo "$(wc -l <"$tmp/ours") symbols at libibverbs' versions, none of the data path"

# --- a broker on the soft device (or mlx5) -------------------------------
if [ "$kind" = verbs ]; then
	dev=$(ibv_devices 2>/dev/null | awk '$1 ~ /^mlx5/ { print $1; exit }')
	[ -n "$dev" ] || { echo "no mlx5 device: skipped"; exit 77; }
	held=6
else
	dev=soft0
	held=5
fi
sock=$tmp/s.sock
"$daemon" --foreground --device "$kind" --socket "$sock" --runtime-dir "$tmp" \
	--log-level debug >"$tmp/daemon.log" 2>&1 &
dpid=$!
for _ in $(seq 50); do
	[ -S "$sock" ] && break
	sleep 0.1
done
[ -S "$sock" ] || { cat "$tmp/daemon.log"; exit 99; }
RDMABROKER_SOCKET=$sock
export RDMABROKER_SOCKET

# objects PID: how many registry objects process PID owns.
objects() {
	"$ctl" --json objects | grep -o "\"pid\":$1[,}]" | wc -l
}

if [ $asan = 1 ]; then
	echo "ibv_devinfo: not run under ASan (it carries no ASan runtime)"
elif command -v ibv_devinfo >/dev/null; then
	out=$(LD_PRELOAD="$interp" ibv_devinfo 2>&1)
	printf '%s\n' "$out" | grep -q "hca_id:.*$dev" ||
		fail "ibv_devinfo under LD_PRELOAD does not list $dev: $out"
	out=$(LD_LIBRARY_PATH="$fwd" ibv_devinfo 2>&1)
	printf '%s\n' "$out" | grep -q "hca_id:.*$dev" ||
		fail "ibv_devinfo through the forwarder does not list $dev: $out"
else
	echo "ibv_devinfo is not installed (ibverbs-utils): not run"
fi

# hold MODE ENV... [PROG ARGS]: start the program in MODE (or PROG ARGS,
# when given), wait for READY; $ppid.
hold() {
	mode=$1
	shift
	# Made before the program starts, which the loop below reads.
	: >"$tmp/$mode.out"
	case "$*" in
	*"$prog"*) env "$@" >>"$tmp/$mode.out" 2>&1 & ;;
	*) env "$@" "$prog" "$mode" >>"$tmp/$mode.out" 2>&1 & ;;
	esac
	ppid=$!
	for _ in $(seq 100); do
		grep -q READY "$tmp/$mode.out" && return 0
		sleep 0.1
	done
	fail "$mode: no READY: $(cat "$tmp/$mode.out")"
	return 1
}

# The objects made by the program (PD, 2 CQs, SRQ, QP, MR: the soft device
# makes them on the domain's PD, so 5 records; mlx5 6), listed as its, and
# the session listed as a client.
check_held() {
	n=$(objects "$ppid")
	[ "$n" -eq "$held" ] ||
		fail "$1: $n objects of pid $ppid, expected $held"
	"$ctl" --json clients | grep -q "\"pid\":$ppid[,}]" ||
		fail "$1: pid $ppid is not listed as a client"
}

# SIGKILL it: the broker destroys every object.
check_killed() {
	kill -KILL "$ppid"
	wait "$ppid" 2>/dev/null
	for _ in $(seq 100); do
		[ "$(objects "$ppid")" -eq 0 ] && return 0
		sleep 0.1
	done
	fail "$1: $(objects "$ppid") objects of the killed pid $ppid remain"
}

if hold hold LD_PRELOAD="$interp"; then
	check_held "LD_PRELOAD"
	check_killed "LD_PRELOAD"
fi
if hold dlopen LD_LIBRARY_PATH="$fwd"; then
	check_held "dlopen+dlvsym through the forwarder"
	check_killed "dlopen+dlvsym through the forwarder"
fi

# Device memory: ibv_alloc_dm is the broker's DM (listed, bytes written
# and read back through ibv_memcpy_*_dm, ibv_free_dm frees it), and the
# broker frees the one a killed program held.
dms() { "$ctl" --json dm | grep -o "\"allocator_pid\":$1[,}]" | wc -l; }
if [ "$kind" = soft ] && hold dm LD_PRELOAD="$interp"; then
	[ "$(dms "$ppid")" -eq 1 ] ||
		fail "dm: $(dms "$ppid") DMs of pid $ppid listed, expected 1 (the freed one gone)"
	kill -KILL "$ppid"
	wait "$ppid" 2>/dev/null
	for _ in $(seq 50); do
		[ "$(dms "$ppid")" -eq 0 ] && break
		sleep 0.1
	done
	[ "$(dms "$ppid")" -eq 0 ] || fail "dm: the killed pid's DM remains"
fi

# XRC domains: two programs' ibv_open_xrcd on one file are one broker XRCD,
# named after the file's path ('/' written ':'), private to the domain.
if hold xrcd LD_PRELOAD="$interp" "$prog" xrcd "$tmp/xrc_domain"; then
	first=$ppid
	if hold xrcd LD_PRELOAD="$interp" "$prog" xrcd "$tmp/xrc_domain"; then
		name=$(printf '%s' "$tmp/xrc_domain" | tr / :)
		"$ctl" --json xrcd | grep -q "\"name\":\"$name\",.*\"opens\":2" ||
			fail "xrcd: no XRCD \"$name\" with 2 opens: $("$ctl" --json xrcd)"
		kill -KILL "$ppid"
		wait "$ppid" 2>/dev/null
	fi
	kill -KILL "$first"
	wait "$first" 2>/dev/null
fi

# A path whose name would pass 64 bytes: ibv_open_xrcd fails with
# ENAMETOOLONG, the errno libibverbs callers print.
long=$tmp/$(printf 'x%.0s' $(seq 70))
out=$(LD_PRELOAD="$interp" "$prog" xrcd "$long" 2>&1)
printf '%s\n' "$out" | grep -q "FAIL ibv_open_xrcd: File name too long" ||
	fail "xrcd on a long path: $out"

out=$(LD_PRELOAD="$interp" "$prog" order 2>&1)
printf '%s\n' "$out" | grep -q '^OK$' || fail "order: $out"
[ "$("$ctl" --json objects | grep -c '"pid"')" -eq 0 ] ||
	fail "order: objects remain after the program destroyed them all"

# books WHAT: once the programs are gone, the registry holds nothing of
# theirs and no domain counts an unaccounted object (the broker's books
# are exact).
books() {
	for _ in $(seq 50); do
		[ "$("$ctl" --json objects | grep -c '"pid"')" -eq 0 ] && break
		sleep 0.1
	done
	[ "$("$ctl" --json objects | grep -c '"pid"')" -eq 0 ] ||
		fail "$1: objects remain: $("$ctl" --json objects)"
	"$ctl" --json domains | grep -q '"unaccounted":[1-9]' &&
		fail "$1: unaccounted objects: $("$ctl" --json domains)"
}

# RSS without CAP_NET_RAW (the soft device always): the program's WQs,
# indirection table, RSS QP and flow are the broker's RSS object over its
# WQs (listed while it holds them, with the flow's match), EBUSY for the
# table, the QP and the QP's PD in use, as the kernel answers; the broker destroys it
# when the program is killed; in order, the program destroys it all.
rss_listed() { "$ctl" --json rss | grep -c '"match":"[^"]*4791'; }
if [ "$kind" = soft ]; then
	if hold rss LD_PRELOAD="$interp"; then
		grep -qx "rss busy EBUSY EBUSY EBUSY" "$tmp/rss.out" ||
			fail "rss: $(cat "$tmp/rss.out")"
		[ "$(rss_listed)" -eq 1 ] &&
			"$ctl" --json rss | grep -q '"table_size":2,' ||
			fail "rss: not listed as the program's: $("$ctl" --json rss)"
		kill -KILL "$ppid"
		wait "$ppid" 2>/dev/null
		for _ in $(seq 50); do
			[ "$(rss_listed)" -eq 0 ] && break
			sleep 0.1
		done
		[ "$(rss_listed)" -eq 0 ] ||
			fail "rss: the killed program's RSS object remains"
	fi
	out=$(echo | LD_PRELOAD="$interp" "$prog" rss 2>&1)
	printf '%s\n' "$out" | grep -qx OK || fail "rss in order: $out"
	[ "$(rss_listed)" -eq 0 ] || fail "rss: destroyed, still listed"
	# Closing the context with them: the broker's objects go with it.
	out=$(echo close | LD_PRELOAD="$interp" "$prog" rss 2>&1)
	rc=$?
	[ $rc -eq 0 ] && printf '%s\n' "$out" | grep -qx closed ||
		fail "rss closed with the context: exit $rc: $out"
	[ "$(rss_listed)" -eq 0 ] || fail "rss: the context closed, still listed"
	books "rss"
fi

# Bad input. A PD its objects use: EBUSY, as the kernel answers for a PD
# of one's own (the order mode above). RDMABROKER_PD=domain: every
# ibv_alloc_pd is the domain's PD, which a dealloc never frees (no EBUSY)
# and which refuses one dealloc more than the allocs; an unknown value is
# EINVAL from ibv_alloc_pd.
if [ "$kind" = soft ]; then
	out=$(LD_PRELOAD="$interp" "$prog" pd 2>&1)
	printf '%s\n' "$out" | grep -qx "PD same=0 busy=EBUSY extra=EINVAL" ||
		fail "pd (the process's own): $out"
fi
out=$(RDMABROKER_PD=domain LD_PRELOAD="$interp" "$prog" pd 2>&1)
printf '%s\n' "$out" | grep -qx "PD same=1 busy=0 extra=EINVAL" ||
	fail "pd (RDMABROKER_PD=domain): $out"
out=$(RDMABROKER_PD=bogus LD_PRELOAD="$interp" "$prog" pd 2>&1)
printf '%s\n' "$out" | grep -q "FAIL ibv_alloc_pd: Invalid argument" ||
	fail "pd (RDMABROKER_PD=bogus): $out"
books "pd"
# The domain's PD is the broker's: the program's objects without a PD of
# its own.
if hold hold RDMABROKER_PD=domain LD_PRELOAD="$interp"; then
	[ "$kind" = verbs ] && held=5
	check_held "RDMABROKER_PD=domain"
	check_killed "RDMABROKER_PD=domain"
	[ "$kind" = verbs ] && held=6
fi

# Each object destroyed twice: libibverbs frees the structure in the
# first (a second is a use after free); on the soft device the memory is
# the interposer's, and the second answers EINVAL without reading it.
# The broker is asked once.
if [ "$kind" = soft ]; then
	out=$(LD_PRELOAD="$interp" "$prog" twice 2>&1)
	for o in qp srq cq mr pd context; do
		printf '%s\n' "$out" | grep -qx "twice $o EINVAL" ||
			fail "twice: the second destroy of the $o: $out"
	done
	printf '%s\n' "$out" | grep -qx OK || fail "twice: $out"
	books "twice"
fi

# fork() while another thread is in the interposer (PD calls): no child
# hangs on a lock the fork caught held; the inherited context answers ESTALE
# (libibclient's rule for an inherited session), a context the child
# opens works; nothing is left and nothing unaccounted.
out=$(timeout 60 env LD_PRELOAD="$interp" "$prog" fork 2>&1)
[ "$(printf '%s\n' "$out" | grep -cx "child inherited ESTALE")" -eq 8 ] &&
	[ "$(printf '%s\n' "$out" | grep -cx "child fresh OK")" -eq 8 ] &&
	printf '%s\n' "$out" | grep -qx OK || fail "fork: $out"
books "fork"

# rdmabroker-run, pointed at the build tree.
run=$top/rdmabroker-run
out=$(RDMABROKER_RUN_LIBDIR="$top/interpose/.libs" \
	"$run" "$prog" order 2>&1)
printf '%s\n' "$out" | grep -q '^OK$' || fail "rdmabroker-run: $out"
"$run" --help | grep -q "usage: rdmabroker-run" ||
	fail "rdmabroker-run --help"
out=$(RDMABROKER_RUN_LIBDIR="$top/interpose/.libs" \
	"$run" --domain-pd "$prog" pd 2>&1)
printf '%s\n' "$out" | grep -qx "PD same=1 busy=0 extra=EINVAL" ||
	fail "rdmabroker-run --domain-pd: $out"
"$run" >/dev/null 2>&1
[ $? -eq 2 ] || fail "rdmabroker-run without a program does not exit 2"

[ $status -eq 0 ] || tail -20 "$tmp/daemon.log"
exit $status
