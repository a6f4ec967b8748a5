/* SPDX-License-Identifier: Apache-2.0 */
/* The gateway's small parsers and codecs: URIs, ranges and conditions, index entries, bucket
 * records, XML bodies, escaping. */
#include "rgw/chunked.h"
#include "rgw/cond.h"
#include "rgw/lc.h"
#include "rgw/meta.h"
#include "rgw/shardmap.h"
#include "rgw/str.h"
#include "rgw/uri.h"
#include "rgw/xml.h"
#include "testlib.h"

START_TEST(test_uri)
{
	struct rgw_uri u;
	const char t[] = "/bkt/a%20b%2Fc?prefix=x%2By&delimiter=%2F&list-type=2&uploads";

	ck_assert_int_eq(rgw_uri_parse(t, strlen(t), &u), 0);
	ck_assert_str_eq(u.path, "/bkt/a b/c");
	ck_assert_uint_eq(u.raw_path_len, strlen("/bkt/a%20b%2Fc"));
	ck_assert_str_eq(rgw_uri_q(&u, "prefix"), "x+y");
	ck_assert_str_eq(rgw_uri_q(&u, "delimiter"), "/");
	ck_assert_str_eq(rgw_uri_q(&u, "uploads"), "");
	ck_assert_ptr_null(rgw_uri_q(&u, "marker"));
	rgw_uri_fini(&u);
	ck_assert_int_eq(rgw_uri_parse("/a%2", 4, &u), -EINVAL);
	ck_assert_int_eq(rgw_uri_parse("/a%00b", 6, &u), -EINVAL); /* (no NUL in a key) */
	ck_assert_int_eq(rgw_uri_parse("a", 1, &u), -EINVAL);
	ck_assert_int_eq(rgw_uri_parse("http://h/b/k?x", 14, &u), 0);
	ck_assert_str_eq(u.path, "/b/k");
	rgw_uri_fini(&u);
}

END_TEST

START_TEST(test_range)
{
	uint64_t off, len;

	ck_assert_int_eq(rgw_range_parse("bytes=0-9", 100, &off, &len), 0);
	ck_assert_uint_eq(off, 0);
	ck_assert_uint_eq(len, 10);
	ck_assert_int_eq(rgw_range_parse("bytes=90-", 100, &off, &len), 0);
	ck_assert_uint_eq(off, 90);
	ck_assert_uint_eq(len, 10);
	ck_assert_int_eq(rgw_range_parse("bytes=-30", 100, &off, &len), 0);
	ck_assert_uint_eq(off, 70);
	ck_assert_uint_eq(len, 30);
	ck_assert_int_eq(rgw_range_parse("bytes=-300", 100, &off, &len), 0);
	ck_assert_uint_eq(off, 0);
	ck_assert_uint_eq(len, 100);
	ck_assert_int_eq(rgw_range_parse("bytes=50-1000", 100, &off, &len), 0);
	ck_assert_uint_eq(len, 50);
	ck_assert_int_eq(rgw_range_parse("bytes=100-", 100, &off, &len), -ERANGE);
	ck_assert_int_eq(rgw_range_parse("bytes=-0", 100, &off, &len), -ERANGE);
	ck_assert_int_eq(rgw_range_parse("bytes=0-1,5-6", 100, &off, &len), 1);
	ck_assert_int_eq(rgw_range_parse("items=0-1", 100, &off, &len), 1);
	ck_assert_int_eq(rgw_range_parse("bytes=9-1", 100, &off, &len), 1);
	ck_assert_int_eq(rgw_range_parse("bytes=99999999999999999999999-", 100, &off, &len), 1);
}

END_TEST

START_TEST(test_copy_source)
{
	struct rgw_copy_src cs;
	struct rgw_layout l;
	uint8_t inst[16] = { 1 };
	uint64_t off, len;

	ck_assert_int_eq(rgw_copy_source_parse("/bkt/a%20b/c%3Fd", &cs), 0);
	ck_assert_str_eq(cs.bucket, "bkt");
	ck_assert_uint_eq(cs.key_len, 7);
	ck_assert_str_eq(cs.key, "a b/c?d");
	ck_assert_ptr_null(cs.version);
	rgw_copy_source_fini(&cs);
	ck_assert_int_eq(rgw_copy_source_parse("bkt/k?versionId=null", &cs), 0);
	ck_assert_str_eq(cs.key, "k");
	ck_assert_str_eq(cs.version, "null");
	rgw_copy_source_fini(&cs);
	ck_assert_int_eq(rgw_copy_source_parse("bkt", &cs), -EINVAL);
	ck_assert_int_eq(rgw_copy_source_parse("bkt/", &cs), -EINVAL);
	ck_assert_int_eq(rgw_copy_source_parse("/k", &cs), -EINVAL);
	ck_assert_int_eq(rgw_copy_source_parse("bkt/%00", &cs), -EINVAL);
	ck_assert_int_eq(rgw_copy_source_parse("bkt/%zz", &cs), -EINVAL);
	ck_assert_int_eq(rgw_copy_source_parse("bkt/k?acl", &cs), -EINVAL);
	ck_assert_int_eq(rgw_copy_source_parse("bkt/k?versionId=", &cs), -EINVAL);
	ck_assert_int_eq(rgw_copy_source_parse("b%2Fx/k", &cs), -EINVAL);

	ck_assert_int_eq(rgw_copy_range_parse("bytes=0-9", 10, &off, &len), 0);
	ck_assert(off == 0 && len == 10);
	ck_assert_int_eq(rgw_copy_range_parse("bytes=5-5", 10, &off, &len), 0);
	ck_assert(off == 5 && len == 1);
	ck_assert_int_eq(rgw_copy_range_parse("bytes=0-10", 10, &off, &len), -ERANGE);
	ck_assert_int_eq(rgw_copy_range_parse("bytes=5-", 10, &off, &len), -EINVAL);
	ck_assert_int_eq(rgw_copy_range_parse("bytes=-5", 10, &off, &len), -EINVAL);
	ck_assert_int_eq(rgw_copy_range_parse("bytes=6-5", 10, &off, &len), -EINVAL);
	ck_assert_int_eq(rgw_copy_range_parse("bytes=0-1 ", 10, &off, &len), -EINVAL);

	/* layouts: a plain object, and a manifest's parts found by offset */
	rgw_layout_single(&l, inst, 100);
	ck_assert_uint_eq(l.np, 1);
	ck_assert_uint_eq(rgw_layout_find(&l, 99), 0);
	rgw_layout_fini(&l);
	{
		struct rgw_mpart p[3] = { { .size = 10 }, { .size = 20 }, { .size = 5 } };
		struct rgw_str m;

		rgw_str_init(&m);
		rgw_manifest_encode(p, 3, &m);
		ck_assert_int_eq(rgw_layout_manifest(&l, m.p, m.len, 36), -EBADMSG);
		ck_assert_int_eq(rgw_layout_manifest(&l, m.p, m.len, 35), 0);
		ck_assert_uint_eq(rgw_layout_find(&l, 9), 0);
		ck_assert_uint_eq(rgw_layout_find(&l, 10), 1);
		ck_assert_uint_eq(rgw_layout_find(&l, 29), 1);
		ck_assert_uint_eq(rgw_layout_find(&l, 34), 2);
		ck_assert_uint_eq(l.starts[2], 30);
		rgw_layout_fini(&l);
		rgw_str_fini(&m);
	}
}

