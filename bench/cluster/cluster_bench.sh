#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/cluster: a local cluster (1 mon, 3 OSDs on files, pool size 3) under
# clusterctl bench -- 4 MiB writes and sequential reads with 16 in flight,
# 4 KiB writes and random reads with 32 in flight -- beside fio on the same
# disk in the same run. The physical limit for size-3 writes on one disk is
# fio's write bandwidth / 3 (every byte lands three times); reads are
# compared with fio's read bandwidth. Also each OSD's peak resident memory
# and the time `clusterctl up` takes until 3 OSDs are up. Last line JSON.
# Nothing here fails on a timing.
#   bench/cluster/cluster_bench.sh BUILD [DIR] [SECONDS]
set -euo pipefail
build=${1:?usage: cluster_bench.sh BUILD [DIR] [SECONDS]}
base=${2:-/tmp}
secs=${3:-10}
py=/usr/bin/python3
ctl="$build/tools/clusterctl"
dir=$(mktemp -d "$base/cairn-cluster-bench-XXXXXX")
trap '"$ctl" down --dir "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
command -v fio >/dev/null || { echo "cluster_bench: fio is not installed (make deps)" >&2; exit 2; }

# fio on the same disk: a 4 GiB file, direct I/O through io_uring.
fio_run() { # rw bs depth -> MiB/s or IOPS
	fio --name=b --filename="$dir/fio.dat" --ioengine=io_uring --direct=1 --rw="$1" --bs="$2" \
		--iodepth="$3" --size=4G --runtime="$secs" --time_based --ramp_time=1 \
		--output-format=json --output="$dir/fio.json" >/dev/null 2>&1
	"$py" - "$dir/fio.json" "$1" "$4" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
side = j["read" if "read" in sys.argv[2] else "write"]
print(round(side["iops"] if sys.argv[3] == "iops" else side["bw_bytes"] / 1048576, 1))
PY
}
echo "fio on $dir (4 GiB file, direct, io_uring), ${secs}s each"
fio_w=$(fio_run write 4M 16 bw)
fio_r=$(fio_run read 4M 16 bw)
fio_ww=$(fio_run randwrite 4k 32 iops)
fio_rr=$(fio_run randread 4k 32 iops)
rm -f "$dir/fio.dat"
printf "  4 MiB write %s MiB/s, read %s MiB/s; 4 KiB randwrite %s IOPS, randread %s IOPS\n" \
	"$fio_w" "$fio_r" "$fio_ww" "$fio_rr"

# The OSDs' files are written once first, as fio's file is: a file that
# posix_fallocate made has unwritten extents on ext4, and the first write to
# each costs a metadata conversion that every device flush then commits
# through the journal (a fifth of 4 MiB write throughput here); a raw NVMe
# device has no such cost. CLUSTER_BENCH_FALLOCATE=1 leaves them to clusterctl.
osd_size=${OSD_SIZE:-8G}
osd_bytes=$(numfmt --from=iec "$osd_size")
if [ -z "${CLUSTER_BENCH_FALLOCATE:-}" ]; then
	for i in 0 1 2; do
		dd if=/dev/zero of="$dir/osd.$i.data" bs=4M oflag=direct status=none \
			count=$((osd_bytes / 4194304))
	done
fi
t0=$(date +%s%N)
"$ctl" up --dir "$dir" --mons 1 --osds 3 --osd-size "$osd_size" >"$dir/up.out"
up_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
export CAIRN_CONF="$dir/cairn.conf"
echo "clusterctl up with 3 OSDs: $up_ms ms"

# Each OSD's peak RSS (VmHWM) so far.
rss() {
	local m=0 v
	for p in "$dir"/osd.*.pid; do
		v=$(awk '/VmHWM/ {print $2}' "/proc/$(cat "$p")/status" 2>/dev/null || echo 0)
		[ "${v:-0}" -gt "$m" ] && m=$v
	done
	echo $((m / 1024))
}
cb() { # mode size threads [options] -> the JSON line
	"$ctl" bench default "$1" --seconds "$secs" --size "$2" --threads "$3" "${@:4}" | tail -1
}
# 4 MiB writes stop at 60% of an OSD's space (every OSD holds a copy of
# everything): a fast disk fills an 8 GiB OSD within the run otherwise.
w4m=$(cb write 4M 16 --max-objects $((osd_bytes * 6 / 10 / 4194304)))
r4m=$(cb seq 4M 16)
w4k=$(cb write 4K 32)
r4k=$(cb rand 4K 32)
peak=$(rss)
"$py" - "$fio_w" "$fio_r" "$fio_ww" "$fio_rr" "$w4m" "$r4m" "$w4k" "$r4k" "$peak" "$up_ms" <<'PY'
import json, sys
fw, fr, fww, frr = map(float, sys.argv[1:5])
w4m, r4m, w4k, r4k = (json.loads(a) for a in sys.argv[5:9])
peak, up_ms = int(sys.argv[9]), int(sys.argv[10])
def mibs(j): return j.get("mib_s", j.get("bw_mib_s", 0.0))
lim_w = fw / 3
rows = [
    ("4 MiB write (16)", mibs(w4m), "MiB/s", lim_w, "fio write / 3"),
    ("4 MiB seq read (16)", mibs(r4m), "MiB/s", fr, "fio read"),
    ("4 KiB write (32)", w4k["iops"], "IOPS", fww / 3, "fio randwrite / 3"),
    ("4 KiB rand read (32)", r4k["iops"], "IOPS", frr, "fio randread"),
]
for name, v, unit, lim, what in rows:
    print(f"  {name:22s} {v:10.1f} {unit:6s} {v / lim if lim else 0:6.2f} of {what} ({lim:.1f})")
print(f"  OSD peak RSS {peak} MiB; up with 3 OSDs in {up_ms} ms")
out = {
    "fio": {"write_mib_s": fw, "read_mib_s": fr, "randwrite_iops": fww, "randread_iops": frr},
    "write_4m_mib_s": mibs(w4m), "write_4m_of_limit": round(mibs(w4m) / lim_w, 3) if lim_w else 0,
    "read_4m_mib_s": mibs(r4m), "read_4m_of_fio": round(mibs(r4m) / fr, 3) if fr else 0,
    "write_4k_iops": w4k["iops"], "write_4k_p99_ms": w4k.get("lat_p99_ms"),
    "read_4k_iops": r4k["iops"], "read_4k_p99_ms": r4k.get("lat_p99_ms"),
    "osd_peak_rss_mib": peak, "up_ms": up_ms,
}
print(json.dumps(out))
PY
