#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Asymmetric partitions (issue #29): the primary P of an object is cut off,
# but one client X, whose own links are cut too except to P (its map stays
# old), can still reach P. P keeps running. Two cases, each on its own
# object:
#  - full: P is cut from the mons and from the other OSDs (marked down by
#    silence; its replicas stopped renewing its read lease at the cut);
#  - mons: P is cut from the mons only: it still talks to its replicas,
#    which renew its lease until they get the map that marks P down, so the
#    new primary must hold every op (writes too) until that lease is over.
# In each:
#  1. X reads the object (v1) before the cut.
#  2. Cut; P is marked down; v2 is written through the new primary, at once.
#  3. X reads again at once: its old map sends the read to P. P must not
#     answer v1 (its lease is over, or v2 waited for it); it tells X to
#     resend, and X's read waits.
#  4. X's links heal: X gets the new map and its waiting read completes at
#     the new primary with v2 (no error, no stale data).
#  5. P's cut heals: it boots again, the PGs go active+clean, v2 everywhere.
# With osd_read_lease 0 (CAIRN_OSD_READ_LEASE=0) step 3 returns v1: the test
# sees the stale read. Runs in a network namespace of its own (needs root;
# SKIPPED otherwise): every OSD on its own loopback address, X on 127.0.0.50
# (bind_src), cuts as 'unreachable' routing rules.
set -euo pipefail
build=${1:?usage: partition_test.sh BUILD_DIR}
. "$(dirname "$0")/../lib/netns.sh"
if [ -z "${PARTITION_NETNS:-}" ]; then
	netns_possible || { echo "SKIPPED: needs root for a network namespace of its own"; exit 77; }
	exec unshare -n env PARTITION_NETNS=1 "$0" "$@"
