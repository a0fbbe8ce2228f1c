#!/bin/sh
# SPDX-License-Identifier: MIT
# /init of the check-vm initramfs (busybox). Loads the modules listed in
# /vmtest.conf, mounts the host's root read-only over 9p (tag hostroot), puts
# a tmpfs overlay over it with the project's install tree (tag vminstall) as
# the top lower layer, and switch_roots into systemd. Any failure prints
# VMTEST-BOOT-FAILED, which run-vm.sh looks for, and powers off.
PATH=/bin
export PATH

fail() {
	echo "VMTEST-BOOT-FAILED: $*"
	sleep 1
	poweroff -f
	sleep 30
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
echo "vm-init: initramfs running"
. /vmtest.conf

for m in $VM_MODULES; do
	insmod "/modules/$m.ko" || fail "insmod $m"
done

mkdir -p /mnt/host /mnt/rw
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro hostroot \
	/mnt/host || fail "cannot mount the host's root over 9p"
mount -t tmpfs -o mode=0755,size=1g tmpfs /mnt/rw || fail "tmpfs"
mkdir -p /mnt/rw/upper /mnt/rw/work
lower=/mnt/host
if [ -n "$VM_INSTALL_TREE" ]; then
	# A 9p export of its own: overlayfs refuses a lower layer inside
	# another one.
	mkdir -p /mnt/install
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro vminstall \
		/mnt/install || fail "cannot mount the install tree $VM_INSTALL_TREE over 9p"
	lower="/mnt/install:/mnt/host"
fi
mount -t overlay overlay \
	-o "lowerdir=$lower,upperdir=/mnt/rw/upper,workdir=/mnt/rw/work" \
	/newroot || fail "cannot mount the overlay"
[ -x /newroot/lib/systemd/systemd ] || fail "no /lib/systemd/systemd in the host's root"
# A host that is itself a container has /.dockerenv (or /run/.containerenv),
# which would make systemd believe it runs in one and ignore the kernel
# command line: hide them in the overlay.
rm -f /newroot/.dockerenv /newroot/run/.containerenv \
	/newroot/run/systemd/container
# systemd-tmpfiles empties /tmp and /var/tmp at boot (tmp.conf, type D):
# the source and build trees of the run may live there. Mask it.
mkdir -p /newroot/etc/tmpfiles.d && : >/newroot/etc/tmpfiles.d/tmp.conf ||
	fail "cannot mask tmpfiles.d/tmp.conf"

for d in dev proc sys; do
	mount -o move "/$d" "/newroot/$d" || fail "cannot move /$d"
done
echo "vm-init: switching to systemd"
exec switch_root /newroot /lib/systemd/systemd
