#!/bin/bash
# SPDX-License-Identifier: MIT
#
# make check-container: containers use the broker of their host through
# the CDI device (issue 26 item 3). An image is made from this build's
# installed tree (deploy/mkimage.sh, `podman import`: no registry), a
# broker runs on the host (software device), `rdmabrokerctl cdi` writes
# the spec into /var/run/cdi, and podman runs the examples in containers
# that get the device:
#   - hello connects, lands in its uid's domain, opens a context, pings;
#   - dm write in one container holds device memory; rdmabrokerctl clients
#     on the host shows that client, by the container's process (its
#     cgroup is the container's), in its domain; dm read in a second
#     container of the same uid reads the bytes; one of another uid gets
#     "does not exist";
#   - a container without the device has no socket and no variable;
#   - where the daemon has domains per cgroup ([defaults] per = cgroup),
#     two containers of one uid land in two domains and the second cannot
#     import the first's DM.
# Skips (exit 77) with the reason where podman cannot run containers here,
# and says what it needs. Everything lives in a private podman storage and a
# spec file of its own, removed at the end.
#
# Environment (set by the make rule): CT_SRCDIR, CT_DEST (the installed
# tree), CT_RUNDIR, RDMABROKERD, RDMABROKERCTL.
set -uo pipefail

src=${CT_SRCDIR:?} dest=${CT_DEST:?} rundir=${CT_RUNDIR:?}
daemon=${RDMABROKERD:?} ctl=${RDMABROKERCTL:?}
image=localhost/rdmabroker:check
passed=0 failed=0
pid= specfile= writer= runroot=

say() { printf '==> %s\n' "$*"; }
skip() {
	echo "SKIP: check-container: $*"
	exit 77
}
ok() {
	echo "PASS: $*"
	passed=$((passed + 1))
}
bad() {
	echo "FAIL: $*"
	failed=$((failed + 1))
}

cleanup() {
	[[ -n $writer ]] && kill "$writer" 2>/dev/null
	[[ -n $pid ]] && kill "$pid" 2>/dev/null
	wait 2>/dev/null
	[[ -n $specfile ]] && rm -f "$specfile"
	if [[ -n $runroot ]]; then
		"${P[@]}" rm -af >/dev/null 2>&1
		"${P[@]}" rmi -af >/dev/null 2>&1
		rm -rf "$runroot"
	fi
	rm -rf "$rundir/storage"
}
trap cleanup EXIT

[[ $(id -u) == 0 ]] ||
	skip "needs root: rootful podman, and a spec in /var/run/cdi"
command -v podman >/dev/null ||
	skip "podman is not installed (apt-get install podman runc busybox-static)"
mkdir -p "$rundir"
# Short paths: conmon's sockets live under the run root.
runroot=$(mktemp -d /tmp/rdmab-ct.XXXXXX)
# A storage of its own (vfs: no mounts left behind), no systemd, no
# network: what a CI machine that is itself a container allows.
P=(podman --root "$rundir/storage" --runroot "$runroot" --storage-driver vfs
	--cgroup-manager cgroupfs --events-backend file)
# podman asks for 1048576 open files by default, which a host whose hard
# limit is lower refuses (crun: "setrlimit RLIMIT_NOFILE: Operation not
# permitted"); lowering is always allowed.
RUN=(run --rm --network none --ulimit nofile=4096:4096
	--ulimit nproc=4096:4096)

say "image $image from $dest"
bash "$src/deploy/mkimage.sh" --podman "${P[*]}" "$src" "$dest" "$image" ||
	{ echo "FAIL: deploy/mkimage.sh"; exit 1; }

# Can podman run a container here at all? crun refuses a hybrid cgroup
# layout (v1 controllers beside a v2 mount that has controllers), where
# runc works.
probe=$("${P[@]}" "${RUN[@]}" "$image" true 2>&1)
if [[ $? -ne 0 ]]; then
	if command -v runc >/dev/null; then
		P+=(--runtime runc)
		probe2=$("${P[@]}" "${RUN[@]}" "$image" true 2>&1) ||
			skip "podman cannot run a container here: with its default runtime: $probe; with runc: $probe2. It needs a runtime that can make containers on this host: crun where the cgroup layout is pure v1 or v2, runc on a hybrid one, and the rlimits it sets allowed"
		echo "podman's default runtime failed ($probe); runc works"
	else
		skip "podman cannot run a container here: $probe. On a hybrid cgroup layout install runc (apt-get install runc)"
	fi
