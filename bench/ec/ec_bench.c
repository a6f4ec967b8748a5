/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/ec: ISA-L's raw encode rate for an EC profile (ec_encode_data on k
 * ready shard buffers) beside Cairn's encode path as the primary runs it for
 * a write (parity straight from the logical bytes, stripe by stripe, plus a
 * copy of its own data shard), the plain split-then-encode, and the decode
 * of two lost data shards, single thread, in the same run.
 * Rates are logical (client) bytes per second. Last line JSON.
 *   ec_bench [K M [SU [SECONDS]]]   (default 4 2 4096 2)
 */
#include "osd/osd.h"
#include "cm/stdinc.h"

#include <inttypes.h>
#include <isa-l/erasure_code.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OBJ    (4u << 20) /* a 4 MiB write */
#define ROUNDS 5

static double
now_s(void)
{
	return (double)cm_now_ns() / 1e9;
}

static uint8_t *
alloc_page(size_t n)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, n ? n : 1))
		return NULL;
	memset(p, 0x5a, n);
	return p;
}

int
main(int argc, char **argv)
{
	unsigned k = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 4,
		 m = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 2;
	unsigned su = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 4096;
	double secs = argc > 4 ? strtod(argv[4], NULL) : 2.0, t0, t, raw, ours, dec, split;
	struct osd_ec ec;
	uint8_t *logical, *sh[OSD_EC_MAX_SHARDS], *tables, *matrix;
	uint64_t n, sw, ns, shard_len, iters;

	if (osd_ec_init(&ec, k, m, su)) {
		fprintf(stderr, "ec_bench: bad profile %u+%u su %u\n", k, m, su);
		return 2;
	}
	sw = osd_ec_stripe_width(&ec);
	ns = (OBJ + sw - 1) / sw;
	shard_len = ns * su;
	logical = alloc_page(ns * sw);
	for (unsigned i = 0; i < k + m; i++)
		sh[i] = alloc_page(shard_len);
	tables = malloc((size_t)32 * k * m);
	matrix = malloc((size_t)(k + m) * k);
	if (!logical || !tables || !matrix)
		return 2;
	for (uint64_t i = 0; i < ns * sw; i++)
		logical[i] = (uint8_t)(i * 2654435761u >> 13);
	osd_ec_split(&ec, logical, ns, sh);

	/* ISA-L alone (the same matrix, tables made once, shards ready), ours,
	 * and the plain split-then-encode, in interleaved rounds (the best round
	 * of each counts: a shared machine's noise only ever slows one down). */
	gf_gen_cauchy1_matrix(matrix, (int)(k + m), (int)k);
	ec_init_tables((int)k, (int)m, matrix + (size_t)k * k, tables);
	raw = ours = split = 0;
	for (int round = 0; round < ROUNDS; round++) {
		double r;

		iters = 0;
		t0 = now_s();
		do {
			ec_encode_data((int)shard_len, (int)k, (int)m, tables, sh, sh + k);
			iters++;
		} while ((t = now_s() - t0) < secs / ROUNDS);
		r = (double)iters * (double)(ns * sw) / t;
		raw = r > raw ? r : raw;

		/* Ours, as the primary does per write: parity straight from the
		 * logical bytes, and one data shard copied out (its own, for its
		 * store; the others are sent gathered from the logical bytes). */
		iters = 0;
		t0 = now_s();
		do {
			osd_ec_encode_stripes(&ec, logical, ns, sh + k);
			for (uint64_t s = 0; s < ns; s++)
				memcpy(sh[0] + s * su, logical + s * sw, su);
			iters++;
		} while ((t = now_s() - t0) < secs / ROUNDS);
		r = (double)iters * (double)(ns * sw) / t;
		ours = r > ours ? r : ours;

		iters = 0;
		t0 = now_s();
		do {
			osd_ec_split(&ec, logical, ns, sh);
			osd_ec_encode(&ec, shard_len, sh, sh + k);
			iters++;
		} while ((t = now_s() - t0) < secs / ROUNDS);
		r = (double)iters * (double)(ns * sw) / t;
		split = r > split ? r : split;
	}

	/* Decode: two data shards lost (or all of m when m < 2). */
	{
		unsigned lose = m < 2 ? m : 2;
		uint32_t all = (k + m == 32 ? ~0u : (1u << (k + m)) - 1), lost = (1u << lose) - 1;

		iters = 0;
		t0 = now_s();
		do {
			if (osd_ec_decode(&ec, shard_len, sh, all & ~lost, lost))
				return 2;
			iters++;
		} while ((t = now_s() - t0) < secs);
		dec = (double)iters * (double)(ns * sw) / t;
	}
	n = ns * sw;
	printf("EC %u+%u, stripe unit %u, %" PRIu64 "-byte writes, one core\n", k, m, su, n);
	printf("  ISA-L ec_encode_data (raw)      %8.1f MiB/s\n", raw / 1048576);
	printf("  Cairn write path (encode + own shard) %8.1f MiB/s  (%.2f of raw)\n",
	       ours / 1048576, ours / raw);
	printf("  split all shards, then encode   %8.1f MiB/s  (%.2f of raw)\n", split / 1048576,
	       split / raw);
	printf("  Cairn decode of 2 lost shards   %8.1f MiB/s\n", dec / 1048576);
	printf("{\"bench\":\"ec\",\"k\":%u,\"m\":%u,\"stripe_unit\":%u,\"raw_encode_mib_s\":%.1f,"
	       "\"cairn_encode_mib_s\":%.1f,\"ratio\":%.3f,\"split_encode_mib_s\":%.1f,"
	       "\"decode_mib_s\":%.1f}\n",
	       k, m, su, raw / 1048576, ours / 1048576, ours / raw, split / 1048576, dec / 1048576);
	for (unsigned i = 0; i < k + m; i++)
		free(sh[i]);
	free(logical);
	free(tables);
	free(matrix);
	osd_ec_fini(&ec);
	return 0;
}
