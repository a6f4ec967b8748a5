#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/client: the striper against the object layer on one local cluster
# (1 mon, 3 OSDs on files, pool size 3), in the same run: clusterctl bench
# 4 MiB object writes and sequential reads with DEPTH in flight, then a
# stream of GIB GiB written and read in 16 MiB calls with DEPTH/4 calls in
# flight (each call is 4 objects of 4 MiB at once: the same depth in
# objects). The issue's target: the stream at >= 0.9 of the objects.
# Reads are warm (right after the writes) in both. Then 4 KiB reads of
# 4,096 objects at 1,024 in flight for DEPTH_SECONDS (10) through a
# completion queue (bench/depth_bench): ops/s, and the CPU per op of the
# client process against the three OSDs' together (the issue's bar: the
# client costs less than the OSDs that serve it), and the same reads on a
# client of 2 io threads (its ops/s over one thread's). Last line JSON; nothing
# here fails on a timing.
#   bench/client/client_bench.sh BUILD [DIR] [GIB] [DEPTH]
set -euo pipefail
build=${1:?usage: client_bench.sh BUILD [DIR] [GIB] [DEPTH]}
base=${2:-/tmp}
gib=${3:-${CLIENT_BENCH_GIB:-2}}
depth=${4:-16}
ctl="$build/tools/clusterctl"
dir=$(mktemp -d "$base/cairn-client-bench-XXXXXX")
cleanup() {
	"$ctl" down --dir "$dir" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
# Room for the objects' and the stream's copies, with slack.
osd_size=$(( (gib * 3 + 2) ))G
need=$(( (gib * 3 + 2) * 3 ))
avail=$(df -BG --output=avail "$base" | tail -1 | tr -dc 0-9)
if [ "$avail" -lt "$need" ]; then
	echo "client_bench: needs ${need} GiB free in $base, has ${avail} GiB" >&2
	exit 2
fi
"$ctl" up --dir "$dir" --mons 1 --osds 3 --osd-size "$osd_size" >"$dir/up.out" ||
	{ echo "client_bench: clusterctl up failed: $(tail -3 "$dir/up.out")" >&2; exit 1; }
conf="$dir/cairn.conf"
objs=$(( gib * 256 )) # 4 MiB objects: the stream's bytes
cb() {
	CAIRN_CONF="$conf" "$ctl" bench default "$1" --seconds 600 --size 4M --threads "$depth" \
		--max-objects "$objs" "${@:2}" | tail -1
}
ow=$(cb write) || { echo "client_bench: object writes failed: $ow" >&2; exit 1; }
or=$(cb seq) || { echo "client_bench: object reads failed: $or" >&2; exit 1; }
st=$("$build/bench/stream_bench" "$conf" default "$gib" 16 $(( depth / 4 > 0 ? depth / 4 : 1 )) |
	tail -1) || { echo "client_bench: stream_bench failed: $st" >&2; exit 1; }
pids=$(cat "$dir"/osd.*.pid | tr '\n' , | sed 's/,$//')
dp=$("$build/bench/depth_bench" "$conf" default 4096 1024 "${DEPTH_SECONDS:-10}" "$pids" |
	tail -1) || { echo "client_bench: depth_bench failed: $dp" >&2; exit 1; }
# The same reads on a client of 2 io threads (the main thread still reaps
# one completion queue): its ops/s and CPU per op against the one above.
dp2=$(DEPTH_IO_THREADS=2 "$build/bench/depth_bench" "$conf" default 4096 1024 \
	"${DEPTH_SECONDS:-10}" "$pids" | tail -1) ||
	{ echo "client_bench: depth_bench (2 io threads) failed: $dp2" >&2; exit 1; }
# Allocations per read (the client process: the library's and depth_bench's
# own completion and op per read): two runs under bench/alloc_count, the
# difference in allocations over the difference in reads.
apr=-1
if [ -e "$build/bench/liballoc_count.so" ]; then
	for s in 2 5; do
		LD_PRELOAD="$build/bench/liballoc_count.so" "$build/bench/depth_bench" "$conf" default \
			4096 1024 "$s" "$pids" >"$dir/ac.$s.out" 2>"$dir/ac.$s.err" ||
			{ echo "client_bench: depth_bench under alloc_count failed: $(tail -2 "$dir/ac.$s.err")" >&2; exit 1; }
	done
	apr=$(/usr/bin/python3 - "$dir" <<'PY'
import json, re, sys
d = sys.argv[1]
ops = [json.loads(open(f"{d}/ac.{s}.out").read().strip().splitlines()[-1])["ops"] for s in (2, 5)]
al = [int(re.search(r"allocations: (\d+)", open(f"{d}/ac.{s}.err").read()).group(1)) for s in (2, 5)]
print(f"{(al[1] - al[0]) / (ops[1] - ops[0]):.2f}" if ops[1] > ops[0] else -1)
PY
)
fi
/usr/bin/python3 - "$ow" "$or" "$st" "$gib" "$depth" "$dp" "$apr" "$dp2" <<'PY'
import json, sys
ow, orr, st = (json.loads(x) for x in sys.argv[1:4])
dp = json.loads(sys.argv[6])
apr = float(sys.argv[7])
dp2 = json.loads(sys.argv[8])
io2 = dp2["ops_s"] / dp["ops_s"] if dp["ops_s"] else 0
gib, depth = sys.argv[4], int(sys.argv[5])
rw = st["write_mib_s"] / ow["mib_s"] if ow["mib_s"] else 0
rr = st["read_mib_s"] / orr["mib_s"] if orr["mib_s"] else 0
print(f"bench/client: {gib} GiB, 3 OSDs, size 3, warm reads")
print(f"  {'':34} {'objects (4 MiB)':>16} {'stream (16 MiB)':>16} {'ratio':>6}")
print(f"  {'write MiB/s, depth ' + str(depth):34} {ow['mib_s']:16.1f} {st['write_mib_s']:16.1f} {rw:6.2f}")
print(f"  {'read MiB/s, depth ' + str(depth):34} {orr['mib_s']:16.1f} {st['read_mib_s']:16.1f} {rr:6.2f}")
print(f"  4 KiB reads, 1024 in flight: {dp['ops_s']:.0f} ops/s; CPU per op: client "
      f"{dp['client_ns_per_op']:.0f} ns, 3 OSDs {dp['osd_ns_per_op']:.0f} ns "
      f"(client/OSDs {dp['client_over_osd']:.2f}); allocations per read "
      f"{apr:.2f} (the bench's own completion and op included)")
print(f"  the same on 2 io threads: {dp2['ops_s']:.0f} ops/s ({io2:.2f} of 1 thread); CPU per op: "
      f"client {dp2['client_ns_per_op']:.0f} ns, 3 OSDs {dp2['osd_ns_per_op']:.0f} ns "
      f"(client/OSDs {dp2['client_over_osd']:.2f})")
print(json.dumps({"bench": "client", "gib": int(gib), "depth": depth,
                  "depth1024_ops_s": dp["ops_s"], "client_ns_per_op": dp["client_ns_per_op"],
                  "osd_ns_per_op": dp["osd_ns_per_op"], "client_over_osd": dp["client_over_osd"],
                  "allocs_per_read": apr,
                  "io2_ops_s": dp2["ops_s"], "io2_over_io1": round(io2, 3),
                  "io2_client_ns_per_op": dp2["client_ns_per_op"],
                  "io2_client_over_osd": dp2["client_over_osd"],
                  "io2_bad": dp2["bad"],
                  "objects_write_mib_s": ow["mib_s"], "objects_read_mib_s": orr["mib_s"],
                  "stream_write_mib_s": st["write_mib_s"], "stream_read_mib_s": st["read_mib_s"],
                  "ratio_write": round(rw, 3), "ratio_read": round(rr, 3), "stream_bad": st["bad"]}))
PY
