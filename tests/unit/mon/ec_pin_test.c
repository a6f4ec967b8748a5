/* SPDX-License-Identifier: Apache-2.0 */
/*
 * EC placement pins (mon/ec_pin.h) as pure functions of maps and reports.
 * Each edit goes through the hold as mon_map_update does it; the leader's
 * steps are driven with every PG reported clean until no pin is left. The
 * checks count, per EC PG and map, the positions whose OSD changed while
 * the old OSD was still in (a move that was not forced): at most 0 for an
 * operator's edit, at most 1 for a step. CRUSH alone is checked to move
 * two or more positions of some PG in the same scenarios (the failure the
 * pins exist for), and the steps end on CRUSH's placement.
 */
#include "mon/ec_pin.h"
#include "mon/incremental.h"
#include "mon/osdmap.h"
#include "crush/placement.h"
#include "testlib.h"

static Cairn__Map__OsdMap *
copy_map(const Cairn__Map__OsdMap *m)
{
	size_t len = cairn__map__osd_map__get_packed_size(m);
	uint8_t *buf = malloc(len + 1);
	Cairn__Map__OsdMap *c;

	ck_assert_ptr_nonnull(buf);
	cairn__map__osd_map__pack(m, buf);
	c = cairn__map__osd_map__unpack(NULL, len, buf);
	free(buf);
	ck_assert_ptr_nonnull(c);
	return c;
}

/* Raw sets (with pins, or CRUSH's alone) of every PG of pool id: v[s * size + i]. */
static int32_t *
raws(const Cairn__Map__OsdMap *m, int64_t id, bool nopin)
{
	const Cairn__Map__Pool *p = mon_pool_find_id(m, id);
	struct mon_placement pl;
	char err[MON_ERRLEN];
	int32_t *v = calloc((size_t)p->pg_num * p->size, sizeof(*v));

	ck_assert_ptr_nonnull(v);
	ck_assert_msg(mon_placement_build(m, &pl, err) == 0, "%s", err);
	for (uint32_t s = 0; s < p->pg_num; s++)
		ck_assert_int_eq(mon_placement_pg_raw(&pl, p, s, nopin, &v[s * p->size]),
				 (int)p->size);
	mon_placement_free(&pl);
	return v;
}

static bool
osd_in(const Cairn__Map__OsdMap *m, int32_t id)
{
	const Cairn__Map__Osd *o = id >= 0 ? mon_osd_find(m, id) : NULL;

	return o && o->in && o->reweight > 0;
}

/*
 * The most positions of one PG of pool id that moved from a to b while
 * their OSD in a was still in b (a PG that did not exist in a: its parent's
 * set). *forced: how many positions moved because their OSD left.
 */
static int
max_moved(const Cairn__Map__OsdMap *a, const Cairn__Map__OsdMap *b, int64_t id, bool b_nopin,
	  int *forced)
{
	const Cairn__Map__Pool *pa = mon_pool_find_id(a, id), *pb = mon_pool_find_id(b, id);
	int32_t *ra = raws(a, id, false), *rb = raws(b, id, b_nopin);
	int most = 0;

	*forced = 0;
	for (uint32_t s = 0; s < pb->pg_num; s++) {
		uint32_t sa = s < pa->pg_num
				      ? s
				      : crush_stable_mod(s, pa->pg_num, crush_pg_mask(pa->pg_num));
		int moved = 0;

		for (uint32_t i = 0; i < pb->size; i++) {
			int32_t x = ra[sa * pa->size + i], y = rb[s * pb->size + i];

			if (x == y)
				continue;
			if (osd_in(b, x))
				moved++;
			else
				(*forced)++;
		}
		most = moved > most ? moved : most;
	}
	free(ra);
	free(rb);
	return most;
}

