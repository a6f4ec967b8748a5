#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# clusterctl up/down end to end: a local cluster in a temp dir (private etcd
# on free ports, 3 mons), commands in text and JSON, down keeps the data and
# up resumes it, and clear errors when nothing answers.
set -euo pipefail
build=${1:?usage: clusterctl_test.sh BUILD_DIR}
ctl="$build/tools/clusterctl"
py=/usr/bin/python3
dir=$(mktemp -d /tmp/cairn-ctl-test-XXXXXX)
trap '"$ctl" down --dir "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
fail() {
	echo "FAIL: $*" >&2
	for f in "$dir"/*.log "$dir"/*.out; do echo "== $f"; tail -n 20 "$f"; done >&2
	for p in "$dir"/*.pid; do # which daemons still run, and in what state
		echo "== $p: $(ps -o pid=,stat=,etime= -p "$(cat "$p")" 2>/dev/null || echo gone)"
	done >&2
	exit 1
}

"$ctl" up --dir "$dir" --mons 3 --osds 0 >"$dir/up.out" || fail "up"
grep -q "3 daemons, 3 alive" "$dir/up.out" || fail "up did not report 3 mons: $(cat "$dir/up.out")"
for d in etcd.0 mon.a mon.b mon.c; do
	[ -f "$dir/$d.pid" ] && kill -0 "$(cat "$dir/$d.pid")" || fail "$d not running"
done
export CAIRN_CONF="$dir/cairn.conf"
"$ctl" pool create data --pg-num 16 >/dev/null || fail "pool create"
"$ctl" pool create cold --ec 4+2 >/dev/null || fail "pool create ec"
"$ctl" --format json pool ls | "$py" -c '
import json, sys
p = {x["name"]: x for x in json.load(sys.stdin)["pools"]}
assert p["data"]["size"] == 3 and p["data"]["min_size"] == 2 and p["data"]["pg_num"] == 16, p
assert p["cold"]["type"] == "erasure" and p["cold"]["ec_k"] == 4 and p["cold"]["ec_m"] == 2, p
assert p["cold"]["crush_rule_name"] == "ec_cold", p
' || fail "pool ls json"
"$ctl" status --format json | "$py" -c '
import json, sys
s = json.load(sys.stdin)
assert s["health"]["status"] == "HEALTH_WARN", s  # pools but no OSDs
assert "NO_OSDS" in s["health"]["checks"], s
assert len(s["mons"]) == 3 and s["leader"] in ("a", "b", "c"), s
' || fail "status json"
# Errors: exit status 1 for a refused command, 2 for usage, and a message.
if "$ctl" pool create data 2>"$dir/err"; then fail "duplicate pool accepted"; fi
grep -q "already exists" "$dir/err" || fail "duplicate message: $(cat "$dir/err")"
set +e
"$ctl" pool create x --ec 9 2>"$dir/err"
rc=$?
set -e
[ $rc -eq 2 ] || fail "bad EC profile exit $rc"
grep -q "expected K+M" "$dir/err" || fail "bad EC profile message"
# down keeps the data, up resumes the same cluster.
fsid=$(grep '^fsid' "$dir/cairn.conf")
"$ctl" --format json down --dir "$dir" >"$dir/down.json" || fail "down"
"$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert sorted(x["daemon"] for x in d["stopped"]) == ["etcd.0", "mon.a", "mon.b", "mon.c"], d
' "$dir/down.json" || fail "down json: $(cat "$dir/down.json")"
for d in etcd.0 mon.a mon.b mon.c; do [ ! -f "$dir/$d.pid" ] || fail "$d pid file left"; done
set +e
"$ctl" --conf "$dir/cairn.conf" --command-timeout 1s status 2>"$dir/err" >/dev/null
rc=$?
set -e
[ $rc -eq 1 ] || fail "status with everything down exit $rc"
grep -q "no monitor answered" "$dir/err" || fail "down message: $(cat "$dir/err")"
"$ctl" up --dir "$dir" --osds 0 >/dev/null || fail "up again"
[ "$(grep '^fsid' "$dir/cairn.conf")" = "$fsid" ] || fail "fsid changed"
"$ctl" pool ls | grep -q "'data' replicated size 3" || fail "pool lost across down/up"
"$ctl" down --dir "$dir" >/dev/null
echo "clusterctl_test: ok"
