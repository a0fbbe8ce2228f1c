# SPDX-License-Identifier: MIT
# Sourced by suite.sh (section interpose, issue 28): Debian's own verbs
# programs, unmodified, through rdmabroker-run on rxe: ibv_rc_pingpong and
# ibv_srq_pingpong (ibverbs-utils), ib_send_lat and ib_write_bw (perftest),
# server and client as two processes of the client user. Each run checks
# the program's own success line, that the broker listed both processes as
# clients, and that the data phase made no request (the two sessions'
# requests, which requests_served sums, sampled every second, stay still over
# most of a long run); a SIGKILL of one side
# mid-run leaves nothing in the kernel. The figures (latency, bandwidth,
# setup time, under the interposer and without it) go to results.txt as
# INFO lines and to $L/interpose-bench.txt.

irun=$bindir/rdmabroker-run
PORT=18515

# The broker's clients named $1 (comm, 15 bytes at most): one line each,
# its requests so far.
ib_clients() {
	as_client "$ctl" --json clients 2>/dev/null | tr '{' '\n' |
		grep "\"comm\":\"${1:0:15}\"" |
		sed -n 's/.*"requests":\([0-9]*\).*/\1/p'
}
ib_seen() { ib_clients "$1" | wc -l; }
listening() { ss -ltn "sport = :$PORT" 2>/dev/null | grep -q LISTEN; }

# ib_pair LOG WRAP PROG ARGS...: server, then the client to 127.0.0.1, as
# the client user; WRAP is "$irun" or "". Under the interposer the broker's
# listing is sampled all along: ib_maxseen (most of them listed at once),
# and in $L/LOG-requests.txt, for each sample with both listed, the sum of
# their requests.
ib_pair() {
	local log=$1 wrap=$2 sp cp n lone
	shift 2
	ib_maxseen=0
	: >"$L/$log-requests.txt"
	"${AS_CLIENT[@]}" timeout 300 $wrap "$@" >"$L/$log-server.log" 2>&1 &
	sp=$!
	wait_for 60 listening
	"${AS_CLIENT[@]}" timeout 300 $wrap "$@" 127.0.0.1 \
		>"$L/$log-client.log" 2>&1 &
	cp=$!
	lone=0
	while alive "$cp" || alive "$sp"; do
		# One side failed: the other waits for it in vain.
		if ! alive "$cp" || ! alive "$sp"; then
			lone=$((lone + 1))
			[ $lone = 100 ] && kill -TERM "$sp" "$cp" 2>/dev/null
		fi
		# Sampled once both opened the device (they print their
		# address), then every second: a rdmabrokerctl under TCG
		# takes a second of CPU, and polling every 0.3 s through the
		# connection setup starved the VM (RTR failed in every pair of
		# the second check-vm run).
		if [ -n "$wrap" ] &&
			grep -q "local address" "$L/$log-server.log" &&
			grep -q "local address" "$L/$log-client.log"; then
			ib_clients "$1" >"$L/$log-sample"
			n=$(wc -l <"$L/$log-sample")
			[ "$n" -gt "$ib_maxseen" ] && ib_maxseen=$n
			[ "$n" = 2 ] && awk '{ s += $1 } END { print s }' \
				"$L/$log-sample" >>"$L/$log-requests.txt"
			sleep 0.7
		fi
		sleep 0.3
	done
	wait "$sp"
	ib_src=$?
	wait "$cp"
	ib_crc=$?
}

# ib_plateau FILE: "LONGEST SAMPLES VALUE": the longest run of equal
# request sums among the samples: the data phase, where a hot path that
# asked the broker anything would move it from sample to sample.
ib_plateau() {
	awk 'NR == 1 || $1 != v { v = $1; run = 0 }
		{ run++; if (run > best) { best = run; bv = v } }
		END { print best + 0, NR, bv + 0 }' "$1"
}

# ib_check NAME PATTERN SHORT LONG PROG ARGS...: the pair with SHORT and
# LONG iterations (ARGS end with the iteration option) under the
# interposer; the long run's data phase must be a plateau of requests over
# most of the samples with both processes listed (at least 3).
ib_check() {
	local name=$1 pat=$2 short=$3 long=$4 p
	shift 4
	for iters in "$short" "$long"; do
		ib_pair "$name-$iters" "$irun" "$@" "$iters"
		check "$name-$iters-ok" "server exited $ib_src, client $ib_crc; both printed \"$pat\"" \
			bash -c "[ $ib_src = 0 ] && [ $ib_crc = 0 ] && grep -q '$pat' '$L/$name-$iters-server.log' && grep -q '$pat' '$L/$name-$iters-client.log'"
		check "$name-$iters-clients" "the broker listed $ib_maxseen of the two $1 processes at once" \
			test "$ib_maxseen" = 2
	done
	p=($(ib_plateau "$L/$name-$long-requests.txt"))
	check "$name-data-path-no-requests" "$long iterations: the two sessions' requests stayed at ${p[2]} over ${p[0]} of the ${p[1]} samples (1 s apart) with both listed" \
		test "${p[0]}" -ge 3 -a $((p[0] * 10)) -ge $((p[1] * 6)) -a "${p[2]}" -gt 0
}

