#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Project rules clang-format cannot check: SPDX lines, no // comments, banned
# calls, and exported symbol prefixes of each library.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
mapfile -t files < <(git ls-files -co --exclude-standard '*.c' '*.h' | grep -v '^build')

for f in "${files[@]}"; do
	if ! head -n 2 "$f" | grep -q 'SPDX-License-Identifier'; then
		echo "lint: $f: missing SPDX line"
		fail=1
	fi
done

# Comments are /* */ only. Strip string literals first so "http://" does not count.
for f in "${files[@]}"; do
	if sed -E 's/"([^"\\]|\\.)*"//g' "$f" | grep -nE '(^|[^:*])//' >/tmp/lint.$$ 2>/dev/null; then
		sed "s|^|lint: $f: // comment: |" /tmp/lint.$$
		fail=1
	fi
done
rm -f /tmp/lint.$$

if grep -nE '\b(strcpy|sprintf|vsprintf|atoi|atol|strtok|gets)\s*\(' "${files[@]}"; then
	echo "lint: banned call (use snprintf, strtol/strtoul, strtok_r)"
	fail=1
fi

# Every global symbol a library defines starts with its prefix.
check_prefix() {
	local lib=$1 re=$2
	[ -f "$lib" ] || return 0
	local bad
	bad=$(nm -g --defined-only "$lib" 2>/dev/null | awk 'NF==3 && $2 ~ /[TDBR]/ {print $3}' |
		grep -vE "$re" || true)
	if [ -n "$bad" ]; then
		echo "lint: $lib exports symbols without its prefix:"
		echo "$bad" | sed 's/^/  /'
		fail=1
	fi
}
check_prefix build/common/libcairn_common.a '^(cm_|cm__)'
check_prefix build/crush/libcairn_crush.a '^(crush_|crush__)'
check_prefix build/mon/libcairn_mon.a '^(mon_|mon__)'
check_prefix build/os/libcairn_os.a '^(os_|os__)'
check_prefix build/osd/libcairn_osd.a '^(osd_|osd__)'
check_prefix build/libclient/libcairn.a '^(cairn_)'

# The daemons' and tools' own objects too: main, g_ globals and their
# component's prefix only (their logic lives in the libraries). Objects of
# sources that no longer exist (a stale build) are skipped.
check_objs() {
	local dir=$1 re=$2 o src bad
	[ -d "$dir" ] || return 0
	while IFS= read -r o; do
		src=${o#"$dir"/}
		src=${src%.o}
		[ -f "$3/$src" ] || continue
		bad=$(nm -g --defined-only "$o" 2>/dev/null | awk 'NF==3 && $2 ~ /[TDBR]/ {print $3}' |
			grep -vE "^(main|g_[a-z0-9_]+)$" | grep -vE "$re" || true)
		if [ -n "$bad" ]; then
			echo "lint: $o exports symbols without its prefix:"
			echo "$bad" | sed 's/^/  /'
			fail=1
		fi
	done < <(find "$dir" -name '*.o')
}
check_objs build/osd/CMakeFiles/cairn-osd.dir '^(osd_|osd__)' osd
check_objs build/mon/CMakeFiles/cairn-mon.dir '^(mon_|mon__)' mon
check_objs build/tools/CMakeFiles/clusterctl.dir '^(ctl_|ctl__)' tools
check_objs build/tools/CMakeFiles/cairn-echod.dir '^(echo_)' tools
check_objs build/tools/CMakeFiles/cairn-ping.dir '^(echo_)' tools
check_objs build/tools/CMakeFiles/cairn_echo_common.dir '^(echo_)' tools

[ $fail -eq 0 ] && echo "lint: clean"
exit $fail
