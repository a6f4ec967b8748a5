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
# etcd holds the map: https with client-certificate auth, so only holders of
# a certificate of the cluster's own CA reach it (the mons' works: the same
# requests are refused for lack of it, not for being wrong).
ep=$(sed -n 's/^etcd_endpoints = //p' "$dir/cairn.conf")
tls="$dir/etcd-tls"
case "$ep" in https://127.0.0.1:*) ;; *) fail "etcd endpoint is not https: $ep" ;; esac
for f in "$dir/cairn.conf" "$tls/ca.key" "$tls/client.key" "$tls/etcd.key"; do
	[ "$(stat -c %a "$f")" = 600 ] || fail "$f is mode $(stat -c %a "$f"), not 600"
done
put='{"key":"L2NhaXJuL3g=","value":"eA=="}' # /cairn/x = x
etcd_post() { curl -s -m 5 -X POST "$@"; }
etcd_post "http://${ep#https://}/v3/kv/put" -d "$put" >"$dir/curl.out" 2>&1 &&
	grep -q revision "$dir/curl.out" && fail "etcd took a plain-http put"
etcd_post -k "$ep/v3/kv/put" -d "$put" >"$dir/curl.out" 2>&1 &&
	fail "etcd took a put without a client certificate: $(cat "$dir/curl.out")"
etcd_post --cacert "$tls/ca.pem" "$ep/v3/kv/put" -d "$put" >/dev/null 2>&1 &&
	fail "etcd took a put without a client certificate (CA given)"
# A certificate of another CA (made here, with the openssl tool) is refused too.
(cd "$dir" && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-days 1 -keyout other.key -out other.pem -subj /CN=intruder >/dev/null 2>&1) ||
	fail "openssl could not make a certificate"
etcd_post --cacert "$tls/ca.pem" --cert "$dir/other.pem" --key "$dir/other.key" \
	"$ep/v3/kv/put" -d "$put" >/dev/null 2>&1 && fail "etcd took a put with another CA's certificate"
etcd_post --cacert "$tls/ca.pem" --cert "$tls/client.pem" --key "$tls/client.key" \
	"$ep/v3/kv/range" -d '{"key":"L2NhaXJuL3g="}' >"$dir/curl.out" ||
	fail "etcd refused the cluster's own client certificate"
grep -q '"count"' "$dir/curl.out" && fail "a refused put reached etcd: $(cat "$dir/curl.out")"
grep -q revision "$dir/curl.out" || fail "etcd range: $(cat "$dir/curl.out")"
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
# Entities: the built-in ones, then one added, read, narrowed and removed.
ents=$("$ctl" auth ls) || fail "auth ls"
[ "$ents" = "$(printf 'client.admin\tadmin\nclient.bootstrap-osd\tprofile bootstrap-osd')" ] ||
	fail "auth ls: $ents"
"$ctl" auth add client.alice "mon r; osd rw pool=data" >"$dir/alice.keyring" || fail "auth add"
grep -Eq '^	key = [A-Za-z0-9+/]{43}=$' "$dir/alice.keyring" || fail "auth add: $(cat "$dir/alice.keyring")"
"$ctl" auth get client.alice | cmp -s - "$dir/alice.keyring" || fail "auth get differs from add"
if "$ctl" auth add client.alice 2>"$dir/err"; then fail "auth add twice"; fi
grep -q "exists already" "$dir/err" || fail "auth add twice: $(cat "$dir/err")"
"$ctl" auth caps client.alice "osd  r pool=data ;mon r" >/dev/null || fail "auth caps"
"$ctl" --format json auth ls | "$py" -c '
import json, sys
e = {x["name"]: x["caps"] for x in json.load(sys.stdin)["entities"]}
assert e["client.alice"] == "mon r; osd r pool=data", e' || fail "auth caps not canonical"
"$ctl" auth get-or-create client.alice | grep -q "$(sed -n 's/^\tkey = //p' "$dir/alice.keyring")" ||
	fail "get-or-create made a new key"
for bad in "client.a b" "rgw.x" "client."; do
	if "$ctl" auth add "$bad" 2>"$dir/err"; then fail "auth add '$bad' accepted"; fi
	grep -q "bad entity name" "$dir/err" || fail "auth add '$bad': $(cat "$dir/err")"
done
if "$ctl" auth add client.bob "osd rwx" 2>"$dir/err"; then fail "bad caps accepted"; fi
grep -q "caps: 'osd rwx'" "$dir/err" || fail "bad caps message: $(cat "$dir/err")"
if "$ctl" auth rm client.admin 2>/dev/null; then fail "client.admin removed"; fi
"$ctl" auth rm client.alice >/dev/null || fail "auth rm"
if "$ctl" auth get client.alice 2>"$dir/err"; then fail "auth get after rm"; fi
grep -q "no entity client.alice" "$dir/err" || fail "get after rm: $(cat "$dir/err")"
# No key in any daemon log.
key=$(sed -n 's/^\tkey = //p' "$dir/alice.keyring")
! grep -rqF "$key" "$dir"/*.log || fail "a key in a daemon's log"
echo "auth: built-in entities, add/get/caps/get-or-create/rm, bad names and caps refused"

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