fi
rt=$("${P[@]}" info --format '{{.Host.OCIRuntime.Name}}' 2>/dev/null)
[[ ${P[*]} == *"--runtime runc"* ]] && rt=runc
ok "podman $(podman --version | awk '{print $3}') runs a container (runtime ${rt:-?})"

# The broker on the host, on the software device.
start_daemon() {
	local conf=$1
	mkdir -p "$rundir/sock" "$rundir/rt"
	rm -f "$rundir/sock/rdmabroker.sock"
	"$daemon" --foreground --device soft --config "$conf" \
		--socket "$rundir/sock/rdmabroker.sock" --socket-mode 0666 \
		--runtime-dir "$rundir/rt" 2>>"$rundir/daemon.log" &
	pid=$!
	for _ in $(seq 100); do
		[[ -S $rundir/sock/rdmabroker.sock ]] && return 0
		sleep 0.1
	done
	cat "$rundir/daemon.log"
	return 1
}
stop_daemon() {
	kill "$pid"
	wait "$pid" 2>/dev/null
	pid=
}
: >"$rundir/rdmabroker.conf"
start_daemon "$rundir/rdmabroker.conf" || { echo "FAIL: no daemon"; exit 1; }
sock=$rundir/sock/rdmabroker.sock
export RDMABROKER_SOCKET=$sock

kind=rdmabroker-check$$.local/broker
specfile=/var/run/cdi/rdmabroker-check$$.json
mkdir -p /var/run/cdi
"$ctl" cdi --kind "$kind" -o "$specfile" &&
	ok "rdmabrokerctl cdi -o $specfile" || bad "rdmabrokerctl cdi"
DEV=(--device "$kind=broker")

# 1. hello, as uid 4242.
out=$("${P[@]}" "${RUN[@]}" "${DEV[@]}" --user 4242:4242 "$image" \
	sh -c 'echo "env $RDMABROKER_SOCKET"; ls /dev/infiniband 2>&1; hello' 2>&1)
echo "$out" | sed 's/^/    /'
grep -q '^env /run/rdmabroker.sock$' <<<"$out" &&
	grep -q 'domain      uid-4242$' <<<"$out" &&
	grep -q 'ping        ok' <<<"$out" &&
	grep -q 'shared with the domain' <<<"$out" &&
	ok "hello in a container: the socket, its uid's domain, a shared context" ||
	bad "hello in a container"
grep -q 'No such file' <<<"$out" &&
	ok "the container has no /dev/infiniband (the software device needs none)" ||
	bad "/dev/infiniband in the container"

# dm_writer NAME TEXT: dm write TEXT in container NAME as uid 4242, held
# until $hold closes; $writer its podman, $handle the DM's handle.
dm_writer() {
	: >"$rundir/dm.out"
	"${P[@]}" "${RUN[@]}" -i "${DEV[@]}" --user 4242:4242 --name "$1" \
		"$image" dm write "$2" <"$rundir/dm.in" >"$rundir/dm.out" 2>&1 &
	writer=$!
	exec {hold}>"$rundir/dm.in"
	for _ in $(seq 300); do
		grep -q wrote "$rundir/dm.out" && break
		sleep 0.1
	done
	sed 's/^/    /' "$rundir/dm.out"
	handle=$(sed -n 's/.*handle \([0-9]*\),.*/\1/p' "$rundir/dm.out")
}

# 2. dm write in a container, held until its stdin closes.
rm -f "$rundir/dm.in" && mkfifo "$rundir/dm.in"
dm_writer rdmab-dm-writer 'hello from a container'
[[ -n $handle ]] && ok "dm write in a container: handle $handle" ||
	bad "dm write in a container"

