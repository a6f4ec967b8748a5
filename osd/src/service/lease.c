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
 * A new primary serves nothing (reads, and writes too: one acknowledged
 * while an old primary still serves reads would let it answer older data
 * after it) until every lease a primary of a past interval may still hold
 * is over: each peer that was in such an interval tells in its notify how
 * long the last lease it granted there can last (none when that primary's
 * map had gone past the interval, when it was marked down because its
 * process is gone, or when it has booted again since), and the new primary
 * counts its own grants the same way. One answer per interval suffices:
 * that primary needed all of them. Intervals are remembered for this apart
 * from the past intervals peering keeps (osd_pga.recent: activation trims
 * those), and the wait is never shortened by a later peering of the PG.
 * An OSD that restarted less than a lease ago does not know what it
 * granted before: it names every past primary it knows, to be waited for
 * until its start + osd_read_lease, unless that primary answers.
 *
 * Durations only cross the wire, never clock readings; a lease starts at
 * the ping's send (before the peer saw it) and the wait at the notify's
 * arrival (after the peer wrote it), so both err on the safe side. With
 * osd_read_lease below osd_heartbeat_grace a primary cut off for long
 * enough to be marked down by silence has no lease left by then, and the
 * new primary waits nothing.
 *
 * Erasure-coded pools with min_size > m need none: a read gathers k shards
 * at one version and a write of a new interval reaches at least min_size of
 * k + m, so a cut-off primary cannot find k shards of an overwritten
 * version (k + m - min_size < k). Those with min_size <= m use leases too.
 *
 * Grants carry their length (the pinger's osd_read_lease), so OSDs with
 * different settings agree on every lease; the restart rule assumes one
 * setting cluster-wide.
 */
#include "osd_int.h"
#include "cm/log.h"

#include <time.h>

CM_LOG_SUBSYS(osd);

#define NS_PER_MS 1000000ull

uint64_t
osd__lease_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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
	if (o->node->shard_epoch)
		atomic_store(&o->node->shard_epoch[o->shard], epoch);
	cur = atomic_load(&o->node->max_epoch);
	while (cur < epoch && !atomic_compare_exchange_weak(&o->node->max_epoch, &cur, epoch))
		;
}

uint64_t
osd__lease_epoch(struct osd *o)
{
	uint64_t e = o->epoch;

	for (unsigned k = 0; o->node && o->node->shard_epoch && k < o->node->n; k++)
		e = CM_MIN(e, atomic_load(&o->node->shard_epoch[k]));
	return e;
}

bool
osd__lease_grant(struct osd *o, int32_t from, uint64_t epoch, uint64_t ms)
{
	struct osd_lease *l = lease_of(o, from);
	uint64_t until;

	if (!l || !ms || epoch < atomic_load(&o->node->max_epoch))
		return false;
	until = osd__lease_now() + ms * NS_PER_MS;
	/* The epoch first: a reader that sees the new end sees the epoch too
	 * (or an older one, which only makes its wait longer). */
	atomic_store(&l->renew_epoch, epoch);
	if (until > atomic_load(&l->renew_until_ns))
		atomic_store(&l->renew_until_ns, until);
	/* A shard may have applied a newer map meanwhile and told a new
	 * primary how long to wait without this grant: then none (the record
	 * stays, which only makes a later wait longer). */
	return epoch >= atomic_load(&o->node->max_epoch);
}

void
osd__lease_renewed(struct osd *o, int32_t from, uint64_t stamp, uint64_t ms)
{
	struct osd_lease *l = lease_of(o, from);
	uint64_t until = stamp + CM_MIN(ms * NS_PER_MS, lease_ns(o));

	if (l && until > atomic_load(&l->until_ns))
		atomic_store(&l->until_ns, until);
}

void
osd__lease_closed(struct osd_pga *x, const struct osd_piv *iv)
{
	if (!iv->n)
		return;
	if (x->nrecent == OSD_PGA_RECENT) {
		memmove(x->recent, x->recent + 1, sizeof(x->recent[0]) * (OSD_PGA_RECENT - 1));
		memmove(x->recent_ns, x->recent_ns + 1,
			sizeof(x->recent_ns[0]) * (OSD_PGA_RECENT - 1));
		x->nrecent--;
	}
	x->recent[x->nrecent] = *iv;
	x->recent_ns[x->nrecent++] = osd__lease_now();
}