END_TEST

START_TEST(test_tags)
{
	struct rgw_str pk;
	struct rgw_entry e = { 0 }, d;
	struct rgw_str enc;
	size_t pos = 0;
	const char *k, *v;
	char big[300];

	rgw_str_init(&pk);
	ck_assert_int_eq(rgw_tags_from_query("a=1&b=x+y%21&c=", &pk), 0);
	ck_assert_int_eq(rgw_tags_check(pk.p, pk.len), 3);
	ck_assert(rgw_tags_next(pk.p, pk.len, &pos, &k, &v));
	ck_assert(!strcmp(k, "a") && !strcmp(v, "1"));
	ck_assert(rgw_tags_next(pk.p, pk.len, &pos, &k, &v));
	ck_assert(!strcmp(k, "b") && !strcmp(v, "x y!"));
	ck_assert(rgw_tags_next(pk.p, pk.len, &pos, &k, &v));
	ck_assert(!strcmp(k, "c") && !strcmp(v, ""));
	ck_assert(!rgw_tags_next(pk.p, pk.len, &pos, &k, &v));
	ck_assert_int_eq(rgw_tags_add(&pk, "a", 1, "2", 1), -EEXIST);
	ck_assert_int_eq(rgw_tags_add(&pk, "", 0, "2", 1), -EINVAL);
	ck_assert_int_eq(rgw_tags_add(&pk, "t\n", 2, "2", 1), -EINVAL);
	memset(big, 'v', sizeof(big));
	ck_assert_int_eq(rgw_tags_add(&pk, "d", 1, big, 257), -EINVAL);
	ck_assert_int_eq(rgw_tags_add(&pk, "d", 1, big, 256), 0);
	ck_assert_int_eq(rgw_tags_add(&pk, big, 129, "x", 1), -EINVAL);
	for (int i = 0; i < 6; i++) {
		char key[8];

		snprintf(key, sizeof(key), "k%d", i);
		ck_assert_int_eq(rgw_tags_add(&pk, key, strlen(key), "v", 1), 0);
	}
	ck_assert_int_eq(rgw_tags_add(&pk, "z", 1, "v", 1), -E2BIG);
	ck_assert_int_eq(rgw_tags_check(pk.p, pk.len), 10);
	ck_assert_int_eq(rgw_tags_check(pk.p, pk.len - 1), -EBADMSG);
	/* in the entry, round trip (with a canned ACL) */
	e.tags = pk.p;
	e.tags_len = pk.len;
	e.acl = (char *)"public-read";
	rgw_str_init(&enc);
	rgw_entry_encode(&e, &enc);
	ck_assert_int_eq(rgw_entry_decode(enc.p, enc.len, &d), 0);
	ck_assert_uint_eq(d.tags_len, pk.len);
	ck_assert(!memcmp(d.tags, pk.p, pk.len));
	ck_assert_str_eq(d.acl, "public-read");
	rgw_entry_fini(&d);
	rgw_str_fini(&enc);
	rgw_str_fini(&pk);
	rgw_str_init(&pk);
	ck_assert_int_eq(rgw_tags_from_query("a=%zz", &pk), -EINVAL);
	ck_assert_int_eq(rgw_tags_from_query("a=1&a=2", &pk), -EEXIST);
	rgw_str_fini(&pk);
}

END_TEST

