/* SPDX-License-Identifier: Apache-2.0 */
/* The request parser: heads, limits, bodies (plain and chunked), pipelining. */
#include "rgw/http.h"
#include "testlib.h"

struct rec {
	int heads, ends;
	char body[4096];
	size_t blen;
	struct rgw_http_head *h;
};

static int
on_head(struct rgw_http_parser *p, struct rgw_http_head *h)
{
	struct rec *r = rgw_http_parser_arg(p);

	r->heads++;
	r->h = h;
	return 0;
}

static int
on_body(struct rgw_http_parser *p, const char *d, size_t n)
{
	struct rec *r = rgw_http_parser_arg(p);

	ck_assert_uint_le(r->blen + n, sizeof(r->body));
	memcpy(r->body + r->blen, d, n);
	r->blen += n;
	return 0;
}

static int
on_end(struct rgw_http_parser *p)
{
	struct rec *r = rgw_http_parser_arg(p);

	r->ends++;
	return 0;
}

static const struct rgw_http_parser_ops ops = { on_head, on_body, on_end };

/* Feed all of s, byte by byte when slow, going on after each stop. \return the last rc. */
static int
feed_all(struct rgw_http_parser *p, const char *s, size_t n, bool slow)
{
	size_t off = 0;
	int rc = 0;

	while (off < n || (rc == 1 && rgw_http_parser_paused(p))) {
		size_t used = 0, len = slow ? CM_MIN((size_t)1, n - off) : n - off;

		rc = rgw_http_parser_feed(p, s + off, len, &used);
		if (rc < 0)
			return rc;
		off += used;
		if (rc == 0 && off == n)
			break;
	}
	return rc;
}

START_TEST(test_head_and_body)
{
	static const char req[] = "PUT /bkt/some%20key?uploads HTTP/1.1\r\n"
				  "Host: 127.0.0.1:7480\r\n"
				  "X-Amz-Meta-Color:   blue  \r\n"
				  "Expect: 100-continue\r\n"
				  "Content-Length: 5\r\n\r\nhello";
	struct rgw_http_head *h = malloc(sizeof(*h));
	struct rgw_http_parser *p;

	for (int slow = 0; slow < 2; slow++) {
		struct rec r = { 0 };

		ck_assert_int_eq(rgw_http_parser_create(&ops, &r, h, &p), 0);
		feed_all(p, req, sizeof(req) - 1, slow);
		ck_assert_int_eq(r.heads, 1);
		ck_assert_int_eq(r.ends, 1);
		ck_assert_int_eq(h->method, RGW_M_PUT);
		ck_assert_str_eq(h->target, "/bkt/some%20key?uploads");
		ck_assert_str_eq(rgw_http_hdr(h, "host"), "127.0.0.1:7480");
		ck_assert_str_eq(rgw_http_hdr(h, "x-amz-meta-color"), "blue");
		ck_assert(h->expect_continue);
		ck_assert(h->has_length);
		ck_assert_uint_eq(h->content_length, 5);
		ck_assert_uint_eq(r.blen, 5);
		ck_assert(!memcmp(r.body, "hello", 5));
		ck_assert_ptr_null(rgw_http_hdr(h, "missing"));
		rgw_http_parser_destroy(p);
	}
	free(h);
}

END_TEST

START_TEST(test_chunked_and_pipelined)
{
	static const char req[] =
		"PUT /b/k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
		"3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\n\r\n"
		"GET /b/k HTTP/1.1\r\nHost: x\r\n\r\n"
		"DELETE /b/k HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	struct rgw_http_head *h = malloc(sizeof(*h));
	struct rgw_http_parser *p;
	struct rec r = { 0 };
	size_t off = 0, used;
	int rc;

	ck_assert_int_eq(rgw_http_parser_create(&ops, &r, h, &p), 0);
	/* The first stop is at the first head. */
	rc = rgw_http_parser_feed(p, req, sizeof(req) - 1, &used);
	ck_assert_int_eq(rc, 1);
	ck_assert_int_eq(r.heads, 1);
	ck_assert(h->chunked);
	off += used;
	/* Then its end (the body decoded), before the second head. */
	rc = rgw_http_parser_feed(p, req + off, sizeof(req) - 1 - off, &used);
	ck_assert_int_eq(rc, 1);
	ck_assert_int_eq(r.ends, 1);
	ck_assert_int_eq(r.heads, 1);
	ck_assert_uint_eq(r.blen, 7);
	ck_assert(!memcmp(r.body, "abcdefg", 7));
	off += used;
	rc = rgw_http_parser_feed(p, req + off, sizeof(req) - 1 - off, &used);
	ck_assert_int_eq(rc, 1);
	ck_assert_int_eq(r.heads, 2);
	ck_assert_int_eq(h->method, RGW_M_GET);
	ck_assert(h->keep_alive);
	ck_assert(!h->has_length);
	off += used;
	/* A request without a body ends with a feed of nothing. */
	rc = rgw_http_parser_feed(p, req + off, 0, &used);
	ck_assert_int_eq(rc, 1);
	ck_assert_int_eq(r.ends, 2);
	off += used;
	ck_assert_int_ge(feed_all(p, req + off, sizeof(req) - 1 - off, false), 0);
	ck_assert_int_eq(r.heads, 3);
	ck_assert_int_eq(h->method, RGW_M_DELETE);
	ck_assert(!h->keep_alive);
	rgw_http_parser_destroy(p);
	free(h);
}