# The broker shows that client: its process is the container's.
cid=$("${P[@]}" inspect --format '{{.Id}}' rdmab-dm-writer 2>/dev/null)
"$ctl" clients | sed 's/^/    /'
found=
while read -r cpid cuid cdom; do
	if [[ $cuid == 4242 ]] && grep -q "$cid" "/proc/$cpid/cgroup" 2>/dev/null; then
		found=$cdom
	fi
done < <("$ctl" --json clients | tr '{' '\n' |
	sed -n 's/.*"pid":\([0-9]*\),"uid":\([0-9]*\),.*"domain":"\([^"]*\)".*/\1 \2 \3/p')
[[ -n $cid && $found == uid-4242 ]] &&
	ok "rdmabrokerctl clients: the container's process, uid 4242, in domain $found" ||
	bad "rdmabrokerctl clients does not show the container's client in uid-4242 (container ${cid:0:12})"

if [[ -n $handle ]]; then
	out=$("${P[@]}" "${RUN[@]}" "${DEV[@]}" --user 4242:4242 "$image" \
		dm read "$handle" 2>&1)
	echo "    $out"
	grep -q 'read "hello from a container"' <<<"$out" &&
		ok "dm read in a second container of uid 4242: the same bytes" ||
		bad "dm read in a second container"
	out=$("${P[@]}" "${RUN[@]}" "${DEV[@]}" --user 4343:4343 "$image" \
		dm read "$handle" 2>&1)
	echo "    $out"
	# The answer of a handle nobody has.
	[[ $out == *"ibc_dm_import: no DM with handle $handle in context"*"of this domain"* ]] &&
		ok "dm read as uid 4343 (another domain): as if it did not exist" ||
		bad "dm read as uid 4343 was not refused as missing"
fi
exec {hold}>&-
wait "$writer"
st=$?
writer=
[[ $st == 0 ]] && ok "dm write freed its DM and ended when its stdin closed" ||
	bad "dm write exited $st"

# 3. Without the device: nothing.
out=$("${P[@]}" "${RUN[@]}" --user 4242:4242 "$image" \
	sh -c 'echo "env ${RDMABROKER_SOCKET:-none}"; hello' 2>&1)
[[ $out == *"env none"*"cannot connect"* ]] &&
	ok "a container without the device has no socket" ||
	bad "a container without the device: $out"

# 4. Domains per cgroup, where this daemon has them: podman puts each
# container in a cgroup of its own (libpod_parent/libpod-ID).
printf '[defaults]\nper = cgroup\ncgroup_depth = 2\n' >"$rundir/cgroup.conf"
if "$daemon" --check-config "$rundir/cgroup.conf" >/dev/null 2>&1; then
	stop_daemon
	start_daemon "$rundir/cgroup.conf" || bad "daemon with per = cgroup"
	"$ctl" cdi --kind "$kind" -o "$specfile" || bad "cdi again"
	dm_writer rdmab-dm-cgroup 'per cgroup'
	doms=$("$ctl" --json clients | tr '{' '\n' |
		sed -n 's/.*"uid":4242,.*"domain":"\([^"]*\)".*/\1/p')
	out=$("${P[@]}" "${RUN[@]}" "${DEV[@]}" --user 4242:4242 "$image" \
		sh -c "hello; dm read ${handle:-0}" 2>&1)
	echo "$out" | sed 's/^/    /'
	other=$(sed -n 's/^  domain      //p' <<<"$out")
	[[ -n $handle && -n $doms && -n $other && $other != "$doms" &&
		$out == *"ibc_dm_import: no DM with handle $handle in context"* ]] &&
		ok "per cgroup: two containers of uid 4242 in two domains ($doms, $other); the second cannot import the first's DM" ||
		bad "per cgroup: writer in '${doms}', reader in '${other}'"
	exec {hold}>&-
	wait "$writer"
	writer=
else
	echo "==> this daemon has no domains per cgroup ([defaults] per = cgroup): part 4 not run"
fi

echo "check-container: $passed passed, $failed failed"
[[ $failed == 0 ]]
