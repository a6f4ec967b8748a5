/* SPDX-License-Identifier: Apache-2.0 */
/* PG merge steps, the leader's decisions (mon/merge.h). */
#include "mon/merge.h"
#include "mon/osdmap.h"
#include "cm/err.h"
#include "cm/log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

CM_LOG_SUBSYS(mon);

#define MS UINT64_C(1000000)

static int
rep_cmp(const void *a, const void *b)
{
	const struct mon_merge_rep *x = a, *y = b;

	if (x->pool != y->pool)
		return x->pool < y->pool ? -1 : 1;
	if (x->seed != y->seed)
		return x->seed < y->seed ? -1 : 1;
	return x->epoch > y->epoch ? -1 : x->epoch < y->epoch; /* newest first */
}

/* The newest report of (pool, seed), NULL if none (reps sorted by rep_cmp). */
static const struct mon_merge_rep *
rep_of(const struct mon_merge_rep *reps, size_t n, int64_t pool, uint32_t seed)
{
	size_t lo = 0, hi = n;

	while (lo < hi) { /* the first >= (pool, seed, newest) */
		size_t mid = lo + (hi - lo) / 2;

		if (reps[mid].pool < pool || (reps[mid].pool == pool && reps[mid].seed < seed))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && reps[lo].pool == pool && reps[lo].seed == seed ? &reps[lo] : NULL;
}

/* Does every source of the step from -> to sit where its target does? */
static bool
placed_together(const Cairn__Map__OsdMap *m, const Cairn__Map__Pool *p, uint32_t to)
{
	struct mon_placement pl;
	char err[MON_ERRLEN];
	uint32_t half = mon_merge_half(p->pg_num);
	bool ok = true;

	if (mon_placement_build(m, &pl, err))
		return false;
	for (uint32_t s = to; s < p->pg_num && ok; s++) {
		int32_t a[64], b[64];
		int pa = -1, pb = -1;
		int na = mon_placement_pg_up(&pl, p, s, a, &pa);
		int nb = mon_placement_pg_up(&pl, p, s - half, b, &pb);

		ok = na == nb && na >= 0 && pa == pb && memcmp(a, b, sizeof(*a) * (size_t)na) == 0;
		if (!ok)
			CM_LOG_RL(CM_LOG_INFO,
				  "pool %s: PG %x is not placed where %x is: the merge waits",
				  p->name, s, s - half);
	}
	mon_placement_free(&pl);
	return ok;
}

static bool
all_clean(const Cairn__Map__OsdMap *m, const Cairn__Map__Pool *p, const struct mon_merge_rep *reps,
	  size_t n)
{
	for (uint32_t s = 0; s < p->pg_num; s++) {
		const struct mon_merge_rep *r = rep_of(reps, n, p->id, s);

		if (!r || !r->clean || r->epoch < m->epoch)
			return false;
	}
	return true;
}

/* Ready since the step began (a report from before it may be of writes since). */
static const struct mon_merge_rep *
ready_rep(const Cairn__Map__Pool *p, const struct mon_merge_rep *reps, size_t n, uint32_t s)
{
	const struct mon_merge_rep *r = rep_of(reps, n, p->id, s);

	return r && r->ready && r->epoch >= p->pending_epoch ? r : NULL;
}

static int
add_edit(struct mon_merge_edit **out, size_t *nout, const struct mon_merge_edit *e)
{
	struct mon_merge_edit *g = realloc(*out, (*nout + 1) * sizeof(*g));

	if (!g)
		return -ENOMEM;
	*out = g;
	g[(*nout)++] = *e;
	return 0;
}

/* The step's sources and their versions, if every one and its target is ready. */
static int
commit_edit(const Cairn__Map__Pool *p, const struct mon_merge_rep *reps, size_t n,
	    struct mon_merge_edit *e)
{
	uint32_t half = mon_merge_half(p->pg_num);

	*e = (struct mon_merge_edit){
		.kind = MON_MERGE_COMMIT, .pool = p->id, .from = p->pg_num, .to = p->pg_num_pending
	};
	for (uint32_t s = p->pg_num_pending; s < p->pg_num; s++)
		if (!ready_rep(p, reps, n, s) || !ready_rep(p, reps, n, s - half))
			return 1;
	e->nsrc = p->pg_num - p->pg_num_pending;
	e->src = calloc(e->nsrc, sizeof(*e->src));
	if (!e->src)
		return -ENOMEM;
	for (uint32_t s = p->pg_num_pending; s < p->pg_num; s++) {
		const struct mon_merge_rep *a = ready_rep(p, reps, n, s),
					   *b = ready_rep(p, reps, n, s - half);
		Cairn__Map__MergeSource *ms = &e->src[s - p->pg_num_pending];

		cairn__map__merge_source__init(ms);
		ms->seed = s;
		ms->src_epoch = a->lu_epoch;
		ms->src_seq = a->lu_seq;
		ms->tgt_epoch = b->lu_epoch;
		ms->tgt_seq = b->lu_seq;
	}
	return 0;
}

/* Has pool any pinned PG (an EC placement still moving, mon/ec_pin.h)? */
static bool
pool_pinned(const Cairn__Map__OsdMap *m, int64_t pool)
{
	for (size_t i = 0; i < m->n_pg_pins; i++)
		if (m->pg_pins[i]->pool == pool)
			return true;
	return false;
}

/* The edit pool p needs now: 0 (in *e), 1 (none), -ENOMEM. */
static int
pool_decide(const Cairn__Map__OsdMap *m, const Cairn__Map__Pool *p,
	    const struct mon_merge_rep *reps, size_t n, uint64_t now_ns, struct mon_merge_edit *e)
{
	int rc;

	if (!p->pg_num_target && !p->pg_num_pending && p->pgp_num < p->pg_num) {
		/* Split: place the children on their own OSDs, a doubling at a
		 * time (EC: once the last doubling's pins have all gone). */
		uint32_t to = p->pgp_num * 2 < p->pg_num ? p->pgp_num * 2 : p->pg_num;

		if ((m->flags & MON_FLAG_NOREBALANCE) || !all_clean(m, p, reps, n) ||
		    (p->erasure && pool_pinned(m, p->id)))
			return 1;
		*e = (struct mon_merge_edit){
			.kind = MON_MERGE_PGP, .pool = p->id, .from = p->pg_num, .to = to
		};
		return 0;
	}
	if (!p->pg_num_target || p->pg_num_target >= p->pg_num || p->pgp_num > p->pg_num_target)
		return 1;
	if (!p->pg_num_pending) {
		uint32_t half = mon_merge_half(p->pg_num);
		uint32_t to = p->pg_num_target > half ? p->pg_num_target : half;

		/* (EC: and no PG pinned: a step must not move one mid-merge) */
		if (!all_clean(m, p, reps, n) || !placed_together(m, p, to) ||
		    (p->erasure && pool_pinned(m, p->id)))
			return 1;
		*e = (struct mon_merge_edit){
			.kind = MON_MERGE_START, .pool = p->id, .from = p->pg_num, .to = to
		};
		return 0;
	}
	rc = commit_edit(p, reps, n, e);
	if (rc > 0) {
		/* (a start time ahead of our clock is another leader's: give up) */
		if (now_ns >= p->pending_ns && now_ns < p->pending_ns + MON_MERGE_PENDING_MS * MS)
			return 1;
		*e = (struct mon_merge_edit){ .kind = MON_MERGE_GIVE_UP,
					      .pool = p->id,
					      .from = p->pg_num,
					      .to = p->pg_num_pending };
		rc = 0;
	}
	e->pending_epoch = p->pending_epoch;
	return rc;
}

int
mon_merge_decide(const Cairn__Map__OsdMap *m, const struct mon_merge_rep *reps, size_t n,
		 uint64_t now_ns, struct mon_merge_edit **out, size_t *nout)
{
	struct mon_merge_rep *sorted = NULL;
	int rc = 0;

	*out = NULL;
	*nout = 0;
	if (n) {
		sorted = malloc(n * sizeof(*sorted));
		if (!sorted)
			return -ENOMEM;
		memcpy(sorted, reps, n * sizeof(*sorted));
		qsort(sorted, n, sizeof(*sorted), rep_cmp);
	}
	for (size_t i = 0; i < m->n_pools && rc >= 0; i++) {
		struct mon_merge_edit e;

		rc = pool_decide(m, m->pools[i], sorted, n, now_ns, &e);
		if (rc == 0 && add_edit(out, nout, &e)) {
			free(e.src);
			rc = -ENOMEM;
		}
	}
	free(sorted);
	if (rc < 0) {
		mon_merge_edits_free(*out, *nout);
		*out = NULL;
		*nout = 0;
		return rc;
	}
	return 0;
}

void
mon_merge_edits_free(struct mon_merge_edit *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(e[i].src);
	free(e);
}

/* pool's last_merge := the step e (the map's allocator is malloc: free_unpacked frees it). */
static int
record_step(Cairn__Map__Pool *p, const struct mon_merge_edit *e, uint64_t epoch)
{
	Cairn__Map__MergeStep *st = calloc(1, sizeof(*st));
	Cairn__Map__MergeSource **v = calloc(e->nsrc + 1, sizeof(*v));

	if (!st || !v) {
		free(st);
		free(v);
		return -ENOMEM;
	}
	cairn__map__merge_step__init(st);
	st->sources = v;
	for (size_t i = 0; i < e->nsrc; i++) {
		v[i] = malloc(sizeof(*v[i]));
		if (!v[i]) {
			cairn__map__merge_step__free_unpacked(st, NULL);
			return -ENOMEM;
		}
		*v[i] = e->src[i];
		st->n_sources = i + 1;
	}
	st->from = e->from;
	st->to = e->to;
	st->epoch = epoch;
	if (p->last_merge)
		cairn__map__merge_step__free_unpacked(p->last_merge, NULL);
	p->last_merge = st;
	return 0;
}

int
mon_merge_apply(const struct mon_merge_edit *e, size_t n, Cairn__Map__OsdMap *m, uint64_t now_ns)
{
	int changed = 0;

	for (size_t i = 0; i < n; i++) {
		Cairn__Map__Pool *p = mon_pool_find_id(m, e[i].pool);

		if (!p || p->pg_num != e[i].from)
			continue;
		switch (e[i].kind) {
		case MON_MERGE_START:
			if (p->pg_num_pending || !p->pg_num_target || p->pg_num_target > e[i].to ||
			    p->pgp_num > e[i].to)
				continue;
			p->pg_num_pending = e[i].to;
			p->pending_epoch = m->epoch + 1; /* the map this edit makes */
			p->pending_ns = now_ns;
			CM_NOTICE("pool %s: merging pg_num %u -> %u (on the way to %u): pausing "
				  "%u PGs and their targets",
				  p->name, p->pg_num, e[i].to, p->pg_num_target,
				  p->pg_num - e[i].to);
			break;
		case MON_MERGE_COMMIT:
			/* the same step: not one that gave up and began again since */
			if (p->pg_num_pending != e[i].to || p->pending_epoch != e[i].pending_epoch)
				continue;
			if (record_step(p, &e[i], m->epoch + 1))
				return -ENOMEM;
			p->pg_num = e[i].to;
			p->pg_num_pending = 0;
			p->pending_epoch = p->pending_ns = 0;
			if (p->pg_num_target >= p->pg_num)
				p->pg_num_target = 0; /* there */
			CM_NOTICE("pool %s: pg_num %u -> %u merged", p->name, e[i].from, e[i].to);
			break;
		case MON_MERGE_PGP:
			if (p->pg_num_target || p->pg_num_pending || p->pgp_num >= e[i].to ||
			    e[i].to > p->pg_num)
				continue;
			CM_NOTICE("pool %s: pgp_num %u -> %u (placing split PGs on their own OSDs)",
				  p->name, p->pgp_num, e[i].to);
			p->pgp_num = e[i].to;
			break;
		case MON_MERGE_GIVE_UP:
			/* the same step: not one that gave up and began again since */
			if (p->pg_num_pending != e[i].to || p->pending_epoch != e[i].pending_epoch)
				continue;
			p->pg_num_pending = 0;
			p->pending_epoch = p->pending_ns = 0;
			CM_WARN("pool %s: merge step %u -> %u not ready within %u s: its PGs go on; "
				"trying again once every PG is clean",
				p->name, e[i].from, e[i].to, MON_MERGE_PENDING_MS / 1000);
			break;
		}
		changed++;
	}
	return changed;
}
