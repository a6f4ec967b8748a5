/* SPDX-License-Identifier: Apache-2.0 */
/* Bucket policies (rgw/src/policy.c): what is refused when stored, and verdicts. */
#include "rgw/policy.h"
#include "testlib.h"

struct kv {
	const char *k, *v;
};

static const char *
cond_of(void *arg, const char *name)
{
	for (const struct kv *p = arg; p && p->k; p++)
		if (!strcmp(p->k, name))
			return p->v;
	return NULL;
}

static enum rgw_pol_effect
eval(const struct rgw_policy *p, const char *who, const char *action, const char *res,
     const struct kv *conds)
{
	struct rgw_pol_req r = {
		.principal = who,
		.action = action,
		.resource = res,
		.rlen = strlen(res),
		.cond = cond_of,
		.arg = (void *)conds,
	};

	return rgw_policy_eval(p, &r);
}

static struct rgw_policy *
parse_ok(const char *json)
{
	struct rgw_policy *p = NULL;
	char err[200];
	int rc = rgw_policy_parse(json, strlen(json), "bkt", &p, err, sizeof(err));

	ck_assert_msg(rc == 0, "%s: %s", json, err);
	return p;
}

START_TEST(test_wild)
{
	ck_assert(rgw_wild_match("a*c", 3, "abbbc", 5, false));
	ck_assert(rgw_wild_match("*", 1, "", 0, false));
	ck_assert(rgw_wild_match("a?c", 3, "abc", 3, false));
	ck_assert(!rgw_wild_match("a?c", 3, "ac", 2, false));
	ck_assert(rgw_wild_match("*b*b", 4, "abab", 4, false));
	ck_assert(!rgw_wild_match("*b*b", 4, "abac", 4, false));
	ck_assert(rgw_wild_match("S3:get*", 7, "s3:GetObject", 12, true));
	ck_assert(!rgw_wild_match("S3:get*", 7, "s3:GetObject", 12, false));
	ck_assert(rgw_wild_match("bkt/*", 5, "bkt/", 4, false));
	ck_assert(!rgw_wild_match("bkt/*", 5, "bkt", 3, false));
}

END_TEST

START_TEST(test_refused)
{
	static const char *const bad[] = {
		"",
		"[]",
		"{\"Version\":\"2012-10-17\"}",
		"{\"Version\":\"2013-01-01\",\"Statement\":[]}",
		/* no Effect, a bad Effect */
		"{\"Statement\":{\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":"
		"\"arn:aws:s3:::bkt/*\"}}",
		"{\"Statement\":{\"Effect\":\"Maybe\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
		"\"Resource\":\"arn:aws:s3:::bkt/*\"}}",
		/* an unknown action, a foreign service, no Action */
		"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObjekt\","
		"\"Resource\":\"arn:aws:s3:::bkt/*\"}}",
		"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"ec2:Run\","
		"\"Resource\":\"arn:aws:s3:::bkt/*\"}}",
		"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Resource\":"
		"\"arn:aws:s3:::bkt/*\"}}",
		/* another bucket's resource, not an ARN */
		"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
		"\"Resource\":\"arn:aws:s3:::other/*\"}}",
		"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
		"\"Resource\":\"bkt/*\"}}",
		"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
		"\"Resource\":\"arn:aws:s3:::bktx/*\"}}",
		/* principals */
		"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"alice\",\"Action\":\"s3:GetObject\","
		"\"Resource\":\"arn:aws:s3:::bkt/*\"}}",
		"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"Service\":\"x\"},\"Action\":"
		"\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::bkt/*\"}}",
		"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"arn:aws:iam::1:role/r\"},"
		"\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::bkt/*\"}}",
		"{\"Statement\":{\"Effect\":\"Allow\",\"NotPrincipal\":{\"AWS\":\"alice\"},\"Action\":"
		"\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::bkt/*\"}}",
		/* conditions: an unknown operator, an unknown key, a bad address */
		"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
		"\"Resource\":\"arn:aws:s3:::bkt/*\",\"Condition\":{\"StringSorta\":{\"s3:prefix\":"
		"\"a\"}}}}",
		"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
		"\"Resource\":\"arn:aws:s3:::bkt/*\",\"Condition\":{\"StringEquals\":{\"s3:"
		"ExistingObjectTag/x\":\"a\"}}}}",
		"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
		"\"Resource\":\"arn:aws:s3:::bkt/*\",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":"
		"\"10.0.0.0/33\"}}}}",
		/* values an operator cannot compare */
		"{\"Statement\":{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:ListBucket\","
		"\"Resource\":\"arn:aws:s3:::bkt\",\"Condition\":{\"NumericNotEquals\":{\"s3:max-keys\":"
		"\"ten\"}}}}",
		"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
		"\"Resource\":\"arn:aws:s3:::bkt/*\",\"Condition\":{\"Bool\":{\"aws:SecureTransport\":"
		"\"maybe\"}}}}",
		"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
		"\"Resource\":\"arn:aws:s3:::bkt/*\",\"Condition\":{\"DateLessThan\":{\"aws:CurrentTime\":"
		"\"soon\"}}}}",
		/* a variable without the 2012 version, an unknown field, duplicate keys */
		"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
		"\"Resource\":\"arn:aws:s3:::bkt/${aws:username}/*\"}}",
		"{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
		"\"Resource\":\"arn:aws:s3:::bkt/*\",\"Extra\":1}}",
		"{\"Statement\":{\"Effect\":\"Allow\",\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":"
		"\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::bkt/*\"}}",
	};
	struct rgw_policy *p;
	char err[200];

	for (size_t i = 0; i < CM_ARRAY_SIZE(bad); i++) {
		p = (struct rgw_policy *)1;
		ck_assert_msg(rgw_policy_parse(bad[i], strlen(bad[i]), "bkt", &p, err,
					       sizeof(err)) == -EBADMSG,
			      "case %zu was accepted", i);
		ck_assert(p == NULL);
		ck_assert(err[0]);
	}
}

