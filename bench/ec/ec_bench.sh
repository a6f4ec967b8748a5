#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/ec: the encoder alone (ec_bench: ISA-L's raw encode rate beside
# Cairn's write path's, one core), then a local cluster of 6 OSDs (one disk)
# with an EC 4+2 pool beside the replicated size-3 pool `default`, in the same
# run: 4 MiB writes and sequential reads with 16 in flight, 4 KiB writes (new
# objects) and random reads with 32 (clusterctl bench). Then the cost of
# replacing a large object (issue 29 item 8): EC_OVER objects (default 512)
# of 1 MiB, then a 4 KiB write_full over each with 16 in flight, beside one
# over each of as many 4 KiB objects; the ratio is the item's figure
# (target: >= 0.5).
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
cb() {
	local pool=$1 mode=$2 size=${3:-4M} thr=${4:-16}
	shift $(( $# < 4 ? $# : 4 ))
	"$ctl" bench "$pool" "$mode" --seconds "$secs" --size "$size" --threads "$thr" "$@" | tail -1
}
ec_w=$(cb ec write)
rep_w=$(cb default write)
ec_r=$(cb ec seq)
rep_r=$(cb default seq)
# New objects (their own names: not over the 4 MiB ones).
ec_sw=$(cb ec write 4K 32 --prefix small)
rep_sw=$(cb default write 4K 32 --prefix small)
ec_sr=$(cb ec rand 4K 32 --prefix small)
rep_sr=$(cb default rand 4K 32 --prefix small)
# Replacing large objects vs small ones (EC; the 4 KiB objects above).
nover=${EC_OVER:-512}
ec_big=$(cb ec write 1M 16 --prefix big --max-objects "$nover")
nover=$("$py" -c 'import json,sys; print(json.loads(sys.argv[1])["ops"])' "$ec_big")
ec_ob=$(cb ec write 4K 16 --prefix big --max-objects "$nover")
ec_os=$(cb ec write 4K 16 --prefix small --max-objects "$nover")
"$ctl" status | grep "pool " | sed 's/^ */  /'
"$py" - "$enc" "$ec_w" "$rep_w" "$ec_r" "$rep_r" "$ec_sw" "$rep_sw" "$ec_sr" "$rep_sr" \
	"$ec_ob" "$ec_os" <<'PY'
import json, sys
(enc, ec_w, rep_w, ec_r, rep_r, ec_sw, rep_sw, ec_sr, rep_sr,
 ec_ob, ec_os) = (json.loads(a) for a in sys.argv[1:12])
def mibs(j): return j.get("mib_s", j.get("bw_mib_s", 0.0))
print(f"  encode: ISA-L {enc['raw_encode_mib_s']:.0f} MiB/s, Cairn's write path "
      f"{enc['cairn_encode_mib_s']:.0f} MiB/s ({enc['ratio']:.2f} of raw)")
for name, a, b in (("4 MiB write (16)", ec_w, rep_w), ("4 MiB seq read (16)", ec_r, rep_r)):
    print(f"  {name:20s} EC 4+2 {mibs(a):8.1f} MiB/s   size 3 {mibs(b):8.1f} MiB/s   "
          f"EC/rep {mibs(a) / mibs(b) if mibs(b) else 0:.2f}")
for name, a, b in (("4 KiB write (32)", ec_sw, rep_sw), ("4 KiB rand read (32)", ec_sr, rep_sr)):
    print(f"  {name:20s} EC 4+2 {a['iops']:8.0f} IOPS    size 3 {b['iops']:8.0f} IOPS    "
          f"EC/rep {a['iops'] / b['iops'] if b['iops'] else 0:.2f}")
over = ec_ob["iops"] / ec_os["iops"] if ec_os["iops"] else 0
print(f"  4 KiB write_full (16) over {ec_ob['ops']} EC objects of 1 MiB: {ec_ob['iops']:.0f} IOPS "
      f"(p50 {ec_ob['lat_p50_ms']:.1f} ms), over 4 KiB ones: {ec_os['iops']:.0f} IOPS "
      f"(p50 {ec_os['lat_p50_ms']:.1f} ms): {over:.2f} of it (target >= 0.5)")
print(json.dumps({
    "encode_raw_mib_s": enc["raw_encode_mib_s"], "encode_cairn_mib_s": enc["cairn_encode_mib_s"],
    "encode_ratio": enc["ratio"],
    "ec_write_mib_s": mibs(ec_w), "rep_write_mib_s": mibs(rep_w),
    "ec_read_mib_s": mibs(ec_r), "rep_read_mib_s": mibs(rep_r),
    "ec_write_p99_ms": ec_w.get("lat_p99_ms"), "rep_write_p99_ms": rep_w.get("lat_p99_ms"),
    "ec_write_4k_iops": ec_sw["iops"], "rep_write_4k_iops": rep_sw["iops"],
    "ec_read_4k_iops": ec_sr["iops"], "rep_read_4k_iops": rep_sr["iops"],
    "ec_4k_over_1m_iops": ec_ob["iops"], "ec_4k_over_4k_iops": ec_os["iops"],
    "ec_4k_over_1m_p50_ms": ec_ob["lat_p50_ms"], "ec_4k_over_4k_p50_ms": ec_os["lat_p50_ms"],
    "ec_over_ratio": over,
}))
PY
