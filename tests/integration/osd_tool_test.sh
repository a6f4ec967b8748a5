#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cairn-osd --mkfs / --fsck [--deep] from the command line: made, checked,
# refused twice, clear errors for a file that is not a store, serving
# refused without the monitors' addresses, and made and checked on a raw
# block device (a loop device).
set -euo pipefail
build=${1:?usage: osd_tool_test.sh BUILD_DIR}
osd="$build/osd/cairn-osd"
dir=$(mktemp -d /tmp/cairn-osd-tool-XXXXXX)
loop=
trap '[ -z "$loop" ] || losetup -d "$loop"; rm -rf "$dir"' EXIT
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
# On a raw block device (a loop device over a file): the metadata elsewhere.
fallocate -l 96M "$dir/loopfile"
if loop=$(losetup --direct-io=on -f --show "$dir/loopfile" 2>/dev/null) ||
	loop=$(losetup -f --show "$dir/loopfile" 2>/dev/null); then
	# Its metadata cannot default to "<device>.db" (in /dev, a tmpfs): refused.
	if "$osd" --mkfs --osd-data "$loop" --log-level err 2>"$dir/err"; then
		fail "mkfs on $loop without --osd-db"
	fi
	grep -q "is a block device: give its metadata a place of its own" "$dir/err" ||
		fail "mkfs on a device without --osd-db: $(cat "$dir/err")"
	[ ! -e "$loop.db" ] || fail "$loop.db was made"
	"$osd" --mkfs --osd-data "$loop" --osd-db "$dir/loop.db" --fsid f1 --id 1 --log-level err \
		>/dev/null || fail "mkfs on $loop"
	"$osd" --fsck --deep --osd-data "$loop" --osd-db "$dir/loop.db" --log-level err |
		grep -q "0 errors" || fail "fsck on $loop"
else
	loop=
	echo "SKIPPED: osd_tool_test: no loop device ($(id -u) is not root, or no loop driver): the block device part"
	exit 77
fi
echo "osd_tool_test: ok"
