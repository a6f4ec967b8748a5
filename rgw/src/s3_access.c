/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bucket policies and CORS at the gateway (docs/design/rgw.md §2.2, §2.3):
 * which S3 action a request is, what its policy's condition keys hold,
 * the policy's verdict combined with the ACLs', and the CORS headers of
 * preflights and of browsers' requests.
 */
#include "rgw_int.h"
#include "rgw/cors.h"
#include "rgw/policy.h"
#include "cm/log.h"

#include <strings.h>

CM_LOG_SUBSYS(rgw);

#define RGW_CORS_HDRS_MAX 4096

/* ---- the action ---- */

int
s3_subresources(const struct s3_req *q)
{
	static const char *const bucket[] = {
		"acl",
		"location",
		"versioning",
		"tagging",
		"lifecycle",
		"cors",
		"policy",
		"policyStatus",
		"uploads",
		"versions",
		"delete",
		"encryption",
		"object-lock",
		"replication",
		"website",
		"logging",
		"notification",
		"requestPayment",
		"accelerate",
		"ownershipControls",
		"publicAccessBlock",
		"analytics",
		"metrics",
		"inventory",
		"intelligent-tiering",
	};
	static const char *const object[] = { "tagging",    "acl",       "uploads", "uploadId",
					      "restore",    "select",    "torrent", "retention",
					      "legal-hold", "attributes" };
	const char *const *names = q->key ? object : bucket;
	size_t n = q->key ? CM_ARRAY_SIZE(object) : CM_ARRAY_SIZE(bucket);
	int found = 0;

	for (size_t i = 0; i < n; i++)
		if (rgw_uri_q(&q->u, names[i]))
			found++;
	return found;
}

static const char *
bucket_action(const struct s3_req *q)
{
	static const struct {
		const char *sub, *get, *put, *del;
	} subs[] = {
		{ "acl", "s3:GetBucketAcl", "s3:PutBucketAcl", NULL },
		{ "location", "s3:GetBucketLocation", NULL, NULL },
		{ "versioning", "s3:GetBucketVersioning", "s3:PutBucketVersioning", NULL },
		{ "tagging", "s3:GetBucketTagging", "s3:PutBucketTagging", "s3:PutBucketTagging" },
		{ "lifecycle", "s3:GetLifecycleConfiguration", "s3:PutLifecycleConfiguration",
		  "s3:PutLifecycleConfiguration" },
		{ "cors", "s3:GetBucketCORS", "s3:PutBucketCORS", "s3:PutBucketCORS" },
		{ "policyStatus", "s3:GetBucketPolicyStatus", NULL, NULL },
		{ "policy", "s3:GetBucketPolicy", "s3:PutBucketPolicy", "s3:DeleteBucketPolicy" },
		{ "uploads", "s3:ListBucketMultipartUploads", NULL, NULL },
		{ "versions", "s3:ListBucketVersions", NULL, NULL },
	};
	enum rgw_http_method m = q->h->method;

	if (m == RGW_M_POST)
		return "s3:DeleteObject"; /* (?delete: each key's, s3_object.c) */
	for (size_t i = 0; i < CM_ARRAY_SIZE(subs); i++) {
		const char *a;

		if (!rgw_uri_q(&q->u, subs[i].sub))
			continue;
		a = m == RGW_M_PUT ? subs[i].put : m == RGW_M_DELETE ? subs[i].del : subs[i].get;
		if (a)
			return a;
	}
	if (m == RGW_M_PUT)
		return "s3:CreateBucket";
	if (m == RGW_M_DELETE)
		return "s3:DeleteBucket";
	return "s3:ListBucket";
}

