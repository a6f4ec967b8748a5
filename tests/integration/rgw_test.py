#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""cairn-rgw against boto3 (Debian's python3-boto3): what a data pipeline's
S3 calls need, each judged by what the client gets back.

usage: rgw_test.py ENDPOINT KEYS_JSON OTHER_KEYS_JSON PHASE
PHASE: api (the S3 calls), load OUT (write until killed, logging each
acknowledged PUT to OUT), verify IN (every acknowledged PUT of IN reads back
whole; every listed key reads).
"""
import base64
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import boto3
import botocore
from botocore.config import Config

endpoint, keys_file, other_file, phase = sys.argv[1:5]
keys = json.load(open(keys_file))
other = json.load(open(other_file))


def client(k, secret=None, at=None):
    return boto3.client(
        "s3", endpoint_url=at or endpoint, aws_access_key_id=k["access_key"],
        aws_secret_access_key=secret or k["secret_key"], region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      signature_version="s3v4",
                      connect_timeout=10, read_timeout=60))


s3 = client(keys)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def code_of(fn):
    try:
        fn()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    return None


def api():
    # Buckets: naming, ownership, listing.
    check(code_of(lambda: s3.create_bucket(Bucket="ab")) == "InvalidBucketName", "short name")
    check(code_of(lambda: s3.create_bucket(Bucket="Upper")) == "InvalidBucketName", "upper case")
    s3.create_bucket(Bucket="data")
    check(code_of(lambda: s3.create_bucket(Bucket="data")) == "BucketAlreadyOwnedByYou",
          "second create by the owner")
    check(code_of(lambda: client(other).create_bucket(Bucket="data")) == "BucketAlreadyExists",
          "create of a taken name")
    s3.create_bucket(Bucket="other-bucket",
                     CreateBucketConfiguration={"LocationConstraint": "us-east-1"})
    check(code_of(lambda: s3.create_bucket(
        Bucket="nowhere", CreateBucketConfiguration={"LocationConstraint": "mars-1"}))
        == "InvalidLocationConstraint", "location constraint")
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    check(names == ["data", "other-bucket"], "list buckets: %s" % names)
    check(s3.head_bucket(Bucket="data")["ResponseMetadata"]["HTTPStatusCode"] == 200, "head bucket")
    check(code_of(lambda: s3.head_bucket(Bucket="missing-bucket")) in ("404", "NoSuchBucket"),
          "head of a missing bucket")
    check(s3.get_bucket_location(Bucket="data").get("LocationConstraint") in (None, ""),
          "location")
    # Auth: a wrong secret, an unknown key, someone else's bucket.
    check(code_of(lambda: client(keys, "x" * 40).list_objects_v2(Bucket="data"))
          == "SignatureDoesNotMatch", "wrong secret")
    check(code_of(lambda: client({"access_key": "CRNNOSUCHKEY00000000", "secret_key": "y" * 40})
                  .list_buckets()) == "InvalidAccessKeyId", "unknown key")
    check(code_of(lambda: client(other).get_object(Bucket="data", Key="x")) == "AccessDenied",
          "another user's bucket")
    check(code_of(lambda: client(keys, "x" * 40).put_object(Bucket="data", Key="evil",
                                                            Body=b"x")) ==
          "SignatureDoesNotMatch", "a PUT with a wrong signature")
    check(code_of(lambda: s3.head_object(Bucket="data", Key="evil")) in ("404", "NoSuchKey"),
          "a refused PUT wrote nothing")

    # Objects: small, empty, several data objects; metadata; digests.
    small = b"hello, cairn"
    r = s3.put_object(Bucket="data", Key="small.txt", Body=small, ContentType="text/plain",
                      Metadata={"color": "blue"}, CacheControl="no-cache")
    check(r["ETag"] == '"%s"' % hashlib.md5(small).hexdigest(), "ETag is the MD5")
    g = s3.get_object(Bucket="data", Key="small.txt")
    check(g["Body"].read() == small, "small read back")
    check(g["ContentType"] == "text/plain", "content type")
    check(g["Metadata"] == {"color": "blue"}, "user metadata: %s" % g["Metadata"])
    check(g.get("CacheControl") == "no-cache", "cache-control")
    s3.put_object(Bucket="data", Key="empty", Body=b"")
    check(s3.get_object(Bucket="data", Key="empty")["Body"].read() == b"", "empty object")
    big = os.urandom(13 * 1024 * 1024 + 7)
    s3.put_object(Bucket="data", Key="big/bin", Body=big)
    check(s3.get_object(Bucket="data", Key="big/bin")["Body"].read() == big, "13 MiB read back")
    h = s3.head_object(Bucket="data", Key="big/bin")
    check(h["ContentLength"] == len(big), "head size")
    check(code_of(lambda: s3.put_object(Bucket="data", Key="bad-md5", Body=b"abc",
                                        ContentMD5="AAAAAAAAAAAAAAAAAAAAAA==")) == "BadDigest",
          "Content-MD5 mismatch")
    check(code_of(lambda: s3.head_object(Bucket="data", Key="bad-md5")) in ("404", "NoSuchKey"),
          "a PUT with a bad digest wrote nothing")
    # Overwrite: the new bytes, whole.
    s3.put_object(Bucket="data", Key="small.txt", Body=b"second version")
    check(s3.get_object(Bucket="data", Key="small.txt")["Body"].read() == b"second version",
          "overwrite")

    # Ranges.
    def rng(r):
        return s3.get_object(Bucket="data", Key="big/bin", Range=r)
    g = rng("bytes=4194300-4194310")
    check(g["Body"].read() == big[4194300:4194311], "range across data objects")
    check(g["ContentRange"] == "bytes 4194300-4194310/%d" % len(big), "content-range")
    check(rng("bytes=-100")["Body"].read() == big[-100:], "suffix range")
    check(rng("bytes=%d-" % (len(big) - 5))["Body"].read() == big[-5:], "open-ended range")
    check(code_of(lambda: rng("bytes=%d-" % len(big))) == "InvalidRange", "unsatisfiable range")

    # Conditions.
    etag = s3.head_object(Bucket="data", Key="big/bin")["ETag"]
    check(code_of(lambda: s3.get_object(Bucket="data", Key="big/bin", IfMatch='"nope"'))
          == "PreconditionFailed", "If-Match")
    check(code_of(lambda: s3.get_object(Bucket="data", Key="big/bin", IfNoneMatch=etag))
          == "304", "If-None-Match")
    check(s3.get_object(Bucket="data", Key="big/bin", IfMatch=etag, Range="bytes=0-0")
          ["Body"].read() == big[:1], "If-Match holds")

    def add_inm(request, **kw):
        request.headers["If-None-Match"] = "*"
    s3.meta.events.register("before-sign.s3.PutObject", add_inm)
    try:
        check(code_of(lambda: s3.put_object(Bucket="data", Key="small.txt", Body=b"x"))
              == "PreconditionFailed", "If-None-Match: * on an existing key")
        s3.put_object(Bucket="data", Key="fresh", Body=b"first")
    finally:
        s3.meta.events.unregister("before-sign.s3.PutObject", add_inm)
    check(s3.get_object(Bucket="data", Key="small.txt")["Body"].read() == b"second version",
          "a refused conditional PUT changed nothing")

    # Listing: 2 levels of prefixes, pages, markers, url encoding, byte order.
    s3.create_bucket(Bucket="listing")
    want = []
    for d in range(5):
        for f in range(60):
            want.append("dir%d/f%03d" % (d, f))
    want += ["top1", "top2", "with space", "zz\u00e9t\u00e9", "zz\u00ff"]
    def put(k):
        s3.put_object(Bucket="listing", Key=k, Body=k.encode())
    ts = [threading.Thread(target=lambda ks=want[i::8]: [put(k) for k in ks]) for i in range(8)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    want.sort(key=lambda k: k.encode())
    got = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket="listing",
                                                             PaginationConfig={"PageSize": 37}):
        got += [o["Key"] for o in page.get("Contents", [])]
    check(got == want, "v2 pages of 37: %d of %d keys, in order: %s" % (len(got), len(want),
                                                                         got == sorted(got)))
    got = []
    for page in s3.get_paginator("list_objects").paginate(Bucket="listing",
                                                          PaginationConfig={"PageSize": 50}):
        got += [o["Key"] for o in page.get("Contents", [])]
    check(got == want, "v1 pages of 50")
    r = s3.list_objects_v2(Bucket="listing", Delimiter="/")
    check([p["Prefix"] for p in r.get("CommonPrefixes", [])] ==
          ["dir%d/" % d for d in range(5)], "common prefixes")
    check([o["Key"] for o in r.get("Contents", [])] == [k for k in want if "/" not in k],
          "keys beside the prefixes")
    r = s3.list_objects_v2(Bucket="listing", Delimiter="/", MaxKeys=3)
    check(r["IsTruncated"] and r["KeyCount"] == 3, "a truncated page of prefixes")
    r2 = s3.list_objects_v2(Bucket="listing", Delimiter="/", MaxKeys=3,
                            ContinuationToken=r["NextContinuationToken"])
    check([p["Prefix"] for p in r2.get("CommonPrefixes", [])] == ["dir3/", "dir4/"],
          "the next page goes on after the prefix: %s" % r2.get("CommonPrefixes"))
    r = s3.list_objects_v2(Bucket="listing", Prefix="dir2/f05")
    check([o["Key"] for o in r["Contents"]] == ["dir2/f05%d" % i for i in range(10)], "prefix")
    r = s3.list_objects_v2(Bucket="listing", StartAfter="top1")
    check([o["Key"] for o in r["Contents"]] == [k for k in want if k.encode() > b"top1"],
          "start-after")
    r = s3.list_objects(Bucket="listing", Delimiter="/", Marker="dir1/")
    check([p["Prefix"] for p in r.get("CommonPrefixes", [])] == ["dir2/", "dir3/", "dir4/"],
          "v1 marker at a prefix")
    r = s3.list_objects_v2(Bucket="listing", Prefix="with")
    check(r["Contents"][0]["Key"] == "with space" and r["Contents"][0]["Size"] == 10,
          "url-encoded key decoded by the client")
    check(s3.list_objects_v2(Bucket="listing", MaxKeys=0)["KeyCount"] == 0, "max-keys 0")
    v = s3.list_object_versions(Bucket="listing", Prefix="top")
    check([x["Key"] for x in v["Versions"]] == ["top1", "top2"] and
          v["Versions"][0]["VersionId"] == "null", "versions of an unversioned bucket")

    # DeleteObjects, then an empty bucket goes.
    dirs = [k for k in want if k.startswith("dir")]
    r = s3.delete_objects(Bucket="listing", Delete={"Objects": [{"Key": k} for k in dirs]})
    check(len(r.get("Deleted", [])) == len(dirs) and not r.get("Errors"), "delete objects")
    r = s3.delete_objects(Bucket="listing", Delete={"Objects": [{"Key": "top1"}, {"Key": "nope"}],
                                                    "Quiet": True})
    check(not r.get("Deleted") and not r.get("Errors"), "quiet delete")
    left = [o["Key"] for o in s3.list_objects_v2(Bucket="listing")["Contents"]]
    check(left == [k for k in want if not k.startswith("dir") and k != "top1"],
          "what is left: %s" % left)
    check(code_of(lambda: s3.delete_bucket(Bucket="listing")) == "BucketNotEmpty",
          "a bucket with keys stays")
    for k in left:
        s3.delete_object(Bucket="listing", Key=k)
    s3.delete_object(Bucket="listing", Key="never-there")
    s3.delete_bucket(Bucket="listing")
    check(code_of(lambda: s3.list_objects_v2(Bucket="listing")) == "NoSuchBucket",
          "the deleted bucket is gone")
    s3.create_bucket(Bucket="listing")
    check(s3.list_objects_v2(Bucket="listing")["KeyCount"] == 0,
          "a re-created bucket starts empty")
    s3.delete_bucket(Bucket="listing")

    # Presigned URLs with a plain HTTP client.
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "data", "Key": "big/bin"},
                                    ExpiresIn=300)
    out = subprocess.run(["curl", "-sS", "-f", url], capture_output=True)
    check(out.returncode == 0 and out.stdout == big, "presigned GET with curl")
    bad = url.replace("X-Amz-Signature=", "X-Amz-Signature=0")
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", bad[:-1]],
                         capture_output=True, text=True)
    check(out.stdout == "403", "a tampered presigned URL: %s" % out.stdout)
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "data", "Key": "small.txt"},
                                    ExpiresIn=1)
    time.sleep(2)
    out = subprocess.run(["curl", "-s", url], capture_output=True, text=True)
    check("Request has expired" in out.stdout, "an expired presigned URL")
    url = s3.generate_presigned_url("put_object", Params={"Bucket": "data", "Key": "via-curl"},
                                    ExpiresIn=300)
    out = subprocess.run(["curl", "-sS", "-X", "PUT", "--data-binary", "from curl", url],
                         capture_output=True)
    check(out.returncode == 0 and code_of(lambda: s3.head_object(Bucket="data", Key="via-curl"))
          is None and s3.get_object(Bucket="data", Key="via-curl")["Body"].read()
          == b"from curl", "presigned PUT with curl: %s %s" % (out.stdout, out.stderr))
    # Anonymous: refused.
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                          endpoint + "/data/small.txt"], capture_output=True, text=True)
    check(out.stdout == "403", "anonymous GET")
    multipart()
    mp_checksums()
    streaming()
    copy()
    tagging()
    quotas()
    acls()
    contention()
    etags_in_lanes()
    versioning()
    lifecycle()
    bucket_tags()
    policies()
    cors()
    tls()


def multipart():
    """Initiate, parts (one uploaded twice), list, complete with checks, ranges, abort."""
    MiB = 1 << 20
    s3.create_bucket(Bucket="mpu")
    up = s3.create_multipart_upload(Bucket="mpu", Key="ckpt/a.bin", ContentType="x/ckpt",
                                    Metadata={"step": "100"})["UploadId"]
    bodies = [os.urandom(5 * MiB + 7), os.urandom(5 * MiB), os.urandom(1234)]
    etags = [s3.upload_part(Bucket="mpu", Key="ckpt/a.bin", UploadId=up, PartNumber=i + 1,
                            Body=b)["ETag"] for i, b in enumerate(bodies)]
    check(etags[0] == '"%s"' % hashlib.md5(bodies[0]).hexdigest(), "a part's ETag is its MD5")
    bodies[1] = os.urandom(6 * MiB)  # part 2 again: the later one counts
    etags[1] = s3.upload_part(Bucket="mpu", Key="ckpt/a.bin", UploadId=up, PartNumber=2,
                              Body=bodies[1])["ETag"]
    ups = s3.list_multipart_uploads(Bucket="mpu").get("Uploads", [])
    check([(u["Key"], u["UploadId"]) for u in ups] == [("ckpt/a.bin", up)],
          "ListMultipartUploads: %s" % ups)
    parts = s3.list_parts(Bucket="mpu", Key="ckpt/a.bin", UploadId=up)["Parts"]
    check([(p["PartNumber"], p["Size"], p["ETag"]) for p in parts] ==
          [(i + 1, len(b), etags[i]) for i, b in enumerate(bodies)], "ListParts: %s" % parts)
    page = s3.list_parts(Bucket="mpu", Key="ckpt/a.bin", UploadId=up, MaxParts=2)
    check(page["IsTruncated"] and [p["PartNumber"] for p in page["Parts"]] == [1, 2] and
          page["NextPartNumberMarker"] == 2, "ListParts paged")
    check(code_of(lambda: s3.upload_part(Bucket="mpu", Key="ckpt/other", UploadId=up,
                                         PartNumber=1, Body=b"x")) == "NoSuchUpload",
          "a part for another key's upload")
    check(code_of(lambda: s3.delete_bucket(Bucket="mpu")) == "BucketNotEmpty",
          "a bucket with an upload in progress is not deleted")
    whole = [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]
    bad = [dict(p) for p in whole]
    bad[2]["ETag"] = '"%s"' % ("0" * 32)
    check(code_of(lambda: s3.complete_multipart_upload(
        Bucket="mpu", Key="ckpt/a.bin", UploadId=up, MultipartUpload={"Parts": bad}))
        == "InvalidPart", "complete with a wrong ETag")
    check(code_of(lambda: s3.complete_multipart_upload(
        Bucket="mpu", Key="ckpt/a.bin", UploadId=up,
        MultipartUpload={"Parts": [whole[1], whole[0]]})) == "InvalidPartOrder",
        "complete with parts out of order")
    check(code_of(lambda: s3.complete_multipart_upload(
        Bucket="mpu", Key="ckpt/a.bin", UploadId=up,
        MultipartUpload={"Parts": [whole[2], {"PartNumber": 4, "ETag": etags[2]}]}))
        in ("InvalidPart", "EntityTooSmall"), "complete with a small part first")
    # (a failed completion leaves the upload usable)
    r = s3.complete_multipart_upload(Bucket="mpu", Key="ckpt/a.bin", UploadId=up,
                                     MultipartUpload={"Parts": whole})
    want = '"%s-3"' % hashlib.md5(b"".join(hashlib.md5(b).digest() for b in bodies)).hexdigest()
    check(r["ETag"] == want, "md5-of-md5s ETag: %s, want %s" % (r["ETag"], want))
    data = b"".join(bodies)
    o = s3.get_object(Bucket="mpu", Key="ckpt/a.bin")
    check(o["Body"].read() == data and o["ContentType"] == "x/ckpt" and
          o["Metadata"] == {"step": "100"} and o["ETag"] == want, "GET of a multipart object")
    for lo, hi in ((0, 10), (5 * MiB, 5 * MiB + 100), (4 * MiB - 3, 12 * MiB), (len(data) - 5,
                                                                              len(data) - 1)):
        got = s3.get_object(Bucket="mpu", Key="ckpt/a.bin",
                            Range="bytes=%d-%d" % (lo, hi))["Body"].read()
        check(got == data[lo:hi + 1], "a range across parts: %d-%d" % (lo, hi))
    # GET/HEAD ?partNumber: one part's bytes and the parts' count.
    off = 0
    for i, b in enumerate(bodies):
        o = s3.get_object(Bucket="mpu", Key="ckpt/a.bin", PartNumber=i + 1)
        check(o["Body"].read() == b and o.get("PartsCount") == 3 and
              o["ContentRange"] == "bytes %d-%d/%d" % (off, off + len(b) - 1, len(data)),
              "GET of part %d: %s" % (i + 1, o.get("ContentRange")))
        off += len(b)
    h = s3.head_object(Bucket="mpu", Key="ckpt/a.bin", PartNumber=2)
    check(h["ContentLength"] == len(bodies[1]) and h.get("PartsCount") == 3,
          "HEAD of part 2: %s %s" % (h["ContentLength"], h.get("PartsCount")))
    check(code_of(lambda: s3.get_object(Bucket="mpu", Key="ckpt/a.bin", PartNumber=4))
          == "InvalidPartNumber", "a part number past the parts")
    check(code_of(lambda: s3.get_object(Bucket="mpu", Key="ckpt/a.bin", PartNumber=1,
                                        Range="bytes=0-1")) == "InvalidRequest",
          "a part number and a range")
    check(s3.list_multipart_uploads(Bucket="mpu").get("Uploads", []) == [],
          "no upload listed after the completion")
    check(code_of(lambda: s3.upload_part(Bucket="mpu", Key="ckpt/a.bin", UploadId=up,
                                         PartNumber=4, Body=b"late")) == "NoSuchUpload",
          "a part for a completed upload")
    # Abort: the upload and its parts go.
    up2 = s3.create_multipart_upload(Bucket="mpu", Key="gone")["UploadId"]
    s3.upload_part(Bucket="mpu", Key="gone", UploadId=up2, PartNumber=1, Body=b"x" * 1000)
    s3.abort_multipart_upload(Bucket="mpu", Key="gone", UploadId=up2)
    check(code_of(lambda: s3.list_parts(Bucket="mpu", Key="gone", UploadId=up2))
          == "NoSuchUpload", "ListParts after the abort")
    check(code_of(lambda: s3.abort_multipart_upload(Bucket="mpu", Key="gone", UploadId=up2))
          == "NoSuchUpload", "a second abort")
    # Overwrite the multipart object with a plain one, then delete: the collector
    # takes the manifest and every part (the count in rgw_test.sh d sees it).
    s3.put_object(Bucket="mpu", Key="ckpt/a.bin", Body=b"small now")
    check(s3.get_object(Bucket="mpu", Key="ckpt/a.bin")["Body"].read() == b"small now",
          "a plain PUT over a multipart object")
    check(s3.get_object(Bucket="mpu", Key="ckpt/a.bin", PartNumber=1)["Body"].read()
          == b"small now", "part 1 of a plain object is all of it")
    check(code_of(lambda: s3.get_object(Bucket="mpu", Key="ckpt/a.bin", PartNumber=2))
          == "InvalidPartNumber", "part 2 of a plain object")
    s3.delete_object(Bucket="mpu", Key="ckpt/a.bin")
    s3.delete_bucket(Bucket="mpu")


def mp_checksums():
    """Multipart with CRC32 and SHA256 checksums: each part's kept and listed, the completion
    checks those the client names, and the object carries S3's composite "<sum>-N"."""
    import base64
    import zlib
    MiB = 1 << 20
    b = "mpck"
    s3.create_bucket(Bucket=b)
    for alg in ("CRC32", "SHA256"):
        key = "obj-" + alg
        up = s3.create_multipart_upload(Bucket=b, Key=key, ChecksumAlgorithm=alg)["UploadId"]
        bodies = [os.urandom(5 * MiB), os.urandom(1000)]
        parts = []
        for i, body in enumerate(bodies):
            r = s3.upload_part(Bucket=b, Key=key, UploadId=up, PartNumber=i + 1, Body=body,
                               ChecksumAlgorithm=alg)
            parts.append({"PartNumber": i + 1, "ETag": r["ETag"],
                          "Checksum" + alg: r.get("Checksum" + alg)})
        if alg == "CRC32":
            raws = [zlib.crc32(x).to_bytes(4, "big") for x in bodies]
            whole = zlib.crc32(b"".join(raws)).to_bytes(4, "big")
        else:
            raws = [hashlib.sha256(x).digest() for x in bodies]
            whole = hashlib.sha256(b"".join(raws)).digest()
        want = [base64.b64encode(x).decode() for x in raws]
        check([p["Checksum" + alg] for p in parts] == want,
              "%s: the parts' checksums: %s" % (alg, [p["Checksum" + alg] for p in parts]))
        listed = s3.list_parts(Bucket=b, Key=key, UploadId=up)["Parts"]
        check([p.get("Checksum" + alg) for p in listed] == want,
              "%s: ListParts shows them: %s" % (alg, listed))
        bad = [dict(p) for p in parts]
        bad[1]["Checksum" + alg] = want[0]
        check(code_of(lambda: s3.complete_multipart_upload(
            Bucket=b, Key=key, UploadId=up, MultipartUpload={"Parts": bad})) == "InvalidPart",
            "%s: a completion naming a wrong part checksum" % alg)
        r = s3.complete_multipart_upload(Bucket=b, Key=key, UploadId=up,
                                         MultipartUpload={"Parts": parts})
        composite = "%s-2" % base64.b64encode(whole).decode()
        check(r.get("Checksum" + alg) == composite,
              "%s: the completion's composite checksum %s, want %s" %
              (alg, r.get("Checksum" + alg), composite))
        h = s3.head_object(Bucket=b, Key=key, ChecksumMode="ENABLED")
        check(h.get("Checksum" + alg) == composite,
              "%s: HEAD returns the composite: %s" % (alg, h.get("Checksum" + alg)))
        o = s3.get_object(Bucket=b, Key=key, ChecksumMode="ENABLED")
        check(o["Body"].read() == b"".join(bodies), "%s: GET reads it whole" % alg)
        s3.delete_object(Bucket=b, Key=key)
    s3.delete_bucket(Bucket=b)


