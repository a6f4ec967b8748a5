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

# TLS: a certificate, a TLS ping that works, a plain ping that is refused.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
	-keyout "$dir/node.key" -out "$dir/node.pem" -subj /CN=echod >/dev/null 2>&1 ||
	fail "openssl could not make a certificate"
cat >"$dir/tls.conf" <<CONF
[global]
cluster_key = test-cluster-key-0123456789
tls = true
tls_cert = $dir/node.pem
tls_key = $dir/node.key
[echo]
listen = 127.0.0.1:0
metrics_addr =
log_file = $dir/echod-tls.log
CONF
# TLS verifies peers by default: without tls_ca a daemon refuses to start
# and says why; the self-signed certificate is its own CA here.
if "$build/tools/cairn-echod" -c "$dir/tls.conf" --log-file "" >"$dir/echod-noca.out" 2>&1; then
	fail "echod started with tls on and no tls_ca"
fi
grep -q "tls_ca is not set" "$dir/echod-noca.out" ||
	fail "echod did not say tls_ca is missing: $(cat "$dir/echod-noca.out")"
sed -i "s|^tls_key = .*|&\ntls_ca = $dir/node.pem|" "$dir/tls.conf"
"$build/tools/cairn-echod" -c "$dir/tls.conf" &
pid=$!
for _ in $(seq 100); do
	grep -q "listening" "$dir/echod-tls.log" 2>/dev/null && break
	sleep 0.05
done
port=$(sed -nE 's/.* port=([0-9]+) .*/\1/p' "$dir/echod-tls.log")
[ -n "$port" ] || fail "TLS echod did not start"
out=$("$build/tools/cairn-ping" -c "$dir/tls.conf" --listen "127.0.0.1:$port" --count 500 \
	--size 256K --inflight 4) || fail "TLS ping failed: $out"
grep -q " 0 bad replies" <<<"$out" || fail "TLS bad replies: $out"
if "$build/tools/cairn-ping" -c "$dir/tls.conf" --tls false --timeout 1s --listen "127.0.0.1:$port" \
	--count 1 >"$dir/ping-plain.out" 2>&1; then
	fail "a plain client got through to a TLS daemon"
fi
grep -q "plain Cairn frame but tls is on here" "$dir/echod-tls.log" ||
	fail "TLS daemon did not say why it refused a plain client"
kill -TERM "$pid"
wait "$pid" || fail "TLS echod exit status $?"
pid=
echo "1 passed, 0 failed"
