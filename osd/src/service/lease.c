/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Read leases (replicated pools): a primary cut off from the cluster must
 * not serve reads once a new primary may have taken writes.
 *
 * A primary serves a read only while every other OSD of the acting set
 * renewed its lease within osd_read_lease: a heartbeat reply with `renew`
 * counts from the ping's send time (the primary's clock). A peer renews
 * only a pinger whose map is at least as new as the newest this OSD
 * applied, so once it has a map that ends an interval it renews that
 * interval's primary no more unless the primary has the map too (and so
 * knows it is no longer primary there).
 *
 * A new primary serves no read until every lease a primary of a past
 * interval may still hold is over: each peer that was in such an interval
 * tells in its notify how long the last lease it renewed there can last
 * (zero when that primary's map had gone past the interval, when it was
 * marked down because its process is gone, or when it has booted again
 * since), and the new primary counts its own renewals the same way. One
 * answer per interval suffices: that primary needed all of them.
 *
 * Durations only cross the wire, never clock readings; a lease starts at
 * the ping's send (before the peer saw it) and the wait at the notify's
 * arrival (after the peer wrote it), so both err on the safe side. With
 * osd_read_lease below osd_heartbeat_grace a primary cut off for long
 * enough to be marked down by silence has no lease left by then, and the
 * new primary waits nothing.
 *
 * Erasure-coded pools need none: a read gathers k shards at one version and
 * a write of a new interval reaches at least k + 1 of k + m (m <= k), so a
 * cut-off primary cannot find k shards of an overwritten version.
 */
#include "osd_int.h"
#include "cm/log.h"

CM_LOG_SUBSYS(osd);

#define NS_PER_MS 1000000ull

static struct osd_lease *
lease_of(const struct osd *o, int32_t id)
{
	if (!o->node || !o->node->lease || id < 0 || id >= OSD_LEASE_IDS)
		return NULL;
	return &o->node->lease[id];
}

static uint64_t
lease_ns(const struct osd *o)
{
	return o->cfg->read_lease_ms * NS_PER_MS;
}

void
osd__lease_note_epoch(struct osd *o, uint64_t epoch)
{
	uint64_t cur;

	if (!o->node)
		return;
	cur = atomic_load(&o->node->max_epoch);
	while (cur < epoch && !atomic_compare_exchange_weak(&o->node->max_epoch, &cur, epoch))
		;
}

bool
osd__lease_grant(struct osd *o, int32_t from, uint64_t epoch)
{
	struct osd_lease *l = lease_of(o, from);

	if (!l || epoch < atomic_load(&o->node->max_epoch))
		return false;
	atomic_store(&l->renew_ns, cm_now_ns());
	atomic_store(&l->renew_epoch, epoch);
	/* A shard may have applied a newer map meanwhile and told a new
	 * primary how long to wait without this renewal: then none (the
	 * record stays, which only makes a later wait longer). */
	return epoch >= atomic_load(&o->node->max_epoch);
}

void
osd__lease_renewed(struct osd *o, int32_t from, uint64_t stamp_ns)
{
	struct osd_lease *l = lease_of(o, from);
	uint64_t until = stamp_ns + lease_ns(o);

	if (l && until > atomic_load(&l->until_ns))
		atomic_store(&l->until_ns, until);
}

static bool
pool_replicated(const struct osd *o, int64_t pool)
{
	for (size_t i = 0; o->map && i < o->map->n_pools; i++)
		if (o->map->pools[i]->id == pool)
			return !o->map->pools[i]->erasure;
	return false;
}

void
osd__lease_wait_add(struct osd_lease_wait *w, int *n, int32_t osd, uint64_t until_ns)
{
	for (int i = 0; i < *n; i++)
		if (w[i].osd == osd) {
			w[i].until_ns = CM_MAX(w[i].until_ns, until_ns);
			return;
		}
	if (*n < OSD_PGA_MAX_IV)
		w[(*n)++] = (struct osd_lease_wait){ osd, until_ns };
	else /* never more primaries than intervals: keep the latest end anyway */
		w[*n - 1].until_ns = CM_MAX(w[*n - 1].until_ns, until_ns);
}

void
osd__lease_waits(struct osd *o, int64_t pool, uint32_t seed, int32_t except,
		 struct osd_lease_wait *w, int *n)
{
	uint64_t lease = lease_ns(o), now = cm_now_ns();
	struct osd_pga *x;
	bool fresh;

	if (!lease || !o->map || !pool_replicated(o, pool))
		return;
	x = osd__pga_get(o, pool, seed, &fresh);
	for (int i = 0; x && i < x->niv; i++) {
		const struct osd_piv *iv = &x->iv[i];
		const Cairn__Map__Osd *mo;
		const struct osd_lease *l;
		uint64_t rn, re;
		bool member = false;

		if (iv->last == OSD_PIV_OPEN || iv->n == 0)
			continue;
		for (int k = 0; k < iv->n; k++)
			member |= iv->a[k] == o->id;
		/* Its primary: the first of a replicated acting set. */
		if (!member || iv->a[0] == o->id || iv->a[0] == except ||
		    !(l = lease_of(o, iv->a[0])))
			continue;
		re = atomic_load(&l->renew_epoch);
		rn = atomic_load(&l->renew_ns);
		mo = mon_osd_find(o->map, iv->a[0]);
		/* Never renewed; renewed only once its map was past the interval;
		 * its process is gone (down on a refused connection) or it has
		 * booted since: no lease of that interval is left. */
		if (!rn || re > iv->last || (mo && !mo->up && mo->dead) ||
		    (mo && mo->up && mo->up_since > re) || rn + lease <= now)
			continue;
		osd__lease_wait_add(w, n, iv->a[0], rn + lease);
	}
}

bool
osd__pg_readable(struct osd_pg *pg)
{
	struct osd *o = pg->osd;
	uint64_t lease = lease_ns(o), now;

	if (!lease || pg->ec || pg->primary != o->id || !pool_replicated(o, pg->pool))
		return true;
	now = cm_now_ns();
	if (now < pg->reads_after_ns)
		return false;
	for (int i = 0; i < pg->nacting; i++) {
		const struct osd_lease *l = lease_of(o, pg->acting[i]);

		if (pg->acting[i] == o->id)
			continue;
		/* An eighth of the lease is kept back for the read itself. */
		if (!l || atomic_load(&l->until_ns) <= now + lease / 8) {
			atomic_store(&o->node->ping_soon, true);
			return false;
		}
	}
	return true;
}
