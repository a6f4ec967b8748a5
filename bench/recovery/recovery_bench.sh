#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/recovery: what recovery costs the clients, and how long it takes.
# A local cluster (1 mon, 3 OSDs on files, size 3). One OSD is killed while
# clusterctl bench writes 4 MiB objects to pool `default` for W seconds; it
# is restarted and, while its PGs recover, 4 KiB writes with 16 in flight
# run against pool `other` (same OSDs, objects not degraded). Compared with
# the same 4 KiB writes on the clean cluster in the same run, for
# osd_recovery_share 30 (the default) and 100 (no limit). Reports client
# IOPS and p50/p99 latency, each as a ratio to the clean run, and the time
# until every PG is active+clean. Sized to the OSDs' space (OSD_SIZE,
# default 8G); a step that fails says which and why, and the script exits
# 1. Last line JSON. Nothing fails on a timing.
#   bench/recovery/recovery_bench.sh BUILD [DIR] [SECONDS]
set -euo pipefail
build=${1:?usage: recovery_bench.sh BUILD [DIR] [SECONDS]}
base=${2:-/tmp}
secs=${3:-8}
wsecs=${RECOVERY_BENCH_WRITE_SECONDS:-8}
py=/usr/bin/python3
ctl="$build/tools/clusterctl"
dir=$(mktemp -d "$base/cairn-recovery-bench-XXXXXX")
trap '"$ctl" down --dir "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
export CAIRN_OSD_GRACE=2s
. "$(dirname "$0")/../lib/bench.sh"
BENCH_NAME=recovery_bench
osd_size=${OSD_SIZE:-8G}
osd_bytes=$(numfmt --from=iec "$osd_size")
# The 4 MiB writes of each pass overwrite the same objects (bench_N), and
# may take at most a third of an OSD (each OSD holds a copy of everything):
# a fast disk fills a small OSD within the write window otherwise.
nbig=$(bench_objects "$osd_bytes" 0.33 4194304 1)

up() {
	"$ctl" up --dir "$dir" --mons 1 --osds 3 --osd-size "$osd_size" >"$dir/up.out" 2>&1 ||
		bench_fail "clusterctl up: $(tail -3 "$dir/up.out")"
}
clean() { "$ctl" status 2>/dev/null | grep -Eq "pgs: +([0-9]+) pgs: \1 active\+clean$"; }
wait_clean() {
	for _ in $(seq 1 2400); do clean && return 0; sleep 0.1; done
	"$ctl" status >&2 || true
	bench_fail "not clean after 240 s"
}
cb() { # VAR pool mode seconds size [options]
	bench_json "$1" "$2 $3 $5 for $4 s" "$ctl" bench "$2" "$3" --seconds "$4" --size "$5" \
		--threads 16 "${@:6}"
}

up
export CAIRN_CONF="$dir/cairn.conf"
"$ctl" pool create other --size 3 --pg-num 32 >/dev/null || bench_fail "pool create other"
wait_clean
cb base_json other write "$secs" 4K
echo "clean cluster, 4 KiB writes to 'other': $base_json"
results=()
for share in 30 100; do
	"$ctl" down --dir "$dir" >/dev/null || bench_fail "clusterctl down"
	CAIRN_OSD_RECOVERY_SHARE=$share up
	wait_clean
	kill -9 "$(cat "$dir/osd.2.pid")"
	for _ in $(seq 1 100); do "$ctl" osd ls | grep -q " down " && break; sleep 0.1; done
	cb w default write "$wsecs" 4M --max-objects "$nbig"
	CAIRN_OSD_RECOVERY_SHARE=$share up
	t0=$(date +%s%N)
	(wait_clean && echo $(( ($(date +%s%N) - t0) / 1000000 )) >"$dir/clean.ms") &
	wpid=$!
	cb r other write "$secs" 4K
	wait "$wpid" || bench_fail "share $share: the PGs did not recover"
	ms=$(cat "$dir/clean.ms")
	echo "osd_recovery_share $share: written while down: $w"
	echo "  during recovery: $r; clean after $ms ms"
	results+=("$share" "$w" "$r" "$ms")
done
"$py" - "$base_json" "${results[@]}" <<'PY'
import json, sys
base = json.loads(sys.argv[1])
out = {"bench": "recovery", "clean": base, "runs": []}
a = sys.argv[2:]
for i in range(0, len(a), 4):
    share, w, r, ms = int(a[i]), json.loads(a[i + 1]), json.loads(a[i + 2]), int(a[i + 3])
    missed = w["ops"] * w["size"] / 1048576
    run = {
        "recovery_share": share, "missed_mib": round(missed, 1), "clean_ms": ms,
        "recovery_mib_s": round(missed / (ms / 1000), 1) if ms else 0,
        "client_iops": r["iops"], "iops_ratio": round(r["iops"] / base["iops"], 2),
        "p50_ms": r["lat_p50_ms"], "p50_ratio": round(r["lat_p50_ms"] / base["lat_p50_ms"], 2),
        "p99_ms": r["lat_p99_ms"], "p99_ratio": round(r["lat_p99_ms"] / base["lat_p99_ms"], 2),
    }
    out["runs"].append(run)
    print(f"  share {share:3d}%: {missed:.0f} MiB recovered in {ms / 1000:.1f} s "
          f"({run['recovery_mib_s']} MiB/s); clients {r['iops']:.0f} IOPS "
          f"({run['iops_ratio']}x clean), p50 {r['lat_p50_ms']:.2f} ms ({run['p50_ratio']}x), "
          f"p99 {r['lat_p99_ms']:.2f} ms ({run['p99_ratio']}x)")
print(json.dumps(out))
PY
