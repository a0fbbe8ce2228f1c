#!/bin/bash
# SPDX-License-Identifier: MIT
# completion/rdmabrokerctl, as bash runs it: every command rdmabrokerctl
# lists, subcommands and options, and names asked from a broker on the
# software device.
set -u

src=${abs_top_srcdir:-$(cd "${srcdir:-.}" && pwd)}
ctl=${RDMABROKERCTL:-./rdmabrokerctl}
daemon=${RDMABROKERD:-./rdmabrokerd}
status=0
tmp=$(mktemp -d) || exit 99
pid=
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; wait; rm -rf "$tmp"' EXIT
# The completion runs "rdmabrokerctl": this build's.
mkdir "$tmp/bin"
ln -s "$ctl" "$tmp/bin/rdmabrokerctl"
PATH=$tmp/bin:$PATH
# shellcheck source=/dev/null
. "$src/completion/rdmabrokerctl"

# complete WORDS...: COMPREPLY for the last word of "rdmabrokerctl WORDS".
complete_words() {
	COMP_WORDS=(rdmabrokerctl "$@")
	COMP_CWORD=$#
	COMPREPLY=()
	_rdmabrokerctl
	printf '%s\n' "${COMPREPLY[@]}"
}

# expect WANT WORDS...: WANT is among the completions.
expect() {
	local want=$1 got
	shift
	got=$(complete_words "$@")
	if ! grep -qx -- "$want" <<<"$got"; then
		echo "FAIL: rdmabrokerctl $*<TAB> does not offer $want: $(tr '\n' ' ' <<<"$got")"
		status=1
	fi
}

cmds=$("$ctl" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z]*\) .*/\1/p')
[[ -n $cmds ]] || { echo "no commands from $ctl --help"; exit 99; }
for c in $cmds help; do
	expect "$c" ""
	expect "$c" help ""
done
expect status st
expect show dm ""
expect revoke dm ""
expect remove xrcd ""
expect rekey domain ""
# A family's command, which the completion does not name: what its help
# lists.
expect show rss ""
expect free dm ""
expect --domain xrcd --
expect --pretty status --p
expect --timeout -j status --t
expect --client objects --
expect --rekey evict --
expect --output metrics --
expect --container-socket cdi --

# Names from a broker.
"$daemon" --device soft --socket "$tmp/sock" --runtime-dir "$tmp" \
	--config /dev/null 2>"$tmp/log" &
pid=$!
for ((i = 0; i < 100; i++)); do
	[[ -S $tmp/sock ]] && break
	sleep 0.1
done
[[ -S $tmp/sock ]] || { cat "$tmp/log"; exit 99; }
expect "uid-$(id -u)" --socket "$tmp/sock" objects --domain ""
expect "uid-$(id -u)" -s "$tmp/sock" domain rekey ""
[[ $status -eq 0 ]] && echo "PASS: completion"
exit $status
