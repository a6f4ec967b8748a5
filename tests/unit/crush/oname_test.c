/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Store names of (namespace, locator key, name): the codec's limits and
 * round trip, placement by key, and listing one namespace by the jumps of
 * crush_oname_list_start/step over a sorted store, checked against the
 * namespace's exact set.
 */
#include "crush/oname.h"
#include "testlib.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static char *
rep(char c, size_t n)
{
	char *s = malloc(n + 1);

	ck_assert_ptr_nonnull(s);
	memset(s, c, n);
	s[n] = 0;
	return s;
}

static void
round_trip(const char *ns, const char *key, const char *name, const char *want)
{
	char out[CRUSH_ONAME_MAX + 1];
	struct crush_oname o;
	int n = crush_oname_encode(ns, key, name, out, sizeof(out));

	ck_assert_int_ge(n, 1);
	ck_assert_int_eq((size_t)n, strlen(out));
	if (want)
		ck_assert_str_eq(out, want);
	ck_assert_int_eq(crush_oname_decode(out, &o), 0);
	ck_assert_uint_eq(o.nslen, ns ? strlen(ns) : 0);
	ck_assert(!memcmp(o.nspace, ns ? ns : "", o.nslen));
	ck_assert_uint_eq(o.keylen, key ? strlen(key) : 0);
	ck_assert(!memcmp(o.key, key ? key : "", o.keylen));
	ck_assert_uint_eq(o.namelen, strlen(name));
	ck_assert(!memcmp(o.name, name, o.namelen));
}

START_TEST(test_round_trip)
{
	char *ns = rep('n', CRUSH_ONAME_NS_MAX), *key = rep('k', CRUSH_ONAME_KEY_MAX),
	     *name = rep('o', CRUSH_ONAME_NAME_MAX);

	round_trip(NULL, NULL, "obj", "obj");
	round_trip("", "", "obj", "obj"); /* default namespace, no key: bare */
	round_trip("ns", NULL, "obj", "\x02ns\x1f\x1fobj");
	round_trip(NULL, "k", "obj", "\x02\x1fk\x1fobj");
	round_trip("ns", "k",
		   "a\x1f"
		   "b",
		   "\x02ns\x1fk\x1f"
		   "a\x1f"
		   "b");                 /* \x1f in a name */
	round_trip(ns, key, name, NULL); /* every limit at once */
	free(ns);
	free(key);
	free(name);
}

END_TEST

