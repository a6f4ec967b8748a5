/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MD5 in lanes (rgw/src/md5.c) against OpenSSL's MD5: RFC 1321's vectors,
 * then many streams deferred in random pieces and flushed at random points,
 * on both kernels (the 16-lane one where the CPU has AVX-512).
 */
#include "rgw/md5.h"
#include "testlib.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

static void
ref_md5(const void *p, size_t n, uint8_t out[16])
{
	unsigned l = 16;

	ck_assert(EVP_Digest(p, n, out, &l, EVP_md5(), NULL));
}

static void
hex(const uint8_t d[16], char out[33])
{
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* The kernels to try: the portable one, and the best one if it differs. */
static unsigned
kernels(void)
{
	rgw_md5_portable(false);
	return rgw_md5_lanes() > 1 ? 2 : 1;
}

static void
use_kernel(unsigned k)
{
	rgw_md5_portable(k == 0);
}

START_TEST(test_vectors)
{
	/* RFC 1321, appendix A.5 */
	static const char *const v[][2] = {
		{ "", "d41d8cd98f00b204e9800998ecf8427e" },
		{ "a", "0cc175b9c0f1b6a831c399e269772661" },
		{ "abc", "900150983cd24fb0d6963f7d28e17f72" },
		{ "message digest", "f96b697d7cb7938d525a2f31aaf161d0" },
		{ "abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b" },
		{ "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
		  "d174ab98d277d9f5a5611c2c9f419d9f" },
		{ "1234567890123456789012345678901234567890123456789012345678901234567890"
		  "1234567890",
		  "57edf4a22be3c955ac49da2e2107b67a" },
	};

	for (unsigned k = 0; k < kernels(); k++) {
		use_kernel(k);
		for (size_t i = 0; i < CM_ARRAY_SIZE(v); i++) {
			struct rgw_md5_batch b = { 0 };
			struct rgw_md5 m;
			uint8_t d[16];
			char h[33];

			rgw_md5_init(&m);
			rgw_md5_defer(&m, &b, v[i][0], strlen(v[i][0]));
			rgw_md5_final(&m, d);
			hex(d, h);
			ck_assert_msg(!strcmp(h, v[i][1]), "kernel %u, \"%s\": %s", k, v[i][0], h);
		}
	}
	rgw_md5_portable(false);
}

END_TEST

#define NS 40

/* Many streams, random piece sizes, random flush points; a few dropped midway. */
START_TEST(test_streams)
{
	unsigned seed = 20261204;
	uint8_t *data[NS];
	size_t len[NS], off[NS];
	bool dropped[NS], done[NS];
	struct rgw_md5 m[NS];
	struct rgw_md5_batch b = { 0 };
	unsigned bad = 0;

	for (unsigned k = 0; k < kernels(); k++) {
		use_kernel(k);
		for (int round = 0; round < 6; round++) {
			unsigned ns = 1 + (unsigned)rand_r(&seed) % NS, open;

			for (unsigned i = 0; i < ns; i++) {
				/* lengths from 0 to ~3 MiB, many near block edges */
				unsigned r = (unsigned)rand_r(&seed);

				len[i] = r % 4 == 0   ? (size_t)(r >> 8) % 130
					 : r % 4 == 1 ? 64 * ((r >> 8) % 300) + (r >> 20) % 3
						      : (size_t)(r >> 4) % (3u << 20);
				data[i] = malloc(len[i] + 1);
				ck_assert(data[i]);
				for (size_t j = 0; j < len[i]; j++)
					data[i][j] = (uint8_t)rand_r(&seed);
				off[i] = 0;
				dropped[i] = false;
				done[i] = false;
				rgw_md5_init(&m[i]);
			}
			open = ns;
			while (open) {
				unsigned i = (unsigned)rand_r(&seed) % ns;
				size_t piece;

				if (done[i])
					continue;
				if (off[i] < len[i] && !dropped[i]) {
					unsigned r = (unsigned)rand_r(&seed);

					piece = r % 3 == 0 ? r % 70 : r % 200000;
					if (piece > len[i] - off[i])
						piece = len[i] - off[i];
					if (r % 5 == 0)
						rgw_md5_update(&m[i], data[i] + off[i], piece);
					else
						rgw_md5_defer(&m[i], &b, data[i] + off[i], piece);
					off[i] += piece;
					if (r % 97 == 0 && len[i] > 1000) {
						rgw_md5_drop(&m[i]);
						dropped[i] = true;
						done[i] = true;
						open--;
					}
				} else {
					uint8_t d[16], r[16];

					rgw_md5_final(&m[i], d);
					ref_md5(data[i], len[i], r);
					if (memcmp(d, r, 16))
						bad++;
					done[i] = true;
					open--;
				}
				if (rand_r(&seed) % 50 == 0)
					rgw_md5_flush(&b);
			}
			ck_assert_ptr_null(b.head);
			for (unsigned i = 0; i < ns; i++)
				free(data[i]);
			ck_assert_msg(!bad, "kernel %u round %d: %u of %u digests differ", k, round,
				      bad, ns);
		}
	}
	ck_assert_uint_gt(b.flushes, 0);
	rgw_md5_portable(false);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("md5");
	TCase *tc = tcase_create("md5");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_vectors);
	tcase_add_test(tc, test_streams);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
