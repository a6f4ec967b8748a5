#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cairn-osd --mkfs / --fsck [--deep] from the command line: made, checked,
# refused twice, clear errors for a file that is not a store, and serving
# refused without the monitors' addresses.
set -euo pipefail
build=${1:?usage: osd_tool_test.sh BUILD_DIR}
osd="$build/osd/cairn-osd"
dir=$(mktemp -d /tmp/cairn-osd-tool-XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

fallocate -l 64M "$dir/block"
"$osd" --mkfs --osd-data "$dir/block" --fsid f1 --id 0 --log-level err >/dev/null || fail "mkfs"
"$osd" --fsck --deep --osd-data "$dir/block" --log-level err | grep -q "0 errors" || fail "fsck"
if "$osd" --mkfs --osd-data "$dir/block" --log-level err 2>"$dir/err"; then fail "second mkfs"; fi
grep -q "there is a store on it already" "$dir/err" || fail "mkfs message: $(cat "$dir/err")"
fallocate -l 16M "$dir/other"
if "$osd" --fsck --osd-data "$dir/other" --log-level err 2>"$dir/err"; then fail "fsck of a non-store"; fi
grep -q "cannot mount" "$dir/err" || fail "fsck message: $(cat "$dir/err")"
set +e
"$osd" --osd-data "$dir/block" --log-level err 2>"$dir/err"
rc=$?
set -e
[ $rc -eq 2 ] || fail "plain start exit $rc"
grep -q "mon_host is not set" "$dir/err" || fail "plain start message: $(cat "$dir/err")"
echo "osd_tool_test: ok"
