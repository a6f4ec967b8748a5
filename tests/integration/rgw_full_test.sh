#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cairn-rgw on a cluster that fills up (rules: a full disk gets a clear
# error and loses nothing): three 1 GiB OSDs, boto3 PUTs of 4 MiB until the
# cluster refuses them (rgw_test.py full): every refusal is 507
# InsufficientStorage, every acknowledged object reads back whole and is
# listed, nothing else is; after deletes (collected in 1 s here) PUTs are
# taken again; the daemons are all still up.
#   rgw_full_test.sh BUILD_DIR
set -euo pipefail
. "$(dirname "$0")/../lib/cluster.sh"
build=${1:?usage: rgw_full_test.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
ctl="$build/tools/clusterctl"
py=/usr/bin/python3
dir=$(mktemp -d /tmp/cairn-rgw-full-XXXXXX)
rgw_pid=''
finish() {
	local rc=$?
	if [ -n "$rgw_pid" ]; then
		kill "$rgw_pid" 2>/dev/null || true
		for _ in $(seq 1 50); do
			kill -0 "$rgw_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$rgw_pid" 2>/dev/null || true
		wait "$rgw_pid" 2>/dev/null || true
	fi
	cluster_finish "$rc"
}
trap finish EXIT
fail() {
	echo "FAIL: $*" >&2
	for f in "$dir"/rgw*.log "$dir"/rgw*.out "$dir"/*.err; do
		[ -e "$f" ] && { echo "== $f"; tail -n 40 "$f"; }
	done >&2
	exit 1
}

"$ctl" up --dir "$dir" --mons 1 --osds 3 --osd-size 1G >"$dir/up.out" 2>&1 ||
	fail "up: $(cat "$dir/up.out")"
export CAIRN_CONF="$dir/cairn.conf"
wait_clean "start"
"$ctl" pool create rgw.meta --size 3 --pg-num 8 >/dev/null
"$ctl" pool create rgw.data --size 3 --pg-num 16 >/dev/null
"$ctl" s3 user create filler --format json >"$dir/keys.json" || fail "s3 user create"
"$build/rgw/cairn-rgw" -c "$CAIRN_CONF" --id full --rgw-listen 127.0.0.1:0 --rgw-gc-delay 1s \
	--log-file "$dir/rgw.log" >"$dir/rgw.out" 2>"$dir/rgw.stderr.log" &
rgw_pid=$!
for _ in $(seq 1 100); do
	grep -q "serving S3 on port" "$dir/rgw.out" 2>/dev/null && break
	kill -0 "$rgw_pid" 2>/dev/null || fail "cairn-rgw exited: $(cat "$dir/rgw.stderr.log")"
	sleep 0.1
done
port=$(sed -n 's/^cairn-rgw: serving S3 on port \([0-9]*\)$/\1/p' "$dir/rgw.out")
[ -n "$port" ] || fail "cairn-rgw did not start within 10 s"
$py "$here/rgw_test.py" "http://127.0.0.1:$port" "$dir/keys.json" "$dir/keys.json" full \
	>"$dir/full.out" 2>&1 || fail "rgw_test.py full: $(tail -20 "$dir/full.out")"
grep '^full:' "$dir/full.out"
kill -0 "$rgw_pid" 2>/dev/null || fail "the gateway died"
"$ctl" status >"$dir/st" 2>&1 || true
grep -q "osd: 3 osds: 3 up" "$dir/st" || fail "OSDs down after the cluster filled: $(grep osd: "$dir/st")"
grep -E "usage:" "$dir/st" | sed 's/^ */status: /'
echo "rgw_full_test: ok"