# Under TCG an RC round trip on rxe takes about 10 ms: the long runs last
# 10 to 20 s, dozens of samples.
ib_check rc-pingpong "iters in" 20 1000 ibv_rc_pingpong -d "$DEV" -g 0 -n
ib_check srq-pingpong "iters in" 20 1000 ibv_srq_pingpong -d "$DEV" -g 0 -n
ib_check send-lat "t_typical" 20 1000 ib_send_lat -d "$DEV" -x 0 -F -n
ib_check write-bw "BW average" 20 2000 ib_write_bw -d "$DEV" -x 0 -F -n

# --- SIGKILL of one side mid-run ----------------------------------------
base=$(totals)
# No timeout(1) in between: $! is the program itself (setpriv and
# rdmabroker-run exec it).
"${AS_CLIENT[@]}" "$irun" ibv_rc_pingpong -d "$DEV" -g 0 \
	-n 100000000 >"$L/kill-server.log" 2>&1 &
ks=$!
wait_for 60 listening
"${AS_CLIENT[@]}" "$irun" ibv_rc_pingpong -d "$DEV" -g 0 \
	-n 100000000 127.0.0.1 >"$L/kill-client.log" 2>&1 &
kc=$!
both() { [ "$(ib_seen ibv_rc_pingpong)" = 2 ]; }
if wait_for 60 both; then
	sleep 2
	held=$(rdma_total qp)
	kill -KILL "$ks"
	wait "$ks" 2>/dev/null
	# The other side sees its peer gone (or never does: rxe has no
	# timeout on a dead RC peer within the wait); killed too.
	wait_for 10 dead "$kc" || kill -KILL "$kc"
	wait "$kc" 2>/dev/null
	gone() { [ "$(totals)" = "$base" ]; }
	wait_for 10 gone
	check interpose-sigkill-no-leak "QPs held mid-run: $held; before$base, after$(totals)" \
		gone
	nobody() { [ "$(ib_seen ibv_rc_pingpong)" = 0 ]; }
	check interpose-sigkill-sessions-gone "the broker dropped both sessions" \
		wait_for 10 nobody
else
	kill -KILL "$ks" "$kc" 2>/dev/null
	fail interpose-sigkill-no-leak "the pair never connected: $(tail -n 2 "$L/kill-client.log" | tr '\n' ' ')"
fi

# --- the benchmark: the same binaries with and without the interposer ----
# Latency: ibv_rc_pingpong's usec/iter (gettimeofday); ib_send_lat's
# t_typical is printed too, but perftest's cycle counter cannot be
# calibrated under TCG (r^2 < 0.9: "inf"). Bandwidth: ib_write_bw's BW
# average. Setup: from the server's start to the end of a one-iteration
# ibv_rc_pingpong pair (both processes' start, open, QP setup, one send).
B=$L/interpose-bench.txt
: >"$B"
pp_lat() { sed -n 's/.* = \([0-9.]*\) usec\/iter$/\1/p' "$1" | tail -n 1; }
lat() { awk '$1 ~ /^[0-9]+$/ && NF >= 9 { print $5 }' "$1" | tail -n 1; }
bw() { awk '$1 ~ /^[0-9]+$/ && NF >= 5 { print $4 }' "$1" | tail -n 1; }
med() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
reps=${VM_INTERPOSE_REPS:-3}
for i in $(seq "$reps"); do
	# Alternated, so that a slow spell of the host hits both.
	for mode in plain broker; do
		wrap=""
		[ $mode = broker ] && wrap=$irun
		ib_pair "bench-pp-$mode-$i" "$wrap" ibv_rc_pingpong -d "$DEV" -g 0 -n 300
		pp_lat "$L/bench-pp-$mode-$i-client.log" >>"$B.pp.$mode"
		ib_pair "bench-lat-$mode-$i" "$wrap" ib_send_lat -d "$DEV" -x 0 -F -n 300
		lat "$L/bench-lat-$mode-$i-client.log" >>"$B.lat.$mode"
		ib_pair "bench-bw-$mode-$i" "$wrap" ib_write_bw -d "$DEV" -x 0 -F -n 1000
		bw "$L/bench-bw-$mode-$i-client.log" >>"$B.bw.$mode"
		t0=$(now_ms)
		ib_pair "bench-setup-$mode-$i" "$wrap" ibv_rc_pingpong -d "$DEV" -g 0 -n 1
		echo $(($(now_ms) - t0)) >>"$B.setup.$mode"
	done
done
for k in pp lat bw setup; do
	p=$(med <"$B.$k.plain")
	b=$(med <"$B.$k.broker")
	r=$(awk -v p="$p" -v b="$b" 'BEGIN { if (p + 0 > 0 && p != "inf") printf "%.3f", b / p; else print "n/a" }')
	echo "$k plain $p broker $b ratio $r (medians of $reps: plain $(tr '\n' ' ' <"$B.$k.plain")/ broker $(tr '\n' ' ' <"$B.$k.broker"))" >>"$B"
	info "interpose-bench $k (pp: ibv_rc_pingpong usec/iter, lat: ib_send_lat t_typical usec, bw: ib_write_bw MB/s, setup: ms): plain $p, broker $b, ratio $r"
done
