#!/bin/sh
# SPDX-License-Identifier: MIT
# The committed seeds (tests/fuzz/corpus/*/seed-*) are exactly what
# tests/fuzz/gen_seeds and gen_state_seeds write (a state seed of an older
# journal format would fuzz only the refusal of its header); make
# fuzz-seeds writes them again.
set -u
: "${FUZZ_GEN_SEEDS:?}" "${FUZZ_GEN_STATE_SEEDS:?}" "${TESTS_FUZZ_CORPUS_DIR:?}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rdmab-seeds.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
"$FUZZ_GEN_SEEDS" "$tmp" || exit 99
"$FUZZ_GEN_STATE_SEEDS" "$tmp" || exit 99

rc=0 n=0
for t in request dispatch state; do
	for f in "$tmp/$t"/seed-*; do
		s=${f##*/}
		n=$((n + 1))
		if ! cmp -s "$f" "$TESTS_FUZZ_CORPUS_DIR/$t/$s"; then
			echo "seeds.sh: $t/$s is not what the generators write"
			rc=1
		fi
	done
	for f in "$TESTS_FUZZ_CORPUS_DIR/$t"/seed-*; do
		[ -e "$f" ] || continue
		if [ ! -e "$tmp/$t/${f##*/}" ]; then
			echo "seeds.sh: $t/${f##*/} is no longer generated"
			rc=1
		fi
	done
done
if [ "$n" -eq 0 ]; then
	echo "seeds.sh: gen_seeds wrote no seed"
	exit 99
fi
if [ "$rc" -ne 0 ]; then
	echo "seeds.sh: run make fuzz-seeds and commit tests/fuzz/corpus"
	exit 1
fi
echo "seeds.sh: the $n committed seeds are what the generators write"
