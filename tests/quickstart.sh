#!/bin/bash
# SPDX-License-Identifier: MIT
# ./quickstart after the README's in-tree ./configure: it stops before the
# out-of-tree configure fails, and says what to run. Run on a copy of the
# script in a tree of stubs (no build): dpkg-query says every package is
# installed, configure fails as autoconf's does in a configured tree.
set -u

src=${abs_top_srcdir:-$(cd "${srcdir:-.}" && pwd)}
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
status=0

mkdir -p "$tmp/tree" "$tmp/bin"
cp "$src/quickstart" "$tmp/tree/"
printf '#!/bin/sh\nprintf "ii "\n' >"$tmp/bin/dpkg-query"
cat >"$tmp/tree/configure" <<'STUB'
#!/bin/sh
echo 'configure: error: source directory already configured; run "make distclean" there first' >&2
exit 1
STUB
chmod +x "$tmp/bin/dpkg-query" "$tmp/tree/configure"
touch "$tmp/tree/Makefile.in" "$tmp/tree/config.status"

for cmd in demo check; do
	out=$(PATH=$tmp/bin:$PATH "$tmp/tree/quickstart" "$cmd" 2>&1)
	rc=$?
	printf '$ ./quickstart %s\n%s\n' "$cmd" "$out"
	if [[ $rc -ne 1 ]]; then
		echo "FAIL: exit $rc, expected 1"
		status=1
	fi
	if ! grep -q "was configured in place" <<<"$out" ||
		! grep -qF "distclean && ./quickstart $cmd" <<<"$out"; then
		echo "FAIL: quickstart $cmd does not say what to run"
		status=1
	fi
	if [[ -e $tmp/tree/build/Makefile || -e $tmp/tree/build ]]; then
		echo "FAIL: quickstart $cmd went on to build/"
		status=1
	fi
done

# The demo greps the output of its background jobs: each file exists
# before its job starts (start_bg), none is made by the job's own
# redirection, which may run after the first grep.
eval "$(sed -n '/^start_bg() {/,/^}/p' "$src/quickstart")"
if ! declare -F start_bg >/dev/null; then
	echo "FAIL: quickstart has no start_bg"
	status=1
else
	start_bg "$tmp/late.out" /dev/null sh -c 'sleep 1; echo late'
	job=$!
	[[ -f $tmp/late.out ]] ||
		{ echo "FAIL: start_bg's output file is not there at once"; status=1; }
	wait "$job"
	grep -qx late "$tmp/late.out" ||
		{ echo "FAIL: start_bg lost the job's output"; status=1; }
fi
if grep -nE '>"\$DEMO_DIR/[^"]*\.out" 2>&1 &' "$src/quickstart"; then
	echo "FAIL: a background job of the demo makes its own output file"
	status=1
fi
exit $status
