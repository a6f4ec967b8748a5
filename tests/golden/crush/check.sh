#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compare `clusterctl crush test` with every crushtool golden (see generate.sh).
#
# Our crush_ln() tables are generated (crush/tools/gen_ln_table.py), with
# Ceph's 42 irregular LL entries as a correction list (NOTICE): every line
# must be identical. known-differences stays empty; a line listed there
# would have to differ exactly, and anything else that differs fails.
# Usage: check.sh CLUSTERCTL
set -uo pipefail
cd "$(dirname "$0")"
ctl=$1
got=$(mktemp)
trap 'rm -f "$got"' EXIT
cases=0
while read -r golden map rule nrep weights; do
	[ -z "$golden" ] || [ "${golden:0:1}" = "#" ] && continue
	cases=$((cases + 1))
	# Rule and num_rep '-': both tools' defaults (every rule and size, x 0..1023).
	sel=(--rule "$rule" --num-rep "$nrep" --min-x 0 --max-x 9999)
	[ "$rule" != - ] || sel=()
	# shellcheck disable=SC2086
	"$ctl" crush test -i "$map.txt" "${sel[@]}" $weights >"$got.out" ||
		{ echo "FAIL $golden: clusterctl failed"; exit 1; }
	diff "$got.out" "$golden.golden" | grep -E '^[<>]' | sed "s/^/$golden /" >>"$got"
done <cases
rm -f "$got.out"
if ! diff -u known-differences "$got"; then
	echo "FAIL: mappings differ from crushtool beyond the known-differences list"
	echo "0 passed, 1 failed"
	exit 1
fi
n=$(grep -c '^.* <' known-differences || true)
echo "crush goldens: $cases cases ($(cat ./*.golden | wc -l) mappings), identical to crushtool except $n known lines"
echo "1 passed, 0 failed"
