#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A local cluster with OSDs end to end: `clusterctl up --osds 3` (private
# etcd, 1 mon, 3 OSDs on preallocated files), objects through `clusterctl
# obj` compared byte for byte, the libcairn suite (atomic compound ops, every
# sub-op, async, listing, bad input), an OSD killed with -9 while writes go
# on (2 of 3 copies, min_size 2), OSDs restarted with other numbers of PG
# shards (osd_op_shards: 3, then 2 beside 1-shard peers), each OSD stopped
# with SIGTERM while writes go on (it drains its calls in flight), and
# clear errors.
set -euo pipefail
. "$(dirname "$0")/../lib/cluster.sh"
build=${1:?usage: cluster_test.sh BUILD_DIR}
ctl="$build/tools/clusterctl"
load="$build/tests/integration/cairn_load"
dir=$(mktemp -d /tmp/cairn-cluster-test-XXXXXX)
# At exit: stop the cluster; sanitizer reports in its logs fail the test (tests/lib/cluster.sh).
trap 'cluster_finish $?' EXIT
fail() { echo "FAIL: $*" >&2; for f in "$dir"/*.log; do echo "== $f"; tail -n 30 "$f"; done >&2; exit 1; }

# A short grace so a killed OSD is marked down quickly (read by the mons from the environment).
export CAIRN_OSD_GRACE=2s
t0=$(date +%s%N)
"$ctl" up --dir "$dir" --mons 1 --osds 3 --osd-size 256M >"$dir/up.out" || fail "up: $(cat "$dir/up.out")"
t1=$(date +%s%N)
echo "up with 3 OSDs: $(( (t1 - t0) / 1000000 )) ms"
grep -q "3 osds: 3 up, 3 in" "$dir/up.out" || fail "up did not report 3 OSDs: $(cat "$dir/up.out")"
export CAIRN_CONF="$dir/cairn.conf"
# Run on the epoll backend (ctest's .epoll variant): make sure the daemons did.
if [ -n "${CAIRN_REACTOR:-}" ] && [ "$CAIRN_REACTOR" != auto ]; then
	grep -q "backend=$CAIRN_REACTOR" "$dir"/osd.0.log ||
		fail "CAIRN_REACTOR=$CAIRN_REACTOR but osd.0 runs $(grep -o 'backend=[a-z_]*' "$dir"/osd.0.log | head -1)"
fi
"$ctl" pool ls | grep -q default || fail "no pool default"
# osd_op_shards 0 (the default): the cores this OSD may use (its affinity
# mask) divided among the 3 OSDs clusterctl up started here, 1 to 8.
cores=$(nproc)
want=$(( cores / 3 < 1 ? 1 : cores / 3 > 8 ? 8 : cores / 3 ))
grep -q ", $want PG shards\?\( (osd_op_shards 0: cores / osd_host_osds)\)$" "$dir/osd.0.log" ||
	fail "osd.0 with $cores cores among 3 OSDs: not $want PG shard(s): $(grep -o '[0-9]* PG shard.*' "$dir/osd.0.log")"

# Objects of several sizes through clusterctl obj.
for s in 0 1 4096 1048579 9437184; do
	head -c "$s" /dev/urandom >"$dir/in.$s"
	"$ctl" obj put default "obj-$s" "$dir/in.$s" || fail "put $s"
done
for s in 0 1 4096 1048579 9437184; do
	"$ctl" obj get default "obj-$s" "$dir/out.$s" || fail "get $s"
	cmp "$dir/in.$s" "$dir/out.$s" || fail "object of $s bytes differs"
	"$ctl" obj stat default "obj-$s" | grep -q "size $s " || fail "stat $s"
done
[ "$("$ctl" obj ls default | grep -c '^obj-')" = 5 ] || fail "ls: $("$ctl" obj ls default)"
"$ctl" obj rm default obj-1 || fail "rm"
if "$ctl" obj get default obj-1 "$dir/x" 2>"$dir/err"; then fail "get after rm"; fi
grep -q "No such file" "$dir/err" || fail "get after rm message: $(cat "$dir/err")"
if "$ctl" obj put nopool x "$dir/in.1" 2>"$dir/err"; then fail "put to a missing pool"; fi
grep -q "no such pool" "$dir/err" || fail "missing pool message: $(cat "$dir/err")"
# Namespaces and locator keys through clusterctl obj: one name, two objects.
"$ctl" obj put default obj-4096 "$dir/in.1" --namespace tenant || fail "put in tenant"
"$ctl" obj put default kobj "$dir/in.0" --namespace tenant --key k1 || fail "put with a key"
"$ctl" obj get default obj-4096 "$dir/out.t" --namespace tenant || fail "get in tenant"
cmp "$dir/in.1" "$dir/out.t" || fail "tenant's obj-4096 is not its own"
"$ctl" obj stat default obj-4096 | grep -q "size 4096 " || fail "the default obj-4096 changed"
[ "$("$ctl" obj ls default --namespace tenant | sort | tr '\n' ' ')" = "$(printf 'kobj\tk1 obj-4096 ')" ] ||
	fail "ls tenant: $("$ctl" obj ls default --namespace tenant)"
all=$("$ctl" obj ls default --all-namespaces) # (captured: grep -q could SIGPIPE a long listing)
grep -q "^tenant	kobj	k1$" <<<"$all" || fail "ls --all-namespaces: $all"
[ "$("$ctl" obj ls default --all-namespaces | grep -c '^	obj-')" = 4 ] ||
	fail "ls --all-namespaces, default: $("$ctl" obj ls default --all-namespaces)"
[ "$("$ctl" obj ns default | tr '\n' ' ')" = "(default) tenant " ] ||
	fail "obj ns: $("$ctl" obj ns default)"
"$ctl" obj rm default obj-4096 --namespace tenant || fail "rm in tenant"
"$ctl" obj rm default kobj --namespace tenant --key k1 || fail "rm with a key"
"$ctl" obj get default obj-4096 "$dir/x" || fail "rm in tenant removed the default obj-4096"
if "$ctl" obj put default x "$dir/in.1" --namespace "$(printf 'a\037b')" 2>"$dir/err"; then
	fail "a namespace with \\x1f was taken"
fi
grep -q "bad --namespace" "$dir/err" || fail "bad namespace message: $(cat "$dir/err")"
if "$ctl" obj get default obj-4096 "$dir/x" -N 2>/dev/null; then fail "-N without a value was taken"; fi
[ ! -e ./-N ] || fail "-N without a value became a file name"

# /metrics on every daemon (clusterctl up gives each an address in cairn.conf).
command -v curl >/dev/null || fail "curl is not installed (make deps)"
n=0
for a in $(sed -n 's/^osd_metrics = //p' "$dir/cairn.conf" | tr ',' ' ') \
	$(sed -n 's/^metrics_addr = //p' "$dir/cairn.conf"); do
	curl -sf "http://$a/metrics" >"$dir/metrics" || fail "no /metrics at $a"
	grep -Eq '^cairn_(osd_ops_total|mon_epoch) [0-9]' "$dir/metrics" || fail "$a/metrics: $(head -5 "$dir/metrics")"
	n=$((n + 1))
done
[ "$n" -eq 4 ] || fail "/metrics of $n daemons, want 4 (3 OSDs, 1 mon)"
ops=0
for a in $(sed -n 's/^osd_metrics = //p' "$dir/cairn.conf" | tr ',' ' '); do
	ops=$((ops + $(curl -sf "http://$a/metrics" | sed -n 's/^cairn_osd_ops_total //p')))
done
[ "$ops" -gt 0 ] || fail "the OSDs' metrics count no ops"
echo "/metrics: 3 OSDs and 1 mon serve it; the OSDs counted $ops ops"

# A PG log's memory is bounded in bytes too (osd_pg_log_max_bytes, 4 MiB):
# 2,500 writes with 2,000-byte names to a pool of one PG would hold about
# 6 MB in its log if only its entry count (3,000) bounded it.
"$ctl" pool create ln --pg-num 1 >/dev/null || fail "pool create ln"
wait_clean "pool ln" >/dev/null
long=$(head -c 2000 /dev/zero | tr '\0' n)
"$load" write -c "$dir/cairn.conf" --pool ln --prefix "$long" --count 2500 --gen 1 \
	--max-size 64 --omap 0 --threads 8 >"$dir/ln.out" 2>&1 || fail "long names: $(tail -3 "$dir/ln.out")"
"$load" verify -c "$dir/cairn.conf" --pool ln --prefix "$long" --count 2500 --gen 1 \
	--max-size 64 --omap 0 --threads 8 >"$dir/ln.out" 2>&1 || fail "long names: $(tail -3 "$dir/ln.out")"
sleep 2 # (other shards' figures come with their next beacon)
lmax=0
for a in $(sed -n 's/^osd_metrics = //p' "$dir/cairn.conf" | tr ',' ' '); do
	v=$(curl -sf "http://$a/metrics" | awk '$1 == "cairn_osd_pg_log_bytes_max" { printf "%d", $2 }')
	[ "${v:-0}" -gt "$lmax" ] && lmax=$v
done
[ "$lmax" -gt $((2 << 20)) ] || fail "the largest PG log holds $lmax bytes: the writes did not fill it"
[ "$lmax" -le $(((4 << 20) + 8192)) ] || fail "a PG log holds $lmax bytes, over osd_pg_log_max_bytes (4 MiB)"
echo "2,500 objects with 2,000-byte names in one PG: its log holds $lmax bytes (bound 4 MiB)"

# More than one op carries: refused at once with a clear message, nothing written.
head -c $((65 << 20)) /dev/zero >"$dir/big"
if timeout 30 "$ctl" obj put default big "$dir/big" 2>"$dir/err"; then fail "a 65 MiB put was accepted"; fi
grep -q "too large: one op carries at most 64 MiB" "$dir/err" || fail "65 MiB put: $(cat "$dir/err")"
rm -f "$dir/big"
if "$ctl" obj stat default big >/dev/null 2>&1; then fail "the refused put left an object"; fi
rc=0
timeout 30 "$ctl" bench default write --size 128M --seconds 1 2>"$dir/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "too large" "$dir/err" || fail "bench --size 128M: rc $rc $(cat "$dir/err")"
echo "too large: a 65 MiB put and bench --size 128M refused at once"

# (An erasure-coded pool for libcairn_test's methods on EC.)
"$ctl" pool create ec21 --ec 2+1 --pg-num 8 >/dev/null || fail "pool create ec21"
"$build/tests/integration/libcairn_test" || fail "libcairn suite"
# The suite again on clients of 4 io threads (an object's ops on one of 4
# event loops, callbacks on several at once; the OSDs forward what lands on
# another shard). Once: the epoll variant adds nothing here.
if [ "${CAIRN_REACTOR:-auto}" != epoll ]; then
	CAIRN_TEST_IO_THREADS=4 "$build/tests/integration/libcairn_test" || fail "libcairn suite, 4 io threads"
fi
"$build/tests/integration/striper_test" || fail "striper suite"

# The striper across a crash: a stream written in 1 MiB calls while the
# primary of its object 0 (which keeps the layout and the size) is killed
# with -9. Every call completes (resent to the new primary) and the size
# and every byte read back right.
"$load" stream -c "$dir/cairn.conf" --pool default --name crash-stream --count 32 \
	>"$dir/stream.out" 2>&1 &
sp=$!
for _ in $(seq 1 200); do grep -q '"written":3,' "$dir/stream.out" && break; sleep 0.02; done
sprim=$("$ctl" --format json pg ls default crash-stream.0000000000000000 |
	/usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(d[0]["primary"] if isinstance(d, list) else d["pgs"][0]["primary"])')
kill -9 "$(osd_pid "$sprim")"
grep -q '"written":32,' "$dir/stream.out" && fail "the stream was written before osd.$sprim was killed"
wait "$sp" || fail "stream across the kill of osd.$sprim: $(tail -n 3 "$dir/stream.out")"
grep -q '"size":33554432,"bad":0,"rc":0' "$dir/stream.out" || fail "stream: $(tail -n 1 "$dir/stream.out")"
echo "a stream written across the kill of its object 0's primary (osd.$sprim): $(tail -n 1 "$dir/stream.out")"
for o in $(seq 0 7); do "$ctl" obj rm default "$(printf 'crash-stream.%016x' "$o")" >/dev/null || true; done
"$ctl" up --dir "$dir" --mons 1 --osds 3 --osd-size 256M >"$dir/up1.out" 2>&1 ||
	fail "up: $(cat "$dir/up1.out")"
wait_clean "osd.$sprim back"

# Kill one OSD: once the map marks it down, writes go on with 2 copies.
kill -9 "$(cat "$dir/osd.2.pid")"
for i in $(seq 1 40); do
	"$ctl" osd ls | grep -q " down " && break
	sleep 0.25
done
"$ctl" osd ls | grep -q " down " || fail "killed OSD not marked down"
# libcairn's health call (the leader, typed) says so too.
"$load" health -c "$dir/cairn.conf" >"$dir/health" ||
	fail "cairn_health failed"
grep -q "^OSD_DOWN warn: " "$dir/health" || fail "cairn_health: no OSD_DOWN: $(cat "$dir/health")"
echo "cairn_health: $(head -1 "$dir/health"), $(grep OSD_DOWN "$dir/health")"
for i in $(seq 1 20); do
	head -c $((i * 1000 + 7)) /dev/urandom >"$dir/deg.$i"
	timeout 60 "$ctl" obj put default "deg-$i" "$dir/deg.$i" || fail "degraded put $i"
done
for i in $(seq 1 20); do
	timeout 60 "$ctl" obj get default "deg-$i" "$dir/degout.$i" || fail "degraded get $i"
	cmp "$dir/deg.$i" "$dir/degout.$i" || fail "degraded object $i differs"
done
for s in 0 4096 9437184; do
	"$ctl" obj get default "obj-$s" "$dir/out.$s" || fail "get $s after the kill"
	cmp "$dir/in.$s" "$dir/out.$s" || fail "object of $s bytes differs after the kill"
done
# Bring the killed OSD back with 3 PG shards (each with its own address in
# the map) beside two 1-shard OSDs: recovery and clients follow PG seed %
# shards to the right one. Then kill another and bring it back with 2.
verify_all() {
	for s in 0 4096 1048579 9437184; do
		timeout 60 "$ctl" obj get default "obj-$s" "$dir/out.$s" || fail "get $s ($1)"
		cmp "$dir/in.$s" "$dir/out.$s" || fail "object of $s bytes differs ($1)"
	done
	for i in $(seq 1 20); do
		timeout 60 "$ctl" obj get default "deg-$i" "$dir/degout.$i" || fail "get deg-$i ($1)"
		cmp "$dir/deg.$i" "$dir/degout.$i" || fail "object deg-$i differs ($1)"
	done
}
CAIRN_OSD_OP_SHARDS=3 "$ctl" up --dir "$dir" --mons 1 --osds 3 --osd-size 256M >"$dir/up2.out" 2>&1 ||
	fail "up: $(cat "$dir/up2.out")"
grep -q "3 PG shards" "$dir/osd.2.log" || fail "osd index 2 did not start 3 PG shards"
[ "$(stat -c %s "$dir/osd.2.data")" = $((256 << 20)) ] || fail "up resized an OSD's file"
wait_clean "restarted with 3 PG shards"
verify_all "an OSD with 3 PG shards"
# Clients keep one session per OSD (libcairn's default): the 3-shard OSD
# hands the ops of its other shards' PGs across (cairn_msgr_forwarded).
m2=$(sed -n 's/^osd_metrics = //p' "$dir/cairn.conf" | cut -d, -f3)
sleep 2 # (the other shards' figures come with their next beacon)
fwd=$(curl -sf "http://$m2/metrics" | sed -n 's/^cairn_msgr_forwarded //p')
[ "${fwd:-0}" -gt 0 ] || fail "the 3-shard OSD forwarded no message to its other shards"
echo "one session per OSD: the 3-shard OSD handed $fwd messages to its other shards"
kill -9 "$(cat "$dir/osd.0.pid")"
wait_ndown 1
verify_all "one 3-shard OSD of two up"
for i in $(seq 21 30); do
	head -c $((i * 1000 + 7)) /dev/urandom >"$dir/deg.$i"
	timeout 60 "$ctl" obj put default "deg-$i" "$dir/deg.$i" || fail "put $i beside 3 shards"
done
CAIRN_OSD_OP_SHARDS=2 "$ctl" up --dir "$dir" --mons 1 --osds 3 --osd-size 256M >"$dir/up3.out" 2>&1 ||
	fail "up: $(cat "$dir/up3.out")"
wait_clean "OSDs with 2, 1 and 3 PG shards"
verify_all "OSDs with 2, 1 and 3 PG shards"
# Io threads aligned with PG shards: a client of 2 io threads writes and
# reads 300 objects, and osd index 0 (2 PG shards) hands none of them
# across (thread k's session lands on its shard k, and thread k's ops are
# for PGs of seed k mod 2); the same reads from a client of one io thread
# make it hand some over (the check can fail).
m0=$(sed -n 's/^osd_metrics = //p' "$dir/cairn.conf" | cut -d, -f1)
# (its other shard's figures come with its beacons: read until two reads 2 s apart agree)
fwd_of() {
	local a b
	b=$(curl -sf "http://$m0/metrics" | sed -n 's/^cairn_msgr_forwarded //p')
	for _ in $(seq 1 10); do
		sleep 2
		a=$b
		b=$(curl -sf "http://$m0/metrics" | sed -n 's/^cairn_msgr_forwarded //p')
		[ "$a" = "$b" ] && break
	done
	echo "$b"
}
f0=$(fwd_of)
for m in write verify; do
	CAIRN_TEST_IO_THREADS=2 "$load" "$m" -c "$dir/cairn.conf" --pool default --prefix iot2 \
		--count 300 --gen 1 --max-size 4096 --omap 0 --threads 8 >"$dir/iot.out" 2>&1 ||
		fail "2 io threads, $m: $(tail -3 "$dir/iot.out")"
done
f1=$(fwd_of)
"$load" verify -c "$dir/cairn.conf" --pool default --prefix iot2 --count 300 --gen 1 \
	--max-size 4096 --omap 0 --threads 8 >"$dir/iot.out" 2>&1 ||
	fail "1 io thread, verify: $(tail -3 "$dir/iot.out")"
f2=$(fwd_of)
[ $((f1 - f0)) -eq 0 ] || fail "2 io threads: the 2-shard OSD handed $((f1 - f0)) messages across"
[ $((f2 - f1)) -gt 0 ] || fail "1 io thread: the 2-shard OSD handed nothing across (the check sees nothing)"
echo "2 io threads beside a 2-shard OSD: 0 messages handed across (1 io thread: $((f2 - f1)))"
for i in $(seq 21 30); do
	timeout 60 "$ctl" obj get default "deg-$i" "$dir/degout.$i" || fail "get deg-$i (mixed)"
	cmp "$dir/deg.$i" "$dir/degout.$i" || fail "object deg-$i differs (mixed)"
done
# At most 1,000 objects (64 MB on each 256 MB OSD): a fast disk filled the
# OSDs within the 2 s (ENOSPC is the right answer then, not this test's point).
"$ctl" bench default write --seconds 2 --size 64K --threads 8 --max-objects 1000 | tail -1 |
	grep -q '"errors":0' || fail "bench"
# --prefix: its own objects (PREFIX_N) and its own record of them, read back.
"$ctl" bench default write --seconds 2 --size 4K --threads 4 --max-objects 20 --prefix pfx |
	tail -1 | grep -q '"ops":20,"errors":0' || fail "bench --prefix write"
"$ctl" obj stat default pfx_19 >/dev/null || fail "bench --prefix: pfx_19 missing"
"$ctl" bench default seq --seconds 2 --threads 4 --prefix pfx | tail -1 |
	grep -q '"size":4096,.*"ops":20,"errors":0' || fail "bench --prefix seq"
# The client data throttle: OSDs that may hold only 1 MiB of client data
# push back (busy: the client resends shortly) instead of growing, and no
# op fails. 16 writes of 512 KiB in flight over 3 OSDs is ~2.7 MiB each.
restart_osds() {
	for i in 0 1 2; do kill -TERM "$(cat "$dir/osd.$i.pid")"; done
	for i in 0 1 2; do
		for _ in $(seq 1 150); do proc_gone "$(cat "$dir/osd.$i.pid")" && break; sleep 0.1; done
	done
	"$ctl" up --dir "$dir" --mons 1 --osds 3 --osd-size 256M >"$dir/up5.out" 2>&1 ||
		fail "up: $(cat "$dir/up5.out")"
	wait_clean "$1"
}
busy_total() {
	local t=0
	for a in $(sed -n 's/^osd_metrics = //p' "$dir/cairn.conf" | tr ',' ' '); do
		t=$((t + $(curl -sf "http://$a/metrics" | sed -n 's/^cairn_osd_client_busy_total //p')))
	done
	echo "$t"
}
CAIRN_OSD_CLIENT_MESSAGE_CAP=1M restart_osds "OSDs with a 1 MiB client data cap"
"$ctl" bench default write --seconds 2 --size 512K --threads 16 --max-objects 300 >"$dir/thr" ||
	fail "bench under the client data cap: $(tail -3 "$dir/thr")"
tail -1 "$dir/thr" | grep -q '"errors":0' || fail "bench under the client data cap: $(tail -1 "$dir/thr")"
busy=$(busy_total)
[ "$busy" -gt 0 ] || fail "no op was pushed back under a 1 MiB client data cap"
echo "client data cap 1 MiB: $busy ops pushed back and resent, 0 errors: $(tail -2 "$dir/thr" | head -1)"
restart_osds "OSDs back to the default client data cap"
# SIGTERM while writes are in flight, each OSD in turn (2, 1 and 3 PG
# shards): it drops what arrives, waits for the store calls and worker jobs
# its PGs started, then frees them (before, a commit callback could run on
# a freed PG: a sanitizer report in the sanitizer pass) and unmounts.
# Three times, then (a call is in flight at most SIGTERMs, not all) up to
# six more until one found calls in flight.
for k in $(seq 0 8); do
	i=$((k % 3))
	[ "$k" -ge 3 ] && grep -q "waited .* in flight" "$dir"/osd.*.log && break
	# (objects of 0-8 KiB, the same names each time: a few MiB on each OSD)
	timeout 30 "$load" write -c "$dir/cairn.conf" --prefix term --count 20000 --gen 1 \
		--max-size 8192 --threads 16 >"$dir/tl.$i" 2>&1 &
	bp=$!
	sleep 1
	pid=$(cat "$dir/osd.$i.pid")
	kill -TERM "$pid"
	for _ in $(seq 1 150); do proc_gone "$pid" && break; sleep 0.1; done
	proc_gone "$pid" || fail "osd index $i still running 15 s after SIGTERM"
	kill "$bp" 2>/dev/null || true
	wait "$bp" || true
	tail -n 5 "$dir/osd.$i.log" | grep -q "unmounted" ||
		fail "osd index $i did not unmount at SIGTERM: $(tail -n 3 "$dir/osd.$i.log")"
	"$ctl" up --dir "$dir" --mons 1 --osds 3 --osd-size 256M >"$dir/up4.out" 2>&1 ||
		fail "up: $(cat "$dir/up4.out")"
done
grep -h "waited .* in flight" "$dir"/osd.*.log >"$dir/drains" || true
[ -s "$dir/drains" ] || fail "no OSD had a store call in flight at SIGTERM (the drain went untested)"
echo "SIGTERM under load: $(wc -l <"$dir/drains") drains, e.g. $(head -1 "$dir/drains" | sed 's/.*stopping: //')"
wait_clean "after SIGTERM under load"
verify_all "after SIGTERM under load"
echo "1 passed, 0 failed"
