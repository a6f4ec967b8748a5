/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Peering: queries to the acting and prior OSDs, their notifies, and
 * activation.
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(pg);

/* ---------- intervals and peering ---------- */

void
osd__pg_activate(struct osd_pg *pg)
{
	struct osd_op *op;
	TAILQ_HEAD(, osd_op) q = TAILQ_HEAD_INITIALIZER(q);

	struct osd_pga *x = osd__pg_pga(pg);
	uint64_t now = osd__lease_now();

	/* Our own grants count too. A past primary that answered this peering
	 * has our map: it serves no more, whatever lease it holds. The wait is
	 * never shortened (an earlier peering of the PG may have set it). */
	if (!osd__lease_waits(pg->osd, pg->pool, pg->seed, -1, pg->lw, &pg->nlw))
		pg->lw_other_ns =
			CM_MAX(pg->lw_other_ns, now + pg->osd->cfg->read_lease_ms * 1000000);
	if (pg->lw_other_ns > now && pg->lw_other_ns > pg->reads_after_ns) {
		pg->reads_after_ns = pg->lw_other_ns;
		CM_NOTICE("%s: ops wait %" PRIu64 " ms for past primaries' read leases", pg->cid,
			  (pg->lw_other_ns - now) / 1000000);
	}
	for (int i = 0; i < pg->nlw; i++) {
		/* (A peer may not know us as the asker: never wait for ourselves.) */
		bool answered = pg->lw[i].osd == pg->osd->id ||
				osd__has_osd(pg->answered, pg->nanswered, pg->lw[i].osd);

		if (answered || pg->lw[i].until_ns <= now ||
		    pg->lw[i].until_ns <= pg->reads_after_ns)
			continue;
		pg->reads_after_ns = pg->lw[i].until_ns;
		CM_NOTICE("%s: ops wait %" PRIu64
			  " ms: osd.%d, a past primary, may hold a read lease",
			  pg->cid, (pg->lw[i].until_ns - now) / 1000000, pg->lw[i].osd);
	}
	pg->nlw = 0;
	pg->lw_other_ns = 0;
	pg->nanswered = 0;
	/* Watchers get their timeout from when ops run here (their pings waited). */
	pg->watch_since_ms =
		cm_now_ms() + (pg->reads_after_ns > now ? (pg->reads_after_ns - now) / 1000000 : 0);
	pg->state = OSD_PG_ACTIVE;
	pg->last_epoch_started = pg->osd->epoch;
	if (x) {
		osd__pga_trim(x, pg->last_epoch_started);
		x->known = true;
	}
	/* Peering settled every entry up to here: none is undone any more. */
	pg->roll_ok = pg->last_update;
	pg->roll_sent = (struct osd_ver){ 0, 0 }; /* tell the shards (the EC backend's tick) */
	pg->roll_stuck = false;
	osd__prior_save(pg, true); /* a restart need not wait for the prior set any more */
	pg->be->activated(pg);
	if (!pg->rec_pending)
		osd__rec_remove_strays(pg);
	pg->osd->last_beacon_ms = 0; /* report the new state at the next tick */
	CM_INFO("%s: active (acting %d of %u) at %" PRIu64 ".%" PRIu64 "%s", pg->cid, pg->nacting,
		pg->size, pg->last_update.epoch, pg->last_update.seq,
		pg->rec_pending ? ", recovering meanwhile" : "");
	TAILQ_CONCAT(&q, &pg->waiting, link);
	while ((op = TAILQ_FIRST(&q))) {
		TAILQ_REMOVE(&q, op, link);
		op->queued = false;
		osd__op_start(pg, op);
	}
}

void
osd__pg_recovered(struct osd_pg *pg)
{
	osd__rec_remove_strays(pg);
	pg->osd->last_beacon_ms = 0;
}

/* Leaving active: ops held by recovery wait for the next activation, in order. */
static void
ops_park(struct osd_pg *pg)
{
	TAILQ_HEAD(, osd_op) q = TAILQ_HEAD_INITIALIZER(q);
	struct osd_op *op, *tmp;

	TAILQ_FOREACH_SAFE(op, &pg->running, link, tmp)
		if (op->blocked) {
			TAILQ_REMOVE(&pg->running, op, link);
			TAILQ_INSERT_TAIL(&q, op, link);
		}
	TAILQ_CONCAT(&q, &pg->waiting, link);
	TAILQ_CONCAT(&pg->waiting, &q, link);
}

