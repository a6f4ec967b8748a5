#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Thrash: faults at random while a verifying workload (cairn_load thrash)
# writes new generations of objects (data, xattr, omap in one compound op),
# appends numbered records to logs, and reads them back. The faults: an OSD
# killed with -9 (and restarted), an OSD stopped with SIGSTOP for 2 s to
# THRASH_STOP_MAX (default 10, and 30 for runs of 10 minutes or more) then continued (a hung
# OSD: marked down, it must boot again), the leader mon killed with -9
# (and restarted), and the pool's pg_num doubled once (its PGs split amid
# the other faults) and later halved back (merged in steps, pgp_num first;
# THRASH_SPLIT=0: neither). Passes with 0 lost acknowledged writes or appends, 0
# wrong reads, 0 appends applied twice, every client op completed (the
# workload sets no op timeout: an op that never completes fails the test by
# its time limit, and any op error fails it), and the cluster back to
# active+clean. THRASH_SECONDS (default 90) sets the length; THRASH_OSDS
# (default 4) the cluster size, THRASH_MONS (default 3) the mons; one fault
# at a time, so every PG keeps min_size (2) copies. THRASH_EC=K+M thrashes an erasure-coded pool
# instead (data and an xattr per object; no omap): THRASH_OSDS=6
# THRASH_EC=4+2 keeps min_size (k+1) shards up. THRASH_ADD=N (default 0)
# adds N OSDs, one at a time, from three eighths of the way in (EC: the
# mons then move shards one position per PG at a time, mon/ec_pin.h, while
# the other faults go on). THRASH_SHARDS=N (default 1)
# starts every OSD with a random number of PG shards (osd_op_shards) from 1
# to N, drawn again at each restart: PGs change shard under load.
# THRASH_IO_THREADS (default 2, and 1 with THRASH_EC) sets the io threads of
# the workload's client.
# Network cuts (THRASH_CUT=1, the default; needs root, SKIPPED without it): the test runs in a
# network namespace of its own (unshare -n, loopback only), every OSD listens
# and connects from its own loopback address (clusterctl up --osd-addrs), and
# a cut is a pair of 'unreachable' routing rules to and from one OSD's address
# for 2 s to THRASH_STOP_MAX: a partition. The OSD keeps running, its
# established connections go silent both ways, new ones fail at once; it is
# marked down meanwhile if the cut outlasts the grace, and must neither serve
# nor accept anything stale when the cut heals.
set -euo pipefail
build=${1:?usage: thrash_test.sh BUILD_DIR}
cut=${THRASH_CUT:-1}
. "$(dirname "$0")/../lib/netns.sh"
if [ "$cut" = 1 ] && [ -z "${THRASH_NETNS:-}" ]; then
	netns_possible && exec unshare -n env THRASH_NETNS=1 "$0" "$@"
	# A thrash without its partitions would pass having tested less: it
	# says SKIPPED (77) instead; THRASH_CUT=0 runs the other faults alone.
	echo "SKIPPED: the network cuts need root for a network namespace of their own (THRASH_CUT=0 runs without them)"
	exit 77