def copy():
    """CopyObject (directives, conditions, across buckets, from a multipart source) and
    UploadPartCopy (ranges), each copy read back."""
    MiB = 1 << 20
    s3.create_bucket(Bucket="cp-a")
    s3.create_bucket(Bucket="cp-b")
    small = b"copy me " * 1000
    put = s3.put_object(Bucket="cp-a", Key="src", Body=small, ContentType="text/x-src",
                        Metadata={"origin": "a"}, ChecksumAlgorithm="SHA256")
    r = s3.copy_object(Bucket="cp-a", Key="dst", CopySource={"Bucket": "cp-a", "Key": "src"})
    check(r["CopyObjectResult"]["ETag"] == put["ETag"], "a copy keeps the ETag")
    o = s3.get_object(Bucket="cp-a", Key="dst", ChecksumMode="ENABLED")
    check(o["Body"].read() == small and o["ContentType"] == "text/x-src" and
          o["Metadata"] == {"origin": "a"} and o.get("ChecksumSHA256") == put["ChecksumSHA256"],
          "COPY: bytes, metadata and checksum: %s" % o["ResponseMetadata"]["HTTPHeaders"])
    s3.copy_object(Bucket="cp-b", Key="d/x y+z", CopySource="cp-a/src",
                   MetadataDirective="REPLACE", Metadata={"origin": "b"},
                   ContentType="text/x-dst")
    o = s3.get_object(Bucket="cp-b", Key="d/x y+z")
    check(o["Body"].read() == small and o["Metadata"] == {"origin": "b"} and
          o["ContentType"] == "text/x-dst", "REPLACE across buckets, to an odd key")
    s3.copy_object(Bucket="cp-a", Key="src2", CopySource={"Bucket": "cp-b", "Key": "d/x y+z"})
    check(s3.get_object(Bucket="cp-a", Key="src2")["Body"].read() == small,
          "a copy from an odd key (URL-encoded source)")
    check(code_of(lambda: s3.copy_object(Bucket="cp-a", Key="src", CopySource="cp-a/src"))
          == "InvalidRequest", "a copy onto itself without REPLACE")
    s3.copy_object(Bucket="cp-a", Key="src", CopySource="cp-a/src",
                   MetadataDirective="REPLACE", Metadata={"origin": "again"})
    check(s3.head_object(Bucket="cp-a", Key="src")["Metadata"] == {"origin": "again"},
          "a copy onto itself with REPLACE changes the metadata")
    old = "Mon, 01 Jan 2001 00:00:00 GMT"
    future = "Fri, 01 Jan 2100 00:00:00 GMT"
    for what, kw in (("if-match", {"CopySourceIfMatch": '"0123"'}),
                     ("if-none-match", {"CopySourceIfNoneMatch": put["ETag"]}),
                     ("if-modified-since", {"CopySourceIfModifiedSince": future}),
                     ("if-unmodified-since", {"CopySourceIfUnmodifiedSince": old})):
        check(code_of(lambda: s3.copy_object(Bucket="cp-a", Key="cond", CopySource="cp-a/src",
                                             **kw)) == "PreconditionFailed",
              "x-amz-copy-source-%s failing" % what)
    check(code_of(lambda: s3.head_object(Bucket="cp-a", Key="cond")) == "404",
          "a failed copy condition writes nothing")
    s3.copy_object(Bucket="cp-a", Key="cond", CopySource="cp-a/src",
                   CopySourceIfMatch=put["ETag"], CopySourceIfUnmodifiedSince=old)
    check(s3.get_object(Bucket="cp-a", Key="cond")["Body"].read() == small,
          "if-match holding (if-unmodified-since then ignored, as S3)")
    check(code_of(lambda: s3.copy_object(Bucket="cp-a", Key="n", CopySource="cp-a/none"))
          == "NoSuchKey", "a missing source key")
    check(code_of(lambda: s3.copy_object(Bucket="cp-a", Key="n", CopySource="cp-none/x"))
          == "NoSuchBucket", "a missing source bucket")
    check(code_of(lambda: s3.copy_object(Bucket="cp-a", Key="n", CopySource={
        "Bucket": "cp-a", "Key": "src", "VersionId": "nope"})) == "InvalidArgument",
        "a version id on an unversioned source")
    bob = client(other)
    bob.create_bucket(Bucket="cp-bob")
    bob.put_object(Bucket="cp-bob", Key="secret", Body=b"bob's")
    check(code_of(lambda: s3.copy_object(Bucket="cp-a", Key="n", CopySource="cp-bob/secret"))
          == "AccessDenied", "a copy from another user's bucket")
    check(code_of(lambda: bob.copy_object(Bucket="cp-bob", Key="n", CopySource="cp-a/src"))
          == "AccessDenied", "a copy from another user's bucket into ones own")
    # Large sources: a plain 9 MiB object and a multipart one (5 MiB + 7, 3 MiB).
    plain = os.urandom(9 * MiB + 11)
    s3.put_object(Bucket="cp-a", Key="plain", Body=plain)
    up = s3.create_multipart_upload(Bucket="cp-a", Key="mp")["UploadId"]
    mps = [os.urandom(5 * MiB + 7), os.urandom(3 * MiB)]
    tags = [s3.upload_part(Bucket="cp-a", Key="mp", UploadId=up, PartNumber=i + 1,
                           Body=b)["ETag"] for i, b in enumerate(mps)]
    s3.complete_multipart_upload(Bucket="cp-a", Key="mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": t} for i, t in enumerate(tags)]})
    mpdata = b"".join(mps)
    r = s3.copy_object(Bucket="cp-b", Key="mp-copy", CopySource="cp-a/mp")
    check(s3.get_object(Bucket="cp-b", Key="mp-copy")["Body"].read() == mpdata and
          r["CopyObjectResult"]["ETag"] == '"%s"' % hashlib.md5(mpdata).hexdigest(),
          "a copy of a multipart object (a plain object, ETag its MD5)")
    s3.copy_object(Bucket="cp-b", Key="plain-copy", CopySource="cp-a/plain")
    check(s3.get_object(Bucket="cp-b", Key="plain-copy")["Body"].read() == plain,
          "a 9 MiB copy")
    # UploadPartCopy: ranges of both, across the multipart source's part boundary.
    up = s3.create_multipart_upload(Bucket="cp-b", Key="joined")["UploadId"]
    r1 = s3.upload_part_copy(Bucket="cp-b", Key="joined", UploadId=up, PartNumber=1,
                             CopySource="cp-a/plain", CopySourceRange="bytes=7-%d" % (6 * MiB))
    lo, hi = 2 * MiB + 3, 8 * MiB + 5  # (within part 1, then across into part 2)
    r2 = s3.upload_part_copy(Bucket="cp-b", Key="joined", UploadId=up, PartNumber=2,
                             CopySource="cp-a/mp", CopySourceRange="bytes=%d-%d" % (lo, hi))
    r3 = s3.upload_part_copy(Bucket="cp-b", Key="joined", UploadId=up, PartNumber=3,
                             CopySource="cp-a/src")
    want = [plain[7:6 * MiB + 1], mpdata[lo:hi + 1], small]
    got = [r["CopyPartResult"]["ETag"] for r in (r1, r2, r3)]
    check(got == ['"%s"' % hashlib.md5(w).hexdigest() for w in want],
          "UploadPartCopy ETags: %s" % got)
    check(code_of(lambda: s3.upload_part_copy(
        Bucket="cp-b", Key="joined", UploadId=up, PartNumber=4, CopySource="cp-a/src",
        CopySourceRange="bytes=0-%d" % len(small))) == "InvalidArgument",
        "UploadPartCopy past the source's end")
    check(code_of(lambda: s3.upload_part_copy(
        Bucket="cp-b", Key="other", UploadId=up, PartNumber=4, CopySource="cp-a/src"))
        == "NoSuchUpload", "UploadPartCopy to another key's upload")
    s3.complete_multipart_upload(Bucket="cp-b", Key="joined", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": t} for i, t in enumerate(got)]})
    check(s3.get_object(Bucket="cp-b", Key="joined")["Body"].read() == b"".join(want),
          "an object joined from copied parts")
    for b in ("cp-a", "cp-b"):
        for o in s3.list_objects_v2(Bucket=b).get("Contents", []):
            s3.delete_object(Bucket=b, Key=o["Key"])
        s3.delete_bucket(Bucket=b)
    bob.delete_object(Bucket="cp-bob", Key="secret")
    bob.delete_bucket(Bucket="cp-bob")


def tagging():
    """Object tags: on PUT, Get/Put/DeleteObjectTagging, the count on GET, through copies
    and multipart uploads; S3's limits."""
    s3.create_bucket(Bucket="tags")
    s3.put_object(Bucket="tags", Key="t", Body=b"x", Tagging="team=vision&note=a%20b+c")
    ts = s3.get_object_tagging(Bucket="tags", Key="t")["TagSet"]
    check(ts == [{"Key": "team", "Value": "vision"}, {"Key": "note", "Value": "a b c"}],
          "tags from x-amz-tagging: %s" % ts)
    check(s3.get_object(Bucket="tags", Key="t").get("TagCount") == 2, "x-amz-tagging-count")
    s3.put_object_tagging(Bucket="tags", Key="t", Tagging={"TagSet": [
        {"Key": "k<&>", "Value": "v\u00e9"}]})
    ts = s3.get_object_tagging(Bucket="tags", Key="t")["TagSet"]
    check(ts == [{"Key": "k<&>", "Value": "v\u00e9"}], "PutObjectTagging replaces: %s" % ts)
    check(s3.get_object(Bucket="tags", Key="t")["Body"].read() == b"x",
          "tagging leaves the bytes")
    many = [{"Key": "k%d" % i, "Value": "v"} for i in range(11)]
    check(code_of(lambda: s3.put_object_tagging(Bucket="tags", Key="t",
                                                Tagging={"TagSet": many})) == "BadRequest",
          "11 tags refused")
    check(code_of(lambda: s3.put_object_tagging(Bucket="tags", Key="t", Tagging={"TagSet": [
        {"Key": "a", "Value": "1"}, {"Key": "a", "Value": "2"}]})) == "InvalidTag",
        "a key twice refused")
    check(code_of(lambda: s3.put_object(Bucket="tags", Key="u", Body=b"",
                                        Tagging="k=" + "v" * 257)) == "InvalidTag",
          "a 257-character value refused")
    check(code_of(lambda: s3.head_object(Bucket="tags", Key="u")) == "404",
          "a refused tag set writes nothing")
    check(code_of(lambda: s3.get_object_tagging(Bucket="tags", Key="none")) == "NoSuchKey",
          "tags of a missing key")
    s3.copy_object(Bucket="tags", Key="c1", CopySource="tags/t")
    check(s3.get_object_tagging(Bucket="tags", Key="c1")["TagSet"] == ts, "a copy keeps tags")
    s3.copy_object(Bucket="tags", Key="c2", CopySource="tags/t", TaggingDirective="REPLACE",
                   Tagging="new=1")
    check(s3.get_object_tagging(Bucket="tags", Key="c2")["TagSet"] ==
          [{"Key": "new", "Value": "1"}], "TaggingDirective REPLACE")
    s3.delete_object_tagging(Bucket="tags", Key="t")
    check(s3.get_object_tagging(Bucket="tags", Key="t")["TagSet"] == [] and
          "TagCount" not in s3.get_object(Bucket="tags", Key="t"), "DeleteObjectTagging")
    up = s3.create_multipart_upload(Bucket="tags", Key="m", Tagging="ckpt=yes")["UploadId"]
    e = s3.upload_part(Bucket="tags", Key="m", UploadId=up, PartNumber=1, Body=b"p")["ETag"]
    s3.complete_multipart_upload(Bucket="tags", Key="m", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e}]})
    check(s3.get_object_tagging(Bucket="tags", Key="m")["TagSet"] ==
          [{"Key": "ckpt", "Value": "yes"}], "tags given at CreateMultipartUpload")
    for k in ("t", "c1", "c2", "m"):
        s3.delete_object(Bucket="tags", Key=k)
    s3.delete_bucket(Bucket="tags")


