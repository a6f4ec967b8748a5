#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compare clusterctl's object -> PG -> OSDs with osdmaptool's (see generate.sh).
# Usage: check.sh CLUSTERCTL
set -uo pipefail
cd "$(dirname "$0")"
ctl=$1
map=../crush/hosts4x6.txt
pool=(--pool 1 --pg-num 192 --size 3 --rule 0)
fail=0
check() {
	local golden=$1
	shift
	if ! "$@" | diff -u "$golden" -; then
		echo "MISMATCH $golden"
		fail=$((fail + 1))
	fi
}
check pgs-all-in.golden "$ctl" crush map-pgs -i "$map" "${pool[@]}"
check pgs-out-5.golden "$ctl" crush map-pgs -i "$map" "${pool[@]}" --out 5
check pgs-out-13.golden "$ctl" crush map-pgs -i "$map" "${pool[@]}" --out 13
mapfile -t names < <(sed -E "s/^ object '(.*)' -> .*/\1/" objects.golden)
check objects.golden "$ctl" crush map-object -i "$map" "${pool[@]}" "${names[@]}"
if [ $fail -eq 0 ]; then
	echo "placement goldens: 3 x 192 PGs and 14 objects identical to osdmaptool"
	echo "1 passed, 0 failed"
else
	echo "0 passed, 1 failed"
	exit 1
fi
