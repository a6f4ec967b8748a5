/* SPDX-License-Identifier: Apache-2.0 */
/*
 * aws-chunked bodies (docs/design/rgw.md §2): the framing S3 clients use for
 * STREAMING-AWS4-HMAC-SHA256-PAYLOAD(-TRAILER) and
 * STREAMING-UNSIGNED-PAYLOAD-TRAILER uploads, decoded as it arrives:
 *
 *   <hex size>[;chunk-signature=<64 hex>]\r\n<size bytes>\r\n ...
 *   0[;chunk-signature=<64 hex>]\r\n
 *   [<trailer>:<value>\r\n ... [x-amz-trailer-signature:<64 hex>\r\n]]\r\n
 *
 * Signed chunks are checked as each ends (the chain starts at the request's
 * signature); a signed trailer section is checked at the end. And the
 * x-amz-checksum-* family: CRC32, CRC32C, CRC64NVME, SHA1, SHA256, computed
 * as bytes stream, compared in S3's base64 form.
 */
#ifndef RGW_CHUNKED_H
#define RGW_CHUNKED_H

#include "rgw/sigv4.h"

#include <openssl/evp.h>

#define RGW_CHUNK_LINE_MAX    256
#define RGW_TRAILERS_MAX      4096
#define RGW_AWSCHUNK_MAX_SIZE (64ull << 20) /* one chunk */

enum {
	RGW_AWSCHUNK_SIGNED = 1,  /* chunk signatures (STREAMING-AWS4-HMAC-SHA256-*) */
	RGW_AWSCHUNK_TRAILER = 2, /* a trailer section follows the last chunk */
};

struct rgw_awschunk {
	unsigned flags;
	int st;
	uint64_t left; /* bytes of the current chunk still to come */
	char line[RGW_CHUNK_LINE_MAX];
	size_t ll;
	char trailers[RGW_TRAILERS_MAX];
	size_t tl;
	char want_sig[65];
	char prev[65];
	uint8_t key[32];
	const struct rgw_sigv4 *a;
	EVP_MD_CTX *sha;
	uint64_t decoded;
	const char *err; /* why a feed failed */
};

/* 0, or non-zero to stop: the feed then returns -ECANCELED at once, touching d no more. */
typedef int (*rgw_awschunk_data)(void *arg, const char *b, size_t n);

/* \return 0, -ENOMEM. key, a and seed: the request's (signed chunks only). */
int rgw_awschunk_init(struct rgw_awschunk *d, unsigned flags, const uint8_t key[32],
		      const struct rgw_sigv4 *a, const char *seed_hex);
void rgw_awschunk_fini(struct rgw_awschunk *d);
/*
 * Decode n more bytes; data(arg, ...) gets the payload as it is found.
 * \return 0; -EBADMSG (malformed: d->err), -EPERM (a signature does not
 * match); bytes past the end are -EBADMSG; -ECANCELED (data stopped it).
 * After an error, stop feeding.
 */
int rgw_awschunk_feed(struct rgw_awschunk *d, const char *b, size_t n, rgw_awschunk_data data,
		      void *arg);
/* Whether the whole body (the last chunk and the trailers) has been decoded. */
bool rgw_awschunk_done(const struct rgw_awschunk *d);
/* A trailer's value (name lower case) into out. \return 0, -ENOENT, -E2BIG. */
int rgw_awschunk_trailer(const struct rgw_awschunk *d, const char *name, char *out, size_t len);

/* ---- checksums ---- */

enum rgw_cksum_alg {
	RGW_CK_NONE = 0,
	RGW_CK_CRC32,
	RGW_CK_CRC32C,
	RGW_CK_CRC64NVME,
	RGW_CK_SHA1,
	RGW_CK_SHA256,
};

struct rgw_cksum {
	enum rgw_cksum_alg alg;
	uint32_t crc32;
	uint64_t crc64;
	EVP_MD_CTX *md;
};

/* "crc32", "crc32c", "crc64nvme", "sha1", "sha256" (any case) -> alg, or RGW_CK_NONE. */
enum rgw_cksum_alg rgw_cksum_alg_of(const char *name);
/* The header name: "x-amz-checksum-crc32", ... */
const char *rgw_cksum_header(enum rgw_cksum_alg alg);
int rgw_cksum_init(struct rgw_cksum *c, enum rgw_cksum_alg alg);
void rgw_cksum_update(struct rgw_cksum *c, const void *b, size_t n);
/* The checksum in S3's form (base64 of the big-endian bytes) into out (at least 48 bytes). */
void rgw_cksum_final(struct rgw_cksum *c, char *out, size_t len);
void rgw_cksum_fini(struct rgw_cksum *c);
/* CRC-64/NVME (poly 0xad93d23594c93659, reflected), chained as cm_crc32c. */
uint64_t rgw_crc64nvme(uint64_t crc, const void *b, size_t n);

#endif