START_TEST(test_conditions)
{
	int64_t t;

	ck_assert_int_eq(rgw_http_date_parse("Wed, 02 Dec 2026 07:30:00 GMT", &t), 0);
	ck_assert_int_eq(t, 1796196600);
	ck_assert_int_eq(rgw_http_date_parse("yesterday", &t), -EINVAL);
	ck_assert(rgw_etag_match("\"abc\"", "\"abc\""));
	ck_assert(rgw_etag_match("\"x\", \"abc\"", "\"abc\""));
	ck_assert(rgw_etag_match("abc", "\"abc\""));
	ck_assert(rgw_etag_match("*", "\"abc\""));
	ck_assert(!rgw_etag_match("\"abd\"", "\"abc\""));
	/* If-Match wins over If-Unmodified-Since; If-None-Match over If-Modified-Since. */
	ck_assert_int_eq(rgw_cond_eval("\"e\"", "Wed, 02 Dec 2020 07:30:00 GMT", NULL, NULL,
				       "\"e\"", t, true),
			 RGW_COND_OK);
	ck_assert_int_eq(
		rgw_cond_eval(NULL, "Wed, 02 Dec 2020 07:30:00 GMT", NULL, NULL, "\"e\"", t, true),
		RGW_COND_FAILED);
	ck_assert_int_eq(rgw_cond_eval(NULL, NULL, "\"e\"", NULL, "\"e\"", t, true),
			 RGW_COND_NOT_MODIFIED);
	ck_assert_int_eq(rgw_cond_eval(NULL, NULL, "\"e\"", NULL, "\"e\"", t, false),
			 RGW_COND_FAILED);
	ck_assert_int_eq(rgw_cond_eval(NULL, NULL, "\"f\"", "Wed, 02 Dec 2030 07:30:00 GMT",
				       "\"e\"", t, true),
			 RGW_COND_OK);
	ck_assert_int_eq(
		rgw_cond_eval(NULL, NULL, NULL, "Wed, 02 Dec 2030 07:30:00 GMT", "\"e\"", t, true),
		RGW_COND_NOT_MODIFIED);
}

END_TEST

START_TEST(test_entry_codec)
{
	struct rgw_entry e = { 0 }, d;
	struct rgw_str s;
	char etag[64];

	e.flags = 0;
	memset(e.inst, 0xab, 16);
	e.size = 123456789;
	e.mtime_ns = 1796196600123456789;
	memset(e.md5, 0x11, 16);
	e.parts = 3;
	e.ctype = "text/plain";
	e.owner = "alice";
	e.meta[0].k = "x-amz-meta-color";
	e.meta[0].v = "blue";
	e.meta[1].k = "cache-control";
	e.meta[1].v = "no-cache";
	e.nmeta = 2;
	rgw_str_init(&s);
	rgw_entry_encode(&e, &s);
	ck_assert(!s.oom);
	ck_assert_int_eq(rgw_entry_decode(s.p, s.len, &d), 0);
	ck_assert_uint_eq(d.size, e.size);
	ck_assert_int_eq(d.mtime_ns, e.mtime_ns);
	ck_assert(!memcmp(d.inst, e.inst, 16));
	ck_assert_uint_eq(d.parts, 3);
	ck_assert_str_eq(d.ctype, "text/plain");
	ck_assert_str_eq(d.owner, "alice");
	ck_assert_uint_eq(d.nmeta, 2);
	ck_assert_str_eq(d.meta[1].v, "no-cache");
	rgw_entry_etag(&d, etag, sizeof(etag));
	ck_assert_str_eq(etag, "\"11111111111111111111111111111111-3\"");
	rgw_entry_fini(&d);
	/* Every truncation is refused or decodes (never reads past the end). */
	for (size_t n = 0; n < s.len; n++) {
		int rc = rgw_entry_decode(s.p, n, &d);

		ck_assert(rc == 0 || rc == -EBADMSG);
		if (!rc)
			rgw_entry_fini(&d);
	}
	/* A length past the end. */
	s.p[2 + 1] = 0x7f;
	ck_assert_int_eq(rgw_entry_decode(s.p, s.len, &d), -EBADMSG);
	rgw_str_fini(&s);
}

END_TEST

