/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PG merge, the leader's decisions (mon/merge.h) on virtual time: a step
 * starts only when every PG is clean in the current map, commits only when
 * every source and target reported ready since the step began (with their
 * versions recorded), gives up after MON_MERGE_PENDING_MS, and 64 -> 16 goes
 * in two steps (32 then 16) whose sources go to s - half.
 */
#include "mon/merge.h"
#include "mon/osdmap.h"
#include "testlib.h"

#define MS UINT64_C(1000000)

static Cairn__Map__OsdMap *
pool_map(unsigned pg_num, int64_t *id)
{
	Cairn__Map__OsdMap *m;
	struct mon_pool_spec s = { .name = "p", .pg_num = pg_num };
	char err[MON_ERRLEN];

	ck_assert_int_eq(mon_map_initial("fsid-1", &m), 0);
	m->epoch = 10;
	ck_assert_msg(mon_pool_create(m, &s, id, err) == 0, "%s", err);
	return m;
}

/* Every PG of the pool reported at epoch: clean, and ready (with lu = seed + 100) if asked. */
static struct mon_merge_rep *
reports(int64_t pool, unsigned pg_num, uint64_t epoch, bool ready, size_t *n)
{
	struct mon_merge_rep *r = calloc(pg_num, sizeof(*r));

	ck_assert_ptr_nonnull(r);
	for (unsigned s = 0; s < pg_num; s++)
		r[s] = (struct mon_merge_rep){ .pool = pool,
					       .seed = s,
					       .epoch = epoch,
					       .clean = true,
					       .ready = ready,
					       .lu_epoch = 3,
					       .lu_seq = s + 100 };
	*n = pg_num;
	return r;
}

/* Decide and apply on m; the map's epoch moves on as mon_map_update would. */
static size_t
step(Cairn__Map__OsdMap *m, const struct mon_merge_rep *r, size_t n, uint64_t now,
     enum mon_merge_kind *kind)
{
	struct mon_merge_edit *e;
	size_t ne;
	char err[MON_ERRLEN];

	ck_assert_int_eq(mon_merge_decide(m, r, n, now, &e, &ne), 0);
	if (ne) {
		*kind = e[0].kind;
		ck_assert_int_eq(mon_merge_apply(e, ne, m, now), (int)ne);
		m->epoch++;
		ck_assert_msg(mon_map_validate(m, err) == 0, "%s", err);
	}
	mon_merge_edits_free(e, ne);
	return ne;
}

START_TEST(test_half)
{
	ck_assert_uint_eq(mon_merge_half(1), 0);
	ck_assert_uint_eq(mon_merge_half(2), 1);
	ck_assert_uint_eq(mon_merge_half(33), 32);
	ck_assert_uint_eq(mon_merge_half(64), 32);
	ck_assert_uint_eq(mon_merge_half(65), 64);
	/* A step's sources land in s - half, which stable_mod agrees with. */
	for (uint32_t from = 2; from <= 300; from++) {
		uint32_t half = mon_merge_half(from);

		for (uint32_t to = half; to < from; to++)
			for (uint32_t s = to; s < from; s++)
				ck_assert_uint_eq(crush_stable_mod(s, to, crush_pg_mask(to)),
						  s - half);
	}
}

END_TEST

