#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Recovery and backfill on a real local cluster (etcd, 1 mon, OSDs on
# preallocated files), with objects whose bytes, xattrs and omap follow from
# (name, generation) so every copy can be checked (cairn_load):
#  1. write RECOVERY_OBJECTS objects (0 B - 8 MiB, most small); kill -9 an
#     OSD; write more and overwrite some; restart it; wait for all PGs
#     active+clean; kill another OSD so reads must come from the recovered
#     copy; verify everything; restart it.
#  1b. the same with norecover set: the degraded PGs still serve reads and
#     overwrites of every object (pushed first when an op needs it); then
#     recovery; verify.
#  2. add a 4th OSD: only replicas placed on the new OSD move, about a
#     quarter of them; with norebalance the backfills wait (reads verify
#     meanwhile), `pause` holds a client's put until unset; back to clean;
#     verify.
#  3. mark an OSD out: its PGs backfill elsewhere; clean; verify; mark it in
#     again (its stale copies catch up); clean; verify. A size-1 pool's
#     objects follow their PGs (recovered from the PG's prior OSD), also
#     when their only OSD was down before it went out. A restarted OSD
#     learns the intervals it missed and never serves its stale copies,
#     also when its PGs get a new partner while the newer copies' OSD hangs;
#     a restarted OSD keeps the past intervals of PGs it does not hold, a
#     new one learns them from its peers.
#     PGs wait for a dead OSD's data until it is removed ('osd rm').
#  4. down + up resumes everything; a hung OSD (SIGSTOP) is found by its
#     peers' heartbeats and marked down, and catches up when it runs again;
#     with every OSD killed an op fails with a clear timeout error.
set -euo pipefail
. "$(dirname "$0")/../lib/cluster.sh"
build=${1:?usage: recovery_test.sh BUILD_DIR}
ctl="$build/tools/clusterctl"
load="$build/tests/integration/cairn_load"
py=/usr/bin/python3
n=${RECOVERY_OBJECTS:-1200} # ctest's normal pass runs the issue's 10,000 (objects up to 2 MiB, 4G OSDs)
max=${RECOVERY_MAX_SIZE:-8388608}
dir=$(mktemp -d /tmp/cairn-recovery-test-XXXXXX)
# At exit: stop the cluster; sanitizer reports in its logs fail the test (tests/lib/cluster.sh).
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
# Start osd.$1 by hand (its start index's data and log), not waiting for it.
start_osd() {
	local i
	i=$(osd_idx "$1")
	"$build/osd/cairn-osd" -c "$dir/cairn.conf" --osd-data "$dir/osd.$i.data" --host "node$i" --osd-host-osds 4 \
		--log-file "$dir/osd.$i.log" --pid-file "$dir/osd.$i.pid" >>"$dir/osd.$i.out" 2>&1 &
}
# Read POOL's objects PREFIX-0..COUNT-1, generation GEN, 2 s each: a read
# may wait (time out), never return ENOENT or another generation. $5: what
# fails ("... activated PGs without their past intervals' OSDs"), $6: what
# the summary line says.
verify_or_wait() {
	"$load" verify -c "$dir/cairn.conf" --pool "$1" --prefix "$2" --count "$3" --gen "$4" \
		--max-size "$max" --threads 25 --timeout 2000 >"$dir/v.out" 2>"$dir/v.err" || true
	if grep -q "No such file\|want $4" "$dir/v.err"; then
		fail "$5: $(grep -c "No such file\|want $4" "$dir/v.err") objects"
	fi
	echo "$6: $(tail -1 "$dir/v.out") ($(grep -c "timed out" "$dir/v.err" || true) reads waited)"
}
up() { "$ctl" up --dir "$dir" --mons 1 --osds "$1" --osd-size "${RECOVERY_OSD_SIZE:-3G}" >"$dir/up.out" 2>&1 || fail "up: $(cat "$dir/up.out")"; }
run_load() { "$load" "$@" -c "$dir/cairn.conf" --max-size "$max" | tail -1; }
verify_all() {
	run_load verify --prefix a --first 0 --count $((n / 4)) --gen 2 >/dev/null || fail "$1: a gen 2"
	run_load verify --prefix a --first $((n / 4)) --count $((n - n / 4)) --gen 1 >/dev/null ||
		fail "$1: a gen 1"
	run_load verify --prefix b --count $((n / 4)) --gen 1 >/dev/null || fail "$1: b"
	echo "$1: $((n + n / 4)) objects verify"
}

