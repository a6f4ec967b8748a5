#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What one session per OSD costs against one per PG shard, in the same run
# on one local cluster (1 mon, 3 OSDs on files of 2 PG shards each, pool
# size 3): 4 KiB reads of 4,096 objects at 1,024 in flight through a
# completion queue (bench/depth_bench), with libcairn's default (one
# session per OSD: the OSD hands the ops of its second shard's PGs across
# its threads) and with cairn_opts.shard_sessions (one per shard, as the
# map lists them: no hand-over, twice the connections), alternated PAIRS
# times for SECONDS each (the machine's load moves between runs: the
# pairs show how much). Ops/s and the CPU per op of the client and of the
# OSDs for each; the baseline is the per-shard sessions of the same pair.
# Last line JSON; nothing here fails on a timing.
#   bench/client/sessions_bench.sh BUILD [DIR] [SECONDS] [PAIRS]
set -euo pipefail
build=${1:?usage: sessions_bench.sh BUILD [DIR] [SECONDS] [PAIRS]}
base=${2:-/tmp}
secs=${3:-6}
pairs=${4:-3}
ctl="$build/tools/clusterctl"
dir=$(mktemp -d "$base/cairn-sessions-bench-XXXXXX")
cleanup() {
	"$ctl" down --dir "$dir" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
CAIRN_OSD_OP_SHARDS=2 "$ctl" up --dir "$dir" --mons 1 --osds 3 --osd-size 2G >"$dir/up.out" ||
	{ echo "sessions_bench: clusterctl up failed: $(tail -3 "$dir/up.out")" >&2; exit 1; }
grep -q "2 PG shards" "$dir"/osd.0.log ||
	{ echo "sessions_bench: the OSDs did not start 2 PG shards" >&2; exit 1; }
conf="$dir/cairn.conf"
pids=$(cat "$dir"/osd.*.pid | tr '\n' , | sed 's/,$//')
runs=()
for p in $(seq 1 "$pairs"); do
	for mode in osd shard; do
		r=$(DEPTH_SHARD_SESSIONS=$([ $mode = shard ] && echo 1 || echo 0) \
			"$build/bench/depth_bench" "$conf" default 4096 1024 "$secs" "$pids" 2>&1 | tail -1) ||
			{ echo "sessions_bench: depth_bench ($mode sessions, pair $p) failed: $r" >&2; exit 1; }
		runs+=("$mode:$r")
	done
done
fwd=0
for a in $(sed -n 's/^osd_metrics = //p' "$conf" | tr ',' ' '); do
	v=$(curl -sf "http://$a/metrics" | sed -n 's/^cairn_msgr_forwarded //p')
	fwd=$((fwd + ${v:-0}))
done
/usr/bin/python3 - "$fwd" "${runs[@]}" <<'PY'
import json, statistics, sys
fwd = int(sys.argv[1])
runs = {"osd": [], "shard": []}
for a in sys.argv[2:]:
    mode, j = a.split(":", 1)
    runs[mode].append(json.loads(j))
bad = sum(r["bad"] for rs in runs.values() for r in rs)
print("bench/client sessions: 3 OSDs of 2 PG shards, 4 KiB reads at 1024 in flight")
print(f"  {'pair':>4} {'per-OSD ops/s':>14} {'per-shard ops/s':>16} {'ratio':>6}"
      f" {'client ns/op (OSD, shard)':>26} {'OSDs ns/op (OSD, shard)':>24}")
ratios = []
for i, (a, b) in enumerate(zip(runs["osd"], runs["shard"])):
    r = a["ops_s"] / b["ops_s"] if b["ops_s"] else 0
    ratios.append(r)
    print(f"  {i + 1:>4} {a['ops_s']:14.0f} {b['ops_s']:16.0f} {r:6.2f}"
          f" {a['client_ns_per_op']:12.0f} {b['client_ns_per_op']:12.0f}"
          f" {a['osd_ns_per_op']:12.0f} {b['osd_ns_per_op']:11.0f}")
med = lambda k, m: statistics.median(r[k] for r in runs[m])
print(f"  median: per-OSD/per-shard sessions {statistics.median(ratios):.2f} of the ops/s; "
      f"OSD CPU per op {med('osd_ns_per_op', 'osd'):.0f} vs {med('osd_ns_per_op', 'shard'):.0f} ns; "
      f"{fwd} messages handed between shards; {bad} wrong reads")
print(json.dumps({"bench": "sessions", "pairs": len(ratios),
                  "per_osd_ops_s": med("ops_s", "osd"), "per_shard_ops_s": med("ops_s", "shard"),
                  "ratio_ops_s": round(statistics.median(ratios), 3),
                  "per_osd_osd_ns_per_op": med("osd_ns_per_op", "osd"),
                  "per_shard_osd_ns_per_op": med("osd_ns_per_op", "shard"),
                  "per_osd_client_ns_per_op": med("client_ns_per_op", "osd"),
                  "per_shard_client_ns_per_op": med("client_ns_per_op", "shard"),
                  "forwarded": fwd, "bad": bad}))
PY
