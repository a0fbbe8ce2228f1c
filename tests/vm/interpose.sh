# SPDX-License-Identifier: MIT
# Sourced by suite.sh (section interpose, issue 28): Debian's own verbs
# programs, unmodified, through rdmabroker-run on rxe: ibv_rc_pingpong and
# ibv_srq_pingpong (ibverbs-utils), ib_send_lat and ib_write_bw (perftest),
# server and client as two processes of the client user. Each run checks
# the program's own success line, that the broker listed both processes as
# clients, and that the data phase made no request (the two sessions'
# requests, which requests_served sums, sampled every two seconds or so,
# stay still over most of a long run); a SIGKILL of one side mid-run leaves
# nothing in the kernel. The figures (latency, bandwidth,
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
# the client user; WRAP is "$irun" or "". Under the interposer, unless
# ib_sample is 0 (the bench: a rdmabrokerctl costs a second of CPU under
# TCG and would slow only the broker's runs), the broker's listing is
# sampled all along: ib_maxseen (most of them listed at once), and in
# $L/LOG-requests.txt, for each sample with both listed, the sum of their
# requests. stdbuf -oL: the programs printf to a file, fully buffered, so
# without it their "local address" line, which starts the sampling, only
# reached the log at exit and no sample was ever taken.
# While sampling, the programs run at nice 19: they poll their CQs, and two
# of them on the VM's two CPUs left a sample several seconds to finish (one
# sample in a 9 s data phase).
ib_sample=1
# The bench's vCPUs, "SERVER CLIENT" (taskset), empty elsewhere: each
# side stays on its vCPU, so that the two modes of a repetition meet the
# same placement. Not one vCPU for both: the programs poll, and two
# pollers on one vCPU take turns at the scheduler's tick (30 ms a round
# trip in the first pinned run).
ib_pin=
ib_pair() {
	local log=$1 wrap=$2 sp cp n lone pre=() spre=() cpre=()
	shift 2
	ib_maxseen=0
	: >"$L/$log-requests.txt"
	[ -n "$wrap" ] && [ "$ib_sample" = 1 ] && pre=(nice -n 19)
	if [ -n "$ib_pin" ]; then
		spre=(taskset -c "${ib_pin% *}")
		cpre=(taskset -c "${ib_pin#* }")
	fi
	"${AS_CLIENT[@]}" timeout 300 "${pre[@]}" "${spre[@]}" stdbuf -oL $wrap "$@" \
		>"$L/$log-server.log" 2>&1 &
	sp=$!
	wait_for 60 listening
	"${AS_CLIENT[@]}" timeout 300 "${pre[@]}" "${cpre[@]}" stdbuf -oL $wrap "$@" 127.0.0.1 \
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
		if [ -n "$wrap" ] && [ "$ib_sample" = 1 ] &&
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

# ib_check NAME PATTERN ITERS PROG ARGS...: the pair with ITERS iterations
# (ARGS end with the iteration option) under the interposer: both printed
# PATTERN, both were listed at once, and the data phase is a plateau of
# requests over most of the samples with both processes listed (at least
# 3). One run, long enough for that: a short one (20 iterations, as the
# first version had beside it) ends its data phase within a sample.
ib_check() {
	local name=$1 pat=$2 iters=$3 p tries=0
	shift 3
	# The counts below are sized for a slow VM; a fast one ends the data
	# phase within a sample or two, too short to judge a plateau (CI saw
	# 1 and 2 samples): then again, 8 times longer, at most twice.
	while :; do
		ib_pair "$name" "$irun" "$@" "$iters"
		p=($(ib_plateau "$L/$name-requests.txt"))
		[ "$ib_src" = 0 ] && [ "$ib_crc" = 0 ] && [ "${p[1]}" -lt 3 ] &&
			[ "$tries" -lt 2 ] || break
		tries=$((tries + 1))
		iters=$((iters * 8))
		info "$name: ${p[1]} samples with both listed; again with $iters iterations"
	done
	check "$name-ok" "server exited $ib_src, client $ib_crc; both printed \"$pat\"" \
		bash -c "[ $ib_src = 0 ] && [ $ib_crc = 0 ] && grep -q '$pat' '$L/$name-server.log' && grep -q '$pat' '$L/$name-client.log'"
	check "$name-clients" "the broker listed $ib_maxseen of the two $1 processes at once" \
		test "$ib_maxseen" = 2
	check "$name-data-path-no-requests" "$iters iterations: the two sessions' requests stayed at ${p[2]} over ${p[0]} of the ${p[1]} samples with both listed" \
		test "${p[0]}" -ge 3 -a $((p[0] * 10)) -ge $((p[1] * 6)) -a "${p[2]}" -gt 0
}

# Sized for 20 to 30 s of data phase under TCG on a loaded 2-core host (the
# first runs: ibv_rc_pingpong 9 ms a round trip, ibv_srq_pingpong 1.3 ms,
# ib_send_lat about 1 ms, ib_write_bw 17 MB/s of 64 KiB writes): a sample
# (rdmabrokerctl) takes one to two seconds, then one second of rest.
ib_check rc-pingpong "iters in" 3000 ibv_rc_pingpong -d "$DEV" -g 0 -n
ib_check srq-pingpong "iters in" 20000 ibv_srq_pingpong -d "$DEV" -g 0 -n
ib_check send-lat "t_typical" 25000 ib_send_lat -d "$DEV" -x 0 -F -n
ib_check write-bw "BW average" 6000 ib_write_bw -d "$DEV" -x 0 -F -n

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

# --- raw-ioctl destroys (bad input) ---------------------------------------
# rxe cannot import: each process under the interposer has a context of
# its own, whose handles are its uverbs file's, and the broker registers
# none of its objects (own contexts are the kernel's to clean up). So
# "another process of the domain destroys one by handle" cannot reach
# them: the attacker's raw destroy on its own descriptor names nothing of
# the holder's (vm-rawdestroy attack). What the holder destroys itself
# by handle answers ENOENT to libibverbs' destroy afterwards; a new CQ
# takes the freed handle and survives the attack; the broker lists the
# holder with no object and counts nothing unaccounted; a SIGKILL after
# that leaves nothing in the kernel, and the broker drops the session.
raw_objects() { as_client "$ctl" --json objects 2>/dev/null | grep -o "\"pid\":$1[,}]" | wc -l; }
raw_unaccounted() { as_client "$ctl" --json domains 2>/dev/null | grep -c '"unaccounted":[1-9]'; }
# The holder's stdin: a FIFO off the 9p results folder.
raw_in=/run/vmtest/raw-in
raw_hold() {
	rm -f "$raw_in"
	mkfifo "$raw_in"
	base=$(totals)
	"${AS_CLIENT[@]}" "$irun" "$bin/vm-rawdestroy" hold "$DEV" \
		<"$raw_in" >"$L/$1.log" 2>&1 &
	rp=$!
	exec 7>"$raw_in"
	raw_ready() { grep -q '^READY' "$L/$1.log" || ! alive "$rp"; }
	wait_for 60 raw_ready "$1"
	grep -q '^READY' "$L/$1.log"
}
if raw_hold rawdestroy; then
	h=$(sed -n 's/^HANDLE //p' "$L/rawdestroy.log")
	n=$(ib_seen vm-rawdestroy)
	check rawdestroy-client "the broker lists $n vm-rawdestroy session, holding $(raw_objects "$rp") objects (want 1 and 0)" \
		test "$n" = 1 -a "$(raw_objects "$rp")" = 0
	run_prog rawdestroy-attack "${AS_CLIENT[@]}" "$irun" "$bin/vm-rawdestroy" attack "$DEV" "$h"
	echo check >&7
	exec 7>&-
	wait "$rp"
	checks_from "$L/rawdestroy.log" || fail rawdestroy "no CHECK line: $(tail -n 3 "$L/rawdestroy.log" | tr '\n' ' ')"
	check rawdestroy-books "after the holder's close: kernel before$base, after$(totals); domains with unaccounted objects: $(raw_unaccounted)" \
		test "$(totals)" = "$base" -a "$(raw_unaccounted)" = 0
else
	exec 7>&-
	kill -KILL "$rp" 2>/dev/null
	fail rawdestroy "no READY: $(tail -n 3 "$L/rawdestroy.log" | tr '\n' ' ')"
fi
if raw_hold rawdestroy-kill; then
	kill -KILL "$rp"
	wait "$rp" 2>/dev/null
	exec 7>&-
	raw_gone() { [ "$(totals)" = "$base" ] && [ "$(ib_seen vm-rawdestroy)" = 0 ]; }
	wait_for 10 raw_gone
	check rawdestroy-sigkill "SIGKILL after the raw destroys and the handle's reuse: kernel before$base, after$(totals); sessions $(ib_seen vm-rawdestroy); domains with unaccounted objects $(raw_unaccounted)" \
		test "$(totals)" = "$base" -a "$(ib_seen vm-rawdestroy)" = 0 -a "$(raw_unaccounted)" = 0
else
	exec 7>&-
	kill -KILL "$rp" 2>/dev/null
	fail rawdestroy-sigkill "no READY: $(tail -n 3 "$L/rawdestroy-kill.log" | tr '\n' ' ')"
fi
rm -f "$raw_in"

# --- the benchmark: the same binaries with and without the interposer ----
# Under TCG one run is noise (one repetition of ibv_rc_pingpong took 764
# usec/iter, the next 7900, the same binary): each repetition runs plain
# and broker back to back, in alternating order, so that a slow spell of
# the host hits both, and yields a paired ratio broker/plain; the figures
# are the medians with the per-repetition ratios' median, range and
# quartiles. At least 3 repetitions, at most VM_INTERPOSE_REPS (7); no new
# one starts past VM_INTERPOSE_BENCH_S seconds if the last one would not
# fit. 0, the default of check-vm, skips the bench: it costs minutes of a
# suite with a budget; make bench-vm runs it (600 s, up to 40 repetitions,
# server and client pinned to vCPUs 0 and 1 with VM_INTERPOSE_PIN).
# No sampling of the broker here.
# Latency: ibv_rc_pingpong's usec/iter (gettimeofday); ib_send_lat's
# t_typical only if the first repetition gave a number: perftest cannot
# calibrate its cycle counter under TCG (r^2 < 0.9: "inf"). Bandwidth:
# ib_write_bw's BW average, which perftest also derives from its cycle
# counter: 0.00 when the calibration failed, left out (n says how many
# pairs had both figures). Setup: from the server's start to the end of a
# one-iteration ibv_rc_pingpong pair (both processes' start, open, QP
# setup, one send).
B=$L/interpose-bench.txt
: >"$B"
if [ "${VM_INTERPOSE_BENCH_S:-0}" -le 0 ]; then
	info "interpose-bench: skipped (VM_INTERPOSE_BENCH_S=0, check-vm's default; make bench-vm runs it)"
	return 0
fi
pp_lat() { sed -n 's/.* = \([0-9.]*\) usec\/iter$/\1/p' "$1" | tail -n 1; }
lat() { awk '$1 ~ /^[0-9]+$/ && NF >= 9 { print $5 }' "$1" | tail -n 1; }
bw() { awk '$1 ~ /^[0-9]+$/ && NF >= 5 { print $4 }' "$1" | tail -n 1; }
# bench_one KIND MODE REP: one pair, its figure appended to $B.KIND.MODE
# ("-" when the program printed none, so that the lines stay paired).
bench_one() {
	local k=$1 mode=$2 i=$3 wrap="" t0 v
	[ "$mode" = broker ] && wrap=$irun
	t0=$(now_ms)
	case $k in
	pp) ib_pair "bench-pp-$mode-$i" "$wrap" ibv_rc_pingpong -d "$DEV" -g 0 -n 1000
		v=$(pp_lat "$L/bench-pp-$mode-$i-client.log") ;;
	lat) ib_pair "bench-lat-$mode-$i" "$wrap" ib_send_lat -d "$DEV" -x 0 -F -n 300
		v=$(lat "$L/bench-lat-$mode-$i-client.log") ;;
	bw) ib_pair "bench-bw-$mode-$i" "$wrap" ib_write_bw -d "$DEV" -x 0 -F -n 1000
		v=$(bw "$L/bench-bw-$mode-$i-client.log") ;;
	setup) ib_pair "bench-setup-$mode-$i" "$wrap" ibv_rc_pingpong -d "$DEV" -g 0 -n 1
		v=$(($(now_ms) - t0))
		[ "$ib_src" = 0 ] && [ "$ib_crc" = 0 ] || v="" ;;
	esac
	echo "${v:--}" >>"$B.$k.$mode"
}
# bench_sum KIND: "PLAIN BROKER RATIO LO HI N Q1 Q3": the medians of the
# figures, the median of the paired ratios, their range and quartiles
# (the middle half of the ratios, which one slow spell cannot stretch as
# it does the range), over the N repetitions where both gave a finite,
# non-zero number.
bench_sum() {
	paste "$B.$1.plain" "$B.$1.broker" | awk '
	function med(a, n,   i, j, t) {
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
				t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
			}
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	$1 ~ /^[0-9.]+$/ && $2 ~ /^[0-9.]+$/ && $1 > 0 && $2 > 0 {
		n++; p[n] = $1; b[n] = $2; r[n] = $2 / $1
		lo = n == 1 || r[n] < lo ? r[n] : lo
		hi = n == 1 || r[n] > hi ? r[n] : hi
	}
	END {
		if (!n) { print "- - n/a - - 0"; exit }
		# med() leaves r sorted.
		printf "%g %g %.3f %.3f %.3f %d %.3f %.3f\n", med(p, n),
			med(b, n), med(r, n), lo, hi, n,
			r[int((n + 3) / 4)], r[n + 1 - int((n + 3) / 4)]
	}'
}
ib_sample=0
ib_pin=${VM_INTERPOSE_PIN:-}
reps=${VM_INTERPOSE_REPS:-7}
budget=${VM_INTERPOSE_BENCH_S:-0}
kinds="pp lat bw setup"
bench_t0=$(date +%s)
i=0
last=0
while [ "$i" -lt "$reps" ]; do
	el=$(($(date +%s) - bench_t0))
	[ "$i" -ge 3 ] && [ $((el + last)) -gt "$budget" ] && break
	i=$((i + 1))
	modes="plain broker"
	[ $((i % 2)) = 0 ] && modes="broker plain"
	for k in $kinds; do
		for mode in $modes; do
			bench_one "$k" "$mode" "$i"
		done
	done
	# perftest's "inf" (or nothing) in the first repetition: it cannot
	# calibrate here, later ones would not either.
	if [ "$i" = 1 ] && ! grep -q '^[0-9.]*[0-9]$' "$B.lat.plain"; then
		kinds="pp bw setup"
	fi
	last=$(($(date +%s) - bench_t0 - el))
