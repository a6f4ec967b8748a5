#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Watch/notify end to end, judged by what the clients print
# (cairn_watch_tool): two watchers of one object get a notify and both
# replies come back; the object's primary is killed with -9 and the next
# notify still reaches both (the watchers re-bind to the new primary); a
# watcher that does not ack is reported as timed out, and once it is dead
# (killed, silent past its 3 s timeout) it is neither notified nor listed;
# a watcher stopped past its timeout is dropped, and when it runs again it
# watches again and says so (err_cb -ENOTCONN);
# watchers stopped with SIGTERM unwatch and exit 0, leaving none; a notify
# on an absent object fails. Watcher w2 runs 4 io threads. The OSDs run 2 PG shards and the object is in
# a PG of the second: everything passes through the OSD's hand-over from
# the client's one session to that shard.
set -euo pipefail
. "$(dirname "$0")/../lib/cluster.sh"
build=${1:?usage: watch_test.sh BUILD_DIR}
ctl="$build/tools/clusterctl"
tool="$build/tests/integration/cairn_watch_tool"
dir=$(mktemp -d /tmp/cairn-watch-test-XXXXXX)
w1='' w2='' w3=''
finish() {
	local rc=$?
	disown -a 2>/dev/null || true # (no job notices for what is killed here)
	for p in $w1 $w2 $w3; do kill -9 "$p" 2>/dev/null || true; done
	cluster_finish "$rc"
}
trap finish EXIT
fail() {
	echo "FAIL: $*" >&2
	for f in "$dir"/w?.out "$dir"/w?.err "$dir"/n.out "$dir"/n.err "$dir"/*.log; do
		if [ -e "$f" ]; then
			echo "== $f"
			tail -n 30 "$f"
		fi
	done >&2
	exit 1
}

# Start watcher $1 (output in $dir/$1.out, .err) with options $2...; its pid in $!.
start_watcher() {
	local n=$1
	shift
	"$tool" watch default "$obj" --timeout 3000 "$@" >"$dir/$n.out" 2>"$dir/$n.err" &
}
# Wait (up to 30 s) until watcher $1 (pid $2) printed "watching".
wait_watching() {
	for _ in $(seq 1 300); do
		grep -q '^watching ' "$dir/$1.out" && return 0
		proc_gone "$2" && fail "$1 exited before watching: $(cat "$dir/$1.err")"
		sleep 0.1
	done
	fail "$1 did not print 'watching' within 30 s"
}
# Watcher $1's cookie and entity, from its "watching" line.
cookie_of() { sed -n 's/^watching cookie=\([0-9]*\) entity=.*$/\1/p' "$dir/$1.out"; }
entity_of() { sed -n 's/^watching cookie=[0-9]* entity=\(.*\)$/\1/p' "$dir/$1.out"; }
# Notify $obj with payload $1, waiting $2 ms for acks, into $dir/n.out (bounded: 60 s).
notify() {
	timeout 60 "$tool" notify default "$obj" "$1" --timeout "$2" >"$dir/n.out" 2>"$dir/n.err" ||
		fail "notify $1: rc $? $(cat "$dir/n.err")"
}
# n.out has exactly the line $1 ($2: what it is about).
has() { grep -qx -- "$1" "$dir/n.out" || fail "$2: no '$1' in: $(tr '\n' ';' <"$dir/n.out")"; }
# n.out reports acks from w1 and w2 (replies r1, r2) and $1 timeouts.
acked_by_both() {
	has "acks 2" "$2"
	has "ack $e1 $c1 r1" "$2"
	has "ack $e2 $c2 r2" "$2"
	has "timeouts $1" "$2"
}
# Watcher $1 printed an event with payload $2.
got_event() {
	grep -Eq "^event id=[0-9]+ notifier=client\.[^ ]+ payload=$2\$" "$dir/$1.out" ||
		fail "$1 printed no event with payload $2: $(tr '\n' ';' <"$dir/$1.out")"
}
# The watcher list of $obj into $dir/n.out, and check its count is $1.
watchers_are() {
	timeout 60 "$tool" watchers default "$obj" >"$dir/n.out" 2>"$dir/n.err" ||
		fail "watchers: $(cat "$dir/n.err")"
	has "watchers $1" "$2"
}
# SIGTERM watcher $1 (pid $2) and wait (up to 30 s) until it exited 0.
stop_watcher() {
	local rc=0
	kill -TERM "$2"
	for _ in $(seq 1 300); do proc_gone "$2" && break; sleep 0.1; done
	proc_gone "$2" || fail "$1 did not exit within 30 s of SIGTERM"
	wait "$2" || rc=$?
	[ "$rc" = 0 ] || fail "$1 exited $rc after SIGTERM: $(cat "$dir/$1.err")"
	grep -qx unwatched "$dir/$1.out" || fail "$1 did not unwatch"
}

# a. The cluster, and the object to watch.
# A short grace so a killed OSD is marked down quickly (read by the mons from the environment).
export CAIRN_OSD_GRACE=2s
# Two PG shards per OSD, and an object of a PG the second shard serves:
# the watch, its pings and its events pass through the OSD's hand-over
# between shards (clients keep one session per OSD).
export CAIRN_OSD_OP_SHARDS=2
"$ctl" up --dir "$dir" --mons 1 --osds 3 --osd-size 256M >"$dir/up.out" 2>&1 ||
	fail "up: $(cat "$dir/up.out")"
export CAIRN_CONF="$dir/cairn.conf"
wait_clean "start"
obj=''
for cand in wobj wobj.1 wobj.2 wobj.3 wobj.4 wobj.5 wobj.6 wobj.7 wobj.8 wobj.9; do
	pg=$("$ctl" pg ls default "$cand" | awk 'NR == 2 { print $1 }')
	if [ $((16#${pg#*.} % 2)) = 1 ]; then
		obj=$cand
		break
	fi
done
[ -n "$obj" ] || fail "no object of an odd PG among wobj, wobj.1..9"
echo watched >"$dir/wobj.in"
"$ctl" obj put default "$obj" "$dir/wobj.in" || fail "put wobj"
echo "a. up with 3 OSDs of 2 PG shards; $obj (PG $pg, its second shard's) written"

# b. Two watchers.
start_watcher w1 --reply r1
w1=$!
# (w2 runs 4 io threads: its watch lives on the io thread of the object's ops.)
CAIRN_TEST_IO_THREADS=4 # (w2 runs 4 io threads: its watch lives on the io thread of the object's ops.)
CAIRN_TEST_IO_THREADS=4 start_watcher w2 --reply r2
w2=$!
wait_watching w1 "$w1"
wait_watching w2 "$w2"
c1=$(cookie_of w1) e1=$(entity_of w1) c2=$(cookie_of w2) e2=$(entity_of w2)
if [ -z "$c1" ] || [ -z "$e1" ] || [ -z "$c2" ] || [ -z "$e2" ]; then
	fail "bad 'watching' lines: $(head -n 1 "$dir/w1.out"); $(head -n 1 "$dir/w2.out")"
fi
[ "$e1" != "$e2" ] || fail "both watchers are $e1"
echo "b. watching: w1 $e1 cookie $c1, w2 $e2 cookie $c2"

# c. A notify reaches both, and both replies come back.
notify hello 5000
acked_by_both 0 "notify hello"
got_event w1 hello
got_event w2 hello
echo "c. notify hello: acked by both (r1, r2), no timeouts"

# d. The object lists both.
watchers_are 2 "watchers with w1, w2"
has "watcher $e1 $c1 3000" "watchers with w1, w2"
has "watcher $e2 $c2 3000" "watchers with w1, w2"
echo "d. watchers: 2 (w1, w2, timeout 3000 ms)"

# e. The primary is killed: the next notify (sent at once) still reaches both.
prim=$("$ctl" pg ls default "$obj" | awk 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "PRIMARY") c = i }
	NR == 2 && c { print $c }')
[[ "$prim" =~ ^[0-9]+$ ]] || fail "no primary for $obj in: $("$ctl" pg ls default "$obj")"
pidx=$(osd_idx "$prim")
kill -9 "$(osd_pid "$prim")"
t0=$(date +%s%N)
notify after-kill 10000
acked_by_both 0 "notify after the kill of osd.$prim"
got_event w1 after-kill
got_event w2 after-kill
echo "e. osd.$prim ($obj's primary) killed: notify after-kill acked by both after $((($(date +%s%N) - t0) / 1000000)) ms"
wait_ndown 1
osd_start "$pidx"
wait_clean "e. osd.$prim back"

# e2. A notify pending at the primary when it dies: w2 is stopped (so the
# notify waits for it; w1 acked already), the primary is killed, w2 runs
# again. The notifier resends to the new primary under the same notify id;
# w1 gets the repeat, which its library answers by itself (the application
# sees the event once), and the notify ends with both replies.
prim=$("$ctl" pg ls default "$obj" | awk 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "PRIMARY") c = i }
	NR == 2 && c { print $c }')
[[ "$prim" =~ ^[0-9]+$ ]] || fail "no primary for $obj in: $("$ctl" pg ls default "$obj")"
pidx=$(osd_idx "$prim")
kill -STOP "$w2"
timeout 60 "$tool" notify default "$obj" inflight --timeout 20000 >"$dir/n2.out" 2>"$dir/n2.err" &
np=$!
for _ in $(seq 1 100); do grep -q "payload=inflight" "$dir/w1.out" && break; sleep 0.1; done
grep -q "payload=inflight" "$dir/w1.out" || fail "w1 got no event for the notify inflight"
sleep 0.5 # (w1's ack reaches the primary)
kill -9 "$(osd_pid "$prim")"
sleep 1
kill -CONT "$w2"
wait "$np" || fail "notify inflight: rc $? $(cat "$dir/n2.err")"
cp "$dir/n2.out" "$dir/n.out"
acked_by_both 0 "notify pending while its primary died"
n1=$(grep -c "payload=inflight" "$dir/w1.out" || true)
n2=$(grep -c "payload=inflight" "$dir/w2.out" || true)
[ "$n1" = 1 ] && [ "$n2" = 1 ] || fail "notify inflight: w1 saw it $n1 times, w2 $n2 times (want once each)"
echo "e2. osd.$prim killed with a notify pending (w2 stopped): resent, acked by both, each watcher saw it once"
wait_ndown 1
osd_start "$pidx"
wait_clean "e2. osd.$prim back"

# f. A watcher that does not ack times out; once dead it is dropped.
start_watcher w3 --no-ack
w3=$!
wait_watching w3 "$w3"
c3=$(cookie_of w3) e3=$(entity_of w3)
if [ -z "$c3" ] || [ -z "$e3" ]; then fail "bad 'watching' line: $(head -n 1 "$dir/w3.out")"; fi
notify no-ack 2000
acked_by_both 1 "notify with a watcher that does not ack"
has "timeout $e3 $c3" "notify with a watcher that does not ack"
got_event w3 no-ack
echo "f. w3 ($e3 cookie $c3, --no-ack): notify no-ack acked by w1, w2; w3 timed out"
kill -9 "$w3"
wait "$w3" 2>/dev/null || true
w3=
sleep 5 # past w3's 3 s timeout: no ping from it since
notify after-dead 5000
acked_by_both 0 "notify after w3 died"
watchers_are 2 "watchers after w3 died"
has "watcher $e1 $c1 3000" "watchers after w3 died"
has "watcher $e2 $c2 3000" "watchers after w3 died"
echo "f. w3 killed: notify after-dead acked by w1, w2, no timeouts; watchers: 2"

# f2. A watcher stopped past its timeout is dropped; when it runs again its
# next ping finds that out, it watches again and tells the application
# (err_cb -ENOTCONN: it may have missed notifies), and notifies reach it again.
kill -STOP "$w2"
sleep 5 # past w2's 3 s timeout
notify while-stopped 3000
has "acks 1" "notify while w2 is stopped"
has "ack $e1 $c1 r1" "notify while w2 is stopped"
has "timeouts 0" "notify while w2 is stopped"
kill -CONT "$w2"
for _ in $(seq 1 100); do grep -qx "watch error -107" "$dir/w2.out" && break; sleep 0.1; done
grep -qx "watch error -107" "$dir/w2.out" ||
	fail "w2 did not report its watch lost and made again (-ENOTCONN) within 10 s of SIGCONT"
notify after-cont 5000
acked_by_both 0 "notify after w2 watched again"
got_event w2 after-cont
echo "f2. w2 stopped 5 s: dropped (notify while-stopped acked by w1 only); resumed: watch error -107, then notified again"

# g. Watchers stopped with SIGTERM unwatch.
stop_watcher w1 "$w1"
w1=
stop_watcher w2 "$w2"
w2=
watchers_are 0 "watchers after w1, w2 stopped"
nerr=$(cat "$dir/w1.out" "$dir/w2.out" | grep -c "^watch error" || true)
[ "$nerr" = 1 ] || fail "w1, w2 saw $nerr watch errors, want 1 (w2's -ENOTCONN): $(grep -h '^watch error' "$dir/w1.out" "$dir/w2.out" | tr '\n' ';')"
echo "g. w1, w2 stopped (SIGTERM): exit 0, watchers: 0 (watch errors they saw: $nerr)"

# h. A notify on an absent object fails.
rc=0
timeout 60 "$tool" notify default no-such-object x --timeout 2000 >"$dir/n.out" 2>"$dir/n.err" ||
	rc=$?
[ "$rc" = 1 ] || fail "notify on an absent object: rc $rc, want 1: $(cat "$dir/n.out" "$dir/n.err")"
echo "h. notify on an absent object: exit 1 ($(cat "$dir/n.err"))"
echo "1 passed, 0 failed"