def ctl(*args):
    """clusterctl (rgw_test.sh exports CAIRN_CTL and CAIRN_CONF)."""
    out = subprocess.run([os.environ["CAIRN_CTL"], "--format", "json", *args], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else None


cache_ttl = float(os.environ.get("RGW_CACHE_TTL", "2")) + 0.3  # (the gateway's caches)


def quotas():
    """Bucket quotas (exact: the index's counters move with the entries) and user quotas
    (reserved on the user's usage counter), objects and bytes, as clients see them."""
    s3.create_bucket(Bucket="quota-b")
    ctl("s3", "bucket", "quota", "quota-b", "--max-bytes", "10000", "--max-objects", "3")
    time.sleep(cache_ttl)
    for i in range(3):
        s3.put_object(Bucket="quota-b", Key="k%d" % i, Body=b"x" * 100)
    check(code_of(lambda: s3.put_object(Bucket="quota-b", Key="k3", Body=b"x"))
          == "QuotaExceeded", "a 4th object past a 3-object bucket quota")
    s3.put_object(Bucket="quota-b", Key="k0", Body=b"y" * 9000)  # (an overwrite: 9200 bytes)
    check(code_of(lambda: s3.put_object(Bucket="quota-b", Key="k1", Body=b"z" * 1000))
          == "QuotaExceeded", "an overwrite past the byte quota")
    check(s3.get_object(Bucket="quota-b", Key="k1")["Body"].read() == b"x" * 100,
          "a refused overwrite leaves the old object")
    check(code_of(lambda: s3.copy_object(Bucket="quota-b", Key="k9", CopySource="quota-b/k2"))
          == "QuotaExceeded", "a copy past the quota")
    s3.delete_object(Bucket="quota-b", Key="k2")
    s3.put_object(Bucket="quota-b", Key="k3", Body=b"x" * 100)
    st = ctl("s3", "bucket", "stats", "quota-b")
    listed = s3.list_objects_v2(Bucket="quota-b")["Contents"]
    check((st["objects"], st["bytes"]) == (len(listed), sum(o["Size"] for o in listed)),
          "bucket stats match the listing: %s" % st)
    # The user's quota, across its buckets and through multipart uploads.
    bob = client(other)
    for b in ("quota-u1", "quota-u2"):
        bob.create_bucket(Bucket=b)
    bob.put_object(Bucket="quota-u1", Key="before", Body=b"1" * 10)
    ctl("s3", "user", "quota", "bob", "--max-objects", "3", "--max-bytes", "1M")
    time.sleep(cache_ttl)
    check(ctl("s3", "user", "stats", "bob")["objects"] == 1, "user stats counts what was there")
    bob.put_object(Bucket="quota-u2", Key="a", Body=b"2" * 10)
    check(code_of(lambda: bob.put_object(Bucket="quota-u1", Key="big", Body=b"3" * (1 << 20)))
          == "QuotaExceeded", "a PUT past the user's byte quota")
    up = bob.create_multipart_upload(Bucket="quota-u2", Key="mp")["UploadId"]
    e = bob.upload_part(Bucket="quota-u2", Key="mp", UploadId=up, PartNumber=1,
                        Body=b"4" * 100)["ETag"]
    bob.put_object(Bucket="quota-u1", Key="third", Body=b"5")
    check(code_of(lambda: bob.complete_multipart_upload(
        Bucket="quota-u2", Key="mp", UploadId=up,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})) == "QuotaExceeded",
        "a completion past the user's object quota")
    bob.delete_object(Bucket="quota-u1", Key="third")
    bob.complete_multipart_upload(Bucket="quota-u2", Key="mp", UploadId=up,
                                  MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
    check(code_of(lambda: bob.put_object(Bucket="quota-u2", Key="b", Body=b"6"))
          == "QuotaExceeded", "a 4th object of the user")
    check(ctl("s3", "user", "stats", "bob")["objects"] == 3, "user stats after the refusals")
    ctl("s3", "user", "quota", "bob")
    time.sleep(cache_ttl)
    bob.put_object(Bucket="quota-u2", Key="b", Body=b"6")
    for b, k in (("quota-u1", "before"), ("quota-u2", "a"), ("quota-u2", "mp"),
                 ("quota-u2", "b")):
        bob.delete_object(Bucket=b, Key=k)
    for b in ("quota-u1", "quota-u2"):
        bob.delete_bucket(Bucket=b)
    for o in s3.list_objects_v2(Bucket="quota-b")["Contents"]:
        s3.delete_object(Bucket="quota-b", Key=o["Key"])
    s3.delete_bucket(Bucket="quota-b")


def acls():
    """Canned ACLs on buckets and objects; anonymous and other users get what they grant."""
    anon = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        config=Config(signature_version=botocore.UNSIGNED,
                                      s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))
    bob = client(other)
    s3.create_bucket(Bucket="acl-pub", ACL="public-read")
    s3.put_object(Bucket="acl-pub", Key="private", Body=b"mine")
    s3.put_object(Bucket="acl-pub", Key="public", Body=b"everyone's", ACL="public-read")
    keys = [o["Key"] for o in anon.list_objects_v2(Bucket="acl-pub")["Contents"]]
    check(keys == ["private", "public"], "anonymous listing of a public-read bucket: %s" % keys)
    check(anon.get_object(Bucket="acl-pub", Key="public")["Body"].read() == b"everyone's",
          "anonymous GET of a public-read object")
    check(code_of(lambda: anon.get_object(Bucket="acl-pub", Key="private")) == "AccessDenied",
          "anonymous GET of a private object in a public-read bucket")
    check(code_of(lambda: anon.get_object(Bucket="acl-pub", Key="none")) == "NoSuchKey",
          "anonymous GET of a missing key where listing is allowed")
    check(code_of(lambda: anon.put_object(Bucket="acl-pub", Key="x", Body=b"x"))
          == "AccessDenied", "anonymous PUT into a public-read bucket")
    out = subprocess.run(["curl", "-s", "-o", "-", "-w", " %{http_code}",
                          "%s/acl-pub/public" % endpoint], capture_output=True, text=True).stdout
    check(out == "everyone's 200", "curl GET of a public-read object: %r" % out)
    s3.create_bucket(Bucket="acl-priv")
    check(code_of(lambda: anon.list_objects_v2(Bucket="acl-priv")) == "AccessDenied",
          "anonymous listing of a private bucket")
    check(code_of(lambda: anon.get_object(Bucket="acl-priv", Key="none")) == "AccessDenied",
          "a missing key in a private bucket: AccessDenied, not NoSuchKey")
    check(code_of(lambda: bob.put_bucket_acl(Bucket="acl-priv", ACL="public-read-write"))
          == "AccessDenied", "another user's PutBucketAcl")
    s3.put_bucket_acl(Bucket="acl-priv", ACL="public-read-write")
    time.sleep(cache_ttl)  # (the gateway's bucket cache)
    grants = s3.get_bucket_acl(Bucket="acl-priv")["Grants"]
    perms = sorted((g["Grantee"].get("URI", g["Grantee"].get("ID", "")).split("/")[-1],
                    g["Permission"]) for g in grants)
    check(("AllUsers", "READ") in perms and ("AllUsers", "WRITE") in perms,
          "GetBucketAcl of public-read-write: %s" % perms)
    anon.put_object(Bucket="acl-priv", Key="dropped", Body=b"from anyone")
    check(s3.get_object(Bucket="acl-priv", Key="dropped")["Body"].read() == b"from anyone",
          "the bucket owner reads an anonymous upload")
    anon.delete_object(Bucket="acl-priv", Key="dropped")
    check(code_of(lambda: s3.head_object(Bucket="acl-priv", Key="dropped")) == "404",
          "anonymous DELETE in a public-read-write bucket")
    # Object ACLs: PutObjectAcl, GetObjectAcl, authenticated-read.
    s3.put_object_acl(Bucket="acl-pub", Key="private", ACL="authenticated-read")
    check(bob.get_object(Bucket="acl-pub", Key="private")["Body"].read() == b"mine",
          "another user reads an authenticated-read object")
    check(code_of(lambda: anon.get_object(Bucket="acl-pub", Key="private")) == "AccessDenied",
          "anonymous GET of an authenticated-read object")
    g = s3.get_object_acl(Bucket="acl-pub", Key="private")["Grants"]
    check(any(x["Grantee"].get("URI", "").endswith("AuthenticatedUsers") for x in g),
          "GetObjectAcl: %s" % g)
    check(code_of(lambda: bob.put_object_acl(Bucket="acl-pub", Key="private", ACL="public-read"))
          == "AccessDenied", "another user's PutObjectAcl")
    s3.put_object_acl(Bucket="acl-pub", Key="public", ACL="private")
    check(code_of(lambda: anon.get_object(Bucket="acl-pub", Key="public")) == "AccessDenied",
          "an object made private again")
    check(code_of(lambda: s3.put_object(Bucket="acl-pub", Key="y", Body=b"", ACL="no-such"))
          == "InvalidArgument", "an unknown canned ACL")
    for b in ("acl-pub", "acl-priv"):
        for o in s3.list_objects_v2(Bucket=b).get("Contents", []):
            s3.delete_object(Bucket=b, Key=o["Key"])
        s3.delete_bucket(Bucket=b)


