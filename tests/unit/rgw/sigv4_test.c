/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SigV4: the example GET of AWS's S3 documentation ("Signature calculations
 * for the Authorization header", the test.txt request with its published
 * signature), presigned parsing and expiry, malformed credentials, and
 * chunk signatures chaining.
 */
#include "rgw/http.h"
#include "rgw/sigv4.h"
#include "testlib.h"

#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

struct rec {
	struct rgw_http_head *h;
};

static int
on_head(struct rgw_http_parser *p, struct rgw_http_head *h)
{
	(void)p;
	(void)h;
	return 0;
}

static int
on_body(struct rgw_http_parser *p, const char *d, size_t n)
{
	(void)p;
	(void)d;
	(void)n;
	return 0;
}

static int
on_end(struct rgw_http_parser *p)
{
	(void)p;
	return 0;
}

static const struct rgw_http_parser_ops ops = { on_head, on_body, on_end };

static struct rgw_http_head *
parse(const char *req)
{
	struct rgw_http_head *h = malloc(sizeof(*h));
	struct rgw_http_parser *p;
	size_t used;

	ck_assert_int_eq(rgw_http_parser_create(&ops, NULL, h, &p), 0);
	ck_assert_int_eq(rgw_http_parser_feed(p, req, strlen(req), &used), 1);
	rgw_http_parser_destroy(p);
	return h;
}

