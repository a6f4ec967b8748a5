#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A fenced takeover (issue #30: locks and client fencing). A holder H takes
# lock "owner" (3 s, renewed every second) and writes data objects without
# a guard every 50 ms, as a block image's writer does. H is SIGSTOPped: its
# hold expires; a taker T runs cairn_lock_take, which fences H (blocklist),
# breaks H's hold and locks, then writes "T" to every data object. H gets
# SIGCONT: whatever it sends now must be refused (-EKEYREVOKED) and nothing
# of it may land after T's writes: every data object reads "T" at the end.
# Without the fence (FENCE=0 breaks the lock without blocklisting, to show
# what the test guards against) H's next write lands over T's. The OSDs run
# 2 PG shards each, so half of the PGs check the blocklist on a shard the
# client's one session reaches through the OSD's hand-over.
set -euo pipefail
. "$(dirname "$0")/../lib/cluster.sh"
build=${1:?usage: lock_fence_test.sh BUILD_DIR}
ctl="$build/tools/clusterctl"
load="$build/tests/integration/cairn_load"
dir=$(mktemp -d /tmp/cairn-lock-fence-XXXXXX)
hpid=
finish() {
	local rc=$?
	[ -z "$hpid" ] || kill -CONT "$hpid" 2>/dev/null || true
	[ -z "$hpid" ] || kill "$hpid" 2>/dev/null || true
	cluster_finish "$rc"
}
trap finish EXIT
fail() {
	echo "FAIL: $*" >&2
	cat "$dir/h.out" "$dir/h.err" "$dir/t.out" "$dir/t.err" >&2 2>/dev/null || true
	exit 1
}
CAIRN_OSD_OP_SHARDS=2 "$ctl" up --dir "$dir" --mons 1 --osds 3 --osd-size 256M >"$dir/up.out" 2>&1 ||
	fail "up: $(cat "$dir/up.out")"
export CAIRN_CONF="$dir/cairn.conf"
wait_clean "start" >/dev/null
"$load" holder -c "$CAIRN_CONF" --pool default --name img-lock --prefix img-data --seconds 60 \
	>"$dir/h.out" 2>"$dir/h.err" &
hpid=$!
for _ in $(seq 1 100); do grep -q '"locked"' "$dir/h.out" && break; sleep 0.1; done
grep -q '"locked":0,' "$dir/h.out" || fail "the holder did not lock: $(cat "$dir/h.out")"
hname=$(sed -n 's/.*"client":"\([^"]*\)".*/\1/p' "$dir/h.out")
sleep 1.5 # it renews and writes
kill -STOP "$hpid"
t0=$(date +%s%N)
echo "holder $hname stopped (SIGSTOP) while holding the lock and writing"
"$load" takeover -c "$CAIRN_CONF" --pool default --name img-lock --prefix img-data --seconds 30 \
	>"$dir/t.out" 2>"$dir/t.err" || fail "takeover: $(cat "$dir/t.out")"
echo "taken over $(( ($(date +%s%N) - t0) / 1000000 )) ms after the stop: $(cat "$dir/t.out")"
[ "${FENCE:-1}" = 0 ] || "$ctl" osd blocklist ls | grep -q "^$hname " || fail "the holder is not blocklisted: $("$ctl" osd blocklist ls)"
kill -CONT "$hpid"
for _ in $(seq 1 200); do grep -q '"stop"' "$dir/h.out" && break; sleep 0.1; done
wait "$hpid" || true
hpid=
for k in 0 1 2 3 4 5 6 7; do
	"$ctl" obj get default "img-data-$k" "$dir/got" >/dev/null || fail "get img-data-$k"
	[ "$(cat "$dir/got")" = T ] || fail "img-data-$k is '$(cat "$dir/got")' after the takeover, not T"
done
echo "every data object holds the taker's data"
grep -q '"stop":-128,' "$dir/h.out" ||
	fail "the holder's writes after the takeover: $(tail -n 1 "$dir/h.out") (-128 is -EKEYREVOKED)"
echo "holder resumed, refused: $(tail -n 1 "$dir/h.out")"
echo "1 passed, 0 failed"
