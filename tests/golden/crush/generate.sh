#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerate the golden mappings with Ceph's crushtool (Debian package
# ceph-base; tests never need it). Each golden comes from exactly:
#   crushtool -c MAP.txt -o MAP.bin
#   crushtool -i MAP.bin --test --show-mappings --rule R --num-rep N \
#       --min-x 0 --max-x 9999 [--weight OSD W]...
# or, for a case whose rule and num_rep are '-', crushtool's defaults (every
# rule, each from its min_size to its max_size, x 0..1023):
#   crushtool -i MAP.bin --test --show-mappings [--weight OSD W]...
# Regenerating them is its own reviewed commit.
set -euo pipefail
cd "$(dirname "$0")"
command -v crushtool >/dev/null || { echo "crushtool not installed (apt-get install ceph-base)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dpkg-query -W ceph-base >VERSION 2>/dev/null || crushtool --help 2>&1 | head -1 >VERSION
grep -v '^#' cases | while read -r golden map rule nrep weights; do
	crushtool -c "$map.txt" -o "$tmp/$map.bin"
	sel=(--rule "$rule" --num-rep "$nrep" --min-x 0 --max-x 9999)
	[ "$rule" != - ] || sel=()
	# shellcheck disable=SC2086
	crushtool -i "$tmp/$map.bin" --test --show-mappings "${sel[@]}" $weights >"$golden.golden"
	echo "$golden: $(wc -l <"$golden.golden") lines"
done
