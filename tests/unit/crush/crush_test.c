/* SPDX-License-Identifier: Apache-2.0 */
#include "crush/crush.h"
#include "crush/placement.h"
#include "crush/balancer.h"
#include "crush/edit.h"
#include "testlib.h"

#include <errno.h>
#include <limits.h>
#include <math.h>

static char *
slurp(const char *name)
{
	char path[512];
	FILE *f;
	char *buf = malloc(1 << 20);
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", CRUSH_GOLDEN_DIR, name);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static struct crush_map *
parse_ok(const char *text)
{
	struct crush_map *m = NULL;
	char err[256];
	int rc = crush_text_parse(text, &m, err, sizeof(err));

	ck_assert_msg(rc == 0, "parse failed: %s", err);
	return m;
}

static char *
print(const struct crush_map *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_int_eq(crush_text_print(m, f), 0);
	fclose(f);
	return buf;
}

START_TEST(test_ln_monotonic_and_bounds)
{
	uint64_t prev = crush_ln(0);

	ck_assert_uint_eq(crush_ln(0), 0);          /* log2(0 + 1) = 0 */
	ck_assert_uint_eq(crush_ln(1), 1ull << 44); /* log2(1 + 1) = 1 */
	for (unsigned x = 1; x <= 0xffff; x++) {
		uint64_t v = crush_ln(x);

		ck_assert_uint_ge(v, prev);
		prev = v;
	}
	/* log2(65536) = 16, in 2^44 fixed point, within the table's precision. */
	ck_assert_uint_le(prev, 16ull << 44);
	ck_assert_uint_ge(prev, (16ull << 44) - (1ull << 30));
	ck_assert_uint_eq(crush_ln(3), 2ull << 44);   /* log2(4) */
	ck_assert_uint_eq(crush_ln(255), 8ull << 44); /* log2(256) */
}

END_TEST

START_TEST(test_round_trip_stable)
{
	const char *maps[] = { "flat12.txt", "hosts4x6.txt", "racks2x3x4.txt" };

	for (size_t i = 0; i < CM_ARRAY_SIZE(maps); i++) {
		char *text = slurp(maps[i]);
		struct crush_map *m1 = parse_ok(text), *m2;
		char *p1 = print(m1), *p2;

		m2 = parse_ok(p1);
		p2 = print(m2);
		ck_assert_str_eq(p1, p2); /* text -> map -> text -> map -> text */
		/* Same mappings from the reprinted map. */
		uint32_t w[64];
		int r1[8], r2[8];
		char work[1024];

		for (int d = 0; d < 64; d++)
			w[d] = CRUSH_WEIGHT_ONE;
		for (int x = 0; x < 2000; x++) {
			int n1 = crush_do_rule(m1, 0, x, r1, 3, w, m1->max_devices, work);
			int n2 = crush_do_rule(m2, 0, x, r2, 3, w, m2->max_devices, work);

			ck_assert_int_eq(n1, n2);
			ck_assert_int_eq(memcmp(r1, r2, sizeof(int) * (size_t)n1), 0);
		}
		free(p1);
		free(p2);
		free(text);
		crush_map_destroy(m1);
		crush_map_destroy(m2);
	}
}

END_TEST

START_TEST(test_classes_and_shadow_trees)
{
	char *text = slurp("racks2x3x4.txt");
	struct crush_map *m = parse_ok(text);
	uint32_t w[24];
	int res[3];
	char work[256];
	int ssd = crush_class_by_name(m, "ssd");
	int32_t sh = crush_item_by_name(m, "default~ssd");

	ck_assert_int_ge(ssd, 0);
	ck_assert_int_eq(sh, -117); /* the id the text gave it (`id -117 class ssd`) */
	for (int d = 0; d < 24; d++)
		w[d] = CRUSH_WEIGHT_ONE;
	/* Rule 3 takes `default class ssd`: only ssd devices, one per host. */
	for (int x = 0; x < 3000; x++) {
		int n = crush_do_rule(m, 3, x, res, 3, w, 24, work);

		ck_assert_int_eq(n, 3);
		for (int i = 0; i < n; i++)
			ck_assert_int_eq(m->device_class[res[i]], ssd);
		ck_assert_int_ne(res[0] / 4, res[1] / 4);
		ck_assert_int_ne(res[1] / 4, res[2] / 4);
		ck_assert_int_ne(res[0] / 4, res[2] / 4);
	}
	free(text);
	crush_map_destroy(m);
}

END_TEST

START_TEST(test_indep_holes_and_out_devices)
{
	char *text = slurp("hosts4x6.txt");
	struct crush_map *m = parse_ok(text);
	uint32_t w[24];
	int res[6];
	char work[512];

	for (int d = 0; d < 24; d++)
		w[d] = CRUSH_WEIGHT_ONE;
	w[5] = 0; /* out */
	for (int x = 0; x < 2000; x++) {
		/* 4 hosts cannot hold 6 host-separated shards: positions 4 and 5 are holes. */
		int n = crush_do_rule(m, 1, x, res, 6, w, 24, work), holes = 0;

		ck_assert_int_eq(n, 6);
		for (int i = 0; i < n; i++) {
			holes += res[i] == CRUSH_ITEM_NONE;
			ck_assert_int_ne(res[i], 5);
		}
		ck_assert_int_eq(holes, 2);
	}
	ck_assert_int_eq(crush_do_rule(m, 42, 1, res, 3, w, 24, work), 0); /* no such rule */
	free(text);
	crush_map_destroy(m);
}

END_TEST

static void
parse_fails(const char *text, const char *want)
{
	struct crush_map *m = NULL;
	char err[256];

	ck_assert_int_eq(crush_text_parse(text, &m, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, want) != NULL, "error '%s' lacks '%s'", err, want);
	ck_assert_ptr_null(m);
}

START_TEST(test_parse_errors_name_line_and_column)
{
	parse_fails("tunable nonsense 3\n", "1:9: unknown tunable 'nonsense'");
	parse_fails("device 0 osd.0\ntype 0 osd\ntype 1 host\nhost h {\n\tid -1\n\titem osd.9\n}\n",
		    "6:7: item 'osd.9' is not defined (yet)");
	parse_fails("device 0 osd.0\ntype 0 osd\nhost h {\n", "3:1: unknown keyword 'host'");
	parse_fails("device 0 osd.0\ntype 0 osd\ntype 1 root\nroot r {\n\tid -1\n\talg straw9\n}\n",
		    "6:6: unknown bucket alg 'straw9'");
	parse_fails("device x osd.0\n", "1:8: 'x' is not an integer");
	parse_fails("type 0 osd\ntype 1 root\nroot r {\n\tid -1\n}\nrule q {\n\tid 0\n"
		    "\tstep take r\n\tstep chooseleaf firstn 0 type rack\n}\n",
		    "9:32: no type named 'rack'");
	parse_fails("device 0 osd.0\ntype 0 osd\ntype 1 root\nroot r {\n\tid -1\n\titem osd.0 "
		    "weight lots\n}\n",
		    "6:20: 'lots' is not a weight");
	parse_fails("type 0 osd\ntype 1 root\nroot r {\n\tid -1\n\talg list\n}\n",
		    "only straw2 buckets are supported");
	parse_fails("type 0 osd\ntype 1 root\nroot r {\n\tid -1\n", "is not closed");
	parse_fails("device 0 osd.0\ntype 0 osd\ntype 1 root\nosd odd {\n\tid -2\n}\n",
		    "4:5: bucket 'odd' has type osd, the type of devices");
}

END_TEST

/*
 * A bucket of the devices' type (refused by the parser and the editor, but
 * a map is only as good as its producer) is never taken for a device: the
 * mapper must not read a weight for a negative id (the mon fuzzer found it).
 */
START_TEST(test_bucket_of_device_type_is_not_a_device)
{
	static const char text[] =
		"device 0 osd.0\ndevice 1 osd.1\ntype 0 osd\ntype 1 host\ntype 2 root\n"
		"host odd {\n\tid -3\n\titem osd.1 weight 1.0\n}\n"
		"host h0 {\n\tid -2\n\titem osd.0 weight 1.0\n\titem odd weight 1.0\n}\n"
		"root default {\n\tid -1\n\titem h0 weight 2.0\n}\n"
		"rule r {\n\tid 0\n\ttype replicated\n\tstep take default\n"
		"\tstep chooseleaf firstn 0 type host\n\tstep emit\n}\n"
		"rule i {\n\tid 1\n\ttype erasure\n\tstep take default\n"
		"\tstep chooseleaf indep 0 type host\n\tstep emit\n}\n";
	struct crush_map *m = parse_ok(text);
	uint32_t w[2] = { CRUSH_WEIGHT_ONE, CRUSH_WEIGHT_ONE };
	int res[3], id;
	char work[64];

	ck_assert_int_eq(crush_edit_add_bucket(m, "odd2", "osd", "default", &id), -EINVAL);
	m->buckets[2]->type = 0; /* bucket -3, as a hand-made map could have it */
	for (int x = 0; x < 500; x++) {
		for (int r = 0; r < 2; r++) {
			int n = crush_do_rule(m, r, x, res, 3, w, 2, work);

			for (int i = 0; i < n; i++)
				ck_assert(res[i] == CRUSH_ITEM_NONE || (res[i] >= 0 && res[i] < 2));
		}
	}
	crush_map_destroy(m);
}

END_TEST

/*
 * `X~C` is the name of X's shadow for class C. A real item with such a name
 * sent finalize to a shadow that was never made and the printer past the
 * bucket array (the text fuzzer found it): now the parser and the editor
 * refuse '~' in a name, and finalize checks the shadow it resolves.
 */
START_TEST(test_shadow_names_are_kept)
{
	static const char head[] = "device 0 osd.0 class ssd\ntype 0 osd\ntype 1 root\n";
	char text[1024];
	struct crush_map *m;
	char err[256];

	snprintf(text, sizeof(text),
		 "%sroot default {\n\tid -1\n\tid -7 class ssd\n\titem osd.0 weight 1.0\n}\n"
		 "root default~ssd {\n\tid -2\n\titem osd.0 weight 1.0\n}\n"
		 "rule r {\n\tid 0\n\ttype replicated\n\tstep take default class ssd\n"
		 "\tstep emit\n}\n",
		 head);
	parse_fails(text, "9:6: bucket name 'default~ssd': '~' is kept for class shadow trees");
	parse_fails("device 0 osd~ssd\n", "1:10: device name 'osd~ssd'");

	/* The shadow's own id given twice: once for the class, once for a real bucket. */
	snprintf(text, sizeof(text),
		 "%sroot other {\n\tid -7\n}\n"
		 "root default {\n\tid -1\n\tid -7 class ssd\n\titem osd.0 weight 1.0\n}\n"
		 "rule r {\n\tid 0\n\ttype replicated\n\tstep take default class ssd\n"
		 "\tstep emit\n}\n",
		 head);
	ck_assert_int_eq(crush_text_parse(text, &m, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "shadow id -7 of default~ssd is taken by other"), "%s", err);

	m = parse_ok(head);
	ck_assert_int_eq(crush_edit_set_device(m, 1, "osd~ssd", NULL), -EINVAL);
	crush_map_destroy(m);
}

END_TEST

START_TEST(test_weights_truncate_like_crushtool)
{
	struct crush_map *m = parse_ok("device 0 osd.0\ndevice 1 osd.1\ndevice 2 osd.2\ntype 0 "
				       "osd\ntype 1 root\nroot r {\n\tid -1\n\titem osd.0 weight "
				       "0.1\n\titem osd.1 weight 0.33333\n\titem osd.2 weight "
				       "0.7\n}\n");
	const struct crush_bucket *b = m->buckets[0];

	/* The values crushtool --dump shows for the same text. */
	ck_assert_uint_eq(b->item_weights[0], 6553);
	ck_assert_uint_eq(b->item_weights[1], 21845);
	ck_assert_uint_eq(b->item_weights[2], 45875);
	ck_assert_uint_eq(b->weight, 6553 + 21845 + 45875);
	crush_map_destroy(m);
}

END_TEST

START_TEST(test_stable_mod_and_mask)
{
	ck_assert_uint_eq(crush_pg_mask(192), 255);
	ck_assert_uint_eq(crush_pg_mask(256), 255);
	ck_assert_uint_eq(crush_pg_mask(257), 511);
	ck_assert_uint_eq(crush_pg_mask(1), 0);
	/* Below pg_num: kept; above: folded onto the lower half. */
	ck_assert_uint_eq(crush_stable_mod(0x9e, 192, 255), 0x9e);
	ck_assert_uint_eq(crush_stable_mod(0xc5, 192, 255), 0x45);
	/* Growing pg_num from 128 to 192 moves only seeds that land in [128, 192). */
	for (uint32_t x = 0; x < 100000; x += 7) {
		uint32_t a = crush_stable_mod(x, 128, 127), b = crush_stable_mod(x, 192, 255);

		ck_assert(a == b || (b >= 128 && b < 192 && (b & 127) == a));
	}
}

END_TEST

/*
 * crush_pg_cover: for every pair of PG counts (split or merge, powers of two
 * or not) an object's PG now is among the cover of its PG then, and a split
 * cover holds exactly the PGs whose objects came from it.
 */
START_TEST(test_pg_cover)
{
	uint32_t out[300];

	static bool member[70][140];

	for (uint32_t then = 1; then <= 70; then++) {
		for (uint32_t now = 1; now <= 140; now += (now < 20 ? 1 : 3)) {
			uint32_t mt = crush_pg_mask(then), mn = crush_pg_mask(now);

			memset(member, 0, sizeof(member));
			for (uint32_t a = 0; a < then; a++) {
				size_t n = crush_pg_cover(then, a, now, out, 300);

				ck_assert_uint_ge(n, 1);
				for (size_t i = 0; i < n; i++)
					member[a][out[i]] = true;
			}
			/* (the masks are below 256: 512 seeds are every case) */
			for (uint32_t ps = 0; ps < 512; ps++) {
				uint32_t a = crush_stable_mod(ps, then, mt),
					 b = crush_stable_mod(ps, now, mn);

				ck_assert_msg(member[a][b],
					      "then %u now %u ps %u: pg %u not in the cover of %u",
					      then, now, ps, b, a);
			}
		}
	}
	/* 8 -> 32: PG 3's children are 3, 11, 19, 27; 32 -> 8: PG 27 went into 3. */
	ck_assert_uint_eq(crush_pg_cover(8, 3, 32, out, 300), 4);
	ck_assert_uint_eq(out[0], 3);
	ck_assert_uint_eq(out[1], 11);
	ck_assert_uint_eq(out[3], 27);
	ck_assert_uint_eq(crush_pg_cover(32, 27, 8, out, 300), 1);
	ck_assert_uint_eq(out[0], 3);
	ck_assert_uint_eq(crush_pg_cover(8, 8, 32, out, 300), 0);
	/* More than max: the count, max filled. */
	ck_assert_uint_eq(crush_pg_cover(1, 0, 64, out, 2), 64);
}

END_TEST

struct place_env {
	struct crush_map *m;
	struct crush_pool pool;
	struct crush_osd_state osds[24];
	uint32_t w[24];
	char work[1024];
};

static void
place_env_init(struct place_env *e, int type, unsigned size, int rule)
{
	char *text = slurp("hosts4x6.txt");

	e->m = parse_ok(text);
	free(text);
	e->pool = (struct crush_pool){ .id = 1,
				       .type = type,
				       .size = size,
				       .pg_num = 64,
				       .pgp_num = 64,
				       .rule = rule,
				       .hashpspool = true };
	for (int i = 0; i < 24; i++)
		e->osds[i] = (struct crush_osd_state){ .exists = true,
						       .up = true,
						       .in_weight = CRUSH_WEIGHT_ONE };
}

static int
place(struct place_env *e, uint32_t seed, const struct crush_upmap_item *u, size_t nu, int32_t *up,
      int *primary)
{
	crush_osd_weights(e->osds, 24, e->w);
	return crush_pg_to_up(e->m, &e->pool, seed, e->osds, e->w, 24, u, nu, up, primary, e->work);
}

START_TEST(test_upmap_items)
{
	struct place_env e;
	int32_t base[3], up[3];
	int primary, n;

	place_env_init(&e, CRUSH_POOL_REPLICATED, 3, 0);
	n = place(&e, 7, NULL, 0, base, &primary);
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(primary, base[0]);
	/* Move the second replica to an OSD on the host no replica uses. */
	int used = (1 << (base[0] / 6)) | (1 << (base[1] / 6)) | (1 << (base[2] / 6)), free_host;

	for (free_host = 0; used & (1 << free_host); free_host++)
		;
	struct crush_upmap_item u = {
		.pool = 1, .seed = 7, .from = base[1], .to = free_host * 6 + 2
	};

	n = place(&e, 7, &u, 1, up, &primary);
	ck_assert_int_eq(up[0], base[0]);
	ck_assert_int_eq(up[1], free_host * 6 + 2);
	ck_assert_int_eq(up[2], base[2]);
	/* Another PG, another pool: untouched. */
	u.seed = 8;
	place(&e, 7, &u, 1, up, &primary);
	ck_assert_int_eq(memcmp(up, base, sizeof(base)), 0);
	/* A target already in the set, or marked out, is ignored. */
	u = (struct crush_upmap_item){ .pool = 1, .seed = 7, .from = base[1], .to = base[2] };
	place(&e, 7, &u, 1, up, &primary);
	ck_assert_int_eq(memcmp(up, base, sizeof(base)), 0);
	u.to = free_host * 6 + 2;
	e.osds[u.to].in_weight = 0;
	place(&e, 7, &u, 1, up, &primary);
	ck_assert_int_eq(memcmp(up, base, sizeof(base)), 0);
	crush_map_destroy(e.m);
}

END_TEST

START_TEST(test_down_osds_replicated_and_ec)
{
	struct place_env e;
	int32_t base[6], up[6];
	int primary, n;

	/* Replicated: a down primary leaves the set, the next one leads. */
	place_env_init(&e, CRUSH_POOL_REPLICATED, 3, 0);
	place(&e, 11, NULL, 0, base, &primary);
	e.osds[base[0]].up = false;
	n = place(&e, 11, NULL, 0, up, &primary);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(up[0], base[1]);
	ck_assert_int_eq(up[1], base[2]);
	ck_assert_int_eq(primary, base[1]);
	crush_map_destroy(e.m);

	/* EC (4 per host-separated position): a down shard is a hole in place. */
	place_env_init(&e, CRUSH_POOL_ERASURE, 4, 1);
	n = place(&e, 11, NULL, 0, base, &primary);
	ck_assert_int_eq(n, 4);
	e.osds[base[1]].up = false;
	n = place(&e, 11, NULL, 0, up, &primary);
	ck_assert_int_eq(n, 4);
	ck_assert_int_eq(up[0], base[0]);
	ck_assert_int_eq(up[1], CRUSH_ITEM_NONE);
	ck_assert_int_eq(up[2], base[2]);
	ck_assert_int_eq(up[3], base[3]);
	ck_assert_int_eq(primary, base[0]);
	/* An OSD that does not exist is a hole too, decided before upmaps. */
	e.osds[base[1]].up = true;
	e.osds[base[2]].exists = false;
	n = place(&e, 11, NULL, 0, up, &primary);
	ck_assert_int_ne(up[2], base[2]);
	crush_map_destroy(e.m);
}

END_TEST

static uint32_t
obj_pg(const struct crush_pool *p, const char *nspace, const char *name)
{
	uint32_t pg = UINT32_MAX;

	ck_assert_int_eq(crush_object_to_pg(p, nspace, name, &pg), 0);
	return pg;
}

START_TEST(test_object_namespace_changes_pg)
{
	struct crush_pool p = { .id = 1, .pg_num = 4096, .pgp_num = 4096, .size = 3 };
	int same = 0;

	for (int i = 0; i < 200; i++) {
		char name[32];

		snprintf(name, sizeof(name), "obj-%d", i);
		same += obj_pg(&p, NULL, name) == obj_pg(&p, "ns1", name);
		ck_assert_uint_eq(obj_pg(&p, "", name), obj_pg(&p, NULL, name));
	}
	ck_assert_int_lt(same, 5); /* a namespace is part of the hashed key */
	{
		/* past the stack buffer (512): the heap path gives the same answer every time */
		char big[1100];

		memset(big, 'k', sizeof(big) - 1);
		big[sizeof(big) - 1] = 0;
		ck_assert_uint_eq(obj_pg(&p, "ns1", big), obj_pg(&p, "ns1", big));
		ck_assert_uint_lt(obj_pg(&p, "ns1", big), p.pg_num);
	}
}

END_TEST

static const char g_three_hosts[] =
	"device 0 osd.0\ndevice 1 osd.1\ndevice 2 osd.2\ndevice 3 osd.3\n"
	"device 4 osd.4\ndevice 5 osd.5\ndevice 6 osd.6\ndevice 7 osd.7\n"
	"device 8 osd.8\ndevice 9 osd.9\ndevice 10 osd.10\ndevice 11 osd.11\n"
	"type 0 osd\ntype 1 host\ntype 11 root\n"
	"host a {\n\tid -2\n\talg straw2\n\thash 0\n\titem osd.0 weight 1\n"
	"\titem osd.1 weight 2\n\titem osd.2 weight 0.5\n\titem osd.3 weight 1.5\n}\n"
	"host b {\n\tid -3\n\talg straw2\n\thash 0\n\titem osd.4 weight 3\n"
	"\titem osd.5 weight 1\n\titem osd.6 weight 1\n\titem osd.7 weight 1\n}\n"
	"host c {\n\tid -4\n\talg straw2\n\thash 0\n\titem osd.8 weight 0.75\n"
	"\titem osd.9 weight 0.75\n\titem osd.10 weight 2\n\titem osd.11 weight 4\n}\n"
	"root default {\n\tid -1\n\talg straw2\n\thash 0\n\titem a\n\titem b\n\titem c\n}\n"
	"rule r {\n\tid 0\n\ttype replicated\n\tstep take default\n"
	"\tstep chooseleaf firstn 0 type host\n\tstep emit\n}\n";

/* Recompute every PG with the plan's items: the counts must be the plan's. */
static void
verify_plan(const struct crush_map *m, const struct crush_pool *p,
	    const struct crush_osd_state *osds, int max_osd, const struct crush_balance_plan *pl,
	    int domain_div, int outer_div, int per_outer)
{
	uint32_t w[64];
	int count[64] = { 0 }, primary;
	int32_t up[16];
	char work[1024];

	crush_osd_weights(osds, max_osd, w);
	for (uint32_t s = 0; s < p->pg_num; s++) {
		int n = crush_pg_to_up(m, p, s, osds, w, max_osd, pl->items, pl->nitems, up,
				       &primary, work);

		ck_assert_int_eq(n, (int)p->size);
		for (int i = 0; i < n; i++) {
			count[up[i]]++;
			for (int j = 0; j < i; j++)
				ck_assert_msg(up[i] / domain_div != up[j] / domain_div,
					      "pg %u has two OSDs in one failure domain", s);
		}
		if (outer_div) {
			for (int i = 0; i < n; i++) {
				int same = 0;

				for (int j = 0; j < n; j++)
					same += up[j] / outer_div == up[i] / outer_div;
				ck_assert_int_eq(same, per_outer);
			}
		}
	}
	for (int i = 0; i < max_osd; i++) {
		ck_assert_int_eq(count[i], pl->after[i]);
		ck_assert_msg(fabs(pl->after[i] - pl->target[i]) <= 1.0 + 1e-9,
			      "osd.%d has %d PGs, target %.2f", i, pl->after[i], pl->target[i]);
	}
}

START_TEST(test_balance_three_uneven_hosts)
{
	struct crush_map *m = parse_ok(g_three_hosts);
	struct crush_pool p = { .id = 3,
				.type = CRUSH_POOL_REPLICATED,
				.size = 3,
				.pg_num = 256,
				.pgp_num = 256,
				.rule = 0,
				.hashpspool = true };
	struct crush_osd_state osds[12];
	struct crush_balance_plan pl, again;
	double sum = 0;

	for (int i = 0; i < 12; i++)
		osds[i] = (struct crush_osd_state){ true, true, CRUSH_WEIGHT_ONE };
	ck_assert_int_eq(crush_balance(m, &p, osds, 12, NULL, 0, NULL, 0, &pl), 0);
	/* Each host holds one replica of every PG, whatever its weight. */
	for (int i = 0; i < 4; i++)
		sum += pl.target[i];
	ck_assert(fabs(sum - 256) < 1e-6);
	ck_assert(pl.max_dev_before > 1.0);
	ck_assert_uint_gt(pl.moves, 0);
	ck_assert(pl.max_dev_after <= 1.0 + 1e-9);
	verify_plan(m, &p, osds, 12, &pl, 4, 0, 0);
	/* Balanced already: a second pass moves nothing. */
	ck_assert_int_eq(crush_balance(m, &p, osds, 12, pl.items, pl.nitems, NULL, 0, &again), 0);
	ck_assert_uint_eq(again.moves, 0);
	ck_assert_uint_eq(again.nitems, pl.nitems);
	crush_balance_plan_free(&again);
	/* An OSD marked out gets no target; the rest rebalance around it. */
	osds[11].in_weight = 0;
	crush_balance_plan_free(&pl);
	ck_assert_int_eq(crush_balance(m, &p, osds, 12, NULL, 0, NULL, 0, &pl), 0);
	ck_assert(pl.target[11] == 0);
	ck_assert_int_eq(pl.after[11], 0);
	verify_plan(m, &p, osds, 12, &pl, 4, 0, 0);
	crush_balance_plan_free(&pl);
	crush_map_destroy(m);
}

END_TEST

START_TEST(test_balance_two_step_rule_and_bytes)
{
	char *text = slurp("racks2x3x4.txt");
	struct crush_map *m = parse_ok(text);
	struct crush_pool p = { .id = 2,
				.type = CRUSH_POOL_REPLICATED,
				.size = 4,
				.pg_num = 128,
				.pgp_num = 128,
				.rule = 1,
				.hashpspool = true };
	struct crush_osd_state osds[24];
	struct crush_balance_plan pl;
	uint64_t bytes[128];

	for (int i = 0; i < 24; i++)
		osds[i] = (struct crush_osd_state){ true, true, CRUSH_WEIGHT_ONE };
	for (int i = 0; i < 128; i++)
		bytes[i] = 1000000 + (uint64_t)(i % 7) * 1000;
	ck_assert_int_eq(crush_balance(m, &p, osds, 24, NULL, 0, bytes, 0, &pl), 0);
	ck_assert(pl.max_dev_after <= 1.0 + 1e-9);
	ck_assert(pl.bytes_dev_after < pl.bytes_dev_before);
	/* Hosts are 4 OSDs wide, racks 12: two replicas per rack, hosts distinct. */
	verify_plan(m, &p, osds, 24, &pl, 4, 12, 2);
	crush_balance_plan_free(&pl);
	free(text);
	crush_map_destroy(m);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("crush");
	TCase *tc = tcase_create("crush");

	tcase_add_test(tc, test_ln_monotonic_and_bounds);
	tcase_add_test(tc, test_round_trip_stable);
	tcase_add_test(tc, test_bucket_of_device_type_is_not_a_device);
	tcase_add_test(tc, test_classes_and_shadow_trees);
	tcase_add_test(tc, test_indep_holes_and_out_devices);
	tcase_add_test(tc, test_parse_errors_name_line_and_column);
	tcase_add_test(tc, test_shadow_names_are_kept);
	tcase_add_test(tc, test_weights_truncate_like_crushtool);
	tcase_add_test(tc, test_stable_mod_and_mask);
	tcase_add_test(tc, test_pg_cover);
	tcase_add_test(tc, test_upmap_items);
	tcase_add_test(tc, test_down_osds_replicated_and_ec);
	tcase_add_test(tc, test_object_namespace_changes_pg);
	tcase_add_test(tc, test_balance_three_uneven_hosts);
	tcase_add_test(tc, test_balance_two_step_rule_and_bytes);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
