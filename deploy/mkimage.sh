#!/bin/bash
# SPDX-License-Identifier: MIT
#
# mkimage.sh: a container image of rdmabroker made from an installed tree,
# without a registry: the tree (make install DESTDIR=...), the shared
# libraries its programs load (ldd), the libibverbs providers, a static
# busybox for a shell, and the examples hello and dm built against the
# installed header and library; `podman import`ed as IMAGE.
#
#   deploy/mkimage.sh [--podman "podman --root ..."] SRCDIR DESTDIR IMAGE
#
# The image runs the daemon (deploy/kubernetes/) and the example clients
# (make check-container); rdmabrokerd, rdmabrokerctl and
# /usr/local/libexec/rdmabroker/{hello,dm} are on its PATH.
set -euo pipefail

podman=podman
if [[ ${1:-} == --podman ]]; then
	podman=$2
	shift 2
fi
if [[ $# -ne 3 ]]; then
	echo "Usage: $0 [--podman COMMAND] SRCDIR DESTDIR IMAGE" >&2
	exit 2
fi
src=$1 dest=$2 image=$3
die() { echo "mkimage.sh: $*" >&2; exit 1; }
[[ -d $dest ]] || die "$dest: no installed tree (make install DESTDIR=$dest)"
sbin=$(find "$dest" -name rdmabrokerd -type f -perm -u+x | head -n1)
[[ -n $sbin ]] || die "$dest has no rdmabrokerd"
busybox=$(command -v busybox || true)
[[ -n $busybox ]] && file -L "$busybox" | grep -q 'statically linked' ||
	die "a static busybox is needed for the image's shell: apt-get install busybox-static"

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
cp -a "$dest/." "$root/"
prefix=$(dirname "$(dirname "$sbin")")
prefix=${prefix#"$dest"}
# The examples, as their header says to build them, against the installed
# header, library and pkg-config file.
pc=$(find "$root" -name libibclient.pc | head -n1)
[[ -n $pc ]] || die "$dest has no libibclient.pc"
mkdir -p "$root$prefix/libexec/rdmabroker"
for ex in hello dm; do
	# shellcheck disable=SC2046
	cc -O2 -o "$root$prefix/libexec/rdmabroker/$ex" "$src/examples/$ex.c" \
		$(PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_PATH=$(dirname "$pc") \
			pkg-config --cflags --libs libibclient) \
		-Wl,-rpath-link,"$(dirname "$(dirname "$pc")")"
done

# Every ELF file's libraries, and the providers libibverbs dlopen()s.
copy_lib() {
	local f
	for f in "$@"; do
		[[ -e $root$f ]] && continue
		mkdir -p "$root$(dirname "$f")"
		cp -L "$f" "$root$f"
	done
}
mkdir -p "$root/etc/libibverbs.d"
cp /etc/libibverbs.d/*.driver "$root/etc/libibverbs.d/"
provdir=$(pkg-config --variable=libdir libibverbs)/libibverbs
copy_lib "$provdir"/*.so
copy_lib /lib64/ld-linux-x86-64.so.2
while read -r elf; do
	# "libx.so.1 => /lib/.../libx.so.1 (0x...)"; the tree's own libraries
	# resolve through the cache made below.
	LD_LIBRARY_PATH=$(find "$root" -name 'libibclient.so*' -printf '%h\n' |
		head -n1) ldd "$elf" 2>/dev/null |
		awk '$2 == "=>" && $3 ~ /^\// { print $3 }' |
		while read -r lib; do
			[[ $lib == "$root"* ]] || copy_lib "$lib"
		done
done < <(find "$root" -type f \( -perm -u+x -o -name '*.so*' \) \
	-exec sh -c 'head -c4 "$1" | grep -q ELF' _ {} \; -print)

mkdir -p "$root/bin" "$root/sbin" "$root/usr/bin" "$root/usr/sbin" \
	"$root/tmp" "$root/run" "$root/proc" "$root/sys" "$root/dev"
chmod 1777 "$root/tmp"
cp "$busybox" "$root/bin/busybox"
for a in sh ls cat sleep mkdir rm id env grep sed test true false stat \
	kill ps; do
	ln -sf busybox "$root/bin/$a"
done
cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
rdmabroker:x:999:999:RDMA resource broker:/nonexistent:/bin/false
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
rdma:x:998:
rdmabroker:x:999:
nogroup:x:65534:
EOF
cat >"$root/etc/ld.so.conf" <<EOF
$prefix/lib
/lib/x86_64-linux-gnu
/usr/lib/x86_64-linux-gnu
EOF
ldconfig -r "$root"

tar -C "$root" --numeric-owner -cf - . |
	$podman import \
		--change "ENV PATH=$prefix/sbin:$prefix/bin:$prefix/libexec/rdmabroker:/usr/sbin:/usr/bin:/sbin:/bin" \
		--change 'CMD ["rdmabrokerd", "--foreground"]' \
		--message "rdmabroker from $dest" - "$image" >/dev/null
echo "mkimage.sh: $image"
