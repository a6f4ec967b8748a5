/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/md5: ETag hashing rates (rgw/src/md5.c) against OpenSSL's MD5 on
 * the same bytes, in one process and run: S streams of LEN bytes each
 * (warm: the buffers are written first), hashed as a gateway thread hashes
 * S PUTs in flight (pieces of 64 KiB deferred round-robin, the batch
 * flushed as it fills), by the lane kernel, by the portable kernel, and by
 * OpenSSL's EVP one stream after another. Prints one line per S, last line
 * JSON. Nothing here fails on a timing.
 *   md5_bench [LEN_MIB (16)]
 */
#include "rgw/md5.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PIECE (64u << 10)

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Bytes/s hashing s streams of len with our code; digests into d. */
static double
run_ours(uint8_t **buf, unsigned s, size_t len, uint8_t (*d)[16])
{
	struct rgw_md5 *m = calloc(s, sizeof(*m));
	struct rgw_md5_batch b = { 0 };
	double t0 = now_s();

	if (!m)
		exit(1);
	for (unsigned i = 0; i < s; i++)
		rgw_md5_init(&m[i]);
	for (size_t off = 0; off < len; off += PIECE)
		for (unsigned i = 0; i < s; i++)
			rgw_md5_defer(&m[i], &b, buf[i] + off,
				      len - off < PIECE ? len - off : PIECE);
	for (unsigned i = 0; i < s; i++)
		rgw_md5_final(&m[i], d[i]);
	t0 = now_s() - t0;
	free(m);
	return (double)len * s / t0;
}

static double
run_openssl(uint8_t **buf, unsigned s, size_t len, uint8_t (*d)[16])
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	double t0 = now_s();

	for (unsigned i = 0; i < s; i++) {
		unsigned l = 16;

		EVP_DigestInit_ex(c, EVP_md5(), NULL);
		for (size_t off = 0; off < len; off += PIECE)
			EVP_DigestUpdate(c, buf[i] + off, len - off < PIECE ? len - off : PIECE);
		EVP_DigestFinal_ex(c, d[i], &l);
	}
	t0 = now_s() - t0;
	EVP_MD_CTX_free(c);
	return (double)len * s / t0;
}

int
main(int argc, char **argv)
{
	size_t len = (size_t)(argc > 1 ? strtoul(argv[1], NULL, 10) : 16) << 20;
	static const unsigned ss[] = { 1, 2, 4, 8, 16, 32 };
	uint8_t *buf[32], d1[32][16], d2[32][16];
	double lanes_mb[6], port_mb[6], ossl_mb[6];
	unsigned lanes;
	int bad = 0;

	if (!len || len > (1ul << 30)) {
		fprintf(stderr, "usage: md5_bench [LEN_MIB (1-1024, 16)]\n");
		return 2;
	}
	for (unsigned i = 0; i < 32; i++) {
		if (!(buf[i] = malloc(len)))
			return 1;
		for (size_t j = 0; j < len; j++)
			buf[i][j] = (uint8_t)(j * 131 + i);
	}
	rgw_md5_portable(false);
	lanes = rgw_md5_lanes();
	printf("md5_bench: %zu MiB per stream, kernel of %u lanes\n", len >> 20, lanes);
	printf("%8s %12s %12s %12s %8s\n", "streams", "lanes MB/s", "portable", "openssl", "ratio");
	for (unsigned k = 0; k < 6; k++) {
		unsigned s = ss[k];

		rgw_md5_portable(false);
		lanes_mb[k] = run_ours(buf, s, len, d1) / 1e6;
		rgw_md5_portable(true);
		port_mb[k] = run_ours(buf, s, len, d1) / 1e6;
		ossl_mb[k] = run_openssl(buf, s, len, d2) / 1e6;
		bad += memcmp(d1, d2, 16 * s) != 0;
		printf("%8u %12.0f %12.0f %12.0f %8.2f\n", s, lanes_mb[k], port_mb[k], ossl_mb[k],
		       lanes_mb[k] / ossl_mb[k]);
	}
	printf("{\"bench\": \"md5\", \"lanes\": %u, \"len_mib\": %zu, \"baseline\": \"openssl EVP md5\"",
	       lanes, len >> 20);
	for (unsigned k = 0; k < 6; k++)
		printf(", \"s%u\": {\"lanes_mb_s\": %.0f, \"portable_mb_s\": %.0f, \"openssl_mb_s\": %.0f, "
		       "\"ratio\": %.2f}",
		       ss[k], lanes_mb[k], port_mb[k], ossl_mb[k], lanes_mb[k] / ossl_mb[k]);
	printf(", \"digests_differ\": %d}\n", bad);
	for (unsigned i = 0; i < 32; i++)
		free(buf[i]);
	return bad ? 1 : 0;
}
