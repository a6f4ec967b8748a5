/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MD5 (RFC 1321) for S3 ETags, many uploads at once (docs/design/rgw.md
 * §9.4). MD5 is serial within one stream, so one PUT cannot go faster than
 * one core hashes; a gateway thread has many PUTs in flight, though. Their
 * bytes wait in the uploads' own buffers (rgw_md5_defer) until one pass
 * hashes all of them, one stream per lane of a 16-lane AVX-512 kernel; a
 * CPU without AVX-512 hashes them one by one (the portable kernel).
 */
#ifndef RGW_MD5_H
#define RGW_MD5_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A stream's bytes wait at most this much before a flush of its batch. */
#define RGW_MD5_DEFER_MAX (1u << 20)

struct rgw_md5_batch;

struct rgw_md5 {
	uint32_t h[4];
	uint64_t len;        /* bytes hashed or in part[] (not those pending) */
	uint8_t part[64];    /* the last len % 64 bytes, not a whole block yet */
	const uint8_t *pend; /* the caller's bytes, not read yet */
	size_t pend_len;
	struct rgw_md5_batch *b; /* where it waits (pend_len > 0), else NULL */
	struct rgw_md5 *next;
};

/* Streams with bytes waiting; one per thread, not shared between threads. */
struct rgw_md5_batch {
	struct rgw_md5 *head;
	uint64_t flushes; /* passes run */
	uint64_t streams; /* streams hashed, summed over the passes */
};

void rgw_md5_init(struct rgw_md5 *m);
/* Hash n bytes now (after any that wait). */
void rgw_md5_update(struct rgw_md5 *m, const void *p, size_t n);
/*
 * Append n bytes that stay valid and unchanged until b is flushed (or m is
 * finished or dropped). Bytes that do not follow those already waiting
 * (another buffer) flush b first; so does a stream that has
 * RGW_MD5_DEFER_MAX waiting.
 */
void rgw_md5_defer(struct rgw_md5 *m, struct rgw_md5_batch *b, const void *p, size_t n);
/* Hash every stream's waiting bytes, in lanes. */
void rgw_md5_flush(struct rgw_md5_batch *b);
/* The digest of everything given (flushes m's batch first). m may be reused after init. */
void rgw_md5_final(struct rgw_md5 *m, uint8_t out[16]);
/* Leave the batch without reading the waiting bytes (an upload given up): m is done. */
void rgw_md5_drop(struct rgw_md5 *m);

/* Lanes the kernel in use has (16 with AVX-512, else 1). */
unsigned rgw_md5_lanes(void);
/* Tests and benchmarks: use the portable kernel (true) or the best one (false). */
void rgw_md5_portable(bool on);

#endif
