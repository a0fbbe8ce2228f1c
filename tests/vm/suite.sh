#!/bin/bash
# SPDX-License-Identifier: MIT
# The check-vm suite. Runs inside the VM as root, as rdmab-vmtest.service
# under systemd (PID 1), with the project installed under /usr and its
# build tree visible at the host's path (read-only). Sets up Soft-RoCE
# (rdma_rxe on a veth pair) and checks the units, the verbs device, the
# client library and the daemon's destroy-by-handle helper there
# (tests/vm/README.md lists the checks). Clients run as the unprivileged
# user rdmatest, a member of the group rdma.
#
# Results go to the console and to the 9p folder "vmresults": results.txt
# (one PASS:/FAIL:/INFO: line each), summary ("N passed, M failed"), logs/.
# VM_ONLY (a regular expression) runs only the sections whose names match.
set -u

build=${VM_TOP_BUILDDIR:?}
bindir=${VM_BINDIR:-/usr/bin}
# The daemon reads $sysconfdir/rdmabroker/rdmabroker.conf of its build.
confdir=${VM_SYSCONFDIR:-/etc}/rdmabroker
ctl=$bindir/rdmabrokerctl
bin=$build/tests/vm
only=${VM_ONLY:-}
DEV=rxe0
UNIT=rdmabrokerd.service
SOCKUNIT=rdmabrokerd.socket
SOCK=/run/rdmabroker.sock
CLIENT=rdmatest
# The watchdog the suite gives the service through a drop-in.
WATCHDOG_SEC=4

echo "VMTEST-SUITE-STARTED"
R=/run/vmtest/results
mkdir -p "$R"
if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 vmresults "$R"; then
	echo "VMTEST: cannot mount the results folder; results only on the console"
fi
L=$R/logs
mkdir -p "$L"
OUT=$R/results.txt
: >"$OUT"
npass=0 nfail=0
t_start=$(date +%s)

