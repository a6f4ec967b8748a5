/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A new map: every PG's acting set, new intervals, prior sets, and which
 * PGs start peering.
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(pg);

/*
 * A new interval: drop every op of the PG (clients resend when they see the
 * acting set change; the log answers those already applied).
 */
static void
pg_reset_interval(struct osd_pg *pg)
{
	struct osd_repop *rp, *rtmp;
	struct osd_op *op;

	osd__rec_reset(pg);
	pg->retry_ms = 0;
	pg->repop_failed = false;
	/* (reads_after_ns and lw stay: a lease wait outlives any re-peering.) */
	pg->nanswered = 0;
	pg->roll_stuck = true; /* until the next activation */
	TAILQ_FOREACH_SAFE(rp, &pg->repops, link, rtmp) {
		rp->op = NULL; /* the op is freed below */
		if (rp->local_pending) {
			rp->waiting = 1; /* keep it for the local commit's callback */
		} else {
			TAILQ_REMOVE(&pg->repops, rp, link);
			free(rp);
		}
	}
	while ((op = TAILQ_FIRST(&pg->running))) {
		TAILQ_REMOVE(&pg->running, op, link);
		op->queued = false;
		if (op->busy)
			op->dropped = true;
		else
			osd__op_free(op);
	}
	while ((op = TAILQ_FIRST(&pg->waiting))) {
		TAILQ_REMOVE(&pg->waiting, op, link);
		op->queued = false;
		osd__op_free(op);
	}
	osd__watch_reset(pg, true);
}

void
osd__pg_hide(struct osd_pg *pg)
{
	struct osd_op *op;

	/*
	 * A split or merge: the client sees no new acting set, so it would
	 * resend a dropped op only after its 5 s timer. Ops not started wait
	 * on the OSD instead (dispatched again once the PG is back); running
	 * ones are dropped and their clients told to send again at once (the
	 * PG log answers one that was applied).
	 */
	while ((op = TAILQ_FIRST(&pg->waiting))) {
		TAILQ_REMOVE(&pg->waiting, op, link);
		op->pg = NULL;
		TAILQ_INSERT_TAIL(&pg->osd->wait_map, op, link);
	}
	TAILQ_FOREACH(op, &pg->running, link)
		osd__op_push_back(op);
	pg_reset_interval(pg);
	pg->state = OSD_PG_NONE;
	pg->nacting = 0;
}

void
osd__pg_restart(struct osd_pg *pg)
{
	pg_reset_interval(pg);
	osd__pg_start_peering(pg);
}

/* Peering or recovering (an active PG too, while its recovery runs). */
static bool
pg_settling(const struct osd_pg *pg)
{
	return pg->state == OSD_PG_PEERING || pg->state == OSD_PG_RECOVERING ||
	       pg->state == OSD_PG_BACKFILLING || pg->rec_pending;
}

void
osd__pg_peer_reset(struct osd *o, int32_t peer)
{
	osd__rec_peer_reset(o, peer);
	osd__backends_peer_reset(o, peer);
	for (size_t b = 0; b < o->npg_b; b++)
		for (struct osd_pg *pg = o->pgs[b]; pg; pg = pg->hnext) {
			if (pg->primary != o->id)
				continue;
			if (!pg_settling(pg))
				continue;
			for (int i = 0; i < pg->nslots; i++)
				if (pg->slot_osd[i] == peer) {
					/* Start over on a fresh session, from the tick: a peer
					 * whose sessions keep failing must not make us re-peer
					 * in a loop. */
					uint64_t at = cm_now_ms() + 500;

					if (!pg->retry_ms || pg->retry_ms > at)
						pg->retry_ms = at;
					break;
				}
		}
}

/*
 * While peering or recovering (active ones too): did a slot OSD restart (or get a new
 * address) since we asked it? Its answers may never come: ask again.
 */
static bool
peers_restarted(struct osd_pg *pg)
{
	if (!pg_settling(pg))
		return false;
	for (int i = 0; i < pg->nslots; i++) {
		const Cairn__Map__Osd *mo = mon_osd_find(pg->osd->map, pg->slot_osd[i]);

		if (pg->slot_osd[i] != pg->osd->id && (!mo || mo->up_since != pg->peer_up_since[i]))
			return true;
	}
	return false;
}