START_TEST(test_aws_example)
{
	/* The GET Object example of the S3 API reference (range bytes=0-9). */
	struct rgw_http_head *h = parse(
		"GET /test.txt HTTP/1.1\r\n"
		"Host: examplebucket.s3.amazonaws.com\r\n"
		"Authorization: AWS4-HMAC-SHA256 "
		"Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
		"SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
		"Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41\r\n"
		"Range: bytes=0-9\r\n"
		"x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\r\n"
		"x-amz-date: 20130524T000000Z\r\n\r\n");
	struct rgw_sigv4 a;
	char err[128], seed[65];

	ck_assert_int_eq(rgw_sigv4_parse(h, &a, err, sizeof(err)), 0);
	ck_assert_str_eq(a.access_key, "AKIAIOSFODNN7EXAMPLE");
	ck_assert_str_eq(a.region, "us-east-1");
	ck_assert_uint_eq(a.nsigned, 4);
	ck_assert_int_eq(rgw_sigv4_verify(h, &a, SECRET, seed), 0);
	ck_assert_str_eq(seed, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
	ck_assert_int_eq(rgw_sigv4_verify(h, &a, "wrong-secret", NULL), -EPERM);
	/* The clock: 2013 is far outside the 15 minutes. */
	ck_assert_int_eq(rgw_sigv4_check_time(&a, a.time + 60), 0);
	ck_assert_int_eq(rgw_sigv4_check_time(&a, a.time + 3600), -ETIMEDOUT);
	free(h);
}

END_TEST

START_TEST(test_tampered)
{
	/* The same request with another range: the signature no longer holds. */
	struct rgw_http_head *h = parse(
		"GET /test.txt HTTP/1.1\r\n"
		"Host: examplebucket.s3.amazonaws.com\r\n"
		"Authorization: AWS4-HMAC-SHA256 "
		"Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
		"SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
		"Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41\r\n"
		"Range: bytes=0-10\r\n"
		"x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\r\n"
		"x-amz-date: 20130524T000000Z\r\n\r\n");
	struct rgw_sigv4 a;
	char err[128];

	ck_assert_int_eq(rgw_sigv4_parse(h, &a, err, sizeof(err)), 0);
	ck_assert_int_eq(rgw_sigv4_verify(h, &a, SECRET, NULL), -EPERM);
	free(h);
}

END_TEST

START_TEST(test_malformed)
{
	static const char *const bad[] = {
		"Authorization: AWS4-HMAC-SHA256 Credential=AK/2013/us-east-1/s3/aws4_request, "
		"SignedHeaders=host, Signature=00\r\n",
		"Authorization: AWS4-HMAC-SHA256 SignedHeaders=host, Signature=" /* no Credential */
		"0000000000000000000000000000000000000000000000000000000000000000\r\n",
		"Authorization: AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, "
		"SignedHeaders=x-amz-date;host, Signature=" /* not sorted */
		"0000000000000000000000000000000000000000000000000000000000000000\r\n",
		"Authorization: AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, "
		"SignedHeaders=x-amz-date, Signature=" /* no host */
		"0000000000000000000000000000000000000000000000000000000000000000\r\n",
		"Authorization: Bearer abc\r\n",
	};
	char req[1024], err[128];
	struct rgw_sigv4 a;

	for (size_t i = 0; i < CM_ARRAY_SIZE(bad); i++) {
		struct rgw_http_head *h;

		snprintf(req, sizeof(req),
			 "GET / HTTP/1.1\r\nHost: x\r\n%sx-amz-date: 20130524T000000Z\r\n"
			 "x-amz-content-sha256: UNSIGNED-PAYLOAD\r\n\r\n",
			 bad[i]);
		h = parse(req);
		ck_assert_int_eq(rgw_sigv4_parse(h, &a, err, sizeof(err)), -EINVAL);
		ck_assert(err[0]);
		free(h);
	}
	{
		struct rgw_http_head *h = parse("GET / HTTP/1.1\r\nHost: x\r\nAuthorization: AWS "
						"AK:sig\r\n\r\n");

		ck_assert_int_eq(rgw_sigv4_parse(h, &a, err, sizeof(err)), -EPROTONOSUPPORT);
		free(h);
	}
	{
		struct rgw_http_head *h = parse("GET /b/k HTTP/1.1\r\nHost: x\r\n\r\n");

		ck_assert_int_eq(rgw_sigv4_parse(h, &a, err, sizeof(err)), -ENOENT);
		free(h);
	}
}

END_TEST

START_TEST(test_presigned)
{
	/* Shape and expiry (the signature itself is checked against botocore's in rgw_test). */
	struct rgw_http_head *h = parse(
		"GET /b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256"
		"&X-Amz-Credential=AKID%2F20261202%2Fus-east-1%2Fs3%2Faws4_request"
		"&X-Amz-Date=20261202T070000Z&X-Amz-Expires=600&X-Amz-SignedHeaders=host"
		"&X-Amz-Signature=00000000000000000000000000000000000000000000000000000000000000aa "
		"HTTP/1.1\r\nHost: x\r\n\r\n");
	struct rgw_sigv4 a;
	char err[128];
	struct rgw_str cr;

	ck_assert_int_eq(rgw_sigv4_parse(h, &a, err, sizeof(err)), 0);
	ck_assert(a.presigned);
	ck_assert_str_eq(a.access_key, "AKID");
	ck_assert_uint_eq(a.expires, 600);
	ck_assert_int_eq(rgw_sigv4_check_time(&a, a.time + 599), 0);
	ck_assert_int_eq(rgw_sigv4_check_time(&a, a.time + 601), -EKEYEXPIRED);
	ck_assert_int_eq(rgw_sigv4_check_time(&a, a.time - 3600), -ETIMEDOUT);
	/* The canonical query leaves out the signature, sorted and re-encoded. */
	rgw_str_init(&cr);
	ck_assert_int_eq(rgw_sigv4_canonical(h, &a, false, &cr), 0);
	ck_assert_ptr_nonnull(
		strstr(rgw_str_cstr(&cr),
		       "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F20261202"));
	ck_assert_ptr_null(strstr(rgw_str_cstr(&cr), "X-Amz-Signature"));
	ck_assert_ptr_nonnull(strstr(rgw_str_cstr(&cr), "\nUNSIGNED-PAYLOAD"));
	rgw_str_fini(&cr);
	free(h);
	h = parse("GET /b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F20261202%2F"
		  "us-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261202T070000Z&X-Amz-Expires=604801"
		  "&X-Amz-SignedHeaders=host&X-Amz-Signature=00000000000000000000000000000000000000"
		  "000000000000000000000000aa HTTP/1.1\r\nHost: x\r\n\r\n");
	ck_assert_int_eq(rgw_sigv4_parse(h, &a, err, sizeof(err)), -EINVAL); /* (over 7 days) */
	free(h);
}

END_TEST

START_TEST(test_chunk_chain)
{
	/* Each chunk's signature depends on the previous: a reordering shows. */
	struct rgw_sigv4 a = { 0 };
	uint8_t key[32], h1[32], h2[32];
	char s1[65], s2[65], s2b[65];

	snprintf(a.scope_date, sizeof(a.scope_date), "20130524");
	snprintf(a.region, sizeof(a.region), "us-east-1");
	snprintf(a.service, sizeof(a.service), "s3");
	snprintf(a.amz_date, sizeof(a.amz_date), "20130524T000000Z");
	rgw_sigv4_key(SECRET, &a, key);
	rgw_sha256("one", 3, h1);
	rgw_sha256("two", 3, h2);
	rgw_sigv4_chunk_sig(key, &a, "AWS4-HMAC-SHA256-PAYLOAD", "seed", h1, s1);
	rgw_sigv4_chunk_sig(key, &a, "AWS4-HMAC-SHA256-PAYLOAD", s1, h2, s2);
	rgw_sigv4_chunk_sig(key, &a, "AWS4-HMAC-SHA256-PAYLOAD", "seed", h2, s2b);
	ck_assert_str_ne(s2, s2b);
	ck_assert(rgw_sigv4_equal(s1, s1));
	ck_assert(!rgw_sigv4_equal(s1, s2));
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("sigv4");
	TCase *tc = tcase_create("sigv4");

	tcase_add_test(tc, test_aws_example);
	tcase_add_test(tc, test_tampered);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_presigned);
	tcase_add_test(tc, test_chunk_chain);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
