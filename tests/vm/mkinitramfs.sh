#!/bin/bash
# SPDX-License-Identifier: MIT
# Build the check-vm initramfs: static busybox, the modules that mount the
# host's root over virtio-9p under an overlay (from the installed kernel's
# own tree, in dependency order), and tests/vm/init.sh as /init.
#
#   mkinitramfs.sh KERNEL_VERSION INIT_SCRIPT INSTALL_TREE OUTPUT
#
# INSTALL_TREE is the host path of the project's `make install DESTDIR=`,
# which run-vm.sh exports as the 9p tag vminstall and the VM overlays on top
# of the host's root; "" for none.
set -euo pipefail

kver=$1 init=$2 tree=$3 out=$4
moddir=/lib/modules/$kver
# What the initramfs needs; modprobe adds what they depend on
# (virtio_ring, virtio, virtio_pci_*_dev, netfs, fscache, 9pnet...).
wanted="virtio_pci 9pnet_virtio 9p overlay"

busybox=""
for b in /bin/busybox /usr/bin/busybox; do
	if [ -x "$b" ] && ! ldd "$b" >/dev/null 2>&1; then
		busybox=$b
		break
	fi
done
[ -n "$busybox" ] || { echo "mkinitramfs: no static busybox (apt-get install busybox-static)" >&2; exit 1; }
[ -d "$moddir" ] || { echo "mkinitramfs: no $moddir" >&2; exit 1; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,dev,proc,sys,mnt,newroot,modules}
cp "$busybox" "$root/bin/busybox"
for a in sh mount umount insmod mkdir switch_root poweroff cat echo sleep \
	ls grep; do
	ln -s busybox "$root/bin/$a"
done

# modprobe --show-depends prints "insmod PATH" lines, dependencies first, and
# "builtin NAME" for what the kernel has built in.
order=()
declare -A seen=()
for m in $wanted; do
	while read -r what path _; do
		[ "$what" = insmod ] || continue
		name=$(basename "$path")
		name=${name%%.ko*}
		[ -z "${seen[$name]:-}" ] || continue
		seen[$name]=1
		case $path in
		*.ko) cp "$path" "$root/modules/$name.ko" ;;
		*.ko.xz) xz -dc "$path" >"$root/modules/$name.ko" ;;
		*.ko.zst) zstd -qdc "$path" >"$root/modules/$name.ko" ;;
		*.ko.gz) gzip -dc "$path" >"$root/modules/$name.ko" ;;
		*) echo "mkinitramfs: cannot read $path" >&2; exit 1 ;;
		esac
		order+=("$name")
	done < <(modprobe -S "$kver" --show-depends "$m")
done

cp "$init" "$root/init"
chmod 0755 "$root/init"
{
	echo "VM_MODULES=\"${order[*]}\""
	echo "VM_INSTALL_TREE=\"$tree\""
} >"$root/vmtest.conf"

(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$out"
echo "mkinitramfs: $out: kernel $kver, modules ${order[*]}"
