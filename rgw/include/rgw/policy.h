/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bucket policies (docs/design/rgw.md §2.2): S3's JSON access policy
 * language, checked when PutBucketPolicy stores one and evaluated for
 * every request to its bucket. Statements with Effect, Principal or
 * NotPrincipal, Action or NotAction (wildcards), Resource or NotResource
 * (ARNs of this bucket and its keys, wildcards, ${aws:username}), and
 * Condition blocks (string, numeric, date, Bool, IP address and Null
 * operators, with IfExists and the ForAnyValue/ForAllValues forms over
 * the single-valued keys S3 has). A key or operator we do not know is
 * refused when the policy is stored, never ignored at evaluation.
 */
#ifndef RGW_POLICY_H
#define RGW_POLICY_H

#include "cm/stdinc.h"

#define RGW_POLICY_MAX (20u << 10) /* S3's limit on a bucket policy's size */

struct rgw_policy;

enum rgw_pol_effect { RGW_POL_NONE = 0, RGW_POL_ALLOW, RGW_POL_DENY };

/*
 * A request as a policy sees it. cond(arg, name) gives a condition key's
 * value (name lower case, e.g. "aws:sourceip", "s3:prefix") or NULL when
 * the request has none.
 */
struct rgw_pol_req {
	const char *principal; /* the user id; NULL: anonymous */
	const char *action;    /* "s3:GetObject" */
	const char *resource;  /* the ARN's tail: "bucket" or "bucket/key" */
	size_t rlen;
	const char *(*cond)(void *arg, const char *name);
	void *arg;
};

/*
 * Parse and check a policy for bucket. \return 0 (*out), -EBADMSG (err
 * says why, in S3's words where it has them), -ENOMEM.
 */
int rgw_policy_parse(const char *json, size_t n, const char *bucket, struct rgw_policy **out,
		     char *err, size_t elen);
void rgw_policy_free(struct rgw_policy *p);
/* Deny when a Deny statement applies, else Allow when an Allow does, else None. */
enum rgw_pol_effect rgw_policy_eval(const struct rgw_policy *p, const struct rgw_pol_req *r);
/* Whether a policy lets anyone (Principal "*", no condition) do something: "public". */
bool rgw_policy_is_public(const struct rgw_policy *p);

/* S3's wildcard match: '*' any run, '?' one byte; icase for action names. */
bool rgw_wild_match(const char *pat, size_t plen, const char *s, size_t slen, bool icase);

#endif