/* Erasure-coded pools with min_size > m need no leases (file comment). */
static bool
pool_needs_lease(struct osd *o, int64_t pool)
{
	const Cairn__Map__Pool *p = osd__pool(o, pool);

	return p && (!p->erasure || p->min_size <= p->ec_m);
}

bool
osd__lease_wait_add(struct osd_lease_wait *w, int *n, int32_t osd, uint64_t until_ns)
{
	for (int i = 0; i < *n; i++)
		if (w[i].osd == osd) {
			w[i].until_ns = CM_MAX(w[i].until_ns, until_ns);
			return true;
		}
	if (*n >= OSD_LEASE_WAITS)
		return false; /* not reached: one primary per interval kept */
	w[(*n)++] = (struct osd_lease_wait){ osd, until_ns };
	return true;
}

/* One past interval iv (closed at map iv->last): add its primary's wait.
 * \return false when w was full. */
static bool
wait_for(struct osd *o, const struct osd_piv *iv, int32_t except, uint64_t now, bool restarted,
	 struct osd_lease_wait *w, int *n)
{
	int32_t p = iv->n ? iv->a[0] : -1; /* a replicated acting set's first is its primary */
	const Cairn__Map__Osd *mo;
	const struct osd_lease *l;
	uint64_t ru, re;
	bool member = false;

	for (int k = 0; k < iv->n; k++)
		member |= iv->a[k] == o->id;
	if (!member || p < 0 || p == o->id || p == except || !(l = lease_of(o, p)))
		return true;
	mo = mon_osd_find(o->map, p);
	if (mo && !mo->up && mo->dead)
		return true; /* its process is gone */
	/* We cannot tell what we granted before our start. */
	if (restarted && !osd__lease_wait_add(w, n, p, o->node->start_ns + lease_ns(o)))
		return false;
	re = atomic_load(&l->renew_epoch);
	ru = atomic_load(&l->renew_until_ns);
	/* Granted only once its map was past the interval, or to an
	 * incarnation that has booted again since: no lease of it is left. */
	if (!ru || ru <= now || re > iv->last || (mo && mo->up && mo->up_since > re))
		return true;
	return osd__lease_wait_add(w, n, p, ru);
}

bool
osd__lease_waits(struct osd *o, int64_t pool, uint32_t seed, int32_t except,
		 struct osd_lease_wait *w, int *n)
{
	uint64_t lease = lease_ns(o), now = osd__lease_now();
	struct osd_pga *x;
	bool fresh, restarted, ok = true;

	if (!lease || !o->map || !o->node || !pool_needs_lease(o, pool))
		return true;
	restarted = now < o->node->start_ns + lease;
	x = osd__pga_get(o, pool, seed, &fresh);
	for (int i = 0; x && i < x->niv; i++)
		if (x->iv[i].last != OSD_PIV_OPEN)
			ok &= wait_for(o, &x->iv[i], except, now, restarted, w, n);
	for (int i = 0; x && i < x->nrecent; i++)
		ok &= wait_for(o, &x->recent[i], except, now, restarted, w, n);
	return ok;
}

bool
osd__pg_readable(struct osd_pg *pg)
{
	struct osd *o = pg->osd;
	uint64_t lease = lease_ns(o), now;

	if (!lease || pg->primary != o->id || !pool_needs_lease(o, pg->pool))
		return true;
	now = osd__lease_now();
	if (now < pg->reads_after_ns)
		return false;
	for (int i = 0; i < pg->nacting; i++) {
		const struct osd_lease *l = lease_of(o, pg->acting[i]);

		if (pg->acting[i] == o->id || pg->acting[i] < 0)
			continue;
		/* An eighth of the lease is kept back for the op itself. */
		if (!l || atomic_load(&l->until_ns) <= now + lease / 8) {
			atomic_store(&o->node->ping_soon, true);
			return false;
		}
	}
	return true;
}
