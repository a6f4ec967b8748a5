#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/failover: what a client sees when an OSD fails. A local cluster (1
# mon, 3 OSDs, pool size 3) under `clusterctl bench` 4 KiB writes at 32 in
# flight (no op timeout: ops wait through the failure); one OSD killed with
# -9, later another stopped with SIGSTOP (a hung OSD) and continued. For
# each fault: the longest op latency, the longest time with no completion,
# the whole seconds with no completion, the errors, and the time from the
# fault to `down` in the map. With --peer ceph the same run against Ceph 16
# (../shared/peers/ceph-up.sh; `rados bench` 4 KiB writes, 32 in flight,
# killing and stopping a ceph-osd), both in one table. Last line JSON.
# Nothing here fails on a timing.
# Ceph here runs its 3 OSDs on one host: its failure reports count by host
# (mon_osd_reporter_subtree_level), so a hung OSD is marked down only by
# mon_osd_report_timeout (900 s) -- the output says -1 (not down within the
# run) then. Cairn counts reporters by host too, but asks for no more hosts
# than have an up OSD besides the target.
#   bench/failover/failover_bench.sh BUILD [DIR] [--peer ceph]
set -euo pipefail
build=${1:?usage: failover_bench.sh BUILD [DIR] [--peer ceph]}
base=${2:-/tmp}
peer=
[ "${3:-}" = "--peer" ] && peer=${4:-}
py=/usr/bin/python3
ctl="$build/tools/clusterctl"
here=$(cd "$(dirname "$0")" && pwd)
shared=$(cd "$here/../../.." && pwd)/shared/peers
dir=$(mktemp -d "$base/cairn-failover-XXXXXX")
cephdir="$dir/ceph"
pre=10  # seconds of load before the fault
post=20 # seconds after it
cleanup() {
	"$ctl" down --dir "$dir" >/dev/null 2>&1 || true
	[ -z "$peer" ] || [ ! -d "$cephdir" ] || "$shared/ceph-down.sh" "$cephdir" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
die() {
	echo "failover_bench: $*" >&2
	exit 1
}

ms_now() { date +%s%3N; }
# Poll `$@` (a command that succeeds once the OSD is down) until it does or
# $limit_ms pass from $t0; print the ms from t0 to down, or -1.
poll_down() {
	local t0=$1 limit_ms=$2
	shift 2
	while [ $(($(ms_now) - t0)) -lt "$limit_ms" ]; do
		if "$@"; then
			echo $(($(ms_now) - t0))
			return
		fi
		sleep 0.05
	done
	echo -1
}

# ---------- Cairn ----------
"$ctl" up --dir "$dir" --mons 1 --osds 3 --osd-size 4G >"$dir/up.out" 2>&1 || die "up: $(tail -3 "$dir/up.out")"
export CAIRN_CONF="$dir/cairn.conf"
osd_pid() { cat "$dir/osd.$1.pid"; }
# The map's state of the OSD whose pid file is osd.$1 (its id from the log's boot line).
osd_id() { sed -n 's/.*booted as osd\.\([0-9]*\) .*/\1/p' "$dir/osd.$1.log" | tail -1; }
is_down() { "$ctl" osd ls 2>/dev/null | awk -v id="$1" '$1 == id && $3 == "down" {f = 1} END {exit !f}'; }

# One fault under load: $1 kill|stop, $2 the OSD's start index. Prints the bench JSON + the down time.
cairn_fault() {
	local kind=$1 idx=$2 id pid t0 tdown=-1 bpid
	id=$(osd_id "$idx")
	pid=$(osd_pid "$idx")
	"$ctl" bench default write --seconds $((pre + post)) --size 4K --threads 32 >"$dir/b.$kind" 2>&1 &
	bpid=$!
	sleep "$pre"
	t0=$(ms_now)
	if [ "$kind" = kill ]; then kill -9 "$pid"; else kill -STOP "$pid"; fi
	tdown=$(poll_down "$t0" $((post * 1000)) is_down "$id")
	wait "$bpid" || true
	[ "$kind" = stop ] && kill -CONT "$pid" 2>/dev/null || true
	echo "$(tail -1 "$dir/b.$kind") $tdown"
}

echo "Cairn: 3 OSDs, 4 KiB writes at 32 in flight, ${pre}s before and ${post}s after each fault"
r_kill=$(cairn_fault kill 0)
echo "  kill -9: $r_kill"
"$ctl" up --dir "$dir" --mons 1 --osds 3 --osd-size 4G >"$dir/up2.out" 2>&1 || die "restart: $(tail -3 "$dir/up2.out")"
for _ in $(seq 1 240); do
	"$ctl" status 2>/dev/null | grep -Eq 'pgs: +([0-9]+) pgs: \1 active\+clean$' && break
	sleep 0.5
done
r_stop=$(cairn_fault stop 1)
echo "  SIGSTOP: $r_stop"

# ---------- Ceph 16 (--peer ceph) ----------
c_kill="" c_stop=""
if [ "$peer" = ceph ]; then
	"$ctl" down --dir "$dir" >/dev/null 2>&1 # nothing of Cairn's runs beside the peer
	[ -x "$shared/ceph-up.sh" ] || die "no $shared/ceph-up.sh"
	WITH_RGW=0 NUM_OSD=3 OSD_SIZE_GB=8 "$shared/ceph-up.sh" "$cephdir" >"$dir/ceph-up.out" 2>&1 ||
		die "ceph-up: $(tail -5 "$dir/ceph-up.out")"
	export CEPH_CONF="$cephdir/ceph.conf"
	ceph_down() { timeout 5 ceph osd dump 2>/dev/null | grep -Eq "^osd\.$1 down"; }
	ceph_fault() { # $1 kill|stop $2 osd id -> rados bench summary + down ms
		local kind=$1 id=$2 pid t0 tdown=-1 bpid
		pid=$(cat "$cephdir/pids/osd.$id.pid")
		timeout $((pre + post + 120)) rados bench -p bench $((pre + post)) write -b 4096 -t 32 \
			--no-cleanup >"$dir/c.$kind" 2>&1 &
		bpid=$!
		sleep "$pre"
		t0=$(ms_now)
		if [ "$kind" = kill ]; then kill -9 "$pid"; else kill -STOP "$pid"; fi
		tdown=$(poll_down "$t0" $((post * 1000)) ceph_down "$id")
		wait "$bpid" || true
		[ "$kind" = stop ] && kill -CONT "$pid" 2>/dev/null || true
		"$py" - "$dir/c.$kind" "$tdown" <<'PY'
import re, sys, json
txt = open(sys.argv[1]).read()
secs = [l.split() for l in txt.splitlines() if re.match(r"^\s+\d+\s+\d+\s+\d+\s+\d+\s", l)]
fin = [int(s[3]) for s in secs]
zero = sum(1 for a, b in zip([0] + fin, fin) if b == a)
m = re.search(r"Max latency\(s\):\s+([\d.]+)", txt)
e = re.search(r"Total writes made:\s+(\d+)", txt)
iops = re.search(r"Average IOPS:\s+(\d+)", txt)
print(json.dumps({"lat_max_ms": float(m.group(1)) * 1000 if m else -1, "zero_s": zero,
                  "ops": int(e.group(1)) if e else 0, "iops": int(iops.group(1)) if iops else 0,
                  "down_ms": int(sys.argv[2])}))
PY
	}
	echo "Ceph 16: 3 OSDs, rados bench 4 KiB writes at 32 in flight"
	c_kill=$(ceph_fault kill 0)
	echo "  kill -9: $c_kill"
	# The killed OSD back (started as ceph-up.sh starts it), and its PGs
	# clean again (at most 5 minutes): with it still down, stopping a second
	# OSD would leave 1 of 3 and every write waiting (min_size 2).
	setsid ceph-osd -i 0 -c "$CEPH_CONF" -f </dev/null >>"$cephdir/log/osd.0.stdout" 2>&1 &
	echo $! >"$cephdir/pids/osd.0.pid"
	t0=$(ms_now)
	while [ $(($(ms_now) - t0)) -lt 300000 ]; do
		timeout 10 ceph pg stat 2>/dev/null | grep -Eq "([0-9]+) pgs: \1 active\+clean" && break
		sleep 1
	done
	c_stop=$(ceph_fault stop 1)
	echo "  SIGSTOP: $c_stop"
fi

"$py" - "$r_kill" "$r_stop" "$c_kill" "$c_stop" <<'PY'
import json, sys
def cairn(s):
    j, down = s.rsplit(" ", 1)
    d = json.loads(j)
    return {"lat_max_ms": d.get("lat_max_ms"), "max_pause_s": d.get("max_pause_s"),
            "zero_s": d.get("zero_s"), "errors": d.get("errors"), "iops": d.get("iops"),
            "down_ms": int(down)}
out = {"cairn": {"kill": cairn(sys.argv[1]), "stop": cairn(sys.argv[2])}}
print("  %-8s %-6s %12s %12s %8s %8s %10s" % ("", "fault", "longest op", "no-compl s", "errors", "IOPS", "to down"))
for f in ("kill", "stop"):
    c = out["cairn"][f]
    print("  %-8s %-6s %10.0f ms %12s %8s %8.0f %7s ms" % ("Cairn", f, c["lat_max_ms"], c["zero_s"], c["errors"], c["iops"], c["down_ms"]))
if sys.argv[3]:
    out["ceph"] = {"kill": json.loads(sys.argv[3]), "stop": json.loads(sys.argv[4])}
    for f in ("kill", "stop"):
        c = out["ceph"][f]
        print("  %-8s %-6s %10.0f ms %12s %8s %8.0f %7s ms" % ("Ceph 16", f, c["lat_max_ms"], c["zero_s"], "-", c["iops"], c["down_ms"]))
print(json.dumps(out))
PY