START_TEST(test_limits_and_errors)
{
	char out[CRUSH_ONAME_MAX + 1], small[6];
	char *ns = rep('n', CRUSH_ONAME_NS_MAX + 1), *key = rep('k', CRUSH_ONAME_KEY_MAX + 1),
	     *name = rep('o', CRUSH_ONAME_NAME_MAX + 1);
	struct crush_oname o;

	ck_assert_int_eq(crush_oname_encode(NULL, NULL, name, out, sizeof(out)), -ENAMETOOLONG);
	ck_assert_int_eq(crush_oname_encode(ns, NULL, "a", out, sizeof(out)), -ENAMETOOLONG);
	ck_assert_int_eq(crush_oname_encode(NULL, key, "a", out, sizeof(out)), -ENAMETOOLONG);
	ck_assert_int_eq(crush_oname_encode(NULL, NULL, "", out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(crush_oname_encode(NULL, NULL, NULL, out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(crush_oname_encode(NULL, NULL, "\x01meta", out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(crush_oname_encode("ns", NULL, "\x02x", out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(crush_oname_encode("a\x1f"
					    "b",
					    NULL, "x", out, sizeof(out)),
			 -EINVAL);
	ck_assert_int_eq(crush_oname_encode(NULL, "a\x1f", "x", out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(crush_oname_encode("ns", NULL, "x", small, sizeof(small)), -ENOBUFS);
	ck_assert_int_eq(crush_oname_check(NULL, NULL, name), -ENAMETOOLONG);
	ck_assert_int_eq(crush_oname_check("ok", "ok", "ok"), 0);
	/* Store names that no encode makes. */
	ck_assert_int_eq(crush_oname_decode("", &o), -EINVAL);
	ck_assert_int_eq(crush_oname_decode("\x01pgmeta", &o), -EINVAL);
	ck_assert_int_eq(crush_oname_decode("\x02ns", &o), -EINVAL);
	ck_assert_int_eq(crush_oname_decode("\x02ns\x1fkey", &o), -EINVAL);
	ck_assert_int_eq(crush_oname_decode("\x02ns\x1fkey\x1f", &o), -EINVAL); /* empty name */
	ck_assert_int_eq(crush_oname_decode("\x02\x1f\x1fx", &o), -EINVAL);     /* must be bare */
	ck_assert_int_eq(crush_oname_decode("\x02ns\x1f\x1f\x02x", &o), -EINVAL);
	ck_assert_int_eq(crush_oname_decode(name, &o), -ENAMETOOLONG);
	free(ns);
	free(key);
	free(name);
}

END_TEST

START_TEST(test_placement)
{
	struct crush_pool p = { .id = 1, .pg_num = 64, .pgp_num = 64 };
	char a[CRUSH_ONAME_MAX + 1], b[CRUSH_ONAME_MAX + 1];
	uint32_t pa, pb, pc;
	unsigned differ = 0;

	/* Bare names place as they always did. */
	ck_assert_int_eq(crush_oname_to_pg(&p, "obj", &pa), 0);
	ck_assert_int_eq(crush_object_to_pg(&p, NULL, "obj", &pb), 0);
	ck_assert_uint_eq(pa, pb);
	/* A namespace hashes "ns\037name", as crush_object_to_pg does. */
	crush_oname_encode("ns", NULL, "obj", a, sizeof(a));
	ck_assert_int_eq(crush_oname_to_pg(&p, a, &pa), 0);
	ck_assert_int_eq(crush_object_to_pg(&p, "ns", "obj", &pb), 0);
	ck_assert_uint_eq(pa, pb);
	for (int i = 0; i < 200; i++) {
		char n1[32], n2[32];

		snprintf(n1, sizeof(n1), "x%d", i);
		snprintf(n2, sizeof(n2), "y%d", i * 7);
		/* The key wins over the name: one key, one PG. */
		crush_oname_encode("ns", "shared", n1, a, sizeof(a));
		crush_oname_encode("ns", "shared", n2, b, sizeof(b));
		ck_assert_int_eq(crush_oname_to_pg(&p, a, &pa), 0);
		ck_assert_int_eq(crush_oname_to_pg(&p, b, &pb), 0);
		ck_assert_uint_eq(pa, pb);
		/* ... and it is the key's own PG (as if it were the name). */
		crush_oname_encode("ns", NULL, "shared", b, sizeof(b));
		ck_assert_int_eq(crush_oname_to_pg(&p, b, &pc), 0);
		ck_assert_uint_eq(pa, pc);
		/* A namespace moves objects (most of them). */
		crush_oname_encode("other", NULL, n1, a, sizeof(a));
		crush_oname_encode("ns", NULL, n1, b, sizeof(b));
		crush_oname_to_pg(&p, a, &pa);
		crush_oname_to_pg(&p, b, &pb);
		differ += pa != pb;
	}
	ck_assert_uint_gt(differ, 150);
	ck_assert_int_eq(crush_oname_to_pg(&p, "\x01pgmeta", &pa), -EINVAL);
}

END_TEST

static int
str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The first index of sorted names[] greater than after. */
static size_t
upper(char **names, size_t n, const char *after)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (strcmp(names[mid], after) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * List nspace from a sorted store as the OSD does: pages of at most page
 * names read after the cursor, each TAKE kept, each SKIP resumed from its
 * jump, END stops; the next page starts after the last name taken.
 * \return names taken (in *got), and how many store names were read.
 */
static size_t
list_ns(char **names, size_t n, const char *nspace, unsigned page, char ***got, size_t *reads)
{
	char *cur = calloc(1, CRUSH_ONAME_MAX + 2), *from = malloc(CRUSH_ONAME_MAX + 2),
	     *res = malloc(CRUSH_ONAME_MAX + 2);
	size_t ng = 0;
	bool end = false;

	*got = calloc(n + 1, sizeof(**got));
	*reads = 0;
	while (!end) {
		unsigned took = 0;

		crush_oname_list_start(nspace, cur, from);
		for (size_t i = upper(names, n, from); took < page; i = upper(names, n, from)) {
			if (i == n) {
				end = true;
				break;
			}
			++*reads;
			ck_assert_uint_lt(*reads, 10 * n + 100); /* always progresses */
			switch (crush_oname_list_step(nspace, names[i], res)) {
			case CRUSH_ONAME_TAKE:
				(*got)[ng++] = names[i];
				took++;
				memcpy(from, names[i], strlen(names[i]) + 1);
				memcpy(cur, names[i], strlen(names[i]) + 1);
				break;
			case CRUSH_ONAME_SKIP:
				ck_assert_int_ge(strcmp(res, names[i]), 0);
				memcpy(from, res, strlen(res) + 1);
				break;
			default:
				end = true;
				break;
			}
			if (end)
				break;
		}
	}
	free(cur);
	free(from);
	free(res);
	return ng;
}

START_TEST(test_listing_by_namespace)
{
	static const char *const nss[] = { "",   "ns",    "ns2",  "n",     "ns\x05x",
					   "nt", "\x01y", "\xff", "ns\x1e" };
	static const char *const keys[] = { "", "", "", "k", "key2" };

	enum { NNS = sizeof(nss) / sizeof(nss[0]), PER = 40 };

	char **names = calloc(NNS * PER + 2, sizeof(*names));
	size_t n = 0;

	for (size_t i = 0; i < NNS; i++)
		for (int j = 0; j < PER; j++) {
			char nm[32], out[CRUSH_ONAME_MAX + 1];
			const char *key = keys[j % 5];

			snprintf(nm, sizeof(nm), "%c%02d", j % 3 ? 'o' : '\x03', j);
			ck_assert_int_ge(crush_oname_encode(nss[i], key, nm, out, sizeof(out)), 1);
			names[n++] = strdup(out);
		}
	names[n++] = strdup("\x01pgmeta"); /* the OSD's own */
	names[n++] = strdup("\x01r1.2");
	qsort(names, n, sizeof(*names), str_cmp);
	for (size_t i = 0; i <= NNS; i++) {
		const char *ns = i < NNS ? nss[i] : NULL; /* NULL: every namespace */

		for (unsigned page = 1; page <= 64; page *= 4) {
			char **got;
			size_t reads, ng = list_ns(names, n, ns, page, &got, &reads), want = 0;

			for (size_t k = 0; k < n; k++) {
				struct crush_oname o;
				bool in = crush_oname_decode(names[k], &o) == 0 &&
					  (!ns || (o.nslen == strlen(ns) &&
						   !memcmp(o.nspace, ns, o.nslen)));

				if (!in)
					continue;
				ck_assert_uint_lt(want, ng);
				ck_assert_str_eq(got[want], names[k]); /* in order, each once */
				want++;
			}
			ck_assert_uint_eq(ng, want);
			ck_assert_uint_eq(want, ns ? (size_t)PER : (size_t)NNS * PER);
			/* Other namespaces are jumped over, not read (but "ns\x1e",
			 * which sorts right below "ns"'s range, and a few more). */
			if (ns)
				ck_assert_uint_le(reads, want + PER + 8);
			free(got);
		}
	}
	for (size_t k = 0; k < n; k++)
		free(names[k]);
	free(names);
}

END_TEST

static Suite *
oname_suite(void)
{
	Suite *s = suite_create("oname");
	TCase *tc = tcase_create("oname");

	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_limits_and_errors);
	tcase_add_test(tc, test_placement);
	tcase_add_test(tc, test_listing_by_namespace);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cm_test_main(oname_suite());
}
