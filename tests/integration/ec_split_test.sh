#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# EC writes interrupted by a primary crash end all-old or all-new on every
# shard (issue #7). A 4+2 pool of one PG on 6 OSDs (every OSD holds a shard).
# For each case the PG's primary runs with osd_debug_split_write=N: it sends
# one write to shards 0..N-1 only, waits until they committed, and exits
# (before acknowledging); the client is killed so that it cannot resend.
# Then, with the primary still down and again after it rejoined, the object
# must read back exactly as before (the write reached fewer than k=4 shards:
# the shards that have it undo it from their rollback stash) or exactly as
# written (it reached k or more: the others are rebuilt). At the end every
# object reads the same decoded from parity (two data shards' OSDs down).
set -euo pipefail
. "$(dirname "$0")/../lib/cluster.sh"
build=${1:?usage: ec_split_test.sh BUILD_DIR}
ctl="$build/tools/clusterctl"
load="$build/tests/integration/cairn_load"
dir=$(mktemp -d /tmp/cairn-ec-split-XXXXXX)
finish() {
	local rc=$?
	cluster_finish "$rc"
}
trap finish EXIT
fail() {
	echo "FAIL: $*" >&2
	"$ctl" status >&2 || true
	"$ctl" pg ls >&2 || true
	for f in "$dir"/*.log; do echo "== $f"; grep -v DEBUG "$f" | tail -n 30; done >&2
	exit 1
}
export CAIRN_OSD_GRACE=2s
up() {
	"$ctl" up --dir "$dir" --mons 1 --osds 6 --osd-size 1G >"$dir/up.out" 2>&1 ||
		fail "up: $(cat "$dir/up.out")"
}
# The OSD holding shard $1 of the pool's only PG.
shard_osd() {
	"$ctl" --format json pg ls | /usr/bin/python3 -c '
import json, sys
print([p for p in json.load(sys.stdin)["pgs"] if p["pg"].startswith("2.")][0]["up"][int(sys.argv[1])])' "$1"
}
# Every PG active (degraded is fine: an OSD is down), as its primary reported
# it in the current map (not "+stale": a state from before the map change).
wait_active() {
	for _ in $(seq 1 240); do
		"$ctl" pg ls >"$dir/pgs" 2>&1 || true
		if grep -q "^2\." "$dir/pgs" && ! grep "^2\." "$dir/pgs" | grep -vq " active" &&
			! grep "^2\." "$dir/pgs" | grep -q "stale"; then
			return 0
		fi
		sleep 0.25
	done
	fail "$1: PG not active: $(grep '^2\.' "$dir/pgs")"
}
# Object $1 reads back as file $2, or (with $2 = absent) does not exist.
check() {
	local what=$3
	if [ "$2" = absent ]; then
		if "$ctl" obj get ec "$1" "$dir/got" >"$dir/get.out" 2>&1; then
			fail "$what: $1 exists ($(stat -c %s "$dir/got") bytes; $(cat "$dir/get.out");" \
				"$(cmp -s "$dir/got" "$dir/full" && echo "the new contents")) at $(date +%T.%N)"
		fi
		grep -Eqi "no such|not found|-2\b|ENOENT" "$dir/get.out" ||
			fail "$what: $1: unclear error: $(cat "$dir/get.out")"
		return 0
	fi
	"$ctl" obj get ec "$1" "$dir/got" >"$dir/get.out" 2>&1 ||
		fail "$what: get $1: $(cat "$dir/get.out")"
	cmp -s "$dir/got" "$2" || fail "$what: $1 is neither all old nor all new as expected ($2)"
}
mkdata() { head -c "$2" /dev/urandom >"$dir/$1"; }

up
export CAIRN_CONF="$dir/cairn.conf"
"$ctl" pool create ec --ec 4+2 --pg-num 1 >/dev/null || fail "pool create"
wait_clean "fresh cluster"

# Old contents: 300,000 bytes each (about 18 stripes of 16 KiB).
for o in a b c e f g; do
	mkdata "$o.old" 300000
	"$ctl" obj put ec "split-$o" "$dir/$o.old" || fail "put split-$o"
done

# Expected results of the cases' writes, were they applied.
mkdata patch 50000
mkdata full 123457
mkdata tail 10000
/usr/bin/python3 - "$dir" <<'PY'
import sys
d = sys.argv[1]
def rd(n):
    return open(f"{d}/{n}", "rb").read()
a = bytearray(rd("a.old")); a[20000:70000] = rd("patch"); open(f"{d}/a.new", "wb").write(a)
f = bytearray(rd("f.old")); f[20000:70000] = rd("patch"); open(f"{d}/f.new", "wb").write(f)
PY

# case NAME N EXPECT -- cairn_load op arguments
case_run() {
	local name=$1 n=$2 expect=$3 p cpid pid log lines
	shift 3
	p=$(shard_osd 0)
	kill -9 "$(osd_pid "$p")"
	wait_ndown 1
	CAIRN_OSD_DEBUG_SPLIT_WRITE=$n up
	wait_all_up
	wait_clean "$name: osd.$p primary with osd_debug_split_write=$n"
	pid=$(osd_pid "$p")
	log="$dir/osd.$(osd_idx "$p").log"
	lines=$(wc -l <"$log") # (the log holds earlier cases' split lines too)
	"$load" op -c "$dir/cairn.conf" --pool ec --name "split-$name" "$@" >"$dir/op.out" 2>&1 &
	cpid=$!
	# The client goes as soon as the primary has split the write (it logs,
	# then exits): alive, it would resend the write to the next primary once
	# the map marks this one down, and that write would rightly complete. A
	# dead primary may stay a zombie until something reaps it (proc_gone).
	for _ in $(seq 1 200); do
		[ "$(tail -n +$((lines + 1)) "$log" | grep -c "split_write.* is on shards below $n only")" -gt 0 ] &&
			break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -9 "$cpid" 2>/dev/null || true
	wait "$cpid" 2>/dev/null || true
	for _ in $(seq 1 200); do proc_gone "$pid" && break; sleep 0.05; done
	proc_gone "$pid" || fail "$name: osd.$p did not split the write"
	[ "$(tail -n +$((lines + 1)) "$log" | grep -c "split_write.* is on shards below $n only")" -gt 0 ] ||
		fail "$name: osd.$p did not log the split"
	wait_ndown 1
	wait_active "$name: primary down"
	check "split-$name" "$expect" "$name: write on $n of 6 shards, primary down"
	up
	wait_all_up
	wait_clean "$name: primary back"
	check "split-$name" "$expect" "$name: write on $n of 6 shards, all back"
	echo "$name: the write on $n of 6 shards ended $(basename "$expect")"
}

case_run a 3 "$dir/a.old" --do write --off 20000 --file "$dir/patch"
case_run b 2 "$dir/b.old" --do writefull --file "$dir/full"
case_run c 3 "$dir/c.old" --do remove
case_run d 3 absent --do writefull --file "$dir/full"
case_run e 3 "$dir/e.old" --do truncate --len 5000
case_run f 5 "$dir/f.new" --do write --off 20000 --file "$dir/patch"
case_run g 1 "$dir/g.old" --do append --file "$dir/tail"
grep -q "undid [0-9]* changes newer than" "$dir"/osd.*.log || fail "no OSD logged a rollback"
grep -l "undid [0-9]* changes newer than" "$dir"/osd.*.log | wc -l |
	sed 's/^/OSDs that rolled back a split write: /'

# Every shard agrees: decoded without two data shards, each pair in turn.
verify_all() {
	for o in a b c e f g; do
		local want="$dir/$o.old"
		[ "$o" = f ] && want="$dir/f.new"
		check "split-$o" "$want" "$1"
	done
	check split-d absent "$1"
}
for pair in "0 1" "2 3"; do
	set -- $pair
	x=$(shard_osd "$1")
	y=$(shard_osd "$2")
	kill -9 "$(osd_pid "$x")" "$(osd_pid "$y")"
	wait_ndown 2
	verify_all "shards $1 and $2 down (osd.$x, osd.$y)"
	up
	wait_all_up
	wait_clean "osd.$x and osd.$y back"
done
verify_all "all up"

# No rollback stash outlives its use: once the PG is idle the primary tells
# the shards to drop them, so none is left to load at the next start.
sleep 2
before=$(cat "$dir"/osd.*.log | grep -c "rollback stashes kept" || true)
"$ctl" down --dir "$dir" >/dev/null 2>&1 || fail "down"
up
wait_all_up
wait_clean "restarted"
after=$(cat "$dir"/osd.*.log | grep -c "rollback stashes kept" || true)
[ "$before" = "$after" ] ||
	fail "rollback stashes left behind: $(grep -h "rollback stashes kept" "$dir"/osd.*.log | tail -3)"
verify_all "after a restart"
echo "PASS"
