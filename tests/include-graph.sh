#!/bin/sh
# SPDX-License-Identifier: MIT
#
# include-graph: the daemon's #include graph, its cycles and the arrows that
# point up a layer:
#   tests/include-graph.sh [--edges] [DIR...]      (default: daemon)
# A module is a .c and its .h. Layers, lowest first (DESIGN.md section 12):
#   0 util      log, queue, ids, and what every layer may use
#   1 device    the device layer, its verbs and soft implementations
#   2 core      the registry, domains, contexts, users, configuration
#               (the families' keys too: they need the parser alone),
#               the family interface (family.h)
#   3 family    DM, XRCD, RSS, the families array, rekey, the cleanup
#               engine, the counts
#   4 handler   request handlers and listings
#   5 transport server, connections, dispatch, main, systemd, notifier,
#               the self-bound socket, the runtime directory
# An arrow "points up" when a module includes a module of a higher layer.
# The table below names modules by path without the extension; a module it
# does not name is reported, so that the table stays whole.
#
# The bounds (make check sets them, tests/Makefile.inc): with
# INCLUDE_GRAPH_MAX_UP, INCLUDE_GRAPH_MAX_CYCLES and INCLUDE_GRAPH_MAX_CYCLIC
# set, more arrows up, cycles or modules in cycles than that, or a module
# the table does not name, fail the run (exit 1); unset or empty, the graph
# is only printed. The tree is the script's parent folder; DIRs are
# relative to it.
set -eu
edges=0
if [ "${1:-}" = "--edges" ]; then
	edges=1
	shift
