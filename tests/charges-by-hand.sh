#!/bin/sh
# SPDX-License-Identifier: MIT
#
# charges-by-hand: every quota's count changes through daemon/registry/charge.c's
# calls (issue 24 item 5), which log and count a count given back beyond
# what it holds instead of letting it wrap or clamping it. This lists the
# daemon's lines that change one by hand (++, --, += or -= on it) and fails
# when there is one.
#   tests/charges-by-hand.sh
# Run from anywhere; the tree is $abs_top_srcdir, $srcdir or the script's
# parent folder.
#
# The counts: a domain's use of its quotas (used.*), a member's dm_bytes
# in a configured domain (struct domain_usage, as u or usage), a uid's
# (struct user: n_conns, pinned_fds, watches, private_ctxs, dm_pages,
# dm_persistent, dm_persistent_bytes; its places in the fd store,
# store_places), the broker's connections and
# watches (n_conns, n_watch_pidfds), a device's reserved DM bytes
# (dm_reserved), what a context holds of its domain's charges
# (unaccounted, as x or ctx; dm_bytes_left). Not scanned: charge.c, and
# the soft device (device-soft.c, soft-objects.c), whose own dm_reserved
# is the memory of the device it pretends to be, not a quota.
set -eu

top=${abs_top_srcdir:-}
if [ -z "$top" ] && [ -n "${srcdir:-}" ] && [ -f "$srcdir/Makefile.am" ]; then
	top=$srcdir
fi
[ -n "$top" ] || top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

fields='(->|\.)(n_conns|pinned_fds|watches|n_watch_pidfds|private_ctxs|store_places|dm_pages|dm_persistent|dm_persistent_bytes|dm_reserved|dm_bytes_left)|used\.[a-z_]+|\<(u|usage)->dm_bytes|\<(x|ctx)->unaccounted'
op='(\+\+|--|[-+]=)'
pattern="($fields)[[:space:]]*$op|(\+\+|--)[[:space:]]*[a-z_>.-]*($fields)\>"

files=$(find daemon -name '*.c' ! -name charge.c ! -name device-soft.c \
	! -name soft-objects.c | sort)
[ -n "$files" ] || {
	echo "charges-by-hand: no daemon sources under $top" >&2
	exit 1
}
# shellcheck disable=SC2086
found=$(grep -HnE "$pattern" $files || true)
if [ -n "$found" ]; then
	echo "charges-by-hand: quota counts changed outside daemon/registry/charge.c:"
	echo "$found"
	exit 1
fi
echo "charges-by-hand: every quota count changes through daemon/registry/charge.c"
