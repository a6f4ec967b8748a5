/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bucket policies: parsed with jansson, checked against S3's grammar and
 * compiled into statements (rgw/policy.h, docs/design/rgw.md §2.2).
 */
#include "rgw/policy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <jansson.h>
#include <strings.h>

#define ARN_S3 "arn:aws:s3:::"

enum cop_kind { K_STR, K_STR_ICASE, K_LIKE, K_NUM, K_DATE, K_BOOL, K_IP, K_NULL };

enum cop_cmp { C_EQ, C_LT, C_LE, C_GT, C_GE };

struct cop {
	const char *name;
	enum cop_kind kind;
	enum cop_cmp cmp;
	bool neg;
};

static const struct cop cops[] = {
	{ "StringEquals", K_STR, C_EQ, false },
	{ "StringNotEquals", K_STR, C_EQ, true },
	{ "StringEqualsIgnoreCase", K_STR_ICASE, C_EQ, false },
	{ "StringNotEqualsIgnoreCase", K_STR_ICASE, C_EQ, true },
	{ "StringLike", K_LIKE, C_EQ, false },
	{ "StringNotLike", K_LIKE, C_EQ, true },
	{ "NumericEquals", K_NUM, C_EQ, false },
	{ "NumericNotEquals", K_NUM, C_EQ, true },
	{ "NumericLessThan", K_NUM, C_LT, false },
	{ "NumericLessThanEquals", K_NUM, C_LE, false },
	{ "NumericGreaterThan", K_NUM, C_GT, false },
	{ "NumericGreaterThanEquals", K_NUM, C_GE, false },
	{ "DateEquals", K_DATE, C_EQ, false },
	{ "DateNotEquals", K_DATE, C_EQ, true },
	{ "DateLessThan", K_DATE, C_LT, false },
	{ "DateLessThanEquals", K_DATE, C_LE, false },
	{ "DateGreaterThan", K_DATE, C_GT, false },
	{ "DateGreaterThanEquals", K_DATE, C_GE, false },
	{ "Bool", K_BOOL, C_EQ, false },
	{ "IpAddress", K_IP, C_EQ, false },
	{ "NotIpAddress", K_IP, C_EQ, true },
	{ "Null", K_NULL, C_EQ, false },
};

/* The condition keys a request here can carry (lower case). */
static const char *const ckeys[] = {
	"aws:sourceip",
	"aws:securetransport",
	"aws:currenttime",
	"aws:epochtime",
	"aws:useragent",
	"aws:referer",
	"aws:userid",
	"aws:username",
	"aws:principaltype",
	"s3:prefix",
	"s3:delimiter",
	"s3:max-keys",
	"s3:x-amz-acl",
	"s3:versionid",
	"s3:signatureversion",
	"s3:authtype",
	"s3:x-amz-content-sha256",
	"s3:x-amz-copy-source",
	"s3:x-amz-metadata-directive",
	"s3:x-amz-server-side-encryption",
	"s3:x-amz-storage-class",
};