static void
pg_send_queries(struct osd_pg *pg)
{
	Cairn__Osd__PgQuery q = CAIRN__OSD__PG_QUERY__INIT;
	struct osd *o = pg->osd;

	q.pool = pg->pool;
	q.seed = pg->seed;
	q.epoch = pg->interval_epoch;
	osd__rec_reset(pg);
	pg->notifies_wanted = 0;
	/* Slots: the acting set, then prior OSDs that are up. */
	pg->nslots = 0;
	for (int i = 0; i < pg->nacting; i++)
		pg->slot_osd[pg->nslots++] = pg->acting[i];
	for (int k = 0; k < pg->nprior && pg->nslots < OSD_PG_MAX_SLOTS; k++) {
		const Cairn__Map__Osd *mo = mon_osd_find(o->map, pg->prior[k]);

		if (mo && mo->up)
			pg->slot_osd[pg->nslots++] = pg->prior[k];
	}
	{
		/* and the OSDs of past intervals that may have taken writes */
		struct osd_pga *x = osd__pg_pga(pg);

		for (size_t k = 0; x && !x->known && k < o->map->n_osds; k++) {
			const Cairn__Map__Osd *mo = o->map->osds[k];

			if (mo->up && pg->nslots < OSD_PG_MAX_SLOTS &&
			    !osd__has_osd(pg->slot_osd, pg->nslots, mo->id))
				pg->slot_osd[pg->nslots++] = mo->id;
		}
		for (int v = 0; x && v < x->niv; v++) {
			const struct osd_piv *iv = &x->iv[v];

			for (int j = 0; iv->rw && iv->last != OSD_PIV_OPEN && j < iv->n &&
					pg->nslots < OSD_PG_MAX_SLOTS;
			     j++) {
				const Cairn__Map__Osd *mo = mon_osd_find(o->map, iv->a[j]);

				if (mo && mo->up &&
				    !osd__has_osd(pg->slot_osd, pg->nslots, iv->a[j]))
					pg->slot_osd[pg->nslots++] = iv->a[j];
			}
		}
	}
	for (int i = 0; i < pg->nslots; i++) {
		struct osd_pg_peer *p = &pg->peer[i];
		const Cairn__Map__Osd *mo = mon_osd_find(o->map, pg->slot_osd[i]);

		pg->peer_up_since[i] = mo ? mo->up_since : 0;
		if (pg->slot_osd[i] == o->id) {
			p->have = true;
			p->exists = true;
			p->incomplete = pg->incomplete;
			p->partial = pg->missing.n > 0;
			p->les = pg->last_epoch_started;
			p->lu = pg->last_update;
			p->tail = pg->log_tail;
			continue;
		}
		if (osd__send_pb(osd__peer_conn(o, pg->slot_osd[i], pg->seed), OSD_MSG_PG_QUERY, 0,
				 &q.base, NULL) == 0)
			pg->notifies_wanted++;
	}
}

void
osd__pg_start_peering(struct osd_pg *pg)
{
	pg->retry_ms = 0;
	pg->repop_failed = false; /* held ops wait for the activation instead */
	ops_park(pg);
	/* An EC PG with k shards can be read; writes wait for min_size (osd__op_start). */
	if ((unsigned)pg->nacting < pg->be->peer_min(pg)) {
		osd__rec_reset(pg);
		pg->state = OSD_PG_DOWN;
		CM_INFO("%s: down (%d of min_size %u up)", pg->cid, pg->nacting, pg->min_size);
		return;
	}
	pg->state = OSD_PG_PEERING;
	pg_send_queries(pg);
	if (!pg->notifies_wanted)
		osd__rec_plan(pg);
}

/*
 * A PG we have no copy of in memory that a split here is about to make
 * (an ancestor's copy has not split yet, a stray's too) or has just made
 * (its collection is in the store, the hand-over to our shard not done):
 * "no copy" would be wrong.
 */
static bool
split_pending(struct osd *o, int64_t pool, uint32_t seed)
{
	char cid[48];
	struct os_stat st;

	if (osd__split_child_waits(o, pool, seed))
		return true;
	snprintf(cid, sizeof(cid), "pg.%" PRId64 ".%x", pool, seed);
	return os_stat(o->store, cid, OSD_PGMETA, &st) == 0;
}