fi
[ "$cut" = 0 ] || netns_setup
. "$(dirname "$0")/../lib/cluster.sh"
secs=${THRASH_SECONDS:-90}
nosd=${THRASH_OSDS:-4}
nshards=${THRASH_SHARDS:-1}
nmon=${THRASH_MONS:-3}
# Hangs and cuts last 2 s to stop_max: up to 10 s in a short run (more
# faults in it), up to 30 s from a 10-minute run on.
stop_max=${THRASH_STOP_MAX:-$([ "$secs" -ge 600 ] && echo 30 || echo 10)}
ctl="$build/tools/clusterctl"
load="$build/tests/integration/cairn_load"
dir=$(mktemp -d /tmp/cairn-thrash-XXXXXX)
# At exit: stop the cluster; sanitizer reports in its logs fail the test (tests/lib/cluster.sh).
lpid=
finish() {
	local rc=$?
	[ -z "$lpid" ] || kill "$lpid" 2>/dev/null || true
	heal
	cluster_finish "$rc"
}
trap finish EXIT
fail() {
	echo "FAIL: $*" >&2
	"$ctl" status >&2 || true
	for f in "$dir"/*.log; do echo "== $f"; grep -v DEBUG "$f" | tail -n 25; done >&2
	exit 1
}
export CAIRN_OSD_GRACE=2s
addrs=()
[ "$cut" = 0 ] || addrs=(--osd-addrs 127.0.0.10) # OSD i on 127.0.0.(10 + i)
up() {
	CAIRN_OSD_OP_SHARDS=$((1 + RANDOM % nshards)) "$ctl" up --dir "$dir" --mons "$nmon" --osds "$nosd" \
		--osd-size 2G "${addrs[@]}" >"$dir/up.out" 2>&1 || fail "up: $(cat "$dir/up.out")"
}
heal() { # undo a cut (no-op without one)
	ip rule del pref 10 2>/dev/null || true
	ip rule del pref 11 2>/dev/null || true
}
up
export CAIRN_CONF="$dir/cairn.conf"
pool=(--pool default)
if [ -n "${THRASH_EC:-}" ]; then
	"$ctl" pool create ec --ec "$THRASH_EC" --pg-num 16 >/dev/null || fail "pool create --ec"
	for _ in $(seq 1 80); do
		"$ctl" status 2>/dev/null | grep -Eq "pgs: +([0-9]+) pgs: \1 active\+clean$" && break
		sleep 0.25
	done
	pool=(--pool ec --omap 0)
fi
# The replicated run's client has 2 io threads (its ops on two event loops,
# through pg_num changes), the EC run's one (THRASH_IO_THREADS overrides).
iot=${THRASH_IO_THREADS:-$([ -n "${THRASH_EC:-}" ] && echo 1 || echo 2)}
CAIRN_TEST_IO_THREADS=$iot "$load" thrash -c "$dir/cairn.conf" "${pool[@]}" --prefix t --count 200 --threads 4 \
	--max-size 262144 --seconds "$secs" >"$dir/load.out" 2>"$dir/load.err" &
lpid=$!
# Faults until 15 s before the workload's final read-back.
end=$(( $(date +%s) + secs - 15 ))
kills=0 stops=0 cuts=0 monkills=0 splits=0
# A quarter of the way in, the pool's pg_num doubles once (its PGs split
# under the load and the faults around it), half way it is set back (they
# merge, under the load too); THRASH_SPLIT=0 leaves it alone.
split_at=$(( $(date +%s) + secs / 4 ))
merge_at=$(( $(date +%s) + secs / 2 ))
add_at=$(( $(date +%s) + 3 * secs / 8 ))
adds=0
[ "${THRASH_SPLIT:-1}" = 1 ] || split_at=$((end + 1))
pool_field() { # the pool's field $1 (pg_num, pg_num_target, ...)
	"$ctl" --format json pool ls 2>/dev/null | /usr/bin/python3 -c '
import json, sys
print([p for p in json.load(sys.stdin)["pools"] if p["name"] == sys.argv[1]][0][sys.argv[2]])' "${pool[1]}" "$1"
}
# A hang's or a cut's length: 2 s to stop_max, ending by the end of the
# fault window (the workload's read-back then runs on a whole cluster).
fault_len() {
	local l=$(( 2 + RANDOM % (stop_max - 1) )) left=$(( end - $(date +%s) ))
	[ "$left" -lt 2 ] && left=2
	echo $(( l < left ? l : left ))
}
while [ "$(date +%s)" -lt "$end" ]; do
	sleep $(( 2 + RANDOM % 4 ))
	if [ "$splits" = 0 ] && [ "$(date +%s)" -ge "$split_at" ]; then
		pg0=$(pool_field pg_num) || continue
		"$ctl" pool set "${pool[1]}" pg_num $((2 * pg0)) >/dev/null 2>&1 || continue
		splits=1
		echo "thrash: pool ${pool[1]}: pg_num $pg0 -> $((2 * pg0)) at $(( $(date +%s) - end + secs - 15 )) s"
		continue
	fi
	if [ "$splits" = 1 ] && [ "$(date +%s)" -ge "$merge_at" ]; then
		# Back down: pgp_num drops at once, the mons merge once every PG is clean.
		"$ctl" pool set "${pool[1]}" pg_num "$pg0" >/dev/null 2>&1 || continue
		splits=2
		echo "thrash: pool ${pool[1]}: pg_num $((2 * pg0)) -> $pg0 asked at $(( $(date +%s) - end + secs - 15 )) s"
		continue
	fi
	if [ "$adds" -lt "${THRASH_ADD:-0}" ] && [ "$(date +%s)" -ge "$add_at" ]; then
		# One more OSD (up starts the ones it lacks); it takes PGs by backfill.
		nosd=$((nosd + 1))
		adds=$((adds + 1))
		up
		echo "thrash: osd.$((nosd - 1)) added at $(( $(date +%s) - end + secs - 15 )) s"
		continue
	fi
	r=$(( RANDOM % 12 ))
	if [ "$r" -ge 10 ] && [ "$nmon" -gt 1 ]; then
		# The leader mon (status names it), killed and restarted.
		leader=$("$ctl" status 2>/dev/null | sed -n 's/.*alive, leader \([a-z]*\).*/\1/p')
		[ -n "$leader" ] && [ -f "$dir/mon.$leader.pid" ] || continue
		vpid=$(cat "$dir/mon.$leader.pid")
		kill -9 "$vpid" 2>/dev/null || true
		for _ in $(seq 1 100); do proc_gone "$vpid" && break; sleep 0.1; done
		monkills=$((monkills + 1))
		sleep $(( 1 + RANDOM % 5 ))
		up
		continue
	fi
	victim=$(( RANDOM % nosd ))
	vpid=$(cat "$dir/osd.$victim.pid")
	if [ "$r" -ge 4 ] && [ "$r" -lt 7 ] && [ "$cut" = 1 ]; then
		# Partitioned: its address cut both ways, then healed.
		a=127.0.0.$((10 + victim))
		ip rule add pref 10 to "$a" unreachable
		ip rule add pref 11 from "$a" unreachable
		cuts=$((cuts + 1))
		sleep "$(fault_len)"
		heal
		continue
	fi
	if [ "$r" -ge 4 ]; then
		# Hung: stopped, then continued (marked down meanwhile, it boots again).
		kill -STOP "$vpid" 2>/dev/null || true
		stops=$((stops + 1))
		sleep "$(fault_len)"
		kill -CONT "$vpid" 2>/dev/null || true
		continue
	fi
	kill -9 "$vpid" 2>/dev/null || true
	# Until it is gone (or a zombie): 'up' must see it dead to restart it.
	for _ in $(seq 1 100); do proc_gone "$vpid" && break; sleep 0.1; done
	kills=$((kills + 1))
	# Sometimes back before the mons notice, sometimes after it is marked down.
	sleep $(( RANDOM % 5 ))
	up
done
echo "thrash: $kills OSD kills, $stops OSD stops (2-$stop_max s), $cuts OSD network cuts (2-$stop_max s), $monkills leader mon kills, $adds OSDs added, $splits pg_num changes in $secs s (PG shards per OSD start: $(grep -ho "[0-9]* PG shards\?$" "$dir"/osd.*.log | sort | uniq -c | awk '{printf "%s%s with %s", (NR > 1 ? ", " : ""), $1, $2}'))"
[ "$splits" != 2 ] || echo "thrash: pg_num $(pool_field pg_num) when the faults stopped"
wait "$lpid" || { tail -20 "$dir/load.err" >&2; fail "workload: $(tail -1 "$dir/load.out")"; }
echo "workload: $(tail -1 "$dir/load.out")"
grep -q '"twice":0,"lost":0,"wrong":0' "$dir/load.out" ||
	fail "lost, wrong or applied twice: $(tail -1 "$dir/load.out")"
grep -q '"write_errors":0,' "$dir/load.out" && grep -q '"append_errors":0,' "$dir/load.out" &&
	grep -q '"read_errors":0,' "$dir/load.out" ||
	fail "client ops failed (routine failures must not show): $(tail -1 "$dir/load.out"); the last errors: $(tail -5 "$dir/load.err" | tr '\n' ';')"
t0=$(date +%s)
if [ "$splits" = 2 ]; then
	# The merge goes on after the faults stop (each step waits for every PG clean).
	for _ in $(seq 1 480); do
		[ "$(pool_field pg_num)" = "$pg0" ] && break
		sleep 0.5
	done
	[ "$(pool_field pg_num)" = "$pg0" ] || fail "pg_num did not get back to $pg0: $("$ctl" pool ls)"
	echo "thrash: merged back to pg_num $pg0 $(( $(date +%s) - t0 )) s after the workload ($(cat "$dir"/osd.*.log | grep -c ": merged .*, clean") copies merged clean, $(cat "$dir"/osd.*.log | grep -c ": merged .*, stale") stale)"
fi
status_until "$CLEAN_RE" 240 0.5 || fail "not clean: $(grep pgs: "$dir/st")"
echo "active+clean $(( $(date +%s) - t0 )) s after the workload"
# How often the exactly-once path ran: resent ops found applied already and
# answered from the PG log (OSDs up now; a restarted one counted from 0).
resends=0
for a in $(sed -n 's/^osd_metrics = //p' "$dir/cairn.conf" | tr ',' ' '); do
	v=$(curl -sf "http://$a/metrics" | sed -n 's/^cairn_osd_resends_applied_total //p')
	resends=$((resends + ${v:-0}))
done
echo "thrash: $resends resent ops found applied and answered from the PG log"
# Each OSD's store, checked offline once the cluster is down: every block's
# reference count (EC stashes share blocks) and checksum.
"$ctl" down --dir "$dir" >"$dir/down.out" 2>&1 || fail "clusterctl down: $(tail -3 "$dir/down.out")"
for f in "$dir"/osd.*.data; do
	out=$("$build/osd/cairn-osd" --fsck --deep --osd-data "$f" 2>"$dir/fsck.err") ||
		fail "fsck of $f: $out $(tail -3 "$dir/fsck.err")"
	echo "${out#cairn-osd: }"
done
echo "1 passed, 0 failed"
