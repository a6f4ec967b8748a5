#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Growing a cluster that holds an erasure-coded pool: 4 OSDs, a 2+1 pool of
# 16 PGs with 300 objects; add one OSD, then two more at once. Every PG must
# get active+clean again and every object must read back at every step.
#
# Then one OSD out and back in (a routine failure on an m = 1 pool).
#
# CRUSH `indep` keeps a shard's position only across OSD failures: a new OSD
# or an `out` can move two or more positions of a PG at once, which left
# PGs incomplete before the monitors pinned EC placements (mon/ec_pin.h):
# each map now moves only the positions it must, and the rest one at a time
# as each PG comes clean. Each step waits until the PGs are clean *and* on
# CRUSH's placement (no pins left).
set -euo pipefail
. "$(dirname "$0")/../lib/cluster.sh"
build=${1:?usage: ec_grow_test.sh BUILD_DIR}
ctl="$build/tools/clusterctl"
load="$build/tests/integration/cairn_load"
dir=$(mktemp -d /tmp/cairn-ec-grow-XXXXXX)
finish() {
	local rc=$?
	cluster_finish "$rc"
}
trap finish EXIT
fail() {
	echo "FAIL: $*" >&2
	"$ctl" status >&2 || true
	"$ctl" pg ls ec 2>/dev/null | grep -v "active+clean" | head -20 >&2 || true
	exit 1
}
export CAIRN_OSD_GRACE=2s
up() {
	"$ctl" up --dir "$dir" --mons 1 --osds "$1" --osd-size 1G >"$dir/up.out" 2>&1 ||
		fail "up: $(cat "$dir/up.out")"
}
verify() {
	"$load" verify -c "$dir/cairn.conf" --pool ec --prefix e --count 300 --gen 1 \
		--max-size 65536 --omap 0 >"$dir/v.out" 2>&1 || fail "$1: verify: $(tail -n 3 "$dir/v.out")"
	grep -q '"bad":0,' "$dir/v.out" || fail "$1: $(tail -n 1 "$dir/v.out")"
	echo "$1: 300 EC objects verify"
}

up 4
export CAIRN_CONF="$dir/cairn.conf"
"$ctl" pool create ec --ec 2+1 --pg-num 16 >/dev/null || fail "pool create"
wait_clean "4 OSDs"
"$load" write -c "$dir/cairn.conf" --pool ec --prefix e --count 300 --gen 1 --max-size 65536 \
	--omap 0 >"$dir/w.out" 2>&1 || fail "write: $(tail -n 3 "$dir/w.out")"
verify "4 OSDs"
# norebalance holds the steps: the PGs CRUSH moved stay held (and readable).
"$ctl" osd set norebalance >/dev/null || fail "osd set norebalance"
up 5
wait_clean "a 5th OSD, norebalance" 960
sleep 2
held=$("$ctl" pg ls ec | grep -c "held; CRUSH wants" || true)
[ "$held" -gt 0 ] || fail "no PG held after an OSD was added: $("$ctl" pg ls ec)"
"$ctl" status | grep -q "moving: $held EC pgs" || fail "status: $("$ctl" status | grep moving)"
verify "5 OSDs, $held PGs held (norebalance)"
"$ctl" osd unset norebalance >/dev/null || fail "osd unset norebalance"
wait_placed "a 5th OSD" 960
verify "5 OSDs"
# The mons held the PGs CRUSH moved and stepped them (mon/ec_pin.h).
grep -q "EC PGs held off their CRUSH placement" "$dir"/mon.*.log ||
	fail "no EC PG was held when an OSD was added"
up 7
wait_placed "two OSDs more" 960
verify "7 OSDs"
"$ctl" osd out 2 >/dev/null || fail "osd out 2"
wait_placed "osd.2 out" 960
verify "osd.2 out"
"$ctl" osd in 2 >/dev/null || fail "osd in 2"
wait_placed "osd.2 in" 960
verify "osd.2 in"
echo "ec_grow_test: passed"
