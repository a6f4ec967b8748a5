#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Clients across a change of the monitors' leader (#30: "a client op
# surviving a mon leader change"), judged by what clients see: 3 mons, 3
# OSDs; a verifying thrash workload (cairn_load: writes, reads, appends)
# runs while the leader is killed with -9. No op of it may fail, lose or
# double-apply anything; its longest op is printed. Meanwhile a service
# registered through libcairn (TTL 3 s, renewed through whichever mon
# answers) stays listed past its TTL, a watch keeps getting notifies, and
# admin calls (status, a blocklist change) work once a new leader is there.
set -euo pipefail
. "$(dirname "$0")/../lib/cluster.sh"
build=${1:?usage: mon_failover_test.sh BUILD_DIR}
ctl="$build/tools/clusterctl"
load="$build/tests/integration/cairn_load"
tool="$build/tests/integration/cairn_watch_tool"
dir=$(mktemp -d /tmp/cairn-monfail-test-XXXXXX)
bg=''
finish() {
	local rc=$?
	disown -a 2>/dev/null || true # (no job notices for what is killed here)
	for p in $bg; do kill -9 "$p" 2>/dev/null || true; done
	cluster_finish "$rc"
}
trap finish EXIT
fail() {
	echo "FAIL: $*" >&2
	for f in "$dir"/*.out "$dir"/*.err "$dir"/*.log; do
		[ -e "$f" ] && { echo "== $f"; tail -n 30 "$f"; }
	done >&2
	exit 1
}
# The leader's name (a, b, c) from `mon ls` ("mon.a ADDR alive leader"); "" if none.
leader() { "$ctl" --command-timeout 5s mon ls 2>/dev/null | awk '$NF == "leader" { sub("mon.", "", $1); print $1 }'; }

export CAIRN_OSD_GRACE=2s
"$ctl" up --dir "$dir" --mons 3 --osds 3 --osd-size 512M >"$dir/up.out" 2>&1 ||
	fail "up: $(cat "$dir/up.out")"
export CAIRN_CONF="$dir/cairn.conf"
wait_clean "start"
old=$(leader)
[ -n "$old" ] || fail "no leader at start: $("$ctl" mon ls)"
echo watched >"$dir/wobj.in"
"$ctl" obj put default wobj "$dir/wobj.in" || fail "put wobj"

# A service, a watcher, and the workload.
"$tool" register rgw gw-a 127.0.0.1:7480 --timeout 3 >"$dir/svc.out" 2>"$dir/svc.err" &
sp=$!
bg="$bg $sp"
"$tool" watch default wobj --timeout 3000 --reply r1 >"$dir/w1.out" 2>"$dir/w1.err" &
wp=$!
bg="$bg $wp"
for _ in $(seq 1 300); do
	grep -q '^registered' "$dir/svc.out" && grep -q '^watching' "$dir/w1.out" && break
	sleep 0.1
done
grep -q '^registered' "$dir/svc.out" || fail "the service was not registered: $(cat "$dir/svc.err")"
grep -q '^watching' "$dir/w1.out" || fail "the watcher did not start: $(cat "$dir/w1.err")"
"$load" thrash -c "$dir/cairn.conf" --pool default --prefix mf --count 200 --seconds 25 \
	--threads 4 >"$dir/load.out" 2>"$dir/load.err" &
lp=$!
bg="$bg $lp"
sleep 4

# The leader dies.
kill -9 "$(cat "$dir/mon.$old.pid")"
t0=$(date +%s%N)
new=''
miss=0 polls=0
# (gw-a must stay listed all along: its renewals go to whichever mon answers)
svc_listed() {
	local out
	out=$("$ctl" --command-timeout 5s service ls rgw 2>/dev/null) || return 1
	grep -q "^rgw	gw-a	" <<<"$out"
}
for _ in $(seq 1 120); do
	polls=$((polls + 1))
	svc_listed || miss=$((miss + 1))
	new=$(leader)
	[ -n "$new" ] && [ "$new" != "$old" ] && break
	sleep 0.5
done
[ -n "$new" ] && [ "$new" != "$old" ] || fail "no new leader within 60 s of killing mon.$old"
echo "mon.$old (leader) killed: mon.$new leads after $((($(date +%s%N) - t0) / 1000000)) ms"

# Admin calls through the new leader.
"$ctl" status >"$dir/status.out" || fail "status after the leader change"
grep -q "rgw: 1 daemon (gw-a at 127.0.0.1:7480)" "$dir/status.out" ||
	fail "status does not list gw-a: $(cat "$dir/status.out")"
"$ctl" osd blocklist add client.0000000000000001 60 >/dev/null || fail "blocklist add"
"$ctl" osd blocklist rm client.0000000000000001 >/dev/null || fail "blocklist rm"
# The registration (TTL 3 s) outlived the change: it was renewed throughout.
for _ in 1 2 3 4 5 6 7 8; do
	polls=$((polls + 1))
	svc_listed || miss=$((miss + 1))
	sleep 0.5
done
[ "$miss" = 0 ] || fail "gw-a (TTL 3 s) was missing from $miss of $polls listings across the leader change"
timeout 60 "$tool" notify default wobj after-leader --timeout 5000 >"$dir/n.out" 2>"$dir/n.err" ||
	fail "notify: $(cat "$dir/n.err")"
grep -qx "acks 1" "$dir/n.out" || fail "notify after the leader change: $(tr '\n' ';' <"$dir/n.out")"
echo "after the change: status, blocklist add/rm, notify acked; gw-a (TTL 3 s) listed in all $polls listings from the kill on"

# The workload: no error, nothing lost, wrong or applied twice.
rc=0
wait "$lp" || rc=$?
js=$(tail -n 1 "$dir/load.out")
[ "$rc" = 0 ] || fail "cairn_load thrash exit $rc: $js $(tail -n 5 "$dir/load.err")"
/usr/bin/python3 -c '
import json, sys
d = json.loads(sys.argv[1])
bad = {k: d[k] for k in ("write_errors", "append_errors", "read_errors", "lost", "wrong", "twice") if d.get(k)}
assert not bad, bad
' "$js" || fail "the workload saw errors across the leader change: $js"
echo "workload across the leader change: $js"

# The service holder and the watcher stop cleanly: unregistered, unwatched.
for p in $sp $wp; do kill -TERM "$p"; done
for p in $sp $wp; do wait "$p" || fail "a tool exited $? after SIGTERM: $(cat "$dir/svc.err" "$dir/w1.err")"; done
bg=''
grep -qx unregistered "$dir/svc.out" || fail "gw-a was not unregistered: $(cat "$dir/svc.out")"
[ -z "$("$ctl" service ls rgw)" ] || fail "gw-a still listed after it unregistered"
echo "service holder and watcher stopped: gw-a unregistered at once"
echo "1 passed, 0 failed"
