#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/ec: the encoder alone (ec_bench: ISA-L's raw encode rate beside
# Cairn's write path's, one core), then a local cluster of 6 OSDs (one disk)
# with an EC 4+2 pool beside the replicated size-3 pool `default`, in the same
# run: 4 MiB writes and sequential reads with 16 in flight, 4 KiB writes and
# random reads with 32 (clusterctl bench).
# On one disk an EC 4+2 write puts 1.5 bytes down per byte, size 3 puts 3.
# Last line JSON. Nothing here fails on a timing.
#   bench/ec/ec_bench.sh BUILD [DIR] [SECONDS]
set -euo pipefail
build=${1:?usage: ec_bench.sh BUILD [DIR] [SECONDS]}
base=${2:-/tmp}
secs=${3:-10}
py=/usr/bin/python3
ctl="$build/tools/clusterctl"
dir=$(mktemp -d "$base/cairn-ec-bench-XXXXXX")
trap '"$ctl" down --dir "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT

enc=$("$build/bench/ec_bench" 4 2 4096 3 | tee /dev/stderr | tail -1)
"$ctl" up --dir "$dir" --mons 1 --osds 6 --osd-size "${OSD_SIZE:-6G}" >"$dir/up.out"
export CAIRN_CONF="$dir/cairn.conf"
"$ctl" pool create ec --ec 4+2 --pg-num 32 >/dev/null
for _ in $(seq 1 120); do
	"$ctl" status | grep -Eq "pgs: +([0-9]+) pgs: \1 active\+clean$" && break
	sleep 0.25
done
cb() { "$ctl" bench "$1" "$2" --seconds "$secs" --size "${3:-4M}" --threads "${4:-16}" | tail -1; }
ec_w=$(cb ec write)
rep_w=$(cb default write)
ec_r=$(cb ec seq)
rep_r=$(cb default seq)
ec_sw=$(cb ec write 4K 32)
rep_sw=$(cb default write 4K 32)
ec_sr=$(cb ec rand 4K 32)
rep_sr=$(cb default rand 4K 32)
"$ctl" status | grep "pool " | sed 's/^ */  /'
"$py" - "$enc" "$ec_w" "$rep_w" "$ec_r" "$rep_r" "$ec_sw" "$rep_sw" "$ec_sr" "$rep_sr" <<'PY'
import json, sys
enc, ec_w, rep_w, ec_r, rep_r, ec_sw, rep_sw, ec_sr, rep_sr = (json.loads(a) for a in sys.argv[1:10])
def mibs(j): return j.get("mib_s", j.get("bw_mib_s", 0.0))
print(f"  encode: ISA-L {enc['raw_encode_mib_s']:.0f} MiB/s, Cairn's write path "
      f"{enc['cairn_encode_mib_s']:.0f} MiB/s ({enc['ratio']:.2f} of raw)")
for name, a, b in (("4 MiB write (16)", ec_w, rep_w), ("4 MiB seq read (16)", ec_r, rep_r)):
    print(f"  {name:20s} EC 4+2 {mibs(a):8.1f} MiB/s   size 3 {mibs(b):8.1f} MiB/s   "
          f"EC/rep {mibs(a) / mibs(b) if mibs(b) else 0:.2f}")
for name, a, b in (("4 KiB write (32)", ec_sw, rep_sw), ("4 KiB rand read (32)", ec_sr, rep_sr)):
    print(f"  {name:20s} EC 4+2 {a['iops']:8.0f} IOPS    size 3 {b['iops']:8.0f} IOPS    "
          f"EC/rep {a['iops'] / b['iops'] if b['iops'] else 0:.2f}")
print(json.dumps({
    "encode_raw_mib_s": enc["raw_encode_mib_s"], "encode_cairn_mib_s": enc["cairn_encode_mib_s"],
    "encode_ratio": enc["ratio"],
    "ec_write_mib_s": mibs(ec_w), "rep_write_mib_s": mibs(rep_w),
    "ec_read_mib_s": mibs(ec_r), "rep_read_mib_s": mibs(rep_r),
    "ec_write_p99_ms": ec_w.get("lat_p99_ms"), "rep_write_p99_ms": rep_w.get("lat_p99_ms"),
    "ec_write_4k_iops": ec_sw["iops"], "rep_write_4k_iops": rep_sw["iops"],
    "ec_read_4k_iops": ec_sr["iops"], "rep_read_4k_iops": rep_sr["iops"],
}))
PY