fi
netns_setup
. "$(dirname "$0")/../lib/cluster.sh"
ctl="$build/tools/clusterctl"
load="$build/tests/integration/cairn_load"
dir=$(mktemp -d /tmp/cairn-partition-XXXXXX)
xpid=
finish() {
	local rc=$?
	[ -z "$xpid" ] || kill "$xpid" 2>/dev/null || true
	exec 3>&- 2>/dev/null || true
	cluster_finish "$rc"
}
trap finish EXIT
fail() {
	echo "FAIL: $*" >&2
	"$ctl" status >&2 || true
	cat "$dir/x.out" "$dir/x.err" >&2 2>/dev/null || true
	for f in "$dir"/*.log; do echo "== $f"; grep -v DEBUG "$f" | tail -n 25; done >&2
	exit 1
}
export CAIRN_OSD_GRACE=3s
"$ctl" up --dir "$dir" --mons 1 --osds 3 --osd-size 1G --osd-addrs 127.0.0.10 >"$dir/up.out" 2>&1 ||
	fail "up: $(cat "$dir/up.out")"
export CAIRN_CONF="$dir/cairn.conf"
wait_clean "start" >/dev/null
js() { /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
{ cat "$CAIRN_CONF"; printf '\n[client]\nbind_src = 127.0.0.50:0\n'; } >"$dir/x.conf"
# run_case full|mons OBJECT
run_case() {
	local mode=$1 obj=$2 prim paddr down t0 t1
	echo "== $mode: P cut from $([ "$mode" = full ] && echo "the mons and the OSDs" || echo "the mons only")"
	printf 'v1-written-before-the-cut' >"$dir/v1"
	printf 'v2-written-during-the-cut' >"$dir/v2"
	"$ctl" obj put default "$obj" "$dir/v1" >/dev/null || fail "put v1"
	prim=$("$ctl" --format json pg ls default "$obj" | js 'd[0]["primary"] if isinstance(d, list) else d["pgs"][0]["primary"]')
	paddr=$("$ctl" --format json osd ls | js "[o['addr'] for o in d['osds'] if o['id'] == $prim][0].rsplit(':', 1)[0]")
	echo "$obj: primary osd.$prim at $paddr"
	# X leaves from 127.0.0.50; it reads at once, then again on a line.
	rm -f "$dir/x.in" "$dir/x.out"
	mkfifo "$dir/x.in"
	"$load" reread -c "$dir/x.conf" --pool default --name "$obj" --seconds 120 \
		<"$dir/x.in" >"$dir/x.out" 2>"$dir/x.err" &
	xpid=$!
	exec 3>"$dir/x.in"
	for _ in $(seq 1 100); do grep -q '"pass":0' "$dir/x.out" && break; sleep 0.1; done
	grep -q '"pass":0,"rc":0,"data":"v1-written-before-the-cut"' "$dir/x.out" ||
		fail "X's first read: $(cat "$dir/x.out")"
	# The cut. X talks to P only.
	ip rule add pref 5 from "$paddr" to 127.0.0.50 lookup local
	ip rule add pref 6 from 127.0.0.50 to "$paddr" lookup local
	if [ "$mode" = full ]; then
		ip rule add pref 10 to "$paddr" unreachable
		ip rule add pref 11 from "$paddr" unreachable
	else # the mons (and etcd) are on 127.0.0.1
		ip rule add pref 10 from "$paddr" to 127.0.0.1 unreachable
		ip rule add pref 11 from 127.0.0.1 to "$paddr" unreachable
	fi
	ip rule add pref 12 to 127.0.0.50 unreachable
	ip rule add pref 13 from 127.0.0.50 unreachable
	t0=$(date +%s%N)
	down=
	for _ in $(seq 1 240); do
		"$ctl" --format json osd ls >"$dir/osds" 2>/dev/null || true
		if js "[o['up'] for o in d['osds'] if o['id'] == $prim][0]" <"$dir/osds" 2>/dev/null | grep -q False; then
			down=1
			break
		fi
		sleep 0.1
	done
	[ -n "$down" ] || fail "osd.$prim not marked down while cut off"
	t1=$(date +%s%N)
	echo "osd.$prim marked down $(( (t1 - t0) / 1000000 )) ms after the cut"
	"$ctl" --timeout 60s obj put default "$obj" "$dir/v2" >/dev/null || fail "put v2 during the cut"
	echo "v2 acknowledged $(( ($(date +%s%N) - t1) / 1000000 )) ms after the map marked osd.$prim down"
	# X's old map sends this read to P.
	echo go >&3
	sleep 4
	if grep -q '"pass":1' "$dir/x.out"; then
		fail "X's read during the cut answered (stale, or an error): $(grep '"pass":1' "$dir/x.out")"
	fi
	echo "X's read waits while its map is old (P does not serve it)"
	# X's links heal: the new map moves its read to the new primary.
	ip rule del pref 12
	ip rule del pref 13
	for _ in $(seq 1 200); do grep -q '"pass":1' "$dir/x.out" && break; sleep 0.1; done
	grep -q '"pass":1,"rc":0,"data":"v2-written-during-the-cut"' "$dir/x.out" ||
		fail "X's read after its links healed: $(grep '"pass":1' "$dir/x.out" || echo none)"
	echo "X's read completed with v2 once X had the new map"
	wait "$xpid" || fail "reader exited with an error"
	xpid=
	exec 3>&-
	# P's cut heals: it boots again and catches up.
	for p in 5 6 10 11; do ip rule del pref "$p"; done
	wait_clean "$mode: after the cut healed" 480
	"$ctl" obj get default "$obj" "$dir/got" >/dev/null || fail "get after healing"
	cmp -s "$dir/got" "$dir/v2" || fail "after healing the object is $(cat "$dir/got")"
}
# Fencing: X, cut from the mons only (so it never learns of the blocklist),
# writes; it is blocklisted; an admin writes the object; X's next write,
# sent with its old map to the OSDs it still reaches, must be refused
# (-EKEYREVOKED, the OSDs' own check) and change nothing.
fence_case() {
	local obj=fence-obj
	echo "== fence: X cut from the mons, blocklisted, writes again"
	rm -f "$dir/x.in" "$dir/x.out"
	mkfifo "$dir/x.in"
	"$load" rewrite -c "$dir/x.conf" --pool default --name "$obj" --seconds 120 \
		<"$dir/x.in" >"$dir/x.out" 2>"$dir/x.err" &
	xpid=$!
	exec 3>"$dir/x.in"
	for _ in $(seq 1 100); do grep -q '"pass":0' "$dir/x.out" && break; sleep 0.1; done
	grep -q '"pass":0,"rc":0,"client":"client\.' "$dir/x.out" || fail "X's first write: $(cat "$dir/x.out")"
	xname=$(sed -n 's/.*"client":"\([^"]*\)".*/\1/p' "$dir/x.out")
	ip rule add pref 12 from 127.0.0.50 to 127.0.0.1 unreachable
	ip rule add pref 13 from 127.0.0.1 to 127.0.0.50 unreachable
	"$ctl" osd blocklist add "$xname" 600 >/dev/null || fail "blocklist add $xname"
	"$ctl" osd blocklist ls | grep -q "^$xname expires in" || fail "blocklist ls: $("$ctl" osd blocklist ls)"
	# A client connecting now has the blocklist's map; its write waits at
	# the primary until that OSD has it too.
	printf 'admin' >"$dir/adm"
	"$ctl" obj put default "$obj" "$dir/adm" >/dev/null || fail "admin put"
	echo go >&3
	for _ in $(seq 1 100); do grep -q '"pass":1' "$dir/x.out" && break; sleep 0.1; done
	grep -q '"pass":1,"rc":-128}' "$dir/x.out" ||
		fail "X's write after the fence: $(grep '"pass":1' "$dir/x.out" || echo none) (-128 is -EKEYREVOKED)"
	wait "$xpid" || fail "X exited with an error"
	xpid=
	exec 3>&-
	ip rule del pref 12
	ip rule del pref 13
	"$ctl" obj get default "$obj" "$dir/got" >/dev/null || fail "get after the fence"
	cmp -s "$dir/got" "$dir/adm" || fail "after the fence the object is $(cat "$dir/got")"
	refused=$(for a in $(sed -n 's/^osd_metrics = //p' "$CAIRN_CONF" | tr ',' ' '); do
		curl -s "http://$a/metrics" | sed -n 's/^cairn_osd_ops_blocklisted_total \([0-9]*\).*/\1/p'
	done | awk '{s += $1} END {print s + 0}')
	[ "$refused" -ge 1 ] || fail "no OSD counted a refused op (cairn_osd_ops_blocklisted_total)"
	echo "X (blocklisted, its map old) was refused by the OSDs ($refused ops): the object is the admin's"
	"$ctl" osd blocklist rm "$xname" >/dev/null || fail "blocklist rm"
	"$ctl" osd blocklist ls | grep -q "$xname" && fail "still listed after rm"
	return 0
}
run_case full lease-obj-1
run_case mons lease-obj-2
fence_case
grep -q "marks us down" "$dir"/osd.*.log || fail "no cut OSD saw that it was marked down"
echo "1 passed, 0 failed"
