/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The striper's arithmetic (libclient/src/striper_map.c) against a map
 * built byte by byte the slow way: units dealt round-robin to the objects
 * of a set, each object filling its units in order.
 */
#include "striper_map.h"
#include "testlib.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Where each logical byte of [0, n) is: object and offset in it. */
struct where {
	uint64_t obj, off;
};

static struct where *
brute(const struct cairn_layout *l, uint64_t n)
{
	uint64_t su = l->stripe_unit, sc = l->stripe_count, spo = l->object_size / su;
	uint64_t units = (n + su - 1) / su, nobj = (units / (sc * spo) + 1) * sc;
	uint64_t *filled = calloc(nobj, sizeof(*filled));
	struct where *w = calloc(n, sizeof(*w));

	ck_assert_ptr_nonnull(filled);
	ck_assert_ptr_nonnull(w);
	for (uint64_t b = 0; b < units; b++) {
		uint64_t obj = b / (sc * spo) * sc + b % sc, idx = filled[obj]++;

		/* An object never takes more than its size. (No ck_assert per unit
		 * or byte here: each passing one is a message to Check's parent.) */
		if (idx >= spo)
			ck_abort_msg("object %llu takes unit %llu of %llu", (unsigned long long)obj,
				     (unsigned long long)idx, (unsigned long long)spo);
		for (uint64_t i = 0; i < su && b * su + i < n; i++)
			w[b * su + i] = (struct where){ obj, idx * su + i };
	}
	free(filled);
	return w;
}

static const struct cairn_layout g_layouts[] = {
	{ 4096, 1, 4096 }, { 4096, 1, 65536 }, { 4096, 3, 16384 },
	{ 1000, 4, 8000 }, { 512, 7, 512 },    { 65536, 2, 262144 },
};

START_TEST(test_extents_match_bytes)
{
	const struct cairn_layout *l = &g_layouts[_i];
	uint64_t n = 3 * l->object_size * l->stripe_count + 5 * l->stripe_unit + 17;
	struct where *w = brute(l, n);
	struct smap_ext ext[512];

	ck_assert_int_eq(cairn__smap_check(l), 0);
	srand(7 + (unsigned)_i);
	for (int t = 0; t < 2000; t++) {
		uint64_t off = (uint64_t)rand() % n, len = (uint64_t)rand() % (n - off) + 1;
		size_t k = cairn__smap_extents(l, off, len, ext, 512), total = 0;

		ck_assert_uint_le(k, 512);
		for (size_t e = 0; e < k; e++) {
			ck_assert_uint_eq(ext[e].buf_off, total);
			ck_assert_uint_gt(ext[e].len, 0);
			ck_assert_uint_le(ext[e].len, l->stripe_unit);
			for (uint64_t i = 0;
			     i<ext[e].len; i += ext[e].len> 1 ? ext[e].len - 1 : 1) {
				const struct where *x = &w[off + ext[e].buf_off + i];

				ck_assert_uint_eq(ext[e].objno, x->obj);
				ck_assert_uint_eq(ext[e].obj_off + i, x->off);
			}
			total += ext[e].len;
		}
		ck_assert_uint_eq(total, len);
	}
	/* Object lengths and counts at sizes across the whole stretch (the
	 * brute lengths grow with the bytes below each size). */
	{
		static uint64_t lens[4096];
		uint64_t maxobj = 0, done = 0, step = n / 3000 + 1;

		memset(lens, 0, sizeof(lens));
		for (uint64_t size = 0; size <= n; size += size < 3 * l->stripe_unit ? 1 : step) {
			for (; done < size; done++) {
				if (w[done].obj >= 4096)
					ck_abort_msg("byte %llu in object %llu",
						     (unsigned long long)done,
						     (unsigned long long)w[done].obj);
				if (w[done].off + 1 > lens[w[done].obj])
					lens[w[done].obj] = w[done].off + 1;
				if (w[done].obj + 1 > maxobj)
					maxobj = w[done].obj + 1;
			}
			ck_assert_uint_eq(cairn__smap_nobjects(l, size), maxobj);
			for (uint64_t o = 0; o < maxobj + l->stripe_count && o < 4096; o++)
				if (cairn__smap_obj_len(l, o, size) != lens[o])
					ck_abort_msg(
						"object %llu at size %llu: %llu, want %llu",
						(unsigned long long)o, (unsigned long long)size,
						(unsigned long long)cairn__smap_obj_len(l, o, size),
						(unsigned long long)lens[o]);
		}
	}
	free(w);
}

END_TEST

START_TEST(test_bad_layouts)
{
	static const struct cairn_layout bad[] = {
		{ 0, 1, 4096 },
		{ 4096, 0, 4096 },
		{ 4096, 1, 0 },
		{ 4096, 1, 6000 },
		{ 4096, 65, 4096 },
		{ 4096, 1, 4096 * 65 },
		{ 1u << 20, 1, 65u << 20 },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(cairn__smap_check(&bad[i]), -EINVAL);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("striper_map");
	TCase *tc = tcase_create("map");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_extents_match_bytes, 0,
			    (int)(sizeof(g_layouts) / sizeof(g_layouts[0])));
	tcase_add_test(tc, test_bad_layouts);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