def etags_in_lanes():
    """16 writers PUT objects of odd sizes at once, so their MD5s are computed side by side in
    the gateway's lanes (rgw/src/md5.c): each PUT carries its Content-MD5 (a wrong digest
    answers BadDigest) and each ETag must be the body's MD5."""
    s3.create_bucket(Bucket="lanes")
    errors = []

    def writer(w):
        c = client(keys)
        for i in range(2):
            body = os.urandom((1 << 20) * (1 + (w + i) % 4) + 977 * w + 61 * i)
            md5 = hashlib.md5(body)
            try:
                r = c.put_object(Bucket="lanes", Key="w%d.%d" % (w, i), Body=body,
                                 ContentMD5=base64.b64encode(md5.digest()).decode())
                if r["ETag"] != '"%s"' % md5.hexdigest():
                    errors.append("w%d.%d: ETag %s" % (w, i, r["ETag"]))
                c.delete_object(Bucket="lanes", Key="w%d.%d" % (w, i))
            except botocore.exceptions.ClientError as e:
                errors.append(str(e))

    ts = [threading.Thread(target=writer, args=(w,)) for w in range(16)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    check(not errors, "ETags of concurrent PUTs: %s" % errors[:3])
    s3.delete_bucket(Bucket="lanes")


def contention():
    """16 writers overwrite and delete 4 keys at once (their index ops share compound
    ops on the shard; a conflict sends each alone again): every key ends as one of the
    bodies written, the counters match the listing, and (section d) no data leaks."""
    s3.create_bucket(Bucket="contend")
    bodies = {}
    lock = threading.Lock()
    errors = []

    def writer(w):
        c = client(keys)
        for i in range(25):
            k = "k%d" % ((w + i) % 4)
            body = ("%d.%d " % (w, i)).encode() * (1 + (w * 7 + i) % 50)
            try:
                if i % 10 == 9:
                    c.delete_object(Bucket="contend", Key=k)
                else:
                    c.put_object(Bucket="contend", Key=k, Body=body)
                    with lock:
                        bodies.setdefault(k, set()).add(body)
            except botocore.exceptions.ClientError as e:
                errors.append(str(e))

    ts = [threading.Thread(target=writer, args=(w,)) for w in range(16)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    check(not errors, "contention: errors %s" % errors[:3])
    listed = s3.list_objects_v2(Bucket="contend").get("Contents", [])
    for o in listed:
        got = s3.get_object(Bucket="contend", Key=o["Key"])["Body"].read()
        check(got in bodies.get(o["Key"], ()) and len(got) == o["Size"],
              "contention: %s holds a body nobody wrote" % o["Key"])
    st = ctl("s3", "bucket", "stats", "contend")
    check((st["objects"], st["bytes"]) == (len(listed), sum(o["Size"] for o in listed)),
          "contention: the counters %s match the listing (%d)" % (st, len(listed)))


def versioning():
    """Versioned buckets: version ids, older versions by id, delete markers, null
    versions (before versioning, and while suspended), ListObjectVersions with its
    markers, copies from a version, multipart, DeleteObjects by version, and the
    usage counters covering every stored version. The bucket stays (with older
    versions) for rgw_test.sh's collector check."""
    b = "vers"
    s3.create_bucket(Bucket=b)
    check(s3.get_bucket_versioning(Bucket=b).get("Status") is None, "a new bucket is unversioned")
    s3.put_object(Bucket=b, Key="k", Body=b"null-0")  # (the null version, from before)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    check(s3.get_bucket_versioning(Bucket=b).get("Status") == "Enabled", "versioning enabled")
    v1 = s3.put_object(Bucket=b, Key="k", Body=b"v1")["VersionId"]
    v2 = s3.put_object(Bucket=b, Key="k", Body=b"v2")["VersionId"]
    check(v1 != v2 and v1 != "null", "new versions get ids: %s %s" % (v1, v2))
    g = s3.get_object(Bucket=b, Key="k")
    check(g["Body"].read() == b"v2" and g["VersionId"] == v2, "GET: the latest")
    check(s3.get_object(Bucket=b, Key="k", VersionId=v1)["Body"].read() == b"v1", "GET by id")
    check(s3.get_object(Bucket=b, Key="k", VersionId="null")["Body"].read() == b"null-0",
          "GET the null version from before versioning")
    check(s3.head_object(Bucket=b, Key="k", VersionId=v1)["ContentLength"] == 2, "HEAD by id")
    check(code_of(lambda: s3.get_object(Bucket=b, Key="k", VersionId="0" * 24))
          == "NoSuchVersion", "GET of a version that is not there")
    check(code_of(lambda: s3.get_object(Bucket=b, Key="k", VersionId="bogus"))
          == "InvalidArgument", "GET of a malformed version id")

    def versions(**kw):
        r = s3.list_object_versions(Bucket=b, **kw)
        return ([(v["Key"], v["VersionId"], v["IsLatest"]) for v in r.get("Versions", [])],
                [(d["Key"], d["VersionId"], d["IsLatest"]) for d in r.get("DeleteMarkers", [])])

    vs, dms = versions()
    check(vs == [("k", v2, True), ("k", v1, False), ("k", "null", False)] and not dms,
          "ListObjectVersions: newest first %s %s" % (vs, dms))
    # A delete marker: the key is gone for GET and listings, its versions stay.
    d = s3.delete_object(Bucket=b, Key="k")
    check(d.get("DeleteMarker") is True and d.get("VersionId") not in (None, "null"),
          "DELETE makes a delete marker: %s" % d)
    dm = d["VersionId"]
    check(code_of(lambda: s3.get_object(Bucket=b, Key="k")) == "NoSuchKey",
          "GET after the delete marker")
    check("Contents" not in s3.list_objects_v2(Bucket=b), "the listing skips a deleted key")
    check(code_of(lambda: s3.get_object(Bucket=b, Key="k", VersionId=dm)) == "MethodNotAllowed",
          "GET of a delete marker by id")
    vs, dms = versions()
    check(dms == [("k", dm, True)] and [v[1] for v in vs] == [v2, v1, "null"] and
          not any(v[2] for v in vs), "the delete marker is the latest: %s %s" % (vs, dms))
    # Removing the delete marker brings the key back; removing the latest promotes the next.
    r = s3.delete_object(Bucket=b, Key="k", VersionId=dm)
    check(r.get("DeleteMarker") is True and r.get("VersionId") == dm,
          "DELETE of the delete marker by id: %s" % r)
    check(s3.get_object(Bucket=b, Key="k")["Body"].read() == b"v2", "the key is back")
    s3.delete_object(Bucket=b, Key="k", VersionId=v2)
    g = s3.get_object(Bucket=b, Key="k")
    check(g["Body"].read() == b"v1" and g["VersionId"] == v1, "the next version takes over")
    check(code_of(lambda: s3.get_object(Bucket=b, Key="k", VersionId=v2)) == "NoSuchVersion",
          "a removed version is gone")
    # Suspended: writes make the null version, replacing the older null version.
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
    p = s3.put_object(Bucket=b, Key="k", Body=b"null-1")
    check(p.get("VersionId") == "null", "a PUT while suspended writes the null version: %s" % p)
    vs, _ = versions()
    check(vs == [("k", "null", True), ("k", v1, False)],
          "the new null version replaced the old one: %s" % vs)
    s3.put_object(Bucket=b, Key="k", Body=b"null-2")
    vs, _ = versions()
    check(vs == [("k", "null", True), ("k", v1, False)] and
          s3.get_object(Bucket=b, Key="k")["Body"].read() == b"null-2",
          "a null latest is replaced in place: %s" % vs)
    d = s3.delete_object(Bucket=b, Key="k")
    check(d.get("DeleteMarker") is True and d.get("VersionId") == "null",
          "a DELETE while suspended: a null delete marker: %s" % d)
    vs, dms = versions()
    check(vs == [("k", v1, False)] and dms == [("k", "null", True)],
          "the null delete marker replaced the null version: %s %s" % (vs, dms))
    s3.delete_object(Bucket=b, Key="k", VersionId="null")
    check(s3.get_object(Bucket=b, Key="k")["Body"].read() == b"v1",
          "removing the null delete marker brings v1 back")
    # An older null version found through its pointer: GET, copy, delete.
    s3.put_object(Bucket=b, Key="n", Body=b"n-null")
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    nv = s3.put_object(Bucket=b, Key="n", Body=b"n-new")["VersionId"]
    check(s3.get_object(Bucket=b, Key="n", VersionId="null")["Body"].read() == b"n-null",
          "GET of an older null version")
    c = s3.copy_object(Bucket=b, Key="n-copy", CopySource={"Bucket": b, "Key": "n",
                                                             "VersionId": "null"})
    check(c.get("CopySourceVersionId") == "null" and c.get("VersionId") not in (None, "null"),
          "a copy from the null version: %s" % {k: c.get(k) for k in
                                                ("CopySourceVersionId", "VersionId")})
    check(s3.get_object(Bucket=b, Key="n-copy")["Body"].read() == b"n-null", "the copy's bytes")
    s3.put_object(Bucket=b, Key="k", Body=b"v3")
    c = s3.copy_object(Bucket=b, Key="k", CopySource={"Bucket": b, "Key": "k", "VersionId": v1})
    check(s3.get_object(Bucket=b, Key="k")["Body"].read() == b"v1" and
          c["VersionId"] not in (v1, "null"), "restoring a version by copying it onto its key")
    s3.delete_object(Bucket=b, Key="n", VersionId=nv)
    vs, _ = versions(Prefix="n")
    check([v for v in vs if v[0] == "n"] == [("n", "null", True)] and
          s3.get_object(Bucket=b, Key="n")["Body"].read() == b"n-null",
          "an older null version promoted to the latest: %s" % vs)
    nv = s3.put_object(Bucket=b, Key="n", Body=b"n-new")["VersionId"]
    s3.delete_object(Bucket=b, Key="n", VersionId="null")
    vs, _ = versions(Prefix="n")
    check([v for v in vs if v[0] == "n"] == [("n", nv, True)], "the older null version removed")
    # Multipart and DeleteObjects.
    up = s3.create_multipart_upload(Bucket=b, Key="mp")["UploadId"]
    e = s3.upload_part(Bucket=b, Key="mp", UploadId=up, PartNumber=1, Body=b"m" * 100)["ETag"]
    cm = s3.complete_multipart_upload(Bucket=b, Key="mp", UploadId=up,
                                      MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
    check(cm.get("VersionId") not in (None, "null"), "a completion makes a version")
    mv2 = s3.put_object(Bucket=b, Key="mp", Body=b"after")["VersionId"]
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [
        {"Key": "mp", "VersionId": cm["VersionId"]}, {"Key": "n-copy"}]})
    ok = {(x["Key"], x.get("VersionId"), x.get("DeleteMarker")) for x in r.get("Deleted", [])}
    check(("mp", cm["VersionId"], None) in ok and any(x["Key"] == "n-copy" and
          x.get("DeleteMarker") for x in r.get("Deleted", [])) and not r.get("Errors"),
          "DeleteObjects by version and with a delete marker: %s" % r)
    check(s3.get_object(Bucket=b, Key="mp")["VersionId"] == mv2, "mp's latest stays")
    # Pages of one version each: every version once, in order, with the markers.
    for i in range(3):
        s3.put_object(Bucket=b, Key="p", Body=b"%d" % i)
    full, _ = versions()
    seen, pages = [], 0
    for page in s3.get_paginator("list_object_versions").paginate(
            Bucket=b, PaginationConfig={"PageSize": 1}):
        pages += 1
        seen += [(v["Key"], v["VersionId"], v["IsLatest"]) for v in page.get("Versions", [])]
    check(seen == full and pages >= len(full), "paged ListObjectVersions: %s vs %s" % (seen, full))
    cp = s3.list_object_versions(Bucket=b, Delimiter="/", Prefix="")
    check(all("/" not in v["Key"] for v in cp.get("Versions", [])), "versions with a delimiter")
    # The counters cover every stored version (delete markers are nothing).
    st = ctl("s3", "bucket", "stats", b)
    vs = []
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=b):
        vs += page.get("Versions", [])
    check((st["objects"], st["bytes"]) == (len(vs), sum(v["Size"] for v in vs)),
          "the counters %s match the versions (%d)" % (st, len(vs)))
    check(code_of(lambda: s3.delete_bucket(Bucket=b)) == "BucketNotEmpty",
          "a bucket with versions is not empty")
    # A versioned bucket emptied version by version can be deleted.
    b2 = "vers2"
    s3.create_bucket(Bucket=b2)
    s3.put_bucket_versioning(Bucket=b2, VersioningConfiguration={"Status": "Enabled"})
    s3.put_object(Bucket=b2, Key="x", Body=b"1")
    s3.put_object(Bucket=b2, Key="x", Body=b"2")
    s3.delete_object(Bucket=b2, Key="x")
    r = s3.list_object_versions(Bucket=b2)
    for v in r.get("Versions", []) + r.get("DeleteMarkers", []):
        s3.delete_object(Bucket=b2, Key=v["Key"], VersionId=v["VersionId"])
    check(code_of(lambda: s3.delete_bucket(Bucket=b2)) is None,
          "a versioned bucket without versions is deleted")


def lifecycle():
    """Lifecycle rules (PutBucketLifecycleConfiguration), applied by `clusterctl s3 lc run
    --day 1s` (the sweep's code, with 1-second days): current versions expire by prefix and
    by tag, incomplete uploads are aborted, older versions expire keeping the newest N, a
    lone delete marker goes, and a versioned bucket's expired latest becomes a delete
    marker. Bucket lc-gw is left for rgw_test.sh's gateway sweep (section d)."""
    b = "lc-b"
    s3.create_bucket(Bucket=b)
    for k in ("a/1", "a/2", "b/1", "b/untagged"):
        s3.put_object(Bucket=b, Key=k, Body=b"x")
    s3.put_object(Bucket=b, Key="b/tagged", Body=b"x", Tagging="exp=yes")
    up_a = s3.create_multipart_upload(Bucket=b, Key="a/mp")["UploadId"]
    s3.upload_part(Bucket=b, Key="a/mp", UploadId=up_a, PartNumber=1, Body=b"p" * 100)
    up_b = s3.create_multipart_upload(Bucket=b, Key="b/mp")["UploadId"]
    check(code_of(lambda: s3.get_bucket_lifecycle_configuration(Bucket=b))
          == "NoSuchLifecycleConfiguration", "no lifecycle configuration yet")
    rules = [
        {"ID": "a", "Filter": {"Prefix": "a/"}, "Status": "Enabled",
         "Expiration": {"Days": 2}, "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 2}},
        {"ID": "tag", "Filter": {"Tag": {"Key": "exp", "Value": "yes"}}, "Status": "Enabled",
         "Expiration": {"Days": 2}},
        {"ID": "off", "Filter": {"Prefix": "b/"}, "Status": "Disabled", "Expiration": {"Days": 1}},
    ]
    s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": rules})
    got = s3.get_bucket_lifecycle_configuration(Bucket=b)["Rules"]
    check([r["ID"] for r in got] == ["a", "tag", "off"], "the rules read back: %s" % got)
    check(code_of(lambda: s3.put_bucket_lifecycle_configuration(
        Bucket=b, LifecycleConfiguration={"Rules": [
            {"ID": "t", "Filter": {"Prefix": ""}, "Status": "Enabled",
             "Transitions": [{"Days": 1, "StorageClass": "GLACIER"}]}]}))
        == "NotImplemented", "a transition is refused")
    check(code_of(lambda: s3.put_bucket_lifecycle_configuration(
        Bucket=b, LifecycleConfiguration={"Rules": [
            {"ID": "x", "Filter": {"Prefix": ""}, "Status": "Enabled",
             "Expiration": {"Days": 0}}]})) == "MalformedXML", "Days 0 is refused")
    r = ctl("s3", "lc", "run", b, "--day", "1s")
    check(r["expired"] == 0 and r["uploads_aborted"] == 0, "nothing is old enough yet: %s" % r)
    time.sleep(3.2)  # (2 days of 1 s, the deadline rounded up to the next day as S3 does)
    r = ctl("s3", "lc", "run", b, "--day", "1s")
    left = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=b).get("Contents", []))
    check(left == ["b/1", "b/untagged"] and r["expired"] == 3,
          "expired by prefix and by tag, not by a disabled rule: %s %s" % (left, r))
    ups = [u["UploadId"] for u in s3.list_multipart_uploads(Bucket=b).get("Uploads", [])]
    check(ups == [up_b] and r["uploads_aborted"] == 1, "the old upload under a/ aborted: %s" % ups)
    s3.delete_bucket_lifecycle(Bucket=b)
    check(code_of(lambda: s3.get_bucket_lifecycle_configuration(Bucket=b))
          == "NoSuchLifecycleConfiguration", "the configuration deleted")
    s3.abort_multipart_upload(Bucket=b, Key="b/mp", UploadId=up_b)
    # Versioned: older versions (keeping the newest one), a lone delete marker, the latest.
    v = "lc-v"
    s3.create_bucket(Bucket=v)
    s3.put_bucket_versioning(Bucket=v, VersioningConfiguration={"Status": "Enabled"})
    ids = [s3.put_object(Bucket=v, Key="k", Body=b"%d" % i)["VersionId"] for i in range(3)]
    s3.put_object(Bucket=v, Key="d", Body=b"d")
    s3.delete_object(Bucket=v, Key="d")
    s3.put_object(Bucket=v, Key="e", Body=b"e")
    s3.put_bucket_lifecycle_configuration(Bucket=v, LifecycleConfiguration={"Rules": [
        {"ID": "k", "Filter": {"Prefix": "k"}, "Status": "Enabled",
         "NoncurrentVersionExpiration": {"NoncurrentDays": 1, "NewerNoncurrentVersions": 1}},
        {"ID": "d", "Filter": {"Prefix": "d"}, "Status": "Enabled",
         "Expiration": {"ExpiredObjectDeleteMarker": True},
         "NoncurrentVersionExpiration": {"NoncurrentDays": 1}},
        {"ID": "e", "Filter": {"Prefix": "e"}, "Status": "Enabled", "Expiration": {"Days": 1}},
    ]})
    time.sleep(2.2)
    ctl("s3", "lc", "run", v, "--day", "1s")
    ctl("s3", "lc", "run", v, "--day", "1s")  # (the delete marker is alone from this pass)
    r = s3.list_object_versions(Bucket=v)
    vs = [(x["Key"], x["VersionId"], x["IsLatest"]) for x in r.get("Versions", [])]
    dms = [(x["Key"], x["IsLatest"]) for x in r.get("DeleteMarkers", [])]
    check([x for x in vs if x[0] == "k"] == [("k", ids[2], True), ("k", ids[1], False)],
          "older versions expired but the newest one: %s" % vs)
    check(not [x for x in vs if x[0] == "d"] and ("d", True) not in dms,
          "d's older version and then its lone delete marker are gone: %s %s" % (vs, dms))
    check(("e", True) in dms and [x[2] for x in vs if x[0] == "e"] == [False],
          "an expired latest in a versioned bucket becomes a delete marker: %s %s" % (vs, dms))
    st = ctl("s3", "bucket", "stats", v)
    check((st["objects"], st["bytes"]) == (len(vs), sum(x["Size"] for x in r["Versions"])),
          "the counters follow the lifecycle: %s" % st)
    # For the gateway's own sweep (rgw_test.sh d): expires as soon as its day is 1 s.
    s3.create_bucket(Bucket="lc-gw")
    s3.put_object(Bucket="lc-gw", Key="old", Body=b"o")
    s3.put_bucket_lifecycle_configuration(Bucket="lc-gw", LifecycleConfiguration={"Rules": [
        {"ID": "all", "Filter": {"Prefix": ""}, "Status": "Enabled", "Expiration": {"Days": 1}}]})