START_TEST(test_multipart_codecs)
{
	struct rgw_mpart in[3] = { { .size = 5u << 20 }, { .size = 6u << 20 }, { .size = 1234 } };
	struct rgw_mpart *out = NULL;
	struct rgw_part p = { .num = 42, .size = 99, .mtime_ns = 123456789 }, d;
	char key[RGW_PART_KEY_LEN + 1];
	struct rgw_str s;
	size_t n = 0;
	uint8_t b[4];

	for (int i = 0; i < 3; i++)
		memset(in[i].inst, 0x10 + i, 16);
	rgw_str_init(&s);
	rgw_manifest_encode(in, 3, &s);
	ck_assert_uint_eq(s.len, RGW_MANIFEST_HDR + 3 * 24);
	ck_assert_int_eq(rgw_manifest_decode(s.p, s.len, &out, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert(!memcmp(out, in, sizeof(in)));
	free(out);
	/* a short, a long, a zero-count and a bad-magic manifest are refused */
	ck_assert_int_eq(rgw_manifest_decode(s.p, s.len - 1, &out, &n), -EBADMSG);
	ck_assert_int_eq(rgw_manifest_decode(s.p, RGW_MANIFEST_HDR, &out, &n), -EBADMSG);
	s.p[5] = 0;
	s.p[6] = s.p[7] = s.p[8] = 0;
	ck_assert_int_eq(rgw_manifest_decode(s.p, RGW_MANIFEST_HDR, &out, &n), -EBADMSG);
	s.p[0] = 'X';
	ck_assert_int_eq(rgw_manifest_decode(s.p, s.len, &out, &n), -EBADMSG);
	rgw_str_fini(&s);

	memset(p.inst, 0xab, 16);
	memset(p.md5, 0xcd, 16);
	rgw_part_key(42, p.inst, key);
	ck_assert_str_eq(key, "00042abababababababababababababababab");
	rgw_str_init(&s);
	rgw_part_encode(&p, &s);
	ck_assert_int_eq(rgw_part_decode(key, strlen(key), s.p, s.len, &d), 0);
	ck_assert_uint_eq(d.num, 42);
	ck_assert_uint_eq(d.size, 99);
	ck_assert_int_eq(d.mtime_ns, 123456789);
	ck_assert(!memcmp(d.inst, p.inst, 16) && !memcmp(d.md5, p.md5, 16));
	ck_assert_int_eq(d.ck_alg, 0);
	ck_assert_int_eq(rgw_part_decode(key, strlen(key), s.p, s.len - 1, &d), -EBADMSG);
	/* a part's checksum, appended (and an older record without it still decodes) */
	rgw_str_reset(&s);
	p.ck_alg = 1;
	snprintf(p.ck, sizeof(p.ck), "%s", "AAECAw==");
	rgw_part_encode(&p, &s);
	ck_assert_uint_eq(s.len, 33 + 2 + 8);
	ck_assert_int_eq(rgw_part_decode(key, strlen(key), s.p, s.len, &d), 0);
	ck_assert_int_eq(d.ck_alg, 1);
	ck_assert_str_eq(d.ck, "AAECAw==");
	ck_assert_int_eq(rgw_part_decode(key, strlen(key), s.p, s.len - 1, &d), 0);
	ck_assert_int_eq(d.ck_alg, 0); /* (cut short: ignored, not misread) */
	ck_assert_int_eq(rgw_part_decode(key, strlen(key), s.p, 33, &d), 0);
	ck_assert_int_eq(d.ck_alg, 0);
	key[0] = 'x';
	ck_assert_int_eq(rgw_part_decode(key, strlen(key), s.p, s.len, &d), -EBADMSG);
	memcpy(key, "00000", 5); /* part 0 does not exist */
	ck_assert_int_eq(rgw_part_decode(key, strlen(key), s.p, s.len, &d), -EBADMSG);
	rgw_str_fini(&s);
	ck_assert_int_eq(rgw_unhex("0aFf", b, 2), 0);
	ck_assert(b[0] == 0x0a && b[1] == 0xff);
	ck_assert_int_eq(rgw_unhex("0g", b, 1), -EINVAL);
}

END_TEST

static int
collect(void *arg, const char *b, size_t n)
{
	rgw_str_add(arg, b, n);
	return 0;
}

static int
stop_at_once(void *arg, const char *b, size_t n)
{
	(void)arg;
	(void)b;
	(void)n;
	return 1;
}

START_TEST(test_checksums)
{
	static const struct {
		const char *alg, *want;
	} cases[] = { { "crc32", "y/Q5Jg==" },
		      { "CRC32C", "4waSgw==" },
		      { "crc64nvme", "rosUhgp5mIg=" },
		      { "sha1", "98O8HYCOBHMq32eZZczDTKeuNEE=" },
		      { "sha256", "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=" } };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rgw_cksum c;
		char out[64];

		ck_assert_int_eq(rgw_cksum_init(&c, rgw_cksum_alg_of(cases[i].alg)), 0);
		/* (in two pieces: the sums chain) */
		rgw_cksum_update(&c, "1234", 4);
		rgw_cksum_update(&c, "56789", 5);
		rgw_cksum_final(&c, out, sizeof(out));
		rgw_cksum_fini(&c);
		ck_assert_str_eq(out, cases[i].want);
	}
	ck_assert_int_eq(rgw_cksum_alg_of("md5"), RGW_CK_NONE);
	ck_assert_str_eq(rgw_cksum_header(RGW_CK_CRC64NVME), "x-amz-checksum-crc64nvme");
}

END_TEST

/* The unsigned-trailer form, fed one byte at a time, and malformed bodies. */
START_TEST(test_awschunk_unsigned)
{
	static const char body[] = "4\r\n1234\r\n5\r\n56789\r\n0\r\n"
				   "x-amz-checksum-crc32:y/Q5Jg==\r\n\r\n";
	static const char *const bad[] = {
		"g\r\n",                 /* not hex */
		"4\r\n1234XY",           /* no CRLF after the data */
		"0\r\nno-colon\r\n",     /* a trailer without a colon */
		"0\r\n\r\nmore",         /* bytes past the end */
		"80000000\r\n",          /* a 2 GiB chunk */
		"11111111111111111\r\n", /* 17 hex digits */
	};
	struct rgw_awschunk d;
	struct rgw_str got;
	char v[64];

	rgw_str_init(&got);
	ck_assert_int_eq(rgw_awschunk_init(&d, RGW_AWSCHUNK_TRAILER, NULL, NULL, NULL), 0);
	for (size_t i = 0; i < sizeof(body) - 1; i++) {
		ck_assert(!rgw_awschunk_done(&d));
		ck_assert_int_eq(rgw_awschunk_feed(&d, body + i, 1, collect, &got), 0);
	}
	ck_assert(rgw_awschunk_done(&d));
	ck_assert_uint_eq(got.len, 9);
	ck_assert(!memcmp(got.p, "123456789", 9));
	ck_assert_int_eq(rgw_awschunk_trailer(&d, "x-amz-checksum-crc32", v, sizeof(v)), 0);
	ck_assert_str_eq(v, "y/Q5Jg==");
	ck_assert_int_eq(rgw_awschunk_trailer(&d, "x-amz-checksum-sha1", v, sizeof(v)), -ENOENT);
	rgw_awschunk_fini(&d);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(rgw_awschunk_init(&d, RGW_AWSCHUNK_TRAILER, NULL, NULL, NULL), 0);
		ck_assert_int_eq(rgw_awschunk_feed(&d, bad[i], strlen(bad[i]), collect, &got),
				 -EBADMSG);
		ck_assert_ptr_nonnull(d.err);
		rgw_awschunk_fini(&d);
	}
	/* a callback that stops the feed: -ECANCELED at once */
	ck_assert_int_eq(rgw_awschunk_init(&d, RGW_AWSCHUNK_TRAILER, NULL, NULL, NULL), 0);
	ck_assert_int_eq(rgw_awschunk_feed(&d, body, sizeof(body) - 1, stop_at_once, NULL),
			 -ECANCELED);
	rgw_awschunk_fini(&d);
	/* a trailer where none was announced */
	ck_assert_int_eq(rgw_awschunk_init(&d, 0, NULL, NULL, NULL), 0);
	ck_assert_int_eq(rgw_awschunk_feed(&d, "0\r\nx:y\r\n", 8, collect, &got), -EBADMSG);
	rgw_awschunk_fini(&d);
	rgw_str_fini(&got);
}

