// SPDX-License-Identifier: Apache-2.0
// The AWS SDK for JavaScript v3 (its defaults: CRC32 checksums on every
// upload, sent in an aws-chunked trailer for streamed bodies, and checked on
// GETs) against cairn-rgw. Usage: node rgw_js_test.mjs ENDPOINT KEYS.json
import { readFileSync } from "node:fs";
import { Readable } from "node:stream";
import { createHash, randomBytes } from "node:crypto";
import { createRequire } from "node:module";

const require = createRequire(new URL("../js/", import.meta.url));
const s3sdk = require("@aws-sdk/client-s3");
const { S3Client, CreateBucketCommand, PutObjectCommand, GetObjectCommand, HeadObjectCommand,
	CreateMultipartUploadCommand, UploadPartCommand, CompleteMultipartUploadCommand,
	ListObjectsV2Command, DeleteObjectCommand, DeleteBucketCommand } = s3sdk;

const [endpoint, keysFile] = process.argv.slice(2);
const keys = JSON.parse(readFileSync(keysFile, "utf8"));
const wire = [];
const s3 = new S3Client({
	endpoint, region: "us-east-1", forcePathStyle: true,
	credentials: { accessKeyId: keys.access_key, secretAccessKey: keys.secret_key },
});
// (record what the SDK put on the wire: the payload form and the checksum headers)
s3.middlewareStack.add((next) => async (args) => {
	const h = args.request.headers || {};
	wire.push(`${args.request.method} ${args.request.path} ` +
		`${h["x-amz-content-sha256"] || ""} trailer=${h["x-amz-trailer"] || ""} ` +
		`${Object.keys(h).filter((k) => k.startsWith("x-amz-checksum-")).join(",")}`);
	return next(args);
}, { step: "finalizeRequest", priority: "low", name: "wireLog" });

let failures = 0;
const check = (ok, what) => { if (!ok) { failures++; console.log("FAIL:", what); } };
const body = async (o) => Buffer.from(await o.Body.transformToByteArray());

const bucket = "js-sdk";
await s3.send(new CreateBucketCommand({ Bucket: bucket }));
const data = randomBytes(300000);

// A Buffer body, and a streamed one (the SDK frames it as aws-chunked with a trailer).
await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "buf", Body: data }));
await s3.send(new PutObjectCommand({
	Bucket: bucket, Key: "stream", Body: Readable.from([data.subarray(0, 100000),
		data.subarray(100000)]), ContentLength: data.length,
}));
for (const key of ["buf", "stream"]) {
	const o = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, ChecksumMode: "ENABLED" }));
	const got = await body(o);
	check(got.equals(data), `${key}: the bytes came back`);
	check(!!o.ChecksumCRC32, `${key}: a CRC32 checksum is returned (${o.ChecksumCRC32})`);
}
for (const alg of ["SHA256", "CRC32C", "SHA1"]) {
	await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "alg-" + alg, Body: data,
		ChecksumAlgorithm: alg }));
	const h = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "alg-" + alg,
		ChecksumMode: "ENABLED" }));
	check(!!h["Checksum" + alg], `ChecksumAlgorithm ${alg} stored`);
}
// Multipart with the SDK's part checksums.
const up = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: "mp" }));
const p1 = randomBytes(5 << 20), p2 = randomBytes(1000);
const parts = [];
for (const [i, p] of [p1, p2].entries()) {
	const r = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: "mp",
		UploadId: up.UploadId, PartNumber: i + 1, Body: p }));
	parts.push({ PartNumber: i + 1, ETag: r.ETag });
}
const done = await s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: "mp",
	UploadId: up.UploadId, MultipartUpload: { Parts: parts } }));
check(/-2"$/.test(done.ETag), `multipart ETag ${done.ETag}`);
const mp = await body(await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "mp" })));
check(mp.equals(Buffer.concat([p1, p2])), "multipart bytes");
const l = await s3.send(new ListObjectsV2Command({ Bucket: bucket }));
check((l.Contents || []).length === 6, `listing: ${(l.Contents || []).map((c) => c.Key)}`);
for (const c of l.Contents || [])
	await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: c.Key }));
await s3.send(new DeleteBucketCommand({ Bucket: bucket }));
const streamed = wire.filter((w) => w.includes("STREAMING-"));
console.log("js: on the wire:\n  " + wire.filter((w) => w.startsWith("PUT")).join("\n  "));
check(streamed.length > 0, "the SDK sent at least one aws-chunked body");
console.log(failures ? `js: ${failures} failures` : `js: ok (${streamed.length} aws-chunked uploads)`);
process.exit(failures ? 1 : 0);