emit() {
	echo "$*"
	echo "$*" >>"$OUT"
}
pass() {
	npass=$((npass + 1))
	emit "PASS: $1${2:+ -- $2}"
}
fail() {
	nfail=$((nfail + 1))
	emit "FAIL: $1${2:+ -- $2}"
}
# check NAME DETAIL COMMAND...: PASS when COMMAND succeeds.
check() {
	local name=$1 detail=$2
	shift 2
	if "$@"; then pass "$name" "$detail"; else fail "$name" "$detail"; fi
}
info() { emit "INFO: $*"; }
section() {
	if [ -n "$only" ] && ! [[ $1 =~ $only ]]; then
		return 1
	fi
	emit "== $1 ($(($(date +%s) - t_start))s)"
	return 0
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# Run a command as the unprivileged client user; "${AS_CLIENT[@]}" where a
# program must see it (timeout, &), so that $! is the client's own pid.
AS_CLIENT=(setpriv --reuid="$CLIENT" --regid="$CLIENT" --init-groups --)
as_client() { "${AS_CLIENT[@]}" "$@"; }

# Count the CHECK lines a test program printed into PASS/FAIL results.
checks_from() {
	local f=$1 l r seen=0
	while IFS= read -r l; do
		case $l in
		"CHECK PASS "*)
			r=${l#CHECK PASS }
			pass "${r%%: *}" "${r#*: }"
			seen=1
			;;
		"CHECK FAIL "*)
			r=${l#CHECK FAIL }
			fail "${r%%: *}" "${r#*: }"
			seen=1
			;;
		esac
	done <"$f"
	return $((!seen))
}
# run_prog LOG CMD...: run a test program, count its CHECK lines; a program
# that dies without any is a failure of its own.
run_prog() {
	local log=$1 rc
	shift
	timeout 120 "$@" >"$L/$log.log" 2>&1
	rc=$?
	if ! checks_from "$L/$log.log"; then
		fail "$log" "exited $rc without a CHECK line: $(tail -n 3 "$L/$log.log" | tr '\n' ' ')"
	elif [ $rc != 0 ] && ! grep -q '^CHECK FAIL' "$L/$log.log"; then
		fail "$log" "exited $rc: $(tail -n 3 "$L/$log.log" | tr '\n' ' ')"
	fi
}

# wait_for SECONDS COMMAND...: poll every 0.2 s until COMMAND succeeds.
wait_for() {
	local end=$(($(now_ms) + $1 * 1000))
	shift
	until "$@"; do
		[ "$(now_ms)" -lt "$end" ] || return 1
		sleep 0.2
	done
}

# Is PID running (a zombie child is not)?
alive() {
	local st
	st=$(ps -o stat= -p "$1" 2>/dev/null)
	[ -n "$st" ] && [[ $st != Z* ]]
}
dead() { ! alive "$1"; }
prop() { systemctl show -p "$2" --value "$1"; }
main_pid() { prop "$UNIT" MainPID; }
requests() {
	as_client "$ctl" --json status 2>/dev/null |
		sed -n 's/.*"requests_served":\([0-9]*\).*/\1/p'
}
# Objects of TYPE (qp, cq, mr, pd) that `rdma resource` lists for PID.
rdma_count() {
	rdma resource show "$1" pid "$2" 2>/dev/null | grep -Ec "(^| )pid $2( |\$)"
}
# Every object of TYPE that `rdma resource` lists, whoever made it: a dead
# creator's objects no longer show its pid, so a leak shows only here.
rdma_total() {
	rdma resource show "$1" 2>/dev/null | grep -Ec '^(dev|link) '
}
# " qp N cq N mr N pd N": every process's objects, as rdma resource lists.
totals() {
	local t out=""
	for t in qp cq mr pd; do out="$out $t $(rdma_total $t)"; done
	echo "$out"
}
# Which processes hold a uverbs descriptor or mapping, as "comm(pid)".
uverbs_holders() {
	local p out=""
	for p in $({
		find /proc/[0-9]*/fd -lname '/dev/infiniband/uverbs*' 2>/dev/null |
			cut -d/ -f3
		grep -ls /dev/infiniband/uverbs /proc/[0-9]*/maps | cut -d/ -f3
	} | sort -un); do
		out="$out $(cat "/proc/$p/comm" 2>/dev/null)($p)"
	done
	echo "${out:- none}"
}
newsync() {
	local d
	d=$(mktemp -d /run/vmtest/sync.XXXXXX)
	chmod 1777 "$d"
	echo "$d"
}
journal_has() { # PRIORITY TEXT
	journalctl --no-pager -q -u "$UNIT" -p "$1..$1" -o cat | grep -qF -- "$2"
}

finish() {
	local secs=$(($(date +%s) - t_start))
	journalctl --no-pager -u "$UNIT" -u "$SOCKUNIT" -o short-monotonic \
		>"$L/journal-rdmabrokerd.txt" 2>&1
	journalctl --no-pager -b -o short-monotonic >"$L/journal-all.txt" 2>&1
	dmesg >"$L/dmesg.txt" 2>&1
	info "suite ran ${secs}s"
	emit "$npass passed, $nfail failed"
	echo "$npass passed, $nfail failed" >"$R/summary"
	sync
	[ "$nfail" = 0 ]
	exit $?
}

info "kernel $(uname -r); $(systemctl --version | head -n 1);" \
	"rdma-core $(dpkg-query -W -f='${Version}' rdma-core 2>/dev/null)"

# --- deb: the Debian packages, installed with apt (make check-vm-deb) ---------
if [ -n "${VM_DEBS:-}" ] && section deb; then
	# No network: every dependency is the host's, already installed, so
	# apt needs no package list (reading the host's takes minutes under
	# TCG), and the man-db trigger would index every page for minutes.
	# dpkg still reads its whole database over 9p: about 5 minutes here.
	rm -f /var/lib/man-db/auto-update
	mkdir -p /run/vmtest/apt-lists/partial /run/vmtest/apt-cache
	debs=$(ls "$VM_DEBS"/*.deb | grep -v -- -dbgsym_)
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y \
		-o Dir::State::Lists=/run/vmtest/apt-lists \
		-o Dir::Cache=/run/vmtest/apt-cache \
		--no-install-recommends $debs >"$L/deb-install.log" 2>&1
	rc=$?
	check deb-install "apt-get install $(basename -a $debs | tr '\n' ' '): exit $rc" \
		test "$rc" = 0
	la=$(dpkg -L rdmabrokerd libibclient0 libibclient-dev rdmabrokerctl 2>/dev/null |
		grep -c '\.la$')
	check deb-files "/usr/sbin/rdmabrokerd, /usr/bin/rdmabrokerctl, libibclient.so.0 and its .pc from the packages; $la .la files" \
		bash -c '[ "$(dpkg -S /usr/sbin/rdmabrokerd)" = "rdmabrokerd: /usr/sbin/rdmabrokerd" ] &&
			dpkg -S /usr/bin/rdmabrokerctl && dpkg -L libibclient0 | grep -q "libibclient.so.0$" &&
			pkg-config --exists libibclient && [ '"$la"' = 0 ]' \
		>>"$L/deb-install.log" 2>&1
	check deb-postinst "the package made the user and group (sysusers) and enabled $SOCKUNIT" \
		bash -c "getent passwd rdmabroker && getent group rdma &&
			[ \"\$(systemctl is-enabled $SOCKUNIT)\" = enabled ]" \
		>>"$L/deb-install.log" 2>&1
	# R1 (W8): the test-only fault points (daemon/util/fault.h) are not
	# in the packaged daemon: it never reads RDMABROKERD_FAULT.
	check deb-no-fault-points "the packaged rdmabrokerd has no fault points (reads no RDMABROKERD_FAULT)" \
		bash -c '! grep -q RDMABROKERD_FAULT /usr/sbin/rdmabrokerd' \
		>>"$L/deb-install.log" 2>&1
fi

# --- setup: users, Soft-RoCE -----------------------------------------------
if section setup; then
	systemd-sysusers >"$L/sysusers.log" 2>&1
	ldconfig
	users_ok() {
		getent passwd rdmabroker && getent group rdma &&
			id -nG "$CLIENT" | grep -qw rdma
	} >>"$L/sysusers.log" 2>&1
	check users "rdmabroker, group rdma and $CLIENT (in rdma) exist (sysusers.d)" \
		users_ok
	{
		modprobe rdma_rxe &&
			ip link add veth0 type veth peer name veth1 &&
			ip link set veth0 up && ip link set veth1 up &&
			rdma link add "$DEV" type rxe netdev veth0
	} >"$L/setup.log" 2>&1
	if wait_for 20 bash -c "ibv_devinfo -d $DEV 2>/dev/null | grep -q PORT_ACTIVE"; then
		pass rxe-setup "$DEV on veth0: $(rdma link show "$DEV/1" 2>&1 | head -n 1)"
	else
		fail rxe-setup "no active $DEV: $(tail -n 3 "$L/setup.log" | tr '\n' ' ')"
		finish
	fi
	ibv_devinfo -v -d "$DEV" >>"$L/setup.log" 2>&1
	check uverbs-node "/dev/infiniband/uverbs* is there, mode 0666" \
		bash -c '[ "$(stat -c %a /dev/infiniband/uverbs0)" = 666 ]'
fi

# --- units and socket activation -------------------------------------------
if section activation; then
	mkdir -p "/etc/systemd/system/$UNIT.d"
	printf '[Service]\nWatchdogSec=%ss\n' "$WATCHDOG_SEC" \
		>"/etc/systemd/system/$UNIT.d/50-vmtest-watchdog.conf"
	systemctl daemon-reload
	check units-installed "$UNIT and $SOCKUNIT under /usr/lib/systemd/system" \
		test -f "/usr/lib/systemd/system/$UNIT" -a -f "/usr/lib/systemd/system/$SOCKUNIT"
	systemctl start "$SOCKUNIT" >"$L/activation.log" 2>&1
	st=$(prop "$SOCKUNIT" ActiveState)/$(prop "$UNIT" ActiveState)
	perm=$(stat -c '%a %U:%G %F' "$SOCK" 2>&1)
	check socket-listening "socket/service: $st; $SOCK: $perm" \
		test "$st" = active/inactive -a "$perm" = "660 root:rdma socket"
	t0=$(now_ms)
	as_client "$ctl" status >>"$L/activation.log" 2>&1
	rc=$?
	t1=$(now_ms)
	st=$(prop "$UNIT" ActiveState)
	check socket-activation "the first client ($CLIENT: rdmabrokerctl status, exit $rc, $((t1 - t0)) ms) started the service: $st, pid $(main_pid)" \
		test "$rc" = 0 -a "$st" = active
	check service-user "the daemon runs as $(ps -o user= -p "$(main_pid)" 2>/dev/null)" \
		test "$(ps -o user= -p "$(main_pid)" 2>/dev/null)" = rdmabroker
	sleep 1.5 # STATUS= is sent at most once a second
	systemctl status --no-pager "$UNIT" >"$L/systemctl-status.log" 2>&1
	line=$(grep -m1 'Status: "' "$L/systemctl-status.log" | sed 's/^ *//')
	status_ok() {
		grep -q 'Active: active (running)' "$L/systemctl-status.log" &&
			[ -n "$line" ]
	}
	check systemctl-status "$(grep -m1 'Active:' "$L/systemctl-status.log" | sed 's/^ *//'); $line" \
		status_ok
fi

# --- the verbs device -------------------------------------------------------
if section device; then
	as_client "$ctl" --json status >"$L/status.json" 2>&1
	as_client "$ctl" --json devices >"$L/devices.json" 2>&1
	as_client "$ctl" devices >"$L/devices.txt" 2>&1
	exec_start=$(prop "$UNIT" ExecStart)
	kind=$(sed -n 's/.*"device_kind":"\([a-z]*\)".*/\1/p' "$L/status.json")
	auto_verbs() {
		[ "$kind" = verbs ] &&
			! grep -Eq -- '--device[= ]*(soft|verbs)' <<<"$exec_start"
	}
	check device-auto "ExecStart has no --device (auto); the daemon chose \"$kind\": $(journalctl -q -u "$UNIT" -o cat | grep -m1 'using the')" \
		auto_verbs
	# python3 reads the JSON; the expectations are rxe's (research §6).
	caps=$(python3 - "$L/devices.json" "$DEV" <<'EOF'
import json, sys
devs = json.load(open(sys.argv[1]))
d = [x for x in devs if x["name"] == sys.argv[2]]
if not d:
    print("missing"); sys.exit(1)
d = d[0]
want = {"kind": "verbs", "transport": "RoCE", "removed": False, "import": False,
        "xrc": False, "ports": 1, "max_dm_size": 0, "max_rss_table_size": 0}
bad = {k: d.get(k) for k in want if d.get(k) != want[k]}
print(", ".join("%s=%s" % (k, json.dumps(v)) for k, v in d.items() if k != "name"))
sys.exit(1 if bad else 0)
EOF
	)
	check devices-rxe0 "rdmabrokerctl devices: $DEV $caps (want verbs, RoCE, no import, no XRC, no DM, no RSS)" \
		test $? = 0
fi


# --- cdi: the CDI spec names rxe0's node and sysfs directories (issue 26) ----
if section cdi; then
	as_client "$ctl" cdi >"$L/cdi.json" 2>"$L/cdi.err"
	rc=$?
	node=$(grep -lx "$DEV" /sys/class/infiniband_verbs/uverbs*/ibdev | head -n1)
	node=$(basename "$(dirname "$node")")
	cdi_ok=$(python3 - "$L/cdi.json" "$node" "$DEV" <<'EOF'
import json, os, sys
spec = json.load(open(sys.argv[1]))
node, dev = sys.argv[2], sys.argv[3]
st = os.stat("/dev/infiniband/" + node)
e = spec["devices"][0]["containerEdits"]
want_nodes = [{"path": "/dev/infiniband/" + node, "type": "c",
               "major": os.major(st.st_rdev), "minor": os.minor(st.st_rdev),
               "fileMode": st.st_mode & 0o777, "permissions": "rw"}]
sysfs = [os.path.realpath("/sys/class/infiniband_verbs/" + node),
         os.path.realpath("/sys/class/infiniband/" + dev)]
got_sysfs = [m["hostPath"] for m in e["mounts"][1:]]
ok = (spec["cdiVersion"] == "0.5.0" and e["deviceNodes"] == want_nodes and
      got_sysfs == sysfs and
      all(m["containerPath"] == m["hostPath"] and "ro" in m["options"]
          for m in e["mounts"][1:]) and
      all(os.path.isfile(p + "/dev") or os.path.isfile(p + "/node_type")
          for p in sysfs) and
      e["mounts"][0]["hostPath"] == "/run/rdmabroker.sock" and
      e["env"] == ["RDMABROKER_SOCKET=/run/rdmabroker.sock"])
print("yes" if ok else "no: nodes %s mounts %s (want %s %s)" %
      (e["deviceNodes"], e["mounts"], want_nodes, sysfs))
EOF
	)
	check cdi-verbs "rdmabrokerctl cdi (exit $rc): $node of $DEV with the host's numbers and mode, its two sysfs directories read-only, no other node: $cdi_ok" \
		test "$rc" = 0 -a "$cdi_ok" = yes
	# --daemon: every uverbs node (rxe0's is the only one), no broker.
	as_client "$ctl" --socket /nonexistent cdi --daemon >"$L/cdi-daemon.json" 2>&1
	rc=$?
	daemon_ok=$(python3 - "$L/cdi-daemon.json" <<'EOF'
import glob, json, os, sys
spec = json.load(open(sys.argv[1]))
nodes = spec["devices"][0]["containerEdits"]["deviceNodes"]
want = sorted("/dev/infiniband/" + os.path.basename(p)
              for p in glob.glob("/sys/class/infiniband_verbs/uverbs*"))
got = sorted(n["path"] for n in nodes)
ok = (spec["kind"] == "rdmabroker.io/daemon" and got == want and
      all(os.major(os.stat(n["path"]).st_rdev) == n["major"] for n in nodes))
print("yes" if ok else "no: %s, want %s" % (got, want))
EOF
	)
	check cdi-daemon "rdmabrokerctl cdi --daemon (exit $rc): every uverbs node: $daemon_ok" \
		test "$rc" = 0 -a "$daemon_ok" = yes
fi
# --- the client library on rxe ------------------------------------------------
if section client; then
	run_prog ownctx-import-error "${AS_CLIENT[@]}" "$bin/vm-ownctx" import-error "$DEV"
	run_prog ownctx-own "${AS_CLIENT[@]}" "$bin/vm-ownctx" own "$DEV"
	run_prog objects-own "${AS_CLIENT[@]}" "$bin/vm-objects" "$DEV"
	run_prog xrcd-own "${AS_CLIENT[@]}" "$bin/vm-ownctx" xrcd "$DEV"
fi

# --- fork on the real uverbs mappings (issue 12) --------------------------------
if section fork; then
	run_prog fork-own "${AS_CLIENT[@]}" "$bin/vm-fork" "$DEV"
fi

# --- RC ping-pong: the hot path never reaches the broker -----------------------
if section pingpong; then
	sync=$(newsync)
	iters=${VM_PINGPONG_ITERS:-2000}
	"${AS_CLIENT[@]}" "$bin/vm-pingpong" "$DEV" "$iters" "$sync" >"$L/pingpong.log" 2>&1 &
	pp=$!
	if wait_for 60 test -e "$sync/ready"; then
		r0=$(requests)
		r1=$(requests)
		touch "$sync/go"
		wait_for 120 test -e "$sync/done"
		r2=$(requests)
		touch "$sync/finish"
		wait "$pp"
		checks_from "$L/pingpong.log" ||
			fail rc-pingpong "no result: $(tail -n 3 "$L/pingpong.log" | tr '\n' ' ')"
		per=$((r1 - r0))
		moved=$((r2 - r1 - per))
		check hot-path-no-requests "requests_served $r1 before and $r2 after $iters round trips; one rdmabrokerctl status costs $per, so the clients made $moved requests" \
			test -n "$r0" -a "$moved" = 0
	else
		kill -9 "$pp" 2>/dev/null
		wait "$pp"
		fail rc-pingpong "the two clients never connected: $(tail -n 3 "$L/pingpong.log" | tr '\n' ' ')"
	fi
fi

# --- unmodified verbs programs through the interposer (issue 28) -------------
if section interpose; then
	. "${VM_TOP_SRCDIR:?}/tests/vm/interpose.sh"
fi

# --- a client killed with SIGKILL leaves nothing in the kernel ------------------
if section sigkill; then
	base=""
	for t in qp cq mr pd; do base="$base $t $(rdma_total $t)"; done
	sync=$(newsync)
	"${AS_CLIENT[@]}" "$bin/vm-ownctx" hold "$DEV" "$sync" >"$L/sigkill.log" 2>&1 &
	hp=$!
	if wait_for 30 test -e "$sync/ready"; then
		before=""
		for t in qp cq mr pd; do before="$before $t $(rdma_count $t $hp)"; done
		kill -9 "$hp"
		wait "$hp" 2>/dev/null
		gone() { [ "$(totals)" = "$base" ]; }
		wait_for 5 gone
		after=$(totals)
		no_leak() {
			[ "$after" = "$base" ] && [[ $before != *" 0"* ]]
		}
		check sigkill-no-leak "pid $hp held$before; all processes: before it$base, 5 s after SIGKILL$after" \
			no_leak
		session_gone() {
			! as_client "$ctl" --json clients 2>/dev/null |
				grep -Eq "\"pid\":$hp[,}]"
		}
		check sigkill-session-gone "the broker dropped the session of pid $hp" \
			wait_for 5 session_gone
	else
		kill -9 "$hp" 2>/dev/null
		fail sigkill-no-leak "the client never got ready: $(tail -n 3 "$L/sigkill.log" | tr '\n' ' ')"
	fi
fi

# --- RSS on rxe: the self-test says why, and CAP_NET_RAW only when raised ------
if section rss; then
	check rss-selftest "the daemon's RSS self-test on $DEV: $(journalctl -q -u "$UNIT" -o cat | grep -m1 'RSS objects unavailable')" \
		journal_has 5 "$DEV: RSS objects unavailable: the device has no receive WQs"
	run_prog rss-client "${AS_CLIENT[@]}" "$bin/vm-rss" client "$DEV"
	# The unit's own credentials, capabilities and system call filter, in
	# a oneshot unit of the test's (systemd-run needs a D-Bus broker,
	# which the VM does not run; systemctl talks to PID 1 directly).
	unitfile=$(systemctl show -p FragmentPath --value "$UNIT")
	{
		echo "[Service]"
		echo "Type=oneshot"
		echo "ExecStart=$bin/vm-rss rawcaps $DEV"
		echo "StandardOutput=file:$L/rss-rawcaps.log"
		echo "StandardError=inherit"
		grep -E '^(User|Group|SupplementaryGroups|AmbientCapabilities|CapabilityBoundingSet|SystemCallFilter|NoNewPrivileges)=' "$unitfile"
	} >/run/systemd/system/rdmab-rawcaps.service
	info "rawcaps unit: $(grep -v '^\[' /run/systemd/system/rdmab-rawcaps.service | tr '\n' ' ')"
	systemctl daemon-reload
	systemctl start rdmab-rawcaps.service
	checks_from "$L/rss-rawcaps.log" ||
		fail rss-rawcaps "no CHECK line: $(systemctl status rdmab-rawcaps.service 2>&1 | tail -n 3 | tr '\n' ' ')"
	rm -f /run/systemd/system/rdmab-rawcaps.service
	systemctl daemon-reload
fi

# --- destroy by handle ----------------------------------------------------------
if section destroy; then
	run_prog destroy "$bin/vm-destroy" "$DEV"
fi

# --- the registry's cleanup of a dead client ---------------------------------
if section cleanup; then
	run_prog cleanup "$bin/vm-cleanup" "$DEV"
	info "$(grep -m1 'cleanup-bulk:' "$L/cleanup.log")"
fi

# --- unaccounted objects, from the kernel's handle list ---------------------------
if section unaccounted; then
	run_prog unaccounted "$bin/vm-unaccounted" "$DEV"
fi

# --- tests/hw's hw_import on rxe (issue 23 item 15) ----------------------------
# The mlx5 suite's constructors, RC transfer and SIGKILL, on rxe0: rxe cannot
# import, so with --own the clients use contexts of their own (the same code
# with import unavailable, said on its SKIP lines), under a daemon of the
# program's own (as root; the clients become nobody).
if section hw; then
	RDMABROKERD=${VM_SBINDIR:-/usr/sbin}/rdmabrokerd timeout 120 \
		"$build/tests/hw/hw_import" --own "$DEV" >"$L/hw-import.log" 2>&1
	rc=$?
	info "$(grep -E '^hw_import: (SKIP|rdma resource|A and B|B found)' "$L/hw-import.log" | tr '\n' ' ')"
	check hw-import-own "hw_import --own $DEV: exit $rc: $(grep -v '^<' "$L/hw-import.log" | tail -n 2 | tr '\n' ' ')" \
		test "$rc" = 0
fi

# --- domains per cgroup on the VM's cgroup v2 hierarchy (issue 26) ---------------
# check_cgroups_root against the installed daemon on the soft device: two
# clients of one uid in two cgroups, two domains and contexts, nothing seen
# of each other; here on systemd's pure v2 hierarchy.
if section cgroups; then
	RDMABROKERD=${VM_SBINDIR:-/usr/sbin}/rdmabrokerd RDMABROKERCTL=$ctl \
		timeout 300 "$bin/vm-cgroups" >"$L/cgroups.log" 2>&1
	rc=$?
	info "cgroups: $(stat -fc %T /sys/fs/cgroup) at /sys/fs/cgroup; $(grep -E 'Checks|skipped' "$L/cgroups.log" | tr '\n' ' ')"
	check cgroups "check_cgroups_root on the VM's hierarchy: exit $rc: $(grep -E '^[^ ]*:[0-9]+:[FE]:' "$L/cgroups.log" | head -n 2 | tr '\n' ' ')" \
		test "$rc" = 0
fi

# --- journal priorities ------------------------------------------------------------
if section journal; then
	pid=$(main_pid)
	mkdir -p "$confdir"
	printf '[soft]\nthis line is not ini\n' >"$confdir/rdmabroker.conf"
	# The unit's ExecReload=: what an operator runs.
	systemctl reload "$UNIT"
	sleep 1
	rm -f "$confdir/rdmabroker.conf"
	kill -HUP "$pid"
	sleep 1
	journalctl --no-pager -u "$UNIT" -o verbose >"$L/journal-verbose.txt" 2>&1
	check journal-err "priority 3 (err): a bad rdmabroker.conf on SIGHUP: $(journalctl -q -u "$UNIT" -p 3..3 -o cat | tail -n 1)" \
		journal_has 3 "keeping the running configuration"
	check journal-notice "priority 5 (notice): $(journalctl -q -u "$UNIT" -p 5..5 -o cat | grep -m1 'using the')" \
		journal_has 5 "using the verbs device"
	check journal-info "priority 6 (info): $(journalctl -q -u "$UNIT" -p 6..6 -o cat | grep -m1 'listening on')" \
		journal_has 6 "listening on the socket systemd passed"
	raw=$(journalctl -q -u "$UNIT" _PID="$pid" -o cat | grep -c '^<[0-7]>')
	check journal-prefix "no <N> prefix left in $pid's messages ($raw found)" test "$raw" = 0
	check journal-still-running "the daemon kept running after the bad file: $(prop "$UNIT" ActiveState), pid $(main_pid)" \
		test "$(main_pid)" = "$pid"
fi

# --- the watchdog ---------------------------------------------------------------------
if section watchdog; then
	pid=$(main_pid)
	n0=$(prop "$UNIT" NRestarts)
	t0=$(now_ms)
	kill -STOP "$pid"
	restarted() {
		local p
		p=$(main_pid)
		[ "$p" != 0 ] && [ "$p" != "$pid" ] && [ "$(prop "$UNIT" ActiveState)" = active ]
	}
	wait_for $((WATCHDOG_SEC * 3 + 20)) restarted
	t1=$(now_ms)
	n1=$(prop "$UNIT" NRestarts)
	msg=$(journalctl -q -u "$UNIT" -o cat | grep -m1 -i 'watchdog timeout')
	wd_ok() { [ -n "$msg" ] && [ "$n1" -gt "$n0" ] && restarted; }
	check watchdog-restart "SIGSTOP on $pid (WatchdogSec=${WATCHDOG_SEC}s drop-in): \"$msg\"; restarted as $(main_pid) after $((t1 - t0)) ms, NRestarts $n0 -> $n1" \
		wd_ok
	kill -CONT "$pid" 2>/dev/null
	as_client "$ctl" status >"$L/watchdog-status.log" 2>&1
	check watchdog-serves "the restarted daemon answers (exit $?)" test $? = 0
fi

# --- stop and start with the socket kept -------------------------------------------------
if section stop-start; then
	pid=$(main_pid)
	t0=$(now_ms)
	systemctl stop "$UNIT" >"$L/stop.log" 2>&1
	t1=$(now_ms)
	res="$(prop "$UNIT" ActiveState), Result=$(prop "$UNIT" Result), ExecMainCode=$(prop "$UNIT" ExecMainCode) ExecMainStatus=$(prop "$UNIT" ExecMainStatus)"
	# With the fd store a SIGTERM exits for the next start (a restart
	# and a stop send the same signal); the stop then empties the store.
	said=$(journalctl -q -u "$UNIT" _PID="$pid" -p 5..5 -o cat |
		grep -m1 -E 'shutting down|exiting, [0-9]+ clients kept for the next start')
	stopped_clean() {
		[ "$(prop "$UNIT" ActiveState)" = inactive ] &&
			[ "$(prop "$UNIT" Result)" = success ] &&
			[ "$(prop "$UNIT" ExecMainStatus)" = 0 ] && [ -n "$said" ]
	}
	check stop-clean "systemctl stop in $((t1 - t0)) ms: $res; the daemon said at notice: \"$said\"" \
		stopped_clean
	check socket-kept "after the stop: $SOCKUNIT $(prop "$SOCKUNIT" ActiveState), $SOCK $(stat -c %F "$SOCK" 2>&1)" \
		test "$(prop "$SOCKUNIT" ActiveState)" = active -a -S "$SOCK"
	as_client "$ctl" status >"$L/restart.log" 2>&1
	rc=$?
	check reactivation "the next client (exit $rc) started it again: $(prop "$UNIT" ActiveState), pid $(main_pid) (was $pid)" \
		test "$rc" = 0 -a "$(prop "$UNIT" ActiveState)" = active -a "$(main_pid)" != "$pid"
fi

# --- device removal -----------------------------------------------------------------------
if section removal; then
	sync=$(newsync)
	pid=$(main_pid)
	"${AS_CLIENT[@]}" "$bin/vm-ownctx" wait-removed "$DEV" "$sync" passive >"$L/removal-passive.log" 2>&1 &
	cp_=$!
	"${AS_CLIENT[@]}" "$bin/vm-ownctx" wait-removed "$DEV" "$sync" app >"$L/removal-app.log" 2>&1 &
	ca=$!
	wait_for 30 test -e "$sync/passive" -a -e "$sync/app" ||
		info "the removal clients did not get ready: $(tail -n 2 "$L"/removal-*.log | tr '\n' ' ')"
	info "before the removal, uverbs held by:$(uverbs_holders)"
	t0=$(now_ms)
	timeout 120 rdma link delete "$DEV" >"$L/link-delete.log" 2>&1 &
	dp=$!
	wait_for 5 dead "$dp"
	t1=$(now_ms)
	blocked=""
	alive "$dp" && blocked=$(uverbs_holders)
	# What the broker did, with the window over (it checks every 2 s).
	as_client "$ctl" --json devices >"$L/devices-after.json" 2>&1
	check device-marked-removed "rdmabrokerctl devices after the removal: $(cat "$L/devices-after.json")" \
		grep -q '"removed":true' "$L/devices-after.json"
	check journal-warning "priority 4 (warning): $(journalctl -q -u "$UNIT" -p 4..4 -o cat | grep -m1 'is gone' || echo 'no "device ... is gone"')" \
		journal_has 4 "is gone"
	if [ -n "$blocked" ]; then
		fail link-delete-5s "rdma link delete $DEV still blocked after $((t1 - t0)) ms; uverbs held by:$blocked"
		# Let it finish, step by step, to say who held it.
		touch "$sync/finish"
		step=""
		wait_for 10 dead "$cp_"
		wait_for 5 dead "$ca"
		wait_for 3 dead "$dp"
		alive "$dp" || step="once the clients exited"
		if [ -z "$step" ]; then
			systemctl stop "$UNIT" >>"$L/link-delete.log" 2>&1
			wait_for 15 dead "$dp"
			alive "$dp" || step="once the daemon was stopped"
		fi
		info "rdma link delete finished ${step:-never (still blocked; uverbs held by:$(uverbs_holders))} after $(($(now_ms) - t0)) ms"
	else
		wait "$dp"
		drc=$?
		check link-delete-5s "rdma link delete $DEV returned $drc after $((t1 - t0)) ms with the daemon and two clients running" \
			test "$drc" = 0
		# The clients answer within a few seconds of the event.
		wait_for 10 test -e "$sync/app-closed" -a -e "$sync/passive-done"
		touch "$sync/finish"
	fi
	wait "$cp_" 2>/dev/null
	wait "$ca" 2>/dev/null
	checks_from "$L/removal-passive.log" ||
		fail device-removed-event-passive "no result: $(tail -n 2 "$L/removal-passive.log" | tr '\n' ' ')"
	checks_from "$L/removal-app.log" ||
		fail device-removed-event-app "no result: $(tail -n 2 "$L/removal-app.log" | tr '\n' ' ')"
fi

# --- issue 25: what systemd does with a service's fd store (facts for the docs) ---------
# vm-fdprobe (a Type=notify unit of its own, FileDescriptorStoreMax=16) logs
# what each start was handed; every way of ending it is tried in turn, and
# each check asserts what systemd 252 was measured to do (rdmabrokerd(8)
# RESTART quotes these lines).
if section fdstore; then
	PU=rdmab-fdprobe.service
	plog=/run/vmtest/fdprobe.log
	rm -f "$plog"
	printf '%s\n' '[Service]' Type=notify "ExecStart=$bin/vm-fdprobe $plog" \
		FileDescriptorStoreMax=16 "WatchdogSec=${WATCHDOG_SEC}s" \
		Restart=on-failure RestartSec=1s >"/run/systemd/system/$PU"
	systemctl daemon-reload
	nlines() { if [ -e "$plog" ]; then wc -l <"$plog"; else echo 0; fi; }
	pline() { sed -n "${1}p" "$plog"; }
	have_lines() { [ "$(nlines)" -ge "$1" ]; }
	# probe_step N WHAT CMD...: run CMD, wait for start N, report its line.
	probe_step() {
		local n=$1 what=$2
		shift 2
		"$@" >>"$L/fdprobe-steps.log" 2>&1
		if wait_for $((WATCHDOG_SEC * 3 + 20)) have_lines "$n"; then
			sleep 1 # its notifications are processed
			info "fdstore $what -> $(pline "$n"); NFileDescriptorStore now $(prop "$PU" NFileDescriptorStore)"
		else
			fail "fdstore-$n" "$what: no start $n; $(prop "$PU" ActiveState) $(prop "$PU" Result)"
		fi
	}
	has() { pline "$1" | grep -qE "$2"; }
	hasnt() { ! has "$@"; }
	pid_of() { prop "$PU" MainPID; }

	probe_step 1 "systemctl start" systemctl start "$PU"
	n1=$(prop "$PU" NFileDescriptorStore)
	check fdstore-bound "FileDescriptorStoreMax=16 holds 16 after g1, dup sent twice, bad:name, hup, nopoll, pidfd, rm+remove and 16 fill in one message: $n1" \
		test "$n1" = 16
	p=$(pid_of)
	probe_step 2 "SIGKILL of the main process (Restart=on-failure)" kill -KILL "$p"
	check fdstore-sigkill "kept across SIGKILL and passed last: $(pline 2)" has 2 'g1=g1'
	check fdstore-dedup "one memfd sent twice is stored once" \
		test "$(pline 2 | grep -o 'dup=dup' | wc -l)" = 1
	check fdstore-badname "an invalid FDNAME (with ':') stores the fd as \"stored\"" \
		has 2 'stored=badname'
	check fdstore-hup "a stored socket whose peer closed is dropped (POLLHUP)" \
		hasnt 2 'hup=sock'
	check fdstore-nopoll "FDPOLL=0 keeps such a socket" has 2 'nopoll=sock'
	check fdstore-pidfd "FDPOLL=0 keeps a pidfd whose process exited and was reaped, passed back as such" \
		has 2 'pidfd=exited'
	check fdstore-remove "FDSTOREREMOVE=1 FDNAME=rm removed it" hasnt 2 'rm=rm'
	info "fdstore overflow: $(pline 2 | grep -o 'fill=fill' | wc -l) of 16 fill kept at the bound"
	p=$(pid_of)
	probe_step 3 "watchdog abort (SIGSTOP, WatchdogSec=${WATCHDOG_SEC}s)" kill -STOP "$p"
	kill -CONT "$p" 2>/dev/null
	info "fdstore watchdog: $(journalctl -q -u "$PU" -o cat | grep -m1 -i 'watchdog')"
	check fdstore-watchdog "kept across the watchdog's abort: $(pline 3)" has 3 'g2=g2'
	probe_step 4 "systemctl restart" systemctl restart "$PU"
	check fdstore-restart "systemctl restart: $(pline 4)" has 4 'g3=g3'
	p=$(pid_of)
	systemctl daemon-reload
	systemctl daemon-reexec
	wait_for 30 test "$(prop "$PU" MainPID)" = "$p"
	nr=$(prop "$PU" NFileDescriptorStore)
	probe_step 5 "SIGKILL after daemon-reload and daemon-reexec (store held $nr)" \
		kill -KILL "$p"
	check fdstore-reexec "kept across systemctl daemon-reload and daemon-reexec: $(pline 5)" \
		has 5 'g4=g4'
	p=$(pid_of)
	probe_step 6 "exit 1 (a failure, Restart=on-failure)" kill -USR1 "$p"
	check fdstore-exit-failure "kept across a failing exit: $(pline 6)" has 6 'g5=g5'
	systemctl stop "$PU"
	ns=$(prop "$PU" NFileDescriptorStore)
	probe_step 7 "systemctl stop; systemctl start (the store held $ns after the stop)" \
		systemctl start "$PU"
	check fdstore-stop "systemctl stop empties the store: $(pline 7)" \
		has 7 'passed=0'
	p=$(pid_of)
	kill -TERM "$p"
	wait_for 10 test "$(prop "$PU" ActiveState)" != active
	nt=$(prop "$PU" NFileDescriptorStore)
	probe_step 8 "SIGTERM from outside systemctl (a clean exit: no restart; $(prop "$PU" ActiveState), store $nt), then start" \
		systemctl start "$PU"
	check fdstore-sigterm "a SIGTERM not sent by systemctl, a clean exit, empties the store: $(pline 8)" \
		has 8 'passed=0'
	systemctl stop "$PU"
	journalctl --no-pager -u "$PU" -o short-monotonic >"$L/journal-fdprobe.txt" 2>&1
	cp "$plog" "$L/fdprobe.log"
	rm -f "/run/systemd/system/$PU"
	systemctl daemon-reload
fi

# --- issue 25 item 6: clients through the broker's restarts under systemd ----------------
# rxe (own contexts) on the installed unit, the soft device on a unit of its
# own; the store as the unit sets it (a drop-in when it sets none). Each
# way systemd ends the service in turn: SIGKILL, the watchdog, systemctl
# restart (the sessions live on), then systemctl stop (they cannot: the
# store is emptied, as the fdstore section measured).
if section restart; then
	SU=rdmab-soft.service
	SSOCK=/run/rdmab-soft.sock
	# The removal section deleted rxe0: a new one on the same veth.
	if ! rdma link show "$DEV/1" >/dev/null 2>&1; then
		rdma link add "$DEV" type rxe netdev veth0 >>"$L/setup.log" 2>&1
		wait_for 20 bash -c "ibv_devinfo -d $DEV 2>/dev/null | grep -q PORT_ACTIVE" ||
			fail restart-rxe-setup "no active $DEV again: $(tail -n 2 "$L/setup.log" | tr '\n' ' ')"
		info "restart: $DEV added again after the removal section"
	fi
	printf '%s\n' '[Service]' Type=notify \
		"ExecStart=${VM_SBINDIR:-/usr/sbin}/rdmabrokerd --foreground --device soft --socket $SSOCK --socket-mode 0666 --runtime-dir /run/rdmab-soft" \
		FileDescriptorStoreMax=4096 "WatchdogSec=${WATCHDOG_SEC}s" \
		Restart=on-failure RestartSec=1s >"/run/systemd/system/$SU"
	systemctl daemon-reload
	systemctl restart "$UNIT" >"$L/restart-units.log" 2>&1
	systemctl start "$SU" >>"$L/restart-units.log" 2>&1
	# The installed unit's store, as shipped (no drop-in): room for the
	# bound the daemon logs at start (rdmabrokerd(8) RESTART's formula).
	fdmax=$(prop "$UNIT" FileDescriptorStoreMax)
	bound=$(journalctl -q -u "$UNIT" -o cat |
		sed -n 's/^the fd store holds at most \([0-9]*\) descriptors.*/\1/p' |
		tail -n 1)
	check restart-unit-fdstore "the installed $UNIT: FileDescriptorStoreMax=$fdmax, the daemon's bound ${bound:-?}" \
		test -n "$bound" -a "${fdmax:-0}" -ge "${bound:-1}"
	info "restart: $UNIT FileDescriptorStoreMax=$(prop "$UNIT" FileDescriptorStoreMax), $SU $(prop "$SU" ActiveState)"
	# Item 7: one journal line per restore, from here on.
	jcur=$(journalctl -q -n 0 --show-cursor | sed -n 's/^-- cursor: //p')
	restore_lines() { # UNIT: the restore lines logged since $jcur
		journalctl -q --after-cursor "$jcur" -u "$1" -o cat |
			grep -E '^restart [0-9]+: generation [0-9]+ restored'
	}
	restores() { restore_lines "$1" | wc -l; }
	gen_of() { # SOCKET: the daemon's generation and restores
		"$ctl" --socket "$1" --json status 2>/dev/null |
			sed -n 's/.*"generation":\([0-9]*\),"restarts":\([0-9]*\).*/\1 \2/p'
	}
	g0_main=$(gen_of "$SOCK")
	g0_soft=$(gen_of "$SSOCK")
	sync=$(newsync)
	"${AS_CLIENT[@]}" "$bin/vm-restart" "$SOCK" "$DEV" "$sync" rxe >"$L/restart-rxe.log" 2>&1 &
	rc_pid=$!
	"${AS_CLIENT[@]}" "$bin/vm-restart" "$SSOCK" soft0 "$sync" soft >"$L/restart-soft.log" 2>&1 &
	sc_pid=$!
	wait_for 30 test -e "$sync/rxe.ready" -a -e "$sync/soft.ready" ||
		info "restart: the clients did not get ready: $(tail -n 2 "$L"/restart-*.log | tr '\n' ' ')"
	pid_of_unit() { prop "$1" MainPID; }
	new_main() { # UNIT OLDPID
		local p
		p=$(pid_of_unit "$1")
		[ "$p" != 0 ] && [ "$p" != "$2" ] && [ "$(prop "$1" ActiveState)" = active ]
	}
	# restart_step N WHAT ACTION: ACTION on both units, wait for both to
	# run again, then let each client check its session.
	restart_step() {
		local n=$1 what=$2 action=$3 u p0 p1 t0
		t0=$(now_ms)
		for u in "$UNIT" "$SU"; do
			p0=$(pid_of_unit "$u")
			case $action in
			kill) kill -KILL "$p0" ;;
			stop) kill -STOP "$p0" ;;
			restart) systemctl restart "$u" ;;
			esac
			wait_for $((WATCHDOG_SEC * 3 + 20)) new_main "$u" "$p0" ||
				fail "restart-$n-$u" "$what: $u did not run again ($(prop "$u" ActiveState))"
			[ "$action" = stop ] && kill -CONT "$p0" 2>/dev/null
			p1=$(pid_of_unit "$u")
			info "restart $n ($what): $u $p0 -> $p1 in $(($(now_ms) - t0)) ms; $(journalctl -q -u "$u" -o cat | grep -E '^restart [0-9]+:|starting clean|cannot be used' | tail -n 1)"
		done
		touch "$sync/rxe.$n" "$sync/soft.$n"
		wait_for 60 test -e "$sync/rxe.$n.done" -a -e "$sync/soft.$n.done" ||
			fail "restart-$n-clients" "$what: the clients did not answer"
	}
	restart_step 1 "SIGKILL" kill
	restart_step 2 "watchdog abort (SIGSTOP)" stop
	restart_step 3 "systemctl restart" restart
	for u in "$UNIT:$SOCK:$g0_main" "$SU:$SSOCK:$g0_soft"; do
		IFS=: read -r un us ug <<<"$u"
		nr=$(restores "$un")
		g1=$(gen_of "$us")
		check "restart-journal-$un" "three restores, $nr restore lines in its journal; generation and restores ${ug:-?} before, ${g1:-?} after" \
			test "$nr" = 3 -a -n "$ug" -a -n "$g1" \
			-a "${g1% *}" = $((${ug% *} + 3)) -a "${g1#* }" = $((${ug#* } + 3))
		# A descriptor the store still held that no restore wanted
		# is closed at the next start: a stale one was left there.
		nc=$(restore_lines "$un" | grep -vc ', 0 closed$')
		check "restart-store-$un" "no restore found a descriptor nobody wanted in the store: $nc of $nr did" \
			test "$nc" = 0
	done
	# A stop empties the store: the sessions end, and the clients see it.
	for u in "$UNIT" "$SU"; do systemctl stop "$u"; done
	touch "$sync/rxe.4.lost" "$sync/soft.4.lost"
	for u in "$UNIT" "$SU"; do systemctl start "$u"; done
	touch "$sync/rxe.4" "$sync/soft.4"
	wait_for 60 test -e "$sync/rxe.4.done" -a -e "$sync/soft.4.done" ||
		fail "restart-4-clients" "systemctl stop: the clients did not answer"
	touch "$sync/finish"
	wait "$rc_pid" 2>/dev/null
	wait "$sc_pid" 2>/dev/null
	checks_from "$L/restart-rxe.log" ||
		fail restart-rxe "no result: $(tail -n 2 "$L/restart-rxe.log" | tr '\n' ' ')"
	checks_from "$L/restart-soft.log" ||
		fail restart-soft "no result: $(tail -n 2 "$L/restart-soft.log" | tr '\n' ' ')"
	journalctl --no-pager -u "$SU" -o short-monotonic >"$L/journal-rdmab-soft.txt" 2>&1
	systemctl stop "$SU"
	rm -f "/run/systemd/system/$SU"
	systemctl daemon-reload
fi

finish