END_TEST

/* AWS's example of STREAMING-AWS4-HMAC-SHA256-PAYLOAD (S3 API reference, sigv4-streaming). */
START_TEST(test_awschunk_signed)
{
	struct rgw_sigv4 a;
	struct rgw_awschunk d;
	struct rgw_str body, got;
	uint8_t key[32];
	char *a64 = malloc(65536);

	memset(&a, 0, sizeof(a));
	snprintf(a.amz_date, sizeof(a.amz_date), "20130524T000000Z");
	snprintf(a.scope_date, sizeof(a.scope_date), "20130524");
	snprintf(a.region, sizeof(a.region), "us-east-1");
	snprintf(a.service, sizeof(a.service), "s3");
	rgw_sigv4_key("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", &a, key);
	memset(a64, 'a', 65536);
	rgw_str_init(&body);
	rgw_str_adds(&body, "10000;chunk-signature="
			    "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648\r\n");
	rgw_str_add(&body, a64, 65536);
	rgw_str_adds(&body, "\r\n400;chunk-signature="
			    "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497\r\n");
	rgw_str_add(&body, a64, 1024);
	rgw_str_adds(&body,
		     "\r\n0;chunk-signature="
		     "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n\r\n");
	rgw_str_init(&got);
	ck_assert_int_eq(
		rgw_awschunk_init(
			&d, RGW_AWSCHUNK_SIGNED, key, &a,
			"4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"),
		0);
	ck_assert_int_eq(rgw_awschunk_feed(&d, body.p, body.len, collect, &got), 0);
	ck_assert(rgw_awschunk_done(&d));
	ck_assert_uint_eq(got.len, 65536 + 1024);
	rgw_awschunk_fini(&d);
	/* one byte changed in the second chunk: its signature fails */
	body.p[body.len - 100] ^= 1;
	ck_assert_int_eq(
		rgw_awschunk_init(
			&d, RGW_AWSCHUNK_SIGNED, key, &a,
			"4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"),
		0);
	ck_assert_int_eq(rgw_awschunk_feed(&d, body.p, body.len, collect, &got), -EPERM);
	rgw_awschunk_fini(&d);
	rgw_str_fini(&body);
	rgw_str_fini(&got);
	free(a64);
}

END_TEST

START_TEST(test_bucket_codec)
{
	struct rgw_bucket b = { 0 }, d;
	char *j;

	snprintf(b.name, sizeof(b.name), "my-bucket");
	snprintf(b.id, sizeof(b.id), "0123456789abcdef0123456789abcdef");
	snprintf(b.owner, sizeof(b.owner), "alice");
	snprintf(b.location, sizeof(b.location), "us-east-1");
	snprintf(b.acl, sizeof(b.acl), "private");
	b.created = 1796196600;
	b.quota_bytes = 1ll << 40;
	b.quota_objects = 1000000;
	j = rgw_bucket_encode(&b);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(rgw_bucket_decode(j, strlen(j), &d), 0);
	ck_assert_str_eq(d.id, b.id);
	ck_assert_int_eq(d.created, b.created);
	ck_assert_int_eq(d.quota_bytes, 1ll << 40);
	ck_assert_int_eq(d.quota_objects, 1000000);
	free(j);
	{
		/* (records written before quotas have none; a negative one is refused) */
		const char *old = "{\"name\":\"abc\",\"id\":\"0123456789abcdef0123456789abcdef\","
				  "\"owner\":\"a\"}";
		const char *neg = "{\"name\":\"abc\",\"id\":\"0123456789abcdef0123456789abcdef\","
				  "\"owner\":\"a\",\"quota_bytes\":-1}";

		ck_assert_int_eq(rgw_bucket_decode(old, strlen(old), &d), 0);
		ck_assert_int_eq(d.quota_bytes, 0);
		ck_assert_int_eq(rgw_bucket_decode(neg, strlen(neg), &d), -EBADMSG);
	}
	ck_assert_int_eq(rgw_bucket_decode("{\"name\":1}", 10, &d), -EBADMSG);
	ck_assert_int_eq(rgw_bucket_decode("[", 1, &d), -EBADMSG);
	ck_assert(rgw_bucket_name_ok("my-bucket.1"));
	ck_assert(!rgw_bucket_name_ok("ab"));
	ck_assert(!rgw_bucket_name_ok("My-Bucket"));
	ck_assert(!rgw_bucket_name_ok("a..b"));
	ck_assert(!rgw_bucket_name_ok("-abc"));
	ck_assert(!rgw_bucket_name_ok("192.168.1.1"));
	ck_assert(!rgw_bucket_name_ok("xn--abc"));
}

END_TEST

START_TEST(test_xml)
{
	static const char del[] =
		"<?xml version=\"1.0\"?><Delete xmlns=\"http://s3.amazonaws.com/doc/"
		"2006-03-01/\"><Quiet>true</Quiet><Object><Key>a&amp;b</Key>"
		"</Object><Object><Key>c</Key></Object></Delete>";
	struct rgw_xml *x;
	char err[128], *deep;
	size_t n = 0;

	ck_assert_int_eq(rgw_xml_parse(del, strlen(del), &x, err, sizeof(err)), 0);
	ck_assert_str_eq(x->name, "Delete");
	ck_assert_str_eq(rgw_xml_child_text(x, "Quiet"), "true");
	ck_assert_str_eq(rgw_xml_child_text(rgw_xml_child(x, "Object"), "Key"), "a&b");
	for (const struct rgw_xml *c = x->child; c; c = c->next)
		n += !strcmp(c->name, "Object");
	ck_assert_uint_eq(n, 2);
	rgw_xml_free(x);
	ck_assert_int_eq(rgw_xml_parse("<a><b></a>", 10, &x, err, sizeof(err)), -EBADMSG);
	ck_assert_int_eq(rgw_xml_parse("<!DOCTYPE a [<!ENTITY e \"x\">]><a>&e;</a>", 40, &x, err,
				       sizeof(err)),
			 -EBADMSG);
	deep = malloc(2000);
	n = 0;
	for (int i = 0; i < 40; i++)
		n += (size_t)snprintf(deep + n, 2000 - n, "<a>");
	for (int i = 0; i < 40; i++)
		n += (size_t)snprintf(deep + n, 2000 - n, "</a>");
	ck_assert_int_eq(rgw_xml_parse(deep, n, &x, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "deep"));
	free(deep);
}

