#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Identities and caps end to end (issue #30 item 6, docs/design/auth.md),
# on a local cluster of 3 OSDs with pools a and b:
#  1. OSDs got their own keys at first start (client.bootstrap-osd) and
#     boot as osd.<uuid>; no key shows in any log.
#  2. client.alice (mon r; osd rw pool=a) writes and reads pool a, gets
#     -EPERM on pool b (nothing written there) and on map changes and auth.
#  3. client.ro (osd r pool=a) reads, may not write; client.t (osd rw
#     pool=a namespace=t-*) works in t-1, not in u or the default namespace,
#     lists t-1 but not every namespace.
#  4. Caps narrowed live: a client that wrote keeps its session; after
#     `auth caps` its next write is refused (the map's auth_epoch voids its
#     ticket, the new one is read-only); after `auth rm` its next op is
#     refused (no ticket any more).
#  5. At the OSD: a peer message from a client is dropped (counted), an
#     admin's is not; a ticket used under another entity's name, a forged
#     ticket and one of an unknown generation are refused at the handshake.
#  6. Bad keys: a keyring others may read, a wrong key, an unknown entity,
#     and a bootstrap key that tries anything but making an OSD's key.
# The OSDs run 2 PG shards each: half of the checks happen on a shard the
# client's one session reaches through the OSD's hand-over (its caps with it).
set -euo pipefail
. "$(dirname "$0")/../lib/cluster.sh"
build=${1:?usage: auth_test.sh BUILD_DIR}
ctl="$build/tools/clusterctl"
load="$build/tests/integration/cairn_load"
probe="$build/tests/integration/auth_probe"
dir=$(mktemp -d /tmp/cairn-auth-test-XXXXXX)
lpid=
finish() {
	local rc=$?
	[ -z "$lpid" ] || kill "$lpid" 2>/dev/null || true
	cluster_finish "$rc"
}
trap finish EXIT
fail() {
	echo "FAIL: $*" >&2
	for f in "$dir"/*.log "$dir"/*.err; do [ -f "$f" ] && { echo "== $f"; tail -n 20 "$f"; }; done >&2
	exit 1
}
CAIRN_OSD_OP_SHARDS=2 "$ctl" up --dir "$dir" --mons 1 --osds 3 --osd-size 256M >"$dir/up.out" 2>&1 ||
	fail "up: $(cat "$dir/up.out")"
export CAIRN_CONF="$dir/cairn.conf"
"$ctl" pool create a --pg-num 8 >/dev/null && "$ctl" pool create b --pg-num 8 >/dev/null ||
	fail "pool create"
wait_clean "pools a and b" >/dev/null
pool_id() { "$ctl" --format json pool ls | /usr/bin/python3 -c '
import json, sys
print([p["id"] for p in json.load(sys.stdin)["pools"] if p["name"] == sys.argv[1]][0])' "$1"; }

# 1. The OSDs' own identities.
ents=$("$ctl" auth ls)
[ "$(grep -c '^osd\.[0-9a-f-]*	profile osd$' <<<"$ents")" = 3 ] || fail "OSD entities: $ents"
for i in 0 1 2; do
	[ "$(stat -c %a "$dir/osd.$i.data.keyring")" = 600 ] || fail "osd.$i keyring mode"
	grep -q "made the key of osd\.[0-9a-f-]* with client.bootstrap-osd" "$dir/osd.$i.log" ||
		fail "osd.$i did not bootstrap its key"
done
echo "1. 3 OSDs made their own keys with client.bootstrap-osd (keyrings 0600) and booted"

# A conf for entity $1 (its keyring in $dir/$1.keyring, made by auth add).
conf_for() {
	cp "$dir/cairn.conf" "$dir/$1.conf"
	sed -i '/^cluster_key/d' "$dir/$1.conf" # a client holds its own key only
	sed -i "s|^\[global\]\$|[global]\nname = $1\nkeyring = $dir/$1.keyring|" "$dir/$1.conf"
}
add() { # name caps
	"$ctl" auth add "$1" "$2" >"$dir/$1.keyring" || fail "auth add $1"
	chmod 600 "$dir/$1.keyring"
	conf_for "$1"
}
as() { local n=$1; shift; "$ctl" -c "$dir/$n.conf" "$@"; }
expect_eperm() { # what command...
	local what=$1
	shift
	if "$@" >"$dir/out" 2>"$dir/err"; then fail "$what: allowed"; fi
	grep -qi "not permitted\|may not\|EPERM" "$dir/err" || fail "$what: $(cat "$dir/err")"
}

# 2. Per-pool caps.
echo data >"$dir/in"
add client.alice "mon r; osd rw pool=a"
as client.alice obj put a x "$dir/in" || fail "alice put a"
as client.alice obj get a x "$dir/got" && cmp -s "$dir/in" "$dir/got" || fail "alice get a"
expect_eperm "alice put b" as client.alice obj put b x "$dir/in"
expect_eperm "alice get b" as client.alice obj get b x "$dir/got"
if "$ctl" obj stat b x >/dev/null 2>&1; then fail "alice's refused put wrote to b"; fi
expect_eperm "alice pool create" as client.alice pool create c
expect_eperm "alice auth ls" as client.alice auth ls
as client.alice status >/dev/null || fail "alice status (mon r)"
echo "2. client.alice: pool a read and write, pool b -EPERM (nothing written), no map changes, no auth"

# 3. Read-only and namespace caps.
add client.ro "osd r pool=a"
as client.ro obj get a x "$dir/got" || fail "ro get"
expect_eperm "ro put" as client.ro obj put a y "$dir/in"
expect_eperm "ro status (no mon caps)" as client.ro status
add client.t "osd rw pool=a namespace=t-*"
as client.t obj put a x "$dir/in" --namespace t-1 || fail "t put t-1"
as client.t obj get a x "$dir/got" --namespace t-1 || fail "t get t-1"
expect_eperm "t put u" as client.t obj put a x "$dir/in" --namespace u
expect_eperm "t put default" as client.t obj put a x2 "$dir/in"
[ "$(as client.t obj ls a --namespace t-1)" = x ] || fail "t ls t-1"
expect_eperm "t ls every namespace" as client.t obj ls a --all-namespaces
echo "3. read-only and namespace-prefix caps hold (t-1 yes; u, default and every-namespace listing no)"

# 4. Live changes: one client (one connection) writes before and after.
add client.carol "osd rw pool=a"
live() { # label -> the second write's rc after the change made by "$@"
	local label=$1
	shift
	rm -f "$dir/live.in"
	mkfifo "$dir/live.in"
	timeout 90 "$load" rewrite -c "$dir/client.carol.conf" --pool a --name "carol-$label" --seconds 60 \
		<"$dir/live.in" >"$dir/live.out" 2>"$dir/live.err" &
	lpid=$!
	exec 5>"$dir/live.in"
	for _ in $(seq 1 100); do grep -q '"pass":0' "$dir/live.out" && break; sleep 0.1; done
	grep -q '"pass":0,"rc":0,' "$dir/live.out" || fail "$label: first write: $(cat "$dir/live.out" "$dir/live.err")"
	"$@" >/dev/null || fail "$label: $*"
	sleep 1 # the map with the new auth_epoch reaches the OSDs and the client
	echo go >&5
	exec 5>&-
	wait "$lpid" || true
	lpid=
	sed -n 's/.*"pass":1,"rc":\(-*[0-9]*\).*/\1/p' "$dir/live.out"
}
rc=$(live narrowed "$ctl" auth caps client.carol "osd r pool=a")
[ "$rc" = -1 ] || fail "a write after auth caps (read-only): rc '$rc', not -1 (EPERM): $(cat "$dir/live.out")"
"$ctl" auth caps client.carol "osd rw pool=a" >/dev/null
rc=$(live removed "$ctl" auth rm client.carol)
[ "$rc" = -1 ] || fail "a write after auth rm: rc '$rc', not -1 (EPERM): $(cat "$dir/live.out")"
"$ctl" obj get a carol-narrowed "$dir/got" >/dev/null && [ "$(cat "$dir/got")" = first ] ||
	fail "carol-narrowed: the refused write landed"