def bucket_tags():
    """Bucket tagging: up to 50 tags, read back, replaced, deleted; bad sets refused."""
    b = "data"
    check(code_of(lambda: s3.get_bucket_tagging(Bucket=b)) == "NoSuchTagSet", "no bucket tags")
    tags = [{"Key": "team", "Value": "vision"}, {"Key": "cost", "Value": ""}]
    s3.put_bucket_tagging(Bucket=b, Tagging={"TagSet": tags})
    got = s3.get_bucket_tagging(Bucket=b)["TagSet"]
    check(sorted(got, key=lambda t: t["Key"]) == sorted(tags, key=lambda t: t["Key"]),
          "bucket tags read back: %s" % got)
    many = [{"Key": "k%d" % i, "Value": "v"} for i in range(50)]
    s3.put_bucket_tagging(Bucket=b, Tagging={"TagSet": many})
    check(len(s3.get_bucket_tagging(Bucket=b)["TagSet"]) == 50, "50 bucket tags")
    check(code_of(lambda: s3.put_bucket_tagging(Bucket=b, Tagging={"TagSet": many + [
        {"Key": "k50", "Value": "v"}]})) == "BadRequest", "51 bucket tags refused")
    check(code_of(lambda: s3.put_bucket_tagging(Bucket=b, Tagging={"TagSet": [
        {"Key": "a", "Value": "1"}, {"Key": "a", "Value": "2"}]})) == "InvalidTag",
        "a key twice refused")
    check(code_of(lambda: client(other).get_bucket_tagging(Bucket=b)) == "AccessDenied",
          "another user may not read the tags")
    s3.delete_bucket_tagging(Bucket=b)
    check(code_of(lambda: s3.get_bucket_tagging(Bucket=b)) == "NoSuchTagSet", "tags deleted")


def anon_client():
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        config=Config(signature_version=botocore.UNSIGNED,
                                      s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))


