#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Object -> PG -> OSDs goldens from Ceph's osdmaptool (Debian ceph-base; the
# tests never need it). For the hosts4x6 CRUSH map and the replicated pool 1
# ('rbd', size 3, pg_num = pgp_num = 192, hashpspool) that --createsimple
# makes, exactly:
#   crushtool -c ../crush/hosts4x6.txt -o MAP.crush
#   osdmaptool --createsimple 24 --with-default-pool --pg-bits 3 OSDMAP --clobber
#   osdmaptool OSDMAP --import-crush MAP.crush
#   osdmaptool OSDMAP --mark-up-in [--mark-out N] --test-map-pgs-dump --pool 1
#     (osdmaptool honours only the last --mark-out it is given: one per file)
#   osdmaptool OSDMAP --mark-up-in --test-map-object NAME --pool 1     (per name)
set -euo pipefail
cd "$(dirname "$0")"
command -v osdmaptool >/dev/null || { echo "osdmaptool not installed (apt-get install ceph-base)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dpkg-query -W ceph-base >VERSION
crushtool -c ../crush/hosts4x6.txt -o "$tmp/map.crush"
osdmaptool --createsimple 24 --with-default-pool --pg-bits 3 "$tmp/om" --clobber >/dev/null 2>&1
osdmaptool "$tmp/om" --import-crush "$tmp/map.crush" >/dev/null 2>&1
osdmaptool "$tmp/om" --print 2>/dev/null | grep '^pool 1' >pool
osdmaptool "$tmp/om" --mark-up-in --test-map-pgs-dump --pool 1 2>/dev/null |
	grep -E '^1\.' >pgs-all-in.golden
for out in 5 13; do
	osdmaptool "$tmp/om" --mark-up-in --mark-out "$out" --test-map-pgs-dump --pool 1 2>/dev/null |
		grep -E '^1\.' >"pgs-out-$out.golden"
done
: >objects.golden
for name in hello world rbd_data.1234.0000000000000000 rbd_header.abcdef checkpoint-000017.pt \
	dataset/shard-00042.tar "$(printf 'x%.0s' $(seq 1 40))" a ab abc abcd abcdefghijk abcdefghijkl \
	abcdefghijklm; do
	osdmaptool "$tmp/om" --mark-up-in --test-map-object "$name" --pool 1 2>/dev/null |
		grep "object '" >>objects.golden
done
wc -l *.golden
