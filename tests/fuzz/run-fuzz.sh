#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-fuzz.sh NAME FUZZDIR SRCDIR PACKETDIR SECONDS [LIBFUZZER-OPTION...]
#
# Run FUZZDIR/fuzz_NAME for SECONDS from FUZZDIR/corpus/NAME, which first
# gets the committed corpus SRCDIR/corpus/NAME (and, for the request target,
# the packets of PACKETDIR). Quiet on success but for the figures; on a
# crash, a leak or a hang, the end of the log and how to replay the input.
set -u

name=$1 fuzzdir=$2 srcdir=$3 packets=$4 seconds=$5
shift 5
bin=$fuzzdir/fuzz_$name
corpus=$fuzzdir/corpus/$name
artifacts=$fuzzdir/artifacts
log=$fuzzdir/$name.log

mkdir -p "$corpus" "$artifacts" || exit 1
# New inputs found by earlier runs stay; the committed ones are copied over
# again in case they changed.
cp "$srcdir/corpus/$name"/* "$corpus"/ || exit 1
if [ "$name" = request ]; then
	cp "$packets"/*.bin "$corpus"/ || exit 1
fi
dict=
if [ -f "$srcdir/$name.dict" ]; then
	dict=-dict=$srcdir/$name.dict
fi
before=$(ls "$corpus" | wc -l)

echo "check-fuzz: $name for ${seconds}s from $before inputs"
rc=0
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
"$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
	-print_final_stats=1 -artifact_prefix="$artifacts/$name-" \
	$dict "$@" "$corpus" >"$log" 2>&1 || rc=$?

if [ "$rc" -ne 0 ]; then
	echo "check-fuzz: $name FAILED (exit $rc); the end of $log:"
	tail -n 80 "$log" | sed 's/^/    /'
	for a in "$artifacts/$name"-*; do
		[ -e "$a" ] || continue
		echo "check-fuzz: input: $a"
		echo "check-fuzz: replay: $bin $a"
		echo "check-fuzz:     or: tests/fuzz/replay_$name $a"
	done
	exit 1
fi
# The last status line (runs, coverage, corpus) and the final figures.
grep -E '^#[0-9]+' "$log" | tail -n 1 | sed "s/^/check-fuzz: $name: /"
grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' \
	"$log" | sed "s/^/check-fuzz: $name: /"
after=$(ls "$corpus" | wc -l)
echo "check-fuzz: $name: corpus $before -> $after inputs, no crash"
