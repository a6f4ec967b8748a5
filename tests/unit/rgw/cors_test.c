/* SPDX-License-Identifier: Apache-2.0 */
/* CORS configurations (rgw/src/cors.c): parsing, matching, response headers. */
#include "rgw/cors.h"
#include "testlib.h"

#define RULE(x) "<CORSRule>" x "</CORSRule>"

START_TEST(test_parse)
{
	static const struct {
		const char *xml;
		int rc;
	} bad[] = {
		{ "<CORSConfiguration/>", -EBADMSG },
		{ "<NotCors>" RULE(
			  "<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>") "</NotCors>",
		  -EBADMSG },
		{ "<CORSConfiguration>" RULE(
			  "<AllowedMethod>GET</AllowedMethod>") "</CORSConfiguration>",
		  -EBADMSG },
		{ "<CORSConfiguration>" RULE("<AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH"
					     "</AllowedMethod>") "</CORSConfiguration>",
		  -EINVAL },
		{ "<CORSConfiguration>" RULE(
			  "<AllowedOrigin>http://*.*.com</AllowedOrigin>"
			  "<AllowedMethod>GET</AllowedMethod>") "</CORSConfiguration>",
		  -EINVAL },
		{ "<CORSConfiguration>" RULE(
			  "<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET"
			  "</AllowedMethod><ExposeHeader>x-*</ExposeHeader>") "</CORSConfiguration>",
		  -EINVAL },
		{ "<CORSConfiguration>" RULE(
			  "<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET"
			  "</AllowedMethod><MaxAgeSeconds>-1</MaxAgeSeconds>") "</CORSConfiguration>",
		  -EBADMSG },
		{ "<CORSConfiguration>" RULE("<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET"
					     "</AllowedMethod><Bogus/>") "</CORSConfiguration>",
		  -EBADMSG },
		{ "<CORSConfiguration>" RULE(
			  "<AllowedOrigin>a&#13;&#10;b</AllowedOrigin>"
			  "<AllowedMethod>GET</AllowedMethod>") "</CORSConfiguration>",
		  -EINVAL },
	};
	struct rgw_cors c;
	char err[200];

	for (size_t i = 0; i < CM_ARRAY_SIZE(bad); i++) {
		int rc = rgw_cors_parse(bad[i].xml, strlen(bad[i].xml), &c, err, sizeof(err));

		ck_assert_msg(rc == bad[i].rc, "case %zu: %d (%s)", i, rc, err);
		ck_assert(c.n == 0 && !c.r);
	}
}

END_TEST

START_TEST(test_match)
{
	const char *xml = "<CORSConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">" RULE(
		"<ID>one</ID><AllowedOrigin>https://app.example.com</AllowedOrigin>"
		"<AllowedOrigin>http://*.example.org</AllowedOrigin>"
		"<AllowedMethod>PUT</AllowedMethod><AllowedMethod>GET</AllowedMethod>"
		"<AllowedHeader>content-type</AllowedHeader><AllowedHeader>x-amz-*"
		"</AllowedHeader><ExposeHeader>ETag</ExposeHeader>"
		"<ExposeHeader>x-amz-version-id</ExposeHeader>"
		"<MaxAgeSeconds>600</MaxAgeSeconds>")
		RULE("<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>") "</CORSConfiguration>";
	const struct rgw_cors_rule *r;
	struct rgw_cors c;
	struct rgw_str h;
	char err[200];

	ck_assert_int_eq(rgw_cors_parse(xml, strlen(xml), &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.n, 2);
	r = rgw_cors_match(&c, "https://app.example.com", RGW_CORS_PUT, "Content-Type, X-Amz-Date");
	ck_assert(r == &c.r[0]);
	ck_assert(rgw_cors_match(&c, "http://a.example.org", RGW_CORS_PUT, NULL) == &c.r[0]);
	/* a header the rule does not allow; a method none allows; any origin may GET */
	ck_assert(!rgw_cors_match(&c, "https://app.example.com", RGW_CORS_PUT, "authorization"));
	ck_assert(!rgw_cors_match(&c, "https://app.example.com", RGW_CORS_DELETE, NULL));
	ck_assert(rgw_cors_match(&c, "https://x.test", RGW_CORS_GET, NULL) == &c.r[1]);
	ck_assert(!rgw_cors_match(&c, "https://x.test", RGW_CORS_PUT, NULL));
	ck_assert(!rgw_cors_match(&c, "https://x.test", RGW_CORS_GET, "x-custom"));

	rgw_str_init(&h);
	rgw_cors_headers(r, "https://app.example.com", true, "content-type", &h);
	ck_assert(strstr(rgw_str_cstr(&h),
			 "Access-Control-Allow-Origin: https://app.example.com\r\n"));
	ck_assert(strstr(rgw_str_cstr(&h), "Access-Control-Allow-Credentials: true\r\n"));
	ck_assert(strstr(rgw_str_cstr(&h), "Access-Control-Allow-Methods: GET, PUT\r\n"));
	ck_assert(strstr(rgw_str_cstr(&h), "Access-Control-Allow-Headers: content-type\r\n"));
	ck_assert(strstr(rgw_str_cstr(&h),
			 "Access-Control-Expose-Headers: ETag, x-amz-version-id\r\n"));
	ck_assert(strstr(rgw_str_cstr(&h), "Access-Control-Max-Age: 600\r\n"));
	rgw_str_reset(&h);
	rgw_cors_headers(&c.r[1], "https://x.test", false, NULL, &h);
	ck_assert(strstr(rgw_str_cstr(&h), "Access-Control-Allow-Origin: *\r\n"));
	ck_assert(!strstr(rgw_str_cstr(&h), "Credentials"));
	ck_assert(!strstr(rgw_str_cstr(&h), "Max-Age"));
	rgw_str_fini(&h);
	rgw_cors_fini(&c);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("cors");
	TCase *tc = tcase_create("cors");

	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_match);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
