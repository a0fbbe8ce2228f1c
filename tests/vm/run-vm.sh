#!/bin/bash
# SPDX-License-Identifier: MIT
# make check-vm, the host's side (tests/vm/README.md):
#  1. installs the packages the VM needs when they are missing (root);
#  2. builds an initramfs from the installed Debian kernel's modules;
#  3. boots QEMU (TCG, -cpu max): the host's root read-only over 9p under a
#     tmpfs overlay, the project's install tree (make install DESTDIR=) as
#     the top lower layer, systemd as PID 1, rdmab-vmtest.service running
#     tests/vm/suite.sh;
#  4. reads the results from a writable 9p folder and prints them; a VM that
#     hangs or does not boot is reported as such, with its console log.
# Exits 0 only when the suite ran and every check passed.
#
# Environment (set by the check-vm rule): VM_TOP_SRCDIR, VM_TOP_BUILDDIR,
# VM_RUNDIR (holds dest/, the install tree), VM_SBINDIR, VM_BINDIR,
# VM_SYSCONFDIR (where the daemon looks for rdmabroker.conf).
# Optional: VM_ONLY (a regular expression: run only the suite's sections
# whose names match it), VM_KERNEL_VERSION, VM_BUDGET (seconds for the whole
# run, default 1500), VM_BOOT_LIMIT (seconds from power-on for the suite to
# start, default 240), VM_MEMORY (MiB, default 2048), VM_PINGPONG_ITERS
# (round trips of the RC ping-pong, default 2000), VM_DEBS (a folder of
# Debian packages the suite installs with apt instead of the install tree),
# VM_INTERPOSE_REPS and VM_INTERPOSE_BENCH_S (the interpose section's bench:
# at most that many alternating repetitions, default 7, none started past
# that many seconds, default 0: no bench; make bench-vm gives 600; at
# least 3), VM_INTERPOSE_PIN ("S C": the bench's server runs on vCPU S, its
# client on vCPU C, with taskset; make bench-vm gives "0 1").
set -uo pipefail
case ${1:-} in
-h | --help)
	sed -n '3,25p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
	;;
esac

src=${VM_TOP_SRCDIR:?} build=${VM_TOP_BUILDDIR:?}
run=${VM_RUNDIR:-$build/tests/vm/run}
budget=${VM_BUDGET:-1500}
# The suite's own limit inside the VM: what the budget leaves after a slow
# boot (about 130 s under TCG on a 2-core machine) and this script's work.
suite_limit=$((budget - 250))
start=$(date +%s)
console=$run/console.log
results=$run/results

say() { echo "check-vm: $*"; }
die() {
	say "FAIL: $*"
	say "0 passed, 1 failed"
	exit 1
}

# --- 1. packages ----------------------------------------------------------
pkgs="qemu-system-x86 linux-image-amd64 busybox-static cpio kmod rdma-core
	ibverbs-providers ibverbs-utils iproute2 systemd passwd util-linux
	perftest"
missing=()
for p in $pkgs; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
		grep -q 'install ok installed' || missing+=("$p")
