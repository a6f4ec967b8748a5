/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bucket CORS configurations (docs/design/rgw.md §2.3): what
 * PutBucketCors accepts, the rule a browser's request (or its OPTIONS
 * preflight) matches, and the Access-Control-* headers that rule earns.
 */
#ifndef RGW_CORS_H
#define RGW_CORS_H

#include "cm/stdinc.h"
#include "rgw/str.h"

#define RGW_CORS_RULES_MAX 100
#define RGW_CORS_XML_MAX   (64u << 10)

enum {
	RGW_CORS_GET = 1,
	RGW_CORS_PUT = 2,
	RGW_CORS_POST = 4,
	RGW_CORS_DELETE = 8,
	RGW_CORS_HEAD = 16,
};

struct rgw_cors_rule {
	char **origins, **headers, **expose; /* at most one '*' in an origin or a header */
	size_t norigins, nheaders, nexpose;
	unsigned methods; /* RGW_CORS_* */
	int max_age;      /* seconds; -1: none */
};

struct rgw_cors {
	struct rgw_cors_rule *r;
	size_t n;
};

/*
 * Parse a <CORSConfiguration>. \return 0, -EBADMSG (not well-formed or
 * not a CORS configuration: MalformedXML), -EINVAL (a rule S3 refuses:
 * InvalidRequest; err says why), -ENOMEM.
 */
int rgw_cors_parse(const char *xml, size_t n, struct rgw_cors *c, char *err, size_t elen);
void rgw_cors_fini(struct rgw_cors *c);
/* RGW_CORS_* of an HTTP method's name, 0 for one CORS does not know. */
unsigned rgw_cors_method(const char *name);
/*
 * The first rule that allows origin to use method (RGW_CORS_*) with the
 * comma-separated request headers hdrs (a preflight's
 * Access-Control-Request-Headers; NULL: none), or NULL.
 */
const struct rgw_cors_rule *rgw_cors_match(const struct rgw_cors *c, const char *origin,
					   unsigned method, const char *hdrs);
/* Add rule's response headers for origin (preflight: with Allow-Headers and Max-Age). */
void rgw_cors_headers(const struct rgw_cors_rule *r, const char *origin, bool preflight,
		      const char *hdrs, struct rgw_str *out);

#endif
