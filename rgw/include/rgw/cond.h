/* SPDX-License-Identifier: Apache-2.0 */
/* Range and conditional-request headers (RFC 9110 as S3 applies them). */
#ifndef RGW_COND_H
#define RGW_COND_H

#include "cm/stdinc.h"

/*
 * A Range header against an object of size bytes. \return 0 (*off, *len:
 * one satisfiable range), 1 (no usable range: send the whole object;
 * several ranges or a malformed header are ignored, as S3 does),
 * -ERANGE (unsatisfiable: 416).
 */
int rgw_range_parse(const char *h, uint64_t size, uint64_t *off, uint64_t *len);

/*
 * x-amz-copy-source-range: "bytes=first-last" (both given, first <= last)
 * against a source of size bytes. \return 0 (*off, *len), -EINVAL
 * (malformed), -ERANGE (past the source's end).
 */
int rgw_copy_range_parse(const char *h, uint64_t size, uint64_t *off, uint64_t *len);

/* An HTTP date (IMF-fixdate, RFC 850 or asctime). \return 0 (*t seconds) or -EINVAL. */
int rgw_http_date_parse(const char *s, int64_t *t);

/* Whether an If-Match / If-None-Match list (or "*") matches etag ("\"...\""). */
bool rgw_etag_match(const char *list, const char *etag);

enum rgw_cond_result {
	RGW_COND_OK = 0,
	RGW_COND_NOT_MODIFIED = 304,
	RGW_COND_FAILED = 412,
};

/*
 * Evaluate If-Match, If-Unmodified-Since, If-None-Match, If-Modified-Since
 * (NULL: absent) for an object with etag and mtime (seconds), in RFC 9110's
 * order, as a GET/HEAD (read) or a write (If-None-Match failing is 412).
 */
enum rgw_cond_result rgw_cond_eval(const char *if_match, const char *if_unmod, const char *if_none,
				   const char *if_mod, const char *etag, int64_t mtime, bool read);

#endif
