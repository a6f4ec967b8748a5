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
# The 4 MiB phases stop at a share of the OSDs' space (OSD_SIZE, default
# 6G); a step that fails says which and why, and the script exits 1.
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

. "$(dirname "$0")/../lib/bench.sh"
BENCH_NAME=ec_bench
bench_json enc "encoder" "$build/bench/ec_bench" 4 2 4096 3
osd_size=${OSD_SIZE:-6G}
osd_bytes=$(numfmt --from=iec "$osd_size")
"$ctl" up --dir "$dir" --mons 1 --osds 6 --osd-size "$osd_size" >"$dir/up.out" 2>&1 ||
	bench_fail "clusterctl up: $(tail -3 "$dir/up.out")"
export CAIRN_CONF="$dir/cairn.conf"
"$ctl" pool create ec --ec 4+2 --pg-num 32 >/dev/null || bench_fail "pool create ec --ec 4+2"
for _ in $(seq 1 120); do
	"$ctl" status | grep -Eq "pgs: +([0-9]+) pgs: \1 active\+clean$" && break
	sleep 0.25
done
cb() { # VAR pool mode [size] [threads] [options]
	local var=$1 pool=$2 mode=$3 size=${4:-4M} thr=${5:-16}
	shift $(( $# < 5 ? $# : 5 ))
	bench_json "$var" "$pool $mode $size x $thr $*" "$ctl" bench "$pool" "$mode" \
		--seconds "$secs" --size "$size" --threads "$thr" "$@"
}
# Sized to the space (6 OSDs of osd_bytes, every object on all six): the 4
# MiB EC objects may take a fifth of it (4+2 stores 1.5 bytes per byte), the
# size-3 ones a third (3 per byte); the rest stays free for the small
# phases and the 1 MiB ones.
raw=$((6 * osd_bytes))
ec_n=$(bench_objects "$raw" 0.20 4194304 1.5)
rep_n=$(bench_objects "$raw" 0.33 4194304 3)
cb ec_w ec write 4M 16 --max-objects "$ec_n"
cb rep_w default write 4M 16 --max-objects "$rep_n"
cb ec_r ec seq
cb rep_r default seq
# New objects (their own names: not over the 4 MiB ones).
cb ec_sw ec write 4K 32 --prefix small
cb rep_sw default write 4K 32 --prefix small
cb ec_sr ec rand 4K 32 --prefix small
cb rep_sr default rand 4K 32 --prefix small
# Replacing large objects vs small ones (EC; the 4 KiB objects above).
nover=${EC_OVER:-512}
cb ec_big ec write 1M 16 --prefix big --max-objects "$nover"
nover=$("$py" -c 'import json,sys; print(json.loads(sys.argv[1])["ops"])' "$ec_big")
cb ec_ob ec write 4K 16 --prefix big --max-objects "$nover"
cb ec_os ec write 4K 16 --prefix small --max-objects "$nover"
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
