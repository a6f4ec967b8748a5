/* SPDX-License-Identifier: Apache-2.0 */
/* A request target split into its decoded path and query parameters. */
#ifndef RGW_URI_H
#define RGW_URI_H

#include "cm/stdinc.h"

#define RGW_URI_MAX_PARAMS 64

struct rgw_qparam {
	char *key; /* decoded, NUL-terminated */
	char *val; /* decoded ("" when the parameter had no '=') */
	size_t klen, vlen;
	bool has_val;
};

struct rgw_uri {
	char *path; /* decoded ('/'...), NUL-terminated; no NUL inside */
	size_t path_len;
	const char *raw_path; /* as sent (not terminated: raw_path_len) */
	size_t raw_path_len;
	struct rgw_qparam q[RGW_URI_MAX_PARAMS];
	size_t nq;
	char *mem;
};

/*
 * Split target (origin form "/path?query"; an absolute "http://host/path"
 * is reduced to its path). \return 0, -EINVAL (not a path, a bad %
 * escape, a NUL), -E2BIG (more than RGW_URI_MAX_PARAMS parameters), -ENOMEM.
 */
int rgw_uri_parse(const char *target, size_t len, struct rgw_uri *u);
void rgw_uri_fini(struct rgw_uri *u);
/* The parameter's value ("" for one without '='), or NULL when absent. */
const char *rgw_uri_q(const struct rgw_uri *u, const char *key);

/* x-amz-copy-source, decoded. */
struct rgw_copy_src {
	char *bucket; /* NUL-terminated */
	char *key;    /* key_len bytes (and a NUL); no NUL inside */
	size_t key_len;
	char *version; /* the versionId parameter, or NULL */
	char *mem;
};

/*
 * An x-amz-copy-source value: "[/]bucket/key[?versionId=id]", percent-
 * encoded (an unencoded '?' starts the parameters). \return 0, -EINVAL
 * (no bucket, no key, a bad escape, a NUL, a parameter other than
 * versionId), -ENOMEM.
 */
int rgw_copy_source_parse(const char *v, struct rgw_copy_src *cs);
void rgw_copy_source_fini(struct rgw_copy_src *cs);

struct rgw_str;
/*
 * x-amz-tagging ("k1=v1&k2=v2", URL-encoded, '+' a space) appended to a
 * packed tag set (rgw_tags_add). \return 0, -EINVAL, -EEXIST, -E2BIG, -ENOMEM.
 */
int rgw_tags_from_query(const char *s, struct rgw_str *packed);

#endif