/* What mon_map_update does after an edit of m (old: m before it). */
static void
commit(Cairn__Map__OsdMap *old, Cairn__Map__OsdMap *m)
{
	char err[MON_ERRLEN];
	Cairn__Map__Incremental *inc;
	Cairn__Map__OsdMap *back;

	m->epoch = old->epoch + 1;
	ck_assert_int_eq(mon_ec_pin_hold(old, m), 0);
	mon_map_canonicalize(m);
	ck_assert_msg(mon_map_validate(m, err) == 0, "%s", err);
	/* Pins travel in incrementals: old + diff == m, byte for byte. */
	mon_map_canonicalize(old);
	ck_assert_int_eq(mon_map_diff(old, m, &inc), 0);
	ck_assert_int_eq(mon_map_apply(old, inc, &back), 0);
	{
		size_t la = cairn__map__osd_map__get_packed_size(m);
		size_t lb = cairn__map__osd_map__get_packed_size(back);
		uint8_t *x = malloc(la + 1), *y = malloc(lb + 1);

		ck_assert_uint_eq(la, lb);
		cairn__map__osd_map__pack(m, x);
		cairn__map__osd_map__pack(back, y);
		ck_assert_int_eq(memcmp(x, y, la), 0);
		free(x);
		free(y);
	}
	cairn__map__incremental__free_unpacked(inc, NULL);
	cairn__map__osd_map__free_unpacked(back, NULL);
}

static void
boot(Cairn__Map__OsdMap *m, int n)
{
	char err[MON_ERRLEN], uuid[32], host[16];
	int32_t got = -1;
	struct mon_osd_boot b = { .id = -1,
				  .uuid = uuid,
				  .addr = "127.0.0.1:7000",
				  .host = host,
				  .device_class = "ssd" };

	snprintf(uuid, sizeof(uuid), "uuid-%d", n);
	snprintf(host, sizeof(host), "node%d", n);
	ck_assert_msg(mon_osd_boot(m, &b, &got, err) == 0, "%s", err);
}

/* nhosts one-OSD hosts and an EC pool k+m of pg_num PGs. */
static Cairn__Map__OsdMap *
ec_map(int nhosts, unsigned k, unsigned mm, unsigned pg_num, int64_t *id)
{
	Cairn__Map__OsdMap *m;
	struct mon_pool_spec s = {
		.name = "ec", .erasure = true, .ec_k = k, .ec_m = mm, .pg_num = pg_num
	};
	char err[MON_ERRLEN];

	ck_assert_int_eq(mon_map_initial("fsid-1", &m), 0);
	m->epoch = 1;
	for (int i = 0; i < nhosts; i++)
		boot(m, i);
	ck_assert_msg(mon_pool_create(m, &s, id, err) == 0, "%s", err);
	return m;
}

/* Every PG of the pool reported clean at epoch. */
static struct mon_merge_rep *
clean_reports(const Cairn__Map__OsdMap *m, int64_t id, size_t *n)
{
	const Cairn__Map__Pool *p = mon_pool_find_id(m, id);
	struct mon_merge_rep *r = calloc(p->pg_num, sizeof(*r));

	ck_assert_ptr_nonnull(r);
	for (uint32_t s = 0; s < p->pg_num; s++)
		r[s] = (struct mon_merge_rep){
			.pool = id, .seed = s, .epoch = m->epoch, .clean = true
		};
	*n = p->pg_num;
	return r;
}

/* What one leader round did (leader_round). */
struct round {
	bool pinned, pending; /* before it: the map had pins, a merge step pending */
	int kind;             /* the merge edit applied (0: none) */
	size_t steps;         /* pin steps applied */
};

/*
 * One leader round as the mons run it, every PG reported clean (and ready,
 * while a merge step is pending): merge edits and pin steps decided on m,
 * applied, committed through the hold; no PG moves more than one position,
 * none by force. \return false when there was nothing to do.
 */