void
osd__pg_handle_query(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__PgQuery *q =
		(Cairn__Osd__PgQuery *)cm_msg_unpack_front(m, &cairn__osd__pg_query__descriptor);
	Cairn__Osd__PgNotify n = CAIRN__OSD__PG_NOTIFY__INIT;
	Cairn__Osd__PastInterval pv[OSD_PGA_MAX_IV], *pvp[OSD_PGA_MAX_IV];
	Cairn__Osd__LeaseWait lwv[OSD_LEASE_WAITS], *lwp[OSD_LEASE_WAITS];
	Cairn__Osd__PgInfo pi;
	Cairn__Osd__Version lu, tail;
	Cairn__Osd__LogEntry **les = NULL;
	size_t nles = 0;
	char **missing = NULL;
	struct osd_pg *pg;

	if (!q)
		goto out;
	pg = osd__pg_find_any(o, q->pool, q->seed);
	n.pool = q->pool;
	n.seed = q->seed;
	n.epoch = q->epoch;
	if (q->epoch > o->epoch || (pg && (pg->splitting || pg->split_wait || pg->merging)) ||
	    (!pg && split_pending(o, q->pool, q->seed))) {
		/* Our map is behind the asker's interval (the PG may not exist for
		 * us yet), or our copy is being split: "no copy" would be wrong. */
		n.busy = true;
		if (q->epoch > o->epoch)
			osd__want_map(o, o->epoch);
		osd__send_pb(c, OSD_MSG_PG_NOTIFY, 0, &n.base, NULL);
		goto out;
	}
	n.exists = pg && pg->in_store;
	{
		struct osd_lease_wait w[OSD_LEASE_WAITS];
		int nw = 0;
		uint64_t now = osd__lease_now();

		/* (It cannot fill up: one primary per kept interval.) */
		(void)osd__lease_waits(o, q->pool, q->seed, (int32_t)osd__conn_peer(c), w, &nw);
		for (int i = 0; i < nw; i++) {
			lwv[i] = (Cairn__Osd__LeaseWait)CAIRN__OSD__LEASE_WAIT__INIT;
			lwv[i].osd = w[i].osd;
			/* Rounded up: the asker must not start early. */
			lwv[i].ms = (uint32_t)CM_MIN((w[i].until_ns - now + 999999) / 1000000,
						     (uint64_t)UINT32_MAX);
			lwp[i] = &lwv[i];
		}
		n.n_lease_waits = (size_t)nw;
		n.lease_waits = lwp;
	}
	{
		bool fresh;
		struct osd_pga *x = osd__pga_get(o, q->pool, q->seed, &fresh);

		for (int i = 0; x && i < x->niv; i++) {
			const struct osd_piv *iv = &x->iv[i];

			if (!iv->rw || iv->last == OSD_PIV_OPEN)
				continue;
			pv[n.n_past] = (Cairn__Osd__PastInterval)CAIRN__OSD__PAST_INTERVAL__INIT;
			pv[n.n_past].first = iv->first;
			pv[n.n_past].last = iv->last;
			pv[n.n_past].rw = true;
			pv[n.n_past].n_osds = iv->n;
			pv[n.n_past].osds = (int32_t *)iv->a;
			pvp[n.n_past] = &pv[n.n_past];
			n.n_past++;
		}
		n.past = pvp;
	}
	if (n.exists) {
		osd__pg_info_fill(pg, &pi, &lu, &tail);
		n.info = &pi;
		if (osd__pg_log_pb(pg, &les, &nles)) {
			CM_WARN("%s: no memory for the log of a notify", pg->cid);
			goto out; /* the primary asks again */
		}
		n.log = les;
		n.n_log = nles;
		if (osd_oset_names(&pg->missing, &missing, &n.n_missing)) {
			osd__pg_log_pb_free(les, nles);
			goto out;
		}
		n.missing = missing;
	}
	osd__send_pb(c, OSD_MSG_PG_NOTIFY, 0, &n.base, NULL);
	osd__pg_log_pb_free(les, nles);
	free(missing);
out:
	if (q)
		cairn__osd__pg_query__free_unpacked(q, NULL);
	cm_msg_destroy(m);
}

