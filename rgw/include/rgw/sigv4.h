/* SPDX-License-Identifier: Apache-2.0 */
/*
 * AWS Signature Version 4 as S3 uses it (docs/design/rgw.md §2): the
 * Authorization header form and the presigned (query) form, the canonical
 * request built from the request as received, and the chunk and trailer
 * signatures of STREAMING-AWS4-HMAC-SHA256-PAYLOAD(-TRAILER) bodies.
 */
#ifndef RGW_SIGV4_H
#define RGW_SIGV4_H

#include "rgw/http.h"
#include "rgw/str.h"

#define RGW_SIGV4_MAX_SIGNED 64
#define RGW_SIGV4_SKEW_S     900    /* 15 minutes */
#define RGW_SIGV4_MAX_EXPIRY 604800 /* 7 days */

struct rgw_sigv4 {
	bool presigned;
	char access_key[129];
	char scope_date[9]; /* YYYYMMDD */
	char region[64];
	char service[32];
	char amz_date[17]; /* YYYYMMDDTHHMMSSZ */
	char signature[65];
	char signed_headers[1024]; /* "host;x-amz-date" as sent */
	const char *signed_list[RGW_SIGV4_MAX_SIGNED];
	unsigned nsigned;
	char signed_buf[1024];
	uint64_t expires;    /* presigned: X-Amz-Expires seconds */
	int64_t time;        /* amz_date as seconds since the epoch */
	const char *payload; /* x-amz-content-sha256 (header form), or "UNSIGNED-PAYLOAD" */
};

/*
 * Find and parse the request's SigV4 credentials (header or query).
 * \return 0; -ENOENT (no credentials: anonymous); -EINVAL (malformed:
 * err says what); -EPROTONOSUPPORT (another scheme, e.g. SigV2).
 */
int rgw_sigv4_parse(const struct rgw_http_head *h, struct rgw_sigv4 *a, char *err, size_t elen);

/*
 * Time checks: the header form within RGW_SIGV4_SKEW_S of now, a presigned
 * URL not expired and not dated in the future past the skew.
 * \return 0, -ETIMEDOUT (RequestTimeTooSkewed), -EKEYEXPIRED (expired).
 */
int rgw_sigv4_check_time(const struct rgw_sigv4 *a, int64_t now);

/*
 * The canonical request (into out). raw_path: use the path as sent (some
 * clients sign it so) rather than re-encoded from its decoded form.
 * \return 0, -EINVAL (a bad escape, a signed header missing), -ENOMEM.
 */
int rgw_sigv4_canonical(const struct rgw_http_head *h, const struct rgw_sigv4 *a, bool raw_path,
			struct rgw_str *out);

/* HMAC-SHA256 signing key for secret and a's scope. */
void rgw_sigv4_key(const char *secret, const struct rgw_sigv4 *a, uint8_t key[32]);

/*
 * Check a's signature with secret. *seed (may be NULL) gets the signature
 * (binary), the seed of a streaming body's chunk chain.
 * \return 0, -EPERM (SignatureDoesNotMatch), -EINVAL, -ENOMEM.
 */
int rgw_sigv4_verify(const struct rgw_http_head *h, const struct rgw_sigv4 *a, const char *secret,
		     char seed_hex[65]);

/*
 * The signature of one chunk of a streaming body: kind "AWS4-HMAC-SHA256-PAYLOAD"
 * with hash the chunk's SHA-256, or "AWS4-HMAC-SHA256-TRAILER" with the trailer's.
 */
void rgw_sigv4_chunk_sig(const uint8_t key[32], const struct rgw_sigv4 *a, const char *kind,
			 const char *prev_hex, const uint8_t hash[32], char out_hex[65]);

/* Constant-time comparison of two NUL-terminated hex strings. */
bool rgw_sigv4_equal(const char *a, const char *b);

/* SHA-256 of b. */
void rgw_sha256(const void *b, size_t n, uint8_t out[32]);

/* "YYYYMMDDTHHMMSSZ" -> seconds. \return 0 or -EINVAL. */
int rgw_sigv4_parse_date(const char *s, int64_t *t);

#endif
