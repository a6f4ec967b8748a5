/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/crc32c.h"
#include "testlib.h"

/* Known vectors: RFC 3720 appendix B.4 (iSCSI) and the standard check value. */
START_TEST(test_crc32c_vectors)
{
	uint8_t b[32];

	ck_assert_uint_eq(cm_crc32c(0, "123456789", 9), 0xE3069283u);
	ck_assert_uint_eq(cm_crc32c(0, "", 0), 0);
	memset(b, 0, sizeof(b));
	ck_assert_uint_eq(cm_crc32c(0, b, 32), 0x8A9136AAu);
	memset(b, 0xff, sizeof(b));
	ck_assert_uint_eq(cm_crc32c(0, b, 32), 0x62A8AB43u);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)i;
	ck_assert_uint_eq(cm_crc32c(0, b, 32), 0x46DD794Eu);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)(31 - i);
	ck_assert_uint_eq(cm_crc32c(0, b, 32), 0x113FDB5Cu);
}

END_TEST

START_TEST(test_crc32c_matches_sw_and_chains)
{
	size_t n = 1 << 20;
	uint8_t *b = malloc(n);

	cm_test_fill(b, n, 42);
	for (size_t len = 0; len < 300; len++)
		ck_assert_uint_eq(cm_crc32c(0, b + 3, len), cm_crc32c_sw(0, b + 3, len));
	uint32_t whole = cm_crc32c(0, b, n);

	ck_assert_uint_eq(whole, cm_crc32c_sw(0, b, n));
	for (size_t cut = 0; cut < n; cut += 77777)
		ck_assert_uint_eq(cm_crc32c(cm_crc32c(0, b, cut), b + cut, n - cut), whole);
	free(b);
}

END_TEST

/* crc(a||b) from crc(a), crc(b) and len(b), at every kind of cut. */
START_TEST(test_crc32c_combine)
{
	size_t n = 1 << 20;
	uint8_t *b = malloc(n);
	uint32_t whole;

	cm_test_fill(b, n, 7);
	whole = cm_crc32c(0, b, n);
	for (size_t cut = 0; cut <= n; cut += (cut < 70 ? 1 : 65521)) {
		uint32_t ca = cm_crc32c(0, b, cut), cb = cm_crc32c(0, b + cut, n - cut);

		ck_assert_uint_eq(cm_crc32c_combine(ca, cb, n - cut), whole);
	}
	for (size_t len = 0; len < 40; len++) {
		uint32_t ca = cm_crc32c(0, "abc", 3), cb = cm_crc32c(0, b, len);

		ck_assert_uint_eq(cm_crc32c_combine(ca, cb, len), cm_crc32c(ca, b, len));
	}
	/* Blocks of 4 KiB folded one by one, as a receiver would. */
	{
		uint32_t acc = 0;

		for (size_t off = 0; off < n; off += 4096)
			acc = cm_crc32c_combine(acc, cm_crc32c(0, b + off, 4096), 4096);
		ck_assert_uint_eq(acc, whole);
	}
	free(b);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("crc32c");
	TCase *tc = tcase_create("crc32c");

	tcase_add_test(tc, test_crc32c_vectors);
	tcase_add_test(tc, test_crc32c_combine);
	tcase_add_test(tc, test_crc32c_matches_sw_and_chains);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