END_TEST

START_TEST(test_verdicts)
{
	struct rgw_policy *p = parse_ok(
		"{\"Version\":\"2012-10-17\",\"Statement\":["
		"{\"Sid\":\"pub\",\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":[\"s3:GetObject\"],"
		"\"Resource\":\"arn:aws:s3:::bkt/public/*\"},"
		"{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":[\"arn:aws:iam::bob:root\","
		"\"arn:aws:iam:::user/carol\"]},\"Action\":\"s3:*\",\"Resource\":[\"arn:aws:s3:::bkt\","
		"\"arn:aws:s3:::bkt/*\"]},"
		"{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:DeleteObject\",\"Resource\":"
		"\"arn:aws:s3:::bkt/keep/*\"},"
		"{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"dave\"},\"Action\":\"s3:PutObject\","
		"\"Resource\":\"arn:aws:s3:::bkt/home/${aws:username}/*\"}]}");

	ck_assert_int_eq(eval(p, NULL, "s3:GetObject", "bkt/public/a", NULL), RGW_POL_ALLOW);
	ck_assert_int_eq(eval(p, NULL, "s3:GetObject", "bkt/private/a", NULL), RGW_POL_NONE);
	ck_assert_int_eq(eval(p, NULL, "s3:PutObject", "bkt/public/a", NULL), RGW_POL_NONE);
	ck_assert_int_eq(eval(p, "bob", "s3:PutObject", "bkt/x", NULL), RGW_POL_ALLOW);
	ck_assert_int_eq(eval(p, "carol", "s3:ListBucket", "bkt", NULL), RGW_POL_ALLOW);
	ck_assert_int_eq(eval(p, "eve", "s3:ListBucket", "bkt", NULL), RGW_POL_NONE);
	/* a Deny wins over an Allow */
	ck_assert_int_eq(eval(p, "bob", "s3:DeleteObject", "bkt/keep/1", NULL), RGW_POL_DENY);
	ck_assert_int_eq(eval(p, "bob", "s3:DeleteObject", "bkt/other", NULL), RGW_POL_ALLOW);
	/* ${aws:username} */
	ck_assert_int_eq(eval(p, "dave", "s3:PutObject", "bkt/home/dave/f", NULL), RGW_POL_ALLOW);
	ck_assert_int_eq(eval(p, "dave", "s3:PutObject", "bkt/home/eve/f", NULL), RGW_POL_NONE);
	ck_assert(rgw_policy_is_public(p));
	rgw_policy_free(p);

	/* NotAction, NotResource, NotPrincipal with Deny */
	p = parse_ok(
		"{\"Statement\":[{\"Effect\":\"Deny\",\"NotPrincipal\":{\"AWS\":\"admin\"},"
		"\"NotAction\":[\"s3:Get*\",\"s3:List*\"],\"Resource\":\"arn:aws:s3:::bkt/*\"},"
		"{\"Effect\":\"Allow\",\"Principal\":{\"CanonicalUser\":\"zed\"},\"Action\":\"*\","
		"\"NotResource\":\"arn:aws:s3:::bkt/secret*\"}]}");
	ck_assert_int_eq(eval(p, "zed", "s3:PutObject", "bkt/a", NULL), RGW_POL_DENY);
	ck_assert_int_eq(eval(p, "admin", "s3:PutObject", "bkt/a", NULL), RGW_POL_NONE);
	ck_assert_int_eq(eval(p, "zed", "s3:GetObject", "bkt/a", NULL), RGW_POL_ALLOW);
	ck_assert_int_eq(eval(p, "zed", "s3:GetObject", "bkt/secret1", NULL), RGW_POL_NONE);
	ck_assert(!rgw_policy_is_public(p));
	rgw_policy_free(p);
}

END_TEST

START_TEST(test_conditions)
{
	struct rgw_policy *p = parse_ok(
		"{\"Version\":\"2012-10-17\",\"Statement\":["
		"{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:ListBucket\",\"Resource\":"
		"\"arn:aws:s3:::bkt\",\"Condition\":{\"StringLike\":{\"s3:prefix\":[\"pub/*\",\"\"]},"
		"\"IpAddress\":{\"aws:SourceIp\":[\"127.0.0.0/8\",\"::1\"]}}},"
		"{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":"
		"\"arn:aws:s3:::bkt/*\",\"Condition\":{\"NumericGreaterThan\":{\"s3:max-keys\":10}}},"
		"{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":"
		"\"arn:aws:s3:::bkt/t/*\",\"Condition\":{\"DateLessThan\":{\"aws:CurrentTime\":"
		"\"2030-01-01T00:00:00Z\"},\"StringNotEqualsIfExists\":{\"aws:Referer\":\"evil\"}}},"
		"{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":"
		"\"arn:aws:s3:::bkt/n/*\",\"Condition\":{\"Null\":{\"aws:userid\":\"true\"},"
		"\"Bool\":{\"aws:SecureTransport\":false}}}]}");
	const struct kv lo[] = { { "s3:prefix", "pub/x" }, { "aws:sourceip", "127.0.0.9" }, { 0 } };
	const struct kv lo6[] = { { "s3:prefix", "" }, { "aws:sourceip", "::1" }, { 0 } };
	const struct kv far[] = { { "s3:prefix", "pub/x" }, { "aws:sourceip", "10.1.1.1" }, { 0 } };
	const struct kv priv[] = { { "s3:prefix", "priv/" },
				   { "aws:sourceip", "127.0.0.1" },
				   { 0 } };
	const struct kv noprefix[] = { { "aws:sourceip", "127.0.0.1" }, { 0 } };
	const struct kv early[] = { { "aws:currenttime", "2026-12-03T05:00:00Z" }, { 0 } };
	const struct kv late[] = { { "aws:currenttime", "2031-01-01T00:00:00Z" }, { 0 } };
	const struct kv evil[] = { { "aws:currenttime", "2026-12-03T05:00:00Z" },
				   { "aws:referer", "evil" },
				   { 0 } };
	const struct kv anon[] = { { "aws:securetransport", "false" }, { 0 } };
	const struct kv user[] = { { "aws:securetransport", "false" },
				   { "aws:userid", "u" },
				   { 0 } };
	const struct kv many[] = { { "s3:max-keys", "11" }, { 0 } };
	const struct kv few[] = { { "s3:max-keys", "10" }, { 0 } };

	ck_assert_int_eq(eval(p, NULL, "s3:ListBucket", "bkt", lo), RGW_POL_ALLOW);
	ck_assert_int_eq(eval(p, NULL, "s3:ListBucket", "bkt", lo6), RGW_POL_ALLOW);
	ck_assert_int_eq(eval(p, NULL, "s3:ListBucket", "bkt", far), RGW_POL_NONE);
	ck_assert_int_eq(eval(p, NULL, "s3:ListBucket", "bkt", priv), RGW_POL_NONE);
	/* a missing key matches nothing */
	ck_assert_int_eq(eval(p, NULL, "s3:ListBucket", "bkt", noprefix), RGW_POL_NONE);
	ck_assert_int_eq(eval(p, NULL, "s3:GetObject", "bkt/t/1", early), RGW_POL_ALLOW);
	ck_assert_int_eq(eval(p, NULL, "s3:GetObject", "bkt/t/1", late), RGW_POL_NONE);
	ck_assert_int_eq(eval(p, NULL, "s3:GetObject", "bkt/t/1", evil), RGW_POL_NONE);
	ck_assert_int_eq(eval(p, NULL, "s3:GetObject", "bkt/n/1", anon), RGW_POL_ALLOW);
	ck_assert_int_eq(eval(p, "u", "s3:GetObject", "bkt/n/1", user), RGW_POL_NONE);
	ck_assert_int_eq(eval(p, "u", "s3:GetObject", "bkt/x", many), RGW_POL_DENY);
	ck_assert_int_eq(eval(p, "u", "s3:GetObject", "bkt/x", few), RGW_POL_NONE);
	ck_assert(!rgw_policy_is_public(p));
	rgw_policy_free(p);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("policy");
	TCase *tc = tcase_create("policy");

	tcase_add_test(tc, test_wild);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_verdicts);
	tcase_add_test(tc, test_conditions);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
