/* SPDX-License-Identifier: Apache-2.0 */
/* EC placement pins: the hold on every map edit and the leader's steps (mon/ec_pin.h). */
#include "mon/ec_pin.h"
#include "mon/incremental.h"
#include "mon/osdmap.h"
#include "crush/placement.h"
#include "cm/log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

CM_LOG_SUBSYS(mon);

#define PIN_MAX 32

static Cairn__Map__PgPin *
find_pin(Cairn__Map__PgPin **v, size_t n, int64_t pool, uint32_t seed)
{
	Cairn__Map__PgPin key, *kp = &key, **hit;

	if (!n)
		return NULL;
	cairn__map__pg_pin__init(&key);
	key.pool = pool;
	key.seed = seed;
	hit = bsearch(&kp, v, n, sizeof(*v), mon_pin_cmp);
	return hit ? *hit : NULL;
}

/* Is id an OSD of pl's map that exists and is in? */
static bool
osd_in(const struct mon_placement *pl, int32_t id)
{
	return id >= 0 && id < pl->max_osd && pl->osds[id].exists && pl->weights[id] > 0;
}

static bool
holds(const int32_t *v, int n, int32_t id)
{
	for (int i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

/* CRUSH_ITEM_NONE (or any negative) as a pin's -1. */
static int32_t
as_pin(int32_t v)
{
	return v < 0 || v == CRUSH_ITEM_NONE ? -1 : v;
}

/*
 * Where PG s of p (in m, placed by pn without pins) goes when only forced
 * positions move, from cur (its raw set in the old map): next.
 */
static void
hold_one(const struct mon_placement *pn, const int32_t *cur, int ncur, const int32_t *raw, int n,
	 int32_t *next)
{
	bool forced[PIN_MAX];

	for (int i = 0; i < n; i++) {
		int32_t c = i < ncur ? as_pin(cur[i]) : -1;

		forced[i] = !osd_in(pn, c) || holds(next, i, c);
		next[i] = forced[i] ? -1 : c;
	}
	for (int i = 0; i < n; i++) {
		int32_t v = -1;

		if (!forced[i])
			continue;
		if (as_pin(raw[i]) >= 0 && !holds(next, n, raw[i]))
			v = raw[i];
		for (int j = 0; j < n && v < 0; j++)
			if (as_pin(raw[j]) >= 0 && !holds(next, n, raw[j]))
				v = raw[j];
		next[i] = v;
	}
}

static bool
same_osds(const int32_t *a, const int32_t *b, int n)
{
	for (int i = 0; i < n; i++)
		if (as_pin(a[i]) != as_pin(b[i]))
			return false;
	return true;
}

/*
 * A step an edit made (the leader's): every OSD of it still in, and at most
 * one position moved from where the PG was (cur). Else the hold decides.
 */
static bool
step_ok(const struct mon_placement *pn, const int32_t *to, const int32_t *cur, int n)
{
	int moved = 0;

	for (int i = 0; i < n; i++) {
		if (to[i] >= 0 && !osd_in(pn, to[i]))
			return false;
		moved += as_pin(to[i]) != as_pin(cur[i]);
	}
	return moved <= 1;
}

static Cairn__Map__PgPin *
new_pin(int64_t pool, uint32_t seed, const int32_t *osds, int n, uint64_t epoch)
{
	Cairn__Map__PgPin *q = malloc(sizeof(*q));

	if (!q)
		return NULL;
	cairn__map__pg_pin__init(q);
	q->osds = malloc((size_t)n * sizeof(*q->osds));
	if (!q->osds) {
		free(q);
		return NULL;
	}
	for (int i = 0; i < n; i++)
		q->osds[i] = as_pin(osds[i]);
	q->n_osds = (size_t)n;
	q->pool = pool;
	q->seed = seed;
	q->epoch = epoch;
	return q;
}

static int
push_pin(Cairn__Map__PgPin ***v, size_t *n, size_t *cap, Cairn__Map__PgPin *q)
{
	if (!q)
		return -ENOMEM;
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 16;
		Cairn__Map__PgPin **g = realloc(*v, nc * sizeof(*g));

		if (!g) {
			cairn__map__pg_pin__free_unpacked(q, NULL);
			return -ENOMEM;
		}
		*v = g;
		*cap = nc;
	}
	(*v)[(*n)++] = q;
	return 0;
}

/* The pins of EC pool p in m (placed by pn without pins), from old (po) and the edit's own (mine).
 */
static int
hold_pool(const Cairn__Map__OsdMap *old, struct mon_placement *po, struct mon_placement *pn,
	  const Cairn__Map__OsdMap *m, const Cairn__Map__Pool *p, Cairn__Map__PgPin **mine,
	  size_t nmine, Cairn__Map__PgPin ***out, size_t *nout, size_t *cap)
{
	const Cairn__Map__Pool *op = mon_pool_find_id(old, p->id);
	int size = (int)p->size;

	if (size > PIN_MAX)
		return 0;
	for (uint32_t s = 0; s < p->pg_num; s++) {
		const Cairn__Map__PgPin *edit = find_pin(mine, nmine, p->id, s);
		const struct mon_pin *was = mon_placement_pin(po, p->id, s);
		int32_t raw[64], cur[64], next[PIN_MAX];
		const int32_t *want = NULL;
		uint64_t epoch = m->epoch;
		int n = mon_placement_pg_raw(pn, p, s, true, raw), nc;
		uint32_t os;

		if (n != size || !op || !op->erasure || op->size != p->size || !op->pg_num)
			continue; /* nothing was placed: nothing to hold */
		os = s < op->pg_num ? s
				    : crush_stable_mod(s, op->pg_num, crush_pg_mask(op->pg_num));
		nc = mon_placement_pg_raw(po, op, os, false, cur);
		if (nc != size)
			continue;
		if (edit && edit->n_osds == (size_t)size &&
		    !(was && was->n == size && same_osds(edit->osds, was->osds, size)) &&
		    step_ok(pn, edit->osds, cur, size)) {
			want = edit->osds; /* a step: the edit's own */
		} else {
			hold_one(pn, cur, nc, raw, size, next);
			want = next;
			if (was && was->n == size && same_osds(next, was->osds, size))
				epoch = was->epoch;
		}
		if (same_osds(want, raw, size))
			continue;
		if (push_pin(out, nout, cap, new_pin(p->id, s, want, size, epoch)))
			return -ENOMEM;
	}
	return 0;
}

int
mon_ec_pin_hold(const Cairn__Map__OsdMap *old, Cairn__Map__OsdMap *m)
{
	struct mon_placement po, pn;
	char err[MON_ERRLEN];
	Cairn__Map__PgPin **mine = m->pg_pins, **out = NULL;
	size_t nmine = m->n_pg_pins, nout = 0, cap = 0;
	bool any = false;
	int rc = 0;

	for (size_t i = 0; i < m->n_pools; i++)
		any |= m->pools[i]->erasure;
	if (!any && !nmine)
		return 0;
	if (mon_placement_build(old, &po, err))
		return 0;
	m->pg_pins = NULL; /* placed without pins: m's own may not fit it yet */
	m->n_pg_pins = 0;
	if (mon_placement_build(m, &pn, err)) {
		m->pg_pins = mine;
		m->n_pg_pins = nmine;
		mon_placement_free(&po);
		return 0;
	}
	if (nmine)
		qsort(mine, nmine, sizeof(*mine), mon_pin_cmp);
	for (size_t i = 0; i < m->n_pools && !rc; i++)
		if (m->pools[i]->erasure)
			rc = hold_pool(old, &po, &pn, m, m->pools[i], mine, nmine, &out, &nout,
				       &cap);
	mon_placement_free(&po);
	mon_placement_free(&pn);
	if (rc) {
		for (size_t i = 0; i < nout; i++)
			cairn__map__pg_pin__free_unpacked(out[i], NULL);
		free(out);
		m->pg_pins = mine;
		m->n_pg_pins = nmine;
		return rc;
	}
	{
		size_t fresh = 0;

		for (size_t i = 0; i < nout; i++)
			fresh += out[i]->epoch == m->epoch;
		if (fresh || nout != old->n_pg_pins)
			CM_NOTICE("epoch %" PRIu64
				  ": %zu EC PGs held off their CRUSH placement (%zu "
				  "changed): their shards move one position at a time",
				  m->epoch, nout, fresh);
	}
	for (size_t i = 0; i < nmine; i++)
		cairn__map__pg_pin__free_unpacked(mine[i], NULL);
	free(mine);
	m->pg_pins = out;
	m->n_pg_pins = nout;
	return 0;
}

/* ---------- steps ---------- */

static int
rep_cmp(const void *x, const void *y)
{
	const struct mon_merge_rep *a = x, *b = y;

	if (a->pool != b->pool)
		return (a->pool > b->pool) - (a->pool < b->pool);
	if (a->seed != b->seed)
		return (a->seed > b->seed) - (a->seed < b->seed);
	return (a->epoch < b->epoch) - (a->epoch > b->epoch); /* newest first */
}

static const struct mon_merge_rep *
newest_rep(const struct mon_merge_rep *v, size_t n, int64_t pool, uint32_t seed)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].pool < pool || (v[mid].pool == pool && v[mid].seed < seed))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].pool == pool && v[lo].seed == seed ? &v[lo] : NULL;
}