static bool
leader_round(Cairn__Map__OsdMap *m, int64_t id, struct round *rd)
{
	const Cairn__Map__Pool *p = mon_pool_find_id(m, id);
	struct mon_merge_rep *r;
	struct mon_merge_edit *e;
	struct mon_pin_step *st;
	Cairn__Map__OsdMap *old;
	size_t n, ne, ns;
	int forced;

	*rd = (struct round){ .pinned = m->n_pg_pins > 0, .pending = p->pg_num_pending != 0 };
	r = clean_reports(m, id, &n);
	for (size_t i = 0; i < n; i++) {
		r[i].ready = rd->pending;
		r[i].lu_epoch = 3;
		r[i].lu_seq = r[i].seed + 100;
	}
	ck_assert_int_eq(mon_merge_decide(m, r, n, 0, &e, &ne), 0);
	ck_assert_int_eq(mon_pin_decide(m, r, n, &st, &ns), 0);
	free(r);
	if (!ne && !ns)
		return false;
	old = copy_map(m);
	if (ne) {
		rd->kind = e[0].kind;
		ck_assert_int_eq(mon_merge_apply(e, ne, m, 0), 1);
	}
	ck_assert_int_eq(mon_pin_apply(st, ns, m), (int)ns);
	rd->steps = ns;
	mon_merge_edits_free(e, ne);
	free(st);
	commit(old, m);
	ck_assert_int_le(max_moved(old, m, id, false, &forced), 1);
	ck_assert_int_eq(forced, 0);
	cairn__map__osd_map__free_unpacked(old, NULL);
	return true;
}

/* One leader round with every PG clean. \return how many pin steps it applied. */
static int
round_clean(Cairn__Map__OsdMap *m, int64_t id)
{
	struct round rd;

	return leader_round(m, id, &rd) ? (int)rd.steps : 0;
}

/* Rounds until no pin is left (at most limit); the placement is then CRUSH's. */
static int
settle(Cairn__Map__OsdMap *m, int64_t id, int limit)
{
	int rounds = 0, steps = 0;
	int32_t *a, *b;
	const Cairn__Map__Pool *p;

	while (m->n_pg_pins && rounds < limit) {
		int got = round_clean(m, id);

		if (!got)
			break;
		steps += got;
		rounds++;
	}
	ck_assert_uint_eq(m->n_pg_pins, 0);
	p = mon_pool_find_id(m, id);
	a = raws(m, id, false);
	b = raws(m, id, true);
	ck_assert_int_eq(memcmp(a, b, (size_t)p->pg_num * p->size * sizeof(*a)), 0);
	free(a);
	free(b);
	return steps;
}

/* An edit by fn, committed; checks the hold moved only forced positions (and CRUSH would not). */
static void
edit(Cairn__Map__OsdMap *m, int64_t id, void (*fn)(Cairn__Map__OsdMap *m, int arg), int arg,
     bool crush_moves_two)
{
	Cairn__Map__OsdMap *old = copy_map(m);
	int forced;

	fn(m, arg);
	commit(old, m);
	ck_assert_int_eq(max_moved(old, m, id, false, &forced), 0);
	if (crush_moves_two)
		ck_assert_int_ge(max_moved(old, m, id, true, &forced), 2);
	cairn__map__osd_map__free_unpacked(old, NULL);
}

static void
do_boot(Cairn__Map__OsdMap *m, int n)
{
	boot(m, n);
}

static void
do_out(Cairn__Map__OsdMap *m, int id)
{
	ck_assert_int_eq(mon_osd_set_in(m, id, false), 0);
}

static void
do_in(Cairn__Map__OsdMap *m, int id)
{
	ck_assert_int_eq(mon_osd_set_in(m, id, true), 0);
}

static void
do_down(Cairn__Map__OsdMap *m, int id)
{
	ck_assert_int_eq(mon_osd_mark_down(m, id, 1), 0);
}

static void
do_pg_num(Cairn__Map__OsdMap *m, int v)
{
	char err[MON_ERRLEN], s[16];

	snprintf(s, sizeof(s), "%d", v);
	ck_assert_msg(mon_pool_set(m, "ec", "pg_num", s, err) == 0, "%s", err);
}

static void
do_pgp_num(Cairn__Map__OsdMap *m, int v)
{
	char err[MON_ERRLEN], s[16];

	snprintf(s, sizeof(s), "%d", v);
	ck_assert_msg(mon_pool_set(m, "ec", "pgp_num", s, err) == 0, "%s", err);
}