END_TEST

START_TEST(test_escaping)
{
	struct rgw_str s;

	rgw_str_init(&s);
	rgw_str_xml(&s, "a<b>&\"'\x01", 8);
	ck_assert_str_eq(rgw_str_cstr(&s), "a&lt;b&gt;&amp;&quot;&apos;&#x1;");
	rgw_str_reset(&s);
	rgw_str_uri(&s, "a b/c+~é", 9, true);
	ck_assert_str_eq(rgw_str_cstr(&s), "a%20b/c%2B~%C3%A9");
	rgw_str_reset(&s);
	rgw_str_uri(&s, "a/b", 3, false);
	ck_assert_str_eq(rgw_str_cstr(&s), "a%2Fb");
	rgw_str_reset(&s);
	ck_assert_int_eq(rgw_str_unescape(&s, "a%2fb%4", 7), -EINVAL);
	rgw_str_reset(&s);
	ck_assert_int_eq(rgw_str_unescape(&s, "a%2fb", 5), 0);
	ck_assert_str_eq(rgw_str_cstr(&s), "a/b");
	rgw_str_fini(&s);
}

END_TEST

START_TEST(test_lifecycle)
{
	static const char ok[] =
		"<LifecycleConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		"<Rule><ID>a</ID><Filter><And><Prefix>logs/</Prefix><Tag><Key>k</Key><Value>v</Value>"
		"</Tag></And></Filter><Status>Enabled</Status><Expiration><Days>3</Days></Expiration>"
		"<NoncurrentVersionExpiration><NoncurrentDays>2</NoncurrentDays>"
		"<NewerNoncurrentVersions>1</NewerNoncurrentVersions></NoncurrentVersionExpiration>"
		"</Rule><Rule><Prefix>tmp/</Prefix><Status>Disabled</Status>"
		"<AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation>"
		"</AbortIncompleteMultipartUpload><Expiration><Date>2027-01-01T00:00:00.000Z</Date>"
		"</Expiration></Rule></LifecycleConfiguration>";

	static const struct {
		const char *xml;
		int rc;
	} bad[] = {
		{ "<LifecycleConfiguration/>", -EBADMSG },
		{ "<Other><Rule/></Other>", -EBADMSG },
		{ "<LifecycleConfiguration><Rule><Status>Enabled</Status><Expiration><Days>0</Days>"
		  "</Expiration></Rule></LifecycleConfiguration>",
		  -EBADMSG },
		{ "<LifecycleConfiguration><Rule><Status>On</Status><Expiration><Days>1</Days>"
		  "</Expiration></Rule></LifecycleConfiguration>",
		  -EBADMSG },
		{ "<LifecycleConfiguration><Rule><Status>Enabled</Status><Transition><Days>1</Days>"
		  "<StorageClass>GLACIER</StorageClass></Transition></Rule></LifecycleConfiguration>",
		  -EOPNOTSUPP },
		{ "<LifecycleConfiguration><Rule><Prefix>a</Prefix><Filter><Prefix>a</Prefix></Filter>"
		  "<Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>"
		  "</LifecycleConfiguration>",
		  -EBADMSG },
		{ "<LifecycleConfiguration><Rule><ID>x</ID><Status>Enabled</Status><Expiration><Days>1"
		  "</Days></Expiration></Rule><Rule><ID>x</ID><Status>Enabled</Status><Expiration>"
		  "<Days>2</Days></Expiration></Rule></LifecycleConfiguration>",
		  -EBADMSG },
		{ "<LifecycleConfiguration><Rule><Status>Enabled</Status><Expiration><Date>2027-01-01T"
		  "10:00:00Z</Date></Expiration></Rule></LifecycleConfiguration>",
		  -EBADMSG },
		{ "<LifecycleConfiguration><Rule><Filter><Tag><Key>k</Key><Value>v</Value></Tag>"
		  "</Filter><Status>Enabled</Status><AbortIncompleteMultipartUpload>"
		  "<DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload>"
		  "</Rule></LifecycleConfiguration>",
		  -EBADMSG },
		{ "<LifecycleConfiguration><Rule><Status>Enabled</Status></Rule>"
		  "</LifecycleConfiguration>",
		  -EBADMSG },
	};
	struct rgw_lc lc;
	char err[160];

	ck_assert_int_eq(rgw_lc_parse(ok, strlen(ok), &lc, err, sizeof(err)), 0);
	ck_assert_int_eq(lc.n, 2);
	ck_assert_str_eq(lc.r[0].id, "a");
	ck_assert_str_eq(lc.r[0].prefix, "logs/");
	ck_assert(lc.r[0].enabled && lc.r[0].exp_days == 3 && lc.r[0].nc_days == 2 &&
		  lc.r[0].nc_newer == 1);
	ck_assert(rgw_lc_prefix_match(&lc.r[0], "logs/x", 6) &&
		  !rgw_lc_prefix_match(&lc.r[0], "x", 1));
	ck_assert(rgw_lc_tags_match(&lc.r[0], "j\0w\0k\0v\0", 8));
	ck_assert(!rgw_lc_tags_match(&lc.r[0], "k\0w\0", 4) &&
		  !rgw_lc_tags_match(&lc.r[0], NULL, 0));
	ck_assert(!lc.r[1].enabled && lc.r[1].abort_days == 1 && lc.r[1].exp_date == 1798761600);
	ck_assert(!rgw_lc_prefix_match(&lc.r[1], "tmp/a", 5)); /* (disabled) */
	rgw_lc_fini(&lc);
	for (size_t i = 0; i < CM_ARRAY_SIZE(bad); i++)
		ck_assert_msg(rgw_lc_parse(bad[i].xml, strlen(bad[i].xml), &lc, err, sizeof(err)) ==
				      bad[i].rc,
			      "case %zu", i);
}