done
mkdir -p "$run"
if ((${#missing[@]})); then
	[ "$(id -u)" = 0 ] ||
		die "missing packages: ${missing[*]}; run as root or apt-get install them"
	say "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt_install() {
		timeout 300 apt-get install -y -q --no-install-recommends \
			"${missing[@]}" >>"$run/apt.log" 2>&1
	}
	apt_install || {
		timeout 120 apt-get update -q >>"$run/apt.log" 2>&1
		apt_install
	} || die "apt-get install ${missing[*]} failed; see $run/apt.log"
fi

# --- 2. kernel and initramfs ----------------------------------------------
kver=${VM_KERNEL_VERSION:-}
if [ -z "$kver" ]; then
	for k in $(ls -1 /boot/vmlinuz-* 2>/dev/null | sort -rV); do
		v=${k#/boot/vmlinuz-}
		if compgen -G "/lib/modules/$v/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko*" >/dev/null; then
			kver=$v
			break
		fi
	done
fi
[ -n "$kver" ] && [ -r "/boot/vmlinuz-$kver" ] ||
	die "no readable /boot/vmlinuz-* with rdma_rxe in /lib/modules (apt-get install linux-image-amd64)"

dest=$run/dest
# VM_DEBS (make check-vm-deb): the Debian packages in that folder are
# installed in the VM by the suite's deb section instead.
if [ -n "${VM_DEBS:-}" ]; then
	compgen -G "$VM_DEBS/rdmabrokerd_*.deb" >/dev/null ||
		die "no packages in $VM_DEBS (make check-vm-deb builds them there first)"
	mkdir -p "$dest"
else
	[ -x "$dest${VM_SBINDIR:-/usr/sbin}/rdmabrokerd" ] ||
		die "no install tree in $dest (make check-vm installs it there first)"
fi

# The install tree is a layer over the host's root: where the host has
# merged /usr (/lib -> usr/lib), a real lib/ directory in the layer would hide
# the host's symlink and with it the dynamic loader. Move such directories
# under usr/.
for d in bin sbin lib lib64; do
	if [ -L "/$d" ] && [ -d "$dest/$d" ] && [ ! -L "$dest/$d" ]; then
		target=$(readlink "/$d")
		mkdir -p "$dest/$target"
		cp -a "$dest/$d/." "$dest/$target/"
		rm -rf "${dest:?}/$d"
	fi
done
# The broker's user and group (sysusers.d), and the suite's client user.
mkdir -p "$dest/usr/lib/sysusers.d" "$dest/etc/systemd/system"
if [ -z "${VM_DEBS:-}" ] && ! grep -qs rdmabroker "$dest"/usr/lib/sysusers.d/*.conf; then
	cp "$src/systemd/rdmabroker.sysusers.conf" \
		"$dest/usr/lib/sysusers.d/rdmabroker.conf"
fi
cat >"$dest/usr/lib/sysusers.d/rdmab-vmtest.conf" <<'EOF'
# check-vm: the unprivileged client the suite runs the tests as.
u rdmatest - "rdmabroker check-vm client" /nonexistent
m rdmatest rdma
EOF

cat >"$dest/etc/systemd/system/rdmab-vmtest.target" <<'EOF'
[Unit]
Description=rdmabroker check-vm
Requires=rdmab-vmtest.service
After=rdmab-vmtest.service
AllowIsolate=yes
EOF
cat >"$dest/etc/systemd/system/rdmab-vmtest.service" <<EOF
[Unit]
Description=rdmabroker check-vm suite
Wants=systemd-udevd.service systemd-journald.service
After=systemd-udevd.service systemd-journald.service systemd-sysusers.service ldconfig.service systemd-tmpfiles-setup.service
SuccessAction=poweroff-immediate
FailureAction=poweroff-immediate

[Service]
Type=oneshot
ExecStart=/bin/bash "$src/tests/vm/suite.sh"
Environment="VM_TOP_SRCDIR=$src" "VM_TOP_BUILDDIR=$build"
Environment="VM_SBINDIR=${VM_SBINDIR:-/usr/sbin}" "VM_BINDIR=${VM_BINDIR:-/usr/bin}" "VM_SYSCONFDIR=${VM_SYSCONFDIR:-/etc}"
Environment="VM_ONLY=${VM_ONLY:-}" "VM_PINGPONG_ITERS=${VM_PINGPONG_ITERS:-2000}"
Environment="VM_DEBS=${VM_DEBS:-}"
Environment="VM_INTERPOSE_REPS=${VM_INTERPOSE_REPS:-7}" "VM_INTERPOSE_BENCH_S=${VM_INTERPOSE_BENCH_S:-0}" "VM_INTERPOSE_PIN=${VM_INTERPOSE_PIN:-}"
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=$suite_limit
EOF

rm -rf "$results"
mkdir -p "$results"
chmod 0777 "$results"
rm -f "$console"
bash "$src/tests/vm/mkinitramfs.sh" "$kver" "$src/tests/vm/init.sh" "$dest" \
	"$run/initramfs.img" || die "cannot build the initramfs"

# --- 3. boot --------------------------------------------------------------
left=$((budget - ($(date +%s) - start) - 10))
[ "$left" -ge 120 ] || die "only ${left}s of the ${budget}s budget left for the VM"
say "booting Linux $kver under QEMU (TCG), at most ${left}s; console: $console"
vm_start=$(date +%s)
timeout -k 5 "$left" qemu-system-x86_64 \
	-accel tcg -cpu max -smp 2 -m "${VM_MEMORY:-2048}" \
	-nographic -monitor none -serial "file:$console" -no-reboot -nic none \
	-kernel "/boot/vmlinuz-$kver" -initrd "$run/initramfs.img" \
	-append "console=ttyS0 panic=1 loglevel=4 systemd.unit=rdmab-vmtest.target systemd.mask=emergency.service systemd.mask=rescue.service systemd.show_status=1" \
	-fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap \
	-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
	-fsdev "local,id=install,path=$dest,security_model=none,readonly=on" \
	-device virtio-9p-pci,fsdev=install,mount_tag=vminstall \
	-fsdev "local,id=results,path=$results,security_model=none,multidevs=remap" \
	-device virtio-9p-pci,fsdev=results,mount_tag=vmresults \
	</dev/null >"$run/qemu.log" 2>&1 &
qpid=$!
# A boot that does not reach the suite in time is a hang: stop early
# rather than at the end of the budget. A VM that does not power off after
# the suite wrote its summary is stopped too.
boot_limit=${VM_BOOT_LIMIT:-240}
hung=""
while kill -0 "$qpid" 2>/dev/null; do
	sleep 2
	el=$(($(date +%s) - vm_start))
	if [ "$el" -gt "$boot_limit" ] &&
		! grep -qa VMTEST-SUITE-STARTED "$console" 2>/dev/null; then
		hung="the suite did not start within ${boot_limit}s of the boot"
		kill "$qpid"
		break
	fi
	if [ -s "$results/summary" ] && [ -z "${sum_seen:-}" ]; then
		sum_seen=$el
	fi
	if [ -n "${sum_seen:-}" ] && [ "$el" -gt $((sum_seen + 60)) ]; then
		say "the VM did not power off 60s after the suite ended; stopping it"
		kill "$qpid"
		break
	fi
done
wait "$qpid"
qrc=$?
vm_secs=$(($(date +%s) - vm_start))

# --- 4. results -----------------------------------------------------------
say "VM ran ${vm_secs}s (qemu exit $qrc); total $(($(date +%s) - start))s"
if [ -s "$results/results.txt" ]; then
	cat "$results/results.txt"
fi
if [ -s "$results/summary" ]; then
	summary=$(cat "$results/summary")
	say "console log: $console; suite logs: $results/logs"
	fails=$(sed -n 's/^[0-9]* passed, \([0-9]*\) failed.*/\1/p' "$results/summary")
	echo "$summary"
	[ "$fails" = 0 ] && exit 0
	exit 1
fi
if [ -n "$hung" ]; then
	say "FAIL: the VM hung at boot: $hung"
elif [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	say "FAIL: the VM hung: no result after ${vm_secs}s, QEMU killed"
elif grep -q VMTEST-BOOT-FAILED "$console" 2>/dev/null; then
	say "FAIL: the VM did not boot: $(grep -m1 VMTEST-BOOT-FAILED "$console")"
elif [ -s "$results/results.txt" ]; then
	say "FAIL: the suite stopped before its end (timeout or crash)"
else
	say "FAIL: the VM did not boot or the suite did not start (qemu exit $qrc)"
fi
[ -s "$run/qemu.log" ] && { say "qemu said:"; tail -n 20 "$run/qemu.log"; }
say "last lines of the console log ($console):"
tail -n 40 "$console" 2>/dev/null
passed=$(grep -c '^PASS' "$results/results.txt" 2>/dev/null)
failed=$(grep -c '^FAIL' "$results/results.txt" 2>/dev/null)
echo "${passed:-0} passed, $((${failed:-0} + 1)) failed"
exit 1
