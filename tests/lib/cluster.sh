# SPDX-License-Identifier: Apache-2.0
# Sourced by the local-cluster tests (recovery_test.sh, ec_pool_test.sh, ec_split_test.sh,
# thrash_test.sh); they set $ctl (clusterctl) and $dir (the cluster's directory) and define
# fail (print why, exit 1) before calling these.

# At exit with status $1: stop the cluster; sanitizer reports in the daemons'
# logs (written at their clean exit in 'down') fail the test; remove $dir
# unless KEEP_DIR is set. Exits.
cluster_finish() {
	local rc=$1
	"$ctl" down --dir "$dir" >/dev/null 2>&1 || true
	if grep -l "Sanitizer\|runtime error" "$dir"/*.log >/dev/null 2>&1; then
		# The report's kind, its stacks and summary (not the shadow-byte
		# map): short enough to survive a CI log's excerpt.
		for f in $(grep -l "Sanitizer\|runtime error" "$dir"/*.log); do
			echo "== sanitizer report in $f" >&2
			grep -E "ERROR: |runtime error|^ +#[0-9]+ |^SUMMARY|freed by|previously allocated|^READ|^WRITE" "$f" |
				grep -v "libc_start\|_start " | head -60 >&2
		done
		echo "FAIL: sanitizer reports in daemon logs" >&2
		rc=1
	fi
	# The recovery watchdog is an alarm for a bug, never a path a test should
	# take: say so loudly, with what the OSD logged before it (the logs go
	# with $dir), and fail the test (CAIRN_STRICT_WATCHDOG=0 only reports
	# it, for hunting another failure; see docs/design/osd.md).
	for f in $(grep -l "watchdog fired" "$dir"/*.log 2>/dev/null); do
		echo "WATCHDOG: a watchdog (recovery or repop) fired in $f; what led to it:" >&2
		grep -m1 -B80 "watchdog fired" "$f" | tail -n 81 >&2
		grep -c "watchdog fired" "$f" | sed 's/^/WATCHDOG: times: /' >&2
		if [ "${CAIRN_STRICT_WATCHDOG:-1}" = 1 ]; then
			echo "FAIL: the recovery watchdog fired" >&2
			rc=1
		fi
	done
	[ -n "${KEEP_DIR:-}" ] || rm -rf "$dir"
	exit "$rc"
}

# Poll 'clusterctl status' into $dir/st until it matches the extended
# regex $1, at most $2 times, $3 s apart. Returns 1 if it never did.
status_until() {
	for _ in $(seq 1 "$2"); do
		"$ctl" status >"$dir/st" 2>&1 || true
		grep -Eq "$1" "$dir/st" && return 0
		sleep "$3"
	done
	return 1
}

# Every PG active+clean, as status prints it.
CLEAN_RE='pgs: +([0-9]+) pgs: \1 active\+clean$'

# Wait (up to $2 quarter-seconds, default 720) until every PG is
# active+clean and print how long it took ("$1: active+clean after N ms"),
# or call the test's fail. Needs $ctl, $dir and a fail function.
wait_clean() {
	local t0 t1
	t0=$(date +%s%N)
	status_until "$CLEAN_RE" "${2:-720}" 0.25 || fail "$1: not active+clean: $(grep 'pgs:' "$dir/st")"
	t1=$(date +%s%N)
	echo "$1: active+clean after $(((t1 - t0) / 1000000)) ms"
}

# As wait_clean, and until no EC PG is held off its CRUSH placement (status
# has no "moving:" line: mon/ec_pin.h), so the cluster is where CRUSH puts it.
wait_placed() {
	local t0 t1 n=0
	t0=$(date +%s%N)
	while :; do
		"$ctl" status >"$dir/st" 2>&1 || true
		grep -Eq "$CLEAN_RE" "$dir/st" && ! grep -q "moving:" "$dir/st" && break
		n=$((n + 1))
		[ "$n" -lt "${2:-720}" ] ||
			fail "$1: not placed: $(grep -E 'pgs:|moving:' "$dir/st" | tr '\n' ' ')"
		sleep 0.25
	done
	t1=$(date +%s%N)
	echo "$1: active+clean on CRUSH's placement after $(((t1 - t0) / 1000000)) ms"
}

# OSD ids come in boot order; the files in $dir (osd.N.pid, osd.N.log) are by
# start index. The start index of osd.$1 (from its log's boot line).
osd_idx() {
	local f
	f=$(grep -l "booted as osd\.$1 " "$dir"/osd.*.log | head -1)
	[ -n "$f" ] || fail "osd.$1 never booted"
	f=${f##*/osd.}
	echo "${f%.log}"
}
# The pid of osd.$1.
osd_pid() { cat "$dir/osd.$(osd_idx "$1").pid"; }
# Start again the OSD of start index $1 (after a kill), on its own data,
# host, metrics address, log and pid file.
osd_start() {
	local maddr
	maddr=$(sed -n 's/^osd_metrics = //p' "$dir/cairn.conf" | tr ',' '\n' | sed -n "$(($1 + 1))p")
	"$build/osd/cairn-osd" -c "$dir/cairn.conf" --osd-data "$dir/osd.$1.data" --host "node$1" --osd-host-osds 4 \
		--metrics-addr "$maddr" --log-file "$dir/osd.$1.log" --pid-file "$dir/osd.$1.pid" \
		>>"$dir/osd.$1.out" 2>&1 &
}
# How many OSDs the map says are down.
ndown() { "$ctl" osd ls | grep -c " down " || true; }
# Wait (up to 20 s) until at least $1 OSDs are down.
wait_ndown() {
	for _ in $(seq 1 80); do [ "$(ndown)" -ge "$1" ] && return 0; sleep 0.25; done
	fail "killed OSDs are not marked down"
}
# Wait (up to 20 s) until no OSD is down.
wait_all_up() {
	for _ in $(seq 1 80); do [ "$(ndown)" = 0 ] && return 0; sleep 0.25; done
	fail "OSDs not all up"
}
# True when process $1 has ended: gone, or a zombie nobody reaped yet
# (kill -0 still succeeds on a zombie).
proc_gone() {
	kill -0 "$1" 2>/dev/null || return 0
	awk '{ exit !($3 == "Z" || $3 == "X") }' "/proc/$1/stat" 2>/dev/null
}