END_TEST

/* b's bytes as a string compared with (z, zlen). */
static bool
str_is(const struct rgw_str *b, const char *z, size_t zlen)
{
	return !b->oom && b->len == zlen && !memcmp(b->p, z, zlen);
}

START_TEST(test_shardmap)
{
	struct rgw_shard_span sp[3] = { { 0, (const uint8_t *)"", 0 },
					{ 5, (const uint8_t *)"m", 1 },
					{ 2, (const uint8_t *)"t", 1 } };
	struct rgw_shardmap m = { .n = 3, .v = sp }, d;
	struct rgw_str b, r;

	static const struct {
		const char *key;
		size_t span;
	} picks[] = { { "a", 0 }, { "l\xef\xbf\xbd", 0 },
		      { "m", 1 }, { "m\x01", 1 },
		      { "s", 1 }, { "t", 2 },
		      { "zz", 2 } };

	/* No map: shard 0 holds everything, its range "" "\0" "" (to the end). */
	ck_assert_int_eq(rgw_shardmap_decode(NULL, 0, &d), 0);
	ck_assert_uint_eq(d.n, 1);
	ck_assert_uint_eq(d.v[0].num, 0);
	ck_assert_uint_eq(rgw_shardmap_pick(&d, "anything", 8), 0);
	rgw_str_init(&r);
	rgw_shardmap_range(&d, 0, &r);
	ck_assert(str_is(&r, "\0", 1));
	ck_assert_uint_eq(rgw_shardmap_next_num(&d), 1);
	rgw_shardmap_fini(&d);

	/* Shard objects' names and retired notes' keys. */
	{
		char oid[64], key[RGW_RETIRED_KEY_LEN + 1];
		uint32_t num = 0;

		rgw_shard_oid("ab12", 2018661243, oid, sizeof(oid));
		ck_assert_str_eq(oid, "idx.ab12.2018661243");
		rgw_retired_key(0x7fffffff, key);
		ck_assert_str_eq(key, "shard.retired.7fffffff");
		ck_assert_int_eq(rgw_retired_num(key, strlen(key), &num), 0);
		ck_assert_uint_eq(num, 0x7fffffff);
		ck_assert_int_eq(rgw_retired_num(key, strlen(key) - 1, &num), -EINVAL);
		ck_assert_int_eq(rgw_retired_num("shard.retired.0000zz00", 22, &num), -EINVAL);
		ck_assert_int_eq(rgw_retired_num("shard.retiree.00000001", 22, &num), -EINVAL);
	}

	/* Three spans: encoded, decoded, picked, their marks. */
	rgw_str_init(&b);
	rgw_shardmap_encode(&m, &b);
	ck_assert(!b.oom);
	ck_assert_uint_eq(b.len, 5 + 3 * 6 + 2);
	ck_assert_int_eq(rgw_shardmap_decode(b.p, b.len, &d), 0);
	ck_assert_uint_eq(d.n, 3);
	for (size_t i = 0; i < 3; i++) {
		ck_assert_uint_eq(d.v[i].num, sp[i].num);
		ck_assert_uint_eq(d.v[i].lolen, sp[i].lolen);
	}
	for (size_t i = 0; i < sizeof(picks) / sizeof(picks[0]); i++)
		ck_assert_msg(rgw_shardmap_pick(&d, picks[i].key, strlen(picks[i].key)) ==
				      picks[i].span,
			      "key %s", picks[i].key);
	ck_assert_uint_eq(rgw_shardmap_next_num(&d), 6);
	rgw_str_reset(&r);
	rgw_shardmap_range(&d, 1, &r);
	ck_assert(str_is(&r, "m\0t", 3));
	rgw_str_reset(&r);
	rgw_shardmap_range(&d, 2, &r);
	ck_assert(str_is(&r, "t\0", 2));
	rgw_shardmap_fini(&d);

	/* Bad maps are refused whole. */
	{
		struct rgw_str x;
		static const uint8_t hdr1[] = { RGW_MAP_V, 1, 0, 0, 0 };

		rgw_str_init(&x);
		rgw_str_add(&x, b.p, b.len - 1); /* truncated */
		ck_assert_int_eq(rgw_shardmap_decode(x.p, x.len, &d), -EBADMSG);
		rgw_str_add(&x, "tz", 2); /* a trailing byte */
		ck_assert_int_eq(rgw_shardmap_decode(x.p, x.len, &d), -EBADMSG);
		rgw_str_reset(&x);
		rgw_str_add(&x, b.p, b.len);
		x.p[0] = 2; /* another version */
		ck_assert_int_eq(rgw_shardmap_decode(x.p, x.len, &d), -EBADMSG);
		x.p[0] = RGW_MAP_V;
		x.p[1] = (char)0xff; /* a count the bytes cannot hold */
		ck_assert_int_eq(rgw_shardmap_decode(x.p, x.len, &d), -EBADMSG);
		rgw_str_reset(&x);
		rgw_str_add(&x, hdr1, sizeof(hdr1)); /* one span whose key is not "" */
		rgw_str_add(&x, "\0\0\0\0\1\0a", 7);
		ck_assert_int_eq(rgw_shardmap_decode(x.p, x.len, &d), -EBADMSG);
		rgw_str_reset(&x);
		sp[2].lo = (const uint8_t *)"m"; /* keys not ascending */
		rgw_shardmap_encode(&m, &x);
		ck_assert_int_eq(rgw_shardmap_decode(x.p, x.len, &d), -EBADMSG);
		rgw_str_reset(&x);
		sp[2].lo = (const uint8_t *)"t";
		sp[2].num = 5; /* a number twice */
		rgw_shardmap_encode(&m, &x);
		ck_assert_int_eq(rgw_shardmap_decode(x.p, x.len, &d), -EBADMSG);
		rgw_str_reset(&x);
		sp[2].num = 2;
		sp[1].lo = (const uint8_t *)"\0";
		rgw_shardmap_encode(&m, &x); /* a NUL in a key */
		ck_assert_int_eq(rgw_shardmap_decode(x.p, x.len, &d), -EBADMSG);
		sp[1].lo = (const uint8_t *)"m";
		ck_assert_uint_eq(d.n, 1); /* (a refused map is left as shard 0 alone, freeable) */
		rgw_shardmap_fini(&d);
		rgw_str_fini(&x);
	}

	/* Range marks: what a shard says against what the map said. */
	{
		struct rgw_str f;
		const uint8_t *fr, *fk;
		size_t frl, fkl;
		char tag;

		rgw_str_init(&f);
		ck_assert_int_eq(rgw_range_state("m\0t", 3, "m\0t", 3), RGW_RANGE_OK);
		ck_assert_int_eq(rgw_range_state("m\0t", 3, "m\0", 2), RGW_RANGE_MOVED);
		ck_assert_int_eq(rgw_range_state("m\0t", 3, NULL, 0), RGW_RANGE_MOVED);
		ck_assert_int_eq(
			rgw_range_state("m\0t", 3, RGW_RANGE_CLOSED, sizeof(RGW_RANGE_CLOSED) - 1),
			RGW_RANGE_CLOSED_ST);
		rgw_range_freeze(RGW_FREEZE_SPLIT, "m\0t", 3, "p", 1, &f);
		ck_assert(str_is(&f, "\xffsm\0t\0p", 7));
		ck_assert_int_eq(rgw_range_state("m\0t", 3, f.p, f.len), RGW_RANGE_FROZEN);
		ck_assert_int_eq(rgw_range_state("m\0", 2, f.p, f.len), RGW_RANGE_MOVED);
		/* a split's two halves, as a map from after its map change names them */
		ck_assert_int_eq(rgw_range_state("m\0p", 3, f.p, f.len), RGW_RANGE_FROZEN);
		ck_assert_int_eq(rgw_range_state("p\0t", 3, f.p, f.len), RGW_RANGE_FROZEN);
		ck_assert_int_eq(rgw_range_state("m\0q", 3, f.p, f.len), RGW_RANGE_MOVED);
		ck_assert_int_eq(rgw_range_state("p\0u", 3, f.p, f.len), RGW_RANGE_MOVED);
		ck_assert_int_eq(rgw_range_state("p\0", 2, f.p, f.len), RGW_RANGE_MOVED);
		ck_assert_int_eq(rgw_range_frozen_parse(f.p, f.len, &tag, &fr, &frl, &fk, &fkl), 0);
		ck_assert_int_eq(tag, RGW_FREEZE_SPLIT);
		ck_assert_uint_eq(frl, 3);
		ck_assert_int_eq(memcmp(fr, "m\0t", 3), 0);
		ck_assert_uint_eq(fkl, 1);
		ck_assert_int_eq(fk[0], 'p');
		ck_assert_int_eq(rgw_range_frozen_parse("m\0t", 3, &tag, &fr, &frl, &fk, &fkl),
				 -EINVAL);
		ck_assert_int_eq(rgw_range_frozen_parse("\xffs\0", 3, &tag, &fr, &frl, &fk, &fkl),
				 -EINVAL);
		/* a merge of m..p and p..t: both old ranges and the merged one are frozen */
		rgw_str_reset(&f);
		rgw_range_freeze(RGW_FREEZE_MERGE, "m\0t", 3, "p", 1, &f);
		ck_assert(str_is(&f, "\xffmm\0t\0p", 7));
		ck_assert_int_eq(rgw_range_state("m\0p", 3, f.p, f.len), RGW_RANGE_FROZEN);
		ck_assert_int_eq(rgw_range_state("p\0t", 3, f.p, f.len), RGW_RANGE_FROZEN);
		ck_assert_int_eq(rgw_range_state("m\0t", 3, f.p, f.len), RGW_RANGE_FROZEN);
		ck_assert_int_eq(rgw_range_state("p\0u", 3, f.p, f.len), RGW_RANGE_MOVED);
		/* a merged shard's mark: every reader of it reads the map anew */
		ck_assert_int_eq(rgw_range_state("p\0t", 3, "\x01merged", 7), RGW_RANGE_MOVED);
		rgw_str_fini(&f);
	}
	rgw_str_fini(&r);
	rgw_str_fini(&b);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("rgw_codec");
	TCase *tc = tcase_create("rgw_codec");

	tcase_add_test(tc, test_uri);
	tcase_add_test(tc, test_range);
	tcase_add_test(tc, test_copy_source);
	tcase_add_test(tc, test_tags);
	tcase_add_test(tc, test_conditions);
	tcase_add_test(tc, test_entry_codec);
	tcase_add_test(tc, test_bucket_codec);
	tcase_add_test(tc, test_multipart_codecs);
	tcase_add_test(tc, test_checksums);
	tcase_add_test(tc, test_awschunk_unsigned);
	tcase_add_test(tc, test_awschunk_signed);
	tcase_add_test(tc, test_xml);
	tcase_add_test(tc, test_escaping);
	tcase_add_test(tc, test_lifecycle);
	tcase_add_test(tc, test_shardmap);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
