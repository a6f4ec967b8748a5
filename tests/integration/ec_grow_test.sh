#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Growing a cluster that holds an erasure-coded pool: 4 OSDs, a 2+1 pool of
# 16 PGs with 300 objects; add one OSD, then two more at once. Every PG must
# get active+clean again and every object must read back at every step.
#
# KNOWN TO FAIL (2026-11-27), so ctest runs it DISABLED: CRUSH `indep` keeps
# a shard's position only across OSD failures; a new OSD can move two or
# more positions of a PG (collisions cascade), and an EC primary counts and
# reads only shards at their acting positions, not the shards the prior
# OSDs still hold. Adding one OSD left 3 of 16 PGs incomplete ("on too few
# shards here ... waiting"), two OSDs more ("fewer than k=2 complete shards
# among the acting OSDs"), and objects unreadable. Enable it (CMakeLists.txt)
# with the fix: EC peering and reads that take shards from prior OSDs and
# other positions (docs/design/ec.md, Limits).
set -euo pipefail
. "$(dirname "$0")/../lib/cluster.sh"
build=${1:?usage: ec_grow_test.sh BUILD_DIR}
ctl="$build/tools/clusterctl"
load="$build/tests/integration/cairn_load"
dir=$(mktemp -d /tmp/cairn-ec-grow-XXXXXX)
finish() {
	local rc=$?
	cluster_finish "$rc"
}
trap finish EXIT
fail() {
	echo "FAIL: $*" >&2
	"$ctl" status >&2 || true
	"$ctl" pg ls ec 2>/dev/null | grep -v "active+clean" | head -20 >&2 || true
	exit 1
}
export CAIRN_OSD_GRACE=2s
up() {
	"$ctl" up --dir "$dir" --mons 1 --osds "$1" --osd-size 1G >"$dir/up.out" 2>&1 ||
		fail "up: $(cat "$dir/up.out")"
}
verify() {
	"$load" verify -c "$dir/cairn.conf" --pool ec --prefix e --count 300 --gen 1 \
		--max-size 65536 --omap 0 >"$dir/v.out" 2>&1 || fail "$1: verify: $(tail -n 3 "$dir/v.out")"
	grep -q '"bad":0,' "$dir/v.out" || fail "$1: $(tail -n 1 "$dir/v.out")"
	echo "$1: 300 EC objects verify"
}

up 4
export CAIRN_CONF="$dir/cairn.conf"
"$ctl" pool create ec --ec 2+1 --pg-num 16 >/dev/null || fail "pool create"
wait_clean "4 OSDs"
"$load" write -c "$dir/cairn.conf" --pool ec --prefix e --count 300 --gen 1 --max-size 65536 \
	--omap 0 >"$dir/w.out" 2>&1 || fail "write: $(tail -n 3 "$dir/w.out")"
verify "4 OSDs"
up 5
wait_clean "a 5th OSD" 480
verify "5 OSDs"
up 7
wait_clean "two OSDs more" 480
verify "7 OSDs"
echo "ec_grow_test: passed"
