# SPDX-License-Identifier: Apache-2.0
# Helpers for the benchmark scripts (sourced). Set BENCH_NAME first.
#
# A step that fails must say so: under `set -e`, `x=$(cmd)` that fails ends
# the script with no word of why (bench/ec and bench/recovery once stopped
# like that). bench_json runs a step, keeps its last line of output (the
# JSON) and, when the step fails, prints the step's name, its exit code and
# its last lines of output, then exits 1.

# bench_json VAR STEP CMD...: CMD's last stdout line into VAR (the lines
# before it go to stderr, for the reader).
bench_json() {
	local __var=$1 __step=$2 __out __err __rc=0
	shift 2
	__err=$(mktemp)
	__out=$("$@" 2>"$__err") || __rc=$?
	if [ "$__rc" -ne 0 ]; then
		echo "${BENCH_NAME:-bench}: step '$__step' failed (exit $__rc):" >&2
		{ printf '%s\n' "$__out" | tail -n 4; tail -n 6 "$__err"; } | sed 's/^/  /' >&2
		rm -f "$__err"
		exit 1
	fi
	rm -f "$__err"
	printf '%s\n' "$__out" | sed '$d' >&2 # the step's table, for the reader
	printf -v "$__var" '%s' "$(printf '%s\n' "$__out" | tail -n 1)"
}

# bench_fail MESSAGE: say it and exit 1.
bench_fail() {
	echo "${BENCH_NAME:-bench}: $*" >&2
	exit 1
}

# bench_objects BYTES FRACTION OBJECT_SIZE RAW_PER_BYTE: how many objects of
# OBJECT_SIZE bytes fit in FRACTION (a decimal, 0.25) of BYTES of raw space
# when each stored byte costs RAW_PER_BYTE raw bytes (3 for size 3, 1.5 for
# EC 4+2): benchmarks size their runs by the space they have, not only by
# seconds (a fast disk fills a small OSD within a 10 s run otherwise).
bench_objects() {
	/usr/bin/python3 -c 'import sys
b, f, o, r = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
print(max(1, int(b * f / (o * r))))' "$1" "$2" "$3" "$4"
}
