/* SPDX-License-Identifier: Apache-2.0 */
/* Erasure coding (osd/src/ec.c): every loss of up to m shards rebuilds the bytes. */
#include "osd/osd.h"
#include "testlib.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct set {
	struct osd_ec ec;
	size_t len;
	uint8_t *orig[OSD_EC_MAX_SHARDS], *work[OSD_EC_MAX_SHARDS];
};

static void
set_make(struct set *s, unsigned k, unsigned m, size_t len, uint64_t seed)
{
	ck_assert_int_eq(osd_ec_init(&s->ec, k, m, 4096), 0);
	s->len = len;
	for (unsigned i = 0; i < k + m; i++) {
		s->orig[i] = malloc(len + 1);
		s->work[i] = malloc(len + 1);
		ck_assert(s->orig[i] && s->work[i]);
		if (i < k)
			cm_test_fill(s->orig[i], len, seed + i);
	}
	osd_ec_encode(&s->ec, len, s->orig, s->orig + k);
}

static void
set_free(struct set *s)
{
	for (unsigned i = 0; i < s->ec.k + s->ec.m; i++) {
		free(s->orig[i]);
		free(s->work[i]);
	}
	osd_ec_fini(&s->ec);
}

/* Lose the shards in lost, rebuild them from the rest, compare. */
static void
check_loss(struct set *s, uint32_t lost)
{
	unsigned n = s->ec.k + s->ec.m;
	uint32_t all = n == 32 ? ~0u : (1u << n) - 1;

	for (unsigned i = 0; i < n; i++) {
		if (lost & 1u << i)
			memset(s->work[i], 0xa5, s->len);
		else
			memcpy(s->work[i], s->orig[i], s->len);
	}
	ck_assert_int_eq(osd_ec_decode(&s->ec, s->len, s->work, all & ~lost, lost), 0);
	for (unsigned i = 0; i < n; i++)
		ck_assert_msg(memcmp(s->work[i], s->orig[i], s->len) == 0,
			      "k=%u m=%u lost=%#x: shard %u differs", s->ec.k, s->ec.m, lost, i);
}

START_TEST(test_every_loss_4_2)
{
	struct set s;

	set_make(&s, 4, 2, 3 * 4096 + 100, 7);
	for (uint32_t lost = 0; lost < 64; lost++)
		if (__builtin_popcount(lost) <= 2)
			check_loss(&s, lost);
	set_free(&s);
}

END_TEST

START_TEST(test_random_profiles)
{
	uint64_t x = 99;

	for (int round = 0; round < 40; round++) {
		struct set s;
		unsigned k, m;
		uint32_t lost = 0;

		x = cm_test_mix(x);
		k = 2 + (unsigned)(x % 15);
		m = 1 + (unsigned)((x >> 8) % 6);
		set_make(&s, k, m, 1 + (size_t)((x >> 16) % 20000), x);
		while ((unsigned)__builtin_popcount(lost) < m) {
			x = cm_test_mix(x);
			lost |= 1u << (x % (k + m));
		}
		check_loss(&s, lost);
		set_free(&s);
	}
}

END_TEST

START_TEST(test_too_few)
{
	struct set s;

	set_make(&s, 4, 2, 4096, 1);
	/* three lost of 4+2: no way back, and the caller hears so */
	ck_assert_int_eq(osd_ec_decode(&s.ec, s.len, s.orig, 0x7, 0x38), -EIO);
	/* a wanted shard without a buffer is a caller error */
	{
		uint8_t *keep = s.orig[5];

		s.orig[5] = NULL;
		ck_assert_int_eq(osd_ec_decode(&s.ec, s.len, s.orig, 0xf, 0x30), -EINVAL);
		s.orig[5] = keep;
	}
	set_free(&s);
}

END_TEST

START_TEST(test_split_join)
{
	struct osd_ec ec;
	uint8_t *buf, *back, *d[3];
	uint64_t n = 5;

	ck_assert_int_eq(osd_ec_init(&ec, 3, 1, 8192), 0);
	buf = malloc(n * osd_ec_stripe_width(&ec));
	back = malloc(n * osd_ec_stripe_width(&ec));
	for (int i = 0; i < 3; i++)
		d[i] = malloc(n * ec.su);
	cm_test_fill(buf, n * osd_ec_stripe_width(&ec), 3);
	osd_ec_split(&ec, buf, n, d);
	/* stripe 2, shard 1 is logical bytes [(2*3+1)*su, +su) */
	ck_assert_int_eq(memcmp(d[1] + 2 * ec.su, buf + 7 * ec.su, ec.su), 0);
	osd_ec_join(&ec, d, n, back);
	ck_assert_int_eq(memcmp(buf, back, n * osd_ec_stripe_width(&ec)), 0);
	ck_assert_uint_eq(osd_ec_shard_size(&ec, 0), 0);
	ck_assert_uint_eq(osd_ec_shard_size(&ec, 1), 8192);
	ck_assert_uint_eq(osd_ec_shard_size(&ec, 3 * 8192), 8192);
	ck_assert_uint_eq(osd_ec_shard_size(&ec, 3 * 8192 + 1), 16384);
	for (int i = 0; i < 3; i++)
		free(d[i]);
	free(buf);
	free(back);
	osd_ec_fini(&ec);
}

END_TEST

START_TEST(test_bad_profiles)
{
	struct osd_ec ec;

	ck_assert_int_eq(osd_ec_init(&ec, 1, 1, 4096), -EINVAL);
	ck_assert_int_eq(osd_ec_init(&ec, 4, 0, 4096), -EINVAL);
	ck_assert_int_eq(osd_ec_init(&ec, 20, 13, 4096), -EINVAL);
	ck_assert_int_eq(osd_ec_init(&ec, 4, 2, 1000), -EINVAL);
	ck_assert_int_eq(osd_ec_init(&ec, 4, 2, 6144), -EINVAL);
	ck_assert_int_eq(osd_ec_init(&ec, 4, 2, 2u << 20), -EINVAL);
	ck_assert_int_eq(osd_ec_init(&ec, 16, 16, 65536), 0);
	osd_ec_fini(&ec);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("ec");
	TCase *tc = tcase_create("ec");

	tcase_add_test(tc, test_every_loss_4_2);
	tcase_add_test(tc, test_random_profiles);
	tcase_add_test(tc, test_too_few);
	tcase_add_test(tc, test_split_join);
	tcase_add_test(tc, test_bad_profiles);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