/*
 * An active primary: did an acting OSD restart (a new incarnation, same
 * set) since peering talked to it? Changes in flight to the old one are
 * lost with its session, and a write waiting for its commit would wait
 * forever (holding every later op on that object): that is a new interval,
 * as a change of the set is.
 */
static bool
acting_restarted(const struct osd_pg *pg)
{
	if (pg->primary != pg->osd->id || pg->state != OSD_PG_ACTIVE || pg_settling(pg))
		return false;
	for (int i = 0; i < pg->nacting && i < pg->nslots; i++) {
		const Cairn__Map__Osd *mo = mon_osd_find(pg->osd->map, pg->acting[i]);

		if (pg->acting[i] == pg->osd->id || pg->slot_osd[i] != pg->acting[i] ||
		    !pg->peer_up_since[i])
			continue;
		if (mo && mo->up_since != pg->peer_up_since[i])
			return true;
	}
	return false;
}

static void
pg_on_map_once(struct osd *o)
{
	const Cairn__Map__OsdMap *m = o->map;
	struct os_txn *mt = NULL;

	for (size_t p = 0; p < m->n_pools; p++) {
		const Cairn__Map__Pool *pool = m->pools[p];

		for (uint32_t seed = 0; seed < pool->pg_num; seed++) {
			int32_t up[64];
			int primary = -1, n, k = 0;
			int32_t acting[OSD_MAX_ACTING], before[OSD_MAX_ACTING];
			uint8_t shard[OSD_MAX_ACTING];
			int nbefore;
			struct osd_pg *pg;
			bool mine = false, changed, made = false;

			if (!osd_pg_mine(o, seed))
				continue; /* another shard's */
			n = mon_placement_pg_up(&o->pl, pool, seed, up, &primary);
			for (int i = 0; i < n && k < OSD_MAX_ACTING; i++) {
				if (up[i] == CRUSH_ITEM_NONE)
					continue;
				shard[k] = osd_backend_of(pool)->shard_of(i, k);
				acting[k++] = up[i];
				mine |= up[i] == o->id;
			}
			pg = osd__pg_find_any(o, pool->id, seed);
			{
				bool fresh;
				struct osd_pga *x = osd__pga_get(o, pool->id, seed, &fresh);

				if (x && fresh)
					x->known = o->pg_maps > 0; /* made since we run */
				nbefore = 0;
				if (x && !fresh && x->epoch == m->epoch) {
					nbefore = x->nb;
					memcpy(before, x->b, sizeof(*before) * (size_t)x->nb);
				} else if (x && !fresh) {
					nbefore = x->n;
					memcpy(before, x->a, sizeof(*before) * (size_t)x->n);
				}
				if (x && x->epoch != m->epoch) {
					x->epoch = m->epoch;
					x->nb = nbefore;
					memcpy(x->b, before, sizeof(*before) * (size_t)nbefore);
				}
				/*
				 * An empty acting set (every holder down) is not
				 * "before": the next interval must still hear
				 * from the last OSDs that held the PG, else a
				 * PG whose holders all died and went out would
				 * start empty on its new OSDs.
				 */
				if (x && k > 0) {
					x->n = k;
					memcpy(x->a, acting, sizeof(*acting) * (size_t)k);
				}
				if (x &&
				    osd__pga_note(x, m->epoch, acting, k,
						  (unsigned)k >=
							  (pool->min_size ? pool->min_size : 1)))
					osd__pivs_save(o, &mt, x);
			}
			if (pg && osd__merge_on_map_pg(pg, pool))
				continue; /* it goes on once the merge committed */
			if (pg && pg->split_wait) {
				if (osd__split_child_waits(o, pool->id, seed))
					continue; /* an ancestor's split on this OSD makes it */
				(void)osd__split_adopt(pg); /* made meanwhile: load it */
			}
			if (pg && pg->in_store && !pg->splitting && !pg->split_for) {
				/* A copy made before splits: it is split for today's count. */
				pg->split_for = pool->pg_num;
				if (mt || os_txn_create(&mt) == 0)
					(void)osd__split_txn(pg, mt, pg->split_for);
			}
			if (pg && pg->in_store && !pg->splitting && !pg->creating &&
			    pg->split_for < pool->pg_num) {
				osd__pg_hide(pg);
				osd__split_start(pg, pool);
			}
			if (pg && pg->splitting)
				continue; /* its children and it go on once it committed */
			if (pg && !pg->splitting && !pg->creating && !pg->split_wait &&
			    ((pg->in_store && pg->split_for > pool->pg_num) ||
			     (pg->nmq && o->pl_ok)) &&
			    osd__merge_target_on_map(pg, pool, &mt))
				continue; /* sources merge into it first */
			if (!mine || !o->booted) {
				if (pg && pg->state != OSD_PG_NONE) {
					pg_reset_interval(pg);
					pg->state = OSD_PG_NONE;
					pg->primary = primary;
					pg->nacting = 0;
				}
				continue;
			}
			if (!pg || pg->merged_away || (!pg->in_store && !pg->creating)) {
				/* New to us, a source merged away here before (its
				 * collection is gone, its struct stayed), or a stray
				 * copy we removed: if an ancestor's split on this OSD
				 * makes it, wait for that (creating it empty would make
				 * the split fail: the child exists). */
				bool wait = osd__split_child_waits(o, pool->id, seed);

				if (!pg || pg->merged_away)
					made = true;
				if (!pg)
					pg = osd__pg_new(o, pool->id, seed);
				if (!pg)
					continue;
				pg->merged_away = false;
				if (wait) {
					pg->split_wait = true;
					CM_INFO("%s: waits for its parent's split", pg->cid);
					continue;
				}
			}
			changed = pg->state == OSD_PG_NONE || pg->primary != primary ||
				  pg->nacting != k ||
				  memcmp(pg->acting, acting, sizeof(*acting) * (size_t)k) != 0 ||
				  memcmp(pg->shard, shard, (size_t)k) != 0 ||
				  (pg->primary == primary && acting_restarted(pg));
			pg->size = pool->size;
			pg->be = osd_backend_of(pool);
			pg->be->attach(o, pg, pool);
			pg->min_size = pool->min_size ? pool->min_size : 1;
			if (!changed) {
				if (pg->primary == o->id &&
				    (pg->state == OSD_PG_DOWN || pg->state == OSD_PG_INCOMPLETE ||
				     pg->retry_ms || peers_restarted(pg)))
					osd__pg_start_peering(pg);
				continue;
			}
			osd__set_prior(pg, before, nbefore, acting, k);
			pg_reset_interval(pg);
			memcpy(pg->acting, acting, sizeof(*acting) * (size_t)k);
			memcpy(pg->shard, shard, (size_t)k);
			pg->nacting = k;
			pg->my_shard = -1;
			for (int i = 0; i < k; i++)
				if (acting[i] == o->id)
					pg->my_shard = shard[i];
			pg->primary = primary;
			pg->interval_epoch = m->epoch;
			osd__prior_save(pg, false);
			/* A split on another PG shard may have made it: load, not create
			 * (only a PG new to us: a stray being removed is still in the
			 * store until its removal commits). */
			if (!pg->in_store && !pg->creating && made)
				(void)osd__split_adopt(pg);
			if (!pg->in_store) {
				pg->state = OSD_PG_CREATING;
				/* A new copy is empty: split for today's count (a stray's
				 * old record must not stay). */
				pg->split_for = pool->pg_num;
				if (!pg->creating)
					osd__pg_create_in_store(pg);
				continue;
			}
			if (primary == o->id)
				osd__pg_start_peering(pg);
			else
				pg->state = OSD_PG_REPLICA;
		}
		osd__merge_sources_on_map(o, pool);
	}
	if (mt)
		osd__queue(o, mt, NULL, NULL);
	o->pg_maps++;
}

/*
 * Also called from store callbacks (a split committed, a PG made): one at a
 * time; a call while one runs (a callback that ran inline) makes it go
 * round once more instead of nesting.
 */
void
osd__pg_on_map(struct osd *o)
{
	if (o->pg_map_running) {
		o->pg_map_again = true;
		return;
	}
	o->pg_map_running = true;
	do {
		o->pg_map_again = false;
		pg_on_map_once(o);
	} while (o->pg_map_again && o->map && o->pl_ok);
	o->pg_map_running = false;
}