const char *
s3_action(const struct s3_req *q)
{
	enum rgw_http_method m = q->h->method;
	bool v = rgw_uri_q(&q->u, "versionId") != NULL;

	if (!q->key)
		return bucket_action(q);
	if (rgw_uri_q(&q->u, "tagging")) {
		if (m == RGW_M_PUT)
			return v ? "s3:PutObjectVersionTagging" : "s3:PutObjectTagging";
		if (m == RGW_M_DELETE)
			return v ? "s3:DeleteObjectVersionTagging" : "s3:DeleteObjectTagging";
		return v ? "s3:GetObjectVersionTagging" : "s3:GetObjectTagging";
	}
	if (rgw_uri_q(&q->u, "acl")) {
		if (m == RGW_M_PUT)
			return v ? "s3:PutObjectVersionAcl" : "s3:PutObjectAcl";
		return v ? "s3:GetObjectVersionAcl" : "s3:GetObjectAcl";
	}
	switch (m) {
	case RGW_M_PUT:
	case RGW_M_POST:
		return "s3:PutObject";
	case RGW_M_DELETE:
		if (rgw_uri_q(&q->u, "uploadId"))
			return "s3:AbortMultipartUpload";
		return v ? "s3:DeleteObjectVersion" : "s3:DeleteObject";
	default:
		if (rgw_uri_q(&q->u, "uploadId"))
			return "s3:ListMultipartUploadParts";
		return v ? "s3:GetObjectVersion" : "s3:GetObject";
	}
}

/* ---- condition keys ---- */

struct pol_ctx {
	const struct s3_req *q;
	char ip[64], now[40], epoch[24];
};

static const char *
pol_cond(void *arg, const char *name)
{
	struct pol_ctx *x = arg;
	const struct s3_req *q = x->q;
	bool signed_req = !q->anon && q->uid[0];

	if (!strcmp(name, "aws:sourceip"))
		return x->ip[0] ? x->ip : NULL;
	if (!strcmp(name, "aws:securetransport"))
		return rgw_req_is_tls(q->r) ? "true" : "false";
	if (!strcmp(name, "aws:currenttime"))
		return x->now;
	if (!strcmp(name, "aws:epochtime"))
		return x->epoch;
	if (!strcmp(name, "aws:useragent"))
		return rgw_http_hdr(q->h, "user-agent");
	if (!strcmp(name, "aws:referer"))
		return rgw_http_hdr(q->h, "referer");
	if (!strcmp(name, "aws:userid") || !strcmp(name, "aws:username"))
		return signed_req ? q->uid : NULL;
	if (!strcmp(name, "aws:principaltype"))
		return signed_req ? "Account" : "Anonymous";
	if (!strcmp(name, "s3:prefix"))
		return q->key ? NULL : rgw_uri_q(&q->u, "prefix");
	if (!strcmp(name, "s3:delimiter"))
		return q->key ? NULL : rgw_uri_q(&q->u, "delimiter");
	if (!strcmp(name, "s3:max-keys"))
		return q->key ? NULL : rgw_uri_q(&q->u, "max-keys");
	if (!strcmp(name, "s3:versionid"))
		return rgw_uri_q(&q->u, "versionId");
	if (!strcmp(name, "s3:signatureversion"))
		return signed_req ? "AWS4-HMAC-SHA256" : NULL;
	if (!strcmp(name, "s3:authtype"))
		return signed_req ? (q->sig.presigned ? "REST-QUERY-STRING" : "REST-HEADER") : NULL;
	if (!strncmp(name, "s3:x-amz-", 9))
		return rgw_http_hdr(q->h, name + 3);
	return NULL;
}

static bool
policy_action(const char *a)
{
	return !strcmp(a, "s3:GetBucketPolicy") || !strcmp(a, "s3:PutBucketPolicy") ||
	       !strcmp(a, "s3:DeleteBucketPolicy");
}

