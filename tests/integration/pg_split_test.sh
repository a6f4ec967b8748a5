#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# PG split and merge (issue #29): a pool's pg_num grows and shrinks online and every object stays
# reachable. 4 OSDs with 3 PG shards each (a child or a merge source belongs
# to another reactor shard than its parent or target: seeds differ by a
# power of two), a size-3 pool of 8 PGs holding
# SPLIT_OBJECTS objects (default 2,000; ctest's normal pass runs the
# issue's 20,000):
#  1. pg_num 8 -> 64 in one step, with one OSD killed first and under a
#     verifying read/write load (cairn_load thrash: no error, nothing lost,
#     nothing applied twice): the others split at once; the killed one
#     splits when it replays the map after its restart.
#  3. pgp_num 64: the children move to their own OSDs (backfill). The
#     mons raise pgp_num by themselves (doubling, once every PG is clean);
#     the test sets 64 to finish it. The EC pool's too (4 -> 16), its
#     PGs held by the mons' pins and moved one shard at a time.
#  4. pg_num 64 -> 16 (merge) under a verifying load: pgp_num 16 at once,
#     then two merge steps; every copy merges clean.
#  5. A fifth OSD (so that a 2+1 PG has a spare OSD to step through when
#     one is out: mon/ec_pin.h), then the EC pool 16 -> 8 with one OSD down
#     and out: pgp_num 8 at once (the pins step sources and targets
#     together), then the merge; the OSD merges its old copies (or finds
#     them stale) when it returns.
# Every object verifies after each step (and SPLIT_OBJECTS / 5 more in
# namespace "tenant", which also list exactly); each OSD logs one split per parent
# copy it held. A listing paused after its first page across the split of
# step 1 and across the merge of step 4 lists every object once, and so
# does one running through the split.
set -euo pipefail
. "$(dirname "$0")/../lib/cluster.sh"
build=${1:?usage: pg_split_test.sh BUILD_DIR}
ctl="$build/tools/clusterctl"
load="$build/tests/integration/cairn_load"
n=${SPLIT_OBJECTS:-2000}
dir=$(mktemp -d /tmp/cairn-pg-split-XXXXXX)
finish() {
	local rc=$?
	cluster_finish "$rc"
}
trap finish EXIT
fail() {
	echo "FAIL: $*" >&2
	"$ctl" status >&2 || true
	"$ctl" pg ls 2>/dev/null | grep -v "active+clean" | head -20 >&2 || true
	for f in "$dir"/*.log; do echo "== $f"; grep -v DEBUG "$f" | tail -n 25; done >&2
	exit 1
}
export CAIRN_OSD_GRACE=2s
conf="$dir/cairn.conf"
CAIRN_OSD_OP_SHARDS=3 "$ctl" up --dir "$dir" --mons 1 --osds 4 --osd-size 1G >"$dir/up.out" 2>&1 ||
	fail "up: $(cat "$dir/up.out")"
export CAIRN_CONF="$conf"
"$ctl" pool create sp --pg-num 8 --size 3 >/dev/null || fail "pool create"
wait_clean "pool of 8 PGs"
# Every PG of pool sp ($1 of them) active (degraded is fine), as its primary
# reported it in the current map (not stale).
wait_active() {
	for _ in $(seq 1 240); do
		"$ctl" pg ls >"$dir/pgs" 2>&1 || true
		if [ "$(grep -c "^2\." "$dir/pgs")" = "$1" ] && ! grep "^2\." "$dir/pgs" | grep -vq " active" &&
			! grep "^2\." "$dir/pgs" | grep -q "stale"; then
			return 0
		fi
		sleep 0.25
	done
	fail "pool sp: not $1 PGs active: $(grep "^2\." "$dir/pgs" | grep -v " active" | head -5)"
}
verify() {
	"$load" verify -c "$conf" --pool sp --prefix o --count "$n" --gen 1 --max-size 16384 \
		>"$dir/verify.out" 2>&1 || fail "$1: verify: $(tail -n 5 "$dir/verify.out")"
	grep -q "\"bad\":0," "$dir/verify.out" || fail "$1: $(tail -n 1 "$dir/verify.out")"
	# The objects of namespace "tenant" (placed and split by "tenant\037name"):
	# each readable, and a listing of the namespace finds each once, no other.
	"$load" verify -c "$conf" --pool sp --nspace tenant --prefix t --count "$nns" --gen 1 \
		--max-size 4096 >"$dir/verify.out" 2>&1 || fail "$1: verify tenant: $(tail -n 5 "$dir/verify.out")"
	grep -q "\"bad\":0," "$dir/verify.out" || fail "$1: tenant: $(tail -n 1 "$dir/verify.out")"
	"$load" list -c "$conf" --pool sp --nspace tenant --prefix t --count "$nns" --page 40 --pause 0 \
		>"$dir/nslist.out" 2>&1 || fail "$1: list tenant: $(tail -n 3 "$dir/nslist.out")"
	grep -q '"other":0,' "$dir/nslist.out" || fail "$1: list tenant: $(tail -n 1 "$dir/nslist.out")"
	echo "$1: $n objects verify, and $nns in namespace tenant (listed: $(tail -n 1 "$dir/nslist.out"))"
}
# A listing of pool sp (50 names a page) that pauses after its first page
# until list_finish: a pg_num change in between must not hide or repeat an
# object (the first page's names move to other PGs in a split; a merge
# brings names below the cursor into the PG being listed).
list_start() { # label
	rm -f "$dir/list.in"
	mkfifo "$dir/list.in"
	"$load" list -c "$conf" --pool sp --prefix o --count "$n" --page 50 --seconds 900 \
		<"$dir/list.in" >"$dir/list.out" 2>"$dir/list.err" &
	listpid=$!
	exec 4>"$dir/list.in"
	for _ in $(seq 1 300); do
		grep -q '"paused"' "$dir/list.out" && return 0
		sleep 0.1
	done
	fail "$1: the listing did not pause: $(cat "$dir/list.out" "$dir/list.err")"
}
list_finish() { # label
	echo go >&4 || true # (a listing that died is reported by wait)
	exec 4>&-
	wait "$listpid" ||
		fail "$1: listing across the change: $(tail -n 2 "$dir/list.out") $(tail -n 3 "$dir/list.err")"
	echo "$1: a listing across it: $(tail -n 1 "$dir/list.out")"
}
"$load" write -c "$conf" --pool sp --prefix o --count "$n" --gen 1 --max-size 16384 \
	>"$dir/write.out" 2>&1 || fail "write: $(tail -n 5 "$dir/write.out")"
nns=$((n / 5))
"$load" write -c "$conf" --pool sp --nspace tenant --prefix t --count "$nns" --gen 1 --max-size 4096 \
	>"$dir/write.out" 2>&1 || fail "write tenant: $(tail -n 5 "$dir/write.out")"
verify "8 PGs"

# 1. 8 -> 64 in one step, with osd.3 down and under a verifying load (the
# issue's jump: each parent splits into 8 children at once). The others
# split at once; osd.3 splits when it replays the map after its restart.
pid=$(osd_pid 3)
idx=$(osd_idx 3)
kill -9 "$pid"
wait_ndown 1
"$load" thrash -c "$conf" --pool sp --prefix t --count 200 --seconds 25 --threads 4 \
	>"$dir/load.out" 2>&1 &
lp=$!
sleep 5
list_start "8 -> 64"
# and one that runs through the change, 3 names a page (its pages are in
# flight while maps and PGs change)
"$load" list -c "$conf" --pool sp --prefix o --count "$n" --page 3 --pause 0 \
	>"$dir/list2.out" 2>"$dir/list2.err" &
list2=$!
"$ctl" pool set sp pg_num 64 >/dev/null || fail "pool set pg_num 64"
wait_active 64
verify "64 PGs, osd.3 down, during the split"
wait "$lp" || fail "load during the split: $(tail -n 3 "$dir/load.out")"
grep -q '"write_errors":0,"appends":[0-9]*,"append_errors":0,"reads":[0-9]*,"read_errors":0,' \
	"$dir/load.out" || fail "client errors during the split: $(tail -n 1 "$dir/load.out")"
echo "load during 8 -> 64: $(tail -n 1 "$dir/load.out")"
osd_start "$idx"
wait_all_up
wait_clean "8 -> 64, osd.3 back"
list_finish "8 -> 64"
wait "$list2" || fail "a listing during 8 -> 64: $(tail -n 1 "$dir/list2.out") $(tail -n 3 "$dir/list2.err")"
echo "8 -> 64: a listing during it: $(tail -n 1 "$dir/list2.out")"
verify "64 PGs"
grep -q "split for pg_num 8 -> 64" "$dir/osd.$idx.log" || fail "osd.3 did not split on replay"
for i in 0 1 2 3; do
	c=$(grep -c "split for pg_num 8 -> 64" "$dir/osd.$i.log" || true)
	[ "$c" -ge 1 ] || fail "osd index $i logged no split for 8 -> 64"
done
logged=$(cat "$dir"/osd.*.log | grep -c "split for pg_num")
counted=0
for a in $(sed -n 's/^osd_metrics = //p' "$conf" | tr ',' ' '); do
	c=$(curl -sf "http://$a/metrics" | sed -n 's/^cairn_osd_pg_splits_total //p') ||
		fail "no metrics at $a"
	counted=$((counted + ${c:-0}))
done
[ "$counted" = "$logged" ] || fail "cairn_osd_pg_splits_total: $counted, logged: $logged"
echo "splits: $logged parent copies split (logged and counted)"

# An erasure-coded pool (2+1): shards split like copies.
"$ctl" pool create ecp --ec 2+1 --pg-num 4 >/dev/null || fail "pool create ecp"
wait_clean "EC pool of 4 PGs"
ec_verify() {
	"$load" verify -c "$conf" --pool ecp --prefix e --count 400 --gen 1 --max-size 65536 --omap 0 \
		>"$dir/ecv.out" 2>&1 || fail "$1: EC verify: $(tail -n 5 "$dir/ecv.out")"
	grep -q "\"bad\":0," "$dir/ecv.out" || fail "$1: $(tail -n 1 "$dir/ecv.out")"
	echo "$1: 400 EC objects verify"
}
"$load" write -c "$conf" --pool ecp --prefix e --count 400 --gen 1 --max-size 65536 --omap 0 \
	>"$dir/ecw.out" 2>&1 || fail "EC write: $(tail -n 5 "$dir/ecw.out")"
ec_verify "EC, 4 PGs"
"$ctl" pool set ecp pg_num 16 >/dev/null || fail "pool set ecp pg_num 16"
wait_clean "EC 4 -> 16"
ec_verify "EC, 16 PGs"

# 3. pgp_num 64: children go to their own OSDs. The mons began it (doubling).
grep -q "pool sp: pgp_num 8 -> 16 (placing split PGs" "$dir"/mon.*.log ||
	fail "the mons did not raise pgp_num after the split"
for _ in $(seq 1 720); do
	"$ctl" pool ls >"$dir/pools" 2>&1 || true
	grep -q "'ecp' .* pgp_num 16" "$dir/pools" && break
	sleep 0.25
done
grep -q "'ecp' .* pgp_num 16" "$dir/pools" ||
	fail "the mons did not raise the EC pool's pgp_num: $(grep "'ecp' " "$dir/pools")"
wait_placed "EC pgp_num 16"
ec_verify "EC, pgp_num 16"
"$ctl" pool set sp pgp_num 64 >/dev/null || fail "pool set pgp_num 64"
wait_clean "pgp_num 64"
verify "pgp_num 64"

# 4. Merge: pg_num 64 -> 16 under a verifying load. pgp_num drops to 16 at
# once (backfill puts each source on its target's OSDs), then the mons merge
# in two steps (64 -> 32 -> 16), each once every PG is clean and paused.
wait_pg_num() { # pool pg_num
	for _ in $(seq 1 720); do
		"$ctl" pool ls >"$dir/pools" 2>&1 || true
		if grep -q "'$1' .* pg_num $2 " "$dir/pools" && ! grep "'$1' " "$dir/pools" | grep -q merging_to; then
			return 0
		fi
		sleep 0.25
	done
	fail "pool $1: pg_num not $2: $(grep "'$1' " "$dir/pools")"
}
"$load" thrash -c "$conf" --pool sp --prefix m --count 200 --seconds 40 --threads 4 \
	>"$dir/mload.out" 2>&1 &
lp=$!
sleep 3
list_start "64 -> 16"
t0=$(date +%s%N)
"$ctl" pool set sp pg_num 16 >/dev/null || fail "pool set pg_num 16"
wait_pg_num sp 16
t1=$(date +%s%N)
echo "64 -> 16 merged in $(((t1 - t0) / 1000000)) ms (pgp_num backfill included)"
verify "16 PGs, right after the merge"
wait "$lp" || fail "load during the merge: $(tail -n 3 "$dir/mload.out")"
grep -q '"write_errors":0,"appends":[0-9]*,"append_errors":0,"reads":[0-9]*,"read_errors":0,' \
	"$dir/mload.out" || fail "client errors during the merge: $(tail -n 1 "$dir/mload.out")"
echo "load during 64 -> 16: $(tail -n 1 "$dir/mload.out")"
wait_clean "64 -> 16"
list_finish "64 -> 16"
verify "16 PGs"
clean=$(cat "$dir"/osd.*.log | grep -c "merged 1 source(s) for pg_num .*, clean" || true)
stale=$(cat "$dir"/osd.*.log | grep -c "merged .* stale" || true)
# 48 sources, each on 3 OSDs
[ "$clean" -ge 144 ] || fail "only $clean clean merges logged (48 sources x 3 copies)"
echo "merges: $clean clean, $stale stale (backfilled)"
counted=0
for a in $(sed -n 's/^osd_metrics = //p' "$conf" | tr ',' ' '); do
	c=$(curl -sf "http://$a/metrics" | sed -n 's/^cairn_osd_pg_merges_total //p') ||
		fail "no metrics at $a"
	counted=$((counted + ${c:-0}))
done
[ "$counted" -ge "$clean" ] || fail "cairn_osd_pg_merges_total: $counted < $clean logged"

# 6 (before 5). Split again after the merge (the merged-away sources come back
# as children), and a merge stopped half way: pg_num 8 asked, and 32 asked
# as soon as a step is paused (or after it, if it was too quick to see).
"$ctl" pool set sp pg_num 8 >/dev/null || fail "pool set pg_num 8"
seen=no
for _ in $(seq 1 300); do
	"$ctl" pool ls >"$dir/pools" 2>&1 || true
	if grep "'sp' " "$dir/pools" | grep -q "paused"; then seen=yes; break; fi
	grep -q "'sp' .* pg_num 8 " "$dir/pools" && break
	sleep 0.1
done
"$ctl" pool set sp pg_num 32 >/dev/null || fail "pool set pg_num 32"
wait_pg_num sp 32
wait_clean "pg_num 8 asked, then 32 (a step was seen paused: $seen)"
verify "32 PGs after a stopped merge"

# 5. A fifth OSD, then the EC pool 16 -> 8 with one OSD down (it merges on its return).
CAIRN_OSD_OP_SHARDS=3 "$ctl" up --dir "$dir" --mons 1 --osds 5 --osd-size 1G >"$dir/up.out" 2>&1 ||
	fail "up 5: $(cat "$dir/up.out")"
wait_placed "a fifth OSD"
ec_verify "EC, 5 OSDs"
# (a merged PG whose source log was cut short once gave its child to the
# new OSD from the log alone: objects the log did not name were lost)
verify "pool sp, 5 OSDs"
pid=$(osd_pid 3)
idx=$(osd_idx 3)
kill -9 "$pid"
wait_ndown 1
"$ctl" osd out 3 >/dev/null || fail "osd out 3"
wait_clean "EC, osd.3 down and out"
# Writes osd.3 misses: its old copies cannot merge clean (they are backfilled).
"$load" write -c "$conf" --pool ecp --prefix f --count 100 --gen 1 --max-size 65536 --omap 0 \
	>"$dir/ecf.out" 2>&1 || fail "EC write with osd.3 out: $(tail -n 5 "$dir/ecf.out")"
"$ctl" pool set ecp pg_num 8 >/dev/null || fail "pool set ecp pg_num 8"
wait_pg_num ecp 8
ec_verify "EC, 8 PGs, osd.3 down"
osd_start "$idx"
wait_all_up
"$ctl" osd in 3 >/dev/null || fail "osd in 3"
wait_clean "EC 16 -> 8, osd.3 back and in"
c=$(grep -c "merged 1 source(s) for pg_num 8, clean" "$dir/osd.$idx.log" || true)
st=$(grep -c "merged 1 source(s) for pg_num 8, stale" "$dir/osd.$idx.log" || true)
[ "$st" -ge 1 ] || fail "osd.3 merged no stale copy on replay ($c clean)"
echo "osd.3 on replay: $c copies merged clean, $st stale (backfilled)"
"$load" verify -c "$conf" --pool ecp --prefix f --count 100 --gen 1 --max-size 65536 --omap 0 \
	>"$dir/ecfv.out" 2>&1 || fail "EC verify f: $(tail -n 5 "$dir/ecfv.out")"
grep -q "\"bad\":0," "$dir/ecfv.out" || fail "EC f: $(tail -n 1 "$dir/ecfv.out")"
ec_verify "EC, 8 PGs"
verify "pool sp (32 PGs), osd.3 back"
echo "pg_split_test: passed"
