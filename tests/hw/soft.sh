#!/bin/sh
# SPDX-License-Identifier: MIT
# make check: the mlx5 suite's programs against the soft device (--soft),
# each the broker's side of its steps; data-path steps print SKIP lines.
# hw_xrcd is mlx5's only (its checks are the kernel's: ibv_close_xrcd and
# `rdma resource`). Root runs the parts with a second uid (nobody); another
# user runs them as itself, said on a SKIP line.
set -u
# Run from the build directory, as make check does.
hw=tests/hw
rc=0
for t in hw_rss hw_dm hw_import hw_interpose hw_restart_rss; do
	echo "== $t --soft"
	timeout -k 5 120 "$hw/$t" --soft
	r=$?
	echo "== $t --soft: exit $r"
	[ $r = 0 ] || rc=1
done
exit $rc