static const char *
host_of(const Cairn__Map__OsdMap *m, int32_t id)
{
	const Cairn__Map__Osd *o = mon_osd_find(m, id);

	return o && o->host ? o->host : "";
}

/* Is id up (and in) in pl's map? */
static bool
osd_up_in(const struct mon_placement *pl, int32_t id)
{
	return osd_in(pl, id) && pl->osds[id].up;
}

/*
 * The OSDs CRUSH places pool p's PGs on (in: at least one PG of it without
 * pins), so that a spare obeys the pool's rule (root, device class).
 * \return a calloc'd array of pl->max_osd + 1, or NULL.
 */
static bool *
pool_osds(struct mon_placement *pl, const Cairn__Map__Pool *p)
{
	bool *in = calloc((size_t)pl->max_osd + 1, sizeof(*in));
	int32_t raw[64];

	if (!in)
		return NULL;
	for (uint32_t s = 0; s < p->pg_num; s++) {
		int n = mon_placement_pg_raw(pl, p, s, true, raw);

		for (int i = 0; i < n; i++)
			if (raw[i] >= 0 && raw[i] < pl->max_osd)
				in[raw[i]] = true;
	}
	return in;
}

/*
 * An up, in OSD of the pool's rule (rule[]) not in pin, on a host the pin's
 * others do not use if there is one; or -1.
 */