START_TEST(test_steps)
{
	int64_t id;
	Cairn__Map__OsdMap *m = pool_map(64, &id);
	Cairn__Map__Pool *p = mon_pool_find_id(m, id);
	char err[MON_ERRLEN];
	enum mon_merge_kind k = 0;
	struct mon_merge_rep *r;
	size_t n;
	uint64_t now = 1000 * MS;

	ck_assert_int_eq(mon_pool_set(m, "p", "pg_num", "16", err), 0);
	ck_assert_uint_eq(p->pgp_num, 16);
	/* Not every PG clean, or reports from an older map: nothing starts. */
	r = reports(id, 64, m->epoch, false, &n);
	r[5].clean = false;
	ck_assert_uint_eq(step(m, r, n, now, &k), 0);
	r[5].clean = true;
	r[6].epoch = m->epoch - 1;
	ck_assert_uint_eq(step(m, r, n, now, &k), 0);
	free(r);
	/* All clean: the first step goes to 32. */
	r = reports(id, 64, m->epoch, false, &n);
	ck_assert_uint_eq(step(m, r, n, now, &k), 1);
	free(r);
	p = mon_pool_find_id(m, id);
	ck_assert_int_eq(k, MON_MERGE_START);
	ck_assert_uint_eq(p->pg_num_pending, 32);
	ck_assert_uint_eq(p->pending_epoch, m->epoch);
	ck_assert_uint_eq(p->pg_num, 64);
	/* Ready reports from before the step began do not count. */
	r = reports(id, 64, m->epoch - 1, true, &n);
	ck_assert_uint_eq(step(m, r, n, now + 1000 * MS, &k), 0);
	free(r);
	/* One target not ready: no commit. */
	r = reports(id, 64, m->epoch, true, &n);
	r[7].ready = false;
	ck_assert_uint_eq(step(m, r, n, now + 1000 * MS, &k), 0);
	r[7].ready = true;
	ck_assert_uint_eq(step(m, r, n, now + 2000 * MS, &k), 1);
	free(r);
	p = mon_pool_find_id(m, id);
	ck_assert_int_eq(k, MON_MERGE_COMMIT);
	ck_assert_uint_eq(p->pg_num, 32);
	ck_assert_uint_eq(p->pg_num_pending, 0);
	ck_assert_uint_eq(p->pg_num_target, 16);
	ck_assert_ptr_nonnull(p->last_merge);
	ck_assert_uint_eq(p->last_merge->from, 64);
	ck_assert_uint_eq(p->last_merge->to, 32);
	ck_assert_uint_eq(p->last_merge->epoch, m->epoch);
	ck_assert_uint_eq(p->last_merge->n_sources, 32);
	for (uint32_t i = 0; i < 32; i++) {
		const Cairn__Map__MergeSource *ms = p->last_merge->sources[i];

		ck_assert_uint_eq(ms->seed, 32 + i);
		ck_assert_uint_eq(ms->src_seq, 132 + i);
		ck_assert_uint_eq(ms->tgt_seq, 100 + i);
		ck_assert_uint_eq(ms->src_epoch, 3);
	}
	/* Second step 32 -> 16; it is not ready in time: it gives up. */
	r = reports(id, 32, m->epoch, false, &n);
	ck_assert_uint_eq(step(m, r, n, now + 3000 * MS, &k), 1);
	free(r);
	p = mon_pool_find_id(m, id);
	ck_assert_uint_eq(p->pg_num_pending, 16);
	r = reports(id, 32, m->epoch, true, &n);
	r[20].ready = false;
	ck_assert_uint_eq(step(m, r, n, now + 3000 * MS + MON_MERGE_PENDING_MS * MS - 1, &k), 0);
	ck_assert_uint_eq(step(m, r, n, now + 3000 * MS + MON_MERGE_PENDING_MS * MS, &k), 1);
	ck_assert_int_eq(k, MON_MERGE_GIVE_UP);
	free(r);
	p = mon_pool_find_id(m, id);
	ck_assert_uint_eq(p->pg_num_pending, 0);
	ck_assert_uint_eq(p->pg_num, 32);
	/* Again, and this time it commits: done, no target left. */
	r = reports(id, 32, m->epoch, false, &n);
	ck_assert_uint_eq(step(m, r, n, now + 40000 * MS, &k), 1);
	free(r);
	r = reports(id, 32, m->epoch, true, &n);
	ck_assert_uint_eq(step(m, r, n, now + 41000 * MS, &k), 1);
	free(r);
	p = mon_pool_find_id(m, id);
	ck_assert_int_eq(k, MON_MERGE_COMMIT);
	ck_assert_uint_eq(p->pg_num, 16);
	ck_assert_uint_eq(p->pg_num_target, 0);
	ck_assert_uint_eq(p->last_merge->from, 32);
	r = reports(id, 16, m->epoch, false, &n);
	ck_assert_uint_eq(step(m, r, n, now + 42000 * MS, &k), 0);
	free(r);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

START_TEST(test_up_again_stops)
{
	int64_t id;
	Cairn__Map__OsdMap *m = pool_map(12, &id);
	Cairn__Map__Pool *p;
	char err[MON_ERRLEN];
	enum mon_merge_kind k = 0;
	struct mon_merge_rep *r;
	size_t n;

	/* 12 -> 10: half is 8, one step to 10 (sources 10, 11 into 2, 3). */
	ck_assert_int_eq(mon_pool_set(m, "p", "pg_num", "10", err), 0);
	r = reports(id, 12, m->epoch, false, &n);
	ck_assert_uint_eq(step(m, r, n, 0, &k), 1);
	free(r);
	p = mon_pool_find_id(m, id);
	ck_assert_uint_eq(p->pg_num_pending, 10);
	ck_assert_int_eq(mon_pool_set(m, "p", "pg_num", "12", err), 0);
	p = mon_pool_find_id(m, id);
	ck_assert_uint_eq(p->pg_num_pending, 0);
	ck_assert_uint_eq(p->pg_num_target, 0);
	ck_assert_int_eq(mon_map_validate(m, err), 0);
	/* No merge step; pgp_num (lowered to 10 with the target) goes back up. */
	r = reports(id, 12, m->epoch, true, &n);
	ck_assert_uint_eq(step(m, r, n, 0, &k), 1);
	ck_assert_int_eq(k, MON_MERGE_PGP);
	ck_assert_uint_eq(mon_pool_find_id(m, id)->pgp_num, 12);
	free(r);
	r = reports(id, 12, m->epoch, true, &n);
	ck_assert_uint_eq(step(m, r, n, 0, &k), 0);
	free(r);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

/*
 * After a split the leader raises pgp_num by itself, doubling at most and
 * only with every PG clean in the current map, never under norebalance or
 * with a merge under way; an operator's pgp_num stands until then.
 */
START_TEST(test_split_raises_pgp)
{
	int64_t id;
	Cairn__Map__OsdMap *m = pool_map(8, &id);
	char err[MON_ERRLEN];
	enum mon_merge_kind k = 0;
	struct mon_merge_rep *r;
	size_t n;

	ck_assert_int_eq(mon_pool_set(m, "p", "pg_num", "40", err), 0);
	ck_assert_uint_eq(mon_pool_find_id(m, id)->pgp_num, 8);
	/* A child not clean yet (or not reported in this map): nothing. */
	r = reports(id, 40, m->epoch, false, &n);
	r[33].clean = false;
	ck_assert_uint_eq(step(m, r, n, 0, &k), 0);
	free(r);
	r = reports(id, 39, m->epoch, false, &n);
	ck_assert_uint_eq(step(m, r, n, 0, &k), 0);
	free(r);
	/* norebalance holds it. */
	m->flags |= MON_FLAG_NOREBALANCE;
	r = reports(id, 40, m->epoch, false, &n);
	ck_assert_uint_eq(step(m, r, n, 0, &k), 0);
	free(r);
	m->flags &= ~(uint64_t)MON_FLAG_NOREBALANCE;
	/* 8 -> 16 -> 32 -> 40, each once all is clean in the map of the last one. */
	for (unsigned i = 0, want[] = { 16, 32, 40 }; i < 3; i++) {
		r = reports(id, 40, m->epoch, false, &n);
		ck_assert_uint_eq(step(m, r, n, 0, &k), 1);
		ck_assert_int_eq(k, MON_MERGE_PGP);
		ck_assert_uint_eq(mon_pool_find_id(m, id)->pgp_num, want[i]);
		free(r);
		/* The reports of the map before do not count for the next step. */
		r = reports(id, 40, m->epoch - 1, false, &n);
		ck_assert_uint_eq(step(m, r, n, 0, &k), 0);
		free(r);
	}
	r = reports(id, 40, m->epoch, false, &n);
	ck_assert_uint_eq(step(m, r, n, 0, &k), 0);
	free(r);
	/* Down again: the merge's pgp_num, no raise while it goes on. */
	ck_assert_int_eq(mon_pool_set(m, "p", "pg_num", "20", err), 0);
	ck_assert_uint_eq(mon_pool_find_id(m, id)->pgp_num, 20);
	r = reports(id, 40, m->epoch, false, &n);
	ck_assert_uint_eq(step(m, r, n, 0, &k), 1);
	ck_assert_int_eq(k, MON_MERGE_START);
	free(r);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

START_TEST(test_stale_decisions)
{
	int64_t id;
	Cairn__Map__OsdMap *m = pool_map(8, &id);
	Cairn__Map__Pool *p;
	char err[MON_ERRLEN];
	enum mon_merge_kind k = 0;
	struct mon_merge_rep *r;
	struct mon_merge_edit *e;
	size_t n, ne;

	ck_assert_int_eq(mon_pool_set(m, "p", "pg_num", "4", err), 0);
	r = reports(id, 8, m->epoch, false, &n);
	ck_assert_uint_eq(step(m, r, n, 100 * 1000 * MS, &k), 1);
	free(r);
	/* A commit decided on this step is not applied to a later one. */
	r = reports(id, 8, m->epoch, true, &n);
	ck_assert_int_eq(mon_merge_decide(m, r, n, 101 * 1000 * MS, &e, &ne), 0);
	ck_assert_uint_eq(ne, 1);
	ck_assert_int_eq(e[0].kind, MON_MERGE_COMMIT);
	p = mon_pool_find_id(m, id);
	p->pending_epoch += 3; /* gave up and began again meanwhile */
	ck_assert_int_eq(mon_merge_apply(e, ne, m, 101 * 1000 * MS), 0);
	ck_assert_uint_eq(p->pg_num, 8);
	mon_merge_edits_free(e, ne);
	/* A step stamped by a leader whose clock is ahead of ours gives up at once. */
	r[0].ready = false;
	ck_assert_uint_eq(step(m, r, n, 50 * 1000 * MS, &k), 1);
	ck_assert_int_eq(k, MON_MERGE_GIVE_UP);
	free(r);
	ck_assert_uint_eq(mon_pool_find_id(m, id)->pg_num_pending, 0);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("merge");
	TCase *tc = tcase_create("steps");

	tcase_add_test(tc, test_half);
	tcase_add_test(tc, test_steps);
	tcase_add_test(tc, test_up_again_stops);
	tcase_add_test(tc, test_stale_decisions);
	tcase_add_test(tc, test_split_raises_pgp);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