void
osd__pg_handle_notify(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__PgNotify *n =
		(Cairn__Osd__PgNotify *)cm_msg_unpack_front(m, &cairn__osd__pg_notify__descriptor);
	intptr_t peer = osd__conn_peer(c);
	struct osd_pg *pg;

	cm_msg_destroy(m);
	if (!n)
		return;
	pg = osd__pg_find(o, n->pool, n->seed);
	if (osd_check_notify(n)) {
		CM_LOG_RL(CM_LOG_WARN, "bad PG notify from %s", cm_conn_peer(c));
		goto out;
	}
	if (!pg || pg->state != OSD_PG_PEERING || n->epoch != pg->interval_epoch)
		goto out;
	for (size_t i = 0; !n->busy && i < n->n_lease_waits; i++) {
		uint64_t until = osd__lease_now() + (uint64_t)n->lease_waits[i]->ms * 1000000;

		if (!osd__lease_wait_add(pg->lw, &pg->nlw, n->lease_waits[i]->osd, until))
			pg->lw_other_ns = CM_MAX(pg->lw_other_ns, until);
	}
	if (!n->busy && pg->nanswered < OSD_PG_MAX_SLOTS &&
	    !osd__has_osd(pg->answered, pg->nanswered, (int32_t)peer))
		pg->answered[pg->nanswered++] = (int32_t)peer;
	if (n->n_past) {
		bool fresh;
		struct osd_pga *x = osd__pga_get(o, n->pool, n->seed, &fresh);

		int added = 0;

		for (size_t i = 0; x && i < n->n_past; i++)
			added += osd__pga_merge(x, n->past[i]);
		if (added)
			CM_NOTICE("%s: learnt %d past interval(s) from osd.%d", pg->cid, added,
				  (int)peer);
	}
	for (int i = 0; i < pg->nslots; i++) {
		struct osd_pg_peer *p = &pg->peer[i];

		if (pg->slot_osd[i] != peer || p->have)
			continue;
		if (n->busy) {
			/* It cannot answer yet (splitting, or its map is behind): ask
			 * everyone again shortly, from the tick. */
			uint64_t at = cm_now_ms() + OSD_PEER_BUSY_MS;

			if (!pg->retry_ms || pg->retry_ms > at)
				pg->retry_ms = at;
			break;
		}
		p->have = true;
		p->exists = n->exists && n->info;
		if (p->exists) {
			osd_ver_from_pb(n->info->last_update, &p->lu);
			osd_ver_from_pb(n->info->log_tail, &p->tail);
			p->incomplete = n->info->incomplete;
			p->partial = n->n_missing > 0;
			p->les = n->info->last_epoch_started;
			p->n = n; /* keeps its log for planning */
			n = NULL;
		}
		if (--pg->notifies_wanted == 0)
			osd__rec_plan(pg);
		break;
	}
out:
	if (n)
		cairn__osd__pg_notify__free_unpacked(n, NULL);
}

void
osd__pg_tick(struct osd *o)
{
	uint64_t now = cm_now_ms();

	for (size_t b = 0; b < o->npg_b; b++)
		for (struct osd_pg *pg = o->pgs[b]; pg; pg = pg->hnext) {
			struct osd_repop *rp = TAILQ_FIRST(&pg->repops);

			if (pg->splitting) {
				osd__split_tick(pg, now);
				continue;
			}
			if (pg->merging) {
				osd__merge_tick(pg, now);
				continue;
			}
			/* Paused for a merge step and ready: tell the mons now, not
			 * at the next beacon (the step waits for every PG). */
			if (pg->primary == o->id && pg->state == OSD_PG_ACTIVE) {
				bool ready = osd__merge_ready(pg);

				if (ready && !pg->merge_told)
					o->last_beacon_ms = 0;
				pg->merge_told = ready;
			}

			/*
			 * A write whose replica replies did not all come in
			 * OSD_REPOP_STALL_MS on an unchanged interval: a reply was lost
			 * (seen once in the EC thrash: every replica had applied it,
			 * the primary still waited for one reply). An alarm, like the
			 * recovery watchdog; peering again lets the clients' resends
			 * finish (the log answers them) instead of waiting forever.
			 */
			if (rp && rp->op && !rp->local_pending && pg->primary == o->id &&
			    pg->state == OSD_PG_ACTIVE &&
			    cm_ms_since(now, rp->start_ms) >= OSD_REPOP_STALL_MS) {
				o->rec_watchdog++;
				CM_ERR("%s: repop watchdog fired: write %" PRIu64 ".%" PRIu64
				       " still waits for %u replica replies after %u s (a bug: "
				       "please report it with this log); peering again",
				       pg->cid, rp->ver.epoch, rp->ver.seq, rp->waiting,
				       OSD_REPOP_STALL_MS / 1000);
				osd__pg_restart(pg);
				continue;
			}
			if (pg->retry_ms && now >= pg->retry_ms && pg->primary == o->id &&
			    pg->state != OSD_PG_NONE && pg->state != OSD_PG_REPLICA)
				osd__pg_start_peering(pg);
			if (pg->be->tick)
				pg->be->tick(pg);
			if (!TAILQ_EMPTY(&pg->notifies) || pg->watches)
				osd__watch_tick(pg, now);
		}
	osd__rec_tick(o, now);
}