echo "4. a live session loses write after auth caps and everything after auth rm (the refused writes landed nowhere)"

# 5. The OSD's checks, with a session of our own.
osd0=$("$ctl" --format json osd ls | /usr/bin/python3 -c '
import json, sys
print([o["addr"] for o in json.load(sys.stdin)["osds"] if o["id"] == 0][0])')
pa=$(pool_id a)
refused() { # the OSDs' cairn_osd_auth_refused_total, summed
	local n=0 a v
	for a in $(sed -n 's/^osd_metrics = //p' "$dir/cairn.conf" | tr ',' ' '); do
		v=$(curl -sf "http://$a/metrics" | sed -n 's/^cairn_osd_auth_refused_total //p')
		n=$((n + ${v:-0}))
	done
	echo "$n"
}
add client.peer "osd rw pool=a"
r0=$(refused)
out=$("$probe" peer -c "$dir/client.peer.conf" --osd-addr "$osd0" --pool "$pa")
grep -q '"connected":1' <<<"$out" || fail "probe as client.peer: $out"
for _ in $(seq 1 30); do [ "$(refused)" -gt "$r0" ] && break; sleep 0.2; done
[ "$(refused)" -gt "$r0" ] || fail "a PG_QUERY from a client was not refused"
grep -q "message type=812 from client.peer refused" "$dir"/osd.*.log || fail "no log of the refusal"
for m in misname forge; do
	out=$("$probe" "$m" -c "$dir/client.peer.conf" --osd-addr "$osd0" --pool "$pa")
	grep -q '"connected":0,"event":"failed","rc":-1000' <<<"$out" || fail "probe $m: $out (-1000: CM_EAUTH)"
done
# A generation the OSD lacks is refused as stale (-CM_ETICKET): the client
# retries (with a renewed ticket, in libcairn), so it never gets in here.
out=$("$probe" stale -c "$dir/client.peer.conf" --osd-addr "$osd0" --pool "$pa")
grep -q '"connected":0,"event":"timeout"' <<<"$out" || fail "probe stale: $out"
grep -q "the ticket is client.peer's\|may not go by the name" "$dir"/osd.*.log || fail "misname not logged"
grep -q "does not open" "$dir"/osd.*.log || fail "forge not logged"
grep -q "no secret of" "$dir"/osd.*.log || fail "stale generation not logged"
echo "5. at the OSD: a client's peer message dropped and counted; misnamed, forged and unknown-generation tickets refused"

# 6. Bad keys.
chmod 644 "$dir/client.alice.keyring"
if as client.alice status 2>"$dir/err"; then fail "a world-readable keyring was used"; fi
grep -q "readable by others" "$dir/err" || fail "0644 keyring: $(cat "$dir/err")"
chmod 600 "$dir/client.alice.keyring"
cp "$dir/client.alice.conf" "$dir/wrong.conf"
sed -i 's/^keyring = .*/key = AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=/' "$dir/wrong.conf"
if "$ctl" -c "$dir/wrong.conf" status 2>"$dir/err"; then fail "a wrong key was accepted"; fi
grep -q "refused client.alice" "$dir/err" || fail "wrong key: $(cat "$dir/err")"
sed -i 's/^name = .*/name = client.nobody/' "$dir/wrong.conf"
if "$ctl" -c "$dir/wrong.conf" status 2>"$dir/err"; then fail "an unknown entity got in"; fi
grep -q "refused client.nobody" "$dir/err" || fail "unknown entity: $(cat "$dir/err")"
# client.bootstrap-osd (its key from the cluster key here) makes OSD keys, nothing else.
bs="$dir/bootstrap.conf"
cp "$dir/cairn.conf" "$bs"
sed -i "s|^\[global\]\$|[global]\nname = client.bootstrap-osd|" "$bs"
"$ctl" -c "$bs" auth get-or-create osd.0123-test profile osd >/dev/null || fail "bootstrap: an OSD key"
expect_eperm "bootstrap: an admin key" "$ctl" -c "$bs" auth get-or-create client.evil admin
expect_eperm "bootstrap: a map change" "$ctl" -c "$bs" osd set noout
expect_eperm "bootstrap: auth get" "$ctl" -c "$bs" auth get client.admin
# No key in any log.
for k in $(sed -n 's/^\tkey = //p' "$dir"/*.keyring); do
	! grep -rqF "$k" "$dir"/*.log || fail "a key in a daemon's log"
done
echo "6. a 0644 keyring, a wrong key, an unknown entity refused; the bootstrap key makes OSD keys only; no key in any log"
echo "1 passed, 0 failed"
