#!/bin/bash
# SPDX-License-Identifier: MIT
#
# build-deb.sh: the Debian packages (debian/), built by
# `dpkg-buildpackage -b -us -uc` in a copy of the source tree (it writes
# beside the tree and into it), then checked by lintian, which fails on any
# warning or error.
#
#   deploy/build-deb.sh SRCDIR OUTDIR
#
# OUTDIR gets the .deb files, the .changes and lintian.log. The test suite
# runs inside the build unless DEB_BUILD_OPTIONS has nocheck (make deb sets
# it: make check runs the same suite on its own).
set -euo pipefail

if [[ $# -ne 2 ]]; then
	echo "Usage: $0 SRCDIR OUTDIR" >&2
	exit 2
fi
src=$(cd "$1" && pwd)
out=$2
die() { echo "build-deb.sh: $*" >&2; exit 1; }
for tool in dpkg-buildpackage dh lintian; do
	command -v "$tool" >/dev/null ||
		die "$tool is missing: apt-get install dpkg-dev debhelper lintian"
done
[[ -f $src/debian/control ]] || die "$src has no debian/"
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)

rm -rf "$out"
mkdir -p "$out/src"
out=$(cd "$out" && pwd)
tree=$out/src/rdmabroker-$version
mkdir "$tree"
# The tracked and new files of a checkout, or a release tree without its
# build directories.
if git -C "$src" rev-parse --show-toplevel >/dev/null 2>&1; then
	git -C "$src" ls-files -z -co --exclude-standard |
		(cd "$src" && tar --null -T - -cf -) | tar -C "$tree" -xf -
else
	tar -C "$src" --exclude=./build --exclude='./build-*' -cf - . |
		tar -C "$tree" -xf -
fi
# Missing build dependencies are named by dpkg-checkbuilddeps before
# anything runs.
(cd "$tree" && dpkg-buildpackage -b -us -uc) >"$out/build.log" 2>&1 || {
	tail -n 60 "$out/build.log"
	die "dpkg-buildpackage failed; the whole log: $out/build.log"
}
mv "$out"/src/*.deb "$out"/src/*.changes "$out"/src/*.buildinfo "$out/"
rm -rf "$out/src"
ls "$out"/*.deb
# Warnings fail the build as errors do; info and pedantic tags are shown.
if ! lintian --fail-on error,warning --info "$out"/*.changes \
	>"$out/lintian.log" 2>&1; then
	cat "$out/lintian.log"
	die "lintian: warnings or errors (above)"
fi
cat "$out/lintian.log"
echo "build-deb.sh: lintian: no warnings, no errors"