static int32_t
spare(const Cairn__Map__OsdMap *m, const struct mon_placement *pl, const bool *rule,
      const int32_t *pin, int n, int skip)
{
	int32_t any = -1;

	for (size_t k = 0; k < m->n_osds; k++) {
		int32_t id = m->osds[k]->id;
		bool shared = false;

		if (!osd_up_in(pl, id) || !rule[id] || holds(pin, n, id))
			continue;
		for (int i = 0; i < n && !shared; i++)
			shared = i != skip && pin[i] >= 0 &&
				 strcmp(host_of(m, pin[i]), host_of(m, id)) == 0;
		if (!shared)
			return id;
		if (any < 0)
			any = id;
	}
	return any;
}

/*
 * One step for pin q (pool p, rule its OSDs): to (false: none possible).
 * First a position whose CRUSH OSD is free takes it (holes first). Else
 * (a cycle: every OSD CRUSH wants holds another position) a position
 * holding an OSD CRUSH wants elsewhere moves to a spare, freeing it for
 * the next step; so every step either puts a position where CRUSH wants
 * it or frees an OSD that the next one puts there. Never a hole: the PG
 * would report undersized, never clean, and the next edit's hold would
 * fill it back.
 */
static bool
step_one(const Cairn__Map__OsdMap *m, struct mon_placement *pl, const Cairn__Map__Pool *p,
	 const bool *rule, const Cairn__Map__PgPin *q, int32_t *to)
{
	int32_t raw[64];
	int n = (int)q->n_osds, pick = -1;

	if (mon_placement_pg_raw(pl, p, q->seed, true, raw) != n)
		return false;
	memcpy(to, q->osds, (size_t)n * sizeof(*to));
	for (int pass = 0; pass < 2 && pick < 0; pass++)
		for (int i = 0; i < n && pick < 0; i++)
			if ((pass || to[i] < 0) && as_pin(raw[i]) >= 0 && to[i] != raw[i] &&
			    !holds(to, n, raw[i]) && osd_up_in(pl, raw[i]))
				pick = i;
	if (pick >= 0) {
		to[pick] = raw[pick];
		return true;
	}
	for (int i = 0; i < n && pick < 0; i++)
		if (to[i] >= 0 && to[i] != as_pin(raw[i]) && holds(raw, n, to[i]))
			pick = i;
	if (pick < 0)
		return false;
	to[pick] = spare(m, pl, rule, to, n, pick);
	return to[pick] >= 0;
}

/* Every OSD of the pin up and in (a PG being rebuilt is not moved again). */
static bool
pin_all_up(const struct mon_placement *pl, const Cairn__Map__PgPin *q)
{
	for (size_t i = 0; i < q->n_osds; i++)
		if (q->osds[i] >= 0 && !osd_up_in(pl, q->osds[i]))
			return false;
	return true;
}

int
mon_pin_decide(const Cairn__Map__OsdMap *m, const struct mon_merge_rep *reps, size_t n,
	       struct mon_pin_step **out, size_t *nout)
{
	struct mon_merge_rep *sorted = NULL;
	struct mon_placement pl;
	char err[MON_ERRLEN];
	struct mon_pin_step *v = NULL;
	bool *rule = NULL;
	int64_t rule_pool = -1;
	size_t nv = 0;
	int rc = 0;