up 3
export CAIRN_CONF="$dir/cairn.conf"
# Run on the epoll backend (ctest's .epoll variant): make sure the daemons did.
if [ -n "${CAIRN_REACTOR:-}" ] && [ "$CAIRN_REACTOR" != auto ]; then
	grep -q "backend=$CAIRN_REACTOR" "$dir"/osd.0.log ||
		fail "CAIRN_REACTOR=$CAIRN_REACTOR but osd.0 runs $(grep -o 'backend=[a-z_]*' "$dir"/osd.0.log | head -1)"
fi
wait_clean "fresh cluster"
run_load write --prefix a --count "$n" --gen 1 || fail "writing"

# 1. Kill -9 an OSD, keep writing, restart it, recover.
kill -9 "$(osd_pid 2)"
wait_ndown 1
run_load write --prefix b --count $((n / 4)) --gen 1 || fail "writing with an OSD down"
run_load write --prefix a --count $((n / 4)) --gen 2 || fail "overwriting with an OSD down"
up 3
wait_all_up
wait_clean "restarted OSD recovered"
# Usage per pool: the primaries' object counts add up to what was written.
for _ in $(seq 1 40); do
	objs=$("$ctl" --format json status | "$py" -c '
import json, sys
print(sum(p["objects"] for p in json.load(sys.stdin)["pools"] if p["name"] == "default"))')
	[ "$objs" = $((n + n / 4)) ] && break
	sleep 0.25
done
[ "$objs" = $((n + n / 4)) ] || fail "pool default reports $objs objects, not $((n + n / 4))"
"$ctl" status | grep "pool default:" | sed 's/^ */usage: /'
kill -9 "$(osd_pid 0)"
wait_ndown 1
verify_all "with the recovered copy serving"
up 3
wait_all_up
wait_clean "second restart"

# 1b. Served while recovering: with norecover set nothing is pushed in the
# background, so a restarted OSD's PGs stay degraded; clients still read and
# overwrite every object, the ones the OSD missed included (each is pushed
# first when an op needs it). Then recovery runs and the copies verify.
"$ctl" osd set norecover >/dev/null || fail "osd set norecover"
kill -9 "$(osd_pid 1)"
wait_ndown 1
run_load write --prefix c --count $((n / 4)) --gen 1 >/dev/null || fail "writing c with an OSD down"
up 3
wait_all_up
for _ in $(seq 1 120); do
	"$ctl" status >"$dir/st" 2>&1 || true
	grep -q "recovery_wait" "$dir/st" &&
		! grep -Eq "stale|peering|unknown|down|incomplete|[0-9] recovering" "$dir/st" && break
	sleep 0.25
done
grep -q "recovery_wait" "$dir/st" || fail "no PG waiting for recovery with norecover: $(grep 'pgs:' "$dir/st")"
echo "norecover: $(grep 'pgs:' "$dir/st" | sed 's/^ *//')"
t0=$(date +%s%N)
run_load verify --prefix c --count $((n / 4)) --gen 1 >/dev/null || fail "reading c while degraded"
run_load write --prefix c --count $((n / 4)) --gen 2 >/dev/null || fail "overwriting c while degraded"
run_load verify --prefix c --count $((n / 4)) --gen 2 >/dev/null || fail "reading c gen 2 while degraded"
echo "served while degraded: $((n / 4)) objects read, overwritten, read in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
"$ctl" status >"$dir/st" 2>&1 || true
grep -q "recovery_wait" "$dir/st" || fail "recovery ran despite norecover: $(grep 'pgs:' "$dir/st")"
"$ctl" osd unset norecover >/dev/null || fail "osd unset norecover"
wait_clean "norecover unset"
kill -9 "$(osd_pid 2)"
wait_ndown 1
run_load verify --prefix c --count $((n / 4)) --gen 2 >/dev/null || fail "c after recovery, osd.2 down"
verify_all "after recovery while serving, osd.2 down"
up 3
wait_all_up
wait_clean "osd.2 back"

# 2. Add a 4th OSD: minimal movement. With norebalance set first, the PGs
# that move a copy to it keep every copy elsewhere (their prior OSD), so
# their backfills wait (backfill_wait) until it is unset; clients are
# served meanwhile.
"$ctl" --format json pg ls >"$dir/pg.before"
"$ctl" osd set norebalance >/dev/null || fail "osd set norebalance"
up 4
wait_all_up
"$ctl" --format json pg ls >"$dir/pg.after"
newid=$("$ctl" --format json osd ls | "$py" -c '
import json, sys
d = json.load(sys.stdin)
osds = d["osds"] if isinstance(d, dict) else d
print(max(o["id"] for o in osds))')
"$py" - "$dir/pg.before" "$dir/pg.after" "$newid" <<'EOF' || fail "adding an OSD moved too much"
import json, sys
b = {p["pg"]: p["up"] for p in json.load(open(sys.argv[1]))["pgs"]}
a = {p["pg"]: p["up"] for p in json.load(open(sys.argv[2]))["pgs"]}
new = int(sys.argv[3])
slots = moved = bad = 0
for pg, ups in b.items():
    gone = set(a[pg]) - set(ups)  # replicas placed anew
    slots += len(ups)
    moved += len(gone)
    bad += len(gone - {new})  # moved somewhere other than the new OSD
frac = moved / slots
print(f"adding osd.{new}: {moved} of {slots} replicas moved ({frac:.2f}), {bad} not to it")
sys.exit(0 if bad == 0 and 0.10 <= frac <= 0.40 else 1)
EOF
status_until "backfill_wait|recovery_wait" 80 0.25 || fail "no backfill waiting with norebalance: $(grep 'pgs:' "$dir/st")"
sleep 3
"$ctl" status >"$dir/st" 2>&1 || true
grep -Eq "backfill_wait|recovery_wait" "$dir/st" || fail "backfill ran despite norebalance: $(grep 'pgs:' "$dir/st")"
grep -Eq "active\+clean" "$dir/st" || fail "no PG clean under norebalance: $(grep 'pgs:' "$dir/st")"
echo "norebalance: $(grep 'pgs:' "$dir/st" | sed 's/^ *//')"
verify_all "while norebalance holds the backfills"
# pause: reads and writes wait until it is unset.
"$ctl" osd set pause >/dev/null || fail "osd set pause"
sleep 1
head -c 4096 /dev/urandom >"$dir/paused.in"
"$ctl" obj put default paused "$dir/paused.in" &
ppid=$!
sleep 3
kill -0 "$ppid" 2>/dev/null || fail "a put completed while paused"
"$ctl" osd unset pause >/dev/null || fail "osd unset pause"
wait "$ppid" || fail "the paused put failed after unpause"
"$ctl" obj get default paused "$dir/paused.out" && cmp "$dir/paused.in" "$dir/paused.out" ||
	fail "the paused put did not land"
echo "pause: a put waited 3 s, then completed once unset"
"$ctl" osd unset norebalance >/dev/null || fail "osd unset norebalance"
wait_clean "4th OSD backfilled (norebalance unset)"
verify_all "after adding an OSD"

# 3. Out: backfill elsewhere; in: back again. A size-1 pool too: there the
# new OSD of a PG has nothing and only the OSD that left has the data, so
# peering must find it among the PG's prior OSDs.
"$ctl" pool create single --size 1 --min-size 1 --pg-num 16 >/dev/null || fail "pool create"
wait_clean "pool single"
run_load write --pool single --prefix s --count 200 --gen 1 >/dev/null || fail "writing to single"
# Clients overwrite objects while their PGs backfill (the writes reach the
# backfill targets too; an object being pushed waits for its push).
run_load write --prefix d --count $((n / 4)) --gen 1 >/dev/null || fail "writing d"
"$ctl" osd out 0 >/dev/null || fail "osd out"
run_load write --prefix d --count $((n / 4)) --gen 2 --threads 8 >"$dir/d.out" 2>&1 &
dpid=$!
wait_clean "osd.0 out, backfilled"
wait "$dpid" || fail "overwriting d during the backfill: $(cat "$dir/d.out")"
echo "overwritten during the backfill: $(tail -1 "$dir/d.out")"
run_load verify --prefix d --count $((n / 4)) --gen 2 >/dev/null || fail "d after the backfill"
run_load verify --pool single --prefix s --count 200 --gen 1 >/dev/null ||
	fail "size-1 pool after its PGs moved"
# osd.0 keeps no copies of PGs that are clean elsewhere.
for _ in $(seq 1 40); do grep -q "stray copy removed" "$dir"/osd.*.log && break; sleep 0.25; done
grep -q "stray copy removed" "$dir"/osd.*.log || fail "stray copies of osd.0 not removed"
echo "stray copies removed: $(cat "$dir"/osd.*.log | grep -c "stray copy removed")"
"$ctl" --format json pg ls | "$py" -c '
import json, sys
sys.exit(any(0 in p["up"] for p in json.load(sys.stdin)["pgs"]))' || fail "osd.0 still holds PGs"
verify_all "with osd.0 out"
"$ctl" osd in 0 >/dev/null || fail "osd in"
wait_clean "osd.0 in again"
verify_all "with osd.0 back in"
run_load verify --pool single --prefix s --count 200 --gen 1 >/dev/null ||
	fail "size-1 pool after its PGs moved back"
echo "size-1 pool: 200 objects followed their PGs out and back"

# 3b. Prior OSDs survive a restart. With recovery and backfill held, the
# size-1 pool's PGs leave osd.1: their new primaries have no copy and know
# osd.1 held the data only from the map change they saw. Kill -9 every
# other OSD, restart them, then let recovery run: the restarted primaries
# must still find the data on osd.1 (their PGs' prior sets are durable);
# before they were, such a PG came up empty (its objects: ENOENT).
"$ctl" osd set nobackfill >/dev/null || fail "osd set nobackfill"
"$ctl" osd set norecover >/dev/null || fail "osd set norecover"
"$ctl" osd out 1 >/dev/null || fail "osd out 1"
for _ in $(seq 1 80); do
	"$ctl" --format json pg ls | "$py" -c '
import json, sys
sys.exit(any(1 in p["up"] for p in json.load(sys.stdin)["pgs"]))' && break
	sleep 0.25
done
sleep 2 # (the new primaries peer and write their interval)
p1=$(osd_pid 1)
for i in 0 2 3; do kill -9 "$(osd_pid $i)"; done
wait_ndown 3
up 4
wait_all_up
kill -0 "$p1" || fail "osd.1 restarted: the test needs it to keep running"
grep -q "prior OSD(s) from before the restart" "$dir"/osd.*.log ||
	fail "no restarted OSD loaded a prior set"
"$ctl" osd unset nobackfill >/dev/null || fail "osd unset nobackfill"
"$ctl" osd unset norecover >/dev/null || fail "osd unset norecover"
wait_clean "osd.1 out, its PGs' new primaries restarted, backfilled"
run_load verify --pool single --prefix s --count 200 --gen 1 >/dev/null ||
	fail "size-1 pool after its new primaries restarted before their backfill"
verify_all "with osd.1 out"
"$ctl" osd in 1 >/dev/null || fail "osd in 1"
wait_clean "osd.1 in again"
echo "prior sets across a restart: 200 size-1 objects found on the OSD that left"

# 3c. Every holder of a PG down, then out: the size-1 pool's PGs on osd.2
# have no up OSD while it is down (an empty acting set), and move to new
# OSDs when it is marked out. Their new primaries must wait for osd.2 (the
# last OSDs that held them), not start empty; once it runs again (still
# out) its data is backfilled and every object verifies. Before, an empty
# acting set in between counted as "nothing held it before": such PGs went
# active+clean empty and their objects read ENOENT.
kill -9 "$(osd_pid 2)"
wait_ndown 1
"$ctl" osd out 2 >/dev/null || fail "osd out 2"
sleep 3 # (the new primaries peer)
up 4
wait_all_up
wait_clean "osd.2 down then out, back (out)"
run_load verify --pool single --prefix s --count 200 --gen 1 >/dev/null ||
	fail "size-1 pool after its only holder was down, then out"
"$ctl" osd in 2 >/dev/null || fail "osd in 2"
wait_clean "osd.2 in again"
echo "PGs whose every holder was down: waited for it, 200 size-1 objects verified"

# 3d. A restarted OSD learns the intervals it missed. Pool "pair" (size 2,
# min_size 1): write 200 objects; kill -9 osd.0; overwrite them all (the
# new generation lands on the others: PGs with osd.0 keep one copy); hang
# osd.1 and osd.2 (SIGSTOP: their peers report them down); restart osd.0
# alone. Its PGs whose newer copy is on osd.1 or osd.2 must wait for them:
# a read returns the newest generation or times out, never the old one
# (osd.0's copy). The OSD keeps its last map and the mons send it the
# epochs after it, so the PGs see every acting set since; before, osd.0
# knew only its own last interval and the map at its restart (empty), and
# served its stale copies. Then osd.1 and osd.2 run again; every object
# verifies.
"$ctl" pool create pair --size 2 --min-size 1 --pg-num 16 >/dev/null || fail "pool create pair"
wait_clean "pool pair created"
run_load write --pool pair --prefix q --count 200 --gen 1 >/dev/null || fail "write pair gen 1"
kill -9 "$(osd_pid 0)"
wait_ndown 1
run_load write --pool pair --prefix q --count 200 --gen 2 >/dev/null || fail "write pair gen 2"
kill -STOP "$(osd_pid 1)" "$(osd_pid 2)"
wait_ndown 3
start_osd 0 # alone ('up' would wait for all four)
for _ in $(seq 1 120); do [ "$(ndown)" -eq 2 ] && break; sleep 0.25; done
[ "$(ndown)" -eq 2 ] || { kill -CONT "$(osd_pid 1)" "$(osd_pid 2)"; fail "osd.0 did not come back"; }
grep -q "starting from the kept map" "$dir/osd.$(osd_idx 0).log" ||
	{ kill -CONT "$(osd_pid 1)" "$(osd_pid 2)"; fail "osd.0 did not start from its kept map"; }
sleep 2 # (its PGs peer)
"$load" verify -c "$dir/cairn.conf" --pool pair --prefix q --count 200 --gen 2 --max-size "$max" \
	--threads 25 --timeout 2000 >"$dir/v.out" 2>"$dir/v.err" || true
if grep -q "gen 1, want 2" "$dir/v.err"; then
	kill -CONT "$(osd_pid 1)" "$(osd_pid 2)"
	fail "osd.0 served its stale copies: $(grep -c "gen 1, want 2" "$dir/v.err") objects read gen 1"
fi
echo "restart amid missed intervals: $(tail -1 "$dir/v.out") ($(grep -c "timed out" "$dir/v.err" || true) reads waited)"
# 3f. Every interval that may have taken writes must be heard from, not
# only the last one. osd.0's PGs that wait for hung osd.1 (it has their
# generation 2) get a new partner when osd.1 is marked out: the interval
# before the new one is osd.0 waiting alone, but the one before that
# (osd.1 alone, taking generation 2) still has no one answering, so they
# keep waiting. Before, osd.0 counted as "the previous interval" by itself
# and activated its generation-1 copies with the new partner.
"$ctl" osd out 1 >/dev/null || { kill -CONT "$(osd_pid 1)" "$(osd_pid 2)"; fail "osd out 1"; }
sleep 3 # (the new acting sets peer)
"$load" verify -c "$dir/cairn.conf" --pool pair --prefix q --count 200 --gen 2 --max-size "$max" \
	--threads 25 --timeout 2000 >"$dir/v.out" 2>"$dir/v.err" || true
kill -CONT "$(osd_pid 1)" "$(osd_pid 2)"
if grep -q "gen 1, want 2" "$dir/v.err"; then
	fail "a new partner activated osd.0's stale copies: $(grep -c "gen 1, want 2" "$dir/v.err") objects read gen 1"
fi
echo "osd.1 out while hung: $(tail -1 "$dir/v.out") ($(grep -c "timed out" "$dir/v.err" || true) reads waited)"
"$ctl" osd in 1 >/dev/null || fail "osd in 1"
wait_all_up
wait_clean "osd.1 and osd.2 running again"
run_load verify --pool pair --prefix q --count 200 --gen 2 >/dev/null ||
	fail "pair pool after osd.0's restart amid missed intervals"

# 3g. A restarted OSD keeps the past intervals of PGs it does not hold.
# Pool "pair2" (size 2, min_size 1): kill -9 osd.0 and osd.1, then restart
# osd.3 (it holds none of the PGs that were on osd.0+osd.1), then mark
# osd.0 out, then osd.1: their PGs move to osd.3 alone, then to osd.2 and
# osd.3. They must wait for osd.0/osd.1. Before, osd.3 knew no interval
# from before its restart and activated those PGs empty, alone (33 of 300
# objects read ENOENT).
"$ctl" pool create pair2 --size 2 --min-size 1 --pg-num 64 >/dev/null || fail "pool create pair2"
wait_clean "pool pair2 created"
run_load write --pool pair2 --prefix r --count 300 --gen 1 >/dev/null || fail "write pair2"
kill -9 "$(osd_pid 0)" "$(osd_pid 1)"
wait_ndown 2
kill -9 "$(osd_pid 3)"
wait_ndown 3
start_osd 3
for _ in $(seq 1 120); do [ "$(ndown)" -eq 2 ] && break; sleep 0.25; done
[ "$(ndown)" -eq 2 ] || fail "osd.3 did not come back"
"$ctl" osd out 0 >/dev/null || fail "osd out 0"
sleep 2
"$ctl" osd out 1 >/dev/null || fail "osd out 1"
sleep 3 # (the new acting sets peer)
verify_or_wait pair2 r 300 1 "a restarted primary activated PGs without their past intervals' OSDs" \
	"restarted OSD, past intervals kept"
awk '/booted as osd/ {n = 0} /may have taken writes/ {n++} END {exit n == 0}' "$dir/osd.$(osd_idx 3).log" ||
	fail "no PG of the restarted osd.3 waited for a past interval (none exercised it?)"
up 4
wait_all_up
"$ctl" osd in 0 >/dev/null || fail "osd in 0"
"$ctl" osd in 1 >/dev/null || fail "osd in 1"
wait_clean "osd.0 and osd.1 back and in"
run_load verify --pool pair2 --prefix r --count 300 --gen 1 >/dev/null ||
	fail "pair2 pool after its OSDs came back"

# 3h. A new OSD learns the past intervals from its peers. Pool "pair3"
# (size 2, min_size 1): kill -9 osd.0 and osd.1, add osd.4 (a new OSD: no
# history at all), mark osd.0 and osd.1 out at once: their PGs move to two
# of osd.2/3/4. Those whose new primary is osd.4 must wait for osd.0/osd.1
# too: their other OSD tells osd.4 of the intervals it saw (the notify
# carries them) and osd.4 waits for those intervals' OSDs.
"$ctl" pool create pair3 --size 2 --min-size 1 --pg-num 64 >/dev/null || fail "pool create pair3"
wait_clean "pool pair3 created"
run_load write --pool pair3 --prefix t --count 300 --gen 1 >/dev/null || fail "write pair3"
kill -9 "$(osd_pid 0)" "$(osd_pid 1)"
wait_ndown 2
fallocate -l "${RECOVERY_OSD_SIZE:-3G}" "$dir/osd.4.data"
"$build/osd/cairn-osd" -c "$dir/cairn.conf" --osd-data "$dir/osd.4.data" --host node4 --osd-host-osds 4 \
	--log-file "$dir/osd.4.log" --pid-file "$dir/osd.4.pid" >>"$dir/osd.4.out" 2>&1 &
for _ in $(seq 1 120); do grep -q "booted as osd.4 " "$dir/osd.4.log" 2>/dev/null && break; sleep 0.25; done
grep -q "booted as osd.4 " "$dir/osd.4.log" || fail "the new OSD did not boot as osd.4"
"$ctl" osd out 0 1 >/dev/null || fail "osd out 0 1"
sleep 3 # (the new acting sets peer)
verify_or_wait pair3 t 300 1 "a new primary activated PGs without their past intervals' OSDs" \
	"new OSD, past intervals from its peers"
grep -q "learnt .* past interval" "$dir/osd.4.log" || fail "osd.4 learnt no past interval from a peer"
up 4
"$ctl" osd in 0 1 >/dev/null || fail "osd in 0 1"
"$ctl" osd out 4 >/dev/null || fail "osd out 4"
wait_all_up
wait_clean "osd.0 and osd.1 back, osd.4 out"
run_load verify --pool pair3 --prefix t --count 300 --gen 1 >/dev/null ||
	fail "pair3 pool after its OSDs came back"
kill "$(cat "$dir/osd.4.pid")"
wait_ndown 1
"$ctl" osd rm 4 >/dev/null || fail "osd rm 4"
rm -f "$dir/osd.4.data" "$dir/osd.4.pid"

# down + up resumes the cluster with its data (and the daemons' clean exits
# are checked by the sanitizer builds).
"$ctl" down --dir "$dir" >/dev/null || fail "down"
if grep -l "Sanitizer\|runtime error" "$dir"/*.log >/dev/null 2>&1; then fail "sanitizer report"; fi
# The mons now wait long for beacons: only the OSDs' heartbeats can find a
# hung OSD.
CAIRN_OSD_GRACE=120s CAIRN_OSD_REPORT_GRACE=1s up 4
wait_all_up
wait_clean "down + up"
verify_all "after down + up"

# A hung OSD (SIGSTOP): its peers stop hearing it and report it; the mons
# mark it down long before their own beacon grace; once it runs again it
# boots again and catches up.
kill -STOP "$(osd_pid 1)"
t0=$(date +%s)
for _ in $(seq 1 120); do "$ctl" osd ls | grep -q " down " && break; sleep 0.25; done
"$ctl" osd ls | grep -q " down " || { kill -CONT "$(osd_pid 1)"; fail "hung OSD not reported down"; }
echo "hung OSD marked down after $(( $(date +%s) - t0 )) s (heartbeat grace 6 s, beacon grace 120 s)"
grep -q "reported failed by" "$dir/mon.a.log" || fail "the mons did not act on failure reports"
run_load write --prefix b --count $((n / 4)) --gen 1 >/dev/null || fail "writing with an OSD hung"
kill -CONT "$(osd_pid 1)"
wait_all_up
wait_clean "hung OSD back"
verify_all "after the hung OSD came back"

# 3e. Giving up a dead OSD's data: the size-1 pool's PGs on osd.3 wait
# (incomplete) once it is killed and marked out -- their new OSDs have
# nothing -- until the operator removes it from the map ('osd rm'); then
# they go on with empty copies: those objects are gone (ENOENT), every
# other object of the pool verifies.
kill -9 "$(osd_pid 3)"
wait_ndown 1
"$ctl" osd out 3 >/dev/null || fail "osd out 3"
status_until incomplete 60 0.25 || fail "no PG waits for the killed size-1 OSD: $(grep 'pgs:' "$dir/st")"
"$ctl" osd rm 3 >/dev/null || fail "osd rm 3"
wait_clean "osd.3 removed: its size-1 PGs given up"
"$load" verify -c "$dir/cairn.conf" --pool single --prefix s --count 200 --gen 1 --max-size "$max" \
	>"$dir/v.out" 2>"$dir/v.err" || true
lost=$(grep -c "No such file" "$dir/v.err" || true)
[ "$lost" -gt 0 ] || fail "no size-1 object was on osd.3? $(tail -1 "$dir/v.out")"
[ "$(grep -vc "No such file" "$dir/v.err")" -eq 0 ] ||
	fail "size-1 pool after osd rm: $(grep -v "No such file" "$dir/v.err" | head -3)"
grep -q "removed from the map: going on without" "$dir"/osd.*.log || fail "no PG logged giving up"
echo "osd rm of a dead OSD: its size-1 PGs went on empty ($lost of 200 objects gone, the rest verified)"

# 4. All OSDs down: an op waits for them (no timeout by default: a routine
# failure never fails it) until the caller stops it; with --timeout, a
# clear error, not a hang.
for i in 0 1 2; do kill -9 "$(osd_pid $i)"; done
rc=0
timeout 5 "$ctl" --command_timeout 3s obj get default a-1 "$dir/x" 2>"$dir/err" || rc=$?
[ "$rc" -eq 124 ] || fail "a read with every OSD down did not wait (rc $rc: $(cat "$dir/err"))"
if timeout 60 "$ctl" --command_timeout 3s --timeout 3s obj get default a-1 "$dir/x" 2>"$dir/err"; then
	fail "a read with every OSD down succeeded"
fi
grep -qi "timed out" "$dir/err" || fail "down cluster error: $(cat "$dir/err")"
echo "every OSD down: an op waits (stopped after 5 s); with --timeout 3s: $(cat "$dir/err")"
echo "1 passed, 0 failed"
