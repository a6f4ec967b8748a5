#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cairn-rgw on a real local cluster, judged by what real S3 clients get:
# a. boto3 (rgw_test.py api): buckets, objects, ranges, conditions, listings,
#    DeleteObjects, auth failures, presigned URLs with curl, multipart,
#    aws-chunked bodies and checksums, copies, tags, quotas, canned ACLs and
#    anonymous access, versioning, lifecycle rules, bucket policies, CORS,
#    HTTPS (a test CA); the AWS SDK for JavaScript (rgw_js_test.mjs) at its
#    defaults (CRC32 trailers);
# b. s3cmd, awscli (/usr/bin/aws), rclone and s3fs (a FUSE mount): their
#    usual put/get/ls/sync/copy commands on a directory tree, compared byte
#    for byte;
# c. the gateway killed with -9 under 8 writers: a new one starts, every
#    acknowledged object reads back whole and every listed object reads;
# d. the collector: once the gc delay and the sweep passed, the data pool
#    holds exactly the stored versions. data (overwritten and deleted
#    instances, and the killed gateway's unfinished PUTs, are gone);
# e. cache invalidation across gateways (watch/notify);
# f. the cluster killed -9 under the gateways: SIGTERM still stops them;
# g. index shard splits under 32 writers (run before f);
# h. a splitting gateway killed with -9 mid-split: a new one resumes it, nothing lost;
# i. shard merges while keys are deleted, written and listed.
set -euo pipefail
. "$(dirname "$0")/../lib/cluster.sh"
build=${1:?usage: rgw_test.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
ctl="$build/tools/clusterctl"
rgwbin="$build/rgw/cairn-rgw"
py=/usr/bin/python3
dir=$(mktemp -d /tmp/cairn-rgw-test-XXXXXX)
rgw_pid=''
rgw_pids=''
finish() {
	local rc=$?
	# (a gateway that does not stop in 5 s is killed: none may outlive the test)
	for p in $rgw_pids $rgw_pid; do
		kill "$p" 2>/dev/null || true
		for _ in $(seq 1 50); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	cluster_finish "$rc"
}
trap finish EXIT
fail() {
	echo "FAIL: $*" >&2
	for f in "$dir"/rgw*.log "$dir"/rgw*.out "$dir"/*.err; do
		[ -e "$f" ] && { echo "== $f"; tail -n 40 "$f"; }
	done >&2
	exit 1
}

# A test CA and the gateway's certificate for 127.0.0.1 (the TLS listener).
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/ca.key" -out "$dir/ca.pem" -days 2 \
	-subj "/CN=cairn rgw test CA" >/dev/null 2>&1 || fail "openssl: the test CA"
openssl req -newkey rsa:2048 -nodes -keyout "$dir/tls.key" -out "$dir/tls.csr" \
	-subj "/CN=127.0.0.1" >/dev/null 2>&1 || fail "openssl: the request"
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$dir/tls.ext"
openssl x509 -req -in "$dir/tls.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
	-out "$dir/tls.pem" -days 2 -extfile "$dir/tls.ext" >/dev/null 2>&1 ||
	fail "openssl: the certificate"

# Start a gateway on a free port; its endpoint in $ep, its pid in $rgw_pid (with TLS: its
# HTTPS endpoint in $tls_ep).
start_rgw() {
	local n=$1
	shift
	"$rgwbin" -c "$dir/cairn.conf" --id "t$n" --rgw-listen 127.0.0.1:0 --create-pools true \
		--rgw-gc-delay 1s --rgw-pending-grace 3s --rgw-sweep-first 4s --rgw-cache-ttl 500ms "$@" \
		--log-file "$dir/rgw$n.log" --rgw-access-log "$dir/access$n.log" >"$dir/rgw$n.out" 2>"$dir/rgw$n.stderr.log" &
	rgw_pid=$!
	for _ in $(seq 1 100); do
		grep -q "serving S3 on port" "$dir/rgw$n.out" 2>/dev/null && break
		proc_gone "$rgw_pid" && fail "cairn-rgw exited: $(cat "$dir/rgw$n.stderr.log")"
		sleep 0.1
	done
	port=$(sed -n 's/^cairn-rgw: serving S3 on port \([0-9]*\)$/\1/p' "$dir/rgw$n.out")
	[ -n "$port" ] || fail "cairn-rgw did not start within 10 s"
	ep="http://127.0.0.1:$port"
	tport=$(sed -n 's/^cairn-rgw: serving S3 over TLS on port \([0-9]*\)$/\1/p' "$dir/rgw$n.out")
	tls_ep=${tport:+https://127.0.0.1:$tport}
}

"$ctl" up --dir "$dir" --mons 1 --osds 3 --osd-size 3G >"$dir/up.out" 2>&1 ||
	fail "up: $(cat "$dir/up.out")"
export CAIRN_CONF="$dir/cairn.conf" CAIRN_CTL="$ctl" RGW_CACHE_TTL=0.5
wait_clean "start"
"$ctl" pool create rgw.meta --size 3 --pg-num 8 >/dev/null
"$ctl" pool create rgw.data --size 3 --pg-num 16 >/dev/null
"$ctl" s3 user create alice --display-name "Alice A" --format json >"$dir/alice.json" ||
	fail "s3 user create"
"$ctl" s3 user create bob --format json >"$dir/bob.json"
"$ctl" s3 user create alice >/dev/null 2>&1 && fail "a second alice was created"
[ "$("$ctl" s3 user ls | tr '\n' ' ')" = "alice bob " ] || fail "s3 user ls: $("$ctl" s3 user ls)"
"$ctl" s3 key add bob --format json >"$dir/bob2.json"
"$ctl" s3 user info bob | grep -c "access key" | grep -qx 2 || fail "bob has two keys"
"$ctl" s3 key rm "$($py -c 'import json,sys; print(json.load(open(sys.argv[1]))["access_key"])' "$dir/bob2.json")" ||
	fail "s3 key rm"
"$ctl" s3 user info bob | grep -c "access key" | grep -qx 1 || fail "bob has one key left"
echo "a. cluster up; users alice and bob (keys added and removed)"

start_rgw 1 --rgw-tls-listen 127.0.0.1:0 --rgw-tls-cert "$dir/tls.pem" --rgw-tls-key "$dir/tls.key"
[ -n "$tls_ep" ] || fail "the gateway printed no TLS port"
export RGW_TLS_EP=$tls_ep RGW_TLS_CA=$dir/ca.pem
"$ctl" status | grep -q "rgw: 1 daemon" || fail "status lists no gateway: $("$ctl" status)"
timeout 300 $py "$here/rgw_test.py" "$ep" "$dir/alice.json" "$dir/bob.json" api ||
	fail "boto3 api checks"
echo "a. boto3: buckets, objects, ranges, conditions, listings, deletes, auth, presigned," \
	"multipart, aws-chunked and checksums, copies, tags, quotas, ACLs, versioning, lifecycle," \
	"policies, CORS, HTTPS: ok"
timeout 120 node "$here/rgw_js_test.mjs" "$ep" "$dir/alice.json" >"$dir/js.out" 2>"$dir/js.err" ||
	fail "the JS SDK: $(cat "$dir/js.out")"
echo "a. $(tail -1 "$dir/js.out") (the AWS SDK for JavaScript v3 at its defaults)"

# b. Other clients on one tree: 40 files of 0-300 KiB in 3 levels.
ak=$($py -c 'import json,sys; print(json.load(open(sys.argv[1]))["access_key"])' "$dir/alice.json")
sk=$($py -c 'import json,sys; print(json.load(open(sys.argv[1]))["secret_key"])' "$dir/alice.json")
mkdir -p "$dir/tree/a/b" "$dir/tree/c"
for i in $(seq 1 40); do
	sub=$([ $((i % 3)) = 0 ] && echo a/b || ([ $((i % 3)) = 1 ] && echo c || echo .))
	head -c $((i * 7919 % 300000)) /dev/urandom >"$dir/tree/$sub/file$i"
done
cat >"$dir/s3cfg" <<EOF
[default]
access_key = $ak
secret_key = $sk
host_base = 127.0.0.1:$port
host_bucket = 127.0.0.1:$port
use_https = False
signature_v2 = False
EOF
s3c() { timeout 120 s3cmd -c "$dir/s3cfg" "$@"; }
s3c mb s3://s3cmd-bkt >/dev/null || fail "s3cmd mb"
s3c sync "$dir/tree/" s3://s3cmd-bkt/tree/ >"$dir/s3cmd.err" 2>&1 || fail "s3cmd sync up"
s3c ls -r s3://s3cmd-bkt | wc -l | grep -qx 40 || fail "s3cmd ls: $(s3c ls -r s3://s3cmd-bkt | wc -l)"
s3c sync s3://s3cmd-bkt/tree/ "$dir/s3cmd-down/" >>"$dir/s3cmd.err" 2>&1 || fail "s3cmd sync down"
diff -r "$dir/tree" "$dir/s3cmd-down" || fail "s3cmd: the tree came back different"
s3c get s3://s3cmd-bkt/tree/c/file1 "$dir/one" >/dev/null 2>&1 && cmp "$dir/one" "$dir/tree/c/file1" ||
	fail "s3cmd get"
s3c cp s3://s3cmd-bkt/tree/c/file1 s3://s3cmd-bkt/copied >/dev/null 2>&1 || fail "s3cmd cp"
s3c get s3://s3cmd-bkt/copied "$dir/one.cp" >/dev/null 2>&1 && cmp "$dir/one.cp" "$dir/tree/c/file1" ||
	fail "s3cmd: the server-side copy differs"
s3c del s3://s3cmd-bkt/tree/c/file1 >/dev/null || fail "s3cmd del"
echo "b. s3cmd: mb, sync up and down, ls, get, cp (server side), del: ok"

export AWS_ACCESS_KEY_ID=$ak AWS_SECRET_ACCESS_KEY=$sk AWS_DEFAULT_REGION=us-east-1
export AWS_CONFIG_FILE=/dev/null # (its defaults: multipart past 8 MiB, 10 parts at once)
aws() { timeout 120 /usr/bin/aws --endpoint-url "$ep" "$@"; }
aws s3 mb s3://aws-bkt >/dev/null || fail "aws s3 mb"
aws s3 sync "$dir/tree" s3://aws-bkt/t >"$dir/aws.err" 2>&1 || fail "aws s3 sync up: $(tail -3 "$dir/aws.err")"
aws s3 sync s3://aws-bkt/t "$dir/aws-down" >>"$dir/aws.err" 2>&1 || fail "aws s3 sync down"
diff -r "$dir/tree" "$dir/aws-down" || fail "aws: the tree came back different"
aws s3 ls s3://aws-bkt/t/a/ | grep -q "PRE b/" || fail "aws s3 ls with a delimiter"
aws s3api head-object --bucket aws-bkt --key t/c/file1 >/dev/null || fail "aws s3api head-object"
# Server-side copies: CopyObject for the tree, UploadPartCopy (8 MiB ranges) for 40 MiB.
aws s3 cp --recursive s3://aws-bkt/t s3://aws-bkt/t2 >>"$dir/aws.err" 2>&1 || fail "aws s3 cp s3 to s3"
head -c $((40 << 20)) /dev/urandom >"$dir/mid"
aws s3 cp "$dir/mid" s3://aws-bkt/mid >>"$dir/aws.err" 2>&1 || fail "aws s3 cp of 40 MiB up"
aws s3 cp s3://aws-bkt/mid s3://aws-bkt/mid2 >>"$dir/aws.err" 2>&1 || fail "aws s3 cp: a multipart copy"
aws s3 sync s3://aws-bkt/t2 "$dir/aws-down2" >>"$dir/aws.err" 2>&1 || fail "aws s3 sync down (copies)"
aws s3 cp s3://aws-bkt/mid2 "$dir/mid.down" >>"$dir/aws.err" 2>&1 || fail "aws s3 cp down (a copy)"
diff -r "$dir/tree" "$dir/aws-down2" && cmp "$dir/mid" "$dir/mid.down" || fail "aws: the copies differ"
etag=$(aws s3api head-object --bucket aws-bkt --key mid2 --query ETag --output text)
[[ "$etag" == *-5'"' ]] || fail "aws: the multipart copy's ETag is $etag"
aws s3 rm s3://aws-bkt/mid >/dev/null && aws s3 rm s3://aws-bkt/mid2 >/dev/null || fail "aws s3 rm"
rm -f "$dir/mid" "$dir/mid.down" # (d counts instances per listed object: no parts then)
# A checkpoint-sized file through aws's multipart upload and download (1 GiB; 256 MiB
# under the sanitizers, which slow every byte).
big_mb=1024
grep -q '^CAIRN_ASAN:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null && big_mb=256
head -c $((big_mb << 20)) /dev/urandom >"$dir/big"
t0=$(date +%s.%N)
aws s3 cp "$dir/big" s3://aws-bkt/big >>"$dir/aws.err" 2>&1 || fail "aws s3 cp of $big_mb MiB up"
t1=$(date +%s.%N)
aws s3 cp s3://aws-bkt/big "$dir/big.down" >>"$dir/aws.err" 2>&1 || fail "aws s3 cp down"
t2=$(date +%s.%N)
cmp "$dir/big" "$dir/big.down" || fail "aws: the $big_mb MiB file came back different"
etag=$(aws s3api head-object --bucket aws-bkt --key big --query ETag --output text)
[[ "$etag" == *-$(( (big_mb + 7) / 8 ))'"' ]] || fail "aws: the multipart ETag is $etag"
aws s3 rm s3://aws-bkt/big >/dev/null || fail "aws s3 rm"
rm -f "$dir/big" "$dir/big.down"
# Versioning through the CLI: two versions of one key, the older one fetched by id.
aws s3 mb s3://aws-ver >/dev/null || fail "aws s3 mb aws-ver"
aws s3api put-bucket-versioning --bucket aws-ver --versioning-configuration Status=Enabled ||
	fail "aws s3api put-bucket-versioning"
echo one >"$dir/v1" && echo two >"$dir/v2"
aws s3 cp "$dir/v1" s3://aws-ver/f >/dev/null && aws s3 cp "$dir/v2" s3://aws-ver/f >/dev/null ||
	fail "aws s3 cp into a versioned bucket"
old=$(aws s3api list-object-versions --bucket aws-ver --query 'Versions[?IsLatest==`false`].VersionId' \
	--output text)
aws s3api get-object --bucket aws-ver --key f --version-id "$old" "$dir/v1.down" >/dev/null &&
	cmp -s "$dir/v1" "$dir/v1.down" || fail "aws s3api get-object --version-id $old"
echo "b. awscli: mb, sync up and down, ls, head-object, server-side copies (tree, 40 MiB" \
	"by parts), versioning, $big_mb MiB multipart up" \
	"($(awk "BEGIN { print $t1 - $t0 }") s) and down ($(awk "BEGIN { print $t2 - $t1 }") s): ok"

export RCLONE_CONFIG_C_TYPE=s3 RCLONE_CONFIG_C_PROVIDER=Other RCLONE_CONFIG_C_ENDPOINT=$ep
export RCLONE_CONFIG_C_ACCESS_KEY_ID=$ak RCLONE_CONFIG_C_SECRET_ACCESS_KEY=$sk
export RCLONE_CONFIG_C_FORCE_PATH_STYLE=true
# (aws-sdk-go refuses a custom CA bundle with rclone's transport: none is needed here)
rcl() { timeout 120 env -u AWS_CA_BUNDLE rclone --config /dev/null "$@"; }
rcl mkdir c:rclone-bkt || fail "rclone mkdir"
rcl copy "$dir/tree" c:rclone-bkt/t >"$dir/rclone.err" 2>&1 || fail "rclone copy up: $(tail -3 "$dir/rclone.err")"
rcl copy c:rclone-bkt/t "$dir/rclone-down" >>"$dir/rclone.err" 2>&1 || fail "rclone copy down"
diff -r "$dir/tree" "$dir/rclone-down" || fail "rclone: the tree came back different"
rcl check "$dir/tree" c:rclone-bkt/t >>"$dir/rclone.err" 2>&1 || fail "rclone check"
rcl copyto c:rclone-bkt/t/c/file1 c:rclone-bkt/copied >>"$dir/rclone.err" 2>&1 || fail "rclone copyto"
rcl cat c:rclone-bkt/copied | cmp - "$dir/tree/c/file1" || fail "rclone: the server-side copy differs"
echo "b. rclone: mkdir, copy up and down, check, copyto (server side): ok"

# s3fs: a FUSE mount of a bucket (as root, as CI runs): the tree copied in, read
# back through the mount, a file renamed (CopyObject + DELETE), a directory made
# and removed; then the keys as another client sees them.
aws s3 mb s3://s3fs-bkt >/dev/null || fail "aws s3 mb s3fs-bkt"
printf '%s:%s\n' "$ak" "$sk" >"$dir/s3fs.passwd"
chmod 600 "$dir/s3fs.passwd"
mkdir -p "$dir/s3fs"
s3fs_up=0
timeout 60 s3fs s3fs-bkt "$dir/s3fs" -o passwd_file="$dir/s3fs.passwd" -o url="$ep" \
	-o use_path_request_style -o endpoint=us-east-1 -o dbglevel=warn \
	-o logfile="$dir/s3fs.log" -o stat_cache_expire=1 || fail "s3fs: the mount failed"
for _ in $(seq 1 50); do
	mountpoint -q "$dir/s3fs" && { s3fs_up=1; break; }
	sleep 0.1
done
[ "$s3fs_up" = 1 ] || fail "s3fs: no mount at $dir/s3fs"
s3fs_down() { mountpoint -q "$dir/s3fs" && { umount "$dir/s3fs" || umount -l "$dir/s3fs"; } || true; }
trap 'rc=$?; s3fs_down; (exit $rc); finish' EXIT
timeout 120 cp -r "$dir/tree/." "$dir/s3fs/" || fail "s3fs: cp -r into the mount"
timeout 60 diff -r "$dir/tree" "$dir/s3fs" || fail "s3fs: the tree reads back different"
timeout 30 mv "$dir/s3fs/c/file1" "$dir/s3fs/c/renamed" || fail "s3fs: mv"
timeout 30 mkdir "$dir/s3fs/newdir" && timeout 30 rmdir "$dir/s3fs/newdir" || fail "s3fs: mkdir, rmdir"
timeout 30 cmp "$dir/s3fs/c/renamed" "$dir/tree/c/file1" || fail "s3fs: the renamed file differs"
s3fs_down
aws s3api head-object --bucket s3fs-bkt --key c/renamed >/dev/null || fail "s3fs: no key c/renamed"
aws s3api head-object --bucket s3fs-bkt --key c/file1 >/dev/null 2>&1 && fail "s3fs: c/file1 is still there"
n=$(aws s3 ls --recursive s3://s3fs-bkt | grep -vc '/$' || true)
[ "$n" = 40 ] || fail "s3fs: $n files in the bucket, want 40"
echo "b. s3fs: mount, cp -r, diff -r through the mount, mv, mkdir/rmdir, umount: ok"

# c. kill -9 under load, with one PUT of 9 MiB stopped after 8.5 MiB (its two
# data objects written, never committed: the sweep must find them).
timeout 120 $py "$here/rgw_test.py" "$ep" "$dir/alice.json" "$dir/bob.json" partial \
	>"$dir/partial.out" 2>&1 &
partial_pid=$!
for _ in $(seq 1 100); do grep -q "partial: sent" "$dir/partial.out" && break; sleep 0.1; done
grep -q "partial: sent" "$dir/partial.out" || fail "the partial PUT: $(cat "$dir/partial.out")"
timeout 120 $py "$here/rgw_test.py" "$ep" "$dir/alice.json" "$dir/bob.json" load "$dir/acked" \
	>"$dir/load.out" 2>&1 &
load_pid=$!
sleep 4
kill -9 "$rgw_pid"
wait "$rgw_pid" 2>/dev/null || true
wait "$load_pid" || fail "the load: $(tail "$dir/load.out")"
wait "$partial_pid" || true
n=$(wc -l <"$dir/acked")
[ "$n" -gt 50 ] || fail "only $n PUTs were acknowledged before the kill"
start_rgw 2 --rgw-lc-day 1s # (its sweep applies bucket lc-gw's rule: section d)
timeout 300 $py "$here/rgw_test.py" "$ep" "$dir/alice.json" "$dir/bob.json" verify "$dir/acked" \
	>"$dir/verify.out" 2>&1 || fail "verify: $(tail "$dir/verify.out")"
echo "c. $(grep '^verify:' "$dir/verify.out") (gateway killed with -9 under 8 writers)"

# d. The collector: the data pool holds the data of the stored versions only (every
# listed object, and the older versions rgw_test.py's versioning() left). First the
# second gateway's sweep applies bucket lc-gw's lifecycle rule (expire after a day of 1 s).
for _ in $(seq 1 30); do
	aws s3api head-object --bucket lc-gw --key old >/dev/null 2>&1 || break
	sleep 1
done
aws s3api head-object --bucket lc-gw --key old >/dev/null 2>&1 &&
	fail "the gateway's sweep did not apply bucket lc-gw's lifecycle rule"
grep -q "lifecycle: bucket lc-gw: 1 objects expired" "$dir/rgw2.log" ||
	fail "the gateway's sweep did not report lc-gw's expiration"
keys=$(timeout 120 $py - "$ep" "$dir/alice.json" <<'EOF'
import sys, json, boto3
from botocore.config import Config
k = json.load(open(sys.argv[2]))
s3 = boto3.client("s3", endpoint_url=sys.argv[1], aws_access_key_id=k["access_key"],
                  aws_secret_access_key=k["secret_key"], region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}))
n = 0
for b in s3.list_buckets()["Buckets"]:
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=b["Name"]):
        n += len(page.get("Versions", []))
print(n)
EOF
)
heads=''
for _ in $(seq 1 30); do
	heads=$("$ctl" obj ls rgw.data --all-namespaces | grep -c '\.0000000000000000$' || true)
	[ "$heads" = "$keys" ] && break
	sleep 1
done
[ "$heads" = "$keys" ] || fail "the data pool holds $heads instances for $keys stored versions"
grep -q "a PUT left pending.*9437184 bytes" "$dir/rgw2.log" ||
	fail "the sweep did not report the unfinished 9 MiB PUT"
grep -q "a part left pending.*9437184 bytes" "$dir/rgw2.log" ||
	fail "the sweep did not report the unfinished 9 MiB part"
echo "d. collector: $heads instances in the data pool for $keys stored versions;" \
	"lifecycle applied by the sweep"

# e. Cache invalidation: a third gateway caching for 10 minutes sees at once what the
# second changes (versioning, a policy) and what clusterctl changes (a quota, a key).
near=$ep
rgw_pids=$rgw_pid
start_rgw 3 --rgw-cache-ttl 600s
timeout 120 $py "$here/rgw_test.py" "$near" "$dir/alice.json" "$dir/bob.json" invalidate "$ep" \
	>"$dir/invalidate.out" 2>&1 || fail "invalidation: $(tail "$dir/invalidate.out")"
echo "e. invalidation: versioning, a policy, a bucket quota and a removed key hold at once" \
	"on a gateway whose cache lasts 10 minutes"

# g. Index shard splits under load: two gateways splitting shards past 500 objects (their
# map changes race), 32 writers on them (6,000 keys, about 20 splits; 2,500 under the
# sanitizers; RGW_SPLIT_KEYS sets it), each PUT tried once.
split_keys=${RGW_SPLIT_KEYS:-6000}
grep -q '^CAIRN_ASAN:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null && split_keys=${RGW_SPLIT_KEYS:-2500}
keep_pid=$rgw_pid
start_rgw 8 --rgw-index-shard-max 500 --rgw-split-pause 300ms
pid8=$rgw_pid ep8=$ep
rgw_pids="$rgw_pids $pid8"
start_rgw 4 --rgw-index-shard-max 500 --rgw-split-pause 300ms
RGW_SPLIT_EP2=$ep8 timeout 600 $py "$here/rgw_test.py" "$ep" "$dir/alice.json" "$dir/bob.json" \
	splits "$split_keys" >"$dir/splits.out" 2>&1 || fail "splits: $(tail "$dir/splits.out")"
kill "$pid8"
wait "$pid8" || fail "the second splitting gateway stopped with exit code $?"
rgw_pids=${rgw_pids% $pid8}
nsplit=$(( $(grep -c "splits at a key" "$dir/rgw4.log" || true) +
	$(grep -c "splits at a key" "$dir/rgw8.log" || true) ))
echo "g. $(grep '^splits:' "$dir/splits.out" | head -1); $nsplit splits; every key read" \
	"back and listed in order; DeleteBucket across the shards"
kill "$rgw_pid"
wait "$rgw_pid" || fail "the splitting gateway stopped with exit code $?"

# h. A splitting gateway killed with -9 mid-split (right after it froze its third shard),
# 16 writers at it; a new gateway resumes the split (once the dead one's lock ran out) and
# loses nothing: every acknowledged key reads back, each key listed once, 1,600 more PUTs
# over the key space succeed, the counters come to the keys.
# (a second or more per step; no sweep, which would split the other buckets too)
start_rgw 5 --rgw-index-shard-max 300 --rgw-split-pause 1s --rgw-sweep-first 1h
timeout 120 $py "$here/rgw_test.py" "$ep" "$dir/alice.json" "$dir/bob.json" load \
	"$dir/acked-split" splitkill >"$dir/loadsplit.out" 2>&1 &
load_pid=$!
for _ in $(seq 1 900); do
	[ "$(grep -c "bucket splitkill: .* splits at a key" "$dir/rgw5.log" || true)" -ge 3 ] && break
	sleep 0.1
done
kill -9 "$rgw_pid"
wait "$rgw_pid" 2>/dev/null || true
wait "$load_pid" || fail "the splitting load: $(tail "$dir/loadsplit.out")"
[ "$(grep -c "bucket splitkill: .* splits at a key" "$dir/rgw5.log" || true)" -ge 3 ] ||
	fail "the gateway did not split three shards within 90 s"
start_rgw 6 --rgw-index-shard-max 300 --rgw-split-pause 300ms --rgw-sweep-every 2s
timeout 300 $py "$here/rgw_test.py" "$ep" "$dir/alice.json" "$dir/bob.json" splitverify \
	"$dir/acked-split" >"$dir/splitverify.out" 2>&1 || fail "splitverify: $(tail "$dir/splitverify.out")"
# (resumed by a PUT that met the frozen shard, or by the sweep once the lock ran out)
for _ in $(seq 1 300); do grep -q "bucket splitkill: resuming the split" "$dir/rgw6.log" && break; sleep 0.1; done
resumed=$(grep -c "bucket splitkill: resuming the split" "$dir/rgw6.log" || true)
[ "$resumed" -ge 1 ] || fail "no split was resumed within 30 s of the checks"
echo "h. $(grep '^splitverify:' "$dir/splitverify.out"); $resumed split(s) resumed by the new gateway"
kill "$rgw_pid"
wait "$rgw_pid" || fail "the gateway that resumed the split stopped with exit code $?"
rgw_pid=$keep_pid

# i. Index shard merges: a gateway splitting past 400 objects and merging neighbours of
# 100 at most (sweeping every second): 4,000 keys, then 95% deleted while 8 writers and a
# lister keep at it (2,000 keys under the sanitizers; RGW_MERGE_KEYS sets it).
merge_keys=${RGW_MERGE_KEYS:-4000}
grep -q '^CAIRN_ASAN:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null && merge_keys=${RGW_MERGE_KEYS:-2000}
keep_pid=$rgw_pid
start_rgw 7 --rgw-index-shard-max 400 --rgw-split-pause 200ms --rgw-sweep-every 1s \
	--rgw-shard-retire-grace 1s --rgw-test-resend-commits true
# (multipart completions whose commit is answered as refused after it applied)
timeout 120 $py "$here/rgw_test.py" "$ep" "$dir/alice.json" "$dir/bob.json" resends \
	>"$dir/resends.out" 2>&1 || fail "resends: $(tail "$dir/resends.out")"
nres=$(grep -c "answered as done$" "$dir/rgw7.log" || true)
[ "$nres" -ge 6 ] || fail "resends: $nres completions met their own applied commit (want 6)"
echo "i. $(grep '^resends:' "$dir/resends.out")"
# (first a bucket quota on a bucket split into several shards)
timeout 300 $py "$here/rgw_test.py" "$ep" "$dir/alice.json" "$dir/bob.json" quota_split \
	>"$dir/quota_split.out" 2>&1 || fail "quota_split: $(tail "$dir/quota_split.out")"
echo "i. $(grep '^quota_split:' "$dir/quota_split.out")"
timeout 600 $py "$here/rgw_test.py" "$ep" "$dir/alice.json" "$dir/bob.json" merges "$merge_keys" \
	>"$dir/merges.out" 2>&1 || fail "merges: $(tail "$dir/merges.out")"
nmerge=$(grep -c "a merge$" "$dir/rgw7.log" || true)
[ "$nmerge" -ge 1 ] || fail "no shard merged"
echo "i. $(grep '^merges:' "$dir/merges.out" | head -1); $nmerge merges"
echo "i. $(grep '^merges: the retired' "$dir/merges.out" | sed 's/^merges: //')"
kill "$rgw_pid"
wait "$rgw_pid" || fail "the merging gateway stopped with exit code $?"
rgw_pid=$keep_pid
# (DeleteBucket on a bucket noting 2,500 retired shards, more than a page of notes, on a
# gateway whose grace is the default hour: nothing but DeleteBucket removes them)
start_rgw 9
RGW_RETIRED_FILL="$build/tests/integration/rgw_retired_fill" timeout 120 $py "$here/rgw_test.py" \
	"$ep" "$dir/alice.json" "$dir/bob.json" notes 2500 >"$dir/notes.out" 2>&1 ||
	fail "notes: $(tail "$dir/notes.out")"
echo "i. $(grep '^notes:' "$dir/notes.out")"
kill "$rgw_pid"
wait "$rgw_pid" || fail "gateway 9 stopped with exit code $?"
rgw_pid=$keep_pid

# f. The cluster gone: every mon and OSD killed with -9, then SIGTERM to both
# gateways (the second one's sweep is due within 4 s of its start, so its
# collector has ops to cancel). Each must exit, cleanly, within 60 s (before,
# rgw_stop waited forever on the sweep's lock op; now the bound is the
# service-map removal's 5 s and the unwatch's 10 s).
for f in "$dir"/mon.*.pid "$dir"/osd.*.pid; do kill -9 "$(cat "$f")" 2>/dev/null || true; done
t0=$(date +%s%N)
for p in $rgw_pids $rgw_pid; do kill "$p"; done
for p in $rgw_pids $rgw_pid; do
	for _ in $(seq 1 600); do proc_gone "$p" && break; sleep 0.1; done
	proc_gone "$p" || fail "cairn-rgw (pid $p) still runs 60 s after SIGTERM with the cluster gone"
	wait "$p" || fail "cairn-rgw (pid $p) stopped with the cluster gone: exit code $?"
done
echo "f. every mon and OSD killed: both gateways exited $(( ($(date +%s%N) - t0) / 1000000 )) ms" \
	"after SIGTERM"
rgw_pids='' rgw_pid=''
echo "PASS"