	*out = NULL;
	*nout = 0;
	if (!m->n_pg_pins || !n || (m->flags & MON_FLAG_NOREBALANCE))
		return 0;
	if (mon_placement_build(m, &pl, err))
		return 0;
	sorted = malloc(n * sizeof(*sorted));
	v = calloc(m->n_pg_pins, sizeof(*v));
	if (!sorted || !v) {
		free(sorted);
		free(v);
		mon_placement_free(&pl);
		return -ENOMEM;
	}
	memcpy(sorted, reps, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), rep_cmp);
	for (size_t i = 0; i < m->n_pg_pins; i++) {
		const Cairn__Map__PgPin *q = m->pg_pins[i];
		const Cairn__Map__Pool *p = mon_pool_find_id(m, q->pool);
		const struct mon_merge_rep *r = newest_rep(sorted, n, q->pool, q->seed);
		struct mon_pin_step *st = &v[nv];

		/* Clean in this very map (a report from before an OSD went down
		 * does not count), every OSD of it up, no merge step pending. */
		if (!p || !p->erasure || p->pg_num_pending || q->n_osds != p->size ||
		    q->n_osds > PIN_MAX || !r || !r->clean || r->epoch < m->epoch ||
		    !pin_all_up(&pl, q))
			continue;
		if (rule_pool != p->id) {
			free(rule);
			rule = pool_osds(&pl, p);
			rule_pool = p->id;
			if (!rule) {
				rc = -ENOMEM;
				break;
			}
		}
		if (!step_one(m, &pl, p, rule, q, st->to))
			continue;
		st->pool = q->pool;
		st->seed = q->seed;
		st->epoch = q->epoch;
		st->n = (int)q->n_osds;
		memcpy(st->from, q->osds, q->n_osds * sizeof(*q->osds));
		nv++;
	}
	free(rule);
	free(sorted);
	mon_placement_free(&pl);
	if (rc || !nv) {
		free(v);
		v = NULL;
		nv = 0;
	}
	*out = v;
	*nout = nv;
	return rc;
}

int
mon_pin_apply(const struct mon_pin_step *s, size_t n, Cairn__Map__OsdMap *m)
{
	int changed = 0;

	if (m->n_pg_pins) /* sorted: found by bsearch */
		qsort(m->pg_pins, m->n_pg_pins, sizeof(*m->pg_pins), mon_pin_cmp);
	for (size_t i = 0; i < n; i++) {
		Cairn__Map__PgPin *q = find_pin(m->pg_pins, m->n_pg_pins, s[i].pool, s[i].seed);
		const Cairn__Map__Pool *p = mon_pool_find_id(m, s[i].pool);
		bool ok = q && p && !p->pg_num_pending && q->epoch == s[i].epoch &&
			  q->n_osds == (size_t)s[i].n && same_osds(q->osds, s[i].from, s[i].n);

		/* The map may be newer than the one decided on: the new OSD must
		 * still be up and in. */
		for (int k = 0; ok && k < s[i].n; k++) {
			const Cairn__Map__Osd *o;

			if (s[i].to[k] == q->osds[k] || s[i].to[k] < 0)
				continue;
			o = mon_osd_find(m, s[i].to[k]);
			ok = o && o->up && o->in && o->reweight > 0;
		}
		if (!ok)
			continue;
		for (int k = 0; k < s[i].n; k++) {
			if (q->osds[k] != s[i].to[k])
				CM_INFO("pg %" PRId64 ".%x: shard %d moves osd.%d -> osd.%d",
					q->pool, q->seed, k, q->osds[k], s[i].to[k]);
			q->osds[k] = s[i].to[k];
		}
		changed++;
	}
	return changed;
}

int
mon_pin_stuck(const Cairn__Map__OsdMap *m, struct mon_placement *pl, size_t *nstuck)
{
	bool *rule = NULL;
	int64_t rule_pool = -1;

	*nstuck = 0;
	for (size_t i = 0; i < m->n_pg_pins; i++) {
		const Cairn__Map__PgPin *q = m->pg_pins[i];
		const Cairn__Map__Pool *p = mon_pool_find_id(m, q->pool);
		int32_t to[PIN_MAX];

		if (!p || !p->erasure || q->n_osds != p->size || q->n_osds > PIN_MAX)
			continue;
		if (rule_pool != p->id) {
			free(rule);
			rule = pool_osds(pl, p);
			rule_pool = p->id;
			if (!rule)
				return -ENOMEM;
		}
		if (!step_one(m, pl, p, rule, q, to))
			(*nstuck)++;
	}
	free(rule);
	return 0;
}