done
el=$(($(date +%s) - bench_t0))
line="interpose-bench, $i repetitions (plain and broker back to back, order alternating${ib_pin:+, server and client pinned to vCPUs $ib_pin}) in ${el}s, medians and broker/plain ratio per repetition (median [range] {quartiles}):"
for k in pp lat bw setup; do
	case $k in
	pp) what="ibv_rc_pingpong usec/iter" ;;
	lat) what="ib_send_lat t_typical usec" ;;
	bw) what="ib_write_bw MB/s" ;;
	setup) what="1-iteration pair ms" ;;
	esac
	sm=($(bench_sum "$k"))
	if [ "${sm[5]}" = 0 ]; then
		line+=" $k ($what) n/a: plain $(tr '\n' ' ' <"$B.$k.plain")/ broker $(tr '\n' ' ' <"$B.$k.broker")(perftest cannot calibrate its clock under TCG);"
	else
		line+=" $k ($what) plain ${sm[0]} broker ${sm[1]} ratio ${sm[2]} [${sm[3]}..${sm[4]}] {${sm[6]}..${sm[7]}} n=${sm[5]};"
	fi
	echo "$k plain $(tr '\n' ' ' <"$B.$k.plain")/ broker $(tr '\n' ' ' <"$B.$k.broker")" >>"$B"
done
echo "${line%;}" >>"$B"
info "${line%;}"