def policies():
    """Bucket policies: who gets what by principal, action, resource and condition; a Deny
    wins (even over the owner, who may still mend the policy); bad policies refused."""
    anon, bob = anon_client(), client(other)
    b = "pol-b"
    s3.create_bucket(Bucket=b)
    for k in ("pub/a", "priv/b", "keep/c", "del/d", "tmp/e"):
        s3.put_object(Bucket=b, Key=k, Body=k.encode())
    check(code_of(lambda: s3.get_bucket_policy(Bucket=b)) == "NoSuchBucketPolicy", "no policy")
    check(code_of(lambda: s3.get_bucket_policy_status(Bucket=b)) == "NoSuchBucketPolicy",
          "no policy: no policy status")
    arn = "arn:aws:s3:::" + b
    pol = {"Version": "2012-10-17", "Statement": [
        {"Sid": "pub", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": arn + "/pub/*"},
        {"Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam::bob:root"]},
         "Action": "s3:ListBucket", "Resource": arn,
         "Condition": {"StringLike": {"s3:prefix": "pub/*"}}},
        {"Effect": "Allow", "Principal": {"AWS": "bob"}, "Action": ["s3:PutObject",
                                                                    "s3:GetObject"],
         "Resource": arn + "/home/${aws:username}/*"},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:DeleteObject",
         "Resource": arn + "/keep/*"},
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": arn + "/priv/*", "Condition": {"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}},
        {"Effect": "Allow", "Principal": {"AWS": "bob"},
         "Action": ["s3:GetBucketPolicy", "s3:PutBucketPolicy", "s3:DeleteObject"],
         "Resource": [arn, arn + "/tmp/*"]},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObjectAcl", "Resource": arn + "/*"},
    ]}
    text = json.dumps(pol)
    check(code_of(lambda: bob.put_bucket_policy(Bucket=b, Policy=text)) == "AccessDenied",
          "another user's PutBucketPolicy")
    s3.put_bucket_policy(Bucket=b, Policy=text)
    check(json.loads(s3.get_bucket_policy(Bucket=b)["Policy"]) == pol, "GetBucketPolicy")
    check(s3.get_bucket_policy_status(Bucket=b)["PolicyStatus"]["IsPublic"], "public policy")
    check(anon.get_object(Bucket=b, Key="pub/a")["Body"].read() == b"pub/a",
          "anonymous GET allowed by the policy")
    out = subprocess.run(["curl", "-s", "-o", "-", "-w", " %{http_code}",
                          "%s/%s/pub/a" % (endpoint, b)], capture_output=True, text=True).stdout
    check(out == "pub/a 200", "curl GET allowed by the policy: %r" % out)
    check(code_of(lambda: anon.get_object(Bucket=b, Key="priv/b")) == "AccessDenied",
          "a GET whose SourceIp condition fails")
    check(code_of(lambda: anon.get_object(Bucket=b, Key="pub/none")) == "AccessDenied",
          "a missing key, to who may not list: AccessDenied")
    check(code_of(lambda: anon.put_object(Bucket=b, Key="pub/x", Body=b"x")) == "AccessDenied",
          "an action the policy does not grant")
    keys = [o["Key"] for o in bob.list_objects_v2(Bucket=b, Prefix="pub/")["Contents"]]
    check(keys == ["pub/a"], "a listing the policy's s3:prefix condition allows: %s" % keys)
    check(code_of(lambda: bob.list_objects_v2(Bucket=b)) == "AccessDenied",
          "a listing without the prefix the condition needs")
    check(code_of(lambda: bob.get_object(Bucket=b, Key="pub/zzz")) == "AccessDenied",
          "a missing key: the listing grant's prefix condition does not hold for a GET")
    bob.put_object(Bucket=b, Key="home/bob/f", Body=b"bob's")
    check(bob.get_object(Bucket=b, Key="home/bob/f")["Body"].read() == b"bob's",
          "${aws:username} in a resource")
    check(code_of(lambda: bob.put_object(Bucket=b, Key="home/alice/f", Body=b"x"))
          == "AccessDenied", "${aws:username}: another's home")
    check(code_of(lambda: s3.delete_object(Bucket=b, Key="keep/c")) == "AccessDenied",
          "a Deny binds the owner too")
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "keep/c"}, {"Key": "del/d"}]})
    check([d["Key"] for d in r.get("Deleted", [])] == ["del/d"] and
          [(e["Key"], e["Code"]) for e in r.get("Errors", [])] == [("keep/c", "AccessDenied")],
          "DeleteObjects judges each key: %s" % r)
    r = bob.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "tmp/e"}, {"Key": "priv/b"}]})
    check([d["Key"] for d in r.get("Deleted", [])] == ["tmp/e"] and
          [(e["Key"], e["Code"]) for e in r.get("Errors", [])] == [("priv/b", "AccessDenied")],
          "DeleteObjects by a user the policy lets delete tmp/* only: %s" % r)
    check(code_of(lambda: bob.get_bucket_policy(Bucket=b)) == "AccessDenied" and
          code_of(lambda: bob.put_bucket_policy(Bucket=b, Policy=text)) == "AccessDenied",
          "the policy calls are the owner's, whatever the policy allows")
    check(code_of(lambda: s3.put_object(Bucket=b, Key="acl/x", Body=b"x", ACL="public-read"))
          == "AccessDenied", "a PUT setting an ACL needs s3:PutObjectAcl (denied)")
    s3.put_object(Bucket=b, Key="acl/x", Body=b"x")
    s3.delete_object(Bucket=b, Key="acl/x")
    st, _, body = http("GET", "/%s?cors&policy" % b)
    check(st == 400 and b"InvalidRequest" in body, "two sub-resources in one request: %d" % st)
    check(code_of(lambda: s3.copy_object(Bucket="data", Key="from-keep",
                                         CopySource=b + "/keep/c")) is None,
          "copying out what a Deny on DeleteObject does not cover")
    s3.delete_object(Bucket="data", Key="from-keep")
    bad = [
        "not json",
        json.dumps({"Statement": [{"Effect": "Allow", "Principal": "*",
                                   "Action": "s3:GetObject",
                                   "Resource": "arn:aws:s3:::other-bucket/*"}]}),
        json.dumps({"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:Fly",
                                   "Resource": arn + "/*"}]}),
        json.dumps({"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                                   "Resource": arn + "/*", "Condition": {
                                       "StringEquals": {"s3:NoSuchKey": "x"}}}]}),
    ]
    for i, t in enumerate(bad):
        check(code_of(lambda: s3.put_bucket_policy(Bucket=b, Policy=t)) == "MalformedPolicy",
              "bad policy %d refused" % i)
    check(json.loads(s3.get_bucket_policy(Bucket=b)["Policy"]) == pol,
          "a refused policy changes nothing")
    # A policy that denies the owner everything from here: she still mends it.
    s3.put_bucket_policy(Bucket=b, Policy=json.dumps({"Statement": [
        {"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": [arn, arn + "/*"],
         "Condition": {"NotIpAddress": {"aws:SourceIp": "10.0.0.0/8"}}}]}))
    check(code_of(lambda: s3.get_object(Bucket=b, Key="pub/a")) == "AccessDenied",
          "a Deny of everything from loopback")
    s3.delete_bucket_policy(Bucket=b)
    check(s3.get_object(Bucket=b, Key="pub/a")["Body"].read() == b"pub/a",
          "the owner removed the policy that denied her")
    check(code_of(lambda: anon.get_object(Bucket=b, Key="pub/a")) == "AccessDenied",
          "no policy: anonymous GET refused again")
    for k in ("pub/a", "priv/b", "keep/c", "home/bob/f"):
        s3.delete_object(Bucket=b, Key=k)
    s3.delete_bucket(Bucket=b)


def http(method, path, headers=None):
    """(status, headers, body) of a raw request (no signature)."""
    req = urllib.request.Request(endpoint + path, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def cors():
    """CORS: the configuration's round trip, preflights judged by origin, method and headers,
    and the Access-Control headers on a browser's requests (errors included)."""
    b = "cors-b"
    s3.create_bucket(Bucket=b, ACL="public-read")
    s3.put_object(Bucket=b, Key="o", Body=b"cors", ACL="public-read")
    check(code_of(lambda: s3.get_bucket_cors(Bucket=b)) == "NoSuchCORSConfiguration",
          "no CORS configuration")
    pre = {"Origin": "https://app.example.com", "Access-Control-Request-Method": "PUT",
           "Access-Control-Request-Headers": "content-type, x-amz-date"}
    st, h, body = http("OPTIONS", "/%s/o" % b, pre)
    check(st == 403 and b"CORS is not enabled" in body, "a preflight without CORS: %d" % st)
    rules = [{"AllowedOrigins": ["https://app.example.com"], "AllowedMethods": ["GET", "PUT"],
              "AllowedHeaders": ["content-type", "x-amz-*"], "ExposeHeaders": ["ETag"],
              "MaxAgeSeconds": 600},
             {"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]}]
    check(code_of(lambda: s3.put_bucket_cors(Bucket=b, CORSConfiguration={"CORSRules": [
        {"AllowedOrigins": ["*"], "AllowedMethods": ["PATCH"]}]})) == "InvalidRequest",
        "an unsupported method in a rule")
    check(code_of(lambda: client(other).put_bucket_cors(
        Bucket=b, CORSConfiguration={"CORSRules": rules})) == "AccessDenied",
        "another user's PutBucketCors")
    s3.put_bucket_cors(Bucket=b, CORSConfiguration={"CORSRules": rules})
    got = s3.get_bucket_cors(Bucket=b)["CORSRules"]
    check([(r["AllowedOrigins"], sorted(r["AllowedMethods"])) for r in got] ==
          [(["https://app.example.com"], ["GET", "PUT"]), (["*"], ["GET"])],
          "GetBucketCors: %s" % got)
    st, h, _ = http("OPTIONS", "/%s/o" % b, pre)
    check(st == 200 and h.get("access-control-allow-origin") == "https://app.example.com" and
          "PUT" in h.get("access-control-allow-methods", "") and
          h.get("access-control-allow-headers") == "content-type, x-amz-date" and
          h.get("access-control-max-age") == "600" and
          h.get("access-control-expose-headers") == "ETag",
          "an allowed preflight: %d %s" % (st, h))
    st, _, _ = http("OPTIONS", "/%s/o" % b, dict(pre, Origin="https://evil.example"))
    check(st == 403, "a preflight from an origin no rule allows: %d" % st)
    st, _, _ = http("OPTIONS", "/%s/o" % b, dict(pre, **{"Access-Control-Request-Headers":
                                                        "authorization"}))
    check(st == 403, "a preflight asking for a header no rule allows: %d" % st)
    st, h, _ = http("OPTIONS", "/%s/o" % b, {"Origin": "https://x.test",
                                             "Access-Control-Request-Method": "GET"})
    check(st == 200 and h.get("access-control-allow-origin") == "*",
          "the wildcard rule: %d %s" % (st, h))
    st, _, _ = http("OPTIONS", "/%s/o" % b, {"Origin": "https://x.test"})
    check(st == 400, "a preflight without Access-Control-Request-Method: %d" % st)
    st, h, body = http("GET", "/%s/o" % b, {"Origin": "https://app.example.com"})
    check(st == 200 and body == b"cors" and
          h.get("access-control-allow-origin") == "https://app.example.com" and
          h.get("access-control-expose-headers") == "ETag",
          "a browser's GET gets the rule's headers: %s" % h)
    st, h, _ = http("GET", "/%s/none" % b, {"Origin": "https://app.example.com"})
    check(st == 404 and h.get("access-control-allow-origin") == "https://app.example.com",
          "an error answer carries the headers too: %d %s" % (st, h))
    st, h, _ = http("GET", "/%s/o" % b)
    check(st == 200 and "access-control-allow-origin" not in h, "no Origin, no CORS headers")
    s3.delete_bucket_cors(Bucket=b)
    check(code_of(lambda: s3.get_bucket_cors(Bucket=b)) == "NoSuchCORSConfiguration",
          "CORS deleted")
    st, _, _ = http("OPTIONS", "/%s/o" % b, pre)
    check(st == 403, "a preflight once CORS is deleted: %d" % st)
    s3.delete_object(Bucket=b, Key="o")
    s3.delete_bucket(Bucket=b)


def tls():
    """HTTPS on the gateway's TLS listener: boto3 verifying the test CA, objects across many
    TLS records both ways, multipart, a presigned URL with curl, aws:SecureTransport in a
    policy, and what a client that does not trust the CA or speaks plain HTTP gets."""
    tep, ca = os.environ.get("RGW_TLS_EP"), os.environ.get("RGW_TLS_CA")
    if not tep:
        check(False, "no TLS endpoint given")
        return
    ts = boto3.client(
        "s3", endpoint_url=tep, aws_access_key_id=keys["access_key"],
        aws_secret_access_key=keys["secret_key"], region_name="us-east-1", verify=ca,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      signature_version="s3v4"))
    b = "tls-b"
    ts.create_bucket(Bucket=b)
    big = os.urandom(9 << 20)
    ts.put_object(Bucket=b, Key="big", Body=big)
    check(ts.get_object(Bucket=b, Key="big")["Body"].read() == big, "9 MiB over TLS")
    check(ts.get_object(Bucket=b, Key="big", Range="bytes=5000000-5000009")["Body"].read()
          == big[5000000:5000010], "a range over TLS")
    up = ts.create_multipart_upload(Bucket=b, Key="mp")["UploadId"]
    parts = [{"PartNumber": i + 1, "ETag": ts.upload_part(
        Bucket=b, Key="mp", UploadId=up, PartNumber=i + 1,
        Body=big[i * (5 << 20):(i + 1) * (5 << 20)])["ETag"]} for i in range(2)]
    ts.complete_multipart_upload(Bucket=b, Key="mp", UploadId=up,
                                 MultipartUpload={"Parts": parts})
    check(s3.get_object(Bucket=b, Key="mp")["Body"].read() == big,
          "a multipart upload over TLS reads back over plain HTTP")
    url = ts.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "big"},
                                    ExpiresIn=300)
    out = subprocess.run(["curl", "-s", "--cacert", ca, "-o", "-", url], capture_output=True)
    check(out.returncode == 0 and out.stdout == big, "a presigned GET with curl over TLS")
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", tep + "/"], capture_output=True)
    check(out.returncode != 0, "curl without the CA refuses the certificate")
    plain = tep.replace("https://", "http://")
    out = subprocess.run(["curl", "-s", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}",
                          plain + "/"], capture_output=True, text=True)
    check(out.returncode != 0 or out.stdout == "000",
          "plain HTTP on the TLS port gets no answer: %r" % out.stdout)
    untrusting = boto3.client(
        "s3", endpoint_url=tep, aws_access_key_id=keys["access_key"],
        aws_secret_access_key=keys["secret_key"], region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    try:
        untrusting.list_buckets()
        check(False, "a client that does not trust the CA was answered")
    except botocore.exceptions.SSLError:
        pass
    # aws:SecureTransport: only HTTPS may read.
    s3.put_bucket_policy(Bucket=b, Policy=json.dumps({"Statement": [
        {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
         "Resource": "arn:aws:s3:::%s/*" % b,
         "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]}))
    check(code_of(lambda: s3.get_object(Bucket=b, Key="big")) == "AccessDenied",
          "aws:SecureTransport false: plain HTTP denied")
    check(ts.get_object(Bucket=b, Key="big")["Body"].read() == big,
          "aws:SecureTransport: HTTPS allowed")
    ts.delete_bucket_policy(Bucket=b)
    for k in ("big", "mp"):
        ts.delete_object(Bucket=b, Key=k)
    ts.delete_bucket(Bucket=b)


def raw_put(path, headers, body):
    """A SigV4-signed request sent as is over a socket: (status, response text, signature)."""
    import http.client
    from urllib.parse import urlparse
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    class Auth(S3SigV4Auth):
        def payload(self, request):  # (botocore would hash the body: sign what we send)
            return headers["x-amz-content-sha256"]

    req = AWSRequest(method="PUT", url=endpoint + path, headers=headers)
    Auth(Credentials(keys["access_key"], keys["secret_key"]), "s3", "us-east-1").add_auth(req)
    sig = req.headers["Authorization"].split("Signature=")[1]
    u = urlparse(endpoint)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    c.putrequest("PUT", path, skip_host=True, skip_accept_encoding=True)
    c.putheader("Host", u.netloc)
    for k, v in req.headers.items():
        if k.lower() != "host":
            c.putheader(k, v)
    c.endheaders()
    body(sig, c, req.headers["X-Amz-Date"])
    r = c.getresponse()
    text = r.read().decode(errors="replace")
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, text, hdrs


def streaming():
    """aws-chunked bodies (unsigned and signed, with trailers) and x-amz-checksum-*."""
    import base64
    import hmac
    import zlib
    data = os.urandom(200000)
    crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    pieces = [data[:65536], data[65536:131072], data[131072:]]

    def unsigned(trailer):
        def send(sig, c, date):
            out = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces)
            c.send(out + b"0\r\nx-amz-checksum-crc32:" + trailer.encode() + b"\r\n\r\n")
        return send

    hd = {"x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
          "Content-Encoding": "aws-chunked", "x-amz-trailer": "x-amz-checksum-crc32",
          "x-amz-decoded-content-length": str(len(data))}
    body_len = sum(len(b"%x\r\n\r\n" % len(p)) + len(p) for p in pieces) + \
        len("0\r\nx-amz-checksum-crc32:%s\r\n\r\n" % crc)
    st, text, rh = raw_put("/data/chunked-unsigned", dict(hd, **{"Content-Length": str(body_len)}),
                           unsigned(crc))
    check(st == 200 and rh.get("x-amz-checksum-crc32") == crc,
          "STREAMING-UNSIGNED-PAYLOAD-TRAILER: %d %s" % (st, text))
    o = s3.get_object(Bucket="data", Key="chunked-unsigned", ChecksumMode="ENABLED")
    check(o["Body"].read() == data and o.get("ChecksumCRC32") == crc and
          o.get("ContentEncoding") is None, "GET of an aws-chunked upload: %s" %
          {k: v for k, v in o.items() if k != "Body"})
    o = s3.get_object(Bucket="data", Key="chunked-unsigned", ChecksumMode="ENABLED",
                      Range="bytes=10-20")
    check(o["Body"].read() == data[10:21] and "ChecksumCRC32" not in o,
          "a range answers without the whole object's checksum")
    bad = base64.b64encode((zlib.crc32(data) ^ 1).to_bytes(4, "big")).decode()
    st, text, _ = raw_put("/data/chunked-badsum", dict(hd, **{"Content-Length": str(body_len)}),
                          unsigned(bad))
    check(st == 400 and "BadDigest" in text, "a wrong trailer checksum: %d %s" % (st, text))
    check(code_of(lambda: s3.head_object(Bucket="data", Key="chunked-badsum")) == "404",
          "nothing visible after a wrong checksum")

    # Signed chunks and a signed trailer, the chain computed here from the spec.
    def key(day):
        k = ("AWS4" + keys["secret_key"]).encode()
        for m in (day, "us-east-1", "s3", "aws4_request"):
            k = hmac.new(k, m.encode(), hashlib.sha256).digest()
        return k

    def signed(tamper):
        def send(seed, c, date):  # (date: the X-Amz-Date botocore signed with)
            k, prev = key(date[:8]), seed
            scope = date[:8] + "/us-east-1/s3/aws4_request"
            out = b""
            for p in pieces + [b""]:
                sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", date, scope, prev,
                                 hashlib.sha256(b"").hexdigest(),
                                 hashlib.sha256(p).hexdigest()])
                prev = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
                if tamper and p:
                    p = bytes([p[0] ^ 1]) + p[1:]
                out += b"%x;chunk-signature=%s\r\n%s" % (len(p), prev.encode(), p)
                out += b"\r\n" if p else b""
            tr = "x-amz-checksum-crc32:%s\n" % crc
            sts = "\n".join(["AWS4-HMAC-SHA256-TRAILER", date, scope, prev,
                             hashlib.sha256(tr.encode()).hexdigest()])
            tsig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
            out += b"x-amz-checksum-crc32:%s\r\nx-amz-trailer-signature:%s\r\n\r\n" % (
                crc.encode(), tsig.encode())
            sent[0] = len(out)
            c.send(out)
        return send

    sent = [0]
    # (the framing's length: each chunk line is "<hex>;chunk-signature=<64>\r\n")
    n = sum(len("%x;chunk-signature=" % len(p)) + 64 + 2 + len(p) + 2 for p in pieces) + \
        len("0;chunk-signature=") + 64 + 2 + len("x-amz-checksum-crc32:%s\r\n" % crc) + \
        len("x-amz-trailer-signature:") + 64 + 2 + 2
    shd = dict(hd, **{"x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
                      "Content-Length": str(n)})
    st, text, _ = raw_put("/data/chunked-signed", shd, signed(False))
    check(st == 200 and sent[0] == n, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER: %d %s" % (
        st, text))
    check(s3.get_object(Bucket="data", Key="chunked-signed")["Body"].read() == data,
          "GET of a signed aws-chunked upload")
    st, text, _ = raw_put("/data/chunked-tampered", shd, signed(True))
    check(st == 403 and "SignatureDoesNotMatch" in text,
          "a chunk changed after signing: %d %s" % (st, text))
    check(code_of(lambda: s3.head_object(Bucket="data", Key="chunked-tampered")) == "404",
          "nothing visible after a bad chunk signature")
    # boto3's own flexible checksums (a header on this version of botocore).
    for alg in ("CRC32", "CRC32C", "SHA1", "SHA256"):
        r = s3.put_object(Bucket="data", Key="ck-" + alg, Body=data, ChecksumAlgorithm=alg)
        o = s3.get_object(Bucket="data", Key="ck-" + alg, ChecksumMode="ENABLED")
        check(o["Body"].read() == data and o.get("Checksum" + alg) == r.get("Checksum" + alg)
              and r.get("Checksum" + alg), "boto3 ChecksumAlgorithm=%s" % alg)
    for k in ["chunked-unsigned", "chunked-signed"] + ["ck-" + a for a in
                                                        ("CRC32", "CRC32C", "SHA1", "SHA256")]:
        s3.delete_object(Bucket="data", Key=k)


def load(out_path, bucket="load"):
    """Write objects from 8 threads until killed (or 2,000 written), logging acks. Bucket
    splitkill: small objects from 16 threads (up to 8,000), for a gateway that splits."""
    small = bucket == "splitkill"
    s3.create_bucket(Bucket=bucket)
    lock = threading.Lock()
    log = open(out_path, "a")
    stop = time.time() + 60
    count = [0]
    most = 8000 if small else 2000

    def worker(w):
        c = client(keys)
        i = 0
        while time.time() < stop and count[0] < most:
            k = "w%d/obj%05d" % (w, i)
            body = hashlib.sha256(k.encode()).digest() * (1 if small else 1 + (i % 7) * 3000)
            try:
                c.put_object(Bucket=bucket, Key=k, Body=body)
            except Exception:
                return  # the gateway died: stop here
            with lock:
                log.write("%s %d %s\n" % (k, len(body), hashlib.md5(body).hexdigest()))
                log.flush()
                count[0] += 1
            i += 1
    ts = [threading.Thread(target=worker, args=(w,)) for w in range(16 if small else 8)]
    [t.start() for t in ts]
    [t.join() for t in ts]


def partial():
    """A PUT of 9 MiB that sends 8.5 MiB and stops (held open until the gateway dies): two
    data objects written, never committed."""
    import socket
    from urllib.parse import urlparse
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    s3.create_bucket(Bucket="partial")
    up = s3.create_multipart_upload(Bucket="partial", Key="part-never-finished")["UploadId"]
    socks = []
    # (the same for one part of an open upload: the sweep finds it in the upload)
    for path in ("/partial/never-finished",
                 "/partial/part-never-finished?partNumber=1&uploadId=" + up):
        url = endpoint + path
        req = AWSRequest(method="PUT", url=url,
                         headers={"x-amz-content-sha256": "UNSIGNED-PAYLOAD",
                                  "Content-Length": str(9 << 20)})
        S3SigV4Auth(Credentials(keys["access_key"], keys["secret_key"]), "s3", "us-east-1") \
            .add_auth(req)
        u = urlparse(url)
        sock = socket.create_connection((u.hostname, u.port))
        head = "PUT %s HTTP/1.1\r\nHost: %s\r\n" % (path, u.netloc)
        for k, v in req.headers.items():
            if k.lower() != "host":
                head += "%s: %s\r\n" % (k, v)
        sock.sendall((head + "\r\n").encode())
        sock.sendall(os.urandom((17 << 20) // 2))
        socks.append(sock)
    print("partial: sent", flush=True)
    socks[0].settimeout(120)
    try:
        socks[0].recv(1)
    except Exception:
        pass


def verify(in_path, bucket="load"):
    acked = {}
    for line in open(in_path):
        k, n, md5 = line.split()
        acked[k] = (int(n), md5)
    lost = 0
    for k, (n, md5) in acked.items():
        try:
            b = s3.get_object(Bucket=bucket, Key=k)["Body"].read()
            if len(b) != n or hashlib.md5(b).hexdigest() != md5:
                lost += 1
                print("WRONG:", k, flush=True)
        except botocore.exceptions.ClientError:
            lost += 1
            print("LOST:", k, flush=True)
    listed = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        listed += [o["Key"] for o in page.get("Contents", [])]
    check(listed == sorted(set(listed)), "the listing is in order with no key twice")
    unreadable = 0
    for k in listed:
        try:
            s3.get_object(Bucket=bucket, Key=k)["Body"].read()
        except botocore.exceptions.ClientError:
            unreadable += 1
            print("LISTED BUT UNREADABLE:", k, flush=True)
    print("verify: %d acknowledged, %d lost or wrong, %d listed, %d listed but unreadable"
          % (len(acked), lost, len(listed), unreadable), flush=True)
    check(lost == 0, "acknowledged objects lost")
    check(unreadable == 0, "listed objects unreadable")
    check(set(acked) <= set(listed), "every acknowledged object is listed")
    return listed


def splitverify(in_path):
    """After a splitting gateway was killed with -9 (its split left frozen): a new gateway
    loses no acknowledged object, lists each key once; 1,600 more PUTs over the whole key
    space (each tried once) succeed, so no shard stays frozen; the bucket's counters come
    to the listed keys once the split was resumed."""
    b = "splitkill"
    listed = verify(in_path, b)
    errors, lock, longest = [], threading.Lock(), [0.0]

    def writer(w):
        c = client(keys)
        for i in range(100):
            k = "w%d/obj%05d-post" % (w, i * 37)
            t0 = time.monotonic()
            try:
                c.put_object(Bucket=b, Key=k, Body=b"post")
            except Exception as e:  # noqa: BLE001 (each failure is counted)
                with lock:
                    errors.append("%s: %s" % (k, e))
            with lock:
                longest[0] = max(longest[0], time.monotonic() - t0)

    ts = [threading.Thread(target=writer, args=(w,)) for w in range(16)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    check(not errors, "splitkill: %d of 1600 PUTs after the restart failed, first: %s" % (
        len(errors), errors[:3]))
    want = len(set(listed)) + 1600
    for _ in range(60):
        st = ctl("s3", "bucket", "stats", b)
        if st["objects"] == want:
            break
        time.sleep(1)
    check(st["objects"] == want, "splitkill: the counters %s come to the %d keys" % (st, want))
    print("splitverify: %d acknowledged before the kill, %d listed, 1600 PUTs after it "
          "(longest %.1f s), %d shards, counters exact" % (
              sum(1 for _ in open(in_path)), len(listed), longest[0], st["shards"]), flush=True)


def invalidate(far):
    """Two gateways, the second caching for minutes: what one changes (versioning, a policy,
    a bucket quota, a removed key) holds at once on the other (watch/notify), not after its
    cache's TTL."""
    s3f = boto3.client(
        "s3", endpoint_url=far, aws_access_key_id=keys["access_key"],
        aws_secret_access_key=keys["secret_key"], region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    anonf = boto3.client("s3", endpoint_url=far, region_name="us-east-1",
                         config=Config(signature_version=botocore.UNSIGNED,
                                       s3={"addressing_style": "path"},
                                       retries={"max_attempts": 1}))
    b = "inv-b"
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="k", Body=b"one")
    check(s3f.get_object(Bucket=b, Key="k")["Body"].read() == b"one", "the far gateway reads")
    check(code_of(lambda: anonf.get_object(Bucket=b, Key="k")) == "AccessDenied",
          "anonymous, before the policy")
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    vid = s3f.put_object(Bucket=b, Key="k", Body=b"two").get("VersionId")
    check(vid not in (None, "null"), "a PUT on the far gateway right after versioning was "
          "enabled on the near one gets a version id: %r" % vid)
    vs = s3.list_object_versions(Bucket=b, Prefix="k").get("Versions", [])
    check(len(vs) == 2, "both versions kept: %d" % len(vs))
    s3.put_bucket_policy(Bucket=b, Policy=json.dumps({"Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": "arn:aws:s3:::%s/*" % b}]}))
    check(code_of(lambda: anonf.get_object(Bucket=b, Key="k")) is None,
          "a policy put on one gateway grants at once on the other")
    s3.delete_bucket_policy(Bucket=b)
    check(code_of(lambda: anonf.get_object(Bucket=b, Key="k")) == "AccessDenied",
          "a policy deleted on one gateway stops granting at once on the other")
    ctl("s3", "bucket", "quota", b, "--max-objects", "2")
    check(code_of(lambda: s3f.put_object(Bucket=b, Key="k2", Body=b"x")) == "QuotaExceeded",
          "a bucket quota set by clusterctl holds at once")
    ctl("s3", "bucket", "quota", b)
    nk = ctl("s3", "key", "add", "bob")
    kc = boto3.client(
        "s3", endpoint_url=far, aws_access_key_id=nk["access_key"],
        aws_secret_access_key=nk["secret_key"], region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    kc.list_buckets()
    subprocess.run([os.environ["CAIRN_CTL"], "s3", "key", "rm", nk["access_key"]], check=True,
                   capture_output=True)
    check(code_of(lambda: kc.list_buckets()) == "InvalidAccessKeyId",
          "a key removed by clusterctl stops working at once")
    for v in s3.list_object_versions(Bucket=b).get("Versions", []):
        s3.delete_object(Bucket=b, Key=v["Key"], VersionId=v["VersionId"])
    s3.delete_bucket(Bucket=b)


def splits(n_keys):
    """Index shard splits under load (the gateway runs with rgw_index_shard_max 500): 32
    writers PUT n_keys keys in a random order, each PUT tried once (a 503 during a split
    counts as a failure); then every key reads back its own bytes, the listing (v2, pages
    of 1000, and with a delimiter) holds exactly the keys in byte order, the counters of
    every shard add up to the keys, and the bucket has more than one shard. While the
    writers run, a lister pages through the bucket again and again (ListObjectsV2 and
    ListObjectVersions, pages of 1000): every listing is in byte order with no key twice
    (a split copies a shard's upper keys before it trims them). A bucket quota on the
    split bucket is refused. Then every key is deleted (across the shards) and the bucket
    deleted; a non-empty bucket whose first shard is empty is refused."""
    import random
    b = "splits"
    s3.create_bucket(Bucket=b)
    names = ["p%d/k%06d" % (i % 7, i) for i in range(n_keys)]
    random.Random(7).shuffle(names)
    errors, lock = [], threading.Lock()
    longest = [0.0]

    def other(c, j, k, prev):
        # (the other index writes and reads, on keys of this writer, while shards split; the
        # key set and every key's bytes stay as the PUTs left them)
        if j % 5 == 1:
            c.put_object_tagging(Bucket=b, Key=k, Tagging={"TagSet": [{"Key": "j",
                                                                       "Value": str(j)}]})
        if j % 7 == 2 and prev:
            c.delete_object(Bucket=b, Key=prev)
            with lock:
                started[0] += 1
            c.put_object(Bucket=b, Key=prev, Body=prev.encode())
        if j % 40 == 3:
            u = c.create_multipart_upload(Bucket=b, Key=k)["UploadId"]
            e = c.upload_part(Bucket=b, Key=k, UploadId=u, PartNumber=1, Body=k.encode())["ETag"]
            c.complete_multipart_upload(Bucket=b, Key=k, UploadId=u, MultipartUpload={
                "Parts": [{"PartNumber": 1, "ETag": e}]})
        if j % 40 == 4:
            u = c.create_multipart_upload(Bucket=b, Key=k + "~u")["UploadId"]
            c.abort_multipart_upload(Bucket=b, Key=k + "~u", UploadId=u)
        if j % 40 == 5:
            c.copy_object(Bucket=b, Key=k, CopySource={"Bucket": b, "Key": k},
                          MetadataDirective="REPLACE", Metadata={"copied": "1"})
        if j % 40 == 6:
            c.put_object_acl(Bucket=b, Key=k, ACL="private")

    # (RGW_SPLIT_EP2: a second splitting gateway, for every other writer: two gateways
    # split shards of one bucket at once, and their map changes race)
    eps = [endpoint] + ([os.environ["RGW_SPLIT_EP2"]] if os.environ.get("RGW_SPLIT_EP2")
                        else [])

    def writer(part, w):
        c = client(keys, at=eps[w % len(eps)])
        prev = None
        for j, k in enumerate(part):
            t0 = time.monotonic()
            with lock:
                started[0] += 1
            try:
                c.put_object(Bucket=b, Key=k, Body=k.encode())
                other(c, j, k, prev)
            except Exception as e:  # noqa: BLE001 (each failure is counted)
                with lock:
                    errors.append("%s: %s" % (k, e))
            prev = k
            dt = time.monotonic() - t0
            with lock:
                longest[0] = max(longest[0], dt)
        # (one upload left open per writer: ListMultipartUploads walks the shards)
        try:
            c.create_multipart_upload(Bucket=b, Key=part[len(part) // 2] + "~open")
        except Exception as e:  # noqa: BLE001
            with lock:
                errors.append("open upload: %s" % e)

    writing = [True]
    listings, list_bad = [0], []
    started, stats_seen = [0], [0]

    def counter():
        # (bucket stats never count more objects than PUTs were started: a shard between
        # a split's map change and its trim still holds the upper half's counters)
        deadline = time.monotonic() + 600
        while writing[0] and time.monotonic() < deadline and len(list_bad) < 3:
            st = ctl("s3", "bucket", "stats", b)
            with lock:
                n = started[0]  # (read after the stats: every PUT it counted had started)
            stats_seen[0] += 1
            if st["objects"] > n:
                list_bad.append("bucket stats count %d objects in %d shards, %d PUTs started"
                                % (st["objects"], st["shards"], n))
            time.sleep(0.05)

    def lister():
        c = client(keys)
        deadline = time.monotonic() + 600
        while writing[0] and time.monotonic() < deadline and len(list_bad) < 3:
            versions = listings[0] % 2 == 1
            try:
                got = []
                if versions:
                    for page in c.get_paginator("list_object_versions").paginate(
                            Bucket=b, PaginationConfig={"PageSize": 1000}):
                        got += [o["Key"] for o in page.get("Versions", [])]
                else:
                    for page in c.get_paginator("list_objects_v2").paginate(
                            Bucket=b, PaginationConfig={"PageSize": 1000}):
                        got += [o["Key"] for o in page.get("Contents", [])]
            except Exception as e:  # noqa: BLE001 (each failure is counted)
                list_bad.append("a listing failed: %s" % e)
                continue
            listings[0] += 1
            for x, y in zip(got, got[1:]):
                if x >= y:
                    list_bad.append("%s listing %d: %r then %r" % (
                        "a versions" if versions else "a v2", listings[0], x, y))
                    break

    t0 = time.monotonic()
    ths = [threading.Thread(target=writer, args=(names[i::32], i)) for i in range(32)]
    lt = threading.Thread(target=lister)
    lt.start()
    ct = threading.Thread(target=counter)
    ct.start()
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    took = time.monotonic() - t0
    writing[0] = False
    lt.join()
    ct.join()
    check(not errors, "splits: %d of %d PUTs (and their tagging, ACL, DELETE, multipart and "
          "copy requests) failed, first: %s" % (len(errors), n_keys, errors[:3]))
    check(listings[0] > 0 and stats_seen[0] > 0 and not list_bad,
          "splits: %d listings and %d bucket stats during the writes, each listing in order "
          "with no key twice, no stats above the PUTs started: %s" % (
              listings[0], stats_seen[0], list_bad[:3]))
    st = ctl("s3", "bucket", "stats", b)
    print("splits: %d PUTs by 32 writers in %.1f s (longest %.2f s), %d listings meanwhile; "
          "%s" % (n_keys, took, longest[0], listings[0], st), flush=True)
    # (the last splits may still run: wait for the map to settle, at most 60 s)
    for _ in range(60):
        if st["shards"] >= n_keys // 1000:
            break
        time.sleep(1)
        st = ctl("s3", "bucket", "stats", b)
    check(st["shards"] > 1, "splits: the index split (%d shards)" % st["shards"])
    check(st["objects"] == n_keys, "splits: the counters %s add up to %d keys" % (st, n_keys))
    ups, pages = [], 0
    for page in s3.get_paginator("list_multipart_uploads").paginate(
            Bucket=b, PaginationConfig={"PageSize": 5}):
        ups += [(u["Key"], u["UploadId"]) for u in page.get("Uploads", [])]
        pages += 1
    opened = sorted(names[i::32][len(names[i::32]) // 2] + "~open" for i in range(32))
    check([k for k, _ in ups] == opened and pages >= 7,
          "splits: ListMultipartUploads in pages of 5 finds the 32 open uploads across the "
          "shards, in order: %d in %d pages, %s" % (len(ups), pages, [k for k, _ in ups][:4]))
    for k, u in ups:
        s3.abort_multipart_upload(Bucket=b, Key=k, UploadId=u)
    # (a bucket quota on a split bucket holds across its shards: kept through the deletes)
    ctl("s3", "bucket", "quota", b, "--max-objects", "1000000")
    check(ctl("s3", "bucket", "stats", b)["quota_objects"] == 1000000,
          "splits: a bucket quota on a split bucket is set")
    time.sleep(cache_ttl)
    listed = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=b):
        listed += [o["Key"] for o in page.get("Contents", [])]
    want = sorted(names)
    check(listed == want, "splits: the listing holds every key once, in order (%d listed, "
          "%d written, first difference at %s)" % (
              len(listed), len(want),
              next((i for i, (x, y) in enumerate(zip(listed, want)) if x != y), "the end")))
    cps = s3.list_objects_v2(Bucket=b, Delimiter="/").get("CommonPrefixes", [])
    check([c["Prefix"] for c in cps] == ["p%d/" % i for i in range(7)],
          "splits: 7 common prefixes across the shards: %s" % cps)
    one = s3.list_objects_v2(Bucket=b, Prefix="p3/")
    n3 = sum(1 for k in want if k.startswith("p3/"))
    check(one.get("KeyCount") == min(n3, 1000) and one.get("IsTruncated") is (n3 > 1000) and
          [o["Key"] for o in one.get("Contents", [])] == [k for k in want if
                                                          k.startswith("p3/")][:1000],
          "splits: a prefix's first page (%d keys under it)" % n3)
    bad = []

    def reader(part):
        c = client(keys)
        for k in part:
            try:
                if c.get_object(Bucket=b, Key=k)["Body"].read() != k.encode():
                    bad.append(k + ": other bytes")
            except Exception as e:  # noqa: BLE001
                bad.append("%s: %s" % (k, e))

    ths = [threading.Thread(target=reader, args=(names[i::16],)) for i in range(16)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    check(not bad, "splits: %d keys do not read back, first: %s" % (len(bad), bad[:3]))
    # DeleteBucket must see keys in any shard, not only the first one
    first = want[: len(want) // 4]
    for i in range(0, len(first), 1000):
        s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": k} for k in first[i:i + 1000]],
                                            "Quiet": True})
    check(code_of(lambda: s3.delete_bucket(Bucket=b)) == "BucketNotEmpty",
          "splits: a bucket whose first shard is empty is not deleted while others hold keys")
    check(s3.get_object(Bucket=b, Key=want[-1])["Body"].read() == want[-1].encode(),
          "splits: a refused DeleteBucket reopens every shard (the last key reads)")
    s3.put_object(Bucket=b, Key=want[-1], Body=b"again")
    rest = want[len(want) // 4:]
    for i in range(0, len(rest), 1000):
        s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": k} for k in rest[i:i + 1000]],
                                            "Quiet": True})
    check(s3.list_objects_v2(Bucket=b).get("KeyCount") == 0, "splits: every key deleted")
    s3.delete_bucket(Bucket=b)
    check(code_of(lambda: s3.head_bucket(Bucket=b)) in ("404", "NoSuchBucket"),
          "splits: the bucket deleted")


def quota_split():
    """A bucket quota on a bucket whose index is split (section i's gateway splits past 400
    objects): the bucket's quota counter bounds the whole bucket whatever shard a key falls
    in, overwrites take no object, deletes give room back, and the counter starts from what
    the shards held when the quota was set."""
    b = "qsplit"
    s3.create_bucket(Bucket=b)
    names = ["q%05d" % i for i in range(1000)]
    errors = []

    def put_all(part):
        c = client(keys)
        for k in part:
            try:
                c.put_object(Bucket=b, Key=k, Body=b"x")
            except Exception as e:  # noqa: BLE001 (each failure is counted)
                errors.append("%s: %s" % (k, e))

    ths = [threading.Thread(target=put_all, args=(names[i::16],)) for i in range(16)]
    [t.start() for t in ths]
    [t.join() for t in ths]
    check(not errors, "quota_split: PUTs failed: %s" % errors[:3])
    t0 = time.time()
    while ctl("s3", "bucket", "stats", b)["shards"] < 3 and time.time() - t0 < 60:
        time.sleep(0.5)
    shards = ctl("s3", "bucket", "stats", b)["shards"]
    check(shards >= 3, "quota_split: the bucket's index did not split (%d shards)" % shards)
    ctl("s3", "bucket", "quota", b, "--max-objects", "1010")
    time.sleep(cache_ttl)
    # 16 writers overwrite 8 keys at once (their commits conflict and retry: what the
    # counter holds follows each new plan; an overwrite takes no object)
    over = []

    def overwrite(w):
        c = client(keys)
        for i in range(12):
            k = "q%05d" % (100 * ((w + i) % 8))
            try:
                c.put_object(Bucket=b, Key=k, Body=b"o" * (1 + (w + i) % 7))
            except Exception as e:  # noqa: BLE001 (each failure is counted)
                over.append("%s: %s" % (k, e))

    ths = [threading.Thread(target=overwrite, args=(w,)) for w in range(16)]
    [t.start() for t in ths]
    [t.join() for t in ths]
    check(not over, "quota_split: concurrent overwrites failed: %s" % over[:3])
    # 20 new keys spread over the key range (so over the shards): 10 are taken, in order
    codes = [code_of(lambda k=k: s3.put_object(Bucket=b, Key=k, Body=b"y"))
             for k in ["q%05d.n" % (i * 50) for i in range(20)]]
    check(codes == [None] * 10 + ["QuotaExceeded"] * 10,
          "quota_split: 20 new objects past a quota 10 above: %s" % codes)
    check(code_of(lambda: s3.put_object(Bucket=b, Key="q00999", Body=b"zz")) is None,
          "quota_split: an overwrite at the object quota")
    for k in ("q00001", "q00500", "q00998"):
        s3.delete_object(Bucket=b, Key=k)
    codes = [code_of(lambda k=k: s3.put_object(Bucket=b, Key=k, Body=b"w"))
             for k in ("q00002.m", "q00600.m", "q00997.m", "q00300.m")]
    check(codes == [None, None, None, "QuotaExceeded"],
          "quota_split: after 3 deletes, 4 new objects: %s" % codes)
    st = ctl("s3", "bucket", "stats", b)
    check(st["objects"] == 1010, "quota_split: the bucket holds %d objects" % st["objects"])
    ctl("s3", "bucket", "quota", b)
    time.sleep(cache_ttl)
    kl = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=b):
        kl += [o["Key"] for o in page.get("Contents", [])]
    for i in range(0, len(kl), 1000):
        s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": k} for k in kl[i:i + 1000]],
                                            "Quiet": True})
    s3.delete_bucket(Bucket=b)
    print("quota_split: a 1,010-object quota on a bucket of %d index shards held exactly"
          % shards, flush=True)


def merges(n_keys):
    """Index shard merges (the gateway splits past 400 objects, merges two neighbours
    holding 100 at most, sweeps every second): n_keys keys written by 32 writers, then 95%
    of them deleted by DeleteObjects while 8 writers keep PUTting and reading the rest
    (each request tried once, each read must return the latest bytes written) and a
    lister pages through the bucket (in order, no key twice). The shards merge back; every
    kept key reads its latest bytes, the listing is exactly the kept keys, the counters
    come to them."""
    b = "merges"
    s3.create_bucket(Bucket=b)
    names = ["m%d/k%06d" % (i % 5, i) for i in range(n_keys)]
    errors, lock = [], threading.Lock()

    def put_all(part):
        c = client(keys)
        for k in part:
            try:
                c.put_object(Bucket=b, Key=k, Body=k.encode())
            except Exception as e:  # noqa: BLE001 (each failure is counted)
                with lock:
                    errors.append("%s: %s" % (k, e))

    ths = [threading.Thread(target=put_all, args=(names[i::32],)) for i in range(32)]
    [t.start() for t in ths]
    [t.join() for t in ths]
    check(not errors, "merges: %d of %d PUTs failed, first: %s" % (len(errors), n_keys,
                                                                  errors[:3]))
    peak = ctl("s3", "bucket", "stats", b)["shards"]
    for _ in range(60):
        st = ctl("s3", "bucket", "stats", b)
        if st["shards"] >= n_keys // 400 and st["shards"] == peak:
            break
        peak = max(peak, st["shards"])
        time.sleep(1)
    peak = max(peak, st["shards"])
    kept = set(names[::20])  # (overwritten and read by the live writers, always listed)
    churn = set(names[10::20])  # (deleted and written again by them)
    gone = [k for k in names if k not in kept and k not in churn]
    latest = {k: k.encode() for k in kept | churn}
    running = [True]
    live_ops, list_bad, listings = [0], [], [0]

    def live(part):
        c = client(keys)
        gen = 0
        deadline = time.monotonic() + 120
        while running[0] and time.monotonic() < deadline:
            gen += 1
            for k in part:
                body = ("%s/%d" % (k, gen)).encode()
                try:
                    if k in churn:
                        c.delete_object(Bucket=b, Key=k)
                    c.put_object(Bucket=b, Key=k, Body=body)
                    with lock:
                        latest[k] = body
                    got = c.get_object(Bucket=b, Key=k)["Body"].read()
                    if got != body:
                        with lock:
                            errors.append("%s: read %r, wrote %r" % (k, got, body))
                except Exception as e:  # noqa: BLE001 (each failure is counted)
                    with lock:
                        errors.append("%s: %s" % (k, e))
                with lock:
                    live_ops[0] += 1
                if not running[0]:
                    break

    def lister():
        c = client(keys)
        deadline = time.monotonic() + 120
        while running[0] and time.monotonic() < deadline and len(list_bad) < 3:
            try:
                got = []
                for page in c.get_paginator("list_objects_v2").paginate(
                        Bucket=b, PaginationConfig={"PageSize": 1000}):
                    got += [o["Key"] for o in page.get("Contents", [])]
            except Exception as e:  # noqa: BLE001
                list_bad.append("a listing failed: %s" % e)
                continue
            listings[0] += 1
            for x, y in zip(got, got[1:]):
                if x >= y:
                    list_bad.append("listing %d: %r then %r" % (listings[0], x, y))
                    break
            missing = [k for k in kept if k not in set(got)]
            if missing:
                list_bad.append("listing %d misses kept key %s" % (listings[0], missing[0]))

    kl = sorted(kept | churn)
    workers = [threading.Thread(target=live, args=(kl[i::8],)) for i in range(8)]
    workers.append(threading.Thread(target=lister))
    [t.start() for t in workers]
    for i in range(0, len(gone), 200):
        try:
            r = s3.delete_objects(Bucket=b, Delete={
                "Objects": [{"Key": k} for k in gone[i:i + 200]], "Quiet": True})
            if r.get("Errors"):
                errors.append("DeleteObjects: %s" % r["Errors"][:2])
        except Exception as e:  # noqa: BLE001
            errors.append("DeleteObjects: %s" % e)
    # (the sweep merges neighbours every second: wait for the map to shrink, 90 s at most)
    for _ in range(90):
        st = ctl("s3", "bucket", "stats", b)
        if st["shards"] <= max(2, peak // 3):
            break
        time.sleep(1)
    time.sleep(2)  # (the live writers meet the last merge's windows too)
    running[0] = False
    [t.join() for t in workers]
    check(not errors, "merges: %d requests failed or read stale bytes during the merges, "
          "first: %s" % (len(errors), errors[:3]))
    check(listings[0] > 0 and not list_bad, "merges: %d listings during the merges, each in "
          "order with every kept key once: %s" % (listings[0], list_bad[:3]))
    check(st["shards"] < peak, "merges: the shards merged (%d at the peak, %d now)" % (
        peak, st["shards"]))
    listed = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=b):
        listed += [o["Key"] for o in page.get("Contents", [])]
    check(listed == kl, "merges: the listing is exactly the %d kept keys (%d listed)" % (
        len(kl), len(listed)))
    wrong = []
    for k in kl:
        try:
            if s3.get_object(Bucket=b, Key=k)["Body"].read() != latest[k]:
                wrong.append(k + ": other bytes")
        except Exception as e:  # noqa: BLE001 (a lost key is counted, not a traceback)
            wrong.append("%s: %s" % (k, e))
    check(not wrong, "merges: %d kept keys read other bytes, first: %s" % (len(wrong),
                                                                          wrong[:3]))
    for _ in range(30):
        st = ctl("s3", "bucket", "stats", b)
        if st["objects"] == len(kl):
            break
        time.sleep(1)
    check(st["objects"] == len(kl), "merges: the counters %s come to the %d kept keys" % (
        st, len(kl)))
    print("merges: %d keys in %d shards at the peak; %d deleted while %d live requests and "
          "%d listings ran; %d shards after the merges, %d keys, counters exact" % (
              n_keys, peak, len(gone), live_ops[0], listings[0], st["shards"], len(kl)),
          flush=True)

    def idx_objects():
        out = subprocess.run([os.environ["CAIRN_CTL"], "obj", "ls", "rgw.meta"], check=True,
                             capture_output=True, text=True).stdout
        return [o for o in out.split() if o.startswith("idx.%s." % st["id"])]

    # (the shards merged away were noted retired: the sweep removes them a grace, 1 s
    # here, after; nothing else of the bucket's index is left in the pool. The sweep may
    # still merge neighbours meanwhile (a slow, sanitized build): the map is read again
    # with each look at the pool, and the two must agree in one look.)
    t0 = time.time()
    while True:
        n_map = ctl("s3", "bucket", "stats", b)["shards"]
        objs = idx_objects()
        if len(objs) == n_map or time.time() - t0 >= 60:
            break
        time.sleep(0.5)
    check(len(objs) == n_map,
          "merges: %d index objects in the pool for %d shards (%d after the merges)" % (
              len(objs), n_map, st["shards"]))
    for i in range(0, len(kl), 1000):
        s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": k} for k in kl[i:i + 1000]],
                                            "Quiet": True})
    s3.delete_bucket(Bucket=b)
    t0 = time.time()
    while idx_objects() and time.time() - t0 < 20:
        time.sleep(0.5)
    check(not idx_objects(), "merges: index objects left after DeleteBucket: %s" % idx_objects())
    print("merges: the retired shards were removed within %.1f s of the end; DeleteBucket left "
          "no index object" % (time.time() - t0), flush=True)


def full():
    """A full cluster (rgw_full_test.sh: three 1 GiB OSDs): 4 MiB PUTs until 8 in a row are
    refused (at most 400). Every refusal is 507 InsufficientStorage; every acknowledged PUT
    reads back whole and the listing holds exactly those; once some are deleted (and
    collected) a 4 MiB PUT is taken again."""
    s3.create_bucket(Bucket="full")
    acked, codes, row = {}, {}, 0
    for i in range(400):
        body = os.urandom(4 << 20)
        k = "o%04d" % i
        try:
            s3.put_object(Bucket="full", Key=k, Body=body)
            acked[k] = hashlib.md5(body).hexdigest()
            row = 0
        except botocore.exceptions.ClientError as e:
            c = (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"])
            codes[c] = codes.get(c, 0) + 1
            row += 1
            if row == 8:
                break
    check(row == 8, "full: no PUT was refused (%d acknowledged)" % len(acked))
    check(set(codes) == {(507, "InsufficientStorage")}, "full: the refusals were %s" % codes)
    listed = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket="full"):
        listed += [o["Key"] for o in page.get("Contents", [])]
    check(sorted(listed) == sorted(acked),
          "full: %d listed, %d acknowledged" % (len(listed), len(acked)))
    bad = [k for k in acked
           if hashlib.md5(s3.get_object(Bucket="full", Key=k)["Body"].read()).hexdigest()
           != acked[k]]
    check(not bad, "full: acknowledged objects that do not read back: %s" % bad[:5])
    for k in sorted(acked)[:16]:
        s3.delete_object(Bucket="full", Key=k)
    body, ok, t0 = os.urandom(4 << 20), False, time.time()
    while not ok and time.time() - t0 < 60:
        try:
            s3.put_object(Bucket="full", Key="again", Body=body)
            ok = True
        except botocore.exceptions.ClientError:
            time.sleep(1)
    check(ok, "full: no 4 MiB PUT taken within 60 s of deleting 64 MiB")
    if ok:
        check(s3.get_object(Bucket="full", Key="again")["Body"].read() == body,
              "full: the PUT after the deletes reads back")
    print("full: %d PUTs acknowledged, then refused with %s; all read back; a PUT taken "
          "%.1f s after deletes" % (len(acked), codes, time.time() - t0), flush=True)


def resends():
    """Multipart completions on a gateway started with --rgw-test-resend-commits (each
    commit op is sent again once it applied, and the gateway takes the second answer: a
    refusal, as a resend the OSD did not recognise would get). Each completion must still
    answer 200 with its ETag and version id, and its object must read back whole: before,
    the gateway answered NoSuchUpload and removed the manifest its own commit pointed at.
    A second completion of the same upload is NoSuchUpload."""
    MiB = 1 << 20
    done = 0
    for b, versioned in (("resend", False), ("resend-v", True)):
        s3.create_bucket(Bucket=b)
        if versioned:
            s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
        for i in range(3):
            key = "ckpt/%d.bin" % i
            bodies = [os.urandom(5 * MiB), os.urandom(1000 + i)]
            up = s3.create_multipart_upload(Bucket=b, Key=key)["UploadId"]
            parts = [{"PartNumber": n + 1, "ETag": s3.upload_part(
                Bucket=b, Key=key, UploadId=up, PartNumber=n + 1, Body=x)["ETag"]}
                for n, x in enumerate(bodies)]
            want = '"%s-2"' % hashlib.md5(b"".join(
                hashlib.md5(x).digest() for x in bodies)).hexdigest()
            try:
                r = s3.complete_multipart_upload(Bucket=b, Key=key, UploadId=up,
                                                 MultipartUpload={"Parts": parts})
            except Exception as e:  # noqa: BLE001 (the failure this guards against)
                check(False, "resends: completing %s/%s: %s" % (b, key, e))
                r = {"ETag": want, "VersionId": "-" if versioned else None}
            check(r["ETag"] == want, "resends: %s/%s ETag %s, want %s" % (
                b, key, r["ETag"], want))
            check(bool(r.get("VersionId")) == versioned and r.get("VersionId") != "null",
                  "resends: %s/%s version id %r" % (b, key, r.get("VersionId")))
            try:
                got = s3.get_object(Bucket=b, Key=key)["Body"].read()
            except Exception as e:  # noqa: BLE001 (a listed object that cannot be read)
                got = str(e).encode()
            check(got == b"".join(bodies), "resends: %s/%s reads back whole (%d bytes)" % (
                b, key, len(got)))
            check(code_of(lambda: s3.complete_multipart_upload(
                Bucket=b, Key=key, UploadId=up, MultipartUpload={"Parts": parts}))
                == "NoSuchUpload", "resends: %s/%s completed twice" % (b, key))
            done += 1
        listed = [o["Key"] for o in s3.list_objects_v2(Bucket=b).get("Contents", [])]
        check(listed == ["ckpt/%d.bin" % i for i in range(3)], "resends: %s lists %s" % (
            b, listed))
        check(not s3.list_multipart_uploads(Bucket=b).get("Uploads"),
              "resends: %s: no upload left" % b)
    print("resends: %d completions whose commit was answered as refused after it applied: "
          "each answered 200 and reads back whole" % done, flush=True)


def notes(n):
    """DeleteBucket on a bucket whose object notes n retired index shards (what n merges
    within the grace leave; made by rgw_retired_fill, more than one page of notes): every
    one of those shard objects goes with the bucket."""
    b = "notes"
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="k", Body=b"x")
    bid = ctl("s3", "bucket", "stats", b)["id"]
    subprocess.run([os.environ["RGW_RETIRED_FILL"], "-c", os.environ["CAIRN_CONF"], "rgw.meta",
                    b, bid, str(n)], check=True, capture_output=True)

    def idx_objects():
        out = subprocess.run([os.environ["CAIRN_CTL"], "obj", "ls", "rgw.meta"], check=True,
                             capture_output=True, text=True).stdout
        return [o for o in out.split() if o.startswith("idx.%s." % bid)]

    before = len(idx_objects())
    check(before == n + 1, "notes: %d index objects before, want %d" % (before, n + 1))
    s3.delete_object(Bucket=b, Key="k")
    s3.delete_bucket(Bucket=b)
    t0 = time.time()
    left = idx_objects()
    while left and time.time() - t0 < 30:
        time.sleep(0.5)
        left = idx_objects()
    check(not left, "notes: %d of %d index objects left after DeleteBucket, first %s" % (
        len(left), before, left[:2]))
    print("notes: DeleteBucket removed the %d index objects of a bucket noting %d retired "
          "shards (within %.1f s)" % (before, n, time.time() - t0), flush=True)


if phase == "api":
    api()
elif phase == "load":
    load(sys.argv[5], *sys.argv[6:7])
elif phase == "splitverify":
    splitverify(sys.argv[5])
elif phase == "partial":
    partial()
elif phase == "verify":
    verify(sys.argv[5])
elif phase == "invalidate":
    invalidate(sys.argv[5])
elif phase == "splits":
    splits(int(sys.argv[5]))
elif phase == "merges":
    merges(int(sys.argv[5]))
elif phase == "full":
    full()
elif phase == "quota_split":
    quota_split()
elif phase == "resends":
    resends()
elif phase == "notes":
    notes(int(sys.argv[5]))
if failures:
    print("%d failures" % len(failures))
    sys.exit(1)
print("rgw_test.py %s: ok" % phase)
