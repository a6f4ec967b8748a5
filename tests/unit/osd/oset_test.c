/* SPDX-License-Identifier: Apache-2.0 */
/* The object-name set of recovery (osd/daemon/oset.c) against a plain model. */
#include "../../../osd/src/util/oset.h"
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAMES 5000

START_TEST(test_put_get_del)
{
	struct osd_oset s = { 0 };
	static uint32_t model[NAMES]; /* 0: absent, else value + 1 */
	char name[32];
	uint64_t x = 1;

	memset(model, 0, sizeof(model));
	for (int round = 0; round < 60000; round++) {
		unsigned i, op;
		uint32_t *v;

		x = cm_test_mix(x);
		i = (unsigned)(x % NAMES);
		op = (unsigned)(x >> 32) % 3;
		snprintf(name, sizeof(name), "obj-%u", i);
		if (op == 0) {
			ck_assert_int_eq(osd_oset_put(&s, name, (uint32_t)round), 0);
			model[i] = (uint32_t)round + 1;
		} else if (op == 1) {
			ck_assert_int_eq(osd_oset_del(&s, name), model[i] != 0);
			model[i] = 0;
		} else {
			v = osd_oset_get(&s, name);
			if (model[i])
				ck_assert(v && *v == model[i] - 1);
			else
				ck_assert(v == NULL);
		}
	}
	{
		char **names = NULL;
		size_t n = 0, want = 0;

		for (unsigned i = 0; i < NAMES; i++)
			want += model[i] != 0;
		ck_assert_uint_eq(s.n, want);
		ck_assert_int_eq(osd_oset_names(&s, &names, &n), 0);
		ck_assert_uint_eq(n, want);
		for (size_t k = 0; k < n; k++) {
			unsigned i;

			ck_assert_int_eq(sscanf(names[k], "obj-%u", &i), 1);
			ck_assert_uint_ne(model[i], 0);
		}
		free(names);
	}
	osd_oset_clear(&s);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_ptr_null(osd_oset_get(&s, "obj-1"));
	ck_assert_int_eq(osd_oset_del(&s, "obj-1"), 0);
}

END_TEST

START_TEST(test_empty_and_long_names)
{
	struct osd_oset s = { 0 };
	char big[1001];
	char **names = NULL;
	size_t n = 1;

	ck_assert_int_eq(osd_oset_names(&s, &names, &n), 0);
	ck_assert_uint_eq(n, 0);
	free(names);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	ck_assert_int_eq(osd_oset_put(&s, big, 7), 0);
	big[999] = 'y'; /* differs in the last byte only */
	ck_assert_ptr_null(osd_oset_get(&s, big));
	big[999] = 'x';
	ck_assert_uint_eq(*osd_oset_get(&s, big), 7);
	osd_oset_clear(&s);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("oset");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_put_get_del);
	tcase_add_test(tc, test_empty_and_long_names);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