/* 4 -> 5 -> 7 hosts under a 2+1 pool: no map moves two positions of a PG; steps end on CRUSH. */
START_TEST(test_grow)
{
	int64_t id;
	Cairn__Map__OsdMap *m = ec_map(4, 2, 1, 64, &id);

	m->epoch++;
	edit(m, id, do_boot, 4, true);
	ck_assert_uint_gt(m->n_pg_pins, 0);
	ck_assert_int_gt(settle(m, id, 20), 0);
	edit(m, id, do_boot, 5, false);
	edit(m, id, do_boot, 6, true);
	settle(m, id, 20);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

/* 5 hosts: one OSD out moves only its own positions; back in, the steps return. */
START_TEST(test_out_in)
{
	int64_t id;
	Cairn__Map__OsdMap *m = ec_map(5, 2, 1, 64, &id);
	Cairn__Map__OsdMap *old;
	int forced;

	for (int o = 0; o < 5; o++) {
		old = copy_map(m);
		do_out(m, o);
		commit(old, m);
		ck_assert_int_eq(max_moved(old, m, id, false, &forced), 0);
		ck_assert_int_gt(forced, 0);
		cairn__map__osd_map__free_unpacked(old, NULL);
		settle(m, id, 20);
		edit(m, id, do_in, o, false);
		settle(m, id, 20);
	}
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

/* A down OSD stays pinned (it comes back): down moves nothing. */
START_TEST(test_down_stays)
{
	int64_t id;
	Cairn__Map__OsdMap *m = ec_map(5, 2, 1, 32, &id);
	int32_t *a, *b;

	a = raws(m, id, false);
	edit(m, id, do_down, 2, false);
	b = raws(m, id, false);
	ck_assert_int_eq(memcmp(a, b, 32 * 3 * sizeof(*a)), 0);
	ck_assert_uint_eq(m->n_pg_pins, 0);
	free(a);
	free(b);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

/* pg_num up: children sit with their (pinned) parents; pgp_num up: steps, one position a time. */
START_TEST(test_split_and_pgp)
{
	int64_t id;
	Cairn__Map__OsdMap *m = ec_map(6, 2, 2, 16, &id);
	Cairn__Map__OsdMap *old;
	int forced;

	edit(m, id, do_boot, 6, true); /* pins some PGs */
	ck_assert_uint_gt(m->n_pg_pins, 0);
	old = copy_map(m);
	do_pg_num(m, 64);
	commit(old, m);
	ck_assert_int_eq(max_moved(old, m, id, false, &forced), 0);
	ck_assert_int_eq(forced, 0);
	cairn__map__osd_map__free_unpacked(old, NULL);
	edit(m, id, do_pgp_num, 64, true);
	settle(m, id, 40);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

/*
 * The leader's whole round on an EC split 16 -> 64: pgp_num doubles only
 * once no PG is pinned, the pins step, and no map moves more than one
 * position of a PG until pgp_num is 64 and the placement is CRUSH's.
 */
START_TEST(test_split_leader_rounds)
{
	int64_t id;
	Cairn__Map__OsdMap *m = ec_map(7, 4, 2, 16, &id);
	Cairn__Map__OsdMap *old;
	struct round rd;
	int rounds = 0, doublings = 0;

	old = copy_map(m);
	do_pg_num(m, 64);
	commit(old, m);
	cairn__map__osd_map__free_unpacked(old, NULL);
	while (rounds++ < 100 && leader_round(m, id, &rd)) {
		ck_assert(!(rd.kind && rd.pinned)); /* no doubling while a pin moves */
		if (rd.kind) {
			ck_assert_int_eq(rd.kind, MON_MERGE_PGP);
			doublings++;
		}
	}
	ck_assert_int_eq(doublings, 2);
	ck_assert_uint_eq(mon_pool_find_id(m, id)->pgp_num, 64);
	ck_assert_uint_eq(m->n_pg_pins, 0);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

/*
 * An EC merge 64 -> 16: pgp_num drops at once, the pins hold every PG and
 * step each source and its target to their one CRUSH placement; a merge
 * step starts only once no PG is pinned, and no pin moves while it runs.
 */
START_TEST(test_merge_leader_rounds)
{
	int64_t id;
	Cairn__Map__OsdMap *m = ec_map(7, 4, 2, 64, &id);
	Cairn__Map__OsdMap *old;
	struct round rd;
	int rounds = 0, forced, starts = 0, steps = 0;

	old = copy_map(m);
	do_pg_num(m, 16);
	commit(old, m);
	ck_assert_int_eq(max_moved(old, m, id, false, &forced), 0);
	ck_assert_uint_gt(m->n_pg_pins, 0);
	cairn__map__osd_map__free_unpacked(old, NULL);
	while (rounds++ < 200 && leader_round(m, id, &rd)) {
		ck_assert(!(rd.steps && rd.pending));
		ck_assert(!(rd.kind == MON_MERGE_START && rd.pinned));
		starts += rd.kind == MON_MERGE_START;
		steps += (int)rd.steps;
	}
	ck_assert_int_eq(starts, 2);
	ck_assert_int_gt(steps, 0);
	ck_assert_uint_eq(mon_pool_find_id(m, id)->pg_num, 16);
	ck_assert_uint_eq(m->n_pg_pins, 0);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

/* No step before the PG is clean in a map as new as its pin, nor under norebalance. */
START_TEST(test_step_gates)
{
	int64_t id;
	Cairn__Map__OsdMap *m = ec_map(4, 2, 1, 32, &id);
	struct mon_merge_rep *r;
	struct mon_pin_step *st;
	size_t n, ns, all;

	edit(m, id, do_boot, 4, true);
	ck_assert_uint_gt(m->n_pg_pins, 0);
	r = clean_reports(m, id, &n);
	ck_assert_int_eq(mon_pin_decide(m, r, n, &st, &all), 0);
	ck_assert_uint_eq(all, m->n_pg_pins);
	free(st);
	for (size_t i = 0; i < n; i++)
		r[i].epoch = m->epoch - 1;
	ck_assert_int_eq(mon_pin_decide(m, r, n, &st, &ns), 0);
	ck_assert_uint_eq(ns, 0);
	for (size_t i = 0; i < n; i++) {
		r[i].epoch = m->epoch;
		r[i].clean = i % 2;
	}
	ck_assert_int_eq(mon_pin_decide(m, r, n, &st, &ns), 0);
	ck_assert_uint_lt(ns, all);
	free(st);
	for (size_t i = 0; i < n; i++)
		r[i].clean = true;
	m->flags |= MON_FLAG_NOREBALANCE;
	ck_assert_int_eq(mon_pin_decide(m, r, n, &st, &ns), 0);
	ck_assert_uint_eq(ns, 0);
	m->flags &= ~(uint64_t)MON_FLAG_NOREBALANCE;
	/* A step decided on a pin that has changed since is not applied. */
	ck_assert_int_eq(mon_pin_decide(m, r, n, &st, &ns), 0);
	ck_assert_uint_gt(ns, 0);
	st[0].epoch--;
	ck_assert_int_eq(mon_pin_apply(st, 1, m), 0);
	st[0].epoch++;
	/* Nor one whose new OSD went out (or down) since. */
	for (int k = 0; k < st[0].n; k++) {
		if (st[0].to[k] == st[0].from[k])
			continue;
		ck_assert_int_eq(mon_osd_set_in(m, st[0].to[k], false), 0);
		ck_assert_int_eq(mon_pin_apply(st, 1, m), 0);
		ck_assert_int_eq(mon_osd_set_in(m, st[0].to[k], true), 0);
		ck_assert_int_eq(mon_osd_mark_down(m, st[0].to[k], 1), 0);
		ck_assert_int_eq(mon_pin_apply(st, 1, m), 0);
	}
	free(st);
	free(r);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

/*
 * A pinned PG with one of its OSDs down is not moved (it is being rebuilt
 * elsewhere); and an edit that moves a pin two positions at once is not
 * trusted as a step: the hold keeps the PG where it was.
 */
START_TEST(test_step_safety)
{
	int64_t id;
	Cairn__Map__OsdMap *m = ec_map(4, 2, 1, 32, &id);
	Cairn__Map__OsdMap *old;
	struct mon_merge_rep *r;
	struct mon_pin_step *st;
	size_t n, ns, all;
	int32_t victim;
	Cairn__Map__PgPin *q;
	int forced;

	edit(m, id, do_boot, 4, true);
	ck_assert_uint_gt(m->n_pg_pins, 0);
	r = clean_reports(m, id, &n);
	ck_assert_int_eq(mon_pin_decide(m, r, n, &st, &all), 0);
	free(st);
	q = m->pg_pins[0];
	victim = q->osds[0] >= 0 ? q->osds[0] : q->osds[1];
	old = copy_map(m);
	do_down(m, victim);
	commit(old, m);
	cairn__map__osd_map__free_unpacked(old, NULL);
	free(r);
	r = clean_reports(m, id, &n); /* even if a report said clean */
	ck_assert_int_eq(mon_pin_decide(m, r, n, &st, &ns), 0);
	for (size_t i = 0; i < ns; i++)
		for (int k = 0; k < st[i].n; k++)
			ck_assert_int_ne(st[i].from[k], victim);
	ck_assert_uint_lt(ns, all);
	free(st);
	free(r);
	/* A two-position "step" written into the map: held back. */
	q = m->pg_pins[0];
	old = copy_map(m);
	{
		int32_t t = q->osds[0];

		q->osds[0] = q->osds[1];
		q->osds[1] = t;
	}
	commit(old, m);
	ck_assert_int_eq(max_moved(old, m, id, false, &forced), 0);
	cairn__map__osd_map__free_unpacked(old, NULL);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

/* mon_pin_stuck on m's own placement. */
static size_t
stuck_pins(const Cairn__Map__OsdMap *m)
{
	struct mon_placement pl;
	char err[MON_ERRLEN];
	size_t n;

	ck_assert_msg(mon_placement_build(m, &pl, err) == 0, "%s", err);
	ck_assert_int_eq(mon_pin_stuck(m, &pl, &n), 0);
	mon_placement_free(&pl);
	return n;
}

/*
 * Exactly k+m OSDs: an out and in moves only what it must; a PG whose
 * positions are a cycle cannot step with m = 1 (no spare, and a hole would
 * leave k - 1 labelled shards): it stays pinned, health counts it, and a
 * fourth OSD lets it go.
 */
START_TEST(test_no_spare)
{
	int64_t id;
	Cairn__Map__OsdMap *m = ec_map(3, 2, 1, 32, &id);
	Cairn__Map__OsdMap *old;
	Cairn__Map__PgPin *q;
	int32_t *v;
	int forced;
	size_t stuck;

	old = copy_map(m);
	do_out(m, 1);
	commit(old, m);
	ck_assert_int_eq(max_moved(old, m, id, false, &forced), 0);
	cairn__map__osd_map__free_unpacked(old, NULL);
	edit(m, id, do_in, 1, false);
	for (int i = 0; i < 10 && round_clean(m, id); i++)
		;
	v = raws(m, id, false);
	for (uint32_t i = 0; i < 32 * 3; i++)
		ck_assert_int_ge(v[i], 0);
	/* PG 5 rotated: a cycle of three. */
	ck_assert_uint_eq(m->n_pg_pins, 0);
	q = malloc(sizeof(*q));
	cairn__map__pg_pin__init(q);
	q->pool = id;
	q->seed = 5;
	q->n_osds = 3;
	q->osds = malloc(3 * sizeof(*q->osds));
	for (int i = 0; i < 3; i++)
		q->osds[i] = v[5 * 3 + (i + 1) % 3];
	q->epoch = m->epoch;
	free(v);
	m->pg_pins = malloc(sizeof(*m->pg_pins));
	m->pg_pins[0] = q;
	m->n_pg_pins = 1;
	stuck = stuck_pins(m);
	ck_assert_uint_eq(stuck, 1);
	ck_assert_int_eq(round_clean(m, id), 0);
	/* A fourth OSD: the cycle steps through it and ends on CRUSH. */
	old = copy_map(m);
	boot(m, 3);
	commit(old, m);
	ck_assert_int_eq(max_moved(old, m, id, false, &forced), 0);
	cairn__map__osd_map__free_unpacked(old, NULL);
	ck_assert_int_gt(settle(m, id, 40), 0);
	stuck = stuck_pins(m);
	ck_assert_uint_eq(stuck, 0);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

/* The crush side: a pin replaces positions; a pinned OSD that is out gives way, never twice. */
START_TEST(test_pin_placement)
{
	int64_t id;
	Cairn__Map__OsdMap *m = ec_map(5, 2, 1, 8, &id);
	const Cairn__Map__Pool *p = mon_pool_find_id(m, id);
	struct mon_placement pl;
	char err[MON_ERRLEN];
	int32_t raw[64], crush[64], up[64], spare = -1;
	Cairn__Map__PgPin *q = malloc(sizeof(*q));
	int primary;

	ck_assert_int_eq(mon_placement_build(m, &pl, err), 0);
	ck_assert_int_eq(mon_placement_pg_raw(&pl, p, 3, true, crush), 3);
	mon_placement_free(&pl);
	for (int32_t o = 0; o < 5 && spare < 0; o++)
		if (o != crush[0] && o != crush[1] && o != crush[2])
			spare = o;
	cairn__map__pg_pin__init(q);
	q->pool = id;
	q->seed = 3;
	q->n_osds = 3;
	q->osds = malloc(3 * sizeof(*q->osds));
	q->osds[0] = crush[1]; /* a swap of positions 0 and 1, and a spare at 2 */
	q->osds[1] = crush[0];
	q->osds[2] = spare;
	m->pg_pins = malloc(sizeof(*m->pg_pins));
	m->pg_pins[0] = q;
	m->n_pg_pins = 1;
	ck_assert_msg(mon_map_validate(m, err) == 0, "%s", err);
	ck_assert_int_eq(mon_placement_build(m, &pl, err), 0);
	ck_assert_int_eq(mon_placement_pg_up(&pl, p, 3, up, &primary), 3);
	ck_assert_int_eq(up[0], crush[1]);
	ck_assert_int_eq(up[1], crush[0]);
	ck_assert_int_eq(up[2], spare);
	ck_assert_int_eq(primary, crush[1]);
	mon_placement_free(&pl);
	/* The spare goes out: position 2 gives way to CRUSH's crush[2]. */
	ck_assert_int_eq(mon_osd_set_in(m, spare, false), 0);
	ck_assert_int_eq(mon_placement_build(m, &pl, err), 0);
	ck_assert_int_eq(mon_placement_pg_raw(&pl, p, 3, false, raw), 3);
	ck_assert_int_eq(raw[2], crush[2]);
	mon_placement_free(&pl);
	/* crush[1] (pinned at 0) goes out: position 0 would take crush[0], pinned at 1: a hole. */
	ck_assert_int_eq(mon_osd_set_in(m, spare, true), 0);
	ck_assert_int_eq(mon_osd_set_in(m, crush[1], false), 0);
	ck_assert_int_eq(mon_placement_build(m, &pl, err), 0);
	ck_assert_int_eq(mon_placement_pg_raw(&pl, p, 3, false, raw), 3);
	ck_assert_int_eq(raw[1], crush[0]);
	ck_assert_int_eq(raw[0], CRUSH_ITEM_NONE);
	mon_placement_free(&pl);
	/* A pin naming an OSD twice, or a PG that does not exist, is refused. */
	q->osds[0] = q->osds[1];
	ck_assert_int_ne(mon_map_validate(m, err), 0);
	q->osds[0] = -1;
	ck_assert_int_eq(mon_map_validate(m, err), 0);
	q->seed = 8;
	ck_assert_int_ne(mon_map_validate(m, err), 0);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("ec_pin");
	TCase *tc = tcase_create("ec_pin");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_pin_placement);
	tcase_add_test(tc, test_grow);
	tcase_add_test(tc, test_out_in);
	tcase_add_test(tc, test_down_stays);
	tcase_add_test(tc, test_split_and_pgp);
	tcase_add_test(tc, test_split_leader_rounds);
	tcase_add_test(tc, test_merge_leader_rounds);
	tcase_add_test(tc, test_step_gates);
	tcase_add_test(tc, test_step_safety);
	tcase_add_test(tc, test_no_spare);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