END_TEST

START_TEST(test_limits_and_garbage)
{
	struct rgw_http_head *h = malloc(sizeof(*h));
	struct rgw_http_parser *p;
	struct rec r = { 0 };
	size_t used, n;
	char *big = malloc(200000);
	int rc;

	/* A header over 8 KiB. */
	n = (size_t)snprintf(big, 200000, "GET / HTTP/1.1\r\nX-Big: ");
	memset(big + n, 'a', 9000);
	n += 9000;
	n += (size_t)snprintf(big + n, 200000 - n, "\r\n\r\n");
	ck_assert_int_eq(rgw_http_parser_create(&ops, &r, h, &p), 0);
	ck_assert_int_eq(rgw_http_parser_feed(p, big, n, &used), -E2BIG);
	ck_assert_ptr_nonnull(strstr(rgw_http_parser_error(p), "8 KiB"));
	rgw_http_parser_destroy(p);
	/* 101 headers. */
	n = (size_t)snprintf(big, 200000, "GET / HTTP/1.1\r\n");
	for (int i = 0; i < 101; i++)
		n += (size_t)snprintf(big + n, 200000 - n, "X-H%d: v\r\n", i);
	n += (size_t)snprintf(big + n, 200000 - n, "\r\n");
	ck_assert_int_eq(rgw_http_parser_create(&ops, &r, h, &p), 0);
	ck_assert_int_eq(rgw_http_parser_feed(p, big, n, &used), -E2BIG);
	rgw_http_parser_destroy(p);
	/* A head over 64 KiB in all (headers of 7 KiB each). */
	n = (size_t)snprintf(big, 200000, "GET / HTTP/1.1\r\n");
	for (int i = 0; i < 12; i++) {
		n += (size_t)snprintf(big + n, 200000 - n, "X-H%d: ", i);
		memset(big + n, 'b', 7000);
		n += 7000;
		n += (size_t)snprintf(big + n, 200000 - n, "\r\n");
	}
	n += (size_t)snprintf(big + n, 200000 - n, "\r\n");
	ck_assert_int_eq(rgw_http_parser_create(&ops, &r, h, &p), 0);
	ck_assert_int_eq(rgw_http_parser_feed(p, big, n, &used), -E2BIG);
	rgw_http_parser_destroy(p);
	/* Garbage, and a bad chunk size. */
	ck_assert_int_eq(rgw_http_parser_create(&ops, &r, h, &p), 0);
	ck_assert_int_eq(rgw_http_parser_feed(p, "\x01\x02 / HTTP/1.1\r\n\r\n", 18, &used),
			 -EBADMSG);
	rgw_http_parser_destroy(p);
	memset(&r, 0, sizeof(r));
	ck_assert_int_eq(rgw_http_parser_create(&ops, &r, h, &p), 0);
	rc = feed_all(p, "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 50, false);
	ck_assert_int_eq(rc, -EBADMSG);
	ck_assert_int_eq(rgw_http_parser_eof(p), -EBADMSG); /* (half a request) */
	rgw_http_parser_destroy(p);
	free(big);
	free(h);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("http_parse");
	TCase *tc = tcase_create("http_parse");

	tcase_add_test(tc, test_head_and_body);
	tcase_add_test(tc, test_chunked_and_pipelined);
	tcase_add_test(tc, test_limits_and_garbage);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