/* S3's action names (without "s3:"): a name without wildcards must be one of them. */
static const char *const actions[] = {
	"AbortMultipartUpload",
	"BypassGovernanceRetention",
	"CreateBucket",
	"DeleteBucket",
	"DeleteBucketPolicy",
	"DeleteBucketWebsite",
	"DeleteObject",
	"DeleteObjectTagging",
	"DeleteObjectVersion",
	"DeleteObjectVersionTagging",
	"GetAccelerateConfiguration",
	"GetBucketAcl",
	"GetBucketCORS",
	"GetBucketLocation",
	"GetBucketLogging",
	"GetBucketNotification",
	"GetBucketObjectLockConfiguration",
	"GetBucketOwnershipControls",
	"GetBucketPolicy",
	"GetBucketPolicyStatus",
	"GetBucketPublicAccessBlock",
	"GetBucketRequestPayment",
	"GetBucketTagging",
	"GetBucketVersioning",
	"GetBucketWebsite",
	"GetEncryptionConfiguration",
	"GetLifecycleConfiguration",
	"GetObject",
	"GetObjectAcl",
	"GetObjectAttributes",
	"GetObjectLegalHold",
	"GetObjectRetention",
	"GetObjectTagging",
	"GetObjectTorrent",
	"GetObjectVersion",
	"GetObjectVersionAcl",
	"GetObjectVersionAttributes",
	"GetObjectVersionTagging",
	"GetReplicationConfiguration",
	"ListAllMyBuckets",
	"ListBucket",
	"ListBucketMultipartUploads",
	"ListBucketVersions",
	"ListMultipartUploadParts",
	"PutAccelerateConfiguration",
	"PutBucketAcl",
	"PutBucketCORS",
	"PutBucketLogging",
	"PutBucketNotification",
	"PutBucketObjectLockConfiguration",
	"PutBucketOwnershipControls",
	"PutBucketPolicy",
	"PutBucketPublicAccessBlock",
	"PutBucketRequestPayment",
	"PutBucketTagging",
	"PutBucketVersioning",
	"PutBucketWebsite",
	"PutEncryptionConfiguration",
	"PutLifecycleConfiguration",
	"PutObject",
	"PutObjectAcl",
	"PutObjectLegalHold",
	"PutObjectRetention",
	"PutObjectTagging",
	"PutObjectVersionAcl",
	"PutObjectVersionTagging",
	"PutReplicationConfiguration",
	"RestoreObject",
};

struct strs {
	char **v;
	size_t n;
};

struct pcond {
	const struct cop *op;
	bool ifexists, forall;
	char key[40];
	struct strs vals;
};

struct pstmt {
	bool deny;
	bool not_princ, princ_any;
	struct strs princ; /* user ids */
	bool not_action;
	struct strs act; /* "s3:Name" patterns, or "*" */
	bool not_res;
	struct strs res; /* after "arn:aws:s3:::", with ${aws:username} etc. */
	struct pcond *c;
	size_t nc;
};

struct rgw_policy {
	struct pstmt *s;
	size_t n;
};

bool
rgw_wild_match(const char *pat, size_t plen, const char *s, size_t slen, bool icase)
{
	size_t p = 0, i = 0, star_p = SIZE_MAX, star_i = 0;

	while (i < slen) {
		if (p < plen && pat[p] == '*') {
			star_p = p++;
			star_i = i;
		} else if (p < plen && (pat[p] == '?' || pat[p] == s[i] ||
					(icase && tolower((unsigned char)pat[p]) ==
							  tolower((unsigned char)s[i])))) {
			p++;
			i++;
		} else if (star_p != SIZE_MAX) {
			p = star_p + 1;
			i = ++star_i;
		} else {
			return false;
		}
	}
	while (p < plen && pat[p] == '*')
		p++;
	return p == plen;
}

