/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gateway's other parsers of outside input, chosen by the first byte:
 * XML bodies (expat; lifecycle and CORS configurations), bucket records and bucket policies
 * (JSON; a parsed policy is evaluated too), index entries (our codec,
 * with a re-encode round trip), index shard maps and range marks, Range, copy-source and condition
 * headers, request targets, multipart manifests and part records, aws-chunked framing (unsigned and
 * signed, with trailers).
 */
#include "rgw/chunked.h"
#include "rgw/cond.h"
#include "rgw/cors.h"
#include "rgw/lc.h"
#include "rgw/policy.h"
#include "rgw/meta.h"
#include "rgw/shardmap.h"
#include "rgw/uri.h"
#include "rgw/xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *
fuzz_cond(void *arg, const char *name)
{
	(void)name;
	return arg;
}

static int
sink(void *arg, const char *b, size_t n)
{
	(void)arg;
	if (n && !b)
		__builtin_trap();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;
	const char *b;
	size_t n;

	if (size < 1)
		return 0;
	b = (const char *)data + 1;
	n = size - 1;
	if (!(s = malloc(n + 1)))
		return 0;
	memcpy(s, b, n);
	s[n] = '\0';
	switch (data[0] % 8) {
	case 0: {
		struct rgw_xml *x;
		char err[128];

		if (rgw_xml_parse(b, n, &x, err, sizeof(err)) == 0) {
			struct rgw_lc lc;

			(void)rgw_xml_child_text(x, "Key");
			rgw_xml_free(x);
			/* (a lifecycle configuration: every rule has its prefix and an action) */
			if (rgw_lc_parse(b, n, &lc, err, sizeof(err)) == 0) {
				for (size_t i = 0; i < lc.n; i++) {
					if (!lc.r[i].prefix)
						__builtin_trap();
					(void)rgw_lc_prefix_match(&lc.r[i], s, n);
					(void)rgw_lc_tags_match(&lc.r[i], s, n);
				}
				rgw_lc_fini(&lc);
			}
		}
		{
			/* (a CORS configuration: every rule has an origin and a method) */
			struct rgw_cors c;

			if (rgw_cors_parse(b, n, &c, err, sizeof(err)) == 0) {
				struct rgw_str h;
				const struct rgw_cors_rule *r;

				for (size_t i = 0; i < c.n; i++)
					if (!c.r[i].norigins || !c.r[i].methods)
						__builtin_trap();
				rgw_str_init(&h);
				if ((r = rgw_cors_match(&c, "https://a.example", RGW_CORS_GET, s)))
					rgw_cors_headers(r, "https://a.example", true, s, &h);
				rgw_str_fini(&h);
				rgw_cors_fini(&c);
			}
		}
		break;
	}
	case 1: {
		struct rgw_bucket bk;

		if (rgw_bucket_decode(b, n, &bk) == 0) {
			char *j = rgw_bucket_encode(&bk);
			struct rgw_bucket b2;

			if (j && (rgw_bucket_decode(j, strlen(j), &b2) || strcmp(b2.id, bk.id)))
				__builtin_trap();
			free(j);
		}
		(void)rgw_bucket_name_ok(s);
		{
			/* a bucket policy, then a verdict on a request that carries the input as
			 * every condition key's value */
			struct rgw_policy *p = NULL;
			char err[200];

			if (rgw_policy_parse(b, n, "bkt", &p, err, sizeof(err)) == 0) {
				struct rgw_pol_req r = { .principal = "alice",
							 .action = "s3:GetObject",
							 .resource = "bkt/a/b",
							 .rlen = 7,
							 .cond = fuzz_cond,
							 .arg = s };

				(void)rgw_policy_eval(p, &r);
				r.principal = NULL;
				(void)rgw_policy_eval(p, &r);
				(void)rgw_policy_is_public(p);
				rgw_policy_free(p);
			} else if (p) {
				__builtin_trap();
			}
		}
		break;
	}
	case 2: {
		struct rgw_entry e, e2;
		struct rgw_str out;
		char etag[64];

		if (rgw_entry_decode(b, n, &e) == 0) {
			rgw_entry_etag(&e, etag, sizeof(etag));
			rgw_str_init(&out);
			rgw_entry_encode(&e, &out);
			if (!out.oom) {
				if (rgw_entry_decode(out.p, out.len, &e2) || e2.size != e.size ||
				    e2.nmeta != e.nmeta || memcmp(e2.inst, e.inst, 16))
					__builtin_trap();
				rgw_entry_fini(&e2);
			}
			rgw_str_fini(&out);
			rgw_entry_fini(&e);
		}
		{
			/* a shard map: decodes to what encodes to the same bytes; every key
			 * picks a span whose range holds it */
			struct rgw_shardmap m;

			if (rgw_shardmap_decode(b, n, &m) == 0) {
				size_t i = rgw_shardmap_pick(&m, s, strnlen(s, n));

				rgw_str_init(&out);
				rgw_shardmap_encode(&m, &out);
				if (i >= m.n ||
				    (n && !out.oom && (out.len != n || memcmp(out.p, b, n))))
					__builtin_trap();
				rgw_str_reset(&out);
				rgw_shardmap_range(&m, i, &out);
				if (!out.oom &&
				    rgw_range_state(out.p, out.len, out.p, out.len) != RGW_RANGE_OK)
					__builtin_trap();
				rgw_str_fini(&out);
				rgw_shardmap_fini(&m);
			}
		}
		{
			/* a range mark read back from a shard */
			char tag;
			const uint8_t *r, *k;
			size_t rl, kl;

			if (rgw_range_frozen_parse(b, n, &tag, &r, &rl, &k, &kl) == 0 &&
			    (rgw_range_state(r, rl, b, n) != RGW_RANGE_FROZEN || rl + kl + 3 != n))
				__builtin_trap();
		}
		break;
	}
	case 3: {
		uint64_t off, len, sz = n ? (uint64_t)(unsigned char)b[0] * 1000003u : 0;

		struct rgw_copy_src cs;

		if (rgw_range_parse(s, sz, &off, &len) == 0 && (len == 0 || off + len > sz))
			__builtin_trap();
		if (rgw_copy_range_parse(s, sz, &off, &len) == 0 && (len == 0 || off + len > sz))
			__builtin_trap();
		{
			struct rgw_str pk;

			rgw_str_init(&pk);
			if (rgw_tags_from_query(s, &pk) == 0 && rgw_tags_check(pk.p, pk.len) < 0)
				__builtin_trap();
			rgw_str_fini(&pk);
		}
		if (rgw_copy_source_parse(s, &cs) == 0) {
			if (!*cs.bucket || !cs.key_len || strlen(cs.key) != cs.key_len)
				__builtin_trap();
			rgw_copy_source_fini(&cs);
		}
		break;
	}
	case 4: {
		const char *nl = memchr(s, '\n', n);
		int64_t t;

		(void)rgw_http_date_parse(s, &t);
		(void)rgw_etag_match(s, nl ? nl + 1 : "\"x\"");
		(void)rgw_cond_eval(s, s, nl ? nl + 1 : NULL, s, "\"abc\"", 1000, n & 1);
		break;
	}
	case 5: {
		/* a manifest, or a part record (key: the first 37 bytes) */
		struct rgw_mpart *parts;
		struct rgw_part p;
		size_t np;

		if (rgw_manifest_decode(b, n, &parts, &np) == 0) {
			struct rgw_str out;

			rgw_str_init(&out);
			rgw_manifest_encode(parts, np, &out);
			if (!out.oom && (out.len != n || memcmp(out.p, b, n)))
				__builtin_trap();
			rgw_str_fini(&out);
			free(parts);
		}
		if (n >= RGW_PART_KEY_LEN)
			(void)rgw_part_decode(b, RGW_PART_KEY_LEN, b + RGW_PART_KEY_LEN,
					      n - RGW_PART_KEY_LEN, &p);
		break;
	}
	case 6: {
		/* aws-chunked framing, fed in two pieces split where the input says */
		static const uint8_t key[32] = { 1 };
		struct rgw_sigv4 a;
		struct rgw_awschunk d;
		/* (two bytes: the flags and the cut; then the body) */
		unsigned flags = n > 2 ? (unsigned)b[0] & 3 : 0;
		size_t cut = n > 2 ? (size_t)(uint8_t)b[1] % (n - 2) : 0;
		const char *body = n > 2 ? b + 2 : b;
		size_t bl = n > 2 ? n - 2 : 0;

		memset(&a, 0, sizeof(a));
		snprintf(a.amz_date, sizeof(a.amz_date), "20260101T000000Z");
		snprintf(a.scope_date, sizeof(a.scope_date), "20260101");
		snprintf(a.region, sizeof(a.region), "us-east-1");
		snprintf(a.service, sizeof(a.service), "s3");
		if (rgw_awschunk_init(&d, flags, key, &a, "00") == 0) {
			char v[64];

			if (rgw_awschunk_feed(&d, body, cut, sink, NULL) == 0 &&
			    rgw_awschunk_feed(&d, body + cut, bl - cut, sink, NULL) == 0 &&
			    rgw_awschunk_done(&d))
				(void)rgw_awschunk_trailer(&d, "x-amz-checksum-crc32", v,
							   sizeof(v));
			rgw_awschunk_fini(&d);
		}
		break;
	}
	default: {
		struct rgw_uri u;

		if (rgw_uri_parse(b, n, &u) == 0) {
			if (strlen(u.path) != u.path_len)
				__builtin_trap();
			(void)rgw_uri_q(&u, "prefix");
			rgw_uri_fini(&u);
		}
		break;
	}
	}
	free(s);
	return 0;
}