bool
s3_access(const struct s3_req *q, const struct rgw_bucket *b, const struct s3_bconf *bc,
	  const char *key, size_t klen, const char *action, bool acl_ok)
{
	char res[64 + 1 + RGW_KEY_MAX + 1];
	struct pol_ctx x = { .q = q };
	struct rgw_pol_req r;
	const char *peer;
	size_t bl = strlen(b->name);
	int64_t now = rgw__now_ns();
	enum rgw_pol_effect e;

	bool owner = !q->anon && q->uid[0] && !strcmp(b->owner, q->uid);

	if (!action)
		action = s3_action(q);
	/* (S3: the policy calls are the owner's alone, whatever a policy allows) */
	if (policy_action(action))
		return owner;
	if (bc && bc->broken)
		return false; /* (a stored policy that no longer parses grants nothing) */
	if (!bc || !bc->pol)
		return acl_ok;
	if (bl >= 64 || klen > RGW_KEY_MAX)
		return false;
	memcpy(res, b->name, bl);
	if (key) {
		res[bl] = '/';
		memcpy(res + bl + 1, key, klen);
		bl += 1 + klen;
	}
	res[bl] = '\0';
	/* "127.0.0.1:5000", "[::1]:5000"; an IPv4 client of a dual-stack listener
	 * ("[::ffff:192.0.2.1]") is judged by its IPv4 address */
	peer = rgw_req_peer(q->r);
	if (peer[0] == '[') {
		const char *a = peer + 1, *end = strchr(peer, ']');

		if (end && !strncasecmp(a, "::ffff:", 7) &&
		    memchr(a + 7, '.', (size_t)(end - a - 7)))
			a += 7;
		if (end && (size_t)(end - a) < sizeof(x.ip))
			snprintf(x.ip, sizeof(x.ip), "%.*s", (int)(end - a), a);
	} else {
		const char *colon = strrchr(peer, ':');
		size_t n = colon ? (size_t)(colon - peer) : strlen(peer);

		if (n < sizeof(x.ip))
			snprintf(x.ip, sizeof(x.ip), "%.*s", (int)n, peer);
	}
	rgw__iso8601(now, x.now, sizeof(x.now));
	snprintf(x.epoch, sizeof(x.epoch), "%" PRId64, now / 1000000000);
	r = (struct rgw_pol_req){
		.principal = q->anon || !q->uid[0] ? NULL : q->uid,
		.action = action,
		.resource = res,
		.rlen = bl,
		.cond = pol_cond,
		.arg = &x,
	};
	e = rgw_policy_eval(bc->pol, &r);
	/* (a Deny binds the owner too; the policy calls, above, stay hers so she can mend it) */
	if (e == RGW_POL_DENY)
		return false;
	return e == RGW_POL_ALLOW || acl_ok;
}

bool
s3_may_list(const struct s3_req *q)
{
	return s3_access(q, &q->b, &q->bc, NULL, 0, "s3:ListBucket",
			 s3_acl_bucket(q, &q->b, S3_P_READ));
}

/* ---- PUT ?policy, PUT ?cors ---- */

int
s3_policy_check(struct s3_req *q, struct rgw_str *out)
{
	struct rgw_policy *p = NULL;
	char err[200];
	int rc = rgw_policy_parse(q->body.p ? q->body.p : "", q->body.len, q->bucket, &p, err,
				  sizeof(err));

	if (rc == -ENOMEM) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return rc;
	}
	if (rc) {
		s3_error(q, 400, "MalformedPolicy", err);
		return rc;
	}
	rgw_policy_free(p);
	rgw_str_add(out, q->body.p, q->body.len);
	return 0;
}

int
s3_cors_check(struct s3_req *q, struct rgw_str *out)
{
	struct rgw_cors c;
	char err[200];
	int rc = rgw_cors_parse(q->body.p, q->body.len, &c, err, sizeof(err));

	if (rc == -ENOMEM) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return rc;
	}
	if (rc) {
		s3_error(q, 400, rc == -EINVAL ? "InvalidRequest" : "MalformedXML", err);
		return rc;
	}
	rgw_cors_fini(&c);
	rgw_str_add(out, q->body.p, q->body.len);
	return 0;
}

/* ---- CORS ---- */

/* The rule of q's bucket for origin, method and hdrs: headers into out. \return whether one
 * matched; -1: the bucket has no (valid) CORS configuration. */
static int
cors_eval(struct s3_req *q, const char *origin, unsigned method, const char *hdrs, bool preflight,
	  struct rgw_str *out)
{
	const struct rgw_cors_rule *r;
	struct rgw_cors c;
	char err[200];
	bool hit;