static void
strs_fini(struct strs *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

static int
strs_add(struct strs *s, const char *v, size_t n)
{
	char **nv = realloc(s->v, (s->n + 1) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	s->v = nv;
	if (!(s->v[s->n] = strndup(v, n)))
		return -ENOMEM;
	s->n++;
	return 0;
}

void
rgw_policy_free(struct rgw_policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		struct pstmt *s = &p->s[i];

		strs_fini(&s->princ);
		strs_fini(&s->act);
		strs_fini(&s->res);
		for (size_t j = 0; j < s->nc; j++)
			strs_fini(&s->c[j].vals);
		free(s->c);
	}
	free(p->s);
	free(p);
}

/* ---- parsing ---- */

struct pctx {
	const char *bucket;
	bool v2012; /* Version 2012-10-17: policy variables */
	char *err;
	size_t elen;
};

static int bad(struct pctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
bad(struct pctx *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(x->err, x->elen, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

/* A string or an array of strings, each given to fn. */
static int
each_string(struct pctx *x, json_t *v, const char *what,
	    int (*fn)(struct pctx *x, const char *s, size_t n, void *arg), void *arg)
{
	int rc;

	if (json_is_string(v))
		return fn(x, json_string_value(v), json_string_length(v), arg);
	if (!json_is_array(v) || !json_array_size(v))
		return bad(x, "%s must be a string or a non-empty array of strings", what);
	for (size_t i = 0; i < json_array_size(v); i++) {
		json_t *e = json_array_get(v, i);

		if (!json_is_string(e))
			return bad(x, "%s must be a string or a non-empty array of strings", what);
		if ((rc = fn(x, json_string_value(e), json_string_length(e), arg)))
			return rc;
	}
	return 0;
}

struct princ_arg {
	struct pstmt *s;
	bool canonical;
};

static int
princ_one(struct pctx *x, const char *v, size_t n, void *arg)
{
	struct princ_arg *a = arg;
	const char *id = v, *p;
	size_t idn = n;

	if (memchr(v, '\0', n))
		return bad(x, "Invalid principal in policy");
	if (n == 1 && v[0] == '*') {
		a->s->princ_any = true;
		return 0;
	}
	if (!a->canonical && !strncmp(v, "arn:aws:iam::", 13)) {
		/* arn:aws:iam::<account>:root, arn:aws:iam::<tenant>:user/<name> */
		const char *acct = v + 13, *colon = memchr(acct, ':', n - 13);

		if (!colon)
			return bad(x, "Invalid principal in policy");
		p = colon + 1;
		if (!strcmp(p, "root")) {
			id = acct;
			idn = (size_t)(colon - acct);
		} else if (!strncmp(p, "user/", 5)) {
			id = p + 5;
			idn = n - (size_t)(id - v);
		} else {
			return bad(x, "Invalid principal in policy");
		}
	}
	if (!idn || idn > 64 || memchr(id, '*', idn) || memchr(id, ':', idn))
		return bad(x, "Invalid principal in policy");
	return strs_add(&a->s->princ, id, idn);
}

static int
principal(struct pctx *x, struct pstmt *s, json_t *v)
{
	struct princ_arg a = { .s = s };
	const char *k;
	json_t *e;
	int rc;

	if (json_is_string(v)) {
		if (strcmp(json_string_value(v), "*"))
			return bad(x, "Invalid principal in policy");
		s->princ_any = true;
		return 0;
	}
	if (!json_is_object(v) || !json_object_size(v))
		return bad(x, "Invalid principal in policy");
	json_object_foreach(v, k, e)
	{
		if (!strcmp(k, "AWS"))
			a.canonical = false;
		else if (!strcmp(k, "CanonicalUser"))
			a.canonical = true;
		else
			return bad(x,
				   "Invalid principal in policy: %s principals are not "
				   "supported here",
				   k);
		if ((rc = each_string(x, e, "a principal", princ_one, &a)))
			return rc;
	}
	return 0;
}

static const char *
known_action(const char *name, size_t n)
{
	for (size_t i = 0; i < CM_ARRAY_SIZE(actions); i++)
		if (strlen(actions[i]) == n && !strncasecmp(actions[i], name, n))
			return actions[i];
	return NULL;
}

static int
action_one(struct pctx *x, const char *v, size_t n, void *arg)
{
	struct pstmt *s = arg;
	const char *name = v + 3;
	size_t nn = n - 3;

	if (n == 1 && v[0] == '*')
		return strs_add(&s->act, v, n);
	if (n < 4 || strncasecmp(v, "s3:", 3))
		return bad(x, "Policy has invalid action");
	for (size_t i = 0; i < nn; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '*' && name[i] != '?')
			return bad(x, "Policy has invalid action");
	if (!memchr(name, '*', nn) && !memchr(name, '?', nn) && !known_action(name, nn))
		return bad(x, "Policy has invalid action");
	return strs_add(&s->act, v, n);
}

/* Whether a resource pattern (after the ARN prefix) could name this bucket or its keys. */
static bool
res_in_bucket(const char *r, size_t n, const char *bucket)
{
	size_t lit = 0, bl = strlen(bucket);

	while (lit < n && r[lit] != '*' && r[lit] != '?' && r[lit] != '$')
		lit++;
	if (lit == n)
		return (n == bl && !memcmp(r, bucket, bl)) ||
		       (n > bl && !memcmp(r, bucket, bl) && r[bl] == '/');
	/* a wildcard: its literal head must agree with "bucket/" as far as both go */
	return !memcmp(r, bucket, lit < bl ? lit : bl) && (lit <= bl || r[bl] == '/');
}

static int
check_vars(struct pctx *x, const char *v, size_t n)
{
	for (const char *p = v; (p = memmem(p, n - (size_t)(p - v), "${", 2));) {
		const char *end = memchr(p, '}', n - (size_t)(p - v));
		size_t vl;

		if (!end)
			return bad(x, "Policy has an unterminated policy variable");
		vl = (size_t)(end - p - 2);
		if (!x->v2012)
			return bad(x, "policy variables need \"Version\": \"2012-10-17\"");
		if (!((vl == 12 && !strncasecmp(p + 2, "aws:username", 12)) ||
		      (vl == 10 && !strncasecmp(p + 2, "aws:userid", 10))))
			return bad(x,
				   "policy variable %.*s is not supported here (only "
				   "${aws:username}, ${aws:userid})",
				   (int)(vl > 64 ? 64 : vl) + 3, p);
		p = end + 1;
	}
	return 0;
}

static int
res_one(struct pctx *x, const char *v, size_t n, void *arg)
{
	struct pstmt *s = arg;
	int rc;

	if (memchr(v, '\0', n))
		return bad(x, "Policy has invalid resource");
	if (n == 1 && v[0] == '*')
		return strs_add(&s->res, v, n);
	if (n <= strlen(ARN_S3) || strncmp(v, ARN_S3, strlen(ARN_S3)))
		return bad(x, "Policy has invalid resource");
	v += strlen(ARN_S3);
	n -= strlen(ARN_S3);
	if ((rc = check_vars(x, v, n)))
		return rc;
	if (!res_in_bucket(v, n, x->bucket))
		return bad(x, "Policy has invalid resource");
	return strs_add(&s->res, v, n);
}

static const char *
known_ckey(const char *k)
{
	for (size_t i = 0; i < CM_ARRAY_SIZE(ckeys); i++)
		if (!strcasecmp(ckeys[i], k))
			return ckeys[i];
	return NULL;
}

static bool parse_date(const char *s, double *out);

/* "a.b.c.d", "a.b.c.d/n", an IPv6 address, "x::y/n": its bytes, family and prefix length. */
static bool
cidr_parse(const char *s, size_t n, uint8_t net[16], int *fam, int *bits)
{
	const char *slash = memchr(s, '/', n);
	size_t al = slash ? (size_t)(slash - s) : n;
	char a[64];

	if (al >= sizeof(a))
		return false;
	memcpy(a, s, al);
	a[al] = '\0';
	*fam = strchr(a, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(*fam, a, net) != 1)
		return false;
	*bits = *fam == AF_INET ? 32 : 128;
	if (slash) {
		char *end;
		long b = strtol(slash + 1, &end, 10);

		if (end != s + n || slash + 1 == end || b < 0 || b > *bits)
			return false;
		*bits = (int)b;
	}
	return true;
}

/* A value the operator can compare (a number, a date, a boolean, an address). */
static int
value_ok(struct pctx *x, const struct cop *op, const char *v)
{
	double d;
	char *end;

	switch (op->kind) {
	case K_NUM:
		errno = 0;
		d = strtod(v, &end);
		(void)d;
		if (!*v || *end || errno)
			return bad(x, "%s needs a number, not \"%.32s\"", op->name, v);
		return 0;
	case K_DATE:
		if (!parse_date(v, &d))
			return bad(x, "%s needs a date, not \"%.32s\"", op->name, v);
		return 0;
	case K_BOOL:
	case K_NULL:
		if (strcasecmp(v, "true") && strcasecmp(v, "false"))
			return bad(x, "%s needs true or false, not \"%.32s\"", op->name, v);
		return 0;
	case K_IP:
		return strchr(v, '.') || strchr(v, ':') ? 0 : bad(x, "invalid IP address");
	default:
		return 0;
	}
}

static int
cond_val(struct pctx *x, const struct cop *op, json_t *e, struct strs *out)
{
	char num[64];

	if (json_is_string(e)) {
		const char *s = json_string_value(e);
		size_t n = json_string_length(e);

		if (memchr(s, '\0', n))
			return bad(x, "a condition value holds a NUL");
		if (op->kind == K_IP) {
			uint8_t net[16];
			int fam, bits;

			if (!cidr_parse(s, n, net, &fam, &bits))
				return bad(x, "invalid IP address or CIDR %.*s",
					   (int)(n > 64 ? 64 : n), s);
		}
		if (op->kind == K_LIKE || op->kind == K_STR || op->kind == K_STR_ICASE) {
			int rc = check_vars(x, s, n);

			if (rc)
				return rc;
		}
		return value_ok(x, op, s) ?: strs_add(out, s, n);
	}
	if (json_is_integer(e))
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(e));
	else if (json_is_real(e))
		snprintf(num, sizeof(num), "%.17g", json_real_value(e));
	else if (json_is_boolean(e))
		snprintf(num, sizeof(num), "%s", json_is_true(e) ? "true" : "false");
	else
		return bad(x, "a condition value must be a string, number or boolean");
	return value_ok(x, op, num) ?: strs_add(out, num, strlen(num));
}

static int
condition(struct pctx *x, struct pstmt *s, json_t *v)
{
	const char *opname, *k;
	json_t *block, *e;
	int rc;

	if (!json_is_object(v))
		return bad(x, "Condition must be an object");
	json_object_foreach(v, opname, block)
	{
		const char *base = opname;
		size_t bl;
		bool forall = false, ifexists = false;
		const struct cop *op = NULL;

		if (!strncmp(base, "ForAnyValue:", 12)) {
			base += 12;
		} else if (!strncmp(base, "ForAllValues:", 13)) {
			base += 13;
			forall = true;
		}
		bl = strlen(base);
		if (bl > 8 && !strcmp(base + bl - 8, "IfExists")) {
			ifexists = true;
			bl -= 8;
		}
		for (size_t i = 0; i < CM_ARRAY_SIZE(cops) && !op; i++)
			if (strlen(cops[i].name) == bl && !strncmp(cops[i].name, base, bl))
				op = &cops[i];
		if (!op || (op->kind == K_NULL && (ifexists || base != opname)))
			return bad(x, "Invalid Condition type : %s", opname);
		if (!json_is_object(block) || !json_object_size(block))
			return bad(x, "the %s condition must be a non-empty object", opname);
		json_object_foreach(block, k, e)
		{
			struct pcond *c, *nc;
			const char *ck = known_ckey(k);

			if (!ck)
				return bad(x, "Policy has an invalid condition key: %s", k);
			if (!(nc = realloc(s->c, (s->nc + 1) * sizeof(*nc))))
				return -ENOMEM;
			s->c = nc;
			c = &s->c[s->nc++];
			memset(c, 0, sizeof(*c));
			c->op = op;
			c->ifexists = ifexists;
			c->forall = forall;
			snprintf(c->key, sizeof(c->key), "%s", ck);
			if (json_is_array(e)) {
				if (!json_array_size(e))
					return bad(x, "the condition %s has no value", k);
				for (size_t i = 0; i < json_array_size(e); i++)
					if ((rc = cond_val(x, op, json_array_get(e, i), &c->vals)))
						return rc;
			} else if ((rc = cond_val(x, op, e, &c->vals))) {
				return rc;
			}
		}
	}
	return 0;
}

static int
statement(struct pctx *x, struct pstmt *s, json_t *st)
{
	json_t *v, *p, *np, *a, *na, *r, *nr, *c;
	const char *k;
	int rc;

	if (!json_is_object(st))
		return bad(x, "a Statement must be an object");
	json_object_foreach(st, k, v)
	{
		static const char *const ok[] = { "Sid",          "Effect",      "Principal",
						  "NotPrincipal", "Action",      "NotAction",
						  "Resource",     "NotResource", "Condition" };
		bool known = false;

		for (size_t i = 0; i < CM_ARRAY_SIZE(ok); i++)
			known |= !strcmp(ok[i], k);
		if (!known)
			return bad(x, "unknown field %s in a Statement", k);
	}
	if ((v = json_object_get(st, "Sid")) && !json_is_string(v))
		return bad(x, "Sid must be a string");
	v = json_object_get(st, "Effect");
	if (!json_is_string(v) ||
	    (strcmp(json_string_value(v), "Allow") && strcmp(json_string_value(v), "Deny")))
		return bad(x, "Invalid effect: Effect must be Allow or Deny");
	s->deny = !strcmp(json_string_value(v), "Deny");
	p = json_object_get(st, "Principal");
	np = json_object_get(st, "NotPrincipal");
	if (!!p == !!np)
		return bad(x, "a Statement needs one of Principal and NotPrincipal");
	if (np && !s->deny)
		return bad(x, "NotPrincipal goes only with \"Effect\": \"Deny\"");
	s->not_princ = !!np;
	if ((rc = principal(x, s, p ? p : np)))
		return rc;
	a = json_object_get(st, "Action");
	na = json_object_get(st, "NotAction");
	if (!!a == !!na)
		return bad(x, "a Statement needs one of Action and NotAction");
	s->not_action = !!na;
	if ((rc = each_string(x, a ? a : na, "Action", action_one, s)))
		return rc;
	r = json_object_get(st, "Resource");
	nr = json_object_get(st, "NotResource");
	if (!!r == !!nr)
		return bad(x, "a Statement needs one of Resource and NotResource");
	s->not_res = !!nr;
	if ((rc = each_string(x, r ? r : nr, "Resource", res_one, s)))
		return rc;
	if ((c = json_object_get(st, "Condition")) && (rc = condition(x, s, c)))
		return rc;
	return 0;
}

int
rgw_policy_parse(const char *json, size_t n, const char *bucket, struct rgw_policy **out, char *err,
		 size_t elen)
{
	struct pctx x = { .bucket = bucket, .err = err, .elen = elen };
	struct rgw_policy *p = NULL;
	json_error_t je;
	json_t *root, *v, *sts;
	const char *k;
	size_t ns;
	int rc = 0;

	*out = NULL;
	if (n > RGW_POLICY_MAX)
		return bad(&x, "Policies must be no larger than 20 KiB");
	if (!(root = json_loadb(json, n, JSON_REJECT_DUPLICATES, &je)))
		return bad(&x, "This policy contains invalid Json: %s", je.text);
	if (!json_is_object(root)) {
		rc = bad(&x, "This policy contains invalid Json: not an object");
		goto out;
	}
	json_object_foreach(root, k, v)
	{
		if (strcmp(k, "Version") && strcmp(k, "Id") && strcmp(k, "Statement")) {
			rc = bad(&x, "unknown field %s in the policy", k);
			goto out;
		}
	}
	if ((v = json_object_get(root, "Version"))) {
		if (!json_is_string(v) || (strcmp(json_string_value(v), "2012-10-17") &&
					   strcmp(json_string_value(v), "2008-10-17"))) {
			rc = bad(&x, "The policy must contain a valid version string");
			goto out;
		}
		x.v2012 = !strcmp(json_string_value(v), "2012-10-17");
	}
	if ((v = json_object_get(root, "Id")) && !json_is_string(v)) {
		rc = bad(&x, "Id must be a string");
		goto out;
	}
	sts = json_object_get(root, "Statement");
	ns = json_is_array(sts) ? json_array_size(sts) : json_is_object(sts) ? 1 : 0;
	if (!ns) {
		rc = bad(&x, "Missing required field Statement");
		goto out;
	}
	if (!(p = calloc(1, sizeof(*p))) || !(p->s = calloc(ns, sizeof(*p->s)))) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < ns && !rc; i++) {
		rc = statement(&x, &p->s[i], json_is_array(sts) ? json_array_get(sts, i) : sts);
		p->n = i + 1;
	}
out:
	json_decref(root);
	if (rc) {
		if (rc == -ENOMEM)
			snprintf(err, elen, "out of memory");
		rgw_policy_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

/* ---- evaluation ---- */

/* pat with ${aws:username} / ${aws:userid} replaced by the principal's id (malloc'd), or
 * NULL (out of memory, or a variable and an anonymous request: no match). */
static char *
expand(const char *pat, const struct rgw_pol_req *r, size_t *len)
{
	size_t n = strlen(pat), cap = n + 1, o = 0;
	const char *id = r->principal;
	char *out;

	if (!strstr(pat, "${")) {
		*len = n;
		return strdup(pat);
	}
	if (!id)
		return NULL;
	cap += 8 * strlen(id) + 8;
	if (!(out = malloc(cap)))
		return NULL;
	for (size_t i = 0; i < n;) {
		const char *end;

		if (pat[i] == '$' && pat[i + 1] == '{' && (end = strchr(pat + i, '}'))) {
			size_t il = strlen(id);

			if (o + il >= cap) {
				free(out);
				return NULL;
			}
			memcpy(out + o, id, il);
			o += il;
			i = (size_t)(end - pat) + 1;
			continue;
		}
		if (o + 1 >= cap) {
			free(out);
			return NULL;
		}
		out[o++] = pat[i++];
	}
	out[o] = '\0';
	*len = o;
	return out;
}

static bool
princ_match(const struct pstmt *s, const struct rgw_pol_req *r)
{
	if (s->princ_any)
		return true;
	if (!r->principal)
		return false;
	for (size_t i = 0; i < s->princ.n; i++)
		if (!strcmp(s->princ.v[i], r->principal))
			return true;
	return false;
}

static bool
action_match(const struct pstmt *s, const struct rgw_pol_req *r)
{
	for (size_t i = 0; i < s->act.n; i++)
		if (rgw_wild_match(s->act.v[i], strlen(s->act.v[i]), r->action, strlen(r->action),
				   true))
			return true;
	return false;
}

static bool
res_match(const struct pstmt *s, const struct rgw_pol_req *r, const char *res, size_t rl)
{
	for (size_t i = 0; i < s->res.n; i++) {
		size_t pl;
		char *pat;
		bool m;

		if (!strcmp(s->res.v[i], "*"))
			return true;
		if (!(pat = expand(s->res.v[i], r, &pl)))
			continue;
		m = rgw_wild_match(pat, pl, res, rl, false);
		free(pat);
		if (m)
			return true;
	}
	return false;
}

/* ISO 8601 (2026-12-03T05:00:00Z, fractions and a date alone taken) or epoch seconds. */
static bool
parse_date(const char *s, double *out)
{
	struct tm tm = { 0 };
	char *end;
	double v;

	if (!*s)
		return false;
	v = strtod(s, &end);
	if (!*end && strchr(s, '-') == NULL) {
		*out = v;
		return true;
	}
	end = strptime(s, "%Y-%m-%d", &tm);
	if (!end)
		return false;
	if (*end == 'T' && (end = strptime(end + 1, "%H:%M:%S", &tm))) {
		if (*end == '.')
			while (isdigit((unsigned char)*++end))
				;
		if (*end == 'Z')
			end++;
	}
	if (!end || *end)
		return false;
	*out = (double)timegm(&tm);
	return true;
}

static bool
ip_match(const char *cidr, const char *addr)
{
	uint8_t a[16], b[16];
	int fam, afam, bits, abits;

	if (!cidr_parse(cidr, strlen(cidr), a, &fam, &bits) ||
	    !cidr_parse(addr, strlen(addr), b, &afam, &abits) || fam != afam)
		return false;
	for (int i = 0; i < (fam == AF_INET ? 4 : 16) && bits > 0; i++, bits -= 8) {
		uint8_t mask = bits >= 8 ? 0xff : (uint8_t)(0xff << (8 - bits));

		if ((a[i] & mask) != (b[i] & mask))
			return false;
	}
	return true;
}

static bool
cmp_num(enum cop_cmp c, double a, double b)
{
	switch (c) {
	case C_EQ:
		return a == b;
	case C_LT:
		return a < b;
	case C_LE:
		return a <= b;
	case C_GT:
		return a > b;
	case C_GE:
		return a >= b;
	}
	return false;
}

/* Whether request value v meets one policy value pv (before the operator's negation). */
static bool
val_match(const struct pcond *c, const struct rgw_pol_req *r, const char *v, const char *pv)
{
	double a, b;
	char *e1, *e2;

	switch (c->op->kind) {
	case K_STR:
	case K_STR_ICASE:
	case K_LIKE: {
		size_t pl;
		char *p = expand(pv, r, &pl);
		bool m;

		if (!p)
			return false;
		if (c->op->kind == K_LIKE)
			m = rgw_wild_match(p, pl, v, strlen(v), false);
		else if (c->op->kind == K_STR)
			m = !strcmp(p, v);
		else
			m = !strcasecmp(p, v);
		free(p);
		return m;
	}
	case K_NUM:
		a = strtod(v, &e1);
		b = strtod(pv, &e2);
		return *v && *pv && !*e1 && !*e2 && cmp_num(c->op->cmp, a, b);
	case K_DATE:
		return parse_date(v, &a) && parse_date(pv, &b) && cmp_num(c->op->cmp, a, b);
	case K_BOOL:
		return !strcasecmp(v, pv);
	case K_IP:
		return ip_match(pv, v);
	case K_NULL:
		break;
	}
	return false;
}

static bool
cond_true(const struct pcond *c, const struct rgw_pol_req *r)
{
	const char *v = r->cond ? r->cond(r->arg, c->key) : NULL;
	bool any = false;

	if (c->op->kind == K_NULL) {
		/* "true": the key must be absent; "false": present */
		for (size_t i = 0; i < c->vals.n; i++)
			if (!strcasecmp(c->vals.v[i], v ? "false" : "true"))
				return true;
		return false;
	}
	if (!v)
		/* (IAM: a missing key matches nothing: true for the negated operators, for
		 * IfExists and for ForAllValues, false otherwise) */
		return c->ifexists || c->forall || c->op->neg;
	for (size_t i = 0; i < c->vals.n && !any; i++)
		any = val_match(c, r, v, c->vals.v[i]);
	return c->op->neg ? !any : any;
}

static bool
stmt_applies(const struct pstmt *s, const struct rgw_pol_req *r, const char *res, size_t rl)
{
	if (princ_match(s, r) == s->not_princ)
		return false;
	if (action_match(s, r) == s->not_action)
		return false;
	if (res_match(s, r, res, rl) == s->not_res)
		return false;
	for (size_t i = 0; i < s->nc; i++)
		if (!cond_true(&s->c[i], r))
			return false;
	return true;
}

enum rgw_pol_effect
rgw_policy_eval(const struct rgw_policy *p, const struct rgw_pol_req *r)
{
	enum rgw_pol_effect e = RGW_POL_NONE;

	for (size_t i = 0; p && i < p->n; i++) {
		if (!stmt_applies(&p->s[i], r, r->resource, r->rlen))
			continue;
		if (p->s[i].deny)
			return RGW_POL_DENY;
		e = RGW_POL_ALLOW;
	}
	return e;
}

bool
rgw_policy_is_public(const struct rgw_policy *p)
{
	for (size_t i = 0; p && i < p->n; i++)
		if (!p->s[i].deny && p->s[i].princ_any && !p->s[i].not_princ && !p->s[i].nc)
			return true;
	return false;
}
