#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/cluster: a local cluster (1 mon, 3 OSDs on files, pool size 3) under
# clusterctl bench -- 4 MiB writes and sequential reads with 16 in flight,
# 4 KiB writes and random reads with 32 in flight -- beside fio on the same
# disk in the same run. The physical limit for size-3 writes on one disk is
# fio's write bandwidth / 3 (every byte lands three times); reads are
# compared with fio's read bandwidth. Also each OSD's peak resident memory
# and the time `clusterctl up` takes until 3 OSDs are up. Reads right after
# the writes are warm (with the data cache's hit rate); then cold reads of a
# working set 4x each OSD's memory limit (below). Last line JSON. Nothing
# here fails on a timing.
# With --peer ceph, after Cairn's runs (and with Cairn stopped) the same
# four workloads against Ceph 16 on the same disk (../shared/peers/
# ceph-up.sh: 1 mon, 3 BlueStore OSDs on files, pool size 3; `rados bench`
# with the same sizes, depths and seconds) and the same cold reads (the same
# working sets, each ceph-osd restarted in a memory cgroup of the same
# limit), torn down again; the table gets a Ceph column and Cairn/Ceph
# ratios, the JSON a "ceph" object.
#   bench/cluster/cluster_bench.sh BUILD [DIR] [SECONDS] [--peer ceph]
set -euo pipefail
build=${1:?usage: cluster_bench.sh BUILD [DIR] [SECONDS] [--peer ceph]}
base=${2:-/tmp}
secs=${3:-10}
peer=
[ "${4:-}" = "--peer" ] && peer=${5:-}
[ -z "$peer" ] || [ "$peer" = ceph ] || { echo "cluster_bench: unknown peer '$peer' (ceph)" >&2; exit 2; }
py=/usr/bin/python3
ctl="$build/tools/clusterctl"
here=$(cd "$(dirname "$0")" && pwd)
shared=$(cd "$here/../../.." && pwd)/shared/peers
dir=$(mktemp -d "$base/cairn-cluster-bench-XXXXXX")
cephdir="$dir/ceph"
cleanup() {
	"$ctl" down --dir "$dir" >/dev/null 2>&1 || true
	[ -z "$peer" ] || [ ! -d "$cephdir" ] || "$shared/ceph-down.sh" "$cephdir" >/dev/null 2>&1 || true
	rmdir /sys/fs/cgroup/cairn-bench-$$-osd* /sys/fs/cgroup/memory/cairn-bench-$$-osd* 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
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
osd_size=${OSD_SIZE:-12G} # the warm runs (4 MiB writes stop at 45%) and 3 GiB of cold working sets
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

# Stop the daemon of pid file $2 and start it again in memory cgroup $1
# (under $cgroot, limit $lim MiB) by running the rest, from a shell already
# in the cgroup; its output in $3. \return the start's status.
cg_restart() { # cgroup pidfile log command...
	local cg="$cgroot/$1" pid log=$3
	mkdir -p "$cg"
	echo $((lim << 20)) >"$cg/$cgknob"
	pid=$(cat "$2")
	kill "$pid"
	for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	shift 3
	sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@" >"$log" 2>&1
}
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
# The store's data cache over all OSDs: "hits misses" (their /metrics).
cache_counts() {
	local h=0 m=0 a t
	for a in $(sed -n 's/^osd_metrics = //p' "$dir/cairn.conf" | tr ',' ' '); do
		t=$(curl -sf "http://$a/metrics") || { echo "cluster_bench: no metrics at $a" >&2; exit 1; }
		h=$((h + $(echo "$t" | sed -n 's/^cairn_osd_data_cache_hits_total //p')))
		m=$((m + $(echo "$t" | sed -n 's/^cairn_osd_data_cache_misses_total //p')))
	done
	echo "$h $m"
}
# The hit rate between two cache_counts.
hit_rate() {
	"$py" -c 'import sys; h0, m0, h1, m1 = map(int, sys.argv[1:]); d = h1 - h0 + m1 - m0
print(round((h1 - h0) / d, 3) if d else 0.0)' $1 $2
}
# 4 MiB writes stop at 45% of an OSD's space (every OSD holds a copy of
# everything; the cold phase adds its working set): a fast disk fills an
# 8 GiB OSD within the run otherwise.
w4m=$(cb write 4M 16 --max-objects $((osd_bytes * 45 / 100 / 4194304)))
c0=$(cache_counts)
r4m=$(cb seq 4M 16)
c1=$(cache_counts)
w4k=$(cb write 4K 32)
c2=$(cache_counts)
r4k=$(cb rand 4K 32)
c3=$(cache_counts)
hit_r4m=$(hit_rate "$c0" "$c1")
hit_r4k=$(hit_rate "$c2" "$c3")
peak=$(rss)

# ---------- cold reads ----------
# Working sets of COLD_4K_MIB (default 1024) MiB of 4 KiB objects for random
# reads and COLD_4M_MIB (default 2048) MiB of 4 MiB objects for sequential
# reads, each in a pool of its own (every OSD holds all of both: size 3 on
# 3 OSDs); then every OSD restarted in a memory cgroup whose limit (page
# cache included, and the OSD's own caches: it is the process's whole
# memory) is a quarter of what it serves, and the page cache dropped: reads
# must mostly come from the device. A quarter of the 4 KiB set alone (256
# MiB) is below what an OSD holding 262,144 objects needs after a restart
# (~260 MiB anonymous: RocksDB's memtables and block cache, the data
# cache): it was killed for memory at that limit. COLD=0 skips this part.
cold_json='null'
if [ "${COLD:-1}" = 1 ]; then
	ws4k=${COLD_4K_MIB:-1024}
	ws4m=${COLD_4M_MIB:-2048}
	ws=$((ws4k + ws4m))
	lim=$((ws / 4))
	if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
		cgroot=/sys/fs/cgroup cgknob=memory.max cgpeak=memory.peak
	elif [ -d /sys/fs/cgroup/memory ]; then
		cgroot=/sys/fs/cgroup/memory cgknob=memory.limit_in_bytes cgpeak=memory.max_usage_in_bytes
	else
		echo "cluster_bench: no memory cgroup (v1 or v2) to run the cold reads in" >&2
		exit 1
	fi
	"$ctl" pool create cold4k --pg-num 32 >/dev/null && "$ctl" pool create cold4m --pg-num 32 >/dev/null ||
		{ echo "cluster_bench: cold pools cannot be created" >&2; exit 1; }
	n4k=$((ws4k * 256))
	n4m=$((ws4m / 4))
	echo "cold: writing $ws4k MiB of 4 KiB objects ($n4k) and $ws4m MiB of 4 MiB objects ($n4m)"
	cw4k=$("$ctl" bench cold4k write --seconds 900 --size 4K --threads 32 --max-objects "$n4k" | tail -1)
	cw4m=$("$ctl" bench cold4m write --seconds 900 --size 4M --threads 16 --max-objects "$n4m" | tail -1)
	for i in 0 1 2; do
		# (`up` starts the OSD that is down)
		cg_restart "cairn-bench-$$-osd$i" "$dir/osd.$i.pid" "$dir/up.cold.$i" \
			"$ctl" up --dir "$dir" --mons 1 --osds 3 --osd-size "$osd_size" ||
			{ echo "cluster_bench: cold restart: $(tail -2 "$dir/up.cold.$i")" >&2; exit 1; }
	done
	for _ in $(seq 1 240); do
		"$ctl" status 2>/dev/null | grep -Eq "pgs: +([0-9]+) pgs: \1 active\+clean$" && break
		sleep 0.5
	done
	sync
	echo 3 >/proc/sys/vm/drop_caches
	echo "cold: OSDs restarted in memory cgroups of $lim MiB each (a quarter of the $ws MiB each serves), page cache dropped"
	k0=$(cache_counts)
	cr4k=$("$ctl" bench cold4k rand --seconds "$secs" --size 4K --threads 32 | tail -1)
	k1=$(cache_counts)
	cr4m=$("$ctl" bench cold4m seq --seconds "$secs" --size 4M --threads 16 | tail -1)
	k2=$(cache_counts)
	cpeak=0
	for i in 0 1 2; do
		v=$(cat "$cgroot/cairn-bench-$$-osd$i/$cgpeak" 2>/dev/null || echo 0)
		[ "$v" -gt "$cpeak" ] && cpeak=$v
	done
	for p in "$dir"/osd.*.pid; do
		kill -0 "$(cat "$p")" 2>/dev/null ||
			{ echo "cluster_bench: an OSD died in the cold reads (out of memory at $lim MiB?)" >&2; exit 1; }
	done
	cold_json=$("$py" - "$ws" "$lim" "$cw4k" "$cw4m" "$cr4k" "$cr4m" "$(hit_rate "$k0" "$k1")" \
		"$(hit_rate "$k1" "$k2")" "$((cpeak >> 20))" "$ws4k" "$ws4m" <<'PY'
import json, sys
ws, lim = int(sys.argv[1]), int(sys.argv[2])
cw4k, cw4m, cr4k, cr4m = (json.loads(a) for a in sys.argv[3:7])
print(json.dumps({"working_set_mib": ws, "osd_memory_limit_mib": lim,
                  "set_4k_mib": int(sys.argv[10]), "set_4m_mib": int(sys.argv[11]),
                  "objects_4k": cw4k["ops"], "objects_4m": cw4m["ops"],
                  "read_4k_iops": cr4k["iops"], "read_4k_p99_ms": cr4k.get("lat_p99_ms"),
                  "read_4k_cache_hit": float(sys.argv[7]),
                  "read_4m_mib_s": cr4m["mib_s"], "read_4m_cache_hit": float(sys.argv[8]),
                  "osd_peak_cgroup_mib": int(sys.argv[9])}))
PY
)
	# The cluster's work is done: stop it, so the cgroups are empty and go.
	"$ctl" down --dir "$dir" >/dev/null 2>&1 || true
	for i in 0 1 2; do rmdir "$cgroot/cairn-bench-$$-osd$i" 2>/dev/null || true; done
fi

# ---------- Ceph 16 (--peer ceph): the same workloads with rados bench ----------
ceph_json='{}'
if [ "$peer" = ceph ]; then
	"$ctl" down --dir "$dir" >/dev/null 2>&1 # nothing of Cairn's runs beside the peer
	rm -f "$dir"/osd.*.data
	[ -x "$shared/ceph-up.sh" ] || { echo "cluster_bench: no $shared/ceph-up.sh" >&2; exit 1; }
	echo "Ceph 16 (ceph-up.sh: 3 OSDs, pool bench size 3), rados bench ${secs}s each"
	WITH_RGW=0 NUM_OSD=3 OSD_SIZE_GB=8 "$shared/ceph-up.sh" "$cephdir" >"$dir/ceph-up.out" 2>&1 ||
		{ echo "cluster_bench: ceph-up failed: $(tail -5 "$dir/ceph-up.out")" >&2; exit 1; }
	export CEPH_CONF="$cephdir/ceph.conf"
	rb() { # name rados-bench-args... -> its output in $dir/rados.NAME (fails loudly)
		local name=$1
		shift
		timeout $((secs + 300)) rados bench -p bench "$secs" "$@" >"$dir/rados.$name" 2>&1 ||
			{ echo "cluster_bench: rados bench $*: $(tail -3 "$dir/rados.$name")" >&2; exit 1; }
	}
	rb w4m write -b 4M -t 16 --no-cleanup
	rb r4m seq -t 16
	rados -p bench cleanup >/dev/null 2>&1 || true
	rb w4k write -b 4096 -t 32 --no-cleanup
	rb r4k rand -t 32
	rados -p bench cleanup >/dev/null 2>&1 || true
	# Cold reads the same way as Cairn's: the same working sets in pools of
	# their own, each OSD restarted in a memory cgroup of the same limit,
	# the page cache dropped. BlueStore's caches are fixed at a third of the
	# limit (autotune off): osd_memory_target refuses anything below 896 MiB,
	# more than the limit, and an OSD autotuning towards it is killed.
	ceph_cold=0
	if [ "${COLD:-1}" = 1 ]; then
		for p in cold4k cold4m; do
			ceph osd pool create "$p" 32 32 replicated >/dev/null 2>&1 &&
				ceph osd pool set "$p" size 3 >/dev/null 2>&1 ||
				{ echo "cluster_bench: ceph pool $p cannot be created" >&2; exit 1; }
		done
		rbp() { # name pool seconds args... (fails loudly)
			local name=$1 pool=$2 s=$3
			shift 3
			timeout $((s + 300)) rados bench -p "$pool" "$s" "$@" >"$dir/rados.$name" 2>&1 ||
				{ echo "cluster_bench: rados bench -p $pool $*: $(tail -3 "$dir/rados.$name")" >&2; exit 1; }
		}
		echo "Ceph cold: writing $ws4k MiB of 4 KiB objects ($n4k) and $ws4m MiB of 4 MiB objects ($n4m)"
		rbp cw4k cold4k 900 write -b 4096 -O 4096 -t 32 --max-objects "$n4k" --no-cleanup --run-name c4k
		rbp cw4m cold4m 900 write -b 4M -t 16 --max-objects "$n4m" --no-cleanup --run-name c4m
		# (the mons' database: read by each OSD as it starts again below)
		ceph config set osd bluestore_cache_autotune false >/dev/null 2>&1 &&
			ceph config set osd bluestore_cache_size $((lim / 3 << 20)) >/dev/null 2>&1 ||
			{ echo "cluster_bench: Ceph cold: BlueStore's cache size not set" >&2; exit 1; }
		for i in 0 1 2; do
			# (ceph-up.sh starts the OSD that is down)
			cg_restart "cairn-bench-$$-ceph$i" "$cephdir/pids/osd.$i.pid" "$dir/ceph-up.cold.$i" \
				env WITH_RGW=0 NUM_OSD=3 OSD_SIZE_GB=8 "$shared/ceph-up.sh" "$cephdir" ||
				{ echo "cluster_bench: Ceph cold restart: $(tail -3 "$dir/ceph-up.cold.$i")" >&2; exit 1; }
		done
		for _ in $(seq 1 240); do
			ceph pg stat 2>/dev/null | grep -Eq "^([0-9]+) pgs: \1 active\+clean" && break
			sleep 0.5
		done
		sync
		echo 3 >/proc/sys/vm/drop_caches
		echo "Ceph cold: OSDs restarted in memory cgroups of $lim MiB each, page cache dropped"
		rbp cr4k cold4k "$secs" rand -t 32 --run-name c4k
		rbp cr4m cold4m "$secs" seq -t 16 --run-name c4m
		cpeak=0
		for i in 0 1 2; do
			v=$(cat "$cgroot/cairn-bench-$$-ceph$i/$cgpeak" 2>/dev/null || echo 0)
			[ "$v" -gt "$cpeak" ] && cpeak=$v
		done
		ceph_cold=$((cpeak >> 20))
	fi
	ceph_json=$("$py" - "$dir" "$ceph_cold" <<'PY'
import json, os, re, sys
d = sys.argv[1]
def get(name, key):
    m = re.search(key + r":\s+([\d.]+)", open(f"{d}/rados.{name}").read())
    return float(m.group(1)) if m else 0.0
out = {"write_4m_mib_s": get("w4m", r"Bandwidth \(MB/sec\)"),
       "read_4m_mib_s": get("r4m", r"Bandwidth \(MB/sec\)"),
       "write_4k_iops": get("w4k", "Average IOPS"),
       "read_4k_iops": get("r4k", "Average IOPS")}
if os.path.exists(f"{d}/rados.cr4k"):
    out["cold"] = {"read_4k_iops": get("cr4k", "Average IOPS"),
                   "read_4m_mib_s": get("cr4m", r"Bandwidth \(MB/sec\)"),
                   "osd_peak_cgroup_mib": int(sys.argv[2])}
print(json.dumps(out))
PY
)
	"$shared/ceph-down.sh" "$cephdir" >/dev/null 2>&1 || true
	for i in 0 1 2; do rmdir "$cgroot/cairn-bench-$$-ceph$i" 2>/dev/null || true; done
fi
"$py" - "$fio_w" "$fio_r" "$fio_ww" "$fio_rr" "$w4m" "$r4m" "$w4k" "$r4k" "$peak" "$up_ms" "$ceph_json" \
	"$hit_r4m" "$hit_r4k" "$cold_json" <<'PY'
import json, sys
fw, fr, fww, frr = map(float, sys.argv[1:5])
w4m, r4m, w4k, r4k = (json.loads(a) for a in sys.argv[5:9])
peak, up_ms = int(sys.argv[9]), int(sys.argv[10])
ceph = json.loads(sys.argv[11])
hit_r4m, hit_r4k = float(sys.argv[12]), float(sys.argv[13])
cold = json.loads(sys.argv[14])
def mibs(j): return j.get("mib_s", j.get("bw_mib_s", 0.0))
lim_w = fw / 3
rows = [
    ("4 MiB write (16)", mibs(w4m), "MiB/s", lim_w, "fio write / 3"),
    ("4 MiB seq read (16)", mibs(r4m), "MiB/s", fr, "fio read"),
    ("4 KiB write (32)", w4k["iops"], "IOPS", fww / 3, "fio randwrite / 3"),
    ("4 KiB rand read (32)", r4k["iops"], "IOPS", frr, "fio randread"),
]
ckeys = ["write_4m_mib_s", "read_4m_mib_s", "write_4k_iops", "read_4k_iops"]
for (name, v, unit, lim, what), ck in zip(rows, ckeys):
    line = f"  {name:22s} {v:10.1f} {unit:6s} {v / lim if lim else 0:6.2f} of {what} ({lim:.1f})"
    if ceph:
        c = ceph.get(ck, 0.0)
        line += f"; Ceph 16 {c:.1f}, Cairn/Ceph {v / c if c else 0:.2f}"
    print(line)
print(f"  warm reads (right after the writes): data cache hit rate 4 MiB seq {hit_r4m:.2f}, "
      f"4 KiB rand {hit_r4k:.2f}")
if cold:
    print(f"  cold reads ({cold['set_4k_mib']} + {cold['set_4m_mib']} MiB working sets, OSDs in "
          f"{cold['osd_memory_limit_mib']} MiB memory cgroups, page cache dropped): "
          f"4 KiB rand {cold['read_4k_iops']:.1f} IOPS ({cold['read_4k_iops'] / frr if frr else 0:.2f} "
          f"of fio, cache hit {cold['read_4k_cache_hit']:.2f}), 4 MiB seq {cold['read_4m_mib_s']:.1f} "
          f"MiB/s ({cold['read_4m_mib_s'] / fr if fr else 0:.2f} of fio, cache hit "
          f"{cold['read_4m_cache_hit']:.2f}); OSD cgroup peak {cold['osd_peak_cgroup_mib']} MiB")
    cc = ceph.get("cold") if ceph else None
    if cc:
        print(f"  Ceph 16 cold reads (the same sets and limits): 4 KiB rand {cc['read_4k_iops']:.1f} IOPS, "
              f"Cairn/Ceph {cold['read_4k_iops'] / cc['read_4k_iops'] if cc['read_4k_iops'] else 0:.2f}; "
              f"4 MiB seq {cc['read_4m_mib_s']:.1f} MiB/s, Cairn/Ceph "
              f"{cold['read_4m_mib_s'] / cc['read_4m_mib_s'] if cc['read_4m_mib_s'] else 0:.2f}; "
              f"OSD cgroup peak {cc['osd_peak_cgroup_mib']} MiB")
print(f"  OSD peak RSS {peak} MiB; up with 3 OSDs in {up_ms} ms")
out = {
    "fio": {"write_mib_s": fw, "read_mib_s": fr, "randwrite_iops": fww, "randread_iops": frr},
    "write_4m_mib_s": mibs(w4m), "write_4m_of_limit": round(mibs(w4m) / lim_w, 3) if lim_w else 0,
    "read_4m_mib_s": mibs(r4m), "read_4m_of_fio": round(mibs(r4m) / fr, 3) if fr else 0,
    "write_4k_iops": w4k["iops"], "write_4k_p99_ms": w4k.get("lat_p99_ms"),
    "read_4k_iops": r4k["iops"], "read_4k_p99_ms": r4k.get("lat_p99_ms"),
    "osd_peak_rss_mib": peak, "up_ms": up_ms,
    "read_4m_cache_hit": hit_r4m, "read_4k_cache_hit": hit_r4k, "cold": cold,
}
if ceph:
    out["ceph"] = ceph
    vals = [out["write_4m_mib_s"], out["read_4m_mib_s"], out["write_4k_iops"], out["read_4k_iops"]]
    out["vs_ceph"] = {k: round(v / ceph[k], 3) if ceph.get(k) else 0 for k, v in zip(ckeys, vals)}
    if cold and ceph.get("cold"):
        cc = ceph["cold"]
        out["vs_ceph"]["cold_read_4k_iops"] = round(cold["read_4k_iops"] / cc["read_4k_iops"], 3) \
            if cc["read_4k_iops"] else 0
        out["vs_ceph"]["cold_read_4m_mib_s"] = round(cold["read_4m_mib_s"] / cc["read_4m_mib_s"], 3) \
            if cc["read_4m_mib_s"] else 0
print(json.dumps(out))
PY