	if (!q->bc.cors || rgw_cors_parse(q->bc.cors, q->bc.cors_len, &c, err, sizeof(err)))
		return -1;
	if ((r = rgw_cors_match(&c, origin, method, hdrs)))
		rgw_cors_headers(r, origin, preflight, hdrs, out);
	hit = r != NULL;
	rgw_cors_fini(&c);
	/* (bounded, so the answer's own headers still fit its head) */
	if (hit && out->len > RGW_CORS_HDRS_MAX) {
		CM_WARN("%s: bucket %s: the CORS headers (%zu bytes) are too long: not sent",
			rgw_req_id(q->r), q->bucket, out->len);
		return 0;
	}
	return hit ? 1 : 0;
}

/* Origin and request headers go back out in response headers: printable only. */
static bool
hdr_text_ok(const char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

void
s3_cors_actual(struct s3_req *q)
{
	const char *origin = rgw_http_hdr(q->h, "origin");
	unsigned m = rgw_cors_method(q->h->method_name);
	struct rgw_str h;

	if (!origin || !q->bc.cors || !m || !hdr_text_ok(origin) || q->cors_done)
		return;
	q->cors_done = true; /* (a request may load its bucket twice: one set of headers) */
	rgw_str_init(&h);
	if (cors_eval(q, origin, m, NULL, false, &h) == 1 && !h.oom)
		(void)rgw_req_add_headers(q->r, rgw_str_cstr(&h));
	rgw_str_fini(&h);
}

static void
preflight_loaded(struct s3_req *q, void *arg, int rc)
{
	const char *origin = rgw_http_hdr(q->h, "origin");
	const char *m = rgw_http_hdr(q->h, "access-control-request-method");
	const char *hdrs = rgw_http_hdr(q->h, "access-control-request-headers");
	struct rgw_str h;

	(void)arg;
	if (rc == -ENOENT) {
		s3_error(q, 404, "NoSuchBucket", "the bucket does not exist");
		return;
	}
	if (rc) {
		s3_error_rc(q, rc, "reading the bucket record");
		return;
	}
	q->have_b = true;
	rgw_str_init(&h);
	rc = cors_eval(q, origin, rgw_cors_method(m), hdrs, true, &h);
	if (rc < 0) {
		rgw_str_fini(&h);
		s3_error(q, 403, "AccessForbidden",
			 "CORSResponse: CORS is not enabled for this bucket.");
		return;
	}
	if (!rc) {
		rgw_str_fini(&h);
		s3_error(q, 403, "AccessForbidden",
			 "CORSResponse: This CORS request is not allowed. This is usually because "
			 "the evaluation of Origin, request method / Access-Control-Request-Method "
			 "or Access-Control-Request-Headers are not allowed by the resource's CORS "
			 "spec.");
		return;
	}
	if (h.oom) {
		rgw_str_fini(&h);
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	s3_respond_xml(q, 200, rgw_str_cstr(&h), NULL);
	rgw_str_fini(&h);
}

void
s3_cors_preflight(struct s3_req *q)
{
	const char *origin = rgw_http_hdr(q->h, "origin");
	const char *m = rgw_http_hdr(q->h, "access-control-request-method");
	const char *hdrs = rgw_http_hdr(q->h, "access-control-request-headers");

	q->op_name = "PreflightRequest";
	q->anon = true;
	if (!origin || !hdr_text_ok(origin) || !hdr_text_ok(hdrs)) {
		s3_error(q, 400, "BadRequest",
			 "Insufficient information. Origin request header needed.");
		return;
	}
	if (!m || !rgw_cors_method(m)) {
		s3_error(q, 400, "BadRequest", "Invalid Access-Control-Request-Method");
		return;
	}
	if (!q->bucket) {
		s3_error(q, 400, "BadRequest", "a preflight names a bucket");
		return;
	}
	s3_bucket_get(q, q->bucket, &q->b, &q->bc, preflight_loaded, NULL);
}