fi
# The tree is the script's: make check runs it from the build folder.
cd "$(dirname "$0")/.." || exit 99
[ -d daemon ] || { echo "include-graph: no daemon/ beside $0" >&2; exit 99; }
[ $# -gt 0 ] || set -- daemon
for d in "$@"; do
	find "$d" -name '*.[ch]'
done | sort | while read -r f; do
	grep -H '^#include "' "$f" || true
done | awk -v edges="$edges" -v max_up="${INCLUDE_GRAPH_MAX_UP:-}" \
	-v max_cycles="${INCLUDE_GRAPH_MAX_CYCLES:-}" \
	-v max_cyclic="${INCLUDE_GRAPH_MAX_CYCLIC:-}" '
function layer_of(m,    i) {
	for (i = 1; i <= nrules; i++)
		if (m ~ rule_re[i])
			return rule_layer[i]
	return -1
}
function strong(v,    w, i) {
	idx[v] = low[v] = ++counter
	stack[++sp] = v
	on[v] = 1
	for (i = 1; i <= nout[v]; i++) {
		w = out[v, i]
		if (!(w in idx)) {
			strong(w)
			if (low[w] < low[v])
				low[v] = low[w]
		} else if (on[w] && idx[w] < low[v]) {
			low[v] = idx[w]
		}
	}
	if (low[v] == idx[v]) {
		ncomp++
		size[ncomp] = 0
		do {
			w = stack[sp--]
			on[w] = 0
			size[ncomp]++
			member[ncomp] = member[ncomp] " " w
		} while (w != v)
	}
}
BEGIN {
	# path pattern (a regular expression over the module name) and layer
	n = split("^daemon/(util/log|util/queue|util/ids|util/why|util/rec-fields|restart/fdstore|restart/journal|restart/record-pack|restart/inflight|util/keysort|restart/notify-sock|util/array)$ 0 " \
		  "^daemon/(device/device|device/verbs/device-verbs|device/soft/device-soft|device/soft/soft-objects|device/verbs/uverbs|device/caps|families/rss/rss-verbs|device/soft/soft)$ 1 " \
		  "^daemon/(registry/objects|registry/domain|registry/domain-join|registry/ctx|registry/user|registry/policy|config/conf|config/conf-check|config/conf-family|families/dm/dm-conf|families/xrcd/xrcd-conf|families/rss/rss-conf|registry/cgroup|families/family|registry/charge|registry/core|registry/client|registry/journal-sink|restart/restart|restart/restart-int|restart/restore-object|restart/restore-domain|restart/kept|restart/store-share|restart/owner-pidfd)$ 2 " \
		  "^daemon/(families/dm/dm|families/dm/dm-revoke|families/dm/dm-quota|families/dm/dm-metrics|families/dm/dm-user|families/xrcd/xrcd|families/rss/rss|families/rekey|registry/obj-cleanup|registry/obj-watch|registry/unaccounted|registry/ctx-hooks|families/families|families/family-state|families/dm/dm-state|families/xrcd/xrcd-state|families/rss/rss-state)$ 3 " \
		  "^daemon/(registry/obj-handlers|server/inspect|server/session|families/dm/dm-list|registry/ctx-handlers|families/dm/dm-handlers|families/rekey-handlers|families/xrcd/xrcd-handlers|families/rss/rss-handlers|server/handler)$ 4 " \
		  "^daemon/(server/server|server/conn|server/dispatch|server/main|server/sd|server/notify|server/listen|server/runtime|restart/restart-srv|restart/restore|restart/reexec)$ 5 " \
		  "^daemon/server/conn-evict$ 5 " \
		  "^daemon/util/fault$ 0 " \
		  "^daemon/families/rss/(rss-rules|rss-rebuild|rss-requests)$ 3 " \
		  "^daemon/server/metrics$ 0 " \
		  "^daemon/restart/journal-(int|crc|index|slots|read)$ 0 " \
		  "^daemon/restart/restore-(int|session|ctx|registry)$ 5 " \
		  "^daemon/(server/metrics-text|server/metrics-req|server/metrics-http)$ 5", t, " ")
	for (i = 1; i < n; i += 2) {
		rule_re[++nrules] = t[i]
		rule_layer[nrules] = t[i + 1]
	}
}
{
	split($0, a, ":")
	from = a[1]
	sub(/\.[ch]$/, "", from)
	to = $0
	sub(/^[^"]*"/, "", to)
	sub(/".*$/, "", to)
	sub(/\.h$/, "", to)
	if (to !~ /^daemon\//)
		next
	node[from] = 1
	node[to] = 1
	if (from == to || ((from, to) in seen))
		next
	seen[from, to] = 1
	out[from, ++nout[from]] = to
	nedges++
	lf = layer_of(from)
	lt = layer_of(to)
	if (lf < 0)
		unknown[from] = 1
	if (lt < 0)
		unknown[to] = 1
	if (lf >= 0 && lt > lf) {
		nup++
		up[nup] = from " -> " to " (" lf " -> " lt ")"
	}
	if (edges)
		print "edge " from " -> " to
}
END {
	for (v in node)
		if (!(v in idx))
			strong(v)
	cyc = cyclic = 0
	for (c = 1; c <= ncomp; c++)
		if (size[c] > 1) {
			cyc++
			cyclic += size[c]
			printf "cycle of %d modules:%s\n", size[c], member[c]
		}
	for (i = 1; i <= nup; i++)
		print "up " up[i]
	nunknown = 0
	for (v in unknown) {
		print "unknown layer: " v
		nunknown++
	}
	printf "%d modules, %d include arrows between modules, %d cycles " \
	       "(%d modules), %d arrows up a layer\n", length(node), nedges,
	       cyc, cyclic, nup
	bad = 0
	if (max_up != "" && nup > max_up + 0) {
		printf "include-graph: %d arrows up a layer, at most %d " \
		       "allowed\n", nup, max_up
		bad = 1
	}
	if (max_cycles != "" && cyc > max_cycles + 0) {
		printf "include-graph: %d cycles, at most %d allowed\n", cyc,
		       max_cycles
		bad = 1
	}
	if (max_cyclic != "" && cyclic > max_cyclic + 0) {
		printf "include-graph: %d modules in cycles, at most %d " \
		       "allowed\n", cyclic, max_cyclic
		bad = 1
	}
	if ((max_up != "" || max_cycles != "" || max_cyclic != "") &&
	    nunknown) {
		printf "include-graph: %d modules of no layer: name them in " \
		       "the table\n", nunknown
		bad = 1
	}
	exit bad
}'
