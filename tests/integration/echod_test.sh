#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cairn-echod as a user runs it: config file, ping, /metrics, bad config,
# wrong key, SIGTERM. Usage: echod_test.sh BUILD_DIR
set -euo pipefail
build=$1
dir=$(mktemp -d /tmp/cairn-echod-test-XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	echo "--- log"
	cat "$dir"/*.log 2>/dev/null || true
	exit 1
}

cat >"$dir/cairn.conf" <<CONF
[global]
cluster_key = test-cluster-key-0123456789
[echo]
listen = 127.0.0.1:0
metrics_addr = 127.0.0.1:0
log_file = $dir/echod.log
pid_file = $dir/echod.pid
CONF

"$build/tools/cairn-echod" -c "$dir/cairn.conf" &
pid=$!
for _ in $(seq 100); do
	grep -q "listening" "$dir/echod.log" 2>/dev/null && break
	sleep 0.05
done
line=$(grep "listening" "$dir/echod.log") || fail "echod did not start"
port=$(sed -E 's/.* port=([0-9]+) .*/\1/' <<<"$line")
mport=$(sed -E 's/.*metrics_port=([0-9]+) .*/\1/' <<<"$line")
[ -f "$dir/echod.pid" ] || fail "no pid file"

out=$("$build/tools/cairn-ping" -c "$dir/cairn.conf" --listen "127.0.0.1:$port" --count 3000 \
	--size 64K --inflight 8) || fail "ping failed: $out"
grep -q " 0 bad replies" <<<"$out" || fail "bad replies: $out"
echo "$out"

metrics=$(curl -sf "http://127.0.0.1:$mport/metrics") || fail "no /metrics"
grep -q '^cairn_echo_requests_total 3000$' <<<"$metrics" || fail "requests counter: $metrics"
grep -q '^cairn_reactor_info{backend="' <<<"$metrics" || fail "reactor info missing"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mport/nope")
[ "$code" = 404 ] || fail "expected 404, got $code"

# A wrong key: refused, and the daemon says why.
if "$build/tools/cairn-ping" -c "$dir/cairn.conf" --listen "127.0.0.1:$port" \
	--cluster-key not-the-right-key-at-all --count 1 >"$dir/ping-bad.out" 2>&1; then
	fail "a wrong key was accepted"
fi
grep -q "authentication failed" "$dir/ping-bad.out" || fail "no reason for the client: $(cat "$dir/ping-bad.out")"
grep -q "authentication failed" "$dir/echod.log" || fail "no reason in the daemon log"

# A bad config line: file:line, the option, and exit code 2.
printf '[echo]\ntimeout = 5 fortnights\n' >"$dir/bad.conf"
set +e
err=$("$build/tools/cairn-echod" -c "$dir/bad.conf" 2>&1)
rc=$?
set -e
[ $rc -eq 2 ] || fail "bad config exit $rc"
grep -q "bad.conf:2: option 'timeout': '5 fortnights' is not a valid duration" <<<"$err" ||
	fail "bad config message: $err"

kill -TERM "$pid"
wait "$pid" || fail "echod exit status $?"
pid=
grep -q "signal 15: shutting down" "$dir/echod.log" || fail "no clean shutdown"
[ ! -f "$dir/echod.pid" ] || fail "pid file left behind"
echo "1 passed, 0 failed"
